#include "plan_int.h"

#include "../common/alloc.h"

void
plan_delta_forget(struct plan *p, struct pfile *f)
{
    struct plan_work *w, *next;

    if (f->dix != NULL) {
        p->delta_pieces -= delta_index_npieces(f->dix);
        delta_index_free(f->dix);
        f->dix = NULL;
    }
    for (w = f->parked; w != NULL; w = next) {
        next = w->link;
        plan_work_free(w);
    }
    f->parked = f->parked_tail = NULL;
}

/* Runs whose blocks (and a piece past them, for a match that runs over
 * their end) are described join the queue; all of them once the whole
 * basis is, so that sending overlaps the receiver's signing. */
static void
plan_delta_unpark(struct plan *p, struct pfile *f)
{
    struct plan_work **pp = &f->parked, *w;
    int all = delta_index_complete(f->dix);
    uint64_t have = delta_index_described(f->dix);

    f->parked_tail = NULL;
    while ((w = *pp) != NULL) {
        if (all || (!w->wait_basis && (w->first + w->count) *
            p->block_size + delta_index_piece(f->dix) <= have)) {
            *pp = w->link;
            w->link = NULL;
            if (p->qtail != NULL)
                p->qtail->link = w;
            else
                p->qhead = w;
            p->qtail = w;
            continue;
        }
        f->parked_tail = w;
        pp = &w->link;
    }
}

int
plan_delta_defer(struct plan *p, uint32_t id, uint64_t index)
{
    struct pfile *f = p->files[id];
    struct plan_work *w;

    if (f == NULL)
        return 0;
    if ((w = xcalloc(1, sizeof(*w))) == NULL)
        return FERRY_ERR_NOMEM;
    w->id = id;
    w->kind = PW_SEND;
    w->first = w->next = index;
    w->count = 1;
    w->wait_basis = 1;
    if (f->parked_tail != NULL)
        f->parked_tail->link = w;
    else
        f->parked = w;
    f->parked_tail = w;
    return 0;
}

int
plan_on_delta_sigs(struct plan *p, const struct msg_delta_sigs *m)
{
    struct pfile *f;
    uint64_t n;
    int r;

    if (m->id >= p->next_entry || (f = p->files[m->id]) == NULL ||
        !f->delta)
        return FERRY_ERR_PROTOCOL;
    /* A file given up on, or whose blocks were all held already (a
     * resume), may end before its basis is described: the rest of the
     * signatures are of no use. */
    if (p->est[m->id] != E_WANTED)
        return 0;
    if (f->dix == NULL) {
        n = msg_delta_nsigs(m->basis_size, m->sig_block);
        if (n > PLAN_MAX_DELTA_PIECES - p->delta_pieces)
            return FERRY_ERR_PROTOCOL;
        if ((f->dix = delta_index_new(m->basis_size, m->sig_block)) == NULL)
            return FERRY_ERR_NOMEM;
        p->delta_pieces += n;
    }
    if ((r = delta_index_add(f->dix, m)) != 0)
        return r;
    plan_delta_unpark(p, f);
    return 0;
}

const struct delta_index *
plan_file_basis(struct plan *p, uint32_t id)
{
    struct pfile *f = id < p->mf.n ? p->files[id] : NULL;

    if (f == NULL || f->dix == NULL)
        return NULL;
    /* A basis in which the first blocks found nothing is another file
     * (all new data, or --basis auto's guess was wrong): searching it
     * costs a rolling checksum over every byte for nothing. */
    if (!(p->flags & OPEN_F_DELTA_ALWAYS) && f->delta_hits == 0 &&
        f->delta_misses >= PLAN_DELTA_TRIES)
        return NULL;
    return f->dix;
}

void
plan_delta_found(struct plan *p, uint32_t id, uint64_t copied)
{
    struct pfile *f = p->files[id];

    if (f == NULL)
        return;
    if (copied > 0)
        f->delta_hits++;
    else
        f->delta_misses++;
}
