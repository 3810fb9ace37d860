/*
 * rollsum.h: the weak rolling checksum of delta signatures.
 *
 * For a window x[0..n): a = sum of x[i], b = sum of (n - i) * x[i], both
 * mod 2^32; the checksum is (a & 0xffff) | (b << 16), as rsync's. Moving
 * the window one byte costs two additions and a multiply, so the sender
 * can look for a basis piece at every offset of its file; a hit is only a
 * hint, confirmed with the piece's XXH3-128.
 */
#ifndef FERRY_COMMON_ROLLSUM_H
#define FERRY_COMMON_ROLLSUM_H

#include <stddef.h>
#include <stdint.h>

struct rollsum {
    uint32_t a, b;   /* read-only */
    uint32_t n;      /* window length; read-only */
};

/* Starts a window over p[0..n). */
void rollsum_init(struct rollsum *s, const uint8_t *p, size_t n);

/* Moves the window one byte: out leaves at the front, in enters at the
 * back. */
static inline void
rollsum_roll(struct rollsum *s, uint8_t out, uint8_t in)
{
    s->a += (uint32_t)in - out;
    s->b += s->a - s->n * (uint32_t)out;
}

static inline uint32_t
rollsum_value(const struct rollsum *s)
{
    return (s->a & 0xffffu) | (s->b << 16);
}

/* The checksum of p[0..n) in one call. */
uint32_t rollsum_of(const uint8_t *p, size_t n);

#endif
