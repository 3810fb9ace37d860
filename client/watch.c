#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/text.h"
#include "../engine/manifest.h"
#include "../engine/prune.h"
#include "../engine/xfer.h"
#include "../proto/msg.h"
#include "exitcode.h"
#include "mirror.h"
#include "output.h"
#include "space.h"

/* The runner */

static volatile sig_atomic_t watch_stop;

static void
watch_on_signal(int sig)
{
    (void)sig;
    watch_stop = 1;
}

/* Between pulls Ctrl-C ends the watch (a pull's own handling ends it in
 * a pull, and puts the default back after). */
static void
watch_catch(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = watch_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

struct watch {
    struct cli *cli;
    struct watch_table t;
    struct output out;
    struct xfer x;
    const char *dir;      /* the remote DIR, as written */
    const char *local;    /* LOCAL */
    int localfd;
    uint64_t npulled;
};

/* {"event":"watch","action":...,"path":...,"bytes":...} or a line. */
static void
watch_say(struct watch *w, const char *action, const struct watch_unit *u,
    const char *text)
{
    char esc[1024];
    struct buf jb;

    if (w->out.json) {
        buf_init(&jb, 1 << 14);
        output_json_end(&w->out, &jb, output_json_begin(&jb, "watch") ||
            output_json_str(&jb, "action", action) ||
            (u != NULL && output_json_str(&jb, "path", u->name)) ||
            (u != NULL && output_json_num(&jb, "bytes", u->size)) ||
            (text != NULL && output_json_str(&jb, "message", text)));
        return;
    }
    if (w->out.quiet && strcmp(action, "gave_up") != 0)
        return;
    fprintf(stderr, "ferry: watch: %s%s%s\n", u != NULL ?
        text_escape(u->name, strlen(u->name), esc, sizeof(esc)) : "",
        u != NULL && text != NULL ? ": " : "", text != NULL ? text : action);
}

/* "DIR/NAME" or "DIR/NAME/" (a directory's contents). */
static char *
watch_join(const char *dir, const char *name, int contents)
{
    size_t dl = strlen(dir);
    size_t n;
    char *p;

    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    n = dl + strlen(name) + 3;
    if ((p = xmalloc(n)) == NULL)
        return NULL;
    snprintf(p, n, "%.*s%s%s%s", (int)dl, dir, dl > 0 &&
        dir[dl - 1] != '/' ? "/" : "", name, contents ? "/" : "");
    return p;
}

/* Puts the staged directory in place of the unit's local copy, at once:
 * swapped with the old copy, which then goes. */
static int
watch_place_dir(struct watch *w, const char *staged, const char *name)
{
    if (renameat2(w->localfd, staged, w->localfd, name,
        RENAME_EXCHANGE) == 0)
        return prune_beneath(w->localfd, staged);
    if (errno != ENOENT)
        return -errno;
    return renameat(w->localfd, staged, w->localfd, name) == 0 ? 0 : -errno;
}

/* One unit, by a pull of its own. Returns its exit status. */
static int
watch_pull(struct watch *w, struct watch_unit *u)
{
    struct cli c = *w->cli;
    char *src = watch_join(w->dir, u->name, u->is_dir);
    char staged[PROTO_MAX_PATH + 32], *dst = NULL;
    char *rp[1], *lp[1];
    int code, r;

    snprintf(staged, sizeof(staged), ".%s.ferry-watch", u->name);
    dst = u->is_dir ? watch_join(w->local, staged, 0) :
        watch_join(w->local, "", 0);
    if (src == NULL || dst == NULL) {
        xfree(src);
        xfree(dst);
        return EXIT_DEST;
    }
    rp[0] = src;
    lp[0] = dst;
    c.remote.path = src;
    c.remote_paths = rp;
    c.nremote = 1;
    c.local_paths = lp;
    c.nlocal = 1;
    c.watch_s = 0;
    code = space_transfer(&c);
    watch_catch();
    if (code == EXIT_OK && u->is_dir &&
        (r = watch_place_dir(w, staged, u->name)) != 0) {
        watch_say(w, "error", u, ferry_strerror(r));
        code = EXIT_DEST;
    }
    xfree(src);
    xfree(dst);
    return code;
}

/* --keep N: the local copies of units beyond the N newest go (tmp: room
 * for every unit). */
static void
watch_keep(struct watch *w, struct watch_unit **tmp)
{
    size_t i, n = 0;
    struct stat st;
    int r;

    for (i = 0; i < w->t.n; i++) {
        struct watch_unit *u = &w->t.v[i];

        if (!u->is_marker && fstatat(w->localfd, u->name, &st,
            AT_SYMLINK_NOFOLLOW) == 0)
            tmp[n++] = u;
    }
    qsort(tmp, n, sizeof(*tmp), watch_unit_cmp);
    for (i = (size_t)w->cli->keep; i < n; i++) {
        if ((r = prune_beneath(w->localfd, tmp[i]->name)) != 0) {
            watch_say(w, "error", tmp[i], ferry_strerror(r));
            continue;
        }
        tmp[i]->pulled = 0;
        tmp[i]->here = 0;
        watch_say(w, "removed", tmp[i], "removed (--keep)");
    }
}

/* One look: list, then pull what is ready. 0, or the exit status that
 * ends the watch. */
static int
watch_once(struct watch *w)
{
    struct watch_unit **tmp;
    struct manifest m;
    char text[PROTO_MAX_PATH + 160];
    size_t n, i;
    int code, r;

    code = mirror_list(w->cli, w->dir, &m);
    watch_catch();
    if (code != EXIT_OK) {
        manifest_cleanup(&m);
        if (code == EXIT_INTERRUPTED || code == EXIT_USAGE)
            return code;
        snprintf(text, sizeof(text), "cannot list %s now (exit %d); "
            "looking again in %d s", w->dir, code, w->cli->watch_s);
        watch_say(w, "unreachable", NULL, text);
        return 0;
    }
    r = watch_look(&w->t, &m);
    manifest_cleanup(&m);
    if (r == FERRY_ERR_INTERRUPTED)
        return EXIT_INTERRUPTED;
    if (r != 0 || (tmp = xcalloc(2 * w->t.n + 1, sizeof(*tmp))) == NULL)
        return EXIT_DEST;
    n = watch_ready(&w->t, w->cli->keep, tmp);
    for (i = 0; i < n && !watch_stop; i++) {
        struct watch_unit *u = tmp[i];

        if ((code = watch_pull(w, u)) == EXIT_INTERRUPTED)
            break;
        if (code == EXIT_OK) {
            watch_pulled(u);
            w->npulled++;
            watch_say(w, "pulled", u, "pulled");
            if (w->cli->keep > 0)
                watch_keep(w, tmp + n);
            continue;
        }
        if (watch_failed(u)) {
            snprintf(text, sizeof(text), "failed %d times in a row, given "
                "up: does it change faster than it can be pulled? Write "
                "checkpoints under a new name and rename them, or use "
                "--ready-marker", WATCH_MAX_FAILURES);
            watch_say(w, "gave_up", u, text);
        }
    }
    xfree(tmp);
    return code == EXIT_INTERRUPTED ? code : 0;
}

int
watch_main(struct cli *cli)
{
    struct watch w;
    struct timespec nap = { 0, 100000000 };
    int code = 0, ticks;

    memset(&w, 0, sizeof(w));
    w.cli = cli;
    w.dir = cli->remote_paths[0];
    w.local = cli->local_paths[0];
    w.t.marker = cli->ready_marker;
    w.t.stop = &watch_stop;
    w.out.json = cli->json;
    w.out.quiet = cli->quiet;
    output_init(&w.out, &w.x);
    if (mkdir(w.local, 0777) != 0 && errno != EEXIST)
        return output_fatal_early(cli->json, cli->quiet, w.local, -errno,
            strerror(errno), EXIT_DEST);
    if ((w.localfd = open(w.local, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return output_fatal_early(cli->json, cli->quiet, w.local, -errno,
            strerror(errno), EXIT_DEST);
    watch_stop = 0;
    watch_catch();
    while (!watch_stop && code == 0) {
        code = watch_once(&w);
        for (ticks = 0; code == 0 && !watch_stop &&
            ticks < cli->watch_s * 10; ticks++)
            nanosleep(&nap, NULL);
    }
    close(w.localfd);
    watch_table_cleanup(&w.t);
    if (code != 0 && code != EXIT_INTERRUPTED)
        return code;
    output_fatal(&w.out, NULL, FERRY_ERR_INTERRUPTED, "watch: interrupted");
    return EXIT_INTERRUPTED;
}
