#include "partial.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../proto/limits.h"

/* Biggest journal header we read: fixed fields plus the longest path. */
#define PARTIAL_HEADER_MAX (JOURNAL_HEADER_FIXED + PROTO_MAX_PATH)
#define PARTIAL_NAME_MAX 32

struct partial {
    int fd;             /* part file */
    int jfd;            /* journal, -1 for a light partial */
    char part[PARTIAL_NAME_MAX];  /* the part file's name */
    char jnl[PARTIAL_NAME_MAX];
    uint32_t block_size;
    uint64_t jlen;      /* journal bytes written (appends go here) */
    uint64_t unsynced;  /* data bytes written since the last sync */
    uint64_t unkicked;  /* ... since writeback was last started */
    uint64_t synced_ms; /* when the journal was last synced */
    struct buf pending; /* encoded records waiting for the sync */
};

void
partial_key(const uint8_t salt[16], const char *path,
    char key[PARTIAL_KEY_LEN + 1])
{
    size_t n = strlen(path);
    struct hash128 h;
    uint8_t *tmp = xmalloc(16 + n);
    char hex[2 * HASH_LEN + 1];

    /* The salt is secret to the destination, so nobody can compute two
     * names that collide; the caller still checks that no two files of
     * one transfer share a key. Without memory, fall back to no salt. */
    if (tmp != NULL) {
        memcpy(tmp, salt, 16);
        memcpy(tmp + 16, path, n);
        hash_block(tmp, 16 + n, &h);
        xfree(tmp);
    } else {
        hash_block(path, n, &h);
    }
    hash_hex(&h, hex);
    memcpy(key, hex, PARTIAL_KEY_LEN);
    key[PARTIAL_KEY_LEN] = '\0';
}

static void
partial_names(const char *key, int light, char part[PARTIAL_NAME_MAX],
    char jnl[PARTIAL_NAME_MAX])
{
    snprintf(part, PARTIAL_NAME_MAX, "%s.%s", key, light ? "tmp" : "part");
    snprintf(jnl, PARTIAL_NAME_MAX, "%s.jnl", key);
}

/*
 * Opens name beneath dirfd for reading and writing only if it is a
 * regular file owned by us with a single link: never a FIFO (O_NONBLOCK
 * keeps the open itself from hanging), a symlink, or a hard link to a
 * file elsewhere. Returns the fd, or -1 with errno set.
 */
static int
partial_open_ours(int dirfd, const char *name, int flags)
{
    struct stat st;
    int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK |
        O_CLOEXEC);

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
        st.st_uid != geteuid()) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* A new, empty file of ours under name: whatever had the name goes
 * first, and O_EXCL makes sure nothing slipped in between. */
static int
partial_create(int dirfd, const char *name)
{
    int fd;

    if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
        return -1;
    fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
        O_CLOEXEC, 0600);
    return fd;
}

static int
partial_same(const struct journal_header *h, const struct partial_id *id)
{
    return h->block_size == id->block_size && h->size == id->size &&
        h->mtime_sec == id->mtime_sec && h->mtime_nsec == id->mtime_nsec &&
        h->path_len == strlen(id->path) &&
        memcmp(h->path, id->path, h->path_len) == 0;
}

/* Reads the header of an open journal. */
static int
partial_read_header(int jfd, uint8_t *buf, struct journal_header *h,
    size_t *used)
{
    size_t got;
    int r;

    if ((r = fsx_pread_full(jfd, buf, PARTIAL_HEADER_MAX, 0, &got)) != 0)
        return r;
    return journal_header_decode(buf, got, h, used);
}

struct partial_rec {
    uint64_t index, seq;
    struct hash128 hash;
};

static int
partial_rec_cmp(const void *a, const void *b)
{
    const struct partial_rec *x = a, *y = b;

    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Reads the records after the header: each names a block below nblocks;
 * a torn or out-of-range record ends the journal there. Fills out with
 * the blocks, the last record of each winning.
 */
static int
partial_read_records(int jfd, uint64_t off, uint64_t nblocks,
    struct partial_claim *out)
{
    uint8_t rec[JOURNAL_RECORD_LEN * 256];
    struct journal_record jr;
    struct partial_rec *v = NULL, *nv;
    uint64_t max = nblocks * PARTIAL_MAX_RECORDS_PER_BLOCK, n = 0, i, k;
    size_t cap = 0, got, j;
    int r = 0, torn = 0;

    out->journal_len = off;
    while (!torn) {
        if (fsx_pread_full(jfd, rec, sizeof(rec), off, &got) != 0 ||
            got < JOURNAL_RECORD_LEN)
            break;
        for (j = 0; j + JOURNAL_RECORD_LEN <= got; j += JOURNAL_RECORD_LEN) {
            if (journal_record_decode(rec + j, JOURNAL_RECORD_LEN,
                &jr) != 0 || jr.index >= nblocks || n >= max) {
                torn = 1;
                break;
            }
            if ((nv = xgrow(v, n, &cap, sizeof(*v), 256)) == NULL) {
                r = FERRY_ERR_NOMEM;
                goto out;
            }
            v = nv;
            v[n].index = jr.index;
            v[n].seq = n;
            v[n].hash = jr.hash;
            n++;
            off += JOURNAL_RECORD_LEN;
        }
    }
    out->journal_len = off;
    if (n == 0)
        goto out;
    qsort(v, n, sizeof(*v), partial_rec_cmp);
    if ((out->index = xcalloc(n, sizeof(*out->index))) == NULL ||
        (out->hash = xcalloc(n, sizeof(*out->hash))) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto out;
    }
    for (i = 0, k = 0; i < n; i++) {
        if (i + 1 < n && v[i + 1].index == v[i].index)
            continue;  /* a later record of the same block wins */
        out->index[k] = v[i].index;
        out->hash[k] = v[i].hash;
        k++;
    }
    out->n = k;
out:
    xfree(v);
    return r;
}

void
partial_claim_free(struct partial_claim *c)
{
    xfree(c->index);
    xfree(c->hash);
    memset(c, 0, sizeof(*c));
}

int
partial_probe(int partfd, const char *key, const struct partial_id *id,
    struct partial_claim *out)
{
    struct journal_header h;
    char part[PARTIAL_NAME_MAX], jnl[PARTIAL_NAME_MAX];
    uint8_t *hdr = NULL;
    size_t used;
    int pfd = -1, jfd = -1, r = 0, e;

    memset(out, 0, sizeof(*out));
    if (id->size < PARTIAL_JOURNAL_MIN)
        return 0;
    partial_names(key, 0, part, jnl);
    if ((jfd = partial_open_ours(partfd, jnl, O_RDONLY)) < 0 ||
        (pfd = partial_open_ours(partfd, part, O_RDONLY)) < 0)
        goto out;
    if ((hdr = xmalloc(PARTIAL_HEADER_MAX)) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto out;
    }
    if ((e = partial_read_header(jfd, hdr, &h, &used)) != 0) {
        out->old_format = e == FERRY_ERR_VERSION;
        goto out;
    }
    if (!partial_same(&h, id))
        goto out;
    r = partial_read_records(jfd, used, (id->size + id->block_size - 1) /
        id->block_size, out);
    if (r != 0)
        partial_claim_free(out);
out:
    xfree(hdr);
    if (jfd >= 0)
        close(jfd);
    if (pfd >= 0)
        close(pfd);
    return r;
}

/* Encodes the header and makes it the journal's only content. */
static int
partial_write_header(struct partial *p, const struct partial_id *id)
{
    struct journal_header h;
    struct buf b;
    int r;

    memset(&h, 0, sizeof(h));
    h.block_size = id->block_size;
    h.size = id->size;
    h.mtime_sec = id->mtime_sec;
    h.mtime_nsec = id->mtime_nsec;
    h.mode = id->mode & 07777;
    h.path = id->path;
    h.path_len = strlen(id->path);
    buf_init(&b, PARTIAL_HEADER_MAX);
    if ((r = journal_header_encode(&b, &h)) == 0)
        r = fsx_pwrite_all(p->jfd, buf_ptr(&b), buf_used(&b), 0);
    p->jlen = buf_used(&b);
    buf_cleanup(&b);
    return r;
}

int
partial_open(int partfd, const char *key, const struct partial_id *id,
    const struct partial_claim *keep, struct partial **out)
{
    struct partial *p;
    int r = 0, light = id->size < PARTIAL_JOURNAL_MIN;
    int resume = !light && keep != NULL && keep->n > 0;

    *out = NULL;
    if ((p = xcalloc(1, sizeof(*p))) == NULL)
        return FERRY_ERR_NOMEM;
    p->fd = p->jfd = -1;
    p->block_size = id->block_size;
    buf_init(&p->pending, JOURNAL_RECORD_LEN * (PARTIAL_SYNC_BYTES /
        PROTO_MIN_BLOCK + 16));
    partial_names(key, light, p->part, p->jnl);
    if (resume) {
        if ((p->fd = partial_open_ours(partfd, p->part, O_RDWR)) < 0 ||
            (p->jfd = partial_open_ours(partfd, p->jnl, O_RDWR)) < 0)
            goto fail_errno;
        /* Appends line up after the last whole record. */
        if (ftruncate(p->jfd, (off_t)keep->journal_len) != 0)
            goto fail_errno;
        p->jlen = keep->journal_len;
    } else {
        if ((p->fd = partial_create(partfd, p->part)) < 0)
            goto fail_errno;
        if (!light) {
            if ((p->jfd = partial_create(partfd, p->jnl)) < 0)
                goto fail_errno;
            if ((r = partial_write_header(p, id)) != 0)
                goto fail;
        }
    }
    /* The part file's length is the file's from the start: blocks land
     * anywhere, and what was never written reads as a hole. */
    if (ftruncate(p->fd, (off_t)id->size) != 0)
        goto fail_errno;
    p->synced_ms = clock_ms();
    *out = p;
    return 0;
fail_errno:
    r = errno == EPERM ? FERRY_ERR_STATE : -errno;
fail:
    partial_close(p, partfd, resume ? PARTIAL_KEEP : PARTIAL_DISCARD);
    return r;
}

int
partial_fd(const struct partial *p)
{
    return p->fd;
}

int
partial_read_block(struct partial *p, uint64_t index, size_t len,
    uint8_t *buf, struct hash128 *out)
{
    size_t got;
    int r;

    if ((r = fsx_pread_full(p->fd, buf, len, index * p->block_size,
        &got)) != 0)
        return r;
    if (got < len)
        memset(buf + got, 0, len - got);
    hash_block(buf, len, out);
    return 0;
}

int
partial_zero(struct partial *p, uint64_t off, size_t len)
{
    static const uint8_t zeros[64 << 10];

#ifdef FALLOC_FL_PUNCH_HOLE
    if (fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
        (off_t)off, (off_t)len) == 0)
        return 0;
#endif
    while (len > 0) {
        size_t k = len < sizeof(zeros) ? len : sizeof(zeros);
        int r = fsx_pwrite_all(p->fd, zeros, k, off);

        if (r != 0)
            return r;
        off += k;
        len -= k;
    }
    return 0;
}

int
partial_sync(struct partial *p)
{
    int r;

    if (p->jfd < 0 || buf_used(&p->pending) == 0)
        return 0;
    if ((r = fsx_fdatasync(p->fd)) != 0)
        return r;
    if ((r = fsx_pwrite_all(p->jfd, buf_ptr(&p->pending),
        buf_used(&p->pending), p->jlen)) != 0)
        return r;
    p->jlen += buf_used(&p->pending);
    buf_reset(&p->pending);
    p->unsynced = 0;
    p->synced_ms = clock_ms();
    return 0;
}

int
partial_add(struct partial *p, uint64_t index, const struct hash128 *h,
    size_t n)
{
    struct journal_record jr;
    int r;

    if (p->jfd < 0)
        return 0;
    jr.index = index;
    jr.hash = *h;
    if ((r = journal_record_encode(&p->pending, &jr)) ==
        FERRY_ERR_TOO_LARGE) {
        if ((r = partial_sync(p)) != 0)
            return r;
        r = journal_record_encode(&p->pending, &jr);
    }
    if (r != 0)
        return r;
    p->unsynced += n;
#ifdef SYNC_FILE_RANGE_WRITE
    /* The disk starts on what came while more arrives, so that the next
     * sync finds little left to write: a sync of 64 MiB written at once
     * holds this stream's receiving for a tenth of a second. */
    if ((p->unkicked += n) >= PARTIAL_KICK_BYTES) {
        (void)sync_file_range(p->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        p->unkicked = 0;
    }
#endif
    if (p->unsynced >= PARTIAL_SYNC_BYTES ||
        clock_ms() - p->synced_ms >= PARTIAL_SYNC_MS)
        return partial_sync(p);
    return 0;
}

const char *
partial_name(const struct partial *p)
{
    return p->part;
}

void
partial_close(struct partial *p, int partfd, enum partial_end how)
{
    if (p == NULL)
        return;
    if (p->jfd < 0 && how == PARTIAL_KEEP)
        how = PARTIAL_DISCARD;  /* nothing to resume from */
    if (how == PARTIAL_KEEP && p->fd >= 0 && partial_sync(p) != 0) {
        /* Unsynced blocks are simply not claimed; they are sent again. */
    }
    if (how == PARTIAL_DISCARD && p->fd >= 0)
        (void)unlinkat(partfd, p->part, 0);
    if (how != PARTIAL_KEEP && p->jfd >= 0)
        (void)unlinkat(partfd, p->jnl, 0);
    if (p->fd >= 0)
        close(p->fd);
    if (p->jfd >= 0)
        close(p->jfd);
    buf_cleanup(&p->pending);
    xfree(p);
}

int
partial_list_add(struct partial_info **v, size_t *n, size_t *cap,
    const char *path, size_t path_len, uint64_t size, uint64_t done,
    int64_t age_s)
{
    struct partial_info *nv;

    if ((nv = xgrow(*v, *n, cap, sizeof(*nv), 16)) == NULL)
        return FERRY_ERR_NOMEM;
    *v = nv;
    nv = &(*v)[*n];
    if ((nv->path = xstrndup(path, path_len)) == NULL)
        return FERRY_ERR_NOMEM;
    nv->size = size;
    nv->done = done > size ? size : done;
    nv->age_s = age_s;
    (*n)++;
    return 0;
}

/* One journal found by partial_list: listed, or removed when expired or
 * of the old format (expire only). */
static int
partial_list_one(int partfd, const char *name, int expire, uint8_t *hdr,
    struct partial_info **v, size_t *n, size_t *cap)
{
    char part[PARTIAL_NAME_MAX], jnl[PARTIAL_NAME_MAX], key[PARTIAL_KEY_LEN + 1];
    struct partial_claim c;
    struct journal_header h;
    struct partial_id id;
    char path[PROTO_MAX_PATH + 1];
    struct stat st;
    size_t used;
    int64_t age;
    int jfd, e, r;

    memcpy(key, name, PARTIAL_KEY_LEN);
    key[PARTIAL_KEY_LEN] = '\0';
    partial_names(key, 0, part, jnl);
    if ((jfd = partial_open_ours(partfd, jnl, O_RDONLY)) < 0)
        return 0;
    if (fstat(jfd, &st) != 0) {
        close(jfd);
        return 0;
    }
    e = partial_read_header(jfd, hdr, &h, &used);
    close(jfd);
    age = (int64_t)time(NULL) - st.st_mtim.tv_sec;
    if (expire && (e == FERRY_ERR_VERSION ||
        (e == 0 && age > PARTIAL_EXPIRE_S))) {
        (void)unlinkat(partfd, part, 0);
        (void)unlinkat(partfd, jnl, 0);
        return 0;
    }
    if (e != 0)
        return 0;
    memcpy(path, h.path, h.path_len);
    path[h.path_len] = '\0';
    memset(&id, 0, sizeof(id));
    id.path = path;
    id.size = h.size;
    id.mtime_sec = h.mtime_sec;
    id.mtime_nsec = h.mtime_nsec;
    id.block_size = h.block_size;
    if ((r = partial_probe(partfd, key, &id, &c)) != 0)
        return r;
    r = partial_list_add(v, n, cap, h.path, h.path_len, h.size,
        c.n * (uint64_t)h.block_size, age);
    partial_claim_free(&c);
    return r;
}

int
partial_list(int partfd, int expire, struct partial_info **out, size_t *n)
{
    struct partial_info *v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *de;
    uint8_t *hdr;
    DIR *d;
    int dfd, r = 0;

    *out = NULL;
    *n = 0;
    if ((dfd = openat(partfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -errno;
    if ((d = fdopendir(dfd)) == NULL) {
        close(dfd);
        return -errno;
    }
    if ((hdr = xmalloc(PARTIAL_HEADER_MAX)) == NULL) {
        closedir(d);
        return FERRY_ERR_NOMEM;
    }
    while (r == 0 && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name);

        if (len == PARTIAL_KEY_LEN + 4 &&
            strcmp(de->d_name + PARTIAL_KEY_LEN, ".tmp") == 0) {
            /* A small file's temporary from a process that died: with
             * the lock held, nobody else is writing it. */
            if (expire)
                (void)unlinkat(partfd, de->d_name, 0);
            continue;
        }
        if (len != PARTIAL_KEY_LEN + 4 ||
            strcmp(de->d_name + PARTIAL_KEY_LEN, ".jnl") != 0)
            continue;
        r = partial_list_one(partfd, de->d_name, expire, hdr, &v, &cnt,
            &cap);
    }
    closedir(d);
    xfree(hdr);
    if (r != 0) {
        partial_list_free(v, cnt);
        return r;
    }
    *out = v;
    *n = cnt;
    return 0;
}

void
partial_list_free(struct partial_info *v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        xfree(v[i].path);
    xfree(v);
}

void
partial_clear(int partfd)
{
    struct dirent *de;
    DIR *d;
    int dfd = openat(partfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (dfd < 0 || (d = fdopendir(dfd)) == NULL) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            (void)unlinkat(partfd, de->d_name, 0);
    closedir(d);
}
