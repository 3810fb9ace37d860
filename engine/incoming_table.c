#include "incoming_int.h"

#include <string.h>

#include "../common/alloc.h"

/* Tables of the active files: by id, and by staging key (so that a clash
 * of keys is found without a look at every file). */

static uint64_t
in_id_hash(const void *f)
{
    return ptab_hash_id(((const struct rfile *)f)->id);
}

static uint64_t
in_key_hash(const void *f)
{
    return hash_name64(((const struct rfile *)f)->key, PARTIAL_KEY_LEN);
}

static int
in_id_is(const void *f, const void *id)
{
    return ((const struct rfile *)f)->id == *(const uint32_t *)id;
}

/* Another file with f's staging key. */
static int
in_key_clash(const void *g, const void *f)
{
    return g != f && strcmp(((const struct rfile *)g)->key,
        ((const struct rfile *)f)->key) == 0;
}

struct rfile *
incoming_table_find(const struct incoming *in, uint32_t id)
{
    return ptab_find(&in->by_id, ptab_hash_id(id), in_id_is, &id);
}

int
incoming_table_key_taken(const struct incoming *in, const struct rfile *f)
{
    return ptab_find(&in->by_key, in_key_hash(f), in_key_clash, f) != NULL;
}

int
incoming_table_insert(struct incoming *in, struct rfile *f)
{
    int r;

    if ((r = ptab_reserve(&in->by_id, in_id_hash)) != 0 ||
        (r = ptab_reserve(&in->by_key, in_key_hash)) != 0)
        return r;
    ptab_put(&in->by_id, f, in_id_hash);
    ptab_put(&in->by_key, f, in_key_hash);
    return 0;
}

void
incoming_table_remove(struct incoming *in, struct rfile *f)
{
    ptab_remove(&in->by_id, f, in_id_hash);
    ptab_remove(&in->by_key, f, in_key_hash);
}

/* Sets bit id of the bitmap *v of *cap bytes, grown to hold it. */
static int
in_bit_set(uint8_t **v, size_t *cap, uint32_t id)
{
    size_t byte = id / 8;

    if (byte >= *cap) {
        size_t ncap = *cap ? *cap : 64;
        uint8_t *nv;

        while (ncap <= byte)
            ncap *= 2;
        if ((nv = xrealloc(*v, ncap)) == NULL)
            return FERRY_ERR_NOMEM;
        memset(nv + *cap, 0, ncap - *cap);
        *v = nv;
        *cap = ncap;
    }
    (*v)[byte] |= (uint8_t)(1u << (id % 8));
    return 0;
}

static int
in_bit_has(const uint8_t *v, size_t cap, uint32_t id)
{
    return id / 8 < cap && (v[id / 8] & (1u << (id % 8))) != 0;
}

int
incoming_table_mark_wanted(struct incoming *in, uint32_t id)
{
    return in_bit_set(&in->wanted, &in->wanted_cap, id);
}

int
incoming_table_was_wanted(const struct incoming *in, uint32_t id)
{
    return in_bit_has(in->wanted, in->wanted_cap, id);
}

int
incoming_table_mark_vol0(struct incoming *in, uint32_t id)
{
    return in_bit_set(&in->vol0, &in->vol0_cap, id);
}

int
incoming_table_was_vol0(const struct incoming *in, uint32_t id)
{
    return in_bit_has(in->vol0, in->vol0_cap, id);
}
