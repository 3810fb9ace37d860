/*
 * tensor_layout.h: where a checkpoint's tensors lie, from its bytes.
 *
 * Two saves of one training run hold the same tensors, each changed a
 * little; the tensor codec (engine/tensor/tensor_codec.h) sends each tensor as
 * its difference from the same tensor of the older save, its bytes
 * grouped by element. For that it needs, for a file, the list of tensor
 * ranges: name, offset, length and element width. The formats are
 * recognized by content, never by name, and read through
 * engine/tensor/ckptfmt.c (the parser formcheck uses), in bounded reads:
 *
 *   safetensors: each header key with data_offsets is a tensor; its
 *       width comes from its dtype (BF16 2, F32 4, ...; a dtype not known
 *       here gets 1, bytes as they are);
 *   torch.save (a zip): each stored member named PREFIX/data/N is one
 *       storage; its name is the member's name (PREFIX/data/N, stable
 *       between saves of one model). The element width of a storage is
 *       in the pickle, which would take a pickle interpreter to read
 *       and is hostile input, so it is TENSOR_WIDTH_UNKNOWN: the codec
 *       tries 2 and 4 and keeps the smaller;
 *   NumPy .npy: the one array, named "npy", its width the item size (half
 *       of it for complex numbers).
 *
 * Anything that cannot be parsed with certainty has no tensors
 * (TENSOR_FORM_NONE) and is sent as any file: a header that does not
 * parse, a file not exactly as long as its index says, tensors that
 * overlap, two tensors of one name, more than TENSOR_LAYOUT_MAX tensors
 * or a name longer than TENSOR_NAME_MAX. Empty tensors are left out. The
 * bytes between tensors (headers, pickles, zip records, padding) are the
 * gaps: every byte of the file is in exactly one tensor or one gap.
 */
#ifndef FERRY_ENGINE_TENSOR_LAYOUT_H
#define FERRY_ENGINE_TENSOR_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/arena.h"
#include "../../common/err.h"

/* Most tensors taken from one file; more and the file has none. */
#define TENSOR_LAYOUT_MAX (1u << 20)
/* Longest tensor name; a longer one and the file has none. */
#define TENSOR_NAME_MAX 4096u
/* A storage whose element width the file does not say. */
#define TENSOR_WIDTH_UNKNOWN 0u

enum tensor_form {
    TENSOR_FORM_NONE = 0,
    TENSOR_FORM_SAFETENSORS,
    TENSOR_FORM_TORCH,
    TENSOR_FORM_NPY
};

struct tensor_range {
    const char *name;      /* NUL-terminated, owned by the layout */
    size_t name_len;
    uint64_t off, len;     /* len > 0; off + len <= the file's size */
    unsigned width;        /* 1, 2, 4, 8 or TENSOR_WIDTH_UNKNOWN */
};

struct tensor_layout {
    enum tensor_form form; /* read-only */
    uint64_t size;         /* read-only: the file's size */
    struct tensor_range *v; /* read-only: by offset, disjoint */
    size_t n;              /* read-only */
    struct arena names;    /* private */
};

/*
 * Fills *l with the tensors of the open regular file fd of size bytes,
 * or of the n bytes at p. Returns 0 (l->form NONE and no tensors when
 * none are known for certain), FERRY_ERR_NOMEM or -errno when a read
 * fails; a file that shrank while read has no tensors. Free with
 * tensor_layout_cleanup in every case.
 */
int tensor_layout_fd(int fd, uint64_t size, struct tensor_layout *l)
    FERRY_WUR;
/* For the tests: nothing else calls it. */
int tensor_layout_mem(const uint8_t *p, size_t n, struct tensor_layout *l)
    FERRY_WUR;
void tensor_layout_cleanup(struct tensor_layout *l);

/* "safetensors", "torch", "npy" or "none".
 * For the tests: nothing else calls it. */
const char *tensor_layout_form_name(enum tensor_form f);

/*
 * The span of the file that starts at off (< l->size): inside tensor
 * *idx up to its end, or (*idx == SIZE_MAX) a gap up to the next
 * tensor's start or the file's end. *end gets where the span ends. So a
 * range of the file is cut into tensor pieces and gaps by calling this
 * from its start until its end.
 */
void tensor_layout_span(const struct tensor_layout *l, uint64_t off,
    size_t *idx, uint64_t *end);

/*
 * For each tensor i of l, (*match)[i] is the index of the tensor of ref
 * with the same name and length, or SIZE_MAX when ref has none (added,
 * renamed or reshaped into another size). *match has l->n entries
 * (NULL when l->n is 0); the caller frees it with xfree. Returns 0 or
 * FERRY_ERR_NOMEM. Costs O((l->n + ref->n) log ref->n).
 */
int tensor_layout_pair(const struct tensor_layout *l,
    const struct tensor_layout *ref, size_t **match) FERRY_WUR;

#endif
