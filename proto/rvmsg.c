#include "rvmsg.h"

#include <string.h>

#include "../common/rd.h"

static int
rvmsg_valid(const struct rvmsg *m)
{
    if (m->kind != RVMSG_JOIN && m->kind != RVMSG_STOP)
        return 0;
    if (m->scope_len == 0 || memchr(m->scope, '\0', m->scope_len) != NULL)
        return 0;
    return m->kind == RVMSG_JOIN ? m->nbytes > 0 : m->nbytes == 0;
}

int
rvmsg_encode(struct buf *b, const struct rvmsg *m)
{
    int r;

    if (m->scope_len > RVMSG_MAX_SCOPE || m->nbytes > RVMSG_MAX_BYTES ||
        !rvmsg_valid(m))
        return FERRY_ERR_USAGE;
    if ((r = buf_put_u8(b, m->kind)) != 0 ||
        (r = buf_put(b, m->transfer_id, PROTO_TRANSFER_ID_LEN)) != 0 ||
        (r = buf_put(b, m->transfer_key, PROTO_TRANSFER_KEY_LEN)) != 0 ||
        (r = buf_put_str16(b, m->scope, m->scope_len)) != 0 ||
        (r = buf_put_str16(b, m->bytes, m->nbytes)) != 0)
        return r;
    return 0;
}

int
rvmsg_decode(const uint8_t *p, size_t n, struct rvmsg *m)
{
    const uint8_t *scope;
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u8(&r, &m->kind)) != 0 ||
        (e = rd_copy(&r, m->transfer_id, PROTO_TRANSFER_ID_LEN)) != 0 ||
        (e = rd_copy(&r, m->transfer_key, PROTO_TRANSFER_KEY_LEN)) != 0 ||
        (e = rd_str16(&r, RVMSG_MAX_SCOPE, &scope, &m->scope_len)) != 0 ||
        (e = rd_str16(&r, RVMSG_MAX_BYTES, &m->bytes, &m->nbytes)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    m->scope = (const char *)scope;
    if (!rvmsg_valid(m)) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}
