#include "../plan_int.h"

#include "../../common/alloc.h"

static void
plan_work_free_list(struct plan_work *w)
{
    struct plan_work *next;

    for (; w != NULL; w = next) {
        next = w->link;
        plan_work_free(w);
    }
}

uint64_t
plan_delta_probe_blocks(const struct pfile *f)
{
    return delta_probe_blocks(f->nblocks);
}

/* Frees f's probe table. */
static void
plan_probe_free(struct plan *p, struct pfile *f)
{
    if (f->probe == NULL)
        return;
    p->delta_pieces -= delta_index_npieces(f->probe);
    delta_index_free(f->probe);
    f->probe = NULL;
}

void
plan_delta_forget(struct plan *p, struct pfile *f)
{
    plan_probe_free(p, f);
    if (f->dix != NULL) {
        p->delta_pieces -= delta_index_npieces(f->dix);
        delta_index_free(f->dix);
        f->dix = NULL;
    }
    plan_work_free_list(f->parked);
    plan_work_free_list(f->waiting);
    f->parked = f->parked_tail = NULL;
    f->waiting = f->waiting_tail = NULL;
}

/* Appends the list [head, tail] to the queue. */
static void
plan_delta_enqueue(struct plan *p, struct plan_work *head,
    struct plan_work *tail)
{
    if (head == NULL)
        return;
    if (p->qtail != NULL)
        p->qtail->link = head;
    else
        p->qhead = head;
    p->qtail = tail;
    tail->link = NULL;
}

/*
 * Runs whose blocks (and a piece past them, for a match that runs over
 * their end) are described join the queue, so that sending overlaps the
 * receiver's signing; all of them, and those waiting for the whole
 * basis, once it is described. Parked runs are mostly in file order (the
 * basis is described in order): the look stops at the first one that
 * must wait, so each DELTA_SIGS costs what it frees.
 */
void
plan_delta_release(struct plan *p, struct pfile *f)
{
    plan_delta_enqueue(p, f->parked, f->parked_tail);
    plan_delta_enqueue(p, f->waiting, f->waiting_tail);
    f->parked = f->parked_tail = NULL;
    f->waiting = f->waiting_tail = NULL;
}

static void
plan_delta_unpark(struct plan *p, struct pfile *f)
{
    uint64_t have, need, n;
    uint64_t k = plan_delta_probe_blocks(f);
    struct plan_work *w;

    if (f->delta_stopped || delta_index_complete(f->dix)) {
        plan_probe_free(p, f);
        plan_delta_release(p, f);
        return;
    }
    have = delta_index_described(f->dix);
    while ((w = f->parked) != NULL) {
        need = (w->first + w->count) * p->block_size +
            delta_index_piece(f->dix);
        /* The probe waits for what it is searched in. */
        if (w->first < k && need < DELTA_PROBE_SPAN * k * p->block_size)
            need = DELTA_PROBE_SPAN * k * p->block_size;
        if (need > have)
            break;
        if (w->first < k && f->probe == NULL && !f->delta_gave_up) {
            n = delta_index_npieces(f->dix);
            /* Without it (no memory) the probe waits as any block, for
             * the whole basis (asked for: plan_delta_say). */
            if (n <= PLAN_MAX_DELTA_PIECES - p->delta_pieces &&
                (f->probe = delta_index_prefix(f->dix)) != NULL)
                p->delta_pieces += delta_index_npieces(f->probe);
            else
                f->probe_failed = 1;
        }
        f->parked = w->link;
        if (f->parked == NULL)
            f->parked_tail = NULL;
        if (w->first < k && f->probe != NULL) {
            /* The probe goes first: it may stop the reading of a basis
             * on the other side. */
            w->link = p->qhead;
            p->qhead = w;
            if (p->qtail == NULL)
                p->qtail = w;
            continue;
        }
        plan_delta_enqueue(p, w, w);
    }
}

int
plan_delta_defer(struct plan *p, uint32_t id, uint64_t first,
    uint64_t count)
{
    struct pfile *f = plan_file(p, id);
    struct plan_work *w;

    if (f == NULL || count == 0)
        return 0;
    if ((w = xcalloc(1, sizeof(*w))) == NULL)
        return FERRY_ERR_NOMEM;
    w->id = id;
    w->kind = PW_SEND;
    w->first = w->next = first;
    w->count = count;
    if (f->waiting_tail != NULL)
        f->waiting_tail->link = w;
    else
        f->waiting = w;
    f->waiting_tail = w;
    return 0;
}

int
plan_on_delta_sigs(struct plan *p, const struct msg_delta_sigs *m)
{
    struct pfile *f;
    uint64_t n;
    int r;

    if (m->id >= p->next_entry || (f = plan_file(p, m->id)) == NULL ||
        !f->delta)
        return FERRY_ERR_PROTOCOL;
    /* A file given up on, or whose blocks were all held already (a
     * resume), may end before its basis is described: the rest of the
     * signatures are of no use. */
    if (p->est[m->id] != E_WANTED || f->delta_stopped)
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

int
plan_on_delta_blocks(struct plan *p, const struct msg_delta_blocks *m)
{
    struct pfile *f;

    if (m->id >= p->next_entry || (f = plan_file(p, m->id)) == NULL ||
        !f->delta)
        return FERRY_ERR_PROTOCOL;
    if (p->est[m->id] != E_WANTED || f->delta_stopped)
        return 0;  /* as for DELTA_SIGS */
    if (f->dix == NULL)
        return FERRY_ERR_PROTOCOL;  /* before the first DELTA_SIGS */
    return delta_index_add_blocks(f->dix, m, p->block_size);
}

const struct delta_index *
plan_file_basis(struct plan *p, uint32_t id, int *search)
{
    struct pfile *f = plan_file(p, id);

    *search = 0;
    if (f == NULL || f->dix == NULL)
        return NULL;
    *search = !f->delta_gave_up;
    return f->dix;
}

const struct delta_index *
plan_file_probe(struct plan *p, uint32_t id, uint64_t index)
{
    struct pfile *f = plan_file(p, id);

    if (f == NULL || f->delta_gave_up ||
        index >= plan_delta_probe_blocks(f))
        return NULL;
    return f->probe;
}

int
plan_delta_unproven(struct plan *p, uint32_t id)
{
    struct pfile *f = plan_file(p, id);

    return f != NULL && !(p->flags & OPEN_F_DELTA_ALWAYS) &&
        !f->delta_gave_up && f->delta_hits == 0;
}

/* The search gives up on f's basis: blocks are compared at their own
 * place only, and what waited for the rest of the basis goes now,
 * checked against what was described (or the receiver is told to stop
 * before it describes any). */
static void
plan_delta_give_up(struct plan *p, struct pfile *f)
{
    f->delta_gave_up = 1;
    plan_probe_free(p, f);
    /* Its data crosses: counted so, more streams may be worth opening
     * for it (client/attempt_grow.c). */
    if (!f->resume) {
        xfer_sub(&p->x->st.bytes_reusable, manifest_entry(p->mf, f->id)->size);
        xfer_add(&p->x->st.bytes_whole, manifest_entry(p->mf, f->id)->size);
    }
    if (f->dix != NULL && delta_index_complete(f->dix))
        return;
    f->delta_stopped = 1;
    plan_delta_unpark(p, f);
}

/* 1 if f's basis may be given up without a probe: its place is cold and
 * its probe has not started. */
static int
plan_delta_skippable(const struct plan *p, const struct pfile *f)
{
    return f->delta && !f->resume && !(p->flags & OPEN_F_DELTA_ALWAYS) &&
        !f->delta_gave_up && f->delta_hits == 0 && f->delta_misses == 0 &&
        f->probe == NULL && f->probe_seen == 0 &&
        delta_place_cold(&p->places, f->place);
}

/* f's basis is given up without a probe: its DELTA_STOP goes at the
 * sender's next step, before the receiver reads the basis (it holds
 * the place's other bases while a probe there waits for its verdict). */
static void
plan_delta_skip(struct plan *p, struct pfile *f)
{
    uint32_t *nv;

    plan_delta_give_up(p, f);
    if (!f->delta_stopped || !(p->x->caps & PROTO_CAP_DELTA_STOP))
        return;
    if ((nv = xgrow(p->stops_due, p->nstops_due, &p->stops_due_cap,
        sizeof(*nv), 16)) == NULL)
        return;  /* said with its first block instead */
    p->stops_due = nv;
    nv[p->nstops_due++] = f->id;
}

int
plan_next_stop_due(struct plan *p, uint32_t *id)
{
    if (p->nstops_due == 0)
        return 0;
    *id = p->stops_due[--p->nstops_due];
    return 1;
}

/* The probe of a file at place found nothing: once the place is cold,
 * the bases of its other files not probed yet are given up too. */
static void
plan_delta_place_missed(struct plan *p, uint64_t place)
{
    struct pfile *f;
    size_t i;

    delta_place_probed(&p->places, place, 0);
    if (!delta_place_cold(&p->places, place))
        return;
    for (i = 0; i < p->files.cap; i++)
        if ((f = p->files.slot[i]) != NULL && f->place == place &&
            plan_delta_skippable(p, f))
            plan_delta_skip(p, f);
}

void
plan_delta_wanted(struct plan *p, struct pfile *f, const char *path)
{
    f->place = delta_place(path);
    if (plan_delta_skippable(p, f))
        plan_delta_skip(p, f);
}

void
plan_delta_found(struct plan *p, uint32_t id, uint64_t copied)
{
    struct pfile *f = plan_file(p, id);

    if (f == NULL)
        return;
    if (copied > 0 && f->delta_hits++ == 0 && !f->delta_gave_up)
        delta_place_probed(&p->places, f->place, 1);
    else if (copied == 0)
        f->delta_misses++;
    /* A basis in which the first blocks found nothing is another file
     * (all new data, or --basis auto's guess was wrong): searching it
     * costs a rolling checksum over every byte for nothing, and reading
     * the rest of it to sign it as much again on the other side. */
    if ((p->flags & OPEN_F_DELTA_ALWAYS) || f->delta_gave_up ||
        f->delta_hits > 0 || (uint64_t)f->delta_misses <
        plan_delta_probe_blocks(f))
        return;
    plan_delta_give_up(p, f);
    plan_delta_place_missed(p, f->place);
}

void
plan_delta_seen(struct plan *p, uint32_t id, uint64_t index)
{
    struct pfile *f = plan_file(p, id);

    if (f != NULL && f->delta && index < plan_delta_probe_blocks(f))
        f->probe_seen |= UINT32_C(1) << index;
}

enum plan_say
plan_delta_say(struct plan *p, uint32_t id)
{
    struct pfile *f = plan_file(p, id);
    uint64_t k;

    if (f == NULL || !f->delta)
        return PLAN_SAY_NOTHING;
    if (f->delta_stopped && !f->stop_said &&
        (p->x->caps & PROTO_CAP_DELTA_STOP)) {
        f->stop_said = 1;
        return PLAN_SAY_STOP;
    }
    /* The receiver waits after the probe's part of the basis (a resumed
     * or DELTA_ALWAYS file is not probed): the rest is asked for once
     * the probe found something, or could not decide. */
    k = plan_delta_probe_blocks(f);
    if (f->go_said || f->delta_gave_up || f->resume ||
        (p->flags & OPEN_F_DELTA_ALWAYS) || f->dix == NULL ||
        delta_index_complete(f->dix) || !(p->x->caps & PROTO_CAP_DELTA_GO) ||
        (f->delta_hits == 0 && !f->probe_failed &&
        f->probe_seen != (uint32_t)((UINT64_C(1) << k) - 1)))
        return PLAN_SAY_NOTHING;
    f->go_said = 1;
    return PLAN_SAY_GO;
}
