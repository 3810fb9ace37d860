/*
 * How many streams by default (client/width.c), over links that a model
 * stands in for: each stream moves at most its window per round trip,
 * the link at most its rate, the two ends at most what their cores
 * encrypt; a period's rate is that, a few percent off. The client opens
 * width_first's streams, then asks width_more after each period.
 */
#include <stdint.h>

#include "../../client/width.h"
#include "check.h"

#define MIB 1048576.0
#define GIB (1ull << 30)

struct model {
    uint64_t rtt_ms;
    double window;      /* bytes per stream per round trip */
    double link;        /* bytes/s */
    double cores;       /* bytes/s both ends encrypt at most in all */
    double per_core;    /* ... one stream (its own core), bytes/s */
};

static double
model_rate(const struct model *m, unsigned n, unsigned period)
{
    /* A window is not quite full all of every round trip. */
    double per = m->window * 1000.0 / (double)m->rtt_ms * 0.95, r;
    /* Noise: the same runs give the same figures. */
    static const double noise[] = { 0.97, 1.02, 0.99, 1.03, 0.96, 1.01 };

    if (per > m->per_core)
        per = m->per_core;
    r = per * n;
    if (r > m->link)
        r = m->link;
    if (r > m->cores)
        r = m->cores;
    return r * noise[(period + n) % 6];
}

/* The best the model allows with max streams, noise aside. */
static double
model_best(const struct model *m, unsigned max)
{
    double per = m->window * 1000.0 / (double)m->rtt_ms * 0.95, r;

    if (per > m->per_core)
        per = m->per_core;
    r = per * max;
    if (r > m->link)
        r = m->link;
    return r > m->cores ? m->cores : r;
}

/* Runs the client's choice over m: streams at the end, in *periods the
 * measured periods it took to settle, in *rate the last period's. */
static unsigned
model_run(const struct model *m, uint64_t window_seen, uint64_t bytes,
    unsigned *periods, double *rate)
{
    struct width_link l = { m->rtt_ms, window_seen };
    struct width_period before = { 0, 0 }, now;
    unsigned n = width_first(&l, bytes, WIDTH_LONG_MAX), more, p;

    for (p = 0; p < 8; p++) {
        now.streams = n;
        now.rate = model_rate(m, n, p);
        *rate = now.rate;
        if ((more = width_more(&l, &before, &now, WIDTH_LONG_MAX)) == 0)
            break;
        before = now;
        n += more;
    }
    *periods = p;
    return n;
}

/* A push (sshd's 2 MiB window) at 50, 100 and 200 ms, over 100 Mbit/s
 * to 10 Gbit/s, idle ends: within 90% of the best the model allows, and
 * on links of 1 Gbit/s or less from the first streams opened, at once. */
TEST(width_push_long_links)
{
    static const uint64_t rtts[] = { 50, 100, 200 };
    static const double links[] = { 100e6 / 8, 1e9 / 8, 10e9 / 8 };
    unsigned i, j, n, periods;
    double rate;

    for (i = 0; i < 3; i++) {
        for (j = 0; j < 3; j++) {
            struct model m = { rtts[i], 2 * MIB, links[j], 1500 * MIB,
                400 * MIB };

            struct width_link l = { rtts[i], 2 << 20 };
            double best = model_best(&m, WIDTH_LONG_MAX) * 0.96;

            n = model_run(&m, 2 * (uint64_t)MIB, GIB, &periods, &rate);
            CHECK(rate >= 0.9 * best);
            CHECK(n <= WIDTH_LONG_MAX);
            CHECK(periods <= 2);
            /* Up to 1 Gbit/s the first streams fill the link: no period
             * is spent below it. */
            if (links[j] <= 1e9 / 8)
                CHECK(model_rate(&m, width_first(&l, GIB, WIDTH_LONG_MAX),
                    0) >= 0.9 * best);
        }
    }
    /* The counts at 1 Gbit/s: windows for 1.2 times the link. */
    {
        struct width_link l = { 100, 2 << 20 };

        CHECK_EQ_INT(width_first(&l, GIB, WIDTH_LONG_MAX), 8);
        l.rtt_ms = 200;
        CHECK_EQ_INT(width_first(&l, GIB, WIDTH_LONG_MAX), 15);
        l.rtt_ms = 50;
        CHECK_EQ_INT(width_first(&l, GIB, WIDTH_LONG_MAX), 4);
        l.rtt_ms = 300;
        CHECK_EQ_INT(width_first(&l, GIB, WIDTH_LONG_MAX), WIDTH_LONG_MAX);
    }
}

/* A pull: our window (16 MiB) carries most links on one stream, so the
 * cores decide, as they would on a short link: a second stream only
 * where one stream's cipher binds and the rate shows it. */
TEST(width_pull_long_links)
{
    static const uint64_t rtts[] = { 50, 100, 200 };
    unsigned i, n, periods;
    double rate;

    for (i = 0; i < 3; i++) {
        /* One stream's cipher at 100 MiB/s, the link 1 Gbit/s. */
        struct model m = { rtts[i], 16 * MIB, 1e9 / 8, 1500 * MIB,
            100 * MIB };

        n = model_run(&m, 16u << 20, UINT64_MAX, &periods, &rate);
        CHECK(rate >= 0.9 * model_best(&m, WIDTH_LONG_MAX) * 0.96);
        CHECK(n >= 2);
        CHECK(n <= 4);
    }
}

/* One end busy (its cores give 60 MiB/s in all): the streams stop once
 * the rate shows it, at no more than the first width. */
TEST(width_busy_box)
{
    static const uint64_t rtts[] = { 50, 100, 200 };
    unsigned i, n, periods;
    double rate;

    for (i = 0; i < 3; i++) {
        struct model m = { rtts[i], 2 * MIB, 1e9 / 8, 60 * MIB, 400 * MIB };
        struct width_link l = { rtts[i], 2 << 20 };

        n = model_run(&m, 2 << 20, GIB, &periods, &rate);
        CHECK_EQ_INT(periods, 0);
        CHECK_EQ_INT(n, width_first(&l, GIB, WIDTH_LONG_MAX));
        CHECK(rate >= 0.9 * 60 * MIB);
    }
}

/* Little data: no more streams than it has WIDTH_MIN_PER_STREAM for,
 * and one for less than two of those. */
TEST(width_small_transfers)
{
    struct width_link l = { 100, 2 << 20 };

    CHECK_EQ_INT(width_first(&l, 40ull << 20, WIDTH_LONG_MAX), 5);
    CHECK_EQ_INT(width_first(&l, 15ull << 20, WIDTH_LONG_MAX), 1);
    CHECK_EQ_INT(width_first(&l, 0, WIDTH_LONG_MAX), 1);
    CHECK_EQ_INT(width_first(&l, UINT64_MAX, 4), 4);
    CHECK_EQ_INT(width_first(&l, UINT64_MAX, 1), 1);
}

/* A short link: no window binds; the rate with more streams against
 * the rate before them decides. */
TEST(width_short_link)
{
    struct width_link l = { 0, 2 << 20 };
    struct width_period none = { 0, 0 }, one = { 1, 200 * MIB },
        two = { 2, 400 * MIB }, two_some = { 2, 300 * MIB },
        two_flat = { 2, 210 * MIB }, four_flat = { 4, 410 * MIB };

    CHECK_EQ_INT(width_first(&l, GIB, 8), 1);
    CHECK_EQ_INT(width_more(&l, &none, &one, 8), 0);
    CHECK_EQ_INT(width_more(&l, &one, &two, 8), 2);
    CHECK_EQ_INT(width_more(&l, &one, &two_some, 8), 1);
    CHECK_EQ_INT(width_more(&l, &one, &two_flat, 8), 0);
    CHECK_EQ_INT(width_more(&l, &two, &four_flat, 8), 0);
    /* Never beyond the cap. */
    CHECK_EQ_INT(width_more(&l, &one, &two, 3), 1);
    CHECK_EQ_INT(width_more(&l, &one, &two, 2), 0);
}

/* Windows that bind: twice as many; the link or the cores: none. */
TEST(width_long_link_more)
{
    struct width_link l = { 100, 2 << 20 };
    struct width_period none = { 0, 0 }, full = { 4, 4 * 20 * MIB },
        half = { 4, 4 * 10 * MIB };

    CHECK_EQ_INT(width_more(&l, &none, &full, WIDTH_LONG_MAX), 4);
    CHECK_EQ_INT(width_more(&l, &none, &half, WIDTH_LONG_MAX), 0);
    CHECK_EQ_INT(width_more(&l, &none, &full, 6), 2);
}
