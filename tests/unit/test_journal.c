/*
 * Tests for proto/journal.c, the resume journal format: a round trip, a
 * mutation test over the seeds, and the checks the header decoder makes.
 *
 * Everything decoded goes through fuzz_journal (tests/fuzz/fuzz_common.c),
 * which checks the decoders' promises whenever they accept, and from heap
 * copies of exactly the input's size, so ASan reports any read past it.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "../../common/hash.h"
#include "../../proto/journal.h"
#include "../../proto/limits.h"
#include "../fuzz/fuzz_common.h"
#include "../fuzz/fuzz_seed.h"
#include "check.h"

#define JNL_BUF_MAX (1u << 20)
/* Above this many bytes, the mutation test flips bits in a sample. */
#define JNL_MUTATE_ALL 512

/* Runs fuzz_journal on a heap copy of (p, n) and returns the header's
 * result; fails the test if a promise is broken. */
static int
jnl_checked(const uint8_t *p, size_t n)
{
    uint8_t *copy = check_dup(p, n);
    const char *why;
    int rc;

    if ((why = fuzz_journal(copy, n, &rc)) != NULL)
        check_fail(__FILE__, __LINE__, "%s", why);
    free(copy);
    return rc;
}

static const struct journal_header jnl_header = {
    .block_size = PROTO_DEFAULT_BLOCK, .size = 10u << 20,
    .mtime_sec = -1700000000, .mtime_nsec = 999999999, .mode = 04755,
    .path = "dir/big file.iso", .path_len = 16,
};

TEST(journal_roundtrip)
{
    struct journal_record rec, out;
    struct journal_header h;
    const uint8_t *p;
    struct buf b;
    size_t used, i;

    buf_init(&b, JNL_BUF_MAX);
    CHECK_OK(journal_header_encode(&b, &jnl_header));
    CHECK_EQ_U64(buf_used(&b), JOURNAL_HEADER_FIXED + 16);
    CHECK_EQ_MEM(buf_ptr(&b), JOURNAL_MAGIC, 4);
    for (i = 0; i < 3; i++) {
        rec.index = i;
        hash_block(&i, sizeof(i), &rec.hash);
        CHECK_OK(journal_record_encode(&b, &rec));
    }
    CHECK_EQ_U64(buf_used(&b),
        JOURNAL_HEADER_FIXED + 16 + 3 * JOURNAL_RECORD_LEN);
    CHECK_OK(jnl_checked(buf_ptr(&b), buf_used(&b)));
    p = buf_ptr(&b);
    CHECK_OK(journal_header_decode(p, buf_used(&b), &h, &used));
    CHECK_EQ_U64(used, JOURNAL_HEADER_FIXED + 16);
    CHECK_EQ_U64(h.block_size, jnl_header.block_size);
    CHECK_EQ_U64(h.size, jnl_header.size);
    CHECK_EQ_INT(h.mtime_sec, jnl_header.mtime_sec);
    CHECK_EQ_U64(h.mtime_nsec, jnl_header.mtime_nsec);
    CHECK_EQ_U64(h.mode, jnl_header.mode);
    CHECK_EQ_U64(h.path_len, 16);
    CHECK_EQ_MEM(h.path, "dir/big file.iso", 16);
    /* The path is borrowed from the bytes. */
    CHECK((const uint8_t *)h.path > p && (const uint8_t *)h.path < p + used);
    for (i = 0; i < 3; i++) {
        CHECK_OK(journal_record_decode(p + used + i * JOURNAL_RECORD_LEN,
            JOURNAL_RECORD_LEN, &out));
        CHECK_EQ_U64(out.index, i);
        hash_block(&i, sizeof(i), &rec.hash);
        CHECK(hash_equal(&out.hash, &rec.hash));
    }
    buf_cleanup(&b);
}

/* Cuts seed i at every length and flips its bits (all of them in a small
 * seed; a sample at both ends of a big one). */
static void
mutate_seed(size_t i)
{
    char name[FUZZ_SEED_NAME_MAX];
    struct journal_header h;
    size_t n, k, bit, used;
    uint8_t *p;
    struct buf b;

    fuzz_journal_seed_name(i, name);
    buf_init(&b, JNL_BUF_MAX);
    CHECK_OK(fuzz_journal_seed(i, &b));
    n = buf_used(&b);
    p = check_dup(buf_ptr(&b), n);
    buf_cleanup(&b);
    check_note("%s whole", name);
    CHECK_OK(jnl_checked(p, n));
    CHECK_OK(journal_header_decode(p, n, &h, &used));
    /* A cut header is SHORT; any cut after it leaves the header whole
     * (fuzz_journal checks the torn record). */
    for (k = 0; k < n; k++) {
        check_note("%s cut to %zu bytes", name, k);
        CHECK_EQ_ERR(jnl_checked(p, k), k < used ? FERRY_ERR_SHORT : 0);
    }
    for (k = 0; k < n; k++) {
        if (n > JNL_MUTATE_ALL && k >= 64 && k < n - 128)
            continue;
        for (bit = 0; bit < 8; bit++) {
            check_note("%s byte %zu bit %zu", name, k, bit);
            p[k] ^= (uint8_t)(1u << bit);
            (void)jnl_checked(p, n);
            p[k] ^= (uint8_t)(1u << bit);
        }
    }
    check_note_clear();
    free(p);
}

TEST(journal_mutate)
{
    size_t i;

    CHECK(fuzz_journal_seed_count() >= 3);
    for (i = 0; i < fuzz_journal_seed_count(); i++)
        mutate_seed(i);
}

/* The fields of a raw header, written with none of the encoder's checks. */
struct jraw {
    const char *magic;
    uint32_t block_size;
    uint64_t size;
    uint32_t mtime_nsec;
    uint32_t mode;
    const char *path;
    size_t path_len;   /* written as the str16 length */
    size_t present;    /* path bytes actually written */
    int bad_check;
};

/* Decodes the raw header r (through jnl_checked) and returns the result. */
static int
jnl_raw(const struct jraw *r)
{
    struct buf b;
    uint64_t c;
    int rc;

    buf_init(&b, JNL_BUF_MAX);
    CHECK_OK(buf_put(&b, r->magic != NULL ? r->magic : JOURNAL_MAGIC, 4));
    CHECK_OK(buf_put_u32(&b, r->block_size));
    CHECK_OK(buf_put_u64(&b, r->size));
    CHECK_OK(buf_put_u64(&b, 1700000000));
    CHECK_OK(buf_put_u32(&b, r->mtime_nsec));
    CHECK_OK(buf_put_u32(&b, r->mode));
    CHECK_OK(buf_put_u16(&b, (uint16_t)r->path_len));
    if (r->present > 0)
        CHECK_OK(buf_put(&b, r->path, r->present));
    if (r->present == r->path_len) {
        c = hash_name64(buf_ptr(&b), buf_used(&b)) + (r->bad_check ? 1 : 0);
        CHECK_OK(buf_put_u64(&b, c));
    }
    rc = jnl_checked(buf_ptr(&b), buf_used(&b));
    buf_cleanup(&b);
    return rc;
}

TEST(journal_header_fields)
{
    static char big[PROTO_MAX_PATH + 1];
    struct jraw ok = { NULL, PROTO_DEFAULT_BLOCK, 10u << 20, 0, 0644,
        "a/b", 3, 3, 0 }, r;
    static const struct {
        const char *p;
        size_t len;
    } bad_paths[] = {
        { LIT("") }, { LIT("/a") }, { LIT("a/") }, { LIT("a//b") },
        { LIT("..") }, { LIT("a/../b") }, { LIT("./a") }, { LIT("a\0b") },
    };
    size_t i;

    CHECK_OK(jnl_raw(&ok));
    /* Block sizes: powers of two from PROTO_MIN_BLOCK to PROTO_MAX_BLOCK. */
    r = ok, r.block_size = PROTO_MIN_BLOCK;
    CHECK_OK(jnl_raw(&r));
    r.block_size = PROTO_MAX_BLOCK;
    CHECK_OK(jnl_raw(&r));
    r.block_size = PROTO_MIN_BLOCK / 2;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    r.block_size = PROTO_MAX_BLOCK * 2;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    r.block_size = 3u << 16;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    r.block_size = 0;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    /* Size, mtime_nsec, mode. */
    r = ok, r.size = (uint64_t)INT64_MAX;
    CHECK_OK(jnl_raw(&r));
    r.size = (uint64_t)INT64_MAX + 1;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    r = ok, r.mtime_nsec = 999999999;
    CHECK_OK(jnl_raw(&r));
    r.mtime_nsec = 1000000000;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    r = ok, r.mode = 07777;
    CHECK_OK(jnl_raw(&r));
    r.mode = 0100644;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    /* Magic and check. */
    r = ok, r.magic = "FJN3";
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    /* The format before this one is told apart, so a user can be told
     * why such partials are sent again. */
    r = ok, r.magic = JOURNAL_MAGIC_V1;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_VERSION);
    r = ok, r.bad_check = 1;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    /* Paths. */
    for (i = 0; i < sizeof(bad_paths) / sizeof(bad_paths[0]); i++) {
        check_note("path %zu", i);
        r = ok;
        r.path = bad_paths[i].p;
        r.path_len = r.present = bad_paths[i].len;
        CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_FORMAT);
    }
    check_note_clear();
    memset(big, 'n', sizeof(big));
    for (i = FSX_NAME_MAX; i < sizeof(big); i += FSX_NAME_MAX + 1)
        big[i] = '/';
    r = ok, r.path = big, r.path_len = r.present = PROTO_MAX_PATH;
    CHECK_OK(jnl_raw(&r));
    /* One byte over the limit is TOO_LARGE, with or without its bytes. */
    r.path_len = r.present = PROTO_MAX_PATH + 1;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_TOO_LARGE);
    r.present = 0;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_TOO_LARGE);
    r.path_len = PROTO_MAX_PATH, r.present = 10;
    CHECK_EQ_ERR(jnl_raw(&r), FERRY_ERR_SHORT);
}

TEST(journal_encode_limits)
{
    struct journal_header h = jnl_header;
    struct journal_record rec = { 7, { { 1 } } };
    struct buf b;
    size_t max;

    buf_init(&b, JNL_BUF_MAX);
    CHECK_OK(buf_put(&b, "keep", 4));
    h.path_len = 0;
    CHECK_EQ_ERR(journal_header_encode(&b, &h), FERRY_ERR_USAGE);
    h.path_len = PROTO_MAX_PATH + 1;
    CHECK_EQ_ERR(journal_header_encode(&b, &h), FERRY_ERR_USAGE);
    CHECK_EQ_U64(buf_used(&b), 4);
    buf_cleanup(&b);
    /* A buf too small for all of it keeps only what it had. */
    for (max = 4; max < 4 + JOURNAL_HEADER_FIXED + 16; max++) {
        check_note("max %zu", max);
        buf_init(&b, max);
        CHECK_OK(buf_put(&b, "keep", 4));
        CHECK_EQ_ERR(journal_header_encode(&b, &jnl_header),
            FERRY_ERR_TOO_LARGE);
        CHECK_EQ_U64(buf_used(&b), 4);
        CHECK_EQ_MEM(buf_ptr(&b), "keep", 4);
        buf_cleanup(&b);
    }
    for (max = 4; max < 4 + JOURNAL_RECORD_LEN; max++) {
        check_note("max %zu", max);
        buf_init(&b, max);
        CHECK_OK(buf_put(&b, "keep", 4));
        CHECK_EQ_ERR(journal_record_encode(&b, &rec), FERRY_ERR_TOO_LARGE);
        CHECK_EQ_U64(buf_used(&b), 4);
        buf_cleanup(&b);
    }
    check_note_clear();
    /* Out of memory: nothing is left behind either. */
    buf_init(&b, JNL_BUF_MAX);
    alloc_fail_at(1);
    CHECK_EQ_ERR(journal_header_encode(&b, &jnl_header), FERRY_ERR_NOMEM);
    alloc_fail_at(0);
    CHECK_EQ_U64(buf_used(&b), 0);
    buf_cleanup(&b);
}

TEST(journal_record_fields)
{
    struct journal_record rec = { UINT64_MAX, { { 0xff, 1, 2 } } }, out;
    uint8_t raw[JOURNAL_RECORD_LEN + 1];
    struct buf b;

    buf_init(&b, JNL_BUF_MAX);
    CHECK_OK(journal_record_encode(&b, &rec));
    CHECK_EQ_U64(buf_used(&b), JOURNAL_RECORD_LEN);
    memcpy(raw, buf_ptr(&b), JOURNAL_RECORD_LEN);
    raw[JOURNAL_RECORD_LEN] = 0;
    buf_cleanup(&b);
    CHECK_OK(journal_record_decode(raw, JOURNAL_RECORD_LEN, &out));
    CHECK_EQ_U64(out.index, UINT64_MAX);
    CHECK_EQ_MEM(out.hash.b, rec.hash.b, HASH_LEN);
    /* Exactly JOURNAL_RECORD_LEN bytes: fewer is SHORT (a torn write),
     * more is TRAILING; a failure zeroes the record. */
    memset(&out, 0xa5, sizeof(out));
    CHECK_EQ_ERR(journal_record_decode(raw, JOURNAL_RECORD_LEN - 1, &out),
        FERRY_ERR_SHORT);
    CHECK_EQ_U64(out.index, 0);
    CHECK_EQ_ERR(journal_record_decode(raw, JOURNAL_RECORD_LEN + 1, &out),
        FERRY_ERR_TRAILING);
    /* Any changed byte fails the check. */
    raw[3] ^= 0x10;
    memset(&out, 0xa5, sizeof(out));
    CHECK_EQ_ERR(journal_record_decode(raw, JOURNAL_RECORD_LEN, &out),
        FERRY_ERR_FORMAT);
    CHECK_EQ_U64(out.index, 0);
    CHECK_EQ_MEM(out.hash.b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", HASH_LEN);
}
