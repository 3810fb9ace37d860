/*
 * session.h: the opening of a connection (HELLO, then OPEN or JOIN) and
 * the hand-off to the sender or receiver role.
 *
 *     client                         agent
 *     HELLO, OPEN          ->                    (stream 0)
 *                          <-        HELLO, OPEN_OK (or ERROR)
 *     HELLO, JOIN          ->                    (streams 1..)
 *                          <-        HELLO, JOIN_OK (or ERROR)
 *     ... role frames (PLAN/READY/ENTRY/...) in both directions ...
 *
 * The client speaks first and does not wait between HELLO and OPEN, so a
 * transfer starts after one round trip. A role's fatal error is sent to
 * the peer as ERROR with the role's message before the connection closes.
 *
 * On the agent, what an OPEN may do is not decided here: the program
 * hands the session a policy (server/policy.c) that turns each path the
 * client named into a local path, or refuses it.
 */
#ifndef FERRY_ENGINE_SESSION_H
#define FERRY_ENGINE_SESSION_H

#include <stdint.h>

#include "conn.h"
#include "dest.h"
#include "filter.h"
#include "incoming.h"
#include "plan.h"
#include "xfer.h"

struct session;
struct side;

/* Names one glob in a pull's source may match. */
#define SESSION_GLOB_MAX 16384u

struct session_open {
    uint8_t op;            /* OPEN_PUSH, OPEN_PULL, OPEN_STATUS, OPEN_CLEAN */
    uint32_t flags;        /* OPEN_F_* */
    uint32_t block_size;
    uint8_t transfer_id[16];
    /* The transfer's secret (random, as the id): further streams and a
     * takeover by a new attempt must present it (server/rendezvous.h). */
    uint8_t transfer_key[32];
    const char *const *paths;  /* push: the destination; pull: sources */
    uint16_t npaths;
    uint16_t stream;       /* 0: OPEN; else JOIN the running transfer */
    /* A pull: the rules sent in FILTERS before OPEN (borrowed; NULL: no
     * FILTERS, so the agent reads no .ferryignore either). */
    const struct filter *filter;
    /* PUSH and PULL: called with the agent's SPACE (proto/msg_space.h)
     * before the role starts; an error stops the transfer before any
     * data moved. NULL: SPACE is read and ignored. */
    int (*space)(void *ctx, uint64_t avail, uint64_t size,
        uint64_t offered);
    void *space_ctx;
    /* PUSH: called (at most once) with the agent's BUSY, before SPACE:
     * another transfer holds the destination (holder: its lock file's
     * line, as the agent read it, unescaped), so the push waits for it.
     * NULL: BUSY is read and ignored. */
    void (*busy)(void *ctx, const char *holder);
    void *busy_ctx;
};

/* The client side: sends HELLO and OPEN (or JOIN), then runs role (a
 * sender for push, a receiver for pull; borrowed) once OPEN_OK (JOIN_OK)
 * arrives. */
struct session *session_client_new(const struct session_open *o,
    conn_step_fn *role_step, void *role, struct xfer *x);

/* What the agent's program decides for the session. */
struct keptsig_store;

struct session_policy {
    /*
     * Turns a path the client named for op into the local path to use
     * (a new string in *out), or refuses it: an error code with a
     * message for the client in msg. Called on the loop's worker thread.
     */
    int (*resolve)(void *ctx, uint8_t op, const char *path, size_t len,
        char **out, char *msg, size_t msglen);
    /* After a transfer was opened (transfer_id known): the program may
     * start accepting further streams. A failure refuses the OPEN. */
    int (*opened)(void *ctx, struct session *s);
    void *ctx;
    int restricted;   /* say so in HELLO (PROTO_CAP_RESTRICTED) */
    /* Where a push's receiver keeps signatures (keptsig.h); NULL: not. */
    struct keptsig_store *kept;
};

/* The agent side: answers HELLO, and on OPEN makes the role itself
 * (the policy is borrowed). */
struct session *session_agent_new(struct xfer *x,
    const struct session_policy *pol);

/*
 * The agent side of a further stream handed over by another process:
 * answers HELLO, accepts a JOIN of first's transfer (same transfer id and
 * key, a stream number not in use) and runs a role for that stream over what
 * first shares. first must outlive it.
 */
struct session *session_agent_join(struct session *first);

/* Frees the session and any role it made. */
void session_free(struct session *s);

/* conn_step_fn for both sides. */
int session_step(void *sess, struct conn_step *st) FERRY_WUR;

/* The peer's software string from its HELLO ("" before it arrived). */
const char *session_peer_software(const struct session *s);
/* The capability bits the peer's HELLO set (0 before it arrived). */
uint64_t session_peer_caps(const struct session *s);
/* The transfer id and key of an opened transfer (agent side, after
 * OPEN): PROTO_TRANSFER_ID_LEN and PROTO_TRANSFER_KEY_LEN bytes. */
const uint8_t *session_transfer_id(const struct session *s);
const uint8_t *session_transfer_key(const struct session *s);
/* 1 once the handshake is over and the role runs. */
int session_running(const struct session *s);
/* The agent's: the end of the transfer whose role this session runs
 * (side.h), or NULL (no transfer, or its JOIN was not taken). */
struct side *session_side(const struct session *s);
/* The stream number it runs (0 until a JOIN was taken). */
unsigned session_stream(const struct session *s);

#endif
