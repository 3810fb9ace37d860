#include "rollsum.h"

void
rollsum_init(struct rollsum *s, const uint8_t *p, size_t n)
{
    uint32_t a = 0, b = 0;
    size_t i;

    /* b = sum of (n - i) * x[i] is the sum of the running sums of a. */
    for (i = 0; i < n; i++) {
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
