/*
 * hash.h: content hashing (the only user of xxHash).
 *
 * Files are hashed as a tree of one level: each block of block_size bytes
 * (the last one shorter) gets an XXH3-128 hash, and the file hash is the
 * XXH3-128 of the file size, the block size and the block hashes in order.
 * This lets a receiver that resumes a file, or a stream that carries only
 * some blocks, finish the file hash from the block hashes it already has
 * without reading the data again.
 */
#ifndef FERRY_COMMON_HASH_H
#define FERRY_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define HASH_LEN 16
/* Largest block hash_zero_block accepts. */
#define HASH_MAX_ZERO_BLOCK (4u << 20)

struct hash128 {
    uint8_t b[HASH_LEN];  /* canonical big-endian form, as on the wire */
};

/* XXH3-128 of one block. */
void hash_block(const void *p, size_t n, struct hash128 *out);
/* Bytes the calling thread has passed to hash_block so far: a work
 * counter for the bounds on what a peer can make us hash.
 * For the tests: nothing else calls it. */
uint64_t hash_counted(void);
/* Hash of n zero bytes, n <= HASH_MAX_ZERO_BLOCK (the last four lengths
 * are cached, so zeros of one length are hashed once). */
void hash_zero_block(size_t n, struct hash128 *out);
/* XXH3-64 of a string, e.g. to name a partial file after its path. */
uint64_t hash_name64(const void *p, size_t n);
/* 1 if the n bytes at p are all zero. */
int hash_is_zero(const void *p, size_t n);
int hash_equal(const struct hash128 *a, const struct hash128 *b);
/* 1 if the n bytes at a and b are equal, in time that does not depend on
 * where they differ (for secrets such as a transfer id). */
int hash_ct_equal(const void *a, const void *b, size_t n);
/* Writes 32 lowercase hex digits and a NUL into out[33]. */
void hash_hex(const struct hash128 *h, char out[2 * HASH_LEN + 1]);

/* Accumulates the file hash from block hashes. */
struct hash_file;

/* Returns NULL on allocation failure. */
struct hash_file *hash_file_new(uint64_t size, uint32_t block_size);
void hash_file_free(struct hash_file *hf);
/* Adds the hash of the next block, in order. */
void hash_file_add(struct hash_file *hf, const struct hash128 *block);
/*
 * Adds the hash of block index in any order (blocks that come from several
 * connections, or a resume): each is folded in as soon as the blocks before
 * it are, and waits until then, at most max_pending of them. Returns 0,
 * FERRY_ERR_EXISTS for a block already given, FERRY_ERR_USAGE for one past
 * the end, TOO_LARGE when max_pending would be passed, or NOMEM; then
 * nothing changed.
 */
int hash_file_put(struct hash_file *hf, uint64_t index,
    const struct hash128 *block, size_t max_pending) FERRY_WUR;
/* Blocks added that wait for the ones before them. */
size_t hash_file_pending(const struct hash_file *hf);
/* The file hash; only meaningful once complete. */
void hash_file_final(struct hash_file *hf, struct hash128 *out);

/*
 * Hashes size bytes of the open file fd from offset 0 as the tree above.
 * Fails with -errno on read errors and FERRY_ERR_CHANGED if the file is
 * shorter than size.
 */
int hash_fd(int fd, uint64_t size, uint32_t block_size,
    struct hash128 *out) FERRY_WUR;
/* The same hash of size bytes held in memory at p. Fails only with
 * FERRY_ERR_NOMEM (or USAGE for block_size 0). */
int hash_mem(const void *p, uint64_t size, uint32_t block_size,
    struct hash128 *out) FERRY_WUR;

#endif
