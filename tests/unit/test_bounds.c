/*
 * Bounds a peer or a planted file pushes against that no other test
 * reaches (docs/SECURITY.md lists them all): the zstd window a volume may
 * ask for, the records read from a resume journal, the entries a sender
 * offers ahead of the answers, and the frames a connection reads ahead
 * of its role.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "../../common/fsx.h"
#include "../../common/zst.h"
#include "../../engine/conn.h"
#include "../../engine/manifest.h"
#include "../../engine/partial.h"
#include "../../engine/plan.h"
#include "../../engine/xfer.h"
#include "../../proto/frame.h"
#include "../../proto/journal.h"
#include "../../proto/limits.h"
#include "../../proto/msg.h"
#include "check.h"

/* A zstd frame holding "x" in one raw block, whose header asks for a
 * window of 2^window_log bytes (Window_Descriptor: exponent = log - 10,
 * no mantissa; no content size, so the window is what the decoder must
 * allocate). */
static size_t
zstd_frame(unsigned window_log, uint8_t out[16])
{
    static const uint8_t magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
    size_t n = 0;

    memcpy(out, magic, 4);
    n = 4;
    out[n++] = 0x00;                                /* Frame_Header_Descriptor */
    out[n++] = (uint8_t)((window_log - 10) << 3);   /* Window_Descriptor */
    out[n++] = 0x09;    /* last block, raw, 1 byte: 1 | 0 << 1 | 1 << 3 */
    out[n++] = 0x00;
    out[n++] = 0x00;
    out[n++] = 'x';
    return n;
}

static int
zstd_decode(unsigned window_log, uint8_t *dst, size_t *out)
{
    struct zst_dec *d = zst_dec_new();
    uint8_t frame[16];
    size_t n = zstd_frame(window_log, frame), used = 0, got, at = 0;
    int r = 0;

    CHECK(d != NULL);
    *out = 0;
    /* zstd may take the input before it writes anything. */
    while (r == 0 && (at < n || !zst_dec_at_end(d))) {
        r = zst_dec_put(d, frame + at, n - at, &used, dst + *out,
            64 - *out, &got);
        at += used;
        *out += got;
        if (r == 0 && used == 0 && got == 0)
            break;
    }
    zst_dec_free(d);
    return r;
}

/* A volume's zstd frame may ask for a window of ZST_DEC_WINDOW_LOG at
 * most: one more is refused before anything that size is allocated. */
TEST(bounds_zstd_window)
{
    uint8_t dst[64];
    size_t n;

    CHECK_OK(zstd_decode(ZST_DEC_WINDOW_LOG, dst, &n));
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_INT(dst[0], 'x');
    CHECK_EQ_ERR(zstd_decode(ZST_DEC_WINDOW_LOG + 1, dst, &n),
        FERRY_ERR_FORMAT);
    CHECK_EQ_U64(n, 0);
}

/* A journal of a kept partial, however long, is read for at most
 * PARTIAL_MAX_RECORDS_PER_BLOCK records per block of the file: the rest
 * is treated as torn, and appends go after the last record read. */
TEST(bounds_journal_records)
{
    static const uint8_t salt[16] = "0123456789abcde";
    const uint64_t nblocks = PARTIAL_JOURNAL_MIN / PROTO_MIN_BLOCK;
    const uint64_t max = nblocks * PARTIAL_MAX_RECORDS_PER_BLOCK;
    char dir[CHECK_PATH_MAX], key[PARTIAL_KEY_LEN + 1], jnl[64];
    struct journal_record rec;
    struct partial_claim c;
    struct partial_id id;
    struct partial *p;
    struct stat st;
    struct buf b;
    uint64_t i, header;
    int dfd, fd;

    check_tmpdir(dir);
    CHECK((dfd = open(dir, O_RDONLY | O_DIRECTORY)) >= 0);
    memset(&id, 0, sizeof(id));
    id.path = "f";
    id.size = PARTIAL_JOURNAL_MIN;
    id.mtime_sec = 1700000000;
    id.mode = 0644;
    id.block_size = PROTO_MIN_BLOCK;
    partial_key(salt, id.path, key);
    snprintf(jnl, sizeof(jnl), "%s.jnl", key);
    CHECK_OK(partial_open(dfd, key, &id, NULL, &p));
    partial_close(p, dfd, PARTIAL_KEEP);
    CHECK(fstatat(dfd, jnl, &st, 0) == 0);
    header = (uint64_t)st.st_size;
    /* Twice the records the file could need, each of a real block. */
    buf_init(&b, (size_t)(2 * max + 8) * JOURNAL_RECORD_LEN);
    memset(&rec, 0, sizeof(rec));
    for (i = 0; i < 2 * max + 8; i++) {
        rec.index = i % nblocks;
        rec.hash.b[0] = (uint8_t)i;
        CHECK_OK(journal_record_encode(&b, &rec));
    }
    CHECK((fd = openat(dfd, jnl, O_WRONLY | O_APPEND)) >= 0);
    CHECK_OK(fsx_write_all(fd, buf_ptr(&b), buf_used(&b)));
    close(fd);
    buf_cleanup(&b);
    CHECK_OK(partial_probe(dfd, key, &id, &c));
    CHECK_EQ_U64(c.journal_len, header + max * JOURNAL_RECORD_LEN);
    CHECK(c.n <= nblocks);
    partial_claim_free(&c);
    close(dfd);
    check_rmtree(dir);
}

/* A sender offers at most PLAN_WINDOW entries that have no answer yet:
 * a receiver that never answers cannot make it walk and hold the whole
 * tree; each answer lets one more go. */
TEST(bounds_plan_window)
{
    char dir[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 16];
    struct manifest mf;
    struct msg_reply rep;
    struct plan *p;
    struct xfer x;
    uint32_t id, offered = 0, i;

    check_tmpdir(dir);
    for (i = 0; i < PLAN_WINDOW + 8; i++) {
        snprintf(path, sizeof(path), "%s/f%05u", dir, i);
        check_write_file(path, NULL, 0, 0);
    }
    manifest_init(&mf);
    CHECK_OK(manifest_scan(&mf, dir));
    memset(&x, 0, sizeof(x));
    CHECK((p = plan_new(&mf, PROTO_MIN_BLOCK, 0, &x)) != NULL);
    CHECK_EQ_U64(plan_entries_to_offer(p), PLAN_WINDOW + 9);
    while (plan_next_offer(p, &id)) {
        CHECK_EQ_U64(id, offered);
        plan_offered(p, id);
        offered++;
    }
    CHECK_EQ_U64(offered, PLAN_WINDOW);
    memset(&rep, 0, sizeof(rep));
    rep.id = 1;
    rep.action = REPLY_SKIP;
    CHECK_OK(plan_on_reply(p, &rep));
    CHECK(plan_next_offer(p, &id));
    CHECK_EQ_U64(id, PLAN_WINDOW);
    plan_offered(p, id);
    CHECK(!plan_next_offer(p, &id));
    /* An answer for an entry not offered yet is refused. */
    rep.id = PLAN_WINDOW + 1;
    CHECK_EQ_ERR(plan_on_reply(p, &rep), FERRY_ERR_PROTOCOL);
    plan_free(p);
    manifest_cleanup(&mf);
    check_rmtree(dir);
}

/* The conn test's role: its first step with frames waits at the gate
 * until the test opens it; every later step takes what it is given.
 * The loop thread is not woken when that step reaches the gate, so the
 * tests wait on what the conn itself does (it stops reading), never on
 * the step's progress. */
struct gate {
    sem_t open;
    atomic_int waited;      /* set by the role's step, on a pool thread */
    uint64_t frames_in;
    int closed, close_err;
};

static int
gate_step(void *role, struct conn_step *st)
{
    struct gate *g = role;

    if (st->in_len > 0 && !atomic_load(&g->waited)) {
        atomic_store(&g->waited, 1);
        while (sem_wait(&g->open) != 0)
            ;
    }
    g->frames_in += st->in_len;
    if (st->eof)
        st->done = 1;
    return 0;
}

static void
gate_closed(struct conn *c, int err)
{
    struct gate *g = c->data;

    g->closed = 1;
    g->close_err = err;
}

#define FLOOD_FRAME (1u << 20)
#define FLOOD_TOTAL (48u << 20)

struct flood_job {
    int fd;
    size_t frame;   /* bytes a frame, header included */
    size_t frames;
};

/* Writes the job's frames into the peer's end, then closes it. Blocks
 * while the conn reads nothing: that is the bound. */
static void *
flood_frames(void *arg)
{
    const struct flood_job *j = arg;
    uint8_t *frame = check_alloc(j->frame);
    size_t k;

    memset(frame, 0, j->frame);
    buf_set_u32(frame, (uint32_t)(j->frame - PROTO_FRAME_HEADER));
    frame[4] = MSG_NOTICE;
    for (k = 0; k < j->frames; k++)
        if (fsx_write_all(j->fd, frame, j->frame) != 0)
            break;
    close(j->fd);
    free(frame);
    return NULL;
}

/* FLOOD_TOTAL bytes of 1 MiB frames. */
static void *
flood(void *arg)
{
    struct flood_job j = { *(int *)arg, FLOOD_FRAME,
        FLOOD_TOTAL / FLOOD_FRAME };

    return flood_frames(&j);
}

/* A peer that sends faster than the role takes frames: the conn stops
 * reading once CONN_INBOX_HIGH bytes wait (the socket then pushes back on
 * the peer), so what it holds stays within its two buffers' caps, and it
 * reads on once the role has taken them. */
TEST(bounds_conn_inbox)
{
    const uint64_t cap = 2 * ((uint64_t)CONN_INBOX_HIGH + PROTO_MAX_FRAME +
        2 * (256u << 10));
    struct gate g;
    struct conn c;
    uv_loop_t loop;
    pthread_t thr;
    int sv[2];

    /* A conn that gave up would close its end: the writer is to see
     * EPIPE, and the checks below say why. */
    signal(SIGPIPE, SIG_IGN);
    memset(&g, 0, sizeof(g));
    CHECK(sem_init(&g.open, 0, 0) == 0);
    CHECK_OK(uv_loop_init(&loop));
    CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    memset(&c, 0, sizeof(c));
    c.data = &g;
    CHECK_OK(conn_start_fds(&c, &loop, sv[0], sv[0], gate_step, &g,
        gate_closed));
    /* The first step (no input) is over before any frame comes, so the
     * step that takes the first frame starts as it arrives and is held
     * while the rest piles up behind it. */
    while (c.job_running && !g.closed)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK(pthread_create(&thr, NULL, flood, &sv[1]) == 0);
    /* Until the conn has stopped reading with the role held at the gate.
     * Were there no bound, it would read all FLOOD_TOTAL bytes and then
     * wait here for ever (the case's timeout fails it). */
    while (!(c.reading == 0 && c.job_running) && !g.closed)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK(!g.closed);
    CHECK(c.bytes_in <= cap);
    CHECK(c.bytes_in < FLOOD_TOTAL);
    CHECK(buf_used(&c.inbox) > CONN_INBOX_HIGH);
    /* Open the gate: everything arrives, in whole frames, and the peer's
     * close ends the conn cleanly. */
    CHECK(sem_post(&g.open) == 0);
    while (!g.closed)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK(pthread_join(thr, NULL) == 0);
    CHECK_OK(g.close_err);
    CHECK_EQ_U64(c.bytes_in, FLOOD_TOTAL);
    CHECK_EQ_U64(g.frames_in, FLOOD_TOTAL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_OK(uv_loop_close(&loop));
    sem_destroy(&g.open);
}

/* The streams of a group share CONN_INBOX_HIGH (their steps run one at a
 * time): with three, one that a held role does not drain stops reading at
 * its share, not at the whole; and as frames of the most a frame may be
 * fill it, it still holds a whole one to step on (a share below a frame
 * would wait for ever), so all of them arrive once the role goes on. */
TEST(bounds_conn_inbox_shared)
{
    enum { NCONN = 3 };
    const size_t share = CONN_INBOX_HIGH / NCONN < CONN_INBOX_MIN ?
        CONN_INBOX_MIN : CONN_INBOX_HIGH / NCONN;
    const uint64_t cap = 2 * ((uint64_t)share + PROTO_MAX_FRAME +
        2 * (256u << 10));
    struct flood_job job = { -1, PROTO_MAX_FRAME, 12 };
    struct gate g[NCONN];
    struct conn c[NCONN];
    struct conn_group grp;
    uv_loop_t loop;
    pthread_t thr;
    int sv[NCONN][2], k, open_conns;

    signal(SIGPIPE, SIG_IGN);
    memset(&grp, 0, sizeof(grp));
    memset(g, 0, sizeof(g));
    memset(c, 0, sizeof(c));
    CHECK_OK(uv_loop_init(&loop));
    for (k = 0; k < NCONN; k++) {
        CHECK(sem_init(&g[k].open, 0, 0) == 0);
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
            sv[k]), 0);
        c[k].data = &g[k];
        c[k].group = &grp;
        CHECK_OK(conn_start_fds(&c[k], &loop, sv[k][0], sv[k][0], gate_step,
            &g[k], gate_closed));
    }
    CHECK_EQ_INT(grp.n, NCONN);
    /* The first steps of all three (one at a time) are over before any
     * frame comes: a frame that came while the group was busy would
     * wait, with the ones behind it, until the inbox is past the share,
     * and the step that then took them all would leave it empty. */
    while (grp.busy)
        uv_run(&loop, UV_RUN_ONCE);
    job.fd = sv[0][1];
    CHECK(pthread_create(&thr, NULL, flood_frames, &job) == 0);
    while (!(c[0].reading == 0 && c[0].job_running) && !g[0].closed)
        uv_run(&loop, UV_RUN_ONCE);
    CHECK(!g[0].closed);
    CHECK(buf_used(&c[0].inbox) > share);
    CHECK(c[0].bytes_in <= cap);
    CHECK(c[0].bytes_in < (uint64_t)CONN_INBOX_HIGH);
    CHECK(sem_post(&g[0].open) == 0);
    for (k = 1; k < NCONN; k++)
        close(sv[k][1]);
    do {
        uv_run(&loop, UV_RUN_ONCE);
        for (k = 0, open_conns = 0; k < NCONN; k++)
            open_conns += !g[k].closed;
    } while (open_conns > 0);
    CHECK(pthread_join(thr, NULL) == 0);
    CHECK_OK(g[0].close_err);
    CHECK_EQ_U64(c[0].bytes_in, (uint64_t)job.frame * job.frames);
    CHECK_EQ_U64(g[0].frames_in, (uint64_t)job.frame * job.frames);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_OK(uv_loop_close(&loop));
    for (k = 0; k < NCONN; k++)
        sem_destroy(&g[k].open);
}
