/*
 * The limits of engine/manifest.c: what a source tree may hold to be
 * sent at all (entries, depth, names, link targets).
 *
 * Link targets longer than the protocol carries, or empty, cannot be made
 * on Linux's own file systems (FUSE and network file systems can hold
 * them), so the unit binary is linked with --wrap=readlink (Makefile) and
 * a test can make the scan see one. So with modification times past what
 * an entry holds (ext4 stops at the year 2446): --wrap=fstatat.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../engine/manifest.h"
#include "../../proto/limits.h"
#include "../../proto/msg.h"
#include "check.h"

ssize_t __real_readlink(const char *path, char *buf, size_t len);
ssize_t __wrap_readlink(const char *path, char *buf, size_t len);

/* The length of the target readlink reports, or -1 for the real one. */
static ssize_t fake_target_len = -1;

ssize_t
__wrap_readlink(const char *path, char *buf, size_t len)
{
    size_t n;

    if (fake_target_len < 0)
        return __real_readlink(path, buf, len);
    /* As readlink does: the target, cut at len. */
    n = (size_t)fake_target_len < len ? (size_t)fake_target_len : len;
    memset(buf, 't', n);
    return (ssize_t)n;
}

int __real_fstatat(int dfd, const char *path, struct stat *st, int flags);
int __wrap_fstatat(int dfd, const char *path, struct stat *st, int flags);

/* While set, fstatat gives the files named below these times. */
static int fake_mtimes;

int
__wrap_fstatat(int dfd, const char *path, struct stat *st, int flags)
{
    static const struct {
        const char *name;
        int64_t sec;
    } fake[] = {
        { "late", MENTRY_MTIME_MAX + 1 }, { "early", MENTRY_MTIME_MIN - 1 },
        { "edge_hi", MENTRY_MTIME_MAX }, { "edge_lo", MENTRY_MTIME_MIN },
    };
    size_t i;
    int r = __real_fstatat(dfd, path, st, flags);

    for (i = 0; r == 0 && fake_mtimes && i < sizeof(fake) / sizeof(fake[0]);
        i++)
        if (strcmp(path, fake[i].name) == 0)
            st->st_mtim.tv_sec = fake[i].sec;
    return r;
}

/* Scans path into a fresh manifest and checks it gave no entry and one
 * notice of code want. */
static void
scan_refused(const char *path, int want)
{
    struct manifest m;

    manifest_init(&m);
    CHECK_OK(manifest_scan(&m, path));
    CHECK_EQ_U64(m.n, 0);
    CHECK_EQ_U64(manifest_notices(&m), 1);
    CHECK_EQ_ERR(manifest_notice_at(&m, 0)->code, want);
    manifest_cleanup(&m);
}

TEST(manifest_link_target)
{
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 8];
    struct manifest m;

    check_tmpdir(dir);
    snprintf(p, sizeof(p), "%s/ln", dir);
    CHECK_EQ_INT(symlink("x", p), 0);
    fake_target_len = 0;
    scan_refused(p, FERRY_ERR_TOO_LARGE);
    fake_target_len = PROTO_MAX_LINK + 1;
    scan_refused(p, FERRY_ERR_TOO_LARGE);
    fake_target_len = PROTO_MAX_LINK;
    manifest_init(&m);
    CHECK_OK(manifest_scan(&m, p));
    CHECK_EQ_U64(m.n, 1);
    CHECK_EQ_U64(strlen(manifest_target(&m, 0)), PROTO_MAX_LINK);
    manifest_cleanup(&m);
    fake_target_len = -1;
    check_rmtree(dir);
}

/* "/" names no entry it could be sent as. */
TEST(manifest_root)
{
    scan_refused("/", FERRY_ERR_BAD_PATH);
}

/* Past MANIFEST_MAX_ENTRIES nothing more is added (a manifest that full
 * is faked: it would take a hundred million files). */
TEST(manifest_max_entries)
{
    char dir[CHECK_PATH_MAX];
    struct manifest m;

    check_tmpdir(dir);
    manifest_init(&m);
    m.n = MANIFEST_MAX_ENTRIES;
    CHECK_EQ_ERR(manifest_scan(&m, dir), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(m.n, MANIFEST_MAX_ENTRIES);
    m.n = 0;
    manifest_cleanup(&m);
    check_rmtree(dir);
}

/* A tree more than 1000 directories deep is cut there, with a notice. */
TEST(manifest_too_deep)
{
    char dir[CHECK_PATH_MAX], top[CHECK_PATH_MAX + 8];
    struct manifest m;
    int fd, next, i;

    check_tmpdir(dir);
    snprintf(top, sizeof(top), "%s/t", dir);
    CHECK_EQ_INT(mkdir(top, 0755), 0);
    CHECK((fd = open(top, O_RDONLY | O_DIRECTORY)) >= 0);
    for (i = 0; i < 1002; i++) {
        CHECK_EQ_INT(mkdirat(fd, "d", 0755), 0);
        CHECK((next = openat(fd, "d", O_RDONLY | O_DIRECTORY)) >= 0);
        close(fd);
        fd = next;
    }
    close(fd);
    manifest_init(&m);
    CHECK_OK(manifest_scan(&m, top));
    CHECK_EQ_U64(m.n, 1002);
    CHECK_EQ_U64(manifest_notices(&m), 1);
    CHECK_EQ_ERR(manifest_notice_at(&m, 0)->code, FERRY_ERR_TOO_LARGE);
    CHECK(strstr(manifest_notice_at(&m, 0)->text, "too deep") != NULL);
    manifest_cleanup(&m);
    check_rmtree(dir);
}

/* An entry holds modification times within 2^46 seconds of 1970: a scan
 * gives a notice for a file outside them (and leaves a directory's
 * contents out), a listing that carries one is refused; the edges are
 * kept exactly. */
TEST(manifest_mtime_range)
{
    static const char *const files[] = { "early", "edge_hi", "edge_lo",
        "late/inner" };
    char dir[CHECK_PATH_MAX], p[CHECK_PATH_MAX + 16];
    char rel[MANIFEST_REL_MAX];
    struct manifest m;
    size_t i;

    check_tmpdir(dir);
    snprintf(p, sizeof(p), "%s/late", dir);
    CHECK_EQ_INT(mkdir(p, 0755), 0);
    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
        check_write_file(p, "x", 1, 0);
    }
    fake_mtimes = 1;
    manifest_init(&m);
    CHECK_OK(manifest_scan_contents(&m, dir));
    fake_mtimes = 0;
    CHECK_EQ_U64(m.n, 2);
    CHECK_EQ_STR(manifest_rel(&m, 0, rel), "edge_hi");
    CHECK(manifest_entry(&m, 0)->mtime_sec == MENTRY_MTIME_MAX);
    CHECK_EQ_STR(manifest_rel(&m, 1, rel), "edge_lo");
    CHECK(manifest_entry(&m, 1)->mtime_sec == MENTRY_MTIME_MIN);
    CHECK_EQ_U64(manifest_notices(&m), 2);
    CHECK_EQ_ERR(manifest_notice_at(&m, 0)->code, FERRY_ERR_UNSUPPORTED);
    CHECK(strstr(manifest_notice_at(&m, 0)->path, "early") != NULL);
    CHECK(strstr(manifest_notice_at(&m, 1)->path, "late") != NULL);
    manifest_cleanup(&m);

    manifest_init(&m);
    CHECK_EQ_ERR(manifest_add_listed(&m, "a", ENTRY_FILE, 0644, 1,
        MENTRY_MTIME_MAX + 1, 0), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(manifest_add_listed(&m, "a", ENTRY_FILE, 0644, 1,
        MENTRY_MTIME_MIN - 1, 0), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(m.n, 0);
    CHECK_OK(manifest_add_listed(&m, "a", ENTRY_FILE, 0644, 1,
        MENTRY_MTIME_MIN, 999999999));
    CHECK(manifest_entry(&m, 0)->mtime_sec == MENTRY_MTIME_MIN);
    CHECK_EQ_U64(manifest_entry(&m, 0)->mtime_nsec, 999999999);
    manifest_cleanup(&m);
    check_rmtree(dir);
}
