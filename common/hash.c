#include "hash.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "alloc.h"

/* Blocks that came before the ones in front of them: a linear-probing
 * table (key index + 1, 0 empty) with backward-shift deletion. */
struct hash_pending {
    uint64_t key;
    struct hash128 h;
};

struct hash_file {
    XXH3_state_t *st;
    uint64_t nblocks;    /* of the whole file */
    uint64_t next;       /* blocks folded so far, in order */
    struct hash_pending *pend;
    size_t pend_len, pend_cap;
};

static void
hash_from_xxh(XXH128_hash_t h, struct hash128 *out)
{
    XXH128_canonical_t c;

    XXH128_canonicalFromHash(&c, h);
    memcpy(out->b, c.digest, HASH_LEN);
}

/* Per thread, so that counting costs no shared cache line. */
static _Thread_local uint64_t hash_counted_bytes;

void
hash_block(const void *p, size_t n, struct hash128 *out)
{
    hash_counted_bytes += n;
    hash_from_xxh(XXH3_128bits(p, n), out);
}

uint64_t
hash_counted(void)
{
    return hash_counted_bytes;
}

/* Never written: the pages stay the kernel's shared zero page. */
static uint8_t hash_zeros[HASH_MAX_ZERO_BLOCK];

int
hash_is_zero(const void *p, size_t n)
{
    const uint8_t *u = p;

    while (n > 0) {
        size_t k = n < 65536 ? n : 65536;

        if (memcmp(u, hash_zeros, k) != 0)
            return 0;
        u += k;
        n -= k;
    }
    return 1;
}

/* The hashes of zeros of the last lengths asked for: the block size, the
 * piece size of kept signatures and a file's short last block follow
 * each other, and each is hashed once, not once a block. */
#define HASH_ZERO_CACHED 4

static pthread_mutex_t hash_zero_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    size_t n;
    uint64_t used;    /* 0: empty; else when last asked for */
    struct hash128 h;
} hash_zero_cache[HASH_ZERO_CACHED];
static uint64_t hash_zero_clock;

void
hash_zero_block(size_t n, struct hash128 *out)
{
    size_t i, old = 0;

    assert(n <= HASH_MAX_ZERO_BLOCK);
    pthread_mutex_lock(&hash_zero_lock);
    for (i = 0; i < HASH_ZERO_CACHED; i++) {
        if (hash_zero_cache[i].used != 0 && hash_zero_cache[i].n == n)
            break;
        if (hash_zero_cache[i].used < hash_zero_cache[old].used)
            old = i;
    }
    if (i == HASH_ZERO_CACHED) {
        i = old;
        hash_block(hash_zeros, n, &hash_zero_cache[i].h);
        hash_zero_cache[i].n = n;
    }
    hash_zero_cache[i].used = ++hash_zero_clock;
    *out = hash_zero_cache[i].h;
    pthread_mutex_unlock(&hash_zero_lock);
}

uint64_t
hash_name64(const void *p, size_t n)
{
    return XXH3_64bits(p, n);
}

int
hash_equal(const struct hash128 *a, const struct hash128 *b)
{
    return memcmp(a->b, b->b, HASH_LEN) == 0;
}

int
hash_ct_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = a, *y = b;
    uint8_t d = 0;
    size_t i;

    for (i = 0; i < n; i++)
        d |= (uint8_t)(x[i] ^ y[i]);
    return d == 0;
}

void
hash_hex(const struct hash128 *h, char out[2 * HASH_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    size_t i;

    for (i = 0; i < HASH_LEN; i++) {
        out[2 * i] = hex[h->b[i] >> 4];
        out[2 * i + 1] = hex[h->b[i] & 15];
    }
    out[2 * HASH_LEN] = '\0';
}

struct hash_file *
hash_file_new(uint64_t size, uint32_t block_size)
{
    struct hash_file *hf = xcalloc(1, sizeof(*hf));
    uint8_t hdr[12];
    int i;

    if (hf == NULL)
        return NULL;
    if ((hf->st = XXH3_createState()) == NULL) {
        xfree(hf);
        return NULL;
    }
    XXH3_128bits_reset(hf->st);
    for (i = 0; i < 8; i++)
        hdr[i] = (uint8_t)(size >> (56 - 8 * i));
    for (i = 0; i < 4; i++)
        hdr[8 + i] = (uint8_t)(block_size >> (24 - 8 * i));
    XXH3_128bits_update(hf->st, hdr, sizeof(hdr));
    hf->nblocks = block_size == 0 ? 0 : size / block_size +
        (size % block_size != 0);
    return hf;
}

void
hash_file_free(struct hash_file *hf)
{
    if (hf == NULL)
        return;
    XXH3_freeState(hf->st);
    xfree(hf->pend);
    xfree(hf);
}

void
hash_file_add(struct hash_file *hf, const struct hash128 *block)
{
    XXH3_128bits_update(hf->st, block->b, HASH_LEN);
    hf->next++;
}

static size_t
hash_pend_slot(const struct hash_file *hf, uint64_t key)
{
    size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull) & (hf->pend_cap - 1);

    while (hf->pend[i].key != 0 && hf->pend[i].key != key)
        i = (i + 1) & (hf->pend_cap - 1);
    return i;
}

static int
hash_pend_grow(struct hash_file *hf)
{
    size_t ncap = hf->pend_cap ? hf->pend_cap * 2 : 64, i, old = hf->pend_cap;
    struct hash_pending *ov = hf->pend;

    if ((hf->pend = xcalloc(ncap, sizeof(*hf->pend))) == NULL) {
        hf->pend = ov;
        return FERRY_ERR_NOMEM;
    }
    hf->pend_cap = ncap;
    for (i = 0; i < old; i++)
        if (ov[i].key != 0)
            hf->pend[hash_pend_slot(hf, ov[i].key)] = ov[i];
    xfree(ov);
    return 0;
}

/* Takes the pending hash of key out of the table into *h; 0 if absent. */
static int
hash_pend_take(struct hash_file *hf, uint64_t key, struct hash128 *h)
{
    size_t i, j, k, mask = hf->pend_cap - 1;

    if (hf->pend_len == 0)
        return 0;
    i = hash_pend_slot(hf, key);
    if (hf->pend[i].key == 0)
        return 0;
    *h = hf->pend[i].h;
    /* Backward shift: move later members of the run into the hole when
     * their home slot does not lie cyclically in (hole, their slot]. */
    for (j = (i + 1) & mask; hf->pend[j].key != 0; j = (j + 1) & mask) {
        k = (size_t)(hf->pend[j].key * 0x9e3779b97f4a7c15ull) & mask;
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            hf->pend[i] = hf->pend[j];
            i = j;
        }
    }
    hf->pend[i].key = 0;
    hf->pend_len--;
    return 1;
}

int
hash_file_put(struct hash_file *hf, uint64_t index, const struct hash128 *h,
    size_t max_pending)
{
    struct hash128 next;
    size_t i;
    int r;

    if (index >= hf->nblocks)
        return FERRY_ERR_USAGE;
    if (index < hf->next)
        return FERRY_ERR_EXISTS;
    if (index > hf->next) {
        if (hf->pend_len >= max_pending)
            return FERRY_ERR_TOO_LARGE;
        if ((hf->pend_len + 1) * 2 > hf->pend_cap &&
            (r = hash_pend_grow(hf)) != 0)
            return r;
        i = hash_pend_slot(hf, index + 1);
        if (hf->pend[i].key != 0)
            return FERRY_ERR_EXISTS;
        hf->pend[i].key = index + 1;
        hf->pend[i].h = *h;
        hf->pend_len++;
        return 0;
    }
    hash_file_add(hf, h);
    while (hash_pend_take(hf, hf->next + 1, &next))
        hash_file_add(hf, &next);
    return 0;
}

size_t
hash_file_pending(const struct hash_file *hf)
{
    return hf->pend_len;
}

void
hash_file_final(struct hash_file *hf, struct hash128 *out)
{
    hash_from_xxh(XXH3_128bits_digest(hf->st), out);
}

int
hash_fd(int fd, uint64_t size, uint32_t block_size, struct hash128 *out)
{
    struct hash_file *hf = NULL;
    struct hash128 bh;
    uint8_t *blk = NULL;
    uint64_t off = 0;
    int r = 0;

    memset(out, 0, sizeof(*out));
    if (block_size == 0)
        return FERRY_ERR_USAGE;
    if ((hf = hash_file_new(size, block_size)) == NULL ||
        (blk = xmalloc(block_size)) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto out;
    }
    while (off < size) {
        size_t want = size - off < block_size ? (size_t)(size - off) :
            block_size;
        size_t got = 0;

        while (got < want) {
            ssize_t n = pread(fd, blk + got, want - got, (off_t)(off + got));

            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                r = -errno;
                goto out;
            }
            if (n == 0) {
                r = FERRY_ERR_CHANGED;
                goto out;
            }
            got += (size_t)n;
        }
        hash_block(blk, want, &bh);
        hash_file_add(hf, &bh);
        off += want;
    }
    hash_file_final(hf, out);
out:
    xfree(blk);
    hash_file_free(hf);
    return r;
}

int
hash_mem(const void *p, uint64_t size, uint32_t block_size,
    struct hash128 *out)
{
    struct hash_file *hf;
    struct hash128 bh;
    uint64_t off, n;

    memset(out, 0, sizeof(*out));
    if (block_size == 0)
        return FERRY_ERR_USAGE;
    if ((hf = hash_file_new(size, block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    for (off = 0; off < size; off += n) {
        n = size - off < block_size ? size - off : block_size;
        hash_block((const uint8_t *)p + off, (size_t)n, &bh);
        hash_file_add(hf, &bh);
    }
    hash_file_final(hf, out);
    hash_file_free(hf);
    return 0;
}
