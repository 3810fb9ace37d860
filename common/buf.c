#include "buf.h"

#include <assert.h>
#include <string.h>

#include "alloc.h"

void
buf_init(struct buf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void
buf_cleanup(struct buf *b)
{
    xfree(b->data);
    memset(b, 0, sizeof(*b));
}

void
buf_reset(struct buf *b)
{
    b->off = b->len = 0;
}

static int
buf_make_room(struct buf *b, size_t n)
{
    size_t used = buf_used(b), want, ncap;
    uint8_t *nd;

    if (n > b->max || used > b->max - n)
        return FERRY_ERR_TOO_LARGE;
    if (b->len + n <= b->cap)
        return 0;
    /* Compact first: a FIFO that is drained from the front mostly needs
     * no new memory at all. */
    if (b->off > 0 && used + n <= b->cap) {
        memmove(b->data, b->data + b->off, used);
        b->off = 0;
        b->len = used;
        return 0;
    }
    want = used + n;
    ncap = b->cap < 256 ? 256 : b->cap;
    while (ncap < want)
        ncap = ncap > SIZE_MAX / 2 ? want : ncap * 2;
    if (ncap > b->max)
        ncap = b->max > want ? b->max : want;
    if (b->off > 0) {
        memmove(b->data, b->data + b->off, used);
        b->off = 0;
        b->len = used;
    }
    if ((nd = xrealloc(b->data, ncap)) == NULL)
        return FERRY_ERR_NOMEM;
    b->data = nd;
    b->cap = ncap;
    return 0;
}

int
buf_reserve(struct buf *b, size_t n, uint8_t **p)
{
    int r;

    if (p != NULL)
        *p = NULL;
    if ((r = buf_make_room(b, n)) != 0)
        return r;
    /* An empty reservation in a buf that never allocated has no storage:
     * NULL + 0 is undefined behaviour (UBSan reports it under clang). */
    if (p != NULL && b->data != NULL)
        *p = b->data + b->len;
    b->len += n;
    return 0;
}

void
buf_unreserve(struct buf *b, size_t n)
{
    assert(n <= buf_used(b));
    b->len -= n;
}

int
buf_put(struct buf *b, const void *data, size_t n)
{
    uint8_t *p;
    int r;

    if ((r = buf_reserve(b, n, &p)) != 0)
        return r;
    if (n > 0)
        memcpy(p, data, n);
    return 0;
}

int
buf_put_u8(struct buf *b, uint8_t v)
{
    return buf_put(b, &v, 1);
}

int
buf_put_u16(struct buf *b, uint16_t v)
{
    uint8_t p[2] = { (uint8_t)(v >> 8), (uint8_t)v };

    return buf_put(b, p, 2);
}

void
buf_set_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

int
buf_put_u32(struct buf *b, uint32_t v)
{
    uint8_t p[4];

    buf_set_u32(p, v);
    return buf_put(b, p, 4);
}

int
buf_put_u64(struct buf *b, uint64_t v)
{
    uint8_t p[8];

    buf_set_u32(p, (uint32_t)(v >> 32));
    buf_set_u32(p + 4, (uint32_t)v);
    return buf_put(b, p, 8);
}

int
buf_put_str16(struct buf *b, const void *s, size_t n)
{
    int r;

    if (n > UINT16_MAX)
        return FERRY_ERR_TOO_LARGE;
    if ((r = buf_make_room(b, 2 + n)) != 0 ||
        (r = buf_put_u16(b, (uint16_t)n)) != 0 ||
        (r = buf_put(b, s, n)) != 0)
        return r;
    return 0;
}

int
buf_put_str32(struct buf *b, const void *s, size_t n)
{
    int r;

    if (n > UINT32_MAX)
        return FERRY_ERR_TOO_LARGE;
    if ((r = buf_make_room(b, 4 + n)) != 0 ||
        (r = buf_put_u32(b, (uint32_t)n)) != 0 ||
        (r = buf_put(b, s, n)) != 0)
        return r;
    return 0;
}

void
buf_consume(struct buf *b, size_t n)
{
    assert(n <= buf_used(b));
    b->off += n;
    if (b->off == b->len)
        b->off = b->len = 0;
}
