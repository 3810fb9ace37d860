/*
 * swarm_ca_make: a transfer's CA and box certificates, made by
 * client/swarm_ca.c as the client will make them, for the swarm tests:
 *
 *     swarm_ca_make OUTDIR N [NAME...]
 *
 * Writes OUTDIR/ca.pem (the CA's certificate, for torrent_make -c) and,
 * for K in 1..N (at most 64), OUTDIR/boxK.pem and OUTDIR/boxK.key: a
 * certificate naming "*", as the client issues them, and its key, the
 * files the helper's cert and key lines take. Each NAME (a test of the
 * name check) gets OUTDIR/NAME.pem and OUTDIR/NAME.key, a certificate
 * of the same CA naming NAME. OUTDIR is made (0700) if missing; no file
 * in it may exist already. The CA's key is never written: it dies with
 * this process, as in the client.
 *
 * The box keys go to disk only because the helper reads them from files
 * in these tests; they are written 0600.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../client/swarm_ca.h"

#define MAX_BOXES 64
#define MAX_FILE 80

static void
die(const char *what, int r)
{
    fprintf(stderr, "swarm_ca_make: %s: %s\n", what, ferry_strerror(r));
    exit(1);
}

static void
put(const char *dir, const char *name, const char *p, size_t n,
    mode_t mode)
{
    char path[4096];
    ssize_t w;
    int fd;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
        sizeof(path))
        die(name, FERRY_ERR_TOO_LARGE);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
        O_CLOEXEC, mode)) < 0)
        die(path, -errno);
    while (n > 0) {
        if ((w = write(fd, p, n)) < 0) {
            if (errno == EINTR)
                continue;
            die(path, -errno);
        }
        p += w;
        n -= (size_t)w;
    }
    if (close(fd) != 0)
        die(path, -errno);
}

/* Writes OUTDIR/WHAT.pem and OUTDIR/WHAT.key, a certificate naming
 * name. */
static void
issue(struct swarm_ca *ca, const char *dir, const char *what,
    const char *name)
{
    char *cert, *key, file[MAX_FILE];
    size_t cert_len, key_len;
    int r;

    if ((r = swarm_ca_issue(ca, name, &cert, &cert_len, &key,
        &key_len)) != 0)
        die(name, r);
    if ((size_t)snprintf(file, sizeof(file), "%s.pem", what) >=
        sizeof(file))
        die(what, FERRY_ERR_TOO_LARGE);
    put(dir, file, cert, cert_len, 0644);
    snprintf(file, sizeof(file), "%s.key", what);
    put(dir, file, key, key_len, 0600);
    xfree(cert);
    swarm_ca_free_key(key, key_len);
}

int
main(int argc, char **argv)
{
    const char *dir, *pem;
    struct swarm_ca *ca;
    char *end, what[MAX_FILE];
    size_t pem_len;
    unsigned long n, k;
    int i, r;

    if (argc < 3) {
        fprintf(stderr, "usage: swarm_ca_make OUTDIR N [NAME...]\n");
        return 2;
    }
    dir = argv[1];
    errno = 0;
    n = strtoul(argv[2], &end, 10);
    if (errno != 0 || *end != '\0' || n < 1 || n > MAX_BOXES)
        die(argv[2], FERRY_ERR_USAGE);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        die(dir, -errno);

    if ((r = swarm_ca_new(2, &ca)) != 0)
        die("CA", r);
    pem = swarm_ca_cert_pem(ca, &pem_len);
    put(dir, "ca.pem", pem, pem_len, 0644);
    for (k = 1; k <= n; k++) {
        snprintf(what, sizeof(what), "box%lu", k);
        issue(ca, dir, what, "*");
    }
    /* swarm_ca_issue refuses a name with '/' or one too long for a
     * file name here. */
    for (i = 3; i < argc; i++)
        issue(ca, dir, argv[i], argv[i]);
    swarm_ca_free(ca);
    return 0;
}
