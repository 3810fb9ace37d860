/*
 * zst.h: compression (the only user of zstd).
 *
 * Blocks are compressed one at a time with a context the caller keeps, so each
 * block stands alone on the wire and can be checked, written and resumed on
 * its own. Volumes (engine/volume/volume.h) are one zstd frame each, made and
 * read as streams (zst_enc, zst_dec below).
 */
#ifndef FERRY_COMMON_ZST_H
#define FERRY_COMMON_ZST_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

/* Fast enough to keep up with a network link on one core. */
#define ZST_LEVEL 1

struct zst;

/* Returns NULL on allocation failure. */
struct zst *zst_new(void);
void zst_free(struct zst *z);

/*
 * Compresses n bytes of src into dst (cap bytes) at zstd's level (0 is its
 * default, negative its fast modes). Returns 0 and the size in *out, or
 * FERRY_ERR_TOO_LARGE when it does not fit in cap (the data does not
 * compress: send it raw).
 */
int zst_compress(struct zst *z, int level, void *dst, size_t cap,
    const void *src, size_t n, size_t *out) FERRY_WUR;

/*
 * Decompresses src (n bytes) into dst, which must come out exactly raw
 * bytes long. Returns 0, or FERRY_ERR_FORMAT for anything else (corrupt
 * input, wrong size): the input is from the other side.
 */
int zst_decompress(struct zst *z, void *dst, size_t raw, const void *src,
    size_t n) FERRY_WUR;

/*
 * Streams: a zst_enc makes zstd frames with a content checksum (so `zstd
 * -t` and zst_dec catch a damaged frame), fed in pieces; output is
 * appended to a buf the caller drains. Memory: the zstd context at
 * ZST_LEVEL (a few MiB), nothing that grows with the input.
 *
 *     e = zst_enc_new();
 *     zst_enc_put(e, p, n, &out);   // as often as needed; drain out
 *     zst_enc_flush(e, &out);       // optional: everything so far is out
 *     zst_enc_end(e, &out);         // ends the frame; the next put starts
 *                                   // a new one
 */
struct zst_enc;

struct zst_enc *zst_enc_new(void);
void zst_enc_free(struct zst_enc *e);
/* The level of the frames that begin after this call (before the first
 * put, or right after zst_enc_end): clamped to zstd's range; negative
 * levels are zstd's fast modes, which store incompressible data nearly
 * for free. A reset goes back to ZST_LEVEL. */
void zst_enc_set_level(struct zst_enc *e, int level);
/* Compresses n bytes, appending what zstd emits to out. Fails with out's
 * TOO_LARGE or NOMEM, or FERRY_ERR_FORMAT from zstd; after a failure the
 * frame is lost (zst_enc_reset before reuse). */
int zst_enc_put(struct zst_enc *e, const void *p, size_t n,
    struct buf *out) FERRY_WUR;
/* Emits everything fed so far (the frame stays open). */
int zst_enc_flush(struct zst_enc *e, struct buf *out) FERRY_WUR;
/* Ends the frame (checksum included). */
int zst_enc_end(struct zst_enc *e, struct buf *out) FERRY_WUR;
/* Drops the current frame. */
void zst_enc_reset(struct zst_enc *e);

/*
 * The most bytes n bytes fed after a flush (or a frame's start) can
 * become, with the frame's header and its end (checksum) included: a
 * bound that holds for any data, so a writer that keeps within it never
 * passes a size limit.
 */
uint64_t zst_enc_bound(uint64_t n);

/*
 * A zst_dec reads a stream of zstd frames (one or more, as `cat a.zst
 * b.zst` makes) from untrusted input. Frames whose window exceeds
 * ZST_DEC_WINDOW_LOG are refused, which bounds its memory.
 */
#define ZST_DEC_WINDOW_LOG 27

struct zst_dec;

struct zst_dec *zst_dec_new(void);
void zst_dec_free(struct zst_dec *d);
/*
 * Decompresses from (src, n) into (dst, cap): *used input bytes were
 * consumed and *out bytes written (either may be 0 while zstd moves data
 * inside). Returns 0, or FERRY_ERR_FORMAT for input that is not zstd,
 * damaged or fails its checksum (the reason is logged at debug level).
 */
int zst_dec_put(struct zst_dec *d, const void *src, size_t n, size_t *used,
    void *dst, size_t cap, size_t *out) FERRY_WUR;
/* 1 if the input so far ends at the end of a frame (0 before any). */
int zst_dec_at_end(const struct zst_dec *d);

#endif
