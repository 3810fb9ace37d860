#include "msg.h"

#include <errno.h>
#include <string.h>

#include "../common/fsx.h"
#include "../common/rd.h"
#include "frame.h"
#include "msg_int.h"

static const struct msg_info msg_infos[] = {
#define MSG_INFO(num, NAME, name, dir, stream0, cap) \
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

int
msg_get_i32(struct rd *r, int32_t *v)
{
    uint32_t u;
    int e = rd_u32(r, &u);

    *v = (int32_t)u;
    return e;
}

/* HELLO */

int
msg_hello_encode(struct buf *b, const struct msg_hello *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_HELLO, &mark)) != 0)
        return r;
    r = buf_put(b, PROTO_MAGIC, 4);
    if (r == 0)
        r = buf_put_u16(b, m->version_min);
    if (r == 0)
        r = buf_put_u16(b, m->version_max);
    if (r == 0)
        r = buf_put_u64(b, m->caps);
    if (r == 0)
        r = msg_put_str(b, &m->software, PROTO_MAX_SOFTWARE);
    return msg_finish(b, mark, r);
}

int
msg_hello_decode(const uint8_t *p, size_t n, struct msg_hello *m)
{
    const uint8_t *magic;
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_bytes(&r, 4, &magic)) != 0 ||
        (e = rd_u16(&r, &m->version_min)) != 0 ||
        (e = rd_u16(&r, &m->version_max)) != 0 ||
        (e = rd_u64(&r, &m->caps)) != 0 ||
        (e = msg_get_str(&r, PROTO_MAX_SOFTWARE, &m->software)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (memcmp(magic, PROTO_MAGIC, 4) != 0 || m->version_min == 0 ||
        m->version_min > m->version_max) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

/* OPEN */

int
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
        ((m->flags & (OPEN_F_BASIS_FILE | OPEN_F_REPLACE_DIRS)) &&
        m->op != OPEN_PUSH) ||
        ((m->flags & OPEN_F_READINESS) && m->op != OPEN_LIST) ||
        ((m->flags & OPEN_F_MKPATH) && m->op != OPEN_PUSH &&
        m->op != OPEN_KEEP) ||
        (m->op == OPEN_KEEP &&
        (m->npaths != 2 || (m->flags & ~OPEN_F_MKPATH) != 0)) ||
        (m->op != OPEN_PULL && m->op != OPEN_LIST && m->op != OPEN_DELETE &&
        m->op != OPEN_KEEP &&
        m->npaths != 1 + ((m->flags & OPEN_F_BASIS_FILE) != 0))) {
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

/* OPEN_OK */

int
msg_open_ok_encode(struct buf *b, const struct msg_open_ok *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_OPEN_OK, &mark)) != 0)
        return r;
    r = msg_put_str(b, &m->root, PROTO_MAX_PATH);
    return msg_finish(b, mark, r);
}

int
msg_open_ok_decode(const uint8_t *p, size_t n, struct msg_open_ok *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = msg_get_str(&r, PROTO_MAX_PATH, &m->root)) != 0 ||
        (e = rd_end(&r)) != 0) {
        memset(m, 0, sizeof(*m));
        return e;
    }
    return 0;
}

/* ERROR */

int
msg_error_encode(struct buf *b, const struct msg_error *m)
{
    struct msg_str t = m->text;
    size_t mark;
    int r;

    if (t.len > PROTO_MAX_MESSAGE)
        t.len = PROTO_MAX_MESSAGE;
    if ((r = frame_begin(b, MSG_ERROR, &mark)) != 0)
        return r;
    r = buf_put_u32(b, (uint32_t)m->code);
    if (r == 0)
        r = msg_put_str(b, &t, PROTO_MAX_MESSAGE);
    return msg_finish(b, mark, r);
}

int
msg_error_decode(const uint8_t *p, size_t n, struct msg_error *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = msg_get_i32(&r, &m->code)) != 0 ||
        (e = msg_get_str(&r, PROTO_MAX_MESSAGE, &m->text)) != 0 ||
        (e = rd_end(&r)) != 0) {
        memset(m, 0, sizeof(*m));
        return e;
    }
    return 0;
}

/* PLAN */

/* The totals closing PLAN and making TOTALS: no more files than
 * entries, and nothing after them. */
static int
totals_put(struct buf *b, uint64_t entries, uint64_t files, uint64_t bytes)
{
    int r = buf_put_u64(b, entries);

    if (r == 0)
        r = buf_put_u64(b, files);
    if (r == 0)
        r = buf_put_u64(b, bytes);
    return r;
}

static int
totals_get(struct rd *r, uint64_t *entries, uint64_t *files,
    uint64_t *bytes)
{
    int e;

    if ((e = rd_u64(r, entries)) != 0 || (e = rd_u64(r, files)) != 0 ||
        (e = rd_u64(r, bytes)) != 0 || (e = rd_end(r)) != 0)
        return e;
    return *files > *entries ? FERRY_ERR_FORMAT : 0;
}

int
msg_plan_encode(struct buf *b, const struct msg_plan *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_PLAN, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->flags);
    if (r == 0)
        r = buf_put_u32(b, m->ntop);
    if (r == 0)
        r = totals_put(b, m->entries_total, m->files_total, m->bytes_total);
    return msg_finish(b, mark, r);
}

int
msg_plan_decode(const uint8_t *p, size_t n, struct msg_plan *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->flags)) != 0 ||
        (e = rd_u32(&r, &m->ntop)) != 0 ||
        (e = totals_get(&r, &m->entries_total, &m->files_total,
        &m->bytes_total)) != 0)
        goto fail;
    if ((m->flags & ~(PLAN_F_SINGLE_FILE | PLAN_F_LIVE)) != 0 ||
        ((m->flags & PLAN_F_SINGLE_FILE) && m->ntop != 1) ||
        ((m->flags & PLAN_F_LIVE) && ((m->flags & PLAN_F_SINGLE_FILE) ||
        m->entries_total != 0 || m->bytes_total != 0))) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

/* READY */

int
msg_ready_encode(struct buf *b, const struct msg_ready *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_READY, &mark)) != 0)
        return r;
    r = msg_put_str(b, &m->rename, FSX_NAME_MAX);
    return msg_finish(b, mark, r);
}

int
msg_ready_decode(const uint8_t *p, size_t n, struct msg_ready *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = msg_get_str(&r, FSX_NAME_MAX, &m->rename)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    /* A rename is one path component. */
    if (m->rename.len > 0 &&
        (fsx_path_check(m->rename.p, m->rename.len) != 0 ||
        memchr(m->rename.p, '/', m->rename.len) != NULL)) {
        e = FERRY_ERR_BAD_PATH;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

/* NOTICE */

int
msg_notice_encode(struct buf *b, const struct msg_notice *m)
{
    struct msg_str t = m->text;
    size_t mark;
    int r;

    if (t.len > PROTO_MAX_MESSAGE)
        t.len = PROTO_MAX_MESSAGE;
    if ((r = frame_begin(b, MSG_NOTICE, &mark)) != 0)
        return r;
    r = buf_put_u32(b, (uint32_t)m->code);
    if (r == 0)
        r = msg_put_str(b, &m->path, PROTO_MAX_PATH);
    if (r == 0)
        r = msg_put_str(b, &t, PROTO_MAX_MESSAGE);
    return msg_finish(b, mark, r);
}

int
msg_notice_decode(const uint8_t *p, size_t n, struct msg_notice *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = msg_get_i32(&r, &m->code)) != 0 ||
        (e = msg_get_str(&r, PROTO_MAX_PATH, &m->path)) != 0 ||
        (e = msg_get_str(&r, PROTO_MAX_MESSAGE, &m->text)) != 0 ||
        (e = rd_end(&r)) != 0) {
        memset(m, 0, sizeof(*m));
        return e;
    }
    return 0;
}

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

/* SUMMARY */

int
msg_summary_encode(struct buf *b, const struct msg_summary *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_SUMMARY, &mark)) != 0)
        return r;
    r = buf_put_u64(b, m->files_committed);
    if (r == 0)
        r = buf_put_u64(b, m->files_skipped);
    if (r == 0)
        r = buf_put_u64(b, m->files_failed);
    if (r == 0)
        r = buf_put_u64(b, m->bytes_written);
    return msg_finish(b, mark, r);
}

int
msg_summary_decode(const uint8_t *p, size_t n, struct msg_summary *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u64(&r, &m->files_committed)) != 0 ||
        (e = rd_u64(&r, &m->files_skipped)) != 0 ||
        (e = rd_u64(&r, &m->files_failed)) != 0 ||
        (e = rd_u64(&r, &m->bytes_written)) != 0 ||
        (e = rd_end(&r)) != 0) {
        memset(m, 0, sizeof(*m));
        return e;
    }
    return 0;
}

/* PARTIAL */

int
msg_partial_encode(struct buf *b, const struct msg_partial *m)
{
    size_t mark;
    int r;

    if (m->done > m->size || m->age_s < 0)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_PARTIAL, &mark)) != 0)
        return r;
    r = msg_put_str(b, &m->path, PROTO_MAX_PATH);
    if (r == 0)
        r = buf_put_u64(b, m->size);
    if (r == 0)
        r = buf_put_u64(b, m->done);
    if (r == 0)
        r = buf_put_u64(b, (uint64_t)m->age_s);
    return msg_finish(b, mark, r);
}

int
msg_partial_decode(const uint8_t *p, size_t n, struct msg_partial *m)
{
    uint64_t age;
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = msg_get_str(&r, PROTO_MAX_PATH, &m->path)) != 0 ||
        (e = rd_u64(&r, &m->size)) != 0 ||
        (e = rd_u64(&r, &m->done)) != 0 ||
        (e = rd_u64(&r, &age)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    m->age_s = (int64_t)age;
    if (m->done > m->size || m->age_s < 0) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    /* A bad path is BAD_PATH, as in ENTRY. */
    if ((e = fsx_path_check(m->path.p, m->path.len)) != 0)
        goto fail;
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

/* JOIN: 16 bytes transfer id, 32 bytes transfer key, u16 stream. */

int
msg_join_encode(struct buf *b, const struct msg_join *m)
{
    size_t mark;
    int r;

    if (m->stream == 0 || m->stream >= PROTO_MAX_STREAMS)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_JOIN, &mark)) != 0)
        return r;
    r = buf_put(b, m->transfer_id, PROTO_TRANSFER_ID_LEN);
    if (r == 0)
        r = buf_put(b, m->transfer_key, PROTO_TRANSFER_KEY_LEN);
    if (r == 0)
        r = buf_put_u16(b, m->stream);
    return msg_finish(b, mark, r);
}

int
msg_join_decode(const uint8_t *p, size_t n, struct msg_join *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_copy(&r, m->transfer_id, PROTO_TRANSFER_ID_LEN)) != 0 ||
        (e = rd_copy(&r, m->transfer_key, PROTO_TRANSFER_KEY_LEN)) != 0 ||
        (e = rd_u16(&r, &m->stream)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (m->stream == 0 || m->stream >= PROTO_MAX_STREAMS) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

/* DELTA_STOP: u32 id. */

int
msg_delta_stop_encode(struct buf *b, const struct msg_delta_stop *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_DELTA_STOP, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->id);
    return msg_finish(b, mark, r);
}

int
msg_delta_stop_decode(const uint8_t *p, size_t n, struct msg_delta_stop *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->id)) != 0 || (e = rd_end(&r)) != 0)
        memset(m, 0, sizeof(*m));
    return e;
}

/* RETIRE: u16 stream. */

int
msg_retire_encode(struct buf *b, const struct msg_retire *m)
{
    size_t mark;
    int r;

    if (m->stream == 0 || m->stream >= PROTO_MAX_STREAMS)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_RETIRE, &mark)) != 0)
        return r;
    r = buf_put_u16(b, m->stream);
    return msg_finish(b, mark, r);
}

int
msg_retire_decode(const uint8_t *p, size_t n, struct msg_retire *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u16(&r, &m->stream)) != 0 || (e = rd_end(&r)) != 0)
        goto fail;
    if (m->stream == 0 || m->stream >= PROTO_MAX_STREAMS) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

/* TOTALS: u64 entries, files, bytes, the end of PLAN too. */

int
msg_totals_encode(struct buf *b, const struct msg_totals *m)
{
    size_t mark;
    int r;

    if (m->files_total > m->entries_total)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_TOTALS, &mark)) != 0)
        return r;
    r = totals_put(b, m->entries_total, m->files_total, m->bytes_total);
    return msg_finish(b, mark, r);
}

int
msg_totals_decode(const uint8_t *p, size_t n, struct msg_totals *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = totals_get(&r, &m->entries_total, &m->files_total,
        &m->bytes_total)) != 0)
        memset(m, 0, sizeof(*m));
    return e;
}

/* READBACK: u64 bytes, u64 ns. */

int
msg_readback_encode(struct buf *b, const struct msg_readback *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_READBACK, &mark)) != 0)
        return r;
    r = buf_put_u64(b, m->bytes);
    if (r == 0)
        r = buf_put_u64(b, m->ns);
    return msg_finish(b, mark, r);
}

int
msg_readback_decode(const uint8_t *p, size_t n, struct msg_readback *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u64(&r, &m->bytes)) != 0 || (e = rd_u64(&r, &m->ns)) != 0 ||
        (e = rd_end(&r)) != 0) {
        memset(m, 0, sizeof(*m));
        return e;
    }
    return 0;
}

/* STOP: u32 id, u64 kept_files, u64 kept_bytes. */

int
msg_stop_encode(struct buf *b, const struct msg_stop *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_STOP, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->id);
    if (r == 0)
        r = buf_put_u64(b, m->kept_files);
    if (r == 0)
        r = buf_put_u64(b, m->kept_bytes);
    return msg_finish(b, mark, r);
}

int
msg_stop_decode(const uint8_t *p, size_t n, struct msg_stop *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->id)) != 0 ||
        (e = rd_u64(&r, &m->kept_files)) != 0 ||
        (e = rd_u64(&r, &m->kept_bytes)) != 0 || (e = rd_end(&r)) != 0) {
        memset(m, 0, sizeof(*m));
        return e;
    }
    return 0;
}

/* BUSY: str16 holder. */

int
msg_busy_encode(struct buf *b, const struct msg_busy *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_BUSY, &mark)) != 0)
        return r;
    r = msg_put_str(b, &m->holder, PROTO_MAX_HOLDER);
    return msg_finish(b, mark, r);
}

int
msg_busy_decode(const uint8_t *p, size_t n, struct msg_busy *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = msg_get_str(&r, PROTO_MAX_HOLDER, &m->holder)) != 0 ||
        (e = rd_end(&r)) != 0) {
        memset(m, 0, sizeof(*m));
        return e;
    }
    return 0;
}

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
