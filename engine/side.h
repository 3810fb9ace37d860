/*
 * side.h: one end of a transfer, as the client and the agent both make
 * it: what its streams share and the role each stream runs.
 *
 * A sending side owns the plan and its volume packer; a receiving side
 * owns the destination and its incoming files (and through them the
 * volume reader), and borrows the signature store set on its incoming.
 * Each stream's role (a sender or a receiver) is made by the side
 * (side_stream), kept and freed by it: so the client's attempts and the
 * agent's OPEN and JOIN build an end one way, and what an end does when
 * one of its streams dies is said once (side_stream_lost).
 *
 * Threads: a side's streams step one at a time (a conn group), so the
 * side needs no lock; side_stream_lost only sets flags, and may be called
 * from the loop while a step runs.
 */
#ifndef FERRY_ENGINE_SIDE_H
#define FERRY_ENGINE_SIDE_H

#include <stdint.h>

#include "conn.h"
#include "dest.h"
#include "incoming.h"
#include "manifest.h"
#include "plan.h"
#include "receiver.h"
#include "sender.h"
#include "volume/volsend.h"
#include "xfer.h"

struct side;

/*
 * A sending side over mf (borrowed; live: it is still being scanned, see
 * plan_new_live), offering in blocks of block_size with OPEN flags. vo:
 * how the packer packs (threshold 0: nothing until VOL_OPTS says how);
 * NULL makes none, as a plan used without volumes has. NULL when out of
 * memory.
 */
struct side *side_new_send(struct manifest *mf, int live,
    uint32_t block_size, uint32_t flags, const struct volsend_opts *vo,
    struct xfer *x);

/* A receiving side into path (dest_new, with flags and the transfer's
 * id), taking blocks of block_size. NULL when out of memory or when the
 * destination cannot be made (xfer says why). */
struct side *side_new_recv(const char *path, uint32_t flags,
    const uint8_t transfer_id[16], uint32_t block_size, struct xfer *x);

/* Frees the roles it made, then what it owns: what is complete is
 * committed before the destination goes. */
void side_free(struct side *sd);

/* A receiving side's stream 0 accepts only entries under these names
 * (receiver_expect_tops; borrowed until stream 0's role is made). */
void side_set_tops(struct side *sd, const char *const *names, size_t n);

/* A receiving side whose sender is far away and may not see a stream
 * die (a pull's client: a link that hangs tells the agent nothing):
 * side_stream_lost tells it (RETIRE, on stream 0). */
void side_set_tell_lost(struct side *sd);

int side_is_sender(const struct side *sd);
struct plan *side_plan(const struct side *sd);         /* sending, or NULL */
struct dest *side_dest(const struct side *sd);         /* receiving, ... */
struct incoming *side_incoming(const struct side *sd);

/* The role of stream index, made and kept by the side (one made for
 * this index before, by an earlier attempt, is freed first: its stream
 * has closed). */
int side_stream(struct side *sd, unsigned index, conn_step_fn **step,
    void **role) FERRY_WUR;
/* The role of stream index, of the kind the side runs, or NULL. */
struct sender *side_sender(const struct side *sd, unsigned index);
struct receiver *side_receiver(const struct side *sd, unsigned index);
/* Frees the role of stream index, whose conn has closed. */
void side_stream_end(struct side *sd, unsigned index);

/*
 * Stream index (a further one) is gone before the transfer ended (its
 * conn closed, however it ended): a sending side gives its runs, and the
 * blocks it sent of files not done, to the others (plan_stream_lost); a
 * receiving side that tells its sender has stream 0 say so. Flags only,
 * any thread. Returns 1 when the other streams must hear of it even if
 * idle: poke their group. A role that sees its own end in a step acts at
 * once, as this would (sender.c); a receiver's volume reader is closed
 * in steps only (volrecv_stream_lost: at the stream's end, or when the
 * sender's data shows it gave the stream up), never from here.
 */
int side_stream_lost(struct side *sd, unsigned index);

/* OPEN flags from now on (plan_set_flags, dest_add_flags). */
void side_add_flags(struct side *sd, uint32_t flags);
/* An attempt ended: the next one starts from what is done. */
void side_restart(struct side *sd);

#endif
