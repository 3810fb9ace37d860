#include "transport.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "../common/fsx.h"
#include "../common/log.h"
#include "ssh.h"

/* A line from a child's stderr, escaped by text_lines. */
static void
transport_err_line(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s\n", line);
}

static void
transport_err_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    static char buf[4096];

    (void)h;
    (void)hint;
    *b = uv_buf_init(buf, sizeof(buf));
}

static void
transport_err_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct transport *t = s->data;

    if (n > 0) {
        text_lines_feed(&t->err_lines, b->base, (size_t)n);
    } else if (n < 0) {
        text_lines_flush(&t->err_lines);
        uv_read_stop(s);
    }
}

static void
transport_exited(uv_process_t *p, int64_t status, int sig)
{
    struct transport *t = p->data;

    t->proc_exited = 1;
    t->exit_status = status;
    t->term_signal = sig;
    /* Whatever it wrote before it ended is in the pipe (read by
     * transport_close); a process it left behind may hold the pipe open,
     * and must not keep us waiting. */
    if (t->has_err)
        uv_unref((uv_handle_t *)&t->err);
    if (t->has_kill_timer)
        uv_timer_stop(&t->kill_timer);
    if (t->on_exit != NULL)
        t->on_exit(t->exit_ctx);
}

/* Two pipes: our ends in rfd/wfd, the child's in child_in/child_out. */
static int
transport_pipes(struct transport *t, int *child_in, int *child_out)
{
    int in[2], out[2];

    if (pipe2(in, O_CLOEXEC) != 0)
        return -errno;
    if (pipe2(out, O_CLOEXEC) != 0) {
        int e = errno;

        close(in[0]);
        close(in[1]);
        return -e;
    }
    fsx_pipe_widen(in[0]);
    fsx_pipe_widen(out[0]);
    t->wfd = in[1];
    *child_in = in[0];
    t->rfd = out[0];
    *child_out = out[1];
    return 0;
}

int
transport_start_cmd(struct transport *t, uv_loop_t *loop,
    char *const *argv)
{
    uv_process_options_t po;
    uv_stdio_container_t io[3];
    int child_in = -1, child_out = -1, r;

    memset(t, 0, sizeof(*t));
    t->rfd = t->wfd = -1;
    if (transport_pipes(t, &child_in, &child_out) != 0)
        return FERRY_ERR_CONNECT;
    uv_pipe_init(loop, &t->err, 0);
    t->err.data = t;
    t->has_err = 1;
    t->err_lines.emit = transport_err_line;
    uv_timer_init(loop, &t->kill_timer);
    t->kill_timer.data = t;
    uv_unref((uv_handle_t *)&t->kill_timer);
    t->has_kill_timer = 1;
    memset(&po, 0, sizeof(po));
    memset(io, 0, sizeof(io));
    io[0].flags = UV_INHERIT_FD;
    io[0].data.fd = child_in;
    io[1].flags = UV_INHERIT_FD;
    io[1].data.fd = child_out;
    io[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    io[2].data.stream = (uv_stream_t *)&t->err;
    po.file = argv[0];
    po.args = (char **)argv;
    po.stdio = io;
    po.stdio_count = 3;
    po.exit_cb = transport_exited;
    t->proc.data = t;
    r = uv_spawn(loop, &t->proc, &po);
    close(child_in);
    close(child_out);
    if (r != 0) {
        uv_close((uv_handle_t *)&t->proc, NULL);
        transport_close(t);  /* our ends too */
        log_debug("spawn %s: %s", argv[0], uv_strerror(r));
        return r == UV_ENOENT || r == UV_EACCES ? FERRY_ERR_AGENT :
            FERRY_ERR_CONNECT;
    }
    t->has_proc = 1;
    (void)uv_read_start((uv_stream_t *)&t->err, transport_err_alloc,
        transport_err_read);
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
    int r;

    memset(t, 0, sizeof(*t));
    t->rfd = t->wfd = -1;
    t->ssh = ssh;
    r = ssh_conn_exec_pump(ssh, command, &t->rfd, err, errlen);
    t->wfd = t->rfd;
    return r;
}

void
transport_leave(struct transport *t)
{
    if (t->ssh != NULL)
        ssh_conn_pump_leave(t->ssh);
}

void
transport_stop(struct transport *t)
{
    if (t->ssh != NULL)
        ssh_conn_pump_stop(t->ssh);
    else
        transport_kill(t);
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
    struct text_lines lines;
    char buf[4096];
    ssize_t n;
    pid_t pid;
    int r, st, ep[2];

    *exit_status = -1;
    if (pipe2(ep, O_CLOEXEC) != 0)
        return -errno;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null",
        O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
    r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(ep[1]);
    if (r != 0) {
        close(ep[0]);
        return -r;
    }
    memset(&lines, 0, sizeof(lines));
    lines.emit = transport_err_line;
    while ((n = read(ep[0], buf, sizeof(buf))) != 0) {
        if (n > 0)
            text_lines_feed(&lines, buf, (size_t)n);
        else if (errno != EINTR)
            break;
    }
    text_lines_flush(&lines);
    close(ep[0]);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    *exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return 0;
}

static void
transport_kill_hard(uv_timer_t *tm)
{
    struct transport *t = tm->data;

    if (t->has_proc && !t->proc_exited) {
        log_info("the agent's process ignored SIGTERM: killing it");
        uv_process_kill(&t->proc, SIGKILL);
    }
}

void
transport_kill(struct transport *t)
{
    if (!t->has_proc || t->proc_exited)
        return;
    uv_process_kill(&t->proc, SIGTERM);
    if (t->has_kill_timer && !t->kill_armed) {
        t->kill_armed = 1;
        uv_timer_start(&t->kill_timer, transport_kill_hard,
            TRANSPORT_KILL_GRACE_MS, 0);
    }
}

/* Reads what the child's stderr still holds without waiting (the pipe is
 * non-blocking), for the lines it wrote just before it ended. */
static void
transport_err_drain(struct transport *t)
{
    uv_os_fd_t fd;
    char buf[4096];
    ssize_t n;

    if (uv_fileno((uv_handle_t *)&t->err, &fd) == 0 &&
        !uv_is_closing((uv_handle_t *)&t->err))
        while ((n = read(fd, buf, sizeof(buf))) > 0)
            text_lines_feed(&t->err_lines, buf, (size_t)n);
    text_lines_flush(&t->err_lines);
}

void
transport_close(struct transport *t)
{
    if (t->has_proc) {
        uv_close((uv_handle_t *)&t->proc, NULL);
        t->has_proc = 0;
    }
    if (t->has_err) {
        transport_err_drain(t);
        uv_close((uv_handle_t *)&t->err, NULL);
        t->has_err = 0;
    }
    if (t->has_kill_timer) {
        uv_close((uv_handle_t *)&t->kill_timer, NULL);
        t->has_kill_timer = 0;
    }
    /* Ends no conn took (a stream dropped before it ran). */
    if (t->wfd >= 0 && t->wfd != t->rfd)
        close(t->wfd);
    if (t->rfd >= 0)
        close(t->rfd);
    t->rfd = t->wfd = -1;
}
