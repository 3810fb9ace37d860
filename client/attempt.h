/*
 * attempt.h: one attempt of a transfer, from the first connection opened
 * to the last one closed.
 *
 * An attempt runs over streams: stream 0 OPENs the transfer and carries
 * its conversation; further streams JOIN it and carry data. Each stream
 * is its own transport (with libssh2: its own TCP connection, SSH session
 * and pump thread, so encryption runs on as many cores as there are), conn,
 * session and role, and the conns form one group (engine/conn.h).
 *
 * How many streams: `-j N` opens N; by default width.h decides. On a
 * long link, as many as the round trip and each stream's window say
 * (width_first), opened at once: over libssh2 their SSH connections are
 * started beside stream 0's login (ssh.h, ssh_early_start) or while it
 * starts the transfer, and JOIN once it runs; then twice as many while
 * each stream still moves its window per round trip. On a short link a
 * second one as soon as data moves, then, every ATTEMPT_TUNE_MS with
 * all of them up, more while the rate still grows (attempt_grow.c says
 * why), up to ATTEMPT_AUTO_MAX and while enough is left to send. Up to
 * ATTEMPT_OPENING_MAX streams are opened at once (sshd's MaxStartups),
 * on threads of their own or as ssh children, and they never prompt (ssh.h
 * keeps what the first connection unlocked; the ssh program runs them
 * with BatchMode).
 *
 * Stalls are judged by progress, not keepalives: a further stream that
 * moves nothing for the stall timeout while the others move data (and it
 * has data waiting, or we receive on it) is retired, its work goes to the
 * others, and a new one takes its place; when nothing moves on any stream
 * for twice that, the attempt ends with FERRY_ERR_TIMEOUT, and the run
 * reconnects.
 */
#ifndef FERRY_CLIENT_ATTEMPT_H
#define FERRY_CLIENT_ATTEMPT_H

#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "../engine/conn.h"
#include "../engine/session.h"
#include "../engine/side.h"
#include "../engine/xfer.h"
#include "../proto/limits.h"
#include "cli.h"
#include "output.h"
#include "remote.h"
#include "ssh.h"
#include "sshcfg.h"
#include "transport.h"
#include "width.h"

#define ATTEMPT_TUNE_MS 1000
#define ATTEMPT_AUTO_MAX 8
/* More streams only pay while this much is left to move. */
#define ATTEMPT_AUTO_MIN_LEFT (64ull << 20)
/* On a long link, where one stream's window binds and a login costs
 * round trips more than CPU, from this much left to cross: through the
 * bench's emulated 50 ms link a second stream gained from 25 MiB, four
 * from about 32 MiB (docs/BENCHMARKS.md, "Streams"). */
#define ATTEMPT_LONG_MIN_LEFT (32ull << 20)
#define ATTEMPT_TICK_MS 100
/* ... while streams wait for the first answers to open ahead, at most
 * ATTEMPT_AHEAD_WAIT_MS from the attempt's start. */
#define ATTEMPT_AHEAD_TICK_MS 10
#define ATTEMPT_AHEAD_WAIT_MS 2000
/* A link on which a further stream runs sooner than this is short: more
 * streams than cores would not pay there (attempt.c). */
#define ATTEMPT_SHORT_LINK_MS 300
/* A first SSH handshake (three round trips or more, with login more)
 * that took this long means a long link, before any stream says so. */
#define ATTEMPT_LONG_CONNECT_MS SSH_LONG_HANDSHAKE_MS
/* Streams being opened at once, each on a thread of its own
 * (stream_off_loop): stream 0 and these stay under OpenSSH's default
 * MaxStartups (10 connections not yet logged in). */
#define ATTEMPT_OPENING_MAX SSH_EARLY_MAX


struct ssh_conn;

/* What every attempt of a run borrows. */
struct attempt_env {
    const struct cli *cli;
    /* While nonzero, nothing counts as stalled: stream 0's session waits
     * on the space check's comparison (space.h), not on its link. */
    const atomic_int *hold;
    uv_loop_t *loop;
    struct xfer *x;
    struct output *out;
    struct session_open so;        /* stream 0's; JOINs copy it */
    struct side *side;             /* a push's or pull's end: its roles */
    conn_step_fn *role_step;       /* status and clean: stream 0's role */
    void *role;
    struct remote_agent *agent;
    const struct sshcfg *cfg;      /* for further libssh2 connections */
    int use_cmd;                   /* the ssh program is the transport */
    int more_by_cmd;               /* ... of the streams after the first */
    int same_host;                 /* the far end shares our cores */
    unsigned streams;              /* -j; 0: choose */
    struct width_link link;        /* a long link's round trip and a
                                      stream's window; rtt 0: short */
    uint64_t connect_ms;           /* the first SSH login took this */
    uint64_t auth_ms;              /* ... its authentication this */
    struct ssh_early *early;       /* connections started during it */
    unsigned stall_s;              /* --stall-timeout; 0: none */
    struct ratelimit *limit;       /* --bwlimit, shared by the streams */
};

struct attempt_stream;

struct attempt {
    /* read-only after attempt_run */
    int err;             /* stream 0's: 0 for a clean finish */
    int exit_status;     /* of stream 0's remote command, -1 if unknown */
    int tp_code;         /* stream 0's transport error */
    uint64_t s0_run_ms;  /* from the start until stream 0 ran */
    char tp_err[256];
    uint64_t wire_out, wire_in;  /* pipes, and the further streams' SSH */
    unsigned max_active;         /* most streams at once */
    double moving_s;             /* time with a connection up */
    /* private */
    const struct attempt_env *env;
    struct attempt_stream *s[PROTO_MAX_STREAMS];
    unsigned next_index, active, opening, parked;
    unsigned target;     /* streams wanted now */
    int tuned;           /* an open failed: no more this attempt */
    int grown;           /* the default's growth has stopped */
    unsigned ahead_pending;  /* streams to open once answers say so */
    uint64_t full_tick;      /* the last tick that did all of its work */
    struct conn_group group;
    uv_timer_t tick;
    uv_async_t off_loop;     /* a stream's work off the loop is done */
    unsigned off_running;    /* ... threads of it running */
    uint64_t t0;
    uint64_t link_ms;    /* a further stream's time to run: > 0 once known */
    struct width_link link;  /* env's, measured again on stream 0 */
    uint64_t tune_at, tune_moved;      /* before the last streams came */
    struct xfer_mark share_mark;       /* the data after it says how much
                                          of what is left crosses the wire */
    uint64_t period_at, period_moved;  /* since they are all up */
    double tune_rate;                  /* the rate to beat */
    unsigned tune_streams;             /* ... with this many streams */
    uint64_t idle_since, last_total;
    int ending, interrupted;
};

/* What the run's first SSH login says of the link (ssh_login_link): 1
 * long, 0 short, -1 nothing (local:, or the ssh program carries every
 * stream, so no login of ours was timed). */
int attempt_env_link(const struct attempt_env *e);

/*
 * How many further streams to open ahead, before stream 0 runs: -j's N -
 * 1 on any link; by default, on a long link (link's rtt_ms set) with
 * ATTEMPT_LONG_MIN_LEFT or more to send (bytes; UINT64_MAX: a pull, not
 * known yet), width_first's less stream 0; else none. At most
 * ATTEMPT_OPENING_MAX.
 */
unsigned attempt_ahead(const struct cli *cli, const struct width_link *link,
    uint64_t bytes);

/* What a transfer's first login says of its link (rtt_ms 0: short): the
 * round trip, and the window a stream gets, the peer's (a guess of
 * OpenSSH's until a channel says) when we send, ours when we receive. */
struct width_link attempt_link_of(const struct ssh_conn *c, int long_link,
    int sending);

/*
 * Runs an attempt on env->loop until every stream has closed. ssh0 is
 * stream 0's SSH session when libssh2 is the transport (the run keeps it:
 * it may upload an agent over it). Returns 0 (the outcome is in a), or an
 * error with a message if stream 0 could not even start.
 */
int attempt_run(struct attempt *a, const struct attempt_env *env,
    struct ssh_conn *ssh0, char *msg, size_t msglen) FERRY_WUR;

/* Stops the attempt now (a signal): every stream aborts with err. */
void attempt_abort(struct attempt *a, int err);

/* Stream 0's session (for what the agent said), valid until
 * attempt_cleanup. */
const struct session *attempt_session(const struct attempt *a);

/* Frees what attempt_run made. */
void attempt_cleanup(struct attempt *a);

#endif
