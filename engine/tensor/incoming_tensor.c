/*
 * incoming_tensor.c: the receiver's side of tensor deltas (docs/DESIGN.md,
 * "Tensor checkpoints"). Where delta would sign a basis, a basis that is
 * a checkpoint is named to the sender instead (BASIS: its path, size and
 * file hash), and the sender's TENSOR blocks are rebuilt against it.
 */
#include "../incoming_int.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "../../common/log.h"
#include "../../proto/tensor_piece.h"
#include "../delta/delta_index.h"
#include "tensor_codec.h"
#include "tensor_layout.h"

/* 1 if the basis fd parses as a checkpoint with tensors. */
static int
incoming_tensor_basis_has_tensors(int fd, uint64_t size)
{
    struct tensor_layout l;
    int r, has;

    r = tensor_layout_fd(fd, size, &l);
    has = r == 0 && l.form != TENSOR_FORM_NONE && l.n > 0;
    tensor_layout_cleanup(&l);
    return has;
}

/* The basis's file hash from the block hashes kept when ferry wrote it
 * (keptsig.h), without reading it; -ENOENT when none are kept. */
static int
incoming_tensor_basis_hash_kept(struct incoming *in, const struct stat *st,
    struct hash128 *h)
{
    uint64_t size = (uint64_t)st->st_size, n, i;
    uint32_t piece = delta_index_sig_block(size, in->block_size);
    uint64_t nblocks = msg_delta_nsigs(size, in->block_size);
    struct hash_file *hf;
    struct hash128 b;
    uint8_t *sigs;
    int r;

    if (in->ks == NULL)
        return -ENOENT;
    if ((r = keptsig_load(in->ks, st, piece, in->block_size, &sigs,
        &n)) != 0)
        return r;
    if ((hf = hash_file_new(size, in->block_size)) == NULL) {
        xfree(sigs);
        return FERRY_ERR_NOMEM;
    }
    for (i = 0; i < nblocks; i++) {
        memcpy(b.b, sigs + n * DELTA_SIG_LEN + i * HASH_LEN, HASH_LEN);
        hash_file_add(hf, &b);
    }
    hash_file_final(hf, h);
    hash_file_free(hf);
    xfree(sigs);
    return 0;
}

int
incoming_tensor_open(struct incoming *in, struct rfile *f, int fd,
    const struct stat *st, const char *rel)
{
    uint64_t size = (uint64_t)st->st_size;
    int r;

    /* Where blocks are not compressed (a short link, without -z) the
     * link outruns the codec, and hashing the basis (and the sender its
     * reference) before the first block costs more than coding saves:
     * delta signs the basis as ever. */
    if (!(in->x->caps & PROTO_CAP_TENSORS) ||
        (dest_flags(in->d) & OPEN_F_TENSORS_NEVER) ||
        !(dest_flags(in->d) & OPEN_F_COMPRESS) ||
        fsx_path_check(rel, strlen(rel)) != 0 ||
        !incoming_tensor_basis_has_tensors(fd, size))
        return 0;
    /* The sender compares it with its own file of that path: the hash
     * costs one read here (incoming_tensor_step, a step's share at a
     * time) unless ferry wrote the basis and kept its block hashes.
     * Either way a wrong one only costs the reference (the sender's
     * check), or the file (each block's hash). */
    if ((r = incoming_tensor_basis_hash_kept(in, st, &f->basis_hash)) == 0)
        log_debug("%s: basis %s: hashed from its kept block hashes",
            f->path, rel);
    else if ((f->bhf = hash_file_new(size, in->block_size)) == NULL)
        return 0;
    if ((f->basis_rel = xstrdup(rel)) == NULL) {
        hash_file_free(f->bhf);
        f->bhf = NULL;
        return 0;
    }
    f->tensor = 1;
    f->basis_fd = fd;
    f->basis_size = size;
    f->basis_st = *st;
    return 1;
}

/* The BASIS of f, whose hash is made. */
static int
incoming_tensor_basis_send(struct rfile *f, struct buf *out)
{
    struct msg_basis m;
    int r;

    memset(&m, 0, sizeof(m));
    m.id = f->id;
    m.basis_size = f->basis_size;
    m.hash = f->basis_hash;
    m.path.p = f->basis_rel;
    m.path.len = strlen(f->basis_rel);
    r = msg_basis_encode(out, &m);
    xfree(f->basis_rel);
    f->basis_rel = NULL;
    return r;
}

int
incoming_tensor_start(struct incoming *in, struct rfile *f, struct buf *out)
{
    if (f->bhf == NULL)
        return incoming_tensor_basis_send(f, out);
    f->tnext = NULL;
    if (in->ttail != NULL)
        in->ttail->tnext = f;
    else
        in->thead = f;
    in->ttail = f;
    return 0;
}

/* Takes f, the head, off the hashing queue. */
static void
incoming_tensor_dequeue(struct incoming *in, struct rfile *f)
{
    struct rfile **pp;

    for (pp = &in->thead; *pp != NULL; pp = &(*pp)->tnext) {
        if (*pp == f) {
            *pp = f->tnext;
            break;
        }
    }
    in->ttail = NULL;
    for (pp = &in->thead; *pp != NULL; pp = &(*pp)->tnext)
        in->ttail = *pp;
    f->tnext = NULL;
    hash_file_free(f->bhf);
    f->bhf = NULL;
}

int
incoming_tensor_step(struct incoming *in, struct buf *out, uint64_t *budget)
{
    struct rfile *f;
    struct hash128 h;
    uint8_t *buf;
    size_t want, got;
    int r;

    while ((f = in->thead) != NULL && *budget > 0 &&
        buf_used(out) < (4u << 20)) {
        if ((buf = incoming_scratch(in)) == NULL)
            return FERRY_ERR_NOMEM;
        want = f->basis_size - f->hashed < in->block_size ?
            (size_t)(f->basis_size - f->hashed) : in->block_size;
        if ((r = fsx_pread_full(f->basis_fd, buf, want, f->hashed,
            &got)) != 0 || got != want) {
            /* A basis that cannot be read as it was is named all the
             * same, with a hash no file has: no reference, and its
             * blocks come as planes alone or as ever. */
            log_debug("%s: basis: %s", f->path,
                ferry_strerror(r != 0 ? r : FERRY_ERR_CHANGED));
            memset(f->basis_hash.b, 0xff, HASH_LEN);
            f->hashed = f->basis_size;
        } else {
            hash_block(buf, want, &h);
            hash_file_add(f->bhf, &h);
            f->hashed += want;
            xfer_add(&in->x->st.basis_read, want);
            if (f->hashed == f->basis_size)
                hash_file_final(f->bhf, &f->basis_hash);
        }
        *budget -= want < *budget ? want : *budget;
        if (f->hashed < f->basis_size)
            continue;
        incoming_tensor_dequeue(in, f);
        if ((r = incoming_tensor_basis_send(f, out)) != 0)
            return r;
    }
    return 0;
}

void
incoming_tensor_forget(struct incoming *in, struct rfile *f)
{
    xfree(f->basis_rel);
    f->basis_rel = NULL;
    if (f->bhf != NULL)
        incoming_tensor_dequeue(in, f);
    if (!f->tensor)
        return;
    close(f->basis_fd);
    f->basis_fd = -1;
    f->tensor = 0;
}

/* What the pieces' decoder refuses is the sender's doing; a read of the
 * basis that failed, or found it shorter, is ours. */
static int
incoming_tensor_refused(int r)
{
    return r == FERRY_ERR_SHORT || r == FERRY_ERR_TOO_LARGE ||
        r == FERRY_ERR_FORMAT || r == FERRY_ERR_TRAILING ||
        r == FERRY_ERR_PROTOCOL || r == FERRY_ERR_USAGE;
}

int
incoming_tensor(struct incoming *in, const struct msg_tensor *m,
    struct buf *out)
{
    struct tensor_codec_file ref;
    struct rfile *f;
    struct hash128 h;
    uint64_t index;
    uint8_t *buf;
    int r;

    /* Its buffer first, as for DELTA: getting one may settle a block
     * written behind, and with it end a file. */
    if ((buf = incoming_wb_buffer(in, out, &r)) == NULL && r != 0)
        return r;
    if ((r = incoming_block_frame(in, m->id, m->offset, m->raw_len,
        INCOMING_AS_TENSOR, &f, &index)) != 0 || f == NULL)
        return r;
    if (buf == NULL && (buf = incoming_scratch(in)) == NULL)
        return FERRY_ERR_NOMEM;
    if (in->tp == NULL && (in->tp = tensor_piece_new()) == NULL)
        return FERRY_ERR_NOMEM;
    ref.fd = f->basis_fd;
    ref.size = f->basis_size;
    r = tensor_piece_decode_seq(in->tp, m->body, m->body_len,
        tensor_codec_read_file, &ref, buf, m->raw_len);
    if (r != 0 && incoming_tensor_refused(r))
        return xfer_fail(in->x, FERRY_ERR_PROTOCOL, "%s/%s: TENSOR at "
            "%llu: %s", dest_root(in->d), f->path,
            (unsigned long long)m->offset, ferry_strerror(r));
    if (r != 0)
        return incoming_settle_unbuilt(in, f, index, m->raw_len, r, out);
    hash_block(buf, m->raw_len, &h);
    /* The pieces are the sender's, checked by the transport: a block
     * that comes out wrong had a basis that is not the one it coded
     * against (it changed here, or its hash lied). */
    if (!hash_equal(&h, &m->hash) && f->failed == 0)
        f->failed = FERRY_ERR_CHANGED;
    f->n.literal += m->raw_len;
    f->n.tensor += m->raw_len;
    f->n.tensor_saved += m->raw_len - m->body_len;
    xfer_add(&in->x->st.bytes_moved, m->raw_len);
    xfer_add(&in->x->st.bytes_tensor, m->raw_len);
    xfer_add(&in->x->st.bytes_tensor_saved, m->raw_len - m->body_len);
    return incoming_settle_built(in, f, index, buf, m->raw_len, &h, NULL,
        out);
}
