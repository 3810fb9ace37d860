#include "../incoming_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "../../common/log.h"
#include "delta_index.h"

/* 1 if the OPEN flags and sizes call for delta against a basis of
 * basis_size bytes (docs/DESIGN.md, "Delta"). */
static int
incoming_delta_wanted(const struct incoming *in, const struct rfile *f,
    uint64_t basis_size)
{
    uint32_t flags = dest_flags(in->d);

    if (!(in->x->caps & PROTO_CAP_DELTA) || (flags & OPEN_F_DELTA_NEVER) ||
        f->size == 0 || basis_size == 0)
        return 0;
    if (flags & OPEN_F_DELTA_ALWAYS)
        return 1;
    return f->size >= INCOMING_DELTA_AUTO_MIN &&
        basis_size >= INCOMING_DELTA_AUTO_MIN;
}

/* The file at path beneath the basis directory (dest_set_basis_dir), as
 * any path beneath the destination: an open fd, or -1. */
static int
incoming_delta_basis_in_dir(const struct incoming *in, const char *path)
{
    int dirfd, fd;
    const char *name;

    if (dest_basis_dir_fd(in->d) < 0 ||
        fsx_open_parent(dest_basis_dir_fd(in->d), path, 0, &dirfd,
        &name) != 0)
        return -1;
    fd = openat(dirfd, name, FSX_O_READ);
    close(dirfd);
    return fd;
}

/* The basis's path relative to the root, as BASIS names it: path's
 * directory and the neighbour's name. */
static void
incoming_delta_basis_rel_sibling(const char *path, const char *name, char *out,
    size_t n)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL)
        snprintf(out, n, "%s", name);
    else
        snprintf(out, n, "%.*s/%s", (int)(slash - path), path, name);
}

int
incoming_delta_open(struct incoming *in, struct rfile *f, const char *path)
{
    char pick[FSX_NAME_MAX + 1], rel[PROTO_MAX_PATH + 1];
    const char *name;
    struct stat st;
    uint64_t n;
    int pfd, fd, replaced;

    if (!incoming_delta_wanted(in, f, UINT64_MAX) ||
        dest_parent(in->d, path, &pfd, &name) != 0)
        return 0;
    /* No basis is no error: the file is sent whole. */
    fd = openat(pfd, name, FSX_O_READ);
    replaced = fd >= 0;
    /* A basis the sender may hold under the same path (rel), for
     * tensors; none for one in the basis directory. */
    snprintf(rel, sizeof(rel), "%s", path);
    if (fd < 0 && errno == ENOENT && dest_basis(in->d) != NULL) {
        /* --basis FILE: opened beneath the destination like any path. */
        if (dest_parent(in->d, dest_basis(in->d), &pfd, &name) == 0)
            fd = openat(pfd, name, FSX_O_READ);
        snprintf(rel, sizeof(rel), "%s", dest_basis(in->d));
    } else if (fd < 0 && errno == ENOENT &&
        (dest_flags(in->d) & OPEN_F_BASIS_AUTO)) {
        /* The same path in the basis directory, else a neighbour. */
        rel[0] = '\0';
        if ((fd = incoming_delta_basis_in_dir(in, path)) < 0 &&
            !delta_place_cold(&in->places, delta_place(path)) &&
            (fd = incoming_basis_pick(pfd, name, f->size, pick)) >= 0)
            incoming_delta_basis_rel_sibling(path, pick, rel, sizeof(rel));
    }
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        !incoming_delta_wanted(in, f, (uint64_t)st.st_size)) {
        close(fd);
        return 0;
    }
    /* A checkpoint goes as its tensors' differences instead. */
    if (rel[0] != '\0' && incoming_tensor_open(in, f, fd, &st, rel)) {
        f->basis_replaced = replaced;
        return 0;
    }
    if (msg_delta_nsigs((uint64_t)st.st_size, delta_index_sig_block(
        (uint64_t)st.st_size, in->block_size)) > INCOMING_MAX_DELTA_PIECES) {
        close(fd);
        return 0;
    }
    f->delta = 1;
    f->basis_replaced = replaced;
    f->place = delta_place(path);
    f->basis_fd = fd;
    f->basis_size = (uint64_t)st.st_size;
    f->basis_st = st;
    f->sig_block = delta_index_sig_block(f->basis_size, in->block_size);
    f->npieces = msg_delta_nsigs(f->basis_size, f->sig_block);
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    /* Signatures kept when we wrote it spare the read to sign it. Else
     * those made by reading it are held, where this file's own may be
     * kept (incoming_keep). */
    if (in->ks == NULL || in->kept_mem + keptsig_bytes(f->basis_size,
        f->sig_block, in->block_size) > INCOMING_KEPT_MEM)
        return 0;
    if (keptsig_load(in->ks, &st, f->sig_block, in->block_size,
        &f->basis_sigs, &n) == 0) {
        f->sigs_from_store = 1;
        f->basis_nblocks = msg_delta_nsigs(f->basis_size, in->block_size);
        f->blocks_sent = 0;
        in->kept_mem += f->basis_nblocks * HASH_LEN;
        log_info("%s/%s: the basis's signatures were kept when it was "
            "written: not read to sign it", dest_root(in->d), f->path);
    } else if ((f->basis_sigs = xmalloc((size_t)f->npieces *
        DELTA_SIG_LEN)) == NULL) {
        return 0;  /* signed all the same, only not held */
    }
    in->kept_mem += f->npieces * DELTA_SIG_LEN;
    return 0;
}

/* Puts f at the end of the signing queue. */
static void
incoming_delta_sign_enqueue(struct incoming *in, struct rfile *f)
{
    f->snext = NULL;
    if (in->stail != NULL)
        in->stail->snext = f;
    else
        in->shead = f;
    in->stail = f;
}

/*
 * One probe at a time in a place where none found anything yet: f, at
 * the head of the signing queue, is held (1) while another file's probe
 * there waits for its verdict, which may give up the place (delta_places)
 * and stop f before a byte of its basis is read. Else f opens the
 * place's probe, if there is room to say so.
 */
static int
incoming_delta_probe_gate(struct incoming *in, struct rfile *f)
{
    unsigned i, room = DELTA_PLACES;

    if (f->probing || f->signed_pieces > 0 || f->sign_until >= f->npieces ||
        delta_place_warm(&in->places, f->place))
        return 0;
    for (i = 0; i < DELTA_PLACES; i++) {
        if (in->probing[i] == NULL)
            room = i;
        else if (in->probing[i]->place == f->place)
            return 1;
    }
    if (room < DELTA_PLACES) {
        in->probing[room] = f;
        f->probing = 1;
    }
    return 0;
}

/* f's probe had its verdict, or f is gone: the files held for it go back
 * to the queue, in order. */
static void
incoming_delta_probe_settled(struct incoming *in, struct rfile *f)
{
    struct rfile *g, *keep = NULL, *ktail = NULL, *next;
    unsigned i;

    if (!f->probing)
        return;
    f->probing = 0;
    for (i = 0; i < DELTA_PLACES; i++)
        if (in->probing[i] == f)
            in->probing[i] = NULL;
    for (g = in->hhead; g != NULL; g = next) {
        next = g->snext;
        g->snext = NULL;
        if (g->place == f->place) {
            g->sign_held = 0;
            incoming_delta_sign_enqueue(in, g);
        } else if (ktail != NULL) {
            ktail->snext = g;
            ktail = g;
        } else {
            keep = ktail = g;
        }
    }
    in->hhead = keep;
    in->htail = ktail;
}

/* Takes f, the head of the signing queue, off it to the held list. */
static void
incoming_delta_probe_hold(struct incoming *in, struct rfile *f)
{
    in->shead = f->snext;
    if (in->shead == NULL)
        in->stail = NULL;
    f->snext = NULL;
    f->sign_held = 1;
    if (in->htail != NULL)
        in->htail->snext = f;
    else
        in->hhead = f;
    in->htail = f;
}

void
incoming_delta_start(struct incoming *in, struct rfile *f)
{
    /* A basis the sender's probe may find nothing in is signed only as
     * far as the probe searches it, until the sender asks for the rest:
     * a neighbour that shares nothing costs that part, however late its
     * DELTA_STOP would come. Kept signatures cost no read, and a resumed
     * or DELTA_ALWAYS file is not probed. */
    f->sign_until = f->npieces;
    if ((in->x->caps & PROTO_CAP_DELTA_GO) && !f->resume &&
        !f->sigs_from_store && !(dest_flags(in->d) & OPEN_F_DELTA_ALWAYS))
        f->sign_until = delta_probe_pieces(f->size, in->block_size,
            f->basis_size, f->sig_block);
    incoming_delta_sign_enqueue(in, f);
}

/* Frees the basis's signatures held for f, settled or dropped. */
static void
incoming_delta_basis_sigs_release(struct incoming *in, struct rfile *f)
{
    if (f->basis_sigs == NULL)
        return;
    xfree(f->basis_sigs);
    f->basis_sigs = NULL;
    f->sigs_from_store = 0;
    in->kept_mem -= f->npieces * DELTA_SIG_LEN +
        f->basis_nblocks * HASH_LEN;
    f->basis_nblocks = 0;
}

void
incoming_delta_forget(struct incoming *in, struct rfile *f)
{
    struct rfile **pp;

    incoming_tensor_forget(in, f);
    if (!f->delta)
        return;
    incoming_delta_probe_settled(in, f);
    if (f->sign_held) {
        for (pp = &in->hhead; *pp != f; pp = &(*pp)->snext)
            ;
        *pp = f->snext;
        in->htail = NULL;
        for (pp = &in->hhead; *pp != NULL; pp = &(*pp)->snext)
            in->htail = *pp;
        f->sign_held = 0;
        f->snext = NULL;
    }
    for (pp = &in->shead; *pp != NULL; pp = &(*pp)->snext) {
        if (*pp == f) {
            *pp = f->snext;
            /* Signatures not yet sent were of f, the head. */
            if (pp == &in->shead)
                in->nsigs = 0;
            break;
        }
    }
    in->stail = NULL;
    for (pp = &in->shead; *pp != NULL; pp = &(*pp)->snext)
        in->stail = *pp;
    f->snext = NULL;
    close(f->basis_fd);
    f->basis_fd = -1;
    f->delta = 0;
    incoming_delta_basis_sigs_release(in, f);
}

void
incoming_set_keptsig(struct incoming *in, struct keptsig_store *ks)
{
    in->ks = ks;
}

/*
 * Signs a block built from DELTA m for f's ksig. A piece that one COPY
 * took whole from a piece of the basis (at the same place within a
 * piece) has that piece's signature, since the block's hash matched and
 * the sender found those bytes by it: only the rest is signed. On a
 * checkpoint rewritten in place that is the few pieces that changed.
 */
static void
incoming_delta_keep_built(struct rfile *f, const struct msg_delta *m,
    const uint8_t *data)
{
    uint8_t reused[PROTO_MAX_BLOCK / PROTO_MIN_SIG_BLOCK / 8];
    uint32_t piece = keptsig_piece(f->ksig);
    uint64_t at = 0, k, n = (m->raw_len + piece - 1) / piece, s, e, len;
    struct msg_delta_op op;
    size_t pos = 0;

    memset(reused, 0, sizeof(reused));
    while (f->basis_sigs != NULL && piece == f->sig_block &&
        msg_delta_op_next(m, &pos, &op) == 0) {
        uint64_t p = m->offset + at;

        at += op.len;
        if (op.kind != DELTA_OP_COPY || p % piece != op.from % piece)
            continue;
        /* The whole pieces of [p, p + len), and a short last piece when
         * the copy ends both files. */
        s = (p + piece - 1) / piece * piece;
        e = (p + op.len) / piece * piece;
        if (p + op.len == f->size && op.from + op.len == f->basis_size)
            e = p + op.len;
        for (; s < e; s += piece) {
            k = (s - m->offset) / piece;
            keptsig_put_sig(f->ksig, s / piece, f->basis_sigs +
                (op.from + (s - p)) / piece * DELTA_SIG_LEN);
            reused[k / 8] |= (uint8_t)(1u << (k % 8));
        }
    }
    for (k = 0; k < n; k++) {
        if (reused[k / 8] & (1u << (k % 8)))
            continue;
        len = m->raw_len - k * piece < piece ? m->raw_len - k * piece : piece;
        keptsig_put(f->ksig, m->offset + k * piece,
            data != NULL ? data + k * piece : NULL, len);
    }
}

int
incoming_keep(struct incoming *in, struct rfile *f, uint64_t off,
    const uint8_t *data, uint64_t len, const struct hash128 *h,
    const struct msg_delta *built)
{
    uint32_t piece;
    uint64_t need;

    if (f->ksig == NULL && !f->ksig_off) {
        /* Only a file written whole here, from the first block on, is
         * described by what passes through. */
        piece = delta_index_sig_block(f->size, in->block_size);
        need = keptsig_bytes(f->size, piece, in->block_size);
        f->ksig_off = 1;
        if (in->ks == NULL || f->resume || f->nresolved != 1 ||
            f->size < INCOMING_DELTA_AUTO_MIN ||
            msg_delta_nsigs(f->size, piece) > INCOMING_MAX_DELTA_PIECES ||
            in->kept_mem + need > INCOMING_KEPT_MEM)
            return 0;
        if ((f->ksig = keptsig_new(f->size, piece, in->block_size)) == NULL)
            return FERRY_ERR_NOMEM;
        f->ksig_off = 0;
        in->kept_mem += need;
    }
    if (f->ksig == NULL)
        return 0;
    keptsig_put_block(f->ksig, off / in->block_size, h);
    if (built != NULL)
        incoming_delta_keep_built(f, built, data);
    else
        keptsig_put(f->ksig, off, data, len);
    return 0;
}

void
incoming_keep_forget(struct incoming *in, struct rfile *f)
{
    if (f->ksig == NULL)
        return;
    in->kept_mem -= keptsig_bytes(f->size,
        delta_index_sig_block(f->size, in->block_size), in->block_size);
    keptsig_free(f->ksig);
    f->ksig = NULL;
}

/* Sends the signatures gathered for f, the head of the queue. */
static int
incoming_delta_sigs_flush(struct incoming *in, struct rfile *f,
    struct buf *out)
{
    struct msg_delta_sigs m;
    int r;

    if (in->nsigs == 0)
        return 0;
    memset(&m, 0, sizeof(m));
    m.id = f->id;
    m.basis_size = f->basis_size;
    m.sig_block = f->sig_block;
    m.first = f->signed_pieces;
    m.count = in->nsigs;
    m.sigs = in->sigs;
    if ((r = msg_delta_sigs_encode(out, &m)) != 0)
        return r;
    f->signed_pieces += in->nsigs;
    in->nsigs = 0;
    return 0;
}

/* Sends the next of the basis's kept block hashes of f (its signatures
 * all sent) that the peer can take, one frame's worth. */
static int
incoming_delta_blocks_flush(struct incoming *in, struct rfile *f,
    struct buf *out)
{
    struct msg_delta_blocks m;
    uint64_t n = f->basis_nblocks - f->blocks_sent;
    int r;

    if (!(in->x->caps & PROTO_CAP_DELTA_BLOCKS)) {
        f->blocks_sent = f->basis_nblocks;
        return 0;
    }
    memset(&m, 0, sizeof(m));
    m.id = f->id;
    m.block_size = in->block_size;
    m.first = f->blocks_sent;
    m.count = (uint32_t)(n < PROTO_MAX_SIGS ? n : PROTO_MAX_SIGS);
    m.hashes = f->basis_sigs + f->npieces * DELTA_SIG_LEN +
        f->blocks_sent * HASH_LEN;
    if ((r = msg_delta_blocks_encode(out, &m)) != 0)
        return r;
    f->blocks_sent += m.count;
    return 0;
}

/* Reads the next pieces of f's basis (at most a block) and gathers their
 * signatures. A basis that cannot be read, or that shrank, gets
 * signatures no data has for the rest: the sender finds nothing there,
 * and sends those bytes whole. */
static int
incoming_delta_sign_chunk(struct incoming *in, struct rfile *f,
    uint64_t *budget)
{
    uint64_t j = f->signed_pieces + in->nsigs, off = j * f->sig_block;
    uint64_t want = f->basis_size - off, k, n;
    size_t got = 0;
    int r;

    if (want > in->block_size)
        want = in->block_size;
    n = (want + f->sig_block - 1) / f->sig_block;
    if (n > INCOMING_SIGS_PER_FRAME - in->nsigs) {
        n = INCOMING_SIGS_PER_FRAME - in->nsigs;
        want = n * f->sig_block;
    }
    if (n > f->sign_until - j) {
        n = f->sign_until - j;
        want = n * f->sig_block;
    }
    if (f->sigs_from_store) {
        memcpy(in->sigs + (size_t)in->nsigs * DELTA_SIG_LEN,
            f->basis_sigs + j * DELTA_SIG_LEN, (size_t)(n * DELTA_SIG_LEN));
        in->nsigs += (uint32_t)n;
        *budget -= n * DELTA_SIG_LEN < *budget ? n * DELTA_SIG_LEN : *budget;
        return 0;
    }
    if ((r = fsx_pread_full(f->basis_fd, in->scratch, (size_t)want, off,
        &got)) != 0)
        log_debug("%s: basis: %s", f->path, ferry_strerror(r));
    xfer_add(&in->x->st.basis_read, got);
    for (k = 0; k < n; k++) {
        uint64_t po = k * f->sig_block;
        uint64_t len = want - po < f->sig_block ? want - po : f->sig_block;
        uint8_t *q = in->sigs + (size_t)in->nsigs * DELTA_SIG_LEN;

        if (r != 0 || po + len > got) {
            memset(q, 0, 4);
            memset(q + 4, 0xff, HASH_LEN);
        } else {
            delta_sign(in->scratch + po, (size_t)len, q);
        }
        if (f->basis_sigs != NULL)
            memcpy(f->basis_sigs + (j + k) * DELTA_SIG_LEN, q, DELTA_SIG_LEN);
        in->nsigs++;
    }
    *budget -= want < *budget ? want : *budget;
    return 0;
}

int
incoming_delta_step(struct incoming *in, struct buf *out, uint64_t *budget)
{
    int r;

    if (in->shead == NULL)
        return 0;
    if ((in->scratch == NULL &&
        (in->scratch = xmalloc(in->block_size)) == NULL) ||
        (in->sigs == NULL && (in->sigs = xmalloc((size_t)
        INCOMING_SIGS_PER_FRAME * DELTA_SIG_LEN)) == NULL))
        return FERRY_ERR_NOMEM;
    while (in->shead != NULL && *budget > 0 && buf_used(out) < (4u << 20)) {
        struct rfile *f = in->shead;

        if (!f->sign_stopped && incoming_delta_probe_gate(in, f)) {
            incoming_delta_probe_hold(in, f);
            continue;
        }
        while (f->signed_pieces + in->nsigs < f->sign_until &&
            *budget > 0 && !f->sign_stopped) {
            if ((r = incoming_delta_sign_chunk(in, f, budget)) != 0)
                return r;
            if (in->nsigs == INCOMING_SIGS_PER_FRAME &&
                (r = incoming_delta_sigs_flush(in, f, out)) != 0)
                return r;
        }
        /* What was read goes out now: the sender waits for it. */
        if ((r = incoming_delta_sigs_flush(in, f, out)) != 0)
            return r;
        while (f->signed_pieces == f->npieces && !f->sign_stopped &&
            f->blocks_sent < f->basis_nblocks && buf_used(out) < (4u << 20))
            if ((r = incoming_delta_blocks_flush(in, f, out)) != 0)
                return r;
        if (f->sign_stopped || (f->signed_pieces == f->npieces &&
            f->blocks_sent == f->basis_nblocks) ||
            f->signed_pieces == f->sign_until) {
            /* Done, or parked until DELTA_GO. */
            f->sign_parked = !f->sign_stopped &&
                f->signed_pieces < f->npieces;
            in->shead = f->snext;
            if (in->shead == NULL)
                in->stail = NULL;
            f->snext = NULL;
        } else if (f->snext != NULL && f->signed_pieces < f->npieces) {
            /* Bases take turns, a step's worth each: the sender probes
             * each by its start, and may stop the rest of it. */
            in->shead = f->snext;
            f->snext = NULL;
            in->stail->snext = f;
            in->stail = f;
        }
    }
    return 0;
}

int
incoming_delta_stop(struct incoming *in, const struct msg_delta_stop *m)
{
    struct rfile *f = incoming_table_find(in, m->id);

    if (f == NULL)
        return incoming_table_was_wanted(in, m->id) ? 0 :
            FERRY_ERR_PROTOCOL;
    if (!f->delta)
        return FERRY_ERR_PROTOCOL;
    /* Taken off the queue when it comes to its head, so that a stop
     * costs the same wherever the file waits. */
    if (!f->sign_stopped && !f->resume) {
        /* Its data crosses, as the sender now counts it. */
        xfer_sub(&in->x->st.bytes_reusable, f->size);
        xfer_add(&in->x->st.bytes_whole, f->size);
    }
    f->sign_stopped = 1;
    delta_place_probed(&in->places, f->place, 0);
    incoming_delta_probe_settled(in, f);
    return 0;
}

int
incoming_delta_go(struct incoming *in, const struct msg_delta_go *m)
{
    struct rfile *f = incoming_table_find(in, m->id);

    if (f == NULL)
        return incoming_table_was_wanted(in, m->id) ? 0 :
            FERRY_ERR_PROTOCOL;
    /* The sender asks once, and never for a basis it gave up. */
    if (!f->delta || f->go_seen || f->sign_stopped)
        return FERRY_ERR_PROTOCOL;
    f->go_seen = 1;
    delta_place_probed(&in->places, f->place, 1);
    incoming_delta_probe_settled(in, f);
    f->sign_until = f->npieces;
    if (f->sign_parked) {
        f->sign_parked = 0;
        incoming_delta_sign_enqueue(in, f);
    }
    return 0;
}

/* The basis bytes DELTA may copy: those of pieces already signed. */
static uint64_t
incoming_delta_signed_bytes(const struct rfile *f)
{
    uint64_t n = f->signed_pieces * f->sig_block;

    return n < f->basis_size ? n : f->basis_size;
}

/* How far ahead of the blocks being built the basis is asked for: far
 * enough that on a cold disk it is read before the new file's writes
 * start to compete with it (64 MiB measured no better than none). */
#define BASIS_PREFETCH (1024u << 20)

/* Asks the kernel for the basis ahead of the block at off: blocks come
 * from several streams at once, and reads from two places of one file
 * look random to its readahead (with kept signatures nothing read the
 * basis before, and on a cold disk the build would wait on small
 * reads). */
static void
incoming_delta_basis_prefetch(struct rfile *f, uint64_t off)
{
#ifdef POSIX_FADV_WILLNEED
    uint64_t want = off + BASIS_PREFETCH;

    if (want > f->basis_size)
        want = f->basis_size;
    if (want <= f->prefetched + BASIS_PREFETCH / 4 && want < f->basis_size)
        return;
    if (want > f->prefetched) {
        (void)posix_fadvise(f->basis_fd, (off_t)f->prefetched,
            (off_t)(want - f->prefetched), POSIX_FADV_WILLNEED);
        f->prefetched = want;
    }
#else
    (void)f;
    (void)off;
#endif
}

/* Builds the block of m in buf from its ops; *copied says how much came
 * from the basis. The ops were checked against what was signed. */
static int
incoming_delta_build(const struct rfile *f, const struct msg_delta *m,
    uint8_t *buf, uint64_t *copied)
{
    struct msg_delta_op op;
    size_t pos = 0, at = 0, got;
    int r;

    *copied = 0;
    while (msg_delta_op_next(m, &pos, &op) == 0) {
        if (op.kind == DELTA_OP_LITERAL) {
            memcpy(buf + at, op.data, op.len);
        } else {
            if ((r = fsx_pread_full(f->basis_fd, buf + at, op.len, op.from,
                &got)) != 0)
                return r;
            if (got != op.len)
                return FERRY_ERR_CHANGED;  /* the basis shrank */
            *copied += op.len;
        }
        at += op.len;
    }
    return 0;
}

/* 1, with it in *bad, when m copies basis bytes not described (past the
 * basis's end, or from pieces not yet signed). */
static int
incoming_delta_copy_undescribed(const struct rfile *f,
    const struct msg_delta *m, struct msg_delta_op *bad)
{
    size_t pos = 0;

    while (msg_delta_op_next(m, &pos, bad) == 0)
        if (bad->kind == DELTA_OP_COPY &&
            bad->from + bad->len > incoming_delta_signed_bytes(f))
            return 1;
    return 0;
}

int
incoming_delta(struct incoming *in, const struct msg_delta *m,
    struct buf *out)
{
    struct msg_delta_op op;
    struct rfile *f;
    struct hash128 h;
    uint64_t index, copied = 0;
    uint8_t *buf;
    int r;

    /* Its buffer first: getting one may settle a block written behind,
     * and with it end a file. */
    if ((buf = incoming_wb_buffer(in, out, &r)) == NULL && r != 0)
        return r;
    if ((r = incoming_block_frame(in, m->id, m->offset, m->raw_len,
        INCOMING_AS_DELTA, &f, &index)) != 0 || f == NULL)
        return r;
    /* Only what we described: a copy from past the basis's end, or from
     * pieces not yet signed, is not one of ours. */
    if (incoming_delta_copy_undescribed(f, m, &op))
        return xfer_fail(in->x, FERRY_ERR_PROTOCOL, "%s/%s: the "
            "sender copied basis bytes %llu-%llu, only %llu were "
            "described", dest_root(in->d), f->path,
            (unsigned long long)op.from,
            (unsigned long long)(op.from + op.len),
            (unsigned long long)incoming_delta_signed_bytes(f));
    if (buf == NULL && (buf = incoming_scratch(in)) == NULL)
        return FERRY_ERR_NOMEM;
    incoming_delta_basis_prefetch(f, m->offset);
    if ((r = incoming_delta_build(f, m, buf, &copied)) == 0)
        hash_block(buf, m->raw_len, &h);
    if (r != 0)
        return incoming_settle_unbuilt(in, f, index, m->raw_len, r, out);
    /* The literal data is the sender's, checked by the transport: a
     * block that comes out wrong had a basis that changed under us. */
    if (!hash_equal(&h, &m->hash) && f->failed == 0) {
        f->failed = FERRY_ERR_CHANGED;
        /* Kept signatures that led here are of no more use. */
        keptsig_forget(in->ks, &f->basis_st);
    }
    f->n.matched += copied;
    f->n.literal += m->raw_len - copied;
    xfer_add(&in->x->st.bytes_moved, m->raw_len - copied);
    xfer_add(&in->x->st.bytes_spared, copied);
    return incoming_settle_built(in, f, index, buf, m->raw_len, &h, m, out);
}
