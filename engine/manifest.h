/*
 * manifest.h: the list of entries a sender offers, built by scanning
 * source paths.
 *
 * Sources follow rsync's trailing-slash rule: "dir" sends the directory
 * itself (entries "dir", "dir/a", ...), "dir/" sends its contents ("a",
 * ...). Directory children are sorted bytewise and listed depth first, so a
 * directory always comes before what it holds.
 */
#ifndef FERRY_ENGINE_MANIFEST_H
#define FERRY_ENGINE_MANIFEST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../common/arena.h"
#include "../common/err.h"
#include "../common/hash.h"
#include "../common/stable.h"
#include "../proto/limits.h"
#include "filter.h"
#include "waker.h"

/*
 * An entry, compact because a tree may have millions: 28 bytes, plus its
 * name in the manifest's name store. The name is its last component (and
 * a symlink's target after the name's NUL): the path before it is its
 * parent's, an earlier entry (manifest_rel rebuilds the whole path), so
 * a directory's path is kept once, not once per file in it. Where the
 * sender reads it is not stored but rebuilt from the source it was
 * scanned from (manifest_local), and a content hash is kept beside the
 * entries only when a transfer asks for hashes (manifest_want_hashes).
 * Modification times span 2^46 seconds either side of 1970 (a scan gives
 * a notice for a file outside them, a listing an error).
 */
struct mentry {
    uint64_t size;
    uint32_t name;   /* private: the name's place in the name store */
    uint32_t parent; /* private: 1 + the id of the directory entry whose
                        path comes before name, 0 if none */
    int64_t mtime_sec : 47;
    uint64_t mode : 12;   /* permission bits */
    uint64_t kind : 2;    /* enum msg_entry_kind */
    uint64_t flags : 3;   /* private: MENTRY_* */
    uint32_t mtime_nsec;
} __attribute__((packed, aligned(4)));

/* The bounds of mentry.mtime_sec. */
#define MENTRY_MTIME_MAX (((int64_t)1 << 46) - 1)
#define MENTRY_MTIME_MIN (-((int64_t)1 << 46))

/* mentry.flags */
enum { MENTRY_TARGET = 1, MENTRY_HASHED = 2 };

/* Where entries first.. (up to the next source's first) are read: prefix
 * followed by rel minus its first strip bytes; prefix NULL for entries
 * the other side listed, which are read nowhere. */
struct msource {
    size_t first;
    const char *prefix;
    size_t plen, strip;
};

/* A directory among those the entry being appended may be in. */
struct mdir {
    uint32_t id;
    uint32_t len;   /* of its path */
};

/* A problem met while scanning, reported to the other side as a NOTICE. */
struct mnotice {
    int code;        /* 0 for a warning that does not fail the transfer */
    char *path;
    char *text;
};

/* A content hash known already (manifest_set_hash_hint): 0 and *out for
 * the file at rel of that size and mtime; 1 when the file needs none
 * (--adopt: nothing staged it); a negative error when unknown (the file
 * is read for it). */
typedef int manifest_hash_hint_fn(void *ctx, const char *rel, uint64_t size,
    int64_t mtime_sec, uint32_t mtime_nsec, struct hash128 *out);

struct manifest {
    struct stable ents; /* private: struct mentry, see manifest_entry */
    size_t n;           /* read-only: entries (for a live manifest, only on
                           the thread that scans; see manifest_avail) */
    atomic_size_t avail;       /* private: entries published */
    atomic_uint_fast64_t avail_bytes;  /* private: their files' bytes */
    struct stable names;       /* private: the name store (bytes) */
    size_t names_used;         /* private: its bytes handed out */
    size_t names_max;          /* private: at most (4 GiB; a test may
                                  lower it) */
    struct arena prefixes;     /* private: the sources' prefixes */
    struct mdir *dirs;         /* private: the directories the last
                                  entry is in, outermost first */
    size_t ndirs, capdirs;     /* private */
    char *dirpath;             /* private: the innermost one's path */
    struct stable sources;     /* private: struct msource */
    atomic_size_t nsources;    /* private: published */
    struct stable hashes;      /* private: per entry, if wanted */
    int want_hashes;           /* private */
    struct stable notices;     /* private: struct mnotice */
    atomic_size_t nnotices;    /* private: published, manifest_notices */
    atomic_int live;           /* private: see manifest_live_begin */
    atomic_int live_err;       /* private */
    atomic_size_t want;        /* private: see manifest_await */
    struct waker *_Atomic waiter;  /* private: ... */
    uint32_t ntop;     /* read-only: top-level entries */
    int contents;      /* read-only: some source was "dir/" */
    uint64_t files;    /* read-only: regular files */
    uint64_t bytes;    /* read-only: their total size */
    struct filter *filter;  /* private: borrowed, see manifest_set_filter */
    manifest_hash_hint_fn *hint;  /* private: see manifest_set_hash_hint */
    void *hint_ctx;               /* private */
    const atomic_int *stop; /* private: see manifest_set_stop */
    int ignore_files;       /* private */
    unsigned delay_us;      /* private: see manifest_live_begin */
};

/* Entry id (below manifest_avail, or n on the thread that scans). */
static inline struct mentry *
manifest_entry(const struct manifest *m, size_t id)
{
    return (struct mentry *)stable_at(&m->ents, id);
}

/*
 * A live manifest is filled by a scan on one thread while another reads
 * it: entries, their names and notices are published as each is
 * appended, and what was published never moves. The scanning thread
 * calls manifest_live_begin before the first scan (before the reader
 * looks) and manifest_live_end after the last, with the scan's error.
 * A manifest that was never live is complete. For tests, with
 * FERRY_TEST_SCAN_DELAY_US in the environment, each entry a live scan
 * appends after the first hundred waits that many microseconds, so a
 * test can see a transfer start before its scan ends.
 */
void manifest_live_begin(struct manifest *m);
void manifest_live_end(struct manifest *m, int err);
/* Entries published so far (all of them once the scan ended). */
size_t manifest_avail(const struct manifest *m);
/* The bytes of the files among them, for a progress line (it may lag
 * the count a little). */
uint64_t manifest_avail_bytes(const struct manifest *m);
/* 1 while more entries may come; 0 when the scan ended, *err its error. */
int manifest_live(const struct manifest *m, int *err);
/*
 * The reader of a live manifest waits for more than n entries, or for
 * the end of the scan (only, with n MANIFEST_AWAIT_END): w is woken
 * once (waker.h), by the scan as it publishes, or here at once if that
 * came already. Any thread; one reader.
 */
#define MANIFEST_AWAIT_END (SIZE_MAX - 1)
void manifest_await(struct manifest *m, size_t n, struct waker *w);
/* Notices published so far, and notice i of them. */
size_t manifest_notices(const struct manifest *m);
const struct mnotice *manifest_notice_at(const struct manifest *m,
    size_t i);

void manifest_init(struct manifest *m);

/*
 * Leaves out of later scans what filter f excludes (borrowed: it must
 * outlive the scans; NULL for none). With ignore_files, the scan of a
 * source directory first adds the rules of its FILTER_IGNORE_FILE, if
 * there is one, to f, scoped to that source; an ignore file that cannot
 * be read or has a bad line is a notice naming it, and the source is
 * then not sent at all (better than sending what it meant to leave out).
 */
void manifest_set_filter(struct manifest *m, struct filter *f,
    int ignore_files);

/* Later scans end with FERRY_ERR_INTERRUPTED once *stop is set (from
 * another thread); NULL for never. */
void manifest_set_stop(struct manifest *m, const atomic_int *stop);
void manifest_cleanup(struct manifest *m);

/*
 * Scans one source path and appends its entries. A missing or unreadable
 * source, an unreadable directory and files of other types (sockets,
 * devices) become notices; the scan goes on. Fails only on allocation
 * failure or a tree over the limits (FERRY_ERR_TOO_LARGE).
 */
int manifest_scan(struct manifest *m, const char *src) FERRY_WUR;

/* manifest_scan of the contents of directory dir (as "dir/"). */
int manifest_scan_contents(struct manifest *m, const char *dir) FERRY_WUR;

/*
 * A walk of one source, entry by entry, in the order manifest_scan lists
 * them, without keeping them: memory is one directory's names per level
 * being walked. entry gets each entry that can be sent (rel its name, local
 * where to read it, st its lstat, target a symlink's target or NULL) and
 * returns 0 to go on, 1 to leave a directory's contents out, or an error
 * that ends the walk. notice gets what cannot be sent (unreadable, other
 * file types: code 0 for a warning) and returns 0 to go on.
 */
struct manifest_walker {
    int (*entry)(void *ctx, const char *rel, const char *local,
        const struct stat *st, const char *target);
    int (*notice)(void *ctx, int code, const char *path, const char *text);
    void *ctx;
    /* Entries it excludes are left out without a word (NULL: none). */
    const struct filter *filter;
    /* Where the threads that look up the names of a big directory
     * together are kept (par.h): made there at the first such directory,
     * freed by the walker's owner. NULL: the walk's own thread alone. */
    struct par_pool **pool;
};

int manifest_walk(const char *src, const struct manifest_walker *w)
    FERRY_WUR;

/*
 * Applies the trailing-slash rule to a source as written: *local is the
 * path to read (new string), *contents 1 when the source's contents are
 * sent rather than the source itself (so it gives no top-level name).
 */
int manifest_source(const char *src, char **local, int *contents) FERRY_WUR;

/* The top-level name source src gives the destination (the last
 * component of what it reads, "x" for "a/x"): *name a new string, or
 * NULL for a source that sends its contents ("dir/"). */
int manifest_top_name(const char *src, char **name) FERRY_WUR;

/*
 * Two of the sources srcs[0..n) that one transfer would put under the
 * same top-level name ("a/x" and "b/x": x), which would merge two trees
 * or let one file replace the other: returns 1 with one line naming both
 * in msg (of the pairs, the one whose second comes first), 0 when each
 * source has a name of its own, or FERRY_ERR_NOMEM. Sources that send
 * their contents give no name and are not compared.
 */
int manifest_top_clash(const char *const *srcs, size_t n, char *msg,
    size_t msglen) FERRY_WUR;

/* Room for an entry's path with its NUL (manifest_rel). */
#define MANIFEST_REL_MAX (PROTO_MAX_PATH + 1)

/* Writes entry id's wire path ('/'-separated, as the other side sees it)
 * into buf (MANIFEST_REL_MAX bytes) and returns buf. */
const char *manifest_rel(const struct manifest *m, size_t id, char *buf);

/* Entry id's symlink target as scanned, or NULL (a listed entry has
 * none). */
const char *manifest_target(const struct manifest *m, size_t id);

/*
 * Writes where the sender reads entry id into buf (cap bytes). Fails with
 * -ENAMETOOLONG if it does not fit (open would refuse it too) and -ENOENT
 * for an entry the other side listed (it has no local path).
 */
int manifest_local(const struct manifest *m, size_t id, char *buf,
    size_t cap) FERRY_WUR;

/* Room for manifest_local's path on the stack. */
#define MANIFEST_LOCAL_MAX 4096

/* Opens entry id where the sender reads it, with open's flags: an fd,
 * or -errno (manifest_local's errors included). */
int manifest_open(const struct manifest *m, size_t id, int flags);

/*
 * Makes room for a content hash per entry (for --checksum); without it
 * manifest_set_hash keeps nothing. manifest_hash gives entry id's hash,
 * or NULL if none was set.
 */
int manifest_want_hashes(struct manifest *m) FERRY_WUR;
/* Where a file's content hash comes from before it is read for one: a
 * client that hashed the sources already (a swarm's pass) spares each
 * box's transfer a read of them all. NULL fn: none. */
void manifest_set_hash_hint(struct manifest *m, manifest_hash_hint_fn *fn,
    void *ctx);
/* Entry id's hash as the hint knows it: as manifest_hash_hint_fn, and
 * FERRY_ERR_STATE without a hint. */
int manifest_hinted_hash(const struct manifest *m, size_t id,
    struct hash128 *out) FERRY_WUR;
void manifest_set_hash(struct manifest *m, size_t id,
    const struct hash128 *h);
const struct hash128 *manifest_hash(const struct manifest *m, size_t id);

/* Appends an entry as the other side listed it (copies rel; it has no
 * local path and no target). */
int manifest_add_listed(struct manifest *m, const char *rel, uint8_t kind,
    uint32_t mode, uint64_t size, int64_t mtime_sec, uint32_t mtime_nsec)
    FERRY_WUR;

/* Adds a notice (copies path and text). */
int manifest_notice(struct manifest *m, int code, const char *path,
    const char *text) FERRY_WUR;

/* 1 if the manifest is one file or symlink named by its own source, so a
 * destination that is not a directory can be its new name. */
int manifest_single_file(const struct manifest *m);

/* Replaces the wire name of the single top-level entry (a file). */
int manifest_rename_top(struct manifest *m, const char *name) FERRY_WUR;

/* Entries in one transfer: ids are u32 and an id may not be reused. */
#define MANIFEST_MAX_ENTRIES 100000000u

#endif
