/* msg_keep.c: encoders and decoders of the kept-volume messages
 * (msg_keep.h). */
#include "msg_keep.h"

#include "limits.h"
#include "msg_int.h"
#include "msg_vol.h"

/* KEEP_MAN: u64 offset, str32 data. */
static int
keep_man_check(const void *v)
{
    const struct msg_keep_man *m = v;

    if (m->offset > PROTO_MAX_KEEP_MANIFEST - m->len)
        return FERRY_ERR_TOO_LARGE;
    return m->len == 0 ? FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(keep_man, MSG_KEEP_MAN, keep_man_check, 1,
    MSG_U64(keep_man, offset), MSG_BLOB(keep_man, data, len, PROTO_MAX_BLOCK))

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
