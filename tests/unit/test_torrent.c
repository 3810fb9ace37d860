/*
 * Tests for client/torrent.c: the info-hashes of torrents that
 * libtorrent-rasterbar 2.0.8 made from the same bytes (known answers),
 * the piece map, and the limits.
 *
 * The expected info-hashes come from libtorrent's create_torrent
 * (v2_only, set_priv, set_root_cert) over files written by gen_file
 * below, with tests/spike/swarm_spike.cpp's make role:
 *   swarm_spike make DIR OUT --piece-size N [--ca ca.pem]
 * A match means the whole info dict is byte for byte libtorrent's: the
 * file tree, every pieces root and the single-file form. The piece
 * layers, outside it, are compared by the hash of their bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/buf.h"
#include "../../common/sha256.h"
#include "../../client/torrent.h"
#include "check.h"

/* The test files' bytes: a pattern of seed s that no block repeats. */
static uint8_t *
gen_file(size_t n, unsigned s)
{
    uint8_t *p = check_alloc(n > 0 ? n : 1);
    size_t k;

    for (k = 0; k < n; k++)
        p[k] = (uint8_t)(((k * 131 + s * 7) ^ (k >> 9)) & 0xff);
    return p;
}

/* Feeds file path of n bytes of seed s in pieces of step bytes (odd
 * steps cross block and piece boundaries at odd places). */
static void
add_file(struct torrent *t, const char *path, size_t n, unsigned s,
    size_t step)
{
    uint8_t *p = gen_file(n, s);
    size_t off, k;

    CHECK_OK(torrent_file_begin(t, path));
    for (off = 0; off < n; off += k) {
        k = n - off < step ? n - off : step;
        CHECK_OK(torrent_file_update(t, p + off, k));
    }
    CHECK_OK(torrent_file_end(t));
    free(p);
}

static void
finish_hex(struct torrent *t, struct buf *out, char hex[65])
{
    uint8_t ih[32];

    buf_init(out, TORRENT_MAX_BYTES);
    CHECK_OK(torrent_finish(t, out, ih));
    sha256_hex(ih, hex);
}

static const char test_ca[] =
    "-----BEGIN CERTIFICATE-----\nferry test\n-----END CERTIFICATE-----\n";

/* Five files in folders, one empty, sizes on and off 16 KiB and piece
 * boundaries, a CA in the info dict; fed out of order, in odd steps. */
TEST(torrent_kat_tree)
{
    struct torrent *t;
    struct buf out;
    char hex[65];
    const char *path;
    uint64_t len;
    uint32_t first, n;
    static const struct {
        const char *path;
        uint64_t len;
        uint32_t first, n;
    } want[] = {
        { "a.bin", 40000, 0, 2 },
        { "big.bin", 100000, 2, 4 },
        { "sub/deep/empty", 0, 6, 0 },
        { "sub/deep/y", 5, 6, 1 },
        { "sub/x.bin", 49152, 7, 2 },
    };
    size_t i;

    CHECK_OK(torrent_new(&t, "tree", 32768));
    add_file(t, "sub/x.bin", 49152, 3, 1000);
    add_file(t, "big.bin", 100000, 2, 16384);
    add_file(t, "sub/deep/empty", 0, 4, 1);
    add_file(t, "a.bin", 40000, 1, 7777);
    add_file(t, "sub/deep/y", 5, 5, 1);
    CHECK_OK(torrent_set_cert(t, LIT(test_ca)));
    finish_hex(t, &out, hex);
    CHECK_EQ_STR(hex,
        "cccf3a9ff0cdbef4c83316c853c22dd92aef3fd7fe957cf7237944710cbbcb8d");
    CHECK_EQ_STR(torrent_name(t), "tree");
    CHECK_EQ_INT(torrent_pieces(t), 9);
    CHECK_EQ_U64(torrent_files(t), 5);
    for (i = 0; i < 5; i++) {
        torrent_file_at(t, i, &path, &len, &first, &n);
        CHECK_EQ_STR(path, want[i].path);
        CHECK_EQ_U64(len, want[i].len);
        CHECK_EQ_INT(first, want[i].first);
        CHECK_EQ_INT(n, want[i].n);
    }
    /* The piece layers lie outside the info dict, so the info-hash does
     * not cover them: the torrent's tail, from "12:piece layers" to its
     * end (three layers, of 2, 4 and 2 hashes), is libtorrent's too. */
    CHECK(memmem(buf_ptr(&out), buf_used(&out), "8:ssl-cert65:", 13));
    {
        const uint8_t *p = memmem(buf_ptr(&out), buf_used(&out),
            "12:piece layers", 15);
        uint8_t d[32];
        struct sha256 s;

        CHECK(p != NULL);
        sha256_init(&s);
        sha256_update(&s, p, buf_used(&out) - (size_t)(p - buf_ptr(&out)));
        sha256_final(&s, d);
        sha256_hex(d, hex);
        CHECK_EQ_STR(hex, "475e5347145c60cc8c148d5d2330705f"
            "e6b357792914546641c4897a9117eef4");
    }
    buf_cleanup(&out);
    torrent_free(t);
}

/*
 * A torrent of one file at the root (single-file form) of n bytes of seed
 * s, fed in steps of step bytes: its info-hash must be want, its pieces
 * npieces. Returns the torrent, finished, its bytes in out.
 */
static struct torrent *
kat_single(struct buf *out, uint32_t piece_len, const char *file, size_t n,
    unsigned s, size_t step, const char *want, uint32_t npieces)
{
    struct torrent *t;
    char hex[65];

    CHECK_OK(torrent_new(&t, "ignored", piece_len));
    add_file(t, file, n, s, step);
    finish_hex(t, out, hex);
    CHECK_EQ_STR(hex, want);
    CHECK_EQ_STR(torrent_name(t), file);
    CHECK_EQ_INT(torrent_pieces(t), npieces);
    return t;
}

/* One file of exactly one piece: no piece layer; then the same bytes as
 * two pieces of one block. */
TEST(torrent_kat_one_piece)
{
    struct torrent *t;
    struct buf out;

    t = kat_single(&out, 32768, "one.bin", 32768, 6, 32768,
        "1629e269dee1e710dc87f5ce89790d99790681358ac46a3aae9d40da160b9093", 1);
    CHECK(memmem(buf_ptr(&out), buf_used(&out), "12:piece layersdee", 18));
    buf_cleanup(&out);
    torrent_free(t);
    t = kat_single(&out, 16384, "one.bin", 32768, 6, 5000,
        "3638b5fef43429187a95ab9798efd55aee79d9646e2bf62c0a4240ed140c82bb", 2);
    buf_cleanup(&out);
    torrent_free(t);
}

/* 20000 bytes in a piece of 64 KiB: two blocks, the second short, in a
 * tree two leaves wide (not four: a piece's width is not padded to). */
TEST(torrent_kat_odd)
{
    struct torrent *t;
    struct buf out;

    t = kat_single(&out, 65536, "odd.bin", 20000, 7, 3,
        "44f7dddde807e5749d19d8565e80f2ec2d67c57c2a9db3fc9757b1d374f331da", 1);
    buf_cleanup(&out);
    torrent_free(t);
}

/* An empty file: a length of 0, no pieces root and no piece (the tree
 * above has one too, and libtorrent's info-hash); a torrent of nothing
 * but empty files is refused, as libtorrent refuses to load one. */
TEST(torrent_empty_file)
{
    struct torrent *t;
    struct buf out;
    uint8_t ih[32];
    char hex[65];
    const char *path;
    uint64_t len;
    uint32_t first, n;

    CHECK_OK(torrent_new(&t, "e", 16384));
    add_file(t, "a", 1, 0, 1);
    add_file(t, "empty", 0, 0, 1);
    finish_hex(t, &out, hex);
    CHECK(memmem(buf_ptr(&out), buf_used(&out),
        "5:emptyd0:d6:lengthi0eeee", 25));
    torrent_file_at(t, 1, &path, &len, &first, &n);
    CHECK_EQ_STR(path, "empty");
    CHECK_EQ_INT(first, 1);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(torrent_pieces(t), 1);
    buf_cleanup(&out);
    torrent_free(t);

    CHECK_OK(torrent_new(&t, "e", 16384));
    add_file(t, "empty", 0, 0, 1);
    buf_init(&out, TORRENT_MAX_BYTES);
    CHECK_EQ_ERR(torrent_finish(t, &out, ih), FERRY_ERR_UNSUPPORTED);
    buf_cleanup(&out);
    torrent_free(t);
}

/* Paths compare a component at a time: "a/b" before "a-b"; equal files
 * share one piece layer. */
TEST(torrent_order)
{
    struct torrent *t;
    struct buf out;
    char hex[65];
    const char *path;
    uint64_t len;
    uint32_t first, n;
    const uint8_t *p;
    size_t left, count = 0;

    CHECK_OK(torrent_new(&t, "o", 16384));
    add_file(t, "a-b", 40000, 1, 40000);
    add_file(t, "a/b", 40000, 1, 40000);
    finish_hex(t, &out, hex);
    torrent_file_at(t, 0, &path, &len, &first, &n);
    CHECK_EQ_STR(path, "a/b");
    CHECK_EQ_INT(first, 0);
    CHECK_EQ_INT(n, 3);
    torrent_file_at(t, 1, &path, &len, &first, &n);
    CHECK_EQ_STR(path, "a-b");
    CHECK_EQ_INT(first, 3);
    /* One 96-byte layer for the two equal files. */
    p = buf_ptr(&out);
    left = buf_used(&out);
    while ((p = memmem(p, left, "96:", 3)) != NULL) {
        count++;
        p += 3;
        left = buf_used(&out) - (size_t)(p - buf_ptr(&out));
    }
    CHECK_EQ_U64(count, 1);
    buf_cleanup(&out);
    torrent_free(t);
}

TEST(torrent_limits)
{
    struct torrent *t;
    struct buf out;
    uint8_t ih[32], *big;
    static const char *const bad[] = {
        "", "/a", "a/", "a//b", ".", "..", "a/../b", "a/./b",
    };
    size_t i;
    char deep[200];

    CHECK_EQ_ERR(torrent_new(&t, "x", 16383), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(torrent_new(&t, "x", 3 * 16384), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(torrent_new(&t, "x", TORRENT_MAX_PIECE * 2),
        FERRY_ERR_USAGE);
    CHECK_EQ_ERR(torrent_new(&t, "a/b", 16384), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(torrent_new(&t, "..", 16384), FERRY_ERR_BAD_PATH);
    CHECK(t == NULL);

    CHECK_OK(torrent_new(&t, "x", 16384));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_EQ_ERR(torrent_file_begin(t, bad[i]), FERRY_ERR_BAD_PATH);
    for (i = 0; i < 2 * (TORRENT_MAX_DEPTH + 1); i += 2) {
        deep[i] = 'd';
        deep[i + 1] = '/';
    }
    deep[i - 1] = '\0';
    CHECK_EQ_ERR(torrent_file_begin(t, deep), FERRY_ERR_BAD_PATH);
    big = check_alloc(TORRENT_MAX_COMPONENT + 2);
    memset(big, 'c', TORRENT_MAX_COMPONENT + 1);
    big[TORRENT_MAX_COMPONENT + 1] = '\0';
    CHECK_EQ_ERR(torrent_file_begin(t, (char *)big), FERRY_ERR_BAD_PATH);
    free(big);
    CHECK_EQ_ERR(torrent_file_update(t, "x", 1), FERRY_ERR_PROTOCOL);
    CHECK_EQ_ERR(torrent_file_end(t), FERRY_ERR_PROTOCOL);
    buf_init(&out, TORRENT_MAX_BYTES);
    CHECK_EQ_ERR(torrent_finish(t, &out, ih), FERRY_ERR_PROTOCOL);
    CHECK_OK(torrent_file_begin(t, "f"));
    CHECK_EQ_ERR(torrent_file_begin(t, "g"), FERRY_ERR_PROTOCOL);
    /* More pieces than a torrent may hold: refused before any byte. */
    CHECK_EQ_ERR(torrent_file_update(t, "x",
        (size_t)TORRENT_MAX_PIECES * 16384 + 1), FERRY_ERR_TOO_LARGE);
    CHECK_OK(torrent_file_end(t));
    CHECK_EQ_ERR(torrent_set_cert(t, "x", TORRENT_MAX_CERT + 1),
        FERRY_ERR_TOO_LARGE);
    CHECK_OK(torrent_file_begin(t, "f/g"));
    CHECK_OK(torrent_file_update(t, "x", 1));
    CHECK_OK(torrent_file_end(t));
    CHECK_EQ_ERR(torrent_finish(t, &out, ih), FERRY_ERR_EXISTS);
    torrent_free(t);
    buf_cleanup(&out);

    CHECK_OK(torrent_new(&t, "x", 16384));
    add_file(t, "same", 1, 0, 1);
    add_file(t, "same", 1, 0, 1);
    buf_init(&out, TORRENT_MAX_BYTES);
    CHECK_EQ_ERR(torrent_finish(t, &out, ih), FERRY_ERR_EXISTS);
    buf_cleanup(&out);
    torrent_free(t);

    /* A .torrent that would not fit the buffer given. */
    CHECK_OK(torrent_new(&t, "x", 16384));
    add_file(t, "a", 100000, 0, 100000);
    buf_init(&out, 64);
    CHECK_EQ_ERR(torrent_finish(t, &out, ih), FERRY_ERR_TOO_LARGE);
    buf_cleanup(&out);
    torrent_free(t);
}
