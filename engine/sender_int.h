/*
 * sender_int.h: the state the pieces of the sender share (private to
 * engine/sender*.c; the interface is sender.h). sender.c keeps the
 * conversation and hands out runs; sender_block.c sends a run's blocks.
 */
#ifndef FERRY_ENGINE_SENDER_INT_H
#define FERRY_ENGINE_SENDER_INT_H

#include "../common/buf.h"
#include "../proto/msg.h"
#include "delta/delta_match.h"
#include "plan.h"
#include "sender.h"
#include "tensor/tensor_codec.h"

enum snd_state { SND_PLAN, SND_WAIT_READY, SND_RUN, SND_WAIT_SUMMARY,
    SND_DONE };

/* Blocks of a file that may fail to shrink before we stop trying: data
 * that is already compressed (checkpoints, images) costs nothing then. */
#define SENDER_ZST_TRIES 4

/* sender.deferred: the block waits alone (sender_glance). */
#define SENDER_HOLD 2

struct sender {
    struct plan *p;
    struct xfer *x;
    unsigned stream;
    enum snd_state state;
    size_t notices_sent;
    uint8_t *scratch;       /* a block: compression, comparisons */
    struct zst *zst;        /* with OPEN_F_COMPRESS */
    /* Delta: the file around the block being matched, the ops found,
     * and where the last block's search left off. */
    uint8_t *window;
    size_t window_cap;
    uint32_t window_id;       /* the window holds [window_lo, window_hi) */
    uint64_t window_lo, window_hi;  /* of this file */
    struct delta_result *ops;
    struct delta_carry carry;
    int deferred;             /* the last block waits for the basis
                                 (SENDER_HOLD: alone, whatever came
                                 before) */
    uint32_t defer_id;        /* ... and the block after the last one */
    uint64_t defer_next;      /* that waited alone, or 0 */
    uint64_t step_read;       /* file bytes this step read (step_full) */
    uint64_t seen;            /* types taken that come once, by bit */
    /* Tensors: the codec's work space and a block's pieces. */
    struct tensor_codec *tc;
    struct buf tbody;
    int ready_due;            /* PLAN went, READY not yet in */
    int totals_due;           /* a live PLAN went, TOTALS not yet */
};

/* sender.c */
int sender_say_basis(struct sender *s, uint32_t id, struct buf *out);
int sender_step_full(const struct sender *s, const struct buf *out);

/* sender_block.c: works on the stream's run until it is done or the
 * output is full. */
int sender_run(struct sender *s, struct plan_work *w, struct buf *out);

#endif
