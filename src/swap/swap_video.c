/* ffu_swap_video: a whole video file through a swapper.
 *
 * The calling thread coordinates; worker threads (one swapper each) do the expensive
 * parts. Per frame:
 *
 *   decode (caller) -> find_targets (any worker) -> smooth (caller, frame order)
 *                   -> apply (any worker) -> encode (caller, frame order)
 *
 * Frames live in a fixed ring of slots (2 per worker + 2), each holding its image and
 * its target list, so memory does not grow with the video's length and steady state
 * allocates nothing of ours: the reader decodes into a free slot's image in place and
 * the writer reads it back after apply. A slot's state is changed only by the caller;
 * workers take slots from a job queue and hand them back through a done queue, which
 * orders their writes before the caller reads the slot.
 *
 * Smoothing must see frames in order (it filters each face's landmarks against the
 * previous frame's), which is why find and apply are two jobs: finds of later frames
 * run while an earlier frame waits for its turn to be smoothed.
 *
 * The output goes through ffu_video_writer, which writes a temporary file and renames
 * it on close: a failure or a stop leaves nothing at out_path. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/swap.h"
#include "facefuse/video.h"

#define MAX_WORKERS 64
#define PROGRESS_PERIOD_S 0.25

enum { SLOT_FREE = 0, SLOT_FINDING, SLOT_FOUND, SLOT_APPLYING, SLOT_APPLIED };
enum { JOB_FIND = 0, JOB_APPLY };

typedef struct slot {
    ffu_image frame; /* allocated by the first read into it, reused after */
    ffu_face_list targets;
    double pts;
    int64_t index;
    int state; /* SLOT_*: read and written by the coordinating thread only */
    int job;   /* JOB_*: set before the slot is queued */
    /* Written by the worker, read by the caller after the done queue hands it back. */
    ffu_status status;
    char msg[256];
} slot;

typedef struct shared {
    ffu_queue *jobs, *done;
    atomic_int abort; /* an error or a stop: workers hand slots back untouched */
} shared;

typedef struct worker {
    pthread_t thread;
    int started;
    ffu_swapper *sw;
    int owned;          /* created here (the caller's swapper is not) */
    ffu_swap_timing t0; /* the caller's swapper's timing before the call */
    shared *sh;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    void *item;
    while (ffu_queue_pop(w->sh->jobs, &item) == FFU_OK) {
        slot *s = item;
        if (atomic_load(&w->sh->abort))
            s->status = FFU_ERR_CLOSED;
        else if (s->job == JOB_FIND)
            s->status = ffu_swapper_find_targets(w->sw, &s->frame, &s->targets);
        else
            s->status = ffu_swapper_apply(w->sw, &s->frame, &s->targets);
        if (s->status < 0) /* the detail is per thread: carry it to the caller */
            snprintf(s->msg, sizeof s->msg, "%s", ffu_error_message());
        /* Cannot block: there are never more slots out than the queue holds. */
        ffu_queue_push(w->sh->done, s);
    }
    return NULL;
}

void ffu_swap_video_opts_default(ffu_swap_video_opts *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->keep_audio = 1;
}

static void timing_add(ffu_swap_timing *sum, const ffu_swap_timing *t, const ffu_swap_timing *minus)
{
    ffu_swap_timing z = {0};
    if (!minus) minus = &z;
    sum->frames += t->frames - minus->frames;
    sum->faces += t->faces - minus->faces;
    sum->detect_ms += t->detect_ms - minus->detect_ms;
    sum->landmarks_ms += t->landmarks_ms - minus->landmarks_ms;
    sum->select_ms += t->select_ms - minus->select_ms;
    sum->warp_ms += t->warp_ms - minus->warp_ms;
    sum->swap_net_ms += t->swap_net_ms - minus->swap_net_ms;
    sum->enhance_ms += t->enhance_ms - minus->enhance_ms;
    sum->mask_ms += t->mask_ms - minus->mask_ms;
    sum->colour_ms += t->colour_ms - minus->colour_ms;
    sum->blend_ms += t->blend_ms - minus->blend_ms;
}

/* Everything one call owns, so that every exit path releases it the same way. */
typedef struct job {
    const ffu_swapper_opts *opts;
    const ffu_swap_video_opts *vo;
    ffu_video_reader *reader;
    ffu_video_writer *writer;
    ffu_swap_smoother *smoother;
    shared sh;
    worker workers[MAX_WORKERS];
    int nworkers;
    slot *slots;
    int nslots;
    ffu_swap_video_stats stats;
    double start;
    double last_progress;
    int64_t frames_total;
    int fps_num, fps_den;
    int64_t last_grid; /* frame-rate grid index of the last frame written */
} job;

/* Stops the workers (after they hand back whatever they hold) and joins them. */
static void workers_stop(job *j)
{
    if (!j->sh.jobs) return;
    ffu_queue_close(j->sh.jobs);
    for (int i = 0; i < j->nworkers; i++)
        if (j->workers[i].started) {
            pthread_join(j->workers[i].thread, NULL);
            j->workers[i].started = 0;
        }
}

static void job_free(job *j)
{
    atomic_store(&j->sh.abort, 1);
    workers_stop(j);
    for (int i = 0; i < j->nworkers; i++) {
        worker *w = &j->workers[i];
        if (w->sw) {
            ffu_swap_timing t;
            ffu_swapper_timing_get(w->sw, &t);
            timing_add(&j->stats.swap, &t, w->owned ? NULL : &w->t0);
        }
        if (w->owned) ffu_swapper_destroy(w->sw);
    }
    ffu_video_writer_abort(j->writer); /* no-op after a successful close (NULL) */
    ffu_video_reader_close(j->reader);
    ffu_swap_smoother_destroy(j->smoother);
    if (j->slots)
        for (int i = 0; i < j->nslots; i++) {
            ffu_image_release(&j->slots[i].frame);
            ffu_face_list_free(&j->slots[i].targets);
        }
    free(j->slots);
    ffu_queue_destroy(j->sh.jobs);
    ffu_queue_destroy(j->sh.done);
    j->stats.seconds = ffu_clock_sec() - j->start;
    j->stats.fps = j->stats.seconds > 0 ? (double)j->stats.frames / j->stats.seconds : 0;
    j->stats.threads = j->nworkers;
    if (j->vo->stats) *j->vo->stats = j->stats;
}

/* Calls the progress callback; a non-zero answer stops the job. */
static ffu_status report(job *j, int final)
{
    double now = ffu_clock_sec();
    if (!j->vo->progress || (!final && now - j->last_progress < PROGRESS_PERIOD_S)) return FFU_OK;
    j->last_progress = now;
    ffu_swap_progress p;
    memset(&p, 0, sizeof p);
    p.frames_done = j->stats.frames;
    p.frames_total = final ? j->stats.frames : j->frames_total;
    if (p.frames_total && p.frames_total < p.frames_done)
        p.frames_total = 0; /* the container's count was too low: unknown now */
    p.elapsed_s = now - j->start;
    p.fps = p.elapsed_s > 0 ? (double)p.frames_done / p.elapsed_s : 0;
    p.eta_s = final ? 0 : -1;
    if (!final && p.frames_total && p.fps > 0)
        p.eta_s = (double)(p.frames_total - p.frames_done) / p.fps;
    if (j->vo->progress(j->vo->user, &p))
        return ffu_error_set(FFU_ERR_CLOSED,
                             "swap video: stopped by the progress callback "
                             "after %lld frames",
                             (long long)p.frames_done);
    return FFU_OK;
}

/* Writes a finished slot. Timestamps go onto the writer's frame-rate grid, nudged
 * forward when two frames would share a grid step (variable-rate or damaged inputs), so
 * every decoded frame is written and the writer never sees a repeated timestamp. */
static ffu_status write_slot(job *j, slot *s)
{
    double t0 = ffu_clock_sec();
    ffu_status st = FFU_OK;
    int64_t grid = llround(s->pts * j->fps_num / j->fps_den);
    if (!(s->pts >= 0) || grid <= j->last_grid) grid = j->last_grid + 1;
    j->last_grid = grid;
    st = ffu_video_writer_write(j->writer, &s->frame, (double)grid * j->fps_den / j->fps_num);
    j->stats.encode_ms += (ffu_clock_sec() - t0) * 1000;
    if (st < 0) return st;
    j->stats.frames++;
    return FFU_OK;
}

/* A slot came back from a worker: move it to its next state. */
static ffu_status collect(job *j, slot *s)
{
    if (s->status < 0) {
        if (atomic_load(&j->sh.abort)) return s->status;
        return ffu_error_set(s->status, "frame %lld: %s", (long long)s->index, s->msg);
    }
    s->state = s->state == SLOT_FINDING ? SLOT_FOUND : SLOT_APPLIED;
    return FFU_OK;
}

static ffu_status queue_job(job *j, slot *s, int kind)
{
    s->job = kind;
    s->status = FFU_OK;
    s->msg[0] = 0;
    s->state = kind == JOB_FIND ? SLOT_FINDING : SLOT_APPLYING;
    return ffu_queue_push(j->sh.jobs, s);
}

static ffu_status open_all(job *j, ffu_swapper *sw, const char *in_path, const char *out_path)
{
    const ffu_swap_video_opts *vo = j->vo;
    ffu_status st;
    ffu_video_reader_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.pixfmt = FFU_PIX_RGB24;
    ro.hwaccel = (ffu_video_hwaccel)vo->hwaccel;
    ro.hw_device = vo->hw_device;
    if ((st = ffu_video_reader_open(&j->reader, in_path, &ro)) < 0) return st;
    const ffu_video_info *in = ffu_video_reader_info(j->reader);
    j->fps_num = in->fps_num;
    j->fps_den = in->fps_den > 0 ? in->fps_den : 1;
    if (j->fps_num <= 0) {
        FFU_LOG(NULL, FFU_LOG_WARN, "%s: frame rate unknown; writing 25 fps", in_path);
        j->fps_num = 25, j->fps_den = 1;
    }
    j->frames_total = in->frame_count > 0 ? in->frame_count : 0;
    if (vo->max_frames > 0 && (!j->frames_total || j->frames_total > vo->max_frames))
        j->frames_total = vo->max_frames;

    int n = vo->threads > 0 ? vo->threads : ffu_cpu_count();
    if (n > MAX_WORKERS) n = MAX_WORKERS;
    if (j->frames_total > 0 && n > j->frames_total) n = (int)j->frames_total;
    if (n < 1) n = 1;
    /* The caller's swapper is worker 0: its models and source are already loaded. */
    j->workers[0].sw = sw;
    ffu_swapper_timing_get(sw, &j->workers[0].t0);
    j->nworkers = 1;
    for (int i = 1; i < n; i++) {
        worker *w = &j->workers[i];
        if ((st = ffu_swapper_create(j->opts, &w->sw)) < 0) return st;
        w->owned = 1;
        j->nworkers++;
        if ((st = ffu_swapper_copy_source(w->sw, sw)) < 0) return st;
    }

    if (vo->smooth >= 0 && (st = ffu_swap_smoother_create(vo->smooth, &j->smoother)) < 0) return st;

    j->nslots = 2 * j->nworkers + 2;
    if (!(j->slots = calloc((size_t)j->nslots, sizeof *j->slots)))
        return ffu_error_set(FFU_ERR_NOMEM, "swap video: out of memory");
    if ((st = ffu_queue_create(&j->sh.jobs, (size_t)j->nslots)) < 0 ||
        (st = ffu_queue_create(&j->sh.done, (size_t)j->nslots)) < 0)
        return st;

    ffu_video_writer_opts wo;
    memset(&wo, 0, sizeof wo);
    wo.width = j->stats.width = in->width;
    wo.height = j->stats.height = in->height;
    wo.fps_num = j->fps_num;
    wo.fps_den = j->fps_den;
    wo.codec = vo->codec;
    wo.crf = vo->crf > 0 ? vo->crf : 18;
    wo.preset = vo->preset ? vo->preset : "veryfast";
    /* x264's 4:2:0 needs even sides; odd-sized videos keep full chroma instead. */
    wo.pix_fmt = ((in->width | in->height) & 1) ? "yuv444p" : NULL;
    wo.audio_from = vo->keep_audio && in->has_audio ? in_path : NULL;
    if ((st = ffu_video_writer_open(&j->writer, out_path, &wo)) < 0) return st;
    char tag[256];
    ffu_swap_provenance(sw, tag, sizeof tag);
    if ((st = ffu_video_writer_set_metadata(j->writer, "comment", tag)) < 0) return st;

    for (int i = 0; i < j->nworkers; i++) {
        worker *w = &j->workers[i];
        w->sh = &j->sh;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            return ffu_error_set(FFU_ERR_NOMEM, "swap video: cannot start worker thread %d", i);
        w->started = 1;
    }
    return FFU_OK;
}

/* The coordinating loop: keeps every slot busy, smooths and writes in frame order. */
static ffu_status run(job *j, const char *in_path)
{
    const int64_t max_frames = j->vo->max_frames;
    const int K = j->nslots;
    int64_t n_dec = 0, n_smooth = 0, n_write = 0;
    int eof = 0;
    ffu_status st;
    void *item;
    while (!eof || n_write < n_dec) {
        int progressed = 0;
        while (ffu_queue_try_pop(j->sh.done, &item) == FFU_OK)
            if ((st = collect(j, item)) < 0) return st;
        /* Write what is finished, in order. */
        while (n_write < n_smooth && j->slots[n_write % K].state == SLOT_APPLIED) {
            slot *s = &j->slots[n_write % K];
            if ((st = write_slot(j, s)) < 0) return st;
            s->state = SLOT_FREE;
            n_write++;
            progressed = 1;
            if ((st = report(j, 0)) < 0) return st;
        }
        /* Smooth in order, then hand the frame to a worker for apply. */
        while (n_smooth < n_dec && j->slots[n_smooth % K].state == SLOT_FOUND) {
            slot *s = &j->slots[n_smooth % K];
            if (j->smoother) {
                double t0 = ffu_clock_sec();
                st = ffu_swap_smoother_apply(j->smoother, &s->targets, s->pts);
                j->stats.smooth_ms += (ffu_clock_sec() - t0) * 1000;
                if (st < 0) return st;
            }
            j->stats.faces += s->targets.count;
            if (s->targets.count == 0) {
                /* Nothing to paste: straight to the writer, with the mark that apply
                 * would have drawn (the whole video is synthetic). */
                j->stats.frames_without_face++;
                if (j->opts->watermark && (st = ffu_swap_draw_watermark(&s->frame)) < 0) return st;
                s->state = SLOT_APPLIED;
            } else if ((st = queue_job(j, s, JOB_APPLY)) < 0) {
                return st;
            }
            n_smooth++;
            progressed = 1;
        }
        /* Decode into the next free slot. */
        if (!eof && n_dec - n_write < K) {
            slot *s = &j->slots[n_dec % K];
            if (max_frames > 0 && n_dec >= max_frames) {
                eof = 1;
            } else {
                double t0 = ffu_clock_sec();
                st = ffu_video_reader_read(j->reader, &s->frame, &s->pts);
                j->stats.decode_ms += (ffu_clock_sec() - t0) * 1000;
                if (st == FFU_EOF) {
                    eof = 1;
                } else if (st == FFU_ERR_FORMAT && n_dec > 0) {
                    /* A truncated file: keep what could be decoded. */
                    FFU_LOG(NULL, FFU_LOG_WARN,
                            "%s: damaged after frame %lld (%s); "
                            "writing the frames before it",
                            in_path, (long long)n_dec, ffu_error_message());
                    eof = 1;
                } else if (st < 0) {
                    return st;
                } else {
                    s->index = n_dec++;
                    if ((st = queue_job(j, s, JOB_FIND)) < 0) return st;
                }
            }
            progressed = 1;
        }
        if (!progressed && (!eof || n_write < n_dec)) {
            /* Everything in flight is with the workers: wait for one. */
            if ((st = ffu_queue_pop(j->sh.done, &item)) != FFU_OK)
                return ffu_error_set(FFU_ERR_INTERNAL, "swap video: worker queue closed");
            if ((st = collect(j, item)) < 0) return st;
        }
    }
    if (n_dec == 0)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: no video frame could be decoded", in_path);
    return FFU_OK;
}

ffu_status ffu_swap_video(ffu_swapper *sw, const ffu_swapper_opts *opts, const char *in_path,
                          const char *out_path, const ffu_swap_video_opts *vo)
{
    ffu_swap_video_opts def;
    if (!vo) {
        ffu_swap_video_opts_default(&def);
        vo = &def;
    }
    if (vo->stats) memset(vo->stats, 0, sizeof *vo->stats);
    if (!sw || !opts || !in_path || !out_path)
        return ffu_error_set(FFU_ERR_INVALID, "swap video: swapper, options, input and "
                                              "output are required");
    job *j = calloc(1, sizeof *j);
    if (!j) return ffu_error_set(FFU_ERR_NOMEM, "swap video: out of memory");
    j->opts = opts;
    j->vo = vo;
    j->start = ffu_clock_sec();
    j->last_progress = j->start;
    j->last_grid = -1;
    atomic_init(&j->sh.abort, 0);

    ffu_status st = open_all(j, sw, in_path, out_path);
    if (st >= 0) st = run(j, in_path);
    if (st >= 0) {
        /* Workers are idle now; stop them so their timing is final. */
        workers_stop(j);
        st = report(j, 1);
    }
    if (st >= 0) {
        double t0 = ffu_clock_sec();
        st = ffu_video_writer_close(j->writer); /* frees it in every case */
        j->writer = NULL;
        j->stats.encode_ms += (ffu_clock_sec() - t0) * 1000;
    }
    if (st < 0) {
        /* Keep the detail: teardown below may overwrite this thread's message. */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ffu_error_message());
        job_free(j);
        free(j);
        return ffu_error_set(st, "%s", msg);
    }
    job_free(j);
    const ffu_swap_video_stats *s = &j->stats;
    FFU_LOG(NULL, FFU_LOG_DEBUG,
            "swap video: %lld frames in %.2f s (%.1f fps, %d workers); caller: decode %.1f, "
            "smooth %.1f, encode %.1f ms; workers: detect %.1f, landmarks %.1f, select %.1f, "
            "warp %.1f, swap net %.1f, enhance %.1f, mask %.1f, colour %.1f, blend %.1f ms",
            (long long)s->frames, s->seconds, s->fps, s->threads, s->decode_ms, s->smooth_ms,
            s->encode_ms, s->swap.detect_ms, s->swap.landmarks_ms, s->swap.select_ms,
            s->swap.warp_ms, s->swap.swap_net_ms, s->swap.enhance_ms, s->swap.mask_ms,
            s->swap.colour_ms, s->swap.blend_ms);
    free(j);
    return FFU_OK;
}
