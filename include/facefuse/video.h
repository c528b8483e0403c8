/* facefuse video: reading (demux + decode + convert) and writing (convert + encode +
 * mux, with audio copied from a source) on FFmpeg's libraries.
 *
 * A reader turns a file, a URL (rtsp://, http://, ...) or a V4L2 device into a sequence
 * of ffu_image frames in the pixel format the caller chose, with timestamps in seconds.
 * A writer turns ffu_image frames into an H.264 MP4/MKV/MOV file. Both are single-owner
 * objects: one thread at a time (different readers/writers on different threads are
 * independent). See docs/VIDEO.md for ownership, errors and what is not supported yet. */
#ifndef FACEFUSE_VIDEO_H
#define FACEFUSE_VIDEO_H

#include "core.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- reader ---------------------------------------------------------------------------- */

/* Used when ffu_video_reader_opts.timeout_ms is 0. */
#define FFU_VIDEO_TIMEOUT_MS_DEFAULT 10000

typedef enum ffu_rtsp_transport {
    FFU_RTSP_TCP = 0, /* RTP interleaved in the RTSP TCP connection: works through NAT */
    FFU_RTSP_UDP = 1, /* RTP over UDP: lower latency, may lose packets */
} ffu_rtsp_transport;

/* Options of ffu_video_reader_open. A zeroed struct gives the defaults. */
typedef struct ffu_video_reader_opts {
    ffu_pixfmt pixfmt; /* output: RGB24 (when FFU_PIX_NONE), BGR24, RGBA32, GRAY8, NV12, YUV420P */
    int width, height; /* output size, 0 = the video's (NV12/YUV420P: rounded down to even) */
    /* Limit in milliseconds on opening and on each read (each call, not each byte):
     * 0 = FFU_VIDEO_TIMEOUT_MS_DEFAULT, < 0 = wait forever. */
    int timeout_ms;
    ffu_rtsp_transport rtsp_transport;
    int threads;        /* decoder threads: 0 = FFmpeg's choice (per CPU), 1 = none */
    const char *format; /* force a demuxer ("v4l2", "matroska", ...); NULL = probe */
    /* Larger videos give FFU_ERR_TOO_LARGE at open. 0 = FFU_IMAGE_MAX_PIXELS. */
    int64_t max_pixels;
    /* Polled while open or read blocks; a non-zero answer aborts the call with
     * FFU_ERR_CLOSED. Called on the thread that called open/read. NULL = none. */
    int (*interrupt)(void *user);
    void *interrupt_user;
    /* Extra FFmpeg demuxer/protocol options as a NULL-terminated key, value list, e.g.
     * {"video_size", "1280x720", "framerate", "30", NULL} for v4l2. Borrowed. */
    const char *const *av_options;
} ffu_video_reader_opts;

/* What ffu_video_reader_info reports about the opened video stream. */
typedef struct ffu_video_info {
    int width, height;     /* decoded size of the video stream */
    int fps_num, fps_den;  /* average frame rate; 0/1 when unknown */
    double fps;            /* fps_num / fps_den, 0 when unknown */
    double duration;       /* seconds; < 0 when unknown (live sources) */
    int64_t frame_count;   /* from the container, else duration * fps; 0 unknown */
    int frame_count_exact; /* 1 when frame_count comes from the container's index */
    char codec[32];        /* "h264", "hevc", "mpeg4", ... */
    char container[64];    /* FFmpeg's demuxer name, "mov,mp4,m4a,3gp,3g2,mj2" */
    int has_audio;         /* at least one audio stream */
    int audio_streams;
    char audio_codec[32]; /* of the first audio stream, "" when none */
    int seekable;         /* ffu_video_reader_seek can work */
} ffu_video_info;

typedef struct ffu_video_reader_stats {
    int64_t frames;        /* frames returned by read */
    int64_t decode_errors; /* packets the decoder rejected (skipped; see docs/VIDEO.md) */
} ffu_video_reader_stats;

typedef struct ffu_video_reader ffu_video_reader;

/* Opens url: a file path, "file:", "rtsp://", "rtsps://", "http(s)://", "udp://", ...,
 * or a V4L2 device ("/dev/video0"; needs a build with libavdevice). Reads the headers
 * and opens the decoder of the best video stream; opts may be NULL.
 * Errors: FFU_ERR_NOT_FOUND (no such file, HTTP 404), FFU_ERR_FORMAT (not a video /
 * corrupt headers), FFU_ERR_UNSUPPORTED (no video stream, no decoder, unknown protocol),
 * FFU_ERR_TOO_LARGE (over max_pixels), FFU_ERR_TIMEOUT, FFU_ERR_CLOSED (interrupted),
 * FFU_ERR_IO (connection refused, network or file errors). *out NULL on error. */
FFU_API ffu_status ffu_video_reader_open(ffu_video_reader **out, const char *url,
                                         const ffu_video_reader_opts *opts);
/* The same over a file held in memory (custom AVIOContext; seekable). `data` is
 * borrowed and must stay valid and unchanged until close. */
FFU_API ffu_status ffu_video_reader_open_memory(ffu_video_reader **out, const void *data,
                                                size_t size, const ffu_video_reader_opts *opts);
/* NULL is a no-op. */
FFU_API void ffu_video_reader_close(ffu_video_reader *r);

/* Valid until close. */
FFU_API const ffu_video_info *ffu_video_reader_info(const ffu_video_reader *r);
/* The size and pixel format read() produces. */
FFU_API void ffu_video_reader_output(const ffu_video_reader *r, ffu_pixfmt *fmt, int *width,
                                     int *height);
/* Container metadata ("comment", "title", "encoder", ...; keys are case-insensitive), or
 * NULL. Valid until close. */
FFU_API const char *ffu_video_reader_metadata(const ffu_video_reader *r, const char *key);
/* Metadata entry i (0..) as key/value, or NULL past the end. */
FFU_API const char *ffu_video_reader_metadata_at(const ffu_video_reader *r, int i,
                                                 const char **value);

/* Decodes the next frame into `frame` and gives its presentation time in seconds since
 * the video stream's start (the first frame of a file is at 0; pts may be NULL).
 * `frame` is reusable: a zeroed ffu_image is allocated on the first call (the caller
 * releases it with ffu_image_release); an image that already has pixels must have
 * exactly the output format and size (ffu_video_reader_output) and is written in place,
 * so steady-state reading allocates nothing of ours. It is left as it was on error.
 * Returns FFU_OK, FFU_EOF at the end, or an error: FFU_ERR_FORMAT for damaged data
 * (also at the end of a truncated file, after the frames that could be decoded),
 * FFU_ERR_TIMEOUT when no frame came within timeout_ms, FFU_ERR_CLOSED when the
 * interrupt callback asked to stop, FFU_ERR_IO for network/file errors. After an error
 * a reader may be read again (a live source may recover), but the reliable recovery is
 * close + open, which is what the stream layer does. */
FFU_API ffu_status ffu_video_reader_read(ffu_video_reader *r, ffu_image *frame, double *pts);

/* Moves to `seconds` (on the read() clock): the next read returns the first frame whose
 * time is at or after it (within half a frame), decoded from the keyframe before.
 * Past the end: the next read gives FFU_EOF. Non-seekable sources: FFU_ERR_UNSUPPORTED. */
FFU_API ffu_status ffu_video_reader_seek(ffu_video_reader *r, double seconds);

FFU_API void ffu_video_reader_stats_get(const ffu_video_reader *r, ffu_video_reader_stats *s);

/* ---- writer ---------------------------------------------------------------------------- */

/* Options of ffu_video_writer_open. width, height and fps_num are required; the other
 * zero/NULL fields take the defaults shown. */
typedef struct ffu_video_writer_opts {
    int width, height;    /* frame size; even for yuv420p */
    int fps_num, fps_den; /* frame rate as a rational, e.g. 30000/1001 (fps_den 0 = 1) */
    const char *codec;    /* FFmpeg encoder name; NULL = "libx264" */
    int crf;              /* quality 1 (best) .. 51; 0 = 23. Ignored when bitrate > 0 */
    const char *preset;   /* x264 preset ("ultrafast" .. "veryslow"); NULL = "medium" */
    int64_t bitrate;      /* average bit/s instead of crf; 0 = crf */
    const char *pix_fmt;  /* encoded pixel format: "yuv420p" (NULL) or "yuv444p" */
    int gop;              /* keyframe interval in frames; 0 = encoder default */
    int threads;          /* encoder threads; 0 = FFmpeg's choice */
    const char *format;   /* container ("mp4", "matroska", "mov"); NULL = by extension */
    int faststart;        /* mp4/mov: move the index to the front (one more pass) */
    /* Copy every audio stream of this file into the output, packet by packet (no
     * re-encoding), starting at the source's first video frame (the origin of
     * ffu_video_reader_read's pts) and ending with the last video frame written.
     * Streams the container cannot hold are skipped with a warning. NULL = no audio. */
    const char *audio_from;
} ffu_video_writer_opts;

typedef struct ffu_video_writer_stats {
    int64_t frames;        /* video frames accepted */
    int64_t audio_packets; /* audio packets copied so far */
} ffu_video_writer_stats;

typedef struct ffu_video_writer ffu_video_writer;

/* Prepares to write `path` (.mp4, .m4v, .mov, .mkv; other extensions if FFmpeg knows
 * them). Output goes to a temporary file beside path ("<dir>/.<name>.part-<pid>-<n>")
 * that close() renames over path, so path is never seen half-written; every failure
 * removes the temporary file and leaves path as it was. Errors: FFU_ERR_INVALID (bad
 * options), FFU_ERR_UNSUPPORTED (unknown container or encoder), FFU_ERR_NOT_FOUND /
 * FFU_ERR_FORMAT (audio_from cannot be opened), FFU_ERR_IO. *out NULL on error. */
FFU_API ffu_status ffu_video_writer_open(ffu_video_writer **out, const char *path,
                                         const ffu_video_writer_opts *opts);
/* Sets a container tag, e.g. ("comment", "synthetic: face swapped by facefuse").
 * Before the first frame only (FFU_ERR_INVALID after); value NULL deletes the key.
 * MP4/MOV keep the iTunes-style keys (title, comment, artist, ...); MKV keeps any key. */
FFU_API ffu_status ffu_video_writer_set_metadata(ffu_video_writer *w, const char *key,
                                                 const char *value);
/* Encodes one frame: RGB24, BGR24, RGBA32, GRAY8, NV12 or YUV420P of the writer's size
 * (borrowed; any stride). pts in seconds; < 0 = right after the previous frame. pts are
 * rounded to the frame rate's grid and must increase (FFU_ERR_INVALID otherwise, and the
 * frame is not written). Other errors (encoder or disk) are sticky: every later call
 * fails with the same status and close() discards the output. */
FFU_API ffu_status ffu_video_writer_write(ffu_video_writer *w, const ffu_image *frame, double pts);
/* Flushes the encoder, copies the rest of the audio, writes the trailer and renames the
 * file into place. Returns the first error of the writer's life (then nothing is left
 * at path; a file already there is untouched) — FFU_ERR_INVALID when no frame was
 * written. Frees w in every case; NULL is a no-op returning FFU_OK. */
FFU_API ffu_status ffu_video_writer_close(ffu_video_writer *w);
/* Stops without finishing: removes the temporary file and frees w. NULL is a no-op. */
FFU_API void ffu_video_writer_abort(ffu_video_writer *w);

FFU_API void ffu_video_writer_stats_get(const ffu_video_writer *w, ffu_video_writer_stats *s);

/* ---- FFmpeg logging -------------------------------------------------------------------- */

/* FFmpeg prints its own warnings to stderr by default. This routes them (process-wide,
 * FFmpeg's setting is global) into ffu_log: FFmpeg errors and warnings as
 * FFU_LOG_DEBUG, since every failure that matters also comes back as a status with a
 * detail; enable = 0 restores FFmpeg's default printer. */
FFU_API void ffu_video_route_ffmpeg_log(int enable);

#ifdef __cplusplus
}
#endif
#endif
