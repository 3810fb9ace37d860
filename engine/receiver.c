#include "receiver.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "manifest.h"
#include "volume/volrecv.h"

/* How long a batch of files that is not full waits, idle, for more
 * before it commits (docs/DESIGN.md, "Writing files"). */
#define RECEIVER_LINGER_MS 20

enum rcv_state { RCV_WAIT_PLAN, RCV_RUN, RCV_DONE };

struct receiver {
    struct xfer *x;
    struct dest *d;
    struct incoming *in;
    unsigned stream;
    uint32_t flags;
    uint32_t block_size;
    enum rcv_state state;
    const char *rename;     /* the destination's new name, or NULL */
    uint64_t next_id;       /* ENTRY ids only go up (64 bits: no wrap) */
    uint64_t received;      /* entries over this connection */
    uint64_t entries_total;
    int live;               /* PLAN_F_LIVE, and TOTALS not yet in */
    char **tops;            /* accepted top-level names; NULL: any */
    size_t ntops;
    atomic_uint retire;     /* stream 0: streams to RETIRE, a bit each */
};

struct receiver *
receiver_new(struct dest *d, struct incoming *in, unsigned stream,
    uint32_t flags, uint32_t block_size, struct xfer *x)
{
    struct receiver *rc = xcalloc(1, sizeof(*rc));

    if (rc == NULL)
        return NULL;
    rc->x = x;
    rc->d = d;
    rc->in = in;
    rc->stream = stream;
    rc->flags = flags;
    rc->block_size = block_size;
    /* A further stream carries data only. */
    rc->state = stream == 0 ? RCV_WAIT_PLAN : RCV_RUN;
    return rc;
}

void
receiver_free(struct receiver *rc)
{
    size_t i;

    if (rc == NULL)
        return;
    if (rc->live)
        xfer_sub(&rc->x->st.totals_open, 1);
    for (i = 0; i < rc->ntops; i++)
        xfree(rc->tops[i]);
    xfree(rc->tops);
    xfree(rc);
}

void
receiver_retire_stream(struct receiver *rc0, unsigned stream)
{
    if (stream > 0 && stream < PROTO_MAX_STREAMS)
        atomic_fetch_or(&rc0->retire, 1u << stream);
}

/* RETIRE for the streams given up since the last step. */
static int
receiver_send_retire(struct receiver *rc, struct buf *out)
{
    unsigned bits = atomic_exchange(&rc->retire, 0), k;
    struct msg_retire m;
    int r;

    if (!(rc->x->caps & PROTO_CAP_RETIRE) || rc->state != RCV_RUN)
        return 0;
    for (k = 1; bits != 0 && k < PROTO_MAX_STREAMS; k++) {
        if (!(bits & (1u << k)))
            continue;
        m.stream = (uint16_t)k;
        if ((r = msg_retire_encode(out, &m)) != 0)
            return r;
    }
    return 0;
}

int
receiver_expect_tops(struct receiver *rc, const char *const *names,
    size_t n)
{
    size_t i;

    if (n == 0)
        return 0;
    if ((rc->tops = xcalloc(n, sizeof(*rc->tops))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < n; i++) {
        if ((rc->tops[i] = xstrdup(names[i])) == NULL)
            return FERRY_ERR_NOMEM;
        rc->ntops = i + 1;
    }
    return 0;
}

/* 1 if the first n bytes of path are a name the glob top matches, as
 * the agent's glob(3) would (no leading dot matched by a wildcard). */
static int
receiver_glob_top(const char *top, const char *path, size_t n)
{
    char name[FSX_NAME_MAX + 1];

    if (strpbrk(top, "*?[") == NULL || n > FSX_NAME_MAX)
        return 0;
    memcpy(name, path, n);
    name[n] = '\0';
    return fnmatch(top, name, FNM_PATHNAME | FNM_PERIOD) == 0;
}

/* 1 if path is under a top-level name we asked for (tops: under any). */
static int
receiver_asked(const struct receiver *rc, const char *path)
{
    size_t n = strcspn(path, "/"), i;

    if (rc->tops == NULL)
        return 1;
    for (i = 0; i < rc->ntops; i++) {
        if (strlen(rc->tops[i]) == n && memcmp(rc->tops[i], path, n) == 0)
            return 1;
        /* A glob the agent expanded ("step-*.pt"): names it matches. */
        if (receiver_glob_top(rc->tops[i], path, n))
            return 1;
    }
    return 0;
}

/* 1 if path is one we take, after putting a single file under the name
 * READY gave it: offered under that name, or (SINGLE_EARLY) under its own,
 * one name we asked for. */
static int
receiver_requested(const struct receiver *rc, char path[PROTO_MAX_PATH + 1])
{
    if (rc->rename == NULL)
        return receiver_asked(rc, path);
    if (strcmp(path, rc->rename) == 0)
        return 1;
    if (!(rc->x->caps & PROTO_CAP_SINGLE_EARLY) ||
        strchr(path, '/') != NULL || !receiver_asked(rc, path))
        return 0;
    snprintf(path, PROTO_MAX_PATH + 1, "%s", rc->rename);
    return 1;
}

static int
receiver_top_is_state(const char *path)
{
    size_t n = strlen(DEST_STATE_DIR);

    return strncmp(path, DEST_STATE_DIR, n) == 0 &&
        (path[n] == '\0' || path[n] == '/');
}

static int
receiver_reply(struct buf *out, uint32_t id, uint8_t action, int code)
{
    struct msg_reply m;
    const char *text = code != 0 ? ferry_strerror(code) : "";

    memset(&m, 0, sizeof(m));
    m.id = id;
    m.action = action;
    m.code = proto_err_to_wire(code);
    m.text.p = text;
    m.text.len = strlen(text);
    return msg_reply_encode(out, &m);
}

/* SKIP: the sender sends nothing, and counts the file as adopted. */
static int
receiver_reply_adopted(struct buf *out, uint32_t id)
{
    struct msg_reply m;

    memset(&m, 0, sizeof(m));
    m.id = id;
    m.action = REPLY_SKIP;
    m.flags = REPLY_F_ADOPTED;
    return msg_reply_encode(out, &m);
}

/* The totals, for progress: the first connection's (a later one offers
 * only what is left). */
static void
receiver_count_totals(struct receiver *rc, uint64_t entries, uint64_t files,
    uint64_t bytes)
{
    if (xfer_get(&rc->x->st.entries_total) == 0) {
        xfer_add(&rc->x->st.entries_total, entries);
        xfer_add(&rc->x->st.files_total, files);
        xfer_add(&rc->x->st.bytes_total, bytes);
    }
    rc->entries_total = entries;
}

/* TOTALS, after a live PLAN: from now on, no more entries than these. */
static int
receiver_on_totals(struct receiver *rc, const struct frame *f,
    struct conn_step *st)
{
    struct msg_totals m;
    int r;

    (void)st;
    if ((r = msg_totals_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (!rc->live || m.entries_total < rc->received ||
        m.entries_total > MANIFEST_MAX_ENTRIES)
        return FERRY_ERR_PROTOCOL;
    rc->live = 0;
    xfer_sub(&rc->x->st.totals_open, 1);
    receiver_count_totals(rc, m.entries_total, m.files_total,
        m.bytes_total);
    return 0;
}

static int
receiver_on_plan(struct receiver *rc, const struct frame *f,
    struct conn_step *st)
{
    struct buf *out = st->out;
    struct msg_plan plan;
    struct msg_ready ready;
    int r;

    if ((r = msg_plan_decode(f->payload, f->len, &plan)) != 0)
        return r;
    /* A live plan only to a receiver that said it takes one (a pull's
     * client that checks space needs the total first). */
    if ((plan.flags & PLAN_F_LIVE) && !(rc->x->caps & PROTO_CAP_LIVE))
        return FERRY_ERR_PROTOCOL;
    if ((r = dest_resolve(rc->d, &plan, &rc->rename)) != 0)
        return r;
    receiver_count_totals(rc, plan.entries_total, plan.files_total,
        plan.bytes_total);
    if ((rc->live = (plan.flags & PLAN_F_LIVE) != 0))
        xfer_add(&rc->x->st.totals_open, 1);
    memset(&ready, 0, sizeof(ready));
    if (rc->rename != NULL) {
        ready.rename.p = rc->rename;
        ready.rename.len = strlen(rc->rename);
    }
    rc->state = RCV_RUN;
    if ((r = msg_ready_encode(out, &ready)) != 0)
        return r;
    return volrecv_send_prefs(incoming_volrecv(rc->in), out);
}

/* An entry we cannot make: the transfer stops if every later write would
 * fail too (the state directory's errors come with a message of their
 * own, which xfer_fail keeps), else this entry fails and the rest goes
 * on. */
static int
receiver_entry_failed(struct receiver *rc, const struct msg_entry *m,
    const char *path, int r, struct buf *out)
{
    if (dest_fatal_errno(r) || r == FERRY_ERR_STATE || r == -EBUSY) {
        if (m->kind == ENTRY_FILE)
            xfer_file_stopped(rc->x, m->id, path, m->size, r);
        return xfer_fail(rc->x, r, "%s/%s: %s", dest_root(rc->d), path,
            ferry_strerror(r));
    }
    if (r == FERRY_ERR_NOMEM)
        return r;
    xfer_entry_failed(rc->x, SIDE_DEST, m->kind == ENTRY_FILE, path,
        m->size, r, NULL);
    xfer_add(&rc->x->st.bytes_done, m->size);
    incoming_count_failed(rc->in);
    return receiver_reply(out, m->id, REPLY_FAIL, r);
}

static int
receiver_entry(struct receiver *rc, const struct msg_entry *m,
    const char *path, struct buf *out)
{
    int r;

    switch (m->kind) {
    case ENTRY_FILE:
        if ((r = dest_file_current(rc->d, m, path, rc->block_size)) < 0)
            break;
        if (r == 1) {
            incoming_skipped(rc->in, path, m->size);
            return receiver_reply(out, m->id, REPLY_SKIP, 0);
        }
        if (r == DEST_ADOPTED) {
            incoming_adopted(rc->in, path, m->size);
            return receiver_reply_adopted(out, m->id);
        }
        return incoming_want(rc->in, m, path, out);
    case ENTRY_DIR:
        if ((r = dest_make_dir(rc->d, m, path)) == 0)
            return receiver_reply(out, m->id, REPLY_SKIP, 0);
        break;
    default:
        if ((r = dest_make_symlink(rc->d, m, path)) == 0)
            return receiver_reply(out, m->id, REPLY_SKIP, 0);
        break;
    }
    return receiver_entry_failed(rc, m, path, r, out);
}

static int
receiver_on_entry(struct receiver *rc, const struct frame *f,
    struct conn_step *st)
{
    struct buf *out = st->out;
    char path[PROTO_MAX_PATH + 1];
    struct msg_entry m;
    int r;

    if ((r = msg_entry_decode(f->payload, f->len, &m)) != 0)
        return r;
    /* Ids only go up; a sender that resumes a transfer leaves out what
     * it finished before. Ids are indices of the sender's manifest, so
     * none reaches MANIFEST_MAX_ENTRIES: that keeps the bit incoming.c
     * holds per wanted id under 12.5 MB (one id near 2^32 would cost
     * 512 MiB). */
    if (m.id < rc->next_id || m.id >= MANIFEST_MAX_ENTRIES ||
        (!rc->live && rc->received >= rc->entries_total))
        return FERRY_ERR_PROTOCOL;
    rc->next_id = (uint64_t)m.id + 1;
    rc->received++;
    /* setuid and setgid bits are not taken from the other side. */
    m.mode &= 01777;
    memcpy(path, m.path.p, m.path.len);
    path[m.path.len] = '\0';
    if (!receiver_requested(rc, path)) {
        /* Not ours to take; a well-behaved sender never does this. */
        return xfer_fail(rc->x, FERRY_ERR_PROTOCOL,
            "peer sent an entry that was not requested");
    }
    if (receiver_top_is_state(path)) {
        xfer_entry_failed(rc->x, SIDE_DEST, m.kind == ENTRY_FILE, path,
            m.size, FERRY_ERR_BAD_PATH, "name reserved for ferry's state");
        incoming_count_failed(rc->in);
        return receiver_reply(out, m.id, REPLY_FAIL, FERRY_ERR_BAD_PATH);
    }
    return receiver_entry(rc, &m, path, out);
}

static int
receiver_send_readback(struct receiver *rc, struct buf *out)
{
    struct msg_readback m;

    m.bytes = xfer_get(&rc->x->st.readback_bytes);
    m.ns = xfer_get(&rc->x->st.readback_ns);
    return msg_readback_encode(out, &m);
}

static int
receiver_on_end(struct receiver *rc, const struct frame *f,
    struct conn_step *st)
{
    int r;

    if ((r = msg_end_decode(f->payload, f->len)) != 0)
        return r;
    if (incoming_active(rc->in) != 0 || rc->live ||
        rc->received != rc->entries_total)
        return FERRY_ERR_PROTOCOL;
    if ((r = incoming_flush(rc->in, st->out)) != 0)
        return r;
    volrecv_end(incoming_volrecv(rc->in));
    dest_fix_dirs(rc->d);
    dest_tidy(rc->d);
    if ((rc->x->caps & PROTO_CAP_READBACK) &&
        (r = receiver_send_readback(rc, st->out)) != 0)
        return r;
    if ((r = msg_summary_encode(st->out, incoming_summary(rc->in))) != 0)
        return r;
    rc->state = RCV_DONE;
    st->done = 1;
    return 0;
}

static int
receiver_on_notice(struct receiver *rc, const struct frame *f,
    struct conn_step *st)
{
    char path[PROTO_MAX_PATH + 1], text[PROTO_MAX_MESSAGE + 1];
    struct msg_notice n;
    int r;

    (void)st;
    if ((r = msg_notice_decode(f->payload, f->len, &n)) != 0)
        return r;
    snprintf(path, sizeof(path), "%.*s", (int)n.path.len, n.path.p);
    snprintf(text, sizeof(text), "%.*s", (int)n.text.len, n.text.p);
    xfer_problem(rc->x, SIDE_SOURCE, path, proto_err_from_wire(n.code),
        text);
    return 0;
}

/* A frame incoming takes as it comes: decoded, and for file data (data
 * 1, on any stream) the way its file comes checked first (in blocks, or in a volume:
 * incoming_data_via). OUT is RCV_OUT for a taker that answers. */
#define RCV_OUT , st->out
#define RCV_NO_OUT
#define RECEIVER_TO_INCOMING(name, data, OUT)                                \
    static int                                                               \
    receiver_on_##name(struct receiver *rc, const struct frame *f,           \
        struct conn_step *st)                                                \
    {                                                                        \
        struct msg_##name m;                                                 \
        int r;                                                               \
                                                                             \
        (void)st;                                                            \
        if ((r = msg_##name##_decode(f->payload, f->len, &m)) != 0 ||        \
            (data && (r = incoming_data_via(rc->in, m.id,                    \
            rc->stream)) != 0))                                              \
            return r;                                                        \
        return incoming_##name(rc->in, &m OUT);                              \
    }

RECEIVER_TO_INCOMING(delta_stop, 0, RCV_NO_OUT)
RECEIVER_TO_INCOMING(delta_go, 0, RCV_NO_OUT)
RECEIVER_TO_INCOMING(delta, 1, RCV_OUT)
RECEIVER_TO_INCOMING(tensor, 1, RCV_OUT)
RECEIVER_TO_INCOMING(block, 1, RCV_OUT)
RECEIVER_TO_INCOMING(match, 1, RCV_OUT)
RECEIVER_TO_INCOMING(file_end, 1, RCV_OUT)

static int
receiver_on_volume(struct receiver *rc, const struct frame *f,
    struct conn_step *st)
{
    return volrecv_frame(incoming_volrecv(rc->in), rc->stream, f, st->out);
}

/* What the receiver takes from the sender; the stream and the capability
 * each needs are msg_table.h's (PLAN, ENTRY, NOTICE, TOTALS and END on
 * stream 0; MATCH, DELTA, DELTA_STOP, DELTA_GO, TENSOR, TOTALS and the
 * volume frames only with their capability). PLAN comes first and only
 * then, and moves stream 0 on to RUN, where the others come (a further
 * stream starts there); END moves it to DONE, where nothing more is read,
 * and TOTALS ends a live plan (receiver_on_totals). That one rule of
 * states is receiver_on_frame's: before PLAN, the entries the other
 * frames name do not exist yet. */
static int (*const receiver_dispatch[MSG_TYPE_MAX + 1])(
    struct receiver *rc, const struct frame *f, struct conn_step *st) = {
    [MSG_PLAN] = receiver_on_plan,
    [MSG_ENTRY] = receiver_on_entry,
    [MSG_NOTICE] = receiver_on_notice,
    [MSG_TOTALS] = receiver_on_totals,
    [MSG_END] = receiver_on_end,
    [MSG_BLOCK] = receiver_on_block,
    [MSG_MATCH] = receiver_on_match,
    [MSG_DELTA] = receiver_on_delta,
    [MSG_TENSOR] = receiver_on_tensor,
    [MSG_FILE_END] = receiver_on_file_end,
    [MSG_DELTA_STOP] = receiver_on_delta_stop,
    [MSG_DELTA_GO] = receiver_on_delta_go,
    [MSG_VOL_BEGIN] = receiver_on_volume,
    [MSG_VOL_FILE] = receiver_on_volume,
    [MSG_VOL_DATA] = receiver_on_volume,
    [MSG_VOL_END] = receiver_on_volume,
};

static int
receiver_on_frame(struct receiver *rc, const struct frame *f,
    struct conn_step *st)
{
    const struct msg_info *mi = msg_info(f->type);
    int r;

    /* Only blocks built from a basis (DELTA, TENSOR) follow one another
     * with writes in flight. */
    if (f->type != MSG_DELTA && f->type != MSG_TENSOR &&
        (r = incoming_drain(rc->in, st->out)) != 0)
        return r;
    if (f->type == MSG_ERROR)
        return xfer_peer_error(rc->x, f->payload, f->len);
    if (mi == NULL || receiver_dispatch[f->type] == NULL ||
        (rc->state == RCV_WAIT_PLAN) != (f->type == MSG_PLAN) ||
        (mi->stream0 && rc->stream != 0) ||
        (mi->cap != 0 && !(rc->x->caps & mi->cap))) {
        log_debug("unexpected %s from sender", msg_type_name(f->type));
        return FERRY_ERR_PROTOCOL;
    }
    return receiver_dispatch[f->type](rc, f, st);
}

static int
receiver_run(struct receiver *rc, struct conn_step *st)
{
    struct frame f;
    size_t off = 0;
    int r = 0, more = 0, d, pending;

    while (rc->state != RCV_DONE && (r = conn_step_frame(st, &off, &f)) > 0)
        if ((r = receiver_on_frame(rc, &f, st)) != 0)
            break;
    /* A step settles what it wrote before it ends. */
    d = incoming_drain(rc->in, st->out);
    if (r != 0) {
        /* The transfer ends here (a full disk, say). What is staged is
         * whole and checked and would be committed as the receiver goes
         * (incoming_free); committed now, its FILE_DONE goes out before
         * the ERROR, so the sender, and its `ready` events, know it is
         * in place. */
        if (r != FERRY_ERR_CLOSED && incoming_flush(rc->in, st->out) != 0)
            log_debug("%s: commit before the error failed",
                dest_root(rc->d));
        return r;
    }
    if (d != 0)
        return d;
    if (rc->state == RCV_DONE)
        return off < st->in_len ? FERRY_ERR_PROTOCOL : 0;
    if (st->eof) {
        /* A further stream that ends is retired; the transfer goes on
         * over the others. Stream 0 ending early is a lost connection. */
        if (rc->stream != 0) {
            volrecv_stream_lost(incoming_volrecv(rc->in), rc->stream);
            st->done = 1;
            return 0;
        }
        return FERRY_ERR_CLOSED;
    }
    /* Reading back held blocks (SIGS follow their REPLY on stream 0),
     * and committing what is complete rather than leaving a small batch
     * waiting for files that may not come. */
    if (rc->state == RCV_RUN) {
        if ((r = incoming_work(rc->in, st->out, st->in_len == 0,
            rc->stream == 0, &more)) != 0)
            return r;
        st->more = more;
        /* A timer, as time is the reason: a small batch lingers this
         * long for more files before it commits. */
        if (!more && dest_batch_len(rc->d) > 0)
            st->wake_ms = RECEIVER_LINGER_MS;
        /* Volumes' files committed behind their readers are answered
         * as soon as they are in place: the commit wakes the loop. */
        if ((r = volrecv_poll(incoming_volrecv(rc->in), st->out,
            &pending)) != 0)
            return r;
        st->wait_wake = pending;
    }
    return 0;
}

/* The transfer stops on an error of this side: STOP goes before the
 * session's ERROR, on the stream that fails, with the file the error met
 * and what the destination keeps for a resume. */
static void
receiver_send_stop(struct receiver *rc, int r, struct buf *out)
{
    struct msg_stop m;

    /* Before READY the sender has offered nothing and waits for READY:
     * the ERROR alone says it. */
    if (r == 0 || r == FERRY_ERR_CLOSED || r == FERRY_ERR_PEER ||
        !(rc->x->caps & PROTO_CAP_STOP) || rc->state == RCV_WAIT_PLAN)
        return;
    m.id = rc->x->stopped ? rc->x->stop_id : MSG_STOP_NONE;
    incoming_sync_partials(rc->in);
    dest_kept(rc->d, &m.kept_files, &m.kept_bytes);
    if (msg_stop_encode(out, &m) != 0)
        log_debug("%s: no room for STOP", dest_root(rc->d));
}

int
receiver_step(void *role, struct conn_step *st)
{
    struct receiver *rc = role;
    struct buf *outbox = incoming_outbox(rc->in), *out = st->out;
    int r;

    if (rc->stream == 0) {
        if ((r = buf_put(out, buf_ptr(outbox), buf_used(outbox))) != 0 ||
            (r = receiver_send_retire(rc, out)) != 0)
            return r;
        buf_reset(outbox);
        r = receiver_run(rc, st);
        receiver_send_stop(rc, r, out);
        return r;
    }
    /* What a further stream says (FILE_DONE) goes out on stream 0. */
    st->out = outbox;
    r = receiver_run(rc, st);
    st->out = out;
    if (buf_used(outbox) > 0)
        st->poke = 1;
    receiver_send_stop(rc, r, out);
    return r;
}
