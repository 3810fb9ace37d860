#include "volwrite.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/buf.h"
#include "../../common/fsx.h"
#include "../../common/hash.h"
#include "../../common/zst.h"
#include "../../proto/limits.h"
#include "volume.h"

struct volw {
    struct volw_opts o;
    struct volw_sink s;
    char *name;
    struct zst_enc *z;
    struct buf out;        /* compressed bytes on their way to the sink */
    struct buf hdr;        /* the headers of the member being placed */
    uint8_t *blk;          /* one block of file data */
    size_t fill;           /* bytes of the current block read so far */
    char *pname;           /* a piece's member name */
    const uint8_t *mem;    /* volw_add_mem: the file's bytes still to copy */
    int broken;            /* a member was left half written */
    int open;              /* a volume is being written */
    uint32_t vol;          /* its index */
    uint64_t vol_bytes;    /* its compressed bytes, exact */
    uint64_t unflushed;    /* raw bytes fed since zstd last emitted all */
    uint64_t frame_raw;    /* raw bytes of the frame being written */
    uint64_t raw;          /* its tar stream so far */
    uint64_t members;
    struct volw_totals t;
};

static const uint8_t volw_zeros[TAR_END_SIZE];

/* Hands what zstd emitted to the sink. */
static int
volw_emit(struct volw *w)
{
    size_t n = buf_used(&w->out);
    int r;

    if (n == 0)
        return 0;
    r = w->s.write(w->s.ctx, buf_ptr(&w->out), n);
    w->vol_bytes += n;
    w->t.compressed += n;
    buf_reset(&w->out);
    return r;
}

static int
volw_feed(struct volw *w, const void *p, size_t n)
{
    int r;

    if ((r = zst_enc_put(w->z, p, n, &w->out)) != 0)
        return r;
    w->raw += n;
    w->unflushed += n;
    w->frame_raw += n;
    return volw_emit(w);
}

/* Makes vol_bytes exact. */
static int
volw_flush(struct volw *w)
{
    int r;

    if (w->unflushed == 0)
        return 0;
    if ((r = zst_enc_flush(w->z, &w->out)) != 0)
        return r;
    w->unflushed = 0;
    return volw_emit(w);
}

/* 1 if n more raw bytes, then the end of the archive, surely fit. */
static int
volw_fits(const struct volw *w, uint64_t n)
{
    return w->vol_bytes + zst_enc_bound(w->unflushed + n + TAR_END_SIZE) <=
        w->o.volume_size;
}

static int
volw_fits_empty(const struct volw *w, uint64_t n)
{
    return zst_enc_bound(n + TAR_END_SIZE) <= w->o.volume_size;
}

static int
volw_open(struct volw *w)
{
    if (w->vol == w->o.max_volumes)
        return FERRY_ERR_TOO_LARGE;
    w->vol++;
    w->open = 1;
    w->vol_bytes = w->unflushed = w->raw = w->members = 0;
    return w->s.open(w->s.ctx, w->vol);
}

static int
volw_close(struct volw *w)
{
    struct volw_volume v;
    int r;

    if ((r = volw_feed(w, volw_zeros, TAR_END_SIZE)) != 0 ||
        (r = zst_enc_end(w->z, &w->out)) != 0 || (r = volw_emit(w)) != 0)
        return r;
    w->open = 0;
    w->unflushed = w->frame_raw = 0;
    w->t.volumes = w->vol;
    v.index = w->vol;
    v.bytes = w->vol_bytes;
    v.raw = w->raw;
    v.members = w->members;
    return w->s.close(w->s.ctx, &v);
}

/* A volume in which n raw bytes fit (n fits an empty one). */
static int
volw_room(struct volw *w, uint64_t n)
{
    int r;

    if (!w->open && (r = volw_open(w)) != 0)
        return r;
    if (volw_fits(w, n))
        return 0;
    if ((r = volw_flush(w)) != 0)
        return r;
    if (volw_fits(w, n))
        return 0;
    /* volw_add refused what an empty volume cannot hold, so these are
     * the caller's mistakes, not limits: they stop a loop of empty
     * volumes. */
    if (w->members == 0)
        return FERRY_ERR_USAGE;
    if ((r = volw_close(w)) != 0 || (r = volw_open(w)) != 0)
        return r;
    return volw_fits(w, n) ? 0 : FERRY_ERR_USAGE;
}

static int
volw_record(struct volw *w, const struct vman_rec *rec)
{
    if (rec->type != VMAN_HEAD && rec->type != VMAN_END)
        w->t.entries++;
    return w->s.record(w->s.ctx, rec);
}

/* Reads n bytes of the file from fd into the stream, hashing it block by
 * block (blocks run across pieces: w->fill carries over). */
static int
volw_copy(struct volw *w, int fd, uint64_t n, struct hash_file *hf)
{
    struct hash128 bh;
    ssize_t k;
    size_t want;
    int r;

    /* A file in memory (volw_add_mem) was hashed before: its bytes go
     * to zstd as they are. */
    if (w->mem != NULL) {
        if ((r = volw_feed(w, w->mem, (size_t)n)) != 0)
            return r;
        w->mem += n;
        return 0;
    }
    while (n > 0) {
        want = w->o.block_size - w->fill;
        if (want > n)
            want = (size_t)n;
        k = read(fd, w->blk + w->fill, want);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return FERRY_ERR_CHANGED;
        if ((r = volw_feed(w, w->blk + w->fill, (size_t)k)) != 0)
            return r;
        w->fill += (size_t)k;
        n -= (uint64_t)k;
        if (w->fill == w->o.block_size) {
            hash_block(w->blk, w->fill, &bh);
            hash_file_add(hf, &bh);
            w->fill = 0;
        }
    }
    return 0;
}

/* The file's last short block, then its hash. */
static void
volw_hash_end(struct volw *w, struct hash_file *hf, struct hash128 *out)
{
    struct hash128 bh;

    if (w->fill > 0) {
        hash_block(w->blk, w->fill, &bh);
        hash_file_add(hf, &bh);
        w->fill = 0;
    }
    hash_file_final(hf, out);
}

/* Writes the member whose headers are in w->hdr, with n data bytes from
 * fd; *offset gets where its data starts. */
static int
volw_member(struct volw *w, int fd, uint64_t n, struct hash_file *hf,
    uint64_t *offset)
{
    int r;

    if ((r = volw_feed(w, buf_ptr(&w->hdr), buf_used(&w->hdr))) != 0)
        return r;
    *offset = w->raw;
    if (n > 0 && ((r = volw_copy(w, fd, n, hf)) != 0 ||
        (r = volw_feed(w, volw_zeros, tar_pad(n))) != 0))
        return r;
    w->members++;
    return 0;
}

/* Headers of piece index of e, holding n bytes from offset, into w->hdr. */
static int
volw_piece_hdr(struct volw *w, const struct volw_entry *e, uint32_t index,
    uint64_t offset, uint64_t n)
{
    struct tar_entry te;
    size_t len;
    int r;

    if ((r = volume_piece_name(e->path, strlen(e->path), index, w->pname,
        VOLUME_NAME_MAX, &len)) != 0)
        return r;
    memset(&te, 0, sizeof(te));
    te.type = TAR_FILE;
    te.path = w->pname;
    te.path_len = len;
    te.link = "";
    te.size = n;
    te.mode = e->mode & 01777;
    te.mtime_sec = e->mtime_sec;
    te.mtime_nsec = e->mtime_nsec;
    te.is_piece = 1;
    te.piece.index = index;
    te.piece.offset = offset;
    te.piece.file_size = e->size;
    te.piece.path = e->path;
    te.piece.path_len = strlen(e->path);
    buf_reset(&w->hdr);
    return tar_header_put(&w->hdr, &te);
}

/* The largest piece (index, from offset) that fits the current volume,
 * whose zstd output is exact (flushed); 0 if none. Header sizes depend a
 * little on the piece's size, so the search builds them. */
static int
volw_piece_fit(struct volw *w, const struct volw_entry *e, uint32_t index,
    uint64_t offset, uint64_t *fit)
{
    uint64_t lo = 0, hi = e->size - offset, mid;
    int r, ok;

    *fit = 0;
    while (lo < hi) {
        mid = lo + (hi - lo + 1) / 2;
        if ((r = volw_piece_hdr(w, e, index, offset, mid)) != 0)
            return r;
        ok = volw_fits(w, buf_used(&w->hdr) + mid + tar_pad(mid));
        if (ok)
            lo = mid;
        else
            hi = mid - 1;
    }
    if ((r = volw_piece_hdr(w, e, index, offset, lo)) != 0)
        return r;
    if (!volw_fits(w, buf_used(&w->hdr) + lo + tar_pad(lo)))
        return 0;
    /* Whole tar blocks, unless it is the file's last piece. */
    *fit = lo == e->size - offset ? lo : lo - lo % TAR_BLOCK;
    return 0;
}

/* A file larger than a volume: one piece per volume it spans. */
static int
volw_split(struct volw *w, const struct volw_entry *e, int fd,
    struct hash_file *hf, struct vman_rec *rec)
{
    uint64_t off = 0, n, least, at;
    uint32_t index = 0;
    int r;

    least = w->o.volume_size / 16;
    least -= least % TAR_BLOCK;
    while (off < e->size) {
        if ((!w->open && (r = volw_open(w)) != 0) ||
            (r = volw_flush(w)) != 0 ||
            (r = volw_piece_fit(w, e, index + 1, off, &n)) != 0)
            return r;
        if (n < least && n < e->size - off) {
            /* An empty volume holds far more than least (volw_new's
             * minimum size): not a limit but a broken invariant. */
            if (w->members == 0)
                return FERRY_ERR_USAGE;
            if ((r = volw_close(w)) != 0)
                return r;
            continue;
        }
        index++;
        if ((r = volw_piece_hdr(w, e, index, off, n)) != 0 ||
            (r = volw_member(w, fd, n, hf, &at)) != 0)
            return r;
        rec->type = VMAN_PIECE;
        rec->index = index;
        rec->file_offset = off;
        rec->size = n;
        rec->volume = w->vol;
        rec->offset = at;
        if ((r = volw_record(w, rec)) != 0)
            return r;
        w->t.pieces++;
        off += n;
        if (off < e->size && (r = volw_close(w)) != 0)
            return r;
    }
    rec->type = VMAN_FILE;
    rec->size = e->size;
    rec->pieces = index;
    rec->volume = 0;
    rec->offset = 0;
    rec->index = 0;
    rec->file_offset = 0;
    return 0;
}

int
volw_new(const struct volw_opts *o, const struct volw_sink *s,
    struct volw **out)
{
    struct vman_rec head;
    struct volw *w;
    int r;

    *out = NULL;
    if (o->volume_size < VOLUME_MIN_SIZE ||
        o->volume_size > VOLUME_MAX_SIZE || o->name == NULL ||
        o->name[0] == '\0' || (o->block_size != 0 &&
        (o->block_size < PROTO_MIN_BLOCK || o->block_size > PROTO_MAX_BLOCK ||
        (o->block_size & (o->block_size - 1)) != 0)) ||
        o->max_volumes > VOLUME_MAX_COUNT)
        return FERRY_ERR_USAGE;
    if ((w = xcalloc(1, sizeof(*w))) == NULL)
        return FERRY_ERR_NOMEM;
    w->o = *o;
    if (w->o.block_size == 0)
        w->o.block_size = PROTO_DEFAULT_BLOCK;
    if (w->o.max_volumes == 0)
        w->o.max_volumes = VOLUME_MAX_COUNT;
    w->s = *s;
    buf_init(&w->out, SIZE_MAX / 2);
    buf_init(&w->hdr, 4 * TAR_MAX_EXT);
    w->name = xstrdup(o->name);
    w->z = o->enc != NULL ? o->enc : zst_enc_new();
    if (o->enc != NULL)
        zst_enc_reset(w->z);
    if (w->z != NULL && w->o.level != 0)
        zst_enc_set_level(w->z, w->o.level);
    w->blk = xmalloc(w->o.block_size);
    w->pname = xmalloc(VOLUME_NAME_MAX);
    if (w->name == NULL || w->z == NULL || w->blk == NULL ||
        w->pname == NULL) {
        volw_free(w);
        return FERRY_ERR_NOMEM;
    }
    w->o.name = w->name;
    memset(&head, 0, sizeof(head));
    head.type = VMAN_HEAD;
    head.path = w->name;
    head.path_len = strlen(w->name);
    head.volume_size = w->o.volume_size;
    head.block_size = w->o.block_size;
    if ((r = volw_record(w, &head)) != 0) {
        volw_free(w);
        return r;
    }
    *out = w;
    return 0;
}

void
volw_free(struct volw *w)
{
    if (w == NULL)
        return;
    if (w->z != w->o.enc)
        zst_enc_free(w->z);
    buf_cleanup(&w->out);
    buf_cleanup(&w->hdr);
    xfree(w->blk);
    xfree(w->pname);
    xfree(w->name);
    xfree(w);
}

/* volw_add; with mem (in_mem), the file's bytes are there: it is hashed
 * first, so that its record goes to the sink before its bytes do, and
 * never split. */
static int
volw_add_entry(struct volw *w, const struct volw_entry *e, int fd,
    int in_mem, const uint8_t *mem)
{
    struct hash_file *hf = NULL;
    struct tar_entry te;
    struct vman_rec rec;
    uint64_t need;
    size_t plen;
    int r, split;

    if (w->broken)
        return FERRY_ERR_USAGE;
    plen = strlen(e->path);
    if (fsx_path_check(e->path, plen) != 0 || (e->type == TAR_SYMLINK &&
        (e->target == NULL || e->target[0] == '\0' ||
        strlen(e->target) > PROTO_MAX_LINK)))
        return FERRY_ERR_BAD_PATH;
    if (e->type != TAR_FILE && e->type != TAR_DIR && e->type != TAR_SYMLINK)
        return FERRY_ERR_USAGE;
    memset(&te, 0, sizeof(te));
    te.type = e->type;
    te.path = e->path;
    te.path_len = plen;
    te.link = e->type == TAR_SYMLINK ? e->target : "";
    te.link_len = strlen(te.link);
    te.size = e->type == TAR_FILE ? e->size : 0;
    te.mode = e->mode & 01777;
    te.mtime_sec = e->mtime_sec;
    te.mtime_nsec = e->mtime_nsec;
    buf_reset(&w->hdr);
    if ((r = tar_header_put(&w->hdr, &te)) != 0)
        return r == FERRY_ERR_NOMEM ? r : FERRY_ERR_USAGE;
    memset(&rec, 0, sizeof(rec));
    rec.type = e->type == TAR_FILE ? VMAN_FILE : e->type == TAR_DIR ?
        VMAN_DIR : VMAN_SYMLINK;
    rec.path = e->path;
    rec.path_len = plen;
    need = buf_used(&w->hdr) + te.size + tar_pad(te.size);
    split = e->type == TAR_FILE && !volw_fits_empty(w, need);
    if (split && in_mem)
        return FERRY_ERR_USAGE;
    if (e->type == TAR_FILE) {
        rec.size = e->size;
        if (in_mem && (r = hash_mem(mem, e->size, w->o.block_size,
            &rec.hash)) != 0)
            return r;
        if (!in_mem &&
            (hf = hash_file_new(e->size, w->o.block_size)) == NULL)
            return FERRY_ERR_NOMEM;
    }
    w->fill = 0;
    w->broken = 1;
    if (split) {
        r = volw_split(w, e, fd, hf, &rec);
    } else if ((r = volw_room(w, need)) == 0 && in_mem) {
        rec.volume = w->vol;
        rec.offset = w->raw + buf_used(&w->hdr);
        w->mem = mem;
        if ((r = volw_record(w, &rec)) == 0)
            r = volw_member(w, fd, te.size, NULL, &rec.offset);
        w->mem = NULL;
    } else if (r == 0) {
        r = volw_member(w, fd, te.size, hf, &rec.offset);
        rec.volume = w->vol;
    }
    if (r == 0 && e->type == TAR_FILE) {
        if (hf != NULL)
            volw_hash_end(w, hf, &rec.hash);
        w->t.files++;
        w->t.bytes += e->size;
    }
    if (r == 0 && !in_mem)
        r = volw_record(w, &rec);
    hash_file_free(hf);
    if (r == 0)
        w->broken = 0;
    return r;
}

int
volw_add(struct volw *w, const struct volw_entry *e, int fd)
{
    return volw_add_entry(w, e, fd, 0, NULL);
}

int
volw_add_mem(struct volw *w, const struct volw_entry *e, const void *data)
{
    if (e->type != TAR_FILE)
        return FERRY_ERR_USAGE;
    /* fd -1 is never used: the bytes are at data. */
    return volw_add_entry(w, e, -1, 1, data);
}

int
volw_finish(struct volw *w)
{
    struct vman_rec end;
    int r;

    if (w->broken)
        return FERRY_ERR_USAGE;
    w->broken = 1;
    if (!w->open && w->vol == 0 && (r = volw_open(w)) != 0)
        return r;
    if (w->open && (r = volw_close(w)) != 0)
        return r;
    memset(&end, 0, sizeof(end));
    end.type = VMAN_END;
    end.volume = w->t.volumes;
    end.entries = w->t.entries;
    end.files = w->t.files;
    end.size = w->t.bytes;
    if ((r = volw_record(w, &end)) != 0)
        return r;
    w->broken = 0;
    return 0;
}

void
volw_totals(const struct volw *w, struct volw_totals *t)
{
    *t = w->t;
}

void
volw_set_level(struct volw *w, int level)
{
    zst_enc_set_level(w->z, level != 0 ? level : ZST_LEVEL);
}

int
volw_end_frame(struct volw *w)
{
    int r;

    if (w->broken)
        return FERRY_ERR_USAGE;
    if (!w->open || w->frame_raw == 0)
        return 0;
    if ((r = zst_enc_end(w->z, &w->out)) != 0 || (r = volw_emit(w)) != 0) {
        w->broken = 1;
        return r;
    }
    w->unflushed = w->frame_raw = 0;
    return 0;
}

int
volw_cut(struct volw *w)
{
    int r;

    if (w->broken)
        return FERRY_ERR_USAGE;
    if (!w->open)
        return 0;
    w->broken = 1;
    if ((r = volw_close(w)) != 0)
        return r;
    w->broken = 0;
    return 0;
}
