/* Helpers shared by the video reader and writer (src/video/): FFmpeg error codes to
 * ffu_status with a one-line detail, pixel format mapping, one-time library set-up.
 * Private to src/video. */
#ifndef FFU_VIDEO_INTERNAL_H
#define FFU_VIDEO_INTERNAL_H

#include <libavutil/pixfmt.h>

#include "facefuse/video.h"

/* The ffu_status for an FFmpeg error code (AVERROR_*). */
ffu_status video_status_of(int averr);
/* Records "<name>: <what>: <FFmpeg's text>" and returns video_status_of(averr). */
ffu_status video_av_error(int averr, const char *name, const char *what);
/* AV_PIX_FMT_NONE for formats FFmpeg has no twin for. */
enum AVPixelFormat video_avfmt_of(ffu_pixfmt fmt);
/* avformat_network_init and avdevice registration, once per process. */
void video_global_init(void);

#endif
