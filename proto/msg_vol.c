/* msg_vol.c: encoders and decoders of the volume messages (msg_vol.h). */
#include "msg_vol.h"

#include <string.h>

#include "../common/rd.h"
#include "frame.h"
#include "limits.h"
#include "msg_int.h"

int
msg_vol_data_encode(struct buf *b, const struct msg_vol_data *m)
{
    size_t mark;
    int r;

    if (m->volume == 0 || m->len == 0 || m->len > PROTO_MAX_BLOCK)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_VOL_DATA, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->volume);
    if (r == 0)
        r = buf_put_str32(b, m->data, m->len);
    return msg_finish(b, mark, r);
}

int
msg_vol_data_decode(const uint8_t *p, size_t n, struct msg_vol_data *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->volume)) != 0 ||
        (e = rd_str32(&r, PROTO_MAX_BLOCK, &m->data, &m->len)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (m->volume == 0 || m->len == 0) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

static int
vol_opts_check(const void *v)
{
    const struct msg_vol_opts *m = v;

    if (m->threshold > PROTO_MAX_PACK_THRESHOLD ||
        m->volume_size > PROTO_MAX_VOLUME_SIZE)
        return FERRY_ERR_TOO_LARGE;
    if (m->volume_size < PROTO_MIN_VOLUME_SIZE ||
        m->compress > VOL_COMPRESS_LEVEL ||
        (m->compress == VOL_COMPRESS_LEVEL ? m->level < VOL_LEVEL_MIN ||
        m->level > VOL_LEVEL_MAX : m->level != 0))
        return FERRY_ERR_FORMAT;
    return 0;
}

MSG_CODEC(vol_opts, MSG_VOL_OPTS, vol_opts_check, 1,
    MSG_U64(vol_opts, threshold), MSG_U64(vol_opts, volume_size),
    MSG_U8(vol_opts, compress), MSG_U8(vol_opts, level))

/* VOL_BEGIN and VOL_FILE: the volume, their first member, is not 0. */
static int
vol_check(const void *v)
{
    return *(const uint32_t *)v == 0 ? FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(vol_begin, MSG_VOL_BEGIN, vol_check, 1,
    MSG_U32(vol_begin, volume))

MSG_CODEC(vol_file, MSG_VOL_FILE, vol_check, 1,
    MSG_U32(vol_file, volume), MSG_U32(vol_file, id),
    MSG_BYTES(vol_file, hash, HASH_LEN))

static int
vol_end_check(const void *v)
{
    const struct msg_vol_end *m = v;

    if (m->files > PROTO_MAX_VOLUME_FILES ||
        m->bytes > PROTO_MAX_VOLUME_SIZE)
        return FERRY_ERR_TOO_LARGE;
    return m->volume == 0 ? FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(vol_end, MSG_VOL_END, vol_end_check, 1,
    MSG_U32(vol_end, volume), MSG_U64(vol_end, bytes),
    MSG_U32(vol_end, files))
