#include "session_int.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../proto/frame.h"
#include "../proto/msg_filter.h"
#include "volume/volkeep.h"
#include "prune.h"

/* 1 if a path holds a glob character ('\\' escapes one). */
static int
session_has_glob(const char *p)
{
    for (; *p != '\0'; p++) {
        if (*p == '\\' && p[1] != '\0')
            p++;
        else if (*p == '*' || *p == '?' || *p == '[')
            return 1;
    }
    return 0;
}

/* Appends path (taken) to the list. */
static int
session_paths_add(struct session_paths *l, char *path)
{
    char **nv;

    if ((nv = xgrow(l->v, l->n, &l->cap, sizeof(*nv), 4)) == NULL) {
        xfree(path);
        return FERRY_ERR_NOMEM;
    }
    l->v = nv;
    l->v[l->n++] = path;
    return 0;
}

void
session_paths_free(struct session_paths *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        xfree(l->v[i]);
    xfree(l->v);
    memset(l, 0, sizeof(*l));
}

/*
 * Resolves one source of a pull (or LIST) into the local paths to scan,
 * appended to l. A source with glob characters is expanded here, as
 * glob(3) does and never by a shell: each match is resolved through the
 * policy again (so a match through a symlink is confined like any path),
 * in name order. No match is an error that ends the transfer before
 * anything is sent, unless the name exists as written (a file called
 * "a[1]"); for a LIST (a watch looks again) it returns 1 instead.
 */
int
session_source_paths(struct session *s, uint8_t op, const struct msg_str *p,
    struct session_paths *l)
{
    struct msg_str m;
    struct stat st;
    glob_t g;
    char *path = NULL, *one;
    size_t i;
    int r, gr;

    if ((r = session_resolve(s, op, p, &path)) != 0)
        return r;
    if (!session_has_glob(path) || lstat(path, &st) == 0)
        return session_paths_add(l, path);
    memset(&g, 0, sizeof(g));
    gr = glob(path, GLOB_ERR, NULL, &g);
    xfree(path);
    if (gr == GLOB_NOMATCH || (gr == 0 && g.gl_pathc == 0)) {
        globfree(&g);
        if (op == OPEN_LIST)
            return 1;
        return xfer_fail(s->x, -ENOENT, "%.*s: no match",
            (int)(p->len > 512 ? 512 : p->len), p->p);
    }
    if (gr != 0 || g.gl_pathc > SESSION_GLOB_MAX) {
        globfree(&g);
        return xfer_fail(s->x, gr != 0 ? -EIO : FERRY_ERR_TOO_LARGE,
            "%.*s: %s", (int)(p->len > 512 ? 512 : p->len), p->p,
            gr != 0 ? "cannot be expanded" : "matches too many names");
    }
    for (i = 0, r = 0; i < g.gl_pathc && r == 0; i++) {
        m.p = g.gl_pathv[i];
        m.len = strlen(m.p);
        if ((r = session_resolve(s, op, &m, &one)) == 0)
            r = session_paths_add(l, one);
    }
    globfree(&g);
    return r;
}

int
session_top_clash(struct session *s, const struct session_paths *l)
{
    char msg[PROTO_MAX_MESSAGE];
    int r;

    /* The client refused what it could see; a glob's matches are seen
     * here ("*\/x": a/x and b/x). */
    if ((r = manifest_top_clash((const char *const *)l->v, l->n, msg,
        sizeof(msg))) <= 0)
        return r;
    return xfer_fail(s->x, FERRY_ERR_USAGE, "%s", msg);
}

int
session_scan_paths(struct manifest *mf, const struct session_paths *l)
{
    size_t i;
    int r = 0;

    for (i = 0; i < l->n && r == 0; i++)
        r = manifest_scan(mf, l->v[i]);
    return r;
}

/* Both, for one source; a LIST's glob that matches nothing is a NOTICE
 * (ENOENT, "no match") in mf. */
static int
session_scan_source(struct session *s, uint8_t op, const struct msg_str *p,
    struct manifest *mf)
{
    struct session_paths l;
    int r;

    memset(&l, 0, sizeof(l));
    if ((r = session_source_paths(s, op, p, &l)) == 0) {
        r = session_scan_paths(mf, &l);
    } else if (r == 1) {
        char pat[PROTO_MAX_PATH + 1];

        snprintf(pat, sizeof(pat), "%.*s", (int)p->len, p->p);
        r = manifest_notice(mf, -ENOENT, pat, "no match");
    }
    session_paths_free(&l);
    return r;
}

/* The space of the file system path is on, or of its nearest existing
 * parent (a push makes missing directories); zeros if none can be
 * found. */
void
session_fs_space(const char *path, struct msg_space *m)
{
    char buf[PROTO_MAX_PATH + 1], *slash;
    struct statvfs v;

    snprintf(buf, sizeof(buf), "%s", path);
    while (statvfs(buf, &v) != 0) {
        if ((slash = strrchr(buf, '/')) == NULL) {
            snprintf(buf, sizeof(buf), ".");
            if (statvfs(buf, &v) != 0)
                return;
            break;
        }
        if (slash == buf)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
    m->size = (uint64_t)v.f_blocks * v.f_frsize;
    m->avail = (uint64_t)v.f_bavail * v.f_frsize;
    if (m->avail > m->size)
        m->avail = m->size;
}

void
session_note_busy(struct session *s, const char *path)
{
    if (s->peer_caps & PROTO_CAP_BUSY)
        s->busy = dest_busy(path, s->holder, sizeof(s->holder));
}

int
session_send_busy(const struct session *s, struct buf *out)
{
    struct msg_busy m;

    if (!s->busy)
        return 0;
    m.holder.p = s->holder;
    m.holder.len = strlen(s->holder);
    return msg_busy_encode(out, &m);
}

/* A destination's contents, if it is a directory (or a link to one, as
 * a push's destination may be); otherwise one notice: ENOENT when it is
 * missing, ENOTDIR when it is something else. */
static int
session_list_dest(struct manifest *mf, const char *path)
{
    struct stat st;
    int r;

    if (stat(path, &st) != 0) {
        r = -errno;
        return manifest_notice(mf, r, path, ferry_strerror(r));
    }
    if (!S_ISDIR(st.st_mode))
        return manifest_notice(mf, -ENOTDIR, path, "not a directory");
    return manifest_scan_contents(mf, path);
}

/* LIST: the entries a pull of the paths would offer, as a role that
 * sends them a step at a time. */
int
session_agent_list(struct session *s, const struct msg_open *o,
    struct buf *out)
{
    struct msg_open_ok ok;
    struct manifest mf;
    struct msg_str p;
    size_t pos = 0;
    char *path;
    int r;

    manifest_init(&mf);
    /* A destination is listed as it is; sources as a pull sees them. */
    if (!(o->flags & OPEN_F_DEST_DIR))
        session_set_filter(s, &mf);
    while ((r = msg_open_path(o, &pos, &p)) == 0) {
        if (!(o->flags & OPEN_F_DEST_DIR)) {
            if ((r = session_scan_source(s, o->op, &p, &mf)) != 0)
                break;
            continue;
        }
        if ((r = session_resolve(s, o->op, &p, &path)) != 0)
            break;
        r = session_list_dest(&mf, path);
        xfree(path);
        if (r != 0)
            break;
    }
    if (r == FERRY_ERR_SHORT)
        r = (s->own_listing = listing_new(&mf,
            (o->flags & OPEN_F_READINESS) != 0, s->x)) == NULL ?
            FERRY_ERR_NOMEM : 0;
    manifest_cleanup(&mf);
    if (r != 0)
        return r;
    s->role_step = listing_step;
    s->role = s->own_listing;
    s->state = S_RUN;
    memset(&ok, 0, sizeof(ok));
    return msg_open_ok_encode(out, &ok);
}

/* DELETE: removes paths[1..] beneath the destination paths[0] (a mirror
 * after its transfer); a NOTICE for each that could not be, then END. */
int
session_agent_delete(struct session *s, const struct msg_open *o,
    struct buf *out)
{
    char rel[PROTO_MAX_PATH + 1], *dest;
    struct msg_open_ok ok;
    struct msg_notice nt;
    struct msg_str p;
    size_t pos = 0;
    int r, rootfd;

    if ((r = msg_open_path(o, &pos, &p)) != 0 ||
        (r = session_resolve(s, o->op, &p, &dest)) != 0)
        return r;
    rootfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    r = rootfd < 0 && errno != ENOENT ? -errno : 0;
    if (r != 0) {
        r = xfer_fail(s->x, r, "%s: %s", dest, ferry_strerror(r));
        xfree(dest);
        return r;
    }
    xfree(dest);
    memset(&ok, 0, sizeof(ok));
    r = msg_open_ok_encode(out, &ok);
    while (r == 0 && rootfd >= 0 && msg_open_path(o, &pos, &p) == 0) {
        int e;

        memcpy(rel, p.p, p.len);
        rel[p.len] = '\0';
        if ((e = prune_beneath(rootfd, rel)) == 0)
            continue;
        nt.code = proto_err_to_wire(e);
        nt.path = p;
        nt.text.p = ferry_strerror(e);
        nt.text.len = strlen(nt.text.p);
        r = msg_notice_encode(out, &nt);
    }
    if (rootfd >= 0)
        close(rootfd);
    if (r == 0)
        r = msg_end_encode(out);
    s->state = S_DONE;
    return r;
}

void
session_set_filter(struct session *s, struct manifest *mf)
{
    int ignore = (s->peer_caps & PROTO_CAP_IGNORE) != 0;

    if (s->filter == NULL && ignore &&
        (s->filter = xcalloc(1, sizeof(*s->filter))) != NULL)
        filter_init(s->filter);
    manifest_set_filter(mf, s->filter, ignore);
}

/* FILTERS, once, before OPEN: the rules a pull's scan applies. */
int
session_agent_filters(struct session *s, const struct frame *f)
{
    struct msg_filters m;
    struct msg_str pat;
    size_t pos = 0;
    uint8_t action;
    int r;

    if (s->filter != NULL)
        return xfer_fail(s->x, FERRY_ERR_PROTOCOL, "FILTERS sent twice");
    if ((r = msg_filters_decode(f->payload, f->len, &m)) != 0)
        return r;
    if ((s->filter = xcalloc(1, sizeof(*s->filter))) == NULL)
        return FERRY_ERR_NOMEM;
    filter_init(s->filter);
    while ((r = msg_filters_rule(&m, &pos, &action, &pat)) == 0)
        if ((r = filter_add(s->filter, action, pat.p, pat.len, NULL)) != 0)
            return xfer_fail(s->x, r, "a filter pattern of the client: %s",
                ferry_strerror(r));
    return r == FERRY_ERR_SHORT ? 0 : r;
}


int
session_agent_keep(struct session *s, const struct msg_open *o,
    struct buf *out)
{
    char name[PROTO_MAX_PATH + 1];
    struct msg_open_ok ok;
    struct msg_str p;
    size_t pos = 0;
    char *dir;
    int r;

    /* The decoder made sure of the two paths. */
    if ((r = msg_open_path(o, &pos, &p)) != 0 ||
        (r = session_resolve(s, o->op, &p, &dir)) != 0)
        return r;
    if ((r = msg_open_path(o, &pos, &p)) == 0) {
        memcpy(name, p.p, p.len);
        name[p.len] = '\0';
        r = volkeep_new(dir, name, o->flags, s->x, &s->own_keep);
    }
    xfree(dir);
    if (r != 0)
        return r;
    s->role_step = volkeep_step;
    s->role = s->own_keep;
    s->state = S_RUN;
    memset(&ok, 0, sizeof(ok));
    return msg_open_ok_encode(out, &ok);
}
