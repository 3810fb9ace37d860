/*
 * swarm_link.c: one box's link for a swarm push (swarm_int.h). In a
 * child process of its own, as a box's transfer is (boxes.h): it logs in,
 * puts the helper (uploaded by hash, as the agent is) and the transfer's
 * files on the box, runs the helper on a channel of that session, and
 * relays bytes between it and the parent, which drives every box's
 * helper. Its own lines to the parent, around the helper's:
 *
 *     link ADDR            logged in; ADDR is the box's address on the
 *                          connection, which the other boxes dial
 *     link-fail MESSAGE    and the child ends
 *     dest PATH            the destination as the box names it ("-":
 *                          missing)
 *     cur SIZE SEC NSEC REL   a regular file in it (find's listing)
 *     listed               the end of the list; the link waits for
 *                          `go TORRENT CERT KEY` and that many bytes of
 *                          each (or the socket's end)
 *     ... the helper's output (`at PATH` first, then its events) ...
 *     link-end STATUS      the helper's channel closed
 *     cleaned STATUS       after the parent's `clean`: the staging
 *                          folder removed
 */
#include "swarm_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "remote.h"
#include "ssh.h"
#include "sshcfg.h"

static void FERRY_PRINTF(2, 3)
link_say(int sock, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    /* One line: a message never breaks the parent's framing. */
    for (int i = 0; i < n; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    line[n++] = '\n';
    (void)!write(sock, line, (size_t)n);
}

/* The script's status, as a reason. */
static const char *
link_status_why(int status)
{
    switch (status) {
    case SWARM_ST_NODEST:
        return "its destination's parent is missing (--mkpath makes it)";
    case SWARM_ST_WRITE:
        return "cannot write its staging folder";
    default:
        return "a script failed";
    }
}

/* Runs script with in as its stdin; 0 when it exited 0, else an error
 * with the reason in msg. */
static int
link_run(struct ssh_conn *ssh, const char *host, const char *what,
    const char *script, const void *in, size_t inlen, char *msg,
    size_t msglen)
{
    char cmd[16384], err[600];
    int r, status = -1;

    if ((r = remote_sh_c(script, cmd, sizeof(cmd))) != 0) {
        snprintf(msg, msglen, "%s: %s: %s", host, what, ferry_strerror(r));
        return r;
    }
    err[0] = '\0';
    if ((r = ssh_conn_run(ssh, cmd, in, inlen, &status, err,
        sizeof(err))) != 0) {
        snprintf(msg, msglen, "%s", err[0] ? err : ferry_strerror(r));
        return r;
    }
    if (status >= 91 && status <= 93) {
        remote_upload_failed(host, "swarm helper", status, msg, msglen);
        return FERRY_ERR_AGENT;
    }
    if (status != 0) {
        snprintf(msg, msglen, "%s: %s: %s", host, what,
            link_status_why(status));
        return FERRY_ERR_AGENT;
    }
    return 0;
}

/* The helper's script statuses: the build for the box's machine type
 * is there (LINK_HAVE + arch), is to cross through gzip (LINK_GZIP +
 * arch) or as it is (LINK_RAW + arch), or this client has none for it
 * (LINK_NONE + arch); LINK_ARCH: neither x86_64 nor aarch64. */
#define LINK_ARCH 9
#define LINK_HAVE 10
#define LINK_GZIP 20
#define LINK_RAW 30
#define LINK_NONE 40

/* The helper for the box's machine type, by hash, as the agent: its
 * bytes cross only to a box that lacks it, through gzip where the box
 * has it. *out: the build it runs. */
static int
link_helper(int sock, struct ssh_conn *ssh, const char *host,
    const struct swarm_job *job, const struct swarm_build **out, char *msg,
    size_t msglen)
{
    static const char *names[SWARM_NARCH] = { "x86_64", "aarch64" };
    const struct swarm_build *x = &job->helper[SWARM_X86_64];
    const struct swarm_build *a = &job->helper[SWARM_AARCH64];
    const struct swarm_build *b;
    char script[1024], cmd[2048];
    int r, status = -1, arch, gz;

    snprintf(script, sizeof(script), "case \"$(uname -m)\" in "
        "x86_64|amd64) H=%.16s; a=0;; aarch64|arm64) H=%.16s; a=1;; "
        "*) exit %d;; esac; [ \"$H\" = none ] && exit $((%d + a)); "
        "test -x \"$HOME/.cache/ferry/ferry-swarm-$H\" && exit $((%d + a)); "
        "command -v gzip >/dev/null 2>&1 && exit $((%d + a)); "
        "exit $((%d + a))", x->bin ? x->hash : "none",
        a->bin ? a->hash : "none", LINK_ARCH, LINK_NONE, LINK_HAVE,
        LINK_GZIP, LINK_RAW);
    if ((r = remote_sh_c(script, cmd, sizeof(cmd))) != 0 ||
        (r = ssh_conn_run(ssh, cmd, NULL, 0, &status, msg, msglen)) != 0)
        return r;
    arch = status % 10;
    if (status == LINK_ARCH) {
        snprintf(msg, msglen, "%s: neither x86_64 nor aarch64, for which "
            "the swarm helper is built", host);
        return FERRY_ERR_AGENT;
    }
    if (status < LINK_HAVE || status >= LINK_NONE + SWARM_NARCH ||
        arch >= SWARM_NARCH) {
        snprintf(msg, msglen, "%s: looking for its swarm helper: exit %d",
            host, status);
        return FERRY_ERR_AGENT;
    }
    if (status - arch == LINK_NONE) {
        snprintf(msg, msglen, "%s: this ferry has no swarm helper for %s "
            "(ferry-swarm-%s beside ferry-agent)", host, names[arch],
            names[arch]);
        return FERRY_ERR_AGENT;
    }
    *out = b = &job->helper[arch];
    if (status - arch == LINK_HAVE)
        return 0;
    gz = status - arch == LINK_GZIP && b->gz != NULL;
    link_say(sock, "say no swarm helper there; uploading this one "
        "(%s, %.1f MiB%s) to ~/.cache/ferry", names[arch],
        (double)(gz ? b->gz_len : b->len) / 1048576.0,
        gz ? " through gzip" : "");
    if ((r = remote_upload_script(script, sizeof(script), "ferry-swarm",
        b->hash, "", gz ? "gzip -dc" : "cat")) != 0)
        return r;
    return link_run(ssh, host, "its swarm helper", script, gz ? b->gz :
        b->bin, gz ? b->gz_len : b->len, msg, msglen);
}

/* The box's address on c's connection, as the other boxes dial it. */
static int
link_addr(const struct ssh_conn *c, char *out, size_t n)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char a[INET6_ADDRSTRLEN];
    int fd = ssh_conn_socket(c);

    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET &&
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a,
        sizeof(a)) != NULL)
        return snprintf(out, n, "%s", a) < (int)n ? 0 : -1;
    if (ss.ss_family == AF_INET6 &&
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, a,
        sizeof(a)) != NULL)
        return snprintf(out, n, "[%s]", a) < (int)n ? 0 : -1;
    return -1;
}

/* One record of the listing, "SIZE SEC.FRAC REL", as a `cur` line. */
static void
link_cur(int sock, const char *rec)
{
    unsigned long long size, sec;
    char frac[16] = "", ns[10];
    int n = 0, k;

    if (sscanf(rec, "%llu %llu.%15[0-9] %n", &size, &sec, frac, &n) < 2 ||
        n == 0 || strchr(rec + n, '\n') != NULL || rec[n] == '\0')
        return;
    for (k = 0; k < 9; k++)
        ns[k] = frac[k] != '\0' && k < (int)strlen(frac) ? frac[k] : '0';
    ns[9] = '\0';
    link_say(sock, "cur %llu %llu %lu %s", size, sec, strtoul(ns, NULL, 10),
        rec + n);
}

/* Lists the destination's files for the parent (dest, cur..., listed):
 * what a box holds already need not cross the uplink. */
static int
link_list(int sock, struct ssh_conn *ssh, const char *dest_q, char *msg,
    size_t msglen)
{
    static char rec[8192];
    char script[8192], cmd[16384], buf[65536];
    size_t len = 0, files = 0;
    int r, fd = -1, status, first = 1;
    ssize_t n;

    snprintf(script, sizeof(script),
        "cd %s 2>/dev/null || { printf -- '-\\0'; exit 0; }; "
        "printf '%%s\\0' \"$PWD\"; exec find . -xdev \\( -path ./%s -o "
        "-path ./.ferry \\) -prune -o -type f -printf '%%s %%T@ %%P\\0' "
        "2>/dev/null", dest_q, SWARM_STAGE_DIR);
    if ((r = remote_sh_c(script, cmd, sizeof(cmd))) != 0 ||
        (r = ssh_conn_exec_pump(ssh, cmd, &fd, msg, msglen)) != 0)
        return r;
    while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\0') {
                /* A record too long for a line is left out (and is then
                 * sent, as anything not listed). */
                if (len < sizeof(rec) - 1)
                    rec[len] = buf[i];
                len++;
                continue;
            }
            if (len < sizeof(rec) - 1) {
                rec[len] = '\0';
                if (first && strchr(rec, '\n') == NULL)
                    link_say(sock, "dest %s", rec);
                else if (!first && files++ < SWARM_LIST_MAX)
                    link_cur(sock, rec);
            }
            first = 0;
            len = 0;
        }
    close(fd);
    r = ssh_conn_pump_wait(ssh, &status, msg, msglen);
    link_say(sock, "listed");
    return r;
}

/* Reads exactly n bytes of the parent's socket. */
static int
link_read_all(int sock, void *p, size_t n)
{
    size_t got = 0;

    while (got < n) {
        ssize_t k = read(sock, (char *)p + got, n - got);

        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

/* The parent's `go T C K` and the transfer's files (torrent, certificate,
 * key), or 1 for the socket's end: no swarm. */
static int
link_go(int sock, struct swarm_blob *files, char **mem)
{
    char line[128];
    unsigned long long len[SWARM_FILES];
    size_t k = 0, total;
    char *p;

    while (k < sizeof(line) - 1 && link_read_all(sock, line + k, 1) == 0 &&
        line[k] != '\n')
        k++;
    line[k] = '\0';
    if (sscanf(line, "go %llu %llu %llu", &len[0], &len[1], &len[2]) != 3 ||
        len[0] > SWARM_GO_MAX || len[1] > SWARM_GO_MAX ||
        len[2] > SWARM_GO_MAX)
        return 1;
    total = (size_t)(len[0] + len[1] + len[2]);
    if ((p = *mem = xmalloc(total + 1)) == NULL ||
        link_read_all(sock, p, total) != 0)
        return 1;
    for (int i = 0; i < SWARM_FILES; i++) {
        files[i] = (struct swarm_blob){ p, (size_t)len[i] };
        p += len[i];
    }
    return 0;
}

/* DEST for the box's shell: quoted, with a leading ~ as the agent takes
 * it (the home folder). */
static int
link_dest_quote(const char *path, char *out, size_t n)
{
    size_t k;

    if (strcmp(path, "~") == 0)
        return snprintf(out, n, "\"$HOME\"") < (int)n ? 0 :
            FERRY_ERR_TOO_LARGE;
    if (strncmp(path, "~/", 2) != 0)
        return ssh_shell_quote(path, out, n);
    k = (size_t)snprintf(out, n, "\"$HOME\"/");
    if (k >= n)
        return FERRY_ERR_TOO_LARGE;
    return path[2] == '\0' ? 0 : ssh_shell_quote(path + 2, out + k, n - k);
}

/* Copies between the parent's socket and the helper's channel until the
 * channel ends. */
static void
link_relay(int sock, int fd)
{
    static char up[1 << 18], down[1 << 16];
    size_t ulen = 0, uoff = 0, dlen = 0, doff = 0;
    int up_open = 1, down_open = 1;

    while (down_open) {
        struct pollfd p[2] = {
            { .fd = sock, .events = 0 },
            { .fd = fd, .events = 0 },
        };
        ssize_t n;

        if (up_open && ulen == uoff)
            p[0].events |= POLLIN;
        if (dlen > doff)
            p[0].events |= POLLOUT;
        if (ulen > uoff)
            p[1].events |= POLLOUT;
        if (dlen == doff)
            p[1].events |= POLLIN;
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR) &&
            (p[0].events & POLLIN)) {
            n = read(sock, up, sizeof(up));
            if (n > 0) {
                ulen = (size_t)n;
                uoff = 0;
            } else if (n == 0 || errno != EINTR) {
                up_open = 0;
                shutdown(fd, SHUT_WR);
            }
        }
        if ((p[1].revents & POLLOUT) && ulen > uoff) {
            n = write(fd, up + uoff, ulen - uoff);
            if (n > 0)
                uoff += (size_t)n;
            else if (n < 0 && errno != EINTR && errno != EAGAIN)
                return;
        }
        if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
            dlen == doff) {
            n = read(fd, down, sizeof(down));
            if (n > 0) {
                dlen = (size_t)n;
                doff = 0;
            } else if (n == 0 || errno != EINTR) {
                down_open = 0;
            }
        }
        if ((p[0].revents & POLLOUT) && dlen > doff) {
            n = write(sock, down + doff, dlen - doff);
            if (n > 0)
                doff += (size_t)n;
            else if (n < 0 && errno != EINTR && errno != EAGAIN)
                return;
        }
    }
    while (dlen > doff) {
        ssize_t n = write(sock, down + doff, dlen - doff);

        if (n <= 0)
            break;
        doff += (size_t)n;
    }
}

/* Waits for the parent's word after the helper: `clean` removes the
 * staging folder; the socket's end leaves it (for the next run). */
static void link_clean(int sock, struct ssh_conn *ssh, const char *host,
    const char *dest_q, const char *id);

static void
link_after(int sock, struct ssh_conn *ssh, const char *host,
    const char *dest_q, const char *id)
{
    char line[64];
    size_t len = 0;
    ssize_t n;

    while (len < sizeof(line) - 1 &&
        (n = read(sock, line + len, sizeof(line) - 1 - len)) > 0) {
        len += (size_t)n;
        if (memchr(line, '\n', len) != NULL)
            break;
    }
    line[len] = '\0';
    if (strncmp(line, "clean\n", 6) == 0)
        link_clean(sock, ssh, host, dest_q, id);
}

/* Removes the staging folder, and those of other transfers untouched
 * for SWARM_STAGE_DAYS (a box that failed and was never pushed the same
 * files again), and says so. */
static void
link_clean(int sock, struct ssh_conn *ssh, const char *host,
    const char *dest_q, const char *id)
{
    char script[8192], msg[600];
    int r;

    snprintf(script, sizeof(script),
        "exec 2>/dev/null; cd %s || exit 0; rm -rf \"%s/%s\"; "
        "find %s -mindepth 1 -maxdepth 1 -type d -mtime +%d "
        "-exec rm -rf {} +; rmdir %s 2>/dev/null; exit 0", dest_q,
        SWARM_STAGE_DIR, id, SWARM_STAGE_DIR, SWARM_STAGE_DAYS,
        SWARM_STAGE_DIR);
    r = link_run(ssh, host, "removing its staging folder", script, NULL, 0,
        msg, sizeof(msg));
    link_say(sock, "cleaned %d", r);
}

void
swarm_link_main(struct cli *cli, const struct swarm_job *job, int box,
    int sock, int clean_only)
{
    const struct remote *rem = &cli->boxes[box].remote;
    const char *host = cli->boxes[box].label;
    struct sshcfg_overrides ov;
    struct ssh_conn_opts so;
    struct sshcfg cfg;
    struct ssh_conn *ssh = NULL;
    char msg[1024], addr[80], dest_q[4200], script[12288], cmd[16384];
    struct swarm_blob files[SWARM_FILES];
    const struct swarm_build *build = NULL;
    char *mem = NULL;
    int r, fd = -1, status = -1;

    signal(SIGPIPE, SIG_IGN);
    memset(&cfg, 0, sizeof(cfg));
    cli->remote = *rem;
    remote_ssh_overrides(cli, &ov);
    msg[0] = '\0';
    if ((r = sshcfg_resolve(rem->host, &ov, &cfg, msg, sizeof(msg))) != 0 ||
        (r = ssh_global_init()) != 0) {
        link_say(sock, "link-fail %s: ssh config: %s", host,
            msg[0] ? msg : ferry_strerror(r));
        _exit(1);
    }
    if (cfg.proxy != NULL) {
        link_say(sock, "link-fail %s: reached through a proxy, which the "
            "helper's link does not take", host);
        _exit(1);
    }
    memset(&so, 0, sizeof(so));
    so.cfg = &cfg;
    so.display = rem->host;
    if ((r = ssh_conn_open(&so, &ssh, msg, sizeof(msg))) != 0) {
        link_say(sock, "link-fail %s", msg);
        _exit(1);
    }
    if (link_addr(ssh, addr, sizeof(addr)) != 0 ||
        link_dest_quote(rem->path, dest_q, sizeof(dest_q)) != 0) {
        link_say(sock, "link-fail %s: no address to share", host);
        _exit(1);
    }
    if (clean_only) {
        link_clean(sock, ssh, host, dest_q, job->id);
        ssh_conn_close(ssh);
        _exit(0);
    }
    link_say(sock, "link %s", addr);
    if ((r = link_helper(sock, ssh, host, job, &build, msg,
        sizeof(msg))) != 0)
        goto fail;
    if ((r = link_list(sock, ssh, dest_q, msg, sizeof(msg))) != 0)
        goto fail;
    if (link_go(sock, files, &mem) != 0) {
        ssh_conn_close(ssh);
        _exit(0);
    }
    /* The staging folder beside what it will become, so that a file is
     * taken into place, not copied; DEST's own rule for a missing
     * parent. A staged file of several names was adopted (linked) or
     * linked from DEST by a run that did not end clean: the helper must
     * not write into a file that has a name outside the folder, so it
     * goes (what of it is current there is linked again). */
    snprintf(script, sizeof(script),
        "exec 2>/dev/null; umask 077; %s %s; cd %s || exit %d; "
        "mkdir -p \"%s/%s\" || exit %d; "
        "find \"%s/%s\" -type f -links +1 -delete; exit 0",
        cli->mkpath ? "mkdir -p" : "mkdir", dest_q, dest_q, SWARM_ST_NODEST,
        SWARM_STAGE_DIR, job->id, SWARM_ST_WRITE, SWARM_STAGE_DIR, job->id);
    if ((r = link_run(ssh, host, "its staging folder", script, NULL, 0, msg,
        sizeof(msg))) != 0)
        goto fail;
    for (int i = 0; i < SWARM_FILES; i++) {
        snprintf(script, sizeof(script),
            "exec 2>/dev/null; umask 077; cd %s && cat >\"%s/%s/%s\" || "
            "exit %d", dest_q, SWARM_STAGE_DIR, job->id,
            swarm_file_names[i], SWARM_ST_WRITE);
        if ((r = link_run(ssh, host, "its transfer's files", script,
            files[i].p, files[i].len, msg, sizeof(msg))) != 0)
            goto fail;
    }
    xfree(mem);
    mem = NULL;
    snprintf(script, sizeof(script),
        "cd %s/%s/%s && printf 'at %%s\\n' \"$PWD\" && "
        "exec \"$HOME/.cache/ferry/ferry-swarm-%.16s\"", dest_q,
        SWARM_STAGE_DIR, job->id, build->hash);
    if ((r = remote_sh_c(script, cmd, sizeof(cmd))) != 0 ||
        (r = ssh_conn_exec_pump(ssh, cmd, &fd, msg, sizeof(msg))) != 0) {
        if (r != 0 && msg[0] == '\0')
            snprintf(msg, sizeof(msg), "%s: %s", host, ferry_strerror(r));
        goto fail;
    }
    link_relay(sock, fd);
    close(fd);
    msg[0] = '\0';
    r = ssh_conn_pump_wait(ssh, &status, msg, sizeof(msg));
    link_say(sock, "link-end %d", r != 0 ? -1 : status);
    link_after(sock, ssh, host, dest_q, job->id);
    ssh_conn_close(ssh);
    _exit(0);
fail:
    link_say(sock, "link-fail %s", msg);
    ssh_conn_close(ssh);
    _exit(1);
}
