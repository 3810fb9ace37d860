/* Fuzz target: a known_hosts file (see fuzz_known_hosts in fuzz_common.h). Seeds: tests/fuzz/corpus/known_hosts/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_known_hosts_one(data, size);
}
