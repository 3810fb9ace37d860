/*
 * Tests for engine/partial.c: part files and their resume journals, in a
 * destination made under a scratch directory (DEST/.ferry/part).
 *
 * A partial is journaled only from PARTIAL_JOURNAL_MIN bytes on, but
 * nothing reads the part file's length back: the tests claim a source of
 * that size and write only the first few blocks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../common/hash.h"
#include "../../engine/partial.h"
#include "../../proto/journal.h"
#include "../../proto/limits.h"
#include "check.h"

#define BS PROTO_MIN_BLOCK

struct dest {
    char dir[CHECK_PATH_MAX];
    int rootfd, partfd;
};

/* A destination with its state directory, as a receiver leaves it. */
static void
dest_new(struct dest *d)
{
    char path[CHECK_PATH_MAX + 64];

    check_tmpdir(d->dir);
    snprintf(path, sizeof(path), "%s/%s", d->dir, PARTIAL_STATE_DIR);
    CHECK_EQ_INT(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/%s/%s", d->dir, PARTIAL_STATE_DIR,
        PARTIAL_MARKER);
    check_write_file(path, "", 0, 0);
    snprintf(path, sizeof(path), "%s/%s/%s", d->dir, PARTIAL_STATE_DIR,
        PARTIAL_PART_DIR);
    CHECK_EQ_INT(mkdir(path, 0700), 0);
    CHECK((d->rootfd = open(d->dir, O_RDONLY | O_DIRECTORY)) >= 0);
    CHECK((d->partfd = open(path, O_RDONLY | O_DIRECTORY)) >= 0);
}

static void
dest_free(struct dest *d)
{
    close(d->partfd);
    close(d->rootfd);
    check_rmtree(d->dir);
}

/* The version of a big (journaled) source file at path. */
static struct partial_id
big_id(const char *path)
{
    struct partial_id id;

    memset(&id, 0, sizeof(id));
    id.path = path;
    id.size = PARTIAL_JOURNAL_MIN + 5;
    id.mtime_sec = 1700000000;
    id.mtime_nsec = 5;
    id.mode = 0644;
    id.block_size = BS;
    return id;
}

/* The names of path's part file and journal. */
static void
names(const char *path, char part[32], char jnl[32])
{
    char key[17];

    partial_key(path, key);
    CHECK_EQ_U64(strlen(key), 16);
    snprintf(part, 32, "%s.part", key);
    snprintf(jnl, 32, "%s.jnl", key);
}

/* Size of name beneath fd, or -1 if it does not exist. */
static long long
file_size(int fd, const char *name)
{
    struct stat st;

    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        CHECK_EQ_INT(errno, ENOENT);
        return -1;
    }
    CHECK(S_ISREG(st.st_mode));
    return (long long)st.st_size;
}

/* Cuts name beneath d's part directory to len bytes. */
static void
truncate_at(const struct dest *d, const char *name, size_t len)
{
    int fd = openat(d->partfd, name, O_WRONLY);

    CHECK(fd >= 0);
    CHECK_EQ_INT(ftruncate(fd, (off_t)len), 0);
    close(fd);
}

/* Overwrites one byte of name beneath d's part directory. */
static void
poke(const struct dest *d, const char *name, off_t off, uint8_t v)
{
    int fd = openat(d->partfd, name, O_WRONLY);

    CHECK(fd >= 0);
    CHECK_EQ_INT(pwrite(fd, &v, 1, off), 1);
    close(fd);
}

/* Sets the modification time of name beneath fd to age seconds ago. */
static void
age_file(int fd, const char *name, long age)
{
    struct timespec ts[2];

    ts[0].tv_sec = ts[1].tv_sec = time(NULL) - age;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    CHECK_EQ_INT(utimensat(fd, name, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* Number of entries in the directory fd, "." and ".." aside. */
static int
count_entries(int fd)
{
    struct dirent *de;
    DIR *dir;
    int n = 0, dfd = dup(fd);

    CHECK(dfd >= 0);
    CHECK((dir = fdopendir(dfd)) != NULL);
    rewinddir(dir);
    while ((de = readdir(dir)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(dir);
    return n;
}

/* Block k's data: BS bytes of a pattern of its own. */
static void
block_data(uint64_t k, uint8_t *buf)
{
    size_t i;

    for (i = 0; i < BS; i++)
        buf[i] = (uint8_t)(i * 7 + k * 13 + (i >> 8));
}

/* Writes blocks [from, to) to the part file and records them. */
static void
write_blocks(struct partial *p, uint64_t from, uint64_t to)
{
    uint8_t *buf = check_alloc(BS);
    struct hash128 h;
    uint64_t k;

    for (k = from; k < to; k++) {
        block_data(k, buf);
        CHECK_EQ_INT(pwrite(partial_fd(p), buf, BS, (off_t)(k * BS)), BS);
        hash_block(buf, BS, &h);
        CHECK_OK(partial_add(p, k, &h, BS));
    }
    free(buf);
}

/* The file hash of the first n blocks as a file of their length, from
 * their block hashes (what REPLY carries for a resume). */
static void
prefix_hash(uint64_t n, struct hash128 *out)
{
    uint8_t *buf = check_alloc(BS);
    struct hash_file *hf = hash_file_new(n * BS, BS);
    struct hash128 h;
    uint64_t k;

    CHECK(hf != NULL);
    for (k = 0; k < n; k++) {
        block_data(k, buf);
        hash_block(buf, BS, &h);
        hash_file_add(hf, &h);
    }
    hash_file_final(hf, out);
    hash_file_free(hf);
    free(buf);
}

/* partial_probe, checked against the expected block count: the prefix
 * hash, the hashes it feeds to a hash_file, and the part file's data. */
static void
check_probe(const struct dest *d, const struct partial_id *id, uint64_t want)
{
    struct hash128 prefix, expect, fed, ondisk;
    struct hash_file *hf = hash_file_new(want * BS, BS);
    char part[32], jnl[32];
    int fd;

    CHECK(hf != NULL);
    memset(&prefix, 0xa5, sizeof(prefix));
    CHECK_EQ_U64(partial_probe(d->partfd, id, hf, &prefix), want);
    CHECK_EQ_U64(partial_probe(d->partfd, id, NULL, NULL), want);
    if (want == 0) {
        CHECK_EQ_MEM(prefix.b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            HASH_LEN);
        hash_file_free(hf);
        return;
    }
    prefix_hash(want, &expect);
    CHECK(hash_equal(&prefix, &expect));
    hash_file_final(hf, &fed);
    hash_file_free(hf);
    CHECK(hash_equal(&fed, &expect));
    /* The journal's claim holds for the data on disk. */
    names(id->path, part, jnl);
    CHECK((fd = openat(d->partfd, part, O_RDONLY)) >= 0);
    CHECK_OK(hash_fd(fd, want * BS, BS, &ondisk));
    close(fd);
    CHECK(hash_equal(&ondisk, &expect));
}

TEST(partial_journal_resume)
{
    struct partial_id id = big_id("dir/big.bin");
    size_t header = JOURNAL_HEADER_FIXED + strlen(id.path);
    char part[32], jnl[32];
    struct partial *p;
    struct dest d;

    dest_new(&d);
    names(id.path, part, jnl);
    check_probe(&d, &id, 0);
    /* A new partial: an empty part file and a journal with a header. */
    CHECK_OK(partial_open(d.partfd, &id, 0, &p));
    CHECK(partial_fd(p) >= 0);
    CHECK_EQ_INT(file_size(d.partfd, part), 0);
    CHECK_EQ_INT(file_size(d.partfd, jnl), header);
    check_probe(&d, &id, 0);
    write_blocks(p, 0, 3);
    CHECK_OK(partial_sync(p));
    CHECK_EQ_INT(file_size(d.partfd, jnl), header + 3 * JOURNAL_RECORD_LEN);
    check_probe(&d, &id, 3);
    partial_close(p, d.partfd, PARTIAL_KEEP);
    CHECK_EQ_INT(count_entries(d.partfd), 2);
    check_probe(&d, &id, 3);

    /* A record torn by a crash is ignored. */
    truncate_at(&d, jnl, header + 3 * JOURNAL_RECORD_LEN - 5);
    check_probe(&d, &id, 2);

    /* Resuming keeps what the journal holds, drops the torn tail and the
     * data past the claim, and appends after it. */
    CHECK_OK(partial_open(d.partfd, &id, 2, &p));
    CHECK_EQ_INT(file_size(d.partfd, jnl), header + 2 * JOURNAL_RECORD_LEN);
    CHECK_EQ_INT(file_size(d.partfd, part), 2 * BS);
    write_blocks(p, 2, 4);
    CHECK_OK(partial_sync(p));
    check_probe(&d, &id, 4);
    /* KEEP syncs what is still pending. */
    write_blocks(p, 4, 5);
    partial_close(p, d.partfd, PARTIAL_KEEP);
    check_probe(&d, &id, 5);

    /* partial_reset starts over: nothing is claimed. */
    CHECK_OK(partial_open(d.partfd, &id, 5, &p));
    CHECK_OK(partial_reset(p));
    CHECK_EQ_INT(file_size(d.partfd, part), 0);
    CHECK_EQ_INT(file_size(d.partfd, jnl), header);
    check_probe(&d, &id, 0);
    partial_close(p, d.partfd, PARTIAL_KEEP);
    dest_free(&d);
}

/* A journal only counts for the source version it names. */
TEST(partial_probe_mismatch)
{
    struct partial_id id = big_id("v.bin"), other;
    char part[32], jnl[32];
    struct partial *p;
    struct dest d;

    dest_new(&d);
    names(id.path, part, jnl);
    CHECK_OK(partial_open(d.partfd, &id, 0, &p));
    write_blocks(p, 0, 2);
    partial_close(p, d.partfd, PARTIAL_KEEP);
    check_probe(&d, &id, 2);
    other = id, other.mtime_sec++;
    check_probe(&d, &other, 0);
    other = id, other.mtime_nsec++;
    check_probe(&d, &other, 0);
    other = id, other.size++;
    check_probe(&d, &other, 0);
    other = id, other.block_size *= 2;
    check_probe(&d, &other, 0);
    /* Another path has other files: nothing to resume. */
    other = id, other.path = "w.bin";
    check_probe(&d, &other, 0);
    /* Below PARTIAL_JOURNAL_MIN nothing is ever journaled. */
    other = id, other.size = PARTIAL_JOURNAL_MIN - 1;
    check_probe(&d, &other, 0);
    check_probe(&d, &id, 2);

    /* A damaged header. */
    poke(&d, jnl, 2, 'X');
    check_probe(&d, &id, 0);
    poke(&d, jnl, 2, JOURNAL_MAGIC[2]);
    check_probe(&d, &id, 2);
    /* A damaged first record: nothing after it counts either. */
    poke(&d, jnl, JOURNAL_HEADER_FIXED + 5 + 3, 0xff);
    check_probe(&d, &id, 0);
    dest_free(&d);

    /* A missing part file, or a journal with no part file. */
    dest_new(&d);
    CHECK_OK(partial_open(d.partfd, &id, 0, &p));
    write_blocks(p, 0, 2);
    partial_close(p, d.partfd, PARTIAL_KEEP);
    CHECK_EQ_INT(unlinkat(d.partfd, part, 0), 0);
    check_probe(&d, &id, 0);
    /* Not a regular file where the part file should be. */
    CHECK_EQ_INT(mkdirat(d.partfd, part, 0700), 0);
    check_probe(&d, &id, 0);
    CHECK_EQ_INT(unlinkat(d.partfd, part, AT_REMOVEDIR), 0);
    dest_free(&d);
}

/* Files under PARTIAL_JOURNAL_MIN get a private temp and no journal. */
TEST(partial_light)
{
    struct partial_id id = big_id("small.txt");
    char part[32], jnl[32], tmp[64], key[17];
    struct partial *p;
    struct dest d;

    id.size = PARTIAL_JOURNAL_MIN - 1;
    dest_new(&d);
    names(id.path, part, jnl);
    partial_key(id.path, key);
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", key, (long)getpid());
    CHECK_OK(partial_open(d.partfd, &id, 0, &p));
    CHECK_EQ_INT(count_entries(d.partfd), 1);
    CHECK_EQ_INT(file_size(d.partfd, tmp), 0);
    CHECK_EQ_INT(file_size(d.partfd, jnl), -1);
    write_blocks(p, 0, 2);
    CHECK_OK(partial_sync(p));
    CHECK_EQ_INT(file_size(d.partfd, tmp), 2 * BS);
    CHECK_EQ_INT(file_size(d.partfd, jnl), -1);
    check_probe(&d, &id, 0);
    /* Nothing to resume from: KEEP throws it away. */
    partial_close(p, d.partfd, PARTIAL_KEEP);
    CHECK_EQ_INT(count_entries(d.partfd), 0);

    /* Done: renamed into place, nothing left behind. */
    CHECK_OK(partial_open(d.partfd, &id, 0, &p));
    write_blocks(p, 0, 1);
    CHECK_OK(partial_rename(p, d.partfd, d.rootfd, "small.txt"));
    partial_close(p, d.partfd, PARTIAL_DONE);
    CHECK_EQ_INT(count_entries(d.partfd), 0);
    CHECK_EQ_INT(file_size(d.rootfd, "small.txt"), BS);
    partial_close(NULL, d.partfd, PARTIAL_DISCARD);
    dest_free(&d);
}

/* KEEP, DISCARD and DONE leave exactly the files they promise. */
TEST(partial_close_modes)
{
    struct partial_id id = big_id("m.bin");
    char part[32], jnl[32];
    struct partial *p;
    struct dest d;

    dest_new(&d);
    names(id.path, part, jnl);
    CHECK_OK(partial_open(d.partfd, &id, 0, &p));
    write_blocks(p, 0, 1);
    partial_close(p, d.partfd, PARTIAL_DISCARD);
    CHECK_EQ_INT(count_entries(d.partfd), 0);

    CHECK_OK(partial_open(d.partfd, &id, 0, &p));
    write_blocks(p, 0, 2);
    CHECK_OK(partial_sync(p));
    CHECK_OK(partial_rename(p, d.partfd, d.rootfd, "m.bin"));
    partial_close(p, d.partfd, PARTIAL_DONE);
    CHECK_EQ_INT(count_entries(d.partfd), 0);
    CHECK_EQ_INT(file_size(d.rootfd, "m.bin"), 2 * BS);

    CHECK_OK(partial_open(d.partfd, &id, 0, &p));
    write_blocks(p, 0, 1);
    partial_close(p, d.partfd, PARTIAL_KEEP);
    CHECK_EQ_INT(count_entries(d.partfd), 2);
    CHECK(file_size(d.partfd, part) == BS);
    CHECK(file_size(d.partfd, jnl) > 0);
    check_probe(&d, &id, 1);
    dest_free(&d);
}

/* The entry of info for path, failing the test if there is none. */
static const struct partial_info *
find_info(const struct partial_info *v, size_t n, const char *path)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(v[i].path, path) == 0)
            return &v[i];
    check_fail(__FILE__, __LINE__, "%s is not listed", path);
}

TEST(partial_list_state)
{
    struct partial_id one = big_id("a/one.bin"), two = big_id("two.bin");
    char part[32], jnl[32], path[CHECK_PATH_MAX + 64];
    const struct partial_info *e;
    struct partial_info *v;
    struct partial *p;
    struct dest d;
    struct stat st;
    size_t n;

    dest_new(&d);
    CHECK_OK(partial_open(d.partfd, &one, 0, &p));
    write_blocks(p, 0, 3);
    partial_close(p, d.partfd, PARTIAL_KEEP);
    CHECK_OK(partial_open(d.partfd, &two, 0, &p));
    write_blocks(p, 0, 1);
    partial_close(p, d.partfd, PARTIAL_KEEP);
    /* Temps of small files from agents that died, one long ago. */
    snprintf(path, sizeof(path), "%s/%s/%s/0123456789abcdef.1.tmp", d.dir,
        PARTIAL_STATE_DIR, PARTIAL_PART_DIR);
    check_write_file(path, "x", 1, 0);
    age_file(d.partfd, "0123456789abcdef.1.tmp", PARTIAL_TMP_EXPIRE_S + 60);
    snprintf(path, sizeof(path), "%s/%s/%s/0123456789abcdef.2.tmp", d.dir,
        PARTIAL_STATE_DIR, PARTIAL_PART_DIR);
    check_write_file(path, "x", 1, 0);

    CHECK_OK(partial_list(d.partfd, 0, &v, &n));
    CHECK_EQ_U64(n, 2);
    e = find_info(v, n, "a/one.bin");
    CHECK_EQ_U64(e->size, one.size);
    CHECK_EQ_U64(e->done, 3 * BS);
    CHECK(e->age_s >= 0 && e->age_s < 60);
    e = find_info(v, n, "two.bin");
    CHECK_EQ_U64(e->done, BS);
    partial_list_free(v, n);
    CHECK_EQ_INT(count_entries(d.partfd), 6);

    /* With expire, what is too old goes: the listing and its files. */
    names(two.path, part, jnl);
    age_file(d.partfd, jnl, PARTIAL_EXPIRE_S + 60);
    CHECK_OK(partial_list(d.partfd, 1, &v, &n));
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_STR(v[0].path, "a/one.bin");
    partial_list_free(v, n);
    CHECK_EQ_INT(file_size(d.partfd, part), -1);
    CHECK_EQ_INT(file_size(d.partfd, jnl), -1);
    CHECK_EQ_INT(file_size(d.partfd, "0123456789abcdef.1.tmp"), -1);
    CHECK_EQ_INT(file_size(d.partfd, "0123456789abcdef.2.tmp"), 1);
    CHECK_EQ_INT(count_entries(d.partfd), 3);

    /* The state of a destination by its name; clean removes it all. */
    CHECK_OK(partial_dest_state(d.dir, 0, &v, &n));
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_STR(v[0].path, "a/one.bin");
    CHECK_EQ_U64(v[0].done, 3 * BS);
    partial_list_free(v, n);
    CHECK_EQ_INT(count_entries(d.partfd), 3);
    CHECK_OK(partial_dest_state(d.dir, 1, &v, &n));
    CHECK_EQ_U64(n, 1);
    partial_list_free(v, n);
    snprintf(path, sizeof(path), "%s/%s", d.dir, PARTIAL_STATE_DIR);
    CHECK(lstat(path, &st) != 0 && errno == ENOENT);
    CHECK_EQ_INT(count_entries(d.rootfd), 0);
    /* No state: an empty list. */
    v = (struct partial_info *)&n;
    CHECK_OK(partial_dest_state(d.dir, 0, &v, &n));
    CHECK(v == NULL);
    CHECK_EQ_U64(n, 0);
    CHECK_OK(partial_dest_state(d.dir, 1, &v, &n));
    CHECK_EQ_U64(n, 0);
    snprintf(path, sizeof(path), "%s/missing", d.dir);
    CHECK_EQ_ERR(partial_dest_state(path, 0, &v, &n), -ENOENT);
    dest_free(&d);
}
