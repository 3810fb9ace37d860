#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../common/alloc.h"
#include "../common/text.h"
#include "../engine/dest.h"
#include "../proto/frame.h"
#include "../proto/msg.h"
#include "../proto/msg_space.h"
#include "exitcode.h"
#include "space.h"

void
status_init(struct status *s, struct xfer *x)
{
    memset(s, 0, sizeof(*s));
    s->x = x;
}

void
status_cleanup(struct status *s)
{
    partial_list_free(s->v, s->n);
    memset(s, 0, sizeof(*s));
}

static int
status_add(struct status *s, const struct msg_partial *m)
{
    struct partial_info *nv;

    if ((nv = xgrow(s->v, s->n, &s->cap, sizeof(*nv), 16)) == NULL)
        return FERRY_ERR_NOMEM;
    s->v = nv;
    nv = &s->v[s->n];
    if ((nv->path = xstrndup(m->path.p, m->path.len)) == NULL)
        return FERRY_ERR_NOMEM;
    nv->size = m->size;
    nv->done = m->done;
    nv->age_s = m->age_s;
    s->n++;
    return 0;
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
        switch (f.type) {
        case MSG_PARTIAL:
            if ((r = msg_partial_decode(f.payload, f.len, &m)) != 0 ||
                (r = status_add(s, &m)) != 0)
                return r;
            break;
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
            st->done = 1;
            return off == st->in_len ? 0 : FERRY_ERR_PROTOCOL;
        case MSG_ERROR:
            return xfer_peer_error(s->x, f.payload, f.len);
        default:
            return FERRY_ERR_PROTOCOL;
        }
    }
    if (r < 0)
        return r;
    return st->eof ? FERRY_ERR_CLOSED : 0;
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

void
status_print(const struct status *s, struct output *o, const char *where,
    int cleaned)
{
    char a[32], b[32], age[32], esc[1024], ew[1024];
    size_t i;

    for (i = 0; i < s->n; i++) {
        const struct partial_info *p = &s->v[i];

        if (o->json) {
            struct buf jb;
            char tail[160];
            int n = snprintf(tail, sizeof(tail), ",\"size\":%" PRIu64
                ",\"done\":%" PRIu64 ",\"age_s\":%" PRId64
                ",\"removed\":%s}\n", p->size, p->done, p->age_s,
                cleaned ? "true" : "false");

            /* One whole line or none. */
            buf_init(&jb, 1 << 16);
            if (buf_put(&jb, "{\"event\":\"partial\",\"path\":", 26) == 0 &&
                text_json_string(&jb, p->path, strlen(p->path)) == 0 &&
                buf_put(&jb, tail, (size_t)n) == 0)
                fwrite(buf_ptr(&jb), 1, buf_used(&jb), stdout);
            buf_cleanup(&jb);
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
    if (!o->json && !o->quiet)
        fprintf(stderr, "ferry: %s: %zu unfinished file%s%s\n",
            text_escape(where, strlen(where), ew, sizeof(ew)), s->n,
            s->n == 1 ? "" : "s", cleaned ? " removed" : s->n ?
            "; the same transfer run again resumes them" : "");
}

/* status/clean of a local destination: no agent needed. */
int
status_run_local(struct cli *cli)
{
    const char *dest = cli->local_paths[0];
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
    if ((r = dest_state_list(dest, cli->cmd == CMD_CLEAN, &st.v,
        &st.n)) != 0)
        return output_fatal_early(cli->json, cli->quiet, dest, r,
            dest_state_strerror(r), r == -ENOENT || r == -ENOTDIR ?
            EXIT_USAGE : EXIT_DEST);
    status_print(&st, &out, dest, cli->cmd == CMD_CLEAN);
    status_cleanup(&st);
    return EXIT_OK;
}
