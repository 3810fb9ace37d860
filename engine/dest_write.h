/*
 * dest_write.h: the one writer of a destination, so that the files of a
 * transfer (dest.c), the members of volumes (volstage.c: in transfers
 * and `ferry unpack`) and the files of a set of volumes (volset.h: kept
 * volumes, `ferry pack`) land by one set of rules (docs/DESIGN.md,
 * "Writing files"):
 *
 *  - a file is written under a staging name on the destination's file
 *    system, sealed (mode, mtime), and renamed into place in a batch;
 *  - data durable before the renames, renames durable before anyone is
 *    told: on Linux one syncfs each for the whole batch; elsewhere each
 *    file is fsynced as it is sealed, and the root around the renames;
 *  - parents are opened beneath the root one component at a time without
 *    following symlinks (fsx.h), through a one-entry cache;
 *  - a symlink is made aside and renamed over what is there, so its name
 *    is never missing nor half made;
 *  - directories get their mode and mtime last, once their files are in
 *    place (they are kept owner-writable until then);
 *  - an old version of DEST_WRITE_RELEASE_MIN bytes or more on disk that
 *    a commit replaces is freed by another process (fsx_close_detached).
 */
#ifndef FERRY_ENGINE_DEST_WRITE_H
#define FERRY_ENGINE_DEST_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

struct waker;

/* Commit a batch once this many files (and directories waiting with
 * them) or bytes wait. */
#define DEST_WRITE_BATCH_FILES 512u
#define DEST_WRITE_BATCH_BYTES (256u << 20)
/* The commit of a file replaces an old version this big (on disk) without
 * waiting for its pages and blocks to be freed (fsx_close_detached). */
#define DEST_WRITE_RELEASE_MIN (64u << 20)
/* Whole files up to this size are written behind (dest_writer_put),
 * through a ring of DEST_WRITE_RING bytes and at most DEST_WRITE_JOBS
 * files and commits. */
#define DEST_WRITE_BEHIND_MAX (256u << 10)
#define DEST_WRITE_RING (2u << 20)
#define DEST_WRITE_JOBS 512u

/* A directory with the metadata it gets last. */
struct dest_write_meta {
    char *path;
    uint32_t mode;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
};

/* Appends *m to the vector (v, n, cap), which takes m->path. */
int dest_write_meta_push(struct dest_write_meta **v, size_t *n, size_t *cap,
    const struct dest_write_meta *m) FERRY_WUR;
/* Frees the paths and the vector. */
void dest_write_meta_free(struct dest_write_meta *v, size_t n);
/* Sets the mode and mtime of the directory d->path beneath rootfd (if
 * it is still one there; best effort). */
void dest_write_dir_fix(int rootfd, const struct dest_write_meta *d);

/* A sealed file waiting in a batch. */
struct dest_write_file {
    char *path;             /* where it goes beneath the root (owned) */
    char *name;             /* its name in the staging dir (owned) */
    uint64_t size;
    int failed;             /* set by the commit: why it is not in place */
    void *owner;            /* the caller's */
};

/* Files to rename into place, then directories to fix (deepest first). */
struct dest_write_batch {
    struct dest_write_file *files;
    size_t nfiles, files_cap;
    uint64_t bytes;
    struct dest_write_meta *dirs;
    size_t ndirs, dirs_cap;
};

/* Told of each file of a commit once the batch is durable, on the
 * writer's owner's thread: f->failed is 0 when it is in place, else why
 * not (its staged file is still there). Returns 0 or an error. */
typedef int dest_write_done_fn(void *ctx, struct dest_write_file *f);

/* The one-entry cache of the parent directory last opened (private). */
struct dest_write_parent {
    int fd;
    char *path;
};

/* A staged file's data is all written: its mode and mtime, then
 * dest_write_durable. */
int dest_write_seal(int fd, uint32_t mode, int64_t mtime_sec,
    uint32_t mtime_nsec) FERRY_WUR;

/* One file, written as tmp in dirfd through fd (closed here, always),
 * committed as name in dirfd by the rules of a batch: for the files of a
 * set of volumes (volset.h), which are not a tree. 0 or an error. */
int dest_write_one(int dirfd, int fd, const char *tmp,
    const char *name) FERRY_WUR;

/* The symlink name in pfd to target, with that mtime: made as tmp in
 * stagefd (whatever has that name goes first), then renamed into
 * place. */
int dest_write_symlink(int stagefd, const char *tmp, const char *target,
    int64_t mtime_sec, uint32_t mtime_nsec, int pfd,
    const char *name) FERRY_WUR;

/*
 * The writer: one batch, its commit, and the thread behind it. dest.c
 * stages the files of a transfer here and commits in its own step;
 * volstage.c puts the members of volumes here, small ones written by the
 * thread, and commits behind (the reader goes on meanwhile). Either way
 * each file is told to the done callback of its commit, on the owner's
 * thread: for a commit behind, when dest_writer_poll finds it done.
 *
 * After the first failure behind (a write, a sync) nothing more is done
 * nor told: dest_writer_poll says what failed.
 */
struct behind;

struct dest_writer {
    /* read-only */
    struct dest_write_batch batch;  /* what the next commit takes */
    /* private */
    int rootfd, stagefd;
    struct dest_write_parent pc;    /* the owner's parent cache */
    struct behind *wb;              /* the thread, made by the first put */
    int wb_off;                     /* ... or not: write in place */
    uint8_t *ring;                  /* bytes of files waiting for it */
    size_t head;                    /* where the next file's bytes go */
    struct dest_write_parent wb_pc; /* the thread's parent cache */
    int err;                        /* its first failure */
    char *failed;                   /* ... and the path, or NULL */
    struct waker *wake;             /* woken by commits behind */
    size_t commits;                 /* ... queued and not told */
};

/* Writes beneath rootfd, staging in stagefd (both borrowed; on one file
 * system). */
void dest_writer_init(struct dest_writer *w, int rootfd, int stagefd);
/* The thread ends once it has done what was queued (files complete
 * before the owner stopped are committed, but not told); the batch is
 * forgotten (its staged files and owners are the caller's). */
void dest_writer_cleanup(struct dest_writer *w);
/* A commit behind (dest_writer_commit) wakes w once done (waker.h);
 * NULL: none does. */
void dest_writer_set_waker(struct dest_writer *w, struct waker *wk);
/* Where it writes from now on: a destination resolves its root and its
 * state directory as it goes. Only while nothing is queued behind. */
void dest_writer_at(struct dest_writer *w, int rootfd, int stagefd);
/* Closes the cached parent (what the next files need differs, or a
 * directory is about to be made read-only). */
void dest_writer_forget(struct dest_writer *w);
/* dest_write_parent through the owner's cache. */
int dest_writer_parent(struct dest_writer *w, const char *rel, int *pfd,
    const char **base) FERRY_WUR;

/* Adds a sealed file staged as f->name (takes f->path and f->name). */
int dest_writer_stage(struct dest_writer *w,
    const struct dest_write_file *f) FERRY_WUR;
/* Adds a file of f->size bytes (at most DEST_WRITE_BEHIND_MAX) whose data
 * is at data: the thread creates, writes and seals it as f->name (takes
 * f->path and f->name on success; data is copied); without one it is
 * done now. Waits for room in the ring. */
int dest_writer_put(struct dest_writer *w, const struct dest_write_file *f,
    const void *data, uint32_t mode, int64_t mtime_sec,
    uint32_t mtime_nsec) FERRY_WUR;
/* A directory whose mode and mtime the next commit sets (takes
 * m->path). */
int dest_writer_dir(struct dest_writer *w,
    const struct dest_write_meta *m) FERRY_WUR;
/* 1 when the batch is to be committed now. */
int dest_writer_full(const struct dest_writer *w);

/*
 * Commits the batch: data durable, every file renamed into place,
 * renames durable, the directories' metadata, then done(ctx, f) for each
 * file in order. With behind (and a thread), it is queued and
 * this returns at once; else it waits for what is queued and commits
 * now, returning the first error done returned, or that of a failed sync
 * (at once, nobody told, the batch left as it was: its files are kept
 * for the caller).
 */
int dest_writer_commit(struct dest_writer *w, int behind,
    dest_write_done_fn *done, void *ctx) FERRY_WUR;
/* Tells what the thread has done since (the done callbacks run here);
 * with wait, everything queued. 0, or its first failure (then *failed
 * names the path, or is NULL). */
int dest_writer_poll(struct dest_writer *w, int wait,
    const char **failed);
/* 1 while a commit queued behind has not been told (its done callbacks
 * run in a later dest_writer_poll); it wakes the waker when done. */
int dest_writer_pending(struct dest_writer *w);

#endif
