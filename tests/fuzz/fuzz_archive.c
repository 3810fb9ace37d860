/*
 * fuzz_archive.c: the checks behind the tar and vmanifest fuzz targets
 * (see fuzz_common.h): proto/tar.h's reader and proto/vmanifest.h's over
 * untrusted bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/hash.h"
#include "../../proto/limits.h"
#include "../../proto/tar.h"
#include "../../proto/vmanifest.h"
#include "fuzz_common.h"

/* What one reading of a stream gave: a digest of every event, so that
 * readings in different chunk sizes can be compared. */
struct fuzz_tar_run {
    struct hash128 events;   /* entries and the end, in order */
    uint64_t data;           /* FNV-1a of all data bytes: the same
                                however the data events cut it */
    int rc;                  /* the error, or tar_rd_finish's result */
    uint64_t offset;
};

static void
fuzz_fold(struct hash128 *acc, const void *p, size_t n)
{
    uint8_t tmp[2 * HASH_LEN];
    struct hash128 h;

    hash_block(p, n, &h);
    memcpy(tmp, acc->b, HASH_LEN);
    memcpy(tmp + HASH_LEN, h.b, HASH_LEN);
    hash_block(tmp, 2 * HASH_LEN, acc);
}

/* Checks one entry event against tar.h's promises. */
static const char *
fuzz_tar_entry(const struct tar_entry *e)
{
    if (e->type < TAR_FILE || e->type > TAR_FIFO)
        return "entry type out of range";
    if (e->path == NULL || e->path_len == 0 || e->path_len > TAR_MAX_NAME ||
        strlen(e->path) != e->path_len)
        return "entry path not a NUL-terminated name within bounds";
    if (e->link == NULL || strlen(e->link) != e->link_len ||
        e->link_len > TAR_MAX_NAME)
        return "link not a NUL-terminated name within bounds";
    if (e->mode > 07777 || e->mtime_nsec >= 1000000000u)
        return "mode or mtime out of range";
    if (e->size > TAR_MAX_SIZE || (e->type != TAR_FILE && e->size != 0))
        return "size out of range, or data in a non-file";
    if (e->is_piece && (e->type != TAR_FILE || e->piece.index == 0 ||
        e->piece.offset > e->piece.file_size ||
        e->size > e->piece.file_size - e->piece.offset ||
        e->piece.path == NULL || e->piece.path_len == 0 ||
        strlen(e->piece.path) != e->piece.path_len))
        return "piece fields out of range";
    return NULL;
}

/* Reads (p, n) feeding at most chunk bytes per call. */
static const char *
fuzz_tar_read(const uint8_t *p, size_t n, size_t chunk,
    struct fuzz_tar_run *run)
{
    struct tar_event ev;
    struct tar_rd t;
    uint64_t left = 0, consumed = 0;
    const char *why = NULL;
    size_t off = 0, used, give, k;
    int r, in_entry = 0;

    memset(run, 0, sizeof(*run));
    if (tar_rd_init(&t) != 0)
        return NULL;  /* out of memory: nothing to check */
    for (;;) {
        give = n - off < chunk ? n - off : chunk;
        r = tar_rd_next(&t, p + off, give, &used, &ev);
        if (r != 0) {
            run->rc = r;
            if (tar_rd_why(&t) == NULL)
                why = "an error without a reason";
            break;
        }
        if (used > give) {
            why = "consumed more than given";
            break;
        }
        consumed += used;
        if (ev.ev == TAR_EV_ENTRY) {
            if (in_entry && left != 0) {
                why = "an entry before the last one's data";
                break;
            }
            if ((why = fuzz_tar_entry(&ev.e)) != NULL)
                break;
            fuzz_fold(&run->events, ev.e.path, ev.e.path_len);
            fuzz_fold(&run->events, &ev.e.size, sizeof(ev.e.size));
            left = ev.e.size;
            in_entry = 1;
        } else if (ev.ev == TAR_EV_DATA) {
            if (!in_entry || ev.len == 0 || ev.len > left ||
                ev.data < p + off || ev.data + ev.len > p + off + used) {
                why = "data outside its entry or its input";
                break;
            }
            left -= ev.len;
            for (k = 0; k < ev.len; k++)
                run->data = (run->data ^ ev.data[k]) *
                    UINT64_C(1099511628211);
        } else if (ev.ev == TAR_EV_END) {
            fuzz_fold(&run->events, "end", 3);
        } else if (used < give) {
            why = "asked for more before taking what it had";
            break;
        }
        off += used;
        if (off == n && ev.ev == TAR_EV_NEED) {
            run->rc = tar_rd_finish(&t);
            break;
        }
    }
    if (why == NULL && tar_rd_offset(&t) != consumed && run->rc == 0)
        why = "offset differs from the bytes consumed";
    run->offset = consumed;
    tar_rd_cleanup(&t);
    return why;
}

const char *
fuzz_tar(const uint8_t *p, size_t n, int *rc)
{
    struct fuzz_tar_run whole, bytes;
    const char *why;

    if ((why = fuzz_tar_read(p, n, n > 0 ? n : 1, &whole)) != NULL)
        return why;
    *rc = whole.rc;
    /* The same stream a few bytes at a time gives the same events. */
    if ((why = fuzz_tar_read(p, n, 7, &bytes)) != NULL)
        return why;
    if (bytes.rc != whole.rc || bytes.data != whole.data ||
        !hash_equal(&bytes.events, &whole.events))
        return "chunked reading differs from reading at once";
    return NULL;
}

int
fuzz_tar_one(const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_tar(p, n, &rc)) != NULL) {
        fprintf(stderr, "fuzz: tar: %s\n", why);
        abort();
    }
    return 0;
}

/* Checks a record vman_decode accepted against vmanifest.h's promises. */
static const char *
fuzz_vman_rec(const struct vman_rec *v, const char *store)
{
    if (v->type < VMAN_HEAD || v->type > VMAN_END)
        return "type out of range";
    if (v->path == NULL ? v->type != VMAN_END || v->path_len != 0 :
        v->path != store || v->path_len == 0 ||
        v->path_len > VMAN_MAX_PATH || v->path[v->path_len] != '\0' ||
        memchr(v->path, '\0', v->path_len) != NULL)
        return "path";
    if (v->type == VMAN_HEAD && (v->block_size < PROTO_MIN_BLOCK ||
        v->block_size > PROTO_MAX_BLOCK ||
        (v->block_size & (v->block_size - 1)) != 0))
        return "head: block size";
    if (v->type == VMAN_PIECE && (v->index == 0 ||
        v->file_offset > UINT64_MAX - v->size))
        return "piece: index or range";
    if ((v->type == VMAN_DIR || v->type == VMAN_SYMLINK ||
        v->type == VMAN_PIECE || (v->type == VMAN_FILE && v->pieces == 0)) &&
        v->volume == 0)
        return "entry without a volume";
    return NULL;
}

/* One line (without its '\n'): read, then written and read back to the
 * same record and written again to the same line. */
static const char *
fuzz_vman_line(const char *p, size_t n, int *rc)
{
    static const struct vman_rec zero;
    static char store[VMAN_MAX_PATH + 1], store2[VMAN_MAX_PATH + 1];
    struct vman_rec v, again;
    const char *why;
    struct buf b, b2;
    size_t len;

    memset(&v, 0xa5, sizeof(v));
    if ((*rc = vman_decode(p, n, &v, store)) != 0)
        return (*rc == FERRY_ERR_FORMAT || *rc == FERRY_ERR_TOO_LARGE) &&
            memcmp(&v, &zero, sizeof(v)) == 0 ? NULL :
            "a failed read is not FORMAT or TOO_LARGE with fields zero";
    if ((why = fuzz_vman_rec(&v, store)) != NULL)
        return why;
    buf_init(&b, 4 * VMAN_MAX_LINE);
    buf_init(&b2, 4 * VMAN_MAX_LINE);
    if (vman_encode(&b, &v) != 0)
        why = "the writer refuses a record read";
    else if ((len = buf_used(&b) - 1) > VMAN_MAX_LINE)
        why = "the writer's line is longer than the reader takes";
    else if (vman_decode((const char *)buf_ptr(&b), len, &again,
        store2) != 0)
        why = "the reader refuses the writer's line";
    else if (again.type != v.type || (v.type != VMAN_END &&
        (again.path_len != v.path_len ||
        memcmp(again.path, v.path, v.path_len) != 0)))
        why = "a line written and read back names another record";
    else if (vman_encode(&b2, &again) != 0 || buf_used(&b2) != len + 1 ||
        memcmp(buf_ptr(&b2), buf_ptr(&b), len + 1) != 0)
        why = "writing a record read back changes its line";
    buf_cleanup(&b);
    buf_cleanup(&b2);
    return why;
}

const char *
fuzz_vman(const uint8_t *p, size_t n, int *rc)
{
    const char *s = (const char *)p, *nl, *why;
    size_t len;

    *rc = 0;
    while (n > 0) {
        nl = memchr(s, '\n', n);
        len = nl != NULL ? (size_t)(nl - s) : n;
        if ((why = fuzz_vman_line(s, len, rc)) != NULL)
            return why;
        len += nl != NULL;
        s += len;
        n -= len;
    }
    return NULL;
}

int
fuzz_vman_one(const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_vman(p, n, &rc)) != NULL) {
        fprintf(stderr, "fuzz: vmanifest: %s\n", why);
        abort();
    }
    return 0;
}
