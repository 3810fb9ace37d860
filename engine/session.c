#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "../common/version.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "manifest.h"
#include "receiver.h"
#include "sender.h"

#define SESSION_CAPS (PROTO_CAP_SPARSE | PROTO_CAP_RESUME | PROTO_CAP_ZSTD | \
    PROTO_CAP_STREAMS | PROTO_CAP_RETIRE)

enum sess_state {
    S_CLIENT_START, S_CLIENT_WAIT_HELLO, S_CLIENT_WAIT_OPEN_OK,
    S_AGENT_WAIT_HELLO, S_AGENT_WAIT_OPEN,
    S_RUN, S_DONE
};

/* What the streams of one transfer share on the agent: made by the
 * session that opened it, borrowed by the ones that joined. */
struct session_shared {
    uint8_t transfer_id[16];
    uint32_t flags, block_size;
    int sender;              /* a pull: the agent sends */
    struct plan *plan;
    struct dest *dest;
    struct incoming *in;
    uint32_t streams_used;   /* a bit per stream number */
};

struct session {
    enum sess_state state;
    struct xfer *x;
    struct session_open open;
    const struct session_policy *pol;
    conn_step_fn *role_step;
    void *role;
    unsigned stream;
    /* The agent's: the transfer it opened (owned) or joined. */
    struct session_shared *shared;
    int owns_shared;
    struct sender *own_sender;
    struct receiver *own_receiver;
    char peer_software[PROTO_MAX_SOFTWARE + 1];
    uint64_t peer_caps;
    int error_sent;
};

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

void
session_free(struct session *s)
{
    if (s == NULL)
        return;
    sender_free(s->own_sender);
    receiver_free(s->own_receiver);
    if (s->owns_shared) {
        /* What is complete is committed before the destination goes. */
        incoming_free(s->shared->in);
        dest_free(s->shared->dest);
        plan_free(s->shared->plan);
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

int
session_running(const struct session *s)
{
    return s->state == S_RUN;
}

unsigned
session_stream(const struct session *s)
{
    return s->stream;
}

void *
session_role(const struct session *s)
{
    return s->role;
}

int
session_is_sender(const struct session *s)
{
    return s->role_step == sender_step;
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
static int
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
    xfree(dest);
    memset(&ok, 0, sizeof(ok));
    r = msg_open_ok_encode(out, &ok);
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
    return r;
}

/* The role of stream 0 of a transfer the agent opened, and what the
 * streams will share. */
static int
session_agent_transfer(struct session *s, const struct msg_open *o)
{
    struct session_shared *sh;
    struct manifest mf;
    struct msg_str p;
    size_t pos = 0;
    char *path;
    int r;

    if ((sh = xcalloc(1, sizeof(*sh))) == NULL)
        return FERRY_ERR_NOMEM;
    s->shared = sh;
    s->owns_shared = 1;
    memcpy(sh->transfer_id, o->transfer_id, sizeof(sh->transfer_id));
    sh->flags = o->flags;
    sh->block_size = o->block_size;
    sh->streams_used = 1;
    if (o->op == OPEN_PUSH) {
        if ((r = msg_open_path(o, &pos, &p)) != 0 ||
            (r = session_resolve(s, o->op, &p, &path)) != 0)
            return r;
        sh->dest = dest_new(path, o->flags, o->transfer_id, s->x);
        xfree(path);
        if (sh->dest == NULL ||
            (sh->in = incoming_new(sh->dest, o->block_size, s->x)) == NULL ||
            (s->own_receiver = receiver_new(sh->dest, sh->in, 0, o->flags,
            o->block_size, s->x)) == NULL)
            return FERRY_ERR_NOMEM;
        s->role_step = receiver_step;
        s->role = s->own_receiver;
        return 0;
    }
    sh->sender = 1;
    manifest_init(&mf);
    while ((r = msg_open_path(o, &pos, &p)) == 0) {
        if ((r = session_resolve(s, o->op, &p, &path)) != 0)
            break;
        r = manifest_scan(&mf, path);
        xfree(path);
        if (r != 0)
            break;
    }
    if (r != FERRY_ERR_SHORT) {
        manifest_cleanup(&mf);
        return r;
    }
    sh->plan = plan_new(&mf, o->block_size, o->flags, s->x);
    manifest_cleanup(&mf);
    if (sh->plan == NULL ||
        (s->own_sender = sender_new(sh->plan, 0, s->x)) == NULL)
        return FERRY_ERR_NOMEM;
    s->role_step = sender_step;
    s->role = s->own_sender;
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
    if ((r = session_agent_transfer(s, &o)) != 0)
        return r;
    if (s->pol->opened != NULL && (r = s->pol->opened(s->pol->ctx, s)) != 0)
        return r;
    memset(&ok, 0, sizeof(ok));
    s->state = S_RUN;
    return msg_open_ok_encode(out, &ok);
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
        sizeof(j.transfer_id)) || (sh->streams_used & (1u << j.stream)))
        return xfer_fail(s->x, FERRY_ERR_PROTOCOL,
            "JOIN of a transfer or stream this agent does not run");
    sh->streams_used |= 1u << j.stream;
    s->stream = j.stream;
    if (sh->sender) {
        if ((s->own_sender = sender_new(sh->plan, j.stream, s->x)) == NULL)
            return FERRY_ERR_NOMEM;
        s->role_step = sender_step;
        s->role = s->own_sender;
    } else {
        if ((s->own_receiver = receiver_new(sh->dest, sh->in, j.stream,
            sh->flags, sh->block_size, s->x)) == NULL)
            return FERRY_ERR_NOMEM;
        s->role_step = receiver_step;
        s->role = s->own_receiver;
    }
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
        j.stream = o->stream;
        return msg_join_encode(out, &j);
    }
    memset(&m, 0, sizeof(m));
    m.op = o->op;
    m.flags = o->flags;
    m.block_size = o->block_size;
    memcpy(m.transfer_id, o->transfer_id, sizeof(m.transfer_id));
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
        }
        s->state = S_RUN;
        return 0;
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
    size_t off = 0, n;
    int r;

    if (s->state == S_CLIENT_START &&
        (r = session_client_start(s, st->out)) != 0)
        return r;
    while (s->state != S_RUN && s->state != S_DONE && off < st->in_len) {
        if ((r = frame_parse(st->in + off, st->in_len - off, &f, &n)) != 0)
            return r;
        off += n;
        if (f.type == MSG_ERROR) {
            *used = off;
            return xfer_peer_error(s->x, f.payload, f.len);
        }
        if ((r = session_on_frame(s, &f, st->out)) != 0)
            return r;
    }
    *used = off;
    return 0;
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
