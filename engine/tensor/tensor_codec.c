#include "tensor_codec.h"

#include <string.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"

struct tensor_codec {
    struct tensor_piece *tp;
    uint8_t *ref;          /* the reference's bytes of one span */
    size_t ref_cap;
    struct buf trial;      /* a sample coded one way */
};

struct tensor_codec *
tensor_codec_new(void)
{
    struct tensor_codec *c = xcalloc(1, sizeof(*c));

    if (c == NULL)
        return NULL;
    if ((c->tp = tensor_piece_new()) == NULL) {
        xfree(c);
        return NULL;
    }
    buf_init(&c->trial, TENSOR_PIECE_BOUND(2 * TENSOR_CODEC_SAMPLE));
    return c;
}

void
tensor_codec_free(struct tensor_codec *c)
{
    if (c == NULL)
        return;
    tensor_piece_free(c->tp);
    xfree(c->ref);
    buf_cleanup(&c->trial);
    xfree(c);
}

/* How one span is coded. */
struct tensor_codec_span {
    const uint8_t *p, *ref;
    size_t n;
    struct tensor_piece_info info;
};

/* The size of the span's start (all of it when short) coded as info
 * says. */
static int
tensor_codec_try(struct tensor_codec *c, int level,
    const struct tensor_codec_span *s, const struct tensor_piece_info *info,
    size_t *size)
{
    size_t n = s->n < 2 * TENSOR_CODEC_SAMPLE ? s->n : TENSOR_CODEC_SAMPLE;
    int r;

    buf_reset(&c->trial);
    if ((r = tensor_piece_encode(c->tp, info, level, s->p, n, s->ref,
        &c->trial)) != 0)
        return r;
    *size = buf_used(&c->trial);
    return 0;
}

/* Picks s->info's mode and width among the candidates by their samples:
 * modes XOR and SUB when the span has a reference and o->mode is AUTO,
 * widths 2 and 4 when the tensor's is not known. */
static int
tensor_codec_choose(struct tensor_codec *c, const struct tensor_codec_opts *o,
    struct tensor_codec_span *s, unsigned width, uint64_t within)
{
    static const unsigned unknown[] = { 2, 4 };
    const unsigned *widths = width == TENSOR_WIDTH_UNKNOWN ? unknown :
        &width;
    size_t nw = width == TENSOR_WIDTH_UNKNOWN ? 2 : 1, nm, i, j, size;
    size_t best = SIZE_MAX;
    uint8_t modes[2];
    struct tensor_piece_info t = s->info;
    int r;

    if (s->ref == NULL) {
        modes[0] = TENSOR_PLAIN;
        nm = 1;
    } else if (o->mode == TENSOR_CODEC_AUTO) {
        modes[0] = TENSOR_XOR;
        modes[1] = TENSOR_SUB;
        nm = 2;
    } else {
        modes[0] = (uint8_t)o->mode;
        nm = 1;
    }
    for (i = 0; i < nw; i++) {
        for (j = 0; j < nm; j++) {
            t.width = (uint8_t)widths[i];
            t.mode = modes[j];
            /* The element grid: where the span's first whole element
             * starts, from the tensor's start. */
            t.lead = (uint8_t)((t.width - within % t.width) % t.width);
            if (nw * nm == 1) {
                s->info = t;
                return 0;
            }
            if ((r = tensor_codec_try(c, o->level, s, &t, &size)) != 0)
                return r;
            if (size < best) {
                best = size;
                s->info = t;
            }
        }
    }
    return 0;
}

static void
tensor_codec_count(struct tensor_codec_stats *st,
    const struct tensor_piece_info *i, size_t raw, size_t coded)
{
    if (st == NULL)
        return;
    st->pieces[i->mode]++;
    st->raw[i->mode] += raw;
    st->coded[i->mode] += coded;
    st->wide[i->width]++;
}

/* The span [at, end) of the block: a gap, or part of tensor idx. */
static int
tensor_codec_span(struct tensor_codec *c, const struct tensor_codec_opts *o,
    const struct tensor_layout *l, const struct tensor_codec_ref *ref,
    size_t idx, uint64_t at, const uint8_t *p, size_t n, struct buf *out,
    struct tensor_codec_stats *st)
{
    const struct tensor_range *t = idx == SIZE_MAX ? NULL : &l->v[idx];
    const struct tensor_range *rt = NULL;
    struct tensor_codec_span s;
    size_t before = buf_used(out);
    uint64_t within = 0;
    unsigned width = 1;
    uint8_t *q;
    int r;

    memset(&s, 0, sizeof(s));
    s.p = p;
    s.n = n;
    s.info.width = 1;
    if (t != NULL) {
        within = at - t->off;
        width = o->width != 0 ? o->width : t->width;
        if (ref != NULL && ref->match[idx] != SIZE_MAX)
            rt = &ref->layout->v[ref->match[idx]];
    }
    if (rt != NULL) {
        if ((q = xroom(c->ref, &c->ref_cap, n)) == NULL)
            return FERRY_ERR_NOMEM;
        c->ref = q;
        if ((r = ref->read(ref->arg, rt->off + within, c->ref, n)) != 0)
            return r;
        s.ref = c->ref;
        s.info.ref_off = rt->off + within;
    }
    if (t != NULL && (r = tensor_codec_choose(c, o, &s, width, within)) != 0)
        return r;
    if ((r = tensor_piece_put(c->tp, &s.info, o->level, p, n, s.ref,
        out)) != 0)
        return r;
    tensor_codec_count(st, &s.info, n, buf_used(out) - before);
    return 0;
}

int
tensor_codec_block(struct tensor_codec *c, const struct tensor_codec_opts *o,
    const struct tensor_layout *l, const struct tensor_codec_ref *ref,
    uint64_t off, const uint8_t *p, size_t n, struct buf *out,
    struct tensor_codec_stats *st)
{
    uint64_t at = off, end;
    size_t idx, count = 0, len;
    int r;

    if (n > PROTO_MAX_TENSOR_PIECE || off > l->size || n > l->size - off ||
        (o->width != 0 && o->width != 1 && o->width != 2 &&
        o->width != 4 && o->width != 8) ||
        (o->mode != TENSOR_CODEC_AUTO && o->mode != TENSOR_XOR &&
        o->mode != TENSOR_SUB))
        return FERRY_ERR_USAGE;
    while (at < off + n) {
        tensor_layout_span(l, at, &idx, &end);
        if (end > off + n)
            end = off + n;
        /* The last piece a sequence may hold takes the rest as it is. */
        if (++count == PROTO_MAX_TENSOR_PIECES) {
            idx = SIZE_MAX;
            end = off + n;
        }
        len = (size_t)(end - at);
        if ((r = tensor_codec_span(c, o, l, ref, idx, at, p + (at - off), len,
            out, st)) != 0)
            return r;
        at = end;
    }
    return 0;
}

int
tensor_codec_read_file(void *arg, uint64_t off, uint8_t *dst, size_t n)
{
    const struct tensor_codec_file *f = arg;
    size_t got;
    int r;

    if (off > f->size || n > f->size - off)
        return FERRY_ERR_PROTOCOL;
    if ((r = fsx_pread_full(f->fd, dst, n, off, &got)) != 0)
        return r;
    return got == n ? 0 : FERRY_ERR_CHANGED;
}
