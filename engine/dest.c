#include "dest_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"

#include "owned.h"
#include "prune.h"


struct dest *
dest_new(const char *path, uint32_t flags, const uint8_t transfer_id[16],
    struct xfer *x)
{
    struct dest *d = xcalloc(1, sizeof(*d));

    if (d == NULL)
        return NULL;
    if ((d->path = xstrdup(path)) == NULL) {
        xfree(d);
        return NULL;
    }
    d->x = x;
    d->flags = flags;
    memcpy(d->transfer_id, transfer_id, 16);
    d->rootfd = d->statefd = d->partfd = d->lockfd = -1;
    dest_writer_init(&d->w, -1, -1);
    d->basis_dirfd = -1;
    return d;
}

void
dest_tidy(struct dest *d)
{
    struct stat st;

    if (d->statefd < 0)
        return;
    if (d->partfd >= 0)
        close(d->partfd);
    d->partfd = -1;
    dest_writer_at(&d->w, d->rootfd, -1);
    if (unlinkat(d->statefd, DEST_PART_DIR, AT_REMOVEDIR) == 0 ||
        errno == ENOENT) {
        (void)unlinkat(d->statefd, DEST_SALT, 0);
        (void)unlinkat(d->statefd, DEST_LOCK, 0);
        /* The record of what ferry put here outlives the transfer, and
         * the marker with it, so that a scan of this tree still skips
         * .ferry. */
        if (fstatat(d->statefd, OWNED_FILE, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            (void)unlinkat(d->statefd, DEST_MARKER, 0);
            (void)unlinkat(d->rootfd, DEST_STATE_DIR, AT_REMOVEDIR);
        }
    }
    close(d->statefd);
    d->statefd = -1;
}

/* A transfer that failed before anything was put into the destination
 * it made leaves no trace of it: the directories dest_resolve made go
 * again, from the root up, while they are empty (rmdir fails on one that
 * holds anything, and the walk stops there). */
static void
dest_unmake(struct dest *d)
{
    struct xfer_stats *st = &d->x->st;
    size_t ml;
    char *p;

    if (d->made == NULL || (xfer_get(&st->failed_source) == 0 &&
        xfer_get(&st->failed_dest) == 0 && d->x->local_error[0] == '\0' &&
        d->x->peer_error[0] == '\0') || (p = xstrdup(d->root)) == NULL)
        return;
    ml = strlen(d->made);
    while (rmdir(p) == 0 && strlen(p) > ml && strrchr(p, '/') != NULL)
        *strrchr(p, '/') = '\0';
    xfree(p);
}

void
dest_free(struct dest *d)
{
    size_t i;

    if (d == NULL)
        return;
    /* Whatever arrived stays, with its journal, for the next run. */
    for (i = 0; i < d->w.batch.nfiles; i++) {
        struct dest_staged *s = d->w.batch.files[i].owner;

        partial_close(s->pt, d->partfd, PARTIAL_KEEP);
        xfree(s);
    }
    dest_writer_cleanup(&d->w);
    dest_tidy(d);
    if (d->lockfd >= 0)
        close(d->lockfd);  /* releases the flock */
    dest_unmake(d);
    dest_write_meta_free(d->dirs, d->ndirs);
    if (d->rootfd >= 0)
        close(d->rootfd);
    if (d->basis_dirfd >= 0)
        close(d->basis_dirfd);
    xfree(d->root);
    xfree(d->made);
    xfree(d->rename);
    xfree(d->basis);
    xfree(d->adopt);
    xfree(d->path);
    xfree(d);
}

uint32_t
dest_flags(const struct dest *d)
{
    return d->flags;
}

void
dest_add_flags(struct dest *d, uint32_t flags)
{
    d->flags |= flags;
}

int
dest_set_basis(struct dest *d, const char *rel)
{
    int r;

    if ((r = fsx_path_check(rel, strlen(rel))) != 0)
        return r;
    xfree(d->basis);
    return (d->basis = xstrdup(rel)) == NULL ? FERRY_ERR_NOMEM : 0;
}

const char *
dest_basis(const struct dest *d)
{
    return d->basis;
}

int
dest_set_basis_dir(struct dest *d, const char *dir)
{
    if (d->basis_dirfd >= 0)
        close(d->basis_dirfd);
    d->basis_dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
        O_CLOEXEC);
    if (d->basis_dirfd < 0)
        log_info("%s: not a basis directory: %s", dir, strerror(errno));
    return 0;
}

int
dest_basis_dir_fd(const struct dest *d)
{
    return d->basis_dirfd;
}

int
dest_root_fd(const struct dest *d)
{
    return d->resolved ? d->rootfd : -1;
}

const char *
dest_root(const struct dest *d)
{
    return d->root != NULL ? d->root : d->path;
}

const uint8_t *
dest_salt(const struct dest *d)
{
    return d->salt;
}

int
dest_parent(struct dest *d, const char *path, int *pfd, const char **name)
{
    return dest_writer_parent(&d->w, path, pfd, name);
}

static int
dest_same_mtime(const struct stat *st, const struct msg_entry *m)
{
    return st->st_mtim.tv_sec == m->mtime_sec &&
        (uint32_t)st->st_mtim.tv_nsec == m->mtime_nsec;
}

/* A directory at name in pfd where the sources send a file or a link:
 * with REPLACE_DIRS (--delete) it goes, with what it holds (never through
 * a symlink); else the entry fails with -EISDIR. */
static int
dest_dir_in_way(struct dest *d, int pfd, const char *name)
{
    if (!(d->flags & OPEN_F_REPLACE_DIRS))
        return -EISDIR;
    return prune_beneath(pfd, name);
}

/* dest_file_current without --adopt; *pfd and *name say where path is
 * (when it does not fail). */
static int
dest_file_same(struct dest *d, const struct msg_entry *m, const char *path,
    uint32_t block_size, int *pfdp, const char **namep)
{
    struct hash128 h;
    const char *name;
    struct stat st;
    int r, pfd, fd, same = 0;

    if ((r = dest_parent(d, path, &pfd, &name)) != 0)
        return r;
    *pfdp = pfd;
    *namep = name;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (S_ISDIR(st.st_mode))
        return (r = dest_dir_in_way(d, pfd, name)) != 0 ? r : 0;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->size)
        return 0;
    if (d->flags & OPEN_F_CHECKSUM) {
        fd = openat(pfd, name, FSX_O_READ);
        if (fd >= 0 && m->has_hash &&
            hash_fd(fd, m->size, block_size, &h) == 0)
            same = hash_equal(&h, &m->hash);
        if (fd >= 0)
            close(fd);
    } else {
        same = dest_same_mtime(&st, m);
    }
    if (!same)
        return 0;
    /* Up to date, but the mode (or with --checksum the mtime) may
     * differ: fix those in place. */
    if ((st.st_mode & 07777) != m->mode)
        (void)fchmodat(pfd, name, m->mode, 0);
    if (!dest_same_mtime(&st, m))
        (void)fsx_set_mtime(-1, pfd, name, m->mtime_sec, m->mtime_nsec);
    return 1;
}

int
dest_file_current(struct dest *d, const struct msg_entry *m,
    const char *path, uint32_t block_size)
{
    const char *name;
    int r, pfd;

    r = dest_file_same(d, m, path, block_size, &pfd, &name);
    if (r != 0 || d->adopt == NULL)
        return r;
    return dest_adopt(d, m, path, block_size, pfd, name) ? DEST_ADOPTED :
        0;
}

int
dest_make_dir(struct dest *d, const struct msg_entry *m, const char *path)
{
    struct dest_write_meta dd;
    const char *name;
    struct stat st;
    int r, pfd;

    if ((r = dest_parent(d, path, &pfd, &name)) != 0)
        return r;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        !S_ISDIR(st.st_mode) && unlinkat(pfd, name, 0) != 0)
        return -errno;
    /* Owner rwx until the end, so the contents can be written even into
     * a directory that will be read-only. */
    if (mkdirat(pfd, name, (m->mode | 0700) & 07777) != 0 &&
        errno != EEXIST)
        return -errno;
    memset(&dd, 0, sizeof(dd));
    dd.mode = m->mode;
    dd.mtime_sec = m->mtime_sec;
    dd.mtime_nsec = m->mtime_nsec;
    if ((dd.path = xstrdup(path)) == NULL ||
        dest_write_meta_push(&d->dirs, &d->ndirs, &d->dirs_cap, &dd) != 0) {
        xfree(dd.path);
        return FERRY_ERR_NOMEM;
    }
    return 0;
}

int
dest_make_symlink(struct dest *d, const struct msg_entry *m,
    const char *path)
{
    char target[PROTO_MAX_LINK + 1], cur[PROTO_MAX_LINK + 1];
    char key[PARTIAL_KEY_LEN + 1], tmp[PARTIAL_KEY_LEN + 8];
    const char *name;
    struct stat st;
    ssize_t n;
    int r, pfd, partfd;

    memcpy(target, m->target.p, m->target.len);
    target[m->target.len] = '\0';
    if ((r = dest_parent(d, path, &pfd, &name)) != 0)
        return r;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode) &&
            (r = dest_dir_in_way(d, pfd, name)) != 0)
            return r;
        if (S_ISLNK(st.st_mode) &&
            (n = readlinkat(pfd, name, cur, sizeof(cur) - 1)) >= 0 &&
            (size_t)n == m->target.len &&
            memcmp(cur, target, (size_t)n) == 0) {
            if (!dest_same_mtime(&st, m))
                (void)fsx_set_mtime(-1, pfd, name, m->mtime_sec,
                    m->mtime_nsec);
            return 0;
        }
    }
    if ((r = dest_part_dir(d, &partfd)) != 0)
        return r;
    /* Made under a temporary name, then renamed over whatever is there:
     * the final name is never missing nor half made. */
    partial_key(d->salt, path, key);
    snprintf(tmp, sizeof(tmp), "%s.lnk", key);
    return dest_write_symlink(partfd, tmp, target, m->mtime_sec,
        m->mtime_nsec, pfd, name);
}

int
dest_fatal_errno(int r)
{
    return r == -ENOSPC || r == -EDQUOT || r == -EROFS || r == -EIO ||
        r == -EFBIG || r == -EBUSY || r == FERRY_ERR_STATE;
}

int
dest_stage(struct dest *d, struct dest_staged *s)
{
    struct dest_write_file f;
    struct dest_staged *own;

    memset(&f, 0, sizeof(f));
    if ((own = xmalloc(sizeof(*own))) == NULL)
        return FERRY_ERR_NOMEM;
    *own = *s;
    f.path = s->path;
    f.size = s->size;
    f.owner = own;
    if ((f.name = xstrdup(partial_name(s->pt))) == NULL ||
        dest_writer_stage(&d->w, &f) != 0) {
        xfree(f.name);
        xfree(own);
        return FERRY_ERR_NOMEM;
    }
    memset(s, 0, sizeof(*s));
    return 0;
}

int
dest_batch_full(const struct dest *d)
{
    return dest_writer_full(&d->w);
}

int
dest_batch_len(const struct dest *d)
{
    return (int)d->w.batch.nfiles;
}

struct dest_flush_ctx {
    struct dest *d;
    dest_done_fn *done;
    void *ctx;
    int told;               /* done was called */
};

/* A file of the batch is in place (or failed): the caller is told while
 * its staged file is still open, then it is closed. */
static int
dest_committed(void *ctx, struct dest_write_file *f)
{
    struct dest_flush_ctx *c = ctx;
    struct dest_staged *s = f->owner;
    int r;

    c->told = 1;
    s->failed = f->failed;
    r = c->done(c->ctx, s);
    partial_close(s->pt, c->d->partfd, s->failed ? PARTIAL_DISCARD :
        PARTIAL_DONE);
    xfree(s);
    return r;
}

int
dest_flush(struct dest *d, dest_done_fn *done, void *ctx)
{
    struct dest_flush_ctx c = { d, done, ctx, 0 };
    int r;

    if (d->w.batch.nfiles == 0 && d->adopt_unsynced > 0) {
        /* Adopted names durable before the end is said. */
        d->adopt_unsynced = 0;
#ifdef __linux__
        if (syncfs(d->rootfd) != 0)
            return xfer_fail(d->x, -errno, "%s: sync: %s", d->root,
                strerror(errno));
#endif
        return 0;
    }
    if (d->w.batch.nfiles == 0)
        return 0;
    r = dest_writer_commit(&d->w, 0, dest_committed, &c);
    /* A sync fails before anyone is told, and stops the transfer. */
    if (r != 0 && !c.told)
        return xfer_fail(d->x, r, "%s: sync: %s", d->root,
            ferry_strerror(r));
    return r;
}

void
dest_fix_dirs(struct dest *d)
{
    size_t i;

    dest_writer_forget(&d->w);
    for (i = d->ndirs; i-- > 0;)
        dest_write_dir_fix(d->rootfd, &d->dirs[i]);
}

void
dest_restart(struct dest *d)
{
    size_t i;

    for (i = 0; i < d->ndirs; i++)
        xfree(d->dirs[i].path);
    d->ndirs = 0;
    dest_writer_forget(&d->w);
}

