/*
 * attempt_int.h: what the two halves of an attempt share (private to
 * client/attempt*.c; the interface is attempt.h).
 *
 *   attempt.c       a stream's life: transport, conn, session, its end;
 *                   the attempt's run, tick and end
 *   attempt_grow.c  how many streams, opening them (ahead of stream 0 on
 *                   a long link), and the stall watch
 */
#ifndef FERRY_CLIENT_ATTEMPT_INT_H
#define FERRY_CLIENT_ATTEMPT_INT_H

#include "attempt.h"

#include <stdatomic.h>

/* ST_PARKED: its SSH connection is up before stream 0 runs; it JOINs
 * when stream 0 does (attempt_preopen). */
enum { ST_OPENING = 1, ST_PARKED, ST_RUNNING, ST_CLOSED, ST_DONE };

struct attempt_stream {
    struct attempt *a;
    unsigned index;
    int state;
    struct transport tp;
    int has_tp;
    struct ssh_conn *ssh;      /* a further stream's own session */
    struct conn conn;
    struct session *sess;
    uv_timer_t kill_timer;
    uv_work_t work;            /* opening, then finishing, off the loop */
    uv_thread_t off_thr;       /* ... on this thread (stream_off_loop) */
    void (*off_fn)(uv_work_t *);
    void (*off_done)(uv_work_t *, int);
    atomic_int off_state;      /* OFF_* */
    int err, exit_status, tp_code;
    char msg[256];
    uint64_t seen, seen_ms;    /* bytes moved, and when that last changed */
    uint64_t open_ms;          /* when its opening began */
    uint64_t ssh_ms;           /* how long its SSH connection took */
    int retired;
    int wait_exit;             /* closed; its child has yet to exit */
};

static inline uint64_t
stream_moved(const struct attempt_stream *st)
{
    /* Written means taken by the transport, not merely queued. */
    return st->conn.bytes_in + st->conn.bytes_out - st->conn.tx_pending;
}

/* The attempt sends (a push) or receives (a pull): else it runs a role
 * of its own (status, clean), one stream. */
static inline int
attempt_sends(const struct attempt_env *e)
{
    return e->side != NULL && side_is_sender(e->side);
}

static inline int
attempt_receives(const struct attempt_env *e)
{
    return e->side != NULL && !side_is_sender(e->side);
}

/* attempt.c */

enum { OFF_IDLE, OFF_RUNNING, OFF_FINISHED };

/*
 * Runs fn(&st->work) on a thread of its own, then done(&st->work, 0) on
 * the loop. Opening a stream and finishing one wait on the link (round
 * trips, a pump's end); in libuv's pool, four threads that the roles'
 * steps share, eight of them would hold those steps up for as long.
 * Returns 0, or an error (nothing was started).
 */
int stream_off_loop(struct attempt_stream *st, void (*fn)(uv_work_t *),
    void (*done)(uv_work_t *, int));

/* A new stream in the next slot (NULL past PROTO_MAX_STREAMS). */
struct attempt_stream *stream_new(struct attempt *a);
/* A stream's transport: a child, or a channel running the agent over an
 * SSH session that is open already (safe off the loop: no handle). */
int stream_transport(struct attempt_stream *st, char *msg, size_t msglen)
    FERRY_WUR;
/* A further stream's transport (unless it has one) and session, and its
 * event. */
int stream_start(struct attempt_stream *st) FERRY_WUR;
/* 1 when stream index runs over the ssh program (attempt_env). */
int stream_by_cmd(const struct attempt_env *e, unsigned index);
/* A further stream that cannot be, or is not needed: it goes. */
void stream_drop(struct attempt_stream *st);
/* The stream is over: its handles go, then the attempt may end. */
void stream_done(struct attempt_stream *st);
int stream0_running(const struct attempt *a);

/* attempt_grow.c */

void attempt_tune(struct attempt *a, uint64_t now);
void attempt_unpark(struct attempt *a, uint64_t now);
void attempt_preopen(struct attempt *a);
void attempt_ahead_answered(struct attempt *a, uint64_t now);
void attempt_measure_link(struct attempt *a, uint64_t now);
void attempt_watch(struct attempt *a, uint64_t now);

#endif
