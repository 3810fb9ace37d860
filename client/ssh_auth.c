/*
 * ssh_auth.c: logging in. ssh-agent keys first, then the identity files;
 * RSA keys are skipped in both (libssh2 1.10 signs them with SHA-1, which
 * OpenSSH 8.8 and later refuse, and every refusal counts against
 * MaxAuthTries). A passphrase is asked for once per run and kept in
 * memory for later logins (retries, more streams), wiped at exit.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/log.h"
#include "../common/rd.h"
#include "digest.h"
#include "ssh_int.h"

#define SSH_MAX_KEY_FILE (64u << 10)
/* Cipher, KDF and key type names in an OpenSSH key: short words. */
#define SSH_KEY_MAX_NAME 64u
#define SSH_MAX_PASSPHRASES 8

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
ssh_blob_is_rsa(const uint8_t *blob, size_t len)
{
    struct rd r;
    const uint8_t *type;
    size_t tl;

    rd_init(&r, blob, len);
    return rd_str32(&r, SSH_KEY_MAX_NAME, &type, &tl) == 0 && tl == 7 &&
        memcmp(type, "ssh-rsa", 7) == 0;
}

/*
 * Passphrases typed in this run, by key file. Guarded by ssh_pass_lock
 * (streams may log in from several threads). Wiped with OPENSSL_cleanse
 * at exit.
 */
static pthread_mutex_t ssh_pass_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *path;
    char *pass;
} ssh_pass[SSH_MAX_PASSPHRASES];

static void
ssh_pass_wipe(void)
{
    size_t i;

    pthread_mutex_lock(&ssh_pass_lock);
    for (i = 0; i < SSH_MAX_PASSPHRASES; i++) {
        if (ssh_pass[i].pass != NULL)
            digest_cleanse(ssh_pass[i].pass, strlen(ssh_pass[i].pass));
        xfree(ssh_pass[i].pass);
        xfree(ssh_pass[i].path);
        ssh_pass[i].pass = ssh_pass[i].path = NULL;
    }
    pthread_mutex_unlock(&ssh_pass_lock);
}

/* Copies the passphrase kept for path into out; 1 if there was one. */
static int
ssh_pass_get(const char *path, char *out, size_t outlen)
{
    size_t i;
    int found = 0;

    pthread_mutex_lock(&ssh_pass_lock);
    for (i = 0; i < SSH_MAX_PASSPHRASES && !found; i++) {
        if (ssh_pass[i].path != NULL && strcmp(ssh_pass[i].path, path) == 0) {
            snprintf(out, outlen, "%s", ssh_pass[i].pass);
            found = 1;
        }
    }
    pthread_mutex_unlock(&ssh_pass_lock);
    return found;
}

static void
ssh_pass_keep(const char *path, const char *pass)
{
    static int wipe_registered;
    size_t i;

    pthread_mutex_lock(&ssh_pass_lock);
    if (!wipe_registered)
        wipe_registered = atexit(ssh_pass_wipe) == 0;
    for (i = 0; i < SSH_MAX_PASSPHRASES; i++) {
        if (ssh_pass[i].path == NULL) {
            ssh_pass[i].path = xstrdup(path);
            ssh_pass[i].pass = xstrdup(pass);
            if (ssh_pass[i].path == NULL || ssh_pass[i].pass == NULL) {
                xfree(ssh_pass[i].path);
                xfree(ssh_pass[i].pass);
                ssh_pass[i].path = ssh_pass[i].pass = NULL;
            }
            break;
        }
    }
    pthread_mutex_unlock(&ssh_pass_lock);
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

/* Returns 1 when logged in, 0 when no agent key worked, or an error that
 * ends the login (interrupted, timed out). */
static int
ssh_auth_agent(struct ssh_conn *c, const struct sshcfg *cfg,
    const char *user, struct ssh_auth *a)
{
    LIBSSH2_AGENT *ag = libssh2_agent_init(c->s);
    struct libssh2_agent_publickey *id = NULL, *prev = NULL;
    int ok = 0, n = 0, rc;

    if (ag == NULL)
        return 0;
    /* ssh-agent is a local socket libssh2 talks to in blocking mode. */
    if (libssh2_agent_connect(ag) != 0 ||
        libssh2_agent_list_identities(ag) != 0) {
        libssh2_agent_free(ag);
        return 0;
    }
    while (ok == 0 && libssh2_agent_get_identity(ag, &id, prev) == 0) {
        prev = id;
        if (ssh_blob_is_rsa(id->blob, id->blob_len)) {
            a->rsa_skipped = 1;
            continue;
        }
        if (cfg->identities_only &&
            !ssh_blob_configured(cfg, id->blob, id->blob_len))
            continue;
        n++;
        a->attempts++;
        do
            rc = libssh2_agent_userauth(ag, user, id);
        while (ssh_again(c, rc));
        if (rc == 0)
            ok = 1;
        else if (rc == LIBSSH2_ERROR_EAGAIN)
            ok = c->wait_err;
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

/* Finds the base64 body between the BEGIN line (ending at body) and the
 * END line, and decodes it without the line breaks. */
static int
ssh_pem_body(const char *body, size_t len, uint8_t **bin, size_t *binlen)
{
    char *b64;
    size_t i, n = 0;
    long dl;

    *bin = NULL;
    *binlen = 0;
    if ((b64 = xmalloc(len + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < len && body[i] != '-'; i++)
        if (body[i] != '\n' && body[i] != '\r' && body[i] != ' ')
            b64[n++] = body[i];
    if (i == len) {          /* no END line: cut short */
        xfree(b64);
        return FERRY_ERR_SHORT;
    }
    if ((*bin = xmalloc(n / 4 * 3 + 1)) == NULL) {
        xfree(b64);
        return FERRY_ERR_NOMEM;
    }
    dl = digest_unbase64(b64, n, *bin, n / 4 * 3 + 1);
    xfree(b64);
    if (dl < 0) {
        xfree(*bin);
        *bin = NULL;
        return FERRY_ERR_FORMAT;
    }
    *binlen = (size_t)dl;
    return 0;
}

/*
 * The OpenSSH container: "openssh-key-v1\0", string cipher, string kdf,
 * string kdf options, u32 number of keys, then the public keys (each a
 * string whose first field is the key type) and the private part.
 */
static int
ssh_openssh_kind(const uint8_t *bin, size_t len, int *rsa, int *encrypted)
{
    static const char magic[] = "openssh-key-v1";
    const uint8_t *m, *cipher, *pub;
    size_t cl, pl;
    uint32_t nkeys;
    struct rd r;
    int e;

    rd_init(&r, bin, len);
    if ((e = rd_bytes(&r, sizeof(magic), &m)) != 0 ||
        (e = memcmp(m, magic, sizeof(magic)) == 0 ? 0 :
        FERRY_ERR_FORMAT) != 0 ||
        (e = rd_str32(&r, SSH_KEY_MAX_NAME, &cipher, &cl)) != 0 ||
        (e = rd_str32(&r, SSH_KEY_MAX_NAME, NULL, NULL)) != 0 ||
        (e = rd_str32(&r, SSH_MAX_KEY_FILE, NULL, NULL)) != 0 ||
        (e = rd_u32(&r, &nkeys)) != 0 ||
        (e = nkeys >= 1 ? 0 : FERRY_ERR_FORMAT) != 0 ||
        (e = rd_str32(&r, SSH_MAX_KEY_FILE, &pub, &pl)) != 0)
        return e;
    *encrypted = !(cl == 4 && memcmp(cipher, "none", 4) == 0);
    *rsa = ssh_blob_is_rsa(pub, pl);
    return 0;
}

int
ssh_auth_key_kind(const char *text, size_t len, int *rsa, int *encrypted)
{
    static const char begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----";
    const size_t bl = sizeof(begin) - 1;
    uint8_t *bin = NULL;
    size_t binlen;
    int r;

    *rsa = *encrypted = 0;
    if (len < bl || memcmp(text, begin, bl) != 0) {
        /* PEM: "BEGIN RSA PRIVATE KEY", "Proc-Type: 4,ENCRYPTED" or
         * "BEGIN ENCRYPTED PRIVATE KEY". */
        *rsa = memmem(text, len, "BEGIN RSA PRIVATE KEY", 21) != NULL;
        *encrypted = memmem(text, len, "ENCRYPTED", 9) != NULL;
        return 0;
    }
    if ((r = ssh_pem_body(text + bl, len - bl, &bin, &binlen)) == 0)
        r = ssh_openssh_kind(bin, binlen, rsa, encrypted);
    xfree(bin);
    if (r != 0)
        *rsa = *encrypted = 0;
    return r;
}

/* Reads a private key file and tells its kind (see ssh_auth_key_kind). */
static int
ssh_key_file_kind(const char *path, int *rsa, int *encrypted)
{
    FILE *f;
    char *text;
    size_t n;
    int r;

    *rsa = *encrypted = 0;
    if ((f = fopen(path, "re")) == NULL)
        return -errno;
    if ((text = xmalloc(SSH_MAX_KEY_FILE)) == NULL) {
        fclose(f);
        return FERRY_ERR_NOMEM;
    }
    n = fread(text, 1, SSH_MAX_KEY_FILE, f);
    fclose(f);
    r = ssh_auth_key_kind(text, n, rsa, encrypted);
    xfree(text);
    return r;
}

int
ssh_auth_would_ask(const struct sshcfg *cfg)
{
    const char *sock = getenv("SSH_AUTH_SOCK");
    size_t i;
    int rsa, enc;

    if (sock != NULL && sock[0] != '\0')
        return 0;
    for (i = 0; i < cfg->nidentity; i++)
        if (access(cfg->identity_files[i], R_OK) == 0 &&
            ssh_key_file_kind(cfg->identity_files[i], &rsa, &enc) == 0 &&
            enc && !rsa)
            return 1;
    return 0;
}

/* The passphrase for key: kept from earlier in the run, or asked for on
 * the first connection. Returns 1 to try the key, 0 to skip it, or
 * FERRY_ERR_INTERRUPTED. */
static int
ssh_passphrase(struct ssh_conn *c, const char *key, char *pass,
    size_t passlen, int *asked)
{
    char prompt[4300];
    int r;

    *asked = 0;
    if (ssh_pass_get(key, pass, passlen))
        return 1;
    if (!c->interactive)
        return 0;
    snprintf(prompt, sizeof(prompt), "Enter passphrase for key '%s': ",
        key);
    r = ssh_tty_secret(prompt, pass, passlen);
    ssh_deadline_reset(c);
    if (r == FERRY_ERR_INTERRUPTED)
        return r;
    if (r != 0)
        return 0;
    *asked = 1;
    return 1;
}

/* Returns 1 when logged in, 0 when no file worked, or an error that ends
 * the login. */
static int
ssh_auth_files(struct ssh_conn *c, const struct sshcfg *cfg,
    const char *user, struct ssh_auth *a)
{
    char pub[4200], pass[512];
    size_t i;
    int rsa, enc, rc, asked, r = 0;

    for (i = 0; i < cfg->nidentity && r == 0; i++) {
        const char *key = cfg->identity_files[i];
        const char *pubp = NULL;

        if (access(key, R_OK) != 0)
            continue;
        if ((rc = ssh_key_file_kind(key, &rsa, &enc)) != 0)
            log_debug("%s: %s: %s; trying it as it is", c->display, key,
                ferry_strerror(rc));
        if (rsa) {
            a->rsa_skipped = 1;
            continue;
        }
        snprintf(pub, sizeof(pub), "%s.pub", key);
        if (access(pub, R_OK) == 0)
            pubp = pub;
        pass[0] = '\0';
        asked = 0;
        if (enc && (r = ssh_passphrase(c, key, pass, sizeof(pass),
            &asked)) != 1)
            continue;
        r = 0;
        a->attempts++;
        ssh_tried(a, key);
        do
            rc = libssh2_userauth_publickey_fromfile_ex(c->s, user,
                (unsigned)strlen(user), pubp, key, pass);
        while (ssh_again(c, rc));
        if (rc == 0 && asked)
            ssh_pass_keep(key, pass);
        digest_cleanse(pass, sizeof(pass));
        if (rc == 0)
            return 1;
        if (rc == LIBSSH2_ERROR_EAGAIN)
            return c->wait_err;
        log_debug("%s: key %s: %s", c->display, key, ssh_last_error(c));
    }
    return r;
}

/* The ssh-agent's keys, then the files: 1 when one got in, 0 when none
 * did, or an error. */
static int
ssh_auth_keys(struct ssh_conn *c, const struct sshcfg *cfg,
    const char *user, struct ssh_auth *a)
{
    int r;

    if ((r = ssh_auth_agent(c, cfg, user, a)) == 0)
        r = ssh_auth_files(c, cfg, user, a);
    return r;
}

int
ssh_auth_login(struct ssh_conn *c, const struct sshcfg *cfg, char *err,
    size_t errlen)
{
    const char *user = cfg->user ? cfg->user : getenv("USER");
    struct ssh_auth a;
    char *methods;
    int r;

    memset(&a, 0, sizeof(a));
    if (user == NULL)
        user = "root";
    /* Asking which methods the server offers (a "none" request) costs a
     * round trip on every connection. Where no prompt can come (further
     * streams, retries, scripts) the keys go first, and the list only
     * when none got in: for the message, or a server that wants none. At
     * a terminal the list comes first, so that a server without public
     * key authentication is said to be one before a passphrase is asked
     * for. */
    if (!c->interactive && (r = ssh_auth_keys(c, cfg, user, &a)) != 0)
        return r == 1 ? 0 : r;
    do
        methods = libssh2_userauth_list(c->s, user, (unsigned)strlen(user));
    while (methods == NULL && !libssh2_userauth_authenticated(c->s) &&
        ssh_again(c, libssh2_session_last_errno(c->s)));
    if (methods == NULL && libssh2_userauth_authenticated(c->s))
        return 0;
    if (methods == NULL && (r = ssh_failed(c,
        libssh2_session_last_errno(c->s), 0)) != 0)
        return r;
    if (methods == NULL || strstr(methods, "publickey") == NULL) {
        snprintf(err, errlen, "%s: the server offers no public key "
            "authentication for %s (offers: %s)", c->display, user,
            methods ? methods : "nothing");
        return FERRY_ERR_AUTH;
    }
    if (c->interactive && (r = ssh_auth_keys(c, cfg, user, &a)) != 0)
        return r == 1 ? 0 : r;
    c->rsa_skipped = a.rsa_skipped;
    snprintf(err, errlen, "%s: authentication failed for %s (tried: %s)%s",
        c->display, user, a.tried[0] ? a.tried : "no usable key",
        a.rsa_skipped ? "; RSA keys were skipped: this SSH library signs "
        "them with SHA-1, which OpenSSH 8.8 and later refuse. Use an "
        "ed25519 key (ssh-keygen -t ed25519), or --ssh-cmd ssh" : "");
    return FERRY_ERR_AUTH;
}
