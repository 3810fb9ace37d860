/*
 * rendezvous.h: how the agents of one transfer find each other.
 *
 * Each stream of a transfer reaches the box as an agent process of its
 * own (its own SSH connection and channel). The agent that was OPENed
 * listens on an abstract Unix socket; an agent that gets a JOIN hands its
 * connection over: its stdin and stdout (SCM_RIGHTS) and the bytes it
 * read from them, then waits until the adopting agent is done with them.
 * One process then owns the destination (or the source tree) and every
 * stream, so the streams share state in memory and one lock guards the
 * destination.
 *
 * What may meet there is decided by a ticket: the transfer id, the
 * transfer's secret key (32 random bytes the client sends in OPEN and
 * JOIN, never on a command line) and the agent's scope (policy_scope:
 * "any", or its --restrict root and mode). The socket's name is a hash
 * of the ticket and the user id, so /proc/net/unix, which every local
 * user can read, shows neither the id nor the key, and an agent whose
 * ticket differs in any part (a guessed key, a restricted key's agent
 * joining an unrestricted transfer, another root or mode) finds nothing
 * to join. The listener checks the whole ticket again on every datagram
 * (rendezvous_admit) and the peer's user with SO_PEERCRED, both ways.
 *
 * A new attempt of a transfer (the same client reconnected, with the
 * same ticket) may find the agent of the old attempt still there,
 * holding the destination, because its connection died without a word:
 * it asks that agent to stop (a takeover), which ends the old agent like
 * SIGTERM would (journals synced), and then listens itself. Only a
 * holder of the same ticket can ask that: an OPEN that reuses a running
 * transfer's id with another key binds another name and stops nothing.
 */
#ifndef FERRY_SERVER_RENDEZVOUS_H
#define FERRY_SERVER_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../common/err.h"
#include "../proto/rvmsg.h"

/* How long a new agent waits for an old one to let go. */
#define RENDEZVOUS_TAKEOVER_MS 10000

/* What names one transfer at the rendezvous. */
struct rendezvous_ticket {
    uint8_t id[PROTO_TRANSFER_ID_LEN];
    uint8_t key[PROTO_TRANSFER_KEY_LEN];
    char scope[RVMSG_MAX_SCOPE + 1];  /* policy_scope's string */
};

/* A connection handed over: take ownership of rfd and wfd (they may be
 * equal), and call rendezvous_release(token) once done with them. */
typedef void rendezvous_adopt_fn(void *ctx, int rfd, int wfd,
    const uint8_t *bytes, size_t n, int token);
/* Another agent of the same transfer asks this one to stop. It waits
 * until token is closed: rendezvous_release(token) once stopped, or let
 * the process's exit close it. */
typedef void rendezvous_stop_fn(void *ctx, int token);

struct rendezvous {
    /* private */
    int fd;
    uv_poll_t poll;
    int polling;
    struct rendezvous_ticket ticket;
    rendezvous_adopt_fn *adopt;
    rendezvous_stop_fn *stop;
    void *ctx;
};

/*
 * Takes the name of ticket t (copied). If an agent of the same ticket
 * holds it, asks that agent to stop and waits for the name to be free
 * (up to RENDEZVOUS_TAKEOVER_MS). Blocking; plain syscalls, so any
 * thread may call it. Then rendezvous_start, on the loop's thread,
 * accepts.
 */
int rendezvous_bind(struct rendezvous *rv,
    const struct rendezvous_ticket *t) FERRY_WUR;
int rendezvous_start(struct rendezvous *rv, uv_loop_t *loop,
    rendezvous_adopt_fn *adopt, rendezvous_stop_fn *stop, void *ctx)
    FERRY_WUR;
/* Stops listening; the ticket's key is wiped. */
void rendezvous_close(struct rendezvous *rv);
/* The adopting agent is done with a handed-over connection. */
void rendezvous_release(int token);

/*
 * Hands rfd and wfd with the bytes already read (at most
 * RVMSG_MAX_BYTES) to the agent running ticket t, then waits until it is
 * done with them. Returns 0, -ECONNREFUSED / -ENOENT when no agent of
 * that ticket is there, or -EPERM when the listener refused it.
 */
int rendezvous_handover(const struct rendezvous_ticket *t, int rfd, int wfd,
    const void *bytes, size_t n) FERRY_WUR;

/* 0 if datagram m may act on the transfer of ticket t: the same id,
 * key (compared in constant time) and scope; else FERRY_ERR_PROTOCOL.
 * Exported for the tests; otherwise used only in its file. */
int rendezvous_admit(const struct rendezvous_ticket *t,
    const struct rvmsg *m) FERRY_WUR;

/* The socket name of ticket t for this user, printable (the abstract
 * name without its leading NUL), for tests: RENDEZVOUS_NAME_LEN bytes
 * and a NUL into out. */
#define RENDEZVOUS_NAME_LEN 46
void rendezvous_name(const struct rendezvous_ticket *t,
    char out[RENDEZVOUS_NAME_LEN + 1]);

#endif
