/* volrecv.c: volumes of small files read by the receiver (volrecv.h). */
#include "volrecv.h"

#include <inttypes.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../common/log.h"
#include "../../proto/limits.h"
#include "../../proto/msg_vol.h"
#include "../dest.h"
#include "../incoming.h"
#include "volread.h"

/* A member the sender announced (VOL_FILE). */
struct vr_member {
    uint32_t id;
    struct hash128 hash;
    char *path;              /* the wanted entry's, copied */
    uint64_t size;
};

/* A volume that ended, until all of its files are answered. */
struct vr_ended {
    uint32_t vol;
    size_t last;             /* its members end at this index */
    size_t files;
    uint64_t raw, bytes;
};

/* One stream's volume; also the context of the reader's hook. The
 * reader (and its staging directory) serves the stream's volumes one
 * after the other: a directory made per volume costs the file system
 * more than the files in it. Its members stay until they are answered,
 * which may be after their volume ended (the reader commits behind). */
struct vr_stream {
    struct volrecv *vr;
    uint32_t vol;            /* open volume, or 0 */
    struct volr *r;
    struct vr_member *m;     /* [acked, nm) not answered yet */
    size_t nm, mcap;
    size_t first;            /* the open volume's first member */
    size_t next;             /* the reader's next record */
    size_t acked;            /* records answered (committed) so far */
    uint64_t committed0;     /* the reader's committed files before m[0] */
    uint64_t bytes;          /* compressed bytes so far */
    uint64_t raw;            /* file bytes of the records handed out */
    struct vr_ended *ended;  /* oldest first */
    size_t nended, ended_cap;
    int lost;                /* its volume frames are ignored */
};

struct volrecv {
    struct incoming *in;
    struct dest *d;
    struct xfer *x;
    uint32_t block_size;
    struct volsend_opts prefs;
    int has_prefs;
    struct vr_stream st[PROTO_MAX_STREAMS];
};

struct volrecv *
volrecv_new(struct incoming *in, struct dest *d, uint32_t block_size,
    struct xfer *x)
{
    struct volrecv *vr = xcalloc(1, sizeof(*vr));
    size_t i;

    if (vr == NULL)
        return NULL;
    vr->in = in;
    vr->d = d;
    vr->block_size = block_size;
    vr->x = x;
    for (i = 0; i < PROTO_MAX_STREAMS; i++)
        vr->st[i].vr = vr;
    return vr;
}

/* Forgets the stream's volume: the files claimed for it and not
 * answered may come again. */
static void
volrecv_forget(struct volrecv *vr, unsigned stream)
{
    struct vr_stream *vs = &vr->st[stream];
    size_t i;

    for (i = 0; i < vs->nm; i++) {
        incoming_pack_release(vr->in, vs->m[i].id, stream);
        xfree(vs->m[i].path);
    }
    vs->nm = vs->next = vs->acked = vs->first = 0;
    vs->nended = 0;
    vs->vol = 0;
    vs->bytes = vs->raw = 0;
}

/* ... and its reader, with what it staged and did not commit. */
static void
volrecv_close(struct volrecv *vr, unsigned stream)
{
    struct vr_stream *vs = &vr->st[stream];

    volrecv_forget(vr, stream);
    volr_free(vs->r);
    vs->r = NULL;
}

static int volrecv_answer(struct volrecv *vr, unsigned stream,
    struct buf *out);

/* The transfer ends with the stream's volume open: the files its reader
 * committed are counted as sent (their answers go nowhere), or a retry
 * would find them in place and count them as skipped. */
static void
volrecv_stop(struct volrecv *vr, unsigned stream, int read_whole)
{
    struct vr_stream *vs = &vr->st[stream];
    struct buf sink;

    if (vs->r == NULL || vs->acked == vs->nm)
        return;
    buf_init(&sink, (size_t)-1);
    if (volr_stop(vs->r, read_whole) != 0 ||
        volrecv_answer(vr, stream, &sink) != 0)
        log_debug("%s: volume %" PRIu32 ": files read whole not kept",
            dest_root(vr->d), vs->vol);
    buf_cleanup(&sink);
}

/* Freed after a failure: what is in place is counted, nothing more is
 * committed. */
void
volrecv_free(struct volrecv *vr)
{
    size_t i;

    if (vr == NULL)
        return;
    for (i = 0; i < PROTO_MAX_STREAMS; i++) {
        volrecv_stop(vr, (unsigned)i, 0);
        volrecv_close(vr, (unsigned)i);
        xfree(vr->st[i].m);
        xfree(vr->st[i].ended);
    }
    xfree(vr);
}

void
volrecv_stream_lost(struct volrecv *vr, unsigned stream)
{
    if (vr == NULL || stream >= PROTO_MAX_STREAMS)
        return;
    volrecv_close(vr, stream);
    vr->st[stream].lost = 1;
}

void
volrecv_restart(struct volrecv *vr)
{
    size_t i;

    for (i = 0; vr != NULL && i < PROTO_MAX_STREAMS; i++) {
        volrecv_stop(vr, (unsigned)i, 1);
        volrecv_close(vr, (unsigned)i);
        vr->st[i].lost = 0;
    }
}

void
volrecv_end(struct volrecv *vr)
{
    volrecv_restart(vr);
}

void
volrecv_set_prefs(struct volrecv *vr, const struct volsend_opts *o)
{
    vr->prefs = *o;
    vr->has_prefs = 1;
}

int
volrecv_send_prefs(struct volrecv *vr, struct buf *out)
{
    struct msg_vol_opts m;

    if (vr == NULL || !vr->has_prefs || !(vr->x->caps & PROTO_CAP_VOLUMES))
        return 0;
    memset(&m, 0, sizeof(m));
    m.threshold = vr->prefs.threshold;
    m.volume_size = vr->prefs.volume_size;
    m.compress = vr->prefs.compress;
    m.level = vr->prefs.level;
    return msg_vol_opts_encode(out, &m);
}

/* The reader's manifest: the records the sender announced, in order. A
 * member without a record (FERRY_ERR_SHORT) is refused by the reader. */
static int
volrecv_hook(void *ctx, struct vman_rec *rec, char *store)
{
    struct vr_stream *vs = ctx;
    struct vr_member *m;

    memset(rec, 0, sizeof(*rec));
    if (vs->next >= vs->nm)
        return FERRY_ERR_SHORT;
    m = &vs->m[vs->next++];
    rec->type = VMAN_FILE;
    /* The reader numbers the volume as the wire does (its messages name
     * it). */
    rec->volume = vs->vol;
    rec->path_len = strlen(m->path);
    memcpy(store, m->path, rec->path_len + 1);
    rec->path = store;
    rec->size = m->size;
    rec->hash = m->hash;
    vs->raw += m->size;
    return 0;
}

/* A volume problem stops the transfer, with the reader's message. */
static int
volrecv_fail(struct volrecv *vr, unsigned stream, int r)
{
    struct vr_stream *vs = &vr->st[stream];
    const char *text = NULL;
    uint32_t vol = vs->vol;

    enum volr_kind kind = vs->r != NULL ? volr_error(vs->r, &text) :
        VOLR_OK;

    /* The destination's own failure (a full disk) is not the sender's. */
    if (kind == VOLR_DEST && text != NULL)
        r = xfer_fail(vr->x, r, "%s: %s", dest_root(vr->d), text);
    else if (kind != VOLR_OK && text != NULL)
        r = xfer_fail(vr->x, r, "%s: refused from the sender: %s",
            dest_root(vr->d), text);
    else
        r = xfer_fail(vr->x, r, "%s: volume %" PRIu32 ": %s",
            dest_root(vr->d), vol, ferry_strerror(r));
    volrecv_close(vr, stream);
    return r;
}

static int
volrecv_on_begin(struct volrecv *vr, unsigned stream, const struct frame *f)
{
    struct vr_stream *vs = &vr->st[stream];
    struct volr_opts o = { 1, vr->block_size, &vr->x->wake };
    struct volr_hooks h = { volrecv_hook, NULL, NULL };
    struct volr_stats st;
    struct msg_vol_begin m;
    int r, rootfd, partfd;

    if ((r = msg_vol_begin_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (vs->vol != 0 || (rootfd = dest_root_fd(vr->d)) < 0)
        return FERRY_ERR_PROTOCOL;
    /* Staged in DEST/.ferry/part, whose lock we hold: what a crash
     * leaves there is swept by the next transfer, never in sight. */
    if ((r = dest_part_dir(vr->d, &partfd)) != 0)
        return r;
    h.ctx = vs;
    if (vs->r == NULL && (r = volr_new_in(rootfd, partfd, &o, &h,
        &vs->r)) != 0)
        return xfer_fail(vr->x, r, "%s: cannot stage a volume: %s",
            dest_root(vr->d), ferry_strerror(r));
    vs->vol = m.volume;
    if (vs->nm == 0) {
        volr_stats(vs->r, &st);
        vs->committed0 = st.committed;
    }
    vs->first = vs->nm;
    if ((r = volr_begin(vs->r, m.volume)) != 0)
        return volrecv_fail(vr, stream, r);
    return 0;
}

static int
volrecv_on_file(struct volrecv *vr, unsigned stream, const struct frame *f)
{
    struct vr_stream *vs = &vr->st[stream];
    struct msg_vol_file m;
    struct vr_member *nm, *p;
    const char *path;
    uint64_t size;
    int r;

    if ((r = msg_vol_file_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (vs->vol == 0 || m.volume != vs->vol)
        return FERRY_ERR_PROTOCOL;
    /* Only a file we asked for (at most INCOMING_MAX_FILES, which bounds
     * the records of a volume) and no data came for, in one volume,
     * once. */
    if ((r = incoming_pack_claim(vr->in, m.id, stream, &path, &size)) != 0)
        return r;
    if (vs->nm == vs->mcap) {
        if ((nm = xgrow(vs->m, vs->nm, &vs->mcap, sizeof(*nm), 64)) ==
            NULL) {
            incoming_pack_release(vr->in, m.id, stream);
            return FERRY_ERR_NOMEM;
        }
        vs->m = nm;
    }
    p = &vs->m[vs->nm];
    if ((p->path = xstrdup(path)) == NULL) {
        incoming_pack_release(vr->in, m.id, stream);
        return FERRY_ERR_NOMEM;
    }
    p->id = m.id;
    p->hash = m.hash;
    p->size = size;
    vs->nm++;
    return 0;
}

/* Members answered go, but for those of the open volume the reader
 * may still be at (their claims were done by the answer). */
static void
volrecv_compact(struct vr_stream *vs)
{
    size_t i, k = vs->acked;

    if (vs->vol != 0 && k > vs->first)
        k = vs->first;
    if (k == 0)
        return;
    for (i = 0; i < k; i++)
        xfree(vs->m[i].path);
    memmove(vs->m, vs->m + k, (vs->nm - k) * sizeof(*vs->m));
    for (i = 0; i < vs->nended; i++)
        vs->ended[i].last -= k;
    vs->nm -= k;
    vs->next -= k;
    vs->first = vs->first >= k ? vs->first - k : 0;
    vs->acked -= k;
    vs->committed0 += k;
}

/* Answers the files the reader has committed: it commits in batches as
 * it reads, in order, so the window moves on before the volume ends; a
 * volume all of whose files are answered is committed. */
static int
volrecv_answer(struct volrecv *vr, unsigned stream, struct buf *out)
{
    struct vr_stream *vs = &vr->st[stream];
    struct volr_stats st;
    struct vr_ended *e;
    int r;

    if ((r = volr_poll(vs->r)) != 0)
        return volrecv_fail(vr, stream, r);
    /* The reader counts over the stream's volumes; these members are
     * those it committed since m[0]. */
    volr_stats(vs->r, &st);
    while (vs->acked < vs->nm &&
        vs->acked < st.committed - vs->committed0) {
        if ((r = incoming_pack_done(vr->in, vs->m[vs->acked].id, stream,
            out)) != 0)
            return r;
        vs->acked++;
    }
    while (vs->nended > 0 && vs->ended[0].last <= vs->acked) {
        e = &vs->ended[0];
        xfer_volume(vr->x, e->vol, "committed", e->files, e->raw, e->bytes);
        memmove(vs->ended, vs->ended + 1, --vs->nended * sizeof(*e));
    }
    volrecv_compact(vs);
    return 0;
}

int
volrecv_poll(struct volrecv *vr, struct buf *out, int *pending)
{
    struct vr_stream *vs;
    unsigned i;
    int r, busy;

    *pending = 0;
    if (vr == NULL)
        return 0;   /* a transfer without volumes */
    for (i = 0; i < PROTO_MAX_STREAMS; i++) {
        vs = &vr->st[i];
        if (vs->r == NULL || vs->acked == vs->nm)
            continue;
        /* Asked first: a commit that ends after the answers below is
         * seen at the next poll, not missed. */
        busy = volr_pending(vs->r);
        if ((r = volrecv_answer(vr, i, out)) != 0)
            return r;
        if (vs->acked < vs->nm && busy)
            *pending = 1;
    }
    return 0;
}

static int
volrecv_on_data(struct volrecv *vr, unsigned stream, const struct frame *f,
    struct buf *out)
{
    struct vr_stream *vs = &vr->st[stream];
    struct msg_vol_data m;
    int r;

    if ((r = msg_vol_data_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (vs->vol == 0 || m.volume != vs->vol)
        return FERRY_ERR_PROTOCOL;
    vs->bytes += m.len;
    if ((r = volr_put(vs->r, m.data, m.len)) != 0)
        return volrecv_fail(vr, stream, r);
    return volrecv_answer(vr, stream, out);
}

static int
volrecv_on_end(struct volrecv *vr, unsigned stream, const struct frame *f,
    struct buf *out)
{
    struct vr_stream *vs = &vr->st[stream];
    struct msg_vol_end m;
    struct vr_ended *e;
    size_t files;
    int r;

    if ((r = msg_vol_end_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (vs->vol == 0 || m.volume != vs->vol)
        return FERRY_ERR_PROTOCOL;
    files = vs->nm - vs->first;
    if (m.bytes != vs->bytes || m.files != files)
        return xfer_fail(vr->x, FERRY_ERR_PROTOCOL, "%s: volume %" PRIu32
            " from the sender refused: it ends after %" PRIu64 " bytes and "
            "%zu files, not %" PRIu64 " and %" PRIu32, dest_root(vr->d),
            vs->vol, vs->bytes, files, m.bytes, m.files);
    if ((r = volr_end(vs->r)) != 0)
        return volrecv_fail(vr, stream, r);
    if (vs->next < vs->nm) {
        r = xfer_fail(vr->x, FERRY_ERR_FORMAT, "%s: volume %" PRIu32
            " from the sender refused: %zu of the files it announced are "
            "not in it", dest_root(vr->d), vs->vol, vs->nm - vs->next);
        volrecv_close(vr, stream);
        return r;
    }
    if ((e = xgrow(vs->ended, vs->nended, &vs->ended_cap, sizeof(*e),
        4)) == NULL)
        return FERRY_ERR_NOMEM;
    vs->ended = e;
    e = &vs->ended[vs->nended++];
    e->vol = vs->vol;
    e->last = vs->nm;
    e->files = files;
    e->raw = vs->raw;
    e->bytes = vs->bytes;
    if (vs->bytes < vs->raw)
        xfer_add(&vr->x->st.bytes_compressed, vs->raw - vs->bytes);
    vs->vol = 0;
    vs->bytes = vs->raw = 0;
    return volrecv_answer(vr, stream, out);
}

int
volrecv_frame(struct volrecv *vr, unsigned stream, const struct frame *f,
    struct buf *out)
{
    /* The capability is the receiver's dispatch's to require (msg_table.h,
     * as for every frame); the stream's number bounds vr->st here. */
    if (vr == NULL || stream >= PROTO_MAX_STREAMS)
        return FERRY_ERR_PROTOCOL;
    /* Sent before the sender lost the stream, and given back since. */
    if (vr->st[stream].lost)
        return 0;
    switch (f->type) {
    case MSG_VOL_BEGIN:
        return volrecv_on_begin(vr, stream, f);
    case MSG_VOL_FILE:
        return volrecv_on_file(vr, stream, f);
    case MSG_VOL_DATA:
        return volrecv_on_data(vr, stream, f, out);
    default:  /* VOL_END: the receiver passes only volume frames */
        return volrecv_on_end(vr, stream, f, out);
    }
}
