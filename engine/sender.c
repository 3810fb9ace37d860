#include "sender.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/clock.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/zst.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "delta_match.h"
#include "volsend.h"

enum snd_state { SND_PLAN, SND_WAIT_READY, SND_RUN, SND_WAIT_SUMMARY,
    SND_DONE };

/* Blocks of a file that may fail to shrink before we stop trying: data
 * that is already compressed (checkpoints, images) costs nothing then. */
#define SENDER_ZST_TRIES 4

/* sender.deferred: the block waits alone (sender_glance). */
#define SENDER_HOLD 2

struct sender {
    struct plan *p;
    struct xfer *x;
    unsigned stream;
    enum snd_state state;
    size_t notices_sent;
    uint8_t *scratch;       /* a block: compression, comparisons */
    struct zst *zst;        /* with OPEN_F_COMPRESS */
    /* Delta: the file around the block being matched, the ops found,
     * and where the last block's search left off. */
    uint8_t *window;
    size_t window_cap;
    uint32_t window_id;       /* the window holds [window_lo, window_hi) */
    uint64_t window_lo, window_hi;  /* of this file */
    struct delta_result *ops;
    struct delta_carry carry;
    int deferred;             /* the last block waits for the basis
                                 (SENDER_HOLD: alone, whatever came
                                 before) */
    uint32_t defer_id;        /* ... and the block after the last one */
    uint64_t defer_next;      /* that waited alone, or 0 */
    uint64_t step_read;       /* file bytes this step read (step_full) */
    uint64_t seen;            /* types taken that come once, by bit */
    /* Tensors: the codec's work space and a block's pieces. */
    struct tensor_codec *tc;
    struct buf tbody;
    int ready_due;            /* PLAN went, READY not yet in */
    int totals_due;           /* a live PLAN went, TOTALS not yet */
};

struct sender *
sender_new(struct plan *p, unsigned stream, struct xfer *x)
{
    struct sender *s = xcalloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->p = p;
    s->x = x;
    s->stream = stream;
    buf_init(&s->tbody, TENSOR_CODEC_BOUND(PROTO_MAX_BLOCK));
    /* A further stream sends data only. */
    s->state = stream == 0 ? SND_PLAN : SND_RUN;
    return s;
}

void
sender_retire(struct sender *s)
{
    plan_stream_lost(s->p, s->stream);
}

void
sender_free(struct sender *s)
{
    if (s == NULL)
        return;
    xfree(s->scratch);
    zst_free(s->zst);
    xfree(s->window);
    xfree(s->ops);
    tensor_codec_free(s->tc);
    buf_cleanup(&s->tbody);
    xfree(s);
}

static int
sender_on_ready(struct sender *s, const struct frame *f,
    struct conn_step *st)
{
    struct manifest *mf = plan_manifest(s->p);
    struct msg_ready ready;
    char name[FSX_NAME_MAX + 1];
    int r;

    (void)st;
    if ((r = msg_ready_decode(f->payload, f->len, &ready)) != 0)
        return r;
    if (ready.rename.len > 0) {
        if (!manifest_single_file(mf))
            return FERRY_ERR_PROTOCOL;
        memcpy(name, ready.rename.p, ready.rename.len);
        name[ready.rename.len] = '\0';
        if ((r = manifest_rename_top(mf, name)) != 0)
            return r;
        s->x->dest_renamed = 1;
    }
    s->ready_due = 0;
    if (s->state == SND_WAIT_READY)
        s->state = SND_RUN;
    return 0;
}

/* The client's volume settings for a pull (packer's rules). */
static int
sender_on_vol_opts(struct sender *s, const struct frame *f,
    struct conn_step *st)
{
    struct msg_vol_opts m;
    int r;

    (void)st;
    if (plan_packer(s->p) == NULL)
        return FERRY_ERR_PROTOCOL;
    if ((r = msg_vol_opts_decode(f->payload, f->len, &m)) != 0)
        return r;
    return volsend_on_opts(plan_packer(s->p), &m);
}

/* What checking kept data cost the receiver (a resumed push). */
static int
sender_on_readback(struct sender *s, const struct frame *f,
    struct conn_step *st)
{
    struct msg_readback m;
    int r;

    (void)st;
    if ((r = msg_readback_decode(f->payload, f->len, &m)) != 0)
        return r;
    xfer_add(&s->x->st.readback_bytes, m.bytes);
    xfer_add(&s->x->st.readback_ns, m.ns);
    return 0;
}

/* What the plan has to tell the receiver of the basis of file id: stop
 * signing it (DELTA_STOP), sign the rest (DELTA_GO), or nothing. */
static int
sender_say_basis(struct sender *s, uint32_t id, struct buf *out)
{
    struct msg_delta_stop stop;
    struct msg_delta_go go;

    switch (plan_delta_say(s->p, id)) {
    case PLAN_SAY_STOP:
        stop.id = id;
        return msg_delta_stop_encode(out, &stop);
    case PLAN_SAY_GO:
        go.id = id;
        return msg_delta_go_encode(out, &go);
    default:
        return 0;
    }
}

/* A message the plan takes as it comes; wakes: it may give the streams
 * work (the window moved, runs are free to go). */
#define SENDER_TO_PLAN(name, wakes)                                          \
    static int                                                               \
    sender_on_##name(struct sender *s, const struct frame *f,                \
        struct conn_step *st)                                                \
    {                                                                        \
        struct msg_##name m;                                                 \
        int r;                                                               \
                                                                             \
        if ((r = msg_##name##_decode(f->payload, f->len, &m)) != 0)          \
            return r;                                                        \
        st->poke |= wakes;                                                   \
        return plan_on_##name(s->p, &m);                                     \
    }

SENDER_TO_PLAN(reply, 1)
SENDER_TO_PLAN(sigs, 1)

/* Signatures may leave the probe unable to start (no memory to hold the
 * part described): the rest of the basis is asked for. */
static int
sender_on_delta_sigs(struct sender *s, const struct frame *f,
    struct conn_step *st)
{
    struct msg_delta_sigs m;
    int r;

    if ((r = msg_delta_sigs_decode(f->payload, f->len, &m)) != 0 ||
        (r = plan_on_delta_sigs(s->p, &m)) != 0)
        return r;
    st->poke = 1;
    return sender_say_basis(s, m.id, st->out);
}
SENDER_TO_PLAN(delta_blocks, 0)
SENDER_TO_PLAN(basis, 1)
SENDER_TO_PLAN(file_done, 1)

/* The receiver's ERROR follows, on the stream that failed. */
static int
sender_on_stop(struct sender *s, const struct frame *f,
    struct conn_step *st)
{
    struct msg_stop m;
    int r;

    (void)st;
    if ((r = msg_stop_decode(f->payload, f->len, &m)) != 0)
        return r;
    plan_on_stop(s->p, &m);
    return 0;
}

static int
sender_on_retire(struct sender *s, const struct frame *f,
    struct conn_step *st)
{
    struct msg_retire m;
    int r;

    if ((r = msg_retire_decode(f->payload, f->len, &m)) != 0)
        return r;
    log_debug("stream %u retired by the receiver", m.stream);
    plan_stream_retired(s->p, m.stream);
    st->poke = 1;  /* its work, for the others */
    return 0;
}

static int
sender_on_summary(struct sender *s, const struct frame *f,
    struct conn_step *st)
{
    struct msg_summary m;
    int r;

    if ((r = msg_summary_decode(f->payload, f->len, &m)) != 0)
        return r;
    s->state = SND_DONE;
    st->done = 1;
    return 0;
}

#define SND_IN(state) (1u << (state))
#define SND_GOING (SND_IN(SND_RUN) | SND_IN(SND_WAIT_SUMMARY))
#define SND_ANY 0xffu

/* What the sender takes from the receiver, in which states, and what only
 * once; the stream and the capability each needs are msg_table.h's. */
static const struct {
    int (*fn)(struct sender *s, const struct frame *f, struct conn_step *st);
    uint8_t states;
    uint8_t once;
} sender_dispatch[MSG_TYPE_MAX + 1] = {
    [MSG_READY] = { sender_on_ready, SND_ANY, 0 },
    [MSG_REPLY] = { sender_on_reply, SND_IN(SND_RUN), 0 },
    [MSG_SIGS] = { sender_on_sigs, SND_IN(SND_RUN), 0 },
    [MSG_DELTA_SIGS] = { sender_on_delta_sigs, SND_IN(SND_RUN), 0 },
    [MSG_DELTA_BLOCKS] = { sender_on_delta_blocks, SND_IN(SND_RUN), 0 },
    [MSG_BASIS] = { sender_on_basis, SND_IN(SND_RUN), 0 },
    [MSG_VOL_OPTS] = { sender_on_vol_opts, SND_IN(SND_RUN), 0 },
    [MSG_FILE_DONE] = { sender_on_file_done, SND_GOING, 0 },
    [MSG_STOP] = { sender_on_stop, SND_GOING, 0 },
    [MSG_RETIRE] = { sender_on_retire, SND_GOING, 0 },
    [MSG_READBACK] = { sender_on_readback, SND_IN(SND_WAIT_SUMMARY), 1 },
    [MSG_SUMMARY] = { sender_on_summary, SND_IN(SND_WAIT_SUMMARY), 0 },
};

static int
sender_on_frame(struct sender *s, const struct frame *f, struct conn_step *st)
{
    const struct msg_info *mi = msg_info(f->type);

    if (f->type == MSG_ERROR)
        return xfer_peer_error(s->x, f->payload, f->len);
    /* The receiver answers PLAN first, whatever the sender sent after it
     * (a STOP may come first: its ERROR follows). */
    if (mi == NULL || sender_dispatch[f->type].fn == NULL ||
        !(sender_dispatch[f->type].states & SND_IN(s->state)) ||
        (mi->stream0 && s->stream != 0) ||
        (mi->cap != 0 && !(s->x->caps & mi->cap)) ||
        (s->seen & (UINT64_C(1) << f->type)) ||
        (s->ready_due ? f->type != MSG_READY && f->type != MSG_STOP :
        f->type == MSG_READY)) {
        log_debug("unexpected %s from receiver", msg_type_name(f->type));
        return FERRY_ERR_PROTOCOL;
    }
    if (sender_dispatch[f->type].once)
        s->seen |= UINT64_C(1) << f->type;
    return sender_dispatch[f->type].fn(s, f, st);
}

static int
sender_offer(struct sender *s, uint32_t id, struct buf *out)
{
    struct manifest *mf = plan_manifest(s->p);
    struct mentry *e = manifest_entry(mf, id);
    const struct hash128 *h = manifest_hash(mf, id);
    struct hash128 made;
    char rel[MANIFEST_REL_MAX];
    struct msg_entry m;
    int r, fd;

    memset(&m, 0, sizeof(m));
    if ((plan_flags(s->p) & OPEN_F_CHECKSUM) && e->kind == ENTRY_FILE &&
        h == NULL) {
        if ((fd = manifest_open(mf, id, FSX_O_READ)) < 0)
            r = fd;
        else if ((r = hash_fd(fd, e->size, plan_block_size(s->p),
            &made)) == 0)
            manifest_set_hash(mf, id, &made);
        if (fd >= 0)
            close(fd);
        /* Offer it anyway without a hash: the receiver then wants it and
         * the read error is reported when the data is read. */
        if (r != 0)
            log_debug("hash %s: %s", manifest_rel(mf, id, rel),
                ferry_strerror(r));
        h = manifest_hash(mf, id);
    }
    m.id = id;
    m.kind = e->kind;
    m.mode = e->mode;
    m.size = e->size;
    m.mtime_sec = e->mtime_sec;
    m.mtime_nsec = e->mtime_nsec;
    m.has_hash = h != NULL;
    if (h != NULL)
        m.hash = *h;
    m.path.p = manifest_rel(mf, id, rel);
    m.path.len = strlen(rel);
    m.target.p = manifest_target(mf, id);
    m.target.len = m.target.p != NULL ? strlen(m.target.p) : 0;
    if ((r = msg_entry_encode(out, &m)) != 0)
        return r;
    plan_offered(s->p, id);
    return 0;
}

static int
sender_send_notices(struct sender *s, struct buf *out)
{
    struct manifest *mf = plan_manifest(s->p);
    int r;

    while (s->notices_sent < manifest_notices(mf)) {
        const struct mnotice *n = manifest_notice_at(mf, s->notices_sent);
        struct msg_notice m;

        m.code = proto_err_to_wire(n->code);
        m.path.p = n->path;
        m.path.len = strlen(n->path);
        if (m.path.len > PROTO_MAX_PATH)
            m.path.len = PROTO_MAX_PATH;
        m.text.p = n->text;
        m.text.len = strlen(n->text);
        if (m.text.len > PROTO_MAX_MESSAGE)
            m.text.len = PROTO_MAX_MESSAGE;
        if ((r = msg_notice_encode(out, &m)) != 0)
            return r;
        /* The side that scanned reports its own problems. */
        xfer_problem(s->x, SIDE_SOURCE, n->path, n->code, n->text);
        s->notices_sent++;
    }
    return 0;
}

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

/*
 * 1 when this step has done its share: CONN_STEP_BUDGET of output, or as
 * many bytes of files read. A block matched or built from the basis
 * sends a few bytes for a whole block read, and a step that waited for
 * its output to fill would read most of a file before the receiver,
 * which builds from those few bytes, could start.
 */
static int
sender_step_full(const struct sender *s, const struct buf *out)
{
    return buf_used(out) >= CONN_STEP_BUDGET ||
        s->step_read >= CONN_STEP_BUDGET;
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

/* A checkpoint's block of len bytes went, codec_ns of it in the codec:
 * the governor may change how the next go (tensor_gov.h). */
static void
sender_tensor_gov(struct sender *s, uint64_t len, uint64_t codec_ns)
{
    struct tensor_gov *g = plan_tensor_gov(s->p);

    if (tensor_gov_block(g, len, codec_ns, clock_ns()))
        log_debug("tensors: coded %.0f MB/s, whole %.0f MB/s: the next "
            "blocks go %s", g->code_rate / 1e6, g->whole_rate / 1e6,
            g->mode == TENSOR_GOV_CODE ? "coded" : "whole");
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
    uint64_t t0;
    int r, coded;

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
    t0 = clock_ns();
    coded = !hash_is_zero(s->scratch, len) && tensor_codec_block(s->tc,
        &opts, &tz->layout, tz->has_ref ? &tz->ref : NULL, off, s->scratch,
        len, &s->tbody, NULL) == 0 && buf_used(&s->tbody) < len;
    sender_tensor_gov(s, len, clock_ns() - t0);
    if (!coded)
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
    plan_block_sent(s->p, id, index, s->stream, &m.hash, len, 0);
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
        sender_in_hole(fd, off, sender_block_len(s, id, index)))) {
        if (plan_tensor_gov(s->p)->mode == TENSOR_GOV_CODE)
            return sender_send_tensor(s, tz, fd, id, index, out);
        sender_tensor_gov(s, sender_block_len(s, id, index), 0);
        return sender_send_whole(s, NULL, fd, id, index, NULL, out);
    }
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
static int
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

static int
sender_same_file(const struct mentry *e, const struct stat *st)
{
    return S_ISREG(st->st_mode) && (uint64_t)st->st_size == e->size &&
        st->st_mtim.tv_sec == e->mtime_sec &&
        (uint32_t)st->st_mtim.tv_nsec == e->mtime_nsec;
}

/* FILE_END for a file whose blocks are all sent or matched, after a last
 * look that the source did not change while it was read. */
static int
sender_end_file(struct sender *s, uint32_t id, struct buf *out)
{
    struct mentry *e = manifest_entry(plan_manifest(s->p), id);
    struct msg_file_end m;
    struct stat st;
    const char *text;
    int fd, code;

    memset(&m, 0, sizeof(m));
    m.id = id;
    if ((code = plan_file_aborted(s->p, id)) == 0 && e->size > 0) {
        if ((code = plan_file_fd(s->p, id, &fd)) == 0 &&
            (fstat(fd, &st) != 0 || !sender_same_file(e, &st)))
            code = FERRY_ERR_CHANGED;
        if (code != 0)
            plan_file_abort(s->p, id, code);
    }
    if (code != 0) {
        text = ferry_strerror(code);
        m.code = proto_err_to_wire(code);
        m.text.p = text;
        m.text.len = strlen(text);
    } else {
        plan_file_hash(s->p, id, &m.hash);
    }
    plan_file_ended(s->p, id, s->stream);
    return msg_file_end_encode(out, &m);
}

/* How often a sender whose scan goes on looks for what it published. */
#define SENDER_SCAN_POLL_MS 5

/* The scan of a live plan (plan.h): 1 while it goes on, 0 once it
 * ended, or its error (said once, for the transfer). */
static int
sender_scanning(struct sender *s)
{
    int r = plan_scanning(s->p);

    if (r < 0)
        return xfer_fail(s->x, r, "scanning the sources: %s",
            ferry_strerror(r));
    return r;
}

static int
sender_send_plan(struct sender *s, struct conn_step *st, struct buf *out)
{
    struct manifest *mf = plan_manifest(s->p);
    struct msg_totals t;
    struct msg_plan plan;
    int r;

    memset(&plan, 0, sizeof(plan));
    if ((r = sender_scanning(s)) < 0)
        return r;
    if (r == 1) {
        /* Offers may start before the scan ends, with a receiver that
         * knows TOTALS, once two entries say this is not a single
         * file. */
        if (!(s->x->caps & PROTO_CAP_LIVE) || manifest_avail(mf) < 2) {
            st->wake_ms = SENDER_SCAN_POLL_MS;
            return 0;
        }
        plan.flags = PLAN_F_LIVE;
        s->totals_due = 1;
    } else {
        plan_totals(s->p, &t);
        plan.flags = manifest_single_file(mf) ? PLAN_F_SINGLE_FILE : 0;
        plan.ntop = mf->ntop;
        plan.entries_total = t.entries_total;
        plan.files_total = t.files_total;
        plan.bytes_total = t.bytes_total;
    }
    /* Only a single file's READY can change what is offered (its new
     * name); otherwise the offers follow PLAN at once, a round trip
     * sooner, and READY is checked when it comes. */
    s->state = plan.flags & PLAN_F_SINGLE_FILE ? SND_WAIT_READY : SND_RUN;
    s->ready_due = 1;
    return msg_plan_encode(out, &plan);
}

static int
sender_produce(struct sender *s, struct conn_step *st)
{
    struct buf *out = st->out;
    struct plan_work *w;
    uint32_t id;
    int r, packed;

    if (s->state == SND_PLAN && (r = sender_send_plan(s, st, out)) != 0)
        return r;
    if (s->state != SND_RUN)
        return 0;
    if (s->stream == 0 && (r = sender_send_notices(s, out)) != 0)
        return r;
    plan_stream_up(s->p, s->stream);
    s->step_read = 0;
    while (!sender_step_full(s, out)) {
        if (s->stream == 0 && plan_next_offer(s->p, &id)) {
            if ((r = sender_offer(s, id, out)) != 0)
                return r;
            continue;
        }
        if (plan_next_ready(s->p, &id)) {
            if ((r = sender_end_file(s, id, out)) != 0)
                return r;
            continue;
        }
        if ((r = volsend_work(plan_packer(s->p), s->stream,
            !plan_spares(s->p, s->stream) &&
            !plan_spares_volumes(s->p, s->stream), out, &packed)) != 0)
            return r;
        if (packed)
            continue;
        if ((w = plan_current(s->p, s->stream)) == NULL)
            break;
        if (w->next == w->first)
            st->poke = 1;  /* more may be queued: let the others look */
        if ((r = sender_run(s, w, out)) != 0)
            return r;
    }
    if (sender_step_full(s, out)) {
        st->more = 1;
        return 0;
    }
    /* A volume left open while the scan goes on waits a little for more
     * (volsend.h, VOLSEND_LINGER_NS), then ends at a later look. */
    if (volsend_open(plan_packer(s->p), s->stream) &&
        plan_scanning(s->p) == 1)
        st->wake_ms = SENDER_SCAN_POLL_MS;
    if (s->stream == 0 && s->totals_due) {
        struct msg_totals t;

        if ((r = sender_scanning(s)) < 0)
            return r;
        if (r == 1) {
            st->wake_ms = SENDER_SCAN_POLL_MS;
            return 0;
        }
        plan_totals(s->p, &t);
        if ((r = msg_totals_encode(out, &t)) != 0)
            return r;
        s->totals_due = 0;
    }
    if (s->stream == 0 && plan_all_finished(s->p)) {
        if ((r = msg_end_encode(out)) != 0)
            return r;
        s->state = SND_WAIT_SUMMARY;
    }
    return 0;
}

int
sender_step(void *role, struct conn_step *st)
{
    struct sender *s = role;
    struct frame f;
    size_t off = 0;
    int r;

    while ((r = conn_step_frame(st, &off, &f)) > 0)
        if ((r = sender_on_frame(s, &f, st)) != 0)
            return r;
    if (r < 0)
        return r;
    if (s->state == SND_DONE)
        return 0;
    if (st->eof) {
        /* A further stream that ends is retired; its work goes to the
         * others. Stream 0 ending early is a lost connection. */
        if (s->stream != 0) {
            sender_retire(s);
            st->done = 1;
            st->poke = 1;
            return 0;
        }
        return FERRY_ERR_CLOSED;
    }
    return sender_produce(s, st);
}
