#include "formcheck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../proto/vmanifest.h"
#include "tensor/ckptfmt.h"

/* The zstd frame's magic number and its largest block (RFC 8878). */
#define ZSTD_MAGIC 0xFD2FB528u
#define ZSTD_BLOCK_MAX (128u << 10)

static int
formcheck_say_torn(struct formcheck *out, enum form f, const char *why)
{
    out->form = f;
    out->whole = 0;
    snprintf(out->why, sizeof(out->why), "%s", why);
    return 0;
}

static int
formcheck_say_whole(struct formcheck *out, enum form f)
{
    out->form = f;
    out->whole = 1;
    out->why[0] = '\0';
    return 0;
}

/* Not judged: the shape does not tell. */
static int
formcheck_say_unknown(struct formcheck *out)
{
    memset(out, 0, sizeof(*out));
    return 0;
}

/* A verdict of ckptfmt (or its negative code) as the answer. */
static int
formcheck_say_verdict(struct formcheck *out, enum form f, int v,
    const char *why)
{
    switch (v) {
    case CKPTFMT_WHOLE:
        return formcheck_say_whole(out, f);
    case CKPTFMT_TORN:
        return formcheck_say_torn(out, f, why);
    case CKPTFMT_UNKNOWN:
        return formcheck_say_unknown(out);
    default:
        return v;
    }
}

/* tar: headers from the start to the two zero blocks. */

static int
formcheck_tar_zero(const uint8_t *b)
{
    size_t i;

    for (i = 0; i < 512; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}

/* A header's size field: octal, or GNU base-256. */
static int
formcheck_tar_size(const uint8_t *f, uint64_t *v)
{
    size_t i;

    *v = 0;
    if (f[0] & 0x80) {
        for (i = 1; i < 12; i++) {
            if (*v >> 56)
                return -1;
            *v = *v << 8 | f[i];
        }
        return 0;
    }
    for (i = 0; i < 12 && f[i] == ' '; i++)
        ;
    for (; i < 12 && f[i] >= '0' && f[i] <= '7'; i++)
        *v = *v << 3 | (uint64_t)(f[i] - '0');
    return 0;
}

/* A pax header's "size=" record, if it has one. */
static int
formcheck_tar_pax_size(const struct ckptfmt_src *s, uint64_t off, uint64_t len,
    uint64_t *size)
{
    char *p, *q, *end;
    int r;

    if (len > 65536)
        return 0;
    if ((p = xmalloc((size_t)len + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = ckptfmt_read(s, off, p, (size_t)len)) != 0) {
        xfree(p);
        return r;
    }
    p[len] = '\0';
    end = p + len;
    for (q = p; q < end; q++)
        if ((q == p || q[-1] == ' ') && end - q > 5 &&
            memcmp(q, "size=", 5) == 0)
            *size = strtoull(q + 5, NULL, 10);
    xfree(p);
    return 0;
}

static int
formcheck_tar_check(const struct ckptfmt_src *s, struct formcheck *out)
{
    uint8_t h[512];
    uint64_t off = 0, size, next_size = UINT64_MAX, n;
    uint32_t members = 0;
    int r;

    for (;;) {
        if (off + 512 > s->size)
            return formcheck_say_torn(out, FORM_TAR,
                "no end-of-archive blocks");
        if ((r = ckptfmt_read(s, off, h, 512)) != 0)
            return r;
        if (formcheck_tar_zero(h)) {
            if (off + 1024 > s->size)
                return formcheck_say_torn(out, FORM_TAR,
                    "no end-of-archive blocks");
            if ((r = ckptfmt_read(s, off + 512, h, 512)) != 0)
                return r;
            return formcheck_tar_zero(h) ? formcheck_say_whole(out,
                FORM_TAR) : formcheck_say_unknown(out);
        }
        if (memcmp(h + 257, "ustar", 5) != 0 || ++members >
            FORMCHECK_MAX_MEMBERS)
            return formcheck_say_unknown(out);
        if (formcheck_tar_size(h + 124, &size) != 0)
            return formcheck_say_unknown(out);
        if (next_size != UINT64_MAX && h[156] != 'x' && h[156] != 'g') {
            size = next_size;
            next_size = UINT64_MAX;
        }
        if (h[156] == 'x' && off + 512 + size <= s->size &&
            (r = formcheck_tar_pax_size(s, off + 512, size, &next_size)) != 0)
            return r;
        /* Directories, links and devices have no data. */
        if (h[156] == '1' || h[156] == '2' || h[156] == '3' ||
            h[156] == '4' || h[156] == '5' || h[156] == '6')
            size = 0;
        if (size > s->size)
            return formcheck_say_torn(out, FORM_TAR,
                "a member's data is cut short");
        n = (size + 511) / 512 * 512;
        if (n > s->size - off - 512)
            return formcheck_say_torn(out, FORM_TAR,
                "a member's data is cut short");
        off += 512 + n;
    }
}

/*
 * A volume: one zstd frame with its content checksum, as ferry writes each
 * (engine/volume/volume.h). Its blocks are walked by their 3-byte headers,
 * never their data: whole when the last block and the checksum end the file. A
 * frame with a dictionary or without a checksum, or bytes after it (another
 * frame), is not one of ours.
 */
static int
formcheck_volume_check(const struct ckptfmt_src *s, uint8_t fhd,
    struct formcheck *out)
{
    static const uint8_t did_len[4] = { 0, 1, 2, 4 };
    static const uint8_t fcs_len[4] = { 0, 2, 4, 8 };
    uint8_t b[3];
    uint64_t off, len;
    uint32_t h, blocks = 0;
    int r, single = (fhd & 0x20) != 0;

    if ((fhd & 0x08) || (fhd & 0x03) || !(fhd & 0x04))
        return formcheck_say_unknown(out);
    off = 5 + !single + did_len[fhd & 3] +
        (fhd >> 6 == 0 ? (uint64_t)single : fcs_len[fhd >> 6]);
    for (;;) {
        if (off + 3 > s->size)
            return formcheck_say_torn(out, FORM_VOLUME,
                "a block header is cut short");
        if (++blocks > FORMCHECK_MAX_MEMBERS)
            return formcheck_say_unknown(out);
        if ((r = ckptfmt_read(s, off, b, sizeof(b))) != 0)
            return r;
        h = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
        if ((h >> 1 & 3) == 3 || h >> 3 > ZSTD_BLOCK_MAX)
            return formcheck_say_unknown(out);
        /* An RLE block holds one byte, however many it stands for. */
        len = (h >> 1 & 3) == 1 ? 1 : h >> 3;
        if (len > s->size - off - 3)
            return formcheck_say_torn(out, FORM_VOLUME,
                "a block is cut short");
        off += 3 + len;
        if (h & 1)
            break;
    }
    if (s->size - off < 4)
        return formcheck_say_torn(out, FORM_VOLUME,
            "no checksum after the last block");
    return s->size - off == 4 ? formcheck_say_whole(out, FORM_VOLUME) :
        formcheck_say_unknown(out);
}

/* The record type of one manifest line (without its '\n'), or 0 when
 * it does not decode. */
static enum vman_type
formcheck_vman_type_of(const char *line, size_t n, char *store)
{
    struct vman_rec rec;

    return vman_decode(line, n, &rec, store) == 0 ? rec.type : 0;
}

/*
 * A volume set's manifest (proto/vmanifest.h): known by its head line;
 * whole when its last line, ended by a newline at the file's end, is the
 * end record. Lines between are not read: two reads of at most
 * VMAN_MAX_LINE + 1 bytes, at its start and its end.
 */
static int
formcheck_vmanifest_check(const struct ckptfmt_src *s, struct formcheck *out)
{
    size_t cap = VMAN_MAX_LINE + 1, n, head;
    char *buf, *store, *q;
    uint64_t from;
    int r;

    buf = xmalloc(cap);
    store = xmalloc(VMAN_MAX_PATH + 1);
    if (buf == NULL || store == NULL) {
        r = FERRY_ERR_NOMEM;
        goto out;
    }
    n = s->size < cap ? (size_t)s->size : cap;
    if ((r = ckptfmt_read(s, 0, buf, n)) != 0)
        goto out;
    if ((q = memchr(buf, '\n', n)) == NULL ||
        formcheck_vman_type_of(buf, (size_t)(q - buf), store) != VMAN_HEAD) {
        r = formcheck_say_unknown(out);
        goto out;
    }
    head = (size_t)(q - buf) + 1;
    if (s->size == head) {
        r = formcheck_say_torn(out, FORM_VMANIFEST, "no end line");
        goto out;
    }
    /* The last line and its newline: after the head line, at most
     * VMAN_MAX_LINE bytes before the newline. */
    from = s->size - 1 - head < VMAN_MAX_LINE ? head : s->size - 1 -
        VMAN_MAX_LINE;
    n = (size_t)(s->size - from);
    if ((r = ckptfmt_read(s, from, buf, n)) != 0)
        goto out;
    if (buf[n - 1] != '\n') {
        r = formcheck_say_torn(out, FORM_VMANIFEST,
            "its last line is cut short");
        goto out;
    }
    q = memrchr(buf, '\n', n - 1);
    if (q == NULL && from != head) {
        r = formcheck_say_torn(out, FORM_VMANIFEST,
            "its last line is too long");
        goto out;
    }
    q = q != NULL ? q + 1 : buf;
    r = formcheck_vman_type_of(q, (size_t)(buf + n - 1 - q),
        store) == VMAN_END ?
        formcheck_say_whole(out, FORM_VMANIFEST) :
        formcheck_say_torn(out, FORM_VMANIFEST, "no end line");
out:
    xfree(buf);
    xfree(store);
    return r;
}

static int
formcheck_src(const struct ckptfmt_src *s, struct formcheck *out)
{
    struct ckptfmt_npy npy;
    const char *why = NULL;
    uint8_t head[16];
    uint64_t data;
    int r;

    memset(out, 0, sizeof(*out));
    memset(head, 0, sizeof(head));
    if (s->size < 16)
        return 0;
    /* A file that shrank reads short: formcheck_fd says unknown. */
    if ((r = ckptfmt_read(s, 0, head, sizeof(head))) != 0)
        return r;
    switch (ckptfmt_sniff(head)) {
    case CKPTFMT_ZIP:
        r = ckptfmt_zip(s, NULL, NULL, &why);
        return formcheck_say_verdict(out, FORM_ZIP, r, why);
    case CKPTFMT_NPY:
        r = ckptfmt_npy(s, head, &npy, &why);
        return formcheck_say_verdict(out, FORM_NPY, r, why);
    case CKPTFMT_SAFETENSORS:
        r = ckptfmt_safetensors(s, head, NULL, NULL, &data, &why);
        return formcheck_say_verdict(out, FORM_SAFETENSORS, r, why);
    default:
        break;
    }
    if (ckptfmt_le32(head) == ZSTD_MAGIC)
        return formcheck_volume_check(s, head[4], out);
    if (head[0] == '{')
        return formcheck_vmanifest_check(s, out);
    if (s->size >= 512) {
        uint8_t magic[5];

        if ((r = ckptfmt_read(s, 257, magic, 5)) != 0)
            return r;
        if (memcmp(magic, "ustar", 5) == 0)
            return formcheck_tar_check(s, out);
    }
    return 0;
}

int
formcheck_fd(int fd, uint64_t size, struct formcheck *out)
{
    struct ckptfmt_src s = { fd, NULL, size };
    int r = formcheck_src(&s, out);

    /* A file that shrank under us reads short: it is being rewritten. */
    if (r == FERRY_ERR_SHORT) {
        memset(out, 0, sizeof(*out));
        return 0;
    }
    return r;
}

int
formcheck_mem(const uint8_t *p, size_t n, struct formcheck *out)
{
    struct ckptfmt_src s = { -1, p, n };

    return formcheck_src(&s, out);
}

const char *
formcheck_name(enum form f)
{
    switch (f) {
    case FORM_ZIP:
        return "zip";
    case FORM_SAFETENSORS:
        return "safetensors";
    case FORM_NPY:
        return "npy";
    case FORM_TAR:
        return "tar";
    case FORM_VOLUME:
        return "volume";
    case FORM_VMANIFEST:
        return "volume-manifest";
    default:
        return "unknown";
    }
}

/* Is a writer there? */

int
formcheck_busy_lease(int fd)
{
#ifdef F_SETLEASE
    if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
        (void)fcntl(fd, F_SETLEASE, F_UNLCK);
        return 0;
    }
    return errno == EAGAIN ? 1 : -errno;
#else
    (void)fd;
    return -ENOSYS;
#endif
}

static int
formcheck_busy_cmp(const void *a, const void *b)
{
    const struct formcheck_open *x = a, *y = b;

    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* 1 if /proc/PID/fdinfo/FD says the descriptor was opened for writing. */
static int
formcheck_busy_fd_writes(int fdinfo, const char *name)
{
    char buf[256], *p;
    ssize_t n;
    int fd;
    unsigned long flags;

    if ((fd = openat(fdinfo, name, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if ((p = strstr(buf, "flags:")) == NULL)
        return 0;
    flags = strtoul(p + 6, NULL, 8);
    return (flags & O_ACCMODE) == O_WRONLY || (flags & O_ACCMODE) == O_RDWR;
}

static int
formcheck_busy_add(struct formcheck_busy *set, size_t *cap,
    const struct stat *st)
{
    struct formcheck_open *v;

    if (set->n >= FORMCHECK_MAX_OPEN)
        return 0;
    if (set->n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        if ((v = xrealloc(set->v, *cap * sizeof(*v))) == NULL)
            return FERRY_ERR_NOMEM;
        set->v = v;
    }
    set->v[set->n].dev = st->st_dev;
    set->v[set->n].ino = st->st_ino;
    set->n++;
    return 0;
}

int
formcheck_busy_scan(struct formcheck_busy *set)
{
    DIR *proc, *fds;
    struct dirent *pe, *fe;
    struct stat st;
    char path[64];
    size_t cap = 0;
    int fdinfo, r = 0;

    memset(set, 0, sizeof(*set));
    if ((proc = opendir("/proc")) == NULL)
        return -errno;
    while (r == 0 && (pe = readdir(proc)) != NULL) {
        if (pe->d_name[0] < '1' || pe->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%.20s/fd", pe->d_name);
        if ((fds = opendir(path)) == NULL)
            continue;  /* another user's, or gone */
        snprintf(path, sizeof(path), "/proc/%.20s/fdinfo", pe->d_name);
        if ((fdinfo = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
            closedir(fds);
            continue;
        }
        while (r == 0 && (fe = readdir(fds)) != NULL) {
            if (fe->d_name[0] == '.' ||
                fstatat(dirfd(fds), fe->d_name, &st, 0) != 0 ||
                !S_ISREG(st.st_mode) || !formcheck_busy_fd_writes(fdinfo,
                    fe->d_name))
                continue;
            r = formcheck_busy_add(set, &cap, &st);
        }
        close(fdinfo);
        closedir(fds);
    }
    closedir(proc);
    if (r != 0) {
        formcheck_busy_free(set);
        return r;
    }
    if (set->n > 1)
        qsort(set->v, set->n, sizeof(*set->v), formcheck_busy_cmp);
    return 0;
}

int
formcheck_busy_in(const struct formcheck_busy *set, dev_t dev, ino_t ino)
{
    struct formcheck_open key = { dev, ino };

    return set->n > 0 && bsearch(&key, set->v, set->n, sizeof(*set->v),
        formcheck_busy_cmp) != NULL;
}

void
formcheck_busy_free(struct formcheck_busy *set)
{
    xfree(set->v);
    set->v = NULL;
    set->n = 0;
}
