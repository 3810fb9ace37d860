#include "stable.h"

#include <string.h>

#include "alloc.h"

void
stable_init(struct stable *a, size_t esize, unsigned shift, size_t max)
{
    memset(a, 0, sizeof(*a));
    a->esize = esize;
    a->shift = shift;
    a->max = max;
}

static size_t
stable_chunks(const struct stable *a)
{
    return (a->max + ((size_t)1 << a->shift) - 1) >> a->shift;
}

void
stable_free(struct stable *a)
{
    size_t i;

    for (i = 0; a->dir != NULL && i < a->made; i++)
        xfree(a->dir[i]);
    xfree(a->dir);
    a->dir = NULL;
    a->made = 0;
}

void *
stable_make(struct stable *a, size_t i)
{
    char **slot;

    if (i >= a->max)
        return NULL;
    if (a->dir == NULL &&
        (a->dir = xcalloc(stable_chunks(a), sizeof(*a->dir))) == NULL)
        return NULL;
    slot = &a->dir[i >> a->shift];
    if (*slot == NULL) {
        if ((*slot = xcalloc((size_t)1 << a->shift, a->esize)) == NULL)
            return NULL;
        if ((i >> a->shift) >= a->made)
            a->made = (i >> a->shift) + 1;
    }
    return stable_at(a, i);
}
