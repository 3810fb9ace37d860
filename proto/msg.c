#include "msg.h"

#include <errno.h>
#include <string.h>

#include "../common/fsx.h"
#include "../common/rd.h"
#include "frame.h"
#include "msg_int.h"

static const struct msg_info msg_infos[] = {
#define MSG_INFO(num, NAME, name, dir, stream0, cap, codec) \
    [num] = { #NAME, MSG_DIR_##dir, stream0, cap },
    MSG_TABLE(MSG_INFO)
#undef MSG_INFO
};

_Static_assert(sizeof(msg_infos) / sizeof(msg_infos[0]) == MSG_TYPE_MAX + 1,
    "MSG_TYPE_MAX is not the largest number of msg_table.h");

const struct msg_info *
msg_info(uint8_t type)
{
    return type <= MSG_TYPE_MAX && msg_infos[type].name != NULL ?
        &msg_infos[type] : NULL;
}

const char *
msg_type_name(uint8_t type)
{
    const struct msg_info *i = msg_info(type);

    return i != NULL ? i->name : "?";
}

int
msg_type_known(uint8_t type)
{
    return msg_info(type) != NULL;
}

static int msg_empty_encode(struct buf *b, uint8_t type);

/* Encoding helpers. Each encoder begins a frame, appends fields chained
 * with ||, and finishes; on any failure the partial frame is removed. */

int
msg_finish(struct buf *b, size_t mark, int r)
{
    if (r == 0)
        return frame_finish(b, mark);
    buf_unreserve(b, buf_used(b) - mark);
    return r;
}

int
msg_put_str(struct buf *b, const struct msg_str *s, size_t max)
{
    if (s->len > max)
        return FERRY_ERR_USAGE;
    return buf_put_str16(b, s->p, s->len);
}

int
msg_put_hash(struct buf *b, const struct hash128 *h)
{
    return buf_put(b, h->b, HASH_LEN);
}

int
msg_get_str(struct rd *r, size_t max, struct msg_str *s)
{
    const uint8_t *p;
    size_t n;
    int e;

    s->p = NULL;
    s->len = 0;
    if ((e = rd_str16(r, max, &p, &n)) != 0)
        return e;
    s->p = (const char *)p;
    s->len = n;
    return 0;
}

int
msg_get_hash(struct rd *r, struct hash128 *h)
{
    return rd_copy(r, h->b, HASH_LEN);
}

static const struct msg_codec *const msg_codecs[MSG_TYPE_MAX + 1] = {
#define MSG_CODEC_PTR_F(name) &msg_##name##_codec
#define MSG_CODEC_PTR_H(name) NULL
#define MSG_CODEC_PTR(num, NAME, name, dir, stream0, cap, codec)             \
    [num] = MSG_CODEC_PTR_##codec(name),
    MSG_TABLE(MSG_CODEC_PTR)
#undef MSG_CODEC_PTR
};

const struct msg_codec *
msg_codec_of(uint8_t type)
{
    return type <= MSG_TYPE_MAX ? msg_codecs[type] : NULL;
}

static int
msg_field_put(struct buf *b, const struct msg_field *f, const uint8_t *m)
{
    const void *at = m + f->off;
    struct msg_str s;
    size_t len;

    switch (f->kind) {
    case MSG_F_U8:
        return buf_put_u8(b, *(const uint8_t *)at);
    case MSG_F_U16:
        return buf_put_u16(b, *(const uint16_t *)at);
    case MSG_F_U32:
        return buf_put_u32(b, *(const uint32_t *)at);
    case MSG_F_U64:
        return buf_put_u64(b, *(const uint64_t *)at);
    case MSG_F_BYTES:
        return buf_put(b, at, f->arg);
    case MSG_F_MAGIC:
        return buf_put(b, PROTO_MAGIC, 4);
    case MSG_F_BLOB:
        len = *(const size_t *)(m + f->off2);
        if (len > f->arg)
            return FERRY_ERR_USAGE;
        return buf_put_str32(b, *(const uint8_t *const *)at, len);
    case MSG_F_ARRAY:
        if (f->gate != 0 && (m[f->gate_off] & f->gate) == 0)
            return 0;
        /* The strict check bounded the count. */
        return buf_put(b, *(const uint8_t *const *)at,
            (size_t)*(const uint32_t *)(m + f->off2) * f->arg);
    case MSG_F_TEXT:
        s = *(const struct msg_str *)at;
        if (s.len > f->arg)
            s.len = f->arg;
        return msg_put_str(b, &s, f->arg);
    default:
        return msg_put_str(b, at, f->arg);
    }
}

/* *bad gets FORMAT for a wrong magic, which only counts once the frame
 * has been read whole (a short one is SHORT, whatever its first bytes). */
static int
msg_field_get(struct rd *r, const struct msg_field *f, uint8_t *m, int *bad)
{
    void *at = m + f->off;
    const uint8_t *q;
    int e;

    switch (f->kind) {
    case MSG_F_U8:
        return rd_u8(r, at);
    case MSG_F_U16:
        return rd_u16(r, at);
    case MSG_F_U32:
        return rd_u32(r, at);
    case MSG_F_U64:
        return rd_u64(r, at);
    case MSG_F_BYTES:
        return rd_copy(r, at, f->arg);
    case MSG_F_MAGIC:
        if ((e = rd_bytes(r, 4, &q)) != 0)
            return e;
        if (memcmp(q, PROTO_MAGIC, 4) != 0)
            *bad = FERRY_ERR_FORMAT;
        return 0;
    case MSG_F_BLOB:
        return rd_str32(r, f->arg, (const uint8_t **)at,
            (size_t *)(m + f->off2));
    case MSG_F_ARRAY:
        if (f->gate != 0 && (m[f->gate_off] & f->gate) == 0)
            return 0;
        return rd_bytes(r, (size_t)*(const uint32_t *)(m + f->off2) *
            f->arg, (const uint8_t **)at);
    default:
        return msg_get_str(r, f->arg, at);
    }
}

int
msg_codec_encode(struct buf *b, const struct msg_codec *c, const void *m)
{
    const struct msg_field *f;
    size_t mark;
    int r;

    if (c->strict && c->check(m) != 0)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, c->type, &mark)) != 0)
        return r;
    for (f = c->fields; r == 0 && f < c->fields + c->nfields; f++)
        r = msg_field_put(b, f, m);
    return msg_finish(b, mark, r);
}

int
msg_codec_decode(const struct msg_codec *c, const uint8_t *p, size_t n,
    void *m)
{
    const struct msg_field *f;
    int e = 0, bad = 0, checked = 0;
    struct rd r;

    memset(m, 0, c->size);
    rd_init(&r, p, n);
    for (f = c->fields; e == 0 && f < c->fields + c->nfields; f++) {
        /* An ARRAY's count bounds what follows: check it before. */
        if (f->kind == MSG_F_ARRAY && c->check != NULL &&
            (e = c->check(m)) != 0)
            break;
        checked |= f->kind == MSG_F_ARRAY;
        e = msg_field_get(&r, f, m, &bad);
    }
    if (e == 0)
        e = rd_end(&r);
    if (e == 0)
        e = bad;
    if (e == 0 && c->check != NULL && !checked)
        e = c->check(m);
    if (e != 0)
        memset(m, 0, c->size);
    return e;
}

/* HELLO */

static int
msg_hello_check(const void *v)
{
    const struct msg_hello *m = v;

    return m->version_min == 0 || m->version_min > m->version_max ?
        FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(hello, MSG_HELLO, msg_hello_check, 0, MSG_MAGIC(),
    MSG_U16(hello, version_min), MSG_U16(hello, version_max),
    MSG_U64(hello, caps), MSG_STR(hello, software, PROTO_MAX_SOFTWARE))

/* OPEN */

/* A power of two in [PROTO_MIN_BLOCK, PROTO_MAX_BLOCK]. */
static int
msg_block_size_valid(uint32_t bs)
{
    return bs >= PROTO_MIN_BLOCK && bs <= PROTO_MAX_BLOCK &&
        (bs & (bs - 1)) == 0;
}

int
msg_open_encode(struct buf *b, const struct msg_open *m,
    const char *const *paths)
{
    size_t mark, total = 0, i;
    int r;

    if (m->npaths == 0 || m->npaths > PROTO_MAX_OPEN_PATHS)
        return FERRY_ERR_USAGE;
    for (i = 0; i < m->npaths; i++) {
        size_t len = strlen(paths[i]);

        if (len == 0 || len > PROTO_MAX_PATH)
            return FERRY_ERR_USAGE;
        total += 2 + len;
    }
    if (total > PROTO_MAX_OPEN_BYTES)
        return FERRY_ERR_TOO_LARGE;
    if ((r = frame_begin(b, MSG_OPEN, &mark)) != 0)
        return r;
    r = buf_put_u8(b, m->op);
    if (r == 0)
        r = buf_put_u32(b, m->flags);
    if (r == 0)
        r = buf_put_u32(b, m->block_size);
    if (r == 0)
        r = buf_put(b, m->transfer_id, PROTO_TRANSFER_ID_LEN);
    if (r == 0)
        r = buf_put(b, m->transfer_key, PROTO_TRANSFER_KEY_LEN);
    if (r == 0)
        r = buf_put_u16(b, m->npaths);
    for (i = 0; r == 0 && i < m->npaths; i++)
        r = buf_put_str16(b, paths[i], strlen(paths[i]));
    return msg_finish(b, mark, r);
}

int
msg_open_decode(const uint8_t *p, size_t n, struct msg_open *m)
{
    struct rd r, paths;
    size_t i;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u8(&r, &m->op)) != 0 ||
        (e = rd_u32(&r, &m->flags)) != 0 ||
        (e = rd_u32(&r, &m->block_size)) != 0 ||
        (e = rd_copy(&r, m->transfer_id, PROTO_TRANSFER_ID_LEN)) != 0 ||
        (e = rd_copy(&r, m->transfer_key, PROTO_TRANSFER_KEY_LEN)) != 0 ||
        (e = rd_u16(&r, &m->npaths)) != 0)
        goto fail;
    /* Over a limit is TOO_LARGE; no path at all is malformed. */
    if (m->npaths > PROTO_MAX_OPEN_PATHS || r.len > PROTO_MAX_OPEN_BYTES) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    if (m->npaths == 0) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    paths = r;
    for (i = 0; i < m->npaths; i++) {
        const uint8_t *s;
        size_t len;

        if ((e = rd_str16(&r, PROTO_MAX_PATH, &s, &len)) != 0)
            goto fail;
        if (len == 0 || memchr(s, '\0', len) != NULL) {
            e = FERRY_ERR_FORMAT;
            goto fail;
        }
    }
    if ((e = rd_end(&r)) != 0)
        goto fail;
    /* KEEP names a directory and a set, and takes no flag but MKPATH. */
    if (m->op < OPEN_PUSH || m->op > OPEN_KEEP ||
        (m->flags & ~OPEN_F_KNOWN) != 0 || !msg_block_size_valid(m->block_size) ||
        (m->flags & (OPEN_F_DELTA_ALWAYS | OPEN_F_DELTA_NEVER)) ==
        (OPEN_F_DELTA_ALWAYS | OPEN_F_DELTA_NEVER) ||
        ((m->flags & (OPEN_F_BASIS_FILE | OPEN_F_REPLACE_DIRS |
        OPEN_F_ADOPT)) && m->op != OPEN_PUSH) ||
        ((m->flags & OPEN_F_ADOPT_KEEP) && !(m->flags & OPEN_F_ADOPT)) ||
        ((m->flags & OPEN_F_READINESS) && m->op != OPEN_LIST) ||
        ((m->flags & OPEN_F_MKPATH) && m->op != OPEN_PUSH &&
        m->op != OPEN_KEEP) ||
        (m->op == OPEN_KEEP &&
        (m->npaths != 2 || (m->flags & ~OPEN_F_MKPATH) != 0)) ||
        (m->op != OPEN_PULL && m->op != OPEN_LIST && m->op != OPEN_DELETE &&
        m->op != OPEN_KEEP &&
        m->npaths != 1 + ((m->flags & OPEN_F_BASIS_FILE) != 0) +
        ((m->flags & OPEN_F_ADOPT) != 0))) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    m->paths_raw = paths.p;
    m->paths_len = paths.len;
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

int
msg_open_path(const struct msg_open *m, size_t *pos, struct msg_str *out)
{
    struct rd r;
    int e;

    out->p = NULL;
    out->len = 0;
    if (*pos >= m->paths_len)
        return FERRY_ERR_SHORT;
    rd_init(&r, m->paths_raw + *pos, m->paths_len - *pos);
    if ((e = msg_get_str(&r, PROTO_MAX_PATH, out)) != 0)
        return e;
    *pos = m->paths_len - r.len;
    return 0;
}

MSG_CODEC(open_ok, MSG_OPEN_OK, NULL, 0,
    MSG_STR(open_ok, root, PROTO_MAX_PATH))

MSG_CODEC(error, MSG_ERROR, NULL, 0,
    MSG_U32(error, code), MSG_TEXT(error, text, PROTO_MAX_MESSAGE))

static int
msg_plan_check(const void *v)
{
    const struct msg_plan *m = v;

    if (m->files_total > m->entries_total ||
        (m->flags & ~(PLAN_F_SINGLE_FILE | PLAN_F_LIVE)) != 0 ||
        ((m->flags & PLAN_F_SINGLE_FILE) && m->ntop != 1) ||
        ((m->flags & PLAN_F_LIVE) && ((m->flags & PLAN_F_SINGLE_FILE) ||
        m->entries_total != 0 || m->bytes_total != 0)))
        return FERRY_ERR_FORMAT;
    return 0;
}

MSG_CODEC(plan, MSG_PLAN, msg_plan_check, 0,
    MSG_U32(plan, flags), MSG_U32(plan, ntop),
    MSG_U64(plan, entries_total), MSG_U64(plan, files_total),
    MSG_U64(plan, bytes_total))

/* TOTALS: the end of PLAN. */
static int
msg_totals_check(const void *v)
{
    const struct msg_totals *m = v;

    return m->files_total > m->entries_total ? FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(totals, MSG_TOTALS, msg_totals_check, 1,
    MSG_U64(totals, entries_total), MSG_U64(totals, files_total),
    MSG_U64(totals, bytes_total))

/* A rename is one path component. */
static int
msg_ready_check(const void *v)
{
    const struct msg_ready *m = v;

    if (m->rename.len > 0 &&
        (fsx_path_check(m->rename.p, m->rename.len) != 0 ||
        memchr(m->rename.p, '/', m->rename.len) != NULL))
        return FERRY_ERR_BAD_PATH;
    return 0;
}

MSG_CODEC(ready, MSG_READY, msg_ready_check, 0,
    MSG_STR(ready, rename, FSX_NAME_MAX))

MSG_CODEC(notice, MSG_NOTICE, NULL, 0,
    MSG_U32(notice, code), MSG_STR(notice, path, PROTO_MAX_PATH),
    MSG_TEXT(notice, text, PROTO_MAX_MESSAGE))

/* END */

int
msg_end_encode(struct buf *b)
{
    return msg_empty_encode(b, MSG_END);
}

int
msg_end_decode(const uint8_t *p, size_t n)
{
    (void)p;
    return n == 0 ? 0 : FERRY_ERR_TRAILING;
}

MSG_CODEC(summary, MSG_SUMMARY, NULL, 0,
    MSG_U64(summary, files_committed), MSG_U64(summary, files_skipped),
    MSG_U64(summary, files_failed), MSG_U64(summary, bytes_written))

/* A bad path is BAD_PATH, as in ENTRY. */
static int
msg_partial_check(const void *v)
{
    const struct msg_partial *m = v;

    if (m->done > m->size || m->age_s < 0)
        return FERRY_ERR_FORMAT;
    return fsx_path_check(m->path.p, m->path.len);
}

MSG_CODEC(partial, MSG_PARTIAL, msg_partial_check, 1,
    MSG_STR(partial, path, PROTO_MAX_PATH), MSG_U64(partial, size),
    MSG_U64(partial, done), MSG_U64(partial, age_s))

static int
msg_join_check(const void *v)
{
    const struct msg_join *m = v;

    return m->stream == 0 || m->stream >= PROTO_MAX_STREAMS ?
        FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(join, MSG_JOIN, msg_join_check, 1,
    MSG_BYTES(join, transfer_id, PROTO_TRANSFER_ID_LEN),
    MSG_BYTES(join, transfer_key, PROTO_TRANSFER_KEY_LEN),
    MSG_U16(join, stream))

MSG_CODEC(delta_stop, MSG_DELTA_STOP, NULL, 0, MSG_U32(delta_stop, id))
MSG_CODEC(delta_go, MSG_DELTA_GO, NULL, 0, MSG_U32(delta_go, id))

static int
msg_retire_check(const void *v)
{
    const struct msg_retire *m = v;

    return m->stream == 0 || m->stream >= PROTO_MAX_STREAMS ?
        FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(retire, MSG_RETIRE, msg_retire_check, 1, MSG_U16(retire, stream))

MSG_CODEC(readback, MSG_READBACK, NULL, 0,
    MSG_U64(readback, bytes), MSG_U64(readback, ns))

MSG_CODEC(stop, MSG_STOP, NULL, 0,
    MSG_U32(stop, id), MSG_U64(stop, kept_files), MSG_U64(stop, kept_bytes))

MSG_CODEC(busy, MSG_BUSY, NULL, 0, MSG_STR(busy, holder, PROTO_MAX_HOLDER))

/* JOIN_OK and END: no payload. */

static int
msg_empty_encode(struct buf *b, uint8_t type)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, type, &mark)) != 0)
        return r;
    return frame_finish(b, mark);
}

int
msg_join_ok_encode(struct buf *b)
{
    return msg_empty_encode(b, MSG_JOIN_OK);
}

int
msg_join_ok_decode(const uint8_t *p, size_t n)
{
    (void)p;
    return n == 0 ? 0 : FERRY_ERR_TRAILING;
}

/*
 * Wire error codes: our own codes travel as they are (they are ours on
 * both ends); errno values, which differ between systems, travel as their
 * Linux numbers for the set below and as FERRY_ERR_PEER otherwise.
 */
static const struct {
    int local;
    int32_t wire;
} proto_errnos[] = {
    { EPERM, 1 }, { ENOENT, 2 }, { EIO, 5 }, { EBADF, 9 }, { ENOMEM, 12 },
    { EACCES, 13 }, { EBUSY, 16 }, { EEXIST, 17 }, { EXDEV, 18 },
    { ENOTDIR, 20 }, { EISDIR, 21 }, { EINVAL, 22 }, { EMFILE, 24 },
    { ETXTBSY, 26 }, { EFBIG, 27 }, { ENOSPC, 28 }, { EROFS, 30 },
    { EMLINK, 31 }, { EPIPE, 32 }, { ENAMETOOLONG, 36 }, { ENOTEMPTY, 39 },
    { ELOOP, 40 }, { EDQUOT, 122 }, { ESTALE, 116 }, { EOVERFLOW, 75 },
};

int32_t
proto_err_to_wire(int r)
{
    size_t i;

    if (r >= 0)
        return r == 0 ? 0 : FERRY_ERR_PEER;
    if (r <= FERRY_ERR_SHORT)
        return r;
    for (i = 0; i < sizeof(proto_errnos) / sizeof(proto_errnos[0]); i++)
        if (-r == proto_errnos[i].local)
            return -proto_errnos[i].wire;
    return FERRY_ERR_PEER;
}

int
proto_err_from_wire(int32_t code)
{
    size_t i;

    if (code == 0)
        return 0;
    if (code > 0)
        return FERRY_ERR_PEER;
    if (code <= FERRY_ERR_SHORT)
        return ferry_err_known(code) ? code : FERRY_ERR_PEER;
    for (i = 0; i < sizeof(proto_errnos) / sizeof(proto_errnos[0]); i++)
        if (-code == proto_errnos[i].wire)
            return -proto_errnos[i].local;
    return FERRY_ERR_PEER;
}
