/*
 * tensor_codec.h: a block of a checkpoint as pieces of its tensors, each
 * the difference from the same tensor of an older version.
 *
 * A file is sent in blocks (at most PROTO_MAX_BLOCK, at multiples of the
 * block size) whatever its content; a block of a file whose tensor
 * layout is known (engine/tensor/tensor_layout.h) is cut at its tensors' edges
 * into spans, and each span becomes one piece (proto/tensor_piece.h):
 *
 *   a gap (header, pickle, zip records): PLAIN of width 1, that is the
 *       bytes compressed with zstd, or stored;
 *   part of a tensor that has a reference (the older version's tensor of
 *       the same name and length): XOR or SUB against the reference's
 *       bytes at the same place within the tensor, in planes of the
 *       tensor's width;
 *   part of a tensor without one: PLAIN in planes of its width.
 *
 * A piece cut from the middle of a tensor keeps the element grid (its
 * lead), so blocks are coded alone, in any order, on any thread, and a
 * tensor of many GiB costs a block's memory at a time. The mode (XOR or
 * SUB) and, for storages of unknown width, the width (2 or 4) are chosen
 * per piece by coding a sample of its start each way and keeping the
 * smallest (TENSOR_CODEC_AUTO); a piece smaller than twice the sample is
 * coded whole each way.
 *
 * The receiver rebuilds a block with tensor_piece_decode_seq, reading its
 * basis through tensor_codec_read_file; the block's hash, then the
 * whole file's, say whether the result is the sender's.
 */
#ifndef FERRY_ENGINE_TENSOR_CODEC_H
#define FERRY_ENGINE_TENSOR_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/buf.h"
#include "../../proto/tensor_piece.h"
#include "tensor_layout.h"

/* Bytes of a piece's start coded each way to choose its mode and width. */
#define TENSOR_CODEC_SAMPLE (64u << 10)
/* Pick the mode per piece (the default); else TENSOR_XOR or TENSOR_SUB
 * for every piece with a reference. */
#define TENSOR_CODEC_AUTO (-1)

struct tensor_codec_opts {
    int level;             /* zstd's level for every plane */
    int mode;              /* TENSOR_CODEC_AUTO, TENSOR_XOR or TENSOR_SUB */
    unsigned width;        /* 0: the layout's; else every tensor's */
};

/* The older version a block is coded against. */
struct tensor_codec_ref {
    const struct tensor_layout *layout;
    const size_t *match;   /* tensor_layout_pair(new, layout) */
    tensor_piece_ref_fn *read;  /* reads the older version's bytes */
    void *arg;
};

/* What the codec did, summed over the blocks it coded. */
struct tensor_codec_stats {
    uint64_t pieces[3];    /* by mode: PLAIN, XOR, SUB */
    uint64_t raw[3];       /* bytes in, by mode */
    uint64_t coded[3];     /* bytes out, by mode */
    uint64_t wide[9];      /* pieces by the width they were coded at */
};

/* Work space of one thread (a tensor_piece, a block of the reference and
 * the samples' output). NULL when memory runs out. */
struct tensor_codec;

struct tensor_codec *tensor_codec_new(void);
void tensor_codec_free(struct tensor_codec *c);

/*
 * Codes the n bytes at p, which are the file's bytes [off, off + n)
 * (n <= PROTO_MAX_TENSOR_PIECE, off + n <= l->size), as a sequence of
 * pieces appended to out; ref may be NULL (no older version: planes
 * alone). A block that would need more than PROTO_MAX_TENSOR_PIECES
 * pieces ends with one PLAIN piece of its rest. st (may be NULL) is
 * added to. Returns 0, FERRY_ERR_USAGE for arguments out of range, ref's
 * read error, or out's TOO_LARGE or NOMEM. The sequence takes at most
 * TENSOR_CODEC_BOUND(n) bytes.
 */
#define TENSOR_CODEC_BOUND(n) \
    ((uint64_t)PROTO_MAX_TENSOR_PIECES * (4u + TENSOR_PIECE_BOUND(0u)) + (n))

int tensor_codec_block(struct tensor_codec *c,
    const struct tensor_codec_opts *o, const struct tensor_layout *l,
    const struct tensor_codec_ref *ref, uint64_t off, const uint8_t *p,
    size_t n, struct buf *out, struct tensor_codec_stats *st) FERRY_WUR;

/*
 * A tensor_piece_ref_fn over an open file: arg is a struct
 * tensor_codec_file. Reads past size are FERRY_ERR_PROTOCOL (a piece
 * that names bytes the basis does not have), a file that ends sooner
 * than size FERRY_ERR_CHANGED, a failed read -errno.
 */
struct tensor_codec_file {
    int fd;
    uint64_t size;
};

int tensor_codec_read_file(void *arg, uint64_t off, uint8_t *dst, size_t n)
    FERRY_WUR;

#endif
