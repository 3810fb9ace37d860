/*
 * Tests for common/rd.c, the bounded reader. Besides the values, every
 * failure is checked for the contract the decoders rely on: the cursor is
 * unchanged, out-parameters are zeroed, and a length over its limit is
 * TOO_LARGE whether or not the bytes are there (rsync's CVE-2024-12084 came
 * from a length that was trusted up to the wrong limit).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/buf.h"
#include "../../common/rd.h"
#include "check.h"

static const uint8_t rd_data[] = {
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
    0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10,
};

/* Checks that r still covers exactly (p, len). */
static void
check_cursor(const struct rd *r, const uint8_t *p, size_t len)
{
    CHECK(r->p == p);
    CHECK_EQ_U64(r->len, len);
}

TEST(rd_ints)
{
    uint64_t v64;
    uint32_t v32;
    uint16_t v16;
    uint8_t v8;
    struct rd r;

    rd_init(&r, rd_data, sizeof(rd_data));
    CHECK_OK(rd_u8(&r, &v8));
    CHECK_EQ_INT(v8, 0x01);
    CHECK_OK(rd_u16(&r, &v16));
    CHECK_EQ_INT(v16, 0x0203);
    CHECK_OK(rd_u32(&r, &v32));
    CHECK_EQ_U64(v32, 0x04050607);
    CHECK_OK(rd_u64(&r, &v64));
    CHECK_EQ_U64(v64, 0x08090a0b0c0d0e0full);
    check_cursor(&r, rd_data + 15, 1);
    CHECK_EQ_ERR(rd_end(&r), FERRY_ERR_TRAILING);
    CHECK_OK(rd_u8(&r, NULL));
    CHECK_OK(rd_end(&r));
    CHECK_EQ_U64(rd_peek_u32(rd_data + 12), 0x0d0e0f10);

    /* NULL out-parameters skip the value but still advance. */
    rd_init(&r, rd_data, sizeof(rd_data));
    CHECK_OK(rd_u16(&r, NULL));
    CHECK_OK(rd_u32(&r, NULL));
    CHECK_OK(rd_u64(&r, NULL));
    check_cursor(&r, rd_data + 14, 2);
}

TEST(rd_short)
{
    uint64_t v64 = 1;
    uint32_t v32 = 1;
    uint16_t v16 = 1;
    uint8_t v8 = 1, out[4] = { 1, 1, 1, 1 };
    const uint8_t *p = rd_data;
    struct rd r;
    size_t left;

    /* Each width one byte short of what it needs. */
    for (left = 0; left < 8; left++) {
        check_note("%zu bytes left", left);
        rd_init(&r, rd_data, left);
        if (left < 1) {
            CHECK_EQ_ERR(rd_u8(&r, &v8), FERRY_ERR_SHORT);
            CHECK_EQ_INT(v8, 0);
        }
        if (left < 2) {
            CHECK_EQ_ERR(rd_u16(&r, &v16), FERRY_ERR_SHORT);
            CHECK_EQ_INT(v16, 0);
        }
        if (left < 4) {
            CHECK_EQ_ERR(rd_u32(&r, &v32), FERRY_ERR_SHORT);
            CHECK_EQ_U64(v32, 0);
            CHECK_EQ_ERR(rd_copy(&r, out, 4), FERRY_ERR_SHORT);
            CHECK_EQ_MEM(out, "\0\0\0\0", 4);
        }
        CHECK_EQ_ERR(rd_u64(&r, &v64), FERRY_ERR_SHORT);
        CHECK_EQ_U64(v64, 0);
        CHECK_EQ_ERR(rd_bytes(&r, left + 1, &p), FERRY_ERR_SHORT);
        CHECK(p == NULL);
        check_cursor(&r, rd_data, left);
        v8 = 1, v16 = 1, v32 = 1, v64 = 1, p = rd_data;
        memset(out, 1, sizeof(out));
    }
}

TEST(rd_bytes)
{
    const uint8_t *p;
    uint8_t out[16];
    struct rd r;

    rd_init(&r, rd_data, sizeof(rd_data));
    CHECK_OK(rd_bytes(&r, 0, &p));
    CHECK(p == rd_data);
    check_cursor(&r, rd_data, 16);
    /* Huge counts fail by comparison with what is left, never by a
     * pointer sum that could wrap. */
    CHECK_EQ_ERR(rd_bytes(&r, SIZE_MAX, &p), FERRY_ERR_SHORT);
    CHECK_EQ_ERR(rd_bytes(&r, (size_t)1 << 63, NULL), FERRY_ERR_SHORT);
    CHECK_EQ_ERR(rd_bytes(&r, 17, &p), FERRY_ERR_SHORT);
    check_cursor(&r, rd_data, 16);
    CHECK_OK(rd_bytes(&r, 3, &p));
    CHECK(p == rd_data);
    CHECK_OK(rd_copy(&r, out, 13));
    CHECK_EQ_MEM(out, rd_data + 3, 13);
    CHECK_OK(rd_end(&r));
    CHECK_OK(rd_bytes(&r, 0, NULL));
    CHECK_OK(rd_copy(&r, NULL, 0));

    rd_init(&r, rd_data, sizeof(rd_data));
    CHECK_OK(rd_copy(&r, NULL, 16));
    CHECK_OK(rd_end(&r));

    /* A reader over nothing at all: empty reads succeed and the cursor
     * stays NULL (no NULL + 0, which clang's UBSan reports). */
    rd_init(&r, NULL, 0);
    p = rd_data;
    CHECK_OK(rd_bytes(&r, 0, &p));
    CHECK(p == NULL);
    check_cursor(&r, NULL, 0);
    CHECK_OK(rd_copy(&r, out, 0));
    CHECK_EQ_ERR(rd_str16(&r, 0, NULL, NULL), FERRY_ERR_SHORT);
    CHECK_EQ_ERR(rd_bytes(&r, 1, &p), FERRY_ERR_SHORT);
    check_cursor(&r, NULL, 0);
    CHECK_OK(rd_end(&r));
}

struct str_case {
    uint32_t n;      /* the length field */
    size_t present;  /* bytes after the length field */
    size_t max;
    int want;
};

/*
 * Runs one rd_str16 / rd_str32 case over a length field of lenbytes bytes
 * followed by c->present bytes (held in an exact-size heap block, so that
 * ASan sees any read past them).
 */
static void
check_str_case(size_t lenbytes, const struct str_case *c)
{
    uint8_t *in = check_alloc(4 + c->present);
    const uint8_t *p = rd_data;
    size_t len = 1, total = lenbytes + c->present;
    struct rd r;
    int e;

    check_note("str%zu: length %#x, %zu present, max %#zx",
        8 * lenbytes, c->n, c->present, c->max);
    buf_set_u32(in, c->n);
    memset(in + 4, 'q', c->present);
    rd_init(&r, in + 4 - lenbytes, total);
    if (lenbytes == 2)
        e = rd_str16(&r, c->max, &p, &len);
    else
        e = rd_str32(&r, c->max, &p, &len);
    CHECK_EQ_ERR(e, c->want);
    if (e == 0) {
        CHECK(p == in + 4);
        CHECK_EQ_U64(len, c->n);
        check_cursor(&r, in + 4 + c->n, c->present - c->n);
    } else {
        CHECK(p == NULL);
        CHECK_EQ_U64(len, 0);
        check_cursor(&r, in + 4 - lenbytes, total);
    }
    free(in);
}

static void
check_str_cases(size_t lenbytes, const struct str_case *c, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        check_str_case(lenbytes, &c[i]);
    check_note_clear();
}

TEST(rd_str16)
{
    static const struct str_case cases[] = {
        { 0, 0, 0, 0 },
        { 0, 5, 10, 0 },
        { 10, 10, 10, 0 },
        { 10, 12, 10, 0 },
        { 10, 9, 10, FERRY_ERR_SHORT },
        /* Over the limit: TOO_LARGE, with or without the bytes. */
        { 11, 11, 10, FERRY_ERR_TOO_LARGE },
        { 11, 0, 10, FERRY_ERR_TOO_LARGE },
        { 1, 0, 0, FERRY_ERR_TOO_LARGE },
        { 0xffff, 3, 0xfffe, FERRY_ERR_TOO_LARGE },
        { 0xffff, 3, 0xffff, FERRY_ERR_SHORT },
        { 0xffff, 0xffff, 0xffff, 0 },
        { 0xffff, 3, SIZE_MAX, FERRY_ERR_SHORT },
    };
    struct rd r;

    check_str_cases(2, cases, sizeof(cases) / sizeof(cases[0]));
    /* A length field that is itself cut short. */
    rd_init(&r, rd_data, 1);
    CHECK_EQ_ERR(rd_str16(&r, 100, NULL, NULL), FERRY_ERR_SHORT);
    check_cursor(&r, rd_data, 1);
    CHECK_OK(rd_u8(&r, NULL));
}

TEST(rd_str32)
{
    static const struct str_case cases[] = {
        { 0, 0, 0, 0 },
        { 100, 100, 100, 0 },
        { 100, 99, 100, FERRY_ERR_SHORT },
        { 101, 101, 100, FERRY_ERR_TOO_LARGE },
        { 101, 0, 100, FERRY_ERR_TOO_LARGE },
        { 0x10000, 0x10000, 0x10000, 0 },
        { 0x80000000u, 4, 100, FERRY_ERR_TOO_LARGE },
        { 0x80000000u, 4, 0x7fffffffu, FERRY_ERR_TOO_LARGE },
        { 0x80000000u, 4, 0x80000000u, FERRY_ERR_SHORT },
        { 0x80000000u, 4, SIZE_MAX, FERRY_ERR_SHORT },
        { 0xffffffffu, 4, 100, FERRY_ERR_TOO_LARGE },
        { 0xffffffffu, 4, 0xfffffffeu, FERRY_ERR_TOO_LARGE },
        { 0xffffffffu, 4, 0xffffffffu, FERRY_ERR_SHORT },
        { 0xffffffffu, 0, SIZE_MAX, FERRY_ERR_SHORT },
    };
    struct rd r;
    size_t i;

    check_str_cases(4, cases, sizeof(cases) / sizeof(cases[0]));
    for (i = 0; i < 4; i++) {
        check_note("%zu bytes of the length field", i);
        rd_init(&r, rd_data, i);
        CHECK_EQ_ERR(rd_str32(&r, 100, NULL, NULL), FERRY_ERR_SHORT);
        check_cursor(&r, rd_data, i);
    }
}
