/*
 * volstage.h: where the volume reader (volread.h) writes: a staging
 * directory beneath the destination, the batch commit, and the
 * directories whose metadata waits until the reader has left them.
 *
 * Files are made under DEST/.ferry-unpack.<pid>.<n>/ (0700, names are
 * counters), then renamed into place in batches: one syncfs for the data
 * of the whole batch, the renames, one syncfs for them, as engine/dest.c
 * commits transfers. Parents are opened beneath the root without
 * following symlinks (fsx.h), with a one-entry cache. Paths given here
 * are checked already (volread.c): relative, clean, not reserved.
 *
 * Not thread-safe; one reader owns one stage.
 */
#ifndef FERRY_ENGINE_VOLSTAGE_H
#define FERRY_ENGINE_VOLSTAGE_H

#include <stdint.h>

#include "../common/err.h"
#include "../common/hash.h"

/* Commit once this many files (and directories left) or bytes wait. */
#define VOLSTAGE_BATCH_FILES 512u
#define VOLSTAGE_BATCH_BYTES (256u << 20)
#define VOLSTAGE_PREFIX ".ferry-unpack."
/* A file whose size is not known yet. */
#define VOLSTAGE_UNKNOWN UINT64_MAX

struct volstage_name {
    uint64_t key;           /* staging name (files) */
    char *path;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
};

struct volstage {
    /* read-only */
    char name[64];          /* of the staging directory */
    uint64_t committed;     /* files in place, in the order they came */
    /* private */
    int rootfd, stagefd, parentfd;
    uint32_t block_size;
    struct volstage_name *batch, *dirs, *fix;
    size_t nbatch, nbatch_cap, ndirs, ndirs_cap, nfix, nfix_cap;
    uint64_t batch_bytes;
    int pfd;
    char *ppath;
    uint64_t next_key;
    char *failed;           /* the path a commit failed on */
};

/* A file being written; fd < 0 when none. The reader keeps two. */
struct volstage_file {
    int fd;                 /* read-only */
    char *path;             /* read-only: its final path */
    uint64_t size;          /* read-only: expected, or VOLSTAGE_UNKNOWN */
    uint64_t done;          /* read-only: bytes written */
    uint32_t mode;          /* public: set before volstage_file_done */
    int64_t mtime_sec;      /* public */
    uint32_t mtime_nsec;    /* public */
    /* private */
    uint64_t key;
    struct hash_file *hf;
    uint8_t *blk;
    size_t fill;
};

/* Makes the staging directory beneath rootfd (borrowed). */
int volstage_init(struct volstage *s, int rootfd,
    uint32_t block_size) FERRY_WUR;
/* The same with the staging directory made in parentfd (borrowed), on
 * the same file system: a transfer stages in the destination's state
 * directory, where a crash leaves nothing in sight. */
int volstage_init_in(struct volstage *s, int rootfd, int parentfd,
    uint32_t block_size) FERRY_WUR;
/* Removes the staging directories a crashed reader left in parentfd;
 * only for a directory whose user holds its lock (nobody else stages
 * there). */
void volstage_sweep(int parentfd);
/* Removes what is staged and not committed, and the staging directory. */
void volstage_cleanup(struct volstage *s);

/* Opens (and caches) the parent of rel, making missing directories. The
 * fd is the cache's. */
int volstage_parent(struct volstage *s, const char *rel, int *pfd,
    const char **base) FERRY_WUR;

void volstage_file_init(struct volstage_file *f);
/* Creates a staging file for path (copied) of size bytes. */
int volstage_file_open(struct volstage *s, struct volstage_file *f,
    const char *path, uint64_t size) FERRY_WUR;
int volstage_file_write(struct volstage *s, struct volstage_file *f,
    const void *p, size_t n) FERRY_WUR;
/* All data is there: writes the rest and gives the file hash (with
 * block_size; read back when the size was unknown). */
int volstage_file_hash(struct volstage *s, struct volstage_file *f,
    struct hash128 *out) FERRY_WUR;
/* Sets mode and mtime and adds the file to the batch (then f is closed);
 * commits when the batch is full. On failure *failed names the path. */
int volstage_file_done(struct volstage *s, struct volstage_file *f,
    const char **failed) FERRY_WUR;
/* Closes f, removing its staging file. */
void volstage_file_discard(struct volstage *s, struct volstage_file *f);
void volstage_file_cleanup(struct volstage_file *f);

/* A symlink, made aside and renamed into place at once (members after
 * it see it). */
int volstage_symlink(struct volstage *s, const char *rel,
    const char *target, int64_t mtime_sec, uint32_t mtime_nsec) FERRY_WUR;
/* A directory: made (with its parents) and remembered for its metadata. */
int volstage_dir(struct volstage *s, const char *rel, uint32_t mode,
    int64_t mtime_sec, uint32_t mtime_nsec) FERRY_WUR;
/* The directories remembered that rel is not beneath (all with NULL) are
 * left: their metadata is set after the next commit. */
int volstage_leave(struct volstage *s, const char *rel) FERRY_WUR;

/* Commits the batch and sets the left directories' metadata. On failure
 * *failed names the path (or NULL for the sync). */
int volstage_commit(struct volstage *s, const char **failed) FERRY_WUR;

#endif
