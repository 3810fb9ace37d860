/* torrent.c: private v2 torrents, made as the bytes are read (torrent.h). */
#include "torrent.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/alloc.h"
#include "digest.h"

#define HLEN 32

struct tfile {
    char *path;             /* under the torrent's folder */
    uint64_t len;
    uint8_t root[HLEN];     /* pieces root; unset for an empty file */
    uint8_t (*layer)[HLEN]; /* piece hashes; NULL unless npieces > 1 */
    uint32_t npieces;
    uint32_t first;         /* set by torrent_finish */
};

struct torrent {
    char *name;
    uint32_t piece_len;
    uint32_t bpp;                   /* blocks per piece */
    struct digest_sha256 *md;
    struct tfile *files;
    size_t nfiles, cap;
    uint64_t pieces_before;         /* pieces of the files already ended */
    int open;                       /* a file is being fed */
    int finished;
    /* The open file: its partial block, the leaves of its current piece
     * and the hashes of its pieces so far. */
    uint8_t block[TORRENT_BLOCK];
    size_t blen;
    uint8_t (*leaves)[HLEN];        /* bpp of them */
    size_t nleaves;
    uint8_t (*layer)[HLEN];
    size_t nlayer, layer_cap;
    uint64_t flen;
    char *cert;
    size_t cert_len;
    uint32_t total_pieces;
};

/* SHA-256 of a, then b (either may be empty). */
static int
sha2(struct torrent *t, const void *a, size_t an, const void *b, size_t bn,
    uint8_t out[HLEN])
{
    return digest_sha256_two(t->md, a, an, b, bn, out);
}

/*
 * Folds n hashes in v (n <= width, width a power of two) into the root
 * of a tree of width leaves, the missing ones being pad (the root of an
 * all-zero subtree of the leaves' height). The root is left in v[0].
 * The pad of each level above is the hash of two of the level below, so
 * the result is that of padding the leaves with zeros (BEP 52).
 */
static int
fold(struct torrent *t, uint8_t (*v)[HLEN], size_t n, size_t width,
    const uint8_t pad0[HLEN])
{
    uint8_t pad[HLEN];
    size_t i, m = n;
    int r;

    memcpy(pad, pad0, HLEN);
    while (width > 1) {
        for (i = 0; i < m / 2; i++)
            if ((r = sha2(t, v[2 * i], HLEN, v[2 * i + 1], HLEN, v[i])) != 0)
                return r;
        if (m % 2 == 1 &&
            (r = sha2(t, v[m - 1], HLEN, pad, HLEN, v[m / 2])) != 0)
            return r;
        m = (m + 1) / 2;
        if ((r = sha2(t, pad, HLEN, pad, HLEN, pad)) != 0)
            return r;
        width /= 2;
    }
    return 0;
}

static size_t
pow2_at_least(size_t n)
{
    size_t w = 1;

    while (w < n)
        w *= 2;
    return w;
}

int
torrent_new(struct torrent **tp, const char *name, uint32_t piece_len)
{
    struct torrent *t;
    size_t nlen = strlen(name);

    *tp = NULL;
    if (piece_len < TORRENT_MIN_PIECE || piece_len > TORRENT_MAX_PIECE ||
        (piece_len & (piece_len - 1)) != 0)
        return FERRY_ERR_USAGE;
    if (nlen == 0 || nlen > TORRENT_MAX_COMPONENT || strchr(name, '/') ||
        strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return FERRY_ERR_BAD_PATH;
    if ((t = xcalloc(1, sizeof(*t))) == NULL)
        return FERRY_ERR_NOMEM;
    t->piece_len = piece_len;
    t->bpp = piece_len / TORRENT_BLOCK;
    if ((t->name = xstrdup(name)) == NULL ||
        (t->leaves = xcalloc(t->bpp, HLEN)) == NULL ||
        (t->md = digest_sha256_new()) == NULL) {
        torrent_free(t);
        return FERRY_ERR_NOMEM;
    }
    *tp = t;
    return 0;
}

void
torrent_free(struct torrent *t)
{
    size_t i;

    if (t == NULL)
        return;
    for (i = 0; i < t->nfiles; i++) {
        xfree(t->files[i].path);
        xfree(t->files[i].layer);
    }
    xfree(t->files);
    xfree(t->layer);
    xfree(t->leaves);
    xfree(t->name);
    xfree(t->cert);
    digest_sha256_free(t->md);
    xfree(t);
}

/* A relative path of safe components, within the limits of torrent.h. */
static int
path_ok(const char *path)
{
    size_t len = strlen(path), depth = 0;
    const char *c = path, *e;

    if (len == 0 || len > TORRENT_MAX_PATH)
        return 0;
    for (;;) {
        e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || n > TORRENT_MAX_COMPONENT ||
            (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return 0;
        if (++depth > TORRENT_MAX_DEPTH)
            return 0;
        if (e == NULL)
            return 1;
        c = e + 1;
    }
}

int
torrent_file_begin(struct torrent *t, const char *path)
{
    void *nv;

    if (t->open || t->finished)
        return FERRY_ERR_PROTOCOL;
    if (!path_ok(path))
        return FERRY_ERR_BAD_PATH;
    if (t->nfiles >= TORRENT_MAX_FILES)
        return FERRY_ERR_TOO_LARGE;
    if ((nv = xgrow(t->files, t->nfiles, &t->cap, sizeof(*t->files),
        64)) == NULL)
        return FERRY_ERR_NOMEM;
    t->files = nv;
    memset(&t->files[t->nfiles], 0, sizeof(*t->files));
    if ((t->files[t->nfiles].path = xstrdup(path)) == NULL)
        return FERRY_ERR_NOMEM;
    t->nfiles++;
    t->open = 1;
    t->blen = 0;
    t->nleaves = 0;
    t->nlayer = 0;
    t->flen = 0;
    return 0;
}

/* Hashes the open piece's nleaves leaves, zero-padded to a whole piece,
 * into the file's layer. */
static int
piece_done(struct torrent *t)
{
    static const uint8_t zero[HLEN];
    void *nv;
    int r;

    if ((r = fold(t, t->leaves, t->nleaves, t->bpp, zero)) != 0)
        return r;
    if ((nv = xgrow(t->layer, t->nlayer, &t->layer_cap, HLEN, 16)) == NULL)
        return FERRY_ERR_NOMEM;
    t->layer = nv;
    memcpy(t->layer[t->nlayer++], t->leaves[0], HLEN);
    t->nleaves = 0;
    return 0;
}

/* The block buffer, full or the file's short last one, as a leaf. */
static int
block_done(struct torrent *t)
{
    int r;

    if ((r = sha2(t, t->block, t->blen, NULL, 0,
        t->leaves[t->nleaves])) != 0)
        return r;
    t->blen = 0;
    if (++t->nleaves == t->bpp)
        return piece_done(t);
    return 0;
}

int
torrent_file_update(struct torrent *t, const void *p, size_t n)
{
    const uint8_t *s = p;
    uint64_t len, pieces;
    size_t k;
    int r;

    if (!t->open)
        return FERRY_ERR_PROTOCOL;
    /* The piece count is checked before any byte is taken: the bound
     * holds for the layers kept, whatever the caller feeds. */
    if (n > UINT64_MAX - t->flen)
        return FERRY_ERR_TOO_LARGE;
    len = t->flen + n;
    pieces = len / t->piece_len + (len % t->piece_len != 0);
    if (pieces > TORRENT_MAX_PIECES - t->pieces_before)
        return FERRY_ERR_TOO_LARGE;
    t->flen = len;
    while (n > 0) {
        k = TORRENT_BLOCK - t->blen;
        if (k > n)
            k = n;
        memcpy(t->block + t->blen, s, k);
        t->blen += k;
        s += k;
        n -= k;
        if (t->blen == TORRENT_BLOCK && (r = block_done(t)) != 0)
            return r;
    }
    return 0;
}

int
torrent_file_end(struct torrent *t)
{
    static const uint8_t zero[HLEN];
    struct tfile *f;
    uint8_t pad[HLEN], (*tmp)[HLEN];
    size_t i;
    int r;

    if (!t->open)
        return FERRY_ERR_PROTOCOL;
    f = &t->files[t->nfiles - 1];
    f->len = t->flen;
    if (t->blen > 0 && (r = block_done(t)) != 0)
        return r;
    if (f->len == 0) {
        f->npieces = 0;
    } else if (t->nlayer == 0) {
        /* Within one piece: the tree is only as wide as the file's
         * blocks, rounded up to a power of two. */
        if ((r = fold(t, t->leaves, t->nleaves,
            pow2_at_least(t->nleaves), zero)) != 0)
            return r;
        memcpy(f->root, t->leaves[0], HLEN);
        f->npieces = 1;
    } else {
        if (t->nleaves > 0 && (r = piece_done(t)) != 0)
            return r;
        f->npieces = (uint32_t)t->nlayer;
        if (t->nlayer == 1) {
            memcpy(f->root, t->layer[0], HLEN);
        } else {
            /* The pad of the piece layer: an all-zero piece's hash. */
            memset(pad, 0, HLEN);
            for (i = 1; i < t->bpp; i *= 2)
                if ((r = sha2(t, pad, HLEN, pad, HLEN, pad)) != 0)
                    return r;
            if ((tmp = xmalloc(t->nlayer * HLEN)) == NULL)
                return FERRY_ERR_NOMEM;
            memcpy(tmp, t->layer, t->nlayer * HLEN);
            r = fold(t, tmp, t->nlayer, pow2_at_least(t->nlayer), pad);
            if (r == 0)
                memcpy(f->root, tmp[0], HLEN);
            xfree(tmp);
            if (r != 0)
                return r;
            /* The layer goes with the file; the next starts afresh. */
            f->layer = t->layer;
            t->layer = NULL;
            t->layer_cap = 0;
        }
    }
    t->nlayer = 0;
    t->nleaves = 0;
    t->pieces_before += f->npieces;
    t->open = 0;
    return 0;
}

int
torrent_set_cert(struct torrent *t, const void *pem, size_t len)
{
    char *c;

    if (len == 0 || len > TORRENT_MAX_CERT)
        return FERRY_ERR_TOO_LARGE;
    if ((c = xmalloc(len)) == NULL)
        return FERRY_ERR_NOMEM;
    memcpy(c, pem, len);
    xfree(t->cert);
    t->cert = c;
    t->cert_len = len;
    return 0;
}

/*
 * Paths compared a component at a time, as the keys of the nested file
 * tree sort: '/' ends a component, so it sorts below every other byte
 * ("a/b" before "a-b", since "a" < "a-b").
 */
static int
cmp_path(const char *a, const char *b)
{
    int ca, cb;

    for (;; a++, b++) {
        ca = *a == '/' ? 1 : *a == '\0' ? 0 : (unsigned char)*a + 1;
        cb = *b == '/' ? 1 : *b == '\0' ? 0 : (unsigned char)*b + 1;
        if (ca != cb || ca == 0)
            return ca - cb;
    }
}

static int
cmp_file(const void *a, const void *b)
{
    return cmp_path(((const struct tfile *)a)->path,
        ((const struct tfile *)b)->path);
}

/* ---- bencoding ---- */

static int
put_bytes(struct buf *b, const void *p, size_t n)
{
    char head[32];
    int r, k = snprintf(head, sizeof(head), "%zu:", n);

    if ((r = buf_put(b, head, (size_t)k)) != 0)
        return r;
    return n > 0 ? buf_put(b, p, n) : 0;
}

static int
put_str(struct buf *b, const char *s)
{
    return put_bytes(b, s, strlen(s));
}

static int
put_int(struct buf *b, uint64_t v)
{
    char s[32];
    int k = snprintf(s, sizeof(s), "i%" PRIu64 "e", v);

    return buf_put(b, s, (size_t)k);
}

/* { "": { "length": L, "pieces root": R } }, the root left out for an
 * empty file (BEP 52). */
static int
put_leaf(struct buf *b, const struct tfile *f)
{
    int r;

    if ((r = buf_put(b, "d0:d", 4)) != 0 || (r = put_str(b, "length")) != 0 ||
        (r = put_int(b, f->len)) != 0)
        return r;
    if (f->len > 0 && ((r = put_str(b, "pieces root")) != 0 ||
        (r = put_bytes(b, f->root, HLEN)) != 0))
        return r;
    return buf_put(b, "ee", 2);
}

/* Offset of component depth d of path, and its length; d is within. */
static const char *
component(const char *path, size_t d, size_t *len)
{
    const char *e;

    while (d-- > 0)
        path = strchr(path, '/') + 1;
    e = strchr(path, '/');
    *len = e ? (size_t)(e - path) : strlen(path);
    return path;
}

/*
 * The file tree of files [lo, hi), which share their first d components:
 * one key per distinct component at depth d, in order. A component that
 * ends one path and goes on in another (a file and a folder of the same
 * name), or two equal paths, is EXISTS.
 */
static int
put_tree(struct buf *b, const struct tfile *files, size_t lo, size_t hi,
    size_t d)
{
    const char *c, *c2;
    size_t n, n2, j;
    int r;

    if ((r = buf_put(b, "d", 1)) != 0)
        return r;
    while (lo < hi) {
        c = component(files[lo].path, d, &n);
        for (j = lo + 1; j < hi; j++) {
            c2 = component(files[j].path, d, &n2);
            if (n2 != n || memcmp(c, c2, n) != 0)
                break;
        }
        if ((r = put_bytes(b, c, n)) != 0)
            return r;
        if (c[n] == '\0') {
            if (j - lo > 1)
                return FERRY_ERR_EXISTS;
            r = put_leaf(b, &files[lo]);
        } else {
            r = put_tree(b, files, lo, j, d + 1);
        }
        if (r != 0)
            return r;
        lo = j;
    }
    return buf_put(b, "e", 1);
}

static int
cmp_root(const void *a, const void *b, void *files)
{
    const struct tfile *f = files;

    return memcmp(f[*(const size_t *)a].root, f[*(const size_t *)b].root,
        HLEN);
}

/* "piece layers": each file of more than one piece, by its root; equal
 * files share their entry. */
static int
put_layers(struct torrent *t, struct buf *b)
{
    size_t *idx, n = 0, i;
    const struct tfile *f;
    int r = 0;

    if ((idx = xcalloc(t->nfiles + 1, sizeof(*idx))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < t->nfiles; i++)
        if (t->files[i].npieces > 1)
            idx[n++] = i;
    qsort_r(idx, n, sizeof(*idx), cmp_root, t->files);
    if ((r = buf_put(b, "d", 1)) != 0)
        goto out;
    for (i = 0; i < n; i++) {
        f = &t->files[idx[i]];
        if (i > 0 && memcmp(f->root, t->files[idx[i - 1]].root, HLEN) == 0)
            continue;
        if ((r = put_bytes(b, f->root, HLEN)) != 0 ||
            (r = put_bytes(b, f->layer, (size_t)f->npieces * HLEN)) != 0)
            goto out;
    }
    r = buf_put(b, "e", 1);
out:
    xfree(idx);
    return r;
}

int
torrent_finish(struct torrent *t, struct buf *out, uint8_t info_hash[32])
{
    size_t i, info_at;
    uint32_t first = 0;
    char *single;
    int r;

    if (t->open || t->finished || t->nfiles == 0)
        return FERRY_ERR_PROTOCOL;
    qsort(t->files, t->nfiles, sizeof(*t->files), cmp_file);
    for (i = 0; i < t->nfiles; i++) {
        t->files[i].first = first;
        first += t->files[i].npieces;
    }
    t->total_pieces = first;
    /* libtorrent will not load a torrent of no bytes; empty files need
     * no swarm (the manifest makes them). */
    if (first == 0)
        return FERRY_ERR_UNSUPPORTED;
    /* Single-file form: the torrent is named after its one file. */
    if (t->nfiles == 1 && strchr(t->files[0].path, '/') == NULL) {
        if ((single = xstrdup(t->files[0].path)) == NULL)
            return FERRY_ERR_NOMEM;
        xfree(t->name);
        t->name = single;
    }
    t->finished = 1;

    if ((r = buf_put(out, "d", 1)) != 0 || (r = put_str(out, "info")) != 0)
        return r;
    info_at = buf_used(out);
    if ((r = buf_put(out, "d", 1)) != 0 ||
        (r = put_str(out, "file tree")) != 0 ||
        (r = put_tree(out, t->files, 0, t->nfiles, 0)) != 0 ||
        (r = put_str(out, "meta version")) != 0 ||
        (r = put_int(out, 2)) != 0 ||
        (r = put_str(out, "name")) != 0 ||
        (r = put_str(out, t->name)) != 0 ||
        (r = put_str(out, "piece length")) != 0 ||
        (r = put_int(out, t->piece_len)) != 0 ||
        (r = put_str(out, "private")) != 0 ||
        (r = put_int(out, 1)) != 0)
        return r;
    if (t->cert != NULL && ((r = put_str(out, "ssl-cert")) != 0 ||
        (r = put_bytes(out, t->cert, t->cert_len)) != 0))
        return r;
    if ((r = buf_put(out, "e", 1)) != 0)
        return r;
    if ((r = sha2(t, buf_ptr(out) + info_at, buf_used(out) - info_at,
        NULL, 0, info_hash)) != 0)
        return r;
    if ((r = put_str(out, "piece layers")) != 0 ||
        (r = put_layers(t, out)) != 0 || (r = buf_put(out, "e", 1)) != 0)
        return r;
    return 0;
}

const char *
torrent_name(const struct torrent *t)
{
    return t->name;
}

uint32_t
torrent_pieces(const struct torrent *t)
{
    return t->total_pieces;
}

size_t
torrent_files(const struct torrent *t)
{
    return t->nfiles;
}

void
torrent_file_at(const struct torrent *t, size_t i, const char **path,
    uint64_t *length, uint32_t *first_piece, uint32_t *npieces)
{
    const struct tfile *f = &t->files[i];

    *path = f->path;
    *length = f->len;
    *first_piece = f->first;
    *npieces = f->npieces;
}
