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

/* Drops later copies of a source from v (n entries: "a//b" is "a/b");
 * frees them when owned. Returns the new count. */
int cli_dedupe(char **v, int n, int owned);

/* cli_words.c */

/* The words of a push (sources, then its destinations: every remote word
 * at the end) and of a pull (remote sources on one host or many, then
 * DEST), into c: remote for one box, boxes for many. words is kept as
 * c->local_paths. Returns 0 or FERRY_ERR_USAGE with c->err. */
int cli_words_push(struct cli *c, char **words, int nwords);
int cli_words_pull(struct cli *c, char **words, int nwords);
void cli_boxes_cleanup(struct cli *c);

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
