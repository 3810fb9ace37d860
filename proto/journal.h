/*
 * journal.h: the on-disk format of a receiver's resume journal.
 *
 * Each partial file DEST/.ferry/part/<key>.part has a journal <key>.jnl:
 *
 *     header: "FJN2", u32 block_size, u64 size, i64 mtime_sec,
 *             u32 mtime_nsec, u32 mode, str16 path, u64 check
 *     record: u64 block index, 16 bytes block hash, u64 check   (repeated)
 *
 * `check` is XXH3-64 of the bytes before it in the header or record, so a
 * record torn by a crash is recognised and ignored with everything after
 * it. Records are appended only after the data they describe is durable
 * (fdatasync of the part file), so a journal never claims data that is not
 * on disk. Blocks arrive in any order and from any connection, so records
 * come in any order; a later record for the same block replaces an
 * earlier one. The header names the source version (size, mtime) the data
 * came from; a different version means starting the file again.
 *
 * Format 1 ("FJN1", ferry 0.1) trusted only a leading run of blocks; its
 * journals are recognised (FERRY_ERR_VERSION) so that the user can be told
 * why those partials are sent again.
 *
 * No I/O here: encoders append to a buf, decoders read bytes.
 */
#ifndef FERRY_PROTO_JOURNAL_H
#define FERRY_PROTO_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/hash.h"

#define JOURNAL_MAGIC "FJN2"
#define JOURNAL_MAGIC_V1 "FJN1"
#define JOURNAL_RECORD_LEN (8 + HASH_LEN + 8)
/* Header bytes without the path. */
#define JOURNAL_HEADER_FIXED (4 + 4 + 8 + 8 + 4 + 4 + 2 + 8)

struct journal_header {
    uint32_t block_size;
    uint64_t size;
    int64_t mtime_sec;
    uint32_t mtime_nsec;
    uint32_t mode;
    const char *path;  /* decode: borrowed, not NUL-terminated */
    size_t path_len;
};

struct journal_record {
    uint64_t index;
    struct hash128 hash;
};

int journal_header_encode(struct buf *b, const struct journal_header *h)
    FERRY_WUR;
int journal_record_encode(struct buf *b, const struct journal_record *r)
    FERRY_WUR;

/*
 * Decodes the header at the start of (p, n); *used is its length. Fails
 * with SHORT, FORMAT (bad magic or check, fields out of range), TOO_LARGE
 * (path) or VERSION (a journal of format 1).
 */
int journal_header_decode(const uint8_t *p, size_t n,
    struct journal_header *h, size_t *used) FERRY_WUR;

/* Decodes one record from exactly JOURNAL_RECORD_LEN bytes; FORMAT if its
 * check does not match (a torn write). */
int journal_record_decode(const uint8_t *p, size_t n,
    struct journal_record *r) FERRY_WUR;

#endif
