#include "incoming_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/zst.h"
#include "../proto/tensor_piece.h"
#include "dest_write.h"
#include "formcheck.h"
#include "volume/volrecv.h"


struct incoming *
incoming_new(struct dest *d, uint32_t block_size, struct xfer *x)
{
    struct incoming *in = xcalloc(1, sizeof(*in));

    if (in == NULL)
        return NULL;
    in->d = d;
    in->x = x;
    in->block_size = block_size;
    buf_init(&in->outbox, 16u << 20);
    return in;
}

/* Ends a file's life here. */
static void
rfile_free(struct incoming *in, struct rfile *f, enum partial_end how)
{
    int partfd = -1;

    incoming_delta_forget(in, f);
    incoming_keep_forget(in, f);
    if (f->pt != NULL && dest_part_dir(in->d, &partfd) == 0)
        partial_close(f->pt, partfd, how);
    else if (f->pt != NULL)
        partial_close(f->pt, -1, PARTIAL_KEEP);
    if (f->bits != NULL)
        in->blocks_tracked -= f->nblocks;
    if (f->hf != NULL)
        in->pending -= hash_file_pending(f->hf);
    hash_file_free(f->hf);
    partial_claim_free(&f->claim);
    xfree(f->bits);
    xfree(f->path);
    xfree(f);
}

static void
incoming_drop(struct incoming *in, struct rfile *f, enum partial_end how)
{
    incoming_verify_forget(in, f);
    incoming_table_remove(in, f);
    rfile_free(in, f, how);
}

/* Commits what is complete when the connection is gone: those files are
 * whole and checked, and nobody is told (a later run finds them up to
 * date). */
static void
incoming_commit_orphans(struct incoming *in)
{
    struct buf sink;

    buf_init(&sink, (size_t)-1);
    if (dest_batch_len(in->d) > 0 && incoming_flush(in, &sink) != 0)
        log_debug("%s: commit on close failed", dest_root(in->d));
    buf_cleanup(&sink);
}

void
incoming_free(struct incoming *in)
{
    size_t i;

    if (in == NULL)
        return;
    incoming_wb_free(in);
    volrecv_free(in->vr);
    incoming_commit_orphans(in);
    for (i = 0; i < in->by_id.cap; i++)
        if (in->by_id.slot[i] != NULL)
            rfile_free(in, in->by_id.slot[i], PARTIAL_KEEP);
    ptab_free(&in->by_id);
    ptab_free(&in->by_key);
    xfree(in->wanted);
    xfree(in->vol0);
    buf_cleanup(&in->outbox);
    pathset_free(&in->done);
    zst_free(in->zst);
    tensor_piece_free(in->tp);
    xfree(in->scratch);
    xfree(in->sigs);
    xfree(in);
}

void
incoming_restart(struct incoming *in)
{
    size_t i;

    incoming_wb_discard(in);
    volrecv_restart(in->vr);
    incoming_commit_orphans(in);
    for (i = 0; i < in->by_id.cap; i++) {
        struct rfile *f = in->by_id.slot[i];

        if (f == NULL)
            continue;
        xfer_sub(&in->x->st.bytes_done, f->counted);
        rfile_free(in, f, PARTIAL_KEEP);
    }
    ptab_clear(&in->by_id);
    ptab_clear(&in->by_key);
    in->blocks_tracked = 0;
    buf_reset(&in->outbox);  /* for the attempt that is gone */
    in->vhead = in->vtail = NULL;
    in->shead = in->stail = NULL;
    in->nsigs = 0;
    /* An attempt that ended before PLAN made neither table. */
    if (in->wanted != NULL)
        memset(in->wanted, 0, in->wanted_cap);
    if (in->vol0 != NULL)
        memset(in->vol0, 0, in->vol0_cap);
}

void
incoming_sync_partials(struct incoming *in)
{
    size_t i;

    for (i = 0; i < in->by_id.cap; i++) {
        struct rfile *f = in->by_id.slot[i];

        if (f != NULL && f->pt != NULL && partial_sync(f->pt) != 0)
            log_debug("%s: journal not synced", f->path);
    }
}

struct buf *
incoming_outbox(struct incoming *in)
{
    return &in->outbox;
}

uint64_t
incoming_active(const struct incoming *in)
{
    return in->by_id.n;
}

const struct msg_summary *
incoming_summary(const struct incoming *in)
{
    return &in->sum;
}

void
incoming_count_failed(struct incoming *in)
{
    in->sum.files_failed++;
}

void
incoming_skipped(struct incoming *in, const char *path, uint64_t size)
{
    in->sum.files_skipped++;
    if (pathset_add(&in->done, path)) {
        xfer_add(&in->x->st.files_skipped, 1);
        xfer_add(&in->x->st.bytes_done, size);
        xfer_file(in->x, path, "skipped", size, NULL);
    }
}

void
incoming_adopted(struct incoming *in, const char *path, uint64_t size)
{
    in->sum.files_skipped++;
    if (pathset_add(&in->done, path)) {
        xfer_add(&in->x->st.files_skipped, 1);
        xfer_add(&in->x->st.files_adopted, 1);
        xfer_add(&in->x->st.bytes_done, size);
        xfer_file(in->x, path, "adopted", size, NULL);
    }
}

static int
incoming_file_done(struct buf *out, uint32_t id, int code)
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

/* The per-block state, made on first use. */
int
incoming_track_blocks(struct incoming *in, struct rfile *f)
{
    if (f->bits != NULL || f->nblocks == 0)
        return 0;
    if (in->blocks_tracked + f->nblocks > INCOMING_MAX_BLOCKS)
        return FERRY_ERR_TOO_LARGE;
    if ((f->bits = xcalloc(f->nblocks, 1)) == NULL)
        return FERRY_ERR_NOMEM;
    in->blocks_tracked += f->nblocks;
    return 0;
}

static int
rfile_hash(struct rfile *f, uint32_t block_size)
{
    if (f->hf == NULL && (f->hf = hash_file_new(f->size,
        block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    return 0;
}

/* The part file, made (and the state directory with it) on first use. */
static int
rfile_open(struct incoming *in, struct rfile *f)
{
    struct partial_id id = { f->path, f->size, f->mtime_sec, f->mtime_nsec,
        f->mode, in->block_size };
    int partfd, r;

    if (f->pt != NULL)
        return 0;
    if ((r = dest_part_dir(in->d, &partfd)) != 0)
        return r;
    return partial_open(partfd, f->key, &id, NULL, &f->pt);
}

/* The rest of a failed file's data is ignored. */
int
incoming_file_error(struct incoming *in, struct rfile *f, int r)
{
    if (dest_fatal_errno(r)) {
        xfer_file_stopped(in->x, f->id, f->path, f->size, r);
        return xfer_fail(in->x, r, "%s/%s: %s", dest_root(in->d), f->path,
            ferry_strerror(r));
    }
    if (r == FERRY_ERR_NOMEM || r == FERRY_ERR_TOO_LARGE ||
        r == FERRY_ERR_PROTOCOL)
        return r;
    if (f->failed == 0)
        f->failed = r;
    return 0;
}

/* Ends a file the sender gave up on, or that failed here. */
static int
rfile_fail(struct incoming *in, struct rfile *f, enum xfer_side side,
    int code, const char *text, struct buf *out)
{
    int r;

    xfer_file_failed(in->x, side, f->path, NULL, f->size, code, text);
    xfer_add(&in->x->st.bytes_done, f->size - f->counted);
    in->sum.files_failed++;
    r = incoming_file_done(out, f->id, code);
    incoming_drop(in, f, PARTIAL_DISCARD);
    return r;
}

/* With whole_formats: 1 if f, complete and checked, is a known format
 * cut short (then it failed, and nothing is committed), 0 if not, or a
 * fatal error. */
static int
rfile_torn(struct incoming *in, struct rfile *f, int fd, struct buf *out)
{
    struct formcheck fc;
    char text[160];
    int r;

    if (formcheck_fd(fd, f->size, &fc) != 0 || fc.form == FORM_UNKNOWN ||
        fc.whole)
        return 0;
    snprintf(text, sizeof(text), "%s, %s: its writer is not done with it",
        formcheck_name(fc.form), fc.why);
    r = rfile_fail(in, f, SIDE_SOURCE, FERRY_ERR_TORN, text, out);
    return r != 0 ? r : 1;
}

void
incoming_set_whole_formats(struct incoming *in, int on)
{
    in->whole_formats = on;
}

/* Every block is there and the sender has ended: check the file hash
 * and stage the file for the batch commit. */
static int
rfile_complete(struct incoming *in, struct rfile *f, struct buf *out)
{
    struct dest_staged s;
    struct hash128 h;
    int r, fd;

    if (!f->ended || f->nresolved != f->nblocks)
        return 0;
    if (f->failed != 0)
        return rfile_fail(in, f, SIDE_DEST, f->failed, NULL, out);
    if ((r = rfile_hash(f, in->block_size)) != 0)
        return r;
    hash_file_final(f->hf, &h);
    if (!hash_equal(&h, &f->end_hash))
        return rfile_fail(in, f, SIDE_DEST, FERRY_ERR_HASH_MISMATCH, NULL,
            out);
    if ((r = rfile_open(in, f)) != 0 ||
        (r = partial_sync(f->pt)) != 0) {
        if ((r = incoming_file_error(in, f, r)) != 0)
            return r;
        return rfile_fail(in, f, SIDE_DEST, f->failed, NULL, out);
    }
    fd = partial_fd(f->pt);
    if (in->whole_formats && (r = rfile_torn(in, f, fd, out)) != 0)
        return r < 0 ? r : 0;
    if ((r = dest_write_seal(fd, f->mode, f->mtime_sec,
        f->mtime_nsec)) != 0) {
        if ((r = incoming_file_error(in, f, r)) != 0)
            return r;
        return rfile_fail(in, f, SIDE_DEST, f->failed, NULL, out);
    }
    memset(&s, 0, sizeof(s));
    s.id = f->id;
    s.path = f->path;
    s.size = f->size;
    s.pt = f->pt;
    s.owner = f;
    f->path = NULL;
    f->pt = NULL;
    /* The counts travel with the staged file to its commit. */
    if ((r = dest_stage(in->d, &s)) != 0) {
        f->path = s.path;
        f->pt = s.pt;
        return r;
    }
    incoming_table_remove(in, f);
    f->vnext = NULL;
    incoming_delta_forget(in, f);  /* every block is settled */
    return dest_batch_full(in->d) ? incoming_flush(in, out) : 0;
}

static int
incoming_committed(void *ctx, struct dest_staged *s)
{
    struct incoming *in = ((void **)ctx)[0];
    struct buf *out = ((void **)ctx)[1];
    struct rfile *f = s->owner;
    int r;

    /* Its signatures describe it as it is now, committed; the old
     * version's, if it was the basis, describe a file that is gone. */
    if (s->failed == 0 && f->ksig != NULL &&
        (r = keptsig_save(in->ks, f->ksig, partial_fd(s->pt))) != 0)
        log_debug("%s: signatures not kept: %s", s->path,
            ferry_strerror(r));
    if (s->failed == 0 && f->basis_replaced)
        keptsig_forget(in->ks, &f->basis_st);
    if (s->failed != 0) {
        xfer_file_failed(in->x, SIDE_DEST, s->path, NULL, s->size, s->failed,
            NULL);
        in->sum.files_failed++;
    } else {
        xfer_add(&in->x->st.files_sent, 1);
        xfer_add(&in->x->st.bytes_payload, f->size);
        xfer_add(&in->x->st.bytes_literal, f->n.literal);
        xfer_add(&in->x->st.bytes_sparse, f->n.sparse);
        xfer_add(&in->x->st.resumed_bytes, f->n.resumed);
        xfer_add(&in->x->st.bytes_matched, f->n.matched);
        (void)pathset_add(&in->done, s->path);
        xfer_file(in->x, s->path, "sent", f->size, &f->n);
        in->sum.files_committed++;
        in->sum.bytes_written += f->size;
    }
    r = incoming_file_done(out, s->id, s->failed);
    rfile_free(in, f, PARTIAL_DONE);
    return r;
}

int
incoming_flush(struct incoming *in, struct buf *out)
{
    void *ctx[2] = { in, out };

    return dest_flush(in->d, incoming_committed, ctx);
}

/* A key no other active file uses (the salt makes a clash a fluke, and
 * this makes it harmless). */
static void
rfile_key(struct incoming *in, struct rfile *f)
{
    partial_key(dest_salt(in->d), f->path, f->key);
    if (incoming_table_key_taken(in, f))
        snprintf(f->key, sizeof(f->key), "%08x%08x", f->id,
            (unsigned)in->by_id.n);
}

int
incoming_want(struct incoming *in, const struct msg_entry *m,
    const char *path, struct buf *out)
{
    const char *warning = NULL;
    struct msg_reply rep;
    struct rfile *f;
    int r, partfd;

    if (in->by_id.n >= INCOMING_MAX_FILES)
        return FERRY_ERR_PROTOCOL;
    /* Staging keys are salted with the destination's secret, which comes
     * with the state directory: made now, so that a path has the same key
     * in every run (a resume finds its partial). Without it no file can
     * be staged: the transfer stops. */
    if ((r = dest_part_dir(in->d, &partfd)) != 0)
        return r;
    if ((f = xcalloc(1, sizeof(*f))) == NULL)
        return FERRY_ERR_NOMEM;
    if ((f->path = xstrdup(path)) == NULL) {
        xfree(f);
        return FERRY_ERR_NOMEM;
    }
    f->id = m->id;
    f->size = m->size;
    f->mode = m->mode;
    f->mtime_sec = m->mtime_sec;
    f->mtime_nsec = m->mtime_nsec;
    f->nblocks = m->size / in->block_size + (m->size % in->block_size != 0);
    rfile_key(in, f);
    if ((r = incoming_table_mark_wanted(in, f->id)) != 0 || (r = incoming_table_insert(in, f)) != 0) {
        rfile_free(in, f, PARTIAL_KEEP);
        return r;
    }
    if ((r = incoming_verify_resume(in, f, &warning)) != 0 ||
        (r = incoming_delta_open(in, f, path)) != 0)
        return r;
    memset(&rep, 0, sizeof(rep));
    rep.id = m->id;
    rep.action = REPLY_WANT;
    rep.flags = (f->resume ? REPLY_F_RESUME : 0) |
        (f->delta ? REPLY_F_DELTA : 0) | (f->tensor ? REPLY_F_TENSOR : 0);
    rep.text.p = warning != NULL ? warning : "";
    rep.text.len = strlen(rep.text.p);
    /* BASIS behind its REPLY, once its basis is hashed: the sender holds
     * the file's blocks until it knows its reference. */
    if ((r = msg_reply_encode(out, &rep)) != 0 ||
        (f->tensor && (r = incoming_tensor_start(in, f, out)) != 0))
        return r;
    xfer_add(f->resume || f->delta || f->tensor ? &in->x->st.bytes_reusable :
        &in->x->st.bytes_whole, f->size);
    if (f->resume && (r = incoming_verify_start(in, f, out)) != 0)
        return r;
    if (f->delta)
        incoming_delta_start(in, f);
    return 0;
}

struct rfile *
incoming_data_file(struct incoming *in, uint32_t id, int *r)
{
    struct rfile *f = incoming_table_find(in, id);

    *r = 0;
    if (f == NULL && !incoming_table_was_wanted(in, id))
        *r = FERRY_ERR_PROTOCOL;
    return f;
}

/* Block index of f resolved with hash h. */
static int
incoming_resolve(struct incoming *in, struct rfile *f, uint64_t index,
    const struct hash128 *h)
{
    size_t before;
    int r;

    if ((r = rfile_hash(f, in->block_size)) != 0)
        return r;
    /* Blocks far ahead of a gap wait in memory: a sender that spreads
     * them wider than INCOMING_MAX_PENDING is not one of ours. */
    before = hash_file_pending(f->hf);
    if ((r = hash_file_put(f->hf, index, h, INCOMING_MAX_PENDING -
        (size_t)in->pending + before)) != 0)
        return r == FERRY_ERR_TOO_LARGE ? FERRY_ERR_PROTOCOL : r;
    in->pending = in->pending - before + hash_file_pending(f->hf);
    f->bits[index] |= B_RESOLVED;
    f->nresolved++;
    return 0;
}

/*
 * Settles block index of f (incoming_int.h): with behind, data is in a
 * buffer of incoming_wb_buffer and its write and the rest are left to
 * the writer and incoming_settle_written, unless f failed or is resumed.
 */
static int
incoming_settle(struct incoming *in, struct rfile *f, uint64_t index,
    const uint8_t *data, uint32_t len, const struct hash128 *h,
    const struct msg_delta *built, int behind, struct buf *out)
{
    uint64_t off = index * in->block_size;
    int r, d;

    behind = behind && data != NULL && f->failed == 0 && !f->resume;
    /* Else blocks written behind are settled first, in their order. */
    if (!behind && (r = incoming_drain(in, out)) != 0)
        return r;
    if ((r = incoming_resolve(in, f, index, h)) != 0)
        return r;
    f->counted += len;
    xfer_add(&in->x->st.bytes_done, len);
    if (f->failed != 0)
        return rfile_complete(in, f, out);
    if ((r = incoming_keep(in, f, off, data, len, h, built)) != 0)
        return r;
    if ((r = rfile_open(in, f)) == 0 && behind) {
        incoming_wb_submit(in, f, index, h, len, partial_fd(f->pt));
        return 0;
    }
    /* A failed open is settled after the blocks before it. */
    if (r != 0 && (d = incoming_drain(in, out)) != 0)
        return d;
    if (r == 0 && data == NULL && f->resume)
        r = partial_zero(f->pt, off, len);
    if (r == 0 && data != NULL)
        r = fsx_pwrite_all(partial_fd(f->pt), data, len, off);
    return incoming_settle_written(in, f, index, h, data == NULL ? 0 : len,
        r, 1, out);
}

int
incoming_settle_block(struct incoming *in, struct rfile *f, uint64_t index,
    const uint8_t *data, uint32_t len, const struct hash128 *h,
    const struct msg_delta *built, struct buf *out)
{
    return incoming_settle(in, f, index, data, len, h, built, 0, out);
}

int
incoming_settle_behind(struct incoming *in, struct rfile *f,
    uint64_t index, const uint8_t *data, uint32_t len,
    const struct hash128 *h, const struct msg_delta *built,
    struct buf *out)
{
    return incoming_settle(in, f, index, data, len, h, built, 1, out);
}

int
incoming_settle_written(struct incoming *in, struct rfile *f,
    uint64_t index, const struct hash128 *h, uint32_t len, int wr,
    int last, struct buf *out)
{
    int r = wr;

    if (r == 0 && f->failed == 0)
        r = partial_add(f->pt, index, h, len);
    if (r != 0 && (r = incoming_file_error(in, f, r)) != 0)
        return r;
    return last ? rfile_complete(in, f, out) : 0;
}

int
incoming_block(struct incoming *in, const struct msg_block *m,
    struct buf *out)
{
    struct rfile *f;
    struct hash128 h;
    const uint8_t *data = m->data;
    uint64_t index;
    int r, zero = (m->flags & BLOCK_F_ZERO) != 0;

    if ((r = incoming_block_frame(in, m->id, m->offset, m->raw_len,
        INCOMING_AS_BLOCK, &f, &index)) != 0 || f == NULL)
        return r;
    if (m->flags & BLOCK_F_ZSTD) {
        if (!(in->x->caps & PROTO_CAP_ZSTD))
            return FERRY_ERR_PROTOCOL;  /* not negotiated */
        if ((in->zst == NULL && (in->zst = zst_new()) == NULL) ||
            (in->scratch == NULL &&
            (in->scratch = xmalloc(in->block_size)) == NULL))
            return FERRY_ERR_NOMEM;
        /* A frame that does not inflate to exactly raw_len is as bad as
         * a wrong hash. */
        if (zst_decompress(in->zst, in->scratch, m->raw_len, m->data,
            m->data_len) != 0) {
            /* It cannot be written; the file fails, the block still
             * counts as settled so that the file can end. */
            f->failed = f->failed ? f->failed : FERRY_ERR_HASH_MISMATCH;
            if ((r = incoming_resolve(in, f, index, &m->hash)) != 0)
                return r;
            return rfile_complete(in, f, out);
        }
        xfer_add(&in->x->st.bytes_compressed, m->raw_len - m->data_len);
        data = in->scratch;
    }
    if (zero)
        hash_zero_block(m->raw_len, &h);
    else
        hash_block(data, m->raw_len, &h);
    if (!hash_equal(&h, &m->hash) && f->failed == 0)
        f->failed = FERRY_ERR_HASH_MISMATCH;
    if (zero) {
        f->n.sparse += m->raw_len;
        xfer_add(&in->x->st.bytes_spared, m->raw_len);
    } else {
        f->n.literal += m->raw_len;
        xfer_add(&in->x->st.bytes_moved, m->raw_len);
    }
    return incoming_settle_block(in, f, index, zero ? NULL : data,
        m->raw_len, &h, NULL, out);
}

/* Finds the hash the journal recorded (and read-back confirmed) for a
 * held block. */
static const struct hash128 *
rfile_held_hash(const struct rfile *f, uint64_t index)
{
    uint64_t lo = 0, hi = f->claim.n;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (f->claim.index[mid] < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->claim.n && f->claim.index[lo] == index ?
        &f->claim.hash[lo] : NULL;
}

int
incoming_match(struct incoming *in, const struct msg_match *m,
    struct buf *out)
{
    const struct hash128 *h;
    struct rfile *f;
    uint64_t i, len;
    int r;

    if ((f = incoming_data_file(in, m->id, &r)) == NULL)
        return r;
    if (!f->resume || m->first + m->count > f->nblocks)
        return FERRY_ERR_PROTOCOL;
    for (i = m->first; i < m->first + m->count; i++) {
        /* Only blocks we said we hold, once. */
        if ((f->bits[i] & (B_HAVE | B_RESOLVED)) != B_HAVE ||
            (h = rfile_held_hash(f, i)) == NULL)
            return FERRY_ERR_PROTOCOL;
        if ((r = incoming_resolve(in, f, i, h)) != 0)
            return r;
        len = incoming_block_len(in, f, i);
        f->n.resumed += len;
        f->counted += len;
        xfer_add(&in->x->st.bytes_done, len);
        xfer_add(&in->x->st.bytes_spared, len);
    }
    return rfile_complete(in, f, out);
}

int
incoming_file_end(struct incoming *in, const struct msg_file_end *m,
    struct buf *out)
{
    char text[PROTO_MAX_MESSAGE + 1];
    struct rfile *f;
    int r;

    if ((f = incoming_data_file(in, m->id, &r)) == NULL)
        return r;
    if (f->ended)
        return 0;  /* sent again after a stream was lost */
    if (m->code != 0) {
        /* The sender gave up on it (changed or unreadable): the source
         * side's failure; keep nothing. */
        snprintf(text, sizeof(text), "%.*s", (int)m->text.len, m->text.p);
        return rfile_fail(in, f, SIDE_SOURCE, proto_err_from_wire(m->code),
            text, out);
    }
    /* The sender cannot have settled blocks we have not described. */
    if (f->resume && f->nsigned != f->nblocks)
        return FERRY_ERR_PROTOCOL;
    f->ended = 1;
    f->end_hash = m->hash;
    if (f->nblocks == 0 && (r = rfile_hash(f, in->block_size)) != 0)
        return r;
    return rfile_complete(in, f, out);
}

int
incoming_work(struct incoming *in, struct buf *out, int idle, int verify,
    int *more)
{
    int r;

    uint64_t budget = INCOMING_VERIFY_BYTES, sign = INCOMING_SIGS_STEP;

    *more = 0;
    /* Bases first: the sender waits for all of a basis before it sends
     * that file's blocks, while held blocks it can compare one run at a
     * time. */
    if (verify && ((r = incoming_delta_step(in, out, &sign)) != 0 ||
        (r = incoming_tensor_step(in, out, &sign)) != 0 ||
        (budget -= INCOMING_SIGS_STEP - sign,
        r = incoming_verify_step(in, out, &budget)) != 0))
        return r;
    *more = verify && (in->vhead != NULL || in->shead != NULL ||
        in->thead != NULL);
    if (dest_batch_full(in->d) || (idle && dest_batch_len(in->d) > 0))
        return incoming_flush(in, out);
    return 0;
}

/* Volumes (volrecv.c) */

struct volrecv *
incoming_volrecv(struct incoming *in)
{
    if (in->vr == NULL)
        in->vr = volrecv_new(in, in->d, in->block_size, in->x);
    return in->vr;
}

int
incoming_pack_done(struct incoming *in, uint32_t id, unsigned stream,
    struct buf *out)
{
    struct rfile *f = incoming_table_find(in, id);
    struct xfer_file_counts n = { 0, 0, 0, 0, 0, 0 };
    int r;

    /* Given back meanwhile (its stream taken as lost): answered when its
     * blocks are. */
    if (f == NULL || f->packed_by != stream + 1)
        return 0;
    if (stream == 0 && (r = incoming_table_mark_vol0(in, id)) != 0)
        return r;
    xfer_add(&in->x->st.files_sent, 1);
    xfer_add(&in->x->st.bytes_payload, f->size);
    xfer_add(&in->x->st.bytes_literal, f->size);
    xfer_add(&in->x->st.bytes_moved, f->size);
    xfer_add(&in->x->st.bytes_done, f->size - f->counted);
    (void)pathset_add(&in->done, f->path);
    n.literal = f->size;
    xfer_file(in->x, f->path, "sent", f->size, &n);
    in->sum.files_committed++;
    in->sum.bytes_written += f->size;
    incoming_drop(in, f, PARTIAL_DISCARD);
    return incoming_file_done(out, id, 0);
}
