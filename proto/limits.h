/*
 * limits.h: every bound the decoders enforce, in one place.
 *
 * A length read from the wire is compared with its limit here before
 * anything is allocated or read. Changing a limit is a protocol change:
 * raise PROTO_VERSION with it.
 */
#ifndef FERRY_PROTO_LIMITS_H
#define FERRY_PROTO_LIMITS_H

#define PROTO_MAGIC "FRY1"
#define PROTO_VERSION_MIN 4
#define PROTO_VERSION_MAX 4

/* Frame: u32 payload length, u8 type, payload. */
#define PROTO_FRAME_HEADER 5
/* Largest block of file data in one message, and the default. */
#define PROTO_MAX_BLOCK (4u << 20)
#define PROTO_MIN_BLOCK (64u << 10)
#define PROTO_DEFAULT_BLOCK (1u << 20)
/* A block message carries at most a block plus its fixed fields. */
#define PROTO_MAX_FRAME (PROTO_MAX_BLOCK + 1024u)
/* Paths are relative, '/'-separated; see fsx_path_check. */
#define PROTO_MAX_PATH 4095u
#define PROTO_MAX_LINK 4095u
/* Paths in one OPEN (sources of a pull). */
#define PROTO_MAX_OPEN_PATHS 1024u
/* Bytes of path data in one OPEN. */
#define PROTO_MAX_OPEN_BYTES (256u << 10)
#define PROTO_MAX_MESSAGE 1024u
#define PROTO_MAX_SOFTWARE 64u
/* BUSY's holder: the destination's lock file's line ("pid N, transfer
 * X"). */
#define PROTO_MAX_HOLDER 128u
#define PROTO_TRANSFER_ID_LEN 16u
/* The transfer's secret: OPEN and JOIN carry it, nothing else shows it. */
#define PROTO_TRANSFER_KEY_LEN 32u
/* Block hashes in one SIGS frame, blocks in one MATCH. */
#define PROTO_MAX_SIGS 65536u
/* Delta: the smallest signature piece, and the most ops in one DELTA
 * (the sender sends a block that needs more as BLOCK). */
#define PROTO_MIN_SIG_BLOCK (4u << 10)
#define PROTO_MAX_DELTA_OPS 4096u
/* Connections of one transfer (stream 0 opens it, the others JOIN). */
#define PROTO_MAX_STREAMS 32u
/* PROBE: data in one message, and bytes one message may ask back (the
 * agent owes at most this much at any time). */
#define PROTO_MAX_PROBE_DATA (1u << 20)
#define PROTO_MAX_PROBE_ASK (16u << 20)
/* Tensor pieces (proto/tensor_piece.h): the bytes one piece rebuilds (a
 * block's worth), and the pieces in one sequence (one block's). */
#define PROTO_MAX_TENSOR_PIECE PROTO_MAX_BLOCK
#define PROTO_MAX_TENSOR_PIECES 4096u

#endif
