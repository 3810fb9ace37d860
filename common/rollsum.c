#include "rollsum.h"

#ifdef __SSE2__
#include <emmintrin.h>

/*
 * The sums over whole 16-byte chunks, as adler32's SIMD forms do: per
 * chunk c, b gains 16 * (the bytes of the chunks before it) plus the
 * chunk's bytes weighted 16..1. Byte sums come from psadbw, the weighted
 * ones from pmaddwd over the bytes widened to 16 bits; all of it is plain
 * SSE2 (every x86-64). Returns the bytes used (a multiple of 16).
 */
static size_t
rollsum_chunks(const uint8_t *p, size_t n, uint32_t *a, uint32_t *b)
{
    const __m128i zero = _mm_setzero_si128();
    const __m128i w_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9);
    const __m128i w_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
    __m128i sum = zero, before = zero, weighted = zero;
    uint64_t lanes[2];
    uint32_t w[4];
    size_t i;

    for (i = 0; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));

        before = _mm_add_epi64(before, sum);
        sum = _mm_add_epi64(sum, _mm_sad_epu8(v, zero));
        weighted = _mm_add_epi32(weighted,
            _mm_madd_epi16(_mm_unpacklo_epi8(v, zero), w_lo));
        weighted = _mm_add_epi32(weighted,
            _mm_madd_epi16(_mm_unpackhi_epi8(v, zero), w_hi));
    }
    _mm_storeu_si128((__m128i *)(void *)lanes, sum);
    *a = (uint32_t)(lanes[0] + lanes[1]);
    _mm_storeu_si128((__m128i *)(void *)lanes, before);
    _mm_storeu_si128((__m128i *)(void *)w, weighted);
    *b = 16u * (uint32_t)(lanes[0] + lanes[1]) + w[0] + w[1] + w[2] + w[3];
    return i;
}
#endif

void
rollsum_init(struct rollsum *s, const uint8_t *p, size_t n)
{
    uint32_t a = 0, b = 0;
    size_t i = 0;

#ifdef __SSE2__
    i = rollsum_chunks(p, n, &a, &b);
#endif

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
