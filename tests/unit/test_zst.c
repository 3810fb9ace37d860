/*
 * Tests for common/zst.c, block compression. Compressed input comes from
 * the other side, so anything that is not exactly one block of the
 * expected size must fail with FERRY_ERR_FORMAT, never crash.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../common/zst.h"
#include "check.h"

/* Text-like data that compresses well. */
static uint8_t *
zst_text(size_t n)
{
    static const char words[] = "ferry moves files over ssh; blocks of "
        "a file travel compressed when they shrink. ";
    uint8_t *p = check_alloc(n);
    size_t i;

    for (i = 0; i < n; i++)
        p[i] = (uint8_t)words[(i + i / 997) % (sizeof(words) - 1)];
    return p;
}

/* Pseudo-random bytes (xorshift), which do not compress. */
static uint8_t *
zst_noise(size_t n, uint32_t seed)
{
    uint8_t *p = check_alloc(n);
    uint32_t x = seed | 1;
    size_t i;

    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)(x >> 11);
    }
    return p;
}

/* Compresses (src, n) into a new heap block of exactly the compressed
 * size, returned with its size in *clen. */
static uint8_t *
zst_pack(struct zst *z, const uint8_t *src, size_t n, size_t *clen)
{
    uint8_t *tmp = check_alloc(n + 1024), *out;

    CHECK_OK(zst_compress(z, ZST_LEVEL, tmp, n + 1024, src, n, clen));
    CHECK(*clen > 0 && *clen <= n + 1024);
    out = check_dup(tmp, *clen);
    free(tmp);
    return out;
}

TEST(zst_roundtrip)
{
    static const size_t sizes[] = { 1, 100, 65536, 1u << 20, 4u << 20 };
    struct zst *z = zst_new();
    uint8_t *src, *c, *back;
    size_t i, clen;

    CHECK(z != NULL);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        check_note("%zu bytes", sizes[i]);
        src = zst_text(sizes[i]);
        c = zst_pack(z, src, sizes[i], &clen);
        if (sizes[i] >= 65536)
            CHECK(clen < sizes[i] / 16);
        back = check_alloc(sizes[i]);
        CHECK_OK(zst_decompress(z, back, sizes[i], c, clen));
        CHECK_EQ_MEM(back, src, sizes[i]);
        free(back);
        free(c);
        free(src);
    }
    check_note_clear();
    /* The same context serves noise after text, and back. */
    src = zst_noise(65536, 7);
    c = zst_pack(z, src, 65536, &clen);
    back = check_alloc(65536);
    CHECK_OK(zst_decompress(z, back, 65536, c, clen));
    CHECK_EQ_MEM(back, src, 65536);
    free(back);
    free(c);
    free(src);
    zst_free(z);
    zst_free(NULL);
}

TEST(zst_incompressible)
{
    struct zst *z = zst_new();
    uint8_t *src = zst_noise(65536, 12345), *dst = check_alloc(65536);
    size_t out = 99;

    CHECK(z != NULL);
    /* Less room than the input: noise does not fit, which says "send it
     * raw". */
    CHECK_EQ_ERR(zst_compress(z, ZST_LEVEL, dst, 65535, src, 65536, &out),
        FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(out, 0);
    CHECK_EQ_ERR(zst_compress(z, ZST_LEVEL, dst, 65536 - 65536 / 16, src, 65536, &out),
        FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(zst_compress(z, ZST_LEVEL, dst, 0, src, 65536, &out),
        FERRY_ERR_TOO_LARGE);
    /* The context still works after the failures. */
    memcpy(src, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 40);
    CHECK_OK(zst_compress(z, ZST_LEVEL, dst, 65536, src, 40, &out));
    CHECK(out > 0 && out < 40);
    free(dst);
    free(src);
    zst_free(z);
}

/* Decompresses (c, clen) as raw bytes, from a heap copy of exactly clen
 * bytes into one of exactly raw bytes (so ASan sees any overrun), and
 * returns the result. */
static int
zst_unpack(struct zst *z, const uint8_t *c, size_t clen, size_t raw)
{
    uint8_t *in = check_dup(c, clen), *out = check_alloc(raw + 1);
    int r = zst_decompress(z, out, raw, in, clen);

    free(out);
    free(in);
    return r;
}

TEST(zst_bad_input)
{
    struct zst *z = zst_new();
    uint8_t *src = zst_text(8192), *c, *junk = zst_noise(8192, 99);
    size_t clen, k, bit;
    int r;

    CHECK(z != NULL);
    c = zst_pack(z, src, 8192, &clen);
    CHECK_OK(zst_unpack(z, c, clen, 8192));
    /* The wrong expected size, either way. */
    CHECK_EQ_ERR(zst_unpack(z, c, clen, 8191), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(zst_unpack(z, c, clen, 8193), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(zst_unpack(z, c, clen, 1), FERRY_ERR_FORMAT);
    /* Cut short at every length, including nothing at all. */
    for (k = 0; k < clen; k++) {
        check_note("cut to %zu of %zu bytes", k, clen);
        CHECK_EQ_ERR(zst_unpack(z, c, k, 8192), FERRY_ERR_FORMAT);
    }
    /* Not zstd at all; a frame with junk after it. */
    check_note_clear();
    CHECK_EQ_ERR(zst_unpack(z, junk, 8192, 8192), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(zst_unpack(z, junk, 3, 8192), FERRY_ERR_FORMAT);
    memcpy(junk, c, clen);
    CHECK_EQ_ERR(zst_unpack(z, junk, clen + 7, 8192), FERRY_ERR_FORMAT);
    /* A bad magic number. */
    c[0] ^= 1;
    CHECK_EQ_ERR(zst_unpack(z, c, clen, 8192), FERRY_ERR_FORMAT);
    c[0] ^= 1;
    /* Any flipped bit: an error or (zstd frames carry no checksum here)
     * some block of the right size, but no crash and nothing else. */
    for (k = 0; k < clen; k++) {
        for (bit = 0; bit < 8; bit++) {
            check_note("byte %zu bit %zu", k, bit);
            c[k] ^= (uint8_t)(1u << bit);
            r = zst_unpack(z, c, clen, 8192);
            CHECK(r == 0 || r == FERRY_ERR_FORMAT);
            c[k] ^= (uint8_t)(1u << bit);
        }
    }
    check_note_clear();
    /* The context is still good. */
    CHECK_OK(zst_unpack(z, c, clen, 8192));
    free(c);
    free(junk);
    free(src);
    zst_free(z);
}

TEST(zst_nomem)
{
    struct zst *z;

    alloc_fail_at(1);
    z = zst_new();
    alloc_fail_at(0);
    CHECK(z == NULL);
    CHECK((z = zst_new()) != NULL);
    zst_free(z);
}

/* The level set for the next frame is the one it gets: on compressible
 * data a high level gives fewer bytes than zstd's fastest, and both
 * decompress to the input. */
TEST(zst_set_level)
{
    static const int levels[] = { -5, 19 };
    size_t sizes[2], n = 1u << 20, i, k;
    struct zst_enc *e = zst_enc_new();
    uint8_t *in = check_alloc(n);
    struct buf out;

    CHECK(e != NULL);
    for (i = 0; i < n; i++)
        in[i] = (uint8_t)("the quick brown fox "[i % 20] + (i / 4096) % 3);
    for (k = 0; k < 2; k++) {
        buf_init(&out, 4u << 20);
        zst_enc_set_level(e, levels[k]);
        CHECK_OK(zst_enc_put(e, in, n, &out));
        CHECK_OK(zst_enc_end(e, &out));
        sizes[k] = buf_used(&out);
        buf_cleanup(&out);
    }
    CHECK(sizes[1] < sizes[0]);
    zst_enc_free(e);
    free(in);
}
