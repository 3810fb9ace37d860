/*
 * rendezvous.h: how the agents of one transfer find each other.
 *
 * Each stream of a transfer reaches the box as an agent process of its
 * own (its own SSH connection and channel). The agent that was OPENed
 * listens on an abstract Unix socket named after the user and the
 * transfer id; an agent that gets a JOIN hands its connection over: its
 * stdin and stdout (SCM_RIGHTS) and the bytes it read from them, then
 * waits until the adopting agent is done with them. One process then owns
 * the destination (or the source tree) and every stream, so the streams
 * share state in memory and one lock guards the destination.
 *
 * The name is not guessable (the transfer id is 128 random bits sent
 * inside the protocol, never on a command line), and both ends check with
 * SO_PEERCRED that the other is the same user.
 *
 * A new attempt of a transfer (the client reconnected) may find the agent
 * of the old attempt still there, holding the destination, because its
 * connection died without a word: it asks that agent to stop (a
 * takeover), which ends the old agent like SIGTERM would (journals
 * synced), and then listens itself.
 */
#ifndef FERRY_SERVER_RENDEZVOUS_H
#define FERRY_SERVER_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../common/err.h"

/* Most bytes an agent forwards with a connection (HELLO and JOIN). */
#define RENDEZVOUS_MAX_BYTES 4096
/* How long a new agent waits for an old one to let go. */
#define RENDEZVOUS_TAKEOVER_MS 10000

/* A connection handed over: take ownership of rfd and wfd (they may be
 * equal), and call rendezvous_release(token) once done with them. */
typedef void rendezvous_adopt_fn(void *ctx, int rfd, int wfd,
    const uint8_t *bytes, size_t n, int token);
/* Another agent of the same transfer asks this one to stop. */
typedef void rendezvous_stop_fn(void *ctx);

struct rendezvous {
    /* private */
    int fd;
    uv_poll_t poll;
    int polling;
    rendezvous_adopt_fn *adopt;
    rendezvous_stop_fn *stop;
    void *ctx;
};

/*
 * Takes the name of transfer id. If an agent of the same transfer holds
 * it, asks that agent to stop and waits for the name to be free (up to
 * RENDEZVOUS_TAKEOVER_MS). Blocking; plain syscalls, so any thread may
 * call it. Then rendezvous_start, on the loop's thread, accepts.
 */
int rendezvous_bind(struct rendezvous *rv, const uint8_t id[16]) FERRY_WUR;
int rendezvous_start(struct rendezvous *rv, uv_loop_t *loop,
    rendezvous_adopt_fn *adopt, rendezvous_stop_fn *stop, void *ctx)
    FERRY_WUR;
void rendezvous_close(struct rendezvous *rv);
/* The adopting agent is done with a handed-over connection. */
void rendezvous_release(int token);

/*
 * Hands rfd and wfd with the bytes already read to the agent running
 * transfer id, then waits until it is done with them. Returns 0, or
 * -ECONNREFUSED / -ENOENT when no agent of that transfer is there.
 */
int rendezvous_handover(const uint8_t id[16], int rfd, int wfd,
    const void *bytes, size_t n) FERRY_WUR;

#endif
