/*
 * volwrite.h: writes a stream of entries as volumes (see volume.h).
 *
 * The caller adds entries one at a time (directories before what they
 * hold, as a scan gives them); the writer makes the tar members, compresses
 * them into the current volume and starts a new volume when the next
 * member might not fit. Compressed bytes and manifest records go to the
 * caller's sink as they are made: nothing is kept per entry, and memory is
 * the zstd context, one block of file data and one header.
 *
 * The size rule: a volume never passes volume_size compressed bytes. The
 * writer cannot know how well the next member will compress, so it counts
 * it at zstd's worst case (zst_enc_bound) until that would pass the limit,
 * then flushes zstd to learn the exact size so far and counts again. A
 * member that fits an empty volume is never split: it goes whole into the
 * next volume when the current one is too full. A file larger than that is
 * cut into pieces: the first fills what the current volume has left (at
 * least a sixteenth of a volume, else a new volume begins), the next ones
 * fill whole volumes. So volumes of data that compresses well end well
 * below volume_size.
 *
 *     struct volw_sink s = { my_open, my_write, my_close, my_record, ctx };
 *     struct volw_opts o = { .name = "data", .volume_size = 2 << 30 };
 *     if ((r = volw_new(&o, &s, &w)) != 0) ...
 *     for each entry: r = volw_add(w, &e, fd);   // fd: files only
 *     r = volw_finish(w);
 *     volw_free(w);
 */
#ifndef FERRY_ENGINE_VOLWRITE_H
#define FERRY_ENGINE_VOLWRITE_H

#include <stdint.h>

#include "../../common/err.h"
#include "../../proto/tar.h"
#include "../../proto/vmanifest.h"

struct zst_enc;

/* A finished volume. */
struct volw_volume {
    uint32_t index;      /* from 1 */
    uint64_t bytes;      /* compressed: the volume's size */
    uint64_t raw;        /* its tar stream */
    uint64_t members;    /* tar members (pieces count) */
};

/* Where volumes and records go. Each callback returns 0 or an error that
 * stops the writer (and comes back from the call that made it). */
struct volw_sink {
    /* A volume begins: the writes that follow are its bytes. */
    int (*open)(void *ctx, uint32_t index);
    int (*write)(void *ctx, const void *p, size_t n);
    /* The volume is complete. */
    int (*close)(void *ctx, const struct volw_volume *v);
    /* A manifest record, in order: the head first, then one per member
     * (a split file's pieces, then the file), then the end. Borrowed for
     * the call. */
    int (*record)(void *ctx, const struct vman_rec *r);
    void *ctx;
};

struct volw_opts {
    const char *name;        /* for the manifest's head */
    uint64_t volume_size;    /* VOLUME_MIN_SIZE to VOLUME_MAX_SIZE */
    uint32_t block_size;     /* hash blocks; 0 for PROTO_DEFAULT_BLOCK */
    int level;               /* zstd level; 0 for ZST_LEVEL */
    uint32_t max_volumes;    /* 0 for VOLUME_MAX_COUNT, the most */
    /* A zstd encoder to use (reset first) instead of one of its own,
     * borrowed until volw_free: a caller that makes set after set keeps
     * the encoder's memory warm (fresh pages are dear), or NULL. */
    struct zst_enc *enc;
};

/* An entry to add. */
struct volw_entry {
    enum tar_type type;      /* TAR_FILE, TAR_DIR or TAR_SYMLINK */
    const char *path;        /* relative, passes fsx_path_check */
    const char *target;      /* symlink target */
    uint64_t size;           /* file size */
    uint32_t mode;           /* permission bits; setuid/setgid dropped */
    int64_t mtime_sec;
    uint32_t mtime_nsec;
};

/* Totals, for the summary. */
struct volw_totals {
    uint32_t volumes;
    uint64_t entries;        /* manifest lines between head and end */
    uint64_t files;
    uint64_t bytes;          /* of the files */
    uint64_t compressed;     /* of the volumes */
    uint64_t pieces;
};

struct volw;

/* Checks the options (FERRY_ERR_USAGE) and emits the head record. */
int volw_new(const struct volw_opts *o, const struct volw_sink *s,
    struct volw **out) FERRY_WUR;
void volw_free(struct volw *w);

/*
 * Adds one entry. A file's e->size bytes are read from fd, from where it
 * stands, sequentially. Returns 0; FERRY_ERR_BAD_PATH or USAGE for an
 * entry that cannot be written (nothing was, the writer goes on);
 * FERRY_ERR_CHANGED when the file ends before e->size bytes (it shrank
 * while read); a read error (-errno); a sink's error; or
 * FERRY_ERR_TOO_LARGE past max_volumes volumes. After any error
 * but the first two the volume being written is broken and the writer
 * refuses further calls.
 */
int volw_add(struct volw *w, const struct volw_entry *e, int fd) FERRY_WUR;

/*
 * volw_add for a file whose size bytes are already in memory at data
 * (borrowed for the call): a transfer reads each small file whole first,
 * so that one that changes while it is read is refused before anything
 * of it enters a volume. Same results as volw_add, without read errors,
 * but the file is hashed first and its record goes to the sink before
 * any of its bytes (a transfer announces each member ahead of the data
 * that holds it, and so can frame the bytes as they come); a file too
 * big for an empty volume is refused (USAGE), never split.
 */
int volw_add_mem(struct volw *w, const struct volw_entry *e,
    const void *data) FERRY_WUR;

/* Ends the last volume (an empty set still makes one, an empty archive)
 * and emits the end record. */
int volw_finish(struct volw *w) FERRY_WUR;

/* Totals so far. */
void volw_totals(const struct volw *w, struct volw_totals *t);

/* The zstd level of the frames begun after this call (0: ZST_LEVEL): the
 * next volume's, or the next frame's after volw_end_frame. */
void volw_set_level(struct volw *w, int level);

/* Ends the zstd frame of the volume being written here, between members,
 * so that what follows may use another level: a volume of several frames
 * is still one .zst to every reader (frames concatenate). Nothing is done
 * when the frame is empty. Returns 0 or a sink's error. */
int volw_end_frame(struct volw *w) FERRY_WUR;

/* Ends the volume being written, if any, before it is full: the next
 * entry begins a new one. Returns 0 or a sink's error (then the writer
 * is broken, as for volw_add). */
int volw_cut(struct volw *w) FERRY_WUR;

#endif
