/*
 * conn.h: one protocol connection driven by a libuv loop.
 *
 * A conn moves bytes between a pair of libuv streams (a pipe to a child
 * agent, a socketpair to an SSH pump thread, or the agent's stdin/stdout)
 * and a role: the sender or receiver state machine. The role never touches
 * a socket. Its step function runs in libuv's thread pool with a batch of
 * whole frames and returns the frames to send, so disk reads, hashing and
 * fsync overlap with the network without the role knowing about either:
 *
 *     loop thread:  read -> frames -> [step in worker] -> uv_write
 *
 * Steps of one conn never run concurrently, so role state needs no lock.
 * The conns of one transfer (its streams) form a group, and steps of one
 * group never run concurrently either, so what the streams share (the
 * plan, the destination) needs no lock.
 * Back-pressure: reading stops while CONN_INBOX_HIGH bytes of frames wait
 * (the streams of a group share that, see conn_inbox_high), and a role
 * that has more to say is only stepped again while fewer than
 * CONN_TX_HIGH bytes wait to be written.
 */
#ifndef FERRY_ENGINE_CONN_H
#define FERRY_ENGINE_CONN_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../common/buf.h"
#include "ratelimit.h"
#include "waker.h"

#define CONN_INBOX_HIGH (16u << 20)
/* The least share of it a stream of a group gets: more than a frame's
 * most, so that a stream that stopped reading holds a whole frame to
 * step on. */
#define CONN_INBOX_MIN (8u << 20)
#define CONN_TX_HIGH (4u << 20)
/* Most a step should append to out (a sender: or read from its files)
 * before it returns with more = 1. */
#define CONN_STEP_BUDGET (1u << 20)
#define CONN_SPARES 4

struct conn_step {
    const uint8_t *in;  /* whole frames, each header + payload */
    size_t in_len;
    int eof;            /* the peer closed: no input will follow */
    struct buf *out;    /* frames to send */
    int more;           /* out: step again even without input */
    int done;           /* out: close after sending out */
    /* out: step again after this long if idle. Only where time itself
     * is the reason (a linger's deadline); a role that waits for a
     * thread says wait_wake instead. */
    unsigned wake_ms;
    /* out: step again once the group is woken (waker.h): a background
     * thread is doing what this role waits for, and wakes when done
     * (only a conn of a group whose wake was started is woken). */
    int wait_wake;
    int poke;           /* out: the other conns of the group may have
                           something to do now (work was queued) */
};

/*
 * The next frame of a step's input, from *off (0 at first) on: 1 with the
 * frame in *f and *off past it, 0 when the input is used up, or the
 * error of a malformed frame. The one loop over a step's frames:
 *
 *     while ((r = conn_step_frame(st, &off, &f)) > 0)
 *         ...
 *     if (r < 0)
 *         return r;
 */
struct frame;
int conn_step_frame(const struct conn_step *st, size_t *off,
    struct frame *f) FERRY_WUR;

/* Returns 0 or a fatal error (the conn then sends what is in out and
 * closes). Runs in a worker thread. */
typedef int conn_step_fn(void *role, struct conn_step *st);

struct conn;

/* The conns of one transfer. Zero it before use; conns join at start and
 * leave when they close. Loop thread only. */
#define CONN_GROUP_MAX 32

struct conn_group {
    struct conn *members[CONN_GROUP_MAX];  /* private */
    int n;                                 /* read-only */
    int busy;                              /* private: a step runs */
    int rr;                                /* private: next to run */
    /* public: set before the conns start: the rate every conn of the
     * group shares (--bwlimit), or NULL */
    struct ratelimit *limit;
    /* private: see conn_group_wake_start */
    uv_async_t async;
    struct waker *waker;
    unsigned wakes;      /* how many times it was woken */
};

/* Called once on the loop thread after the conn has closed; err is 0 on a
 * clean finish. */
typedef void conn_close_fn(struct conn *c, int err);

struct conn {
    void *data;               /* public: for the owner */
    /* public: set before conn_start_fds to join a group (NULL: alone) */
    struct conn_group *group;
    /* public: set before conn_start_fds: bytes that were read from the
     * transport before the conn took it over (copied at start) */
    const uint8_t *preload;
    size_t preload_len;
    uint64_t bytes_in;        /* read-only: bytes read from the transport */
    uint64_t bytes_out;       /* read-only: bytes written to it */
    int err;                  /* read-only: first fatal error */
    /* private */
    uv_loop_t *loop;
    uv_stream_t *rs, *ws;
    uv_pipe_t pipes[2];
    int npipes, handles_open;
    struct buf inbox, job_in, job_out;
    uv_work_t work;
    uv_timer_t wake;
    uv_shutdown_t shutdown_req;
    int job_running, job_result, job_more, job_done, job_poke, job_wait;
    unsigned job_wake;
    int wait_wake;            /* stepped again when the group is woken */
    unsigned wakes_seen;      /* the group's wakes when its step began */
    int reading, eof, eof_delivered, wake_due, finishing, closing, released;
    int read_paused;          /* reading stopped by the group's limit */
    int write_dead;           /* the transport took no more writes */
    size_t tx_pending;
    conn_step_fn *step;
    void *role;
    conn_close_fn *on_close;
    uint8_t *spare[CONN_SPARES];  /* buffers of finished writes, reused */
    size_t spare_cap[CONN_SPARES];
    int nspare;
};

/*
 * Starts a conn over the fds rfd (read) and wfd (write), which may be the
 * same socket. The conn takes ownership of the fds. Steps begin at once
 * with an empty input, so a role can speak first. Returns an error only
 * if nothing was set up (or the group is full); any later failure,
 * including a bad fd, is reported through on_close. c->data and c->group
 * are kept; the rest of *c is set up here.
 */
int conn_start_fds(struct conn *c, uv_loop_t *loop, int rfd, int wfd,
    conn_step_fn *step, void *role, conn_close_fn *on_close) FERRY_WUR;

/* Steps every conn of the group once, even without input (work for them
 * appeared outside a step: a stream was lost). Loop thread. */
void conn_group_poke(struct conn_group *g);

/*
 * Points w (a transfer's, struct xfer.wake) at the group while the
 * loop runs: a background thread's waker_wake then steps every conn of
 * the group whose last step said wait_wake, at once. The handle does
 * not keep the loop alive. conn_group_wake_stop points w away again and
 * closes the handle: call it before the group's storage goes, and run
 * the loop once more for the close. Loop thread. Returns 0 or an error
 * (the roles then are never woken: do not run them).
 */
int conn_group_wake_start(struct conn_group *g, uv_loop_t *loop,
    struct waker *w) FERRY_WUR;
void conn_group_wake_stop(struct conn_group *g);

/* Closes the conn now (e.g. on SIGINT); on_close follows with err. */
void conn_abort(struct conn *c, int err);

#endif
