/*
 * swarm_ca.h: the per-transfer CA of a many-box push (docs/SWARM.md,
 * "Trust").
 *
 * The client is the root of trust of a swarm: for each transfer it makes
 * a CA whose certificate goes into the torrent (torrent_set_cert), so
 * that the info-hash commits to it, and signs one certificate for each
 * box. libtorrent lets a peer in only over TLS, with a certificate of
 * that CA that names the torrent or "*". The CA's key lives in this
 * process's memory only: it is never written anywhere, not even as PEM,
 * and it is wiped when the CA is freed, so that a CA cannot outlive its
 * transfer.
 *
 *     struct swarm_ca *ca;
 *     if ((r = swarm_ca_new(SWARM_CA_HOURS, &ca)) != 0) goto out;
 *     pem = swarm_ca_cert_pem(ca, &pem_len);    // torrent_set_cert
 *     r = swarm_ca_issue(ca, "*", &cert, &cert_len, &key, &key_len);
 *     ...                                       // send them to the box
 *     free(cert);
 *     swarm_ca_free_key(key, key_len);
 *     swarm_ca_free(ca);
 *
 * Everything is P-256 (ECDSA with SHA-256): a small certificate (about
 * 600 bytes of PEM for the CA, inside every torrent) and a cheap TLS
 * handshake between boxes.
 */
#ifndef FERRY_CLIENT_SWARM_CA_H
#define FERRY_CLIENT_SWARM_CA_H

#include <stddef.h>

#include "../common/err.h"

/* A transfer's CA and its certificates are valid for at most this long:
 * a week covers the longest push, and a stolen box certificate is of no
 * use after it. */
#define SWARM_CA_MAX_HOURS 168u
/* How far back their validity starts, so that a box whose clock is
 * behind the client's still takes them (NTP keeps clouds' clocks within
 * seconds; this is a margin, not a bound on skew we expect). */
#define SWARM_CA_BACKDATE_SECONDS 300
/* A box's name (the certificate's CN and DNS name): 1 to 64 bytes (the
 * CN's upper bound in X.520) of letters, digits, '-', '.', '_' and '*'.
 * The caller gives "*" (docs/SWARM.md: libtorrent takes it for any
 * torrent, and the CA is the boundary). */
#define SWARM_CA_MAX_NAME 64u

struct swarm_ca;

/*
 * Makes a CA: a fresh P-256 key and a self-signed certificate, CN
 * "ferry transfer CA", random serial, basicConstraints critical CA:TRUE
 * with no path below it, keyUsage critical keyCertSign, valid from
 * SWARM_CA_BACKDATE_SECONDS ago for valid_hours (1..SWARM_CA_MAX_HOURS).
 * Returns 0 and *out, USAGE for valid_hours out of range, NOMEM, or
 * UNSUPPORTED when libcrypto fails. Free with swarm_ca_free.
 */
int swarm_ca_new(unsigned valid_hours, struct swarm_ca **out) FERRY_WUR;

/* The CA's certificate as PEM (NUL-terminated, the length in *len),
 * owned by ca: the torrent's ssl-cert. */
const char *swarm_ca_cert_pem(const struct swarm_ca *ca, size_t *len);

/*
 * A box's credentials: a fresh P-256 key and a certificate signed by the
 * CA, subject CN=name and subjectAltName DNS:name (name as above, else
 * USAGE), not a CA, keyUsage digitalSignature, extendedKeyUsage
 * serverAuth and clientAuth (a box both dials and accepts), a random
 * serial, and the CA's validity. Both are PEM in NUL-terminated strings
 * the caller owns: free the certificate with xfree(), and the key with
 * swarm_ca_free_key, which wipes it first. On failure nothing is
 * returned and nothing is left to free.
 */
int swarm_ca_issue(struct swarm_ca *ca, const char *name, char **cert_pem,
    size_t *cert_len, char **key_pem, size_t *key_len) FERRY_WUR;

/* Wipes and frees a key from swarm_ca_issue (NULL is fine). */
void swarm_ca_free_key(char *key_pem, size_t key_len);

/* Frees the CA; libcrypto wipes its private key (NULL is fine). */
void swarm_ca_free(struct swarm_ca *ca);

#endif
