/* Tests for common/fsx.c: the path check and the no-follow directory
 * walks, in a fresh directory under /tmp. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "check.h"

TEST(fsx_path_check)
{
    static const struct {
        const char *p;
        size_t len;
        int ok;
    } cases[] = {
        { LIT("a"), 1 },
        { LIT("a/b/c"), 1 },
        { LIT(".a"), 1 },
        { LIT("a."), 1 },
        { LIT("..."), 1 },
        { LIT("..a/b.."), 1 },
        { LIT("a b/\xff\n"), 1 },
        { LIT(""), 0 },
        { LIT("/"), 0 },
        { LIT("/a"), 0 },
        { LIT("a/"), 0 },
        { LIT("a//b"), 0 },
        { LIT("."), 0 },
        { LIT(".."), 0 },
        { LIT("./a"), 0 },
        { LIT("../a"), 0 },
        { LIT("a/./b"), 0 },
        { LIT("a/../b"), 0 },
        { LIT("a/."), 0 },
        { LIT("a/.."), 0 },
        { LIT("a\0b"), 0 },
        { LIT("\0"), 0 },
    };
    char big[FSX_PATH_MAX + 2];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("case %zu", i);
        CHECK_EQ_ERR(fsx_path_check(cases[i].p, cases[i].len),
            cases[i].ok ? 0 : FERRY_ERR_BAD_PATH);
    }
    check_note_clear();
    /* The length given counts, not a NUL: a shorter view is checked. */
    CHECK_OK(fsx_path_check("a/..", 1));
    memset(big, 'n', sizeof(big));
    CHECK_OK(fsx_path_check(big, FSX_NAME_MAX));
    CHECK_EQ_ERR(fsx_path_check(big, FSX_NAME_MAX + 1), FERRY_ERR_BAD_PATH);
    for (i = FSX_NAME_MAX; i < sizeof(big); i += FSX_NAME_MAX + 1)
        big[i] = '/';
    CHECK_OK(fsx_path_check(big, FSX_PATH_MAX));
    CHECK_EQ_ERR(fsx_path_check(big, FSX_PATH_MAX + 1), FERRY_ERR_BAD_PATH);
}

/* A scratch directory under /tmp, removed with everything in it at the
 * end of the case. */
struct scratch {
    char path[64];
    int fd;
};

static void
scratch_new(struct scratch *s)
{
    snprintf(s->path, sizeof(s->path), "/tmp/ferry-test-XXXXXX");
    CHECK(mkdtemp(s->path) != NULL);
    CHECK((s->fd = open(s->path, O_RDONLY | O_DIRECTORY)) >= 0);
}

static int
scratch_rm(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void
scratch_free(struct scratch *s)
{
    close(s->fd);
    CHECK_EQ_INT(nftw(s->path, scratch_rm, 16, FTW_DEPTH | FTW_PHYS), 0);
}

/* 1 if rel names a directory (not a link to one) beneath s. */
static int
is_dir(const struct scratch *s, const char *rel)
{
    struct stat st;

    return fstatat(s->fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode);
}

/* 1 if fd is the directory rel beneath s. */
static int
same_dir(const struct scratch *s, int fd, const char *rel)
{
    struct stat a, b;

    return fstat(fd, &a) == 0 &&
        fstatat(s->fd, rel, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Both ways of walking a path beneath a root: openat2 and the walk. */
static void fsx_open_dir_cases(void);
static void fsx_open_dir_symlink_cases(void);

TEST(fsx_open_dir)
{
    fsx_use_openat2(1);
    fsx_open_dir_cases();
    fsx_use_openat2(0);
    fsx_open_dir_cases();
    fsx_use_openat2(1);
}

static void
fsx_open_dir_cases(void)
{
    struct scratch s;
    int fd;

    scratch_new(&s);
    CHECK_EQ_ERR(fsx_open_dir(s.fd, "a/b/c", 0, &fd), -ENOENT);
    CHECK_EQ_INT(fd, -1);
    CHECK(!is_dir(&s, "a"));
    CHECK_OK(fsx_open_dir(s.fd, "a/b/c", 1, &fd));
    CHECK(is_dir(&s, "a/b/c"));
    CHECK(same_dir(&s, fd, "a/b/c"));
    close(fd);
    CHECK_OK(fsx_open_dir(s.fd, "a/b", 0, &fd));
    CHECK(same_dir(&s, fd, "a/b"));
    close(fd);
    /* "" is the root itself, as a new fd. */
    CHECK_OK(fsx_open_dir(s.fd, "", 0, &fd));
    CHECK(fd != s.fd && same_dir(&s, fd, "."));
    close(fd);
    /* A file in the way is not a directory. */
    CHECK((fd = openat(s.fd, "a/f", O_WRONLY | O_CREAT, 0600)) >= 0);
    close(fd);
    CHECK_EQ_ERR(fsx_open_dir(s.fd, "a/f", 1, &fd), -ENOTDIR);
    CHECK_EQ_ERR(fsx_open_dir(s.fd, "a/f/g", 1, &fd), -ENOTDIR);
    /* Paths that fsx_path_check refuses never reach the file system. */
    CHECK_EQ_ERR(fsx_open_dir(s.fd, "..", 0, &fd), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(fsx_open_dir(s.fd, "a/../a", 0, &fd), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(fsx_open_dir(s.fd, "a/..", 1, &fd), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(fsx_open_dir(s.fd, "/tmp", 0, &fd), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(fsx_open_dir(s.fd, "a//b", 1, &fd), FERRY_ERR_BAD_PATH);
    CHECK_EQ_INT(fd, -1);
    scratch_free(&s);
}

/*
 * Checks that a walk was refused at a symlink. The refusal comes back as
 * FERRY_ERR_NOT_DIR (ELOOP from O_NOFOLLOW) or as -ENOTDIR, which Linux
 * reports first when O_DIRECTORY meets a link.
 */
static void
check_refused(int r, const int *fd)
{
    if (r != FERRY_ERR_NOT_DIR && r != -ENOTDIR)
        check_fail(__FILE__, __LINE__, "got %d (%s), want NOT_DIR or "
            "ENOTDIR", r, ferry_errname(r));
    /* Read through a pointer: an int argument could be evaluated before
     * the call that sets it. */
    CHECK_EQ_INT(*fd, -1);
}

TEST(fsx_open_dir_symlink)
{
    fsx_use_openat2(1);
    fsx_open_dir_symlink_cases();
    fsx_use_openat2(0);
    fsx_open_dir_symlink_cases();
    fsx_use_openat2(1);
}

static void
fsx_open_dir_symlink_cases(void)
{
    struct scratch s;
    int fd;

    scratch_new(&s);
    CHECK_OK(fsx_open_dir(s.fd, "real/sub", 1, &fd));
    close(fd);
    CHECK_EQ_INT(symlinkat("real", s.fd, "link"), 0);
    CHECK_EQ_INT(symlinkat("/", s.fd, "up"), 0);
    CHECK_EQ_INT(symlinkat("missing", s.fd, "dangling"), 0);
    /* A link to a directory is refused wherever it is in the path, with
     * or without create, and nothing is made through it. */
    check_refused(fsx_open_dir(s.fd, "link", 0, &fd), &fd);
    check_refused(fsx_open_dir(s.fd, "link/sub", 0, &fd), &fd);
    check_refused(fsx_open_dir(s.fd, "link/new", 1, &fd), &fd);
    CHECK(!is_dir(&s, "real/new"));
    check_refused(fsx_open_dir(s.fd, "up/tmp", 1, &fd), &fd);
    /* A dangling link is not replaced by a new directory either. */
    check_refused(fsx_open_dir(s.fd, "dangling/x", 1, &fd), &fd);
    CHECK(!is_dir(&s, "missing"));
    scratch_free(&s);
}

TEST(fsx_open_parent)
{
    const char *name = "x";
    struct scratch s;
    int fd;

    scratch_new(&s);
    CHECK_OK(fsx_open_parent(s.fd, "a/b/file", 1, &fd, &name));
    CHECK_EQ_STR(name, "file");
    CHECK(is_dir(&s, "a/b"));
    CHECK(same_dir(&s, fd, "a/b"));
    close(fd);
    CHECK_OK(fsx_open_parent(s.fd, "top", 0, &fd, &name));
    CHECK_EQ_STR(name, "top");
    CHECK(same_dir(&s, fd, "."));
    close(fd);
    CHECK_EQ_ERR(fsx_open_parent(s.fd, "no/file", 0, &fd, &name), -ENOENT);
    CHECK(name == NULL);
    CHECK_EQ_INT(symlinkat("a", s.fd, "link"), 0);
    check_refused(fsx_open_parent(s.fd, "link/b/file", 1, &fd, &name), &fd);
    CHECK_EQ_ERR(fsx_open_parent(s.fd, "a/../file", 1, &fd, &name),
        FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(fsx_open_parent(s.fd, "..", 1, &fd, &name),
        FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(fsx_open_parent(s.fd, "a/", 1, &fd, &name),
        FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(fsx_open_parent(s.fd, "", 1, &fd, &name),
        FERRY_ERR_BAD_PATH);
    CHECK_EQ_INT(fd, -1);
    CHECK(name == NULL);
    scratch_free(&s);
}

TEST(fsx_io)
{
    static const char text[] = "0123456789";
    struct scratch s;
    char out[32];
    size_t got;
    int fd;

    scratch_new(&s);
    CHECK((fd = openat(s.fd, "f", O_RDWR | O_CREAT, 0600)) >= 0);
    CHECK_OK(fsx_write_all(fd, text, 10));
    CHECK_OK(fsx_pwrite_all(fd, "AB", 2, 4));
    CHECK_OK(fsx_pread_full(fd, out, sizeof(out), 0, &got));
    CHECK_EQ_U64(got, 10);
    CHECK_EQ_MEM(out, "0123AB6789", 10);
    CHECK_OK(fsx_pread_full(fd, out, 4, 8, &got));
    CHECK_EQ_U64(got, 2);
    CHECK_OK(fsx_pread_full(fd, out, 4, 100, &got));
    CHECK_EQ_U64(got, 0);
    CHECK_OK(fsx_fsync(fd));
    CHECK_OK(fsx_fdatasync(fd));
    close(fd);
    CHECK_EQ_ERR(fsx_write_all(fd, text, 1), -EBADF);
    scratch_free(&s);
}

/* Splits path and compares both halves. */
static void
check_split(const char *path, const char *dir, const char *base)
{
    char *d, *b;

    check_note("split %s", path);
    CHECK_OK(fsx_split(path, &d, &b));
    CHECK_EQ_STR(d, dir);
    CHECK_EQ_STR(b, base);
    xfree(d);
    xfree(b);
    check_note_clear();
}

TEST(fsx_split)
{
    char *d = (char *)"x", *b = (char *)"x";

    check_split("a/b", "a", "b");
    check_split("b", ".", "b");
    check_split("/b", "/", "b");
    check_split("a/b/c/", "a/b", "c");
    check_split("a//b", "a/", "b");
    alloc_fail_at(2);
    CHECK_EQ_ERR(fsx_split("a/b", &d, &b), FERRY_ERR_NOMEM);
    alloc_fail_at(0);
    CHECK(d == NULL && b == NULL);
}

TEST(fsx_mkdir_p)
{
    struct scratch s;
    char path[128];
    int fd;

    scratch_new(&s);
    snprintf(path, sizeof(path), "%s/x/y/z/", s.path);
    CHECK_OK(fsx_mkdir_p(path, 0755));
    CHECK(is_dir(&s, "x/y/z"));
    CHECK_OK(fsx_mkdir_p(path, 0755));
    CHECK((fd = openat(s.fd, "x/file", O_WRONLY | O_CREAT, 0600)) >= 0);
    close(fd);
    snprintf(path, sizeof(path), "%s/x/file", s.path);
    CHECK_EQ_ERR(fsx_mkdir_p(path, 0755), -ENOTDIR);
    snprintf(path, sizeof(path), "%s/x/file/sub", s.path);
    CHECK_EQ_ERR(fsx_mkdir_p(path, 0755), -ENOTDIR);
    scratch_free(&s);
}

/* A pipe grows to FSX_PIPE_BYTES, or to the most pipe-max-size allows
 * (in halves, down to an eighth); anything else is left alone. */
TEST(fsx_pipe_widen)
{
    struct scratch s;
    int p[2], fd, want = FSX_PIPE_BYTES;
    FILE *f;

    if ((f = fopen("/proc/sys/fs/pipe-max-size", "r")) != NULL) {
        int max = 0;

        if (fscanf(f, "%d", &max) == 1)
            while (want > max && want > FSX_PIPE_BYTES / 8)
                want /= 2;
        fclose(f);
    }
    CHECK_EQ_INT(pipe(p), 0);
    CHECK(fcntl(p[0], F_GETPIPE_SZ) < want);
    fsx_pipe_widen(p[1]);
    /* CAP_SYS_RESOURCE may pass pipe-max-size. */
    CHECK(fcntl(p[0], F_GETPIPE_SZ) >= want);
    CHECK(fcntl(p[0], F_GETPIPE_SZ) <= FSX_PIPE_BYTES);
    close(p[0]);
    close(p[1]);
    scratch_new(&s);
    CHECK((fd = openat(s.fd, "f", O_WRONLY | O_CREAT, 0600)) >= 0);
    fsx_pipe_widen(fd);
    CHECK_EQ_INT(fcntl(fd, F_GETPIPE_SZ), -1);
    close(fd);
    scratch_free(&s);
}

/* The fds are closed in the caller at once; the last reference goes with
 * a process that is not the caller's child to reap, and it lets go of
 * them: a pipe's write end kept that way still brings its reader the
 * data and then the end. */
TEST(fsx_close_detached)
{
    int a[2], b[2], many[FSX_DETACH_MAX + 1], fds[2];
    struct pollfd pfd;
    char c[8];
    size_t i;

    fsx_close_detached(NULL, 0);
    CHECK_EQ_INT(pipe(a), 0);
    CHECK_EQ_INT(pipe(b), 0);
    CHECK_EQ_INT((int)write(a[1], "x", 1), 1);
    fds[0] = a[1];
    fds[1] = b[1];
    fsx_close_detached(fds, 2);
    CHECK_EQ_INT(fcntl(a[1], F_GETFD), -1);
    CHECK_EQ_INT(fcntl(b[1], F_GETFD), -1);
    CHECK(waitpid(-1, NULL, WNOHANG) <= 0);
    for (i = 0; i < 2; i++) {
        int rd = i == 0 ? a[0] : b[0];

        pfd.fd = rd;
        pfd.events = POLLIN;
        CHECK_EQ_INT(poll(&pfd, 1, 5000), 1);
        if (i == 0)
            CHECK_EQ_INT((int)read(rd, c, sizeof(c)), 1);
        CHECK_EQ_INT(poll(&pfd, 1, 5000), 1);
        CHECK_EQ_INT((int)read(rd, c, sizeof(c)), 0);
        close(rd);
    }
    /* More than it takes: closed here, all of them. */
    for (i = 0; i < FSX_DETACH_MAX + 1; i++)
        CHECK((many[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
    fsx_close_detached(many, FSX_DETACH_MAX + 1);
    for (i = 0; i < FSX_DETACH_MAX + 1; i++)
        CHECK_EQ_INT(fcntl(many[i], F_GETFD), -1);
}
