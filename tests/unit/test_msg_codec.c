/*
 * Tests for the field codecs (proto/msg_int.h): msg_codec_of matches the
 * codec column of msg_table.h, and every decoder made from a list of
 * fields refuses what it must, from each seed of its type: a frame cut
 * short (SHORT), a byte more (TRAILING), each string one byte over its
 * bound (TOO_LARGE; the encoder says USAGE or, for text, cuts), a wrong
 * magic (FORMAT), and the rows below for what each check refuses. A
 * message added to the table with codec F gets the generic rows without
 * a line here.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/buf.h"
#include "../../proto/frame.h"
#include "../../proto/msg.h"
#include "../../proto/msg_int.h"
#include "../../proto/msg_keep.h"
#include "../../proto/msg_space.h"
#include "../../proto/msg_vol.h"
#include "../fuzz/fuzz_common.h"
#include "../fuzz/fuzz_seed.h"
#include "check.h"

#define CODEC_BUF_MAX (2 * (PROTO_FRAME_HEADER + PROTO_MAX_FRAME))

/* Room for any struct a codec decodes into. */
union codec_msg {
    uint64_t align;
    void *ptr;
    uint8_t b[256];
};

static const char codec_column[MSG_TYPE_MAX + 1] = {
#define CODEC_COLUMN(num, NAME, name, dir, stream0, cap, codec)              \
    [num] = #codec[0],
    MSG_TABLE(CODEC_COLUMN)
#undef CODEC_COLUMN
};

/* Seed i of type, decoded by its codec into *m; the payload, which m's
 * byte fields borrow, is returned (the caller frees it). */
static uint8_t *
seed_decoded(const struct msg_codec *c, size_t i, union codec_msg *m,
    size_t *n)
{
    struct frame f;
    struct buf b;
    uint8_t *p;
    size_t used;

    buf_init(&b, CODEC_BUF_MAX);
    CHECK_OK(fuzz_seed(c->type, i, &b));
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    p = check_dup(f.payload, f.len);
    *n = f.len;
    buf_cleanup(&b);
    CHECK(c->size <= sizeof(*m));
    CHECK_OK(msg_codec_decode(c, p, *n, m));
    return p;
}

/* A string of f one byte past its bound, of 'x's. */
static void
put_over(struct buf *b, const struct msg_field *f)
{
    size_t n = (size_t)f->arg + 1;
    char *xs = check_alloc(n);

    memset(xs, 'x', n);
    if (f->kind == MSG_F_BLOB)
        CHECK_OK(buf_put_str32(b, xs, n));
    else
        CHECK_OK(buf_put_str16(b, xs, n));
    free(xs);
}

/*
 * Writes m's fields into b as the codec would, without its bounds or its
 * check, so that a row can build what a hostile peer sends. Field over
 * (or none: c->nfields) goes one byte past its bound, of 'x's. An ARRAY
 * is its count of zero elements.
 */
static void
raw_payload(struct buf *b, const struct msg_codec *c, const uint8_t *m,
    size_t over)
{
    const struct msg_field *f;
    const struct msg_str *s;
    uint8_t *q;
    size_t i, len;

    for (i = 0; i < c->nfields; i++) {
        f = &c->fields[i];
        switch (f->kind) {
        case MSG_F_U8:
            CHECK_OK(buf_put_u8(b, m[f->off]));
            break;
        case MSG_F_U16:
            CHECK_OK(buf_put_u16(b, *(const uint16_t *)(m + f->off)));
            break;
        case MSG_F_U32:
            CHECK_OK(buf_put_u32(b, *(const uint32_t *)(m + f->off)));
            break;
        case MSG_F_U64:
            CHECK_OK(buf_put_u64(b, *(const uint64_t *)(m + f->off)));
            break;
        case MSG_F_BYTES:
            CHECK_OK(buf_put(b, m + f->off, f->arg));
            break;
        case MSG_F_MAGIC:
            CHECK_OK(buf_put(b, PROTO_MAGIC, 4));
            break;
        case MSG_F_ARRAY:
            if (f->gate != 0 && (m[f->gate_off] & f->gate) == 0)
                break;
            len = (size_t)*(const uint32_t *)(m + f->off2) * f->arg;
            CHECK_OK(buf_reserve(b, len, &q));
            memset(q, 0, len);
            break;
        case MSG_F_BLOB:
            if (i == over)
                put_over(b, f);
            else
                CHECK_OK(buf_put_str32(b,
                    *(const uint8_t *const *)(m + f->off),
                    *(const size_t *)(m + f->off2)));
            break;
        default:
            s = (const struct msg_str *)(m + f->off);
            if (i == over)
                put_over(b, f);
            else
                CHECK_OK(buf_put_str16(b, s->p, s->len));
            break;
        }
    }
}

/* Decodes (p, n) with the type's decoder through fuzz_decode, from a copy
 * of exactly n bytes (which also checks that a failure left every field
 * zero), and returns its result. */
static int
codec_decode_copy(const struct msg_codec *c, const uint8_t *p, size_t n)
{
    uint8_t *copy = check_dup(p, n);
    const char *why;
    int r;

    if ((why = fuzz_decode(c->type, copy, n, &r)) != NULL)
        check_fail(__FILE__, __LINE__, "%s", why);
    free(copy);
    return r;
}

TEST(msg_codec_table)
{
    const struct msg_codec *c;
    unsigned t;
    size_t i;

    for (t = 0; t <= 255; t++) {
        check_note("type %u", t);
        c = msg_codec_of((uint8_t)t);
        CHECK_EQ_INT(c != NULL, t <= MSG_TYPE_MAX && codec_column[t] == 'F');
        if (c == NULL)
            continue;
        CHECK_EQ_INT(c->type, t);
        CHECK(c->nfields > 0);
        CHECK(!c->strict || c->check != NULL);
        /* An array's encoder trusts the strict check with its count; it
         * comes last, as its bytes run to the end. */
        for (i = 0; i < c->nfields; i++)
            if (c->fields[i].kind == MSG_F_ARRAY)
                CHECK(c->strict && i == c->nfields - 1);
    }
    check_note_clear();
}

/* The generic rows of one seed. */
static void
codec_refusals(const struct msg_codec *c, size_t seed)
{
    union codec_msg m, big;
    const struct msg_field *f;
    struct msg_str *s;
    struct buf b;
    size_t n, len, i;
    uint8_t *p, *q;

    p = seed_decoded(c, seed, &m, &n);
    for (len = 0; len < n; len++) {
        check_note("%s seed %zu cut to %zu of %zu", msg_type_name(c->type),
            seed, len, n);
        CHECK_EQ_ERR(codec_decode_copy(c, p, len), FERRY_ERR_SHORT);
    }
    check_note("%s seed %zu with a byte more", msg_type_name(c->type), seed);
    q = check_alloc(n + 1);
    memcpy(q, p, n);
    q[n] = 0;
    CHECK_EQ_ERR(codec_decode_copy(c, q, n + 1), FERRY_ERR_TRAILING);
    free(q);
    for (i = 0; i < c->nfields; i++) {
        f = &c->fields[i];
        check_note("%s seed %zu field %zu", msg_type_name(c->type), seed, i);
        buf_init(&b, CODEC_BUF_MAX);
        if (f->kind == MSG_F_MAGIC) {
            raw_payload(&b, c, m.b, c->nfields);
            q = check_dup(buf_ptr(&b), buf_used(&b));
            q[0] ^= 0x20;
            CHECK_EQ_ERR(codec_decode_copy(c, q, buf_used(&b)),
                FERRY_ERR_FORMAT);
            free(q);
        } else if (f->kind == MSG_F_STR || f->kind == MSG_F_TEXT ||
            f->kind == MSG_F_BLOB) {
            /* A str16 cannot say more than 65535. */
            if (f->kind != MSG_F_BLOB && f->arg >= UINT16_MAX) {
                buf_cleanup(&b);
                continue;
            }
            raw_payload(&b, c, m.b, i);
            CHECK_EQ_ERR(codec_decode_copy(c, buf_ptr(&b), buf_used(&b)),
                FERRY_ERR_TOO_LARGE);
            /* The encoder: USAGE for a string it may not send, with b as
             * it was; text it cuts to what the decoder takes. */
            buf_cleanup(&b);
            buf_init(&b, CODEC_BUF_MAX);
            big = m;
            q = check_alloc((size_t)f->arg + 1);
            memset(q, 'x', (size_t)f->arg + 1);
            if (f->kind == MSG_F_BLOB) {
                *(const uint8_t **)(big.b + f->off) = q;
                *(size_t *)(big.b + f->off2) = (size_t)f->arg + 1;
            } else {
                s = (struct msg_str *)(big.b + f->off);
                s->p = (const char *)q;
                s->len = (size_t)f->arg + 1;
            }
            if (f->kind == MSG_F_TEXT) {
                CHECK_OK(msg_codec_encode(&b, c, &big));
                CHECK_EQ_U64(buf_used(&b), PROTO_FRAME_HEADER + n -
                    ((const struct msg_str *)(m.b + f->off))->len + f->arg);
            } else {
                CHECK_EQ_ERR(msg_codec_encode(&b, c, &big), FERRY_ERR_USAGE);
                CHECK_EQ_U64(buf_used(&b), 0);
            }
            free(q);
        }
        buf_cleanup(&b);
    }
    check_note_clear();
    free(p);
}

TEST(msg_codec_refusals)
{
    const struct msg_codec *c;
    size_t i;
    unsigned t;

    for (t = 1; t <= MSG_TYPE_MAX; t++) {
        if ((c = msg_codec_of((uint8_t)t)) == NULL)
            continue;
        CHECK(fuzz_seed_count(c->type) > 0);
        for (i = 0; i < fuzz_seed_count(c->type); i++)
            codec_refusals(c, i);
    }
}

/*
 * What each check refuses, a row per number it bounds (the paths are
 * fsx_path_check's, tested there): seed 0 of type with the member at off (a
 * field's, or a BLOB's length, which may only shrink) set to v decodes
 * to want, and a strict encoder refuses it with USAGE.
 */
struct codec_row {
    uint8_t type;
    uint16_t off;
    uint64_t v;
    int want;
};

#define ROW(T, name, member, v, want)                                        \
    { MSG_##T, offsetof(struct msg_##name, member), v, FERRY_ERR_##want }

static const struct codec_row codec_rows[] = {
    ROW(HELLO, hello, version_min, 0, FORMAT),
    ROW(HELLO, hello, version_min, UINT16_MAX, FORMAT),
    ROW(PROBE, probe, ask, PROTO_MAX_PROBE_ASK + 1, TOO_LARGE),
    ROW(KEEP_MAN, keep_man, offset, PROTO_MAX_KEEP_MANIFEST, TOO_LARGE),
    ROW(KEEP_MAN, keep_man, len, 0, FORMAT),
    ROW(VOL_DATA, vol_data, volume, 0, FORMAT),
    ROW(VOL_DATA, vol_data, len, 0, FORMAT),
    ROW(DELTA_SIGS, delta_sigs, count, PROTO_MAX_SIGS + 1, TOO_LARGE),
    ROW(DELTA_SIGS, delta_sigs, count, 0, FORMAT),
    ROW(DELTA_SIGS, delta_sigs, basis_size, 0, FORMAT),
    ROW(DELTA_SIGS, delta_sigs, basis_size, (uint64_t)INT64_MAX + 1, FORMAT),
    ROW(DELTA_SIGS, delta_sigs, sig_block, PROTO_MIN_SIG_BLOCK / 2, FORMAT),
    ROW(DELTA_SIGS, delta_sigs, sig_block, PROTO_MAX_BLOCK * 2, FORMAT),
    ROW(DELTA_SIGS, delta_sigs, sig_block, PROTO_MIN_SIG_BLOCK + 1, FORMAT),
    ROW(DELTA_SIGS, delta_sigs, first, UINT64_MAX, FORMAT),
    ROW(SIGS, sigs, count, PROTO_MAX_SIGS + 1, TOO_LARGE),
    ROW(SIGS, sigs, count, 0, FORMAT),
    ROW(SIGS, sigs, flags, 1u << 1, FORMAT),
    ROW(SIGS, sigs, first, UINT64_MAX, FORMAT),
    ROW(DELTA_BLOCKS, delta_blocks, count, PROTO_MAX_SIGS + 1, TOO_LARGE),
    ROW(DELTA_BLOCKS, delta_blocks, count, 0, FORMAT),
    ROW(DELTA_BLOCKS, delta_blocks, block_size, PROTO_MIN_BLOCK - 1, FORMAT),
    ROW(DELTA_BLOCKS, delta_blocks, block_size, PROTO_MAX_BLOCK + 1, FORMAT),
    ROW(DELTA_BLOCKS, delta_blocks, first,
        (uint64_t)INT64_MAX / PROTO_MIN_BLOCK + 1, FORMAT),
    ROW(SPACE, space, avail, UINT64_MAX, FORMAT),
    ROW(PLAN, plan, flags, 1u << 7, FORMAT),
    ROW(PLAN, plan, files_total, 11, FORMAT),
    ROW(PLAN, plan, flags, PLAN_F_SINGLE_FILE, FORMAT),
    ROW(PLAN, plan, flags, PLAN_F_LIVE, FORMAT),
    ROW(TOTALS, totals, files_total, 1000001, FORMAT),
    ROW(PARTIAL, partial, done, (10u << 20) + 1, FORMAT),
    ROW(PARTIAL, partial, age_s, UINT64_MAX, FORMAT),
    ROW(JOIN, join, stream, 0, FORMAT),
    ROW(JOIN, join, stream, PROTO_MAX_STREAMS, FORMAT),
    ROW(RETIRE, retire, stream, 0, FORMAT),
    ROW(RETIRE, retire, stream, PROTO_MAX_STREAMS, FORMAT),
    ROW(REPLY, reply, action, 0, FORMAT),
    ROW(REPLY, reply, action, REPLY_FAIL + 1, FORMAT),
    ROW(REPLY, reply, action, REPLY_FAIL, FORMAT),
    ROW(REPLY, reply, flags, REPLY_F_RESUME, FORMAT),
    ROW(REPLY, reply, code, 1, FORMAT),
    ROW(MATCH, match, count, PROTO_MAX_SIGS + 1, TOO_LARGE),
    ROW(MATCH, match, count, 0, FORMAT),
    ROW(MATCH, match, first, UINT64_MAX, FORMAT),
    ROW(VOL_OPTS, vol_opts, threshold, PROTO_MAX_PACK_THRESHOLD + 1,
        TOO_LARGE),
    ROW(VOL_OPTS, vol_opts, volume_size, PROTO_MAX_VOLUME_SIZE + 1,
        TOO_LARGE),
    ROW(VOL_OPTS, vol_opts, volume_size, PROTO_MIN_VOLUME_SIZE - 1, FORMAT),
    ROW(VOL_OPTS, vol_opts, compress, VOL_COMPRESS_LEVEL + 1, FORMAT),
    ROW(VOL_OPTS, vol_opts, compress, VOL_COMPRESS_LEVEL, FORMAT),
    ROW(VOL_OPTS, vol_opts, level, 1, FORMAT),
    ROW(VOL_BEGIN, vol_begin, volume, 0, FORMAT),
    ROW(VOL_FILE, vol_file, volume, 0, FORMAT),
    ROW(VOL_END, vol_end, files, PROTO_MAX_VOLUME_FILES + 1, TOO_LARGE),
    ROW(VOL_END, vol_end, bytes, PROTO_MAX_VOLUME_SIZE + 1, TOO_LARGE),
    ROW(VOL_END, vol_end, volume, 0, FORMAT),
    ROW(KEEP_VOL, keep_vol, volume, PROTO_MAX_KEEP_VOLUMES + 1, TOO_LARGE),
    ROW(KEEP_VOL, keep_vol, bytes, PROTO_MAX_VOLUME_SIZE + 1, TOO_LARGE),
    ROW(KEEP_VOL, keep_vol, volume, 0, FORMAT),
    ROW(KEEP_DONE, keep_done, volumes, PROTO_MAX_KEEP_VOLUMES + 1,
        TOO_LARGE),
    ROW(KEEP_DONE, keep_done, manifest_bytes, PROTO_MAX_KEEP_MANIFEST + 1,
        TOO_LARGE),
    ROW(KEEP_DONE, keep_done, volumes, 0, FORMAT),
    ROW(BASIS, basis, basis_size, 0, FORMAT),
    ROW(BASIS, basis, basis_size, (uint64_t)INT64_MAX + 1, FORMAT),
};

#undef ROW

/* Sets the member at off of m (its width from the codec) to v. */
static void
codec_set(const struct msg_codec *c, uint8_t *m, uint16_t off, uint64_t v)
{
    const struct msg_field *f;

    for (f = c->fields; f < c->fields + c->nfields; f++) {
        if (f->kind == MSG_F_BLOB && f->off2 == off) {
            CHECK(v <= *(size_t *)(m + off));
            *(size_t *)(m + off) = (size_t)v;
            return;
        }
        if (f->off != off || f->kind == MSG_F_MAGIC)
            continue;
        switch (f->kind) {
        case MSG_F_U8:
            m[off] = (uint8_t)v;
            return;
        case MSG_F_U16:
            *(uint16_t *)(m + off) = (uint16_t)v;
            return;
        case MSG_F_U32:
            *(uint32_t *)(m + off) = (uint32_t)v;
            return;
        case MSG_F_U64:
            *(uint64_t *)(m + off) = v;
            return;
        }
    }
    check_fail(__FILE__, __LINE__, "no number at offset %u", off);
}

TEST(msg_codec_checks)
{
    const struct codec_row *row;
    const struct msg_codec *c;
    union codec_msg m;
    struct buf b;
    uint8_t *p;
    size_t n;

    for (row = codec_rows; row < codec_rows + sizeof(codec_rows) /
        sizeof(codec_rows[0]); row++) {
        check_note("%s row %zu", msg_type_name(row->type),
            (size_t)(row - codec_rows));
        CHECK((c = msg_codec_of(row->type)) != NULL);
        p = seed_decoded(c, 0, &m, &n);
        codec_set(c, m.b, row->off, row->v);
        buf_init(&b, CODEC_BUF_MAX);
        raw_payload(&b, c, m.b, c->nfields);
        CHECK_EQ_ERR(codec_decode_copy(c, buf_ptr(&b), buf_used(&b)),
            row->want);
        buf_cleanup(&b);
        if (c->strict) {
            buf_init(&b, CODEC_BUF_MAX);
            CHECK_EQ_ERR(msg_codec_encode(&b, c, &m), FERRY_ERR_USAGE);
            CHECK_EQ_U64(buf_used(&b), 0);
            buf_cleanup(&b);
        }
        free(p);
    }
    check_note_clear();
}

/*
 * DELTA's ops, which its own decoder reads (not a list of fields): each
 * row is a payload made by hand, whole but for what the row breaks, so
 * that it would decode were the check that refuses it to pass.
 */
struct delta_op_row {
    uint8_t kind;
    uint32_t len;
    uint64_t from;            /* COPY */
    uint32_t present;         /* LITERAL: bytes that follow */
};

static const struct {
    const char *name;
    uint64_t offset;
    uint32_t raw_len;
    uint16_t nops;
    struct delta_op_row op[2];
    int want;
} delta_rows[] = {
    { "good", 0, 8, 2, { { DELTA_OP_LITERAL, 3, 0, 3 },
      { DELTA_OP_COPY, 5, 4096, 0 } }, 0 },
    /* An empty op reads nothing more; the op after it makes the sum. */
    { "empty op", 0, 4, 2, { { DELTA_OP_LITERAL, 0, 0, 0 },
      { DELTA_OP_LITERAL, 4, 0, 4 } }, FERRY_ERR_FORMAT },
    /* Malformed by its length alone, not a message cut short. */
    { "op longer than a block", 0, PROTO_MAX_BLOCK, 1,
      { { DELTA_OP_LITERAL, PROTO_MAX_BLOCK + 1, 0, 0 } }, FERRY_ERR_FORMAT },
    /* An unknown kind, its length the whole, and nothing after it. */
    { "unknown kind", 0, 4, 1, { { 7, 4, 0, 0 } }, FERRY_ERR_FORMAT },
    { "copy past 2^63", 0, 4, 1,
      { { DELTA_OP_COPY, 4, (uint64_t)INT64_MAX - 3, 0 } },
      FERRY_ERR_FORMAT },
    { "sum short of raw_len", 0, 5, 1, { { DELTA_OP_LITERAL, 4, 0, 4 } },
      FERRY_ERR_FORMAT },
    { "literal cut short", 0, 4, 1, { { DELTA_OP_LITERAL, 4, 0, 3 } },
      FERRY_ERR_SHORT },
    { "no ops", 0, 4, 0, { { 0 } }, FERRY_ERR_FORMAT },
    { "ends past 2^63", (uint64_t)INT64_MAX - 3, 4, 1,
      { { DELTA_OP_LITERAL, 4, 0, 4 } }, FERRY_ERR_FORMAT },
    { "raw_len over a block", 0, PROTO_MAX_BLOCK + 1, 1,
      { { DELTA_OP_LITERAL, 4, 0, 4 } }, FERRY_ERR_TOO_LARGE },
};

TEST(msg_codec_delta_ops)
{
    const struct delta_op_row *o;
    struct msg_delta_op op;
    struct msg_delta m;
    struct hash128 h;
    struct buf b;
    uint8_t *p;
    size_t i, k, pos;

    memset(&h, 0, sizeof(h));
    for (i = 0; i < sizeof(delta_rows) / sizeof(delta_rows[0]); i++) {
        check_note("%s", delta_rows[i].name);
        buf_init(&b, CODEC_BUF_MAX);
        CHECK_OK(buf_put_u32(&b, 1));
        CHECK_OK(buf_put_u64(&b, delta_rows[i].offset));
        CHECK_OK(buf_put_u32(&b, delta_rows[i].raw_len));
        CHECK_OK(msg_put_hash(&b, &h));
        CHECK_OK(buf_put_u16(&b, delta_rows[i].nops));
        for (k = 0; k < delta_rows[i].nops; k++) {
            o = &delta_rows[i].op[k];
            CHECK_OK(buf_put_u8(&b, o->kind));
            CHECK_OK(buf_put_u32(&b, o->len));
            if (o->kind == DELTA_OP_COPY)
                CHECK_OK(buf_put_u64(&b, o->from));
            if (o->present > 0) {
                CHECK_OK(buf_reserve(&b, o->present, &p));
                memset(p, 'x', o->present);
            }
        }
        CHECK_EQ_ERR(msg_delta_decode(buf_ptr(&b), buf_used(&b), &m),
            delta_rows[i].want);
        if (delta_rows[i].want != 0) {
            CHECK_EQ_U64(m.nops, 0);
            buf_cleanup(&b);
            continue;
        }
        /* What was taken reads back op by op. */
        CHECK_EQ_U64(m.raw_len, delta_rows[i].raw_len);
        for (pos = 0, k = 0; k < m.nops; k++) {
            o = &delta_rows[i].op[k];
            CHECK_OK(msg_delta_op_next(&m, &pos, &op));
            CHECK_EQ_INT(op.kind, o->kind);
            CHECK_EQ_U64(op.len, o->len);
            if (o->kind == DELTA_OP_COPY)
                CHECK_EQ_U64(op.from, o->from);
            else
                CHECK(op.data != NULL && op.data[0] == 'x');
        }
        CHECK_EQ_ERR(msg_delta_op_next(&m, &pos, &op), FERRY_ERR_SHORT);
        buf_cleanup(&b);
    }
    check_note_clear();
}
