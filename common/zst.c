#include "zst.h"

#include <zstd.h>
#include <zstd_errors.h>

#include "alloc.h"
#include "log.h"

struct zst {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
};

struct zst *
zst_new(void)
{
    struct zst *z = xcalloc(1, sizeof(*z));

    if (z == NULL)
        return NULL;
    z->c = ZSTD_createCCtx();
    z->d = ZSTD_createDCtx();
    if (z->c == NULL || z->d == NULL) {
        zst_free(z);
        return NULL;
    }
    return z;
}

void
zst_free(struct zst *z)
{
    if (z == NULL)
        return;
    ZSTD_freeCCtx(z->c);
    ZSTD_freeDCtx(z->d);
    xfree(z);
}

int
zst_compress(struct zst *z, int level, void *dst, size_t cap, const void *src,
    size_t n, size_t *out)
{
    size_t r = ZSTD_compressCCtx(z->c, dst, cap, src, n, level);

    *out = 0;
    if (ZSTD_isError(r)) {
        /* "Destination too small" is the answer callers ask for (it
         * does not compress enough): only another error is news. */
        if (ZSTD_getErrorCode(r) != ZSTD_error_dstSize_tooSmall)
            log_debug("zstd compress: %s", ZSTD_getErrorName(r));
        return FERRY_ERR_TOO_LARGE;
    }
    *out = r;
    return 0;
}

int
zst_decompress(struct zst *z, void *dst, size_t raw, const void *src,
    size_t n)
{
    size_t r = ZSTD_decompressDCtx(z->d, dst, raw, src, n);

    if (ZSTD_isError(r)) {
        log_debug("zstd decompress: %s", ZSTD_getErrorName(r));
        return FERRY_ERR_FORMAT;
    }
    return r == raw ? 0 : FERRY_ERR_FORMAT;
}

struct zst_enc {
    ZSTD_CCtx *c;
};

struct zst_enc *
zst_enc_new(void)
{
    struct zst_enc *e = xcalloc(1, sizeof(*e));

    if (e == NULL)
        return NULL;
    if ((e->c = ZSTD_createCCtx()) == NULL) {
        xfree(e);
        return NULL;
    }
    zst_enc_reset(e);
    return e;
}

void
zst_enc_free(struct zst_enc *e)
{
    if (e == NULL)
        return;
    ZSTD_freeCCtx(e->c);
    xfree(e);
}

void
zst_enc_set_level(struct zst_enc *e, int level)
{
    if (level < ZSTD_minCLevel())
        level = ZSTD_minCLevel();
    if (level > ZSTD_maxCLevel())
        level = ZSTD_maxCLevel();
    (void)ZSTD_CCtx_setParameter(e->c, ZSTD_c_compressionLevel, level);
}

void
zst_enc_reset(struct zst_enc *e)
{
    (void)ZSTD_CCtx_reset(e->c, ZSTD_reset_session_and_parameters);
    (void)ZSTD_CCtx_setParameter(e->c, ZSTD_c_compressionLevel, ZST_LEVEL);
    (void)ZSTD_CCtx_setParameter(e->c, ZSTD_c_checksumFlag, 1);
}

/* Runs one directive until zstd has taken all input (and, for flush and
 * end, emitted everything), appending its output to out. */
static int
zst_enc_run(struct zst_enc *e, const void *p, size_t n, struct buf *out,
    ZSTD_EndDirective dir)
{
    ZSTD_inBuffer in = { p, n, 0 };
    size_t chunk = ZSTD_CStreamOutSize(), left;
    uint8_t *dst;
    int r;

    do {
        ZSTD_outBuffer ob;

        if ((r = buf_reserve(out, chunk, &dst)) != 0)
            return r;
        ob.dst = dst;
        ob.size = chunk;
        ob.pos = 0;
        left = ZSTD_compressStream2(e->c, &ob, &in, dir);
        buf_unreserve(out, chunk - ob.pos);
        if (ZSTD_isError(left)) {
            log_debug("zstd compress: %s", ZSTD_getErrorName(left));
            return FERRY_ERR_FORMAT;
        }
    } while (dir == ZSTD_e_continue ? in.pos < in.size : left != 0);
    return 0;
}

int
zst_enc_put(struct zst_enc *e, const void *p, size_t n, struct buf *out)
{
    return zst_enc_run(e, p, n, out, ZSTD_e_continue);
}

int
zst_enc_flush(struct zst_enc *e, struct buf *out)
{
    return zst_enc_run(e, NULL, 0, out, ZSTD_e_flush);
}

int
zst_enc_end(struct zst_enc *e, struct buf *out)
{
    return zst_enc_run(e, NULL, 0, out, ZSTD_e_end);
}

uint64_t
zst_enc_bound(uint64_t n)
{
    /* ZSTD_compressBound: n + n/256, plus a margin for inputs under one
     * 128 KiB block; it already counts a frame header. On top: a last
     * empty block (3 bytes), the checksum (4) and a frame header that
     * ZSTD_compressBound may count smaller than the streaming one. */
    uint64_t b = n + (n >> 8);

    if (n < (128u << 10))
        b += ((128u << 10) - n) >> 11;
    return b + 64;
}

struct zst_dec {
    ZSTD_DCtx *d;
    int at_end;
};

struct zst_dec *
zst_dec_new(void)
{
    struct zst_dec *d = xcalloc(1, sizeof(*d));

    if (d == NULL)
        return NULL;
    if ((d->d = ZSTD_createDCtx()) == NULL) {
        xfree(d);
        return NULL;
    }
    (void)ZSTD_DCtx_setParameter(d->d, ZSTD_d_windowLogMax,
        ZST_DEC_WINDOW_LOG);
    return d;
}

void
zst_dec_free(struct zst_dec *d)
{
    if (d == NULL)
        return;
    ZSTD_freeDCtx(d->d);
    xfree(d);
}

int
zst_dec_put(struct zst_dec *d, const void *src, size_t n, size_t *used,
    void *dst, size_t cap, size_t *out)
{
    ZSTD_inBuffer in = { src, n, 0 };
    ZSTD_outBuffer ob = { dst, cap, 0 };
    size_t r = ZSTD_decompressStream(d->d, &ob, &in);

    *used = in.pos;
    *out = ob.pos;
    if (ZSTD_isError(r)) {
        log_debug("zstd decompress: %s", ZSTD_getErrorName(r));
        return FERRY_ERR_FORMAT;
    }
    /* 0: a frame ended here and everything it holds is out. */
    if (in.pos > 0 || ob.pos > 0)
        d->at_end = r == 0;
    return 0;
}

int
zst_dec_at_end(const struct zst_dec *d)
{
    return d->at_end;
}
