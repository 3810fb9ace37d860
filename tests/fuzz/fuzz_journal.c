/* Fuzz target: a resume journal file, a header then records (see
 * fuzz_journal in fuzz_common.h). Seeds: tests/fuzz/corpus/journal/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_journal_one(data, size);
}
