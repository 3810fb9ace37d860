#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/clock.h"
#include "../common/text.h"
#include "../engine/dest.h"
#include "../engine/probe.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "../proto/msg_space.h"
#include "exitcode.h"
#include "run.h"
#include "space.h"

void
status_init(struct status *s, struct xfer *x)
{
    memset(s, 0, sizeof(*s));
    s->x = x;
}

int
status_want_probe(struct status *s)
{
    if (s->probe == NULL && (s->probe = probe_new(clock_ns)) == NULL)
        return FERRY_ERR_NOMEM;
    return 0;
}

int
status_restart(struct status *s)
{
    int probe = s->probe != NULL;
    struct xfer *x = s->x;

    status_cleanup(s);
    status_init(s, x);
    return probe ? status_want_probe(s) : 0;
}

void
status_cleanup(struct status *s)
{
    probe_free(s->probe);
    partial_list_free(s->v, s->n);
    memset(s, 0, sizeof(*s));
}

static int
status_add(struct status *s, const struct msg_partial *m)
{
    if (s->n >= STATUS_MAX_PARTIALS)
        return xfer_fail(s->x, FERRY_ERR_TOO_LARGE, "the agent lists more "
            "than %u unfinished files", STATUS_MAX_PARTIALS);
    return partial_list_add(&s->v, &s->n, &s->cap, m->path.p, m->path.len,
        m->size, m->done, m->age_s);
}

int
status_step(void *role, struct conn_step *st)
{
    struct status *s = role;
    struct msg_partial m;
    struct frame f;
    size_t off = 0;
    int r;

    while ((r = conn_step_frame(st, &off, &f)) > 0) {
        if (f.type == MSG_ERROR)
            return xfer_peer_error(s->x, f.payload, f.len);
        if (s->listed) {
            if ((r = probe_on_frame(s->probe, &f)) != 0)
                return r;
            continue;
        }
        switch (f.type) {
        case MSG_PARTIAL:
            if ((r = msg_partial_decode(f.payload, f.len, &m)) != 0 ||
                (r = status_add(s, &m)) != 0)
                return r;
            break;
        case MSG_BUSY: {
            struct msg_busy b;

            if (!(s->x->caps & PROTO_CAP_BUSY) || s->busy)
                return FERRY_ERR_PROTOCOL;
            if ((r = msg_busy_decode(f.payload, f.len, &b)) != 0)
                return r;
            s->busy = 1;
            snprintf(s->holder, sizeof(s->holder), "%.*s",
                (int)b.holder.len, b.holder.p);
            break;
        }
        case MSG_SPACE: {
            struct msg_space sp;

            if ((r = msg_space_decode(f.payload, f.len, &sp)) != 0)
                return r;
            s->have_space = 1;
            s->avail = sp.avail;
            s->size = sp.size;
            break;
        }
        case MSG_END:
            if ((r = msg_end_decode(f.payload, f.len)) != 0)
                return r;
            if (s->probe != NULL && (s->x->caps & PROTO_CAP_PROBE)) {
                s->listed = 1;  /* the probe follows */
                break;
            }
            st->done = 1;
            return off == st->in_len ? 0 : FERRY_ERR_PROTOCOL;
        default:
            return FERRY_ERR_PROTOCOL;
        }
    }
    if (r < 0)
        return r;
    if (s->listed && (r = probe_send(s->probe, st)) != 0)
        return r;
    return st->eof && !st->done ? FERRY_ERR_CLOSED : 0;
}

static void
status_age(int64_t s, char *out, size_t n)
{
    if (s < 120)
        snprintf(out, n, "%" PRId64 " s ago", s);
    else if (s < 7200)
        snprintf(out, n, "%" PRId64 " min ago", s / 60);
    else if (s < 172800)
        snprintf(out, n, "%" PRId64 " h ago", s / 3600);
    else
        snprintf(out, n, "%" PRId64 " days ago", s / 86400);
}

/* The agent, and what the probe found: a line each, or "agent" and
 * "probe" events. */
static void
status_print_probe(const struct status *s, struct output *o,
    const char *where)
{
    const struct probe_result *pr = s->probe != NULL &&
        probe_done(s->probe) ? probe_result(s->probe) : NULL;
    uint64_t down = 0, up = 0;
    char ew[1024], ea[256], d[32], u[32];
    struct buf jb;

    if (pr != NULL) {
        down = (uint64_t)((double)pr->down_bytes * 1e9 /
            (double)pr->down_ns);
        up = (uint64_t)((double)pr->up_bytes * 1e9 / (double)pr->up_ns);
    }
    if (o->json) {
        if (s->agent[0] != '\0') {
            buf_init(&jb, 1 << 12);
            output_json_end(o, &jb, output_json_begin(&jb, "agent") ||
                output_json_str(&jb, "path", where) ||
                output_json_str(&jb, "software", s->agent));
        }
        if (pr != NULL) {
            buf_init(&jb, 1 << 12);
            output_json_end(o, &jb, output_json_begin(&jb, "probe") ||
                output_json_str(&jb, "path", where) ||
                output_json_num(&jb, "rtt_us", pr->rtt_ns / 1000) ||
                output_json_num(&jb, "down_bytes", pr->down_bytes) ||
                output_json_num(&jb, "down_bytes_per_s", down) ||
                output_json_num(&jb, "up_bytes", pr->up_bytes) ||
                output_json_num(&jb, "up_bytes_per_s", up));
        }
        return;
    }
    if (o->quiet)
        return;
    text_escape(where, strlen(where), ew, sizeof(ew));
    if (s->agent[0] != '\0')
        fprintf(stderr, "ferry: %s: agent %s\n", ew, text_escape(s->agent,
            strlen(s->agent), ea, sizeof(ea)));
    if (pr != NULL) {
        text_bytes((double)down, d, sizeof(d));
        text_bytes((double)up, u, sizeof(u));
        fprintf(stderr, "ferry: %s: round trip %.1f ms; one stream moves "
            "%s/s down, %s/s up\n", ew, (double)pr->rtt_ns / 1e6, d, u);
    }
}

void
status_print(const struct status *s, struct output *o, const char *where,
    int cleaned)
{
    char a[32], b[32], age[32], esc[1024], ew[1024];
    char busy[PROTO_MAX_HOLDER + 64], eb[4 * sizeof(busy)];
    uint64_t kept = 0;
    size_t i;

    for (i = 0; i < s->n; i++) {
        const struct partial_info *p = &s->v[i];

        kept += p->done;
        if (o->json) {
            struct buf jb;

            snprintf(age, sizeof(age), "%" PRId64, p->age_s);
            buf_init(&jb, 1 << 16);
            output_json_end(o, &jb, output_json_begin(&jb, "partial") ||
                output_json_str(&jb, "path", p->path) ||
                output_json_num(&jb, "size", p->size) ||
                output_json_num(&jb, "done", p->done) ||
                output_json_raw(&jb, "age_s", age) ||
                output_json_raw(&jb, "removed", cleaned ? "true" : "false"));
            continue;
        }
        text_bytes((double)p->done, a, sizeof(a));
        text_bytes((double)p->size, b, sizeof(b));
        status_age(p->age_s, age, sizeof(age));
        printf("%s%10s / %-10s %3.0f%%  %-12s  %s\n", cleaned ? "removed " :
            "", a, b, p->size ? 100.0 * (double)p->done / (double)p->size :
            100.0, age, text_escape(p->path, strlen(p->path), esc,
            sizeof(esc)));
    }
    if (s->have_space && o->json) {
        struct buf jb;

        buf_init(&jb, 1 << 14);
        output_json_end(o, &jb, output_json_begin(&jb, "space") ||
            output_json_str(&jb, "path", where) ||
            output_json_num(&jb, "avail", s->avail) ||
            output_json_num(&jb, "size", s->size));
    } else if (s->have_space && !o->quiet) {
        text_bytes((double)s->avail, a, sizeof(a));
        text_bytes((double)s->size, b, sizeof(b));
        fprintf(stderr, "ferry: %s: %s free of %s\n", text_escape(where,
            strlen(where), ew, sizeof(ew)), a, b);
    }
    /* For the summary: what is left there for a resume. */
    o->x->kept_known = 1;
    o->x->kept_files = cleaned ? 0 : s->n;
    o->x->kept_bytes = cleaned ? 0 : kept;
    status_print_probe(s, o, where);
    if (s->busy)
        output_busy(o, where, s->holder, 0);
    if (o->json || o->quiet)
        return;
    /* A transfer running there is at work on them; else running the
     * same one again resumes them. */
    if (s->busy)
        snprintf(busy, sizeof(busy), "; a transfer is running there (%s)",
            s->holder[0] ? s->holder : "holder unknown");
    fprintf(stderr, "ferry: %s: %zu unfinished file%s%s%s\n",
        text_escape(where, strlen(where), ew, sizeof(ew)), s->n,
        s->n == 1 ? "" : "s", cleaned ? " removed" : s->busy ? "" : s->n ?
        "; the same transfer run again resumes them" : "",
        s->busy ? text_escape(busy, strlen(busy), eb, sizeof(eb)) : "");
}

void
status_op(struct status *s, const struct cli *cli, uint8_t op,
    struct run_op *ro)
{
    memset(ro, 0, sizeof(*ro));
    ro->op = op;
    ro->paths = (const char *const *)&cli->remote.path;
    ro->npaths = 1;
    ro->role_step = status_step;
    ro->role = s;
    ro->run_x = &s->x;
}

/* `ferry status` and `ferry clean` of a remote destination: the role
 * first, so that the run's role is the command's too. */
struct status_cmd {
    struct status st;
    const struct cli *cli;
};

static int
status_cmd_restart(void *role)
{
    return status_restart(&((struct status_cmd *)role)->st);
}

static void
status_cmd_done(void *role, struct output *out, const char *agent)
{
    struct status_cmd *sc = role;
    const struct cli *cli = sc->cli;
    char where[1200];

    snprintf(where, sizeof(where), "%s:%s", cli->remote.local ? "local" :
        cli->remote.host, cli->remote.path);
    snprintf(sc->st.agent, sizeof(sc->st.agent), "%s", agent);
    status_print(&sc->st, out, where, cli->cmd == CMD_CLEAN);
}

/* status/clean of a local destination: no agent needed. */
static int
status_run_local(const struct cli *cli)
{
    const char *dest = cli->local_paths[0];
    struct output_summary sum;
    struct output out;
    struct status st;
    struct xfer x;
    int r;

    memset(&x, 0, sizeof(x));
    memset(&out, 0, sizeof(out));
    out.json = cli->json;
    out.quiet = cli->quiet;
    output_init(&out, &x);
    status_init(&st, &x);
    st.have_space = space_local(dest, &st.avail, &st.size) == 0;
    if (cli->cmd == CMD_STATUS)
        st.busy = dest_busy(dest, st.holder, sizeof(st.holder));
    if ((r = dest_state_list(dest, cli->cmd == CMD_CLEAN, &st.v,
        &st.n)) != 0)
        return output_fatal_early(cli->json, cli->quiet, dest, r,
            dest_state_strerror(r), EXIT_DEST);
    status_print(&st, &out, dest, cli->cmd == CMD_CLEAN);
    status_cleanup(&st);
    if (out.json) {
        memset(&sum, 0, sizeof(sum));
        sum.ok = 1;
        output_summary(&out, &sum);
    }
    return EXIT_OK;
}

int
status_main(const struct cli *cli)
{
    struct status_cmd sc;
    struct run_op ro;
    int code;

    if (!cli->has_remote)
        return status_run_local(cli);
    sc.cli = cli;
    status_init(&sc.st, NULL);
    status_op(&sc.st, cli, cli->cmd == CMD_STATUS ? OPEN_STATUS : OPEN_CLEAN,
        &ro);
    /* status also measures the link (clean has no use for it). */
    if (cli->cmd == CMD_STATUS && status_want_probe(&sc.st) != 0)
        return output_fatal_early(cli->json, cli->quiet, NULL,
            FERRY_ERR_NOMEM, ferry_strerror(FERRY_ERR_NOMEM), EXIT_DEST);
    ro.command = 1;
    ro.restart = status_cmd_restart;
    ro.done = status_cmd_done;
    code = run_command(cli, &ro);
    status_cleanup(&sc.st);
    return code;
}
