/*
 * ckptfmt.h: the layouts checkpoints are saved in, read from their index.
 *
 * Two users read the same structures: formcheck (is the file whole, or
 * cut short?) and tensor_layout (where are its tensors?). Each format is
 * read here once, in bounded pieces (pread or memory), and handed to the
 * caller as plain records:
 *
 *   zip (torch.save): every member of the central directory, with where
 *       its data starts (from its local header) and its sizes;
 *   safetensors: every tensor of the JSON header (its key, dtype and
 *       data_offsets), and where the data starts;
 *   NumPy .npy: the dtype's kind and item size, the element count, and
 *       where the data starts.
 *
 * Every read is bounded: at most CKPTFMT_MAX_INDEX bytes of index per
 * file, JSON nested at most 8 deep. The file is hostile input: nothing
 * here trusts a length before it is checked against the file's size.
 */
#ifndef FERRY_ENGINE_CKPTFMT_H
#define FERRY_ENGINE_CKPTFMT_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/err.h"

/* Most bytes of index (a zip's central directory, a safetensors or npy
 * header) read for one file; a larger one is CKPTFMT_UNKNOWN. */
#define CKPTFMT_MAX_INDEX (64u << 20)

/* Where the bytes come from: a file (fd, mem NULL) or memory. */
struct ckptfmt_src {
    int fd;
    const uint8_t *mem;
    uint64_t size;
};

/* Reads exactly n bytes at off: 0, FERRY_ERR_SHORT past the end (or a
 * file that shrank), or -errno. */
int ckptfmt_read(const struct ckptfmt_src *s, uint64_t off, void *p,
    size_t n) FERRY_WUR;

/* Little-endian fields, as all three formats write them (inline: the
 * search for a zip's end record reads one at every offset of its tail). */
static inline uint16_t
ckptfmt_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t
ckptfmt_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
        (uint32_t)p[3] << 24;
}

static inline uint64_t
ckptfmt_le64(const uint8_t *p)
{
    return (uint64_t)ckptfmt_le32(p) | (uint64_t)ckptfmt_le32(p + 4) << 32;
}

/* What the parsers say of a file's shape (besides -errno). */
enum ckptfmt_verdict {
    CKPTFMT_WHOLE = 0,     /* the shape of a complete file */
    CKPTFMT_TORN = 1,      /* the format's, cut short or damaged */
    CKPTFMT_UNKNOWN = 2    /* not this format, or not one it can judge */
};

/* Which parser the first 16 bytes point to. */
enum ckptfmt_kind {
    CKPTFMT_NONE = 0,
    CKPTFMT_ZIP,
    CKPTFMT_SAFETENSORS,
    CKPTFMT_NPY
};

/* The head of a file (its first 16 bytes, size >= 16) says which parser
 * applies; the parser then decides. */
enum ckptfmt_kind ckptfmt_sniff(const uint8_t head[16]);

/*
 * zip: walks the central directory from the end record (zip64 too) and
 * calls fn for each member, in directory order, once its local header
 * was read and its data found to lie before the directory. The member's
 * name is borrowed for the call only. fn returns 0 to go on, or a
 * negative code that ends the walk and is returned.
 *
 * Returns CKPTFMT_WHOLE when every member was found, CKPTFMT_TORN with
 * *why set when the end record, the directory, a local header or a
 * member's data is missing or damaged (fn has then seen only the members
 * before it), CKPTFMT_UNKNOWN for a directory over CKPTFMT_MAX_INDEX, or
 * a negative code (a read failed, fn's, NOMEM).
 */
struct ckptfmt_zip_member {
    const uint8_t *name;   /* borrowed: valid during the call */
    size_t name_len;
    uint16_t method;       /* 0: stored */
    uint64_t comp, uncomp; /* sizes, zip64 extra applied */
    uint64_t data;         /* offset of its data in the file */
};

typedef int ckptfmt_zip_fn(void *arg, const struct ckptfmt_zip_member *m);

int ckptfmt_zip(const struct ckptfmt_src *s, ckptfmt_zip_fn *fn, void *arg,
    const char **why) FERRY_WUR;

/*
 * safetensors: an 8-byte header length, a JSON object whose values are
 * objects; those with "data_offsets": [begin, end] are tensors. fn (may
 * be NULL) gets each one in header order: its key and dtype as the raw
 * bytes between their quotes (escapes not undone), borrowed for the
 * call, and its offsets relative to the data start.
 *
 * Returns CKPTFMT_WHOLE when the header parses, names at least one
 * tensor and the file ends exactly at the data start plus the largest
 * end; CKPTFMT_TORN with *why when the header or the data is cut short;
 * CKPTFMT_UNKNOWN otherwise (not JSON, longer than the tensors, a header
 * over CKPTFMT_MAX_INDEX). *data_start gets 8 + the header length.
 */
struct ckptfmt_st_tensor {
    const char *key;       /* borrowed: valid during the call */
    size_t key_len;
    const char *dtype;     /* NULL when the tensor has none */
    size_t dtype_len;
    uint64_t begin, end;   /* relative to the data start */
};

typedef int ckptfmt_st_fn(void *arg, const struct ckptfmt_st_tensor *t);

int ckptfmt_safetensors(const struct ckptfmt_src *s, const uint8_t head[16],
    ckptfmt_st_fn *fn, void *arg, uint64_t *data_start, const char **why)
    FERRY_WUR;

/*
 * npy: "\x93NUMPY", a version, a header length and a Python dict literal
 * with 'descr' and 'shape'. Fills *out from the header and returns
 * CKPTFMT_WHOLE when the file is exactly data + item * count bytes long,
 * CKPTFMT_TORN (*why) when it is shorter, CKPTFMT_UNKNOWN when the header
 * does not give a size (object or structured dtypes) or the file is
 * longer.
 */
struct ckptfmt_npy {
    uint64_t data;         /* where the array starts */
    uint64_t item;         /* bytes per element, from 'descr' */
    uint64_t count;        /* elements, the product of 'shape' */
    char kind;             /* the dtype's letter: 'f', 'i', 'u', 'c', ... */
};

int ckptfmt_npy(const struct ckptfmt_src *s, const uint8_t head[16],
    struct ckptfmt_npy *out, const char **why) FERRY_WUR;

#endif
