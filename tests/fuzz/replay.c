/*
 * replay.c: runs a fuzz target without libFuzzer (after zstd's
 * tests/fuzz/regression_driver.c).
 *
 * Linked with one fuzz_<target>.c, it feeds every file or directory named
 * on the command line to LLVMFuzzerTestOneInput, so the corpus and any
 * crash file replay with any compiler, e.g. under the asan variant:
 *
 *     build/asan/tests/fuzz/replay_msg tests/fuzz/corpus/msg crash-1234
 */
#include <stdio.h>

#include "fuzz_common.h"

int
main(int argc, char **argv)
{
    size_t count = 0;
    int i, r;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    for (i = 1; i < argc; i++) {
        if ((r = fuzz_replay(argv[i], LLVMFuzzerTestOneInput, &count)) != 0) {
            fprintf(stderr, "%s: %s: %s\n", argv[0], argv[i],
                ferry_strerror(r));
            return 1;
        }
    }
    printf("%s: %zu inputs replayed\n", argv[0], count);
    return 0;
}
