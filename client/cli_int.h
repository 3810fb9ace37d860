/*
 * cli_int.h: what the pieces of the command line's parser share
 * (private to client/cli*.c; the interface is cli.h). cli.c applies the
 * options; cli_expand.c splits the words of flags first.
 */
#ifndef FERRY_CLIENT_CLI_INT_H
#define FERRY_CLIENT_CLI_INT_H

#include "../common/err.h"
#include "cli.h"

/* cli.c */

/* Keeps the line that says what is wrong in c->err (main prints it, as
 * JSON too with --json). Returns FERRY_ERR_USAGE. */
int cli_fail(struct cli *c, const char *fmt, ...) FERRY_PRINTF(2, 3);

/* cli_expand.c */

/*
 * Splits the words of flags after the command into words of one flag
 * each: "-avzP" into "-a" "-v" "-z" "-P", "-avj4" into "-a" "-v" "-j4".
 * (*from)[k] is the word a flag came from when it has the meaning
 * letters have in a group (rsync's), else NULL. Words after "--" stay
 * as they are.
 */
int cli_expand(struct cli *c, int argc, char **argv, char ***out,
    const char ***from, int *outc);

#endif
