/*
 * tensor_gov.h: whether a transfer's checkpoint blocks go as tensor
 * differences (engine/tensor_codec.h) or whole, by the rate each gives.
 *
 * Coding pays where the link is slower than the codec: the blocks then
 * leave at the link's rate over the share of bytes the codec leaves, and
 * the codec waits for the link. Where the link is faster (loopback, a
 * fast LAN), the codec is what the transfer waits for, and whole blocks
 * may go faster than coded ones. No setting tells which: the governor
 * measures. It counts windows of file bytes sent (at least
 * TENSOR_GOV_WINDOW_BYTES and TENSOR_GOV_WINDOW_NS each); the first,
 * while buffers fill, is not judged. The second is followed by a window
 * of the other kind, and the faster of the two (whole by TENSOR_GOV_MARGIN
 * at least) is kept for TENSOR_GOV_HOLD windows, doubling each time the
 * same side wins again (to TENSOR_GOV_HOLD_MAX), then tried against the
 * other once more, so a link that changes is followed. Coding that won
 * while the codec was busy less than half the time waited for the link:
 * whole blocks are not tried again for TENSOR_GOV_HOLD_MAX windows.
 *
 * Why a trial, and not the codec's busy share alone: where the link's
 * cost is this machine's own cipher (libssh2 encrypts in this process),
 * the codec and the link share the cores, and a codec busy half the time
 * says nothing of what whole blocks would do. Rates are file bytes per
 * second of wall time, so a receiver that decodes slowly counts too.
 *
 * The senders of one transfer step one at a time (plan.h): no lock.
 */
#ifndef FERRY_ENGINE_TENSOR_GOV_H
#define FERRY_ENGINE_TENSOR_GOV_H

#include <stdint.h>

#define TENSOR_GOV_WINDOW_BYTES (8u << 20)
#define TENSOR_GOV_WINDOW_NS 100000000ull
/* Whole blocks are kept only when at least this much faster. */
#define TENSOR_GOV_MARGIN 1.10
#define TENSOR_GOV_HOLD 4u
#define TENSOR_GOV_HOLD_MAX 64u

enum tensor_gov_mode { TENSOR_GOV_CODE = 0, TENSOR_GOV_WHOLE };

struct tensor_gov {
    enum tensor_gov_mode mode;   /* read-only: for the next block */
    int warm;                    /* 1 once the first window has passed */
    uint64_t t0, in, busy;       /* the window: start, bytes, codec ns */
    double code_rate, whole_rate; /* bytes/s of the last window of each */
    unsigned hold;               /* windows before the other is tried */
    unsigned hold_next;          /* the hold after the next decision */
    enum tensor_gov_mode probing_from; /* the mode a trial window left */
    int probing;                 /* the window going on is a trial */
    int code_link_bound;         /* the last coded window waited for it */
};

/* start: how the first windows go. Coded where blocks are compressed
 * anyway (a long link, or -z: plan.h), else whole (a short link, where
 * the codec rarely wins and the trial finds it when it does). */
void tensor_gov_init(struct tensor_gov *g, enum tensor_gov_mode start);

/*
 * A block of len file bytes went (coded when g->mode was CODE, spending
 * codec_ns in the codec, else whole), at now_ns (CLOCK_MONOTONIC). Ends
 * the window when it is full and sets the mode for the next; returns 1
 * when the mode changed.
 */
int tensor_gov_block(struct tensor_gov *g, uint64_t len, uint64_t codec_ns,
    uint64_t now_ns);

#endif
