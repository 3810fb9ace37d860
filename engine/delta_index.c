#include "delta_index.h"

#include <string.h>

#include "../common/alloc.h"
#include "../common/hash.h"
#include "../common/rollsum.h"

uint32_t
delta_index_sig_block(uint64_t size, uint32_t block_size)
{
    uint32_t sb = PROTO_MIN_SIG_BLOCK;

    while (sb < block_size && (uint64_t)sb * sb < size)
        sb *= 2;
    return sb < block_size ? sb : block_size;
}

struct delta_index *
delta_index_new(uint64_t basis_size, uint32_t sig_block)
{
    struct delta_index *ix = xcalloc(1, sizeof(*ix));

    if (ix == NULL)
        return NULL;
    ix->basis_size = basis_size;
    ix->sig_block = sig_block;
    ix->npieces = msg_delta_nsigs(basis_size, sig_block);
    ix->nfull = basis_size / sig_block;
    ix->weak = xcalloc(ix->npieces, sizeof(*ix->weak));
    ix->strong = xcalloc(ix->npieces, sizeof(*ix->strong));
    if (ix->weak == NULL || ix->strong == NULL) {
        delta_index_free(ix);
        return NULL;
    }
    return ix;
}

void
delta_index_free(struct delta_index *ix)
{
    if (ix == NULL)
        return;
    xfree(ix->weak);
    xfree(ix->strong);
    xfree(ix->slots);
    xfree(ix->filter);
    xfree(ix->blocks);
    xfree(ix);
}

uint64_t
delta_index_basis_size(const struct delta_index *ix)
{
    return ix->basis_size;
}

uint32_t
delta_index_piece(const struct delta_index *ix)
{
    return ix->sig_block;
}

uint64_t
delta_index_npieces(const struct delta_index *ix)
{
    return ix->npieces;
}

uint32_t
delta_index_piece_len(const struct delta_index *ix, uint64_t j)
{
    uint64_t off = j * ix->sig_block;

    return ix->basis_size - off < ix->sig_block ?
        (uint32_t)(ix->basis_size - off) : ix->sig_block;
}

int
delta_index_same(const struct delta_index *ix, uint64_t j, const uint8_t *p,
    size_t len)
{
    struct hash128 h;

    if (j >= ix->received || len != delta_index_piece_len(ix, j))
        return 0;
    hash_block(p, len, &h);
    return hash_equal(&h, &ix->strong[j]);
}

/* The table of full pieces by weak checksum, with a filter of eight bits
 * a piece. A piece whose weak and strong sums equal an earlier one's is
 * left out: runs of equal pieces (zeros) would make long probe chains,
 * and any of them serves. */
static int
delta_index_build(struct delta_index *ix)
{
    uint64_t j, mask;
    unsigned bits = 4;

    if (ix->nfull == 0)
        return 0;
    while (((uint64_t)1 << bits) < ix->nfull * 2)
        bits++;
    ix->slot_bits = bits;
    ix->filter_bits = bits + 4 > 32 ? 32 : bits + 4;
    ix->slots = xcalloc((size_t)1 << bits, sizeof(*ix->slots));
    ix->filter = xcalloc(((size_t)1 << ix->filter_bits) / 64 + 1,
        sizeof(*ix->filter));
    if (ix->slots == NULL || ix->filter == NULL)
        return FERRY_ERR_NOMEM;
    mask = ((uint64_t)1 << bits) - 1;
    for (j = 0; j < ix->nfull; j++) {
        uint32_t k = delta_index_mix(ix->weak[j]), f;
        uint64_t i = k >> (32 - bits);
        int dup = 0;

        for (; ix->slots[i] != 0; i = (i + 1) & mask) {
            uint32_t o = ix->slots[i] - 1;

            if (ix->weak[o] == ix->weak[j] &&
                hash_equal(&ix->strong[o], &ix->strong[j])) {
                dup = 1;
                break;
            }
        }
        if (dup)
            continue;
        ix->slots[i] = (uint32_t)j + 1;
        f = k >> (32 - ix->filter_bits);
        ix->filter[f >> 6] |= (uint64_t)1 << (f & 63);
    }
    return 0;
}

int
delta_index_add(struct delta_index *ix, const struct msg_delta_sigs *m)
{
    const uint8_t *q = m->sigs;
    uint32_t i;

    if (m->basis_size != ix->basis_size || m->sig_block != ix->sig_block ||
        m->first != ix->received || m->count > ix->npieces - ix->received)
        return FERRY_ERR_PROTOCOL;
    for (i = 0; i < m->count; i++, q += DELTA_SIG_LEN) {
        ix->weak[m->first + i] = (uint32_t)q[0] << 24 |
            (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3];
        memcpy(ix->strong[m->first + i].b, q + 4, HASH_LEN);
    }
    ix->received += m->count;
    return ix->received == ix->npieces ? delta_index_build(ix) : 0;
}

int
delta_index_add_blocks(struct delta_index *ix,
    const struct msg_delta_blocks *m, uint32_t block_size)
{
    uint64_t n = msg_delta_nsigs(ix->basis_size, block_size);

    if (m->block_size != block_size ||
        block_size < ix->sig_block || m->first != ix->blocks_received ||
        m->count > n - ix->blocks_received)
        return FERRY_ERR_PROTOCOL;
    if (ix->blocks == NULL) {
        if ((ix->blocks = xcalloc((size_t)n, sizeof(*ix->blocks))) == NULL)
            return FERRY_ERR_NOMEM;
        ix->block_size = block_size;
    }
    memcpy(ix->blocks + m->first, m->hashes, (size_t)m->count * HASH_LEN);
    ix->blocks_received += m->count;
    return 0;
}

int
delta_index_has_block(const struct delta_index *ix, uint64_t index)
{
    return index < ix->blocks_received;
}

int
delta_index_same_block(const struct delta_index *ix, uint64_t index,
    uint64_t len, const struct hash128 *h)
{
    uint64_t off = index * ix->block_size;

    return index < ix->blocks_received && off < ix->basis_size &&
        (ix->basis_size - off < ix->block_size ? ix->basis_size - off :
        ix->block_size) == len && off + len <= delta_index_described(ix) &&
        hash_equal(h, &ix->blocks[index]);
}

int
delta_index_complete(const struct delta_index *ix)
{
    return ix->received == ix->npieces;
}

uint64_t
delta_index_described(const struct delta_index *ix)
{
    uint64_t n = ix->received * ix->sig_block;

    return n < ix->basis_size ? n : ix->basis_size;
}

int
delta_index_find(const struct delta_index *ix, uint32_t weak,
    const uint8_t *p, uint64_t *j)
{
    uint64_t mask = ((uint64_t)1 << ix->slot_bits) - 1, i;
    struct hash128 h;
    int hashed = 0;

    if (ix->slots == NULL)
        return 0;
    i = delta_index_mix(weak) >> (32 - ix->slot_bits);
    for (; ix->slots[i] != 0; i = (i + 1) & mask) {
        uint32_t o = ix->slots[i] - 1;

        if (ix->weak[o] != weak)
            continue;
        if (!hashed) {
            hash_block(p, ix->sig_block, &h);
            hashed = 1;
        }
        if (hash_equal(&h, &ix->strong[o])) {
            *j = o;
            return 1;
        }
    }
    return 0;
}

void
delta_sign(const uint8_t *p, size_t len, uint8_t *q)
{
    uint32_t weak = rollsum_of(p, len);
    struct hash128 h;

    hash_block(p, len, &h);
    q[0] = (uint8_t)(weak >> 24);
    q[1] = (uint8_t)(weak >> 16);
    q[2] = (uint8_t)(weak >> 8);
    q[3] = (uint8_t)weak;
    memcpy(q + 4, h.b, HASH_LEN);
}
