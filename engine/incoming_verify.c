#include "incoming_int.h"

#include <string.h>

#include "../common/alloc.h"
#include "../common/clock.h"

/* SIGS for blocks [first, first + count) of f: NEED, or HAVE with their
 * hashes (consecutive blocks). */
static int
incoming_verify_sigs_emit(struct buf *out, uint32_t id, uint64_t first,
    uint64_t count, const struct hash128 *hashes)
{
    struct msg_sigs m;
    int r;

    while (count > 0) {
        memset(&m, 0, sizeof(m));
        m.id = id;
        m.first = first;
        m.count = count > PROTO_MAX_SIGS ? PROTO_MAX_SIGS : (uint32_t)count;
        m.flags = hashes != NULL ? SIGS_F_HAVE : 0;
        m.hashes = hashes != NULL ? hashes[0].b : NULL;
        if ((r = msg_sigs_encode(out, &m)) != 0)
            return r;
        first += m.count;
        count -= m.count;
        if (hashes != NULL)
            hashes += m.count;
    }
    return 0;
}

static void
rfile_sign(struct rfile *f, uint64_t first, uint64_t count, int have)
{
    uint64_t i;

    for (i = first; i < first + count; i++)
        f->bits[i] |= B_SIGNED | (have ? B_HAVE : 0);
    f->nsigned += count;
}

/* The blocks the journal does not claim: needed at once. */
static int
rfile_sign_gaps(struct rfile *f, struct buf *out)
{
    uint64_t next = 0, k;
    int r;

    for (k = 0; k <= f->claim.n; k++) {
        uint64_t end = k < f->claim.n ? f->claim.index[k] : f->nblocks;

        if (end > next) {
            if ((r = incoming_verify_sigs_emit(out, f->id, next, end - next,
                NULL)) != 0)
                return r;
            rfile_sign(f, next, end - next, 0);
        }
        next = end + 1;
    }
    return 0;
}

/* Says that claimed blocks [start, end) of f are held (HAVE, with their
 * hashes) or not (NEED). */
static int
rfile_verify_emit(struct rfile *f, struct buf *out, uint64_t start,
    uint64_t end, int good)
{
    const struct partial_claim *c = &f->claim;
    int r;

    if ((r = incoming_verify_sigs_emit(out, f->id, c->index[start],
        end - start, good ? &c->hash[start] : NULL)) != 0)
        return r;
    rfile_sign(f, c->index[start], end - start, good);
    f->verified = end;
    return 0;
}

/*
 * Says that the claimed blocks of f not read back yet are needed, without
 * reading them: f failed (a block the sender sent did not check out, a
 * write failed, its kept partial cannot be read), so it keeps nothing,
 * and the sender can end it only once every block is described. Until
 * 2026-12-05 a file that failed between two steps of its read-back was
 * taken off the queue half described, and its sender waited for ever.
 */
static int
rfile_need_rest(struct rfile *f, struct buf *out)
{
    const struct partial_claim *c = &f->claim;
    uint64_t k, start;
    int r;

    for (k = start = f->verified; k < c->n; k++)
        if (k + 1 == c->n || c->index[k + 1] != c->index[k] + 1) {
            if ((r = rfile_verify_emit(f, out, start, k + 1, 0)) != 0)
                return r;
            start = k + 1;
        }
    return 0;
}

/* Reads back claimed blocks of f, up to *budget bytes, each once, and
 * says which are held and which not, in runs of consecutive blocks that
 * read back alike. */
static int
rfile_verify(struct incoming *in, struct rfile *f, struct buf *out,
    uint64_t *budget)
{
    struct partial_claim *c = &f->claim;
    uint64_t k, start;
    int r, good = 0;

    if (f->failed != 0)
        return rfile_need_rest(f, out);
    if (in->scratch == NULL &&
        (in->scratch = xmalloc(in->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    k = start = f->verified;
    for (; k < c->n && *budget > 0; k++) {
        uint64_t len = incoming_block_len(in, f, c->index[k]);
        struct hash128 h;
        int ok;

        /* The kept partial cannot be read back: the file fails. */
        if ((r = partial_read_block(f->pt, c->index[k], (size_t)len,
            in->scratch, &h)) != 0)
            return (r = incoming_file_error(in, f, r)) != 0 ? r :
                rfile_need_rest(f, out);
        xfer_add(&in->x->st.readback_bytes, len);
        ok = hash_equal(&h, &c->hash[k]);
        if (k > start && (ok != good ||
            c->index[k] != c->index[k - 1] + 1)) {
            if ((r = rfile_verify_emit(f, out, start, k, good)) != 0)
                return r;
            start = k;
        }
        good = ok;
        *budget -= len < *budget ? len : *budget;
    }
    return k > start ? rfile_verify_emit(f, out, start, k, good) : 0;
}

int
incoming_verify_start(struct incoming *in, struct rfile *f, struct buf *out)
{
    int r;

    if ((r = rfile_sign_gaps(f, out)) != 0)
        return r;
    f->vnext = NULL;
    if (in->vtail != NULL)
        in->vtail->vnext = f;
    else
        in->vhead = f;
    in->vtail = f;
    return 0;
}

/* What an earlier attempt or run left of this very version of the file:
 * kept when its journal claims anything. */
int
incoming_verify_resume(struct incoming *in, struct rfile *f, const char **warning)
{
    struct partial_id id = { f->path, f->size, f->mtime_sec, f->mtime_nsec,
        f->mode, in->block_size };
    int r, partfd;

    if (!(in->x->caps & PROTO_CAP_RESUME) || f->size < PARTIAL_JOURNAL_MIN ||
        !dest_find_state(in->d) || dest_part_dir(in->d, &partfd) != 0)
        return 0;
    if ((r = partial_probe(partfd, f->key, &id, &f->claim)) != 0)
        return r;
    if (f->claim.old_format)
        *warning = "a partial file from an older ferry was found; "
            "it is sent again";
    if (f->claim.n == 0)
        return 0;
    if ((r = incoming_track_blocks(in, f)) != 0 ||
        partial_open(partfd, f->key, &id, &f->claim, &f->pt) != 0) {
        /* Not usable after all: start afresh. */
        partial_claim_free(&f->claim);
        return r;
    }
    f->resume = 1;
    return 0;
}

void
incoming_verify_forget(struct incoming *in, struct rfile *f)
{
    struct rfile **pp;

    for (pp = &in->vhead; *pp != NULL; pp = &(*pp)->vnext) {
        if (*pp == f) {
            *pp = f->vnext;
            break;
        }
    }
    in->vtail = NULL;
    for (pp = &in->vhead; *pp != NULL; pp = &(*pp)->vnext)
        in->vtail = *pp;
    f->vnext = NULL;
}

int
incoming_verify_step(struct incoming *in, struct buf *out, uint64_t *budget)
{
    int r;

    while (in->vhead != NULL && *budget > 0 && buf_used(out) < (4u << 20)) {
        struct rfile *f = in->vhead;
        uint64_t t0 = clock_ns();

        r = rfile_verify(in, f, out, budget);
        xfer_add(&in->x->st.readback_ns, clock_ns() - t0);
        if (r != 0)
            return r;
        if (f->verified == f->claim.n) {
            in->vhead = f->vnext;
            if (in->vhead == NULL)
                in->vtail = NULL;
            f->vnext = NULL;
        }
    }
    return 0;
}
