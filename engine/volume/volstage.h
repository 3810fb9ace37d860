/*
 * volstage.h: where the volume reader (volread.h) writes: a staging
 * directory beneath the destination, its files, and the directories
 * whose metadata waits until the reader has left them.
 *
 * Files are made under DEST/.ferry-unpack.<pid>.<n>/ (0700, names are
 * counters) and handed to the stage's writer (dest_write.h, the one
 * transfers commit through), which the reader commits and which tells
 * it of each member (volread.c). Paths given here are checked already
 * (volread.c): relative, clean, not reserved.
 *
 * Small whole files are written behind: their bytes are hashed here and
 * handed to the writer's thread, which creates the staging file while
 * the reader goes on with the next member; the reader's commits are
 * done by that thread too, in order after their files.
 * Creating and renaming a file costs the kernel far more than reading
 * its bytes out of a volume, and a commit waits on the disk: the reader
 * goes on meanwhile, and the stages of several streams write in parallel
 * (docs/DESIGN.md, "Writing files").
 *
 * Not thread-safe; one reader owns one stage.
 */
#ifndef FERRY_ENGINE_VOLSTAGE_H
#define FERRY_ENGINE_VOLSTAGE_H

#include <stdint.h>

#include "../../common/err.h"
#include "../../common/hash.h"
#include "../dest_write.h"

#define VOLSTAGE_PREFIX ".ferry-unpack."
/* A file whose size is not known yet. */
#define VOLSTAGE_UNKNOWN UINT64_MAX

struct volstage {
    /* read-only */
    char name[64];          /* of the staging directory */
    /* public: the reader commits through it */
    struct dest_writer w;
    /* private */
    int rootfd, stagefd, parentfd;
    uint32_t block_size;
    struct dest_write_meta *dirs;   /* entered, not left */
    size_t ndirs, ndirs_cap;
    uint64_t next_key;
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

/* Makes the staging directory beneath rootfd (borrowed).
 * For the tests: nothing else calls it. */
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
/* Sets mode and mtime and hands the file to the writer (then f is
 * closed). A file written behind may fail later: the writer says so
 * with its path. */
int volstage_file_done(struct volstage *s, struct volstage_file *f)
    FERRY_WUR;
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

#endif
