/*
 * plan_work.c: the streams' work (plan_int.h): the queue of runs of
 * blocks, each stream's run (taken from the queue, or stolen from a
 * slower stream), the blocks settled as they are sent, built or
 * matched, the files then ready to end or given up, and what a lost
 * stream was doing given back. Apart from plan.c, which offers the
 * entries and takes the receiver's answers that fill the queue.
 */
#include "plan_int.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "volume/volsend.h"

void
plan_stream_up(struct plan *p, unsigned stream)
{
    if (stream > 0 && stream < PROTO_MAX_STREAMS &&
        !(atomic_load(&p->retired) & (1u << stream)))
        p->up |= 1u << stream;
}

int
plan_spares(const struct plan *p, unsigned stream)
{
    return stream == 0 && (p->flags & OPEN_F_SPARE_STREAM0) && p->up != 0;
}

int
plan_spares_volumes(const struct plan *p, unsigned stream)
{
    return stream == 0 && p->up != 0;
}

int
plan_queue(struct plan *p, uint32_t id, uint8_t kind, uint64_t first,
    uint64_t count, const uint8_t *theirs)
{
    uint64_t per = PLAN_RUN_BYTES / p->block_size, n;
    struct pfile *f = plan_file(p, id);
    struct plan_work *w, **head = &p->qhead, **tail = &p->qtail;

    if (per == 0)
        per = 1;
    while (count > 0) {
        n = count < per ? count : per;
        /* A basis's probe is a run of its own, so that it goes as soon
         * as what it is searched in is described. */
        if (kind == PW_SEND && f != NULL && f->delta &&
            first < plan_delta_probe_blocks(f) &&
            first + n > plan_delta_probe_blocks(f))
            n = plan_delta_probe_blocks(f) - first;
        if ((w = xcalloc(1, sizeof(*w))) == NULL)
            return FERRY_ERR_NOMEM;
        w->id = id;
        w->kind = kind;
        w->first = first;
        w->count = n;
        w->next = first;
        if (theirs != NULL) {
            if ((w->theirs = xmalloc(n * sizeof(*w->theirs))) == NULL) {
                xfree(w);
                return FERRY_ERR_NOMEM;
            }
            memcpy(w->theirs, theirs, n * HASH_LEN);
            theirs += n * HASH_LEN;
        }
        if (kind == PW_SEND && f != NULL && ((f->delta &&
            !f->delta_stopped && (f->dix == NULL ||
            !delta_index_complete(f->dix))) ||
            (f->tensor && !f->basis_seen))) {
            head = &f->parked;
            tail = &f->parked_tail;
        }
        if (*tail != NULL)
            (*tail)->link = w;
        else
            *head = w;
        *tail = w;
        first += n;
        count -= n;
    }
    return 0;
}

void
plan_make_ready(struct plan *p, uint32_t id)
{
    struct pfile *f = plan_file(p, id);

    if (f == NULL || f->ready || f->nresolved != f->nblocks)
        return;
    f->ready = 1;
    p->ready_ids[(p->rq_head + p->rq_len) % PLAN_WINDOW] = id;
    p->rq_len++;
}

static void plan_reap_lost(struct plan *p);

/*
 * The queue is empty: an idle stream takes the second half of what is
 * left of the biggest run another stream is still working on, so one
 * slow stream does not hold the tail of a transfer.
 */
static struct plan_work *
plan_steal(struct plan *p, unsigned stream)
{
    struct plan_work *v = NULL, *w;
    uint64_t left, best = PLAN_STEAL_MIN - 1, mid;
    unsigned k;

    for (k = 0; k < PROTO_MAX_STREAMS; k++) {
        struct plan_work *c = p->cur[k];

        if (k == stream || c == NULL || c->kind != PW_SEND ||
            !plan_file_active(p, c->id))
            continue;
        left = c->first + c->count - c->next;
        if (left > best) {
            best = left;
            v = c;
        }
    }
    if (v == NULL || (w = xcalloc(1, sizeof(*w))) == NULL)
        return NULL;
    left = v->first + v->count - v->next;
    mid = v->next + left / 2;
    w->id = v->id;
    w->kind = PW_SEND;
    w->first = w->next = mid;
    w->count = v->first + v->count - mid;
    v->count = mid - v->first;
    p->cur[stream] = w;
    return w;
}

struct plan_work *
plan_current(struct plan *p, unsigned stream)
{
    struct plan_work *q;

    plan_reap_lost(p);
    if (atomic_load(&p->retired) & (1u << stream))
        return NULL;
    if ((q = p->cur[stream]) != NULL) {
        if (plan_file_active(p, q->id) && q->next < q->first + q->count)
            return q;
        plan_run_done(p, stream);
    }
    if (plan_spares(p, stream))
        return NULL;  /* it finishes its own run, takes no other */
    while ((q = p->qhead) != NULL) {
        p->qhead = q->link;
        if (p->qhead == NULL)
            p->qtail = NULL;
        q->link = NULL;
        if (plan_file_active(p, q->id)) {
            p->cur[stream] = q;
            return q;
        }
        plan_work_free(q);
    }
    return plan_steal(p, stream);
}

void
plan_run_done(struct plan *p, unsigned stream)
{
    plan_work_free(p->cur[stream]);
    p->cur[stream] = NULL;
}

int
plan_file_active(struct plan *p, uint32_t id)
{
    /* Ended files stay active: a lost stream's blocks are sent again
     * after their FILE_END, which the receiver waits behind. */
    const struct pfile *f = plan_file(p, id);

    return f != NULL && !f->aborted;
}

/* Returns 1 when block index is settled for the first time. */
static int
plan_resolved(struct plan *p, uint32_t id, uint64_t index,
    const struct hash128 *h, uint64_t len)
{
    struct pfile *f = plan_file(p, id);
    int r;

    /* Our own blocks, each once: only a block sent again after a lost
     * stream comes twice, and its hash is the same. */
    r = hash_file_put(f->hf, index, h, (size_t)f->nblocks);
    if (r == FERRY_ERR_EXISTS)
        return 0;
    if (r != 0) {
        plan_file_abort(p, id, r);
        return 0;
    }
    f->nresolved++;
    plan_count(p, id, len);
    plan_make_ready(p, id);
    return 1;
}

/* Block index of file id went out on stream: its file, once the block
 * is settled (plan_resolved), for its bytes to be counted; else NULL. */
static struct pfile *
plan_block_went(struct plan *p, uint32_t id, uint64_t index,
    unsigned stream, const struct hash128 *h, uint64_t len)
{
    struct pfile *f = plan_file(p, id);

    if (f == NULL)
        return NULL;
    f->bs[index] = (uint8_t)(B_SENT | stream << 3);
    return plan_resolved(p, id, index, h, len) ? f : NULL;
}

void
plan_block_sent(struct plan *p, uint32_t id, uint64_t index,
    unsigned stream, const struct hash128 *h, uint64_t len, int zero)
{
    struct pfile *f = plan_block_went(p, id, index, stream, h, len);

    if (f != NULL && zero)
        f->n.sparse += len;
    else if (f != NULL)
        f->n.literal += len;
}

void
plan_block_coded(struct plan *p, uint32_t id, uint64_t index,
    unsigned stream, const struct hash128 *h, uint64_t len, uint64_t saved)
{
    struct pfile *f = plan_block_went(p, id, index, stream, h, len);

    if (f == NULL)
        return;
    f->n.literal += len;
    f->n.tensor += len;
    f->n.tensor_saved += saved;
}

void
plan_block_built(struct plan *p, uint32_t id, uint64_t index,
    unsigned stream, const struct hash128 *h, uint64_t len, uint64_t copied)
{
    struct pfile *f = plan_block_went(p, id, index, stream, h, len);

    if (f == NULL)
        return;
    f->n.matched += copied;
    f->n.literal += len - copied;
}

void
plan_block_matched(struct plan *p, uint32_t id, uint64_t index,
    const struct hash128 *h, uint64_t len)
{
    struct pfile *f = plan_file(p, id);

    if (f == NULL)
        return;
    f->bs[index] = B_MATCHED;
    if (plan_resolved(p, id, index, h, len))
        f->n.resumed += len;
}

int
plan_block_differs(struct plan *p, uint32_t id, uint64_t index)
{
    struct pfile *f = plan_file(p, id);

    if (f == NULL)
        return 0;
    f->bs[index] = B_NEED;
    return plan_queue(p, id, PW_SEND, index, 1, NULL);
}

int
plan_next_ready(struct plan *p, uint32_t *id)
{
    plan_reap_lost(p);
    while (p->rq_len > 0) {
        uint32_t i = p->ready_ids[p->rq_head];

        p->rq_head = (p->rq_head + 1) % PLAN_WINDOW;
        p->rq_len--;
        struct pfile *f = plan_file(p, i);

        if (f != NULL && !f->ended) {
            *id = i;
            return 1;
        }
    }
    return 0;
}

void
plan_file_hash(struct plan *p, uint32_t id, struct hash128 *out)
{
    hash_file_final(plan_file(p, id)->hf, out);
}

void
plan_file_ended(struct plan *p, uint32_t id, unsigned stream)
{
    struct pfile *f = plan_file(p, id);

    (void)stream;
    f->ended = 1;
    p->est[id] = f->aborted ? E_ABORTED : E_ENDED;
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
}

void
plan_file_abort(struct plan *p, uint32_t id, int code)
{
    struct mentry *e = manifest_entry(p->mf, id);
    struct pfile *f = plan_file(p, id);
    char local[MANIFEST_LOCAL_MAX], rel[MANIFEST_REL_MAX];

    if (f == NULL || f->aborted)
        return;
    f->aborted = code != 0 ? code : FERRY_ERR_CHANGED;
    xfer_file_failed(p->x, SIDE_SOURCE, manifest_rel(p->mf, id, rel),
        manifest_local(p->mf, id, local, sizeof(local)) == 0 ? local : NULL,
        e->size, code, NULL);
    plan_count(p, id, e->size > f->counted ? e->size - f->counted : 0);
    if (!f->ready) {
        f->ready = 1;
        p->ready_ids[(p->rq_head + p->rq_len) % PLAN_WINDOW] = id;
        p->rq_len++;
    }
}

int
plan_file_aborted(struct plan *p, uint32_t id)
{
    const struct pfile *f = plan_file(p, id);

    return f != NULL ? f->aborted : 0;
}

void
plan_stream_lost(struct plan *p, unsigned stream)
{
    if (stream > 0 && stream < PROTO_MAX_STREAMS)
        atomic_fetch_or(&p->lost, 1u << stream);
}

void
plan_stream_retired(struct plan *p, unsigned stream)
{
    if (stream > 0 && stream < PROTO_MAX_STREAMS) {
        atomic_fetch_or(&p->retired, 1u << stream);
        plan_stream_lost(p, stream);
    }
}

/* Gives back what a lost stream was doing. */
static void
plan_reap_stream(struct plan *p, unsigned stream)
{
    struct plan_work *w = p->cur[stream];
    size_t id;
    uint64_t i, start;

    volsend_stream_lost(p->vs, stream);
    p->up &= ~(1u << stream);
    if (w != NULL) {
        /* To the front: it was the oldest work when it was taken. */
        p->cur[stream] = NULL;
        w->next = w->first;
        w->link = p->qhead;
        p->qhead = w;
        if (p->qtail == NULL)
            p->qtail = w;
    }
    for (id = 0; id < p->seen; id++) {
        struct pfile *f = plan_file(p, id);

        if (f == NULL || f->aborted || f->packed)
            continue;
        /* Blocks it sent of a file not yet done may never have arrived.
         * A FILE_END it carried may be lost too. */
        for (i = 0; i < f->nblocks; i = start + 1) {
            start = i;
            while (i < f->nblocks && B_STATE(f->bs[i]) == B_SENT &&
                B_STREAM(f->bs[i]) == stream) {
                f->bs[i] = B_NEED;
                i++;
            }
            if (i > start) {
                log_debug("stream %u lost: blocks %llu-%llu of entry %zu "
                    "again", stream, (unsigned long long)start,
                    (unsigned long long)i - 1, id);
                if (plan_queue(p, (uint32_t)id, PW_SEND, start, i - start,
                    NULL) != 0)
                    log_debug("stream %u: requeue failed", stream);
                start = i;
            }
        }
        if (f->ended) {
            /* Ended but not done: say it again, on a stream that lives;
             * the receiver ignores a second FILE_END. */
            f->ended = 0;
            f->ready = 0;
            p->est[id] = E_WANTED;
            plan_make_ready(p, (uint32_t)id);
        }
    }
}

static void
plan_reap_lost(struct plan *p)
{
    unsigned lost = atomic_exchange(&p->lost, 0), k;

    for (k = 1; lost != 0 && k < PROTO_MAX_STREAMS; k++)
        if (lost & (1u << k))
            plan_reap_stream(p, k);
}
