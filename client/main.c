/*
 * main.c: the ferry command: parses the command line and hands the
 * command to what runs it (pack, unpack, status of a local destination,
 * a dry run or mirror, or a transfer through run.h), on one box or, through
 * boxes.h, on each of many.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/version.h"
#include "../proto/msg.h"
#include "boxes.h"
#include "cli.h"
#include "exitcode.h"
#include "help.h"
#include "keeppush.h"
#include "mirror.h"
#include "output.h"
#include "pack.h"
#include "space.h"
#include "status.h"
#include "unpack.h"
#include "watch.h"

static const char *
main_command_name(enum cli_cmd cmd)
{
    switch (cmd) {
    case CMD_PUSH:
        return "push";
    case CMD_PULL:
        return "pull";
    case CMD_STATUS:
        return "status";
    case CMD_CLEAN:
        return "clean";
    default:
        return NULL;
    }
}

/* The command on one box (or none): also what each box of many runs. */
static int
main_one(const struct cli *cli)
{
    if (cli->cmd == CMD_STATUS || cli->cmd == CMD_CLEAN)
        return status_main(cli);
    if (cli->watch_s > 0)
        return watch_main(cli);
    if (cli->keep_volumes)
        return keeppush_main(cli);
    if (cli->dry_run || cli->delete)
        return mirror_main(cli);
    return space_transfer(cli, NULL);
}

int
main(int argc, char **argv)
{
    struct cli cli;
    int i, r, code;

    log_init("ferry", LOG_WARN);
    signal(SIGPIPE, SIG_IGN);
    /* A file size limit must fail the write (EFBIG), not kill us. */
    signal(SIGXFSZ, SIG_IGN);
    /* Options may come before the command: ferry -v pack ... */
    cli_command_first(argc, argv);
    /* Local commands with options of their own (pack.h, unpack.h). */
    if (argc >= 2 && (strcmp(argv[1], "pack") == 0 ||
        strcmp(argv[1], "unpack") == 0)) {
        for (i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
                return help_command(stdout, argv[1]) == 0 ? EXIT_OK :
                    EXIT_USAGE;
        output_command(argv[1]);
        return argv[1][0] == 'p' ? pack_main(argc, argv) :
            unpack_main(argc, argv);
    }
    r = cli_parse(&cli, argc, argv);
    output_command(main_command_name(cli.cmd));
    if (r != 0) {
        if (r == FERRY_ERR_NOMEM)
            snprintf(cli.err, sizeof(cli.err), "%s", ferry_strerror(r));
        if (cli.err[0] == '\0')
            return EXIT_USAGE;      /* the usage was printed */
        return output_fatal_early(cli.json, 0, NULL, FERRY_ERR_USAGE,
            cli.err, EXIT_USAGE);
    }
    switch (cli.cmd) {
    case CMD_VERSION:
        printf("ferry %s (protocol %d-%d)\n", FERRY_VERSION,
            PROTO_VERSION_MIN, PROTO_VERSION_MAX);
        return EXIT_OK;
    case CMD_HELP:
        if (cli.help_topic == NULL || help_command(stdout,
            cli.help_topic) != 0)
            help_usage(stdout);
        return EXIT_OK;
    default:
        break;
    }
    if (cli.habits != 0 && !cli.quiet && !cli.json)
        help_habits(stderr, cli.habits);
    if (cli.quiet)
        log_set_level(LOG_ERROR);
    if (cli.verbose >= 1)
        log_set_level(cli.verbose >= 2 ? LOG_DEBUG : LOG_INFO);
    if (cli.nboxes > 0)
        code = boxes_main(&cli, main_one);
    else
        code = main_one(&cli);
    cli_cleanup(&cli);
    return code;
}
