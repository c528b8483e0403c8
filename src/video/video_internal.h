/* Helpers shared by the video reader and writer (src/video/): FFmpeg error codes to
 * ffu_status with a one-line detail, pixel format mapping, one-time library set-up.
 * Private to src/video. */
#ifndef FFU_VIDEO_INTERNAL_H
#define FFU_VIDEO_INTERNAL_H

#include "facefuse/video.h"
#include "video/av_libs.h"

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
/* Loads FFmpeg (video_av_load), then avformat_network_init and the log routing asked
 * for, once per process. Every public entry that reaches FFmpeg before an object of
 * ours exists calls it first: FFU_OK, or the loader's FFU_ERR_UNSUPPORTED. */
ffu_status video_global_init(void);
/* Registers libavdevice's input formats (v4l2, ...) with libavformat, loading the
 * library on first use rather than linking it: it drags some 80 more shared libraries
 * (SDL, PulseAudio, flite voices, ...) and 18 MiB of resident memory into every
 * process that links facefuse. 1 when the devices are there (builds with
 * FFU_HAVE_AVDEVICE where the library loads), else 0. Thread-safe. */
int video_devices_load(void);
/* The library video_devices_load loads ("libavdevice.so.59"), NULL in a build without. */
const char *video_devices_library(void);

/* ---- NVDEC through FFmpeg's CUDA hwaccel (src/video/hwaccel.c) ---------------------- */

struct AVBufferRef;
struct AVCodec;
struct AVCodecContext;
struct AVFrame;

/* A reader's hardware decoding state. Zeroed = CPU decoding. */
typedef struct video_hw {
    ffu_video_hwaccel want;   /* what the options asked for */
    ffu_video_hwaccel active; /* CUDA while NVDEC decodes; NONE on the CPU */
    int device;
    ffu_gpu *gpu;                   /* held from an open that chose CUDA until close */
    struct AVBufferRef *device_ref; /* FFmpeg's CUDA device on the primary context */
    ffu_gpu_stream *stream;         /* this reader's stream for NVDEC's surface copies,
                                       given to FFmpeg; NULL: the legacy default stream */
    int refused;                    /* get_format was offered no CUDA surface */
} video_hw;

/* FFU_ERR_INVALID for an out-of-range hwaccel or a negative hw_device. */
ffu_status video_hw_check_opts(const ffu_video_reader_opts *o, const char *name);
/* Decides where to decode the stream `codec` (*codec) is for. CUDA: opens the ffu_gpu
 * and FFmpeg's CUDA device on the same primary context, and may replace *codec by
 * another decoder of the same codec that has a CUDA hwaccel (AV1: libdav1d has none,
 * FFmpeg's own "av1" has). AUTO without NVDEC: FFU_OK, CPU, one info line on log_obj.
 * CUDA without NVDEC: FFU_ERR_DEVICE saying why. */
ffu_status video_hw_open(video_hw *hw, const void *log_obj, const char *name,
                         const ffu_video_reader_opts *o, const struct AVCodec **codec);
/* Connects an allocated, not yet opened decoder context to the CUDA device. */
ffu_status video_hw_attach(video_hw *hw, struct AVCodecContext *dec, const char *name);
/* After each decoded frame: FFU_OK when it is where hw says, 1 when NVDEC refused the
 * stream and AUTO moved to the CPU (hw->active changed; logged), FFU_ERR_DEVICE when
 * CUDA was required. */
ffu_status video_hw_frame_check(video_hw *hw, const void *log_obj, const char *name,
                                const struct AVCodecContext *dec, const struct AVFrame *f);
/* Copies a CUDA frame into dst (host, the surface's sw format), reusing dst's buffers
 * when they fit. Also copies the colour fields convert needs. */
ffu_status video_hw_download(struct AVFrame *dst, const struct AVFrame *src, const char *name);
/* Waits for the work FFmpeg queued on the device (the surface copy of the frame). */
ffu_status video_hw_sync(video_hw *hw, const char *name);
/* FFmpeg's CUDA surface format of f (AV_PIX_FMT_NV12, P010, ...), NONE if not CUDA. */
enum AVPixelFormat video_hw_sw_format(const struct AVFrame *f);
void video_hw_close(video_hw *hw);

#endif
