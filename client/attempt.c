#include "attempt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "../engine/receiver.h"
#include "../engine/sender.h"
#include "ssh.h"

/* The agent exits when its input ends; one that does not is stopped. */
#define ATTEMPT_CHILD_GRACE_MS 3000

enum { ST_OPENING = 1, ST_RUNNING, ST_CLOSED, ST_DONE };

struct attempt_stream {
    struct attempt *a;
    unsigned index;
    int state;
    struct transport tp;
    int has_tp;
    struct ssh_conn *ssh;      /* a further stream's own session */
    struct conn conn;
    struct session *sess;
    struct sender *snd;
    struct receiver *rcv;
    uv_timer_t kill_timer;
    uv_work_t work;            /* opening, then finishing, off the loop */
    int err, exit_status, tp_code;
    char msg[256];
    uint64_t seen, seen_ms;    /* bytes moved, and when that last changed */
    uint64_t open_ms;          /* when its opening began */
    int retired;
    int wait_exit;             /* closed; its child has yet to exit */
};

static uint64_t
stream_moved(const struct attempt_stream *st)
{
    /* Written means taken by the transport, not merely queued. */
    return st->conn.bytes_in + st->conn.bytes_out - st->conn.tx_pending;
}

/* The role a stream runs over what the attempts share. */
static int
stream_role(struct attempt_stream *st, conn_step_fn **step, void **role)
{
    const struct attempt_env *e = st->a->env;

    if (e->plan != NULL) {
        if ((st->snd = sender_new(e->plan, st->index, e->x)) == NULL)
            return FERRY_ERR_NOMEM;
        *step = sender_step;
        *role = st->snd;
    } else if (e->dest != NULL) {
        if ((st->rcv = receiver_new(e->dest, e->in, st->index, e->so.flags,
            e->so.block_size, e->x)) == NULL ||
            (st->index == 0 && e->ntops > 0 &&
            receiver_expect_tops(st->rcv, e->tops, e->ntops) != 0))
            return FERRY_ERR_NOMEM;
        *step = receiver_step;
        *role = st->rcv;
    } else {
        *step = e->role_step;
        *role = e->role;
    }
    return 0;
}

static void
stream_kill(uv_timer_t *t)
{
    struct attempt_stream *st = t->data;

    if (st->has_tp)
        transport_kill(&st->tp);
}

static void stream_finished(struct attempt_stream *st);
static void stream_finish(struct attempt_stream *st);
static void stream_child_exited(void *ctx);
static void attempt_maybe_end(struct attempt *a);

/* The stream is over: its handles go, then the attempt may end. */
static void
stream_done(struct attempt_stream *st)
{
    if (st->has_tp) {
        transport_kill(&st->tp);
        transport_close(&st->tp);
        st->has_tp = 0;
    }
    if (!uv_is_closing((uv_handle_t *)&st->kill_timer))
        uv_close((uv_handle_t *)&st->kill_timer, NULL);
    st->state = ST_DONE;
    attempt_maybe_end(st->a);
}

static void
stream_finish_work(uv_work_t *w)
{
    struct attempt_stream *st = w->data;

    /* A stalled stream's link takes nothing: waiting for its agent to
     * finish would only run out the pump's grace period. */
    if (st->retired)
        transport_stop(&st->tp);
    /* The pump thread's end (bounded: ssh.h) and the session's. */
    st->tp_code = transport_finish(&st->tp, &st->exit_status, st->msg,
        sizeof(st->msg));
}

static void
stream_finish_done(uv_work_t *w, int status)
{
    (void)status;
    stream_finished(w->data);
}

static void attempt_end(struct attempt *a);

static void
stream_closed(struct conn *c, int err)
{
    struct attempt_stream *st = c->data;
    struct attempt *a = st->a;
    const struct attempt_env *e = a->env;

    log_debug("stream %u closed: %s", st->index, ferry_strerror(err));
    st->state = ST_CLOSED;
    st->err = err;
    /* Over libssh2 the session counts the wire, not this pipe. */
    if (st->tp.ssh == NULL) {
        a->wire_out += c->bytes_out;
        a->wire_in += c->bytes_in;
    }
    a->active--;
    if (st->index == 0) {
        a->err = err;
        attempt_end(a);
    } else if (!a->ending && e->plan != NULL) {
        /* Its runs, and the blocks it sent of files not done, go to the
         * others (a flag: another stream's step may be running), which
         * must hear of it even if they are idle. */
        plan_stream_lost(e->plan, st->index);
        conn_group_poke(&a->group);
    } else if (!a->ending && e->dest != NULL && a->s[0] != NULL &&
        a->s[0]->rcv != NULL) {
        /* A pull: the sender is the agent, which may not see this
         * stream die (a link that hangs tells it nothing). */
        receiver_retire_stream(a->s[0]->rcv, st->index);
        conn_group_poke(&a->group);
    }
    if (st->index > 0 && !a->ending)
        output_stream(e->out, "retired", st->index, a->active,
            st->retired ? "it stalled" : err != 0 ? ferry_strerror(err) :
            "it ended");
    if (st->tp.has_proc && !st->tp.proc_exited) {
        /* Its exit status comes when it exits (stream_child_exited). */
        st->wait_exit = 1;
        uv_timer_start(&st->kill_timer, stream_kill,
            ATTEMPT_CHILD_GRACE_MS, 0);
        return;
    }
    stream_finish(st);
}

/* Collects the transport's end: at once for a child that exited, in a
 * worker for a pump thread (bounded, but it may take seconds), except on
 * stream 0, whose end the run reads next. */
static void
stream_finish(struct attempt_stream *st)
{
    st->work.data = st;
    if (st->index != 0 && st->tp.ssh != NULL && uv_queue_work(
        st->a->env->loop, &st->work, stream_finish_work,
        stream_finish_done) == 0)
        return;
    st->tp_code = transport_finish(&st->tp, &st->exit_status, st->msg,
        sizeof(st->msg));
    stream_finished(st);
}

static void
stream_child_exited(void *ctx)
{
    struct attempt_stream *st = ctx;

    if (st->wait_exit) {
        st->wait_exit = 0;
        stream_finish(st);
    }
}

static void
stream_finished(struct attempt_stream *st)
{
    struct attempt *a = st->a;

    uv_timer_stop(&st->kill_timer);
    if (st->has_tp)
        transport_close(&st->tp);
    st->has_tp = 0;
    if (!uv_is_closing((uv_handle_t *)&st->kill_timer))
        uv_close((uv_handle_t *)&st->kill_timer, NULL);
    if (st->ssh != NULL) {
        a->wire_out += ssh_conn_wire_out(st->ssh);
        a->wire_in += ssh_conn_wire_in(st->ssh);
        ssh_conn_close(st->ssh);
        st->ssh = NULL;
    }
    if (st->index == 0) {
        a->exit_status = st->exit_status;
        a->tp_code = st->tp_code;
        snprintf(a->tp_err, sizeof(a->tp_err), "%s", st->msg);
    }
    st->state = ST_DONE;
    attempt_maybe_end(a);
}

/* Starts the conn and session of a stream whose transport is up. */
static int
stream_run(struct attempt_stream *st)
{
    struct attempt *a = st->a;
    const struct attempt_env *e = a->env;
    struct session_open so = e->so;
    conn_step_fn *step;
    void *role;
    int r;

    if ((r = stream_role(st, &step, &role)) != 0)
        return r;
    so.stream = (uint16_t)st->index;
    if ((st->sess = session_client_new(&so, step, role, e->x)) == NULL)
        return FERRY_ERR_NOMEM;
    st->conn.data = st;
    st->conn.group = &a->group;
    if ((r = conn_start_fds(&st->conn, e->loop, st->tp.fd, st->tp.fd,
        session_step, st->sess, stream_closed)) != 0)
        return r;
    st->state = ST_RUNNING;
    st->seen_ms = clock_ms();
    a->active++;
    if (a->active > a->max_active)
        a->max_active = a->active;
    return 0;
}

/* Starts a stream's transport: a child, or a pump over an SSH session
 * that is open already. */
static int
stream_transport(struct attempt_stream *st, char *msg, size_t msglen)
{
    const struct attempt_env *e = st->a->env;
    struct remote_argv *argv;
    char command[16384];
    int r;

    memset(&st->tp, 0, sizeof(st->tp));
    st->tp.fd = -1;
    if (e->cli->remote.local) {
        r = transport_start_local(&st->tp, e->loop, e->cli->agent_path,
            e->cli->verbose);
    } else if ((r = remote_agent_command(e->agent, command,
        sizeof(command))) != 0) {
        snprintf(msg, msglen, "%s: agent command too long",
            e->cli->remote.host);
    } else if (e->use_cmd) {
        if ((argv = xmalloc(sizeof(*argv))) == NULL)
            return FERRY_ERR_NOMEM;
        /* Only the first may ask for a passphrase. */
        if ((r = remote_ssh_argv(e->cli, command, st->index > 0,
            argv)) == 0)
            r = transport_start_cmd(&st->tp, e->loop, argv->argv);
        xfree(argv);
    } else {
        r = transport_start_ssh(&st->tp, st->ssh, command, msg, msglen);
    }
    if (r == 0) {
        st->has_tp = 1;
        st->tp.on_exit = stream_child_exited;
        st->tp.exit_ctx = st;
    }
    return r;
}

static struct attempt_stream *
stream_new(struct attempt *a)
{
    struct attempt_stream *st;

    if (a->next_index >= PROTO_MAX_STREAMS ||
        (st = xcalloc(1, sizeof(*st))) == NULL)
        return NULL;
    st->a = a;
    st->index = a->next_index++;
    st->exit_status = -1;
    st->tp.fd = -1;
    uv_timer_init(a->env->loop, &st->kill_timer);
    st->kill_timer.data = st;
    uv_unref((uv_handle_t *)&st->kill_timer);
    a->s[st->index] = st;
    return st;
}

/* A further SSH connection, off the loop: connecting and logging in take
 * round trips. It never prompts (ssh.h). */
static void
stream_open_work(uv_work_t *w)
{
    struct attempt_stream *st = w->data;
    const struct attempt_env *e = st->a->env;
    struct ssh_conn_opts so;

    memset(&so, 0, sizeof(so));
    so.cfg = e->cfg;
    so.display = e->cli->remote.host;
    st->err = ssh_conn_open(&so, &st->ssh, st->msg, sizeof(st->msg));
}

static void attempt_tune(struct attempt *a, uint64_t now);

/* A further stream's transport and session, and its event. */
static int
stream_start(struct attempt_stream *st)
{
    char msg[256];
    int r;

    if ((r = stream_transport(st, msg, sizeof(msg))) == 0 &&
        (r = stream_run(st)) == 0)
        output_stream(st->a->env->out, "added", st->index, st->a->active,
            st->a->env->streams > 0 ? "as -j asks" : "the rate still rose");
    return r;
}

static void
stream_open_done(uv_work_t *w, int status)
{
    struct attempt_stream *st = w->data;
    struct attempt *a = st->a;
    int r = st->err;

    (void)status;
    a->opening--;
    if (r == 0 && !a->ending && (r = stream_start(st)) == 0) {
        /* The next one need not wait for the tick. */
        attempt_tune(a, clock_ms());
        return;
    }
    if (r != 0 && !a->ending)
        log_info("stream %u: %s", st->index, st->msg[0] ? st->msg :
            ferry_strerror(r));
    /* Not to be: no more tries of this attempt. */
    a->tuned = 1;
    if (st->has_tp)
        (void)transport_finish(&st->tp, &st->exit_status, st->msg,
            sizeof(st->msg));
    if (st->ssh != NULL)
        ssh_conn_close(st->ssh);
    st->ssh = NULL;
    stream_done(st);
}

/* Opens one more stream. */
static void
attempt_add_stream(struct attempt *a)
{
    const struct attempt_env *e = a->env;
    struct attempt_stream *st;
    int r;

    if ((st = stream_new(a)) == NULL) {
        a->tuned = 1;
        return;
    }
    st->state = ST_OPENING;
    st->open_ms = clock_ms();
    if (!e->cli->remote.local && !e->use_cmd) {
        st->work.data = st;
        a->opening++;
        if (uv_queue_work(e->loop, &st->work, stream_open_work,
            stream_open_done) != 0) {
            a->opening--;
            a->tuned = 1;
            stream_done(st);
        }
        return;
    }
    if ((r = stream_start(st)) == 0)
        return;
    log_info("stream %u: %s", st->index, ferry_strerror(r));
    a->tuned = 1;
    stream_done(st);
}

/* 1 if more streams could carry this transfer. */
static int
attempt_can_grow(struct attempt *a)
{
    const struct attempt_env *e = a->env;
    const struct session *s0 = a->s[0] != NULL ? a->s[0]->sess : NULL;

    return !a->ending && s0 != NULL && session_running(s0) &&
        (e->x->caps & PROTO_CAP_STREAMS) && (e->plan != NULL ||
        e->dest != NULL) && a->opening < ATTEMPT_OPENING_MAX &&
        a->next_index < PROTO_MAX_STREAMS;
}

/* Opens streams until there are as many as wanted (replacing a retired
 * one too), a few at a time. */
static void
attempt_fill(struct attempt *a)
{
    while (a->active + a->opening < a->target && !a->tuned &&
        attempt_can_grow(a))
        attempt_add_stream(a);
}

/* The time from the start of a further stream's opening to its session
 * running (JOIN answered) says how long the link is: ten round trips or
 * so, SSH's handshake and login included. An ssh child adds its own start
 * (a quarter of a second on a busy machine): there the first handshake,
 * which libssh2 times, says it, and only a much longer wait otherwise. */
static int
attempt_long_link(const struct attempt *a)
{
    const struct attempt_env *e = a->env;

    if (e->connect_ms > 0)
        return e->connect_ms >= ATTEMPT_LONG_CONNECT_MS ||
            (!e->use_cmd && a->link_ms >= ATTEMPT_SHORT_LINK_MS);
    return a->link_ms >= (e->use_cmd ? 2 : 1) * ATTEMPT_SHORT_LINK_MS;
}

/*
 * At most this many streams by default. On a short link (a further
 * stream was up within ATTEMPT_SHORT_LINK_MS: a handful of round trips)
 * no window binds, and streams only spread the cipher over cores, which
 * both ends share on loopback: one per core, at least two. Rates measured
 * on a shared machine are too noisy to find that out by trying more.
 */
static unsigned
attempt_auto_max(const struct attempt *a)
{
    unsigned cores = uv_available_parallelism();

    if (attempt_long_link(a))
        return ATTEMPT_AUTO_MAX;
    return cores < 2 ? 2 : cores > ATTEMPT_AUTO_MAX ? ATTEMPT_AUTO_MAX :
        cores;
}

/* Notes when the first further stream runs (attempt_long_link). */
static void
attempt_measure_link(struct attempt *a, uint64_t now)
{
    unsigned k;

    for (k = 1; a->link_ms == 0 && k < a->next_index; k++) {
        const struct attempt_stream *st = a->s[k];

        if (st != NULL && st->state == ST_RUNNING && st->sess != NULL &&
            session_running(st->sess)) {
            a->link_ms = now > st->open_ms ? now - st->open_ms : 1;
            log_debug("streams: the second one ran after %llu ms, the "
                "first handshake took %llu ms", (unsigned long long)
                a->link_ms, (unsigned long long)a->env->connect_ms);
        }
    }
}

/*
 * Chooses the number of streams: -j's, or, by default, as many as pay.
 * A second stream opens as soon as data moves and enough is left to send
 * (on 2 cores it already splits the cipher); stream 0's rate while it
 * opens is the first measure. Once every stream is up, the rate over the
 * next ATTEMPT_TUNE_MS is compared with the one before the last streams
 * came: as much per stream as before means each stream's window, not
 * the link or the CPU, binds (a long fat pipe), and the streams double;
 * a tenth more in all (and half as much per stream) adds one; less stops
 * the growth. On a long link (attempt_auto_max) the second step
 * is taken without measuring: four streams at once. So a long link fills
 * within a few seconds, and a short one stops at one stream per core
 * instead of crowding them.
 */
static void
attempt_tune(struct attempt *a, uint64_t now)
{
    const struct attempt_env *e = a->env;
    struct xfer_stats *st = &e->x->st;
    uint64_t moved = xfer_get(&st->bytes_moved), total, done, left;
    unsigned more = 0;
    double rate, per;

    if (e->streams > 0) {
        a->target = e->streams;
        attempt_fill(a);
        return;
    }
    attempt_fill(a);
    if (a->grown || a->opening > 0 || a->active < a->target ||
        !attempt_can_grow(a) || moved == 0)
        return;
    total = xfer_get(&st->bytes_total);
    done = xfer_get(&st->bytes_done);
    left = total > done ? total - done : 0;
    if (a->link_ms == 0 && a->target >= 2)
        return;  /* how long the link is, from the second stream's start */
    if (a->tune_at == 0) {
        /* The first data: a second stream, if there is work for it; four
         * at once if the first handshake already took long (a long link,
         * where seconds count: attempt_auto_max). */
        a->tune_at = now;
        a->tune_moved = moved;
        if (left < 2 * ATTEMPT_AUTO_MIN_LEFT) {
            a->grown = 1;
            return;
        }
        a->target = e->connect_ms >= ATTEMPT_LONG_CONNECT_MS &&
            left >= 4 * ATTEMPT_AUTO_MIN_LEFT ? 4 : 2;
        a->tune_streams = 1;
        attempt_fill(a);
        return;
    }
    if (a->period_at == 0 && a->target == 2 && attempt_long_link(a)) {
        /* A long link: a stream's window binds, as good as measured; the
         * second of a link's few seconds is worth more than a measure. */
        a->target = 4;
        attempt_fill(a);
        return;
    }
    if (a->period_at == 0) {
        /* Every stream is up: the rate until now is the one to beat. */
        a->tune_rate = (double)(moved - a->tune_moved) * 1000.0 /
            (double)(now - a->tune_at + 1);
        a->period_at = now;
        a->period_moved = moved;
        return;
    }
    if (now - a->period_at < ATTEMPT_TUNE_MS)
        return;
    rate = (double)(moved - a->period_moved) * 1000.0 /
        (double)(now - a->period_at + 1);
    log_debug("streams: %u at %.1f MiB/s, before %u at %.1f MiB/s",
        a->active, rate / 1048576.0, a->tune_streams,
        a->tune_rate / 1048576.0);
    /* Per stream: as much as before means each new one found a window
     * of its own to fill; much less, that the link or the cores are near
     * their end. */
    per = rate * a->tune_streams / (a->tune_rate * a->active + 1);
    if (per >= 0.9)
        more = a->active;
    else if (rate >= a->tune_rate * 1.1 && per >= 0.5)
        more = 1;
    if (more > attempt_auto_max(a) - a->active)
        more = attempt_auto_max(a) - a->active;
    if (more == 0 || left < ATTEMPT_AUTO_MIN_LEFT) {
        a->grown = 1;  /* the last ones did not pay: stop there */
        return;
    }
    a->tune_at = a->period_at;
    a->tune_moved = a->period_moved;
    a->tune_streams = a->active;
    a->period_at = 0;
    a->target = a->active + more;
    attempt_fill(a);
}

/* 1 if the far side is not what holds stream k up: another stream
 * moved data in the last limit ms, or, when we send, every other one has
 * nothing waiting (they ran out of work while k's is stuck in its pipe).
 * When we receive, idle streams prove nothing: the sender may be held up
 * as a whole (stream 0 stuck, say), which is no reason to retire k. */
static int
attempt_others_free(const struct attempt *a, unsigned k, uint64_t now,
    uint64_t limit)
{
    const int receiving = a->env->dest != NULL;
    unsigned j;
    int waiting = 0;

    for (j = 0; j < a->next_index; j++) {
        const struct attempt_stream *o = a->s[j];

        if (j == k || o == NULL || o->state != ST_RUNNING)
            continue;
        if (now - o->seen_ms < limit)
            return 1;
        waiting |= o->conn.tx_pending > 0;
    }
    return !receiving && !waiting;
}

/*
 * Stalls, judged by data moved, not by keepalives. A further stream that
 * moved nothing for the stall timeout, with data waiting (or one we
 * receive on), while the others moved data or had nothing to send, is
 * retired and replaced: the far side as a whole (a slow disk) did not
 * hold them all up, this link alone is stuck. When
 * nothing moves anywhere for twice that, the link is gone without a word
 * (or the far side hangs), and the attempt ends so that the run
 * reconnects.
 */
static void
attempt_watch(struct attempt *a, uint64_t now)
{
    const struct attempt_env *e = a->env;
    uint64_t limit = (uint64_t)e->stall_s * 1000, total = 0, m;
    unsigned k;

    if (limit == 0)
        return;
    for (k = 0; k < a->next_index; k++) {
        struct attempt_stream *st = a->s[k];

        if (st == NULL || st->state != ST_RUNNING)
            continue;
        m = stream_moved(st);
        total += m;
        if (m != st->seen) {
            st->seen = m;
            st->seen_ms = now;
        }
    }
    for (k = 1; k < a->next_index; k++) {
        struct attempt_stream *st = a->s[k];

        if (st == NULL || st->state != ST_RUNNING ||
            now - st->seen_ms < limit)
            continue;
        if (st->retired || !attempt_others_free(a, k, now, limit) ||
            (st->conn.tx_pending == 0 && e->dest == NULL))
            continue;
        st->retired = 1;
        conn_abort(&st->conn, FERRY_ERR_TIMEOUT);
        /* A new stream takes its place (attempt_fill). */
        a->tuned = 0;
    }
    if (total != a->last_total) {
        a->last_total = total;
        a->idle_since = now;
    } else if (now - a->idle_since >= 2 * limit && a->s[0] != NULL &&
        a->s[0]->state == ST_RUNNING) {
        log_info("no data moved for %u s: reconnecting", 2 * e->stall_s);
        for (k = 0; k < a->next_index; k++)
            if (a->s[k] != NULL && a->s[k]->state == ST_RUNNING)
                log_debug("stream %u: moved %llu, %llu ms ago, %zu waiting",
                    k, (unsigned long long)a->s[k]->seen,
                    (unsigned long long)(now - a->s[k]->seen_ms),
                    a->s[k]->conn.tx_pending);
        conn_abort(&a->s[0]->conn, FERRY_ERR_TIMEOUT);
    }
}

static void
attempt_tick(uv_timer_t *t)
{
    struct attempt *a = t->data;
    uint64_t now = clock_ms();

    if (a->ending)
        return;
    if (a->idle_since == 0)
        a->idle_since = now;
    attempt_measure_link(a, now);
    attempt_watch(a, now);
    attempt_tune(a, now);
}

/* Stream 0 is gone: the attempt is over, and the other streams end. */
static void
attempt_end(struct attempt *a)
{
    unsigned k;

    if (a->ending)
        return;
    a->ending = 1;
    a->moving_s = (double)(clock_ms() - a->t0) / 1000.0;
    uv_timer_stop(&a->tick);
    for (k = 1; k < a->next_index; k++) {
        struct attempt_stream *st = a->s[k];

        if (st != NULL && st->state == ST_RUNNING)
            conn_abort(&st->conn, a->err == 0 ? FERRY_ERR_CLOSED : a->err);
    }
}

static void
attempt_maybe_end(struct attempt *a)
{
    unsigned k;

    if (!a->ending)
        return;
    for (k = 0; k < a->next_index; k++)
        if (a->s[k] != NULL && a->s[k]->state != ST_DONE)
            return;
    if (!uv_is_closing((uv_handle_t *)&a->tick))
        uv_close((uv_handle_t *)&a->tick, NULL);
}

int
attempt_run(struct attempt *a, const struct attempt_env *env,
    struct ssh_conn *ssh0, char *msg, size_t msglen)
{
    struct attempt_stream *st;
    int r;

    memset(a, 0, sizeof(*a));
    a->env = env;
    a->exit_status = -1;
    a->group.limit = env->limit;
    a->t0 = clock_ms();
    uv_timer_init(env->loop, &a->tick);
    a->tick.data = a;
    if ((st = stream_new(a)) == NULL) {
        uv_close((uv_handle_t *)&a->tick, NULL);
        return FERRY_ERR_NOMEM;
    }
    st->ssh = NULL;  /* stream 0's session is the run's */
    st->state = ST_OPENING;
    memset(&st->tp, 0, sizeof(st->tp));
    st->tp.fd = -1;
    if (env->cli->remote.local || env->use_cmd) {
        r = stream_transport(st, msg, msglen);
    } else {
        char command[16384];

        if ((r = remote_agent_command(env->agent, command,
            sizeof(command))) != 0)
            snprintf(msg, msglen, "%s: agent command too long",
                env->cli->remote.host);
        else if ((r = transport_start_ssh(&st->tp, ssh0, command, msg,
            msglen)) == 0)
            st->has_tp = 1;
    }
    if (r == 0)
        r = stream_run(st);
    if (r != 0) {
        a->ending = 1;
        stream_done(st);
        uv_run(env->loop, UV_RUN_NOWAIT);
        return r;
    }
    uv_timer_start(&a->tick, attempt_tick, ATTEMPT_TICK_MS, ATTEMPT_TICK_MS);
    uv_run(env->loop, UV_RUN_DEFAULT);
    if (!a->ending) {
        /* The loop ran dry with stream 0 open: never a success. */
        attempt_abort(a, FERRY_ERR_CLOSED);
        uv_run(env->loop, UV_RUN_DEFAULT);
    }
    uv_run(env->loop, UV_RUN_NOWAIT);
    return 0;
}

void
attempt_abort(struct attempt *a, int err)
{
    unsigned k;

    a->interrupted = err == FERRY_ERR_INTERRUPTED;
    for (k = 0; k < a->next_index; k++) {
        struct attempt_stream *st = a->s[k];

        if (st != NULL && st->state == ST_RUNNING)
            conn_abort(&st->conn, err);
    }
}

const struct session *
attempt_session(const struct attempt *a)
{
    return a->s[0] != NULL ? a->s[0]->sess : NULL;
}

void
attempt_cleanup(struct attempt *a)
{
    unsigned k;

    for (k = 0; k < PROTO_MAX_STREAMS; k++) {
        struct attempt_stream *st = a->s[k];

        if (st == NULL)
            continue;
        session_free(st->sess);
        sender_free(st->snd);
        receiver_free(st->rcv);
        xfree(st);
        a->s[k] = NULL;
    }
}
