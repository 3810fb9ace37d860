/* msg_vol.c: encoders and decoders of the volume messages (msg_vol.h). */
#include "msg_vol.h"

#include "limits.h"
#include "msg_int.h"

/* VOL_DATA: u32 volume, str32 data. A frame carries up to
 * PROTO_MAX_BLOCK bytes, so walking two fields is nothing beside them. */
static int
vol_data_check(const void *v)
{
    const struct msg_vol_data *m = v;

    return m->volume == 0 || m->len == 0 ? FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(vol_data, MSG_VOL_DATA, vol_data_check, 1,
    MSG_U32(vol_data, volume), MSG_BLOB(vol_data, data, len, PROTO_MAX_BLOCK))

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
