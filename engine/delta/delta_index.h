/*
 * delta_index.h: a sender's view of the receiver's basis for one file:
 * the signatures of its pieces (DELTA_SIGS), and a table to find a piece
 * by its weak checksum.
 *
 * The signatures are the peer's, so the table is built to do bounded
 * work however they collide: it holds at most DELTA_INDEX_MAX_PER_WEAK
 * pieces of distinct strong hashes for one weak checksum (a piece equal
 * to one held is left out, a further one is dropped), it is sorted in
 * linear time, and a lookup is a binary search within a bucket. An
 * honest basis loses nothing: equal pieces (zeros) are one entry, and
 * more than a few distinct pieces of one weak sum do not happen by
 * chance; a piece left out is still found where the last match points.
 *
 * Memory: 24 bytes per piece (its strong hash, and its weak sum with its
 * number, which become the table), and once the basis is described 4
 * bytes per bucket (one or two a piece) and a filter of 32 to 64 bits a
 * piece: at most 40 bytes a piece, 8 more while the table is sorted.
 * With the piece size rule (delta_index_sig_block) and 1 MiB blocks a
 * 1 TiB basis has 2^20 pieces of 1 MiB: 20 MiB of signatures on the
 * wire, at most 40 MiB here. Block hashes (DELTA_BLOCKS) add 16 bytes
 * per block, at most one per piece.
 */
#ifndef FERRY_ENGINE_DELTA_INDEX_H
#define FERRY_ENGINE_DELTA_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/hash.h"
#include "../../proto/msg.h"

struct delta_index;

/* Pieces of distinct strong hashes the table holds for one weak sum. */
#define DELTA_INDEX_MAX_PER_WEAK 8u

/* Work done to find pieces, counted for the bounds above (and their
 * tests): bytes hashed, those of them that found nothing (a weak sum
 * that matched and a strong hash that did not), strong hashes compared,
 * table entries looked at, and offsets the weak sum was rolled over
 * (delta_match.h). */
struct delta_work {
    uint64_t hashed, missed, compared, probed, rolled;
};

/*
 * The piece size for a basis of size bytes in a transfer of block_size
 * blocks: the power of two at or above sqrt(size), at least
 * PROTO_MIN_SIG_BLOCK and at most block_size (a piece never spans two
 * blocks of the result). sqrt keeps both the signatures (size / piece)
 * and the literal data around each change (a piece) near sqrt(size).
 */
uint32_t delta_index_sig_block(uint64_t size, uint32_t block_size);

/*
 * The probe (plan.h, the give-up rule): a file's first blocks, an eighth
 * of them, at least one and at most DELTA_PROBE_TRIES, glanced at in the
 * first DELTA_PROBE_SPAN times as many blocks of the basis while the
 * rest is described. Both sides count it: the sender to know when its
 * probe may start, the receiver to sign no further before the sender
 * asks for the rest (DELTA_GO).
 */
#define DELTA_PROBE_TRIES 4
#define DELTA_PROBE_SPAN 2
/* The probe's blocks of a file of nblocks blocks. */
uint64_t delta_probe_blocks(uint64_t nblocks);
/* The pieces (of sig_block bytes) of a basis of basis_size bytes that the
 * probe of a file of size bytes is searched in: all of them for a short
 * basis. */
uint64_t delta_probe_pieces(uint64_t size, uint32_t block_size,
    uint64_t basis_size, uint32_t sig_block);

/*
 * Places (a directory and an extension) where probes found nothing in a
 * row. After DELTA_PLACE_MISSES there, the sender gives up at once on
 * the bases of that place's other files, and the receiver guesses no
 * neighbour there (--basis auto): new dataset shards share nothing with
 * the shards beside them. A probe that finds something starts the count
 * again, and makes the place warm. DELTA_PLACES places at most, the
 * oldest forgotten.
 */
#define DELTA_PLACE_MISSES 2u
#define DELTA_PLACES 16u
struct delta_places {
    struct {
        uint64_t place;
        unsigned misses;
        int warm;            /* the last probe there found something */
    } slot[DELTA_PLACES];
    unsigned next;
};
/* The place of a path relative to the root. */
uint64_t delta_place(const char *path);
/* 1 once the probes at place found nothing DELTA_PLACE_MISSES times in a
 * row. */
int delta_place_cold(const struct delta_places *dp, uint64_t place);
/* 1 if the last probe at place found something. */
int delta_place_warm(const struct delta_places *dp, uint64_t place);
/* A probe at place found something (found), or nothing. */
void delta_place_probed(struct delta_places *dp, uint64_t place, int found);

/* The signature of the len bytes at p, as DELTA_SIGS carries it: the weak
 * rolling sum (big-endian) and XXH3-128, DELTA_SIG_LEN bytes at q. */
void delta_sign(const uint8_t *p, size_t len, uint8_t *q);
/* The same of len zero bytes (len <= PROTO_MAX_BLOCK), without hashing
 * them again for a length asked for lately (hash_zero_block). */
void delta_sign_zero(size_t len, uint8_t *q);

/* An empty index for a basis of basis_size bytes cut in sig_block
 * pieces (checked by the decoder of DELTA_SIGS). */
struct delta_index *delta_index_new(uint64_t basis_size, uint32_t sig_block);
void delta_index_free(struct delta_index *ix);

uint32_t delta_index_piece(const struct delta_index *ix);
uint64_t delta_index_npieces(const struct delta_index *ix);

/*
 * Adds the signatures of one DELTA_SIGS frame. They must continue where
 * the last frame stopped, for the same basis_size and sig_block:
 * FERRY_ERR_PROTOCOL otherwise. When the last piece has come, the table
 * is built (NOMEM possible) and delta_index_complete turns 1.
 */
int delta_index_add(struct delta_index *ix, const struct msg_delta_sigs *m)
    FERRY_WUR;
int delta_index_complete(const struct delta_index *ix);
/*
 * A complete index of what ix has described so far (its first pieces,
 * the same offsets), to search before the rest comes; NULL when ix is
 * complete already, has nothing, or on NOMEM. Costs what building a
 * table of those pieces costs, and their memory again.
 */
struct delta_index *delta_index_prefix(const struct delta_index *ix);
/* Bytes of the basis whose pieces were described so far. */
uint64_t delta_index_described(const struct delta_index *ix);
/* What building the table did, once complete: strong hashes compared,
 * and pieces dropped for a weak sum that had DELTA_INDEX_MAX_PER_WEAK
 * already. For the tests: nothing else calls it. */
void delta_index_built(const struct delta_index *ix, uint64_t *compared,
    uint64_t *dropped);

/*
 * Adds the basis's block hashes of one DELTA_BLOCKS frame, for a
 * transfer of block_size blocks: after the file's first DELTA_SIGS, in
 * order, within the basis, with the transfer's block size and blocks no
 * smaller than the pieces (so at most one hash per piece is held);
 * FERRY_ERR_PROTOCOL otherwise.
 */
int delta_index_add_blocks(struct delta_index *ix,
    const struct msg_delta_blocks *m, uint32_t block_size) FERRY_WUR;
/*
 * 1 if the block at index (len bytes at index * block_size, hash h) is
 * the basis's block at the same place: the receiver gave that block's
 * hash, the block has the same length there, and its pieces were
 * described (so the receiver takes a COPY of them).
 */
int delta_index_same_block(const struct delta_index *ix, uint64_t index,
    uint64_t len, const struct hash128 *h);
/* 1 if the receiver gave the hash of the basis's block index. */
int delta_index_has_block(const struct delta_index *ix, uint64_t index);

/* Length of piece j (the last one may be short). */
uint32_t delta_index_piece_len(const struct delta_index *ix, uint64_t j);

/* 1 if p[0..len) is piece j (len must be its length, and the piece
 * described already); what it hashed is added to *w. */
int delta_index_same(const struct delta_index *ix, uint64_t j,
    const uint8_t *p, size_t len, struct delta_work *w);

/*
 * A full piece whose weak checksum is weak and whose bytes are
 * p[0..sig_block): 1 and *j, else 0. The filter makes a miss cost one
 * bit test; a hit is confirmed with the strong hash. Adds what it did to
 * *w: at most log2 of the pieces plus DELTA_INDEX_MAX_PER_WEAK entries
 * looked at, DELTA_INDEX_MAX_PER_WEAK hashes compared and one piece
 * hashed.
 */
int delta_index_find(const struct delta_index *ix, uint32_t weak,
    const uint8_t *p, uint64_t *j, struct delta_work *w);

/* Private: here so that the search loop (delta_match.c) reads the filter
 * inline. */
struct delta_index {
    uint64_t basis_size;
    uint32_t sig_block;
    uint64_t npieces, nfull;   /* nfull: pieces of sig_block bytes */
    uint64_t received;         /* pieces described so far */
    struct hash128 *strong;
    /* Mixed weak sum << 32 | piece, for each piece in order; once built
     * (bucket not NULL), the table: the first ntable of them, sorted,
     * the entries of bucket b (the top bucket_bits of the mixed sum)
     * at [bucket[b], bucket[b + 1]). */
    uint64_t *table;
    uint32_t *bucket;
    uint64_t ntable;
    uint64_t *filter;          /* a bit per filter slot */
    unsigned bucket_bits, filter_bits;
    uint64_t build_compared, dropped;
    struct hash128 *blocks;    /* DELTA_BLOCKS, blocks_received of them */
    uint64_t blocks_received;
    uint32_t block_size;
};

static inline uint32_t
delta_index_mix(uint32_t weak)
{
    return weak * 0x9e3779b1u;
}

#endif
