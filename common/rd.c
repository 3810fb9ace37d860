#include "rd.h"

#include <string.h>

void
rd_init(struct rd *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
}

uint32_t
rd_peek_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
        (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

int
rd_bytes(struct rd *r, size_t n, const uint8_t **ptr)
{
    if (ptr != NULL)
        *ptr = NULL;
    if (n > r->len)
        return FERRY_ERR_SHORT;
    if (ptr != NULL)
        *ptr = r->p;
    /* A reader over NULL (no bytes) stays put: NULL + 0 is undefined
     * behaviour, which clang's UBSan reports. */
    if (n > 0) {
        r->p += n;
        r->len -= n;
    }
    return 0;
}

int
rd_copy(struct rd *r, void *out, size_t n)
{
    const uint8_t *p;
    int e;

    if ((e = rd_bytes(r, n, &p)) != 0) {
        if (out != NULL)
            memset(out, 0, n);
        return e;
    }
    if (out != NULL && n > 0)
        memcpy(out, p, n);
    return 0;
}

int
rd_u8(struct rd *r, uint8_t *v)
{
    const uint8_t *p;
    int e;

    if (v != NULL)
        *v = 0;
    if ((e = rd_bytes(r, 1, &p)) != 0)
        return e;
    if (v != NULL)
        *v = p[0];
    return 0;
}

int
rd_u16(struct rd *r, uint16_t *v)
{
    const uint8_t *p;
    int e;

    if (v != NULL)
        *v = 0;
    if ((e = rd_bytes(r, 2, &p)) != 0)
        return e;
    if (v != NULL)
        *v = (uint16_t)(p[0] << 8 | p[1]);
    return 0;
}

int
rd_u32(struct rd *r, uint32_t *v)
{
    const uint8_t *p;
    int e;

    if (v != NULL)
        *v = 0;
    if ((e = rd_bytes(r, 4, &p)) != 0)
        return e;
    if (v != NULL)
        *v = rd_peek_u32(p);
    return 0;
}

int
rd_u64(struct rd *r, uint64_t *v)
{
    const uint8_t *p;
    int e;

    if (v != NULL)
        *v = 0;
    if ((e = rd_bytes(r, 8, &p)) != 0)
        return e;
    if (v != NULL)
        *v = (uint64_t)rd_peek_u32(p) << 32 | rd_peek_u32(p + 4);
    return 0;
}

static int
rd_str(struct rd *r, size_t lenbytes, size_t max, const uint8_t **ptr,
    size_t *len)
{
    struct rd save = *r;
    uint32_t n32 = 0;
    uint16_t n16 = 0;
    size_t n;
    int e;

    if (ptr != NULL)
        *ptr = NULL;
    if (len != NULL)
        *len = 0;
    e = lenbytes == 2 ? rd_u16(r, &n16) : rd_u32(r, &n32);
    if (e != 0)
        return e;
    n = lenbytes == 2 ? n16 : n32;
    if (n > max) {
        *r = save;
        return FERRY_ERR_TOO_LARGE;
    }
    if ((e = rd_bytes(r, n, ptr)) != 0) {
        *r = save;
        return e;
    }
    if (len != NULL)
        *len = n;
    return 0;
}

int
rd_str16(struct rd *r, size_t max, const uint8_t **ptr, size_t *len)
{
    return rd_str(r, 2, max, ptr, len);
}

int
rd_str32(struct rd *r, size_t max, const uint8_t **ptr, size_t *len)
{
    return rd_str(r, 4, max, ptr, len);
}

int
rd_end(const struct rd *r)
{
    return r->len == 0 ? 0 : FERRY_ERR_TRAILING;
}
