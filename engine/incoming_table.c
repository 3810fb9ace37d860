#include "incoming_int.h"

#include <string.h>

#include "../common/alloc.h"

/* Tables of the active files: tab by id, ktab by staging key (so that a
 * clash of keys is found without a look at every file). */

typedef size_t in_home_fn(const struct incoming *in, const struct rfile *f);

static size_t
in_id_home(const struct incoming *in, const struct rfile *f)
{
    return ((size_t)f->id * 0x9e3779b1u) & (in->tab_cap - 1);
}

static size_t
in_key_home(const struct incoming *in, const struct rfile *f)
{
    return (size_t)hash_name64(f->key, PARTIAL_KEY_LEN) & (in->tab_cap - 1);
}

static size_t
in_slot(const struct incoming *in, uint32_t id)
{
    size_t mask = in->tab_cap - 1, i = ((size_t)id * 0x9e3779b1u) & mask;

    while (in->tab[i] != NULL && in->tab[i]->id != id)
        i = (i + 1) & mask;
    return i;
}

struct rfile *
incoming_table_find(const struct incoming *in, uint32_t id)
{
    return in->tab_cap == 0 ? NULL : in->tab[in_slot(in, id)];
}

int
incoming_table_key_taken(const struct incoming *in, const struct rfile *f)
{
    size_t mask = in->tab_cap - 1, i;

    if (in->tab_cap == 0)
        return 0;
    for (i = in_key_home(in, f); in->ktab[i] != NULL; i = (i + 1) & mask)
        if (in->ktab[i] != f && strcmp(in->ktab[i]->key, f->key) == 0)
            return 1;
    return 0;
}

static void
in_put(const struct incoming *in, struct rfile **t, struct rfile *f,
    in_home_fn *home)
{
    size_t mask = in->tab_cap - 1, i = home(in, f);

    while (t[i] != NULL)
        i = (i + 1) & mask;
    t[i] = f;
}

int
incoming_table_insert(struct incoming *in, struct rfile *f)
{
    if ((in->nactive + 1) * 2 > in->tab_cap) {
        size_t ncap = in->tab_cap ? in->tab_cap * 2 : 64, i, old = in->tab_cap;
        struct rfile **ov = in->tab, **okv = in->ktab;

        in->tab = xcalloc(ncap, sizeof(*in->tab));
        in->ktab = xcalloc(ncap, sizeof(*in->ktab));
        if (in->tab == NULL || in->ktab == NULL) {
            xfree(in->tab);
            xfree(in->ktab);
            in->tab = ov;
            in->ktab = okv;
            return FERRY_ERR_NOMEM;
        }
        in->tab_cap = ncap;
        for (i = 0; i < old; i++) {
            if (ov[i] != NULL)
                in_put(in, in->tab, ov[i], in_id_home);
            if (okv[i] != NULL)
                in_put(in, in->ktab, okv[i], in_key_home);
        }
        xfree(ov);
        xfree(okv);
    }
    in_put(in, in->tab, f, in_id_home);
    in_put(in, in->ktab, f, in_key_home);
    in->nactive++;
    return 0;
}

/* Empties f's slot of t; later members of its run move back so that
 * they stay reachable. */
static void
in_vacate(const struct incoming *in, struct rfile **t, struct rfile *f,
    in_home_fn *home)
{
    size_t mask = in->tab_cap - 1, i = home(in, f), j, k;

    while (t[i] != f)
        i = (i + 1) & mask;
    t[i] = NULL;
    for (j = (i + 1) & mask; t[j] != NULL; j = (j + 1) & mask) {
        k = home(in, t[j]);
        if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
            t[i] = t[j];
            t[j] = NULL;
            i = j;
        }
    }
}

void
incoming_table_remove(struct incoming *in, struct rfile *f)
{
    in_vacate(in, in->tab, f, in_id_home);
    in_vacate(in, in->ktab, f, in_key_home);
    in->nactive--;
}

int
incoming_table_mark_wanted(struct incoming *in, uint32_t id)
{
    size_t byte = id / 8;

    if (byte >= in->wanted_cap) {
        size_t ncap = in->wanted_cap ? in->wanted_cap : 64;
        uint8_t *nv;

        while (ncap <= byte)
            ncap *= 2;
        if ((nv = xrealloc(in->wanted, ncap)) == NULL)
            return FERRY_ERR_NOMEM;
        memset(nv + in->wanted_cap, 0, ncap - in->wanted_cap);
        in->wanted = nv;
        in->wanted_cap = ncap;
    }
    in->wanted[byte] |= (uint8_t)(1u << (id % 8));
    return 0;
}

int
incoming_table_was_wanted(const struct incoming *in, uint32_t id)
{
    return id / 8 < in->wanted_cap &&
        (in->wanted[id / 8] & (1u << (id % 8))) != 0;
}
