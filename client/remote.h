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
 * The command that starts the agent remotely. An agent uploaded earlier
 * by this very build (named by its hash) goes first, then --agent or
 * ferry-agent on PATH; "exit 127" when there is none.
 */
int remote_agent_command(const struct remote_agent *a, char *out,
    size_t n) FERRY_WUR;

/* The argv that runs command on the remote host with the ssh program:
 * sh -c 'CMD "$@"' with ssh's options and the host. */
struct remote_argv {
    char *argv[300];
    char script[16500];
    char host[512];
};

int remote_ssh_argv(const struct cli *cli, const char *command,
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
