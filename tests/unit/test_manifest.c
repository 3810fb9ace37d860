/*
 * Tests for engine/manifest.c: scanning source trees built in a scratch
 * directory. The order of entries, the trailing-slash rule and what
 * becomes a notice instead of an entry are what the receiver relies on.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../engine/manifest.h"
#include "../../engine/dest.h"
#include "../../proto/msg.h"
#include "check.h"

/* Room for a scratch path and a few components. */
#define MPATH (CHECK_PATH_MAX + 256)

struct tree {
    char dir[CHECK_PATH_MAX];
};

/* Entry id's path (one of a few buffers, so two fit in one check). */
static const char *
rel_at(const struct manifest *m, size_t id)
{
    static char buf[4][MANIFEST_REL_MAX];
    static unsigned next;

    return manifest_rel(m, id, buf[next++ % 4]);
}

/* Makes rel (a directory if it ends in '/', else a file of len bytes)
 * beneath t. */
static void
tree_add(const struct tree *t, const char *rel, size_t len)
{
    char path[MPATH];
    size_t n = strlen(rel);

    snprintf(path, sizeof(path), "%s/%s", t->dir, rel);
    if (n > 0 && rel[n - 1] == '/')
        CHECK_EQ_INT(mkdir(path, 0755), 0);
    else
        check_write_file(path, NULL, len, (unsigned)n);
}

static void
tree_link(const struct tree *t, const char *rel, const char *target)
{
    char path[MPATH];

    snprintf(path, sizeof(path), "%s/%s", t->dir, rel);
    CHECK_EQ_INT(symlink(target, path), 0);
}

/*
 *  src/
 *    a/x            a file in a directory whose name sorts before "a.txt"
 *    a.txt          5 bytes, mode 0600
 *    b/c/d          nested, 3 bytes
 *    dirlink -> b   a symlink to a directory: not followed
 *    link -> a.txt
 *    z/             empty
 */
static void
tree_new(struct tree *t)
{
    char path[MPATH];

    check_tmpdir(t->dir);
    tree_add(t, "src/", 0);
    tree_add(t, "src/a/", 0);
    tree_add(t, "src/a/x", 10);
    tree_add(t, "src/a.txt", 5);
    snprintf(path, sizeof(path), "%s/src/a.txt", t->dir);
    CHECK_EQ_INT(chmod(path, 0600), 0);
    tree_add(t, "src/b/", 0);
    tree_add(t, "src/b/c/", 0);
    tree_add(t, "src/b/c/d", 3);
    tree_link(t, "src/dirlink", "b");
    tree_link(t, "src/link", "a.txt");
    tree_add(t, "src/z/", 0);
}

/* Scans t's rel (with the trailing slash as given). */
static void
scan(const struct tree *t, struct manifest *m, const char *rel)
{
    char path[MPATH];

    snprintf(path, sizeof(path), "%s/%s", t->dir, rel);
    CHECK_OK(manifest_scan(m, path));
}

/* Checks that m's wire paths are exactly want, in order (NULL-ended). */
static void
check_rels(const struct manifest *m, const char *const *want)
{
    size_t i;

    for (i = 0; want[i] != NULL; i++) {
        check_note("entry %zu", i);
        CHECK(i < m->n);
        CHECK_EQ_STR(rel_at(m, i), want[i]);
    }
    check_note_clear();
    CHECK_EQ_U64(m->n, i);
}

/* Where the sender reads e (one buffer, valid until the next call). */
static size_t
id_of(const struct manifest *m, const struct mentry *e)
{
    size_t i;

    for (i = 0; i < m->n && manifest_entry(m, i) != e; i++)
        ;
    CHECK(i < m->n);
    return i;
}

static const char *
target_of(const struct manifest *m, const struct mentry *e)
{
    return manifest_target(m, id_of(m, e));
}

static const char *
local_of(const struct manifest *m, const struct mentry *e)
{
    static char buf[MANIFEST_LOCAL_MAX];

    CHECK_OK(manifest_local(m, id_of(m, e), buf, sizeof(buf)));
    return buf;
}

static const struct mentry *
find(const struct manifest *m, const char *rel)
{
    size_t i;

    for (i = 0; i < m->n; i++)
        if (strcmp(rel_at(m, i), rel) == 0)
            return manifest_entry(m, i);
    check_fail(__FILE__, __LINE__, "no entry %s", rel);
}

/* "src" sends the directory itself, depth first, each directory's names
 * sorted bytewise and each directory before its contents. */
TEST(manifest_dir_form)
{
    static const char *const want[] = {
        "src", "src/a", "src/a/x", "src/a.txt", "src/b", "src/b/c",
        "src/b/c/d", "src/dirlink", "src/link", "src/z", NULL,
    };
    char local[MPATH];
    const struct mentry *e;
    struct manifest m;
    struct tree t;

    tree_new(&t);
    manifest_init(&m);
    scan(&t, &m, "src");
    check_rels(&m, want);
    CHECK_EQ_U64(m.ntop, 1);
    CHECK_EQ_INT(m.contents, 0);
    CHECK_EQ_U64(manifest_notices(&m), 0);
    CHECK_EQ_U64(m.files, 3);
    CHECK_EQ_U64(m.bytes, 10 + 5 + 3);
    e = find(&m, "src");
    CHECK_EQ_INT(e->kind, ENTRY_DIR);
    CHECK_EQ_U64(e->size, 0);
    CHECK(target_of(&m, e) == NULL);
    e = find(&m, "src/a.txt");
    CHECK_EQ_INT(e->kind, ENTRY_FILE);
    CHECK_EQ_U64(e->size, 5);
    CHECK_EQ_INT(e->mode, 0600);
    CHECK(e->mtime_sec > 0);
    CHECK(e->mtime_nsec < 1000000000u);
    snprintf(local, sizeof(local), "%s/src/a.txt", t.dir);
    CHECK_EQ_STR(local_of(&m, e), local);
    /* Symlinks are entries with their target, never followed. */
    e = find(&m, "src/link");
    CHECK_EQ_INT(e->kind, ENTRY_SYMLINK);
    CHECK_EQ_STR(target_of(&m, e), "a.txt");
    CHECK_EQ_U64(e->size, 0);
    e = find(&m, "src/dirlink");
    CHECK_EQ_INT(e->kind, ENTRY_SYMLINK);
    CHECK_EQ_STR(target_of(&m, e), "b");
    CHECK_EQ_INT(manifest_single_file(&m), 0);
    manifest_cleanup(&m);
    CHECK(m.ents.dir == NULL);
    CHECK_EQ_U64(m.n, 0);
    manifest_cleanup(&m);
    check_rmtree(t.dir);
}

/* "src/" sends what src holds, under their own names. */
TEST(manifest_contents_form)
{
    static const char *const want[] = {
        "a", "a/x", "a.txt", "b", "b/c", "b/c/d", "dirlink", "link", "z",
        NULL,
    };
    static const char *const forms[] = { "src/", "src//", "src/." };
    char local[MPATH];
    struct manifest m;
    struct tree t;
    size_t i;

    tree_new(&t);
    for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        check_note("%s", forms[i]);
        manifest_init(&m);
        scan(&t, &m, forms[i]);
        check_rels(&m, want);
        CHECK_EQ_INT(m.contents, 1);
        CHECK_EQ_U64(m.ntop, 1);
        snprintf(local, sizeof(local), "%s/src/b/c/d", t.dir);
        CHECK_EQ_STR(local_of(&m, find(&m, "b/c/d")), local);
        CHECK_EQ_INT(manifest_single_file(&m), 0);
        manifest_cleanup(&m);
    }
    /* An empty directory's contents: nothing, but still one top. */
    manifest_init(&m);
    scan(&t, &m, "src/z/");
    CHECK_EQ_U64(m.n, 0);
    CHECK_EQ_U64(m.ntop, 1);
    CHECK_EQ_U64(manifest_notices(&m), 0);
    manifest_cleanup(&m);
    check_rmtree(t.dir);
}

TEST(manifest_source_rule)
{
    static const struct {
        const char *src, *local;
        int contents;
    } cases[] = {
        { "dir", "dir", 0 },
        { "dir/", "dir", 1 },
        { "dir///", "dir", 1 },
        { "dir/.", "dir", 1 },
        { "a/b", "a/b", 0 },
        { "a/b/", "a/b", 1 },
        { ".", ".", 1 },
        { "./", ".", 1 },
        { "..", "..", 1 },
        { "x/..", "x/..", 1 },
        { "f.txt", "f.txt", 0 },
    };
    char *local;
    int contents;
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("%s", cases[i].src);
        CHECK_OK(manifest_source(cases[i].src, &local, &contents));
        CHECK_EQ_STR(local, cases[i].local);
        CHECK_EQ_INT(contents, cases[i].contents);
        xfree(local);
    }
}

/* Problems become notices and the scan goes on. */
TEST(manifest_notices)
{
    char path[MPATH], local[MPATH];
    struct manifest m;
    struct tree t;

    tree_new(&t);
    snprintf(path, sizeof(path), "%s/src/fifo", t.dir);
    CHECK_EQ_INT(mkfifo(path, 0644), 0);
    manifest_init(&m);
    /* A missing source: a notice with the errno, no entry. */
    scan(&t, &m, "missing");
    CHECK_EQ_U64(m.n, 0);
    CHECK_EQ_U64(m.ntop, 0);
    CHECK_EQ_U64(manifest_notices(&m), 1);
    CHECK_EQ_INT(manifest_notice_at(&m, 0)->code, -ENOENT);
    snprintf(local, sizeof(local), "%s/missing", t.dir);
    CHECK_EQ_STR(manifest_notice_at(&m, 0)->path, local);
    CHECK(manifest_notice_at(&m, 0)->text[0] != '\0');
    /* A fifo is skipped with a warning (code 0); the rest is sent. */
    scan(&t, &m, "src/");
    CHECK_EQ_U64(manifest_notices(&m), 2);
    CHECK_EQ_INT(manifest_notice_at(&m, 1)->code, 0);
    CHECK_EQ_STR(manifest_notice_at(&m, 1)->path, path);
    CHECK(manifest_notice_at(&m, 1)->text[0] != '\0');
    CHECK_EQ_U64(m.n, 9);
    CHECK_EQ_U64(m.ntop, 1);
    /* A fifo named as a source is a notice too. */
    scan(&t, &m, "src/fifo");
    CHECK_EQ_U64(manifest_notices(&m), 3);
    CHECK_EQ_INT(manifest_notice_at(&m, 2)->code, 0);
    CHECK_EQ_U64(m.n, 9);
    CHECK_EQ_U64(m.ntop, 1);
    manifest_cleanup(&m);
    CHECK(m.notices.dir == NULL);
    CHECK_EQ_U64(manifest_notices(&m), 0);
    check_rmtree(t.dir);
}

/* A destination's own state (.ferry holding FERRY-STATE) is not data
 * when the destination is sent on as "dir/"; a .ferry without the marker
 * is, and so is one further down. */
TEST(manifest_state_dir)
{
    static const char *const skipped[] = {
        "file", "sub", "sub/.ferry", "sub/.ferry/FERRY-STATE", NULL,
    };
    static const char *const kept[] = { "file", "sub", "sub/.ferry", NULL };
    static const char *const kept_dir[] = {
        "d", "d/file", "d/sub", "d/sub/.ferry", NULL,
    };
    char path[MPATH];
    struct manifest m;
    struct tree t;

    check_tmpdir(t.dir);
    tree_add(&t, "d/", 0);
    tree_add(&t, "d/file", 4);
    tree_add(&t, "d/" DEST_STATE_DIR "/", 0);
    tree_add(&t, "d/" DEST_STATE_DIR "/" DEST_MARKER, 0);
    tree_add(&t, "d/" DEST_STATE_DIR "/part/", 0);
    tree_add(&t, "d/" DEST_STATE_DIR "/part/x", 100);
    tree_add(&t, "d/sub/", 0);
    tree_add(&t, "d/sub/" DEST_STATE_DIR "/", 0);
    tree_add(&t, "d/sub/" DEST_STATE_DIR "/" DEST_MARKER, 0);
    manifest_init(&m);
    scan(&t, &m, "d/");
    check_rels(&m, skipped);
    manifest_cleanup(&m);

    /* Without the marker it is left out all the same (the receiver
     * refuses the name at the top), and so is a file of that name; one
     * beneath the top is data. */
    snprintf(path, sizeof(path), "%s/d/%s/%s", t.dir, DEST_STATE_DIR,
        DEST_MARKER);
    CHECK_EQ_INT(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/d/sub/%s/%s", t.dir, DEST_STATE_DIR,
        DEST_MARKER);
    CHECK_EQ_INT(unlink(path), 0);
    manifest_init(&m);
    scan(&t, &m, "d/");
    check_rels(&m, kept);
    manifest_cleanup(&m);
    snprintf(path, sizeof(path), "%s/d/%s", t.dir, DEST_STATE_DIR);
    check_rmtree(path);
    check_write_file(path, "x", 1, 0);
    manifest_init(&m);
    scan(&t, &m, "d/");
    check_rels(&m, kept);
    manifest_cleanup(&m);
    /* The source's own top, in the form that sends the directory. */
    manifest_init(&m);
    scan(&t, &m, "d");
    check_rels(&m, kept_dir);
    manifest_cleanup(&m);
    check_rmtree(t.dir);
}

/* One file or symlink named by its own source can take a new name. */
TEST(manifest_single_file)
{
    char local[MPATH];
    struct manifest m;
    struct tree t;

    tree_new(&t);
    manifest_init(&m);
    scan(&t, &m, "src/a.txt");
    CHECK_EQ_U64(m.n, 1);
    CHECK_EQ_STR(rel_at(&m, 0), "a.txt");
    CHECK_EQ_U64(m.ntop, 1);
    CHECK_EQ_INT(manifest_single_file(&m), 1);
    CHECK_EQ_ERR(manifest_rename_top(&m, ""), FERRY_ERR_BAD_PATH);
    {
        char longname[PROTO_MAX_PATH + 2];

        memset(longname, 'n', sizeof(longname) - 1);
        longname[PROTO_MAX_PATH + 1] = '\0';
        CHECK_EQ_ERR(manifest_rename_top(&m, longname), FERRY_ERR_BAD_PATH);
    }
    CHECK_OK(manifest_rename_top(&m, "renamed.txt"));
    CHECK_EQ_STR(rel_at(&m, 0), "renamed.txt");
    /* The new name still reads the old file. */
    snprintf(local, sizeof(local), "%s/src/a.txt", t.dir);
    CHECK_EQ_STR(local_of(&m, manifest_entry(&m, 0)), local);
    /* A second source: no longer one file; its entry reads its own. */
    scan(&t, &m, "src/link");
    CHECK_EQ_U64(m.ntop, 2);
    CHECK_EQ_INT(manifest_single_file(&m), 0);
    snprintf(local, sizeof(local), "%s/src/link", t.dir);
    CHECK_EQ_STR(local_of(&m, manifest_entry(&m, 1)), local);
    manifest_cleanup(&m);

    /* A renamed symlink keeps its target. */
    manifest_init(&m);
    scan(&t, &m, "src/link");
    CHECK_EQ_INT(manifest_entry(&m, 0)->kind, ENTRY_SYMLINK);
    CHECK_EQ_INT(manifest_single_file(&m), 1);
    CHECK_OK(manifest_rename_top(&m, "a-much-longer-name-than-before"));
    CHECK_EQ_STR(manifest_target(&m, 0), "a.txt");
    CHECK_EQ_STR(local_of(&m, manifest_entry(&m, 0)), local);
    manifest_cleanup(&m);

    /* A directory, even an empty one, and a "dir/" of one file are not. */
    manifest_init(&m);
    scan(&t, &m, "src/z");
    CHECK_EQ_U64(m.n, 1);
    CHECK_EQ_INT(manifest_single_file(&m), 0);
    CHECK_EQ_ERR(manifest_rename_top(&m, "x"), FERRY_ERR_USAGE);
    manifest_cleanup(&m);
    manifest_init(&m);
    scan(&t, &m, "src/a/");
    CHECK_EQ_U64(m.n, 1);
    CHECK_EQ_STR(rel_at(&m, 0), "x");
    CHECK_EQ_INT(manifest_single_file(&m), 0);
    manifest_cleanup(&m);
    check_rmtree(t.dir);
}

/* Entries keep no local path of their own: each is rebuilt from its
 * source, for every shape of source, and one that cannot be is said. */
TEST(manifest_local_paths)
{
    /* Each form, and the directory its entries' names are under. */
    static const char *const forms[][2] = { { "src", "" },
        { "src/", "src/" }, { "src/b/../b", "src/" },
        { "src/./b/", "src/b/" } };
    char local[MPATH], want[MPATH], small[8], *wd;
    struct manifest m;
    struct hash128 h;
    struct tree t;
    size_t i, k;

    tree_new(&t);
    for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        check_note("%s", forms[i][0]);
        manifest_init(&m);
        scan(&t, &m, forms[i][0]);
        CHECK(m.n > 0);
        for (k = 0; k < m.n; k++) {
            struct stat a, b;

            /* The path read is the scanned entry itself. */
            CHECK_OK(manifest_local(&m, k, local, sizeof(local)));
            snprintf(want, sizeof(want), "%s/%s%s", t.dir, forms[i][1],
                rel_at(&m, k));
            CHECK_EQ_INT(lstat(local, &a), 0);
            CHECK_EQ_INT(lstat(want, &b), 0);
            CHECK_EQ_U64(a.st_ino, b.st_ino);
        }
        /* Too small a buffer is refused, not cut. */
        CHECK_EQ_ERR(manifest_local(&m, 0, small, sizeof(small)),
            -ENAMETOOLONG);
        manifest_cleanup(&m);
    }
    /* A relative source reads relative paths. */
    CHECK((wd = getcwd(NULL, 0)) != NULL);
    CHECK_EQ_INT(chdir(t.dir), 0);
    manifest_init(&m);
    CHECK_OK(manifest_scan(&m, "src/b"));
    CHECK_EQ_STR(local_of(&m, find(&m, "b/c/d")), "src/b/c/d");
    manifest_cleanup(&m);
    CHECK_EQ_INT(chdir(wd), 0);
    free(wd);

    /* Listed entries (the other side's) have no local path. */
    manifest_init(&m);
    CHECK_OK(manifest_add_listed(&m, "x", ENTRY_FILE, 0644, 1, 1, 0));
    CHECK_EQ_ERR(manifest_local(&m, 0, local, sizeof(local)),
        -ENOENT);
    CHECK(manifest_open(&m, 0, O_RDONLY) == -ENOENT);
    CHECK(manifest_target(&m, 0) == NULL);
    /* Hashes are kept only once asked for. */
    memset(&h, 7, sizeof(h));
    manifest_set_hash(&m, 0, &h);
    CHECK(manifest_hash(&m, 0) == NULL);
    CHECK_OK(manifest_want_hashes(&m));
    CHECK(manifest_hash(&m, 0) == NULL);
    manifest_set_hash(&m, 0, &h);
    CHECK(manifest_hash(&m, 0) != NULL);
    CHECK(memcmp(manifest_hash(&m, 0), &h, sizeof(h)) == 0);
    CHECK(manifest_hash(&m, 1) == NULL);
    manifest_cleanup(&m);
    check_rmtree(t.dir);
}

/* A scan stops, with INTERRUPTED, once its stop flag is set: Ctrl-C during
 * a push's scan (which runs while the first connection opens). */
TEST(manifest_scan_stops)
{
    atomic_int stop = 0;
    struct manifest m;
    struct tree t;

    tree_new(&t);
    manifest_init(&m);
    manifest_set_stop(&m, &stop);
    scan(&t, &m, "src");
    CHECK(m.n > 1);
    atomic_store(&stop, 1);
    {
        char path[MPATH];

        snprintf(path, sizeof(path), "%s/src/", t.dir);
        CHECK_EQ_ERR(manifest_scan(&m, path), FERRY_ERR_INTERRUPTED);
    }
    manifest_cleanup(&m);
    check_rmtree(t.dir);
}

/* A directory big enough that its names are looked up by several threads
 * (MANIFEST_STAT_AHEAD at a time): every entry comes once, in order, with
 * its own size and kind, across the batches' edges. */
TEST(manifest_big_dir)
{
    char rel[64], want[64];
    struct manifest m;
    struct tree t;
    size_t i, k = 0;
    const unsigned n = 2500;

    check_tmpdir(t.dir);
    tree_add(&t, "src/", 0);
    for (i = 0; i < n; i++) {
        snprintf(rel, sizeof(rel), "src/f%05zu%s", i, i % 500 == 7 ? "/" : "");
        tree_add(&t, rel, i % 13);
        if (i == 1500)
            tree_link(&t, "src/f01500x", "nowhere");
    }
    tree_add(&t, "src/f00007/inner", 4);
    manifest_init(&m);
    scan(&t, &m, "src/");
    for (i = 0; i < n; i++) {
        snprintf(want, sizeof(want), "f%05zu", i);
        check_note("name %zu", i);
        CHECK(k < m.n);
        CHECK_EQ_STR(rel_at(&m, k), want);
        CHECK_EQ_INT(manifest_entry(&m, k)->kind,
            i % 500 == 7 ? ENTRY_DIR : ENTRY_FILE);
        CHECK_EQ_U64(manifest_entry(&m, k)->size, i % 500 == 7 ? 0 : i % 13);
        k++;
        if (i == 7) {
            CHECK_EQ_STR(rel_at(&m, k), "f00007/inner");
            k++;
        }
        if (i == 1500) {
            CHECK_EQ_STR(rel_at(&m, k), "f01500x");
            CHECK_EQ_INT(manifest_entry(&m, k)->kind, ENTRY_SYMLINK);
            k++;
        }
    }
    check_note_clear();
    CHECK_EQ_U64(m.n, k);
    manifest_cleanup(&m);
    check_rmtree(t.dir);
}

struct live_scan {
    struct manifest *m;
    const char *src;
    int err;
};

static void *
live_scan_run(void *arg)
{
    struct live_scan *ls = arg;

    ls->err = manifest_scan(ls->m, ls->src);
    manifest_live_end(ls->m, ls->err);
    return NULL;
}

/* A live manifest read while another thread scans into it (more than one
 * chunk of entries): each entry published is whole, its name and where it
 * is read are right, and once the scan ends every entry is there. */
TEST(manifest_live_reader)
{
    char path[MPATH], local[MANIFEST_LOCAL_MAX], want[MPATH], rel[64];
    struct live_scan ls;
    struct manifest m;
    struct tree t;
    pthread_t th;
    size_t seen = 0, avail, i;
    const unsigned n = 6000;
    int err = 0, live = 1;

    check_tmpdir(t.dir);
    tree_add(&t, "src/", 0);
    for (i = 0; i < n; i++) {
        snprintf(rel, sizeof(rel), "src/d%zu/f%05zu", i / 1000, i);
        if (i % 1000 == 0) {
            snprintf(want, sizeof(want), "src/d%zu/", i / 1000);
            tree_add(&t, want, 0);
        }
        tree_add(&t, rel, i % 7);
    }
    manifest_init(&m);
    manifest_live_begin(&m);
    snprintf(path, sizeof(path), "%s/src/", t.dir);
    ls.m = &m;
    ls.src = path;
    CHECK_EQ_INT(pthread_create(&th, NULL, live_scan_run, &ls), 0);
    while (live) {
        live = manifest_live(&m, &err);
        avail = manifest_avail(&m);
        for (; seen < avail; seen++) {
            const struct mentry *e = manifest_entry(&m, seen);

            CHECK_OK(manifest_local(&m, seen, local, sizeof(local)));
            snprintf(want, sizeof(want), "%s/src/%s", t.dir, rel_at(&m, seen));
            CHECK_EQ_STR(local, want);
            if (e->kind == ENTRY_FILE)
                CHECK_EQ_U64(e->size, (uint64_t)atoi(strrchr(rel_at(&m, seen),
                    'f') + 1) % 7);
        }
    }
    CHECK_EQ_INT(pthread_join(th, NULL), 0);
    /* Past what was published nothing can be read. */
    CHECK_EQ_ERR(manifest_local(&m, m.n, local, sizeof(local)), -ENOENT);
    CHECK_OK(err);
    CHECK_EQ_U64(seen, n + 6);
    CHECK_EQ_U64(manifest_avail(&m), m.n);
    manifest_cleanup(&m);
    check_rmtree(t.dir);
}

/* Lists rels[] (a directory where the name ends in '/', which is left
 * out of its rel) into m. */
static void
list_all(struct manifest *m, const char *const *rels)
{
    char rel[MANIFEST_REL_MAX];
    size_t i, len;

    for (i = 0; rels[i] != NULL; i++) {
        len = strlen(rels[i]);
        snprintf(rel, sizeof(rel), "%s", rels[i]);
        if (rels[i][len - 1] == '/')
            rel[len - 1] = '\0';
        check_note("listing %s", rels[i]);
        CHECK_OK(manifest_add_listed(m, rel, rels[i][len - 1] == '/' ?
            ENTRY_DIR : ENTRY_FILE, 0644, i, 1700000000, (uint32_t)i));
    }
    check_note_clear();
}

/* An entry keeps its last component and its directory's id: the paths
 * come back whole, whether the directory holding an entry came just
 * before it, before a subtree, or never (a listing may leave it out),
 * and a name that merely starts like a directory's is not in it. */
TEST(manifest_listed_paths)
{
    static const char *const rels[] = {
        "d/", "d/a", "d/e/", "d/e/f", "d/e/g/", "d/e/g/h", "d/i",
        "d2/a", "dd", "d/j", "x/y/z", "x/y/w/", "x/y/w/v", "top",
        "d/", "d/k", NULL,
    };
    char want[MANIFEST_REL_MAX];
    struct manifest m;
    size_t i, total = 0;

    manifest_init(&m);
    list_all(&m, rels);
    CHECK_EQ_U64(m.n, 16);
    for (i = 0; rels[i] != NULL; i++) {
        snprintf(want, sizeof(want), "%s", rels[i]);
        if (want[strlen(want) - 1] == '/')
            want[strlen(want) - 1] = '\0';
        total += strlen(want) + 1;
        check_note("entry %zu", i);
        CHECK_EQ_STR(rel_at(&m, i), want);
        CHECK_EQ_U64(manifest_entry(&m, i)->size,
            manifest_entry(&m, i)->kind == ENTRY_FILE ? i : 0);
        CHECK_EQ_U64(manifest_entry(&m, i)->mtime_nsec, i);
        CHECK(manifest_target(&m, i) == NULL);
    }
    check_note_clear();
    /* Only the last components are stored where the directory is known. */
    CHECK(m.names_used < total);
    manifest_cleanup(&m);
}

/* The name store: names fill chunk after chunk (no name split across
 * two), paths up to PROTO_MAX_PATH are kept and rebuilt whole, longer
 * ones refused, and a full store refuses more without harm to what it
 * holds. */
TEST(manifest_name_store)
{
    char rel[MANIFEST_REL_MAX + 1], got[MANIFEST_REL_MAX];
    struct manifest m;
    size_t i, n = 12000;

    manifest_init(&m);
    CHECK_OK(manifest_add_listed(&m, "dir", ENTRY_DIR, 0755, 0, 1, 0));
    for (i = 0; i < n; i++) {
        snprintf(rel, sizeof(rel), "dir/%05zu-a-name-of-some-forty-bytes.bin",
            i);
        CHECK_OK(manifest_add_listed(&m, rel, ENTRY_FILE, 0644, i, 1, 0));
    }
    CHECK(m.names_used > ((size_t)1 << 18));  /* more than one chunk */
    for (i = 0; i < n; i++) {
        snprintf(rel, sizeof(rel), "dir/%05zu-a-name-of-some-forty-bytes.bin",
            i);
        check_note("entry %zu", i);
        CHECK_EQ_STR(manifest_rel(&m, i + 1, got), rel);
    }
    check_note_clear();
    /* The longest path, through its directory, and one byte more. */
    memset(rel, 'n', sizeof(rel));
    memcpy(rel, "dir/", 4);
    rel[PROTO_MAX_PATH] = '\0';
    CHECK_OK(manifest_add_listed(&m, rel, ENTRY_FILE, 0644, 0, 1, 0));
    CHECK_EQ_STR(manifest_rel(&m, m.n - 1, got), rel);
    rel[PROTO_MAX_PATH] = 'n';
    rel[PROTO_MAX_PATH + 1] = '\0';
    CHECK_EQ_ERR(manifest_add_listed(&m, rel, ENTRY_FILE, 0644, 0, 1, 0),
        FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(manifest_add_listed(&m, "", ENTRY_FILE, 0644, 0, 1, 0),
        FERRY_ERR_BAD_PATH);
    manifest_cleanup(&m);

    /* A store of two chunks: full, it refuses, and keeps the rest. */
    manifest_init(&m);
    m.names_max = (size_t)2 << 18;
    for (i = 0;; i++) {
        int r;

        snprintf(rel, sizeof(rel), "%06zu-%s", i,
            "a-top-level-name-that-is-kept-whole-since-it-has-no-directory");
        if ((r = manifest_add_listed(&m, rel, ENTRY_FILE, 0644, 0, 1,
            0)) != 0) {
            CHECK_EQ_ERR(r, FERRY_ERR_TOO_LARGE);
            break;
        }
        CHECK(i < 10000);
    }
    CHECK_EQ_U64(m.n, i);
    CHECK(m.names_used <= m.names_max);
    snprintf(rel, sizeof(rel), "%06zu-%s", i - 1,
        "a-top-level-name-that-is-kept-whole-since-it-has-no-directory");
    CHECK_EQ_STR(manifest_rel(&m, i - 1, got), rel);
    manifest_cleanup(&m);
}

/* Sources that one transfer would put under one top-level name are
 * named, the first pair whose second comes first; a source that sends
 * its contents gives no name. */
TEST(manifest_top_clash)
{
    static const struct {
        const char *srcs[5];
        const char *said;    /* NULL: no clash */
    } cases[] = {
        { { "a/x", "b/x" }, "'a/x' and 'b/x' would both be x in the "
            "destination" },
        { { "x", "a/b/x/" }, NULL },
        { { "a/x/", "b/x/" }, NULL },
        { { "x", "./x/." }, NULL },
        { { "x", "/abs/x" }, "'x' and '/abs/x' would both be x" },
        { { "x", "/abs/x//" }, NULL },
        /* One source written two ways is no clash. */
        { { "a/x", "./a//x", "a/./x" }, NULL },
        { { "a/y", "b/x", "c/y", "d/x" }, "'a/y' and 'c/y'" },
        { { "a/y", "b/x", "c/x", "d/y" }, "'b/x' and 'c/x'" },
        { { "a", "b", ".", ".." }, NULL },
    };
    char msg[512];
    size_t i, n;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("case %zu", i);
        for (n = 0; n < 5 && cases[i].srcs[n] != NULL; n++)
            ;
        CHECK_EQ_INT(manifest_top_clash(cases[i].srcs, n, msg, sizeof(msg)),
            cases[i].said != NULL);
        if (cases[i].said != NULL)
            CHECK(strstr(msg, cases[i].said) != NULL);
        else
            CHECK_EQ_STR(msg, "");
    }
    check_note_clear();
}
