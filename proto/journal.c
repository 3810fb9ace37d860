#include "journal.h"

#include <string.h>

#include "../common/fsx.h"
#include "../common/rd.h"
#include "limits.h"

static uint64_t
journal_check(const uint8_t *p, size_t n)
{
    return hash_name64(p, n);
}

int
journal_header_encode(struct buf *b, const struct journal_header *h)
{
    size_t start = buf_used(b);
    int r;

    if (h->path_len == 0 || h->path_len > PROTO_MAX_PATH)
        return FERRY_ERR_USAGE;
    r = buf_put(b, JOURNAL_MAGIC, 4);
    if (r == 0)
        r = buf_put_u32(b, h->block_size);
    if (r == 0)
        r = buf_put_u64(b, h->size);
    if (r == 0)
        r = buf_put_u64(b, (uint64_t)h->mtime_sec);
    if (r == 0)
        r = buf_put_u32(b, h->mtime_nsec);
    if (r == 0)
        r = buf_put_u32(b, h->mode);
    if (r == 0)
        r = buf_put_str16(b, h->path, h->path_len);
    if (r == 0)
        r = buf_put_u64(b, journal_check(buf_ptr(b) + start,
            buf_used(b) - start));
    if (r != 0)
        buf_unreserve(b, buf_used(b) - start);
    return r;
}

int
journal_record_encode(struct buf *b, const struct journal_record *rec)
{
    size_t start = buf_used(b);
    int r;

    r = buf_put_u64(b, rec->index);
    if (r == 0)
        r = buf_put(b, rec->hash.b, HASH_LEN);
    if (r == 0)
        r = buf_put_u64(b, journal_check(buf_ptr(b) + start,
            buf_used(b) - start));
    if (r != 0)
        buf_unreserve(b, buf_used(b) - start);
    return r;
}

int
journal_header_decode(const uint8_t *p, size_t n, struct journal_header *h,
    size_t *used)
{
    const uint8_t *magic, *path;
    uint64_t sec, check;
    size_t plen;
    struct rd r;
    int e;

    memset(h, 0, sizeof(*h));
    *used = 0;
    rd_init(&r, p, n);
    if (n >= 4 && memcmp(p, JOURNAL_MAGIC_V1, 4) == 0)
        return FERRY_ERR_VERSION;
    if ((e = rd_bytes(&r, 4, &magic)) != 0 ||
        (e = rd_u32(&r, &h->block_size)) != 0 ||
        (e = rd_u64(&r, &h->size)) != 0 ||
        (e = rd_u64(&r, &sec)) != 0 ||
        (e = rd_u32(&r, &h->mtime_nsec)) != 0 ||
        (e = rd_u32(&r, &h->mode)) != 0 ||
        (e = rd_str16(&r, PROTO_MAX_PATH, &path, &plen)) != 0)
        goto fail;
    if ((e = rd_u64(&r, &check)) != 0)
        goto fail;
    e = FERRY_ERR_FORMAT;
    if (memcmp(magic, JOURNAL_MAGIC, 4) != 0 ||
        check != journal_check(p, n - r.len - 8) ||
        h->block_size < PROTO_MIN_BLOCK || h->block_size > PROTO_MAX_BLOCK ||
        (h->block_size & (h->block_size - 1)) != 0 ||
        h->size > (uint64_t)INT64_MAX || h->mtime_nsec >= 1000000000u ||
        (h->mode & ~07777u) != 0 ||
        fsx_path_check((const char *)path, plen) != 0)
        goto fail;
    h->mtime_sec = (int64_t)sec;
    h->path = (const char *)path;
    h->path_len = plen;
    *used = n - r.len;
    return 0;
fail:
    memset(h, 0, sizeof(*h));
    return e;
}

int
journal_record_decode(const uint8_t *p, size_t n, struct journal_record *rec)
{
    uint64_t check;
    struct rd r;
    int e;

    memset(rec, 0, sizeof(*rec));
    rd_init(&r, p, n);
    if ((e = rd_u64(&r, &rec->index)) != 0 ||
        (e = rd_copy(&r, rec->hash.b, HASH_LEN)) != 0 ||
        (e = rd_u64(&r, &check)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (check != journal_check(p, JOURNAL_RECORD_LEN - 8)) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(rec, 0, sizeof(*rec));
    return e;
}
