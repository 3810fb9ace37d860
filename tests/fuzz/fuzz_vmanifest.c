/* Fuzz target: a volume set's manifest, read line by line
 * (proto/vmanifest.h; see fuzz_vman in fuzz_common.h). Seeds:
 * tests/fuzz/corpus/vmanifest/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_vman_one(data, size);
}
