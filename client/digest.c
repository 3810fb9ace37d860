#include "digest.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "../common/alloc.h"

struct digest_sha256 {
    EVP_MD_CTX *ctx;
};

struct digest_sha256 *
digest_sha256_new(void)
{
    struct digest_sha256 *d = xcalloc(1, sizeof(*d));

    if (d == NULL)
        return NULL;
    if ((d->ctx = EVP_MD_CTX_new()) == NULL ||
        EVP_DigestInit_ex(d->ctx, EVP_sha256(), NULL) != 1) {
        digest_sha256_free(d);
        return NULL;
    }
    return d;
}

void
digest_sha256_free(struct digest_sha256 *d)
{
    if (d == NULL)
        return;
    EVP_MD_CTX_free(d->ctx);
    xfree(d);
}

int
digest_sha256_two(struct digest_sha256 *d, const void *a, size_t an,
    const void *b, size_t bn, uint8_t out[32])
{
    if (EVP_DigestInit_ex(d->ctx, EVP_sha256(), NULL) != 1 ||
        (an > 0 && EVP_DigestUpdate(d->ctx, a, an) != 1) ||
        (bn > 0 && EVP_DigestUpdate(d->ctx, b, bn) != 1) ||
        EVP_DigestFinal_ex(d->ctx, out, NULL) != 1)
        return FERRY_ERR_UNSUPPORTED;
    return 0;
}

int
digest_sha256_update(struct digest_sha256 *d, const void *p, size_t n)
{
    return EVP_DigestUpdate(d->ctx, p, n) == 1 ? 0 : FERRY_ERR_UNSUPPORTED;
}

int
digest_sha256_final(struct digest_sha256 *d, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0, i;
    int r = 0;

    out[0] = '\0';
    if (EVP_DigestFinal_ex(d->ctx, md, &mdlen) != 1)
        r = FERRY_ERR_UNSUPPORTED;
    digest_sha256_free(d);
    if (r != 0)
        return r;
    for (i = 0; i < mdlen && i < 32; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[2 * i] = '\0';
    return 0;
}

int
digest_sha256_file(const char *path, char out[65])
{
    unsigned char buf[1 << 16];
    struct digest_sha256 *d;
    ssize_t n;
    int fd, r = 0;

    out[0] = '\0';
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -errno;
    if ((d = digest_sha256_new()) == NULL) {
        close(fd);
        return FERRY_ERR_NOMEM;
    }
    while (r == 0 && (n = read(fd, buf, sizeof(buf))) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
        } else {
            r = digest_sha256_update(d, buf, (size_t)n);
        }
    }
    close(fd);
    if (r != 0) {
        digest_sha256_free(d);
        return r;
    }
    return digest_sha256_final(d, out);
}

int
digest_hmac_sha1(const void *key, size_t keylen, const void *msg,
    size_t msglen, uint8_t out[20])
{
    unsigned int len = 20;

    if (HMAC(EVP_sha1(), key, (int)keylen, msg, msglen, out, &len) == NULL ||
        len != 20)
        return FERRY_ERR_UNSUPPORTED;
    return 0;
}

void
digest_base64(const uint8_t *p, size_t n, int nopad, char *out)
{
    int len = EVP_EncodeBlock((unsigned char *)out, p, (int)n);

    while (nopad && len > 0 && out[len - 1] == '=')
        out[--len] = '\0';
}

long
digest_unbase64(const char *s, size_t len, uint8_t *out, size_t cap)
{
    size_t pad = 0;
    int n;

    if (len % 4 != 0 || len / 4 * 3 > cap)
        return -1;
    n = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
    if (n < 0)
        return -1;
    /* EVP_DecodeBlock counts '=' padding as zero bytes. */
    if (len >= 1 && s[len - 1] == '=')
        pad++;
    if (len >= 2 && s[len - 2] == '=')
        pad++;
    return (long)n - (long)pad;
}

int
digest_random(void *p, size_t n)
{
    return RAND_bytes(p, (int)n) == 1 ? 0 : FERRY_ERR_UNSUPPORTED;
}

void
digest_cleanse(void *p, size_t n)
{
    OPENSSL_cleanse(p, n);
}
