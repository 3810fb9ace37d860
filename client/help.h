/*
 * help.h: `ferry help [COMMAND]`, `ferry COMMAND --help`, and what ferry
 * says about the options people bring from rsync and scp.
 */
#ifndef FERRY_CLIENT_HELP_H
#define FERRY_CLIENT_HELP_H

#include <stdio.h>

/* Prints the help of one command ("push", "pull", "status", "clean",
 * "pack", "unpack") to f (NULL: only checks the name): what it does, then
 * its rows of the option table (cli_opts.h). Returns 0, or -1 for a
 * command ferry does not have (nothing printed). */
int help_command(FILE *f, const char *cmd);

/* Prints `ferry --help`: the commands, and the options most used. */
void help_usage(FILE *f);

/*
 * What ferry does instead of an rsync or scp option it does not take
 * (arg as given, "--inplace" or "--append=x"): a sentence without
 * "ferry: ", or NULL for an option neither program has.
 */
const char *help_foreign_option(const char *arg);

/* The one line that explains the rsync flags ferry took without needing
 * them, those in habits (CLI_OPTS_HABIT_* bits). */
void help_habits(FILE *f, unsigned habits);

#endif
