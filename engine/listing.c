#include "listing.h"

#include <string.h>

#include "../common/alloc.h"
#include "../proto/msg.h"

struct listing {
    struct manifest m;
    size_t next, next_notice;
    int ended;      /* END was sent */
    struct xfer *x;
};

struct listing *
listing_new(struct manifest *m, struct xfer *x)
{
    struct listing *l = xcalloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    l->m = *m;
    manifest_init(m);
    l->x = x;
    return l;
}

void
listing_free(struct listing *l)
{
    if (l == NULL)
        return;
    manifest_cleanup(&l->m);
    xfree(l);
}

int
listing_step(void *role, struct conn_step *st)
{
    struct listing *l = role;
    struct msg_entry e;
    char rel[MANIFEST_REL_MAX];
    struct msg_notice nt;
    int r = 0;

    if (st->in_len > 0)
        return xfer_fail(l->x, FERRY_ERR_PROTOCOL, "a frame during a "
            "listing");
    if (l->ended) {
        st->done = 1;
        return 0;
    }
    while (r == 0 && l->next < l->m.n &&
        buf_used(st->out) < LISTING_STEP_BYTES) {
        const struct mentry *me = manifest_entry(&l->m, l->next);

        memset(&e, 0, sizeof(e));
        e.id = (uint32_t)l->next;
        e.kind = me->kind;
        e.mode = me->mode;
        e.size = me->size;
        e.mtime_sec = me->mtime_sec;
        e.mtime_nsec = me->mtime_nsec;
        e.path.p = manifest_rel(&l->m, l->next, rel);
        e.path.len = strlen(rel);
        e.target.p = manifest_target(&l->m, l->next);
        e.target.len = e.target.p != NULL ? strlen(e.target.p) : 0;
        r = msg_entry_encode(st->out, &e);
        l->next++;
    }
    while (r == 0 && l->next == l->m.n &&
        l->next_notice < manifest_notices(&l->m) &&
        buf_used(st->out) < LISTING_STEP_BYTES) {
        const struct mnotice *mn = manifest_notice_at(&l->m, l->next_notice++);

        nt.code = proto_err_to_wire(mn->code);
        nt.path.p = mn->path;
        nt.path.len = strnlen(mn->path, PROTO_MAX_PATH);
        nt.text.p = mn->text;
        nt.text.len = strnlen(mn->text, PROTO_MAX_MESSAGE);
        r = msg_notice_encode(st->out, &nt);
    }
    if (r != 0)
        return r;
    if (l->next == l->m.n && l->next_notice == manifest_notices(&l->m)) {
        st->done = 1;
        l->ended = 1;
        return msg_end_encode(st->out);
    }
    st->more = 1;
    return 0;
}
