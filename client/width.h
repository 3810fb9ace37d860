/*
 * width.h: how many streams a transfer runs on by default, as pure
 * functions of what is known, so that each link's behaviour is pinned
 * down by unit tests rather than by timing (tests/unit/test_width.c).
 *
 * One stream moves at most one window per round trip: the receiving
 * end's SSH channel window (sshd's for a push, ours for a pull) bounds
 * it, whatever the link. On a long link that bound is far below the
 * link: OpenSSH's 2 MiB window moves about 20 MiB/s at 100 ms. So there
 * the width is decided before data moves, from the round trip and the
 * window, for a link of WIDTH_LINK_GUESS with some room to spare, and
 * opened at once (width_first); then, with every stream up, a period's
 * rate says whether the windows still bind (each stream moves about its
 * window per round trip: the link has more room, twice as many) or the
 * link or the cores do (stop) (width_more).
 *
 * On a short link no window binds and the width is a matter of cores,
 * found by trying: the rate with more streams against the rate before
 * them (width_more without a round trip).
 */
#ifndef FERRY_CLIENT_WIDTH_H
#define FERRY_CLIENT_WIDTH_H

#include <stdint.h>

/* The link the first width is opened for: 1 Gbit/s, a rented box's port
 * and a good uplink; a faster one is found by width_more. */
#define WIDTH_LINK_GUESS 125000000.0
/* Windows enough for the guess and this much more: a round trip
 * estimated from a handshake is a tenth or so off, and a window is not
 * full all of every round trip. */
#define WIDTH_ROOM 1.2
/* A stream's login costs round trips and a process on the box: each one
 * opened at once should have this much to carry. */
#define WIDTH_MIN_PER_STREAM (8ull << 20)
/* ... and at least, with data for them: a window may carry the link (a
 * pull's, which is ours), but one stream's cipher runs on one core. */
#define WIDTH_LONG_MIN 2u
/* A long link's streams at most: 16 windows of 2 MiB carry 1 Gbit/s up
 * to 250 ms. */
#define WIDTH_LONG_MAX 16u
/* Windows bind while the streams move this share of what their windows
 * allow. */
#define WIDTH_FILLED 0.8

struct width_link {
    uint64_t rtt_ms;   /* the round trip; 0: short or not known */
    uint64_t window;   /* what one stream may have unanswered, bytes */
};

/* A period of the transfer: streams up through it and the rate they
 * moved (bytes/s). */
struct width_period {
    unsigned streams;
    double rate;
};

/* The rate one stream's window allows (bytes/s), 0 when no window is
 * known to bind (a short link). */
double width_per_stream(const struct width_link *l);

/*
 * The streams to open at once on a long link with wire_left bytes to
 * cross (UINT64_MAX: not known yet, a pull before its PLAN): enough
 * windows for WIDTH_LINK_GUESS with WIDTH_ROOM to spare, and
 * WIDTH_LONG_MIN; at most one per WIDTH_MIN_PER_STREAM of the data and
 * max; at least 1.
 */
unsigned width_first(const struct width_link *l, uint64_t wire_left,
    unsigned max);

/*
 * How many streams to add after a period with every stream up (now),
 * given the period before the last ones came (before; streams 0 when
 * none was measured). A long link: as many again while each stream
 * moves WIDTH_FILLED of its window's rate, else none. A short link: as
 * many again while each stream moves 90% of what one did before, one
 * more while the whole grew by a tenth and each moves half as much,
 * else none. Never beyond max.
 */
unsigned width_more(const struct width_link *l,
    const struct width_period *before, const struct width_period *now,
    unsigned max);

#endif
