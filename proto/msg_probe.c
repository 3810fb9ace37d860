/* PROBE: u32 ask, str32 data. */
#include <string.h>

#include "../common/rd.h"
#include "frame.h"
#include "limits.h"
#include "msg.h"
#include "msg_int.h"

int
msg_probe_encode(struct buf *b, const struct msg_probe *m)
{
    size_t mark;
    int r;

    if (m->ask > PROTO_MAX_PROBE_ASK || m->len > PROTO_MAX_PROBE_DATA)
        return FERRY_ERR_USAGE;
    if ((r = frame_begin(b, MSG_PROBE, &mark)) != 0)
        return r;
    r = buf_put_u32(b, m->ask);
    if (r == 0)
        r = buf_put_str32(b, m->data, m->len);
    return msg_finish(b, mark, r);
}

int
msg_probe_decode(const uint8_t *p, size_t n, struct msg_probe *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u32(&r, &m->ask)) != 0 ||
        (e = rd_str32(&r, PROTO_MAX_PROBE_DATA, &m->data, &m->len)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (m->ask > PROTO_MAX_PROBE_ASK) {
        e = FERRY_ERR_TOO_LARGE;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}
