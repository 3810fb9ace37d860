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
#include "partial.h"
#include "receiver.h"
#include "sender.h"

#define SESSION_CAPS (PROTO_CAP_SPARSE | PROTO_CAP_RESUME | PROTO_CAP_ZSTD)

enum sess_state {
    S_CLIENT_START, S_CLIENT_WAIT_HELLO, S_CLIENT_WAIT_OPEN_OK,
    S_AGENT_WAIT_HELLO, S_AGENT_WAIT_OPEN,
    S_RUN, S_DONE
};

struct session {
    enum sess_state state;
    struct xfer *x;
    struct session_open open;
    conn_step_fn *role_step;
    void *role;
    /* Roles the agent made, freed with the session. */
    struct sender *own_sender;
    struct receiver *own_receiver;
    char *own_dest;
    char peer_software[PROTO_MAX_SOFTWARE + 1];
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
    s->role_step = role_step;
    s->role = role;
    return s;
}

struct session *
session_agent_new(struct xfer *x)
{
    struct session *s = xcalloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->state = S_AGENT_WAIT_HELLO;
    s->x = x;
    return s;
}

void
session_free(struct session *s)
{
    if (s == NULL)
        return;
    sender_free(s->own_sender);
    receiver_free(s->own_receiver);
    xfree(s->own_dest);
    xfree(s);
}

const char *
session_peer_software(const struct session *s)
{
    return s->peer_software;
}

static int
session_send_hello(struct buf *out)
{
    struct msg_hello h;

    memset(&h, 0, sizeof(h));
    h.version_min = PROTO_VERSION_MIN;
    h.version_max = PROTO_VERSION_MAX;
    h.caps = SESSION_CAPS;
    h.software.p = "ferry " FERRY_VERSION;
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
    s->x->caps = h.caps & SESSION_CAPS;
    if (h.version_max < PROTO_VERSION_MIN ||
        h.version_min > PROTO_VERSION_MAX)
        return xfer_fail(s->x, FERRY_ERR_VERSION,
            "peer (%s) speaks protocol %u-%u, this is ferry %s with %u-%u",
            s->peer_software, h.version_min, h.version_max, FERRY_VERSION,
            PROTO_VERSION_MIN, PROTO_VERSION_MAX);
    return 0;
}

/* "~" and "~/..." in a remote path mean the agent's home, as with scp. */
static char *
session_expand_home(const char *p, size_t len)
{
    const char *home = getenv("HOME");
    char *out;

    if (home != NULL && len >= 1 && p[0] == '~' &&
        (len == 1 || p[1] == '/')) {
        size_t hl = strlen(home);

        if ((out = xmalloc(hl + len)) == NULL)
            return NULL;
        memcpy(out, home, hl);
        memcpy(out + hl, p + 1, len - 1);
        out[hl + len - 1] = '\0';
        return out;
    }
    return xstrndup(p, len);
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

    if ((r = msg_open_path(o, &pos, &p)) != 0)
        return r;
    if ((dest = session_expand_home(p.p, p.len)) == NULL)
        return FERRY_ERR_NOMEM;
    r = partial_dest_state(dest, o->op == OPEN_CLEAN, &v, &n);
    if (r != 0) {
        r = xfer_fail(s->x, r, "%s: %s", dest, ferry_strerror(r));
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

static int
session_agent_open(struct session *s, const struct frame *f,
    struct buf *out)
{
    struct msg_open o;
    struct msg_open_ok ok;
    struct msg_str p;
    struct manifest mf;
    size_t pos = 0;
    char *path;
    int r;

    if ((r = msg_open_decode(f->payload, f->len, &o)) != 0)
        return r;
    if (o.op == OPEN_STATUS || o.op == OPEN_CLEAN)
        return session_agent_state(s, &o, out);
    manifest_init(&mf);
    if (o.op == OPEN_PUSH) {
        if ((r = msg_open_path(&o, &pos, &p)) != 0)
            return r;
        if ((s->own_dest = session_expand_home(p.p, p.len)) == NULL)
            return FERRY_ERR_NOMEM;
        s->own_receiver = receiver_new(s->own_dest, o.flags, o.block_size,
            s->x);
        if (s->own_receiver == NULL)
            return FERRY_ERR_NOMEM;
        s->role_step = receiver_step;
        s->role = s->own_receiver;
    } else {
        while ((r = msg_open_path(&o, &pos, &p)) == 0) {
            if ((path = session_expand_home(p.p, p.len)) == NULL) {
                r = FERRY_ERR_NOMEM;
                break;
            }
            r = manifest_scan(&mf, path);
            xfree(path);
            if (r != 0)
                break;
        }
        if (r != FERRY_ERR_SHORT) {
            manifest_cleanup(&mf);
            return r;
        }
        s->own_sender = sender_new(&mf, o.block_size, o.flags, s->x);
        manifest_cleanup(&mf);
        if (s->own_sender == NULL)
            return FERRY_ERR_NOMEM;
        s->role_step = sender_step;
        s->role = s->own_sender;
    }
    memset(&ok, 0, sizeof(ok));
    s->state = S_RUN;
    return msg_open_ok_encode(out, &ok);
}

/* Handles frames before the role runs; returns how many input bytes it
 * used in *used. Stops at the first frame meant for the role. */
static int
session_handshake(struct session *s, struct conn_step *st, size_t *used)
{
    struct frame f;
    size_t off = 0, n;
    int r;

    if (s->state == S_CLIENT_START) {
        const struct session_open *o = &s->open;
        struct msg_open m;

        memset(&m, 0, sizeof(m));
        m.op = o->op;
        m.flags = o->flags;
        m.block_size = o->block_size;
        memcpy(m.transfer_id, o->transfer_id, sizeof(m.transfer_id));
        m.npaths = o->npaths;
        if ((r = session_send_hello(st->out)) != 0 ||
            (r = msg_open_encode(st->out, &m, o->paths)) != 0)
            return r;
        s->state = S_CLIENT_WAIT_HELLO;
    }
    while (s->state != S_RUN && s->state != S_DONE && off < st->in_len) {
        if ((r = frame_parse(st->in + off, st->in_len - off, &f, &n)) != 0)
            return r;
        off += n;
        if (f.type == MSG_ERROR) {
            *used = off;
            return xfer_peer_error(s->x, f.payload, f.len);
        }
        switch (s->state) {
        case S_CLIENT_WAIT_HELLO:
            if (f.type != MSG_HELLO)
                return FERRY_ERR_PROTOCOL;
            if ((r = session_on_hello(s, &f)) != 0)
                return r;
            s->state = S_CLIENT_WAIT_OPEN_OK;
            break;
        case S_CLIENT_WAIT_OPEN_OK:
            if (f.type != MSG_OPEN_OK)
                return FERRY_ERR_PROTOCOL;
            {
                struct msg_open_ok ok;

                if ((r = msg_open_ok_decode(f.payload, f.len, &ok)) != 0)
                    return r;
            }
            s->state = S_RUN;
            break;
        case S_AGENT_WAIT_HELLO:
            if (f.type != MSG_HELLO)
                return FERRY_ERR_PROTOCOL;
            r = session_on_hello(s, &f);
            /* Answer with our range even when they do not overlap, so the
             * client can say which versions each side speaks. */
            if (session_send_hello(st->out) != 0 && r == 0)
                r = FERRY_ERR_NOMEM;
            if (r != 0)
                return r;
            s->state = S_AGENT_WAIT_OPEN;
            break;
        case S_AGENT_WAIT_OPEN:
            if (f.type != MSG_OPEN)
                return FERRY_ERR_PROTOCOL;
            if ((r = session_agent_open(s, &f, st->out)) != 0)
                return r;
            break;
        default:
            return FERRY_ERR_PROTOCOL;
        }
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
