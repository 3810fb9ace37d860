/*
 * remote.h: how the client starts ferry-agent on the other side: the
 * remote command (sh -c with every value quoted), the argv that runs it
 * through the ssh program (--ssh-cmd), and the bootstrap upload of this
 * build's agent to ~/.cache/ferry when the box has none that fits.
 */
#ifndef FERRY_CLIENT_REMOTE_H
#define FERRY_CLIENT_REMOTE_H

#include <limits.h>
#include <stddef.h>

#include "../common/err.h"
#include "cli.h"

struct ssh_conn;

struct remote_agent {
    const struct cli *cli;   /* borrowed */
    char local[PATH_MAX];    /* this machine's ferry-agent, "" if none */
    char hash[65];           /* its SHA-256, "" if unknown */
    int use_cached;          /* run the uploaded agent from now on */
};

/* Finds this machine's agent (see transport_local_agent) and hashes it. */
void remote_agent_init(struct remote_agent *a, const struct cli *cli);

/*
 * The command that starts the agent remotely: the agent uploaded in this
 * run (after a bootstrap), else --agent PATH, else one uploaded earlier
 * by this very build (named by its hash), else ferry-agent on PATH. It
 * exits 127 when that program is not there and 126 when it cannot run,
 * without letting the shell print its own error.
 */
int remote_agent_command(const struct remote_agent *a, char *out,
    size_t n) FERRY_WUR;

/*
 * The line for the user when that command exited 127 (no such program)
 * or 126 (it cannot run), saying which and what would help: the other
 * options left in this run (upload, --agent), or that the uploaded agent
 * cannot run there. host names the remote side.
 */
void remote_agent_missing(const struct remote_agent *a, const char *host,
    int exit_status, char *msg, size_t n);

/* The argv that runs command on the remote host with the ssh program:
 * sh -c 'CMD "$@"' with ssh's options and the host. batch adds
 * -o BatchMode=yes: a further stream must never prompt. */
struct remote_argv {
    char *argv[300];
    char script[16500];
    char host[512];
};

/* 1 if the ssh program is on PATH. */
int remote_have_ssh(void);

int remote_ssh_argv(const struct cli *cli, const char *command, int batch,
    struct remote_argv *v) FERRY_WUR;

/*
 * Uploads the local agent to ~/.cache/ferry/ferry-agent-<hash> over ssh
 * (a libssh2 session, or the ssh program when ssh is NULL), checked there
 * with sha256sum, and sets use_cached. Returns 0, or an error with a
 * message in msg.
 */
int remote_agent_upload(struct remote_agent *a, struct ssh_conn *ssh,
    const char *where, char *msg, size_t msglen) FERRY_WUR;

#endif
