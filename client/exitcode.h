/*
 * exitcode.h: ferry's exit statuses, for every command. Keep in step with
 * README.md ("Exit status").
 */
#ifndef FERRY_CLIENT_EXITCODE_H
#define FERRY_CLIENT_EXITCODE_H

#include "../engine/xfer.h"

enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,
    EXIT_SOURCE = 2,
    EXIT_DEST = 3,
    EXIT_PROTOCOL = 4,
    EXIT_CONNECT = 5,
    EXIT_AUTH = 6,
    EXIT_HOSTKEY = 7,
    EXIT_AGENT = 8,
    EXIT_INTEGRITY = 9,
    EXIT_BOXES = 10,        /* one or more of many boxes failed (boxes.h) */
    EXIT_INTERRUPTED = 130
};

/* The exit status for an error code: the side it happened on (a
 * transfer's source or destination) decides for errors of files. */
int exitcode_for(int code, enum xfer_side side);

#endif
