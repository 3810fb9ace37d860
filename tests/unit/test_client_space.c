/*
 * The space check's decision (client/space.c), fed numbers: the offered
 * bytes that fit go on at once; those that do not have the trees
 * compared inside the same run (a stand-in comparison here), and the
 * run goes on or stops on what that finds; --force and a later attempt
 * are not checked.
 */
#include <errno.h>
#include <string.h>

#include "../../client/exitcode.h"
#include "../../client/space.h"
#include "check.h"

/* The stand-in comparison: counts its calls, answers need or code. */
static unsigned compares;
static uint64_t compare_need;
static int compare_code;

static int
fake_compare(const struct space_check *sc, uint64_t *need)
{
    (void)sc;
    compares++;
    *need = compare_need;
    return compare_code;
}

static void
check_push(struct space_check *sc, struct cli *c, unsigned margin,
    uint64_t offered)
{
    memset(c, 0, sizeof(*c));
    c->cmd = CMD_PUSH;
    c->margin = margin;
    space_check_init(sc, c, NULL, fake_compare);
    sc->need = offered;
    compares = 0;
    compare_need = 0;
    compare_code = EXIT_OK;
}

TEST(client_space_decision)
{
    struct space_check sc;
    struct cli c;

    /* Every byte offered fits: no comparison. */
    check_push(&sc, &c, 20, 50);
    CHECK_OK(space_on_report(&sc, 100, 100, 50));
    CHECK_EQ_INT(compares, 0);
    CHECK_EQ_INT(sc.stop, 0);
    CHECK_EQ_INT(sc.checked, 1);

    /* It does not: the comparison finds what is really needed, which
     * fits, and the same run goes on. */
    check_push(&sc, &c, 20, 90);
    compare_need = 30;
    CHECK_OK(space_on_report(&sc, 100, 100, 90));
    CHECK_EQ_INT(compares, 1);
    CHECK_EQ_INT(sc.compared, 1);
    CHECK_EQ_INT(sc.stop, 0);
    CHECK_EQ_U64(sc.need, 30);

    /* ... or does not: the run stops, the caller says how much. */
    check_push(&sc, &c, 20, 90);
    compare_need = 85;
    CHECK_EQ_ERR(space_on_report(&sc, 100, 100, 90), -ENOSPC);
    CHECK_EQ_INT(compares, 1);
    CHECK_EQ_INT(sc.stop, 1);
    CHECK_EQ_INT(sc.code, EXIT_DEST);
    CHECK_EQ_U64(sc.need, 85);
    CHECK_EQ_U64(sc.avail, 100);
    CHECK_EQ_U64(sc.size, 100);

    /* A comparison that failed ends the run with its status. */
    check_push(&sc, &c, 20, 90);
    compare_code = EXIT_CONNECT;
    CHECK_FAILS(space_on_report(&sc, 100, 100, 90));
    CHECK_EQ_INT(sc.stop, 1);
    CHECK_EQ_INT(sc.code, EXIT_CONNECT);

    /* --margin: 85 of 100 leaves 15%, enough for 10, not for 20. */
    check_push(&sc, &c, 10, 85);
    CHECK_OK(space_on_report(&sc, 100, 100, 85));
    CHECK_EQ_INT(compares, 0);
    check_push(&sc, &c, 20, 85);
    compare_need = 85;
    CHECK_FAILS(space_on_report(&sc, 100, 100, 85));
    CHECK_EQ_INT(compares, 1);

    /* --force: not checked at all. */
    check_push(&sc, &c, 20, 1000);
    c.force = 1;
    CHECK_OK(space_on_report(&sc, 100, 100, 1000));
    CHECK_EQ_INT(compares, 0);
    CHECK_EQ_INT(sc.stop, 0);

    /* A later attempt of a run that passed is not checked again, though
     * the run's own writes took the room. */
    check_push(&sc, &c, 20, 50);
    CHECK_OK(space_on_report(&sc, 100, 100, 50));
    CHECK_OK(space_on_report(&sc, 10, 100, 50));
    CHECK_EQ_INT(compares, 0);
    CHECK_EQ_INT(sc.stop, 0);

    /* A file system of no size says nothing: no check. */
    check_push(&sc, &c, 20, 1000);
    CHECK_OK(space_on_report(&sc, 0, 0, 1000));
    CHECK_EQ_INT(compares, 0);
}

/* A pull measures its own destination and counts what the agent
 * offers: more than any file system holds has the trees compared. */
TEST(client_space_pull)
{
    char *local[1] = { "." };
    struct space_check sc;
    struct cli c;

    check_push(&sc, &c, 20, 0);
    c.cmd = CMD_PULL;
    c.local_paths = local;
    c.nlocal = 1;
    space_check_init(&sc, &c, NULL, fake_compare);
    CHECK_OK(space_on_report(&sc, 0, 0, UINT64_MAX / 2));
    CHECK_EQ_INT(compares, 1);
    CHECK(sc.size > 0);
    CHECK_EQ_U64(sc.need, 0);
    CHECK_EQ_INT(sc.stop, 0);
}
