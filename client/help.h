/*
 * help.h: `ferry help [COMMAND]`, `ferry COMMAND --help`, and what ferry
 * says about the options people bring from rsync and scp.
 */
#ifndef FERRY_CLIENT_HELP_H
#define FERRY_CLIENT_HELP_H

#include <stdio.h>

/* Prints the help of one command ("push", "pull", "status", "clean",
 * "pack", "unpack") to f (NULL: only checks the name). Returns 0, or -1
 * for a command ferry does not have (nothing printed). */
int help_command(FILE *f, const char *cmd);

/*
 * What ferry does instead of an rsync or scp option it does not take
 * (arg as given, "--inplace" or "--append=x"): a sentence without
 * "ferry: ", or NULL for an option neither program has.
 */
const char *help_foreign_option(const char *arg);

/* Bits of the rsync options ferry takes but needs not (-a, -r, -P, ...),
 * for help_habits. */
#define HELP_HABIT_ARCHIVE (1u << 0)    /* -a, --archive */
#define HELP_HABIT_RECURSIVE (1u << 1)  /* -r, --recursive */
#define HELP_HABIT_PARTIAL (1u << 2)    /* -P, --partial */

/* The one line that explains them, for the options in habits (bits
 * above). */
void help_habits(FILE *f, unsigned habits);

#endif
