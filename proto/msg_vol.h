/*
 * msg_vol.h: the messages that carry small files packed in volumes
 * (PROTO_CAP_VOLUMES; see proto/PROTOCOL.md, Volumes). Types 32-36.
 *
 * A volume is one tar archive in zstd frames (engine/volume/volume.h; a sender
 * ends a frame every VOLSEND_FRAME_BYTES of file data).
 * On a stream it travels as VOL_BEGIN, then VOL_FILE and VOL_DATA frames
 * in any mix (each VOL_FILE before the data that holds its member), then
 * VOL_END. Every field that sizes something is bounded here; what the
 * fields must agree with (the open volume, wanted ids) is the receiver's
 * check (engine/volume/volrecv.c).
 */
#ifndef FERRY_PROTO_MSG_VOL_H
#define FERRY_PROTO_MSG_VOL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "../common/hash.h"
#include "msg.h"

/* Largest file that may travel packed: it is read whole into memory by
 * the sender, so this bounds that buffer. */
#define PROTO_MAX_PACK_THRESHOLD (16u << 20)
/* Volume sizes a peer may ask for: the smallest the volume writer takes
 * (64 KiB) up to 1 TiB. */
#define PROTO_MIN_VOLUME_SIZE (UINT64_C(64) << 10)
#define PROTO_MAX_VOLUME_SIZE (UINT64_C(1) << 40)
/* Files in one volume (a sender cuts its volumes there). */
#define PROTO_MAX_VOLUME_FILES (1u << 16)

/* VOL_OPTS compress modes. */
enum vol_compress {
    VOL_COMPRESS_AUTO = 0,   /* the sender adapts the level */
    VOL_COMPRESS_NEVER = 1,  /* the fastest level (zstd stores raw) */
    VOL_COMPRESS_LEVEL = 2   /* level given */
};
#define VOL_LEVEL_MIN 1
#define VOL_LEVEL_MAX 19

/* VOL_OPTS (32), client -> agent on stream 0 after READY of a pull: the
 * user's settings for the agent's sender. threshold 0: nothing packed. */
struct msg_vol_opts {
    uint64_t threshold;      /* 0..PROTO_MAX_PACK_THRESHOLD */
    uint64_t volume_size;    /* PROTO_MIN..PROTO_MAX_VOLUME_SIZE */
    uint8_t compress;        /* enum vol_compress */
    uint8_t level;           /* VOL_COMPRESS_LEVEL: 1..19, else 0 */
};

/* VOL_BEGIN (33): u32 volume (>= 1). */
struct msg_vol_begin {
    uint32_t volume;
};

/* VOL_FILE (34): the next member of the volume is the file of entry id,
 * whose file hash is hash. */
struct msg_vol_file {
    uint32_t volume;
    uint32_t id;
    struct hash128 hash;
};

/* VOL_DATA (35): the volume's next compressed bytes (1..PROTO_MAX_BLOCK,
 * borrowed from the frame). */
struct msg_vol_data {
    uint32_t volume;
    const uint8_t *data;
    size_t len;
};

/* VOL_END (36): the volume is complete: bytes compressed bytes in all,
 * holding files members. */
struct msg_vol_end {
    uint32_t volume;
    uint64_t bytes;
    uint32_t files;          /* 0..PROTO_MAX_VOLUME_FILES */
};

/* Encoders return FERRY_ERR_USAGE for fields out of range (a caller's
 * bug), or buf's errors; on failure b is as it was. */
int msg_vol_opts_encode(struct buf *b, const struct msg_vol_opts *m)
    FERRY_WUR;
int msg_vol_begin_encode(struct buf *b, const struct msg_vol_begin *m)
    FERRY_WUR;
int msg_vol_file_encode(struct buf *b, const struct msg_vol_file *m)
    FERRY_WUR;
int msg_vol_data_encode(struct buf *b, const struct msg_vol_data *m)
    FERRY_WUR;
int msg_vol_end_encode(struct buf *b, const struct msg_vol_end *m)
    FERRY_WUR;

/* Decoders: SHORT, TRAILING, TOO_LARGE (a length or count over its
 * limit) or FORMAT (a field out of range); on failure *m is zeroed. */
int msg_vol_opts_decode(const uint8_t *p, size_t n, struct msg_vol_opts *m)
    FERRY_WUR;
int msg_vol_begin_decode(const uint8_t *p, size_t n,
    struct msg_vol_begin *m) FERRY_WUR;
int msg_vol_file_decode(const uint8_t *p, size_t n, struct msg_vol_file *m)
    FERRY_WUR;
int msg_vol_data_decode(const uint8_t *p, size_t n, struct msg_vol_data *m)
    FERRY_WUR;
int msg_vol_end_decode(const uint8_t *p, size_t n, struct msg_vol_end *m)
    FERRY_WUR;

#endif
