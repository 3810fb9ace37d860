/*
 * prune_beneath (engine/prune.c): what --delete removes, beneath the
 * destination and nowhere else.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../engine/prune.h"
#include "check.h"

static char root[CHECK_PATH_MAX], outside[CHECK_PATH_MAX];

static void
at(const char *base, const char *rel, char out[CHECK_PATH_MAX])
{
    CHECK(snprintf(out, CHECK_PATH_MAX, "%s/%s", base, rel) <
        CHECK_PATH_MAX);
}

static void
mk(const char *rel)
{
    char p[CHECK_PATH_MAX];

    at(root, rel, p);
    CHECK_EQ_INT(mkdir(p, 0755), 0);
}

static void
put(const char *base, const char *rel)
{
    char p[CHECK_PATH_MAX];

    at(base, rel, p);
    check_write_file(p, "x", 1, 0);
}

static int
exists(const char *base, const char *rel)
{
    char p[CHECK_PATH_MAX];
    struct stat st;

    at(base, rel, p);
    return lstat(p, &st) == 0;
}

static int
setup(void)
{
    char p[CHECK_PATH_MAX];
    int fd;

    check_tmpdir(root);
    check_tmpdir(outside);
    put(outside, "precious");
    mk("d");
    mk("d/e");
    put(root, "d/e/f");
    put(root, "top");
    at(root, "d/out", p);
    CHECK_EQ_INT(symlink(outside, p), 0);
    at(root, "lnk", p);
    CHECK_EQ_INT(symlink(outside, p), 0);
    mk(".ferry");
    put(root, ".ferry/salt");
    CHECK((fd = open(root, O_RDONLY | O_DIRECTORY)) >= 0);
    return fd;
}

TEST(prune_removes)
{
    int fd = setup();

    CHECK_OK(prune_beneath(fd, "top"));
    CHECK(!exists(root, "top"));
    /* A directory with a link to the outside in it: the link goes, what
     * it points at stays. */
    CHECK_OK(prune_beneath(fd, "d"));
    CHECK(!exists(root, "d"));
    CHECK(exists(outside, "precious"));
    /* A link is removed itself, never followed. */
    CHECK_OK(prune_beneath(fd, "lnk"));
    CHECK(!exists(root, "lnk"));
    CHECK(exists(outside, "precious"));
    /* Already gone is fine. */
    CHECK_OK(prune_beneath(fd, "top"));
    CHECK_OK(prune_beneath(fd, "nothing/here"));
    close(fd);
}

TEST(prune_refuses)
{
    int fd = setup();

    CHECK_EQ_ERR(prune_beneath(fd, "../x"), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(prune_beneath(fd, "d/../top"), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(prune_beneath(fd, "/tmp"), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(prune_beneath(fd, ""), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(prune_beneath(fd, "d/"), FERRY_ERR_BAD_PATH);
    /* The state directory is never the mirror's to remove. */
    CHECK_EQ_ERR(prune_beneath(fd, ".ferry"), FERRY_ERR_BAD_PATH);
    CHECK_EQ_ERR(prune_beneath(fd, ".ferry/salt"), FERRY_ERR_BAD_PATH);
    CHECK(exists(root, ".ferry/salt"));
    /* Through a link: refused, the outside untouched. */
    CHECK_FAILS(prune_beneath(fd, "lnk/precious"));
    CHECK_FAILS(prune_beneath(fd, "d/out/precious"));
    CHECK(exists(outside, "precious"));
    CHECK(exists(root, "top") && exists(root, "d/e/f"));
    close(fd);
}

TEST(prune_depth)
{
    char rel[CHECK_PATH_MAX];
    size_t n = 0;
    int fd = setup(), i;

    /* Deeper than PRUNE_MAX_DEPTH: refused, not a run out of fds. */
    for (i = 0; i <= PRUNE_MAX_DEPTH + 1; i++) {
        n += (size_t)snprintf(rel + n, sizeof(rel) - n, "%sz", i ? "/" : "");
        mk(rel);
    }
    CHECK_EQ_ERR(prune_beneath(fd, "z"), FERRY_ERR_TOO_LARGE);
    close(fd);
}

TEST(prune_keeps_parent_mtime)
{
    struct timespec ts[2] = { { 1000, 0 }, { 1000000000, 5 } };
    char p[CHECK_PATH_MAX];
    struct stat st;
    int fd = setup();

    at(root, "d/e", p);
    CHECK_EQ_INT(utimensat(AT_FDCWD, p, ts, 0), 0);
    CHECK_OK(prune_beneath(fd, "d/e/f"));
    CHECK_EQ_INT(stat(p, &st), 0);
    CHECK_EQ_INT(st.st_mtim.tv_sec, 1000000000);
    CHECK_EQ_INT(st.st_mtim.tv_nsec, 5);
    close(fd);
}
