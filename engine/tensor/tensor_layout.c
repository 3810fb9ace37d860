#include "tensor_layout.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/alloc.h"
#include "ckptfmt.h"

/* A file past the bounds has no tensors: not an error, a verdict. */
#define TL_NONE FERRY_ERR_UNSUPPORTED

struct tl_build {
    struct tensor_layout *l;
    size_t cap;
    uint64_t base;         /* safetensors: where the data starts */
};

static int
tensor_layout_add(struct tl_build *b, const char *name, size_t name_len,
    uint64_t off, uint64_t len, unsigned width)
{
    struct tensor_layout *l = b->l;
    struct tensor_range *v;
    char *copy;

    if (len == 0)
        return 0;
    if (l->n >= TENSOR_LAYOUT_MAX || name_len > TENSOR_NAME_MAX)
        return TL_NONE;
    if ((v = xgrow(l->v, l->n, &b->cap, sizeof(*v), 64)) == NULL)
        return FERRY_ERR_NOMEM;
    l->v = v;
    if ((copy = arena_strndup(&l->names, name, name_len)) == NULL)
        return FERRY_ERR_NOMEM;
    v[l->n].name = copy;
    v[l->n].name_len = name_len;
    v[l->n].off = off;
    v[l->n].len = len;
    v[l->n].width = width;
    l->n++;
    return 0;
}

/* safetensors' dtypes by their element width; any other gets 1. */
static unsigned
tensor_layout_dtype_width(const char *d, size_t n)
{
    static const struct {
        const char *name;
        unsigned width;
    } w[] = {
        { "F16", 2 }, { "BF16", 2 }, { "I16", 2 }, { "U16", 2 },
        { "F32", 4 }, { "I32", 4 }, { "U32", 4 }, { "C64", 4 },
        { "F64", 8 }, { "I64", 8 }, { "U64", 8 },
    };
    size_t i;

    for (i = 0; d != NULL && i < sizeof(w) / sizeof(w[0]); i++)
        if (strlen(w[i].name) == n && memcmp(w[i].name, d, n) == 0)
            return w[i].width;
    return 1;
}

static int
tensor_layout_st_tensor(void *arg, const struct ckptfmt_st_tensor *t)
{
    struct tl_build *b = arg;

    /* The data start is known only after the header parsed: offsets are
     * kept relative and moved once it is. */
    return tensor_layout_add(b, t->key, t->key_len, t->begin,
        t->end - t->begin, tensor_layout_dtype_width(t->dtype, t->dtype_len));
}

/* PREFIX/data/N: one path component, "data", one digit or more. */
static int
tensor_layout_is_storage(const uint8_t *name, size_t n)
{
    size_t i = 0;

    while (i < n && name[i] != '/')
        i++;
    if (i == 0 || n - i < 7 || memcmp(name + i, "/data/", 6) != 0)
        return 0;
    for (i += 6; i < n; i++)
        if (name[i] < '0' || name[i] > '9')
            return 0;
    return 1;
}

static int
tensor_layout_zip_member(void *arg, const struct ckptfmt_zip_member *m)
{
    struct tl_build *b = arg;

    /* torch.save stores its storages; a compressed member is not one. */
    if (m->method != 0 || m->comp != m->uncomp ||
        !tensor_layout_is_storage(m->name, m->name_len))
        return 0;
    return tensor_layout_add(b, (const char *)m->name, m->name_len, m->data,
        m->comp, TENSOR_WIDTH_UNKNOWN);
}

static int
tensor_layout_from_npy(struct tl_build *b, const struct ckptfmt_npy *a)
{
    uint64_t w = a->item;

    if (a->kind == 'c')
        w /= 2;
    if (w != 1 && w != 2 && w != 4 && w != 8)
        w = 1;
    return tensor_layout_add(b, "npy", 3, a->data, a->item * a->count,
        (unsigned)w);
}

static int
tensor_layout_by_off(const void *x, const void *y)
{
    const struct tensor_range *a = x, *b = y;

    return a->off < b->off ? -1 : a->off > b->off;
}

static int
tensor_layout_name_cmp(const struct tensor_range *a,
    const struct tensor_range *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);

    if (c != 0)
        return c;
    return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* qsort's comparison over an array of tensor pointers, by name. */
static int
tensor_layout_by_name(const void *x, const void *y)
{
    const struct tensor_range *const *a = x, *const *b = y;

    return tensor_layout_name_cmp(*a, *b);
}

/* Tensors of l sorted by name (pointers into l->v), or NULL. */
static const struct tensor_range **
tensor_layout_names_sorted(const struct tensor_layout *l)
{
    const struct tensor_range **s;
    size_t i;

    if ((s = xmalloc(l->n * sizeof(*s) + 1)) == NULL)
        return NULL;
    for (i = 0; i < l->n; i++)
        s[i] = &l->v[i];
    qsort(s, l->n, sizeof(*s), tensor_layout_by_name);
    return s;
}

/* Sorted by offset, disjoint, within the file, names unique. */
static int
tensor_layout_check(struct tensor_layout *l)
{
    const struct tensor_range **s;
    size_t i;
    int r = 0;

    qsort(l->v, l->n, sizeof(*l->v), tensor_layout_by_off);
    for (i = 0; i < l->n; i++) {
        if (l->v[i].off > l->size || l->v[i].len > l->size - l->v[i].off)
            return TL_NONE;
        if (i > 0 && l->v[i].off < l->v[i - 1].off + l->v[i - 1].len)
            return TL_NONE;
    }
    if ((s = tensor_layout_names_sorted(l)) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 1; i < l->n && r == 0; i++)
        if (tensor_layout_name_cmp(s[i - 1], s[i]) == 0)
            r = TL_NONE;
    xfree(s);
    return r;
}

static int
tensor_layout_parse(const struct ckptfmt_src *s, struct tensor_layout *l)
{
    struct tl_build b = { l, 0, 0 };
    struct ckptfmt_npy npy;
    const char *why;
    uint8_t head[16];
    enum tensor_form form = TENSOR_FORM_NONE;
    size_t i;
    int r;

    if (s->size < 16)
        return TL_NONE;
    if ((r = ckptfmt_read(s, 0, head, sizeof(head))) != 0)
        return r;
    switch (ckptfmt_sniff(head)) {
    case CKPTFMT_SAFETENSORS:
        form = TENSOR_FORM_SAFETENSORS;
        r = ckptfmt_safetensors(s, head, tensor_layout_st_tensor, &b, &b.base,
            &why);
        for (i = 0; r == CKPTFMT_WHOLE && i < l->n; i++)
            l->v[i].off += b.base;
        break;
    case CKPTFMT_ZIP:
        form = TENSOR_FORM_TORCH;
        r = ckptfmt_zip(s, tensor_layout_zip_member, &b, &why);
        break;
    case CKPTFMT_NPY:
        form = TENSOR_FORM_NPY;
        if ((r = ckptfmt_npy(s, head, &npy, &why)) == CKPTFMT_WHOLE)
            r = tensor_layout_from_npy(&b, &npy);
        break;
    default:
        return TL_NONE;
    }
    if (r < 0)
        return r;
    if (r != CKPTFMT_WHOLE)
        return TL_NONE;
    if ((r = tensor_layout_check(l)) != 0)
        return r;
    l->form = form;
    return 0;
}

static int
tensor_layout_read(const struct ckptfmt_src *s, struct tensor_layout *l)
{
    int r;

    memset(l, 0, sizeof(*l));
    arena_init(&l->names);
    l->size = s->size;
    if ((r = tensor_layout_parse(s, l)) == 0)
        return 0;
    /* No tensors: as any file. */
    xfree(l->v);
    l->v = NULL;
    l->n = 0;
    l->form = TENSOR_FORM_NONE;
    return r == TL_NONE || r == FERRY_ERR_SHORT ? 0 : r;
}

int
tensor_layout_fd(int fd, uint64_t size, struct tensor_layout *l)
{
    struct ckptfmt_src s = { fd, NULL, size };

    return tensor_layout_read(&s, l);
}

int
tensor_layout_mem(const uint8_t *p, size_t n, struct tensor_layout *l)
{
    struct ckptfmt_src s = { -1, p, n };

    return tensor_layout_read(&s, l);
}

void
tensor_layout_cleanup(struct tensor_layout *l)
{
    xfree(l->v);
    l->v = NULL;
    l->n = 0;
    arena_cleanup(&l->names);
}

const char *
tensor_layout_form_name(enum tensor_form f)
{
    switch (f) {
    case TENSOR_FORM_SAFETENSORS:
        return "safetensors";
    case TENSOR_FORM_TORCH:
        return "torch";
    case TENSOR_FORM_NPY:
        return "npy";
    default:
        return "none";
    }
}

void
tensor_layout_span(const struct tensor_layout *l, uint64_t off, size_t *idx,
    uint64_t *end)
{
    size_t lo = 0, hi = l->n, mid;

    /* The first tensor that ends after off. */
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (l->v[mid].off + l->v[mid].len <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < l->n && l->v[lo].off <= off) {
        *idx = lo;
        *end = l->v[lo].off + l->v[lo].len;
        return;
    }
    *idx = SIZE_MAX;
    *end = lo < l->n ? l->v[lo].off : l->size;
}

int
tensor_layout_pair(const struct tensor_layout *l,
    const struct tensor_layout *ref, size_t **match)
{
    const struct tensor_range **s, *key, **hit;
    size_t i;

    *match = NULL;
    if (l->n == 0)
        return 0;
    if ((*match = xmalloc(l->n * sizeof(**match))) == NULL)
        return FERRY_ERR_NOMEM;
    if ((s = tensor_layout_names_sorted(ref)) == NULL) {
        xfree(*match);
        *match = NULL;
        return FERRY_ERR_NOMEM;
    }
    for (i = 0; i < l->n; i++) {
        key = &l->v[i];
        hit = ref->n == 0 ? NULL : bsearch(&key, s, ref->n, sizeof(*s),
            tensor_layout_by_name);
        (*match)[i] = hit != NULL && (*hit)->len == key->len ?
            (size_t)(*hit - ref->v) : SIZE_MAX;
    }
    xfree(s);
    return 0;
}
