/*
 * Tests for proto/tar.c (headers written and read back, every limit and
 * malformed header the reader refuses) and proto/vmanifest.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proto/tar.h"
#include "../../proto/vmanifest.h"
#include "../fuzz/fuzz_common.h"
#include "check.h"

/* Reads a whole stream; returns the first error or tar_rd_finish's
 * result, and the entries (up to 8) and data bytes it saw. */
struct got {
    struct tar_entry e[8];
    char path[8][TAR_MAX_NAME + 1], link[8][TAR_MAX_NAME + 1];
    char ppath[8][TAR_MAX_NAME + 1];
    size_t n;
    uint64_t data;
    const char *why;
};

static int
tar_read_all(const uint8_t *p, size_t n, size_t chunk, struct got *g)
{
    struct tar_event ev;
    struct tar_rd t;
    size_t off = 0, used, give;
    int r;

    memset(g, 0, sizeof(*g));
    CHECK_OK(tar_rd_init(&t));
    for (;;) {
        give = n - off < chunk ? n - off : chunk;
        if ((r = tar_rd_next(&t, p + off, give, &used, &ev)) != 0) {
            g->why = tar_rd_why(&t);
            /* A reader that failed refuses every later call. */
            CHECK_EQ_ERR(tar_rd_next(&t, p + off, give, &used, &ev),
                FERRY_ERR_FORMAT);
            CHECK_EQ_ERR(tar_rd_finish(&t), FERRY_ERR_FORMAT);
            break;
        }
        /* A call that succeeds leaves no failure behind: each refusal
         * is the answer of the call that met it. */
        CHECK(tar_rd_why(&t) == NULL);
        off += used;
        if (ev.ev == TAR_EV_ENTRY && g->n < 8) {
            g->e[g->n] = ev.e;
            snprintf(g->path[g->n], sizeof(g->path[0]), "%s", ev.e.path);
            snprintf(g->link[g->n], sizeof(g->link[0]), "%s", ev.e.link);
            if (ev.e.is_piece)
                snprintf(g->ppath[g->n], sizeof(g->ppath[0]), "%s",
                    ev.e.piece.path);
            g->n++;
        } else if (ev.ev == TAR_EV_DATA) {
            g->data += ev.len;
        } else if (ev.ev == TAR_EV_NEED && off == n) {
            r = tar_rd_finish(&t);
            g->why = tar_rd_why(&t);
            break;
        }
    }
    tar_rd_cleanup(&t);
    return r;
}

static void
tar_put(struct buf *b, enum tar_type type, const char *path,
    const char *link, uint64_t size, int64_t sec, uint32_t nsec)
{
    struct tar_entry e;
    uint8_t *p;

    memset(&e, 0, sizeof(e));
    e.type = type;
    e.path = path;
    e.path_len = strlen(path);
    e.link = link;
    e.link_len = strlen(link);
    e.size = size;
    e.mode = 0644;
    e.mtime_sec = sec;
    e.mtime_nsec = nsec;
    CHECK_OK(tar_header_put(b, &e));
    if (size > 0 && size < (1u << 20)) {
        CHECK_OK(buf_reserve(b, (size_t)size + tar_pad(size), &p));
        memset(p, 'd', (size_t)size + tar_pad(size));
    }
}

static char *
tar_name_of(char c, size_t n)
{
    char *s = check_alloc(n + 1);

    memset(s, c, n);
    s[n] = '\0';
    return s;
}

TEST(tar_roundtrip)
{
    char *n100 = tar_name_of('n', 100), *long_name = tar_name_of('l', 300);
    char *pre = tar_name_of('p', 155);
    char p155[400], deep[600];
    struct got g, g1;
    struct buf b;
    size_t i;

    snprintf(p155, sizeof(p155), "%s/%s", pre, n100);
    snprintf(deep, sizeof(deep), "a/%s/%s", long_name, n100);
    buf_init(&b, 1 << 24);
    tar_put(&b, TAR_DIR, "dir", "", 0, 1700000000, 0);
    tar_put(&b, TAR_FILE, n100, "", 5, 1700000000, 123456789);
    tar_put(&b, TAR_FILE, p155, "", 0, -2, 500000000);
    tar_put(&b, TAR_FILE, deep, "", 700, 1, 0);
    tar_put(&b, TAR_SYMLINK, "l", long_name, 0, 0, 0);
    tar_put(&b, TAR_FILE, "\xff\xfe-not-utf8", "", 1, 0, 0);
    tar_put(&b, TAR_FILE, "ünï", "", 0, (int64_t)1 << 40, 0);
    CHECK_OK(tar_end_put(&b));
    CHECK_OK(tar_read_all(buf_ptr(&b), buf_used(&b), buf_used(&b), &g));
    CHECK_EQ_U64(g.n, 7);
    CHECK_EQ_STR(g.path[0], "dir/");
    CHECK_EQ_INT(g.e[0].type, TAR_DIR);
    CHECK_EQ_STR(g.path[1], n100);
    CHECK_EQ_INT(g.e[1].mtime_nsec, 123456789);
    CHECK_EQ_STR(g.path[2], p155);
    CHECK_EQ_INT(g.e[2].mtime_sec, -2);
    CHECK_EQ_INT(g.e[2].mtime_nsec, 500000000);
    CHECK_EQ_STR(g.path[3], deep);
    CHECK_EQ_STR(g.link[4], long_name);
    CHECK_EQ_STR(g.path[5], "\xff\xfe-not-utf8");
    CHECK_EQ_U64(g.e[6].mtime_sec, (uint64_t)1 << 40);
    CHECK_EQ_U64(g.data, 706);
    /* One byte at a time gives the same. */
    CHECK_OK(tar_read_all(buf_ptr(&b), buf_used(&b), 1, &g1));
    CHECK_EQ_U64(g1.n, g.n);
    for (i = 0; i < g.n; i++)
        CHECK_EQ_STR(g1.path[i], g.path[i]);
    CHECK_EQ_U64(g1.data, g.data);
    buf_cleanup(&b);
    free(n100);
    free(long_name);
    free(pre);
}

TEST(tar_piece_header)
{
    struct tar_entry e;
    struct got g;
    struct buf b;
    uint8_t *p;

    memset(&e, 0, sizeof(e));
    e.type = TAR_FILE;
    e.path = "big.ferry-piece-00002";
    e.path_len = strlen(e.path);
    e.link = "";
    e.size = 10;
    e.is_piece = 1;
    e.piece.index = 2;
    e.piece.offset = 100;
    e.piece.file_size = 110;
    e.piece.path = "dir/big file";
    e.piece.path_len = strlen(e.piece.path);
    buf_init(&b, 1 << 20);
    CHECK_OK(tar_header_put(&b, &e));
    CHECK_OK(buf_reserve(&b, 512, &p));
    memset(p, 0, 512);
    CHECK_OK(tar_end_put(&b));
    CHECK_OK(tar_read_all(buf_ptr(&b), buf_used(&b), 4096, &g));
    CHECK_EQ_U64(g.n, 1);
    CHECK(g.e[0].is_piece);
    CHECK_EQ_INT(g.e[0].piece.index, 2);
    CHECK_EQ_U64(g.e[0].piece.offset, 100);
    CHECK_EQ_U64(g.e[0].piece.file_size, 110);
    CHECK_EQ_STR(g.ppath[0], "dir/big file");
    /* A piece that would end past its file is refused. */
    e.size = 11;
    buf_reset(&b);
    CHECK_OK(tar_header_put(&b, &e));
    CHECK_OK(buf_reserve(&b, 512, &p));
    memset(p, 0, 512);
    CHECK_OK(tar_end_put(&b));
    CHECK_EQ_ERR(tar_read_all(buf_ptr(&b), buf_used(&b), 4096, &g),
        FERRY_ERR_FORMAT);
    CHECK_EQ_STR(g.why, "piece header does not fit its member");
    buf_cleanup(&b);
}

/* A ustar header with the checksum fixed up after an edit. */
static void
tar_fix_sum(uint8_t *h)
{
    unsigned sum = 0;
    size_t i;

    memset(h + 148, ' ', 8);
    for (i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

/* The first header of b, to edit. */
static uint8_t *
tar_hdr(struct buf *b)
{
    uint8_t *p = (uint8_t *)buf_ptr(b);

    if (p == NULL || buf_used(b) < 512)
        abort();
    return p;
}

/* The stream in b, its first header edited: with the checksum fixed up,
 * refused with err and why. */
static void
tar_edit_refused(struct buf *b, int err, const char *why)
{
    struct got g;
    uint8_t *h = tar_hdr(b);

    tar_fix_sum(h);
    CHECK_EQ_ERR(tar_read_all(h, buf_used(b), 512, &g), err);
    CHECK_EQ_STR(g.why, why);
}

/* One file member "f" of n data bytes, then the end. */
static void
tar_one(struct buf *b, size_t n)
{
    buf_reset(b);
    tar_put(b, TAR_FILE, "f", "", n, 0, 0);
    CHECK_OK(tar_end_put(b));
}

/* Appends an extended header of type ('x' pax, 'L' GNU long name)
 * holding the n bytes data. */
static void
tar_ext_put(struct buf *b, char type, const char *data, size_t n)
{
    size_t pad = (n + 511) / 512 * 512;
    uint8_t *h;

    CHECK_OK(buf_reserve(b, 512, &h));
    memset(h, 0, 512);
    memcpy(h, "p", 1);
    memcpy(h + 257, "ustar\0" "00", 8);
    h[156] = (uint8_t)type;
    snprintf((char *)h + 124, 12, "%011o", (unsigned)n);
    snprintf((char *)h + 100, 8, "%07o", 0644);
    tar_fix_sum(h);
    CHECK_OK(buf_reserve(b, pad, &h));
    memset(h, 0, pad);
    memcpy(h, data, n);
}

/* b: a pax header holding the n bytes of records rec, then a file "f"
 * and the end. */
static void
tar_pax_then_f(struct buf *b, const char *rec, size_t n)
{
    buf_reset(b);
    tar_ext_put(b, 'x', rec, n);
    tar_put(b, TAR_FILE, "f", "", 0, 0, 0);
    CHECK_OK(tar_end_put(b));
}

/* The pax record "LEN kv\n" of kv, LEN counting its own digits; *n is
 * its length. The caller frees it. */
static char *
tar_pax_rec(const char *kv, size_t *n)
{
    size_t len = strlen(kv) + 2, d;
    char *rec;

    for (d = 1; snprintf(NULL, 0, "%zu", len + d) != (int)d; d++)
        ;
    len += d;
    rec = check_alloc(len + 1);
    CHECK_EQ_INT(snprintf(rec, len + 1, "%zu %s\n", len, kv), (int)len);
    *n = len;
    return rec;
}

/* b as it is: refused with err and why. */
static void
tar_stream_refused(struct buf *b, int err, const char *why)
{
    struct got g;

    CHECK_EQ_ERR(tar_read_all(buf_ptr(b), buf_used(b), 512, &g), err);
    CHECK_EQ_STR(g.why, why);
}

/* A pax header of the one record kv, then a good member: refused with
 * err and why. */
static void
tar_pax_refused(struct buf *b, const char *kv, int err, const char *why)
{
    size_t len;
    char *rec = tar_pax_rec(kv, &len);

    check_note("record %s", kv);
    tar_pax_then_f(b, rec, len);
    tar_stream_refused(b, err, why);
    check_note_clear();
    free(rec);
}

TEST(tar_refused)
{
    struct got g;
    struct buf b;
    uint8_t *h;
    char rec[128];
    int n;

    buf_init(&b, 1 << 22);
    /* Checksum, magic, type, numbers. */
    tar_one(&b, 3);
    ((uint8_t *)buf_ptr(&b))[0] = 'g';
    CHECK_EQ_ERR(tar_read_all(buf_ptr(&b), buf_used(&b), 512, &g),
        FERRY_ERR_FORMAT);
    CHECK_EQ_STR(g.why, "header checksum mismatch");
    tar_one(&b, 3);
    h = tar_hdr(&b);
    memcpy(h + 257, "xxxxx", 5);
    tar_edit_refused(&b, FERRY_ERR_FORMAT,
        "not a ustar, pax or GNU tar header");
    /* A member without a name. */
    tar_one(&b, 3);
    h = tar_hdr(&b);
    h[0] = '\0';
    tar_edit_refused(&b, FERRY_ERR_FORMAT, "member with an empty name");
    tar_one(&b, 3);
    h = tar_hdr(&b);
    h[156] = 'S';
    tar_edit_refused(&b, FERRY_ERR_UNSUPPORTED, "member type not supported "
        "(GNU sparse, multi-volume, label or unknown)");
    tar_one(&b, 3);
    h = tar_hdr(&b);
    memcpy(h + 124, "00000000009x", 12);
    tar_edit_refused(&b, FERRY_ERR_FORMAT, "bad size field");
    tar_one(&b, 3);
    h = tar_hdr(&b);
    memcpy(h + 100, "000064x", 7);
    tar_edit_refused(&b, FERRY_ERR_FORMAT, "bad mode field");
    /* After the digits, only NULs and spaces. */
    tar_one(&b, 3);
    h = tar_hdr(&b);
    memcpy(h + 100, "000644 x", 8);
    tar_edit_refused(&b, FERRY_ERR_FORMAT, "bad mode field");
    /* Data in a directory. */
    tar_one(&b, 3);
    h = tar_hdr(&b);
    h[156] = '5';
    tar_edit_refused(&b, FERRY_ERR_FORMAT,
        "data in a member that is not a regular file");
    /* Base-256 size: read. */
    tar_one(&b, 3);
    h = tar_hdr(&b);
    memset(h + 124, 0, 12);
    h[124] = 0x80;
    h[135] = 3;
    tar_fix_sum(h);
    CHECK_OK(tar_read_all(h, buf_used(&b), 512, &g));
    CHECK_EQ_U64(g.data, 3);
    /* ... only its last 7 bytes say the value: the others repeat the
     * sign. */
    h[125] = 1;
    tar_edit_refused(&b, FERRY_ERR_FORMAT, "bad size field");
    /* A negative base-256 mtime: read; a size may not be negative. */
    tar_one(&b, 0);
    h = tar_hdr(&b);
    memset(h + 136, 0xff, 12);
    h[147] = 0xfe;
    tar_fix_sum(h);
    CHECK_OK(tar_read_all(h, buf_used(&b), 512, &g));
    CHECK_EQ_INT(g.e[0].mtime_sec, -2);
    h[137] = 0;
    tar_edit_refused(&b, FERRY_ERR_FORMAT, "bad mtime field");
    tar_one(&b, 0);
    h = tar_hdr(&b);
    memset(h + 124, 0xff, 12);
    tar_edit_refused(&b, FERRY_ERR_FORMAT, "bad size field");
    /* Truncated: inside the data, and without the end blocks. */
    tar_one(&b, 600);
    CHECK_EQ_ERR(tar_read_all(buf_ptr(&b), 700, 512, &g), FERRY_ERR_SHORT);
    CHECK_EQ_ERR(tar_read_all(buf_ptr(&b), 512 + 1024, 512, &g),
        FERRY_ERR_SHORT);
    /* One end block then the end of input is an end (as GNU tar). */
    CHECK_OK(tar_read_all(buf_ptr(&b), buf_used(&b) - 512, 512, &g));
    CHECK_EQ_ERR(tar_read_all(buf_ptr(&b), 0, 512, &g), FERRY_ERR_SHORT);
    /* A zero block, then a header. */
    buf_reset(&b);
    CHECK_OK(buf_reserve(&b, 512, &h));
    memset(h, 0, 512);
    tar_put(&b, TAR_FILE, "f", "", 0, 0, 0);
    CHECK_OK(tar_end_put(&b));
    CHECK_EQ_ERR(tar_read_all(buf_ptr(&b), buf_used(&b), 512, &g),
        FERRY_ERR_FORMAT);
    /* A pax header larger than the limit is refused by its size field,
     * before its bytes are read. */
    tar_one(&b, 0);
    h = tar_hdr(&b);
    h[156] = 'x';
    snprintf((char *)h + 124, 12, "%011o", TAR_MAX_EXT + 1);
    tar_fix_sum(h);
    CHECK_EQ_ERR(tar_read_all(h, 512, 512, &g), FERRY_ERR_TOO_LARGE);
    /* Records that are not "LEN key=value\n": the length wrong, not a
     * number, past the header, or no key. */
    {
        static const char *const bad[] = {
            "5 a=b\n", "x path=y\n", "9 path=y", "99 path=y\n", "6 =ab\n",
            "7 noeq\n",
        };
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            check_note("record %s", bad[i]);
            n = snprintf(rec, sizeof(rec), "%s", bad[i]);
            tar_pax_then_f(&b, rec, (size_t)n);
            CHECK_EQ_ERR(tar_read_all(buf_ptr(&b), buf_used(&b), 512, &g),
                FERRY_ERR_FORMAT);
            CHECK_EQ_STR(g.why, "malformed pax record");
        }
        check_note_clear();
    }
    /* Well-framed records, each refused by its value's own check: the
     * record is otherwise whole and the member after it good, so the
     * stream would be read were that check to pass. */
    {
        static const struct {
            const char *kv;
            int err;
            const char *why;
        } vals[] = {
            { "GNU.sparse.size=1000", FERRY_ERR_UNSUPPORTED,
              "sparse members (GNU tar -S) are not supported" },
            { "comment=ferry-piece 1 0 0 1 p", FERRY_ERR_FORMAT,
              "malformed piece header" },
            { "comment=ferry-piece 1 1 5 1 p", FERRY_ERR_FORMAT,
              "malformed piece header" },
            { "size=-1", FERRY_ERR_FORMAT, "bad size in pax header" },
            { "mtime=x", FERRY_ERR_FORMAT, "bad mtime in pax header" },
            { "mtime=1.2.3", FERRY_ERR_FORMAT, "bad mtime in pax header" },
            { "mtime=1.", FERRY_ERR_FORMAT, "bad mtime in pax header" },
            { "size=", FERRY_ERR_FORMAT, "bad size in pax header" },
            /* 20 digits: past 2^64. */
            { "size=99999999999999999999", FERRY_ERR_FORMAT,
              "bad size in pax header" },
            { "comment=ferry-piece 1 x 0 1 p", FERRY_ERR_FORMAT,
              "malformed piece header" },
        };
        char *kv = check_alloc(TAR_MAX_NAME + 7);
        size_t i;

        for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
            tar_pax_refused(&b, vals[i].kv, vals[i].err, vals[i].why);
        snprintf(kv, 64, "size=%" PRIu64, TAR_MAX_SIZE + 1);
        tar_pax_refused(&b, kv, FERRY_ERR_TOO_LARGE,
            "bad size in pax header");
        /* A path one byte over TAR_MAX_NAME. */
        memcpy(kv, "path=", 5);
        memset(kv + 5, 'a', TAR_MAX_NAME + 1);
        kv[TAR_MAX_NAME + 6] = '\0';
        tar_pax_refused(&b, kv, FERRY_ERR_TOO_LARGE, "name too long");
        free(kv);
    }
    /* A path with a NUL inside (which a C string cannot say). */
    {
        size_t len;
        char *r = tar_pax_rec("path=a?b", &len);

        *strchr(r, '?') = '\0';
        tar_pax_then_f(&b, r, len);
        tar_stream_refused(&b, FERRY_ERR_FORMAT, "name holds a NUL byte");
        free(r);
    }
    /* A GNU long name that is empty; a pax header that ends the archive
     * (no member to describe). */
    buf_reset(&b);
    tar_ext_put(&b, 'L', "\0", 1);
    tar_put(&b, TAR_FILE, "f", "", 0, 0, 0);
    CHECK_OK(tar_end_put(&b));
    tar_stream_refused(&b, FERRY_ERR_FORMAT, "empty GNU long name");
    buf_reset(&b);
    tar_ext_put(&b, 'x', "8 a=b c\n", 8);
    CHECK_OK(tar_end_put(&b));
    tar_stream_refused(&b, FERRY_ERR_FORMAT,
        "extended header without a member");
    /* What the time's checks take: negative and fractional. */
    {
        size_t len;
        char *r = tar_pax_rec("mtime=-1.25", &len);

        tar_pax_then_f(&b, r, len);
        CHECK_OK(tar_read_all(buf_ptr(&b), buf_used(&b), 512, &g));
        CHECK_EQ_INT(g.e[0].mtime_sec, -2);
        CHECK_EQ_INT(g.e[0].mtime_nsec, 750000000);
        free(r);
    }
    buf_cleanup(&b);
}

/* Truncations and bit flips of a real stream: fuzz_tar's checks hold
 * (no crash, bounded events, chunking does not matter). */
TEST(tar_mutate)
{
    struct buf b;
    uint8_t *copy;
    size_t i, len;
    const char *why;
    int rc;

    buf_init(&b, 1 << 20);
    tar_put(&b, TAR_DIR, "d", "", 0, 1, 2);
    tar_put(&b, TAR_FILE, "d/f", "", 700, 1, 0);
    tar_put(&b, TAR_SYMLINK, "d/l", "f", 0, 1, 0);
    CHECK_OK(tar_end_put(&b));
    len = buf_used(&b);
    for (i = 0; i <= len; i += 7) {
        check_note("truncated at %zu", i);
        copy = check_dup(buf_ptr(&b), i);
        why = fuzz_tar(copy, i, &rc);
        CHECK(why == NULL);
        free(copy);
    }
    for (i = 0; i < len * 8; i += 13) {
        check_note("bit %zu", i);
        copy = check_dup(buf_ptr(&b), len);
        copy[i / 8] ^= (uint8_t)(1u << (i % 8));
        why = fuzz_tar(copy, len, &rc);
        CHECK(why == NULL);
        free(copy);
    }
    check_note_clear();
    buf_cleanup(&b);
}

TEST(vman_roundtrip)
{
    struct vman_rec in, out;
    char store[VMAN_MAX_PATH + 1];
    static const char *const paths[] = {
        "data/a.txt", "q\"uo\\te\nnew\tline", "ünï €", "\xff\xfe", "日本語",
    };
    struct buf b;
    size_t i, n;
    int t;

    for (t = VMAN_HEAD; t <= VMAN_END; t++) {
        for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
            check_note("type %d path %zu", t, i);
            memset(&in, 0, sizeof(in));
            in.type = (enum vman_type)t;
            in.path = paths[i];
            in.path_len = strlen(paths[i]);
            in.volume = 3;
            in.offset = 1536;
            in.size = (uint64_t)1 << 40;
            in.index = 2;
            in.file_offset = 99;
            in.pieces = t == VMAN_FILE && i % 2 ? 4 : 0;
            memset(in.hash.b, 0xab, HASH_LEN);
            in.volume_size = 2147483648u;
            in.block_size = 1u << 20;
            in.entries = 7;
            in.files = 5;
            buf_init(&b, VMAN_MAX_LINE);
            CHECK_OK(vman_encode(&b, &in));
            n = buf_used(&b);
            CHECK(((const char *)buf_ptr(&b))[n - 1] == '\n');
            CHECK_OK(vman_decode((const char *)buf_ptr(&b), n - 1, &out,
                store));
            CHECK_EQ_INT(out.type, t);
            if (t != VMAN_END) {
                CHECK_EQ_U64(out.path_len, in.path_len);
                CHECK_EQ_MEM(out.path, in.path, in.path_len);
            }
            if (t == VMAN_FILE)
                CHECK_EQ_MEM(out.hash.b, in.hash.b, HASH_LEN);
            if (t == VMAN_PIECE) {
                CHECK_EQ_U64(out.file_offset, 99);
                CHECK_EQ_INT(out.index, 2);
            }
            buf_cleanup(&b);
        }
    }
    check_note_clear();
    /* The longest name, of bytes JSON escapes in six: still a line the
     * reader takes. */
    memset(store, 1, VMAN_MAX_PATH);
    memset(&in, 0, sizeof(in));
    in.type = VMAN_DIR;
    in.path = store;
    in.path_len = VMAN_MAX_PATH;
    in.volume = 1;
    buf_init(&b, 4 * VMAN_MAX_LINE);
    CHECK_OK(vman_encode(&b, &in));
    n = buf_used(&b);
    CHECK(n - 1 <= VMAN_MAX_LINE);
    CHECK_OK(vman_decode((const char *)buf_ptr(&b), n - 1, &out, store));
    CHECK_EQ_U64(out.path_len, VMAN_MAX_PATH);
    CHECK(out.path[0] == 1 && out.path[VMAN_MAX_PATH - 1] == 1);
    buf_cleanup(&b);
}

/* Records for the rows below, without their closing '}'. */
#define VMAN_DIR "{\"type\":\"dir\",\"path\":\"a\",\"volume\":1,\"offset\":1"
#define VMAN_HEAD "{\"type\":\"head\",\"format\":\"ferry-volumes\"," \
    "\"version\":1,\"name\":\"n\",\"volume_size\":1,\"block_size\":1048576"
#define VMAN_FILE "{\"type\":\"file\",\"path\":\"a\",\"size\":1," \
    "\"volume\":1,\"offset\":1,\"xxh3\":\"00000000000000000000000000000000\""

/* The line VMAN_DIR, head, unit n times, tail: refused with err. */
static void
vman_long_refused(const char *head, const char *unit, size_t n,
    const char *tail, int err)
{
    char store[VMAN_MAX_PATH + 1];
    struct vman_rec out;
    struct buf b;
    size_t i;

    buf_init(&b, 2 * VMAN_MAX_LINE);
    CHECK_OK(buf_put(&b, VMAN_DIR, strlen(VMAN_DIR)));
    CHECK_OK(buf_put(&b, head, strlen(head)));
    for (i = 0; i < n; i++)
        CHECK_OK(buf_put(&b, unit, strlen(unit)));
    CHECK_OK(buf_put(&b, tail, strlen(tail)));
    check_note("%s ... %s", head, tail);
    CHECK_EQ_ERR(vman_decode((const char *)buf_ptr(&b), buf_used(&b), &out,
        store), err);
    check_note_clear();
    buf_cleanup(&b);
}

TEST(vman_refused)
{
    static const char *const bad[] = {
        "", "{}", "{\"type\":\"nope\"}", "{\"type\":\"dir\"}",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":0,\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":01,\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"\",\"volume\":1,\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"a\\u0000b\",\"volume\":1,\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"\\ud800\",\"volume\":1,\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":1,\"offset\":1} x",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":1,\"offset\":1,}",
        "{\"type\":\"file\",\"path\":\"a\",\"size\":1,\"xxh3\":\"ab\","
            "\"volume\":1,\"offset\":1}",
        "{\"type\":\"file\",\"path\":\"a\",\"size\":1,\"pieces\":0,"
            "\"xxh3\":\"00000000000000000000000000000000\"}",
        "{\"type\":\"head\",\"format\":\"ferry-volumes\",\"version\":2,"
            "\"name\":\"n\",\"volume_size\":1,\"block_size\":1048576}",
        "{\"type\":\"head\",\"format\":\"ferry-volumes\",\"version\":1,"
            "\"name\":\"n\",\"volume_size\":1,\"block_size\":1000}",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":99999999999999999999,"
            "\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"a\xff\",\"volume\":1,\"offset\":1}",
        "{\"type\":\"dir\",\"path_hex\":\"6\",\"volume\":1,\"offset\":1}",
        "{\"type\":\"dir\",\"path_hex\":\"\",\"volume\":1,\"offset\":1}",
        "{\"type\":\"dir\",\"path_hex\":\"6100\",\"volume\":1,\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"a\x01b\",\"volume\":1,\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":4294967296,"
            "\"offset\":1}",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":1,\"offset\":}",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":1,\"offset\":,"
            "\"x\":1}",
        "{\"type\":\"dir\",\"path\":\"a\",\"volume\":1,\"offset\":1,"
            "\"size\":}",
        "{\"type\":\"file\",\"path\":\"a\",\"size\":1,\"volume\":1,"
            "\"offset\":1,\"xxh3\":\"00000000000000000000000000000000\","
            "\"pieces\":4294967297}",
    };
    char store[VMAN_MAX_PATH + 1];
    struct vman_rec out;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("line %zu: %s", i, bad[i]);
        CHECK_FAILS(vman_decode(bad[i], strlen(bad[i]), &out, store));
        CHECK_EQ_INT(out.type, 0);
    }
    check_note_clear();
    /* A flaw that ends a string early, placed where the line could end
     * there: a key without its opening quote (read as an empty key, its
     * number skipped), and a path whose last byte is a control or no
     * UTF-8 at all, then '}'. Each is refused by the string's own check,
     * since what follows would close a whole record. */
    {
        static const char *const early[] = {
            "{:1,\"type\":\"dir\",\"path\":\"a\",\"volume\":1,"
                "\"offset\":1}",
            "{\"type\":\"dir\",\"volume\":1,\"offset\":1,\"path\":\"a\x01}",
            "{\"type\":\"dir\",\"volume\":1,\"offset\":1,\"path\":\"a\xff}",
        };

        for (i = 0; i < sizeof(early) / sizeof(early[0]); i++) {
            check_note("line %s", early[i]);
            CHECK_EQ_ERR(vman_decode(early[i], strlen(early[i]), &out,
                store), FERRY_ERR_FORMAT);
        }
        check_note_clear();
    }
    /* Flaws whose check, were it to pass, would leave a whole record: a
     * line without its '{'; escapes cut short, not hex, lone or unpaired
     * surrogates and unknown ones, each in an unknown key's string that
     * '}' would close; a leading zero or 20 digits where any number goes;
     * and a key given again, after a good value, with one its check
     * refuses (the record would keep the first). */
    {
        static const char *const whole[] = {
            "\"type\":\"dir\",\"path\":\"a\",\"volume\":1,\"offset\":1}",
            VMAN_DIR ",\"x\":\"\\u\"}",
            VMAN_DIR ",\"x\":\"\\u}",
            VMAN_DIR ",\"x\":\"\\u00g0\"}",
            VMAN_DIR ",\"x\":\"\\udc00}",
            VMAN_DIR ",\"x\":\"\\ud800}",
            VMAN_DIR ",\"x\":\"\\q}",
            "{\"type\":\"dir\",\"path\":\"a\",\"volume\":1,\"offset\":01}",
            "{\"type\":\"dir\",\"path\":\"a\",\"volume\":1,"
                "\"offset\":10000000000000000000}",
            VMAN_DIR ",\"size\":01}",
            VMAN_DIR ",\"volume\":4294967296}",
            VMAN_DIR ",\"path\":\"\"}",
            VMAN_DIR ",\"path_hex\":\"6\"}",
            VMAN_DIR ",\"path_hex\":\"6x\"}",
            VMAN_DIR ",\"type\":\"nope\"}",
            VMAN_HEAD ",\"version\":2}",
            VMAN_HEAD ",\"format\":\"nope\"}",
            VMAN_FILE ",\"xxh3\":\"ab\"}",
        };

        for (i = 0; i < sizeof(whole) / sizeof(whole[0]); i++) {
            check_note("line %s", whole[i]);
            CHECK_EQ_ERR(vman_decode(whole[i], strlen(whole[i]), &out,
                store), FERRY_ERR_FORMAT);
        }
        check_note_clear();
        /* The records without the flaws are taken. */
        CHECK_OK(vman_decode(VMAN_DIR "}", strlen(VMAN_DIR "}"), &out, store));
        CHECK_OK(vman_decode(VMAN_HEAD "}", strlen(VMAN_HEAD "}"), &out,
            store));
        CHECK_OK(vman_decode(VMAN_FILE "}", strlen(VMAN_FILE "}"), &out,
            store));
    }
    /* Keys and paths past their room: a key of 33 characters, escaped or
     * raw (the raw one without its closing quote, which the 33rd byte
     * is read before), then a number '}' would close; a second path one
     * byte over VMAN_MAX_PATH. */
    vman_long_refused(",\"", "\\u0078", 33, "\":1}", FERRY_ERR_FORMAT);
    vman_long_refused(",\"", "x", 33, ":1}", FERRY_ERR_FORMAT);
    vman_long_refused(",\"path\":\"", "a", VMAN_MAX_PATH + 1, "\"}",
        FERRY_ERR_TOO_LARGE);
    /* Unknown keys are skipped; escapes decode. */
    {
        static const char ok[] = "{\"type\":\"dir\",\"x\":\"y\",\"n\":5,"
            "\"path\":\"a\\/b\\u00e9\",\"volume\":1,\"offset\":2}";

        CHECK_OK(vman_decode(ok, strlen(ok), &out, store));
    }
    CHECK_EQ_STR(out.path, "a/b\xc3\xa9");
}
