/*
 * msg_table.h: every message of the protocol, one line each. The enum of
 * msg.h, msg_type_name, msg_type_known, msg_info, msg_codec_of and the
 * fuzz table are made from it, and unit tests hold proto/PROTOCOL.md's
 * table and the fuzz seeds to it. A new message is a line here, its
 * struct and codec, and its seeds in tests/fuzz/fuzz_seed.c.
 *
 *     MSG(number, NAME, name, dir, stream0, cap, codec)
 *
 * name: the codec is msg_<name>_encode/_decode on struct msg_<name> (END
 * and JOIN_OK carry nothing and have no struct). dir: who sends it
 * (MSG_DIR_*). stream0: 1 if its receiver takes it on stream 0 only. cap:
 * the capability bits, any of which both sides set before it is sent (0:
 * none). codec: F, a list of fields (MSG_CODEC in msg_int.h, which
 * msg_codec_of gives); H, written by hand: the data frames (BLOCK, DELTA,
 * TENSOR), which are hot, and shapes a list does not say (OPEN's and
 * FILTERS's counted lists, ENTRY's fields that depend on others, END and
 * JOIN_OK with nothing).
 */
#ifndef FERRY_PROTO_MSG_TABLE_H
#define FERRY_PROTO_MSG_TABLE_H

enum msg_dir {
    MSG_DIR_BOTH = 1,
    MSG_DIR_CLIENT,    /* client -> agent */
    MSG_DIR_AGENT,     /* agent -> client */
    MSG_DIR_SENDER,    /* sender -> receiver */
    MSG_DIR_RECEIVER,  /* receiver -> sender */
};

#define MSG_TABLE(MSG)                                                      \
    MSG(1, HELLO, hello, BOTH, 0, 0, F)                                     \
    MSG(2, OPEN, open, CLIENT, 1, 0, H)                                     \
    MSG(3, OPEN_OK, open_ok, AGENT, 1, 0, F)                                \
    MSG(4, ERROR, error, BOTH, 0, 0, F)                                     \
    MSG(5, PLAN, plan, SENDER, 1, 0, F)                                     \
    MSG(6, READY, ready, RECEIVER, 1, 0, F)                                 \
    MSG(7, ENTRY, entry, SENDER, 1, 0, H)                                   \
    MSG(8, REPLY, reply, RECEIVER, 1, 0, F)                                 \
    MSG(9, BLOCK, block, SENDER, 0, 0, H)                                   \
    MSG(10, FILE_END, file_end, SENDER, 0, 0, F)                            \
    MSG(11, FILE_DONE, file_done, RECEIVER, 0, 0, F)                        \
    MSG(12, NOTICE, notice, SENDER, 1, 0, F)                                \
    MSG(13, END, end, SENDER, 1, 0, H)                                      \
    MSG(14, SUMMARY, summary, RECEIVER, 1, 0, F)                            \
    MSG(15, PARTIAL, partial, AGENT, 1, 0, F)                               \
    MSG(16, SIGS, sigs, RECEIVER, 1, PROTO_CAP_RESUME, F)                   \
    MSG(17, MATCH, match, SENDER, 0, PROTO_CAP_RESUME, F)                   \
    MSG(18, JOIN, join, CLIENT, 0, PROTO_CAP_STREAMS, F)                    \
    MSG(19, JOIN_OK, join_ok, AGENT, 0, PROTO_CAP_STREAMS, H)               \
    MSG(20, DELTA_SIGS, delta_sigs, RECEIVER, 1, PROTO_CAP_DELTA, F)        \
    MSG(21, DELTA, delta, SENDER, 0, PROTO_CAP_DELTA, H)                    \
    MSG(22, DELTA_BLOCKS, delta_blocks, RECEIVER, 1,                        \
        PROTO_CAP_DELTA_BLOCKS, F)                                          \
    MSG(23, DELTA_STOP, delta_stop, SENDER, 0, PROTO_CAP_DELTA_STOP, F)     \
    MSG(24, DELTA_GO, delta_go, SENDER, 0, PROTO_CAP_DELTA_GO, F)           \
    MSG(26, FILTERS, filters, CLIENT, 1, PROTO_CAP_FILTERS, H)              \
    MSG(27, SPACE, space, AGENT, 1, PROTO_CAP_SPACE, F)                     \
    MSG(28, RETIRE, retire, RECEIVER, 1, PROTO_CAP_RETIRE, F)               \
    MSG(29, READBACK, readback, RECEIVER, 1, PROTO_CAP_READBACK, F)         \
    MSG(30, PROBE, probe, BOTH, 1, PROTO_CAP_PROBE, F)                      \
    MSG(31, TOTALS, totals, SENDER, 1, PROTO_CAP_LIVE, F)                   \
    MSG(32, VOL_OPTS, vol_opts, CLIENT, 1, PROTO_CAP_VOLUMES, F)            \
    MSG(33, VOL_BEGIN, vol_begin, SENDER, 0,                                \
        PROTO_CAP_VOLUMES | PROTO_CAP_KEEP, F)                              \
    MSG(34, VOL_FILE, vol_file, SENDER, 0, PROTO_CAP_VOLUMES, F)            \
    MSG(35, VOL_DATA, vol_data, SENDER, 0,                                  \
        PROTO_CAP_VOLUMES | PROTO_CAP_KEEP, F)                              \
    MSG(36, VOL_END, vol_end, SENDER, 0, PROTO_CAP_VOLUMES, F)              \
    MSG(37, KEEP_VOL, keep_vol, BOTH, 1, PROTO_CAP_KEEP, F)                 \
    MSG(38, KEEP_MAN, keep_man, CLIENT, 1, PROTO_CAP_KEEP, F)               \
    MSG(39, KEEP_DONE, keep_done, CLIENT, 1, PROTO_CAP_KEEP, F)             \
    MSG(40, STOP, stop, RECEIVER, 0, PROTO_CAP_STOP, F)                     \
    MSG(41, BUSY, busy, AGENT, 1, PROTO_CAP_BUSY, F)                        \
    MSG(42, BASIS, basis, RECEIVER, 1, PROTO_CAP_TENSORS, F)                \
    MSG(43, TENSOR, tensor, SENDER, 0, PROTO_CAP_TENSORS, H)

/* The largest number above (msg.c checks it). */
#define MSG_TYPE_MAX 43

#endif
