/*
 * volrecv.h: a receiver's volumes of small files (PROTO_CAP_VOLUMES; the
 * sender's side is volsend.h, the wire proto/PROTOCOL.md, Volumes).
 *
 * Each stream may carry one volume at a time: VOL_BEGIN, then VOL_FILE
 * records and VOL_DATA bytes, then VOL_END. The bytes go straight into the
 * volume reader (engine/volume/volread.c) as they arrive, which extracts
 * members beneath the destination's root fd with the rules of `ferry unpack`
 * (no "..", no absolute name, nothing behind a symlink, no links, devices
 * or FIFOs, staged and committed in durable batches) and checks each
 * member against the record the sender announced for it: a regular file
 * whose path and size are those of an entry this receiver answered WANT
 * to, and whose XXH3 file hash is the record's. So a hostile volume
 * writes nothing outside the destination and nothing the receiver did not
 * ask for, and no file is committed before its hash was checked.
 *
 * A volume's files are answered with FILE_DONE once its end is read and
 * everything in it committed; any problem with a volume stops the
 * transfer with a message naming it (a damaged or hostile volume is not
 * a per-file failure). Bounds: at most PROTO_MAX_VOLUME_FILES records and
 * PROTO_MAX_VOLUME_SIZE bytes per volume; records only for wanted files
 * no data came for, each in one volume, once (incoming.h).
 *
 * Not thread-safe: the receivers of one transfer step one at a time.
 */
#ifndef FERRY_ENGINE_VOLRECV_H
#define FERRY_ENGINE_VOLRECV_H

#include <stdint.h>

#include "../../common/buf.h"
#include "../../proto/frame.h"
#include "volsend.h"
#include "../xfer.h"

struct dest;
struct incoming;
struct volrecv;

struct volrecv *volrecv_new(struct incoming *in, struct dest *d,
    uint32_t block_size, struct xfer *x);
/* Abandons volumes being read (their staging goes; what they committed
 * stays). */
void volrecv_free(struct volrecv *vr);

/* The client's settings, sent to a pulling sender after READY. */
void volrecv_set_prefs(struct volrecv *vr, const struct volsend_opts *o);
/* Appends VOL_OPTS to out when there are settings and the peer has
 * volumes. */
int volrecv_send_prefs(struct volrecv *vr, struct buf *out) FERRY_WUR;

/* Answers (FILE_DONE to out) the files committed behind the readers
 * since; *pending is 1 while a commit behind will answer more: it wakes
 * the transfer's loop when done (xfer.wake), and the receiver waits for
 * that (conn_step.wait_wake). Returns 0 or a fatal error (what was
 * written behind failed). */
int volrecv_poll(struct volrecv *vr, struct buf *out,
    int *pending) FERRY_WUR;

/* A VOL_BEGIN, VOL_FILE, VOL_DATA or VOL_END on stream, of a transfer
 * with PROTO_CAP_VOLUMES (the caller's to check); FILE_DONE for committed
 * files to out. Returns 0 or a fatal error. */
int volrecv_frame(struct volrecv *vr, unsigned stream, const struct frame *f,
    struct buf *out) FERRY_WUR;

/* The stream was lost (or the attempt ended: all streams): its volume is
 * abandoned and its files may come again, in blocks; volume frames it
 * still brings (sent before the sender lost it) are ignored. */
void volrecv_stream_lost(struct volrecv *vr, unsigned stream);
/* A new connection after a cut: what each open volume's reader read whole
 * is committed and counted as sent; the rest may come again. */
void volrecv_restart(struct volrecv *vr);
/* The transfer ended (every file answered): the readers and their
 * staging directories go, so that the state directory can. */
void volrecv_end(struct volrecv *vr);

#endif
