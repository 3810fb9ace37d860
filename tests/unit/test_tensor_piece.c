/*
 * proto/tensor_piece.c: pieces come back byte for byte for every width,
 * mode and kind of value, and the decoder refuses every piece that does
 * not add up, each for its own reason.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/buf.h"
#include "../../common/zst.h"
#include "../../proto/tensor_piece.h"
#include "check.h"

static uint64_t seed_state = 88172645463325252ull;

static uint64_t
next(void)
{
    return check_rand(&seed_state);
}

struct ref_mem {
    const uint8_t *p;
    size_t n;
    int reads;
};

static int
ref_read(void *arg, uint64_t off, uint8_t *dst, size_t n)
{
    struct ref_mem *m = arg;

    m->reads++;
    if (off > m->n || n > m->n - off)
        return FERRY_ERR_PROTOCOL;
    memcpy(dst, m->p + off, n);
    return 0;
}

enum kind { RANDOM, CONSTANT, SPECIAL, NEAR };

/* Element values of width w: random bytes, one value throughout, the
 * floating-point specials (NaNs, infinities, denormals, zeros of both
 * signs), or the reference plus small steps. */
static void
fill(uint8_t *p, size_t n, unsigned w, enum kind k, const uint8_t *ref)
{
    static const uint32_t f32[] = { 0x7fc00000u, 0xffc00001u, 0x7f800000u,
        0xff800000u, 0x00000001u, 0x807fffffu, 0x00000000u, 0x80000000u };
    static const uint16_t b16[] = { 0x7fc0, 0xffc1, 0x7f80, 0xff80, 0x0001,
        0x807f, 0x0000, 0x8000 };
    static const uint64_t f64[] = { 0x7ff8000000000000ull,
        0xfff0000000000001ull, 0x7ff0000000000000ull, 0x0000000000000001ull,
        0x800fffffffffffffull, 0x8000000000000000ull };
    size_t i, j;
    uint64_t v;

    for (i = 0; i < n; i++) {
        switch (k) {
        case RANDOM:
            p[i] = (uint8_t)next();
            break;
        case CONSTANT:
            p[i] = (uint8_t)(0xa5 + i % w);
            break;
        case SPECIAL:
            j = i / w;
            v = w == 2 ? b16[j % 8] : w == 4 ? f32[j % 8] : w == 8 ?
                f64[j % 6] : (uint64_t)(j * 37);
            p[i] = (uint8_t)(v >> (8 * (i % w)));
            break;
        default:
            p[i] = ref[i];
            if (i % w == 0 && next() % 3 != 0)
                p[i] = (uint8_t)(p[i] + next() % 5 - 2);
            break;
        }
    }
}

static void
roundtrip(struct tensor_piece *t, uint8_t mode, unsigned w, unsigned lead,
    const uint8_t *p, const uint8_t *ref, size_t n)
{
    struct tensor_piece_info info = { mode, (uint8_t)w, (uint8_t)lead, 0,
        100 };
    struct ref_mem m;
    uint8_t *back = check_alloc(n + 1);
    uint8_t *pad = check_alloc(n + 100);
    struct buf b;

    /* The reference lies at ref_off within a larger basis. */
    memset(pad, 0xee, 100);
    memcpy(pad + 100, ref, n);
    m.p = pad;
    m.n = n + 100;
    m.reads = 0;
    buf_init(&b, TENSOR_PIECE_BOUND(n));
    CHECK_OK(tensor_piece_encode(t, &info, 1, p, n, mode ? ref : NULL, &b));
    CHECK(buf_used(&b) <= TENSOR_PIECE_BOUND(n));
    back[n] = 0x5a;
    CHECK_OK(tensor_piece_decode(t, buf_ptr(&b), buf_used(&b), ref_read, &m,
        back, n));
    CHECK_EQ_MEM(back, p, n);
    CHECK_EQ_INT(back[n], 0x5a);
    CHECK_EQ_INT(m.reads, mode != TENSOR_PLAIN);
    buf_cleanup(&b);
    free(back);
    free(pad);
}

TEST(tensor_piece_roundtrip)
{
    static const unsigned widths[] = { 1, 2, 4, 8 };
    static const size_t lens[] = { 0, 1, 3, 7, 8, 9, 1000, 40000, 65537 };
    struct tensor_piece *t = tensor_piece_new();
    uint8_t *ref = check_alloc(65537), *p = check_alloc(65537);
    size_t wi, li;
    unsigned lead, k, kr;
    uint8_t mode;

    CHECK(t != NULL);
    for (wi = 0; wi < 4; wi++) {
        for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
            for (k = RANDOM; k <= NEAR; k++) {
                for (kr = RANDOM; kr <= SPECIAL; kr++) {
                    fill(ref, lens[li], widths[wi], kr, NULL);
                    fill(p, lens[li], widths[wi], k, ref);
                    for (mode = TENSOR_PLAIN; mode <= TENSOR_SUB; mode++) {
                        for (lead = 0; lead < widths[wi]; lead++) {
                            check_note("width %u len %zu kind %u/%u mode %u "
                                "lead %u", widths[wi], lens[li], k, kr, mode,
                                lead);
                            roundtrip(t, mode, widths[wi], lead, p, ref,
                                lens[li]);
                        }
                    }
                }
            }
        }
    }
    check_note_clear();
    tensor_piece_free(t);
    free(ref);
    free(p);
}

/* A small change of every element shrinks to much less than the data
 * with XOR and SUB, and identical data to almost nothing. */
TEST(tensor_piece_shrinks)
{
    struct tensor_piece *t = tensor_piece_new();
    struct tensor_piece_info info = { TENSOR_XOR, 2, 0, 0, 0 };
    size_t n = 1u << 20, i;
    uint8_t *ref = check_alloc(n), *p = check_alloc(n);
    struct buf b;
    float f;
    uint32_t u;

    for (i = 0; i < n; i += 2) {
        f = (float)((int64_t)(next() % 2001) - 1000) * 2e-5f;
        memcpy(&u, &f, 4);
        ref[i] = (uint8_t)(u >> 16);
        ref[i + 1] = (uint8_t)(u >> 24);
    }
    fill(p, n, 2, NEAR, ref);
    buf_init(&b, TENSOR_PIECE_BOUND(n));
    CHECK_OK(tensor_piece_encode(t, &info, 1, p, n, ref, &b));
    CHECK(buf_used(&b) < n / 2);
    buf_reset(&b);
    CHECK_OK(tensor_piece_encode(t, &info, 1, ref, n, ref, &b));
    CHECK(buf_used(&b) < n / 1000);
    buf_cleanup(&b);
    tensor_piece_free(t);
    free(ref);
    free(p);
}

/* Pieces in a row rebuild a block; their raw lengths must add up. */
TEST(tensor_piece_seq)
{
    struct tensor_piece *t = tensor_piece_new();
    struct tensor_piece_info info = { TENSOR_SUB, 4, 1, 0, 0 };
    uint8_t ref[3000], p[3000], *back;
    struct ref_mem m = { ref, sizeof(ref), 0 };
    struct buf b;

    fill(ref, sizeof(ref), 4, RANDOM, NULL);
    fill(p, sizeof(p), 4, NEAR, ref);
    buf_init(&b, 1u << 20);
    CHECK_OK(tensor_piece_put(t, &info, 1, p, 1000, ref, &b));
    info.mode = TENSOR_PLAIN;
    info.width = 1;
    info.lead = 0;
    CHECK_OK(tensor_piece_put(t, &info, 1, p + 1000, 500, NULL, &b));
    info.mode = TENSOR_XOR;
    info.width = 8;
    info.lead = 3;
    info.ref_off = 1500;
    CHECK_OK(tensor_piece_put(t, &info, 1, p + 1500, 1500, ref + 1500, &b));
    back = check_alloc(sizeof(p) + 1);
    CHECK_OK(tensor_piece_decode_seq(t, buf_ptr(&b), buf_used(&b), ref_read,
        &m, back, sizeof(p)));
    CHECK_EQ_MEM(back, p, sizeof(p));
    /* Asked for more or less than the pieces make; for less, the last
     * piece is refused before it writes past the block's end. */
    CHECK_EQ_ERR(tensor_piece_decode_seq(t, buf_ptr(&b), buf_used(&b),
        ref_read, &m, back, sizeof(p) + 1), FERRY_ERR_FORMAT);
    back[sizeof(p) - 1] = 0x6b;
    CHECK_EQ_ERR(tensor_piece_decode_seq(t, buf_ptr(&b), buf_used(&b),
        ref_read, &m, back, sizeof(p) - 1), FERRY_ERR_FORMAT);
    CHECK_EQ_INT(back[sizeof(p) - 1], 0x6b);
    /* An empty sequence makes an empty block only. */
    CHECK_OK(tensor_piece_decode_seq(t, buf_ptr(&b), 0, ref_read, &m, back,
        0));
    free(back);
    buf_cleanup(&b);
    tensor_piece_free(t);
}

/*
 * Hand-made pieces, to break one rule at a time: the fields as given,
 * then each plane (kind, stated length, bytes), then the edge bytes.
 */
struct plane {
    uint8_t kind;
    uint32_t len;          /* as stated */
    const uint8_t *bytes;
    size_t n;              /* as present */
};

static void
craft(struct buf *b, uint8_t mode, uint8_t width, uint8_t lead,
    uint32_t raw, uint64_t ref_off, const struct plane *pl, size_t npl,
    size_t edge)
{
    size_t i;

    buf_init(b, 1u << 20);
    CHECK_OK(buf_put_u8(b, mode));
    CHECK_OK(buf_put_u8(b, width));
    CHECK_OK(buf_put_u8(b, lead));
    CHECK_OK(buf_put_u32(b, raw));
    if (mode != TENSOR_PLAIN)
        CHECK_OK(buf_put_u64(b, ref_off));
    for (i = 0; i < npl; i++) {
        CHECK_OK(buf_put_u8(b, pl[i].kind));
        CHECK_OK(buf_put_u32(b, pl[i].len));
        CHECK_OK(buf_put(b, pl[i].bytes, pl[i].n));
    }
    for (i = 0; i < edge; i++)
        CHECK_OK(buf_put_u8(b, 0x33));
}

/* Decodes the crafted piece into a block of raw bytes. */
static int
try_piece(struct buf *b, size_t raw, tensor_piece_ref_fn *ref, void *arg)
{
    struct tensor_piece *t = tensor_piece_new();
    uint8_t *dst = check_alloc(raw + 1);
    uint8_t *copy = check_dup(buf_ptr(b), buf_used(b));
    int r;

    r = tensor_piece_decode(t, copy, buf_used(b), ref, arg, dst, raw);
    tensor_piece_free(t);
    free(dst);
    free(copy);
    buf_cleanup(b);
    return r;
}

TEST(tensor_piece_refuses_fields)
{
    static const uint8_t z[16];
    struct plane two[2] = { { 0, 8, z, 8 }, { 0, 8, z, 8 } };
    uint8_t ref[64];
    struct ref_mem m = { ref, sizeof(ref), 0 };
    struct buf b;

    memset(ref, 1, sizeof(ref));
    /* The well-formed piece these break: 8 elements of width 2, one lead
     * byte, one tail byte. */
    craft(&b, TENSOR_XOR, 2, 1, 18, 0, two, 2, 2);
    CHECK_OK(try_piece(&b, 18, ref_read, &m));
    craft(&b, TENSOR_PLAIN, 2, 1, 18, 0, two, 2, 2);
    CHECK_OK(try_piece(&b, 18, NULL, NULL));
    /* Past the largest piece, before anything else is looked at. */
    craft(&b, TENSOR_XOR, 2, 1, PROTO_MAX_TENSOR_PIECE + 1, 0, two, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_TOO_LARGE);
    craft(&b, 3, 2, 1, 18, 0, two, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_FORMAT);
    craft(&b, TENSOR_XOR, 3, 1, 18, 0, two, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_FORMAT);
    craft(&b, TENSOR_XOR, 2, 2, 18, 0, two, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_FORMAT);
    /* A lead longer than the piece. */
    craft(&b, TENSOR_PLAIN, 8, 5, 3, 0, NULL, 0, 0);
    CHECK_EQ_ERR(try_piece(&b, 3, NULL, NULL), FERRY_ERR_FORMAT);
    /* Another length than the caller's. */
    craft(&b, TENSOR_XOR, 2, 1, 18, 0, two, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 17, ref_read, &m), FERRY_ERR_FORMAT);
    /* A reference that would end past 2^64. */
    craft(&b, TENSOR_XOR, 2, 1, 18, UINT64_MAX - 17, two, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_FORMAT);
    /* Bytes of the reference it does not have: the reader's refusal. */
    m.reads = 0;
    craft(&b, TENSOR_XOR, 2, 1, 18, 50, two, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_PROTOCOL);
    CHECK_EQ_INT(m.reads, 1);
    /* A piece that needs a reference where there is none. */
    craft(&b, TENSOR_SUB, 2, 1, 18, 0, two, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 18, NULL, NULL), FERRY_ERR_PROTOCOL);
}

TEST(tensor_piece_refuses_planes)
{
    static const uint8_t z[16];
    struct plane pl[2] = { { 0, 8, z, 8 }, { 0, 8, z, 8 } };
    uint8_t ref[256], packed[256];
    struct ref_mem m = { ref, sizeof(ref), 0 };
    struct zst *zs = zst_new();
    size_t plen;
    struct buf b;

    memset(ref, 1, sizeof(ref));
    /* A stored plane shorter than the element count, or longer. */
    pl[1].len = pl[1].n = 7;
    craft(&b, TENSOR_XOR, 2, 1, 18, 0, pl, 2, 2);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_FORMAT);
    pl[1].len = pl[1].n = 9;
    craft(&b, TENSOR_XOR, 2, 1, 18, 0, pl, 2, 1);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_TOO_LARGE);
    /* Stated longer than it is. */
    pl[1].len = 8;
    pl[1].n = 4;
    craft(&b, TENSOR_XOR, 2, 1, 18, 0, pl, 2, 0);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_SHORT);
    /* A plane missing. */
    craft(&b, TENSOR_XOR, 2, 1, 18, 0, pl, 1, 2);
    CHECK_FAILS(try_piece(&b, 18, ref_read, &m));
    /* zstd that inflates to other than the element count: frames of
     * 100 and of 30 zeros for a plane of 64 elements; bytes that are not
     * zstd at all. */
    CHECK(zs != NULL);
    {
        static const uint8_t zeros[100], big[64];
        struct plane wide[2] = { { 0, 64, big, 64 }, { 1, 0, packed, 0 } };
        static const size_t inflate[] = { 100, 30, 64 };
        size_t i;

        for (i = 0; i < 3; i++) {
            CHECK_OK(zst_compress(zs, 1, packed, sizeof(packed), zeros,
                inflate[i], &plen));
            CHECK(plen < 64);
            wide[1].len = wide[1].n = (uint32_t)plen;
            craft(&b, TENSOR_XOR, 2, 0, 128, 0, wide, 2, 0);
            if (inflate[i] == 64)
                CHECK_OK(try_piece(&b, 128, ref_read, &m));
            else
                CHECK_EQ_ERR(try_piece(&b, 128, ref_read, &m),
                    FERRY_ERR_FORMAT);
        }
        /* The good frame (64 zeros) under an unknown kind. */
        wide[1].kind = 2;
        craft(&b, TENSOR_XOR, 2, 0, 128, 0, wide, 2, 0);
        CHECK_EQ_ERR(try_piece(&b, 128, ref_read, &m), FERRY_ERR_FORMAT);
        /* The good frame padded with a skippable frame to the plane's
         * length: zstd would rebuild it, but it would have been stored. */
        wide[1].kind = TENSOR_PLANE_ZSTD;
        memcpy(packed + plen, "\x50\x2a\x4d\x18", 4);
        packed[plen + 4] = (uint8_t)(64 - plen - 8);
        memset(packed + plen + 5, 0, 3 + 64 - plen - 8);
        wide[1].len = wide[1].n = 64;
        craft(&b, TENSOR_XOR, 2, 0, 128, 0, wide, 2, 0);
        CHECK_EQ_ERR(try_piece(&b, 128, ref_read, &m), FERRY_ERR_FORMAT);
        memset(packed, 0x42, 6);
        wide[1].len = wide[1].n = 6;
        craft(&b, TENSOR_XOR, 2, 0, 128, 0, wide, 2, 0);
        CHECK_EQ_ERR(try_piece(&b, 128, ref_read, &m), FERRY_ERR_FORMAT);
    }
    /* Edge bytes missing, or bytes after them. */
    pl[1].kind = 0;
    pl[1].bytes = z;
    pl[1].len = pl[1].n = 8;
    craft(&b, TENSOR_XOR, 2, 1, 18, 0, pl, 2, 1);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_SHORT);
    craft(&b, TENSOR_XOR, 2, 1, 18, 0, pl, 2, 3);
    CHECK_EQ_ERR(try_piece(&b, 18, ref_read, &m), FERRY_ERR_TRAILING);
    zst_free(zs);
}

/* A sequence's own rules: each piece's length within the bound, no
 * piece of nothing, at most PROTO_MAX_TENSOR_PIECES of them. */
TEST(tensor_piece_refuses_seq)
{
    struct tensor_piece *t = tensor_piece_new();
    struct tensor_piece_info info = { TENSOR_PLAIN, 1, 0, 0, 0 };
    uint8_t one = 7, dst[PROTO_MAX_TENSOR_PIECES + 1];
    struct buf b;
    size_t i;

    buf_init(&b, 1u << 20);
    CHECK_OK(buf_put_u32(&b, TENSOR_PIECE_BOUND(PROTO_MAX_TENSOR_PIECE) +
        1));
    CHECK_EQ_ERR(tensor_piece_decode_seq(t, buf_ptr(&b), buf_used(&b), NULL,
        NULL, dst, 1), FERRY_ERR_TOO_LARGE);
    buf_reset(&b);
    CHECK_OK(tensor_piece_put(t, &info, 1, &one, 0, NULL, &b));
    CHECK_OK(tensor_piece_put(t, &info, 1, &one, 1, NULL, &b));
    CHECK_EQ_ERR(tensor_piece_decode_seq(t, buf_ptr(&b), buf_used(&b), NULL,
        NULL, dst, 1), FERRY_ERR_FORMAT);
    buf_reset(&b);
    for (i = 0; i < PROTO_MAX_TENSOR_PIECES; i++)
        CHECK_OK(tensor_piece_put(t, &info, 1, &one, 1, NULL, &b));
    CHECK_OK(tensor_piece_decode_seq(t, buf_ptr(&b), buf_used(&b), NULL,
        NULL, dst, PROTO_MAX_TENSOR_PIECES));
    CHECK_OK(tensor_piece_put(t, &info, 1, &one, 1, NULL, &b));
    CHECK_EQ_ERR(tensor_piece_decode_seq(t, buf_ptr(&b), buf_used(&b), NULL,
        NULL, dst, PROTO_MAX_TENSOR_PIECES + 1), FERRY_ERR_TOO_LARGE);
    buf_cleanup(&b);
    tensor_piece_free(t);
}

/* Cut at every length, a piece fails; flipped at any bit, it fails or
 * makes exactly its length, never more, and a flip in its mode, width or
 * length always fails (a flip elsewhere may make other bytes, which the
 * block's hash catches). */
TEST(tensor_piece_mutate)
{
    struct tensor_piece *t = tensor_piece_new();
    struct tensor_piece_info info = { TENSOR_SUB, 4, 2, 0, 8 };
    uint8_t ref[600], p[500], *copy;
    struct ref_mem m = { ref, sizeof(ref), 0 };
    uint8_t dst[501];
    struct buf b;
    size_t i, bit;
    int r;

    fill(ref, sizeof(ref), 4, RANDOM, NULL);
    fill(p, sizeof(p), 4, NEAR, ref + 8);
    buf_init(&b, 1u << 20);
    CHECK_OK(tensor_piece_encode(t, &info, 1, p, sizeof(p), ref + 8, &b));
    for (i = 0; i < buf_used(&b); i++) {
        copy = check_dup(buf_ptr(&b), i);
        CHECK_FAILS(tensor_piece_decode(t, copy, i, ref_read, &m, dst,
            sizeof(p)));
        free(copy);
    }
    for (bit = 0; bit < 8 * buf_used(&b); bit++) {
        copy = check_dup(buf_ptr(&b), buf_used(&b));
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        dst[sizeof(p)] = 0x77;
        r = tensor_piece_decode(t, copy, buf_used(&b), ref_read, &m, dst,
            sizeof(p));
        CHECK(r != 0 || bit / 8 == 2 || bit / 8 >= 7);
        CHECK_EQ_INT(dst[sizeof(p)], 0x77);
        free(copy);
    }
    buf_cleanup(&b);
    tensor_piece_free(t);
}
