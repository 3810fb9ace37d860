/*
 * roles.h: a harness that drives the protocol roles (receiver, sender,
 * session) frame by frame, in the test's own thread, without a loop.
 *
 * A test case is a row of a table: a script of frames to feed to the
 * role under test (each element is one call of its step function, on one
 * stream), the error the last step must return (every earlier step must
 * return 0), the frames the role sent, written as text, and the
 * destination tree afterwards, also as text. So a new rule costs one row:
 *
 *     { "entry_id_equal",
 *       .script = { { F_PLAN(2) }, { F_FILE(1, "a", 100) },
 *                   { F_FILE(1, "b", 100) } },
 *       .err = FERRY_ERR_PROTOCOL, .out = "READY WANT:1", .tree = "" },
 *
 * The text of the frames sent is one token per frame, in order, a token
 * of stream k > 0 followed by "@k":
 *
 *     HELLO OPEN OPEN_OK JOIN JOIN_OK PLAN:entries READY[:rename]
 *     ENTRY:id:path SKIP:id WANT:id WANT+R:id WANT+D:id WANT+RD:id
 *     FAIL:id:CODE NEED:id:first+n DSIGS:id:first+n DELTA:id:i
 *     HAVE:id:first+n BLOCK:id:i (consecutive ones as BLOCK:id:i-j)
 *     DSTOP:id DGO:id WANT+T:id BASIS:id:path TENSOR:id:i SKIP+A:id
 *     MATCH:id:first+n FEND:id[:CODE] DONE:id[:CODE] NOTICE END
 *     SUMMARY:committed,skipped,failed[,read:blocks] PARTIAL:path
 *     ERROR:CODE PROBE:bytes (READBACK: in the SUMMARY after it)
 *     STOP:id,kept_files (STOP:-,n when it names no file)
 *
 * where CODE is ferry_errname of the code. The tree is one token per
 * entry beneath the destination, sorted by path: "dir/", "file=size"
 * ("file=size!" when its bytes are not the ones the script sent),
 * "link->target", and ".ferry/" for the state directory (not entered);
 * "-" when the destination does not exist, "!dir" when it is a file.
 *
 * Steps are taken as a conn takes them: the first step of each stream
 * has no input, a step that asks for more is repeated at once, and after
 * a step that pokes the group the other streams are stepped once each.
 * A row's script ends with the frame under test; the harness then steps
 * every stream without input until they are quiet (so that the receiver
 * commits), unless the last step failed.
 *
 * File contents are a pattern of the path (rt_content), with the blocks
 * a script sent as ZERO blocks made of zeros, so BLOCK and FILE_END frames
 * carry the right hashes unless a variant says otherwise. Every case also
 * checks that nothing outside the destination changed.
 */
#ifndef FERRY_TESTS_UNIT_ROLES_H
#define FERRY_TESTS_UNIT_ROLES_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/buf.h"
#include "../../engine/conn.h"
#include "../../engine/dest.h"
#include "../../engine/incoming.h"
#include "../../engine/delta/keptsig.h"
#include "../../engine/plan.h"
#include "../../engine/receiver.h"
#include "../../engine/sender.h"
#include "../../engine/session.h"
#include "../../engine/side.h"
#include "../../engine/xfer.h"
#include "../../proto/msg.h"
#include "../../server/policy.h"
#include "check.h"

#define RT_BS PROTO_MIN_BLOCK
#define RT_MAX_STREAMS 4
#define RT_MAX_FRAMES 24
#define RT_MAX_FILES 16
#define RT_MAX_ZEROS 8
#define RT_TEXT_MAX 4096
#define RT_MTIME 1700000000
/* A file big enough to be journaled, so that it can be resumed. */
#define RT_BIG PARTIAL_JOURNAL_MIN
#define RT_BIG_BLOCKS (RT_BIG / RT_BS)
#define RT_CAPS_ALL (PROTO_CAP_SPARSE | PROTO_CAP_RESUME | PROTO_CAP_ZSTD | \
    PROTO_CAP_STREAMS | PROTO_CAP_DELTA | PROTO_CAP_VOLUMES | \
    PROTO_CAP_READBACK | PROTO_CAP_LIVE | PROTO_CAP_DELTA_BLOCKS | \
    PROTO_CAP_DELTA_STOP | PROTO_CAP_DELTA_GO | PROTO_CAP_TENSORS | \
    PROTO_CAP_SINGLE_EARLY)

/* Script steps that are not frames: the peer closed the stream, a step
 * without input, the mtime of rt->root/s changes (no step), rt->root/s is
 * cut to a bytes (no step). */
enum { RT_EOF = 200, RT_IDLE, RT_TOUCH, RT_TRUNCATE, RT_SCAN_ADD,
    RT_SCAN_END, RT_LOST };

/* Variants of a frame: what the harness gets wrong on purpose. */
enum rt_variant {
    RV_OK,
    RV_BADHASH,   /* BLOCK, FILE_END, SIGS HAVE, a hashed ENTRY: a hash
                     that is not it */
    RV_ZERO,      /* BLOCK: a ZERO block (the model's bytes become 0) */
    RV_ZSTD,      /* BLOCK: compressed */
    RV_BADZSTD,   /* BLOCK: a zstd frame that inflates to the wrong size */
    RV_RAW,       /* BLOCK: a = offset, b = raw_len as given */
    RV_OTHER,     /* OPEN, JOIN: another transfer id */
    RV_OTHER_KEY, /* JOIN: the transfer's id with another key */
    RV_LITERAL,   /* DELTA: the block as one LITERAL op, no COPY */
    RV_MODEL,     /* DELTA_SIGS, DELTA_BLOCKS: of the model's bytes */
    RV_PAST,      /* TENSOR: a piece that reads past the basis */
    RV_JUNK,      /* TENSOR: a body that is no pieces */
    RV_CUT        /* TENSOR: its pieces without their last byte */
};

/* One step of a script. Fields by type: PLAN a = entries; ENTRY kind,
 * id, s = path, a = size, t = target, flags = mode (0: 0644, 0755);
 * BLOCK id, a = index, b = how many consecutive blocks (0: one), or with
 * RV_RAW a = offset, b = raw_len;
 * MATCH, SIGS id, a = first, b = count; FILE_END, FILE_DONE, NOTICE,
 * ERROR code; READY s = rename; REPLY id, kind = action, flags; HELLO
 * a..b = versions (0: ours); OPEN kind = op, s = path, flags; JOIN id =
 * stream. */
struct rt_frame {
    uint8_t type;     /* MSG_* or RT_*; 0 ends the script */
    uint8_t stream;
    uint8_t v;        /* enum rt_variant */
    uint8_t kind;
    uint8_t batch;    /* fed in one step with the next element */
    uint32_t id;
    uint32_t flags;
    uint64_t a, b;
    int32_t code;
    const char *s, *t;
    uint64_t shift;   /* DELTA_SIGS of the model: from this offset on */
};

/* Designators for one step, written inside braces: { F_END }. */
#define ON(k) .stream = (k)
#define BATCH .batch = 1
#define F_PLAN(n) .type = MSG_PLAN, .a = (n)
#define F_PLAN1 .type = MSG_PLAN, .a = 1, .flags = PLAN_F_SINGLE_FILE
/* PLAN of a sender whose scan goes on, and the TOTALS that follows it. */
#define F_PLAN_LIVE .type = MSG_PLAN, .flags = PLAN_F_LIVE
#define F_TOTALS(n) .type = MSG_TOTALS, .a = (n)
#define F_FILE(i, p, n) .type = MSG_ENTRY, .kind = ENTRY_FILE, .id = (i), \
    .s = (p), .a = (n)
#define F_FILE_MODE(i, p, n, m) F_FILE(i, p, n), .flags = (m)
#define F_DIR(i, p) .type = MSG_ENTRY, .kind = ENTRY_DIR, .id = (i), .s = (p)
#define F_LINK(i, p, to) .type = MSG_ENTRY, .kind = ENTRY_SYMLINK, \
    .id = (i), .s = (p), .t = (to)
#define F_BLOCK(i, k) .type = MSG_BLOCK, .id = (i), .a = (k)
#define F_BLOCKS(i, k, n) .type = MSG_BLOCK, .id = (i), .a = (k), .b = (n)
#define F_ZERO(i, k) F_BLOCK(i, k), .v = RV_ZERO
#define F_ZSTD(i, k) F_BLOCK(i, k), .v = RV_ZSTD
#define F_BADZSTD(i, k) F_BLOCK(i, k), .v = RV_BADZSTD
#define F_BADBLOCK(i, k) F_BLOCK(i, k), .v = RV_BADHASH
#define F_RAWBLOCK(i, off, len) .type = MSG_BLOCK, .id = (i), .a = (off), \
    .b = (len), .v = RV_RAW
/* Delta: basis signatures of 4 KiB pieces k..k+n-1 of a basis of kib
 * KiB (all zero: no data has them); block k of file i as one COPY of
 * the basis from offset `from` (the destination's file of the same path
 * holds the model's bytes). */
#define F_DSIGS(i, kib, k, n) .type = MSG_DELTA_SIGS, .id = (i), \
    .flags = (kib), .a = (k), .b = (n)
/* ... or the signatures of a basis holding the model's bytes of the
 * file at path p (its own data in place) but for pieces
 * hole..hole+nhole-1, which no data has. */
#define F_DSIGS_MODEL(i, kib, k, n, p, hole, nhole) F_DSIGS(i, kib, k, n), \
    .s = (p), .v = RV_MODEL, .kind = (hole), .code = (nhole)
/* ... of a basis that is the model's bytes of p from offset sh on (the
 * file has sh bytes more at its start). */
#define F_DSIGS_SHIFTED(i, kib, k, n, p, sh) \
    F_DSIGS_MODEL(i, kib, k, n, p, 0, 0), .shift = (sh)
/* The sender gave up on file i's basis. */
#define F_DSTOP(i) .type = MSG_DELTA_STOP, .id = (i)
/* The sender wants the rest of file i's basis. */
#define F_DGO(i) .type = MSG_DELTA_GO, .id = (i)
/* ... with pieces of `piece` bytes instead (not with F_DSIGS_MODEL). */
#define F_DSIGS_PIECE(i, kib, k, n, piece) F_DSIGS(i, kib, k, n), \
    .code = (piece)
/* The hashes of blocks k..k+n-1 of a basis of kib KiB (all zero), of the
 * model's bytes of the file at path p, or in blocks of bs bytes instead
 * of RT_BS. */
#define F_DBLOCKS(i, kib, k, n) .type = MSG_DELTA_BLOCKS, .id = (i), \
    .flags = (kib), .a = (k), .b = (n)
#define F_DBLOCKS_MODEL(i, kib, k, n, p) F_DBLOCKS(i, kib, k, n), \
    .s = (p), .v = RV_MODEL
#define F_DBLOCKS_BS(i, kib, k, n, bs) F_DBLOCKS(i, kib, k, n), .code = (bs)
#define F_DELTA(i, k, from) .type = MSG_DELTA, .id = (i), .a = (k), \
    .b = (from)
#define F_BADDELTA(i, k, from) F_DELTA(i, k, from), .v = RV_BADHASH
#define F_LITDELTA(i, k) F_DELTA(i, k, 0), .v = RV_LITERAL
#define F_MATCH(i, k, n) .type = MSG_MATCH, .id = (i), .a = (k), .b = (n)
#define F_FEND(i) .type = MSG_FILE_END, .id = (i)
#define F_FEND_BAD(i) F_FEND(i), .v = RV_BADHASH
#define F_FEND_CODE(i, c) F_FEND(i), .code = (c)
#define F_NOTICE .type = MSG_NOTICE, .code = -ENOENT
#define F_END .type = MSG_END
#define F_ERROR .type = MSG_ERROR, .code = FERRY_ERR_PROTOCOL
#define F_READY(name) .type = MSG_READY, .s = (name)
#define F_REPLY(i, act, fl) .type = MSG_REPLY, .id = (i), .kind = (act), \
    .flags = (fl)
#define F_SKIP(i) F_REPLY(i, REPLY_SKIP, 0)
#define F_WANT(i) F_REPLY(i, REPLY_WANT, 0)
#define F_WANT_R(i) F_REPLY(i, REPLY_WANT, REPLY_F_RESUME)
#define F_FAIL(i) F_REPLY(i, REPLY_FAIL, 0), .code = -EACCES
#define F_NEED(i, k, n) .type = MSG_SIGS, .id = (i), .a = (k), .b = (n)
#define F_HAVE(i, k, n) F_NEED(i, k, n), .flags = SIGS_F_HAVE
#define F_DONE(i) .type = MSG_FILE_DONE, .id = (i)
#define F_SUMMARY .type = MSG_SUMMARY
/* READBACK of n blocks (as a receiver with PROTO_CAP_READBACK sends it
 * right before SUMMARY). */
#define F_READBACK(n) .type = MSG_READBACK, .a = (n)
/* STOP naming file i (MSG_STOP_NONE: none), with n files and n blocks
 * kept (a receiver's, right before its ERROR). */
#define F_STOP(i, n) .type = MSG_STOP, .id = (i), .a = (n)
/* The receiver retires stream k. */
#define F_RETIRE(k) .type = MSG_RETIRE, .a = (k)
/* PROBE asking for n bytes back (the client's, after a STATUS). */
#define F_PROBE(n) .type = MSG_PROBE, .a = (n)
/* Tensors: BASIS of file i naming path p of n bytes, with the file hash
 * of rt->root/h (a zero hash when h is NULL); TENSOR of block k of file
 * i as one PLAIN piece of the model's bytes. */
#define F_BASIS(i, p, n, h) .type = MSG_BASIS, .id = (i), .s = (p), \
    .a = (n), .t = (h)
#define F_TENSOR(i, k) .type = MSG_TENSOR, .id = (i), .a = (k)
#define F_HELLO .type = MSG_HELLO
#define F_HELLO_V(lo, hi) F_HELLO, .a = (lo), .b = (hi)
#define F_OPEN(op, p) .type = MSG_OPEN, .kind = (op), .s = (p)
/* OPEN with a second path (DELETE: what to remove beneath the first). */
#define F_OPEN2(op, p, q) F_OPEN(op, p), .t = (q)
#define F_OPEN_OK .type = MSG_OPEN_OK
#define F_JOIN(k) .type = MSG_JOIN, .id = (k)
/* SPACE (proto/msg_space.h, type 27): avail, size. */
#define F_SPACE(av, sz) .type = 27, .a = (av), .b = (sz)
/* BUSY: a transfer holds the destination (an agent's). */
#define F_BUSY .type = MSG_BUSY
/* FILTERS (proto/msg_filter.h, type 26): n copies of one rule. */
#define F_FILTERS(act, pat, n) .type = 26, .kind = (act), .s = (pat), \
    .a = (n)
#define F_JOIN_OK .type = MSG_JOIN_OK
#define F_VOL_OPTS(th, vs) .type = MSG_VOL_OPTS, .a = (th), .b = (vs)
#define F_EOF .type = RT_EOF
/* The stream's connection closed outside a step (a reset, a stall): its
 * side hears of it as the programs' loops tell it (side_stream_lost),
 * and its role goes. */
#define F_LOST .type = RT_LOST
#define F_IDLE .type = RT_IDLE
#define F_TOUCH(p) .type = RT_TOUCH, .s = (p)
/* rt->root/p is cut to n bytes (no step). */
#define F_TRUNCATE(p, n) .type = RT_TRUNCATE, .s = (p), .a = (n)
/* Sender rows with .live: the scan adds directory p, or ends with code c
 * (no step either). */
#define F_SCAN_ADD(p) .type = RT_SCAN_ADD, .s = (p)
#define F_SCAN_END(c) .type = RT_SCAN_END, .code = (c)

struct rt;

/* Runs every row of a table (an array) through run. */
#define RT_RUN_TABLE(table, run) do {                                      \
        size_t rt_i_;                                                        \
                                                                             \
        for (rt_i_ = 0; rt_i_ < sizeof(table) / sizeof(table[0]); rt_i_++)   \
            run(&(table)[rt_i_]);                                            \
    } while (0)

/* A row of a table. Fields left out mean: no error, no frames sent, the
 * destination missing, every capability, no OPEN flags. */
struct rt_case {
    const char *name;
    /* An earlier run of the same destination, to leave a partial file. */
    struct rt_frame before[RT_MAX_FRAMES];
    struct rt_frame script[RT_MAX_FRAMES];
    int err;
    const char *out;
    const char *tree;
    uint64_t caps_off;          /* capabilities the peers do not share */
    uint64_t caps_on;           /* ... and more the scripted peer says */
    uint32_t flags;             /* OPEN flags */
    const char *tops;           /* receiver_expect_tops, space-separated */
    const char *dest;           /* below the scratch root; "dest" if NULL */
    const char *src;            /* the sender's source; "src" if NULL */
    int unjoined;               /* sessions of streams > 0 opened nothing */
    int client;                 /* session rows: the client side */
    /* Sender rows: a packer (volsend.h) with this threshold and volume
     * size (0: none; packer_off: a packer that packs nothing), and at
     * most volume_files files a volume (0: as many as the wire takes). */
    uint64_t pack, volume_size;
    uint32_t volume_files;
    int packer_off;
    /* Receiver rows: a store of kept signatures (keptsig.h) in
     * rt->root/kept, the same for the earlier run and the script. */
    int kept;
    /* Receiver rows: the destination's basis directory
     * (dest_set_basis_dir), beneath the scratch root. */
    const char *basis_dir;
    /* Receiver rows: --adopt DIR (dest_set_adopt), relative to the
     * destination; client session rows: the OPEN's path after it. */
    const char *adopt;
    /* Receiver rows: a known format cut short fails its file
     * (incoming_set_whole_formats; files named torn* are zips with no
     * end, rt_content). */
    int whole_formats;
    /* Sender rows: the plan's manifest is live (plan_new_live), its scan
     * of the source done but not ended until F_SCAN_END. */
    int live;
    /* Prepares the scratch root (rt->root) before the roles exist. */
    void (*setup)(struct rt *rt);
    /* Changes the destination after the earlier run. */
    void (*between)(struct rt *rt);
    /* Sender rows: the manifest's hash hint (manifest_set_hash_hint;
     * ctx the case's rt). */
    manifest_hash_hint_fn *hint;
    /* Further checks once the roles are gone. */
    void (*check)(struct rt *rt);
    /* Called after each step of a role, with what it has said so far:
     * a change made while a role is between two steps of its own. */
    void (*each_step)(struct rt *rt);
};

/* What the harness knows of a file a script named. */
struct rt_file {
    uint32_t id;
    char path[256];
    uint64_t size;
    uint64_t zeros[RT_MAX_ZEROS];  /* blocks sent as ZERO */
    size_t nzeros;
};

struct rt {
    char root[CHECK_PATH_MAX];
    const struct rt_case *c;
    struct xfer x;
    conn_step_fn *step;
    void *role[RT_MAX_STREAMS];
    /* The end under test (side.h): its roles and what they share. */
    struct side *side;
    struct dest *d;
    struct incoming *in;
    struct keptsig_store *ks;
    struct receiver *rcv[RT_MAX_STREAMS];
    struct plan *plan;
    struct manifest live_mf;    /* .live rows: the plan's */
    struct sender *snd[RT_MAX_STREAMS];
    struct session *sess[RT_MAX_STREAMS];
    struct policy pol;
    struct session_policy spol;
    struct rt_file files[RT_MAX_FILES];
    size_t nfiles;
    int poking;                 /* stepping the others after a poke */
    unsigned wakes;             /* steps a wake brought (wait_wake) */
    int waiting;                /* a step waits for the scripted scan */
    int readback;               /* READBACK came; its bytes: */
    uint64_t readback_bytes;
    /* The frames the roles sent, as text. */
    char out[RT_TEXT_MAX];
    size_t out_len;
    size_t last_tok;            /* where the last token starts */
    int last_block;             /* it is a BLOCK or DELTA range (its
                                   kind's first letter): */
    uint32_t lb_id;
    uint64_t lb_first, lb_last;
    unsigned lb_stream;
};

/* Runs one row against a receiver (over a dest in rt->root/dest), a
 * sender (over a plan of rt->root/src) or the agent's (or client's)
 * session. */
void rt_receiver_case(const struct rt_case *c);
void rt_sender_case(const struct rt_case *c);
void rt_session_case(const struct rt_case *c);

/* The pattern of the file at path, bytes [off, off + n). */
void rt_content(const char *path, uint64_t off, uint8_t *buf, size_t n);
/* Writes the pattern of rel into rt->root/rel (n bytes). */
void rt_write(struct rt *rt, const char *rel, uint64_t n);
/* rt->root/rel into out. */
void rt_path(const struct rt *rt, const char *rel, char out[CHECK_PATH_MAX]);
/* Makes the directory rt->root/rel with exactly mode, or a symlink. */
void rt_mkdir(struct rt *rt, const char *rel, unsigned mode);
void rt_link(struct rt *rt, const char *rel, const char *target);
/* The tree beneath dir as text (see above); with exact, every entry with
 * its mode and mtime and every file with a fingerprint of its bytes. */
void rt_tree(const struct rt *rt, const char *dir, char *out, size_t len);
void rt_tree_exact(const struct rt *rt, const char *dir, char *out,
    size_t len);
/* The sender's source tree: src/a (100 bytes), src/d/, src/d/b (150000
 * bytes), src/e (empty), src/ln -> a: ids 0 src, 1 a, 2 d, 3 d/b, 4 e,
 * 5 ln. */
void rt_make_source(struct rt *rt);

/*
 * Two sides pumped against each other (the happy paths): side 0 a client
 * of sessions over senders of rt->root/src (a push), side 1 the agent's
 * sessions over a receiver into rt->root/dest, with nstreams streams.
 * Frames flow until stream 0 of both sides is done, or, with cut_blocks,
 * until the client has sent that many BLOCK frames (the connections are
 * then lost, what is in flight with them). With lose_stream, that stream
 * (not 0) is lost alone once the client has sent lose_after BLOCKs.
 * Returns the first error of a step.
 */
struct rt_pump {
    unsigned nstreams;
    uint32_t flags;                      /* OPEN flags */
    uint64_t cut_blocks;
    unsigned lose_stream;
    uint64_t lose_after;
    uint64_t pack, volume_size;          /* a packer on the client */
    uint64_t sent[2][MSG_TYPE_MAX + 1];  /* frames each side sent */
    uint64_t most[2][MSG_TYPE_MAX + 1];  /* ... the most in one step */
    uint64_t blocks[RT_MAX_STREAMS];     /* BLOCKs sent on each stream */
    uint64_t vol_files[RT_MAX_STREAMS];  /* ... and the client's VOL_FILEs */
    struct xfer xc, xa;                  /* each side's counters */
};
int rt_push(struct rt *rt, struct rt_pump *p);

/* Internals shared by roles.c and roles_run.c. */

extern const uint8_t rt_tid[16];
extern const uint8_t rt_tkey[32];
/* Appends the frames of script step fr to b (the model learns ENTRYs and
 * ZERO blocks). */
void rt_encode(struct rt *rt, const struct rt_frame *fr, struct buf *b);
/* Appends the frames a role sent on stream k to rt->out as text. */
void rt_render(struct rt *rt, unsigned k, const uint8_t *p, size_t n);
/* The model's file of id (the latest of that id), or NULL. */
struct rt_file *rt_file(struct rt *rt, uint32_t id);
/* roles_tensor.c: BASIS and TENSOR frames of script step fr; a
 * safetensors file of one BF16 tensor of n bytes at rt->root/rel, its
 * data drawn from seed, every 97th byte changed by one with bump. */
void rt_encode_tensor(struct rt *rt, const struct rt_frame *fr,
    struct buf *b);
void rt_write_safetensors(struct rt *rt, const char *rel, size_t n,
    unsigned seed, int bump);
/* The model's file at path (the latest of that path), or NULL. */
const struct rt_file *rt_file_at(const struct rt *rt, const char *path);
/* 1 if the file at p holds what the model says f holds. */
int rt_same_content(const char *p, const struct rt_file *f);

/* For cases that do not fit a row: a receiver of n streams over
 * rt->root/dest (rt_init first), one step of one frame or of bytes, and
 * the end of every role and of what they share. */
void rt_open_receiver(struct rt *rt, unsigned n);
int rt_feed(struct rt *rt, const struct rt_frame *fr);
int rt_feed_bytes(struct rt *rt, unsigned k, const uint8_t *p, size_t n);
/* Stream k's peer closed it. */
int rt_feed_eof(struct rt *rt, unsigned k);
void rt_close(struct rt *rt);

/*
 * Torture (curl's): plays the row's script once for every allocation the
 * role makes, with that allocation failing (alloc_fail_at). The step
 * that meets it may fail; what is left must be freed without a crash or
 * a leak (AddressSanitizer tells). The earlier run, if any, and the
 * harness's own encoding run without failures.
 */
void rt_torture(const struct rt_case *c, int sender);

/* Scratch root with an "outside" directory next to the destination. */
void rt_init(struct rt *rt, const struct rt_case *c);
/* Checks that nothing outside the destination changed; removes root. */
void rt_finish(struct rt *rt);

/* The harness's loop: x's waker (waker.h) counts its wakes, and a step
 * that says wait_wake is stepped again once a wake came after it began,
 * as a conn of a group is; no timer steps it. */
void rt_waker_set(struct xfer *x);
unsigned rt_wakes(void);
/* Waits (10 s at most, then the case fails) for a wake after seen. */
void rt_wait_wake(unsigned seen);

#endif
