/* swarm_ca.c: the per-transfer CA, in memory (swarm_ca.h). */
#include "swarm_ca.h"

#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "../common/alloc.h"

/* A PEM this module writes is a few hundred bytes; anything longer
 * means something went wrong, and the torrent takes no more anyway
 * (TORRENT_MAX_CERT). */
#define PEM_MAX 16384

struct swarm_ca {
    EVP_PKEY *key;
    X509 *cert;
    char *pem;
    size_t pem_len;
    /* Every certificate of the transfer has the CA's validity, so that
     * none outlives the CA that vouches for it. */
    time_t not_before, not_after;
};

/* Letters, digits and "-._*": a DNS name or "*", nothing that an X.509
 * string type or a TLS name check would read otherwise. */
static int
name_ok(const char *name)
{
    size_t i, n;

    if (name == NULL || (n = strnlen(name, SWARM_CA_MAX_NAME + 1)) == 0 ||
        n > SWARM_CA_MAX_NAME)
        return 0;
    for (i = 0; i < n; i++) {
        char c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
            c == '*'))
            return 0;
    }
    return 1;
}

/* libcrypto failed: its error queue is dropped, so that it does not
 * surface in an unrelated later call (libssh2 shares it). */
static int
crypto_fail(void)
{
    ERR_clear_error();
    return FERRY_ERR_UNSUPPORTED;
}

static EVP_PKEY *
new_key(void)
{
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

/* A random positive serial of 127 bits, its top bit set so that it is
 * never 0 and always 16 bytes: two certificates of one CA never share
 * one, and a serial says nothing about how many were issued. */
static int
set_serial(X509 *x)
{
    BIGNUM *bn = BN_new();
    int ok;

    ok = bn != NULL && BN_rand(bn, 127, BN_RAND_TOP_ONE,
        BN_RAND_BOTTOM_ANY) == 1 &&
        BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok;
}

/* An extension from OpenSSL's configuration syntax: only fixed strings
 * go through it, never a name from the caller. */
static int
add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509_EXTENSION *e;
    int ok;

    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    if ((e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
        return 0;
    ok = X509_add_ext(x, e, -1) == 1;
    X509_EXTENSION_free(e);
    return ok;
}

/* subjectAltName DNS:name, built as a structure, not parsed from text. */
static int
add_san(X509 *x, const char *name)
{
    GENERAL_NAMES *gens = GENERAL_NAMES_new();
    GENERAL_NAME *gn = GENERAL_NAME_new();
    ASN1_IA5STRING *ia5 = ASN1_IA5STRING_new();
    int ok = 0;

    if (gens == NULL || gn == NULL || ia5 == NULL ||
        ASN1_STRING_set(ia5, name, (int)strlen(name)) != 1)
        goto out;
    GENERAL_NAME_set0_value(gn, GEN_DNS, ia5);
    ia5 = NULL;
    if (sk_GENERAL_NAME_push(gens, gn) == 0)
        goto out;
    gn = NULL;
    ok = X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0,
        X509V3_ADD_APPEND) == 1;
out:
    ASN1_IA5STRING_free(ia5);
    GENERAL_NAME_free(gn);
    GENERAL_NAMES_free(gens);
    return ok;
}

/* The fields every certificate of the transfer has: version 3, a random
 * serial, subject CN=cn, the CA's validity, and key's public half. */
static int
fill(X509 *x, const struct swarm_ca *ca, const char *cn, EVP_PKEY *key)
{
    X509_NAME *subject = X509_get_subject_name(x);

    return X509_set_version(x, X509_VERSION_3) == 1 && set_serial(x) &&
        X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_ASC,
        (const unsigned char *)cn, -1, -1, 0) == 1 &&
        ASN1_TIME_set(X509_getm_notBefore(x), ca->not_before) != NULL &&
        ASN1_TIME_set(X509_getm_notAfter(x), ca->not_after) != NULL &&
        X509_set_pubkey(x, key) == 1;
}

/* The bytes written to b, as a NUL-terminated string of our own (ours
 * to allocate, so that an injected failure reaches this path too). A
 * key's copy is wiped by whoever frees it (swarm_ca_free_key). */
static int
take_bio(BIO *b, char **out, size_t *len)
{
    char *p, *s;
    long n = BIO_get_mem_data(b, &p);

    if (n <= 0 || n > PEM_MAX)
        return FERRY_ERR_UNSUPPORTED;
    if ((s = xmalloc((size_t)n + 1)) == NULL)
        return FERRY_ERR_NOMEM;
    memcpy(s, p, (size_t)n);
    s[n] = '\0';
    *out = s;
    *len = (size_t)n;
    return 0;
}

static int
cert_pem(X509 *x, char **out, size_t *len)
{
    BIO *b = BIO_new(BIO_s_mem());
    int r;

    if (b == NULL || PEM_write_bio_X509(b, x) != 1)
        r = crypto_fail();
    else
        r = take_bio(b, out, len);
    BIO_free(b);
    return r;
}

/* The key as unencrypted PKCS#8 PEM, the form libtorrent's
 * set_ssl_certificate_buffer takes. The BIO is a secure-memory one:
 * libcrypto wipes its buffer as it grows and when it is freed. */
static int
key_pem(EVP_PKEY *key, char **out, size_t *len)
{
    BIO *b = BIO_new(BIO_s_secmem());
    int r;

    if (b == NULL ||
        PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) != 1)
        r = crypto_fail();
    else
        r = take_bio(b, out, len);
    BIO_free(b);
    return r;
}

int
swarm_ca_new(unsigned valid_hours, struct swarm_ca **out)
{
    struct swarm_ca *ca;
    time_t now = time(NULL);
    int r;

    *out = NULL;
    if (valid_hours == 0 || valid_hours > SWARM_CA_MAX_HOURS)
        return FERRY_ERR_USAGE;
    if ((ca = xcalloc(1, sizeof(*ca))) == NULL)
        return FERRY_ERR_NOMEM;
    ca->not_before = now - SWARM_CA_BACKDATE_SECONDS;
    ca->not_after = now + (time_t)valid_hours * 3600;
    /* pathlen:0: the CA signs boxes' certificates, never another CA's.
     * The subject key identifier lets a verifier match the boxes'
     * authority key identifier to it. */
    if ((ca->key = new_key()) == NULL || (ca->cert = X509_new()) == NULL ||
        !fill(ca->cert, ca, "ferry transfer CA", ca->key) ||
        X509_set_issuer_name(ca->cert,
        X509_get_subject_name(ca->cert)) != 1 ||
        !add_ext(ca->cert, ca->cert, NID_basic_constraints,
        "critical,CA:TRUE,pathlen:0") ||
        !add_ext(ca->cert, ca->cert, NID_key_usage,
        "critical,keyCertSign") ||
        !add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") ||
        X509_sign(ca->cert, ca->key, EVP_sha256()) <= 0) {
        r = crypto_fail();
        goto fail;
    }
    if ((r = cert_pem(ca->cert, &ca->pem, &ca->pem_len)) != 0)
        goto fail;
    *out = ca;
    return 0;
fail:
    swarm_ca_free(ca);
    return r;
}

const char *
swarm_ca_cert_pem(const struct swarm_ca *ca, size_t *len)
{
    *len = ca->pem_len;
    return ca->pem;
}

int
swarm_ca_issue(struct swarm_ca *ca, const char *name, char **cert_out,
    size_t *cert_len, char **key_out, size_t *key_len)
{
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    char *c = NULL, *k = NULL;
    size_t clen = 0, klen = 0;
    int r;

    *cert_out = *key_out = NULL;
    *cert_len = *key_len = 0;
    if (!name_ok(name))
        return FERRY_ERR_USAGE;
    /* A box both dials and accepts: serverAuth and clientAuth, so that
     * OpenSSL's purpose check passes either way. digitalSignature is
     * what an ECDSA key does in TLS 1.2 and 1.3. */
    if ((key = new_key()) == NULL || (x = X509_new()) == NULL ||
        !fill(x, ca, name, key) ||
        X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1 ||
        !add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") ||
        !add_ext(x, ca->cert, NID_key_usage,
        "critical,digitalSignature") ||
        !add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth,clientAuth") ||
        !add_ext(x, ca->cert, NID_authority_key_identifier,
        "keyid:always") ||
        !add_san(x, name) || X509_sign(x, ca->key, EVP_sha256()) <= 0) {
        r = crypto_fail();
        goto out;
    }
    if ((r = cert_pem(x, &c, &clen)) != 0 ||
        (r = key_pem(key, &k, &klen)) != 0)
        goto out;
    *cert_out = c;
    *cert_len = clen;
    *key_out = k;
    *key_len = klen;
    c = k = NULL;
out:
    xfree(c);
    swarm_ca_free_key(k, klen);
    X509_free(x);
    /* Frees the box's key; libcrypto clears its private scalar. */
    EVP_PKEY_free(key);
    return r;
}

void
swarm_ca_free_key(char *key_pem, size_t key_len)
{
    if (key_pem == NULL)
        return;
    OPENSSL_cleanse(key_pem, key_len);
    xfree(key_pem);
}

void
swarm_ca_free(struct swarm_ca *ca)
{
    if (ca == NULL)
        return;
    /* EVP_PKEY_free clears the private scalar before it frees it. */
    EVP_PKEY_free(ca->key);
    X509_free(ca->cert);
    xfree(ca->pem);
    xfree(ca);
}
