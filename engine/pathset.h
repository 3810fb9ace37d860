/*
 * pathset.h: a set of paths, kept as 64-bit hashes (open addressing), for
 * remembering what happened to files over the connections of one run.
 * A collision makes two paths one; the sets only steer counters, never
 * what is written.
 */
#ifndef FERRY_ENGINE_PATHSET_H
#define FERRY_ENGINE_PATHSET_H

#include <stddef.h>
#include <stdint.h>

struct pathset {
    uint64_t *v;   /* private; 0 marks an empty slot */
    size_t cap, len;
};

/* Adds path; returns 1 if it was new, 0 if it was there (or on out of
 * memory, which only costs accuracy). */
int pathset_add(struct pathset *s, const char *path);
/* For the tests: nothing else calls it. */
int pathset_has(const struct pathset *s, const char *path);
void pathset_free(struct pathset *s);

#endif
