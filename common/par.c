#include "par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "alloc.h"

#define PAR_MAX_THREADS 16u

struct par_pool {
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    pthread_t t[PAR_MAX_THREADS];
    unsigned nthreads;          /* helpers made */
    unsigned long generation;   /* a new loop */
    unsigned busy;              /* helpers still in the loop */
    int stop;
    /* The loop. */
    void (*fn)(void *arg, unsigned i);
    void *arg;
    unsigned n;
    atomic_uint next;
};

unsigned
par_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);

    return n < 1 ? 1u : n > 1024 ? 1024u : (unsigned)n;
}

/* Takes iterations until there are none left. */
static void
par_take(struct par_pool *p)
{
    unsigned i;

    while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
        p->fn(p->arg, i);
}

static void *
par_helper(void *arg)
{
    struct par_pool *p = arg;
    unsigned long seen = 0;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->go, &p->mu);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        par_take(p);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct par_pool *
par_pool_new(unsigned threads)
{
    struct par_pool *p;
    unsigned k;

    if (threads < 2 || (p = xcalloc(1, sizeof(*p))) == NULL)
        return NULL;
    if (threads > PAR_MAX_THREADS + 1)
        threads = PAR_MAX_THREADS + 1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    for (k = 0; k + 1 < threads; k++) {
        if (pthread_create(&p->t[k], NULL, par_helper, p) != 0)
            break;
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        par_pool_free(p);
        return NULL;
    }
    return p;
}

void
par_pool_free(struct par_pool *p)
{
    unsigned k;

    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (k = 0; k < p->nthreads; k++)
        pthread_join(p->t[k], NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->go);
    pthread_mutex_destroy(&p->mu);
    xfree(p);
}

void
par_for(struct par_pool *p, unsigned n, void (*fn)(void *arg, unsigned i),
    void *arg)
{
    unsigned i;

    if (p == NULL || n < 2) {
        for (i = 0; i < n; i++)
            fn(arg, i);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    atomic_store(&p->next, 0);
    p->busy = p->nthreads;
    p->generation++;
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    par_take(p);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
