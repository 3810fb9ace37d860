/*
 * Tests for engine/waker.c and the wakes of a conn group
 * (conn_group_wake_start): a thread that finishes what a role waits for
 * wakes the loop, which steps that role at once, without a timer.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <uv.h>

#include "../../engine/behind.h"
#include "../../engine/conn.h"
#include "../../engine/waker.h"
#include "check.h"

/* A role that waits for a thread: it says wait_wake (and no timer)
 * until the thread's work is published in done, then finishes. */
struct waiter {
    struct waker *w;
    atomic_int done;        /* the thread's work, published */
    int steps;
    int wakes;              /* the thread wakes this many times */
    int early;              /* wake from within the first step */
    pthread_t th;
    int started;
};

static void *
waiter_thread(void *arg)
{
    struct waiter *v = arg;
    int i;

    usleep(20000);
    for (i = 0; i < v->wakes; i++) {
        if (i == v->wakes - 1)
            atomic_store(&v->done, 1);   /* published, then woken */
        waker_wake(v->w);
    }
    return NULL;
}

static int
waiter_step(void *role, struct conn_step *st)
{
    struct waiter *v = role;

    v->steps++;
    if (atomic_load(&v->done)) {
        st->done = 1;
        return 0;
    }
    if (v->early) {
        /* The work ends while this step runs, after it looked: the
         * wake comes before the loop waits for it. */
        atomic_store(&v->done, 1);
        waker_wake(v->w);
    } else if (!v->started) {
        v->started = 1;
        if (pthread_create(&v->th, NULL, waiter_thread, v) != 0)
            return FERRY_ERR_NOMEM;
    }
    st->wait_wake = 1;
    return 0;
}

static int closed, close_err;

static void
waiter_closed(struct conn *c, int err)
{
    (void)c;
    closed = 1;
    close_err = err;
}

static void
waiter_timeout(uv_timer_t *t)
{
    conn_abort(t->data, FERRY_ERR_TIMEOUT);
}

/* Runs one conn of a group with role v on a loop until it finishes (10
 * s at most). */
static void
waiter_run(struct waiter *v)
{
    struct conn_group g;
    struct waker w;
    struct conn c;
    uv_loop_t loop;
    uv_timer_t t;
    int sv[2];

    memset(&w, 0, sizeof(w));
    memset(&g, 0, sizeof(g));
    memset(&c, 0, sizeof(c));
    v->w = &w;
    closed = 0;
    CHECK_OK(uv_loop_init(&loop));
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CHECK_OK(conn_group_wake_start(&g, &loop, &w));
    c.group = &g;
    CHECK_OK(conn_start_fds(&c, &loop, sv[0], sv[0], waiter_step, v,
        waiter_closed));
    CHECK_OK(uv_timer_init(&loop, &t));
    t.data = &c;
    uv_timer_start(&t, waiter_timeout, 10000, 0);
    uv_unref((uv_handle_t *)&t);
    (void)uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(closed);
    CHECK_EQ_ERR(close_err, 0);
    conn_group_wake_stop(&g);
    uv_close((uv_handle_t *)&t, NULL);
    (void)uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_OK(uv_loop_close(&loop));
    if (v->started)
        CHECK_EQ_INT(pthread_join(v->th, NULL), 0);
    /* Pointed away: a late wake reaches nobody. */
    waker_wake(&w);
    close(sv[1]);
}

/* The steps a waiter took whose thread woke it wakes times (early:
 * from within its first step instead). */
static int
waiter_steps(int wakes, int early)
{
    struct waiter v;

    memset(&v, 0, sizeof(v));
    v.wakes = wakes;
    v.early = early;
    waiter_run(&v);
    return v.steps;
}

/* A thread wakes the loop, which steps the role that waits. */
TEST(waker_thread_wakes_loop)
{
    CHECK_EQ_INT(waiter_steps(1, 0), 2);
}

/* Many wakes close together come as few steps, and the last one (after
 * the work was published) is never lost. */
TEST(waker_coalesces)
{
    int n = waiter_steps(10000, 0);

    CHECK(n >= 2 && n < 1000);
}

/* A wake that comes while the step runs, before the loop waits for it,
 * brings one more step. */
TEST(waker_wake_before_wait)
{
    CHECK_EQ_INT(waiter_steps(0, 1), 2);
}

/* Zeroed storage wakes nobody; a waker pointed away stops calling. */
static void
count_wake(void *ctx)
{
    atomic_fetch_add((atomic_int *)ctx, 1);
}

TEST(waker_set_away)
{
    struct waker w;
    atomic_int n = 0;

    memset(&w, 0, sizeof(w));
    waker_wake(&w);
    waker_wake(NULL);
    waker_set(&w, count_wake, &n);
    waker_wake(&w);
    waker_wake(&w);
    waker_set(&w, NULL, NULL);
    waker_wake(&w);
    CHECK_EQ_INT(atomic_load(&n), 2);
}

static int
noop_job(void *ctx, void *job, int failed)
{
    (void)ctx;
    (void)job;
    (void)failed;
    return 0;
}

/* A job queued waking w wakes it once it has run, and by then the
 * owner sees it done; a job queued plainly wakes nobody. */
TEST(waker_behind_job)
{
    struct behind *b;
    struct waker w;
    atomic_int n = 0;
    int i, r;

    memset(&w, 0, sizeof(w));
    waker_set(&w, count_wake, &n);
    CHECK((b = behind_new(2, sizeof(int), noop_job, NULL)) != NULL);
    CHECK(behind_next(b) != NULL);
    behind_queue(b);
    CHECK(behind_done(b, 1, &r) != NULL);
    behind_retire(b);
    CHECK_EQ_INT(atomic_load(&n), 0);
    CHECK(behind_next(b) != NULL);
    behind_queue_waking(b, &w);
    for (i = 0; i < 10000 && atomic_load(&n) == 0; i++)
        usleep(1000);
    CHECK_EQ_INT(atomic_load(&n), 1);
    CHECK(behind_done(b, 0, &r) != NULL);
    behind_retire(b);
    behind_free(b, NULL);
}
