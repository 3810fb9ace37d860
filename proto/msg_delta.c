#include "msg.h"

#include <string.h>

#include "../common/rd.h"
#include "frame.h"
#include "msg_int.h"

uint64_t
msg_delta_nsigs(uint64_t basis_size, uint32_t sig_block)
{
    return basis_size / sig_block + (basis_size % sig_block != 0);
}

static int
msg_sig_block_valid(uint32_t sb)
{
    return sb >= PROTO_MIN_SIG_BLOCK && sb <= PROTO_MAX_BLOCK &&
        (sb & (sb - 1)) == 0;
}

/* DELTA_SIGS: u32 id, u64 basis_size, u32 sig_block, u64 first, u32 count,
 * count x (u32 weak, hash). */

/* The count bounds what follows: TOO_LARGE past its limit. */
static int
msg_delta_sigs_check(const void *v)
{
    const struct msg_delta_sigs *m = v;
    uint64_t nsigs;

    if (m->count > PROTO_MAX_SIGS)
        return FERRY_ERR_TOO_LARGE;
    if (m->basis_size == 0 || m->basis_size > (uint64_t)INT64_MAX ||
        !msg_sig_block_valid(m->sig_block) || m->count == 0)
        return FERRY_ERR_FORMAT;
    nsigs = msg_delta_nsigs(m->basis_size, m->sig_block);
    return m->first < nsigs && m->count <= nsigs - m->first ? 0 :
        FERRY_ERR_FORMAT;
}

MSG_CODEC(delta_sigs, MSG_DELTA_SIGS, msg_delta_sigs_check, 1,
    MSG_U32(delta_sigs, id), MSG_U64(delta_sigs, basis_size),
    MSG_U32(delta_sigs, sig_block), MSG_U64(delta_sigs, first),
    MSG_U32(delta_sigs, count),
    MSG_ARRAY(delta_sigs, sigs, count, DELTA_SIG_LEN))

/* DELTA_BLOCKS: u32 id, u32 block_size, u64 first, u32 count, count x
 * hash. */

static int
msg_delta_blocks_check(const void *v)
{
    const struct msg_delta_blocks *m = v;

    if (m->count > PROTO_MAX_SIGS)
        return FERRY_ERR_TOO_LARGE;
    return m->block_size >= PROTO_MIN_BLOCK &&
        m->block_size <= PROTO_MAX_BLOCK && m->count > 0 &&
        m->first <= (uint64_t)INT64_MAX / PROTO_MIN_BLOCK ? 0 :
        FERRY_ERR_FORMAT;
}

MSG_CODEC(delta_blocks, MSG_DELTA_BLOCKS, msg_delta_blocks_check, 1,
    MSG_U32(delta_blocks, id), MSG_U32(delta_blocks, block_size),
    MSG_U64(delta_blocks, first), MSG_U32(delta_blocks, count),
    MSG_ARRAY(delta_blocks, hashes, count, HASH_LEN))

/* DELTA: u32 id, u64 offset, u32 raw_len, hash, u16 nops, then each op:
 * u8 kind, u32 len, and u64 from (COPY) or len bytes (LITERAL). */

static int
msg_delta_op_valid(const struct msg_delta_op *op)
{
    if (op->len == 0 || op->len > PROTO_MAX_BLOCK)
        return 0;
    if (op->kind == DELTA_OP_COPY)
        return op->from <= (uint64_t)INT64_MAX - op->len;
    return op->kind == DELTA_OP_LITERAL;
}

int
msg_delta_encode(struct buf *b, const struct msg_delta *m,
    const struct msg_delta_op *ops, size_t nops)
{
    uint64_t sum = 0;
    size_t mark, i;
    int r;

    if (nops == 0 || nops > PROTO_MAX_DELTA_OPS || m->raw_len == 0 ||
        m->raw_len > PROTO_MAX_BLOCK ||
        m->offset > (uint64_t)INT64_MAX - m->raw_len)
        return FERRY_ERR_USAGE;
    for (i = 0; i < nops; i++) {
        if (!msg_delta_op_valid(&ops[i]))
            return FERRY_ERR_USAGE;
        sum += ops[i].len;
    }
    if (sum != m->raw_len)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_DELTA, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->id);
    if (r == 0)
        r = buf_put_u64(b, m->offset);
    if (r == 0)
        r = buf_put_u32(b, m->raw_len);
    if (r == 0)
        r = msg_put_hash(b, &m->hash);
    if (r == 0)
        r = buf_put_u16(b, (uint16_t)nops);
    for (i = 0; r == 0 && i < nops; i++) {
        r = buf_put_u8(b, ops[i].kind);
        if (r == 0)
            r = buf_put_u32(b, ops[i].len);
        if (r == 0 && ops[i].kind == DELTA_OP_COPY)
            r = buf_put_u64(b, ops[i].from);
        else if (r == 0)
            r = buf_put(b, ops[i].data, ops[i].len);
    }
    return msg_finish(b, mark, r);
}

/* One op at the cursor; bounded by the bytes present, then checked. */
static int
msg_delta_op_read(struct rd *r, struct msg_delta_op *op)
{
    int e;

    memset(op, 0, sizeof(*op));
    if ((e = rd_u8(r, &op->kind)) != 0 || (e = rd_u32(r, &op->len)) != 0)
        return e;
    if (op->len == 0 || op->len > PROTO_MAX_BLOCK)
        return FERRY_ERR_FORMAT;
    if (op->kind == DELTA_OP_COPY)
        e = rd_u64(r, &op->from);
    else if (op->kind == DELTA_OP_LITERAL)
        e = rd_bytes(r, op->len, &op->data);
    else
        return FERRY_ERR_FORMAT;
    if (e == 0 && !msg_delta_op_valid(op))
        e = FERRY_ERR_FORMAT;
    return e;
}

int
msg_delta_decode(const uint8_t *p, size_t n, struct msg_delta *m)
{
    struct msg_delta_op op;
    uint64_t sum = 0;
    struct rd r;
    uint16_t i;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->id)) != 0 ||
        (e = rd_u64(&r, &m->offset)) != 0 ||
        (e = rd_u32(&r, &m->raw_len)) != 0 ||
        (e = msg_get_hash(&r, &m->hash)) != 0 ||
        (e = rd_u16(&r, &m->nops)) != 0)
        goto fail;
    if (m->raw_len > PROTO_MAX_BLOCK || m->nops > PROTO_MAX_DELTA_OPS) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    if (m->raw_len == 0 || m->nops == 0 ||
        m->offset > (uint64_t)INT64_MAX - m->raw_len) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    m->ops_raw = r.p;
    m->ops_len = r.len;
    for (i = 0; i < m->nops; i++) {
        if ((e = msg_delta_op_read(&r, &op)) != 0)
            goto fail;
        sum += op.len;
    }
    if ((e = rd_end(&r)) != 0)
        goto fail;
    if (sum != m->raw_len) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

int
msg_delta_op_next(const struct msg_delta *m, size_t *pos,
    struct msg_delta_op *op)
{
    struct rd r;
    int e;

    if (*pos >= m->ops_len)
        return FERRY_ERR_SHORT;
    rd_init(&r, m->ops_raw + *pos, m->ops_len - *pos);
    if ((e = msg_delta_op_read(&r, op)) != 0)
        return e;
    *pos = m->ops_len - r.len;
    return 0;
}
