#include "delta_index.h"

#include <stdio.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../common/hash.h"
#include "../../common/rollsum.h"

uint32_t
delta_index_sig_block(uint64_t size, uint32_t block_size)
{
    uint32_t sb = PROTO_MIN_SIG_BLOCK;

    while (sb < block_size && (uint64_t)sb * sb < size)
        sb *= 2;
    return sb < block_size ? sb : block_size;
}

uint64_t
delta_probe_blocks(uint64_t nblocks)
{
    uint64_t n = nblocks / 8;

    return n < 1 ? 1 : n < DELTA_PROBE_TRIES ? n : DELTA_PROBE_TRIES;
}

uint64_t
delta_probe_pieces(uint64_t size, uint32_t block_size, uint64_t basis_size,
    uint32_t sig_block)
{
    uint64_t nblocks = (size + block_size - 1) / block_size;
    uint64_t span = DELTA_PROBE_SPAN * delta_probe_blocks(nblocks) *
        block_size;
    uint64_t all = msg_delta_nsigs(basis_size, sig_block);
    uint64_t n = (span + sig_block - 1) / sig_block;

    return n < all ? n : all;
}

uint64_t
delta_place(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash != NULL ? slash + 1 : path;
    const char *ext = strrchr(base, '.');
    char key[PROTO_MAX_PATH + 2];
    int n;

    n = snprintf(key, sizeof(key), "%.*s/%s", (int)(base - path), path,
        ext != NULL ? ext : "");
    if (n < 0)
        n = 0;
    return hash_name64(key, (size_t)n < sizeof(key) ? (size_t)n :
        sizeof(key) - 1);
}

/* The slot of place, or -1; a slot neither cold nor warm is free. */
static int
delta_place_slot(const struct delta_places *dp, uint64_t place)
{
    unsigned i;

    for (i = 0; i < DELTA_PLACES; i++)
        if ((dp->slot[i].misses > 0 || dp->slot[i].warm) &&
            dp->slot[i].place == place)
            return (int)i;
    return -1;
}

int
delta_place_cold(const struct delta_places *dp, uint64_t place)
{
    int i = delta_place_slot(dp, place);

    return i >= 0 && dp->slot[i].misses >= DELTA_PLACE_MISSES;
}

int
delta_place_warm(const struct delta_places *dp, uint64_t place)
{
    int i = delta_place_slot(dp, place);

    return i >= 0 && dp->slot[i].warm;
}

void
delta_place_probed(struct delta_places *dp, uint64_t place, int found)
{
    int i = delta_place_slot(dp, place);

    if (i < 0) {
        i = (int)(dp->next++ % DELTA_PLACES);
        dp->slot[i].place = place;
        dp->slot[i].misses = 0;
    }
    dp->slot[i].warm = found;
    dp->slot[i].misses = found ? 0 : dp->slot[i].misses + 1;
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
    ix->table = xcalloc(ix->npieces, sizeof(*ix->table));
    ix->strong = xcalloc(ix->npieces, sizeof(*ix->strong));
    if (ix->table == NULL || ix->strong == NULL) {
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
    xfree(ix->strong);
    xfree(ix->table);
    xfree(ix->bucket);
    xfree(ix->filter);
    xfree(ix->blocks);
    xfree(ix);
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
    size_t len, struct delta_work *w)
{
    struct hash128 h;

    if (j >= ix->received || len != delta_index_piece_len(ix, j))
        return 0;
    hash_block(p, len, &h);
    w->hashed += len;
    w->compared++;
    return hash_equal(&h, &ix->strong[j]);
}

/* Sorts the n entries of v by their upper 32 bits, keeping the order of
 * equal ones (so pieces stay in order within a weak sum): a radix sort,
 * linear whatever the keys are, through tmp (n entries). */
static void
delta_index_table_sort(uint64_t *v, uint64_t *tmp, uint64_t n)
{
    uint64_t count[256], i, *from = v, *to = tmp, *t;
    unsigned shift, d;

    for (shift = 32; shift < 64; shift += 8) {
        memset(count, 0, sizeof(count));
        for (i = 0; i < n; i++)
            count[(from[i] >> shift) & 0xff]++;
        if (count[(from[0] >> shift) & 0xff] == n)
            continue;  /* one digit: already in order by it */
        for (d = 0, i = 0; d < 256; d++) {
            uint64_t c = count[d];

            count[d] = i;
            i += c;
        }
        for (i = 0; i < n; i++)
            to[count[(from[i] >> shift) & 0xff]++] = from[i];
        t = from;
        from = to;
        to = t;
    }
    if (from != v)
        memcpy(v, from, (size_t)n * sizeof(*v));
}

/*
 * The table of full pieces by weak checksum, with its buckets and
 * filter. Within one weak sum a piece whose strong hash equals one held
 * is left out (runs of equal pieces, zeros, are one entry: any of them
 * serves), and past DELTA_INDEX_MAX_PER_WEAK distinct ones the rest are
 * dropped: signatures that all share a weak sum cost at most that many
 * comparisons a piece, here and at each offset searched.
 */
static int
delta_index_build(struct delta_index *ix)
{
    uint64_t n = ix->nfull, *v = ix->table, *tmp, i, k, out, run, nb, b;
    unsigned bits = 4, shift;

    if (n == 0 || ix->bucket != NULL)
        return 0;
    while (((uint64_t)1 << bits) < n)
        bits++;
    ix->bucket_bits = bits;
    ix->filter_bits = bits + 5 > 32 ? 32 : bits + 5;
    nb = (uint64_t)1 << bits;
    tmp = xmalloc((size_t)n * sizeof(*tmp));
    ix->bucket = xcalloc((size_t)nb + 1, sizeof(*ix->bucket));
    ix->filter = xcalloc(((size_t)1 << ix->filter_bits) / 64 + 1,
        sizeof(*ix->filter));
    if (tmp == NULL || ix->bucket == NULL || ix->filter == NULL) {
        xfree(tmp);
        xfree(ix->bucket);
        xfree(ix->filter);
        ix->bucket = NULL;
        ix->filter = NULL;
        return FERRY_ERR_NOMEM;
    }
    delta_index_table_sort(v, tmp, n);
    xfree(tmp);
    /* Compacted in place: an entry kept is written at or before where
     * it was read. */
    for (i = 0, out = 0; i < n; i = k) {
        uint64_t key = v[i] >> 32;

        for (k = i, run = out; k < n && v[k] >> 32 == key; k++) {
            const struct hash128 *h = &ix->strong[(uint32_t)v[k]];
            uint64_t c;

            for (c = run; c < out; c++) {
                ix->build_compared++;
                if (hash_equal(&ix->strong[(uint32_t)v[c]], h))
                    break;
            }
            if (c < out)
                continue;
            if (out - run == DELTA_INDEX_MAX_PER_WEAK) {
                ix->dropped++;
                continue;
            }
            v[out++] = v[k];
        }
    }
    ix->ntable = out;
    shift = 32 - bits;
    for (i = 0, b = 0; i < out; i++) {
        uint32_t key = (uint32_t)(v[i] >> 32), f;

        while (b <= key >> shift)
            ix->bucket[b++] = (uint32_t)i;
        f = key >> (32 - ix->filter_bits);
        ix->filter[f >> 6] |= (uint64_t)1 << (f & 63);
    }
    while (b <= nb)
        ix->bucket[b++] = (uint32_t)out;
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
        uint32_t weak = (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 |
            (uint32_t)q[2] << 8 | q[3];

        ix->table[m->first + i] = (uint64_t)delta_index_mix(weak) << 32 |
            (m->first + i);
        memcpy(ix->strong[m->first + i].b, q + 4, HASH_LEN);
    }
    ix->received += m->count;
    return ix->received == ix->npieces ? delta_index_build(ix) : 0;
}

struct delta_index *
delta_index_prefix(const struct delta_index *ix)
{
    struct delta_index *px;
    uint64_t n = ix->received;

    /* Every piece before the last is whole: n of them make a basis of
     * n pieces of the same size. */
    if (n == 0 || n == ix->npieces ||
        (px = delta_index_new(n * ix->sig_block, ix->sig_block)) == NULL)
        return NULL;
    memcpy(px->table, ix->table, (size_t)n * sizeof(*px->table));
    memcpy(px->strong, ix->strong, (size_t)n * sizeof(*px->strong));
    px->received = n;
    if (delta_index_build(px) != 0) {
        delta_index_free(px);
        return NULL;
    }
    return px;
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

void
delta_index_built(const struct delta_index *ix, uint64_t *compared,
    uint64_t *dropped)
{
    *compared = ix->build_compared;
    *dropped = ix->dropped;
}

int
delta_index_find(const struct delta_index *ix, uint32_t weak,
    const uint8_t *p, uint64_t *j, struct delta_work *w)
{
    uint32_t key = delta_index_mix(weak), lo, hi, mid;
    struct hash128 h;
    int hashed = 0;

    if (ix->bucket == NULL)
        return 0;
    lo = ix->bucket[key >> (32 - ix->bucket_bits)];
    hi = ix->bucket[(key >> (32 - ix->bucket_bits)) + 1];
    /* The first entry of this weak sum: a bucket holds about one entry,
     * and however many a peer crowds into it, a binary search looks at
     * log2 of them. */
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        w->probed++;
        if ((uint32_t)(ix->table[mid] >> 32) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < ix->ntable && (uint32_t)(ix->table[lo] >> 32) == key;
        lo++) {
        uint32_t o = (uint32_t)ix->table[lo];

        w->probed++;
        if (!hashed) {
            hash_block(p, ix->sig_block, &h);
            w->hashed += ix->sig_block;
            hashed = 1;
        }
        w->compared++;
        if (hash_equal(&h, &ix->strong[o])) {
            *j = o;
            return 1;
        }
    }
    if (hashed)
        w->missed += ix->sig_block;
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

void
delta_sign_zero(size_t len, uint8_t *q)
{
    struct hash128 h;

    /* Both sums of zeros are 0 whatever their length. */
    memset(q, 0, 4);
    hash_zero_block(len, &h);
    memcpy(q + 4, h.b, HASH_LEN);
}
