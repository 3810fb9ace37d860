/*
 * The token bucket of --bwlimit (engine/ratelimit.c), with time passed
 * in: the debt a burst makes, the wait it costs, the cap on saving up.
 */
#include "../../engine/ratelimit.h"
#include "check.h"

#define MS 1000000ull

TEST(ratelimit_debt_and_wait)
{
    struct ratelimit l;

    ratelimit_init(&l, 1000, 0);       /* 1000 B/s, 100 B of burst */
    CHECK_EQ_INT(ratelimit_wait_ms(&l, 0), 0);
    ratelimit_take(&l, 100, 0);
    CHECK_EQ_INT(ratelimit_wait_ms(&l, 0), 0);
    /* 2000 B over: two seconds of debt. */
    ratelimit_take(&l, 2000, 0);
    CHECK(ratelimit_wait_ms(&l, 0) >= 2000 &&
        ratelimit_wait_ms(&l, 0) <= 2001);
    CHECK(ratelimit_wait_ms(&l, 1500 * MS) >= 500 &&
        ratelimit_wait_ms(&l, 1500 * MS) <= 501);
    CHECK_EQ_INT(ratelimit_wait_ms(&l, 2000 * MS), 0);
}

TEST(ratelimit_no_saving_up)
{
    struct ratelimit l;

    ratelimit_init(&l, 1000, 0);
    /* An hour idle buys RATELIMIT_BURST_MS of rate, no more. */
    CHECK_EQ_INT(ratelimit_wait_ms(&l, 3600000 * MS), 0);
    ratelimit_take(&l, 1000, 3600000 * MS);
    CHECK(ratelimit_wait_ms(&l, 3600000 * MS) >= 900);
    /* An earlier time adds nothing. */
    CHECK(ratelimit_wait_ms(&l, 0) >= 900);
}

/* Over ten simulated seconds of 64 KiB writes, each made as soon as the
 * wait allows, the rate is the limit. */
TEST(ratelimit_rate)
{
    struct ratelimit l;
    uint64_t now = 0, sent = 0;
    unsigned w;

    ratelimit_init(&l, 20u << 20, 0);
    while (now < 10000 * MS) {
        if ((w = ratelimit_wait_ms(&l, now)) > 0) {
            now += (uint64_t)w * MS;
            continue;
        }
        ratelimit_take(&l, 64 << 10, now);
        sent += 64 << 10;
    }
    CHECK(sent >= (uint64_t)(20u << 20) * 10 * 99 / 100);
    CHECK(sent <= (uint64_t)(20u << 20) * 10 * 102 / 100);
    /* A zero rate would divide by zero: it is one byte a second. */
    ratelimit_init(&l, 0, 0);
    CHECK_EQ_U64(l.rate, 1);
}
