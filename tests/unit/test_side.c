/* Tests for one end of a transfer (engine/side.c): the roles it makes are
 * its own, of its kind, and freed with it or when their stream ends; a
 * lost stream is handled as that end must. What a lost stream does to
 * the frames is in the roles' tables (F_LOST rows). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "../../engine/plan_int.h"
#include "../../engine/side.h"
#include "../../proto/limits.h"
#include "check.h"

static const uint8_t side_tid[16] = { 7 };

TEST(side_sending)
{
    char dir[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 16];
    conn_step_fn *step;
    struct manifest mf;
    struct xfer x;
    struct side *sd;
    void *role, *first;
    unsigned k;

    check_tmpdir(dir);
    snprintf(path, sizeof(path), "%s/a", dir);
    check_write_file(path, "abc", 3, 0);
    manifest_init(&mf);
    CHECK_OK(manifest_scan(&mf, dir));
    memset(&x, 0, sizeof(x));
    CHECK((sd = side_new_send(&mf, 0, PROTO_MIN_BLOCK, 0, NULL, &x)) !=
        NULL);
    manifest_cleanup(&mf);
    CHECK(side_is_sender(sd));
    CHECK(side_plan(sd) != NULL);
    CHECK(side_dest(sd) == NULL && side_incoming(sd) == NULL);
    CHECK(plan_packer(side_plan(sd)) == NULL);
    for (k = 0; k < 3; k++) {
        CHECK_OK(side_stream(sd, k, &step, &role));
        CHECK(step == sender_step);
        CHECK(side_sender(sd, k) == role);
        CHECK(side_receiver(sd, k) == NULL);
    }
    CHECK(side_sender(sd, 3) == NULL);
    CHECK_FAILS(side_stream(sd, PROTO_MAX_STREAMS, &step, &role));
    /* Stream 0's loss ends the attempt: nothing to give back. */
    CHECK_EQ_INT(side_stream_lost(sd, 0), 0);
    CHECK_EQ_U64(atomic_load(&side_plan(sd)->lost), 0);
    /* A further one's work goes to the others, who must hear of it. */
    CHECK_EQ_INT(side_stream_lost(sd, 2), 1);
    CHECK_EQ_U64(atomic_load(&side_plan(sd)->lost), 1u << 2);
    /* A new attempt's stream 1: the earlier role goes first (asan). */
    first = side_sender(sd, 1);
    CHECK_OK(side_stream(sd, 1, &step, &role));
    CHECK(side_sender(sd, 1) == role);
    (void)first;
    side_stream_end(sd, 2);
    CHECK(side_sender(sd, 2) == NULL);
    side_stream_end(sd, 2);  /* twice costs nothing */
    /* The attempt ended: the next starts with no stream lost. */
    side_restart(sd);
    CHECK_EQ_U64(atomic_load(&side_plan(sd)->lost), 0);
    side_add_flags(sd, OPEN_F_COMPRESS);
    CHECK(side_plan(sd)->flags & OPEN_F_COMPRESS);
    /* The roles left (0 and 1) go with the side (asan). */
    side_free(sd);
    side_free(NULL);
    check_rmtree(dir);
}

TEST(side_sending_packs)
{
    char dir[CHECK_PATH_MAX];
    const struct volsend_opts vo = { 0, 0, 0, 0, 0, 0 };
    struct manifest mf;
    struct xfer x;
    struct side *sd;

    check_tmpdir(dir);
    manifest_init(&mf);
    CHECK_OK(manifest_scan(&mf, dir));
    memset(&x, 0, sizeof(x));
    CHECK((sd = side_new_send(&mf, 0, PROTO_MIN_BLOCK, 0, &vo, &x)) !=
        NULL);
    manifest_cleanup(&mf);
    CHECK(plan_packer(side_plan(sd)) != NULL);
    side_free(sd);
    check_rmtree(dir);
}

TEST(side_receiving)
{
    char dir[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 16];
    const char *const tops[] = { "a" };
    conn_step_fn *step;
    struct xfer x;
    struct side *sd;
    void *role;
    unsigned k;

    check_tmpdir(dir);
    snprintf(path, sizeof(path), "%s/dest", dir);
    memset(&x, 0, sizeof(x));
    CHECK((sd = side_new_recv(path, 0, side_tid, PROTO_MIN_BLOCK, &x)) !=
        NULL);
    CHECK(!side_is_sender(sd));
    CHECK(side_plan(sd) == NULL);
    CHECK(side_dest(sd) != NULL && side_incoming(sd) != NULL);
    CHECK(incoming_volrecv(side_incoming(sd)) != NULL);
    side_set_tops(sd, tops, 1);
    for (k = 0; k < 3; k++) {
        CHECK_OK(side_stream(sd, k, &step, &role));
        CHECK(step == receiver_step);
        CHECK(side_receiver(sd, k) == role);
        CHECK(side_sender(sd, k) == NULL);
    }
    /* An agent's: its sender sees its own streams die. */
    CHECK_EQ_INT(side_stream_lost(sd, 1), 0);
    /* A pull's client: stream 0 tells the agent (RETIRE, in the roles'
     * tables), and the others must hear of it. */
    side_set_tell_lost(sd);
    CHECK_EQ_INT(side_stream_lost(sd, 1), 1);
    CHECK_EQ_INT(side_stream_lost(sd, 0), 0);
    CHECK_EQ_INT(side_stream_lost(sd, PROTO_MAX_STREAMS), 0);
    side_stream_end(sd, 1);
    CHECK(side_receiver(sd, 1) == NULL);
    /* With stream 0's role gone nobody is there to tell. */
    side_stream_end(sd, 0);
    CHECK_EQ_INT(side_stream_lost(sd, 2), 0);
    side_restart(sd);
    side_free(sd);
    check_rmtree(dir);
}
