#include "attempt_int.h"

#include <string.h>

#include "../common/alloc.h"
#include "../common/clock.h"
#include "../common/log.h"
#include "ssh.h"

static void attempt_add_stream(struct attempt *a);

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
    /* One started during stream 0's login, if there is one left. */
    st->err = e->early == NULL ? FERRY_ERR_CLOSED :
        ssh_early_take(e->early, &st->ssh, st->msg, sizeof(st->msg));
    /* One that failed (sshd's LoginGraceTime ran out while the user
     * answered a prompt, say) is tried again from the start. */
    if (st->err != 0 && st->err != FERRY_ERR_CLOSED)
        log_info("stream %u: started early, it failed (%s): again",
            st->index, st->msg[0] ? st->msg : ferry_strerror(st->err));
    if (st->err != 0 && st->err != FERRY_ERR_INTERRUPTED)
        st->err = ssh_conn_open(&so, &st->ssh, st->msg, sizeof(st->msg));
    /* The channel and the agent's start are round trips too. */
    if (st->err == 0)
        st->err = stream_transport(st, st->msg, sizeof(st->msg));
}

static void
stream_open_done(uv_work_t *w, int status)
{
    struct attempt_stream *st = w->data;
    struct attempt *a = st->a;
    uint64_t now = clock_ms();
    int r = st->err;

    (void)status;
    a->opening--;
    st->ssh_ms = now > st->open_ms ? now - st->open_ms : 0;
    if (r == 0 && !a->ending && !stream0_running(a)) {
        st->state = ST_PARKED;  /* until stream 0 runs */
        a->parked++;
        return;
    }
    if (r == 0 && !a->ending && (r = stream_start(st)) == 0) {
        /* The next one need not wait for the tick. */
        attempt_tune(a, now);
        return;
    }
    if (r != 0 && !a->ending)
        log_info("stream %u: %s", st->index, st->msg[0] ? st->msg :
            ferry_strerror(r));
    /* Not to be: no more tries of this attempt. */
    a->tuned = 1;
    stream_drop(st);
}

/* Stream 0 runs: the streams opened ahead JOIN now, if the agent can
 * take them; else they go. */
void
attempt_unpark(struct attempt *a, uint64_t now)
{
    const struct attempt_env *e = a->env;
    unsigned k;
    int r;

    if (a->parked == 0 || (!a->ending && !stream0_running(a)))
        return;
    for (k = 1; k < a->next_index; k++) {
        struct attempt_stream *st = a->s[k];

        if (st == NULL || st->state != ST_PARKED)
            continue;
        a->parked--;
        st->state = ST_OPENING;
        /* Its time to run is its own connection's and the JOIN's, not
         * its wait for stream 0 (attempt_long_link). */
        st->open_ms = now - st->ssh_ms;
        if (!a->ending && (e->x->caps & PROTO_CAP_STREAMS) &&
            (r = stream_start(st)) == 0)
            continue;
        stream_drop(st);
    }
}

/*
 * The streams that would come first are opened while stream 0 starts the
 * transfer, and JOIN as soon as it runs: over libssh2, the further SSH
 * connections (several round trips each, and the channel running the
 * agent) of a push on a long link big enough for attempt_tune to want
 * four streams at its first data, or up to three of -j's N - 1. Not a
 * pull's by default (its size comes only with PLAN: a small pull would
 * log in four times for nothing), and not over the ssh program, whose
 * children connect in any order (stream 0 is the first connection the
 * far side sees, which tests of one stream's faults rely on). A push's
 * ssh children beside a libssh2 stream 0 wait for the first answers
 * (attempt_ahead_answered); a pull's start once stream 0 runs, as they
 * did when its stream 0 went through ssh too (parked ones, opened while
 * a pull's stream 0 started, were once seen dropped at their login in
 * e2e/ssh_streams, cause not found).
 */
static unsigned attempt_auto_max(const struct attempt *a);
static unsigned attempt_ahead_all(const struct cli *cli,
    const struct width_link *link, uint64_t bytes);

void
attempt_preopen(struct attempt *a)
{
    const struct attempt_env *e = a->env;
    unsigned want, all;

    if (e->cli->remote.local || e->use_cmd || e->side == NULL)
        return;
    /* A push that adopts what the box already holds (each box's transfer
     * after a swarm) sends little of its size: attempt_tune adds streams
     * if data flows. */
    if (e->cli->adopt != NULL)
        return;
    if (e->early != NULL)
        want = ssh_early_left(e->early);
    else if (e->more_by_cmd && e->streams == 0) {
        /* Opened once the first answers say so (attempt_ahead_answered). */
        want = 0;
        if (xfer_get(&e->x->st.bytes_total) >= 2 * ATTEMPT_AUTO_MIN_LEFT)
            a->ahead_pending = attempt_auto_max(a) - 1;
    } else if (e->more_by_cmd && attempt_receives(e))
        want = 0;  /* a pull's ssh children: once stream 0 runs */
    else if (attempt_sends(e) || e->streams > 0)
        want = attempt_ahead(e->cli, &e->link,
            xfer_get(&e->x->st.bytes_total));
    else
        want = 0;
    if (want > ATTEMPT_OPENING_MAX)
        want = ATTEMPT_OPENING_MAX;
    /* The rest of a long link's width opens as the first ones log in
     * (attempt_fill, within MaxStartups), not at the first data: a
     * login is ten round trips, two seconds at 200 ms. */
    if (attempt_sends(e) && e->cli->streams == 0) {
        all = attempt_ahead_all(e->cli, &e->link,
            xfer_get(&e->x->st.bytes_total));
        if (all > want)
            a->target = 1 + all;
    }
    while (want-- > 0 && !a->tuned)
        attempt_add_stream(a);
}

/*
 * A push whose further streams are ssh children (a short link) opens
 * them ahead once the first answers say there is data for them: files
 * wanted whole, enough for attempt_tune to want the streams at the first
 * data. A file with a basis or held blocks may move a few MiB of its
 * size (two logins cost a 1% rewrite of a 512 MiB checkpoint 0.08 s and
 * a third of a core-second, here), and files packed in volumes may
 * shrink by half or more (a 200 MiB text tree crosses in 113 MiB at
 * zstd's fastest level, and took 1.60-1.65 s on one stream against
 * 1.75-1.76 s with a second login here): attempt_tune judges those by their
 * data and what compression saved of it.
 * Ticks come every ATTEMPT_AHEAD_TICK_MS meanwhile: the answers
 * come a round trip after stream 0 runs.
 */
void
attempt_ahead_answered(struct attempt *a, uint64_t now)
{
    const struct attempt_env *e = a->env;
    unsigned want = a->ahead_pending;

    if (want == 0)
        return;
    if (xfer_get(&e->x->st.bytes_whole) - xfer_get(&e->x->st.bytes_packed) <
        2 * ATTEMPT_AUTO_MIN_LEFT) {
        if (now - a->t0 < ATTEMPT_AHEAD_WAIT_MS && a->tune_at == 0 &&
            !a->grown && !a->tuned)
            return;
        want = 0;  /* attempt_tune goes on from here */
    }
    a->ahead_pending = 0;
    (void)uv_timer_set_repeat(&a->tick, ATTEMPT_TICK_MS);
    if (want > ATTEMPT_OPENING_MAX)
        want = ATTEMPT_OPENING_MAX;
    while (want-- > 0 && !a->tuned && !a->ending)
        attempt_add_stream(a);
}

int
attempt_env_link(const struct attempt_env *e)
{
    return ssh_login_link(e->connect_ms, e->auth_ms);
}

/* attempt_ahead's streams, all of them. */
static unsigned
attempt_ahead_all(const struct cli *cli, const struct width_link *link,
    uint64_t bytes)
{
    if (cli->remote.local)
        return 0;
    if (cli->streams > 0)
        return (unsigned)cli->streams - 1;
    if (link->rtt_ms > 0 && bytes >= ATTEMPT_LONG_MIN_LEFT)
        return width_first(link, bytes, WIDTH_LONG_MAX) - 1;
    return 0;
}

unsigned
attempt_ahead(const struct cli *cli, const struct width_link *link,
    uint64_t bytes)
{
    unsigned want = attempt_ahead_all(cli, link, bytes);

    return want > ATTEMPT_OPENING_MAX ? ATTEMPT_OPENING_MAX : want;
}

struct width_link
attempt_link_of(const struct ssh_conn *c, int long_link, int sending)
{
    struct width_link l = { 0, 0 };
    uint64_t rtt, send_window, recv_window;

    if (c == NULL || !long_link)
        return l;
    ssh_conn_link(c, &rtt, &send_window, &recv_window);
    l.rtt_ms = rtt;
    l.window = sending ? send_window : recv_window;
    return l;
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
    if (!e->cli->remote.local && !stream_by_cmd(e, st->index)) {
        st->work.data = st;
        a->opening++;
        if (stream_off_loop(st, stream_open_work, stream_open_done) != 0) {
            a->opening--;
            a->tuned = 1;
            stream_done(st);
        }
        return;
    }
    if (stream_by_cmd(e, st->index) && !stream0_running(a)) {
        /* Its ssh logs in while stream 0 starts; it JOINs once that
         * runs (attempt_unpark), as one over libssh2 does. */
        if ((r = stream_transport(st, st->msg, sizeof(st->msg))) == 0) {
            st->state = ST_PARKED;
            a->parked++;
            return;
        }
    } else if ((r = stream_start(st)) == 0) {
        return;
    }
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
        (e->x->caps & PROTO_CAP_STREAMS) && e->side != NULL &&
        a->opening < ATTEMPT_OPENING_MAX && a->next_index < PROTO_MAX_STREAMS;
}

/* Opens streams until there are as many as wanted (replacing a retired
 * one too), a few at a time. */
static void
attempt_fill(struct attempt *a)
{
    while (a->active + a->opening + a->parked < a->target && !a->tuned &&
        attempt_can_grow(a))
        attempt_add_stream(a);
}

/* What stream 0's own start says, before a further stream does: the
 * first libssh2 key exchange or login, else (the ssh program carries
 * stream 0, which no handshake of ours timed) stream 0's time from its
 * child's start to running, which a long link's round trips stretch to
 * half a second or more where loopback takes a tenth. */
static int
attempt_first_long(const struct attempt *a)
{
    const struct attempt_env *e = a->env;
    int link = attempt_env_link(e);

    if (link >= 0)
        return link;
    return e->use_cmd && a->s0_run_ms >= ATTEMPT_SHORT_LINK_MS;
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
    int link = attempt_env_link(e);

    if (link >= 0)
        return link ||
            (!e->use_cmd && !e->more_by_cmd &&
            a->link_ms >= ATTEMPT_SHORT_LINK_MS);
    return attempt_first_long(a) || a->link_ms >= (e->use_cmd ||
        e->more_by_cmd ? 2 : 1) * ATTEMPT_SHORT_LINK_MS;
}

/*
 * At most this many streams by default. On a short link (a further
 * stream was up within ATTEMPT_SHORT_LINK_MS: a handful of round trips)
 * no window binds, and streams only spread the cipher over cores: one per
 * core, at least two, and stream 0 beside them where it is libssh2's and
 * the others the ssh program's (its AES-CTR in 16-byte calls costs what
 * two of theirs do). When the far end runs on this machine (loopback)
 * it shares those cores: each of its streams takes an sshd and an agent
 * beside our ssh, so one per two cores (at least one). Rates measured on
 * a shared machine are too noisy to find that out by trying more: a
 * third stream made a 512 MiB push on loopback 15% faster on one 2-core
 * machine and 20-30% slower on another, where an ssh login costs half a
 * CPU-second (docs/BENCHMARKS.md, "Streams on this machine").
 */
static unsigned
attempt_auto_max(const struct attempt *a)
{
    unsigned cores = uv_available_parallelism(), n;

    if (attempt_long_link(a))
        return WIDTH_LONG_MAX;
    if (a->env->same_host && a->env->more_by_cmd)
        n = (cores < 4 ? 1 : cores / 2) + 1;
    else
        n = (cores < 2 ? 2 : cores) + (a->env->more_by_cmd ? 1 : 0);
    return n > ATTEMPT_AUTO_MAX ? ATTEMPT_AUTO_MAX : n;
}

/* Notes when the first further stream runs (attempt_long_link). */
void
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
 * What the rates of attempt_tune count: on a long link the bytes the SSH
 * sessions sent (a push) or received (a pull) so far, which only the
 * windows let through; bytes moved would also count what waits in the
 * pipes to the pumps, several MiB per stream as it starts, and make a
 * link look faster than it is for the first seconds. Elsewhere, bytes
 * moved.
 */
static uint64_t
attempt_counted(const struct attempt *a)
{
    const struct attempt_env *e = a->env;
    uint64_t n;
    unsigned k;

    if (a->link.rtt_ms == 0)
        return xfer_get(&e->x->st.bytes_moved);
    n = attempt_sends(e) ? a->wire_out : a->wire_in;
    for (k = 0; k < a->next_index; k++) {
        const struct attempt_stream *st = a->s[k];
        const struct ssh_conn *c;

        if (st == NULL)
            continue;
        c = st->ssh != NULL ? st->ssh : st->tp.ssh;
        if (c != NULL)
            n += attempt_sends(e) ? ssh_conn_wire_out(c) :
                ssh_conn_wire_in(c);
    }
    return n;
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
void
attempt_tune(struct attempt *a, uint64_t now)
{
    const struct attempt_env *e = a->env;
    struct xfer_stats *st = &e->x->st;
    uint64_t moved = xfer_get(&st->bytes_moved), total, done, left, wire,
        min_left, counted;
    struct width_period before, cur;
    unsigned more;

    if (e->streams > 0) {
        a->target = e->streams;
        attempt_fill(a);
        return;
    }
    attempt_fill(a);
    total = xfer_get(&st->bytes_total);
    /* A pull's size comes with PLAN, a round trip or two before its
     * first data: that is soon enough to know. */
    if (a->grown || a->opening > 0 || a->active < a->target ||
        !attempt_can_grow(a) || (moved == 0 && (!attempt_receives(e) ||
        total == 0)))
        return;
    done = xfer_get(&st->bytes_done);
    left = total > done ? total - done : 0;
    if (a->link_ms == 0 && a->target >= 2)
        return;  /* how long the link is, from the second stream's start */
    if (a->tune_at == 0) {
        /* The first data: a second stream, if there is work for it (two
         * over ssh beside a libssh2 stream 0); four at once if the first
         * handshake already took long (a long link, where seconds count:
         * attempt_auto_max). Work for it is data that crosses the wire:
         * of a delta or a resume, the share of it the data so far says
         * (a checkpoint rewritten in 1% of it moves a few MiB, and two
         * logins for it cost more than they could save); of volumes,
         * what compression leaves of them. */
        /* Less on a link libssh2's handshake timed long: an ssh
         * child's slow start alone (attempt_first_long) could be a busy
         * machine's, where logins cost CPU. */
        min_left = attempt_env_link(e) == 1 ?
            ATTEMPT_LONG_MIN_LEFT : 2 * ATTEMPT_AUTO_MIN_LEFT;
        if (left < min_left) {
            a->grown = 1;
            return;
        }
        if (!xfer_wire_left(e->x, &a->share_mark, left, &wire))
            return;
        if (wire < min_left) {
            xfer_mark_now(e->x, &a->share_mark);  /* judge the next data */
            return;
        }
        a->tune_at = now;
        a->tune_moved = attempt_counted(a);
        if (a->link.rtt_ms > 0)
            a->target = width_first(&a->link, wire, attempt_auto_max(a));
        else
            a->target = attempt_first_long(a) ? 4 : e->more_by_cmd ? 3 : 2;
        if (a->target > attempt_auto_max(a))
            a->target = attempt_auto_max(a);
        a->tune_streams = 1;
        attempt_fill(a);
        return;
    }
    if (a->period_at == 0 && a->target == 2 && a->link.rtt_ms == 0 &&
        attempt_long_link(a)) {
        /* A long link: a stream's window binds, as good as measured; the
         * second of a link's few seconds is worth more than a measure. */
        a->target = 4;
        attempt_fill(a);
        return;
    }
    counted = attempt_counted(a);
    if (a->period_at == 0) {
        /* Every stream is up: the rate until now is the one to beat. The
         * period to judge starts once the last ones filled their windows
         * (two round trips; none on a short link). */
        a->tune_rate = (double)(counted - a->tune_moved) * 1000.0 /
            (double)(now - a->tune_at + 1);
        a->period_at = now + 2 * a->link.rtt_ms;
        a->period_moved = UINT64_MAX;
        return;
    }
    if (a->period_moved == UINT64_MAX) {
        if (now < a->period_at)
            return;
        a->period_at = now;
        a->period_moved = counted;
        return;
    }
    if (now - a->period_at < ATTEMPT_TUNE_MS)
        return;
    before.streams = a->tune_streams;
    before.rate = a->tune_rate;
    cur.streams = a->active;
    cur.rate = (double)(counted - a->period_moved) * 1000.0 /
        (double)(now - a->period_at + 1);
    log_debug("streams: %u at %.1f MiB/s, before %u at %.1f MiB/s, a "
        "window per round trip %.1f MiB/s", a->active,
        cur.rate / 1048576.0, a->tune_streams, a->tune_rate / 1048576.0,
        width_per_stream(&a->link) / 1048576.0);
    more = width_more(&a->link, &before, &cur, attempt_auto_max(a));
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
    const int receiving = attempt_receives(a->env);
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
 * 1 when a push's further streams (one at least) have nothing waiting to
 * be sent: what is left to move is stream 0's, and the far side took all
 * they had, so it does not hang as a whole. A pull's client cannot tell
 * (the agent knows what it has for them).
 */
static int
attempt_only_stream0_left(const struct attempt *a)
{
    unsigned k, others = 0;

    if (attempt_receives(a->env))
        return 0;
    for (k = 1; k < a->next_index; k++) {
        const struct attempt_stream *st = a->s[k];

        if (st == NULL || st->state != ST_RUNNING || st->retired)
            continue;
        if (st->conn.tx_pending > 0)
            return 0;
        others++;
    }
    return others > 0;
}

/*
 * Stalls, judged by data moved, not by keepalives. A further stream that
 * moved nothing for the stall timeout, with data waiting (or one we
 * receive on), while the others moved data or had nothing to send, is
 * retired and replaced: the far side as a whole (a slow disk) did not
 * hold them all up, this link alone is stuck. When
 * nothing moves anywhere for twice that, the link is gone without a word
 * (or the far side hangs), and the attempt ends so that the run
 * reconnects. Stream 0 cannot be replaced: when nothing moved for the
 * stall timeout and the others are idle for want of work (a push's
 * further streams with nothing left to send), its silence is its link's,
 * and the attempt ends then: waiting twice as long would only wait for a
 * link the others already showed is not the far side's fault.
 */
void
attempt_watch(struct attempt *a, uint64_t now)
{
    const struct attempt_env *e = a->env;
    uint64_t limit = (uint64_t)e->stall_s * 1000, total = 0, m;
    unsigned k;
    int alone = 0;

    if (limit == 0)
        return;
    if (e->hold != NULL && atomic_load(e->hold)) {
        /* The wait is ours: the time from its end is what counts. */
        for (k = 0; k < a->next_index; k++)
            if (a->s[k] != NULL)
                a->s[k]->seen_ms = now;
        a->idle_since = now;
        return;
    }
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
            (st->conn.tx_pending == 0 && !attempt_receives(e)))
            continue;
        st->retired = 1;
        conn_abort(&st->conn, FERRY_ERR_TIMEOUT);
        /* A new stream takes its place (attempt_fill). */
        a->tuned = 0;
    }
    if (total != a->last_total) {
        a->last_total = total;
        a->idle_since = now;
    } else if (now - a->idle_since >= limit && a->s[0] != NULL &&
        a->s[0]->state == ST_RUNNING && (now - a->idle_since >= 2 * limit ||
        (alone = attempt_only_stream0_left(a)))) {
        /* The run's message (run.c) says twice the timeout unless one
         * is set here. Nothing has moved for the timeout, so no step is
         * under way to set one of its own. */
        if (alone)
            (void)xfer_fail(e->x, FERRY_ERR_TIMEOUT, "%s: stream 0 moved "
                "no data for %u s while the other streams had nothing "
                "left to send (stalled)", e->cli->remote.local ? "local" :
                e->cli->remote.host, e->stall_s);
        log_info("no data moved for %u s%s: reconnecting", alone ?
            e->stall_s : 2 * e->stall_s, alone ? " on stream 0, none "
            "waiting on the others" : "");
        for (k = 0; k < a->next_index; k++)
            if (a->s[k] != NULL && a->s[k]->state == ST_RUNNING)
                log_debug("stream %u: moved %llu, %llu ms ago, %zu waiting",
                    k, (unsigned long long)a->s[k]->seen,
                    (unsigned long long)(now - a->s[k]->seen_ms),
                    a->s[k]->conn.tx_pending);
        conn_abort(&a->s[0]->conn, FERRY_ERR_TIMEOUT);
    }
}
