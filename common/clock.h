#ifndef FERRY_CLOCK_H
#define FERRY_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds on the monotonic clock: for deadlines, waits and ages
 * within one process. Never the wall clock, which the user or NTP may
 * move. */
static inline uint64_t
clock_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Nanoseconds on the same clock: for rates and durations. */
static inline uint64_t
clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
