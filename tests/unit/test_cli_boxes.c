/*
 * Many boxes on the command line (client/cli_words.c): a host's range
 * (box[1-3]:p, node[01-16]:p), a push's trailing destinations, a pull's
 * hosts, and the words refused with a line that says why.
 */
#include <stdio.h>
#include <string.h>

#include "../../client/cli.h"
#include "../../common/alloc.h"
#include "check.h"

/* Expands word and checks the words it makes against want (NULL-ended). */
static void
expect_range(const char *word, const char *const *want)
{
    char **v, err[400];
    int n, i, nwant;

    for (nwant = 0; want[nwant] != NULL; nwant++)
        ;
    err[0] = '\0';
    CHECK_OK(cli_range_expand(word, CLI_MAX_BOXES, &v, &n, err,
        sizeof(err)));
    CHECK_EQ_INT(n, nwant);
    for (i = 0; i < n && i < nwant; i++)
        CHECK_EQ_STR(v[i], want[i]);
    for (i = 0; i < n; i++)
        xfree(v[i]);
    xfree(v);
}

/* Expands word, expecting a refusal whose line holds the word and why. */
static void
expect_refused(const char *word, int max, const char *why)
{
    char **v = NULL, err[400];
    int n = -1;

    err[0] = '\0';
    CHECK_EQ_ERR(cli_range_expand(word, max, &v, &n, err, sizeof(err)),
        FERRY_ERR_USAGE);
    CHECK(v == NULL);
    CHECK_EQ_INT(n, 0);
    CHECK(strstr(err, word) != NULL);
    if (strstr(err, why) == NULL)
        check_fail(__FILE__, __LINE__, "'%s' refused as '%s', not with "
            "'%s'", word, err, why);
}

TEST(client_cli_range)
{
    static const char *const three[] = { "box1:p", "box2:p", "box3:p",
        NULL };
    static const char *const padded[] = { "n01:/w", "n02:/w", "n03:/w",
        "n04:/w", "n05:/w", "n06:/w", "n07:/w", "n08:/w", "n09:/w",
        "n10:/w", NULL };
    static const char *const list[] = { "alice@gpu1.lab:d",
        "alice@gpu3.lab:d", "alice@gpu5.lab:d", "alice@gpu6.lab:d", NULL };
    static const char *const user[] = { "alice@gpu1.lab:d", NULL };
    static const char *const v6[] = { "[::1]:p", NULL };
    static const char *const v6u[] = { "me@[fe80::1]:a[1-2]", NULL };
    static const char *const plain[] = { "box:/ws/x[1-2].pt", NULL };
    static const char *const local[] = { "local:d[1-3]", NULL };
    static const char *const wide[] = { "r9:x", "r10:x", "r11:x", NULL };
    static const char *const one[] = { "b7:x", NULL };

    expect_range("box[1-3]:p", three);
    expect_range("n[01-10]:/w", padded);
    expect_range("alice@gpu[1,3,5-6].lab:d", list);
    expect_range("alice@gpu[1].lab:d", user);
    /* A leading '[' is an address; a '[' in the path is no range. */
    expect_range("[::1]:p", v6);
    expect_range("me@[fe80::1]:a[1-2]", v6u);
    expect_range("box:/ws/x[1-2].pt", plain);
    expect_range("local:d[1-3]", local);
    /* Without a leading 0 the numbers take their own widths. */
    expect_range("r[9-11]:x", wide);
    expect_range("b[7]:x", one);

    expect_refused("box[3-1]:p", CLI_MAX_BOXES, "runs backwards");
    expect_refused("box[a-b]:p", CLI_MAX_BOXES, "not a range of numbers");
    expect_refused("box[1-]:p", CLI_MAX_BOXES, "not a range of numbers");
    expect_refused("box[-3]:p", CLI_MAX_BOXES, "not a range of numbers");
    expect_refused("box[1-2,]:p", CLI_MAX_BOXES, "not a range of numbers");
    expect_refused("box[]:p", CLI_MAX_BOXES, "not a range of numbers");
    expect_refused("box[1--2]:p", CLI_MAX_BOXES, "not a range of numbers");
    expect_refused("box[1234567890-1234567891]:p", CLI_MAX_BOXES,
        "not a range of numbers");
    expect_refused("box[1-3:p", CLI_MAX_BOXES, "without its ']'");
    expect_refused("r[1-2]n[1-2]:p", CLI_MAX_BOXES, "one range per host");
    expect_refused("box[1-257]:p", CLI_MAX_BOXES, "too many boxes (at most 256");
    expect_refused("box[0-999999999]:p", CLI_MAX_BOXES, "too many boxes");
    /* The budget left by the words before. */
    expect_refused("box[1-3]:p", 2, "too many boxes");
}

/* Parses a command line of NULL-ended words. */
static int
parse(struct cli *c, char **argv)
{
    int argc;

    for (argc = 0; argv[argc] != NULL; argc++)
        ;
    return cli_parse(c, argc, argv);
}

/* Parses argv, expecting a refusal whose line holds why. */
static void
expect_usage(char **argv, const char *why)
{
    struct cli c;

    CHECK_EQ_ERR(parse(&c, argv), FERRY_ERR_USAGE);
    if (strstr(c.err, why) == NULL)
        check_fail(__FILE__, __LINE__, "refused as '%s', not with '%s'",
            c.err, why);
}

TEST(client_cli_boxes_push)
{
    char *range[] = { "ferry", "push", "a", "b/", "box[1-3]:/d", NULL };
    char *two[] = { "ferry", "push", "a", "b1:/x", "alice@b2:/y", NULL };
    char *one[] = { "ferry", "push", "a", "b/", "box:/d", NULL };
    char *v6[] = { "ferry", "push", "a", "[::1]:p", NULL };
    char *shared[] = { "ferry", "push", "a", "box:/x", "box:/y",
        "box:/x", "--boxes-at-once", "2", NULL };
    char *mid[] = { "ferry", "push", "a", "b1:/x", "c", "b2:/y", NULL };
    char *none[] = { "ferry", "push", "b1:/x", "b2:/y", NULL };
    char *local[] = { "ferry", "push", "a", "b", NULL };
    char *many[] = { "ferry", "push", "a", "b[1-200]:/x", "c[1-57]:/x",
        NULL };
    char *most[] = { "ferry", "push", "a", "b[1-200]:/x", "c[1-56]:/x",
        NULL };
    char *bad[] = { "ferry", "push", "a", "b1:/x", "b[3-1]:/x", NULL };
    char *once1[] = { "ferry", "push", "--boxes-at-once", "2", "a", "b:/x",
        NULL };
    char *once0[] = { "ferry", "push", "--boxes-at-once", "0", "a",
        "b[1-2]:/x", NULL };
    struct cli c;

    CHECK_OK(parse(&c, range));
    CHECK_EQ_INT(c.nlocal, 2);
    CHECK_EQ_STR(c.local_paths[1], "b/");
    CHECK_EQ_INT(c.nboxes, 3);
    CHECK(c.remote.host == NULL);
    CHECK_EQ_STR(c.boxes[0].remote.host, "box1");
    CHECK_EQ_STR(c.boxes[2].remote.host, "box3");
    CHECK_EQ_STR(c.boxes[2].remote.path, "/d");
    CHECK_EQ_STR(c.boxes[1].label, "box2");
    CHECK_EQ_INT(c.boxes_at_once, 0);
    cli_cleanup(&c);

    /* Every remote word at the end is a destination. */
    CHECK_OK(parse(&c, two));
    CHECK_EQ_INT(c.nlocal, 1);
    CHECK_EQ_INT(c.nboxes, 2);
    CHECK_EQ_STR(c.boxes[1].remote.user, "alice");
    CHECK_EQ_STR(c.boxes[1].remote.path, "/y");
    CHECK_EQ_STR(c.boxes[1].label, "b2");
    cli_cleanup(&c);

    /* One destination without a range: one box, as ever. */
    CHECK_OK(parse(&c, one));
    CHECK_EQ_INT(c.nboxes, 0);
    CHECK_EQ_STR(c.remote.host, "box");
    CHECK_EQ_INT(c.nlocal, 2);
    cli_cleanup(&c);
    CHECK_OK(parse(&c, v6));
    CHECK_EQ_INT(c.nboxes, 0);
    CHECK_EQ_STR(c.remote.host, "::1");
    cli_cleanup(&c);

    /* Two paths of one box are two boxes named by their paths; the same
     * destination twice is one. */
    CHECK_OK(parse(&c, shared));
    CHECK_EQ_INT(c.nboxes, 2);
    CHECK_EQ_STR(c.boxes[0].label, "box:/x");
    CHECK_EQ_STR(c.boxes[1].label, "box:/y");
    CHECK_EQ_INT(c.boxes_at_once, 2);
    cli_cleanup(&c);

    expect_usage(mid, "source 'b1:/x' is remote");
    expect_usage(none, "source 'b1:/x' is remote");
    expect_usage(local, "destination 'b' is not remote");
    expect_usage(many, "too many boxes (at most 256");
    CHECK_OK(parse(&c, most));
    CHECK_EQ_INT(c.nboxes, 256);
    CHECK_EQ_STR(c.boxes[255].remote.host, "c56");
    cli_cleanup(&c);
    expect_usage(bad, "b[3-1]:/x: the range 3-1 runs backwards");
    expect_usage(once1, "--boxes-at-once goes with");
    expect_usage(once0, "want a number from 1 to 256");
}

TEST(client_cli_boxes_pull)
{
    char *range[] = { "ferry", "pull", "box[1-2]:/c", "box[1-2]:d",
        "out", NULL };
    char *hosts[] = { "ferry", "pull", "box:/a", "other:/b", "box:/c",
        "out", NULL };
    char *one[] = { "ferry", "pull", "box:/a", "box:b", "out", NULL };
    char *single[] = { "ferry", "pull", "box[4]:/a", "out", NULL };
    char *logins[] = { "ferry", "pull", "alice@box:/a", "bob@box:/b",
        "out", NULL };
    char *watch[] = { "ferry", "pull", "--watch", "1m", "box[1-2]:/a",
        "out", NULL };
    char *remote[] = { "ferry", "pull", "box[1-2]:/a", "b:/out", NULL };
    char *clash[] = { "ferry", "pull", "box[1-2]:/a/x", "box[1-2]:/b/x",
        "out", NULL };
    struct cli c;

    CHECK_OK(parse(&c, range));
    CHECK_EQ_INT(c.nboxes, 2);
    CHECK_EQ_STR(c.local_paths[0], "out");
    CHECK_EQ_INT(c.nremote, 0);
    CHECK_EQ_STR(c.boxes[1].label, "box2");
    CHECK_EQ_INT(c.boxes[1].npaths, 2);
    CHECK_EQ_STR(c.boxes[1].paths[0], "/c");
    CHECK_EQ_STR(c.boxes[1].paths[1], "d");
    cli_cleanup(&c);

    /* Sources on several hosts: each host's go together. */
    CHECK_OK(parse(&c, hosts));
    CHECK_EQ_INT(c.nboxes, 2);
    CHECK_EQ_STR(c.boxes[0].label, "box");
    CHECK_EQ_INT(c.boxes[0].npaths, 2);
    CHECK_EQ_STR(c.boxes[0].paths[1], "/c");
    CHECK_EQ_STR(c.boxes[1].label, "other");
    CHECK_EQ_INT(c.boxes[1].npaths, 1);
    cli_cleanup(&c);

    /* One host without a range: DEST itself, as ever. */
    CHECK_OK(parse(&c, one));
    CHECK_EQ_INT(c.nboxes, 0);
    CHECK_EQ_STR(c.remote.host, "box");
    CHECK_EQ_INT(c.nremote, 2);
    CHECK_EQ_STR(c.remote_paths[1], "b");
    cli_cleanup(&c);

    /* A range of one is still many: DEST/box4/. */
    CHECK_OK(parse(&c, single));
    CHECK_EQ_INT(c.nboxes, 1);
    CHECK_EQ_STR(c.boxes[0].label, "box4");
    cli_cleanup(&c);

    expect_usage(logins, "box is named with two logins");
    expect_usage(watch, "--watch pulls from one box");
    expect_usage(remote, "destination 'b:/out' must be local");
    expect_usage(clash, "pull: ");
}
