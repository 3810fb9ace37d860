/*
 * partial.h: a receiver's staging file and its resume journal.
 *
 * While a file arrives it lives in DEST/.ferry/part/<key>.part, and
 * <key>.jnl records which blocks of it are on disk with their hashes (see
 * proto/journal.h). The key is a hash of the path keyed with the
 * destination's secret salt (dest.h), so nobody can pick names that
 * collide. The journal is appended only after an fdatasync of the part
 * file, in batches (PARTIAL_SYNC_BYTES or PARTIAL_SYNC_MS), so after a
 * crash of any kind it claims nothing that is not durable. Blocks may
 * arrive in any order; the journal says which are there, not only a
 * leading run.
 *
 * Nothing here trusts what it finds on disk: a part file or journal that
 * is not a regular file of ours with a single link (a planted hard link, a
 * FIFO, a symlink) is never written through; a fresh part file is created
 * anew (O_EXCL) after removing whatever had its name; a journal's claims
 * are only a list of blocks worth reading back (partial_read_block), and
 * the caller checks each before it counts.
 *
 * The caller holds the destination's lock (dest.h): one process writes a
 * destination's state at a time.
 */
#ifndef FERRY_ENGINE_PARTIAL_H
#define FERRY_ENGINE_PARTIAL_H

#include <stdint.h>

#include "../common/buf.h"
#include "../common/hash.h"
#include "../proto/journal.h"

/* The journal is synced after this much data or this much time, which
 * bounds what a crash of the receiver costs to send again. */
#define PARTIAL_SYNC_BYTES (64u << 20)
#define PARTIAL_SYNC_MS 1000
/* Writeback of a file's new data is started every this many bytes
 * (sync_file_range), between the syncs. */
#define PARTIAL_KICK_BYTES (8u << 20)
/* Partial state untouched this long is removed by the next transfer into
 * the same destination. */
#define PARTIAL_EXPIRE_S (30 * 24 * 3600)
/* Files smaller than this are not journaled: sending one again costs less
 * than the journal's syscalls, and thousands of small files are common. */
#define PARTIAL_JOURNAL_MIN (8u << 20)
/* Most journal records read for one file, as a multiple of its blocks (a
 * block written again gets a new record): a bigger journal is damaged. */
#define PARTIAL_MAX_RECORDS_PER_BLOCK 4

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

#define PARTIAL_KEY_LEN 16
/* Names the files of path: 16 hex digits and a NUL, from a keyed hash. */
void partial_key(const uint8_t salt[16], const char *path,
    char key[PARTIAL_KEY_LEN + 1]);

/* What a journal claims: blocks (sorted, each once, the last record
 * winning) and the hashes recorded for them. */
struct partial_claim {
    uint64_t n;
    uint64_t *index;
    struct hash128 *hash;
    uint64_t journal_len;  /* header and whole records: where appends go */
    int old_format;        /* a format-1 journal: discarded, sent again */
};

/*
 * Reads the journal of key beneath partfd for the version id. A journal
 * of another version, a missing or unsafe part file or journal, or a
 * damaged header claims nothing (n = 0). Fails only with NOMEM. Free with
 * partial_claim_free.
 */
int partial_probe(int partfd, const char *key, const struct partial_id *id,
    struct partial_claim *out) FERRY_WUR;
void partial_claim_free(struct partial_claim *c);

/*
 * Opens the partial for writing. With a claim of n > 0 (from
 * partial_probe, nothing changed since) the part file and journal are
 * kept and appended to; otherwise both are made anew. The light form
 * (files under PARTIAL_JOURNAL_MIN) has no journal and is never resumed.
 */
int partial_open(int partfd, const char *key, const struct partial_id *id,
    const struct partial_claim *keep, struct partial **out) FERRY_WUR;

/* The part file's fd, for writes and the final fchmod/futimens. */
int partial_fd(const struct partial *p);

/*
 * Reads block index (len bytes at index * block_size) back from the part
 * file into buf and hashes it; bytes past the end of the file read as
 * zeros (a hole not yet extended). For checking a claim before trusting it.
 */
int partial_read_block(struct partial *p, uint64_t index, size_t len,
    uint8_t *buf, struct hash128 *out) FERRY_WUR;

/* Makes [off, off + len) read as zeros (a hole where possible), for a
 * zero block written over data an earlier run left. */
int partial_zero(struct partial *p, uint64_t off, size_t len) FERRY_WUR;

/* Records that block index (hash h, n data bytes written to the part
 * file, 0 for a hole) is there; syncs every PARTIAL_SYNC_BYTES. */
int partial_add(struct partial *p, uint64_t index, const struct hash128 *h,
    size_t n) FERRY_WUR;

/* fdatasync of the part file, then the recorded blocks to the journal. */
int partial_sync(struct partial *p) FERRY_WUR;

/* The part file's name in the staging directory (valid while p is
 * open), for the commit that renames it into place. */
const char *partial_name(const struct partial *p);

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
    uint64_t done;      /* bytes the journal claims */
    int64_t age_s;      /* since the journal last changed */
};

/*
 * Lists the partial files beneath partfd. With expire (the caller holds
 * the destination's lock), expired ones (older than PARTIAL_EXPIRE_S),
 * format-1 journals and light temporaries left by a dead process are
 * removed and not listed. Entries that are not ours (not regular files,
 * FIFOs, links) are skipped without being opened for long. Caller frees
 * with partial_list_free.
 */
int partial_list(int partfd, int expire, struct partial_info **out,
    size_t *n) FERRY_WUR;
void partial_list_free(struct partial_info *v, size_t n);
/* Appends one entry to a list that partial_list_free frees. */
int partial_list_add(struct partial_info **v, size_t *n, size_t *cap,
    const char *path, size_t path_len, uint64_t size, uint64_t done,
    int64_t age_s) FERRY_WUR;

/* Removes every file beneath partfd (ours alone live there). */
void partial_clear(int partfd);

#endif
