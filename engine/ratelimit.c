#include "ratelimit.h"

static void
ratelimit_refill(struct ratelimit *l, uint64_t now_ns)
{
    double cap = (double)l->rate * RATELIMIT_BURST_MS / 1000.0;

    if (now_ns > l->last_ns) {
        l->tokens += (double)(now_ns - l->last_ns) * (double)l->rate / 1e9;
        l->last_ns = now_ns;
    }
    if (l->tokens > cap)
        l->tokens = cap;
}

void
ratelimit_init(struct ratelimit *l, uint64_t rate, uint64_t now_ns)
{
    l->rate = rate > 0 ? rate : 1;
    l->tokens = (double)l->rate * RATELIMIT_BURST_MS / 1000.0;
    l->last_ns = now_ns;
}

void
ratelimit_take(struct ratelimit *l, uint64_t n, uint64_t now_ns)
{
    ratelimit_refill(l, now_ns);
    l->tokens -= (double)n;
}

unsigned
ratelimit_wait_ms(struct ratelimit *l, uint64_t now_ns)
{
    double ms;

    ratelimit_refill(l, now_ns);
    if (l->tokens >= 0)
        return 0;
    ms = -l->tokens * 1000.0 / (double)l->rate;
    /* Round up: waking a little early would only wait again. */
    return ms >= 600000.0 ? 600000u : (unsigned)ms + 1;
}
