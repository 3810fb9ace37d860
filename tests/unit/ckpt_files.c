#include "ckpt_files.h"

#include <stdio.h>
#include <string.h>

#include "../../common/buf.h"
#include "check.h"

static void
put_le(struct buf *b, uint64_t v, int n)
{
    int i;

    for (i = 0; i < n; i++)
        CHECK_OK(buf_put_u8(b, (uint8_t)(v >> (8 * i))));
}

static void
put_data(struct buf *b, const uint8_t *data, size_t n, unsigned seed)
{
    size_t i;

    if (data != NULL) {
        CHECK_OK(buf_put(b, data, n));
        return;
    }
    for (i = 0; i < n; i++)
        CHECK_OK(buf_put_u8(b, (uint8_t)(i * 7 + seed)));
}

static uint8_t *
take(struct buf *b, size_t *len)
{
    uint8_t *out;

    *len = buf_used(b);
    out = check_dup(buf_ptr(b), *len);
    buf_cleanup(b);
    return out;
}

uint8_t *
ckpt_zip(const struct ckpt_member *m, size_t n, int zip64, size_t *len)
{
    size_t i, cd, cdlen, z64, offset[64];
    struct buf b;

    CHECK(n <= 64);
    buf_init(&b, 64u << 20);
    for (i = 0; i < n; i++) {
        offset[i] = buf_used(&b);
        put_le(&b, 0x04034b50u, 4);
        put_le(&b, 20, 2);
        put_le(&b, 0, 2);
        put_le(&b, m[i].method, 2);
        put_le(&b, 0, 4);
        put_le(&b, 0x12345678u, 4);
        put_le(&b, m[i].len, 4);
        put_le(&b, m[i].len, 4);
        put_le(&b, strlen(m[i].name), 2);
        put_le(&b, 0, 2);
        CHECK_OK(buf_put(&b, m[i].name, strlen(m[i].name)));
        put_data(&b, m[i].data, m[i].len, (unsigned)i);
    }
    cd = buf_used(&b);
    for (i = 0; i < n; i++) {
        put_le(&b, 0x02014b50u, 4);
        put_le(&b, 20, 2);
        put_le(&b, 20, 2);
        put_le(&b, 0, 2);
        put_le(&b, m[i].method, 2);
        put_le(&b, 0, 4);
        put_le(&b, 0x12345678u, 4);
        put_le(&b, m[i].len, 4);
        put_le(&b, m[i].len, 4);
        put_le(&b, strlen(m[i].name), 2);
        put_le(&b, 0, 2 * 4);
        put_le(&b, 0, 4);
        put_le(&b, offset[i], 4);
        CHECK_OK(buf_put(&b, m[i].name, strlen(m[i].name)));
    }
    cdlen = buf_used(&b) - cd;
    if (zip64) {
        z64 = buf_used(&b);
        put_le(&b, 0x06064b50u, 4);
        put_le(&b, 44, 8);
        put_le(&b, 45, 2);
        put_le(&b, 45, 2);
        put_le(&b, 0, 8);
        put_le(&b, n, 8);
        put_le(&b, n, 8);
        put_le(&b, cdlen, 8);
        put_le(&b, cd, 8);
        put_le(&b, 0x07064b50u, 4);
        put_le(&b, 0, 4);
        put_le(&b, z64, 8);
        put_le(&b, 1, 4);
    }
    put_le(&b, 0x06054b50u, 4);
    put_le(&b, 0, 4);
    put_le(&b, n, 2);
    put_le(&b, zip64 ? 0xffff : n, 2);
    put_le(&b, cdlen, 4);
    put_le(&b, zip64 ? 0xffffffffu : cd, 4);
    put_le(&b, 0, 2);
    return take(&b, len);
}

uint8_t *
ckpt_torch(int zip64, size_t *len)
{
    static const struct ckpt_member m[] = {
        { "archive/data.pkl", NULL, 300, 0 },
        { "archive/data/0", NULL, 6000, 0 },
        { "archive/data/1", NULL, 4096, 0 },
        { "archive/version", NULL, 2, 0 },
    };

    return ckpt_zip(m, sizeof(m) / sizeof(m[0]), zip64, len);
}

uint8_t *
ckpt_safetensors(const char *hdr, size_t pad, const uint8_t *data,
    size_t data_len, size_t *len)
{
    struct buf b;
    size_t i;

    buf_init(&b, 64u << 20);
    put_le(&b, strlen(hdr) + pad, 8);
    CHECK_OK(buf_put(&b, hdr, strlen(hdr)));
    for (i = 0; i < pad; i++)
        CHECK_OK(buf_put_u8(&b, ' '));
    put_data(&b, data, data_len, 13);
    return take(&b, len);
}

uint8_t *
ckpt_npy(const char *descr, const char *shape, const uint8_t *data,
    size_t data_len, size_t *len)
{
    char hdr[128];
    size_t hl = 128 - 10, n;
    struct buf b;

    n = (size_t)snprintf(hdr, sizeof(hdr), "{'descr': '%s', "
        "'fortran_order': False, 'shape': %s, }", descr, shape);
    CHECK(n < hl);
    memset(hdr + n, ' ', hl - 1 - n);
    hdr[hl - 1] = '\n';
    buf_init(&b, 64u << 20);
    CHECK_OK(buf_put(&b, "\x93NUMPY\x01\x00", 8));
    put_le(&b, hl, 2);
    CHECK_OK(buf_put(&b, hdr, hl));
    put_data(&b, data, data_len, 0);
    return take(&b, len);
}
