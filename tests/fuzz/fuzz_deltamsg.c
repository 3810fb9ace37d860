/*
 * fuzz_deltamsg.c: the checks of the delta messages (DELTA_SIGS,
 * DELTA_BLOCKS, DELTA) and DELTA's wrappers for the generic message checks
 * of fuzz_common.c, and the body of the delta target.
 */
#include "fuzz_common.h"

#include <string.h>

#include "../../proto/msg.h"

const char *
fuzz_delta_sigs_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_delta_sigs *m = v;
    uint64_t nsigs;

    if (m->basis_size == 0 || m->basis_size > (uint64_t)INT64_MAX ||
        m->sig_block < PROTO_MIN_SIG_BLOCK ||
        m->sig_block > PROTO_MAX_BLOCK ||
        (m->sig_block & (m->sig_block - 1)) != 0)
        return "DELTA_SIGS: basis or piece size";
    nsigs = msg_delta_nsigs(m->basis_size, m->sig_block);
    if (m->count == 0 || m->count > PROTO_MAX_SIGS || m->first >= nsigs ||
        m->count > nsigs - m->first)
        return "DELTA_SIGS: pieces past the basis";
    if (!fuzz_inside(m->sigs, (size_t)m->count * DELTA_SIG_LEN, p, n))
        return "DELTA_SIGS: signatures";
    return NULL;
}

const char *
fuzz_delta_blocks_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_delta_blocks *m = v;

    if (m->block_size < PROTO_MIN_BLOCK || m->block_size > PROTO_MAX_BLOCK ||
        m->count == 0 || m->count > PROTO_MAX_SIGS ||
        m->first > (uint64_t)INT64_MAX / PROTO_MIN_BLOCK)
        return "DELTA_BLOCKS: fields";
    if (!fuzz_inside(m->hashes, (size_t)m->count * HASH_LEN, p, n))
        return "DELTA_BLOCKS: hashes";
    return NULL;
}

int
fuzz_delta_decode(const uint8_t *p, size_t n, void *m)
{
    return msg_delta_decode(p, n, m);
}

/* Encodes a decoded DELTA again from the ops its iterator yields. */
int
fuzz_delta_encode(struct buf *b, const void *v)
{
    static struct msg_delta_op ops[PROTO_MAX_DELTA_OPS];
    const struct msg_delta *m = v;
    size_t pos = 0, k = 0;

    while (k < PROTO_MAX_DELTA_OPS && msg_delta_op_next(m, &pos,
        &ops[k]) == 0)
        k++;
    return msg_delta_encode(b, m, ops, k);
}

const char *
fuzz_delta_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_delta *m = v;
    struct msg_delta_op op;
    uint64_t sum = 0;
    size_t pos = 0, k = 0;
    int r;

    if (m->raw_len == 0 || m->raw_len > PROTO_MAX_BLOCK || m->nops == 0 ||
        m->nops > PROTO_MAX_DELTA_OPS ||
        m->offset > (uint64_t)INT64_MAX - m->raw_len)
        return "DELTA: fields";
    if (!fuzz_inside(m->ops_raw, m->ops_len, p, n))
        return "DELTA: ops outside the payload";
    while ((r = msg_delta_op_next(m, &pos, &op)) == 0) {
        if (op.len == 0 || (op.kind == DELTA_OP_COPY &&
            op.from > (uint64_t)INT64_MAX - op.len))
            return "DELTA: op range";
        if (op.kind == DELTA_OP_LITERAL &&
            !fuzz_inside(op.data, op.len, p, n))
            return "DELTA: literal outside the payload";
        if (op.kind != DELTA_OP_COPY && op.kind != DELTA_OP_LITERAL)
            return "DELTA: op kind";
        sum += op.len;
        k++;
    }
    if (r != FERRY_ERR_SHORT || k != m->nops)
        return "DELTA: ops do not iterate as decoded";
    if (sum != m->raw_len)
        return "DELTA: ops do not add up to the block";
    return NULL;
}

int
fuzz_delta_one(const uint8_t *p, size_t n)
{
    uint8_t in[1];

    if (n == 0)
        return 0;
    /* Any first byte picks one of the three types, so that the fuzzer
     * spends no time on the others. */
    in[0] = p[0] % 3 == 0 ? MSG_DELTA : p[0] % 3 == 1 ? MSG_DELTA_SIGS :
        MSG_DELTA_BLOCKS;
    if (p[0] == MSG_DELTA_SIGS || p[0] == MSG_DELTA ||
        p[0] == MSG_DELTA_BLOCKS)
        in[0] = p[0];
    return fuzz_msg_typed(in[0], p + 1, n - 1);
}
