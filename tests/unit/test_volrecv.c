/*
 * The receiver's volumes (engine/volume/volrecv.c, and the hooks in receiver.c
 * and incoming.c) fed frame by frame by a scripted sender: a good volume
 * commits its files and answers them, and every hostile or broken one is
 * refused with nothing committed outside the destination (rt_finish
 * checks outside/) and nothing the receiver did not ask for.
 *
 * Each case wants the files of its entries (PLAN, ENTRY, REPLY WANT),
 * then sends one volume built from its members (tar headers made with
 * tar_header_put, so that names and sizes may lie) and its records
 * (VOL_FILE), with what the case breaks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/zst.h"
#include "../../proto/msg_vol.h"
#include "../../proto/tar.h"
#include "../../engine/volume/volrecv.h"
#include "roles.h"

#define VR_MAX 6

struct vr_member {
    enum tar_type type;       /* 0: no more */
    const char *path;
    const char *link;
    uint64_t size;            /* in the header */
    uint64_t data;            /* bytes that follow (size unless set) */
};

struct vr_record {
    uint32_t id;
    const char *hash_of;      /* content pattern of this path; NULL: end */
    uint64_t size;
    int bad_hash;
};

/* What a case breaks. */
enum {
    VB_NO_BEGIN = 1 << 0,     /* data without VOL_BEGIN */
    VB_TWO_BEGINS = 1 << 1,   /* VOL_BEGIN twice */
    VB_OTHER_VOL = 1 << 2,    /* VOL_DATA for another volume number */
    VB_END_BYTES = 1 << 3,    /* VOL_END says a byte more */
    VB_END_FILES = 1 << 4,    /* VOL_END says a file more */
    VB_NO_PLAN = 1 << 5,      /* no PLAN, no entries */
    VB_EOF_1 = 1 << 6,        /* stream 1 is lost before VOL_END */
    VB_END_OTHER = 1 << 7,    /* VOL_END for another volume number */
    VB_FILE_OTHER = 1 << 8,   /* VOL_FILE for another volume number */
    VB_NO_END = 1 << 9,       /* the volume stops after its data */
    VB_CUT = 1 << 10          /* ... and the connection is cut there */
};

struct vr_case {
    const char *name;
    /* Entries: F_PLAN and ENTRY frames (ids from 0). */
    struct rt_frame entries[8];
    struct vr_member m[VR_MAX];
    struct vr_record rec[VR_MAX];
    unsigned stream;
    unsigned breaks;
    uint64_t caps_off;
    int err;                  /* of the last step */
    uint64_t sent_at_cut;     /* files counted as sent after VB_CUT */
    const char *out;
    const char *tree;
};

static void
vr_hash_of(const char *path, uint64_t size, struct hash128 *out)
{
    struct hash_file *hf = hash_file_new(size, RT_BS);
    uint8_t *blk = check_alloc(RT_BS);
    struct hash128 bh;
    uint64_t off;
    size_t n;

    CHECK(hf != NULL);
    for (off = 0; off < size; off += n) {
        n = size - off < RT_BS ? (size_t)(size - off) : RT_BS;
        rt_content(path, off, blk, n);
        hash_block(blk, n, &bh);
        hash_file_add(hf, &bh);
    }
    hash_file_final(hf, out);
    hash_file_free(hf);
    free(blk);
}

/* The members as one zstd-compressed tar archive. */
static void
vr_volume(const struct vr_member *m, struct buf *vol)
{
    struct zst_enc *z = zst_enc_new();
    struct tar_entry e;
    struct buf raw;
    uint64_t n;
    uint8_t *p;
    size_t i;

    CHECK(z != NULL);
    buf_init(&raw, 1u << 24);
    for (i = 0; i < VR_MAX && m[i].type != 0; i++) {
        memset(&e, 0, sizeof(e));
        e.type = m[i].type;
        e.path = m[i].path;
        e.path_len = strlen(m[i].path);
        e.link = m[i].link != NULL ? m[i].link : "";
        e.link_len = strlen(e.link);
        e.size = m[i].type == TAR_FILE ? m[i].size : 0;
        e.mode = 0644;
        e.mtime_sec = RT_MTIME;
        CHECK_OK(tar_header_put(&raw, &e));
        n = m[i].data != 0 ? m[i].data : e.size;
        if (n > 0) {
            CHECK_OK(buf_reserve(&raw, n + tar_pad(n), &p));
            rt_content(m[i].path, 0, p, n);
            memset(p + n, 0, tar_pad(n));
        }
    }
    CHECK_OK(tar_end_put(&raw));
    CHECK_OK(zst_enc_put(z, buf_ptr(&raw), buf_used(&raw), vol));
    CHECK_OK(zst_enc_end(z, vol));
    zst_enc_free(z);
    buf_cleanup(&raw);
}

static int
vr_send(struct rt *rt, unsigned k, struct buf *b)
{
    int r = rt_feed_bytes(rt, k, buf_ptr(b), buf_used(b));

    buf_reset(b);
    return r;
}

static void
vr_run(const struct vr_case *c)
{
    struct rt_case rc = { .name = c->name, .caps_off = c->caps_off };
    struct rt *rt = check_alloc(sizeof(*rt));
    struct msg_vol_begin vb = { 7 };
    struct msg_vol_file vf;
    struct msg_vol_data vd;
    struct msg_vol_end ve;
    struct buf vol, b;
    char tree[RT_TEXT_MAX];
    size_t i, nrec = 0;
    unsigned k = c->stream;
    int r = 0;

    check_note("%s", c->name);
    rt_init(rt, &rc);
    rt_open_receiver(rt, k + 1);
    for (i = 0; !(c->breaks & VB_NO_PLAN) && i < 8 &&
        c->entries[i].type != 0; i++)
        CHECK_OK(rt_feed(rt, &c->entries[i]));
    buf_init(&vol, 1u << 26);
    buf_init(&b, 1u << 26);
    vr_volume(c->m, &vol);
    if (!(c->breaks & VB_NO_BEGIN))
        CHECK_OK(msg_vol_begin_encode(&b, &vb));
    if (c->breaks & VB_TWO_BEGINS)
        CHECK_OK(msg_vol_begin_encode(&b, &vb));
    for (i = 0; i < VR_MAX && c->rec[i].hash_of != NULL; i++, nrec++) {
        vf.volume = vb.volume + ((c->breaks & VB_FILE_OTHER) != 0);
        vf.id = c->rec[i].id;
        vr_hash_of(c->rec[i].hash_of, c->rec[i].size, &vf.hash);
        vf.hash.b[0] ^= (uint8_t)c->rec[i].bad_hash;
        CHECK_OK(msg_vol_file_encode(&b, &vf));
    }
    vd.volume = vb.volume + ((c->breaks & VB_OTHER_VOL) != 0);
    vd.data = buf_ptr(&vol);
    vd.len = buf_used(&vol);
    CHECK_OK(msg_vol_data_encode(&b, &vd));
    ve.volume = vb.volume + ((c->breaks & VB_END_OTHER) != 0);
    ve.bytes = buf_used(&vol) + ((c->breaks & VB_END_BYTES) != 0);
    ve.files = (uint32_t)nrec + ((c->breaks & VB_END_FILES) != 0);
    if (c->breaks & VB_EOF_1) {
        CHECK_OK(vr_send(rt, k, &b));
        CHECK_OK(rt_feed_eof(rt, k));
    } else if (c->breaks & (VB_NO_END | VB_CUT)) {
        r = vr_send(rt, k, &b);
    } else {
        CHECK_OK(msg_vol_end_encode(&b, &ve));
        r = vr_send(rt, k, &b);
    }
    CHECK_EQ_ERR(r, c->err);
    CHECK_EQ_STR(rt->out, c->out);
    if (c->breaks & VB_CUT) {
        incoming_restart(rt->in);
        CHECK_EQ_U64(xfer_get(&rt->x.st.files_sent), c->sent_at_cut);
    }
    rt_close(rt);
    rt_tree(rt, "dest", tree, sizeof(tree));
    CHECK_EQ_STR(tree, c->tree);
    buf_cleanup(&vol);
    buf_cleanup(&b);
    check_note_clear();
    rt_finish(rt);
    free(rt);
}

#define WANT_A_B { F_PLAN(3) }, { F_FILE(0, "a", 100) }, { F_DIR(1, "d") }, \
    { F_FILE(2, "d/b", 5000) }
#define M_A { TAR_FILE, "a", NULL, 100, 0 }
#define M_B { TAR_FILE, "d/b", NULL, 5000, 0 }
#define R_A { 0, "a", 100, 0 }
#define R_B { 2, "d/b", 5000, 0 }

static const struct vr_case volrecv_cases[] = {
    { "good", .entries = { WANT_A_B }, .m = { M_A, M_B },
      .rec = { R_A, R_B },
      .out = "READY WANT:0 SKIP:1 WANT:2 DONE:0 DONE:2",
      .tree = "a=100 d/ d/b=5000" },
    { "good_on_stream_1", .entries = { WANT_A_B }, .m = { M_A, M_B },
      .rec = { R_A, R_B }, .stream = 1,
      .out = "READY WANT:0 SKIP:1 WANT:2 DONE:0 DONE:2",
      .tree = "a=100 d/ d/b=5000" },
    /* Names that leave the destination. */
    { "dotdot", .entries = { WANT_A_B },
      .m = { { TAR_FILE, "../a", NULL, 100, 0 } }, .rec = { R_A },
      .err = FERRY_ERR_BAD_PATH, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "absolute", .entries = { WANT_A_B },
      .m = { { TAR_FILE, "/a", NULL, 100, 0 } }, .rec = { R_A },
      .err = FERRY_ERR_BAD_PATH, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    /* A symlink, then a file through it: the link is not a file the
     * receiver wanted, so it never reaches the disk. */
    { "symlink_then_through", .entries = { WANT_A_B },
      .m = { { TAR_SYMLINK, "d", "../outside", 0, 0 }, M_B },
      .rec = { R_B },
      .err = FERRY_ERR_FORMAT, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    /* A link the destination had: the entry through it fails, so its
     * file cannot be claimed by a volume. */
    { "through_existing_link",
      .entries = { { F_PLAN(2) }, { F_LINK(0, "l", "../outside") },
                   { F_FILE(1, "l/x", 100) } },
      .m = { { TAR_FILE, "l/x", NULL, 100, 0 } },
      .rec = { { 1, "l/x", 100, 0 } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY SKIP:0 FAIL:1:ENOTDIR",
      .tree = "l->../outside" },
    /* The header says more than the data holds. */
    { "size_over_data", .entries = { WANT_A_B },
      .m = { { TAR_FILE, "d/b", NULL, 5000, 40 } }, .rec = { R_B },
      .err = FERRY_ERR_SHORT, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    /* Members must be the records', which must be wanted files. */
    { "member_not_its_record", .entries = { WANT_A_B },
      .m = { { TAR_FILE, "d/b", NULL, 100, 0 } }, .rec = { R_A },
      .err = FERRY_ERR_FORMAT, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "member_size_not_entry", .entries = { WANT_A_B },
      .m = { { TAR_FILE, "a", NULL, 99, 0 } }, .rec = { { 0, "a", 99, 0 } },
      .err = FERRY_ERR_FORMAT, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "member_without_record", .entries = { WANT_A_B },
      .m = { M_A, M_B }, .rec = { R_A },
      .err = FERRY_ERR_SHORT, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "record_without_member", .entries = { WANT_A_B },
      .m = { M_A }, .rec = { R_A, R_B },
      .err = FERRY_ERR_FORMAT, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "a=100 d/" },
    { "hash_differs", .entries = { WANT_A_B },
      .m = { M_A }, .rec = { { 0, "a", 100, 1 } },
      .err = FERRY_ERR_HASH_MISMATCH, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "record_not_wanted", .entries = { WANT_A_B },
      .m = { M_A }, .rec = { { 1, "a", 100, 0 } },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "record_twice", .entries = { WANT_A_B },
      .m = { M_A, M_A }, .rec = { R_A, R_A },
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    /* The frames around the volume. */
    { "data_without_begin", .entries = { WANT_A_B }, .m = { M_A },
      .breaks = VB_NO_BEGIN,
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "begin_twice", .entries = { WANT_A_B }, .m = { M_A },
      .rec = { R_A }, .breaks = VB_TWO_BEGINS,
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    /* Each refused at its own frame, not by a later check: the volume
     * stops there. */
    { "file_of_another_volume", .entries = { WANT_A_B }, .m = { M_A },
      .rec = { R_A }, .breaks = VB_FILE_OTHER | VB_NO_END,
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "data_of_another_volume", .entries = { WANT_A_B }, .m = { M_A },
      .rec = { R_A }, .breaks = VB_OTHER_VOL | VB_NO_END,
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "end_of_another_volume", .entries = { WANT_A_B }, .m = { M_A },
      .rec = { R_A }, .breaks = VB_END_OTHER,
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "end_bytes_differ", .entries = { WANT_A_B }, .m = { M_A },
      .rec = { R_A }, .breaks = VB_END_BYTES,
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "end_files_differ", .entries = { WANT_A_B }, .m = { M_A },
      .rec = { R_A }, .breaks = VB_END_FILES,
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "without_capability", .entries = { WANT_A_B }, .m = { M_A },
      .rec = { R_A }, .caps_off = PROTO_CAP_VOLUMES,
      .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:0 SKIP:1 WANT:2",
      .tree = "d/" },
    { "before_plan", .m = { M_A }, .rec = { R_A }, .breaks = VB_NO_PLAN,
      .err = FERRY_ERR_PROTOCOL, .out = "", .tree = "-" },
    { "before_plan_stream_1", .m = { M_A }, .rec = { R_A },
      .breaks = VB_NO_PLAN, .stream = 1,
      .err = FERRY_ERR_PROTOCOL, .out = "", .tree = "-" },
    /* A cut connection keeps the files read whole, and counts them as
     * sent: a retry finds them in place. */
    { "cut_after_data", .entries = { WANT_A_B }, .m = { M_A, M_B },
      .rec = { R_A, R_B }, .breaks = VB_CUT, .sent_at_cut = 2,
      .out = "READY WANT:0 SKIP:1 WANT:2", .tree = "a=100 d/ d/b=5000" },
    { "cut_mid_file", .entries = { WANT_A_B },
      .m = { M_A, { TAR_FILE, "d/b", NULL, 5000, 3000 } },
      .rec = { R_A, R_B }, .breaks = VB_CUT, .sent_at_cut = 1,
      .out = "READY WANT:0 SKIP:1 WANT:2", .tree = "a=100 d/" },
    /* A lost stream leaves nothing staged and its files unclaimed. */
    { "stream_1_lost", .entries = { WANT_A_B }, .m = { M_A },
      .rec = { R_A }, .stream = 1, .breaks = VB_EOF_1,
      .out = "READY WANT:0 SKIP:1 WANT:2", .tree = "d/" },
};

TEST(volrecv_rules)
{
    size_t i;

    for (i = 0; i < sizeof(volrecv_cases) / sizeof(volrecv_cases[0]); i++)
        vr_run(&volrecv_cases[i]);
}

/* A receiver of two streams that wants a and d/b (ids 0 and 2). */
static struct rt *
vr_open(const struct rt_case *rc)
{
    static const struct rt_frame want[] = { WANT_A_B };
    struct rt *rt = check_alloc(sizeof(*rt));
    size_t i;

    rt_init(rt, rc);
    rt_open_receiver(rt, 2);
    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        CHECK_OK(rt_feed(rt, &want[i]));
    return rt;
}

/* Appends volume vol of the one member m, as file id: VOL_BEGIN,
 * VOL_FILE, with data its VOL_DATA, with end its VOL_END. */
static void
vr_frames(struct buf *b, uint32_t vol, uint32_t id,
    const struct vr_member *m, int data, int end)
{
    const struct vr_member ms[] = { *m, { 0 } };
    struct msg_vol_begin vb = { vol };
    struct msg_vol_file vf = { vol, id, { { 0 } } };
    struct msg_vol_data vd = { vol, NULL, 0 };
    struct msg_vol_end ve = { vol, 0, 1 };
    struct buf v;

    buf_init(&v, 1u << 20);
    vr_volume(ms, &v);
    vr_hash_of(m->path, m->size, &vf.hash);
    vd.data = buf_ptr(&v);
    vd.len = ve.bytes = buf_used(&v);
    CHECK_OK(msg_vol_begin_encode(b, &vb));
    CHECK_OK(msg_vol_file_encode(b, &vf));
    if (data)
        CHECK_OK(msg_vol_data_encode(b, &vd));
    if (end)
        CHECK_OK(msg_vol_end_encode(b, &ve));
    buf_cleanup(&v);
}

static void
vr_done(struct rt *rt)
{
    rt_close(rt);
    rt_finish(rt);
    free(rt);
}

/* After a lost stream, the files its volume claimed may come again, in
 * blocks on another stream (the sender's way of sending them again);
 * while the stream holds them, another volume may not claim them. */
TEST(volrecv_lost_then_blocks)
{
    static const struct vr_member ma = M_A;
    static const struct rt_frame fr[] = { { F_BLOCK(0, 0) }, { F_FEND(0) } };
    struct rt_case rc = { .name = "lost_then_blocks" };
    struct rt *rt = vr_open(&rc);
    struct buf b;

    buf_init(&b, 1u << 20);
    vr_frames(&b, 3, 0, &ma, 0, 0);
    CHECK_OK(vr_send(rt, 1, &b));
    vr_frames(&b, 4, 0, &ma, 0, 0);
    CHECK_EQ_ERR(vr_send(rt, 0, &b), FERRY_ERR_PROTOCOL);
    vr_done(rt);

    rt = vr_open(&rc);
    vr_frames(&b, 3, 0, &ma, 0, 0);
    CHECK_OK(vr_send(rt, 1, &b));
    CHECK_OK(rt_feed_eof(rt, 1));
    CHECK_OK(rt_feed(rt, &fr[0]));
    CHECK_OK(rt_feed(rt, &fr[1]));
    CHECK_OK(rt_feed_bytes(rt, 0, NULL, 0));
    CHECK_EQ_STR(rt->out, "READY WANT:0 SKIP:1 WANT:2 DONE:0");
    buf_cleanup(&b);
    vr_done(rt);
}

/* A stream past the last volrecv has room for is refused before it is
 * looked up; the same frame on a stream it has is taken. */
TEST(volrecv_stream_bound)
{
    struct rt_case rc = { .name = "stream_bound" };
    struct rt *rt = vr_open(&rc);
    struct msg_vol_begin vb = { 3 };
    struct buf b, out;
    struct frame f;
    size_t used;

    buf_init(&b, 1u << 16);
    buf_init(&out, 1u << 16);
    CHECK_OK(msg_vol_begin_encode(&b, &vb));
    CHECK_OK(frame_parse(buf_ptr(&b), buf_used(&b), &f, &used));
    CHECK_EQ_ERR(volrecv_frame(incoming_volrecv(rt->in), PROTO_MAX_STREAMS,
        &f, &out), FERRY_ERR_PROTOCOL);
    CHECK_OK(volrecv_frame(incoming_volrecv(rt->in), 1, &f, &out));
    CHECK_EQ_U64(buf_used(&out), 0);
    buf_cleanup(&out);
    buf_cleanup(&b);
    vr_done(rt);
}

/* Two volumes on one stream: the second one's files are answered only
 * once they are committed, not by what the first one committed (the
 * reader counts over both). */
TEST(volrecv_second_volume)
{
    static const struct vr_member ma = M_A, mb = M_B;
    struct rt_case rc = { .name = "second_volume" };
    struct rt *rt = vr_open(&rc);
    struct buf b;

    buf_init(&b, 1u << 20);
    vr_frames(&b, 1, 0, &ma, 1, 1);
    CHECK_OK(vr_send(rt, 1, &b));
    /* All of d/b's data but not its volume's end: staged, not committed,
     * not answered. */
    vr_frames(&b, 2, 2, &mb, 1, 0);
    CHECK_OK(vr_send(rt, 1, &b));
    CHECK_OK(rt_feed_bytes(rt, 0, NULL, 0));
    CHECK_EQ_STR(rt->out, "READY WANT:0 SKIP:1 WANT:2 DONE:0");
    buf_cleanup(&b);
    vr_done(rt);
}

/*
 * A file comes one way: in blocks, or in one volume. What a case sends,
 * step by step, of file a (id 0, one block) or d/b (id 2): a part of a
 * volume (VS_BEGIN: VOL_BEGIN and VOL_FILE; VS_DATA: its VOL_DATA,
 * VS_END: its VOL_END), its BLOCK, its FILE_END, or the end of the
 * stream. The last step returns err; then the frames sent are out (after
 * an idle step of stream 0 when err is 0) and the destination tree.
 */
enum { VS_BEGIN = 1, VS_DATA = 2, VS_END = 4, VS_ALL = 7 };

struct vr_step {
    char what;                /* 'V' volume, 'B' BLOCK, 'E' FILE_END,
                                 'X' end of the stream; 0: no more */
    unsigned k;               /* the stream */
    uint32_t id;
    uint32_t vol;             /* 'V': its number */
    unsigned parts;           /* 'V': VS_* */
};

struct vr_once {
    const char *name;
    unsigned nstreams;
    struct vr_step s[6];
    int err;
    const char *out;
    const char *tree;
};

static int
vr_once_step(struct rt *rt, const struct vr_step *s)
{
    static const struct vr_member ma = M_A, mb = M_B;
    const struct vr_member *m = s->id == 0 ? &ma : &mb;
    const struct vr_member ms[] = { *m, { 0 } };
    struct rt_frame fr;
    struct buf v, b;
    int r;

    memset(&fr, 0, sizeof(fr));
    fr.stream = (uint8_t)s->k;
    fr.id = s->id;
    switch (s->what) {
    case 'B':
        fr.type = MSG_BLOCK;
        return rt_feed(rt, &fr);
    case 'E':
        fr.type = MSG_FILE_END;
        return rt_feed(rt, &fr);
    case 'X':
        return rt_feed_eof(rt, s->k);
    default:
        break;
    }
    buf_init(&v, 1u << 20);
    buf_init(&b, 1u << 20);
    vr_volume(ms, &v);
    if (s->parts & VS_BEGIN) {
        struct msg_vol_begin vb = { s->vol };
        struct msg_vol_file vf = { s->vol, s->id, { { 0 } } };

        vr_hash_of(m->path, m->size, &vf.hash);
        CHECK_OK(msg_vol_begin_encode(&b, &vb));
        CHECK_OK(msg_vol_file_encode(&b, &vf));
    }
    if (s->parts & VS_DATA) {
        struct msg_vol_data vd = { s->vol, buf_ptr(&v), buf_used(&v) };

        CHECK_OK(msg_vol_data_encode(&b, &vd));
    }
    if (s->parts & VS_END) {
        struct msg_vol_end ve = { s->vol, buf_used(&v), 1 };

        CHECK_OK(msg_vol_end_encode(&b, &ve));
    }
    r = vr_send(rt, s->k, &b);
    buf_cleanup(&v);
    buf_cleanup(&b);
    return r;
}

static void
vr_once_run(const struct vr_once *c)
{
    static const struct rt_frame want[] = { WANT_A_B };
    struct rt_case rc = { .name = c->name };
    struct rt *rt = check_alloc(sizeof(*rt));
    char tree[RT_TEXT_MAX];
    size_t i;
    int r = 0;

    check_note("%s", c->name);
    rt_init(rt, &rc);
    rt_open_receiver(rt, c->nstreams);
    for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        CHECK_OK(rt_feed(rt, &want[i]));
    for (i = 0; i < 6 && c->s[i].what != 0; i++) {
        if (r != 0)
            CHECK_OK(r);  /* only the last step may fail */
        r = vr_once_step(rt, &c->s[i]);
    }
    CHECK_EQ_ERR(r, c->err);
    if (r == 0)
        CHECK_OK(rt_feed_bytes(rt, 0, NULL, 0));
    CHECK_EQ_STR(rt->out, c->out);
    rt_close(rt);
    rt_tree(rt, "dest", tree, sizeof(tree));
    CHECK_EQ_STR(tree, c->tree);
    check_note_clear();
    rt_finish(rt);
    free(rt);
}

#define WANTED "READY WANT:0 SKIP:1 WANT:2"
#define S_VOL(k, id, vol, parts) { 'V', (k), (id), (vol), (parts) }
#define S_BLOCK(k, id) { 'B', (k), (id), 0, 0 }
#define S_FEND(k, id) { 'E', (k), (id), 0, 0 }
#define S_EOF(k) { 'X', (k), 0, 0, 0 }

static const struct vr_once vr_once_cases[] = {
    /* Volume, then blocks: stream 0's volumes are never given back, and
     * a stream does not send again what it lost itself. */
    { "volume_then_block", 2,
      { S_VOL(0, 0, 1, VS_BEGIN | VS_DATA), S_BLOCK(0, 0) },
      FERRY_ERR_PROTOCOL, WANTED, "d/" },
    { "volume_then_file_end", 2,
      { S_VOL(0, 0, 1, VS_BEGIN | VS_DATA), S_FEND(0, 0) },
      FERRY_ERR_PROTOCOL, WANTED, "d/" },
    { "volume_0_then_block_on_1", 2,
      { S_VOL(0, 0, 1, VS_BEGIN), S_BLOCK(1, 0) },
      FERRY_ERR_PROTOCOL, WANTED, "d/" },
    { "volume_then_block_same_stream", 2,
      { S_VOL(1, 0, 1, VS_BEGIN | VS_DATA), S_BLOCK(1, 0) },
      FERRY_ERR_PROTOCOL, WANTED, "d/" },
    /* ... also once the volume's file is done (answered). */
    { "volume_done_then_block", 2,
      { S_VOL(0, 0, 1, VS_ALL), S_BLOCK(0, 0) },
      FERRY_ERR_PROTOCOL, WANTED " DONE:0", "a=100 d/" },
    { "volume_done_then_file_end_on_1", 2,
      { S_VOL(0, 0, 1, VS_ALL), S_FEND(1, 0) },
      FERRY_ERR_PROTOCOL, WANTED " DONE:0", "a=100 d/" },
    /* Blocks, then a volume: a file is packed or not when it is wanted,
     * and one given back is sent in blocks, never in a volume again. */
    { "block_then_volume", 2,
      { S_BLOCK(0, 0), S_VOL(1, 0, 1, VS_BEGIN) },
      FERRY_ERR_PROTOCOL, WANTED, "d/" },
    { "file_end_then_volume", 2,
      { S_FEND(0, 0), S_VOL(0, 0, 1, VS_BEGIN) },
      FERRY_ERR_PROTOCOL, WANTED, "d/" },
    { "second_volume_after_lost", 3,
      { S_VOL(1, 0, 1, VS_BEGIN), S_EOF(1), S_VOL(2, 0, 2, VS_BEGIN) },
      FERRY_ERR_PROTOCOL, WANTED, "d/" },
    /* Refused before: a volume naming a file done, or one another volume
     * holds. */
    { "volume_after_blocks_done", 2,
      { S_BLOCK(0, 0), S_FEND(0, 0), S_VOL(1, 0, 1, VS_BEGIN) },
      FERRY_ERR_PROTOCOL, WANTED, "a=100 d/" },
    { "volume_after_volume_done", 2,
      { S_VOL(0, 0, 1, VS_ALL), S_VOL(0, 0, 2, VS_BEGIN) },
      FERRY_ERR_PROTOCOL, WANTED " DONE:0", "a=100 d/" },
    { "two_volumes_at_once", 2,
      { S_VOL(1, 0, 1, VS_BEGIN), S_VOL(0, 0, 2, VS_BEGIN) },
      FERRY_ERR_PROTOCOL, WANTED, "d/" },
    /* The sender's own resends. A volume's stream that is lost: its
     * file comes in blocks on another. */
    { "lost_then_blocks", 3,
      { S_VOL(1, 0, 1, VS_BEGIN | VS_DATA), S_EOF(1), S_BLOCK(2, 0),
        S_FEND(2, 0) },
      0, WANTED " DONE:0", "a=100 d/" },
    /* ... before the receiver saw it end: the stream is taken as lost
     * then, and the rest of its volume, still in flight, is ignored. */
    { "blocks_before_lost_seen", 3,
      { S_VOL(1, 0, 1, VS_BEGIN), S_BLOCK(2, 0), S_FEND(2, 0),
        S_VOL(1, 0, 1, VS_DATA | VS_END), S_EOF(1) },
      0, WANTED " DONE:0", "a=100 d/" },
    /* ... or after its file was answered from the volume, the answer
     * still on its way: the blocks are ignored. */
    { "blocks_after_answer", 3,
      { S_VOL(1, 0, 1, VS_ALL), S_BLOCK(2, 0), S_FEND(2, 0) },
      0, WANTED " DONE:0", "a=100 d/" },
    /* Blocks sent again after a lost stream, and a second FILE_END. */
    { "blocks_twice", 3,
      { S_BLOCK(1, 0), S_EOF(1), S_BLOCK(2, 0), S_FEND(2, 0),
        S_FEND(0, 0) },
      0, WANTED " DONE:0", "a=100 d/" },
};

TEST(volrecv_delivered_once)
{
    RT_RUN_TABLE(vr_once_cases, vr_once_run);
}
