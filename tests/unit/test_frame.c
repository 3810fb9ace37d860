/* Tests for proto/frame.c: finding frames in a byte stream and writing
 * them into a buf. */
#include <stdlib.h>
#include <string.h>

#include "../../proto/frame.h"
#include "../../proto/limits.h"
#include "check.h"

/* Checks a frame_parse failure: the result and the zeroed outputs. */
static void
check_parse_fails(const uint8_t *p, size_t len, int want)
{
    struct frame f = { 7, p, 7 };
    size_t used = 7;

    CHECK_EQ_ERR(frame_parse(p, len, &f, &used), want);
    CHECK_EQ_INT(f.type, 0);
    CHECK(f.payload == NULL);
    CHECK_EQ_U64(f.len, 0);
    CHECK_EQ_U64(used, 0);
}

/* Appends a frame of the given type carrying n bytes of payload. */
static void
put_frame(struct buf *b, uint8_t type, const void *payload, size_t n)
{
    size_t mark;

    CHECK_OK(frame_begin(b, type, &mark));
    CHECK_OK(buf_put(b, payload, n));
    CHECK_OK(frame_finish(b, mark));
}

TEST(frame_parse_prefix)
{
    struct frame f;
    struct buf b;
    uint8_t *p;
    size_t n, used, len;

    buf_init(&b, 1 << 20);
    put_frame(&b, 9, "payload", 7);
    put_frame(&b, 13, NULL, 0);
    n = buf_used(&b);
    CHECK_EQ_U64(n, 2 * PROTO_FRAME_HEADER + 7);
    CHECK_EQ_MEM(buf_ptr(&b), "\0\0\0\x07\x09payload\0\0\0\0\x0d", n);
    /* Every proper prefix of the first frame is SHORT, in an exact-size
     * copy so that ASan sees a read past the prefix. */
    for (len = 0; len < PROTO_FRAME_HEADER + 7; len++) {
        check_note("prefix of %zu bytes", len);
        p = check_dup(buf_ptr(&b), len);
        check_parse_fails(p, len, FERRY_ERR_SHORT);
        free(p);
    }
    check_note_clear();
    p = check_dup(buf_ptr(&b), n);
    for (len = PROTO_FRAME_HEADER + 7; len <= n; len++) {
        CHECK_OK(frame_parse(p, len, &f, &used));
        CHECK_EQ_INT(f.type, 9);
        CHECK(f.payload == p + PROTO_FRAME_HEADER);
        CHECK_EQ_U64(f.len, 7);
        CHECK_EQ_U64(used, PROTO_FRAME_HEADER + 7);
    }
    /* The empty frame behind it. */
    CHECK_OK(frame_parse(p + 12, n - 12, &f, &used));
    CHECK_EQ_INT(f.type, 13);
    CHECK_EQ_U64(f.len, 0);
    CHECK_EQ_U64(used, PROTO_FRAME_HEADER);
    free(p);
    buf_cleanup(&b);
}

TEST(frame_parse_limits)
{
    uint8_t h[PROTO_FRAME_HEADER] = { 0, 0, 0, 0, 1 };

    /* Over the limit is TOO_LARGE as soon as the header is there, even
     * with none of the payload: waiting for it would never end well. */
    buf_set_u32(h, PROTO_MAX_FRAME + 1);
    check_parse_fails(h, sizeof(h), FERRY_ERR_TOO_LARGE);
    buf_set_u32(h, 0x80000000u);
    check_parse_fails(h, sizeof(h), FERRY_ERR_TOO_LARGE);
    buf_set_u32(h, 0xffffffffu);
    check_parse_fails(h, sizeof(h), FERRY_ERR_TOO_LARGE);
    check_parse_fails(h, 4, FERRY_ERR_SHORT);
    buf_set_u32(h, PROTO_MAX_FRAME);
    check_parse_fails(h, sizeof(h), FERRY_ERR_SHORT);
}

TEST(frame_finish_limit)
{
    struct frame f;
    struct buf b;
    uint8_t *p;
    size_t mark, used;

    buf_init(&b, 2 * PROTO_MAX_FRAME);
    CHECK_OK(buf_put(&b, "keep", 4));
    CHECK_OK(frame_begin(&b, 9, &mark));
    CHECK_OK(buf_reserve(&b, PROTO_MAX_FRAME + 1, &p));
    memset(p, 'x', PROTO_MAX_FRAME + 1);
    CHECK_EQ_ERR(frame_finish(&b, mark), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_U64(buf_used(&b), 4);
    CHECK_EQ_MEM(buf_ptr(&b), "keep", 4);
    /* Exactly the limit is fine. */
    CHECK_OK(frame_begin(&b, 9, &mark));
    CHECK_OK(buf_reserve(&b, PROTO_MAX_FRAME, &p));
    memset(p, 'y', PROTO_MAX_FRAME);
    CHECK_OK(frame_finish(&b, mark));
    CHECK_OK(frame_parse(buf_ptr(&b) + 4, buf_used(&b) - 4, &f, &used));
    CHECK_EQ_U64(f.len, PROTO_MAX_FRAME);
    buf_cleanup(&b);
}

TEST(frame_after_consume)
{
    struct frame f;
    struct buf b;
    size_t used, mark;
    uint8_t *p;

    /* Marks count from the unconsumed start, which buf_reserve may move
     * when it compacts: the header must still land on the frame. */
    buf_init(&b, 300);
    CHECK_OK(buf_reserve(&b, 250, &p));
    memset(p, 0, 250);
    buf_consume(&b, 240);
    CHECK_OK(frame_begin(&b, 4, &mark));
    CHECK_EQ_U64(mark, 10);
    CHECK_OK(buf_put(&b, "0123456789", 10));
    CHECK_OK(frame_finish(&b, mark));
    CHECK_OK(frame_parse(buf_ptr(&b) + 10, buf_used(&b) - 10, &f, &used));
    CHECK_EQ_INT(f.type, 4);
    CHECK_EQ_U64(f.len, 10);
    CHECK_EQ_MEM(f.payload, "0123456789", 10);
    buf_cleanup(&b);
}
