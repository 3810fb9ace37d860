#include "space.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "../common/text.h"
#include "exitcode.h"
#include "mirror.h"
#include "output.h"
#include "run.h"

int
space_local(const char *path, uint64_t *avail, uint64_t *size)
{
    char buf[4096], *slash;
    struct statvfs v;

    snprintf(buf, sizeof(buf), "%s", path[0] != '\0' ? path : ".");
    while (statvfs(buf, &v) != 0) {
        if ((slash = strrchr(buf, '/')) == NULL) {
            if (statvfs(".", &v) != 0)
                return -errno;
            break;
        }
        if (slash == buf)
            slash[1] = '\0';
        else
            *slash = '\0';
    }
    *size = (uint64_t)v.f_blocks * v.f_frsize;
    *avail = (uint64_t)v.f_bavail * v.f_frsize;
    if (*avail > *size)
        *avail = *size;
    return 0;
}

int
space_on_report(void *ctx, uint64_t avail, uint64_t size, uint64_t offered)
{
    struct space_check *sc = ctx;
    int r;

    /* A reconnect: the run's own writes since its check took the room
     * that check found. */
    if (sc->passed)
        return 0;
    if (sc->cli->cmd == CMD_PULL) {
        sc->need = offered;
        if ((r = space_local(sc->cli->local_paths[0], &avail, &size)) != 0)
            return 0;   /* nothing to measure: no check */
    }
    sc->avail = avail;
    sc->size = size;
    if (size == 0 || space_fits(sc->need, avail, size, sc->cli->margin)) {
        sc->passed = 1;
        return 0;
    }
    sc->short_ = 1;
    return -ENOSPC;
}

int
space_transfer(struct cli *cli)
{
    struct space_check sc;
    char a[32], b[32], c[32], where[4200], msg[4600];
    uint64_t need;
    int code;

    memset(&sc, 0, sizeof(sc));
    sc.cli = cli;
    code = run_transfer(cli, cli->force ? NULL : &sc);
    if (!sc.short_)
        return code;
    /* The offered files do not fit; those already there need no room. */
    if ((code = mirror_space_need(cli, &need)) != EXIT_OK)
        return code;
    if (space_fits(need, sc.avail, sc.size, cli->margin)) {
        cli->force = 1;
        return run_transfer(cli, NULL);
    }
    if (cli->cmd == CMD_PUSH)
        snprintf(where, sizeof(where), "%s:%s", cli->remote.local ? "local" :
            cli->remote.host, cli->remote.path);
    else
        snprintf(where, sizeof(where), "%s", cli->local_paths[0]);
    text_bytes((double)need, a, sizeof(a));
    text_bytes((double)sc.avail, b, sizeof(b));
    text_bytes((double)sc.size, c, sizeof(c));
    snprintf(msg, sizeof(msg), "not enough space: %s to write, %s free of "
        "%s there, and ferry keeps %u%% free (--margin PCT to change it, "
        "--force to go on)", a, b, c, cli->margin);
    return output_fatal_early(cli->json, cli->quiet, where, -ENOSPC, msg,
        EXIT_DEST);
}
