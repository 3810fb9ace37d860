/* Tests for common/hash.c: the file hash is the documented tree of block
 * hashes, and the zero-block shortcuts agree with plain hashing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/buf.h"
#include "../../common/hash.h"
#include "check.h"

/* An unlinked temporary file holding n bytes of a fixed pattern, which
 * is also returned in *data (free it). */
static int
temp_file(size_t n, uint8_t **data)
{
    uint8_t *p = check_alloc(n > 0 ? n : 1);
    size_t i;
    FILE *f;
    int fd;

    for (i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 31 + (i >> 9));
    CHECK((f = tmpfile()) != NULL);
    CHECK((fd = dup(fileno(f))) >= 0);
    fclose(f);
    CHECK_EQ_U64(pwrite(fd, p, n, 0), n);
    *data = p;
    return fd;
}

/*
 * The file hash as hash.h specifies it, computed without hash_file_*:
 * XXH3-128 of the size (be64), the block size (be32) and the block
 * hashes, all in one buffer.
 */
static void
tree_by_hand(const uint8_t *p, size_t n, uint32_t bs, struct hash128 *out)
{
    struct hash128 h;
    struct buf b;
    size_t off;

    buf_init(&b, SIZE_MAX);
    CHECK_OK(buf_put_u64(&b, n));
    CHECK_OK(buf_put_u32(&b, bs));
    for (off = 0; off < n; off += bs) {
        hash_block(p + off, n - off < bs ? n - off : bs, &h);
        CHECK_OK(buf_put(&b, h.b, HASH_LEN));
    }
    hash_block(buf_ptr(&b), buf_used(&b), out);
    buf_cleanup(&b);
}

TEST(hash_fd_tree)
{
    static const struct {
        size_t size;
        uint32_t bs;
    } cases[] = {
        { 0, 4096 }, { 1, 4096 }, { 4096, 4096 }, { 4097, 4096 },
        { 3 * 4096 + 17, 4096 }, { 100000, 65536 }, { 100000, 1 << 20 },
    };
    struct hash128 fd_h, hand, api;
    uint8_t *data;
    size_t i;
    int fd;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_note("size %zu, block %u", cases[i].size, cases[i].bs);
        fd = temp_file(cases[i].size, &data);
        CHECK_OK(hash_fd(fd, cases[i].size, cases[i].bs, &fd_h));
        tree_by_hand(data, cases[i].size, cases[i].bs, &hand);
        /* hash_mem: the same through hash_file_new / add / final. */
        CHECK_OK(hash_mem(data, cases[i].size, cases[i].bs, &api));
        CHECK_EQ_MEM(fd_h.b, hand.b, HASH_LEN);
        CHECK_EQ_MEM(api.b, hand.b, HASH_LEN);
        close(fd);
        free(data);
    }
}

TEST(hash_fd_errors)
{
    struct hash128 a, b;
    uint8_t *data;
    int fd = temp_file(5000, &data);

    /* The block size is part of the hash, and so is the size. */
    CHECK_OK(hash_fd(fd, 5000, 4096, &a));
    CHECK_OK(hash_fd(fd, 5000, 8192, &b));
    CHECK(!hash_equal(&a, &b));
    CHECK_OK(hash_fd(fd, 4999, 4096, &b));
    CHECK(!hash_equal(&a, &b));
    /* A file shorter than promised changed under us. */
    CHECK_EQ_ERR(hash_fd(fd, 5001, 4096, &b), FERRY_ERR_CHANGED);
    CHECK_EQ_ERR(hash_fd(fd, 5000, 0, &b), FERRY_ERR_USAGE);
    close(fd);
    CHECK_EQ_ERR(hash_fd(fd, 5000, 4096, &b), -EBADF);
    CHECK_EQ_MEM(b.b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", HASH_LEN);
    free(data);
}

TEST(hash_zero_block)
{
    static const size_t sizes[] = { 0, 1, 4096, 65536, 4096, 1,
        HASH_MAX_ZERO_BLOCK, 0, 100, 65535, 1, 4096 };
    uint8_t *zeros = calloc(1, HASH_MAX_ZERO_BLOCK);
    struct hash128 a, b;
    uint64_t before;
    size_t i;

    CHECK(zeros != NULL);
    /* More lengths than the cache holds, so that it is both hit and
     * replaced. */
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        check_note("%zu zero bytes", sizes[i]);
        hash_zero_block(sizes[i], &a);
        hash_block(zeros, sizes[i], &b);
        CHECK(hash_equal(&a, &b));
        hash_zero_block(sizes[i], &a);
        CHECK(hash_equal(&a, &b));
    }
    check_note_clear();
    /* Lengths that take turns (the block, the pieces of kept signatures,
     * a file's last block: ZERO frames of a sparse file) are hashed once
     * each, not once a block. */
    hash_zero_block(65536, &a);
    hash_zero_block(16384, &a);
    hash_zero_block(1000, &a);
    before = hash_counted();
    for (i = 0; i < 1000; i++) {
        hash_zero_block(65536, &a);
        hash_zero_block(16384, &a);
        hash_zero_block(1000, &a);
    }
    CHECK_EQ_U64(hash_counted() - before, 0);
    hash_block(zeros, 1000, &b);
    CHECK(hash_equal(&a, &b));
    CHECK_EQ_U64(hash_counted() - before, 1000);
    free(zeros);
}

TEST(hash_is_zero)
{
    static const size_t marks[] = { 0, 1, 65535, 65536, 65537, 199999 };
    uint8_t *p = calloc(1, 200000);
    size_t i;

    CHECK(p != NULL);
    CHECK(hash_is_zero(p, 0));
    CHECK(hash_is_zero(p, 200000));
    for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
        check_note("one byte set at %zu", marks[i]);
        p[marks[i]] = 0x80;
        CHECK(!hash_is_zero(p, 200000));
        CHECK(!hash_is_zero(p + marks[i], 1));
        CHECK(hash_is_zero(p, marks[i]));
        p[marks[i]] = 0;
    }
    free(p);
}

TEST(hash_hex)
{
    struct hash128 h;
    char hex[2 * HASH_LEN + 1];
    size_t i;

    for (i = 0; i < HASH_LEN; i++)
        h.b[i] = (uint8_t)(i * 0x11);
    hash_hex(&h, hex);
    CHECK_EQ_STR(hex, "00112233445566778899aabbccddeeff");
    /* Different inputs, different hashes; the same input, the same. */
    hash_block("a", 1, &h);
    hash_hex(&h, hex);
    CHECK_EQ_U64(strlen(hex), 32);
    CHECK_EQ_U64(hash_name64("abc", 3), hash_name64("abc", 3));
    CHECK(hash_name64("abc", 3) != hash_name64("abd", 3));
}
