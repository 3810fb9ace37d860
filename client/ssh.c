#include "ssh.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <libssh2.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "digest.h"

/* Our receive window per channel: big, so a pull is not capped at one
 * window per round trip the way sshd caps uploads at 2 MiB. */
#define SSH_WINDOW (16u << 20)
#define SSH_PACKET 32768u
#define SSH_PUMP_BUF (256u << 10)
#define SSH_SOCKBUF (4 << 20)
#define SSH_DEFAULT_TIMEOUT 30
/* When the config gives no ServerAliveInterval, still notice a dead link
 * (a laptop that slept, a box that vanished) within a minute. */
#define SSH_DEFAULT_ALIVE 15
#define SSH_MAX_KEY_FILE (64u << 10)
#define SSH_CIPHERS "aes128-ctr,aes192-ctr,aes256-ctr"

struct ssh_conn {
    int sock;
    LIBSSH2_SESSION *s;
    char display[256];
    char host[256];        /* what known_hosts is searched for */
    unsigned port;
    atomic_uint_fast64_t wire_out, wire_in;
    atomic_int_fast64_t last_rx_ms;
    unsigned alive_interval, alive_count;
    /* The pump. */
    pthread_t thr;
    int thr_running;
    LIBSSH2_CHANNEL *ch;
    int sp;
    int exit_status;
    int pump_err;
    char pump_msg[256];
};

static int64_t
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
ssh_global_init(void)
{
    return libssh2_init(0) == 0 ? 0 : FERRY_ERR_SSH;
}

uint64_t
ssh_conn_wire_out(const struct ssh_conn *c)
{
    return c ? atomic_load(&c->wire_out) : 0;
}

uint64_t
ssh_conn_wire_in(const struct ssh_conn *c)
{
    return c ? atomic_load(&c->wire_in) : 0;
}

/* I/O callbacks: the default ones, counting bytes and noting when the
 * server last sent anything (for the liveness check). */
static LIBSSH2_SEND_FUNC(ssh_send_cb)
{
    struct ssh_conn *c = *abstract;
    ssize_t n = send(socket, buffer, length, flags | MSG_NOSIGNAL);

    if (n < 0)
        return -errno;
    atomic_fetch_add(&c->wire_out, (uint64_t)n);
    return n;
}

static LIBSSH2_RECV_FUNC(ssh_recv_cb)
{
    struct ssh_conn *c = *abstract;
    ssize_t n = recv(socket, buffer, length, flags);

    if (n < 0)
        return errno == ENOENT ? -EAGAIN : -errno;
    if (n > 0) {
        atomic_fetch_add(&c->wire_in, (uint64_t)n);
        atomic_store(&c->last_rx_ms, now_ms());
    }
    return n;
}

static const char *
ssh_last_error(struct ssh_conn *c)
{
    char *msg = NULL;

    libssh2_session_last_error(c->s, &msg, NULL, 0);
    return msg != NULL ? msg : "unknown error";
}

int
ssh_shell_quote(const char *s, char *out, size_t outlen)
{
    size_t o = 0;

    if (outlen < 3)
        return FERRY_ERR_TOO_LARGE;
    out[o++] = '\'';
    for (; *s; s++) {
        const char *piece = *s == '\'' ? "'\\''" : NULL;
        size_t n = piece ? 4 : 1;

        if (o + n + 2 > outlen)
            return FERRY_ERR_TOO_LARGE;
        if (piece)
            memcpy(out + o, piece, 4);
        else
            out[o] = *s;
        o += n;
    }
    out[o++] = '\'';
    out[o] = '\0';
    return 0;
}

/* TCP connect to every address in turn, each bounded by timeout_s. */
static int
ssh_tcp_connect(struct ssh_conn *c, const struct sshcfg *cfg,
    unsigned timeout_s, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    int fd = -1, r, last = 0, one = 1;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof(port), "%u", cfg->port);
    if ((r = getaddrinfo(cfg->hostname, port, &hints, &res)) != 0) {
        snprintf(err, errlen, "%s: cannot resolve %s: %s", c->display,
            cfg->hostname, gai_strerror(r));
        return FERRY_ERR_CONNECT;
    }
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        struct pollfd p;
        socklen_t sl = sizeof(last);

        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
            SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 &&
            errno != EINPROGRESS) {
            last = errno;
            close(fd);
            fd = -1;
            continue;
        }
        p.fd = fd;
        p.events = POLLOUT;
        r = poll(&p, 1, (int)timeout_s * 1000);
        if (r == 0) {
            last = ETIMEDOUT;
        } else if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &last,
            &sl) != 0) {
            last = errno;
        }
        if (r > 0 && last == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot connect to %s port %u: %s",
            c->display, cfg->hostname, cfg->port, strerror(last));
        return last == ETIMEDOUT ? FERRY_ERR_TIMEOUT : FERRY_ERR_CONNECT;
    }
    /* libssh2 is used in blocking mode until the pump takes over. */
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->sock = fd;
    return 0;
}

/* Host keys. */

static const char *
ssh_key_name(int type)
{
    switch (type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return "ssh-rsa";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256: return "ecdsa-sha2-nistp256";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384: return "ecdsa-sha2-nistp384";
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521: return "ecdsa-sha2-nistp521";
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return "ssh-ed25519";
    default: return NULL;
    }
}

static const char *
ssh_key_label(int type)
{
    switch (type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return "RSA";
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return "ED25519";
    case LIBSSH2_HOSTKEY_TYPE_DSS: return "DSA";
    default: return "ECDSA";
    }
}

static int
ssh_knownhost_mask(int type)
{
    switch (type) {
    case LIBSSH2_HOSTKEY_TYPE_RSA: return LIBSSH2_KNOWNHOST_KEY_SSHRSA;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_256:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_256;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_384:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_384;
    case LIBSSH2_HOSTKEY_TYPE_ECDSA_521:
        return LIBSSH2_KNOWNHOST_KEY_ECDSA_521;
    case LIBSSH2_HOSTKEY_TYPE_ED25519: return LIBSSH2_KNOWNHOST_KEY_ED25519;
    default: return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
    }
}

/* "SHA256:..." as OpenSSH prints it. */
static void
ssh_fingerprint(struct ssh_conn *c, char *out, size_t outlen)
{
    const uint8_t *h = (const uint8_t *)libssh2_hostkey_hash(c->s,
        LIBSSH2_HOSTKEY_HASH_SHA256);
    char b64[64];

    if (h == NULL) {
        snprintf(out, outlen, "(unknown)");
        return;
    }
    digest_base64(h, 32, 1, b64);
    snprintf(out, outlen, "SHA256:%s", b64);
}

/* The name known_hosts uses: "host" on port 22, "[host]:port" else. */
static void
ssh_known_name(const struct ssh_conn *c, char *out, size_t outlen)
{
    if (c->port == 22)
        snprintf(out, outlen, "%s", c->host);
    else
        snprintf(out, outlen, "[%s]:%u", c->host, c->port);
}

/* Calls fn for each line of file; stops at a non-zero return. */
typedef int ssh_line_fn(void *ctx, const char *line, size_t len,
    unsigned lineno);

static int
ssh_each_line(const char *file, ssh_line_fn *fn, void *ctx)
{
    FILE *f = fopen(file, "re");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    unsigned no = 0;
    int r = 0;

    if (f == NULL)
        return 0;
    while (r == 0 && (n = getline(&line, &cap, f)) >= 0) {
        no++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        r = fn(ctx, line, (size_t)n, no);
    }
    free(line);
    fclose(f);
    return r;
}

static int
ssh_load_line(void *ctx, const char *line, size_t len, unsigned no)
{
    (void)no;
    /* Lines libssh2 cannot read (@cert-authority, @revoked, unknown key
     * types) are skipped one by one rather than ending the file. */
    (void)libssh2_knownhost_readline(ctx, line, len,
        LIBSSH2_KNOWNHOST_FILE_OPENSSH);
    return 0;
}

struct ssh_find {
    struct ssh_conn *c;
    const char *key;
    size_t keylen;
    int mask;
    unsigned lineno;
};

/* Finds the line holding a mismatching key, for the error message. */
static int
ssh_find_line(void *ctx, const char *line, size_t len, unsigned no)
{
    struct ssh_find *f = ctx;
    LIBSSH2_KNOWNHOSTS *one = libssh2_knownhost_init(f->c->s);
    int r = 0;

    if (one == NULL)
        return 0;
    if (libssh2_knownhost_readline(one, line, len,
        LIBSSH2_KNOWNHOST_FILE_OPENSSH) == 0 &&
        libssh2_knownhost_checkp(one, f->c->host, (int)f->c->port, f->key,
        f->keylen, LIBSSH2_KNOWNHOST_TYPE_PLAIN |
        LIBSSH2_KNOWNHOST_KEYENC_RAW | f->mask, NULL) ==
        LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
        f->lineno = no;
        r = 1;
    }
    libssh2_knownhost_free(one);
    return r;
}

/* Appends a hashed entry for this host, as ssh does with HashKnownHosts. */
static int
ssh_add_known(struct ssh_conn *c, const char *file, const char *key,
    size_t keylen, int type)
{
    char name[300], salt64[64], mac64[64], *keyb64 = NULL, *dir, *slash;
    uint8_t salt[20], mac[20];
    const char *tname = ssh_key_name(type);
    FILE *f;
    int r;

    if (tname == NULL)
        return FERRY_ERR_UNSUPPORTED;
    ssh_known_name(c, name, sizeof(name));
    if ((r = digest_random(salt, sizeof(salt))) != 0 ||
        (r = digest_hmac_sha1(salt, sizeof(salt), name, strlen(name),
        mac)) != 0)
        return r;
    digest_base64(salt, sizeof(salt), 0, salt64);
    digest_base64(mac, sizeof(mac), 0, mac64);
    if ((keyb64 = xmalloc(keylen * 4 / 3 + 8)) == NULL)
        return FERRY_ERR_NOMEM;
    digest_base64((const uint8_t *)key, keylen, 0, keyb64);
    if ((dir = xstrdup(file)) != NULL &&
        (slash = strrchr(dir, '/')) != NULL) {
        *slash = '\0';
        (void)mkdir(dir, 0700);
    }
    xfree(dir);
    f = fopen(file, "ae");
    if (f == NULL) {
        r = -errno;
        xfree(keyb64);
        return r;
    }
    (void)fchmod(fileno(f), 0600);
    fprintf(f, "|1|%s|%s %s %s\n", salt64, mac64, tname, keyb64);
    r = fclose(f) == 0 ? 0 : -errno;
    xfree(keyb64);
    return r;
}

static int
ssh_ask_yes(const char *question)
{
    char answer[16];
    FILE *tty = fopen("/dev/tty", "r+e");
    int yes = 0;

    if (tty == NULL)
        return 0;
    fputs(question, tty);
    fflush(tty);
    if (fgets(answer, sizeof(answer), tty) != NULL)
        yes = strncmp(answer, "yes", 3) == 0;
    fclose(tty);
    return yes;
}

static int
ssh_check_hostkey(struct ssh_conn *c, const struct ssh_conn_opts *o,
    char *err, size_t errlen)
{
    const struct sshcfg *cfg = o->cfg;
    LIBSSH2_KNOWNHOSTS *kh;
    const char *key;
    size_t keylen, i;
    int type, mask, check, r;
    char fp[80], name[300], q[600];

    key = libssh2_session_hostkey(c->s, &keylen, &type);
    if (key == NULL) {
        snprintf(err, errlen, "%s: no host key: %s", c->display,
            ssh_last_error(c));
        return FERRY_ERR_HOSTKEY;
    }
    mask = ssh_knownhost_mask(type);
    ssh_fingerprint(c, fp, sizeof(fp));
    ssh_known_name(c, name, sizeof(name));
    if ((kh = libssh2_knownhost_init(c->s)) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < cfg->nknown; i++)
        (void)ssh_each_line(cfg->known_hosts[i], ssh_load_line, kh);
    check = libssh2_knownhost_checkp(kh, c->host, (int)c->port, key, keylen,
        LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | mask,
        NULL);
    libssh2_knownhost_free(kh);
    if (check == LIBSSH2_KNOWNHOST_CHECK_MATCH)
        return 0;
    if (check == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
        struct ssh_find f = { c, key, keylen, mask, 0 };
        const char *file = cfg->nknown ? cfg->known_hosts[0] : "known_hosts";

        for (i = 0; i < cfg->nknown; i++) {
            if (ssh_each_line(cfg->known_hosts[i], ssh_find_line, &f)) {
                file = cfg->known_hosts[i];
                break;
            }
        }
        fprintf(stderr,
            "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
            "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
            "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
            "Someone could be eavesdropping on you right now, or the host\n"
            "key has just been changed. The %s key sent by %s is\n%s.\n"
            "Offending key in %s:%u\n"
            "Remove it with: ssh-keygen -f '%s' -R '%s'\n",
            ssh_key_label(type), name, fp, file, f.lineno, file, name);
        snprintf(err, errlen, "%s: host key for %s has changed (%s key "
            "%s); refusing to connect", c->display, name,
            ssh_key_label(type), fp);
        return FERRY_ERR_HOSTKEY;
    }
    /* Not known. */
    if (cfg->strict == STRICT_ASK && o->interactive && !cfg->batch_mode) {
        snprintf(q, sizeof(q), "The authenticity of host '%s' can't be "
            "established.\n%s key fingerprint is %s.\nAre you sure you want "
            "to continue connecting (yes/no)? ", name, ssh_key_label(type),
            fp);
        if (!ssh_ask_yes(q)) {
            snprintf(err, errlen, "%s: host key verification failed",
                c->display);
            return FERRY_ERR_HOSTKEY;
        }
    } else if (cfg->strict == STRICT_YES || cfg->strict == STRICT_ASK) {
        snprintf(err, errlen, "%s: host key for %s is not known (%s key "
            "%s); add it to %s (connect once with ssh, or use "
            "-o StrictHostKeyChecking=accept-new)", c->display, name,
            ssh_key_label(type), fp,
            cfg->nknown ? cfg->known_hosts[0] : "~/.ssh/known_hosts");
        return FERRY_ERR_HOSTKEY;
    }
    if (cfg->nknown > 0) {
        if ((r = ssh_add_known(c, cfg->known_hosts[0], key, keylen,
            type)) != 0)
            log_warn("%s: cannot add host key: %s", cfg->known_hosts[0],
                ferry_strerror(r));
        else
            fprintf(stderr, "ferry: Warning: Permanently added '%s' (%s) "
                "to the list of known hosts.\n", name, ssh_key_label(type));
    }
    return 0;
}

/* Authentication. */

struct ssh_auth {
    char tried[512];
    int rsa_skipped;
    int attempts;
};

static void
ssh_tried(struct ssh_auth *a, const char *what)
{
    size_t n = strlen(a->tried);

    snprintf(a->tried + n, sizeof(a->tried) - n, "%s%s", n ? ", " : "",
        what);
}

/* The key type named at the start of an SSH public key blob. */
static int
ssh_blob_is_rsa(const unsigned char *blob, size_t len)
{
    return len > 11 && blob[3] == 7 && memcmp(blob + 4, "ssh-rsa", 7) == 0;
}

/*
 * 1 if blob is the public key of one of the configured identity files
 * (read from its .pub): with IdentitiesOnly, ssh uses agent keys only
 * when they are those (a passphrase-protected key loaded in the agent is
 * the common case).
 */
static int
ssh_blob_configured(const struct sshcfg *cfg, const unsigned char *blob,
    size_t len)
{
    char pub[4200], line[8192], *b64, *end;
    uint8_t key[4096];
    size_t i;
    long n;
    FILE *f;

    for (i = 0; i < cfg->nidentity; i++) {
        snprintf(pub, sizeof(pub), "%s.pub", cfg->identity_files[i]);
        if ((f = fopen(pub, "re")) == NULL)
            continue;
        n = -1;
        if (fgets(line, sizeof(line), f) != NULL &&
            (b64 = strchr(line, ' ')) != NULL) {
            b64++;
            end = b64 + strcspn(b64, " \r\n");
            n = digest_unbase64(b64, (size_t)(end - b64), key, sizeof(key));
        }
        fclose(f);
        if (n > 0 && (size_t)n == len && memcmp(key, blob, len) == 0)
            return 1;
    }
    return 0;
}

static int
ssh_auth_agent(struct ssh_conn *c, const struct sshcfg *cfg,
    const char *user, struct ssh_auth *a)
{
    LIBSSH2_AGENT *ag = libssh2_agent_init(c->s);
    struct libssh2_agent_publickey *id = NULL, *prev = NULL;
    int ok = 0, n = 0;

    if (ag == NULL)
        return 0;
    if (libssh2_agent_connect(ag) != 0 ||
        libssh2_agent_list_identities(ag) != 0) {
        libssh2_agent_free(ag);
        return 0;
    }
    while (!ok && libssh2_agent_get_identity(ag, &id, prev) == 0) {
        prev = id;
        if (ssh_blob_is_rsa(id->blob, id->blob_len)) {
            /* libssh2 1.10 signs RSA with SHA-1, which OpenSSH >= 8.8
             * refuses; trying would only use up MaxAuthTries. */
            a->rsa_skipped = 1;
            continue;
        }
        if (cfg->identities_only &&
            !ssh_blob_configured(cfg, id->blob, id->blob_len))
            continue;
        n++;
        a->attempts++;
        if (libssh2_agent_userauth(ag, user, id) == 0)
            ok = 1;
    }
    if (n > 0) {
        char what[64];

        snprintf(what, sizeof(what), "ssh-agent (%d key%s)", n,
            n == 1 ? "" : "s");
        ssh_tried(a, what);
    }
    libssh2_agent_disconnect(ag);
    libssh2_agent_free(ag);
    return ok;
}

/* Reads what kind of key a private key file holds without decrypting it:
 * *rsa for RSA keys, *encrypted when a passphrase is needed. */
static int
ssh_key_file_kind(const char *path, int *rsa, int *encrypted)
{
    static const char begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----";
    char *text = NULL, *b64 = NULL;
    uint8_t *bin = NULL;
    size_t n = 0, bn = 0;
    FILE *f;
    long len;
    int r = -1;

    *rsa = *encrypted = 0;
    if ((f = fopen(path, "re")) == NULL)
        return -errno;
    text = xcalloc(1, SSH_MAX_KEY_FILE + 1);
    b64 = xcalloc(1, SSH_MAX_KEY_FILE + 1);
    bin = xcalloc(1, SSH_MAX_KEY_FILE);
    if (text == NULL || b64 == NULL || bin == NULL)
        goto out;
    n = fread(text, 1, SSH_MAX_KEY_FILE, f);
    if (strstr(text, "BEGIN RSA PRIVATE KEY") != NULL) {
        *rsa = 1;
        *encrypted = strstr(text, "ENCRYPTED") != NULL;
        r = 0;
        goto out;
    }
    if (strncmp(text, begin, sizeof(begin) - 1) != 0) {
        *encrypted = strstr(text, "ENCRYPTED") != NULL;
        r = 0;
        goto out;
    }
    for (size_t i = sizeof(begin) - 1; i < n && text[i] != '-'; i++)
        if (text[i] != '\n' && text[i] != '\r')
            b64[bn++] = text[i];
    len = digest_unbase64(b64, bn, bin, SSH_MAX_KEY_FILE);
    /* "openssh-key-v1\0", string cipher, string kdf, string kdfopts,
     * u32 nkeys, string pubkey (whose first field is the type). */
    if (len > 15 + 4 && memcmp(bin, "openssh-key-v1", 15) == 0) {
        size_t off = 15;
        uint32_t sl;
        int field;

        for (field = 0; field < 5 && off + 4 <= (size_t)len; field++) {
            sl = (uint32_t)bin[off] << 24 | (uint32_t)bin[off + 1] << 16 |
                (uint32_t)bin[off + 2] << 8 | bin[off + 3];
            if (field == 3) {  /* nkeys: no length prefix */
                off += 4;
                continue;
            }
            if (sl > (size_t)len - off - 4)
                break;
            if (field == 0)
                *encrypted = !(sl == 4 && memcmp(bin + off + 4, "none",
                    4) == 0);
            if (field == 4)
                *rsa = ssh_blob_is_rsa(bin + off + 4, sl);
            off += 4 + sl;
        }
    }
    r = 0;
out:
    fclose(f);
    xfree(text);
    xfree(b64);
    xfree(bin);
    return r;
}

static int
ssh_read_passphrase(const char *prompt, char *out, size_t outlen)
{
    struct termios old, quiet;
    FILE *tty = fopen("/dev/tty", "r+e");
    size_t n;
    int ok = 0;

    if (tty == NULL)
        return 0;
    fputs(prompt, tty);
    fflush(tty);
    if (tcgetattr(fileno(tty), &old) == 0) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        (void)tcsetattr(fileno(tty), TCSANOW, &quiet);
    }
    if (fgets(out, (int)outlen, tty) != NULL) {
        n = strlen(out);
        if (n > 0 && out[n - 1] == '\n')
            out[n - 1] = '\0';
        ok = 1;
    }
    (void)tcsetattr(fileno(tty), TCSANOW, &old);
    fputc('\n', tty);
    fclose(tty);
    return ok;
}

static int
ssh_auth_files(struct ssh_conn *c, const struct ssh_conn_opts *o,
    const char *user, struct ssh_auth *a)
{
    const struct sshcfg *cfg = o->cfg;
    char pub[4200], pass[512], prompt[4300];
    size_t i;
    int rsa, enc, rc;

    for (i = 0; i < cfg->nidentity; i++) {
        const char *key = cfg->identity_files[i];
        const char *pubp = NULL;

        if (access(key, R_OK) != 0)
            continue;
        if (ssh_key_file_kind(key, &rsa, &enc) != 0)
            continue;
        if (rsa) {
            a->rsa_skipped = 1;
            continue;
        }
        snprintf(pub, sizeof(pub), "%s.pub", key);
        if (access(pub, R_OK) == 0)
            pubp = pub;
        pass[0] = '\0';
        if (enc) {
            snprintf(prompt, sizeof(prompt), "Enter passphrase for key "
                "'%s': ", key);
            if (!o->interactive || cfg->batch_mode ||
                !ssh_read_passphrase(prompt, pass, sizeof(pass)))
                continue;
        }
        a->attempts++;
        ssh_tried(a, key);
        rc = libssh2_userauth_publickey_fromfile_ex(c->s, user,
            (unsigned)strlen(user), pubp, key, pass);
        digest_cleanse(pass, sizeof(pass));
        if (rc == 0)
            return 1;
        log_debug("%s: key %s: %s", c->display, key, ssh_last_error(c));
    }
    return 0;
}

static int
ssh_authenticate(struct ssh_conn *c, const struct ssh_conn_opts *o,
    char *err, size_t errlen)
{
    const struct sshcfg *cfg = o->cfg;
    const char *user = cfg->user ? cfg->user : getenv("USER");
    struct ssh_auth a;
    char *methods;

    memset(&a, 0, sizeof(a));
    if (user == NULL)
        user = "root";
    methods = libssh2_userauth_list(c->s, user, (unsigned)strlen(user));
    if (methods == NULL && libssh2_userauth_authenticated(c->s))
        return 0;
    if (methods == NULL || strstr(methods, "publickey") == NULL) {
        snprintf(err, errlen, "%s: the server offers no public key "
            "authentication for %s (offers: %s)", c->display, user,
            methods ? methods : "nothing");
        return FERRY_ERR_AUTH;
    }
    if (ssh_auth_agent(c, cfg, user, &a))
        return 0;
    if (ssh_auth_files(c, o, user, &a))
        return 0;
    snprintf(err, errlen, "%s: authentication failed for %s (tried: %s)%s",
        c->display, user, a.tried[0] ? a.tried : "no usable key",
        a.rsa_skipped ? "; RSA keys were skipped: this SSH library signs "
        "them with SHA-1, which OpenSSH 8.8 and later refuse. Use an "
        "ed25519 key (ssh-keygen -t ed25519), or --ssh-cmd ssh" : "");
    return FERRY_ERR_AUTH;
}

int
ssh_conn_open(const struct ssh_conn_opts *o, struct ssh_conn **out,
    char *err, size_t errlen)
{
    const struct sshcfg *cfg = o->cfg;
    unsigned timeout = cfg->connect_timeout ? cfg->connect_timeout :
        SSH_DEFAULT_TIMEOUT;
    struct ssh_conn *c;
    int r, rc;

    *out = NULL;
    err[0] = '\0';
    if ((c = xcalloc(1, sizeof(*c))) == NULL)
        return FERRY_ERR_NOMEM;
    c->sock = c->sp = -1;
    c->exit_status = -1;
    snprintf(c->display, sizeof(c->display), "%s", o->display);
    snprintf(c->host, sizeof(c->host), "%s", cfg->host_key_alias ?
        cfg->host_key_alias : cfg->hostname);
    c->port = cfg->host_key_alias ? 22 : cfg->port;
    c->alive_interval = cfg->alive_interval ? cfg->alive_interval :
        SSH_DEFAULT_ALIVE;
    c->alive_count = cfg->alive_count ? cfg->alive_count : 3;
    if ((r = ssh_tcp_connect(c, cfg, timeout, err, errlen)) != 0)
        goto fail;
    if ((c->s = libssh2_session_init_ex(NULL, NULL, NULL, c)) == NULL) {
        r = FERRY_ERR_NOMEM;
        goto fail;
    }
    libssh2_session_callback_set(c->s, LIBSSH2_CALLBACK_SEND,
        (void *)ssh_send_cb);
    libssh2_session_callback_set(c->s, LIBSSH2_CALLBACK_RECV,
        (void *)ssh_recv_cb);
    libssh2_session_set_blocking(c->s, 1);
    libssh2_session_set_timeout(c->s, (long)timeout * 1000);
    /* Cipher cost is this transport's ceiling (libssh2 1.10 encrypts one
     * 16-byte block per OpenSSL call): prefer AES-128, which does 10
     * rounds a block where AES-256 does 14. */
    (void)libssh2_session_method_pref(c->s, LIBSSH2_METHOD_CRYPT_CS,
        SSH_CIPHERS);
    (void)libssh2_session_method_pref(c->s, LIBSSH2_METHOD_CRYPT_SC,
        SSH_CIPHERS);
    if ((rc = libssh2_session_handshake(c->s, c->sock)) != 0) {
        snprintf(err, errlen, "%s: SSH handshake failed: %s%s", c->display,
            ssh_last_error(c), rc == LIBSSH2_ERROR_KEX_FAILURE ?
            " (this SSH library needs an ed25519 or ecdsa host key)" : "");
        r = rc == LIBSSH2_ERROR_TIMEOUT ? FERRY_ERR_TIMEOUT :
            FERRY_ERR_SSH;
        goto fail;
    }
    if ((r = ssh_check_hostkey(c, o, err, errlen)) != 0 ||
        (r = ssh_authenticate(c, o, err, errlen)) != 0)
        goto fail;
    libssh2_keepalive_config(c->s, 1, c->alive_interval);
    atomic_store(&c->last_rx_ms, now_ms());
    *out = c;
    return 0;
fail:
    ssh_conn_close(c);
    return r;
}

/* The pump: moves bytes between the channel and the engine's socketpair
 * in non-blocking mode, honouring libssh2 1.10's rule that a call which
 * returned EAGAIN while sending must be repeated, unchanged, before any
 * other call that sends. */

enum pump_op { OP_NONE, OP_WRITE, OP_READ, OP_EOF, OP_STDERR, OP_ALIVE };

struct pump {
    struct ssh_conn *c;
    uint8_t *up, *down;
    size_t up_len, up_off, down_len, down_off;
    int sp_eof, eof_sent, ch_eof, down_shut;
    enum pump_op pending;
    int alive_next;        /* seconds to the next keepalive */
};

static void FERRY_PRINTF(3, 4)
pump_fail(struct ssh_conn *c, int err, const char *fmt, ...)
{
    va_list ap;

    if (c->pump_err == 0) {
        c->pump_err = err;
        va_start(ap, fmt);
        vsnprintf(c->pump_msg, sizeof(c->pump_msg), fmt, ap);
        va_end(ap);
    }
}

/* After EAGAIN: a blocked send must be retried first; a blocked receive
 * only means "nothing yet". */
static void
pump_eagain(struct pump *p, enum pump_op op)
{
    if (libssh2_session_block_directions(p->c->s) &
        LIBSSH2_SESSION_BLOCK_OUTBOUND)
        p->pending = op;
    else
        p->pending = OP_NONE;
}

static int
pump_may(const struct pump *p, enum pump_op op)
{
    return p->pending == OP_NONE || p->pending == op;
}

/* One round of libssh2 calls. Returns 1 if anything moved, 0 if not, or
 * -1 on a fatal error. */
static int
pump_ssh(struct pump *p)
{
    struct ssh_conn *c = p->c;
    ssize_t n;
    int moved = 0;
    char errbuf[4096];

    if (p->up_off < p->up_len && pump_may(p, OP_WRITE)) {
        n = libssh2_channel_write(c->ch, (const char *)p->up + p->up_off,
            p->up_len - p->up_off);
        if (n > 0) {
            p->pending = OP_NONE;
            p->up_off += (size_t)n;
            if (p->up_off == p->up_len)
                p->up_off = p->up_len = 0;
            moved = 1;
        } else if (n == LIBSSH2_ERROR_EAGAIN) {
            pump_eagain(p, OP_WRITE);
        } else if (n < 0) {
            pump_fail(c, FERRY_ERR_CLOSED, "%s: connection lost (%s)",
                c->display, ssh_last_error(c));
            return -1;
        }
    }
    if (p->sp_eof && p->up_len == 0 && !p->eof_sent && pump_may(p, OP_EOF)) {
        int rc = libssh2_channel_send_eof(c->ch);

        if (rc == 0) {
            p->pending = OP_NONE;
            p->eof_sent = 1;
            moved = 1;
        } else if (rc == LIBSSH2_ERROR_EAGAIN) {
            pump_eagain(p, OP_EOF);
        } else {
            p->eof_sent = 1;  /* the channel is gone anyway */
        }
    }
    if (p->down_len == 0 && !p->ch_eof && pump_may(p, OP_READ)) {
        n = libssh2_channel_read(c->ch, (char *)p->down, SSH_PUMP_BUF);
        if (n > 0) {
            p->pending = OP_NONE;
            p->down_len = (size_t)n;
            p->down_off = 0;
            moved = 1;
        } else if (n == LIBSSH2_ERROR_EAGAIN) {
            pump_eagain(p, OP_READ);
        } else if (n == 0 || libssh2_channel_eof(c->ch)) {
            p->ch_eof = libssh2_channel_eof(c->ch);
        } else if (n < 0) {
            pump_fail(c, FERRY_ERR_CLOSED, "%s: connection lost (%s)",
                c->display, ssh_last_error(c));
            return -1;
        }
        if (n <= 0 && libssh2_channel_eof(c->ch))
            p->ch_eof = 1;
    }
    if (pump_may(p, OP_ALIVE)) {
        int rc = libssh2_keepalive_send(c->s, &p->alive_next);

        if (rc == LIBSSH2_ERROR_EAGAIN)
            pump_eagain(p, OP_ALIVE);
        else if (p->pending == OP_ALIVE)
            p->pending = OP_NONE;
    }
    /* The remote stderr: the agent's diagnostics, shown as they come. */
    if (pump_may(p, OP_STDERR)) {
        n = libssh2_channel_read_stderr(c->ch, errbuf, sizeof(errbuf));
        if (n > 0) {
            p->pending = OP_NONE;
            (void)fwrite(errbuf, 1, (size_t)n, stderr);
            moved = 1;
        } else if (n == LIBSSH2_ERROR_EAGAIN) {
            pump_eagain(p, OP_STDERR);
        }
    }
    return moved;
}

/* Moves bytes between the buffers and the engine's socket. */
static int
pump_local(struct pump *p)
{
    struct ssh_conn *c = p->c;
    ssize_t n;
    int moved = 0;

    if (!p->sp_eof && p->up_len == 0) {
        n = read(c->sp, p->up, SSH_PUMP_BUF);
        if (n > 0) {
            p->up_len = (size_t)n;
            p->up_off = 0;
            moved = 1;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            p->sp_eof = 1;
            moved = 1;
        }
    }
    if (p->down_len > 0) {
        n = send(c->sp, p->down + p->down_off, p->down_len - p->down_off,
            MSG_NOSIGNAL);
        if (n > 0) {
            p->down_off += (size_t)n;
            if (p->down_off == p->down_len)
                p->down_len = p->down_off = 0;
            moved = 1;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            /* The engine is gone: drop what the agent still says. */
            p->down_len = p->down_off = 0;
            p->sp_eof = 1;
        }
    }
    if (p->ch_eof && p->down_len == 0 && !p->down_shut) {
        (void)shutdown(c->sp, SHUT_WR);
        p->down_shut = 1;
        moved = 1;
    }
    return moved;
}

static void *
pump_main(void *arg)
{
    struct ssh_conn *c = arg;
    struct pump p;
    int64_t dead_ms = (int64_t)c->alive_interval * c->alive_count * 1000;
    int64_t done_at = 0;

    memset(&p, 0, sizeof(p));
    p.c = c;
    p.up = xmalloc(SSH_PUMP_BUF);
    p.down = xmalloc(SSH_PUMP_BUF);
    if (p.up == NULL || p.down == NULL) {
        pump_fail(c, FERRY_ERR_NOMEM, "%s: out of memory", c->display);
        goto out;
    }
    for (;;) {
        struct pollfd fds[2];
        int dirs, wait_ms = 1000, moved;

        moved = pump_local(&p);
        if ((moved |= pump_ssh(&p)) < 0)
            break;
        /* Done when both sides have said EOF and it was passed on. */
        if (p.sp_eof && p.eof_sent && p.down_shut)
            break;
        if (p.sp_eof && p.eof_sent) {
            /* The engine is done; an agent that does not finish within
             * a grace period is not waited for. */
            if (done_at == 0)
                done_at = now_ms();
            else if (now_ms() - done_at > 10000)
                break;
        }
        if (moved)
            continue;
        if (p.alive_next > 0 && p.alive_next * 1000 < wait_ms)
            wait_ms = p.alive_next * 1000;
        if (now_ms() - atomic_load(&c->last_rx_ms) > dead_ms) {
            pump_fail(c, FERRY_ERR_TIMEOUT, "%s: connection lost (no "
                "response for %lld s)", c->display,
                (long long)(dead_ms / 1000));
            break;
        }
        dirs = libssh2_session_block_directions(c->s);
        fds[0].fd = c->sock;
        fds[0].events = POLLIN;
        if (dirs & LIBSSH2_SESSION_BLOCK_OUTBOUND)
            fds[0].events |= POLLOUT;
        else if (p.down_len > 0 && p.pending == OP_NONE)
            fds[0].events = 0;  /* the engine must drain first */
        fds[1].fd = c->sp;
        fds[1].events = 0;
        if (!p.sp_eof && p.up_len == 0)
            fds[1].events |= POLLIN;
        if (p.down_len > 0)
            fds[1].events |= POLLOUT;
        (void)poll(fds, 2, wait_ms);
    }
out:
    if (c->ch != NULL) {
        /* Bounded: a dead peer must not hold us here (libssh2 #232). */
        libssh2_session_set_blocking(c->s, 1);
        libssh2_session_set_timeout(c->s, 3000);
        if (c->pump_err == 0) {
            (void)libssh2_channel_close(c->ch);
            (void)libssh2_channel_wait_closed(c->ch);
        }
        c->exit_status = libssh2_channel_get_exit_status(c->ch);
        if (c->pump_err == 0 && !p.ch_eof)
            c->exit_status = -1;
        libssh2_channel_free(c->ch);
        c->ch = NULL;
    }
    close(c->sp);
    c->sp = -1;
    xfree(p.up);
    xfree(p.down);
    return NULL;
}

static LIBSSH2_CHANNEL *
ssh_open_exec(struct ssh_conn *c, const char *command, char *err,
    size_t errlen)
{
    LIBSSH2_CHANNEL *ch;
    int rc;

    libssh2_session_set_blocking(c->s, 1);
    ch = libssh2_channel_open_ex(c->s, "session", 7, SSH_WINDOW, SSH_PACKET,
        NULL, 0);
    if (ch == NULL) {
        snprintf(err, errlen, "%s: cannot open a channel: %s", c->display,
            ssh_last_error(c));
        return NULL;
    }
    if ((rc = libssh2_channel_exec(ch, command)) != 0) {
        snprintf(err, errlen, "%s: cannot run the agent: %s", c->display,
            ssh_last_error(c));
        libssh2_channel_free(ch);
        return NULL;
    }
    return ch;
}

int
ssh_conn_exec_pump(struct ssh_conn *c, const char *command, int *fd,
    char *err, size_t errlen)
{
    int sv[2];

    *fd = -1;
    if (c->thr_running)
        return FERRY_ERR_USAGE;
    if ((c->ch = ssh_open_exec(c, command, err, errlen)) == NULL)
        return FERRY_ERR_SSH;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        libssh2_channel_free(c->ch);
        c->ch = NULL;
        return -errno;
    }
    (void)fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
    /* Room for a few steps' output on the way to the pump: fewer
     * wake-ups of both threads per MiB. */
    for (int i = 0; i < 2; i++) {
        int sz = SSH_SOCKBUF;

        (void)setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
        (void)setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    }
    c->sp = sv[1];
    c->pump_err = 0;
    c->pump_msg[0] = '\0';
    c->exit_status = -1;
    libssh2_session_set_blocking(c->s, 0);
    if (pthread_create(&c->thr, NULL, pump_main, c) != 0) {
        close(sv[0]);
        close(sv[1]);
        c->sp = -1;
        libssh2_channel_free(c->ch);
        c->ch = NULL;
        return FERRY_ERR_NOMEM;
    }
    c->thr_running = 1;
    *fd = sv[0];
    return 0;
}

int
ssh_conn_pump_wait(struct ssh_conn *c, int *exit_status, char *err,
    size_t errlen)
{
    *exit_status = -1;
    if (!c->thr_running)
        return 0;
    pthread_join(c->thr, NULL);
    c->thr_running = 0;
    *exit_status = c->exit_status;
    if (c->pump_err != 0)
        snprintf(err, errlen, "%s", c->pump_msg);
    return c->pump_err;
}

int
ssh_conn_run(struct ssh_conn *c, const char *command, const void *in,
    size_t inlen, int *exit_status, char *err, size_t errlen)
{
    LIBSSH2_CHANNEL *ch;
    const char *p = in;
    char buf[4096];
    ssize_t n;

    *exit_status = -1;
    if (c->thr_running)
        return FERRY_ERR_USAGE;
    if ((ch = ssh_open_exec(c, command, err, errlen)) == NULL)
        return FERRY_ERR_SSH;
    libssh2_session_set_timeout(c->s, 120000);
    while (inlen > 0) {
        n = libssh2_channel_write(ch, p, inlen);
        if (n < 0) {
            snprintf(err, errlen, "%s: upload failed: %s", c->display,
                ssh_last_error(c));
            libssh2_channel_free(ch);
            return FERRY_ERR_CLOSED;
        }
        p += n;
        inlen -= (size_t)n;
    }
    (void)libssh2_channel_send_eof(ch);
    while ((n = libssh2_channel_read(ch, buf, sizeof(buf))) > 0)
        ;
    while ((n = libssh2_channel_read_stderr(ch, buf, sizeof(buf))) > 0)
        (void)fwrite(buf, 1, (size_t)n, stderr);
    (void)libssh2_channel_close(ch);
    (void)libssh2_channel_wait_closed(ch);
    *exit_status = libssh2_channel_get_exit_status(ch);
    libssh2_channel_free(ch);
    return 0;
}

void
ssh_conn_close(struct ssh_conn *c)
{
    if (c == NULL)
        return;
    if (c->thr_running) {
        if (c->sp >= 0)
            (void)shutdown(c->sp, SHUT_RDWR);
        pthread_join(c->thr, NULL);
    }
    if (c->s != NULL) {
        libssh2_session_set_blocking(c->s, 1);
        libssh2_session_set_timeout(c->s, 2000);
        (void)libssh2_session_disconnect(c->s, "done");
        libssh2_session_free(c->s);
    }
    if (c->sock >= 0)
        close(c->sock);
    xfree(c);
}
