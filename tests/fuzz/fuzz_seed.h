/*
 * fuzz_seed.h: a few valid messages of every type, and resume journals.
 *
 * They seed the fuzz corpus (gen_corpus.c writes them to
 * tests/fuzz/corpus/), and the unit tests mutate and encode them with
 * allocation failures. Together they cover each type's edge values: empty
 * and longest strings, every kind, action and flag, the largest numbers.
 */
#ifndef FERRY_TESTS_FUZZ_FUZZ_SEED_H
#define FERRY_TESTS_FUZZ_FUZZ_SEED_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/buf.h"

/* Number of seeds of a message type; 0 for types that do not exist. */
size_t fuzz_seed_count(uint8_t type);

/* Appends seed i (< fuzz_seed_count(type)) of the type to b as one frame.
 * Returns 0, the encoder's error, or FERRY_ERR_USAGE for no such seed. */
int fuzz_seed(uint8_t type, size_t i, struct buf *b) FERRY_WUR;

/* The corpus file name of seed i of the type: "seed-file_end-1". */
#define FUZZ_SEED_NAME_MAX 64
void fuzz_seed_name(uint8_t type, size_t i, char out[FUZZ_SEED_NAME_MAX]);

/*
 * Seeds of the journal target: whole resume journals (proto/journal.h), a
 * header alone, a header and records, a torn last record, the longest
 * path and edge values. fuzz_journal_seed appends seed i (< the count) to
 * b; the name is its corpus file name, "seed-journal-torn".
 */
size_t fuzz_journal_seed_count(void);
int fuzz_journal_seed(size_t i, struct buf *b) FERRY_WUR;
void fuzz_journal_seed_name(size_t i, char out[FUZZ_SEED_NAME_MAX]);

/*
 * Seeds of the rvmsg target: the agents' rendezvous datagrams
 * (proto/rvmsg.h), a JOIN and a STOP, of the shortest and longest scope
 * and bytes. Named "seed-rvmsg-<i>".
 */
size_t fuzz_rvmsg_seed_count(void);
int fuzz_rvmsg_seed(size_t i, struct buf *b) FERRY_WUR;
void fuzz_rvmsg_seed_name(size_t i, char out[FUZZ_SEED_NAME_MAX]);

/*
 * Seeds of the tensor target: blocks of tensor pieces (proto/
 * tensor_piece.h) against the fuzz basis, in the target's input form (the
 * block's length, then the pieces): each mode and width, leads, several
 * pieces in one block, a piece with a zstd plane. Named
 * "seed-tensor-<i>".
 */
size_t fuzz_tensor_seed_count(void);
int fuzz_tensor_seed(size_t i, struct buf *b) FERRY_WUR;
void fuzz_tensor_seed_name(size_t i, char out[FUZZ_SEED_NAME_MAX]);

/*
 * Seeds of the vmanifest target: volume set manifests
 * (proto/vmanifest.h) as `ferry pack` writes them, with names that are
 * not UTF-8 or all escapes and the longest, and lines with keys the
 * reader skips. Named "seed-vmanifest-<i>".
 */
size_t fuzz_vman_seed_count(void);
int fuzz_vman_seed(size_t i, struct buf *b) FERRY_WUR;
void fuzz_vman_seed_name(size_t i, char out[FUZZ_SEED_NAME_MAX]);

/* The targets above, whose seeds are whole inputs (at most FUZZ_SEED_MAX
 * bytes each), in corpus/<target>/; the list ends with { NULL }. */
#define FUZZ_SEED_MAX (8u << 20)
struct fuzz_seeds {
    const char *target;
    size_t (*count)(void);
    int (*seed)(size_t i, struct buf *b);
    void (*name)(size_t i, char out[FUZZ_SEED_NAME_MAX]);
};
extern const struct fuzz_seeds fuzz_input_seeds[];

#endif
