/* Fuzz target: the delta messages, DELTA_SIGS and DELTA (see
 * fuzz_delta_one). Seeds: tests/fuzz/corpus/delta/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_delta_one(data, size);
}
