/*
 * ferry-agent: the remote side, started by ferry over SSH (or as a local
 * child) as "ferry-agent serve". It never listens on a port: stdin and
 * stdout carry the protocol, stderr carries diagnostics.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "../common/log.h"
#include "../common/version.h"
#include "../engine/conn.h"
#include "../engine/session.h"
#include "../engine/xfer.h"
#include "../proto/limits.h"

/* Exit statuses of the agent (the client reports its own). */
#define AGENT_EXIT_OK 0
#define AGENT_EXIT_FAIL 1
#define AGENT_EXIT_USAGE 2

static int agent_result;
static struct conn *agent_conn;

/* SIGTERM or SIGHUP (sshd ending the session): stop like a lost
 * connection, so journals are synced and partial files kept. */
static void
agent_signal(uv_signal_t *h, int signum)
{
    (void)signum;
    uv_signal_stop(h);
    if (agent_conn != NULL)
        conn_abort(agent_conn, FERRY_ERR_INTERRUPTED);
}

static void
agent_closed(struct conn *c, int err)
{
    (void)c;
    agent_result = err;
}

static void
agent_problem(void *ctx, enum xfer_side side, const char *path, int code,
    const char *text)
{
    (void)ctx;
    (void)side;
    /* The client reports per-file problems to the user; here they are
     * only worth a debug line. */
    log_debug("%s: %s (%s)", path, text, ferry_errname(code));
}

static int
agent_serve(void)
{
    uv_loop_t *loop = uv_default_loop();
    uv_signal_t sigterm, sighup;
    struct xfer x;
    struct session *s;
    struct conn c;
    int r;

    memset(&x, 0, sizeof(x));
    x.ev.problem = agent_problem;
    if ((s = session_agent_new(&x)) == NULL) {
        log_error("out of memory");
        return AGENT_EXIT_FAIL;
    }
    memset(&c, 0, sizeof(c));
    if ((r = conn_start_fds(&c, loop, STDIN_FILENO, STDOUT_FILENO,
        session_step, s, agent_closed)) != 0) {
        log_error_r(r, "cannot use stdin/stdout");
        session_free(s);
        return AGENT_EXIT_FAIL;
    }
    agent_conn = &c;
    uv_signal_init(loop, &sigterm);
    uv_signal_init(loop, &sighup);
    uv_signal_start(&sigterm, agent_signal, SIGTERM);
    uv_signal_start(&sighup, agent_signal, SIGHUP);
    uv_unref((uv_handle_t *)&sigterm);
    uv_unref((uv_handle_t *)&sighup);
    uv_run(loop, UV_RUN_DEFAULT);
    agent_conn = NULL;
    uv_close((uv_handle_t *)&sigterm, NULL);
    uv_close((uv_handle_t *)&sighup, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    session_free(s);
    (void)uv_loop_close(loop);
    if (agent_result != 0 && agent_result != FERRY_ERR_PEER) {
        log_debug("%s", x.local_error[0] ? x.local_error :
            ferry_strerror(agent_result));
        return AGENT_EXIT_FAIL;
    }
    return agent_result == 0 ? AGENT_EXIT_OK : AGENT_EXIT_FAIL;
}

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: ferry-agent serve [-v]\n"
        "       ferry-agent --version\n"
        "The agent is started by ferry over SSH; it speaks the ferry\n"
        "protocol on stdin/stdout and is not meant to be run by hand.\n");
}

int
main(int argc, char **argv)
{
    enum log_level level = LOG_ERROR;
    int i;

    log_init("ferry-agent", level);
    signal(SIGPIPE, SIG_IGN);
    /* A file size limit must fail the write (EFBIG), not kill us. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("ferry-agent %s protocol %d-%d\n", FERRY_VERSION,
            PROTO_VERSION_MIN, PROTO_VERSION_MAX);
        return AGENT_EXIT_OK;
    }
    if (argc < 2 || strcmp(argv[1], "serve") != 0) {
        usage(stderr);
        return AGENT_EXIT_USAGE;
    }
    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            level = LOG_DEBUG;
        else if (strcmp(argv[i], "-q") == 0)
            level = LOG_QUIET;
        else {
            usage(stderr);
            return AGENT_EXIT_USAGE;
        }
    }
    log_set_level(level);
    return agent_serve();
}
