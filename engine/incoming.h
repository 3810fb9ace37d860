/*
 * incoming.h: the files a receiver has asked for and not yet finished,
 * shared by the receivers (one per stream) of one transfer.
 *
 * A wanted file is known by its entry id. Its blocks arrive as BLOCK
 * frames in any order and on any stream, or are kept by MATCH when the
 * receiver said it holds them (SIGS HAVE). Every block of a file is
 * resolved exactly once; FILE_END says the sender has sent or matched
 * them all, and the file is committed once every block has arrived (some
 * may still be in flight on other streams) and the file hash, computed
 * from the blocks as they were written or read back, is the sender's.
 *
 * Delta: when the destination holds another version of a wanted file
 * (the basis), the receiver says so in its WANT and signs the basis in
 * the background (DELTA_SIGS, INCOMING_VERIFY_BYTES per step); blocks may
 * then come as DELTA, built here from the basis and literal data, hashed
 * and journaled like any block. The basis is only read.
 *
 * Resume: a partial kept by an earlier attempt or run is never trusted as
 * it is. Blocks its journal does not claim are asked for at once (SIGS
 * NEED); claimed blocks are read back and hashed, INCOMING_VERIFY_BYTES
 * per step, overlapped with the arrival of the missing ones, and each is
 * offered as held (SIGS HAVE) only if it still has the hash the journal
 * recorded.
 *
 * Bounds a hostile sender cannot push past (see docs/SECURITY.md):
 * INCOMING_MAX_FILES files wanted and not finished, INCOMING_MAX_BLOCKS
 * blocks tracked over them (a byte each), and INCOMING_MAX_PENDING block
 * hashes waiting for the blocks before them.
 *
 * Not thread-safe: the receivers of one transfer step one at a time.
 */
#ifndef FERRY_ENGINE_INCOMING_H
#define FERRY_ENGINE_INCOMING_H

#include <stdint.h>

#include "../common/buf.h"
#include "../proto/msg.h"
#include "dest.h"
#include "xfer.h"

#define INCOMING_MAX_FILES (1u << 16)
#define INCOMING_MAX_BLOCKS (1ull << 26)
#define INCOMING_MAX_PENDING (1u << 22)
#define INCOMING_VERIFY_BYTES (64u << 20)
/* --delta=auto uses a basis only for files (and bases) of at least this
 * size: below it, sending the file costs less than a round trip of
 * signatures and a read of the basis. */
#define INCOMING_DELTA_AUTO_MIN (1u << 20)
/* --basis auto looks at this many names beside a new file at most. */
#define INCOMING_BASIS_SCAN 4096u
/* A basis of more pieces is not offered (PLAN_MAX_DELTA_PIECES bounds a
 * sender's table over all files); at 1 MiB pieces, 4 TiB. */
#define INCOMING_MAX_DELTA_PIECES (1u << 22)
/* Basis signatures in one DELTA_SIGS frame. */
#define INCOMING_SIGS_PER_FRAME 4096u
/* Bytes of bases read to sign them in one step at most (of
 * INCOMING_VERIFY_BYTES): what was read goes out with the step, and the
 * sender's probe needs only the first blocks, and may stop the rest. */
#define INCOMING_SIGS_STEP (16u << 20)
/* Kept signatures (keptsig.h) held in memory over all files at once, of
 * files being written and of bases being described: 64 MiB is those of
 * about 200 TB of files at the largest pieces. A file beyond it is
 * simply not kept. */
#define INCOMING_KEPT_MEM (64u << 20)

struct incoming;
struct keptsig_store;

struct incoming *incoming_new(struct dest *d, uint32_t block_size,
    struct xfer *x);
/* Unfinished files are kept for a resume. */
void incoming_free(struct incoming *in);

/* Keeps the signatures of the files it writes in store ks, and uses the
 * kept ones of a basis instead of reading it (borrowed; NULL: neither). */
void incoming_set_keptsig(struct incoming *in, struct keptsig_store *ks);

/* A file of a format formcheck.h knows is committed only whole: one cut
 * short (the sender read it while its writer was not done) fails with
 * FERRY_ERR_TORN and nothing is put in place. For a watch's pulls. */
void incoming_set_whole_formats(struct incoming *in, int on);

/*
 * A new attempt of the same run: unfinished files are kept on disk (their
 * journals synced) for the new sender to resume, their progress taken
 * back; files finished so far are remembered so that a later SKIP of one
 * is not counted again.
 */
void incoming_restart(struct incoming *in);
/* Syncs the journal of each file under way (partial_sync; a failure
 * leaves its last claims), so that what the state directory keeps can
 * be counted before the transfer stops. */
void incoming_sync_partials(struct incoming *in);

/*
 * The file of entry m (path checked, its parent made) needs data: appends
 * REPLY WANT (with RESUME and the SIGS NEED runs when a partial is kept)
 * to out.
 */
int incoming_want(struct incoming *in, const struct msg_entry *m,
    const char *path, struct buf *out) FERRY_WUR;

/* Notes that the file at path was up to date (SKIP) for the counters. */
void incoming_skipped(struct incoming *in, const char *path, uint64_t size);
/* ... or was moved into place from the adopt directory (--adopt): one
 * of the skipped, counted as adopted too. */
void incoming_adopted(struct incoming *in, const char *path, uint64_t size);

/* Data frames, from any stream. FILE_DONE and failures go to out. */
int incoming_block(struct incoming *in, const struct msg_block *m,
    struct buf *out) FERRY_WUR;
int incoming_match(struct incoming *in, const struct msg_match *m,
    struct buf *out) FERRY_WUR;
/* DELTA: the block is built from the basis and the literal data; a COPY
 * past what the receiver has signed so far is FERRY_ERR_PROTOCOL. */
/* TENSOR: the block is rebuilt from its pieces against the basis the
 * receiver named in BASIS; a TENSOR for a file not wanted so, off the
 * block grid, of the wrong length, or whose pieces do not rebuild it
 * (a piece that reads past the basis among them) is FERRY_ERR_PROTOCOL.
 * A block that does not hash as the sender said fails the file with
 * FERRY_ERR_CHANGED. */
int incoming_tensor(struct incoming *in, const struct msg_tensor *m,
    struct buf *out) FERRY_WUR;
int incoming_delta(struct incoming *in, const struct msg_delta *m,
    struct buf *out) FERRY_WUR;
int incoming_file_end(struct incoming *in, const struct msg_file_end *m,
    struct buf *out) FERRY_WUR;
/* DELTA_STOP: the basis of the file is signed no further (what was
 * described stays copyable). FERRY_ERR_PROTOCOL for a file never wanted,
 * or wanted without DELTA; one that came after the last signature, or
 * after the file ended, is ignored. Costs O(1) whatever the queue. */
int incoming_delta_stop(struct incoming *in, const struct msg_delta_stop *m)
    FERRY_WUR;
/* DELTA_GO: the rest of the basis of the file is signed (the part its
 * probe searches was, and then the signing waited). */
int incoming_delta_go(struct incoming *in, const struct msg_delta_go *m)
    FERRY_WUR;

/*
 * Background work for a step: with verify, reads back held blocks (SIGS
 * to out: only on the stream that carried their REPLY); commits the
 * batch when it is full or when idle is set (no input came: do not leave
 * a small batch waiting). *more is set while verification has work left.
 */
int incoming_work(struct incoming *in, struct buf *out, int idle,
    int verify, int *more) FERRY_WUR;

/* Commits whatever is complete (FILE_DONE to out). */
int incoming_flush(struct incoming *in, struct buf *out) FERRY_WUR;

/* Settles the blocks built from DELTA whose writes are in flight
 * (FILE_DONE to out): before any other frame, and before a step ends. */
int incoming_drain(struct incoming *in, struct buf *out) FERRY_WUR;

/*
 * FILE_DONE frames made by the receiver of a further stream wait here for
 * stream 0 to send them: a further stream may be lost with what it
 * carries, and every WANT must be answered exactly once. Valid until
 * incoming_free.
 */
struct buf *incoming_outbox(struct incoming *in);

/* Files wanted and not finished (END is only valid at 0). */
uint64_t incoming_active(const struct incoming *in);

/*
 * Volumes of small files (volrecv.h), made on first use and freed with
 * in. A file comes one way: in blocks, or in one volume. A VOL_FILE
 * claims the wanted file id for the volume on stream: *path (valid while
 * the file is active) and *size are the entry's; FERRY_ERR_PROTOCOL for
 * an id not wanted or finished, one data came for (incoming_data_via),
 * or one a volume claimed before, even a lost one. A lost volume
 * releases its claims; a committed one answers each of its files
 * (FILE_DONE to out; nothing if the file was given back meanwhile).
 */
struct volrecv *incoming_volrecv(struct incoming *in);
int incoming_pack_claim(struct incoming *in, uint32_t id, unsigned stream,
    const char **path, uint64_t *size) FERRY_WUR;
void incoming_pack_release(struct incoming *in, uint32_t id,
    unsigned stream);
int incoming_pack_done(struct incoming *in, uint32_t id, unsigned stream,
    struct buf *out) FERRY_WUR;
/*
 * Data (BLOCK, MATCH, DELTA or FILE_END) for file id came on stream,
 * before it is taken. FERRY_ERR_PROTOCOL for a file a volume of stream 0
 * holds or was answered from, or one a volume of this stream holds: the
 * sender never sends those again. A file a volume of another stream
 * holds comes in blocks only when the sender lost that stream: the
 * stream is taken as lost here too (volrecv_stream_lost). Else 0, and
 * the file takes no volume from now on; an id not active is left to the
 * data's own checks.
 */
int incoming_data_via(struct incoming *in, uint32_t id, unsigned stream)
    FERRY_WUR;

/* What the receiver did, for SUMMARY. */
const struct msg_summary *incoming_summary(const struct incoming *in);
/* Counts a failed entry (not a wanted file) in the summary. */
void incoming_count_failed(struct incoming *in);

#endif
