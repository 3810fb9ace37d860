/*
 * output_summary.c: the summary a run ends with (output_summary,
 * output.h): its NDJSON event, or the line on stderr that says what was
 * sent, what made it up (new, resumed, reused, holes, tensors) and how
 * fast. Apart from output.c, which prints the events and the progress
 * line while the run goes on.
 */
#include "output_int.h"

#include <inttypes.h>
#include <stdio.h>

#include "../common/buf.h"
#include "../common/text.h"

/* "57.2 MiB: 28.1 MiB new, 29.1 MiB resumed" when more than new data
 * made up the files; "57.2 MiB" else. */
static void
output_breakdown(struct xfer_stats *st, char *out, size_t n)
{
    static const char *names[] = { "new", "resumed", "reused", "holes" };
    uint64_t v[4];
    char num[32];
    size_t o, i;
    int parts = 0;

    v[0] = xfer_get(&st->bytes_literal);
    v[1] = xfer_get(&st->resumed_bytes);
    v[2] = xfer_get(&st->bytes_matched);
    v[3] = xfer_get(&st->bytes_sparse);
    text_bytes((double)xfer_get(&st->bytes_payload), num, sizeof(num));
    o = (size_t)snprintf(out, n, "%s", num);
    if (v[1] == 0 && v[2] == 0 && v[3] == 0)
        return;
    for (i = 0; i < 4 && o < n; i++) {
        if (v[i] == 0)
            continue;
        text_bytes((double)v[i], num, sizeof(num));
        o += (size_t)snprintf(out + o, n - o, "%s%s %s", parts++ ? ", " :
            ": ", num, names[i]);
    }
}

/* "; 64.0 MiB as tensor differences, 33.2 MiB saved" when checkpoints
 * went so, "" else. */
static void
output_tensors(struct xfer_stats *st, char *out, size_t n)
{
    uint64_t bytes = xfer_get(&st->bytes_tensor);
    char num[32], saved[32];

    out[0] = '\0';
    if (bytes == 0)
        return;
    text_bytes((double)bytes, num, sizeof(num));
    text_bytes((double)xfer_get(&st->bytes_tensor_saved), saved,
        sizeof(saved));
    snprintf(out, n, "; %s as tensor differences, %s saved", num, saved);
}

/* "; 29.1 MiB kept checked in 0.1 s" after a resume, "" else. */
static void
output_readback(struct xfer_stats *st, char *out, size_t n)
{
    uint64_t bytes = xfer_get(&st->readback_bytes);
    char num[32];

    out[0] = '\0';
    if (bytes == 0)
        return;
    text_bytes((double)bytes, num, sizeof(num));
    snprintf(out, n, "; %s kept checked in %.1f s", num,
        (double)xfer_get(&st->readback_ns) / 1e9);
}

/* The files a run left unfinished (output_summary's rule). */
static uint64_t output_files_left(struct xfer *x);

void
output_summary(struct output *o, const struct output_summary *s)
{
    struct xfer_stats *st = &o->x->st;
    double elapsed = (double)(output_now_ns() - o->t0_ns) / 1e9;
    double moving = s->moving_s > 0 ? s->moving_s : elapsed;
    uint64_t payload = xfer_get(&st->bytes_payload);
    uint64_t moved = xfer_get(&st->bytes_moved);
    uint64_t left = output_files_left(o->x);
    char tmp[64], a[160], rate[32], check[64], lefts[48], tens[96];
    char adopted[48];
    struct buf b;
    int r;

    if (output_box_tally != NULL) {
        struct output_tally *t = output_box_tally;

        t->exit_code = s->exit_code;
        t->files_total = xfer_get(&st->files_total);
        t->files_sent = xfer_get(&st->files_sent);
        t->files_skipped = xfer_get(&st->files_skipped);
        t->files_failed = xfer_get(&st->files_failed);
        t->files_left = left;
        t->bytes_total = xfer_get(&st->bytes_total);
        t->bytes_payload = payload;
        t->bytes_wire = s->bytes_wire_out;
        t->bytes_wire_in = s->bytes_wire_in;
        snprintf(t->error, sizeof(t->error), "%s",
            s->error != NULL ? s->error : "");
        t->set = 1;
    }
    if (o->json) {
        buf_init(&b, 1 << 16);
        r = output_json_begin(&b, "summary");
        if (r == 0)
            r = output_json_num(&b, "schema", OUTPUT_SCHEMA);
        if (r == 0)
            r = output_json_raw(&b, "ok", s->ok ? "true" : "false");
        if (r == 0)
            r = output_json_num(&b, "exit_code", (uint64_t)s->exit_code);
        if (r == 0)
            r = output_json_num(&b, "files_total", xfer_get(&st->files_total));
        if (r == 0)
            r = output_json_num(&b, "files_sent", xfer_get(&st->files_sent));
        if (r == 0)
            r = output_json_num(&b, "files_skipped",
                xfer_get(&st->files_skipped));
        if (r == 0)
            r = output_json_num(&b, "files_adopted",
                xfer_get(&st->files_adopted));
        if (r == 0)
            r = output_json_num(&b, "files_failed",
                xfer_get(&st->files_failed));
        if (r == 0)
            r = output_json_num(&b, "files_left", left);
        if (r == 0)
            r = output_json_num(&b, "bytes_total", xfer_get(&st->bytes_total));
        if (r == 0)
            r = output_json_num(&b, "bytes_payload", payload);
        if (r == 0)
            r = output_json_num(&b, "bytes_literal",
                xfer_get(&st->bytes_literal));
        if (r == 0)
            r = output_json_num(&b, "bytes_matched",
                xfer_get(&st->bytes_matched));
        if (r == 0)
            r = output_json_num(&b, "bytes_sparse",
                xfer_get(&st->bytes_sparse));
        if (r == 0)
            r = output_json_num(&b, "bytes_compressed_saved",
                xfer_get(&st->bytes_compressed));
        if (r == 0)
            r = output_json_num(&b, "bytes_tensor",
                xfer_get(&st->bytes_tensor));
        if (r == 0)
            r = output_json_num(&b, "bytes_tensor_saved",
                xfer_get(&st->bytes_tensor_saved));
        if (r == 0)
            r = output_json_num(&b, "bytes_wire", s->bytes_wire_out);
        if (r == 0)
            r = output_json_num(&b, "bytes_wire_in", s->bytes_wire_in);
        if (r == 0)
            r = output_json_num(&b, "streams", s->streams);
        snprintf(tmp, sizeof(tmp), "%.3f", elapsed);
        if (r == 0)
            r = output_json_raw(&b, "elapsed_s", tmp);
        snprintf(tmp, sizeof(tmp), "%.3f", moving);
        if (r == 0)
            r = output_json_raw(&b, "moving_s", tmp);
        if (r == 0)
            r = output_json_num(&b, "bytes_moved", moved);
        if (r == 0)
            r = output_json_num(&b, "resumed_bytes",
                xfer_get(&st->resumed_bytes));
        if (r == 0)
            r = output_json_num(&b, "readback_bytes",
                xfer_get(&st->readback_bytes));
        snprintf(tmp, sizeof(tmp), "%.3f",
            (double)xfer_get(&st->readback_ns) / 1e9);
        if (r == 0)
            r = output_json_raw(&b, "readback_s", tmp);
        if (r == 0)
            r = output_json_num(&b, "retries", (uint64_t)s->retries);
        if (r == 0 && o->x->kept_known)
            r = output_json_num(&b, "kept_files", o->x->kept_files);
        if (r == 0 && o->x->kept_known)
            r = output_json_num(&b, "kept_bytes", o->x->kept_bytes);
        if (r == 0)
            r = output_json_str(&b, "error", s->error);
        if (r == 0)
            r = output_json_command(&b);
        output_json_end(o, &b, r);
    }
    /* A failure before the transfer got under way is its error line
     * alone. */
    if (o->quiet || o->json || (!s->ok && !s->began))
        return;
    output_breakdown(st, a, sizeof(a));
    output_readback(st, check, sizeof(check));
    output_tensors(st, tens, sizeof(tens));
    text_bytes(moving > 0 ? (double)moved / moving : 0, rate,
        sizeof(rate));
    lefts[0] = adopted[0] = '\0';
    if (left > 0)
        snprintf(lefts, sizeof(lefts), ", %" PRIu64 " left", left);
    if (xfer_get(&st->files_adopted) > 0)
        snprintf(adopted, sizeof(adopted), " (%" PRIu64 " adopted)",
            xfer_get(&st->files_adopted));
    pthread_mutex_lock(&o->lock);
    output_clear_line(o);
    fprintf(stderr, "ferry: %" PRIu64 " %s (%s), %" PRIu64 " up to date%s, "
        "%" PRIu64 " failed%s, in %.1f s (%s/s)%s%s\n",
        xfer_get(&st->files_sent), o->pull ? "received" : "sent", a,
        xfer_get(&st->files_skipped), adopted, xfer_get(&st->files_failed),
        lefts, elapsed, rate, tens, check);
    pthread_mutex_unlock(&o->lock);
}

static uint64_t
output_files_left(struct xfer *x)
{
    struct xfer_stats *st = &x->st;
    uint64_t done = xfer_get(&st->files_sent) +
        xfer_get(&st->files_skipped) + xfer_get(&st->files_failed);
    uint64_t total = xfer_get(&st->files_total);

    return total > done ? total - done : 0;
}
