/*
 * probe.h: the round trip and throughput probe of `ferry status`, both
 * sides. After the agent's END of a STATUS, when both have
 * PROTO_CAP_PROBE, the client asks and the agent answers (PROBE, type 30):
 *
 *   round trip  PROBE ask=1, three times one after the other; the least
 *               time to the 1-byte answer
 *   down        PROBE ask=A: the time to receive A bytes, A from 256 KiB
 *               growing fourfold while a round takes under 300 ms
 *   up          A bytes of PROBE data, then PROBE ask=1: the time to its
 *               answer, A growing the same way
 *   END         then both close
 *
 * Rates leave one round trip out of the time of their last (largest)
 * round. The whole probe stops growing rounds after PROBE_BUDGET_NS.
 */
#ifndef FERRY_ENGINE_PROBE_H
#define FERRY_ENGINE_PROBE_H

#include <stdint.h>

#include "conn.h"

#define PROBE_PINGS 3
#define PROBE_FIRST_ROUND (256u << 10)
#define PROBE_ROUND_NS 300000000ull
#define PROBE_BUDGET_NS 2000000000ull

/* The agent's side: answers PROBE until the client's END. */
struct probe_answer;
struct probe_answer *probe_answer_new(void);
void probe_answer_free(struct probe_answer *pa);
int probe_answer_step(void *role, struct conn_step *st) FERRY_WUR;

/* The client's side, with what it found. */
struct probe_result {
    uint64_t rtt_ns;        /* least of the pings */
    uint64_t down_bytes, down_ns;   /* the last round, a round trip out */
    uint64_t up_bytes, up_ns;
};

struct frame;
struct probe;
/* now: the clock (clock_ns in the programs; tests pass their own). */
struct probe *probe_new(uint64_t (*now)(void));
void probe_free(struct probe *p);
/* A PROBE frame from the agent: 0, or a protocol error (data that was
 * not asked for, more than was asked, or the agent asking). */
int probe_on_frame(struct probe *p, const struct frame *f) FERRY_WUR;
/* What to send next; sets st->more while a round is being sent and
 * st->done with the END. */
int probe_send(struct probe *p, struct conn_step *st) FERRY_WUR;
/* 1 once it ran to its END (not after an error or a close). */
int probe_done(const struct probe *p);
const struct probe_result *probe_result(const struct probe *p);

#endif
