/*
 * gen_corpus.c: writes the seeds of fuzz_seed.c as corpus files.
 *
 *     gen_corpus tests/fuzz/corpus
 *
 * For seed i of each message type it writes frame/seed-<type>-<i> (the
 * whole frame) and msg/seed-<type>-<i> (the type byte and the payload),
 * plus frame/seed-stream with every seed frame in a row, and each journal
 * seed as journal/seed-journal-<name>, and each rendezvous datagram as
 * rvmsg/seed-rvmsg-<i>, and each block of tensor pieces as
 * tensor/seed-tensor-<i>, and each manifest as
 * vmanifest/seed-vmanifest-<i>. Run it again (`make fuzz-corpus`)
 * after a change to the wire or journal format.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../common/fsx.h"
#include "../../proto/limits.h"
#include "../../proto/msg.h"
#include "fuzz_seed.h"

static int
gen_write(const char *dir, const char *sub, const char *name, const void *p,
    size_t n)
{
    char path[4096];
    int fd, r;

    snprintf(path, sizeof(path), "%s/%s", dir, sub);
    if ((r = fsx_mkdir_p(path, 0755)) != 0)
        return r;
    snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
        0644)) < 0)
        return -errno;
    r = fsx_write_all(fd, p, n);
    close(fd);
    return r;
}

/* Writes seed i of type to both corpora and appends its frame to all. */
static int
gen_seed(const char *dir, uint8_t type, size_t i, struct buf *all)
{
    char name[FUZZ_SEED_NAME_MAX];
    struct buf b;
    int r;

    fuzz_seed_name(type, i, name);
    buf_init(&b, PROTO_FRAME_HEADER + PROTO_MAX_FRAME);
    /* A msg input is the frame without its length field: the type byte,
     * then the payload. */
    if ((r = fuzz_seed(type, i, &b)) != 0 ||
        (r = gen_write(dir, "frame", name, buf_ptr(&b), buf_used(&b))) != 0 ||
        (r = gen_write(dir, "msg", name, buf_ptr(&b) + 4,
        buf_used(&b) - 4)) != 0 ||
        ((type == MSG_DELTA_SIGS || type == MSG_DELTA ||
        type == MSG_DELTA_BLOCKS) &&
        (r = gen_write(dir, "delta", name, buf_ptr(&b) + 4,
        buf_used(&b) - 4)) != 0) ||
        (r = buf_put(all, buf_ptr(&b), buf_used(&b))) != 0)
        fprintf(stderr, "gen_corpus: %s: %s\n", name, ferry_strerror(r));
    buf_cleanup(&b);
    return r;
}

/* Writes seed i of a target whose seeds are whole inputs. */
static int
gen_input_seed(const char *dir, const struct fuzz_seeds *t, size_t i)
{
    char name[FUZZ_SEED_NAME_MAX];
    struct buf b;
    int r;

    t->name(i, name);
    buf_init(&b, FUZZ_SEED_MAX);
    if ((r = t->seed(i, &b)) != 0 ||
        (r = gen_write(dir, t->target, name, buf_ptr(&b), buf_used(&b))) != 0)
        fprintf(stderr, "gen_corpus: %s: %s\n", name, ferry_strerror(r));
    buf_cleanup(&b);
    return r;
}

int
main(int argc, char **argv)
{
    const struct fuzz_seeds *t;
    struct buf all;
    size_t i, n = 0;
    uint8_t type;
    int r = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus DIR\n");
        return 2;
    }
    buf_init(&all, 64u << 20);
    for (type = 1; r == 0 && type <= MSG_TYPE_MAX; type++)
        for (i = 0; r == 0 && i < fuzz_seed_count(type); i++, n++)
            r = gen_seed(argv[1], type, i, &all);
    if (r == 0)
        r = gen_write(argv[1], "frame", "seed-stream", buf_ptr(&all),
            buf_used(&all));
    for (t = fuzz_input_seeds; r == 0 && t->target != NULL; t++)
        for (i = 0; r == 0 && i < t->count(); i++, n++)
            r = gen_input_seed(argv[1], t, i);
    buf_cleanup(&all);
    if (r != 0)
        return 1;
    printf("gen_corpus: %zu seeds written to %s\n", n, argv[1]);
    return 0;
}
