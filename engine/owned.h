/*
 * owned.h: the record of what ferry itself put at the top of a
 * destination, DEST/.ferry/owned, so that what prunes there (pull --watch
 * --keep, a set of kept volumes that shrank) removes only that.
 *
 * An entry is a name directly in DEST and what identified it when ferry
 * committed it: its type, inode and mtime; a file's size; for a
 * directory, the bytes of the files beneath it, how many entries it holds
 * at any depth, and a digest of each one's place (its directory's inode
 * and its name), inode, type, size and mtime. A name counts as ferry's
 * only while all of that is unchanged (owned_check): something the user
 * put there, or changed since, is never ferry's to remove or replace,
 * whatever its name. A name a peer lists is never enough.
 *
 * The record is untrusted when read back, since DEST may be shared: it is
 * read only from a private .ferry (fsx_open_private_dir), only if it is a
 * regular file of this user that others cannot write, at most
 * OWNED_MAX_BYTES; the decoder bounds every field, wants the names in
 * strictly increasing order (so each once), each one component and not
 * .ferry, and checks a trailing XXH3-128 of all before it. A record that
 * fails any of that counts as empty: nothing is ferry's, so nothing is
 * pruned. It is replaced whole (a temporary file in .ferry, synced, then
 * renamed) under a flock of .ferry held from the read to the write, so two
 * writers do not lose each other's entries.
 *
 * Format, big-endian: "FOWN", version (u8, 1), count (u32); count entries
 * of type (u8), flags (u8), inode, size, count, tree (u64 each), mtime s
 * (u64) ns (u32), order s (u64) ns (u32), name (u16 length, bytes); then
 * the XXH3-128 of everything before it.
 */
#ifndef FERRY_ENGINE_OWNED_H
#define FERRY_ENGINE_OWNED_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/err.h"

#define OWNED_FILE "owned"
#define OWNED_MAGIC "FOWN"
#define OWNED_VERSION 1
/* Entries and bytes of a record: room for a set of kept volumes at its
 * largest (PROTO_MAX_KEEP_VOLUMES) with names of up to 60 bytes, and
 * then some. */
#define OWNED_MAX_ENTRIES 131072u
#define OWNED_MAX_BYTES (16u << 20)
/* How deep the walk that identifies a directory goes (a fd per level). */
#define OWNED_MAX_DEPTH 256

enum owned_type { OWNED_REG = 1, OWNED_DIR = 2, OWNED_LINK = 3 };

/* A staging directory: it fills until it is placed, so its type and inode
 * alone identify it. */
#define OWNED_F_STAGING 1u
#define OWNED_F_KNOWN OWNED_F_STAGING

struct owned_id {
    uint8_t type;          /* enum owned_type */
    uint8_t flags;         /* OWNED_F_* */
    uint64_t ino;
    uint64_t size;         /* a directory's: of the files beneath it */
    uint64_t count;        /* a directory's entries, at any depth */
    uint64_t tree;         /* a directory's digest of them, else 0 */
    int64_t mtime_sec;
    uint32_t mtime_nsec;
};

struct owned_entry {
    char *name;
    struct owned_id id;
    /* The time its source gave it (a watched unit's newest mtime on the
     * box), which orders --keep; 0 when unused. */
    int64_t order_sec;
    uint32_t order_nsec;
};

struct owned {
    struct owned_entry *v; /* read-only: sorted by name (strcmp) */
    size_t n;              /* read-only */
    int damaged;           /* read-only: the record on disk was refused */
    size_t cap;            /* private */
    size_t bytes;          /* private: the encoded size */
    int dirty;             /* private: changed since read */
    int statefd;           /* private: DEST/.ferry, flocked, or -1 */
};

/* What a name is now, for owned_check. */
enum owned_state {
    OWNED_NO = 0,          /* there, but not recorded, or changed since */
    OWNED_YES = 1,         /* recorded, and as it was recorded */
    OWNED_GONE = 2         /* nothing has the name */
};

/* An empty record, of no destination. Cannot fail. */
void owned_init(struct owned *o);
/* Frees the entries and lets go of the lock (without saving). */
void owned_cleanup(struct owned *o);

/*
 * Record bytes (untrusted) into o, which must be empty. Returns 0,
 * FERRY_ERR_TOO_LARGE past OWNED_MAX_BYTES or OWNED_MAX_ENTRIES, SHORT,
 * TRAILING, FORMAT (magic, version, type, flags, nanoseconds, a name that
 * is not one component or is .ferry, names out of order or twice),
 * HASH_MISMATCH, or NOMEM; on failure o is left empty.
 * Exported for the tests; otherwise used only in its file.
 */
int owned_decode(struct owned *o, const uint8_t *p, size_t n) FERRY_WUR;
/* Appends o's record to b (which should allow OWNED_MAX_BYTES).
 * Exported for the tests; otherwise used only in its file. */
int owned_encode(const struct owned *o, struct buf *b) FERRY_WUR;

/* The entry of name, or NULL; valid until o next changes.
 * Exported for the tests; otherwise used only in its file. */
const struct owned_entry *owned_find(const struct owned *o,
    const char *name);
/*
 * Records name (one component, copied) as id, with its order, replacing
 * an entry of that name. FERRY_ERR_BAD_PATH for a name that is not one
 * component or is .ferry, TOO_LARGE when the record would pass its
 * bounds (then o is unchanged: the name stays unrecorded, and so is never
 * pruned), NOMEM.
 */
int owned_put(struct owned *o, const char *name, const struct owned_id *id,
    int64_t order_sec, uint32_t order_nsec) FERRY_WUR;
/* Forgets name (nothing when it is not recorded). */
void owned_drop(struct owned *o, const char *name);

/*
 * What identifies name beneath dirfd now, with flags (OWNED_F_STAGING:
 * type and inode only; else a directory is walked, at most
 * OWNED_MAX_DEPTH deep, never following a symlink). Returns 0, -ENOENT
 * when nothing has the name, FERRY_ERR_TOO_LARGE past the depth, -errno.
 */
int owned_identify(int dirfd, const char *name, uint8_t flags,
    struct owned_id *id) FERRY_WUR;
/* Whether name beneath dirfd is ferry's by o (enum owned_state). A name
 * that cannot be identified (a directory that cannot be read) is
 * OWNED_NO: left alone. */
int owned_check(const struct owned *o, int dirfd, const char *name);

/*
 * Opens the record of the destination directory rootfd into o (empty):
 * its state directory .ferry (made if missing when create; without
 * create and without .ferry, o stays empty and of no destination), locked
 * (flock, waiting) until owned_cleanup, and the record read. A record
 * that is not a regular file of this user, writable only by it, or that
 * does not decode, is taken as empty with o->damaged set. Returns 0,
 * FERRY_ERR_STATE when .ferry is not a private directory of this user,
 * or -errno.
 */
int owned_open(struct owned *o, int rootfd, int create) FERRY_WUR;
/* Writes o as the record of the destination it was opened for: a
 * temporary file in .ferry, synced, renamed over the record, the
 * directory synced (with the marker that has scans skip .ferry). Nothing
 * to do for an empty record of no destination. Returns 0 or -errno. */
int owned_save(struct owned *o) FERRY_WUR;

#endif
