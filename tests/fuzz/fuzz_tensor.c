/* Fuzz target: one block rebuilt from tensor pieces against a basis
 * (proto/tensor_piece.h; see fuzz_tensor in fuzz_common.h). Seeds:
 * tests/fuzz/corpus/tensor/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_tensor_one(data, size);
}
