/*
 * Kept signatures (engine/delta/keptsig.c): what a receiver keeps of a file it
 * wrote is what signing the file would give, and it is used only while
 * the file is exactly as written; anything else is refused and removed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/alloc.h"
#include "../../common/hash.h"
#include "../../common/rollsum.h"
#include "../../engine/delta/keptsig.h"
#include "../../proto/msg.h"
#include "check.h"

#define KS_SIZE (300000u + 123u)
#define KS_PIECE 4096u
#define KS_BLOCK 65536u
#define KS_NBLOCKS ((KS_SIZE + KS_BLOCK - 1) / KS_BLOCK)

struct ks_fixture {
    char dir[CHECK_PATH_MAX], file[CHECK_PATH_MAX + 16];
    char store[CHECK_PATH_MAX + 16];
    uint8_t data[KS_SIZE];
    struct keptsig_store *s;
};

/* The signatures signing the data would give. */
static void
ks_expected(const uint8_t *data, uint64_t size, uint32_t piece, uint8_t *out)
{
    uint64_t j, n = msg_delta_nsigs(size, piece);

    for (j = 0; j < n; j++) {
        uint64_t len = size - j * piece < piece ? size - j * piece : piece;
        uint32_t weak = rollsum_of(data + j * piece, (size_t)len);
        struct hash128 h;
        uint8_t *q = out + j * DELTA_SIG_LEN;

        hash_block(data + j * piece, (size_t)len, &h);
        q[0] = (uint8_t)(weak >> 24);
        q[1] = (uint8_t)(weak >> 16);
        q[2] = (uint8_t)(weak >> 8);
        q[3] = (uint8_t)weak;
        memcpy(q + 4, h.b, HASH_LEN);
    }
}

/* The hash of block i of the data. */
static void
ks_block_hash(const uint8_t *data, uint64_t i, struct hash128 *h)
{
    uint64_t off = i * KS_BLOCK;

    hash_block(data + off, (size_t)(KS_SIZE - off < KS_BLOCK ?
        KS_SIZE - off : KS_BLOCK), h);
}

/* A file of KS_SIZE bytes (a stretch of zeros in it) and its kept
 * signatures, put in block by block out of order, zeros as NULL, and its
 * block hashes, last first. */
static void
ks_setup(struct ks_fixture *fx)
{
    struct keptsig *k;
    struct hash128 h;
    uint64_t off, b = 8 * KS_PIECE, j;
    size_t i;
    int fd;

    check_tmpdir(fx->dir);
    for (i = 0; i < KS_SIZE; i++)
        fx->data[i] = (uint8_t)(i * 131 + (i >> 9));
    memset(fx->data + 2 * b, 0, b);
    snprintf(fx->file, sizeof(fx->file), "%s/f", fx->dir);
    snprintf(fx->store, sizeof(fx->store), "%s/store/sig", fx->dir);
    check_write_file(fx->file, fx->data, KS_SIZE, 0);
    CHECK_OK(keptsig_store_open(fx->store, &fx->s));
    CHECK((k = keptsig_new(KS_SIZE, KS_PIECE, KS_BLOCK)) != NULL);
    for (j = KS_NBLOCKS; j-- > 0;) {
        ks_block_hash(fx->data, j, &h);
        keptsig_put_block(k, j, &h);
    }
    for (off = b; off < KS_SIZE; off += b)
        keptsig_put(k, off, off == 2 * b ? NULL : fx->data + off,
            KS_SIZE - off < b ? KS_SIZE - off : b);
    keptsig_put(k, 0, fx->data, b);
    CHECK((fd = open(fx->file, O_RDONLY)) >= 0);
    CHECK_OK(keptsig_save(fx->s, k, fd));
    close(fd);
    keptsig_free(k);
}

static int
ks_load_as(struct ks_fixture *fx, uint32_t piece, uint32_t block,
    uint8_t **sigs, uint64_t *n)
{
    struct stat st;

    CHECK_EQ_INT(stat(fx->file, &st), 0);
    return keptsig_load(fx->s, &st, piece, block, sigs, n);
}

static int
ks_load(struct ks_fixture *fx, uint32_t piece, uint8_t **sigs, uint64_t *n)
{
    return ks_load_as(fx, piece, KS_BLOCK, sigs, n);
}

/* How many files the store holds. */
static int
ks_count(const struct ks_fixture *fx)
{
    char cmd[CHECK_PATH_MAX + 64];
    FILE *p;
    int n = -1;

    snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", fx->store);
    CHECK((p = popen(cmd, "r")) != NULL);
    CHECK_EQ_INT(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

static void
ks_teardown(struct ks_fixture *fx)
{
    keptsig_store_close(fx->s);
    check_rmtree(fx->dir);
}

TEST(keptsig_roundtrip)
{
    static struct ks_fixture fx;
    static uint8_t want[(KS_SIZE / KS_PIECE + 1) * DELTA_SIG_LEN];
    struct hash128 h;
    uint8_t *sigs;
    uint64_t n, i;

    ks_setup(&fx);
    ks_expected(fx.data, KS_SIZE, KS_PIECE, want);
    CHECK_OK(ks_load(&fx, KS_PIECE, &sigs, &n));
    CHECK_EQ_U64(n, msg_delta_nsigs(KS_SIZE, KS_PIECE));
    CHECK(memcmp(sigs, want, (size_t)n * DELTA_SIG_LEN) == 0);
    /* The block hashes follow the signatures. */
    for (i = 0; i < KS_NBLOCKS; i++) {
        ks_block_hash(fx.data, i, &h);
        CHECK(memcmp(sigs + n * DELTA_SIG_LEN + i * HASH_LEN, h.b,
            HASH_LEN) == 0);
    }
    xfree(sigs);
    /* Another block size: not these (and they go). */
    CHECK_EQ_ERR(ks_load_as(&fx, KS_PIECE, 2 * KS_BLOCK, &sigs, &n),
        -ENOENT);
    CHECK(sigs == NULL);
    CHECK_EQ_INT(ks_count(&fx), 0);
    ks_teardown(&fx);
    /* Another piece size: not these. */
    ks_setup(&fx);
    CHECK_EQ_ERR(ks_load(&fx, 2 * KS_PIECE, &sigs, &n), -ENOENT);
    CHECK(sigs == NULL);
    ks_teardown(&fx);
}

/* Every change to the file, and every flaw in what is kept, makes them
 * unusable, and they are gone once found so. */
TEST(keptsig_stale)
{
    static struct ks_fixture fx;
    char path[CHECK_PATH_MAX + 64];
    struct timespec ts[2];
    struct stat st;
    uint8_t *sigs;
    uint64_t n;
    int fd, c;

    for (c = 0; c < 7; c++) {
        check_note("case %d", c);
        ks_setup(&fx);
        CHECK_EQ_INT(ks_count(&fx), 1);
        CHECK_EQ_INT(stat(fx.file, &st), 0);
        snprintf(path, sizeof(path), "%s/%llx-%llx", fx.store,
            (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        switch (c) {
        case 0:  /* a new mtime */
            ts[0] = st.st_atim;
            ts[1] = st.st_mtim;
            ts[1].tv_nsec = (ts[1].tv_nsec + 1) % 1000000000;
            CHECK_EQ_INT(utimensat(AT_FDCWD, fx.file, ts, 0), 0);
            break;
        case 1:  /* the same mtime put back: the ctime moved */
            usleep(20000);
            CHECK_EQ_INT(chmod(fx.file, 0600), 0);
            break;
        case 2:  /* longer */
            CHECK((fd = open(fx.file, O_WRONLY | O_APPEND)) >= 0);
            CHECK_EQ_INT(write(fd, "x", 1), 1);
            close(fd);
            break;
        case 3:  /* the kept file cut short */
            CHECK_EQ_INT(truncate(path, 100), 0);
            break;
        case 4:  /* a bit flipped in what is kept */
            CHECK((fd = open(path, O_RDWR)) >= 0);
            CHECK_EQ_INT(pwrite(fd, "\x01", 1, KEPTSIG_HEADER + 5), 1);
            close(fd);
            break;
        case 5:  /* another file in its place (another inode) */
            CHECK_EQ_INT(unlink(fx.file), 0);
            check_write_file(fx.file, fx.data, KS_SIZE, 0);
            break;
        default:  /* forgotten */
            keptsig_forget(fx.s, &st);
            break;
        }
        CHECK_EQ_ERR(ks_load(&fx, KS_PIECE, &sigs, &n), -ENOENT);
        CHECK(sigs == NULL);
        /* (A new inode finds nothing; the old one's are trimmed later.) */
        if (c != 5)
            CHECK_EQ_INT(ks_count(&fx), 0);
        ks_teardown(&fx);
    }
    check_note_clear();
}

/* A store that is not private is refused; a full one is trimmed, the
 * oldest first. */
TEST(keptsig_store_rules)
{
    static struct ks_fixture fx;
    struct keptsig_store *s;
    struct timespec ts[2];
    char path[CHECK_PATH_MAX + 64];
    unsigned i;

    ks_setup(&fx);
    keptsig_store_close(fx.s);
    fx.s = NULL;
    CHECK_EQ_INT(chmod(fx.store, 0777), 0);
    CHECK_EQ_ERR(keptsig_store_open(fx.store, &s), FERRY_ERR_STATE);
    CHECK_EQ_INT(chmod(fx.store, 0700), 0);
    /* KEPTSIG_MAX_FILES + 10 files, numbered oldest first. */
    for (i = 0; i < KEPTSIG_MAX_FILES + 10; i++) {
        snprintf(path, sizeof(path), "%s/0-%x", fx.store, i);
        check_write_file(path, "x", 1, 0);
        ts[0].tv_sec = ts[1].tv_sec = 1000000 + i;
        ts[0].tv_nsec = ts[1].tv_nsec = 0;
        CHECK_EQ_INT(utimensat(AT_FDCWD, path, ts, 0), 0);
    }
    CHECK_OK(keptsig_store_open(fx.store, &fx.s));
    CHECK(ks_count(&fx) <= (int)(KEPTSIG_MAX_FILES / 8 * 7));
    snprintf(path, sizeof(path), "%s/0-0", fx.store);
    CHECK(access(path, F_OK) != 0);
    snprintf(path, sizeof(path), "%s/0-%x", fx.store,
        KEPTSIG_MAX_FILES + 9);
    CHECK_EQ_INT(access(path, F_OK), 0);
    ks_teardown(&fx);
}
