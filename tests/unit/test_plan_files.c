/* Tests for the plan's table of files in flight (engine/plan.c,
 * plan_file): what is added is found, what is removed is not, whatever
 * the order of removals and the clusters ids make. */
#include <stdlib.h>
#include <string.h>

#include "../../common/alloc.h"
#include "../../engine/manifest.h"
#include "../../engine/plan_int.h"
#include "../../engine/xfer.h"
#include "../../proto/msg.h"
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
    CHECK_EQ_U64(p.files.n, k);
    CHECK(p.files.cap >= 2 * p.files.n);
    for (i = 0; i < PF_N; i++)
        if (in[i])
            plan_file_remove(&p, files[i].id);
    CHECK_EQ_U64(p.files.n, 0);
    for (i = 0; i < p.files.cap; i++)
        CHECK(p.files.slot[i] == NULL);
    ptab_free(&p.files);
}

/* One attempt's offer of entry 0 and the answer to it. */
static void
offer_reply(struct plan *p, uint8_t action)
{
    struct msg_reply rep;
    uint32_t id;

    CHECK_EQ_INT(plan_next_offer(p, &id), 1);
    CHECK_EQ_INT(id, 0);
    plan_offered(p, id);
    memset(&rep, 0, sizeof(rep));
    rep.id = 0;
    rep.action = action;
    CHECK_OK(plan_on_reply(p, &rep));
}

/*
 * A file whose data all went out, cut before its FILE_DONE came back: the
 * receiver committed it, and answers SKIP over the next connection. It
 * was sent in this run, not found up to date. One cut before its end, or
 * sent again in full, is counted once as it comes.
 */
TEST(plan_sent_before_cut)
{
    struct msg_file_done done;
    struct manifest mf;
    struct xfer x;
    struct plan *p;
    int round;

    for (round = 0; round < 3; round++) {
        memset(&x, 0, sizeof(x));
        manifest_init(&mf);
        CHECK_OK(manifest_add_listed(&mf, "empty.bin", ENTRY_FILE, 0644, 0,
            1700000000, 0));
        CHECK((p = plan_new(&mf, 1u << 20, 0, &x)) != NULL);
        offer_reply(p, REPLY_WANT);
        if (round != 1)
            plan_file_ended(p, 0, 0);  /* round 1: cut before its end */
        plan_restart(p);
        if (round == 2) {
            /* Wanted again, sent again, done. */
            offer_reply(p, REPLY_WANT);
            plan_file_ended(p, 0, 0);
            memset(&done, 0, sizeof(done));
            CHECK_OK(plan_on_file_done(p, &done));
        } else {
            offer_reply(p, REPLY_SKIP);
        }
        check_note("round %d", round);
        CHECK_EQ_U64(xfer_get(&x.st.files_sent), round == 1 ? 0 : 1);
        CHECK_EQ_U64(xfer_get(&x.st.files_skipped), round == 1 ? 1 : 0);
        CHECK_EQ_INT(plan_all_finished(p), 1);
        plan_free(p);
    }
    check_note_clear();
}

/*
 * A live plan (its scan goes on) takes entries as they are published,
 * counts them into the totals, and is never finished before the scan
 * ended, even with every entry so far answered; its scan's error stays.
 */
TEST(plan_live_entries)
{
    struct msg_reply rep;
    struct msg_totals t;
    struct manifest mf;
    struct xfer x;
    struct plan *p;
    uint32_t id;

    memset(&x, 0, sizeof(x));
    manifest_init(&mf);
    manifest_live_begin(&mf);
    CHECK_OK(manifest_add_listed(&mf, "d", ENTRY_DIR, 0755, 0, 1, 0));
    CHECK((p = plan_new_live(&mf, 1u << 20, 0, &x)) != NULL);
    CHECK_EQ_INT(plan_scanning(p), 1);
    CHECK_EQ_U64(xfer_get(&x.st.totals_open), 1);
    offer_reply(p, REPLY_SKIP);
    CHECK_EQ_INT(plan_next_offer(p, &id), 0);
    CHECK_EQ_INT(plan_all_finished(p), 0);
    CHECK_OK(manifest_add_listed(&mf, "d/f", ENTRY_FILE, 0644, 7, 1, 0));
    CHECK_EQ_INT(plan_next_offer(p, &id), 1);
    CHECK_EQ_U64(id, 1);
    CHECK_EQ_U64(xfer_get(&x.st.files_total), 1);
    CHECK_EQ_U64(xfer_get(&x.st.bytes_total), 7);
    plan_offered(p, id);
    memset(&rep, 0, sizeof(rep));
    rep.id = 1;
    rep.action = REPLY_SKIP;
    CHECK_OK(plan_on_reply(p, &rep));
    CHECK_EQ_INT(plan_all_finished(p), 0);
    manifest_live_end(&mf, 0);
    CHECK_EQ_INT(plan_all_finished(p), 1);
    CHECK_EQ_INT(plan_scanning(p), 0);
    CHECK_EQ_U64(xfer_get(&x.st.totals_open), 0);
    plan_totals(p, &t);
    CHECK_EQ_U64(t.entries_total, 2);
    CHECK_EQ_U64(t.files_total, 1);
    CHECK_EQ_U64(t.bytes_total, 7);
    plan_free(p);
    manifest_cleanup(&mf);

    /* A scan that failed: said, and said again. */
    manifest_init(&mf);
    manifest_live_begin(&mf);
    CHECK((p = plan_new_live(&mf, 1u << 20, 0, &x)) != NULL);
    manifest_live_end(&mf, FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(plan_scanning(p), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_ERR(plan_scanning(p), FERRY_ERR_TOO_LARGE);
    plan_free(p);
    manifest_cleanup(&mf);
    /* Freed while its scan goes on: the totals are no longer open. */
    manifest_init(&mf);
    manifest_live_begin(&mf);
    CHECK((p = plan_new_live(&mf, 1u << 20, 0, &x)) != NULL);
    CHECK_EQ_U64(xfer_get(&x.st.totals_open), 1);
    plan_free(p);
    CHECK_EQ_U64(xfer_get(&x.st.totals_open), 0);
    manifest_cleanup(&mf);
}
