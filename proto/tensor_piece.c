#include "tensor_piece.h"

#include <endian.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/rd.h"
#include "../common/zst.h"

struct tensor_piece {
    struct zst *z;
    uint8_t *planes;       /* the planes of one piece, one after another */
    uint8_t *ref;          /* the reference's bytes of one piece */
    size_t planes_cap, ref_cap;
};

struct tensor_piece *
tensor_piece_new(void)
{
    struct tensor_piece *t = xcalloc(1, sizeof(*t));

    if (t == NULL)
        return NULL;
    if ((t->z = zst_new()) == NULL) {
        xfree(t);
        return NULL;
    }
    return t;
}

void
tensor_piece_free(struct tensor_piece *t)
{
    if (t == NULL)
        return;
    zst_free(t->z);
    xfree(t->planes);
    xfree(t->ref);
    xfree(t);
}

/* Makes *p hold n bytes (n <= PROTO_MAX_TENSOR_PIECE). */
static int
tensor_piece_room(uint8_t **p, size_t *cap, size_t n)
{
    uint8_t *q;

    if ((q = xroom(*p, cap, n)) == NULL)
        return FERRY_ERR_NOMEM;
    *p = q;
    return 0;
}

static int
tensor_piece_width_ok(unsigned w)
{
    return w == 1 || w == 2 || w == 4 || w == 8;
}

/*
 * The transforms, written once for any width and mode and inlined for
 * each (tensor_piece_split and tensor_piece_merge switch to constant
 * arguments), so that the compiler unrolls the byte loops and keeps the
 * mode out of them.
 * Elements are little-endian on every host.
 */
static inline __attribute__((always_inline)) uint64_t
tensor_piece_load(const uint8_t *p, unsigned w)
{
    uint16_t a;
    uint32_t b;
    uint64_t c;

    switch (w) {
    case 1:
        return p[0];
    case 2:
        memcpy(&a, p, 2);
        return le16toh(a);
    case 4:
        memcpy(&b, p, 4);
        return le32toh(b);
    default:
        memcpy(&c, p, 8);
        return le64toh(c);
    }
}

static inline __attribute__((always_inline)) uint64_t
tensor_piece_apply(int mode, uint64_t e, uint64_t r, int undo)
{
    switch (mode) {
    case TENSOR_XOR:
        return e ^ r;
    case TENSOR_SUB:
        return undo ? e + r : e - r;
    default:
        return e;
    }
}

static inline __attribute__((always_inline)) void
tensor_piece_split_w(unsigned w, int mode, const uint8_t *restrict p,
    const uint8_t *restrict ref, size_t nelem, uint8_t *restrict planes)
{
    uint8_t *restrict q0 = planes, *restrict q1 = planes + nelem;
    uint8_t *restrict q2 = planes + 2 * nelem, *restrict q3 = planes +
        3 * nelem;
    size_t i;
    unsigned k;
    uint64_t e;

    for (i = 0; i < nelem; i++) {
        e = tensor_piece_apply(mode, tensor_piece_load(p + i * w, w),
            mode == TENSOR_PLAIN ? 0 : tensor_piece_load(ref + i * w, w), 0);
        q0[i] = (uint8_t)e;
        if (w >= 2)
            q1[i] = (uint8_t)(e >> 8);
        if (w >= 4) {
            q2[i] = (uint8_t)(e >> 16);
            q3[i] = (uint8_t)(e >> 24);
        }
        for (k = 4; k < w; k++)
            planes[k * nelem + i] = (uint8_t)(e >> (8 * k));
    }
}

static inline __attribute__((always_inline)) void
tensor_piece_merge_w(unsigned w, int mode, uint8_t *const *planes,
    const uint8_t *restrict ref, size_t nelem, uint8_t *restrict dst)
{
    const uint8_t *restrict q0 = planes[0], *restrict q1 = planes[w > 1];
    const uint8_t *restrict q2 = planes[w > 2 ? 2 : 0];
    const uint8_t *restrict q3 = planes[w > 3 ? 3 : 0];
    size_t i;
    unsigned k;
    uint64_t e;

    for (i = 0; i < nelem; i++) {
        e = q0[i];
        if (w >= 2)
            e |= (uint64_t)q1[i] << 8;
        if (w >= 4)
            e |= (uint64_t)q2[i] << 16 | (uint64_t)q3[i] << 24;
        for (k = 4; k < w; k++)
            e |= (uint64_t)planes[k][i] << (8 * k);
        e = tensor_piece_apply(mode, e, mode == TENSOR_PLAIN ? 0 :
            tensor_piece_load(ref + i * w, w), 1);
        for (k = 0; k < w; k++)
            dst[i * w + k] = (uint8_t)(e >> (8 * k));
    }
}

/* One case per width and mode, each its own unrolled loop. */
#define TP_CASES(fn, mode, ...)                                              \
    switch (w) {                                                             \
    case 1:                                                                  \
        fn(1, mode, __VA_ARGS__);                                            \
        break;                                                               \
    case 2:                                                                  \
        fn(2, mode, __VA_ARGS__);                                            \
        break;                                                               \
    case 4:                                                                  \
        fn(4, mode, __VA_ARGS__);                                            \
        break;                                                               \
    default:                                                                 \
        fn(8, mode, __VA_ARGS__);                                            \
        break;                                                               \
    }

/* The elements at p (against ref unless PLAIN) as planes: plane k at
 * planes + k * nelem. */
static void
tensor_piece_split(unsigned w, int mode, const uint8_t *p, const uint8_t *ref,
    size_t nelem, uint8_t *planes)
{
    if (mode == TENSOR_XOR) {
        TP_CASES(tensor_piece_split_w, TENSOR_XOR, p, ref, nelem, planes);
    } else if (mode == TENSOR_SUB) {
        TP_CASES(tensor_piece_split_w, TENSOR_SUB, p, ref, nelem, planes);
    } else {
        TP_CASES(tensor_piece_split_w, TENSOR_PLAIN, p, ref, nelem, planes);
    }
}

/* The inverse: element i from byte i of each plane. */
static void
tensor_piece_merge(unsigned w, int mode, uint8_t *const *planes,
    const uint8_t *ref, size_t nelem, uint8_t *dst)
{
    if (mode == TENSOR_XOR) {
        TP_CASES(tensor_piece_merge_w, TENSOR_XOR, planes, ref, nelem, dst);
    } else if (mode == TENSOR_SUB) {
        TP_CASES(tensor_piece_merge_w, TENSOR_SUB, planes, ref, nelem, dst);
    } else {
        TP_CASES(tensor_piece_merge_w, TENSOR_PLAIN, planes, ref, nelem, dst);
    }
}

/*
 * Whether a plane looks like noise: the bytes of its start spread over
 * nearly all 256 values nearly evenly (the low bytes of a mantissa), as
 * a chi-square against the uniform says. zstd finds nothing in such a
 * plane and takes as long to find it as to compress one that shrinks;
 * the test costs a pass over TP_NOISE_SAMPLE bytes. A plane that repeats
 * a stretch of noise would have shrunk and is stored: weights do not
 * repeat so, and stored is always correct.
 */
#define TP_NOISE_SAMPLE 16384u

static int
tensor_piece_noise(const uint8_t *plane, size_t n)
{
    uint32_t count[256];
    double expect, chi = 0, d;
    size_t i;

    if (n < TP_NOISE_SAMPLE)
        return 0;
    memset(count, 0, sizeof(count));
    for (i = 0; i < TP_NOISE_SAMPLE; i++)
        count[plane[i]]++;
    expect = TP_NOISE_SAMPLE / 256.0;
    for (i = 0; i < 256; i++) {
        d = count[i] - expect;
        chi += d * d / expect;
    }
    /* Uniform bytes give about 255, with a spread of about 23. */
    return chi < 400;
}

/* One plane: zstd when that is shorter than the plane, else stored. */
static int
tensor_piece_put_plane(struct tensor_piece *t, int level, const uint8_t *plane,
    size_t nelem, struct buf *out)
{
    uint8_t *q;
    size_t len = 0;
    int r;

    if ((r = buf_reserve(out, TENSOR_PLANE_HEAD + nelem, &q)) != 0)
        return r;
    if (nelem > 1 && !tensor_piece_noise(plane, nelem) &&
        zst_compress(t->z, level, q + TENSOR_PLANE_HEAD, nelem - 1, plane,
        nelem, &len) == 0 && len > 0) {
        q[0] = TENSOR_PLANE_ZSTD;
    } else {
        q[0] = TENSOR_PLANE_STORED;
        len = nelem;
        memcpy(q + TENSOR_PLANE_HEAD, plane, nelem);
    }
    buf_set_u32(q + 1, (uint32_t)len);
    buf_unreserve(out, nelem - len);
    return 0;
}

int
tensor_piece_encode(struct tensor_piece *t,
    const struct tensor_piece_info *info, int level, const uint8_t *p,
    size_t n, const uint8_t *ref, struct buf *out)
{
    unsigned w = info->width, k;
    size_t lead, nelem, tail, start = buf_used(out);
    const uint8_t *eref;
    int r;

    if (info->mode > TENSOR_SUB || !tensor_piece_width_ok(w) ||
        info->lead >= w || n > PROTO_MAX_TENSOR_PIECE ||
        (info->mode != TENSOR_PLAIN && ref == NULL))
        return FERRY_ERR_USAGE;
    lead = info->lead < n ? info->lead : n;
    nelem = (n - lead) / w;
    tail = n - lead - nelem * w;
    eref = info->mode == TENSOR_PLAIN ? NULL : ref + lead;
    if ((r = tensor_piece_room(&t->planes, &t->planes_cap, nelem * w)) != 0)
        return r;
    tensor_piece_split(w, info->mode, p + lead, eref, nelem, t->planes);
    if ((r = buf_put_u8(out, info->mode)) != 0 ||
        (r = buf_put_u8(out, (uint8_t)w)) != 0 ||
        (r = buf_put_u8(out, (uint8_t)lead)) != 0 ||
        (r = buf_put_u32(out, (uint32_t)n)) != 0 ||
        (info->mode != TENSOR_PLAIN &&
        (r = buf_put_u64(out, info->ref_off)) != 0))
        goto fail;
    for (k = 0; k < w; k++)
        if ((r = tensor_piece_put_plane(t, level, t->planes + k * nelem, nelem,
            out)) != 0)
            goto fail;
    if ((r = buf_put(out, p, lead)) != 0 ||
        (r = buf_put(out, p + n - tail, tail)) != 0)
        goto fail;
    return 0;
fail:
    buf_unreserve(out, buf_used(out) - start);
    return r;
}

int
tensor_piece_put(struct tensor_piece *t,
    const struct tensor_piece_info *info, int level, const uint8_t *p,
    size_t n, const uint8_t *ref, struct buf *out)
{
    size_t start = buf_used(out);
    int r;

    if ((r = buf_put_u32(out, 0)) != 0)
        return r;
    if ((r = tensor_piece_encode(t, info, level, p, n, ref, out)) != 0) {
        buf_unreserve(out, 4);
        return r;
    }
    buf_set_u32((uint8_t *)buf_ptr(out) + start,
        (uint32_t)(buf_used(out) - start - 4));
    return 0;
}

static int
tensor_piece_head(struct rd *rd, struct tensor_piece_info *info)
{
    int r;

    memset(info, 0, sizeof(*info));
    if ((r = rd_u8(rd, &info->mode)) != 0 ||
        (r = rd_u8(rd, &info->width)) != 0 ||
        (r = rd_u8(rd, &info->lead)) != 0 ||
        (r = rd_u32(rd, &info->raw)) != 0)
        goto fail;
    if (info->raw > PROTO_MAX_TENSOR_PIECE) {
        r = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    if (info->mode > TENSOR_SUB || !tensor_piece_width_ok(info->width) ||
        info->lead >= info->width || info->lead > info->raw) {
        r = FERRY_ERR_FORMAT;
        goto fail;
    }
    if (info->mode != TENSOR_PLAIN && (r = rd_u64(rd, &info->ref_off)) != 0)
        goto fail;
    if (info->ref_off > UINT64_MAX - info->raw) {
        r = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(info, 0, sizeof(*info));
    return r;
}

int
tensor_piece_peek(const uint8_t *p, size_t n, struct tensor_piece_info *info)
{
    struct rd rd;

    rd_init(&rd, p, n);
    return tensor_piece_head(&rd, info);
}

/* Plane k of the piece: *plane points at its nelem bytes, in the piece
 * when stored, else inflated into the work space at k * nelem. */
static int
tensor_piece_get_plane(struct tensor_piece *t, struct rd *rd, size_t k,
    size_t nelem, uint8_t **plane)
{
    const uint8_t *src;
    uint32_t len;
    uint8_t kind;
    int r;

    if ((r = rd_u8(rd, &kind)) != 0 || (r = rd_u32(rd, &len)) != 0)
        return r;
    if (len > nelem)
        return FERRY_ERR_TOO_LARGE;
    if ((r = rd_bytes(rd, len, &src)) != 0)
        return r;
    if (kind == TENSOR_PLANE_STORED) {
        if (len != nelem)
            return FERRY_ERR_FORMAT;
        *plane = (uint8_t *)src;
        return 0;
    }
    /* zstd only where it made the plane shorter. */
    if (kind != TENSOR_PLANE_ZSTD || len == 0 || len == nelem)
        return FERRY_ERR_FORMAT;
    *plane = t->planes + k * nelem;
    return zst_decompress(t->z, *plane, nelem, src, len);
}

int
tensor_piece_decode(struct tensor_piece *t, const uint8_t *p, size_t n,
    tensor_piece_ref_fn *ref, void *arg, uint8_t *dst, size_t dst_len)
{
    struct tensor_piece_info info;
    uint8_t *planes[8];
    const uint8_t *lead, *tail;
    size_t nelem, ntail, k;
    struct rd rd;
    int r;

    rd_init(&rd, p, n);
    if ((r = tensor_piece_head(&rd, &info)) != 0)
        return r;
    if (info.raw != dst_len)
        return FERRY_ERR_FORMAT;
    nelem = (info.raw - info.lead) / info.width;
    ntail = info.raw - info.lead - nelem * info.width;
    if ((r = tensor_piece_room(&t->planes, &t->planes_cap,
        nelem * info.width)) != 0)
        return r;
    for (k = 0; k < info.width; k++)
        if ((r = tensor_piece_get_plane(t, &rd, k, nelem, &planes[k])) != 0)
            return r;
    if ((r = rd_bytes(&rd, info.lead, &lead)) != 0 ||
        (r = rd_bytes(&rd, ntail, &tail)) != 0 || (r = rd_end(&rd)) != 0)
        return r;
    if (info.mode != TENSOR_PLAIN) {
        /* Read only once the piece is known to be whole. */
        if (ref == NULL)
            return FERRY_ERR_PROTOCOL;
        if ((r = tensor_piece_room(&t->ref, &t->ref_cap, info.raw)) != 0 ||
            (r = ref(arg, info.ref_off, t->ref, info.raw)) != 0)
            return r;
    }
    memcpy(dst, lead, info.lead);
    tensor_piece_merge(info.width, info.mode, planes,
        info.mode == TENSOR_PLAIN ? NULL : t->ref + info.lead, nelem,
        dst + info.lead);
    memcpy(dst + info.raw - ntail, tail, ntail);
    return 0;
}

int
tensor_piece_decode_seq(struct tensor_piece *t, const uint8_t *p, size_t n,
    tensor_piece_ref_fn *ref, void *arg, uint8_t *dst, size_t dst_len)
{
    struct tensor_piece_info info;
    const uint8_t *piece;
    size_t done = 0, count = 0;
    uint32_t len;
    struct rd rd;
    int r;

    rd_init(&rd, p, n);
    while (rd.len > 0) {
        if (++count > PROTO_MAX_TENSOR_PIECES)
            return FERRY_ERR_TOO_LARGE;
        if ((r = rd_u32(&rd, &len)) != 0)
            return r;
        if (len > TENSOR_PIECE_BOUND(PROTO_MAX_TENSOR_PIECE))
            return FERRY_ERR_TOO_LARGE;
        if ((r = rd_bytes(&rd, len, &piece)) != 0 ||
            (r = tensor_piece_peek(piece, len, &info)) != 0)
            return r;
        /* Every piece rebuilds something, and no more than is left. */
        if (info.raw == 0 || info.raw > dst_len - done)
            return FERRY_ERR_FORMAT;
        if ((r = tensor_piece_decode(t, piece, len, ref, arg, dst + done,
            info.raw)) != 0)
            return r;
        done += info.raw;
    }
    return done == dst_len ? 0 : FERRY_ERR_FORMAT;
}
