#include "incoming_int.h"

#include <inttypes.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "dest.h"
#include "volume/volrecv.h"

/* Tables of the active files: by id, and by staging key (so that a clash
 * of keys is found without a look at every file). */

static uint64_t
incoming_table_id_hash(const void *f)
{
    return ptab_hash_id(((const struct rfile *)f)->id);
}

static uint64_t
incoming_table_key_hash(const void *f)
{
    return hash_name64(((const struct rfile *)f)->key, PARTIAL_KEY_LEN);
}

static int
incoming_table_id_is(const void *f, const void *id)
{
    return ((const struct rfile *)f)->id == *(const uint32_t *)id;
}

/* Another file with f's staging key. */
static int
incoming_table_key_clash(const void *g, const void *f)
{
    return g != f && strcmp(((const struct rfile *)g)->key,
        ((const struct rfile *)f)->key) == 0;
}

struct rfile *
incoming_table_find(const struct incoming *in, uint32_t id)
{
    return ptab_find(&in->by_id, ptab_hash_id(id), incoming_table_id_is, &id);
}

int
incoming_table_key_taken(const struct incoming *in, const struct rfile *f)
{
    return ptab_find(&in->by_key, incoming_table_key_hash(f),
        incoming_table_key_clash, f) != NULL;
}

int
incoming_table_insert(struct incoming *in, struct rfile *f)
{
    int r;

    if ((r = ptab_reserve(&in->by_id, incoming_table_id_hash)) != 0 ||
        (r = ptab_reserve(&in->by_key, incoming_table_key_hash)) != 0)
        return r;
    ptab_put(&in->by_id, f, incoming_table_id_hash);
    ptab_put(&in->by_key, f, incoming_table_key_hash);
    return 0;
}

void
incoming_table_remove(struct incoming *in, struct rfile *f)
{
    ptab_remove(&in->by_id, f, incoming_table_id_hash);
    ptab_remove(&in->by_key, f, incoming_table_key_hash);
}

/* Sets bit id of the bitmap *v of *cap bytes, grown to hold it. */
static int
incoming_table_bit_set(uint8_t **v, size_t *cap, uint32_t id)
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
incoming_table_bit_has(const uint8_t *v, size_t cap, uint32_t id)
{
    return id / 8 < cap && (v[id / 8] & (1u << (id % 8))) != 0;
}

int
incoming_table_mark_wanted(struct incoming *in, uint32_t id)
{
    return incoming_table_bit_set(&in->wanted, &in->wanted_cap, id);
}

int
incoming_table_was_wanted(const struct incoming *in, uint32_t id)
{
    return incoming_table_bit_has(in->wanted, in->wanted_cap, id);
}

int
incoming_table_mark_vol0(struct incoming *in, uint32_t id)
{
    return incoming_table_bit_set(&in->vol0, &in->vol0_cap, id);
}

static int
incoming_table_was_vol0(const struct incoming *in, uint32_t id)
{
    return incoming_table_bit_has(in->vol0, in->vol0_cap, id);
}

/* Which way a file's data comes: a volume claims it, or blocks do. */

int
incoming_pack_claim(struct incoming *in, uint32_t id, unsigned stream,
    const char **path, uint64_t *size)
{
    struct rfile *f = incoming_table_find(in, id);

    *path = NULL;
    *size = 0;
    /* One volume, once, and only for a file no data came for: a file is
     * packed or not when it is wanted, and the files of a lost stream's
     * volume come again in blocks, never in another volume (which could
     * not be told from a hostile second copy). */
    if (f == NULL)
        return FERRY_ERR_PROTOCOL;
    if (f->via != 0)
        return xfer_fail(in->x, FERRY_ERR_PROTOCOL, "%s/%s: the sender "
            "sent it again, in a volume", dest_root(in->d), f->path);
    f->packed_by = stream + 1;
    f->via = RF_VIA_VOLUME;
    *path = f->path;
    *size = f->size;
    return 0;
}

void
incoming_pack_release(struct incoming *in, uint32_t id, unsigned stream)
{
    struct rfile *f = incoming_table_find(in, id);

    if (f != NULL && f->packed_by == stream + 1)
        f->packed_by = 0;
}

int
incoming_data_via(struct incoming *in, uint32_t id, unsigned stream)
{
    struct rfile *f = incoming_table_find(in, id);
    unsigned by;

    if (f == NULL && incoming_table_was_vol0(in, id))
        return xfer_fail(in->x, FERRY_ERR_PROTOCOL, "%s: entry %" PRIu32
            ": the sender sent it again, in blocks, after its volume",
            dest_root(in->d), id);
    if (f == NULL)
        return 0;
    if ((by = f->packed_by) != 0) {
        if (by == 1 || by == stream + 1)
            return xfer_fail(in->x, FERRY_ERR_PROTOCOL, "%s/%s: the "
                "sender sent it again, in blocks, while its volume holds "
                "it", dest_root(in->d), f->path);
        /* The sender gives a volume's files back only when it lost the
         * volume's stream, maybe before that stream's end reached us:
         * it is lost here too, and what of it is still on its way is
         * ignored. */
        log_debug("stream %u: taken as lost, %s coming in blocks on "
            "stream %u", by - 1, f->path, stream);
        volrecv_stream_lost(in->vr, by - 1);
        f->packed_by = 0;
    }
    f->via |= RF_VIA_BLOCKS;
    return 0;
}
