#include "zst.h"

#include <zstd.h>

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
zst_compress(struct zst *z, void *dst, size_t cap, const void *src, size_t n,
    size_t *out)
{
    size_t r = ZSTD_compressCCtx(z->c, dst, cap, src, n, ZST_LEVEL);

    *out = 0;
    if (ZSTD_isError(r)) {
        /* Mostly "destination too small": it does not compress. */
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
