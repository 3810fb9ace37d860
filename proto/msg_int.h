/*
 * msg_int.h: helpers shared by the message codecs (msg.c, msg_file.c).
 * Not for use outside proto/.
 */
#ifndef FERRY_PROTO_MSG_INT_H
#define FERRY_PROTO_MSG_INT_H

#include "../common/buf.h"
#include "../common/rd.h"
#include "msg.h"

/* Finishes the frame begun at mark when r is 0; otherwise removes the
 * partial frame and returns r. Every encoder ends with it. */
int msg_finish(struct buf *b, size_t mark, int r) FERRY_WUR;
/* A str16 of at most max bytes (FERRY_ERR_USAGE beyond: a caller's bug). */
int msg_put_str(struct buf *b, const struct msg_str *s, size_t max)
    FERRY_WUR;
int msg_put_hash(struct buf *b, const struct hash128 *h) FERRY_WUR;
int msg_get_str(struct rd *r, size_t max, struct msg_str *s) FERRY_WUR;
int msg_get_hash(struct rd *r, struct hash128 *h) FERRY_WUR;
int msg_get_i32(struct rd *r, int32_t *v) FERRY_WUR;
/* A power of two in [PROTO_MIN_BLOCK, PROTO_MAX_BLOCK]. */
int msg_block_size_valid(uint32_t bs);

#endif
