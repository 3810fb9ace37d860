/*
 * log.h: diagnostics on stderr.
 *
 * On the agent, stdout is the protocol channel: nothing here ever writes to
 * stdout. Every line starts with the program name set by log_init.
 */
#ifndef FERRY_COMMON_LOG_H
#define FERRY_COMMON_LOG_H

#include "err.h"

enum log_level { LOG_QUIET = 0, LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the line prefix (borrowed, must outlive logging) and the level. */
void log_init(const char *prog, enum log_level level);
void log_set_level(enum log_level level);

void log_msg(enum log_level level, const char *func, int r, const char *fmt,
    ...) FERRY_PRINTF(4, 5);

#define log_error(...) log_msg(LOG_ERROR, __func__, 0, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __func__, 0, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __func__, 0, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __func__, 0, __VA_ARGS__)
/* Appends ": <ferry_strerror(r)>" to the message. */
#define log_error_r(r, ...) log_msg(LOG_ERROR, __func__, (r), __VA_ARGS__)
#define log_warn_r(r, ...) log_msg(LOG_WARN, __func__, (r), __VA_ARGS__)
#define log_debug_r(r, ...) log_msg(LOG_DEBUG, __func__, (r), __VA_ARGS__)

#endif
