/*
 * delta_rate: how fast one core signs a basis and searches a file, next
 * to XXH3 alone, in memory (no disk), for docs/BENCHMARKS.md.
 *
 *     delta_rate [MiB]     (default 512)
 *
 * Prints one line per measure, in MB/s of file data:
 *   xxh3      hash_block over 1 MiB blocks
 *   sign      the receiver's signatures (weak sum and XXH3 per piece)
 *   same      the sender's search of a file equal to its basis (every
 *             piece found where expected: the in-place checkpoint case)
 *   shifted   the same with 4 KiB inserted at the start (one roll to
 *             find the shift, then expected pieces)
 *   rolling   a file with nothing in common with its basis (a rolling
 *             checksum at every byte: the worst case, which --delta=auto
 *             stops after 16 blocks)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/hash.h"
#include "../../common/rollsum.h"
#include "../../engine/delta/delta_index.h"
#include "../../engine/delta/delta_match.h"

#define BLOCK (1u << 20)

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t i;

    for (i = 0; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(p + i, &x, 8);
    }
}

/* The index of basis, as a sender would build it from DELTA_SIGS. */
static struct delta_index *
index_of(const uint8_t *basis, uint64_t size, double *secs)
{
    uint32_t ps = delta_index_sig_block(size, BLOCK);
    uint64_t n = msg_delta_nsigs(size, ps), j;
    uint8_t *sigs = malloc(n * DELTA_SIG_LEN);
    struct msg_delta_sigs m;
    struct delta_index *ix;
    double t0 = now();

    for (j = 0; j < n; j++) {
        uint64_t off = j * ps, len = size - off < ps ? size - off : ps;
        uint32_t w = rollsum_of(basis + off, len);
        struct hash128 h;
        uint8_t *q = sigs + j * DELTA_SIG_LEN;

        hash_block(basis + off, len, &h);
        q[0] = (uint8_t)(w >> 24);
        q[1] = (uint8_t)(w >> 16);
        q[2] = (uint8_t)(w >> 8);
        q[3] = (uint8_t)w;
        memcpy(q + 4, h.b, HASH_LEN);
    }
    *secs = now() - t0;
    ix = delta_index_new(size, ps);
    for (j = 0; j < n; j += m.count) {
        memset(&m, 0, sizeof(m));
        m.basis_size = size;
        m.sig_block = ps;
        m.first = j;
        m.count = n - j < PROTO_MAX_SIGS ? (uint32_t)(n - j) : PROTO_MAX_SIGS;
        m.sigs = sigs + j * DELTA_SIG_LEN;
        if (delta_index_add(ix, &m) != 0)
            abort();
    }
    free(sigs);
    return ix;
}

/* Searches every block of file against ix; returns the seconds and the
 * bytes found in the basis. */
static double
search(const struct delta_index *ix, const uint8_t *file, uint64_t size,
    uint64_t *copied)
{
    static struct delta_result res;
    struct delta_carry c;
    uint64_t k, a, e;
    double t0 = now();

    memset(&c, 0, sizeof(c));
    *copied = 0;
    for (k = 0; k * BLOCK < size; k++) {
        a = k * BLOCK;
        e = size - a < BLOCK ? size : a + BLOCK;
        delta_match_block(ix, file, 0, size, 1, k, a, e, &c, &res);
        *copied += res.copied;
    }
    return now() - t0;
}

static void
say(const char *what, uint64_t bytes, double secs, const char *note)
{
    printf("%-8s %8.0f MB/s  %s\n", what, (double)bytes / secs / 1e6, note);
}

int
main(int argc, char **argv)
{
    uint64_t size = (uint64_t)(argc > 1 ? atoi(argv[1]) : 512) << 20;
    uint8_t *basis = malloc(size), *file = malloc(size + 4096);
    struct delta_index *ix;
    struct hash128 h;
    uint64_t k, copied;
    double t0, secs;
    char note[96];

    if (basis == NULL || file == NULL)
        return 1;
    fill(basis, size, 1);
    t0 = now();
    for (k = 0; k < size; k += BLOCK)
        hash_block(basis + k, BLOCK, &h);
    say("xxh3", size, now() - t0, "hash_block, 1 MiB blocks");
    ix = index_of(basis, size, &secs);
    snprintf(note, sizeof(note), "pieces of %u KiB",
        delta_index_piece(ix) >> 10);
    say("sign", size, secs, note);
    memcpy(file, basis, size);
    secs = search(ix, file, size, &copied);
    snprintf(note, sizeof(note), "%.1f%% found", 100.0 * copied / size);
    say("same", size, secs, note);
    fill(file, 4096, 2);
    memcpy(file + 4096, basis, size);
    secs = search(ix, file, size + 4096, &copied);
    snprintf(note, sizeof(note), "%.1f%% found", 100.0 * copied / size);
    say("shifted", size + 4096, secs, note);
    fill(file, size, 3);
    secs = search(ix, file, size / 8, &copied);
    snprintf(note, sizeof(note), "%.1f%% found", 100.0 * copied / size);
    say("rolling", size / 8, secs, note);
    delta_index_free(ix);
    free(basis);
    free(file);
    return 0;
}
