/*
 * Tests for engine/partial.c: part files and their resume journals in a
 * scratch staging directory.
 *
 * A partial is journaled only from PARTIAL_JOURNAL_MIN bytes on; the
 * part file has the file's length from the start (a hole until written),
 * so the tests claim a source of that size and write a few blocks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../common/fsx.h"
#include "../../common/hash.h"
#include "../../engine/partial.h"
#include "../../proto/journal.h"
#include "../../proto/limits.h"
#include "check.h"

#define BS PROTO_MIN_BLOCK

static const uint8_t salt[16] = "0123456789abcde";

struct stage {
    char dir[CHECK_PATH_MAX];
    int fd;
};

static void
stage_new(struct stage *s)
{
    check_tmpdir(s->dir);
    CHECK((s->fd = open(s->dir, O_RDONLY | O_DIRECTORY)) >= 0);
}

static void
stage_free(struct stage *s)
{
    close(s->fd);
    check_rmtree(s->dir);
}

/* The version of a big (journaled) source file at path. */
static struct partial_id
big_id(const char *path)
{
    struct partial_id id;

    memset(&id, 0, sizeof(id));
    id.path = path;
    id.size = PARTIAL_JOURNAL_MIN;
    id.mtime_sec = 1700000000;
    id.mtime_nsec = 42;
    id.mode = 0644;
    id.block_size = BS;
    return id;
}

static void
block_data(uint64_t k, uint8_t *buf)
{
    size_t i;

    for (i = 0; i < BS; i++)
        buf[i] = (uint8_t)(k * 131 + i * 7);
}

/* Writes and journals the given blocks (in that order). */
static void
write_blocks(struct partial *p, const uint64_t *idx, size_t n)
{
    uint8_t *buf = check_alloc(BS);
    struct hash128 h;
    size_t i;

    for (i = 0; i < n; i++) {
        block_data(idx[i], buf);
        hash_block(buf, BS, &h);
        CHECK_OK(fsx_pwrite_all(partial_fd(p), buf, BS, idx[i] * BS));
        CHECK_OK(partial_add(p, idx[i], &h, BS));
    }
    free(buf);
}

static void
key_of(const char *path, char key[PARTIAL_KEY_LEN + 1])
{
    partial_key(salt, path, key);
}

static void
name_of(const char *path, const char *ext, char out[64])
{
    char key[PARTIAL_KEY_LEN + 1];

    key_of(path, key);
    snprintf(out, 64, "%s.%s", key, ext);
}

/* Blocks written in any order are claimed, sorted, and read back as
 * they were written; a kept partial takes more blocks. */
TEST(partial_any_order_resume)
{
    static const uint64_t first[] = { 5, 0, 3 }, more[] = { 1 };
    struct partial_id id = big_id("dir/big.bin");
    char key[PARTIAL_KEY_LEN + 1];
    struct partial_claim c;
    struct partial *p;
    struct stage s;
    struct hash128 h;
    uint8_t *buf = check_alloc(BS), *want = check_alloc(BS);

    stage_new(&s);
    key_of(id.path, key);
    CHECK_OK(partial_open(s.fd, key, &id, NULL, &p));
    write_blocks(p, first, 3);
    partial_close(p, s.fd, PARTIAL_KEEP);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 3);
    CHECK_EQ_U64(c.index[0], 0);
    CHECK_EQ_U64(c.index[1], 3);
    CHECK_EQ_U64(c.index[2], 5);
    CHECK_OK(partial_open(s.fd, key, &id, &c, &p));
    CHECK_OK(partial_read_block(p, 3, BS, buf, &h));
    CHECK(hash_equal(&h, &c.hash[1]));
    block_data(3, want);
    CHECK_EQ_MEM(buf, want, BS);
    /* A block never written reads as zeros (a hole). */
    CHECK_OK(partial_read_block(p, 9, BS, buf, &h));
    memset(want, 0, BS);
    CHECK_EQ_MEM(buf, want, BS);
    write_blocks(p, more, 1);
    partial_close(p, s.fd, PARTIAL_KEEP);
    partial_claim_free(&c);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 4);
    CHECK_EQ_U64(c.index[1], 1);
    partial_claim_free(&c);
    free(buf);
    free(want);
    stage_free(&s);
}

/* A block written twice: the last record counts. A torn record ends the
 * journal. Records past the file's last block make it damaged there. */
TEST(partial_records_last_wins)
{
    struct partial_id id = big_id("f");
    char key[PARTIAL_KEY_LEN + 1], jnl[64];
    struct journal_record rec;
    struct partial_claim c;
    struct partial *p;
    struct stage s;
    struct buf b;
    struct stat st;
    int fd;

    stage_new(&s);
    key_of(id.path, key);
    name_of(id.path, "jnl", jnl);
    CHECK_OK(partial_open(s.fd, key, &id, NULL, &p));
    partial_close(p, s.fd, PARTIAL_KEEP);  /* light: header only */
    CHECK((fd = openat(s.fd, jnl, O_WRONLY | O_APPEND)) >= 0);
    buf_init(&b, 4096);
    memset(&rec, 0, sizeof(rec));
    rec.index = 2;
    rec.hash.b[0] = 1;
    CHECK_OK(journal_record_encode(&b, &rec));
    rec.hash.b[0] = 2;
    CHECK_OK(journal_record_encode(&b, &rec));
    rec.index = 1;
    CHECK_OK(journal_record_encode(&b, &rec));
    /* past the end: the journal stops trusting here */
    rec.index = PARTIAL_JOURNAL_MIN / BS;
    CHECK_OK(journal_record_encode(&b, &rec));
    rec.index = 3;
    CHECK_OK(journal_record_encode(&b, &rec));
    CHECK_OK(fsx_write_all(fd, buf_ptr(&b), buf_used(&b)));
    close(fd);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 2);
    CHECK_EQ_U64(c.index[0], 1);
    CHECK_EQ_U64(c.index[1], 2);
    CHECK_EQ_INT(c.hash[1].b[0], 2);
    /* Appends go after the last trusted record. */
    CHECK(fstatat(s.fd, jnl, &st, 0) == 0);
    CHECK(c.journal_len < (uint64_t)st.st_size);
    CHECK_EQ_U64((c.journal_len - 0) % 1, 0);
    CHECK_OK(partial_open(s.fd, key, &id, &c, &p));
    partial_close(p, s.fd, PARTIAL_KEEP);
    CHECK(fstatat(s.fd, jnl, &st, 0) == 0);
    CHECK_EQ_U64((uint64_t)st.st_size, c.journal_len);
    partial_claim_free(&c);
    buf_cleanup(&b);
    stage_free(&s);
}

/* Another version of the file, another path, a format-1 journal or a
 * missing part file: nothing is claimed. */
TEST(partial_probe_mismatch)
{
    static const uint64_t blocks[] = { 0, 1 };
    struct partial_id id = big_id("x/y"), other;
    char key[PARTIAL_KEY_LEN + 1], part[64], jnl[64];
    struct partial_claim c;
    struct partial *p;
    struct stage s;
    int fd;

    stage_new(&s);
    key_of(id.path, key);
    name_of(id.path, "part", part);
    name_of(id.path, "jnl", jnl);
    CHECK_OK(partial_open(s.fd, key, &id, NULL, &p));
    write_blocks(p, blocks, 2);
    partial_close(p, s.fd, PARTIAL_KEEP);
    other = id;
    other.mtime_nsec++;
    CHECK_OK(partial_probe(s.fd, key, &other, &c));
    CHECK_EQ_U64(c.n, 0);
    other = id;
    other.size += BS;
    CHECK_OK(partial_probe(s.fd, key, &other, &c));
    CHECK_EQ_U64(c.n, 0);
    other = id;
    other.block_size = BS * 2;
    CHECK_OK(partial_probe(s.fd, key, &other, &c));
    CHECK_EQ_U64(c.n, 0);
    other = id;
    other.path = "x/z";  /* a colliding key cannot pass for another */
    CHECK_OK(partial_probe(s.fd, key, &other, &c));
    CHECK_EQ_U64(c.n, 0);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 2);
    partial_claim_free(&c);
    /* Format 1: recognised, so the user can be told. */
    CHECK((fd = openat(s.fd, jnl, O_WRONLY)) >= 0);
    CHECK_OK(fsx_pwrite_all(fd, JOURNAL_MAGIC_V1, 4, 0));
    close(fd);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 0);
    CHECK_EQ_INT(c.old_format, 1);
    CHECK_EQ_INT(unlinkat(s.fd, part, 0), 0);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 0);
    CHECK_EQ_INT(c.old_format, 0);
    stage_free(&s);
}

/* Hostile local state: a hard link to a file outside planted as the part
 * file, a FIFO as the journal, a symlink. Nothing outside changes, no
 * open hangs, nothing is claimed, and a fresh partial is a new file. */
TEST(partial_hostile_state)
{
    static const uint64_t blocks[] = { 0 };
    struct partial_id id = big_id("victim");
    char key[PARTIAL_KEY_LEN + 1], part[64], jnl[64];
    char outside[CHECK_PATH_MAX + 32], odir[CHECK_PATH_MAX];
    struct partial_claim c;
    struct partial *p;
    struct stage s;
    struct stat st;
    uint8_t got[8];
    int fd;

    stage_new(&s);
    check_tmpdir(odir);
    snprintf(outside, sizeof(outside), "%s/precious", odir);
    check_write_file(outside, "precious", 8, 0);
    key_of(id.path, key);
    name_of(id.path, "part", part);
    name_of(id.path, "jnl", jnl);
    /* A journal that claims block 0, and a hard link as the part. */
    CHECK_OK(partial_open(s.fd, key, &id, NULL, &p));
    write_blocks(p, blocks, 1);
    partial_close(p, s.fd, PARTIAL_KEEP);
    CHECK_EQ_INT(unlinkat(s.fd, part, 0), 0);
    CHECK_EQ_INT(linkat(AT_FDCWD, outside, s.fd, part, 0), 0);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 0);
    /* A fresh start replaces the link, never writes through it. */
    CHECK_OK(partial_open(s.fd, key, &id, NULL, &p));
    write_blocks(p, blocks, 1);
    partial_close(p, s.fd, PARTIAL_DISCARD);
    CHECK((fd = open(outside, O_RDONLY)) >= 0);
    CHECK_EQ_INT(read(fd, got, sizeof(got)), 8);
    CHECK_EQ_MEM(got, "precious", 8);
    CHECK(fstat(fd, &st) == 0 && st.st_size == 8 && st.st_nlink == 1);
    close(fd);
    /* A FIFO in the journal's place: probing does not hang. */
    CHECK_EQ_INT(mkfifoat(s.fd, jnl, 0600), 0);
    check_write_file("/dev/null", NULL, 0, 0);
    CHECK((fd = openat(s.fd, part, O_CREAT | O_WRONLY, 0600)) >= 0);
    close(fd);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 0);
    /* A symlink as the part file of a resume: refused. */
    CHECK_EQ_INT(unlinkat(s.fd, jnl, 0), 0);
    CHECK_EQ_INT(unlinkat(s.fd, part, 0), 0);
    CHECK_EQ_INT(symlinkat(outside, s.fd, part), 0);
    c.n = 1;
    c.journal_len = 0;
    CHECK_FAILS(partial_open(s.fd, key, &id, &c, &p));
    c.n = 0;
    CHECK(fstatat(s.fd, part, &st, AT_SYMLINK_NOFOLLOW) == 0);
    check_rmtree(odir);
    stage_free(&s);
}

/* Small files: no journal, a temporary name, never resumed; renamed into
 * place when done. */
TEST(partial_light)
{
    struct partial_id id = big_id("small");
    char key[PARTIAL_KEY_LEN + 1], tmp[64];
    struct partial_claim c;
    struct partial *p;
    struct stage s;
    struct stat st;

    stage_new(&s);
    id.size = 100;
    key_of(id.path, key);
    name_of(id.path, "tmp", tmp);
    CHECK_OK(partial_open(s.fd, key, &id, NULL, &p));
    CHECK_OK(fsx_pwrite_all(partial_fd(p), "hello", 5, 0));
    CHECK(fstatat(s.fd, tmp, &st, 0) == 0);
    CHECK_EQ_U64((uint64_t)st.st_size, 100);
    CHECK_OK(partial_probe(s.fd, key, &id, &c));
    CHECK_EQ_U64(c.n, 0);
    CHECK(renameat(s.fd, partial_name(p), s.fd, "final") == 0);
    partial_close(p, s.fd, PARTIAL_DONE);
    CHECK(fstatat(s.fd, "final", &st, 0) == 0);
    CHECK(fstatat(s.fd, tmp, &st, 0) != 0);
    /* KEEP of a light partial keeps nothing. */
    CHECK_OK(partial_open(s.fd, key, &id, NULL, &p));
    partial_close(p, s.fd, PARTIAL_KEEP);
    CHECK(fstatat(s.fd, tmp, &st, 0) != 0);
    stage_free(&s);
}

/* partial_zero makes a block read as zeros again. */
TEST(partial_zero_block)
{
    static const uint64_t blocks[] = { 2 };
    struct partial_id id = big_id("z");
    char key[PARTIAL_KEY_LEN + 1];
    struct partial *p;
    struct stage s;
    struct hash128 h, zh;
    uint8_t *buf = check_alloc(BS);

    stage_new(&s);
    key_of(id.path, key);
    CHECK_OK(partial_open(s.fd, key, &id, NULL, &p));
    write_blocks(p, blocks, 1);
    CHECK_OK(partial_zero(p, 2 * BS, BS));
    CHECK_OK(partial_read_block(p, 2, BS, buf, &h));
    hash_zero_block(BS, &zh);
    CHECK(hash_equal(&h, &zh));
    partial_close(p, s.fd, PARTIAL_DISCARD);
    free(buf);
    stage_free(&s);
}

static const struct partial_info *
find_info(const struct partial_info *v, size_t n, const char *path)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(v[i].path, path) == 0)
            return &v[i];
    return NULL;
}

/* Listing: unfinished files with what they hold; with expire, old ones,
 * format-1 journals and light temporaries go. */
TEST(partial_list_expire)
{
    static const uint64_t blocks[] = { 0, 1, 2 };
    struct partial_id a = big_id("a"), old = big_id("old");
    char key[PARTIAL_KEY_LEN + 1], jnl[64], tmp[64];
    const struct partial_info *pi;
    struct partial_info *v;
    struct partial *p;
    struct timespec ts[2];
    struct stage s;
    struct stat st;
    size_t n;
    int fd;

    stage_new(&s);
    key_of(a.path, key);
    CHECK_OK(partial_open(s.fd, key, &a, NULL, &p));
    write_blocks(p, blocks, 3);
    partial_close(p, s.fd, PARTIAL_KEEP);
    key_of(old.path, key);
    CHECK_OK(partial_open(s.fd, key, &old, NULL, &p));
    partial_close(p, s.fd, PARTIAL_KEEP);
    name_of(old.path, "jnl", jnl);
    ts[0].tv_sec = ts[1].tv_sec = time(NULL) - PARTIAL_EXPIRE_S - 10;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    CHECK_EQ_INT(utimensat(s.fd, jnl, ts, 0), 0);
    snprintf(tmp, sizeof(tmp), "%.16s.tmp", "0123456789abcdef");
    CHECK((fd = openat(s.fd, tmp, O_CREAT | O_WRONLY, 0600)) >= 0);
    close(fd);
    CHECK_OK(partial_list(s.fd, 0, &v, &n));
    CHECK_EQ_U64(n, 2);
    CHECK((pi = find_info(v, n, "a")) != NULL);
    CHECK_EQ_U64(pi->done, 3 * BS);
    CHECK_EQ_U64(pi->size, PARTIAL_JOURNAL_MIN);
    partial_list_free(v, n);
    CHECK_OK(partial_list(s.fd, 1, &v, &n));
    CHECK_EQ_U64(n, 1);
    CHECK(find_info(v, n, "a") != NULL);
    partial_list_free(v, n);
    CHECK(fstatat(s.fd, jnl, &st, 0) != 0);
    CHECK(fstatat(s.fd, tmp, &st, 0) != 0);
    partial_clear(s.fd);
    CHECK_OK(partial_list(s.fd, 0, &v, &n));
    CHECK_EQ_U64(n, 0);
    partial_list_free(v, n);
    stage_free(&s);
}

/* Keys are keyed: another salt, another name; the same salt, the same. */
TEST(partial_key_salted)
{
    uint8_t other[16] = "fedcba987654321";
    char k1[PARTIAL_KEY_LEN + 1], k2[PARTIAL_KEY_LEN + 1];
    char k3[PARTIAL_KEY_LEN + 1];

    partial_key(salt, "dir/file", k1);
    partial_key(salt, "dir/file", k2);
    partial_key(other, "dir/file", k3);
    CHECK_EQ_STR(k1, k2);
    CHECK(strcmp(k1, k3) != 0);
    CHECK_EQ_U64(strlen(k1), PARTIAL_KEY_LEN);
}
