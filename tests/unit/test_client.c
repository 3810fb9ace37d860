/* Tests for the client's pure parts: remote locations, durations and
 * duplicate sources (client/cli.c), `ssh -G` output (client/sshcfg.c),
 * shell quoting (client/ssh.c), private key files (client/ssh_auth.c),
 * the retry policy and its wait (client/retry.c) and the progress line
 * (client/output.c). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "../../client/cli.h"
#include "../../client/output.h"
#include "../../client/pack.h"
#include "../../client/retry.h"
#include "../../client/ssh.h"
#include "../../client/sshcfg.h"
#include "../../client/digest.h"
#include "../../client/ssh_int.h"
#include "../../common/alloc.h"
#include "../../common/buf.h"
#include "../../engine/volume/volume.h"
#include "../../engine/volume/volwrite.h"
#include "../../proto/msg_vol.h"
#include "check.h"

TEST(client_parse_remote)
{
    struct remote r;

    CHECK_OK(cli_parse_remote("box:/data", &r));
    CHECK_EQ_STR(r.host, "box");
    CHECK(r.user == NULL);
    CHECK_EQ_STR(r.path, "/data");
    remote_cleanup(&r);

    CHECK_OK(cli_parse_remote("me@gpu.example:ckpt/x.pt", &r));
    CHECK_EQ_STR(r.user, "me");
    CHECK_EQ_STR(r.host, "gpu.example");
    CHECK_EQ_STR(r.path, "ckpt/x.pt");
    remote_cleanup(&r);

    /* "host:" is the remote home directory, as with scp. */
    CHECK_OK(cli_parse_remote("box:", &r));
    CHECK_EQ_STR(r.path, ".");
    remote_cleanup(&r);

    CHECK_OK(cli_parse_remote("u@[::1]:/w", &r));
    CHECK_EQ_STR(r.host, "::1");
    CHECK_EQ_STR(r.user, "u");
    CHECK_EQ_STR(r.path, "/w");
    remote_cleanup(&r);

    CHECK_OK(cli_parse_remote("local:/tmp/x", &r));
    CHECK(r.local);
    CHECK(r.host == NULL);
    CHECK_EQ_STR(r.path, "/tmp/x");
    remote_cleanup(&r);

    /* A colon after a slash, or none at all: a local path. */
    CHECK_EQ_ERR(cli_parse_remote("./a:b", &r), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse_remote("dir/x:y", &r), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse_remote("plain", &r), FERRY_ERR_USAGE);
    /* No host, or one that would read as an ssh option. */
    CHECK_EQ_ERR(cli_parse_remote(":path", &r), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse_remote("-oProxyCommand=x:y", &r),
        FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse_remote("u@[::1/x", &r), FERRY_ERR_USAGE);
}

/* cli_parse explains a usage error on stderr; the expected ones are not
 * worth showing in the test output. */
static int
quiet_stderr(void)
{
    int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);

    if (null >= 0) {
        dup2(null, STDERR_FILENO);
        close(null);
    }
    return saved;
}

static void
restore_stderr(int saved)
{
    if (saved >= 0) {
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
}

TEST(client_cli_rules)
{
    char *push[] = { "ferry", "push", "-z", "a", "b/", "box:/d", NULL };
    char *pull[] = { "ferry", "pull", "box:/a", "box:b", "out", NULL };
    char *bad1[] = { "ferry", "push", "box:/a", "box:/b", NULL };
    char *bad2[] = { "ferry", "push", "a", "b", NULL };
    char *st[] = { "ferry", "status", "--retries", "3", "box:/d", NULL };
    char *stl[] = { "ferry", "clean", "./dest", NULL };
    struct cli c;
    int saved;

    CHECK_OK(cli_parse(&c, 6, push));
    CHECK_EQ_INT(c.cmd, CMD_PUSH);
    CHECK_EQ_INT(c.nlocal, 2);
    CHECK(c.compress);
    CHECK_EQ_STR(c.remote.host, "box");
    cli_cleanup(&c);

    CHECK_OK(cli_parse(&c, 5, pull));
    CHECK_EQ_INT(c.cmd, CMD_PULL);
    CHECK_EQ_INT(c.nremote, 2);
    CHECK_EQ_STR(c.remote_paths[1], "b");
    CHECK_EQ_STR(c.local_paths[0], "out");
    cli_cleanup(&c);

    /* A push goes to a remote (sources on several hosts: see
     * test_cli_boxes.c). */
    saved = quiet_stderr();
    CHECK_EQ_ERR(cli_parse(&c, 4, bad1), FERRY_ERR_USAGE);
    CHECK_EQ_ERR(cli_parse(&c, 4, bad2), FERRY_ERR_USAGE);
    restore_stderr(saved);

    CHECK_OK(cli_parse(&c, 5, st));
    CHECK_EQ_INT(c.cmd, CMD_STATUS);
    CHECK(c.has_remote);
    CHECK_EQ_INT(c.retries, 3);
    cli_cleanup(&c);

    CHECK_OK(cli_parse(&c, 3, stl));
    CHECK_EQ_INT(c.cmd, CMD_CLEAN);
    CHECK(!c.has_remote);
    CHECK_EQ_STR(c.local_paths[0], "./dest");
    cli_cleanup(&c);
}

TEST(client_sshcfg_parse)
{
    static const char out[] =
        "user alice\n"
        "hostname 10.0.0.7\n"
        "port 2222\n"
        "identitiesonly yes\n"
        "stricthostkeychecking accept-new\n"
        "serveraliveinterval 5\n"
        "serveralivecountmax 4\n"
        "connecttimeout none\n"
        "identityfile ~/.ssh/id_ed25519\n"
        "identityfile /keys/box\r\n"
        "userknownhostsfile /kh/a /kh/b\n"
        "proxyjump none\n"
        "unknownkey whatever\n";
    static const char yes[] = "hostname h\nstricthostkeychecking true\n";
    static const char no[] = "hostname h\nstricthostkeychecking false\n"
        "proxyjump hop\n";
    static const char badport[] = "hostname h\nport 70000\n";
    struct sshcfg c;

    setenv("HOME", "/home/alice", 1);
    CHECK_OK(sshcfg_parse(out, sizeof(out) - 1, &c));
    CHECK_EQ_STR(c.user, "alice");
    CHECK_EQ_STR(c.hostname, "10.0.0.7");
    CHECK_EQ_INT(c.port, 2222);
    CHECK(c.identities_only);
    CHECK_EQ_INT(c.strict, STRICT_ACCEPT_NEW);
    CHECK_EQ_INT(c.alive_interval, 5);
    CHECK_EQ_INT(c.alive_count, 4);
    CHECK_EQ_INT(c.connect_timeout, 0);
    CHECK_EQ_U64(c.nidentity, 2);
    CHECK_EQ_STR(c.identity_files[0], "/home/alice/.ssh/id_ed25519");
    CHECK_EQ_STR(c.identity_files[1], "/keys/box");
    CHECK_EQ_U64(c.nknown, 2);
    CHECK_EQ_STR(c.known_hosts[1], "/kh/b");
    CHECK(c.proxy == NULL);
    sshcfg_cleanup(&c);

    /* ssh -G spells the yes/no of StrictHostKeyChecking true/false. */
    CHECK_OK(sshcfg_parse(yes, strlen(yes), &c));
    CHECK_EQ_INT(c.strict, STRICT_YES);
    CHECK_EQ_INT(c.port, 22);
    sshcfg_cleanup(&c);
    CHECK_OK(sshcfg_parse(no, strlen(no), &c));
    CHECK_EQ_INT(c.strict, STRICT_NO);
    CHECK_EQ_STR(c.proxy, "hop");
    sshcfg_cleanup(&c);

    /* No host name, or a port that is not one: not usable. */
    CHECK_EQ_ERR(sshcfg_parse("user x\n", 7, &c), FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(sshcfg_parse(badport, strlen(badport), &c),
        FERRY_ERR_FORMAT);
    CHECK_EQ_ERR(sshcfg_parse("", 0, &c), FERRY_ERR_FORMAT);
}

TEST(client_shell_quote)
{
    char out[64];

    CHECK_OK(ssh_shell_quote("plain", out, sizeof(out)));
    CHECK_EQ_STR(out, "'plain'");
    CHECK_OK(ssh_shell_quote("it's $HOME; rm", out, sizeof(out)));
    CHECK_EQ_STR(out, "'it'\\''s $HOME; rm'");
    CHECK_OK(ssh_shell_quote("", out, sizeof(out)));
    CHECK_EQ_STR(out, "''");
    CHECK_EQ_ERR(ssh_shell_quote("0123456789", out, 8), FERRY_ERR_TOO_LARGE);
}

/* What a first login's timing says of the link (ssh_login_link): long
 * only when both the login and its authentication took long; a server
 * slow to start stretches the login, not the round trips after it. */
TEST(client_login_link)
{
    CHECK_EQ_INT(ssh_login_link(0, 0), -1);
    CHECK_EQ_INT(ssh_login_link(0, 500), -1);
    CHECK_EQ_INT(ssh_login_link(46, 15), 0);      /* loopback */
    CHECK_EQ_INT(ssh_login_link(283, 116), 1);    /* 50 ms round trips */
    CHECK_EQ_INT(ssh_login_link(255, 24), 0);     /* sshd slow to start */
    /* ... and its authentication stretched by load past SSH_LONG_AUTH_MS
     * but shorter than one of the round trips its key exchange implies */
    CHECK_EQ_INT(ssh_login_link(400, 90), 0);
    CHECK_EQ_INT(ssh_login_link(400, 104), 1);
    CHECK_EQ_INT(ssh_login_link(SSH_LONG_HANDSHAKE_MS, SSH_LONG_AUTH_MS),
        1);
    CHECK_EQ_INT(ssh_login_link(SSH_LONG_HANDSHAKE_MS - 1,
        SSH_LONG_AUTH_MS), 0);
    CHECK_EQ_INT(ssh_login_link(SSH_LONG_HANDSHAKE_MS,
        SSH_LONG_AUTH_MS - 1), 0);
}

TEST(client_duration)
{
    static const struct {
        const char *in;
        int want;
    } ok[] = {
        { "0", 0 }, { "90", 90 }, { "90s", 90 }, { "15m", 900 },
        { "1h30m", 5400 }, { "2d", 172800 }, { "1m30", 90 },
        { "0m", 0 }, { "366d", 366 * 86400 },
    };
    static const char *const bad[] = {
        "", "x", "5x", "-1", "1.5m", "m", "1h 2m", " 1", "99999999999",
        "367d", "200d200d",
    };
    size_t i;
    int v;

    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        check_note("%s", ok[i].in);
        CHECK_OK(cli_duration(ok[i].in, &v));
        CHECK_EQ_INT(v, ok[i].want);
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("\"%s\"", bad[i]);
        CHECK_EQ_ERR(cli_duration(bad[i], &v), FERRY_ERR_USAGE);
    }
    check_note_clear();
}

TEST(client_cli_retry_options)
{
    char *dflt[] = { "ferry", "push", "a", "box:/d", NULL };
    char *set[] = { "ferry", "push", "--retry-for=1h", "--retries", "5",
        "--retry-wait", "2m", "a", "box:/d", NULL };
    char *never[] = { "ferry", "push", "--retry-for", "0", "a", "box:/d",
        NULL };
    char *bad[] = { "ferry", "push", "--retry-for", "soon", "a", "box:/d",
        NULL };
    struct cli c;

    /* By default only time limits the retries: 15 minutes. */
    CHECK_OK(cli_parse(&c, 4, dflt));
    CHECK_EQ_INT(c.retries, -1);
    CHECK_EQ_INT(c.retry_for, 15 * 60);
    CHECK_EQ_INT(c.retry_wait, 30);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 9, set));
    CHECK_EQ_INT(c.retry_for, 3600);
    CHECK_EQ_INT(c.retries, 5);
    CHECK_EQ_INT(c.retry_wait, 120);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 6, never));
    CHECK_EQ_INT(c.retry_for, 0);
    cli_cleanup(&c);
    CHECK_EQ_ERR(cli_parse(&c, 6, bad), FERRY_ERR_USAGE);
    CHECK(strstr(c.err, "--retry-for soon") != NULL);
}

/* How small files travel in volumes: defaults, each form, and refusals
 * that name the option. */
TEST(client_cli_volume_options)
{
    char *dflt[] = { "ferry", "push", "a", "box:/d", NULL };
    char *set[] = { "ferry", "pull", "--pack-threshold", "1M",
        "--volume-size=64K", "--compress=never", "box:/a", "d", NULL };
    char *level[] = { "ferry", "push", "--compress=19", "--pack-threshold=0",
        "a", "box:/d", NULL };
    char *bad[][7] = {
        { "ferry", "push", "--compress=20", "a", "box:/d", NULL },
        { "ferry", "push", "--compress=fast", "a", "box:/d", NULL },
        { "ferry", "push", "--pack-threshold", "17M", "a", "box:/d", NULL },
        { "ferry", "push", "--volume-size", "63K", "a", "box:/d", NULL },
        { "ferry", "push", "--volume-size", "2T", "a", "box:/d", NULL },
        { "ferry", "push", "--volume-size", "lots", "a", "box:/d", NULL },
    };
    static const char *const why[] = { "--compress=20", "--compress=fast",
        "--pack-threshold 17M", "--volume-size 63K", "--volume-size 2T",
        "--volume-size lots" };
    struct cli c;
    size_t i;

    CHECK_OK(cli_parse(&c, 4, dflt));
    CHECK_EQ_U64(c.pack_threshold, 8u << 20);
    CHECK_EQ_U64(c.volume_size, UINT64_C(2) << 30);
    CHECK_EQ_INT(c.vol_compress, VOL_COMPRESS_AUTO);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 8, set));
    CHECK_EQ_U64(c.pack_threshold, 1u << 20);
    CHECK_EQ_U64(c.volume_size, 64u << 10);
    CHECK_EQ_INT(c.vol_compress, VOL_COMPRESS_NEVER);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 6, level));
    CHECK_EQ_INT(c.vol_compress, VOL_COMPRESS_LEVEL);
    CHECK_EQ_INT(c.vol_level, 19);
    CHECK_EQ_U64(c.pack_threshold, 0);
    cli_cleanup(&c);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n = 0;

        while (bad[i][n] != NULL)
            n++;
        check_note("%s", why[i]);
        CHECK_EQ_ERR(cli_parse(&c, n, bad[i]), FERRY_ERR_USAGE);
        CHECK(strstr(c.err, why[i]) != NULL);
    }
    check_note_clear();
}

/* ferry pack's --volume-size has the transfers' bounds: a set's volume
 * travels as it is (push --keep-volumes), and the writer holds to them. */
TEST(client_pack_volume_size)
{
    static const struct {
        const char *v;
        int ok;
    } sizes[] = {
        { "64K", 1 }, { "1T", 1 }, { "2G", 1 }, { "63K", 0 }, { "2T", 0 },
        { "1099511627777", 0 },
    };
    char *argv[] = { "ferry", "pack", "--volume-size", NULL, "src", "out",
        NULL };
    struct volw_opts o = { .name = "set" };
    struct volw_sink s;
    struct pack_args a;
    struct volw *w = NULL;
    size_t i;

    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        check_note("%s", sizes[i].v);
        argv[3] = (char *)sizes[i].v;
        CHECK_EQ_ERR(pack_args_parse(&a, 6, argv), sizes[i].ok ? 0 :
            FERRY_ERR_USAGE);
        if (sizes[i].ok)
            pack_args_cleanup(&a);
    }
    check_note_clear();
    memset(&s, 0, sizeof(s));
    o.volume_size = VOLUME_MAX_SIZE + 1;
    CHECK_EQ_ERR(volw_new(&o, &s, &w), FERRY_ERR_USAGE);
    CHECK(w == NULL);
    CHECK_EQ_U64(VOLUME_MAX_SIZE, PROTO_MAX_VOLUME_SIZE);
}

/* --basis: auto by default for push and pull (so for a watch's pulls),
 * "none" turns it off, and a basis file named "none" is "./none". */
TEST(client_cli_basis_options)
{
    char *dflt[] = { "ferry", "pull", "box:/a", "d", NULL };
    char *none[] = { "ferry", "push", "--basis", "none", "a", "box:/d",
        NULL };
    char *file[] = { "ferry", "push", "--basis=./none", "a", "box:/d", NULL };
    char *back[] = { "ferry", "push", "--basis", "none", "--basis=auto",
        "--delta=never", "a", "box:/d", NULL };
    char *keep[] = { "ferry", "push", "--keep-volumes", "a", "box:/d", NULL };
    struct cli c;

    CHECK_OK(cli_parse(&c, 4, dflt));
    CHECK_EQ_U64(c.delta_flags, OPEN_F_BASIS_AUTO);
    CHECK(c.basis == NULL);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 6, none));
    CHECK_EQ_U64(c.delta_flags, 0);
    CHECK(c.basis == NULL);
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 5, file));
    CHECK_EQ_U64(c.delta_flags, 0);
    CHECK_EQ_STR(c.basis, "none");
    cli_cleanup(&c);
    CHECK_OK(cli_parse(&c, 8, back));
    CHECK_EQ_U64(c.delta_flags, OPEN_F_BASIS_AUTO | OPEN_F_DELTA_NEVER);
    cli_cleanup(&c);
    /* The default is no option: --keep-volumes still goes alone. */
    CHECK_OK(cli_parse(&c, 5, keep));
    cli_cleanup(&c);
}

/* --adopt DIR: push only, beneath the destination, a trailing '/'
 * dropped; with --keep-volumes nothing is adopted. */
TEST(client_cli_adopt_options)
{
    static const char *const bad[] = { "/abs", "..", "a/../b", "a/..", "",
        ".ferry", ".ferry/part", "a//b", "." };
    char *ok[] = { "ferry", "push", "--adopt", "./.ferry-swarm/x1/", "a",
        "box:/d", NULL };
    char *pull[] = { "ferry", "pull", "--adopt", "s", "box:/a", "d", NULL };
    char *keep[] = { "ferry", "push", "--keep-volumes", "--adopt", "s", "a",
        "box:/d", NULL };
    char *v[] = { "ferry", "push", "--adopt", NULL, "a", "box:/d", NULL };
    struct cli c;
    size_t i;

    CHECK_OK(cli_parse(&c, 6, ok));
    CHECK_EQ_STR(c.adopt, ".ferry-swarm/x1");
    cli_cleanup(&c);
    CHECK_EQ_ERR(cli_parse(&c, 6, pull), FERRY_ERR_USAGE);
    cli_cleanup(&c);
    CHECK_EQ_ERR(cli_parse(&c, 7, keep), FERRY_ERR_USAGE);
    cli_cleanup(&c);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        v[3] = (char *)bad[i];
        check_note("%s", bad[i]);
        CHECK_EQ_ERR(cli_parse(&c, 6, v), FERRY_ERR_USAGE);
        cli_cleanup(&c);
    }
    check_note_clear();
}

TEST(client_cli_dedupe)
{
    char *push[] = { "ferry", "push", "a", "a//b", "a", "a/b", "a/", "a//",
        "./a", "box:/d", NULL };
    char *pull[] = { "ferry", "pull", "box:/x", "box:/x/", "box://x",
        "box:/x", "out", NULL };
    struct cli c;

    /* Exact repeats go, after runs of '/' count as one; "a" and "a/" are
     * two sources (the trailing-slash rule), "./a" is left as written. */
    CHECK_OK(cli_parse(&c, 10, push));
    CHECK_EQ_INT(c.nlocal, 4);
    CHECK_EQ_STR(c.local_paths[0], "a");
    CHECK_EQ_STR(c.local_paths[1], "a//b");
    CHECK_EQ_STR(c.local_paths[2], "a/");
    CHECK_EQ_STR(c.local_paths[3], "./a");
    cli_cleanup(&c);

    CHECK_OK(cli_parse(&c, 7, pull));
    CHECK_EQ_INT(c.nremote, 2);
    CHECK_EQ_STR(c.remote_paths[0], "/x");
    CHECK_EQ_STR(c.remote_paths[1], "/x/");
    cli_cleanup(&c);
}

TEST(client_cli_error_text)
{
    char *bad[] = { "ferry", "push", "--bogus", "--json", "a", "b:c", NULL };
    char *after[] = { "ferry", "push", "--bogus", "--", "--json", "b:c",
        NULL };
    struct cli c;

    /* The line is kept for main to print (as JSON with --json, which is
     * known even though the parse stopped before it). */
    CHECK_EQ_ERR(cli_parse(&c, 6, bad), FERRY_ERR_USAGE);
    CHECK(c.json);
    CHECK_EQ_STR(c.err, "unknown option '--bogus' (see ferry --help)");
    CHECK_EQ_ERR(cli_parse(&c, 6, after), FERRY_ERR_USAGE);
    CHECK(!c.json);
}

/* Runs the policy from the first failure, each try failing at once after
 * its delay, until it gives up; returns the tries and the time used. */
static int
retry_until_given_up(const struct retry_policy *p, double *used)
{
    struct retry_state s;
    struct retry_decision d;
    double now = 1000;
    int tries = 0;

    memset(&s, 0, sizeof(s));
    while (retry_next(p, &s, 0, now, &d)) {
        CHECK(d.delay_s >= 0 && d.delay_s <= p->max_wait_s);
        CHECK(d.give_up_s > 0 && d.give_up_s <= p->budget_s);
        CHECK(now + d.delay_s <= 1000 + p->budget_s);
        now += d.delay_s;
        tries++;
        CHECK(tries < 100000);
    }
    *used = now - 1000;
    return tries;
}

TEST(client_retry_policy)
{
    struct retry_policy dflt = { -1, 15 * 60, 30 };
    struct retry_policy few = { 3, 15 * 60, 30 };
    struct retry_policy never = { -1, 0, 30 };
    struct retry_policy none = { 0, 15 * 60, 30 };
    struct retry_state s;
    struct retry_decision d;
    double used;
    int i;

    /* Backoff 1, 2, 4, 8, 16, then --retry-wait. */
    memset(&s, 0, sizeof(s));
    for (i = 0; i < 8; i++) {
        CHECK(retry_next(&dflt, &s, 0, 100 + i, &d));
        CHECK_EQ_INT((int)d.delay_s, i < 5 ? 1 << i : 30);
        CHECK_EQ_INT(s.failures, i + 1);
    }
    /* The default keeps trying for the whole 15 minutes (the old 8 tries
     * gave up after about two), and its last try comes at the end. */
    CHECK(retry_until_given_up(&dflt, &used) > 8);
    CHECK(used == 15 * 60);
    /* --retries ends it first when it is smaller. */
    CHECK_EQ_INT(retry_until_given_up(&few, &used), 3);
    CHECK(used == 1 + 2 + 4);
    /* 0 for either: no retry at all. */
    CHECK_EQ_INT(retry_until_given_up(&never, &used), 0);
    CHECK_EQ_INT(retry_until_given_up(&none, &used), 0);

    /* Progress starts a new streak: count and clock from zero. */
    memset(&s, 0, sizeof(s));
    CHECK(retry_next(&dflt, &s, 10, 0, &d));
    CHECK(retry_next(&dflt, &s, 10, 800, &d));
    CHECK_EQ_INT(s.failures, 2);
    CHECK(d.give_up_s == 100);
    CHECK(!retry_next(&dflt, &s, 10, 900, &d));
    CHECK(retry_next(&dflt, &s, 11, 901, &d));
    CHECK_EQ_INT(s.failures, 1);
    CHECK(d.delay_s == 1 && d.give_up_s == 15 * 60);
    /* The last delay stops at the end of the budget. */
    CHECK(retry_next(&dflt, &s, 11, 901 + 899.5, &d));
    CHECK(d.delay_s == 0.5);
}

TEST(client_retry_signals)
{
    double slept = retry_sleep_total();

    /* A probe that does better than the worst seen ends the wait. */
    CHECK(retry_reach_better(RETRY_REACH_DOWN, RETRY_REACH_REFUSED));
    CHECK(retry_reach_better(RETRY_REACH_DOWN, RETRY_REACH_UP));
    CHECK(retry_reach_better(RETRY_REACH_REFUSED, RETRY_REACH_UP));
    CHECK(!retry_reach_better(RETRY_REACH_UP, RETRY_REACH_UP));
    CHECK(!retry_reach_better(RETRY_REACH_REFUSED, RETRY_REACH_DOWN));
    CHECK(!retry_reach_better(RETRY_REACH_UNKNOWN, RETRY_REACH_UP));
    /* Sleep: CLOCK_BOOTTIME ran ahead of CLOCK_MONOTONIC. */
    CHECK(!retry_woke(10, 10.5));
    CHECK(retry_woke(10, 310));
    CHECK(slept > -0.01);
    CHECK(!retry_woke(slept, retry_sleep_total()));
    CHECK(retry_now() > 0);
}

/* For client_retry_wait: starts listening on the port, or ends the
 * wait. */
struct wait_test {
    struct retry_wait *w;
    uv_tcp_t server;
    int port, listening;
};

/* The probes' connections are left in the backlog: accepting them is not
 * the point. */
static void
wait_test_incoming(uv_stream_t *server, int status)
{
    (void)server;
    (void)status;
}

static void
wait_test_listen(uv_timer_t *t)
{
    struct wait_test *wt = t->data;
    struct sockaddr_in sa;

    uv_ip4_addr("127.0.0.1", wt->port, &sa);
    CHECK_OK(uv_tcp_init(t->loop, &wt->server));
    CHECK_OK(uv_tcp_bind(&wt->server, (const struct sockaddr *)&sa, 0));
    CHECK_OK(uv_listen((uv_stream_t *)&wt->server, 4, wait_test_incoming));
    wt->listening = 1;
    uv_close((uv_handle_t *)t, NULL);
}

static void
wait_test_stop(uv_timer_t *t)
{
    struct wait_test *wt = t->data;

    retry_wait_stop(wt->w);
    uv_close((uv_handle_t *)t, NULL);
}

/* A port nothing listens on (connects to it are refused). */
static int
wait_test_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    CHECK(fd >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

TEST(client_retry_wait)
{
    uv_loop_t loop;
    uv_timer_t tm;
    struct retry_wait w;
    struct wait_test wt;
    uint64_t t0;

    CHECK_OK(uv_loop_init(&loop));
    retry_wait_init(&w, &loop);
    memset(&wt, 0, sizeof(wt));
    wt.w = &w;
    wt.port = wait_test_port();

    /* Nothing to probe: the delay passes. */
    t0 = uv_hrtime();
    CHECK_EQ_INT(retry_wait_run(&w, 0.3, NULL, 0), RETRY_END_TIMER);
    CHECK(uv_hrtime() - t0 >= 250000000);

    /* Refused at first, then accepted: the wait ends at the next probe,
     * long before its 8 s. */
    uv_timer_init(&loop, &tm);
    tm.data = &wt;
    uv_timer_start(&tm, wait_test_listen, 500, 0);
    t0 = uv_hrtime();
    CHECK_EQ_INT(retry_wait_run(&w, 8, "127.0.0.1", (unsigned)wt.port),
        RETRY_END_NETWORK);
    CHECK(wt.listening);
    CHECK(uv_hrtime() - t0 < 5000000000ull);

    /* Up all along: nothing to wait for but the delay. */
    CHECK_EQ_INT(retry_wait_run(&w, 0.5, "127.0.0.1", (unsigned)wt.port),
        RETRY_END_TIMER);

    /* Ctrl-C. */
    uv_timer_init(&loop, &tm);
    tm.data = &wt;
    uv_timer_start(&tm, wait_test_stop, 200, 0);
    t0 = uv_hrtime();
    CHECK_EQ_INT(retry_wait_run(&w, 8, NULL, 0), RETRY_END_STOPPED);
    CHECK(uv_hrtime() - t0 < 2000000000ull);

    uv_close((uv_handle_t *)&wt.server, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_OK(uv_loop_close(&loop));
}

/* 1 if every byte of s is ASCII (then its columns are its length). */
static int
is_ascii(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s >= 0x80)
            return 0;
    return 1;
}

TEST(client_progress_line)
{
    struct output_progress p;
    char line[512];
    /* What marks each field, in the order they are dropped. */
    static const char *const marks[] = { " files", "/s", "/ ", "ETA",
        "MiB", "%" };
    size_t cols, i, shown, shown_before = 99, full;

    memset(&p, 0, sizeof(p));
    p.done = 12900000;
    p.total = 1073741824;
    p.files = 12;
    p.ftotal = 100;
    p.rate = 10485760;
    p.current = "ckpt/run-7/optimizer-state/step-001000.pt";
    CHECK_EQ_STR(output_progress_line(&p, 200, line, sizeof(line)),
        "12.3 MiB / 1.00 GiB    1%  12/100 files  10.0 MiB/s  ETA 1:41  "
        "ckpt/run-7/optimizer-state/step-001000.pt");
    full = strlen(line);
    /* Narrower and narrower: never wider than the terminal less one
     * column, the name shortened in the middle and then gone, then the
     * fields in their order; the percentage stays to the end. */
    for (cols = 120; cols > 0; cols--) {
        output_progress_line(&p, cols, line, sizeof(line));
        check_note("%zu columns: \"%s\"", cols, line);
        CHECK(is_ascii(line));
        CHECK(strlen(line) < cols || line[0] == '\0');
        for (shown = 0; shown < 6 && strstr(line,
            marks[shown]) == NULL; shown++)
            ;
        /* The fields still there are the last ones of the list. */
        for (i = shown; i < 6; i++)
            CHECK(strstr(line, marks[i]) != NULL);
        CHECK(shown >= shown_before || shown_before == 99);
        shown_before = shown;
        if (strstr(line, "ckpt/") != NULL && cols - 1 < full)
            CHECK(strstr(line, "...") != NULL);
    }
    check_note_clear();
    CHECK_EQ_STR(output_progress_line(&p, 10, line, sizeof(line)),
        "  1%");
    CHECK_EQ_STR(output_progress_line(&p, 4, line, sizeof(line)), "");
    /* The name is escaped: an escape sequence in it is text. */
    p.current = "evil\033]0;pwned\007\xc2\x9b" "2J.pt";
    output_progress_line(&p, 200, line, sizeof(line));
    CHECK(strstr(line, "evil\\x1b]0;pwned\\x07\\xc2\\x9b2J.pt") != NULL);
    CHECK(strchr(line, '\033') == NULL);
    /* No name, or an empty one: the fields alone. */
    p.current = NULL;
    CHECK_EQ_STR(output_progress_line(&p, 200, line, sizeof(line)),
        "12.3 MiB / 1.00 GiB    1%  12/100 files  10.0 MiB/s  ETA 1:41");
    /* Totals a scan still adds to: marked, and no share or time left. */
    p.growing = 1;
    CHECK_EQ_STR(output_progress_line(&p, 200, line, sizeof(line)),
        "12.3 MiB / 1.00 GiB+   --%  12/100+ files  10.0 MiB/s  ETA --:--");
    p.growing = 0;
}

/* An OpenSSH private key container: magic, cipher, kdf, kdf options, one
 * public key of the given type, and a stand-in for the private part. */
static void
key_container(struct buf *b, const char *cipher, const char *type)
{
    struct buf pub;

    buf_init(&pub, 1024);
    CHECK_OK(buf_put_str32(&pub, type, strlen(type)));
    CHECK_OK(buf_put_str32(&pub, LIT("0123456789abcdef0123456789abcdef")));
    buf_init(b, 4096);
    CHECK_OK(buf_put(b, "openssh-key-v1", 15));
    CHECK_OK(buf_put_str32(b, cipher, strlen(cipher)));
    CHECK_OK(buf_put_str32(b, LIT("none")));
    CHECK_OK(buf_put_str32(b, LIT("")));
    CHECK_OK(buf_put_u32(b, 1));
    CHECK_OK(buf_put_str32(b, pub.data, pub.len));
    CHECK_OK(buf_put_str32(b, LIT("private part")));
    buf_cleanup(&pub);
}

/* The file text for n bytes of a container: PEM armour, 70 columns. */
static char *
key_text(const uint8_t *p, size_t n)
{
    static const char begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----\n";
    static const char end[] = "-----END OPENSSH PRIVATE KEY-----\n";
    char *b64 = xmalloc(n * 4 / 3 + 8), *text;
    size_t bl, i, o;

    CHECK(b64 != NULL);
    digest_base64(p, n, 0, b64);
    bl = strlen(b64);
    text = xmalloc(sizeof(begin) + bl + bl / 70 + 2 + sizeof(end));
    CHECK(text != NULL);
    o = (size_t)sprintf(text, "%s", begin);
    for (i = 0; i < bl; i++) {
        text[o++] = b64[i];
        if (i % 70 == 69 || i + 1 == bl)
            text[o++] = '\n';
    }
    o += (size_t)sprintf(text + o, "%s", end);
    xfree(b64);
    return text;
}

static int
kind_of(const uint8_t *p, size_t n, int *rsa, int *enc)
{
    char *text = key_text(p, n);
    int r = ssh_auth_key_kind(text, strlen(text), rsa, enc);

    xfree(text);
    return r;
}

TEST(client_key_kind)
{
    static const char pem_rsa[] = "-----BEGIN RSA PRIVATE KEY-----\n"
        "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n"
        "-----END RSA PRIVATE KEY-----\n";
    static const char pkcs8[] = "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
        "AAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
    struct buf b;
    int rsa = 7, enc = 7;

    key_container(&b, "none", "ssh-ed25519");
    CHECK_OK(kind_of(b.data, b.len, &rsa, &enc));
    CHECK_EQ_INT(rsa, 0);
    CHECK_EQ_INT(enc, 0);
    buf_cleanup(&b);
    key_container(&b, "aes256-ctr", "ssh-ed25519");
    CHECK_OK(kind_of(b.data, b.len, &rsa, &enc));
    CHECK_EQ_INT(rsa, 0);
    CHECK_EQ_INT(enc, 1);
    buf_cleanup(&b);
    key_container(&b, "none", "ssh-rsa");
    CHECK_OK(kind_of(b.data, b.len, &rsa, &enc));
    CHECK_EQ_INT(rsa, 1);
    CHECK_EQ_INT(enc, 0);
    buf_cleanup(&b);
    /* The PEM forms tell from their armour. */
    CHECK_OK(ssh_auth_key_kind(LIT(pem_rsa), &rsa, &enc));
    CHECK_EQ_INT(rsa, 1);
    CHECK_EQ_INT(enc, 1);
    CHECK_OK(ssh_auth_key_kind(LIT(pkcs8), &rsa, &enc));
    CHECK_EQ_INT(rsa, 0);
    CHECK_EQ_INT(enc, 1);
    CHECK_OK(ssh_auth_key_kind(LIT("not a key at all"), &rsa, &enc));
    CHECK_EQ_INT(rsa, 0);
    CHECK_EQ_INT(enc, 0);
}

/* Writes the key file text of container b to path. */
static void
key_file(const char *path, const struct buf *b)
{
    char *text = key_text(b->data, b->len);

    check_write_file(path, text, strlen(text), 0);
    xfree(text);
}

/* A login would prompt only without an ssh-agent and with an encrypted
 * key libssh2 would try (not RSA, not a file that is not there): then a
 * short link keeps libssh2, whose one prompt serves every stream. */
TEST(client_auth_would_ask)
{
    char dir[CHECK_PATH_MAX], plain[CHECK_PATH_MAX + 16],
        locked[CHECK_PATH_MAX + 16], rsa[CHECK_PATH_MAX + 16],
        missing[CHECK_PATH_MAX + 16];
    const char *sock = getenv("SSH_AUTH_SOCK");
    char *saved = sock != NULL ? xstrdup(sock) : NULL;
    struct sshcfg cfg;
    struct buf b;

    check_tmpdir(dir);
    key_container(&b, "none", "ssh-ed25519");
    snprintf(plain, sizeof(plain), "%s/plain", dir);
    key_file(plain, &b);
    buf_cleanup(&b);
    key_container(&b, "aes256-ctr", "ssh-ed25519");
    snprintf(locked, sizeof(locked), "%s/locked", dir);
    key_file(locked, &b);
    buf_cleanup(&b);
    key_container(&b, "aes256-ctr", "ssh-rsa");
    snprintf(rsa, sizeof(rsa), "%s/rsa", dir);
    key_file(rsa, &b);
    buf_cleanup(&b);
    snprintf(missing, sizeof(missing), "%s/missing", dir);

    memset(&cfg, 0, sizeof(cfg));
    unsetenv("SSH_AUTH_SOCK");
    cfg.identity_files[0] = plain;
    cfg.identity_files[1] = rsa;
    cfg.identity_files[2] = missing;
    cfg.nidentity = 3;
    CHECK_EQ_INT(ssh_auth_would_ask(&cfg), 0);
    cfg.identity_files[3] = locked;
    cfg.nidentity = 4;
    CHECK_EQ_INT(ssh_auth_would_ask(&cfg), 1);
    /* An ssh-agent holds the keys people unlock. */
    setenv("SSH_AUTH_SOCK", "/run/agent.sock", 1);
    CHECK_EQ_INT(ssh_auth_would_ask(&cfg), 0);
    setenv("SSH_AUTH_SOCK", "", 1);
    CHECK_EQ_INT(ssh_auth_would_ask(&cfg), 1);
    if (saved != NULL)
        setenv("SSH_AUTH_SOCK", saved, 1);
    else
        unsetenv("SSH_AUTH_SOCK");
    xfree(saved);
    check_rmtree(dir);
}

/* Cut short, lied about and bit-flipped: an error or an answer, never a
 * read outside the bytes (ASan) and never a wrong success for a cut
 * before the public key ends. */
TEST(client_key_kind_hostile)
{
    struct buf b, h;
    size_t n, i, pub_end;
    int rsa, enc, r;
    char *text;

    key_container(&b, "none", "ssh-rsa");
    /* Everything up to the end of the public key is needed. */
    pub_end = b.len - 4 - strlen("private part");
    for (n = 0; n < b.len; n++) {
        check_note("cut at %zu", n);
        r = kind_of(b.data, n, &rsa, &enc);
        if (n < pub_end) {
            CHECK_FAILS(r);
            CHECK_EQ_INT(rsa, 0);
            CHECK_EQ_INT(enc, 0);
        } else {
            CHECK_OK(r);
            CHECK_EQ_INT(rsa, 1);
        }
    }
    /* The text cut anywhere before its END line. */
    text = key_text(b.data, b.len);
    for (n = 36; n < strlen(text) - 34; n++) {
        check_note("text cut at %zu", n);
        CHECK_FAILS(ssh_auth_key_kind(text, n, &rsa, &enc));
    }
    xfree(text);
    for (i = 0; i < b.len * 8; i++) {
        check_note("bit %zu flipped", i);
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
        (void)kind_of(b.data, b.len, &rsa, &enc);
        b.data[i / 8] ^= (uint8_t)(1u << (i % 8));
    }
    check_note_clear();
    buf_cleanup(&b);

    /* Lengths at the limits: rejected as too large before the bytes are
     * looked for. */
    static const uint32_t lens[] = { 65, 0x7fffffffu, 0x80000000u,
        0xffffffffu };
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        buf_init(&h, 256);
        CHECK_OK(buf_put(&h, "openssh-key-v1", 15));
        CHECK_OK(buf_put_u32(&h, lens[i]));
        CHECK_OK(buf_put(&h, LIT("none")));
        CHECK_EQ_ERR(kind_of(h.data, h.len, &rsa, &enc),
            FERRY_ERR_TOO_LARGE);
        buf_cleanup(&h);
    }
    /* No keys, a wrong magic, and text that is not base64. */
    buf_init(&h, 256);
    CHECK_OK(buf_put(&h, "openssh-key-v1", 15));
    CHECK_OK(buf_put_str32(&h, LIT("none")));
    CHECK_OK(buf_put_str32(&h, LIT("none")));
    CHECK_OK(buf_put_str32(&h, LIT("")));
    CHECK_OK(buf_put_u32(&h, 0));
    CHECK_EQ_ERR(kind_of(h.data, h.len, &rsa, &enc), FERRY_ERR_FORMAT);
    h.data[0] = 'O';
    CHECK_EQ_ERR(kind_of(h.data, h.len, &rsa, &enc), FERRY_ERR_FORMAT);
    buf_cleanup(&h);
    CHECK_EQ_ERR(ssh_auth_key_kind(LIT("-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3Blb*NzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----\n"), &rsa,
        &enc), FERRY_ERR_FORMAT);
}
