/* Status strings and the per-thread error detail. A thread-local buffer keeps the
 * last failure's one-line explanation so free functions (image loaders, parsers) can
 * say *why* without a handle, like errno + strerror but with context. */
#include <stdio.h>
#include <string.h>

#include "facefuse/core.h"

static _Thread_local char error_detail[512];
static _Thread_local ffu_status error_status;

const char *ffu_status_str(ffu_status s)
{
    switch (s) {
    case FFU_OK: return "success";
    case FFU_AGAIN: return "try again";
    case FFU_EOF: return "end of stream";
    case FFU_ERR_NOMEM: return "out of memory";
    case FFU_ERR_INVALID: return "invalid argument";
    case FFU_ERR_IO: return "input/output error";
    case FFU_ERR_FORMAT: return "malformed data";
    case FFU_ERR_UNSUPPORTED: return "not supported";
    case FFU_ERR_TOO_LARGE: return "too large";
    case FFU_ERR_NOT_FOUND: return "not found";
    case FFU_ERR_CLOSED: return "closed";
    case FFU_ERR_TIMEOUT: return "timed out";
    case FFU_ERR_DEVICE: return "GPU device error";
    case FFU_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *ffu_error_message(void)
{
    if (error_detail[0]) return error_detail;
    return ffu_status_str(error_status);
}

ffu_status ffu_error_set(ffu_status s, const char *fmt, ...)
{
    error_status = s;
    error_detail[0] = 0;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(error_detail, sizeof error_detail, fmt, ap);
        va_end(ap);
    }
    return s;
}

ffu_status ffu_error_prefix(ffu_status s, const char *what)
{
    char msg[sizeof error_detail];
    snprintf(msg, sizeof msg, "%s", ffu_error_message());
    size_t n = what ? strlen(what) : 0;
    if (!n || (!strncmp(msg, what, n) && msg[n] == ':' && msg[n + 1] == ' ')) {
        error_status = s;
        return s;
    }
    return ffu_error_set(s, "%s: %s", what, msg);
}

void ffu_error_clear(void)
{
    error_status = FFU_OK;
    error_detail[0] = 0;
}
