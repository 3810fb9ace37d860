/*
 * behind.h: one thread that does a writer's slow work behind it, in the
 * order it was queued (docs/DESIGN.md, "Writing files").
 *
 * The owner queues jobs into a ring of fixed slots and goes on; the
 * thread runs them one after the other; the owner then retires them, in
 * the same order, on its own thread, reading each one's result. So what
 * the owner keeps per job (journals, counts, answers to the peer) is
 * touched by the owner alone, and a job's slot (and whatever buffer the
 * owner tied to it) is the thread's from behind_queue until it has run.
 * Used for the blocks built from DELTA (incoming_wb.c) and for the files
 * and commits of the volume reader (volstage.c).
 *
 *     struct job *j;
 *     while ((j = behind_next(b)) == NULL) {   // the ring is full
 *         j = behind_done(b, 1, &r);           // the oldest, once run
 *         ... its result ...
 *         behind_retire(b);
 *     }
 *     ... fill j ...
 *     behind_queue(b);
 *
 * Not thread-safe apart from the thread it runs: one owner.
 */
#ifndef FERRY_ENGINE_BEHIND_H
#define FERRY_ENGINE_BEHIND_H

#include <stddef.h>

#include "../common/err.h"

/* Runs one job on the thread: 0 or an error (its result). failed: a job
 * before it failed; a job then only lets go of what it holds, as the
 * owner stops at the first failure. */
typedef int behind_fn(void *ctx, void *job, int failed);

struct behind;

/* A thread with depth slots of job_size bytes (zeroed once, then left
 * as the owner last filled them), or NULL when it cannot be made (the
 * owner then writes in place). ctx goes to run. */
struct behind *behind_new(size_t depth, size_t job_size, behind_fn *run,
    void *ctx);
/* Lets the thread run what is queued, then it ends; then each of the
 * depth slots goes to clean (unless NULL), for what the owner tied to
 * it. Jobs not retired are not reported: retire them first when it
 * matters. */
typedef void behind_clean_fn(void *job);
void behind_free(struct behind *b, behind_clean_fn *clean);

/* The slot of the next job, or NULL while depth jobs are not retired. */
void *behind_next(struct behind *b);
/* Hands the slot of behind_next to the thread. */
void behind_queue(struct behind *b);
/* The same, and once the job has run (behind_done would give it), the
 * thread wakes w (waker.h): for a job the owner's loop waits on. */
struct waker;
void behind_queue_waking(struct behind *b, struct waker *w);

/* Jobs queued and not retired. */
size_t behind_count(const struct behind *b);
/* The k-th of them, oldest first (k < behind_count); read-only while it
 * has not run. */
void *behind_job(struct behind *b, size_t k);
/* The oldest job not retired once it has run, with its result; with
 * wait it waits for it, else NULL when it has not run yet. NULL when
 * none is queued. */
void *behind_done(struct behind *b, int wait, int *result);
/* The oldest job goes (after behind_done gave it). */
void behind_retire(struct behind *b);

#endif
