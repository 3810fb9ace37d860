/*
 * A push from end to end in this process: the client's sessions and
 * senders against the agent's sessions and receivers, pumped by the
 * harness (roles.h) over one or several streams, with a resume from what
 * an interrupted run left and a stream lost halfway. The destination
 * must be the source, bytes, modes and mtimes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "roles.h"

/* Larger than a run (PLAN_RUN_BYTES) so that streams share it, with a
 * short last block. */
#define BIG_SIZE (PLAN_RUN_BYTES + 4 * RT_BS + 12345)
#define BIG_BLOCKS (BIG_SIZE / RT_BS + 1)
#define NSMALL 40

struct fixture {
    struct rt rt;
    struct rt_pump p;
};

/* A scratch root with rt_make_source's tree, a big file and many small
 * ones; a pump of nstreams streams. */
static struct fixture *
fixture_new(const struct rt_case *c, unsigned nstreams)
{
    struct fixture *fx = check_alloc(sizeof(*fx));
    char rel[64];
    int i;

    rt_init(&fx->rt, c);
    rt_make_source(&fx->rt);
    rt_write(&fx->rt, "src/big", BIG_SIZE);
    rt_mkdir(&fx->rt, "src/many", 0700);
    for (i = 0; i < NSMALL; i++) {
        snprintf(rel, sizeof(rel), "src/many/f%02d", i);
        rt_write(&fx->rt, rel, (uint64_t)i * 997);
    }
    memset(&fx->p, 0, sizeof(fx->p));
    fx->p.nstreams = nstreams;
    return fx;
}

static void
fixture_free(struct fixture *fx)
{
    rt_finish(&fx->rt);
    free(fx);
}

/* dest/src is src, and nothing else is in dest. */
static void
check_same(struct rt *rt)
{
    char *a = check_alloc(RT_TEXT_MAX * 4), *b = check_alloc(RT_TEXT_MAX * 4);

    rt_tree_exact(rt, "src", a, RT_TEXT_MAX * 4);
    rt_tree_exact(rt, "dest/src", b, RT_TEXT_MAX * 4);
    CHECK_EQ_STR(b, a);
    rt_tree(rt, "dest", a, RT_TEXT_MAX * 4);
    CHECK(strncmp(a, "src/ ", 5) == 0);
    free(a);
    free(b);
}

static void
push(unsigned nstreams, uint32_t flags)
{
    static const struct rt_case c = { .name = "push" };
    struct fixture *fx = fixture_new(&c, nstreams);
    struct rt *rt = &fx->rt;
    struct rt_pump *p = &fx->p;
    unsigned k, used = 0;

    p->flags = flags;
    CHECK_OK(rt_push(rt, p));
    check_same(rt);
    CHECK_EQ_U64(p->sent[1][MSG_SUMMARY], 1);
    CHECK_EQ_U64(p->sent[1][MSG_FILE_DONE], NSMALL + 4);
    CHECK_EQ_U64(xfer_get(&p->xa.st.files_sent), NSMALL + 4);
    CHECK_EQ_U64(xfer_get(&p->xc.st.files_sent), NSMALL + 4);
    /* Both sides know every file was wanted whole: all of it crosses. */
    CHECK_EQ_U64(xfer_get(&p->xc.st.bytes_whole),
        xfer_get(&p->xc.st.bytes_total));
    CHECK_EQ_U64(xfer_get(&p->xa.st.bytes_whole),
        xfer_get(&p->xc.st.bytes_total));
    CHECK_EQ_U64(xfer_get(&p->xc.st.bytes_reusable), 0);
    CHECK_EQ_U64(xfer_get(&p->xa.st.bytes_reusable), 0);
    for (k = 0; k < nstreams; k++)
        used += p->blocks[k] > 0;
    if (flags & OPEN_F_COMPRESS)
        CHECK(xfer_get(&p->xa.st.bytes_compressed) > 0);
    /* The streams took a share each (the big file is two runs; a step
     * ends after as many bytes of files read as it may send). */
    CHECK(used >= (nstreams < 2 ? nstreams : 2));
    fixture_free(fx);
}

TEST(push_one_stream)
{
    push(1, 0);
}

TEST(push_three_streams)
{
    push(3, 0);
}

TEST(push_compressed)
{
    push(2, OPEN_F_COMPRESS);
}

/* An interrupted push leaves a partial; the next run resumes it: held
 * blocks are matched (SIGS HAVE, MATCH), not sent. */
static void
push_resume(unsigned nstreams)
{
    static const struct rt_case c = { .name = "push_resume" };
    struct fixture *fx = fixture_new(&c, nstreams);
    struct rt *rt = &fx->rt;
    struct rt_pump *p = &fx->p;

    p->cut_blocks = BIG_BLOCKS / 2;
    CHECK_OK(rt_push(rt, p));
    p->cut_blocks = 0;
    CHECK_OK(rt_push(rt, p));
    check_same(rt);
    CHECK(p->sent[1][MSG_SIGS] > 0);
    CHECK(p->sent[0][MSG_MATCH] > 0);
    /* A step reads at most CONN_STEP_BUDGET to check held blocks, so
     * one MATCH covers no more (a whole run in one would keep the
     * receiver waiting while the sender reads it all). */
    CHECK(p->sent[0][MSG_MATCH] * (CONN_STEP_BUDGET / RT_BS) >=
        xfer_get(&p->xc.st.resumed_bytes) / RT_BS);
    CHECK(p->sent[0][MSG_BLOCK] < BIG_BLOCKS);
    CHECK(xfer_get(&p->xa.st.resumed_bytes) > 0);
    CHECK_EQ_U64(xfer_get(&p->xa.st.resumed_bytes),
        xfer_get(&p->xc.st.resumed_bytes));
    /* What was kept was spared the wire, live, on both sides. */
    CHECK_EQ_U64(xfer_get(&p->xc.st.bytes_spared),
        xfer_get(&p->xc.st.resumed_bytes));
    CHECK_EQ_U64(xfer_get(&p->xa.st.bytes_spared),
        xfer_get(&p->xa.st.resumed_bytes));
    CHECK_EQ_U64(xfer_get(&p->xc.st.bytes_reusable), BIG_SIZE);
    CHECK_EQ_U64(xfer_get(&p->xa.st.bytes_reusable), BIG_SIZE);
    fixture_free(fx);
}

TEST(push_resume)
{
    push_resume(1);
}

TEST(push_resume_streams)
{
    push_resume(2);
}

/* The big file again with a new mtime, over the old one: every block
 * comes as DELTA, a few bytes for a block read. A step stops after
 * CONN_STEP_BUDGET bytes of the file as it would after that much output,
 * so the receiver builds while the sender reads on (a step that filled
 * its output first would read a whole run before sending a frame). */
TEST(push_delta_steps)
{
    static const struct rt_case c = { .name = "push_delta_steps" };
    struct fixture *fx = fixture_new(&c, 1);
    struct rt *rt = &fx->rt;
    struct rt_pump *p = &fx->p;
    char path[CHECK_PATH_MAX];
    struct timespec ts[2] = { { RT_MTIME + 60, 0 }, { RT_MTIME + 60, 0 } };

    CHECK_OK(rt_push(rt, p));
    rt_path(rt, "src/big", path);
    CHECK_OK(utimensat(AT_FDCWD, path, ts, 0));
    p->flags = OPEN_F_DELTA_ALWAYS;
    CHECK_OK(rt_push(rt, p));
    check_same(rt);
    CHECK_EQ_U64(p->sent[0][MSG_BLOCK], 0);
    CHECK_EQ_U64(p->sent[0][MSG_DELTA], BIG_BLOCKS);
    CHECK(p->most[0][MSG_DELTA] >= 1);
    CHECK(p->most[0][MSG_DELTA] <= CONN_STEP_BUDGET / RT_BS);
    /* All of it copied: spared, live, on both sides; none moved. */
    CHECK_EQ_U64(xfer_get(&p->xc.st.bytes_reusable), BIG_SIZE);
    CHECK_EQ_U64(xfer_get(&p->xa.st.bytes_reusable), BIG_SIZE);
    CHECK_EQ_U64(xfer_get(&p->xc.st.bytes_whole), 0);
    CHECK_EQ_U64(xfer_get(&p->xc.st.bytes_spared), BIG_SIZE);
    CHECK_EQ_U64(xfer_get(&p->xa.st.bytes_spared), BIG_SIZE);
    CHECK_EQ_U64(xfer_get(&p->xc.st.bytes_moved), 0);
    fixture_free(fx);
}

/* A further stream is lost halfway: what it carried is sent again over
 * the others, and the receiver takes no block twice. Stream 1 carries
 * blocks of the big file when it goes; stream 2 carries none, but its
 * steps commit files, whose FILE_DONE must not go with it. */
static void
push_lost(unsigned k)
{
    static const struct rt_case c = { .name = "push_stream_lost" };
    struct fixture *fx = fixture_new(&c, 3);
    struct rt *rt = &fx->rt;
    struct rt_pump *p = &fx->p;

    p->lose_stream = k;
    p->lose_after = BIG_BLOCKS / 3;
    CHECK_OK(rt_push(rt, p));
    check_same(rt);
    CHECK(k != 1 || p->blocks[1] > 0);
    CHECK_EQ_U64(p->sent[1][MSG_SUMMARY], 1);
    CHECK_EQ_U64(p->sent[1][MSG_FILE_DONE], NSMALL + 4);
    fixture_free(fx);
}

TEST(push_stream_lost)
{
    push_lost(1);
}

TEST(push_stream_lost_answers)
{
    push_lost(2);
}

/* Small files in volumes (a threshold of 16K with 256K volumes: a, e and
 * many/f00..f16), the rest in blocks, over one or three streams; the
 * destination is the source all the same, and every file is answered
 * once. */
static void
push_volumes(unsigned nstreams)
{
    static const struct rt_case c = { .name = "push_volumes" };
    struct fixture *fx = fixture_new(&c, nstreams);
    struct rt *rt = &fx->rt;
    struct rt_pump *p = &fx->p;

    p->pack = 64u << 10;
    p->volume_size = 256u << 10;
    CHECK_OK(rt_push(rt, p));
    check_same(rt);
    CHECK_EQ_U64(p->sent[0][MSG_VOL_FILE], 2 + 17);
    CHECK(p->sent[0][MSG_VOL_END] >= 1);
    CHECK_EQ_U64(p->sent[0][MSG_VOL_BEGIN], p->sent[0][MSG_VOL_END]);
    CHECK_EQ_U64(p->sent[1][MSG_FILE_DONE], NSMALL + 4);
    CHECK_EQ_U64(xfer_get(&p->xa.st.files_sent), NSMALL + 4);
    CHECK_EQ_U64(xfer_get(&p->xc.st.files_sent), NSMALL + 4);
    fixture_free(fx);
}

TEST(push_volumes)
{
    push_volumes(1);
}

TEST(push_volumes_streams)
{
    push_volumes(3);
}

/* With further streams up, stream 0 packs no volumes even when it is as
 * fast as they are: its frames are the conversation (the offers and their
 * answers), which would wait behind megabytes of volume data. Blocks of
 * big files still go on every stream. */
TEST(push_volumes_off_stream0)
{
    static const struct rt_case c = { .name = "push_volumes_off_stream0" };
    struct fixture *fx = fixture_new(&c, 3);
    struct rt_pump *p = &fx->p;

    p->pack = 64u << 10;
    p->volume_size = 256u << 10;
    CHECK_OK(rt_push(&fx->rt, p));
    check_same(&fx->rt);
    CHECK_EQ_U64(p->sent[0][MSG_VOL_FILE], 2 + 17);
    CHECK_EQ_U64(p->vol_files[0], 0);
    CHECK(p->blocks[0] > 0);
    fixture_free(fx);
}

/* A push cut while volumes are on the wire, then run again: what was
 * committed is not sent again, the rest arrives. */
TEST(push_volumes_resume)
{
    static const struct rt_case c = { .name = "push_volumes_resume" };
    struct fixture *fx = fixture_new(&c, 1);
    struct rt *rt = &fx->rt;
    struct rt_pump *p = &fx->p;
    uint64_t first;

    p->pack = 64u << 10;
    p->volume_size = 256u << 10;
    p->cut_blocks = 3;
    CHECK_OK(rt_push(rt, p));
    first = p->sent[0][MSG_VOL_FILE];
    CHECK(first > 0);
    p->cut_blocks = 0;
    CHECK_OK(rt_push(rt, p));
    check_same(rt);
    CHECK(p->sent[0][MSG_VOL_FILE] < 2 + 17);
    fixture_free(fx);
}

/* Stream 0 slower than the others (OPEN_F_SPARE_STREAM0): once one of
 * them is up, they carry every run and pack every volume; when the last
 * of them is lost, stream 0 takes the work back. */
TEST(push_spare_stream0)
{
    static const struct rt_case c = { .name = "push_spare_stream0" };
    struct fixture *fx = fixture_new(&c, 3);
    struct rt_pump *p = &fx->p;

    p->flags = OPEN_F_SPARE_STREAM0;
    CHECK_OK(rt_push(&fx->rt, p));
    check_same(&fx->rt);
    CHECK_EQ_U64(p->blocks[0], 0);
    CHECK(p->blocks[1] > 0 && p->blocks[2] > 0);
    fixture_free(fx);

    /* Nor does it pack volumes (blocks counts their data too). */
    fx = fixture_new(&c, 3);
    p = &fx->p;
    p->flags = OPEN_F_SPARE_STREAM0;
    p->pack = 64u << 10;
    p->volume_size = 256u << 10;
    CHECK_OK(rt_push(&fx->rt, p));
    check_same(&fx->rt);
    CHECK_EQ_U64(p->blocks[0], 0);
    CHECK(p->sent[0][MSG_VOL_DATA] > 0);
    fixture_free(fx);

    fx = fixture_new(&c, 2);
    p = &fx->p;
    p->flags = OPEN_F_SPARE_STREAM0;
    p->lose_stream = 1;
    p->lose_after = BIG_BLOCKS / 3;
    CHECK_OK(rt_push(&fx->rt, p));
    check_same(&fx->rt);
    CHECK(p->blocks[0] > 0);
    fixture_free(fx);
}
