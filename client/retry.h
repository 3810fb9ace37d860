/*
 * retry.h: when to reconnect after a lost connection, and how to wait.
 *
 * The policy is a pure function of the failures so far and the time
 * (retry_next): reconnect with a backoff of 1, 2, 4, ... up to --retry-wait
 * seconds, and give up after --retry-for seconds (default 15 minutes) or
 * --retries failures (default: no limit), whichever comes first, counting
 * both from the last time the transfer made progress. Time is measured
 * on a clock that stops while the machine sleeps (CLOCK_MONOTONIC): a
 * laptop closed for an hour has not spent its budget.
 *
 * The wait (retry_wait_run) ends early when retrying at once is worth it:
 * after the machine woke from sleep (CLOCK_BOOTTIME, which counts sleep,
 * jumped ahead of CLOCK_MONOTONIC), or when short TCP connects to the
 * SSH server, made every few seconds, do better than they did before:
 * a connect that failed (timed out, no route) is now refused or accepted,
 * or one refused is now accepted. So a long outage is polled cheaply
 * instead of slept through, and the transfer goes on as soon as the
 * network is back.
 */
#ifndef FERRY_CLIENT_RETRY_H
#define FERRY_CLIENT_RETRY_H

#include <stdint.h>

#include <uv.h>

#include "../common/err.h"

#define RETRY_DEFAULT_FOR_S (15 * 60)

/* The limits, from the command line. */
struct retry_policy {
    int max_failures;    /* --retries: -1 no limit, 0 never retry */
    double budget_s;     /* --retry-for: 0 never retry */
    double max_wait_s;   /* --retry-wait: the longest pause */
};

/* Zero it before the first failure. */
struct retry_state {
    int failures;        /* read-only: in a row without progress */
    double streak_s;     /* private: when the failures began */
    uint64_t progress;   /* private: progress seen at the last failure */
};

struct retry_decision {
    double delay_s;      /* wait this long (or less, see retry_wait_run) */
    double give_up_s;    /* time without progress left in the budget */
};

/*
 * After a failed attempt: progress is a counter that grows while the
 * transfer moves (bytes and files done), now_s the time on a clock that
 * stops during sleep. Returns 1 to retry after d->delay_s, 0 to give up.
 * The delay is never past the end of the budget, so the last try comes
 * at its end.
 */
int retry_next(const struct retry_policy *p, struct retry_state *s,
    uint64_t progress, double now_s, struct retry_decision *d) FERRY_WUR;

/* How a probe connect to the server went; better is larger. */
enum retry_reach {
    RETRY_REACH_UNKNOWN = 0,
    RETRY_REACH_DOWN,        /* timed out, no route, no address */
    RETRY_REACH_REFUSED,     /* the host answers, nothing listens */
    RETRY_REACH_UP           /* accepted */
};

/* 1 if the probe result now is better than the worst seen in this wait:
 * the network (or the server) is back.
 * Exported for the tests; otherwise used only in its file. */
int retry_reach_better(enum retry_reach worst, enum retry_reach now);

/* Seconds the machine slept while the process ran, so far: CLOCK_BOOTTIME
 * minus CLOCK_MONOTONIC (0 where there is no such clock).
 * Exported for the tests; otherwise used only in its file. */
double retry_sleep_total(void);
/* 1 if the machine slept between the two readings of retry_sleep_total
 * (more than a second, which the clocks' drift never reaches).
 * Exported for the tests; otherwise used only in its file. */
int retry_woke(double sleep_before, double sleep_now);
/* The policy's clock: CLOCK_MONOTONIC in seconds. */
double retry_now(void);

/* Why a wait ended. */
enum retry_end {
    RETRY_END_TIMER = 1,     /* the delay passed */
    RETRY_END_WAKE,          /* the machine woke from sleep */
    RETRY_END_NETWORK,       /* a probe did better */
    RETRY_END_STOPPED        /* retry_wait_stop (Ctrl-C) */
};

/* A waiter; keep it for the whole run (it remembers the server's
 * address). Private. */
struct retry_wait {
    uv_loop_t *loop;
    uv_timer_t tick;
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_getaddrinfo_t gai;
    const char *host;
    char port[8];
    struct sockaddr_storage addr;
    int have_addr, resolving, connecting, tcp_open, running, end;
    enum retry_reach worst;
    uint64_t deadline_ms, probe_ms, next_probe_ms;
    double sleep0;
};

void retry_wait_init(struct retry_wait *w, uv_loop_t *loop);

/*
 * Waits up to delay_s on the loop (running it), probing host:port (the
 * SSH server; NULL for none) every few seconds. Returns an enum
 * retry_end. Handles it made are closed before it returns.
 */
int retry_wait_run(struct retry_wait *w, double delay_s, const char *host,
    unsigned port);

/* Ends a running wait (from a callback on the same loop). */
void retry_wait_stop(struct retry_wait *w);

#endif
