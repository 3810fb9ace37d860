/*
 * incoming_int.h: what the pieces of the receiver's file tracking share
 * (private to engine/incoming*.c; the interface is incoming.h).
 *
 *   incoming.c         wanted files: their data frames, hashes, commit
 *   incoming_table.c   the active files by id and by staging key, and
 *                      which way each one's data comes (a volume, blocks)
 *   incoming_verify.c  resume: reading a kept partial back, SIGS
 *   incoming_delta.c   delta: signing the basis, building DELTA blocks
 *   incoming_tensor.c  tensors: naming the basis, rebuilding TENSOR blocks
 *   incoming_build.c   the checks of a block's frame, a built block settled
 */
#ifndef FERRY_ENGINE_INCOMING_INT_H
#define FERRY_ENGINE_INCOMING_INT_H

#include <stdint.h>
#include <sys/stat.h>

#include "../common/hash.h"
#include "../common/ptab.h"
#include "delta/delta_index.h"
#include "incoming.h"
#include "delta/keptsig.h"
#include "partial.h"
#include "pathset.h"

/* Per block. */
enum { B_RESOLVED = 1, B_HAVE = 2, B_SIGNED = 4 };

/* How a file's data came: a file comes one way, in blocks or in one
 * volume (incoming_pack_claim, incoming_data_via). */
enum { RF_VIA_BLOCKS = 1, RF_VIA_VOLUME = 2 };

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
    unsigned via;             /* RF_VIA_*: how its data came so far */
    struct hash128 end_hash;
    struct xfer_file_counts n;
    uint64_t counted;
    struct rfile *vnext;      /* the read-back queue */
    /* Delta (incoming_delta.c): the basis, while delta is set. */
    int delta;
    int basis_fd;
    uint64_t basis_size;
    uint32_t sig_block;
    uint64_t npieces, signed_pieces;  /* pieces described so far */
    int sign_stopped;         /* DELTA_STOP: sign no further */
    /* Pieces to sign before the sender says more (DELTA_GO): the probe's
     * part, or all; parked: off the signing queue, waiting for it. */
    uint64_t sign_until;
    int sign_parked, go_seen;
    /* Its probe's part is signed, or waits for the sender's verdict
     * (DELTA_GO or DELTA_STOP), where no probe found anything yet:
     * other files of its place are held off the queue meanwhile. */
    int probing, sign_held;
    struct stat basis_st;
    /* The basis's signatures (npieces x DELTA_SIG_LEN), held until the
     * file is settled so that the pieces a DELTA copies whole need not be
     * signed again for ksig: loaded from the store (from_store), or made
     * while signing when a ksig may want them; NULL otherwise. */
    uint8_t *basis_sigs;
    int sigs_from_store;
    /* With sigs_from_store: the hash of each block of the basis (after
     * its signatures in basis_sigs), basis_nblocks of them, sent in
     * DELTA_BLOCKS up to blocks_sent. */
    uint64_t basis_nblocks, blocks_sent;
    uint64_t prefetched;      /* the basis is asked for up to here */
    int basis_replaced;       /* the basis is the old version, replaced */
    uint64_t place;           /* delta_place of its path */
    /* The signatures of what is written, to keep (keptsig.h). */
    struct keptsig *ksig;
    int ksig_off;             /* none for this file */
    struct rfile *snext;      /* the signing queue */
    /* Tensors (incoming_tensor.c): the basis (basis_fd, basis_size,
     * basis_st) is named to the sender instead of signed; basis_rel and
     * basis_hash are what BASIS says, held until it is sent. */
    int tensor;
    char *basis_rel;
    struct hash128 basis_hash;
    /* The basis being read to hash it, a step's share at a time, up to
     * hashed (NULL once its BASIS went); the hashing queue. */
    struct hash_file *bhf;
    uint64_t hashed;
    struct rfile *tnext;
};

struct incoming {
    struct dest *d;
    struct xfer *x;
    uint32_t block_size;
    /* Active files by id and by staging key (incoming_table.c). */
    struct ptab by_id, by_key;
    uint64_t blocks_tracked;  /* bytes of bits over active files */
    uint64_t pending;         /* hashes waiting over active files */
    /* Ids wanted in this attempt, a bit each: data for an id that
     * finished is a late duplicate (a stream that died after sending);
     * data for an id never wanted is a protocol error. */
    uint8_t *wanted;
    size_t wanted_cap;
    /* Ids answered from a volume of stream 0, a bit each: the sender
     * never sends those again (it gives back only a further stream's). */
    uint8_t *vol0;
    size_t vol0_cap;
    /* Over the attempts of a run: paths finished, so that a file sent
     * before a reconnect is not counted again as up to date after it. */
    struct pathset done;
    struct rfile *vhead, *vtail;
    struct msg_summary sum;
    struct buf outbox;        /* FILE_DONE for stream 0 to send */
    struct zst *zst;          /* for compressed blocks */
    uint8_t *scratch;         /* one block: inflated data, read-back */
    struct rfile *shead, *stail;  /* bases to sign, in order */
    uint8_t *sigs;            /* DELTA_SIGS being filled */
    uint32_t nsigs;
    struct volrecv *vr;       /* volumes of small files, made on use */
    struct keptsig_store *ks; /* borrowed, or NULL */
    uint64_t kept_mem;        /* bytes of signatures held over files */
    struct behind *wb;        /* built blocks written behind, made on use */
    int wb_off;               /* ... or not: it could not be made */
    int whole_formats;        /* incoming_set_whole_formats */
    struct tensor_piece *tp;  /* TENSOR blocks' work space, made on use */
    struct rfile *thead, *ttail;  /* bases to hash for BASIS, in order */
    struct delta_places places;  /* where probes found nothing */
    struct rfile *probing[DELTA_PLACES];  /* one open probe a place */
    struct rfile *hhead, *htail;  /* held while their place probes */
};

static inline uint64_t
incoming_block_len(const struct incoming *in, const struct rfile *f,
    uint64_t index)
{
    uint64_t off = index * in->block_size;

    return f->size - off < in->block_size ? f->size - off : in->block_size;
}

/* incoming.c */

/* Makes f's per-block state (TOO_LARGE past INCOMING_MAX_BLOCKS). */
int incoming_track_blocks(struct incoming *in, struct rfile *f) FERRY_WUR;
/* A local problem with f: fatal (returned) when every later write would
 * fail too, else f fails and 0 is returned. */
int incoming_file_error(struct incoming *in, struct rfile *f, int r)
    FERRY_WUR;

/* Looks up the file a data frame is for: NULL with *r = 0 for a late
 * duplicate of a finished file (ignore it), or FERRY_ERR_PROTOCOL for an
 * id never wanted. */
struct rfile *incoming_data_file(struct incoming *in, uint32_t id, int *r);
/*
 * The checks of a data frame of one block (offset, raw_len) of file id,
 * as BLOCK, DELTA or TENSOR (INCOMING_AS_*: a DELTA or TENSOR only for
 * a file wanted so): *fp is the file and *index the block, or *fp NULL
 * with 0 for a frame to ignore (a late duplicate); FERRY_ERR_PROTOCOL
 * for an id never wanted, off the block grid, of the wrong length, or
 * (resumed) for a block not described.
 */
enum { INCOMING_AS_BLOCK, INCOMING_AS_DELTA, INCOMING_AS_TENSOR };
int incoming_block_frame(struct incoming *in, uint32_t id, uint64_t offset,
    uint32_t raw_len, int as, struct rfile **fp, uint64_t *index) FERRY_WUR;
/* Block index of f arrived (len bytes, hash h, NULL data for zeros):
 * resolved, written and journaled, and the file committed when it was
 * the last. */
/* built: the DELTA it was built from, or NULL. */
int incoming_settle_block(struct incoming *in, struct rfile *f,
    uint64_t index, const uint8_t *data, uint32_t len,
    const struct hash128 *h, const struct msg_delta *built,
    struct buf *out) FERRY_WUR;

/* As incoming_settle_block, for data in a buffer of incoming_wb_buffer:
 * the block is written behind, and settled by incoming_drain (or when
 * its buffer is wanted again). */
int incoming_settle_behind(struct incoming *in, struct rfile *f,
    uint64_t index, const uint8_t *data, uint32_t len,
    const struct hash128 *h, const struct msg_delta *built,
    struct buf *out) FERRY_WUR;
/* A block built from a basis (DELTA, TENSOR) in buf, a buffer of
 * incoming_wb_buffer or incoming_scratch: written behind when it can be,
 * else settled at once (zeros as such). */
int incoming_settle_built(struct incoming *in, struct rfile *f,
    uint64_t index, const uint8_t *buf, uint32_t len,
    const struct hash128 *h, const struct msg_delta *built,
    struct buf *out) FERRY_WUR;
/* A block that could not be built (r, a local error): f fails, or the
 * transfer when r is fatal; the block counts as settled. */
int incoming_settle_unbuilt(struct incoming *in, struct rfile *f,
    uint64_t index, uint32_t len, int r, struct buf *out) FERRY_WUR;
/* The one-block scratch buffer, made on first use (NULL: no memory). */
uint8_t *incoming_scratch(struct incoming *in);
/* The rest of settling a block written behind: wr is the write's
 * result; last, that no later block of f is in flight. */
int incoming_settle_written(struct incoming *in, struct rfile *f,
    uint64_t index, const struct hash128 *h, uint32_t len, int wr,
    int last, struct buf *out) FERRY_WUR;

/* incoming_wb.c: blocks built from DELTA written behind. */

/* A buffer to build the next block in for incoming_settle_behind (the
 * oldest block in flight may be settled first, and its frames go to
 * out), or NULL: with *r = 0 when there is no writer (build elsewhere
 * and settle as ever), else the error. */
uint8_t *incoming_wb_buffer(struct incoming *in, struct buf *out, int *r);
/* Hands the block built in the buffer of incoming_wb_buffer to the
 * writer, at block index of f's staging file fd. */
void incoming_wb_submit(struct incoming *in, struct rfile *f,
    uint64_t index, const struct hash128 *h, uint32_t len, int fd);
/* Waits for the writes in flight and forgets them unsettled (a lost
 * attempt: no journal names them). */
void incoming_wb_discard(struct incoming *in);
/* incoming_wb_discard, then the writer goes. */
void incoming_wb_free(struct incoming *in);

/* incoming_table.c: the active files by id and by staging key (ptab.h). */

struct rfile *incoming_table_find(const struct incoming *in, uint32_t id);
/* 1 if an active file other than f has f's staging key. */
int incoming_table_key_taken(const struct incoming *in,
    const struct rfile *f);
/* Adds f, whose key is set, to both tables. */
int incoming_table_insert(struct incoming *in, struct rfile *f) FERRY_WUR;
void incoming_table_remove(struct incoming *in, struct rfile *f);
/* Ids wanted in this attempt. */
int incoming_table_mark_wanted(struct incoming *in, uint32_t id) FERRY_WUR;
int incoming_table_was_wanted(const struct incoming *in, uint32_t id);
/* Ids answered from a volume of stream 0 in this attempt. */
int incoming_table_mark_vol0(struct incoming *in, uint32_t id) FERRY_WUR;

/* incoming_verify.c */

/* Looks for what an earlier attempt or run left of this very version of
 * f; sets f->resume when a partial with claimed blocks is kept. *warning
 * is set when an unusable one was found. */
int incoming_verify_resume(struct incoming *in, struct rfile *f,
    const char **warning) FERRY_WUR;
/* After REPLY WANT RESUME: SIGS NEED for what the journal does not claim,
 * and f queued for reading back. */
int incoming_verify_start(struct incoming *in, struct rfile *f,
    struct buf *out) FERRY_WUR;
/* Reads back queued files' claims, up to *budget bytes (taken from it). */
int incoming_verify_step(struct incoming *in, struct buf *out,
    uint64_t *budget) FERRY_WUR;
/* Takes f off the read-back queue. */
void incoming_verify_forget(struct incoming *in, struct rfile *f);

/* incoming_delta.c */

/* Looks for a basis of f at path (the destination's older version), as
 * the OPEN flags and capabilities allow; sets f->delta when one is
 * used. */
int incoming_delta_open(struct incoming *in, struct rfile *f,
    const char *path) FERRY_WUR;
/* After REPLY WANT DELTA: queues f's basis for signing. */
void incoming_delta_start(struct incoming *in, struct rfile *f);
/* Signs queued bases, up to *budget bytes (taken from it). */
int incoming_delta_step(struct incoming *in, struct buf *out,
    uint64_t *budget) FERRY_WUR;
/* Takes f off the signing queue and closes its basis. */
void incoming_delta_forget(struct incoming *in, struct rfile *f);

/* incoming_basis.c */

/* The neighbour of name in the directory pfd most like a file of want
 * bytes (--basis auto): an open fd, with its name in best (FSX_NAME_MAX
 * + 1 bytes), or -1. */
int incoming_basis_pick(int pfd, const char *name, uint64_t want,
    char *best);
/* Signs the len bytes at off of f (data NULL: zeros), the block whose
 * hash is h, as they are written, to keep once it is committed
 * (keptsig.h); built is the DELTA they were built from, or NULL. */
int incoming_keep(struct incoming *in, struct rfile *f, uint64_t off,
    const uint8_t *data, uint64_t len, const struct hash128 *h,
    const struct msg_delta *built) FERRY_WUR;
/* Drops what f was keeping. */
void incoming_keep_forget(struct incoming *in, struct rfile *f);

/* incoming_tensor.c */

/* With the capability and tensors not `never`: 1 when the basis fd (st,
 * at rel beneath the root) has tensors, and f takes it (f->tensor, its
 * hash made with one read), else 0 and fd is left to the caller. */
int incoming_tensor_open(struct incoming *in, struct rfile *f, int fd,
    const struct stat *st, const char *rel);
/* After REPLY WANT TENSOR: the BASIS naming f's basis now, or once
 * incoming_tensor_step has read it to hash it. */
int incoming_tensor_start(struct incoming *in, struct rfile *f,
    struct buf *out) FERRY_WUR;
/* Hashes queued bases, up to *budget bytes (taken from it), and sends
 * the BASIS of each that is done. */
int incoming_tensor_step(struct incoming *in, struct buf *out,
    uint64_t *budget) FERRY_WUR;
/* Takes f off the hashing queue and closes its basis. */
void incoming_tensor_forget(struct incoming *in, struct rfile *f);

#endif
