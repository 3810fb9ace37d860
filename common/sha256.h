/*
 * sha256.h: SHA-256 (FIPS 180-4) in portable C, for the agent.
 *
 * The agent does not link OpenSSL (it is static and small: see
 * docs/DESIGN.md, Layers), yet it must check the SHA-256 of each volume a
 * push with --keep-volumes stores, since that is what SHA256SUMS will
 * say of it. The client keeps OpenSSL's (client/digest.h), which uses the
 * CPU's SHA instructions; this one runs at a few hundred MB/s, faster
 * than the links volumes cross.
 *
 *     struct sha256 s;
 *     sha256_init(&s);
 *     sha256_update(&s, p, n);   // as often as needed
 *     sha256_final(&s, digest);  // then s may be init'ed again
 */
#ifndef FERRY_COMMON_SHA256_H
#define FERRY_COMMON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

struct sha256 {
    uint32_t h[8];       /* private */
    uint64_t bytes;      /* private: bytes hashed so far */
    uint8_t block[64];   /* private: a partial block */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *p, size_t n);
void sha256_final(struct sha256 *s, uint8_t out[SHA256_LEN]);
/* Writes 64 lowercase hex digits and a NUL into out[65]. */
void sha256_hex(const uint8_t d[SHA256_LEN], char out[2 * SHA256_LEN + 1]);

#endif
