/*
 * digest.h: the client's uses of OpenSSL's libcrypto: SHA-256 of files
 * (to name and check an uploaded agent), HMAC-SHA1 (hashed known_hosts
 * names), base64 and randomness. The agent does not link OpenSSL.
 */
#ifndef FERRY_CLIENT_DIGEST_H
#define FERRY_CLIENT_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"

/* SHA-256 fed in pieces (volumes as they are written); NULL on
 * allocation failure. digest_sha256_final writes lowercase hex into
 * out[65] and frees d. */
struct digest_sha256;

struct digest_sha256 *digest_sha256_new(void);
int digest_sha256_update(struct digest_sha256 *d, const void *p,
    size_t n) FERRY_WUR;
int digest_sha256_final(struct digest_sha256 *d, char out[65]) FERRY_WUR;
void digest_sha256_free(struct digest_sha256 *d);
/* d again, for the SHA-256 of a then b (either may be empty) in out: the
 * many small hashes of a merkle tree (torrent.c) without an allocation
 * each. */
int digest_sha256_two(struct digest_sha256 *d, const void *a, size_t an,
    const void *b, size_t bn, uint8_t out[32]) FERRY_WUR;

/* Lowercase hex SHA-256 of the file at path into out[65]. */
int digest_sha256_file(const char *path, char out[65]) FERRY_WUR;

/* HMAC-SHA1 of msg with key into out[20]. */
int digest_hmac_sha1(const void *key, size_t keylen, const void *msg,
    size_t msglen, uint8_t out[20]) FERRY_WUR;

/* Base64 of n bytes into out (at least 4 * ((n + 2) / 3) + 1 bytes);
 * with nopad the trailing '=' are left out, as in SHA256 fingerprints. */
void digest_base64(const uint8_t *p, size_t n, int nopad, char *out);

/* Decodes base64 (no whitespace). Returns the length, or -1 if invalid
 * or longer than cap. */
long digest_unbase64(const char *s, size_t len, uint8_t *out, size_t cap);

int digest_random(void *p, size_t n) FERRY_WUR;

/* Wipes secrets (passphrases) so the compiler cannot skip it. */
void digest_cleanse(void *p, size_t n);

#endif
