#include "vmanifest.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/rd.h"
#include "../common/text.h"
#include "limits.h"

static const char *const vman_types[] = {
    NULL, "head", "dir", "file", "symlink", "piece", "end"
};

/*
 * Encoding
 */

static int
vman_key(struct buf *b, const char *key, int first)
{
    int r;

    if (!first && (r = buf_put_u8(b, ',')) != 0)
        return r;
    if ((r = text_json_string(b, key, strlen(key))) != 0)
        return r;
    return buf_put_u8(b, ':');
}

static int
vman_num(struct buf *b, const char *key, uint64_t v)
{
    char tmp[24];
    int r, n = snprintf(tmp, sizeof(tmp), "%" PRIu64, v);

    if ((r = vman_key(b, key, 0)) != 0)
        return r;
    return buf_put(b, tmp, (size_t)n);
}

/* "path" as a JSON string when it is UTF-8 (then it decodes to the same
 * bytes), else "path_hex"; path_hex too when escapes make the string
 * longer than hex, since a long name's line would then be longer than
 * VMAN_MAX_LINE. */
static int
vman_path(struct buf *b, const char *key, const char *p, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i, mark = buf_used(b);
    char hkey[32];
    int r;

    if (text_utf8_valid(p, n)) {
        if ((r = vman_key(b, key, 0)) != 0 ||
            (r = text_json_string(b, p, n)) != 0)
            return r;
        if (buf_used(b) - mark <= strlen(key) + 6 + 2 * n)
            return 0;
        buf_unreserve(b, buf_used(b) - mark);
    }
    snprintf(hkey, sizeof(hkey), "%s_hex", key);
    if ((r = vman_key(b, hkey, 0)) != 0 || (r = buf_put_u8(b, '"')) != 0)
        return r;
    for (i = 0; i < n && r == 0; i++) {
        char h[2] = { hex[(uint8_t)p[i] >> 4], hex[p[i] & 15] };

        r = buf_put(b, h, 2);
    }
    return r == 0 ? buf_put_u8(b, '"') : r;
}

int
vman_encode(struct buf *b, const struct vman_rec *v)
{
    size_t start = buf_used(b);
    char hex[2 * HASH_LEN + 1];
    int r;

    if (v->type < VMAN_HEAD || v->type > VMAN_END)
        return FERRY_ERR_USAGE;
    if ((r = buf_put_u8(b, '{')) != 0 ||
        (r = vman_key(b, "type", 1)) != 0 ||
        (r = text_json_string(b, vman_types[v->type],
        strlen(vman_types[v->type]))) != 0)
        goto out;
    switch (v->type) {
    case VMAN_HEAD:
        if ((r = vman_key(b, "format", 0)) != 0 ||
            (r = text_json_string(b, VMAN_FORMAT,
            sizeof(VMAN_FORMAT) - 1)) != 0 ||
            (r = vman_num(b, "version", VMAN_VERSION)) != 0 ||
            (r = vman_path(b, "name", v->path, v->path_len)) != 0 ||
            (r = vman_num(b, "volume_size", v->volume_size)) != 0)
            goto out;
        r = vman_num(b, "block_size", v->block_size);
        break;
    case VMAN_END:
        if ((r = vman_num(b, "volumes", v->volume)) != 0 ||
            (r = vman_num(b, "entries", v->entries)) != 0 ||
            (r = vman_num(b, "files", v->files)) != 0)
            goto out;
        r = vman_num(b, "bytes", v->size);
        break;
    default:
        if ((r = vman_path(b, "path", v->path, v->path_len)) != 0)
            goto out;
        if (v->type == VMAN_PIECE &&
            ((r = vman_num(b, "index", v->index)) != 0 ||
            (r = vman_num(b, "file_offset", v->file_offset)) != 0))
            goto out;
        if ((v->type == VMAN_PIECE || v->type == VMAN_FILE) &&
            (r = vman_num(b, "size", v->size)) != 0)
            goto out;
        if (v->type == VMAN_FILE) {
            hash_hex(&v->hash, hex);
            if ((r = vman_key(b, "xxh3", 0)) != 0 ||
                (r = text_json_string(b, hex, 2 * HASH_LEN)) != 0)
                goto out;
            if (v->pieces > 0) {
                r = vman_num(b, "pieces", v->pieces);
                break;
            }
        }
        if ((r = vman_num(b, "volume", v->volume)) != 0)
            goto out;
        r = vman_num(b, "offset", v->offset);
        break;
    }
    if (r == 0)
        r = buf_put(b, "}\n", 2);
out:
    if (r != 0 && buf_used(b) > start)
        buf_unreserve(b, buf_used(b) - start);
    return r;
}

/*
 * Decoding: one flat JSON object whose values are strings or unsigned
 * integers.
 */

static void
vman_ws(struct rd *r)
{
    while (r->len > 0 && (r->p[0] == ' ' || r->p[0] == '\t' ||
        r->p[0] == '\r'))
        if (rd_u8(r, NULL) != 0)
            break;
}

static int
vman_char(struct rd *r, char c)
{
    vman_ws(r);
    if (r->len == 0 || r->p[0] != (uint8_t)c)
        return FERRY_ERR_FORMAT;
    return rd_u8(r, NULL);
}

static int
vman_hex4(struct rd *r, uint32_t *v)
{
    const uint8_t *p;
    int i, d;

    *v = 0;
    if (rd_bytes(r, 4, &p) != 0)
        return FERRY_ERR_FORMAT;
    for (i = 0; i < 4; i++) {
        d = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' :
            p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10 :
            p[i] >= 'A' && p[i] <= 'F' ? p[i] - 'A' + 10 : -1;
        if (d < 0)
            return FERRY_ERR_FORMAT;
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

/* Appends code point cp as UTF-8 to dst (cap bytes, *len used). */
static int
vman_utf8(char *dst, size_t cap, size_t *len, uint32_t cp)
{
    uint8_t u[4];
    size_t n;

    if (cp < 0x80) {
        u[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (uint8_t)(0xc0 | cp >> 6);
        u[1] = (uint8_t)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (uint8_t)(0xe0 | cp >> 12);
        u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        u[2] = (uint8_t)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        u[0] = (uint8_t)(0xf0 | cp >> 18);
        u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
        u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
        u[3] = (uint8_t)(0x80 | (cp & 0x3f));
        n = 4;
    }
    if (n > cap - *len)
        return FERRY_ERR_TOO_LARGE;
    if (dst != NULL)
        memcpy(dst + *len, u, n);
    *len += n;
    return 0;
}

/* A JSON string into dst (at most cap bytes; dst NULL: only checked).
 * Raw bytes must be valid UTF-8 without controls. */
static int
vman_str(struct rd *r, char *dst, size_t cap, size_t *len)
{
    uint32_t cp, lo;
    uint8_t c;
    int e;

    *len = 0;
    if (vman_char(r, '"') != 0)
        return FERRY_ERR_FORMAT;
    for (;;) {
        if (rd_u8(r, &c) != 0 || c < 0x20)
            return FERRY_ERR_FORMAT;
        if (c == '"')
            return 0;
        if (c != '\\') {
            /* A raw character: its whole UTF-8 sequence, copied. */
            const uint8_t *seq = r->p - 1;
            size_t n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 :
                c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;

            /* The sequence must be whole (its bytes taken here) and
             * valid. */
            if (n == 0 || (n > 1 && rd_bytes(r, n - 1, NULL) != 0) ||
                !text_utf8_valid((const char *)seq, n))
                return FERRY_ERR_FORMAT;
            if (n > cap - *len)
                return FERRY_ERR_TOO_LARGE;
            if (dst != NULL)
                memcpy(dst + *len, seq, n);
            *len += n;
            continue;
        }
        /* A backslash that ends the line escapes nothing: refused below
         * as an unknown escape. */
        if (rd_u8(r, &c) != 0)
            c = 0;
        switch (c) {
        case '"': case '\\': case '/': cp = c; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (vman_hex4(r, &cp) != 0)
                return FERRY_ERR_FORMAT;
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return FERRY_ERR_FORMAT;
            if (cp >= 0xd800 && cp <= 0xdbff) {
                if (vman_char(r, '\\') != 0 || vman_char(r, 'u') != 0 ||
                    vman_hex4(r, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
                    return FERRY_ERR_FORMAT;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            break;
        default:
            return FERRY_ERR_FORMAT;
        }
        if ((e = vman_utf8(dst, cap, len, cp)) != 0)
            return e;
    }
}

/* An unsigned integer without leading zeros, of at most 19 digits: its
 * digits are taken, then checked. */
static int
vman_uint(struct rd *r, uint64_t *v)
{
    const uint8_t *p;
    size_t n = 0, i;

    *v = 0;
    vman_ws(r);
    while (n < r->len && r->p[n] >= '0' && r->p[n] <= '9')
        n++;
    if (rd_bytes(r, n, &p) != 0 || n == 0 || n > 19 ||
        (n > 1 && p[0] == '0'))
        return FERRY_ERR_FORMAT;
    for (i = 0; i < n; i++)
        *v = *v * 10 + (uint64_t)(p[i] - '0');
    return 0;
}

/* The n lowercase hex digits s as n / 2 bytes into out: 0 when they are
 * not that (the caller bounds n). */
static int
vman_unhex(const char *s, size_t n, uint8_t *out)
{
    size_t i;

    if (n % 2 != 0)
        return 0;
    for (i = 0; i < n; i++) {
        int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' :
            s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : -1;

        if (d < 0)
            return 0;
        out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | d : d << 4);
    }
    return 1;
}

/* Keys a record may need, as bits. */
enum {
    K_TYPE = 1 << 0, K_PATH = 1 << 1, K_VOLUME = 1 << 2, K_OFFSET = 1 << 3,
    K_SIZE = 1 << 4, K_INDEX = 1 << 5, K_FOFF = 1 << 6, K_PIECES = 1 << 7,
    K_XXH3 = 1 << 8, K_FORMAT = 1 << 9, K_VERSION = 1 << 10,
    K_VSIZE = 1 << 11, K_BSIZE = 1 << 12, K_ENTRIES = 1 << 13,
    K_FILES = 1 << 14, K_BYTES = 1 << 15, K_VOLUMES = 1 << 16
};

static const struct vman_need {
    unsigned need;
} vman_needs[] = {
    { 0 },
    { K_FORMAT | K_VERSION | K_PATH | K_VSIZE | K_BSIZE },
    { K_PATH | K_VOLUME | K_OFFSET },
    { K_PATH | K_SIZE | K_XXH3 },
    { K_PATH | K_VOLUME | K_OFFSET },
    { K_PATH | K_INDEX | K_FOFF | K_SIZE | K_VOLUME | K_OFFSET },
    { K_VOLUMES | K_ENTRIES | K_FILES | K_BYTES },
};

/* The value of one key. */
static int
vman_field(struct rd *r, const char *k, size_t klen, struct vman_rec *v,
    char *store, unsigned *seen)
{
    static const struct { const char *k; unsigned bit; } nums[] = {
        { "volume", K_VOLUME }, { "offset", K_OFFSET }, { "size", K_SIZE },
        { "index", K_INDEX }, { "file_offset", K_FOFF },
        { "pieces", K_PIECES }, { "version", K_VERSION },
        { "volume_size", K_VSIZE }, { "block_size", K_BSIZE },
        { "entries", K_ENTRIES }, { "files", K_FILES }, { "bytes", K_BYTES },
        { "volumes", K_VOLUMES },
    };
    char small[2 * VMAN_MAX_PATH + 2];
    uint64_t u;
    size_t n, i;
    int e, hex;

    for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        if (strlen(nums[i].k) != klen || memcmp(nums[i].k, k, klen) != 0)
            continue;
        if (vman_uint(r, &u) != 0)
            return FERRY_ERR_FORMAT;
        switch (nums[i].bit) {
        case K_VOLUME: case K_INDEX: case K_PIECES: case K_VOLUMES:
        case K_BSIZE: case K_VERSION:
            if (u > UINT32_MAX)
                return FERRY_ERR_FORMAT;
            break;
        }
        switch (nums[i].bit) {
        case K_VOLUME: case K_VOLUMES: v->volume = (uint32_t)u; break;
        case K_OFFSET: v->offset = u; break;
        case K_SIZE: case K_BYTES: v->size = u; break;
        case K_INDEX: v->index = (uint32_t)u; break;
        case K_FOFF: v->file_offset = u; break;
        case K_PIECES: v->pieces = (uint32_t)u; break;
        case K_VERSION:
            if (u != VMAN_VERSION)
                return FERRY_ERR_FORMAT;
            break;
        case K_VSIZE: v->volume_size = u; break;
        case K_BSIZE: v->block_size = (uint32_t)u; break;
        case K_ENTRIES: v->entries = u; break;
        case K_FILES: v->files = u; break;
        }
        *seen |= nums[i].bit;
        return 0;
    }
    if (r->len > 0 && r->p[0] != '"') {
        /* An unknown key's number. */
        return vman_uint(r, &u);
    }
    hex = (klen == 8 && memcmp(k, "path_hex", 8) == 0) ||
        (klen == 8 && memcmp(k, "name_hex", 8) == 0);
    if ((e = vman_str(r, small, sizeof(small) - 1, &n)) != 0)
        return e;
    if ((klen == 4 && (memcmp(k, "path", 4) == 0 ||
        memcmp(k, "name", 4) == 0)) || hex) {
        if (hex) {
            /* small's bound keeps n / 2 within VMAN_MAX_PATH. */
            if (!vman_unhex(small, n, (uint8_t *)store))
                return FERRY_ERR_FORMAT;
            n /= 2;
        } else {
            if (n > VMAN_MAX_PATH)
                return FERRY_ERR_TOO_LARGE;
            memcpy(store, small, n);
        }
        if (n == 0 || memchr(store, '\0', n) != NULL)
            return FERRY_ERR_FORMAT;
        store[n] = '\0';
        v->path = store;
        v->path_len = n;
        *seen |= K_PATH;
    } else if (klen == 4 && memcmp(k, "type", 4) == 0) {
        /* Each "type" names one (a second one too, not only the first). */
        for (i = VMAN_HEAD; i <= VMAN_END; i++)
            if (strlen(vman_types[i]) == n &&
                memcmp(vman_types[i], small, n) == 0)
                break;
        if (i > VMAN_END)
            return FERRY_ERR_FORMAT;
        v->type = (enum vman_type)i;
        *seen |= K_TYPE;
    } else if (klen == 4 && memcmp(k, "xxh3", 4) == 0) {
        if (n != 2 * HASH_LEN || !vman_unhex(small, n, v->hash.b))
            return FERRY_ERR_FORMAT;
        *seen |= K_XXH3;
    } else if (klen == 6 && memcmp(k, "format", 6) == 0) {
        if (n != sizeof(VMAN_FORMAT) - 1 || memcmp(small, VMAN_FORMAT, n))
            return FERRY_ERR_FORMAT;
        *seen |= K_FORMAT;
    }
    return 0;
}

int
vman_decode(const char *line, size_t n, struct vman_rec *v, char *store)
{
    char key[32];
    struct rd r;
    unsigned seen = 0;
    size_t klen;
    int e;

    memset(v, 0, sizeof(*v));
    if (n > VMAN_MAX_LINE) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    rd_init(&r, line, n);
    if ((e = vman_char(&r, '{')) != 0)
        goto fail;
    for (;;) {
        /* Keys are short words; a longer one is not ours to read. */
        if (vman_str(&r, key, sizeof(key), &klen) != 0) {
            e = FERRY_ERR_FORMAT;
            goto fail;
        }
        if ((e = vman_char(&r, ':')) != 0)
            goto fail;
        vman_ws(&r);
        if ((e = vman_field(&r, key, klen, v, store, &seen)) != 0)
            goto fail;
        vman_ws(&r);
        if (r.len > 0 && r.p[0] == ',' && rd_u8(&r, NULL) == 0)
            continue;
        if ((e = vman_char(&r, '}')) != 0)
            goto fail;
        break;
    }
    vman_ws(&r);
    if (r.len != 0 || !(seen & K_TYPE)) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    /* Each type has the keys it needs and sane values. */
    if ((seen & vman_needs[v->type].need) != vman_needs[v->type].need ||
        (v->type == VMAN_FILE && !(seen & K_PIECES) && (!(seen & K_VOLUME)
        || !(seen & K_OFFSET))) ||
        (v->type == VMAN_FILE && (seen & K_PIECES) && v->pieces == 0) ||
        (v->type == VMAN_PIECE && (v->index == 0 ||
        v->file_offset > UINT64_MAX - v->size)) ||
        (v->type != VMAN_HEAD && v->type != VMAN_END && v->type !=
        VMAN_FILE && v->volume == 0) ||
        (v->type == VMAN_FILE && v->pieces == 0 && v->volume == 0) ||
        (v->type == VMAN_HEAD && (v->block_size < PROTO_MIN_BLOCK ||
        v->block_size > PROTO_MAX_BLOCK ||
        (v->block_size & (v->block_size - 1)) != 0))) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(v, 0, sizeof(*v));
    return e;
}
