/*
 * The record of what ferry put at the top of a destination
 * (engine/owned.c): its decoder against garbage, truncation, bit flips
 * and every field's bound; what counts as unchanged; the file on disk
 * (untrusted when read back); and a clean that keeps it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#include "../../common/buf.h"
#include "../../common/fsx.h"
#include "../../common/hash.h"
#include "../../engine/dest.h"
#include "../../engine/owned.h"
#include "../../engine/partial.h"

static void
ow_id(struct owned_id *id, uint8_t type, uint64_t ino, uint64_t size)
{
    memset(id, 0, sizeof(*id));
    id->type = type;
    id->ino = ino;
    id->size = size;
    id->mtime_sec = 1700000000;
    id->mtime_nsec = 5;
}

/* A record of three entries, encoded into b. */
static void
ow_sample(struct buf *b)
{
    struct owned o;
    struct owned_id id;

    owned_init(&o);
    ow_id(&id, OWNED_REG, 11, 100);
    CHECK_OK(owned_put(&o, "step-2.pt", &id, 20, 0));
    ow_id(&id, OWNED_DIR, 12, 3000);
    id.count = 4;
    CHECK_OK(owned_put(&o, "ck-1", &id, 10, 999999999));
    ow_id(&id, OWNED_DIR, 13, 0);
    id.flags = OWNED_F_STAGING;
    CHECK_OK(owned_put(&o, ".ck-2.ferry-watch", &id, 0, 0));
    buf_init(b, OWNED_MAX_BYTES);
    CHECK_OK(owned_encode(&o, b));
    owned_cleanup(&o);
}

TEST(owned_round_trip)
{
    const struct owned_entry *e;
    struct owned o;
    struct buf b, again;

    ow_sample(&b);
    owned_init(&o);
    CHECK_OK(owned_decode(&o, buf_ptr(&b), buf_used(&b)));
    CHECK_EQ_U64(o.n, 3);
    /* Sorted by name, whatever order they were put in. */
    CHECK_EQ_STR(o.v[0].name, ".ck-2.ferry-watch");
    CHECK_EQ_STR(o.v[1].name, "ck-1");
    CHECK_EQ_STR(o.v[2].name, "step-2.pt");
    CHECK((e = owned_find(&o, "ck-1")) != NULL);
    CHECK_EQ_INT(e->id.type, OWNED_DIR);
    CHECK_EQ_U64(e->id.count, 4);
    CHECK_EQ_U64(e->id.size, 3000);
    CHECK_EQ_INT(e->order_sec, 10);
    CHECK_EQ_U64(e->order_nsec, 999999999);
    CHECK(owned_find(&o, "ck") == NULL);
    buf_init(&again, OWNED_MAX_BYTES);
    CHECK_OK(owned_encode(&o, &again));
    CHECK_EQ_U64(buf_used(&again), buf_used(&b));
    CHECK_EQ_MEM(buf_ptr(&again), buf_ptr(&b), buf_used(&b));
    owned_drop(&o, "ck-1");
    owned_drop(&o, "absent");
    CHECK_EQ_U64(o.n, 2);
    CHECK(owned_find(&o, "ck-1") == NULL);
    owned_cleanup(&o);
    buf_cleanup(&again);
    buf_cleanup(&b);
}

/* Every truncation and every single bit flip is refused, and leaves the
 * record empty. */
TEST(owned_decode_mutations)
{
    struct owned o;
    struct buf b;
    uint8_t *p;
    size_t n, i;
    int bit;

    ow_sample(&b);
    n = buf_used(&b);
    for (i = 0; i < n; i++) {
        check_note("truncated to %zu bytes", i);
        p = check_dup(buf_ptr(&b), i);
        owned_init(&o);
        CHECK_FAILS(owned_decode(&o, p, i));
        CHECK_EQ_U64(o.n, 0);
        owned_cleanup(&o);
        free(p);
    }
    for (i = 0; i < n; i++)
        for (bit = 0; bit < 8; bit++) {
            check_note("byte %zu bit %d", i, bit);
            p = check_dup(buf_ptr(&b), n);
            p[i] ^= (uint8_t)(1u << bit);
            owned_init(&o);
            CHECK_FAILS(owned_decode(&o, p, n));
            CHECK_EQ_U64(o.n, 0);
            owned_cleanup(&o);
            free(p);
        }
    check_note_clear();
    /* Garbage, of any length, with a trailing byte, or too big. */
    p = check_alloc(OWNED_MAX_BYTES + 1);
    srand(7);
    for (i = 0; i < OWNED_MAX_BYTES + 1; i++)
        p[i] = (uint8_t)rand();
    for (i = 0; i < 200; i++) {
        owned_init(&o);
        CHECK_FAILS(owned_decode(&o, p, i * 37));
        owned_cleanup(&o);
    }
    owned_init(&o);
    CHECK_EQ_ERR(owned_decode(&o, p, OWNED_MAX_BYTES + 1),
        FERRY_ERR_TOO_LARGE);
    memcpy(p, buf_ptr(&b), n);
    p[n] = 0;
    CHECK_FAILS(owned_decode(&o, p, n + 1));
    free(p);
    buf_cleanup(&b);
}

/* A record with the given header and entries, and a right hash: so that
 * each check of a field is reached. */
struct ow_raw {
    const char *magic;
    uint8_t version;
    uint32_t count;          /* said; entries below follow */
    struct {
        uint8_t type, flags;
        uint32_t nsec, onsec;
        const char *name;
        size_t len;
    } e[3];
    size_t n;
};

static int
ow_decode_raw(const struct ow_raw *w)
{
    struct hash128 h;
    struct owned o;
    struct buf b;
    size_t i;
    int r;

    buf_init(&b, 1 << 20);
    CHECK_OK(buf_put(&b, w->magic, 4));
    CHECK_OK(buf_put_u8(&b, w->version));
    CHECK_OK(buf_put_u32(&b, w->count));
    for (i = 0; i < w->n; i++) {
        CHECK_OK(buf_put_u8(&b, w->e[i].type));
        CHECK_OK(buf_put_u8(&b, w->e[i].flags));
        CHECK_OK(buf_put_u64(&b, 1));
        CHECK_OK(buf_put_u64(&b, 2));
        CHECK_OK(buf_put_u64(&b, 3));
        CHECK_OK(buf_put_u64(&b, 6));
        CHECK_OK(buf_put_u64(&b, 4));
        CHECK_OK(buf_put_u32(&b, w->e[i].nsec));
        CHECK_OK(buf_put_u64(&b, 5));
        CHECK_OK(buf_put_u32(&b, w->e[i].onsec));
        CHECK_OK(buf_put_str16(&b, w->e[i].name, w->e[i].len));
    }
    hash_block(buf_ptr(&b), buf_used(&b), &h);
    CHECK_OK(buf_put(&b, h.b, HASH_LEN));
    owned_init(&o);
    r = owned_decode(&o, buf_ptr(&b), buf_used(&b));
    CHECK_EQ_U64(o.n, r == 0 ? w->n : 0);
    owned_cleanup(&o);
    buf_cleanup(&b);
    return r;
}

#define OW_E(t, f, ns, ons, s) { t, f, ns, ons, s, sizeof(s) - 1 }

TEST(owned_decode_fields)
{
    static const struct {
        const char *what;
        struct ow_raw w;
        int err;
    } cases[] = {
        { "good", { "FOWN", 1, 2, { OW_E(1, 0, 0, 0, "a"),
            OW_E(2, 1, 999999999, 999999999, "b") }, 2 }, 0 },
        { "empty", { "FOWN", 1, 0, { { 0 } }, 0 }, 0 },
        { "magic", { "FOWX", 1, 0, { { 0 } }, 0 }, FERRY_ERR_FORMAT },
        { "version", { "FOWN", 2, 0, { { 0 } }, 0 }, FERRY_ERR_FORMAT },
        { "count_over", { "FOWN", 1, OWNED_MAX_ENTRIES + 1, { { 0 } }, 0 },
            FERRY_ERR_TOO_LARGE },
        { "count_more", { "FOWN", 1, 2, { OW_E(1, 0, 0, 0, "a") }, 1 },
            FERRY_ERR_SHORT },
        { "count_less", { "FOWN", 1, 1, { OW_E(1, 0, 0, 0, "a"),
            OW_E(1, 0, 0, 0, "b") }, 2 }, FERRY_ERR_TRAILING },
        { "type_0", { "FOWN", 1, 1, { OW_E(0, 0, 0, 0, "a") }, 1 },
            FERRY_ERR_FORMAT },
        { "type_4", { "FOWN", 1, 1, { OW_E(4, 0, 0, 0, "a") }, 1 },
            FERRY_ERR_FORMAT },
        { "flags", { "FOWN", 1, 1, { OW_E(1, 2, 0, 0, "a") }, 1 },
            FERRY_ERR_FORMAT },
        { "nsec", { "FOWN", 1, 1, { OW_E(1, 0, 1000000000, 0, "a") }, 1 },
            FERRY_ERR_FORMAT },
        { "order_nsec", { "FOWN", 1, 1,
            { OW_E(1, 0, 0, 1000000000, "a") }, 1 }, FERRY_ERR_FORMAT },
        { "name_empty", { "FOWN", 1, 1, { OW_E(1, 0, 0, 0, "") }, 1 },
            FERRY_ERR_FORMAT },
        { "name_slash", { "FOWN", 1, 1, { OW_E(1, 0, 0, 0, "a/b") }, 1 },
            FERRY_ERR_FORMAT },
        { "name_abs", { "FOWN", 1, 1, { OW_E(1, 0, 0, 0, "/etc") }, 1 },
            FERRY_ERR_FORMAT },
        { "name_dot", { "FOWN", 1, 1, { OW_E(1, 0, 0, 0, ".") }, 1 },
            FERRY_ERR_FORMAT },
        { "name_dotdot", { "FOWN", 1, 1, { OW_E(1, 0, 0, 0, "..") }, 1 },
            FERRY_ERR_FORMAT },
        { "name_state", { "FOWN", 1, 1, { OW_E(1, 0, 0, 0, ".ferry") }, 1 },
            FERRY_ERR_FORMAT },
        { "name_nul", { "FOWN", 1, 1, { OW_E(1, 0, 0, 0, "a\0b") }, 1 },
            FERRY_ERR_FORMAT },
        { "order", { "FOWN", 1, 2, { OW_E(1, 0, 0, 0, "b"),
            OW_E(1, 0, 0, 0, "a") }, 2 }, FERRY_ERR_FORMAT },
        { "twice", { "FOWN", 1, 2, { OW_E(1, 0, 0, 0, "a"),
            OW_E(1, 0, 0, 0, "a") }, 2 }, FERRY_ERR_FORMAT },
        { "prefix_first", { "FOWN", 1, 2, { OW_E(1, 0, 0, 0, "ab"),
            OW_E(1, 0, 0, 0, "a") }, 2 }, FERRY_ERR_FORMAT },
        { "prefix_ok", { "FOWN", 1, 2, { OW_E(1, 0, 0, 0, "a"),
            OW_E(1, 0, 0, 0, "ab") }, 2 }, 0 },
    };
    char longname[FSX_NAME_MAX + 2];
    struct ow_raw w;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("%s", cases[i].what);
        CHECK_EQ_ERR(ow_decode_raw(&cases[i].w), cases[i].err);
    }
    /* A name of FSX_NAME_MAX bytes, and one more. */
    memset(longname, 'n', sizeof(longname));
    memset(&w, 0, sizeof(w));
    w.magic = "FOWN";
    w.version = 1;
    w.count = 1;
    w.n = 1;
    w.e[0].type = 1;
    w.e[0].name = longname;
    w.e[0].len = FSX_NAME_MAX;
    check_note("name of the longest");
    CHECK_OK(ow_decode_raw(&w));
    w.e[0].len = FSX_NAME_MAX + 1;
    check_note("name one longer");
    CHECK_EQ_ERR(ow_decode_raw(&w), FERRY_ERR_TOO_LARGE);
}

/* owned_put refuses names that are not one component, and entries past
 * the bounds (the record is left as it was). */
TEST(owned_put_bounds)
{
    struct owned o;
    struct owned_id id;
    char name[32];
    uint32_t i;

    owned_init(&o);
    ow_id(&id, OWNED_REG, 1, 1);
    CHECK_EQ_ERR(owned_put(&o, "a/b", &id, 0, 0), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(owned_put(&o, "..", &id, 0, 0), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(owned_put(&o, ".ferry", &id, 0, 0), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(owned_put(&o, "", &id, 0, 0), FERRY_ERR_BAD_PATH);
    for (i = 0; i < OWNED_MAX_ENTRIES; i++) {
        /* Increasing names: each goes at the end. */
        snprintf(name, sizeof(name), "v%08u", i);
        CHECK_OK(owned_put(&o, name, &id, 0, 0));
    }
    CHECK_EQ_ERR(owned_put(&o, "w", &id, 0, 0), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(o.n, OWNED_MAX_ENTRIES);
    /* A name already there is replaced, even when full. */
    CHECK_OK(owned_put(&o, "v00000007", &id, 3, 0));
    CHECK_EQ_INT(owned_find(&o, "v00000007")->order_sec, 3);
    owned_cleanup(&o);
}

/* Bytes bound the record too: long names fill it before the count. */
TEST(owned_put_bytes)
{
    char name[FSX_NAME_MAX + 1];
    struct owned_id id;
    struct owned o;
    struct buf b;
    uint32_t i;
    int r = 0;

    owned_init(&o);
    ow_id(&id, OWNED_REG, 1, 1);
    memset(name, 'x', FSX_NAME_MAX);
    name[FSX_NAME_MAX] = '\0';
    for (i = 0; r == 0 && i < OWNED_MAX_ENTRIES; i++) {
        snprintf(name, sizeof(name), "%08u", i);
        name[8] = 'x';
        r = owned_put(&o, name, &id, 0, 0);
    }
    CHECK_EQ_ERR(r, FERRY_ERR_TOO_LARGE);
    CHECK(o.n < OWNED_MAX_ENTRIES);
    buf_init(&b, OWNED_MAX_BYTES);
    CHECK_OK(owned_encode(&o, &b));
    CHECK(buf_used(&b) <= OWNED_MAX_BYTES);
    CHECK(buf_used(&b) > OWNED_MAX_BYTES - (FSX_NAME_MAX + 64));
    buf_cleanup(&b);
    owned_cleanup(&o);
}

static void
ow_write(const char *dir, const char *rel, const char *text)
{
    char p[CHECK_PATH_MAX + 64];

    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    check_write_file(p, text, strlen(text), 0);
}

static void
ow_set_mtime(const char *dir, const char *rel, time_t t)
{
    char p[CHECK_PATH_MAX + 64];
    struct timespec ts[2] = { { t, 0 }, { t, 0 } };

    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    CHECK(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) == 0);
}

/* Records name beneath fd as it is now (flags), into o. */
static void
ow_take(struct owned *o, int fd, const char *name, uint8_t flags)
{
    struct owned_id id;

    CHECK_OK(owned_identify(fd, name, flags, &id));
    CHECK_OK(owned_put(o, name, &id, 0, 0));
}

/* What counts as unchanged: any change of type, inode, size, mtime, or
 * of anything beneath a directory, makes an entry the user's. */
TEST(owned_check_changes)
{
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 64];
    struct owned o;
    int fd;

    check_tmpdir(dir);
    CHECK((fd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
    owned_init(&o);
    ow_write(dir, "f", "data");
    snprintf(p, sizeof(p), "%s/d", dir);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof(p), "%s/d/sub", dir);
    CHECK(mkdir(p, 0755) == 0);
    ow_write(dir, "d/sub/x", "deep");
    ow_set_mtime(dir, "d/sub/x", 1000);
    snprintf(p, sizeof(p), "%s/s", dir);
    CHECK(mkdir(p, 0755) == 0);
    ow_write(dir, "mine", "the user's");
    ow_take(&o, fd, "f", 0);
    ow_take(&o, fd, "d", 0);
    ow_take(&o, fd, "s", OWNED_F_STAGING);
    CHECK_EQ_INT(owned_check(&o, fd, "f"), OWNED_YES);
    CHECK_EQ_INT(owned_check(&o, fd, "d"), OWNED_YES);
    CHECK_EQ_INT(owned_check(&o, fd, "s"), OWNED_YES);
    /* Not recorded: never ours, whatever its name. */
    CHECK_EQ_INT(owned_check(&o, fd, "mine"), OWNED_NO);
    CHECK_EQ_INT(owned_check(&o, fd, "absent"), OWNED_GONE);
    /* A staging directory fills: still ours. */
    ow_write(dir, "s/part", "more");
    CHECK_EQ_INT(owned_check(&o, fd, "s"), OWNED_YES);
    /* A file deep in a directory touched, to any time: the user's now;
     * as it was, ours again. */
    ow_set_mtime(dir, "d/sub/x", 2000);
    CHECK_EQ_INT(owned_check(&o, fd, "d"), OWNED_NO);
    ow_set_mtime(dir, "d/sub/x", 1000);
    CHECK_EQ_INT(owned_check(&o, fd, "d"), OWNED_YES);
    /* Moved to another directory of the tree, every mtime kept: only
     * its place differs. */
    ow_set_mtime(dir, "d/sub", 3000);
    ow_set_mtime(dir, "d", 3000);
    ow_take(&o, fd, "d", 0);
    snprintf(p, sizeof(p), "%s/d/sub/x", dir);
    {
        char q[CHECK_PATH_MAX + 64];

        snprintf(q, sizeof(q), "%s/d/x", dir);
        CHECK(rename(p, q) == 0);
        ow_set_mtime(dir, "d/sub", 3000);
        ow_set_mtime(dir, "d", 3000);
        CHECK_EQ_INT(owned_check(&o, fd, "d"), OWNED_NO);
        CHECK(rename(q, p) == 0);
        ow_set_mtime(dir, "d/sub", 3000);
        ow_set_mtime(dir, "d", 3000);
        CHECK_EQ_INT(owned_check(&o, fd, "d"), OWNED_YES);
    }
    /* Same size and mtime, another file (a new inode). */
    snprintf(p, sizeof(p), "%s/f", dir);
    {
        struct stat st;
        char q[CHECK_PATH_MAX + 64];

        CHECK(stat(p, &st) == 0);
        snprintf(q, sizeof(q), "%s/f2", dir);
        CHECK(rename(p, q) == 0);
        ow_write(dir, "f", "data");
        {
            struct timespec ts[2] = { st.st_mtim, st.st_mtim };

            CHECK(utimensat(AT_FDCWD, p, ts, 0) == 0);
        }
        CHECK_EQ_INT(owned_check(&o, fd, "f"), OWNED_NO);
        CHECK(unlink(p) == 0);
        CHECK(rename(q, p) == 0);
        CHECK_EQ_INT(owned_check(&o, fd, "f"), OWNED_YES);
    }
    /* Its content changed (size). */
    ow_write(dir, "f", "other data");
    CHECK_EQ_INT(owned_check(&o, fd, "f"), OWNED_NO);
    /* An entry added beneath a directory. */
    ow_write(dir, "d/new", "");
    CHECK_EQ_INT(owned_check(&o, fd, "d"), OWNED_NO);
    /* Replaced by another type. */
    snprintf(p, sizeof(p), "%s/s", dir);
    check_rmtree(p);
    ow_write(dir, "s", "a file");
    CHECK_EQ_INT(owned_check(&o, fd, "s"), OWNED_NO);
    CHECK(unlink(p) == 0);
    CHECK_EQ_INT(owned_check(&o, fd, "s"), OWNED_GONE);
    owned_cleanup(&o);
    close(fd);
    check_rmtree(dir);
}

/* A directory is walked OWNED_MAX_DEPTH levels deep at most, itself the
 * first (a fd a level): one deeper cannot be identified, so is never
 * ferry's. */
TEST(owned_depth)
{
    char dir[CHECK_PATH_MAX];
    struct owned_id id;
    int fd, at, next, i;

    check_tmpdir(dir);
    CHECK((fd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
    CHECK(mkdirat(fd, "deep", 0755) == 0);
    CHECK((at = openat(fd, "deep", O_RDONLY | O_DIRECTORY)) >= 0);
    for (i = 1; i < OWNED_MAX_DEPTH; i++) {
        CHECK(mkdirat(at, "d", 0755) == 0);
        CHECK((next = openat(at, "d", O_RDONLY | O_DIRECTORY)) >= 0);
        close(at);
        at = next;
    }
    CHECK_OK(owned_identify(fd, "deep", 0, &id));
    CHECK_EQ_U64(id.count, OWNED_MAX_DEPTH - 1);
    CHECK(mkdirat(at, "d", 0755) == 0);
    close(at);
    CHECK_EQ_ERR(owned_identify(fd, "deep", 0, &id), FERRY_ERR_TOO_LARGE);
    close(fd);
    check_rmtree(dir);
}

/* The record on disk: saved atomically with the marker, read back; one
 * that is not a private file of this user, or does not decode, counts as
 * empty (nothing is ferry's) and says so; a .ferry that is a link is
 * refused. */
TEST(owned_file)
{
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 64], q[CHECK_PATH_MAX + 64];
    struct owned o;
    struct stat st;
    int fd;

    check_tmpdir(dir);
    CHECK((fd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
    ow_write(dir, "f", "data");
    /* Without create and without .ferry: empty, nothing made. */
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 0));
    CHECK_EQ_U64(o.n, 0);
    CHECK_OK(owned_save(&o));
    owned_cleanup(&o);
    snprintf(p, sizeof(p), "%s/.ferry", dir);
    CHECK(lstat(p, &st) != 0);
    /* Made, recorded, saved. */
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 1));
    ow_take(&o, fd, "f", 0);
    CHECK_OK(owned_save(&o));
    owned_cleanup(&o);
    snprintf(p, sizeof(p), "%s/.ferry/owned", dir);
    CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
    CHECK_EQ_U64(st.st_mode & 0777, 0600);
    snprintf(q, sizeof(q), "%s/.ferry/" DEST_MARKER, dir);
    CHECK(lstat(q, &st) == 0);
    snprintf(q, sizeof(q), "%s/.ferry/owned.tmp", dir);
    CHECK(lstat(q, &st) != 0);
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 0));
    CHECK(!o.damaged);
    CHECK_EQ_INT(owned_check(&o, fd, "f"), OWNED_YES);
    owned_cleanup(&o);
    /* Writable by others: not trusted. */
    CHECK(chmod(p, 0622) == 0);
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 0));
    CHECK(o.damaged);
    CHECK_EQ_U64(o.n, 0);
    CHECK_EQ_INT(owned_check(&o, fd, "f"), OWNED_NO);
    owned_cleanup(&o);
    CHECK(chmod(p, 0600) == 0);
    /* Truncated on disk. */
    CHECK(truncate(p, 20) == 0);
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 0));
    CHECK(o.damaged);
    CHECK_EQ_U64(o.n, 0);
    owned_cleanup(&o);
    /* A link in its place, and a FIFO: never followed, never hang. */
    CHECK(unlink(p) == 0);
    snprintf(q, sizeof(q), "%s/f", dir);
    CHECK(symlink(q, p) == 0);
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 0));
    CHECK(o.damaged);
    owned_cleanup(&o);
    CHECK(unlink(p) == 0);
    CHECK(mkfifo(p, 0600) == 0);
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 0));
    CHECK(o.damaged);
    /* Saving over it replaces it with a record. */
    ow_take(&o, fd, "f", 0);
    CHECK_OK(owned_save(&o));
    owned_cleanup(&o);
    CHECK(lstat(p, &st) == 0 && S_ISREG(st.st_mode));
    /* Emptied: the record goes. */
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 0));
    CHECK_EQ_U64(o.n, 1);
    owned_drop(&o, "f");
    CHECK_OK(owned_save(&o));
    owned_cleanup(&o);
    CHECK(lstat(p, &st) != 0 && errno == ENOENT);
    /* A .ferry that is a link to elsewhere is refused. */
    snprintf(p, sizeof(p), "%s/.ferry", dir);
    check_rmtree(p);
    snprintf(q, sizeof(q), "%s/elsewhere", dir);
    CHECK(mkdir(q, 0700) == 0);
    CHECK(symlink(q, p) == 0);
    owned_init(&o);
    CHECK_EQ_ERR(owned_open(&o, fd, 1), FERRY_ERR_STATE);
    owned_cleanup(&o);
    close(fd);
    check_rmtree(dir);
}

/* A transfer's tidying and a clean keep the record, and its marker (so a
 * scan of the tree still skips .ferry); the unfinished files go. */
TEST(owned_kept_by_clean)
{
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 64];
    struct partial_info *v = NULL;
    struct owned o;
    struct stat st;
    size_t n = 0;
    int fd;

    check_tmpdir(dir);
    CHECK((fd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
    ow_write(dir, "f", "data");
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 1));
    ow_take(&o, fd, "f", 0);
    CHECK_OK(owned_save(&o));
    owned_cleanup(&o);
    snprintf(p, sizeof(p), "%s/.ferry/part", dir);
    CHECK(mkdir(p, 0700) == 0);
    CHECK_OK(dest_state_list(dir, 1, &v, &n));
    CHECK_EQ_U64(n, 0);
    partial_list_free(v, n);
    snprintf(p, sizeof(p), "%s/.ferry/part", dir);
    CHECK(lstat(p, &st) != 0);
    snprintf(p, sizeof(p), "%s/.ferry/owned", dir);
    CHECK(lstat(p, &st) == 0);
    snprintf(p, sizeof(p), "%s/.ferry/" DEST_MARKER, dir);
    CHECK(lstat(p, &st) == 0);
    owned_init(&o);
    CHECK_OK(owned_open(&o, fd, 0));
    CHECK_EQ_INT(owned_check(&o, fd, "f"), OWNED_YES);
    owned_cleanup(&o);
    /* status: no unfinished file, and no complaint. */
    v = (struct partial_info *)1;
    n = 99;
    CHECK_OK(dest_state_list(dir, 0, &v, &n));
    CHECK_EQ_U64(n, 0);
    partial_list_free(v, n);
    /* Anything else there still stops a clean. */
    ow_write(dir, ".ferry/other", "x");
    CHECK_EQ_ERR(dest_state_list(dir, 1, &v, &n), -ENOTEMPTY);
    close(fd);
    check_rmtree(dir);
}
