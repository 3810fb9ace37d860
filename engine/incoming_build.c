/*
 * incoming_build.c: what the receiver's data frames of one block share
 * (incoming_int.h): the checks every BLOCK, DELTA and TENSOR frame
 * makes, and the settling of a block built from a basis.
 */
#include "incoming_int.h"

#include "../common/alloc.h"

int
incoming_block_frame(struct incoming *in, uint32_t id, uint64_t offset,
    uint32_t raw_len, int as, struct rfile **fp, uint64_t *index)
{
    struct rfile *f;
    int r;

    *fp = NULL;
    if ((f = incoming_data_file(in, id, &r)) == NULL)
        return r;
    *index = offset / in->block_size;
    if ((as == INCOMING_AS_DELTA && !f->delta) ||
        (as == INCOMING_AS_TENSOR && !f->tensor) ||
        offset % in->block_size != 0 || *index >= f->nblocks ||
        raw_len != incoming_block_len(in, f, *index))
        return FERRY_ERR_PROTOCOL;
    if ((r = incoming_track_blocks(in, f)) != 0)
        return r == FERRY_ERR_TOO_LARGE ? FERRY_ERR_PROTOCOL : r;
    /* With a resume, only what the receiver said is needed or held. */
    if (f->resume && !(f->bits[*index] & B_SIGNED))
        return FERRY_ERR_PROTOCOL;
    if (!(f->bits[*index] & B_RESOLVED))
        *fp = f;  /* else sent again after a stream was lost */
    return 0;
}

uint8_t *
incoming_scratch(struct incoming *in)
{
    if (in->scratch == NULL)
        in->scratch = xmalloc(in->block_size);
    return in->scratch;
}

int
incoming_settle_unbuilt(struct incoming *in, struct rfile *f,
    uint64_t index, uint32_t len, int r, struct buf *out)
{
    struct hash128 h;

    if ((r = incoming_file_error(in, f, r)) != 0)
        return r;
    hash_zero_block(len, &h);  /* settles the block, failed */
    return incoming_settle_block(in, f, index, NULL, len, &h, NULL, out);
}

int
incoming_settle_built(struct incoming *in, struct rfile *f, uint64_t index,
    const uint8_t *buf, uint32_t len, const struct hash128 *h,
    const struct msg_delta *built, struct buf *out)
{
    int zero = hash_is_zero(buf, len);

    if (!zero && buf != in->scratch)
        return incoming_settle_behind(in, f, index, buf, len, h, built, out);
    return incoming_settle_block(in, f, index, zero ? NULL : buf, len, h,
        built, out);
}
