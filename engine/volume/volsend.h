/*
 * volsend.h: a sender's small files, packed into volumes on their way
 * (PROTO_CAP_VOLUMES; the wire side is proto/PROTOCOL.md, Volumes).
 *
 * A file the receiver wants (REPLY WANT, no RESUME) that is smaller than the
 * threshold is not cut into blocks: the plan hands its id here (volsend_take),
 * and any stream's sender packs it into that stream's volume (volsend_work):
 * the file is read whole into memory, checked unchanged, and added to a tar
 * member of the volume (engine/volume/volwrite.c), whose compressed bytes go
 * out as they are made. Nothing is written to disk on this side, and nothing
 * is kept per file but its id until the receiver's FILE_DONE. So volumes are
 * units of scheduling across the streams: each stream fills its own, from one
 * queue.
 *
 * A stream's volume is ended when nothing more can join it soon: the
 * queue is empty and the plan can offer no more entries now (its window
 * is full of files waiting for their volume's end, or all were offered).
 * Its size never passes the volume size; a full volume is followed by the
 * next one on the same stream.
 *
 * Compression adapts (auto), between zstd frames: a volume's frame ends
 * after VOLSEND_FRAME_BYTES of file data (between members; the volume
 * stays one .zst), and a volume after VOLSEND_ADAPT_BYTES. A set of
 * volumes starts at zstd's fastest level (near a raw copy) when a sample
 * of its first file does not shrink by 3% at level 1, else where the last
 * one left off. After each frame, one whose data did not shrink by 3%
 * makes the next use the fastest level; otherwise the level goes up while
 * the sender spent less than half of the frame's time reading and
 * compressing (the link or the receiver is the bottleneck: spending CPU
 * saves wire bytes for free), and down, not below 1, when it spent more
 * than 80% (compression is) once the set has put out VOLSEND_BUFFERED
 * (before that, buffers took everything at once, whatever the link).
 * Data that compresses never goes to the fastest level: the bytes a
 * level 1 saves cost less CPU to leave out than to encrypt, move and
 * decrypt (measured on loopback, where all of that shares two cores).
 * Blocks the sender compresses (OPEN_F_COMPRESS) take the same level, at
 * least 1, and judge it the same way every VOLSEND_FRAME_BYTES of them
 * (volsend_blocks_done).
 *
 * A lost stream other than 0 gives back the files it carried that are
 * not yet done (volsend_stream_lost): they are sent again in blocks
 * (plan_file_unpack says why not in another volume). A new attempt
 * starts afresh (volsend_restart): files done are not offered again, so
 * a volume whose files were all committed is never sent again.
 *
 * Not thread-safe: the senders of one transfer step one at a time.
 */
#ifndef FERRY_ENGINE_VOLSEND_H
#define FERRY_ENGINE_VOLSEND_H

#include <stdint.h>

#include "../../common/buf.h"
#include "../../proto/msg_vol.h"
#include "../xfer.h"

/* Files below this size travel packed unless the user says otherwise.
 * It is the size below which a file has no resume journal
 * (PARTIAL_JOURNAL_MIN): such a file is sent again whole after a cut
 * anyway, so packing it loses nothing, while it gains compression
 * across files and saves its per-file messages and staging. */
#define VOLSEND_DEFAULT_THRESHOLD (8u << 20)
/* A volume ends after this much file data even when it could hold more:
 * the receiver commits a volume's files at its end. */
#define VOLSEND_ADAPT_BYTES (64u << 20)
/* A volume's zstd frame ends after this much file data, so that the
 * level adapts several times a volume. */
#define VOLSEND_FRAME_BYTES (8u << 20)
/* Queued files asked of the disk ahead of their turn (volsend_read_ahead). */
#define VOLSEND_READ_AHEAD (16u << 20)
/* Where the adaptive level starts: zstd's default (as `zstd -3`). */
#define VOLSEND_START_LEVEL 1
#define VOLSEND_MIN_LEVEL (-5)
#define VOLSEND_MAX_LEVEL 9
/* What the pipes take before the link can hold a sender back (the conn's
 * CONN_TX_HIGH, the socket's buffer, an SSH channel's window): until a
 * set has put out this much, a busy sender says nothing of the link. */
#define VOLSEND_BUFFERED (8u << 20)
/* The level goes up or down at most once this long (over every stream):
 * long enough to hold several frames and the waits between them. */
#define VOLSEND_ADAPT_WINDOW_NS (200u * 1000000u)
/* While a live scan (plan.h) may still bring files, a volume nothing can
 * join right now stays open this long after its last file, and at most
 * VOLSEND_LINGER_MAX_NS after its first: a slow scan's every trickle in
 * a volume of its own would cost the receiver a commit each, and one
 * volume for the whole scan would commit nothing until it ends. */
#define VOLSEND_LINGER_NS (100u * 1000000u)
#define VOLSEND_LINGER_MAX_NS (1000u * 1000000u)

struct plan;
struct volsend;

/* What the user asked for (also what VOL_OPTS carries). */
struct volsend_opts {
    uint64_t threshold;      /* 0: nothing is packed */
    uint64_t volume_size;    /* 0: VOLUME_DEFAULT_SIZE */
    uint8_t compress;        /* enum vol_compress */
    uint8_t level;           /* VOL_COMPRESS_LEVEL */
    /* Not on the wire: the link is short (the first SSH handshake was
     * quick, or local:), where CPU binds, not the link: auto keeps zstd's
     * fastest level (text still shrinks by about half) instead of
     * adapting. */
    uint8_t short_link;
    /* Not on the wire: files a volume holds at most; 0 (or more) for
     * PROTO_MAX_VOLUME_FILES, all the receiver takes. A volume of small
     * files the receiver commits as fast as they come is not bounded by
     * the plan's window, and empty files add no bytes. */
    uint32_t max_files;
};

/* The packer of plan p (which owns it, see plan_set_packer). */
struct volsend *volsend_new(struct plan *p, const struct volsend_opts *o,
    struct xfer *x);
void volsend_free(struct volsend *vs);

/*
 * VOL_OPTS from the client (a pull: the agent sends): replaces the
 * options. FERRY_ERR_PROTOCOL if a file was taken already (they must
 * come before any REPLY) or options came twice.
 */
int volsend_on_opts(struct volsend *vs, const struct msg_vol_opts *m)
    FERRY_WUR;

/* The plan offers a wanted file of size bytes: 1 if it is packed (then
 * the plan sends no blocks and no FILE_END for it), else 0. */
int volsend_take(struct volsend *vs, uint32_t id, uint64_t size);

/*
 * Packs queued files on stream into out while out has room (none when
 * take is 0: the stream is spared, plan_spares), and ends the stream's
 * volume when nothing more can join it soon. *busy is set when it added
 * anything. Returns 0 or a fatal error (a file that cannot be read fails
 * alone: FILE_END with its code).
 */
int volsend_work(struct volsend *vs, unsigned stream, int take,
    struct buf *out, int *busy) FERRY_WUR;

/* 1 while stream has a volume begun and not ended. */
int volsend_open(const struct volsend *vs, unsigned stream);
/* Milliseconds (at least 1) until the linger of stream's open volume
 * ends (VOLSEND_LINGER_NS), when it may end at the next look; 0 when no
 * volume is open or its linger is over already. */
unsigned volsend_linger_ms(const struct volsend *vs, unsigned stream);

/* A stream other than 0 was lost: its files not yet done go back to
 * the plan, to be sent in blocks (its volume is abandoned). */
void volsend_stream_lost(struct volsend *vs, unsigned stream);
/* A new attempt: queues and volumes are dropped (the plan offers again
 * what is not done). */
void volsend_restart(struct volsend *vs);

/* Level the next volume starts with (for tests). */
int volsend_level(const struct volsend *vs);
/* The level the sender compresses blocks at (OPEN_F_COMPRESS): the one
 * the volumes use (fixed by the user, or where auto has brought it), but
 * never below zstd's level 1: a file that does not compress stops being
 * tried after its first blocks (sender.c), so the fast modes, which
 * store such data nearly for free, add nothing there. vs may be NULL (no
 * packer): ZST_LEVEL. */
int volsend_block_level(const struct volsend *vs);
/* Blocks the sender compressed: in raw bytes tried, out what they came
 * to (in, for those that did not shrink), ns it spent reading and
 * compressing them. Every VOLSEND_FRAME_BYTES of them judge the level as
 * a volume's frame does, so a transfer of big files alone adapts too.
 * vs may be NULL. */
void volsend_blocks_done(struct volsend *vs, uint64_t in, uint64_t out,
    uint64_t ns);

#endif
