/* Fuzz target: a message type byte, then a payload for that type's decoder
 * (see fuzz_msg_one). Seeds: tests/fuzz/corpus/msg/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_msg_one(data, size);
}
