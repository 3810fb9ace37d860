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
#include <stdint.h>

#include "../common/err.h"
#include "cli.h"

struct ssh_conn;
struct sshcfg_overrides;

/* The machine types a box may be, as its `uname -m` names them, each with
 * the agent build this client can upload there. */
enum remote_arch { REMOTE_X86_64, REMOTE_AARCH64, REMOTE_NARCH };

struct remote_build {
    char path[PATH_MAX];     /* "" if this client has none for the arch */
    char hash[65];           /* its SHA-256 */
};

struct remote_agent {
    const struct cli *cli;   /* borrowed */
    /* This machine's ferry-agent (see transport_local_agent), and beside
     * it ferry-agent-<arch> for the other machine type. */
    struct remote_build builds[REMOTE_NARCH];
    const struct remote_build *uploaded;  /* run it from now on */
    /* "Ciphers=..." (sshcfg_prefer_gcm) for the ssh program we run, not
     * for --ssh-cmd's; "" for none. */
    char ssh_ciphers[1024];
};

/* Finds the agents this client can upload and hashes them. */
void remote_agent_init(struct remote_agent *a, const struct cli *cli);

/* 1 when some agent build could be uploaded. */
int remote_agent_can_upload(const struct remote_agent *a);

/*
 * The command that starts the agent remotely: the agent uploaded in this
 * run (after a bootstrap), else --agent PATH, else one uploaded earlier
 * by this very build for the box's machine type (named by its hash),
 * else ferry-agent on PATH. It
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
};

/* The settings given on the command line that override ssh's config:
 * the same for `ssh -G`, libssh2 and the ssh program. */
void remote_ssh_overrides(const struct cli *cli,
    struct sshcfg_overrides *ov);

/* "sh -c '<script>'" into out: the remote login shell may not be a
 * POSIX one. FERRY_ERR_TOO_LARGE when it does not fit. */
int remote_sh_c(const char *script, char *out, size_t n) FERRY_WUR;

/*
 * The script that uploads a program (its bytes on stdin, through the
 * command unpack: "cat", or "gzip -dc" for gzip's bytes) to
 * ~/.cache/ferry/NAME-<hash16>, checked there with sha256sum when it
 * exists and run once with trial's arguments (stdin from /dev/null)
 * before it is renamed into place. Its exit status says what failed:
 * remote_upload_failed puts it in one line, what naming the program
 * ("agent").
 */
int remote_upload_script(char *out, size_t n, const char *name,
    const char *hash, const char *trial, const char *unpack) FERRY_WUR;
void remote_upload_failed(const char *where, const char *what, int status,
    char *msg, size_t n);

/* path's bytes into *data (xmalloc'd; the caller frees), or an error. */
int remote_read_file(const char *path, uint8_t **data, size_t *len)
    FERRY_WUR;

/* 1 if the ssh program is on PATH. */
int remote_have_ssh(void);

/* The ssh program's command line that runs command on a's host: the
 * command-line settings, then a's cipher order, then (with
 * REMOTE_SSH_BATCH, for streams after the first) BatchMode=yes. */
#define REMOTE_SSH_BATCH 1
int remote_ssh_argv(const struct remote_agent *a, const char *command,
    int flags, struct remote_argv *v) FERRY_WUR;

/*
 * Uploads the local agent to ~/.cache/ferry/ferry-agent-<hash> over ssh
 * (a libssh2 session, or the ssh program when ssh is NULL), checked there
 * with sha256sum, and sets use_cached. Returns 0, or an error with a
 * message in msg.
 */
int remote_agent_upload(struct remote_agent *a, struct ssh_conn *ssh,
    const char *where, char *msg, size_t msglen) FERRY_WUR;

#endif
