#include "output_int.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../common/alloc.h"
#include "../common/buf.h"
#include "../common/text.h"
#include "../engine/dest.h"
#include "../engine/manifest.h"
#include "../proto/limits.h"

#define OUTPUT_TICK_MS 250
/* An escaped message: each byte may become \xHH. */
#define OUTPUT_ESC (4 * 1024 + 1)

uint64_t
output_now_ns(void)
{
    return uv_hrtime();
}

/* Clears the progress line so a message can take its place. Caller holds
 * the lock. */
void
output_clear_line(struct output *o)
{
    if (o->line_drawn) {
        fputs("\r\033[K", stderr);
        o->line_drawn = 0;
    }
}

/* Prints one line on stderr in place of the progress line: "ferry: ",
 * then each part escaped (NULL parts are skipped). */
static void
output_line(struct output *o, const char *a, const char *b, const char *c)
{
    const char *part[3] = { a, b, c };
    char esc[OUTPUT_ESC];
    size_t i;

    pthread_mutex_lock(&o->lock);
    output_clear_line(o);
    fputs("ferry: ", stderr);
    for (i = 0; i < 3; i++)
        if (part[i] != NULL)
            fputs(text_escape(part[i], strlen(part[i]), esc, sizeof(esc)),
                stderr);
    fputc('\n', stderr);
    pthread_mutex_unlock(&o->lock);
}

/* The command this process runs ("push", "pack"), named in its summary;
 * NULL while none is known. A process runs one command. */
static const char *output_cmd;

/* FERRY_TEST_EVENTS names a file that gets a copy of every event line,
 * appended in one write each: the test suite checks every line its runs
 * print against docs/events.schema.json, whatever a test does with
 * stdout. */
static int events_copy_fd = -1;

/* The box of many this process runs (output_box), else NULL. */
static const char *output_box_host;
struct output_tally *output_box_tally;
static pthread_once_t events_copy_once = PTHREAD_ONCE_INIT;

static void
output_events_copy_open(void)
{
    const char *path = getenv("FERRY_TEST_EVENTS");

    if (path != NULL && path[0] != '\0')
        events_copy_fd = open(path, O_WRONLY | O_APPEND | O_CREAT |
            O_CLOEXEC, 0666);
}

/* Ends the JSON object built in b (r: how building it went), prints it
 * as one line when all went well, and frees b. A line is all or nothing:
 * a reader of the stream never sees half an object. o NULL: a line of a
 * thread that shares stdout with no transfer's output. */
static void
output_json_emit(struct output *o, struct buf *b, int r)
{
    if (r == 0 && buf_put(b, "}\n", 2) == 0) {
        pthread_once(&events_copy_once, output_events_copy_open);
        if (o != NULL)
            pthread_mutex_lock(&o->lock);
        fwrite(buf_ptr(b), 1, buf_used(b), stdout);
        fflush(stdout);
        /* The copy is the test suite's: the run goes on without it. */
        if (events_copy_fd >= 0)
            (void)!write(events_copy_fd, buf_ptr(b), buf_used(b));
        if (o != NULL)
            pthread_mutex_unlock(&o->lock);
    }
    buf_cleanup(b);
}

/* Appends ,"key":"val"; a NULL val leaves the key out. */
static int
json_kv_str(struct buf *b, const char *key, const char *val)
{
    int r;

    if (val == NULL)
        return 0;
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

/* Appends ,"key":val with val a JSON literal (true, 1.5). */
static int
json_kv_raw(struct buf *b, const char *key, const char *val)
{
    char tmp[96];
    int n = snprintf(tmp, sizeof(tmp), ",\"%s\":%s", key, val);

    if (n < 0 || (size_t)n >= sizeof(tmp))
        return FERRY_ERR_TOO_LARGE;
    return buf_put(b, tmp, (size_t)n);
}

static int
json_begin(struct buf *b, const char *event)
{
    int r;

    if ((r = buf_put(b, "{\"event\":", 9)) != 0 ||
        (r = text_json_string(b, event, strlen(event))) != 0)
        return r;
    return json_kv_str(b, "host", output_box_host);
}

/* The JSON code of a problem: the error's name; warnings have no error
 * code, so they say what they are. */
static const char *
output_code(int code)
{
    return code != 0 ? ferry_errname(code) : "WARNING";
}

/*
 * prefix and path as one name, with exactly one '/' between them (a
 * prefix may end with '/' or ':', or be a directory written "ckpt//").
 * Writes into out (n > 0), cut if too long.
 */
static void
output_join(const char *prefix, const char *path, char *out, size_t n)
{
    size_t pl = prefix != NULL ? strlen(prefix) : 0;

    while (pl > 1 && prefix[pl - 1] == '/' && prefix[pl - 2] == '/')
        pl--;
    if (pl > 0 && prefix[pl - 1] == ':') {
        /* "host:" and a path, absolute or in the remote home. */
        snprintf(out, n, "%.*s%s", (int)pl, prefix, path);
    } else if (pl > 0 && path[0] != '\0') {
        while (path[0] == '/')
            path++;
        snprintf(out, n, "%.*s%s%s", (int)pl, prefix,
            prefix[pl - 1] == '/' ? "" : "/", path);
    } else if (pl > 1 && prefix[pl - 1] == '/' && prefix[pl - 2] != ':') {
        /* The path names the destination itself (a renamed file). */
        snprintf(out, n, "%.*s", (int)pl - 1, prefix);
    } else {
        snprintf(out, n, "%.*s%s", (int)pl, prefix != NULL ? prefix : "",
            path);
    }
}

/*
 * A pull names its source problems by wire path, relative to the
 * destination ("ckpt/step.pt"). Shown after "box:" that would read as a
 * path in the remote home; this finds the remote source it came from
 * (rsync's trailing-slash rule, as manifest_source applies it) and writes
 * "box:/ws/ckpt/step.pt". Returns 0, or -1 when no one source fits.
 */
static int
output_source_name(const struct output *o, const char *path, char *out,
    size_t n)
{
    size_t tl = strcspn(path, "/");
    char *local = NULL, *named = NULL, *open_dir = NULL;
    char full[OUTPUT_NAME_MAX];
    const char *base;
    int i, contents, found, nopen = 0;

    for (i = 0; i < o->nsource_paths && named == NULL; i++) {
        if (manifest_source(o->source_paths[i], &local, &contents) != 0)
            break;
        base = strrchr(local, '/');
        base = base != NULL ? base + 1 : local;
        if (contents && nopen++ == 0) {
            /* "dir/" sends what is in it: any name may come from it. */
            open_dir = local;
        } else if (!contents && strlen(base) == tl &&
            strncmp(base, path, tl) == 0) {
            named = local;
        } else {
            xfree(local);
        }
        local = NULL;
    }
    found = named != NULL || nopen == 1;
    if (named != NULL)
        snprintf(full, sizeof(full), "%s%s", named, path + tl);
    else if (nopen == 1)
        output_join(open_dir, path, full, sizeof(full));
    xfree(named);
    xfree(open_dir);
    if (!found)
        return -1;
    output_join(o->source_prefix, full, out, n);
    return 0;
}

/* The name of a path of one side, as the user should read it. */
static void
output_name(const struct output *o, enum xfer_side side, const char *path,
    char *out, size_t n)
{
    if (side == SIDE_SOURCE && o->nsource_paths > 0 &&
        output_source_name(o, path, out, n) == 0)
        return;
    output_join(side == SIDE_SOURCE ? o->source_prefix : o->dest_prefix,
        path, out, n);
}

/* The " (..)" after a file's name at -v: what delta reused, what coding
 * its tensors saved; nothing for a file sent plainly. */
static void
output_file_how(const struct xfer_file_counts *n, char out[192])
{
    const size_t len = 192;
    char lit[32], mat[32], ten[32], saved[32];

    out[0] = '\0';
    if (n == NULL)
        return;
    text_bytes((double)n->literal, lit, sizeof(lit));
    text_bytes((double)n->matched, mat, sizeof(mat));
    text_bytes((double)n->tensor, ten, sizeof(ten));
    text_bytes((double)n->tensor_saved, saved, sizeof(saved));
    if (n->matched > 0 && n->tensor > 0)
        snprintf(out, len, " (%s sent, %s reused; %s as tensor "
            "differences, %s saved)", lit, mat, ten, saved);
    else if (n->matched > 0)
        snprintf(out, len, " (%s sent, %s reused)", lit, mat);
    else if (n->tensor > 0)
        snprintf(out, len, " (%s as tensor differences, %s saved)", ten,
            saved);
}

static void
output_file(void *ctx, const char *path, const char *action, uint64_t bytes,
    const struct xfer_file_counts *n)
{
    struct output *o = ctx;
    uint64_t matched = n != NULL ? n->matched : 0,
        tensor = n != NULL ? n->tensor : 0;
    struct buf b;

    if (o->json) {
        buf_init(&b, 1 << 16);
        output_json_emit(o, &b, (json_begin(&b, "file") == 0 &&
            json_kv_str(&b, "path", path) == 0 &&
            json_kv_str(&b, "action", action) == 0 &&
            json_kv_num(&b, "bytes", bytes) == 0 &&
            (matched + tensor == 0 ||
            json_kv_num(&b, "bytes_literal", n->literal) == 0) &&
            (matched == 0 ||
            json_kv_num(&b, "bytes_matched", matched) == 0) &&
            (tensor == 0 || (json_kv_num(&b, "bytes_tensor", tensor) == 0 &&
            json_kv_num(&b, "bytes_tensor_saved", n->tensor_saved) == 0))) ?
            0 : -1);
        /* Sent means committed: in place under its name, durable. */
        if (strcmp(action, "sent") == 0) {
            buf_init(&b, 1 << 16);
            output_json_emit(o, &b, (json_begin(&b, "ready") == 0 &&
                json_kv_str(&b, "path", path) == 0 &&
                json_kv_num(&b, "bytes", bytes) == 0) ? 0 : -1);
        }
    } else if (o->verbose >= 1 && strcmp(action, "sent") == 0) {
        char esc[OUTPUT_ESC], how[192];

        output_file_how(n, how);
        pthread_mutex_lock(&o->lock);
        output_clear_line(o);
        fprintf(stderr, "%s%s\n", text_escape(path, strlen(path), esc,
            sizeof(esc)), how);
        pthread_mutex_unlock(&o->lock);
    }
}

/* A volume of small files (JSON only): "sent" by this side's sender,
 * "committed" by its receiver. */
static void
output_volume(void *ctx, uint32_t index, const char *action, uint64_t files,
    uint64_t file_bytes, uint64_t bytes)
{
    struct output *o = ctx;
    struct buf b;

    if (!o->json)
        return;
    buf_init(&b, 1 << 10);
    output_json_emit(o, &b, (json_begin(&b, "volume") == 0 &&
        json_kv_num(&b, "index", index) == 0 &&
        json_kv_str(&b, "action", action) == 0 &&
        json_kv_num(&b, "files", files) == 0 &&
        json_kv_num(&b, "bytes_files", file_bytes) == 0 &&
        json_kv_num(&b, "bytes", bytes) == 0) ? 0 : -1);
}

static void
output_problem(void *ctx, enum xfer_side side, const char *path, int code,
    const char *text)
{
    struct output *o = ctx;
    char name[OUTPUT_NAME_MAX], msg[1200];
    struct buf b;

    if (o->json) {
        buf_init(&b, 1 << 16);
        output_json_emit(o, &b, (json_begin(&b, code != 0 ? "error" :
            "warning") == 0 &&
            json_kv_str(&b, "side", side == SIDE_SOURCE ? "source" :
            "dest") == 0 &&
            json_kv_str(&b, "path", path) == 0 &&
            json_kv_str(&b, "code", output_code(code)) == 0 &&
            json_kv_str(&b, "message", text) == 0) ? 0 : -1);
    }
    if (o->quiet && code == 0)
        return;
    output_name(o, side, path, name, sizeof(name));
    if (code == FERRY_ERR_CHANGED)
        /* Usually a file still being written: a checkpoint mid-save. */
        snprintf(msg, sizeof(msg), ": %s; if it is still being written, "
            "run the same command again once the writer is done", text);
    else
        snprintf(msg, sizeof(msg), ": %s%s", text,
            code == 0 ? " (warning)" : "");
    output_line(o, name, msg, NULL);
}

void
output_init(struct output *o, struct xfer *x)
{
    o->x = x;
    pthread_mutex_init(&o->lock, NULL);
    o->t0_ns = output_now_ns();
    o->current[0] = '\0';
    x->ev.file = output_file;
    x->ev.problem = output_problem;
    x->ev.volume = output_volume;
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

/* The progress line's fields, in the order they are dropped when the
 * terminal is too narrow for all of them. */
enum { F_FILES, F_RATE, F_TOTAL, F_ETA, F_DONE, F_PERCENT, F_COUNT };

char *
output_progress_line(const struct output_progress *p, size_t cols,
    char *out, size_t outlen)
{
    char field[F_COUNT][48], a[32], rate[32], eta[32], name[OUTPUT_ESC];
    uint64_t total = p->total > p->done ? p->total : p->done;
    uint64_t ftotal = p->ftotal > p->files ? p->ftotal : p->files;
    /* Field widths as printed, with the two spaces before each. */
    size_t w[F_COUNT], used, room, o = 0;
    int keep = 0, i;

    out[0] = '\0';
    if (outlen == 0 || cols < 2)
        return out;
    cols--;
    text_bytes((double)p->done, field[F_DONE], sizeof(field[F_DONE]));
    text_bytes((double)total, a, sizeof(a));
    /* While a scan still adds to the totals, they are marked "+" and
     * no share or time left is guessed from them (rsync: "ir-chk"). */
    snprintf(field[F_TOTAL], sizeof(field[F_TOTAL]), "/ %s%s", a,
        p->growing ? "+" : "");
    if (p->growing)
        snprintf(field[F_PERCENT], sizeof(field[F_PERCENT]), " --%%");
    else
        snprintf(field[F_PERCENT], sizeof(field[F_PERCENT]), "%3.0f%%",
            total ? 100.0 * (double)p->done / (double)total : 100.0);
    snprintf(field[F_FILES], sizeof(field[F_FILES]), "%" PRIu64 "/%" PRIu64
        "%s files", p->files, ftotal, p->growing ? "+" : "");
    text_bytes(p->rate, rate, sizeof(rate));
    snprintf(field[F_RATE], sizeof(field[F_RATE]), "%s/s", rate);
    if (p->rate > 1 && total > p->done && !p->growing)
        fmt_duration((double)(total - p->done) / p->rate, eta, sizeof(eta));
    else
        snprintf(eta, sizeof(eta), "--:--");
    snprintf(field[F_ETA], sizeof(field[F_ETA]), "ETA %s", eta);
    /* Drop fields from the front of the list until the rest fits. */
    for (i = 0; i < F_COUNT; i++)
        w[i] = strlen(field[i]) + 2;
    /* "done / total" is one field with one space. */
    w[F_TOTAL]--;
    for (keep = 0; keep < F_COUNT; keep++) {
        for (used = 0, i = keep; i < F_COUNT; i++)
            used += w[i];
        if (used - 2 <= cols)
            break;
    }
    if (keep == F_COUNT)
        return out;     /* not even the percentage fits */
    /* Printed in reading order: bytes, percent, files, rate, ETA. */
    {
        static const int order[] = { F_DONE, F_TOTAL, F_PERCENT, F_FILES,
            F_RATE, F_ETA };
        size_t k;

        for (k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
            if (order[k] < keep)
                continue;
            if ((size_t)snprintf(out + o, outlen - o, "%s%s", o == 0 ? "" :
                order[k] == F_TOTAL ? " " : "  ", field[order[k]]) >=
                outlen - o)
                return out;
            o = strlen(out);
        }
    }
    /* The name gets what is left, if that is enough to be useful. */
    room = cols > o + 2 ? cols - o - 2 : 0;
    if (p->current != NULL && p->current[0] != '\0' && keep == 0 &&
        room >= 8) {
        text_escape_fit(p->current, strlen(p->current), room, name,
            sizeof(name));
        snprintf(out + o, outlen - o, "  %s", name);
    }
    return out;
}

/* The terminal's width, read at each tick so that a resized window is
 * followed (no SIGWINCH handler needed); 80 when stderr is no terminal. */
static size_t
output_columns(void)
{
    struct winsize ws;
    const char *env;

    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    if ((env = getenv("COLUMNS")) != NULL && atoi(env) > 0)
        return (size_t)atoi(env);
    return 80;
}

static void
output_draw(struct output *o)
{
    struct xfer_stats *st = &o->x->st;
    struct output_progress p;
    uint64_t t = output_now_ns(), moved;
    double dt = (double)(t - o->last_ns) / 1e9;
    char line[OUTPUT_ESC + 256];

    memset(&p, 0, sizeof(p));
    p.done = xfer_get(&st->bytes_done);
    p.total = xfer_get(&st->bytes_total);
    p.files = xfer_get(&st->files_sent) + xfer_get(&st->files_skipped) +
        xfer_get(&st->files_failed);
    p.ftotal = xfer_get(&st->files_total);
    p.growing = xfer_get(&st->totals_open) > 0;
    /* The rate is data that crossed the wire, not progress: a resume
     * accounts for what was there at once, which is no speed at all. */
    moved = xfer_get(&st->bytes_moved);
    if (dt > 0 && o->last_ns != 0 && moved >= o->last_bytes) {
        double inst = (double)(moved - o->last_bytes) / dt;

        /* Smooth over about two seconds of ticks. */
        o->rate = o->rate == 0 ? inst : 0.85 * o->rate + 0.15 * inst;
    }
    o->last_ns = t;
    o->last_bytes = moved;
    p.rate = o->rate;
    if (output_box_tally != NULL) {
        /* One of many boxes: the parent draws one line for all. */
        output_box_tally->live_done = p.done;
        output_box_tally->live_total = p.total;
        output_box_tally->live_rate = p.rate;
        return;
    }
    pthread_mutex_lock(&o->lock);
    p.current = o->current;
    output_progress_line(&p, output_columns(), line, sizeof(line));
    fprintf(stderr, "\r\033[K%s", line);
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
output_scanning(struct output *o, uint64_t entries, uint64_t bytes)
{
    char b[32];

    if (!o->progress || o->quiet || output_box_tally != NULL)
        return;
    text_bytes((double)bytes, b, sizeof(b));
    pthread_mutex_lock(&o->lock);
    fprintf(stderr, "\r\033[Kscanning: %" PRIu64 " entries, %s", entries, b);
    fflush(stderr);
    o->line_drawn = 1;
    pthread_mutex_unlock(&o->lock);
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
    if (!o->timer_on && o->line_drawn) {
        pthread_mutex_lock(&o->lock);
        output_clear_line(o);
        pthread_mutex_unlock(&o->lock);
    }
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
    struct buf b;

    if (o->json) {
        buf_init(&b, 1 << 16);
        output_json_emit(o, &b, (json_begin(&b, "error") == 0 &&
            json_kv_str(&b, "path", where) == 0 &&
            json_kv_str(&b, "code", output_code(code)) == 0 &&
            json_kv_str(&b, "message", text) == 0 &&
            json_kv_raw(&b, "fatal", "true") == 0) ? 0 : -1);
    }
    output_line(o, where, where != NULL ? ": " : NULL, text);
}

int
output_fatal_early(int json, int quiet, const char *where, int code,
    const char *text, int exit_code)
{
    struct output_summary sum;
    struct output o;
    struct xfer x;

    memset(&x, 0, sizeof(x));
    memset(&o, 0, sizeof(o));
    o.json = json;
    o.quiet = quiet;
    output_init(&o, &x);
    output_fatal(&o, where, code, text);
    memset(&sum, 0, sizeof(sum));
    sum.exit_code = exit_code;
    sum.error = text;
    output_summary(&o, &sum);
    pthread_mutex_destroy(&o.lock);
    return exit_code;
}

void
output_note(struct output *o, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (o->quiet)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    output_line(o, msg, NULL, NULL);
}

void
output_busy(struct output *o, const char *where, const char *holder,
    int waits)
{
    char who[PROTO_MAX_HOLDER + 8];
    struct buf b;

    if (o->json) {
        buf_init(&b, 1 << 14);
        output_json_emit(o, &b, (json_begin(&b, "busy") == 0 &&
            json_kv_str(&b, "path", where) == 0 &&
            json_kv_str(&b, "holder", holder) == 0) ? 0 : -1);
    }
    if (!waits || o->quiet)
        return;
    snprintf(who, sizeof(who), " (%s)", holder[0] ? holder :
        "holder unknown");
    output_line(o, "waiting for the transfer holding ", where, who);
}

void
output_retry(struct output *o, const struct output_retry *r)
{
    char tmp[160], count[48];
    struct buf b;
    int jr;

    if (o->json) {
        buf_init(&b, 1 << 16);
        jr = json_begin(&b, "retry");
        if (jr == 0)
            jr = json_kv_num(&b, "attempt", (uint64_t)r->attempt);
        if (jr == 0 && r->max >= 0)
            jr = json_kv_num(&b, "retries", (uint64_t)r->max);
        snprintf(tmp, sizeof(tmp), "%.1f", r->delay_s);
        if (jr == 0)
            jr = json_kv_raw(&b, "delay_s", tmp);
        snprintf(tmp, sizeof(tmp), "%.0f", r->give_up_s);
        if (jr == 0 && r->give_up_s >= 0)
            jr = json_kv_raw(&b, "give_up_in_s", tmp);
        if (jr == 0)
            jr = json_kv_str(&b, "error", r->why);
        output_json_emit(o, &b, jr);
    }
    if (r->max >= 0)
        snprintf(count, sizeof(count), "%d/%d", r->attempt, r->max);
    else
        snprintf(count, sizeof(count), "attempt %d", r->attempt);
    if (r->give_up_s >= 120)
        snprintf(tmp, sizeof(tmp), "; retrying in %.0f s (%s, giving up "
            "in %u min without progress)", r->delay_s, count,
            (unsigned)((r->give_up_s + 59) / 60));
    else if (r->give_up_s >= 0)
        snprintf(tmp, sizeof(tmp), "; retrying in %.0f s (%s, giving up "
            "in %.0f s without progress)", r->delay_s, count, r->give_up_s);
    else
        snprintf(tmp, sizeof(tmp), "; retrying in %.0f s (%s)", r->delay_s,
            count);
    output_line(o, r->why, tmp, NULL);
}

void
output_stream(struct output *o, const char *action, unsigned stream,
    unsigned active, const char *why)
{
    char tmp[256];
    struct buf b;
    int jr;

    if (o->json) {
        buf_init(&b, 1 << 16);
        jr = json_begin(&b, "stream");
        if (jr == 0)
            jr = json_kv_str(&b, "action", action);
        if (jr == 0)
            jr = json_kv_num(&b, "stream", stream);
        if (jr == 0)
            jr = json_kv_num(&b, "active", active);
        if (jr == 0)
            jr = json_kv_str(&b, "why", why);
        output_json_emit(o, &b, jr);
    }
    if (o->verbose < 1 || o->json)
        return;
    snprintf(tmp, sizeof(tmp), "stream %u %s (%u active): %s", stream,
        action, active, why);
    output_line(o, tmp, NULL, NULL);
}

void
output_resume(struct output *o, const char *dest, int resumable)
{
    struct xfer *x = o->x;
    char state[OUTPUT_NAME_MAX], bytes[32], msg[2 * OUTPUT_NAME_MAX + 200];

    if (o->quiet || o->json)
        return;
    output_join(dest, DEST_STATE_DIR, state, sizeof(state));
    if (x->kept_known && x->kept_files > 0) {
        text_bytes((double)x->kept_bytes, bytes, sizeof(bytes));
        snprintf(msg, sizeof(msg), "%s of %" PRIu64 " unfinished file%s "
            "kept in %s: run the same command again to resume, or `ferry "
            "clean %s` to free it", bytes, x->kept_files,
            x->kept_files == 1 ? "" : "s", state, dest);
    } else if (resumable && !x->kept_known) {
        snprintf(msg, sizeof(msg), "run the same command again to resume; "
            "what arrived of unfinished files is kept in %s (`ferry clean "
            "%s` frees it)", state, dest);
    } else if (resumable) {
        snprintf(msg, sizeof(msg), "run the same command again to resume");
    } else {
        return;
    }
    output_line(o, msg, NULL, NULL);
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

int
output_json_raw(struct buf *b, const char *key, const char *val)
{
    return json_kv_raw(b, key, val);
}

int
output_json_command(struct buf *b)
{
    return json_kv_str(b, "command", output_cmd);
}

void
output_command(const char *name)
{
    output_cmd = name;
}

void
output_box(const char *host, struct output_tally *tally)
{
    output_box_host = host;
    output_box_tally = tally;
}

void
output_json_end(struct output *o, struct buf *b, int r)
{
    output_json_emit(o, b, r);
}

void
output_json_line(struct buf *b, int r)
{
    output_json_emit(NULL, b, r);
}
