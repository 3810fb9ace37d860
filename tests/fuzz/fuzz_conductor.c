/* Fuzz target: the lines a box's swarm link says to the client (see
 * fuzz_conductor_one in fuzz_common.h). Seeds: tests/fuzz/corpus/conductor/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_conductor_one(data, size);
}
