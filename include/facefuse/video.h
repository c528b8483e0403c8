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
#include "gpu.h"
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

/* Where a reader decodes (docs/VIDEO.md, "Hardware decoding"). */
typedef enum ffu_video_hwaccel {
    FFU_VIDEO_HWACCEL_NONE = 0, /* libavcodec on the CPU */
    FFU_VIDEO_HWACCEL_AUTO,     /* NVDEC when this build, the machine and the codec allow it,
                                 * else the CPU (one info log line says why) */
    FFU_VIDEO_HWACCEL_CUDA,     /* NVDEC required: open fails with FFU_ERR_DEVICE without it */
    FFU_VIDEO_HWACCEL_COUNT
} ffu_video_hwaccel;

/* "none", "auto", "cuda"; "unknown" for values out of range. */
FFU_API const char *ffu_video_hwaccel_name(ffu_video_hwaccel h);
/* The inverse (exact, lower case); FFU_ERR_INVALID naming the choices otherwise. */
FFU_API ffu_status ffu_video_hwaccel_parse(const char *s, ffu_video_hwaccel *out);

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
    /* Decoder: NONE (CPU, the default), AUTO or CUDA (NVDEC through FFmpeg's CUDA
     * hwaccel, frames stay in device memory until read() needs them on the host). */
    ffu_video_hwaccel hwaccel;
    int hw_device; /* CUDA device index (as ffu_gpu_open counts them) for AUTO/CUDA */
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
    /* The decoder in use: hwaccel is FFU_VIDEO_HWACCEL_CUDA while NVDEC decodes, NONE on
     * the CPU; decoder names it, "h264 (nvdec)", "h264 (cpu)", "libdav1d (cpu)". Set at
     * open; if NVDEC refuses the stream at its first frame (profile, size), AUTO moves
     * to the CPU and both change then. */
    ffu_video_hwaccel hwaccel;
    char decoder[48];
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
 * frame NULL decodes the next frame and reports its pts without converting it (for
 * samplers that keep 1 frame in N: the conversion is skipped for the others).
 * Returns FFU_OK, FFU_EOF at the end, or an error: FFU_ERR_FORMAT for damaged data
 * (also at the end of a truncated file, after the frames that could be decoded),
 * FFU_ERR_TIMEOUT when no frame came within timeout_ms, FFU_ERR_CLOSED when the
 * interrupt callback asked to stop, FFU_ERR_IO for network/file errors. After an error
 * a reader may be read again (a live source may recover), but the reliable recovery is
 * close + open, which is what the stream layer does. */
FFU_API ffu_status ffu_video_reader_read(ffu_video_reader *r, ffu_image *frame, double *pts);

/* Decodes the next frame and gives it as a view of device memory (NV12, the decoded
 * size, data[0] = Y, data[1] = interleaved UV, strides in bytes, frame->gpu = the
 * reader's ffu_gpu of hw_device, owned = 0) in the CUDA runtime's primary context,
 * the one ffu_gpu_open shares. Nothing is copied when NVDEC produced NV12; the decode is
 * complete when this returns. The view is valid until the next read, read_gpu, seek or
 * close of r, and the decoder may reuse the surface after that call: synchronise any
 * stream that reads the view before reading on. Do not release it
 * (ffu_gpu_image_release of a view is harmless). Odd sizes are rounded down to even.
 * Needs a reader that opened with NVDEC (info.hwaccel == CUDA at open), else
 * FFU_ERR_UNSUPPORTED; a stream NVDEC later refused (AUTO), or a surface that is not
 * NV12 (10-bit), is converted on the CPU and uploaded into a buffer the reader owns,
 * with the same validity. Returns as read(); frame zeroed on error. */
FFU_API ffu_status ffu_video_reader_read_gpu(ffu_video_reader *r, ffu_gpu_image *frame,
                                             double *pts);

/* The colour coding of the last decoded frame (of the stream's header before the first):
 * matrix 601, 709 or 2020 (untagged: 709 from 1280 wide or 577 high up, else 601),
 * full_range 1 for 0..255 luma, 0 for 16..235. For turning read_gpu's NV12 into RGB the
 * way read() does. Either pointer may be NULL. */
FFU_API void ffu_video_reader_color(const ffu_video_reader *r, int *matrix, int *full_range);

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

/* ---- live streams: reconnect, sampling, bounded rings (src/video/stream.c) ---------- */

/* A stream runs one reader on its own thread: it opens the source, decodes, keeps one
 * frame per 1/sample_fps seconds of stream time, and puts it into a bounded ring that
 * the consumer pops from. Live sources (rtsp, http, udp, v4l2, or live = 1) are
 * reopened after an error, a stall or EOF, waiting backoff_initial_s, doubled after
 * each failed attempt up to backoff_max_s, reset after a frame arrives. Files end at
 * EOF. When the ring is full a live stream drops the oldest frame (counted); a file
 * waits for the consumer (no frame of a file is lost) unless drop_when_full is 1.
 * Frames live in a fixed set of ring_capacity + max_held image slots allocated at
 * the first frame: steady-state streaming allocates nothing. */

typedef enum ffu_stream_state {
    FFU_STREAM_CONNECTING = 0, /* opening the source */
    FFU_STREAM_RUNNING,        /* frames are arriving */
    FFU_STREAM_BACKOFF,        /* waiting before the next reconnect attempt */
    FFU_STREAM_ENDED,          /* a file reached EOF (ring still drains) */
    FFU_STREAM_FAILED,         /* gave up: a file error, or max_reconnects spent */
    FFU_STREAM_STOPPED,        /* ffu_stream_stop was called */
} ffu_stream_state;

FFU_API const char *ffu_stream_state_name(ffu_stream_state s); /* "connecting", ... */

typedef struct ffu_stream_opts {
    const char *name;      /* label in logs and health; NULL = the url (copied) */
    double sample_fps;     /* frames kept per second of stream time; 0 = 5, < 0 = all */
    int ring_capacity;     /* frames waiting for the consumer; 0 = 4 */
    int max_held;          /* frames the consumer may hold at once (popped, not yet
                            * released); 0 = 2. pop fails with FFU_AGAIN beyond it */
    int live;              /* -1/0 = by URL scheme (rtsp/rtsps/http/https/udp/rtp/srt,
                            * /dev/video*: live), 1 = live (reconnect even on EOF),
                            * 2 = a file (end at EOF; no reconnect) */
    int drop_when_full;    /* files: 1 = drop the oldest like a live source */
    int realtime;          /* files: 1 = pace reading at the file's own speed, as a camera
                            * would deliver it (for benchmarks and demos) */
    int loop;              /* files: 1 = start again at EOF (with realtime: a camera) */
    double stall_s;        /* live: no frame for this long = stall -> reconnect; 0 = 10 */
    double backoff_initial_s; /* 0 = 0.5 */
    double backoff_max_s;     /* 0 = 10 */
    int max_reconnects;       /* live: attempts in a row before FAILED; 0 = forever */
    ffu_video_reader_opts reader; /* pixel format, size, timeouts, transport, threads,
                                   * hwaccel (NVDEC; without gpu_frames frames reach the
                                   * ring on the host, only sampled ones are downloaded;
                                   * health.decoder).
                                   * timeout_ms 0 = min(stall_s, 10 s) */
    /* 1: while the reader decodes with NVDEC, sampled frames stay in device memory: the
     * ring's slots are NV12 ffu_gpu_images (allocated once from the pool of the reader's
     * device), each filled by a device-to-device copy of the NVDEC surface on the
     * stream's own CUDA stream, and frame->on_gpu is 1 (frame->image is empty). Without
     * NVDEC (hwaccel none, AUTO on a machine without it, NVDEC refusing the codec, a
     * reconnection at another size) the stream gives host frames as if this were 0:
     * not an error; health.gpu_frames says which, and one info line says why. */
    int gpu_frames;
} ffu_stream_opts;

/* One sampled frame, owned by the stream until ffu_stream_release. */
typedef struct ffu_stream_frame {
    ffu_image image;      /* read-only for the consumer */
    double pts;           /* seconds on the stream clock; for live sources it continues
                           * monotonically across reconnects (offset by the gap) */
    int64_t seq;          /* sampled frame number, 0.. (gaps = drops) */
    int64_t decoded_seq;  /* decoded frame number, 0.. */
    int64_t wall_ns;      /* ffu_time_unix_ns() when it was decoded */
    int generation;       /* connection number, 0.. (incremented by every reconnect) */
    /* gpu_frames: on_gpu 1 when the frame is `gpu` (NV12 in device memory, owned by the
     * stream, read-only, valid until release) instead of `image`. */
    int on_gpu;
    ffu_gpu_image gpu;
    /* How the frame's YUV is coded (for `gpu`, and for `image` when the stream gives
     * NV12 / YUV420P): yuv_full_range 0 = limited 16..235, the usual video range;
     * yuv_matrix the stream's matrix as ffu_video_reader_color reports it (BT.709 for
     * HD and tagged streams). Decode with
     * ffu_gpu_image_convert_yuv(..., (ffu_yuv_coding){yuv_matrix, yuv_full_range ?
     * FFU_YUV_FULL : FFU_YUV_LIMITED}) for the colours read() would give. */
    int yuv_full_range;
    ffu_yuv_matrix yuv_matrix;
} ffu_stream_frame;

typedef struct ffu_stream_health {
    ffu_stream_state state;
    double input_fps;      /* decoded frames per second, over the last ~2 s */
    double sampled_fps;    /* frames put into the ring per second, same window */
    double processed_fps;  /* frames released by the consumer per second, same window */
    int64_t decoded, sampled, processed;
    int64_t dropped;       /* sampled frames evicted from a full ring */
    int64_t reconnects;    /* successful reopenings after the first open */
    int64_t errors;        /* failed opens/reads */
    int ring_size;         /* frames waiting now */
    int width, height;     /* output size (0 until the first open) */
    double source_fps;     /* the source's declared rate; 0 unknown */
    double thread_cpu_s;   /* CPU time of the stream's thread (demux, decode, convert) */
    char decoder[48];      /* ffu_video_info.decoder of the current connection, "" before */
    int gpu_frames;        /* 1 while sampled frames go into the ring in device memory */
    char last_error[256];  /* the last error message, "" when none */
} ffu_stream_health;

typedef struct ffu_stream ffu_stream;

FFU_API void ffu_stream_opts_default(ffu_stream_opts *o);
/* Creates and starts the stream thread; returns at once (the first open happens on the
 * thread; its failure shows in health and in pop's status). opts may be NULL.
 * FFU_ERR_INVALID for bad options. */
FFU_API ffu_status ffu_stream_open(ffu_stream **out, const char *url, const ffu_stream_opts *opts);
/* Waits up to timeout_ms (< 0 forever) for the next frame. FFU_OK: *frame points at a
 * slot that stays valid until ffu_stream_release. FFU_ERR_TIMEOUT: none came in time.
 * FFU_EOF: the stream ended (file EOF, or stopped) and the ring is empty. A failed
 * stream returns its error (FFU_ERR_NOT_FOUND, FFU_ERR_FORMAT, ...) once the ring is
 * empty. FFU_AGAIN: max_held frames are already held. Thread-safe. */
FFU_API ffu_status ffu_stream_pop(ffu_stream *s, ffu_stream_frame **frame, int timeout_ms);
/* Gives a popped frame back (counted as processed). NULL is a no-op. Thread-safe. */
FFU_API void ffu_stream_release(ffu_stream *s, ffu_stream_frame *frame);
/* Asks the thread to stop (interrupting a blocking open/read); pop then drains what is
 * in the ring and returns FFU_EOF. Async-signal-unsafe; thread-safe; idempotent. */
FFU_API void ffu_stream_stop(ffu_stream *s);
/* Stops, joins and frees; frames still held become invalid. NULL is a no-op. */
FFU_API void ffu_stream_close(ffu_stream *s);
FFU_API void ffu_stream_health_get(ffu_stream *s, ffu_stream_health *h);
FFU_API const char *ffu_stream_name(const ffu_stream *s);
/* Copies the info of the current (or last) connection; zeroed before the first
 * successful open. Thread-safe. */
FFU_API void ffu_stream_info(ffu_stream *s, ffu_video_info *info);

/* ---- FFmpeg logging -------------------------------------------------------------------- */

/* FFmpeg prints its own warnings to stderr by default. This routes them (process-wide,
 * FFmpeg's setting is global) into ffu_log: FFmpeg errors and warnings as
 * FFU_LOG_DEBUG, since every failure that matters also comes back as a status with a
 * detail; enable = 0 restores FFmpeg's default printer. FFmpeg is loaded when the
 * process first opens a video; asked before that, the routing applies from then on. */
FFU_API void ffu_video_route_ffmpeg_log(int enable);

#ifdef __cplusplus
}
#endif
#endif
