/*
 * sender_block.c: the data of a stream's run of blocks (sender_int.h):
 * each block sent whole (compressed, or a hole or zeros said in a
 * flag), as a DELTA against the receiver's basis, or as tensors against
 * a reference, and held blocks compared with ours (MATCH). Apart from
 * sender.c, which keeps the conversation (PLAN, offers, the receiver's
 * answers, FILE_END) and hands each stream its runs.
 */
#include "sender_int.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/clock.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/zst.h"
#include "delta/delta_match.h"
#include "volume/volsend.h"

/* 1 if [off, off + len) lies in a hole of the file. */
static int
sender_in_hole(int fd, uint64_t off, uint64_t len)
{
#ifdef SEEK_DATA
    off_t d = lseek(fd, (off_t)off, SEEK_DATA);

    if (d < 0)
        return errno == ENXIO;  /* no data after off */
    return (uint64_t)d >= off + len;
#else
    (void)fd; (void)off; (void)len;
    return 0;
#endif
}

static int
sender_scratch(struct sender *s)
{
    if (s->scratch == NULL &&
        (s->scratch = xmalloc(plan_block_size(s->p))) == NULL)
        return FERRY_ERR_NOMEM;
    return 0;
}

/*
 * Replaces the len raw bytes at data with their zstd form when that is at
 * least 1/16 smaller. Returns the bytes to send and sets BLOCK_F_ZSTD.
 * The block's read began at t0: the time since then, with what it came
 * to, tells the level (volsend_blocks_done).
 */
static size_t
sender_compress(struct sender *s, struct msg_block *m, uint8_t *data,
    size_t len, uint64_t t0)
{
    int *misses = plan_file_zst_misses(s->p, m->id);
    size_t clen;
    int r;

    if (!(plan_flags(s->p) & OPEN_F_COMPRESS) ||
        !(s->x->caps & PROTO_CAP_ZSTD) || *misses >= SENDER_ZST_TRIES ||
        len < 4096)
        return len;
    if ((s->zst == NULL && (s->zst = zst_new()) == NULL) ||
        sender_scratch(s) != 0)
        return len;
    r = zst_compress(s->zst, volsend_block_level(plan_packer(s->p)),
        s->scratch, len - len / 16, data, len, &clen);
    volsend_blocks_done(plan_packer(s->p), len, r == 0 ? clen : len,
        clock_ns() - t0);
    if (r != 0) {
        (*misses)++;
        return len;
    }
    *misses = 0;
    memcpy(data, s->scratch, clen);
    m->flags |= BLOCK_F_ZSTD;
    xfer_add(&s->x->st.bytes_compressed, len - clen);
    return clen;
}

static uint64_t
sender_block_len(struct sender *s, uint32_t id, uint64_t index)
{
    uint64_t size = manifest_entry(plan_manifest(s->p), id)->size;
    uint64_t off = index * plan_block_size(s->p);
    uint32_t bs = plan_block_size(s->p);

    return size - off < bs ? size - off : bs;
}

static int sender_send_delta(struct sender *s,
    const struct delta_index *ix, int roll, int fd, uint32_t id,
    uint64_t index, struct buf *out);

/* 1 if the block at index (its bytes data, len, hash h) starts as the
 * basis does at the same place: its block hash, where the receiver gave
 * them, or else its first piece (described). */
static int
sender_in_place(const struct delta_index *ix, uint64_t index,
    uint64_t off, const uint8_t *data, size_t len, const struct hash128 *h)
{
    struct delta_work w;
    uint64_t j = off / delta_index_piece(ix);

    if (delta_index_has_block(ix, index))
        return delta_index_same_block(ix, index, len, h);
    memset(&w, 0, sizeof(w));
    return j < delta_index_npieces(ix) &&
        delta_index_piece_len(ix, j) <= len &&
        delta_index_same(ix, j, data, delta_index_piece_len(ix, j), &w);
}

/* Sends block index of file id as it is (its bytes have, when they were
 * read already, else read here); with ix (a basis the search gave up
 * on), as a DELTA when the block begins as the basis does at its place. */
static int
sender_send_whole(struct sender *s, const struct delta_index *ix, int fd,
    uint32_t id, uint64_t index, const uint8_t *have, struct buf *out)
{
    uint64_t off = index * plan_block_size(s->p);
    size_t len = (size_t)sender_block_len(s, id, index), mark, got;
    uint64_t t0 = clock_ns();
    struct msg_block m;
    uint8_t *data;
    int r, zero = 0;

    memset(&m, 0, sizeof(m));
    m.id = id;
    m.offset = off;
    m.raw_len = (uint32_t)len;
    if (plan_file_sparse(s->p, id) && sender_in_hole(fd, off, len)) {
        m.flags = BLOCK_F_ZERO;
        hash_zero_block(len, &m.hash);
        if ((r = msg_block_encode(out, &m)) != 0)
            return r;
        zero = 1;
    } else {
        if ((r = msg_block_reserve(out, len, &mark, &data)) != 0)
            return r;
        if (have != NULL) {
            memcpy(data, have, len);
        } else if ((r = fsx_pread_full(fd, data, len, off, &got)) != 0 ||
            got != len) {
            buf_unreserve(out, buf_used(out) - mark);
            plan_file_abort(s->p, id, r != 0 ? r : FERRY_ERR_CHANGED);
            return 0;
        }
        hash_block(data, len, &m.hash);
        if (ix != NULL && sender_in_place(ix, index, off, data, len,
            &m.hash)) {
            buf_unreserve(out, buf_used(out) - mark);
            return sender_send_delta(s, ix, 0, fd, id, index, out);
        }
        if (ix != NULL)
            s->carry.valid = 0;
        if (hash_is_zero(data, len)) {
            m.flags = BLOCK_F_ZERO;
            zero = 1;
            xfer_add(&s->x->st.bytes_spared, len);
        } else {
            m.data = data;
            m.data_len = sender_compress(s, &m, data, len, t0);
            xfer_add(&s->x->st.bytes_moved, len);
        }
        if ((r = msg_block_commit(out, mark, len, &m)) != 0)
            return r;
    }
    plan_block_sent(s->p, id, index, s->stream, &m.hash, len, zero);
    return 0;
}

/* A DELTA frame is worth sending: some bytes come from the basis, and
 * the ops and literal data fit a frame. */
static int
sender_delta_pays(const struct delta_result *res, uint64_t len)
{
    uint64_t literal = len - res->copied;

    return res->copied > 0 && !res->overflow &&
        literal + res->nops * 13 + 64 <= PROTO_MAX_BLOCK;
}

/*
 * While a file's blocks found nothing in its basis (plan.h), a block is
 * first glanced at (delta_match_glance), in the basis when it is
 * described in full, else in the part described first (for the blocks
 * of the probe; others wait as before). 1 when the glance found nothing:
 * the block is sent whole, and may be what gives the search up (*r: an
 * error, or 0). 0 when it found something, or could not look: the block
 * is searched as any.
 */
static int
sender_glance(struct sender *s, const struct delta_index *ix, int fd,
    uint32_t id, uint64_t index, uint64_t lo, uint64_t size, uint64_t a,
    uint64_t e, struct buf *out, int *r)
{
    const struct delta_index *gx = ix;
    struct delta_work w;
    int found;

    *r = 0;
    if (!plan_delta_unproven(s->p, id))
        return 0;
    if (!delta_index_complete(ix) &&
        (gx = plan_file_probe(s->p, id, index)) == NULL)
        return 0;
    memset(&w, 0, sizeof(w));
    found = delta_match_glance(gx, s->window, lo, size, a, e, &w);
    xfer_add(&s->x->st.bytes_searched, w.rolled);
    plan_delta_found(s->p, id, (uint64_t)found);
    if ((*r = sender_say_basis(s, id, out)) != 0)
        return 1;
    if (found)
        return 0;
    s->carry.valid = 0;
    /* While the basis is read to sign it, the probe's blocks that found
     * nothing are held until it is decided: its DELTA_STOP then goes
     * before their data, and the receiver reads less of the basis. */
    if (!delta_index_complete(ix) && plan_delta_unproven(s->p, id)) {
        s->deferred = SENDER_HOLD;
        return 1;
    }
    *r = sender_send_whole(s, NULL, fd, id, index, s->window + (a - lo),
        out);
    return 1;
}

/*
 * Sends block index of file id as a DELTA against the receiver's basis
 * ix, or as a BLOCK when no part of it is found there (or it is zeros,
 * which a BLOCK says in one flag). Without roll, only what is at the
 * place the last match points to is looked for.
 */
static int
sender_send_delta(struct sender *s, const struct delta_index *ix, int roll,
    int fd, uint32_t id, uint64_t index, struct buf *out)
{
    uint64_t size = manifest_entry(plan_manifest(s->p), id)->size, lo, hi;
    uint64_t a = index * plan_block_size(s->p);
    size_t len = (size_t)sender_block_len(s, id, index), got, keep;
    const uint8_t *block;
    struct msg_delta m;
    int r, hashed, same;

    delta_match_window(ix, size, id, index, a, a + len, &s->carry, &lo,
        &hi);
    if (hi - lo > s->window_cap) {
        xfree(s->window);
        s->window_cap = 0;
        s->window_hi = s->window_lo = 0;
        if ((s->window = xmalloc((size_t)(hi - lo))) == NULL)
            return FERRY_ERR_NOMEM;
        s->window_cap = (size_t)(hi - lo);
    }
    if (s->ops == NULL && (s->ops = xmalloc(sizeof(*s->ops))) == NULL)
        return FERRY_ERR_NOMEM;
    /* The next block of a run: what the last window read past its block
     * is kept, so each byte is read once, not once more per piece of
     * look-ahead. */
    keep = 0;
    if (s->window_id == id && lo >= s->window_lo && lo < s->window_hi) {
        keep = (size_t)((s->window_hi < hi ? s->window_hi : hi) - lo);
        memmove(s->window, s->window + (lo - s->window_lo), keep);
    }
    s->window_hi = s->window_lo = 0;
    if (hi - lo > keep && ((r = fsx_pread_full(fd, s->window + keep,
        (size_t)(hi - lo) - keep, lo + keep, &got)) != 0 ||
        got != hi - lo - keep)) {
        plan_file_abort(s->p, id, r != 0 ? r : FERRY_ERR_CHANGED);
        return 0;
    }
    s->window_id = id;
    s->window_lo = lo;
    s->window_hi = hi;
    block = s->window + (a - lo);
    if (hash_is_zero(block, len)) {
        s->carry.valid = 0;
        return sender_send_whole(s, NULL, fd, id, index, NULL, out);
    }
    memset(&m, 0, sizeof(m));
    m.id = id;
    m.offset = a;
    m.raw_len = (uint32_t)len;
    /* Where the receiver gave the basis's block hashes, a block rewritten
     * nowhere (most of a checkpoint saved again) is known by the hash it
     * needs anyway: its pieces are not hashed a second time. */
    hashed = delta_index_has_block(ix, index);
    if (hashed)
        hash_block(block, len, &m.hash);
    same = hashed && delta_index_same_block(ix, index, len, &m.hash);
    if (!same && roll && sender_glance(s, ix, fd, id, index, lo, size, a,
        a + len, out, &r))
        return r;
    if (same)
        delta_match_same_block(id, index, a, a + len, &s->carry, s->ops);
    else if (!roll)
        delta_match_in_place(ix, s->window, lo, size, id, index, a,
            a + len, &s->carry, s->ops);
    else
        delta_match_block(ix, s->window, lo, size, id, index, a, a + len,
            &s->carry, s->ops);
    if (s->ops->incomplete) {
        s->deferred = 1;  /* sender_run puts the rest of its run aside */
        return 0;
    }
    xfer_add(&s->x->st.bytes_searched, s->ops->work.rolled);
    if (s->ops->gave_up) {
        char rel[MANIFEST_REL_MAX];

        log_debug("%s: block %llu: the search for the basis stopped after "
            "%llu bytes hashed for nothing",
            manifest_rel(plan_manifest(s->p), id, rel),
            (unsigned long long)index,
            (unsigned long long)s->ops->work.missed);
    }
    if (roll) {
        plan_delta_found(s->p, id, s->ops->copied);
        if ((r = sender_say_basis(s, id, out)) != 0)
            return r;
    }
    if (!sender_delta_pays(s->ops, len))
        return sender_send_whole(s, NULL, fd, id, index, NULL, out);
    if (!hashed)
        hash_block(block, len, &m.hash);
    if ((r = msg_delta_encode(out, &m, s->ops->ops, s->ops->nops)) != 0)
        return r;
    xfer_add(&s->x->st.bytes_moved, len - s->ops->copied);
    xfer_add(&s->x->st.bytes_spared, s->ops->copied);
    plan_block_built(s->p, id, index, s->stream, &m.hash, len,
        s->ops->copied);
    return 0;
}

/*
 * Sends block index of file id as its tensors' differences from the
 * reference (or their planes alone) when that is shorter than the block,
 * else whole (compressed as ever).
 */
static int
sender_send_tensor(struct sender *s, const struct plan_tensor *tz, int fd,
    uint32_t id, uint64_t index, struct buf *out)
{
    static const struct tensor_codec_opts opts = { ZST_LEVEL,
        TENSOR_CODEC_AUTO, 0 };
    uint64_t off = index * plan_block_size(s->p);
    size_t len = (size_t)sender_block_len(s, id, index), got;
    struct msg_tensor m;
    int r;

    if ((r = sender_scratch(s)) != 0 ||
        (s->tc == NULL && (s->tc = tensor_codec_new()) == NULL))
        return FERRY_ERR_NOMEM;
    if ((r = fsx_pread_full(fd, s->scratch, len, off, &got)) != 0 ||
        got != len) {
        plan_file_abort(s->p, id, r != 0 ? r : FERRY_ERR_CHANGED);
        return 0;
    }
    buf_reset(&s->tbody);
    /* A reference that cannot be read as it was hashed leaves this
     * block to go whole; a block of zeros goes as a flag. */
    if (hash_is_zero(s->scratch, len) || tensor_codec_block(s->tc, &opts,
        &tz->layout, tz->has_ref ? &tz->ref : NULL, off, s->scratch, len,
        &s->tbody, NULL) != 0 || buf_used(&s->tbody) >= len)
        return sender_send_whole(s, NULL, fd, id, index, s->scratch, out);
    memset(&m, 0, sizeof(m));
    m.id = id;
    m.offset = off;
    m.raw_len = (uint32_t)len;
    m.body = buf_ptr(&s->tbody);
    m.body_len = buf_used(&s->tbody);
    hash_block(s->scratch, len, &m.hash);
    if ((r = msg_tensor_encode(out, &m)) != 0)
        return r;
    xfer_add(&s->x->st.bytes_moved, len);
    xfer_add(&s->x->st.bytes_tensor, len);
    xfer_add(&s->x->st.bytes_tensor_saved, len - m.body_len);
    plan_block_coded(s->p, id, index, s->stream, &m.hash, len,
        len - m.body_len);
    return 0;
}

/* Sends block index of file id: against the receiver's basis when it
 * described one, as tensors when it named one, else whole. */
static int
sender_send_block(struct sender *s, int fd, uint32_t id, uint64_t index,
    struct buf *out)
{
    uint64_t off = index * plan_block_size(s->p);
    const struct plan_tensor *tz = plan_file_tensor(s->p, id);
    const struct delta_index *ix;
    int roll;

    if (tz != NULL && !(plan_file_sparse(s->p, id) &&
        sender_in_hole(fd, off, sender_block_len(s, id, index))))
        return sender_send_tensor(s, tz, fd, id, index, out);
    ix = plan_file_basis(s->p, id, &roll);
    if (ix == NULL || (plan_file_sparse(s->p, id) &&
        sender_in_hole(fd, off, sender_block_len(s, id, index))))
        return sender_send_whole(s, NULL, fd, id, index, NULL, out);
    /* Gave up on: only a block that starts as the basis does at its
     * place is looked at further. */
    if (!roll)
        return sender_send_whole(s, ix, fd, id, index, NULL, out);
    return sender_send_delta(s, ix, 1, fd, id, index, out);
}

/* Hashes block index of our file, as sender_send_whole would send it. */
static int
sender_hash_block(struct sender *s, int fd, uint32_t id, uint64_t index,
    struct hash128 *h)
{
    uint64_t off = index * plan_block_size(s->p);
    size_t len = (size_t)sender_block_len(s, id, index), got;
    int r;

    if (plan_file_sparse(s->p, id) && sender_in_hole(fd, off, len)) {
        hash_zero_block(len, h);
        return 0;
    }
    if ((r = sender_scratch(s)) != 0 ||
        (r = fsx_pread_full(fd, s->scratch, len, off, &got)) != 0)
        return r;
    if (got != len)
        return FERRY_ERR_CHANGED;
    hash_block(s->scratch, len, h);
    return 0;
}

/* Compares held blocks with ours: a run that agrees is kept (MATCH), a
 * block that differs is sent again (the receiver's partial came from
 * other data, or went bad). */
static int
sender_check_block(struct sender *s, struct plan_work *w, int fd,
    struct buf *out)
{
    uint64_t i = w->next, start = i;
    struct msg_match mm;
    struct hash128 h;
    int r;

    while (i < w->first + w->count) {
        uint64_t len = sender_block_len(s, w->id, i);

        if ((r = sender_hash_block(s, fd, w->id, i, &h)) != 0) {
            plan_file_abort(s->p, w->id, r);
            return 0;
        }
        s->step_read += len;
        if (!hash_equal(&h, &w->theirs[i - w->first]))
            break;
        plan_block_matched(s->p, w->id, i, &h, len);
        xfer_add(&s->x->st.bytes_spared, len);
        i++;
        if (i - start >= PROTO_MAX_SIGS || sender_step_full(s, out))
            break;
    }
    if (i > start) {
        mm.id = w->id;
        mm.first = start;
        mm.count = (uint32_t)(i - start);
        if ((r = msg_match_encode(out, &mm)) != 0)
            return r;
    } else {
        /* block i differs */
        if ((r = plan_block_differs(s->p, w->id, i)) != 0)
            return r;
        i++;
    }
    w->next = i;
    return 0;
}

/* Works on the stream's run until it is done or the output is full. */
int
sender_run(struct sender *s, struct plan_work *w, struct buf *out)
{
    int r, fd;

    if ((r = plan_file_fd(s->p, w->id, &fd)) != 0) {
        plan_file_abort(s->p, w->id, r);
        plan_run_done(s->p, s->stream);
        return 0;
    }
    while (w->next < w->first + w->count && !sender_step_full(s, out) &&
        plan_file_active(s->p, w->id)) {
        if (w->kind == PW_CHECK) {
            r = sender_check_block(s, w, fd, out);
        } else {
            s->step_read += sender_block_len(s, w->id, w->next);
            r = sender_send_block(s, fd, w->id, w->next, out);
            plan_delta_seen(s->p, w->id, w->next++);
            if (r == 0)
                r = sender_say_basis(s, w->id, out);
        }
        if (r == 0 && s->deferred) {
            uint64_t b = w->next - 1, n = 1;

            /* A block not all found while the basis is still being
             * described waits for all of it (what moved may be in what
             * is not described yet). Alone, it waits by itself and the
             * run goes on: data rewritten in place leaves one block in
             * many so. Two in a row look like data that moved: the rest
             * of the run waits too, rather than being read now and
             * again later. */
            if (s->deferred != SENDER_HOLD) {
                if (s->defer_id == w->id && s->defer_next == b)
                    n = w->first + w->count - b;
                s->defer_id = w->id;
                s->defer_next = b + 1;
            }
            s->deferred = 0;
            r = plan_delta_defer(s->p, w->id, b, n);
            if (n > 1)
                w->next = w->first + w->count;
        }
        if (r != 0)
            return r;
    }
    if (w->next >= w->first + w->count || !plan_file_active(s->p, w->id))
        plan_run_done(s->p, s->stream);
    return 0;
}
