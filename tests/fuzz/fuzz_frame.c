/* Fuzz target: a byte stream cut into frames, each payload decoded by its
 * type (see fuzz_frame_one). Seeds: tests/fuzz/corpus/frame/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_frame_one(data, size);
}
