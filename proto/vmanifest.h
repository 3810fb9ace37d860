/*
 * vmanifest.h: the manifest of a set of volumes (NAME.manifest), one JSON
 * object per line, written as the volumes are made and read back in step
 * with them. No I/O.
 *
 *     {"type":"head","format":"ferry-volumes","version":1,"name":"data",
 *      "volume_size":2147483648,"block_size":1048576}
 *     {"type":"dir","path":"data","volume":1,"offset":1536}
 *     {"type":"file","path":"data/a.bin","size":5,"xxh3":"<32 hex>",
 *      "volume":1,"offset":3584}
 *     {"type":"symlink","path":"data/l","volume":1,"offset":4608}
 *     {"type":"piece","path":"data/big","index":1,"file_offset":0,
 *      "size":2144337920,"volume":1,"offset":6656}
 *     {"type":"piece","path":"data/big","index":2,...,"volume":2,...}
 *     {"type":"file","path":"data/big","size":3000000000,"xxh3":"...",
 *      "pieces":2}
 *     {"type":"end","volumes":2,"entries":5,"files":2,"bytes":3000000005}
 *
 * One line per tar member in the order of the volumes (a split file's
 * pieces, then the file itself), so a reader needs one line at a time.
 * offset is where the member's data starts in the volume's uncompressed
 * tar stream. xxh3 is the file hash of common/hash.h with block_size
 * (the same hash a transfer computes). A path that is not valid UTF-8, or
 * whose escapes would take more room than hex, is written as "path_hex"
 * (its bytes in hex) so that every name survives in a line.
 * Readers ignore keys they do not know.
 */
#ifndef FERRY_PROTO_VMANIFEST_H
#define FERRY_PROTO_VMANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/err.h"
#include "../common/hash.h"

#define VMAN_FORMAT "ferry-volumes"
#define VMAN_VERSION 1
/* Longest line read (a path of 4095 bytes as hex fits with room). */
#define VMAN_MAX_LINE (16u << 10)
/* Longest path or name (fsx.h's limit). */
#define VMAN_MAX_PATH 4095u

enum vman_type {
    VMAN_HEAD = 1,
    VMAN_DIR,
    VMAN_FILE,
    VMAN_SYMLINK,
    VMAN_PIECE,
    VMAN_END
};

struct vman_rec {
    enum vman_type type;
    const char *path;       /* entries: the path; head: the name */
    size_t path_len;
    uint32_t volume;        /* entries (0 for a split file); end: volumes */
    uint64_t offset;        /* data offset in the volume's tar stream */
    uint64_t size;          /* file: its size; piece: the piece's; end:
                               bytes of all files */
    uint32_t index;         /* piece: from 1 */
    uint64_t file_offset;   /* piece: where it starts in the file */
    uint32_t pieces;        /* file: 0 if whole, else its pieces */
    struct hash128 hash;    /* file */
    uint64_t volume_size;   /* head */
    uint32_t block_size;    /* head */
    uint64_t entries;       /* end: lines between head and end */
    uint64_t files;         /* end */
};

/* Appends r as one line, '\n' included. */
int vman_encode(struct buf *b, const struct vman_rec *r) FERRY_WUR;

/*
 * Decodes one line (without its '\n') into r. Strings are decoded into
 * store (VMAN_MAX_PATH + 1 bytes; r->path points there, NUL-terminated).
 * Checks the JSON and each record's fields: a known type, the keys it
 * needs, numbers in range, a path of 1..VMAN_MAX_PATH bytes without NUL.
 * Returns 0, FERRY_ERR_FORMAT or FERRY_ERR_TOO_LARGE; on failure r is
 * zeroed.
 */
int vman_decode(const char *line, size_t n, struct vman_rec *r,
    char *store) FERRY_WUR;

#endif
