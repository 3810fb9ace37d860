#include "formcheck.h"

#include <ctype.h>
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

/* Where the bytes come from: a file or memory. */
struct fc_src {
    int fd;
    const uint8_t *mem;
    uint64_t size;
};

/* Reads exactly n bytes at off; FERRY_ERR_SHORT past the end. */
static int
fc_read(const struct fc_src *s, uint64_t off, void *p, size_t n)
{
    size_t got;
    int r;

    if (off > s->size || n > s->size - off)
        return FERRY_ERR_SHORT;
    if (s->mem != NULL) {
        memcpy(p, s->mem + off, n);
        return 0;
    }
    if ((r = fsx_pread_full(s->fd, p, n, off, &got)) != 0)
        return r;
    return got == n ? 0 : FERRY_ERR_SHORT;
}

static uint16_t
le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t
le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
        (uint32_t)p[3] << 24;
}

static uint64_t
le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int
fc_torn(struct formcheck *out, enum form f, const char *why)
{
    out->form = f;
    out->whole = 0;
    snprintf(out->why, sizeof(out->why), "%s", why);
    return 0;
}

static int
fc_whole(struct formcheck *out, enum form f)
{
    out->form = f;
    out->whole = 1;
    out->why[0] = '\0';
    return 0;
}

/* Not judged: the shape does not tell. */
static int
fc_unknown(struct formcheck *out)
{
    memset(out, 0, sizeof(*out));
    return 0;
}

/* zip */

#define ZIP_LOCAL 0x04034b50u
#define ZIP_CENTRAL 0x02014b50u
#define ZIP_EOCD 0x06054b50u
#define ZIP64_LOCATOR 0x07064b50u
#define ZIP64_EOCD 0x06064b50u
#define ZIP_EOCD_LEN 22u
#define ZIP_TAIL (ZIP_EOCD_LEN + 65535u)

struct zip_dir {
    uint64_t entries, size, offset;
    uint64_t end;          /* where the records after the directory start */
};

/* The end of central directory record, the last bytes of a whole zip
 * (its comment aside), and the zip64 one it may point to. */
static int
zip_find_end(const struct fc_src *s, struct zip_dir *d, const char **why)
{
    uint8_t *tail, rec[56];
    uint64_t start, pos, loc;
    size_t n, i;
    int r, found = 0;

    if (s->size < ZIP_EOCD_LEN) {
        *why = "no end of central directory";
        return 1;
    }
    n = s->size < ZIP_TAIL ? (size_t)s->size : ZIP_TAIL;
    start = s->size - n;
    if ((tail = xmalloc(n)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = fc_read(s, start, tail, n)) != 0)
        goto out;
    for (i = n - ZIP_EOCD_LEN + 1; i-- > 0;) {
        if (le32(tail + i) == ZIP_EOCD &&
            i + ZIP_EOCD_LEN + le16(tail + i + 20) == n) {
            found = 1;
            break;
        }
    }
    if (!found) {
        *why = "no end of central directory";
        r = 1;
        goto out;
    }
    pos = start + i;
    d->entries = le16(tail + i + 10);
    d->size = le32(tail + i + 12);
    d->offset = le32(tail + i + 16);
    d->end = pos;
    if (d->entries == 0xffff || d->size == 0xffffffffu ||
        d->offset == 0xffffffffu) {
        if (pos < 20 || (r = fc_read(s, pos - 20, rec, 20)) != 0 ||
            le32(rec) != ZIP64_LOCATOR) {
            *why = "no zip64 end of central directory";
            r = r < 0 && r != FERRY_ERR_SHORT ? r : 1;
            goto out;
        }
        loc = le64(rec + 8);
        if (loc > pos - 20 || pos - 20 - loc < 56 ||
            (r = fc_read(s, loc, rec, 56)) != 0 || le32(rec) != ZIP64_EOCD) {
            *why = "bad zip64 end of central directory";
            r = r < 0 && r != FERRY_ERR_SHORT ? r : 1;
            goto out;
        }
        d->entries = le64(rec + 32);
        d->size = le64(rec + 40);
        d->offset = le64(rec + 48);
        d->end = loc;
    }
    if (d->offset > d->end || d->size > d->end - d->offset) {
        *why = "central directory outside the file";
        r = 1;
    }
out:
    xfree(tail);
    return r;
}

/* A central directory entry's sizes and offset, zip64 extra applied. */
static int
zip_entry(const uint8_t *e, uint64_t *comp, uint64_t *local)
{
    uint64_t uncomp = le32(e + 24);
    const uint8_t *x = e + 46 + le16(e + 28);
    size_t xlen = le16(e + 30), k = 0;

    *comp = le32(e + 20);
    *local = le32(e + 42);
    while (xlen >= 4) {
        uint16_t id = le16(x), len = le16(x + 2);

        if (len > xlen - 4)
            return -1;
        if (id == 0x0001) {
            if (uncomp == 0xffffffffu) {
                if (k + 8 > len)
                    return -1;
                k += 8;
            }
            if (*comp == 0xffffffffu) {
                if (k + 8 > len)
                    return -1;
                *comp = le64(x + 4 + k);
                k += 8;
            }
            if (*local == 0xffffffffu) {
                if (k + 8 > len)
                    return -1;
                *local = le64(x + 4 + k);
            }
            return 0;
        }
        x += 4 + len;
        xlen -= 4 + (size_t)len;
    }
    return 0;
}

static int
zip_check(const struct fc_src *s, struct formcheck *out)
{
    struct zip_dir d;
    const char *why = NULL;
    uint8_t *cd = NULL, lh[30];
    uint64_t count = 0, comp, local, data;
    size_t pos = 0, elen;
    int r;

    memset(&d, 0, sizeof(d));
    if ((r = zip_find_end(s, &d, &why)) != 0)
        return r < 0 ? r : fc_torn(out, FORM_ZIP, why);
    if (d.size > FORMCHECK_MAX_INDEX)
        return fc_unknown(out);
    if ((cd = xmalloc(d.size + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = fc_read(s, d.offset, cd, (size_t)d.size)) != 0)
        goto out;
    while (pos < d.size) {
        if (d.size - pos < 46 || le32(cd + pos) != ZIP_CENTRAL) {
            why = "central directory damaged";
            break;
        }
        elen = 46u + le16(cd + pos + 28) + le16(cd + pos + 30) +
            le16(cd + pos + 32);
        if (elen > d.size - pos || zip_entry(cd + pos, &comp, &local) != 0) {
            why = "central directory damaged";
            break;
        }
        /* The member's local header and data, before the directory. */
        if (local > d.offset || d.offset - local < 30 ||
            (r = fc_read(s, local, lh, 30)) != 0 || le32(lh) != ZIP_LOCAL) {
            if (r < 0 && r != FERRY_ERR_SHORT)
                goto out;
            r = 0;
            why = "a member's header is missing";
            break;
        }
        data = local + 30 + le16(lh + 26) + le16(lh + 28);
        if (data > d.offset || comp > d.offset - data) {
            why = "a member's data is cut short";
            break;
        }
        pos += elen;
        count++;
    }
    if (why == NULL && count != d.entries)
        why = "central directory damaged";
    r = why != NULL ? fc_torn(out, FORM_ZIP, why) : fc_whole(out, FORM_ZIP);
out:
    xfree(cd);
    return r;
}

/* safetensors: a JSON header; every tensor's data_offsets within the
 * data that follows. */

struct json {
    const char *p, *end;
    int depth;
    uint64_t max_end;      /* the largest data_offsets end */
    int tensors;
};

static void
json_ws(struct json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
        *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* A string; *key is set if it is exactly "data_offsets". */
static int
json_string(struct json *j, int *is_offsets)
{
    const char *start;

    if (j->p >= j->end || *j->p != '"')
        return -1;
    start = ++j->p;
    while (j->p < j->end && *j->p != '"') {
        if (*j->p == '\\') {
            if (++j->p >= j->end)
                return -1;
        } else if ((unsigned char)*j->p < 0x20) {
            return -1;
        }
        j->p++;
    }
    if (j->p >= j->end)
        return -1;
    if (is_offsets != NULL)
        *is_offsets = j->p - start == 12 && memcmp(start, "data_offsets",
            12) == 0;
    j->p++;
    return 0;
}

static int
json_uint(struct json *j, uint64_t *v)
{
    int digits = 0;

    *v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        if (*v > (UINT64_MAX - 9) / 10)
            return -1;
        *v = *v * 10 + (uint64_t)(*j->p++ - '0');
        digits++;
    }
    return digits > 0 ? 0 : -1;
}

static int json_value(struct json *j, int offsets);

/* [begin, end] of a tensor's data. */
static int
json_offsets(struct json *j)
{
    uint64_t b, e;

    json_ws(j);
    if (j->p >= j->end || *j->p++ != '[')
        return -1;
    json_ws(j);
    if (json_uint(j, &b) != 0)
        return -1;
    json_ws(j);
    if (j->p >= j->end || *j->p++ != ',')
        return -1;
    json_ws(j);
    if (json_uint(j, &e) != 0 || e < b)
        return -1;
    json_ws(j);
    if (j->p >= j->end || *j->p++ != ']')
        return -1;
    if (e > j->max_end)
        j->max_end = e;
    j->tensors++;
    return 0;
}

static int
json_container(struct json *j, char close)
{
    int first = 1, offsets = 0;

    if (++j->depth > 8)
        return -1;
    for (;;) {
        json_ws(j);
        if (j->p < j->end && *j->p == close) {
            j->p++;
            j->depth--;
            return 0;
        }
        if (!first) {
            if (j->p >= j->end || *j->p++ != ',')
                return -1;
            json_ws(j);
        }
        first = 0;
        if (close == '}') {
            if (json_string(j, &offsets) != 0)
                return -1;
            json_ws(j);
            if (j->p >= j->end || *j->p++ != ':')
                return -1;
            /* A tensor's own fields sit at depth 2. */
            offsets = offsets && j->depth == 2;
        }
        if (json_value(j, offsets) != 0)
            return -1;
    }
}

static int
json_value(struct json *j, int offsets)
{
    uint64_t v;

    json_ws(j);
    if (offsets)
        return json_offsets(j);
    if (j->p >= j->end)
        return -1;
    switch (*j->p) {
    case '{':
        j->p++;
        return json_container(j, '}');
    case '[':
        j->p++;
        return json_container(j, ']');
    case '"':
        return json_string(j, NULL);
    case 't':
    case 'f':
    case 'n':
        while (j->p < j->end && isalpha((unsigned char)*j->p))
            j->p++;
        return 0;
    case '-':
        j->p++;
        return json_uint(j, &v);
    default:
        if (json_uint(j, &v) != 0)
            return -1;
        /* Fractions and exponents are not in a safetensors header. */
        return 0;
    }
}

static int
safetensors_check(const struct fc_src *s, const uint8_t head[16],
    struct formcheck *out)
{
    uint64_t n = le64(head), want;
    struct json j;
    char *hdr;
    int r;

    if (n < 2 || n > FORMCHECK_MAX_INDEX || head[8] != '{')
        return fc_unknown(out);
    if (n > s->size - 8)
        return fc_torn(out, FORM_SAFETENSORS, "header cut short");
    if ((hdr = xmalloc((size_t)n)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = fc_read(s, 8, hdr, (size_t)n)) != 0) {
        xfree(hdr);
        return r;
    }
    memset(&j, 0, sizeof(j));
    j.p = hdr;
    j.end = hdr + n;
    r = json_value(&j, 0);
    if (r == 0) {
        json_ws(&j);
        r = j.p == j.end ? 0 : -1;
    }
    xfree(hdr);
    if (r != 0 || j.tensors == 0 || j.max_end > UINT64_MAX - 8 - n)
        return fc_unknown(out);
    want = 8 + n + j.max_end;
    if (s->size < want)
        return fc_torn(out, FORM_SAFETENSORS, "tensor data cut short");
    return s->size == want ? fc_whole(out, FORM_SAFETENSORS) :
        fc_unknown(out);
}

/* NumPy .npy: "\x93NUMPY", version, header length, a dict literal. */

static const char *
npy_field(const char *h, const char *end, const char *key)
{
    size_t kl = strlen(key);
    const char *p;

    for (p = h; p + kl <= end; p++)
        if (memcmp(p, key, kl) == 0)
            return p + kl;
    return NULL;
}

static int
npy_check(const struct fc_src *s, const uint8_t head[16],
    struct formcheck *out)
{
    uint64_t hlen, hstart, item = 0, count = 1, v, want;
    const char *p, *end;
    char *hdr;
    int r, dims = 0;

    if (head[6] == 1) {
        hlen = le16(head + 8);
        hstart = 10;
    } else if (head[6] == 2 || head[6] == 3) {
        hlen = le32(head + 8);
        hstart = 12;
    } else {
        return fc_unknown(out);
    }
    if (hlen > FORMCHECK_MAX_INDEX)
        return fc_unknown(out);
    if (hstart + hlen > s->size)
        return fc_torn(out, FORM_NPY, "header cut short");
    if ((hdr = xmalloc((size_t)hlen + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = fc_read(s, hstart, hdr, (size_t)hlen)) != 0) {
        xfree(hdr);
        return r;
    }
    hdr[hlen] = '\0';
    end = hdr + hlen;
    /* 'descr': '<f4': the item size is the number after the type
     * letter; structured and object dtypes do not give one. */
    if ((p = npy_field(hdr, end, "'descr':")) != NULL) {
        while (p < end && *p == ' ')
            p++;
        if (p + 3 < end && *p == '\'' && strchr("<>|=", p[1]) != NULL &&
            p[2] != 'O' && p[2] != 'V') {
            for (p += 3; p < end && *p >= '0' && *p <= '9'; p++)
                item = item * 10 + (uint64_t)(*p - '0');
            if (p >= end || *p != '\'' || item > 64)
                item = 0;
        }
    }
    if (item > 0 && (p = npy_field(hdr, end, "'shape':")) != NULL) {
        while (p < end && *p == ' ')
            p++;
        if (p < end && *p++ == '(') {
            for (;;) {
                while (p < end && (*p == ' ' || *p == ','))
                    p++;
                if (p < end && *p == ')')
                    break;
                for (v = 0; p < end && *p >= '0' && *p <= '9'; p++) {
                    if (v > (UINT64_MAX - 9) / 10) {
                        item = 0;
                        break;
                    }
                    v = v * 10 + (uint64_t)(*p - '0');
                }
                if (item == 0 || p >= end || (*p != ',' && *p != ')') ||
                    (v != 0 && count > UINT64_MAX / v) || ++dims > 64) {
                    item = 0;
                    break;
                }
                count *= v;
            }
        } else {
            item = 0;
        }
    } else {
        item = 0;
    }
    xfree(hdr);
    if (item == 0 || (count != 0 && item > (UINT64_MAX - hstart - hlen) /
        count))
        return fc_unknown(out);
    want = hstart + hlen + item * count;
    if (s->size < want)
        return fc_torn(out, FORM_NPY, "array data cut short");
    return s->size == want ? fc_whole(out, FORM_NPY) : fc_unknown(out);
}

/* tar: headers from the start to the two zero blocks. */

static int
tar_zero(const uint8_t *b)
{
    size_t i;

    for (i = 0; i < 512; i++)
        if (b[i] != 0)
            return 0;
    return 1;
}

/* A header's size field: octal, or GNU base-256. */
static int
tar_size(const uint8_t *f, uint64_t *v)
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
tar_pax_size(const struct fc_src *s, uint64_t off, uint64_t len,
    uint64_t *size)
{
    char *p, *q, *end;
    int r;

    if (len > 65536)
        return 0;
    if ((p = xmalloc((size_t)len + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = fc_read(s, off, p, (size_t)len)) != 0) {
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
tar_check(const struct fc_src *s, struct formcheck *out)
{
    uint8_t h[512];
    uint64_t off = 0, size, next_size = UINT64_MAX, n;
    uint32_t members = 0;
    int r;

    for (;;) {
        if (off + 512 > s->size)
            return fc_torn(out, FORM_TAR, "no end-of-archive blocks");
        if ((r = fc_read(s, off, h, 512)) != 0)
            return r;
        if (tar_zero(h)) {
            if (off + 1024 > s->size)
                return fc_torn(out, FORM_TAR, "no end-of-archive blocks");
            if ((r = fc_read(s, off + 512, h, 512)) != 0)
                return r;
            return tar_zero(h) ? fc_whole(out, FORM_TAR) : fc_unknown(out);
        }
        if (memcmp(h + 257, "ustar", 5) != 0 || ++members >
            FORMCHECK_MAX_MEMBERS)
            return fc_unknown(out);
        if (tar_size(h + 124, &size) != 0)
            return fc_unknown(out);
        if (next_size != UINT64_MAX && h[156] != 'x' && h[156] != 'g') {
            size = next_size;
            next_size = UINT64_MAX;
        }
        if (h[156] == 'x' && off + 512 + size <= s->size &&
            (r = tar_pax_size(s, off + 512, size, &next_size)) != 0)
            return r;
        /* Directories, links and devices have no data. */
        if (h[156] == '1' || h[156] == '2' || h[156] == '3' ||
            h[156] == '4' || h[156] == '5' || h[156] == '6')
            size = 0;
        if (size > s->size)
            return fc_torn(out, FORM_TAR, "a member's data is cut short");
        n = (size + 511) / 512 * 512;
        if (n > s->size - off - 512)
            return fc_torn(out, FORM_TAR, "a member's data is cut short");
        off += 512 + n;
    }
}

static int
formcheck_src(const struct fc_src *s, struct formcheck *out)
{
    uint8_t head[16];
    int r;

    memset(out, 0, sizeof(*out));
    memset(head, 0, sizeof(head));
    if (s->size < 16)
        return 0;
    if ((r = fc_read(s, 0, head, sizeof(head))) != 0)
        return r == FERRY_ERR_SHORT ? 0 : r;
    if (le32(head) == ZIP_LOCAL)
        return zip_check(s, out);
    if (memcmp(head, "\x93NUMPY", 6) == 0)
        return npy_check(s, head, out);
    if (head[8] == '{')
        return safetensors_check(s, head, out);
    if (s->size >= 512) {
        uint8_t magic[5];

        if ((r = fc_read(s, 257, magic, 5)) != 0)
            return r;
        if (memcmp(magic, "ustar", 5) == 0)
            return tar_check(s, out);
    }
    return 0;
}

int
formcheck_fd(int fd, uint64_t size, struct formcheck *out)
{
    struct fc_src s = { fd, NULL, size };
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
    struct fc_src s = { -1, p, n };

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
busy_cmp(const void *a, const void *b)
{
    const struct formcheck_open *x = a, *y = b;

    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* 1 if /proc/PID/fdinfo/FD says the descriptor was opened for writing. */
static int
busy_fd_writes(int fdinfo, const char *name)
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
busy_add(struct formcheck_busy *set, size_t *cap, const struct stat *st)
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
                !S_ISREG(st.st_mode) || !busy_fd_writes(fdinfo, fe->d_name))
                continue;
            r = busy_add(set, &cap, &st);
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
        qsort(set->v, set->n, sizeof(*set->v), busy_cmp);
    return 0;
}

int
formcheck_busy_in(const struct formcheck_busy *set, dev_t dev, ino_t ino)
{
    struct formcheck_open key = { dev, ino };

    return set->n > 0 && bsearch(&key, set->v, set->n, sizeof(*set->v),
        busy_cmp) != NULL;
}

void
formcheck_busy_free(struct formcheck_busy *set)
{
    xfree(set->v);
    set->v = NULL;
    set->n = 0;
}
