/*
 * msg.h: the protocol's messages, one encode/decode pair each (msg.c for the
 * session's messages, msg_file.c for entries and file data), most of them
 * made from a list of fields (msg_int.h; the codec column of msg_table.h).
 *
 * Encoders append one whole frame to a buf. Decoders take a frame payload,
 * fill a plain struct whose byte fields borrow from the payload (valid as
 * long as the payload), read every field, fail with FERRY_ERR_TRAILING on
 * leftovers and then check meaning (enums, flag combinations, paths). See
 * proto/PROTOCOL.md for the conversation these make up.
 */
#ifndef FERRY_PROTO_MSG_H
#define FERRY_PROTO_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/hash.h"
#include "limits.h"
#include "msg_table.h"

/* The types, from msg_table.h: MSG_HELLO = 1, ... */
enum msg_type {
#define MSG_ENUM(num, NAME, name, dir, stream0, cap, codec)                  \
    MSG_##NAME = num,
    MSG_TABLE(MSG_ENUM)
#undef MSG_ENUM
};

/* A message's line of msg_table.h. */
struct msg_info {
    const char *name;  /* "HELLO" */
    uint8_t dir;       /* enum msg_dir */
    uint8_t stream0;
    uint64_t cap;
};

/* type's line, or NULL for a type the table does not have. */
const struct msg_info *msg_info(uint8_t type);
/* Returns "HELLO", "BLOCK", ... or "?" for logs. */
const char *msg_type_name(uint8_t type);
/* 1 if type is a message of the table.
 * For the tests: nothing else calls it. */
int msg_type_known(uint8_t type);

/* Capability bits in HELLO. Unknown bits are ignored; the agreed set is
 * the intersection of both sides' bits. */
#define PROTO_CAP_SPARSE (1u << 0)   /* ZERO blocks */
#define PROTO_CAP_RESUME (1u << 1)   /* REPLY_F_RESUME, SIGS, MATCH */
#define PROTO_CAP_DELTA (1u << 2)    /* REPLY_F_DELTA, DELTA_SIGS, DELTA */
#define PROTO_CAP_VOLUMES (1u << 3)  /* small files in volumes */
#define PROTO_CAP_STREAMS (1u << 4)  /* JOIN: more connections */
#define PROTO_CAP_ZSTD (1u << 5)     /* compressed blocks */
#define PROTO_CAP_RETIRE (1u << 8)   /* RETIRE */
#define PROTO_CAP_READBACK (1u << 9) /* READBACK */
#define PROTO_CAP_PROBE (1u << 10)   /* PROBE after a STATUS */
#define PROTO_CAP_KEEP (1u << 11)    /* OPEN KEEP: volumes stored as files */
#define PROTO_CAP_LIVE (1u << 12)    /* PLAN_F_LIVE and TOTALS */
#define PROTO_CAP_DELTA_BLOCKS (1u << 13) /* DELTA_BLOCKS */
#define PROTO_CAP_DELTA_STOP (1u << 14)   /* DELTA_STOP */
#define PROTO_CAP_STOP (1u << 15)    /* STOP before a receiver's ERROR */
#define PROTO_CAP_BUSY (1u << 16)    /* BUSY: the destination is locked */
#define PROTO_CAP_TENSORS (1u << 17) /* REPLY_F_TENSOR, BASIS, TENSOR */
#define PROTO_CAP_FILTERS (1u << 7)  /* FILTERS before OPEN */
#define PROTO_CAP_SPACE (1u << 18)   /* SPACE after OPEN_OK */
/* The agent reads the sources' ignore files (.ferryignore) of a pull or a
 * LIST. */
#define PROTO_CAP_IGNORE (1u << 19)
/* The receiver signs a basis past what the sender's probe needs only
 * once told (DELTA_GO). Bit 20 meant the same with a probe of up to 16
 * blocks; both sides must count the probe alike (delta_probe_pieces),
 * so it is retired, and a peer that says it gets no DELTA_GO. */
#define PROTO_CAP_DELTA_GO (1u << 21)
/* The receiver takes a single file's ENTRY under the sender's own name
 * and writes it under the name READY gives: the sender offers it without
 * waiting for READY, a round trip sooner. */
#define PROTO_CAP_SINGLE_EARLY (1u << 22)
/* The agent takes OPEN_F_ADOPT and answers REPLY_F_ADOPTED. One that
 * knows no such flag refuses that OPEN as malformed: a client that finds
 * the bit missing in its HELLO fails first, saying what it lacks. */
#define PROTO_CAP_ADOPT (1u << 23)
/* The agent takes OPEN_F_ADOPT_KEEP; the client asks for it first, as
 * for OPEN_F_ADOPT. */
#define PROTO_CAP_ADOPT_KEEP (1u << 24)
/* Said by an agent run as `serve --restrict` (a forced command): a client
 * must not try to upload another agent to it. Not negotiated. */
#define PROTO_CAP_RESTRICTED (1u << 6)

/* A borrowed byte string from a payload (not NUL-terminated). */
struct msg_str {
    const char *p;
    size_t len;
};

struct msg_hello {
    uint16_t version_min;
    uint16_t version_max;
    uint64_t caps;
    struct msg_str software;  /* "ferry 0.1.0", at most PROTO_MAX_SOFTWARE */
};

enum msg_open_op {
    OPEN_PUSH = 1,  /* the agent receives into paths[0] */
    OPEN_PULL = 2,  /* the agent sends paths[0..n) */
    OPEN_STATUS = 3,  /* the agent lists unfinished files in paths[0] */
    OPEN_CLEAN = 4,   /* ... and removes them */
    OPEN_LIST = 5,    /* the agent lists the entries of paths[0..n) */
    OPEN_DELETE = 6,  /* the agent removes paths[1..n) beneath paths[0] */
    OPEN_KEEP = 7,    /* the agent stores the set named paths[1] in
                         paths[0] (msg_keep.h) */
};

#define OPEN_F_CHECKSUM (1u << 0)  /* compare content hashes, not mtimes */
#define OPEN_F_DEST_DIR (1u << 1)  /* push: the destination was written
                                      with a trailing '/' */
#define OPEN_F_COMPRESS (1u << 2)  /* the sender compresses blocks that
                                      shrink (with PROTO_CAP_ZSTD) */
/* --delta: by default (neither flag) the receiver uses delta where it
 * pays (docs/DESIGN.md, "Delta"); ALWAYS wherever it has a basis, NEVER
 * not at all. Both together are refused. */
#define OPEN_F_DELTA_ALWAYS (1u << 3)
#define OPEN_F_DELTA_NEVER (1u << 4)
/* --basis auto: a file new to the destination may be built from the most
 * similar file beside it. */
#define OPEN_F_BASIS_AUTO (1u << 5)
/* --basis FILE, with PUSH only: paths[1] names the basis of files new to
 * the destination, relative to the destination directory. */
#define OPEN_F_BASIS_FILE (1u << 6)
/* Stream 0 carries slower than the further streams (libssh2 beside the
 * ssh program on a short link): the sender gives it no run and no
 * volume while one of them is up. */
#define OPEN_F_SPARE_STREAM0 (1u << 7)
/* LIST only (a watch's look): each file's ENTRY says whether a writer
 * holds it and whether it is a known format cut short (ENTRY_S_*). */
#define OPEN_F_READINESS (1u << 8)
/* PUSH and KEEP only (--mkpath): the destination's missing parents are
 * made. Without it only its last component is, as rsync does. */
#define OPEN_F_MKPATH (1u << 9)
/* PUSH only (--delete, a mirror): a directory where the sources send a
 * file or a symlink is removed, with what it holds, as rsync's --delete
 * does. Without it that entry fails. */
#define OPEN_F_REPLACE_DIRS (1u << 10)
/* --tensors=never: the receiver never answers WANT with REPLY_F_TENSOR
 * (docs/DESIGN.md, "Tensor checkpoints"). */
#define OPEN_F_TENSORS_NEVER (1u << 11)
/* PUSH only (--adopt DIR): the last path names a directory relative to
 * the destination laid out as it; a file not current whose ENTRY hash
 * matches DIR/path there is moved into place instead of sent
 * (REPLY_F_ADOPTED). The sender then hashes every file it offers. */
#define OPEN_F_ADOPT (1u << 12)
/* With OPEN_F_ADOPT: the staged file keeps its name, and a second one,
 * its final name, is linked to it instead of the rename. A swarm helper
 * still seeds from the staged name, which libtorrent may open again at
 * any time (docs/SWARM.md); the staging directory's removal drops it. */
#define OPEN_F_ADOPT_KEEP (1u << 13)
#define OPEN_F_KNOWN (OPEN_F_CHECKSUM | OPEN_F_DEST_DIR | OPEN_F_COMPRESS | \
    OPEN_F_DELTA_ALWAYS | OPEN_F_DELTA_NEVER | OPEN_F_BASIS_AUTO | \
    OPEN_F_BASIS_FILE | OPEN_F_SPARE_STREAM0 | OPEN_F_READINESS | \
    OPEN_F_MKPATH | OPEN_F_REPLACE_DIRS | OPEN_F_TENSORS_NEVER | \
    OPEN_F_ADOPT | OPEN_F_ADOPT_KEEP)

struct msg_open {
    uint8_t op;
    uint32_t flags;
    uint32_t block_size;  /* power of two in [PROTO_MIN_BLOCK, MAX_BLOCK] */
    uint8_t transfer_id[PROTO_TRANSFER_ID_LEN];
    uint8_t transfer_key[PROTO_TRANSFER_KEY_LEN];
    uint16_t npaths;      /* 1..PROTO_MAX_OPEN_PATHS */
    /* The decoder points paths at an array it cannot allocate, so it
     * records where the list starts; iterate with msg_open_path. */
    const uint8_t *paths_raw;
    size_t paths_len;
};

struct msg_open_ok {
    struct msg_str root;  /* for messages: where the agent works */
};

struct msg_error {
    int32_t code;         /* a ferry error code (see proto_err_*) */
    struct msg_str text;  /* at most PROTO_MAX_MESSAGE */
};

#define PLAN_F_SINGLE_FILE (1u << 0)  /* one source, not a directory */
/* The sender's scan goes on: the totals are zero, and TOTALS gives them
 * when it ends. Never with SINGLE_FILE. */
#define PLAN_F_LIVE (1u << 1)

struct msg_plan {
    uint32_t flags;
    uint32_t ntop;  /* top-level entries */
    uint64_t entries_total;
    uint64_t files_total;
    uint64_t bytes_total;
};

/* TOTALS (on stream 0, after a PLAN with PLAN_F_LIVE): the totals PLAN
 * could not give, once the sender's scan ended; once, before END. */
struct msg_totals {
    uint64_t entries_total;
    uint64_t files_total;
    uint64_t bytes_total;
};

struct msg_ready {
    struct msg_str rename;  /* empty, or a single component replacing the
                               name of the only top-level entry */
};

enum msg_entry_kind { ENTRY_FILE = 1, ENTRY_DIR = 2, ENTRY_SYMLINK = 3 };

struct msg_entry {
    uint32_t id;
    uint8_t kind;
    uint32_t mode;  /* permission bits only (07777) */
    uint64_t size;
    int64_t mtime_sec;
    uint32_t mtime_nsec;  /* < 1e9 */
    uint8_t has_hash;
    uint8_t state;          /* ENTRY_S_*: files in a LIST with READINESS */
    struct hash128 hash;    /* content hash, when has_hash */
    struct msg_str path;    /* checked with fsx_path_check */
    struct msg_str target;  /* symlinks only, 1..PROTO_MAX_LINK bytes */
};

/* msg_entry.state: what the agent saw of a file as it listed it. */
#define ENTRY_S_BUSY 1u   /* a process holds it open for writing */
#define ENTRY_S_TORN 2u   /* a format it knows (formcheck.h), cut short */
#define ENTRY_S_WHOLE 4u  /* a format it knows, whole */
#define ENTRY_S_IDLE 8u   /* nobody holds it open for writing: the kernel
                             granted a read lease (not BUSY's opposite: a
                             file neither BUSY nor IDLE is one the agent
                             could not ask about, on NFS say) */
#define ENTRY_S_KNOWN (ENTRY_S_BUSY | ENTRY_S_TORN | ENTRY_S_WHOLE | \
    ENTRY_S_IDLE)

enum msg_reply_action { REPLY_SKIP = 1, REPLY_WANT = 2, REPLY_FAIL = 3 };

/* WANT: the receiver holds blocks of this file from an earlier attempt or
 * run; SIGS frames for it follow on the same stream, saying of every block
 * exactly once whether it is held (with its hash) or needed. */
#define REPLY_F_RESUME (1u << 0)
/* WANT: the receiver holds another version of this file (a basis);
 * DELTA_SIGS describing it follow on the same stream, and the sender may
 * send blocks as DELTA (with PROTO_CAP_DELTA). */
#define REPLY_F_DELTA (1u << 1)
/* WANT: the receiver holds another version of this file that has
 * tensors (a checkpoint); a BASIS naming it follows on stream 0, and the
 * sender may send blocks as TENSOR (with PROTO_CAP_TENSORS). Never with
 * REPLY_F_DELTA. */
#define REPLY_F_TENSOR (1u << 2)
/* SKIP only, with OPEN_F_ADOPT: the file was not current, and was moved
 * into place from the adopt directory after its hash matched. */
#define REPLY_F_ADOPTED (1u << 3)
#define REPLY_F_KNOWN (REPLY_F_RESUME | REPLY_F_DELTA | REPLY_F_TENSOR | \
    REPLY_F_ADOPTED)

struct msg_reply {
    uint32_t id;
    uint8_t action;
    uint8_t flags;    /* REPLY_F_*: with WANT, or ADOPTED with SKIP */
    int32_t code;     /* FAIL: why; 0 otherwise */
    /* FAIL: the reason; WANT: empty, or a warning for the user (an
     * unusable partial was discarded, say). */
    struct msg_str text;
};

/*
 * SIGS: for blocks first..first+count-1 of a wanted file, either HAVE
 * (the receiver holds them, read back and checked, with these XXH3-128
 * hashes: count x 16 bytes follow) or NEED (send them; nothing follows).
 */
#define SIGS_F_HAVE (1u << 0)
#define SIGS_F_KNOWN SIGS_F_HAVE

struct msg_sigs {
    uint32_t id;
    uint64_t first;
    uint32_t count;          /* 1..PROTO_MAX_SIGS */
    uint8_t flags;
    const uint8_t *hashes;   /* HAVE: count x HASH_LEN bytes, borrowed */
};

/* MATCH: the sender's blocks first..first+count-1 are the ones the
 * receiver said it holds (SIGS HAVE): keep them. */
struct msg_match {
    uint32_t id;
    uint64_t first;
    uint32_t count;  /* 1..PROTO_MAX_SIGS */
};

/*
 * DELTA_SIGS: signatures of sigs first..first+count-1 of the receiver's
 * basis, cut into sig_block pieces (the last one shorter). Each is a u32
 * weak rolling checksum (common/rollsum.h) and the XXH3-128 of the piece:
 * count x 20 bytes follow. basis_size and sig_block are the same in every
 * frame of a file; frames come in order and describe every piece once.
 */
#define DELTA_SIG_LEN (4 + HASH_LEN)

struct msg_delta_sigs {
    uint32_t id;
    uint64_t basis_size;     /* 1..INT64_MAX */
    uint32_t sig_block;      /* power of two, PROTO_MIN_SIG_BLOCK..MAX_BLOCK */
    uint64_t first;
    uint32_t count;          /* 1..PROTO_MAX_SIGS, within the basis */
    const uint8_t *sigs;     /* count x DELTA_SIG_LEN bytes, borrowed */
};

/* Pieces of the basis a size and sig_block make. */
uint64_t msg_delta_nsigs(uint64_t basis_size, uint32_t sig_block);

/*
 * DELTA_BLOCKS (with PROTO_CAP_DELTA_BLOCKS): the XXH3-128 of blocks
 * first..first+count-1 of the receiver's basis, in blocks of block_size
 * bytes (the transfer's), as a receiver that kept them sends them after
 * the file's first DELTA_SIGS. A sender whose block hashes the same as
 * the basis's block at its offset copies it whole without signing its
 * pieces (docs/DESIGN.md, "Kept signatures").
 */
struct msg_delta_blocks {
    uint32_t id;
    uint32_t block_size;     /* PROTO_MIN_BLOCK..PROTO_MAX_BLOCK */
    uint64_t first;
    uint32_t count;          /* 1..PROTO_MAX_SIGS */
    const uint8_t *hashes;   /* count x HASH_LEN bytes, borrowed */
};

/*
 * DELTA_STOP (sender -> receiver, any stream, with PROTO_CAP_DELTA_STOP):
 * the sender gave up on the basis of file id (its first blocks found
 * nothing in it) and takes no more of its signatures: the receiver stops
 * reading it to sign it. What it described stays copyable.
 */
struct msg_delta_stop {
    uint32_t id;
};

/*
 * DELTA_GO (sender -> receiver, any stream, with PROTO_CAP_DELTA_GO): the
 * sender wants the rest of file id's basis (its probe found something,
 * or could not decide): the receiver, which signed no further than the
 * probe's part (delta_probe_pieces), signs the rest.
 */
struct msg_delta_go {
    uint32_t id;
};

/*
 * DELTA: block offset of a wanted file (raw_len bytes, as for BLOCK) made
 * of ops in order: COPY len bytes of the basis from `from`, or LITERAL len
 * bytes that follow. hash is of the whole block, as for BLOCK.
 */
enum msg_delta_op_kind { DELTA_OP_COPY = 1, DELTA_OP_LITERAL = 2 };

struct msg_delta_op {
    uint8_t kind;
    uint32_t len;            /* >= 1 */
    uint64_t from;           /* COPY: basis offset */
    const uint8_t *data;     /* LITERAL: len bytes (borrowed) */
};

struct msg_delta {
    uint32_t id;
    uint64_t offset;
    uint32_t raw_len;        /* 1..PROTO_MAX_BLOCK, the sum of op lens */
    struct hash128 hash;
    uint16_t nops;           /* 1..PROTO_MAX_DELTA_OPS */
    /* Decoded: where the ops start; iterate with msg_delta_op_next. */
    const uint8_t *ops_raw;
    size_t ops_len;
};

/*
 * BASIS (receiver -> sender, stream 0, with PROTO_CAP_TENSORS): the basis
 * of file id, wanted with REPLY_F_TENSOR: its size, its file hash (at the
 * transfer's block size, as FILE_END's) and its path relative to the
 * transfer's root (checked with fsx_path_check). The sender codes the
 * file against its own file of that path only if that is an entry it
 * offered with the same size and hash.
 */
struct msg_basis {
    uint32_t id;
    uint64_t basis_size;     /* 1..INT64_MAX */
    struct hash128 hash;
    struct msg_str path;     /* 1..PROTO_MAX_PATH bytes */
};

/*
 * TENSOR (sender -> receiver, any stream, with PROTO_CAP_TENSORS): block
 * offset of a file wanted with REPLY_F_TENSOR (raw_len bytes, as for
 * BLOCK), as a sequence of tensor pieces (proto/tensor_piece.h) the
 * receiver rebuilds against the basis it named; hash is of the raw block.
 * The body is shorter than the block (else it goes as BLOCK).
 */
struct msg_tensor {
    uint32_t id;
    uint64_t offset;
    uint32_t raw_len;        /* 2..PROTO_MAX_BLOCK */
    struct hash128 hash;
    const uint8_t *body;     /* 1..raw_len - 1 bytes, borrowed */
    size_t body_len;
};

#define BLOCK_F_ZERO (1u << 0)  /* all zero bytes; no data follows */
#define BLOCK_F_ZSTD (1u << 1)  /* data is a zstd frame of raw_len bytes,
                                   shorter than raw_len */
#define BLOCK_F_KNOWN (BLOCK_F_ZERO | BLOCK_F_ZSTD)

struct msg_block {
    uint32_t id;
    uint64_t offset;
    uint8_t flags;
    uint32_t raw_len;  /* 1..PROTO_MAX_BLOCK */
    struct hash128 hash;  /* of the raw bytes */
    const uint8_t *data;
    size_t data_len;
};

/* Every block of the file was sent as BLOCK or kept by MATCH (some may
 * still be in flight on other streams). */
struct msg_file_end {
    uint32_t id;
    int32_t code;         /* 0, or why the sender gave up on the file */
    struct hash128 hash;  /* file hash (hash.h) when code == 0 */
    struct msg_str text;
};

struct msg_file_done {
    uint32_t id;
    int32_t code;
    struct msg_str text;
};

struct msg_notice {
    int32_t code;
    struct msg_str path;
    struct msg_str text;
};

struct msg_summary {
    uint64_t files_committed;
    uint64_t files_skipped;
    uint64_t files_failed;
    uint64_t bytes_written;
};

/* JOIN: a further connection of a running transfer (instead of OPEN). */
struct msg_join {
    uint8_t transfer_id[PROTO_TRANSFER_ID_LEN];
    uint8_t transfer_key[PROTO_TRANSFER_KEY_LEN];  /* as its OPEN's */
    uint16_t stream;  /* 1..PROTO_MAX_STREAMS-1 */
};

/* RETIRE (on stream 0): a further stream the receiver gave up on (it
 * stalled, or its connection died where the sender may not see it). The
 * sender sends again, on the others, what it sent there, and gives it no
 * more work. */
struct msg_retire {
    uint16_t stream;  /* 1..PROTO_MAX_STREAMS-1 */
};

/* PROBE (both ways, after the agent's END of a STATUS): the round trip
 * and throughput probe of `ferry status`. data is any bytes; ask asks
 * for that many bytes of PROBE data back (only the client asks). */
struct msg_probe {
    uint32_t ask;       /* 0..PROTO_MAX_PROBE_ASK */
    const uint8_t *data;
    size_t len;         /* 0..PROTO_MAX_PROBE_DATA */
};

/* READBACK (on stream 0 right before SUMMARY): the bytes of kept partial
 * files read back to check them before a resume trusted them, and the
 * time the reads took, for the sender's summary. */
struct msg_readback {
    uint64_t bytes;
    uint64_t ns;
};

/* STOP: the entry whose file the receiver's fatal error met (MSG_STOP_NONE:
 * no file, the state directory say), and the unfinished files its state
 * directory keeps for a resume, with the bytes their journals claim. */
#define MSG_STOP_NONE UINT32_MAX
struct msg_stop {
    uint32_t id;
    uint64_t kept_files;
    uint64_t kept_bytes;
};

/* BUSY: who holds the destination's lock, as its lock file says (text
 * only shown, at most PROTO_MAX_HOLDER bytes; may be empty). */
struct msg_busy {
    struct msg_str holder;
};

/* One unfinished file kept for a resume (answer to STATUS and CLEAN). */
struct msg_partial {
    struct msg_str path;
    uint64_t size;
    uint64_t done;    /* bytes on disk, <= size */
    int64_t age_s;    /* since it last changed */
};

/* Encoders: append one frame to b. Fail with TOO_LARGE / NOMEM from the
 * buf, or FERRY_ERR_USAGE if a field is out of range (a caller's bug). */
int msg_hello_encode(struct buf *b, const struct msg_hello *m) FERRY_WUR;
int msg_open_encode(struct buf *b, const struct msg_open *m,
    const char *const *paths) FERRY_WUR;
int msg_open_ok_encode(struct buf *b, const struct msg_open_ok *m) FERRY_WUR;
int msg_error_encode(struct buf *b, const struct msg_error *m) FERRY_WUR;
int msg_plan_encode(struct buf *b, const struct msg_plan *m) FERRY_WUR;
int msg_ready_encode(struct buf *b, const struct msg_ready *m) FERRY_WUR;
int msg_totals_encode(struct buf *b, const struct msg_totals *m) FERRY_WUR;
int msg_entry_encode(struct buf *b, const struct msg_entry *m) FERRY_WUR;
int msg_reply_encode(struct buf *b, const struct msg_reply *m) FERRY_WUR;
int msg_block_encode(struct buf *b, const struct msg_block *m) FERRY_WUR;
int msg_file_end_encode(struct buf *b, const struct msg_file_end *m)
    FERRY_WUR;
int msg_file_done_encode(struct buf *b, const struct msg_file_done *m)
    FERRY_WUR;
int msg_notice_encode(struct buf *b, const struct msg_notice *m) FERRY_WUR;
int msg_end_encode(struct buf *b) FERRY_WUR;
int msg_summary_encode(struct buf *b, const struct msg_summary *m) FERRY_WUR;
int msg_partial_encode(struct buf *b, const struct msg_partial *m) FERRY_WUR;
int msg_sigs_encode(struct buf *b, const struct msg_sigs *m) FERRY_WUR;
int msg_match_encode(struct buf *b, const struct msg_match *m) FERRY_WUR;
int msg_join_encode(struct buf *b, const struct msg_join *m) FERRY_WUR;
int msg_join_ok_encode(struct buf *b) FERRY_WUR;
int msg_delta_sigs_encode(struct buf *b, const struct msg_delta_sigs *m)
    FERRY_WUR;
/* m's nops, ops_raw and ops_len are ignored: the ops are ops[0..nops). */
int msg_delta_blocks_encode(struct buf *b, const struct msg_delta_blocks *m)
    FERRY_WUR;
int msg_delta_encode(struct buf *b, const struct msg_delta *m,
    const struct msg_delta_op *ops, size_t nops) FERRY_WUR;
int msg_retire_encode(struct buf *b, const struct msg_retire *m) FERRY_WUR;
int msg_delta_stop_encode(struct buf *b, const struct msg_delta_stop *m)
    FERRY_WUR;
int msg_delta_go_encode(struct buf *b, const struct msg_delta_go *m)
    FERRY_WUR;
int msg_readback_encode(struct buf *b, const struct msg_readback *m)
    FERRY_WUR;
int msg_probe_encode(struct buf *b, const struct msg_probe *m) FERRY_WUR;
int msg_stop_encode(struct buf *b, const struct msg_stop *m) FERRY_WUR;
int msg_busy_encode(struct buf *b, const struct msg_busy *m) FERRY_WUR;
int msg_basis_encode(struct buf *b, const struct msg_basis *m) FERRY_WUR;
int msg_tensor_encode(struct buf *b, const struct msg_tensor *m) FERRY_WUR;

/*
 * Reserves room for a BLOCK frame whose data the caller writes in place
 * (zero copy from pread). *data points at data_cap bytes; finish with
 * msg_block_commit, which writes the header fields and trims the frame to
 * m->data_len bytes of data.
 */
int msg_block_reserve(struct buf *b, size_t data_cap, size_t *mark,
    uint8_t **data) FERRY_WUR;
int msg_block_commit(struct buf *b, size_t mark, size_t data_cap,
    const struct msg_block *m) FERRY_WUR;

/* Decoders: payload of a frame of the matching type. */
int msg_hello_decode(const uint8_t *p, size_t n, struct msg_hello *m)
    FERRY_WUR;
int msg_open_decode(const uint8_t *p, size_t n, struct msg_open *m)
    FERRY_WUR;
int msg_open_ok_decode(const uint8_t *p, size_t n, struct msg_open_ok *m)
    FERRY_WUR;
int msg_error_decode(const uint8_t *p, size_t n, struct msg_error *m)
    FERRY_WUR;
int msg_plan_decode(const uint8_t *p, size_t n, struct msg_plan *m)
    FERRY_WUR;
int msg_ready_decode(const uint8_t *p, size_t n, struct msg_ready *m)
    FERRY_WUR;
int msg_totals_decode(const uint8_t *p, size_t n, struct msg_totals *m)
    FERRY_WUR;
int msg_entry_decode(const uint8_t *p, size_t n, struct msg_entry *m)
    FERRY_WUR;
int msg_reply_decode(const uint8_t *p, size_t n, struct msg_reply *m)
    FERRY_WUR;
int msg_block_decode(const uint8_t *p, size_t n, struct msg_block *m)
    FERRY_WUR;
int msg_file_end_decode(const uint8_t *p, size_t n, struct msg_file_end *m)
    FERRY_WUR;
int msg_file_done_decode(const uint8_t *p, size_t n,
    struct msg_file_done *m) FERRY_WUR;
int msg_notice_decode(const uint8_t *p, size_t n, struct msg_notice *m)
    FERRY_WUR;
int msg_end_decode(const uint8_t *p, size_t n) FERRY_WUR;
int msg_summary_decode(const uint8_t *p, size_t n, struct msg_summary *m)
    FERRY_WUR;
int msg_partial_decode(const uint8_t *p, size_t n, struct msg_partial *m)
    FERRY_WUR;
int msg_sigs_decode(const uint8_t *p, size_t n, struct msg_sigs *m)
    FERRY_WUR;
int msg_match_decode(const uint8_t *p, size_t n, struct msg_match *m)
    FERRY_WUR;
int msg_join_decode(const uint8_t *p, size_t n, struct msg_join *m)
    FERRY_WUR;
int msg_join_ok_decode(const uint8_t *p, size_t n) FERRY_WUR;
int msg_delta_sigs_decode(const uint8_t *p, size_t n,
    struct msg_delta_sigs *m) FERRY_WUR;
int msg_delta_blocks_decode(const uint8_t *p, size_t n,
    struct msg_delta_blocks *m) FERRY_WUR;
/* Checks every op (kinds, lens adding up to raw_len, COPY ranges that do
 * not wrap) before it returns. */
int msg_delta_decode(const uint8_t *p, size_t n, struct msg_delta *m)
    FERRY_WUR;

/*
 * Iterates the ops of a decoded DELTA: *pos starts at 0; each call yields
 * the next op. Returns 0, or FERRY_ERR_SHORT after the last one.
 */
int msg_delta_op_next(const struct msg_delta *m, size_t *pos,
    struct msg_delta_op *op) FERRY_WUR;
int msg_delta_stop_decode(const uint8_t *p, size_t n,
    struct msg_delta_stop *m) FERRY_WUR;
int msg_delta_go_decode(const uint8_t *p, size_t n,
    struct msg_delta_go *m) FERRY_WUR;
int msg_retire_decode(const uint8_t *p, size_t n, struct msg_retire *m)
    FERRY_WUR;
int msg_readback_decode(const uint8_t *p, size_t n, struct msg_readback *m)
    FERRY_WUR;
int msg_stop_decode(const uint8_t *p, size_t n, struct msg_stop *m)
    FERRY_WUR;
int msg_busy_decode(const uint8_t *p, size_t n, struct msg_busy *m)
    FERRY_WUR;
int msg_basis_decode(const uint8_t *p, size_t n, struct msg_basis *m)
    FERRY_WUR;
/* Checks the lengths only (raw_len bounded, the body shorter than it);
 * the pieces are the receiver's to check as it rebuilds them. */
int msg_tensor_decode(const uint8_t *p, size_t n, struct msg_tensor *m)
    FERRY_WUR;
/* FERRY_ERR_TOO_LARGE past the bounds of struct msg_probe. */
int msg_probe_decode(const uint8_t *p, size_t n, struct msg_probe *m)
    FERRY_WUR;

/*
 * Iterates the paths of a decoded OPEN: *pos starts at 0; each call yields
 * the next path. Returns 0, or FERRY_ERR_SHORT after the last one. Paths
 * were length-checked by the decoder.
 */
int msg_open_path(const struct msg_open *m, size_t *pos, struct msg_str *out)
    FERRY_WUR;

/*
 * Error codes cross machines with different errno numbers: these map our
 * codes (-errno or FERRY_ERR_*) to wire codes and back. Unknown values map
 * to FERRY_ERR_PEER.
 */
int32_t proto_err_to_wire(int r);
int proto_err_from_wire(int32_t code);

#endif
