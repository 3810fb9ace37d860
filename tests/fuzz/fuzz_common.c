#include "fuzz_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/buf.h"
#include "../../common/fsx.h"
#include "../../common/hash.h"
#include "../../proto/frame.h"
#include "../../proto/journal.h"
#include "../../proto/msg.h"
#include "../../proto/msg_filter.h"
#include "../../proto/msg_keep.h"
#include "../../proto/msg_space.h"
#include "../../proto/msg_vol.h"
#include "../../proto/rvmsg.h"

#define FUZZ_MAX_INPUT (64u << 20)

/* One member per line of msg_table.h, named as its codec (END and JOIN_OK
 * carry nothing: a byte stands for them). */
union fuzz_msg {
    struct msg_hello hello;
    struct msg_open open;
    struct msg_open_ok open_ok;
    struct msg_error error;
    struct msg_plan plan;
    struct msg_totals totals;
    struct msg_ready ready;
    struct msg_entry entry;
    struct msg_reply reply;
    struct msg_block block;
    struct msg_file_end file_end;
    struct msg_file_done file_done;
    struct msg_notice notice;
    struct msg_summary summary;
    struct msg_partial partial;
    struct msg_sigs sigs;
    struct msg_match match;
    struct msg_join join;
    struct msg_retire retire;
    struct msg_delta_stop delta_stop;
    struct msg_delta_go delta_go;
    struct msg_readback readback;
    struct msg_stop stop;
    struct msg_busy busy;
    struct msg_probe probe;
    struct msg_delta_sigs delta_sigs;
    struct msg_delta_blocks delta_blocks;
    struct msg_delta delta;
    struct msg_vol_opts vol_opts;
    struct msg_vol_begin vol_begin;
    struct msg_vol_file vol_file;
    struct msg_vol_data vol_data;
    struct msg_vol_end vol_end;
    struct msg_keep_vol keep_vol;
    struct msg_keep_man keep_man;
    struct msg_keep_done keep_done;
    struct msg_filters filters;
    struct msg_space space;
    struct msg_basis basis;
    struct msg_tensor tensor;
    uint8_t end;
    uint8_t join_ok;
};

/*
 * What fuzz_decode needs to know about one message type. The decode and
 * encode members wrap the typed msg_* functions so one generic driver can
 * call them; check returns NULL or the broken invariant.
 */
struct fuzz_type {
    size_t size;  /* of the decoded struct */
    int (*decode)(const uint8_t *p, size_t n, void *m);
    const char *(*check)(const void *m, const uint8_t *p, size_t n);
    int (*encode)(struct buf *b, const void *m);
};

/* The wrappers for the message types whose functions have the usual
 * shape: msg_x_decode(p, n, struct msg_x *), msg_x_encode(b, const *). */
#define FUZZ_WRAP(name)                                                      \
    static int                                                               \
    fuzz_##name##_decode(const uint8_t *p, size_t n, void *m)                \
    {                                                                        \
        return msg_##name##_decode(p, n, m);                                 \
    }                                                                        \
    static int                                                               \
    fuzz_##name##_encode(struct buf *b, const void *m)                       \
    {                                                                        \
        return msg_##name##_encode(b, m);                                    \
    }

/* Every field list (codec F in msg_table.h) has the usual shape; of the
 * hand-written ones, these. */
#define FUZZ_WRAP_F(name) FUZZ_WRAP(name)
#define FUZZ_WRAP_H(name)
#define FUZZ_WRAP_LINE(num, NAME, name, dir, stream0, cap, codec)            \
    FUZZ_WRAP_##codec(name)
MSG_TABLE(FUZZ_WRAP_LINE)
FUZZ_WRAP(entry)
FUZZ_WRAP(block)
FUZZ_WRAP(tensor)

#undef FUZZ_WRAP_LINE
#undef FUZZ_WRAP_H
#undef FUZZ_WRAP_F
#undef FUZZ_WRAP

/* Compared as integers: a stray pointer would make a pointer comparison
 * undefined. */
int
fuzz_inside(const void *q, size_t len, const uint8_t *p, size_t n)
{
    uintptr_t a = (uintptr_t)q, lo = (uintptr_t)p;

    if (len == 0)
        return 1;
    return q != NULL && a >= lo && len <= n && a - lo <= n - len;
}

/* 1 if s is at most max bytes and borrowed from the payload. */
static int
fuzz_str_ok(const struct msg_str *s, size_t max, const uint8_t *p, size_t n)
{
    return s->len <= max && fuzz_inside(s->p, s->len, p, n);
}

static const char *
fuzz_hello_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_hello *m = v;

    if (m->version_min == 0 || m->version_min > m->version_max)
        return "HELLO: bad version range";
    if (!fuzz_str_ok(&m->software, PROTO_MAX_SOFTWARE, p, n))
        return "HELLO: software string";
    return NULL;
}

static int
fuzz_block_size_ok(uint32_t bs)
{
    return bs >= PROTO_MIN_BLOCK && bs <= PROTO_MAX_BLOCK &&
        (bs & (bs - 1)) == 0;
}

static const char *
fuzz_open_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_open *m = v;
    struct msg_str s;
    size_t pos = 0, i;

    if (m->op < OPEN_PUSH || m->op > OPEN_KEEP)
        return "OPEN: op out of range";
    if (m->op == OPEN_KEEP &&
        (m->npaths != 2 || (m->flags & ~OPEN_F_MKPATH) != 0))
        return "OPEN: KEEP with other than two paths, or flags";
    if ((m->flags & OPEN_F_MKPATH) && m->op != OPEN_PUSH &&
        m->op != OPEN_KEEP)
        return "OPEN: MKPATH without a destination to make";
    if ((m->flags & ~OPEN_F_KNOWN) != 0)
        return "OPEN: unknown flags";
    if ((m->flags & OPEN_F_DELTA_ALWAYS) && (m->flags & OPEN_F_DELTA_NEVER))
        return "OPEN: --delta always and never";
    if (!fuzz_block_size_ok(m->block_size))
        return "OPEN: block size";
    if (m->npaths == 0 || m->npaths > PROTO_MAX_OPEN_PATHS ||
        (m->op != OPEN_PULL && m->op != OPEN_LIST && m->op != OPEN_DELETE &&
        m->op != OPEN_KEEP &&
        m->npaths != 1 + ((m->flags & OPEN_F_BASIS_FILE) != 0) +
        ((m->flags & OPEN_F_ADOPT) != 0)))
        return "OPEN: path count";
    if ((m->flags & OPEN_F_BASIS_FILE) && m->op != OPEN_PUSH)
        return "OPEN: --basis FILE without a push";
    if ((m->flags & OPEN_F_ADOPT) && m->op != OPEN_PUSH)
        return "OPEN: --adopt without a push";
    if ((m->flags & OPEN_F_REPLACE_DIRS) && m->op != OPEN_PUSH)
        return "OPEN: REPLACE_DIRS without a push";
    if (m->paths_len > PROTO_MAX_OPEN_BYTES ||
        !fuzz_inside(m->paths_raw, m->paths_len, p, n))
        return "OPEN: path list";
    for (i = 0; i < m->npaths; i++) {
        if (msg_open_path(m, &pos, &s) != 0)
            return "OPEN: fewer paths than npaths";
        if (s.len == 0 || !fuzz_str_ok(&s, PROTO_MAX_PATH, p, n) ||
            memchr(s.p, '\0', s.len) != NULL)
            return "OPEN: bad path";
    }
    if (msg_open_path(m, &pos, &s) != FERRY_ERR_SHORT ||
        pos != m->paths_len)
        return "OPEN: more paths than npaths";
    return NULL;
}

/* OPEN's encoder takes NUL-terminated paths: copy them out of m. */
static int
fuzz_open_encode(struct buf *b, const void *v)
{
    const struct msg_open *m = v;
    struct msg_str s;
    char **paths;
    size_t pos = 0, i, got = 0;
    int r = FERRY_ERR_NOMEM;

    if ((paths = xcalloc(m->npaths, sizeof(*paths))) == NULL)
        return FERRY_ERR_NOMEM;
    for (got = 0; got < m->npaths; got++) {
        if ((r = msg_open_path(m, &pos, &s)) != 0)
            goto out;
        if ((paths[got] = xstrndup(s.p, s.len)) == NULL) {
            r = FERRY_ERR_NOMEM;
            goto out;
        }
    }
    r = msg_open_encode(b, m, (const char *const *)paths);
out:
    for (i = 0; i < got; i++)
        xfree(paths[i]);
    xfree(paths);
    return r;
}

static int
fuzz_open_decode(const uint8_t *p, size_t n, void *m)
{
    return msg_open_decode(p, n, m);
}

static const char *
fuzz_open_ok_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_open_ok *m = v;

    return fuzz_str_ok(&m->root, PROTO_MAX_PATH, p, n) ? NULL :
        "OPEN_OK: root";
}

static const char *
fuzz_busy_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_busy *m = v;

    return fuzz_str_ok(&m->holder, PROTO_MAX_HOLDER, p, n) ? NULL :
        "BUSY: holder";
}

static const char *
fuzz_error_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_error *m = v;

    return fuzz_str_ok(&m->text, PROTO_MAX_MESSAGE, p, n) ? NULL :
        "ERROR: text";
}

static const char *
fuzz_plan_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_plan *m = v;

    (void)p;
    (void)n;
    if ((m->flags & ~(PLAN_F_SINGLE_FILE | PLAN_F_LIVE)) != 0)
        return "PLAN: unknown flags";
    if (m->files_total > m->entries_total)
        return "PLAN: more files than entries";
    if ((m->flags & PLAN_F_SINGLE_FILE) && m->ntop != 1)
        return "PLAN: single file with ntop != 1";
    if ((m->flags & PLAN_F_LIVE) && ((m->flags & PLAN_F_SINGLE_FILE) ||
        m->entries_total != 0 || m->bytes_total != 0))
        return "PLAN: live with totals, or a single file";
    return NULL;
}

static const char *
fuzz_totals_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_totals *m = v;

    (void)p;
    (void)n;
    return m->files_total > m->entries_total ?
        "TOTALS: more files than entries" : NULL;
}

static const char *
fuzz_ready_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_ready *m = v;
    const struct msg_str *s = &m->rename;

    if (!fuzz_str_ok(s, FSX_NAME_MAX, p, n))
        return "READY: rename";
    if (s->len > 0 && (fsx_path_check(s->p, s->len) != 0 ||
        memchr(s->p, '/', s->len) != NULL))
        return "READY: rename is not one component";
    return NULL;
}

static const char *
fuzz_entry_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_entry *m = v;

    if (m->kind < ENTRY_FILE || m->kind > ENTRY_SYMLINK)
        return "ENTRY: kind out of range";
    if ((m->mode & ~07777u) != 0)
        return "ENTRY: mode has more than permission bits";
    if (m->mtime_nsec >= 1000000000u)
        return "ENTRY: mtime_nsec >= 1e9";
    if (m->has_hash > 1 || (m->kind != ENTRY_FILE && m->has_hash))
        return "ENTRY: has_hash";
    if ((m->state & ~ENTRY_S_KNOWN) != 0 || (m->kind != ENTRY_FILE &&
        m->state != 0) || ((m->state & ENTRY_S_TORN) &&
        (m->state & ENTRY_S_WHOLE)) || ((m->state & ENTRY_S_BUSY) &&
        (m->state & ENTRY_S_IDLE)))
        return "ENTRY: state";
    if (m->size > (uint64_t)INT64_MAX ||
        (m->kind != ENTRY_FILE && m->size != 0))
        return "ENTRY: size";
    if (!fuzz_str_ok(&m->path, PROTO_MAX_PATH, p, n) ||
        fsx_path_check(m->path.p, m->path.len) != 0)
        return "ENTRY: path fails fsx_path_check";
    if (!fuzz_str_ok(&m->target, PROTO_MAX_LINK, p, n) ||
        (m->kind == ENTRY_SYMLINK) != (m->target.len > 0) ||
        (m->target.len > 0 && memchr(m->target.p, '\0', m->target.len)))
        return "ENTRY: target";
    return NULL;
}

static const char *
fuzz_reply_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_reply *m = v;

    if (m->action < REPLY_SKIP || m->action > REPLY_FAIL)
        return "REPLY: action out of range";
    if ((m->flags & ~REPLY_F_KNOWN) != 0 ||
        (m->action != REPLY_WANT && m->flags != 0 &&
        (m->action != REPLY_SKIP || m->flags != REPLY_F_ADOPTED)) ||
        ((m->flags & REPLY_F_ADOPTED) && m->action != REPLY_SKIP))
        return "REPLY: flags";
    if ((m->action == REPLY_FAIL) != (m->code != 0))
        return "REPLY: code and FAIL disagree";
    return fuzz_str_ok(&m->text, PROTO_MAX_MESSAGE, p, n) ? NULL :
        "REPLY: text";
}

static const char *
fuzz_block_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_block *m = v;

    if (m->raw_len == 0 || m->raw_len > PROTO_MAX_BLOCK)
        return "BLOCK: raw_len";
    if ((m->flags & ~BLOCK_F_KNOWN) != 0)
        return "BLOCK: unknown flags";
    if (m->offset > (uint64_t)INT64_MAX - m->raw_len)
        return "BLOCK: offset + raw_len overflows";
    if (!fuzz_inside(m->data, m->data_len, p, n))
        return "BLOCK: data outside the payload";
    if (m->flags & BLOCK_F_ZERO)
        return m->flags == BLOCK_F_ZERO && m->data_len == 0 ? NULL :
            "BLOCK: ZERO with data or other flags";
    if (m->flags & BLOCK_F_ZSTD)
        return m->data_len > 0 && m->data_len <= PROTO_MAX_BLOCK ? NULL :
            "BLOCK: ZSTD data length";
    return m->data_len == m->raw_len ? NULL : "BLOCK: data_len != raw_len";
}

static const char *
fuzz_file_end_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_file_end *m = v;

    return fuzz_str_ok(&m->text, PROTO_MAX_MESSAGE, p, n) ? NULL :
        "FILE_END: text";
}

static const char *
fuzz_file_done_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_file_done *m = v;

    return fuzz_str_ok(&m->text, PROTO_MAX_MESSAGE, p, n) ? NULL :
        "FILE_DONE: text";
}

static const char *
fuzz_notice_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_notice *m = v;

    if (!fuzz_str_ok(&m->path, PROTO_MAX_PATH, p, n))
        return "NOTICE: path";
    return fuzz_str_ok(&m->text, PROTO_MAX_MESSAGE, p, n) ? NULL :
        "NOTICE: text";
}

static const char *
fuzz_partial_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_partial *m = v;

    if (!fuzz_str_ok(&m->path, PROTO_MAX_PATH, p, n) ||
        fsx_path_check(m->path.p, m->path.len) != 0)
        return "PARTIAL: path fails fsx_path_check";
    if (m->done > m->size)
        return "PARTIAL: done > size";
    return m->age_s >= 0 ? NULL : "PARTIAL: negative age";
}

static const char *
fuzz_basis_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_basis *m = v;

    if (!fuzz_str_ok(&m->path, PROTO_MAX_PATH, p, n) ||
        fsx_path_check(m->path.p, m->path.len) != 0)
        return "BASIS: path fails fsx_path_check";
    return m->basis_size > 0 && m->basis_size <= (uint64_t)INT64_MAX ?
        NULL : "BASIS: basis_size";
}

static const char *
fuzz_tensor_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_tensor *m = v;

    if (m->raw_len < 2 || m->raw_len > PROTO_MAX_BLOCK)
        return "TENSOR: raw_len";
    if (m->offset > (uint64_t)INT64_MAX - m->raw_len)
        return "TENSOR: offset + raw_len overflows";
    if (!fuzz_inside(m->body, m->body_len, p, n))
        return "TENSOR: body outside the payload";
    return m->body_len >= 1 && m->body_len < m->raw_len ? NULL :
        "TENSOR: body not shorter than the block";
}

/* Messages with no invariant beyond their fixed layout. */
static const char *
fuzz_no_check(const void *v, const uint8_t *p, size_t n)
{
    (void)v;
    (void)p;
    (void)n;
    return NULL;
}

static int
fuzz_end_decode(const uint8_t *p, size_t n, void *m)
{
    *(uint8_t *)m = 0;
    return msg_end_decode(p, n);
}

static int
fuzz_end_encode(struct buf *b, const void *m)
{
    (void)m;
    return msg_end_encode(b);
}

static const char *
fuzz_sigs_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_sigs *m = v;

    if (m->count == 0 || m->count > PROTO_MAX_SIGS ||
        (m->flags & ~SIGS_F_KNOWN) != 0 ||
        m->first > (uint64_t)INT64_MAX - m->count)
        return "SIGS: fields";
    if ((m->flags & SIGS_F_HAVE) &&
        !fuzz_inside(m->hashes, (size_t)m->count * HASH_LEN, p, n))
        return "SIGS: hashes";
    if (!(m->flags & SIGS_F_HAVE) && m->hashes != NULL)
        return "SIGS: hashes without HAVE";
    return NULL;
}

static const char *
fuzz_match_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_match *m = v;

    (void)p;
    (void)n;
    if (m->count == 0 || m->count > PROTO_MAX_SIGS ||
        m->first > (uint64_t)INT64_MAX - m->count)
        return "MATCH: fields";
    return NULL;
}

static const char *
fuzz_join_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_join *m = v;

    (void)p;
    (void)n;
    if (m->stream == 0 || m->stream >= PROTO_MAX_STREAMS)
        return "JOIN: stream";
    return NULL;
}

static const char *
fuzz_retire_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_retire *m = v;

    (void)p;
    (void)n;
    if (m->stream == 0 || m->stream >= PROTO_MAX_STREAMS)
        return "RETIRE: stream";
    return NULL;
}

static int
fuzz_join_ok_decode(const uint8_t *p, size_t n, void *m)
{
    *(uint8_t *)m = 0;
    return msg_join_ok_decode(p, n);
}

static int
fuzz_join_ok_encode(struct buf *b, const void *m)
{
    (void)m;
    return msg_join_ok_encode(b);
}

static const char *
fuzz_vol_opts_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_vol_opts *m = v;

    (void)p;
    (void)n;
    if (m->threshold > PROTO_MAX_PACK_THRESHOLD ||
        m->volume_size < PROTO_MIN_VOLUME_SIZE ||
        m->volume_size > PROTO_MAX_VOLUME_SIZE ||
        m->compress > VOL_COMPRESS_LEVEL ||
        (m->compress == VOL_COMPRESS_LEVEL ? m->level < VOL_LEVEL_MIN ||
        m->level > VOL_LEVEL_MAX : m->level != 0))
        return "VOL_OPTS: fields";
    return NULL;
}

static const char *
fuzz_vol_begin_check(const void *v, const uint8_t *p, size_t n)
{
    (void)p;
    (void)n;
    return ((const struct msg_vol_begin *)v)->volume == 0 ?
        "VOL_BEGIN: volume" : NULL;
}

static const char *
fuzz_vol_file_check(const void *v, const uint8_t *p, size_t n)
{
    (void)p;
    (void)n;
    return ((const struct msg_vol_file *)v)->volume == 0 ?
        "VOL_FILE: volume" : NULL;
}

static const char *
fuzz_vol_data_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_vol_data *m = v;

    if (m->volume == 0 || m->len == 0 || m->len > PROTO_MAX_BLOCK ||
        !fuzz_inside(m->data, m->len, p, n))
        return "VOL_DATA: fields";
    return NULL;
}

static const char *
fuzz_probe_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_probe *m = v;

    if (m->ask > PROTO_MAX_PROBE_ASK || m->len > PROTO_MAX_PROBE_DATA ||
        (m->len > 0 && !fuzz_inside(m->data, m->len, p, n)))
        return "PROBE: fields";
    return NULL;
}

static const char *
fuzz_vol_end_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_vol_end *m = v;

    (void)p;
    (void)n;
    if (m->volume == 0 || m->files > PROTO_MAX_VOLUME_FILES ||
        m->bytes > PROTO_MAX_VOLUME_SIZE)
        return "VOL_END: fields";
    return NULL;
}

static const char *
fuzz_keep_vol_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_keep_vol *m = v;

    (void)p;
    (void)n;
    if (m->volume == 0 || m->volume > PROTO_MAX_KEEP_VOLUMES ||
        m->bytes > PROTO_MAX_VOLUME_SIZE)
        return "KEEP_VOL: fields";
    return NULL;
}

static const char *
fuzz_keep_man_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_keep_man *m = v;

    if (m->len == 0 || m->len > PROTO_MAX_BLOCK ||
        m->offset > PROTO_MAX_KEEP_MANIFEST - m->len ||
        !fuzz_inside(m->data, m->len, p, n))
        return "KEEP_MAN: fields";
    return NULL;
}

static const char *
fuzz_keep_done_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_keep_done *m = v;

    (void)p;
    (void)n;
    if (m->volumes == 0 || m->volumes > PROTO_MAX_KEEP_VOLUMES ||
        m->manifest_bytes > PROTO_MAX_KEEP_MANIFEST)
        return "KEEP_DONE: fields";
    return NULL;
}

static const char *
fuzz_filters_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_filters *m = v;
    struct msg_str pat;
    size_t pos = 0, i;
    uint8_t action;

    if (m->nrules > PROTO_MAX_FILTERS || m->len > PROTO_MAX_FILTER_BYTES ||
        !fuzz_inside(m->raw, m->len, p, n))
        return "FILTERS: rule list";
    for (i = 0; i < m->nrules; i++) {
        if (msg_filters_rule(m, &pos, &action, &pat) != 0)
            return "FILTERS: fewer rules than nrules";
        if ((action != 1 && action != 2) || pat.len == 0 ||
            !fuzz_str_ok(&pat, PROTO_MAX_FILTER_PATTERN, p, n) ||
            memchr(pat.p, '\0', pat.len) != NULL)
            return "FILTERS: bad rule";
    }
    if (msg_filters_rule(m, &pos, &action, &pat) != FERRY_ERR_SHORT ||
        pos != m->len)
        return "FILTERS: more rules than nrules";
    return NULL;
}

/* FILTERS' encoder takes NUL-terminated patterns: copy them out of m. */
static int
fuzz_filters_encode(struct buf *b, const void *v)
{
    const struct msg_filters *m = v;
    uint8_t actions[PROTO_MAX_FILTERS];
    struct msg_str s;
    char **pats;
    size_t pos = 0, i, got;
    int r = 0;

    if ((pats = xcalloc(m->nrules + 1u, sizeof(*pats))) == NULL)
        return FERRY_ERR_NOMEM;
    for (got = 0; r == 0 && got < m->nrules; got++) {
        if ((r = msg_filters_rule(m, &pos, &actions[got], &s)) == 0 &&
            (pats[got] = xstrndup(s.p, s.len)) == NULL)
            r = FERRY_ERR_NOMEM;
    }
    if (r == 0)
        r = msg_filters_encode(b, actions, (const char *const *)pats, got);
    for (i = 0; i < got; i++)
        xfree(pats[i]);
    xfree(pats);
    return r;
}

static int
fuzz_filters_decode(const uint8_t *p, size_t n, void *m)
{
    return msg_filters_decode(p, n, m);
}

static const char *
fuzz_space_check(const void *v, const uint8_t *p, size_t n)
{
    const struct msg_space *m = v;

    (void)p;
    (void)n;
    return m->avail > m->size ? "SPACE: avail > size" : NULL;
}

#define fuzz_end_check fuzz_no_check
#define fuzz_summary_check fuzz_no_check
#define fuzz_join_ok_check fuzz_no_check
#define fuzz_delta_stop_check fuzz_no_check
#define fuzz_delta_go_check fuzz_no_check
#define fuzz_readback_check fuzz_no_check
#define fuzz_stop_check fuzz_no_check

#define FUZZ_TYPE(num, NAME, name, dir, stream0, cap, codec)                 \
    [num] = { sizeof(((union fuzz_msg *)0)->name), fuzz_##name##_decode,    \
        fuzz_##name##_check, fuzz_##name##_encode },

static const struct fuzz_type fuzz_types[MSG_TYPE_MAX + 1] = {
    MSG_TABLE(FUZZ_TYPE)
};

#undef FUZZ_TYPE

/* 1 if the n bytes at p are all zero. */
static int
fuzz_all_zero(const void *p, size_t n)
{
    const uint8_t *u = p;
    size_t i;

    for (i = 0; i < n; i++)
        if (u[i] != 0)
            return 0;
    return 1;
}

/* Encodes m again and compares the frame with (type, p, n). */
static const char *
fuzz_reencode(const struct fuzz_type *t, uint8_t type, const void *m,
    const uint8_t *p, size_t n)
{
    const char *why = NULL;
    struct frame f;
    struct buf b;
    size_t used;

    buf_init(&b, PROTO_FRAME_HEADER + PROTO_MAX_FRAME);
    if (t->encode(&b, m) != 0)
        why = "the encoder refuses what the decoder accepted";
    else if (frame_parse(buf_ptr(&b), buf_used(&b), &f, &used) != 0 ||
        used != buf_used(&b) || f.type != type)
        why = "the encoder wrote a bad frame";
    else if (f.len != n || (n > 0 && memcmp(f.payload, p, n) != 0))
        why = "encoding the decoded message changes its bytes";
    buf_cleanup(&b);
    return why;
}

const char *
fuzz_decode(uint8_t type, const uint8_t *p, size_t n, int *rc)
{
    const struct fuzz_type *t;
    union fuzz_msg m;
    const char *why;

    *rc = FERRY_ERR_PROTOCOL;
    if (!msg_type_known(type))
        return NULL;
    t = &fuzz_types[type];
    /* Garbage first, so that fields a decoder forgot to set show up. */
    memset(&m, 0xa5, sizeof(m));
    *rc = t->decode(p, n, &m);
    if (*rc != 0)
        return fuzz_all_zero(&m, t->size) ? NULL :
            "a failed decoder left fields set";
    if ((why = t->check(&m, p, n)) != NULL)
        return why;
    return fuzz_reencode(t, type, &m, p, n);
}

static void fuzz_abort(const char *what, const char *why)
    __attribute__((noreturn));

static void
fuzz_abort(const char *what, const char *why)
{
    fprintf(stderr, "fuzz: %s: %s\n", what, why);
    abort();
}

static void
fuzz_check_payload(uint8_t type, const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_decode(type, p, n, &rc)) != NULL)
        fuzz_abort(msg_type_name(type), why);
}

/* Checks frame_parse's result r on (p, n) against the frame format. */
static void
fuzz_check_frame(int r, const uint8_t *p, size_t n, const struct frame *f,
    size_t used)
{
    uint32_t len = n >= PROTO_FRAME_HEADER ? (uint32_t)p[0] << 24 |
        (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
    int want;

    if (n < PROTO_FRAME_HEADER)
        want = FERRY_ERR_SHORT;
    else if (len > PROTO_MAX_FRAME)
        want = FERRY_ERR_TOO_LARGE;
    else if (n - PROTO_FRAME_HEADER < len)
        want = FERRY_ERR_SHORT;
    else
        want = 0;
    if (r != want)
        fuzz_abort("frame", "frame_parse returned the wrong result");
    if (r != 0 && (f->type != 0 || f->payload != NULL || f->len != 0 ||
        used != 0))
        fuzz_abort("frame", "frame_parse failed but left fields set");
    if (r == 0 && (f->type != p[4] || f->payload != p + PROTO_FRAME_HEADER ||
        f->len != len || used != PROTO_FRAME_HEADER + (size_t)len))
        fuzz_abort("frame", "frame_parse misread the header");
}

int
fuzz_frame_one(const uint8_t *p, size_t n)
{
    for (;;) {
        struct frame f;
        size_t used;
        uint8_t *copy;
        int r = frame_parse(p, n, &f, &used);

        fuzz_check_frame(r, p, n, &f, used);
        if (r != 0)
            return 0;
        /* The payload is followed by the next frame: decode a copy of
         * exactly its size so that reads past its end are caught. */
        if ((copy = malloc(f.len)) == NULL && f.len > 0)
            abort();
        if (f.len > 0)
            memcpy(copy, f.payload, f.len);
        fuzz_check_payload(f.type, copy, f.len);
        free(copy);
        p += used;
        n -= used;
    }
}

int
fuzz_msg_one(const uint8_t *p, size_t n)
{
    if (n > 0)
        fuzz_check_payload(p[0], p + 1, n - 1);
    return 0;
}

int
fuzz_msg_typed(uint8_t type, const uint8_t *p, size_t n)
{
    fuzz_check_payload(type, p, n);
    return 0;
}

/*
 * Resume journals (proto/journal.h). A header is "FJN1", u32 block_size,
 * u64 size, i64 mtime_sec, u32 mtime_nsec, u32 mode, str16 path, u64
 * check; the offsets below follow from it.
 */
#define FUZZ_JNL_PLEN_AT (4 + 4 + 8 + 8 + 4 + 4)
#define FUZZ_JNL_PATH_AT (FUZZ_JNL_PLEN_AT + 2)
#define FUZZ_JNL_HEADER_MAX (JOURNAL_HEADER_FIXED + PROTO_MAX_PATH)

static uint16_t
fuzz_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Checks a successful journal_header_decode of (p, n): h and used. */
static const char *
fuzz_jheader_check(const struct journal_header *h, size_t used,
    const uint8_t *p, size_t n)
{
    struct journal_header again;
    const char *why = NULL;
    size_t used2;
    struct buf b;

    if (!fuzz_block_size_ok(h->block_size))
        return "journal header: block size";
    if (h->size > (uint64_t)INT64_MAX)
        return "journal header: size over INT64_MAX";
    if (h->mtime_nsec >= 1000000000u)
        return "journal header: mtime_nsec >= 1e9";
    if ((h->mode & ~07777u) != 0)
        return "journal header: mode has more than permission bits";
    if (h->path_len == 0 || h->path_len > PROTO_MAX_PATH ||
        (const uint8_t *)h->path != p + FUZZ_JNL_PATH_AT ||
        !fuzz_inside(h->path, h->path_len, p, n) ||
        fsx_path_check(h->path, h->path_len) != 0)
        return "journal header: path fails fsx_path_check";
    if (used > n || used != JOURNAL_HEADER_FIXED + h->path_len)
        return "journal header: *used not the header's length";
    /* The header alone decodes the same; one byte less is SHORT. */
    if (journal_header_decode(p, used, &again, &used2) != 0 ||
        used2 != used || again.size != h->size ||
        again.mtime_sec != h->mtime_sec)
        return "journal header: decodes differently without what follows";
    if (journal_header_decode(p, used - 1, &again, &used2) !=
        FERRY_ERR_SHORT)
        return "journal header: a cut header is not SHORT";
    buf_init(&b, FUZZ_JNL_HEADER_MAX);
    if (journal_header_encode(&b, h) != 0)
        why = "journal header: the encoder refuses what the decoder accepted";
    else if (buf_used(&b) != used || memcmp(buf_ptr(&b), p, used) != 0)
        why = "journal header: encoding the decoded header changes its bytes";
    buf_cleanup(&b);
    return why;
}

/* Checks journal_record_decode on the record at (p, len), len ==
 * JOURNAL_RECORD_LEN, with more bytes after it if more. */
static const char *
fuzz_jrecord_check(const uint8_t *p, size_t len, int more)
{
    struct journal_record rec;
    const char *why = NULL;
    struct buf b;
    int rc;

    memset(&rec, 0xa5, sizeof(rec));
    rc = journal_record_decode(p, len, &rec);
    if (len < JOURNAL_RECORD_LEN)
        return rc == FERRY_ERR_SHORT && fuzz_all_zero(&rec, sizeof(rec)) ?
            NULL : "journal record: a torn record is not SHORT, zeroed";
    if (rc != 0)
        return rc == FERRY_ERR_FORMAT && fuzz_all_zero(&rec, sizeof(rec)) ?
            NULL : "journal record: failed with fields set or not FORMAT";
    buf_init(&b, JOURNAL_RECORD_LEN);
    if (journal_record_encode(&b, &rec) != 0)
        why = "journal record: the encoder refuses what the decoder accepted";
    else if (buf_used(&b) != len || memcmp(buf_ptr(&b), p, len) != 0)
        why = "journal record: encoding the decoded record changes its bytes";
    buf_cleanup(&b);
    if (why == NULL && more) {
        /* A record is exactly JOURNAL_RECORD_LEN bytes. */
        memset(&rec, 0xa5, sizeof(rec));
        if (journal_record_decode(p, len + 1, &rec) != FERRY_ERR_TRAILING ||
            !fuzz_all_zero(&rec, sizeof(rec)))
            why = "journal record: a longer record is not TRAILING";
    }
    return why;
}

/* The checks of fuzz_journal on (p, n) as it is. */
static const char *
fuzz_journal_pass(const uint8_t *p, size_t n, int *rc)
{
    struct journal_header h;
    const char *why;
    size_t used = 1, off;

    memset(&h, 0xa5, sizeof(h));
    *rc = journal_header_decode(p, n, &h, &used);
    if (*rc != 0) {
        if (!fuzz_all_zero(&h, sizeof(h)) || used != 0)
            return "journal header: a failed decode left fields set";
        /* VERSION says "a journal of format 1", and only that. */
        if (*rc == FERRY_ERR_VERSION)
            return n >= 4 && memcmp(p, JOURNAL_MAGIC_V1, 4) == 0 ? NULL :
                "journal header: VERSION without the format-1 magic";
        if (*rc != FERRY_ERR_SHORT && *rc != FERRY_ERR_FORMAT &&
            *rc != FERRY_ERR_TOO_LARGE)
            return "journal header: an error other than SHORT, FORMAT, "
                "TOO_LARGE, VERSION";
        /* A path length over the limit is TOO_LARGE, bytes or not. */
        if (n >= FUZZ_JNL_PATH_AT &&
            fuzz_be16(p + FUZZ_JNL_PLEN_AT) > PROTO_MAX_PATH &&
            *rc != FERRY_ERR_TOO_LARGE)
            return "journal header: a long path is not TOO_LARGE";
        return NULL;
    }
    if ((why = fuzz_jheader_check(&h, used, p, n)) != NULL)
        return why;
    /* The records, as partial_scan reads them, then the torn tail. */
    for (off = used; off < n; off += JOURNAL_RECORD_LEN) {
        size_t len = n - off < JOURNAL_RECORD_LEN ? n - off :
            JOURNAL_RECORD_LEN;

        if ((why = fuzz_jrecord_check(p + off, len, n - off > len)) != NULL)
            return why;
    }
    return NULL;
}

/*
 * Writes correct check fields into the journal (p, n) wherever its header
 * and records reach them, so that fuzzing gets past the XXH3 checks to the
 * field validation. Returns 1 if a byte changed.
 */
static int
fuzz_journal_fix(uint8_t *p, size_t n)
{
    size_t hdr, off;
    uint8_t want[8];
    int changed = 0;

    if (n < FUZZ_JNL_PATH_AT)
        return 0;
    hdr = FUZZ_JNL_PATH_AT + fuzz_be16(p + FUZZ_JNL_PLEN_AT);
    for (off = 0; hdr <= n && n - hdr >= 8;
        off = hdr + 8, hdr = off + JOURNAL_RECORD_LEN - 8) {
        uint64_t c = hash_name64(p + off, hdr - off);

        buf_set_u32(want, (uint32_t)(c >> 32));
        buf_set_u32(want + 4, (uint32_t)c);
        if (memcmp(p + hdr, want, 8) != 0) {
            memcpy(p + hdr, want, 8);
            changed = 1;
        }
    }
    return changed;
}

const char *
fuzz_journal(const uint8_t *p, size_t n, int *rc)
{
    const char *why;
    uint8_t *copy;
    int rc2;

    if ((why = fuzz_journal_pass(p, n, rc)) != NULL || n == 0)
        return why;
    if ((copy = malloc(n)) == NULL)
        return "out of memory";
    memcpy(copy, p, n);
    if (fuzz_journal_fix(copy, n))
        why = fuzz_journal_pass(copy, n, &rc2);
    free(copy);
    return why;
}

int
fuzz_journal_one(const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_journal(p, n, &rc)) != NULL)
        fuzz_abort("journal", why);
    return 0;
}

const char *
fuzz_rvmsg(const uint8_t *p, size_t n, int *rc)
{
    static const struct rvmsg zero;
    const char *why = NULL;
    struct rvmsg m;
    struct buf b;

    if ((*rc = rvmsg_decode(p, n, &m)) != 0)
        return memcmp(&m, &zero, sizeof(m)) == 0 ? NULL :
            "rvmsg_decode failed but left fields set";
    if (m.kind != RVMSG_JOIN && m.kind != RVMSG_STOP)
        return "unknown kind accepted";
    if (m.scope_len == 0 || m.scope_len > RVMSG_MAX_SCOPE ||
        memchr(m.scope, '\0', m.scope_len) != NULL ||
        !fuzz_inside(m.scope, m.scope_len, p, n))
        return "scope out of bounds";
    if (m.nbytes > RVMSG_MAX_BYTES || (m.kind == RVMSG_JOIN) !=
        (m.nbytes > 0) || (m.nbytes > 0 &&
        !fuzz_inside(m.bytes, m.nbytes, p, n)))
        return "bytes out of bounds";
    buf_init(&b, RVMSG_MAX);
    if (rvmsg_encode(&b, &m) != 0)
        why = "an accepted datagram does not encode";
    else if (buf_used(&b) != n || memcmp(buf_ptr(&b), p, n) != 0)
        why = "re-encoding gives other bytes";
    buf_cleanup(&b);
    return why;
}

int
fuzz_rvmsg_one(const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_rvmsg(p, n, &rc)) != NULL)
        fuzz_abort("rvmsg", why);
    return 0;
}

const struct fuzz_target fuzz_targets[] = {
    { "frame", fuzz_frame_one },
    { "msg", fuzz_msg_one },
    { "journal", fuzz_journal_one },
    { "tar", fuzz_tar_one },
    { "delta", fuzz_delta_one },
    { "rvmsg", fuzz_rvmsg_one },
    { "tensor", fuzz_tensor_one },
    { "vmanifest", fuzz_vman_one },
    { NULL, NULL },
};

/* Reads the whole file at path into a new heap block of exactly its size
 * (NULL when it is empty). */
static int
fuzz_read_file(const char *path, uint8_t **out, size_t *len)
{
    struct stat st;
    uint8_t *p = NULL;
    size_t got = 0;
    int fd, r = 0;

    *out = NULL;
    *len = 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    if (fstat(fd, &st) != 0) {
        r = -errno;
        goto out;
    }
    if (st.st_size > (off_t)FUZZ_MAX_INPUT) {
        r = FERRY_ERR_TOO_LARGE;
        goto out;
    }
    if (st.st_size > 0 && (p = malloc((size_t)st.st_size)) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto out;
    }
    if ((r = fsx_pread_full(fd, p, (size_t)st.st_size, 0, &got)) != 0)
        goto out;
    if (got != (size_t)st.st_size)
        r = FERRY_ERR_CHANGED;
out:
    close(fd);
    if (r != 0) {
        free(p);
        return r;
    }
    *out = p;
    *len = got;
    return 0;
}

static int
fuzz_replay_file(const char *path, fuzz_fn *fn, size_t *count)
{
    uint8_t *p;
    size_t n;
    int r;

    if ((r = fuzz_read_file(path, &p, &n)) != 0)
        return r;
    fn(p, n);
    free(p);
    (*count)++;
    return 0;
}

static int
fuzz_skip_dotfile(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

int
fuzz_replay(const char *path, fuzz_fn *fn, size_t *count)
{
    struct dirent **names = NULL;
    char sub[4096];
    struct stat st;
    int i, n, r = 0;

    if (stat(path, &st) != 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return fuzz_replay_file(path, fn, count);
    if ((n = scandir(path, &names, fuzz_skip_dotfile, alphasort)) < 0)
        return -errno;
    for (i = 0; i < n; i++) {
        if (r == 0 && snprintf(sub, sizeof(sub), "%s/%s", path,
            names[i]->d_name) >= (int)sizeof(sub))
            r = -ENAMETOOLONG;
        if (r == 0)
            r = fuzz_replay_file(sub, fn, count);
        free(names[i]);
    }
    free(names);
    return r;
}
