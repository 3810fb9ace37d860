/* Fuzz target: the output of `ssh -G` (see fuzz_sshcfg in fuzz_common.h). Seeds: tests/fuzz/corpus/sshcfg/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_sshcfg_one(data, size);
}
