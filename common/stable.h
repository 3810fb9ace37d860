/*
 * stable.h: an array whose elements never move once made.
 *
 * A scan may append entries on one thread while a sender reads those it
 * published before (manifest.h): a realloc'd array would move them under
 * the reader. This one is made of chunks of 2^shift elements found
 * through a directory sized for the most elements it may ever hold, made
 * at the first element; a chunk is made when its first element is, and
 * neither moves until stable_free. Publishing (which elements a reader
 * may look at) is the owner's business.
 */
#ifndef FERRY_COMMON_STABLE_H
#define FERRY_COMMON_STABLE_H

#include <stddef.h>

struct stable {
    char **dir;      /* private: max >> shift chunks, rounded up */
    size_t made;     /* private: dir entries below it may be set (the
                        directory's untouched pages stay untouched) */
    size_t esize;    /* private */
    size_t max;      /* private */
    unsigned shift;  /* private */
};

/* Elements of esize bytes, 2^shift a chunk, at most max of them. */
void stable_init(struct stable *a, size_t esize, unsigned shift, size_t max);
void stable_free(struct stable *a);

/* Element i, which stable_make made. */
static inline void *
stable_at(const struct stable *a, size_t i)
{
    return a->dir[i >> a->shift] + (i & (((size_t)1 << a->shift) - 1)) *
        a->esize;
}

/* Element i (zeroed if its chunk is new), making its chunk if needed;
 * NULL past max or when memory runs out. */
void *stable_make(struct stable *a, size_t i);

#endif
