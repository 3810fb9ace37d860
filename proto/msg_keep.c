/* msg_keep.c: encoders and decoders of the kept-volume messages
 * (msg_keep.h). */
#include "msg_keep.h"

#include <string.h>

#include "../common/rd.h"
#include "frame.h"
#include "limits.h"
#include "msg_int.h"
#include "msg_vol.h"

/* KEEP_VOL and KEEP_DONE share a layout: u32 count, u64 bytes, SHA-256.
 * The count is 1..PROTO_MAX_KEEP_VOLUMES, the bytes at most max. */
static int
keep_triple_encode(struct buf *b, uint8_t type, uint32_t count,
    uint64_t bytes, uint64_t max, const uint8_t *sha)
{
    size_t mark;
    int r;

    if (count == 0 || count > PROTO_MAX_KEEP_VOLUMES || bytes > max)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, type, &mark)) != 0)
        return r;
    r = buf_put_u32(b, count);
    if (r == 0)
        r = buf_put_u64(b, bytes);
    if (r == 0)
        r = buf_put(b, sha, PROTO_SHA256_LEN);
    return msg_finish(b, mark, r);
}

static int
keep_triple_decode(const uint8_t *p, size_t n, uint32_t *count,
    uint64_t *bytes, uint64_t max, uint8_t *sha)
{
    const uint8_t *h;
    struct rd r;
    int e;

    rd_init(&r, p, n);
    if ((e = rd_u32(&r, count)) != 0 || (e = rd_u64(&r, bytes)) != 0 ||
        (e = rd_bytes(&r, PROTO_SHA256_LEN, &h)) != 0 ||
        (e = rd_end(&r)) != 0)
        return e;
    memcpy(sha, h, PROTO_SHA256_LEN);
    if (*count > PROTO_MAX_KEEP_VOLUMES || *bytes > max)
        return FERRY_ERR_TOO_LARGE;
    return *count == 0 ? FERRY_ERR_FORMAT : 0;
}

int
msg_keep_vol_encode(struct buf *b, const struct msg_keep_vol *m)
{
    return keep_triple_encode(b, MSG_KEEP_VOL, m->volume, m->bytes,
        PROTO_MAX_VOLUME_SIZE, m->sha256);
}

int
msg_keep_vol_decode(const uint8_t *p, size_t n, struct msg_keep_vol *m)
{
    int e;

    memset(m, 0, sizeof(*m));
    if ((e = keep_triple_decode(p, n, &m->volume, &m->bytes,
        PROTO_MAX_VOLUME_SIZE, m->sha256)) != 0)
        memset(m, 0, sizeof(*m));
    return e;
}

int
msg_keep_man_encode(struct buf *b, const struct msg_keep_man *m)
{
    size_t mark;
    int r;

    if (m->len == 0 || m->len > PROTO_MAX_BLOCK ||
        m->offset > PROTO_MAX_KEEP_MANIFEST - m->len)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_KEEP_MAN, &mark)) != 0)
        return r;
    r = buf_put_u64(b, m->offset);
    if (r == 0)
        r = buf_put_str32(b, m->data, m->len);
    return msg_finish(b, mark, r);
}

int
msg_keep_man_decode(const uint8_t *p, size_t n, struct msg_keep_man *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u64(&r, &m->offset)) != 0 ||
        (e = rd_str32(&r, PROTO_MAX_BLOCK, &m->data, &m->len)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (m->offset > PROTO_MAX_KEEP_MANIFEST - m->len) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    if (m->len == 0) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

int
msg_keep_done_encode(struct buf *b, const struct msg_keep_done *m)
{
    return keep_triple_encode(b, MSG_KEEP_DONE, m->volumes,
        m->manifest_bytes, PROTO_MAX_KEEP_MANIFEST, m->sha256);
}

int
msg_keep_done_decode(const uint8_t *p, size_t n, struct msg_keep_done *m)
{
    int e;

    memset(m, 0, sizeof(*m));
    if ((e = keep_triple_decode(p, n, &m->volumes, &m->manifest_bytes,
        PROTO_MAX_KEEP_MANIFEST, m->sha256)) != 0)
        memset(m, 0, sizeof(*m));
    return e;
}
