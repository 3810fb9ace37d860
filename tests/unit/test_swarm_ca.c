/*
 * Tests for client/swarm_ca.c: what OpenSSL, which libtorrent verifies
 * peers with, makes of the CA and the boxes' certificates: the chain
 * verifies against the CA alone (for a TLS server and a TLS client, as a
 * box is both) and not against another CA, each key matches its
 * certificate, the names and the flags are right, every issue is fresh,
 * and the limits hold. tests/integration/swarm.sh runs boxes on them.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "../../common/alloc.h"
#include "../../client/swarm_ca.h"
#include "check.h"

/* One certificate from PEM, and nothing after it. */
static X509 *
parse_cert(const char *pem, size_t len)
{
    BIO *b;
    X509 *x;

    CHECK(pem != NULL && len > 0 && strlen(pem) == len);
    CHECK((b = BIO_new_mem_buf(pem, (int)len)) != NULL);
    CHECK((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL);
    CHECK(BIO_pending(b) == 0);
    BIO_free(b);
    return x;
}

static EVP_PKEY *
parse_key(const char *pem, size_t len)
{
    EVP_PKEY *k;
    BIO *b;

    CHECK(pem != NULL && len > 0 && strlen(pem) == len);
    CHECK(strncmp(pem, "-----BEGIN PRIVATE KEY-----\n", 28) == 0);
    CHECK((b = BIO_new_mem_buf(pem, (int)len)) != NULL);
    CHECK((k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) != NULL);
    BIO_free(b);
    CHECK(EVP_PKEY_is_a(k, "EC"));
    CHECK_EQ_INT(EVP_PKEY_get_bits(k), 256);
    return k;
}

static X509 *
ca_cert(const struct swarm_ca *ca)
{
    size_t len;
    const char *pem = swarm_ca_cert_pem(ca, &len);

    return parse_cert(pem, len);
}

/* X509_verify_cert of leaf with root as the store's only certificate,
 * for purpose (X509_PURPOSE_SSL_SERVER or _CLIENT); its error in *err. */
static int
verify(X509 *leaf, X509 *root, int purpose, int *err)
{
    X509_STORE *store;
    X509_STORE_CTX *ctx;
    int ok;

    CHECK((store = X509_STORE_new()) != NULL);
    CHECK(X509_STORE_add_cert(store, root) == 1);
    CHECK((ctx = X509_STORE_CTX_new()) != NULL);
    CHECK(X509_STORE_CTX_init(ctx, store, leaf, NULL) == 1);
    CHECK(X509_STORE_CTX_set_purpose(ctx, purpose) == 1);
    ok = X509_verify_cert(ctx);
    *err = X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    ERR_clear_error();
    return ok;
}

struct box {
    char *cert, *key;
    size_t cert_len, key_len;
    X509 *x;
    EVP_PKEY *k;
};

static void
issue(struct swarm_ca *ca, const char *name, struct box *b)
{
    CHECK_OK(swarm_ca_issue(ca, name, &b->cert, &b->cert_len, &b->key,
        &b->key_len));
    b->x = parse_cert(b->cert, b->cert_len);
    b->k = parse_key(b->key, b->key_len);
}

static void
box_free(struct box *b)
{
    xfree(b->cert);
    swarm_ca_free_key(b->key, b->key_len);
    X509_free(b->x);
    EVP_PKEY_free(b->k);
}

static void
check_cn(X509 *x, const char *want)
{
    char cn[SWARM_CA_MAX_NAME + 2];

    CHECK(X509_NAME_get_text_by_NID(X509_get_subject_name(x),
        NID_commonName, cn, sizeof(cn)) == (int)strlen(want));
    CHECK_EQ_STR(cn, want);
}

/* The extension nid is present and critical. */
static void
check_critical(X509 *x, int nid)
{
    int i = X509_get_ext_by_NID(x, nid, -1);

    CHECK(i >= 0);
    CHECK(X509_EXTENSION_get_critical(X509_get_ext(x, i)) == 1);
}

TEST(swarm_ca_chain)
{
    struct swarm_ca *ca, *other;
    struct box b, o;
    X509 *root, *oroot;
    int err;

    CHECK_OK(swarm_ca_new(4, &ca));
    CHECK_OK(swarm_ca_new(4, &other));
    root = ca_cert(ca);
    oroot = ca_cert(other);

    /* The CA: self-signed, a CA for one level of leaves, signing
     * certificates and nothing else. */
    check_cn(root, "ferry transfer CA");
    CHECK(X509_self_signed(root, 1) == 1);
    CHECK(X509_check_ca(root) == 1);
    CHECK((X509_get_extension_flags(root) & EXFLAG_CA) != 0);
    CHECK_EQ_INT(X509_get_pathlen(root), 0);
    CHECK_EQ_INT(X509_get_key_usage(root), KU_KEY_CERT_SIGN);
    check_critical(root, NID_basic_constraints);
    check_critical(root, NID_key_usage);
    CHECK_EQ_INT(X509_get_version(root), X509_VERSION_3);
    CHECK(EVP_PKEY_is_a(X509_get0_pubkey(root), "EC"));
    CHECK_EQ_INT(EVP_PKEY_get_bits(X509_get0_pubkey(root)), 256);

    /* A box: signed by the CA, its key its own, not a CA. */
    issue(ca, "*", &b);
    issue(other, "*", &o);
    CHECK(X509_check_ca(b.x) == 0);
    CHECK((X509_get_extension_flags(b.x) & EXFLAG_CA) == 0);
    check_critical(b.x, NID_basic_constraints);
    CHECK(X509_check_issued(root, b.x) == X509_V_OK);
    CHECK(X509_check_private_key(b.x, b.k) == 1);
    CHECK(X509_check_private_key(b.x, o.k) != 1);
    ERR_clear_error();
    CHECK(verify(b.x, root, X509_PURPOSE_SSL_SERVER, &err) == 1);
    CHECK_EQ_INT(err, X509_V_OK);
    CHECK(verify(b.x, root, X509_PURPOSE_SSL_CLIENT, &err) == 1);
    CHECK_EQ_INT(err, X509_V_OK);
    /* Another transfer's CA vouches for neither, either way round. */
    CHECK(verify(b.x, oroot, X509_PURPOSE_SSL_SERVER, &err) != 1);
    CHECK_EQ_INT(err, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
    CHECK(verify(o.x, root, X509_PURPOSE_SSL_CLIENT, &err) != 1);
    CHECK_EQ_INT(err, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
    CHECK(verify(o.x, oroot, X509_PURPOSE_SSL_CLIENT, &err) == 1);
    /* A box's certificate cannot stand in for the CA. */
    CHECK(verify(o.x, b.x, X509_PURPOSE_SSL_CLIENT, &err) != 1);

    box_free(&b);
    box_free(&o);
    X509_free(root);
    X509_free(oroot);
    swarm_ca_free(ca);
    swarm_ca_free(other);
}

/* CN=name and subjectAltName DNS:name, and that name alone. */
static void
check_names(X509 *x, const char *name)
{
    GENERAL_NAMES *gens;
    GENERAL_NAME *gn;
    const ASN1_IA5STRING *s;

    check_cn(x, name);
    CHECK((gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL,
        NULL)) != NULL);
    CHECK_EQ_INT(sk_GENERAL_NAME_num(gens), 1);
    gn = sk_GENERAL_NAME_value(gens, 0);
    CHECK_EQ_INT(gn->type, GEN_DNS);
    s = gn->d.dNSName;
    CHECK_EQ_INT(ASN1_STRING_length(s), (int)strlen(name));
    CHECK_EQ_MEM(ASN1_STRING_get0_data(s), name, strlen(name));
    GENERAL_NAMES_free(gens);
}

TEST(swarm_ca_names)
{
    static const char *const names[] = {
        "*", "box-1.example", "data", "A_b.9",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    struct swarm_ca *ca;
    struct box b;
    size_t i;

    CHECK_OK(swarm_ca_new(1, &ca));
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        check_note("%s", names[i]);
        issue(ca, names[i], &b);
        check_names(b.x, names[i]);
        CHECK((X509_get_extended_key_usage(b.x) & (XKU_SSL_SERVER |
            XKU_SSL_CLIENT)) == (XKU_SSL_SERVER | XKU_SSL_CLIENT));
        CHECK_EQ_INT(X509_get_key_usage(b.x), KU_DIGITAL_SIGNATURE);
        if (strcmp(names[i], "*") != 0)
            CHECK(X509_check_host(b.x, names[i], 0, 0, NULL) == 1);
        box_free(&b);
    }
    check_note_clear();
    swarm_ca_free(ca);
}

/* Two issues share nothing but the CA and the validity; two CAs share
 * nothing at all. */
TEST(swarm_ca_fresh)
{
    struct swarm_ca *ca, *ca2;
    struct box a, b;
    X509 *r1, *r2;
    const ASN1_INTEGER *sa, *sb;

    CHECK_OK(swarm_ca_new(2, &ca));
    CHECK_OK(swarm_ca_new(2, &ca2));
    issue(ca, "*", &a);
    issue(ca, "*", &b);
    sa = X509_get0_serialNumber(a.x);
    sb = X509_get0_serialNumber(b.x);
    CHECK(ASN1_INTEGER_cmp(sa, sb) != 0);
    /* 127 random bits with the top one set: 16 bytes, positive. */
    CHECK_EQ_INT(ASN1_STRING_length(sa), 16);
    CHECK_EQ_INT(ASN1_STRING_type(sa), V_ASN1_INTEGER);
    CHECK(EVP_PKEY_eq(a.k, b.k) != 1);
    CHECK(EVP_PKEY_eq(X509_get0_pubkey(a.x), X509_get0_pubkey(b.x)) != 1);
    CHECK(strcmp(a.key, b.key) != 0);
    CHECK(X509_check_private_key(a.x, b.k) != 1);
    ERR_clear_error();

    r1 = ca_cert(ca);
    r2 = ca_cert(ca2);
    CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(r1),
        X509_get0_serialNumber(r2)) != 0);
    CHECK(EVP_PKEY_eq(X509_get0_pubkey(r1), X509_get0_pubkey(r2)) != 1);
    CHECK(EVP_PKEY_eq(X509_get0_pubkey(r1), X509_get0_pubkey(a.x)) != 1);
    box_free(&a);
    box_free(&b);
    X509_free(r1);
    X509_free(r2);
    swarm_ca_free(ca);
    swarm_ca_free(ca2);
}

/* Seconds from a to b. */
static long
span(const ASN1_TIME *a, const ASN1_TIME *b)
{
    int days, secs;

    CHECK(ASN1_TIME_diff(&days, &secs, a, b) == 1);
    return (long)days * 86400 + secs;
}

TEST(swarm_ca_limits)
{
    static const char *const bad[] = {
        "", "a,b", "a b", "a:b", "a/b", "a\n", "a=b", "\xc3\xa9",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    struct swarm_ca *ca = (struct swarm_ca *)1;
    char *c = (char *)1, *k = (char *)1;
    size_t clen = 1, klen = 1, i;
    struct box b;
    ASN1_TIME *now;
    X509 *root;
    time_t t0;

    CHECK_EQ_ERR(swarm_ca_new(0, &ca), FERRY_ERR_USAGE);
    CHECK(ca == NULL);
    CHECK_EQ_ERR(swarm_ca_new(SWARM_CA_MAX_HOURS + 1, &ca),
        FERRY_ERR_USAGE);
    CHECK(ca == NULL);

    t0 = time(NULL);
    CHECK_OK(swarm_ca_new(SWARM_CA_MAX_HOURS, &ca));
    root = ca_cert(ca);
    /* Valid from SWARM_CA_BACKDATE_SECONDS ago for the hours asked; the
     * boxes' certificates exactly as long. */
    CHECK((now = ASN1_TIME_set(NULL, t0)) != NULL);
    CHECK(labs(span(X509_get0_notBefore(root), now) -
        SWARM_CA_BACKDATE_SECONDS) <= 2);
    CHECK_EQ_INT(span(X509_get0_notBefore(root), X509_get0_notAfter(root)),
        (long)SWARM_CA_MAX_HOURS * 3600 + SWARM_CA_BACKDATE_SECONDS);
    issue(ca, "*", &b);
    CHECK(ASN1_TIME_compare(X509_get0_notBefore(b.x),
        X509_get0_notBefore(root)) == 0);
    CHECK(ASN1_TIME_compare(X509_get0_notAfter(b.x),
        X509_get0_notAfter(root)) == 0);
    box_free(&b);

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        check_note("name %zu", i);
        CHECK_EQ_ERR(swarm_ca_issue(ca, bad[i], &c, &clen, &k, &klen),
            FERRY_ERR_USAGE);
        CHECK(c == NULL && k == NULL && clen == 0 && klen == 0);
        c = k = (char *)1;
    }
    check_note_clear();
    CHECK_EQ_ERR(swarm_ca_issue(ca, NULL, &c, &clen, &k, &klen),
        FERRY_ERR_USAGE);
    swarm_ca_free_key(NULL, 0);
    swarm_ca_free(NULL);
    ASN1_TIME_free(now);
    X509_free(root);
    swarm_ca_free(ca);
}

/* Each allocation of a CA and an issue made to fail in turn: NOMEM,
 * nothing returned, nothing leaked (the asan build checks that). */
TEST(swarm_ca_nomem)
{
    struct swarm_ca *ca;
    char *c, *k;
    size_t clen, klen;
    unsigned long n;
    int r, failed = 1;

    for (n = 1; failed && n < 64; n++) {
        check_note("allocation %lu", n);
        failed = 0;
        alloc_fail_at(n);
        if ((r = swarm_ca_new(3, &ca)) != 0) {
            CHECK_EQ_ERR(r, FERRY_ERR_NOMEM);
            CHECK(ca == NULL);
            failed = 1;
            continue;
        }
        if ((r = swarm_ca_issue(ca, "*", &c, &clen, &k, &klen)) != 0) {
            CHECK_EQ_ERR(r, FERRY_ERR_NOMEM);
            CHECK(c == NULL && k == NULL);
            failed = 1;
        } else {
            xfree(c);
            swarm_ca_free_key(k, klen);
        }
        swarm_ca_free(ca);
    }
    alloc_fail_at(0);
    check_note_clear();
    /* The CA, its PEM, the box's certificate and its key. */
    CHECK_EQ_INT(n, 6);
}
