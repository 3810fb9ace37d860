/*
 * What rsync users type (client/cli.c): grouped flags, the options of
 * rsync and scp, filters, --bwlimit's rates, help; and the space check's
 * rule (client/space.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../client/cli.h"
#include "../../client/space.h"
#include "check.h"

TEST(client_rate)
{
    static const struct {
        const char *in;
        uint64_t want;
    } ok[] = {
        { "20M", 20u << 20 }, { "20m", 20u << 20 }, { "500K", 500u << 10 },
        { "100", 100u << 10 }, { "1.5M", 3u << 19 }, { "1G", 1u << 30 },
        { "64KB", 64u << 10 }, { "1024B", 1024 }, { "3355443B", 3355443 },
    };
    static const char *const bad[] = {
        "", "x", "-1", "0", "1X", "M", " 1M", "2000G", "nan", "inf",
    };
    uint64_t v;
    size_t i;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        check_note("%s", ok[i].in);
        CHECK_OK(cli_rate(ok[i].in, &v));
        CHECK_EQ_U64(v, ok[i].want);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("\"%s\"", bad[i]);
        CHECK_EQ_ERR(cli_rate(bad[i], &v), FERRY_ERR_USAGE);
    }
    check_note_clear();
}

/* rsync's habits: grouped flags, -a -r -P --partial, -n, filters, help. */
TEST(client_cli_habits)
{
    char *grouped[] = { "ferry", "push", "-avzP", "-nj2", "--exclude",
        "*.pyc", "--include=keep/", "--delete", "--bwlimit=10M", "a",
        "box:/d", NULL };
    char *help[] = { "ferry", "pull", "-q", "--help", NULL };
    char *topic[] = { "ferry", "help", "clean", NULL };
    char *badtopic[] = { "ferry", "help", "frob", NULL };
    char *foreign[] = { "ferry", "push", "--inplace", "a", "box:/d", NULL };
    char *unknown_in_group[] = { "ferry", "push", "-avY", "a", "box:/d",
        NULL };
    char *value_ends[] = { "ferry", "push", "-e", "ssh -x", "-vp2222", "a",
        "box:/d", NULL };
    char *level_spaced[] = { "ferry", "push", "--compress", "3", "a",
        "box:/d", NULL };
    char *level_file[] = { "ferry", "push", "--compress", "12", "box:/d",
        NULL };
    char dir[CHECK_PATH_MAX], path[CHECK_PATH_MAX + 8], cwd[4096];
    struct cli c;

    CHECK_OK(cli_parse(&c, 11, grouped));
    CHECK_EQ_INT(c.verbose, 1);
    CHECK_EQ_INT(c.compress, 1);
    CHECK_EQ_INT(c.progress, 1);
    CHECK_EQ_INT(c.dry_run, 1);
    CHECK_EQ_INT(c.streams, 2);
    CHECK_EQ_INT(c.delete, 1);
    CHECK_EQ_U64(c.bwlimit, 10u << 20);
    CHECK(c.habits != 0);
    CHECK_EQ_U64(c.filter.n, 2);
    CHECK_EQ_INT(c.filter.v[0].action, FILTER_EXCLUDE);
    CHECK_EQ_INT(c.filter.v[1].action, FILTER_INCLUDE);
    CHECK_EQ_INT(c.filter.v[1].dir_only, 1);
    CHECK_EQ_INT(filter_excluded(&c.filter, "x/y.pyc", 0), 1);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 4, help));
    CHECK_EQ_INT(c.cmd, CMD_HELP);
    CHECK_EQ_STR(c.help_topic, "pull");
    CHECK_OK(cli_parse(&c, 3, topic));
    CHECK_EQ_STR(c.help_topic, "clean");
    CHECK_EQ_ERR(cli_parse(&c, 3, badtopic), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse(&c, 5, foreign), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "never writes in place") != NULL);
    CHECK_EQ_ERR(cli_parse(&c, 5, unknown_in_group), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "unknown option '-Y'") != NULL);
    CHECK_OK(cli_parse(&c, 7, value_ends));
    CHECK_EQ_STR(c.ssh_cmd, "ssh -x");
    CHECK_EQ_STR(c.port, "2222");
    CHECK_EQ_INT(c.verbose, 1);
    cli_cleanup(&c);
    /* "--compress 3" is not a file named 3 sent with -z. */
    CHECK_EQ_ERR(cli_parse(&c, 6, level_spaced), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "--compress=3") != NULL);
    /* ... unless there is a file named so: then it is one. */
    check_tmpdir(dir);
    snprintf(path, sizeof(path), "%s/12", dir);
    check_write_file(path, NULL, 1, 1);
    CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
    CHECK_EQ_INT(chdir(dir), 0);
    CHECK_OK(cli_parse(&c, 5, level_file));
    CHECK_EQ_INT(c.compress, 1);
    cli_cleanup(&c);
    CHECK_EQ_INT(chdir(cwd), 0);
    check_rmtree(dir);
}

/* Which transfers compress blocks (cli_compress_blocks): -z and a fixed
 * level always, auto only on a long link, never not at all; -z and
 * --compress=never contradict each other. */
TEST(client_compress_blocks)
{
    char *dflt[] = { "ferry", "push", "a", "box:/d", NULL };
    char *z[] = { "ferry", "push", "-z", "a", "box:/d", NULL };
    char *level[] = { "ferry", "pull", "--compress=5", "box:/d", "a", NULL };
    char *never[] = { "ferry", "push", "--compress=never", "a", "box:/d",
        NULL };
    char *both[] = { "ferry", "push", "-z", "--compress=never", "a",
        "box:/d", NULL };
    struct cli c;

    CHECK_OK(cli_parse(&c, 4, dflt));
    CHECK_EQ_INT(cli_compress_blocks(&c, 1), 1);
    CHECK_EQ_INT(cli_compress_blocks(&c, 0), 0);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 5, z));
    CHECK_EQ_INT(cli_compress_blocks(&c, 0), 1);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 5, level));
    CHECK_EQ_INT(cli_compress_blocks(&c, 0), 1);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 5, never));
    CHECK_EQ_INT(cli_compress_blocks(&c, 1), 0);
    cli_cleanup(&c);
    CHECK_EQ_ERR(cli_parse(&c, 6, both), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "--compress=never") != NULL);
}

/* The space check's rule: what is left after writing is at least the
 * margin, in percent of the file system (space.h). */
TEST(client_space_fits)
{
    CHECK_EQ_INT(space_fits(0, 100, 100, 20), 1);
    CHECK_EQ_INT(space_fits(80, 100, 100, 20), 1);
    CHECK_EQ_INT(space_fits(81, 100, 100, 20), 0);
    CHECK_EQ_INT(space_fits(101, 100, 100, 0), 0);
    CHECK_EQ_INT(space_fits(100, 100, 100, 0), 1);
    CHECK_EQ_INT(space_fits(10, 30, 100, 20), 1);
    CHECK_EQ_INT(space_fits(11, 30, 100, 20), 0);
    /* No overflow at the top of the range. */
    CHECK_EQ_INT(space_fits(1, UINT64_MAX, UINT64_MAX, 99), 1);
    CHECK_EQ_INT(space_fits(UINT64_MAX / 50, UINT64_MAX, UINT64_MAX, 99),
        0);
}

/* pull --watch and its options: where they may go and what they take. */
TEST(client_cli_watch)
{
    static const char *const bad[][8] = {
        { "pull", "--keep", "2", "box:d", "l" },
        { "pull", "--ready-marker", ".done", "box:d", "l" },
        { "push", "--watch", "30s", "l", "box:d" },
        { "pull", "--watch", "30s", "box:d", "box:e", "l" },
        { "pull", "--watch", "30s", "-n", "box:d", "l" },
        { "pull", "--watch", "30s", "--delete", "box:d", "l" },
        { "pull", "--watch", "0", "box:d", "l" },
        { "pull", "--watch", "soon", "box:d", "l" },
        { "pull", "--watch", "1", "--keep", "0", "box:d", "l" },
        { "pull", "--watch", "1", "--ready-marker", "a/b", "box:d", "l" },
        { "pull", "--watch", "1", "--ready-marker", "", "box:d", "l" },
    };
    char *ok[] = { "ferry", "pull", "--watch", "2m", "--keep=3",
        "--ready-marker", ".done", "box:ckpt/", "here", NULL };
    char *argv[10];
    struct cli c;
    size_t i;
    int n;

    CHECK_OK(cli_parse(&c, 9, ok));
    CHECK_EQ_INT(c.watch_s, 120);
    CHECK_EQ_INT(c.keep, 3);
    CHECK_EQ_STR(c.ready_marker, ".done");
    cli_cleanup(&c);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        argv[0] = "ferry";
        for (n = 0; bad[i][n] != NULL; n++)
            argv[n + 1] = (char *)bad[i][n];
        argv[n + 1] = NULL;
        check_note("case %zu", i);
        CHECK_EQ_ERR(cli_parse(&c, n + 1, argv), FERRY_ERR_USAGE);
        CHECK(c.err[0] != '\0');
    }
    check_note_clear();
}
