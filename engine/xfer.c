#include "xfer.h"

#include <stdarg.h>
#include <stdio.h>

#include "../common/err.h"
#include "../proto/msg.h"

void
xfer_file(struct xfer *x, const char *path, const char *action,
    uint64_t bytes, const struct xfer_file_counts *n)
{
    if (x->ev.file != NULL)
        x->ev.file(x->ev.ctx, path, action, bytes, n);
}

void
xfer_volume(struct xfer *x, uint32_t index, const char *action,
    uint64_t files, uint64_t file_bytes, uint64_t bytes)
{
    if (x->ev.volume != NULL)
        x->ev.volume(x->ev.ctx, index, action, files, file_bytes, bytes);
}

/* A failure on side: what picks the exit code. */
static void
xfer_count_failure(struct xfer *x, enum xfer_side side, int code)
{
    int zero = 0;

    xfer_add(side == SIDE_SOURCE ? &x->st.failed_source :
        &x->st.failed_dest, 1);
    atomic_compare_exchange_strong(&x->st.worst_error, &zero, code);
}

void
xfer_problem(struct xfer *x, enum xfer_side side, const char *path,
    int code, const char *text)
{
    if (code != 0)
        xfer_count_failure(x, side, code);
    if (x->ev.problem != NULL)
        x->ev.problem(x->ev.ctx, side, path, code,
            text != NULL ? text : ferry_strerror(code));
}

/* A regular file that failed: its count and its event. */
static void
xfer_count_file_failed(struct xfer *x, const char *path, uint64_t bytes)
{
    xfer_add(&x->st.files_failed, 1);
    xfer_file(x, path, "failed", bytes, NULL);
}

void
xfer_file_failed(struct xfer *x, enum xfer_side side, const char *path,
    const char *shown, uint64_t bytes, int code, const char *text)
{
    xfer_count_file_failed(x, path, bytes);
    xfer_problem(x, side, shown != NULL ? shown : path, code, text);
}

void
xfer_entry_failed(struct xfer *x, enum xfer_side side, int is_file,
    const char *path, uint64_t bytes, int code, const char *text)
{
    if (is_file)
        xfer_file_failed(x, side, path, NULL, bytes, code, text);
    else
        xfer_problem(x, side, path, code, text);
}

void
xfer_file_stopped(struct xfer *x, uint32_t id, const char *path,
    uint64_t bytes, int code)
{
    if (x->stopped)
        return;
    x->stopped = 1;
    x->stop_id = id;
    xfer_count_failure(x, SIDE_DEST, code);
    xfer_count_file_failed(x, path, bytes);
}

void
xfer_mark_now(struct xfer *x, struct xfer_mark *m)
{
    m->moved = xfer_get(&x->st.bytes_moved);
    m->spared = xfer_get(&x->st.bytes_spared);
    m->compressed = xfer_get(&x->st.bytes_compressed);
}

int
xfer_wire_left(struct xfer *x, const struct xfer_mark *mark, uint64_t left,
    uint64_t *wire)
{
    struct xfer_mark now;
    uint64_t moved, seen, saved, crossed;

    if (xfer_get(&x->st.bytes_reusable) == 0 &&
        xfer_get(&x->st.bytes_packed) == 0) {
        *wire = left;
        return 1;
    }
    xfer_mark_now(x, &now);
    moved = now.moved - mark->moved;
    seen = moved + (now.spared - mark->spared);
    if (seen < XFER_SHARE_SAMPLE)
        return 0;
    /* A volume's saving may be taken back a little as it ends. */
    saved = now.compressed > mark->compressed ?
        now.compressed - mark->compressed : 0;
    crossed = moved > saved ? moved - saved : 0;
    *wire = (uint64_t)((double)left * (double)crossed / (double)seen);
    return 1;
}

int
xfer_fail(struct xfer *x, int code, const char *fmt, ...)
{
    va_list ap;

    if (x->local_error[0] == '\0') {
        va_start(ap, fmt);
        vsnprintf(x->local_error, sizeof(x->local_error), fmt, ap);
        va_end(ap);
    }
    return code;
}

int
xfer_peer_error(struct xfer *x, const uint8_t *payload, size_t len)
{
    struct msg_error e;
    int r;

    if ((r = msg_error_decode(payload, len, &e)) != 0)
        return r;
    snprintf(x->peer_error, sizeof(x->peer_error), "%.*s",
        (int)e.text.len, e.text.p);
    x->peer_error_code = proto_err_from_wire(e.code);
    return FERRY_ERR_PEER;
}
