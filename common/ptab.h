/*
 * ptab.h: a set of pointers placed by a hash of what they point to, for
 * finding an element by a key it holds (a file by its id, by its staging
 * key). Open addressing with linear probing; removal moves the later
 * members of a run back (no tombstones). The capacity is a power of two,
 * grown at half full by ptab_reserve.
 *
 * Finding takes the key's hash and a test of an element against it.
 */
#ifndef FERRY_COMMON_PTAB_H
#define FERRY_COMMON_PTAB_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct ptab {
    void **slot;   /* cap of them, NULL where empty */
    size_t cap;    /* 0 until the first ptab_reserve */
    size_t n;
};

/* The hash of an element: the same as that of its key. */
typedef uint64_t ptab_hash_fn(const void *elem);

/* A well mixed hash of a 32-bit id (its low bits place it). */
static inline uint64_t
ptab_hash_id(uint32_t id)
{
    return ((uint64_t)id * 0x9E3779B97F4A7C15ull) >> 29;
}

static inline size_t
ptab_slot(const struct ptab *t, uint64_t hash)
{
    return (size_t)hash & (t->cap - 1);
}

static inline size_t
ptab_next(const struct ptab *t, size_t i)
{
    return (i + 1) & (t->cap - 1);
}

/* The first element whose hash is hash and for which match(elem, key)
 * holds, or NULL. */
void *ptab_find(const struct ptab *t, uint64_t hash,
    int (*match)(const void *elem, const void *key), const void *key);
/* Room for one more element (growing and placing the others again). */
int ptab_reserve(struct ptab *t, ptab_hash_fn *hash) FERRY_WUR;
/* Adds e (room reserved). */
void ptab_put(struct ptab *t, void *e, ptab_hash_fn *hash);
/* Takes e out, if it is there. */
void ptab_remove(struct ptab *t, const void *e, ptab_hash_fn *hash);
/* Empties the table, keeping its room. */
void ptab_clear(struct ptab *t);
void ptab_free(struct ptab *t);

#endif
