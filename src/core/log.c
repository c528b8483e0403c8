/* Logging: a global level and one replaceable sink. The level is an atomic so the
 * FFU_LOG macro can test it without a lock; the sink is swapped and called under one
 * recursive mutex, so lines never interleave, a sink may log, and once
 * ffu_log_set_callback returns the old sink is never called again. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "facefuse/core.h"

#define LOG_MSG_MAX 1024

static atomic_int log_level = FFU_LOG_INFO;
static pthread_mutex_t sink_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static ffu_log_fn sink_fn;
static void *sink_user;

static const char *const level_names[FFU_LOG_LEVEL_COUNT] = {"error", "warn", "info",
                                                             "debug", "trace"};

const char *ffu_log_level_name(ffu_log_level level)
{
    if (level == FFU_LOG_QUIET) return "quiet";
    if ((int)level < 0 || (int)level >= FFU_LOG_LEVEL_COUNT) return "unknown";
    return level_names[level];
}

void ffu_log_set_level(ffu_log_level level)
{
    if ((int)level < FFU_LOG_QUIET) level = FFU_LOG_QUIET;
    if ((int)level >= FFU_LOG_LEVEL_COUNT) level = FFU_LOG_TRACE;
    atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

ffu_log_level ffu_log_get_level(void)
{
    return (ffu_log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

void ffu_log_set_callback(ffu_log_fn fn, void *user)
{
    pthread_mutex_lock(&sink_lock);
    sink_fn = fn;
    sink_user = fn ? user : NULL;
    pthread_mutex_unlock(&sink_lock);
}

/* The default sink: one write(2) per line so concurrent processes sharing stderr do
 * not tear lines. */
void ffu_log_to_stderr(void *user, ffu_log_level level, const ffu_class *cls, const void *obj,
                       const char *msg)
{
    (void)user;
    char line[LOG_MSG_MAX + 128];
    const char *item = cls && cls->item_name && obj ? cls->item_name(obj) : NULL;
    int n;
    if (cls && item)
        n = snprintf(line, sizeof line, "[%s] [%s %s] %s\n", ffu_log_level_name(level),
                     cls->name ? cls->name : "?", item, msg);
    else if (cls)
        n = snprintf(line, sizeof line, "[%s] [%s] %s\n", ffu_log_level_name(level),
                     cls->name ? cls->name : "?", msg);
    else
        n = snprintf(line, sizeof line, "[%s] %s\n", ffu_log_level_name(level), msg);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) { /* long item name: keep the newline */
        n = sizeof line - 1;
        line[n - 1] = '\n';
    }
    ssize_t r = write(STDERR_FILENO, line, (size_t)n);
    (void)r; /* nowhere to report a failed log write */
}

void ffu_vlog(const void *obj, ffu_log_level level, const char *fmt, va_list ap)
{
    if (level == FFU_LOG_QUIET || (int)level > (int)ffu_log_get_level() || !fmt) return;
    if ((int)level < 0 || (int)level >= FFU_LOG_LEVEL_COUNT) return;
    char msg[LOG_MSG_MAX];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    if (n < 0) return;
    size_t len = (size_t)n;
    if (len >= sizeof msg) { /* truncated: say so */
        len = sizeof msg - 1;
        memcpy(msg + len - 3, "...", 3);
    }
    while (len && msg[len - 1] == '\n') msg[--len] = 0; /* sinks add their own */
    const ffu_class *cls = obj ? *(const ffu_class *const *)obj : NULL;

    pthread_mutex_lock(&sink_lock);
    if (sink_fn)
        sink_fn(sink_user, level, cls, obj, msg);
    else
        ffu_log_to_stderr(NULL, level, cls, obj, msg);
    pthread_mutex_unlock(&sink_lock);
}

void ffu_log(const void *obj, ffu_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ffu_vlog(obj, level, fmt, ap);
    va_end(ap);
}
