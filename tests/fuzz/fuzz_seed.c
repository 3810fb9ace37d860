#include "fuzz_seed.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/fsx.h"
#include "../../proto/journal.h"
#include "../../proto/msg.h"
#include "../../proto/msg_filter.h"
#include "../../proto/msg_keep.h"
#include "../../proto/msg_space.h"
#include "../../proto/msg_vol.h"
#include "../../proto/rvmsg.h"
#include "../../proto/tensor_piece.h"
#include "../../proto/vmanifest.h"
#include "fuzz_common.h"

#define SEED_STR(lit) { lit, sizeof(lit) - 1 }
#define SEED_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * A path of PROTO_MAX_PATH bytes made of FSX_NAME_MAX-byte components, and
 * a name of FSX_NAME_MAX bytes: the longest strings the decoders accept.
 * Static initializers cannot spell them, so seed_fill writes them before
 * the first use; the seeds below point into them.
 */
static char seed_long[PROTO_MAX_PATH + 1];
static char seed_name[FSX_NAME_MAX + 1];
static char seed_pattern[PROTO_MAX_FILTER_PATTERN + 1];

static void
seed_fill(void)
{
    size_t i;

    if (seed_long[0] != '\0')
        return;
    for (i = 0; i < PROTO_MAX_PATH; i++)
        seed_long[i] = i % (FSX_NAME_MAX + 1) == FSX_NAME_MAX ? '/' :
            (char)('a' + i % 26);
    memset(seed_name, 'n', FSX_NAME_MAX);
    memset(seed_pattern, 'p', PROTO_MAX_FILTER_PATTERN);
}

/* A macro, not a const object: C initializers cannot copy an object. */
#define SEED_HASH { {                                                        \
    0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,                          \
    0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,                          \
} }

static const struct msg_hello seed_hello[] = {
    { .version_min = 1, .version_max = 1,
      .caps = PROTO_CAP_SPARSE | PROTO_CAP_RESUME | PROTO_CAP_ZSTD,
      .software = SEED_STR("ferry 0.1.0") },
    { .version_min = 1, .version_max = 0xffff, .caps = UINT64_MAX },
    { .version_min = 2, .version_max = 3,
      .software = { seed_long, PROTO_MAX_SOFTWARE } },
};

static const char *const seed_push_paths[] = { "backup/dest" };
static const char *const seed_pull_paths[] = { "src", "a/b c", "/abs/p" };
static const char *const seed_long_paths[] = { seed_long, "~/x" };
static const char *const seed_basis_paths[] = { "ckpts/", "step-1000.pt" };
static const char *const seed_keep_paths[] = { "~/sets", "shards" };
static const char *const seed_adopt_paths[] = { "data/", "step-1000.pt",
    ".ferry-swarm/4f1c" };

static const struct {
    struct msg_open m;
    const char *const *paths;
} seed_open[] = {
    { { .op = OPEN_PUSH, .flags = OPEN_F_DEST_DIR,
        .block_size = PROTO_DEFAULT_BLOCK,
        .transfer_id = "0123456789abcdef", .npaths = 1 }, seed_push_paths },
    { { .op = OPEN_PULL, .flags = OPEN_F_CHECKSUM,
        .block_size = PROTO_MIN_BLOCK, .npaths = 3 }, seed_pull_paths },
    { { .op = OPEN_PULL,
        .flags = OPEN_F_KNOWN & ~(OPEN_F_DELTA_NEVER | OPEN_F_BASIS_FILE |
        OPEN_F_READINESS | OPEN_F_MKPATH | OPEN_F_REPLACE_DIRS |
        OPEN_F_ADOPT | OPEN_F_ADOPT_KEEP),
        .block_size = PROTO_MAX_BLOCK, .npaths = 2 }, seed_long_paths },
    { { .op = OPEN_STATUS, .block_size = PROTO_DEFAULT_BLOCK,
        .npaths = 1 }, seed_push_paths },
    { { .op = OPEN_CLEAN, .block_size = PROTO_DEFAULT_BLOCK,
        .npaths = 1 }, seed_push_paths },
    { { .op = OPEN_PUSH, .flags = OPEN_F_BASIS_FILE | OPEN_F_DEST_DIR,
        .block_size = PROTO_DEFAULT_BLOCK, .npaths = 2 }, seed_basis_paths },
    { { .op = OPEN_KEEP, .block_size = PROTO_DEFAULT_BLOCK, .npaths = 2 },
        seed_keep_paths },
    { { .op = OPEN_LIST, .flags = OPEN_F_READINESS,
        .block_size = PROTO_DEFAULT_BLOCK, .npaths = 1 }, seed_push_paths },
    { { .op = OPEN_KEEP, .flags = OPEN_F_MKPATH,
        .block_size = PROTO_DEFAULT_BLOCK, .npaths = 2 }, seed_keep_paths },
    { { .op = OPEN_PUSH, .flags = OPEN_F_MKPATH | OPEN_F_CHECKSUM,
        .block_size = PROTO_DEFAULT_BLOCK, .npaths = 1 }, seed_push_paths },
    { { .op = OPEN_PUSH, .flags = OPEN_F_REPLACE_DIRS,
        .block_size = PROTO_DEFAULT_BLOCK, .npaths = 1 }, seed_push_paths },
    { { .op = OPEN_PUSH, .flags = OPEN_F_ADOPT | OPEN_F_BASIS_FILE,
        .block_size = PROTO_DEFAULT_BLOCK, .npaths = 3 }, seed_adopt_paths },
    { { .op = OPEN_PUSH, .flags = OPEN_F_ADOPT | OPEN_F_ADOPT_KEEP |
        OPEN_F_BASIS_FILE, .block_size = PROTO_DEFAULT_BLOCK, .npaths = 3 },
        seed_adopt_paths },
};

static const struct msg_open_ok seed_open_ok[] = {
    { .root = SEED_STR("/home/user/backup") },
    { .root = { NULL, 0 } },
};

static const struct msg_error seed_error[] = {
    { .code = -2, .text = SEED_STR("src: No such file or directory") },
    { .code = FERRY_ERR_VERSION },
    { .code = FERRY_ERR_PROTOCOL, .text = { seed_long, PROTO_MAX_MESSAGE } },
};

static const struct msg_plan seed_plan[] = {
    { .ntop = 3, .entries_total = 10, .files_total = 7,
      .bytes_total = 123456789 },
    { .flags = PLAN_F_SINGLE_FILE, .ntop = 1, .entries_total = 1,
      .files_total = 1, .bytes_total = UINT64_MAX },
    { .ntop = 0 },
    { .flags = PLAN_F_LIVE },
};

static const struct msg_totals seed_totals[] = {
    { .entries_total = 1000000, .files_total = 999000,
      .bytes_total = 15u << 20 },
    { .entries_total = 0 },
};

static const struct msg_ready seed_ready[] = {
    { .rename = { NULL, 0 } },
    { .rename = SEED_STR("renamed.txt") },
    { .rename = { seed_name, FSX_NAME_MAX } },
};

static const struct msg_entry seed_entry[] = {
    { .id = 1, .kind = ENTRY_FILE, .mode = 0644, .size = 5000000,
      .mtime_sec = 1700000000, .mtime_nsec = 123456789, .has_hash = 1,
      .hash = SEED_HASH, .path = SEED_STR("dir/file.txt") },
    { .id = 2, .kind = ENTRY_FILE, .mode = 07777, .size = INT64_MAX,
      .mtime_sec = -1, .mtime_nsec = 999999999,
      .state = ENTRY_S_BUSY | ENTRY_S_TORN,
      .path = { seed_long, PROTO_MAX_PATH } },
    { .id = 6, .kind = ENTRY_FILE, .mode = 0600, .size = 1,
      .has_hash = 1, .hash = SEED_HASH, .state = ENTRY_S_WHOLE | ENTRY_S_IDLE,
      .path = SEED_STR("ckpt.pth") },
    { .id = 3, .kind = ENTRY_DIR, .mode = 0755, .mtime_sec = INT64_MIN,
      .path = SEED_STR("dir") },
    { .id = UINT32_MAX, .kind = ENTRY_SYMLINK, .mode = 0777,
      .path = SEED_STR("dir/link"), .target = SEED_STR("../elsewhere") },
    { .id = 5, .kind = ENTRY_SYMLINK, .path = SEED_STR("l"),
      .target = { seed_long, PROTO_MAX_LINK } },
};

static const struct msg_reply seed_reply[] = {
    { .id = 1, .action = REPLY_SKIP },
    { .id = 2, .action = REPLY_WANT },
    { .id = 4, .action = REPLY_WANT, .flags = REPLY_F_RESUME,
      .text = SEED_STR("a partial file from an older ferry was found") },
    { .id = 3, .action = REPLY_FAIL, .code = -13,
      .text = SEED_STR("dir/file.txt: Permission denied") },
    { .id = 5, .action = REPLY_SKIP, .flags = REPLY_F_ADOPTED },
};

static const struct msg_block seed_block[] = {
    { .id = 1, .offset = 0, .raw_len = 64, .hash = SEED_HASH,
      .data = (const uint8_t *)seed_long, .data_len = 64 },
    { .id = 2, .offset = 4u << 20, .flags = BLOCK_F_ZERO,
      .raw_len = PROTO_MAX_BLOCK, .hash = SEED_HASH },
    { .id = 3, .offset = 1u << 20, .flags = BLOCK_F_ZSTD, .raw_len = 65536,
      .hash = SEED_HASH, .data = (const uint8_t *)seed_long,
      .data_len = 40 },
    { .id = 4, .offset = INT64_MAX - 1, .raw_len = 1,
      .data = (const uint8_t *)"x", .data_len = 1 },
};

static const struct msg_file_end seed_file_end[] = {
    { .id = 1, .hash = SEED_HASH },
    { .id = 2, .code = -5, .text = SEED_STR("read: Input/output error") },
};

static const struct msg_file_done seed_file_done[] = {
    { .id = 1 },
    { .id = 2, .code = FERRY_ERR_HASH_MISMATCH,
      .text = SEED_STR("content hash mismatch") },
};

static const struct msg_notice seed_notice[] = {
    { .code = -13, .path = SEED_STR("dir/secret"),
      .text = SEED_STR("skipped: Permission denied") },
    { .code = 0 },
};

static const struct msg_summary seed_summary[] = {
    { 10, 2, 1, 123456789 },
    { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX },
};

static const struct msg_partial seed_partial[] = {
    { .path = SEED_STR("dir/big.iso"), .size = 10u << 20, .done = 4u << 20,
      .age_s = 3600 },
    { .path = { seed_long, PROTO_MAX_PATH }, .size = UINT64_MAX,
      .done = UINT64_MAX, .age_s = INT64_MAX },
    { .path = SEED_STR("f") },
};

static const struct hash128 seed_sig_hashes[3] = {
    SEED_HASH, SEED_HASH, SEED_HASH
};

static const struct msg_sigs seed_sigs[] = {
    { .id = 1, .first = 0, .count = 3, .flags = SIGS_F_HAVE,
      .hashes = seed_sig_hashes[0].b },
    { .id = 2, .first = 7, .count = PROTO_MAX_SIGS },
    { .id = UINT32_MAX, .first = INT64_MAX - 1, .count = 1 },
};

static const struct msg_match seed_match[] = {
    { .id = 1, .first = 0, .count = 3 },
    { .id = 2, .first = 1u << 20, .count = PROTO_MAX_SIGS },
};

static const uint8_t seed_delta_sig_bytes[3 * DELTA_SIG_LEN] = {
    0x12, 0x34, 0x56, 0x78, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    15, 16, 0xff, 0xff, 0xff, 0xff,
};

static const struct msg_delta_sigs seed_delta_sigs[] = {
    { .id = 1, .basis_size = 3 * 4096 + 1, .sig_block = PROTO_MIN_SIG_BLOCK,
      .first = 1, .count = 3, .sigs = seed_delta_sig_bytes },
    { .id = UINT32_MAX, .basis_size = INT64_MAX,
      .sig_block = PROTO_MAX_BLOCK, .first = 0, .count = 2,
      .sigs = seed_delta_sig_bytes },
};

static const struct msg_delta_blocks seed_delta_blocks[] = {
    { .id = 1, .block_size = PROTO_DEFAULT_BLOCK, .first = 0, .count = 3,
      .hashes = seed_delta_sig_bytes },
    { .id = UINT32_MAX, .block_size = PROTO_MAX_BLOCK, .first = 7,
      .count = 1, .hashes = seed_delta_sig_bytes },
};

static const struct msg_delta_op seed_delta_ops[] = {
    { .kind = DELTA_OP_LITERAL, .len = 5, .data = (const uint8_t *)"hello" },
    { .kind = DELTA_OP_COPY, .len = 4096, .from = 8192 },
    { .kind = DELTA_OP_COPY, .len = 1, .from = INT64_MAX - 1 },
};

static const struct {
    struct msg_delta m;
    size_t first, nops;
} seed_delta[] = {
    { { .id = 1, .offset = 0, .raw_len = 4101, .hash = SEED_HASH }, 0, 2 },
    { { .id = 2, .offset = 1u << 20, .raw_len = 1 }, 2, 1 },
};

static const struct msg_join seed_join[] = {
    { .transfer_id = { 1, 2, 3 }, .stream = 1 },
    { .transfer_id = { 0xff }, .stream = PROTO_MAX_STREAMS - 1 },
};

static const struct msg_delta_stop seed_delta_stop[] = {
    { .id = 0 },
    { .id = UINT32_MAX },
};

static const struct msg_delta_go seed_delta_go[] = {
    { .id = 0 },
    { .id = UINT32_MAX },
};

static const struct msg_retire seed_retire[] = {
    { .stream = 1 },
    { .stream = PROTO_MAX_STREAMS - 1 },
};

static const uint8_t seed_probe_bytes[] = "probe data";

static const struct msg_probe seed_probe[] = {
    { .ask = 1 },
    { .ask = PROTO_MAX_PROBE_ASK, .data = seed_probe_bytes, .len = 10 },
    { .ask = 0, .data = seed_probe_bytes, .len = 1 },
};

static const struct msg_readback seed_readback[] = {
    { .bytes = 512u << 20, .ns = 250000000 },
    { .bytes = UINT64_MAX, .ns = UINT64_MAX },
};

static const struct msg_stop seed_stop[] = {
    { .id = 500, .kept_files = 1, .kept_bytes = 8u << 20 },
    { .id = MSG_STOP_NONE, .kept_files = UINT64_MAX,
      .kept_bytes = UINT64_MAX },
};

static const struct msg_busy seed_busy[] = {
    { .holder = { "pid 4242, transfer 0a1b2c3d4e5f6a7b", 35 } },
    { .holder = { "", 0 } },
};

static const struct msg_vol_opts seed_vol_opts[] = {
    { .threshold = 256u << 10, .volume_size = UINT64_C(2) << 30 },
    { .threshold = 0, .volume_size = PROTO_MIN_VOLUME_SIZE,
      .compress = VOL_COMPRESS_NEVER },
    { .threshold = PROTO_MAX_PACK_THRESHOLD,
      .volume_size = PROTO_MAX_VOLUME_SIZE, .compress = VOL_COMPRESS_LEVEL,
      .level = VOL_LEVEL_MAX },
};

static const struct msg_vol_begin seed_vol_begin[] = {
    { .volume = 1 }, { .volume = UINT32_MAX },
};

static const struct msg_vol_file seed_vol_file[] = {
    { .volume = 1, .id = 0, .hash = SEED_HASH },
    { .volume = UINT32_MAX, .id = UINT32_MAX },
};

static const uint8_t seed_vol_bytes[] = { 0x28, 0xb5, 0x2f, 0xfd, 0 };

static const struct msg_vol_data seed_vol_data[] = {
    { .volume = 1, .data = seed_vol_bytes, .len = sizeof(seed_vol_bytes) },
    { .volume = 7, .data = seed_vol_bytes, .len = 1 },
};

static const struct msg_vol_end seed_vol_end[] = {
    { .volume = 1, .bytes = 1234, .files = 3 },
    { .volume = UINT32_MAX, .bytes = PROTO_MAX_VOLUME_SIZE,
      .files = PROTO_MAX_VOLUME_FILES },
};

static const struct msg_keep_vol seed_keep_vol[] = {
    { .volume = 1, .bytes = 1234, .sha256 = "0123456789abcdef0123456789abcde" },
    { .volume = PROTO_MAX_KEEP_VOLUMES, .bytes = PROTO_MAX_VOLUME_SIZE },
};

static const struct msg_keep_man seed_keep_man[] = {
    { .offset = 0, .data = (const uint8_t *)"{\"ferry\":1}\n", .len = 12 },
    { .offset = PROTO_MAX_KEEP_MANIFEST - 1, .data = seed_vol_bytes,
      .len = 1 },
};

static const struct msg_keep_done seed_keep_done[] = {
    { .volumes = 3, .manifest_bytes = 4096,
      .sha256 = "fedcba9876543210fedcba987654321" },
    { .volumes = PROTO_MAX_KEEP_VOLUMES,
      .manifest_bytes = PROTO_MAX_KEEP_MANIFEST },
};

static const uint8_t seed_actions[] = { 1, 2, 1 };
static const char *const seed_patterns[] = { "*.tmp", "/keep/**", "a b" };
static const char *const seed_long_pattern[] = { seed_pattern };

static const struct {
    size_t n;
    const uint8_t *actions;
    const char *const *patterns;
} seed_filters[] = {
    { 0, NULL, NULL },
    { 3, seed_actions, seed_patterns },
    { 1, seed_actions + 1, seed_long_pattern },
};

static const struct msg_space seed_space[] = {
    { .avail = 1u << 30, .size = 1u << 31 },
    { .avail = UINT64_MAX, .size = UINT64_MAX },
    { .offered = UINT64_MAX },
};

static const struct msg_basis seed_basis[] = {
    { .id = 7, .basis_size = 64u << 20, .hash = { { 0x5a, 0x01, 0xfe } },
      .path = { "ckpt/step-1000.safetensors", 26 } },
    { .id = UINT32_MAX, .basis_size = (uint64_t)INT64_MAX,
      .path = { "a", 1 } },
};

/* A body is pieces the receiver checks as it rebuilds: the message
 * bounds only its length. */
static const uint8_t seed_tensor_body[] = { 0, 0, 0, 19, 0, 1, 0, 0, 0,
    0, 4, 0, 0, 0, 0, 4, 1, 2, 3, 4 };

static const struct msg_tensor seed_tensor[] = {
    { .id = 7, .offset = 4u << 20, .raw_len = 1u << 20,
      .hash = { { 0x11, 0x22 } }, .body = seed_tensor_body,
      .body_len = sizeof(seed_tensor_body) },
    { .id = 1, .offset = 0, .raw_len = 2, .body = seed_tensor_body,
      .body_len = 1 },
};

/* END and JOIN_OK carry nothing: one seed each. */
static const uint8_t seed_end[1], seed_join_ok[1];

size_t
fuzz_seed_count(uint8_t type)
{
    switch (type) {
#define SEED_CASE(num, NAME, name, dir, stream0, cap, codec)                 \
    case num: return SEED_COUNT(seed_##name);
    MSG_TABLE(SEED_CASE)
#undef SEED_CASE
    default: return 0;
    }
}

int
fuzz_seed(uint8_t type, size_t i, struct buf *b)
{
    if (i >= fuzz_seed_count(type))
        return FERRY_ERR_USAGE;
    seed_fill();
    switch (type) {
    case MSG_HELLO: return msg_hello_encode(b, &seed_hello[i]);
    case MSG_OPEN:
        return msg_open_encode(b, &seed_open[i].m, seed_open[i].paths);
    case MSG_OPEN_OK: return msg_open_ok_encode(b, &seed_open_ok[i]);
    case MSG_ERROR: return msg_error_encode(b, &seed_error[i]);
    case MSG_PLAN: return msg_plan_encode(b, &seed_plan[i]);
    case MSG_READY: return msg_ready_encode(b, &seed_ready[i]);
    case MSG_ENTRY: return msg_entry_encode(b, &seed_entry[i]);
    case MSG_REPLY: return msg_reply_encode(b, &seed_reply[i]);
    case MSG_BLOCK: return msg_block_encode(b, &seed_block[i]);
    case MSG_FILE_END: return msg_file_end_encode(b, &seed_file_end[i]);
    case MSG_FILE_DONE: return msg_file_done_encode(b, &seed_file_done[i]);
    case MSG_NOTICE: return msg_notice_encode(b, &seed_notice[i]);
    case MSG_END: return msg_end_encode(b);
    case MSG_SUMMARY: return msg_summary_encode(b, &seed_summary[i]);
    case MSG_PARTIAL: return msg_partial_encode(b, &seed_partial[i]);
    case MSG_SIGS: return msg_sigs_encode(b, &seed_sigs[i]);
    case MSG_MATCH: return msg_match_encode(b, &seed_match[i]);
    case MSG_JOIN: return msg_join_encode(b, &seed_join[i]);
    case MSG_JOIN_OK: return msg_join_ok_encode(b);
    case MSG_RETIRE: return msg_retire_encode(b, &seed_retire[i]);
    case MSG_DELTA_STOP:
        return msg_delta_stop_encode(b, &seed_delta_stop[i]);
    case MSG_DELTA_GO:
        return msg_delta_go_encode(b, &seed_delta_go[i]);
    case MSG_READBACK: return msg_readback_encode(b, &seed_readback[i]);
    case MSG_TOTALS: return msg_totals_encode(b, &seed_totals[i]);
    case MSG_PROBE: return msg_probe_encode(b, &seed_probe[i]);
    case MSG_DELTA_SIGS: return msg_delta_sigs_encode(b, &seed_delta_sigs[i]);
    case MSG_DELTA_BLOCKS:
        return msg_delta_blocks_encode(b, &seed_delta_blocks[i]);
    case MSG_DELTA:
        return msg_delta_encode(b, &seed_delta[i].m,
            &seed_delta_ops[seed_delta[i].first], seed_delta[i].nops);
    case MSG_VOL_OPTS: return msg_vol_opts_encode(b, &seed_vol_opts[i]);
    case MSG_VOL_BEGIN: return msg_vol_begin_encode(b, &seed_vol_begin[i]);
    case MSG_VOL_FILE: return msg_vol_file_encode(b, &seed_vol_file[i]);
    case MSG_VOL_DATA: return msg_vol_data_encode(b, &seed_vol_data[i]);
    case MSG_VOL_END: return msg_vol_end_encode(b, &seed_vol_end[i]);
    case MSG_KEEP_VOL: return msg_keep_vol_encode(b, &seed_keep_vol[i]);
    case MSG_KEEP_MAN: return msg_keep_man_encode(b, &seed_keep_man[i]);
    case MSG_KEEP_DONE: return msg_keep_done_encode(b, &seed_keep_done[i]);
    case MSG_STOP: return msg_stop_encode(b, &seed_stop[i]);
    case MSG_BUSY: return msg_busy_encode(b, &seed_busy[i]);
    case MSG_FILTERS:
        return msg_filters_encode(b, seed_filters[i].actions,
            seed_filters[i].patterns, seed_filters[i].n);
    case MSG_SPACE: return msg_space_encode(b, &seed_space[i]);
    case MSG_BASIS: return msg_basis_encode(b, &seed_basis[i]);
    case MSG_TENSOR: return msg_tensor_encode(b, &seed_tensor[i]);
    default: return FERRY_ERR_USAGE;
    }
}

void
fuzz_seed_name(uint8_t type, size_t i, char out[FUZZ_SEED_NAME_MAX])
{
    size_t k;

    snprintf(out, FUZZ_SEED_NAME_MAX, "seed-%s-%zu", msg_type_name(type), i);
    for (k = 0; out[k] != '\0'; k++)
        out[k] = (char)tolower((unsigned char)out[k]);
}

/*
 * Journal seeds (proto/journal.h): whole journal files, a header and the
 * records after it. Records are for blocks 0, 1, 2... as the receiver
 * writes them; "torn" ends in part of a record, as a crash leaves it.
 */
static const struct journal_header seed_jheader[] = {
    { .block_size = PROTO_DEFAULT_BLOCK, .size = 10u << 20,
      .mtime_sec = 1700000000, .mtime_nsec = 123456789, .mode = 0644,
      .path = "dir/big.iso", .path_len = 11 },
    { .block_size = PROTO_MIN_BLOCK, .size = INT64_MAX, .mtime_sec = -1,
      .mtime_nsec = 999999999, .mode = 07777 },  /* path: seed_long */
    { .block_size = PROTO_MAX_BLOCK, .size = 0, .mtime_sec = INT64_MIN,
      .path = "f", .path_len = 1 },
};

static const struct {
    const char *name;
    size_t header;   /* index in seed_jheader */
    size_t records;  /* whole records after the header */
    size_t torn;     /* bytes of one more record */
} seed_journal[] = {
    { "header", 0, 0, 0 },
    { "records", 0, 3, 0 },
    { "torn", 0, 2, JOURNAL_RECORD_LEN / 2 + 3 },
    { "long", 1, 1, 0 },
    { "edges", 2, 2, JOURNAL_RECORD_LEN - 1 },
};

size_t
fuzz_journal_seed_count(void)
{
    return SEED_COUNT(seed_journal);
}

int
fuzz_journal_seed(size_t i, struct buf *b)
{
    struct journal_header h;
    struct journal_record rec = { 0, SEED_HASH };
    size_t k, start = buf_used(b);
    int r;

    if (i >= SEED_COUNT(seed_journal))
        return FERRY_ERR_USAGE;
    seed_fill();
    h = seed_jheader[seed_journal[i].header];
    if (h.path == NULL) {
        h.path = seed_long;
        h.path_len = PROTO_MAX_PATH;
    }
    if ((r = journal_header_encode(b, &h)) != 0)
        return r;
    for (k = 0; r == 0 && k <= seed_journal[i].records; k++) {
        rec.index = k;
        rec.hash.b[0] = (uint8_t)k;
        r = journal_record_encode(b, &rec);
        /* One more record than asked for, cut to its torn part. */
        if (r == 0 && k == seed_journal[i].records)
            buf_unreserve(b, JOURNAL_RECORD_LEN - seed_journal[i].torn);
    }
    if (r != 0)
        buf_unreserve(b, buf_used(b) - start);
    return r;
}

void
fuzz_journal_seed_name(size_t i, char out[FUZZ_SEED_NAME_MAX])
{
    snprintf(out, FUZZ_SEED_NAME_MAX, "seed-journal-%s",
        i < SEED_COUNT(seed_journal) ? seed_journal[i].name : "none");
}

/* Rendezvous datagrams: kind, scope length (0: the longest), bytes
 * (0: none, 1: a HELLO and JOIN's worth, 2: the most). */
static const struct {
    uint8_t kind;
    size_t scope;
    int bytes;
} seed_rv[] = {
    { RVMSG_JOIN, 3, 1 },
    { RVMSG_STOP, 3, 0 },
    { RVMSG_JOIN, 0, 2 },
    { RVMSG_STOP, 0, 0 },
};

size_t
fuzz_rvmsg_seed_count(void)
{
    return SEED_COUNT(seed_rv);
}

int
fuzz_rvmsg_seed(size_t i, struct buf *b)
{
    static char scope[RVMSG_MAX_SCOPE];
    static uint8_t bytes[RVMSG_MAX_BYTES];
    struct rvmsg m;

    if (i >= SEED_COUNT(seed_rv))
        return FERRY_ERR_USAGE;
    memset(scope, 'r', sizeof(scope));
    memcpy(scope, "rw:/", 4);
    memset(bytes, 0x5a, sizeof(bytes));
    memset(&m, 0, sizeof(m));
    m.kind = seed_rv[i].kind;
    memset(m.transfer_id, 0x11 * (int)(i + 1), sizeof(m.transfer_id));
    memset(m.transfer_key, 0xee - (int)i, sizeof(m.transfer_key));
    if (seed_rv[i].scope != 0) {
        m.scope = "any";
        m.scope_len = seed_rv[i].scope;
    } else {
        m.scope = scope;
        m.scope_len = sizeof(scope);
    }
    m.bytes = bytes;
    m.nbytes = seed_rv[i].bytes == 0 ? 0 : seed_rv[i].bytes == 1 ? 120 :
        sizeof(bytes);
    return rvmsg_encode(b, &m);
}

void
fuzz_rvmsg_seed_name(size_t i, char out[FUZZ_SEED_NAME_MAX])
{
    snprintf(out, FUZZ_SEED_NAME_MAX, "seed-rvmsg-%zu", i);
}

/* Blocks of tensor pieces: (mode, width, lead, raw, ref_off) per piece,
 * up to four pieces, each made from the fuzz basis changed a little. */
static const struct {
    struct {
        uint8_t mode, width, lead;
        uint32_t raw;
        uint64_t ref_off;
    } piece[4];
} seed_pieces[] = {
    { { { TENSOR_PLAIN, 1, 0, 100, 0 } } },
    { { { TENSOR_XOR, 2, 1, 1001, 10 } } },
    { { { TENSOR_SUB, 4, 0, 4096, 1000 } } },
    { { { TENSOR_XOR, 8, 3, 777, 5 } } },
    { { { TENSOR_PLAIN, 1, 0, 50, 0 }, { TENSOR_XOR, 2, 0, 2000, 64 },
        { TENSOR_PLAIN, 4, 2, 1000, 0 }, { TENSOR_SUB, 2, 1, 333, 9000 } } },
    { { { TENSOR_XOR, 2, 0, 65536, 0 } } },
};

size_t
fuzz_tensor_seed_count(void)
{
    return SEED_COUNT(seed_pieces);
}

int
fuzz_tensor_seed(size_t i, struct buf *b)
{
    struct tensor_piece_info info;
    struct tensor_piece *t;
    const uint8_t *basis;
    uint8_t *p;
    size_t blen, k, j, total = 0, start;
    int r = 0;

    if (i >= SEED_COUNT(seed_pieces))
        return FERRY_ERR_USAGE;
    basis = fuzz_tensor_basis(&blen);
    if ((t = tensor_piece_new()) == NULL ||
        (p = malloc(PROTO_MAX_TENSOR_PIECE)) == NULL) {
        tensor_piece_free(t);
        return FERRY_ERR_NOMEM;
    }
    start = buf_used(b);
    if ((r = buf_put_u32(b, 0)) != 0)
        goto out;
    for (k = 0; k < 4 && seed_pieces[i].piece[k].raw > 0; k++) {
        memset(&info, 0, sizeof(info));
        info.mode = seed_pieces[i].piece[k].mode;
        info.width = seed_pieces[i].piece[k].width;
        info.lead = seed_pieces[i].piece[k].lead;
        info.ref_off = seed_pieces[i].piece[k].ref_off;
        memcpy(p, basis + info.ref_off, seed_pieces[i].piece[k].raw);
        for (j = 0; j < seed_pieces[i].piece[k].raw; j += 7)
            p[j] ^= (uint8_t)(j & 3);
        if ((r = tensor_piece_put(t, &info, 1, p,
            seed_pieces[i].piece[k].raw, basis + info.ref_off, b)) != 0)
            goto out;
        total += seed_pieces[i].piece[k].raw;
    }
    buf_set_u32((uint8_t *)buf_ptr(b) + start, (uint32_t)total);
out:
    free(p);
    tensor_piece_free(t);
    return r;
}

void
fuzz_tensor_seed_name(size_t i, char out[FUZZ_SEED_NAME_MAX])
{
    snprintf(out, FUZZ_SEED_NAME_MAX, "seed-tensor-%zu", i);
}

/* Manifests: records written by vman_encode (path NULL: the seed's long
 * name), then text as another writer may have put it. */
static const struct vman_rec seed_vman_set[] = {
    { .type = VMAN_HEAD, .path = "data", .path_len = 4,
      .volume_size = UINT64_C(2147483648), .block_size = PROTO_DEFAULT_BLOCK },
    { .type = VMAN_DIR, .path = "data", .path_len = 4, .volume = 1,
      .offset = 1536 },
    { .type = VMAN_FILE, .path = "data/a.bin", .path_len = 10, .size = 5,
      .hash = SEED_HASH, .volume = 1, .offset = 3584 },
    { .type = VMAN_SYMLINK, .path = "data/l", .path_len = 6, .volume = 1,
      .offset = 4608 },
    { .type = VMAN_PIECE, .path = "data/\xff\"q\"", .path_len = 9,
      .index = 1, .size = 2144337920, .volume = 1, .offset = 6656 },
    { .type = VMAN_PIECE, .path = "data/\xff\"q\"", .path_len = 9,
      .index = 2, .file_offset = 2144337920, .size = 855662080,
      .volume = 2, .offset = 512 },
    { .type = VMAN_FILE, .path = "data/\xff\"q\"", .path_len = 9,
      .size = 3000000000u, .hash = SEED_HASH, .pieces = 2 },
    { .type = VMAN_FILE, .size = UINT64_MAX, .volume = UINT32_MAX,
      .offset = UINT64_MAX },
    { .type = VMAN_END, .volume = 2, .entries = 6, .files = 3,
      .size = 3000000005u },
};

static const char seed_vman_text[] =
    "{ \"type\" : \"dir\", \"x\": {\"n\":1}, \"path\":\"a\\/b\\u00e9\","
    "\"volume\":1,\"offset\":2,\"later\":7}\n"
    "{\"type\":\"file\",\"path_hex\":\"ff00\",\"size\":1,\"xxh3\":"
    "\"00112233445566778899aabbccddeeff\",\"volume\":1,\"offset\":0}\n"
    "{\"type\":\"end\",\"volumes\":1,\"entries\":1,\"files\":1,"
    "\"bytes\":1}";

size_t
fuzz_vman_seed_count(void)
{
    return 3;
}

int
fuzz_vman_seed(size_t i, struct buf *b)
{
    static char names[VMAN_MAX_PATH];
    struct vman_rec v;
    size_t k;
    int r = 0;

    if (i >= fuzz_vman_seed_count())
        return FERRY_ERR_USAGE;
    if (i == 2)
        return buf_put(b, seed_vman_text, sizeof(seed_vman_text) - 1);
    /* Seed 1: the longest name, of bytes that JSON escapes. */
    memset(names, i == 0 ? 'n' : 1, sizeof(names));
    for (k = 0; r == 0 && k < SEED_COUNT(seed_vman_set); k++) {
        v = seed_vman_set[k];
        if (v.path == NULL && v.type != VMAN_END) {
            v.path = names;
            v.path_len = sizeof(names);
        }
        r = vman_encode(b, &v);
    }
    return r;
}

void
fuzz_vman_seed_name(size_t i, char out[FUZZ_SEED_NAME_MAX])
{
    snprintf(out, FUZZ_SEED_NAME_MAX, "seed-vmanifest-%zu", i);
}

const struct fuzz_seeds fuzz_input_seeds[] = {
    { "journal", fuzz_journal_seed_count, fuzz_journal_seed,
      fuzz_journal_seed_name },
    { "rvmsg", fuzz_rvmsg_seed_count, fuzz_rvmsg_seed,
      fuzz_rvmsg_seed_name },
    { "tensor", fuzz_tensor_seed_count, fuzz_tensor_seed,
      fuzz_tensor_seed_name },
    { "vmanifest", fuzz_vman_seed_count, fuzz_vman_seed,
      fuzz_vman_seed_name },
    { NULL, NULL, NULL, NULL },
};
