/*
 * plan_int.h: the state the pieces of the plan share (private to
 * engine/plan*.c; the interface is plan.h). plan.c offers entries and
 * takes the answers; plan_work.c runs the queue and the streams' runs;
 * plan_delta.c keeps the receivers' basis signatures.
 */
#ifndef FERRY_ENGINE_PLAN_INT_H
#define FERRY_ENGINE_PLAN_INT_H

#include <stdatomic.h>

#include "../common/ptab.h"
#include "delta/delta_index.h"
#include "plan.h"

struct volsend;

/* Per-entry progress. E_PRIOR: finished over an earlier connection, so
 * not offered again (directories are, for their final mode and mtime). */
enum { E_NEW, E_OFFERED, E_WANTED, E_ENDED, E_ABORTED, E_FINISHED,
    E_PRIOR };

/* Per block, in the low bits; the stream that sent it above. */
enum { B_UNKNOWN = 0, B_NEED, B_CHECK, B_SENT, B_MATCHED };
#define B_STATE(b) ((b) & 7u)
#define B_STREAM(b) ((unsigned)(b) >> 3)

/* A wanted file while it is being sent. */
struct pfile {
    uint32_t id;
    uint64_t nblocks, nresolved, nsigned;
    uint8_t *bs;             /* per block (NULL for an empty file) */
    struct hash_file *hf;    /* our block hashes, folded in order */
    int fd;                  /* the source, shared by the streams */
    int sparse;
    int resume;              /* the receiver holds blocks: SIGS come */
    int ready, ended;
    int aborted;             /* why it was given up, or 0 */
    int zst_misses;
    int packed;              /* travels in a volume (volsend.h) */
    struct xfer_file_counts n;
    uint64_t counted;        /* progress counted, taken back on restart */
    struct pfile *ready_next;
    /* Delta (REPLY_F_DELTA): the receiver's basis, and the runs to send
     * that wait for all of its signatures (plan_delta.c). */
    int delta;
    int delta_hits, delta_misses;  /* blocks that found the basis, not */
    /* The search gave up on the basis (plan_delta_found): blocks are
     * only checked against the basis at their own place. Stopped: it
     * gave up before the basis was described in full, and takes no more
     * of it (DELTA_STOP). */
    int delta_gave_up, delta_stopped;
    uint64_t place;          /* delta_place of its path */
    int stop_said, go_said;  /* DELTA_STOP, DELTA_GO sent */
    /* The probe's blocks that went (a bit each), and whether its part
     * of the basis could be held to search it in (plan_delta_unpark). */
    uint32_t probe_seen;
    int probe_failed;
    struct delta_index *dix;
    /* The described part of the basis, while the probe's blocks are
     * searched in it (plan_file_probe). */
    struct delta_index *probe;
    struct plan_work *parked, *parked_tail;   /* for their pieces */
    struct plan_work *waiting, *waiting_tail; /* for the whole basis */
    /* Tensors (REPLY_F_TENSOR, plan_tensor.c): runs wait in parked until
     * BASIS came; tz is how the blocks are coded, or NULL. */
    int tensor, basis_seen;
    struct plan_tensor *tz;
};

/* A reference's file hash, made once per version of a file for the run
 * (the many files of a save may name one basis). */
struct plan_refhash {
    dev_t dev;
    ino_t ino;
    uint64_t size;
    struct timespec mtime, ctime;
    struct hash128 hash;
};
#define PLAN_REFHASHES 16

struct plan {
    /* The entries: own, or a live manifest its scan still fills
     * (plan_new_live), of which the plan has taken the first seen. */
    struct manifest own;
    struct manifest *mf;
    size_t seen;
    size_t est_cap;
    int live;                /* the scan may add more */
    int scan_err;            /* how the scan ended, once it did */
    uint64_t seen_files, seen_bytes;  /* files among those seen, bytes */
    struct xfer *x;
    uint32_t block_size;
    uint32_t flags;
    uint8_t *est;            /* E_* per entry */
    /* The files wanted and not finished, by id (plan_file): a table of
     * about a window's worth, so an entry costs the plan its state byte
     * alone (a pointer per entry was 8 MB a million files). */
    struct ptab files;
    size_t next_entry;       /* next to offer */
    size_t inflight;         /* offered and not finished */
    struct plan_work *qhead, *qtail;
    struct plan_work *cur[PROTO_MAX_STREAMS];   /* each stream's run */
    atomic_uint lost;        /* streams lost, a bit each */
    atomic_uint retired;     /* streams that get no more work */
    unsigned up;             /* further streams that ran a step, not lost */
    struct pfile *rhead, *rtail;
    uint32_t *ready_ids;     /* ring: ids of ready files */
    uint64_t delta_pieces;   /* basis pieces held over wanted files */
    struct delta_places places;  /* where probes found nothing */
    /* Files given up without a probe, whose DELTA_STOP is to go before
     * the receiver reads their bases (plan_next_stop_due). */
    uint32_t *stops_due;
    size_t nstops_due, stops_due_cap;
    uint64_t tensor_ranges;  /* tensors in layouts over wanted files */
    struct plan_refhash refhash[PLAN_REFHASHES];
    unsigned nrefhash;       /* refhash filled, then the next to reuse */
    size_t rq_head, rq_len;
    struct volsend *vs;      /* small files' packer, or NULL */
    /* Files whose data all went out over an earlier connection while
     * their FILE_DONE did not come back (sorted by id): the receiver may
     * have committed them, and then answers SKIP, which counts them as
     * sent with what they moved. At most a window's worth a restart. */
    struct plan_ended *ended_before;
    size_t nended_before, ended_before_cap;
    /* The file a STOP named (plan_on_stop), this attempt. */
    int stopped;
    uint32_t stop_id;
};

struct plan_ended {
    uint32_t id;
    struct xfer_file_counts n;
};

/* plan.c */

/* The file id wanted and not finished, or NULL. */
struct pfile *plan_file(const struct plan *p, uint32_t id);
/* Adds f (its id not there yet), growing the table at half full.
 * Exported for the tests; otherwise used only in its file. */
int plan_file_add(struct plan *p, struct pfile *f) FERRY_WUR;
/* Takes file id out of the table (not freed), if it is there.
 * Exported for the tests; otherwise used only in its file. */
void plan_file_remove(struct plan *p, uint32_t id);

void plan_work_free(struct plan_work *w);
/* Progress for entry id, remembered while it is in flight so a restart
 * can take it back (a finished entry's stays). */
void plan_count(struct plan *p, uint32_t id, uint64_t n);

/* plan_work.c */

/* Appends runs covering [first, first + count) of file id (a delta
 * file's runs to send wait in its parking while its basis is not
 * described). */
int plan_queue(struct plan *p, uint32_t id, uint8_t kind, uint64_t first,
    uint64_t count, const uint8_t *theirs) FERRY_WUR;
/* Puts file id in the ready ring once all its blocks are settled. */
void plan_make_ready(struct plan *p, uint32_t id);

/* plan_delta.c */

/* Sends f's parked and waiting runs: what they waited for came. */
void plan_delta_release(struct plan *p, struct pfile *f);

/* Frees f's basis and parked runs. */
void plan_delta_forget(struct plan *p, struct pfile *f);
/* f, at path, was wanted with a basis: given up at once where the probes
 * of its place found nothing (delta_places). */
void plan_delta_wanted(struct plan *p, struct pfile *f, const char *path);
/* The blocks at the start of f that probe its basis (plan.h). */
uint64_t plan_delta_probe_blocks(const struct pfile *f);

/* plan_tensor.c */

/* Frees f's layouts and closes its reference. */
void plan_tensor_forget(struct plan *p, struct pfile *f);

#endif
