#include "msg_space.h"

#include <string.h>

#include "../common/rd.h"
#include "frame.h"
#include "msg_int.h"

int
msg_space_encode(struct buf *b, const struct msg_space *m)
{
    size_t mark;
    int r;

    if ((r = frame_begin(b, MSG_SPACE, &mark)) != 0)
        return r;
    r = buf_put_u64(b, m->avail);
    if (r == 0)
        r = buf_put_u64(b, m->size);
    if (r == 0)
        r = buf_put_u64(b, m->offered);
    return msg_finish(b, mark, r);
}

int
msg_space_decode(const uint8_t *p, size_t n, struct msg_space *m)
{
    struct rd r;
    int e;

    memset(m, 0, sizeof(*m));
    rd_init(&r, p, n);
    if ((e = rd_u64(&r, &m->avail)) != 0 ||
        (e = rd_u64(&r, &m->size)) != 0 ||
        (e = rd_u64(&r, &m->offered)) != 0 ||
        (e = rd_end(&r)) != 0)
        goto fail;
    if (m->avail > m->size) {
        e = FERRY_ERR_FORMAT;
        goto fail;
    }
    return 0;
fail:
    memset(m, 0, sizeof(*m));
    return e;
}
