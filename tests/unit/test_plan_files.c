/* Tests for the plan's table of files in flight (engine/plan.c,
 * plan_file): what is added is found, what is removed is not, whatever
 * the order of removals and the clusters ids make. */
#include <stdlib.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../engine/plan_int.h"
#include "check.h"

#define PF_N 3000u

TEST(plan_file_table)
{
    static struct pfile files[PF_N];
    static unsigned char in[PF_N];
    struct plan p;
    unsigned i, k, round, seed = 7;

    memset(&p, 0, sizeof(p));
    CHECK(plan_file(&p, 0) == NULL);
    plan_file_remove(&p, 5);  /* an empty table */
    for (i = 0; i < PF_N; i++) {
        /* Ids in runs and far apart, so clusters form and wrap. */
        files[i].id = i % 3 == 0 ? i : (1u << 24) + i * 1024u;
        in[i] = 0;
    }
    /* Small (a table of 64 slots, so clusters wrap round its end), then
     * large. */
    for (round = 0; round < 206; round++) {
        unsigned n = round < 200 ? 32 : PF_N;

        for (k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            i = (seed >> 8) % n;
            if (in[i]) {
                plan_file_remove(&p, files[i].id);
                in[i] = 0;
            } else {
                CHECK_OK(plan_file_add(&p, &files[i]));
                in[i] = 1;
            }
        }
        for (i = 0; i < PF_N; i++)
            CHECK(plan_file(&p, files[i].id) == (in[i] ? &files[i] : NULL));
        CHECK(plan_file(&p, 1u << 31) == NULL);
    }
    for (i = 0, k = 0; i < PF_N; i++)
        k += in[i];
    CHECK_EQ_U64(p.ftab_n, k);
    CHECK(p.ftab_cap >= 2 * p.ftab_n);
    for (i = 0; i < PF_N; i++)
        if (in[i])
            plan_file_remove(&p, files[i].id);
    CHECK_EQ_U64(p.ftab_n, 0);
    for (i = 0; i < p.ftab_cap; i++)
        CHECK(p.ftab[i] == NULL);
    xfree(p.ftab);
}
