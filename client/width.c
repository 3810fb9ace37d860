#include "width.h"

double
width_per_stream(const struct width_link *l)
{
    if (l->rtt_ms == 0 || l->window == 0)
        return 0;
    return (double)l->window * 1000.0 / (double)l->rtt_ms;
}

unsigned
width_first(const struct width_link *l, uint64_t wire_left, unsigned max)
{
    double per = width_per_stream(l), want;
    uint64_t by_size;
    unsigned n;

    if (per <= 0 || max <= 1)
        return 1;
    want = WIDTH_LINK_GUESS * WIDTH_ROOM / per;
    n = want >= (double)max ? max : (unsigned)want + (want > (unsigned)want);
    if (n < WIDTH_LONG_MIN)
        n = max < WIDTH_LONG_MIN ? max : WIDTH_LONG_MIN;
    by_size = wire_left / WIDTH_MIN_PER_STREAM;
    if (by_size < n)
        n = (unsigned)by_size;
    return n < 1 ? 1 : n;
}

unsigned
width_more(const struct width_link *l, const struct width_period *before,
    const struct width_period *now, unsigned max)
{
    double per = width_per_stream(l), held;
    unsigned more = 0;

    if (now->streams == 0 || now->streams >= max)
        return 0;
    if (per > 0) {
        if (now->rate >= WIDTH_FILLED * per * now->streams)
            more = now->streams;
    } else if (before->streams > 0 && before->rate > 0) {
        /* As much per stream as before: each new one found a window of
         * its own to fill; much less, the link or the cores are near
         * their end. */
        held = now->rate * before->streams / (before->rate * now->streams);
        if (held >= 0.9)
            more = now->streams;
        else if (now->rate >= before->rate * 1.1 && held >= 0.5)
            more = 1;
    }
    return more > max - now->streams ? max - now->streams : more;
}
