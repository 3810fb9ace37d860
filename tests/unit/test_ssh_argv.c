/*
 * Tests for the ssh program's command line built from the settings given
 * to ferry (client/sshcfg.c, client/remote.c): the same options, in ssh's
 * order, for `ssh -G` and for starting the agent through ssh.
 */
#include <string.h>

#include "../../client/cli.h"
#include "../../client/remote.h"
#include "../../client/sshcfg.h"
#include "../../common/err.h"
#include "check.h"

TEST(client_ssh_argv)
{
    static const char *ids[] = { "/k/one", "/k/two" };
    static const char *opts[] = { "Port=2200" };
    static const char *want[] = { "x", "-F", "/cfg", "-p", "2222", "-l",
        "ann", "-i", "/k/one", "-i", "/k/two", "-o", "Port=2200" };
    struct sshcfg_overrides o = { "/cfg", "2222", "ann", ids, 2, opts, 1 };
    char *argv[32];
    size_t n = 1, i;
    struct cli cli;
    struct remote_agent a;
    struct remote_argv v;

    argv[0] = "x";
    CHECK_EQ_INT(sshcfg_overrides_argv(&o, argv, &n, 32), 0);
    CHECK_EQ_INT(n, sizeof(want) / sizeof(want[0]));
    for (i = 0; i < n; i++)
        CHECK_EQ_STR(argv[i], want[i]);
    /* No room: nothing written past max, and an error rather than a
     * shorter command line. */
    n = 1;
    CHECK_EQ_INT(sshcfg_overrides_argv(&o, argv, &n, 12), FERRY_ERR_TOO_LARGE);
    CHECK_EQ_INT(n, 1);

    /* -l wins over user@host, as in ssh; the host goes alone after --. */
    memset(&cli, 0, sizeof(cli));
    cli.remote.host = "box";
    cli.remote.user = "bob";
    cli.login = "ann";
    memset(&a, 0, sizeof(a));
    a.cli = &cli;
    CHECK_EQ_INT(remote_ssh_argv(&a, "ferry-agent serve", 0, &v), 0);
    for (n = 0; v.argv[n] != NULL; n++)
        ;
    CHECK(n >= 4);
    CHECK_EQ_STR(v.argv[n - 1], "ferry-agent serve");
    CHECK_EQ_STR(v.argv[n - 2], "box");
    CHECK_EQ_STR(v.argv[n - 3], "--");
    CHECK_EQ_STR(v.argv[n - 4], "ann");
    CHECK_EQ_STR(v.argv[n - 5], "-l");
}

/* AES-GCM goes first only over OpenSSH's own order, only on a CPU with
 * AES instructions, and the set of ciphers never changes. */
TEST(client_ssh_prefer_gcm)
{
    static const char *opt = "Ciphers=aes256-ctr";
    struct sshcfg c;
    struct cli cli;
    struct remote_agent a;
    struct remote_argv v;
    char out[256];
    size_t n, i;

    memset(&c, 0, sizeof(c));
    c.ciphers = "chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,"
        "aes256-ctr,aes128-gcm@openssh.com,aes256-gcm@openssh.com";
    sshcfg_prefer_gcm(&c, 1, out, sizeof(out));
    CHECK_EQ_STR(out, "Ciphers=aes128-gcm@openssh.com,"
        "aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,"
        "aes192-ctr,aes256-ctr");
    /* No AES instructions: chacha20 stays first. */
    sshcfg_prefer_gcm(&c, 0, out, sizeof(out));
    CHECK_EQ_STR(out, "");
    /* An order the user chose, or a set without GCM, is left alone. */
    c.ciphers = "aes256-ctr,chacha20-poly1305@openssh.com,"
        "aes128-gcm@openssh.com";
    sshcfg_prefer_gcm(&c, 1, out, sizeof(out));
    CHECK_EQ_STR(out, "");
    c.ciphers = "chacha20-poly1305@openssh.com,aes128-ctr";
    sshcfg_prefer_gcm(&c, 1, out, sizeof(out));
    CHECK_EQ_STR(out, "");
    /* A name that only ends like one is not one. */
    c.ciphers = "chacha20-poly1305@openssh.com,x-gcm@openssh.com";
    sshcfg_prefer_gcm(&c, 1, out, sizeof(out));
    CHECK_EQ_STR(out, "");
    c.ciphers = NULL;
    sshcfg_prefer_gcm(&c, 1, out, sizeof(out));
    CHECK_EQ_STR(out, "");
    /* No room for the whole list: none rather than a cut one. */
    c.ciphers = "chacha20-poly1305@openssh.com,aes128-gcm@openssh.com";
    sshcfg_prefer_gcm(&c, 1, out, 40);
    CHECK_EQ_STR(out, "");

    /* On the command line after the user's -o (ssh keeps the first), and
     * never for --ssh-cmd's own command. */
    memset(&cli, 0, sizeof(cli));
    cli.remote.host = "box";
    cli.ssh_opts[0] = opt;
    cli.nssh_opts = 1;
    memset(&a, 0, sizeof(a));
    a.cli = &cli;
    snprintf(a.ssh_ciphers, sizeof(a.ssh_ciphers), "Ciphers=aes128-gcm@x");
    CHECK_EQ_INT(remote_ssh_argv(&a, "cmd", REMOTE_SSH_BATCH, &v), 0);
    for (n = 0; v.argv[n] != NULL; n++)
        ;
    for (i = 0; i < n && strcmp(v.argv[i], opt) != 0; i++)
        ;
    CHECK(i + 6 < n);
    CHECK_EQ_STR(v.argv[i + 1], "-o");
    CHECK_EQ_STR(v.argv[i + 2], "Ciphers=aes128-gcm@x");
    CHECK_EQ_STR(v.argv[i + 4], "BatchMode=yes");
    cli.ssh_cmd = "myssh";
    CHECK_EQ_INT(remote_ssh_argv(&a, "cmd", 0, &v), 0);
    for (n = 0; v.argv[n] != NULL; n++)
        CHECK(strncmp(v.argv[n], "Ciphers=aes128", 14) != 0);
}
