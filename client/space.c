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

void
space_check_init(struct space_check *sc, const struct cli *cli,
    const struct run_opts *o, space_compare_fn *compare)
{
    memset(sc, 0, sizeof(*sc));
    sc->cli = cli;
    if (o != NULL)
        sc->opts = *o;
    else
        run_opts_of(cli, &sc->opts);
    sc->compare = compare != NULL ? compare : space_compare_trees;
}

int
space_compare_trees(const struct space_check *sc, uint64_t *need)
{
    return mirror_space_need(sc->cli, &sc->opts, sc->src, need);
}

int
space_on_report(void *ctx, uint64_t avail, uint64_t size, uint64_t offered)
{
    struct space_check *sc = ctx;
    uint64_t need;
    int code;

    /* A reconnect: the run's own writes since its check took the room
     * that check found. */
    if (sc->checked || sc->cli->force)
        return 0;
    sc->checked = 1;
    if (sc->cli->cmd == CMD_PULL) {
        sc->need = offered;
        if (space_local(sc->opts.dest, &avail, &size) != 0)
            return 0;   /* nothing to measure: no check */
    }
    sc->avail = avail;
    sc->size = size;
    if (size == 0 || space_fits(sc->need, avail, size, sc->cli->margin))
        return 0;
    /* Every file offered does not fit; those already there need no
     * room. The session waits on the comparison (its first attempt, so
     * nothing of this run is under way yet). */
    sc->compared = 1;
    atomic_store(&sc->comparing, 1);
    code = sc->compare(sc, &need);
    atomic_store(&sc->comparing, 0);
    if (code != EXIT_OK) {
        sc->stop = 1;
        sc->code = code;
        return -ENOSPC;
    }
    sc->need = need;
    if (space_fits(need, avail, size, sc->cli->margin))
        return 0;
    sc->stop = 1;
    sc->code = EXIT_DEST;
    return -ENOSPC;
}

int
space_transfer(const struct cli *cli, const struct run_opts *o)
{
    struct space_check sc;
    char a[32], b[32], c[32], where[4200], msg[4600];
    int code;

    /* --force: no check, and a push sends while its scan goes on. */
    if (cli->force)
        return run_transfer(cli, o, NULL);
    space_check_init(&sc, cli, o, NULL);
    code = run_transfer(cli, &sc.opts, &sc);
    if (!sc.stop || sc.code != EXIT_DEST)
        return sc.stop ? sc.code : code;
    if (cli->cmd == CMD_PUSH)
        snprintf(where, sizeof(where), "%s:%s", cli->remote.local ? "local" :
            cli->remote.host, cli->remote.path);
    else
        snprintf(where, sizeof(where), "%s", sc.opts.dest);
    text_bytes((double)sc.need, a, sizeof(a));
    text_bytes((double)sc.avail, b, sizeof(b));
    text_bytes((double)sc.size, c, sizeof(c));
    snprintf(msg, sizeof(msg), "not enough space: %s to write, %s free of "
        "%s there, and ferry keeps %u%% free (--margin PCT to change it, "
        "--force to go on)", a, b, c, cli->margin);
    return output_fatal_early(cli->json, cli->quiet, where, -ENOSPC, msg,
        EXIT_DEST);
}
