#include "volstage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"

static void vs_behind_free(struct volstage *s);
static void vs_parent_close(int *cfd, char **cpath);

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
    if (s->stagefd < 0)
        return -errno;
    /* Held while the stage lives: volstage_sweep_stale leaves it alone,
     * even from another machine of a shared file system, where the pid
     * in the name says nothing. */
    (void)flock(s->stagefd, LOCK_EX | LOCK_NB);
    return 0;
}

void
volstage_cleanup(struct volstage *s)
{
    struct dirent *de;
    DIR *d;
    int fd;

    vs_behind_free(s);
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
    vs_parent_close(&s->pfd, &s->ppath);
    xfree(s->failed);
    volstage_names_free(s->batch, s->nbatch);
    volstage_names_free(s->dirs, s->ndirs);
    volstage_names_free(s->fix, s->nfix);
    s->failed = NULL;
    s->batch = s->dirs = s->fix = NULL;
    s->nbatch = s->ndirs = s->nfix = 0;
}

/* Removes the staging directory name in parentfd, opened as sfd (taken):
 * staged files only (names are counters), no deeper tree. */
static void
vs_remove_stage(int parentfd, const char *name, int sfd)
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
vs_each_stage(int parentfd, void (*fn)(int, const char *, int, void *),
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
vs_sweep_one(int parentfd, const char *name, int sfd, void *ctx)
{
    (void)ctx;
    vs_remove_stage(parentfd, name, sfd);
}

void
volstage_sweep(int parentfd)
{
    vs_each_stage(parentfd, vs_sweep_one, NULL);
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
vs_stage_pid(const char *name)
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
vs_stale_one(int parentfd, const char *name, int sfd, void *ctx)
{
    struct vs_stale *v = ctx;
    struct dirent *fe;
    struct stat st, fst;
    uint64_t bytes = 0;
    long pid = vs_stage_pid(name);
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
        vs_remove_stage(parentfd, name, sfd);
    else
        close(sfd);
}

int
volstage_sweep_stale(int parentfd, int remove, volstage_stale_fn *fn,
    void *ctx)
{
    struct vs_stale v = { remove, fn, ctx, 0 };

    vs_each_stage(parentfd, vs_stale_one, &v);
    return v.found;
}

/* Opens the parent of rel beneath rootfd, making missing directories,
 * through a one-entry cache (*cfd, *cpath): each thread that opens
 * parents has its own. */
static int
vs_parent_open(int rootfd, int *cfd, char **cpath, const char *rel,
    int *pfd, const char **base)
{
    const char *slash = strrchr(rel, '/');
    size_t plen = slash != NULL ? (size_t)(slash - rel) : 0;
    int r, fd;

    if (*cfd >= 0 && strlen(*cpath) == plen &&
        memcmp(*cpath, rel, plen) == 0) {
        *pfd = *cfd;
        *base = slash != NULL ? slash + 1 : rel;
        return 0;
    }
    if ((r = fsx_open_parent(rootfd, rel, 1, &fd, base)) != 0)
        return r;
    if (*cfd >= 0)
        close(*cfd);
    xfree(*cpath);
    if ((*cpath = xstrndup(rel, plen)) == NULL) {
        close(fd);
        *cfd = -1;
        return FERRY_ERR_NOMEM;
    }
    *cfd = fd;
    *pfd = fd;
    return 0;
}

static void
vs_parent_close(int *cfd, char **cpath)
{
    if (*cfd >= 0)
        close(*cfd);
    *cfd = -1;
    xfree(*cpath);
    *cpath = NULL;
}

int
volstage_parent(struct volstage *s, const char *rel, int *pfd,
    const char **base)
{
    return vs_parent_open(s->rootfd, &s->pfd, &s->ppath, rel, pfd, base);
}

static int
vs_sync(int rootfd, int stagefd)
{
#ifdef __linux__
    (void)rootfd;
    return syncfs(stagefd) == 0 ? 0 : -errno;
#else
    (void)stagefd;
    return fsx_fsync(rootfd);
#endif
}

/* A batch to commit: staged files and the directories left. */
struct vs_batch {
    struct volstage_name *files, *dirs;
    size_t nfiles, ndirs;
};

static void
vs_batch_free(struct vs_batch *b)
{
    volstage_names_free(b->files, b->nfiles);
    volstage_names_free(b->dirs, b->ndirs);
    memset(b, 0, sizeof(*b));
}

/* Commits a batch: one syncfs for the files' data, the renames, one
 * syncfs for them; then the directories left get their mode and mtime,
 * deepest first (their files are in place by then). On failure the
 * staged files are removed and *failed is the path it failed on (a copy,
 * or NULL for a sync). Frees the batch. */
static int
vs_batch_commit(int rootfd, int stagefd, int *cfd, char **cpath,
    struct vs_batch *b, char **failed)
{
    const char *base;
    char name[24];
    size_t i;
    int r = 0, pfd, fd;

    *failed = NULL;
    if (b->nfiles > 0)
        r = vs_sync(rootfd, stagefd);
    for (i = 0; i < b->nfiles && r == 0; i++) {
        struct volstage_name *n = &b->files[i];

        volstage_key_name(n->key, name);
        if ((r = vs_parent_open(rootfd, cfd, cpath, n->path, &pfd,
            &base)) == 0 && renameat(stagefd, name, pfd, base) != 0)
            r = -errno;
        if (r != 0)
            *failed = xstrdup(n->path);
    }
    if (r == 0 && b->nfiles > 0)
        r = vs_sync(rootfd, stagefd);
    for (i = 0; r != 0 && i < b->nfiles; i++) {
        volstage_key_name(b->files[i].key, name);
        (void)unlinkat(stagefd, name, 0);
    }
    for (i = 0; r == 0 && i < b->ndirs; i++) {
        struct volstage_name *d = &b->dirs[i];

        if (fsx_open_dir(rootfd, d->path, 0, &fd) == 0) {
            (void)fchmod(fd, d->mode);
            (void)fsx_set_mtime(fd, -1, NULL, d->mtime_sec, d->mtime_nsec);
            close(fd);
        }
    }
    vs_batch_free(b);
    return r;
}

/* A job of the writer behind: a file (its bytes at ring[off, off + len))
 * or a batch to commit. */
struct vs_job {
    int commit;
    uint64_t key;
    const char *path;       /* the batch's, which a later job frees */
    size_t off, len;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    struct vs_batch b;
};

struct volstage_behind {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int rootfd, stagefd;
    int pfd;                /* the writer's parent cache */
    char *ppath;
    uint8_t *ring;
    size_t head;            /* where the next file's bytes go */
    struct vs_job job[VOLSTAGE_BEHIND_JOBS];
    /* Jobs by number: [done, queued) for the writer. */
    uint64_t done, queued;
    uint64_t committed;     /* files it put in place */
    int err;                /* its first failure: it does nothing more */
    char *failed;           /* ... and the path (or NULL) */
    atomic_int failing;     /* err is set (read without the lock) */
    int stop;
};

/* A staged file's data is all written: its mode and mtime, and where
 * syncfs is missing its own fsync (the commit's syncfs does it here). */
static int
vs_file_seal(int fd, uint32_t mode, int64_t mtime_sec, uint32_t mtime_nsec)
{
    (void)fchmod(fd, mode);
    (void)fsx_set_mtime(fd, -1, NULL, mtime_sec, mtime_nsec);
#ifndef __linux__
    return fsx_fsync(fd);
#else
    return 0;
#endif
}

/* What volstage_file_done does in place for a file. */
static int
vs_job_write(int stagefd, const struct vs_job *j, const uint8_t *data)
{
    char name[24];
    int fd, r;

    volstage_key_name(j->key, name);
    fd = openat(stagefd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
        O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if ((r = fsx_write_all(fd, data, j->len)) == 0)
        r = vs_file_seal(fd, j->mode, j->mtime_sec, j->mtime_nsec);
    close(fd);
    return r;
}

static void *
vs_behind_main(void *arg)
{
    struct volstage_behind *wb = arg;
    struct vs_job *j;
    char *failed = NULL;
    uint64_t n;
    int r;

    pthread_mutex_lock(&wb->mu);
    for (;;) {
        while (!wb->stop && wb->done == wb->queued)
            pthread_cond_wait(&wb->cv, &wb->mu);
        if (wb->done == wb->queued)
            break;
        /* The reader leaves this job (and its bytes) alone until done
         * passes it. */
        j = &wb->job[wb->done % VOLSTAGE_BEHIND_JOBS];
        r = wb->err;
        pthread_mutex_unlock(&wb->mu);
        n = j->commit ? j->b.nfiles : 0;
        if (r != 0) {
            vs_batch_free(&j->b);  /* failed before: the rest is swept */
            r = 0;
        } else if (j->commit) {
            r = vs_batch_commit(wb->rootfd, wb->stagefd, &wb->pfd,
                &wb->ppath, &j->b, &failed);
        } else {
            if ((r = vs_job_write(wb->stagefd, j, wb->ring + j->off)) != 0)
                failed = xstrdup(j->path);
        }
        pthread_mutex_lock(&wb->mu);
        if (r == 0 && wb->err == 0) {
            wb->committed += n;
        } else if (r != 0 && wb->err == 0) {
            wb->err = r;
            wb->failed = failed;
            failed = NULL;
            atomic_store(&wb->failing, 1);
        }
        xfree(failed);
        failed = NULL;
        wb->done++;
        pthread_cond_broadcast(&wb->cv);
    }
    pthread_mutex_unlock(&wb->mu);
    return NULL;
}

/* The writer, made on first use; NULL when it cannot be (files are then
 * written in place). */
static struct volstage_behind *
vs_behind_get(struct volstage *s)
{
    struct volstage_behind *wb = s->wb;

    if (wb != NULL || s->wb_off)
        return wb;
    if ((wb = xcalloc(1, sizeof(*wb))) == NULL ||
        (wb->ring = xmalloc(VOLSTAGE_BEHIND_RING)) == NULL) {
        xfree(wb);
        s->wb_off = 1;
        return NULL;
    }
    wb->rootfd = s->rootfd;
    wb->stagefd = s->stagefd;
    wb->pfd = -1;
    atomic_init(&wb->failing, 0);
    pthread_mutex_init(&wb->mu, NULL);
    pthread_cond_init(&wb->cv, NULL);
    if (pthread_create(&wb->th, NULL, vs_behind_main, wb) != 0) {
        pthread_mutex_destroy(&wb->mu);
        pthread_cond_destroy(&wb->cv);
        xfree(wb->ring);
        xfree(wb);
        s->wb_off = 1;
        return NULL;
    }
    s->wb = wb;
    return wb;
}

/* Where len bytes can go in the ring without touching a file still
 * waiting for the writer (locked). */
static int
vs_behind_room(const struct volstage_behind *wb, size_t len, size_t *off)
{
    size_t lo;

    if (wb->queued - wb->done >= VOLSTAGE_BEHIND_JOBS)
        return 0;
    if (wb->done == wb->queued) {
        *off = 0;
        return 1;
    }
    lo = wb->job[wb->done % VOLSTAGE_BEHIND_JOBS].off;
    if (wb->head >= lo) {
        if (VOLSTAGE_BEHIND_RING - wb->head >= len) {
            *off = wb->head;
            return 1;
        }
        *off = 0;
        return len < lo;
    }
    *off = wb->head;
    return wb->head + len < lo;
}

/* Queues a job, with len bytes of data for a file; waits for room. */
static void
vs_behind_queue(struct volstage_behind *wb, struct vs_job *in,
    const uint8_t *data)
{
    size_t off;

    pthread_mutex_lock(&wb->mu);
    while (!vs_behind_room(wb, in->len, &off))
        pthread_cond_wait(&wb->cv, &wb->mu);
    pthread_mutex_unlock(&wb->mu);
    /* Only this thread queues: the room found stays free. */
    if (in->len > 0)
        memcpy(wb->ring + off, data, in->len);
    wb->head = off + in->len;
    in->off = off;
    pthread_mutex_lock(&wb->mu);
    wb->job[wb->queued % VOLSTAGE_BEHIND_JOBS] = *in;
    wb->queued++;
    pthread_cond_broadcast(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
}

/* Stops the writer once it has done what was queued: files complete
 * before a reader stopped are committed, as they would have been had it
 * committed them itself. */
static void
vs_behind_free(struct volstage *s)
{
    struct volstage_behind *wb = s->wb;

    if (wb == NULL)
        return;
    pthread_mutex_lock(&wb->mu);
    wb->stop = 1;
    pthread_cond_broadcast(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
    pthread_join(wb->th, NULL);
    pthread_mutex_destroy(&wb->mu);
    pthread_cond_destroy(&wb->cv);
    vs_parent_close(&wb->pfd, &wb->ppath);
    xfree(wb->failed);
    xfree(wb->ring);
    xfree(wb);
    s->wb = NULL;
}

static void
volstage_failed(struct volstage *s, const char *path)
{
    xfree(s->failed);
    s->failed = path != NULL ? xstrdup(path) : NULL;
}

int
volstage_error(struct volstage *s, const char **failed)
{
    struct volstage_behind *wb = s->wb;
    int r;

    *failed = NULL;
    if (wb == NULL || !atomic_load(&wb->failing))
        return 0;
    pthread_mutex_lock(&wb->mu);
    r = wb->err;
    volstage_failed(s, wb->failed);
    pthread_mutex_unlock(&wb->mu);
    *failed = s->failed;
    return r;
}

int
volstage_pending(struct volstage *s)
{
    int busy;

    if (s->wb == NULL)
        return 0;
    pthread_mutex_lock(&s->wb->mu);
    busy = s->wb->done != s->wb->queued;
    pthread_mutex_unlock(&s->wb->mu);
    return busy;
}

uint64_t
volstage_committed(struct volstage *s)
{
    uint64_t n = s->committed;

    if (s->wb != NULL) {
        pthread_mutex_lock(&s->wb->mu);
        n += s->wb->committed;
        pthread_mutex_unlock(&s->wb->mu);
    }
    return n;
}

/* The batch so far, handed over (the stage starts a new one). */
static void
vs_batch_take(struct volstage *s, struct vs_batch *b)
{
    b->files = s->batch;
    b->nfiles = s->nbatch;
    b->dirs = s->fix;
    b->ndirs = s->nfix;
    s->batch = s->fix = NULL;
    s->nbatch = s->nbatch_cap = s->nfix = s->nfix_cap = 0;
    s->batch_bytes = 0;
}

int
volstage_commit_behind(struct volstage *s, const char **failed)
{
    struct vs_job j;
    char *fpath;
    size_t n;
    int r;

    if ((r = volstage_error(s, failed)) != 0)
        return r;
    memset(&j, 0, sizeof(j));
    vs_batch_take(s, &j.b);
    n = j.b.nfiles;
    if (s->wb != NULL) {
        if (j.b.nfiles + j.b.ndirs > 0) {
            j.commit = 1;
            vs_behind_queue(s->wb, &j, NULL);
        }
        return 0;
    }
    if ((r = vs_batch_commit(s->rootfd, s->stagefd, &s->pfd, &s->ppath,
        &j.b, &fpath)) == 0) {
        s->committed += n;
        return 0;
    }
    xfree(s->failed);
    s->failed = fpath;
    *failed = s->failed;
    return r;
}

int
volstage_commit(struct volstage *s, const char **failed)
{
    int r;

    if ((r = volstage_commit_behind(s, failed)) != 0 || s->wb == NULL)
        return r;
    pthread_mutex_lock(&s->wb->mu);
    while (s->wb->done != s->wb->queued)
        pthread_cond_wait(&s->wb->cv, &s->wb->mu);
    pthread_mutex_unlock(&s->wb->mu);
    return volstage_error(s, failed);
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
    const char *path, uint64_t size, int whole)
{
    char name[24];

    f->key = s->next_key++;
    f->size = size;
    f->done = 0;
    f->fill = 0;
    if ((f->path = xstrdup(path)) == NULL)
        return FERRY_ERR_NOMEM;
    if (f->blk == NULL && (f->blk = xmalloc(s->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    f->behind = whole && size <= VOLSTAGE_BEHIND_MAX &&
        size <= s->block_size && vs_behind_get(s) != NULL;
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
volstage_file_done(struct volstage *s, struct volstage_file *f,
    const char **failed)
{
    struct volstage_name n;
    struct vs_job j;
    int r;

    *failed = NULL;
    if ((r = volstage_file_drain(f)) != 0)
        return r;
    if (!f->behind && (r = vs_file_seal(f->fd, f->mode, f->mtime_sec,
        f->mtime_nsec)) != 0)
        return r;
    memset(&n, 0, sizeof(n));
    n.key = f->key;
    n.path = f->path;
    if ((r = volstage_push(&s->batch, &s->nbatch, &s->nbatch_cap, &n)) != 0)
        return r;
    if (f->behind) {
        memset(&j, 0, sizeof(j));
        j.key = f->key;
        j.path = f->path;
        j.len = f->fill;
        j.mode = f->mode;
        j.mtime_sec = f->mtime_sec;
        j.mtime_nsec = f->mtime_nsec;
        vs_behind_queue(s->wb, &j, f->blk);
        f->behind = 0;
        f->fill = 0;
    }
    s->batch_bytes += f->done;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    f->path = NULL;
    hash_file_free(f->hf);
    f->hf = NULL;
    if (s->nbatch + s->nfix >= VOLSTAGE_BATCH_FILES ||
        s->batch_bytes >= VOLSTAGE_BATCH_BYTES)
        return volstage_commit_behind(s, failed);
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
