#include "session.h"
#include "session_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "../common/version.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "../proto/msg_filter.h"
#include "../proto/msg_space.h"
#include "volume/volkeep.h"
#include "listing.h"
#include "manifest.h"
#include "probe.h"
#include "side.h"
#include "volume/volsend.h"

#define SESSION_CAPS (PROTO_CAP_SPARSE | PROTO_CAP_RESUME | PROTO_CAP_ZSTD | \
    PROTO_CAP_STREAMS | PROTO_CAP_FILTERS | PROTO_CAP_DELTA | \
    PROTO_CAP_DELTA_BLOCKS | PROTO_CAP_DELTA_STOP | PROTO_CAP_DELTA_GO | \
    PROTO_CAP_VOLUMES | PROTO_CAP_RETIRE | PROTO_CAP_READBACK | \
    PROTO_CAP_PROBE | PROTO_CAP_KEEP | PROTO_CAP_LIVE | PROTO_CAP_STOP | \
    PROTO_CAP_BUSY | PROTO_CAP_SPACE | PROTO_CAP_IGNORE | PROTO_CAP_TENSORS | \
    PROTO_CAP_SINGLE_EARLY | PROTO_CAP_ADOPT | PROTO_CAP_ADOPT_KEEP)

struct session *
session_client_new(const struct session_open *o, conn_step_fn *role_step,
    void *role, struct xfer *x)
{
    struct session *s = xcalloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->state = S_CLIENT_START;
    s->x = x;
    s->open = *o;
    s->stream = o->stream;
    s->role_step = role_step;
    s->role = role;
    return s;
}

struct session *
session_agent_new(struct xfer *x, const struct session_policy *pol)
{
    struct session *s = xcalloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->state = S_AGENT_WAIT_HELLO;
    s->x = x;
    s->pol = pol;
    return s;
}

struct session *
session_agent_join(struct session *first)
{
    struct session *s;

    if (first->shared == NULL)
        return NULL;
    if ((s = session_agent_new(first->x, first->pol)) == NULL)
        return NULL;
    s->shared = first->shared;
    return s;
}

/* Stops and waits for the scan sc, then frees it (after the plan, which
 * borrows its manifest). */
static void session_scan_end(struct session_scan *sc);

static void session_scan_stop(struct session_scan *sc);

void
session_free(struct session *s)
{
    if (s == NULL)
        return;
    /* A live scan reads the filter: it ends first. */
    if (s->owns_shared && s->shared->scan != NULL)
        session_scan_stop(s->shared->scan);
    /* A joined stream's role goes with it; stream 0's, with the side. */
    if (s->has_role && !s->owns_shared)
        side_stream_end(s->shared->side, s->stream);
    listing_free(s->own_listing);
    probe_answer_free(s->own_probe);
    volkeep_free(s->own_keep);
    if (s->filter != NULL) {
        filter_cleanup(s->filter);
        xfree(s->filter);
    }
    if (s->owns_shared) {
        side_free(s->shared->side);
        session_scan_end(s->shared->scan);
        explicit_bzero(s->shared->transfer_key,
            sizeof(s->shared->transfer_key));
        xfree(s->shared);
    }
    xfree(s);
}

const char *
session_peer_software(const struct session *s)
{
    return s->peer_software;
}

uint64_t
session_peer_caps(const struct session *s)
{
    return s->peer_caps;
}

const uint8_t *
session_transfer_id(const struct session *s)
{
    return s->shared != NULL ? s->shared->transfer_id : s->open.transfer_id;
}

const uint8_t *
session_transfer_key(const struct session *s)
{
    return s->shared != NULL ? s->shared->transfer_key :
        s->open.transfer_key;
}

int
session_running(const struct session *s)
{
    return s->state == S_RUN;
}

struct side *
session_side(const struct session *s)
{
    return s->has_role ? s->shared->side : NULL;
}

unsigned
session_stream(const struct session *s)
{
    return s->stream;
}

static int
session_send_hello(const struct session *s, struct buf *out)
{
    int restricted = s->pol != NULL && s->pol->restricted;
    struct msg_hello h;

    memset(&h, 0, sizeof(h));
    h.version_min = PROTO_VERSION_MIN;
    h.version_max = PROTO_VERSION_MAX;
    h.caps = SESSION_CAPS | (restricted ? PROTO_CAP_RESTRICTED : 0);
    /* A pull whose client checks space needs the agent's total before
     * any data: it takes no live plan. */
    if (s->pol == NULL && s->open.op == OPEN_PULL && s->open.space != NULL)
        h.caps &= ~(uint64_t)PROTO_CAP_LIVE;
    h.software.p = restricted ? "ferry " FERRY_VERSION " (restricted)" :
        "ferry " FERRY_VERSION;
    h.software.len = strlen(h.software.p);
    return msg_hello_encode(out, &h);
}

static int
session_send_error(struct session *s, struct buf *out, int code,
    const char *text)
{
    struct msg_error e;

    if (s->error_sent)
        return 0;
    s->error_sent = 1;
    e.code = proto_err_to_wire(code);
    e.text.p = text;
    e.text.len = strlen(text);
    return msg_error_encode(out, &e);
}

/* Checks the peer's HELLO: the version ranges must overlap. */
static int
session_on_hello(struct session *s, const struct frame *f)
{
    struct msg_hello h;
    int r;

    if ((r = msg_hello_decode(f->payload, f->len, &h)) != 0)
        return r;
    snprintf(s->peer_software, sizeof(s->peer_software), "%.*s",
        (int)h.software.len, h.software.p);
    s->peer_caps = h.caps;
    s->x->caps = h.caps & SESSION_CAPS;
    if (h.version_max < PROTO_VERSION_MIN ||
        h.version_min > PROTO_VERSION_MAX)
        return xfer_fail(s->x, FERRY_ERR_VERSION,
            "peer (%s) speaks protocol %u-%u, this is ferry %s with %u-%u",
            s->peer_software, h.version_min, h.version_max, FERRY_VERSION,
            PROTO_VERSION_MIN, PROTO_VERSION_MAX);
    return 0;
}

/* A path of OPEN, through the program's policy. */
int
session_resolve(struct session *s, uint8_t op, const struct msg_str *p,
    char **out)
{
    char msg[PROTO_MAX_MESSAGE];
    int r;

    msg[0] = '\0';
    if ((r = s->pol->resolve(s->pol->ctx, op, p->p, p->len, out, msg,
        sizeof(msg))) != 0) {
        if (msg[0] == '\0')
            snprintf(msg, sizeof(msg), "%.*s: %s", (int)p->len, p->p,
                ferry_strerror(r));
        return xfer_fail(s->x, r, "%s", msg);
    }
    return 0;
}

/* STATUS and CLEAN: the unfinished files under a destination, listed
 * (and removed) right away. */
static int
session_agent_state(struct session *s, const struct msg_open *o,
    struct buf *out)
{
    struct partial_info *v = NULL;
    struct msg_space sp;
    struct msg_open_ok ok;
    struct msg_partial mp;
    struct msg_str p;
    size_t pos = 0, n = 0, i;
    char *dest;
    int r;

    if ((r = msg_open_path(o, &pos, &p)) != 0 ||
        (r = session_resolve(s, o->op, &p, &dest)) != 0)
        return r;
    r = dest_state_list(dest, o->op == OPEN_CLEAN, &v, &n);
    if (r != 0) {
        r = xfer_fail(s->x, r, "%s: %s", dest, dest_state_strerror(r));
        xfree(dest);
        return r;
    }
    memset(&sp, 0, sizeof(sp));
    session_fs_space(dest, &sp);
    if (o->op == OPEN_STATUS)
        session_note_busy(s, dest);
    xfree(dest);
    memset(&ok, 0, sizeof(ok));
    r = msg_open_ok_encode(out, &ok);
    /* ferry status also says how much room is left there, and whether a
     * transfer runs there now. */
    if (r == 0 && (s->peer_caps & PROTO_CAP_SPACE))
        r = msg_space_encode(out, &sp);
    if (r == 0)
        r = session_send_busy(s, out);
    for (i = 0; r == 0 && i < n; i++) {
        mp.path.p = v[i].path;
        mp.path.len = strlen(v[i].path);
        mp.size = v[i].size;
        mp.done = v[i].done;
        mp.age_s = v[i].age_s < 0 ? 0 : v[i].age_s;
        r = msg_partial_encode(out, &mp);
    }
    if (r == 0)
        r = msg_end_encode(out);
    partial_list_free(v, n);
    s->state = S_DONE;
    /* Then the client's probe, if it knows of it. */
    if (r == 0 && o->op == OPEN_STATUS && (s->x->caps & PROTO_CAP_PROBE)) {
        if ((s->own_probe = probe_answer_new()) == NULL)
            return FERRY_ERR_NOMEM;
        s->role_step = probe_answer_step;
        s->role = s->own_probe;
        s->state = S_RUN;
    }
    return r;
}

/* --basis FILE and --adopt DIR of a push: the OPEN's next path,
 * relative to the destination (the destination refuses anything else). */
static int
session_dest_rel(struct session *s, const struct msg_open *o, size_t *pos,
    struct dest *d, int adopt)
{
    char name[PROTO_MAX_PATH + 1];
    struct msg_str p;
    int r;

    /* The decoder made sure that OPEN has this path. */
    if ((r = msg_open_path(o, pos, &p)) != 0)
        return r;
    memcpy(name, p.p, p.len);
    name[p.len] = '\0';
    if ((r = adopt ? dest_set_adopt(d, name) : dest_set_basis(d, name)) != 0)
        return xfer_fail(s->x, r, "%s %s: %s", adopt ? "--adopt" :
            "--basis", name, r == FERRY_ERR_BAD_PATH ? "not a path beneath "
            "the destination" : ferry_strerror(r));
    return 0;
}

struct session_scan {
    struct manifest mf;
    struct session_paths paths;
    pthread_t thread;
    atomic_int stop;
    int running;
};

static void *
session_scan_run(void *arg)
{
    struct session_scan *sc = arg;

    manifest_live_end(&sc->mf, session_scan_paths(&sc->mf, &sc->paths));
    return NULL;
}

/* Starts the scan of a pull's sources, l (taken), on a thread of its own
 * into a live manifest (manifest.h), and makes the sending side on it
 * (packing as vo says): the client said with PROTO_CAP_LIVE that it needs
 * no totals first. */
static int
session_scan_live(struct session *s, struct session_paths *l,
    const struct volsend_opts *vo)
{
    struct session_shared *sh = s->shared;
    struct session_scan *sc = xcalloc(1, sizeof(*sc));

    if (sc == NULL)
        return FERRY_ERR_NOMEM;
    sh->scan = sc;
    manifest_init(&sc->mf);
    session_set_filter(s, &sc->mf);
    manifest_set_stop(&sc->mf, &sc->stop);
    sc->paths = *l;
    memset(l, 0, sizeof(*l));
    manifest_live_begin(&sc->mf);
    if ((sh->side = side_new_send(&sc->mf, 1, sh->block_size, sh->flags, vo,
        s->x)) == NULL)
        return FERRY_ERR_NOMEM;
    if (pthread_create(&sc->thread, NULL, session_scan_run, sc) != 0) {
        /* No thread: scan here, and offer when done. */
        session_scan_run(sc);
        return 0;
    }
    sc->running = 1;
    log_debug("scan: sending as it goes on");
    return 0;
}

static void
session_scan_stop(struct session_scan *sc)
{
    if (sc->running) {
        atomic_store(&sc->stop, 1);
        pthread_join(sc->thread, NULL);
        sc->running = 0;
    }
}

static void
session_scan_end(struct session_scan *sc)
{
    if (sc == NULL)
        return;
    session_scan_stop(sc);
    manifest_cleanup(&sc->mf);
    session_paths_free(&sc->paths);
    xfree(sc);
}

/* The agent's end of a transfer it opened, and stream 0's role. */
static int
session_agent_transfer(struct session *s, const struct msg_open *o)
{
    /* Packs nothing until the client's VOL_OPTS says how. */
    static const struct volsend_opts no_packing;
    struct session_shared *sh;
    struct session_paths paths;
    struct manifest mf;
    struct msg_str p;
    size_t pos = 0;
    char *path;
    int r, rc;

    if ((sh = xcalloc(1, sizeof(*sh))) == NULL)
        return FERRY_ERR_NOMEM;
    s->shared = sh;
    s->owns_shared = 1;
    memcpy(sh->transfer_id, o->transfer_id, sizeof(sh->transfer_id));
    memcpy(sh->transfer_key, o->transfer_key, sizeof(sh->transfer_key));
    sh->flags = o->flags;
    sh->block_size = o->block_size;
    sh->streams_used = 1;
    if (o->op == OPEN_PUSH) {
        if ((r = msg_open_path(o, &pos, &p)) != 0 ||
            (r = session_resolve(s, o->op, &p, &path)) != 0)
            return r;
        session_fs_space(path, &s->space);
        session_note_busy(s, path);
        sh->side = side_new_recv(path, o->flags, o->transfer_id,
            o->block_size, s->x);
        xfree(path);
        if (sh->side == NULL)
            return FERRY_ERR_NOMEM;
        if ((o->flags & OPEN_F_BASIS_FILE) && (r = session_dest_rel(s, o,
            &pos, side_dest(sh->side), 0)) != 0)
            return r;
        if ((o->flags & OPEN_F_ADOPT) && (r = session_dest_rel(s, o, &pos,
            side_dest(sh->side), 1)) != 0)
            return r;
        incoming_set_keptsig(side_incoming(sh->side), s->pol->kept);
    } else {
        manifest_init(&mf);
        session_set_filter(s, &mf);
        memset(&paths, 0, sizeof(paths));
        while ((r = msg_open_path(o, &pos, &p)) == 0)
            if ((r = session_source_paths(s, o->op, &p, &paths)) != 0)
                break;
        /* The paths are all in (SHORT): none two may land on one name. */
        if (r == FERRY_ERR_SHORT && (rc = session_top_clash(s, &paths)) != 0)
            r = rc;
        if (r == FERRY_ERR_SHORT && (s->peer_caps & PROTO_CAP_LIVE)) {
            r = session_scan_live(s, &paths, &no_packing);
        } else if (r == FERRY_ERR_SHORT &&
            (r = session_scan_paths(&mf, &paths)) == 0) {
            s->space.offered = mf.bytes;
            if ((sh->side = side_new_send(&mf, 0, o->block_size, o->flags,
                &no_packing, s->x)) == NULL)
                r = FERRY_ERR_NOMEM;
        }
        manifest_cleanup(&mf);
        session_paths_free(&paths);
        if (r != 0)
            return r;
    }
    if ((r = side_stream(sh->side, 0, &s->role_step, &s->role)) != 0)
        return r;
    s->has_role = 1;
    return 0;
}

static int
session_agent_open(struct session *s, const struct frame *f,
    struct buf *out)
{
    struct msg_open o;
    struct msg_open_ok ok;
    int r;

    if ((r = msg_open_decode(f->payload, f->len, &o)) != 0)
        return r;
    if (o.op == OPEN_STATUS || o.op == OPEN_CLEAN)
        return session_agent_state(s, &o, out);
    if (o.op == OPEN_LIST)
        return session_agent_list(s, &o, out);
    if (o.op == OPEN_DELETE)
        return session_agent_delete(s, &o, out);
    if (o.op == OPEN_KEEP)
        return session_agent_keep(s, &o, out);
    if ((r = session_agent_transfer(s, &o)) != 0)
        return r;
    if (s->pol->opened != NULL && (r = s->pol->opened(s->pol->ctx, s)) != 0)
        return r;
    memset(&ok, 0, sizeof(ok));
    s->state = S_RUN;
    if ((r = msg_open_ok_encode(out, &ok)) != 0)
        return r;
    /* A push into a destination another transfer holds waits for it (its
     * receiver, for the lock): the client hears why now, before SPACE,
     * since the wait blocks a step. */
    if ((r = session_send_busy(s, out)) != 0)
        return r;
    /* A client that knows SPACE checks its free space with it. */
    return (s->peer_caps & PROTO_CAP_SPACE) ?
        msg_space_encode(out, &s->space) : 0;
}

/* A further stream of the transfer this process runs. */
static int
session_agent_on_join(struct session *s, const struct frame *f,
    struct buf *out)
{
    struct session_shared *sh = s->shared;
    struct msg_join j;
    int r;

    if ((r = msg_join_decode(f->payload, f->len, &j)) != 0)
        return r;
    if (sh == NULL || !hash_ct_equal(j.transfer_id, sh->transfer_id,
        sizeof(j.transfer_id)) || !hash_ct_equal(j.transfer_key,
        sh->transfer_key, sizeof(j.transfer_key)) ||
        (sh->streams_used & (1u << j.stream)))
        return xfer_fail(s->x, FERRY_ERR_PROTOCOL,
            "JOIN of a transfer or stream this agent does not run");
    sh->streams_used |= 1u << j.stream;
    s->stream = j.stream;
    if ((r = side_stream(sh->side, j.stream, &s->role_step, &s->role)) != 0)
        return r;
    s->has_role = 1;
    s->state = S_RUN;
    return msg_join_ok_encode(out);
}

static int
session_client_start(struct session *s, struct buf *out)
{
    const struct session_open *o = &s->open;
    struct msg_open m;
    struct msg_join j;
    int r;

    if ((r = session_send_hello(s, out)) != 0)
        return r;
    s->state = S_CLIENT_WAIT_HELLO;
    if (o->stream > 0) {
        memcpy(j.transfer_id, o->transfer_id, sizeof(j.transfer_id));
        memcpy(j.transfer_key, o->transfer_key, sizeof(j.transfer_key));
        j.stream = o->stream;
        return msg_join_encode(out, &j);
    }
    if (o->filter != NULL) {
        const char **pats = NULL;
        uint8_t *acts = NULL;
        size_t i, n = o->filter->n;

        /* Only the rules given to the client travel: the agent reads the
         * sources' ignore files itself. */
        for (i = 0; i < o->filter->n; i++)
            if (o->filter->v[i].scope != NULL)
                n--;
        if (n > 0 && ((pats = xcalloc(n, sizeof(*pats))) == NULL ||
            (acts = xcalloc(n, 1)) == NULL)) {
            xfree(pats);
            return FERRY_ERR_NOMEM;
        }
        for (i = 0, n = 0; i < o->filter->n; i++) {
            if (o->filter->v[i].scope != NULL)
                continue;
            pats[n] = o->filter->v[i].text;
            acts[n++] = o->filter->v[i].action;
        }
        r = msg_filters_encode(out, acts, pats, n);
        xfree(pats);
        xfree(acts);
        if (r != 0)
            return r;
    }
    memset(&m, 0, sizeof(m));
    m.op = o->op;
    m.flags = o->flags;
    m.block_size = o->block_size;
    memcpy(m.transfer_id, o->transfer_id, sizeof(m.transfer_id));
    memcpy(m.transfer_key, o->transfer_key, sizeof(m.transfer_key));
    m.npaths = o->npaths;
    return msg_open_encode(out, &m, o->paths);
}

/* One frame before the role runs. */
static int
session_on_frame(struct session *s, const struct frame *f, struct buf *out)
{
    int r;

    switch (s->state) {
    case S_CLIENT_WAIT_HELLO:
        if (f->type != MSG_HELLO)
            return FERRY_ERR_PROTOCOL;
        if ((r = session_on_hello(s, f)) != 0)
            return r;
        /* An agent without filters would send what they leave out: one
         * of ours replaces it (a version error leads to the upload). */
        if (s->open.filter != NULL && s->open.stream == 0 &&
            !(s->peer_caps & PROTO_CAP_FILTERS))
            return xfer_fail(s->x, FERRY_ERR_VERSION, "the agent (%s) "
                "cannot filter what it sends", s->peer_software);
        /* One that knows no ADOPT would refuse the OPEN as malformed:
         * say what it lacks instead (and have ours uploaded, where one
         * may be). */
        if (((s->open.flags & OPEN_F_ADOPT) &&
            !(s->peer_caps & PROTO_CAP_ADOPT)) ||
            ((s->open.flags & OPEN_F_ADOPT_KEEP) &&
            !(s->peer_caps & PROTO_CAP_ADOPT_KEEP)))
            return xfer_fail(s->x, FERRY_ERR_VERSION, "the agent (%s) "
                "cannot take staged files (--adopt)", s->peer_software);
        s->state = S_CLIENT_WAIT_OPEN_OK;
        return 0;
    case S_CLIENT_WAIT_OPEN_OK:
        if (s->open.stream > 0) {
            if (f->type != MSG_JOIN_OK)
                return FERRY_ERR_PROTOCOL;
            if ((r = msg_join_ok_decode(f->payload, f->len)) != 0)
                return r;
        } else {
            struct msg_open_ok ok;

            if (f->type != MSG_OPEN_OK)
                return FERRY_ERR_PROTOCOL;
            if ((r = msg_open_ok_decode(f->payload, f->len, &ok)) != 0)
                return r;
            if ((s->open.op == OPEN_PUSH || s->open.op == OPEN_PULL) &&
                (s->peer_caps & PROTO_CAP_SPACE)) {
                s->state = S_CLIENT_WAIT_SPACE;
                return 0;
            }
        }
        s->state = S_RUN;
        return 0;
    case S_CLIENT_WAIT_SPACE: {
        struct msg_space sp;
        struct msg_busy b;
        char holder[PROTO_MAX_HOLDER + 1];

        if (f->type == MSG_BUSY && (s->x->caps & PROTO_CAP_BUSY) &&
            !s->busy) {
            if ((r = msg_busy_decode(f->payload, f->len, &b)) != 0)
                return r;
            s->busy = 1;
            snprintf(holder, sizeof(holder), "%.*s", (int)b.holder.len,
                b.holder.p);
            if (s->open.busy != NULL)
                s->open.busy(s->open.busy_ctx, holder);
            return 0;
        }
        if (f->type != MSG_SPACE)
            return FERRY_ERR_PROTOCOL;
        if ((r = msg_space_decode(f->payload, f->len, &sp)) != 0)
            return r;
        if (s->open.space != NULL && (r = s->open.space(s->open.space_ctx,
            sp.avail, sp.size, sp.offered)) != 0)
            return r;
        s->state = S_RUN;
        return 0;
    }
    case S_AGENT_WAIT_HELLO:
        if (f->type != MSG_HELLO)
            return FERRY_ERR_PROTOCOL;
        r = session_on_hello(s, f);
        /* Answer with our range even when they do not overlap, so the
         * client can say which versions each side speaks. */
        if (session_send_hello(s, out) != 0 && r == 0)
            r = FERRY_ERR_NOMEM;
        if (r != 0)
            return r;
        s->state = S_AGENT_WAIT_OPEN;
        return 0;
    case S_AGENT_WAIT_OPEN:
        /* A process that opened nothing takes OPEN; one handed a stream
         * of its transfer takes JOIN. */
        if (f->type == MSG_OPEN && s->shared == NULL)
            return session_agent_open(s, f, out);
        if (f->type == MSG_FILTERS && s->shared == NULL)
            return session_agent_filters(s, f);
        if (f->type == MSG_JOIN && s->shared != NULL)
            return session_agent_on_join(s, f, out);
        break;
    default:
        break;  /* the other states do not come here */
    }
    return FERRY_ERR_PROTOCOL;
}

/* Handles frames before the role runs; returns how many input bytes it
 * used in *used. Stops at the first frame meant for the role. */
static int
session_handshake(struct session *s, struct conn_step *st, size_t *used)
{
    struct frame f;
    size_t off = 0;
    int r = 0;

    if (s->state == S_CLIENT_START &&
        (r = session_client_start(s, st->out)) != 0)
        return r;
    while (s->state != S_RUN && s->state != S_DONE &&
        (r = conn_step_frame(st, &off, &f)) > 0) {
        if (f.type == MSG_ERROR) {
            *used = off;
            return xfer_peer_error(s->x, f.payload, f.len);
        }
        if ((r = session_on_frame(s, &f, st->out)) != 0)
            return r;
    }
    *used = off;
    return r < 0 ? r : 0;
}

int
session_step(void *sess, struct conn_step *st)
{
    struct session *s = sess;
    struct conn_step rst;
    size_t used = 0;
    int r;

    r = session_handshake(s, st, &used);
    if (r == 0 && s->state == S_DONE) {
        st->done = 1;
    } else if (r == 0 && s->state == S_RUN) {
        rst = *st;
        rst.in = st->in + used;
        rst.in_len = st->in_len - used;
        r = s->role_step(s->role, &rst);
        st->more = rst.more;
        st->done = rst.done;
        st->wake_ms = rst.wake_ms;
        st->wait_wake = rst.wait_wake;
        st->poke = rst.poke;
    } else if (r == 0 && st->eof) {
        r = FERRY_ERR_CLOSED;
    }
    if (r != 0 && r != FERRY_ERR_PEER && r != FERRY_ERR_CLOSED) {
        const char *text = s->x->local_error[0] != '\0' ?
            s->x->local_error : ferry_strerror(r);

        if (s->x->local_error[0] == '\0')
            snprintf(s->x->local_error, sizeof(s->x->local_error), "%s",
                ferry_strerror(r));
        (void)session_send_error(s, st->out, r, text);
    }
    return r;
}
