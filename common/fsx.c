#include "fsx.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/openat2.h>
#include <sys/syscall.h>
#endif

#include "alloc.h"

int
fsx_path_check(const char *p, size_t len)
{
    size_t i, start = 0;

    if (len == 0 || len > FSX_PATH_MAX || p[0] == '/')
        return FERRY_ERR_BAD_PATH;
    for (i = 0; i <= len; i++) {
        if (i < len && p[i] == '\0')
            return FERRY_ERR_BAD_PATH;
        if (i == len || p[i] == '/') {
            size_t n = i - start;

            if (n == 0 || n > FSX_NAME_MAX ||
                (n == 1 && p[start] == '.') ||
                (n == 2 && p[start] == '.' && p[start + 1] == '.'))
                return FERRY_ERR_BAD_PATH;
            start = i + 1;
        }
    }
    return 0;
}

static int
fsx_open_component(int dirfd, const char *name, int create, int *out)
{
    int fd;

    for (;;) {
        fd = openat(dirfd, name,
            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            *out = fd;
            return 0;
        }
        if (errno != ENOENT || !create)
            break;
        if (mkdirat(dirfd, name, 0755) != 0 && errno != EEXIST)
            break;
        create = 0;  /* one attempt: a racing creator is fine, a loop not */
    }
    /* A symlink where a directory should be comes back as ELOOP or
     * ENOTDIR; both mean "not a directory we will enter". */
    return errno == ELOOP ? FERRY_ERR_NOT_DIR : -errno;
}

/* 1 while openat2 may be tried; 0 once it is known missing (or turned
 * off by a test). Atomic: volumes' writer threads walk paths too. */
static atomic_int fsx_openat2_ok = 1;

void
fsx_use_openat2(int on)
{
    atomic_store_explicit(&fsx_openat2_ok, on, memory_order_relaxed);
}

/*
 * One openat2 call does the walk below in the kernel (Linux 5.6+): the
 * path may not leave rootfd or pass a symlink. Returns 0, an error, or 1
 * when openat2 cannot be used here (old kernel, a seccomp filter).
 */
static int
fsx_openat2_dir(int rootfd, const char *rel, int *out)
{
#if defined(__linux__) && defined(SYS_openat2)
    struct open_how how;
    int fd;

    memset(&how, 0, sizeof(how));
    how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
        RESOLVE_NO_MAGICLINKS;
    while ((fd = (int)syscall(SYS_openat2, rootfd, rel, &how,
        sizeof(how))) < 0 && errno == EAGAIN)
        ;
    if (fd >= 0) {
        *out = fd;
        return 0;
    }
    if (errno == ENOSYS || errno == EPERM || errno == E2BIG) {
        atomic_store_explicit(&fsx_openat2_ok, 0, memory_order_relaxed);
        return 1;
    }
    /* A symlink on the way: ELOOP; a path that would leave: EXDEV. */
    return errno == ELOOP || errno == EXDEV ? FERRY_ERR_NOT_DIR : -errno;
#else
    (void)rootfd; (void)rel; (void)out;
    atomic_store_explicit(&fsx_openat2_ok, 0, memory_order_relaxed);
    return 1;
#endif
}

static int
fsx_walk(int rootfd, const char *rel, size_t len, int create, int *out)
{
    char name[FSX_NAME_MAX + 1];
    size_t start = 0, i;
    int cur = -1, next = -1, r;

    *out = -1;
    if (len > 0 && len <= FSX_PATH_MAX &&
        atomic_load_explicit(&fsx_openat2_ok, memory_order_relaxed)) {
        char path[FSX_PATH_MAX + 1];

        memcpy(path, rel, len);
        path[len] = '\0';
        r = fsx_openat2_dir(rootfd, path, out);
        /* Missing directories are made by the walk. */
        if (r <= 0 && !(r == -ENOENT && create))
            return r;
    }
    if ((cur = fcntl(rootfd, F_DUPFD_CLOEXEC, 0)) < 0)
        return -errno;
    for (i = 0; i <= len && len > 0; i++) {
        if (i < len && rel[i] != '/')
            continue;
        memcpy(name, rel + start, i - start);
        name[i - start] = '\0';
        r = fsx_open_component(cur, name, create, &next);
        close(cur);
        if (r != 0)
            return r;
        cur = next;
        start = i + 1;
    }
    *out = cur;
    return 0;
}

int
fsx_open_dir(int rootfd, const char *rel, int create, int *out)
{
    size_t len = strlen(rel);
    int r;

    *out = -1;
    if (len > 0 && (r = fsx_path_check(rel, len)) != 0)
        return r;
    return fsx_walk(rootfd, rel, len, create, out);
}

int
fsx_open_parent(int rootfd, const char *rel, int create, int *dirfd,
    const char **name)
{
    size_t len = strlen(rel);
    const char *slash;
    int r;

    *dirfd = -1;
    *name = NULL;
    if ((r = fsx_path_check(rel, len)) != 0)
        return r;
    slash = strrchr(rel, '/');
    if ((r = fsx_walk(rootfd, rel, slash == NULL ? 0 : (size_t)(slash - rel),
        create, dirfd)) != 0)
        return r;
    *name = slash == NULL ? rel : slash + 1;
    return 0;
}

int
fsx_pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
    const uint8_t *u = p;

    while (n > 0) {
        ssize_t k = pwrite(fd, u, n, (off_t)off);

        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return -EIO;
        u += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

int
fsx_write_all(int fd, const void *p, size_t n)
{
    const uint8_t *u = p;

    while (n > 0) {
        ssize_t k = write(fd, u, n);

        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return -EIO;
        u += k;
        n -= (size_t)k;
    }
    return 0;
}

int
fsx_pread_full(int fd, void *p, size_t n, uint64_t off, size_t *got)
{
    uint8_t *u = p;
    size_t done = 0;

    *got = 0;
    while (done < n) {
        ssize_t k = pread(fd, u + done, n - done, (off_t)(off + done));

        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            break;
        done += (size_t)k;
    }
    *got = done;
    return 0;
}

int
fsx_fsync(int fd)
{
    return fsync(fd) == 0 ? 0 : -errno;
}

int
fsx_fdatasync(int fd)
{
#ifdef __APPLE__
    return fsx_fsync(fd);
#else
    return fdatasync(fd) == 0 ? 0 : -errno;
#endif
}

void
fsx_pipe_widen(int fd)
{
#ifdef F_SETPIPE_SZ
    struct stat st;
    int size;

    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode))
        return;
    /* Above pipe-max-size the kernel says EPERM (without
     * CAP_SYS_RESOURCE): take the most it allows, from 128 KiB up. */
    for (size = FSX_PIPE_BYTES; size >= FSX_PIPE_BYTES / 8; size /= 2)
        if (fcntl(fd, F_SETPIPE_SZ, size) >= 0)
            return;
#else
    (void)fd;
#endif
}

int
fsx_open_private_dir(int dirfd, const char *name, int create, int *out)
{
    struct stat st;
    int fd;

    *out = -1;
    if (create && mkdirat(dirfd, name, 0700) != 0 && errno != EEXIST)
        return -errno;
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
        O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP || errno == ENOTDIR ? FERRY_ERR_STATE :
            -errno;
    if (fstat(fd, &st) != 0 || st.st_uid != geteuid() ||
        (st.st_mode & 022) != 0) {
        close(fd);
        return FERRY_ERR_STATE;
    }
    *out = fd;
    return 0;
}

int
fsx_dir_each(int parent, const char *name, fsx_entry_fn *fn, void *ctx)
{
    struct stat dir, st;
    struct dirent *de;
    DIR *d;
    int fd, r = 0;

    fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
        O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &dir) != 0 || (d = fdopendir(fd)) == NULL) {
        r = -errno;
        close(fd);
        return r;
    }
    for (;;) {
        errno = 0;
        if ((de = readdir(d)) == NULL) {
            r = -errno;
            break;
        }
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT)
                continue;
            r = -errno;
            break;
        }
        if ((r = fn(ctx, dirfd(d), &dir, de->d_name, &st)) != 0)
            break;
    }
    closedir(d);
    return r;
}

/*
 * Walks the directories on the way to path, path included, from the top:
 * with make, makes each that is missing (mkdir -p) and checks that path is
 * a directory; without, stops at the first that is missing and names it
 * in *missing.
 */
static int
fsx_walk_dirs(const char *path, mode_t mode, int make, char **missing)
{
    char *tmp = xstrdup(path);
    struct stat st;
    size_t i, len;
    int r = 0;

    if (tmp == NULL)
        return FERRY_ERR_NOMEM;
    len = strlen(tmp);
    while (len > 1 && tmp[len - 1] == '/')
        tmp[--len] = '\0';
    for (i = 1; i <= len; i++) {
        if (tmp[i] != '/' && tmp[i] != '\0')
            continue;
        tmp[i] = '\0';
        if (make ? mkdir(tmp, mode) != 0 && errno != EEXIST :
            stat(tmp, &st) != 0) {
            if (make || errno != ENOENT)
                r = -errno;
            else if ((*missing = xstrdup(tmp)) == NULL)
                r = FERRY_ERR_NOMEM;
            break;
        }
        if (i < len)
            tmp[i] = '/';
    }
    if (make && r == 0 && stat(tmp, &st) != 0)
        r = -errno;
    else if (make && r == 0 && !S_ISDIR(st.st_mode))
        r = -ENOTDIR;
    xfree(tmp);
    return r;
}

int
fsx_mkdir_p(const char *path, mode_t mode)
{
    return fsx_walk_dirs(path, mode, 1, NULL);
}

int
fsx_first_missing(const char *path, char **missing)
{
    *missing = NULL;
    return fsx_walk_dirs(path, 0, 0, missing);
}

int
fsx_set_mtime(int fd, int dirfd, const char *name, int64_t sec, uint32_t nsec)
{
    struct timespec ts[2];

    ts[0].tv_sec = ts[1].tv_sec = (time_t)sec;
    ts[0].tv_nsec = ts[1].tv_nsec = (long)nsec;
    if (fd >= 0)
        return futimens(fd, ts) == 0 ? 0 : -errno;
    return utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

char *
fsx_trim_slashes(char *path)
{
    size_t n = strlen(path);

    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    return path;
}

int
fsx_split(const char *path, char **dir, char **base)
{
    size_t len = strlen(path);
    const char *slash;

    *dir = *base = NULL;
    while (len > 1 && path[len - 1] == '/')
        len--;
    slash = memrchr(path, '/', len);
    if (slash == NULL) {
        *dir = xstrdup(".");
        *base = xstrndup(path, len);
    } else {
        size_t dlen = (size_t)(slash - path);

        *dir = dlen == 0 ? xstrdup("/") : xstrndup(path, dlen);
        *base = xstrndup(slash + 1, len - dlen - 1);
    }
    if (*dir == NULL || *base == NULL) {
        xfree(*dir);
        xfree(*base);
        *dir = *base = NULL;
        return FERRY_ERR_NOMEM;
    }
    return 0;
}

/* In the detached process: closes every fd below maxfd not in keep
 * (sorted). Only async-signal-safe calls: the parent may have threads. */
static void
fsx_close_all_but(const int *keep, size_t n, int maxfd)
{
    int from = 0, fd;
    size_t i;

    for (i = 0; i <= n; i++) {
        int to = i < n ? keep[i] : maxfd;

#if defined(__linux__) && defined(SYS_close_range)
        if (to > from && syscall(SYS_close_range, (unsigned)from,
            i < n ? (unsigned)to - 1 : ~0u, 0) == 0) {
            from = to + 1;
            continue;
        }
#endif
        for (fd = from; fd < to; fd++)
            (void)close(fd);
        from = to + 1;
    }
}

/* A fork that runs no atfork handlers (glibc 2.34's _Fork): the caller
 * has threads whose locks a handler could wait for in the child. */
static pid_t
fsx_fork_bare(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 34)
    return _Fork();
#else
    return fork();
#endif
}

void
fsx_close_detached(const int *fds, size_t n)
{
    int keep[FSX_DETACH_MAX + 1], go[2], maxfd, t;
    long open_max = sysconf(_SC_OPEN_MAX);
    size_t i, j;
    pid_t pid;
    char c;

    if (n == 0)
        return;
    if (n > FSX_DETACH_MAX || pipe2(go, O_CLOEXEC) != 0)
        goto here;
    /* What the waiting process keeps, sorted, made before the fork. */
    memcpy(keep, fds, n * sizeof(int));
    keep[n] = go[0];
    for (i = 1; i <= n; i++)
        for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    maxfd = open_max < 0 || open_max > 65536 ? 65536 : (int)open_max;
    if ((pid = fsx_fork_bare()) < 0) {
        close(go[0]);
        close(go[1]);
        goto here;
    }
    if (pid == 0) {
        /* The middle process: its child is reparented when it exits, so
         * nobody has to reap the one that waits. */
        if (fsx_fork_bare() == 0) {
            (void)setsid();
            fsx_close_all_but(keep, n + 1, maxfd);
            /* Until every copy of the caller's is closed (its end of the
             * pipe goes last, or with it). */
            while (read(go[0], &c, 1) < 0 && errno == EINTR)
                ;
            for (i = 0; i < n; i++)
                (void)close(fds[i]);
            _exit(0);
        }
        _exit(0);
    }
    close(go[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    for (i = 0; i < n; i++)
        (void)close(fds[i]);
    close(go[1]);
    return;
here:
    for (i = 0; i < n; i++)
        (void)close(fds[i]);
}
