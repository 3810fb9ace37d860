/*
 * watchlist.c: what pull --watch knows of DIR's units across looks, and
 * which are ready (watch.h). No I/O.
 */
#include "watch.h"

#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "../engine/manifest.h"
#include "../proto/msg.h"

static struct watch_unit *
watch_unit_get(struct watch_table *t, const char *name, size_t len)
{
    struct watch_unit *nv;
    size_t i;

    for (i = 0; i < t->n; i++)
        if (strlen(t->v[i].name) == len &&
            memcmp(t->v[i].name, name, len) == 0)
            return &t->v[i];
    if ((nv = xgrow(t->v, t->n, &t->cap, sizeof(*nv), 16)) == NULL)
        return NULL;
    t->v = nv;
    nv = &t->v[t->n];
    memset(nv, 0, sizeof(*nv));
    if ((nv->name = xstrndup(name, len)) == NULL)
        return NULL;
    t->n++;
    return nv;
}

static int
watch_newer(int64_t s1, uint32_t n1, int64_t s2, uint32_t n2)
{
    return s1 > s2 || (s1 == s2 && n1 > n2);
}

static int
watch_ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), m = strlen(tail);

    return n > m && strcmp(s + n - m, tail) == 0;
}

/* The unit of now[0..nn) named (name, len), or NULL. A listing is depth
 * first, so an entry's unit is the last one but for a hostile order. */
static struct watch_unit *
watch_find(struct watch_unit *now, size_t nn, const char *name, size_t len)
{
    size_t k;

    for (k = nn; k-- > 0;)
        if (strlen(now[k].name) == len && memcmp(now[k].name, name, len) == 0)
            return &now[k];
    return NULL;
}

/* The listing as units, in now (room for m->n), *nn of them. */
static int
watch_gather(const struct watch_table *t, const struct manifest *m,
    struct watch_unit *now, size_t *nn)
{
    char rel[MANIFEST_REL_MAX];
    size_t i;

    for (i = 0; i < m->n; i++) {
        const struct mentry *e = manifest_entry(m, i);
        const char *slash = strchr(manifest_rel(m, i, rel), '/');
        size_t len = slash != NULL ? (size_t)(slash - rel) : strlen(rel);
        struct watch_unit *w = watch_find(now, *nn, rel, len);

        if (w == NULL) {
            w = &now[*nn];
            if ((w->name = xstrndup(rel, len)) == NULL)
                return FERRY_ERR_NOMEM;
            (*nn)++;
        }
        if (slash == NULL)
            w->is_dir = e->kind == ENTRY_DIR;
        else
            w->count++;
        if (e->kind == ENTRY_FILE)
            w->size += e->size;
        if (watch_newer(e->mtime_sec, e->mtime_nsec, w->mtime_sec,
            w->mtime_nsec)) {
            w->mtime_sec = e->mtime_sec;
            w->mtime_nsec = e->mtime_nsec;
        }
        if (slash != NULL && t->marker != NULL &&
            strcmp(slash + 1, t->marker) == 0)
            w->has_marker = 1;
    }
    return 0;
}

/* A file's marker is its sibling E + NAME. */
static void
watch_mark_files(const struct watch_table *t, struct watch_unit *now,
    size_t nn)
{
    size_t i, ml = t->marker != NULL ? strlen(t->marker) : 0;
    struct watch_unit *f;

    for (i = 0; i < nn && t->marker != NULL; i++) {
        if (now[i].is_dir || !watch_ends_with(now[i].name, t->marker))
            continue;
        f = watch_find(now, nn, now[i].name, strlen(now[i].name) - ml);
        if (f != NULL && !f->is_dir) {
            f->has_marker = 1;
            now[i].is_marker = 1;
        }
    }
}

int
watch_look(struct watch_table *t, const struct manifest *m)
{
    struct watch_unit *u, *now;
    size_t i, n0 = t->n, nn = 0;
    int r;

    for (i = 0; i < t->n; i++)
        t->v[i].seen = 0;
    /* What this look finds, unit by unit, then merged into the table. */
    if ((now = xcalloc(m->n + 1, sizeof(*now))) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = watch_gather(t, m, now, &nn)) == 0)
        watch_mark_files(t, now, nn);
    for (i = 0; i < nn && r == 0; i++) {
        const struct watch_unit *w = &now[i];

        if ((u = watch_unit_get(t, w->name, strlen(w->name))) == NULL) {
            r = FERRY_ERR_NOMEM;
            break;
        }
        if (u->size == w->size && u->count == w->count &&
            u->mtime_sec == w->mtime_sec &&
            u->mtime_nsec == w->mtime_nsec && u->is_dir == w->is_dir &&
            (size_t)(u - t->v) < n0) {
            u->stable++;
        } else {
            /* A new version: it waits to be stable, and is tried
             * again if its last one failed. */
            u->stable = 0;
            u->pulled = 0;
            u->left_alone = 0;
        }
        u->is_dir = w->is_dir;
        u->size = w->size;
        u->count = w->count;
        u->mtime_sec = w->mtime_sec;
        u->mtime_nsec = w->mtime_nsec;
        u->has_marker = w->has_marker;
        u->is_marker = w->is_marker;
        u->seen = 1;
    }
    for (i = 0; i < nn; i++)
        xfree(now[i].name);
    xfree(now);
    return r;
}

int
watch_unit_cmp(const void *a, const void *b)
{
    const struct watch_unit *x = *(struct watch_unit *const *)a;
    const struct watch_unit *y = *(struct watch_unit *const *)b;

    if (watch_newer(x->mtime_sec, x->mtime_nsec, y->mtime_sec,
        y->mtime_nsec))
        return -1;
    if (watch_newer(y->mtime_sec, y->mtime_nsec, x->mtime_sec,
        x->mtime_nsec))
        return 1;
    return strcmp(x->name, y->name);
}

size_t
watch_ready(const struct watch_table *t, int keep, struct watch_unit **out)
{
    size_t i, n = 0, k = 0;

    for (i = 0; i < t->n; i++) {
        struct watch_unit *u = &t->v[i];

        if (u->seen && !u->is_marker && !u->given_up)
            out[n++] = u;
    }
    qsort(out, n, sizeof(*out), watch_unit_cmp);
    if (keep > 0 && n > (size_t)keep)
        n = (size_t)keep;
    for (i = 0; i < n; i++) {
        struct watch_unit *u = out[i];
        int ready = t->marker != NULL ? u->has_marker : u->stable >= 1;

        if (ready && !u->pulled)
            out[k++] = u;
    }
    return k;
}

int
watch_failed(struct watch_unit *u)
{
    u->stable = 0;
    if (++u->failures < WATCH_MAX_FAILURES)
        return 0;
    u->given_up = 1;
    return 1;
}

void
watch_pulled(struct watch_unit *u)
{
    u->pulled = 1;
    u->failures = 0;
    u->left_alone = 0;
}

void
watch_table_cleanup(struct watch_table *t)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        xfree(t->v[i].name);
    xfree(t->v);
    memset(t, 0, sizeof(*t));
}

