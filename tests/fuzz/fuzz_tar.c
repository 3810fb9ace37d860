/* Fuzz target: an uncompressed tar stream through proto/tar.h's reader
 * (see fuzz_tar in fuzz_common.h). Seeds: tests/fuzz/corpus/tar/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_tar_one(data, size);
}
