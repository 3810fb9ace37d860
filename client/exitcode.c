#include "exitcode.h"

#include "../common/err.h"

int
exitcode_for(int code, enum xfer_side side)
{
    switch (code) {
    case FERRY_ERR_VERSION:
    case FERRY_ERR_AGENT:
        return EXIT_AGENT;
    case FERRY_ERR_HOSTKEY:
        return EXIT_HOSTKEY;
    case FERRY_ERR_AUTH:
        return EXIT_AUTH;
    case FERRY_ERR_CONNECT:
    case FERRY_ERR_CLOSED:
    case FERRY_ERR_TIMEOUT:
    case FERRY_ERR_SSH:
        return EXIT_CONNECT;
    case FERRY_ERR_HASH_MISMATCH:
        return EXIT_INTEGRITY;
    case FERRY_ERR_INTERRUPTED:
        return EXIT_INTERRUPTED;
    case FERRY_ERR_USAGE:
        return EXIT_USAGE;
    case FERRY_ERR_SHORT:
    case FERRY_ERR_TOO_LARGE:
    case FERRY_ERR_FORMAT:
    case FERRY_ERR_TRAILING:
    case FERRY_ERR_PROTOCOL:
    case FERRY_ERR_PEER:
    case FERRY_ERR_BAD_PATH:
        return EXIT_PROTOCOL;
    default:
        return side == SIDE_SOURCE ? EXIT_SOURCE : EXIT_DEST;
    }
}
