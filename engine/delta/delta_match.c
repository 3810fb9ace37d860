#include "delta_match.h"

#include <string.h>

#include "../../common/rollsum.h"

static int
delta_match_carry_continues(const struct delta_carry *c, uint32_t id,
    uint64_t index)
{
    return c->valid && c->id == id && c->next == index;
}

void
delta_match_window(const struct delta_index *ix, uint64_t size, uint32_t id,
    uint64_t index, uint64_t a, uint64_t e, const struct delta_carry *c,
    uint64_t *lo, uint64_t *hi)
{
    uint32_t ps = delta_index_piece(ix);

    if (delta_match_carry_continues(c, id, index) || a == 0)
        *lo = a;
    else
        *lo = a < ps ? 0 : a - (ps - 1);
    *hi = size - e < ps - 1 ? size : e + ps - 1;
}

static void
delta_match_emit(struct delta_result *res, uint8_t kind, uint64_t from,
    const uint8_t *data, uint64_t len)
{
    struct msg_delta_op *last = res->nops > 0 ? &res->ops[res->nops - 1] :
        NULL;

    if (len == 0)
        return;
    if (kind == DELTA_OP_COPY)
        res->copied += len;
    /* Consecutive pieces of the basis, or of the file, make one op. */
    if (last != NULL && last->kind == kind && (kind == DELTA_OP_COPY ?
        last->from + last->len == from : last->data + last->len == data)) {
        last->len += (uint32_t)len;
        return;
    }
    if (res->nops == PROTO_MAX_DELTA_OPS) {
        res->overflow = 1;
        return;
    }
    res->ops[res->nops].kind = kind;
    res->ops[res->nops].len = (uint32_t)len;
    res->ops[res->nops].from = from;
    res->ops[res->nops].data = data;
    res->nops++;
}

/*
 * Rolls over the windows of a full piece that start in [from, to): 1 and
 * the first one that is a basis piece (*at, *j), else 0. Stops early
 * (*gave_up) once the pieces hashed for nothing reach miss_cap; what it
 * did is added to *work.
 */
static int
delta_match_roll(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint64_t from, uint64_t to,
    uint64_t miss_cap, struct delta_work *work, int *gave_up, uint64_t *at,
    uint64_t *j)
{
    uint32_t ps = delta_index_piece(ix);
    const uint8_t *q;
    struct rollsum rs;
    uint64_t p;

    if (size < ps || from > size - ps)
        return 0;
    if (to > size - ps + 1)
        to = size - ps + 1;
    if (from >= to || *gave_up)
        return 0;
    if (ix->filter == NULL)
        return 0;
    q = buf + (from - buf_off);
    rollsum_init(&rs, q, ps);
    /* The hot loop: a roll and a bit test per byte, the filter's fields
     * in registers. */
    {
        const uint64_t *filter = ix->filter;
        unsigned fshift = 32 - ix->filter_bits;
        uint32_t a = rs.a, b = rs.b, n = ps;

        for (p = from;; p++, q++) {
            uint32_t w = (a & 0xffffu) | (b << 16);
            uint32_t k = delta_index_mix(w) >> fshift;

            if ((filter[k >> 6] >> (k & 63)) & 1) {
                if (delta_index_find(ix, w, q, j, work)) {
                    work->rolled += p - from + 1;
                    *at = p;
                    return 1;
                }
                if (work->missed >= miss_cap) {
                    work->rolled += p - from + 1;
                    *gave_up = 1;
                    return 0;
                }
            }
            if (p + 1 >= to) {
                work->rolled += p - from + 1;
                return 0;
            }
            a += (uint32_t)q[ps] - q[0];
            b += a - n * (uint32_t)q[0];
        }
    }
}

static int
delta_match_search(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint64_t from, uint64_t to,
    uint64_t miss_cap, struct delta_result *res, uint64_t *at, uint64_t *j)
{
    return delta_match_roll(ix, buf, buf_off, size, from, to, miss_cap,
        &res->work, &res->gave_up, at, j);
}

int
delta_match_glance(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint64_t a, uint64_t e,
    struct delta_work *work)
{
    uint32_t ps = delta_index_piece(ix);
    uint64_t p, at, j;
    int gave_up = 0;

    for (p = a; p + ps <= e && p / ps < delta_index_npieces(ix); p += ps)
        if (delta_index_piece_len(ix, p / ps) == ps &&
            delta_index_same(ix, p / ps, buf + (p - buf_off), ps, work))
            return 1;
    return delta_match_roll(ix, buf, buf_off, size, a, a + ps, (uint64_t)
        DELTA_MATCH_MISS_FACTOR * (e - a), work, &gave_up, &at, &j);
}

/* delta_match_block, or without search only the pieces where the last
 * match (or the same offset) points. */
static void
delta_match_at(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint32_t id, uint64_t index, uint64_t a,
    uint64_t e, struct delta_carry *c, struct delta_result *res, int roll)
{
    uint32_t ps = delta_index_piece(ix);
    uint64_t pos = a, lit = a, until = 0, at, j, end;
    uint64_t miss_cap = (uint64_t)DELTA_MATCH_MISS_FACTOR * (e - a);
    int64_t shift = 0;
    int aligned = 1, behind = a > 0;

#define FILE_AT(off) (buf + ((off) - buf_off))
    res->nops = 0;
    res->copied = 0;
    res->overflow = 0;
    res->incomplete = 0;
    res->gave_up = 0;
    memset(&res->work, 0, sizeof(res->work));
    if (delta_match_carry_continues(c, id, index)) {
        /* The search of the block before already looked at every window
         * that starts before this block. */
        behind = 0;
        aligned = c->aligned;
        shift = c->shift;
        if (c->until > a) {
            end = c->until < e ? c->until : e;
            delta_match_emit(res, DELTA_OP_COPY,
                (uint64_t)((int64_t)a + shift), NULL, end - a);
            pos = lit = end;
            until = c->until;
        }
    }
    while (pos < e) {
        /* The piece the last match (or the same offset) points at. */
        int64_t bo = (int64_t)pos + shift;

        if (aligned && bo >= 0 && (uint64_t)bo % ps == 0 &&
            (uint64_t)bo / ps < delta_index_npieces(ix)) {
            uint32_t len = delta_index_piece_len(ix, (uint64_t)bo / ps);

            if (len <= size - pos && delta_index_same(ix, (uint64_t)bo / ps,
                FILE_AT(pos), len, &res->work)) {
                delta_match_emit(res, DELTA_OP_LITERAL, 0, FILE_AT(lit),
                    pos - lit);
                end = pos + len < e ? pos + len : e;
                delta_match_emit(res, DELTA_OP_COPY, (uint64_t)bo, NULL,
                    end - pos);
                until = pos + len;
                pos = lit = end;
                continue;
            }
        }
        if (!roll)
            break;
        if (!delta_index_complete(ix)) {
            res->incomplete = 1;
            c->valid = 0;
            return;
        }
        /* A piece that starts before the block and covers its start. */
        if (behind && pos == a) {
            behind = 0;
            if (delta_match_search(ix, buf, buf_off, size,
                a - (a < ps ? a : ps - 1), a, miss_cap, res, &at, &j)) {
                end = at + ps < e ? at + ps : e;
                delta_match_emit(res, DELTA_OP_COPY, j * ps + (a - at), NULL,
                    end - a);
                shift = (int64_t)(j * ps) - (int64_t)at;
                aligned = 1;
                until = at + ps;
                pos = lit = end;
                continue;
            }
        }
        behind = 0;
        if (!delta_match_search(ix, buf, buf_off, size, pos, e, miss_cap, res,
            &at, &j))
            break;
        delta_match_emit(res, DELTA_OP_LITERAL, 0, FILE_AT(lit), at - lit);
        end = at + ps < e ? at + ps : e;
        delta_match_emit(res, DELTA_OP_COPY, j * ps, NULL, end - at);
        shift = (int64_t)(j * ps) - (int64_t)at;
        aligned = 1;
        until = at + ps;
        pos = lit = end;
    }
    delta_match_emit(res, DELTA_OP_LITERAL, 0, FILE_AT(lit), e - lit);
#undef FILE_AT
    c->valid = 1;
    c->id = id;
    c->next = index + 1;
    c->aligned = aligned;
    c->shift = shift;
    c->until = until;
}

void
delta_match_block(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint32_t id, uint64_t index,
    uint64_t a, uint64_t e, struct delta_carry *c, struct delta_result *res)
{
    delta_match_at(ix, buf, buf_off, size, id, index, a, e, c, res, 1);
}

void
delta_match_in_place(const struct delta_index *ix, const uint8_t *buf,
    uint64_t buf_off, uint64_t size, uint32_t id, uint64_t index,
    uint64_t a, uint64_t e, struct delta_carry *c, struct delta_result *res)
{
    delta_match_at(ix, buf, buf_off, size, id, index, a, e, c, res, 0);
}

void
delta_match_same_block(uint32_t id, uint64_t index, uint64_t a,
    uint64_t e, struct delta_carry *c, struct delta_result *res)
{
    res->nops = 0;
    res->copied = 0;
    res->overflow = 0;
    res->incomplete = 0;
    res->gave_up = 0;
    memset(&res->work, 0, sizeof(res->work));
    delta_match_emit(res, DELTA_OP_COPY, a, NULL, e - a);
    c->valid = 1;
    c->id = id;
    c->next = index + 1;
    c->aligned = 1;
    c->shift = 0;
    c->until = e;
}
