/*
 * The sender's volumes (engine/volume/volsend.c, the hooks in sender.c and
 * plan.c) against a scripted receiver (roles.h explains the rows). The
 * source is rt_make_source's:
 *
 *     id 0 src/, 1 src/a (100 bytes), 2 src/d/, 3 src/d/b (150000
 *     bytes), 4 src/e (empty), 5 src/ln -> a
 *
 * With a threshold of 1000 bytes, a and e travel packed, d/b in blocks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../common/clock.h"
#include "../../common/zst.h"
#include "../../engine/volume/volsend.h"
#include "roles.h"

#define OFFERS "PLAN:6 ENTRY:0:src ENTRY:1:src/a ENTRY:2:src/d " \
    "ENTRY:3:src/d/b ENTRY:4:src/e ENTRY:5:src/ln"
#define READY_ { F_READY("") }
#define VOL1 "VOL_BEGIN VOL_FILE VOL_DATA VOL_END"

static const struct rt_case volsend_rules[] = {
    { "packed_and_blocks", .pack = 1000,
      .script = { READY_, { F_SKIP(0) }, { F_WANT(1) }, { F_SKIP(2) },
                  { F_WANT(3) }, { F_WANT(4) }, { F_SKIP(5) }, { F_DONE(1) },
                  { F_DONE(3) }, { F_DONE(4) }, { F_SUMMARY } },
      .out = OFFERS " " VOL1 " BLOCK:3:0-2 FEND:3 " VOL1 " END" },
    /* Files wanted together share a volume, up to the most a volume
     * holds (PROTO_MAX_VOLUME_FILES; here lowered to one). */
    { "two_in_one_volume", .pack = 1000,
      .script = { READY_, { F_SKIP(0) }, { F_WANT(1), BATCH }, { F_WANT(4) } },
      .out = OFFERS " VOL_BEGIN VOL_FILE VOL_FILE VOL_DATA VOL_END" },
    { "volume_files_cap", .pack = 1000, .volume_files = 1,
      .script = { READY_, { F_SKIP(0) }, { F_WANT(1), BATCH }, { F_WANT(4) } },
      .out = OFFERS " " VOL1 " " VOL1 },
    /* Without the capability, or below no threshold: blocks. */
    { "without_capability", .pack = 1000, .caps_off = PROTO_CAP_VOLUMES,
      .script = { READY_, { F_WANT(1) } },
      .out = OFFERS " BLOCK:1:0 FEND:1" },
    /* A packed file's FILE_DONE is awaited like any other's: one that
     * comes twice is refused. */
    { "packed_done_twice", .pack = 1000,
      .script = { READY_, { F_WANT(1) }, { F_DONE(1) }, { F_DONE(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " " VOL1 },
    /* The client's settings (a pull): once, before any file is taken. */
    { "opts_enable", .packer_off = 1,
      .script = { READY_, { F_VOL_OPTS(1000, 1u << 20) }, { F_WANT(1) },
                  { F_WANT(3) } },
      .out = OFFERS " " VOL1 " BLOCK:3:0-2 FEND:3" },
    { "opts_zero", .packer_off = 1,
      .script = { READY_, { F_VOL_OPTS(0, 1u << 20) }, { F_WANT(1) } },
      .out = OFFERS " BLOCK:1:0 FEND:1" },
    { "opts_twice", .packer_off = 1,
      .script = { READY_, { F_VOL_OPTS(1000, 1u << 20) },
                  { F_VOL_OPTS(1000, 1u << 20) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "opts_after_packing", .pack = 1000,
      .script = { READY_, { F_WANT(1) }, { F_VOL_OPTS(0, 1u << 20) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS " " VOL1 },
    /* After END (every entry answered, here by SKIP: no file taken),
     * settings come too late. */
    { "opts_after_end", .packer_off = 1, .src = "src/e",
      .script = { READY_, { F_SKIP(0) }, { F_VOL_OPTS(1000, 1u << 20) } },
      .err = FERRY_ERR_PROTOCOL, .out = "PLAN:1 ENTRY:0:e END" },
    { "opts_without_capability", .packer_off = 1,
      .caps_off = PROTO_CAP_VOLUMES,
      .script = { READY_, { F_VOL_OPTS(1000, 1u << 20) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "opts_without_packer",
      .script = { READY_, { F_VOL_OPTS(1000, 1u << 20) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "opts_before_ready", .packer_off = 1,
      .script = { { F_VOL_OPTS(1000, 1u << 20) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
    { "opts_on_stream_1", .packer_off = 1,
      .script = { READY_, { F_VOL_OPTS(1000, 1u << 20), ON(1) } },
      .err = FERRY_ERR_PROTOCOL, .out = OFFERS },
};

TEST(volsend_rules)
{
    RT_RUN_TABLE(volsend_rules, rt_sender_case);
}

/* A file that changed since the scan is not packed: it fails alone with
 * FILE_END and its code, as a file sent in blocks would. */
static const struct rt_case volsend_changed[] = {
    { "changed_before_packing", .pack = 1000,
      .script = { READY_, { F_TOUCH("src/a") }, { F_WANT(1) },
                  { .type = MSG_FILE_DONE, .id = 1, .code = FERRY_ERR_CHANGED },
                  { F_WANT(4) } },
      .out = OFFERS " FEND:1:CHANGED " VOL1 },
};

TEST(volsend_changed)
{
    RT_RUN_TABLE(volsend_changed, rt_sender_case);
}

/* Blocks (OPEN_F_COMPRESS) follow the volumes' level, never below 1. */
TEST(volsend_block_level)
{
    struct volsend_opts o;
    struct volsend *vs;
    struct xfer x;

    memset(&x, 0, sizeof(x));
    memset(&o, 0, sizeof(o));
    CHECK_EQ_INT(volsend_block_level(NULL), ZST_LEVEL);
    o.compress = VOL_COMPRESS_LEVEL;
    o.level = 7;
    CHECK((vs = volsend_new(NULL, &o, &x)) != NULL);
    CHECK_EQ_INT(volsend_block_level(vs), 7);
    volsend_free(vs);
    /* auto on a short link keeps the volumes at zstd's fastest mode;
     * blocks, when asked for (-z), at level 1. */
    o.compress = VOL_COMPRESS_AUTO;
    o.level = 0;
    o.short_link = 1;
    CHECK((vs = volsend_new(NULL, &o, &x)) != NULL);
    CHECK(volsend_level(vs) < 1);
    CHECK_EQ_INT(volsend_block_level(vs), 1);
    volsend_free(vs);
    o.short_link = 0;
    CHECK((vs = volsend_new(NULL, &o, &x)) != NULL);
    CHECK_EQ_INT(volsend_block_level(vs), VOLSEND_START_LEVEL);
    volsend_free(vs);
}

/* Blocks judge the level as volumes' frames do (volsend_blocks_done):
 * every VOLSEND_FRAME_BYTES, over at least VOLSEND_ADAPT_WINDOW_NS, up
 * while the sender was busy under half the time (the link binds), down
 * while it was busy over 80% once 8 MiB went out; data that does not
 * shrink sends the volumes to the fastest mode, blocks stay at 1. */
static void
sleep_window(void)
{
    struct timespec ts = { 0, VOLSEND_ADAPT_WINDOW_NS + 10000000 };

    while (nanosleep(&ts, &ts) != 0)
        ;
}

TEST(volsend_blocks_adapt)
{
    const uint64_t half = VOLSEND_FRAME_BYTES / 2;
    struct volsend_opts o;
    struct volsend *vs;
    struct xfer x;
    uint64_t t;

    memset(&x, 0, sizeof(x));
    memset(&o, 0, sizeof(o));
    o.compress = VOL_COMPRESS_AUTO;
    CHECK((vs = volsend_new(NULL, &o, &x)) != NULL);
    volsend_blocks_done(vs, half, half / 2, 1000000);
    sleep_window();
    /* Half of a frame's worth: not judged yet. */
    volsend_blocks_done(vs, half - 1, half / 2, 1000000);
    CHECK_EQ_INT(volsend_level(vs), 1);
    volsend_blocks_done(vs, 1, 0, 1000);
    CHECK_EQ_INT(volsend_level(vs), 2);
    CHECK_EQ_INT(volsend_block_level(vs), 2);
    /* Busy all the time since: down again. */
    t = clock_ns();
    sleep_window();
    volsend_blocks_done(vs, VOLSEND_FRAME_BYTES, VOLSEND_FRAME_BYTES / 2,
        clock_ns() - t);
    CHECK_EQ_INT(volsend_level(vs), 1);
    /* Nothing shrank: volumes at the fastest mode, blocks at 1. */
    volsend_blocks_done(vs, VOLSEND_FRAME_BYTES, VOLSEND_FRAME_BYTES, 1000);
    CHECK(volsend_level(vs) < 1);
    CHECK_EQ_INT(volsend_block_level(vs), 1);
    volsend_free(vs);
    /* A fixed level stays. */
    o.compress = VOL_COMPRESS_LEVEL;
    o.level = 3;
    CHECK((vs = volsend_new(NULL, &o, &x)) != NULL);
    volsend_blocks_done(vs, VOLSEND_FRAME_BYTES, 1, 1000);
    sleep_window();
    volsend_blocks_done(vs, VOLSEND_FRAME_BYTES, 1, 1000);
    CHECK_EQ_INT(volsend_block_level(vs), 3);
    volsend_free(vs);
}
