/*
 * ssh_hostkey.c: the server's host key against known_hosts. Files are fed
 * to libssh2 line by line (its readfile stops at the first line it cannot
 * parse); a mismatch is located by checking each line alone; new keys are
 * added hashed, as HashKnownHosts does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "digest.h"
#include "ssh_int.h"

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

/* 1 if (p, n) starts with the base64 of 20 bytes: 27 characters of the
 * alphabet and one '='. */
static int
ssh_b64_sha1(const char *p, size_t n)
{
    size_t i;

    if (n < 28 || p[27] != '=')
        return 0;
    for (i = 0; i < 27; i++)
        if (!((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z') ||
            (p[i] >= '0' && p[i] <= '9') || p[i] == '+' || p[i] == '/'))
            return 0;
    return 1;
}

/*
 * 1 unless the line is a hashed name ("|1|salt|hash", after any blanks,
 * which libssh2 skips) whose salt or hash is not 20 bytes of base64. ssh
 * ignores such a line, as it can match no host; libssh2 1.10 takes it
 * and then leaks an HMAC context on every lookup that meets it (fixed
 * upstream after 1.11), so it is not handed over.
 */
static int
ssh_hashed_ok(const char *line, size_t len)
{
    while (len > 0 && (*line == ' ' || *line == '\t'))
        line++, len--;
    if (len < 3 || memcmp(line, "|1|", 3) != 0)
        return 1;
    return len >= 3 + 28 + 1 + 28 + 1 && ssh_b64_sha1(line + 3, len - 3) &&
        line[31] == '|' && ssh_b64_sha1(line + 32, len - 32) &&
        (line[60] == ' ' || line[60] == '\t');
}

static int
ssh_load_line(void *ctx, const char *line, size_t len, unsigned no)
{
    (void)no;
    /* Lines libssh2 cannot read (@cert-authority, @revoked, unknown key
     * types) are skipped one by one rather than ending the file. */
    if (ssh_hashed_ok(line, len))
        (void)libssh2_knownhost_readline(ctx, line, len,
            LIBSSH2_KNOWNHOST_FILE_OPENSSH);
    return 0;
}

struct ssh_find {
    LIBSSH2_SESSION *s;
    const char *host;
    unsigned port;
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
    LIBSSH2_KNOWNHOSTS *one;
    int r = 0;

    if (!ssh_hashed_ok(line, len) ||
        (one = libssh2_knownhost_init(f->s)) == NULL)
        return 0;
    /* As ssh_load_line: libssh2 may keep the names it read before it
     * failed on the rest of a line, so what it says is not looked at. */
    if (ssh_hashed_ok(line, len))
        (void)libssh2_knownhost_readline(one, line, len,
            LIBSSH2_KNOWNHOST_FILE_OPENSSH);
    if (libssh2_knownhost_checkp(one, f->host, (int)f->port, f->key,
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


/*
 * The key the user accepted at the prompt in this run: a retry or another
 * stream must not ask again, also when known_hosts could not be written.
 * Guarded by ssh_accepted_lock.
 */
static pthread_mutex_t ssh_accepted_lock = PTHREAD_MUTEX_INITIALIZER;
static char ssh_accepted_name[300];
static uint8_t ssh_accepted_key[4096];
static size_t ssh_accepted_len;

static int
ssh_accepted_before(const char *name, const char *key, size_t keylen)
{
    int yes;

    pthread_mutex_lock(&ssh_accepted_lock);
    yes = ssh_accepted_len == keylen && keylen > 0 &&
        strcmp(ssh_accepted_name, name) == 0 &&
        memcmp(ssh_accepted_key, key, keylen) == 0;
    pthread_mutex_unlock(&ssh_accepted_lock);
    return yes;
}

static void
ssh_accepted_keep(const char *name, const char *key, size_t keylen)
{
    if (keylen > sizeof(ssh_accepted_key))
        return;
    pthread_mutex_lock(&ssh_accepted_lock);
    snprintf(ssh_accepted_name, sizeof(ssh_accepted_name), "%s", name);
    memcpy(ssh_accepted_key, key, keylen);
    ssh_accepted_len = keylen;
    pthread_mutex_unlock(&ssh_accepted_lock);
}

/* A changed key: OpenSSH's warning, and the line to fix (file:lineno,
 * from ssh_known_lookup). */
static int
ssh_hostkey_changed(struct ssh_conn *c, const char *file, unsigned lineno,
    int type, char *err, size_t errlen)
{
    char fp[80], name[300];

    ssh_fingerprint(c, fp, sizeof(fp));
    ssh_known_name(c, name, sizeof(name));
    fprintf(stderr,
        "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
        "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
        "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
        "Someone could be eavesdropping on you right now, or the host\n"
        "key has just been changed. The %s key sent by %s is\n%s.\n"
        "Offending key in %s:%u\n"
        "Remove it with: ssh-keygen -f '%s' -R '%s'\n",
        ssh_key_label(type), name, fp, file, lineno, file, name);
    snprintf(err, errlen, "%s: host key for %s has changed (%s key "
        "%s); refusing to connect", c->display, name, ssh_key_label(type),
        fp);
    return FERRY_ERR_HOSTKEY;
}

int
ssh_known_lookup(LIBSSH2_SESSION *s, const struct sshcfg *cfg,
    const char *host, unsigned port, const char *key, size_t keylen,
    int type, const char **file, unsigned *lineno)
{
    struct ssh_find f = { s, host, port, key, keylen,
        ssh_knownhost_mask(type), 0 };
    LIBSSH2_KNOWNHOSTS *kh;
    size_t i;
    int check;

    *file = cfg->nknown ? cfg->known_hosts[0] : "known_hosts";
    *lineno = 0;
    if ((kh = libssh2_knownhost_init(s)) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < cfg->nknown; i++)
        (void)ssh_each_line(cfg->known_hosts[i], ssh_load_line, kh);
    check = libssh2_knownhost_checkp(kh, host, (int)port, key, keylen,
        LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW |
        f.mask, NULL);
    libssh2_knownhost_free(kh);
    if (check != LIBSSH2_KNOWNHOST_CHECK_MISMATCH)
        return check;
    /* Each line is read alone as it was in the whole, so the one that
     * holds the other key is found again this way. */
    for (i = 0; i < cfg->nknown; i++) {
        if (ssh_each_line(cfg->known_hosts[i], ssh_find_line, &f)) {
            *file = cfg->known_hosts[i];
            break;
        }
    }
    *lineno = f.lineno;
    return check;
}

int
ssh_hostkey_check(struct ssh_conn *c, const struct sshcfg *cfg, char *err,
    size_t errlen)
{
    const char *key, *file;
    size_t keylen;
    unsigned lineno;
    int type, check, r;
    char fp[80], name[300], q[600];

    key = libssh2_session_hostkey(c->s, &keylen, &type);
    if (key == NULL) {
        snprintf(err, errlen, "%s: no host key: %s", c->display,
            ssh_last_error(c));
        return FERRY_ERR_HOSTKEY;
    }
    ssh_fingerprint(c, fp, sizeof(fp));
    ssh_known_name(c, name, sizeof(name));
    if ((check = ssh_known_lookup(c->s, cfg, c->host, c->port, key, keylen,
        type, &file, &lineno)) == FERRY_ERR_NOMEM)
        return check;
    if (check == LIBSSH2_KNOWNHOST_CHECK_MATCH ||
        (check != LIBSSH2_KNOWNHOST_CHECK_MISMATCH &&
        ssh_accepted_before(name, key, keylen)))
        return 0;
    if (check == LIBSSH2_KNOWNHOST_CHECK_MISMATCH)
        return ssh_hostkey_changed(c, file, lineno, type, err, errlen);
    /* Not known. */
    if (cfg->strict == STRICT_ASK && c->interactive) {
        snprintf(q, sizeof(q), "The authenticity of host '%s' can't be "
            "established.\n%s key fingerprint is %s.\nAre you sure you want "
            "to continue connecting (yes/no/[fingerprint])? ", name,
            ssh_key_label(type), fp);
        if ((r = ssh_tty_confirm(q, fp)) == FERRY_ERR_INTERRUPTED)
            return r;
        if (r != 1) {
            snprintf(err, errlen, "%s: host key verification failed",
                c->display);
            return FERRY_ERR_HOSTKEY;
        }
        ssh_accepted_keep(name, key, keylen);
        ssh_deadline_reset(c);
    } else if (cfg->strict == STRICT_YES || cfg->strict == STRICT_ASK) {
        snprintf(err, errlen, "%s: host key for %s is not known (%s key "
            "%s); add it to %s (connect once with ssh, or use "
            "-o StrictHostKeyChecking=accept-new)", c->display, name,
            ssh_key_label(type), fp,
            cfg->nknown ? cfg->known_hosts[0] : "~/.ssh/known_hosts");
        return FERRY_ERR_HOSTKEY;
    } else {
        ssh_accepted_keep(name, key, keylen);
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
