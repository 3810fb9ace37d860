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
    CHECK_EQ_INT(remote_ssh_argv(&cli, "ferry-agent serve", 0, &v), 0);
    for (n = 0; v.argv[n] != NULL; n++)
        ;
    CHECK(n >= 4);
    CHECK_EQ_STR(v.argv[n - 1], "ferry-agent serve");
    CHECK_EQ_STR(v.argv[n - 2], "box");
    CHECK_EQ_STR(v.argv[n - 3], "--");
    CHECK_EQ_STR(v.argv[n - 4], "ann");
    CHECK_EQ_STR(v.argv[n - 5], "-l");
}
