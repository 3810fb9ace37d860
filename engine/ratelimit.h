/*
 * ratelimit.h: --bwlimit, a token bucket shared by every stream of a
 * transfer (the conns of one group, engine/conn.h).
 *
 * Bytes are taken when they are written to or read from a transport;
 * the bucket may go into debt (a step writes up to a few MiB at once),
 * and a conn waits while it is in debt, so the rate over seconds is the
 * limit however the bytes are cut. At most RATELIMIT_BURST_MS of unused
 * rate is saved up, so a pause does not buy a burst. Loop thread only;
 * time is passed in (nanoseconds), so the arithmetic is unit-tested.
 */
#ifndef FERRY_ENGINE_RATELIMIT_H
#define FERRY_ENGINE_RATELIMIT_H

#include <stdint.h>

#define RATELIMIT_BURST_MS 100

struct ratelimit {
    uint64_t rate;     /* read-only: bytes per second, > 0 */
    double tokens;     /* private: bytes that may go now (< 0: debt) */
    uint64_t last_ns;  /* private */
};

/* Starts full at time now_ns. */
void ratelimit_init(struct ratelimit *l, uint64_t rate, uint64_t now_ns);

/* Counts n bytes that went at now_ns. */
void ratelimit_take(struct ratelimit *l, uint64_t n, uint64_t now_ns);

/* Milliseconds to wait before more may go (0: now). */
unsigned ratelimit_wait_ms(struct ratelimit *l, uint64_t now_ns);

#endif
