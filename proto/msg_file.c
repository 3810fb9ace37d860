#include "msg.h"

#include <string.h>

#include "../common/fsx.h"
#include "../common/rd.h"
#include "frame.h"
#include "msg_int.h"

/* ENTRY */

int
msg_entry_encode(struct buf *b, const struct msg_entry *m)
{
    size_t mark;
    int r;

    if (m->kind == ENTRY_SYMLINK ? m->target.len == 0 : m->target.len != 0)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_ENTRY, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->id);
    if (r == 0)
        r = buf_put_u8(b, m->kind);
    if (r == 0)
        r = buf_put_u32(b, m->mode);
    if (r == 0)
        r = buf_put_u64(b, m->size);
    if (r == 0)
        r = buf_put_u64(b, (uint64_t)m->mtime_sec);
    if (r == 0)
        r = buf_put_u32(b, m->mtime_nsec);
    if (r == 0)
        r = buf_put_u8(b, (uint8_t)((m->has_hash ? 1 : 0) |
            (m->state & ENTRY_S_KNOWN) << 1));
    if (r == 0 && m->has_hash)
        r = msg_put_hash(b, &m->hash);
    if (r == 0)
        r = msg_put_str(b, &m->path, PROTO_MAX_PATH);
    if (r == 0)
        r = msg_put_str(b, &m->target, PROTO_MAX_LINK);
    return msg_finish(b, mark, r);
}

int
msg_entry_decode(const uint8_t *p, size_t n, struct msg_entry *m)
{
    uint64_t sec;
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->id)) != 0 ||
        (e = rd_u8(&r, &m->kind)) != 0 ||
        (e = rd_u32(&r, &m->mode)) != 0 ||
        (e = rd_u64(&r, &m->size)) != 0 ||
        (e = rd_u64(&r, &sec)) != 0 ||
        (e = rd_u32(&r, &m->mtime_nsec)) != 0 ||
        (e = rd_u8(&r, &m->has_hash)) != 0)
        goto fail;
    /* The byte: bit 0 has_hash, the bits above the state. */
    m->state = m->has_hash >> 1;
    m->has_hash &= 1;
    if ((m->state & ~ENTRY_S_KNOWN) != 0 || ((m->state & ENTRY_S_TORN) &&
        (m->state & ENTRY_S_WHOLE)) || ((m->state & ENTRY_S_BUSY) &&
        (m->state & ENTRY_S_IDLE))) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    if ((m->has_hash && (e = msg_get_hash(&r, &m->hash)) != 0) ||
        (e = msg_get_str(&r, PROTO_MAX_PATH, &m->path)) != 0 ||
        (e = msg_get_str(&r, PROTO_MAX_LINK, &m->target)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    m->mtime_sec = (int64_t)sec;
    e = FERRY_ERR_FORMAT;
    if (m->kind < ENTRY_FILE || m->kind > ENTRY_SYMLINK ||
        (m->mode & ~07777u) != 0 || m->mtime_nsec >= 1000000000u ||
        (m->kind == ENTRY_SYMLINK) != (m->target.len > 0) ||
        (m->kind != ENTRY_FILE && (m->size != 0 || m->has_hash ||
        m->state != 0)) ||
        m->size > (uint64_t)INT64_MAX ||
        (m->target.len > 0 && memchr(m->target.p, '\0', m->target.len)))
        goto fail;
    if ((e = fsx_path_check(m->path.p, m->path.len)) != 0)
        goto fail;
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

static int
msg_reply_check(const void *v)
{
    const struct msg_reply *m = v;

    if (m->action < REPLY_SKIP || m->action > REPLY_FAIL ||
        (m->flags & ~REPLY_F_KNOWN) != 0 ||
        (m->action != REPLY_WANT && m->flags != 0 &&
        (m->action != REPLY_SKIP || m->flags != REPLY_F_ADOPTED)) ||
        ((m->flags & REPLY_F_ADOPTED) && m->action != REPLY_SKIP) ||
        (m->flags & (REPLY_F_DELTA | REPLY_F_TENSOR)) ==
        (REPLY_F_DELTA | REPLY_F_TENSOR) ||
        (m->action == REPLY_FAIL) != (m->code != 0))
        return FERRY_ERR_FORMAT;
    return 0;
}

MSG_CODEC(reply, MSG_REPLY, msg_reply_check, 0,
    MSG_U32(reply, id), MSG_U8(reply, action), MSG_U8(reply, flags),
    MSG_U32(reply, code), MSG_TEXT(reply, text, PROTO_MAX_MESSAGE))

/* SIGS: u32 id, u64 first, u32 count, u8 flags, [count x hash]. The
 * count bounds what follows: TOO_LARGE past its limit. */
static int
msg_sigs_check(const void *v)
{
    const struct msg_sigs *m = v;

    if (m->count > PROTO_MAX_SIGS)
        return FERRY_ERR_TOO_LARGE;
    return m->count > 0 && (m->flags & ~SIGS_F_KNOWN) == 0 &&
        m->first <= (uint64_t)INT64_MAX - m->count ? 0 : FERRY_ERR_FORMAT;
}

MSG_CODEC(sigs, MSG_SIGS, msg_sigs_check, 1,
    MSG_U32(sigs, id), MSG_U64(sigs, first), MSG_U32(sigs, count),
    MSG_U8(sigs, flags),
    MSG_ARRAY_IF(sigs, hashes, count, HASH_LEN, flags, SIGS_F_HAVE))

static int
msg_match_check(const void *v)
{
    const struct msg_match *m = v;

    if (m->count > PROTO_MAX_SIGS)
        return FERRY_ERR_TOO_LARGE;
    return m->count == 0 || m->first > (uint64_t)INT64_MAX - m->count ?
        FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(match, MSG_MATCH, msg_match_check, 1,
    MSG_U32(match, id), MSG_U64(match, first), MSG_U32(match, count))

/* BLOCK: u32 id, u64 offset, u8 flags, u32 raw_len, hash, str32 data. */

#define BLOCK_FIXED (4 + 8 + 1 + 4 + HASH_LEN + 4)

static int
msg_block_valid(const struct msg_block *m)
{
    if (m->raw_len == 0 || m->raw_len > PROTO_MAX_BLOCK ||
        (m->flags & ~BLOCK_F_KNOWN) != 0 ||
        m->offset > (uint64_t)INT64_MAX - m->raw_len)
        return 0;
    if (m->flags & BLOCK_F_ZERO)
        return m->flags == BLOCK_F_ZERO && m->data_len == 0;
    if (m->flags & BLOCK_F_ZSTD)
        return m->data_len > 0 && m->data_len < m->raw_len;
    return m->data_len == m->raw_len;
}

static void
msg_block_put_fixed(uint8_t *q, const struct msg_block *m)
{
    buf_set_u32(q, m->id);
    buf_set_u32(q + 4, (uint32_t)(m->offset >> 32));
    buf_set_u32(q + 8, (uint32_t)m->offset);
    q[12] = m->flags;
    buf_set_u32(q + 13, m->raw_len);
    memcpy(q + 17, m->hash.b, HASH_LEN);
    buf_set_u32(q + 17 + HASH_LEN, (uint32_t)m->data_len);
}

int
msg_block_reserve(struct buf *b, size_t data_cap, size_t *mark,
    uint8_t **data)
{
    uint8_t *q;
    int r;

    *data = NULL;
    if (data_cap > PROTO_MAX_BLOCK)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_BLOCK, mark)) != 0)
        return r;
    if ((r = buf_reserve(b, BLOCK_FIXED + data_cap, &q)) != 0) {
        buf_unreserve(b, PROTO_FRAME_HEADER);
        return r;
    }
    *data = q + BLOCK_FIXED;
    return 0;
}

int
msg_block_commit(struct buf *b, size_t mark, size_t data_cap,
    const struct msg_block *m)
{
    uint8_t *q = b->data + b->off + mark + PROTO_FRAME_HEADER;

    if (m->data_len > data_cap || !msg_block_valid(m)) {
        buf_unreserve(b, buf_used(b) - mark);
        return FERRY_ERR_USAGE;
    }
    msg_block_put_fixed(q, m);
    buf_unreserve(b, data_cap - m->data_len);
    return frame_finish(b, mark);
}

int
msg_block_encode(struct buf *b, const struct msg_block *m)
{
    uint8_t *data;
    size_t mark;
    int r;

    if (!msg_block_valid(m))
        return FERRY_ERR_USAGE;
    if ((r = msg_block_reserve(b, m->data_len, &mark, &data)) != 0)
        return r;
    if (m->data_len > 0)
        memcpy(data, m->data, m->data_len);
    return msg_block_commit(b, mark, m->data_len, m);
}

int
msg_block_decode(const uint8_t *p, size_t n, struct msg_block *m)
{
    const uint8_t *data;
    size_t len;
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->id)) != 0 ||
        (e = rd_u64(&r, &m->offset)) != 0 ||
        (e = rd_u8(&r, &m->flags)) != 0 ||
        (e = rd_u32(&r, &m->raw_len)) != 0 ||
        (e = msg_get_hash(&r, &m->hash)) != 0 ||
        (e = rd_str32(&r, PROTO_MAX_BLOCK, &data, &len)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    m->data = data;
    m->data_len = len;
    if (!msg_block_valid(m)) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

MSG_CODEC(file_end, MSG_FILE_END, NULL, 0,
    MSG_U32(file_end, id), MSG_U32(file_end, code),
    MSG_BYTES(file_end, hash, HASH_LEN),
    MSG_TEXT(file_end, text, PROTO_MAX_MESSAGE))

MSG_CODEC(file_done, MSG_FILE_DONE, NULL, 0,
    MSG_U32(file_done, id), MSG_U32(file_done, code),
    MSG_TEXT(file_done, text, PROTO_MAX_MESSAGE))
