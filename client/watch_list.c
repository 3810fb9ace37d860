/*
 * watch_list.c: what pull --watch knows of DIR's units across looks, and
 * which are ready (watch.h). No I/O.
 */
#include "watch.h"

#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/arena.h"
#include "../engine/manifest.h"
#include "../proto/msg.h"

/* Names as (bytes, length): the order of strcmp, counted in *compares. */
static int
watch_name_cmp(const char *a, size_t al, const char *b, size_t bl,
    uint64_t *compares)
{
    int c = memcmp(a, b, al < bl ? al : bl);

    (*compares)++;
    if (c != 0)
        return c;
    return (al > bl) - (al < bl);
}

static int
watch_newer(int64_t s1, uint32_t n1, int64_t s2, uint32_t n2)
{
    return s1 > s2 || (s1 == s2 && n1 > n2);
}

static int
watch_ends_with(const char *s, size_t n, const char *tail)
{
    size_t m = strlen(tail);

    return n > m && memcmp(s + n - m, tail, m) == 0;
}

/*
 * A look sorts where things are found instead of searching for them, so
 * that it costs n log n comparisons whatever names and order a hostile
 * listing chooses (a hash of names it chooses could be made to collide):
 * the entries by their unit, the units found, and the table (kept by
 * name) merged with them.
 */

/* A listing entry and its unit, the name before its first '/'. */
struct watch_ref {
    const char *name;     /* in the look's arena */
    size_t len;
    size_t id;            /* the entry */
    unsigned below : 1;   /* within the unit, not the unit itself */
    unsigned marker : 1;  /* the unit's E/NAME with --ready-marker NAME */
    unsigned dcp_meta : 1;    /* torch.distributed.checkpoint's .metadata */
    unsigned dcp_shard : 1;   /* ... and its *.distcp files */
    unsigned st_index : 1;    /* *.safetensors.index.json */
    unsigned st_shard : 1;    /* *-of-*.safetensors */
};

/* qsort_r order of refs: by unit, then in the listing's order (so that
 * of two entries naming a unit itself, the later one counts, as it
 * would going down the listing). */
static int
watch_ref_cmp(const void *a, const void *b, void *compares)
{
    const struct watch_ref *x = a, *y = b;
    int c = watch_name_cmp(x->name, x->len, y->name, y->len, compares);

    if (c != 0)
        return c;
    return (x->id > y->id) - (x->id < y->id);
}

/* What a look is working on. */
struct watch_now {
    struct arena names;
    struct watch_ref *refs;    /* one per entry, sorted */
    struct watch_unit *v;      /* the units found, by name */
    size_t n;
};

static void
watch_now_cleanup(struct watch_now *w)
{
    size_t i;

    for (i = 0; w->v != NULL && i < w->n; i++)
        xfree(w->v[i].name);
    xfree(w->v);
    xfree(w->refs);
    arena_cleanup(&w->names);
}

/* Whether the look should end: the watch was told to stop. */
static int
watch_stopping(const struct watch_table *t)
{
    return t->stop != NULL && *t->stop;
}

/* The markers frameworks write last, by an entry's base name. */
static void
watch_framework(struct watch_ref *f, const char *base)
{
    size_t n = strlen(base);

    f->dcp_meta = strcmp(base, ".metadata") == 0;
    f->dcp_shard = watch_ends_with(base, n, ".distcp");
    f->st_index = watch_ends_with(base, n, ".safetensors.index.json");
    f->st_shard = watch_ends_with(base, n, ".safetensors") &&
        strstr(base, "-of-") != NULL;
}

/* Names writers use before renaming into place, and hidden ones: never
 * units. */
static int
watch_temp_name(const char *name)
{
    static const char *const tails[] = { ".tmp", ".temp", ".part",
        ".partial", ".incomplete", ".lock", ".swp" };
    size_t n = strlen(name), i;

    if (name[0] == '.' || strncmp(name, "tmp-", 4) == 0 ||
        strncmp(name, "tmp_", 4) == 0 || strncmp(name, "tmp.", 4) == 0)
        return 1;
    for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
        if (watch_ends_with(name, n, tails[i]))
            return 1;
    return 0;
}

/* A DeepSpeed step directory, global_stepN. */
static int
watch_ds_step(const struct watch_unit *u)
{
    const char *p = u->name + 11;

    if (!u->is_dir || strncmp(u->name, "global_step", 11) != 0 || *p == 0)
        return 0;
    for (; *p != 0; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/* Each entry of the listing as a ref, sorted. */
static int
watch_refs(struct watch_table *t, const struct manifest *m,
    struct watch_now *w)
{
    char rel[MANIFEST_REL_MAX];
    size_t i;

    if ((w->refs = xcalloc(m->n + 1, sizeof(*w->refs))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < m->n; i++) {
        struct watch_ref *f = &w->refs[i];
        const char *slash = strchr(manifest_rel(m, i, rel), '/');

        /* The listing is the long part of a look: a signal ends it
         * here rather than after. */
        if (watch_stopping(t))
            return FERRY_ERR_INTERRUPTED;
        f->len = slash != NULL ? (size_t)(slash - rel) : strlen(rel);
        if ((f->name = arena_strndup(&w->names, rel, f->len)) == NULL)
            return FERRY_ERR_NOMEM;
        f->id = i;
        f->below = slash != NULL;
        f->marker = slash != NULL && t->marker != NULL &&
            strcmp(slash + 1, t->marker) == 0;
        if (slash != NULL)
            watch_framework(f, strrchr(rel, '/') + 1);
    }
    qsort_r(w->refs, m->n, sizeof(*w->refs), watch_ref_cmp, &t->compares);
    return watch_stopping(t) ? FERRY_ERR_INTERRUPTED : 0;
}

static struct watch_unit *watch_find(struct watch_unit *v, size_t n,
    const char *name, size_t len, uint64_t *compares);

/* DeepSpeed writes the top-level file `latest` (naming the step) after
 * each global_stepN/ is complete: a step directory newer than `latest`
 * is still being written. */
static void
watch_deepspeed(struct watch_table *t, struct watch_now *w)
{
    const struct watch_unit *latest;
    size_t i;

    latest = watch_find(w->v, w->n, "latest", 6, &t->compares);
    for (i = 0; i < w->n; i++) {
        struct watch_unit *u = &w->v[i];

        if (!watch_ds_step(u))
            continue;
        if (latest == NULL || latest->is_dir || watch_newer(u->mtime_sec,
            u->mtime_nsec, latest->mtime_sec, latest->mtime_nsec))
            u->waits_marker = 1;
        else
            u->framework_done = 1;
    }
}

/* The sorted refs as units: each run of one name is one. */
static int
watch_gather(struct watch_table *t, const struct manifest *m,
    struct watch_now *w)
{
    struct watch_unit *u = NULL;
    size_t i;

    if ((w->v = xcalloc(m->n + 1, sizeof(*w->v))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < m->n; i++) {
        const struct watch_ref *f = &w->refs[i];
        const struct mentry *e = manifest_entry(m, f->id);

        if (u == NULL || watch_name_cmp(u->name, strlen(u->name), f->name,
            f->len, &t->compares) != 0) {
            u = &w->v[w->n];
            if ((u->name = xstrndup(f->name, f->len)) == NULL)
                return FERRY_ERR_NOMEM;
            w->n++;
        }
        if (!f->below)
            u->is_dir = e->kind == ENTRY_DIR;
        else
            u->count++;
        if (e->kind == ENTRY_FILE)
            u->size += e->size;
        if (watch_newer(e->mtime_sec, e->mtime_nsec, u->mtime_sec,
            u->mtime_nsec)) {
            u->mtime_sec = e->mtime_sec;
            u->mtime_nsec = e->mtime_nsec;
        }
        if (f->marker)
            u->has_marker = 1;
        if (e->kind == ENTRY_FILE) {
            uint8_t st = t->states != NULL ? t->states[f->id] : 0;

            u->nfiles++;
            u->state |= st & (ENTRY_S_BUSY | ENTRY_S_TORN);
            u->nwhole += (st & ENTRY_S_WHOLE) != 0;
            u->nidle += (st & ENTRY_S_IDLE) != 0;
        }
        u->framework_done |= f->dcp_meta | f->st_index;
        u->waits_marker |= f->dcp_shard | f->st_shard;
    }
    for (i = 0; i < w->n; i++) {
        u = &w->v[i];
        if (u->nfiles > 0 && u->nwhole == u->nfiles)
            u->state |= ENTRY_S_WHOLE;
        if (u->nfiles > 0 && u->nidle == u->nfiles)
            u->state |= ENTRY_S_IDLE;
        u->temp = watch_temp_name(u->name);
        if (u->waits_marker && u->framework_done)
            u->waits_marker = 0;
    }
    watch_deepspeed(t, w);
    return 0;
}

/* The unit of v[0..n) (by name) named (name, len), or NULL. */
static struct watch_unit *
watch_find(struct watch_unit *v, size_t n, const char *name, size_t len,
    uint64_t *compares)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = watch_name_cmp(v[mid].name, strlen(v[mid].name), name, len,
            compares);

        if (c == 0)
            return &v[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* A file's marker is its sibling E + NAME. */
static void
watch_mark_files(struct watch_table *t, struct watch_now *w)
{
    size_t i, ml = t->marker != NULL ? strlen(t->marker) : 0, len;
    struct watch_unit *f;

    for (i = 0; i < w->n && t->marker != NULL; i++) {
        len = strlen(w->v[i].name);
        if (w->v[i].is_dir || !watch_ends_with(w->v[i].name, len, t->marker))
            continue;
        f = watch_find(w->v, w->n, w->v[i].name, len - ml, &t->compares);
        if (f != NULL && !f->is_dir) {
            f->has_marker = 1;
            w->v[i].is_marker = 1;
        }
    }
}

/* u, as known, takes what the look found of it (w): the same version
 * once more, or a new one. */
static void
watch_update(struct watch_unit *u, const struct watch_unit *w, int known)
{
    if (known && u->size == w->size && u->count == w->count &&
        u->mtime_sec == w->mtime_sec && u->mtime_nsec == w->mtime_nsec &&
        u->is_dir == w->is_dir) {
        u->stable++;
    } else {
        /* A new version: it waits to be stable, and is tried again if
         * its last one failed. */
        u->stable = 0;
        u->pulled = 0;
        u->left_alone = 0;
        u->incomplete_said = 0;
    }
    u->state = w->state;
    u->temp = w->temp;
    u->waits_marker = w->waits_marker;
    u->framework_done = w->framework_done;
    u->is_dir = w->is_dir;
    u->size = w->size;
    u->count = w->count;
    u->mtime_sec = w->mtime_sec;
    u->mtime_nsec = w->mtime_nsec;
    u->has_marker = w->has_marker;
    u->is_marker = w->is_marker;
    u->seen = 1;
}

/* The table and the look's units, both by name, as one table by name.
 * New units take their names from w. */
static int
watch_merge(struct watch_table *t, struct watch_now *w)
{
    struct watch_unit *nv, *u;
    size_t i = 0, j = 0, k = 0, cap = t->n + w->n + 1;
    int c;

    if ((nv = xcalloc(cap, sizeof(*nv))) == NULL)
        return FERRY_ERR_NOMEM;
    while (i < t->n || j < w->n) {
        c = i == t->n ? 1 : j == w->n ? -1 : watch_name_cmp(t->v[i].name,
            strlen(t->v[i].name), w->v[j].name, strlen(w->v[j].name),
            &t->compares);
        if (c < 0) {
            u = &t->v[i++];
            /* Gone, and nothing to remember: a listing of other names
             * each time must not grow the table look after look. */
            if (!u->here && !u->given_up) {
                xfree(u->name);
                continue;
            }
            nv[k] = *u;
            nv[k++].seen = 0;
            continue;
        }
        u = &nv[k++];
        if (c == 0) {
            *u = t->v[i++];
        } else {
            u->name = w->v[j].name;
            w->v[j].name = NULL;
        }
        watch_update(u, &w->v[j++], c == 0);
    }
    xfree(t->v);
    t->v = nv;
    t->n = k;
    t->cap = cap;
    return 0;
}

struct watch_unit *
watch_unit_find(struct watch_table *t, const char *name)
{
    return watch_find(t->v, t->n, name, strlen(name), &t->compares);
}

int
watch_look(struct watch_table *t, const struct manifest *m)
{
    struct watch_now w;
    int r;

    memset(&w, 0, sizeof(w));
    arena_init(&w.names);
    if ((r = watch_refs(t, m, &w)) == 0 && (r = watch_gather(t, m, &w)) == 0)
        watch_mark_files(t, &w);
    if (r == 0 && (r = watch_stopping(t) ? FERRY_ERR_INTERRUPTED : 0) == 0)
        r = watch_merge(t, &w);
    watch_now_cleanup(&w);
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

/* Whether u may be pulled now (the rules above), pulled or not. */
static int watch_unit_ready(const struct watch_table *t, const struct watch_unit *u);

size_t
watch_ready(const struct watch_table *t, int keep, struct watch_unit **out)
{
    size_t i, n = 0, k = 0;

    for (i = 0; i < t->n; i++) {
        struct watch_unit *u = &t->v[i];

        if (u->seen && !u->is_marker && !u->given_up && !u->temp)
            out[n++] = u;
    }
    qsort(out, n, sizeof(*out), watch_unit_cmp);
    if (keep > 0 && n > (size_t)keep)
        n = (size_t)keep;
    for (i = 0; i < n; i++) {
        struct watch_unit *u = out[i];

        if (watch_unit_ready(t, u) && !u->pulled)
            out[k++] = u;
    }
    return k;
}

static int
watch_unit_ready(const struct watch_table *t, const struct watch_unit *u)
{
    unsigned settle = t->settle > 0 ? t->settle : 1;

    if (t->marker != NULL)
        return u->has_marker;
    if (u->temp || (u->state & (ENTRY_S_BUSY | ENTRY_S_TORN)) ||
        u->waits_marker)
        return 0;
    if (u->is_dir)
        return u->framework_done || u->stable >= settle;
    return (u->state & (ENTRY_S_IDLE | ENTRY_S_WHOLE)) != 0 ||
        u->stable >= settle;
}

int
watch_unit_incomplete(struct watch_unit *u)
{
    if (u->incomplete_said || (u->state & ENTRY_S_BUSY) ||
        !(u->state & ENTRY_S_TORN) || u->stable < 1 || u->temp)
        return 0;
    u->incomplete_said = 1;
    return 1;
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

const struct watch_unit *
watch_basis_unit(const struct watch_table *t, const struct watch_unit *u)
{
    const struct watch_unit *best = NULL, *v;
    const char *ext = strrchr(u->name, '.'), *vext;
    size_t i;

    if (u->is_dir)
        return NULL;
    for (i = 0; i < t->n; i++) {
        v = &t->v[i];
        vext = strrchr(v->name, '.');
        if (v == u || v->is_dir || v->is_marker || !v->here ||
            (ext == NULL) != (vext == NULL) ||
            (ext != NULL && strcmp(ext, vext) != 0) ||
            v->size == 0 || v->size > 2 * u->size || 2 * v->size < u->size)
            continue;
        if (best == NULL || watch_unit_cmp(&v, &best) < 0)
            best = v;
    }
    return best;
}

void
watch_pulled(struct watch_unit *u)
{
    u->pulled = 1;
    u->here = 1;
    u->failures = 0;
    u->left_alone = 0;
    u->incomplete_said = 0;
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

