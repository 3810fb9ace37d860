/*
 * plan.h: what a sender offers and how far each entry got, shared by the
 * senders (one per stream) of one transfer.
 *
 * Entries are offered in manifest order on stream 0, at most
 * PLAN_WINDOW unfinished at a time. A wanted file's blocks become work:
 * runs of at most PLAN_RUN_BYTES to send, or, when the receiver holds
 * blocks from an earlier attempt or run (SIGS HAVE), to read here and
 * compare. Any stream takes the next run from one queue, so a big file
 * is spread over the streams and an idle stream takes what is left. A
 * file whose every block was sent or matched is ready for its FILE_END,
 * which any stream sends; FILE_DONE, on any stream, finishes it.
 *
 * A stream that is lost gives back its run and the blocks it sent of
 * files not yet done (plan_stream_lost): they are sent again by the
 * others, and the receiver ignores what it already has. A lost stream 0
 * ends the attempt: plan_restart prepares the next one, in which what
 * finished is not offered again (directories are, for their metadata)
 * and what did not starts over, its progress taken back; the new
 * receiver's SIGS decide what is sent.
 *
 * Not thread-safe: the senders of one transfer step one at a time.
 */
#ifndef FERRY_ENGINE_PLAN_H
#define FERRY_ENGINE_PLAN_H

#include <stdint.h>
#include <sys/stat.h>

#include "../proto/msg.h"
#include "delta/delta_index.h"
#include "manifest.h"
#include "tensor/tensor_codec.h"
#include "xfer.h"

/* Entries offered and not yet finished. */
#define PLAN_WINDOW 4096u
/* Largest run of blocks one stream takes at a time. */
#define PLAN_RUN_BYTES (16u << 20)
/* With the queue empty, an idle stream splits another's run of at least
 * this many blocks left (work stealing at the tail of a transfer). */
#define PLAN_STEAL_MIN 2

enum plan_work_kind { PW_SEND = 1, PW_CHECK };

/* A run of blocks of one file for one stream. */
struct plan_work {
    uint32_t id;
    uint8_t kind;
    uint64_t first, count;
    uint64_t next;            /* the next block to work on */
    /* PW_CHECK: the receiver's hashes of these blocks (owned). */
    struct hash128 *theirs;
    struct plan_work *link;   /* private */
};

struct plan;

struct volsend;

/* Takes ownership of mf's contents (mf is left empty). flags are the OPEN
 * flags (CHECKSUM: files are hashed before they are offered). */
struct plan *plan_new(struct manifest *mf, uint32_t block_size,
    uint32_t flags, struct xfer *x);
/* Adds OPEN flags that the plan learns after it was made (the link). */
void plan_set_flags(struct plan *p, uint32_t flags);
/* 1 when stream is to take no new work: stream 0 carries slower than the
 * others (OPEN_F_SPARE_STREAM0) and one of them is up. It keeps the
 * conversation and ends what it has begun. */
int plan_spares(const struct plan *p, unsigned stream);
/* 1 when stream is to pack no new volumes: stream 0 once a further one
 * is up. Stream 0 carries the conversation (offers, their answers): on a
 * long link its offers waited behind megabytes of volume data, in the
 * pipes and in the receiver's steps, 0.3-0.4 s each, and the window of
 * small files moved on only that fast (docs/DESIGN.md, "Volumes in
 * transfers"). Blocks of big files still go on every stream. */
int plan_spares_volumes(const struct plan *p, unsigned stream);
/* A further stream runs (its sender's step): stream 0 may be spared. */
void plan_stream_up(struct plan *p, unsigned stream);
/*
 * The same with a live manifest (manifest.h) that a scan on another
 * thread still fills: borrowed, it must outlive the plan. Entries are
 * offered as they are published, and the transfer cannot end before the
 * scan does.
 */
struct plan *plan_new_live(struct manifest *mf, uint32_t block_size,
    uint32_t flags, struct xfer *x);
/* 1 while the scan of a live plan goes on; 0 once every entry is known
 * (always, for plan_new's), or the scan's error. */
int plan_scanning(struct plan *p);
/* While plan_scanning says 1: wakes the transfer's loop (xfer.wake)
 * once the scan publishes entries the plan has not taken (unless
 * end_only), or ends. */
void plan_await_scan(struct plan *p, int end_only);
/* PLAN's totals, or TOTALS': entries this attempt offers, their files and
 * bytes. Final once plan_scanning says 0. */
void plan_totals(const struct plan *p, struct msg_totals *m);
void plan_free(struct plan *p);
/* Small files go to vs (volsend.h) instead of blocks; the plan owns it
 * from now on (NULL: none). */
void plan_set_packer(struct plan *p, struct volsend *vs);
struct volsend *plan_packer(struct plan *p);
void plan_restart(struct plan *p);

/* The manifest, for PLAN, READY's rename and offering. */
struct manifest *plan_manifest(struct plan *p);
uint32_t plan_block_size(const struct plan *p);
uint32_t plan_flags(const struct plan *p);
/* Entries this attempt offers (all, less those finished before).
 * Exported for the tests; otherwise used only in its file. */
uint64_t plan_entries_to_offer(const struct plan *p);

/* A file taken for a volume went into one: its bytes count as done
 * (progress) now, not when it was taken. */
void plan_file_packed(struct plan *p, uint32_t id);

/* A packed file whose volume went with a lost stream is sent in blocks
 * instead: the receiver may have committed it already (its FILE_DONE on
 * the way), and blocks of a finished file are ignored there, while a
 * second copy in a volume would not be. */
void plan_file_unpack(struct plan *p, uint32_t id);

/* The next entry to offer, if the window allows: 1 and *id, else 0. */
int plan_next_offer(struct plan *p, uint32_t *id);
void plan_offered(struct plan *p, uint32_t id);
/* 1 once every entry of this attempt was offered and has finished. */
int plan_all_finished(struct plan *p);

/*
 * The receiver's answers (stream 0). Each checks that it fits the state
 * of its entry and returns FERRY_ERR_PROTOCOL when it does not: a REPLY
 * for an entry not offered or answered twice, a WANT for what is not a
 * file; SIGS for a file not wanted with RESUME, past its end, or for a
 * block described twice; FILE_DONE for a file whose FILE_END was not
 * sent.
 */
int plan_on_reply(struct plan *p, const struct msg_reply *m) FERRY_WUR;
int plan_on_sigs(struct plan *p, const struct msg_sigs *m) FERRY_WUR;
int plan_on_file_done(struct plan *p, const struct msg_file_done *m)
    FERRY_WUR;
/* STOP, right before the receiver's ERROR (any stream): what the
 * destination keeps goes into the xfer, and the file named, if a file
 * this attempt offered, is remembered for plan_end. */
void plan_on_stop(struct plan *p, const struct msg_stop *m);
/* The transfer is over (its last attempt ended): the file a STOP named,
 * if still unfinished, counts as failed (xfer_file_stopped). */
void plan_end(struct plan *p);

/* The run stream works on: the one it had, or the next from the queue;
 * NULL when there is none. Valid until plan_run_done. */
struct plan_work *plan_current(struct plan *p, unsigned stream);
/* The stream finished its run. */
void plan_run_done(struct plan *p, unsigned stream);

/* What a stream did with block index of file id. */
void plan_block_sent(struct plan *p, uint32_t id, uint64_t index,
    unsigned stream, const struct hash128 *h, uint64_t len, int zero);
/* Sent as TENSOR: its len bytes in len - saved. */
void plan_block_coded(struct plan *p, uint32_t id, uint64_t index,
    unsigned stream, const struct hash128 *h, uint64_t len, uint64_t saved);
/* Sent as DELTA: copied of its len bytes came from the basis. */
void plan_block_built(struct plan *p, uint32_t id, uint64_t index,
    unsigned stream, const struct hash128 *h, uint64_t len, uint64_t copied);
void plan_block_matched(struct plan *p, uint32_t id, uint64_t index,
    const struct hash128 *h, uint64_t len);
/* A held block that differs here: it goes back in the queue to be sent. */
int plan_block_differs(struct plan *p, uint32_t id, uint64_t index)
    FERRY_WUR;

/*
 * Delta: DELTA_SIGS (stream 0) describe the receiver's basis of a file it
 * wanted with REPLY_F_DELTA, in order and each piece once; the file's
 * runs to send wait until the last one came. FERRY_ERR_PROTOCOL for
 * signatures of a file not wanted so, out of order, or past
 * PLAN_MAX_DELTA_PIECES held over all files.
 */
#define PLAN_MAX_DELTA_PIECES (1ull << 23)
int plan_on_delta_sigs(struct plan *p, const struct msg_delta_sigs *m)
    FERRY_WUR;
/* The basis's block hashes (delta_index_add_blocks), for a file whose
 * first DELTA_SIGS came. */
int plan_on_delta_blocks(struct plan *p, const struct msg_delta_blocks *m)
    FERRY_WUR;
/*
 * The give-up rule (docs/DESIGN.md, "When delta is used"). Without
 * OPEN_F_DELTA_ALWAYS, until one of its blocks finds something in its
 * basis a file's blocks are only glanced at (delta_match_glance: each
 * piece at its place, and a piece's length of offsets rolled), and once
 * as many as its probe found nothing, the search gives up: the rest of
 * its blocks are checked against the basis at their own place only (a
 * block hash compared, or one piece hashed), which keeps layers that
 * did not change. The probe (delta_probe_blocks) is a run of its own:
 * while the basis is being described its blocks are glanced at in the
 * part described first (delta_probe_pieces), so that an insert or a
 * delete at the start is found. The receiver signs no more than that
 * part until told: the sender asks for the rest (DELTA_GO) once the
 * probe found something or its blocks all went without deciding (zeros,
 * holes), and gives the basis up (DELTA_STOP) when it gave up before
 * the basis was described in full, before the probe's data goes.
 */
/* The basis of file id, described in full or in part (a file's runs wait
 * until the pieces around them are described), or NULL: send its blocks
 * whole. *search is 0 once the search gave up (check in place only). */
const struct delta_index *plan_file_basis(struct plan *p, uint32_t id,
    int *search);
/* The described part of the basis of file id when block index is one of
 * its probe, searched in it while the rest is being described; or NULL. */
const struct delta_index *plan_file_probe(struct plan *p, uint32_t id,
    uint64_t index);
/* 1 while no block of file id found anything in its basis and the search
 * has not given up (without OPEN_F_DELTA_ALWAYS): its blocks are glanced
 * at first (delta_match_glance), and only those that find something are
 * searched at every offset. */
int plan_delta_unproven(struct plan *p, uint32_t id);
/* A file given up on without a probe (its place's probes found nothing,
 * delta_places) whose DELTA_STOP is due: 1 and its id, or 0. */
int plan_next_stop_due(struct plan *p, uint32_t *id);
/* A block of file id was searched: copied bytes were found. */
void plan_delta_found(struct plan *p, uint32_t id, uint64_t copied);
/* Block index of file id went, whatever way: one of its probe's, maybe
 * the last one to go. */
void plan_delta_seen(struct plan *p, uint32_t id, uint64_t index);
/* What the sender is to tell the receiver of the basis of file id now,
 * each once: DELTA_STOP, DELTA_GO (the give-up rule above), or nothing. */
enum plan_say { PLAN_SAY_NOTHING, PLAN_SAY_STOP, PLAN_SAY_GO };
enum plan_say plan_delta_say(struct plan *p, uint32_t id);
/* Blocks [first, first + count) of file id need the whole basis: they
 * wait for it. */
int plan_delta_defer(struct plan *p, uint32_t id, uint64_t first,
    uint64_t count) FERRY_WUR;

/*
 * Tensors (docs/DESIGN.md, "Tensor checkpoints"): BASIS (stream 0) names
 * the receiver's basis of a file it wanted with REPLY_F_TENSOR; the
 * file's runs to send wait for it. The sender's own file of that path is
 * the reference only if it is a regular entry offered before, of the
 * basis's size and file hash (one read, kept per file version for the
 * run); without one, the blocks are coded as planes alone where blocks
 * would be compressed, else sent as today. Layouts held over all files
 * are bounded by PLAN_MAX_TENSORS ranges; a file past it goes as today.
 * FERRY_ERR_PROTOCOL for a BASIS of a file not wanted so, or a second.
 */
#define PLAN_MAX_TENSORS (1ull << 22)
int plan_on_basis(struct plan *p, const struct msg_basis *m) FERRY_WUR;
struct plan_tensor {
    struct tensor_layout layout;     /* the file's */
    struct tensor_layout ref_layout; /* the reference's, with has_ref */
    size_t *match;                   /* tensor_layout_pair's */
    struct tensor_codec_file rf;     /* the reference, open (fd -1: none) */
    struct tensor_codec_ref ref;     /* what tensor_codec_block takes */
    int has_ref;
};
/* How file id's blocks are coded (valid while the file is being sent),
 * or NULL: send them as today. */
const struct plan_tensor *plan_file_tensor(struct plan *p, uint32_t id);

/* 1 if st (of the open source) is the file e was scanned as: a regular
 * file of the same size and mtime. */
int plan_same_file(const struct mentry *e, const struct stat *st);

/* Opens entry id's source for reading: an fd (*st its fstat), or an
 * error, FERRY_ERR_CHANGED when it is no longer the file that was scanned
 * (or became a symlink). */
int plan_open_source(struct plan *p, uint32_t id, struct stat *st);

/* The source file of a wanted entry, opened once and shared by the
 * streams (-1 and an error if it cannot be read or changed). */
int plan_file_fd(struct plan *p, uint32_t id, int *fd) FERRY_WUR;
/* 1 when the file has holes worth looking for. */
int plan_file_sparse(struct plan *p, uint32_t id);
/* Per file: blocks that did not shrink with compression, in a row. */
int *plan_file_zst_misses(struct plan *p, uint32_t id);
/* 1 if the entry is being sent (its runs are still wanted): wanted, not
 * given up, and not yet FILE_DONE (its FILE_END may be out already). */
int plan_file_active(struct plan *p, uint32_t id);

/*
 * Files ready for their FILE_END: 1 and *id while there is one. The
 * caller sends it (after checking the source did not change) and says
 * so with plan_file_ended, or gives up on the file with plan_file_abort.
 */
int plan_next_ready(struct plan *p, uint32_t *id);
void plan_file_hash(struct plan *p, uint32_t id, struct hash128 *out);
void plan_file_ended(struct plan *p, uint32_t id, unsigned stream);
/* Gives up on a file (it changed or cannot be read): reported as the
 * source's failure; its runs are dropped and its FILE_END (it becomes
 * ready) carries the code. */
void plan_file_abort(struct plan *p, uint32_t id, int code);
/* The code to send in FILE_END: 0, or why the file was given up. */
int plan_file_aborted(struct plan *p, uint32_t id);

/*
 * A stream other than 0 was lost: what it was doing is done again by the
 * others. Only sets a flag (any thread, any time: its connection may die
 * while another stream's step runs); the next step of a stream of this
 * transfer puts the work back in the queue.
 */
void plan_stream_lost(struct plan *p, unsigned stream);

/*
 * The receiver gave up on a further stream (RETIRE): lost as above, and
 * it gets no more work even if its connection still takes data. Any
 * thread.
 */
void plan_stream_retired(struct plan *p, unsigned stream);

#endif
