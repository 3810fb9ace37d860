/*
 * Tests for proto/msg.c: a round trip and a mutation test for every
 * message type, encoders under allocation failure, and the semantic checks
 * each decoder makes after reading its fields.
 *
 * Mutated and hand-built payloads are decoded through fuzz_decode
 * (tests/fuzz/fuzz_common.c), which also checks the decoder's documented
 * invariants whenever it accepts, and from heap copies of exactly their
 * size, so ASan reports any read past the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "../../proto/frame.h"
#include "../../proto/msg.h"
#include "../../proto/msg_vol.h"
#include "../../proto/rvmsg.h"
#include "../fuzz/fuzz_common.h"
#include "../fuzz/fuzz_seed.h"
#include "check.h"

#define MSG_BUF_MAX (PROTO_FRAME_HEADER + PROTO_MAX_FRAME)

/* Above this many payload bytes, the mutation test tries a sample. */
#define MUTATE_ALL 512

/*
 * Checks r (an encoder's result) and that b holds exactly one frame of the
 * type; returns a heap copy of its payload of exactly its size, for the
 * caller to decode and free, and cleans up b.
 */
static uint8_t *
encoded(struct buf *b, int r, uint8_t type, size_t *n)
{
    struct frame f;
    uint8_t *p;
    size_t used;

    CHECK_OK(r);
    CHECK_OK(frame_parse(buf_ptr(b), buf_used(b), &f, &used));
    CHECK_EQ_U64(used, buf_used(b));
    CHECK_EQ_INT(f.type, type);
    *n = f.len;
    p = check_dup(f.payload, f.len);
    buf_cleanup(b);
    return p;
}

/* Decodes (p, n) through fuzz_decode, failing the test if an invariant is
 * broken, and returns the decoder's result. */
static int
decode_checked(uint8_t type, const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_decode(type, p, n, &rc)) != NULL)
        check_fail(__FILE__, __LINE__, "%s", why);
    return rc;
}

/* decode_checked on a copy of the payload built in b; cleans up b. */
static int
decode_buf(uint8_t type, struct buf *b)
{
    uint8_t *p = check_dup(buf_ptr(b), buf_used(b));
    int rc = decode_checked(type, p, buf_used(b));

    free(p);
    buf_cleanup(b);
    return rc;
}

static void
check_str(const struct msg_str *s, const char *want, size_t len)
{
    CHECK_EQ_U64(s->len, len);
    CHECK_EQ_MEM(s->p, want, len);
}

static void
fill_hash(struct hash128 *h, uint8_t first)
{
    size_t i;

    for (i = 0; i < HASH_LEN; i++)
        h->b[i] = (uint8_t)(first + i);
}

/* Round trips */

TEST(msg_hello_roundtrip)
{
    struct msg_hello in = { .version_min = 1, .version_max = 7,
        .caps = 0x0123456789abcdefull, .software = { LIT("ferry 0.1.0") } };
    struct msg_hello out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_hello_encode(&b, &in), MSG_HELLO, &n);
    CHECK_EQ_MEM(p, PROTO_MAGIC, 4);
    CHECK_OK(msg_hello_decode(p, n, &out));
    CHECK_EQ_INT(out.version_min, 1);
    CHECK_EQ_INT(out.version_max, 7);
    CHECK_EQ_U64(out.caps, 0x0123456789abcdefull);
    check_str(&out.software, LIT("ferry 0.1.0"));
    free(p);
}

TEST(msg_open_roundtrip)
{
    static const char *const paths[] = { "src/a", "b" };
    struct msg_open in = { .op = OPEN_PULL, .flags = OPEN_F_CHECKSUM,
        .block_size = 1u << 20, .transfer_id = "ABCDEFGHIJKLMNOP",
        .transfer_key = "0123456789abcdef0123456789ABCDEF", .npaths = 2 },
        out;
    struct msg_str s;
    struct buf b;
    size_t n, pos = 0;
    uint8_t *p;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_open_encode(&b, &in, paths), MSG_OPEN, &n);
    CHECK_OK(msg_open_decode(p, n, &out));
    CHECK_EQ_INT(out.op, OPEN_PULL);
    CHECK_EQ_U64(out.flags, OPEN_F_CHECKSUM);
    CHECK_EQ_U64(out.block_size, 1u << 20);
    CHECK_EQ_MEM(out.transfer_id, "ABCDEFGHIJKLMNOP", PROTO_TRANSFER_ID_LEN);
    CHECK_EQ_MEM(out.transfer_key, "0123456789abcdef0123456789ABCDEF",
        PROTO_TRANSFER_KEY_LEN);
    CHECK_EQ_INT(out.npaths, 2);
    CHECK_OK(msg_open_path(&out, &pos, &s));
    check_str(&s, LIT("src/a"));
    CHECK_OK(msg_open_path(&out, &pos, &s));
    check_str(&s, LIT("b"));
    CHECK_EQ_ERR(msg_open_path(&out, &pos, &s), FERRY_ERR_SHORT);
    free(p);
}

TEST(msg_open_ok_roundtrip)
{
    struct msg_open_ok in = { .root = { LIT("/srv/data") } }, out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_open_ok_encode(&b, &in), MSG_OPEN_OK, &n);
    CHECK_OK(msg_open_ok_decode(p, n, &out));
    check_str(&out.root, LIT("/srv/data"));
    free(p);
}

TEST(msg_error_roundtrip)
{
    struct msg_error in = { .code = FERRY_ERR_BAD_PATH,
        .text = { LIT("bad path") } }, out;
    char long_text[PROTO_MAX_MESSAGE + 500];
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_error_encode(&b, &in), MSG_ERROR, &n);
    CHECK_OK(msg_error_decode(p, n, &out));
    CHECK_EQ_INT(out.code, FERRY_ERR_BAD_PATH);
    check_str(&out.text, LIT("bad path"));
    free(p);

    /* Texts are cut to PROTO_MAX_MESSAGE rather than refused: an error
     * report must not fail for being long. */
    memset(long_text, 'e', sizeof(long_text));
    in.code = -EACCES;
    in.text.p = long_text;
    in.text.len = sizeof(long_text);
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_error_encode(&b, &in), MSG_ERROR, &n);
    CHECK_OK(msg_error_decode(p, n, &out));
    CHECK_EQ_INT(out.code, -EACCES);
    check_str(&out.text, long_text, PROTO_MAX_MESSAGE);
    free(p);
}

TEST(msg_plan_roundtrip)
{
    struct msg_plan in = { .flags = PLAN_F_SINGLE_FILE, .ntop = 1,
        .entries_total = 3, .files_total = 2, .bytes_total = 1ull << 40 };
    struct msg_plan out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_plan_encode(&b, &in), MSG_PLAN, &n);
    CHECK_OK(msg_plan_decode(p, n, &out));
    CHECK_EQ_U64(out.flags, PLAN_F_SINGLE_FILE);
    CHECK_EQ_U64(out.ntop, 1);
    CHECK_EQ_U64(out.entries_total, 3);
    CHECK_EQ_U64(out.files_total, 2);
    CHECK_EQ_U64(out.bytes_total, 1ull << 40);
    free(p);
}

TEST(msg_ready_roundtrip)
{
    struct msg_ready in = { .rename = { LIT("new name") } }, out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_ready_encode(&b, &in), MSG_READY, &n);
    CHECK_OK(msg_ready_decode(p, n, &out));
    check_str(&out.rename, LIT("new name"));
    free(p);
}

/* Encodes in, decodes it, and compares every field. */
static void
entry_roundtrip(const struct msg_entry *in)
{
    struct msg_entry out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_entry_encode(&b, in), MSG_ENTRY, &n);
    CHECK_OK(msg_entry_decode(p, n, &out));
    CHECK_EQ_U64(out.id, in->id);
    CHECK_EQ_INT(out.kind, in->kind);
    CHECK_EQ_U64(out.mode, in->mode);
    CHECK_EQ_U64(out.size, in->size);
    CHECK_EQ_INT(out.mtime_sec, in->mtime_sec);
    CHECK_EQ_U64(out.mtime_nsec, in->mtime_nsec);
    CHECK_EQ_INT(out.has_hash, in->has_hash);
    CHECK_EQ_MEM(out.hash.b, in->has_hash ? in->hash.b :
        (const uint8_t *)"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", HASH_LEN);
    check_str(&out.path, in->path.p, in->path.len);
    check_str(&out.target, in->target.p, in->target.len);
    free(p);
}

TEST(msg_entry_roundtrip)
{
    struct msg_entry file = { .id = 0xdeadbeef, .kind = ENTRY_FILE,
        .mode = 0640, .size = 0x123456789ull, .mtime_sec = -5,
        .mtime_nsec = 999999999, .has_hash = 1,
        .path = { LIT("x/y.txt") } };
    struct msg_entry link = { .id = 2, .kind = ENTRY_SYMLINK, .mode = 0777,
        .mtime_sec = INT64_MAX, .path = { LIT("l") },
        .target = { LIT("../t") } };
    struct msg_entry dir = { .id = 3, .kind = ENTRY_DIR, .mode = 07755,
        .mtime_sec = INT64_MIN, .path = { LIT("d") } };

    fill_hash(&file.hash, 0x40);
    entry_roundtrip(&file);
    entry_roundtrip(&link);
    entry_roundtrip(&dir);
}

/* Encodes in, decodes it, and compares every field. */
static void
reply_roundtrip(const struct msg_reply *in)
{
    struct msg_reply out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_reply_encode(&b, in), MSG_REPLY, &n);
    CHECK_OK(msg_reply_decode(p, n, &out));
    CHECK_EQ_U64(out.id, in->id);
    CHECK_EQ_INT(out.action, in->action);
    CHECK_EQ_INT(out.flags, in->flags);
    CHECK_EQ_INT(out.code, in->code);
    check_str(&out.text, in->text.p, in->text.len);
    free(p);
}

TEST(msg_reply_roundtrip)
{
    struct msg_reply want = { .id = 7, .action = REPLY_WANT,
        .flags = REPLY_F_RESUME, .text = { LIT("older partial") } };
    struct msg_reply fail = { .id = 8, .action = REPLY_FAIL,
        .code = -ENOSPC, .text = { LIT("disk full") } };
    struct msg_reply skip = { .id = 9, .action = REPLY_SKIP };

    reply_roundtrip(&want);
    reply_roundtrip(&fail);
    reply_roundtrip(&skip);
}

TEST(msg_block_roundtrip)
{
    uint8_t data[100];
    struct msg_block in = { .id = 9, .offset = 1ull << 40,
        .raw_len = sizeof(data), .data = data, .data_len = sizeof(data) };
    struct msg_block out;
    struct buf b;
    uint8_t *p;
    size_t n, i;

    for (i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i ^ 0x5a);
    fill_hash(&in.hash, 0x80);
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_block_encode(&b, &in), MSG_BLOCK, &n);
    CHECK_OK(msg_block_decode(p, n, &out));
    CHECK_EQ_U64(out.id, 9);
    CHECK_EQ_U64(out.offset, 1ull << 40);
    CHECK_EQ_INT(out.flags, 0);
    CHECK_EQ_U64(out.raw_len, sizeof(data));
    CHECK_EQ_MEM(out.hash.b, in.hash.b, HASH_LEN);
    CHECK_EQ_U64(out.data_len, sizeof(data));
    CHECK_EQ_MEM(out.data, data, sizeof(data));
    /* Data is borrowed from the payload, not copied. */
    CHECK(out.data == p + n - sizeof(data));
    free(p);
}

TEST(msg_file_end_roundtrip)
{
    struct msg_file_end in = { .id = 11, .code = -EIO,
        .text = { LIT("read error") } };
    struct msg_file_end out;
    struct buf b;
    uint8_t *p;
    size_t n;

    fill_hash(&in.hash, 0xc0);
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_file_end_encode(&b, &in), MSG_FILE_END, &n);
    CHECK_OK(msg_file_end_decode(p, n, &out));
    CHECK_EQ_U64(out.id, 11);
    CHECK_EQ_INT(out.code, -EIO);
    CHECK_EQ_MEM(out.hash.b, in.hash.b, HASH_LEN);
    check_str(&out.text, LIT("read error"));
    free(p);
}

TEST(msg_file_done_roundtrip)
{
    struct msg_file_done in = { .id = 12, .code = FERRY_ERR_HASH_MISMATCH,
        .text = { LIT("mismatch") } }, out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_file_done_encode(&b, &in), MSG_FILE_DONE, &n);
    CHECK_OK(msg_file_done_decode(p, n, &out));
    CHECK_EQ_U64(out.id, 12);
    CHECK_EQ_INT(out.code, FERRY_ERR_HASH_MISMATCH);
    check_str(&out.text, LIT("mismatch"));
    free(p);
}

TEST(msg_notice_roundtrip)
{
    struct msg_notice in = { .code = -ENOENT, .path = { LIT("p/q") },
        .text = { LIT("vanished") } };
    struct msg_notice out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_notice_encode(&b, &in), MSG_NOTICE, &n);
    CHECK_OK(msg_notice_decode(p, n, &out));
    CHECK_EQ_INT(out.code, -ENOENT);
    check_str(&out.path, LIT("p/q"));
    check_str(&out.text, LIT("vanished"));
    free(p);
}

TEST(msg_end_roundtrip)
{
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_end_encode(&b), MSG_END, &n);
    CHECK_EQ_U64(n, 0);
    CHECK_OK(msg_end_decode(p, n));
    CHECK_EQ_ERR(msg_end_decode((const uint8_t *)"x", 1),
        FERRY_ERR_TRAILING);
    free(p);
}

TEST(msg_summary_roundtrip)
{
    struct msg_summary in = { .files_committed = 1, .files_skipped = 2,
        .files_failed = 3, .bytes_written = UINT64_MAX }, out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_summary_encode(&b, &in), MSG_SUMMARY, &n);
    CHECK_OK(msg_summary_decode(p, n, &out));
    CHECK_EQ_U64(out.files_committed, 1);
    CHECK_EQ_U64(out.files_skipped, 2);
    CHECK_EQ_U64(out.files_failed, 3);
    CHECK_EQ_U64(out.bytes_written, UINT64_MAX);
    free(p);
}

TEST(msg_partial_roundtrip)
{
    struct msg_partial in = { .path = { LIT("d/f.iso") }, .size = 1ull << 40,
        .done = 1ull << 39, .age_s = INT64_MAX }, out;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_partial_encode(&b, &in), MSG_PARTIAL, &n);
    CHECK_OK(msg_partial_decode(p, n, &out));
    check_str(&out.path, LIT("d/f.iso"));
    CHECK_EQ_U64(out.size, 1ull << 40);
    CHECK_EQ_U64(out.done, 1ull << 39);
    CHECK_EQ_INT(out.age_s, INT64_MAX);
    free(p);
}

/* Mutations */

/* Tries v at byte pos of the payload copy p (restored afterwards). */
static void
mutate_byte(uint8_t type, uint8_t *p, size_t n, size_t pos, uint8_t v)
{
    uint8_t orig = p[pos];

    p[pos] = v;
    (void)decode_checked(type, p, n);
    p[pos] = orig;
}

/* Whether the mutation test tries byte pos of an n-byte payload: all of
 * them when the payload is small, else the head (fixed fields), the tail
 * and every stride-th byte in between. */
static int
mutate_picks(size_t pos, size_t n)
{
    size_t stride = n / (MUTATE_ALL / 2) + 1;

    return n <= MUTATE_ALL || pos < MUTATE_ALL / 4 ||
        pos >= n - MUTATE_ALL / 8 || pos % stride == 0;
}

/*
 * The mutation test of one encoded payload: it decodes as it is, fails
 * when cut at any length or given a byte more, and survives every bit
 * flipped and every byte set to 0x00 or 0xff, with the invariants holding
 * whenever the decoder accepts.
 */
static void
mutate_payload(uint8_t type, size_t seed, const uint8_t *p, size_t n)
{
    uint8_t *copy;
    size_t len, pos;
    int bit;

    check_note("seed %zu as it is", seed);
    copy = check_dup(p, n);
    CHECK_OK(decode_checked(type, copy, n));
    free(copy);
    for (len = 0; len < n; len++) {
        check_note("seed %zu cut to %zu of %zu bytes", seed, len, n);
        copy = check_dup(p, len);
        CHECK_FAILS(decode_checked(type, copy, len));
        free(copy);
    }
    check_note("seed %zu with a byte more", seed);
    copy = check_alloc(n + 1);
    memcpy(copy, p, n);
    copy[n] = 0;
    CHECK_EQ_ERR(decode_checked(type, copy, n + 1), FERRY_ERR_TRAILING);
    free(copy);
    copy = check_dup(p, n);
    for (pos = 0; pos < n; pos++) {
        if (!mutate_picks(pos, n))
            continue;
        check_note("seed %zu byte %zu of %zu", seed, pos, n);
        for (bit = 0; bit < 8; bit++)
            mutate_byte(type, copy, n, pos, (uint8_t)(p[pos] ^ 1u << bit));
        mutate_byte(type, copy, n, pos, 0x00);
        mutate_byte(type, copy, n, pos, 0xff);
    }
    free(copy);
    check_note_clear();
}

/* Runs the mutation test on every seed of the type. */
static void
mutate_type(uint8_t type)
{
    size_t i, n;
    struct buf b;
    uint8_t *p;

    CHECK(fuzz_seed_count(type) > 0);
    for (i = 0; i < fuzz_seed_count(type); i++) {
        buf_init(&b, MSG_BUF_MAX);
        p = encoded(&b, fuzz_seed(type, i, &b), type, &n);
        mutate_payload(type, i, p, n);
        free(p);
    }
}

/* Every type of msg_table.h, so that a type added there is mutated
 * without a line here (msg_types_covered wants its seeds). */
TEST(msg_mutate_every_type)
{
    unsigned t;

    for (t = 1; t <= MSG_TYPE_MAX; t++) {
        if (!msg_type_known((uint8_t)t))
            continue;
        check_note("%s", msg_type_name((uint8_t)t));
        mutate_type((uint8_t)t);
    }
}

/* Every bound of the volume messages, at the limit and one past it. */
TEST(msg_vol_bounds)
{
    struct msg_vol_opts o = { .threshold = PROTO_MAX_PACK_THRESHOLD,
        .volume_size = PROTO_MAX_VOLUME_SIZE }, od;
    struct msg_vol_end e = { .volume = 3, .bytes = PROTO_MAX_VOLUME_SIZE,
        .files = PROTO_MAX_VOLUME_FILES }, ed;
    struct msg_vol_data d = { .volume = 1 }, dd;
    struct msg_vol_file f = { .volume = 9, .id = 4 }, fd;
    struct buf b;
    uint8_t *p, *big;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_vol_opts_encode(&b, &o), MSG_VOL_OPTS, &n);
    CHECK_OK(msg_vol_opts_decode(p, n, &od));
    CHECK_EQ_U64(od.threshold, PROTO_MAX_PACK_THRESHOLD);
    /* threshold is the first field, volume_size the second */
    p[7]++;
    CHECK_EQ_ERR(msg_vol_opts_decode(p, n, &od), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(od.threshold, 0);
    p[7]--;
    p[15]++;
    CHECK_EQ_ERR(msg_vol_opts_decode(p, n, &od), FERRY_ERR_TOO_LARGE);
    p[15]--;
    memset(p + 8, 0, 8);  /* volume size 0 */
    CHECK_EQ_ERR(msg_vol_opts_decode(p, n, &od), FERRY_ERR_FORMAT);
    free(p);
    o.threshold++;
    buf_init(&b, MSG_BUF_MAX);
    CHECK_EQ_ERR(msg_vol_opts_encode(&b, &o), FERRY_ERR_USAGE);
    o.threshold--;
    o.compress = VOL_COMPRESS_LEVEL;  /* without a level */
    CHECK_EQ_ERR(msg_vol_opts_encode(&b, &o), FERRY_ERR_USAGE);
    o.level = VOL_LEVEL_MAX + 1;
    CHECK_EQ_ERR(msg_vol_opts_encode(&b, &o), FERRY_ERR_USAGE);
    buf_cleanup(&b);

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_vol_end_encode(&b, &e), MSG_VOL_END, &n);
    CHECK_OK(msg_vol_end_decode(p, n, &ed));
    CHECK_EQ_U64(ed.files, PROTO_MAX_VOLUME_FILES);
    p[n - 1]++;   /* files, the last field */
    CHECK_EQ_ERR(msg_vol_end_decode(p, n, &ed), FERRY_ERR_TOO_LARGE);
    p[n - 1]--;
    memset(p, 0, 4);   /* volume 0 */
    CHECK_EQ_ERR(msg_vol_end_decode(p, n, &ed), FERRY_ERR_FORMAT);
    free(p);

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_vol_file_encode(&b, &f), MSG_VOL_FILE, &n);
    CHECK_OK(msg_vol_file_decode(p, n, &fd));
    CHECK_EQ_U64(fd.id, 4);
    memset(p, 0, 4);
    CHECK_EQ_ERR(msg_vol_file_decode(p, n, &fd), FERRY_ERR_FORMAT);
    free(p);

    /* Data: empty is refused by both sides, over PROTO_MAX_BLOCK too. */
    buf_init(&b, MSG_BUF_MAX);
    CHECK_EQ_ERR(msg_vol_data_encode(&b, &d), FERRY_ERR_USAGE);
    big = check_alloc(PROTO_MAX_BLOCK + 1);
    memset(big, 7, PROTO_MAX_BLOCK + 1);
    d.data = big;
    d.len = PROTO_MAX_BLOCK + 1;
    CHECK_EQ_ERR(msg_vol_data_encode(&b, &d), FERRY_ERR_USAGE);
    d.len = PROTO_MAX_BLOCK;
    buf_cleanup(&b);
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_vol_data_encode(&b, &d), MSG_VOL_DATA, &n);
    CHECK_OK(msg_vol_data_decode(p, n, &dd));
    CHECK_EQ_U64(dd.len, PROTO_MAX_BLOCK);
    p[7]++;   /* the str32 length: one past the limit */
    CHECK_EQ_ERR(msg_vol_data_decode(p, n, &dd), FERRY_ERR_TOO_LARGE);
    CHECK(dd.data == NULL);
    memset(p + 4, 0, 4);   /* empty */
    CHECK_FAILS(msg_vol_data_decode(p, n, &dd));
    CHECK_EQ_ERR(msg_vol_data_decode(p, 8, &dd), FERRY_ERR_FORMAT);
    free(p);
    free(big);
}

TEST(msg_sigs_roundtrip)
{
    uint8_t hashes[2 * HASH_LEN];
    struct msg_sigs have = { .id = 3, .first = 1ull << 40, .count = 2,
        .flags = SIGS_F_HAVE, .hashes = hashes };
    struct msg_sigs need = { .id = 4, .first = 5, .count = PROTO_MAX_SIGS };
    struct msg_sigs out;
    struct buf b;
    uint8_t *p;
    size_t n;

    memset(hashes, 0x5a, sizeof(hashes));
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_sigs_encode(&b, &have), MSG_SIGS, &n);
    CHECK_OK(msg_sigs_decode(p, n, &out));
    CHECK_EQ_U64(out.id, 3);
    CHECK_EQ_U64(out.first, 1ull << 40);
    CHECK_EQ_U64(out.count, 2);
    CHECK_EQ_INT(out.flags, SIGS_F_HAVE);
    CHECK_EQ_MEM(out.hashes, hashes, sizeof(hashes));
    free(p);
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_sigs_encode(&b, &need), MSG_SIGS, &n);
    CHECK_OK(msg_sigs_decode(p, n, &out));
    CHECK_EQ_U64(out.count, PROTO_MAX_SIGS);
    CHECK(out.hashes == NULL);
    CHECK_EQ_U64(n, 4 + 8 + 4 + 1);
    free(p);
}

TEST(msg_sigs_fields)
{
    uint8_t payload[64];
    struct msg_sigs m;
    struct buf b;

    /* A count over the limit is TOO_LARGE before any hash is read. */
    memset(payload, 0, sizeof(payload));
    buf_init(&b, sizeof(payload));
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, 0));
    CHECK_OK(buf_put_u32(&b, PROTO_MAX_SIGS + 1));
    CHECK_OK(buf_put_u8(&b, SIGS_F_HAVE));
    CHECK_EQ_ERR(msg_sigs_decode(buf_ptr(&b), buf_used(&b), &m),
        FERRY_ERR_TOO_LARGE);
    buf_reset(&b);
    /* No blocks, or a range that wraps, or an unknown flag. */
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, 0));
    CHECK_OK(buf_put_u32(&b, 0));
    CHECK_OK(buf_put_u8(&b, 0));
    CHECK_EQ_ERR(msg_sigs_decode(buf_ptr(&b), buf_used(&b), &m),
        FERRY_ERR_FORMAT);
    buf_reset(&b);
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, UINT64_MAX));
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u8(&b, 0));
    CHECK_EQ_ERR(msg_sigs_decode(buf_ptr(&b), buf_used(&b), &m),
        FERRY_ERR_FORMAT);
    buf_reset(&b);
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, 0));
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u8(&b, 2));
    CHECK_EQ_ERR(msg_sigs_decode(buf_ptr(&b), buf_used(&b), &m),
        FERRY_ERR_FORMAT);
    /* NEED with hashes after it: trailing bytes. */
    buf_unreserve(&b, 1);
    CHECK_OK(buf_put_u8(&b, 0));
    CHECK_OK(buf_put(&b, payload, HASH_LEN));
    CHECK_EQ_ERR(msg_sigs_decode(buf_ptr(&b), buf_used(&b), &m),
        FERRY_ERR_TRAILING);
    buf_cleanup(&b);
}

TEST(msg_match_join_roundtrip)
{
    struct msg_match mm = { .id = 9, .first = 77, .count = 12 }, mo;
    struct msg_join j = { .stream = 3 }, jo;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_match_encode(&b, &mm), MSG_MATCH, &n);
    CHECK_OK(msg_match_decode(p, n, &mo));
    CHECK_EQ_U64(mo.id, 9);
    CHECK_EQ_U64(mo.first, 77);
    CHECK_EQ_U64(mo.count, 12);
    free(p);
    memset(j.transfer_id, 0xab, sizeof(j.transfer_id));
    memset(j.transfer_key, 0xcd, sizeof(j.transfer_key));
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_join_encode(&b, &j), MSG_JOIN, &n);
    CHECK_OK(msg_join_decode(p, n, &jo));
    CHECK_EQ_INT(jo.stream, 3);
    CHECK_EQ_MEM(jo.transfer_id, j.transfer_id, sizeof(j.transfer_id));
    CHECK_EQ_MEM(jo.transfer_key, j.transfer_key, sizeof(j.transfer_key));
    free(p);
    /* Stream 0 is the one that OPENs; the last is below the limit. */
    j.stream = 0;
    buf_init(&b, MSG_BUF_MAX);
    CHECK_EQ_ERR(msg_join_encode(&b, &j), FERRY_ERR_USAGE);
    j.stream = PROTO_MAX_STREAMS;
    CHECK_EQ_ERR(msg_join_encode(&b, &j), FERRY_ERR_USAGE);
    mm.count = 0;
    CHECK_EQ_ERR(msg_match_encode(&b, &mm), FERRY_ERR_USAGE);
    buf_cleanup(&b);
}

/* RETIRE names a further stream: never 0 (which OPENs), never past the
 * limit, nothing after it, and its type's name for the logs. */
TEST(msg_retire_roundtrip)
{
    struct msg_retire m = { .stream = 31 }, mo;
    const uint8_t zero[2] = { 0, 0 }, big[2] = { 0, 32 },
        trailing[3] = { 0, 5, 0 };
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_retire_encode(&b, &m), MSG_RETIRE, &n);
    CHECK_OK(msg_retire_decode(p, n, &mo));
    CHECK_EQ_INT(mo.stream, 31);
    CHECK_EQ_ERR(msg_retire_decode(p, 1, &mo), FERRY_ERR_SHORT);
    CHECK_EQ_INT(mo.stream, 0);
    free(p);
    CHECK_EQ_ERR(msg_retire_decode(zero, 2, &mo), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(msg_retire_decode(big, 2, &mo), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(msg_retire_decode(trailing, 3, &mo), FERRY_ERR_TRAILING);
    m.stream = 0;
    buf_init(&b, MSG_BUF_MAX);
    CHECK_EQ_ERR(msg_retire_encode(&b, &m), FERRY_ERR_USAGE);
    m.stream = PROTO_MAX_STREAMS;
    CHECK_EQ_ERR(msg_retire_encode(&b, &m), FERRY_ERR_USAGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    buf_cleanup(&b);
    CHECK_EQ_STR(msg_type_name(MSG_RETIRE), "RETIRE");
}

/* DELTA_STOP and DELTA_GO name a file: any id, nothing after it. */
#define ID_ONLY_ROUNDTRIP(name, type)                                       \
    do {                                                                    \
        struct msg_##name m = { .id = 0x01020304 }, mo;                     \
        const uint8_t trailing[5] = { 0, 0, 0, 7, 0 };                      \
        struct buf b;                                                       \
        uint8_t *p;                                                         \
        size_t n;                                                           \
                                                                            \
        buf_init(&b, MSG_BUF_MAX);                                          \
        p = encoded(&b, msg_##name##_encode(&b, &m), type, &n);             \
        CHECK_EQ_U64(n, 4);                                                 \
        CHECK_OK(msg_##name##_decode(p, n, &mo));                           \
        CHECK_EQ_U64(mo.id, 0x01020304);                                    \
        CHECK_EQ_ERR(msg_##name##_decode(p, 3, &mo), FERRY_ERR_SHORT);      \
        CHECK_EQ_U64(mo.id, 0);                                             \
        free(p);                                                            \
        CHECK_EQ_ERR(msg_##name##_decode(trailing, 5, &mo),                 \
            FERRY_ERR_TRAILING);                                            \
        CHECK_EQ_U64(mo.id, 0);                                             \
    } while (0)

TEST(msg_delta_stop_roundtrip)
{
    ID_ONLY_ROUNDTRIP(delta_stop, MSG_DELTA_STOP);
}

TEST(msg_delta_go_roundtrip)
{
    ID_ONLY_ROUNDTRIP(delta_go, MSG_DELTA_GO);
}

/* PROBE: ask and data, each at its bound and one past it. */
TEST(msg_probe_bounds)
{
    static uint8_t data[PROTO_MAX_PROBE_DATA + 1];
    struct msg_probe m = { .ask = PROTO_MAX_PROBE_ASK, .data = data,
        .len = PROTO_MAX_PROBE_DATA }, mo;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_probe_encode(&b, &m), MSG_PROBE, &n);
    CHECK_OK(msg_probe_decode(p, n, &mo));
    CHECK_EQ_U64(mo.ask, PROTO_MAX_PROBE_ASK);
    CHECK_EQ_U64(mo.len, PROTO_MAX_PROBE_DATA);
    /* ask is the first field (big-endian) */
    p[3]++;
    CHECK_EQ_ERR(msg_probe_decode(p, n, &mo), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(mo.ask, 0);
    free(p);
    buf_init(&b, MSG_BUF_MAX);
    m.ask++;
    CHECK_EQ_ERR(msg_probe_encode(&b, &m), FERRY_ERR_USAGE);
    m.ask--;
    m.len++;
    CHECK_EQ_ERR(msg_probe_encode(&b, &m), FERRY_ERR_USAGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    buf_cleanup(&b);
    CHECK_EQ_STR(msg_type_name(MSG_PROBE), "PROBE");
}

/* A live PLAN has no totals and is no single file; TOTALS has no more
 * files than entries. */
TEST(msg_plan_live_totals)
{
    struct msg_plan pl = { .flags = PLAN_F_LIVE }, plo;
    struct msg_totals t = { .entries_total = 5, .files_total = 5,
        .bytes_total = 1 }, to;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_plan_encode(&b, &pl), MSG_PLAN, &n);
    CHECK_OK(msg_plan_decode(p, n, &plo));
    CHECK_EQ_U64(plo.flags, PLAN_F_LIVE);
    free(p);
    pl.entries_total = 1;
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_plan_encode(&b, &pl), MSG_PLAN, &n);
    CHECK_EQ_ERR(msg_plan_decode(p, n, &plo), FERRY_ERR_FORMAT);
    free(p);
    pl.entries_total = 0;
    pl.bytes_total = 1;
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_plan_encode(&b, &pl), MSG_PLAN, &n);
    CHECK_EQ_ERR(msg_plan_decode(p, n, &plo), FERRY_ERR_FORMAT);
    free(p);
    pl.bytes_total = 0;
    pl.flags |= PLAN_F_SINGLE_FILE;
    pl.ntop = 1;
    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_plan_encode(&b, &pl), MSG_PLAN, &n);
    CHECK_EQ_ERR(msg_plan_decode(p, n, &plo), FERRY_ERR_FORMAT);
    free(p);

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_totals_encode(&b, &t), MSG_TOTALS, &n);
    CHECK_EQ_U64(n, 24);
    CHECK_OK(msg_totals_decode(p, n, &to));
    CHECK_EQ_U64(to.entries_total, 5);
    CHECK_EQ_U64(to.bytes_total, 1);
    p[15]++;   /* files_total 6 */
    CHECK_EQ_ERR(msg_totals_decode(p, n, &to), FERRY_ERR_FORMAT);
    CHECK_EQ_U64(to.entries_total, 0);
    free(p);
    t.files_total = 6;
    buf_init(&b, MSG_BUF_MAX);
    CHECK_EQ_ERR(msg_totals_encode(&b, &t), FERRY_ERR_USAGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    buf_cleanup(&b);
    CHECK_EQ_STR(msg_type_name(MSG_TOTALS), "TOTALS");
}

/* READBACK: two u64, nothing more, nothing less. */
TEST(msg_readback_roundtrip)
{
    struct msg_readback m = { .bytes = 3ull << 40, .ns = 987654321 }, mo;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_readback_encode(&b, &m), MSG_READBACK, &n);
    CHECK_EQ_U64(n, 16);
    CHECK_OK(msg_readback_decode(p, n, &mo));
    CHECK_EQ_U64(mo.bytes, 3ull << 40);
    CHECK_EQ_U64(mo.ns, 987654321);
    CHECK_EQ_ERR(msg_readback_decode(p, 8, &mo), FERRY_ERR_SHORT);
    CHECK_EQ_U64(mo.bytes, 0);
    free(p);
    CHECK_EQ_STR(msg_type_name(MSG_READBACK), "READBACK");
}

/* STOP: an id and two counts, nothing more, nothing less. */
TEST(msg_stop_roundtrip)
{
    struct msg_stop m = { .id = MSG_STOP_NONE, .kept_files = 2,
        .kept_bytes = 5ull << 30 }, mo;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_stop_encode(&b, &m), MSG_STOP, &n);
    CHECK_EQ_U64(n, 20);
    CHECK_OK(msg_stop_decode(p, n, &mo));
    CHECK_EQ_U64(mo.id, MSG_STOP_NONE);
    CHECK_EQ_U64(mo.kept_files, 2);
    CHECK_EQ_U64(mo.kept_bytes, 5ull << 30);
    CHECK_EQ_ERR(msg_stop_decode(p, 12, &mo), FERRY_ERR_SHORT);
    CHECK_EQ_U64(mo.kept_files, 0);
    free(p);
    CHECK_EQ_STR(msg_type_name(MSG_STOP), "STOP");
}

/* BUSY: a holder of at most PROTO_MAX_HOLDER bytes. */
TEST(msg_busy_roundtrip)
{
    char big[PROTO_MAX_HOLDER + 1];
    struct msg_busy m = { .holder = { "pid 7, transfer 00ff", 20 } }, mo;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_busy_encode(&b, &m), MSG_BUSY, &n);
    CHECK_EQ_U64(n, 22);
    CHECK_OK(msg_busy_decode(p, n, &mo));
    CHECK_EQ_U64(mo.holder.len, 20);
    CHECK(memcmp(mo.holder.p, "pid 7, transfer 00ff", 20) == 0);
    free(p);
    memset(big, 'x', sizeof(big));
    m.holder.p = big;
    m.holder.len = PROTO_MAX_HOLDER + 1;
    buf_init(&b, MSG_BUF_MAX);
    CHECK_EQ_ERR(msg_busy_encode(&b, &m), FERRY_ERR_USAGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    /* One byte too many on the wire: refused as too large. */
    CHECK_OK(buf_put_str16(&b, big, sizeof(big)));
    CHECK_EQ_ERR(msg_busy_decode(buf_ptr(&b), buf_used(&b), &mo),
        FERRY_ERR_TOO_LARGE);
    buf_cleanup(&b);
    CHECK_EQ_STR(msg_type_name(MSG_BUSY), "BUSY");
}

/* BASIS: a path checked as ENTRY's, a size of at least one byte. */
TEST(msg_basis_roundtrip)
{
    struct msg_basis m = { .id = 9, .basis_size = 3u << 20,
        .hash = { { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } },
        .path = { "run/step-1000.safetensors", 25 } }, mo;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_basis_encode(&b, &m), MSG_BASIS, &n);
    CHECK_EQ_U64(n, 4 + 8 + HASH_LEN + 2 + 25);
    CHECK_OK(msg_basis_decode(p, n, &mo));
    CHECK_EQ_U64(mo.id, 9);
    CHECK_EQ_U64(mo.basis_size, 3u << 20);
    CHECK(hash_equal(&mo.hash, &m.hash));
    CHECK_EQ_U64(mo.path.len, 25);
    CHECK(memcmp(mo.path.p, "run/step-1000.safetensors", 25) == 0);
    CHECK_EQ_ERR(msg_basis_decode(p, n - 1, &mo), FERRY_ERR_SHORT);
    CHECK_EQ_U64(mo.basis_size, 0);
    free(p);
    /* A path that climbs out, an empty basis: refused both ways. */
    buf_init(&b, MSG_BUF_MAX);
    m.path.p = "../x";
    m.path.len = 4;
    CHECK(msg_basis_encode(&b, &m) != 0);
    m.path.p = "x";
    m.path.len = 1;
    m.basis_size = 0;
    CHECK_EQ_ERR(msg_basis_encode(&b, &m), FERRY_ERR_USAGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, 0));
    CHECK_OK(buf_put(&b, m.hash.b, HASH_LEN));
    CHECK_OK(buf_put_str16(&b, "x", 1));
    CHECK_EQ_ERR(decode_buf(MSG_BASIS, &b), FERRY_ERR_FORMAT);
    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, 5));
    CHECK_OK(buf_put(&b, m.hash.b, HASH_LEN));
    CHECK_OK(buf_put_str16(&b, "a/../../b", 9));
    CHECK(decode_buf(MSG_BASIS, &b) != 0);
    CHECK_EQ_STR(msg_type_name(MSG_BASIS), "BASIS");
}

/* TENSOR: a body shorter than the block, bounded before it is read. */
TEST(msg_tensor_roundtrip)
{
    static const uint8_t body[] = { 9, 8, 7, 6, 5 };
    struct msg_tensor m = { .id = 3, .offset = 8u << 20, .raw_len = 4096,
        .hash = { { 0xaa, 0xbb } }, .body = body, .body_len = 5 }, mo;
    struct buf b;
    uint8_t *p;
    size_t n;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_tensor_encode(&b, &m), MSG_TENSOR, &n);
    CHECK_EQ_U64(n, 4 + 8 + 4 + HASH_LEN + 4 + 5);
    CHECK_OK(msg_tensor_decode(p, n, &mo));
    CHECK_EQ_U64(mo.id, 3);
    CHECK_EQ_U64(mo.offset, 8u << 20);
    CHECK_EQ_U64(mo.raw_len, 4096);
    CHECK(hash_equal(&mo.hash, &m.hash));
    CHECK_EQ_U64(mo.body_len, 5);
    CHECK(memcmp(mo.body, body, 5) == 0);
    CHECK_EQ_ERR(msg_tensor_decode(p, n - 1, &mo), FERRY_ERR_SHORT);
    CHECK(mo.body == NULL);
    free(p);
    /* A body as long as the block, an empty one, a block past the
     * largest: the encoder refuses them, the decoder too. */
    buf_init(&b, MSG_BUF_MAX);
    m.raw_len = 5;
    CHECK_EQ_ERR(msg_tensor_encode(&b, &m), FERRY_ERR_USAGE);
    m.raw_len = 4096;
    m.body_len = 0;
    CHECK_EQ_ERR(msg_tensor_encode(&b, &m), FERRY_ERR_USAGE);
    m.raw_len = PROTO_MAX_BLOCK + 1;
    m.body_len = 5;
    CHECK_EQ_ERR(msg_tensor_encode(&b, &m), FERRY_ERR_USAGE);
    m.raw_len = 4096;
    m.offset = (uint64_t)INT64_MAX;
    CHECK_EQ_ERR(msg_tensor_encode(&b, &m), FERRY_ERR_USAGE);
    CHECK_EQ_U64(buf_used(&b), 0);
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, 0));
    CHECK_OK(buf_put_u32(&b, 5));
    CHECK_OK(buf_put(&b, m.hash.b, HASH_LEN));
    CHECK_OK(buf_put_str32(&b, body, 5));
    CHECK_EQ_ERR(decode_buf(MSG_TENSOR, &b), FERRY_ERR_TOO_LARGE);
    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, 0));
    CHECK_OK(buf_put_u32(&b, PROTO_MAX_BLOCK + 1));
    CHECK_OK(buf_put(&b, m.hash.b, HASH_LEN));
    CHECK_OK(buf_put_str32(&b, body, 5));
    CHECK_EQ_ERR(decode_buf(MSG_TENSOR, &b), FERRY_ERR_TOO_LARGE);
    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put_u32(&b, 1));
    CHECK_OK(buf_put_u64(&b, 0));
    CHECK_OK(buf_put_u32(&b, 4096));
    CHECK_OK(buf_put(&b, m.hash.b, HASH_LEN));
    CHECK_OK(buf_put_str32(&b, body, 0));
    CHECK_EQ_ERR(decode_buf(MSG_TENSOR, &b), FERRY_ERR_FORMAT);
    CHECK_EQ_STR(msg_type_name(MSG_TENSOR), "TENSOR");
}

/*
 * A message type added to msg.h needs seeds (fuzz_seed.c) and an entry in
 * fuzz_common.c, and then a round trip and a mutation test here: this
 * fails until the first two exist.
 */
TEST(msg_types_covered)
{
    struct buf b;
    uint8_t type, *p;
    size_t n;

    for (type = 1; type <= MSG_TYPE_MAX; type++) {
        check_note("%s", msg_type_name(type));
        /* The gaps are reserved: no seeds, and no decoder either. */
        CHECK_EQ_U64(fuzz_seed_count(type) > 0, msg_type_known(type));
        if (!msg_type_known(type))
            continue;
        buf_init(&b, MSG_BUF_MAX);
        p = encoded(&b, fuzz_seed(type, 0, &b), type, &n);
        CHECK_OK(decode_checked(type, p, n));
        free(p);
    }
}

/* Allocation failures */

/*
 * Encodes seed i of type after prefix bytes already in the buffer, making
 * the 1st, 2nd, ... allocation fail until the encoder gets through. Each
 * failure must be NOMEM and leave the prefix alone; leaks would show in
 * LeakSanitizer at the end of the case.
 */
static void
alloc_fail_seed(uint8_t type, size_t i, size_t prefix)
{
    static const char pre[300] = "prefix";
    unsigned long k;
    struct buf b;
    int r;

    for (k = 1;; k++) {
        check_note("%s seed %zu, prefix %zu, allocation %lu fails",
            msg_type_name(type), i, prefix, k);
        buf_init(&b, MSG_BUF_MAX + prefix);
        CHECK_OK(buf_put(&b, pre, prefix));
        alloc_fail_at(k);
        r = fuzz_seed(type, i, &b);
        alloc_fail_at(0);
        if (r == 0)
            break;
        CHECK_EQ_ERR(r, FERRY_ERR_NOMEM);
        CHECK_EQ_U64(buf_used(&b), prefix);
        /* Without a prefix the buf may never have allocated, and
         * buf_ptr would compute NULL + 0. */
        if (prefix > 0)
            CHECK_EQ_MEM(buf_ptr(&b), pre, prefix);
        buf_cleanup(&b);
        CHECK(k < 100);
    }
    CHECK_EQ_MEM(buf_ptr(&b), pre, prefix);
    CHECK_EQ_U64(fuzz_frame_one(buf_ptr(&b) + prefix,
        buf_used(&b) - prefix), 0);
    buf_cleanup(&b);
}

TEST(msg_alloc_fail)
{
    uint8_t type;
    size_t i;

    for (type = 1; type <= MSG_TYPE_MAX; type++) {
        for (i = 0; i < fuzz_seed_count(type); i++) {
            alloc_fail_seed(type, i, 0);
            alloc_fail_seed(type, i, 250);
        }
    }
}

/* Encoders refuse what they cannot send */

/* Checks that a failed encoder left the buffer as it was ("keep"). */
static void
check_kept(const struct buf *b)
{
    CHECK_EQ_U64(buf_used(b), 4);
    CHECK_EQ_MEM(buf_ptr(b), "keep", 4);
}

TEST(msg_encode_usage)
{
    static const char *const empty[] = { "" };
    static const char *const two[] = { "a", "b" };
    char big[PROTO_MAX_PATH + 2];
    const char *bigp[] = { big };
    struct msg_open op = { .op = OPEN_PULL, .block_size = 1u << 20,
        .npaths = 0 };
    struct msg_entry e = { .kind = ENTRY_SYMLINK, .path = { LIT("l") } };
    struct msg_hello h = { .version_min = 1, .version_max = 1,
        .software = { big, PROTO_MAX_SOFTWARE + 1 } };
    struct msg_block blk = { .raw_len = 10, .data = (const uint8_t *)big,
        .data_len = 9 };
    struct buf b;

    memset(big, 'p', sizeof(big));
    big[PROTO_MAX_PATH + 1] = '\0';
    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put(&b, "keep", 4));
    CHECK_EQ_ERR(msg_open_encode(&b, &op, two), FERRY_ERR_USAGE);
    op.npaths = 1;
    CHECK_EQ_ERR(msg_open_encode(&b, &op, empty), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(msg_open_encode(&b, &op, bigp), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(msg_entry_encode(&b, &e), FERRY_ERR_USAGE);
    e.kind = ENTRY_FILE;
    e.target.p = "t";
    e.target.len = 1;
    CHECK_EQ_ERR(msg_entry_encode(&b, &e), FERRY_ERR_USAGE);
    e.target.len = 0;
    e.path.p = big;
    e.path.len = PROTO_MAX_PATH + 1;
    CHECK_EQ_ERR(msg_entry_encode(&b, &e), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(msg_hello_encode(&b, &h), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(msg_block_encode(&b, &blk), FERRY_ERR_USAGE);
    check_kept(&b);
    buf_cleanup(&b);
}

TEST(msg_block_reserve)
{
    struct msg_block m = { .id = 5, .offset = 1u << 20, .raw_len = 60 };
    struct msg_block out;
    uint8_t *data;
    struct buf b;
    size_t mark, n;
    uint8_t *p;

    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put(&b, "keep", 4));
    CHECK_EQ_ERR(msg_block_reserve(&b, PROTO_MAX_BLOCK + 1, &mark, &data),
        FERRY_ERR_USAGE);
    CHECK(data == NULL);
    check_kept(&b);

    /* A commit that breaks the rules removes the whole frame. */
    CHECK_OK(msg_block_reserve(&b, 100, &mark, &data));
    m.data_len = 61;
    CHECK_EQ_ERR(msg_block_commit(&b, mark, 100, &m), FERRY_ERR_USAGE);
    check_kept(&b);

    /* The frame is trimmed to the data actually written. */
    buf_consume(&b, 4);
    CHECK_OK(msg_block_reserve(&b, 100, &mark, &data));
    memset(data, 'd', 100);
    m.data_len = 60;
    CHECK_OK(msg_block_commit(&b, mark, 100, &m));
    p = encoded(&b, 0, MSG_BLOCK, &n);
    CHECK_OK(msg_block_decode(p, n, &out));
    CHECK_EQ_U64(out.id, 5);
    CHECK_EQ_U64(out.offset, 1u << 20);
    CHECK_EQ_U64(out.raw_len, 60);
    CHECK_EQ_U64(out.data_len, 60);
    CHECK(out.data[0] == 'd' && out.data[59] == 'd');
    free(p);
}

/* Decoders' semantic checks */

/* Writes an ENTRY payload field by field with none of the encoder's
 * checks, so that tests can build what msg_entry_encode refuses. */
static void
entry_raw(struct buf *b, const struct msg_entry *m)
{
    CHECK_OK(buf_put_u32(b, m->id));
    CHECK_OK(buf_put_u8(b, m->kind));
    CHECK_OK(buf_put_u32(b, m->mode));
    CHECK_OK(buf_put_u64(b, m->size));
    CHECK_OK(buf_put_u64(b, (uint64_t)m->mtime_sec));
    CHECK_OK(buf_put_u32(b, m->mtime_nsec));
    /* The raw byte: has_hash in bit 0, the state above it. */
    CHECK_OK(buf_put_u8(b, (uint8_t)(m->has_hash | m->state << 1)));
    if (m->has_hash & 1)
        CHECK_OK(buf_put(b, m->hash.b, HASH_LEN));
    CHECK_OK(buf_put_str16(b, m->path.p, m->path.len));
    CHECK_OK(buf_put_str16(b, m->target.p, m->target.len));
}

static int
entry_decode_raw(const struct msg_entry *m)
{
    struct buf b;

    buf_init(&b, MSG_BUF_MAX);
    entry_raw(&b, m);
    return decode_buf(MSG_ENTRY, &b);
}

/* Decodes a file ENTRY with the given path. */
static int
entry_path(const char *p, size_t len)
{
    struct msg_entry m = { .id = 1, .kind = ENTRY_FILE, .mode = 0644 };

    m.path.p = p;
    m.path.len = len;
    return entry_decode_raw(&m);
}

/* A file ENTRY whose path length field says len, with the payload ending
 * right after that field. */
static int
entry_path_len_only(uint16_t len)
{
    struct msg_entry m = { .id = 1, .kind = ENTRY_FILE };
    struct buf b;

    buf_init(&b, MSG_BUF_MAX);
    entry_raw(&b, &m);
    /* Drop the two empty strings (path, target) for the bare length. */
    buf_unreserve(&b, 4);
    CHECK_OK(buf_put_u16(&b, len));
    return decode_buf(MSG_ENTRY, &b);
}

TEST(msg_entry_paths)
{
    static const struct {
        const char *p;
        size_t len;
        int want;
    } cases[] = {
        { LIT("a"), 0 },
        { LIT("a/b.c/..d/d.."), 0 },
        { LIT(""), FERRY_ERR_BAD_PATH },
        { LIT("/abs"), FERRY_ERR_BAD_PATH },
        { LIT("a/../b"), FERRY_ERR_BAD_PATH },
        { LIT(".."), FERRY_ERR_BAD_PATH },
        { LIT("a//b"), FERRY_ERR_BAD_PATH },
        { LIT("a/"), FERRY_ERR_BAD_PATH },
        { LIT("."), FERRY_ERR_BAD_PATH },
        { LIT("./a"), FERRY_ERR_BAD_PATH },
        { LIT("a\0b"), FERRY_ERR_BAD_PATH },
        { LIT("a\0"), FERRY_ERR_BAD_PATH },
    };
    char big[PROTO_MAX_PATH + 1];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("path %zu", i);
        CHECK_EQ_ERR(entry_path(cases[i].p, cases[i].len), cases[i].want);
    }
    check_note_clear();
    memset(big, 'c', sizeof(big));
    CHECK_OK(entry_path(big, FSX_NAME_MAX));
    CHECK_EQ_ERR(entry_path(big, FSX_NAME_MAX + 1), FERRY_ERR_BAD_PATH);
    /* The longest path, of longest components. */
    for (i = FSX_NAME_MAX; i < sizeof(big); i += FSX_NAME_MAX + 1)
        big[i] = '/';
    CHECK_OK(entry_path(big, PROTO_MAX_PATH));
    /* One byte longer is over the wire limit: TOO_LARGE, also when the
     * bytes are not there at all. */
    CHECK_EQ_ERR(entry_path(big, PROTO_MAX_PATH + 1), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(entry_path_len_only(PROTO_MAX_PATH + 1),
        FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(entry_path_len_only(0xffff), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(entry_path_len_only(PROTO_MAX_PATH), FERRY_ERR_SHORT);
}

TEST(msg_entry_fields)
{
    const struct msg_entry base = { .id = 1, .kind = ENTRY_FILE,
        .mode = 0644, .size = 10, .path = { LIT("f") } };
    struct msg_entry m;

    m = base;
    CHECK_OK(entry_decode_raw(&m));
    /* A symlink needs a target, and only a symlink has one. */
    m.kind = ENTRY_SYMLINK;
    m.size = 0;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m.target.p = "t\0u";
    m.target.len = 3;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m.target.len = 1;
    CHECK_OK(entry_decode_raw(&m));
    m.kind = ENTRY_FILE;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m.kind = ENTRY_DIR;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m = base;
    m.target.p = NULL;
    m.kind = 0;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m.kind = ENTRY_SYMLINK + 1;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    /* Only files have a size or a hash. */
    m.kind = ENTRY_DIR;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m.size = 0;
    CHECK_OK(entry_decode_raw(&m));
    m.has_hash = 1;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    /* The state: its three bits, on a file, never TORN and WHOLE. */
    m = base;
    m.state = ENTRY_S_BUSY | ENTRY_S_TORN;
    CHECK_OK(entry_decode_raw(&m));
    m.state = ENTRY_S_KNOWN + 1;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m.state = ENTRY_S_TORN | ENTRY_S_WHOLE;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m.state = ENTRY_S_BUSY | ENTRY_S_IDLE;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m.state = ENTRY_S_IDLE | ENTRY_S_WHOLE;
    CHECK_OK(entry_decode_raw(&m));
    m.state = ENTRY_S_BUSY;
    m.kind = ENTRY_DIR;
    m.size = 0;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m = base;
    m.mode = 0100644;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m = base;
    m.mtime_nsec = 1000000000;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
    m = base;
    m.size = (uint64_t)INT64_MAX + 1;
    CHECK_EQ_ERR(entry_decode_raw(&m), FERRY_ERR_FORMAT);
}

TEST(msg_reply_fields)
{
    static const struct {
        struct msg_reply m;
        int want;
    } cases[] = {
        { { .action = REPLY_SKIP }, 0 },
        { { .action = REPLY_SKIP, .flags = REPLY_F_RESUME },
          FERRY_ERR_FORMAT },
        { { .action = REPLY_FAIL, .flags = REPLY_F_RESUME, .code = -EIO },
          FERRY_ERR_FORMAT },
        { { .action = REPLY_WANT, .flags = 8 }, FERRY_ERR_FORMAT },
        { { .action = REPLY_WANT, .flags = REPLY_F_DELTA | REPLY_F_TENSOR },
          FERRY_ERR_FORMAT },
        { { .action = REPLY_WANT, .flags = REPLY_F_TENSOR }, 0 },
        { { .action = REPLY_FAIL }, FERRY_ERR_FORMAT },
        { { .action = REPLY_WANT, .code = -EIO }, FERRY_ERR_FORMAT },
        { { .action = REPLY_SKIP, .code = -EIO }, FERRY_ERR_FORMAT },
        { { .action = 0 }, FERRY_ERR_FORMAT },
        { { .action = REPLY_FAIL + 1 }, FERRY_ERR_FORMAT },
        { { .action = REPLY_WANT, .flags = REPLY_F_RESUME }, 0 },
    };
    struct buf b;
    size_t i;

    /* The encoder does not check these: it sends what it is given. */
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("case %zu", i);
        buf_init(&b, MSG_BUF_MAX);
        CHECK_OK(msg_reply_encode(&b, &cases[i].m));
        buf_consume(&b, PROTO_FRAME_HEADER);
        CHECK_EQ_ERR(decode_buf(MSG_REPLY, &b), cases[i].want);
    }
}

/* Writes a BLOCK payload with the given data length field (which may
 * disagree with the n data bytes that follow it). */
static int
block_decode_raw(const struct msg_block *m, uint32_t len_field, size_t n)
{
    static const uint8_t data[64];
    struct buf b;

    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put_u32(&b, m->id));
    CHECK_OK(buf_put_u64(&b, m->offset));
    CHECK_OK(buf_put_u8(&b, m->flags));
    CHECK_OK(buf_put_u32(&b, m->raw_len));
    CHECK_OK(buf_put(&b, m->hash.b, HASH_LEN));
    CHECK_OK(buf_put_u32(&b, len_field));
    CHECK_OK(buf_put(&b, data, n));
    return decode_buf(MSG_BLOCK, &b);
}

TEST(msg_block_fields)
{
    struct msg_block m = { .id = 1, .raw_len = 16 };

    CHECK_OK(block_decode_raw(&m, 16, 16));
    CHECK_EQ_ERR(block_decode_raw(&m, 15, 15), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(block_decode_raw(&m, 16, 15), FERRY_ERR_SHORT);
    CHECK_EQ_ERR(block_decode_raw(&m, 16, 17), FERRY_ERR_TRAILING);
    /* Data lengths over the limit: TOO_LARGE before SHORT. */
    CHECK_EQ_ERR(block_decode_raw(&m, PROTO_MAX_BLOCK + 1, 0),
        FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(block_decode_raw(&m, 0xffffffffu, 16), FERRY_ERR_TOO_LARGE);
    /* raw_len must be 1..PROTO_MAX_BLOCK. */
    m.raw_len = 0;
    CHECK_EQ_ERR(block_decode_raw(&m, 0, 0), FERRY_ERR_FORMAT);
    m.flags = BLOCK_F_ZERO;
    CHECK_EQ_ERR(block_decode_raw(&m, 0, 0), FERRY_ERR_FORMAT);
    m.raw_len = PROTO_MAX_BLOCK + 1;
    CHECK_EQ_ERR(block_decode_raw(&m, 0, 0), FERRY_ERR_FORMAT);
    m.raw_len = PROTO_MAX_BLOCK;
    CHECK_OK(block_decode_raw(&m, 0, 0));
    /* ZERO carries no data and no other flag. */
    CHECK_EQ_ERR(block_decode_raw(&m, 1, 1), FERRY_ERR_FORMAT);
    m.flags = BLOCK_F_ZERO | BLOCK_F_ZSTD;
    CHECK_EQ_ERR(block_decode_raw(&m, 0, 0), FERRY_ERR_FORMAT);
    /* ZSTD carries some data, unknown flags are refused. */
    m.flags = BLOCK_F_ZSTD;
    CHECK_EQ_ERR(block_decode_raw(&m, 0, 0), FERRY_ERR_FORMAT);
    CHECK_OK(block_decode_raw(&m, 3, 3));
    m.flags = 4;
    CHECK_EQ_ERR(block_decode_raw(&m, 3, 3), FERRY_ERR_FORMAT);
    /* The block must end within a signed 64-bit file offset. */
    m.flags = BLOCK_F_ZERO;
    m.offset = (uint64_t)INT64_MAX - PROTO_MAX_BLOCK;
    CHECK_OK(block_decode_raw(&m, 0, 0));
    m.offset++;
    CHECK_EQ_ERR(block_decode_raw(&m, 0, 0), FERRY_ERR_FORMAT);
    m.offset = UINT64_MAX;
    CHECK_EQ_ERR(block_decode_raw(&m, 0, 0), FERRY_ERR_FORMAT);
}

/* Encodes a HELLO, applies patch at byte off of the payload and decodes. */
static int
hello_patched(const struct msg_hello *h, size_t off, const void *patch,
    size_t n)
{
    struct buf b;
    uint8_t *p;
    size_t len;
    int r;

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_hello_encode(&b, h), MSG_HELLO, &len);
    CHECK(off + n <= len);
    memcpy(p + off, patch, n);
    r = decode_checked(MSG_HELLO, p, len);
    free(p);
    return r;
}

TEST(msg_hello_fields)
{
    struct msg_hello h = { .version_min = 1, .version_max = 1,
        .software = { LIT("x") } };

    CHECK_OK(hello_patched(&h, 0, "FRY1", 4));
    CHECK_EQ_ERR(hello_patched(&h, 0, "FRY2", 4), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(hello_patched(&h, 0, "fry1", 4), FERRY_ERR_FORMAT);
    h.version_min = 0;
    CHECK_EQ_ERR(hello_patched(&h, 0, "FRY1", 4), FERRY_ERR_FORMAT);
    h.version_min = 3;
    h.version_max = 2;
    CHECK_EQ_ERR(hello_patched(&h, 0, "FRY1", 4), FERRY_ERR_FORMAT);
    /* A software length over the limit, with bytes missing. */
    h.version_min = 1;
    CHECK_EQ_ERR(hello_patched(&h, 16, "\x00\x41", 2), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(hello_patched(&h, 16, "\x00\x02", 2), FERRY_ERR_SHORT);
}

/* Builds an OPEN payload whose npaths field says npaths while count paths
 * follow, with none of the encoder's checks. */
static int
open_decode_raw(uint8_t op, uint32_t flags, uint32_t bs, uint16_t npaths,
    const char *const *paths, size_t count)
{
    struct buf b;
    size_t i;

    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put_u8(&b, op));
    CHECK_OK(buf_put_u32(&b, flags));
    CHECK_OK(buf_put_u32(&b, bs));
    CHECK_OK(buf_put(&b, "0123456789abcdef", PROTO_TRANSFER_ID_LEN));
    CHECK_OK(buf_put(&b, "0123456789abcdef0123456789abcdef",
        PROTO_TRANSFER_KEY_LEN));
    CHECK_OK(buf_put_u16(&b, npaths));
    for (i = 0; i < count; i++)
        CHECK_OK(buf_put_str16(&b, paths[i], strlen(paths[i])));
    return decode_buf(MSG_OPEN, &b);
}

TEST(msg_open_fields)
{
    static const char *const two[] = { "a", "b" };
    static const char *const empty[] = { "" };
    const uint32_t bs = PROTO_DEFAULT_BLOCK;

    CHECK_OK(open_decode_raw(OPEN_PUSH, 0, bs, 1, two, 1));
    CHECK_OK(open_decode_raw(OPEN_PULL, 0, bs, 2, two, 2));
    /* READINESS is a LIST's. */
    CHECK_OK(open_decode_raw(OPEN_LIST, OPEN_F_READINESS, bs, 1, two, 1));
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, OPEN_F_READINESS, bs, 1, two, 1),
        FERRY_ERR_FORMAT);
    /* MKPATH is for what makes a destination on the agent: a PUSH, a
     * KEEP (its only flag). */
    CHECK_OK(open_decode_raw(OPEN_PUSH, OPEN_F_MKPATH, bs, 1, two, 1));
    CHECK_OK(open_decode_raw(OPEN_KEEP, OPEN_F_MKPATH, bs, 2, two, 2));
    CHECK_EQ_ERR(open_decode_raw(OPEN_KEEP, OPEN_F_CHECKSUM, bs, 2, two, 2),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, OPEN_F_MKPATH, bs, 1, two, 1),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_LIST, OPEN_F_MKPATH, bs, 1, two, 1),
        FERRY_ERR_FORMAT);
    /* REPLACE_DIRS is a push's (a pull's client replaces its own). */
    CHECK_OK(open_decode_raw(OPEN_PUSH, OPEN_F_REPLACE_DIRS, bs, 1, two, 1));
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, OPEN_F_REPLACE_DIRS, bs, 1, two,
        1), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_KEEP, OPEN_F_REPLACE_DIRS, bs, 2, two,
        2), FERRY_ERR_FORMAT);
    /* ADOPT is a push's, its DIR one path more, after BASIS_FILE's. */
    {
        static const char *const p3[] = { "dest", "basis", "stage" };

        CHECK_OK(open_decode_raw(OPEN_PUSH, OPEN_F_ADOPT, bs, 2, p3, 2));
        CHECK_OK(open_decode_raw(OPEN_PUSH, OPEN_F_ADOPT | OPEN_F_BASIS_FILE,
            bs, 3, p3, 3));
        CHECK_EQ_ERR(open_decode_raw(OPEN_PUSH, OPEN_F_ADOPT, bs, 1, p3, 1),
            FERRY_ERR_FORMAT);
        CHECK_EQ_ERR(open_decode_raw(OPEN_PUSH, OPEN_F_ADOPT |
            OPEN_F_BASIS_FILE, bs, 2, p3, 2), FERRY_ERR_FORMAT);
        CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, OPEN_F_ADOPT, bs, 2, p3, 2),
            FERRY_ERR_FORMAT);
        CHECK_EQ_ERR(open_decode_raw(OPEN_KEEP, OPEN_F_ADOPT, bs, 2, p3, 2),
            FERRY_ERR_FORMAT);
    }
    /* No paths at all: malformed, not over a limit. */
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, bs, 0, two, 0),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, bs, 0, two, 2),
        FERRY_ERR_FORMAT);
    /* Only a pull names more than one path. */
    CHECK_EQ_ERR(open_decode_raw(OPEN_PUSH, 0, bs, 2, two, 2),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_STATUS, 0, bs, 2, two, 2),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_CLEAN, 0, bs, 2, two, 2),
        FERRY_ERR_FORMAT);
    CHECK_OK(open_decode_raw(OPEN_STATUS, 0, bs, 1, two, 1));
    CHECK_OK(open_decode_raw(OPEN_CLEAN, 0, bs, 1, two, 1));
    /* npaths and the paths present disagree. */
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, bs, 2, two, 1),
        FERRY_ERR_SHORT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, bs, 1, two, 2),
        FERRY_ERR_TRAILING);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, bs,
        PROTO_MAX_OPEN_PATHS + 1, two, 2), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, bs, 1, empty, 1),
        FERRY_ERR_FORMAT);
    /* Block sizes: powers of two from PROTO_MIN_BLOCK to PROTO_MAX_BLOCK. */
    CHECK_OK(open_decode_raw(OPEN_PULL, 0, PROTO_MIN_BLOCK, 1, two, 1));
    CHECK_OK(open_decode_raw(OPEN_PULL, 0, PROTO_MAX_BLOCK, 1, two, 1));
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, 3u << 16, 1, two, 1),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, PROTO_MIN_BLOCK / 2, 1, two,
        1), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, PROTO_MAX_BLOCK * 2, 1, two,
        1), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, 0, 1, two, 1),
        FERRY_ERR_FORMAT);
    /* Unknown ops and flags. */
    CHECK_EQ_ERR(open_decode_raw(0, 0, bs, 1, two, 1), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_DELETE + 1, 0, bs, 1, two, 1),
        FERRY_ERR_FORMAT);
    /* LIST and DELETE take many paths, STATUS one. */
    CHECK_OK(open_decode_raw(OPEN_LIST, 0, bs, 2, two, 2));
    CHECK_OK(open_decode_raw(OPEN_DELETE, 0, bs, 2, two, 2));
    CHECK_EQ_ERR(open_decode_raw(OPEN_STATUS, 0, bs, 2, two, 2),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 1u << 31, bs, 1, two, 1),
        FERRY_ERR_FORMAT);
}

/*
 * The path list of an OPEN is limited to PROTO_MAX_OPEN_BYTES on the wire
 * (lengths included): 63 paths of PROTO_MAX_PATH bytes and one of last
 * bytes fill it exactly. The encoder and the decoder agree on the limit.
 */
static void
open_bytes(size_t last, int want)
{
    enum { N = PROTO_MAX_OPEN_BYTES / (PROTO_MAX_PATH + 2) + 1 };
    char *full = check_alloc(PROTO_MAX_PATH + 1), *tail = check_alloc(last + 1);
    struct msg_open op = { .op = OPEN_PULL, .block_size = 1u << 20,
        .npaths = N };
    const char *paths[N];
    struct buf b;
    size_t i;

    memset(full, 'p', PROTO_MAX_PATH);
    full[PROTO_MAX_PATH] = '\0';
    memset(tail, 't', last);
    tail[last] = '\0';
    for (i = 0; i + 1 < N; i++)
        paths[i] = full;
    paths[N - 1] = tail;
    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put(&b, "keep", 4));
    CHECK_EQ_ERR(msg_open_encode(&b, &op, paths), want);
    if (want != 0)
        check_kept(&b);
    buf_cleanup(&b);
    CHECK_EQ_ERR(open_decode_raw(OPEN_PULL, 0, PROTO_DEFAULT_BLOCK, N, paths,
        N), want);
    free(full);
    free(tail);
}

TEST(msg_open_bytes_limit)
{
    size_t last = PROTO_MAX_OPEN_BYTES % (PROTO_MAX_PATH + 2) - 2;

    open_bytes(last, 0);
    open_bytes(last + 1, FERRY_ERR_TOO_LARGE);
}

TEST(msg_open_path_iter)
{
    static const char *const paths[] = { "one", "/two/2", "three 3" };
    struct msg_open in = { .op = OPEN_PULL, .block_size = PROTO_MIN_BLOCK,
        .npaths = 3 }, out;
    struct msg_str s = { "x", 1 };
    struct buf b;
    size_t n, pos = 0, i;
    uint8_t *p;

    /* A zeroed (or failed) OPEN has no paths. */
    memset(&out, 0, sizeof(out));
    CHECK_EQ_ERR(msg_open_path(&out, &pos, &s), FERRY_ERR_SHORT);
    CHECK(s.p == NULL && s.len == 0);

    buf_init(&b, MSG_BUF_MAX);
    p = encoded(&b, msg_open_encode(&b, &in, paths), MSG_OPEN, &n);
    CHECK_OK(msg_open_decode(p, n, &out));
    CHECK(out.paths_raw >= p && out.paths_raw + out.paths_len == p + n);
    for (i = 0; i < 3; i++) {
        size_t before = pos;

        CHECK_OK(msg_open_path(&out, &pos, &s));
        check_str(&s, paths[i], strlen(paths[i]));
        CHECK(s.p == (const char *)out.paths_raw + before + 2);
        CHECK_EQ_U64(pos, before + 2 + strlen(paths[i]));
    }
    CHECK_EQ_U64(pos, out.paths_len);
    CHECK_EQ_ERR(msg_open_path(&out, &pos, &s), FERRY_ERR_SHORT);
    CHECK(s.p == NULL && s.len == 0);
    free(p);
}

TEST(msg_ready_fields)
{
    static const struct {
        const char *p;
        size_t len;
        int want;
    } cases[] = {
        { LIT(""), 0 },
        { LIT("name"), 0 },
        { LIT("a/b"), FERRY_ERR_BAD_PATH },
        { LIT(".."), FERRY_ERR_BAD_PATH },
        { LIT("."), FERRY_ERR_BAD_PATH },
        { LIT("/"), FERRY_ERR_BAD_PATH },
        { LIT("n\0"), FERRY_ERR_BAD_PATH },
    };
    char big[FSX_NAME_MAX + 1];
    struct buf b;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("rename %zu", i);
        buf_init(&b, MSG_BUF_MAX);
        CHECK_OK(buf_put_str16(&b, cases[i].p, cases[i].len));
        CHECK_EQ_ERR(decode_buf(MSG_READY, &b), cases[i].want);
    }
    check_note_clear();
    memset(big, 'n', sizeof(big));
    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put_str16(&b, big, FSX_NAME_MAX + 1));
    CHECK_EQ_ERR(decode_buf(MSG_READY, &b), FERRY_ERR_TOO_LARGE);
}

TEST(msg_plan_fields)
{
    static const struct {
        struct msg_plan m;
        int want;
    } cases[] = {
        { { .ntop = 2, .entries_total = 5, .files_total = 5 }, 0 },
        { { .ntop = 2, .entries_total = 5, .files_total = 6 },
          FERRY_ERR_FORMAT },
        { { .flags = PLAN_F_SINGLE_FILE, .ntop = 1, .entries_total = 1,
            .files_total = 1, .bytes_total = 9 }, 0 },
        { { .flags = PLAN_F_SINGLE_FILE, .ntop = 2, .entries_total = 2,
            .files_total = 2 }, FERRY_ERR_FORMAT },
        { { .flags = PLAN_F_SINGLE_FILE }, FERRY_ERR_FORMAT },
        { { .flags = 2, .ntop = 1, .entries_total = 1, .files_total = 1 },
          FERRY_ERR_FORMAT },
        /* More top-level names than entries is legal: an empty "dir/"
         * source counts as a top with no entry, and a sender that
         * reconnects leaves out the files finished before. */
        { { .ntop = 1 }, 0 },
        { { .ntop = 3, .entries_total = 1, .files_total = 1 }, 0 },
        { { .flags = PLAN_F_SINGLE_FILE, .ntop = 1 }, 0 },
    };
    struct buf b;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("case %zu", i);
        buf_init(&b, MSG_BUF_MAX);
        CHECK_OK(msg_plan_encode(&b, &cases[i].m));
        buf_consume(&b, PROTO_FRAME_HEADER);
        CHECK_EQ_ERR(decode_buf(MSG_PLAN, &b), cases[i].want);
    }
}

/* Writes a PARTIAL payload with none of the encoder's checks. */
static int
partial_decode_raw(const char *path, size_t len, uint64_t size,
    uint64_t done, uint64_t age)
{
    struct buf b;

    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put_str16(&b, path, len));
    CHECK_OK(buf_put_u64(&b, size));
    CHECK_OK(buf_put_u64(&b, done));
    CHECK_OK(buf_put_u64(&b, age));
    return decode_buf(MSG_PARTIAL, &b);
}

TEST(msg_partial_fields)
{
    struct msg_partial m = { .path = { LIT("f") }, .size = 1, .done = 2 };
    struct buf b;

    CHECK_OK(partial_decode_raw(LIT("a/b"), 10, 10, 0));
    CHECK_EQ_ERR(partial_decode_raw(LIT("a/b"), 10, 11, 0),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(partial_decode_raw(LIT("a/b"), 10, 0, UINT64_MAX),
        FERRY_ERR_FORMAT);
    /* Bad paths give BAD_PATH, as in ENTRY. */
    CHECK_EQ_ERR(partial_decode_raw(LIT("../b"), 10, 0, 0),
        FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(partial_decode_raw(LIT("/b"), 10, 0, 0),
        FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(partial_decode_raw(LIT(""), 10, 0, 0), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(partial_decode_raw(LIT("a\0b"), 10, 0, 0),
        FERRY_ERR_BAD_PATH);
    /* A range error wins over a bad path: the fields are checked first. */
    CHECK_EQ_ERR(partial_decode_raw(LIT("../b"), 10, 11, 0),
        FERRY_ERR_FORMAT);
    buf_init(&b, MSG_BUF_MAX);
    CHECK_OK(buf_put(&b, "keep", 4));
    CHECK_EQ_ERR(msg_partial_encode(&b, &m), FERRY_ERR_USAGE);
    m.done = 0;
    m.age_s = -1;
    CHECK_EQ_ERR(msg_partial_encode(&b, &m), FERRY_ERR_USAGE);
    check_kept(&b);
    buf_cleanup(&b);
}

/* Other */

TEST(msg_err_wire)
{
    static const int errnos[] = { EPERM, ENOENT, EIO, EACCES, EEXIST,
        ENOTDIR, EISDIR, EINVAL, ENOSPC, EROFS, ENAMETOOLONG, ELOOP, EDQUOT,
        ENOMEM, EPIPE, ENOTEMPTY, EXDEV };
    static const int32_t unknown_wire[] = { 1, 4096, INT32_MAX, -3,
        -1500, -999, FERRY_ERR_TORN - 1, INT32_MIN };
    size_t i;
    int r;

    CHECK_EQ_INT(proto_err_to_wire(0), 0);
    CHECK_EQ_INT(proto_err_from_wire(0), 0);
    /* Errnos travel as their Linux numbers. */
    CHECK_EQ_INT(proto_err_to_wire(-ENOENT), -2);
    CHECK_EQ_INT(proto_err_to_wire(-EDQUOT), -122);
    for (i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++) {
        check_note("errno %d", errnos[i]);
        CHECK_EQ_ERR(proto_err_from_wire(proto_err_to_wire(-errnos[i])),
            -errnos[i]);
    }
    for (r = FERRY_ERR_SHORT; ferry_err_known(r); r--) {
        check_note("error %d", r);
        CHECK_EQ_INT(proto_err_to_wire(r), r);
        CHECK_EQ_ERR(proto_err_from_wire(r), r);
    }
    CHECK_EQ_INT(r, FERRY_ERR_TORN - 1);
    check_note_clear();
    /* Codes with no portable meaning become PEER, both ways. */
    CHECK_EQ_ERR(proto_err_to_wire(-ESRCH), FERRY_ERR_PEER);
    CHECK_EQ_ERR(proto_err_to_wire(5), FERRY_ERR_PEER);
    for (i = 0; i < sizeof(unknown_wire) / sizeof(unknown_wire[0]); i++) {
        check_note("wire %d", unknown_wire[i]);
        CHECK_EQ_ERR(proto_err_from_wire(unknown_wire[i]), FERRY_ERR_PEER);
    }
}

TEST(msg_type_names)
{
    uint8_t t;

    CHECK_EQ_STR(msg_type_name(MSG_HELLO), "HELLO");
    CHECK_EQ_STR(msg_type_name(MSG_FILE_END), "FILE_END");
    CHECK_EQ_STR(msg_type_name(MSG_SUMMARY), "SUMMARY");
    CHECK_EQ_STR(msg_type_name(0), "?");
    CHECK_EQ_STR(msg_type_name(MSG_TYPE_MAX + 1), "?");
    CHECK_EQ_STR(msg_type_name(255), "?");
    CHECK_EQ_STR(msg_type_name(MSG_VOL_END), "VOL_END");
    CHECK_EQ_STR(msg_type_name(MSG_DELTA), "DELTA");
    CHECK_EQ_STR(msg_type_name(MSG_DELTA_BLOCKS), "DELTA_BLOCKS");
    CHECK_EQ_STR(msg_type_name(MSG_DELTA_STOP), "DELTA_STOP");
    CHECK_EQ_STR(msg_type_name(MSG_DELTA_GO), "DELTA_GO");
    CHECK_EQ_STR(msg_type_name(25), "?");
    for (t = 1; t <= MSG_TYPE_MAX; t++)
        CHECK_EQ_U64(strcmp(msg_type_name(t), "?") != 0, msg_type_known(t));
}

/* Rendezvous datagrams (proto/rvmsg.h): what one agent of a box tells
 * another, which may run for a key restricted to less. */

static void
rv_fill(struct rvmsg *m, uint8_t kind, const char *scope, size_t nbytes)
{
    static const uint8_t bytes[RVMSG_MAX_BYTES + 1];

    memset(m, 0, sizeof(*m));
    m->kind = kind;
    memset(m->transfer_id, 0x42, sizeof(m->transfer_id));
    memset(m->transfer_key, 0x99, sizeof(m->transfer_key));
    m->scope = scope;
    m->scope_len = strlen(scope);
    m->bytes = bytes;
    m->nbytes = nbytes;
}

TEST(msg_rvmsg_rules)
{
    static char scope[RVMSG_MAX_SCOPE + 2];
    struct rvmsg m, out;
    struct buf b;

    buf_init(&b, RVMSG_MAX);
    rv_fill(&m, RVMSG_JOIN, "wo:/srv", 9);
    CHECK_OK(rvmsg_encode(&b, &m));
    CHECK_OK(rvmsg_decode(buf_ptr(&b), buf_used(&b), &out));
    CHECK_EQ_INT(out.kind, RVMSG_JOIN);
    CHECK_EQ_MEM(out.transfer_key, m.transfer_key, sizeof(m.transfer_key));
    CHECK_EQ_U64(out.scope_len, 7);
    CHECK_EQ_MEM(out.scope, "wo:/srv", 7);
    CHECK_EQ_U64(out.nbytes, 9);
    buf_cleanup(&b);
    /* Kinds, the scope and the bytes each kind may carry. */
    rv_fill(&m, 'X', "any", 1);
    CHECK_EQ_ERR(rvmsg_encode(&b, &m), FERRY_ERR_USAGE);
    rv_fill(&m, RVMSG_JOIN, "", 1);
    CHECK_EQ_ERR(rvmsg_encode(&b, &m), FERRY_ERR_USAGE);
    rv_fill(&m, RVMSG_JOIN, "any", 0);
    CHECK_EQ_ERR(rvmsg_encode(&b, &m), FERRY_ERR_USAGE);
    rv_fill(&m, RVMSG_STOP, "any", 1);
    CHECK_EQ_ERR(rvmsg_encode(&b, &m), FERRY_ERR_USAGE);
    rv_fill(&m, RVMSG_JOIN, "any", RVMSG_MAX_BYTES + 1);
    CHECK_EQ_ERR(rvmsg_encode(&b, &m), FERRY_ERR_USAGE);
    rv_fill(&m, RVMSG_JOIN, "a\0y", 1);
    m.scope_len = 3;
    CHECK_EQ_ERR(rvmsg_encode(&b, &m), FERRY_ERR_USAGE);
    /* The longest scope and bytes pass, one more does not. */
    memset(scope, 'x', sizeof(scope) - 1);
    scope[RVMSG_MAX_SCOPE] = '\0';
    rv_fill(&m, RVMSG_JOIN, scope, RVMSG_MAX_BYTES);
    buf_init(&b, RVMSG_MAX);
    CHECK_OK(rvmsg_encode(&b, &m));
    CHECK_EQ_U64(buf_used(&b), RVMSG_MAX);
    CHECK_OK(rvmsg_decode(buf_ptr(&b), buf_used(&b), &out));
    buf_cleanup(&b);
    scope[RVMSG_MAX_SCOPE] = 'x';
    rv_fill(&m, RVMSG_JOIN, scope, 1);
    CHECK_EQ_ERR(rvmsg_encode(&b, &m), FERRY_ERR_USAGE);
}

/* A length field over its limit is TOO_LARGE before anything is read;
 * a datagram cut anywhere or with a byte more fails; every flipped bit
 * keeps the decoder's promises (fuzz_rvmsg). */
TEST(msg_rvmsg_mutate)
{
    uint8_t *p, *copy;
    struct rvmsg out;
    struct buf b;
    size_t i, n, len, pos, off;
    int bit, rc;

    CHECK(fuzz_rvmsg_seed_count() > 0);
    for (i = 0; i < fuzz_rvmsg_seed_count(); i++) {
        buf_init(&b, RVMSG_MAX);
        CHECK_OK(fuzz_rvmsg_seed(i, &b));
        n = buf_used(&b);
        p = check_dup(buf_ptr(&b), n);
        buf_cleanup(&b);
        check_note("rvmsg seed %zu", i);
        CHECK(fuzz_rvmsg(p, n, &rc) == NULL);
        CHECK_OK(rc);
        for (len = 0; len < n; len++) {
            CHECK(fuzz_rvmsg(p, len, &rc) == NULL);
            CHECK(rc != 0);
        }
        copy = check_alloc(n + 1);
        memcpy(copy, p, n);
        copy[n] = 0;
        CHECK(fuzz_rvmsg(copy, n + 1, &rc) == NULL);
        CHECK_EQ_ERR(rc, FERRY_ERR_TRAILING);
        free(copy);
        copy = check_dup(p, n);
        for (pos = 0; pos < n; pos++) {
            if (!mutate_picks(pos, n))
                continue;
            for (bit = 0; bit < 8; bit++) {
                copy[pos] ^= (uint8_t)(1u << bit);
                CHECK(fuzz_rvmsg(copy, n, &rc) == NULL);
                copy[pos] = p[pos];
            }
        }
        /* The scope's length at its limit + 1 and at 0xffff. */
        off = 1 + PROTO_TRANSFER_ID_LEN + PROTO_TRANSFER_KEY_LEN;
        copy[off] = (uint8_t)((RVMSG_MAX_SCOPE + 1) >> 8);
        copy[off + 1] = (uint8_t)(RVMSG_MAX_SCOPE + 1);
        CHECK_EQ_ERR(rvmsg_decode(copy, n, &out), FERRY_ERR_TOO_LARGE);
        copy[off] = copy[off + 1] = 0xff;
        CHECK_EQ_ERR(rvmsg_decode(copy, n, &out), FERRY_ERR_TOO_LARGE);
        free(copy);
        free(p);
    }
    check_note_clear();
}
