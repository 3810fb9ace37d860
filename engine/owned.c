/* owned.c: what ferry put at the top of a destination (owned.h). */
#include "owned.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/hash.h"
#include "../common/rd.h"
#include "dest.h"

/* Magic, version, count; and an entry without its name's bytes. */
#define OWNED_HEAD 9u
#define OWNED_ENTRY_FIXED 60u
#define OWNED_TMP OWNED_FILE ".tmp"
/* Times .ferry is opened again when a transfer that ended removed it
 * while we waited for its lock. */
#define OWNED_OPEN_TRIES 8

void
owned_init(struct owned *o)
{
    memset(o, 0, sizeof(*o));
    o->bytes = OWNED_HEAD + HASH_LEN;
    o->statefd = -1;
}

static void
owned_clear(struct owned *o)
{
    size_t i;

    for (i = 0; i < o->n; i++)
        xfree(o->v[i].name);
    xfree(o->v);
    o->v = NULL;
    o->n = o->cap = 0;
    o->bytes = OWNED_HEAD + HASH_LEN;
}

void
owned_cleanup(struct owned *o)
{
    owned_clear(o);
    if (o->statefd >= 0)
        close(o->statefd);  /* lets go of the flock */
    o->statefd = -1;
}

/* One component, not .ferry: a name directly in the destination. */
static int
owned_name_ok(const char *s, size_t len)
{
    if (fsx_path_check(s, len) != 0 || memchr(s, '/', len) != NULL ||
        (len == strlen(DEST_STATE_DIR) &&
        memcmp(s, DEST_STATE_DIR, len) == 0))
        return FERRY_ERR_BAD_PATH;
    return 0;
}

/* Where name is, or would go, in o->v; *found set when it is there. */
static size_t
owned_pos(const struct owned *o, const char *name, int *found)
{
    size_t lo = 0, hi = o->n;

    *found = 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(o->v[mid].name, name);

        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

const struct owned_entry *
owned_find(const struct owned *o, const char *name)
{
    int found;
    size_t i = owned_pos(o, name, &found);

    return found ? &o->v[i] : NULL;
}

/* Inserts at i, taking name; o->bytes is the caller's. */
static int
owned_insert(struct owned *o, size_t i, char *name, const struct owned_id *id,
    int64_t order_sec, uint32_t order_nsec)
{
    struct owned_entry *nv;

    if ((nv = xgrow(o->v, o->n, &o->cap, sizeof(*nv), 16)) == NULL)
        return FERRY_ERR_NOMEM;
    o->v = nv;
    memmove(&o->v[i + 1], &o->v[i], (o->n - i) * sizeof(*nv));
    o->v[i].name = name;
    o->v[i].id = *id;
    o->v[i].order_sec = order_sec;
    o->v[i].order_nsec = order_nsec;
    o->n++;
    return 0;
}

int
owned_put(struct owned *o, const char *name, const struct owned_id *id,
    int64_t order_sec, uint32_t order_nsec)
{
    size_t len = strlen(name), i, add = OWNED_ENTRY_FIXED + len;
    char *copy;
    int found, r;

    if (owned_name_ok(name, len) != 0)
        return FERRY_ERR_BAD_PATH;
    i = owned_pos(o, name, &found);
    if (found) {
        o->v[i].id = *id;
        o->v[i].order_sec = order_sec;
        o->v[i].order_nsec = order_nsec;
        o->dirty = 1;
        return 0;
    }
    if (o->n >= OWNED_MAX_ENTRIES || o->bytes > OWNED_MAX_BYTES - add)
        return FERRY_ERR_TOO_LARGE;
    if ((copy = xstrdup(name)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = owned_insert(o, i, copy, id, order_sec, order_nsec)) != 0) {
        xfree(copy);
        return r;
    }
    o->bytes += add;
    o->dirty = 1;
    return 0;
}

void
owned_drop(struct owned *o, const char *name)
{
    int found;
    size_t i = owned_pos(o, name, &found);

    if (!found)
        return;
    o->bytes -= OWNED_ENTRY_FIXED + strlen(o->v[i].name);
    xfree(o->v[i].name);
    memmove(&o->v[i], &o->v[i + 1], (o->n - i - 1) * sizeof(o->v[0]));
    o->n--;
    o->dirty = 1;
}

/* The record's bytes */

int
owned_encode(const struct owned *o, struct buf *b)
{
    struct hash128 h;
    size_t start = buf_used(b), i;
    int r;

    r = buf_put(b, OWNED_MAGIC, 4);
    if (r == 0)
        r = buf_put_u8(b, OWNED_VERSION);
    if (r == 0)
        r = buf_put_u32(b, (uint32_t)o->n);
    for (i = 0; r == 0 && i < o->n; i++) {
        const struct owned_entry *e = &o->v[i];

        if ((r = buf_put_u8(b, e->id.type)) != 0 ||
            (r = buf_put_u8(b, e->id.flags)) != 0 ||
            (r = buf_put_u64(b, e->id.ino)) != 0 ||
            (r = buf_put_u64(b, e->id.size)) != 0 ||
            (r = buf_put_u64(b, e->id.count)) != 0 ||
            (r = buf_put_u64(b, e->id.tree)) != 0 ||
            (r = buf_put_u64(b, (uint64_t)e->id.mtime_sec)) != 0 ||
            (r = buf_put_u32(b, e->id.mtime_nsec)) != 0 ||
            (r = buf_put_u64(b, (uint64_t)e->order_sec)) != 0 ||
            (r = buf_put_u32(b, e->order_nsec)) != 0)
            break;
        r = buf_put_str16(b, e->name, strlen(e->name));
    }
    if (r != 0)
        return r;
    hash_block(buf_ptr(b) + start, buf_used(b) - start, &h);
    return buf_put(b, h.b, HASH_LEN);
}

/* One entry's fields from r, checked. */
static int
owned_decode_entry(struct rd *r, struct owned_entry *e, const uint8_t **name,
    size_t *len)
{
    uint64_t msec, osec;
    int err;

    if ((err = rd_u8(r, &e->id.type)) != 0 ||
        (err = rd_u8(r, &e->id.flags)) != 0 ||
        (err = rd_u64(r, &e->id.ino)) != 0 ||
        (err = rd_u64(r, &e->id.size)) != 0 ||
        (err = rd_u64(r, &e->id.count)) != 0 ||
        (err = rd_u64(r, &e->id.tree)) != 0 ||
        (err = rd_u64(r, &msec)) != 0 ||
        (err = rd_u32(r, &e->id.mtime_nsec)) != 0 ||
        (err = rd_u64(r, &osec)) != 0 ||
        (err = rd_u32(r, &e->order_nsec)) != 0 ||
        (err = rd_str16(r, FSX_NAME_MAX, name, len)) != 0)
        return err;
    e->id.mtime_sec = (int64_t)msec;
    e->order_sec = (int64_t)osec;
    if (e->id.type < OWNED_REG || e->id.type > OWNED_LINK ||
        (e->id.flags & ~OWNED_F_KNOWN) != 0 ||
        e->id.mtime_nsec >= 1000000000u || e->order_nsec >= 1000000000u)
        return FERRY_ERR_FORMAT;
    return owned_name_ok((const char *)*name, *len) != 0 ?
        FERRY_ERR_FORMAT : 0;
}

int
owned_decode(struct owned *o, const uint8_t *p, size_t n)
{
    struct owned_entry e;
    struct hash128 h;
    const uint8_t *magic, *name, *prev = NULL, *sum;
    size_t len, plen = 0;
    uint32_t count, i;
    uint8_t version;
    struct rd r;
    char *copy;
    int err;

    if (n > OWNED_MAX_BYTES)
        return FERRY_ERR_TOO_LARGE;
    if (n < OWNED_HEAD + HASH_LEN)
        return FERRY_ERR_SHORT;
    rd_init(&r, p, n - HASH_LEN);
    if ((err = rd_bytes(&r, 4, &magic)) != 0 ||
        (err = rd_u8(&r, &version)) != 0 ||
        (err = rd_u32(&r, &count)) != 0)
        goto fail;
    if (memcmp(magic, OWNED_MAGIC, 4) != 0 || version != OWNED_VERSION) {
        err = FERRY_ERR_FORMAT;
        goto fail;
    }
    if (count > OWNED_MAX_ENTRIES) {
        err = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    for (i = 0; i < count; i++) {
        memset(&e, 0, sizeof(e));
        if ((err = owned_decode_entry(&r, &e, &name, &len)) != 0)
            goto fail;
        /* Strictly increasing (bytes, as strcmp orders them): each name
         * once, and the lookups' order as it stands. */
        if (prev != NULL) {
            int c = memcmp(prev, name, plen < len ? plen : len);

            if (c > 0 || (c == 0 && plen >= len)) {
                err = FERRY_ERR_FORMAT;
                goto fail;
            }
        }
        prev = name;
        plen = len;
        if ((copy = xstrndup((const char *)name, len)) == NULL ||
            (err = owned_insert(o, o->n, copy, &e.id, e.order_sec,
            e.order_nsec)) != 0) {
            xfree(copy);
            err = FERRY_ERR_NOMEM;
            goto fail;
        }
        o->bytes += OWNED_ENTRY_FIXED + len;
    }
    if ((err = rd_end(&r)) != 0)
        goto fail;
    sum = p + n - HASH_LEN;
    hash_block(p, n - HASH_LEN, &h);
    if (memcmp(h.b, sum, HASH_LEN) != 0) {
        err = FERRY_ERR_HASH_MISMATCH;
        goto fail;
    }
    return 0;
fail:
    owned_clear(o);
    return err;
}

/* What is there now */

/* Adds one entry beneath a directory being identified to its digest:
 * where it is (its directory's inode, its name) and what it is. A sum,
 * so the order readdir gives does not matter. */
static void
owned_digest(struct owned_id *id, const struct stat *dir, const char *name,
    const struct stat *st)
{
    uint8_t b[6 * 8 + FSX_NAME_MAX];
    uint64_t v[6] = { (uint64_t)dir->st_ino, (uint64_t)st->st_ino,
        (uint64_t)st->st_mode, (uint64_t)st->st_size,
        (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec };
    size_t nl = strnlen(name, FSX_NAME_MAX), i, k;
    struct hash128 h;
    uint64_t x = 0;

    for (i = 0; i < 6; i++)
        for (k = 0; k < 8; k++)
            b[i * 8 + k] = (uint8_t)(v[i] >> (8 * k));
    memcpy(b + 6 * 8, name, nl);
    hash_block(b, 6 * 8 + nl, &h);
    for (k = 0; k < 8; k++)
        x = x << 8 | h.b[k];
    id->tree += x;
}

struct owned_walk {
    struct owned_id *id;
    int depth;
};

/* Adds one entry beneath a directory being identified, and what it
 * holds. */
static int
owned_entry(void *ctx, int dirfd, const struct stat *dir, const char *name,
    const struct stat *st)
{
    struct owned_walk *w = ctx, sub = { w->id, w->depth + 1 };
    struct owned_id *id = w->id;

    id->count++;
    if (S_ISREG(st->st_mode))
        id->size = (uint64_t)st->st_size > UINT64_MAX - id->size ?
            UINT64_MAX : id->size + (uint64_t)st->st_size;
    owned_digest(id, dir, name, st);
    if (!S_ISDIR(st->st_mode))
        return 0;
    if (sub.depth > OWNED_MAX_DEPTH)
        return FERRY_ERR_TOO_LARGE;
    return fsx_dir_each(dirfd, name, owned_entry, &sub);
}

int
owned_identify(int dirfd, const char *name, uint8_t flags,
    struct owned_id *id)
{
    struct stat st;

    memset(id, 0, sizeof(*id));
    id->flags = flags;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -errno;
    id->ino = st.st_ino;
    if (S_ISREG(st.st_mode))
        id->type = OWNED_REG;
    else if (S_ISDIR(st.st_mode))
        id->type = OWNED_DIR;
    else if (S_ISLNK(st.st_mode))
        id->type = OWNED_LINK;
    else
        return FERRY_ERR_EXISTS;
    if (flags & OWNED_F_STAGING)
        return 0;
    id->mtime_sec = st.st_mtim.tv_sec;
    id->mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
    if (id->type != OWNED_DIR) {
        id->size = (uint64_t)st.st_size;
        return 0;
    }
    return fsx_dir_each(dirfd, name, owned_entry,
        &(struct owned_walk){ id, 1 });
}

int
owned_check(const struct owned *o, int dirfd, const char *name)
{
    const struct owned_entry *e = owned_find(o, name);
    struct owned_id now;
    struct stat st;
    int r;

    if (e == NULL)
        return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 &&
            errno == ENOENT ? OWNED_GONE : OWNED_NO;
    if ((r = owned_identify(dirfd, name, e->id.flags, &now)) == -ENOENT)
        return OWNED_GONE;
    return r == 0 && now.type == e->id.type && now.ino == e->id.ino &&
        now.size == e->id.size && now.count == e->id.count &&
        now.tree == e->id.tree &&
        now.mtime_sec == e->id.mtime_sec &&
        now.mtime_nsec == e->id.mtime_nsec ? OWNED_YES : OWNED_NO;
}

/* On disk */

/* Reads the record beneath statefd into o; a record that is not ours or
 * does not decode leaves o empty and damaged. */
static int
owned_read(struct owned *o)
{
    struct stat st;
    uint8_t *p = NULL;
    size_t got;
    int fd, r;

    fd = openat(o->statefd, OWNED_FILE, FSX_O_READ);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        o->damaged = 1;
        return 0;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & 022) != 0 ||
        (uint64_t)st.st_size > OWNED_MAX_BYTES) {
        o->damaged = 1;
        close(fd);
        return 0;
    }
    if ((p = xmalloc((size_t)st.st_size + 1)) == NULL) {
        close(fd);
        return FERRY_ERR_NOMEM;
    }
    r = fsx_pread_full(fd, p, (size_t)st.st_size, 0, &got);
    close(fd);
    if (r != 0 || got != (size_t)st.st_size ||
        (r = owned_decode(o, p, got)) != 0) {
        o->damaged = r != FERRY_ERR_NOMEM;
        r = r == FERRY_ERR_NOMEM ? r : 0;
    }
    xfree(p);
    return r;
}

int
owned_open(struct owned *o, int rootfd, int create)
{
    struct stat st;
    int fd, r, tries;

    for (tries = 0;; tries++) {
        r = fsx_open_private_dir(rootfd, DEST_STATE_DIR, create, &fd);
        if (r == -ENOENT && !create)
            return 0;
        if (r != 0)
            return r;
        while (flock(fd, LOCK_EX) != 0)
            if (errno != EINTR) {
                r = -errno;
                close(fd);
                return r;
            }
        /* A transfer that ended removed .ferry as we waited: what we
         * write there would go nowhere. */
        if (fstat(fd, &st) == 0 && st.st_nlink == 0 &&
            tries + 1 < OWNED_OPEN_TRIES) {
            close(fd);
            continue;
        }
        break;
    }
    o->statefd = fd;
    return owned_read(o);
}

int
owned_save(struct owned *o)
{
    struct buf b;
    int fd, r;

    if (!o->dirty)
        return 0;
    if (o->statefd < 0)
        return o->n == 0 ? 0 : -EBADF;
    if (o->n == 0) {
        /* Nothing to keep: no record, so .ferry can go with the rest. */
        if (unlinkat(o->statefd, OWNED_FILE, 0) != 0 && errno != ENOENT)
            return -errno;
        o->dirty = 0;
        return 0;
    }
    /* The marker that has a scan of this tree skip .ferry. */
    fd = openat(o->statefd, DEST_MARKER, O_WRONLY | O_CREAT | O_NOFOLLOW |
        O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    buf_init(&b, OWNED_MAX_BYTES);
    if ((r = owned_encode(o, &b)) != 0)
        goto out;
    /* We hold the lock: a temporary file there is a dead writer's. */
    if (unlinkat(o->statefd, OWNED_TMP, 0) != 0 && errno != ENOENT) {
        r = -errno;
        goto out;
    }
    fd = openat(o->statefd, OWNED_TMP, O_WRONLY | O_CREAT | O_EXCL |
        O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        r = -errno;
        goto out;
    }
    r = fsx_write_all(fd, buf_ptr(&b), buf_used(&b));
    if (r == 0)
        r = fsx_fsync(fd);
    if (close(fd) != 0 && r == 0)
        r = -errno;
    if (r == 0 && renameat(o->statefd, OWNED_TMP, o->statefd,
        OWNED_FILE) != 0)
        r = -errno;
    if (r != 0)
        (void)unlinkat(o->statefd, OWNED_TMP, 0);
    else if ((r = fsx_fsync(o->statefd)) == 0)
        o->dirty = 0;
out:
    buf_cleanup(&b);
    return r;
}
