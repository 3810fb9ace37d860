#include "ckptfmt.h"

#include <ctype.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../common/fsx.h"

int
ckptfmt_read(const struct ckptfmt_src *s, uint64_t off, void *p, size_t n)
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

#define le16 ckptfmt_le16
#define le32 ckptfmt_le32
#define le64 ckptfmt_le64

#define ZIP_LOCAL 0x04034b50u
#define ZIP_CENTRAL 0x02014b50u
#define ZIP_EOCD 0x06054b50u
#define ZIP64_LOCATOR 0x07064b50u
#define ZIP64_EOCD 0x06064b50u
#define ZIP_EOCD_LEN 22u
#define ZIP_TAIL (ZIP_EOCD_LEN + 65535u)

enum ckptfmt_kind
ckptfmt_sniff(const uint8_t head[16])
{
    if (le32(head) == ZIP_LOCAL)
        return CKPTFMT_ZIP;
    if (memcmp(head, "\x93NUMPY", 6) == 0)
        return CKPTFMT_NPY;
    if (head[8] == '{')
        return CKPTFMT_SAFETENSORS;
    return CKPTFMT_NONE;
}

/* zip */

struct zip_dir {
    uint64_t entries, size, offset;
    uint64_t end;          /* where the records after the directory start */
};

/* A read that failed for want of bytes is a verdict (1), any other
 * failure the caller's error. */
static int
ckptfmt_zip_torn_or(int r)
{
    return r < 0 && r != FERRY_ERR_SHORT ? r : 1;
}

/* The end of central directory record, the last bytes of a whole zip
 * (its comment aside), and the zip64 one it may point to. Returns 0, 1
 * with *why (torn), or a negative code. */
static int
ckptfmt_zip_find_end(const struct ckptfmt_src *s, struct zip_dir *d,
    const char **why)
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
    if ((r = ckptfmt_read(s, start, tail, n)) != 0)
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
        if (pos < 20 || (r = ckptfmt_read(s, pos - 20, rec, 20)) != 0 ||
            le32(rec) != ZIP64_LOCATOR) {
            *why = "no zip64 end of central directory";
            r = ckptfmt_zip_torn_or(r);
            goto out;
        }
        loc = le64(rec + 8);
        if (loc > pos - 20 || pos - 20 - loc < 56 ||
            (r = ckptfmt_read(s, loc, rec, 56)) != 0 ||
            le32(rec) != ZIP64_EOCD) {
            *why = "bad zip64 end of central directory";
            r = ckptfmt_zip_torn_or(r);
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
ckptfmt_zip_entry(const uint8_t *e, uint64_t *comp, uint64_t *uncomp,
    uint64_t *local)
{
    const uint8_t *x = e + 46 + le16(e + 28);
    size_t xlen = le16(e + 30), k = 0;

    *uncomp = le32(e + 24);
    *comp = le32(e + 20);
    *local = le32(e + 42);
    while (xlen >= 4) {
        uint16_t id = le16(x), len = le16(x + 2);

        if (len > xlen - 4)
            return -1;
        if (id == 0x0001) {
            if (*uncomp == 0xffffffffu) {
                if (k + 8 > len)
                    return -1;
                *uncomp = le64(x + 4 + k);
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

int
ckptfmt_zip(const struct ckptfmt_src *s, ckptfmt_zip_fn *fn, void *arg,
    const char **why)
{
    struct ckptfmt_zip_member m;
    struct zip_dir d;
    uint8_t *cd = NULL, lh[30];
    uint64_t count = 0, local;
    size_t pos = 0, elen;
    int r;

    *why = NULL;
    memset(&d, 0, sizeof(d));
    if ((r = ckptfmt_zip_find_end(s, &d, why)) != 0)
        return r < 0 ? r : CKPTFMT_TORN;
    if (d.size > CKPTFMT_MAX_INDEX)
        return CKPTFMT_UNKNOWN;
    if ((cd = xmalloc(d.size + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = ckptfmt_read(s, d.offset, cd, (size_t)d.size)) != 0)
        goto out;
    while (pos < d.size) {
        memset(&m, 0, sizeof(m));
        if (d.size - pos < 46 || le32(cd + pos) != ZIP_CENTRAL) {
            *why = "central directory damaged";
            break;
        }
        elen = 46u + le16(cd + pos + 28) + le16(cd + pos + 30) +
            le16(cd + pos + 32);
        if (elen > d.size - pos ||
            ckptfmt_zip_entry(cd + pos, &m.comp, &m.uncomp, &local) != 0) {
            *why = "central directory damaged";
            break;
        }
        /* The member's local header and data, before the directory. */
        if (local > d.offset || d.offset - local < 30 ||
            (r = ckptfmt_read(s, local, lh, 30)) != 0 ||
            le32(lh) != ZIP_LOCAL) {
            if (r < 0 && r != FERRY_ERR_SHORT)
                goto out;
            r = 0;
            *why = "a member's header is missing";
            break;
        }
        m.data = local + 30 + le16(lh + 26) + le16(lh + 28);
        if (m.data > d.offset || m.comp > d.offset - m.data) {
            *why = "a member's data is cut short";
            break;
        }
        m.name = cd + pos + 46;
        m.name_len = le16(cd + pos + 28);
        m.method = le16(cd + pos + 10);
        if (fn != NULL && (r = fn(arg, &m)) != 0)
            goto out;
        pos += elen;
        count++;
    }
    if (*why == NULL && count != d.entries)
        *why = "central directory damaged";
    r = *why != NULL ? CKPTFMT_TORN : CKPTFMT_WHOLE;
out:
    xfree(cd);
    return r;
}

/* safetensors: a JSON header; every tensor's data_offsets within the
 * data that follows. */

struct json {
    const char *p, *end;
    int depth;
};

static void
ckptfmt_json_ws(struct json *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
        *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* A string; (*s, *len) get the bytes between its quotes if not NULL. */
static int
ckptfmt_json_string(struct json *j, const char **s, size_t *len)
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
    if (s != NULL) {
        *s = start;
        *len = (size_t)(j->p - start);
    }
    j->p++;
    return 0;
}

static int
ckptfmt_json_is(const char *s, size_t len, const char *word)
{
    return len == strlen(word) && memcmp(s, word, len) == 0;
}

static int
ckptfmt_json_uint(struct json *j, uint64_t *v)
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

/* Expects c after white space. */
static int
ckptfmt_json_char(struct json *j, char c)
{
    ckptfmt_json_ws(j);
    if (j->p >= j->end || *j->p != c)
        return -1;
    j->p++;
    return 0;
}

/* Steps to the next member of an object or array: 1 at its closing
 * character (read), 0 before the next member (its comma read), -1 when
 * neither comes. */
static int
ckptfmt_json_next(struct json *j, char close, int *first)
{
    ckptfmt_json_ws(j);
    if (j->p < j->end && *j->p == close) {
        j->p++;
        return 1;
    }
    if (!*first && ckptfmt_json_char(j, ',') != 0)
        return -1;
    ckptfmt_json_ws(j);
    *first = 0;
    return 0;
}

static int ckptfmt_json_value(struct json *j);

/* The rest of an object or array whose opening character was read; each
 * member's value goes to ckptfmt_json_value. */
static int
ckptfmt_json_container(struct json *j, char close)
{
    int first = 1, r;

    if (++j->depth > 8)
        return -1;
    for (;;) {
        if ((r = ckptfmt_json_next(j, close, &first)) != 0) {
            j->depth--;
            return r > 0 ? 0 : -1;
        }
        if (close == '}' && (ckptfmt_json_string(j, NULL, NULL) != 0 ||
            ckptfmt_json_char(j, ':') != 0))
            return -1;
        if (ckptfmt_json_value(j) != 0)
            return -1;
    }
}

static int
ckptfmt_json_value(struct json *j)
{
    uint64_t v;

    ckptfmt_json_ws(j);
    if (j->p >= j->end)
        return -1;
    switch (*j->p) {
    case '{':
        j->p++;
        return ckptfmt_json_container(j, '}');
    case '[':
        j->p++;
        return ckptfmt_json_container(j, ']');
    case '"':
        return ckptfmt_json_string(j, NULL, NULL);
    case 't':
    case 'f':
    case 'n':
        while (j->p < j->end && isalpha((unsigned char)*j->p))
            j->p++;
        return 0;
    case '-':
        j->p++;
        return ckptfmt_json_uint(j, &v);
    default:
        /* Fractions and exponents are not in a safetensors header. */
        return ckptfmt_json_uint(j, &v);
    }
}

/* [begin, end] of a tensor's data. */
static int
ckptfmt_json_offsets(struct json *j, uint64_t *b, uint64_t *e)
{
    if (ckptfmt_json_char(j, '[') != 0)
        return -1;
    ckptfmt_json_ws(j);
    if (ckptfmt_json_uint(j, b) != 0 || ckptfmt_json_char(j, ',') != 0)
        return -1;
    ckptfmt_json_ws(j);
    if (ckptfmt_json_uint(j, e) != 0 || *e < *b || ckptfmt_json_char(j,
        ']') != 0)
        return -1;
    return 0;
}

/* One value of the top-level object: a tensor's fields when it is an
 * object with data_offsets (t->end set), else anything. */
static int
ckptfmt_json_tensor(struct json *j, struct ckptfmt_st_tensor *t, int *has)
{
    const char *k;
    size_t kl;
    int first = 1, r;

    *has = 0;
    ckptfmt_json_ws(j);
    if (j->p >= j->end || *j->p != '{')
        return ckptfmt_json_value(j);
    j->p++;
    j->depth++;
    for (;;) {
        if ((r = ckptfmt_json_next(j, '}', &first)) != 0) {
            j->depth--;
            return r > 0 ? 0 : -1;
        }
        if (ckptfmt_json_string(j, &k, &kl) != 0 || ckptfmt_json_char(j,
            ':') != 0)
            return -1;
        ckptfmt_json_ws(j);
        if (ckptfmt_json_is(k, kl, "data_offsets")) {
            /* Twice would leave which one counts to the reader. */
            if (*has || ckptfmt_json_offsets(j, &t->begin, &t->end) != 0)
                return -1;
            *has = 1;
        } else if (ckptfmt_json_is(k, kl, "dtype") && j->p < j->end &&
            *j->p == '"') {
            if (ckptfmt_json_string(j, &t->dtype, &t->dtype_len) != 0)
                return -1;
        } else if (ckptfmt_json_value(j) != 0) {
            return -1;
        }
    }
}

/* The top-level object: each tensor to fn; the count and the largest
 * end. Returns 0, -1 (does not parse) or fn's negative code. */
static int
ckptfmt_json_header(struct json *j, ckptfmt_st_fn *fn, void *arg,
    uint64_t *ntensors, uint64_t *max_end)
{
    struct ckptfmt_st_tensor t;
    int first = 1, has, r;

    if (ckptfmt_json_char(j, '{') != 0)
        return -1;
    j->depth = 1;
    for (;;) {
        if ((r = ckptfmt_json_next(j, '}', &first)) != 0) {
            ckptfmt_json_ws(j);
            return r > 0 && j->p == j->end ? 0 : -1;
        }
        memset(&t, 0, sizeof(t));
        if (ckptfmt_json_string(j, &t.key, &t.key_len) != 0 ||
            ckptfmt_json_char(j, ':') != 0 || ckptfmt_json_tensor(j, &t,
                &has) != 0)
            return -1;
        if (!has)
            continue;
        (*ntensors)++;
        if (t.end > *max_end)
            *max_end = t.end;
        if (fn != NULL && (r = fn(arg, &t)) != 0)
            return r;
    }
}

int
ckptfmt_safetensors(const struct ckptfmt_src *s, const uint8_t head[16],
    ckptfmt_st_fn *fn, void *arg, uint64_t *data_start, const char **why)
{
    uint64_t n = le64(head), want, ntensors = 0, max_end = 0;
    struct json j;
    char *hdr;
    int r;

    *why = NULL;
    *data_start = 0;
    if (n < 2 || n > CKPTFMT_MAX_INDEX || head[8] != '{')
        return CKPTFMT_UNKNOWN;
    if (s->size < 8 || n > s->size - 8) {
        *why = "header cut short";
        return CKPTFMT_TORN;
    }
    if ((hdr = xmalloc((size_t)n)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = ckptfmt_read(s, 8, hdr, (size_t)n)) != 0) {
        xfree(hdr);
        return r;
    }
    memset(&j, 0, sizeof(j));
    j.p = hdr;
    j.end = hdr + n;
    r = ckptfmt_json_header(&j, fn, arg, &ntensors, &max_end);
    xfree(hdr);
    if (r < -1)
        return r;
    if (r != 0 || ntensors == 0 || max_end > UINT64_MAX - 8 - n)
        return CKPTFMT_UNKNOWN;
    *data_start = 8 + n;
    want = 8 + n + max_end;
    if (s->size < want) {
        *why = "tensor data cut short";
        return CKPTFMT_TORN;
    }
    return s->size == want ? CKPTFMT_WHOLE : CKPTFMT_UNKNOWN;
}

/* NumPy .npy: "\x93NUMPY", version, header length, a dict literal. */

static const char *
ckptfmt_npy_field(const char *h, const char *end, const char *key)
{
    size_t kl = strlen(key);
    const char *p;

    for (p = h; p + kl <= end; p++)
        if (memcmp(p, key, kl) == 0)
            return p + kl;
    return NULL;
}

/* 'descr': '<f4': the item size is the number after the type letter;
 * structured and object dtypes do not give one (0). */
static uint64_t
ckptfmt_npy_descr(const char *hdr, const char *end, char *kind)
{
    const char *p;
    uint64_t item = 0;

    if ((p = ckptfmt_npy_field(hdr, end, "'descr':")) == NULL)
        return 0;
    while (p < end && *p == ' ')
        p++;
    if (p + 3 >= end || *p != '\'' || strchr("<>|=", p[1]) == NULL ||
        p[2] == 'O' || p[2] == 'V')
        return 0;
    *kind = p[2];
    for (p += 3; p < end && *p >= '0' && *p <= '9'; p++)
        item = item * 10 + (uint64_t)(*p - '0');
    return p >= end || *p != '\'' || item > 64 ? 0 : item;
}

/* 'shape': (a, b, ...): the product, or -1 when it does not parse. */
static int
ckptfmt_npy_shape(const char *hdr, const char *end, uint64_t *count)
{
    const char *p;
    uint64_t v;
    int dims = 0;

    *count = 1;
    if ((p = ckptfmt_npy_field(hdr, end, "'shape':")) == NULL)
        return -1;
    while (p < end && *p == ' ')
        p++;
    if (p >= end || *p++ != '(')
        return -1;
    for (;;) {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        if (p < end && *p == ')')
            return 0;
        for (v = 0; p < end && *p >= '0' && *p <= '9'; p++) {
            if (v > (UINT64_MAX - 9) / 10)
                return -1;
            v = v * 10 + (uint64_t)(*p - '0');
        }
        if (p >= end || (*p != ',' && *p != ')') ||
            (v != 0 && *count > UINT64_MAX / v) || ++dims > 64)
            return -1;
        *count *= v;
    }
}

int
ckptfmt_npy(const struct ckptfmt_src *s, const uint8_t head[16],
    struct ckptfmt_npy *out, const char **why)
{
    uint64_t hlen, hstart, want;
    char *hdr;
    int r;

    *why = NULL;
    memset(out, 0, sizeof(*out));
    if (head[6] == 1) {
        hlen = le16(head + 8);
        hstart = 10;
    } else if (head[6] == 2 || head[6] == 3) {
        hlen = le32(head + 8);
        hstart = 12;
    } else {
        return CKPTFMT_UNKNOWN;
    }
    if (hlen > CKPTFMT_MAX_INDEX)
        return CKPTFMT_UNKNOWN;
    if (hstart + hlen > s->size) {
        *why = "header cut short";
        return CKPTFMT_TORN;
    }
    if ((hdr = xmalloc((size_t)hlen + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    if ((r = ckptfmt_read(s, hstart, hdr, (size_t)hlen)) != 0) {
        xfree(hdr);
        return r;
    }
    hdr[hlen] = '\0';
    out->item = ckptfmt_npy_descr(hdr, hdr + hlen, &out->kind);
    if (out->item > 0 && ckptfmt_npy_shape(hdr, hdr + hlen, &out->count) != 0)
        out->item = 0;
    xfree(hdr);
    out->data = hstart + hlen;
    if (out->item == 0 || (out->count != 0 &&
        out->item > (UINT64_MAX - out->data) / out->count)) {
        memset(out, 0, sizeof(*out));
        return CKPTFMT_UNKNOWN;
    }
    want = out->data + out->item * out->count;
    if (s->size < want) {
        *why = "array data cut short";
        return CKPTFMT_TORN;
    }
    return s->size == want ? CKPTFMT_WHOLE : CKPTFMT_UNKNOWN;
}
