#include "err.h"

#include <errno.h>
#include <string.h>

const char *
ferry_strerror(int r)
{
    switch (r) {
#define FERRY_ERR_CASE(name, value, msg) case value: return msg;
    FERRY_ERR_LIST(FERRY_ERR_CASE)
#undef FERRY_ERR_CASE
    default:
        break;
    }
    if (r < 0 && r > -4096)
        return strerror(-r);
    return "unknown error";
}

const char *
ferry_errname(int r)
{
    switch (r) {
#define FERRY_ERR_NAME(name, value, msg) case value: return #name;
    FERRY_ERR_LIST(FERRY_ERR_NAME)
#undef FERRY_ERR_NAME
    case -ENOENT: return "ENOENT";
    case -EACCES: return "EACCES";
    case -EPERM: return "EPERM";
    case -ENOSPC: return "ENOSPC";
    case -EDQUOT: return "EDQUOT";
    case -EISDIR: return "EISDIR";
    case -ENOTDIR: return "ENOTDIR";
    case -ELOOP: return "ELOOP";
    case -EIO: return "EIO";
    case -EROFS: return "EROFS";
    case -EEXIST: return "EEXIST";
    case -ENAMETOOLONG: return "ENAMETOOLONG";
    case -EPIPE: return "EPIPE";
    default: return r == 0 ? "OK" : "ERROR";
    }
}

int
ferry_err_known(int r)
{
    switch (r) {
#define FERRY_ERR_KNOWN(name, value, msg) case value: return 1;
    FERRY_ERR_LIST(FERRY_ERR_KNOWN)
#undef FERRY_ERR_KNOWN
    default:
        return 0;
    }
}
