/*
 * engine/tensor/tensor_codec.c: two versions of a checkpoint, built byte by
 * byte (ckpt_files.c), coded block by block against each other and rebuilt
 * byte for byte: identical tensors, a few changed elements, all changed
 * slightly, tensors added, removed, renamed, reshaped or retyped, the header
 * grown so that every offset moves, no reference, a reference that is not the
 * one coded against, a file that only looks like safetensors, blocks that cut
 * elements, torch storages of unknown width.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/hash.h"
#include "../../engine/tensor/tensor_codec.h"
#include "check.h"
#include "ckpt_files.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t
next(void)
{
    return (uint32_t)(check_rand(&rng) >> 32);
}

/* A weight near zero, as a float's bits (sigma about 0.02). */
static uint32_t
weight(void)
{
    int32_t s = 0;
    float f;
    uint32_t u;
    int i;

    for (i = 0; i < 4; i++)
        s += (int32_t)(next() % 2001) - 1000;
    f = (float)s * 2e-5f;
    memcpy(&u, &f, 4);
    return u;
}

/* Elements of data (bf16 when width 2, fp32 when 4): a weight each. */
static void
weights(uint8_t *p, size_t n, unsigned width)
{
    size_t i;
    uint32_t u;

    for (i = 0; i + width <= n; i += width) {
        u = weight();
        if (width == 2)
            u >>= 16;
        memcpy(p + i, &u, width);
    }
}

/* Every element moved by a step or two of its last bits, as training
 * moves it (some not at all). */
static void
perturb(uint8_t *p, size_t n, unsigned width)
{
    size_t i;

    for (i = 0; i + width <= n; i += width)
        p[i] = (uint8_t)(p[i] + next() % 5 - 2);
}

struct mem {
    const uint8_t *p;
    size_t n;
};

static int
mem_read(void *arg, uint64_t off, uint8_t *dst, size_t n)
{
    const struct mem *m = arg;

    if (off > m->n || n > m->n - off)
        return FERRY_ERR_PROTOCOL;
    memcpy(dst, m->p + off, n);
    return 0;
}

/*
 * Codes new (n bytes) against old (NULL: no reference) in blocks of
 * block bytes, rebuilds every block against old and compares. Returns
 * the bytes coded; st gets the codec's counts.
 */
static uint64_t
code(const uint8_t *old, size_t no, const uint8_t *new, size_t n,
    size_t block, struct tensor_codec_stats *st)
{
    struct tensor_codec_opts o = { 1, TENSOR_CODEC_AUTO, 0 };
    struct tensor_layout lo, ln;
    struct tensor_codec_ref ref;
    struct mem m = { old, no };
    struct tensor_codec *c = tensor_codec_new();
    struct tensor_piece *tp = tensor_piece_new();
    uint8_t *back = check_alloc(block);
    size_t *match = NULL, len;
    uint64_t off, total = 0;
    struct buf out;

    CHECK(c != NULL && tp != NULL);
    memset(st, 0, sizeof(*st));
    CHECK_OK(tensor_layout_mem(new, n, &ln));
    memset(&lo, 0, sizeof(lo));
    if (old != NULL) {
        CHECK_OK(tensor_layout_mem(old, no, &lo));
        CHECK_OK(tensor_layout_pair(&ln, &lo, &match));
    }
    ref.layout = &lo;
    ref.match = match;
    ref.read = mem_read;
    ref.arg = &m;
    buf_init(&out, TENSOR_CODEC_BOUND(block));
    for (off = 0; off < n; off += len) {
        len = n - off < block ? (size_t)(n - off) : block;
        buf_reset(&out);
        CHECK_OK(tensor_codec_block(c, &o, &ln, old ? &ref : NULL, off,
            new + off, len, &out, st));
        CHECK(buf_used(&out) <= TENSOR_CODEC_BOUND(len));
        total += buf_used(&out);
        CHECK_OK(tensor_piece_decode_seq(tp, buf_ptr(&out), buf_used(&out),
            mem_read, &m, back, len));
        CHECK_EQ_MEM(back, new + off, len);
    }
    buf_cleanup(&out);
    xfree(match);
    if (old != NULL)
        tensor_layout_cleanup(&lo);
    tensor_layout_cleanup(&ln);
    tensor_piece_free(tp);
    tensor_codec_free(c);
    free(back);
    return total;
}

/* Four bf16 tensors of 32 KiB each; hdr names them. */
#define BF16_DATA (4u * 32768u)
static const char bf16_hdr[] = "{"
    "\"a\":{\"dtype\":\"BF16\",\"data_offsets\":[0,32768]},"
    "\"b\":{\"dtype\":\"BF16\",\"data_offsets\":[32768,65536]},"
    "\"c\":{\"dtype\":\"BF16\",\"data_offsets\":[65536,98304]},"
    "\"d\":{\"dtype\":\"BF16\",\"data_offsets\":[98304,131072]}}";

TEST(tensor_codec_versions)
{
    struct tensor_codec_stats st, plain;
    uint8_t *data = check_alloc(BF16_DATA), *d2 = check_alloc(BF16_DATA);
    uint8_t *po, *pn;
    size_t no, nn, i;
    uint64_t alone, same, few, all;

    weights(data, BF16_DATA, 2);
    po = ckpt_safetensors(bf16_hdr, 0, data, BF16_DATA, &no);
    /* Without a reference: planes alone, every piece PLAIN. */
    alone = code(NULL, 0, po, no, 1u << 20, &plain);
    CHECK_EQ_U64(plain.pieces[TENSOR_XOR] + plain.pieces[TENSOR_SUB], 0);
    CHECK(alone < no);
    /* Identical: next to nothing. */
    same = code(po, no, po, no, 1u << 20, &st);
    CHECK(same < no / 50);
    CHECK_EQ_U64(st.pieces[TENSOR_XOR] + st.pieces[TENSOR_SUB], 4);
    /* A few elements changed. */
    memcpy(d2, data, BF16_DATA);
    for (i = 0; i < 20; i++)
        d2[next() % BF16_DATA] ^= 0x10;
    pn = ckpt_safetensors(bf16_hdr, 0, d2, BF16_DATA, &nn);
    few = code(po, no, pn, nn, 1u << 20, &st);
    CHECK(few < no / 20);
    free(pn);
    /* Every element moved a little: well under the planes alone. */
    memcpy(d2, data, BF16_DATA);
    perturb(d2, BF16_DATA, 2);
    pn = ckpt_safetensors(bf16_hdr, 0, d2, BF16_DATA, &nn);
    all = code(po, no, pn, nn, 1u << 20, &st);
    CHECK(all < alone * 3 / 4);
    /* The same against the header grown (every offset moves by 1000
     * spaces of padding and a metadata entry): the same pieces. */
    free(po);
    po = ckpt_safetensors(bf16_hdr, 0, data, BF16_DATA, &no);
    {
        static const char grown[] = "{\"__metadata__\":{\"step\":\"2000\"},"
            "\"a\":{\"dtype\":\"BF16\",\"data_offsets\":[0,32768]},"
            "\"b\":{\"dtype\":\"BF16\",\"data_offsets\":[32768,65536]},"
            "\"c\":{\"dtype\":\"BF16\",\"data_offsets\":[65536,98304]},"
            "\"d\":{\"dtype\":\"BF16\",\"data_offsets\":[98304,131072]}}";
        uint64_t moved;

        free(pn);
        pn = ckpt_safetensors(grown, 1000, d2, BF16_DATA, &nn);
        moved = code(po, no, pn, nn, 1u << 20, &st);
        CHECK_EQ_U64(st.pieces[TENSOR_XOR] + st.pieces[TENSOR_SUB], 4);
        CHECK(moved < all + 200);
    }
    free(pn);
    free(po);
    free(data);
    free(d2);
}

/* Tensors added, removed, renamed, reshaped and retyped: those with no
 * tensor of the same name and length in the older version go PLAIN, the
 * others against it, and all of it rebuilds. */
TEST(tensor_codec_changed_tensors)
{
    static const char old_hdr[] = "{"
        "\"keep\":{\"dtype\":\"BF16\",\"data_offsets\":[0,16384]},"
        "\"gone\":{\"dtype\":\"BF16\",\"data_offsets\":[16384,32768]},"
        "\"old_name\":{\"dtype\":\"BF16\",\"data_offsets\":[32768,49152]},"
        "\"reshaped\":{\"dtype\":\"BF16\",\"data_offsets\":[49152,65536]},"
        "\"retyped\":{\"dtype\":\"F32\",\"data_offsets\":[65536,81920]}}";
    static const char new_hdr[] = "{"
        "\"added\":{\"dtype\":\"BF16\",\"data_offsets\":[0,16384]},"
        "\"new_name\":{\"dtype\":\"BF16\",\"data_offsets\":[16384,32768]},"
        "\"reshaped\":{\"dtype\":\"BF16\",\"data_offsets\":[32768,40960]},"
        "\"retyped\":{\"dtype\":\"BF16\",\"data_offsets\":[40960,57344]},"
        "\"keep\":{\"dtype\":\"BF16\",\"data_offsets\":[57344,73728]}}";
    struct tensor_codec_stats st;
    uint8_t *dold = check_alloc(81920), *dnew = check_alloc(73728);
    uint8_t *po, *pn;
    size_t no, nn;

    weights(dold, 81920, 2);
    memcpy(dnew + 57344, dold, 16384);
    perturb(dnew + 57344, 16384, 2);
    weights(dnew, 57344, 2);
    memcpy(dnew + 40960, dold + 65536, 16384);
    po = ckpt_safetensors(old_hdr, 0, dold, 81920, &no);
    pn = ckpt_safetensors(new_hdr, 0, dnew, 73728, &nn);
    code(po, no, pn, nn, 1u << 20, &st);
    /* keep and retyped against the old; the header, added, new_name and
     * reshaped alone. */
    CHECK_EQ_U64(st.pieces[TENSOR_XOR] + st.pieces[TENSOR_SUB], 2);
    CHECK_EQ_U64(st.pieces[TENSOR_PLAIN], 4);
    /* The retyped tensor's bytes are the old ones: nothing to send. */
    CHECK(st.coded[TENSOR_XOR] + st.coded[TENSOR_SUB] < 16384);
    free(po);
    free(pn);
    free(dold);
    free(dnew);
}

/* Blocks that cut elements in two (an odd block size) keep the element
 * grid: the first whole element of every piece of a tensor is where the
 * tensor's elements are (its lead), so a SUB piece subtracts elements,
 * not bytes of two; identical tensors still cost next to nothing. */
TEST(tensor_codec_odd_blocks)
{
    struct tensor_codec_opts o = { 1, TENSOR_SUB, 0 };
    struct tensor_codec *c = tensor_codec_new();
    struct tensor_piece_info info;
    struct tensor_codec_stats st;
    struct tensor_layout l;
    uint8_t *data = check_alloc(BF16_DATA), *po;
    const uint8_t *q;
    uint64_t off, at, data_start = 8 + sizeof(bf16_hdr) - 1;
    size_t no, len, plen, left, checked = 0;
    struct buf out;

    weights(data, BF16_DATA, 2);
    po = ckpt_safetensors(bf16_hdr, 0, data, BF16_DATA, &no);
    CHECK(code(po, no, po, no, 4099, &st) < no / 20);
    CHECK_EQ_U64(st.wide[1], st.pieces[TENSOR_PLAIN]);
    CHECK(st.wide[2] > 30);
    CHECK_OK(tensor_layout_mem(po, no, &l));
    buf_init(&out, TENSOR_CODEC_BOUND(4099));
    for (off = 0; off < no; off += len) {
        len = no - off < 4099 ? (size_t)(no - off) : 4099;
        buf_reset(&out);
        CHECK_OK(tensor_codec_block(c, &o, &l, NULL, off, po + off, len,
            &out, NULL));
        for (q = buf_ptr(&out), left = buf_used(&out), at = off; left > 0;
            q += 4 + plen, left -= 4 + plen, at += info.raw) {
            plen = (size_t)q[0] << 24 | (size_t)q[1] << 16 |
                (size_t)q[2] << 8 | q[3];
            CHECK_OK(tensor_piece_peek(q + 4, plen, &info));
            if (info.width != 2)
                continue;
            CHECK_EQ_U64((at + info.lead - data_start) % 2, 0);
            checked++;
        }
    }
    CHECK(checked > 30);
    buf_cleanup(&out);
    tensor_layout_cleanup(&l);
    tensor_codec_free(c);
    free(po);
    free(data);
}

/* torch.save storages of fp32 weights: the width found is 4 (bf16 ones
 * come out alike at 2 and 4: planes of alternate elements are planes of
 * the same bytes). */
TEST(tensor_codec_torch_width)
{
    struct ckpt_member m[] = {
        { "archive/data.pkl", NULL, 300, 0 },
        { "archive/data/0", NULL, 65536, 0 },
        { "archive/data/1", NULL, 65536, 0 },
        { "archive/version", NULL, 2, 0 },
    };
    uint8_t *a = check_alloc(65536), *b = check_alloc(65536);
    uint8_t *a2 = check_alloc(65536), *b2 = check_alloc(65536);
    struct tensor_codec_stats st;
    uint8_t *po, *pn;
    size_t no, nn;

    weights(a, 65536, 4);
    weights(b, 65536, 4);
    memcpy(a2, a, 65536);
    memcpy(b2, b, 65536);
    perturb(a2, 65536, 4);
    perturb(b2, 65536, 4);
    m[1].data = a;
    m[2].data = b;
    po = ckpt_zip(m, 4, 0, &no);
    m[1].data = a2;
    m[2].data = b2;
    pn = ckpt_zip(m, 4, 0, &nn);
    code(po, no, pn, nn, 1u << 20, &st);
    CHECK_EQ_U64(st.wide[4], 2);
    CHECK_EQ_U64(st.wide[2], 0);
    /* Without the older save too. */
    code(NULL, 0, pn, nn, 1u << 20, &st);
    CHECK_EQ_U64(st.wide[4], 2);
    CHECK_EQ_U64(st.wide[2], 0);
    free(po);
    free(pn);
    free(a);
    free(b);
    free(a2);
    free(b2);
}

/* A file that only looks like safetensors is one PLAIN piece a block. */
TEST(tensor_codec_lookalike)
{
    struct tensor_codec_stats st;
    uint8_t *p;
    size_t n;

    p = ckpt_safetensors(bf16_hdr, 0, NULL, BF16_DATA - 1, &n);
    code(p, n, p, n, 65536, &st);
    CHECK_EQ_U64(st.pieces[TENSOR_PLAIN], (n + 65535) / 65536);
    CHECK_EQ_U64(st.pieces[TENSOR_XOR] + st.pieces[TENSOR_SUB], 0);
    free(p);
}

/* A block of more tiny tensors than a sequence may hold: its rest goes
 * as one PLAIN piece. */
TEST(tensor_codec_many_tensors)
{
    size_t count = PROTO_MAX_TENSOR_PIECES + 100, i, h = 0, n;
    char *hdr = check_alloc(count * 64 + 16);
    struct tensor_codec_stats st;
    uint8_t *p;

    hdr[h++] = '{';
    for (i = 0; i < count; i++)
        h += (size_t)sprintf(hdr + h, "%s\"t%zu\":{\"dtype\":\"BF16\","
            "\"data_offsets\":[%zu,%zu]}", i ? "," : "", i, 2 * i,
            2 * i + 2);
    hdr[h++] = '}';
    hdr[h] = '\0';
    p = ckpt_safetensors(hdr, 0, NULL, 2 * count, &n);
    /* One block from inside the header to the end. */
    code(p, n, p + 0, n, n > PROTO_MAX_TENSOR_PIECE ?
        PROTO_MAX_TENSOR_PIECE : n, &st);
    CHECK_EQ_U64(st.pieces[0] + st.pieces[1] + st.pieces[2],
        PROTO_MAX_TENSOR_PIECES);
    free(p);
    free(hdr);
}

/*
 * The basis the receiver rebuilds against must be the one the sender
 * coded against: another one (its hash said otherwise) rebuilds other
 * bytes, which the block's hash tells, and a shorter one is refused when
 * a piece reads past its end (tensor_codec_read_file), as is a file that
 * shrank under the reader.
 */
TEST(tensor_codec_wrong_basis)
{
    struct tensor_codec_opts o = { 1, TENSOR_CODEC_AUTO, 0 };
    uint8_t *data = check_alloc(BF16_DATA), *po, *pn, *other, *back;
    struct tensor_layout lo, ln;
    struct tensor_codec_ref ref;
    struct tensor_codec_file f;
    struct tensor_codec *c = tensor_codec_new();
    struct tensor_piece *tp = tensor_piece_new();
    struct hash128 want, got;
    struct mem m;
    char dir[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 16];
    size_t no, nn, *match;
    struct buf out;
    int fd;

    weights(data, BF16_DATA, 2);
    po = ckpt_safetensors(bf16_hdr, 0, data, BF16_DATA, &no);
    perturb(data, BF16_DATA, 2);
    pn = ckpt_safetensors(bf16_hdr, 0, data, BF16_DATA, &nn);
    weights(data, BF16_DATA, 2);
    other = ckpt_safetensors(bf16_hdr, 0, data, BF16_DATA, &no);
    CHECK_OK(tensor_layout_mem(po, no, &lo));
    CHECK_OK(tensor_layout_mem(pn, nn, &ln));
    CHECK_OK(tensor_layout_pair(&ln, &lo, &match));
    m.p = po;
    m.n = no;
    ref.layout = &lo;
    ref.match = match;
    ref.read = mem_read;
    ref.arg = &m;
    buf_init(&out, TENSOR_CODEC_BOUND(nn));
    CHECK_OK(tensor_codec_block(c, &o, &ln, &ref, 0, pn, nn, &out, NULL));
    back = check_alloc(nn);
    hash_block(pn, nn, &want);
    m.p = other;
    CHECK_OK(tensor_piece_decode_seq(tp, buf_ptr(&out), buf_used(&out),
        mem_read, &m, back, nn));
    hash_block(back, nn, &got);
    CHECK(!hash_equal(&want, &got));
    /* From a file: the basis as written, then cut short. */
    check_tmpdir(dir);
    snprintf(path, sizeof(path), "%s/basis", dir);
    check_write_file(path, po, no, 0);
    CHECK((fd = open(path, O_RDONLY)) >= 0);
    f.fd = fd;
    f.size = no;
    CHECK_OK(tensor_piece_decode_seq(tp, buf_ptr(&out), buf_used(&out),
        tensor_codec_read_file, &f, back, nn));
    CHECK_EQ_MEM(back, pn, nn);
    f.size = no / 2;
    CHECK_EQ_ERR(tensor_piece_decode_seq(tp, buf_ptr(&out), buf_used(&out),
        tensor_codec_read_file, &f, back, nn), FERRY_ERR_PROTOCOL);
    close(fd);
    CHECK_EQ_INT(truncate(path, 0), 0);
    CHECK((fd = open(path, O_RDONLY)) >= 0);
    f.fd = fd;
    f.size = no;
    CHECK_EQ_ERR(tensor_piece_decode_seq(tp, buf_ptr(&out), buf_used(&out),
        tensor_codec_read_file, &f, back, nn), FERRY_ERR_CHANGED);
    close(fd);
    check_rmtree(dir);
    buf_cleanup(&out);
    xfree(match);
    tensor_layout_cleanup(&lo);
    tensor_layout_cleanup(&ln);
    tensor_piece_free(tp);
    tensor_codec_free(c);
    free(back);
    free(po);
    free(pn);
    free(other);
    free(data);
}

/* Arguments out of range are the caller's error. */
TEST(tensor_codec_usage)
{
    struct tensor_codec_opts o = { 1, TENSOR_CODEC_AUTO, 0 };
    struct tensor_codec *c = tensor_codec_new();
    struct tensor_layout l;
    struct buf out;
    uint8_t *p;
    size_t n;

    p = ckpt_safetensors(bf16_hdr, 0, NULL, BF16_DATA, &n);
    CHECK_OK(tensor_layout_mem(p, n, &l));
    buf_init(&out, 1u << 20);
    CHECK_EQ_ERR(tensor_codec_block(c, &o, &l, NULL, 1, p, n, &out, NULL),
        FERRY_ERR_USAGE);
    o.width = 3;
    CHECK_EQ_ERR(tensor_codec_block(c, &o, &l, NULL, 0, p, n, &out, NULL),
        FERRY_ERR_USAGE);
    o.width = 0;
    o.mode = TENSOR_PLAIN;
    CHECK_EQ_ERR(tensor_codec_block(c, &o, &l, NULL, 0, p, n, &out, NULL),
        FERRY_ERR_USAGE);
    buf_cleanup(&out);
    tensor_layout_cleanup(&l);
    tensor_codec_free(c);
    free(p);
}
