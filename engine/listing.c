#include "listing.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../proto/msg.h"
#include "formcheck.h"

struct listing {
    struct manifest m;
    size_t next, next_notice;
    int ended;      /* END was sent */
    int readiness;
    /* Files open for writing, read from /proc once, the first time a
     * lease cannot tell. */
    struct formcheck_busy busy;
    int busy_scanned;
    struct xfer *x;
};

struct listing *
listing_new(struct manifest *m, int readiness, struct xfer *x)
{
    struct listing *l = xcalloc(1, sizeof(*l));

    if (l == NULL)
        return NULL;
    l->m = *m;
    manifest_init(m);
    l->readiness = readiness;
    l->x = x;
    return l;
}

void
listing_free(struct listing *l)
{
    if (l == NULL)
        return;
    manifest_cleanup(&l->m);
    formcheck_busy_free(&l->busy);
    xfree(l);
}

/* ENTRY_S_* of file id, as it is now. A file that cannot be opened or
 * read says nothing (0): the pull that follows will say why. */
static uint8_t
listing_state(struct listing *l, size_t id)
{
    struct formcheck fc;
    struct stat st;
    uint8_t state = 0;
    int fd, busy;

    if ((fd = manifest_open(&l->m, id, O_RDONLY | O_NONBLOCK)) < 0)
        return 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return 0;
    }
    if ((busy = formcheck_busy_lease(fd)) == 0)
        state |= ENTRY_S_IDLE;
    if (busy < 0) {
        if (!l->busy_scanned)
            l->busy_scanned = formcheck_busy_scan(&l->busy) == 0 ? 1 : -1;
        busy = l->busy_scanned > 0 && formcheck_busy_in(&l->busy,
            st.st_dev, st.st_ino);
    }
    if (busy)
        state |= ENTRY_S_BUSY;
    if (formcheck_fd(fd, (uint64_t)st.st_size, &fc) == 0 &&
        fc.form != FORM_UNKNOWN)
        state |= fc.whole ? ENTRY_S_WHOLE : ENTRY_S_TORN;
    close(fd);
    return state;
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
        if (l->readiness && me->kind == ENTRY_FILE)
            e.state = listing_state(l, l->next);
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
