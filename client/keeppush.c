/*
 * keeppush.c: `ferry push --keep-volumes` (keeppush.h).
 */
#include "keeppush.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uv.h>

#include "../common/alloc.h"
#include "../common/buf.h"
#include "../common/sha256.h"
#include "../engine/volume/volume.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "../proto/msg_keep.h"
#include "../proto/msg_vol.h"
#include "digest.h"
#include "exitcode.h"
#include "output.h"
#include "pack.h"
#include "run.h"

/* Frames the packing thread may have waiting for the link. */
#define KP_QUEUE (4u << 20)
/* The manifest goes in pieces of about this much. */
#define KP_MAN_FLUSH (256u << 10)
/* How long a step waits for the packing thread before it returns. */
#define KP_WAIT_NS (20 * 1000 * 1000L)

enum kp_state { KP_HELD, KP_RUN, KP_END };

struct kp_held {
    uint64_t bytes;
    char sha[65];
};

struct keeppush {
    const struct cli *cli;
    struct xfer *x;          /* the run's (run_op.run_x) */
    struct xfer ox;          /* ours: the walk's lines and the summary */
    struct output out;
    enum kp_state state;     /* the role's */
    /* The agent's volumes: 1..nheld, complete before the thread starts
     * and read-only after. */
    struct kp_held *held;
    uint32_t nheld;
    /* Shared with the packing thread; mu guards q, done, err, stop. */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* q filled or drained, done, stop */
    struct buf q;            /* frames for the agent */
    int done, err, stop;
    pthread_t th;
    int started;
    /* The packing thread's own. */
    struct pack_src src;
    const char *name;
    struct digest_sha256 *vsha;
    uint32_t vindex;
    int dry;                 /* this volume is held: hashed, not sent */
    uint32_t redo;           /* held volumes from here on are sent again */
    int redo_now;            /* a held volume differs: pack again */
    uint32_t confirmed;      /* KEEP_VOL sent for held 1..confirmed */
    struct buf mbuf;
    uint64_t moff;
    struct digest_sha256 *msha;
    uint32_t nsent;
    uint64_t bytes_sent;
};

/* Appends a frame to the queue (waiting while it is full), made by enc
 * from m. Packing thread. */
static int
keeppush_put(struct keeppush *k, int (*enc)(struct buf *, const void *),
    const void *m)
{
    int r;

    pthread_mutex_lock(&k->mu);
    while (buf_used(&k->q) >= KP_QUEUE && !k->stop)
        pthread_cond_wait(&k->cv, &k->mu);
    r = k->stop ? FERRY_ERR_INTERRUPTED : enc(&k->q, m);
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    return r;
}

#define KP_ENC(name, type)                                                  \
    static int                                                              \
    kp_enc_##name(struct buf *b, const void *m)                             \
    {                                                                       \
        return msg_##name##_encode(b, (const struct type *)m);              \
    }
KP_ENC(vol_begin, msg_vol_begin)
KP_ENC(vol_data, msg_vol_data)
KP_ENC(keep_vol, msg_keep_vol)
KP_ENC(keep_man, msg_keep_man)
KP_ENC(keep_done, msg_keep_done)
#undef KP_ENC

/* 64 hex digits into 32 bytes. */
static void
kp_unhex(const char *hex, uint8_t *out)
{
    int i;

    for (i = 0; i < PROTO_SHA256_LEN; i++)
        sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

static int
keeppush_vol_open(void *ctx, uint32_t index)
{
    struct keeppush *k = ctx;
    struct msg_vol_begin m = { index };

    k->vindex = index;
    k->dry = index <= k->nheld && index < k->redo;
    if ((k->vsha = digest_sha256_new()) == NULL)
        return FERRY_ERR_NOMEM;
    return k->dry ? 0 : keeppush_put(k, kp_enc_vol_begin, &m);
}

static int
keeppush_vol_write(void *ctx, const void *p, size_t n)
{
    struct keeppush *k = ctx;
    struct msg_vol_data m;
    size_t len;
    int r;

    if ((r = digest_sha256_update(k->vsha, p, n)) != 0)
        return r;
    if (k->dry)
        return k->stop ? FERRY_ERR_INTERRUPTED : 0;
    for (; n > 0; p = (const uint8_t *)p + len, n -= len) {
        len = n < PROTO_MAX_BLOCK ? n : PROTO_MAX_BLOCK;
        m.volume = k->vindex;
        m.data = p;
        m.len = len;
        if ((r = keeppush_put(k, kp_enc_vol_data, &m)) != 0)
            return r;
    }
    return 0;
}

static int
keeppush_vol_close(void *ctx, const struct volw_volume *v)
{
    struct keeppush *k = ctx;
    char sha[65], file[VOLUME_NAME_MAX];
    struct msg_keep_vol m;
    int r;

    r = digest_sha256_final(k->vsha, sha);
    k->vsha = NULL;
    if (r != 0)
        return r;
    memset(&m, 0, sizeof(m));
    m.volume = v->index;
    m.bytes = v->bytes;
    kp_unhex(sha, m.sha256);
    if (k->dry && (v->bytes != k->held[v->index].bytes ||
        strcmp(sha, k->held[v->index].sha) != 0)) {
        /* Not the volume held there: the sources changed since it was
         * made. Packed again, it is sent from here on; once a held
         * volume was confirmed, the set there is this run's. */
        k->src.sink_err = 1;
        if (v->index <= k->confirmed)
            return FERRY_ERR_CHANGED;
        k->redo = v->index;
        k->redo_now = 1;
        return FERRY_ERR_STATE;
    }
    if (k->dry && v->index <= k->confirmed)
        return 0;   /* confirmed by the pass before */
    if ((r = keeppush_put(k, kp_enc_keep_vol, &m)) != 0)
        return r;
    if (k->dry) {
        k->confirmed = v->index;
    } else {
        k->nsent++;
        k->bytes_sent += v->bytes;
    }
    if (volume_file_name(k->name, v->index, file, sizeof(file)) == 0)
        pack_volume_event(&k->out, k->dry ? "kept" : "sent", file,
            v->index, v->bytes, v->members, sha);
    return 0;
}

static int
keeppush_man_flush(struct keeppush *k)
{
    struct msg_keep_man m;
    int r;

    if (buf_used(&k->mbuf) == 0)
        return 0;
    if ((r = digest_sha256_update(k->msha, buf_ptr(&k->mbuf),
        buf_used(&k->mbuf))) != 0)
        return r;
    m.offset = k->moff;
    m.data = buf_ptr(&k->mbuf);
    m.len = buf_used(&k->mbuf);
    if ((r = keeppush_put(k, kp_enc_keep_man, &m)) != 0)
        return r;
    k->moff += m.len;
    buf_reset(&k->mbuf);
    return 0;
}

static int
keeppush_record(void *ctx, const struct vman_rec *rec)
{
    struct keeppush *k = ctx;
    int r;

    if ((r = vman_encode(&k->mbuf, rec)) != 0)
        return r;
    return buf_used(&k->mbuf) >= KP_MAN_FLUSH ? keeppush_man_flush(k) : 0;
}

/* One pass over the sources; a second when a held volume differs. */
static int
keeppush_pack(struct keeppush *k)
{
    struct volw_sink sink = { keeppush_vol_open, keeppush_vol_write,
        keeppush_vol_close,
        keeppush_record, k };
    struct volw_opts vo;
    struct volw_totals t;
    struct msg_keep_done d;
    char msum[65];
    int r;

    memset(&vo, 0, sizeof(vo));
    vo.name = k->name;
    vo.volume_size = k->cli->volume_size;
    if (k->cli->vol_compress == VOL_COMPRESS_LEVEL)
        vo.level = k->cli->vol_level;
    do {
        k->redo_now = 0;
        k->src.sink_err = 0;
        k->moff = 0;
        buf_reset(&k->mbuf);
        digest_sha256_free(k->msha);
        digest_sha256_free(k->vsha);
        k->vsha = NULL;
        if ((k->msha = digest_sha256_new()) == NULL)
            return FERRY_ERR_NOMEM;
        r = pack_src_walk(&k->src, &vo, &sink);
    } while (r != 0 && k->redo_now);
    if (r == 0)
        r = keeppush_man_flush(k);
    if (r != 0)
        return r;
    r = digest_sha256_final(k->msha, msum);
    k->msha = NULL;
    if (r != 0)
        return r;
    volw_totals(k->src.w, &t);
    memset(&d, 0, sizeof(d));
    d.volumes = t.volumes;
    d.manifest_bytes = k->moff;
    kp_unhex(msum, d.sha256);
    return keeppush_put(k, kp_enc_keep_done, &d);
}

static void *
keeppush_thread(void *arg)
{
    struct keeppush *k = arg;
    int r = keeppush_pack(k);

    pthread_mutex_lock(&k->mu);
    k->done = 1;
    k->err = r;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* Frames from the agent: its held volumes and END, then END again once
 * the set is stored. */
static int
keeppush_on_frame(struct keeppush *k, const struct frame *f)
{
    struct msg_keep_vol m;
    void *p;
    int r;

    if (f->type == MSG_ERROR)
        return xfer_peer_error(k->x, f->payload, f->len);
    if (k->state == KP_HELD && f->type == MSG_KEEP_VOL) {
        if ((r = msg_keep_vol_decode(f->payload, f->len, &m)) != 0)
            return r;
        if (m.volume != k->nheld + 1)
            return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "the agent listed "
                "volume %u after %u", m.volume, k->nheld);
        if ((p = xrealloc(k->held, (m.volume + 1) *
            sizeof(*k->held))) == NULL)
            return FERRY_ERR_NOMEM;
        k->held = p;
        k->held[m.volume].bytes = m.bytes;
        sha256_hex(m.sha256, k->held[m.volume].sha);
        k->nheld = m.volume;
        return 0;
    }
    if (f->type == MSG_END && (r = msg_end_decode(f->payload,
        f->len)) != 0)
        return r;
    if (f->type == MSG_END && k->state == KP_HELD) {
        if (pthread_create(&k->th, NULL, keeppush_thread, k) != 0)
            return FERRY_ERR_NOMEM;
        k->started = 1;
        k->state = KP_RUN;
        return 0;
    }
    if (f->type == MSG_END && k->state == KP_END)
        return 1;
    return xfer_fail(k->x, FERRY_ERR_PROTOCOL, "%s from the agent out of "
        "turn", msg_type_name(f->type));
}

static int
keeppush_step(void *role, struct conn_step *st)
{
    struct keeppush *k = role;
    struct timespec ts;
    struct frame f;
    size_t off = 0;
    int r;

    while ((r = conn_step_frame(st, &off, &f)) > 0) {
        if ((r = keeppush_on_frame(k, &f)) == 1) {
            st->done = 1;
            return off == st->in_len ? 0 : FERRY_ERR_PROTOCOL;
        }
        if (r != 0)
            return r;
    }
    if (r < 0)
        return r;
    if (k->state == KP_RUN) {
        pthread_mutex_lock(&k->mu);
        if (buf_used(&k->q) == 0 && !k->done) {
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += KP_WAIT_NS;
            if (ts.tv_nsec >= 1000000000L)
                ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&k->cv, &k->mu, &ts);
        }
        r = buf_put(st->out, buf_ptr(&k->q), buf_used(&k->q));
        buf_reset(&k->q);
        pthread_cond_broadcast(&k->cv);
        if (r == 0 && k->done) {
            if ((r = k->err) != 0 && k->x->local_error[0] == '\0')
                r = xfer_fail(k->x, r, "%s", r == FERRY_ERR_CHANGED ?
                    "the sources changed while they were packed" :
                    ferry_strerror(r));
            k->state = KP_END;
        }
        pthread_mutex_unlock(&k->mu);
        if (r != 0)
            return r;
        st->more = k->state == KP_RUN;
    }
    return st->eof ? FERRY_ERR_CLOSED : 0;
}

int
keeppush_main(const struct cli *cli)
{
    struct keeppush *k;
    struct pack_summary s;
    struct volw_totals t;
    const char *paths[2];
    struct run_op ro;
    char *owned = NULL, where[4200];
    uint64_t t0 = uv_hrtime();
    int code;

    if ((k = xcalloc(1, sizeof(*k))) == NULL)
        return EXIT_SOURCE;
    k->cli = cli;
    k->redo = UINT32_MAX;
    k->out.json = cli->json;
    k->out.quiet = cli->quiet;
    k->out.verbose = cli->verbose;
    output_init(&k->out, &k->ox);
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    buf_init(&k->q, KP_QUEUE + PROTO_FRAME_HEADER + PROTO_MAX_FRAME);
    buf_init(&k->mbuf, 4 * KP_MAN_FLUSH);
    k->src.srcs = cli->local_paths;
    k->src.nsrcs = cli->nlocal;
    k->src.out = &k->out;
    k->src.x = &k->ox;
    k->src.stop = &k->stop;
    if (pack_name_for(cli->set_name, cli->local_paths[0], &k->name,
        &owned) != 0) {
        code = EXIT_USAGE;
        goto out;
    }
    paths[0] = cli->remote.path;
    paths[1] = k->name;
    memset(&ro, 0, sizeof(ro));
    ro.op = OPEN_KEEP;
    ro.flags = cli->mkpath ? OPEN_F_MKPATH : 0;
    ro.paths = paths;
    ro.npaths = 2;
    ro.role_step = keeppush_step;
    ro.role = k;
    ro.run_x = &k->x;
    code = run_command(cli, &ro);
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    if (k->started)
        pthread_join(k->th, NULL);
    if (code != EXIT_OK)
        goto out;   /* the run said why, and its summary */
    if (k->src.source_failed)
        code = EXIT_SOURCE;
    memset(&t, 0, sizeof(t));
    if (k->src.w != NULL)
        volw_totals(k->src.w, &t);
    snprintf(where, sizeof(where), "%s:%s", cli->remote.local ? "local" :
        cli->remote.host, cli->remote.path);
    memset(&s, 0, sizeof(s));
    s.verb = "stored";
    s.exit_code = code;
    s.volumes = t.volumes;
    s.files = t.files;
    s.bytes = t.bytes;
    s.compressed = t.compressed;
    s.elapsed = (double)(uv_hrtime() - t0) / 1e9;
    s.where = where;
    s.sent = k->nsent;
    s.kept = k->confirmed;
    s.bytes_sent = k->bytes_sent;
    pack_summary(&k->out, &s);
out:
    volw_free(k->src.w);
    digest_sha256_free(k->vsha);
    digest_sha256_free(k->msha);
    buf_cleanup(&k->q);
    buf_cleanup(&k->mbuf);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    xfree(k->held);
    xfree(owned);
    xfree(k);
    return code;
}
