/*
 * arena.h: many small strings that live as long as their owner.
 *
 * A tree of a million files has a million names; a malloc each costs
 * its header and rounding (about as much as a short name again) and
 * scatters them. An arena hands out bytes from chunks it allocates and
 * frees them all at once. Pointers it returns stay valid until
 * arena_cleanup: chunks are never moved.
 */
#ifndef FERRY_COMMON_ARENA_H
#define FERRY_COMMON_ARENA_H

#include <stddef.h>

#include "err.h"

struct arena {
    char **chunks;     /* private: the last one is being filled */
    size_t n, cap;     /* private */
    size_t used;       /* private: bytes used of the last chunk */
    size_t bytes;      /* read-only: bytes handed out */
};

/* Bytes per chunk; a request larger than a quarter of it gets a chunk of
 * its own, so a long string wastes no more than the rest of a chunk. */
#define ARENA_CHUNK ((size_t)64 * 1024)

void arena_init(struct arena *a);
void arena_cleanup(struct arena *a);

/* n bytes (n > 0, no alignment), or NULL when memory runs out.
 * Exported for the tests; otherwise used only in its file. */
char *arena_alloc(struct arena *a, size_t n);

/* A copy of the len bytes at s with a NUL after them, or NULL. */
char *arena_strndup(struct arena *a, const char *s, size_t len);

#endif
