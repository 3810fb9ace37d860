/*
 * dest.h: the destination tree of a receiver, beneath one root fd.
 *
 * Everything that touches the destination lives here: resolving DEST with
 * rsync's naming rules, the state directory DEST/.ferry (created 0700 and
 * checked on every use: a directory of ours, not a link, not writable by
 * others), its lock, the parent-directory cache, making directories and
 * symlinks, the up-to-date check, metadata, and the durable batch commit
 * of staged files. Paths are opened beneath the root fd one component at
 * a time without following symlinks (fsx.h), so nothing lands outside.
 *
 * The lock: DEST/.ferry/lock, an exclusive flock held from the first time
 * the state directory is written until dest_free, by the one process that
 * writes this destination (the agent that adopted every stream of a push,
 * or the client of a pull). A second transfer into the same destination
 * waits DEST_LOCK_WAIT_MS for it, then fails with a message naming the
 * holder; `ferry clean` refuses while it is held. The lock file holds the
 * holder's pid and transfer id (informational).
 *
 * Not thread-safe: the receivers of one transfer run one step at a time
 * (conn.h groups).
 */
#ifndef FERRY_ENGINE_DEST_H
#define FERRY_ENGINE_DEST_H

#include <stdint.h>

#include "../proto/msg.h"
#include "partial.h"
#include "xfer.h"

/* Where a destination keeps its state, and a marker that says .ferry is
 * ours (a scan of a source leaves any top-level .ferry out; older
 * versions left out only one with the marker). */
#define DEST_STATE_DIR ".ferry"
#define DEST_PART_DIR "part"
#define DEST_MARKER "FERRY-STATE"
#define DEST_SALT "salt"
#define DEST_LOCK "lock"

#define DEST_LOCK_WAIT_MS 10000
/* Times the state directory is opened again when the holder waited for
 * removed it as it ended (another waiter may then hold the new one). */
#define DEST_LOCK_TRIES 8

struct dest;

/* A complete, checked file waiting in the batch for its commit. */
struct dest_staged {
    uint32_t id;
    char *path;            /* owned, until the commit tells of it */
    uint64_t size;
    struct partial *pt;    /* owned */
    int failed;            /* set by the commit */
    void *owner;           /* for the caller (incoming.c) */
};

/* dest: the path as the user wrote it (copied). flags: OPEN flags.
 * Nothing is touched on disk until dest_resolve. */
struct dest *dest_new(const char *path, uint32_t flags,
    const uint8_t transfer_id[16], struct xfer *x);
/* Staged files not committed are kept for a resume (journals synced);
 * the lock goes, and the state directory if nothing is left in it. */
void dest_free(struct dest *d);

/*
 * Makes the directory path of a destination as rsync does: its last
 * component, and its missing parents only with OPEN_F_MKPATH (--mkpath),
 * so that a mistyped parent is an error naming it, not a new tree beside
 * the intended one. With parent_only (a file given a new name in path),
 * path is the destination's parent: it is made only with MKPATH. Errors
 * carry a message (xfer_fail); a missing parent is -ENOENT.
 */
int dest_mkdir(const char *path, int parent_only, uint32_t flags,
    struct xfer *x) FERRY_WUR;

/*
 * Resolves the destination from the sender's plan (rsync's rules: a
 * single file named by its own source may be given a new name, anything
 * else goes into DEST, made if missing; its parents as dest_mkdir says).
 * *rename is the new name or NULL (valid until dest_free). Idempotent for
 * later connections of the same run. Errors carry a message (xfer_fail).
 */
int dest_resolve(struct dest *d, const struct msg_plan *plan,
    const char **rename) FERRY_WUR;
/* Where the files go (after dest_resolve), for messages. */
const char *dest_root(const struct dest *d);
/* The OPEN flags it was made with. */
uint32_t dest_flags(const struct dest *d);
/* Flags the client chose once the link was known (OPEN_F_COMPRESS). */
void dest_add_flags(struct dest *d, uint32_t flags);
/* --basis FILE: the basis of files new to the destination, a path
 * relative to the destination directory (copied; FERRY_ERR_BAD_PATH if
 * it is not one: absolute, "..", empty). NULL when none was named. */
int dest_set_basis(struct dest *d, const char *rel) FERRY_WUR;
const char *dest_basis(const struct dest *d);
/* --adopt DIR (a push's): a directory relative to the destination laid
 * out as it, whose files may be moved into place (dest_file_current).
 * Copied; FERRY_ERR_BAD_PATH if it is not such a path (absolute, "..",
 * empty, or the state directory). */
int dest_set_adopt(struct dest *d, const char *rel) FERRY_WUR;
/*
 * A basis directory, for a receiver whose destination is a fresh
 * directory (a watch's unit, pulled into its staging): with --basis auto,
 * a file new to the destination at path P is built from DIR/P, before
 * the most similar file beside it is looked for. DIR is the receiving
 * side's own (the client of a pull), opened here, never a symlink; P is
 * opened beneath it as any path is beneath the destination. A DIR that
 * cannot be opened is none (logged). 0, or FERRY_ERR_NOMEM.
 */
int dest_set_basis_dir(struct dest *d, const char *dir) FERRY_WUR;
/* Its fd (borrowed, valid until dest_free), or -1. */
int dest_basis_dir_fd(const struct dest *d);
/* Its directory fd (borrowed, valid until dest_free), -1 before
 * dest_resolve. */
int dest_root_fd(const struct dest *d);

/*
 * The staging directory DEST/.ferry/part: made if missing (with the
 * salt and marker), checked, and locked. *partfd stays valid until
 * dest_free. The first call also removes expired partials.
 */
int dest_part_dir(struct dest *d, int *partfd) FERRY_WUR;
/* The secret that keys staging names (after dest_part_dir). */
const uint8_t *dest_salt(const struct dest *d);
/* Staging directory and salt only if a state directory exists (never
 * makes one): 1 if there is one (locked), 0 if not, or the error that
 * stops its use (another transfer holds it, it is not ours). */
int dest_find_state(struct dest *d);

/* Opens (and caches) the parent directory of path beneath the root; *name
 * points into path. The fd is the cache's. */
int dest_parent(struct dest *d, const char *path, int *pfd,
    const char **name) FERRY_WUR;

/*
 * Entries. A directory, link or up-to-date file is handled at once:
 * dest_file_current returns 1 when the file at path matches m (size and
 * mtime, or with CHECKSUM the content hash) after fixing its mode and
 * mtime, 0 when it must be sent, or an error (-EISDIR for a directory in
 * its place, unless OPEN_F_REPLACE_DIRS: then the directory is removed,
 * as for a link dest_make_symlink makes). With --adopt DIR (and a hash
 * in m) a file not current is DEST_ADOPTED when DIR/path, opened beneath
 * the root without following a link, is a regular file of one name, m's
 * size and m's hash: it was made durable with m's mode and mtime and
 * renamed onto path. Anything else there is left alone (0).
 */
#define DEST_ADOPTED 2
int dest_file_current(struct dest *d, const struct msg_entry *m,
    const char *path, uint32_t block_size) FERRY_WUR;
int dest_make_dir(struct dest *d, const struct msg_entry *m,
    const char *path) FERRY_WUR;
int dest_make_symlink(struct dest *d, const struct msg_entry *m,
    const char *path) FERRY_WUR;

/* Errors that make every later write fail too, or that stop the use of
 * the state directory: the transfer stops. */
int dest_fatal_errno(int r);

/* Adds a complete file to the batch (takes s's contents). */
int dest_stage(struct dest *d, struct dest_staged *s) FERRY_WUR;
/* 1 when the batch is big enough to commit now. */
int dest_batch_full(const struct dest *d);
int dest_batch_len(const struct dest *d);

/*
 * Commits the batch (dest_writer_commit): data durable, every file
 * renamed into place, renames durable, then done(ctx, s) for each
 * (s->failed set for those that could not be renamed); after done the
 * staged file and s are gone. A failed sync is fatal (with a message).
 */
typedef int dest_done_fn(void *ctx, struct dest_staged *s);
int dest_flush(struct dest *d, dest_done_fn *done, void *ctx) FERRY_WUR;

/* Sets directory modes and mtimes last, deepest first. */
void dest_fix_dirs(struct dest *d);
/* A new connection of the same run: directories are offered again. */
void dest_restart(struct dest *d);
/* Removes the state directory if nothing in it is worth keeping. */
void dest_tidy(struct dest *d);
/*
 * 1 if a transfer holds the lock of the state directory of path (the
 * destination as the user wrote it: a directory's own, or for one that is
 * not a directory, its parent's), with what its lock file says of the
 * holder ("pid N, transfer X", "" if unreadable) in holder; 0 if not, or
 * if there is no state directory to ask (nor a destination yet). Never
 * waits.
 */
int dest_busy(const char *path, char *holder, size_t n);
/* What the state directory keeps for a resume now: its unfinished files
 * (partial_list) and the bytes their journals claim; zeros when there is
 * none, or it cannot be read. */
void dest_kept(struct dest *d, uint64_t *files, uint64_t *bytes);

/*
 * status and clean of a destination (path as the user wrote it): the
 * unfinished files kept there; with clean, they are removed with the
 * state directory (refused with EBUSY while a transfer holds the lock;
 * ENOTEMPTY when something ferry did not make stays in it, after the
 * unfinished files went). The record of what ferry put in the
 * destination (owned.h) is not an unfinished file: it stays, and the
 * state directory with it. A destination without state gives an empty
 * list. The staging directories a killed `ferry unpack` left in path
 * (volstage_sweep_stale) are listed too, as NAME/ with the bytes staged,
 * and removed by a clean. On failure *out is NULL and *n 0.
 */
int dest_state_list(const char *path, int clean, struct partial_info **out,
    size_t *n) FERRY_WUR;
/* What a dest_state_list failure means, for the user. */
const char *dest_state_strerror(int r);

#endif
