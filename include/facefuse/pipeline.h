/* facefuse pipeline: the analyze job. Several video streams (files, RTSP, HTTP, V4L2)
 * are decoded and sampled on their own threads (ffu_stream), and one pool of workers
 * runs detection, tracking, landmarks, embedding, gallery search and identity voting for
 * all of them, batching the models' work across streams. Out come events (a JSONL file
 * and a C callback), identity snapshots, per-stream heatmaps (PNG) and annotated videos
 * (H.264, audio copied).
 *
 * Lifecycle: create -> add_stream (one or more) -> run (blocks until every file stream
 * has ended, or stop was called) -> stats -> destroy. ffu_pipeline_stop only sets an
 * atomic flag, so a signal handler may call it; run then stops the streams, drains
 * what was decoded, flushes the trackers (track_ended events), finishes the videos and
 * heatmaps and flushes the events file before it returns.
 *
 * Design, scheduler and batching, event schema and measured costs: docs/ANALYZE.md.
 *
 * GPU (backend "cuda"): every worker's models run on the GPU (each model session with
 * its own CUDA stream), streams that decode with NVDEC on the pipeline's device keep
 * their frames in device memory (detection, face quality, embedding and watchlist
 * search read them there), and frames come to the host only for what needs them there
 * (annotated video, snapshots, heatmaps, landmarks, liveness), through pinned buffers.
 * docs/ANALYZE.md, "GPU", has the batching policy and what has run on a GPU. */
#ifndef FACEFUSE_PIPELINE_H
#define FACEFUSE_PIPELINE_H

#include "core.h"
#include "face.h"
#include "gallery.h"
#include "track.h"
#include "video.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FFU_PIPELINE_MAX_STREAMS 256

/* Called for every event of every stream, on a worker thread (events of one stream
 * come in order; different streams may call at the same time). `e` and the strings it
 * points to (name, snapshot, zone names) are valid during the call only. */
typedef void (*ffu_pipeline_event_fn)(void *user, int stream, const char *stream_name,
                                      const ffu_track_event *e);

typedef struct ffu_pipeline ffu_pipeline;

/* Called about every progress_s seconds on the thread running ffu_pipeline_run (for
 * status lines: read ffu_pipeline_stream_stats from it). */
typedef void (*ffu_pipeline_progress_fn)(void *user, ffu_pipeline *p);

/* Options of ffu_pipeline_create; ffu_pipeline_opts_default gives the values in the
 * comments. Strings are borrowed during create only (copied). */
typedef struct ffu_pipeline_opts {
    double sample_fps;      /* 5: frames analysed per second of each stream; < 0 = all */
    /* Watchlist: a directory (one sub-directory of photos per person; see gallery.h) or
     * a gallery file written by ffu_gallery_save. NULL = no watchlist: every decided
     * track is reported as unknown_face. `gallery` (borrowed, must outlive the
     * pipeline) is used instead when set. */
    const char *watchlist;
    const ffu_gallery *gallery;
    const char *zones;       /* zones JSON file (track.h's format), same for every stream */
    const char *events_path; /* JSONL file, one event per line; NULL = none */
    ffu_pipeline_event_fn on_event;
    void *user;
    const char *snapshot_dir; /* identity_confirmed / unknown_face face crops (JPEG) */
    const char *heatmap_dir;  /* <stream>.png and <stream>_overlay.png at the end */
    float liveness_gate;      /* 0 = off; else identity votes need liveness >= gate */
    /* a face votes for its best watchlist match only when that beats the next identity
     * by at least this much; closer calls vote "unknown" (0 = off). Default -1 = by the
     * embedder: ffu_embedder_margin, 0.018 for dlib-resnet, 0.096 for faceres */
    float id_margin;
    /* Model specs (face.h's ffu_zoo_resolve); NULL = the role's default. landmarks
     * "none" (the default) aligns faces from the detector's keypoints; a landmarker
     * ("facemesh") refines them first (slower; see docs/ANALYZE.md for the measured
     * effect). */
    const char *detector, *landmarks, *embedder, *liveness;
    /* "cpu" (NULL), "ref" or "cuda". cuda: create fails with FFU_ERR_DEVICE (no
     * usable device) or FFU_ERR_UNSUPPORTED (a build without CUDA) before any model
     * is loaded. */
    const char *backend;
    int device;          /* cuda: CUDA device of the models (0 = the first) */
    int fp16;            /* cuda: fp16 compute where each node's accuracy check passes */
    int bf16;            /* cpu: bf16 compute where each node's accuracy check passes */
    /* cuda: 1 = frames always come to the host (NVDEC frames are downloaded by the
     * stream), as on the CPU; 0 = streams that decode with NVDEC on `device` hand their
     * frames over in device memory (ffu_stream_opts.gpu_frames). */
    int host_frames;
    int workers;         /* worker threads; 0 = CPU count */
    /* Most faces per embedder run; 0 (the default) = by backend: 8 on the CPU, 64 on
     * the GPU. Frames per detector run: at most 2 on the CPU, 8 on the GPU (and never
     * more than max_batch); see docs/ANALYZE.md. */
    int max_batch;
    int max_wait_ms;     /* 4: how long a partial batch may wait for other streams */
    int realtime;        /* files are read at their own speed, as a camera would */
    int min_face;        /* smallest face to find (pixels); 0 = whole-frame detection */
    double dwell_s;      /* 0 = off: dwell_alarm when a track is seen this long */
    /* Tracker settings for every stream; NULL = ffu_tracker_opts_default with the
     * pipeline's choices (thresholds from the embedder, see ANALYZE.md). name,
     * on_event and user are the pipeline's and are ignored here. */
    const ffu_tracker_opts *tracker;
    ffu_pipeline_progress_fn on_progress;
    void *progress_user;
    double progress_s; /* 0.5 */
} ffu_pipeline_opts;

/* One input. */
typedef struct ffu_pipeline_stream_opts {
    const char *url;      /* file path or URL (required) */
    const char *name;     /* label in events and file names; NULL = derived from url */
    /* Annotated output video (.mp4/.mkv/.mov); "{name}" in it becomes the stream's
     * name (for one pattern over many streams). NULL = none. */
    const char *annotate;
    int live;             /* as ffu_stream_opts.live: 0 = by URL, 1 live, 2 file */
    int loop;             /* files: start again at EOF (with realtime: a camera) */
    int hwaccel;          /* ffu_video_hwaccel: decode on NVDEC (auto/cuda) or CPU (0) */
    int hw_device;        /* CUDA device for hwaccel */
} ffu_pipeline_stream_opts;

/* Per-stream numbers; times are totals in milliseconds of worker time. */
typedef struct ffu_pipeline_stream_stats {
    char name[128];
    ffu_stream_health health; /* decode side: input fps, drops, reconnects, last error */
    int64_t frames;           /* frames analysed */
    double processed_fps;     /* frames analysed per second, over the last ~2 s */
    int64_t faces;            /* detections */
    int64_t embeddings;       /* faces embedded */
    int64_t tracks;           /* tracks confirmed (face_appeared) */
    int64_t identities;       /* identity_confirmed events */
    int64_t unknown;          /* unknown_face events */
    int64_t events;           /* all events */
    double detect_ms, track_ms, landmarks_ms, embed_ms, search_ms, annotate_ms;
    double first_pts, last_pts; /* stream seconds of the first and last analysed frame */
    float min_face; /* side (pixels) of the smallest face looked for in its frames, as
                       ffu_detector_smallest_face gives it for the first; 0 before one */
    int finished;      /* input ended (or failed) and everything was written */
    ffu_status status; /* FFU_OK, or why the stream failed (message in error) */
    char error[256];
} ffu_pipeline_stream_stats;

/* Whole-run numbers. */
typedef struct ffu_pipeline_stats {
    int streams;
    int64_t frames, faces, embeddings, events;
    int64_t detect_runs, embed_runs;     /* model runs (a batch is one run) */
    int64_t detect_items, embed_items;   /* frames / faces they carried */
    int max_detect_batch, max_embed_batch;
    int64_t cross_stream_embed_runs;     /* embedder runs holding faces of >= 2 streams */
    int64_t cross_stream_detect_runs;
    double wall_s;                       /* run's duration */
    double busy_ms;                      /* worker time spent in steps */
    int detect_batched;                  /* 1: the detector takes several frames per run */
    /* backend cuda */
    int on_gpu;                 /* 1: the models run on the GPU */
    int64_t gpu_frames;         /* frames analysed from device memory (NVDEC, no download) */
    int64_t host_downloads;     /* device frames downloaded whole (annotation, snapshots,
                                 * heatmap, landmarks, liveness) */
    int64_t gpu_searches;       /* faces searched against the watchlist on the GPU */
} ffu_pipeline_stats;

FFU_API void ffu_pipeline_opts_default(ffu_pipeline_opts *o);

/* Loads the models (one set per worker), the watchlist and the zones file. Errors name
 * the culprit: FFU_ERR_NOT_FOUND (watchlist, zones file or model missing),
 * FFU_ERR_FORMAT (bad zones JSON, damaged gallery file), FFU_ERR_INVALID (a gallery
 * made by another embedder, bad option). *out NULL on error. */
FFU_API ffu_status ffu_pipeline_create(const ffu_pipeline_opts *o, ffu_pipeline **out);
/* Frees everything (run must have returned; a pipeline that never ran just closes).
 * NULL is a no-op. */
FFU_API void ffu_pipeline_destroy(ffu_pipeline *p);

/* Adds an input before run (FFU_ERR_INVALID after). Nothing is opened yet: a missing
 * file or unreachable camera shows up in that stream's stats after run. *index (may be
 * NULL) gets the stream's number. Names must be unique (a duplicate gets "-2", ...). */
FFU_API ffu_status ffu_pipeline_add_stream(ffu_pipeline *p, const ffu_pipeline_stream_opts *so,
                                           int *index);
FFU_API int ffu_pipeline_stream_count(const ffu_pipeline *p);

/* Runs until every stream has ended (files: EOF or error; live sources only end when
 * stopped or when they give up reconnecting) or ffu_pipeline_stop. Then flushes
 * trackers, finishes annotated videos (renamed into place) and heatmaps and flushes the
 * events file. Returns FFU_OK when every stream ended cleanly; otherwise the first
 * failed stream's status, with the message "stream NAME: reason" (the other streams
 * still ran to their end). Before anything is opened, FFU_ERR_INVALID when an output
 * (the events file, an annotated video) is some stream's input, and FFU_ERR_IO when
 * the events file cannot be created; nothing ran then. Once per pipeline. */
FFU_API ffu_status ffu_pipeline_run(ffu_pipeline *p);

/* Asks run to finish early. Only stores to an atomic flag: async-signal-safe, callable
 * from any thread, before or during run, any number of times. */
FFU_API void ffu_pipeline_stop(ffu_pipeline *p);

/* Thread-safe (from on_progress, an event callback or another thread). */
FFU_API ffu_status ffu_pipeline_stream_stats_get(ffu_pipeline *p, int stream,
                                             ffu_pipeline_stream_stats *s);
FFU_API void ffu_pipeline_stats_get(ffu_pipeline *p, ffu_pipeline_stats *s);

/* Identities confirmed on a stream so far (gallery indices, each once, in order of
 * first confirmation); returns how many, writes up to cap. */
FFU_API int ffu_pipeline_stream_identities(ffu_pipeline *p, int stream, int *ids, int cap);
/* The watchlist in use (NULL when none); valid until destroy. */
FFU_API const ffu_gallery *ffu_pipeline_gallery(const ffu_pipeline *p);

#ifdef __cplusplus
}
#endif
#endif
