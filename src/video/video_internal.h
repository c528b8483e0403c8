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
/* ffu_video_reader_read in two steps, so that a sampler converts only the frames it
 * keeps: decode gives the next frame's pts and holds the frame; convert (optional, any
 * number of times) turns the held frame into img like read would. The next decode,
 * read, seek or close drops the held frame. */
ffu_status video_reader_decode(ffu_video_reader *r, double *pts);
ffu_status video_reader_convert(ffu_video_reader *r, ffu_image *img);
/* skip 1: the decoder drops frames no other frame refers to (B-frames without
 * descendants) instead of decoding them: a sampler that keeps 1 frame in N saves their
 * decoding, and the next kept frame comes at most a frame or two later. */
void video_reader_skip_nonref(ffu_video_reader *r, int skip);
/* avformat_network_init and avdevice registration, once per process. */
void video_global_init(void);

#endif
