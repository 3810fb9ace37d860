/*
 * volread.h: reads volumes back into a destination tree, from untrusted
 * bytes (see volume.h for the format).
 *
 * The caller pushes each volume's compressed bytes in chunks of any size
 * (volr_begin, volr_put..., volr_end), so the same reader serves a local
 * unpack and, later, volumes that arrive over a connection. Members are
 * extracted beneath the destination's root fd only:
 *
 *  - names are relative, without "..", checked with fsx_path_check after
 *    a leading "./" and a trailing '/' are dropped; an absolute name,
 *    "..", ".ferry" or the reader's own staging directory at the top is
 *    refused;
 *  - every directory on the way is opened without following symlinks
 *    (fsx_open_dir), so a member behind a symlink (one from the archive or
 *    one that was there) is refused, and nothing is written outside;
 *  - hard links, device files and FIFOs are refused (they could point
 *    outside, or are not data); setuid and setgid bits are dropped;
 *  - files are written under DEST/.ferry-unpack.<pid>.<n>/ (0700) and
 *    committed in batches (512 files or 256 MiB, and at the end of each
 *    volume) by the writer transfers commit through (dest_write.h): a
 *    file under its final name is complete and durable. Small files are
 *    written and batches committed by the writer's thread, behind the
 *    reader: volr_stats's committed says how far it got (the writer tells
 *    each member as it is committed), volr_poll whether it failed. Symlinks are
 *    renamed into place at once, so the members after them see them.
 *    Directories get their mode and mtime once the reader has left them
 *    (members come depth first) and their files are committed.
 *
 * With a manifest (opts.manifest), every member is checked against the
 * next record the caller's next_record hook gives (type, path, size,
 * volume, piece), every file's XXH3 against its record, and the end record
 * against what was read. Without one, what can be checked is: zstd's
 * frame checksums, the tar headers' checksums, pieces that follow each
 * other and add up to their file.
 *
 * Any failure stops the reader: nothing more is extracted, what was
 * committed stays, and volr_free removes the staging directory.
 * volr_error says what happened and to which kind of problem it belongs.
 *
 * Memory: one zstd context (its window at most 2^ZST_DEC_WINDOW_LOG), two
 * blocks for file data, a batch of at most 512 names and one entry per
 * directory level; nothing grows with the number of files.
 */
#ifndef FERRY_ENGINE_VOLREAD_H
#define FERRY_ENGINE_VOLREAD_H

#include <stdint.h>

#include "../../common/err.h"
#include "../../proto/tar.h"
#include "../../proto/vmanifest.h"

struct waker;

enum volr_kind {
    VOLR_OK = 0,
    VOLR_INVALID,     /* not a valid or safe archive: refused */
    VOLR_INTEGRITY,   /* damaged: zstd, a hash, or the manifest disagrees */
    VOLR_DEST         /* the destination cannot be written */
};

struct volr_opts {
    int manifest;         /* check members against next_record */
    uint32_t block_size;  /* of the manifest's hashes; 0: the default */
    struct waker *wake;   /* woken by each commit behind; may be NULL */
};

struct volr_hooks {
    /* The manifest's next record (after the head): 0, or an error (a
     * damaged manifest; FERRY_ERR_SHORT when it has no more lines).
     * store: VMAN_MAX_PATH + 1 bytes for its strings. */
    int (*next_record)(void *ctx, struct vman_rec *r, char *store);
    /* An entry was extracted (a file once it is complete); may be NULL. */
    void (*entry)(void *ctx, const char *path, enum tar_type type,
        uint64_t size);
    void *ctx;
};

struct volr;

/* Reads into the directory rootfd (borrowed; it must stay open). Makes
 * the staging directory. */
int volr_new(int rootfd, const struct volr_opts *o,
    const struct volr_hooks *h, struct volr **out) FERRY_WUR;
/* The same, staging in stagefd (borrowed; see volstage_init_in). */
int volr_new_in(int rootfd, int stagefd, const struct volr_opts *o,
    const struct volr_hooks *h, struct volr **out) FERRY_WUR;
/* Closes what is open and removes the staging directory with what it
 * holds. */
void volr_free(struct volr *v);

/* Volume index (from 1) begins; its compressed bytes follow. */
int volr_begin(struct volr *v, uint32_t index) FERRY_WUR;
int volr_put(struct volr *v, const void *p, size_t n) FERRY_WUR;
/* The volume's bytes are all there: it must end where its zstd frame and
 * its tar archive end. Commits what it completed (behind: see
 * volr_stats, volr_poll). */
int volr_end(struct volr *v) FERRY_WUR;
/* 0, or the failure of what was written or committed behind the reader
 * (then as any other failure: volr_error says what). */
int volr_poll(struct volr *v) FERRY_WUR;
/* 1 while a commit behind the reader is not told (dest_writer_pending):
 * it wakes the volr_opts' waker when done. */
int volr_pending(struct volr *v);
/* After the last volume: no split file may be left open; with a manifest,
 * its end record must match. Sets the directories' modes and mtimes, and
 * returns once everything is committed. */
int volr_finish(struct volr *v) FERRY_WUR;
/* A transfer ending midway: returns once the commits behind the reader
 * are done, so that volr_stats counts every file put under its name. With
 * read_whole, the files read whole and checked so far (not the one being
 * read) are committed first: a cut connection keeps them. */
int volr_stop(struct volr *v, int read_whole) FERRY_WUR;

/* What the first failure was: its kind (VOLR_OK if none) and a message
 * naming the volume and member. */
enum volr_kind volr_error(const struct volr *v, const char **text);

/* Counts so far. */
struct volr_stats {
    uint32_t volumes;
    uint64_t members;
    uint64_t files;        /* regular files read, split ones once */
    uint64_t committed;    /* of them, in place (in the order read) */
    uint64_t bytes;        /* their data */
};
void volr_stats(struct volr *v, struct volr_stats *st);

#endif
