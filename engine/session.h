/*
 * session.h: the opening of a connection (HELLO, OPEN) and the hand-off to
 * the sender or receiver role.
 *
 *     client                         agent
 *     HELLO, OPEN          ->
 *                          <-        HELLO, OPEN_OK (or ERROR)
 *     ... role frames (PLAN/READY/ENTRY/...) in both directions ...
 *
 * The client speaks first and does not wait between HELLO and OPEN, so a
 * transfer starts after one round trip. A role's fatal error is sent to the
 * peer as ERROR with the role's message before the connection closes.
 */
#ifndef FERRY_ENGINE_SESSION_H
#define FERRY_ENGINE_SESSION_H

#include <stdint.h>

#include "conn.h"
#include "xfer.h"

struct session;

struct session_open {
    uint8_t op;            /* OPEN_PUSH or OPEN_PULL */
    uint32_t flags;        /* OPEN_F_* */
    uint32_t block_size;
    uint8_t transfer_id[16];
    const char *const *paths;  /* push: the destination; pull: sources */
    uint16_t npaths;
};

/* The client side: sends HELLO and OPEN, then runs role (a sender for
 * push, a receiver for pull; borrowed) once OPEN_OK arrives. */
struct session *session_client_new(const struct session_open *o,
    conn_step_fn *role_step, void *role, struct xfer *x);

/* The agent side: answers HELLO, and on OPEN makes the role itself. */
struct session *session_agent_new(struct xfer *x);

/* Frees the session and any role it made. */
void session_free(struct session *s);

/* conn_step_fn for both sides. */
int session_step(void *sess, struct conn_step *st) FERRY_WUR;

/* The peer's software string from its HELLO ("" before it arrived). */
const char *session_peer_software(const struct session *s);

#endif
