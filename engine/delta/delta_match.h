/*
 * delta_match.h: the sender's search for the receiver's basis pieces in
 * one block of the file being sent.
 *
 * A block is described by ops: COPY (bytes of the basis) and LITERAL
 * (bytes of the file). The search first tries the piece where the last
 * match says it should be (at the same offset when nothing moved: the
 * checkpoint rewritten in place costs one XXH3 of each piece), and only
 * where that fails rolls a weak checksum over every offset (data that
 * moved: inserts and deletes), as rsync does everywhere.
 *
 * The expected pieces can be checked while the basis is still being
 * described; a block that needs more waits for the whole basis.
 *
 * Work is bounded by the block, whatever the signatures: each lookup
 * by the index's bounds (delta_index.h), at most one expected piece
 * hashed per piece of the block, and pieces hashed for nothing (a weak
 * sum that matched, a strong hash that did not) up to
 * DELTA_MATCH_MISS_FACTOR times the block's length: past that the rest
 * of the block goes as literal data. By chance such misses cost about
 * size / 2^32 bytes a byte searched against a basis of size bytes (a
 * 32-bit weak sum), so an honest basis stays far below the bound up to
 * some 2^32 * DELTA_MATCH_MISS_FACTOR / 4 bytes (32 GiB), and past that
 * only blocks whose data moved may lose some of it; signatures made to
 * collide (the weak sum of zeros with another strong hash, met at every
 * offset of a run of zeros) meet it at once.
 *
 * Blocks are searched one at a time, in any order and on any stream; a
 * carry lets the next block of a run continue a match that runs over the
 * block's end. Without it, the block's first bytes are looked for in a
 * piece that starts before the block (a piece's length of look-behind).
 */
#ifndef FERRY_ENGINE_DELTA_MATCH_H
#define FERRY_ENGINE_DELTA_MATCH_H

#include <stdint.h>

#include "../../proto/msg.h"
#include "delta_index.h"

/* Where a stream's last block left the search. */
struct delta_carry {
    int valid;
    uint32_t id;
    uint64_t next;     /* the block it continues into */
    int aligned;       /* shift is known */
    int64_t shift;     /* basis offset minus file offset of the last match */
    uint64_t until;    /* the last match covers the file up to here */
};

/* Bytes hashed for nothing a block may cost, per byte of the block. */
#define DELTA_MATCH_MISS_FACTOR 32u

struct delta_result {
    struct msg_delta_op ops[PROTO_MAX_DELTA_OPS];
    size_t nops;
    uint64_t copied;   /* bytes described by COPY */
    int overflow;      /* more ops than a DELTA holds: send a BLOCK */
    /* The block is not all where expected, and searching the rest needs
     * the table of a basis not yet described in full: nothing was
     * decided (the caller tries the block again later). */
    int incomplete;
    /* The search stopped at DELTA_MATCH_MISS_FACTOR; and its work. */
    int gave_up;
    struct delta_work work;
};

/*
 * Describes the file's bytes [a, e) (block `index` of file `id`, whose
 * size is size) with ops against ix, which must be complete. buf holds
 * the file's bytes [buf_off, buf_off + buf_len), at least
 * [a - piece + 1, e + piece - 1) clipped to [0, size) (from a when c
 * continues this block: delta_match_window). LITERAL ops point into buf.
 */
void delta_match_block(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint32_t id, uint64_t index,
    uint64_t a, uint64_t e, struct delta_carry *c, struct delta_result *res);

/*
 * The same with only the pieces where the last match (or the same
 * offset) points, as described so far: no search, never incomplete;
 * the rest of the block from the first miss is literal. For a file
 * whose search gave up (plan.h): what did not change, at its place.
 */
void delta_match_in_place(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint32_t id, uint64_t index,
    uint64_t a, uint64_t e, struct delta_carry *c, struct delta_result *res);

/*
 * 1 if a glance finds any of the file's bytes [a, e) in ix (complete):
 * a piece of the block at its own place, or a piece that starts within
 * the block's first piece of offsets (data that moved, by any amount,
 * is met there unless those bytes are new too). Costs one XXH3 of the
 * block and a piece's length rolled, where a search rolls over every
 * offset: for the blocks of a file that found nothing yet (plan.h).
 * buf as for delta_match_block; what it did is added to *work.
 */
int delta_match_glance(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint64_t a, uint64_t e,
    struct delta_work *work);

/*
 * Describes [a, e) as one COPY of the basis's bytes at the same place,
 * for a block known to be the basis's there (delta_index_same_block),
 * and carries on from it as delta_match_block would.
 */
void delta_match_same_block(uint32_t id, uint64_t index, uint64_t a,
    uint64_t e, struct delta_carry *c, struct delta_result *res);

/* The bytes delta_match_block needs in buf: [*lo, *hi). */
void delta_match_window(const struct delta_index *ix, uint64_t size,
    uint32_t id, uint64_t index, uint64_t a, uint64_t e,
    const struct delta_carry *c, uint64_t *lo, uint64_t *hi);

#endif
