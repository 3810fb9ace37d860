#include "conn.h"

#include <assert.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "../proto/frame.h"
#include "../proto/limits.h"

#define CONN_READ_CHUNK (256u << 10)
#define CONN_CLOSE_GRACE_MS 5000

struct conn_write {
    uv_write_t req;
    struct conn *c;
    uint8_t *mem;
    size_t len, cap;
};

static void conn_kick(struct conn *c);
static void conn_finish(struct conn *c);
static void conn_wake_fired(uv_timer_t *t);

static void
conn_group_leave(struct conn *c)
{
    struct conn_group *g = c->group;
    int i;

    if (g == NULL)
        return;
    for (i = 0; i < g->n; i++) {
        if (g->members[i] == c) {
            g->members[i] = g->members[--g->n];
            break;
        }
    }
    c->group = NULL;
}

/* After a step of the group: every member gets a chance, starting after
 * the one that ran, so no stream is starved by a busy one. With poke,
 * each is stepped once even without input. */
static void
conn_group_kick(struct conn_group *g, int poke)
{
    int i, n = g->n, start = g->rr;

    /* Every member is due before any runs: the first kick takes the
     * group, and the rest get their turn when it is free again. */
    for (i = 0; i < n && poke; i++)
        g->members[i]->wake_due = 1;
    for (i = 0; i < n && !g->busy; i++) {
        struct conn *m = g->members[(start + i) % n];

        g->rr = (start + i + 1) % n;
        conn_kick(m);
    }
}

static void
conn_fail(struct conn *c, int err)
{
    if (c->err == 0)
        c->err = err;
    conn_finish(c);
}

/* Runs on_close once every handle is closed and no step is running. */
static void
conn_maybe_released(struct conn *c)
{
    if (c->handles_open > 0 || c->job_running || c->released)
        return;
    c->released = 1;
    conn_group_leave(c);
    buf_cleanup(&c->inbox);
    buf_cleanup(&c->job_in);
    buf_cleanup(&c->job_out);
    while (c->nspare > 0)
        xfree(c->spare[--c->nspare]);
    if (c->on_close != NULL)
        c->on_close(c, c->err);
}

static void
conn_handle_closed(uv_handle_t *h)
{
    struct conn *c = h->data;

    c->handles_open--;
    conn_maybe_released(c);
}

static void
conn_close_handles(struct conn *c)
{
    int i;

    if (c->closing)
        return;
    c->closing = 1;
    for (i = 0; i < c->npipes; i++)
        uv_close((uv_handle_t *)&c->pipes[i], conn_handle_closed);
    uv_close((uv_handle_t *)&c->wake, conn_handle_closed);
}

static void
conn_shutdown_done(uv_shutdown_t *req, int status)
{
    struct conn *c = req->data;

    (void)status;
    conn_close_handles(c);
}

static void
conn_close_timeout(uv_timer_t *t)
{
    conn_close_handles(t->data);
}

/* The write side is shut down once queued writes have drained, so the
 * peer reads all of them (an ERROR frame included) and then EOF. A peer
 * that stops reading gets CONN_CLOSE_GRACE_MS, and a broken or stalled
 * transport none. */
static void
conn_begin_close(struct conn *c)
{
    c->shutdown_req.data = c;
    if (c->err == FERRY_ERR_CLOSED || c->err == FERRY_ERR_CONNECT ||
        c->err == FERRY_ERR_INTERRUPTED || c->err == FERRY_ERR_TIMEOUT ||
        c->write_dead ||
        uv_shutdown(&c->shutdown_req, c->ws, conn_shutdown_done) != 0) {
        conn_close_handles(c);
        return;
    }
    uv_timer_start(&c->wake, conn_close_timeout, CONN_CLOSE_GRACE_MS, 0);
}

/* Stops stepping and closes once the running step (if any) returns. */
static void
conn_finish(struct conn *c)
{
    if (c->finishing)
        return;
    c->finishing = 1;
    if (c->reading) {
        uv_read_stop(c->rs);
        c->reading = 0;
    }
    uv_timer_stop(&c->wake);
    if (!c->job_running)
        conn_begin_close(c);
}

static void
conn_alloc(uv_handle_t *h, size_t hint, uv_buf_t *out)
{
    struct conn *c = h->data;
    uint8_t *p;

    (void)hint;
    if (buf_reserve(&c->inbox, CONN_READ_CHUNK, &p) != 0) {
        out->base = NULL;
        out->len = 0;
        return;
    }
    out->base = (char *)p;
    out->len = CONN_READ_CHUNK;
}

/* Length of the prefix of (p, n) made of whole frames, or an error for a
 * frame over the limit. */
static int
conn_whole_frames(const uint8_t *p, size_t n, size_t *whole)
{
    struct frame f;
    size_t used, off = 0;
    int r;

    while ((r = frame_parse(p + off, n - off, &f, &used)) == 0)
        off += used;
    *whole = off;
    return r == FERRY_ERR_SHORT ? 0 : r;
}

/* How many bytes of frames may wait before c stops reading. The streams
 * of a group share CONN_INBOX_HIGH: their steps run one at a time, so
 * frames waiting on every stream at once only add memory (a 1 GiB push's
 * agent held up to 100 MiB in three streams' inboxes and the copies
 * their steps took), not speed. */
_Static_assert(CONN_INBOX_MIN > PROTO_MAX_FRAME + 2 * CONN_READ_CHUNK,
    "a stream's share of the inbox holds a whole frame");

static size_t
conn_inbox_high(const struct conn *c)
{
    size_t share = c->group != NULL && c->group->n > 1 ?
        CONN_INBOX_HIGH / (size_t)c->group->n : CONN_INBOX_HIGH;

    return share < CONN_INBOX_MIN ? CONN_INBOX_MIN : share;
}

static void
conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct conn *c = s->data;

    if (b->base != NULL)
        buf_unreserve(&c->inbox, CONN_READ_CHUNK - (nread > 0 ?
            (size_t)nread : 0));
    if (nread == UV_ENOBUFS) {
        conn_fail(c, FERRY_ERR_NOMEM);
        return;
    }
    if (nread < 0) {
        uv_read_stop(s);
        c->reading = 0;
        c->eof = 1;
        if (nread != UV_EOF)
            log_debug("transport read: %s", uv_strerror((int)nread));
        conn_kick(c);
        return;
    }
    c->bytes_in += (uint64_t)nread;
    if (c->group != NULL && c->group->limit != NULL) {
        ratelimit_take(c->group->limit, (uint64_t)nread, uv_hrtime());
        /* Over the limit: the peer waits, by TCP's own flow control. */
        if (ratelimit_wait_ms(c->group->limit, uv_hrtime()) > 0 &&
            c->reading) {
            uv_read_stop(s);
            c->reading = 0;
            c->read_paused = 1;
        }
    }
    if (buf_used(&c->inbox) > conn_inbox_high(c) && c->reading) {
        uv_read_stop(s);
        c->reading = 0;
    }
    conn_kick(c);
}

/*
 * The transport took no more: a peer that went away may have said why
 * first. Its ERROR was written before it closed its end, which is what
 * failed our write, so it waits in what we have not read yet: that is
 * taken in now, as if an EOF followed it, and the role hears it
 * instead of a bare "connection closed" (a full disk on the far side
 * was once reported that way whenever our write came first). Nothing
 * more is written.
 */
static void
conn_write_failed(struct conn *c)
{
    uv_os_fd_t fd;
    uint8_t *p;
    ssize_t n;

    c->write_dead = 1;
    if (c->reading) {
        uv_read_stop(c->rs);
        c->reading = 0;
    }
    if (!c->eof && uv_fileno((uv_handle_t *)c->rs, &fd) == 0) {
        while (buf_used(&c->inbox) <= conn_inbox_high(c) &&
            buf_reserve(&c->inbox, CONN_READ_CHUNK, &p) == 0) {
            do
                n = read(fd, p, CONN_READ_CHUNK);
            while (n < 0 && errno == EINTR);
            buf_unreserve(&c->inbox, CONN_READ_CHUNK - (n > 0 ?
                (size_t)n : 0));
            if (n <= 0)
                break;
            c->bytes_in += (uint64_t)n;
        }
    }
    c->eof = 1;
    conn_kick(c);
}

/* After conn_write_failed, once the role has heard the EOF: nothing can
 * be read or written any more, so a role that has not ended could only
 * go on stepping into the void (a listing to its end, a status answer
 * to what it owed, one that ignores the EOF for ever). Returns 1 when
 * c was ended. */
static int
conn_write_dead_end(struct conn *c)
{
    if (!c->write_dead || !c->eof_delivered || c->job_running)
        return 0;
    conn_fail(c, FERRY_ERR_CLOSED);
    return 1;
}

static void
conn_write_done(uv_write_t *req, int status)
{
    struct conn_write *w = req->data;
    struct conn *c = w->c;

    c->tx_pending -= w->len;
    /* Keep the memory for a later step: a fresh multi-MiB buffer per step
     * costs a page fault per 4 KiB, more than the copy into it. */
    if (c->nspare < CONN_SPARES && !c->released) {
        c->spare[c->nspare] = w->mem;
        c->spare_cap[c->nspare++] = w->cap;
    } else {
        xfree(w->mem);
    }
    xfree(w);
    if (status < 0 && !c->finishing) {
        log_debug("transport write: %s", uv_strerror(status));
        if (!c->write_dead)
            conn_write_failed(c);
        return;
    }
    conn_kick(c);
}

/* Hands the bytes of b to libuv without copying and leaves b empty. */
static int
conn_send(struct conn *c, struct buf *b)
{
    struct conn_write *w;
    uv_buf_t ub;
    int r;

    if (c->write_dead) {
        buf_reset(b);
        return 0;
    }

    if (buf_used(b) == 0)
        return 0;
    if ((w = xcalloc(1, sizeof(*w))) == NULL)
        return FERRY_ERR_NOMEM;
    if (b->off > 0)
        memmove(b->data, b->data + b->off, buf_used(b));
    w->c = c;
    w->len = buf_used(b);
    w->cap = b->cap;
    w->mem = b->data;
    w->req.data = w;
    b->data = NULL;
    b->off = b->len = b->cap = 0;
    ub = uv_buf_init((char *)w->mem, (unsigned)w->len);
    if ((r = uv_write(&w->req, c->ws, &ub, 1, conn_write_done)) != 0) {
        xfree(w->mem);
        xfree(w);
        return FERRY_ERR_CLOSED;
    }
    c->tx_pending += w->len;
    c->bytes_out += w->len;
    if (c->group != NULL && c->group->limit != NULL)
        ratelimit_take(c->group->limit, w->len, uv_hrtime());
    return 0;
}

/*
 * While the group's rate limit is in debt, nothing of this conn goes:
 * no step (it would write more), and its reading stays paused; the wake
 * timer brings it back when the debt is paid. Returns 1 to wait.
 */
static int
conn_throttled(struct conn *c)
{
    unsigned ms;

    if (c->group == NULL || c->group->limit == NULL)
        return 0;
    if ((ms = ratelimit_wait_ms(c->group->limit, uv_hrtime())) > 0) {
        uv_timer_start(&c->wake, conn_wake_fired, ms, 0);
        return 1;
    }
    if (c->read_paused) {
        c->read_paused = 0;
        if (!c->reading && !c->eof &&
            buf_used(&c->inbox) <= conn_inbox_high(c) &&
            uv_read_start(c->rs, conn_alloc, conn_read) == 0)
            c->reading = 1;
    }
    return 0;
}

static void conn_after_step(struct conn *c, int kick);

static void
conn_work(uv_work_t *req)
{
    struct conn *c = req->data;
    struct conn_step st;

    memset(&st, 0, sizeof(st));
    st.in = buf_ptr(&c->job_in);
    st.in_len = buf_used(&c->job_in);
    st.eof = c->eof_delivered;
    st.out = &c->job_out;
    c->job_result = c->step(c->role, &st);
    c->job_more = st.more;
    c->job_done = st.done;
    c->job_wake = st.wake_ms;
    c->job_poke = st.poke;
    c->job_wait = st.wait_wake;
}

static void
conn_wake_fired(uv_timer_t *t)
{
    struct conn *c = t->data;

    c->wake_due = 1;
    conn_kick(c);
}

static void
conn_after_work(uv_work_t *req, int status)
{
    struct conn *c = req->data;
    struct conn_group *g = c->group;

    (void)status;
    c->job_running = 0;
    if (g != NULL) {
        /* The next step goes to whoever is next in turn. */
        g->busy = 0;
        conn_after_step(c, 0);
        conn_group_kick(g, c->job_poke);
        return;
    }
    conn_after_step(c, 1);
}

/* What follows a step: its output sent, then the next step if due. */
static void
conn_after_step(struct conn *c, int kick)
{
    int r;

    buf_reset(&c->job_in);
    if (c->finishing) {
        /* Aborted while the step ran: its output is dropped. */
        buf_reset(&c->job_out);
        conn_begin_close(c);
        return;
    }
    r = conn_send(c, &c->job_out);
    if (c->job_result == 0)
        c->job_result = r;
    if (c->job_result != 0 && c->err == 0)
        c->err = c->job_result;
    if (c->job_result != 0 || c->job_done) {
        /* A role that finished (or failed) has said what it had to say;
         * closing starts once its last frames are on their way. */
        conn_finish(c);
        return;
    }
    if (conn_write_dead_end(c))
        return;
    if (c->job_wake > 0 && !c->job_more)
        uv_timer_start(&c->wake, conn_wake_fired, c->job_wake, 0);
    /* A wake that came while the step ran may be for what it waits on:
     * the step may have looked before the thread published it. */
    if (c->job_wait && !c->job_more) {
        if (c->group != NULL && c->group->wakes != c->wakes_seen)
            c->wake_due = 1;
        else
            c->wait_wake = 1;
    }
    if (!c->reading && !c->eof && !c->read_paused &&
        buf_used(&c->inbox) <= conn_inbox_high(c)) {
        if (uv_read_start(c->rs, conn_alloc, conn_read) == 0)
            c->reading = 1;
    }
    if (kick)
        conn_kick(c);
}

/* Starts a step if there is something for it to do. */
static void
conn_kick(struct conn *c)
{
    size_t whole;
    int r, has_frames, deliver_eof;

    if (c->job_running || c->finishing || conn_write_dead_end(c) ||
        (c->group != NULL && c->group->busy) || conn_throttled(c))
        return;
    if ((r = conn_whole_frames(buf_ptr(&c->inbox), buf_used(&c->inbox),
        &whole)) != 0) {
        log_debug("peer sent a frame over %u bytes", PROTO_MAX_FRAME);
        conn_fail(c, r);
        return;
    }
    has_frames = whole > 0;
    /* At EOF, a partial frame left over is a cut stream: the role hears
     * of the EOF with the whole frames before it. */
    deliver_eof = c->eof && !c->eof_delivered;
    if (!has_frames && !deliver_eof && !c->wake_due &&
        !(c->job_more && c->tx_pending < CONN_TX_HIGH))
        return;
    if (c->job_more && c->tx_pending >= CONN_TX_HIGH && !has_frames &&
        !deliver_eof)
        return;
    /* Hand the whole frames to the job; keep a partial one. */
    if (has_frames) {
        struct buf tmp = c->job_in;

        c->job_in = c->inbox;
        c->inbox = tmp;
        buf_reset(&c->inbox);
        if (buf_used(&c->job_in) > whole) {
            if (buf_put(&c->inbox, buf_ptr(&c->job_in) + whole,
                buf_used(&c->job_in) - whole) != 0) {
                conn_fail(c, FERRY_ERR_NOMEM);
                return;
            }
            buf_unreserve(&c->job_in, buf_used(&c->job_in) - whole);
        }
    }
    if (deliver_eof)
        c->eof_delivered = 1;
    if (c->job_out.data == NULL && c->nspare > 0) {
        c->nspare--;
        c->job_out.data = c->spare[c->nspare];
        c->job_out.cap = c->spare_cap[c->nspare];
        c->job_out.off = c->job_out.len = 0;
    }
    c->wake_due = 0;
    c->job_more = 0;
    c->wait_wake = 0;
    if (c->group != NULL)
        c->wakes_seen = c->group->wakes;
    uv_timer_stop(&c->wake);
    c->job_running = 1;
    if (c->group != NULL)
        c->group->busy = 1;
    if (uv_queue_work(c->loop, &c->work, conn_work, conn_after_work) != 0) {
        c->job_running = 0;
        if (c->group != NULL)
            c->group->busy = 0;
        conn_fail(c, FERRY_ERR_NOMEM);
    }
}

int
conn_start_fds(struct conn *c, uv_loop_t *loop, int rfd, int wfd,
    conn_step_fn *step, void *role, conn_close_fn *on_close)
{
    void *data = c->data;
    struct conn_group *g = c->group;
    const uint8_t *pre = c->preload;
    size_t pre_len = c->preload_len;
    int r, i, n = rfd == wfd ? 1 : 2;

    memset(c, 0, sizeof(*c));
    c->data = data;
    if (g != NULL && g->n >= CONN_GROUP_MAX)
        return FERRY_ERR_TOO_LARGE;
    c->loop = loop;
    c->step = step;
    c->role = role;
    c->on_close = on_close;
    c->work.data = c;
    /* Whole frames plus one read chunk beyond the high mark. */
    buf_init(&c->inbox, CONN_INBOX_HIGH + PROTO_MAX_FRAME + 2 *
        CONN_READ_CHUNK);
    buf_init(&c->job_in, CONN_INBOX_HIGH + PROTO_MAX_FRAME + 2 *
        CONN_READ_CHUNK);
    buf_init(&c->job_out, CONN_STEP_BUDGET + 4 * PROTO_MAX_FRAME);
    if ((pre_len > 0 && buf_put(&c->inbox, pre, pre_len) != 0) ||
        uv_timer_init(loop, &c->wake) != 0) {
        buf_cleanup(&c->inbox);
        return FERRY_ERR_NOMEM;
    }
    c->wake.data = c;
    if (g != NULL) {
        g->members[g->n++] = c;
        c->group = g;
    }
    c->handles_open = 1;
    for (i = 0; i < n; i++) {
        int fd = i == 0 ? rfd : wfd;

        if ((r = uv_pipe_init(loop, &c->pipes[i], 0)) != 0)
            break;
        c->pipes[i].data = c;
        c->npipes++;
        c->handles_open++;
        if ((r = uv_pipe_open(&c->pipes[i], fd)) != 0)
            break;
    }
    c->rs = (uv_stream_t *)&c->pipes[0];
    c->ws = (uv_stream_t *)&c->pipes[c->npipes - 1];
    if (r == 0 && (r = uv_read_start(c->rs, conn_alloc, conn_read)) == 0)
        c->reading = 1;
    if (r != 0) {
        /* on_close reports it, as for any other failure. */
        log_error("transport: %s", uv_strerror(r));
        conn_fail(c, FERRY_ERR_CONNECT);
        return 0;
    }
    c->wake_due = 1;  /* the first step runs with no input */
    conn_kick(c);
    return 0;
}

int
conn_step_frame(const struct conn_step *st, size_t *off, struct frame *f)
{
    size_t used;
    int r;

    if (*off >= st->in_len)
        return 0;
    if ((r = frame_parse(st->in + *off, st->in_len - *off, f, &used)) != 0)
        return r;
    *off += used;
    return 1;
}

void
conn_group_poke(struct conn_group *g)
{
    conn_group_kick(g, 1);
}

/* A background thread woke the group (any number of wakes coalesce
 * into one call): the conns that wait for one are stepped. */
static void
conn_group_woken(uv_async_t *h)
{
    struct conn_group *g = h->data;
    int i;

    g->wakes++;
    for (i = 0; i < g->n; i++) {
        struct conn *m = g->members[i];

        if (m->wait_wake) {
            m->wait_wake = 0;
            m->wake_due = 1;
        }
    }
    conn_group_kick(g, 0);
}

/* waker_fn: any thread. */
static void
conn_group_wake_send(void *ctx)
{
    struct conn_group *g = ctx;

    (void)uv_async_send(&g->async);
}

int
conn_group_wake_start(struct conn_group *g, uv_loop_t *loop,
    struct waker *w)
{
    int r;

    if ((r = uv_async_init(loop, &g->async, conn_group_woken)) != 0)
        return r;
    g->async.data = g;
    uv_unref((uv_handle_t *)&g->async);
    g->waker = w;
    waker_set(w, conn_group_wake_send, g);
    return 0;
}

void
conn_group_wake_stop(struct conn_group *g)
{
    if (g->waker == NULL)
        return;
    /* No thread calls uv_async_send once this returns. */
    waker_set(g->waker, NULL, NULL);
    g->waker = NULL;
    uv_close((uv_handle_t *)&g->async, NULL);
}

void
conn_abort(struct conn *c, int err)
{
    conn_fail(c, err);
}
