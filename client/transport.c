#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "../common/log.h"
#include "ssh.h"

static void
transport_exited(uv_process_t *p, int64_t status, int sig)
{
    struct transport *t = p->data;

    t->proc_exited = 1;
    t->exit_status = status;
    t->term_signal = sig;
}

int
transport_start_cmd(struct transport *t, uv_loop_t *loop,
    char *const *argv)
{
    uv_process_options_t po;
    uv_stdio_container_t io[3];
    int sv[2], r;

    memset(t, 0, sizeof(*t));
    t->fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -errno;
    memset(&po, 0, sizeof(po));
    memset(io, 0, sizeof(io));
    io[0].flags = UV_INHERIT_FD;
    io[0].data.fd = sv[1];
    io[1].flags = UV_INHERIT_FD;
    io[1].data.fd = sv[1];
    io[2].flags = UV_INHERIT_FD;
    io[2].data.fd = STDERR_FILENO;
    po.file = argv[0];
    po.args = (char **)argv;
    po.stdio = io;
    po.stdio_count = 3;
    po.exit_cb = transport_exited;
    t->proc.data = t;
    r = uv_spawn(loop, &t->proc, &po);
    close(sv[1]);
    if (r != 0) {
        close(sv[0]);
        uv_close((uv_handle_t *)&t->proc, NULL);
        log_debug("spawn %s: %s", argv[0], uv_strerror(r));
        return r == UV_ENOENT || r == UV_EACCES ? FERRY_ERR_AGENT :
            FERRY_ERR_CONNECT;
    }
    t->has_proc = 1;
    t->fd = sv[0];
    return 0;
}

/* ferry-agent next to the running ferry, as installed by make. */
static int
transport_agent_beside_me(char *out, size_t n)
{
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    char *slash;

    if (len <= 0)
        return -1;
    self[len] = '\0';
    if ((slash = strrchr(self, '/')) == NULL)
        return -1;
    *slash = '\0';
    if ((size_t)snprintf(out, n, "%s/ferry-agent", self) >= n)
        return -1;
    return access(out, X_OK);
}

const char *
transport_local_agent(char *buf, size_t n)
{
    const char *env = getenv("FERRY_AGENT");

    if (env != NULL && env[0] != '\0')
        return env;
    if (transport_agent_beside_me(buf, n) == 0)
        return buf;
    return NULL;
}

int
transport_start_local(struct transport *t, uv_loop_t *loop,
    const char *agent, int verbose)
{
    char path[PATH_MAX];
    char *argv[4];
    int r, i = 0;

    if (agent == NULL)
        agent = transport_local_agent(path, sizeof(path));
    if (agent == NULL)
        agent = "ferry-agent";
    argv[i++] = (char *)agent;
    argv[i++] = "serve";
    if (verbose >= 2)
        argv[i++] = "-v";
    argv[i] = NULL;
    r = transport_start_cmd(t, loop, argv);
    if (r == FERRY_ERR_AGENT)
        log_error("local: cannot start %s: not found or not executable",
            agent);
    return r;
}

int
transport_start_ssh(struct transport *t, struct ssh_conn *ssh,
    const char *command, char *err, size_t errlen)
{
    memset(t, 0, sizeof(*t));
    t->fd = -1;
    t->ssh = ssh;
    return ssh_conn_exec_pump(ssh, command, &t->fd, err, errlen);
}

int
transport_finish(struct transport *t, int *exit_status, char *err,
    size_t errlen)
{
    err[0] = '\0';
    *exit_status = -1;
    if (t->ssh != NULL)
        return ssh_conn_pump_wait(t->ssh, exit_status, err, errlen);
    if (t->has_proc && t->proc_exited && t->term_signal == 0)
        *exit_status = (int)t->exit_status;
    return 0;
}

int
transport_run_sync(char *const *argv, const char *in_path, int *exit_status)
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int r, st;

    *exit_status = -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null",
        O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        return -r;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    *exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 0;
}

void
transport_kill(struct transport *t)
{
    if (t->has_proc && !t->proc_exited)
        uv_process_kill(&t->proc, SIGTERM);
}

void
transport_close(struct transport *t)
{
    if (t->has_proc) {
        uv_close((uv_handle_t *)&t->proc, NULL);
        t->has_proc = 0;
    }
}
