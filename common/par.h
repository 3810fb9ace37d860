/*
 * par.h: a few threads that run the iterations of a loop together.
 *
 * For work that splits into independent calls, each a system call or
 * more (the lstat of each name of a directory): the caller hands the
 * loop over and takes part in it, and everything else stays on its one
 * thread. The threads are made once and wait between loops.
 */
#ifndef FERRY_COMMON_PAR_H
#define FERRY_COMMON_PAR_H

struct par_pool;

/* CPUs online (at least 1). */
unsigned par_cpus(void);

/* A pool that runs a loop on `threads` threads, the caller's among them;
 * NULL when threads < 2 or none could be made (par_for then runs the
 * loop on the caller's alone). */
struct par_pool *par_pool_new(unsigned threads);
void par_pool_free(struct par_pool *p);

/* Calls fn(arg, i) for every i below n, each once, and returns when all
 * have returned. One loop at a time per pool. */
void par_for(struct par_pool *p, unsigned n,
    void (*fn)(void *arg, unsigned i), void *arg);

#endif
