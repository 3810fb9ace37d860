/*
 * xfer.h: what one side of a transfer counts and reports.
 *
 * Roles run in worker threads and update these counters with relaxed
 * atomics; the loop thread reads them for the progress line. Events go to
 * callbacks that must be thread-safe (the client's output module locks).
 */
#ifndef FERRY_ENGINE_XFER_H
#define FERRY_ENGINE_XFER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "waker.h"

/* Which side a per-file failure belongs to; it picks the exit code. */
enum xfer_side { SIDE_SOURCE = 1, SIDE_DEST = 2 };

/*
 * Counters mean one thing each, across retries, resumes and interrupts.
 * Live: entries_total, files_total, bytes_total (what was offered);
 * bytes_done (progress: file bytes accounted for so far, taken back when
 * a connection is lost); bytes_moved (file data that crossed the wire in
 * this run, resends included: what rates are made of); bytes_spared (file
 * data accounted for without crossing it: copied from a basis, kept on
 * resume, zero blocks sent as a flag); bytes_whole and bytes_reusable
 * (sizes of the files the receiver answered wanting all of their data,
 * and with a basis or held blocks, of which some data may be spared);
 * bytes_packed (of bytes_whole, what a push packs in volumes, which
 * compression may shrink);
 * bytes_compressed. Settled once per file when it is committed, so that
 * for the files sent
 *
 *     bytes_payload = bytes_literal + bytes_sparse + bytes_matched
 *                     + resumed_bytes
 *
 * bytes_literal: blocks sent as data by the attempt that finished the
 * file; bytes_sparse: zero blocks sent as a flag; bytes_matched: blocks
 * reused from another file (delta); resumed_bytes: blocks an earlier
 * attempt or run had delivered. Wire bytes are counted by the transports.
 */
struct xfer_stats {
    /* Above 0 while a live scan may still add to the totals below (a
     * push's plan, or a pull's receiver between a live PLAN and its
     * TOTALS). */
    atomic_uint_fast64_t totals_open;
    atomic_uint_fast64_t entries_total;
    atomic_uint_fast64_t files_total;
    atomic_uint_fast64_t bytes_total;
    atomic_uint_fast64_t files_sent;     /* committed at the destination */
    atomic_uint_fast64_t files_skipped;  /* already up to date */
    atomic_uint_fast64_t files_adopted;  /* of those, moved into place
                                            from --adopt's directory */
    atomic_uint_fast64_t files_failed;
    atomic_uint_fast64_t failed_source;  /* failures on the reading side */
    atomic_uint_fast64_t failed_dest;    /* failures on the writing side */
    atomic_uint_fast64_t bytes_done;     /* progress */
    atomic_uint_fast64_t bytes_moved;    /* data over the wire, live */
    atomic_uint_fast64_t bytes_spared;   /* ... and data it was spared */
    atomic_uint_fast64_t bytes_whole;    /* files wanted whole */
    atomic_uint_fast64_t bytes_reusable; /* ... with a basis, held blocks */
    atomic_uint_fast64_t bytes_packed;   /* whole ones packed in volumes */
    atomic_uint_fast64_t bytes_payload;  /* sizes of files that were sent */
    atomic_uint_fast64_t bytes_literal;  /* file bytes sent as data */
    atomic_uint_fast64_t bytes_matched;  /* bytes the receiver already had */
    atomic_uint_fast64_t bytes_sparse;   /* zero blocks sent as holes */
    atomic_uint_fast64_t bytes_compressed;  /* saved by compression */
    /* File bytes sent as TENSOR (their tensors' differences from the
     * basis), and what that saved against their size. */
    atomic_uint_fast64_t bytes_tensor;
    atomic_uint_fast64_t bytes_tensor_saved;
    /* Delta's work: offsets the sender's search rolled over, and bytes
     * of bases the receiver read to sign them. */
    atomic_uint_fast64_t bytes_searched;
    atomic_uint_fast64_t basis_read;
    atomic_uint_fast64_t resumed_bytes;
    /* Reading kept partial data back to check it before a resume trusts
     * it (at the receiver; a push learns it from SUMMARY): its bytes and
     * the time the reads took, which overlaps with receiving the rest. */
    atomic_uint_fast64_t readback_bytes;
    atomic_uint_fast64_t readback_ns;
    atomic_int worst_error;              /* first per-file error code */
};

/* How a file's bytes went: literal ones crossed the wire as data (tensor
 * ones among them coded as tensor differences, saving tensor_saved),
 * sparse ones as holes, resumed ones were kept from an earlier try and
 * matched ones built from a file the destination had (delta). */
struct xfer_file_counts {
    uint64_t literal, sparse, resumed, matched;
    uint64_t tensor, tensor_saved;
};

struct xfer_events {
    /* A file finished: action is "sent", "skipped", "adopted" (one of
     * the skipped: --adopt) or "failed"; n (of a
     * file sent, else NULL) says how its bytes went. */
    void (*file)(void *ctx, const char *path, const char *action,
        uint64_t bytes, const struct xfer_file_counts *n);
    /* A per-file or scan problem; code 0 is a warning. */
    void (*problem)(void *ctx, enum xfer_side side, const char *path,
        int code, const char *text);
    /* A volume of small files: action "sent" (the sender ended it) or
     * "committed" (the receiver put its files in place). May be NULL. */
    void (*volume)(void *ctx, uint32_t index, const char *action,
        uint64_t files, uint64_t file_bytes, uint64_t bytes);
    void *ctx;
};

struct xfer {
    struct xfer_stats st;
    uint64_t caps;          /* capabilities both sides have (HELLO) */
    struct xfer_events ev;  /* callbacks may be NULL */
    /* Set by the role on a fatal error reported by the peer: its text,
     * shown to the user as is (after escaping). */
    char peer_error[1024];
    int peer_error_code;
    /* Set by a role on a fatal error of its own ("path: reason"); the
     * session sends it to the peer and the program shows it. */
    char local_error[1024];
    /* The file of a receiver's fatal error (xfer_file_stopped). */
    int stopped;
    uint32_t stop_id;
    /* What the destination keeps for a resume after a transfer that did
     * not finish (its unfinished files and the bytes their journals
     * claim), once the receiver has said it: STOP, or a pull's own. */
    int kept_known;
    uint64_t kept_files, kept_bytes;
    /* READY renamed the destination's one file: the destination named
     * is that file, and its state lives in the directory above. */
    int dest_renamed;
    /* Wakes the loop that steps the roles (waker.h): the threads that
     * work behind them (the scan, the volume commits) call it. */
    struct waker wake;
};

static inline void
xfer_add(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Takes back what was counted (a resume point the sender refused). */
static inline void
xfer_sub(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_fetch_sub_explicit(c, n, memory_order_relaxed);
}

static inline uint64_t
xfer_get(atomic_uint_fast64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* The data seen by a point of the transfer, to judge what followed. */
struct xfer_mark {
    uint64_t moved, spared, compressed;
};

/* The least data xfer_wire_left judges a share by. */
#define XFER_SHARE_SAMPLE (8u << 20)

void xfer_mark_now(struct xfer *x, struct xfer_mark *m);
/* How much of left (file bytes still to go) is to cross the wire: all of
 * it while no file could reuse data and none is packed in volumes, else
 * left scaled by the share of the data since mark that crossed, less
 * what compression saved of it. 0 (*wire unset) until mark is followed
 * by XFER_SHARE_SAMPLE bytes of data to judge by; else 1. */
int xfer_wire_left(struct xfer *x, const struct xfer_mark *mark,
    uint64_t left, uint64_t *wire);

/* Records the peer's ERROR message (a frame payload) for the program to
 * show; returns FERRY_ERR_PEER, or the decode error if it is malformed. */
int xfer_peer_error(struct xfer *x, const uint8_t *payload, size_t len);

/* Records a fatal error of this side and returns code. */
int xfer_fail(struct xfer *x, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void xfer_file(struct xfer *x, const char *path, const char *action,
    uint64_t bytes, const struct xfer_file_counts *n);
/* Reports a volume: its files, their bytes, and its own (compressed)
 * bytes. */
void xfer_volume(struct xfer *x, uint32_t index, const char *action,
    uint64_t files, uint64_t file_bytes, uint64_t bytes);
/* Counts a failure (code != 0) on side and reports it: a problem that
 * is no regular file's (a scan's notice, a directory, a link). */
void xfer_problem(struct xfer *x, enum xfer_side side, const char *path,
    int code, const char *text);
/* A regular file that failed (bytes: its size): counted in files_failed
 * with a "failed" file event under its path, then reported as
 * xfer_problem does, named by shown (NULL: path). */
void xfer_file_failed(struct xfer *x, enum xfer_side side, const char *path,
    const char *shown, uint64_t bytes, int code, const char *text);
/* An entry that failed: xfer_file_failed for a regular file, else
 * xfer_problem. */
void xfer_entry_failed(struct xfer *x, enum xfer_side side, int is_file,
    const char *path, uint64_t bytes, int code, const char *text);
/* The file (entry id) that the receiver's fatal error met: counted as
 * xfer_file_failed does, without a problem of its own (the error that
 * stops the transfer says it), and remembered (stop_id) for STOP. Once
 * per transfer. */
void xfer_file_stopped(struct xfer *x, uint32_t id, const char *path,
    uint64_t bytes, int code);

#endif
