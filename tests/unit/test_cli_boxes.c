/*
 * Many boxes on the command line (client/cli_words.c): a host's range
 * (box[1-3]:p, node[01-16]:p), a push's trailing destinations, a pull's
 * hosts, and the words refused with a line that says why.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../client/boxes.h"
#include "../../client/cli.h"
#include "../../client/exitcode.h"
#include "../../client/output.h"
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
    expect_refused("box[1-257]:p", CLI_MAX_BOXES,
        "too many boxes (at most 256");
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
    char *status[] = { "ferry", "status", "box[1-2]:/a", NULL };
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
    expect_usage(status, "status takes one box ('box[1-2]:/a' is a range)");
}

/* What the stand-in data plane shares with the test, across its
 * children. */
struct fake_plane {
    atomic_int running, most, runs;
};

static struct fake_plane *fake;

/* The length of a line of a box's stdout that takes several reads. */
#define FAKE_LONG 200000
/* Short lines after it, as many as a busy box's events: the child's
 * stdio hands them to the pipe in blocks that end within a line. */
#define FAKE_SHORT 20000

/* A box's transfer, stood in for: box /x2 fails with a line of its own,
 * the others print a line on each of stdout and stderr; each stays a
 * while, so that the boxes overlap when they may. */
static int
fake_one(const struct cli *cli)
{
    int now = atomic_fetch_add(&fake->running, 1) + 1, most;

    atomic_fetch_add(&fake->runs, 1);
    while ((most = atomic_load(&fake->most)) < now &&
        !atomic_compare_exchange_weak(&fake->most, &most, now))
        ;
    usleep(150000);
    atomic_fetch_sub(&fake->running, 1);
    if (cli->nboxes != 0 || cli->boxes != NULL)
        return 99;
    if (strcmp(cli->remote.path, "/x2") == 0) {
        fprintf(stderr, "ferry: cannot write there\n");
        return EXIT_DEST;
    }
    if (cli->json) {
        /* A line longer than a pipe holds: it reaches the parent in
         * several reads and must leave it whole. */
        static char pad[FAKE_LONG + 1];

        int i;

        memset(pad, 'a', FAKE_LONG);
        printf("{\"event\":\"long\",\"pad\":\"%s\"}\n", pad);
        for (i = 0; i < FAKE_SHORT; i++)
            printf("{\"event\":\"short\",\"n\":%d}\n", i);
    }
    printf("send %s\n", cli->remote.path);
    fprintf(stderr, "ferry: done with %s", cli->remote.path);
    return EXIT_OK;
}

/* Runs boxes_main on argv with fake_one, stdout and stderr into files;
 * returns its status and the two texts (static). */
static int
run_fake(char **argv, char **out, char **err)
{
    static char obuf[FAKE_LONG + FAKE_SHORT * 32 + 8192], ebuf[8192];
    char opath[] = "/tmp/ferry-boxes-out.XXXXXX";
    char epath[] = "/tmp/ferry-boxes-err.XXXXXX";
    int ofd = mkstemp(opath), efd = mkstemp(epath), so, se, code;
    struct cli c;
    ssize_t n;

    CHECK(ofd >= 0 && efd >= 0);
    unlink(opath);
    unlink(epath);
    CHECK_OK(parse(&c, argv));
    fflush(NULL);
    so = dup(STDOUT_FILENO);
    se = dup(STDERR_FILENO);
    dup2(ofd, STDOUT_FILENO);
    dup2(efd, STDERR_FILENO);
    code = boxes_main(&c, fake_one);
    fflush(NULL);
    dup2(so, STDOUT_FILENO);
    dup2(se, STDERR_FILENO);
    close(so);
    close(se);
    cli_cleanup(&c);
    n = pread(ofd, obuf, sizeof(obuf) - 1, 0);
    obuf[n > 0 ? n : 0] = '\0';
    n = pread(efd, ebuf, sizeof(ebuf) - 1, 0);
    ebuf[n > 0 ? n : 0] = '\0';
    close(ofd);
    close(efd);
    *out = obuf;
    *err = ebuf;
    return code;
}

static void
expect_text(const char *text, const char *want)
{
    if (strstr(text, want) == NULL)
        check_fail(__FILE__, __LINE__, "no '%s' in:\n%s", want, text);
}

TEST(client_boxes_run)
{
    char *three[] = { "ferry", "push", "-q", "--boxes-at-once", "2", "a",
        "local:/x1", "local:/x2", "local:/x3", NULL };
    char *loud[] = { "ferry", "push", "a", "local:/x1", "local:/x3", NULL };
    char *json[] = { "ferry", "push", "--json", "a", "local:/x1",
        "local:/x2", NULL };
    char *out, *err;

    fake = mmap(NULL, sizeof(*fake), PROT_READ | PROT_WRITE,
        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(fake != MAP_FAILED);
    memset(fake, 0, sizeof(*fake));

    /* Three boxes, two at a time: all run, never more than two, one
     * fails, so the run's status is 10; each line is named by its box
     * (the failing one's too), and -q leaves out the end's lines. */
    CHECK_EQ_INT(run_fake(three, &out, &err), EXIT_BOXES);
    CHECK_EQ_INT(atomic_load(&fake->runs), 3);
    CHECK_EQ_INT(atomic_load(&fake->most), 2);
    expect_text(out, "local:/x1: send /x1\n");
    expect_text(out, "local:/x3: send /x3\n");
    CHECK(strstr(out, "/x2") == NULL);
    expect_text(err, "ferry: local:/x2: cannot write there\n");
    /* A line without its newline is a line at the child's end. */
    expect_text(err, "ferry: local:/x1: done with /x1\n");
    CHECK(strstr(err, "boxes:") == NULL);

    /* All well: 0, the line per box and the one for all. */
    memset(fake, 0, sizeof(*fake));
    CHECK_EQ_INT(run_fake(loud, &out, &err), EXIT_OK);
    CHECK_EQ_INT(atomic_load(&fake->most), 2);
    expect_text(err, "ferry: local:/x3: ok\n");
    expect_text(err, "ferry: 2 boxes: 2 ok, 0 failed, in ");

    /* --json: a box event for each, with its status, then the summary
     * of all; stdout holds JSON alone (the boxes' own lines pass as
     * they are). */
    memset(fake, 0, sizeof(*fake));
    output_command("push");
    CHECK_EQ_INT(run_fake(json, &out, &err), EXIT_BOXES);
    expect_text(out, "{\"event\":\"box\",\"host\":\"local:/x2\","
        "\"exit_code\":3,\"ok\":false,");
    expect_text(out, "{\"event\":\"box\",\"host\":\"local:/x1\","
        "\"exit_code\":0,\"ok\":true,");
    expect_text(out, "{\"event\":\"summary\",\"ok\":false,"
        "\"exit_code\":10,\"boxes\":2,\"boxes_ok\":1,"
        "\"boxes_failed\":1,");
    expect_text(out, "\"command\":\"push\"}\n");
    {
        const char *l = strstr(out, "{\"event\":\"long\"");

        CHECK(l != NULL);
        CHECK_EQ_U64(strcspn(l, "\n"), FAKE_LONG + 25);
    }
    {
        /* Every short line whole, in order. */
        const char *l = out;
        char want[64];
        int n = 0, len;

        while ((l = strstr(l, "{\"event\":\"short\"")) != NULL) {
            len = snprintf(want, sizeof(want),
                "{\"event\":\"short\",\"n\":%d}\n", n);
            if (strncmp(l, want, (size_t)len) != 0)
                check_fail(__FILE__, __LINE__, "short line %d: '%.*s'", n,
                    (int)strcspn(l, "\n"), l);
            l += len;
            n++;
        }
        CHECK_EQ_INT(n, FAKE_SHORT);
    }
    munmap(fake, sizeof(*fake));
}

TEST(client_boxes_status)
{
    static const int ok[] = { 0, 0, 0 }, one[] = { 0, 3, 0 },
        all[] = { 5, 5 };

    CHECK_EQ_INT(boxes_status(ok, 3, 0), EXIT_OK);
    CHECK_EQ_INT(boxes_status(one, 3, 0), EXIT_BOXES);
    /* Every box failing alike is still "some boxes failed": one rule. */
    CHECK_EQ_INT(boxes_status(all, 2, 0), EXIT_BOXES);
    CHECK_EQ_INT(boxes_status(ok, 3, 1), EXIT_INTERRUPTED);
    CHECK_EQ_INT(boxes_status(one, 0, 0), EXIT_OK);
}
