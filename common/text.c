#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* text_escape_* flags. */
#define TEXT_KEEP_BACKSLASH 1

/* One escaped character: what one step of the escape writes. */
struct text_piece {
    char s[20];       /* NUL-terminated; 4 bytes as \xHH each at most */
    size_t len;       /* of s */
    size_t in;        /* input bytes it stands for */
    size_t cols;      /* terminal columns it takes */
};

/* Returns the length of the valid UTF-8 sequence at s and its code point
 * in *cp, or 0 if invalid. */
static size_t
text_utf8_decode(const unsigned char *s, size_t len, uint32_t *cp)
{
    size_t n, i;
    uint32_t c;

    *cp = s[0];
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, c = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, c = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, c = s[0] & 0x07;
    else
        return 0;
    if (n > len)
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
        (n == 4 && (c < 0x10000 || c > 0x10ffff)))
        return 0;
    *cp = c;
    return n;
}

/* Characters beyond ASCII that a terminal acts on or that make text
 * display as other text: C1 controls, line and paragraph separators,
 * bidirectional embeddings, overrides and isolates. */
static int
text_cp_unsafe(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x2028 && cp <= 0x202e) ||
        (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * Terminal columns of a printable code point beyond ASCII. A short table
 * rather than wcwidth(3): that depends on the locale, which ferry does not
 * set, and the progress line must not wrap whatever it is. The wide ranges
 * are the CJK, Hangul, fullwidth and emoji blocks; the zero-width ones the
 * combining marks, zero-width spaces and variation selectors.
 */
static size_t
text_cp_width(uint32_t cp)
{
    static const struct {
        uint32_t lo, hi;
        unsigned char cols;
    } ranges[] = {
        { 0x0300, 0x036f, 0 }, { 0x0483, 0x0489, 0 }, { 0x0591, 0x05bd, 0 },
        { 0x1100, 0x115f, 2 }, { 0x1ab0, 0x1aff, 0 }, { 0x1dc0, 0x1dff, 0 },
        { 0x200b, 0x200f, 0 }, { 0x20d0, 0x20ff, 0 }, { 0x2e80, 0x303e, 2 },
        { 0x3041, 0x33ff, 2 }, { 0x3400, 0x4dbf, 2 }, { 0x4e00, 0x9fff, 2 },
        { 0xa000, 0xa4cf, 2 }, { 0xac00, 0xd7a3, 2 }, { 0xf900, 0xfaff, 2 },
        { 0xfe00, 0xfe0f, 0 }, { 0xfe20, 0xfe2f, 0 }, { 0xfe30, 0xfe4f, 2 },
        { 0xff00, 0xff60, 2 }, { 0xffe0, 0xffe6, 2 }, { 0x1f300, 0x1f64f, 2 },
        { 0x1f900, 0x1f9ff, 2 }, { 0x20000, 0x3fffd, 2 },
    };
    size_t i;

    for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
        if (cp >= ranges[i].lo && cp <= ranges[i].hi)
            return ranges[i].cols;
    return 1;
}

/* The escape of the character at u (len > 0). */
static void
text_piece(const unsigned char *u, size_t len, int flags,
    struct text_piece *p)
{
    uint32_t cp;
    size_t n = text_utf8_decode(u, len, &cp), i;

    if (n == 1 && u[0] >= 0x20 && u[0] != 0x7f &&
        (u[0] != '\\' || (flags & TEXT_KEEP_BACKSLASH))) {
        p->s[0] = (char)u[0];
        p->len = p->cols = 1;
    } else if (n > 1 && !text_cp_unsafe(cp)) {
        memcpy(p->s, u, n);
        p->len = n;
        p->cols = text_cp_width(cp);
    } else {
        /* Escaped byte by byte: a C1 control as the two bytes that encode
         * it, an invalid byte as itself. */
        if (n == 0)
            n = 1;
        p->len = 0;
        for (i = 0; i < n; i++) {
            const char *e = u[i] == '\n' ? "\\n" : u[i] == '\t' ? "\\t" :
                u[i] == '\\' ? "\\\\" : NULL;

            if (e != NULL) {
                memcpy(p->s + p->len, e, 2);
                p->len += 2;
            } else {
                p->len += (size_t)snprintf(p->s + p->len,
                    sizeof(p->s) - p->len, "\\x%02x", u[i]);
            }
        }
        p->cols = p->len;
    }
    p->s[p->len] = '\0';
    p->in = n;
}

/*
 * Escapes the input from *i on into out + *o while each character's
 * escape fits both in maxcols more columns and in the bytes below room
 * (an offset into out). Stops before the first one that does not fit;
 * advances *i and *o. Returns the columns used.
 */
static size_t
text_run(const unsigned char *u, size_t len, int flags, size_t *i,
    size_t maxcols, char *out, size_t *o, size_t room)
{
    struct text_piece p;
    size_t cols = 0;

    while (*i < len) {
        text_piece(u + *i, len - *i, flags, &p);
        if (p.cols > maxcols - cols || p.len > room - *o)
            break;
        memcpy(out + *o, p.s, p.len);
        *o += p.len;
        cols += p.cols;
        *i += p.in;
    }
    out[*o] = '\0';
    return cols;
}

/* text_escape with flags; cut at the end when out is too small. */
static char *
text_escape_flags(const char *s, size_t len, int flags, char *out,
    size_t outlen)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0;

    if (outlen == 0)
        return out;
    (void)text_run(u, len, flags, &i, SIZE_MAX, out, &o, outlen - 1);
    if (i == len)
        return out;
    /* Too little room for all of it: cut where "..." still fits, so that
     * no escape or UTF-8 sequence is split, and say so. */
    i = o = 0;
    out[0] = '\0';
    if (outlen < 4)
        return out;
    (void)text_run(u, len, flags, &i, SIZE_MAX, out, &o, outlen - 4);
    memcpy(out + o, "...", 4);
    return out;
}

int
text_utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n;
    uint32_t cp;

    while (i < len) {
        if ((n = text_utf8_decode(u + i, len - i, &cp)) == 0)
            return 0;
        i += n;
    }
    return 1;
}

char *
text_escape(const char *s, size_t len, char *out, size_t outlen)
{
    return text_escape_flags(s, len, 0, out, outlen);
}

size_t
text_escape_width(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    struct text_piece p;
    size_t i = 0, cols = 0;

    while (i < len) {
        text_piece(u + i, len - i, 0, &p);
        cols += p.cols;
        i += p.in;
    }
    return cols;
}

char *
text_escape_fit(const char *s, size_t len, size_t cols, char *out,
    size_t outlen)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t width, head, tail, i = 0, o = 0, skipped;
    struct text_piece p;

    if (outlen == 0)
        return out;
    if ((width = text_escape_width(s, len)) <= cols)
        return text_escape_flags(s, len, 0, out, outlen);
    if (cols < 4) {
        (void)text_run(u, len, 0, &i, cols, out, &o, outlen - 1);
        return out;
    }
    if (outlen < 4) {
        out[0] = '\0';
        return out;
    }
    /* The start gets the odd column (it says where the file is), the
     * end whatever the start left. */
    head = cols - 3 - (cols - 3) / 2;
    skipped = text_run(u, len, 0, &i, head, out, &o, outlen - 4);
    tail = cols - 3 - skipped;
    /* Leave out the middle until what is left fits beside it. */
    while (i < len && width - skipped > tail) {
        text_piece(u + i, len - i, 0, &p);
        skipped += p.cols;
        i += p.in;
    }
    memcpy(out + o, "...", 4);
    o += 3;
    (void)text_run(u, len, 0, &i, tail, out, &o, outlen - 1);
    return out;
}

int
text_json_string(struct buf *b, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t start = buf_used(b), i = 0, n;
    uint32_t cp;
    char esc[8];
    int r;

    if ((r = buf_put_u8(b, '"')) != 0)
        return r;
    while (i < len) {
        n = text_utf8_decode(u + i, len - i, &cp);
        if (n == 0) {
            r = buf_put(b, "\xef\xbf\xbd", 3);
            n = 1;
        } else if (n > 1 && !text_cp_unsafe(cp)) {
            r = buf_put(b, u + i, n);
        } else if (cp == '"' || cp == '\\') {
            esc[0] = '\\';
            esc[1] = (char)cp;
            r = buf_put(b, esc, 2);
        } else if (cp < 0x20 || cp >= 0x7f) {
            /* C0, DEL, and the unsafe characters beyond ASCII (all in
             * the Basic Multilingual Plane). */
            snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
            r = buf_put(b, esc, 6);
        } else {
            r = buf_put_u8(b, u[i]);
        }
        if (r != 0)
            break;
        i += n;
    }
    if (r == 0)
        r = buf_put_u8(b, '"');
    /* No half-written string is left behind. */
    if (r != 0)
        buf_unreserve(b, buf_used(b) - start);
    return r;
}

char *
text_bytes(double bytes, char *out, size_t outlen)
{
    static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    size_t u = 0;

    while (bytes >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
        bytes /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, outlen, "%.0f B", bytes);
    else
        snprintf(out, outlen, "%.*f %s", bytes < 10 ? 2 : bytes < 100 ? 1 : 0,
            bytes, units[u]);
    return out;
}

/* Hands the collected line to emit, escaped, and starts a new one. */
static void
text_lines_emit(struct text_lines *l)
{
    /* Every byte may become \xHH. */
    char esc[4 * TEXT_LINE_MAX + 1];
    size_t n = l->len;

    if (n > 0 && l->raw[n - 1] == '\r')
        n--;
    l->len = 0;
    l->emit(l->ctx, text_escape_flags(l->raw, n, TEXT_KEEP_BACKSLASH, esc,
        sizeof(esc)));
}

void
text_lines_feed(struct text_lines *l, const char *p, size_t n)
{
    const char *nl;
    size_t k;

    while (n > 0) {
        nl = memchr(p, '\n', n);
        k = nl != NULL ? (size_t)(nl - p) : n;
        if (k > sizeof(l->raw) - l->len)
            k = sizeof(l->raw) - l->len;
        memcpy(l->raw + l->len, p, k);
        l->len += k;
        p += k;
        n -= k;
        if (n > 0 && *p == '\n') {
            p++;
            n--;
            text_lines_emit(l);
        } else if (l->len == sizeof(l->raw)) {
            text_lines_emit(l);
        }
    }
}

void
text_lines_flush(struct text_lines *l)
{
    if (l->len > 0)
        text_lines_emit(l);
}

int
text_parse_size(const char *s, uint64_t *out)
{
    unsigned long long v;
    unsigned shift = 0;
    char *end;

    *out = 0;
    if (s[0] < '0' || s[0] > '9')
        return FERRY_ERR_USAGE;
    v = strtoull(s, &end, 10);
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    }
    if (shift != 0 && strcmp(end, "iB") == 0)
        end += 2;
    else if (strcmp(end, "B") == 0)
        end++;
    if (*end != '\0' || v > (UINT64_MAX >> 1) >> shift)
        return FERRY_ERR_USAGE;
    *out = (uint64_t)v << shift;
    return 0;
}
