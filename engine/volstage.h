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
 * Small whole files are written behind: their bytes are hashed here,
 * copied to a ring, and a thread of the stage's own creates the staging
 * file (open, write, mode, mtime, close) while the reader goes on with
 * the next member; batches are committed by that thread too, in order
 * after their files (volstage_commit_behind). Creating and renaming a
 * file costs the kernel far more than reading its bytes out of a volume,
 * and a commit waits on the disk: the reader goes on meanwhile, and the
 * stages of several streams write in parallel (docs/DESIGN.md, "Writing
 * files").
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
/* Whole files up to this size are written behind, through a ring of
 * VOLSTAGE_BEHIND_RING bytes and at most VOLSTAGE_BEHIND_JOBS files. */
#define VOLSTAGE_BEHIND_MAX (256u << 10)
#define VOLSTAGE_BEHIND_RING (2u << 20)
#define VOLSTAGE_BEHIND_JOBS 512u
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
    /* private */
    uint64_t committed;     /* files put in place here (not behind) */
    int rootfd, stagefd, parentfd;
    uint32_t block_size;
    struct volstage_name *batch, *dirs, *fix;
    size_t nbatch, nbatch_cap, ndirs, ndirs_cap, nfix, nfix_cap;
    uint64_t batch_bytes;
    int pfd;
    char *ppath;
    uint64_t next_key;
    char *failed;           /* the path a commit failed on */
    struct volstage_behind *wb;  /* the writer behind, once needed */
    int wb_off;             /* it could not be made: write in place */
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
    int behind;             /* written behind: its bytes wait in blk */
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
/*
 * The staging directories in parentfd that an unpack left when it was
 * killed: ours, named by a process that is gone, and not locked (a live
 * stage holds a flock on its directory from volstage_init_in on, which
 * also covers an unpack on another machine of a shared file system).
 * Each is told to fn (its name, the bytes staged in it, its age in
 * seconds) when fn is not NULL, and removed with remove. Returns how many
 * there were.
 */
typedef void volstage_stale_fn(void *ctx, const char *name, uint64_t bytes,
    int64_t age_s);
int volstage_sweep_stale(int parentfd, int remove, volstage_stale_fn *fn,
    void *ctx);
/* Removes what is staged and not committed, and the staging directory. */
void volstage_cleanup(struct volstage *s);

/* Opens (and caches) the parent of rel, making missing directories. The
 * fd is the cache's. */
int volstage_parent(struct volstage *s, const char *rel, int *pfd,
    const char **base) FERRY_WUR;

void volstage_file_init(struct volstage_file *f);
/* Starts a staging file for path (copied) of size bytes. whole: all of
 * it comes before the next file starts (a member, not a piece), so it may
 * be written behind (f->fd stays -1 then). */
int volstage_file_open(struct volstage *s, struct volstage_file *f,
    const char *path, uint64_t size, int whole) FERRY_WUR;
/* Bytes past the size given at open are refused (FERRY_ERR_TOO_LARGE). */
int volstage_file_write(struct volstage *s, struct volstage_file *f,
    const void *p, size_t n) FERRY_WUR;
/* All data is there: writes the rest and gives the file hash (with
 * block_size; read back when the size was unknown). */
int volstage_file_hash(struct volstage *s, struct volstage_file *f,
    struct hash128 *out) FERRY_WUR;
/* Sets mode and mtime and adds the file to the batch (then f is closed);
 * commits when the batch is full. On failure *failed names the path (a
 * file written behind may fail later, at the commit, with its path). */
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

/* Commits the batch and sets the left directories' metadata, and waits
 * for everything written behind. On failure *failed names the path (or
 * NULL for a sync). */
int volstage_commit(struct volstage *s, const char **failed) FERRY_WUR;
/* The same, left to the writer behind when there is one: returns at
 * once (volstage_committed says when it is done, volstage_error whether
 * it failed); without one, commits now. */
int volstage_commit_behind(struct volstage *s,
    const char **failed) FERRY_WUR;
/* 1 while the writer behind has work queued. */
int volstage_pending(struct volstage *s);
/* Files in place so far, in the order they were done. */
uint64_t volstage_committed(struct volstage *s);
/* 0, or what the writer behind failed on (then *failed names the path or
 * is NULL); nothing more is written then. */
int volstage_error(struct volstage *s, const char **failed) FERRY_WUR;

#endif
