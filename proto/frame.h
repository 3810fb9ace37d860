/*
 * frame.h: the frame layer. Every message travels as
 *
 *     u32 payload length (big-endian) | u8 type | payload
 *
 * and the payload length is at most PROTO_MAX_FRAME.
 */
#ifndef FERRY_PROTO_FRAME_H
#define FERRY_PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"

struct frame {
    uint8_t type;
    const uint8_t *payload;  /* borrowed from the input */
    size_t len;
};

/*
 * Looks for one whole frame at the start of (p, len). Returns 0 and fills
 * *f and *used (header plus payload) when one is there, FERRY_ERR_SHORT when
 * more bytes are needed, FERRY_ERR_TOO_LARGE when the announced length is
 * over PROTO_MAX_FRAME (the stream is then unusable).
 */
int frame_parse(const uint8_t *p, size_t len, struct frame *f,
    size_t *used) FERRY_WUR;

/*
 * Begins a frame of the given type in b and returns the position of its
 * header in *mark; the caller appends the payload and calls frame_finish.
 * Nothing may be consumed from b in between.
 */
int frame_begin(struct buf *b, uint8_t type, size_t *mark) FERRY_WUR;
/* Patches the length of the frame begun at mark. Fails with TOO_LARGE if
 * the payload exceeds PROTO_MAX_FRAME, removing the unfinished frame. */
int frame_finish(struct buf *b, size_t mark) FERRY_WUR;

#endif
