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

/* The basis is described: the file's runs join the queue. */
static void
plan_delta_unpark(struct plan *p, struct pfile *f)
{
    if (f->parked == NULL)
        return;
    if (p->qtail != NULL)
        p->qtail->link = f->parked;
    else
        p->qhead = f->parked;
    p->qtail = f->parked_tail;
    f->parked = f->parked_tail = NULL;
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
    if (delta_index_complete(f->dix))
        plan_delta_unpark(p, f);
    return 0;
}

const struct delta_index *
plan_file_basis(struct plan *p, uint32_t id)
{
    struct pfile *f = id < p->mf.n ? p->files[id] : NULL;

    if (f == NULL || f->dix == NULL || !delta_index_complete(f->dix))
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
