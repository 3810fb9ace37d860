/*
 * The sender's search for the receiver's basis (engine/delta/delta_index.c,
 * delta_match.c) does work bounded by the bytes it searches, however the
 * receiver's signatures collide, and an honest basis loses nothing by
 * the bounds. Work is what the search counts (struct delta_work: bytes
 * hashed, hashes compared, table entries looked at), never time.
 */
#include <stdlib.h>
#include <string.h>

#include "../../common/hash.h"
#include "../../common/rollsum.h"
#include "../../engine/delta/delta_index.h"
#include "../../engine/delta/delta_match.h"
#include "check.h"

#define PS PROTO_MIN_SIG_BLOCK
#define BLOCK (256u << 10)

static void
fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t i;

    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)(x >> 24);
    }
}

/* The signatures of the n pieces of basis. */
static uint8_t *
sign_basis(const uint8_t *basis, uint64_t n)
{
    uint8_t *sigs = check_alloc((size_t)n * DELTA_SIG_LEN);
    uint64_t j;

    for (j = 0; j < n; j++)
        delta_sign(basis + j * PS, PS, sigs + j * DELTA_SIG_LEN);
    return sigs;
}

/* The index a sender builds of n signatures of PS-byte pieces. */
static struct delta_index *
index_of(const uint8_t *sigs, uint64_t n)
{
    struct delta_index *ix = delta_index_new(n * PS, PS);
    struct msg_delta_sigs m;
    uint64_t j;

    CHECK(ix != NULL);
    for (j = 0; j < n; j += m.count) {
        memset(&m, 0, sizeof(m));
        m.basis_size = n * PS;
        m.sig_block = PS;
        m.first = j;
        m.count = n - j < PROTO_MAX_SIGS ? (uint32_t)(n - j) : PROTO_MAX_SIGS;
        m.sigs = sigs + j * DELTA_SIG_LEN;
        CHECK_OK(delta_index_add(ix, &m));
    }
    CHECK(delta_index_complete(ix));
    return ix;
}

/* What searching a file cost and found, over all its blocks. */
struct found {
    struct delta_work work;
    uint64_t copied, blocks;
    int gave_up;
};

/* Searches file[0..size) block by block, in order, as a sender does. */
static void
search_file(const struct delta_index *ix, const uint8_t *file,
    uint64_t size, struct found *f)
{
    static struct delta_result res;
    struct delta_carry c;
    uint64_t k, a, e;

    memset(&c, 0, sizeof(c));
    memset(f, 0, sizeof(*f));
    for (k = 0; k * BLOCK < size; k++) {
        a = k * BLOCK;
        e = size - a < BLOCK ? size : a + BLOCK;
        delta_match_block(ix, file, 0, size, 1, k, a, e, &c, &res);
        CHECK(!res.incomplete && !res.overflow);
        f->copied += res.copied;
        f->gave_up |= res.gave_up;
        f->work.hashed += res.work.hashed;
        f->work.missed += res.work.missed;
        f->work.compared += res.work.compared;
        f->work.probed += res.work.probed;
        f->blocks++;
    }
}

/* The bounds of delta_match.h for a search of size bytes (in f->blocks
 * blocks) against an index of n pieces: pieces hashed for nothing up to
 * DELTA_MATCH_MISS_FACTOR per byte (each block may pass it by a piece),
 * a piece hashed where expected and one that matched per piece found
 * besides, DELTA_INDEX_MAX_PER_WEAK comparisons a piece hashed, and per
 * offset searched (the block and a piece's look-behind) a binary search
 * and DELTA_INDEX_MAX_PER_WEAK entries. */
static void
check_bounds(const struct found *f, uint64_t size, uint64_t n)
{
    uint64_t log2n = 0;

    while (((uint64_t)1 << log2n) < n)
        log2n++;
    CHECK(f->work.missed <= DELTA_MATCH_MISS_FACTOR * size +
        f->blocks * PS);
    CHECK(f->work.hashed <= f->work.missed + 2 * size + 2 * f->blocks * PS);
    CHECK(f->work.compared <= (f->work.hashed / PS) *
        DELTA_INDEX_MAX_PER_WEAK);
    CHECK(f->work.probed <= (size + f->blocks * PS) *
        (log2n + 1 + DELTA_INDEX_MAX_PER_WEAK));
}

/* Signatures that all share the weak sum of zeros, each with its own
 * strong hash, against a file of zeros: every offset meets the weak sum.
 * The table holds DELTA_INDEX_MAX_PER_WEAK of them (building it compares
 * each signature with those), and the search stops hashing zeros once
 * DELTA_MATCH_MISS_FACTOR times the block was hashed for nothing. */
TEST(delta_work_collide)
{
    const uint64_t n = 1024, size = 1u << 20;
    uint8_t *sigs = check_alloc((size_t)n * DELTA_SIG_LEN);
    uint8_t *zeros = check_alloc(size);
    struct delta_index *ix;
    uint64_t compared, dropped;
    struct found f;
    uint64_t j;

    memset(zeros, 0, size);
    CHECK_EQ_U64(rollsum_of(zeros, PS), 0);
    fill(sigs, (size_t)n * DELTA_SIG_LEN, 7);
    for (j = 0; j < n; j++)
        memset(sigs + j * DELTA_SIG_LEN, 0, 4);
    ix = index_of(sigs, n);
    delta_index_built(ix, &compared, &dropped);
    CHECK(compared <= n * DELTA_INDEX_MAX_PER_WEAK);
    CHECK_EQ_U64(dropped, n - DELTA_INDEX_MAX_PER_WEAK);
    search_file(ix, zeros, size, &f);
    check_bounds(&f, size, n);
    CHECK_EQ_U64(f.copied, 0);
    CHECK(f.gave_up);
    delta_index_free(ix);
    free(zeros);
    free(sigs);
}

/* A basis of zeros, honest and common (a sparse checkpoint): all its
 * pieces are one entry, and a file of zeros is found whole, even moved
 * by a few bytes, without a piece hashed for nothing. */
TEST(delta_work_zeros)
{
    const uint64_t n = 1024, size = n * PS + 1000;
    uint8_t *basis = check_alloc((size_t)(n * PS));
    uint8_t *file = check_alloc((size_t)size), *sigs;
    struct delta_index *ix;
    uint64_t compared, dropped;
    struct found f;

    memset(basis, 0, (size_t)(n * PS));
    sigs = sign_basis(basis, n);
    ix = index_of(sigs, n);
    delta_index_built(ix, &compared, &dropped);
    CHECK_EQ_U64(compared, n - 1);
    CHECK_EQ_U64(dropped, 0);
    fill(file, 1000, 3);
    memset(file + 1000, 0, (size_t)(n * PS));
    search_file(ix, file, size, &f);
    check_bounds(&f, size, n);
    CHECK_EQ_U64(f.copied, n * PS);
    CHECK_EQ_U64(f.work.missed, 0);
    CHECK(!f.gave_up);
    delta_index_free(ix);
    free(sigs);
    free(file);
    free(basis);
}

/* Real data that moved (bytes inserted and removed): every piece that
 * no edit touched is found, as before the bounds. */
TEST(delta_work_moved)
{
    const uint64_t n = 2048, bsize = n * PS;
    uint8_t *basis = check_alloc((size_t)bsize);
    uint8_t *file = check_alloc((size_t)bsize + 200), *sigs;
    struct delta_index *ix;
    uint64_t compared, dropped;
    struct found f;
    uint64_t size = 0, cut1 = (3u << 20) + 123, cut2 = 6u << 20;

    fill(basis, (size_t)bsize, 1);
    sigs = sign_basis(basis, n);
    ix = index_of(sigs, n);
    delta_index_built(ix, &compared, &dropped);
    CHECK_EQ_U64(dropped, 0);
    /* 100 new bytes, the basis to cut1, 1 new byte, the rest but 50
     * bytes at cut2. */
    fill(file, 100, 2);
    size = 100;
    memcpy(file + size, basis, (size_t)cut1);
    size += cut1;
    file[size++] = 0x5a;
    memcpy(file + size, basis + cut1, (size_t)(cut2 - cut1));
    size += cut2 - cut1;
    memcpy(file + size, basis + cut2 + 50, (size_t)(bsize - cut2 - 50));
    size += bsize - cut2 - 50;
    search_file(ix, file, size, &f);
    check_bounds(&f, size, n);
    CHECK(!f.gave_up);
    /* The pieces holding cut1 and cut2 are changed; all others found. */
    CHECK_EQ_U64(f.copied, bsize - 2 * PS);
    delta_index_free(ix);
    free(sigs);
    free(file);
    free(basis);
}

/* A piece crowded out of the table (more distinct pieces of its weak
 * sum than it holds, signatures no honest basis has) is still found
 * where the last match points: a file rewritten in place loses only the
 * pieces whose signatures were not its own. */
TEST(delta_work_crowded)
{
    const uint64_t n = 64, bsize = n * PS;
    uint8_t *basis = check_alloc((size_t)bsize), *sigs;
    struct delta_index *ix;
    uint64_t compared, dropped;
    struct found f;
    uint64_t j;

    fill(basis, (size_t)bsize, 5);
    sigs = sign_basis(basis, n);
    /* Pieces 0-9 claim piece 20's weak sum with other strong hashes:
     * with piece 20, 11 distinct pieces of one weak sum. */
    for (j = 0; j < 10; j++) {
        memcpy(sigs + j * DELTA_SIG_LEN, sigs + 20 * DELTA_SIG_LEN, 4);
        sigs[j * DELTA_SIG_LEN + 4] ^= 0xff;
    }
    ix = index_of(sigs, n);
    delta_index_built(ix, &compared, &dropped);
    CHECK_EQ_U64(dropped, 11 - DELTA_INDEX_MAX_PER_WEAK);
    search_file(ix, basis, bsize, &f);
    check_bounds(&f, bsize, n);
    CHECK_EQ_U64(f.copied, (n - 10) * PS);
    delta_index_free(ix);
    free(sigs);
    free(basis);
}
