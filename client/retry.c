#include "retry.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../common/log.h"

/* The waiter's tick: how often it looks at the clocks and the probe. */
#define RETRY_TICK_MS 250
/* A probe connect gets this long, then counts as "down"; a new one
 * starts this often. */
#define RETRY_PROBE_TIMEOUT_MS 2000
#define RETRY_PROBE_EVERY_MS 2000

int
retry_next(const struct retry_policy *p, struct retry_state *s,
    uint64_t progress, double now_s, struct retry_decision *d)
{
    double used, left, delay;

    memset(d, 0, sizeof(*d));
    if (progress > s->progress) {
        /* The last connection moved the transfer: a new streak. */
        s->failures = 0;
        s->progress = progress;
    }
    if (s->failures == 0)
        s->streak_s = now_s;
    used = now_s - s->streak_s;
    left = p->budget_s - used;
    if (p->max_failures == 0 || p->budget_s <= 0 || left <= 0 ||
        (p->max_failures > 0 && s->failures >= p->max_failures))
        return 0;
    s->failures++;
    delay = s->failures > 30 ? p->max_wait_s :
        (double)(1u << (s->failures - 1));
    if (delay > p->max_wait_s)
        delay = p->max_wait_s;
    if (delay > left)
        delay = left;
    d->delay_s = delay;
    d->give_up_s = left;
    return 1;
}

int
retry_reach_better(enum retry_reach worst, enum retry_reach now)
{
    return worst != RETRY_REACH_UNKNOWN && now > worst;
}

static double
retry_clock(clockid_t id)
{
    struct timespec ts;

    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double
retry_sleep_total(void)
{
#ifdef CLOCK_BOOTTIME
    return retry_clock(CLOCK_BOOTTIME) - retry_clock(CLOCK_MONOTONIC);
#else
    return 0;
#endif
}

int
retry_woke(double sleep_before, double sleep_now)
{
    return sleep_now - sleep_before > 1.0;
}

double
retry_now(void)
{
    return retry_clock(CLOCK_MONOTONIC);
}

void
retry_wait_init(struct retry_wait *w, uv_loop_t *loop)
{
    memset(w, 0, sizeof(*w));
    w->loop = loop;
}

static void
retry_tcp_closed(uv_handle_t *h)
{
    struct retry_wait *w = h->data;

    w->tcp_open = 0;
}

/* Closes the probe's socket; the handle is free again once tcp_open is
 * 0 (in a later loop iteration). */
static void
retry_tcp_close(struct retry_wait *w)
{
    if (w->tcp_open && !uv_is_closing((uv_handle_t *)&w->tcp))
        uv_close((uv_handle_t *)&w->tcp, retry_tcp_closed);
}

static void
retry_tick_closed(uv_handle_t *h)
{
    struct retry_wait *w = h->data;

    w->running = 0;
}

/* Ends the wait: closes what is open; retry_wait_run returns once it is
 * closed (a lookup in the thread pool that cannot be cancelled is waited
 * for). */
static void
retry_wait_end(struct retry_wait *w, int why)
{
    if (w->end != 0)
        return;
    w->end = why;
    uv_timer_stop(&w->tick);
    uv_close((uv_handle_t *)&w->tick, retry_tick_closed);
    retry_tcp_close(w);
    if (w->resolving)
        (void)uv_cancel((uv_req_t *)&w->gai);
}

/* A probe's outcome. */
static void
retry_probe_done(struct retry_wait *w, enum retry_reach reach)
{
    w->connecting = 0;
    retry_tcp_close(w);
    if (w->end != 0)
        return;
    log_debug("probe of %s: %s", w->host, reach == RETRY_REACH_UP ? "up" :
        reach == RETRY_REACH_REFUSED ? "refused" : "down");
    if (retry_reach_better(w->worst, reach)) {
        log_info("%s answers again: reconnecting now", w->host);
        retry_wait_end(w, RETRY_END_NETWORK);
        return;
    }
    if (w->worst == RETRY_REACH_UNKNOWN || reach < w->worst)
        w->worst = reach;
}

static void
retry_connected(uv_connect_t *req, int status)
{
    struct retry_wait *w = req->data;

    if (status == UV_ECANCELED)
        return;     /* closed by a timeout or the end: counted there */
    retry_probe_done(w, status == 0 ? RETRY_REACH_UP :
        status == UV_ECONNREFUSED ? RETRY_REACH_REFUSED : RETRY_REACH_DOWN);
}

static void
retry_connect(struct retry_wait *w)
{
    int r;

    if ((r = uv_tcp_init(w->loop, &w->tcp)) != 0) {
        retry_probe_done(w, RETRY_REACH_UNKNOWN);
        return;
    }
    w->tcp_open = 1;
    w->tcp.data = w;
    w->creq.data = w;
    w->connecting = 1;
    w->probe_ms = uv_now(w->loop);
    if ((r = uv_tcp_connect(&w->creq, &w->tcp,
        (const struct sockaddr *)&w->addr, retry_connected)) != 0)
        retry_probe_done(w, r == UV_ECONNREFUSED ? RETRY_REACH_REFUSED :
            RETRY_REACH_DOWN);
}

static void
retry_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    struct retry_wait *w = req->data;

    w->resolving = 0;
    if (status == 0 && res != NULL &&
        res->ai_addrlen <= sizeof(w->addr)) {
        memcpy(&w->addr, res->ai_addr, res->ai_addrlen);
        w->have_addr = 1;
    }
    uv_freeaddrinfo(res);
    if (w->end != 0)
        return;
    if (w->have_addr)
        retry_connect(w);
    else
        retry_probe_done(w, RETRY_REACH_DOWN);
}

/* Starts a probe: a lookup first if the address is not known yet (it is
 * kept: a server's address rarely changes, and a lookup while the
 * network is down can take seconds). */
static void
retry_probe(struct retry_wait *w)
{
    struct addrinfo hints;

    w->next_probe_ms = uv_now(w->loop) + RETRY_PROBE_EVERY_MS;
    if (w->have_addr) {
        retry_connect(w);
        return;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    w->gai.data = w;
    if (uv_getaddrinfo(w->loop, &w->gai, retry_resolved, w->host, w->port,
        &hints) == 0)
        w->resolving = 1;
}

static void
retry_tick(uv_timer_t *t)
{
    struct retry_wait *w = t->data;
    uint64_t now = uv_now(w->loop);

    if (retry_woke(w->sleep0, retry_sleep_total())) {
        log_info("woke from sleep: reconnecting now");
        retry_wait_end(w, RETRY_END_WAKE);
        return;
    }
    if (now >= w->deadline_ms) {
        retry_wait_end(w, RETRY_END_TIMER);
        return;
    }
    if (w->host == NULL)
        return;
    if (w->connecting && now - w->probe_ms >= RETRY_PROBE_TIMEOUT_MS)
        retry_probe_done(w, RETRY_REACH_DOWN);
    else if (!w->connecting && !w->resolving && !w->tcp_open &&
        now >= w->next_probe_ms)
        retry_probe(w);
}

int
retry_wait_run(struct retry_wait *w, double delay_s, const char *host,
    unsigned port)
{
    if (delay_s <= 0)
        return RETRY_END_TIMER;
    w->end = 0;
    w->worst = RETRY_REACH_UNKNOWN;
    w->host = host;
    snprintf(w->port, sizeof(w->port), "%u", port);
    w->sleep0 = retry_sleep_total();
    uv_update_time(w->loop);
    w->deadline_ms = uv_now(w->loop) + (uint64_t)(delay_s * 1000);
    uv_timer_init(w->loop, &w->tick);
    w->tick.data = w;
    uv_timer_start(&w->tick, retry_tick, RETRY_TICK_MS, RETRY_TICK_MS);
    w->running = 1;
    if (host != NULL)
        retry_probe(w);
    /* Not until the loop has nothing left to do: other handles on it
     * (a listening socket, in a test) may be active all along. */
    while (w->running || w->tcp_open || w->resolving)
        uv_run(w->loop, UV_RUN_ONCE);
    return w->end;
}

void
retry_wait_stop(struct retry_wait *w)
{
    if (w->running && w->end == 0)
        retry_wait_end(w, RETRY_END_STOPPED);
}
