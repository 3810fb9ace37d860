/*
 * fuzz_client.c: the checks behind the client's fuzz targets, the ssh
 * config output parser (sshcfg_parse, fed what `ssh -G` printed) and the
 * known_hosts lookup (ssh_known_lookup, fed a known_hosts file). Both
 * read files the user controls rather than the peer, but a config may
 * come from an Include of someone else's, and known_hosts lines are
 * parsed by libssh2, whose readline we call one line at a time.
 *
 * Linked into fuzz_sshcfg and fuzz_known_hosts (with the client's
 * objects and libssh2) and into the unit tests, which replay
 * tests/fuzz/corpus/{sshcfg,known_hosts}/.
 */
#include "fuzz_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../client/ssh_int.h"
#include "../../client/sshcfg.h"
#include "../../common/buf.h"

#define FUZZ_HOME "/home/fuzz"

static void
fuzz_client_abort(const char *target, const char *why)
{
    fprintf(stderr, "fuzz_%s: %s\n", target, why);
    abort();
}

static int __attribute__((format(printf, 2, 3)))
fuzz_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    uint8_t *dst;
    int n, r;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return FERRY_ERR_FORMAT;
    if ((r = buf_reserve(b, (size_t)n + 1, &dst)) != 0)
        return r;
    va_start(ap, fmt);
    vsnprintf((char *)dst, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf_unreserve(b, 1);  /* the NUL */
    return 0;
}

/* One "key value" line that sshcfg_parse reads back as value: it drops
 * one '\r' at the end of a line, so a value ending in one gets "\r\n"
 * (and the line is no longer than the original's). */
static int
fuzz_line(struct buf *b, const char *key, const char *val)
{
    size_t n = strlen(val);

    return fuzz_printf(b, "%s %s%s", key, val,
        n > 0 && val[n - 1] == '\r' ? "\r\n" : "\n");
}

/* Writes c back as `ssh -G` lines that sshcfg_parse reads as c again. */
static int
fuzz_sshcfg_print(const struct sshcfg *c, struct buf *b)
{
    static const char *const strict[] = { "", "yes", "accept-new", "no",
        "ask" };
    size_t i;
    int r = 0;

    r = fuzz_line(b, "hostname", c->hostname);
    if (r == 0)
        r = fuzz_printf(b, "port %u\n", c->port);
    if (r == 0 && c->user != NULL)
        r = fuzz_line(b, "user", c->user);
    for (i = 0; r == 0 && i < c->nidentity; i++)
        r = fuzz_line(b, "identityfile", c->identity_files[i]);
    for (i = 0; r == 0 && i < c->nknown; i++)
        r = fuzz_line(b, "userknownhostsfile", c->known_hosts[i]);
    if (r == 0 && c->identities_only)
        r = fuzz_printf(b, "identitiesonly yes\n");
    if (r == 0 && c->batch_mode)
        r = fuzz_printf(b, "batchmode yes\n");
    if (r == 0)
        r = fuzz_printf(b, "stricthostkeychecking %s\n"
            "connecttimeout %u\nserveraliveinterval %u\n"
            "serveralivecountmax %u\n", strict[c->strict],
            c->connect_timeout, c->alive_interval, c->alive_count);
    /* proxyjump: the shorter of the two keys, so the line fits
     * wherever the original did. */
    if (r == 0 && c->proxy != NULL)
        r = fuzz_line(b, "proxyjump", c->proxy);
    if (r == 0 && c->host_key_alias != NULL)
        r = fuzz_line(b, "hostkeyalias", c->host_key_alias);
    return r;
}

static int
fuzz_str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) ||
        (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
fuzz_unexpanded(const char *path)
{
    return path[0] == '~' && (path[1] == '\0' || path[1] == '/');
}

/* What sshcfg.h promises of a parse; NULL if it holds. */
static const char *
fuzz_sshcfg_check(const struct sshcfg *c)
{
    size_t i;

    if (c->hostname == NULL || c->hostname[0] == '\0')
        return "parsed without a hostname";
    if (c->port == 0 || c->port > 65535)
        return "port out of range";
    if (c->nidentity > SSHCFG_MAX_FILES || c->nknown > SSHCFG_MAX_FILES)
        return "more files than SSHCFG_MAX_FILES";
    if (c->strict < STRICT_YES || c->strict > STRICT_ASK)
        return "StrictHostKeyChecking out of range";
    if (c->connect_timeout > 86400 || c->alive_interval > 86400 ||
        c->alive_count > 1000)
        return "a number over its bound";
    /* "~" and "~/x" are ours to expand; "~user" ssh -G has expanded
     * already, so one left is a name. */
    for (i = 0; i < c->nidentity; i++)
        if (c->identity_files[i] == NULL ||
            fuzz_unexpanded(c->identity_files[i]))
            return "identity file missing or not expanded";
    for (i = 0; i < c->nknown; i++)
        if (c->known_hosts[i] == NULL || c->known_hosts[i][0] == '\0' ||
            fuzz_unexpanded(c->known_hosts[i]) ||
            strchr(c->known_hosts[i], ' '))
            return "known_hosts file missing, empty, unexpanded or split "
                "wrong";
    return NULL;
}

/* The fields of a and b are the same. */
static int
fuzz_sshcfg_same(const struct sshcfg *a, const struct sshcfg *b)
{
    size_t i;

    if (!fuzz_str_eq(a->hostname, b->hostname) || a->port != b->port ||
        !fuzz_str_eq(a->user, b->user) || a->nidentity != b->nidentity ||
        a->nknown != b->nknown || a->identities_only != b->identities_only ||
        a->strict != b->strict || a->connect_timeout != b->connect_timeout ||
        a->alive_interval != b->alive_interval ||
        a->alive_count != b->alive_count || !fuzz_str_eq(a->proxy, b->proxy) ||
        !fuzz_str_eq(a->host_key_alias, b->host_key_alias) ||
        a->batch_mode != b->batch_mode)
        return 0;
    for (i = 0; i < a->nidentity; i++)
        if (strcmp(a->identity_files[i], b->identity_files[i]) != 0)
            return 0;
    for (i = 0; i < a->nknown; i++)
        if (strcmp(a->known_hosts[i], b->known_hosts[i]) != 0)
            return 0;
    return 1;
}

const char *
fuzz_sshcfg(const uint8_t *p, size_t n, int *rc)
{
    struct sshcfg c, again;
    const char *why = NULL;
    struct buf b;
    int r;

    /* "~" expands to $HOME: a fixed one, so that a run is repeatable. */
    if (!fuzz_str_eq(getenv("HOME"), FUZZ_HOME))
        setenv("HOME", FUZZ_HOME, 1);
    memset(&c, 0xa5, sizeof(c));
    *rc = sshcfg_parse((const char *)p, n, &c);
    if (*rc != 0) {
        static const struct sshcfg zero;

        if (*rc != FERRY_ERR_FORMAT && *rc != FERRY_ERR_NOMEM)
            return "an error sshcfg.h does not name";
        if (memcmp(&c, &zero, sizeof(c)) != 0)
            return "fields left set after a failed parse";
        return NULL;
    }
    if ((why = fuzz_sshcfg_check(&c)) != NULL)
        goto out;
    /* Printed again and parsed, the settings come back the same: no
     * field took more or less of its line than it should have. */
    buf_init(&b, 1u << 20);
    if ((r = fuzz_sshcfg_print(&c, &b)) == 0 &&
        (r = sshcfg_parse((const char *)buf_ptr(&b), buf_used(&b),
        &again)) == 0) {
        if (!fuzz_sshcfg_same(&c, &again))
            why = "printed and parsed again, the settings differ";
        sshcfg_cleanup(&again);
    } else if (r != FERRY_ERR_NOMEM) {
        why = "printed settings do not parse again";
    }
    buf_cleanup(&b);
out:
    sshcfg_cleanup(&c);
    return why;
}

int
fuzz_sshcfg_one(const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_sshcfg(p, n, &rc)) != NULL)
        fuzz_client_abort("sshcfg", why);
    return 0;
}

/* The host keys looked up: raw blobs as the server sends them. The
 * checks compare their base64 forms only, so the key bytes need not be
 * a real point. The seeds in corpus/known_hosts/ name these. */
static const uint8_t fuzz_key_ed25519[] = {
    0, 0, 0, 11, 's', 's', 'h', '-', 'e', 'd', '2', '5', '5', '1', '9',
    0, 0, 0, 32,
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
};

static const uint8_t fuzz_key_ecdsa[] = {
    0, 0, 0, 19, 'e', 'c', 'd', 's', 'a', '-', 's', 'h', 'a', '2', '-',
    'n', 'i', 's', 't', 'p', '2', '5', '6',
    0, 0, 0, 8, 'n', 'i', 's', 't', 'p', '2', '5', '6',
    0, 0, 0, 5, 4, 0xaa, 0xbb, 0xcc, 0xdd,
};

struct fuzz_lookup {
    const char *host;
    unsigned port;
    const uint8_t *key;
    size_t keylen;
    int type;
};

static const struct fuzz_lookup fuzz_lookups[] = {
    { "fuzz.example", 22, fuzz_key_ed25519, sizeof(fuzz_key_ed25519),
      LIBSSH2_HOSTKEY_TYPE_ED25519 },
    { "fuzz.example", 2222, fuzz_key_ed25519, sizeof(fuzz_key_ed25519),
      LIBSSH2_HOSTKEY_TYPE_ED25519 },
    { "10.1.2.3", 22, fuzz_key_ecdsa, sizeof(fuzz_key_ecdsa),
      LIBSSH2_HOSTKEY_TYPE_ECDSA_256 },
};

/* A session for libssh2's knownhost API and a memory file that stands
 * for known_hosts, made once: the lookup reads a file by name. */
static LIBSSH2_SESSION *fuzz_session;
static int fuzz_kh_fd = -1;
static char fuzz_kh_path[64];

const char *
fuzz_known_hosts(const uint8_t *p, size_t n, int *rc)
{
    struct sshcfg cfg;
    const char *file;
    unsigned lineno, lines = 1;
    size_t i;
    int r;

    *rc = 0;
    if (fuzz_session == NULL) {
        if ((fuzz_session = libssh2_session_init()) == NULL ||
            (fuzz_kh_fd = memfd_create("known_hosts", MFD_CLOEXEC)) < 0)
            return "no session or memfd to fuzz with";
        snprintf(fuzz_kh_path, sizeof(fuzz_kh_path), "/proc/self/fd/%d",
            fuzz_kh_fd);
    }
    if (ftruncate(fuzz_kh_fd, 0) != 0 ||
        (n > 0 && pwrite(fuzz_kh_fd, p, n, 0) != (ssize_t)n))
        return "cannot write the memory file";
    for (i = 0; i < n; i++)
        lines += p[i] == '\n';
    memset(&cfg, 0, sizeof(cfg));
    cfg.known_hosts[0] = fuzz_kh_path;
    cfg.nknown = 1;
    for (i = 0; i < sizeof(fuzz_lookups) / sizeof(fuzz_lookups[0]); i++) {
        const struct fuzz_lookup *l = &fuzz_lookups[i];

        r = ssh_known_lookup(fuzz_session, &cfg, l->host, l->port,
            (const char *)l->key, l->keylen, l->type, &file, &lineno);
        if (i == 0)
            *rc = r;
        if (r == FERRY_ERR_NOMEM)
            continue;
        if (r < LIBSSH2_KNOWNHOST_CHECK_MATCH ||
            r > LIBSSH2_KNOWNHOST_CHECK_FAILURE)
            return "a result that is no LIBSSH2_KNOWNHOST_CHECK_*";
        if (strcmp(file, fuzz_kh_path) != 0)
            return "the offending line is named in another file";
        /* A changed key must be located, or the user is told line 0. */
        if (r == LIBSSH2_KNOWNHOST_CHECK_MISMATCH &&
            (lineno == 0 || lineno > lines))
            return "a changed key without the line that holds it";
        if (r != LIBSSH2_KNOWNHOST_CHECK_MISMATCH && lineno != 0)
            return "a line named without a changed key";
    }
    return NULL;
}

int
fuzz_known_hosts_one(const uint8_t *p, size_t n)
{
    const char *why;
    int rc;

    if ((why = fuzz_known_hosts(p, n, &rc)) != NULL)
        fuzz_client_abort("known_hosts", why);
    return 0;
}

const struct fuzz_target fuzz_client_targets[] = {
    { "sshcfg", fuzz_sshcfg_one },
    { "known_hosts", fuzz_known_hosts_one },
    { "conductor", fuzz_conductor_one },
    { NULL, NULL },
};
