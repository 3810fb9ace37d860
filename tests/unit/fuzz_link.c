/*
 * fuzz_link.c: compiles the fuzz helpers into the unit test binary.
 *
 * The unit tests replay the fuzz corpus and run their mutation tests
 * through the same fuzz_decode as the fuzz targets, so there is one copy of
 * the invariants. The Makefile builds the unit binary from the sources
 * in tests/unit/ only; including the two sources here links them in
 * without a second copy of their code or a change to that rule.
 */
#include "../fuzz/fuzz_archive.c"
#include "../fuzz/fuzz_client.c"
#include "../fuzz/fuzz_common.c"
#include "../fuzz/fuzz_conductor_lines.c"
#include "../fuzz/fuzz_deltamsg.c"
#include "../fuzz/fuzz_pieces.c"
#include "../fuzz/fuzz_seed.c"
