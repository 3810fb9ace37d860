#include "rollsum.h"

void
rollsum_init(struct rollsum *s, const uint8_t *p, size_t n)
{
    uint32_t a = 0, b = 0;
    size_t i = 0;

    /* b = sum of (n - i) * x[i] is the sum of the running sums of a.
     * Eight bytes at a time, so that the sums within a group do not wait
     * on each other: b gains 8a and the group's bytes weighted 8..1. */
    for (; i + 8 <= n; i += 8) {
        b += 8 * a + 8u * p[i] + 7u * p[i + 1] + 6u * p[i + 2] +
            5u * p[i + 3] + 4u * p[i + 4] + 3u * p[i + 5] + 2u * p[i + 6] +
            p[i + 7];
        a += (uint32_t)p[i] + p[i + 1] + p[i + 2] + p[i + 3] + p[i + 4] +
            p[i + 5] + p[i + 6] + p[i + 7];
    }
    for (; i < n; i++) {
        a += p[i];
        b += a;
    }
    s->a = a;
    s->b = b;
    s->n = (uint32_t)n;
}

uint32_t
rollsum_of(const uint8_t *p, size_t n)
{
    struct rollsum s;

    rollsum_init(&s, p, n);
    return rollsum_value(&s);
}
