#include "plan_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/ptab.h"
#include "volume/volsend.h"

/* Takes the entries published since the last look: their state bytes
 * and their share of the totals. */
static int
plan_take(struct plan *p)
{
    size_t avail = manifest_avail(p->mf), i, cap;
    uint64_t files = 0, bytes = 0;
    uint8_t *nv;

    if (avail == p->seen)
        return 0;
    if (avail > p->est_cap) {
        /* Live: doubling, for a scan that adds a few at a time. */
        for (cap = p->est_cap ? p->est_cap : 4096; cap < avail; cap *= 2)
            ;
        if (!p->live)
            cap = avail;
        if ((nv = xrealloc(p->est, cap)) == NULL)
            return FERRY_ERR_NOMEM;
        memset(nv + p->est_cap, 0, cap - p->est_cap);
        p->est = nv;
        p->est_cap = cap;
    }
    for (i = p->seen; i < avail; i++) {
        const struct mentry *e = manifest_entry(p->mf, i);

        if (e->kind == ENTRY_FILE) {
            files++;
            bytes += e->size;
        }
    }
    xfer_add(&p->x->st.entries_total, avail - p->seen);
    xfer_add(&p->x->st.files_total, files);
    xfer_add(&p->x->st.bytes_total, bytes);
    p->seen_files += files;
    p->seen_bytes += bytes;
    p->seen = avail;
    return 0;
}

static struct plan *
plan_make(struct manifest *mf, int live, uint32_t block_size,
    uint32_t flags, struct xfer *x)
{
    struct plan *p = xcalloc(1, sizeof(*p));

    if (p == NULL)
        return NULL;
    p->mf = mf;
    p->live = live;
    p->x = x;
    if (live)
        xfer_add(&x->st.totals_open, 1);
    p->block_size = block_size;
    p->flags = flags;
    if ((p->ready_ids = xcalloc(PLAN_WINDOW, sizeof(*p->ready_ids))) ==
        NULL || ((flags & (OPEN_F_CHECKSUM | OPEN_F_ADOPT)) &&
        manifest_want_hashes(mf) != 0) || plan_take(p) != 0) {
        if (live)
            xfer_sub(&x->st.totals_open, 1);
        xfree(p->est);
        xfree(p->ready_ids);
        xfree(p);
        return NULL;
    }
    return p;
}

struct plan *
plan_new(struct manifest *mf, uint32_t block_size, uint32_t flags,
    struct xfer *x)
{
    struct plan *p = plan_make(mf, 0, block_size, flags, x);

    if (p == NULL)
        return NULL;
    /* Ours from now on: the struct moves, what it points to does not. */
    p->own = *mf;
    p->mf = &p->own;
    manifest_init(mf);
    return p;
}

struct plan *
plan_new_live(struct manifest *mf, uint32_t block_size, uint32_t flags,
    struct xfer *x)
{
    return plan_make(mf, 1, block_size, flags, x);
}

int
plan_scanning(struct plan *p)
{
    int err;

    if (!p->live)
        return p->scan_err;
    if (manifest_live(p->mf, &err)) {
        (void)plan_take(p);   /* no room now: taken at a later look */
        return 1;
    }
    /* The scan ended: everything it published is there to take. */
    if (err == 0)
        err = plan_take(p);
    p->live = 0;
    xfer_sub(&p->x->st.totals_open, 1);
    p->scan_err = err;
    return err;
}

void
plan_await_scan(struct plan *p, int end_only)
{
    if (p->live)
        manifest_await(p->mf, end_only ? MANIFEST_AWAIT_END : p->seen,
            &p->x->wake);
}

void
plan_totals(const struct plan *p, struct msg_totals *m)
{
    m->entries_total = plan_entries_to_offer(p);
    m->files_total = p->seen_files < m->entries_total ? p->seen_files :
        m->entries_total;
    m->bytes_total = p->seen_bytes;
}

static uint64_t
pfile_hash(const void *f)
{
    return ptab_hash_id(((const struct pfile *)f)->id);
}

static int
pfile_is(const void *f, const void *id)
{
    return ((const struct pfile *)f)->id == *(const uint32_t *)id;
}

struct pfile *
plan_file(const struct plan *p, uint32_t id)
{
    return ptab_find(&p->files, ptab_hash_id(id), pfile_is, &id);
}

int
plan_file_add(struct plan *p, struct pfile *f)
{
    int r;

    if ((r = ptab_reserve(&p->files, pfile_hash)) != 0)
        return r;
    ptab_put(&p->files, f, pfile_hash);
    return 0;
}

void
plan_file_remove(struct plan *p, uint32_t id)
{
    struct pfile *f = plan_file(p, id);

    if (f != NULL)
        ptab_remove(&p->files, f, pfile_hash);
}

static void
pfile_free(struct plan *p, struct pfile *f)
{
    if (f == NULL)
        return;
    plan_delta_forget(p, f);
    plan_tensor_forget(p, f);
    if (f->fd >= 0)
        close(f->fd);
    hash_file_free(f->hf);
    xfree(f->bs);
    xfree(f);
}

void
plan_work_free(struct plan_work *w)
{
    if (w != NULL)
        xfree(w->theirs);
    xfree(w);
}

static void
plan_clear_queue(struct plan *p)
{
    struct plan_work *w, *next;
    size_t i;

    for (w = p->qhead; w != NULL; w = next) {
        next = w->link;
        plan_work_free(w);
    }
    p->qhead = p->qtail = NULL;
    for (i = 0; i < PROTO_MAX_STREAMS; i++) {
        plan_work_free(p->cur[i]);
        p->cur[i] = NULL;
    }
    atomic_store(&p->lost, 0);
    atomic_store(&p->retired, 0);
}

void
plan_free(struct plan *p)
{
    size_t i;

    if (p == NULL)
        return;
    if (p->live)
        xfer_sub(&p->x->st.totals_open, 1);
    plan_clear_queue(p);
    volsend_free(p->vs);
    for (i = 0; i < p->files.cap; i++)
        pfile_free(p, p->files.slot[i]);
    manifest_cleanup(&p->own);
    xfree(p->est);
    ptab_free(&p->files);
    xfree(p->ended_before);
    xfree(p->stops_due);
    xfree(p->ready_ids);
    xfree(p);
}

static int
plan_ended_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct plan_ended *)a)->id,
        y = ((const struct plan_ended *)b)->id;

    return x < y ? -1 : x > y;
}

/* The record of file id ended over an earlier connection, or NULL. */
static struct plan_ended *
plan_ended_before_find(const struct plan *p, uint32_t id)
{
    struct plan_ended key;

    memset(&key, 0, sizeof(key));
    key.id = id;
    return p->nended_before == 0 ? NULL : bsearch(&key, p->ended_before,
        p->nended_before, sizeof(key), plan_ended_cmp);
}

static void
plan_ended_before_drop(struct plan *p, struct plan_ended *r)
{
    size_t i = (size_t)(r - p->ended_before);

    memmove(r, r + 1, (p->nended_before - i - 1) * sizeof(*r));
    p->nended_before--;
}

/* Remembers f, whose data all went out and whose FILE_DONE did not come
 * (plan_restart). Without memory it is simply counted skipped later. */
static void
plan_ended_before_add(struct plan *p, const struct pfile *f)
{
    struct plan_ended *r = plan_ended_before_find(p, f->id), *nv;

    if (r == NULL) {
        if ((nv = xgrow(p->ended_before, p->nended_before,
            &p->ended_before_cap, sizeof(*nv), 16)) == NULL)
            return;
        p->ended_before = nv;
        r = &p->ended_before[p->nended_before++];
    }
    r->id = f->id;
    r->n = f->n;
}

void
plan_restart(struct plan *p)
{
    size_t i;

    plan_clear_queue(p);
    volsend_restart(p->vs);
    p->rq_head = p->rq_len = 0;
    p->nstops_due = 0;
    for (i = 0; i < p->files.cap; i++) {
        struct pfile *f = p->files.slot[i];

        /* Unfinished: what the new receiver holds decides its
         * progress. */
        if (f != NULL && p->est[f->id] != E_FINISHED)
            xfer_sub(&p->x->st.bytes_done, f->counted);
        if (f != NULL && p->est[f->id] == E_ENDED)
            plan_ended_before_add(p, f);
        pfile_free(p, f);
    }
    ptab_clear(&p->files);
    if (p->nended_before > 1)
        qsort(p->ended_before, p->nended_before, sizeof(*p->ended_before),
            plan_ended_cmp);
    for (i = 0; i < p->seen; i++)
        p->est[i] = p->est[i] == E_FINISHED || p->est[i] == E_PRIOR ?
            E_PRIOR : E_NEW;
    p->next_entry = 0;
    p->inflight = 0;
    p->stopped = 0;
}

void
plan_set_packer(struct plan *p, struct volsend *vs)
{
    volsend_free(p->vs);
    p->vs = vs;
}

struct volsend *
plan_packer(struct plan *p)
{
    return p->vs;
}

struct manifest *
plan_manifest(struct plan *p)
{
    return p->mf;
}

uint32_t
plan_block_size(const struct plan *p)
{
    return p->block_size;
}

uint32_t
plan_flags(const struct plan *p)
{
    return p->flags;
}

/* 1 if entry i is offered over this attempt. */
static int
plan_offers(const struct plan *p, size_t i)
{
    return p->est[i] != E_PRIOR || manifest_entry(p->mf, i)->kind == ENTRY_DIR;
}

uint64_t
plan_entries_to_offer(const struct plan *p)
{
    uint64_t n = 0;
    size_t i;

    for (i = 0; i < p->seen; i++)
        n += plan_offers(p, i);
    return n;
}

int
plan_next_offer(struct plan *p, uint32_t *id)
{
    if (p->next_entry >= p->seen && p->live)
        (void)plan_scanning(p);
    while (p->next_entry < p->seen && !plan_offers(p, p->next_entry))
        p->next_entry++;
    if (p->next_entry >= p->seen || p->inflight >= PLAN_WINDOW)
        return 0;
    *id = (uint32_t)p->next_entry;
    return 1;
}

void
plan_offered(struct plan *p, uint32_t id)
{
    p->est[id] = E_OFFERED;
    p->next_entry = (size_t)id + 1;
    p->inflight++;
}

void
plan_set_flags(struct plan *p, uint32_t flags)
{
    p->flags |= flags;
}

int
plan_all_finished(struct plan *p)
{
    size_t i = p->next_entry;

    if (p->live && plan_scanning(p) != 0)
        return 0;

    while (i < p->seen && !plan_offers(p, i))
        i++;
    return i >= p->seen && p->inflight == 0;
}

/* Progress for entry id, remembered while it is in flight so a restart
 * can take it back (a finished entry's stays). */
void
plan_count(struct plan *p, uint32_t id, uint64_t n)
{
    struct pfile *f = plan_file(p, id);

    if (f != NULL)
        f->counted += n;
    xfer_add(&p->x->st.bytes_done, n);
}

static void
plan_finish(struct plan *p, uint32_t id)
{
    struct pfile *f = plan_file(p, id);

    p->est[id] = E_FINISHED;
    p->inflight--;
    plan_file_remove(p, id);
    pfile_free(p, f);
}

/* REPLY WANT: the file is sent, all of it or, with RESUME, what SIGS
 * will say. */
static int
plan_want(struct plan *p, uint32_t id, int resume, int delta, int tensor)
{
    struct mentry *e = manifest_entry(p->mf, id);
    char rel[MANIFEST_REL_MAX];
    struct pfile *f;
    uint64_t i;

    if ((f = xcalloc(1, sizeof(*f))) == NULL)
        return FERRY_ERR_NOMEM;
    f->fd = -1;
    f->nblocks = e->size / p->block_size + (e->size % p->block_size != 0);
    f->resume = resume;
    f->delta = delta;
    f->tensor = tensor;
    f->id = id;
    if ((f->nblocks > 0 && (f->bs = xcalloc(f->nblocks, 1)) == NULL) ||
        plan_file_add(p, f) != 0) {
        pfile_free(p, f);
        return FERRY_ERR_NOMEM;
    }
    p->est[id] = E_WANTED;
    xfer_add(resume || delta || tensor ? &p->x->st.bytes_reusable :
        &p->x->st.bytes_whole, e->size);
    /* A file with a basis (delta, tensors) or kept blocks (resume) is
     * worth more in blocks than in a volume. */
    if (!resume && !delta && !tensor &&
        volsend_take(p->vs, id, e->size)) {
        /* Its data and end come in a volume: finished once FILE_DONE
         * is, its bytes counted once packed (plan_file_packed). */
        f->packed = f->ready = f->ended = 1;
        f->n.literal = e->size;
        xfer_add(&p->x->st.bytes_packed, e->size);
        p->est[id] = E_ENDED;
        return 0;
    }
    /* Its own block hashes, folded: only a file sent in blocks needs
     * them (a volume hashes what it packs). */
    if ((f->hf = hash_file_new(e->size, p->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    if (delta)
        plan_delta_wanted(p, f, manifest_rel(p->mf, id, rel));
    if (resume)
        return 0;
    for (i = 0; i < f->nblocks; i++)
        f->bs[i] = B_NEED;
    plan_make_ready(p, id);  /* an empty file is ready at once */
    return plan_queue(p, id, PW_SEND, 0, f->nblocks, NULL);
}

void
plan_file_packed(struct plan *p, uint32_t id)
{
    struct pfile *f = plan_file(p, id);
    uint64_t size = manifest_entry(p->mf, id)->size;

    if (f != NULL && f->packed && !f->aborted)
        plan_count(p, id, size > f->counted ? size - f->counted : 0);
}

void
plan_file_unpack(struct plan *p, uint32_t id)
{
    struct pfile *f = plan_file(p, id);
    uint64_t i;

    if (f == NULL || !f->packed || f->aborted)
        return;
    if (f->hf == NULL &&
        (f->hf = hash_file_new(manifest_entry(p->mf, id)->size,
        p->block_size)) == NULL) {
        plan_file_abort(p, id, FERRY_ERR_NOMEM);
        return;
    }
    f->packed = f->ready = f->ended = 0;
    f->n.literal = 0;
    xfer_sub(&p->x->st.bytes_packed, manifest_entry(p->mf, id)->size);
    p->est[id] = E_WANTED;
    xfer_sub(&p->x->st.bytes_done, f->counted);
    f->counted = 0;
    for (i = 0; i < f->nblocks; i++)
        f->bs[i] = B_NEED;
    plan_make_ready(p, id);
    if (plan_queue(p, id, PW_SEND, 0, f->nblocks, NULL) != 0)
        plan_file_abort(p, id, FERRY_ERR_NOMEM);
}

/* File id was sent: its counts, and its event. */
static void
plan_count_sent(struct plan *p, uint32_t id,
    const struct xfer_file_counts *n)
{
    const struct mentry *e = manifest_entry(p->mf, id);
    char rel[MANIFEST_REL_MAX];

    xfer_add(&p->x->st.files_sent, 1);
    xfer_add(&p->x->st.bytes_payload, e->size);
    xfer_add(&p->x->st.bytes_literal, n->literal);
    xfer_add(&p->x->st.bytes_sparse, n->sparse);
    xfer_add(&p->x->st.resumed_bytes, n->resumed);
    xfer_add(&p->x->st.bytes_matched, n->matched);
    xfer_file(p->x, manifest_rel(p->mf, id, rel), "sent", e->size, n);
}

int
plan_on_reply(struct plan *p, const struct msg_reply *m)
{
    char text[PROTO_MAX_MESSAGE + 1], rel[MANIFEST_REL_MAX];
    struct plan_ended *r;
    struct mentry *e;

    if (m->id >= p->next_entry || p->est[m->id] != E_OFFERED)
        return FERRY_ERR_PROTOCOL;
    e = manifest_entry(p->mf, m->id);
    snprintf(text, sizeof(text), "%.*s", (int)m->text.len, m->text.p);
    switch (m->action) {
    case REPLY_SKIP:
        /* Only a file is adopted, and only when this side asked. */
        if ((m->flags & REPLY_F_ADOPTED) && (e->kind != ENTRY_FILE ||
            !(p->flags & OPEN_F_ADOPT)))
            return FERRY_ERR_PROTOCOL;
        if (e->kind == ENTRY_FILE &&
            (r = plan_ended_before_find(p, m->id)) != NULL) {
            /* Committed from what went out before the cut: sent. */
            plan_count(p, m->id, e->size);
            plan_count_sent(p, m->id, &r->n);
            plan_ended_before_drop(p, r);
        } else if (e->kind == ENTRY_FILE) {
            xfer_add(&p->x->st.files_skipped, 1);
            if (m->flags & REPLY_F_ADOPTED)
                xfer_add(&p->x->st.files_adopted, 1);
            plan_count(p, m->id, e->size);
            xfer_file(p->x, manifest_rel(p->mf, m->id, rel),
                (m->flags & REPLY_F_ADOPTED) ? "adopted" : "skipped",
                e->size, NULL);
        }
        plan_finish(p, m->id);
        return 0;
    case REPLY_WANT:
        /* RESUME and DELTA need their capability and a block to
         * describe. */
        if (e->kind != ENTRY_FILE || ((m->flags & REPLY_F_RESUME) &&
            (!(p->x->caps & PROTO_CAP_RESUME) || e->size == 0)) ||
            ((m->flags & REPLY_F_DELTA) &&
            (!(p->x->caps & PROTO_CAP_DELTA) || e->size == 0)) ||
            ((m->flags & REPLY_F_TENSOR) &&
            (!(p->x->caps & PROTO_CAP_TENSORS) || e->size == 0)))
            return FERRY_ERR_PROTOCOL;
        if (text[0] != '\0')  /* the receiver's warning about this file */
            xfer_problem(p->x, SIDE_DEST, manifest_rel(p->mf, m->id, rel),
                0, text);
        return plan_want(p, m->id, (m->flags & REPLY_F_RESUME) != 0,
            (m->flags & REPLY_F_DELTA) != 0,
            (m->flags & REPLY_F_TENSOR) != 0);
    default:
        xfer_entry_failed(p->x, SIDE_DEST, e->kind == ENTRY_FILE,
            manifest_rel(p->mf, m->id, rel), e->size,
            proto_err_from_wire(m->code), text);
        if (e->kind == ENTRY_FILE)
            plan_count(p, m->id, e->size);
        plan_finish(p, m->id);
        return 0;
    }
}

void
plan_on_stop(struct plan *p, const struct msg_stop *m)
{
    p->x->kept_known = 1;
    p->x->kept_files = m->kept_files;
    p->x->kept_bytes = m->kept_bytes;
    if (m->id == MSG_STOP_NONE || m->id >= p->next_entry ||
        manifest_entry(p->mf, m->id)->kind != ENTRY_FILE)
        return;
    p->stopped = 1;
    p->stop_id = m->id;
}

void
plan_end(struct plan *p)
{
    char rel[MANIFEST_REL_MAX];
    uint8_t e;

    if (!p->stopped)
        return;
    /* Not one answered already (finished, or given up as the source's
     * failure). */
    e = p->est[p->stop_id];
    if (e != E_OFFERED && e != E_WANTED && e != E_ENDED)
        return;
    xfer_file_stopped(p->x, p->stop_id, manifest_rel(p->mf, p->stop_id,
        rel), manifest_entry(p->mf, p->stop_id)->size,
        p->x->peer_error_code != 0 ? p->x->peer_error_code : FERRY_ERR_PEER);
}

int
plan_on_sigs(struct plan *p, const struct msg_sigs *m)
{
    struct pfile *f;
    uint64_t i;
    int have = (m->flags & SIGS_F_HAVE) != 0;

    if (m->id >= p->next_entry || (f = plan_file(p, m->id)) == NULL ||
        !f->resume || p->est[m->id] != E_WANTED ||
        m->first >= f->nblocks || m->count > f->nblocks - m->first)
        return FERRY_ERR_PROTOCOL;
    for (i = m->first; i < m->first + m->count; i++) {
        if (B_STATE(f->bs[i]) != B_UNKNOWN)
            return FERRY_ERR_PROTOCOL;  /* described twice */
        f->bs[i] = have ? B_CHECK : B_NEED;
    }
    f->nsigned += m->count;
    if (f->aborted)
        return 0;
    return plan_queue(p, m->id, have ? PW_CHECK : PW_SEND, m->first,
        m->count, have ? m->hashes : NULL);
}

int
plan_on_file_done(struct plan *p, const struct msg_file_done *m)
{
    char text[PROTO_MAX_MESSAGE + 1], rel[MANIFEST_REL_MAX];
    struct plan_ended *r;
    struct pfile *f;

    if (m->id >= p->next_entry ||
        (p->est[m->id] != E_ENDED && p->est[m->id] != E_ABORTED))
        return FERRY_ERR_PROTOCOL;
    f = plan_file(p, m->id);
    if (p->est[m->id] == E_ABORTED) {
        /* Already reported when we gave up on it. */
    } else if (m->code != 0) {
        snprintf(text, sizeof(text), "%.*s", (int)m->text.len, m->text.p);
        xfer_file_failed(p->x, SIDE_DEST, manifest_rel(p->mf, m->id, rel),
            NULL, manifest_entry(p->mf, m->id)->size,
            proto_err_from_wire(m->code), text);
    } else {
        plan_count_sent(p, m->id, &f->n);
    }
    /* Sent again in full: what went out before does not count twice. */
    if ((r = plan_ended_before_find(p, m->id)) != NULL)
        plan_ended_before_drop(p, r);
    plan_finish(p, m->id);
    return 0;
}
