#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Returns the length of the valid UTF-8 sequence at s, or 0 if invalid. */
static size_t
text_utf8_len(const unsigned char *s, size_t len)
{
    size_t n, i;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, cp = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, cp = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    if (n > len)
        return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return n;
}

int
text_utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n;

    while (i < len) {
        if ((n = text_utf8_len(u + i, len - i)) == 0)
            return 0;
        i += n;
    }
    return 1;
}

char *
text_escape(const char *s, size_t len, char *out, size_t outlen)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, o = 0, cut = 0, n, t;
    char tmp[8];

    if (outlen == 0)
        return out;
    while (i < len) {
        n = text_utf8_len(u + i, len - i);
        if (n == 1 && u[i] >= 0x20 && u[i] != 0x7f && u[i] != '\\') {
            tmp[0] = (char)u[i];
            tmp[1] = '\0';
        } else if (n > 1) {
            memcpy(tmp, u + i, n);
            tmp[n] = '\0';
        } else {
            n = 1;
            if (u[i] == '\n')
                strcpy(tmp, "\\n");
            else if (u[i] == '\t')
                strcpy(tmp, "\\t");
            else if (u[i] == '\\')
                strcpy(tmp, "\\\\");
            else
                snprintf(tmp, sizeof(tmp), "\\x%02x", u[i]);
        }
        /* The last boundary between whole pieces that leaves room for
         * "..." and the NUL: where a cut goes if the rest does not fit. */
        if (o + 4 <= outlen)
            cut = o;
        t = strlen(tmp);
        if (t > outlen - 1 - o) {
            /* Too little room for all of it: cut at a boundary, so that
             * no escape or UTF-8 sequence is split, and say so. */
            o = 0;
            if (outlen >= 4) {
                memcpy(out + cut, "...", 3);
                o = cut + 3;
            }
            break;
        }
        memcpy(out + o, tmp, t);
        o += t;
        i += n;
    }
    out[o] = '\0';
    return out;
}

int
text_json_string(struct buf *b, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t start = buf_used(b), i = 0, n;
    char esc[8];
    int r;

    if ((r = buf_put_u8(b, '"')) != 0)
        return r;
    while (i < len) {
        n = text_utf8_len(u + i, len - i);
        if (n == 0) {
            r = buf_put(b, "\xef\xbf\xbd", 3);
            n = 1;
        } else if (n > 1) {
            r = buf_put(b, u + i, n);
        } else if (u[i] == '"' || u[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)u[i];
            r = buf_put(b, esc, 2);
        } else if (u[i] < 0x20 || u[i] == 0x7f) {
            snprintf(esc, sizeof(esc), "\\u%04x", u[i]);
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
