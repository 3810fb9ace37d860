#include "msg_filter.h"

#include <string.h>

#include "../common/rd.h"
#include "frame.h"
#include "msg_int.h"

int
msg_filters_encode(struct buf *b, const uint8_t *actions,
    const char *const *patterns, size_t n)
{
    size_t mark, total = 0, i;
    int r;

    if (n > PROTO_MAX_FILTERS)
        return FERRY_ERR_TOO_LARGE;
    for (i = 0; i < n; i++) {
        size_t len = strlen(patterns[i]);

        if (len == 0 || (actions[i] != 1 && actions[i] != 2))
            return FERRY_ERR_USAGE;
        if (len > PROTO_MAX_FILTER_PATTERN)
            return FERRY_ERR_TOO_LARGE;
        total += 3 + len;
    }
    if (total > PROTO_MAX_FILTER_BYTES)
        return FERRY_ERR_TOO_LARGE;
    if ((r = frame_begin(b, MSG_FILTERS, &mark)) != 0)
        return r;
    r = buf_put_u16(b, (uint16_t)n);
    for (i = 0; r == 0 && i < n; i++) {
        r = buf_put_u8(b, actions[i]);
        if (r == 0)
            r = buf_put_str16(b, patterns[i], strlen(patterns[i]));
    }
    return msg_finish(b, mark, r);
}

int
msg_filters_decode(const uint8_t *p, size_t n, struct msg_filters *m)
{
    struct rd r, rules;
    size_t i;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u16(&r, &m->nrules)) != 0)
        goto fail;
    if (m->nrules > PROTO_MAX_FILTERS || r.len > PROTO_MAX_FILTER_BYTES) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    rules = r;
    for (i = 0; i < m->nrules; i++) {
        const uint8_t *s;
        uint8_t action;
        size_t len;

        if ((e = rd_u8(&r, &action)) != 0 ||
            (e = rd_str16(&r, PROTO_MAX_FILTER_PATTERN, &s, &len)) != 0)
            goto fail;
        if ((action != 1 && action != 2) || len == 0 ||
            memchr(s, '\0', len) != NULL) {
            e = FERRY_ERR_FORMAT;
            goto fail;
        }
    }
    if ((e = rd_end(&r)) != 0)
        goto fail;
    m->raw = rules.p;
    m->len = rules.len;
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}

int
msg_filters_rule(const struct msg_filters *m, size_t *pos, uint8_t *action,
    struct msg_str *pattern)
{
    struct rd r;
    const uint8_t *s;
    size_t len;
    int e;

    pattern->p = NULL;
    pattern->len = 0;
    if (*pos >= m->len)
        return FERRY_ERR_SHORT;
    rd_init(&r, m->raw + *pos, m->len - *pos);
    if ((e = rd_u8(&r, action)) != 0 ||
        (e = rd_str16(&r, PROTO_MAX_FILTER_PATTERN, &s, &len)) != 0)
        return e;
    pattern->p = (const char *)s;
    pattern->len = len;
    *pos = m->len - r.len;
    return 0;
}
