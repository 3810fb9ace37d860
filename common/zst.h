/*
 * zst.h: block compression (the only user of zstd).
 *
 * Blocks are compressed one at a time with a context the caller keeps, so
 * each block stands alone on the wire and can be checked, written and
 * resumed on its own.
 */
#ifndef FERRY_COMMON_ZST_H
#define FERRY_COMMON_ZST_H

#include <stddef.h>

#include "err.h"

/* Fast enough to keep up with a network link on one core. */
#define ZST_LEVEL 1

struct zst;

/* Returns NULL on allocation failure. */
struct zst *zst_new(void);
void zst_free(struct zst *z);

/*
 * Compresses n bytes of src into dst (cap bytes). Returns 0 and the size in
 * *out, or FERRY_ERR_TOO_LARGE when it does not fit in cap (the data does
 * not compress: send it raw).
 */
int zst_compress(struct zst *z, void *dst, size_t cap, const void *src,
    size_t n, size_t *out) FERRY_WUR;

/*
 * Decompresses src (n bytes) into dst, which must come out exactly raw
 * bytes long. Returns 0, or FERRY_ERR_FORMAT for anything else (corrupt
 * input, wrong size): the input is from the other side.
 */
int zst_decompress(struct zst *z, void *dst, size_t raw, const void *src,
    size_t n) FERRY_WUR;

#endif
