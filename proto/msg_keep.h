/*
 * msg_keep.h: the messages of a push with --keep-volumes (OPEN KEEP, with
 * PROTO_CAP_KEEP; see proto/PROTOCOL.md, Kept volumes). Types 37-39.
 *
 * The client packs its sources into a set of volumes as `ferry pack`
 * does and the agent stores them as files in a directory. The volumes
 * travel as VOL_BEGIN and VOL_DATA (msg_vol.h) and end with KEEP_VOL; the
 * manifest travels in KEEP_MAN; KEEP_DONE ends the set. Every field that
 * sizes something is bounded here; what the fields must agree with (the
 * volume being written, the bytes that came) is the agent's check
 * (engine/volume/volkeep.c).
 */
#ifndef FERRY_PROTO_MSG_KEEP_H
#define FERRY_PROTO_MSG_KEEP_H

#include <stddef.h>
#include <stdint.h>

#include "../common/buf.h"
#include "msg.h"

/* Volumes in a set: five digits in their names. */
#define PROTO_MAX_KEEP_VOLUMES 99999u
/* A set's manifest: about 200 bytes a file, so room for billions. */
#define PROTO_MAX_KEEP_MANIFEST (UINT64_C(1) << 40)
#define PROTO_SHA256_LEN 32

/*
 * KEEP_VOL (37): volume (1..PROTO_MAX_KEEP_VOLUMES) of bytes bytes (at
 * most PROTO_MAX_VOLUME_SIZE) with this SHA-256. From the agent, before
 * the client sends anything: a volume it holds already. From the
 * client: the end of the volume it sent, or, with no volume being sent,
 * that the agent's copy is the one the set needs.
 */
struct msg_keep_vol {
    uint32_t volume;
    uint64_t bytes;
    uint8_t sha256[PROTO_SHA256_LEN];
};

/* KEEP_MAN (38): the manifest's bytes from offset on (1..PROTO_MAX_BLOCK,
 * borrowed from the frame); offset 0 starts it again. */
struct msg_keep_man {
    uint64_t offset;
    const uint8_t *data;
    size_t len;
};

/* KEEP_DONE (39): the set is volumes 1..volumes and a manifest of
 * manifest_bytes with this SHA-256. */
struct msg_keep_done {
    uint32_t volumes;
    uint64_t manifest_bytes;
    uint8_t sha256[PROTO_SHA256_LEN];
};

/* Encoders return FERRY_ERR_USAGE for fields out of range (a caller's
 * bug), or buf's errors; on failure b is as it was. */
int msg_keep_vol_encode(struct buf *b, const struct msg_keep_vol *m)
    FERRY_WUR;
int msg_keep_man_encode(struct buf *b, const struct msg_keep_man *m)
    FERRY_WUR;
int msg_keep_done_encode(struct buf *b, const struct msg_keep_done *m)
    FERRY_WUR;

/* Decoders: SHORT, TRAILING, TOO_LARGE (a length or count over its
 * limit) or FORMAT (a field out of range); on failure *m is zeroed. */
int msg_keep_vol_decode(const uint8_t *p, size_t n, struct msg_keep_vol *m)
    FERRY_WUR;
int msg_keep_man_decode(const uint8_t *p, size_t n, struct msg_keep_man *m)
    FERRY_WUR;
int msg_keep_done_decode(const uint8_t *p, size_t n,
    struct msg_keep_done *m) FERRY_WUR;

#endif
