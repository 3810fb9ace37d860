#include "remote.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../common/alloc.h"
#include "digest.h"
#include "ssh.h"
#include "transport.h"

/* "sh -c '<script>'": the remote login shell may not be a POSIX one. */
static int
remote_sh_c(const char *script, char *out, size_t n)
{
    char q[16384];
    int r;

    if ((r = ssh_shell_quote(script, q, sizeof(q))) != 0)
        return r;
    return (size_t)snprintf(out, n, "sh -c %s", q) < n ? 0 :
        FERRY_ERR_TOO_LARGE;
}

int
remote_agent_command(const struct remote_agent *a, char *out, size_t n)
{
    const char *v = a->cli->verbose >= 2 ? " -v" : "";
    char script[4 * PATH_MAX + 256], q[4 * PATH_MAX + 16];
    int r;

    if (a->use_cached) {
        snprintf(script, sizeof(script), "exec \"$HOME/.cache/ferry/"
            "ferry-agent-%.16s\" serve%s", a->hash, v);
        return remote_sh_c(script, out, n);
    }
    if (a->cli->agent_path != NULL) {
        if ((r = ssh_shell_quote(a->cli->agent_path, q, sizeof(q))) != 0)
            return r;
        snprintf(script, sizeof(script), "exec %s serve%s", q, v);
        return remote_sh_c(script, out, n);
    }
    if (a->hash[0] != '\0' && !a->cli->no_bootstrap) {
        snprintf(script, sizeof(script), "A=\"$HOME/.cache/ferry/"
            "ferry-agent-%.16s\"; [ -x \"$A\" ] || "
            "A=$(command -v ferry-agent) || exit 127; "
            "exec \"$A\" serve%s", a->hash, v);
        return remote_sh_c(script, out, n);
    }
    snprintf(script, sizeof(script), "exec ferry-agent serve%s", v);
    return remote_sh_c(script, out, n);
}

/* CMD may hold options of its own ("ssh -o ..."): the shell splits it,
 * and "$@" keeps our arguments whole. */
int
remote_ssh_argv(const struct cli *cli, const char *remote_command,
    struct remote_argv *v)
{
    char **argv = v->argv;
    size_t n = 0;
    int i;

    if (sizeof(v->argv) / sizeof(v->argv[0]) <
        16 + 2 * (size_t)(cli->nidentities + cli->nssh_opts))
        return FERRY_ERR_TOO_LARGE;
    snprintf(v->script, sizeof(v->script), "%s \"$@\"",
        cli->ssh_cmd ? cli->ssh_cmd : "ssh");
    if (cli->remote.user)
        snprintf(v->host, sizeof(v->host), "%s@%s", cli->remote.user,
            cli->remote.host);
    else
        snprintf(v->host, sizeof(v->host), "%s", cli->remote.host);
    argv[n++] = "/bin/sh";
    argv[n++] = "-c";
    argv[n++] = v->script;
    argv[n++] = "ferry-ssh";
    if (cli->ssh_config) {
        argv[n++] = "-F";
        argv[n++] = (char *)cli->ssh_config;
    }
    if (cli->port) {
        argv[n++] = "-p";
        argv[n++] = (char *)cli->port;
    }
    if (cli->login) {
        argv[n++] = "-l";
        argv[n++] = (char *)cli->login;
    }
    for (i = 0; i < cli->nidentities; i++) {
        argv[n++] = "-i";
        argv[n++] = (char *)cli->identities[i];
    }
    for (i = 0; i < cli->nssh_opts; i++) {
        argv[n++] = "-o";
        argv[n++] = (char *)cli->ssh_opts[i];
    }
    argv[n++] = "--";
    argv[n++] = v->host;
    argv[n++] = (char *)remote_command;
    argv[n] = NULL;
    return 0;
}

static int
remote_read_file(const char *path, uint8_t **data, size_t *len)
{
    FILE *f = fopen(path, "rbe");
    long n;
    int r = 0;

    *data = NULL;
    *len = 0;
    if (f == NULL)
        return -errno;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return -EIO;
    }
    if ((*data = xmalloc((size_t)n)) == NULL)
        r = FERRY_ERR_NOMEM;
    else if (fread(*data, 1, (size_t)n, f) != (size_t)n)
        r = -EIO;
    fclose(f);
    if (r != 0) {
        xfree(*data);
        *data = NULL;
    } else {
        *len = (size_t)n;
    }
    return r;
}

/* Uploads this client's agent to ~/.cache/ferry/ferry-agent-<hash> on
 * the remote side, checked there with sha256sum when it exists. */
int
remote_agent_upload(struct remote_agent *a, struct ssh_conn *ssh,
    const char *where, char *msg, size_t msglen)
{
    char script[2048], cmd[16384];
    struct remote_argv *v = NULL;
    uint8_t *bin = NULL;
    size_t len = 0;
    int r, status = -1;

    snprintf(script, sizeof(script),
        "set -e; d=\"$HOME/.cache/ferry\"; mkdir -p \"$d\"; chmod 700 \"$d\"; "
        "case \"$(uname -m)\" in x86_64|amd64) ;; *) echo \"ferry: this is "
        "a $(uname -m) machine; the bundled agent is x86_64: install "
        "ferry-agent here\" >&2; exit 90;; esac; "
        "t=\"$d/.upload.$$\"; trap 'rm -f \"$t\"' EXIT; cat >\"$t\"; "
        "if command -v sha256sum >/dev/null 2>&1; then "
        "echo \"%s  $t\" | sha256sum -c --status || "
        "{ echo 'ferry: the uploaded agent is corrupt' >&2; exit 91; }; fi; "
        "chmod 700 \"$t\"; mv -f \"$t\" \"$d/ferry-agent-%.16s\"; "
        "trap - EXIT", a->hash, a->hash);
    if ((r = remote_sh_c(script, cmd, sizeof(cmd))) != 0)
        return r;
    if (ssh == NULL) {
        if ((v = xmalloc(sizeof(*v))) == NULL)
            return FERRY_ERR_NOMEM;
        if ((r = remote_ssh_argv(a->cli, cmd, v)) == 0)
            r = transport_run_sync(v->argv, a->local, &status);
        xfree(v);
        if (r != 0) {
            snprintf(msg, msglen, "%s: cannot run %s: %s", where,
                a->cli->ssh_cmd ? a->cli->ssh_cmd : "ssh",
                ferry_strerror(r));
            return FERRY_ERR_AGENT;
        }
    } else {
        if ((r = remote_read_file(a->local, &bin, &len)) != 0) {
            snprintf(msg, msglen, "%.900s: %s", a->local, ferry_strerror(r));
            return FERRY_ERR_AGENT;
        }
        r = ssh_conn_run(ssh, cmd, bin, len, &status, msg, msglen);
        xfree(bin);
        if (r != 0)
            return r;
    }
    if (status != 0) {
        snprintf(msg, msglen, "%s: uploading the agent failed (exit %d)",
            where, status);
        return FERRY_ERR_AGENT;
    }
    a->use_cached = 1;
    return 0;
}


void
remote_agent_init(struct remote_agent *a, const struct cli *cli)
{
    const char *local;

    memset(a, 0, sizeof(*a));
    a->cli = cli;
    if ((local = transport_local_agent(a->local, sizeof(a->local))) == NULL) {
        a->local[0] = '\0';
        return;
    }
    if (local != a->local)
        snprintf(a->local, sizeof(a->local), "%s", local);
    if (digest_sha256_file(a->local, a->hash) != 0)
        a->hash[0] = '\0';
}
