/*
 * msg_table.h: every message of the protocol, one line each. The enum of
 * msg.h, msg_type_name, msg_type_known, msg_info and the fuzz table are
 * made from it, and a unit test holds proto/PROTOCOL.md's table to it.
 *
 *     MSG(number, NAME, name, dir, stream0, cap)
 *
 * name: the codec is msg_<name>_encode/_decode on struct msg_<name> (END
 * and JOIN_OK carry nothing and have no struct). dir: who sends it
 * (MSG_DIR_*). stream0: 1 if its receiver takes it on stream 0 only. cap:
 * the capability bits, any of which both sides set before it is sent (0:
 * none).
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
    MSG(1, HELLO, hello, BOTH, 0, 0)                                        \
    MSG(2, OPEN, open, CLIENT, 1, 0)                                        \
    MSG(3, OPEN_OK, open_ok, AGENT, 1, 0)                                   \
    MSG(4, ERROR, error, BOTH, 0, 0)                                        \
    MSG(5, PLAN, plan, SENDER, 1, 0)                                        \
    MSG(6, READY, ready, RECEIVER, 1, 0)                                    \
    MSG(7, ENTRY, entry, SENDER, 1, 0)                                      \
    MSG(8, REPLY, reply, RECEIVER, 1, 0)                                    \
    MSG(9, BLOCK, block, SENDER, 0, 0)                                      \
    MSG(10, FILE_END, file_end, SENDER, 0, 0)                               \
    MSG(11, FILE_DONE, file_done, RECEIVER, 0, 0)                           \
    MSG(12, NOTICE, notice, SENDER, 1, 0)                                   \
    MSG(13, END, end, SENDER, 1, 0)                                         \
    MSG(14, SUMMARY, summary, RECEIVER, 1, 0)                               \
    MSG(15, PARTIAL, partial, AGENT, 1, 0)                                  \
    MSG(16, SIGS, sigs, RECEIVER, 1, PROTO_CAP_RESUME)                      \
    MSG(17, MATCH, match, SENDER, 0, PROTO_CAP_RESUME)                      \
    MSG(18, JOIN, join, CLIENT, 0, PROTO_CAP_STREAMS)                       \
    MSG(19, JOIN_OK, join_ok, AGENT, 0, PROTO_CAP_STREAMS)                  \
    MSG(20, DELTA_SIGS, delta_sigs, RECEIVER, 1, PROTO_CAP_DELTA)           \
    MSG(21, DELTA, delta, SENDER, 0, PROTO_CAP_DELTA)                       \
    MSG(22, DELTA_BLOCKS, delta_blocks, RECEIVER, 1, PROTO_CAP_DELTA_BLOCKS) \
    MSG(23, DELTA_STOP, delta_stop, SENDER, 0, PROTO_CAP_DELTA_STOP)        \
    MSG(24, DELTA_GO, delta_go, SENDER, 0, PROTO_CAP_DELTA_GO)              \
    MSG(26, FILTERS, filters, CLIENT, 1, PROTO_CAP_FILTERS)                 \
    MSG(27, SPACE, space, AGENT, 1, PROTO_CAP_SPACE)                        \
    MSG(28, RETIRE, retire, RECEIVER, 1, PROTO_CAP_RETIRE)                  \
    MSG(29, READBACK, readback, RECEIVER, 1, PROTO_CAP_READBACK)            \
    MSG(30, PROBE, probe, BOTH, 1, PROTO_CAP_PROBE)                         \
    MSG(31, TOTALS, totals, SENDER, 1, PROTO_CAP_LIVE)                      \
    MSG(32, VOL_OPTS, vol_opts, CLIENT, 1, PROTO_CAP_VOLUMES)               \
    MSG(33, VOL_BEGIN, vol_begin, SENDER, 0,                                \
        PROTO_CAP_VOLUMES | PROTO_CAP_KEEP)                                 \
    MSG(34, VOL_FILE, vol_file, SENDER, 0, PROTO_CAP_VOLUMES)               \
    MSG(35, VOL_DATA, vol_data, SENDER, 0,                                  \
        PROTO_CAP_VOLUMES | PROTO_CAP_KEEP)                                 \
    MSG(36, VOL_END, vol_end, SENDER, 0, PROTO_CAP_VOLUMES)                 \
    MSG(37, KEEP_VOL, keep_vol, BOTH, 1, PROTO_CAP_KEEP)                    \
    MSG(38, KEEP_MAN, keep_man, CLIENT, 1, PROTO_CAP_KEEP)                  \
    MSG(39, KEEP_DONE, keep_done, CLIENT, 1, PROTO_CAP_KEEP)                \
    MSG(40, STOP, stop, RECEIVER, 0, PROTO_CAP_STOP)                        \
    MSG(41, BUSY, busy, AGENT, 1, PROTO_CAP_BUSY)                           \
    MSG(42, BASIS, basis, RECEIVER, 1, PROTO_CAP_TENSORS)                   \
    MSG(43, TENSOR, tensor, SENDER, 0, PROTO_CAP_TENSORS)

/* The largest number above (msg.c checks it). */
#define MSG_TYPE_MAX 43

#endif
