/*
 * rvmsg.h: the messages agents of one box send each other at the
 * rendezvous (server/rendezvous.h), one SOCK_SEQPACKET datagram each:
 *
 *     u8  kind          RVMSG_JOIN or RVMSG_STOP
 *     16  transfer_id
 *     32  transfer_key  the transfer's secret, as OPEN and JOIN carry it
 *     str16 scope       the sending agent's confinement (1..RVMSG_MAX_SCOPE
 *                       bytes, no NUL): "any", or "rw:", "ro:" or "wo:"
 *                       followed by its canonical --restrict root
 *     str16 bytes       JOIN: what the agent read of its connection (its
 *                       HELLO and JOIN frames, 1..RVMSG_MAX_BYTES);
 *                       STOP: empty
 *
 * A JOIN carries two file descriptors (SCM_RIGHTS) beside it: the
 * connection handed over. The sender is another process of the same
 * user, but one that may run on behalf of a key restricted to less than
 * the listener's (a forced command): its datagram is decoded as
 * hostile input like any frame.
 */
#ifndef FERRY_PROTO_RVMSG_H
#define FERRY_PROTO_RVMSG_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "limits.h"

#define RVMSG_JOIN 'J'
#define RVMSG_STOP 'T'
/* "rw:" and a root of at most PROTO_MAX_PATH bytes. */
#define RVMSG_MAX_SCOPE (PROTO_MAX_PATH + 3u)
/* What an agent forwards with a connection (its HELLO and JOIN). */
#define RVMSG_MAX_BYTES 4096u
/* The largest datagram. */
#define RVMSG_MAX (1u + PROTO_TRANSFER_ID_LEN + PROTO_TRANSFER_KEY_LEN + \
    2u + RVMSG_MAX_SCOPE + 2u + RVMSG_MAX_BYTES)

struct rvmsg {
    uint8_t kind;
    uint8_t transfer_id[PROTO_TRANSFER_ID_LEN];
    uint8_t transfer_key[PROTO_TRANSFER_KEY_LEN];
    const char *scope;     /* borrowed; not NUL-terminated */
    size_t scope_len;
    const uint8_t *bytes;  /* borrowed */
    size_t nbytes;
};

/* Appends one datagram to b. FERRY_ERR_USAGE for fields out of range. */
int rvmsg_encode(struct buf *b, const struct rvmsg *m) FERRY_WUR;
/* Decodes one whole datagram; borrowed fields point into p. TOO_LARGE
 * for a length over its limit, FORMAT for an unknown kind, an empty or
 * NUL-holding scope, a JOIN without bytes or a STOP with some. */
int rvmsg_decode(const uint8_t *p, size_t n, struct rvmsg *m) FERRY_WUR;

#endif
