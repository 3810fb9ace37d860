/*
 * fuzz_pieces.c: the checks of the tensor target (proto/tensor_piece.h),
 * shared by the fuzzer, the replay driver and the unit tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/buf.h"
#include "../../proto/tensor_piece.h"
#include "fuzz_common.h"

/* The basis every input is rebuilt against: a fixed pattern. */
#define FUZZ_BASIS (256u << 10)

const uint8_t *
fuzz_tensor_basis(size_t *n)
{
    static uint8_t basis[FUZZ_BASIS];
    static int made;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t i;

    if (!made) {
        for (i = 0; i < FUZZ_BASIS; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* Weights near zero as bf16/fp32 bytes: low bytes random,
             * high bytes few. */
            basis[i] = i % 2 == 0 ? (uint8_t)x : (uint8_t)(0x3c + x % 3);
        }
        made = 1;
    }
    *n = FUZZ_BASIS;
    return basis;
}

static int
fuzz_basis_read(void *arg, uint64_t off, uint8_t *dst, size_t n)
{
    size_t len;
    const uint8_t *b = fuzz_tensor_basis(&len);

    (void)arg;
    if (off > len || n > len - off)
        return FERRY_ERR_PROTOCOL;
    memcpy(dst, b + off, n);
    return 0;
}

/* Each piece of a sequence that decoded, coded again with its own mode,
 * width and lead from the bytes it made, must decode to them again. */
static const char *
fuzz_tensor_again(struct tensor_piece *t, const uint8_t *p, size_t n,
    const uint8_t *dst)
{
    struct tensor_piece_info info;
    size_t at = 0, len, blen;
    const uint8_t *basis = fuzz_tensor_basis(&blen);
    const char *why = NULL;
    struct buf b;
    uint8_t *back;

    while (n > 0 && why == NULL) {
        len = (size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 |
            p[3];
        if (tensor_piece_peek(p + 4, len, &info) != 0)
            return "a piece that decoded does not peek";
        buf_init(&b, TENSOR_PIECE_BOUND(info.raw));
        back = malloc(info.raw + 1);
        if (back == NULL)
            why = "out of memory";
        else if (tensor_piece_encode(t, &info, 1, dst + at, info.raw,
            info.mode == TENSOR_PLAIN ? NULL : basis + info.ref_off,
            &b) != 0)
            why = "a piece that decoded does not encode";
        else if (buf_used(&b) > TENSOR_PIECE_BOUND(info.raw))
            why = "a piece coded past its bound";
        else if (tensor_piece_decode(t, buf_ptr(&b), buf_used(&b),
            fuzz_basis_read, NULL, back, info.raw) != 0 ||
            memcmp(back, dst + at, info.raw) != 0)
            why = "a piece coded again does not come back";
        free(back);
        buf_cleanup(&b);
        at += info.raw;
        p += 4 + len;
        n -= 4 + len;
    }
    return why;
}

const char *
fuzz_tensor(const uint8_t *p, size_t n, int *rc)
{
    struct tensor_piece *t;
    const char *why = NULL;
    uint8_t *dst;
    size_t len;

    *rc = FERRY_ERR_SHORT;
    if (n < 4)
        return NULL;
    /* The first 4 bytes: the block's length, the rest its pieces. */
    len = ((size_t)p[0] << 24 | (size_t)p[1] << 16 | (size_t)p[2] << 8 |
        p[3]) % (PROTO_MAX_TENSOR_PIECE + 1);
    if ((t = tensor_piece_new()) == NULL || (dst = malloc(len + 1)) == NULL) {
        tensor_piece_free(t);
        return "out of memory";
    }
    *rc = tensor_piece_decode_seq(t, p + 4, n - 4, fuzz_basis_read, NULL,
        dst, len);
    switch (*rc) {
    case 0:
        why = fuzz_tensor_again(t, p + 4, n - 4, dst);
        break;
    case FERRY_ERR_SHORT:
    case FERRY_ERR_TOO_LARGE:
    case FERRY_ERR_FORMAT:
    case FERRY_ERR_TRAILING:
    case FERRY_ERR_PROTOCOL:
    case FERRY_ERR_NOMEM:
        break;
    default:
        why = "an error the decoder does not promise";
    }
    free(dst);
    tensor_piece_free(t);
    return why;
}

int
fuzz_tensor_one(const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_tensor(p, n, &rc)) != NULL) {
        fprintf(stderr, "fuzz: tensor: %s\n", why);
        abort();
    }
    return 0;
}
