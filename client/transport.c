#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/log.h"

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

int
transport_start_local(struct transport *t, uv_loop_t *loop,
    const char *agent, int verbose)
{
    char path[PATH_MAX];
    char *argv[4];
    int r, i = 0;

    if (agent == NULL)
        agent = getenv("FERRY_AGENT");
    if (agent == NULL && transport_agent_beside_me(path, sizeof(path)) == 0)
        agent = path;
    if (agent == NULL)
        agent = "ferry-agent";
    argv[i++] = (char *)agent;
    argv[i++] = "serve";
    if (verbose >= 2)
        argv[i++] = "-v";
    argv[i] = NULL;
    r = transport_start_cmd(t, loop, argv);
    snprintf(t->where, sizeof(t->where), "local");
    if (r == FERRY_ERR_AGENT)
        log_error("local: cannot start %s: not found or not executable",
            agent);
    return r;
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
