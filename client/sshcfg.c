#include "sshcfg.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/buf.h"

extern char **environ;

#define SSHCFG_MAX_OUTPUT (1u << 20)
#define SSHCFG_MAX_VALUE 4096

/* "~/x" -> "$HOME/x" (new string). */
static char *
sshcfg_expand_home(const char *path)
{
    const char *home = getenv("HOME");
    struct passwd *pw;
    size_t hl;
    char *out;

    if (path[0] != '~' || (path[1] != '/' && path[1] != '\0'))
        return xstrdup(path);
    if (home == NULL && (pw = getpwuid(getuid())) != NULL)
        home = pw->pw_dir;
    if (home == NULL)
        return xstrdup(path);
    hl = strlen(home);
    if ((out = xmalloc(hl + strlen(path))) == NULL)
        return NULL;
    memcpy(out, home, hl);
    strcpy(out + hl, path + 1);
    return out;
}

void
sshcfg_cleanup(struct sshcfg *c)
{
    size_t i;

    xfree(c->hostname);
    xfree(c->user);
    xfree(c->proxy);
    xfree(c->host_key_alias);
    xfree(c->ciphers);
    for (i = 0; i < c->nidentity; i++)
        xfree(c->identity_files[i]);
    for (i = 0; i < c->nknown; i++)
        xfree(c->known_hosts[i]);
    memset(c, 0, sizeof(*c));
}

static int
set_str(char **dst, const char *v)
{
    char *n = xstrdup(v);

    if (n == NULL)
        return FERRY_ERR_NOMEM;
    xfree(*dst);
    *dst = n;
    return 0;
}

static int
add_file(char **list, size_t *n, const char *v)
{
    char *p;

    if (*n >= SSHCFG_MAX_FILES)
        return 0;
    if ((p = sshcfg_expand_home(v)) == NULL)
        return FERRY_ERR_NOMEM;
    list[(*n)++] = p;
    return 0;
}

static unsigned
parse_uint(const char *v, unsigned max)
{
    char *end;
    unsigned long n;

    if (strcmp(v, "none") == 0)
        return 0;
    n = strtoul(v, &end, 10);
    if (end == v || *end != '\0' || n > max)
        return 0;
    return (unsigned)n;
}

/* Applies one "key value" line. */
static int
sshcfg_line(struct sshcfg *c, char *key, char *val)
{
    char *save = NULL, *tok;
    int r = 0;

    for (char *k = key; *k; k++)
        if (*k >= 'A' && *k <= 'Z')
            *k = (char)(*k - 'A' + 'a');
    if (strcmp(key, "hostname") == 0)
        r = set_str(&c->hostname, val);
    else if (strcmp(key, "user") == 0)
        r = set_str(&c->user, val);
    else if (strcmp(key, "port") == 0)
        c->port = parse_uint(val, 65535);
    else if (strcmp(key, "identityfile") == 0)
        r = add_file(c->identity_files, &c->nidentity, val);
    else if (strcmp(key, "identitiesonly") == 0)
        c->identities_only = strcmp(val, "yes") == 0;
    else if (strcmp(key, "batchmode") == 0)
        c->batch_mode = strcmp(val, "yes") == 0;
    else if (strcmp(key, "userknownhostsfile") == 0) {
        for (tok = strtok_r(val, " ", &save); tok != NULL && r == 0;
            tok = strtok_r(NULL, " ", &save))
            r = add_file(c->known_hosts, &c->nknown, tok);
    } else if (strcmp(key, "stricthostkeychecking") == 0) {
        if (strcmp(val, "true") == 0 || strcmp(val, "yes") == 0)
            c->strict = STRICT_YES;
        else if (strcmp(val, "accept-new") == 0)
            c->strict = STRICT_ACCEPT_NEW;
        else if (strcmp(val, "false") == 0 || strcmp(val, "no") == 0 ||
            strcmp(val, "off") == 0)
            c->strict = STRICT_NO;
        else
            c->strict = STRICT_ASK;
    } else if (strcmp(key, "connecttimeout") == 0)
        c->connect_timeout = parse_uint(val, 86400);
    else if (strcmp(key, "serveraliveinterval") == 0)
        c->alive_interval = parse_uint(val, 86400);
    else if (strcmp(key, "serveralivecountmax") == 0)
        c->alive_count = parse_uint(val, 1000);
    else if ((strcmp(key, "proxyjump") == 0 ||
        strcmp(key, "proxycommand") == 0) && strcmp(val, "none") != 0)
        r = set_str(&c->proxy, val);
    else if (strcmp(key, "hostkeyalias") == 0)
        r = set_str(&c->host_key_alias, val);
    else if (strcmp(key, "ciphers") == 0)
        r = set_str(&c->ciphers, val);
    return r;
}

static int
is_gcm(const char *name, size_t len)
{
    static const char tail[] = "-gcm@openssh.com";

    return len > sizeof(tail) - 1 && strncmp(name, "aes", 3) == 0 &&
        memcmp(name + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1) == 0;
}

void
sshcfg_prefer_gcm(const struct sshcfg *c, int aes_fast, char *out,
    size_t outlen)
{
    static const char head[] = "chacha20-poly1305@openssh.com,";
    const char *list = c->ciphers, *p, *e;
    size_t n = 0;
    int pass, any = 0;

    if (outlen > 0)
        out[0] = '\0';
    if (!aes_fast || list == NULL ||
        strncmp(list, head, sizeof(head) - 1) != 0 ||
        strlen(list) + sizeof("Ciphers=") > outlen)
        return;
    n = (size_t)snprintf(out, outlen, "Ciphers=");
    /* The AES-GCM ciphers first, then the rest, each in its order. */
    for (pass = 0; pass < 2; pass++) {
        for (p = list; *p != '\0'; p = *e ? e + 1 : e) {
            e = p + strcspn(p, ",");
            if (e == p || is_gcm(p, (size_t)(e - p)) != (pass == 0))
                continue;
            any |= pass == 0;
            n += (size_t)snprintf(out + n, outlen - n, "%s%.*s",
                n > sizeof("Ciphers=") - 1 ? "," : "", (int)(e - p), p);
        }
    }
    if (!any)
        out[0] = '\0';
}

int
sshcfg_cpu_aes_fast(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("aes") && __builtin_cpu_supports("pclmul");
#elif defined(__aarch64__)
    unsigned long hw = getauxval(AT_HWCAP);

    return (hw & HWCAP_AES) != 0 && (hw & HWCAP_PMULL) != 0;
#else
    return 0;
#endif
}

int
sshcfg_parse(const char *text, size_t len, struct sshcfg *c)
{
    char line[SSHCFG_MAX_VALUE + 64];
    size_t i = 0;
    int r;

    memset(c, 0, sizeof(*c));
    c->port = 22;
    c->strict = STRICT_ASK;
    c->alive_count = 3;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        char *sp;

        if (n < sizeof(line)) {
            memcpy(line, text + i, n);
            line[n] = '\0';
            if (n > 0 && line[n - 1] == '\r')
                line[n - 1] = '\0';
            if ((sp = strchr(line, ' ')) != NULL) {
                *sp = '\0';
                if ((r = sshcfg_line(c, line, sp + 1)) != 0) {
                    sshcfg_cleanup(c);
                    return r;
                }
            }
        }
        i += n + 1;
    }
    if (c->hostname == NULL || c->hostname[0] == '\0' || c->port == 0) {
        sshcfg_cleanup(c);
        return FERRY_ERR_FORMAT;
    }
    return 0;
}

/* Runs argv, collecting stdout and stderr (bounded). */
static int
run_capture(char *const *argv, struct buf *out, struct buf *err, int *status)
{
    posix_spawn_file_actions_t fa;
    int op[2] = { -1, -1 }, ep[2] = { -1, -1 }, r = 0, open_fds = 2;
    pid_t pid;

    *status = -1;
    if (pipe(op) != 0 || pipe(ep) != 0) {
        r = -errno;
        goto out;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, op[1], 1);
    posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
    posix_spawn_file_actions_addclose(&fa, op[0]);
    posix_spawn_file_actions_addclose(&fa, ep[0]);
    r = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(op[1]);
    close(ep[1]);
    op[1] = ep[1] = -1;
    if (r != 0) {
        r = -r;
        goto out;
    }
    while (open_fds > 0) {
        struct pollfd p[2] = { { op[0], POLLIN, 0 }, { ep[0], POLLIN, 0 } };
        uint8_t tmp[4096];

        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        for (int k = 0; k < 2; k++) {
            ssize_t n;

            if (p[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP)))
                continue;
            n = read(p[k].fd, tmp, sizeof(tmp));
            if (n <= 0) {
                close(p[k].fd);
                if (k == 0)
                    op[0] = -1;
                else
                    ep[0] = -1;
                open_fds--;
            } else if (buf_put(k == 0 ? out : err, tmp, (size_t)n) != 0) {
                /* Over the bound: keep draining so ssh can exit. */
            }
        }
    }
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
out:
    for (int k = 0; k < 2; k++) {
        if (op[k] >= 0)
            close(op[k]);
        if (ep[k] >= 0)
            close(ep[k]);
    }
    return r;
}

static int
sshcfg_defaults(const char *host, const struct sshcfg_overrides *o,
    struct sshcfg *c)
{
    const char *user = o->user ? o->user : getenv("USER");
    int i, r = 0;

    memset(c, 0, sizeof(*c));
    c->port = o->port ? parse_uint(o->port, 65535) : 22;
    c->strict = STRICT_ASK;
    c->alive_count = 3;
    if ((r = set_str(&c->hostname, host)) != 0 ||
        (user != NULL && (r = set_str(&c->user, user)) != 0))
        return r;
    for (i = 0; i < o->nidentities && r == 0; i++)
        r = add_file(c->identity_files, &c->nidentity, o->identities[i]);
    if (r == 0 && c->nidentity == 0)
        r = add_file(c->identity_files, &c->nidentity, "~/.ssh/id_ed25519");
    if (r == 0 && c->nidentity == 1 && o->nidentities == 0)
        r = add_file(c->identity_files, &c->nidentity, "~/.ssh/id_ecdsa");
    if (r == 0)
        r = add_file(c->known_hosts, &c->nknown, "~/.ssh/known_hosts");
    return r;
}

int
sshcfg_overrides_argv(const struct sshcfg_overrides *o, char **argv,
    size_t *argc, size_t max)
{
    size_t n = *argc;
    int i;

    if (o->nidentities < 0 || o->noptions < 0 || n > max ||
        (max - n) / 2 < 3 + (size_t)o->nidentities + (size_t)o->noptions)
        return FERRY_ERR_TOO_LARGE;
    if (o->config_file) {
        argv[n++] = "-F";
        argv[n++] = (char *)o->config_file;
    }
    if (o->port) {
        argv[n++] = "-p";
        argv[n++] = (char *)o->port;
    }
    if (o->user) {
        argv[n++] = "-l";
        argv[n++] = (char *)o->user;
    }
    for (i = 0; i < o->nidentities; i++) {
        argv[n++] = "-i";
        argv[n++] = (char *)o->identities[i];
    }
    for (i = 0; i < o->noptions; i++) {
        argv[n++] = "-o";
        argv[n++] = (char *)o->options[i];
    }
    *argc = n;
    return 0;
}

int
sshcfg_resolve(const char *host, const struct sshcfg_overrides *o,
    struct sshcfg *c, char *err, size_t errlen)
{
    char *argv[16 + 2 * 2 * 64];
    struct buf out, eb;
    size_t argc = 0;
    int status, r;

    err[0] = '\0';
    argv[argc++] = "ssh";
    argv[argc++] = "-G";
    if ((r = sshcfg_overrides_argv(o, argv, &argc,
        sizeof(argv) / sizeof(argv[0]) - 3)) != 0)
        return r;
    argv[argc++] = "--";
    argv[argc++] = (char *)host;
    argv[argc] = NULL;
    buf_init(&out, SSHCFG_MAX_OUTPUT);
    buf_init(&eb, 64 << 10);
    r = run_capture(argv, &out, &eb, &status);
    if (r == -ENOENT) {
        /* No OpenSSH client here: plain defaults and the overrides. */
        r = sshcfg_defaults(host, o, c);
        goto done;
    }
    if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        size_t n = buf_used(&eb);
        const char *p = (const char *)buf_ptr(&eb);
        const char *nl = n ? memchr(p, '\n', n) : NULL;

        snprintf(err, errlen, "%.*s", (int)(nl ? (size_t)(nl - p) : n),
            n ? p : "ssh -G failed");
        r = FERRY_ERR_USAGE;
        goto done;
    }
    if (r == 0)
        r = sshcfg_parse((const char *)buf_ptr(&out), buf_used(&out), c);
done:
    buf_cleanup(&out);
    buf_cleanup(&eb);
    return r;
}
