/*
 * Tests for engine/dest_write.c, the one writer of a destination: files
 * staged in a scratch staging directory, committed into a scratch root.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/fsx.h"
#include "../../engine/dest_write.h"
#include "check.h"

struct scratch {
    char root[CHECK_PATH_MAX];
    int rootfd, stagefd;
};

/* What the callback was told, in order. */
struct told {
    int n;
    char path[8][32];
    int failed[8];
};

/* A scratch root with its staging directory, and a writer of them. */
static void
scratch_new(struct scratch *s, struct dest_writer *w, struct told *t)
{
    if (t != NULL)
        memset(t, 0, sizeof(*t));
    check_tmpdir(s->root);
    CHECK((s->rootfd = open(s->root, O_RDONLY | O_DIRECTORY)) >= 0);
    CHECK_EQ_INT(mkdirat(s->rootfd, "stage", 0700), 0);
    CHECK((s->stagefd = openat(s->rootfd, "stage", O_RDONLY |
        O_DIRECTORY)) >= 0);
    dest_writer_init(w, s->rootfd, s->stagefd);
}

static void
scratch_free(struct scratch *s)
{
    close(s->stagefd);
    close(s->rootfd);
    check_rmtree(s->root);
}

static int
told_fn(void *ctx, struct dest_write_file *f)
{
    struct told *t = ctx;

    if (t->n < 8) {
        snprintf(t->path[t->n], sizeof(t->path[0]), "%s", f->path);
        t->failed[t->n] = f->failed;
    }
    t->n++;
    return 0;
}

/* A file staged as name in the staging directory, sealed, and handed to
 * the writer for path. */
static void
stage_one(struct scratch *s, struct dest_writer *w, const char *name,
    const char *path, const char *data)
{
    struct dest_write_file f;
    int fd;

    CHECK((fd = openat(s->stagefd, name, O_WRONLY | O_CREAT | O_EXCL,
        0600)) >= 0);
    CHECK_OK(fsx_write_all(fd, data, strlen(data)));
    CHECK_OK(dest_write_seal(fd, 0640, 1000000000, 5));
    close(fd);
    memset(&f, 0, sizeof(f));
    f.name = strdup(name);
    f.path = strdup(path);
    f.size = strlen(data);
    CHECK_OK(dest_writer_stage(w, &f));
}

static void
check_file(struct scratch *s, const char *rel, const char *want)
{
    char got[64];
    struct stat st;
    ssize_t n;
    int fd;

    CHECK((fd = openat(s->rootfd, rel, O_RDONLY)) >= 0);
    n = read(fd, got, sizeof(got) - 1);
    CHECK(n >= 0);
    got[n] = '\0';
    CHECK_EQ_STR(got, want);
    CHECK_EQ_INT(fstat(fd, &st), 0);
    CHECK_EQ_INT(st.st_mode & 07777, 0640);
    CHECK_EQ_INT(st.st_mtim.tv_sec, 1000000000);
    CHECK_EQ_INT(st.st_mtim.tv_nsec, 5);
    close(fd);
}

/* A commit puts every staged file in place (parents made, sealed mode and
 * mtime kept), tells each in order, and sets directories' metadata last;
 * a file that cannot be put in place is told with why, stays staged, and
 * the others go in. */
TEST(dest_write_commit)
{
    struct scratch s;
    struct dest_writer w;
    struct dest_write_meta m;
    struct told t;
    struct stat st;
    int fd;

    scratch_new(&s, &w, &t);
    stage_one(&s, &w, "1", "a/b", "alpha");
    /* "x" is a file: nothing can go beneath it. */
    CHECK((fd = openat(s.rootfd, "x", O_WRONLY | O_CREAT, 0600)) >= 0);
    close(fd);
    stage_one(&s, &w, "2", "x/y", "bravo");
    stage_one(&s, &w, "3", "c", "charlie");
    memset(&m, 0, sizeof(m));
    m.path = strdup("a");
    m.mode = 0555;
    m.mtime_sec = 2000000000;
    CHECK_OK(dest_writer_dir(&w, &m));
    CHECK_EQ_INT(dest_writer_full(&w), 0);
    CHECK_OK(dest_writer_commit(&w, 1, told_fn, &t));
    CHECK_EQ_INT(t.n, 3);
    CHECK_EQ_STR(t.path[0], "a/b");
    CHECK_EQ_STR(t.path[1], "x/y");
    CHECK_EQ_STR(t.path[2], "c");
    CHECK_EQ_INT(t.failed[0], 0);
    CHECK(t.failed[1] != 0);
    CHECK_EQ_INT(t.failed[2], 0);
    check_file(&s, "a/b", "alpha");
    check_file(&s, "c", "charlie");
    CHECK_EQ_INT(fstatat(s.stagefd, "2", &st, 0), 0);
    CHECK_EQ_INT(fstatat(s.stagefd, "1", &st, 0), -1);
    CHECK_EQ_INT(fstatat(s.rootfd, "a", &st, 0), 0);
    CHECK_EQ_INT(st.st_mode & 07777, 0555);
    CHECK_EQ_INT(st.st_mtim.tv_sec, 2000000000);
    CHECK_EQ_U64(w.batch.nfiles, 0);
    CHECK_EQ_U64(w.batch.ndirs, 0);
    /* Nothing staged: nothing to tell. */
    CHECK_OK(dest_writer_commit(&w, 0, told_fn, &t));
    CHECK_EQ_INT(t.n, 3);
    CHECK_EQ_INT(fchmodat(s.rootfd, "a", 0755, 0), 0);
    dest_writer_cleanup(&w);
    scratch_free(&s);
}

/* A batch is full at DEST_WRITE_BATCH_FILES entries, directories
 * included, or at DEST_WRITE_BATCH_BYTES. */
TEST(dest_write_batch_limits)
{
    struct scratch s;
    struct dest_writer w;
    struct dest_write_file f;
    struct dest_write_meta m;
    unsigned i;

    scratch_new(&s, &w, NULL);
    for (i = 0; i + 1 < DEST_WRITE_BATCH_FILES; i++) {
        memset(&f, 0, sizeof(f));
        f.path = strdup("f");
        CHECK_OK(dest_writer_stage(&w, &f));
    }
    CHECK_EQ_INT(dest_writer_full(&w), 0);
    memset(&m, 0, sizeof(m));
    m.path = strdup("d");
    CHECK_OK(dest_writer_dir(&w, &m));
    CHECK_EQ_INT(dest_writer_full(&w), 1);
    dest_writer_cleanup(&w);
    dest_writer_init(&w, s.rootfd, s.stagefd);
    memset(&f, 0, sizeof(f));
    f.path = strdup("big");
    f.size = DEST_WRITE_BATCH_BYTES - 1;
    CHECK_OK(dest_writer_stage(&w, &f));
    CHECK_EQ_INT(dest_writer_full(&w), 0);
    memset(&f, 0, sizeof(f));
    f.path = strdup("one");
    f.size = 1;
    CHECK_OK(dest_writer_stage(&w, &f));
    CHECK_EQ_INT(dest_writer_full(&w), 1);
    dest_writer_cleanup(&w);
    scratch_free(&s);
}

static void
put_one(struct dest_writer *w, const char *name, const char *path,
    const char *data, int want)
{
    struct dest_write_file f;
    int r;

    memset(&f, 0, sizeof(f));
    f.name = strdup(name);
    f.path = strdup(path);
    f.size = strlen(data);
    r = dest_writer_put(w, &f, data, 0640, 1000000000, 5);
    CHECK_EQ_ERR(r, want);
    if (r != 0) {
        free(f.path);
        free(f.name);
    }
}

/* Small files are written by the thread and committed behind; the
 * callbacks run when the owner asks. A file the thread cannot write
 * stops it: that error and path are what the owner is told from then
 * on, the files after it are not put in place, and nothing more is
 * taken. A file too big for the ring is refused. */
TEST(dest_write_behind)
{
    static char big[DEST_WRITE_BEHIND_MAX + 2];
    struct scratch s;
    struct dest_writer w;
    struct dest_write_file f;
    const char *failed;
    struct told t;
    struct stat st;
    int fd;

    scratch_new(&s, &w, &t);
    memset(big, 'z', sizeof(big) - 1);
    memset(&f, 0, sizeof(f));
    f.name = "big";
    f.path = "big";
    f.size = DEST_WRITE_BEHIND_MAX + 1;
    CHECK_EQ_ERR(dest_writer_put(&w, &f, big, 0640, 0, 0),
        FERRY_ERR_TOO_LARGE);
    put_one(&w, "1", "d/a", "alpha", 0);
    put_one(&w, "2", "b", "bravo", 0);
    CHECK_OK(dest_writer_commit(&w, 1, told_fn, &t));
    CHECK_OK(dest_writer_poll(&w, 1, &failed));
    CHECK_EQ_INT(dest_writer_pending(&w), 0);
    CHECK_EQ_INT(t.n, 2);
    CHECK_EQ_STR(t.path[0], "d/a");
    CHECK_EQ_INT(t.failed[0], 0);
    check_file(&s, "d/a", "alpha");
    check_file(&s, "b", "bravo");

    /* The next staging name is taken. */
    CHECK((fd = openat(s.stagefd, "3", O_WRONLY | O_CREAT, 0600)) >= 0);
    close(fd);
    put_one(&w, "3", "c", "charlie", 0);
    CHECK_EQ_ERR(dest_writer_poll(&w, 1, &failed), -EEXIST);
    CHECK(failed != NULL);
    CHECK_EQ_STR(failed, "c");
    put_one(&w, "4", "e", "echo", -EEXIST);
    CHECK_EQ_ERR(dest_writer_commit(&w, 1, told_fn, &t), -EEXIST);
    CHECK_EQ_INT(t.n, 2);
    CHECK_EQ_INT(fstatat(s.rootfd, "c", &st, 0), -1);
    dest_writer_cleanup(&w);
    scratch_free(&s);
}

/* One file of a set of volumes: committed under its name, its temporary
 * name gone; a rename that cannot be done is an error, and the
 * temporary file stays for the caller to remove. */
TEST(dest_write_one)
{
    struct scratch s;
    struct dest_writer w;
    struct stat st;
    int fd;

    scratch_new(&s, &w, NULL);
    CHECK((fd = openat(s.rootfd, ".v.tmp", O_WRONLY | O_CREAT | O_EXCL,
        0644)) >= 0);
    CHECK_OK(fsx_write_all(fd, "volume", 6));
    CHECK_OK(dest_write_one(s.rootfd, fd, ".v.tmp", "v"));
    CHECK_EQ_INT(fstatat(s.rootfd, "v", &st, 0), 0);
    CHECK_EQ_U64(st.st_size, 6);
    CHECK_EQ_INT(fstatat(s.rootfd, ".v.tmp", &st, 0), -1);
    /* A directory that is not empty holds the name. */
    CHECK_EQ_INT(mkdirat(s.rootfd, "d", 0700), 0);
    CHECK_EQ_INT(mkdirat(s.rootfd, "d/e", 0700), 0);
    CHECK((fd = openat(s.rootfd, ".d.tmp", O_WRONLY | O_CREAT | O_EXCL,
        0644)) >= 0);
    CHECK_FAILS(dest_write_one(s.rootfd, fd, ".d.tmp", "d"));
    CHECK_EQ_INT(fstatat(s.rootfd, ".d.tmp", &st, 0), 0);
    dest_writer_cleanup(&w);
    scratch_free(&s);
}
