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
#include "../../client/help.h"
#include "../../client/space.h"
#include "../../proto/msg.h"
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

/* Parses the words after "ferry" (NULL-terminated) into c. */
static int
parse_words(struct cli *c, const char *const *words)
{
    static char *argv[32];
    int n = 0;

    argv[n++] = "ferry";
    while (words[n - 1] != NULL && n < 31) {
        argv[n] = (char *)words[n - 1];
        n++;
    }
    argv[n] = NULL;
    return cli_parse(c, n, argv);
}

/* The line ferry prints for the rsync flags c took (help_habits). */
static void
habits_line(const struct cli *c, char *out, size_t outlen)
{
    FILE *f = fmemopen(out, outlen, "w");

    CHECK(f != NULL);
    help_habits(f, c->habits);
    fclose(f);
}

/*
 * ssh's letters and rsync's: in a group of letters each is rsync's
 * (-rlptgoD is -a spelled out: -l was read as ssh's user "ptgoD"); alone
 * with its value, or joined to a value that is not all letters, ssh's.
 */
TEST(client_cli_letters)
{
    static const char *const groups[][6] = {
        { "push", "-rlptgoD", "a", "box:/d" },
        { "push", "-rltv", "a", "box:/d" },
        { "push", "-rlv", "a", "box:/d" },
        { "push", "-avi", "a", "box:/d" },
        { "pull", "-ltr", "box:/d", "a" },
        { "push", "-avp", "a", "box:/d" },
    };
    static const char *const lone[] = { "push", "-p", "2222", "-l",
        "alice", "-i", "key", "-o", "BatchMode=yes", "-F", "cfg", "a",
        "box:/d", NULL };
    static const char *const joined[] = { "push", "-p2222", "-oK=V",
        "-i~/.ssh/k", "-vl1", "a", "box:/d", NULL };
    static const char *const filt[] = { "push", "-avF", "a", "box:/d",
        NULL };
    static const char *const typo[] = { "push", "-ikey", "a", "box:/d",
        NULL };
    char line[512];
    struct cli c;
    size_t i;

    for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
        check_note("%s", groups[i][1]);
        CHECK_OK(parse_words(&c, groups[i]));
        CHECK(c.login == NULL);
        CHECK(c.port == NULL);
        CHECK_EQ_INT(c.nidentities, 0);
        CHECK_EQ_INT(c.nssh_opts, 0);
        CHECK_EQ_INT(c.nlocal, 1);
        habits_line(&c, line, sizeof(line));
        CHECK(strstr(line, "no need") != NULL);
        CHECK(strstr(line, "are ssh's") != NULL);
        cli_cleanup(&c);
    }
    check_note("-rlptgoD");
    CHECK_OK(parse_words(&c, groups[0]));
    habits_line(&c, line, sizeof(line));
    CHECK(strstr(line, "-r, -l, -p, -t, -g, -o, -D: no need") != NULL);
    CHECK(strstr(line, "symlinks as links, permission bits and mtimes") !=
        NULL);
    CHECK(strstr(line, "files belong to the remote user") != NULL);
    CHECK(strstr(line, "device files, sockets and FIFOs are skipped") !=
        NULL);
    cli_cleanup(&c);
    check_note("lone");
    CHECK_OK(parse_words(&c, lone));
    CHECK_EQ_STR(c.port, "2222");
    CHECK_EQ_STR(c.login, "alice");
    CHECK_EQ_INT(c.nidentities, 1);
    CHECK_EQ_STR(c.identities[0], "key");
    CHECK_EQ_INT(c.nssh_opts, 1);
    CHECK_EQ_STR(c.ssh_opts[0], "BatchMode=yes");
    CHECK_EQ_STR(c.ssh_config, "cfg");
    CHECK_EQ_INT(c.habits, 0);
    cli_cleanup(&c);
    check_note("joined");
    CHECK_OK(parse_words(&c, joined));
    CHECK_EQ_STR(c.port, "2222");
    CHECK_EQ_STR(c.ssh_opts[0], "K=V");
    CHECK_EQ_STR(c.identities[0], "~/.ssh/k");
    CHECK_EQ_STR(c.login, "1");
    CHECK_EQ_INT(c.verbose, 1);
    cli_cleanup(&c);
    /* rsync's -F (.rsync-filter files) is not ferry's; -ikey was meant
     * as ssh's -i. */
    check_note("-avF");
    CHECK_EQ_ERR(parse_words(&c, filt), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "write -F FILE alone") != NULL);
    check_note("-ikey");
    CHECK_EQ_ERR(parse_words(&c, typo), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "write -i key") != NULL);
    check_note_clear();
}

/* rsync's flags whose meaning ferry has are taken with the note; -W is
 * --delta=never; --timeout points to --stall-timeout; typos get the
 * option meant. */
TEST(client_cli_rsync_flags)
{
    static const char *const taken[][2] = {
        { "-t", "mtimes" }, { "--times", "mtimes" },
        { "--perms", "permission bits" }, { "--links", "symlinks" },
        { "-S", "sparse files sparse" }, { "--sparse", "sparse files" },
        { "--human-readable", "human-readable sizes" },
        { "--itemize-changes", "-v lists files" },
        { "-W", "--delta=never" }, { "--whole-file", "--delta=never" },
    };
    static const char *const typos[][2] = {
        { "--exlude=x", "--exclude" }, { "--dleete", "--delete" },
        { "--stall-timout=5", "--stall-timeout" },
        { "--keep-volume", "--keep-volumes" }, { "--dry-rn", "--dry-run" },
    };
    static const char *const far[] = { "--bogus", "--del", "--no-such" };
    const char *words[6] = { "push", NULL, "a", "box:/d", NULL };
    char line[512], want[64];
    struct cli c;
    size_t i;

    for (i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
        words[1] = taken[i][0];
        check_note("%s", taken[i][0]);
        CHECK_OK(parse_words(&c, words));
        CHECK(c.habits != 0);
        habits_line(&c, line, sizeof(line));
        CHECK(strstr(line, taken[i][1]) != NULL);
        CHECK_EQ_INT((c.delta_flags & OPEN_F_DELTA_NEVER) != 0,
            taken[i][0][1] == 'W' || taken[i][0][2] == 'w');
        cli_cleanup(&c);
    }
    /* --mkpath does what rsync's does (DEST's missing parents are made,
     * and not without it): an option, not a habit. */
    words[1] = "--mkpath";
    check_note("--mkpath");
    CHECK_OK(parse_words(&c, words));
    CHECK_EQ_INT(c.mkpath, 1);
    CHECK_EQ_INT(c.habits, 0);
    cli_cleanup(&c);
    words[1] = "--timeout=60";
    check_note("--timeout");
    CHECK_EQ_ERR(parse_words(&c, words), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "use --stall-timeout") != NULL);
    for (i = 0; i < sizeof(typos) / sizeof(typos[0]); i++) {
        words[1] = typos[i][0];
        check_note("%s", typos[i][0]);
        CHECK_EQ_ERR(parse_words(&c, words), FERRY_ERR_USAGE);
        snprintf(want, sizeof(want), "did you mean %s?", typos[i][1]);
        CHECK(strstr(c.err, want) != NULL);
    }
    for (i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
        words[1] = far[i];
        check_note("%s", far[i]);
        CHECK_EQ_ERR(parse_words(&c, words), FERRY_ERR_USAGE);
        CHECK(strstr(c.err, "did you mean") == NULL);
    }
    check_note_clear();
}

/* Options before the command, as ssh's go: those of the command. */
TEST(client_cli_options_first)
{
    static const char *const cfg[] = { "-F", "cfg", "push", "a", "box:/d",
        NULL };
    static const char *const v[] = { "-v", "-p", "2222", "pull", "box:/d",
        "a", NULL };
    static const char *const grp[] = { "-avj", "2", "push", "a", "box:/d",
        NULL };
    static const char *const other[] = { "--watch", "1m", "push", "a",
        "box:/d", NULL };
    static const char *const none[] = { "-v", NULL };
    static const char *const help[] = { "-v", "help", "pull", NULL };
    struct cli c;

    CHECK_OK(parse_words(&c, cfg));
    CHECK_EQ_INT(c.cmd, CMD_PUSH);
    CHECK_EQ_STR(c.ssh_config, "cfg");
    CHECK_EQ_INT(c.nlocal, 1);
    CHECK_EQ_STR(c.local_paths[0], "a");
    cli_cleanup(&c);
    CHECK_OK(parse_words(&c, v));
    CHECK_EQ_INT(c.cmd, CMD_PULL);
    CHECK_EQ_INT(c.verbose, 1);
    CHECK_EQ_STR(c.port, "2222");
    CHECK_EQ_STR(c.local_paths[0], "a");
    cli_cleanup(&c);
    CHECK_OK(parse_words(&c, grp));
    CHECK_EQ_INT(c.cmd, CMD_PUSH);
    CHECK_EQ_INT(c.streams, 2);
    CHECK_EQ_INT(c.nlocal, 1);
    cli_cleanup(&c);
    CHECK_EQ_ERR(parse_words(&c, other), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "--watch cannot go with push") != NULL);
    CHECK_EQ_ERR(parse_words(&c, none), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "no command") != NULL);
    CHECK_OK(parse_words(&c, help));
    CHECK_EQ_INT(c.cmd, CMD_HELP);
    CHECK_EQ_STR(c.help_topic, "pull");
}
