#include "tar.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/text.h"

/* Offsets and widths of the ustar header fields (POSIX.1-1988). */
#define F_NAME 0
#define W_NAME 100
#define F_MODE 100
#define F_UID 108
#define F_GID 116
#define F_SIZE 124
#define F_MTIME 136
#define F_CHKSUM 148
#define F_TYPE 156
#define F_LINK 157
#define W_LINK 100
#define F_MAGIC 257
#define F_UNAME 265
#define F_GNAME 297
#define F_DEVMAJOR 329
#define F_DEVMINOR 337
#define F_PREFIX 345
#define W_PREFIX 155

/* Largest values the octal fields hold: 7 and 11 digits. */
#define OCT7_MAX 07777777u
#define OCT11_MAX UINT64_C(077777777777)

/*
 * Writing
 */

size_t
tar_pad(uint64_t n)
{
    return (size_t)((TAR_BLOCK - n % TAR_BLOCK) % TAR_BLOCK);
}

/* Writes v in octal into the w-byte field at f: w-1 digits and a NUL. */
static void
tar_octal(uint8_t *f, size_t w, uint64_t v)
{
    size_t i = w - 1;

    f[i] = '\0';
    while (i-- > 0) {
        f[i] = (uint8_t)('0' + (v & 7));
        v >>= 3;
    }
}

/* Splits path (len bytes) into ustar's prefix and name: *cut is the
 * index of the '/' between them, or len when the name alone fits.
 * Returns 0, or -1 when no split fits. */
static int
tar_split(const char *path, size_t len, size_t *cut)
{
    size_t i;

    if (len <= W_NAME) {
        *cut = len;
        return 0;
    }
    for (i = 0; i < len && i <= W_PREFIX; i++) {
        if (path[i] == '/' && i > 0 && len - i - 1 <= W_NAME &&
            len - i - 1 > 0) {
            *cut = i;
            return 0;
        }
    }
    return -1;
}

/* Appends one pax record "LEN key=value\n". */
static int
tar_pax_rec(struct buf *b, const char *key, const char *val, size_t vlen)
{
    size_t base = strlen(key) + vlen + 3, len = base, digits;
    char num[24];
    int r, n;

    /* LEN counts its own digits. */
    for (;;) {
        n = snprintf(num, sizeof(num), "%zu", len);
        digits = (size_t)n;
        if (base + digits == len)
            break;
        len = base + digits;
    }
    if ((r = buf_put(b, num, digits)) != 0 || (r = buf_put_u8(b, ' ')) != 0 ||
        (r = buf_put(b, key, strlen(key))) != 0 ||
        (r = buf_put_u8(b, '=')) != 0 || (r = buf_put(b, val, vlen)) != 0)
        return r;
    return buf_put_u8(b, '\n');
}

/* The pax records e needs (none when ustar holds it all). */
static int
tar_pax_put(struct buf *x, const struct tar_entry *e, const char *path,
    size_t plen)
{
    char v[96];
    size_t cut;
    int r = 0, n;

    /* pax names are UTF-8 unless the header says hdrcharset=BINARY;
     * names that fit ustar stay there, where readers take them as bytes
     * (bsdtar converts pax names through the locale). */
    if (!text_utf8_valid(path, plen) ||
        !text_utf8_valid(e->link, e->link_len) ||
        (e->is_piece && !text_utf8_valid(e->piece.path, e->piece.path_len)))
        r = tar_pax_rec(x, "hdrcharset", "BINARY", 6);
    if (r == 0 && tar_split(path, plen, &cut) != 0)
        r = tar_pax_rec(x, "path", path, plen);
    if (r == 0 && e->link_len > W_LINK)
        r = tar_pax_rec(x, "linkpath", e->link, e->link_len);
    if (r == 0 && e->size > OCT11_MAX) {
        n = snprintf(v, sizeof(v), "%" PRIu64, e->size);
        r = tar_pax_rec(x, "size", v, (size_t)n);
    }
    if (r == 0 && (e->mtime_nsec != 0 || e->mtime_sec < 0 ||
        (uint64_t)e->mtime_sec > OCT11_MAX)) {
        /* A negative time t.f means t + f as a whole: -1.5 is 1.5 s
         * before the epoch. */
        if (e->mtime_sec < 0 && e->mtime_nsec != 0)
            n = snprintf(v, sizeof(v), "-%" PRIu64 ".%09" PRIu32,
                (uint64_t)(-(e->mtime_sec + 1)), 1000000000u - e->mtime_nsec);
        else if (e->mtime_sec < 0)
            n = snprintf(v, sizeof(v), "-%" PRIu64,
                (uint64_t)-e->mtime_sec);
        else
            n = snprintf(v, sizeof(v), "%" PRId64 ".%09" PRIu32,
                e->mtime_sec, e->mtime_nsec);
        while (n > 0 && e->mtime_nsec != 0 && v[n - 1] == '0')
            n--;
        r = tar_pax_rec(x, "mtime", v, (size_t)n);
    }
    if (r == 0 && e->is_piece) {
        struct buf c;

        buf_init(&c, TAR_MAX_EXT);
        n = snprintf(v, sizeof(v), TAR_PIECE_TAG "%" PRIu32 " %" PRIu64
            " %" PRIu64 " ", e->piece.index, e->piece.offset,
            e->piece.file_size);
        if ((r = buf_put(&c, v, (size_t)n)) == 0 &&
            (r = buf_put(&c, e->piece.path, e->piece.path_len)) == 0)
            r = tar_pax_rec(x, "comment", (const char *)buf_ptr(&c),
                buf_used(&c));
        buf_cleanup(&c);
    }
    return r;
}

/* Fills one ustar header block. */
static void
tar_block(uint8_t h[TAR_BLOCK], const char *path, size_t plen,
    const struct tar_entry *e, char type, uint64_t size)
{
    unsigned sum = 0;
    size_t i, cut;

    memset(h, 0, TAR_BLOCK);
    if (tar_split(path, plen, &cut) != 0)
        cut = plen;       /* the pax path holds it; keep what fits */
    if (cut == plen) {
        memcpy(h + F_NAME, path, plen < W_NAME ? plen : W_NAME);
    } else {
        memcpy(h + F_PREFIX, path, cut);
        memcpy(h + F_NAME, path + cut + 1, plen - cut - 1);
    }
    tar_octal(h + F_MODE, 8, e->mode & 07777);
    tar_octal(h + F_UID, 8, 0);
    tar_octal(h + F_GID, 8, 0);
    tar_octal(h + F_SIZE, 12, size <= OCT11_MAX ? size : 0);
    tar_octal(h + F_MTIME, 12, e->mtime_sec >= 0 &&
        (uint64_t)e->mtime_sec <= OCT11_MAX ? (uint64_t)e->mtime_sec : 0);
    h[F_TYPE] = (uint8_t)type;
    if (e->link_len > 0)
        memcpy(h + F_LINK, e->link,
            e->link_len < W_LINK ? e->link_len : W_LINK);
    memcpy(h + F_MAGIC, "ustar\0" "00", 8);
    tar_octal(h + F_DEVMAJOR, 8, 0);
    tar_octal(h + F_DEVMINOR, 8, 0);
    memset(h + F_CHKSUM, ' ', 8);
    for (i = 0; i < TAR_BLOCK; i++)
        sum += h[i];
    tar_octal(h + F_CHKSUM, 7, sum);
    h[F_CHKSUM + 7] = ' ';
}

int
tar_header_put(struct buf *b, const struct tar_entry *e)
{
    struct buf x, name;
    uint8_t *h;
    char type;
    size_t before = buf_used(b);
    int r;

    if (e->path_len == 0 || memchr(e->path, '\0', e->path_len) != NULL ||
        memchr(e->link, '\0', e->link_len) != NULL)
        return FERRY_ERR_USAGE;
    switch (e->type) {
    case TAR_FILE: type = '0'; break;
    case TAR_DIR: type = '5'; break;
    case TAR_SYMLINK: type = '2'; break;
    default: return FERRY_ERR_USAGE;
    }
    buf_init(&x, TAR_MAX_EXT);
    buf_init(&name, TAR_MAX_NAME + 2);
    if ((r = buf_put(&name, e->path, e->path_len)) == 0 &&
        e->type == TAR_DIR && e->path[e->path_len - 1] != '/')
        r = buf_put_u8(&name, '/');
    if (r == 0)
        r = tar_pax_put(&x, e, (const char *)buf_ptr(&name),
            buf_used(&name));
    if (r == 0 && buf_used(&x) > 0) {
        static const char pax_name[] = "././@PaxHeader";
        struct tar_entry pe;

        memset(&pe, 0, sizeof(pe));
        pe.mode = 0644;
        pe.mtime_sec = e->mtime_sec;
        pe.link = "";
        if ((r = buf_reserve(b, TAR_BLOCK, &h)) == 0) {
            tar_block(h, pax_name, sizeof(pax_name) - 1, &pe, 'x',
                buf_used(&x));
            r = buf_put(b, buf_ptr(&x), buf_used(&x));
        }
        if (r == 0 && tar_pad(buf_used(&x)) > 0 &&
            (r = buf_reserve(b, tar_pad(buf_used(&x)), &h)) == 0)
            memset(h, 0, tar_pad(buf_used(&x)));
    }
    if (r == 0 && (r = buf_reserve(b, TAR_BLOCK, &h)) == 0)
        tar_block(h, (const char *)buf_ptr(&name), buf_used(&name), e, type,
            e->type == TAR_FILE ? e->size : 0);
    if (r != 0 && buf_used(b) > before)
        buf_unreserve(b, buf_used(b) - before);
    buf_cleanup(&x);
    buf_cleanup(&name);
    return r;
}

int
tar_end_put(struct buf *b)
{
    uint8_t *p;
    int r;

    if ((r = buf_reserve(b, TAR_END_SIZE, &p)) != 0)
        return r;
    memset(p, 0, TAR_END_SIZE);
    return 0;
}

/*
 * Reading
 */

enum { ST_HEADER = 0, ST_EXT, ST_DATA, ST_PAD, ST_END, ST_ERROR };

int
tar_rd_init(struct tar_rd *t)
{
    memset(t, 0, sizeof(*t));
    buf_init(&t->ext, TAR_MAX_EXT);
    t->path = xmalloc(TAR_MAX_NAME + 1);
    t->link = xmalloc(TAR_MAX_NAME + 1);
    t->piece_path = xmalloc(TAR_MAX_NAME + 1);
    if (t->path == NULL || t->link == NULL || t->piece_path == NULL) {
        tar_rd_cleanup(t);
        return FERRY_ERR_NOMEM;
    }
    return 0;
}

void
tar_rd_cleanup(struct tar_rd *t)
{
    buf_cleanup(&t->ext);
    xfree(t->path);
    xfree(t->link);
    xfree(t->piece_path);
    t->path = t->link = t->piece_path = NULL;
}

const char *
tar_rd_why(const struct tar_rd *t)
{
    return t->why;
}

uint64_t
tar_rd_offset(const struct tar_rd *t)
{
    return t->off;
}

static int
tar_fail(struct tar_rd *t, int r, const char *why)
{
    t->state = ST_ERROR;
    t->why = why;
    return r;
}

/* The widest header number, 7 bytes of base-256, is within a member's
 * bound. */
_Static_assert(TAR_MAX_SIZE >= UINT64_C(1) << 56, "tar_num bounds sizes");

/* A numeric header field: octal digits (leading spaces allowed, ended by
 * NUL or space) or GNU base-256 (first byte 0x80, or 0xff for a negative
 * value where neg is allowed). */
static int
tar_num(const uint8_t *f, size_t w, int neg, int64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;

    *out = 0;
    if (f[0] == 0x80 || (f[0] == 0xff && neg)) {
        /* Big-endian two's complement over the rest of the field. All
         * but its last 7 bytes must repeat the sign, so the value fits
         * 56 bits and its sign is f[0]'s: that one check bounds it. */
        uint8_t fill = f[0] == 0xff ? 0xff : 0;

        v = fill != 0 ? UINT64_MAX : 0;
        for (i = 1; i < w; i++) {
            if (i < w - 7 && f[i] != fill)
                return FERRY_ERR_FORMAT;
            v = v << 8 | f[i];
        }
        *out = fill != 0 ? -(int64_t)(~v) - 1 : (int64_t)v;
        return 0;
    }
    while (i < w && f[i] == ' ')
        i++;
    for (; i < w && f[i] != '\0' && f[i] != ' '; i++) {
        if (f[i] < '0' || f[i] > '7' || (v >> 60) != 0)
            return FERRY_ERR_FORMAT;
        v = v << 3 | (uint64_t)(f[i] - '0');
    }
    /* Only NULs and spaces may follow the digits. */
    for (; i < w; i++)
        if (f[i] != '\0' && f[i] != ' ')
            return FERRY_ERR_FORMAT;
    *out = (int64_t)v;
    return 0;
}

/* A decimal in a pax value: digits only, at most max. */
static int
tar_dec(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    *out = 0;
    if (n == 0 || n > 20)
        return FERRY_ERR_FORMAT;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return FERRY_ERR_FORMAT;
        if (v > (UINT64_MAX - 9) / 10)
            return FERRY_ERR_FORMAT;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return FERRY_ERR_TOO_LARGE;
    *out = v;
    return 0;
}

/* A pax time: [-]seconds[.fraction], at most nanoseconds kept. */
static int
tar_time(const char *s, size_t n, int64_t *sec, uint32_t *nsec)
{
    const char *dot = memchr(s, '.', n);
    size_t ilen = dot != NULL ? (size_t)(dot - s) : n, i;
    int minus = n > 0 && s[0] == '-';
    uint64_t v;
    uint32_t f = 0, scale = 100000000u;
    int r;

    if ((r = tar_dec(s + minus, ilen - (size_t)minus, INT64_MAX / 2,
        &v)) != 0)
        return FERRY_ERR_FORMAT;
    for (i = ilen + 1; dot != NULL && i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return FERRY_ERR_FORMAT;
        f += (uint32_t)(s[i] - '0') * scale;
        scale /= 10;
    }
    if (dot != NULL && ilen + 1 == n)
        return FERRY_ERR_FORMAT;
    *sec = minus ? -(int64_t)v : (int64_t)v;
    *nsec = f;
    if (minus && f != 0) {
        *sec -= 1;
        *nsec = 1000000000u - f;
    }
    return 0;
}

/* Copies a name value (no NUL, at most TAR_MAX_NAME bytes) into dst. */
static int
tar_name(struct tar_rd *t, char *dst, const char *v, size_t n)
{
    if (n > TAR_MAX_NAME)
        return tar_fail(t, FERRY_ERR_TOO_LARGE, "name too long");
    if (memchr(v, '\0', n) != NULL)
        return tar_fail(t, FERRY_ERR_FORMAT, "name holds a NUL byte");
    memcpy(dst, v, n);
    dst[n] = '\0';
    return 0;
}

/* "ferry-piece 1 INDEX OFFSET FILE_SIZE PATH" */
static int
tar_piece_parse(struct tar_rd *t, const char *v, size_t n)
{
    size_t tag = sizeof(TAR_PIECE_TAG) - 1, i, start;
    uint64_t num[3];
    int k, r;

    i = tag;
    for (k = 0; k < 3; k++) {
        start = i;
        while (i < n && v[i] != ' ')
            i++;
        if (i == n || tar_dec(v + start, i - start, TAR_MAX_SIZE,
            &num[k]) != 0)
            return tar_fail(t, FERRY_ERR_FORMAT, "malformed piece header");
        i++;
    }
    if (num[0] == 0 || num[0] > UINT32_MAX || num[1] > num[2] || i >= n)
        return tar_fail(t, FERRY_ERR_FORMAT, "malformed piece header");
    if ((r = tar_name(t, t->piece_path, v + i, n - i)) != 0)
        return r;
    t->piece.index = (uint32_t)num[0];
    t->piece.offset = num[1];
    t->piece.file_size = num[2];
    t->piece.path = t->piece_path;
    t->piece.path_len = n - i;
    t->has_piece = 1;
    return 0;
}

/* Applies one record of a local pax header. */
static int
tar_pax_apply(struct tar_rd *t, const char *k, size_t klen, const char *v,
    size_t vlen)
{
    uint64_t u;
    int r;

#define KEY(s) (klen == sizeof(s) - 1 && memcmp(k, s, klen) == 0)
    if (KEY("path")) {
        if ((r = tar_name(t, t->path, v, vlen)) != 0)
            return r;
        t->has_path = vlen > 0;
    } else if (KEY("linkpath")) {
        if ((r = tar_name(t, t->link, v, vlen)) != 0)
            return r;
        t->has_link = vlen > 0;
    } else if (KEY("size")) {
        if ((r = tar_dec(v, vlen, TAR_MAX_SIZE, &u)) != 0)
            return tar_fail(t, r, "bad size in pax header");
        t->size = u;
        t->has_size = 1;
    } else if (KEY("mtime")) {
        if (tar_time(v, vlen, &t->mtime_sec, &t->mtime_nsec) != 0)
            return tar_fail(t, FERRY_ERR_FORMAT, "bad mtime in pax header");
        t->has_mtime = 1;
    } else if (KEY("comment")) {
        if (vlen >= sizeof(TAR_PIECE_TAG) - 1 &&
            memcmp(v, TAR_PIECE_TAG, sizeof(TAR_PIECE_TAG) - 1) == 0)
            return tar_piece_parse(t, v, vlen);
    } else if (klen >= 11 && memcmp(k, "GNU.sparse.", 11) == 0) {
        return tar_fail(t, FERRY_ERR_UNSUPPORTED,
            "sparse members (GNU tar -S) are not supported");
    }
#undef KEY
    /* Everything else (owners, atime, xattrs, hdrcharset) is not ours to
     * keep. */
    return 0;
}

/* Parses the records of a pax header: "LEN key=value\n" each. */
static int
tar_pax_parse(struct tar_rd *t, const uint8_t *p, size_t n, int apply)
{
    const char *s = (const char *)p;
    size_t pos = 0, i, len;
    const char *eq;
    int r;

    while (pos < n) {
        len = 0;
        for (i = pos; i < n && s[i] >= '0' && s[i] <= '9' && i - pos < 8;
            i++)
            len = len * 10 + (size_t)(s[i] - '0');
        if (i == pos || i >= n || s[i] != ' ' || len > n - pos ||
            len < i - pos + 4 || s[pos + len - 1] != '\n')
            return tar_fail(t, FERRY_ERR_FORMAT, "malformed pax record");
        i++;
        eq = memchr(s + i, '=', pos + len - 1 - i);
        if (eq == NULL || eq == s + i)
            return tar_fail(t, FERRY_ERR_FORMAT, "malformed pax record");
        if (apply && (r = tar_pax_apply(t, s + i, (size_t)(eq - (s + i)),
            eq + 1, (size_t)(s + pos + len - 1 - (eq + 1)))) != 0)
            return r;
        pos += len;
    }
    return 0;
}

/* An extended header ('x', 'g', 'L', 'K') is complete in t->ext. */
static int
tar_ext_done(struct tar_rd *t)
{
    const uint8_t *p = buf_ptr(&t->ext);
    size_t n = buf_used(&t->ext), len;
    int r = 0;

    switch (t->ext_type) {
    case 'x':
    case 'g':
        r = tar_pax_parse(t, p, n, t->ext_type == 'x');
        break;
    case 'L':
    case 'K':
        /* GNU long names end with a NUL. */
        len = p != NULL ? strnlen((const char *)p, n) : 0;
        if (len == 0)
            return tar_fail(t, FERRY_ERR_FORMAT, "empty GNU long name");
        r = tar_name(t, t->ext_type == 'L' ? t->path : t->link,
            (const char *)p, len);
        if (r == 0 && t->ext_type == 'L')
            t->has_path = 1;
        else if (r == 0)
            t->has_link = 1;
        break;
    }
    buf_reset(&t->ext);
    if (r == 0 && t->ext_type != 'g')
        t->has_ext = 1;
    return r;
}

/* Builds the entry of a member header, with the pending extended values. */
static int
tar_member(struct tar_rd *t, const uint8_t *h, int posix, int64_t size,
    struct tar_event *ev)
{
    struct tar_entry *e = &ev->e;
    int64_t v;
    size_t n, pn;

    switch (h[F_TYPE]) {
    case '0': case '\0': case '7': e->type = TAR_FILE; break;
    case '1': e->type = TAR_HARDLINK; break;
    case '2': e->type = TAR_SYMLINK; break;
    case '3': e->type = TAR_CHAR; break;
    case '4': e->type = TAR_BLOCKDEV; break;
    case '5': e->type = TAR_DIR; break;
    case '6': e->type = TAR_FIFO; break;
    default:
        return tar_fail(t, FERRY_ERR_UNSUPPORTED,
            "member type not supported (GNU sparse, multi-volume, label "
            "or unknown)");
    }
    if (!t->has_path) {
        n = strnlen((const char *)h + F_NAME, W_NAME);
        pn = posix ? strnlen((const char *)h + F_PREFIX, W_PREFIX) : 0;
        memcpy(t->path, h + F_PREFIX, pn);
        if (pn > 0)
            t->path[pn++] = '/';
        memcpy(t->path + pn, h + F_NAME, n);
        t->path[pn + n] = '\0';
    }
    if (!t->has_link) {
        n = strnlen((const char *)h + F_LINK, W_LINK);
        memcpy(t->link, h + F_LINK, n);
        t->link[n] = '\0';
    }
    if (t->path[0] == '\0')
        return tar_fail(t, FERRY_ERR_FORMAT, "member with an empty name");
    if (tar_num(h + F_MODE, 8, 0, &v) != 0)
        return tar_fail(t, FERRY_ERR_FORMAT, "bad mode field");
    e->mode = (uint32_t)v & 07777;
    if (t->has_mtime) {
        e->mtime_sec = t->mtime_sec;
        e->mtime_nsec = t->mtime_nsec;
    } else if (tar_num(h + F_MTIME, 12, 1, &e->mtime_sec) != 0) {
        return tar_fail(t, FERRY_ERR_FORMAT, "bad mtime field");
    }
    /* At most TAR_MAX_SIZE already: a pax size is bounded as it is read
     * (tar_dec), a header's field by its width (tar_num). */
    e->size = t->has_size ? t->size : (uint64_t)size;
    if (e->type != TAR_FILE && e->size != 0)
        return tar_fail(t, FERRY_ERR_FORMAT,
            "data in a member that is not a regular file");
    e->path = t->path;
    e->path_len = strlen(t->path);
    e->link = t->link;
    e->link_len = strlen(t->link);
    if (t->has_piece) {
        if (e->type != TAR_FILE ||
            e->size > t->piece.file_size - t->piece.offset)
            return tar_fail(t, FERRY_ERR_FORMAT,
                "piece header does not fit its member");
        e->is_piece = 1;
        e->piece = t->piece;
    }
    t->has_ext = t->has_path = t->has_link = t->has_size = 0;
    t->has_mtime = t->has_piece = 0;
    t->left = e->size;
    t->pad = tar_pad(e->size);
    t->state = ST_DATA;
    ev->ev = TAR_EV_ENTRY;
    ev->data_offset = t->off;
    return 0;
}

/* A full header block is in t->hdr. */
static int
tar_header(struct tar_rd *t, struct tar_event *ev)
{
    const uint8_t *h = t->hdr;
    unsigned usum = 0;
    int ssum = 0, posix, gnu;
    int64_t stored, size;
    size_t i;

    for (i = 0; i < TAR_BLOCK && h[i] == 0; i++)
        ;
    if (i == TAR_BLOCK) {
        if (t->has_ext)
            return tar_fail(t, FERRY_ERR_FORMAT,
                "extended header without a member");
        if (++t->zero_blocks == 2) {
            t->state = ST_END;
            ev->ev = TAR_EV_END;
        }
        return 0;
    }
    if (t->zero_blocks > 0)
        return tar_fail(t, FERRY_ERR_FORMAT, "zero block inside the archive");
    /* The checksum treats its own field as spaces; old tars summed signed
     * bytes, so either sum is accepted, as GNU tar does. */
    for (i = 0; i < TAR_BLOCK; i++) {
        uint8_t c = i >= F_CHKSUM && i < F_CHKSUM + 8 ? ' ' : h[i];

        usum += c;
        ssum += (signed char)c;
    }
    if (tar_num(h + F_CHKSUM, 8, 0, &stored) != 0 ||
        (stored != (int64_t)usum && stored != (int64_t)ssum))
        return tar_fail(t, FERRY_ERR_FORMAT, "header checksum mismatch");
    posix = memcmp(h + F_MAGIC, "ustar\0", 6) == 0;
    gnu = memcmp(h + F_MAGIC, "ustar  \0", 8) == 0;
    if (!posix && !gnu)
        return tar_fail(t, FERRY_ERR_FORMAT,
            "not a ustar, pax or GNU tar header");
    if (tar_num(h + F_SIZE, 12, 0, &size) != 0)
        return tar_fail(t, FERRY_ERR_FORMAT, "bad size field");
    switch (h[F_TYPE]) {
    case 'x':
    case 'g':
    case 'L':
    case 'K':
        if ((uint64_t)size > (h[F_TYPE] == 'x' || h[F_TYPE] == 'g' ?
            TAR_MAX_EXT : TAR_MAX_NAME + 1))
            return tar_fail(t, FERRY_ERR_TOO_LARGE,
                "extended header too large");
        t->ext_type = h[F_TYPE];
        t->ext_left = (uint64_t)size;
        t->pad = tar_pad((uint64_t)size);
        t->state = ST_EXT;
        return 0;
    default:
        return tar_member(t, h, posix, size, ev);
    }
}

int
tar_rd_next(struct tar_rd *t, const uint8_t *p, size_t n, size_t *used,
    struct tar_event *ev)
{
    size_t take;
    uint8_t *dst;
    int r;

    memset(ev, 0, sizeof(*ev));
    *used = 0;
    for (;;) {
        size_t avail = n - *used;
        const uint8_t *q = p + *used;

        switch (t->state) {
        case ST_ERROR:
            return FERRY_ERR_FORMAT;
        case ST_END:
            t->off += avail;
            *used = n;
            return 0;
        case ST_HEADER:
            take = TAR_BLOCK - t->hdr_len < avail ? TAR_BLOCK - t->hdr_len :
                avail;
            if (take == 0)
                return 0;
            memcpy(t->hdr + t->hdr_len, q, take);
            t->hdr_len += take;
            *used += take;
            t->off += take;
            if (t->hdr_len < TAR_BLOCK)
                return 0;
            t->hdr_len = 0;
            if ((r = tar_header(t, ev)) != 0 || ev->ev != TAR_EV_NEED)
                return r;
            break;
        case ST_EXT:
            take = t->ext_left < avail ? (size_t)t->ext_left : avail;
            if (take == 0 && t->ext_left > 0)
                return 0;
            if (take > 0) {
                if ((r = buf_reserve(&t->ext, take, &dst)) != 0)
                    return tar_fail(t, r, "extended header too large");
                memcpy(dst, q, take);
                *used += take;
                t->off += take;
                t->ext_left -= take;
            }
            if (t->ext_left == 0) {
                if ((r = tar_ext_done(t)) != 0)
                    return r;
                t->state = ST_PAD;
            }
            break;
        case ST_DATA:
            if (t->left == 0) {
                t->state = ST_PAD;
                break;
            }
            take = t->left < avail ? (size_t)t->left : avail;
            if (take == 0)
                return 0;
            ev->ev = TAR_EV_DATA;
            ev->data = q;
            ev->len = take;
            ev->data_offset = t->off;
            *used += take;
            t->off += take;
            t->left -= take;
            return 0;
        case ST_PAD:
            take = t->pad < avail ? (size_t)t->pad : avail;
            *used += take;
            t->off += take;
            t->pad -= take;
            if (t->pad > 0)
                return 0;
            t->state = ST_HEADER;
            break;
        }
    }
}

int
tar_rd_finish(struct tar_rd *t)
{
    if (t->state == ST_END ||
        (t->state == ST_HEADER && t->hdr_len == 0 && t->zero_blocks == 1))
        return 0;
    if (t->state == ST_ERROR)
        return FERRY_ERR_FORMAT;
    t->why = t->off == 0 ? "empty archive" :
        "archive truncated (it ends inside a member or without its end "
        "blocks)";
    return FERRY_ERR_SHORT;
}
