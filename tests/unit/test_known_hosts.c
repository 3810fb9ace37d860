/*
 * known_hosts lookups (ssh_known_lookup) against the seed files of the
 * known_hosts fuzz target, whose fixed keys fuzz_client.c looks up: the
 * results the fuzzer's invariants take for granted, checked once by
 * hand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../client/ssh_int.h"
#include "../fuzz/fuzz_common.h"
#include "check.h"

/* The result of looking up key of type for host:port in the corpus file
 * seed, and the line named. */
static int
lookup(LIBSSH2_SESSION *s, const char *seed, const char *host,
    unsigned port, const uint8_t *key, size_t keylen, int type,
    unsigned *lineno)
{
    char path[CHECK_PATH_MAX];
    const char *dir = getenv("FERRY_FUZZ_CORPUS"), *file;
    struct sshcfg cfg;
    int r;

    snprintf(path, sizeof(path), "%s/known_hosts/%s",
        dir != NULL ? dir : "tests/fuzz/corpus", seed);
    check_note("%s, %s:%u", path, host, port);
    memset(&cfg, 0, sizeof(cfg));
    cfg.known_hosts[0] = path;
    cfg.nknown = 1;
    r = ssh_known_lookup(s, &cfg, host, port, (const char *)key, keylen,
        type, &file, lineno);
    CHECK_EQ_STR(file, path);
    return r;
}

TEST(client_known_lookup)
{
    /* fuzz_key_ed25519 of fuzz_client.c, and others. */
    uint8_t ed[51] = { 0, 0, 0, 11, 's', 's', 'h', '-', 'e', 'd', '2', '5',
        '5', '1', '9', 0, 0, 0, 32 }, other[51], next[51];
    LIBSSH2_SESSION *s = libssh2_session_init();
    const int ed_t = LIBSSH2_HOSTKEY_TYPE_ED25519;
    unsigned line, i;

    CHECK(s != NULL);
    for (i = 0; i < 32; i++)
        ed[19 + i] = (uint8_t)(i + 1);
    memcpy(other, ed, sizeof(ed));
    other[50] ^= 1;
    /* The key of the seeds' second lines: each byte one more. */
    memcpy(next, ed, sizeof(ed));
    for (i = 0; i < 32; i++)
        next[19 + i]++;
    CHECK_EQ_INT(lookup(s, "seed-plain-match", "fuzz.example", 22, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MATCH);
    CHECK_EQ_INT(line, 0);
    CHECK_EQ_INT(lookup(s, "seed-plain-match", "fuzz.example", 22, other,
        sizeof(other), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MISMATCH);
    CHECK_EQ_INT(line, 1);
    CHECK_EQ_INT(lookup(s, "seed-plain-match", "elsewhere", 22, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_NOTFOUND);
    /* Comments and blank lines count as lines, as ssh counts them. */
    CHECK_EQ_INT(lookup(s, "seed-plain-changed", "fuzz.example", 22, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MISMATCH);
    CHECK_EQ_INT(line, 4);
    /* [host]:port names a port other than 22 only. */
    CHECK_EQ_INT(lookup(s, "seed-port", "fuzz.example", 2222, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MATCH);
    CHECK_EQ_INT(lookup(s, "seed-port", "fuzz.example", 22, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MISMATCH);
    CHECK_EQ_INT(line, 2);
    /* Hashed names (HashKnownHosts), for both forms. */
    CHECK_EQ_INT(lookup(s, "seed-hashed", "fuzz.example", 22, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MATCH);
    CHECK_EQ_INT(lookup(s, "seed-hashed", "fuzz.example", 2222, next,
        sizeof(next), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MATCH);
    /* Unlike ssh, libssh2 also takes the key known for the bare name as
     * the key of every port of that host: the line for port 22 matches
     * a lookup for port 2222. Stricter than nothing, looser than ssh. */
    CHECK_EQ_INT(lookup(s, "seed-hashed", "fuzz.example", 2222, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MATCH);
    CHECK_EQ_INT(lookup(s, "seed-hashed", "fuzz.example", 2222, other,
        sizeof(other), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MISMATCH);
    CHECK(line == 1 || line == 2);
    /* Lines libssh2 cannot read (markers, a key type it lacks, broken
     * ones) are passed over, not the end of the file: the last line of
     * each still counts. */
    CHECK_EQ_INT(lookup(s, "seed-markers", "fuzz.example", 22, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MATCH);
    /* libssh2 does not decode the base64 of a key, it compares the
     * text: "!!!notbase64" on line 3 is another key. */
    CHECK_EQ_INT(lookup(s, "seed-broken", "fuzz.example", 22, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MISMATCH);
    CHECK_EQ_INT(line, 3);
    /* Hashed names after blanks whose hash is not 20 bytes: passed over
     * (libssh2 1.10 would leak an HMAC context on each lookup: make asan
     * fails on it). */
    CHECK_EQ_INT(lookup(s, "regress-blank-before-hash", "fuzz.example", 22,
        ed, sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_NOTFOUND);
    /* A line libssh2 reads in part (it keeps fuzz.example, then fails
     * on the name before it) still holds the key it kept, and is the
     * line named. */
    CHECK_EQ_INT(lookup(s, "regress-half-read-line", "fuzz.example", 22, ed,
        sizeof(ed), ed_t, &line), LIBSSH2_KNOWNHOST_CHECK_MISMATCH);
    CHECK_EQ_INT(line, 3);
    libssh2_session_free(s);
}
