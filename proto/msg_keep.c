/* msg_keep.c: encoders and decoders of the kept-volume messages
 * (msg_keep.h). */
#include "msg_keep.h"

#include <string.h>

#include "../common/rd.h"
#include "frame.h"
#include "limits.h"
#include "msg_int.h"
#include "msg_vol.h"

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

/* KEEP_VOL and KEEP_DONE: u32 count (1..PROTO_MAX_KEEP_VOLUMES), u64
 * bytes (at most max), SHA-256. */
static int
keep_check(uint32_t count, uint64_t bytes, uint64_t max)
{
    if (count > PROTO_MAX_KEEP_VOLUMES || bytes > max)
        return FERRY_ERR_TOO_LARGE;
    return count == 0 ? FERRY_ERR_FORMAT : 0;
}

static int
keep_vol_check(const void *v)
{
    const struct msg_keep_vol *m = v;

    return keep_check(m->volume, m->bytes, PROTO_MAX_VOLUME_SIZE);
}

static int
keep_done_check(const void *v)
{
    const struct msg_keep_done *m = v;

    return keep_check(m->volumes, m->manifest_bytes,
        PROTO_MAX_KEEP_MANIFEST);
}

MSG_CODEC(keep_vol, MSG_KEEP_VOL, keep_vol_check, 1,
    MSG_U32(keep_vol, volume), MSG_U64(keep_vol, bytes),
    MSG_BYTES(keep_vol, sha256, PROTO_SHA256_LEN))

MSG_CODEC(keep_done, MSG_KEEP_DONE, keep_done_check, 1,
    MSG_U32(keep_done, volumes), MSG_U64(keep_done, manifest_bytes),
    MSG_BYTES(keep_done, sha256, PROTO_SHA256_LEN))
