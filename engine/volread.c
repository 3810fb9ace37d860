#include "volread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/hash.h"
#include "../common/text.h"
#include "../common/zst.h"
#include "../proto/limits.h"
#include "volume.h"

/* Decompressed bytes handed to the tar reader at a time. */
#define VOLR_CHUNK (128u << 10)
/* A file whose size is not known yet (a piece of another tool's
 * volume: the manifest tells its size only after its last piece). */
#define VOLR_UNKNOWN UINT64_MAX

/* A file being written under the staging directory. */
struct volr_file {
    int fd;                 /* -1 when none */
    uint64_t key;           /* its staging name */
    char *path;             /* its final path */
    uint64_t size;          /* expected, or VOLR_UNKNOWN */
    uint64_t done;
    struct hash_file *hf;   /* NULL while the size is unknown */
    uint8_t *blk;
    size_t fill;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    struct hash128 want;
    int has_want;
    /* A split file: the next piece expected, and whether all arrived. */
    uint32_t next_index;
    int complete;
};

struct volr_name {
    uint64_t key;           /* staging name; directories: unused */
    char *path;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
};

struct volr {
    int rootfd, stagefd;
    char stage[64];
    struct volr_opts o;
    struct volr_hooks h;
    struct zst_dec *z;
    struct tar_rd t;
    int t_ready;
    uint8_t *zout;
    uint32_t vol;
    int in_volume;
    struct volr_file cur;   /* a whole file */
    struct volr_file split; /* a file in pieces */
    struct volr_file *target;  /* where the member's data goes */
    uint64_t mleft;         /* data left in the member */
    struct volr_name *batch, *dirs, *fix;
    size_t nbatch, nbatch_cap, ndirs, ndirs_cap, nfix, nfix_cap;
    uint64_t batch_bytes;
    int pfd;                /* parent directory cache */
    char *ppath;
    uint64_t next_key;
    char *store;            /* the manifest record's strings */
    char *pname;            /* a piece's expected member name */
    char *rel;              /* the member's normalized path */
    uint64_t records;
    struct volr_stats st;
    enum volr_kind kind;
    char err[1024];
};

static int FERRY_PRINTF(4, 5)
volr_fail(struct volr *v, enum volr_kind kind, int r, const char *fmt, ...)
{
    char msg[768];
    va_list ap;

    if (v->kind != VOLR_OK)
        return r;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (v->vol > 0)
        snprintf(v->err, sizeof(v->err), "volume %" PRIu32 ": %s", v->vol,
            msg);
    else
        snprintf(v->err, sizeof(v->err), "%s", msg);
    v->kind = kind;
    return r != 0 ? r : FERRY_ERR_FORMAT;
}

/* Escaped for messages: names come from the archive. */
static const char *
volr_esc(const char *s, char *out, size_t n)
{
    return text_escape(s, strlen(s), out, n);
}

static void
volr_file_close(struct volr *v, struct volr_file *f, int discard)
{
    char name[32];

    if (f->fd >= 0) {
        close(f->fd);
        if (discard) {
            snprintf(name, sizeof(name), "%" PRIu64, f->key);
            (void)unlinkat(v->stagefd, name, 0);
        }
    }
    hash_file_free(f->hf);
    xfree(f->path);
    f->hf = NULL;
    f->path = NULL;
    f->fd = -1;
    f->fill = 0;
    f->done = 0;
    f->complete = 0;
}

static int
volr_push(struct volr_name **v, size_t *n, size_t *cap,
    const struct volr_name *x)
{
    struct volr_name *nv;

    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;

        if ((nv = xrealloc(*v, ncap * sizeof(*nv))) == NULL)
            return FERRY_ERR_NOMEM;
        *v = nv;
        *cap = ncap;
    }
    (*v)[(*n)++] = *x;
    return 0;
}

/* Opens (and caches) the parent directory of rel, making missing ones. */
static int
volr_parent(struct volr *v, const char *rel, int *pfd, const char **name)
{
    const char *slash = strrchr(rel, '/');
    size_t plen = slash != NULL ? (size_t)(slash - rel) : 0;
    int r, fd;

    if (v->pfd >= 0 && strlen(v->ppath) == plen &&
        memcmp(v->ppath, rel, plen) == 0) {
        *pfd = v->pfd;
        *name = slash != NULL ? slash + 1 : rel;
        return 0;
    }
    if ((r = fsx_open_parent(v->rootfd, rel, 1, &fd, name)) != 0)
        return r;
    if (v->pfd >= 0)
        close(v->pfd);
    xfree(v->ppath);
    if ((v->ppath = xstrndup(rel, plen)) == NULL) {
        close(fd);
        v->pfd = -1;
        return FERRY_ERR_NOMEM;
    }
    v->pfd = fd;
    *pfd = fd;
    return 0;
}

static int
volr_sync(struct volr *v)
{
#ifdef __linux__
    return syncfs(v->stagefd) == 0 ? 0 : -errno;
#else
    return fsx_fsync(v->rootfd);
#endif
}

/* Directories the reader has left get their mode and mtime, deepest
 * first (their files are committed by then). */
static void
volr_fix_dirs(struct volr *v)
{
    size_t i;
    int fd;

    for (i = 0; i < v->nfix; i++) {
        struct volr_name *d = &v->fix[i];

        if (fsx_open_dir(v->rootfd, d->path, 0, &fd) == 0) {
            (void)fchmod(fd, d->mode);
            (void)fsx_set_mtime(fd, -1, NULL, d->mtime_sec, d->mtime_nsec);
            close(fd);
        }
        xfree(d->path);
    }
    v->nfix = 0;
}

/* The batch: one sync for all their data, the renames, one sync for
 * them. */
static int
volr_commit(struct volr *v)
{
    char name[32], esc[512];
    const char *base;
    size_t i;
    int r = 0, pfd;

    if (v->nbatch > 0 && (r = volr_sync(v)) != 0)
        return volr_fail(v, VOLR_DEST, r, "sync: %s", ferry_strerror(r));
    for (i = 0; i < v->nbatch && r == 0; i++) {
        struct volr_name *s = &v->batch[i];

        snprintf(name, sizeof(name), "%" PRIu64, s->key);
        if ((r = volr_parent(v, s->path, &pfd, &base)) == 0 &&
            renameat(v->stagefd, name, pfd, base) != 0)
            r = -errno;
        if (r != 0)
            r = volr_fail(v, VOLR_DEST, r, "%s: %s",
                volr_esc(s->path, esc, sizeof(esc)), ferry_strerror(r));
    }
    if (r == 0 && v->nbatch > 0 && (r = volr_sync(v)) != 0)
        r = volr_fail(v, VOLR_DEST, r, "sync: %s", ferry_strerror(r));
    for (i = 0; i < v->nbatch; i++) {
        if (r != 0) {
            snprintf(name, sizeof(name), "%" PRIu64, v->batch[i].key);
            (void)unlinkat(v->stagefd, name, 0);
        }
        xfree(v->batch[i].path);
    }
    v->nbatch = 0;
    v->batch_bytes = 0;
    if (r == 0)
        volr_fix_dirs(v);
    return r;
}

/* Leaves the directories on the stack that rel is not beneath. */
static int
volr_leave_dirs(struct volr *v, const char *rel)
{
    int r;

    while (v->ndirs > 0) {
        struct volr_name *d = &v->dirs[v->ndirs - 1];
        size_t n = strlen(d->path);

        if (rel != NULL && strncmp(rel, d->path, n) == 0 && rel[n] == '/')
            break;
        if ((r = volr_push(&v->fix, &v->nfix, &v->nfix_cap, d)) != 0)
            return r;
        v->ndirs--;
    }
    return 0;
}

/* Writes the buffered block of f and folds it into its hash. */
static int
volr_file_drain(struct volr_file *f)
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

static int
volr_file_open(struct volr *v, struct volr_file *f, const char *path,
    uint64_t size, const struct tar_entry *e)
{
    char name[32];
    int r;

    f->key = v->next_key++;
    snprintf(name, sizeof(name), "%" PRIu64, f->key);
    f->fd = openat(v->stagefd, name, O_RDWR | O_CREAT | O_EXCL |
        O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f->fd < 0)
        return -errno;
    f->size = size;
    f->done = 0;
    f->fill = 0;
    f->mode = e->mode & 01777;
    f->mtime_sec = e->mtime_sec;
    f->mtime_nsec = e->mtime_nsec;
    if ((f->path = xstrdup(path)) == NULL)
        return FERRY_ERR_NOMEM;
    if (f->blk == NULL && (f->blk = xmalloc(v->o.block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    if (size != VOLR_UNKNOWN &&
        (f->hf = hash_file_new(size, v->o.block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    (void)r;
    return 0;
}

/* A file is complete: check its hash, set its metadata, stage it. */
static int
volr_file_done(struct volr *v, struct volr_file *f)
{
    struct volr_name s;
    struct hash128 h;
    char esc[512];
    int r;

    if ((r = volr_file_drain(f)) != 0)
        return volr_fail(v, VOLR_DEST, r, "%s: %s",
            volr_esc(f->path, esc, sizeof(esc)), ferry_strerror(r));
    if (f->hf != NULL)
        hash_file_final(f->hf, &h);
    else if ((r = hash_fd(f->fd, f->done, v->o.block_size, &h)) != 0)
        return volr_fail(v, VOLR_DEST, r, "%s: %s",
            volr_esc(f->path, esc, sizeof(esc)), ferry_strerror(r));
    if (f->has_want && !hash_equal(&h, &f->want))
        return volr_fail(v, VOLR_INTEGRITY, FERRY_ERR_HASH_MISMATCH,
            "%s: content does not match the manifest's XXH3",
            volr_esc(f->path, esc, sizeof(esc)));
    (void)fchmod(f->fd, f->mode);
    (void)fsx_set_mtime(f->fd, -1, NULL, f->mtime_sec, f->mtime_nsec);
#ifndef __linux__
    if ((r = fsx_fsync(f->fd)) != 0)
        return volr_fail(v, VOLR_DEST, r, "%s: %s",
            volr_esc(f->path, esc, sizeof(esc)), ferry_strerror(r));
#endif
    memset(&s, 0, sizeof(s));
    s.key = f->key;
    s.path = f->path;
    if ((r = volr_push(&v->batch, &v->nbatch, &v->nbatch_cap, &s)) != 0)
        return volr_fail(v, VOLR_DEST, r, "out of memory");
    f->path = NULL;
    close(f->fd);
    f->fd = -1;
    v->batch_bytes += f->done;
    v->st.files++;
    v->st.bytes += f->done;
    if (v->h.entry != NULL)
        v->h.entry(v->h.ctx, s.path, TAR_FILE, f->done);
    volr_file_close(v, f, 0);
    if (v->nbatch + v->nfix >= VOLR_BATCH_FILES ||
        v->batch_bytes >= VOLR_BATCH_BYTES)
        return volr_commit(v);
    return 0;
}

/* Data of the member being read. */
static int
volr_data(struct volr *v, const uint8_t *p, size_t n)
{
    struct volr_file *f = v->target;
    char esc[512];
    size_t k;
    int r;

    v->mleft -= n;
    if (f == NULL)
        return 0;
    while (n > 0) {
        k = v->o.block_size - f->fill;
        if (k > n)
            k = n;
        memcpy(f->blk + f->fill, p, k);
        f->fill += k;
        f->done += k;
        p += k;
        n -= k;
        if (f->fill == v->o.block_size && (r = volr_file_drain(f)) != 0)
            return volr_fail(v, VOLR_DEST, r, "%s: %s",
                volr_esc(f->path, esc, sizeof(esc)), ferry_strerror(r));
    }
    return 0;
}

/* The member's name as a path beneath the root: a leading "./" and a
 * trailing '/' go; the rest must be a clean relative path. Returns 0
 * with v->rel set ("" for the root itself), or refuses the member. */
static int
volr_normalize(struct volr *v, const char *path, size_t len)
{
    const char *p = path, *c;
    char esc[512];
    size_t n;

    volr_esc(path, esc, sizeof(esc));
    if (len > 0 && p[0] == '/')
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_BAD_PATH,
            "%s: absolute path refused", esc);
    while (len >= 2 && p[0] == '.' && p[1] == '/') {
        p += 2;
        len -= 2;
        while (len > 0 && p[0] == '/')
            p++, len--;
    }
    if (len == 1 && p[0] == '.')
        len = 0;
    while (len > 0 && p[len - 1] == '/')
        len--;
    for (c = p; c < p + len; c += n + 1) {
        const char *slash = memchr(c, '/', (size_t)(p + len - c));

        n = slash != NULL ? (size_t)(slash - c) : (size_t)(p + len - c);
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return volr_fail(v, VOLR_INVALID, FERRY_ERR_BAD_PATH,
                "%s: path with '..' refused", esc);
    }
    if (len > 0 && fsx_path_check(p, len) != 0)
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_BAD_PATH,
            "%s: invalid path", esc);
    n = 0;
    while (n < len && p[n] != '/')
        n++;
    if ((n == 6 && memcmp(p, ".ferry", 6) == 0) ||
        (n == strlen(v->stage) && memcmp(p, v->stage, n) == 0))
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_BAD_PATH,
            "%s: reserved name refused", esc);
    memcpy(v->rel, p, len);
    v->rel[len] = '\0';
    return 0;
}

/* The manifest's next record. */
static int
volr_next(struct volr *v, struct vman_rec *rec)
{
    int r = v->h.next_record(v->h.ctx, rec, v->store);

    if (r == FERRY_ERR_SHORT)
        return volr_fail(v, VOLR_INTEGRITY, r,
            "the manifest ends before the volumes do");
    if (r != 0)
        return volr_fail(v, VOLR_INTEGRITY, r, "manifest: %s",
            ferry_strerror(r));
    if (rec->type == VMAN_HEAD)
        return volr_fail(v, VOLR_INTEGRITY, FERRY_ERR_FORMAT,
            "manifest: a second head");
    if (rec->type != VMAN_END)
        v->records++;
    return 0;
}

/* The manifest's record of a split file, after its last piece. */
static int
volr_split_close(struct volr *v, const struct vman_rec *rec)
{
    struct volr_file *f = &v->split;
    char esc[512];

    if (f->fd < 0 || strcmp(f->path, rec->path) != 0 ||
        rec->pieces != f->next_index - 1 ||
        (f->size != VOLR_UNKNOWN && f->size != rec->size) ||
        f->done != rec->size || v->mleft > 0)
        return volr_fail(v, VOLR_INTEGRITY, FERRY_ERR_FORMAT,
            "%s: its pieces do not match the manifest",
            volr_esc(rec->path, esc, sizeof(esc)));
    f->want = rec->hash;
    f->has_want = 1;
    return volr_file_done(v, f);
}

/* Fetches the record for a member, closing a split file on the way. */
static int
volr_member_record(struct volr *v, struct vman_rec *rec)
{
    int r;

    if ((r = volr_next(v, rec)) != 0)
        return r;
    if (rec->type == VMAN_FILE && rec->pieces > 0) {
        if ((r = volr_split_close(v, rec)) != 0)
            return r;
        return volr_next(v, rec);
    }
    return 0;
}

/* A member checked against its record. */
static int
volr_check(struct volr *v, const struct tar_entry *e,
    const struct vman_rec *rec)
{
    static const enum vman_type types[] = {
        [TAR_FILE] = VMAN_FILE, [TAR_DIR] = VMAN_DIR,
        [TAR_SYMLINK] = VMAN_SYMLINK,
    };
    char esc[512];
    int same;

    if (e->is_piece)
        same = rec->type == VMAN_PIECE && strcmp(v->rel, rec->path) == 0 &&
            e->piece.index == rec->index &&
            e->piece.offset == rec->file_offset && e->size == rec->size;
    else
        same = (size_t)e->type < sizeof(types) / sizeof(types[0]) &&
            types[e->type] == rec->type && strcmp(v->rel, rec->path) == 0 &&
            (rec->type != VMAN_FILE || (rec->pieces == 0 &&
            rec->size == e->size));
    if (!same || rec->volume != v->vol)
        return volr_fail(v, VOLR_INTEGRITY, FERRY_ERR_FORMAT,
            "%s: member does not match the manifest",
            volr_esc(e->path, esc, sizeof(esc)));
    return 0;
}

/* A piece: the first opens the split file, the others must follow it. */
static int
volr_piece(struct volr *v, const struct tar_entry *e)
{
    struct volr_file *f = &v->split;
    const struct tar_piece *pc = &e->piece;
    char esc[512];
    const char *base;
    int r, pfd;

    volr_esc(pc->path, esc, sizeof(esc));
    if (pc->index == 1) {
        if (f->fd >= 0)
            return volr_fail(v, VOLR_INVALID, FERRY_ERR_FORMAT,
                "%s: a new split file before the last one ended", esc);
        if (pc->offset != 0)
            return volr_fail(v, VOLR_INVALID, FERRY_ERR_FORMAT,
                "%s: piece 1 does not start the file", esc);
        if ((r = volr_parent(v, v->rel, &pfd, &base)) != 0)
            return volr_fail(v, r == FERRY_ERR_NOT_DIR ? VOLR_INVALID :
                VOLR_DEST, r, "%s: %s", esc, r == FERRY_ERR_NOT_DIR ?
                "a directory on its path is a symlink or a file" :
                ferry_strerror(r));
        if ((r = volr_file_open(v, f, v->rel, pc->file_size, e)) != 0)
            return volr_fail(v, VOLR_DEST, r, "%s: %s", esc,
                ferry_strerror(r));
        f->next_index = 1;
    } else if (f->fd < 0 || strcmp(f->path, v->rel) != 0 ||
        pc->index != f->next_index || pc->offset != f->done ||
        (f->size != VOLR_UNKNOWN && pc->file_size != f->size)) {
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_FORMAT,
            "%s: piece %" PRIu32 " out of order", esc, pc->index);
    }
    f->next_index++;
    f->mode = e->mode & 01777;
    f->mtime_sec = e->mtime_sec;
    f->mtime_nsec = e->mtime_nsec;
    v->target = f;
    return 0;
}

static int
volr_symlink(struct volr *v, const struct tar_entry *e)
{
    char name[32], esc[512];
    const char *base;
    int r, pfd;

    volr_esc(v->rel, esc, sizeof(esc));
    if (e->link_len == 0 || e->link_len > PROTO_MAX_LINK)
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_BAD_PATH,
            "%s: invalid symlink target", esc);
    if ((r = volr_parent(v, v->rel, &pfd, &base)) != 0)
        return volr_fail(v, r == FERRY_ERR_NOT_DIR ? VOLR_INVALID :
            VOLR_DEST, r, "%s: %s", esc, r == FERRY_ERR_NOT_DIR ?
            "a directory on its path is a symlink or a file" :
            ferry_strerror(r));
    snprintf(name, sizeof(name), "%" PRIu64, v->next_key++);
    /* Made aside and renamed into place at once: members after it see
     * it, and a member through it is refused by the walk. */
    if (symlinkat(e->link, v->stagefd, name) != 0)
        r = -errno;
    else if (((void)fsx_set_mtime(-1, v->stagefd, name, e->mtime_sec,
        e->mtime_nsec), renameat(v->stagefd, name, pfd, base)) != 0) {
        r = -errno;
        (void)unlinkat(v->stagefd, name, 0);
    }
    if (r != 0)
        return volr_fail(v, VOLR_DEST, r, "%s: %s", esc, ferry_strerror(r));
    if (v->h.entry != NULL)
        v->h.entry(v->h.ctx, v->rel, TAR_SYMLINK, 0);
    return 0;
}

static int
volr_dir(struct volr *v, const struct tar_entry *e)
{
    struct volr_name d;
    char esc[512];
    int r, fd;

    if ((r = fsx_open_dir(v->rootfd, v->rel, 1, &fd)) != 0)
        return volr_fail(v, r == FERRY_ERR_NOT_DIR || r == -ENOTDIR ?
            VOLR_INVALID : VOLR_DEST, r, "%s: %s",
            volr_esc(v->rel, esc, sizeof(esc)), r == FERRY_ERR_NOT_DIR ||
            r == -ENOTDIR ? "a symlink or a file is in the way" :
            ferry_strerror(r));
    close(fd);
    memset(&d, 0, sizeof(d));
    d.mode = e->mode & 01777;
    d.mtime_sec = e->mtime_sec;
    d.mtime_nsec = e->mtime_nsec;
    if ((d.path = xstrdup(v->rel)) == NULL ||
        (r = volr_push(&v->dirs, &v->ndirs, &v->ndirs_cap, &d)) != 0) {
        xfree(d.path);
        return volr_fail(v, VOLR_DEST, FERRY_ERR_NOMEM, "out of memory");
    }
    if (v->h.entry != NULL)
        v->h.entry(v->h.ctx, v->rel, TAR_DIR, 0);
    return 0;
}

/* The end of a member's data. */
static int
volr_member_end(struct volr *v)
{
    struct volr_file *f = v->target;

    v->target = NULL;
    if (f == &v->cur)
        return volr_file_done(v, f);
    if (f == &v->split && f->size != VOLR_UNKNOWN && f->done == f->size) {
        f->complete = 1;
        /* The manifest's record of the file comes next: it says the
         * hash, and the file is committed then. */
        if (!v->o.manifest)
            return volr_file_done(v, f);
    }
    return 0;
}

/* A member's header. */
static int
volr_member(struct volr *v, const struct tar_entry *in)
{
    struct tar_entry e = *in;
    struct vman_rec rec;
    char esc[512];
    size_t plen;
    int r;

    v->st.members++;
    if ((r = volr_normalize(v, e.path, e.path_len)) != 0)
        return r;
    if (v->o.manifest && (r = volr_member_record(v, &rec)) != 0)
        return r;
    /* Another tool's copy of a piece: no pax header, but the manifest
     * names it and its name is the piece's. */
    if (v->o.manifest && !e.is_piece && e.type == TAR_FILE &&
        rec.type == VMAN_PIECE && volume_piece_name(rec.path,
        rec.path_len, rec.index, v->pname, VOLUME_NAME_MAX, &plen) == 0 &&
        strcmp(v->rel, v->pname) == 0) {
        e.is_piece = 1;
        e.piece.index = rec.index;
        e.piece.offset = rec.file_offset;
        e.piece.file_size = v->split.fd >= 0 ? v->split.size : VOLR_UNKNOWN;
        e.piece.path = rec.path;
        e.piece.path_len = rec.path_len;
    }
    /* A piece stands for its file: its path is the file's. */
    if (e.is_piece && (r = volr_normalize(v, e.piece.path,
        e.piece.path_len)) != 0)
        return r;
    if (e.is_piece && v->rel[0] == '\0')
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_BAD_PATH,
            "%s: invalid piece", volr_esc(e.path, esc, sizeof(esc)));
    if (v->o.manifest && (r = volr_check(v, &e, &rec)) != 0)
        return r;
    if (v->split.fd >= 0 && (!e.is_piece || e.piece.index == 1))
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_FORMAT,
            "%s: split file incomplete (piece %" PRIu32 " missing)",
            volr_esc(v->split.path, esc, sizeof(esc)),
            v->split.next_index);
    if ((r = volr_leave_dirs(v, v->rel)) != 0)
        return volr_fail(v, VOLR_DEST, r, "out of memory");
    volr_esc(v->rel, esc, sizeof(esc));
    if (e.is_piece)
        r = volr_piece(v, &e);
    else if (v->rel[0] == '\0')
        r = e.type == TAR_DIR ? 0 : volr_fail(v, VOLR_INVALID,
            FERRY_ERR_BAD_PATH, "%s: invalid path", esc);
    else if (e.type == TAR_DIR)
        r = volr_dir(v, &e);
    else if (e.type == TAR_SYMLINK)
        r = volr_symlink(v, &e);
    else if (e.type == TAR_HARDLINK)
        r = volr_fail(v, VOLR_INVALID, FERRY_ERR_UNSUPPORTED,
            "%s: hard link refused", esc);
    else if (e.type != TAR_FILE)
        r = volr_fail(v, VOLR_INVALID, FERRY_ERR_UNSUPPORTED,
            "%s: device file or FIFO refused", esc);
    else {
        const char *base;
        int pfd;

        if ((r = volr_parent(v, v->rel, &pfd, &base)) != 0)
            return volr_fail(v, r == FERRY_ERR_NOT_DIR ? VOLR_INVALID :
                VOLR_DEST, r, "%s: %s", esc, r == FERRY_ERR_NOT_DIR ?
                "a directory on its path is a symlink or a file" :
                ferry_strerror(r));
        if ((r = volr_file_open(v, &v->cur, v->rel, e.size, &e)) != 0)
            return volr_fail(v, VOLR_DEST, r, "%s: %s", esc,
                ferry_strerror(r));
        if (v->o.manifest) {
            v->cur.want = rec.hash;
            v->cur.has_want = 1;
        }
        v->target = &v->cur;
    }
    if (r != 0)
        return r;
    v->mleft = e.size;
    return v->mleft == 0 ? volr_member_end(v) : 0;
}

/* Hands decompressed bytes to the tar reader, event by event. */
static int
volr_tar(struct volr *v, const uint8_t *p, size_t n)
{
    struct tar_event ev;
    size_t used;
    int r;

    while (n > 0) {
        if ((r = tar_rd_next(&v->t, p, n, &used, &ev)) != 0) {
            const char *why = tar_rd_why(&v->t);

            return volr_fail(v, VOLR_INVALID, r, "not a valid tar archive "
                "at byte %" PRIu64 ": %s", tar_rd_offset(&v->t),
                why != NULL ? why : ferry_strerror(r));
        }
        p += used;
        n -= used;
        if (ev.ev == TAR_EV_ENTRY)
            r = volr_member(v, &ev.e);
        else if (ev.ev == TAR_EV_DATA &&
            (r = volr_data(v, ev.data, ev.len)) == 0 && v->mleft == 0)
            r = volr_member_end(v);
        if (r != 0)
            return r;
    }
    return 0;
}

/* Runs zstd over (p, n); with n == 0, drains what it holds. */
static int
volr_inflate(struct volr *v, const uint8_t *p, size_t n)
{
    size_t used, out;
    int r;

    for (;;) {
        if ((r = zst_dec_put(v->z, p, n, &used, v->zout, VOLR_CHUNK,
            &out)) != 0)
            return volr_fail(v, VOLR_INTEGRITY, r,
                "not zstd, or damaged (zstd reports an error)");
        p += used;
        n -= used;
        if (out > 0 && (r = volr_tar(v, v->zout, out)) != 0)
            return r;
        if (n == 0 && out < VOLR_CHUNK)
            return 0;
        if (used == 0 && out == 0)
            return 0;
    }
}

int
volr_begin(struct volr *v, uint32_t index)
{
    int r;

    if (v->kind != VOLR_OK)
        return FERRY_ERR_FORMAT;
    if (v->in_volume || index == 0)
        return FERRY_ERR_USAGE;
    zst_dec_free(v->z);
    if (v->t_ready)
        tar_rd_cleanup(&v->t);
    v->t_ready = 0;
    if ((v->z = zst_dec_new()) == NULL || (r = tar_rd_init(&v->t)) != 0)
        return volr_fail(v, VOLR_DEST, FERRY_ERR_NOMEM, "out of memory");
    v->t_ready = 1;
    v->vol = index;
    v->in_volume = 1;
    return 0;
}

int
volr_put(struct volr *v, const void *p, size_t n)
{
    if (v->kind != VOLR_OK)
        return FERRY_ERR_FORMAT;
    if (!v->in_volume)
        return FERRY_ERR_USAGE;
    return n == 0 ? 0 : volr_inflate(v, p, n);
}

int
volr_end(struct volr *v)
{
    int r;

    if (v->kind != VOLR_OK)
        return FERRY_ERR_FORMAT;
    if (!v->in_volume)
        return FERRY_ERR_USAGE;
    if ((r = volr_inflate(v, NULL, 0)) != 0)
        return r;
    if (!zst_dec_at_end(v->z))
        return volr_fail(v, VOLR_INTEGRITY, FERRY_ERR_SHORT,
            "truncated (its zstd frame does not end)");
    if ((r = tar_rd_finish(&v->t)) != 0)
        return volr_fail(v, VOLR_INVALID, r, "not a valid tar archive: %s",
            tar_rd_why(&v->t));
    v->in_volume = 0;
    v->st.volumes++;
    return volr_commit(v);
}

int
volr_finish(struct volr *v)
{
    struct vman_rec rec;
    char esc[512];
    int r;

    if (v->kind != VOLR_OK)
        return FERRY_ERR_FORMAT;
    if (v->in_volume)
        return FERRY_ERR_USAGE;
    if (v->o.manifest) {
        if ((r = volr_member_record(v, &rec)) != 0)
            return r;
        if (rec.type != VMAN_END || rec.volume != v->st.volumes ||
            rec.entries != v->records || rec.files != v->st.files ||
            rec.size != v->st.bytes)
            return volr_fail(v, VOLR_INTEGRITY, FERRY_ERR_FORMAT,
                "the manifest lists more than the volumes hold (or its "
                "totals differ)");
    }
    if (v->split.fd >= 0)
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_SHORT,
            "%s: split file incomplete (piece %" PRIu32 " missing)",
            volr_esc(v->split.path, esc, sizeof(esc)), v->split.next_index);
    if ((r = volr_leave_dirs(v, NULL)) != 0)
        return volr_fail(v, VOLR_DEST, r, "out of memory");
    return volr_commit(v);
}

int
volr_new(int rootfd, const struct volr_opts *o, const struct volr_hooks *h,
    struct volr **out)
{
    static unsigned seq;
    struct volr *v;
    int i;

    *out = NULL;
    if ((v = xcalloc(1, sizeof(*v))) == NULL)
        return FERRY_ERR_NOMEM;
    v->rootfd = rootfd;
    v->stagefd = v->pfd = v->cur.fd = v->split.fd = -1;
    v->o = *o;
    if (v->o.block_size == 0)
        v->o.block_size = PROTO_DEFAULT_BLOCK;
    v->h = *h;
    v->zout = xmalloc(VOLR_CHUNK);
    v->store = xmalloc(VMAN_MAX_PATH + 1);
    v->pname = xmalloc(VOLUME_NAME_MAX);
    v->rel = xmalloc(TAR_MAX_NAME + 1);
    if (v->zout == NULL || v->store == NULL || v->pname == NULL ||
        v->rel == NULL) {
        volr_free(v);
        return FERRY_ERR_NOMEM;
    }
    /* A name of our own, made with mkdirat's O_EXCL-like failure on an
     * existing one; 0700 so nobody else reads what is staged. */
    for (i = 0; i < 100; i++) {
        snprintf(v->stage, sizeof(v->stage), VOLR_STAGE_PREFIX "%ld.%u",
            (long)getpid(), seq++);
        if (mkdirat(rootfd, v->stage, 0700) == 0)
            break;
        if (errno != EEXIST) {
            i = -errno;
            volr_free(v);
            return i;
        }
    }
    v->stagefd = openat(rootfd, v->stage, O_RDONLY | O_DIRECTORY |
        O_NOFOLLOW | O_CLOEXEC);
    if (v->stagefd < 0) {
        i = -errno;
        volr_free(v);
        return i;
    }
    *out = v;
    return 0;
}

/* Empties and removes the staging directory. */
static void
volr_rm_stage(struct volr *v)
{
    struct dirent *de;
    DIR *d;
    int fd;

    if (v->stagefd < 0)
        return;
    if ((fd = dup(v->stagefd)) >= 0 && (d = fdopendir(fd)) != NULL) {
        while ((de = readdir(d)) != NULL)
            if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                (void)unlinkat(v->stagefd, de->d_name, 0);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    close(v->stagefd);
    v->stagefd = -1;
    (void)unlinkat(v->rootfd, v->stage, AT_REMOVEDIR);
}

static void
volr_names_free(struct volr_name *n, size_t count)
{
    size_t i;

    for (i = 0; i < count; i++)
        xfree(n[i].path);
    xfree(n);
}

void
volr_free(struct volr *v)
{
    if (v == NULL)
        return;
    volr_file_close(v, &v->cur, 1);
    volr_file_close(v, &v->split, 1);
    xfree(v->cur.blk);
    xfree(v->split.blk);
    volr_rm_stage(v);
    if (v->pfd >= 0)
        close(v->pfd);
    xfree(v->ppath);
    volr_names_free(v->batch, v->nbatch);
    volr_names_free(v->dirs, v->ndirs);
    volr_names_free(v->fix, v->nfix);
    zst_dec_free(v->z);
    if (v->t_ready)
        tar_rd_cleanup(&v->t);
    xfree(v->zout);
    xfree(v->store);
    xfree(v->pname);
    xfree(v->rel);
    xfree(v);
}

enum volr_kind
volr_error(const struct volr *v, const char **text)
{
    *text = v->kind != VOLR_OK ? v->err : NULL;
    return v->kind;
}

void
volr_stats(const struct volr *v, struct volr_stats *st)
{
    *st = v->st;
}
