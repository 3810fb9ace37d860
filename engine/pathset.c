#include "pathset.h"

#include <string.h>

#include "../common/alloc.h"
#include "../common/hash.h"

static uint64_t
pathset_key(const char *path)
{
    uint64_t k = hash_name64(path, strlen(path));

    return k == 0 ? 1 : k;
}

static size_t
pathset_find(const uint64_t *v, size_t cap, uint64_t k)
{
    size_t i;

    for (i = k % cap; v[i] != 0 && v[i] != k; i = (i + 1) % cap)
        ;
    return i;
}

static int
pathset_grow(struct pathset *s)
{
    size_t ncap = s->cap ? s->cap * 2 : 1024, i;
    uint64_t *nv = xcalloc(ncap, sizeof(*nv));

    if (nv == NULL)
        return -1;
    for (i = 0; i < s->cap; i++)
        if (s->v[i] != 0)
            nv[pathset_find(nv, ncap, s->v[i])] = s->v[i];
    xfree(s->v);
    s->v = nv;
    s->cap = ncap;
    return 0;
}

int
pathset_add(struct pathset *s, const char *path)
{
    uint64_t k = pathset_key(path);
    size_t i;

    if ((s->len + 1) * 2 > s->cap && pathset_grow(s) != 0)
        return 0;
    i = pathset_find(s->v, s->cap, k);
    if (s->v[i] == k)
        return 0;
    s->v[i] = k;
    s->len++;
    return 1;
}

int
pathset_has(const struct pathset *s, const char *path)
{
    uint64_t k = pathset_key(path);

    return s->cap > 0 && s->v[pathset_find(s->v, s->cap, k)] == k;
}

void
pathset_free(struct pathset *s)
{
    xfree(s->v);
    memset(s, 0, sizeof(*s));
}
