#include "ptab.h"

#include <string.h>

#include "alloc.h"

void *
ptab_find(const struct ptab *t, uint64_t hash,
    int (*match)(const void *elem, const void *key), const void *key)
{
    size_t i;

    if (t->n == 0)
        return NULL;
    for (i = ptab_slot(t, hash); t->slot[i] != NULL; i = ptab_next(t, i))
        if (match(t->slot[i], key))
            return t->slot[i];
    return NULL;
}

int
ptab_reserve(struct ptab *t, ptab_hash_fn *hash)
{
    struct ptab old = *t;
    size_t i;

    if ((t->n + 1) * 2 <= t->cap)
        return 0;
    t->cap = old.cap ? 2 * old.cap : 64;
    if ((t->slot = xcalloc(t->cap, sizeof(*t->slot))) == NULL) {
        *t = old;
        return FERRY_ERR_NOMEM;
    }
    t->n = 0;
    for (i = 0; i < old.cap; i++)
        if (old.slot[i] != NULL)
            ptab_put(t, old.slot[i], hash);
    xfree(old.slot);
    return 0;
}

void
ptab_put(struct ptab *t, void *e, ptab_hash_fn *hash)
{
    size_t i = ptab_slot(t, hash(e));

    while (t->slot[i] != NULL)
        i = ptab_next(t, i);
    t->slot[i] = e;
    t->n++;
}

void
ptab_remove(struct ptab *t, const void *e, ptab_hash_fn *hash)
{
    size_t i, j, k;

    if (t->n == 0)
        return;
    for (i = ptab_slot(t, hash(e)); t->slot[i] != e; i = ptab_next(t, i))
        if (t->slot[i] == NULL)
            return;
    t->slot[i] = NULL;
    t->n--;
    for (j = ptab_next(t, i); t->slot[j] != NULL; j = ptab_next(t, j)) {
        k = ptab_slot(t, hash(t->slot[j]));
        /* It stays where its home is cyclically in (i, j]. */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
            continue;
        t->slot[i] = t->slot[j];
        t->slot[j] = NULL;
        i = j;
    }
}

void
ptab_clear(struct ptab *t)
{
    if (t->cap > 0)
        memset(t->slot, 0, t->cap * sizeof(*t->slot));
    t->n = 0;
}

void
ptab_free(struct ptab *t)
{
    xfree(t->slot);
    memset(t, 0, sizeof(*t));
}
