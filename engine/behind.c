#include "behind.h"

#include <pthread.h>
#include <stdint.h>

#include "../common/alloc.h"
#include "waker.h"

struct behind {
    pthread_t th;
    pthread_mutex_t mu;     /* guards ran, result, failed and stop */
    pthread_cond_t cv;
    behind_fn *run;
    void *ctx;
    size_t depth, job_size;
    uint8_t *slots;
    int *result;
    struct waker **wake;    /* per slot: whom its job wakes, or NULL */
    /* Jobs by number: [retired, ran) run, [ran, queued) for the thread.
     * queued and retired are the owner's alone. */
    uint64_t retired, ran, queued;
    int failed;             /* a job failed: the later ones only let go */
    int stop;
};

static void *
behind_slot(struct behind *b, uint64_t n)
{
    return b->slots + (n % b->depth) * b->job_size;
}

static void *
behind_main(void *arg)
{
    struct behind *b = arg;
    uint64_t n;
    int r, failed;

    pthread_mutex_lock(&b->mu);
    for (;;) {
        while (!b->stop && b->ran == b->queued)
            pthread_cond_wait(&b->cv, &b->mu);
        if (b->ran == b->queued)
            break;
        n = b->ran;
        failed = b->failed;
        pthread_mutex_unlock(&b->mu);
        r = b->run(b->ctx, behind_slot(b, n), failed);
        pthread_mutex_lock(&b->mu);
        b->result[n % b->depth] = r;
        if (r != 0)
            b->failed = 1;
        b->ran++;
        pthread_cond_broadcast(&b->cv);
        /* After ran is published: the owner woken finds the job done. */
        waker_wake(b->wake[n % b->depth]);
    }
    pthread_mutex_unlock(&b->mu);
    return NULL;
}

struct behind *
behind_new(size_t depth, size_t job_size, behind_fn *run, void *ctx)
{
    struct behind *b;

    if (depth == 0 || job_size == 0 || (b = xcalloc(1, sizeof(*b))) == NULL)
        return NULL;
    b->run = run;
    b->ctx = ctx;
    b->depth = depth;
    b->job_size = job_size;
    if ((b->slots = xcalloc(depth, job_size)) == NULL ||
        (b->result = xcalloc(depth, sizeof(*b->result))) == NULL ||
        (b->wake = xcalloc(depth, sizeof(*b->wake))) == NULL)
        goto fail;
    if (pthread_mutex_init(&b->mu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&b->cv, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        goto fail;
    }
    if (pthread_create(&b->th, NULL, behind_main, b) != 0) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        goto fail;
    }
    return b;
fail:
    xfree(b->slots);
    xfree(b->result);
    xfree(b->wake);
    xfree(b);
    return NULL;
}

void
behind_free(struct behind *b, behind_clean_fn *clean)
{
    size_t i;

    if (b == NULL)
        return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    (void)pthread_join(b->th, NULL);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    for (i = 0; clean != NULL && i < b->depth; i++)
        clean(b->slots + i * b->job_size);
    xfree(b->slots);
    xfree(b->result);
    xfree(b->wake);
    xfree(b);
}

void *
behind_next(struct behind *b)
{
    return b->queued - b->retired < b->depth ?
        behind_slot(b, b->queued) : NULL;
}

void
behind_queue(struct behind *b)
{
    behind_queue_waking(b, NULL);
}

void
behind_queue_waking(struct behind *b, struct waker *w)
{
    pthread_mutex_lock(&b->mu);
    b->wake[b->queued % b->depth] = w;
    b->queued++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

size_t
behind_count(const struct behind *b)
{
    return (size_t)(b->queued - b->retired);
}

void *
behind_job(struct behind *b, size_t k)
{
    return behind_slot(b, b->retired + k);
}

void *
behind_done(struct behind *b, int wait, int *result)
{
    void *j = NULL;

    *result = 0;
    if (b->retired == b->queued)
        return NULL;
    pthread_mutex_lock(&b->mu);
    while (wait && b->ran == b->retired)
        pthread_cond_wait(&b->cv, &b->mu);
    if (b->ran != b->retired) {
        j = behind_slot(b, b->retired);
        *result = b->result[b->retired % b->depth];
    }
    pthread_mutex_unlock(&b->mu);
    return j;
}

void
behind_retire(struct behind *b)
{
    if (b->retired != b->queued)
        b->retired++;
}
