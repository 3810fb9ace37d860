/* volsend.c: small files packed into volumes by the sender (volsend.h). */
#include "volsend.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/clock.h"
#include "../../common/fsx.h"
#include "../../common/log.h"
#include "../../common/zst.h"
#include "../../proto/limits.h"
#include "../conn.h"
#include "../plan.h"
#include "volume.h"
#include "volwrite.h"

/* One stream's volumes. */
struct vs_stream {
    struct volw *w;          /* a set of volumes being written, or NULL */
    struct zst_enc *enc;     /* its encoder, kept from set to set */
    uint32_t vol;            /* the wire number of the open volume, or 0 */
    uint32_t nfiles;         /* VOL_FILE sent for it */
    uint64_t nbytes;         /* ... and their files' bytes */
    uint32_t cur_id;         /* the file being added */
    struct buf *out;         /* the step's output, while working */
    /* The zstd frame being written: its file bytes, the set's
     * compressed bytes when it began, when, and the sender's time spent
     * reading and compressing (vs->busy, over every stream) then. */
    uint64_t f_in, f_out0, f_t0, f_busy0;
    uint64_t first_ns, fed_ns;  /* when the volume's first and last
                                   files were packed */
    uint64_t saved;          /* the set's saving counted in
                                bytes_compressed so far */
    uint32_t *ids;           /* files packed here, maybe not done yet */
    size_t nids, ids_cap;
    struct volsend *vs;
};

struct volsend {
    struct plan *p;
    struct xfer *x;
    struct volsend_opts o;
    int opts_came, took;
    int level;               /* of the next set */
    uint32_t next_vol;       /* wire numbers, over the streams */
    uint32_t *q;             /* ring of ids waiting to be packed */
    size_t qhead, qlen, qcap;
    size_t qahead;           /* the first ones, asked of the disk ahead */
    uint64_t ahead_bytes;    /* ... and their sizes */
    uint8_t *fbuf;           /* one file, read whole (threshold + 1) */
    struct zst *probe;       /* auto: a sample's compressibility */
    uint8_t *probe_out;
    /* ns spent reading and compressing, over every stream: the sender's
     * steps run one at a time, whatever the streams, so this is what
     * says how much of the time packing took; and where the window the
     * level is judged over began (clock, busy then). */
    uint64_t busy, win_t0, win_busy0;
    /* Blocks compressed since the level was last judged by them, and
     * what all of them came to (volsend_blocks_done). */
    uint64_t b_in, b_out, b_out_all;
    struct vs_stream st[PROTO_MAX_STREAMS];
};

static void
volsend_apply_opts(struct volsend *vs, const struct volsend_opts *o)
{
    vs->o = *o;
    if (vs->o.volume_size == 0)
        vs->o.volume_size = VOLUME_DEFAULT_SIZE;
    /* A file that could not fit one volume whole would be split; small
     * files never are. */
    if (vs->o.threshold > vs->o.volume_size / 16)
        vs->o.threshold = vs->o.volume_size / 16;
    if (vs->o.threshold > PROTO_MAX_PACK_THRESHOLD)
        vs->o.threshold = PROTO_MAX_PACK_THRESHOLD;
    if (vs->o.max_files == 0 || vs->o.max_files > PROTO_MAX_VOLUME_FILES)
        vs->o.max_files = PROTO_MAX_VOLUME_FILES;
    vs->level = vs->o.compress == VOL_COMPRESS_NEVER || (vs->o.compress ==
        VOL_COMPRESS_AUTO && vs->o.short_link) ? VOLSEND_MIN_LEVEL :
        vs->o.compress == VOL_COMPRESS_LEVEL ? vs->o.level :
        VOLSEND_START_LEVEL;
}

struct volsend *
volsend_new(struct plan *p, const struct volsend_opts *o, struct xfer *x)
{
    struct volsend *vs = xcalloc(1, sizeof(*vs));
    size_t i;

    if (vs == NULL)
        return NULL;
    vs->p = p;
    vs->x = x;
    volsend_apply_opts(vs, o);
    for (i = 0; i < PROTO_MAX_STREAMS; i++)
        vs->st[i].vs = vs;
    return vs;
}

static void
volsend_stream_reset(struct vs_stream *ps)
{
    volw_free(ps->w);
    ps->w = NULL;
    ps->vol = 0;
    ps->nfiles = 0;
}

void
volsend_free(struct volsend *vs)
{
    size_t i;

    if (vs == NULL)
        return;
    for (i = 0; i < PROTO_MAX_STREAMS; i++) {
        volsend_stream_reset(&vs->st[i]);
        zst_enc_free(vs->st[i].enc);
        xfree(vs->st[i].ids);
    }
    xfree(vs->q);
    xfree(vs->fbuf);
    zst_free(vs->probe);
    xfree(vs->probe_out);
    xfree(vs);
}

int
volsend_on_opts(struct volsend *vs, const struct msg_vol_opts *m)
{
    struct volsend_opts o = vs->o;  /* what is not on the wire stays */

    if (vs->took || vs->opts_came)
        return FERRY_ERR_PROTOCOL;
    vs->opts_came = 1;
    o.threshold = m->threshold;
    o.volume_size = m->volume_size;
    o.compress = m->compress;
    o.level = m->level;
    volsend_apply_opts(vs, &o);
    return 0;
}

int
volsend_level(const struct volsend *vs)
{
    return vs->level;
}

int
volsend_block_level(const struct volsend *vs)
{
    return vs != NULL && vs->level >= 1 ? vs->level : ZST_LEVEL;
}

static int
volsend_push(struct volsend *vs, uint32_t id)
{
    uint32_t *nq;
    size_t i;

    if (vs->qlen == vs->qcap) {
        if ((nq = xcalloc(vs->qcap ? vs->qcap * 2 : 256, sizeof(*nq))) ==
            NULL)
            return FERRY_ERR_NOMEM;
        for (i = 0; i < vs->qlen; i++)
            nq[i] = vs->q[(vs->qhead + i) % vs->qcap];
        xfree(vs->q);
        vs->q = nq;
        vs->qhead = 0;
        vs->qcap = vs->qcap ? vs->qcap * 2 : 256;
    }
    vs->q[(vs->qhead + vs->qlen) % vs->qcap] = id;
    vs->qlen++;
    return 0;
}

int
volsend_take(struct volsend *vs, uint32_t id, uint64_t size)
{
    if (vs == NULL || !(vs->x->caps & PROTO_CAP_VOLUMES) ||
        size >= vs->o.threshold)
        return 0;
    if (vs->fbuf == NULL &&
        (vs->fbuf = xmalloc((size_t)vs->o.threshold + 1)) == NULL)
        return 0;
    if (volsend_push(vs, id) != 0)
        return 0;  /* sent as blocks instead */
    vs->took = 1;
    return 1;
}

int
volsend_open(const struct volsend *vs, unsigned stream)
{
    return vs != NULL && stream < PROTO_MAX_STREAMS &&
        vs->st[stream].w != NULL;
}

/* zstd's level 0 means its default: never ask for it by accident. */
static int
volsend_zstd_level(const struct volsend *vs)
{
    return vs->level != 0 ? vs->level : 1;
}

/* The level of the next frame, from how the one just ended went (see
 * volsend.h): its file bytes in and bytes out, and over the window since
 * the level was last judged (all streams), the time and how much of it
 * the sender spent packing. */
static void
volsend_adapt(struct volsend *vs, uint64_t in, uint64_t out, uint64_t set_out)
{
    uint64_t now = clock_ns(), wall = now - vs->win_t0,
        busy = vs->busy - vs->win_busy0;

    if (vs->o.compress != VOL_COMPRESS_AUTO || in < (256u << 10) ||
        vs->o.short_link)
        return;  /* too little to judge by, or nothing to judge */
    if (out * 100 > in * 97) {
        vs->level = VOLSEND_MIN_LEVEL;
        return;
    }
    if (vs->level == VOLSEND_MIN_LEVEL) {
        vs->level = 1;  /* it compresses after all: try again */
        return;
    }
    /* A frame is often packed within one step, the wait for the link
     * coming between frames: only a window of several frames shows it. */
    if (wall < VOLSEND_ADAPT_WINDOW_NS)
        return;
    if (busy * 2 < wall && vs->level < VOLSEND_MAX_LEVEL)
        vs->level++;
    else if (busy * 10 > wall * 8 && vs->level > 1 &&
        set_out >= VOLSEND_BUFFERED)
        vs->level--;
    vs->win_t0 = now;
    vs->win_busy0 = vs->busy;
}

void
volsend_blocks_done(struct volsend *vs, uint64_t in, uint64_t out,
    uint64_t ns)
{
    if (vs == NULL)
        return;
    if (vs->win_t0 == 0) {
        vs->win_t0 = clock_ns() - ns;
        vs->win_busy0 = vs->busy;
    }
    vs->busy += ns;
    vs->b_in += in;
    vs->b_out += out;
    vs->b_out_all += out;
    if (vs->b_in < VOLSEND_FRAME_BYTES)
        return;
    volsend_adapt(vs, vs->b_in, vs->b_out, vs->b_out_all);
    log_debug("blocks: %llu in, %llu out; level %d",
        (unsigned long long)vs->b_in, (unsigned long long)vs->b_out,
        vs->level);
    vs->b_in = vs->b_out = 0;
}

static void
volsend_frame_begin(struct vs_stream *ps)
{
    struct volw_totals t;

    memset(&t, 0, sizeof(t));
    if (ps->w != NULL)
        volw_totals(ps->w, &t);
    ps->f_in = 0;
    ps->f_out0 = t.compressed;
    ps->f_t0 = clock_ns();
    ps->f_busy0 = ps->vs->busy;
    if (ps->vs->win_t0 == 0) {
        ps->vs->win_t0 = ps->f_t0;
        ps->vs->win_busy0 = ps->vs->busy;
    }
}

/* The zstd frame just ended (its bytes are all out): the level of the
 * next one, from how this one went. */
static void
volsend_frame_end(struct vs_stream *ps)
{
    struct volw_totals t;

    volw_totals(ps->w, &t);
    volsend_adapt(ps->vs, ps->f_in, t.compressed - ps->f_out0, t.compressed);
    log_debug("frame: %llu in, %llu out, %llu/%llu ms busy; level %d",
        (unsigned long long)ps->f_in, (unsigned long long)(t.compressed -
        ps->f_out0), (unsigned long long)((ps->vs->busy - ps->f_busy0) /
        1000000),
        (unsigned long long)((clock_ns() - ps->f_t0) / 1000000),
        ps->vs->level);
    volw_set_level(ps->w, volsend_zstd_level(ps->vs));
    volsend_frame_begin(ps);
}

/* The volume writer's sink: its bytes and records become frames. */
static int
volsend_sink_open(void *ctx, uint32_t index)
{
    struct vs_stream *ps = ctx;
    struct msg_vol_begin m;

    (void)index;
    /* Numbers only tell a stream's volumes apart; 0 is never one. */
    if (++ps->vs->next_vol == 0)
        ps->vs->next_vol = 1;
    ps->vol = ps->vs->next_vol;
    ps->nfiles = 0;
    ps->nbytes = 0;
    volsend_frame_begin(ps);
    m.volume = ps->vol;
    return msg_vol_begin_encode(ps->out, &m);
}

/* The members these bytes hold were announced already (volw_add_mem
 * records a member before its bytes): they become VOL_DATA as they come,
 * of at most a block each. */
static int
volsend_sink_write(void *ctx, const void *p, size_t n)
{
    struct vs_stream *ps = ctx;
    struct msg_vol_data m;
    size_t off;
    int r;

    for (off = 0; off < n; off += m.len) {
        m.volume = ps->vol;
        m.data = (const uint8_t *)p + off;
        m.len = n - off < PROTO_MAX_BLOCK ? n - off : PROTO_MAX_BLOCK;
        if ((r = msg_vol_data_encode(ps->out, &m)) != 0)
            return r;
    }
    return 0;
}

static int
volsend_sink_close(void *ctx, const struct volw_volume *v)
{
    struct vs_stream *ps = ctx;
    struct msg_vol_end m;

    m.volume = ps->vol;
    m.bytes = v->bytes;
    m.files = ps->nfiles;
    log_debug("volume %u: %u files, %llu bytes (%llu raw)", ps->vol,
        ps->nfiles, (unsigned long long)v->bytes,
        (unsigned long long)v->raw);
    xfer_volume(ps->vs->x, ps->vol, "sent", ps->nfiles, ps->nbytes,
        v->bytes);
    /* The volume's last frame ended with it. */
    volsend_frame_end(ps);
    ps->vol = 0;
    return msg_vol_end_encode(ps->out, &m);
}

/* A member's record comes before its bytes: its VOL_FILE goes out before
 * the data that holds its header (the receiver checks each member
 * against it). */
static int
volsend_sink_record(void *ctx, const struct vman_rec *rec)
{
    struct vs_stream *ps = ctx;
    struct msg_vol_file m;
    int r;

    if (rec->type != VMAN_FILE)
        return 0;
    m.volume = ps->vol;
    m.id = ps->cur_id;
    m.hash = rec->hash;
    if ((r = msg_vol_file_encode(ps->out, &m)) != 0)
        return r;
    ps->nfiles++;
    ps->nbytes += rec->size;
    return 0;
}

/* Reads the file whole into vs->fbuf: 0, or why it cannot be sent as
 * scanned (FERRY_ERR_CHANGED when it changed: a byte more than its size
 * can be read, or its size or mtime moved while it was read). */
static int
volsend_read(struct volsend *vs, uint32_t id)
{
    const struct mentry *e = manifest_entry(plan_manifest(vs->p), id);
    struct stat st;
    size_t got = 0;
    ssize_t k;
    int fd, r = 0;

    if ((fd = plan_open_source(vs->p, id, &st)) < 0)
        return fd;
    while (r == 0 && got <= e->size) {
        k = read(fd, vs->fbuf + got, (size_t)e->size + 1 - got);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k < 0)
            r = -errno;
        else if (k == 0)
            break;
        else
            got += (size_t)k;
    }
    if (r == 0 && (got != e->size || fstat(fd, &st) != 0 ||
        !plan_same_file(e, &st)))
        r = FERRY_ERR_CHANGED;
    close(fd);
    return r;
}

/* A file that cannot be packed fails alone: FILE_END with its code, as
 * for a file sent in blocks that changed. */
static int
volsend_give_up(struct volsend *vs, unsigned stream, uint32_t id, int code,
    struct buf *out)
{
    const char *text = ferry_strerror(code);
    struct msg_file_end m;

    plan_file_abort(vs->p, id, code);
    plan_file_ended(vs->p, id, stream);
    memset(&m, 0, sizeof(m));
    m.id = id;
    m.code = proto_err_to_wire(code);
    m.text.p = text;
    m.text.len = strlen(text);
    return msg_file_end_encode(out, &m);
}

/* Files packed on the stream, kept until they are done (a lost stream
 * gives them back); those done are dropped now and then. */
static int
volsend_remember(struct volsend *vs, struct vs_stream *ps, uint32_t id)
{
    uint32_t *nv;
    size_t i, k = 0;

    if (ps->nids >= 2 * PLAN_WINDOW) {
        for (i = 0; i < ps->nids; i++)
            if (plan_file_active(vs->p, ps->ids[i]))
                ps->ids[k++] = ps->ids[i];
        ps->nids = k;
    }
    if (ps->nids == ps->ids_cap) {
        if ((nv = xgrow(ps->ids, ps->nids, &ps->ids_cap, sizeof(*nv),
            256)) == NULL)
            return FERRY_ERR_NOMEM;
        ps->ids = nv;
    }
    ps->ids[ps->nids++] = id;
    return 0;
}

/* Before a set of volumes begins, with auto: a sample of its first file
 * (in vs->fbuf) that does not shrink by 3% at zstd's level 1 starts it
 * at the fastest level, so incompressible data does not wait for a
 * whole volume to be found out. */
#define VS_PROBE_MAX (128u << 10)
#define VS_PROBE_MIN 512u

static void
volsend_probe(struct volsend *vs, uint64_t size)
{
    size_t n = size < VS_PROBE_MAX ? (size_t)size : VS_PROBE_MAX, out;

    if (vs->o.compress != VOL_COMPRESS_AUTO || n < VS_PROBE_MIN ||
        vs->o.short_link)
        return;
    if (vs->probe == NULL && ((vs->probe = zst_new()) == NULL ||
        (vs->probe_out = xmalloc(VS_PROBE_MAX)) == NULL))
        return;
    if (zst_compress(vs->probe, ZST_LEVEL, vs->probe_out, n - n / 32,
        vs->fbuf, n, &out) != 0)
        vs->level = VOLSEND_MIN_LEVEL;
    else if (vs->level == VOLSEND_MIN_LEVEL)
        vs->level = VOLSEND_START_LEVEL;
}

/*
 * What compression has saved so far, counted as the set's files go in
 * (file bytes less the compressed bytes out, which lag them by at most a
 * zstd block), not once a volume ends: the streams' growth judges how
 * much of what is left will cross by it (xfer_wire_left), within the
 * first volume.
 */
static void
volsend_count_saved(struct vs_stream *ps)
{
    struct volw_totals t;
    uint64_t saved;

    volw_totals(ps->w, &t);
    saved = t.bytes > t.compressed ? t.bytes - t.compressed : 0;
    if (saved > ps->saved)
        xfer_add(&ps->vs->x->st.bytes_compressed, saved - ps->saved);
    else
        xfer_sub(&ps->vs->x->st.bytes_compressed, ps->saved - saved);
    ps->saved = saved;
}

static int
volsend_begin_set(struct volsend *vs, struct vs_stream *ps, uint64_t size)
{
    struct volw_sink sink = { volsend_sink_open, volsend_sink_write,
        volsend_sink_close,
        volsend_sink_record, ps };
    struct volw_opts o;

    memset(&o, 0, sizeof(o));
    o.name = "ferry";
    o.volume_size = vs->o.volume_size;
    o.block_size = plan_block_size(vs->p);
    volsend_probe(vs, size);
    o.level = volsend_zstd_level(vs);
    if (ps->enc == NULL && (ps->enc = zst_enc_new()) == NULL)
        return FERRY_ERR_NOMEM;
    o.enc = ps->enc;
    ps->first_ns = clock_ns();
    ps->saved = 0;
    return volw_new(&o, &sink, &ps->w);
}

static int
volsend_end_set(struct volsend *vs, struct vs_stream *ps, struct buf *out)
{
    int r;

    (void)vs;
    ps->out = out;
    if ((r = volw_finish(ps->w)) != 0)
        return r;
    volsend_count_saved(ps);
    volw_free(ps->w);
    ps->w = NULL;
    return 0;
}

static int
volsend_pack(struct volsend *vs, unsigned stream, uint32_t id, struct buf *out)
{
    struct vs_stream *ps = &vs->st[stream];
    const struct mentry *e = manifest_entry(plan_manifest(vs->p), id);
    struct volw_entry ve;
    char rel[MANIFEST_REL_MAX];
    uint64_t t0 = clock_ns();
    int r;

    if ((r = volsend_read(vs, id)) != 0)
        return volsend_give_up(vs, stream, id, r, out);
    ps->out = out;
    if (ps->w == NULL && (r = volsend_begin_set(vs, ps, e->size)) != 0)
        return r;
    memset(&ve, 0, sizeof(ve));
    ve.type = TAR_FILE;
    ve.path = manifest_rel(plan_manifest(vs->p), id, rel);
    ve.size = e->size;
    ve.mode = e->mode;
    ve.mtime_sec = e->mtime_sec;
    ve.mtime_nsec = e->mtime_nsec;
    ps->cur_id = id;
    r = volw_add_mem(ps->w, &ve, vs->fbuf);
    vs->busy += clock_ns() - t0;
    ps->f_in += e->size;
    /* A name tar cannot hold: nothing of it was written. */
    if (r == FERRY_ERR_BAD_PATH || r == FERRY_ERR_USAGE)
        return volsend_give_up(vs, stream, id, r, out);
    if (r != 0)
        return r;
    xfer_add(&vs->x->st.bytes_moved, e->size);
    plan_file_packed(vs->p, id);
    volsend_count_saved(ps);
    /* A volume's worth of bytes or files: the next file begins a volume;
     * else a frame's worth, to judge the level by: the next file begins a
     * frame. */
    if (ps->nbytes >= VOLSEND_ADAPT_BYTES || ps->nfiles >= vs->o.max_files) {
        if ((r = volw_cut(ps->w)) != 0)
            return r;
    } else if (ps->f_in >= VOLSEND_FRAME_BYTES) {
        if ((r = volw_end_frame(ps->w)) != 0)
            return r;
        volsend_frame_end(ps);
    }
    return volsend_remember(vs, ps, id);
}

/*
 * The files next in the queue, up to VOLSEND_READ_AHEAD bytes, are asked
 * of the disk (POSIX_FADV_WILLNEED) before their turn: the kernel reads
 * them while the ones before are compressed. Read whole only on its
 * turn, a file kept the packer waiting for the disk: a cold text tree
 * read at about 190 MB/s here, beside zstd's 235 MB/s. A file that
 * cannot be opened now is found out on its turn.
 */
static void
volsend_read_ahead(struct volsend *vs)
{
    const struct manifest *m = plan_manifest(vs->p);
    uint32_t id;
    int fd;

    while (vs->qahead < vs->qlen && (vs->qahead == 0 ||
        vs->ahead_bytes < VOLSEND_READ_AHEAD)) {
        id = vs->q[(vs->qhead + vs->qahead) % vs->qcap];
        if ((fd = manifest_open(m, id, FSX_O_READ)) >= 0) {
#ifdef POSIX_FADV_WILLNEED
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
#endif
            close(fd);
        }
        vs->ahead_bytes += manifest_entry(m, id)->size;
        vs->qahead++;
    }
}

/* 1 while a live scan may still bring files for the open volume
 * (VOLSEND_LINGER_NS). */
static int
volsend_lingers(struct volsend *vs, const struct vs_stream *ps)
{
    uint64_t now;

    if (plan_scanning(vs->p) != 1)
        return 0;
    now = clock_ns();
    return now - ps->fed_ns < VOLSEND_LINGER_NS &&
        now - ps->first_ns < VOLSEND_LINGER_MAX_NS;
}

unsigned
volsend_linger_ms(const struct volsend *vs, unsigned stream)
{
    const struct vs_stream *ps;
    uint64_t now, end;

    if (!volsend_open(vs, stream))
        return 0;
    ps = &vs->st[stream];
    end = ps->fed_ns + VOLSEND_LINGER_NS;
    if (ps->first_ns + VOLSEND_LINGER_MAX_NS < end)
        end = ps->first_ns + VOLSEND_LINGER_MAX_NS;
    if ((now = clock_ns()) >= end)
        return 0;
    return (unsigned)((end - now + 999999) / 1000000);
}

int
volsend_work(struct volsend *vs, unsigned stream, int take,
    struct buf *out, int *busy)
{
    struct vs_stream *ps;
    uint32_t id;
    int r;

    *busy = 0;
    if (vs == NULL || stream >= PROTO_MAX_STREAMS)
        return 0;
    ps = &vs->st[stream];
    while (take && vs->qlen > 0 && buf_used(out) < CONN_STEP_BUDGET) {
        volsend_read_ahead(vs);
        id = vs->q[vs->qhead];
        vs->qhead = (vs->qhead + 1) % vs->qcap;
        vs->qlen--;
        vs->qahead--;
        vs->ahead_bytes -= manifest_entry(plan_manifest(vs->p), id)->size;
        if ((r = volsend_pack(vs, stream, id, out)) != 0)
            return r;
        *busy = 1;
    }
    if (*busy)
        ps->fed_ns = clock_ns();
    /* Nothing more can join the volume soon: the receiver gets its end,
     * commits its files and answers, which opens the window again. */
    if (ps->w != NULL && (!take || (vs->qlen == 0 &&
        !plan_next_offer(vs->p, &id) && !volsend_lingers(vs, ps))))
        return volsend_end_set(vs, ps, out);
    return 0;
}

void
volsend_stream_lost(struct volsend *vs, unsigned stream)
{
    struct vs_stream *ps;
    size_t i;

    if (vs == NULL || stream >= PROTO_MAX_STREAMS)
        return;
    ps = &vs->st[stream];
    volsend_stream_reset(ps);
    for (i = 0; i < ps->nids; i++)
        plan_file_unpack(vs->p, ps->ids[i]);
    ps->nids = 0;
}

void
volsend_restart(struct volsend *vs)
{
    size_t i;

    if (vs == NULL)
        return;
    for (i = 0; i < PROTO_MAX_STREAMS; i++) {
        volsend_stream_reset(&vs->st[i]);
        vs->st[i].nids = 0;
    }
    vs->qhead = vs->qlen = vs->qahead = 0;
    vs->ahead_bytes = 0;
}
