/* Tests for engine/behind.c, the one write-behind thread. */
#include <errno.h>

#include "../../engine/behind.h"
#include "check.h"

struct job {
    int n;
    int fail;
    int failed_before;
};

static int
job_run(void *ctx, void *job, int failed)
{
    struct job *j = job;

    (void)ctx;
    j->failed_before = failed;
    return j->fail ? -EIO : 0;
}

/* The thread runs jobs in the order queued, the owner retires them in
 * that order with their results; the ring holds depth jobs until they
 * are retired; a job after a failed one is told so. */
TEST(behind_order)
{
    struct behind *b;
    struct job *j;
    int i, r;

    CHECK((b = behind_new(2, sizeof(struct job), job_run, NULL)) != NULL);
    CHECK(behind_done(b, 1, &r) == NULL);
    for (i = 0; i < 2; i++) {
        CHECK((j = behind_next(b)) != NULL);
        j->n = i;
        j->fail = i == 0;
        behind_queue(b);
    }
    CHECK(behind_next(b) == NULL);
    CHECK_EQ_U64(behind_count(b), 2);
    CHECK_EQ_INT(((struct job *)behind_job(b, 1))->n, 1);
    CHECK((j = behind_done(b, 1, &r)) != NULL);
    CHECK_EQ_INT(j->n, 0);
    CHECK_EQ_ERR(r, -EIO);
    CHECK_EQ_INT(j->failed_before, 0);
    behind_retire(b);
    CHECK((j = behind_next(b)) != NULL);
    CHECK((j = behind_done(b, 1, &r)) != NULL);
    CHECK_EQ_INT(j->n, 1);
    CHECK_EQ_ERR(r, 0);
    CHECK_EQ_INT(j->failed_before, 1);
    behind_retire(b);
    CHECK_EQ_U64(behind_count(b), 0);
    behind_free(b, NULL);
}
