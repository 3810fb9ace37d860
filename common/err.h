/*
 * err.h: error codes shared by every layer.
 *
 * Fallible functions return 0 on success and a negative value on failure:
 * either -errno (captured right after the failing syscall) or one of the
 * FERRY_ERR_* codes below, which all sit at -1000 and lower so the two
 * ranges never collide.
 */
#ifndef FERRY_COMMON_ERR_H
#define FERRY_COMMON_ERR_H

#define FERRY_WUR __attribute__((warn_unused_result))
#define FERRY_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* X(name, value, message) */
#define FERRY_ERR_LIST(X)                                                    \
    X(SHORT, -1000, "message truncated")                                    \
    X(TOO_LARGE, -1001, "length exceeds limit")                             \
    X(FORMAT, -1002, "malformed message")                                   \
    X(TRAILING, -1003, "trailing bytes in message")                         \
    X(PROTOCOL, -1004, "protocol violation")                                \
    X(NOMEM, -1005, "out of memory")                                        \
    X(HASH_MISMATCH, -1006, "content hash mismatch")                        \
    X(BAD_PATH, -1007, "unsafe or invalid path")                            \
    X(VERSION, -1008, "incompatible protocol version")                      \
    X(CHANGED, -1009, "file changed while being read")                      \
    X(PEER, -1010, "peer reported an error")                                \
    X(CLOSED, -1011, "connection closed")                                   \
    X(INTERRUPTED, -1012, "interrupted")                                    \
    X(UNSUPPORTED, -1013, "not supported")                                  \
    X(HOSTKEY, -1014, "host key verification failed")                       \
    X(AUTH, -1015, "authentication failed")                                 \
    X(CONNECT, -1016, "connection failed")                                  \
    X(NOT_DIR, -1017, "not a directory")                                    \
    X(EXISTS, -1018, "exists with another type")                            \
    X(TIMEOUT, -1019, "timed out")                                          \
    X(AGENT, -1020, "agent failed")                                         \
    X(USAGE, -1021, "invalid argument")                                     \
    X(STATE, -1022, "invalid resume state")                                 \
    X(SSH, -1023, "ssh error")                                              \
    X(TORN, -1024, "cut short: its writer is not done with it")

enum ferry_err {
#define FERRY_ERR_ENUM(name, value, msg) FERRY_ERR_##name = (value),
    FERRY_ERR_LIST(FERRY_ERR_ENUM)
#undef FERRY_ERR_ENUM
};

/*
 * Returns a static description of r, which may be -errno or FERRY_ERR_*.
 * Never returns NULL; unknown codes get a generic text.
 */
const char *ferry_strerror(int r);

/* 1 if r is one of the FERRY_ERR_* codes. */
int ferry_err_known(int r);

/* Returns the symbolic name ("HASH_MISMATCH", "ENOENT") for JSON output. */
const char *ferry_errname(int r);

#endif
