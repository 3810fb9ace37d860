#include "waker.h"

#include <sched.h>
#include <stddef.h>

/* A spin lock, not a mutex, so that zeroed storage is a ready waker: it
 * is held only around a store or a call that does not block. */
static void
waker_lock(struct waker *w)
{
    while (atomic_exchange_explicit(&w->lock, 1, memory_order_acquire))
        sched_yield();
}

static void
waker_unlock(struct waker *w)
{
    atomic_store_explicit(&w->lock, 0, memory_order_release);
}

void
waker_set(struct waker *w, waker_fn *fn, void *ctx)
{
    waker_lock(w);
    w->fn = fn;
    w->ctx = ctx;
    waker_unlock(w);
}

void
waker_wake(struct waker *w)
{
    if (w == NULL)
        return;
    waker_lock(w);
    if (w->fn != NULL)
        w->fn(w->ctx);
    waker_unlock(w);
}
