/*
 * tensor_piece.h: one piece of a tensor, as its difference from an older
 * version, its bytes grouped by element position, compressed.
 *
 * Training changes almost every weight a little between two saves, so no
 * block of a checkpoint is found again in the older one; but the sign and
 * exponent of most elements stay, and their low mantissa bits are what
 * changes. A piece therefore keeps element k of the new bytes as
 *
 *   PLAIN:  the element itself (no reference),
 *   XOR:    the element XOR the reference's element k,
 *   SUB:    the element minus the reference's element k, both read as
 *           little-endian unsigned integers of the width, mod 2^(8 width),
 *
 * and writes those values as planes: all their first bytes, then all
 * their second bytes, and so on (byte grouping, as ZipNN and Hugging
 * Face's Xet do), each plane compressed with zstd on its own or stored
 * when zstd does not make it smaller. The bytes of a partial element at
 * either end (a piece cut from a tensor at any byte) are stored as they
 * are.
 *
 * Format (integers big-endian, as on the wire):
 *
 *   u8  mode      0 PLAIN, 1 XOR, 2 SUB
 *   u8  width     1, 2, 4 or 8: bytes per element
 *   u8  lead      bytes before the first whole element (< width, <= raw)
 *   u32 raw       bytes the piece rebuilds (<= PROTO_MAX_TENSOR_PIECE)
 *   u64 ref_off   XOR and SUB only: where the reference's raw bytes start
 *   width x plane, for byte position 0 (the least significant) upward:
 *       u8  kind  0 stored, 1 zstd
 *       u32 len   stored: exactly the element count; zstd: less than it
 *       len bytes
 *   lead bytes, then tail bytes ((raw - lead) % width), as they are
 *
 * with element count = (raw - lead) / width. A sequence of pieces (what
 * one block of a file becomes) is each piece as u32 length and bytes.
 *
 * The decoder takes pieces as hostile input: every length is bounded and
 * must add up (stored planes exactly the element count, a zstd plane
 * inflating to exactly it, nothing after the tail, a sequence's raw
 * lengths exactly the length asked for), and the reference is read only
 * through the caller's reader, which bounds where it may be read. Any
 * other piece is refused with an error and nothing written past dst.
 * All of it is pure (no I/O), so it is fuzzed (tests/fuzz/fuzz_tensor.c).
 */
#ifndef FERRY_PROTO_TENSOR_PIECE_H
#define FERRY_PROTO_TENSOR_PIECE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/err.h"
#include "limits.h"

enum tensor_mode {
    TENSOR_PLAIN = 0,
    TENSOR_XOR = 1,
    TENSOR_SUB = 2
};

#define TENSOR_PLANE_STORED 0
#define TENSOR_PLANE_ZSTD 1

/* Fixed fields of a piece, with ref_off, and of each plane. */
#define TENSOR_PIECE_HEAD 15u
#define TENSOR_PLANE_HEAD 5u
/* The most bytes a piece of raw bytes takes: its fields, each plane
 * stored, and at most 2 x 7 edge bytes. */
#define TENSOR_PIECE_BOUND(raw) \
    ((raw) + TENSOR_PIECE_HEAD + 8u * TENSOR_PLANE_HEAD + 14u)

/* A piece's header, as tensor_piece_peek reads it. */
struct tensor_piece_info {
    uint8_t mode, width, lead;
    uint32_t raw;
    uint64_t ref_off;      /* 0 for PLAIN */
};

/*
 * Reads n bytes of the reference at off into dst. Returns 0, or an
 * error that the decoder returns as it is: the caller's reader refuses
 * what lies past its reference (FERRY_ERR_PROTOCOL) and passes on a
 * failed read (-errno).
 */
typedef int tensor_piece_ref_fn(void *arg, uint64_t off, uint8_t *dst,
    size_t n);

/* Work space of one thread: a zstd context and two buffers that grow to
 * the largest piece seen, at most PROTO_MAX_TENSOR_PIECE each. NULL when
 * memory runs out. */
struct tensor_piece;

struct tensor_piece *tensor_piece_new(void);
void tensor_piece_free(struct tensor_piece *t);

/*
 * Encodes the n bytes at p (n <= PROTO_MAX_TENSOR_PIECE) as one piece
 * appended to out: info->mode and width as given, lead clamped to n,
 * raw = n; for XOR and SUB, ref holds the reference's n bytes (those
 * at info->ref_off in the reference the decoder will read). Planes are
 * compressed at zstd's level (1 is ZST_LEVEL). Returns 0, FERRY_ERR_USAGE
 * for a mode, width or size out of range, or out's TOO_LARGE or NOMEM.
 * The piece takes at most TENSOR_PIECE_BOUND(n) bytes.
 */
int tensor_piece_encode(struct tensor_piece *t,
    const struct tensor_piece_info *info, int level, const uint8_t *p,
    size_t n, const uint8_t *ref, struct buf *out) FERRY_WUR;

/*
 * Reads the fixed fields of the piece (p, n) into *info and checks them
 * (mode, width, lead < width and <= raw, raw within its limit). Returns
 * 0, FERRY_ERR_SHORT, FERRY_ERR_TOO_LARGE or FERRY_ERR_FORMAT; on
 * failure *info is zeroed.
 * Exported for the tests; otherwise used only in its file.
 */
int tensor_piece_peek(const uint8_t *p, size_t n,
    struct tensor_piece_info *info) FERRY_WUR;

/*
 * Rebuilds the piece (p, n) into dst, which must be exactly its raw
 * length (else FERRY_ERR_FORMAT), reading the reference through ref
 * (may be NULL for a PLAIN piece; a piece that needs it then fails with
 * FERRY_ERR_PROTOCOL). Returns 0, the errors of tensor_piece_peek,
 * FERRY_ERR_FORMAT for planes that do not add up or do not inflate to
 * their length, FERRY_ERR_TRAILING for bytes after the tail, ref's
 * error, or FERRY_ERR_NOMEM. On failure dst holds no promise.
 * Exported for the tests; otherwise used only in its file.
 */
int tensor_piece_decode(struct tensor_piece *t, const uint8_t *p, size_t n,
    tensor_piece_ref_fn *ref, void *arg, uint8_t *dst, size_t dst_len)
    FERRY_WUR;

/*
 * A sequence: each piece as u32 length then its bytes, at most
 * PROTO_MAX_TENSOR_PIECES of them. tensor_piece_put appends one piece's
 * length field before calling tensor_piece_encode (so use it to build a
 * sequence); tensor_piece_decode_seq rebuilds the whole sequence into
 * dst, whose length the pieces' raw lengths must add up to exactly.
 */
int tensor_piece_put(struct tensor_piece *t,
    const struct tensor_piece_info *info, int level, const uint8_t *p,
    size_t n, const uint8_t *ref, struct buf *out) FERRY_WUR;
int tensor_piece_decode_seq(struct tensor_piece *t, const uint8_t *p,
    size_t n, tensor_piece_ref_fn *ref, void *arg, uint8_t *dst,
    size_t dst_len) FERRY_WUR;

#endif
