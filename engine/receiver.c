#include "receiver.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/zst.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "partial.h"
#include "pathset.h"

#define RECEIVER_PART_DIR PARTIAL_PART_DIR
#define RECEIVER_MARKER PARTIAL_MARKER

enum rcv_state { RCV_WAIT_PLAN, RCV_RUN, RCV_DONE };

/* A wanted file from REPLY WANT until its commit. */
struct rfile {
    uint32_t id;
    char *path;
    uint64_t size;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    uint64_t next_off;
    uint64_t resume_off;   /* where the sender was asked to start */
    uint64_t written_end;  /* the part file's length so far */
    int resume_counted;    /* resume_off is in resumed_bytes */
    int started;           /* a block or FILE_END has come */
    int failed;            /* first local error; the rest is ignored */
    struct hash_file *hf;
    struct partial *pt;    /* the part file and journal, once open */
};

struct rdir {
    char *path;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
};

struct receiver {
    struct xfer *x;
    char *dest;
    uint32_t flags;
    uint32_t block_size;
    enum rcv_state state;
    char *root;            /* resolved destination directory */
    char *rename;          /* new name of a single file, or NULL */
    int rootfd, statefd, partfd;
    uint32_t next_id;      /* ENTRY ids only go up */
    uint64_t received;     /* entries over this connection */
    uint64_t entries_total;
    int planned;           /* the destination is resolved */
    /* Over the connections of one run: files finished (not counted
     * again as up to date after a reconnect) and files wanted (a resume
     * of what this run sent is not counted as resumed). */
    struct pathset done, wanted;
    /* Wanted files in the order their data will come. */
    struct rfile *fifo;
    size_t fifo_head, fifo_len, fifo_cap;
    /* Files whose data is complete, waiting for the batch commit. */
    struct rfile *batch;
    size_t batch_len, batch_cap;
    uint64_t batch_bytes;
    struct rdir *dirs;
    size_t ndirs, dirs_cap;
    /* The parent directory most recently opened. */
    char *pc_path;
    int pc_fd;
    struct msg_summary sum;
    int state_checked;     /* looked for an existing state directory */
    struct zst *zst;       /* for compressed blocks */
    uint8_t *scratch;      /* one block, inflated */
    char **tops;           /* accepted top-level names; NULL: any */
    size_t ntops;
};

struct receiver *
receiver_new(const char *dest, uint32_t flags, uint32_t block_size,
    struct xfer *x)
{
    struct receiver *rc = xcalloc(1, sizeof(*rc));

    if (rc == NULL)
        return NULL;
    if ((rc->dest = xstrdup(dest)) == NULL) {
        xfree(rc);
        return NULL;
    }
    rc->x = x;
    rc->flags = flags;
    rc->block_size = block_size;
    rc->rootfd = rc->statefd = rc->partfd = rc->pc_fd = -1;
    return rc;
}

int
receiver_expect_tops(struct receiver *rc, const char *const *names,
    size_t n)
{
    size_t i;

    if (n == 0)
        return 0;
    if ((rc->tops = xcalloc(n, sizeof(*rc->tops))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < n; i++) {
        if ((rc->tops[i] = xstrdup(names[i])) == NULL)
            return FERRY_ERR_NOMEM;
        rc->ntops = i + 1;
    }
    return 0;
}

/* 1 if path is under a top-level name we asked for. */
static int
receiver_requested(const struct receiver *rc, const char *path)
{
    size_t n = strcspn(path, "/"), i;

    if (rc->tops == NULL)
        return 1;
    if (rc->rename != NULL)
        return strlen(rc->rename) == n && memcmp(rc->rename, path, n) == 0;
    for (i = 0; i < rc->ntops; i++)
        if (strlen(rc->tops[i]) == n && memcmp(rc->tops[i], path, n) == 0)
            return 1;
    return 0;
}

const char *
receiver_root(const struct receiver *rc)
{
    return rc->root != NULL ? rc->root : rc->dest;
}

/* Ends a wanted file's life here: its partial kept for a resume, thrown
 * away, or done (renamed into place). */
static void
rfile_end(struct receiver *rc, struct rfile *f, enum partial_end how)
{
    partial_close(f->pt, rc->partfd, how);
    f->pt = NULL;
    hash_file_free(f->hf);
    f->hf = NULL;
    xfree(f->path);
    f->path = NULL;
}

/* Removes the state directory if nothing in it is worth keeping. */
static void
receiver_tidy_state(struct receiver *rc)
{
    if (rc->statefd < 0)
        return;
    if (rc->partfd >= 0)
        close(rc->partfd);
    rc->partfd = -1;
    if (unlinkat(rc->statefd, RECEIVER_PART_DIR, AT_REMOVEDIR) == 0 ||
        errno == ENOENT) {
        (void)unlinkat(rc->statefd, RECEIVER_MARKER, 0);
        (void)unlinkat(rc->rootfd, RECEIVER_STATE_DIR, AT_REMOVEDIR);
    }
    close(rc->statefd);
    rc->statefd = -1;
}

void
receiver_free(struct receiver *rc)
{
    size_t i;

    if (rc == NULL)
        return;
    /* Whatever arrived stays, with its journal, for the next run to
     * resume; none of it has a final name. */
    for (i = 0; i < rc->fifo_len; i++)
        rfile_end(rc, &rc->fifo[(rc->fifo_head + i) % rc->fifo_cap],
            PARTIAL_KEEP);
    for (i = 0; i < rc->batch_len; i++)
        rfile_end(rc, &rc->batch[i], PARTIAL_KEEP);
    receiver_tidy_state(rc);
    for (i = 0; i < rc->ndirs; i++)
        xfree(rc->dirs[i].path);
    for (i = 0; i < rc->ntops; i++)
        xfree(rc->tops[i]);
    xfree(rc->tops);
    pathset_free(&rc->done);
    pathset_free(&rc->wanted);
    zst_free(rc->zst);
    xfree(rc->scratch);
    if (rc->pc_fd >= 0)
        close(rc->pc_fd);
    if (rc->rootfd >= 0)
        close(rc->rootfd);
    xfree(rc->pc_path);
    xfree(rc->fifo);
    xfree(rc->batch);
    xfree(rc->dirs);
    xfree(rc->root);
    xfree(rc->rename);
    xfree(rc->dest);
    xfree(rc);
}

/* Errors that make every later write fail too: stop the transfer. */
static int
receiver_fatal_errno(int r)
{
    return r == -ENOSPC || r == -EDQUOT || r == -EROFS || r == -EIO ||
        r == -EFBIG;
}

static int receiver_find_state(struct receiver *rc);

static int
receiver_open_state(struct receiver *rc)
{
    int fd, r;

    if (rc->partfd >= 0)
        return 0;
    if (receiver_find_state(rc))
        return 0;
    if (mkdirat(rc->rootfd, RECEIVER_STATE_DIR, 0700) != 0 &&
        errno != EEXIST)
        goto fail;
    rc->statefd = openat(rc->rootfd, RECEIVER_STATE_DIR,
        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rc->statefd < 0)
        goto fail;
    fd = openat(rc->statefd, RECEIVER_MARKER,
        O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        goto fail;
    close(fd);
    if (mkdirat(rc->statefd, RECEIVER_PART_DIR, 0700) != 0 &&
        errno != EEXIST)
        goto fail;
    rc->partfd = openat(rc->statefd, RECEIVER_PART_DIR,
        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rc->partfd < 0)
        goto fail;
    return 0;
fail:
    r = -errno;
    return xfer_fail(rc->x, r, "%s/%s: %s", rc->root, RECEIVER_STATE_DIR,
        ferry_strerror(r));
}

/* Opens an existing state directory (never makes one). Returns 1 if
 * there is one. The first time, partials past their expiry go. */
static int
receiver_find_state(struct receiver *rc)
{
    struct partial_info *v;
    size_t n;
    int sfd, pfd;

    if (rc->partfd >= 0)
        return 1;
    if (rc->state_checked)
        return 0;
    rc->state_checked = 1;
    sfd = openat(rc->rootfd, RECEIVER_STATE_DIR,
        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0)
        return 0;
    pfd = openat(sfd, RECEIVER_PART_DIR,
        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0) {
        close(sfd);
        return 0;
    }
    rc->statefd = sfd;
    rc->partfd = pfd;
    if (partial_list(pfd, 1, &v, &n) == 0)
        partial_list_free(v, n);
    return 1;
}

/* Opens (and caches) the parent directory of path. */
static int
receiver_parent(struct receiver *rc, const char *path, int *pfd,
    const char **name)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = slash == NULL ? 0 : (size_t)(slash - path);
    char *dir;
    int r, fd;

    *name = slash == NULL ? path : slash + 1;
    if (rc->pc_path != NULL && strlen(rc->pc_path) == dlen &&
        memcmp(rc->pc_path, path, dlen) == 0) {
        *pfd = rc->pc_fd;
        return 0;
    }
    if ((dir = xstrndup(path, dlen)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = fsx_open_dir(rc->rootfd, dir, 1, &fd)) != 0) {
        xfree(dir);
        return r;
    }
    if (rc->pc_fd >= 0)
        close(rc->pc_fd);
    xfree(rc->pc_path);
    rc->pc_path = dir;
    rc->pc_fd = fd;
    *pfd = fd;
    return 0;
}

static void
receiver_forget_parent(struct receiver *rc)
{
    if (rc->pc_fd >= 0)
        close(rc->pc_fd);
    rc->pc_fd = -1;
    xfree(rc->pc_path);
    rc->pc_path = NULL;
}

static int
reply(struct buf *out, uint32_t id, uint8_t action, int code)
{
    struct msg_reply m;
    const char *text = code != 0 ? ferry_strerror(code) : "";

    memset(&m, 0, sizeof(m));
    m.id = id;
    m.action = action;
    m.code = proto_err_to_wire(code);
    m.text.p = text;
    m.text.len = strlen(text);
    return msg_reply_encode(out, &m);
}

static int
reply_want(struct buf *out, uint32_t id, uint64_t offset,
    const struct hash128 *prefix)
{
    struct msg_reply m;

    memset(&m, 0, sizeof(m));
    m.id = id;
    m.action = REPLY_WANT;
    m.offset = offset;
    m.prefix = *prefix;
    m.text.p = "";
    return msg_reply_encode(out, &m);
}

static int
file_done(struct buf *out, uint32_t id, int code)
{
    struct msg_file_done m;
    const char *text = code != 0 ? ferry_strerror(code) : "";

    memset(&m, 0, sizeof(m));
    m.id = id;
    m.code = proto_err_to_wire(code);
    m.text.p = text;
    m.text.len = strlen(text);
    return msg_file_done_encode(out, &m);
}

/* Resolves the destination from the sender's plan (rsync's rules: a
 * single file may be given a new name, anything else goes into DEST). */
static int
receiver_on_plan(struct receiver *rc, const struct frame *f,
    struct buf *out)
{
    struct msg_plan plan;
    struct msg_ready ready;
    struct stat st;
    char *dir = NULL, *base = NULL;
    int r, single, is_dir = 0;

    if ((r = msg_plan_decode(f->payload, f->len, &plan)) != 0)
        return r;
    rc->entries_total = plan.entries_total;
    if (rc->planned) {
        /* A new connection of the same run: same destination. */
        memset(&ready, 0, sizeof(ready));
        if (rc->rename != NULL) {
            ready.rename.p = rc->rename;
            ready.rename.len = strlen(rc->rename);
        }
        rc->state = RCV_RUN;
        return msg_ready_encode(out, &ready);
    }
    xfer_add(&rc->x->st.entries_total, plan.entries_total);
    xfer_add(&rc->x->st.files_total, plan.files_total);
    xfer_add(&rc->x->st.bytes_total, plan.bytes_total);
    single = (plan.flags & PLAN_F_SINGLE_FILE) &&
        !(rc->flags & OPEN_F_DEST_DIR);
    if (stat(rc->dest, &st) == 0)
        is_dir = S_ISDIR(st.st_mode);
    else if (errno != ENOENT)
        return xfer_fail(rc->x, -errno, "%s: %s", rc->dest,
            ferry_strerror(-errno));
    if (!is_dir && single) {
        if ((r = fsx_split(rc->dest, &dir, &base)) != 0)
            return r;
        if (fsx_path_check(base, strlen(base)) != 0 ||
            strcmp(base, RECEIVER_STATE_DIR) == 0) {
            r = xfer_fail(rc->x, FERRY_ERR_BAD_PATH, "%s: %s", rc->dest,
                "invalid file name");
            goto out;
        }
        rc->root = dir;
        rc->rename = base;
        dir = base = NULL;
    } else if ((rc->root = xstrdup(rc->dest)) == NULL) {
        return FERRY_ERR_NOMEM;
    }
    if ((r = fsx_mkdir_p(rc->root, 0755)) != 0) {
        r = xfer_fail(rc->x, r, "%s: %s", rc->root, ferry_strerror(r));
        goto out;
    }
    rc->rootfd = open(rc->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rc->rootfd < 0) {
        r = -errno;
        r = xfer_fail(rc->x, r, "%s: %s", rc->root, ferry_strerror(r));
        goto out;
    }
    /* Fail now, not after the first file, if we cannot write here. */
    if (faccessat(rc->rootfd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        r = -errno;
        r = xfer_fail(rc->x, r, "%s: %s", rc->root, ferry_strerror(r));
        goto out;
    }
    memset(&ready, 0, sizeof(ready));
    if (rc->rename != NULL) {
        ready.rename.p = rc->rename;
        ready.rename.len = strlen(rc->rename);
    }
    if ((r = msg_ready_encode(out, &ready)) != 0)
        goto out;
    rc->state = RCV_RUN;
    rc->planned = 1;
out:
    xfree(dir);
    xfree(base);
    return r;
}

static int
receiver_top_is_state(const char *path)
{
    size_t n = strlen(RECEIVER_STATE_DIR);

    return strncmp(path, RECEIVER_STATE_DIR, n) == 0 &&
        (path[n] == '\0' || path[n] == '/');
}

static int
receiver_same_mtime(const struct stat *st, const struct msg_entry *m)
{
    return st->st_mtim.tv_sec == m->mtime_sec &&
        (uint32_t)st->st_mtim.tv_nsec == m->mtime_nsec;
}

/* An up-to-date file may still differ in mode (or, with --checksum, in
 * mtime): fix those in place. */
static void
receiver_fix_meta(int pfd, const char *name, const struct stat *st,
    const struct msg_entry *m)
{
    if ((st->st_mode & 07777) != m->mode)
        (void)fchmodat(pfd, name, m->mode, 0);
    if (!receiver_same_mtime(st, m))
        (void)fsx_set_mtime(-1, pfd, name, m->mtime_sec, m->mtime_nsec);
}

static int
receiver_want(struct receiver *rc, const struct msg_entry *m,
    const char *path, uint64_t *offset, struct hash128 *prefix)
{
    struct rfile *f;

    *offset = 0;
    memset(prefix, 0, sizeof(*prefix));
    if (rc->fifo_len >= RECEIVER_MAX_PENDING)
        return FERRY_ERR_PROTOCOL;
    if (rc->fifo_len == rc->fifo_cap) {
        size_t ncap = rc->fifo_cap ? rc->fifo_cap * 2 : 64, i;
        struct rfile *nv = xcalloc(ncap, sizeof(*nv));

        if (nv == NULL)
            return FERRY_ERR_NOMEM;
        for (i = 0; i < rc->fifo_len; i++)
            nv[i] = rc->fifo[(rc->fifo_head + i) % rc->fifo_cap];
        xfree(rc->fifo);
        rc->fifo = nv;
        rc->fifo_cap = ncap;
        rc->fifo_head = 0;
    }
    f = &rc->fifo[(rc->fifo_head + rc->fifo_len) % rc->fifo_cap];
    memset(f, 0, sizeof(*f));
    if ((f->path = xstrdup(path)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((f->hf = hash_file_new(m->size, rc->block_size)) == NULL) {
        xfree(f->path);
        return FERRY_ERR_NOMEM;
    }
    f->id = m->id;
    f->size = m->size;
    f->mode = m->mode;
    f->mtime_sec = m->mtime_sec;
    f->mtime_nsec = m->mtime_nsec;
    rc->fifo_len++;
    /* What an earlier run left of this very version of the file. */
    if ((rc->x->caps & PROTO_CAP_RESUME) && m->size > 0 &&
        receiver_find_state(rc)) {
        struct partial_id id = { f->path, f->size, f->mtime_sec,
            f->mtime_nsec, f->mode, rc->block_size };
        uint64_t blocks = partial_probe(rc->partfd, &id, f->hf, prefix);

        if (blocks > 0) {
            f->resume_off = blocks * (uint64_t)rc->block_size;
            if (f->resume_off > f->size)
                f->resume_off = f->size;
            f->next_off = f->written_end = f->resume_off;
        }
    }
    f->resume_counted = 1;
    *offset = f->resume_off;
    return 0;
}

/* An entry we cannot make: the transfer stops if every later write would
 * fail too, else this entry fails and the rest goes on. */
static int
receiver_entry_failed(struct receiver *rc, const struct msg_entry *m,
    const char *path, int r, struct buf *out)
{
    if (receiver_fatal_errno(r))
        return xfer_fail(rc->x, r, "%s: %s", path, ferry_strerror(r));
    if (r == FERRY_ERR_NOMEM)
        return r;
    xfer_problem(rc->x, SIDE_DEST, path, r, NULL);
    xfer_add(&rc->x->st.bytes_done, m->size);
    rc->sum.files_failed++;
    return reply(out, m->id, REPLY_FAIL, r);
}

static int
receiver_entry_file(struct receiver *rc, const struct msg_entry *m,
    const char *path, struct buf *out)
{
    struct hash128 h, prefix;
    const char *name;
    struct stat st;
    uint64_t off;
    int r, pfd, fd;

    if ((r = receiver_parent(rc, path, &pfd, &name)) != 0)
        goto fail;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode)) {
            r = -EISDIR;
            goto fail;
        }
        if (S_ISREG(st.st_mode) && (uint64_t)st.st_size == m->size) {
            int same = 0;

            if (rc->flags & OPEN_F_CHECKSUM) {
                fd = openat(pfd, name, FSX_O_READ);
                if (fd >= 0 && m->has_hash &&
                    hash_fd(fd, m->size, rc->block_size, &h) == 0)
                    same = hash_equal(&h, &m->hash);
                if (fd >= 0)
                    close(fd);
            } else {
                same = receiver_same_mtime(&st, m);
            }
            if (same) {
                receiver_fix_meta(pfd, name, &st, m);
                rc->sum.files_skipped++;
                if (pathset_add(&rc->done, path)) {
                    xfer_add(&rc->x->st.files_skipped, 1);
                    xfer_add(&rc->x->st.bytes_done, m->size);
                    xfer_file(rc->x, path, "skipped", m->size);
                }
                return reply(out, m->id, REPLY_SKIP, 0);
            }
        }
    } else if (errno != ENOENT) {
        r = -errno;
        goto fail;
    }
    if ((r = receiver_want(rc, m, path, &off, &prefix)) != 0)
        return r;
    xfer_add(&rc->x->st.bytes_payload, m->size);
    xfer_add(&rc->x->st.bytes_done, off);
    if (pathset_add(&rc->wanted, path)) {
        /* Data from an earlier run; a reconnect's resume point is data
         * this run sent, counted as literal already. */
        xfer_add(&rc->x->st.resumed_bytes, off);
        xfer_add(&rc->x->st.bytes_matched, off);
    } else {
        rc->fifo[(rc->fifo_head + rc->fifo_len - 1) %
            rc->fifo_cap].resume_counted = 0;
    }
    return reply_want(out, m->id, off, &prefix);
fail:
    return receiver_entry_failed(rc, m, path, r, out);
}

static int
receiver_entry_dir(struct receiver *rc, const struct msg_entry *m,
    const char *path, struct buf *out)
{
    const char *name;
    struct stat st;
    struct rdir *d;
    int r, pfd;

    if ((r = receiver_parent(rc, path, &pfd, &name)) != 0)
        goto fail;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (!S_ISDIR(st.st_mode) && unlinkat(pfd, name, 0) != 0) {
            r = -errno;
            goto fail;
        }
    }
    /* Owner rwx until the end, so the contents can be written even into
     * a directory that will be read-only. */
    if (mkdirat(pfd, name, (m->mode | 0700) & 07777) != 0 &&
        errno != EEXIST) {
        r = -errno;
        goto fail;
    }
    if (rc->ndirs == rc->dirs_cap) {
        size_t ncap = rc->dirs_cap ? rc->dirs_cap * 2 : 64;
        struct rdir *nv = xrealloc(rc->dirs, ncap * sizeof(*nv));

        if (nv == NULL)
            return FERRY_ERR_NOMEM;
        rc->dirs = nv;
        rc->dirs_cap = ncap;
    }
    d = &rc->dirs[rc->ndirs];
    if ((d->path = xstrdup(path)) == NULL)
        return FERRY_ERR_NOMEM;
    d->mode = m->mode;
    d->mtime_sec = m->mtime_sec;
    d->mtime_nsec = m->mtime_nsec;
    rc->ndirs++;
    return reply(out, m->id, REPLY_SKIP, 0);
fail:
    return receiver_entry_failed(rc, m, path, r, out);
}

static int
receiver_entry_symlink(struct receiver *rc, const struct msg_entry *m,
    const char *path, struct buf *out)
{
    char target[PROTO_MAX_LINK + 1], cur[PROTO_MAX_LINK + 1], tmp[32];
    const char *name;
    struct stat st;
    ssize_t n;
    int r, pfd;

    memcpy(target, m->target.p, m->target.len);
    target[m->target.len] = '\0';
    if ((r = receiver_parent(rc, path, &pfd, &name)) != 0)
        goto fail;
    if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode)) {
            r = -EISDIR;
            goto fail;
        }
        if (S_ISLNK(st.st_mode) &&
            (n = readlinkat(pfd, name, cur, sizeof(cur) - 1)) >= 0 &&
            (size_t)n == m->target.len &&
            memcmp(cur, target, (size_t)n) == 0) {
            if (!receiver_same_mtime(&st, m))
                (void)fsx_set_mtime(-1, pfd, name, m->mtime_sec,
                    m->mtime_nsec);
            return reply(out, m->id, REPLY_SKIP, 0);
        }
    }
    if ((r = receiver_open_state(rc)) != 0)
        return r;
    /* Made under a temporary name, then renamed over whatever is there:
     * the final name is never missing nor half made. */
    snprintf(tmp, sizeof(tmp), "%016llx.lnk",
        (unsigned long long)hash_name64(path, strlen(path)));
    (void)unlinkat(rc->partfd, tmp, 0);
    if (symlinkat(target, rc->partfd, tmp) != 0) {
        r = -errno;
        goto fail;
    }
    (void)fsx_set_mtime(-1, rc->partfd, tmp, m->mtime_sec, m->mtime_nsec);
    if (renameat(rc->partfd, tmp, pfd, name) != 0) {
        r = -errno;
        (void)unlinkat(rc->partfd, tmp, 0);
        goto fail;
    }
    return reply(out, m->id, REPLY_SKIP, 0);
fail:
    return receiver_entry_failed(rc, m, path, r, out);
}

static int
receiver_on_entry(struct receiver *rc, const struct frame *f,
    struct buf *out)
{
    char path[PROTO_MAX_PATH + 1];
    struct msg_entry m;
    int r;

    if ((r = msg_entry_decode(f->payload, f->len, &m)) != 0)
        return r;
    /* Ids only go up; a sender that resumes a transfer leaves out what
     * it finished before. */
    if (m.id < rc->next_id || rc->received >= rc->entries_total)
        return FERRY_ERR_PROTOCOL;
    rc->next_id = m.id + 1;
    rc->received++;
    /* setuid and setgid bits are not taken from the other side. */
    m.mode &= 01777;
    memcpy(path, m.path.p, m.path.len);
    path[m.path.len] = '\0';
    if (!receiver_requested(rc, path)) {
        /* Not ours to take; a well-behaved sender never does this. */
        return xfer_fail(rc->x, FERRY_ERR_PROTOCOL,
            "peer sent an entry that was not requested");
    }
    if (receiver_top_is_state(path)) {
        xfer_problem(rc->x, SIDE_DEST, path, FERRY_ERR_BAD_PATH,
            "name reserved for ferry's state");
        rc->sum.files_failed++;
        return reply(out, m.id, REPLY_FAIL, FERRY_ERR_BAD_PATH);
    }
    switch (m.kind) {
    case ENTRY_FILE:
        return receiver_entry_file(rc, &m, path, out);
    case ENTRY_DIR:
        return receiver_entry_dir(rc, &m, path, out);
    default:
        return receiver_entry_symlink(rc, &m, path, out);
    }
}

static struct rfile *
receiver_head(struct receiver *rc, uint32_t id)
{
    if (rc->fifo_len == 0)
        return NULL;
    if (rc->fifo[rc->fifo_head].id != id)
        return NULL;
    return &rc->fifo[rc->fifo_head];
}

static int
receiver_open_partial(struct receiver *rc, struct rfile *f)
{
    struct partial_id id = { f->path, f->size, f->mtime_sec, f->mtime_nsec,
        f->mode, rc->block_size };
    uint64_t blocks = (f->resume_off + rc->block_size - 1) / rc->block_size;
    int r;

    if (f->pt != NULL)
        return 0;
    if ((r = receiver_open_state(rc)) != 0)
        return r;
    return partial_open(rc->partfd, &id, blocks, &f->pt);
}

/* The sender did not accept our resume point (its data differs from
 * what we have): start this file over, and take back the progress the
 * resume had counted. */
static int
receiver_restart_file(struct receiver *rc, struct rfile *f)
{
    struct hash_file *hf = hash_file_new(f->size, rc->block_size);
    int r;

    if (hf == NULL)
        return FERRY_ERR_NOMEM;
    hash_file_free(f->hf);
    f->hf = hf;
    if (f->resume_counted) {
        xfer_sub(&rc->x->st.resumed_bytes, f->resume_off);
        xfer_sub(&rc->x->st.bytes_matched, f->resume_off);
    }
    xfer_sub(&rc->x->st.bytes_done, f->resume_off);
    f->resume_off = f->next_off = f->written_end = 0;
    if (f->pt != NULL && (r = partial_reset(f->pt)) != 0)
        return r;
    return 0;
}

/* A local write error: fatal if it would hit every file, else the file
 * fails and its remaining data is ignored. */
static int
receiver_file_error(struct receiver *rc, struct rfile *f, int r)
{
    if (receiver_fatal_errno(r))
        return xfer_fail(rc->x, r, "%s/%s: %s", rc->root, f->path,
            ferry_strerror(r));
    if (r == FERRY_ERR_NOMEM)
        return r;
    if (f->failed == 0)
        f->failed = r;
    return 0;
}

static int
receiver_on_block(struct receiver *rc, const struct frame *f)
{
    struct msg_block m;
    struct rfile *rf;
    struct hash128 h;
    uint64_t left;
    int r;

    if ((r = msg_block_decode(f->payload, f->len, &m)) != 0)
        return r;
    if ((rf = receiver_head(rc, m.id)) == NULL)
        return FERRY_ERR_PROTOCOL;
    if (!rf->started && m.offset == 0 && rf->resume_off > 0 &&
        (r = receiver_restart_file(rc, rf)) != 0 &&
        (r = receiver_file_error(rc, rf, r)) != 0)
        return r;
    rf->started = 1;
    left = rf->size - rf->next_off;
    if (m.offset != rf->next_off ||
        m.raw_len != (left < rc->block_size ? left : rc->block_size))
        return FERRY_ERR_PROTOCOL;
    if (m.flags & BLOCK_F_ZSTD) {
        if (!(rc->x->caps & PROTO_CAP_ZSTD))
            return FERRY_ERR_PROTOCOL;  /* not negotiated */
        if ((rc->zst == NULL && (rc->zst = zst_new()) == NULL) ||
            (rc->scratch == NULL &&
            (rc->scratch = xmalloc(rc->block_size)) == NULL))
            return FERRY_ERR_NOMEM;
        /* A frame that does not inflate to exactly raw_len is as bad as
         * a wrong hash: it fails the file. */
        if (zst_decompress(rc->zst, rc->scratch, m.raw_len, m.data,
            m.data_len) != 0) {
            rf->next_off += m.raw_len;
            if (rf->failed == 0)
                rf->failed = FERRY_ERR_HASH_MISMATCH;
            return 0;
        }
        xfer_add(&rc->x->st.bytes_compressed, m.raw_len - m.data_len);
        m.data = rc->scratch;
        m.data_len = m.raw_len;
    }
    if (m.flags & BLOCK_F_ZERO)
        hash_zero_block(m.raw_len, &h);
    else
        hash_block(m.data, m.data_len, &h);
    rf->next_off += m.raw_len;
    xfer_add(&rc->x->st.bytes_done, m.raw_len);
    if (!hash_equal(&h, &m.hash)) {
        if (rf->failed == 0)
            rf->failed = FERRY_ERR_HASH_MISMATCH;
        return 0;
    }
    hash_file_add(rf->hf, &h);
    if (rf->failed != 0)
        return 0;
    if ((r = receiver_open_partial(rc, rf)) != 0)
        return receiver_file_error(rc, rf, r);
    if (m.flags & BLOCK_F_ZERO) {
        /* The part file reads as zeros there: it is new, or was cut back
         * to what the journal holds. ftruncate at the end leaves a hole
         * rather than writing zeros. */
        xfer_add(&rc->x->st.bytes_sparse, m.raw_len);
    } else {
        xfer_add(&rc->x->st.bytes_literal, m.data_len);
        if ((r = fsx_pwrite_all(partial_fd(rf->pt), m.data, m.data_len,
            m.offset)) != 0)
            return receiver_file_error(rc, rf, r);
        rf->written_end = m.offset + m.data_len;
    }
    if ((r = partial_add(rf->pt, m.offset / rc->block_size, &h,
        m.flags & BLOCK_F_ZERO ? 0 : m.data_len)) != 0)
        return receiver_file_error(rc, rf, r);
    return 0;
}

static void
receiver_pop_head(struct receiver *rc)
{
    rc->fifo_head = (rc->fifo_head + 1) % rc->fifo_cap;
    rc->fifo_len--;
}

static int
receiver_batch_add(struct receiver *rc, struct rfile *f)
{
    if (rc->batch_len == rc->batch_cap) {
        size_t ncap = rc->batch_cap ? rc->batch_cap * 2 : 64;
        struct rfile *nv = xrealloc(rc->batch, ncap * sizeof(*nv));

        if (nv == NULL)
            return FERRY_ERR_NOMEM;
        rc->batch = nv;
        rc->batch_cap = ncap;
    }
    rc->batch[rc->batch_len++] = *f;
    rc->batch_bytes += f->size;
    return 0;
}

/* Makes everything written so far durable. */
static int
receiver_sync(struct receiver *rc)
{
#ifdef __linux__
    /* One syncfs for a batch of files costs one journal commit instead
     * of one per file. */
    if (syncfs(rc->partfd) != 0)
        return -errno;
    return 0;
#else
    size_t i;
    int r;

    for (i = 0; i < rc->batch_len; i++)
        if ((r = fsx_fsync(partial_fd(rc->batch[i].pt))) != 0)
            return r;
    return fsx_fsync(rc->rootfd);
#endif
}

/* Commits the batch: data durable, renames, renames durable, then
 * FILE_DONE for each file. */
static int
receiver_flush(struct receiver *rc, struct buf *out)
{
    const char *name;
    size_t i;
    int r, pfd;

    if (rc->batch_len == 0)
        return 0;
    if ((r = receiver_sync(rc)) != 0)
        return xfer_fail(rc->x, r, "%s: sync: %s", rc->root,
            ferry_strerror(r));
    for (i = 0; i < rc->batch_len; i++) {
        struct rfile *f = &rc->batch[i];

        r = receiver_parent(rc, f->path, &pfd, &name);
        if (r == 0)
            r = partial_rename(f->pt, rc->partfd, pfd, name);
        if (r != 0)
            f->failed = r;
    }
    if ((r = receiver_sync(rc)) != 0)
        return xfer_fail(rc->x, r, "%s: sync: %s", rc->root,
            ferry_strerror(r));
    for (i = 0; i < rc->batch_len; i++) {
        struct rfile *f = &rc->batch[i];

        if (f->failed != 0) {
            xfer_problem(rc->x, SIDE_DEST, f->path, f->failed, NULL);
            rc->sum.files_failed++;
        } else {
            xfer_add(&rc->x->st.files_sent, 1);
            (void)pathset_add(&rc->done, f->path);
            xfer_file(rc->x, f->path, "sent", f->size);
            rc->sum.files_committed++;
            rc->sum.bytes_written += f->size;
        }
        rfile_end(rc, f, f->failed ? PARTIAL_DISCARD : PARTIAL_DONE);
        if ((r = file_done(out, f->id, f->failed)) != 0) {
            rc->batch_len = 0;
            return r;
        }
    }
    rc->batch_len = 0;
    rc->batch_bytes = 0;
    return 0;
}

static int
receiver_finish_file(struct receiver *rc, struct rfile *f)
{
    int r, fd;

    if ((r = receiver_open_partial(rc, f)) != 0)
        return r;
    fd = partial_fd(f->pt);
    /* Trailing zero blocks were not written: the length makes them a
     * hole. */
    if (f->written_end < f->size && ftruncate(fd, (off_t)f->size) != 0)
        return -errno;
    if (fchmod(fd, f->mode) != 0)
        return -errno;
    if ((r = fsx_set_mtime(fd, -1, NULL, f->mtime_sec,
        f->mtime_nsec)) != 0)
        return r;
    return 0;
}

static int
receiver_on_file_end(struct receiver *rc, const struct frame *fr,
    struct buf *out)
{
    struct msg_file_end m;
    struct rfile *f, copy;
    struct hash128 h;
    char text[PROTO_MAX_MESSAGE + 1];
    int r, code;

    if ((r = msg_file_end_decode(fr->payload, fr->len, &m)) != 0)
        return r;
    if ((f = receiver_head(rc, m.id)) == NULL)
        return FERRY_ERR_PROTOCOL;
    if (m.code != 0) {
        /* The sender gave up on it (changed or unreadable): report it as
         * the source side's failure, keep nothing. */
        code = proto_err_from_wire(m.code);
        snprintf(text, sizeof(text), "%.*s", (int)m.text.len, m.text.p);
        xfer_problem(rc->x, SIDE_SOURCE, f->path, code, text);
        xfer_add(&rc->x->st.bytes_done, f->size - f->next_off);
        rc->sum.files_failed++;
        r = file_done(out, f->id, code);
        rfile_end(rc, f, PARTIAL_DISCARD);
        receiver_pop_head(rc);
        return r;
    }
    if (f->next_off != f->size)
        return FERRY_ERR_PROTOCOL;
    hash_file_final(f->hf, &h);
    if (f->failed == 0 && !hash_equal(&h, &m.hash))
        f->failed = FERRY_ERR_HASH_MISMATCH;
    if (f->failed == 0 && (r = receiver_finish_file(rc, f)) != 0 &&
        (r = receiver_file_error(rc, f, r)) != 0)
        return r;
    if (f->failed != 0) {
        xfer_problem(rc->x, SIDE_DEST, f->path, f->failed, NULL);
        rc->sum.files_failed++;
        r = file_done(out, f->id, f->failed);
        rfile_end(rc, f, PARTIAL_DISCARD);
        receiver_pop_head(rc);
        return r;
    }
    copy = *f;
    receiver_pop_head(rc);
    if ((r = receiver_batch_add(rc, &copy)) != 0) {
        rfile_end(rc, &copy, PARTIAL_KEEP);
        return r;
    }
    if (rc->batch_len >= RECEIVER_BATCH_FILES ||
        rc->batch_bytes >= RECEIVER_BATCH_BYTES)
        return receiver_flush(rc, out);
    return 0;
}

/* Directory modes and times last, deepest first: writing into a
 * directory changes its mtime, and a read-only mode would stop us. */
static void
receiver_fix_dirs(struct receiver *rc)
{
    size_t i;
    int fd;

    receiver_forget_parent(rc);
    for (i = rc->ndirs; i-- > 0;) {
        struct rdir *d = &rc->dirs[i];

        if (fsx_open_dir(rc->rootfd, d->path, 0, &fd) != 0)
            continue;
        (void)fchmod(fd, d->mode);
        (void)fsx_set_mtime(fd, -1, NULL, d->mtime_sec, d->mtime_nsec);
        close(fd);
    }
}

static int
receiver_on_end(struct receiver *rc, struct conn_step *st)
{
    int r;

    if (rc->fifo_len != 0 || rc->received != rc->entries_total)
        return FERRY_ERR_PROTOCOL;
    if ((r = receiver_flush(rc, st->out)) != 0)
        return r;
    receiver_fix_dirs(rc);
    receiver_tidy_state(rc);
    if ((r = msg_summary_encode(st->out, &rc->sum)) != 0)
        return r;
    rc->state = RCV_DONE;
    st->done = 1;
    return 0;
}

static int
receiver_on_frame(struct receiver *rc, const struct frame *f,
    struct conn_step *st)
{
    struct msg_notice n;
    char path[PROTO_MAX_PATH + 1], text[PROTO_MAX_MESSAGE + 1];
    int r;

    if (f->type == MSG_ERROR)
        return xfer_peer_error(rc->x, f->payload, f->len);
    if (rc->state == RCV_WAIT_PLAN && f->type == MSG_PLAN)
        return receiver_on_plan(rc, f, st->out);
    if (rc->state != RCV_RUN)
        return FERRY_ERR_PROTOCOL;
    switch (f->type) {
    case MSG_ENTRY:
        return receiver_on_entry(rc, f, st->out);
    case MSG_BLOCK:
        return receiver_on_block(rc, f);
    case MSG_FILE_END:
        return receiver_on_file_end(rc, f, st->out);
    case MSG_NOTICE:
        if ((r = msg_notice_decode(f->payload, f->len, &n)) != 0)
            return r;
        snprintf(path, sizeof(path), "%.*s", (int)n.path.len, n.path.p);
        snprintf(text, sizeof(text), "%.*s", (int)n.text.len, n.text.p);
        xfer_problem(rc->x, SIDE_SOURCE, path, proto_err_from_wire(n.code),
            text);
        return 0;
    case MSG_END:
        if ((r = msg_end_decode(f->payload, f->len)) != 0)
            return r;
        return receiver_on_end(rc, st);
    default:
        log_debug("unexpected %s from sender", msg_type_name(f->type));
        return FERRY_ERR_PROTOCOL;
    }
}

void
receiver_restart(struct receiver *rc)
{
    size_t i;

    /* What arrived stays for the new connection's resume; the progress
     * it counted is taken back until the new sender's plan says. */
    for (i = 0; i < rc->fifo_len; i++) {
        struct rfile *f = &rc->fifo[(rc->fifo_head + i) % rc->fifo_cap];

        xfer_sub(&rc->x->st.bytes_done, f->next_off);
        xfer_sub(&rc->x->st.bytes_payload, f->size);
        rfile_end(rc, f, PARTIAL_KEEP);
    }
    for (i = 0; i < rc->batch_len; i++) {
        xfer_sub(&rc->x->st.bytes_done, rc->batch[i].size);
        xfer_sub(&rc->x->st.bytes_payload, rc->batch[i].size);
        rfile_end(rc, &rc->batch[i], PARTIAL_KEEP);
    }
    rc->fifo_len = rc->fifo_head = 0;
    rc->batch_len = 0;
    rc->batch_bytes = 0;
    for (i = 0; i < rc->ndirs; i++)
        xfree(rc->dirs[i].path);
    rc->ndirs = 0;
    rc->next_id = 0;
    rc->received = 0;
    rc->state = RCV_WAIT_PLAN;
}

int
receiver_step(void *role, struct conn_step *st)
{
    struct receiver *rc = role;
    struct frame f;
    size_t off = 0, used;
    int r;

    while (off < st->in_len && rc->state != RCV_DONE) {
        if ((r = frame_parse(st->in + off, st->in_len - off, &f,
            &used)) != 0)
            return r;
        off += used;
        if ((r = receiver_on_frame(rc, &f, st)) != 0)
            return r;
    }
    if (rc->state == RCV_DONE)
        return off < st->in_len ? FERRY_ERR_PROTOCOL : 0;
    if (st->eof)
        return FERRY_ERR_CLOSED;
    /* Nothing more to read right now: commit what is complete rather
     * than leave a small batch waiting for files that may not come. */
    if (rc->batch_len > 0) {
        if (st->in_len == 0)
            return receiver_flush(rc, st->out);
        st->wake_ms = 20;
    }
    return 0;
}
