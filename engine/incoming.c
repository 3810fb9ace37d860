#include "incoming.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/zst.h"
#include "partial.h"
#include "pathset.h"
#include "volrecv.h"

/* Per block. */
enum { B_RESOLVED = 1, B_HAVE = 2, B_SIGNED = 4 };

struct rfile {
    uint32_t id;
    char *path;
    char key[PARTIAL_KEY_LEN + 1];
    uint64_t size;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    uint64_t nblocks, nresolved, nsigned;
    uint8_t *bits;            /* per block, once data or SIGS come */
    struct hash_file *hf;     /* once data comes */
    struct partial *pt;       /* once data comes */
    struct partial_claim claim;  /* a kept partial's blocks to read back */
    uint64_t verified;        /* claims read back so far */
    int resume;               /* SIGS owed for every block */
    int ended, failed;
    unsigned packed_by;       /* stream + 1 whose volume holds it, or 0 */
    struct hash128 end_hash;
    uint64_t n_literal, n_sparse, n_resumed, counted;
    struct rfile *vnext;      /* the read-back queue */
};

struct incoming {
    struct dest *d;
    struct xfer *x;
    uint32_t block_size;
    /* Active files by id and by staging key (see in_insert). */
    struct rfile **tab, **ktab;
    size_t tab_cap, nactive;
    uint64_t blocks_tracked;  /* bytes of bits over active files */
    uint64_t pending;         /* hashes waiting over active files */
    /* Ids wanted in this attempt, a bit each: data for an id that
     * finished is a late duplicate (a stream that died after sending);
     * data for an id never wanted is a protocol error. */
    uint8_t *wanted;
    size_t wanted_cap;
    /* Over the attempts of a run: paths finished, so that a file sent
     * before a reconnect is not counted again as up to date after it. */
    struct pathset done;
    struct rfile *vhead, *vtail;
    struct msg_summary sum;
    struct buf outbox;        /* FILE_DONE for stream 0 to send */
    struct zst *zst;          /* for compressed blocks */
    uint8_t *scratch;         /* one block: inflated data, read-back */
    struct volrecv *vr;       /* volumes of small files, made on use */
};

struct incoming *
incoming_new(struct dest *d, uint32_t block_size, struct xfer *x)
{
    struct incoming *in = xcalloc(1, sizeof(*in));

    if (in == NULL)
        return NULL;
    in->d = d;
    in->x = x;
    in->block_size = block_size;
    buf_init(&in->outbox, 16u << 20);
    return in;
}

static uint64_t
rfile_block_len(const struct incoming *in, const struct rfile *f,
    uint64_t index)
{
    uint64_t off = index * in->block_size;

    return f->size - off < in->block_size ? f->size - off : in->block_size;
}

/* Tables of the active files, open addressing, tab_cap slots each: tab
 * by id, ktab by staging key (so that a clash of keys is found without a
 * look at every file). */

typedef size_t in_home_fn(const struct incoming *in, const struct rfile *f);

static size_t
in_id_home(const struct incoming *in, const struct rfile *f)
{
    return ((size_t)f->id * 0x9e3779b1u) & (in->tab_cap - 1);
}

static size_t
in_key_home(const struct incoming *in, const struct rfile *f)
{
    return (size_t)hash_name64(f->key, PARTIAL_KEY_LEN) & (in->tab_cap - 1);
}

static size_t
in_slot(const struct incoming *in, uint32_t id)
{
    size_t mask = in->tab_cap - 1, i = ((size_t)id * 0x9e3779b1u) & mask;

    while (in->tab[i] != NULL && in->tab[i]->id != id)
        i = (i + 1) & mask;
    return i;
}

static struct rfile *
in_find(const struct incoming *in, uint32_t id)
{
    return in->tab_cap == 0 ? NULL : in->tab[in_slot(in, id)];
}

/* 1 if an active file other than f has f's staging key. */
static int
in_key_taken(const struct incoming *in, const struct rfile *f)
{
    size_t mask = in->tab_cap - 1, i;

    if (in->tab_cap == 0)
        return 0;
    for (i = in_key_home(in, f); in->ktab[i] != NULL; i = (i + 1) & mask)
        if (in->ktab[i] != f && strcmp(in->ktab[i]->key, f->key) == 0)
            return 1;
    return 0;
}

static void
in_put(const struct incoming *in, struct rfile **t, struct rfile *f,
    in_home_fn *home)
{
    size_t mask = in->tab_cap - 1, i = home(in, f);

    while (t[i] != NULL)
        i = (i + 1) & mask;
    t[i] = f;
}

/* Adds f, whose key is set, to both tables. */
static int
in_insert(struct incoming *in, struct rfile *f)
{
    if ((in->nactive + 1) * 2 > in->tab_cap) {
        size_t ncap = in->tab_cap ? in->tab_cap * 2 : 64, i, old = in->tab_cap;
        struct rfile **ov = in->tab, **okv = in->ktab;

        in->tab = xcalloc(ncap, sizeof(*in->tab));
        in->ktab = xcalloc(ncap, sizeof(*in->ktab));
        if (in->tab == NULL || in->ktab == NULL) {
            xfree(in->tab);
            xfree(in->ktab);
            in->tab = ov;
            in->ktab = okv;
            return FERRY_ERR_NOMEM;
        }
        in->tab_cap = ncap;
        for (i = 0; i < old; i++) {
            if (ov[i] != NULL)
                in_put(in, in->tab, ov[i], in_id_home);
            if (okv[i] != NULL)
                in_put(in, in->ktab, okv[i], in_key_home);
        }
        xfree(ov);
        xfree(okv);
    }
    in_put(in, in->tab, f, in_id_home);
    in_put(in, in->ktab, f, in_key_home);
    in->nactive++;
    return 0;
}

/* Empties f's slot of t; later members of its run move back so that
 * they stay reachable. */
static void
in_vacate(const struct incoming *in, struct rfile **t, struct rfile *f,
    in_home_fn *home)
{
    size_t mask = in->tab_cap - 1, i = home(in, f), j, k;

    while (t[i] != f)
        i = (i + 1) & mask;
    t[i] = NULL;
    for (j = (i + 1) & mask; t[j] != NULL; j = (j + 1) & mask) {
        k = home(in, t[j]);
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            t[i] = t[j];
            t[j] = NULL;
            i = j;
        }
    }
}

static void
in_remove(struct incoming *in, struct rfile *f)
{
    in_vacate(in, in->tab, f, in_id_home);
    in_vacate(in, in->ktab, f, in_key_home);
    in->nactive--;
}

static int
in_wanted_mark(struct incoming *in, uint32_t id)
{
    size_t byte = id / 8;

    if (byte >= in->wanted_cap) {
        size_t ncap = in->wanted_cap ? in->wanted_cap : 64;
        uint8_t *nv;

        while (ncap <= byte)
            ncap *= 2;
        if ((nv = xrealloc(in->wanted, ncap)) == NULL)
            return FERRY_ERR_NOMEM;
        memset(nv + in->wanted_cap, 0, ncap - in->wanted_cap);
        in->wanted = nv;
        in->wanted_cap = ncap;
    }
    in->wanted[byte] |= (uint8_t)(1u << (id % 8));
    return 0;
}

static int
in_was_wanted(const struct incoming *in, uint32_t id)
{
    return id / 8 < in->wanted_cap &&
        (in->wanted[id / 8] & (1u << (id % 8))) != 0;
}

/* Ends a file's life here. */
static void
rfile_free(struct incoming *in, struct rfile *f, enum partial_end how)
{
    int partfd = -1;

    if (f->pt != NULL && dest_part_dir(in->d, &partfd) == 0)
        partial_close(f->pt, partfd, how);
    else if (f->pt != NULL)
        partial_close(f->pt, -1, PARTIAL_KEEP);
    if (f->bits != NULL)
        in->blocks_tracked -= f->nblocks;
    if (f->hf != NULL)
        in->pending -= hash_file_pending(f->hf);
    hash_file_free(f->hf);
    partial_claim_free(&f->claim);
    xfree(f->bits);
    xfree(f->path);
    xfree(f);
}

static void
in_drop(struct incoming *in, struct rfile *f, enum partial_end how)
{
    struct rfile **pp;

    for (pp = &in->vhead; *pp != NULL; pp = &(*pp)->vnext) {
        if (*pp == f) {
            *pp = f->vnext;
            break;
        }
    }
    in->vtail = NULL;
    for (pp = &in->vhead; *pp != NULL; pp = &(*pp)->vnext)
        in->vtail = *pp;
    in_remove(in, f);
    rfile_free(in, f, how);
}

/* Commits what is complete when the connection is gone: those files are
 * whole and checked, and nobody is told (a later run finds them up to
 * date). */
static void
incoming_commit_orphans(struct incoming *in)
{
    struct buf sink;

    buf_init(&sink, (size_t)-1);
    if (dest_batch_len(in->d) > 0 && incoming_flush(in, &sink) != 0)
        log_debug("%s: commit on close failed", dest_root(in->d));
    buf_cleanup(&sink);
}

void
incoming_free(struct incoming *in)
{
    size_t i;

    if (in == NULL)
        return;
    volrecv_free(in->vr);
    incoming_commit_orphans(in);
    for (i = 0; i < in->tab_cap; i++)
        if (in->tab[i] != NULL)
            rfile_free(in, in->tab[i], PARTIAL_KEEP);
    xfree(in->tab);
    xfree(in->ktab);
    xfree(in->wanted);
    buf_cleanup(&in->outbox);
    pathset_free(&in->done);
    zst_free(in->zst);
    xfree(in->scratch);
    xfree(in);
}

void
incoming_restart(struct incoming *in)
{
    size_t i;

    volrecv_restart(in->vr);
    incoming_commit_orphans(in);
    for (i = 0; i < in->tab_cap; i++) {
        struct rfile *f = in->tab[i];

        if (f == NULL)
            continue;
        xfer_sub(&in->x->st.bytes_done, f->counted);
        rfile_free(in, f, PARTIAL_KEEP);
        in->tab[i] = NULL;
        in->ktab[i] = NULL;
    }
    in->nactive = 0;
    in->blocks_tracked = 0;
    buf_reset(&in->outbox);  /* for the attempt that is gone */
    in->vhead = in->vtail = NULL;
    memset(in->wanted, 0, in->wanted_cap);
}

struct buf *
incoming_outbox(struct incoming *in)
{
    return &in->outbox;
}

uint64_t
incoming_active(const struct incoming *in)
{
    return in->nactive;
}

const struct msg_summary *
incoming_summary(const struct incoming *in)
{
    return &in->sum;
}

void
incoming_count_failed(struct incoming *in)
{
    in->sum.files_failed++;
}

void
incoming_skipped(struct incoming *in, const char *path, uint64_t size)
{
    in->sum.files_skipped++;
    if (pathset_add(&in->done, path)) {
        xfer_add(&in->x->st.files_skipped, 1);
        xfer_add(&in->x->st.bytes_done, size);
        xfer_file(in->x, path, "skipped", size);
    }
}

static int
file_done(struct buf *out, uint32_t id, int code)
{
    struct msg_file_done m;
    const char *text = code != 0 ? ferry_strerror(code) : "";

    memset(&m, 0, sizeof(m));
    m.id = id;
    m.code = proto_err_to_wire(code);
    m.text.p = text;
    m.text.len = strlen(text);
    return msg_file_done_encode(out, &m);
}

/* The per-block state, made on first use. */
static int
rfile_bits(struct incoming *in, struct rfile *f)
{
    if (f->bits != NULL || f->nblocks == 0)
        return 0;
    if (in->blocks_tracked + f->nblocks > INCOMING_MAX_BLOCKS)
        return FERRY_ERR_TOO_LARGE;
    if ((f->bits = xcalloc(f->nblocks, 1)) == NULL)
        return FERRY_ERR_NOMEM;
    in->blocks_tracked += f->nblocks;
    return 0;
}

static int
rfile_hash(struct rfile *f, uint32_t block_size)
{
    if (f->hf == NULL && (f->hf = hash_file_new(f->size,
        block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    return 0;
}

/* The part file, made (and the state directory with it) on first use. */
static int
rfile_open(struct incoming *in, struct rfile *f)
{
    struct partial_id id = { f->path, f->size, f->mtime_sec, f->mtime_nsec,
        f->mode, in->block_size };
    int partfd, r;

    if (f->pt != NULL)
        return 0;
    if ((r = dest_part_dir(in->d, &partfd)) != 0)
        return r;
    return partial_open(partfd, f->key, &id, NULL, &f->pt);
}

/* A local problem with this file: fatal when every later write would
 * fail too, else the file fails and the rest of its data is ignored. */
static int
rfile_error(struct incoming *in, struct rfile *f, int r)
{
    if (dest_fatal_errno(r))
        return xfer_fail(in->x, r, "%s/%s: %s", dest_root(in->d), f->path,
            ferry_strerror(r));
    if (r == FERRY_ERR_NOMEM || r == FERRY_ERR_TOO_LARGE ||
        r == FERRY_ERR_PROTOCOL)
        return r;
    if (f->failed == 0)
        f->failed = r;
    return 0;
}

/* Ends a file the sender gave up on, or that failed here. */
static int
rfile_fail(struct incoming *in, struct rfile *f, enum xfer_side side,
    int code, const char *text, struct buf *out)
{
    int r;

    xfer_problem(in->x, side, f->path, code, text);
    xfer_add(&in->x->st.bytes_done, f->size - f->counted);
    in->sum.files_failed++;
    r = file_done(out, f->id, code);
    in_drop(in, f, PARTIAL_DISCARD);
    return r;
}

/* Every block is there and the sender has ended: check the file hash
 * and stage the file for the batch commit. */
static int
rfile_complete(struct incoming *in, struct rfile *f, struct buf *out)
{
    struct dest_staged s;
    struct hash128 h;
    int r, fd;

    if (!f->ended || f->nresolved != f->nblocks)
        return 0;
    if (f->failed != 0)
        return rfile_fail(in, f, SIDE_DEST, f->failed, NULL, out);
    if ((r = rfile_hash(f, in->block_size)) != 0)
        return r;
    hash_file_final(f->hf, &h);
    if (!hash_equal(&h, &f->end_hash))
        return rfile_fail(in, f, SIDE_DEST, FERRY_ERR_HASH_MISMATCH, NULL,
            out);
    if ((r = rfile_open(in, f)) != 0 ||
        (r = partial_sync(f->pt)) != 0) {
        if ((r = rfile_error(in, f, r)) != 0)
            return r;
        return rfile_fail(in, f, SIDE_DEST, f->failed, NULL, out);
    }
    fd = partial_fd(f->pt);
    if (fchmod(fd, f->mode) != 0 ||
        fsx_set_mtime(fd, -1, NULL, f->mtime_sec, f->mtime_nsec) != 0) {
        if ((r = rfile_error(in, f, -errno)) != 0)
            return r;
        return rfile_fail(in, f, SIDE_DEST, f->failed, NULL, out);
    }
    memset(&s, 0, sizeof(s));
    s.id = f->id;
    s.path = f->path;
    s.size = f->size;
    s.pt = f->pt;
    s.owner = f;
    f->path = NULL;
    f->pt = NULL;
    /* The counts travel with the staged file to its commit. */
    if ((r = dest_stage(in->d, &s)) != 0) {
        f->path = s.path;
        f->pt = s.pt;
        return r;
    }
    in_remove(in, f);
    f->vnext = NULL;
    return dest_batch_full(in->d) ? incoming_flush(in, out) : 0;
}

static int
incoming_committed(void *ctx, struct dest_staged *s)
{
    struct incoming *in = ((void **)ctx)[0];
    struct buf *out = ((void **)ctx)[1];
    struct rfile *f = s->owner;
    int r;

    if (s->failed != 0) {
        xfer_problem(in->x, SIDE_DEST, s->path, s->failed, NULL);
        in->sum.files_failed++;
    } else {
        xfer_add(&in->x->st.files_sent, 1);
        xfer_add(&in->x->st.bytes_payload, f->size);
        xfer_add(&in->x->st.bytes_literal, f->n_literal);
        xfer_add(&in->x->st.bytes_sparse, f->n_sparse);
        xfer_add(&in->x->st.resumed_bytes, f->n_resumed);
        (void)pathset_add(&in->done, s->path);
        xfer_file(in->x, s->path, "sent", f->size);
        in->sum.files_committed++;
        in->sum.bytes_written += f->size;
    }
    r = file_done(out, s->id, s->failed);
    rfile_free(in, f, PARTIAL_DONE);
    return r;
}

int
incoming_flush(struct incoming *in, struct buf *out)
{
    void *ctx[2] = { in, out };

    return dest_flush(in->d, incoming_committed, ctx);
}

/* SIGS for blocks [first, first + count) of f: NEED, or HAVE with their
 * hashes (consecutive blocks). */
static int
sigs_emit(struct buf *out, uint32_t id, uint64_t first, uint64_t count,
    const struct hash128 *hashes)
{
    struct msg_sigs m;
    int r;

    while (count > 0) {
        memset(&m, 0, sizeof(m));
        m.id = id;
        m.first = first;
        m.count = count > PROTO_MAX_SIGS ? PROTO_MAX_SIGS : (uint32_t)count;
        m.flags = hashes != NULL ? SIGS_F_HAVE : 0;
        m.hashes = hashes != NULL ? hashes[0].b : NULL;
        if ((r = msg_sigs_encode(out, &m)) != 0)
            return r;
        first += m.count;
        count -= m.count;
        if (hashes != NULL)
            hashes += m.count;
    }
    return 0;
}

static void
rfile_sign(struct rfile *f, uint64_t first, uint64_t count, int have)
{
    uint64_t i;

    for (i = first; i < first + count; i++)
        f->bits[i] |= B_SIGNED | (have ? B_HAVE : 0);
    f->nsigned += count;
}

/* The blocks the journal does not claim: needed at once. */
static int
rfile_sign_gaps(struct rfile *f, struct buf *out)
{
    uint64_t next = 0, k;
    int r;

    for (k = 0; k <= f->claim.n; k++) {
        uint64_t end = k < f->claim.n ? f->claim.index[k] : f->nblocks;

        if (end > next) {
            if ((r = sigs_emit(out, f->id, next, end - next, NULL)) != 0)
                return r;
            rfile_sign(f, next, end - next, 0);
        }
        next = end + 1;
    }
    return 0;
}

/* The kept partial cannot be read back: ask for the rest of what it
 * claims (so the sender can end the file), and fail the file. */
static int
rfile_verify_failed(struct incoming *in, struct rfile *f, struct buf *out,
    int err)
{
    uint64_t k;
    int r;

    if ((r = rfile_error(in, f, err)) != 0)
        return r;
    for (k = f->verified; k < f->claim.n; k++) {
        if ((r = sigs_emit(out, f->id, f->claim.index[k], 1, NULL)) != 0)
            return r;
        rfile_sign(f, f->claim.index[k], 1, 0);
    }
    f->verified = f->claim.n;
    return 0;
}

/* Reads back claimed blocks of f, up to *budget bytes, and says which
 * are held (HAVE, with the hash read) and which not (NEED). */
static int
rfile_verify(struct incoming *in, struct rfile *f, struct buf *out,
    uint64_t *budget)
{
    struct partial_claim *c = &f->claim;
    int r;

    if (in->scratch == NULL &&
        (in->scratch = xmalloc(in->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    while (f->verified < c->n && *budget > 0) {
        uint64_t k = f->verified, start = k;
        struct hash128 h;
        int good = 0;

        /* A run of consecutive blocks that read back alike. */
        for (; k < c->n && *budget > 0; k++) {
            uint64_t len = rfile_block_len(in, f, c->index[k]);
            int ok;

            if (k > start && c->index[k] != c->index[k - 1] + 1)
                break;
            if ((r = partial_read_block(f->pt, c->index[k], (size_t)len,
                in->scratch, &h)) != 0)
                return rfile_verify_failed(in, f, out, r);
            ok = hash_equal(&h, &c->hash[k]);
            if (k == start)
                good = ok;
            else if (ok != good)
                break;
            *budget -= len < *budget ? len : *budget;
        }
        if ((r = sigs_emit(out, f->id, c->index[start], k - start,
            good ? &c->hash[start] : NULL)) != 0)
            return r;
        rfile_sign(f, c->index[start], k - start, good);
        f->verified = k;
    }
    return 0;
}

static void
vqueue_push(struct incoming *in, struct rfile *f)
{
    f->vnext = NULL;
    if (in->vtail != NULL)
        in->vtail->vnext = f;
    else
        in->vhead = f;
    in->vtail = f;
}

/* What an earlier attempt or run left of this very version of the file:
 * kept when its journal claims anything. */
static int
rfile_resume(struct incoming *in, struct rfile *f, const char **warning)
{
    struct partial_id id = { f->path, f->size, f->mtime_sec, f->mtime_nsec,
        f->mode, in->block_size };
    int r, partfd;

    if (!(in->x->caps & PROTO_CAP_RESUME) || f->size < PARTIAL_JOURNAL_MIN ||
        !dest_find_state(in->d) || dest_part_dir(in->d, &partfd) != 0)
        return 0;
    if ((r = partial_probe(partfd, f->key, &id, &f->claim)) != 0)
        return r;
    if (f->claim.old_format)
        *warning = "a partial file from an older ferry was found; "
            "it is sent again";
    if (f->claim.n == 0)
        return 0;
    if ((r = rfile_bits(in, f)) != 0 ||
        partial_open(partfd, f->key, &id, &f->claim, &f->pt) != 0) {
        /* Not usable after all: start afresh. */
        partial_claim_free(&f->claim);
        return r;
    }
    f->resume = 1;
    return 0;
}

/* A key no other active file uses (the salt makes a clash a fluke, and
 * this makes it harmless). */
static void
rfile_key(struct incoming *in, struct rfile *f)
{
    partial_key(dest_salt(in->d), f->path, f->key);
    if (in_key_taken(in, f))
        snprintf(f->key, sizeof(f->key), "%08x%08x", f->id,
            (unsigned)in->nactive);
}

int
incoming_want(struct incoming *in, const struct msg_entry *m,
    const char *path, struct buf *out)
{
    const char *warning = NULL;
    struct msg_reply rep;
    struct rfile *f;
    int r, partfd;

    if (in->nactive >= INCOMING_MAX_FILES)
        return FERRY_ERR_PROTOCOL;
    /* Staging keys are salted with the destination's secret, which comes
     * with the state directory: made now, so that a path has the same key
     * in every run (a resume finds its partial). Without it no file can
     * be staged: the transfer stops. */
    if ((r = dest_part_dir(in->d, &partfd)) != 0)
        return r;
    if ((f = xcalloc(1, sizeof(*f))) == NULL)
        return FERRY_ERR_NOMEM;
    if ((f->path = xstrdup(path)) == NULL) {
        xfree(f);
        return FERRY_ERR_NOMEM;
    }
    f->id = m->id;
    f->size = m->size;
    f->mode = m->mode;
    f->mtime_sec = m->mtime_sec;
    f->mtime_nsec = m->mtime_nsec;
    f->nblocks = m->size / in->block_size + (m->size % in->block_size != 0);
    rfile_key(in, f);
    if ((r = in_wanted_mark(in, f->id)) != 0 || (r = in_insert(in, f)) != 0) {
        rfile_free(in, f, PARTIAL_KEEP);
        return r;
    }
    if ((r = rfile_resume(in, f, &warning)) != 0)
        return r;
    memset(&rep, 0, sizeof(rep));
    rep.id = m->id;
    rep.action = REPLY_WANT;
    rep.flags = f->resume ? REPLY_F_RESUME : 0;
    rep.text.p = warning != NULL ? warning : "";
    rep.text.len = strlen(rep.text.p);
    if ((r = msg_reply_encode(out, &rep)) != 0)
        return r;
    if (f->resume) {
        if ((r = rfile_sign_gaps(f, out)) != 0)
            return r;
        vqueue_push(in, f);
    }
    return 0;
}

/* Looks up the file a data frame is for: NULL with *r = 0 for a late
 * duplicate of a finished file (ignore it). */
static struct rfile *
in_data_file(struct incoming *in, uint32_t id, int *r)
{
    struct rfile *f = in_find(in, id);

    *r = 0;
    if (f == NULL && !in_was_wanted(in, id))
        *r = FERRY_ERR_PROTOCOL;
    return f;
}

/* Block index of f resolved with hash h. */
static int
rfile_resolve(struct incoming *in, struct rfile *f, uint64_t index,
    const struct hash128 *h)
{
    size_t before;
    int r;

    if ((r = rfile_hash(f, in->block_size)) != 0)
        return r;
    /* Blocks far ahead of a gap wait in memory: a sender that spreads
     * them wider than INCOMING_MAX_PENDING is not one of ours. */
    before = hash_file_pending(f->hf);
    if ((r = hash_file_put(f->hf, index, h, INCOMING_MAX_PENDING -
        (size_t)in->pending + before)) != 0)
        return r == FERRY_ERR_TOO_LARGE ? FERRY_ERR_PROTOCOL : r;
    in->pending = in->pending - before + hash_file_pending(f->hf);
    f->bits[index] |= B_RESOLVED;
    f->nresolved++;
    return 0;
}

int
incoming_block(struct incoming *in, const struct msg_block *m,
    struct buf *out)
{
    struct rfile *f;
    struct hash128 h;
    const uint8_t *data = m->data;
    uint64_t index, len;
    int r, zero = (m->flags & BLOCK_F_ZERO) != 0;

    if ((f = in_data_file(in, m->id, &r)) == NULL)
        return r;
    index = m->offset / in->block_size;
    if (m->offset % in->block_size != 0 || index >= f->nblocks ||
        m->raw_len != rfile_block_len(in, f, index))
        return FERRY_ERR_PROTOCOL;
    if ((r = rfile_bits(in, f)) != 0)
        return r == FERRY_ERR_TOO_LARGE ? FERRY_ERR_PROTOCOL : r;
    /* With a resume, only what the receiver said is needed or held. */
    if (f->resume && !(f->bits[index] & B_SIGNED))
        return FERRY_ERR_PROTOCOL;
    if (f->bits[index] & B_RESOLVED)
        return 0;  /* sent again after a stream was lost */
    if (m->flags & BLOCK_F_ZSTD) {
        if (!(in->x->caps & PROTO_CAP_ZSTD))
            return FERRY_ERR_PROTOCOL;  /* not negotiated */
        if ((in->zst == NULL && (in->zst = zst_new()) == NULL) ||
            (in->scratch == NULL &&
            (in->scratch = xmalloc(in->block_size)) == NULL))
            return FERRY_ERR_NOMEM;
        /* A frame that does not inflate to exactly raw_len is as bad as
         * a wrong hash. */
        if (zst_decompress(in->zst, in->scratch, m->raw_len, m->data,
            m->data_len) != 0) {
            /* It cannot be written; the file fails, the block still
             * counts as settled so that the file can end. */
            f->failed = f->failed ? f->failed : FERRY_ERR_HASH_MISMATCH;
            if ((r = rfile_resolve(in, f, index, &m->hash)) != 0)
                return r;
            return rfile_complete(in, f, out);
        }
        xfer_add(&in->x->st.bytes_compressed, m->raw_len - m->data_len);
        data = in->scratch;
    }
    if (zero)
        hash_zero_block(m->raw_len, &h);
    else
        hash_block(data, m->raw_len, &h);
    if (!hash_equal(&h, &m->hash) && f->failed == 0)
        f->failed = FERRY_ERR_HASH_MISMATCH;
    if ((r = rfile_resolve(in, f, index, &h)) != 0)
        return r;
    len = m->raw_len;
    f->counted += len;
    xfer_add(&in->x->st.bytes_done, len);
    if (zero) {
        f->n_sparse += len;
    } else {
        f->n_literal += len;
        xfer_add(&in->x->st.bytes_moved, len);
    }
    if (f->failed != 0)
        return rfile_complete(in, f, out);
    if ((r = rfile_open(in, f)) != 0 ||
        (zero && f->resume && (r = partial_zero(f->pt, m->offset,
        m->raw_len)) != 0) ||
        (!zero && (r = fsx_pwrite_all(partial_fd(f->pt), data, m->raw_len,
        m->offset)) != 0) ||
        (r = partial_add(f->pt, index, &h, zero ? 0 : m->raw_len)) != 0) {
        if ((r = rfile_error(in, f, r)) != 0)
            return r;
    }
    return rfile_complete(in, f, out);
}

/* Finds the hash the journal recorded (and read-back confirmed) for a
 * held block. */
static const struct hash128 *
rfile_held_hash(const struct rfile *f, uint64_t index)
{
    uint64_t lo = 0, hi = f->claim.n;

    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;

        if (f->claim.index[mid] < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->claim.n && f->claim.index[lo] == index ?
        &f->claim.hash[lo] : NULL;
}

int
incoming_match(struct incoming *in, const struct msg_match *m,
    struct buf *out)
{
    const struct hash128 *h;
    struct rfile *f;
    uint64_t i, len;
    int r;

    if ((f = in_data_file(in, m->id, &r)) == NULL)
        return r;
    if (!f->resume || m->first + m->count > f->nblocks)
        return FERRY_ERR_PROTOCOL;
    for (i = m->first; i < m->first + m->count; i++) {
        /* Only blocks we said we hold, once. */
        if ((f->bits[i] & (B_HAVE | B_RESOLVED)) != B_HAVE ||
            (h = rfile_held_hash(f, i)) == NULL)
            return FERRY_ERR_PROTOCOL;
        if ((r = rfile_resolve(in, f, i, h)) != 0)
            return r;
        len = rfile_block_len(in, f, i);
        f->n_resumed += len;
        f->counted += len;
        xfer_add(&in->x->st.bytes_done, len);
    }
    return rfile_complete(in, f, out);
}

int
incoming_file_end(struct incoming *in, const struct msg_file_end *m,
    struct buf *out)
{
    char text[PROTO_MAX_MESSAGE + 1];
    struct rfile *f;
    int r;

    if ((f = in_data_file(in, m->id, &r)) == NULL)
        return r;
    if (f->ended)
        return 0;  /* sent again after a stream was lost */
    if (m->code != 0) {
        /* The sender gave up on it (changed or unreadable): the source
         * side's failure; keep nothing. */
        snprintf(text, sizeof(text), "%.*s", (int)m->text.len, m->text.p);
        return rfile_fail(in, f, SIDE_SOURCE, proto_err_from_wire(m->code),
            text, out);
    }
    /* The sender cannot have settled blocks we have not described. */
    if (f->resume && f->nsigned != f->nblocks)
        return FERRY_ERR_PROTOCOL;
    f->ended = 1;
    f->end_hash = m->hash;
    if (f->nblocks == 0 && (r = rfile_hash(f, in->block_size)) != 0)
        return r;
    return rfile_complete(in, f, out);
}

int
incoming_work(struct incoming *in, struct buf *out, int idle, int verify,
    int *more)
{
    uint64_t budget = INCOMING_VERIFY_BYTES;
    int r;

    *more = 0;
    while (verify && in->vhead != NULL && budget > 0 &&
        buf_used(out) < (4u << 20)) {
        struct rfile *f = in->vhead;

        if ((r = rfile_verify(in, f, out, &budget)) != 0)
            return r;
        if (f->verified == f->claim.n || f->failed != 0) {
            in->vhead = f->vnext;
            if (in->vhead == NULL)
                in->vtail = NULL;
            f->vnext = NULL;
        }
    }
    *more = verify && in->vhead != NULL;
    if (dest_batch_full(in->d) || (idle && dest_batch_len(in->d) > 0))
        return incoming_flush(in, out);
    return 0;
}

/* Volumes (volrecv.c) */

struct volrecv *
incoming_volrecv(struct incoming *in)
{
    if (in->vr == NULL)
        in->vr = volrecv_new(in, in->d, in->block_size, in->x);
    return in->vr;
}

int
incoming_pack_claim(struct incoming *in, uint32_t id, unsigned stream,
    const char **path, uint64_t *size)
{
    struct rfile *f = in_find(in, id);

    *path = NULL;
    *size = 0;
    /* Data may already have come in blocks after a stream was lost: the
     * volume's copy is as good, and whichever commits first answers. */
    if (f == NULL || f->packed_by != 0)
        return FERRY_ERR_PROTOCOL;
    f->packed_by = stream + 1;
    *path = f->path;
    *size = f->size;
    return 0;
}

void
incoming_pack_release(struct incoming *in, uint32_t id, unsigned stream)
{
    struct rfile *f = in_find(in, id);

    if (f != NULL && f->packed_by == stream + 1)
        f->packed_by = 0;
}

int
incoming_pack_done(struct incoming *in, uint32_t id, unsigned stream,
    struct buf *out)
{
    struct rfile *f = in_find(in, id);

    /* Committed in blocks meanwhile: answered already. */
    if (f == NULL || f->packed_by != stream + 1)
        return 0;
    xfer_add(&in->x->st.files_sent, 1);
    xfer_add(&in->x->st.bytes_payload, f->size);
    xfer_add(&in->x->st.bytes_literal, f->size);
    xfer_add(&in->x->st.bytes_moved, f->size);
    xfer_add(&in->x->st.bytes_done, f->size - f->counted);
    (void)pathset_add(&in->done, f->path);
    xfer_file(in->x, f->path, "sent", f->size);
    in->sum.files_committed++;
    in->sum.bytes_written += f->size;
    in_drop(in, f, PARTIAL_DISCARD);
    return file_done(out, id, 0);
}
