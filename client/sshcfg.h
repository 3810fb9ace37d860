/*
 * sshcfg.h: the SSH settings for a host, as OpenSSH itself resolves them.
 *
 * We ask the user's own ssh for them (`ssh -G [-F file] [-p port] [-l user]
 * [-i key]... [-o K=V]... host`), which applies ~/.ssh/config exactly as ssh
 * would: Host and Match blocks, Include, first-value-wins, tokens,
 * canonicalisation. Limits: it needs the ssh program (without it we fall
 * back to plain defaults), it runs any "Match exec" commands, and it lists
 * defaults as if set (e.g. the stock identity files), which is harmless
 * because only files that exist are tried.
 */
#ifndef FERRY_CLIENT_SSHCFG_H
#define FERRY_CLIENT_SSHCFG_H

#include <stddef.h>

#include "../common/err.h"

enum sshcfg_strict {
    STRICT_YES = 1,     /* refuse unknown hosts */
    STRICT_ACCEPT_NEW,  /* add unknown hosts, refuse changed keys */
    STRICT_NO,          /* accept unknown hosts (changed keys: refused) */
    STRICT_ASK          /* ask on a terminal, else as yes */
};

#define SSHCFG_MAX_FILES 32

struct sshcfg {
    char *hostname;
    unsigned port;
    char *user;
    char *identity_files[SSHCFG_MAX_FILES];  /* ~ expanded */
    size_t nidentity;
    int identities_only;
    char *known_hosts[SSHCFG_MAX_FILES];     /* ~ expanded */
    size_t nknown;
    enum sshcfg_strict strict;
    unsigned connect_timeout;  /* seconds; 0: none given */
    unsigned alive_interval;   /* seconds; 0: none given */
    unsigned alive_count;
    char *proxy;               /* ProxyJump or ProxyCommand, if any */
    char *host_key_alias;
    char *ciphers;             /* the cipher list ssh would offer */
    int batch_mode;
};

/* The command-line settings that override the config, as for ssh. */
struct sshcfg_overrides {
    const char *config_file;   /* -F */
    const char *port;          /* -p */
    const char *user;          /* -l, or user@ */
    const char *const *identities;  /* -i */
    int nidentities;
    const char *const *options;     /* -o Key=Value */
    int noptions;
};

/*
 * Appends o as the ssh program's options (-F, -p, -l, -i, -o) at
 * argv[*argc], advancing *argc, within max entries in all. The one place
 * that spells them, for `ssh -G` and for starting the agent through ssh.
 * Returns 0 or FERRY_ERR_TOO_LARGE.
 */
int sshcfg_overrides_argv(const struct sshcfg_overrides *o, char **argv,
    size_t *argc, size_t max) FERRY_WUR;

/*
 * Parses `ssh -G` output (lines "key value") into c. Unknown keys are
 * ignored; values are bounded. Returns 0 or FERRY_ERR_FORMAT/NOMEM.
 * Exported for the tests; otherwise used only in its file.
 */
int sshcfg_parse(const char *text, size_t len, struct sshcfg *c) FERRY_WUR;

/*
 * Resolves host with `ssh -G`. On failure of ssh itself (bad config,
 * unknown option) returns FERRY_ERR_USAGE with its first error line in
 * err. Without an ssh program, fills in defaults.
 */
int sshcfg_resolve(const char *host, const struct sshcfg_overrides *o,
    struct sshcfg *c, char *err, size_t errlen) FERRY_WUR;

/*
 * The "Ciphers=..." option that has the ssh program offer AES-GCM first,
 * into out, when c's list is OpenSSH's own order (chacha20-poly1305
 * first) and holds an AES-GCM cipher; "" otherwise. Only the order
 * changes: the set stays what the config allows. Where the CPU has AES
 * and carry-less multiply instructions (aes_fast), AES-GCM costs a
 * fraction of chacha20-poly1305 on both ends (docs/DESIGN.md, "Over
 * what"); a list the user ordered is left as it is.
 */
void sshcfg_prefer_gcm(const struct sshcfg *c, int aes_fast, char *out,
    size_t outlen);

/* 1 when this CPU runs AES-GCM in hardware (AES-NI and PCLMULQDQ, or
 * ARMv8's AES and PMULL). */
int sshcfg_cpu_aes_fast(void);

void sshcfg_cleanup(struct sshcfg *c);

#endif
