#include "frame.h"

#include "../common/rd.h"
#include "limits.h"

int
frame_parse(const uint8_t *p, size_t len, struct frame *f, size_t *used)
{
    uint32_t n;

    f->type = 0;
    f->payload = NULL;
    f->len = 0;
    *used = 0;
    if (len < PROTO_FRAME_HEADER)
        return FERRY_ERR_SHORT;
    n = rd_peek_u32(p);
    if (n > PROTO_MAX_FRAME)
        return FERRY_ERR_TOO_LARGE;
    if (len - PROTO_FRAME_HEADER < n)
        return FERRY_ERR_SHORT;
    f->type = p[4];
    f->payload = p + PROTO_FRAME_HEADER;
    f->len = n;
    *used = PROTO_FRAME_HEADER + (size_t)n;
    return 0;
}

int
frame_begin(struct buf *b, uint8_t type, size_t *mark)
{
    uint8_t *p;
    int r;

    /* Relative to the unconsumed start: buf_reserve may compact. */
    *mark = buf_used(b);
    if ((r = buf_reserve(b, PROTO_FRAME_HEADER, &p)) != 0)
        return r;
    p[4] = type;
    return 0;
}

int
frame_finish(struct buf *b, size_t mark)
{
    size_t n = buf_used(b) - mark - PROTO_FRAME_HEADER;

    if (n > PROTO_MAX_FRAME) {
        buf_unreserve(b, buf_used(b) - mark);
        return FERRY_ERR_TOO_LARGE;
    }
    buf_set_u32(b->data + b->off + mark, (uint32_t)n);
    return 0;
}
