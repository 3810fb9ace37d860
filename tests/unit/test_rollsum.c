/* The weak rolling checksum (common/rollsum.c): computed at once, and
 * rolled a byte at a time, it agrees with its definition. */
#include <string.h>

#include "../../common/rollsum.h"
#include "check.h"

/* (a & 0xffff) | (b << 16), a = sum x[i], b = sum (n - i) x[i]. */
static uint32_t
rollsum_slow(const uint8_t *p, size_t n)
{
    uint32_t a = 0, b = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        a += p[i];
        b += (uint32_t)(n - i) * p[i];
    }
    return (a & 0xffffu) | (b << 16);
}

TEST(rollsum_definition)
{
    uint8_t buf[5000];
    struct rollsum s;
    size_t i, n, w = 4096;

    for (i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 131 + (i >> 3) * 7 + (i % 13 == 0) * 255);
    for (n = 0; n < 70; n++)
        CHECK_EQ_INT(rollsum_of(buf + n, n), rollsum_slow(buf + n, n));
    CHECK_EQ_INT(rollsum_of(buf, w), rollsum_slow(buf, w));
    rollsum_init(&s, buf, w);
    for (i = 0; i + w < sizeof(buf); i++) {
        rollsum_roll(&s, buf[i], buf[i + w]);
        CHECK_EQ_INT(rollsum_value(&s), rollsum_slow(buf + i + 1, w));
    }
    memset(buf, 0xff, sizeof(buf));
    CHECK_EQ_INT(rollsum_of(buf, w), rollsum_slow(buf, w));
}

/* Long windows, where the sums wrap, at every alignment: the whole sums,
 * not only the value (rolling needs them). */
TEST(rollsum_long)
{
    static uint8_t big[(1u << 20) + 64];
    uint32_t a, b, x = 1;
    struct rollsum s;
    size_t i, n, k;

    for (i = 0; i < sizeof(big); i++) {
        x = x * 1103515245u + 12345u;
        big[i] = (uint8_t)(x >> 23);
    }
    for (k = 0; k < 3; k++) {
        if (k == 2)
            memset(big, 0xff, sizeof(big));
        for (i = 0; i < 17; i++) {
            n = (k == 0 ? (1u << 20) : (1u << 20) - 3) - i;
            rollsum_init(&s, big + i, n);
            a = b = 0;
            for (size_t j = 0; j < n; j++) {
                a += big[i + j];
                b += a;
            }
            CHECK_EQ_U64(s.a, a);
            CHECK_EQ_U64(s.b, b);
        }
    }
}
