#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

static const char *log_prog = "ferry";
static enum log_level log_level = LOG_WARN;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void
log_init(const char *prog, enum log_level level)
{
    log_prog = prog;
    log_level = level;
}

void
log_set_level(enum log_level level)
{
    log_level = level;
}

void
log_msg(enum log_level level, const char *func, int r, const char *fmt, ...)
{
    /* Messages name paths and repeat texts from the other side: the line
     * is escaped (text.h) before it reaches a terminal. */
    char line[2048], esc[4 * sizeof(line) + 2];
    size_t n;
    va_list ap;
    int k;

    if (level > log_level)
        return;
    k = snprintf(line, sizeof(line), "%s: ", log_prog);
    n = k > 0 ? (size_t)k : 0;
    if (log_level >= LOG_DEBUG && n < sizeof(line)) {
        k = snprintf(line + n, sizeof(line) - n, "%s: ", func);
        n += k > 0 ? (size_t)k : 0;
    }
    if (n < sizeof(line)) {
        va_start(ap, fmt);
        k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        va_end(ap);
        n += k > 0 ? (size_t)k : 0;
    }
    if (r != 0 && n < sizeof(line)) {
        k = snprintf(line + n, sizeof(line) - n, ": %s", ferry_strerror(r));
        n += k > 0 ? (size_t)k : 0;
    }
    if (n >= sizeof(line))
        n = sizeof(line) - 1;
    text_escape(line, n, esc, sizeof(esc) - 1);
    n = strlen(esc);
    esc[n++] = '\n';
    pthread_mutex_lock(&log_lock);
    fwrite(esc, 1, n, stderr);
    fflush(stderr);
    pthread_mutex_unlock(&log_lock);
}
