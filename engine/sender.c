#include "sender.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../common/log.h"
#include "../common/zst.h"
#include "../proto/frame.h"
#include "../proto/msg.h"

enum snd_state { SND_PLAN, SND_WAIT_READY, SND_RUN, SND_WAIT_SUMMARY,
    SND_DONE };

/* Per-entry progress. E_PRIOR: finished over an earlier connection, so
 * not offered again (directories are, for their final mode and mtime). */
enum { E_NEW, E_OFFERED, E_WANTED, E_SENT, E_ABORTED, E_FINISHED,
    E_PRIOR };

/* A file the receiver wants, from where. */
struct want {
    uint32_t id;
    uint64_t offset;
    struct hash128 prefix;
};

struct sender {
    struct manifest mf;
    struct xfer *x;
    uint32_t block_size;
    uint32_t flags;
    enum snd_state state;
    uint8_t *est;           /* E_* per entry */
    uint64_t *counted;      /* progress bytes counted per entry */
    uint8_t *wanted_before; /* wanted over an earlier connection */
    size_t next_entry;      /* next to offer */
    size_t inflight;        /* offered and not finished */
    size_t notices_sent;
    struct want *wantq;     /* ring of SENDER_WINDOW wanted files */
    size_t wq_head, wq_len;
    uint8_t *scratch;       /* a block: resume checks, compression */
    struct zst *zst;        /* with OPEN_F_COMPRESS */
    int zst_misses;         /* blocks of this file that did not shrink */
    /* The file being sent. */
    int fd;
    int sparse;             /* it has holes worth looking for */
    uint32_t cur;
    uint64_t cur_off;
    struct hash_file *hf;
};

struct sender *
sender_new(struct manifest *mf, uint32_t block_size, uint32_t flags,
    struct xfer *x)
{
    struct sender *s = xcalloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    s->est = xcalloc(mf->n ? mf->n : 1, 1);
    s->counted = xcalloc(mf->n ? mf->n : 1, sizeof(*s->counted));
    s->wanted_before = xcalloc(mf->n ? mf->n : 1, 1);
    s->wantq = xcalloc(SENDER_WINDOW, sizeof(*s->wantq));
    if (s->est == NULL || s->wantq == NULL || s->counted == NULL ||
        s->wanted_before == NULL) {
        xfree(s->est);
        xfree(s->counted);
        xfree(s->wanted_before);
        xfree(s->wantq);
        xfree(s);
        return NULL;
    }
    s->mf = *mf;
    manifest_init(mf);
    s->x = x;
    s->block_size = block_size;
    s->flags = flags;
    s->fd = -1;
    xfer_add(&x->st.entries_total, s->mf.n);
    xfer_add(&x->st.files_total, s->mf.files);
    xfer_add(&x->st.bytes_total, s->mf.bytes);
    return s;
}

static void
sender_close_file(struct sender *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    hash_file_free(s->hf);
    s->hf = NULL;
}

void
sender_free(struct sender *s)
{
    if (s == NULL)
        return;
    sender_close_file(s);
    manifest_cleanup(&s->mf);
    xfree(s->est);
    xfree(s->counted);
    xfree(s->wanted_before);
    xfree(s->wantq);
    xfree(s->scratch);
    zst_free(s->zst);
    xfree(s);
}

void
sender_restart(struct sender *s)
{
    size_t i;

    sender_close_file(s);
    for (i = 0; i < s->mf.n; i++) {
        if (s->est[i] == E_FINISHED || s->est[i] == E_ABORTED ||
            s->est[i] == E_PRIOR) {
            s->est[i] = E_PRIOR;
            continue;
        }
        /* Unfinished: what the new receiver has decides its progress. */
        if (s->est[i] >= E_WANTED)
            s->wanted_before[i] = 1;
        xfer_sub(&s->x->st.bytes_done, s->counted[i]);
        s->counted[i] = 0;
        s->est[i] = E_NEW;
    }
    s->state = SND_PLAN;
    s->next_entry = 0;
    s->inflight = 0;
    s->wq_head = s->wq_len = 0;
}

/* Progress for entry id, remembered so a restart can take it back. */
static void
sender_count(struct sender *s, uint32_t id, uint64_t n)
{
    s->counted[id] += n;
    xfer_add(&s->x->st.bytes_done, n);
}

/* 1 if entry i is offered over this connection. */
static int
sender_offers(const struct sender *s, size_t i)
{
    return s->est[i] != E_PRIOR || s->mf.v[i].kind == ENTRY_DIR;
}

/* An entry left the window. */
static void
sender_finish_entry(struct sender *s, uint32_t id)
{
    s->est[id] = E_FINISHED;
    s->inflight--;
}

static int
sender_on_reply(struct sender *s, const struct frame *f)
{
    struct msg_reply m;
    struct mentry *e;
    struct want *w;
    char text[PROTO_MAX_MESSAGE + 1];
    int r;

    if ((r = msg_reply_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (m.id >= s->next_entry || s->est[m.id] != E_OFFERED)
        return FERRY_ERR_PROTOCOL;
    e = &s->mf.v[m.id];
    switch (m.action) {
    case REPLY_SKIP:
        if (e->kind == ENTRY_FILE) {
            xfer_add(&s->x->st.files_skipped, 1);
            sender_count(s, m.id, e->size);
            xfer_file(s->x, e->rel, "skipped", e->size);
        }
        sender_finish_entry(s, m.id);
        break;
    case REPLY_WANT:
        if (e->kind != ENTRY_FILE || m.offset > e->size ||
            (m.offset % s->block_size != 0 && m.offset != e->size) ||
            (m.offset > 0 && !(s->x->caps & PROTO_CAP_RESUME)) ||
            s->wq_len >= SENDER_WINDOW)
            return FERRY_ERR_PROTOCOL;
        s->est[m.id] = E_WANTED;
        w = &s->wantq[(s->wq_head + s->wq_len) % SENDER_WINDOW];
        w->id = m.id;
        w->offset = m.offset;
        w->prefix = m.prefix;
        s->wq_len++;
        xfer_add(&s->x->st.bytes_payload, e->size);
        break;
    default:
        snprintf(text, sizeof(text), "%.*s", (int)m.text.len, m.text.p);
        xfer_problem(s->x, SIDE_DEST, e->rel, proto_err_from_wire(m.code),
            text);
        if (e->kind == ENTRY_FILE)
            sender_count(s, m.id, e->size);
        sender_finish_entry(s, m.id);
        break;
    }
    return 0;
}

static int
sender_on_file_done(struct sender *s, const struct frame *f)
{
    struct msg_file_done m;
    struct mentry *e;
    char text[PROTO_MAX_MESSAGE + 1];
    int r;

    if ((r = msg_file_done_decode(f->payload, f->len, &m)) != 0)
        return r;
    if (m.id >= s->next_entry ||
        (s->est[m.id] != E_SENT && s->est[m.id] != E_ABORTED))
        return FERRY_ERR_PROTOCOL;
    e = &s->mf.v[m.id];
    if (s->est[m.id] == E_ABORTED) {
        /* Already reported when we gave up on it. */
    } else if (m.code != 0) {
        snprintf(text, sizeof(text), "%.*s", (int)m.text.len, m.text.p);
        xfer_problem(s->x, SIDE_DEST, e->rel, proto_err_from_wire(m.code),
            text);
    } else {
        xfer_add(&s->x->st.files_sent, 1);
        xfer_file(s->x, e->rel, "sent", e->size);
    }
    sender_finish_entry(s, m.id);
    return 0;
}

static int
sender_on_frame(struct sender *s, const struct frame *f, struct conn_step *st)
{
    struct msg_ready ready;
    char name[FSX_NAME_MAX + 1];
    int r;

    if (f->type == MSG_ERROR)
        return xfer_peer_error(s->x, f->payload, f->len);
    switch (s->state) {
    case SND_WAIT_READY:
        if (f->type != MSG_READY)
            break;
        if ((r = msg_ready_decode(f->payload, f->len, &ready)) != 0)
            return r;
        if (ready.rename.len > 0) {
            if (!manifest_single_file(&s->mf))
                return FERRY_ERR_PROTOCOL;
            memcpy(name, ready.rename.p, ready.rename.len);
            name[ready.rename.len] = '\0';
            if ((r = manifest_rename_top(&s->mf, name)) != 0)
                return r;
        }
        s->state = SND_RUN;
        return 0;
    case SND_RUN:
    case SND_WAIT_SUMMARY:
        if (f->type == MSG_REPLY && s->state == SND_RUN)
            return sender_on_reply(s, f);
        if (f->type == MSG_FILE_DONE && s->state == SND_RUN)
            return sender_on_file_done(s, f);
        if (f->type == MSG_SUMMARY && s->state == SND_WAIT_SUMMARY) {
            struct msg_summary sum;

            if ((r = msg_summary_decode(f->payload, f->len, &sum)) != 0)
                return r;
            s->state = SND_DONE;
            st->done = 1;
            return 0;
        }
        break;
    default:
        break;
    }
    log_debug("unexpected %s from receiver", msg_type_name(f->type));
    return FERRY_ERR_PROTOCOL;
}

static int
sender_offer(struct sender *s, struct buf *out)
{
    struct mentry *e = &s->mf.v[s->next_entry];
    struct msg_entry m;
    int r, fd;

    memset(&m, 0, sizeof(m));
    if ((s->flags & OPEN_F_CHECKSUM) && e->kind == ENTRY_FILE &&
        !e->has_hash) {
        fd = open(e->local, FSX_O_READ);
        if (fd < 0 || (r = hash_fd(fd, e->size, s->block_size,
            &e->hash)) != 0)
            r = fd < 0 ? -errno : r;
        else
            e->has_hash = 1;
        if (fd >= 0)
            close(fd);
        if (!e->has_hash) {
            /* Offer it anyway without a hash: the receiver then wants it
             * and the read error is reported when the data is read. */
            log_debug("hash %s: %s", e->local, ferry_strerror(r));
        }
    }
    m.id = (uint32_t)s->next_entry;
    m.kind = e->kind;
    m.mode = e->mode;
    m.size = e->size;
    m.mtime_sec = e->mtime_sec;
    m.mtime_nsec = e->mtime_nsec;
    m.has_hash = e->has_hash;
    m.hash = e->hash;
    m.path.p = e->rel;
    m.path.len = strlen(e->rel);
    m.target.p = e->target;
    m.target.len = e->target != NULL ? strlen(e->target) : 0;
    if ((r = msg_entry_encode(out, &m)) != 0)
        return r;
    s->est[s->next_entry++] = E_OFFERED;
    s->inflight++;
    return 0;
}

/* Gives up on the current file: tells the receiver and reports it. */
static int
sender_abort_file(struct sender *s, struct buf *out, int code)
{
    struct mentry *e = &s->mf.v[s->cur];
    struct msg_file_end m;
    const char *text = ferry_strerror(code);

    memset(&m, 0, sizeof(m));
    m.id = s->cur;
    m.code = proto_err_to_wire(code);
    m.text.p = text;
    m.text.len = strlen(text);
    xfer_problem(s->x, SIDE_SOURCE, e->local, code, NULL);
    sender_count(s, s->cur, e->size > s->cur_off ? e->size - s->cur_off : 0);
    s->est[s->cur] = E_ABORTED;
    sender_close_file(s);
    return msg_file_end_encode(out, &m);
}

static int
sender_same_file(const struct mentry *e, const struct stat *st)
{
    return S_ISREG(st->st_mode) && (uint64_t)st->st_size == e->size &&
        st->st_mtim.tv_sec == e->mtime_sec &&
        (uint32_t)st->st_mtim.tv_nsec == e->mtime_nsec;
}

static int sender_in_hole(int fd, uint64_t off, uint64_t len);

/* Hashes the block at off as sender_send_block would send it. */
static int
sender_hash_at(struct sender *s, uint64_t off, size_t len,
    struct hash128 *h)
{
    size_t got;
    int r;

    if (s->sparse && sender_in_hole(s->fd, off, len)) {
        hash_zero_block(len, h);
        return 0;
    }
    if ((r = fsx_pread_full(s->fd, s->scratch, len, off, &got)) != 0)
        return r;
    if (got != len)
        return FERRY_ERR_CHANGED;
    hash_block(s->scratch, len, h);
    return 0;
}

/*
 * The receiver has the first w->offset bytes from an earlier run. Resume
 * there only if our file gives the same blocks: read and hash them (this
 * costs local reading, not the network), and feed their hashes to the
 * file hash. Otherwise send the file from the start; the receiver sees a
 * first block at 0 and starts over.
 */
static int
sender_check_resume(struct sender *s, const struct want *w)
{
    struct mentry *e = &s->mf.v[s->cur];
    struct hash_file *pre;
    struct hash128 h, got;
    uint64_t off;
    int r = 0;

    if (s->scratch == NULL &&
        (s->scratch = xmalloc(s->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((pre = hash_file_new(w->offset, s->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
    for (off = 0; off < w->offset && r == 0; off += s->block_size) {
        size_t len = w->offset - off < s->block_size ?
            (size_t)(w->offset - off) : s->block_size;

        if ((r = sender_hash_at(s, off, len, &h)) == 0) {
            hash_file_add(pre, &h);
            hash_file_add(s->hf, &h);
        }
    }
    if (r == 0) {
        hash_file_final(pre, &got);
        if (hash_equal(&got, &w->prefix)) {
            s->cur_off = w->offset;
            if (!s->wanted_before[s->cur]) {
                /* From an earlier run: after a reconnect it is data this
                 * run sent, already counted as literal. */
                xfer_add(&s->x->st.resumed_bytes, w->offset);
                xfer_add(&s->x->st.bytes_matched, w->offset);
            }
            sender_count(s, s->cur, w->offset);
        } else {
            /* Not the data the receiver holds: all of it again. */
            hash_file_free(s->hf);
            if ((s->hf = hash_file_new(e->size, s->block_size)) == NULL)
                r = FERRY_ERR_NOMEM;
        }
    }
    hash_file_free(pre);
    return r;
}

static int
sender_open_next(struct sender *s, struct buf *out)
{
    struct want w = s->wantq[s->wq_head];
    struct mentry *e;
    struct stat st;
    int r;

    s->wq_head = (s->wq_head + 1) % SENDER_WINDOW;
    s->wq_len--;
    s->cur = w.id;
    s->cur_off = 0;
    s->zst_misses = 0;
    e = &s->mf.v[s->cur];
    s->fd = open(e->local, FSX_O_READ);
    if (s->fd < 0)
        return sender_abort_file(s, out, errno == ELOOP ?
            FERRY_ERR_CHANGED : -errno);
    if (fstat(s->fd, &st) != 0)
        return sender_abort_file(s, out, -errno);
    if (!sender_same_file(e, &st))
        return sender_abort_file(s, out, FERRY_ERR_CHANGED);
    /* Fewer blocks allocated than the size needs: it has holes. */
    s->sparse = (uint64_t)st.st_blocks * 512 < e->size;
    if ((s->hf = hash_file_new(e->size, s->block_size)) == NULL)
        return FERRY_ERR_NOMEM;
#ifdef POSIX_FADV_SEQUENTIAL
    if (e->size > s->block_size)
        (void)posix_fadvise(s->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    if (w.offset > 0 && (r = sender_check_resume(s, &w)) != 0)
        return r == FERRY_ERR_NOMEM ? r : sender_abort_file(s, out, r);
    return 0;
}

/* 1 if [off, off + len) lies in a hole of the file. */
static int
sender_in_hole(int fd, uint64_t off, uint64_t len)
{
#ifdef SEEK_DATA
    off_t d = lseek(fd, (off_t)off, SEEK_DATA);

    if (d < 0)
        return errno == ENXIO;  /* no data after off */
    return (uint64_t)d >= off + len;
#else
    (void)fd; (void)off; (void)len;
    return 0;
#endif
}

static int
sender_end_file(struct sender *s, struct buf *out)
{
    struct mentry *e = &s->mf.v[s->cur];
    struct msg_file_end m;
    struct stat st;
    int r;

    if (fstat(s->fd, &st) != 0)
        return sender_abort_file(s, out, -errno);
    if (!sender_same_file(e, &st))
        return sender_abort_file(s, out, FERRY_ERR_CHANGED);
    memset(&m, 0, sizeof(m));
    m.id = s->cur;
    hash_file_final(s->hf, &m.hash);
    if ((r = msg_file_end_encode(out, &m)) != 0)
        return r;
    s->est[s->cur] = E_SENT;
    sender_close_file(s);
    return 0;
}

/* Appends the next block of the current file to out. */
/* Blocks of a file that may fail to shrink before we stop trying: data
 * that is already compressed (checkpoints, images) costs nothing then. */
#define SENDER_ZST_TRIES 4

/*
 * Replaces the len raw bytes at data with their zstd form when that is at
 * least 1/16 smaller. Returns the bytes to send and sets BLOCK_F_ZSTD.
 */
static size_t
sender_compress(struct sender *s, struct msg_block *m, uint8_t *data,
    size_t len)
{
    size_t clen;

    if (!(s->flags & OPEN_F_COMPRESS) || !(s->x->caps & PROTO_CAP_ZSTD) ||
        s->zst_misses >= SENDER_ZST_TRIES || len < 4096)
        return len;
    if ((s->zst == NULL && (s->zst = zst_new()) == NULL) ||
        (s->scratch == NULL &&
        (s->scratch = xmalloc(s->block_size)) == NULL))
        return len;
    if (zst_compress(s->zst, s->scratch, len - len / 16, data, len,
        &clen) != 0) {
        s->zst_misses++;
        return len;
    }
    s->zst_misses = 0;
    memcpy(data, s->scratch, clen);
    m->flags |= BLOCK_F_ZSTD;
    xfer_add(&s->x->st.bytes_compressed, len - clen);
    return clen;
}

static int
sender_send_block(struct sender *s, struct buf *out)
{
    struct mentry *e = &s->mf.v[s->cur];
    uint64_t left = e->size - s->cur_off;
    size_t len = left < s->block_size ? (size_t)left : s->block_size;
    struct msg_block m;
    uint8_t *data;
    size_t mark, got;
    int r;

    memset(&m, 0, sizeof(m));
    m.id = s->cur;
    m.offset = s->cur_off;
    m.raw_len = (uint32_t)len;
    if (s->sparse && sender_in_hole(s->fd, s->cur_off, len)) {
        m.flags = BLOCK_F_ZERO;
        hash_zero_block(len, &m.hash);
        if ((r = msg_block_encode(out, &m)) != 0)
            return r;
        xfer_add(&s->x->st.bytes_sparse, len);
    } else {
        if ((r = msg_block_reserve(out, len, &mark, &data)) != 0)
            return r;
        if ((r = fsx_pread_full(s->fd, data, len, s->cur_off, &got)) != 0 ||
            got != len) {
            buf_unreserve(out, buf_used(out) - mark);
            return sender_abort_file(s, out, r != 0 ? r :
                FERRY_ERR_CHANGED);
        }
        hash_block(data, len, &m.hash);
        if (hash_is_zero(data, len)) {
            m.flags = BLOCK_F_ZERO;
            xfer_add(&s->x->st.bytes_sparse, len);
        } else {
            m.data = data;
            m.data_len = sender_compress(s, &m, data, len);
            xfer_add(&s->x->st.bytes_literal, len);
        }
        if ((r = msg_block_commit(out, mark, len, &m)) != 0)
            return r;
    }
    hash_file_add(s->hf, &m.hash);
    s->cur_off += len;
    sender_count(s, s->cur, len);
    return 0;
}

static int
sender_send_notices(struct sender *s, struct buf *out)
{
    int r;

    while (s->notices_sent < s->mf.nnotices) {
        struct mnotice *n = &s->mf.notices[s->notices_sent];
        struct msg_notice m;

        m.code = proto_err_to_wire(n->code);
        m.path.p = n->path;
        m.path.len = strlen(n->path);
        if (m.path.len > PROTO_MAX_PATH)
            m.path.len = PROTO_MAX_PATH;
        m.text.p = n->text;
        m.text.len = strlen(n->text);
        if (m.text.len > PROTO_MAX_MESSAGE)
            m.text.len = PROTO_MAX_MESSAGE;
        if ((r = msg_notice_encode(out, &m)) != 0)
            return r;
        /* The side that scanned reports its own problems. */
        xfer_problem(s->x, SIDE_SOURCE, n->path, n->code, n->text);
        s->notices_sent++;
    }
    return 0;
}

static int
sender_produce(struct sender *s, struct conn_step *st)
{
    struct buf *out = st->out;
    struct msg_plan plan;
    int r;

    if (s->state == SND_PLAN) {
        size_t i, n = 0;

        for (i = 0; i < s->mf.n; i++)
            n += sender_offers(s, i);
        memset(&plan, 0, sizeof(plan));
        plan.flags = manifest_single_file(&s->mf) ? PLAN_F_SINGLE_FILE : 0;
        plan.ntop = s->mf.ntop;
        plan.entries_total = n;
        plan.files_total = s->mf.files < n ? s->mf.files : n;
        plan.bytes_total = s->mf.bytes;
        if ((r = msg_plan_encode(out, &plan)) != 0)
            return r;
        s->state = SND_WAIT_READY;
        return 0;
    }
    if (s->state != SND_RUN)
        return 0;
    if ((r = sender_send_notices(s, out)) != 0)
        return r;
    while (buf_used(out) < CONN_STEP_BUDGET) {
        while (s->next_entry < s->mf.n && !sender_offers(s, s->next_entry))
            s->next_entry++;
        if (s->next_entry < s->mf.n && s->inflight < SENDER_WINDOW) {
            if ((r = sender_offer(s, out)) != 0)
                return r;
            continue;
        }
        if (s->fd < 0 && s->wq_len > 0) {
            if ((r = sender_open_next(s, out)) != 0)
                return r;
            continue;
        }
        if (s->fd < 0)
            break;
        if (s->cur_off < s->mf.v[s->cur].size)
            r = sender_send_block(s, out);
        else
            r = sender_end_file(s, out);
        if (r != 0)
            return r;
    }
    if (buf_used(out) >= CONN_STEP_BUDGET) {
        st->more = 1;
        return 0;
    }
    if (s->next_entry == s->mf.n && s->inflight == 0) {
        if ((r = msg_end_encode(out)) != 0)
            return r;
        s->state = SND_WAIT_SUMMARY;
    }
    return 0;
}

int
sender_step(void *role, struct conn_step *st)
{
    struct sender *s = role;
    struct frame f;
    size_t off = 0, used;
    int r;

    while (off < st->in_len) {
        if ((r = frame_parse(st->in + off, st->in_len - off, &f,
            &used)) != 0)
            return r;
        off += used;
        if ((r = sender_on_frame(s, &f, st)) != 0)
            return r;
    }
    if (s->state == SND_DONE)
        return 0;
    if (st->eof)
        return FERRY_ERR_CLOSED;
    return sender_produce(s, st);
}
