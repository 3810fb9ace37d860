/*
 * torrent_make: a private v2 torrent of a folder's files, made by
 * client/torrent.c as the client will make it, for the swarm tests:
 *
 *     torrent_make [-p PIECE_LEN | -b BYTES] [-c CA.pem] DIR OUT.torrent MAP
 *
 * -b: the piece length a push's swarm picks for BYTES of data
 * (swarm_piece_len), so that a bench's torrent is the push's.
 *
 * Every regular file beneath DIR goes in (a symlink or other special
 * file is refused), named by its path below DIR; the torrent is named
 * after DIR, unless it holds one file at its top (single-file form,
 * torrent.h). Prints the v2 info-hash in hex. MAP gets one line a
 * piece, "PIECE OFFSET PATH": the bytes of piece PIECE start at OFFSET
 * in DIR/PATH, which is what the client sends each box of its stripe.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "../../common/sha256.h"
#include "../../client/swarm_cond.h"
#include "../../client/torrent.h"

static void
die(const char *what, int r)
{
    fprintf(stderr, "torrent_make: %s: %s\n", what, ferry_strerror(r));
    exit(1);
}

static void
add_file(struct torrent *t, const char *full, const char *rel)
{
    static char buf[1 << 16];
    ssize_t n;
    int fd, r;

    if ((fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        die(full, -errno);
    if ((r = torrent_file_begin(t, rel)) != 0)
        die(rel, r);
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        if ((r = torrent_file_update(t, buf, (size_t)n)) != 0)
            die(rel, r);
    if (n < 0)
        die(full, -errno);
    close(fd);
    if ((r = torrent_file_end(t)) != 0)
        die(rel, r);
}

/* Adds the files beneath dir/rel (rel "" at the top). */
static void
walk(struct torrent *t, const char *dir, const char *rel)
{
    char full[8192], sub[8192];
    struct dirent *e;
    struct stat st;
    DIR *d;

    if ((size_t)snprintf(full, sizeof(full), "%s%s%s", dir, *rel ? "/" : "",
        rel) >= sizeof(full))
        die(rel, FERRY_ERR_TOO_LARGE);
    if ((d = opendir(full)) == NULL)
        die(full, -errno);
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", rel,
            *rel ? "/" : "", e->d_name) >= sizeof(sub) ||
            (size_t)snprintf(full, sizeof(full), "%s/%s", dir, sub) >=
            sizeof(full))
            die(rel, FERRY_ERR_TOO_LARGE);
        if (lstat(full, &st) != 0)
            die(full, -errno);
        if (S_ISDIR(st.st_mode))
            walk(t, dir, sub);
        else if (S_ISREG(st.st_mode))
            add_file(t, full, sub);
        else
            die(full, FERRY_ERR_UNSUPPORTED);
    }
    closedir(d);
}

int
main(int argc, char **argv)
{
    struct torrent *t;
    struct buf out;
    uint8_t ih[32];
    char hex[65], *dir, *dircopy, *cert = NULL;
    const char *path;
    uint32_t piece_len = 262144, first, n, k;
    uint64_t len;
    size_t i, clen = 0;
    FILE *f;
    int c, r;

    while ((c = getopt(argc, argv, "p:b:c:")) != -1) {
        if (c == 'p') {
            piece_len = (uint32_t)strtoul(optarg, NULL, 10);
        } else if (c == 'b') {
            piece_len = swarm_piece_len(strtoull(optarg, NULL, 10));
        } else if (c == 'c') {
            if ((f = fopen(optarg, "rb")) == NULL)
                die(optarg, -errno);
            cert = malloc(TORRENT_MAX_CERT + 1);
            clen = cert ? fread(cert, 1, TORRENT_MAX_CERT + 1, f) : 0;
            fclose(f);
        } else {
            return 2;
        }
    }
    if (argc - optind != 3) {
        fprintf(stderr, "usage: torrent_make [-p PIECE_LEN | -b BYTES] [-c CA.pem] "
            "DIR OUT.torrent MAP\n");
        return 2;
    }
    dir = argv[optind];
    /* basename() may change its argument: give it a copy. */
    if ((dircopy = strdup(dir)) == NULL)
        die("torrent", FERRY_ERR_NOMEM);
    if ((r = torrent_new(&t, basename(dircopy), piece_len)) != 0)
        die("torrent", r);
    free(dircopy);
    walk(t, dir, "");
    if (cert != NULL && (r = torrent_set_cert(t, cert, clen)) != 0)
        die("cert", r);
    buf_init(&out, TORRENT_MAX_BYTES);
    if ((r = torrent_finish(t, &out, ih)) != 0)
        die("torrent", r);
    if ((f = fopen(argv[optind + 1], "wb")) == NULL ||
        fwrite(buf_ptr(&out), 1, buf_used(&out), f) != buf_used(&out) ||
        fclose(f) != 0)
        die(argv[optind + 1], FERRY_ERR_SHORT);
    if ((f = fopen(argv[optind + 2], "w")) == NULL)
        die(argv[optind + 2], -errno);
    for (i = 0; i < torrent_files(t); i++) {
        torrent_file_at(t, i, &path, &len, &first, &n);
        for (k = 0; k < n; k++)
            fprintf(f, "%u %llu %s\n", first + k,
                (unsigned long long)k * piece_len, path);
    }
    if (fclose(f) != 0)
        die(argv[optind + 2], -errno);
    sha256_hex(ih, hex);
    printf("%s\n", hex);
    buf_cleanup(&out);
    torrent_free(t);
    free(cert);
    return 0;
}
