#include "msg_space.h"

#include "msg_int.h"

static int
space_check(const void *v)
{
    const struct msg_space *m = v;

    return m->avail > m->size ? FERRY_ERR_FORMAT : 0;
}

MSG_CODEC(space, MSG_SPACE, space_check, 0,
    MSG_U64(space, avail), MSG_U64(space, size), MSG_U64(space, offered))
