#include "manifest_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/par.h"
#include "../proto/msg.h"

/* Chunks of the stable arrays (stable.h): 112 KiB of entries, 256 KiB
 * of names, 8 KiB of sources, 24 KiB of notices, 64 KiB of hashes. A
 * name's place is a 32-bit offset: the store holds at most 4 GiB. */
#define ENTS_SHIFT 12
#define NAMES_SHIFT 18
#define NAMES_MAX ((size_t)1 << 32)
#define SOURCES_SHIFT 8
#define NOTICES_SHIFT 10
#define HASHES_SHIFT 12

/* What a million entries cost is this times a million (manifest.h). */
_Static_assert(sizeof(struct mentry) == 28, "an entry is 28 bytes");

void
manifest_init(struct manifest *m)
{
    memset(m, 0, sizeof(*m));
    arena_init(&m->prefixes);
    stable_init(&m->ents, sizeof(struct mentry), ENTS_SHIFT,
        MANIFEST_MAX_ENTRIES);
    stable_init(&m->names, 1, NAMES_SHIFT, NAMES_MAX);
    m->names_max = NAMES_MAX;
    stable_init(&m->sources, sizeof(struct msource), SOURCES_SHIFT,
        MANIFEST_MAX_ENTRIES);
    stable_init(&m->notices, sizeof(struct mnotice), NOTICES_SHIFT,
        MANIFEST_MAX_ENTRIES);
    stable_init(&m->hashes, sizeof(struct hash128), HASHES_SHIFT,
        MANIFEST_MAX_ENTRIES);
}

void
manifest_live_begin(struct manifest *m)
{
    const char *delay = getenv("FERRY_TEST_SCAN_DELAY_US");

    m->delay_us = delay != NULL ? (unsigned)strtoul(delay, NULL, 10) : 0;
    atomic_store(&m->live_err, 0);
    atomic_store(&m->live, 1);
}

/* Wakes the reader that waits, once. */
static void
manifest_wake_reader(struct manifest *m)
{
    if (atomic_exchange(&m->want, 0) != 0)
        waker_wake(atomic_load(&m->waiter));
}

void
manifest_live_end(struct manifest *m, int err)
{
    atomic_store(&m->live_err, err);
    atomic_store(&m->live, 0);
    manifest_wake_reader(m);
}

/* The scan stores what it publishes before it looks at want, and the
 * reader stores want before it looks at what was published (all
 * sequentially consistent): one of the two sees the other, so the
 * wake comes from one of them. */
void
manifest_await(struct manifest *m, size_t n, struct waker *w)
{
    atomic_store(&m->waiter, w);
    atomic_store(&m->want, n + 1);
    if (atomic_load(&m->avail) > n || !atomic_load(&m->live))
        manifest_wake_reader(m);
}

int
manifest_live(const struct manifest *m, int *err)
{
    if (atomic_load(&m->live))
        return 1;
    *err = atomic_load(&m->live_err);
    return 0;
}

size_t
manifest_avail(const struct manifest *m)
{
    return atomic_load_explicit(&m->avail, memory_order_acquire);
}

uint64_t
manifest_avail_bytes(const struct manifest *m)
{
    return atomic_load_explicit(&m->avail_bytes, memory_order_relaxed);
}

size_t
manifest_notices(const struct manifest *m)
{
    return atomic_load_explicit(&m->nnotices, memory_order_acquire);
}

const struct mnotice *
manifest_notice_at(const struct manifest *m, size_t i)
{
    return stable_at(&m->notices, i);
}

void
manifest_set_filter(struct manifest *m, struct filter *f, int ignore_files)
{
    m->filter = f;
    m->ignore_files = f != NULL && ignore_files;
}

void
manifest_set_stop(struct manifest *m, const atomic_int *stop)
{
    m->stop = stop;
}

void
manifest_cleanup(struct manifest *m)
{
    size_t i, n = manifest_notices(m);

    for (i = 0; i < n; i++) {
        struct mnotice *no = stable_at(&m->notices, i);

        xfree(no->path);
        xfree(no->text);
    }
    stable_free(&m->ents);
    stable_free(&m->notices);
    stable_free(&m->sources);
    stable_free(&m->hashes);
    stable_free(&m->names);
    arena_cleanup(&m->prefixes);
    xfree(m->dirs);
    xfree(m->dirpath);
    manifest_init(m);
}

static const char *
mentry_name(const struct manifest *m, const struct mentry *e)
{
    return stable_at(&m->names, e->name);
}

const char *
manifest_target(const struct manifest *m, size_t id)
{
    const struct mentry *e = manifest_entry(m, id);
    const char *name = mentry_name(m, e);

    return (e->flags & MENTRY_TARGET) ? name + strlen(name) + 1 : NULL;
}

/* Parents come before their children, and a path is at most
 * PROTO_MAX_PATH bytes (manifest_append), so the walk up ends and the
 * path fits. */
const char *
manifest_rel(const struct manifest *m, size_t id, char *buf)
{
    const struct mentry *e = manifest_entry(m, id);
    size_t len = strlen(mentry_name(m, e)), at, nl;
    uint32_t up;

    for (up = e->parent; up != 0; up = manifest_entry(m, up - 1)->parent)
        len += 1 + strlen(mentry_name(m, manifest_entry(m, up - 1)));
    buf[len] = '\0';
    for (at = len;; e = manifest_entry(m, e->parent - 1)) {
        nl = strlen(mentry_name(m, e));
        at -= nl;
        memcpy(buf + at, mentry_name(m, e), nl);
        if (e->parent == 0)
            break;
        buf[--at] = '/';
    }
    return buf;
}

static const struct msource *
msource_at(const struct manifest *m, size_t i)
{
    return stable_at(&m->sources, i);
}

/* The source entry id was scanned from (the last one starting at or
 * before it), or NULL if none. */
static const struct msource *
manifest_source_of(const struct manifest *m, size_t id)
{
    size_t lo = 0, hi = atomic_load_explicit(&m->nsources,
        memory_order_acquire), n = hi;

    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;

        if (msource_at(m, mid)->first <= id)
            lo = mid;
        else
            hi = mid;
    }
    return lo < n && msource_at(m, lo)->first <= id ? msource_at(m, lo) :
        NULL;
}

int
manifest_local(const struct manifest *m, size_t id, char *buf, size_t cap)
{
    const struct msource *s;
    char rel[MANIFEST_REL_MAX];
    size_t rest;

    if (id >= manifest_avail(m) || (s = manifest_source_of(m, id)) == NULL ||
        s->prefix == NULL)
        return -ENOENT;
    manifest_rel(m, id, rel);
    rest = strlen(rel + s->strip);
    if (s->plen + rest >= cap)
        return -ENAMETOOLONG;
    memcpy(buf, s->prefix, s->plen);
    memcpy(buf + s->plen, rel + s->strip, rest + 1);
    return 0;
}

int
manifest_open(const struct manifest *m, size_t id, int flags)
{
    char local[MANIFEST_LOCAL_MAX];
    int r, fd;

    if ((r = manifest_local(m, id, local, sizeof(local))) != 0)
        return r;
    fd = open(local, flags);
    return fd >= 0 ? fd : -errno;
}

int
manifest_want_hashes(struct manifest *m)
{
    m->want_hashes = 1;
    return 0;
}

void
manifest_set_hash_hint(struct manifest *m, manifest_hash_hint_fn *fn,
    void *ctx)
{
    m->hint = fn;
    m->hint_ctx = ctx;
}

int
manifest_hinted_hash(const struct manifest *m, size_t id,
    struct hash128 *out)
{
    const struct mentry *e = manifest_entry(m, id);
    char rel[MANIFEST_REL_MAX];

    if (m->hint == NULL || e->kind != ENTRY_FILE)
        return FERRY_ERR_STATE;
    return m->hint(m->hint_ctx, manifest_rel(m, id, rel), e->size,
        e->mtime_sec, e->mtime_nsec, out);
}

void
manifest_set_hash(struct manifest *m, size_t id, const struct hash128 *h)
{
    struct hash128 *slot;

    if (!m->want_hashes || id >= manifest_avail(m) ||
        (slot = stable_make(&m->hashes, id)) == NULL)
        return;   /* no room: the file is hashed again if asked */
    *slot = *h;
    manifest_entry(m, id)->flags |= MENTRY_HASHED;
}

const struct hash128 *
manifest_hash(const struct manifest *m, size_t id)
{
    return id < manifest_avail(m) &&
        (manifest_entry(m, id)->flags & MENTRY_HASHED) ?
        (const struct hash128 *)stable_at(&m->hashes, id) : NULL;
}

/* Adds a source from the next entry on (local NULL: read nowhere). */
static int
manifest_source_add(struct manifest *m, const char *local, size_t plen,
    size_t strip)
{
    size_t k = atomic_load_explicit(&m->nsources, memory_order_relaxed);
    struct msource *s;

    if ((s = stable_make(&m->sources, k)) == NULL)
        return FERRY_ERR_NOMEM;
    s->first = m->n;
    s->plen = plen;
    s->strip = strip;
    s->prefix = NULL;
    if (local != NULL &&
        (s->prefix = arena_strndup(&m->prefixes, local, plen)) == NULL)
        return FERRY_ERR_NOMEM;
    /* The reader sees the source whole once it sees the count. */
    atomic_store_explicit(&m->nsources, k + 1, memory_order_release);
    return 0;
}

/* Makes the next entry, rel, read at local (NULL: nowhere): the last
 * source goes on if it reads it there, else a new one starts. Checking
 * each entry keeps manifest_local exact whatever shape a source path
 * has. */
static int
manifest_source_for(struct manifest *m, const char *rel, const char *local)
{
    size_t rl = strlen(rel), ll;
    size_t k = atomic_load_explicit(&m->nsources, memory_order_relaxed);
    const struct msource *s = k > 0 ? msource_at(m, k - 1) : NULL;

    if (local == NULL)
        return s != NULL && s->prefix == NULL ? 0 :
            manifest_source_add(m, NULL, 0, 0);
    ll = strlen(local);
    if (s != NULL && s->prefix != NULL && rl >= s->strip &&
        ll == s->plen + rl - s->strip &&
        memcmp(local, s->prefix, s->plen) == 0 &&
        memcmp(local + s->plen, rel + s->strip, rl - s->strip) == 0)
        return 0;
    /* "dir/a" read at "/p/dir/a": the prefix is "/p/"; otherwise (a file
     * renamed) the whole local path, with all of rel stripped. */
    if (ll >= rl && memcmp(local + ll - rl, rel, rl) == 0)
        return manifest_source_add(m, local, ll - rl, 0);
    return manifest_source_add(m, local, ll, rl);
}

int
manifest_notice(struct manifest *m, int code, const char *path,
    const char *text)
{
    size_t k = atomic_load_explicit(&m->nnotices, memory_order_relaxed);
    struct mnotice *nv;

    if ((nv = stable_make(&m->notices, k)) == NULL)
        return FERRY_ERR_NOMEM;
    nv->code = code;
    nv->path = xstrdup(path);
    nv->text = xstrdup(text);
    if (nv->path == NULL || nv->text == NULL) {
        xfree(nv->path);
        xfree(nv->text);
        return FERRY_ERR_NOMEM;
    }
    atomic_store_explicit(&m->nnotices, k + 1, memory_order_release);
    return 0;
}

char *
manifest_path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p;

    if (la == 0)
        return xstrdup(b);
    if ((p = xmalloc(la + 1 + lb + 1)) == NULL)
        return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

/* Stores name (len bytes) and a symlink's target (or NULL) after its NUL
 * in the name store, all in one of its chunks: *at is where. A name is at
 * most PROTO_MAX_PATH bytes and a target PROTO_MAX_LINK, so they fit. */
static int
manifest_name_put(struct manifest *m, const char *name, size_t len,
    const char *target, uint32_t *at)
{
    const size_t chunk = (size_t)1 << NAMES_SHIFT;
    size_t tl = target != NULL ? strlen(target) + 1 : 0, need = len + 1 + tl;
    size_t off = m->names_used;
    char *p;

    if ((off & (chunk - 1)) + need > chunk)
        off = (off | (chunk - 1)) + 1;
    if (off + need > m->names_max)
        return FERRY_ERR_TOO_LARGE;
    if ((p = stable_make(&m->names, off)) == NULL)
        return FERRY_ERR_NOMEM;
    memcpy(p, name, len);
    p[len] = '\0';
    if (target != NULL)
        memcpy(p + len + 1, target, tl);
    m->names_used = off + need;
    *at = (uint32_t)off;
    return 0;
}

/*
 * The entry rel's path continues: the innermost directory appended so far
 * that holds it (1 + its id), 0 if none; *skip is where rel's name starts
 * after it. Entries come depth first, so the directories that may hold
 * the next one are those on the stack of the last entry's: the rest are
 * left, and a directory appended next goes on top (manifest_dir_push).
 * A listing that leaves a directory out gives its entries a longer
 * name, never a wrong one.
 */
static uint32_t
manifest_parent(struct manifest *m, const char *rel, size_t rl, size_t *skip)
{
    while (m->ndirs > 0) {
        const struct mdir *d = &m->dirs[m->ndirs - 1];

        if (d->len < rl && rel[d->len] == '/' &&
            memcmp(m->dirpath, rel, d->len) == 0) {
            *skip = d->len + 1;
            return d->id + 1;
        }
        m->ndirs--;
    }
    *skip = 0;
    return 0;
}

/* Directory entry id, rel, may hold the entries that follow. */
static int
manifest_dir_push(struct manifest *m, uint32_t id, const char *rel,
    size_t rl)
{
    if (m->dirpath == NULL &&
        (m->dirpath = xmalloc(MANIFEST_REL_MAX)) == NULL)
        return FERRY_ERR_NOMEM;
    if (m->ndirs == m->capdirs) {
        size_t cap = m->capdirs ? 2 * m->capdirs : 16;
        struct mdir *d = xrealloc(m->dirs, cap * sizeof(*d));

        if (d == NULL)
            return FERRY_ERR_NOMEM;
        m->dirs = d;
        m->capdirs = cap;
    }
    m->dirs[m->ndirs].id = id;
    m->dirs[m->ndirs++].len = (uint32_t)rl;
    memcpy(m->dirpath, rel, rl);
    return 0;
}

/* Appends an entry: its name and target (or NULL) go into the store. */
static int
manifest_append(struct manifest *m, const char *rel, const char *target,
    const char *local, uint8_t kind, uint32_t mode, uint64_t size,
    int64_t mtime_sec, uint32_t mtime_nsec)
{
    struct mentry *e;
    size_t rl = strlen(rel), skip, want;
    uint32_t parent, name;
    int r;

    if (m->n >= MANIFEST_MAX_ENTRIES || mtime_sec > MENTRY_MTIME_MAX ||
        mtime_sec < MENTRY_MTIME_MIN)
        return FERRY_ERR_TOO_LARGE;
    if (rl == 0 || rl > PROTO_MAX_PATH)
        return FERRY_ERR_BAD_PATH;
    if ((e = stable_make(&m->ents, m->n)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = manifest_source_for(m, rel, local)) != 0)
        return r;
    parent = manifest_parent(m, rel, rl, &skip);
    if ((r = manifest_name_put(m, rel + skip, rl - skip, target,
        &name)) != 0)
        return r;
    if (kind == ENTRY_DIR &&
        (r = manifest_dir_push(m, (uint32_t)m->n, rel, rl)) != 0)
        return r;
    memset(e, 0, sizeof(*e));
    e->name = name;
    e->parent = parent;
    e->flags = target != NULL ? MENTRY_TARGET : 0;
    e->kind = kind;
    e->mode = mode & 07777;  /* checked by the decoder */
    e->size = kind == ENTRY_FILE ? size : 0;
    e->mtime_sec = mtime_sec;
    e->mtime_nsec = mtime_nsec;
    m->n++;
    if (kind == ENTRY_FILE) {
        m->files++;
        m->bytes += size;
    }
    /* Published: a reader on another thread may look at it now. */
    atomic_store_explicit(&m->avail_bytes, m->bytes, memory_order_relaxed);
    atomic_store(&m->avail, m->n);
    want = atomic_load(&m->want);
    if (want != 0 && m->n >= want)
        manifest_wake_reader(m);
    return 0;
}

int
manifest_add_listed(struct manifest *m, const char *rel, uint8_t kind,
    uint32_t mode, uint64_t size, int64_t mtime_sec, uint32_t mtime_nsec)
{
    return manifest_append(m, rel, NULL, NULL, kind, mode, size,
        mtime_sec, mtime_nsec);
}

/* Appends an entry the walk found. */
static int
manifest_add(void *ctx, const char *rel, const char *local,
    const struct stat *st, const char *target)
{
    struct manifest *m = ctx;

    if (m->stop != NULL && atomic_load(m->stop))
        return FERRY_ERR_INTERRUPTED;
    if (m->delay_us > 0 && m->n >= 100)
        usleep(m->delay_us);
    if (st->st_mtim.tv_sec > MENTRY_MTIME_MAX ||
        st->st_mtim.tv_sec < MENTRY_MTIME_MIN) {
        int r = manifest_notice(m, FERRY_ERR_UNSUPPORTED, local,
            "modification time out of range");

        return r != 0 ? r : 1;
    }
    return manifest_append(m, rel, target, local,
        S_ISREG(st->st_mode) ? ENTRY_FILE : S_ISDIR(st->st_mode) ? ENTRY_DIR :
        ENTRY_SYMLINK, st->st_mode & 07777,
        S_ISREG(st->st_mode) ? (uint64_t)st->st_size : 0,
        st->st_mtim.tv_sec, (uint32_t)st->st_mtim.tv_nsec);
}

static int
manifest_walk_notice(void *ctx, int code, const char *path, const char *text)
{
    return manifest_notice(ctx, code, path, text);
}

/* Adds the rules of the ignore file at the root of source src (local,
 * contents as manifest_source says), if there is one. Returns 0, 1 if
 * the source must not be sent (a notice says why), or an error. */
static int
manifest_ignore_file(struct manifest *m, const char *src, const char *local,
    int contents)
{
    char *file, *dir = NULL, *base = NULL, text[160];
    struct stat st;
    unsigned line = 0;
    int r;

    if (lstat(local, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0;
    if ((file = manifest_path_join(local, FILTER_IGNORE_FILE)) == NULL)
        return FERRY_ERR_NOMEM;
    if (lstat(file, &st) != 0) {
        xfree(file);
        return 0;
    }
    if (!contents && (r = fsx_split(local, &dir, &base)) != 0)
        goto out;
    r = filter_add_file(m->filter, file, FILTER_EXCLUDE, 1, base, &line);
    if (r != 0 && r != FERRY_ERR_NOMEM) {
        if (line > 0)
            snprintf(text, sizeof(text), "line %u: %s; %s not sent", line,
                ferry_strerror(r), src);
        else
            snprintf(text, sizeof(text), "%s; %s not sent",
                ferry_strerror(r), src);
        r = manifest_notice(m, r, file, text);
        if (r == 0)
            r = 1;
    }
out:
    xfree(dir);
    xfree(base);
    xfree(file);
    return r;
}

int
manifest_scan(struct manifest *m, const char *src)
{
    struct par_pool *pool = NULL;
    struct manifest_walker w = { manifest_add, manifest_walk_notice, m,
        m->filter, &pool };
    size_t before = m->n;
    char *local = NULL;
    struct stat st;
    int r, contents;

    if (m->ignore_files) {
        if ((r = manifest_source(src, &local, &contents)) != 0)
            return r;
        r = manifest_ignore_file(m, src, local, contents);
        xfree(local);
        local = NULL;
        if (r != 0)
            return r == 1 ? 0 : r;
    }
    r = manifest_walk(src, &w);
    par_pool_free(pool);
    if (r != 0)
        return r;
    /* A directory's contents count as one top-level source; otherwise
     * the source is a top-level entry if it could be sent. */
    if ((r = manifest_source(src, &local, &contents)) != 0)
        return r;
    if (contents && stat(local, &st) == 0 && S_ISDIR(st.st_mode)) {
        m->ntop++;
        m->contents = 1;
    } else if (m->n > before) {
        m->ntop++;
    }
    xfree(local);
    return 0;
}

int
manifest_scan_contents(struct manifest *m, const char *dir)
{
    size_t n = strlen(dir);
    char *p;
    int r;

    if ((p = xmalloc(n + 2)) == NULL)
        return FERRY_ERR_NOMEM;
    memcpy(p, dir, n);
    memcpy(p + n, "/", 2);
    r = manifest_scan(m, p);
    xfree(p);
    return r;
}

int
manifest_single_file(const struct manifest *m)
{
    return m->ntop == 1 && !m->contents && m->n == 1 &&
        manifest_entry(m, 0)->kind != ENTRY_DIR;
}

int
manifest_rename_top(struct manifest *m, const char *name)
{
    char local[MANIFEST_LOCAL_MAX];
    struct mentry *e;
    struct msource *s;
    uint32_t at;
    int r;

    if (m->n != 1 || (e = manifest_entry(m, 0))->kind == ENTRY_DIR)
        return FERRY_ERR_USAGE;
    if (strlen(name) == 0 || strlen(name) > PROTO_MAX_PATH)
        return FERRY_ERR_BAD_PATH;
    /* The one entry has the one source; the new name reads from where the
     * old one did: all of it stripped. */
    s = (struct msource *)manifest_source_of(m, 0);
    if (s->prefix != NULL) {
        if ((r = manifest_local(m, 0, local, sizeof(local))) != 0)
            return r;
        if ((s->prefix = arena_strndup(&m->prefixes, local,
            strlen(local))) == NULL)
            return FERRY_ERR_NOMEM;
        s->plen = strlen(local);
        s->strip = strlen(name);
    }
    if ((r = manifest_name_put(m, name, strlen(name), manifest_target(m, 0),
        &at)) != 0)
        return r;
    e->name = at;
    e->parent = 0;
    return 0;
}
