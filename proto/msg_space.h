/*
 * msg_space.h: SPACE, what the space check before a transfer needs,
 * sent by the agent right after OPEN_OK to a client whose HELLO set
 * PROTO_CAP_SPACE (bit 18), for PUSH and PULL:
 *
 *     u64 avail    PUSH: bytes free for the agent's user on the file
 *                  system of the destination (or of its nearest existing
 *                  parent); PULL: 0
 *     u64 size     PUSH: that file system's size; PULL: 0
 *     u64 offered  PULL: bytes of the files the pull offers; PUSH: 0
 */
#ifndef FERRY_PROTO_MSG_SPACE_H
#define FERRY_PROTO_MSG_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "msg.h"

struct msg_space {
    uint64_t avail;
    uint64_t size;
    uint64_t offered;
};

int msg_space_encode(struct buf *b, const struct msg_space *m) FERRY_WUR;
/* FERRY_ERR_FORMAT when avail is over size. */
int msg_space_decode(const uint8_t *p, size_t n, struct msg_space *m)
    FERRY_WUR;

#endif
