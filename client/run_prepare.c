/*
 * run_prepare.c: a run before its first attempt (run_int.h): a push's
 * scan, in the pool beside stream 0's login, and its sending side; a
 * pull's receiving side (side.h).
 */
#include "run_int.h"

#include <stdio.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/fsx.h"
#include "../engine/dest.h"
#include "../engine/incoming.h"
#include "../engine/delta/keptsig.h"
#include "../engine/volume/volrecv.h"
#include "../engine/volume/volsend.h"
#include "exitcode.h"
#include "space.h"

/* A pull accepts only what its sources name (see receiver_expect_tops):
 * the names, into rn->tops (none when a "dir/" source may hold any). */
static int
run_expect_tops(struct run *rn)
{
    const struct run_opts *o = &rn->opts;
    char **names;
    int i, r = 0, n = 0;

    if ((names = xcalloc((size_t)o->nsources + 1, sizeof(*names))) == NULL)
        return FERRY_ERR_NOMEM;
    for (i = 0; i < o->nsources; i++) {
        if ((r = manifest_top_name(o->sources[i], &names[n])) != 0)
            break;
        if (names[n] == NULL) {
            /* A "dir/" source may hold any name: no restriction. */
            n = -1;
            break;
        }
        n++;
    }
    rn->tops = names;
    rn->ntops = r == 0 && n > 0 ? (size_t)n : 0;
    return r;
}

/* The agent's BUSY of a push: another transfer holds the destination,
 * and this one waits for it (said once a run). */
static void
run_busy(void *ctx, const char *holder)
{
    struct run *rn = ctx;

    if (rn->busy_said++ == 0)
        output_busy(&rn->out, rn->out.dest_prefix, holder, 1);
}

/* The "scanning" line: first drawn for a scan still going on this long
 * after the wait began, then redrawn this often. */
#define RUN_SCAN_FIRST_MS 500
#define RUN_SCAN_TICK_MS 250

static char *
run_join_prefix(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *p = xmalloc(n);

    if (p != NULL)
        snprintf(p, n, "%s%s%s", a, b, c);
    return p;
}

/* Scans a push's sources into rn->scan_mf; on an error, scan_failed is
 * the index of the path that met it. */
static void
run_scan(uv_work_t *req)
{
    struct run *rn = req->data;
    const struct cli *cli = rn->cli;
    int i;

    /* The scan adds the ignore files' rules: to the run's copy. */
    rn->scan_err = filter_copy(&rn->scan_filter, &cli->filter);
    manifest_set_filter(rn->scan_mf, &rn->scan_filter, 1);
    manifest_set_hash_hint(rn->scan_mf, cli->hash_hint, cli->hash_hint_ctx);
    manifest_set_stop(rn->scan_mf, &rn->scan_stop);
    for (i = 0; rn->scan_err == 0 && i < cli->nlocal; i++)
        if ((rn->scan_err = manifest_scan(rn->scan_mf,
            cli->local_paths[i])) != 0) {
            rn->scan_failed = i;
            break;
        }
    manifest_live_end(rn->scan_mf, rn->scan_err);
    atomic_store(&rn->scan_finished, 1);
}

static void
run_scan_done(uv_work_t *req, int status)
{
    struct run *rn = req->data;

    if (status != 0)   /* cancelled before it ran */
        rn->scan_err = FERRY_ERR_INTERRUPTED;
    rn->scanning = 0;
}

/* Starts the scan of a push in the pool: a big tree is walked while
 * stream 0 connects and logs in (several round trips on a long link). */
void
run_scan_start(struct run *rn, uv_loop_t *loop, struct manifest *mf)
{
    rn->scan_mf = mf;
    rn->scan_req.data = rn;
    rn->scanning = 1;
    /* Before the thread runs: a plan made at once knows to wait. */
    manifest_live_begin(mf);
    if (uv_queue_work(loop, &rn->scan_req, run_scan, run_scan_done) != 0) {
        rn->scanning = 0;
        run_scan(&rn->scan_req);
    }
}

static void
run_scan_tick(uv_timer_t *t)
{
    struct run *rn = t->data;

    output_scanning(&rn->out, manifest_avail(rn->scan_mf),
        manifest_avail_bytes(rn->scan_mf));
}

/* Waits for the scan, running the loop so that Ctrl-C stops it; a tree
 * that takes a while says how far the scan got. */
void
run_scan_wait(struct run *rn, uv_loop_t *loop)
{
    /* The loop's clock may be old (a blocking login ran since): a timer
     * set from it would fire at once, for a scan long done. */
    uv_update_time(loop);
    if (rn->scanning && !atomic_load(&rn->scan_finished) &&
        !rn->scan_timer_on && rn->out.progress && !rn->out.quiet &&
        uv_timer_init(loop, &rn->scan_timer) == 0) {
        rn->scan_timer.data = rn;
        rn->scan_timer_on = 1;
        uv_timer_start(&rn->scan_timer, run_scan_tick, RUN_SCAN_FIRST_MS,
            RUN_SCAN_TICK_MS);
    }
    while (rn->scanning)
        uv_run(loop, UV_RUN_ONCE);
    if (rn->scan_timer_on) {
        uv_timer_stop(&rn->scan_timer);
        uv_close((uv_handle_t *)&rn->scan_timer, NULL);
        rn->scan_timer_on = 0;
        output_stop(&rn->out);
    }
}

/* A push sends while its scan goes on (plan_new_live) where no check
 * needs the tree's totals first: not with the space check (--force
 * skips it), and not when the scan is done anyway. */
int
run_scan_live(const struct run *rn)
{
    return rn->op == NULL && rn->cli->cmd == CMD_PUSH && rn->space == NULL &&
        rn->scanning && !atomic_load(&rn->scan_finished);
}

/* Scans the sources of a push or prepares the receiver of a pull. Returns
 * an exit status, after reporting why (msg: for the summary), or -1 to go
 * on. */
int
run_prepare(struct run *rn, struct manifest *mf, char **dest_prefix,
    char **source_prefix, char *msg, size_t msglen)
{
    const struct cli *cli = rn->cli;
    /* Stream 0's login (libssh2: a push) tells a short link, where auto
     * keeps zstd's fastest level; a pull's agent adapts (volsend.h). */
    const struct run_opts *o = &rn->opts;
    struct volsend_opts vo = { o->pack_threshold, cli->volume_size,
        cli->vol_compress, cli->vol_level, cli->remote.local ||
        attempt_env_link(&rn->env) == 0, 0 };
    struct incoming *in;
    char holder[PROTO_MAX_HOLDER + 1];
    size_t i;
    int r;

    if (rn->op != NULL) {
        rn->so.op = rn->op->op;
        rn->so.flags = rn->op->flags;
        rn->so.paths = rn->op->paths;
        rn->so.npaths = rn->op->npaths;
        rn->so.filter = rn->op->filter;
        rn->role_step = rn->op->role_step;
        rn->role = rn->op->role;
        if (rn->op->run_x != NULL)
            *rn->op->run_x = &rn->x;
        return -1;
    }
    if (cli->cmd == CMD_PUSH) {
        const char *dest = cli->remote.path;
        size_t dl = strlen(dest);

        /* The scan ran while stream 0 connected (run_scan_start), and
         * may go on (rn->live_scan). */
        if (!rn->live_scan && (r = rn->scan_err) != 0) {
            snprintf(msg, msglen, "%s", ferry_strerror(r));
            output_fatal(&rn->out, r == FERRY_ERR_INTERRUPTED ? NULL :
                cli->local_paths[rn->scan_failed], r, msg);
            return r == FERRY_ERR_INTERRUPTED ? EXIT_INTERRUPTED :
                EXIT_SOURCE;
        }
        if (!rn->live_scan && mf->n == 0 && manifest_notices(mf) > 0) {
            /* Nothing can be sent: say why without connecting (the
             * notices are the error lines and events). */
            for (i = 0; i < manifest_notices(mf); i++) {
                const struct mnotice *no = manifest_notice_at(mf, i);

                xfer_problem(&rn->x, SIDE_SOURCE, no->path, no->code,
                    no->text);
            }
            snprintf(msg, msglen, "no source could be read");
            return EXIT_SOURCE;
        }
        if (dl > 0 && dest[dl - 1] == '/')
            rn->so.flags |= OPEN_F_DEST_DIR;
        if (cli->mkpath)
            rn->so.flags |= OPEN_F_MKPATH;
        if (cli->delete)
            rn->so.flags |= OPEN_F_REPLACE_DIRS;
        rn->so.op = OPEN_PUSH;
        rn->push_paths[0] = cli->remote.path;
        rn->so.npaths = 1;
        if (o->basis != NULL) {
            rn->push_paths[rn->so.npaths++] = o->basis;
            rn->so.flags |= OPEN_F_BASIS_FILE;
        }
        if (cli->adopt != NULL) {
            rn->push_paths[rn->so.npaths++] = cli->adopt;
            rn->so.flags |= OPEN_F_ADOPT;
            if (cli->adopt_keep)
                rn->so.flags |= OPEN_F_ADOPT_KEEP;
        }
        rn->so.paths = rn->push_paths;
        *dest_prefix = run_join_prefix(run_host(rn), ":", dest);
        if (rn->space != NULL)
            rn->space->need = mf->bytes;
        if ((rn->side = side_new_send(mf, rn->live_scan, cli->block_size,
            rn->so.flags, &vo, &rn->x)) == NULL)
            goto nomem;
        /* The scan is the plan's now (and whole: no live scan with the
         * check). */
        if (rn->space != NULL)
            rn->space->src = plan_manifest(side_plan(rn->side));
    } else {
        const char *dest = o->dest;
        size_t dl = strlen(dest);

        if (dl > 0 && dest[dl - 1] == '/')
            rn->so.flags |= OPEN_F_DEST_DIR;
        rn->so.op = OPEN_PULL;
        /* Rules travel only when there are some: an agent without
         * filters can still serve (it reads no ignore file then). */
        rn->so.filter = cli->filter.n > 0 ? &cli->filter : NULL;
        rn->so.paths = (const char *const *)o->sources;
        rn->so.npaths = (uint16_t)o->nsources;
        *source_prefix = run_join_prefix(run_host(rn), ":", "");
        *dest_prefix = run_join_prefix(dest, "", "");
        /* The receiver is here: it waits for the lock of another
         * transfer into the same destination (dest.h). */
        if (dest_busy(dest, holder, sizeof(holder)) && rn->busy_said++ == 0)
            output_busy(&rn->out, dest, holder, 1);
        rn->out.pull = 1;
        rn->out.source_paths = o->sources;
        rn->out.nsource_paths = o->nsources;
        /* --mkpath and --delete's replacing are this side's: the agent
         * is not told of them. */
        if ((rn->side = side_new_recv(dest, rn->so.flags | (cli->mkpath ?
            OPEN_F_MKPATH : 0) | (cli->delete ? OPEN_F_REPLACE_DIRS : 0),
            rn->so.transfer_id, cli->block_size, &rn->x)) == NULL ||
            run_expect_tops(rn) != 0 || (o->basis != NULL &&
            dest_set_basis(side_dest(rn->side), o->basis) != 0) ||
            (o->basis_dir != NULL &&
            dest_set_basis_dir(side_dest(rn->side), o->basis_dir) != 0))
            goto nomem;
        in = side_incoming(rn->side);
        side_set_tops(rn->side, (const char *const *)rn->tops, rn->ntops);
        side_set_tell_lost(rn->side);
        volrecv_set_prefs(incoming_volrecv(in), &vo);
        rn->kept = keptsig_store_default();
        incoming_set_keptsig(in, rn->kept);
        incoming_set_whole_formats(in, o->whole_formats);
    }
    if (rn->space != NULL) {
        rn->so.space = space_on_report;
        rn->so.space_ctx = rn->space;
    }
    rn->so.busy = run_busy;
    rn->so.busy_ctx = rn;
    /* output puts one '/' between a prefix and a path. */
    rn->out.dest_prefix = *dest_prefix;
    rn->out.source_prefix = *source_prefix;
    return -1;
nomem:
    snprintf(msg, msglen, "%s", ferry_strerror(FERRY_ERR_NOMEM));
    output_fatal(&rn->out, NULL, FERRY_ERR_NOMEM, msg);
    return cli->cmd == CMD_PUSH ? EXIT_SOURCE : EXIT_DEST;
}

