/*
 * keptsig.h: the delta signatures of files this receiver wrote, kept so
 * that a later delta against one of them (its next version, or a new file
 * with it as --basis) sends them without reading the file again.
 *
 * A receiver hashes every block it writes; while it does, it also makes
 * the signatures (weak rolling sum and XXH3-128 per piece, the piece size
 * of incoming_delta) of files of at least INCOMING_DELTA_AUTO_MIN. Once
 * the file is committed they go into a store directory (the user's cache:
 * nothing is added to the destination), one file per (device, inode):
 *
 *     header  "FERRYSG2", size, mtime s/ns, ctime s/ns, dev, ino, piece,
 *             count, block size (little-endian, KEPTSIG_HEADER bytes)
 *     body    count x DELTA_SIG_LEN, as in DELTA_SIGS, then the XXH3-128
 *             of each block (as in DELTA_BLOCKS)
 *     trailer XXH3-128 of header and body
 *
 * They are used only while the file is exactly as written: size, mtime,
 * ctime, device and inode all as recorded (a write, a touch, a chmod, a
 * rename or a copy changes one of them), at the piece and block sizes a
 * delta would use now, with an intact trailer; otherwise the basis is read as before.
 * Nothing here is trusted beyond that: a block built from the basis is
 * still checked against the sender's hash, and a file whose blocks come
 * out wrong loses its kept signatures (keptsig_forget).
 *
 * The store keeps at most KEPTSIG_MAX_FILES files and KEPTSIG_MAX_BYTES
 * bytes; the least recently written go first.
 */
#ifndef FERRY_ENGINE_KEPTSIG_H
#define FERRY_ENGINE_KEPTSIG_H

#include <stdint.h>
#include <sys/stat.h>

#include "../../common/err.h"
#include "../../common/hash.h"

#define KEPTSIG_HEADER 76u
#define KEPTSIG_MAX_FILES 4096u
#define KEPTSIG_MAX_BYTES (UINT64_C(512) << 20)

struct keptsig_store;

/*
 * Opens (making it, 0700) the store directory dir, which must be private
 * to this user (fsx_open_private_dir), and trims it to its bounds.
 * Exported for the tests; otherwise used only in its file.
 */
int keptsig_store_open(const char *dir, struct keptsig_store **out)
    FERRY_WUR;
/* The user's store: $XDG_CACHE_HOME/ferry/sig, or ~/.cache/ferry/sig;
 * NULL (and no error) where there is none to be had. */
struct keptsig_store *keptsig_store_default(void);
void keptsig_store_close(struct keptsig_store *s);

/* The signatures of one file being written. */
struct keptsig;

/* For a file of size bytes in pieces of piece bytes (a power of two) and
 * blocks of block_size; NULL when memory runs out. */
struct keptsig *keptsig_new(uint64_t size, uint32_t piece,
    uint32_t block_size);
void keptsig_free(struct keptsig *k);
/* Bytes it holds (for a receiver's budget). */
uint64_t keptsig_bytes(uint64_t size, uint32_t piece, uint32_t block_size);

/* Signs len bytes at off (a multiple of the piece size; data NULL for
 * zeros), as they are written. Zeros are not hashed: their signature is
 * one of their length (delta_sign_zero). */
void keptsig_put(struct keptsig *k, uint64_t off, const uint8_t *data,
    uint64_t len);
/* Sets piece j's signature to sig (DELTA_SIG_LEN bytes), known without
 * reading: the piece was copied whole from a piece with that signature. */
void keptsig_put_sig(struct keptsig *k, uint64_t j, const uint8_t *sig);
/* Sets the hash of block index, as the receiver made it. */
void keptsig_put_block(struct keptsig *k, uint64_t index,
    const struct hash128 *h);
uint32_t keptsig_piece(const struct keptsig *k);

/* Stores k for the file open at fd, as it now is (written whole,
 * committed). Errors are the store's: the file itself is fine. */
int keptsig_save(struct keptsig_store *s, struct keptsig *k, int fd)
    FERRY_WUR;

/*
 * The kept signatures of the basis whose fstat is st, in pieces of piece
 * bytes and blocks of block_size: *sigs (count x DELTA_SIG_LEN, then the
 * hash of each block; to free with xfree) and *count.
 * -ENOENT when there are none that fit the file as it is (stale ones are
 * removed), FERRY_ERR_NOMEM.
 */
int keptsig_load(struct keptsig_store *s, const struct stat *st,
    uint32_t piece, uint32_t block_size, uint8_t **sigs, uint64_t *count)
    FERRY_WUR;

/* Removes the kept signatures of the file with that stat, if any. */
void keptsig_forget(struct keptsig_store *s, const struct stat *st);

#endif
