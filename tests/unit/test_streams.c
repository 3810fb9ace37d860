/*
 * What carries the streams of a transfer: the group of conns that share
 * it (engine/conn.c) and the agents' rendezvous (server/rendezvous.c),
 * through which an agent that got a JOIN hands its connection to the one
 * that runs the transfer.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "../../engine/conn.h"
#include "../../engine/xfer.h"
#include "../../server/rendezvous.h"
#include "check.h"

static int
never_step(void *role, struct conn_step *st)
{
    (void)role;
    (void)st;
    return FERRY_ERR_USAGE;
}

/* A group holds CONN_GROUP_MAX conns; one more is refused before
 * anything is set up. */
TEST(streams_group_full)
{
    struct conn_group g;
    struct conn c;
    uv_loop_t loop;
    int sv[2];

    CHECK_OK(uv_loop_init(&loop));
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    memset(&g, 0, sizeof(g));
    g.n = CONN_GROUP_MAX;
    memset(&c, 0, sizeof(c));
    c.group = &g;
    CHECK_EQ_ERR(conn_start_fds(&c, &loop, sv[0], sv[0], never_step, NULL,
        NULL), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_INT(g.n, CONN_GROUP_MAX);
    close(sv[0]);
    close(sv[1]);
    CHECK_OK(uv_loop_close(&loop));
}

static void
random_id(uint8_t id[16])
{
    CHECK_EQ_INT(getrandom(id, 16, 0), 16);
}

/* Nobody runs the transfer: the JOIN cannot be handed over. */
TEST(streams_handover_nobody)
{
    uint8_t id[16];

    random_id(id);
    CHECK_EQ_ERR(rendezvous_handover(id, 0, 1, "x", 1), -ECONNREFUSED);
}

/* The bytes an agent forwards are bounded (HELLO and JOIN fit). */
TEST(streams_handover_too_large)
{
    static char bytes[RENDEZVOUS_MAX_BYTES + 1];
    struct rendezvous rv;
    uint8_t id[16];

    random_id(id);
    CHECK_OK(rendezvous_bind(&rv, id));
    CHECK_EQ_ERR(rendezvous_handover(id, 0, 1, bytes, sizeof(bytes)),
        FERRY_ERR_TOO_LARGE);
    rendezvous_close(&rv);
}

struct adopted {
    int rfd, wfd, token, n;
    char bytes[16];
    uv_timer_t timer;
};

static void
adopt(void *ctx, int rfd, int wfd, const uint8_t *bytes, size_t n,
    int token)
{
    struct adopted *a = ctx;

    a->rfd = rfd;
    a->wfd = wfd;
    a->token = token;
    a->n = (int)n;
    memcpy(a->bytes, bytes, n < sizeof(a->bytes) ? n : sizeof(a->bytes));
    uv_timer_stop(&a->timer);
}

static void
stop(void *ctx)
{
    (void)ctx;
    check_fail(__FILE__, __LINE__, "asked to stop");
}

static void
give_up(uv_timer_t *t)
{
    (void)t;
}

/* A connection handed over arrives with the bytes read before, and the
 * agent that handed it waits until it is let go. */
TEST(streams_handover)
{
    struct adopted a;
    struct rendezvous rv;
    uv_loop_t loop;
    uint8_t id[16];
    int sv[2], status;
    char c;
    pid_t pid;

    random_id(id);
    memset(&a, 0, sizeof(a));
    a.token = -1;
    CHECK_OK(uv_loop_init(&loop));
    CHECK_OK(rendezvous_bind(&rv, id));
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    CHECK((pid = fork()) >= 0);
    if (pid == 0)
        _exit(rendezvous_handover(id, sv[1], sv[1], "HELLO", 5) == 0 ? 0 :
            1);
    close(sv[1]);
    CHECK_OK(rendezvous_start(&rv, &loop, adopt, stop, &a));
    /* The listener does not keep a loop alive on its own. */
    CHECK_OK(uv_timer_init(&loop, &a.timer));
    CHECK_OK(uv_timer_start(&a.timer, give_up, 5000, 0));
    CHECK_OK(uv_run(&loop, UV_RUN_DEFAULT) >= 0 ? 0 : -1);
    CHECK(a.token >= 0);
    CHECK_EQ_INT(a.n, 5);
    CHECK_EQ_MEM(a.bytes, "HELLO", 5);
    /* The fds are the child's end of the pair. */
    CHECK_EQ_INT(write(a.wfd, "!", 1), 1);
    CHECK_EQ_INT(read(sv[0], &c, 1), 1);
    CHECK_EQ_INT(c, '!');
    close(a.rfd);
    if (a.wfd != a.rfd)
        close(a.wfd);
    rendezvous_release(a.token);
    CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    rendezvous_close(&rv);
    uv_close((uv_handle_t *)&a.timer, NULL);
    CHECK_OK(uv_run(&loop, UV_RUN_DEFAULT) >= 0 ? 0 : -1);
    CHECK_OK(uv_loop_close(&loop));
    close(sv[0]);
}

/* A role that always has more to say and does not end at the EOF (as
 * the agent's answer to a status probe that still owes data). */
struct owing {
    int steps_at_eof, closed, close_err;
};

static int
owing_step(void *role, struct conn_step *st)
{
    struct owing *o = role;
    uint8_t *p;
    int r;

    /* A second step after the EOF: the conn went on stepping into the
     * void, which ends here rather than at the case's timeout. */
    if (st->eof && o->steps_at_eof++ > 0)
        return FERRY_ERR_USAGE;
    if ((r = buf_reserve(st->out, CONN_STEP_BUDGET, &p)) != 0)
        return r;
    memset(p, 0, CONN_STEP_BUDGET);
    st->more = 1;
    return 0;
}

static void
owing_closed(struct conn *c, int err)
{
    struct owing *o = c->data;

    o->closed = 1;
    o->close_err = err;
}

/* A peer that goes away while CONN_TX_HIGH bytes wait to be written
 * fails the write: the role hears the EOF once, and as nothing can be
 * written or read any more the conn ends as closed (it stepped the role
 * for ever, dropping what it wrote). */
TEST(streams_write_fails_ends)
{
    struct owing o;
    struct conn c;
    uv_loop_t loop;
    int sv[2];

    signal(SIGPIPE, SIG_IGN);
    memset(&o, 0, sizeof(o));
    CHECK_OK(uv_loop_init(&loop));
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    memset(&c, 0, sizeof(c));
    c.data = &o;
    CHECK_OK(conn_start_fds(&c, &loop, sv[0], sv[0], owing_step, &o,
        owing_closed));
    while (c.tx_pending < CONN_TX_HIGH && !o.closed)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK(!o.closed);
    close(sv[1]);
    while (!o.closed)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK_EQ_ERR(o.close_err, FERRY_ERR_CLOSED);
    CHECK_EQ_INT(o.steps_at_eof, 1);
    CHECK_OK(uv_run(&loop, UV_RUN_DEFAULT) >= 0 ? 0 : -1);
    CHECK_OK(uv_loop_close(&loop));
}

/* What a further stream would carry: all that is left while no file can
 * reuse data; else that scaled by the share of the data since the mark
 * that crossed the wire, judged once XFER_SHARE_SAMPLE bytes came. */
TEST(streams_wire_left)
{
    struct xfer x;
    struct xfer_mark m;
    uint64_t wire = 1;

    memset(&x, 0, sizeof(x));
    xfer_add(&x.st.bytes_moved, 5);
    xfer_mark_now(&x, &m);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 1000);
    /* A delta: nothing to judge by yet, then too little. */
    xfer_add(&x.st.bytes_reusable, 1u << 30);
    wire = 1;
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 0);
    CHECK_EQ_U64(wire, 1);
    xfer_add(&x.st.bytes_spared, XFER_SHARE_SAMPLE - 2);
    xfer_add(&x.st.bytes_moved, 1);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 0);
    /* A third of the data since the mark crossed: a third of left. */
    xfer_add(&x.st.bytes_moved, (XFER_SHARE_SAMPLE + 2) / 2 - 1);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 333);
    /* All spared since a new mark: none. */
    xfer_mark_now(&x, &m);
    xfer_add(&x.st.bytes_spared, XFER_SHARE_SAMPLE);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 0);
    /* All moved since another: all of it. */
    xfer_mark_now(&x, &m);
    xfer_add(&x.st.bytes_moved, XFER_SHARE_SAMPLE);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 1000);
}

/* Compression counts like reuse: what it saved of the data since the
 * mark did not cross; with files packed in volumes the share is judged
 * even where no file could reuse data, and not before XFER_SHARE_SAMPLE
 * bytes came. */
TEST(streams_wire_left_compressed)
{
    struct xfer x;
    struct xfer_mark m;
    uint64_t wire = 1;

    memset(&x, 0, sizeof(x));
    xfer_add(&x.st.bytes_compressed, 7);
    xfer_mark_now(&x, &m);
    /* Nothing could shrink: all of it, at once. */
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 1000);
    wire = 1;
    xfer_add(&x.st.bytes_packed, 1u << 30);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 0);
    CHECK_EQ_U64(wire, 1);
    xfer_add(&x.st.bytes_moved, XFER_SHARE_SAMPLE - 1);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 0);
    /* Three quarters of the sample saved: a quarter of left crosses. */
    xfer_add(&x.st.bytes_moved, 1);
    xfer_add(&x.st.bytes_compressed, XFER_SHARE_SAMPLE / 4 * 3);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 250);
    /* With a delta beside it: half spared, a quarter of the rest saved. */
    xfer_mark_now(&x, &m);
    xfer_sub(&x.st.bytes_packed, 1u << 30);
    xfer_add(&x.st.bytes_reusable, 1u << 30);
    xfer_add(&x.st.bytes_spared, XFER_SHARE_SAMPLE);
    xfer_add(&x.st.bytes_moved, XFER_SHARE_SAMPLE);
    xfer_add(&x.st.bytes_compressed, XFER_SHARE_SAMPLE / 4);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 375);
    /* A saving taken back below the mark's counts as none. */
    xfer_mark_now(&x, &m);
    xfer_sub(&x.st.bytes_reusable, 1u << 30);
    xfer_add(&x.st.bytes_packed, 1u << 30);
    xfer_add(&x.st.bytes_moved, XFER_SHARE_SAMPLE);
    xfer_sub(&x.st.bytes_compressed, 3);
    CHECK_EQ_U64(xfer_wire_left(&x, &m, 1000, &wire), 1);
    CHECK_EQ_U64(wire, 1000);
}
