#include "keptsig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "../../common/hash.h"
#include "../../proto/limits.h"
#include "../../proto/msg.h"
#include "delta_index.h"

static const char keptsig_magic[8] = { 'F', 'E', 'R', 'R', 'Y', 'S', 'G',
    '2' };

struct keptsig_store {
    int dirfd;
};

struct keptsig {
    uint64_t size, count, nblocks;
    uint32_t piece, block_size;
    uint8_t *buf;     /* header room, count x DELTA_SIG_LEN, nblocks hashes */
};

/* A file of the store, for trimming. */
struct kept_file {
    int64_t mtime;
    uint64_t bytes;
    char name[40];
};

static int
keptsig_file_older(const void *a, const void *b)
{
    const struct kept_file *x = a, *y = b;

    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Removes the least recently written files beyond the bounds (down to
 * seven eighths of them, so that not every run trims). */
static void
keptsig_trim(int dirfd)
{
    struct kept_file *v = NULL, *nv;
    size_t n = 0, cap = 0, i;
    uint64_t bytes = 0;
    struct dirent *de;
    struct stat st;
    DIR *dir;
    int fd;

    if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return;
    if ((dir = fdopendir(fd)) == NULL) {
        close(fd);
        return;
    }
    while ((de = readdir(dir)) != NULL) {
        size_t len = strlen(de->d_name);

        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
            (de->d_name[1] == '.' && de->d_name[2] == '\0')))
            continue;
        if (len >= sizeof(v->name) ||
            fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if ((nv = xgrow(v, n, &cap, sizeof(*v), 64)) == NULL)
            break;
        v = nv;
        v[n].mtime = st.st_mtim.tv_sec;
        v[n].bytes = (uint64_t)st.st_size;
        memcpy(v[n].name, de->d_name, len + 1);
        bytes += v[n].bytes;
        n++;
    }
    closedir(dir);
    if (n > KEPTSIG_MAX_FILES || bytes > KEPTSIG_MAX_BYTES) {
        qsort(v, n, sizeof(*v), keptsig_file_older);
        for (i = 0; i < n && (n - i > KEPTSIG_MAX_FILES / 8 * 7 ||
            bytes > KEPTSIG_MAX_BYTES / 8 * 7); i++) {
            (void)unlinkat(dirfd, v[i].name, 0);
            bytes -= v[i].bytes;
        }
    }
    xfree(v);
}

int
keptsig_store_open(const char *dir, struct keptsig_store **out)
{
    struct keptsig_store *s;
    int r, fd;

    *out = NULL;
    if ((r = fsx_mkdir_p(dir, 0700)) != 0)
        return r;
    if ((r = fsx_open_private_dir(AT_FDCWD, dir, 0, &fd)) != 0)
        return r;
    if ((s = xcalloc(1, sizeof(*s))) == NULL) {
        close(fd);
        return FERRY_ERR_NOMEM;
    }
    s->dirfd = fd;
    keptsig_trim(fd);
    *out = s;
    return 0;
}

struct keptsig_store *
keptsig_store_default(void)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    struct keptsig_store *s;
    char dir[4096];
    int n;

    if (xdg != NULL && xdg[0] == '/')
        n = snprintf(dir, sizeof(dir), "%s/ferry/sig", xdg);
    else if (home != NULL && home[0] == '/')
        n = snprintf(dir, sizeof(dir), "%s/.cache/ferry/sig", home);
    else
        return NULL;
    if (n < 0 || (size_t)n >= sizeof(dir) || keptsig_store_open(dir, &s) != 0)
        return NULL;
    return s;
}

void
keptsig_store_close(struct keptsig_store *s)
{
    if (s == NULL)
        return;
    close(s->dirfd);
    xfree(s);
}

uint64_t
keptsig_bytes(uint64_t size, uint32_t piece, uint32_t block_size)
{
    return KEPTSIG_HEADER + msg_delta_nsigs(size, piece) * DELTA_SIG_LEN +
        msg_delta_nsigs(size, block_size) * HASH_LEN + HASH_LEN;
}

struct keptsig *
keptsig_new(uint64_t size, uint32_t piece, uint32_t block_size)
{
    struct keptsig *k;

    if (piece == 0 || block_size == 0 ||
        (k = xcalloc(1, sizeof(*k))) == NULL)
        return NULL;
    k->size = size;
    k->piece = piece;
    k->block_size = block_size;
    k->count = msg_delta_nsigs(size, piece);
    k->nblocks = msg_delta_nsigs(size, block_size);
    if ((k->buf = xmalloc((size_t)keptsig_bytes(size, piece,
        block_size))) == NULL) {
        xfree(k);
        return NULL;
    }
    return k;
}

void
keptsig_free(struct keptsig *k)
{
    if (k == NULL)
        return;
    xfree(k->buf);
    xfree(k);
}

void
keptsig_put(struct keptsig *k, uint64_t off, const uint8_t *data,
    uint64_t len)
{
    uint64_t j = off / k->piece, at = 0, n, zero_len = 0;
    uint8_t zero[DELTA_SIG_LEN], *q;

    while (at < len && j < k->count) {
        n = len - at < k->piece ? len - at : k->piece;
        q = k->buf + KEPTSIG_HEADER + j * DELTA_SIG_LEN;
        if (data != NULL) {
            delta_sign(data + at, (size_t)n, q);
        } else {
            /* A hole: its pieces' signature is a constant of their
             * length, so a sparse file's ZERO blocks cost a copy a
             * piece, not a hash of zeros. */
            if (zero_len != n) {
                delta_sign_zero((size_t)n, zero);
                zero_len = n;
            }
            memcpy(q, zero, DELTA_SIG_LEN);
        }
        at += n;
        j++;
    }
}

void
keptsig_put_sig(struct keptsig *k, uint64_t j, const uint8_t *sig)
{
    if (j < k->count)
        memcpy(k->buf + KEPTSIG_HEADER + j * DELTA_SIG_LEN, sig,
            DELTA_SIG_LEN);
}

void
keptsig_put_block(struct keptsig *k, uint64_t index, const struct hash128 *h)
{
    if (index < k->nblocks)
        memcpy(k->buf + KEPTSIG_HEADER + k->count * DELTA_SIG_LEN +
            index * HASH_LEN, h->b, HASH_LEN);
}

uint32_t
keptsig_piece(const struct keptsig *k)
{
    return k->piece;
}

static void
keptsig_put_le(uint8_t *p, uint64_t v, int n)
{
    int i;

    for (i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* The header for a file with stat st, in pieces of piece bytes and
 * blocks of block_size. */
static void
keptsig_header(uint8_t *h, const struct stat *st, uint32_t piece,
    uint64_t count, uint32_t block_size)
{
    memset(h, 0, KEPTSIG_HEADER);
    memcpy(h, keptsig_magic, sizeof(keptsig_magic));
    keptsig_put_le(h + 8, (uint64_t)st->st_size, 8);
    keptsig_put_le(h + 16, (uint64_t)st->st_mtim.tv_sec, 8);
    keptsig_put_le(h + 24, (uint64_t)st->st_mtim.tv_nsec, 4);
    keptsig_put_le(h + 28, (uint64_t)st->st_ctim.tv_sec, 8);
    keptsig_put_le(h + 36, (uint64_t)st->st_ctim.tv_nsec, 4);
    keptsig_put_le(h + 40, (uint64_t)st->st_dev, 8);
    keptsig_put_le(h + 48, (uint64_t)st->st_ino, 8);
    keptsig_put_le(h + 56, piece, 4);
    keptsig_put_le(h + 64, count, 8);
    keptsig_put_le(h + 72, block_size, 4);
}

/* The store's name for the file with stat st. */
static void
keptsig_name(const struct stat *st, char *name, size_t cap)
{
    snprintf(name, cap, "%llx-%llx", (unsigned long long)st->st_dev,
        (unsigned long long)st->st_ino);
}

int
keptsig_save(struct keptsig_store *s, struct keptsig *k, int fd)
{
    char name[40], tmp[64];
    uint64_t body = k->count * DELTA_SIG_LEN + k->nblocks * HASH_LEN;
    struct hash128 h;
    struct stat st;
    int r, out;

    if (s == NULL)
        return 0;
    if (fstat(fd, &st) != 0)
        return -errno;
    if ((uint64_t)st.st_size != k->size)
        return FERRY_ERR_CHANGED;
    keptsig_header(k->buf, &st, k->piece, k->count, k->block_size);
    hash_block(k->buf, (size_t)(KEPTSIG_HEADER + body), &h);
    memcpy(k->buf + KEPTSIG_HEADER + body, h.b, HASH_LEN);
    keptsig_name(&st, name, sizeof(name));
    snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
    out = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
        O_CLOEXEC, 0600);
    if (out < 0)
        return -errno;
    r = fsx_write_all(out, k->buf, (size_t)(KEPTSIG_HEADER + body +
        HASH_LEN));
    close(out);
    if (r == 0 && renameat(s->dirfd, tmp, s->dirfd, name) != 0)
        r = -errno;
    if (r != 0)
        (void)unlinkat(s->dirfd, tmp, 0);
    return r;
}

int
keptsig_load(struct keptsig_store *s, const struct stat *st, uint32_t piece,
    uint32_t block_size, uint8_t **sigs, uint64_t *count)
{
    uint64_t n = msg_delta_nsigs((uint64_t)st->st_size, piece), total;
    uint64_t nb;
    uint8_t want[KEPTSIG_HEADER], *buf;
    struct hash128 h;
    struct stat ks;
    char name[40];
    size_t got;
    int kfd, ok, nomem = 0;

    *sigs = NULL;
    *count = 0;
    if (s == NULL || piece == 0 || block_size == 0)
        return -ENOENT;
    nb = msg_delta_nsigs((uint64_t)st->st_size, block_size);
    keptsig_name(st, name, sizeof(name));
    if ((kfd = openat(s->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
        O_CLOEXEC)) < 0)
        return -ENOENT;
    total = KEPTSIG_HEADER + n * DELTA_SIG_LEN + nb * HASH_LEN + HASH_LEN;
    buf = NULL;
    ok = fstat(kfd, &ks) == 0 && S_ISREG(ks.st_mode) &&
        (uint64_t)ks.st_size == total;
    if (ok && (buf = xmalloc((size_t)total)) == NULL)
        ok = 0, nomem = 1;
    ok = ok && fsx_pread_full(kfd, buf, (size_t)total, 0, &got) == 0 &&
        got == total;
    close(kfd);
    if (ok) {
        keptsig_header(want, st, piece, n, block_size);
        hash_block(buf, (size_t)(total - HASH_LEN), &h);
        ok = memcmp(buf, want, KEPTSIG_HEADER) == 0 &&
            memcmp(buf + total - HASH_LEN, h.b, HASH_LEN) == 0;
    }
    if (!ok) {
        /* Not of this file as it is now (or not ours): of no more use. */
        xfree(buf);
        if (!nomem)
            (void)unlinkat(s->dirfd, name, 0);
        return nomem ? FERRY_ERR_NOMEM : -ENOENT;
    }
    memmove(buf, buf + KEPTSIG_HEADER, (size_t)(n * DELTA_SIG_LEN +
        nb * HASH_LEN));
    *sigs = buf;
    *count = n;
    return 0;
}

void
keptsig_forget(struct keptsig_store *s, const struct stat *st)
{
    char name[40];

    if (s == NULL)
        return;
    keptsig_name(st, name, sizeof(name));
    (void)unlinkat(s->dirfd, name, 0);
}
