#include "partial.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../proto/limits.h"

/* Biggest journal header we read: fixed fields plus the longest path. */
#define PARTIAL_HEADER_MAX (JOURNAL_HEADER_FIXED + PROTO_MAX_PATH)

struct partial {
    int fd;             /* part file */
    int jfd;            /* journal, -1 for a light partial */
    int light;          /* small file: no journal, no resume */
    char key[17];
    char part[48];      /* the part file's name */
    size_t header_len;
    uint64_t blocks;    /* records in the journal */
    uint64_t unsynced;  /* data bytes written since the last sync */
    uint64_t synced_ms; /* when the journal was last synced */
    struct buf pending; /* encoded records waiting for the sync */
};

void
partial_key(const char *path, char key[17])
{
    snprintf(key, 17, "%016llx",
        (unsigned long long)hash_name64(path, strlen(path)));
}

static uint64_t
partial_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
partial_names(const char *key, char part[32], char jnl[32])
{
    snprintf(part, 32, "%s.part", key);
    snprintf(jnl, 32, "%s.jnl", key);
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

/* Counts the leading run of records for blocks 0, 1, 2, ... (at most
 * limit) in the journal after its header; a torn or out-of-order record
 * ends it. Each record's hash goes to the non-NULL hash_files. */
static uint64_t
partial_scan(int jfd, uint64_t off, uint64_t limit, struct hash_file *hf1,
    struct hash_file *hf2)
{
    uint8_t rec[JOURNAL_RECORD_LEN * 256];
    struct journal_record jr;
    uint64_t blocks = 0;
    size_t got, i;

    while (blocks < limit) {
        if (fsx_pread_full(jfd, rec, sizeof(rec), off, &got) != 0 ||
            got < JOURNAL_RECORD_LEN)
            break;
        for (i = 0; i + JOURNAL_RECORD_LEN <= got && blocks < limit;
            i += JOURNAL_RECORD_LEN) {
            if (journal_record_decode(rec + i, JOURNAL_RECORD_LEN,
                &jr) != 0 || jr.index != blocks)
                return blocks;
            if (hf1 != NULL)
                hash_file_add(hf1, &jr.hash);
            if (hf2 != NULL)
                hash_file_add(hf2, &jr.hash);
            blocks++;
        }
        off += got - got % JOURNAL_RECORD_LEN;
    }
    return blocks;
}

uint64_t
partial_probe(int partfd, const struct partial_id *id, struct hash_file *hf,
    struct hash128 *prefix)
{
    struct journal_header h;
    struct hash_file *pre = NULL;
    char part[32], jnl[32], key[17];
    uint64_t blocks = 0, max_blocks;
    uint8_t *hdr = NULL;
    struct stat st;
    size_t used;
    int jfd = -1;

    if (prefix != NULL)
        memset(prefix, 0, sizeof(*prefix));
    if (id->size < PARTIAL_JOURNAL_MIN)
        return 0;
    partial_key(id->path, key);
    partial_names(key, part, jnl);
    if (fstatat(partfd, part, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
        return 0;
    jfd = openat(partfd, jnl, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (jfd < 0 || (hdr = xmalloc(PARTIAL_HEADER_MAX)) == NULL)
        goto out;
    if (partial_read_header(jfd, hdr, &h, &used) != 0 ||
        !partial_same(&h, id))
        goto out;
    max_blocks = (id->size + id->block_size - 1) / id->block_size;
    blocks = partial_scan(jfd, used, max_blocks, NULL, NULL);
    if (blocks == 0 || (hf == NULL && prefix == NULL))
        goto out;
    /* Second pass, now that the prefix length is known. */
    if (prefix != NULL && (pre = hash_file_new(blocks * id->block_size <
        id->size ? blocks * id->block_size : id->size,
        id->block_size)) == NULL) {
        blocks = 0;
        goto out;
    }
    if (partial_scan(jfd, used, blocks, hf, pre) != blocks) {
        blocks = 0;  /* changed under us: trust nothing */
        goto out;
    }
    if (pre != NULL)
        hash_file_final(pre, prefix);
out:
    hash_file_free(pre);
    xfree(hdr);
    if (jfd >= 0)
        close(jfd);
    return blocks;
}

static int
partial_lock(int fd)
{
    int waited = 0;

    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -errno;
        if (waited >= PARTIAL_LOCK_WAIT_MS)
            return -EBUSY;
        usleep(100 * 1000);
        waited += 100;
    }
    return 0;
}

/* Encodes the header to learn its length; with write, also makes it the
 * journal's only content. */
static int
partial_write_header(struct partial *p, const struct partial_id *id,
    int write)
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
    if ((r = journal_header_encode(&b, &h)) == 0 && write) {
        if (ftruncate(p->jfd, 0) == 0)
            r = fsx_pwrite_all(p->jfd, buf_ptr(&b), buf_used(&b), 0);
        else
            r = -errno;
    }
    p->header_len = buf_used(&b);
    buf_cleanup(&b);
    return r;
}

int
partial_open(int partfd, const struct partial_id *id, uint64_t blocks,
    struct partial **out)
{
    char part[32], jnl[32];
    struct partial *p;
    int r = 0, flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC;

    *out = NULL;
    if ((p = xcalloc(1, sizeof(*p))) == NULL)
        return FERRY_ERR_NOMEM;
    p->fd = p->jfd = -1;
    buf_init(&p->pending, JOURNAL_RECORD_LEN * (PARTIAL_SYNC_BYTES /
        PROTO_MIN_BLOCK + 16));
    partial_key(id->path, p->key);
    partial_names(p->key, part, jnl);
    snprintf(p->part, sizeof(p->part), "%s", part);
    if (id->size < PARTIAL_JOURNAL_MIN) {
        /* Sending a small file again costs less than journaling it. The
         * name carries our pid, so no other agent writes it. */
        p->light = 1;
        snprintf(p->part, sizeof(p->part), "%s.%ld.tmp", p->key,
            (long)getpid());
        if ((p->fd = openat(partfd, p->part, flags | O_TRUNC, 0600)) < 0) {
            r = -errno;
            goto fail;
        }
        *out = p;
        return 0;
    }
    if ((p->jfd = openat(partfd, jnl, flags, 0600)) < 0 ||
        (r = partial_lock(p->jfd)) != 0) {
        r = p->jfd < 0 ? -errno : r;
        goto fail;
    }
    /* Only now, holding the lock, is what the journal says settled. */
    if (blocks > 0 && partial_probe(partfd, id, NULL, NULL) < blocks) {
        r = FERRY_ERR_STATE;
        goto fail;
    }
    if ((p->fd = openat(partfd, part, flags | (blocks ? 0 : O_TRUNC),
        0600)) < 0) {
        r = -errno;
        goto fail;
    }
    if ((r = partial_write_header(p, id, blocks == 0)) != 0)
        goto fail;
    if (blocks > 0) {
        /* Keep the header and the leading run of records; drop a torn
         * tail so appends line up. Data past the journal's claim (written
         * but never journaled) goes too, so what follows reads as zeros
         * until it is written again. */
        uint64_t keep = blocks * (uint64_t)id->block_size;

        if (ftruncate(p->jfd, (off_t)(p->header_len + blocks *
            JOURNAL_RECORD_LEN)) != 0 ||
            ftruncate(p->fd, (off_t)(keep < id->size ? keep : id->size))
            != 0) {
            r = -errno;
            goto fail;
        }
    }
    p->blocks = blocks;
    p->synced_ms = partial_now_ms();
    *out = p;
    return 0;
fail:
    partial_close(p, partfd, blocks > 0 && !p->light ? PARTIAL_KEEP :
        PARTIAL_DISCARD);
    return r;
}

int
partial_fd(const struct partial *p)
{
    return p->fd;
}

int
partial_sync(struct partial *p)
{
    uint64_t off;
    int r;

    if (p->light || buf_used(&p->pending) == 0)
        return 0;
    if ((r = fsx_fdatasync(p->fd)) != 0)
        return r;
    off = p->header_len + p->blocks * JOURNAL_RECORD_LEN;
    if ((r = fsx_pwrite_all(p->jfd, buf_ptr(&p->pending),
        buf_used(&p->pending), off)) != 0)
        return r;
    p->blocks += buf_used(&p->pending) / JOURNAL_RECORD_LEN;
    buf_reset(&p->pending);
    p->unsynced = 0;
    p->synced_ms = partial_now_ms();
    return 0;
}

int
partial_add(struct partial *p, uint64_t index, const struct hash128 *h,
    size_t n)
{
    struct journal_record jr;
    int r;

    if (p->light)
        return 0;
    jr.index = index;
    jr.hash = *h;
    if ((r = journal_record_encode(&p->pending, &jr)) == FERRY_ERR_TOO_LARGE) {
        if ((r = partial_sync(p)) != 0)
            return r;
        r = journal_record_encode(&p->pending, &jr);
    }
    if (r != 0)
        return r;
    p->unsynced += n;
    if (p->unsynced >= PARTIAL_SYNC_BYTES ||
        partial_now_ms() - p->synced_ms >= PARTIAL_SYNC_MS)
        return partial_sync(p);
    return 0;
}

int
partial_reset(struct partial *p)
{
    buf_reset(&p->pending);
    p->unsynced = 0;
    p->blocks = 0;
    if (ftruncate(p->fd, 0) != 0 ||
        (!p->light && ftruncate(p->jfd, (off_t)p->header_len) != 0))
        return -errno;
    return 0;
}

int
partial_rename(struct partial *p, int partfd, int dirfd, const char *name)
{
    return renameat(partfd, p->part, dirfd, name) == 0 ? 0 : -errno;
}

void
partial_close(struct partial *p, int partfd, enum partial_end how)
{
    char part[32], jnl[32];

    if (p == NULL)
        return;
    partial_names(p->key, part, jnl);
    if (p->light && how == PARTIAL_KEEP)
        how = PARTIAL_DISCARD;  /* nothing to resume from */
    if (how == PARTIAL_KEEP && p->fd >= 0 && p->jfd >= 0 &&
        partial_sync(p) != 0) {
        /* Unsynced blocks are simply not claimed; they are sent again. */
    }
    if (how == PARTIAL_DISCARD)
        (void)unlinkat(partfd, p->part, 0);
    if (how != PARTIAL_KEEP && !p->light)
        (void)unlinkat(partfd, jnl, 0);
    if (p->fd >= 0)
        close(p->fd);
    if (p->jfd >= 0)
        close(p->jfd);
    buf_cleanup(&p->pending);
    xfree(p);
}

static int
partial_info_add(struct partial_info **v, size_t *n, size_t *cap,
    const struct journal_header *h, uint64_t done, int64_t age)
{
    struct partial_info *nv;

    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;

        if ((nv = xrealloc(*v, ncap * sizeof(*nv))) == NULL)
            return FERRY_ERR_NOMEM;
        *v = nv;
        *cap = ncap;
    }
    nv = &(*v)[*n];
    if ((nv->path = xstrndup(h->path, h->path_len)) == NULL)
        return FERRY_ERR_NOMEM;
    nv->size = h->size;
    nv->done = done > h->size ? h->size : done;
    nv->age_s = age;
    (*n)++;
    return 0;
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
    if ((dfd = fcntl(partfd, F_DUPFD_CLOEXEC, 0)) < 0)
        return -errno;
    if ((d = fdopendir(dfd)) == NULL) {
        close(dfd);
        return -errno;
    }
    /* The dup shares its offset with partfd: start from the top. */
    rewinddir(d);
    if ((hdr = xmalloc(PARTIAL_HEADER_MAX)) == NULL) {
        closedir(d);
        return FERRY_ERR_NOMEM;
    }
    while (r == 0 && (de = readdir(d)) != NULL) {
        size_t len = strlen(de->d_name), used;
        struct journal_header h;
        struct partial_id id;
        struct stat st;
        char key[17];
        int64_t age;
        int jfd;

        if (expire && len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0) {
            struct stat ts;

            /* A small file's temp from an agent that died. */
            if (fstatat(partfd, de->d_name, &ts, AT_SYMLINK_NOFOLLOW) == 0 &&
                (int64_t)time(NULL) - ts.st_mtim.tv_sec > PARTIAL_TMP_EXPIRE_S)
                (void)unlinkat(partfd, de->d_name, 0);
            continue;
        }
        if (len != 20 || strcmp(de->d_name + 16, ".jnl") != 0)
            continue;
        jfd = openat(partfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (jfd < 0)
            continue;
        if (fstat(jfd, &st) != 0 ||
            partial_read_header(jfd, hdr, &h, &used) != 0) {
            close(jfd);
            continue;
        }
        close(jfd);
        age = (int64_t)time(NULL) - st.st_mtim.tv_sec;
        memcpy(key, de->d_name, 16);
        key[16] = '\0';
        if (expire && age > PARTIAL_EXPIRE_S) {
            char part[32], jnl[32];

            partial_names(key, part, jnl);
            (void)unlinkat(partfd, part, 0);
            (void)unlinkat(partfd, jnl, 0);
            continue;
        }
        memset(&id, 0, sizeof(id));
        {
            char path[PROTO_MAX_PATH + 1];

            memcpy(path, h.path, h.path_len);
            path[h.path_len] = '\0';
            id.path = path;
            id.size = h.size;
            id.mtime_sec = h.mtime_sec;
            id.mtime_nsec = h.mtime_nsec;
            id.block_size = h.block_size;
            r = partial_info_add(&v, &cnt, &cap, &h, partial_probe(partfd,
                &id, NULL, NULL) * (uint64_t)h.block_size, age);
        }
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

/* Removes every file in the part directory: ours alone lives there. */
static void
partial_clear_dir(int partfd)
{
    struct dirent *de;
    DIR *d;
    int dfd = fcntl(partfd, F_DUPFD_CLOEXEC, 0);

    if (dfd < 0 || (d = fdopendir(dfd)) == NULL) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    rewinddir(d);
    while ((de = readdir(d)) != NULL)
        if (de->d_name[0] != '.')
            (void)unlinkat(partfd, de->d_name, 0);
    closedir(d);
}

int
partial_dest_state(const char *dest, int clean, struct partial_info **out,
    size_t *n)
{
    int rootfd, statefd = -1, partfd = -1, r = 0;

    *out = NULL;
    *n = 0;
    if ((rootfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -errno;
    statefd = openat(rootfd, PARTIAL_STATE_DIR,
        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (statefd >= 0)
        partfd = openat(statefd, PARTIAL_PART_DIR,
            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (partfd >= 0)
        r = partial_list(partfd, 0, out, n);
    if (r == 0 && clean && statefd >= 0) {
        if (partfd >= 0)
            partial_clear_dir(partfd);
        (void)unlinkat(statefd, PARTIAL_PART_DIR, AT_REMOVEDIR);
        (void)unlinkat(statefd, PARTIAL_MARKER, 0);
        if (unlinkat(rootfd, PARTIAL_STATE_DIR, AT_REMOVEDIR) != 0 &&
            errno != ENOENT)
            r = -errno;
    }
    if (partfd >= 0)
        close(partfd);
    if (statefd >= 0)
        close(statefd);
    close(rootfd);
    return r;
}
