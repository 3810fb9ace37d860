/* Tests for common/buf.c: growth, the hard maximum, FIFO use and the
 * length-prefixed strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../common/buf.h"
#include "check.h"

/* Checks that b holds exactly the n bytes at want. */
static void
check_contents(const struct buf *b, const void *want, size_t n)
{
    CHECK_EQ_U64(buf_used(b), n);
    CHECK_EQ_MEM(buf_ptr(b), want, n);
}

TEST(buf_put_ints)
{
    static const uint8_t want[] = {
        0x01,
        0x02, 0x03,
        0x04, 0x05, 0x06, 0x07,
        0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
    };
    uint8_t p[4];
    struct buf b;

    buf_init(&b, 64);
    CHECK_OK(buf_put_u8(&b, 0x01));
    CHECK_OK(buf_put_u16(&b, 0x0203));
    CHECK_OK(buf_put_u32(&b, 0x04050607));
    CHECK_OK(buf_put_u64(&b, 0x08090a0b0c0d0e0full));
    check_contents(&b, want, sizeof(want));
    buf_set_u32(p, 0xfffefdfc);
    CHECK_EQ_MEM(p, "\xff\xfe\xfd\xfc", 4);
    buf_cleanup(&b);
}

TEST(buf_growth)
{
    enum { TOTAL = 1 << 20 };
    uint8_t *want = check_alloc(TOTAL);
    size_t i, n = 0, step = 1;
    struct buf b;

    for (i = 0; i < TOTAL; i++)
        want[i] = (uint8_t)(i * 7 + (i >> 8));
    buf_init(&b, TOTAL);
    /* Steps of growing size cross every capacity doubling at odd sizes. */
    while (n < TOTAL) {
        size_t k = step < TOTAL - n ? step : TOTAL - n;

        CHECK_OK(buf_put(&b, want + n, k));
        n += k;
        step = step * 3 + 1;
        CHECK(b.cap >= buf_used(&b));
    }
    check_contents(&b, want, TOTAL);
    CHECK_EQ_U64(b.cap, TOTAL);
    buf_cleanup(&b);
    CHECK(b.data == NULL);
    CHECK_EQ_U64(buf_used(&b), 0);
    free(want);
}

TEST(buf_max)
{
    uint8_t *p = (uint8_t *)"x";
    struct buf b;

    buf_init(&b, 10);
    CHECK_OK(buf_put(&b, "0123456789", 10));
    /* Full: one more byte is refused and changes nothing. */
    CHECK_EQ_ERR(buf_put_u8(&b, 'x'), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(buf_reserve(&b, 1, &p), FERRY_ERR_TOO_LARGE);
    CHECK(p == NULL);
    check_contents(&b, "0123456789", 10);
    buf_reset(&b);
    CHECK_EQ_ERR(buf_reserve(&b, 11, NULL), FERRY_ERR_TOO_LARGE);
    /* Sizes that would overflow used + n are refused, not wrapped. */
    CHECK_EQ_ERR(buf_reserve(&b, SIZE_MAX, NULL), FERRY_ERR_TOO_LARGE);
    CHECK_OK(buf_put_u8(&b, 'a'));
    CHECK_EQ_ERR(buf_reserve(&b, SIZE_MAX, NULL), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(buf_reserve(&b, SIZE_MAX - 1, NULL), FERRY_ERR_TOO_LARGE);
    check_contents(&b, "a", 1);
    buf_cleanup(&b);

    /* A max of 0 holds nothing, but an empty reservation is fine. */
    buf_init(&b, 0);
    CHECK_EQ_ERR(buf_put_u8(&b, 1), FERRY_ERR_TOO_LARGE);
    CHECK_OK(buf_put(&b, NULL, 0));
    CHECK_EQ_U64(buf_used(&b), 0);
    buf_cleanup(&b);
}

TEST(buf_consume)
{
    uint8_t chunk[100];
    size_t cap, i;
    struct buf b;

    for (i = 0; i < sizeof(chunk); i++)
        chunk[i] = (uint8_t)i;
    buf_init(&b, 300);
    CHECK_OK(buf_put(&b, chunk, 100));
    CHECK_OK(buf_put(&b, chunk, 100));
    cap = b.cap;
    buf_consume(&b, 150);
    check_contents(&b, chunk + 50, 50);
    /* The max limits the bytes held, not the bytes ever written. */
    CHECK_OK(buf_put(&b, chunk, 100));
    CHECK_OK(buf_put(&b, chunk, 100));
    CHECK_OK(buf_put(&b, chunk, 50));
    CHECK_EQ_U64(buf_used(&b), 300);
    CHECK_EQ_ERR(buf_put_u8(&b, 0), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_MEM(buf_ptr(&b), chunk + 50, 50);
    CHECK_EQ_MEM(buf_ptr(&b) + 50, chunk, 100);
    CHECK_EQ_MEM(buf_ptr(&b) + 250, chunk, 50);
    CHECK(b.cap >= cap);
    /* Draining a FIFO whose data fits compacts instead of growing. */
    buf_consume(&b, 250);
    cap = b.cap;
    CHECK_OK(buf_put(&b, chunk, 100));
    CHECK_EQ_U64(b.cap, cap);
    CHECK_EQ_U64(b.off, 0);
    CHECK_EQ_MEM(buf_ptr(&b), chunk, 50);
    CHECK_EQ_MEM(buf_ptr(&b) + 50, chunk, 100);
    /* Consuming everything rewinds to the start of the storage. */
    buf_consume(&b, 150);
    CHECK_EQ_U64(b.off, 0);
    CHECK_EQ_U64(b.len, 0);
    buf_cleanup(&b);
}

TEST(buf_unreserve_reset)
{
    uint8_t *p;
    struct buf b;

    buf_init(&b, 100);
    CHECK_OK(buf_put(&b, "abc", 3));
    CHECK_OK(buf_reserve(&b, 20, &p));
    CHECK(p == buf_ptr(&b) + 3);
    memcpy(p, "defg", 4);
    buf_unreserve(&b, 16);
    check_contents(&b, "abcdefg", 7);
    buf_reset(&b);
    CHECK_EQ_U64(buf_used(&b), 0);
    CHECK(b.data != NULL);
    buf_cleanup(&b);
}

/* Writes a string of n 'a's with put (buf_put_str16 or 32) and checks the
 * prefix of lenbytes bytes and the data. */
static void
check_put_str(int (*put)(struct buf *, const void *, size_t),
    size_t lenbytes, size_t n)
{
    char *s = check_alloc(n + 1);
    uint8_t hdr[4];
    struct buf b;

    memset(s, 'a', n);
    buf_init(&b, lenbytes + n);
    CHECK_OK(put(&b, s, n));
    CHECK_EQ_U64(buf_used(&b), lenbytes + n);
    buf_set_u32(hdr, (uint32_t)n);
    CHECK_EQ_MEM(buf_ptr(&b), hdr + 4 - lenbytes, lenbytes);
    CHECK_EQ_MEM(buf_ptr(&b) + lenbytes, s, n);
    buf_cleanup(&b);
    free(s);
}

TEST(buf_str)
{
    static const size_t sizes[] = { 0, 1, 255, 256, 65535 };
    char big[65536];
    struct buf b;
    size_t i;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        check_note("length %zu", sizes[i]);
        check_put_str(buf_put_str16, 2, sizes[i]);
        check_put_str(buf_put_str32, 4, sizes[i]);
    }
    check_note_clear();
    check_put_str(buf_put_str32, 4, 65536);

    memset(big, 'b', sizeof(big));
    buf_init(&b, 1 << 20);
    CHECK_EQ_ERR(buf_put_str16(&b, big, 65536), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    buf_cleanup(&b);

    /* Room for the length but not the bytes: nothing at all is written. */
    buf_init(&b, 10);
    CHECK_EQ_ERR(buf_put_str16(&b, big, 9), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(buf_put_str32(&b, big, 7), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    CHECK_OK(buf_put_str32(&b, big, 6));
    buf_cleanup(&b);
}

TEST(buf_empty_ptr)
{
    struct buf b;
    uint8_t *p = (uint8_t *)&b;

    /* A buf that never allocated has no bytes and no storage: its
     * pointer is NULL, never NULL + 0 (UBSan under clang). */
    buf_init(&b, 16);
    CHECK(buf_ptr(&b) == NULL);
    CHECK_EQ_U64(buf_used(&b), 0);
    CHECK_OK(buf_reserve(&b, 0, &p));
    CHECK(p == NULL);
    CHECK(buf_ptr(&b) == NULL);
    CHECK_OK(buf_put(&b, "ab", 2));
    CHECK(buf_ptr(&b) == b.data);
    buf_consume(&b, 2);
    CHECK(buf_ptr(&b) == b.data);
    buf_cleanup(&b);
    CHECK(buf_ptr(&b) == NULL);
}

TEST(buf_nomem)
{
    uint8_t big[1000];
    struct buf b;

    memset(big, 'z', sizeof(big));
    buf_init(&b, 1 << 20);
    alloc_fail_at(1);
    CHECK_EQ_ERR(buf_put_u8(&b, 1), FERRY_ERR_NOMEM);
    CHECK(b.data == NULL);
    CHECK_OK(buf_put(&b, "abc", 3));
    buf_consume(&b, 1);
    /* The growth fails after the compaction: the bytes must survive. */
    alloc_fail_at(1);
    CHECK_EQ_ERR(buf_put(&b, big, sizeof(big)), FERRY_ERR_NOMEM);
    alloc_fail_at(0);
    check_contents(&b, "bc", 2);
    CHECK_OK(buf_put(&b, big, sizeof(big)));
    CHECK_EQ_MEM(buf_ptr(&b), "bc", 2);
    CHECK_EQ_MEM(buf_ptr(&b) + 2, big, sizeof(big));
    buf_cleanup(&b);
}
