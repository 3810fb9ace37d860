#include "output.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../common/buf.h"
#include "../common/text.h"

#define OUTPUT_TICK_MS 250

static uint64_t
now_ns(void)
{
    return uv_hrtime();
}

/* Clears the progress line so a message can take its place. Caller holds
 * the lock. */
static void
output_clear_line(struct output *o)
{
    if (o->line_drawn) {
        fputs("\r\033[K", stderr);
        o->line_drawn = 0;
    }
}

/* Ends the JSON object built in b (r: how building it went), prints it
 * as one line when all went well, and frees b. A line is all or nothing:
 * a reader of the stream never sees half an object. */
static void
output_json_emit(struct output *o, struct buf *b, int r)
{
    if (r == 0 && buf_put(b, "}\n", 2) == 0) {
        pthread_mutex_lock(&o->lock);
        fwrite(buf_ptr(b), 1, buf_used(b), stdout);
        fflush(stdout);
        pthread_mutex_unlock(&o->lock);
    }
    buf_cleanup(b);
}

static int
json_kv_str(struct buf *b, const char *key, const char *val)
{
    int r;

    if ((r = buf_put_u8(b, ',')) != 0 ||
        (r = text_json_string(b, key, strlen(key))) != 0 ||
        (r = buf_put_u8(b, ':')) != 0)
        return r;
    return text_json_string(b, val, strlen(val));
}

static int
json_kv_num(struct buf *b, const char *key, uint64_t val)
{
    char tmp[64];
    int n = snprintf(tmp, sizeof(tmp), ",\"%s\":%" PRIu64, key, val);

    return buf_put(b, tmp, (size_t)n);
}

static int
json_begin(struct buf *b, const char *event)
{
    int r;

    if ((r = buf_put(b, "{\"event\":", 9)) != 0)
        return r;
    return text_json_string(b, event, strlen(event));
}

static void
output_file(void *ctx, const char *path, const char *action, uint64_t bytes)
{
    struct output *o = ctx;
    struct buf b;
    char esc[512];

    if (o->json) {
        buf_init(&b, 1 << 16);
        output_json_emit(o, &b, (json_begin(&b, "file") == 0 &&
            json_kv_str(&b, "path", path) == 0 &&
            json_kv_str(&b, "action", action) == 0 &&
            json_kv_num(&b, "bytes", bytes) == 0) ? 0 : -1);
    } else if (o->verbose >= 1 && strcmp(action, "sent") == 0) {
        pthread_mutex_lock(&o->lock);
        output_clear_line(o);
        fprintf(stderr, "%s\n", text_escape(path, strlen(path), esc,
            sizeof(esc)));
        pthread_mutex_unlock(&o->lock);
    }
}

static void
output_problem(void *ctx, enum xfer_side side, const char *path, int code,
    const char *text)
{
    struct output *o = ctx;
    const char *prefix = side == SIDE_SOURCE ? o->source_prefix :
        o->dest_prefix;
    char esc[1024], etext[1024];
    struct buf b;

    if (o->json) {
        buf_init(&b, 1 << 16);
        output_json_emit(o, &b, (json_begin(&b, code != 0 ? "error" :
            "warning") == 0 &&
            json_kv_str(&b, "side", side == SIDE_SOURCE ? "source" :
            "dest") == 0 &&
            json_kv_str(&b, "path", path) == 0 &&
            json_kv_str(&b, "code", ferry_errname(code)) == 0 &&
            json_kv_str(&b, "message", text) == 0) ? 0 : -1);
    }
    if (o->quiet && code == 0)
        return;
    pthread_mutex_lock(&o->lock);
    output_clear_line(o);
    fprintf(stderr, "ferry: %s%s: %s%s\n", prefix ? prefix : "",
        text_escape(path, strlen(path), esc, sizeof(esc)),
        text_escape(text, strlen(text), etext, sizeof(etext)),
        code == 0 ? " (warning)" : "");
    pthread_mutex_unlock(&o->lock);
}

void
output_init(struct output *o, struct xfer *x)
{
    o->x = x;
    pthread_mutex_init(&o->lock, NULL);
    o->t0_ns = now_ns();
    x->ev.file = output_file;
    x->ev.problem = output_problem;
    x->ev.ctx = o;
}

static void
fmt_duration(double s, char *out, size_t n)
{
    unsigned long t = s < 0 ? 0 : (unsigned long)(s + 0.5);

    if (t >= 3600)
        snprintf(out, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(out, n, "%lu:%02lu", t / 60, t % 60);
}

static void
output_draw(struct output *o)
{
    struct xfer_stats *st = &o->x->st;
    uint64_t done = xfer_get(&st->bytes_done);
    uint64_t total = xfer_get(&st->bytes_total);
    uint64_t files = xfer_get(&st->files_sent) + xfer_get(&st->files_skipped)
        + xfer_get(&st->files_failed);
    uint64_t ftotal = xfer_get(&st->files_total);
    uint64_t t = now_ns();
    char a[32], b[32], rate[32], eta[32];
    double dt = (double)(t - o->last_ns) / 1e9;

    if (dt > 0 && o->last_ns != 0) {
        double inst = (double)(done - o->last_bytes) / dt;

        /* Smooth over about two seconds of ticks. */
        o->rate = o->rate == 0 ? inst : 0.85 * o->rate + 0.15 * inst;
    }
    o->last_ns = t;
    o->last_bytes = done;
    if (done > total)
        total = done;
    if (files > ftotal)
        ftotal = files;
    text_bytes((double)done, a, sizeof(a));
    text_bytes((double)total, b, sizeof(b));
    text_bytes(o->rate, rate, sizeof(rate));
    if (o->rate > 1 && total > done)
        fmt_duration((double)(total - done) / o->rate, eta, sizeof(eta));
    else
        snprintf(eta, sizeof(eta), "--:--");
    pthread_mutex_lock(&o->lock);
    fprintf(stderr, "\r\033[K%s / %s  %3.0f%%  %" PRIu64 "/%" PRIu64
        " files  %s/s  ETA %s", a, b,
        total ? 100.0 * (double)done / (double)total : 100.0, files, ftotal,
        rate, eta);
    fflush(stderr);
    o->line_drawn = 1;
    pthread_mutex_unlock(&o->lock);
}

static void
output_tick(uv_timer_t *t)
{
    output_draw(t->data);
}

void
output_start(struct output *o, uv_loop_t *loop)
{
    if (!o->progress || o->quiet)
        return;
    uv_timer_init(loop, &o->timer);
    o->timer.data = o;
    uv_timer_start(&o->timer, output_tick, OUTPUT_TICK_MS, OUTPUT_TICK_MS);
    uv_unref((uv_handle_t *)&o->timer);
    o->timer_on = 1;
}

void
output_stop(struct output *o)
{
    if (o->timer_on) {
        uv_timer_stop(&o->timer);
        uv_close((uv_handle_t *)&o->timer, NULL);
        o->timer_on = 0;
        pthread_mutex_lock(&o->lock);
        output_clear_line(o);
        pthread_mutex_unlock(&o->lock);
    }
}

void
output_fatal(struct output *o, const char *where, int code, const char *text)
{
    char esc[1024], ew[1024];
    struct buf b;

    if (o->json) {
        buf_init(&b, 1 << 16);
        output_json_emit(o, &b, (json_begin(&b, "error") == 0 &&
            json_kv_str(&b, "path", where ? where : "") == 0 &&
            json_kv_str(&b, "code", ferry_errname(code)) == 0 &&
            json_kv_str(&b, "message", text) == 0 &&
            json_kv_num(&b, "fatal", 1) == 0) ? 0 : -1);
    }
    pthread_mutex_lock(&o->lock);
    output_clear_line(o);
    fprintf(stderr, "ferry: %s%s%s\n",
        where ? text_escape(where, strlen(where), ew, sizeof(ew)) : "",
        where ? ": " : "", text_escape(text, strlen(text), esc, sizeof(esc)));
    pthread_mutex_unlock(&o->lock);
}

void
output_note(struct output *o, const char *fmt, ...)
{
    va_list ap;

    if (o->quiet)
        return;
    pthread_mutex_lock(&o->lock);
    output_clear_line(o);
    fputs("ferry: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&o->lock);
}

void
output_retry(struct output *o, int attempt, int max, unsigned delay_s,
    const char *why)
{
    char esc[1024];
    struct buf b;

    if (o->json) {
        buf_init(&b, 1 << 16);
        output_json_emit(o, &b, (json_begin(&b, "retry") == 0 &&
            json_kv_num(&b, "attempt", (uint64_t)attempt) == 0 &&
            json_kv_num(&b, "retries", (uint64_t)max) == 0 &&
            json_kv_num(&b, "delay_s", delay_s) == 0 &&
            json_kv_str(&b, "error", why) == 0) ? 0 : -1);
    }
    pthread_mutex_lock(&o->lock);
    output_clear_line(o);
    fprintf(stderr, "ferry: %s; retrying in %u s (%d/%d)\n",
        text_escape(why, strlen(why), esc, sizeof(esc)), delay_s, attempt,
        max);
    pthread_mutex_unlock(&o->lock);
}

void
output_summary(struct output *o, const struct output_summary *s)
{
    struct xfer_stats *st = &o->x->st;
    double elapsed = (double)(now_ns() - o->t0_ns) / 1e9;
    uint64_t payload = xfer_get(&st->bytes_payload);
    char tmp[64], a[32], rate[32];
    struct buf b;
    int r;

    if (o->json) {
        buf_init(&b, 1 << 16);
        r = json_begin(&b, "summary");
        if (r == 0)
            r = buf_put(&b, s->ok ? ",\"ok\":true" : ",\"ok\":false",
                s->ok ? 10 : 11);
        if (r == 0)
            r = json_kv_num(&b, "exit_code", (uint64_t)s->exit_code);
        if (r == 0)
            r = json_kv_num(&b, "files_total", xfer_get(&st->files_total));
        if (r == 0)
            r = json_kv_num(&b, "files_sent", xfer_get(&st->files_sent));
        if (r == 0)
            r = json_kv_num(&b, "files_skipped",
                xfer_get(&st->files_skipped));
        if (r == 0)
            r = json_kv_num(&b, "files_failed", xfer_get(&st->files_failed));
        if (r == 0)
            r = json_kv_num(&b, "bytes_total", xfer_get(&st->bytes_total));
        if (r == 0)
            r = json_kv_num(&b, "bytes_payload", payload);
        if (r == 0)
            r = json_kv_num(&b, "bytes_literal",
                xfer_get(&st->bytes_literal));
        if (r == 0)
            r = json_kv_num(&b, "bytes_matched",
                xfer_get(&st->bytes_matched));
        if (r == 0)
            r = json_kv_num(&b, "bytes_sparse", xfer_get(&st->bytes_sparse));
        if (r == 0)
            r = json_kv_num(&b, "bytes_compressed_saved",
                xfer_get(&st->bytes_compressed));
        if (r == 0)
            r = json_kv_num(&b, "bytes_wire", s->bytes_wire_out);
        if (r == 0)
            r = json_kv_num(&b, "bytes_wire_in", s->bytes_wire_in);
        if (r == 0)
            r = json_kv_num(&b, "streams", s->streams);
        if (r == 0) {
            int n = snprintf(tmp, sizeof(tmp), ",\"elapsed_s\":%.3f",
                elapsed);
            r = buf_put(&b, tmp, (size_t)n);
        }
        if (r == 0)
            r = json_kv_num(&b, "resumed_bytes",
                xfer_get(&st->resumed_bytes));
        if (r == 0 && s->error != NULL)
            r = json_kv_str(&b, "error", s->error);
        output_json_emit(o, &b, r);
    }
    /* After a fatal error the error line says it all, unless some files
     * made it. */
    if (o->quiet || o->json || (!s->ok && s->error != NULL &&
        xfer_get(&st->files_sent) == 0))
        return;
    text_bytes((double)payload, a, sizeof(a));
    text_bytes(elapsed > 0 ? (double)payload / elapsed : 0, rate,
        sizeof(rate));
    pthread_mutex_lock(&o->lock);
    output_clear_line(o);
    fprintf(stderr, "ferry: %" PRIu64 " sent (%s), %" PRIu64 " up to date, "
        "%" PRIu64 " failed, in %.1f s (%s/s)\n",
        xfer_get(&st->files_sent), a, xfer_get(&st->files_skipped),
        xfer_get(&st->files_failed), elapsed, rate);
    pthread_mutex_unlock(&o->lock);
}

int
output_json_begin(struct buf *b, const char *event)
{
    return json_begin(b, event);
}

int
output_json_str(struct buf *b, const char *key, const char *val)
{
    return json_kv_str(b, key, val);
}

int
output_json_num(struct buf *b, const char *key, uint64_t val)
{
    return json_kv_num(b, key, val);
}

void
output_json_end(struct output *o, struct buf *b, int r)
{
    output_json_emit(o, b, r);
}
