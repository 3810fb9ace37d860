#include "attempt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "attempt_int.h"
#include "ssh.h"

/* The agent exits when its input ends; one that does not is stopped. */
#define ATTEMPT_CHILD_GRACE_MS 3000


/* The role a stream runs: the side's, or status's and clean's own. */
static int
stream_role(struct attempt_stream *st, conn_step_fn **step, void **role)
{
    const struct attempt_env *e = st->a->env;

    if (e->side != NULL)
        return side_stream(e->side, st->index, step, role);
    *step = e->role_step;
    *role = e->role;
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
void
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
stream_off_main(void *arg)
{
    struct attempt_stream *st = arg;

    st->off_fn(&st->work);
    atomic_store(&st->off_state, OFF_FINISHED);
    uv_async_send(&st->a->off_loop);
}

int
stream_off_loop(struct attempt_stream *st, void (*fn)(uv_work_t *),
    void (*done)(uv_work_t *, int))
{
    struct attempt *a = st->a;

    st->off_fn = fn;
    st->off_done = done;
    st->work.data = st;
    atomic_store(&st->off_state, OFF_RUNNING);
    if (uv_thread_create(&st->off_thr, stream_off_main, st) != 0) {
        atomic_store(&st->off_state, OFF_IDLE);
        return FERRY_ERR_NOMEM;
    }
    /* The loop lives while one runs. */
    if (a->off_running++ == 0)
        uv_ref((uv_handle_t *)&a->off_loop);
    return 0;
}

static void
attempt_off_loop_done(uv_async_t *h)
{
    struct attempt *a = h->data;
    unsigned k;

    for (k = 0; k < a->next_index; k++) {
        struct attempt_stream *st = a->s[k];

        if (st == NULL || atomic_load(&st->off_state) != OFF_FINISHED)
            continue;
        uv_thread_join(&st->off_thr);
        atomic_store(&st->off_state, OFF_IDLE);
        if (--a->off_running == 0)
            uv_unref((uv_handle_t *)&a->off_loop);
        st->off_done(&st->work, 0);
    }
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

    log_debug("stream %u closed: %s", st->index, err == 0 ? "its end" :
        ferry_strerror(err));
    st->state = ST_CLOSED;
    st->err = err;
    /* A clean end needs nothing more from the agent: not its exit
     * status, a round trip away. Stream 0 of a pull said SUMMARY last;
     * the others end with the transfer, whichever way it went. A push's
     * stream 0 heard SUMMARY from its agent, which is ending already. */
    if ((st->index == 0 && err == 0 && attempt_receives(e)) ||
        (st->index > 0 && a->ending && a->err == 0))
        transport_leave(&st->tp);
    /* Over libssh2 the session counts the wire, not this pipe. */
    if (st->tp.ssh == NULL) {
        a->wire_out += c->bytes_out;
        a->wire_in += c->bytes_in;
    }
    a->active--;
    if (st->index == 0) {
        a->err = err;
        attempt_end(a);
    } else if (!a->ending && e->side != NULL &&
        side_stream_lost(e->side, st->index)) {
        /* A flag: another stream's step may be running. */
        conn_group_poke(&a->group);
    }
    if (st->index > 0 && !a->ending)
        output_stream(e->out, "retired", st->index, a->active,
            st->retired ? "it stalled" : err != 0 ? ferry_strerror(err) :
            "it ended");
    if (st->tp.has_proc && !st->tp.proc_exited) {
        /* Its exit status comes when it exits (stream_child_exited).
         * An ssh whose link went silent would wait on it for its
         * keepalives to give up: one we stop is stopped at once. */
        st->wait_exit = 1;
        uv_timer_start(&st->kill_timer, stream_kill, err ==
            FERRY_ERR_INTERRUPTED || st->retired ? 0 :
            ATTEMPT_CHILD_GRACE_MS, 0);
        return;
    }
    stream_finish(st);
}

/* Collects the transport's end: at once for a child that exited, off
 * the loop for a pump thread (bounded, but it may take seconds), except
 * on stream 0, whose end the run reads next. */
static void
stream_finish(struct attempt_stream *st)
{
    st->work.data = st;
    if (st->index != 0 && st->tp.ssh != NULL && stream_off_loop(st,
        stream_finish_work, stream_finish_done) == 0)
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
    if ((r = conn_start_fds(&st->conn, e->loop, st->tp.rfd, st->tp.wfd,
        session_step, st->sess, stream_closed)) != 0)
        return r;
    st->tp.rfd = st->tp.wfd = -1;  /* the conn's now */
    st->state = ST_RUNNING;
    st->seen_ms = clock_ms();
    a->active++;
    if (a->active > a->max_active)
        a->max_active = a->active;
    return 0;
}

int
stream_by_cmd(const struct attempt_env *e, unsigned index)
{
    return e->use_cmd || (index > 0 && e->more_by_cmd);
}

/* Starts a stream's transport: a child, or a pump over an SSH session
 * that is open already. */
int
stream_transport(struct attempt_stream *st, char *msg, size_t msglen)
{
    const struct attempt_env *e = st->a->env;
    struct remote_argv *argv;
    char command[16384];
    int r;

    memset(&st->tp, 0, sizeof(st->tp));
    st->tp.rfd = st->tp.wfd = -1;
    if (e->cli->remote.local) {
        r = transport_start_local(&st->tp, e->loop, e->cli->agent_path,
            e->cli->verbose);
    } else if ((r = remote_agent_command(e->agent, command,
        sizeof(command))) != 0) {
        snprintf(msg, msglen, "%s: agent command too long",
            e->cli->remote.host);
    } else if (stream_by_cmd(e, st->index)) {
        log_debug("stream %u goes through ssh", st->index);
        if ((argv = xmalloc(sizeof(*argv))) == NULL)
            return FERRY_ERR_NOMEM;
        /* Only the first may ask for a passphrase. */
        if ((r = remote_ssh_argv(e->agent, command, st->index > 0 ?
            REMOTE_SSH_BATCH : 0, argv)) == 0)
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

struct attempt_stream *
stream_new(struct attempt *a)
{
    struct attempt_stream *st;

    if (a->next_index >= PROTO_MAX_STREAMS ||
        (st = xcalloc(1, sizeof(*st))) == NULL)
        return NULL;
    st->a = a;
    st->index = a->next_index++;
    st->exit_status = -1;
    st->tp.rfd = st->tp.wfd = -1;
    uv_timer_init(a->env->loop, &st->kill_timer);
    st->kill_timer.data = st;
    uv_unref((uv_handle_t *)&st->kill_timer);
    a->s[st->index] = st;
    return st;
}

/* A further stream's transport and session, and its event. */
int
stream_start(struct attempt_stream *st)
{
    char msg[256];
    int r;

    if ((st->has_tp || (r = stream_transport(st, msg, sizeof(msg))) == 0) &&
        (r = stream_run(st)) == 0)
        output_stream(st->a->env->out, "added", st->index, st->a->active,
            st->a->env->streams > 0 ? "as -j asks" : "the rate still rose");
    return r;
}

/* A further stream that cannot be, or is not needed: it goes. */
void
stream_drop(struct attempt_stream *st)
{
    /* Its agent waits for a JOIN that will not come: not for it. */
    if (st->has_tp) {
        transport_stop(&st->tp);
        (void)transport_finish(&st->tp, &st->exit_status, st->msg,
            sizeof(st->msg));
    }
    if (st->ssh != NULL)
        ssh_conn_close(st->ssh);
    st->ssh = NULL;
    stream_done(st);
}

int
stream0_running(const struct attempt *a)
{
    return a->s[0] != NULL && a->s[0]->sess != NULL &&
        session_running(a->s[0]->sess);
}

static void
attempt_tick(uv_timer_t *t)
{
    struct attempt *a = t->data;
    uint64_t now = clock_ms();

    if (a->ending)
        return;
    if (a->ahead_pending > 0) {
        attempt_ahead_answered(a, now);
        if (now - a->full_tick < ATTEMPT_TICK_MS)
            return;
    }
    a->full_tick = now;
    if (a->idle_since == 0)
        a->idle_since = now;
    if (a->s0_run_ms == 0 && stream0_running(a))
        a->s0_run_ms = now > a->t0 ? now - a->t0 : 1;
    attempt_unpark(a, now);
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
    attempt_unpark(a, clock_ms());  /* the ones opened ahead go */
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
    conn_group_wake_stop(&a->group);
    if (a->off_running == 0 && !uv_is_closing((uv_handle_t *)&a->off_loop))
        uv_close((uv_handle_t *)&a->off_loop, NULL);
}

int
attempt_run(struct attempt *a, const struct attempt_env *env,
    struct ssh_conn *ssh0, char *msg, size_t msglen)
{
    struct attempt_stream *st;
    uint64_t tick_ms;
    int r;

    memset(a, 0, sizeof(*a));
    a->env = env;
    a->exit_status = -1;
    a->group.limit = env->limit;
    a->t0 = clock_ms();
    a->link = env->link;
    xfer_mark_now(env->x, &a->share_mark);
    uv_timer_init(env->loop, &a->tick);
    a->tick.data = a;
    (void)uv_async_init(env->loop, &a->off_loop, attempt_off_loop_done);
    a->off_loop.data = a;
    uv_unref((uv_handle_t *)&a->off_loop);
    /* The threads behind the roles (the scan, volume commits) wake the
     * streams of this attempt. */
    if (conn_group_wake_start(&a->group, env->loop, &env->x->wake) != 0 ||
        (st = stream_new(a)) == NULL) {
        conn_group_wake_stop(&a->group);
        uv_close((uv_handle_t *)&a->tick, NULL);
        uv_close((uv_handle_t *)&a->off_loop, NULL);
        return FERRY_ERR_NOMEM;
    }
    st->ssh = NULL;  /* stream 0's session is the run's */
    st->state = ST_OPENING;
    memset(&st->tp, 0, sizeof(st->tp));
    st->tp.rfd = st->tp.wfd = -1;
    /* The further connections log in while stream 0 opens its channel and
     * starts its agent (two round trips and a process). */
    attempt_preopen(a);
    if (env->cli->remote.local || env->use_cmd) {
        r = stream_transport(st, msg, msglen);
    } else {
        char command[16384];

        if ((r = remote_agent_command(env->agent, command,
            sizeof(command))) != 0)
            snprintf(msg, msglen, "%s: agent command too long",
                env->cli->remote.host);
        else if ((r = transport_start_ssh(&st->tp, ssh0, command, msg,
            msglen)) == 0) {
            st->has_tp = 1;
            /* Its channel's round trip and window, measured. */
            if (env->link.rtt_ms > 0)
                a->link = attempt_link_of(ssh0, 1, attempt_sends(env));
            log_debug("streams: a round trip of %llu ms, a window of %llu "
                "KiB per stream", (unsigned long long)a->link.rtt_ms,
                (unsigned long long)a->link.window >> 10);
        }
    }
    if (r == 0)
        r = stream_run(st);
    if (r != 0) {
        a->ending = 1;
        stream_done(st);
        /* What was opened ahead goes once its thread is back. */
        while (a->opening > 0)
            uv_run(env->loop, UV_RUN_ONCE);
        conn_group_wake_stop(&a->group);
        if (!uv_is_closing((uv_handle_t *)&a->off_loop))
            uv_close((uv_handle_t *)&a->off_loop, NULL);
        uv_run(env->loop, UV_RUN_NOWAIT);
        return r;
    }
    a->full_tick = clock_ms();
    tick_ms = a->ahead_pending > 0 ? ATTEMPT_AHEAD_TICK_MS : ATTEMPT_TICK_MS;
    uv_timer_start(&a->tick, attempt_tick, tick_ms, tick_ms);
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
        if (a->env->side != NULL)
            side_stream_end(a->env->side, k);
        xfree(st);
        a->s[k] = NULL;
    }
}
