/* msg_vol.c: encoders and decoders of the volume messages (msg_vol.h). */
#include "msg_vol.h"

#include <string.h>

#include "../common/rd.h"
#include "frame.h"
#include "limits.h"
#include "msg_int.h"

static int
vol_opts_valid(const struct msg_vol_opts *m)
{
    if (m->volume_size < PROTO_MIN_VOLUME_SIZE ||
        m->volume_size > PROTO_MAX_VOLUME_SIZE ||
        m->compress > VOL_COMPRESS_LEVEL)
        return 0;
    if (m->compress == VOL_COMPRESS_LEVEL)
        return m->level >= VOL_LEVEL_MIN && m->level <= VOL_LEVEL_MAX;
    return m->level == 0;
}

int
msg_vol_opts_encode(struct buf *b, const struct msg_vol_opts *m)
{
    size_t mark;
    int r;

    if (m->threshold > PROTO_MAX_PACK_THRESHOLD || !vol_opts_valid(m))
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_VOL_OPTS, &mark)) != 0)
        return r;
    r = buf_put_u64(b, m->threshold);
    if (r == 0)
        r = buf_put_u64(b, m->volume_size);
    if (r == 0)
        r = buf_put_u8(b, m->compress);
    if (r == 0)
        r = buf_put_u8(b, m->level);
    return msg_finish(b, mark, r);
}

int
msg_vol_opts_decode(const uint8_t *p, size_t n, struct msg_vol_opts *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u64(&r, &m->threshold)) != 0 ||
        (e = rd_u64(&r, &m->volume_size)) != 0 ||
        (e = rd_u8(&r, &m->compress)) != 0 ||
        (e = rd_u8(&r, &m->level)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (m->threshold > PROTO_MAX_PACK_THRESHOLD ||
        m->volume_size > PROTO_MAX_VOLUME_SIZE) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    if (!vol_opts_valid(m)) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

int
msg_vol_begin_encode(struct buf *b, const struct msg_vol_begin *m)
{
    size_t mark;
    int r;

    if (m->volume == 0)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_VOL_BEGIN, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->volume);
    return msg_finish(b, mark, r);
}

int
msg_vol_begin_decode(const uint8_t *p, size_t n, struct msg_vol_begin *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->volume)) != 0 || (e = rd_end(&r)) != 0)
        goto fail;
    if (m->volume == 0) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

int
msg_vol_file_encode(struct buf *b, const struct msg_vol_file *m)
{
    size_t mark;
    int r;

    if (m->volume == 0)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_VOL_FILE, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->volume);
    if (r == 0)
        r = buf_put_u32(b, m->id);
    if (r == 0)
        r = msg_put_hash(b, &m->hash);
    return msg_finish(b, mark, r);
}

int
msg_vol_file_decode(const uint8_t *p, size_t n, struct msg_vol_file *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->volume)) != 0 ||
        (e = rd_u32(&r, &m->id)) != 0 ||
        (e = msg_get_hash(&r, &m->hash)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (m->volume == 0) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

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

int
msg_vol_end_encode(struct buf *b, const struct msg_vol_end *m)
{
    size_t mark;
    int r;

    if (m->volume == 0 || m->files > PROTO_MAX_VOLUME_FILES ||
        m->bytes > PROTO_MAX_VOLUME_SIZE)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_VOL_END, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->volume);
    if (r == 0)
        r = buf_put_u64(b, m->bytes);
    if (r == 0)
        r = buf_put_u32(b, m->files);
    return msg_finish(b, mark, r);
}

int
msg_vol_end_decode(const uint8_t *p, size_t n, struct msg_vol_end *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->volume)) != 0 ||
        (e = rd_u64(&r, &m->bytes)) != 0 ||
        (e = rd_u32(&r, &m->files)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (m->files > PROTO_MAX_VOLUME_FILES ||
        m->bytes > PROTO_MAX_VOLUME_SIZE) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    if (m->volume == 0) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}
