#include "sender_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/zst.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "volume/volsend.h"

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
int
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
 * once; the stream and the capability each needs are msg_table.h's.
 * REPLY is taken in any state: plan_on_reply holds its rule, that it
 * answers an entry offered and not yet answered. Entries are offered only
 * in RUN, READY must come before any REPLY (ready_due), and END (then
 * WAIT_SUMMARY) goes only once every entry is answered, so a REPLY in
 * another state answers nothing and is refused there. */
static const struct {
    int (*fn)(struct sender *s, const struct frame *f, struct conn_step *st);
    uint8_t states;
    uint8_t once;
} sender_dispatch[MSG_TYPE_MAX + 1] = {
    [MSG_READY] = { sender_on_ready, SND_ANY, 0 },
    [MSG_REPLY] = { sender_on_reply, SND_ANY, 0 },
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
    int r, fd, hinted;

    memset(&m, 0, sizeof(m));
    /* --adopt: the receiver checks a staged file against this hash. */
    if ((plan_flags(s->p) & (OPEN_F_CHECKSUM | OPEN_F_ADOPT)) &&
        e->kind == ENTRY_FILE && h == NULL &&
        (hinted = manifest_hinted_hash(mf, id, &made)) >= 0) {
        /* Known already, or needed by nobody (--adopt of a swarm that
         * staged no copy of it): not read here. */
        if (hinted == 0)
            manifest_set_hash(mf, id, &made);
        h = manifest_hash(mf, id);
    } else if ((plan_flags(s->p) & (OPEN_F_CHECKSUM | OPEN_F_ADOPT)) &&
        e->kind == ENTRY_FILE && h == NULL) {
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

/*
 * 1 when this step has done its share: CONN_STEP_BUDGET of output, or as
 * many bytes of files read. A block matched or built from the basis
 * sends a few bytes for a whole block read, and a step that waited for
 * its output to fill would read most of a file before the receiver,
 * which builds from those few bytes, could start.
 */
int
sender_step_full(const struct sender *s, const struct buf *out)
{
    return buf_used(out) >= CONN_STEP_BUDGET ||
        s->step_read >= CONN_STEP_BUDGET;
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

/* The scan goes on and this step waits for it: what it publishes next
 * (unless end_only), or its end, wakes the loop (plan_await_scan), and
 * an open volume's linger ends at a time of its own. */
static void
sender_await_scan(struct sender *s, struct conn_step *st, int end_only)
{
    plan_await_scan(s->p, end_only);
    st->wait_wake = 1;
    st->wake_ms = volsend_linger_ms(plan_packer(s->p), s->stream);
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
            sender_await_scan(s, st, !(s->x->caps & PROTO_CAP_LIVE));
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
     * name), and only for a receiver that does not rename it itself;
     * otherwise the offers follow PLAN at once, a round trip sooner, and
     * READY is checked when it comes. */
    s->state = (plan.flags & PLAN_F_SINGLE_FILE) &&
        !(s->x->caps & PROTO_CAP_SINGLE_EARLY) ? SND_WAIT_READY : SND_RUN;
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
        /* Before more data: the receiver may be about to read them. */
        if (plan_next_stop_due(s->p, &id)) {
            if ((r = sender_say_basis(s, id, out)) != 0)
                return r;
            continue;
        }
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
        sender_await_scan(s, st, 0);
    if (s->stream == 0 && s->totals_due) {
        struct msg_totals t;

        if ((r = sender_scanning(s)) < 0)
            return r;
        if (r == 1) {
            sender_await_scan(s, st, 0);
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
         * others, as its side would give it (side_stream_lost) once the
         * conn is closed: here, before any other stream steps. Stream 0
         * ending early is a lost connection. */
        if (s->stream != 0) {
            plan_stream_lost(s->p, s->stream);
            st->done = 1;
            st->poke = 1;
            return 0;
        }
        return FERRY_ERR_CLOSED;
    }
    return sender_produce(s, st);
}
