/*
 * tar.h: POSIX tar (ustar and pax) headers, written and read. No I/O.
 *
 * The writer makes what POSIX.1-2001 calls the pax interchange format: a
 * ustar header per member, preceded by a pax extended header ('x') only
 * when a field does not fit ustar (a long or non-ASCII-safe name, a size
 * of 8 GiB or more, an mtime with nanoseconds) or the member is a piece
 * of a split file. GNU tar and bsdtar read it as is.
 *
 * The reader is a push parser over untrusted bytes: feed it the
 * uncompressed stream in chunks of any size and it hands back one event
 * at a time (a member's header, a run of its data, the end of the
 * archive). It reads ustar, pax ('x'; 'g' is checked and ignored) and GNU
 * tar's long names ('L', 'K') and base-256 numbers, which is what GNU
 * tar, bsdtar and Python's tarfile write by default. Every length is
 * bounded before use (TAR_MAX_EXT for an extended header, TAR_MAX_NAME
 * for a name); a header whose checksum fails, a member type it does not
 * know (GNU sparse, multi-volume), a pax record that does not parse or a
 * stream that ends inside a member is an error with a reason
 * (tar_rd_why). It never allocates beyond TAR_MAX_EXT and never copies
 * member data: data events borrow the caller's bytes.
 *
 * Policy is the caller's: the parser reports names, hard links and
 * device files as they are; engine/volume/volread.c decides what to refuse.
 *
 * Split files: a piece of a file that spans volumes is a regular member
 * of its own (named by volume_piece_name) whose pax header carries a
 * record
 *
 *     comment=ferry-piece 1 INDEX OFFSET FILE_SIZE PATH
 *
 * INDEX counting from 1, OFFSET where the piece starts in the file, PATH
 * the file's path. POSIX has every reader ignore `comment`, so stock
 * tools extract pieces as plain files without a word, and no other
 * keyword is both silent in GNU tar and free to use.
 */
#ifndef FERRY_PROTO_TAR_H
#define FERRY_PROTO_TAR_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/err.h"

#define TAR_BLOCK 512u
/* Largest pax extended header or GNU long name we read. Real ones hold a
 * path or two (at most a few KiB); anything bigger is hostile. */
#define TAR_MAX_EXT (64u << 10)
/* Longest name or link target a member may have (the path limit of
 * fsx.h, with room for a leading "./" and a trailing '/'). */
#define TAR_MAX_NAME 4200u
/* Largest member: keeps offset arithmetic far from overflow. */
#define TAR_MAX_SIZE (UINT64_C(1) << 60)
/* The comment that marks a piece, and its version. */
#define TAR_PIECE_TAG "ferry-piece 1 "

enum tar_type {
    TAR_FILE = 1,
    TAR_DIR,
    TAR_SYMLINK,
    TAR_HARDLINK,
    TAR_CHAR,
    TAR_BLOCKDEV,
    TAR_FIFO
};

/* Which file a piece belongs to. */
struct tar_piece {
    uint32_t index;       /* from 1 */
    uint64_t offset;      /* where the piece starts in the file */
    uint64_t file_size;   /* the whole file */
    const char *path;     /* the file's path, NUL-terminated */
    size_t path_len;
};

struct tar_entry {
    enum tar_type type;
    const char *path;     /* NUL-terminated, as in the archive */
    size_t path_len;
    const char *link;     /* symlink or hard link target; "" otherwise */
    size_t link_len;
    uint64_t size;        /* data bytes (0 for all but files) */
    uint32_t mode;        /* permission bits (07777) */
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    int is_piece;
    struct tar_piece piece;
};

/*
 * Writing. tar_header_put appends the headers of e (a pax header first
 * when needed) to b; the caller then writes e->size data bytes and
 * tar_pad(e->size) zero bytes. Paths must be non-empty and free of NUL
 * (else FERRY_ERR_USAGE); a directory's name gets its trailing '/' here.
 * Fails with b's TOO_LARGE or NOMEM, and then b is as it was.
 */
int tar_header_put(struct buf *b, const struct tar_entry *e) FERRY_WUR;
/* Zero bytes after n data bytes, up to the next block. */
size_t tar_pad(uint64_t n);
/* Bytes that end an archive: two zero blocks. */
#define TAR_END_SIZE (2u * TAR_BLOCK)
/* For the tests: nothing else calls it. */
int tar_end_put(struct buf *b) FERRY_WUR;

/*
 * Reading.
 */
enum tar_ev {
    TAR_EV_NEED = 0,  /* every byte given was consumed: feed more */
    TAR_EV_ENTRY,     /* a member: ev.e (valid until the next call) */
    TAR_EV_DATA,      /* ev.data, ev.len: the next bytes of its data */
    TAR_EV_END        /* the end-of-archive blocks; bytes after it are
                         consumed and ignored */
};

struct tar_event {
    enum tar_ev ev;
    struct tar_entry e;       /* TAR_EV_ENTRY */
    uint64_t data_offset;     /* TAR_EV_ENTRY: where its data starts in
                                 the stream; TAR_EV_DATA: where ev.data
                                 is */
    const uint8_t *data;      /* TAR_EV_DATA: borrowed from the input */
    size_t len;
};

struct tar_rd {
    /* private */
    int state;
    uint8_t hdr[TAR_BLOCK];
    size_t hdr_len;
    struct buf ext;           /* an extended header being read */
    uint8_t ext_type;
    uint64_t ext_left;
    uint64_t left;            /* data left in the member */
    uint64_t pad;             /* padding after it */
    uint64_t off;             /* bytes consumed */
    int zero_blocks;
    int has_ext;              /* pending values from 'x', 'L', 'K' */
    char *path, *link, *piece_path;   /* TAR_MAX_NAME + 1 each */
    int has_path, has_link, has_size, has_mtime, has_piece;
    uint64_t size;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    struct tar_piece piece;
    const char *why;
};

/* Returns 0 or FERRY_ERR_NOMEM. */
int tar_rd_init(struct tar_rd *t) FERRY_WUR;
void tar_rd_cleanup(struct tar_rd *t);

/*
 * Consumes bytes from (p, n) up to the next event; *used says how many
 * (the caller passes the rest, and more, on the next call). Returns 0
 * with ev filled in, or an error (FERRY_ERR_FORMAT, TOO_LARGE,
 * UNSUPPORTED) after which the reader is stuck: tar_rd_why says what was
 * wrong.
 */
int tar_rd_next(struct tar_rd *t, const uint8_t *p, size_t n, size_t *used,
    struct tar_event *ev) FERRY_WUR;

/* At the end of the input: 0 if the archive ended (two zero blocks, or
 * one at the very end, as GNU tar accepts), FERRY_ERR_SHORT if it stops
 * inside a member or before any end. */
int tar_rd_finish(struct tar_rd *t) FERRY_WUR;

/* Why the last call failed (static text), or NULL. */
const char *tar_rd_why(const struct tar_rd *t);

/* Bytes consumed so far. */
uint64_t tar_rd_offset(const struct tar_rd *t);

#endif
