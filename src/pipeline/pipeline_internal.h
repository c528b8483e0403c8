/* Private state of the analyze pipeline, shared by the scheduler (pipeline.c: workers,
 * batching, the feeder loop), the outputs (outputs.c: events, snapshots, annotated
 * video, heatmaps) and the GPU helpers (gpu_frames.c: device frames, downloads, face
 * quality on device frames, watchlist search on the GPU). One pl_stream per input, one
 * pl_worker per worker thread, one pl_job per frame in flight. */
#ifndef FFU_PIPELINE_INTERNAL_H
#define FFU_PIPELINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "facefuse/gpu.h"
#include "facefuse/pipeline.h"
#include "face/face_internal.h"

/* Frames of one stream in flight at once: one in the tracking/embedding step, the
 * others being detected (detection is stateless, so it may run ahead). */
#define PL_MAX_INFLIGHT 3
#define PL_MAX_BATCH 64   /* embedder; the detector takes at most 8 per run */
/* Batch sizes are powers of two, one model handle each (1, 2, 4, ... 64): a session
 * re-plans whenever its batch size changes, which costs several inferences (measured
 * 15-30 ms against 7 ms for one faceres run; on the GPU a re-plan also drops the CUDA
 * graph), so each size keeps its own plan. */
#define PL_BUCKETS 7
/* Frames per detector run. On the CPU (one oneDNN thread per worker) BlazeFace costs
 * 3.7 ms a frame alone, 3.8 in pairs, 4.7 in fours and 6.2 in eights (activations
 * outgrow the caches), so cross-stream detection batches stop at two here; a GPU
 * backend would raise this. */
#define PL_DET_BATCH 2
/* On the GPU a batch of 8 frames costs little more than one (the kernels are far from
 * filling an H200 with one 128x128 input), so detection batches go up to 8 there, and
 * the embedder's default cap is 64 faces. */
#define PL_DET_BATCH_GPU 8
#define PL_EMBED_BATCH_CPU 8
#define PL_EMBED_BATCH_GPU 64
#define PL_FPS_WINDOW 32  /* completion times kept for processed_fps */

typedef struct pl_stream pl_stream;
typedef struct ffu_pipeline ffu_pipeline;

typedef struct pl_job {
    pl_stream *ps;
    ffu_stream_frame *frame;
    int64_t order; /* per stream: 0, 1, ... in the order frames were popped */
    ffu_face_list faces;
    ffu_track_result *res;
    int res_cap;
    int *embed_idx; /* faces the tracker wants embedded */
    int embed_cap, n_embed, embed_left;
    /* GPU watchlist search, per face: the best two matches and how many there are
     * (-1: not searched on the GPU, finish searches on the CPU) */
    ffu_gallery_match *match;
    int *nmatch;
    int match_cap;
    struct pl_job *next;
    int in_use;
} pl_job;

/* The best face crop of a track so far, for its snapshot. */
typedef struct pl_crop {
    int track_id;
    float quality;
    ffu_image img;
} pl_crop;

struct pl_stream {
    ffu_pipeline *p;
    int index;
    char *name, *url, *annotate;
    int live, loop;
    int hwaccel, hw_device; /* decoder choice (ffu_video_hwaccel) */
    int gpu_frames;         /* asked the stream for device frames */
    ffu_stream *s;
    ffu_tracker *t;
    ffu_heatmap *hm;
    ffu_video_writer *w;
    int writer_failed;
    ffu_image canvas; /* the annotated frame */
    ffu_image first;  /* a copy of the first frame, under the heatmap overlay */
    int width, height;
    ffu_track_info *tracks; /* annotation scratch */
    int tracks_cap;
    pl_crop *crops;
    int ncrops, crops_cap;

    /* scheduling, under p->mu */
    pl_job jobs[PL_MAX_INFLIGHT];
    int inflight;       /* jobs handed out and not finished */
    int in_detect;      /* jobs queued for or in detection */
    int64_t next_order; /* order of the next popped frame */
    int64_t next_track; /* order whose tracking step is due */
    pl_job *ready;      /* detected jobs waiting for their tracking step, by order */
    int busy;           /* a worker owns the tracker (track .. finish) */
    int input_done;     /* pop gave EOF or an error */
    int finalized;

    /* numbers, under p->smu */
    ffu_pipeline_stream_stats st;
    int *ids; /* identities confirmed, each once */
    int nids, ids_cap;
    int64_t done_ns[PL_FPS_WINDOW]; /* completion times, a ring */
    int done_n;
    double last_time; /* stream time of the last tracked frame */
};

typedef struct pl_worker {
    ffu_pipeline *p;
    pthread_t th;
    int started;
    ffu_detector *det[PL_BUCKETS]; /* det[b] runs batches of 1 << b frames */
    ffu_landmarker *lm;
    ffu_embedder *emb[PL_BUCKETS]; /* emb[b] runs batches of 1 << b faces */
    ffu_liveness *live;
    ffu_nn_workspace *ws; /* the activations of all the handles above (one thread) */

    /* backend cuda: the worker's own CUDA stream for conversions, downloads and the
     * watchlist search (the models run on their sessions' streams), a device RGB frame
     * for NV12 -> RGB, and pinned staging for what comes back to the host */
    ffu_gpu_stream *cs;
    ffu_gpu_image d_rgb; /* capacity d_rgb.width x d_rgb.height */
    uint8_t *h_frame;    /* pinned: a whole RGB frame */
    size_t h_frame_cap;
    ffu_image host;      /* h_frame as an image, holding host_of's frame */
    const ffu_stream_frame *host_of;
    int64_t host_seq;
    uint8_t *h_patch; /* pinned: face patches for quality */
    size_t h_patch_cap;
    float *h_probe; /* pinned: probes of a watchlist search */
    int probe_cap;  /* rows */
    ffu_gallery_match *h_match;
    int *h_count;
} pl_worker;

typedef struct pl_item { /* one face waiting for the embedder */
    pl_job *job;
    int face;
    int64_t enq_ns;
} pl_item;

struct ffu_pipeline {
    ffu_pipeline_opts o;
    char *events_path, *snapshot_dir, *heatmap_dir;
    char *detector_spec, *embedder_spec, *backend; /* for handles made on first use */
    ffu_detector_opts dopts;
    ffu_gallery *own_gallery;
    const ffu_gallery *gallery;
    ffu_json *zones;  /* validated zones document, NULL when none */
    float threshold;  /* the embedder's "same person" similarity */
    float det_thresh; /* the detector's default score (tracker high threshold) */
    int detect_batchable;
    int max_batch, det_batch;
    /* backend cuda */
    int on_gpu;            /* the models run on the GPU */
    int dev_frames;        /* ... and take frames in device memory */
    ffu_gpu *gpu;          /* the models' device */
    ffu_gallery_gpu *ggpu; /* the watchlist on the device; NULL = search on the CPU */
    ffu_tracker_opts topts;

    FILE *events;
    ffu_jw *jw;
    pthread_mutex_t ev_mu; /* events file + jw */

    pl_stream *streams[FFU_PIPELINE_MAX_STREAMS];
    int nstreams;
    pl_worker *workers;
    int nworkers;

    pthread_mutex_t mu;   /* scheduling state */
    pthread_cond_t work;  /* workers: something to do */
    pthread_cond_t fed;   /* the feeder: a job finished */
    pl_job *dq_head, *dq_tail; /* frames waiting for detection */
    int dq_n;
    pl_item *eq; /* faces waiting for the embedder, oldest first */
    int eq_n, eq_cap;
    int tracking; /* tracking steps running now */
    int idle;     /* workers waiting */
    int shutdown;
    int ran;
    atomic_int stop;

    pthread_mutex_t smu; /* numbers */
    ffu_pipeline_stats stats;
};

/* ---- gpu_frames.c ------------------------------------------------------------------- */

/* Backend cuda: opens the device (FFU_ERR_DEVICE / FFU_ERR_UNSUPPORTED when there is
 * none, before any model is loaded). Other backends: nothing. */
ffu_status pl_gpu_open(ffu_pipeline *p, const ffu_pipeline_opts *o);
/* The watchlist on the device (a failure is logged and leaves the CPU search). */
void pl_gpu_watchlist(ffu_pipeline *p);
ffu_status pl_gpu_worker_init(ffu_pipeline *p, pl_worker *w);
void pl_gpu_worker_free(pl_worker *w);
void pl_gpu_close(ffu_pipeline *p);
/* The frame on the host: the frame itself, or a device frame converted to RGB and
 * downloaded into the worker's pinned buffer (valid until the worker's next download;
 * repeated calls for the same frame download once). NULL on failure (logged). */
const ffu_image *pl_frame_host(pl_worker *w, const ffu_stream_frame *fr);
/* ffu_face_quality_compute for the faces of device frames, from small RGB patches
 * around each face brought to the host (the whole frame never is). */
void pl_gpu_quality(pl_worker *w, pl_job *const *jobs, int k);
/* One GPU watchlist search for the k faces (top 2 each) into their jobs' match arrays;
 * faces not searched keep nmatch -1. Returns the faces searched. */
int pl_gpu_search(pl_worker *w, const pl_item *items, int k);
/* The place of a device frame's face patch: the pixels ffu_face_quality_compute reads
 * (its 64x64 aligned crop's footprint, 2 pixels of margin), clipped to the frame. Pure
 * arithmetic, unit-tested on the host. Returns 0, or -1 when the face has no usable
 * keypoints. */
int pl_quality_patch(const float kps[10], int width, int height, int rect[4]);

/* ---- outputs.c ---------------------------------------------------------------------- */

/* The tracker's event callback (user = the pl_stream): fills name and snapshot, writes
 * the JSONL line, counts, calls the user's callback. */
void pl_on_track_event(void *user, const ffu_track_event *e);
/* Keeps a crop of `face` from img as the track's snapshot when it beats the one kept. */
void pl_crop_offer(pl_stream *ps, int track_id, const ffu_image *img, const ffu_face *face,
                   float quality);
/* 1 when pl_crop_offer would keep this crop (so a device frame is worth downloading). */
int pl_crop_wanted(pl_stream *ps, int track_id, float quality);
/* Track `from` was merged into `into` by re-identification: its crop follows. */
void pl_crop_merge(pl_stream *ps, int from, int into);
void pl_crops_free(pl_stream *ps);
/* Opens the annotated video and the heatmap at the first frame. */
ffu_status pl_outputs_begin(pl_stream *ps, const ffu_image *frame);
/* Draws the tracks onto a copy of frame and encodes it. */
ffu_status pl_annotate(pl_stream *ps, const ffu_image *frame, double pts);
/* End of stream: finishes the video and writes the heatmap PNGs. */
ffu_status pl_outputs_end(pl_stream *ps);
/* Writes one line to the events file (under ev_mu). */
void pl_events_flush(ffu_pipeline *p);

/* Re-raises the calling thread's last error as "LABEL PATH: detail" (a detail that
 * already starts with "PATH:" is not repeated); path may be NULL. Returns st. */
ffu_status pl_error_context(ffu_status st, const char *label, const char *path);
/* 1 when the stream reads a file that ends (its audio can be copied). */
int pl_stream_is_file(const pl_stream *ps);

#endif
