/*
 * waker.h: how a background thread wakes the loop that steps the roles.
 *
 * A role that waits for a thread (a scan publishing entries, a commit
 * behind a volume's reader) says so in its step (conn_step.wait_wake);
 * the thread calls waker_wake once it has published what the role waits
 * for, and the loop steps the waiting roles at once, instead of a timer
 * stepping them over and over to look. The owner of the loop points the
 * waker at itself while it runs (conn_group_wake_start) and away again
 * before it stops, so a thread that outlives one loop (a client's scan
 * goes on across attempts) wakes nothing rather than a loop that is gone.
 *
 * Zeroed storage is a waker that wakes nothing, so a struct xfer set up
 * with memset needs no more. A wake is never lost: the thread wakes after
 * publishing, and the role looks at the state again in the step the wake
 * brings (or, if a step was running, in one more step).
 */
#ifndef FERRY_ENGINE_WAKER_H
#define FERRY_ENGINE_WAKER_H

#include <stdatomic.h>

typedef void waker_fn(void *ctx);

struct waker {
    atomic_int lock;    /* private: 0 free; guards fn and ctx */
    waker_fn *fn;       /* private: NULL: nobody to wake */
    void *ctx;          /* private */
};

/* Points w at fn(ctx) (fn NULL: nowhere). Once it returns, no call of
 * the fn it replaced is running or will start. Any thread. */
void waker_set(struct waker *w, waker_fn *fn, void *ctx);

/* Wakes whoever w points at, if anyone; w may be NULL. Any thread; fn
 * must not block (uv_async_send, a write to an eventfd). */
void waker_wake(struct waker *w);

#endif
