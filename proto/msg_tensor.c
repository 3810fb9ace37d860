/*
 * msg_tensor.c: BASIS and TENSOR, the messages of tensor-aware deltas
 * (docs/DESIGN.md, "Tensor checkpoints").
 */
#include "msg.h"

#include <string.h>

#include "../common/fsx.h"
#include "../common/rd.h"
#include "frame.h"
#include "msg_int.h"

/* BASIS: u32 id, u64 basis_size, hash, str16 path. A bad path is
 * BAD_PATH, as in ENTRY. */
static int
msg_basis_check(const void *v)
{
    const struct msg_basis *m = v;

    if (m->basis_size == 0 || m->basis_size > (uint64_t)INT64_MAX)
        return FERRY_ERR_FORMAT;
    return fsx_path_check(m->path.p, m->path.len);
}

MSG_CODEC(basis, MSG_BASIS, msg_basis_check, 1,
    MSG_U32(basis, id), MSG_U64(basis, basis_size),
    MSG_BYTES(basis, hash, HASH_LEN), MSG_STR(basis, path, PROTO_MAX_PATH))

/* TENSOR: u32 id, u64 offset, u32 raw_len, hash, str32 body. */

static int
msg_tensor_valid(const struct msg_tensor *m)
{
    return m->raw_len >= 2 && m->raw_len <= PROTO_MAX_BLOCK &&
        m->offset <= (uint64_t)INT64_MAX - m->raw_len &&
        m->body_len >= 1 && m->body_len < m->raw_len;
}

int
msg_tensor_encode(struct buf *b, const struct msg_tensor *m)
{
    size_t mark;
    int r;

    if (!msg_tensor_valid(m))
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_TENSOR, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->id);
    if (r == 0)
        r = buf_put_u64(b, m->offset);
    if (r == 0)
        r = buf_put_u32(b, m->raw_len);
    if (r == 0)
        r = msg_put_hash(b, &m->hash);
    if (r == 0)
        r = buf_put_str32(b, m->body, m->body_len);
    return msg_finish(b, mark, r);
}

int
msg_tensor_decode(const uint8_t *p, size_t n, struct msg_tensor *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->id)) != 0 ||
        (e = rd_u64(&r, &m->offset)) != 0 ||
        (e = rd_u32(&r, &m->raw_len)) != 0 ||
        (e = msg_get_hash(&r, &m->hash)) != 0)
        goto fail;
    if (m->raw_len > PROTO_MAX_BLOCK) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    /* The body is bounded by the block before it is read. */
    if ((e = rd_str32(&r, m->raw_len > 0 ? m->raw_len - 1 : 0, &m->body,
        &m->body_len)) != 0 || (e = rd_end(&r)) != 0)
        goto fail;
    if (!msg_tensor_valid(m)) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}
