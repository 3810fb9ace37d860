#include "dest_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "behind.h"

static void dest_write_parent_close(struct dest_write_parent *c);

int
dest_write_meta_push(struct dest_write_meta **v, size_t *n, size_t *cap,
    const struct dest_write_meta *m)
{
    struct dest_write_meta *nv;

    if ((nv = xgrow(*v, *n, cap, sizeof(*nv), 64)) == NULL)
        return FERRY_ERR_NOMEM;
    *v = nv;
    (*v)[(*n)++] = *m;
    return 0;
}

void
dest_write_meta_free(struct dest_write_meta *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        xfree(v[i].path);
    xfree(v);
}

static int
dest_write_batch_add(struct dest_write_batch *b,
    const struct dest_write_file *f)
{
    struct dest_write_file *nv;

    if ((nv = xgrow(b->files, b->nfiles, &b->files_cap, sizeof(*nv),
        64)) == NULL)
        return FERRY_ERR_NOMEM;
    b->files = nv;
    b->files[b->nfiles++] = *f;
    b->bytes += f->size;
    return 0;
}

static int
dest_write_batch_full(const struct dest_write_batch *b)
{
    return b->nfiles + b->ndirs >= DEST_WRITE_BATCH_FILES ||
        b->bytes >= DEST_WRITE_BATCH_BYTES;
}

static void
dest_write_batch_free(struct dest_write_batch *b)
{
    size_t i;

    for (i = 0; i < b->nfiles; i++) {
        xfree(b->files[i].path);
        xfree(b->files[i].name);
    }
    xfree(b->files);
    dest_write_meta_free(b->dirs, b->ndirs);
    memset(b, 0, sizeof(*b));
}

/*
 * Opens the version that the commit of name in pfd replaces, when freeing
 * it would cost the commit: a regular file of DEST_WRITE_RELEASE_MIN
 * bytes or more on disk, with no other name. -1 when there is none to
 * hold.
 */
static int
dest_write_hold_old(int pfd, const char *name)
{
    struct stat st, fst;
    int fd;

    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
        (uint64_t)st.st_blocks * 512 < DEST_WRITE_RELEASE_MIN ||
        (fd = openat(pfd, name, FSX_O_READ)) < 0)
        return -1;
    if (fstat(fd, &fst) != 0 || fst.st_ino != st.st_ino ||
        fst.st_dev != st.st_dev) {
        close(fd);
        return -1;
    }
    return fd;
}

void
dest_write_dir_fix(int rootfd, const struct dest_write_meta *d)
{
    int fd;

    if (fsx_open_dir(rootfd, d->path, 0, &fd) != 0)
        return;
    (void)fchmod(fd, d->mode);
    (void)fsx_set_mtime(fd, -1, NULL, d->mtime_sec, d->mtime_nsec);
    close(fd);
}

static void
dest_write_parent_init(struct dest_write_parent *c)
{
    c->fd = -1;
    c->path = NULL;
}

static int
dest_write_parent(int rootfd, struct dest_write_parent *c, const char *rel,
    int *pfd, const char **base)
{
    const char *slash = strrchr(rel, '/');
    size_t plen = slash != NULL ? (size_t)(slash - rel) : 0;
    char *path;
    int r, fd;

    if (c->path != NULL && strlen(c->path) == plen &&
        memcmp(c->path, rel, plen) == 0) {
        *pfd = c->fd;
        *base = slash != NULL ? slash + 1 : rel;
        return 0;
    }
    if ((path = xstrndup(rel, plen)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = fsx_open_parent(rootfd, rel, 1, &fd, base)) != 0) {
        xfree(path);
        return r;
    }
    dest_write_parent_close(c);
    c->fd = fd;
    c->path = path;
    *pfd = fd;
    return 0;
}

static void
dest_write_parent_close(struct dest_write_parent *c)
{
    if (c->fd >= 0)
        close(c->fd);
    xfree(c->path);
    dest_write_parent_init(c);
}

/* For a staged file whose metadata stays as made: where there is no
 * syncfs its own fsync (elsewhere the commit's sync covers it). */
static int dest_write_durable(int fd) FERRY_WUR;

int
dest_write_seal(int fd, uint32_t mode, int64_t mtime_sec,
    uint32_t mtime_nsec)
{
    int r;

    if (fchmod(fd, mode) != 0)
        return -errno;
    if ((r = fsx_set_mtime(fd, -1, NULL, mtime_sec, mtime_nsec)) != 0)
        return r;
    return dest_write_durable(fd);
}

static int
dest_write_durable(int fd)
{
#ifdef __linux__
    (void)fd;
    return 0;
#else
    return fsx_fsync(fd);
#endif
}

static int
dest_write_sync(int stagefd, int rootfd)
{
#ifdef __linux__
    /* One syncfs for a batch of files costs one journal commit instead
     * of one per file. */
    (void)rootfd;
    return syncfs(stagefd) == 0 ? 0 : -errno;
#else
    (void)stagefd;
    return fsx_fsync(rootfd);
#endif
}

int
dest_write_symlink(int stagefd, const char *tmp, const char *target,
    int64_t mtime_sec, uint32_t mtime_nsec, int pfd, const char *name)
{
    int r;

    (void)unlinkat(stagefd, tmp, 0);
    if (symlinkat(target, stagefd, tmp) != 0)
        return -errno;
    (void)fsx_set_mtime(-1, stagefd, tmp, mtime_sec, mtime_nsec);
    if (renameat(stagefd, tmp, pfd, name) != 0) {
        r = -errno;
        (void)unlinkat(stagefd, tmp, 0);
        return r;
    }
    return 0;
}

/* The first half of a commit (dest_writer_commit): sync, renames (each
 * file's result in f->failed), sync, the directories' metadata. 0, or
 * the error of a sync. */
static int
dest_write_apply(struct dest_write_batch *b, int rootfd, int stagefd,
    struct dest_write_parent *pc)
{
    int old[FSX_DETACH_MAX];
    const char *base;
    size_t i, nold = 0;
    int r, pfd, fd;

    if (b->nfiles > 0 && (r = dest_write_sync(stagefd, rootfd)) != 0)
        return r;
    for (i = 0; i < b->nfiles; i++) {
        struct dest_write_file *f = &b->files[i];

        r = dest_write_parent(rootfd, pc, f->path, &pfd, &base);
        if (r == 0 && nold < FSX_DETACH_MAX &&
            (fd = dest_write_hold_old(pfd, base)) >= 0)
            old[nold++] = fd;
        if (r == 0 && renameat(stagefd, f->name, pfd, base) != 0)
            r = -errno;
        f->failed = r;
    }
    /* The old versions' pages and blocks are freed in the background,
     * not in the renames. */
    fsx_close_detached(old, nold);
    if (b->nfiles > 0 && (r = dest_write_sync(stagefd, rootfd)) != 0)
        return r;
    for (i = 0; i < b->ndirs; i++)
        dest_write_dir_fix(rootfd, &b->dirs[i]);
    return 0;
}

int
dest_write_one(int dirfd, int fd, const char *tmp, const char *name)
{
    struct dest_write_file f = { (char *)name, (char *)tmp, 0, 0, NULL };
    struct dest_write_batch b = { &f, 1, 1, 0, NULL, 0, 0 };
    struct dest_write_parent pc;
    int r = dest_write_durable(fd);

    if (close(fd) != 0 && r == 0)
        r = -errno;
    if (r != 0)
        return r;
    dest_write_parent_init(&pc);
    r = dest_write_apply(&b, dirfd, dirfd, &pc);
    dest_write_parent_close(&pc);
    return r != 0 ? r : f.failed;
}

/* The second half: each file is told, even after a failure (the caller
 * frees what it keeps with the file), then the batch goes. The first
 * error done returned. */
static int
dest_write_tell(struct dest_write_batch *b, dest_write_done_fn *done,
    void *ctx)
{
    size_t i;
    int r = 0, rd;

    for (i = 0; i < b->nfiles; i++)
        if ((rd = done(ctx, &b->files[i])) != 0 && r == 0)
            r = rd;
    dest_write_batch_free(b);
    return r;
}

/* A job of the thread: a file to write (its bytes at ring[off, off +
 * f.size)) or a batch to commit. */
struct dest_write_job {
    int commit;
    struct dest_write_file f;       /* path borrowed from the batch */
    size_t off;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    struct dest_write_batch b;
    dest_write_done_fn *done;
    void *ctx;
    char *failed;                   /* the path it failed on (a copy) */
};

/* Creates, writes and seals a staged file of n bytes. */
static int
dest_write_file_now(int stagefd, const char *name, const void *data,
    size_t n, uint32_t mode, int64_t mtime_sec, uint32_t mtime_nsec)
{
    int fd, r;

    fd = openat(stagefd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
        O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if ((r = fsx_write_all(fd, data, n)) == 0)
        r = dest_write_seal(fd, mode, mtime_sec, mtime_nsec);
    close(fd);
    return r;
}

/* On the thread: it reads only what was set before it was made, its
 * job (with the job's ring bytes), and its own parent cache. After a
 * failure the owner drops what follows (dest_writer_poll). */
static int
dest_write_job_run(void *ctx, void *job, int failed)
{
    struct dest_writer *w = ctx;
    struct dest_write_job *j = job;
    int r;

    if (failed)
        return 0;
    if (j->commit)
        return dest_write_apply(&j->b, w->rootfd, w->stagefd, &w->wb_pc);
    if ((r = dest_write_file_now(w->stagefd, j->f.name, w->ring + j->off,
        (size_t)j->f.size, j->mode, j->mtime_sec, j->mtime_nsec)) != 0)
        j->failed = xstrdup(j->f.path);
    return r;
}

static void
dest_write_job_clean(void *job)
{
    struct dest_write_job *j = job;

    dest_write_batch_free(&j->b);
    xfree(j->failed);
    j->failed = NULL;
}

void
dest_writer_init(struct dest_writer *w, int rootfd, int stagefd)
{
    memset(w, 0, sizeof(*w));
    w->rootfd = rootfd;
    w->stagefd = stagefd;
    dest_write_parent_init(&w->pc);
    dest_write_parent_init(&w->wb_pc);
}

void
dest_writer_set_waker(struct dest_writer *w, struct waker *wk)
{
    w->wake = wk;
}

void
dest_writer_cleanup(struct dest_writer *w)
{
    const char *failed;

    (void)dest_writer_poll(w, 0, &failed);
    behind_free(w->wb, dest_write_job_clean);
    w->wb = NULL;
    dest_write_parent_close(&w->wb_pc);
    dest_write_parent_close(&w->pc);
    dest_write_batch_free(&w->batch);
    xfree(w->ring);
    xfree(w->failed);
    w->ring = NULL;
    w->failed = NULL;
}

void
dest_writer_at(struct dest_writer *w, int rootfd, int stagefd)
{
    if (rootfd != w->rootfd)
        dest_write_parent_close(&w->pc);
    w->rootfd = rootfd;
    w->stagefd = stagefd;
}

void
dest_writer_forget(struct dest_writer *w)
{
    dest_write_parent_close(&w->pc);
}

int
dest_writer_parent(struct dest_writer *w, const char *rel, int *pfd,
    const char **base)
{
    return dest_write_parent(w->rootfd, &w->pc, rel, pfd, base);
}

int
dest_writer_stage(struct dest_writer *w, const struct dest_write_file *f)
{
    return dest_write_batch_add(&w->batch, f);
}

int
dest_writer_dir(struct dest_writer *w, const struct dest_write_meta *m)
{
    return dest_write_meta_push(&w->batch.dirs, &w->batch.ndirs,
        &w->batch.dirs_cap, m);
}

int
dest_writer_full(const struct dest_writer *w)
{
    return dest_write_batch_full(&w->batch);
}

/* The thread, made on first use; NULL when it cannot be. */
static struct behind *
dest_writer_thread(struct dest_writer *w)
{
    if (w->wb != NULL || w->wb_off)
        return w->wb;
    if ((w->ring = xmalloc(DEST_WRITE_RING)) == NULL ||
        (w->wb = behind_new(DEST_WRITE_JOBS, sizeof(struct dest_write_job),
        dest_write_job_run, w)) == NULL) {
        xfree(w->ring);
        w->ring = NULL;
        w->wb_off = 1;
    }
    return w->wb;
}

/* The owner's side of a job the thread has done, in order. */
static void
dest_writer_retire(struct dest_writer *w, struct dest_write_job *j, int r)
{
    if (r != 0 && w->err == 0) {
        w->err = r;
        w->failed = j->failed;
        j->failed = NULL;
    }
    if (j->commit)
        w->commits--;
    if (j->commit && w->err == 0 &&
        (r = dest_write_tell(&j->b, j->done, j->ctx)) != 0)
        w->err = r;
    dest_write_job_clean(j);
}

int
dest_writer_poll(struct dest_writer *w, int wait, const char **failed)
{
    struct dest_write_job *j;
    int r;

    while (w->wb != NULL && (j = behind_done(w->wb, wait, &r)) != NULL) {
        dest_writer_retire(w, j, r);
        behind_retire(w->wb);
    }
    *failed = w->err != 0 ? w->failed : NULL;
    return w->err;
}

int
dest_writer_pending(struct dest_writer *w)
{
    const char *failed;

    (void)dest_writer_poll(w, 0, &failed);
    return w->commits > 0;
}

/* Where len bytes can go in the ring without touching a file still
 * waiting for the thread. */
static int
dest_writer_room(struct dest_writer *w, size_t len, size_t *off)
{
    size_t lo;

    if (behind_next(w->wb) == NULL)
        return 0;
    if (behind_count(w->wb) == 0) {
        *off = 0;
        return 1;
    }
    lo = ((const struct dest_write_job *)behind_job(w->wb, 0))->off;
    if (w->head >= lo) {
        if (DEST_WRITE_RING - w->head >= len) {
            *off = w->head;
            return 1;
        }
        *off = 0;
        return len < lo;
    }
    *off = w->head;
    return w->head + len < lo;
}

/* Queues a job, with len bytes of data for a file; waits for room (the
 * oldest jobs are retired meanwhile). A commit wakes the owner's loop
 * once done: it answers for its files. */
static void
dest_writer_queue(struct dest_writer *w, const struct dest_write_job *in,
    const void *data, size_t len)
{
    struct dest_write_job *j;
    size_t off;
    int r;

    while (!dest_writer_room(w, len, &off)) {
        j = behind_done(w->wb, 1, &r);
        dest_writer_retire(w, j, r);
        behind_retire(w->wb);
    }
    if (len > 0)
        memcpy(w->ring + off, data, len);
    w->head = off + len;
    j = behind_next(w->wb);
    *j = *in;
    j->off = off;
    if (j->commit)
        w->commits++;
    behind_queue_waking(w->wb, j->commit ? w->wake : NULL);
}

int
dest_writer_put(struct dest_writer *w, const struct dest_write_file *f,
    const void *data, uint32_t mode, int64_t mtime_sec, uint32_t mtime_nsec)
{
    struct dest_write_job j;
    const char *failed;
    int r;

    if (f->size > DEST_WRITE_BEHIND_MAX)
        return FERRY_ERR_TOO_LARGE;
    if ((r = dest_writer_poll(w, 0, &failed)) != 0)
        return r;
    if (dest_writer_thread(w) == NULL &&
        (r = dest_write_file_now(w->stagefd, f->name, data,
        (size_t)f->size, mode, mtime_sec, mtime_nsec)) != 0)
        return r;
    if ((r = dest_write_batch_add(&w->batch, f)) != 0 || w->wb == NULL)
        return r;
    memset(&j, 0, sizeof(j));
    j.f = *f;
    j.mode = mode;
    j.mtime_sec = mtime_sec;
    j.mtime_nsec = mtime_nsec;
    dest_writer_queue(w, &j, data, (size_t)f->size);
    return 0;
}

int
dest_writer_commit(struct dest_writer *w, int behind,
    dest_write_done_fn *done, void *ctx)
{
    struct dest_write_job j;
    struct dest_write_batch b;
    const char *failed;
    int r;

    if (w->batch.nfiles + w->batch.ndirs == 0)
        return dest_writer_poll(w, 0, &failed);
    if (behind && w->wb != NULL) {
        if ((r = dest_writer_poll(w, 0, &failed)) != 0)
            return r;
        memset(&j, 0, sizeof(j));
        j.commit = 1;
        j.b = w->batch;
        j.done = done;
        j.ctx = ctx;
        memset(&w->batch, 0, sizeof(w->batch));
        dest_writer_queue(w, &j, NULL, 0);
        return 0;
    }
    /* Files written behind are complete before they are renamed. */
    if ((r = dest_writer_poll(w, 1, &failed)) != 0)
        return r;
    if ((r = dest_write_apply(&w->batch, w->rootfd, w->stagefd,
        &w->pc)) != 0)
        return r;
    /* Told with the batch empty: a caller may stage the next. */
    b = w->batch;
    memset(&w->batch, 0, sizeof(w->batch));
    return dest_write_tell(&b, done, ctx);
}
