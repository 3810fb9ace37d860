/* PROBE: u32 ask, str32 data. */
#include "msg.h"

#include "limits.h"
#include "msg_int.h"

/* TOO_LARGE, as the data past its bound is. */
static int
probe_check(const void *v)
{
    const struct msg_probe *m = v;

    return m->ask > PROTO_MAX_PROBE_ASK ? FERRY_ERR_TOO_LARGE : 0;
}

MSG_CODEC(probe, MSG_PROBE, probe_check, 1, MSG_U32(probe, ask),
    MSG_BLOB(probe, data, len, PROTO_MAX_PROBE_DATA))
