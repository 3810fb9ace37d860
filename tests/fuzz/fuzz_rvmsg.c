/* Fuzz target: one rendezvous datagram between agents of a box
 * (proto/rvmsg.h; see fuzz_rvmsg in fuzz_common.h). Seeds:
 * tests/fuzz/corpus/rvmsg/. */
#include "fuzz_common.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_rvmsg_one(data, size);
}
