/*
 * rd.h: a bounded reader over untrusted bytes (after OpenSSH's sshbuf).
 *
 * A struct rd is a non-owning cursor over (p, len). It never allocates and
 * never writes to the bytes. Every call checks first and advances only on
 * success: on failure the cursor is unchanged and out-parameters are zeroed.
 * A NULL out-parameter skips the value.
 *
 * Length-prefixed fields are checked against the caller's limit before the
 * presence of the bytes, so FERRY_ERR_TOO_LARGE always means "hostile or
 * broken" and FERRY_ERR_SHORT means "not all there".
 */
#ifndef FERRY_COMMON_RD_H
#define FERRY_COMMON_RD_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct rd {
    const uint8_t *p;  /* read-only */
    size_t len;        /* read-only: bytes left */
};

void rd_init(struct rd *r, const void *p, size_t len);
int rd_u8(struct rd *r, uint8_t *v) FERRY_WUR;
int rd_u16(struct rd *r, uint16_t *v) FERRY_WUR;
int rd_u32(struct rd *r, uint32_t *v) FERRY_WUR;
int rd_u64(struct rd *r, uint64_t *v) FERRY_WUR;
/* Borrows n bytes; *ptr stays valid as long as the underlying bytes. */
int rd_bytes(struct rd *r, size_t n, const uint8_t **ptr) FERRY_WUR;
/* Copies n bytes into out. */
int rd_copy(struct rd *r, void *out, size_t n) FERRY_WUR;
/* A u16 / u32 length (at most max) then that many borrowed bytes. */
int rd_str16(struct rd *r, size_t max, const uint8_t **ptr,
    size_t *len) FERRY_WUR;
int rd_str32(struct rd *r, size_t max, const uint8_t **ptr,
    size_t *len) FERRY_WUR;
/* Fails with FERRY_ERR_TRAILING unless every byte was read. */
int rd_end(const struct rd *r) FERRY_WUR;

/* Reads a big-endian u32 from 4 bytes the caller has checked. */
uint32_t rd_peek_u32(const uint8_t *p);

#endif
