/* Live streams (issue #5, items 1-2): one thread per source runs an ffu_video_reader,
 * reopens live sources with capped exponential backoff after an error, EOF or stall,
 * keeps one frame per 1/sample_fps seconds of stream time and hands it to the consumer
 * through a bounded ring. The ring never grows: a live stream evicts its oldest frame
 * (counted), a file waits for the consumer. Frames live in a fixed set of image slots
 * (ring_capacity + max_held) plus one decode image owned by the thread; a sampled frame
 * moves into a slot by swapping image structs, so steady state allocates and copies
 * nothing. Stop reaches a blocked open/read through the reader's interrupt callback.
 *
 * Locking: one mutex guards the ring, the slots, the counters and the health fields;
 * the decode thread holds it only to publish a frame or a state change, never while it
 * opens or reads. Two condition variables on CLOCK_MONOTONIC: `cv_pop` (a frame or a
 * final state for the consumer), `cv_push` (room in the ring, a stop, or the end of a
 * backoff / pacing wait for the thread).
 *
 * Device frames (opts.gpu_frames with NVDEC): the thread reads with read_gpu, and a
 * sampled frame is copied device to device from the NVDEC surface (valid only until the
 * next read) into a slot's NV12 ffu_gpu_image, on the stream's own CUDA stream, synced
 * before the frame is published. The slot is claimed under the lock (FILLING) and
 * filled outside it, so the consumer never waits on a copy. Host frames stay as they
 * were; a connection without NVDEC simply gives host frames. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "video/video_internal.h"

#define DEFAULT_SAMPLE_FPS 5.0
#define DEFAULT_RING 4
#define DEFAULT_MAX_HELD 2
#define DEFAULT_STALL_S 10.0
#define DEFAULT_BACKOFF_INITIAL_S 0.5
#define DEFAULT_BACKOFF_MAX_S 10.0
/* Caps on option values: a ring of a million 4K frames is a typo, not a plan. */
#define MAX_RING 1024
#define MAX_HELD 1024
/* Health rates: a snapshot of the counters every RATE_STEP_NS, rates over RATE_WINDOW_S. */
#define RATE_SLOTS 12
#define RATE_STEP_NS 250000000LL
#define RATE_WINDOW_S 2.0
/* realtime pacing: a file that falls further behind its own clock than this (slow
 * decode, a blocked ring) restarts the clock instead of racing to catch up, as a camera
 * would simply have lost those frames. */
#define PACE_MAX_LAG_S 1.0

typedef enum slot_state { SLOT_FREE = 0, SLOT_QUEUED, SLOT_HELD, SLOT_FILLING } slot_state;

typedef struct slot {
    ffu_stream_frame frame; /* first member: a ffu_stream_frame * is a slot * */
    slot_state state;
} slot;

typedef struct rate_snap {
    int64_t t_ns;
    int64_t decoded, sampled, processed;
} rate_snap;

struct ffu_stream {
    const ffu_class *cls;
    char *name, *url;
    ffu_stream_opts o; /* resolved defaults; name/reader strings point into our copies */
    char *format_copy;
    char **av_options_copy;
    int live;
    double sample_period; /* seconds; 0 = keep every frame */

    pthread_t thread;
    int thread_started;
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv_pop, cv_push;

    /* ---- guarded by mu ---- */
    slot *slots;
    int nslots, slots_ready;
    int gslots_ready; /* the slots' device images exist (gpu_frames) */
    int *ring; /* slot indices, oldest at ring_head */
    int ring_cap, ring_head, ring_count;
    int held;
    ffu_stream_state state;
    ffu_status final_status; /* FAILED: the error pop returns */
    int finished;            /* the thread will publish nothing more */
    ffu_stream_health h;     /* counters and identity fields; rates computed on demand */
    ffu_video_info info;
    rate_snap rates[RATE_SLOTS];
    int rate_head, rate_count;

    /* ---- decode thread only ---- */
    ffu_video_reader *reader;
    ffu_image work;   /* the decode target; swapped into a slot when sampled */
    int out_w, out_h; /* fixed by the first open; later opens scale to it */
    ffu_pixfmt out_fmt;
    /* gpu_frames: dev_mode while this connection reads device frames; the device, copy
     * stream and slot size come from the first device frame and stay. */
    int dev_mode;
    ffu_gpu *gpu;
    ffu_gpu_stream *copy;
    int dev_w, dev_h;
    double frame_dur;      /* of the current connection */
    double offset;         /* stream pts = reader pts + offset */
    double last_pts;       /* stream pts of the last decoded frame; < 0 before any */
    int64_t last_frame_ns; /* ffu_clock_ns() of the last decoded frame */
    int rebase;            /* the next frame starts a new timeline segment */
    double rebase_gap;     /* ... placed this long after last_pts */
    int64_t next_sample;   /* index of the next sampling slot (pts / period) */
    int generation;        /* successful opens - 1 */
    int64_t pace_wall_ns;  /* realtime: wall clock that corresponds to pace_pts */
    double pace_pts;
    int pacing;
    atomic_llong read_since_ns; /* live: start of the current stall window, 0 = none */
    atomic_int stalled;         /* the interrupt callback aborted a read for a stall */
};

static const char *stream_item_name(const void *obj) { return ((const ffu_stream *)obj)->name; }
static const ffu_class stream_class = {"stream", stream_item_name};

const char *ffu_stream_state_name(ffu_stream_state s)
{
    static const char *const names[] = {"connecting", "running", "backoff",
                                        "ended",      "failed",  "stopped"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

void ffu_stream_opts_default(ffu_stream_opts *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->sample_fps = DEFAULT_SAMPLE_FPS;
    o->ring_capacity = DEFAULT_RING;
    o->max_held = DEFAULT_MAX_HELD;
    o->live = -1;
    o->stall_s = DEFAULT_STALL_S;
    o->backoff_initial_s = DEFAULT_BACKOFF_INITIAL_S;
    o->backoff_max_s = DEFAULT_BACKOFF_MAX_S;
}

/* ---- small helpers ---------------------------------------------------------------------- */

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

/* Live by URL: network protocols whose peer produces frames on its own clock, and V4L2. */
static int url_is_live(const char *url, const char *format)
{
    static const char *const schemes[] = {"rtsp://", "rtsps://", "http://", "https://",
                                          "udp://",  "rtp://",   "srt://",  "/dev/video"};
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (has_prefix(url, schemes[i])) return 1;
    return format && strcmp(format, "v4l2") == 0;
}

static void abs_deadline(struct timespec *ts, int64_t deadline_ns)
{
    ts->tv_sec = (time_t)(deadline_ns / 1000000000LL);
    ts->tv_nsec = (long)(deadline_ns % 1000000000LL);
}

/* Waits on cv_push until deadline_ns (CLOCK_MONOTONIC) or a stop. mu held. */
static void wait_until_locked(ffu_stream *s, int64_t deadline_ns)
{
    struct timespec ts;
    abs_deadline(&ts, deadline_ns);
    while (!atomic_load(&s->stop) && ffu_clock_ns() < deadline_ns)
        if (pthread_cond_timedwait(&s->cv_push, &s->mu, &ts) != 0) break;
}

static void sleep_interruptible(ffu_stream *s, double seconds)
{
    if (seconds <= 0) return;
    int64_t deadline = ffu_clock_ns() + (int64_t)(seconds * 1e9);
    pthread_mutex_lock(&s->mu);
    wait_until_locked(s, deadline);
    pthread_mutex_unlock(&s->mu);
}

/* A state change the consumer may be waiting for. Once stop was asked, nothing but the
 * final STOPPED is published. mu held. */
static void set_state_locked(ffu_stream *s, ffu_stream_state st)
{
    if (s->state == FFU_STREAM_STOPPED) return;
    s->state = st;
    pthread_cond_broadcast(&s->cv_pop);
}

static void set_state(ffu_stream *s, ffu_stream_state st)
{
    pthread_mutex_lock(&s->mu);
    set_state_locked(s, st);
    pthread_mutex_unlock(&s->mu);
}

/* Records a failed open/read: counted, and its detail (this thread's ffu_error_message)
 * kept as last_error. */
static void note_error(ffu_stream *s, ffu_status st)
{
    const char *msg = ffu_error_message();
    pthread_mutex_lock(&s->mu);
    s->h.errors++;
    snprintf(s->h.last_error, sizeof s->h.last_error, "%s", msg && *msg ? msg : ffu_status_str(st));
    pthread_mutex_unlock(&s->mu);
    FFU_LOG(s, FFU_LOG_WARN, "%s", msg);
}

/* ---- health rates --------------------------------------------------------------------- */

/* Keeps a snapshot of the counters every RATE_STEP_NS (called whenever a counter moves
 * and from health_get, so an idle stream's rates decay to 0). mu held. */
static void rate_tick_locked(ffu_stream *s, int64_t now)
{
    if (s->rate_count) {
        int newest = (s->rate_head + s->rate_count - 1) % RATE_SLOTS;
        if (now - s->rates[newest].t_ns < RATE_STEP_NS) return;
    }
    rate_snap snap = {now, s->h.decoded, s->h.sampled, s->h.processed};
    if (s->rate_count < RATE_SLOTS) {
        s->rates[(s->rate_head + s->rate_count++) % RATE_SLOTS] = snap;
    } else {
        s->rates[s->rate_head] = snap;
        s->rate_head = (s->rate_head + 1) % RATE_SLOTS;
    }
}

static void rates_locked(ffu_stream *s, int64_t now, ffu_stream_health *h)
{
    h->input_fps = h->sampled_fps = h->processed_fps = 0;
    /* The oldest snapshot inside the window; a lone fresh snapshot gives no rate. */
    const rate_snap *old = NULL;
    for (int i = 0; i < s->rate_count; i++) {
        const rate_snap *r = &s->rates[(s->rate_head + i) % RATE_SLOTS];
        if ((double)(now - r->t_ns) * 1e-9 <= RATE_WINDOW_S) {
            old = r;
            break;
        }
    }
    if (!old) return;
    double dt = (double)(now - old->t_ns) * 1e-9;
    if (dt < 0.2) return;
    h->input_fps = (double)(s->h.decoded - old->decoded) / dt;
    h->sampled_fps = (double)(s->h.sampled - old->sampled) / dt;
    h->processed_fps = (double)(s->h.processed - old->processed) / dt;
}

/* ---- interrupt ------------------------------------------------------------------------- */

/* Polled by FFmpeg on the stream thread while open/read block: stop, the caller's own
 * callback, and (live sources) the stall limit, which holds whatever timeout_ms is. */
static int stream_interrupt(void *user)
{
    ffu_stream *s = user;
    if (atomic_load(&s->stop)) return 1;
    if (s->o.reader.interrupt && s->o.reader.interrupt(s->o.reader.interrupt_user)) return 1;
    long long since = atomic_load(&s->read_since_ns);
    if (since && (double)(ffu_clock_ns() - since) * 1e-9 > s->o.stall_s) {
        atomic_store(&s->stalled, 1);
        return 1;
    }
    return 0;
}

/* ---- slots and the ring ---------------------------------------------------------------- */

/* The slot images, allocated once the output format and size are known (first frame). */
static ffu_status alloc_slots_locked(ffu_stream *s)
{
    for (int i = 0; i < s->nslots; i++) {
        ffu_status st = ffu_image_create(&s->slots[i].frame.image, s->out_fmt, s->out_w, s->out_h);
        if (st < 0) {
            for (int k = 0; k < i; k++)
                ffu_image_release(&s->slots[k].frame.image);
            return ffu_error_set(st, "%s: cannot allocate %d frame slots of %dx%d", s->name,
                                 s->nslots, s->out_w, s->out_h);
        }
    }
    s->slots_ready = 1;
    return FFU_OK;
}

static int ring_pop_locked(ffu_stream *s)
{
    int idx = s->ring[s->ring_head];
    s->ring_head = (s->ring_head + 1) % s->ring_cap;
    s->ring_count--;
    return idx;
}

static int free_slot_locked(ffu_stream *s)
{
    for (int i = 0; i < s->nslots; i++)
        if (s->slots[i].state == SLOT_FREE) return i;
    return -1;
}

/* Claims the slot the next sampled frame goes into and marks it FILLING: a free slot,
 * or with a full ring the oldest waiting frame (live, drop_when_full) or, for a file,
 * the first slot freed by the consumer. Returns the index, or -1 with *err set
 * (FFU_ERR_CLOSED when a stop came while waiting). mu held. */
static int claim_slot_locked(ffu_stream *s, ffu_status *err)
{
    int drop = s->live || s->o.drop_when_full;
    int idx;
    if (s->ring_count == s->ring_cap && drop) {
        idx = ring_pop_locked(s); /* the oldest waiting frame gives way */
        s->h.dropped++;
    } else {
        while (s->ring_count == s->ring_cap && !atomic_load(&s->stop))
            pthread_cond_wait(&s->cv_push, &s->mu);
        if (atomic_load(&s->stop)) {
            *err = FFU_ERR_CLOSED;
            return -1;
        }
        /* queued + filling <= cap and held <= max_held leave a free slot
         * (nslots = cap + max_held). */
        idx = free_slot_locked(s);
        if (idx < 0) {
            *err = ffu_error_set(FFU_ERR_INTERNAL, "%s: no free frame slot", s->name);
            return -1;
        }
    }
    s->slots[idx].state = SLOT_FILLING;
    return idx;
}

/* The colour coding of the frame the reader just decoded (what its YUV means). */
static void set_coding(ffu_stream *s, ffu_stream_frame *f)
{
    int matrix = 601, full = 0;
    ffu_video_reader_color(s->reader, &matrix, &full);
    ffu_yuv_coding c = ffu_image_yuv_coding(matrix, full);
    f->yuv_full_range = c.range == FFU_YUV_FULL;
    f->yuv_matrix = c.matrix;
    if (f->on_gpu) f->gpu.yuv = c;
}

/* Puts a filled slot into the ring. mu held. */
static void commit_slot_locked(ffu_stream *s, int idx, double pts, int64_t decoded_seq,
                               int64_t wall_ns)
{
    slot *sl = &s->slots[idx];
    sl->frame.pts = pts;
    sl->frame.seq = s->h.sampled++;
    sl->frame.decoded_seq = decoded_seq;
    sl->frame.wall_ns = wall_ns;
    sl->frame.generation = s->generation;
    sl->state = SLOT_QUEUED;
    s->ring[(s->ring_head + s->ring_count++) % s->ring_cap] = idx;
    rate_tick_locked(s, ffu_clock_ns());
    pthread_cond_signal(&s->cv_pop);
}

/* Moves the decoded image (s->work) into the ring as sampled frame. Returns FFU_OK,
 * FFU_ERR_CLOSED when a stop came while a file waited for room, or an allocation
 * error. */
static ffu_status publish(ffu_stream *s, double pts, int64_t decoded_seq, int64_t wall_ns)
{
    pthread_mutex_lock(&s->mu);
    if (!s->slots_ready) {
        ffu_status st = alloc_slots_locked(s);
        if (st < 0) {
            pthread_mutex_unlock(&s->mu);
            return st;
        }
    }
    ffu_status err = FFU_OK;
    int idx = claim_slot_locked(s, &err);
    if (idx < 0) {
        pthread_mutex_unlock(&s->mu);
        return err;
    }
    slot *sl = &s->slots[idx];
    ffu_image tmp = sl->frame.image; /* same format and size as work: swap, no copy */
    sl->frame.image = s->work;
    s->work = tmp;
    sl->frame.on_gpu = 0;
    set_coding(s, &sl->frame);
    commit_slot_locked(s, idx, pts, decoded_seq, wall_ns);
    pthread_mutex_unlock(&s->mu);
    return FFU_OK;
}

/* The device, the copy stream and the slots' NV12 images, at the first device frame
 * (view: its device and size). Thread only; the slots are taken under mu. */
static ffu_status prepare_gpu_slots(ffu_stream *s, const ffu_gpu_image *view)
{
    ffu_status st;
    if (!s->gpu) {
        if ((st = ffu_gpu_open(ffu_gpu_index(view->gpu), &s->gpu)) < 0) return st;
        ffu_gpu_make_current(s->gpu); /* the device of this thread's copies */
        if ((st = ffu_gpu_stream_create(s->gpu, &s->copy)) < 0) return st;
        s->dev_w = view->width;
        s->dev_h = view->height;
    }
    pthread_mutex_lock(&s->mu);
    st = FFU_OK;
    for (int i = 0; !s->gslots_ready && i < s->nslots; i++) {
        st = ffu_gpu_image_create(s->gpu, &s->slots[i].frame.gpu, FFU_PIX_NV12, s->dev_w, s->dev_h);
        if (st < 0) {
            for (int k = 0; k < i; k++)
                ffu_gpu_image_release(&s->slots[k].frame.gpu);
            st = ffu_error_set(st, "%s: cannot allocate %d device frame slots of %dx%d", s->name,
                               s->nslots, s->dev_w, s->dev_h);
            break;
        }
    }
    if (st == FFU_OK) s->gslots_ready = 1;
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* The device twin of publish: the NVDEC surface (valid until the next read) is copied
 * into a claimed slot outside the lock; the copy is complete before the frame is
 * published. */
static ffu_status publish_gpu(ffu_stream *s, const ffu_gpu_image *view, double pts,
                              int64_t decoded_seq, int64_t wall_ns)
{
    ffu_status st = prepare_gpu_slots(s, view);
    if (st < 0) return st;
    pthread_mutex_lock(&s->mu);
    int idx = claim_slot_locked(s, &st);
    pthread_mutex_unlock(&s->mu);
    if (idx < 0) return st;
    slot *sl = &s->slots[idx];
    ffu_gpu_image *d = &sl->frame.gpu;
    int w = view->width, h = view->height;
    st = ffu_gpu_copy_2d(s->copy, d->data[0], (size_t)d->stride[0], view->data[0],
                         (size_t)view->stride[0], (size_t)w, (size_t)h);
    if (st == FFU_OK)
        st = ffu_gpu_copy_2d(s->copy, d->data[1], (size_t)d->stride[1], view->data[1],
                             (size_t)view->stride[1], (size_t)w, (size_t)(h / 2));
    if (st == FFU_OK) st = ffu_gpu_stream_sync(s->copy);
    pthread_mutex_lock(&s->mu);
    if (st < 0) {
        sl->state = SLOT_FREE;
        pthread_mutex_unlock(&s->mu);
        return ffu_error_set(st, "%s: copying a decoded frame on the device: %s", s->name,
                             ffu_error_message());
    }
    sl->frame.on_gpu = 1;
    set_coding(s, &sl->frame);
    commit_slot_locked(s, idx, pts, decoded_seq, wall_ns);
    pthread_mutex_unlock(&s->mu);
    return FFU_OK;
}

/* ---- the decode thread ------------------------------------------------------------------ */

static void close_reader(ffu_stream *s)
{
    ffu_video_reader_close(s->reader);
    s->reader = NULL;
}

static ffu_status open_reader(ffu_stream *s)
{
    ffu_video_reader_opts ro = s->o.reader;
    ro.interrupt = stream_interrupt;
    ro.interrupt_user = s;
    if (s->out_w) { /* later connections keep the first one's output size */
        ro.width = s->out_w;
        ro.height = s->out_h;
    }
    ffu_status st = ffu_video_reader_open(&s->reader, s->url, &ro);
    if (st < 0) return st;
    const ffu_video_info *in = ffu_video_reader_info(s->reader);
    ffu_pixfmt fmt;
    int w, h;
    ffu_video_reader_output(s->reader, &fmt, &w, &h);
    if (!s->out_w) {
        s->out_w = w;
        s->out_h = h;
        s->out_fmt = fmt;
    }
    s->dev_mode = 0;
    if (s->o.gpu_frames) {
        if (in->hwaccel == FFU_VIDEO_HWACCEL_CUDA)
            s->dev_mode = 1;
        else
            FFU_LOG(s, FFU_LOG_INFO, "gpu frames: the decoder is %s, frames come on the host",
                    in->decoder);
    }
    s->frame_dur = in->fps > 0 ? 1.0 / in->fps : 1.0 / 25;
    /* Keeping at most every third frame: frames nothing refers to need not be decoded
     * at all (a 1080p30 x264 stream sampled at 5 fps decodes a third less). */
    video_reader_skip_nonref(s->reader, s->sample_period >= 3 * s->frame_dur);
    pthread_mutex_lock(&s->mu);
    s->info = *in;
    s->h.width = s->out_w;
    s->h.height = s->out_h;
    s->h.source_fps = in->fps;
    s->h.gpu_frames = s->dev_mode;
    snprintf(s->h.decoder, sizeof s->h.decoder, "%s", in->decoder);
    pthread_mutex_unlock(&s->mu);
    return FFU_OK;
}

/* Leaves device frames for the rest of this connection (health says so). */
static void leave_dev_mode(ffu_stream *s, const char *why)
{
    s->dev_mode = 0;
    pthread_mutex_lock(&s->mu);
    s->h.gpu_frames = 0;
    pthread_mutex_unlock(&s->mu);
    FFU_LOG(s, FFU_LOG_INFO, "gpu frames: %s; frames come on the host", why);
}

/* Turns the reader's pts into the stream clock: continuous across loops and
 * reconnects, strictly increasing for live sources (camera clocks jump). */
static double stream_pts(ffu_stream *s, double t, int64_t now_ns)
{
    double p = t + s->offset;
    if (s->last_pts < 0) { /* the very first frame: the reader's own clock */
        s->rebase = 0;
        return p;
    }
    if (!s->rebase &&
        (p <= s->last_pts || (s->live && p - s->last_pts > fmax(s->o.stall_s, 1.0)))) {
        s->rebase = 1;
        s->rebase_gap = 0;
    }
    if (s->rebase) {
        /* gap 0: as long as the wall clock says it was (a reconnect, a jump), but at
         * least a frame, so pts strictly increase. */
        double gap = s->rebase_gap > 0
                         ? s->rebase_gap
                         : fmax(s->frame_dur, (double)(now_ns - s->last_frame_ns) * 1e-9);
        s->offset = s->last_pts + gap - t;
        s->rebase = 0;
        p = s->last_pts + gap;
    }
    return p;
}

/* realtime: holds a file's frame until its time on the file's own clock has come. */
static void pace(ffu_stream *s, double pts)
{
    int64_t now = ffu_clock_ns();
    if (!s->pacing) {
        s->pacing = 1;
        s->pace_wall_ns = now;
        s->pace_pts = pts;
        return;
    }
    int64_t due = s->pace_wall_ns + (int64_t)((pts - s->pace_pts) * 1e9);
    if ((double)(now - due) * 1e-9 > PACE_MAX_LAG_S) {
        s->pace_wall_ns = now;
        s->pace_pts = pts;
        return;
    }
    if (due > now) sleep_interruptible(s, (double)(due - now) * 1e-9);
}

/* CPU time of the calling thread: what decoding a stream costs, for the benchmark's
 * time split (wall time would count waiting on the network and on the consumer). */
static double thread_cpu_seconds(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) return 0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Keeps a frame per sampling period: slot k = floor(pts / period) with a quarter-frame
 * tolerance, so a 25 fps file sampled at 5 fps keeps exactly frames 0, 5, 10, ... */
static int want_sample(ffu_stream *s, double pts)
{
    if (s->sample_period <= 0) return 1;
    double tol = 0.25 * fmin(s->frame_dur, s->sample_period);
    int64_t k = (int64_t)floor((pts + tol) / s->sample_period);
    if (k < s->next_sample) return 0;
    s->next_sample = k + 1;
    return 1;
}

typedef enum run_end { RUN_EOF, RUN_ERROR, RUN_STOP } run_end;

/* Reads one connection until EOF, an error, a stall or a stop. *err gets the error. */
static run_end run_connection(ffu_stream *s, ffu_status *err)
{
    int64_t frames_this_pass = 0; /* loop: a pass without frames ends instead of spinning */
    for (;;) {
        if (atomic_load(&s->stop)) return RUN_STOP;
        double t = 0;
        atomic_store(&s->stalled, 0);
        if (s->live) atomic_store(&s->read_since_ns, (long long)ffu_clock_ns());
        /* Decode only; the colour conversion is paid for the frames sampling keeps.
         * Device frames: the surface as it is (read_gpu copies nothing for NV12). */
        ffu_gpu_image view = {0};
        ffu_status st = s->dev_mode ? ffu_video_reader_read_gpu(s->reader, &view, &t)
                                    : video_reader_decode(s->reader, &t);
        atomic_store(&s->read_since_ns, 0);
        if (atomic_load(&s->stop)) return RUN_STOP;
        if (st == FFU_EOF) {
            if (!s->live && s->o.loop && frames_this_pass > 0) {
                frames_this_pass = 0;
                /* A file played again, as a camera that never ends: same connection,
                 * the clock goes on. Non-seekable files are reopened instead. */
                if (ffu_video_reader_seek(s->reader, 0) < 0) {
                    close_reader(s);
                    if ((st = open_reader(s)) < 0) {
                        *err = st;
                        return RUN_ERROR;
                    }
                }
                if (s->last_pts >= 0) {
                    s->rebase = 1;
                    s->rebase_gap = s->frame_dur;
                }
                continue;
            }
            return RUN_EOF;
        }
        if (st < 0) {
            if (atomic_load(&s->stalled))
                st = ffu_error_set(FFU_ERR_TIMEOUT, "%s: stalled: no frame for %.1f s", s->name,
                                   s->o.stall_s);
            *err = st;
            return RUN_ERROR;
        }
        frames_this_pass++;
        int64_t now = ffu_clock_ns();
        int64_t wall = ffu_time_unix_ns();
        double pts = stream_pts(s, t, now);
        s->last_pts = pts;
        s->last_frame_ns = now;
        const ffu_video_info *vi = ffu_video_reader_info(s->reader);
        pthread_mutex_lock(&s->mu);
        int64_t dseq = s->h.decoded++;
        s->h.thread_cpu_s = thread_cpu_seconds();
        if (vi->hwaccel != s->info.hwaccel) { /* NVDEC refused the stream: now the CPU */
            s->info.hwaccel = vi->hwaccel;
            memcpy(s->info.decoder, vi->decoder, sizeof s->info.decoder);
            snprintf(s->h.decoder, sizeof s->h.decoder, "%s", vi->decoder);
        }
        rate_tick_locked(s, now);
        if (s->state != FFU_STREAM_RUNNING) set_state_locked(s, FFU_STREAM_RUNNING);
        pthread_mutex_unlock(&s->mu);
        /* the frame read_gpu gave is still held by the reader: the host path below can
         * convert it when device frames stop here */
        if (s->dev_mode && vi->hwaccel != FFU_VIDEO_HWACCEL_CUDA)
            leave_dev_mode(s, "NVDEC refused the stream");
        else if (s->dev_mode && ((view.width | view.height) & 1))
            leave_dev_mode(s, "odd frame size");
        else if (s->dev_mode && s->gpu && (view.width != s->dev_w || view.height != s->dev_h))
            leave_dev_mode(s, "the frame size differs from the first connection's");
        if (!s->live && s->o.realtime) pace(s, pts);
        if (!want_sample(s, pts)) continue;
        if (s->dev_mode) {
            st = publish_gpu(s, &view, pts, dseq, wall);
        } else {
            if ((st = video_reader_convert(s->reader, &s->work)) < 0) {
                *err = st;
                return RUN_ERROR;
            }
            st = publish(s, pts, dseq, wall);
        }
        if (st == FFU_ERR_CLOSED) return RUN_STOP;
        if (st < 0) {
            *err = st;
            return RUN_ERROR;
        }
    }
}

/* The thread's final word: terminal state (unless stopped), wake the consumer. */
static void finish(ffu_stream *s, ffu_stream_state st, ffu_status status)
{
    pthread_mutex_lock(&s->mu);
    if (atomic_load(&s->stop)) st = FFU_STREAM_STOPPED;
    if (s->state != FFU_STREAM_STOPPED) s->state = st;
    s->final_status = status;
    s->finished = 1;
    pthread_cond_broadcast(&s->cv_pop);
    pthread_mutex_unlock(&s->mu);
}

static void *stream_main(void *arg)
{
    ffu_stream *s = arg;
    pthread_setname_np(pthread_self(), "ffu-stream"); /* for top/gdb; 15 chars at most */
    double backoff = s->o.backoff_initial_s;
    int failures = 0; /* failed attempts in a row (live) */
    int opened = 0;
    for (;;) {
        if (atomic_load(&s->stop)) break;
        set_state(s, FFU_STREAM_CONNECTING);
        ffu_status st = open_reader(s);
        run_end end = RUN_ERROR;
        if (st >= 0) {
            if (opened++) {
                s->generation++;
                s->rebase = s->last_pts >= 0;
                s->rebase_gap = 0; /* computed from the wall gap at the first frame */
                pthread_mutex_lock(&s->mu);
                s->h.reconnects++;
                pthread_mutex_unlock(&s->mu);
                FFU_LOG(s, FFU_LOG_INFO, "reconnected (connection %d)", s->generation);
            }
            int64_t decoded_before = s->last_frame_ns;
            end = run_connection(s, &st);
            close_reader(s);
            if (s->last_frame_ns != decoded_before) { /* frames came: a fresh start */
                failures = 0;
                backoff = s->o.backoff_initial_s;
            } else {
                failures++;
            }
        } else {
            failures++;
        }
        if (end == RUN_STOP || atomic_load(&s->stop)) break;
        if (end == RUN_EOF && !s->live) {
            finish(s, FFU_STREAM_ENDED, FFU_EOF);
            goto out;
        }
        if (end == RUN_ERROR) {
            if (st == FFU_ERR_CLOSED && atomic_load(&s->stop)) break;
            note_error(s, st);
            /* Bad options, or NVDEC required where there is none: retrying cannot help. */
            if (!s->live || st == FFU_ERR_INVALID || st == FFU_ERR_DEVICE) {
                finish(s, FFU_STREAM_FAILED, st);
                goto out;
            }
        } else {
            FFU_LOG(s, FFU_LOG_INFO, "the source ended; reconnecting");
        }
        if (s->o.max_reconnects > 0 && failures >= s->o.max_reconnects) {
            if (end == RUN_EOF) {
                pthread_mutex_lock(&s->mu);
                snprintf(s->h.last_error, sizeof s->h.last_error, "%s: the source keeps ending",
                         s->name);
                pthread_mutex_unlock(&s->mu);
                st = FFU_ERR_IO;
            }
            FFU_LOG(s, FFU_LOG_ERROR, "giving up after %d attempts in a row", failures);
            finish(s, FFU_STREAM_FAILED, st);
            goto out;
        }
        set_state(s, FFU_STREAM_BACKOFF);
        FFU_LOG(s, FFU_LOG_INFO, "reconnecting in %.2f s", backoff);
        sleep_interruptible(s, backoff);
        backoff = fmin(backoff * 2, s->o.backoff_max_s);
    }
    close_reader(s);
    finish(s, FFU_STREAM_STOPPED, FFU_EOF);
out:
    return NULL;
}

/* ---- public API -------------------------------------------------------------------------- */

static ffu_status check_opts(const ffu_stream_opts *o)
{
    if (isnan(o->sample_fps) || isinf(o->sample_fps))
        return ffu_error_set(FFU_ERR_INVALID, "ffu_stream_open: sample_fps is not finite");
    if (o->ring_capacity < 0 || o->ring_capacity > MAX_RING)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_stream_open: ring_capacity %d not in 0..%d",
                             o->ring_capacity, MAX_RING);
    if (o->max_held < 0 || o->max_held > MAX_HELD)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_stream_open: max_held %d not in 0..%d",
                             o->max_held, MAX_HELD);
    if (o->live < -1 || o->live > 2)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_stream_open: live %d not in -1..2", o->live);
    double t[] = {o->stall_s, o->backoff_initial_s, o->backoff_max_s};
    for (int i = 0; i < 3; i++)
        if (!(t[i] >= 0) || t[i] > 1e6)
            return ffu_error_set(FFU_ERR_INVALID,
                                 "ffu_stream_open: stall/backoff times must be in 0..1e6 s");
    if (o->max_reconnects < 0)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_stream_open: max_reconnects is negative");
    return video_hw_check_opts(&o->reader, "ffu_stream_open");
}

/* The reader options hold borrowed strings; the thread outlives the caller's. */
static ffu_status copy_reader_strings(ffu_stream *s)
{
    if (s->o.reader.format && !(s->format_copy = strdup(s->o.reader.format))) return FFU_ERR_NOMEM;
    s->o.reader.format = s->format_copy;
    const char *const *kv = s->o.reader.av_options;
    if (!kv) return FFU_OK;
    size_t n = 0;
    while (kv[n])
        n++;
    if (!(s->av_options_copy = calloc(n + 1, sizeof *s->av_options_copy))) return FFU_ERR_NOMEM;
    for (size_t i = 0; i < n; i++)
        if (!(s->av_options_copy[i] = strdup(kv[i]))) return FFU_ERR_NOMEM;
    s->o.reader.av_options = (const char *const *)s->av_options_copy;
    return FFU_OK;
}

static void stream_free(ffu_stream *s)
{
    if (!s) return;
    for (int i = 0; s->slots && i < s->nslots; i++) {
        ffu_image_release(&s->slots[i].frame.image);
        ffu_gpu_image_release(&s->slots[i].frame.gpu);
    }
    ffu_image_release(&s->work);
    close_reader(s);
    ffu_gpu_stream_destroy(s->copy);
    ffu_gpu_close(s->gpu);
    free(s->slots);
    free(s->ring);
    if (s->av_options_copy)
        for (char **p = s->av_options_copy; *p; p++)
            free(*p);
    free(s->av_options_copy);
    free(s->format_copy);
    free(s->name);
    free(s->url);
    free(s);
}

ffu_status ffu_stream_open(ffu_stream **out, const char *url, const ffu_stream_opts *opts)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_stream_open: out is NULL");
    *out = NULL;
    if (!url || !*url) return ffu_error_set(FFU_ERR_INVALID, "ffu_stream_open: no url");
    ffu_stream_opts o;
    if (opts)
        o = *opts;
    else
        ffu_stream_opts_default(&o);
    ffu_status st = check_opts(&o);
    if (st < 0) return st;
    /* once, here, rather than racing from several stream threads */
    if ((st = video_global_init()) < 0) return st;
    if (o.sample_fps == 0) o.sample_fps = DEFAULT_SAMPLE_FPS;
    if (!o.ring_capacity) o.ring_capacity = DEFAULT_RING;
    if (!o.max_held) o.max_held = DEFAULT_MAX_HELD;
    if (o.stall_s == 0) o.stall_s = DEFAULT_STALL_S;
    if (o.backoff_initial_s == 0) o.backoff_initial_s = DEFAULT_BACKOFF_INITIAL_S;
    if (o.backoff_max_s == 0) o.backoff_max_s = DEFAULT_BACKOFF_MAX_S;
    if (o.backoff_max_s < o.backoff_initial_s) o.backoff_max_s = o.backoff_initial_s;
    if (o.reader.timeout_ms == 0) o.reader.timeout_ms = (int)(fmin(o.stall_s, 10.0) * 1000);

    ffu_stream *s = calloc(1, sizeof *s);
    if (!s) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", url);
    s->cls = &stream_class;
    s->o = o;
    s->url = strdup(url);
    s->name = strdup(o.name ? o.name : url);
    s->o.name = s->name;
    s->nslots = o.ring_capacity + o.max_held;
    s->ring_cap = o.ring_capacity;
    s->slots = calloc((size_t)s->nslots, sizeof *s->slots);
    s->ring = calloc((size_t)s->ring_cap, sizeof *s->ring);
    if (!s->url || !s->name || !s->slots || !s->ring || copy_reader_strings(s) < 0) {
        stream_free(s);
        return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", url);
    }
    s->live = o.live == 1 || (o.live <= 0 && url_is_live(url, o.reader.format));
    s->sample_period = o.sample_fps > 0 ? 1.0 / o.sample_fps : 0;
    s->last_pts = -1;
    s->state = FFU_STREAM_CONNECTING;
    s->final_status = FFU_OK;
    atomic_init(&s->stop, 0);
    atomic_init(&s->read_since_ns, 0);
    atomic_init(&s->stalled, 0);
    rate_tick_locked(s, ffu_clock_ns());

    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* waits immune to clock steps */
    int e = pthread_mutex_init(&s->mu, NULL);
    if (!e && (e = pthread_cond_init(&s->cv_pop, &ca)) != 0) pthread_mutex_destroy(&s->mu);
    if (!e && (e = pthread_cond_init(&s->cv_push, &ca)) != 0) {
        pthread_cond_destroy(&s->cv_pop);
        pthread_mutex_destroy(&s->mu);
    }
    pthread_condattr_destroy(&ca);
    if (e) {
        stream_free(s);
        return ffu_error_set(FFU_ERR_NOMEM, "%s: cannot create the stream's locks", url);
    }
    if (pthread_create(&s->thread, NULL, stream_main, s) != 0) {
        pthread_cond_destroy(&s->cv_push);
        pthread_cond_destroy(&s->cv_pop);
        pthread_mutex_destroy(&s->mu);
        stream_free(s);
        return ffu_error_set(FFU_ERR_NOMEM, "%s: cannot start the stream thread", url);
    }
    s->thread_started = 1;
    FFU_LOG(s, FFU_LOG_DEBUG, "opened (%s, sampling %s)", s->live ? "live" : "file",
            s->sample_period > 0 ? "on" : "off");
    *out = s;
    return FFU_OK;
}

ffu_status ffu_stream_pop(ffu_stream *s, ffu_stream_frame **frame, int timeout_ms)
{
    if (frame) *frame = NULL;
    if (!s || !frame) return ffu_error_set(FFU_ERR_INVALID, "ffu_stream_pop: NULL argument");
    int64_t deadline = timeout_ms >= 0 ? ffu_clock_ns() + (int64_t)timeout_ms * 1000000 : 0;
    struct timespec ts;
    abs_deadline(&ts, deadline);
    pthread_mutex_lock(&s->mu);
    ffu_status st;
    for (;;) {
        if (s->held >= s->o.max_held) {
            st =
                ffu_error_set(FFU_AGAIN, "%s: %d frames already held (max_held)", s->name, s->held);
            break;
        }
        if (s->ring_count) {
            slot *sl = &s->slots[ring_pop_locked(s)];
            sl->state = SLOT_HELD;
            s->held++;
            *frame = &sl->frame;
            pthread_cond_signal(&s->cv_push); /* a file may be waiting for room */
            st = FFU_OK;
            break;
        }
        if (s->finished || s->state == FFU_STREAM_STOPPED) {
            if (s->state == FFU_STREAM_FAILED && s->final_status < 0)
                st = ffu_error_set(s->final_status, "%s", s->h.last_error);
            else
                st = FFU_EOF;
            break;
        }
        if (timeout_ms == 0 || (timeout_ms > 0 && ffu_clock_ns() >= deadline)) {
            st = ffu_error_set(FFU_ERR_TIMEOUT, "%s: no frame within %d ms", s->name, timeout_ms);
            break;
        }
        if (timeout_ms < 0)
            pthread_cond_wait(&s->cv_pop, &s->mu);
        else
            pthread_cond_timedwait(&s->cv_pop, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return st;
}

void ffu_stream_release(ffu_stream *s, ffu_stream_frame *frame)
{
    if (!s || !frame) return;
    slot *sl = (slot *)frame;
    pthread_mutex_lock(&s->mu);
    /* Only a held slot of this stream; anything else is a caller bug we refuse to act on. */
    if (sl >= s->slots && sl < s->slots + s->nslots && sl->state == SLOT_HELD) {
        sl->state = SLOT_FREE;
        s->held--;
        s->h.processed++;
        rate_tick_locked(s, ffu_clock_ns());
        pthread_cond_signal(&s->cv_pop); /* a pop refused with FFU_AGAIN may retry */
    } else {
        FFU_LOG(s, FFU_LOG_ERROR, "release of a frame that is not held from this stream");
    }
    pthread_mutex_unlock(&s->mu);
}

void ffu_stream_stop(ffu_stream *s)
{
    if (!s) return;
    atomic_store(&s->stop, 1);
    pthread_mutex_lock(&s->mu);
    if (!s->finished) s->state = FFU_STREAM_STOPPED;
    pthread_cond_broadcast(&s->cv_push);
    pthread_cond_broadcast(&s->cv_pop);
    pthread_mutex_unlock(&s->mu);
}

void ffu_stream_close(ffu_stream *s)
{
    if (!s) return;
    ffu_stream_stop(s);
    if (s->thread_started) pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->cv_push);
    pthread_cond_destroy(&s->cv_pop);
    pthread_mutex_destroy(&s->mu);
    stream_free(s);
}

void ffu_stream_health_get(ffu_stream *s, ffu_stream_health *h)
{
    if (!h) return;
    memset(h, 0, sizeof *h);
    if (!s) return;
    int64_t now = ffu_clock_ns();
    pthread_mutex_lock(&s->mu);
    rate_tick_locked(s, now);
    *h = s->h;
    h->state = s->state;
    h->ring_size = s->ring_count;
    rates_locked(s, now, h);
    pthread_mutex_unlock(&s->mu);
}

const char *ffu_stream_name(const ffu_stream *s) { return s ? s->name : ""; }

void ffu_stream_info(ffu_stream *s, ffu_video_info *info)
{
    if (!info) return;
    memset(info, 0, sizeof *info);
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    *info = s->info;
    pthread_mutex_unlock(&s->mu);
}
