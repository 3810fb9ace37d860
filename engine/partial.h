/*
 * partial.h: a receiver's partial file and its resume journal.
 *
 * While a file arrives it lives in DEST/.ferry/part/<key>.part, and
 * <key>.jnl records which blocks of it are on disk with their hashes (see
 * proto/journal.h). The journal is appended only after an fdatasync of
 * the part file, in batches (PARTIAL_SYNC_BYTES or PARTIAL_SYNC_MS), so
 * after a crash of any kind it claims nothing that is not durable; at
 * most the last batch is sent again. A later run that offers the same file (same path, size,
 * mtime, block size) resumes after the blocks the journal holds, without
 * reading them: their hashes are in the journal.
 */
#ifndef FERRY_ENGINE_PARTIAL_H
#define FERRY_ENGINE_PARTIAL_H

#include <stdint.h>

#include "../common/buf.h"
#include "../common/hash.h"
#include "../proto/journal.h"

/* Where a destination keeps its state: DEST/.ferry/part/, and a marker
 * file that tells a scan of a source tree that .ferry is ours. */
#define PARTIAL_STATE_DIR ".ferry"
#define PARTIAL_PART_DIR "part"
#define PARTIAL_MARKER "FERRY-STATE"

/* The journal is synced after this much data or this much time, which
 * bounds what a crash of the receiver costs to send again. */
#define PARTIAL_SYNC_BYTES (64u << 20)
#define PARTIAL_SYNC_MS 1000
/* Partial state untouched this long is removed by the next transfer into
 * the same destination. */
#define PARTIAL_EXPIRE_S (30 * 24 * 3600)
/* Files smaller than this are not journaled: sending one again costs less
 * than the journal's syscalls, and thousands of small files are common. */
#define PARTIAL_JOURNAL_MIN (8u << 20)
/* A small file's temp untouched this long belongs to a dead agent. */
#define PARTIAL_TMP_EXPIRE_S 3600

/* How long to wait for a partial another agent still holds. */
#define PARTIAL_LOCK_WAIT_MS 10000

struct partial;

/* The source version a partial belongs to. */
struct partial_id {
    const char *path;
    uint64_t size;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    uint32_t mode;
    uint32_t block_size;
};

/* Names the files of path: key is 16 hex digits and a NUL. */
void partial_key(const char *path, char key[17]);

/*
 * Reads the journal of id beneath partfd (if any) and returns the number
 * of leading blocks on disk. Their hashes go, in order, to hf (if not
 * NULL), and *prefix (if not NULL) gets the file hash those blocks give
 * for a file as long as they are (what REPLY carries). A journal of
 * another version, a missing part file or a damaged header gives 0 (and
 * is replaced by partial_open). Never fails: a journal it cannot read is
 * no journal.
 */
uint64_t partial_probe(int partfd, const struct partial_id *id,
    struct hash_file *hf, struct hash128 *prefix);

/*
 * Opens the partial for writing. With blocks > 0 (from partial_probe) the
 * part file and journal are kept and extended; with 0 both start empty.
 * Takes an exclusive lock, waiting up to PARTIAL_LOCK_WAIT_MS for an
 * agent of an earlier connection to let go (EBUSY after that).
 */
int partial_open(int partfd, const struct partial_id *id, uint64_t blocks,
    struct partial **out) FERRY_WUR;

/* The part file's fd, for writes and the final fchmod/futimens. */
int partial_fd(const struct partial *p);

/* Records that block index (hash h, n data bytes written to the part
 * file, 0 for a hole) is there; syncs every PARTIAL_SYNC_BYTES. */
int partial_add(struct partial *p, uint64_t index, const struct hash128 *h,
    size_t n) FERRY_WUR;

/* fdatasync of the part file, then the recorded blocks to the journal. */
int partial_sync(struct partial *p) FERRY_WUR;

/* Starts the file over (the sender did not accept the resume point). */
int partial_reset(struct partial *p) FERRY_WUR;

/* Renames the (complete, synced) part file to name beneath dirfd. */
int partial_rename(struct partial *p, int partfd, int dirfd,
    const char *name) FERRY_WUR;

enum partial_end {
    PARTIAL_KEEP,     /* for a later resume: sync the journal first */
    PARTIAL_DISCARD,  /* remove part file and journal */
    PARTIAL_DONE      /* the part file was renamed into place: drop the
                         journal */
};

/* Closes the partial. NULL is a no-op. */
void partial_close(struct partial *p, int partfd, enum partial_end how);

/* One unfinished transfer found by partial_list. */
struct partial_info {
    char *path;
    uint64_t size;
    uint64_t done;      /* bytes the journal holds */
    int64_t age_s;      /* since the journal last changed */
};

/*
 * Lists the partial files beneath partfd. Expired ones (older than
 * PARTIAL_EXPIRE_S) are removed when expire is set, and not listed.
 * Caller frees with partial_list_free.
 */
int partial_list(int partfd, int expire, struct partial_info **out,
    size_t *n) FERRY_WUR;
void partial_list_free(struct partial_info *v, size_t n);

/*
 * The unfinished files kept under the destination directory dest (in
 * dest/.ferry/part). With clean, they are removed, and the state
 * directory with them. A destination without state gives an empty list.
 */
int partial_dest_state(const char *dest, int clean,
    struct partial_info **out, size_t *n) FERRY_WUR;

#endif
