#include "volstage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"

static void
volstage_key_name(uint64_t key, char name[24])
{
    snprintf(name, 24, "%" PRIu64, key);
}

static int
volstage_push(struct volstage_name **v, size_t *n, size_t *cap,
    const struct volstage_name *x)
{
    struct volstage_name *nv;

    if ((nv = xgrow(*v, *n, cap, sizeof(*nv), 16)) == NULL)
        return FERRY_ERR_NOMEM;
    *v = nv;
    (*v)[(*n)++] = *x;
    return 0;
}

static void
volstage_names_free(struct volstage_name *n, size_t count)
{
    size_t i;

    for (i = 0; i < count; i++)
        xfree(n[i].path);
    xfree(n);
}

int
volstage_init(struct volstage *s, int rootfd, uint32_t block_size)
{
    return volstage_init_in(s, rootfd, rootfd, block_size);
}

int
volstage_init_in(struct volstage *s, int rootfd, int parentfd,
    uint32_t block_size)
{
    static unsigned seq;
    int i;

    memset(s, 0, sizeof(*s));
    s->rootfd = rootfd;
    s->parentfd = parentfd;
    s->stagefd = s->pfd = -1;
    s->block_size = block_size;
    /* A name of our own (mkdirat fails on one that is there); 0700 so
     * nobody else reads what is staged. */
    for (i = 0; i < 100; i++) {
        snprintf(s->name, sizeof(s->name), VOLSTAGE_PREFIX "%ld.%u",
            (long)getpid(), seq++);
        if (mkdirat(parentfd, s->name, 0700) == 0)
            break;
        if (errno != EEXIST)
            return -errno;
    }
    s->stagefd = openat(parentfd, s->name, O_RDONLY | O_DIRECTORY |
        O_NOFOLLOW | O_CLOEXEC);
    return s->stagefd < 0 ? -errno : 0;
}

void
volstage_cleanup(struct volstage *s)
{
    struct dirent *de;
    DIR *d;
    int fd;

    if (s->stagefd >= 0) {
        if ((fd = dup(s->stagefd)) >= 0 && (d = fdopendir(fd)) != NULL) {
            while ((de = readdir(d)) != NULL)
                if (strcmp(de->d_name, ".") != 0 &&
                    strcmp(de->d_name, "..") != 0)
                    (void)unlinkat(s->stagefd, de->d_name, 0);
            closedir(d);
        } else if (fd >= 0) {
            close(fd);
        }
        close(s->stagefd);
        (void)unlinkat(s->parentfd, s->name, AT_REMOVEDIR);
    }
    s->stagefd = -1;
    if (s->pfd >= 0)
        close(s->pfd);
    s->pfd = -1;
    xfree(s->ppath);
    xfree(s->failed);
    volstage_names_free(s->batch, s->nbatch);
    volstage_names_free(s->dirs, s->ndirs);
    volstage_names_free(s->fix, s->nfix);
    s->ppath = s->failed = NULL;
    s->batch = s->dirs = s->fix = NULL;
    s->nbatch = s->ndirs = s->nfix = 0;
}

void
volstage_sweep(int parentfd)
{
    struct dirent *de, *fe;
    DIR *d, *fd_dir;
    int fd, sfd;

    if ((fd = dup(parentfd)) < 0)
        return;
    if ((d = fdopendir(fd)) == NULL) {
        close(fd);
        return;
    }
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, VOLSTAGE_PREFIX,
            strlen(VOLSTAGE_PREFIX)) != 0)
            continue;
        sfd = openat(parentfd, de->d_name, O_RDONLY | O_DIRECTORY |
            O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0)
            continue;
        if ((fd_dir = fdopendir(sfd)) == NULL) {
            close(sfd);
            continue;
        }
        /* Staged files only (names are counters): no deeper tree. */
        while ((fe = readdir(fd_dir)) != NULL)
            (void)unlinkat(dirfd(fd_dir), fe->d_name, 0);
        closedir(fd_dir);
        (void)unlinkat(parentfd, de->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

int
volstage_parent(struct volstage *s, const char *rel, int *pfd,
    const char **base)
{
    const char *slash = strrchr(rel, '/');
    size_t plen = slash != NULL ? (size_t)(slash - rel) : 0;
    int r, fd;

    if (s->pfd >= 0 && strlen(s->ppath) == plen &&
        memcmp(s->ppath, rel, plen) == 0) {
        *pfd = s->pfd;
        *base = slash != NULL ? slash + 1 : rel;
        return 0;
    }
    if ((r = fsx_open_parent(s->rootfd, rel, 1, &fd, base)) != 0)
        return r;
    if (s->pfd >= 0)
        close(s->pfd);
    xfree(s->ppath);
    if ((s->ppath = xstrndup(rel, plen)) == NULL) {
        close(fd);
        s->pfd = -1;
        return FERRY_ERR_NOMEM;
    }
    s->pfd = fd;
    *pfd = fd;
    return 0;
}

static int
volstage_sync(struct volstage *s)
{
#ifdef __linux__
    return syncfs(s->stagefd) == 0 ? 0 : -errno;
#else
    return fsx_fsync(s->rootfd);
#endif
}

/* Directories the reader has left get their mode and mtime, deepest
 * first (their files are committed by then). */
static void
volstage_fix_dirs(struct volstage *s)
{
    size_t i;
    int fd;

    for (i = 0; i < s->nfix; i++) {
        struct volstage_name *d = &s->fix[i];

        if (fsx_open_dir(s->rootfd, d->path, 0, &fd) == 0) {
            (void)fchmod(fd, d->mode);
            (void)fsx_set_mtime(fd, -1, NULL, d->mtime_sec, d->mtime_nsec);
            close(fd);
        }
        xfree(d->path);
    }
    s->nfix = 0;
}

static void
volstage_failed(struct volstage *s, const char *path)
{
    xfree(s->failed);
    s->failed = path != NULL ? xstrdup(path) : NULL;
}

int
volstage_commit(struct volstage *s, const char **failed)
{
    const char *base;
    char name[24];
    size_t i;
    int r = 0, pfd;

    *failed = NULL;
    if (s->nbatch > 0 && (r = volstage_sync(s)) != 0)
        return r;
    for (i = 0; i < s->nbatch && r == 0; i++) {
        struct volstage_name *n = &s->batch[i];

        volstage_key_name(n->key, name);
        if ((r = volstage_parent(s, n->path, &pfd, &base)) == 0 &&
            renameat(s->stagefd, name, pfd, base) != 0)
            r = -errno;
        if (r != 0) {
            volstage_failed(s, n->path);
            *failed = s->failed;
        }
    }
    if (r == 0 && s->nbatch > 0)
        r = volstage_sync(s);
    if (r == 0)
        s->committed += s->nbatch;
    for (i = 0; i < s->nbatch; i++) {
        if (r != 0) {
            volstage_key_name(s->batch[i].key, name);
            (void)unlinkat(s->stagefd, name, 0);
        }
        xfree(s->batch[i].path);
    }
    s->nbatch = 0;
    s->batch_bytes = 0;
    if (r == 0)
        volstage_fix_dirs(s);
    return r;
}

int
volstage_leave(struct volstage *s, const char *rel)
{
    int r;

    while (s->ndirs > 0) {
        struct volstage_name *d = &s->dirs[s->ndirs - 1];
        size_t n = strlen(d->path);

        if (rel != NULL && strncmp(rel, d->path, n) == 0 && rel[n] == '/')
            break;
        if ((r = volstage_push(&s->fix, &s->nfix, &s->nfix_cap, d)) != 0)
            return r;
        s->ndirs--;
    }
    return 0;
}

void
volstage_file_init(struct volstage_file *f)
{
    memset(f, 0, sizeof(*f));
    f->fd = -1;
}

void
volstage_file_cleanup(struct volstage_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    hash_file_free(f->hf);
    xfree(f->path);
    xfree(f->blk);
    volstage_file_init(f);
}

void
volstage_file_discard(struct volstage *s, struct volstage_file *f)
{
    char name[24];
    uint8_t *blk = f->blk;

    if (f->fd >= 0) {
        volstage_key_name(f->key, name);
        (void)unlinkat(s->stagefd, name, 0);
    }
    /* The block buffer stays for the next file. */
    f->blk = NULL;
    volstage_file_cleanup(f);
    f->blk = blk;
}

int
volstage_file_open(struct volstage *s, struct volstage_file *f,
    const char *path, uint64_t size)
{
    char name[24];

    f->key = s->next_key++;
    volstage_key_name(f->key, name);
    f->fd = openat(s->stagefd, name, O_RDWR | O_CREAT | O_EXCL |
        O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f->fd < 0)
        return -errno;
    f->size = size;
    f->done = 0;
    f->fill = 0;
    if ((f->path = xstrdup(path)) == NULL)
        return FERRY_ERR_NOMEM;
    if (f->blk == NULL && (f->blk = xmalloc(s->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    if (size != VOLSTAGE_UNKNOWN &&
        (f->hf = hash_file_new(size, s->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    return 0;
}

/* Writes the buffered block and folds it into the hash. */
static int
volstage_file_drain(struct volstage_file *f)
{
    struct hash128 bh;
    int r;

    if (f->fill == 0)
        return 0;
    if ((r = fsx_write_all(f->fd, f->blk, f->fill)) != 0)
        return r;
    if (f->hf != NULL) {
        hash_block(f->blk, f->fill, &bh);
        hash_file_add(f->hf, &bh);
    }
    f->fill = 0;
    return 0;
}

int
volstage_file_write(struct volstage *s, struct volstage_file *f,
    const void *p, size_t n)
{
    const uint8_t *u = p;
    size_t k;
    int r;

    /* Whole blocks, so each is hashed as the sender hashed it. */
    while (n > 0) {
        k = s->block_size - f->fill;
        if (k > n)
            k = n;
        memcpy(f->blk + f->fill, u, k);
        f->fill += k;
        f->done += k;
        u += k;
        n -= k;
        if (f->fill == s->block_size && (r = volstage_file_drain(f)) != 0)
            return r;
    }
    return 0;
}

int
volstage_file_hash(struct volstage *s, struct volstage_file *f,
    struct hash128 *out)
{
    int r;

    if ((r = volstage_file_drain(f)) != 0)
        return r;
    if (f->hf != NULL) {
        hash_file_final(f->hf, out);
        return 0;
    }
    return hash_fd(f->fd, f->done, s->block_size, out);
}

int
volstage_file_done(struct volstage *s, struct volstage_file *f,
    const char **failed)
{
    struct volstage_name n;
    int r;

    *failed = NULL;
    if ((r = volstage_file_drain(f)) != 0)
        return r;
    (void)fchmod(f->fd, f->mode);
    (void)fsx_set_mtime(f->fd, -1, NULL, f->mtime_sec, f->mtime_nsec);
#ifndef __linux__
    if ((r = fsx_fsync(f->fd)) != 0)
        return r;
#endif
    memset(&n, 0, sizeof(n));
    n.key = f->key;
    n.path = f->path;
    if ((r = volstage_push(&s->batch, &s->nbatch, &s->nbatch_cap, &n)) != 0)
        return r;
    s->batch_bytes += f->done;
    close(f->fd);
    f->fd = -1;
    f->path = NULL;
    hash_file_free(f->hf);
    f->hf = NULL;
    if (s->nbatch + s->nfix >= VOLSTAGE_BATCH_FILES ||
        s->batch_bytes >= VOLSTAGE_BATCH_BYTES)
        return volstage_commit(s, failed);
    return 0;
}

int
volstage_symlink(struct volstage *s, const char *rel, const char *target,
    int64_t mtime_sec, uint32_t mtime_nsec)
{
    const char *base;
    char name[24];
    int r, pfd;

    if ((r = volstage_parent(s, rel, &pfd, &base)) != 0)
        return r;
    volstage_key_name(s->next_key++, name);
    if (symlinkat(target, s->stagefd, name) != 0)
        return -errno;
    (void)fsx_set_mtime(-1, s->stagefd, name, mtime_sec, mtime_nsec);
    if (renameat(s->stagefd, name, pfd, base) != 0) {
        r = -errno;
        (void)unlinkat(s->stagefd, name, 0);
        return r;
    }
    return 0;
}

int
volstage_dir(struct volstage *s, const char *rel, uint32_t mode,
    int64_t mtime_sec, uint32_t mtime_nsec)
{
    struct volstage_name d;
    int r, fd;

    if ((r = fsx_open_dir(s->rootfd, rel, 1, &fd)) != 0)
        return r;
    close(fd);
    memset(&d, 0, sizeof(d));
    d.mode = mode;
    d.mtime_sec = mtime_sec;
    d.mtime_nsec = mtime_nsec;
    if ((d.path = xstrdup(rel)) == NULL ||
        (r = volstage_push(&s->dirs, &s->ndirs, &s->ndirs_cap, &d)) != 0) {
        xfree(d.path);
        return FERRY_ERR_NOMEM;
    }
    return 0;
}
