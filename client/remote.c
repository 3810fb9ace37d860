#include "remote.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "digest.h"
#include "sshcfg.h"
#include "ssh.h"
#include "transport.h"

int
remote_sh_c(const char *script, char *out, size_t n)
{
    char q[16384];
    int r;

    if ((r = ssh_shell_quote(script, q, sizeof(q))) != 0)
        return r;
    return (size_t)snprintf(out, n, "sh -c %s", q) < n ? 0 :
        FERRY_ERR_TOO_LARGE;
}

/*
 * The start script: picks the agent into $A, then runs it once with
 * --version before exec'ing it. That trial run's failures are the shell's
 * ("sh: 1: exec: ...: Permission denied"), which would reach the user's
 * terminal raw; with its stderr on /dev/null they become only a status:
 * 127 when there is no such program, 126 when it cannot run (not
 * executable, a noexec mount, another architecture). The client turns
 * that status into one clear line. It costs one start of a static binary.
 */
int
remote_agent_command(const struct remote_agent *a, char *out, size_t n)
{
    const char *v = a->cli->verbose >= 2 ? " -v" : "";
    char q[4 * PATH_MAX + 16], pick[sizeof(q) + 128];
    char script[sizeof(pick) + 256];
    int r;

    const struct remote_build *x86 = &a->builds[REMOTE_X86_64];
    const struct remote_build *arm = &a->builds[REMOTE_AARCH64];

    if (a->uploaded != NULL) {
        snprintf(pick, sizeof(pick), "A=\"$HOME/.cache/ferry/"
            "ferry-agent-%.16s\"", a->uploaded->hash);
    } else if (a->cli->agent_path != NULL) {
        if ((r = ssh_shell_quote(a->cli->agent_path, q, sizeof(q))) != 0)
            return r;
        snprintf(pick, sizeof(pick), "A=%s", q);
    } else if (remote_agent_can_upload(a) && !a->cli->no_bootstrap) {
        /* The one uploaded earlier for this machine type, by its hash. */
        snprintf(pick, sizeof(pick), "case \"$(uname -m)\" in "
            "aarch64|arm64) H=%.16s;; *) H=%.16s;; esac; "
            "A=\"$HOME/.cache/ferry/ferry-agent-$H\"; "
            "[ -x \"$A\" ] || A=ferry-agent",
            arm->path[0] ? arm->hash : "none", x86->path[0] ? x86->hash :
            "none");
    } else {
        snprintf(pick, sizeof(pick), "A=ferry-agent");
    }
    snprintf(script, sizeof(script), "%s; \"$A\" --version </dev/null "
        ">/dev/null 2>&1 || { [ $? = 127 ] && exit 127; exit 126; }; "
        "exec \"$A\" serve%s", pick, v);
    return remote_sh_c(script, out, n);
}

void
remote_ssh_overrides(const struct cli *cli, struct sshcfg_overrides *ov)
{
    memset(ov, 0, sizeof(*ov));
    ov->config_file = cli->ssh_config;
    ov->port = cli->port;
    /* ssh's order: -l wins over user@host. */
    ov->user = cli->login ? cli->login : cli->remote.user;
    ov->identities = cli->identities;
    ov->nidentities = cli->nidentities;
    ov->options = cli->ssh_opts;
    ov->noptions = cli->nssh_opts;
}

/* CMD may hold options of its own ("ssh -o ..."): the shell splits it,
 * and "$@" keeps our arguments whole. exec, so that the child we stop
 * (transport_kill) is ssh itself, not a shell that would leave it
 * running. */
int
remote_ssh_argv(const struct remote_agent *a, const char *remote_command,
    int flags, struct remote_argv *v)
{
    const struct cli *cli = a->cli;
    struct sshcfg_overrides ov;
    char **argv = v->argv;
    size_t n = 0;
    int r;

    snprintf(v->script, sizeof(v->script), "exec %s \"$@\"",
        cli->ssh_cmd ? cli->ssh_cmd : "ssh");
    argv[n++] = "/bin/sh";
    argv[n++] = "-c";
    argv[n++] = v->script;
    argv[n++] = "ferry-ssh";
    remote_ssh_overrides(cli, &ov);
    if ((r = sshcfg_overrides_argv(&ov, argv, &n,
        sizeof(v->argv) / sizeof(v->argv[0]) - 8)) != 0)
        return r;
    /* After the user's -o: ssh takes the first value it is given. */
    if (a->ssh_ciphers[0] != '\0' && cli->ssh_cmd == NULL) {
        argv[n++] = "-o";
        argv[n++] = (char *)a->ssh_ciphers;
    }
    if (flags & REMOTE_SSH_BATCH) {
        argv[n++] = "-o";
        argv[n++] = "BatchMode=yes";
    }
    argv[n++] = "--";
    argv[n++] = (char *)cli->remote.host;
    argv[n++] = (char *)remote_command;
    argv[n] = NULL;
    return 0;
}

int
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

void
remote_agent_missing(const struct remote_agent *a, const char *host,
    int exit_status, char *msg, size_t n)
{
    const struct cli *cli = a->cli;
    const char *what = cli->agent_path ? cli->agent_path : "ferry-agent";

    if (a->uploaded != NULL)
        snprintf(msg, n, "%s: the agent uploaded to ~/.cache/ferry %s "
            "there", host, exit_status == 127 ? "is gone" : "cannot run");
    else if (exit_status == 126)
        snprintf(msg, n, "%s: %s is there but cannot run (not executable, "
            "a noexec mount or another architecture)%s", host, what,
            cli->no_bootstrap ? "; without --no-bootstrap ferry would "
            "upload its own" : "");
    else if (cli->remote.local)
        snprintf(msg, n, "%s: %s not found", host, what);
    else if (cli->no_bootstrap)
        snprintf(msg, n, "%s: %s not found on the remote side (install it "
            "there, give --agent PATH, or leave out --no-bootstrap to let "
            "ferry upload it)", host, what);
    else
        snprintf(msg, n, "%s: %s not found on the remote side, and there "
            "is no ferry-agent beside this ferry to upload: install it "
            "there or give --agent PATH", host, what);
}

void
remote_upload_failed(const char *where, const char *what, int status,
    char *msg, size_t n)
{
    switch (status) {
    case 91:
        snprintf(msg, n, "%s: the uploaded %s arrived corrupt (its "
            "SHA-256 differs); try again", where, what);
        break;
    case 92:
        if (strcmp(what, "agent") == 0)
            snprintf(msg, n, "%s: the agent uploaded to ~/.cache/ferry "
                "cannot run there (is ~/.cache on a noexec mount?): install "
                "ferry-agent where programs may run and give --agent PATH",
                where);
        else
            snprintf(msg, n, "%s: the %s uploaded to ~/.cache/ferry cannot "
                "run there (it needs libtorrent-rasterbar 2.0, and ~/.cache "
                "where programs may run)", where, what);
        break;
    case 93:
        snprintf(msg, n, "%s: cannot write the %s to ~/.cache/ferry "
            "(permission denied, disk full or a read-only home)", where,
            what);
        break;
    default:
        snprintf(msg, n, "%s: uploading the %s failed (exit %d)", where,
            what, status);
        break;
    }
}

int
remote_upload_script(char *out, size_t n, const char *name,
    const char *hash, const char *trial, const char *unpack)
{
    return (size_t)snprintf(out, n,
        "exec 2>/dev/null; d=\"$HOME/.cache/ferry\"; "
        "h=\"$d/%s-%.16s\"; "
        "mkdir -p \"$d\" && chmod 700 \"$d\" || exit 93; "
        "t=\"$d/.upload.$$\"; trap 'rm -f \"$t\"' EXIT; "
        "%s >\"$t\" || exit 93; "
        "if command -v sha256sum >/dev/null; then "
        "echo \"%s  $t\" | sha256sum -c --status || exit 91; fi; "
        "chmod 700 \"$t\" || exit 93; "
        "\"$t\" %s </dev/null >/dev/null || exit 92; "
        "mv -f \"$t\" \"$h\" || exit 93; "
        "trap - EXIT", name, hash, unpack, hash, trial) < n ? 0 :
        FERRY_ERR_TOO_LARGE;
}

/*
 * Uploads this client's agent to ~/.cache/ferry/ferry-agent-<hash> on
 * the remote side, checked there with sha256sum when it exists and run
 * once (--version) before it is renamed into place, so that an agent that
 * cannot run there is reported as such, not found missing later. The
 * script's stderr goes to /dev/null: each failure is an exit status that
 * remote_upload_failed explains in one line.
 */
/* Runs script remotely (through ssh when ssh is NULL) with the file at
 * in_path, if any, as its stdin; its exit status in *status. */
static int
remote_run_script(struct remote_agent *a, struct ssh_conn *ssh,
    const char *script, const char *in_path, const char *where,
    int *status, char *msg, size_t msglen)
{
    char cmd[16384];
    struct remote_argv *v;
    uint8_t *bin = NULL;
    size_t len = 0;
    int r;

    if ((r = remote_sh_c(script, cmd, sizeof(cmd))) != 0)
        return r;
    if (ssh == NULL) {
        if ((v = xmalloc(sizeof(*v))) == NULL)
            return FERRY_ERR_NOMEM;
        if ((r = remote_ssh_argv(a, cmd, 0, v)) == 0)
            r = transport_run_sync(v->argv, in_path, status);
        xfree(v);
        if (r != 0) {
            snprintf(msg, msglen, "%s: cannot run %s: %s", where,
                a->cli->ssh_cmd ? a->cli->ssh_cmd : "ssh",
                ferry_strerror(r));
            return FERRY_ERR_AGENT;
        }
        return 0;
    }
    if (in_path != NULL && (r = remote_read_file(in_path, &bin, &len)) != 0) {
        snprintf(msg, msglen, "%.900s: %s", in_path, ferry_strerror(r));
        return FERRY_ERR_AGENT;
    }
    r = ssh_conn_run(ssh, cmd, bin, len, status, msg, msglen);
    xfree(bin);
    return r;
}

/* The box's machine type, told by the exit status of a one-line script
 * (nothing else of what it prints is read). */
#define REMOTE_ARCH_STATUS 80

static int
remote_probe_arch(struct remote_agent *a, struct ssh_conn *ssh,
    const char *where, enum remote_arch *arch, char *msg, size_t msglen)
{
    char script[256];
    int r, status = -1;

    snprintf(script, sizeof(script), "case \"$(uname -m)\" in "
        "x86_64|amd64) exit %d;; aarch64|arm64) exit %d;; *) exit %d;; "
        "esac", REMOTE_ARCH_STATUS + REMOTE_X86_64,
        REMOTE_ARCH_STATUS + REMOTE_AARCH64,
        REMOTE_ARCH_STATUS + REMOTE_NARCH);
    if ((r = remote_run_script(a, ssh, script, NULL, where, &status, msg,
        msglen)) != 0)
        return r;
    if (status < REMOTE_ARCH_STATUS ||
        status >= REMOTE_ARCH_STATUS + REMOTE_NARCH) {
        snprintf(msg, msglen, "%s: the box is neither x86_64 nor aarch64, "
            "for which ferry has agents: install ferry-agent there and "
            "give --agent PATH", where);
        return FERRY_ERR_AGENT;
    }
    *arch = (enum remote_arch)(status - REMOTE_ARCH_STATUS);
    return 0;
}

/* "x86_64", "aarch64". */
static const char *remote_arch_name(enum remote_arch arch);

int
remote_agent_upload(struct remote_agent *a, struct ssh_conn *ssh,
    const char *where, char *msg, size_t msglen)
{
    const struct remote_build *b;
    enum remote_arch arch;
    char script[2048];
    int r, status = -1;

    if ((r = remote_probe_arch(a, ssh, where, &arch, msg, msglen)) != 0)
        return r;
    b = &a->builds[arch];
    if (b->path[0] == '\0') {
        snprintf(msg, msglen, "%s: the box is %s and this ferry has no "
            "agent for it (ferry-agent-%s beside ferry-agent): install "
            "ferry-agent there and give --agent PATH", where,
            remote_arch_name(arch), remote_arch_name(arch));
        return FERRY_ERR_AGENT;
    }
    if ((r = remote_upload_script(script, sizeof(script), "ferry-agent",
        b->hash, "--version", "cat")) != 0)
        return r;
    if ((r = remote_run_script(a, ssh, script, b->path, where, &status, msg,
        msglen)) != 0)
        return r;
    if (status != 0) {
        remote_upload_failed(where, "agent", status, msg, msglen);
        return FERRY_ERR_AGENT;
    }
    a->uploaded = b;
    return 0;
}

static const char *
remote_arch_name(enum remote_arch arch)
{
    return arch == REMOTE_AARCH64 ? "aarch64" : "x86_64";
}

int
remote_agent_can_upload(const struct remote_agent *a)
{
    int i;

    for (i = 0; i < REMOTE_NARCH; i++)
        if (a->builds[i].path[0] != '\0')
            return 1;
    return 0;
}

/* The agent built for this machine's own type. */
#if defined(__aarch64__)
#define REMOTE_NATIVE REMOTE_AARCH64
#else
#define REMOTE_NATIVE REMOTE_X86_64
#endif


static void
remote_build_find(struct remote_build *b, const char *path)
{
    if ((size_t)snprintf(b->path, sizeof(b->path), "%s", path) >=
        sizeof(b->path) || access(b->path, R_OK) != 0 ||
        digest_sha256_file(b->path, b->hash) != 0)
        b->path[0] = '\0';
}

void
remote_agent_init(struct remote_agent *a, const struct cli *cli)
{
    char buf[PATH_MAX], other[PATH_MAX + 16];
    enum remote_arch o = REMOTE_NATIVE == REMOTE_X86_64 ? REMOTE_AARCH64 :
        REMOTE_X86_64;
    const char *local;

    memset(a, 0, sizeof(*a));
    a->cli = cli;
    if ((local = transport_local_agent(buf, sizeof(buf))) == NULL)
        return;
    remote_build_find(&a->builds[REMOTE_NATIVE], local);
    /* bin/ferry-agent-aarch64 beside bin/ferry-agent. */
    if ((size_t)snprintf(other, sizeof(other), "%s-%s", local,
        remote_arch_name(o)) < sizeof(other))
        remote_build_find(&a->builds[o], other);
}

int
remote_have_ssh(void)
{
    const char *path = getenv("PATH"), *p, *end;
    char file[4096];

    for (p = path; p != NULL && *p != '\0'; p = *end ? end + 1 : end) {
        end = strchr(p, ':');
        if (end == NULL)
            end = p + strlen(p);
        if (end > p && snprintf(file, sizeof(file), "%.*s/ssh",
            (int)(end - p), p) < (int)sizeof(file) &&
            access(file, X_OK) == 0)
            return 1;
    }
    return 0;
}
