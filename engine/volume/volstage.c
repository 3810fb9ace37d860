#include "volstage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"

#define VS_NAME_MAX 24

static void
volstage_key_name(uint64_t key, char name[VS_NAME_MAX])
{
    snprintf(name, VS_NAME_MAX, "%" PRIu64, key);
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
    s->stagefd = -1;
    dest_writer_init(&s->w, rootfd, -1);
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
    if (s->stagefd < 0)
        return -errno;
    /* Held while the stage lives: volstage_sweep_stale leaves it alone,
     * even from another machine of a shared file system, where the pid
     * in the name says nothing. */
    (void)flock(s->stagefd, LOCK_EX | LOCK_NB);
    dest_writer_init(&s->w, rootfd, s->stagefd);
    return 0;
}

void
volstage_cleanup(struct volstage *s)
{
    struct dirent *de;
    DIR *d;
    int fd;

    dest_writer_cleanup(&s->w);
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
    dest_write_meta_free(s->dirs, s->ndirs);
    s->dirs = NULL;
    s->ndirs = 0;
}

/* Removes the staging directory name in parentfd, opened as sfd (taken):
 * staged files only (names are counters), no deeper tree. */
static void
volstage_remove_stage(int parentfd, const char *name, int sfd)
{
    struct dirent *fe;
    DIR *d;

    if ((d = fdopendir(sfd)) == NULL) {
        close(sfd);
        return;
    }
    /* From the start: a dup of sfd may have read it already (they share
     * the offset). */
    rewinddir(d);
    while ((fe = readdir(d)) != NULL)
        (void)unlinkat(dirfd(d), fe->d_name, 0);
    closedir(d);
    (void)unlinkat(parentfd, name, AT_REMOVEDIR);
}

/* Calls fn(parentfd, name, sfd, ctx) for each staging directory in
 * parentfd (sfd opened for it, the callee's to close). */
static void
volstage_each_stage(int parentfd, void (*fn)(int, const char *, int, void *),
    void *ctx)
{
    struct dirent *de;
    DIR *d;
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
        if (sfd >= 0)
            fn(parentfd, de->d_name, sfd, ctx);
    }
    closedir(d);
}

static void
volstage_sweep_one(int parentfd, const char *name, int sfd, void *ctx)
{
    (void)ctx;
    volstage_remove_stage(parentfd, name, sfd);
}

void
volstage_sweep(int parentfd)
{
    volstage_each_stage(parentfd, volstage_sweep_one, NULL);
}

struct vs_stale {
    int remove;
    volstage_stale_fn *fn;
    void *ctx;
    int found;
};

/* The pid a staging name was made by, or 0 when the name is not one
 * volstage_init_in makes. */
static long
volstage_stage_pid(const char *name)
{
    const char *p = name + strlen(VOLSTAGE_PREFIX);
    char *end;
    long pid;

    if (*p < '1' || *p > '9')
        return 0;
    pid = strtol(p, &end, 10);
    if (*end != '.' || end[1] < '0' || end[1] > '9')
        return 0;
    (void)strtoul(end + 1, &end, 10);
    return *end == '\0' && pid > 0 ? pid : 0;
}

static void
volstage_stale_one(int parentfd, const char *name, int sfd, void *ctx)
{
    struct vs_stale *v = ctx;
    struct dirent *fe;
    struct stat st, fst;
    uint64_t bytes = 0;
    long pid = volstage_stage_pid(name);
    DIR *d;
    int fd;

    /* Ours, of a process that is gone, and unlocked: a live stage of
     * this machine has its pid, one of another machine its lock. */
    if (pid == 0 || pid == (long)getpid() || fstat(sfd, &st) != 0 ||
        st.st_uid != geteuid() || (kill((pid_t)pid, 0) != 0 ?
        errno != ESRCH : 1) || flock(sfd, LOCK_EX | LOCK_NB) != 0) {
        close(sfd);
        return;
    }
    if ((fd = dup(sfd)) >= 0 && (d = fdopendir(fd)) != NULL) {
        while ((fe = readdir(d)) != NULL)
            if (fstatat(sfd, fe->d_name, &fst, AT_SYMLINK_NOFOLLOW) == 0 &&
                S_ISREG(fst.st_mode))
                bytes += (uint64_t)fst.st_size;
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    v->found++;
    if (v->fn != NULL)
        v->fn(v->ctx, name, bytes, (int64_t)(time(NULL) - st.st_mtime));
    if (v->remove)
        volstage_remove_stage(parentfd, name, sfd);
    else
        close(sfd);
}

int
volstage_sweep_stale(int parentfd, int remove, volstage_stale_fn *fn,
    void *ctx)
{
    struct vs_stale v = { remove, fn, ctx, 0 };

    volstage_each_stage(parentfd, volstage_stale_one, &v);
    return v.found;
}

int
volstage_parent(struct volstage *s, const char *rel, int *pfd,
    const char **base)
{
    return dest_writer_parent(&s->w, rel, pfd, base);
}

int
volstage_leave(struct volstage *s, const char *rel)
{
    int r;

    while (s->ndirs > 0) {
        struct dest_write_meta *d = &s->dirs[s->ndirs - 1];
        size_t n = strlen(d->path);

        if (rel != NULL && strncmp(rel, d->path, n) == 0 && rel[n] == '/')
            break;
        if ((r = dest_writer_dir(&s->w, d)) != 0)
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
    char name[VS_NAME_MAX];
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
    const char *path, uint64_t size, int whole)
{
    char name[VS_NAME_MAX];

    f->key = s->next_key++;
    f->size = size;
    f->done = 0;
    f->fill = 0;
    if ((f->path = xstrdup(path)) == NULL)
        return FERRY_ERR_NOMEM;
    if (f->blk == NULL && (f->blk = xmalloc(s->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    f->behind = whole && size <= DEST_WRITE_BEHIND_MAX &&
        size <= s->block_size;
    if (f->behind)
        return 0;
    volstage_key_name(f->key, name);
    f->fd = openat(s->stagefd, name, O_RDWR | O_CREAT | O_EXCL |
        O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f->fd < 0)
        return -errno;
    if (size != VOLSTAGE_UNKNOWN &&
        (f->hf = hash_file_new(size, s->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    return 0;
}

/* Writes the buffered block and folds it into the hash; a file written
 * behind keeps its bytes for the writer. */
static int
volstage_file_drain(struct volstage_file *f)
{
    struct hash128 bh;
    int r;

    if (f->fill == 0 || f->behind)
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

    if (f->size != VOLSTAGE_UNKNOWN && n > f->size - f->done)
        return FERRY_ERR_TOO_LARGE;
    /* Whole blocks, so each is hashed as the sender hashed it (a file
     * written behind fits one). */
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

    if (f->behind)
        return hash_mem(f->blk, f->fill, s->block_size, out);
    if ((r = volstage_file_drain(f)) != 0)
        return r;
    if (f->hf != NULL) {
        hash_file_final(f->hf, out);
        return 0;
    }
    return hash_fd(f->fd, f->done, s->block_size, out);
}

int
volstage_file_done(struct volstage *s, struct volstage_file *f)
{
    struct dest_write_file n;
    char name[VS_NAME_MAX];
    int r;

    if ((r = volstage_file_drain(f)) != 0)
        return r;
    if (!f->behind && (r = dest_write_seal(f->fd, f->mode, f->mtime_sec,
        f->mtime_nsec)) != 0)
        return r;
    memset(&n, 0, sizeof(n));
    volstage_key_name(f->key, name);
    n.path = f->path;
    n.size = f->done;
    /* The writer takes the path and name, and a small file's bytes. */
    if ((n.name = xstrdup(name)) == NULL)
        return FERRY_ERR_NOMEM;
    if (f->behind)
        r = dest_writer_put(&s->w, &n, f->blk, f->mode, f->mtime_sec,
            f->mtime_nsec);
    else
        r = dest_writer_stage(&s->w, &n);
    if (r != 0) {
        xfree(n.name);
        return r;
    }
    f->behind = 0;
    f->fill = 0;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    f->path = NULL;
    hash_file_free(f->hf);
    f->hf = NULL;
    return 0;
}

int
volstage_symlink(struct volstage *s, const char *rel, const char *target,
    int64_t mtime_sec, uint32_t mtime_nsec)
{
    const char *base;
    char name[VS_NAME_MAX];
    int r, pfd;

    if ((r = volstage_parent(s, rel, &pfd, &base)) != 0)
        return r;
    volstage_key_name(s->next_key++, name);
    return dest_write_symlink(s->stagefd, name, target, mtime_sec,
        mtime_nsec, pfd, base);
}

int
volstage_dir(struct volstage *s, const char *rel, uint32_t mode,
    int64_t mtime_sec, uint32_t mtime_nsec)
{
    struct dest_write_meta d;
    int r, fd;

    if ((r = fsx_open_dir(s->rootfd, rel, 1, &fd)) != 0)
        return r;
    close(fd);
    memset(&d, 0, sizeof(d));
    d.mode = mode;
    d.mtime_sec = mtime_sec;
    d.mtime_nsec = mtime_nsec;
    if ((d.path = xstrdup(rel)) == NULL ||
        (r = dest_write_meta_push(&s->dirs, &s->ndirs, &s->ndirs_cap,
        &d)) != 0) {
        xfree(d.path);
        return FERRY_ERR_NOMEM;
    }
    return 0;
}
