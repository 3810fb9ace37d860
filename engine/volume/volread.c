#include "volread.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "../../common/hash.h"
#include "../../common/text.h"
#include "../../common/zst.h"
#include "../../proto/limits.h"
#include "volstage.h"
#include "volume.h"

/* Decompressed bytes handed to the tar reader at a time. */
#define VOLR_CHUNK (128u << 10)

struct volr {
    struct volstage s;
    int s_ready;
    struct volr_opts o;
    struct volr_hooks h;
    struct zst_dec *z;
    struct tar_rd t;
    int t_ready;
    uint8_t *zout;
    uint32_t vol;
    int in_volume;
    struct volstage_file cur;    /* a whole file */
    struct volstage_file split;  /* a file in pieces */
    /* The split file: the next piece expected; its hash from the
     * manifest. */
    uint32_t next_index;
    struct hash128 want;
    int has_want;
    struct volstage_file *target;  /* where the member's data goes */
    uint64_t mleft;              /* data left in the member */
    char *store;                 /* the manifest record's strings */
    char *pname;                 /* a piece's expected member name */
    char *rel;                   /* the member's normalized path */
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
    /* Every caller names the error: a 0 here would let the caller's
     * caller go on as if nothing had failed. */
    assert(r != 0);
    return r;
}

/* Escaped for messages: names come from the archive. */
static const char *
volr_esc(const char *s, char *out, size_t n)
{
    return text_escape(s, strlen(s), out, n);
}

/* A member's parent or directory could not be opened: a symlink or a
 * file on its path is the archive's doing (or was there); anything else
 * is the destination's. */
static int
volr_path_fail(struct volr *v, int r, const char *esc)
{
    if (r == FERRY_ERR_NOT_DIR || r == -ENOTDIR || r == -ELOOP ||
        r == -EEXIST)
        return volr_fail(v, VOLR_INVALID, r, "%s: refused: a symlink or a "
            "file is in its way", esc);
    return volr_fail(v, VOLR_DEST, r, "%s: %s", esc, ferry_strerror(r));
}

static int
volr_dest_fail(struct volr *v, int r, const char *path)
{
    char esc[512];

    if (path == NULL)
        return volr_fail(v, VOLR_DEST, r, "%s", ferry_strerror(r));
    return volr_fail(v, VOLR_DEST, r, "%s: %s",
        volr_esc(path, esc, sizeof(esc)), ferry_strerror(r));
}

/* The writer tells of each member it committed, in the order read (or
 * of the first it could not put in place, which stops the reader):
 * those are the files committed. */
static int
volr_told(void *ctx, struct dest_write_file *f)
{
    struct volr *v = ctx;

    if (f->failed != 0)
        return volr_dest_fail(v, f->failed, f->path);
    if (v->kind == VOLR_OK)
        v->st.committed++;
    return 0;
}

/* What the writer has done behind the reader: its callbacks run now;
 * with wait, once everything queued is done. */
static int
volr_settle(struct volr *v, int wait)
{
    const char *failed;
    int r;

    if ((r = dest_writer_poll(&v->s.w, wait, &failed)) != 0)
        return volr_dest_fail(v, r, failed);
    return 0;
}

int
volr_poll(struct volr *v)
{
    return volr_settle(v, 0);
}

/* Commits what is complete, behind the reader unless wait: then returns
 * once everything is committed. */
static int
volr_commit(struct volr *v, int wait)
{
    int r;

    if ((r = dest_writer_commit(&v->s.w, !wait, volr_told, v)) != 0) {
        volr_settle(v, 0);  /* a failure behind, with its path */
        return volr_dest_fail(v, r, NULL);
    }
    return wait ? volr_settle(v, 1) : 0;
}

int
volr_pending(struct volr *v)
{
    return dest_writer_pending(&v->s.w);
}

/* A file is complete: check its hash against want (if any), stage it. */
static int
volr_file_done(struct volr *v, struct volstage_file *f,
    const struct hash128 *want)
{
    struct hash128 h;
    char esc[512];
    uint64_t size = f->done;
    int r;

    volr_esc(f->path, esc, sizeof(esc));
    if ((r = volstage_file_hash(&v->s, f, &h)) != 0)
        return volr_dest_fail(v, r, f->path);
    if (want != NULL && !hash_equal(&h, want))
        return volr_fail(v, VOLR_INTEGRITY, FERRY_ERR_HASH_MISMATCH,
            "%s: content does not match the manifest's XXH3", esc);
    if (v->h.entry != NULL)
        v->h.entry(v->h.ctx, f->path, TAR_FILE, size);
    if ((r = volstage_file_done(&v->s, f)) != 0) {
        volr_settle(v, 0);  /* a failure behind, with its path */
        return volr_dest_fail(v, r, f->path);
    }
    v->st.files++;
    v->st.bytes += size;
    return dest_writer_full(&v->s.w) ? volr_commit(v, 0) : 0;
}

/* Data of the member being read. */
static int
volr_data(struct volr *v, const uint8_t *p, size_t n)
{
    int r;

    v->mleft -= n;
    if (v->target != NULL &&
        (r = volstage_file_write(&v->s, v->target, p, n)) != 0)
        return volr_dest_fail(v, r, v->target->path);
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
        (n == strlen(v->s.name) && memcmp(p, v->s.name, n) == 0))
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
    struct volstage_file *f = &v->split;
    char esc[512];

    if (f->fd < 0 || strcmp(f->path, rec->path) != 0 ||
        rec->pieces != v->next_index - 1 ||
        (f->size != VOLSTAGE_UNKNOWN && f->size != rec->size) ||
        f->done != rec->size || v->mleft > 0)
        return volr_fail(v, VOLR_INTEGRITY, FERRY_ERR_FORMAT,
            "%s: its pieces do not match the manifest",
            volr_esc(rec->path, esc, sizeof(esc)));
    return volr_file_done(v, f, &rec->hash);
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
    struct volstage_file *f = &v->split;
    const struct tar_piece *pc = &e->piece;
    char esc[512];
    const char *base;
    int r, pfd;

    volr_esc(v->rel, esc, sizeof(esc));
    if (pc->index == 1) {
        if (pc->offset != 0)
            return volr_fail(v, VOLR_INVALID, FERRY_ERR_FORMAT,
                "%s: piece 1 does not start the file", esc);
        if ((r = volstage_parent(&v->s, v->rel, &pfd, &base)) != 0)
            return volr_path_fail(v, r, esc);
        if ((r = volstage_file_open(&v->s, f, v->rel, pc->file_size,
            0)) != 0)
            return volr_dest_fail(v, r, v->rel);
        v->next_index = 1;
    } else if (f->fd < 0 || strcmp(f->path, v->rel) != 0 ||
        pc->index != v->next_index || pc->offset != f->done ||
        pc->file_size != f->size) {
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_FORMAT,
            "%s: piece %" PRIu32 " out of order", esc, pc->index);
    }
    v->next_index++;
    f->mode = e->mode & 01777;
    f->mtime_sec = e->mtime_sec;
    f->mtime_nsec = e->mtime_nsec;
    v->target = f;
    return 0;
}

/* The end of a member's data. */
static int
volr_member_end(struct volr *v)
{
    struct volstage_file *f = v->target;

    v->target = NULL;
    if (f == &v->cur)
        return volr_file_done(v, f, v->has_want ? &v->want : NULL);
    /* A split file whose pieces are all there is committed now, or with
     * a manifest once its record (with the hash) comes. */
    if (f == &v->split && !v->o.manifest && f->done == f->size)
        return volr_file_done(v, f, NULL);
    return 0;
}

/* What a member other than a piece makes. */
static int
volr_make(struct volr *v, const struct tar_entry *e)
{
    const char *base;
    char esc[512];
    int r, pfd;

    volr_esc(v->rel, esc, sizeof(esc));
    if (v->rel[0] == '\0')
        return e->type == TAR_DIR ? 0 : volr_fail(v, VOLR_INVALID,
            FERRY_ERR_BAD_PATH, "%s: invalid path", esc);
    switch (e->type) {
    case TAR_DIR:
        if ((r = volstage_dir(&v->s, v->rel, e->mode & 01777, e->mtime_sec,
            e->mtime_nsec)) != 0)
            return volr_path_fail(v, r, esc);
        break;
    case TAR_SYMLINK:
        if (e->link_len == 0 || e->link_len > PROTO_MAX_LINK)
            return volr_fail(v, VOLR_INVALID, FERRY_ERR_BAD_PATH,
                "%s: invalid symlink target", esc);
        if ((r = volstage_symlink(&v->s, v->rel, e->link, e->mtime_sec,
            e->mtime_nsec)) != 0)
            return volr_path_fail(v, r, esc);
        break;
    case TAR_HARDLINK:
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_UNSUPPORTED,
            "%s: hard link refused", esc);
    case TAR_FILE:
        if ((r = volstage_parent(&v->s, v->rel, &pfd, &base)) != 0)
            return volr_path_fail(v, r, esc);
        if ((r = volstage_file_open(&v->s, &v->cur, v->rel, e->size,
            1)) != 0)
            return volr_dest_fail(v, r, v->rel);
        v->cur.mode = e->mode & 01777;
        v->cur.mtime_sec = e->mtime_sec;
        v->cur.mtime_nsec = e->mtime_nsec;
        v->target = &v->cur;
        return 0;
    default:
        return volr_fail(v, VOLR_INVALID, FERRY_ERR_UNSUPPORTED,
            "%s: device file or FIFO refused", esc);
    }
    if (v->h.entry != NULL)
        v->h.entry(v->h.ctx, v->rel, e->type, 0);
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
        e.piece.file_size = v->split.fd >= 0 ? v->split.size :
            VOLSTAGE_UNKNOWN;
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
            volr_esc(v->split.path, esc, sizeof(esc)), v->next_index);
    if ((r = volstage_leave(&v->s, v->rel)) != 0)
        return volr_dest_fail(v, r, NULL);
    v->has_want = v->o.manifest && !e.is_piece && e.type == TAR_FILE;
    if (v->has_want)
        v->want = rec.hash;
    if ((r = e.is_piece ? volr_piece(v, &e) : volr_make(v, &e)) != 0)
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
    /* What the last volume's commit behind it ran into stops the next. */
    if ((r = volr_poll(v)) != 0)
        return r;
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
    return volr_commit(v, 0);
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
            volr_esc(v->split.path, esc, sizeof(esc)), v->next_index);
    if ((r = volstage_leave(&v->s, NULL)) != 0)
        return volr_dest_fail(v, r, NULL);
    return volr_commit(v, 1);
}

int
volr_new(int rootfd, const struct volr_opts *o, const struct volr_hooks *h,
    struct volr **out)
{
    return volr_new_in(rootfd, rootfd, o, h, out);
}

int
volr_new_in(int rootfd, int stagefd, const struct volr_opts *o,
    const struct volr_hooks *h, struct volr **out)
{
    struct volr *v;
    int r;

    *out = NULL;
    if ((v = xcalloc(1, sizeof(*v))) == NULL)
        return FERRY_ERR_NOMEM;
    volstage_file_init(&v->cur);
    volstage_file_init(&v->split);
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
    r = volstage_init_in(&v->s, rootfd, stagefd, v->o.block_size);
    v->s_ready = 1;
    dest_writer_set_waker(&v->s.w, v->o.wake);
    if (r != 0) {
        volr_free(v);
        return r;
    }
    *out = v;
    return 0;
}

void
volr_free(struct volr *v)
{
    if (v == NULL)
        return;
    if (v->s_ready) {
        volstage_file_discard(&v->s, &v->cur);
        volstage_file_discard(&v->s, &v->split);
        volstage_cleanup(&v->s);
    }
    volstage_file_cleanup(&v->cur);
    volstage_file_cleanup(&v->split);
    zst_dec_free(v->z);
    if (v->t_ready)
        tar_rd_cleanup(&v->t);
    xfree(v->zout);
    xfree(v->store);
    xfree(v->pname);
    xfree(v->rel);
    xfree(v);
}

int
volr_stop(struct volr *v, int read_whole)
{
    if (read_whole && v->kind == VOLR_OK)
        return volr_commit(v, 1);
    return volr_settle(v, 1);
}

enum volr_kind
volr_error(const struct volr *v, const char **text)
{
    *text = v->kind != VOLR_OK ? v->err : NULL;
    return v->kind;
}

void
volr_stats(struct volr *v, struct volr_stats *st)
{
    volr_settle(v, 0);  /* the commits done behind are counted */
    *st = v->st;
}
