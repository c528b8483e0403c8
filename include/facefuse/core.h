/* facefuse core: status codes, error details, logging, allocation, threads, queues,
 * clocks, JSON and option tables. Every other module builds on this header.
 *
 * Conventions (see docs/API.md): functions return ffu_status; FFU_OK is 0, flow values
 * (FFU_AGAIN, FFU_EOF) are positive, errors negative. A failing call may leave a
 * one-line detail for the calling thread, read with ffu_error_message(). Out-parameters
 * are set to NULL/0 on error. destroy(NULL) and unref(NULL) are no-ops. */
#ifndef FACEFUSE_CORE_H
#define FACEFUSE_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(FFU_BUILDING_LIBRARY)
#define FFU_API __attribute__((visibility("default")))
#else
#define FFU_API
#endif

#if defined(__GNUC__)
#define FFU_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define FFU_PRINTF(fmt, args)
#endif

/* ---- status codes ---------------------------------------------------------------- */

typedef enum ffu_status {
    FFU_OK = 0,
    FFU_AGAIN = 1, /* try again later (queue empty/full in a try call) */
    FFU_EOF = 2,   /* end of stream / queue closed and drained */

    FFU_ERR_NOMEM = -1,       /* allocation failed */
    FFU_ERR_INVALID = -2,     /* invalid argument (a caller bug or bad option value) */
    FFU_ERR_IO = -3,          /* file or socket I/O failed (see detail for errno text) */
    FFU_ERR_FORMAT = -4,      /* malformed or corrupt input data */
    FFU_ERR_UNSUPPORTED = -5, /* valid input that this build cannot handle */
    FFU_ERR_TOO_LARGE = -6,   /* input exceeds a size or dimension cap */
    FFU_ERR_NOT_FOUND = -7,   /* file, key, model or device not found */
    FFU_ERR_CLOSED = -8,      /* object was closed (queue, stream) */
    FFU_ERR_TIMEOUT = -9,     /* a wait timed out */
    FFU_ERR_DEVICE = -10,     /* GPU/driver error or no GPU */
    FFU_ERR_INTERNAL = -11,   /* bug: an invariant did not hold */
} ffu_status;

/* A stable short message for a status ("out of memory", "malformed data", ...). */
FFU_API const char *ffu_status_str(ffu_status s);

/* The detail of the last failure on this thread: the message given to ffu_error_set,
 * or ffu_status_str of the last status when no detail was given. Never NULL. */
FFU_API const char *ffu_error_message(void);

/* Records a detail for this thread and returns `s` so callers can write
 * `return ffu_error_set(FFU_ERR_FORMAT, "%s: bad marker", path);`. */
FFU_API ffu_status ffu_error_set(ffu_status s, const char *fmt, ...) FFU_PRINTF(2, 3);
FFU_API void ffu_error_clear(void);

/* ---- logging ----------------------------------------------------------------------- */

typedef enum ffu_log_level {
    FFU_LOG_QUIET = -1,
    FFU_LOG_ERROR = 0,
    FFU_LOG_WARN = 1,
    FFU_LOG_INFO = 2,
    FFU_LOG_DEBUG = 3,
    FFU_LOG_TRACE = 4,
    FFU_LOG_LEVEL_COUNT = 5,
} ffu_log_level;

/* Every object that logs starts with a pointer to a class, so a log line can name the
 * object: "[decoder cam1] reconnecting". item_name may be NULL (class name only). */
typedef struct ffu_class {
    const char *name;
    const char *(*item_name)(const void *obj);
} ffu_class;

/* The sink receives every line at or below the current level. obj may be NULL. */
typedef void (*ffu_log_fn)(void *user, ffu_log_level level, const ffu_class *cls,
                           const void *obj, const char *msg);

FFU_API void ffu_log_set_level(ffu_log_level level);
FFU_API ffu_log_level ffu_log_get_level(void);
/* NULL restores the default sink (stderr). Thread-safe. */
FFU_API void ffu_log_set_callback(ffu_log_fn fn, void *user);
/* obj is NULL or a pointer to a struct whose first member is `const ffu_class *`. */
FFU_API void ffu_log(const void *obj, ffu_log_level level, const char *fmt, ...)
    FFU_PRINTF(3, 4);
FFU_API void ffu_vlog(const void *obj, ffu_log_level level, const char *fmt, va_list ap);
FFU_API const char *ffu_log_level_name(ffu_log_level level);

/* The macro checks the level before formatting anything. */
#define FFU_LOG(obj, level, ...)                                                       \
    do {                                                                               \
        if ((int)(level) <= (int)ffu_log_get_level()) ffu_log((obj), (level), __VA_ARGS__); \
    } while (0)

/* ---- reference-counted buffers ----------------------------------------------------- */

/* A heap block with an atomic reference count, 64-byte aligned. Writable only while
 * the caller holds the only reference (ffu_buffer_is_writable). */
typedef struct ffu_buffer ffu_buffer;

/* Allocates `size` bytes (zeroed when `zero`), refcount 1. */
FFU_API ffu_status ffu_buffer_create(ffu_buffer **out, size_t size, int zero);
FFU_API ffu_buffer *ffu_buffer_ref(ffu_buffer *buf); /* returns buf */
FFU_API void ffu_buffer_unref(ffu_buffer **buf);     /* sets *buf to NULL */
FFU_API uint8_t *ffu_buffer_data(const ffu_buffer *buf);
FFU_API size_t ffu_buffer_size(const ffu_buffer *buf);
FFU_API int ffu_buffer_is_writable(const ffu_buffer *buf);

#ifdef __cplusplus
}
#endif
#endif
