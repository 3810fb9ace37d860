#include "arena.h"

#include <string.h>

#include "alloc.h"

void
arena_init(struct arena *a)
{
    memset(a, 0, sizeof(*a));
}

void
arena_cleanup(struct arena *a)
{
    size_t i;

    for (i = 0; i < a->n; i++)
        xfree(a->chunks[i]);
    xfree(a->chunks);
    memset(a, 0, sizeof(*a));
}

/* Adds a chunk of size bytes; a dedicated one (own) goes before the
 * chunk being filled, so that one keeps filling. */
static char *
arena_chunk(struct arena *a, size_t size, int own)
{
    char **nv, *c;

    if ((nv = xgrow(a->chunks, a->n, &a->cap, sizeof(*nv), 16)) == NULL)
        return NULL;
    a->chunks = nv;
    if ((c = xmalloc(size)) == NULL)
        return NULL;
    if (own && a->n > 0) {
        a->chunks[a->n] = a->chunks[a->n - 1];
        a->chunks[a->n - 1] = c;
    } else {
        a->chunks[a->n] = c;
        /* A dedicated first chunk is full: the next request opens one. */
        a->used = own ? ARENA_CHUNK : 0;
    }
    a->n++;
    return c;
}

char *
arena_alloc(struct arena *a, size_t n)
{
    char *p;

    if (n == 0)
        return NULL;
    if (n > ARENA_CHUNK / 4) {
        if ((p = arena_chunk(a, n, 1)) != NULL)
            a->bytes += n;
        return p;
    }
    if ((a->n == 0 || ARENA_CHUNK - a->used < n) &&
        arena_chunk(a, ARENA_CHUNK, 0) == NULL)
        return NULL;
    p = a->chunks[a->n - 1] + a->used;
    a->used += n;
    a->bytes += n;
    return p;
}

char *
arena_strndup(struct arena *a, const char *s, size_t len)
{
    char *p;

    if (len + 1 < len || (p = arena_alloc(a, len + 1)) == NULL)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}
