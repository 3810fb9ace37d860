/*
 * buf.h: a growable byte buffer with a hard maximum size.
 *
 * A buf grows on demand up to the max given at init and fails with
 * FERRY_ERR_TOO_LARGE beyond it, so a hostile peer can never make us
 * allocate more than the limit we chose. Bytes are appended at the end and
 * consumed from the front (buf_consume), which makes a buf usable as a FIFO
 * for outgoing network data.
 *
 *     struct buf b;
 *     uint8_t *p;
 *     buf_init(&b, PROTO_MAX_FRAME);
 *     if ((r = buf_reserve(&b, n, &p)) != 0) goto out;
 *     memcpy(p, data, n);        // buf_reserve already counted the n bytes
 *     ...
 *     buf_cleanup(&b);
 */
#ifndef FERRY_COMMON_BUF_H
#define FERRY_COMMON_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct buf {
    uint8_t *data;  /* read-only: start of storage */
    size_t off;     /* read-only: consumed bytes at the front */
    size_t len;     /* read-only: end of valid bytes (from data) */
    size_t cap;     /* private */
    size_t max;     /* private: hard limit on len - off */
};

/* Prepares an empty buffer that may hold at most max bytes. Cannot fail. */
void buf_init(struct buf *b, size_t max);
/* Frees the storage; the buf may be reused after buf_init. */
void buf_cleanup(struct buf *b);
/* Drops all bytes, keeps the storage. */
void buf_reset(struct buf *b);

/* Bytes held and their start. The pointer is valid until the next call that
 * changes the buffer; it is NULL for a buf that never held storage (NULL + 0
 * would be undefined behaviour, which clang's UBSan reports). */
static inline size_t buf_used(const struct buf *b) { return b->len - b->off; }
static inline const uint8_t *buf_ptr(const struct buf *b)
{
    return b->data != NULL ? b->data + b->off : NULL;
}

/* Appends n bytes, returning a pointer to fill them in *p. Fails with
 * TOO_LARGE past the max or NOMEM; then the buffer is unchanged. */
int buf_reserve(struct buf *b, size_t n, uint8_t **p) FERRY_WUR;
/* Gives back the last n reserved bytes (n <= buf_used). */
void buf_unreserve(struct buf *b, size_t n);
int buf_put(struct buf *b, const void *data, size_t n) FERRY_WUR;
int buf_put_u8(struct buf *b, uint8_t v) FERRY_WUR;
int buf_put_u16(struct buf *b, uint16_t v) FERRY_WUR;
int buf_put_u32(struct buf *b, uint32_t v) FERRY_WUR;
int buf_put_u64(struct buf *b, uint64_t v) FERRY_WUR;
/* A u16 (str16) or u32 (str32) big-endian length, then the bytes. */
int buf_put_str16(struct buf *b, const void *s, size_t n) FERRY_WUR;
int buf_put_str32(struct buf *b, const void *s, size_t n) FERRY_WUR;

/* Removes n bytes from the front (n <= buf_used). */
void buf_consume(struct buf *b, size_t n);

/* Writes v big-endian at p; used to patch a length after the fact. */
void buf_set_u32(uint8_t *p, uint32_t v);

#endif
