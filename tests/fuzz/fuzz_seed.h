/*
 * fuzz_seed.h: a few valid messages of every type.
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

#endif
