/* What the reader and writer share: FFmpeg error codes mapped onto ffu_status,
 * ffu_pixfmt <-> AVPixelFormat, the one-time set-up (loading FFmpeg, the network),
 * loading libavdevice when a camera is opened, and the optional bridge from FFmpeg's
 * log into ffu_log. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#if FFU_HAVE_AVDEVICE
#include <dlfcn.h>
#include <libavdevice/version.h>
#endif

#include "video/video_internal.h"

ffu_status video_status_of(int averr)
{
    switch (averr) {
    case AVERROR(ENOMEM):
        return FFU_ERR_NOMEM;
    case AVERROR(ENOENT):
    case AVERROR(ENODEV):
    case AVERROR_HTTP_NOT_FOUND:
        return FFU_ERR_NOT_FOUND;
    case AVERROR(EISDIR):
        return FFU_ERR_INVALID; /* a folder named where a file goes */
    case AVERROR_INVALIDDATA:
    case AVERROR_EOF:
        return FFU_ERR_FORMAT; /* EOF here: the data ends before it should */
    case AVERROR_BUG:
    case AVERROR_BUG2:
        return FFU_ERR_INTERNAL;
    case AVERROR_PATCHWELCOME:
    case AVERROR_DECODER_NOT_FOUND:
    case AVERROR_DEMUXER_NOT_FOUND:
    case AVERROR_ENCODER_NOT_FOUND:
    case AVERROR_MUXER_NOT_FOUND:
    case AVERROR_PROTOCOL_NOT_FOUND:
    case AVERROR_STREAM_NOT_FOUND:
    case AVERROR_FILTER_NOT_FOUND:
    case AVERROR(ENOSYS):
        return FFU_ERR_UNSUPPORTED;
    case AVERROR(ETIMEDOUT):
        return FFU_ERR_TIMEOUT;
    case AVERROR_EXIT:
        return FFU_ERR_CLOSED;
    case AVERROR(EINVAL):
    case AVERROR_OPTION_NOT_FOUND:
        return FFU_ERR_INVALID;
    default:
        return FFU_ERR_IO;
    }
}

ffu_status video_av_error(int averr, const char *name, const char *what)
{
    char text[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(averr, text, sizeof text);
    return ffu_error_set(video_status_of(averr), "%s: %s: %s", name ? name : "video", what, text);
}

enum AVPixelFormat video_avfmt_of(ffu_pixfmt fmt)
{
    switch (fmt) {
    case FFU_PIX_GRAY8:
        return AV_PIX_FMT_GRAY8;
    case FFU_PIX_RGB24:
        return AV_PIX_FMT_RGB24;
    case FFU_PIX_BGR24:
        return AV_PIX_FMT_BGR24;
    case FFU_PIX_RGBA32:
        return AV_PIX_FMT_RGBA;
    case FFU_PIX_NV12:
        return AV_PIX_FMT_NV12;
    case FFU_PIX_YUV420P:
        return AV_PIX_FMT_YUV420P;
    default:
        return AV_PIX_FMT_NONE;
    }
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static atomic_int ffmpeg_ready;  /* FFmpeg loaded and set up */
static atomic_int log_route = 0; /* ffu_video_route_ffmpeg_log's wish: 0 none, 1 off, 2 on */
static void apply_log_route(void);

static void global_init_once(void)
{
    /* Initialises TLS for https/rtsps; harmless when the build has no TLS. */
    avformat_network_init();
    atomic_store(&ffmpeg_ready, 1);
    apply_log_route();
}

ffu_status video_global_init(void)
{
    ffu_status st = video_av_load();
    if (st < 0) return st;
    pthread_once(&global_once, global_init_once);
    return FFU_OK;
}

#if FFU_HAVE_AVDEVICE
#define SONAME_(major) "libavdevice.so." #major
#define SONAME(major) SONAME_(major)
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;
static int devices_ok;

static void devices_load_once(void)
{
    /* the library of the headers we were built with, bound to the libavformat this
     * process already has; never unloaded (libavformat keeps its format lists) */
    void *lib = dlopen(video_devices_library(), RTLD_NOW | RTLD_LOCAL);
    void (*register_all)(void) = NULL;
    if (lib) *(void **)&register_all = dlsym(lib, "avdevice_register_all");
    if (register_all) {
        register_all();
        devices_ok = 1;
    }
}
#endif

const char *video_devices_library(void)
{
#if FFU_HAVE_AVDEVICE
    return SONAME(LIBAVDEVICE_VERSION_MAJOR);
#else
    return NULL;
#endif
}

int video_devices_load(void)
{
#if FFU_HAVE_AVDEVICE
    pthread_once(&devices_once, devices_load_once);
    return devices_ok;
#else
    return 0;
#endif
}

/* ---- FFmpeg log bridge ---------------------------------------------------------------- */

static const ffu_class ffmpeg_class = {"ffmpeg", NULL};
static const ffu_class *const ffmpeg_obj = &ffmpeg_class; /* ffu_log wants a class pointer */

static void ffmpeg_log_cb(void *avcl, int level, const char *fmt, va_list ap)
{
    if (level > av_log_get_level()) return;
    ffu_log_level lv = level <= AV_LOG_WARNING ? FFU_LOG_DEBUG : FFU_LOG_TRACE;
    if ((int)lv > (int)ffu_log_get_level()) return;
    /* FFmpeg builds a line from several calls; the prefix ("[h264 @ 0x...]") is printed
     * only at the start of a line, which av_log_format_line2 tracks per caller. */
    static _Thread_local int print_prefix = 1;
    char line[1024];
    int n = av_log_format_line2(avcl, level, fmt, ap, line, (int)sizeof line, &print_prefix);
    if (n <= 0) return;
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = 0;
    if (len) ffu_log(&ffmpeg_obj, lv, "%s", line);
}

static void apply_log_route(void)
{
    int route = atomic_load(&log_route);
    if (route) av_log_set_callback(route == 2 ? ffmpeg_log_cb : av_log_default_callback);
}

/* Recorded, and applied now only if FFmpeg is loaded already: a process that never
 * opens a video never loads it. */
void ffu_video_route_ffmpeg_log(int enable)
{
    atomic_store(&log_route, enable ? 2 : 1);
    if (atomic_load(&ffmpeg_ready)) apply_log_route();
}
