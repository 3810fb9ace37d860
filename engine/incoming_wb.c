/*
 * Blocks built from DELTA, written behind (docs/DESIGN.md, "Delta"): the
 * step reads and hashes the next block from the basis while a thread of
 * our own writes the one before into the staging file. A block is
 * settled (journaled, its file committed when it was the last) only once
 * its write is done, in the order the blocks came, and a step settles
 * all of them before it returns, so what a step takes in and sends out
 * is what it was without this.
 */
#include "incoming_int.h"

#include <pthread.h>

#include "../common/alloc.h"
#include "../common/fsx.h"

/* Blocks in flight: one being written, one waiting, one being built. */
#define WB_DEPTH 3

struct wb_job {
    struct rfile *f;
    uint64_t index;
    struct hash128 h;
    uint32_t len;
    int fd;
    int result;            /* of the write, once written */
};

struct incoming_wb {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint32_t block_size;
    uint8_t *buf[WB_DEPTH];
    struct wb_job job[WB_DEPTH];
    /* Jobs by number: [settled, written) written, not yet settled;
     * [written, queued) for the writer. */
    uint64_t settled, written, queued;
    int stop;
};

static void *
wb_main(void *arg)
{
    struct incoming_wb *wb = arg;
    struct wb_job *j;
    uint8_t *data;
    int r;

    pthread_mutex_lock(&wb->mu);
    for (;;) {
        while (!wb->stop && wb->written == wb->queued)
            pthread_cond_wait(&wb->cv, &wb->mu);
        if (wb->stop)
            break;
        j = &wb->job[wb->written % WB_DEPTH];
        data = wb->buf[wb->written % WB_DEPTH];
        pthread_mutex_unlock(&wb->mu);
        r = fsx_pwrite_all(j->fd, data, j->len,
            (off_t)(j->index * wb->block_size));
        pthread_mutex_lock(&wb->mu);
        j->result = r;
        wb->written++;
        pthread_cond_broadcast(&wb->cv);
    }
    pthread_mutex_unlock(&wb->mu);
    return NULL;
}

/* The writer, made on first use; NULL when it cannot be (the blocks are
 * then written as they are settled). */
static struct incoming_wb *
wb_get(struct incoming *in)
{
    struct incoming_wb *wb = in->wb;
    int i;

    if (wb != NULL || in->wb_off)
        return wb;
    if ((wb = xcalloc(1, sizeof(*wb))) == NULL) {
        in->wb_off = 1;
        return NULL;
    }
    wb->block_size = in->block_size;
    for (i = 0; i < WB_DEPTH; i++)
        if ((wb->buf[i] = xmalloc(in->block_size)) == NULL)
            goto fail;
    if (pthread_mutex_init(&wb->mu, NULL) != 0)
        goto fail;
    if (pthread_cond_init(&wb->cv, NULL) != 0) {
        pthread_mutex_destroy(&wb->mu);
        goto fail;
    }
    if (pthread_create(&wb->th, NULL, wb_main, wb) != 0) {
        pthread_cond_destroy(&wb->cv);
        pthread_mutex_destroy(&wb->mu);
        goto fail;
    }
    in->wb = wb;
    return wb;
fail:
    for (i = 0; i < WB_DEPTH; i++)
        xfree(wb->buf[i]);
    xfree(wb);
    in->wb_off = 1;
    return NULL;
}

/* 1 if a job after the oldest is for f: the oldest is not its last. */
static int
wb_more_for(const struct incoming_wb *wb, const struct rfile *f)
{
    uint64_t k;

    for (k = wb->settled + 1; k < wb->queued; k++)
        if (wb->job[k % WB_DEPTH].f == f)
            return 1;
    return 0;
}

/* Settles the oldest job once written. */
static int
wb_settle_oldest(struct incoming *in, struct incoming_wb *wb,
    struct buf *out)
{
    struct wb_job j;
    int last;

    pthread_mutex_lock(&wb->mu);
    while (wb->written == wb->settled)
        pthread_cond_wait(&wb->cv, &wb->mu);
    j = wb->job[wb->settled % WB_DEPTH];
    last = !wb_more_for(wb, j.f);
    pthread_mutex_unlock(&wb->mu);
    /* Counted settled before its file may go (a commit frees it). */
    wb->settled++;
    return incoming_settle_written(in, j.f, j.index, &j.h, j.len, j.result,
        last, out);
}

uint8_t *
incoming_wb_buffer(struct incoming *in, struct buf *out, int *r)
{
    struct incoming_wb *wb = wb_get(in);

    *r = 0;
    if (wb == NULL)
        return NULL;
    /* The ring is full: the oldest is settled to free its buffer. */
    if (wb->queued - wb->settled == WB_DEPTH &&
        (*r = wb_settle_oldest(in, wb, out)) != 0)
        return NULL;
    return wb->buf[wb->queued % WB_DEPTH];
}

void
incoming_wb_submit(struct incoming *in, struct rfile *f, uint64_t index,
    const struct hash128 *h, uint32_t len, int fd)
{
    struct incoming_wb *wb = in->wb;
    struct wb_job *j = &wb->job[wb->queued % WB_DEPTH];

    pthread_mutex_lock(&wb->mu);
    j->f = f;
    j->index = index;
    j->h = *h;
    j->len = len;
    j->fd = fd;
    j->result = 0;
    wb->queued++;
    pthread_cond_broadcast(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
}

int
incoming_drain(struct incoming *in, struct buf *out)
{
    struct incoming_wb *wb = in->wb;
    int r, first = 0;

    while (wb != NULL && wb->settled != wb->queued)
        if ((r = wb_settle_oldest(in, wb, out)) != 0 && first == 0)
            first = r;
    return first;
}

void
incoming_wb_discard(struct incoming *in)
{
    struct incoming_wb *wb = in->wb;

    if (wb == NULL)
        return;
    /* The writes go on to their end (the files are still open); they are
     * not settled, so no journal names them. */
    pthread_mutex_lock(&wb->mu);
    while (wb->written != wb->queued)
        pthread_cond_wait(&wb->cv, &wb->mu);
    wb->settled = wb->queued;
    pthread_mutex_unlock(&wb->mu);
}

void
incoming_wb_free(struct incoming *in)
{
    struct incoming_wb *wb = in->wb;
    int i;

    if (wb == NULL)
        return;
    incoming_wb_discard(in);
    pthread_mutex_lock(&wb->mu);
    wb->stop = 1;
    pthread_cond_broadcast(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
    (void)pthread_join(wb->th, NULL);
    pthread_cond_destroy(&wb->cv);
    pthread_mutex_destroy(&wb->mu);
    for (i = 0; i < WB_DEPTH; i++)
        xfree(wb->buf[i]);
    xfree(wb);
    in->wb = NULL;
}
