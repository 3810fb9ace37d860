/*
 * Blocks built from DELTA, written behind (docs/DESIGN.md, "Delta"): the
 * step reads and hashes the next block from the basis while the writer
 * behind (behind.h) writes the one before into the staging file. A block
 * is settled (journaled, its file committed when it was the last) only
 * once its write is done, in the order the blocks came, and a step
 * settles all of them before it returns, so what a step takes in and
 * sends out is what it was without this.
 */
#include "../incoming_int.h"

#include "../../common/alloc.h"
#include "../../common/fsx.h"
#include "../behind.h"

/* Blocks in flight: one being written, one waiting, one being built. */
#define WB_DEPTH 3

struct wb_job {
    struct rfile *f;
    uint64_t index;
    struct hash128 h;
    uint32_t len;
    int fd;
    uint32_t block_size;
    uint8_t *data;          /* the slot's buffer, made with it */
};

/* Every write is done, even after one failed: each block's result is
 * its own, settled in order. */
static int
incoming_wb_write(void *ctx, void *job, int failed)
{
    struct wb_job *j = job;

    (void)ctx;
    (void)failed;
    return fsx_pwrite_all(j->fd, j->data, j->len,
        (off_t)(j->index * j->block_size));
}

/* The writer, made on first use; NULL when it cannot be (the blocks are
 * then written as they are settled). */
static struct behind *
incoming_wb_get(struct incoming *in)
{
    if (in->wb == NULL && !in->wb_off &&
        (in->wb = behind_new(WB_DEPTH, sizeof(struct wb_job),
            incoming_wb_write,
        NULL)) == NULL)
        in->wb_off = 1;
    return in->wb;
}

/* 1 if a job after the oldest is for f: the oldest is not its last. */
static int
incoming_wb_more_for(struct behind *wb, const struct rfile *f)
{
    size_t k, n = behind_count(wb);

    for (k = 1; k < n; k++)
        if (((struct wb_job *)behind_job(wb, k))->f == f)
            return 1;
    return 0;
}

/* Settles the oldest job once written. */
static int
incoming_wb_settle_oldest(struct incoming *in, struct behind *wb,
    struct buf *out)
{
    struct wb_job j, *jp;
    int last, wr;

    jp = behind_done(wb, 1, &wr);
    j = *jp;
    last = !incoming_wb_more_for(wb, j.f);
    /* Retired before its file may go (a commit frees it). */
    behind_retire(wb);
    return incoming_settle_written(in, j.f, j.index, &j.h, j.len, wr,
        last, out);
}

uint8_t *
incoming_wb_buffer(struct incoming *in, struct buf *out, int *r)
{
    struct behind *wb = incoming_wb_get(in);
    struct wb_job *j;

    *r = 0;
    if (wb == NULL)
        return NULL;
    /* The ring is full: the oldest is settled to free its buffer. */
    while ((j = behind_next(wb)) == NULL)
        if ((*r = incoming_wb_settle_oldest(in, wb, out)) != 0)
            return NULL;
    if (j->data == NULL && (j->data = xmalloc(in->block_size)) == NULL) {
        *r = FERRY_ERR_NOMEM;
        return NULL;
    }
    return j->data;
}

void
incoming_wb_submit(struct incoming *in, struct rfile *f, uint64_t index,
    const struct hash128 *h, uint32_t len, int fd)
{
    struct behind *wb = in->wb;
    struct wb_job *j = behind_next(wb);

    j->f = f;
    j->index = index;
    j->h = *h;
    j->len = len;
    j->fd = fd;
    j->block_size = in->block_size;
    behind_queue(wb);
}

int
incoming_drain(struct incoming *in, struct buf *out)
{
    struct behind *wb = in->wb;
    int r, first = 0;

    while (wb != NULL && behind_count(wb) > 0)
        if ((r = incoming_wb_settle_oldest(in, wb, out)) != 0 && first == 0)
            first = r;
    return first;
}

void
incoming_wb_discard(struct incoming *in)
{
    struct behind *wb = in->wb;
    int wr;

    /* The writes go on to their end (the files are still open); they are
     * not settled, so no journal names them. */
    while (wb != NULL && behind_done(wb, 1, &wr) != NULL)
        behind_retire(wb);
}

static void
incoming_wb_clean(void *job)
{
    struct wb_job *j = job;

    xfree(j->data);
    j->data = NULL;
}

void
incoming_wb_free(struct incoming *in)
{
    struct behind *wb = in->wb;

    if (wb == NULL)
        return;
    incoming_wb_discard(in);
    behind_free(wb, incoming_wb_clean);
    in->wb = NULL;
}
