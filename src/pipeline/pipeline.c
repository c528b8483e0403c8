/* The analyze pipeline's scheduler: one pool of workers serves every stream, and each
 * model's work is batched across streams.
 *
 * A frame goes through four steps. The feeder (the thread in ffu_pipeline_run) pops
 * sampled frames from the streams and queues them for DETECT; a worker takes up to
 * max_batch queued frames -- of any streams -- and runs them through the detector as
 * one batch when the detector allows it (fixed input size: BlazeFace). Detected frames
 * wait per stream, in order, for TRACK: the tracker of a stream is used by one frame at
 * a time, from the tracking step until the frame is finished, so a stream's frames are
 * tracked, voted on and encoded strictly in order while its next frames are already
 * being detected. Faces the tracker wants embedded go into one EMBED queue shared by
 * all streams; a worker runs the embedder on up to max_batch of them -- from several
 * streams' frames -- at once, when the batch is full, when its oldest face has waited
 * max_wait_ms, or when no other stream could add a face soon (waiting then would only
 * cost time). The worker that embeds a frame's last face FINISHES it: embeddings go to
 * the tracker, the gallery is searched, votes are cast, the frame is annotated and
 * encoded, and given back to its stream.
 *
 * Why this shape: on a CPU, batching mostly saves per-run overhead and lets the GEMMs
 * run on bigger matrices; the model handles are per worker (one thread each), so the
 * cores never fight over one session; ordering lives only where state lives (the
 * tracker), so the stateless steps can go wide. docs/ANALYZE.md has the measurements.
 *
 * Backend cuda: the same steps and queues; the models of each worker run on the GPU on
 * their sessions' own CUDA streams, frames of NVDEC streams stay on the device (the
 * detector and embedder read them there, face quality reads small patches), the
 * watchlist search of a whole embedder batch is one GPU call, and a frame is brought to
 * the host (pinned, on the worker's stream) only for annotation, snapshots, the heatmap
 * background, landmarks or liveness (gpu_frames.c). Batches on the GPU are formed from
 * whatever is queued, up to 8 frames / 64 faces, without the CPU's split among idle
 * workers: a GPU batch of 8 costs about what one frame does. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "pipeline_internal.h"

static const ffu_class pipeline_class = {"pipeline", NULL};
static const ffu_class *const pl_log = &pipeline_class;

void ffu_pipeline_opts_default(ffu_pipeline_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->sample_fps = 5;
    o->max_batch = 0; /* by backend: PL_EMBED_BATCH_CPU / _GPU */
    o->max_wait_ms = 4;
    o->progress_s = 0.5;
    o->id_margin = -1; /* by the embedder: ffu_embedder_margin (faceres 0.096, the 0.1
                          docs/ANALYZE.md measured with) */
}

/* ---- creation ------------------------------------------------------------------------ */

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int use_landmarks(const ffu_pipeline_opts *o)
{
    return o->landmarks && *o->landmarks && strcmp(o->landmarks, "none") != 0;
}

/* The options of every model a worker opens: the run's backend, device and precision,
 * one thread (the worker pool is the parallelism). */
static ffu_face_model_opts stage_model(const ffu_pipeline *p, const char *spec)
{
    return (ffu_face_model_opts){.model = spec, .backend = p->backend, .threads = 1,
                                 .device = p->o.device, .fp16 = p->o.fp16, .bf16 = p->o.bf16};
}

/* The watchlist: a directory is enrolled with the pipeline's own detector, landmarks
 * and embedder (so probe and gallery embeddings are made the same way); a file is
 * loaded and must come from the same embedder. */
static ffu_status load_watchlist(ffu_pipeline *p, const ffu_pipeline_opts *o,
                                 const ffu_embedder *emb)
{
    const ffu_zoo_entry *ze = ffu_embedder_model(emb);
    int dim = ffu_embedder_dim(emb);
    if (o->gallery) {
        p->gallery = o->gallery;
    } else if (!o->watchlist) {
        return FFU_OK;
    } else if (is_dir(o->watchlist)) {
        ffu_analyzer_opts ao;
        ffu_analyzer_opts_default(&ao);
        ao.stages = FFU_STAGE_EMBED | (use_landmarks(o) ? FFU_STAGE_LANDMARKS : 0);
        int threads = ao.detect.m.threads; /* enrolment uses every core */
        ao.detect.m = stage_model(p, o->detector);
        ao.detect.m.threads = threads;
        ao.detect.max_faces = 0;
        ao.landmarks.m.model = use_landmarks(o) ? o->landmarks : NULL;
        ao.embed.model = o->embedder;
        ffu_analyzer *a = NULL;
        ffu_status st = ffu_analyzer_create(&ao, &a);
        if (!st)
            st = ffu_gallery_create(dim, ze->name, &p->own_gallery);
        int skipped = 0;
        if (!st)
            st = ffu_gallery_enroll_dir(p->own_gallery, a, o->watchlist, &skipped);
        ffu_analyzer_destroy(a);
        if (st)
            return pl_error_context(st, "watchlist", o->watchlist);
        if (ffu_gallery_identity_count(p->own_gallery) == 0)
            return ffu_error_set(FFU_ERR_NOT_FOUND, "watchlist %s: no face found in any photo",
                                 o->watchlist);
        FFU_LOG(&pl_log, FFU_LOG_INFO, "watchlist %s: %d identities, %d photos (%d skipped)",
                o->watchlist, ffu_gallery_identity_count(p->own_gallery),
                ffu_gallery_template_count(p->own_gallery), skipped);
        p->gallery = p->own_gallery;
    } else {
        ffu_status st = ffu_gallery_load(o->watchlist, &p->own_gallery);
        if (st)
            return pl_error_context(st, "watchlist", o->watchlist);
        p->gallery = p->own_gallery;
    }
    const char *gm = ffu_gallery_model(p->gallery);
    if (ffu_gallery_dim(p->gallery) != dim || !gm || strcmp(gm, ze->name) != 0)
        return ffu_error_set(FFU_ERR_INVALID, "watchlist %s holds %d-value embeddings of '%s'; "
                                              "this run embeds with '%s' (%d values)",
                             o->watchlist ? o->watchlist : "(gallery)", ffu_gallery_dim(p->gallery),
                             gm ? gm : "?", ze->name, dim);
    return FFU_OK;
}

/* Parses the zones file and checks it with a scratch tracker, so a bad file fails at
 * create with the tracker's own message instead of at every stream's first frame. */
static ffu_status load_zones(ffu_pipeline *p, const char *path)
{
    if (!path)
        return FFU_OK;
    ffu_status st = ffu_json_parse_file(path, &p->zones);
    if (st)
        return pl_error_context(st, "zones file", path);
    ffu_tracker *t = NULL;
    if (!(st = ffu_tracker_create(NULL, &t)))
        st = ffu_tracker_add_zones_json(t, p->zones);
    ffu_tracker_destroy(t);
    if (st)
        return pl_error_context(st, "zones file", path);
    return FFU_OK;
}

/* The detector options every handle uses: one thread (the pool is the parallelism);
 * scores between 2/3 of the detector's threshold and the threshold feed ByteTrack's
 * second (low-score) stage: they keep tracks alive but never start one. */
static ffu_status detector_opts(ffu_pipeline *p, const ffu_pipeline_opts *o)
{
    ffu_detector_opts_default(&p->dopts);
    p->dopts.m = stage_model(p, p->detector_spec);
    p->dopts.min_face = o->min_face;
    ffu_detector *d = NULL;
    ffu_status st = ffu_detector_create(&p->dopts, &d);
    if (st)
        return st;
    const ffu_zoo_entry *dz = ffu_detector_model(d);
    p->det_thresh = dz && dz->threshold > 0 ? dz->threshold : 0.5f;
    p->dopts.min_score = p->det_thresh * (2.0f / 3.0f);
    ffu_detector_destroy(d);
    return FFU_OK;
}

/* The handle for batches of 1 << b, made on first use (the first size at create, so
 * a missing model fails there). Falls back to smaller batches when one cannot be
 * made. Returns the bucket actually available. */
static int detector_bucket(ffu_pipeline *p, pl_worker *w, int b)
{
    ffu_detector_opts d = p->dopts;
    d.m.workspace = w->ws;
    for (; b > 0 && !w->det[b]; b--)
        if (ffu_detector_create(&d, &w->det[b]) == FFU_OK)
            break;
    return b;
}

static int embedder_bucket(ffu_pipeline *p, pl_worker *w, int b)
{
    ffu_face_model_opts mo = stage_model(p, p->embedder_spec);
    mo.workspace = w->ws;
    for (; b > 0 && !w->emb[b]; b--)
        if (ffu_embedder_create(&mo, &w->emb[b]) == FFU_OK)
            break;
    return b;
}

static ffu_status create_worker(ffu_pipeline *p, pl_worker *w, const ffu_pipeline_opts *o)
{
    w->p = p;
    ffu_status st = pl_gpu_worker_init(p, w);
    if (st || (st = ffu_nn_workspace_create(&w->ws)))
        return st;
    ffu_detector_opts d = p->dopts;
    d.m.workspace = w->ws;
    if ((st = ffu_detector_create(&d, &w->det[0])))
        return st;
    if (use_landmarks(o)) {
        ffu_landmarker_opts lo;
        ffu_landmarker_opts_default(&lo);
        lo.m = stage_model(p, o->landmarks);
        lo.m.workspace = w->ws;
        if ((st = ffu_landmarker_create(&lo, &w->lm)))
            return st;
    }
    ffu_face_model_opts mo = stage_model(p, p->embedder_spec);
    mo.workspace = w->ws;
    if ((st = ffu_embedder_create(&mo, &w->emb[0])))
        return st;
    if (o->liveness_gate > 0) {
        ffu_face_model_opts lm = stage_model(p, o->liveness);
        lm.workspace = w->ws;
        if ((st = ffu_liveness_create(&lm, &w->live)))
            return st;
    }
    return FFU_OK;
}

ffu_status ffu_pipeline_create(const ffu_pipeline_opts *o, ffu_pipeline **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_pipeline_create: out is NULL");
    *out = NULL;
    ffu_pipeline_opts def;
    if (!o) {
        ffu_pipeline_opts_default(&def);
        o = &def;
    }
    if (!(o->sample_fps < 0 || o->sample_fps == 0 || (o->sample_fps > 0 && o->sample_fps <= 1000)))
        return ffu_error_set(FFU_ERR_INVALID, "sample fps %g is not in 0..1000 (< 0 = every frame)",
                             o->sample_fps);
    if (o->workers < 0 || o->workers > 256 || o->max_batch < 0 || o->max_wait_ms < 0 ||
        o->max_wait_ms > 10000 || !(o->liveness_gate >= 0 && o->liveness_gate <= 1) ||
        o->min_face < 0 || !(o->dwell_s >= 0) || !(o->progress_s >= 0) ||
        !(o->id_margin <= 1))
        return ffu_error_set(FFU_ERR_INVALID, "pipeline options: workers %d (0..256), max batch %d, "
                                              "max wait %d ms (0..10000), liveness gate %g (0..1), "
                                              "id margin %g (<= 1; < 0 = by the embedder), min face %d, dwell %g s "
                                              "must be in range",
                             o->workers, o->max_batch, o->max_wait_ms, o->liveness_gate,
                             o->id_margin, o->min_face, o->dwell_s);
    ffu_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return ffu_error_set(FFU_ERR_NOMEM, "pipeline");
    p->o = *o;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->smu, NULL);
    pthread_mutex_init(&p->ev_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->work, &ca);
    pthread_cond_init(&p->fed, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&p->stop, 0);
    if (p->o.sample_fps == 0)
        p->o.sample_fps = 5;
    if (p->o.progress_s == 0)
        p->o.progress_s = 0.5;
    p->nworkers = o->workers > 0 ? o->workers : ffu_cpu_count();
    /* borrowed strings: only the ones used after create are kept */
    p->o.watchlist = p->o.zones = p->o.detector = p->o.landmarks = NULL;
    p->o.embedder = p->o.liveness = p->o.backend = NULL;
    p->o.events_path = p->o.snapshot_dir = p->o.heatmap_dir = NULL;
    p->o.tracker = NULL;
    ffu_status st = FFU_OK;
    if ((o->events_path && !(p->events_path = strdup(o->events_path))) ||
        (o->snapshot_dir && !(p->snapshot_dir = strdup(o->snapshot_dir))) ||
        (o->heatmap_dir && !(p->heatmap_dir = strdup(o->heatmap_dir))) ||
        (o->detector && !(p->detector_spec = strdup(o->detector))) ||
        (o->embedder && !(p->embedder_spec = strdup(o->embedder))) ||
        (o->backend && !(p->backend = strdup(o->backend)))) {
        st = ffu_error_set(FFU_ERR_NOMEM, "pipeline options");
        goto fail;
    }
    /* backend cuda: no device, no run -- said before any model is loaded */
    if ((st = pl_gpu_open(p, o)))
        goto fail;
    p->max_batch = o->max_batch > 0 ? o->max_batch
                                    : p->on_gpu ? PL_EMBED_BATCH_GPU : PL_EMBED_BATCH_CPU;
    if (p->max_batch > PL_MAX_BATCH)
        p->max_batch = PL_MAX_BATCH;
    if ((st = load_zones(p, o->zones)))
        goto fail;
    if ((st = detector_opts(p, o)))
        goto fail;
    p->workers = calloc((size_t)p->nworkers, sizeof *p->workers);
    if (!p->workers) {
        st = ffu_error_set(FFU_ERR_NOMEM, "pipeline workers");
        goto fail;
    }
    for (int i = 0; i < p->nworkers; i++)
        if ((st = create_worker(p, &p->workers[i], o)))
            goto fail;
    p->threshold = ffu_embedder_threshold(p->workers[0].emb[0]);
    float margin = ffu_embedder_margin(p->workers[0].emb[0]);
    if (o->id_margin < 0)
        p->o.id_margin = margin;
    p->detect_batchable = face_detector_batchable(p->workers[0].det[0]);
    int det_cap = p->on_gpu ? PL_DET_BATCH_GPU : PL_DET_BATCH;
    p->det_batch = p->detect_batchable ? (p->max_batch < det_cap ? p->max_batch : det_cap) : 1;
    /* device frames need both models on the GPU (a model the backend could not place
     * there reads host frames) */
    p->dev_frames = p->on_gpu && !o->host_frames && face_detector_on_gpu(p->workers[0].det[0]) &&
                    face_embedder_on_gpu(p->workers[0].emb[0]);
    if ((st = load_watchlist(p, o, p->workers[0].emb[0])))
        goto fail;
    pl_gpu_watchlist(p);

    if (o->tracker) {
        p->topts = *o->tracker;
    } else {
        ffu_tracker_opts_default(&p->topts);
        p->topts.high_thresh = p->det_thresh;
        p->topts.low_thresh = p->det_thresh * (2.0f / 3.0f);
        p->topts.new_track_thresh = fminf(1.0f, p->det_thresh + 0.05f);
        p->topts.id_threshold = p->threshold;
        p->topts.reid_threshold = p->threshold;
        /* a vote's full weight needs the margin the open-set rule uses (same scale) */
        if (margin > 0)
            p->topts.margin_full = margin;
        p->topts.liveness_gate = o->liveness_gate;
        p->topts.dwell_s = o->dwell_s;
    }
    p->topts.name = NULL;
    p->topts.on_event = pl_on_track_event;
    p->topts.user = NULL;

    if ((st = ffu_jw_create(&p->jw, 0)))
        goto fail;
    for (const char *d = p->snapshot_dir; d; d = d == p->snapshot_dir ? p->heatmap_dir : NULL)
        if ((st = ffu_dir_make(d)) < 0) goto fail;
    p->stats.detect_batched = p->detect_batchable;
    p->stats.on_gpu = p->on_gpu;
    if (p->on_gpu)
        FFU_LOG(&pl_log, FFU_LOG_INFO, "cuda device %d: %d workers, detector batches up to %d, "
                "embedder up to %d, frames %s, watchlist search on the %s", o->device,
                p->nworkers, p->det_batch, p->max_batch,
                p->dev_frames ? "on the device when NVDEC decodes" : "on the host",
                p->ggpu ? "GPU" : "CPU");
    *out = p;
    return FFU_OK;
fail:
    ffu_pipeline_destroy(p);
    return st;
}

/* ---- streams ------------------------------------------------------------------------- */

/* A short readable name from a URL: the file name without extension, or host/path. */
static void derive_name(const char *url, char *buf, size_t len)
{
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    const char *slash = strrchr(s, '/');
    const char *base = slash && slash[1] ? slash + 1 : s;
    snprintf(buf, len, "%s", base);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf)
        *dot = 0;
    for (char *c = buf; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            *c = '_';
    if (!buf[0])
        snprintf(buf, len, "stream");
}

/* A copy of pattern with every "{name}" replaced by name; NULL for NULL. */
static char *expand_name(const char *pattern, const char *name)
{
    if (!pattern)
        return NULL;
    size_t n = 0, nl = strlen(name);
    for (const char *s = pattern; *s;)
        if (!strncmp(s, "{name}", 6)) {
            n += nl;
            s += 6;
        } else {
            n++;
            s++;
        }
    char *out = malloc(n + 1), *o = out;
    if (!out)
        return NULL;
    for (const char *s = pattern; *s;)
        if (!strncmp(s, "{name}", 6)) {
            memcpy(o, name, nl);
            o += nl;
            s += 6;
        } else {
            *o++ = *s++;
        }
    *o = 0;
    return out;
}

ffu_status ffu_pipeline_add_stream(ffu_pipeline *p, const ffu_pipeline_stream_opts *so, int *index)
{
    if (index)
        *index = -1;
    if (!p || !so || !so->url || !*so->url)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_pipeline_add_stream: no url");
    if (p->ran)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_pipeline_add_stream: the pipeline already ran");
    if (p->nstreams >= FFU_PIPELINE_MAX_STREAMS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "at most %d streams", FFU_PIPELINE_MAX_STREAMS);
    char base[96], name[128];
    if (so->name && *so->name)
        snprintf(base, sizeof base, "%s", so->name);
    else
        derive_name(so->url, base, sizeof base);
    snprintf(name, sizeof name, "%s", base);
    for (int k = 2;; k++) {
        int dup = 0;
        for (int i = 0; i < p->nstreams && !dup; i++)
            dup = !strcmp(p->streams[i]->name, name);
        if (!dup)
            break;
        snprintf(name, sizeof name, "%s-%d", base, k);
    }
    pl_stream *ps = calloc(1, sizeof *ps);
    if (!ps)
        return ffu_error_set(FFU_ERR_NOMEM, "stream");
    ps->p = p;
    ps->index = p->nstreams;
    ps->live = so->live;
    ps->loop = so->loop;
    ps->hwaccel = so->hwaccel;
    ps->hw_device = so->hw_device;
    ps->name = strdup(name);
    ps->url = strdup(so->url);
    ps->annotate = expand_name(so->annotate, name);
    ffu_tracker_opts to = p->topts;
    to.name = name;
    to.user = ps;
    ffu_status st = FFU_OK;
    if (!ps->name || !ps->url || (so->annotate && !ps->annotate))
        st = ffu_error_set(FFU_ERR_NOMEM, "stream");
    if (!st)
        st = ffu_tracker_create(&to, &ps->t);
    if (!st && p->zones)
        st = ffu_tracker_add_zones_json(ps->t, p->zones);
    if (st) {
        ffu_tracker_destroy(ps->t);
        free(ps->name);
        free(ps->url);
        free(ps->annotate);
        free(ps);
        return st;
    }
    snprintf(ps->st.name, sizeof ps->st.name, "%s", name);
    for (int j = 0; j < PL_MAX_INFLIGHT; j++)
        ps->jobs[j].ps = ps;
    p->streams[p->nstreams++] = ps;
    if (index)
        *index = ps->index;
    return FFU_OK;
}

int ffu_pipeline_stream_count(const ffu_pipeline *p) { return p ? p->nstreams : 0; }

const ffu_gallery *ffu_pipeline_gallery(const ffu_pipeline *p) { return p ? p->gallery : NULL; }

static void job_free(pl_job *j)
{
    ffu_face_list_free(&j->faces);
    free(j->res);
    free(j->embed_idx);
    free(j->match);
    free(j->nmatch);
}

static void stream_free(pl_stream *ps)
{
    if (!ps)
        return;
    ffu_stream_close(ps->s);
    ffu_tracker_destroy(ps->t);
    ffu_heatmap_destroy(ps->hm);
    ffu_video_writer_abort(ps->w);
    ffu_image_release(&ps->canvas);
    ffu_image_release(&ps->first);
    pl_crops_free(ps);
    for (int j = 0; j < PL_MAX_INFLIGHT; j++)
        job_free(&ps->jobs[j]);
    free(ps->tracks);
    free(ps->ids);
    free(ps->name);
    free(ps->url);
    free(ps->annotate);
    free(ps);
}

void ffu_pipeline_destroy(ffu_pipeline *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nstreams; i++)
        stream_free(p->streams[i]);
    for (int i = 0; p->workers && i < p->nworkers; i++) {
        pl_worker *w = &p->workers[i];
        for (int b = 0; b < PL_BUCKETS; b++) {
            ffu_detector_destroy(w->det[b]);
            ffu_embedder_destroy(w->emb[b]);
        }
        ffu_landmarker_destroy(w->lm);
        ffu_liveness_destroy(w->live);
        ffu_nn_workspace_destroy(w->ws); /* after its handles' sessions */
        pl_gpu_worker_free(w);
    }
    free(p->workers);
    pl_gpu_close(p); /* after the streams and workers: they hold its memory */
    if (p->events)
        fclose(p->events);
    ffu_jw_destroy(p->jw);
    ffu_gallery_destroy(p->own_gallery);
    ffu_json_free(p->zones);
    free(p->eq);
    free(p->events_path);
    free(p->snapshot_dir);
    free(p->heatmap_dir);
    free(p->detector_spec);
    free(p->embedder_spec);
    free(p->backend);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->fed);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->smu);
    pthread_mutex_destroy(&p->ev_mu);
    free(p);
}

void ffu_pipeline_stop(ffu_pipeline *p)
{
    if (p)
        atomic_store(&p->stop, 1);
}

/* ---- numbers ------------------------------------------------------------------------- */

static double ms_since(int64_t t0) { return (double)(ffu_clock_ns() - t0) * 1e-6; }

static double window_fps(const pl_stream *ps, int64_t now)
{
    int n = ps->done_n < PL_FPS_WINDOW ? ps->done_n : PL_FPS_WINDOW;
    int64_t oldest = 0;
    int count = 0;
    for (int k = 0; k < n; k++) {
        int64_t t = ps->done_ns[(ps->done_n - 1 - k) % PL_FPS_WINDOW];
        if (now - t > 2000000000LL)
            break;
        oldest = t;
        count++;
    }
    if (count < 2)
        return 0;
    double span = (double)(now - oldest) * 1e-9;
    return span > 0 ? (count - 1) / span : 0;
}

ffu_status ffu_pipeline_stream_stats_get(ffu_pipeline *p, int stream, ffu_pipeline_stream_stats *s)
{
    if (s)
        memset(s, 0, sizeof *s);
    if (!p || !s || stream < 0 || stream >= p->nstreams)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_pipeline_stream_stats_get: no stream %d", stream);
    pl_stream *ps = p->streams[stream];
    pthread_mutex_lock(&p->smu);
    *s = ps->st;
    s->processed_fps = window_fps(ps, ffu_clock_ns());
    pthread_mutex_unlock(&p->smu);
    if (ps->s)
        ffu_stream_health_get(ps->s, &s->health);
    return FFU_OK;
}

void ffu_pipeline_stats_get(ffu_pipeline *p, ffu_pipeline_stats *s)
{
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    if (!p)
        return;
    pthread_mutex_lock(&p->smu);
    *s = p->stats;
    pthread_mutex_unlock(&p->smu);
    s->streams = p->nstreams;
}

int ffu_pipeline_stream_identities(ffu_pipeline *p, int stream, int *ids, int cap)
{
    if (!p || stream < 0 || stream >= p->nstreams)
        return 0;
    pl_stream *ps = p->streams[stream];
    pthread_mutex_lock(&p->smu);
    int n = ps->nids;
    for (int i = 0; ids && i < n && i < cap; i++)
        ids[i] = ps->ids[i];
    pthread_mutex_unlock(&p->smu);
    return n;
}

/* ---- the steps ----------------------------------------------------------------------- */

/* The largest power of two <= n (n >= 1), as an exponent. */
static int log2_floor(int n)
{
    int b = 0;
    while ((2 << b) <= n)
        b++;
    return b;
}

static ffu_status grow(void **v, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return FFU_OK;
    int c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *nv = realloc(*v, (size_t)c * elem);
    if (!nv)
        return ffu_error_set(FFU_ERR_NOMEM, "pipeline scratch (%d)", c);
    *v = nv;
    *cap = c;
    return FFU_OK;
}

/* j->match (2 per face) and j->nmatch for n faces, every face "not searched". */
static ffu_status grow_matches(pl_job *j, int n)
{
    if (n > j->match_cap) {
        int c = n < 16 ? 16 : 2 * n;
        ffu_gallery_match *m = realloc(j->match, (size_t)c * 2 * sizeof *m);
        if (!m)
            return ffu_error_set(FFU_ERR_NOMEM, "pipeline scratch (%d)", c);
        j->match = m;
        int *nm = realloc(j->nmatch, (size_t)c * sizeof *nm);
        if (!nm)
            return ffu_error_set(FFU_ERR_NOMEM, "pipeline scratch (%d)", c);
        j->nmatch = nm;
        j->match_cap = c;
    }
    for (int i = 0; i < n; i++)
        j->nmatch[i] = -1;
    return FFU_OK;
}

/* Under p->mu: the job's tracking step may start when it is its stream's next. */
static pl_job *take_track_ready(ffu_pipeline *p)
{
    for (int i = 0; i < p->nstreams; i++) {
        pl_stream *ps = p->streams[i];
        if (!ps->busy && ps->ready && ps->ready->order == ps->next_track) {
            pl_job *j = ps->ready;
            ps->ready = j->next;
            ps->busy = 1;
            p->tracking++;
            return j;
        }
    }
    return NULL;
}

/* Under p->mu: could another face reach the embedder queue soon? Yes while a stream
 * that is not waiting on the embedder has a frame in detection or ready to track. */
static int embed_more_expected(const ffu_pipeline *p)
{
    if (p->tracking > 0)
        return 1;
    for (int i = 0; i < p->nstreams; i++) {
        const pl_stream *ps = p->streams[i];
        if (!ps->busy && (ps->in_detect > 0 || ps->ready))
            return 1;
    }
    return 0;
}

/* Gives the frame back and lets the stream's next frame be tracked. */
static void job_done(ffu_pipeline *p, pl_job *j, double pts)
{
    pl_stream *ps = j->ps;
    ffu_stream_release(ps->s, j->frame);
    int64_t now = ffu_clock_ns();
    pthread_mutex_lock(&p->smu);
    ps->st.frames++;
    if (ps->st.frames == 1)
        ps->st.first_pts = pts;
    ps->st.last_pts = pts;
    ps->done_ns[ps->done_n % PL_FPS_WINDOW] = now;
    ps->done_n++;
    p->stats.frames++;
    pthread_mutex_unlock(&p->smu);
    pthread_mutex_lock(&p->mu);
    j->frame = NULL;
    j->in_use = 0;
    ps->busy = 0;
    ps->next_track++;
    ps->inflight--;
    pthread_cond_broadcast(&p->work);
    pthread_cond_signal(&p->fed);
    pthread_mutex_unlock(&p->mu);
}

/* Embeddings to the tracker, gallery votes, annotation; then the frame is done. */
static void finish_step(pl_worker *w, pl_job *j)
{
    ffu_pipeline *p = w->p;
    pl_stream *ps = j->ps;
    /* host frames: the frame; device frames: downloaded below only when a snapshot or
     * the annotated video needs the pixels */
    const ffu_image *img = j->frame->on_gpu ? NULL : &j->frame->image;
    double pts = j->frame->pts;
    int64_t t0 = ffu_clock_ns();
    int64_t nemb = 0;
    for (int k = 0; k < j->n_embed; k++) {
        int i = j->embed_idx[k];
        ffu_face *f = &j->faces.faces[i];
        int tid = j->res[i].track_id, id = tid;
        if (f->embedding_dim <= 0)
            continue; /* its embedding failed (logged) */
        nemb++;
        if (ffu_tracker_set_embedding(ps->t, tid, f, &id) != FFU_OK)
            continue;
        if (id != tid)
            pl_crop_merge(ps, tid, id);
        if (!img && pl_crop_wanted(ps, id, j->res[i].quality))
            img = pl_frame_host(w, j->frame);
        if (img)
            pl_crop_offer(ps, id, img, f, j->res[i].quality);
        ffu_track_vote v = {-1, 0.0f, NAN, NAN, f->liveness};
        if (p->gallery) {
            ffu_gallery_match m[2];
            int n;
            if (j->nmatch && j->nmatch[i] >= 0) { /* searched on the GPU with its batch */
                n = j->nmatch[i];
                m[0] = j->match[2 * i];
                m[1] = j->match[2 * i + 1];
            } else {
                n = ffu_gallery_search(p->gallery, f->embedding, m, 2);
            }
            if (n > 0) {
                v.identity = m[0].identity;
                v.similarity = m[0].similarity;
            }
            if (n > 1)
                v.second = m[1].similarity;
            /* open-set rule: a match that barely beats another identity is no evidence
             * for either (docs/ANALYZE.md: faceres puts strangers within 0.1 of a
             * watchlist face), so it votes "unknown" */
            if (n > 1 && p->o.id_margin > 0 && v.similarity - v.second < p->o.id_margin)
                v.identity = -1;
        }
        ffu_tracker_vote(ps->t, id, pts, &v);
    }
    double search_ms = ms_since(t0);
    int64_t t1 = ffu_clock_ns();
    if (ps->w && !ps->writer_failed) {
        if (!img)
            img = pl_frame_host(w, j->frame);
        ffu_status st = img ? pl_annotate(ps, img, pts)
                            : ffu_error_set(FFU_ERR_DEVICE, "frame download: %s", ffu_error_message());
        if (st) {
            ps->writer_failed = 1;
            FFU_LOG(&pl_log, FFU_LOG_WARN, "%s: annotated video %s: %s", ps->name, ps->annotate,
                    ffu_error_message());
            pthread_mutex_lock(&p->smu);
            if (ps->st.status == FFU_OK) {
                ps->st.status = st;
                snprintf(ps->st.error, sizeof ps->st.error, "annotated video %s: %s",
                         ps->annotate, ffu_error_message());
            }
            pthread_mutex_unlock(&p->smu);
        }
    }
    double annotate_ms = ms_since(t1);
    pthread_mutex_lock(&p->smu);
    ps->st.search_ms += search_ms;
    ps->st.annotate_ms += annotate_ms;
    ps->st.embeddings += nemb;
    p->stats.embeddings += nemb;
    p->stats.busy_ms += search_ms + annotate_ms;
    pthread_mutex_unlock(&p->smu);
    job_done(p, j, pts);
}

/* Tracking: update, heatmap, and which faces to embed (queued for the embedder). */
static void track_step(pl_worker *w, pl_job *j)
{
    ffu_pipeline *p = w->p;
    pl_stream *ps = j->ps;
    const ffu_stream_frame *fr = j->frame;
    double pts = j->frame->pts;
    int64_t t0 = ffu_clock_ns();
    if (!ps->width) {
        ps->width = fr->on_gpu ? fr->gpu.width : fr->image.width;
        ps->height = fr->on_gpu ? fr->gpu.height : fr->image.height;
        /* the pixels only for a heatmap background or an annotated video */
        ffu_image size_only = {.width = ps->width, .height = ps->height};
        const ffu_image *img = p->heatmap_dir || ps->annotate ? pl_frame_host(w, fr) : &size_only;
        ffu_status st = img ? pl_outputs_begin(ps, img)
                            : ffu_error_set(FFU_ERR_DEVICE, "%s: first frame: %s", ps->name,
                                            ffu_error_message());
        if (st) {
            FFU_LOG(&pl_log, FFU_LOG_WARN, "%s: %s", ps->name, ffu_error_message());
            pthread_mutex_lock(&p->smu);
            if (ps->st.status == FFU_OK) {
                ps->st.status = st;
                snprintf(ps->st.error, sizeof ps->st.error, "%s", ffu_error_message());
            }
            pthread_mutex_unlock(&p->smu);
        }
    }
    /* the tracker's clock must not go backwards (a live source's pts could) */
    if (pts < ps->last_time)
        pts = ps->last_time;
    ps->last_time = pts;
    int n = j->faces.count;
    j->n_embed = 0;
    ffu_status st = grow((void **)&j->res, &j->res_cap, n, sizeof *j->res);
    if (!st)
        st = grow((void **)&j->embed_idx, &j->embed_cap, n, sizeof *j->embed_idx);
    if (!st && p->ggpu) /* room for each face's GPU search answer (2 matches, count) */
        st = grow_matches(j, n);
    if (!st)
        st = ffu_tracker_update(ps->t, pts, j->faces.faces, n, j->res);
    if (st) {
        FFU_LOG(&pl_log, FFU_LOG_WARN, "%s: tracking frame at %.3f s: %s", ps->name, pts,
                ffu_error_message());
        n = 0;
    }
    if (ps->hm)
        ffu_heatmap_add_tracks(ps->hm, ps->t);
    for (int i = 0; i < n; i++)
        if (j->res[i].want_embed && j->res[i].track_id >= 0)
            j->embed_idx[j->n_embed++] = i;
    double ms = ms_since(t0);
    pthread_mutex_lock(&p->smu);
    ps->st.track_ms += ms;
    ps->st.faces += j->faces.count;
    p->stats.faces += j->faces.count;
    p->stats.busy_ms += ms;
    pthread_mutex_unlock(&p->smu);

    pthread_mutex_lock(&p->mu);
    p->tracking--;
    if (j->n_embed > 0 &&
        grow((void **)&p->eq, &p->eq_cap, p->eq_n + j->n_embed, sizeof *p->eq) != FFU_OK) {
        FFU_LOG(&pl_log, FFU_LOG_WARN, "%s: %s: frame at %.3f s not embedded", ps->name,
                ffu_error_message(), pts);
        j->n_embed = 0;
    }
    if (j->n_embed > 0) {
        int64_t now = ffu_clock_ns();
        j->embed_left = j->n_embed;
        for (int k = 0; k < j->n_embed; k++)
            p->eq[p->eq_n++] = (pl_item){j, j->embed_idx[k], now};
        pthread_cond_broadcast(&p->work);
    }
    pthread_mutex_unlock(&p->mu);
    if (j->n_embed == 0)
        finish_step(w, j);
}

/* Landmarks (optional), liveness (optional) and one embedder run for k faces that may
 * come from several streams; each frame whose last face this was is finished here. On
 * the GPU, faces of device frames are embedded from the device, the others from the
 * host, and the watchlist search for all k is one GPU call. */
static void embed_step(pl_worker *w, pl_item *items, int k)
{
    ffu_pipeline *p = w->p;
    const ffu_image *imgs[PL_MAX_BATCH];
    const ffu_gpu_image *gimgs[PL_MAX_BATCH];
    ffu_face *faces[PL_MAX_BATCH], *gfaces[PL_MAX_BATCH];
    double lm_ms[PL_MAX_BATCH];
    int nstreams = 0, nh = 0, ng = 0;
    const pl_stream *seen[PL_MAX_BATCH];
    for (int i = 0; i < k; i++) {
        const ffu_stream_frame *fr = items[i].job->frame;
        ffu_face *f = &items[i].job->faces.faces[items[i].face];
        if (fr->on_gpu) {
            gimgs[ng] = &fr->gpu;
            gfaces[ng++] = f;
        } else {
            imgs[nh] = &fr->image;
            faces[nh++] = f;
        }
        lm_ms[i] = 0;
        int known = 0;
        for (int s = 0; s < nstreams && !known; s++)
            known = seen[s] == items[i].job->ps;
        if (!known)
            seen[nstreams++] = items[i].job->ps;
        if (!w->lm && !w->live)
            continue;
        int64_t t0 = ffu_clock_ns();
        /* landmarks and liveness read host pixels: a device frame comes down once */
        const ffu_image *img = pl_frame_host(w, fr);
        /* a failed landmark or liveness run keeps the detector's keypoints / NAN */
        if (img && w->lm && ffu_landmarker_run(w->lm, img, f) != FFU_OK)
            FFU_LOG(&pl_log, FFU_LOG_DEBUG, "landmarks: %s", ffu_error_message());
        if (img && w->live && ffu_liveness_run(w->live, img, f) != FFU_OK)
            FFU_LOG(&pl_log, FFU_LOG_DEBUG, "liveness: %s", ffu_error_message());
        lm_ms[i] = ms_since(t0);
    }
    int64_t t0 = ffu_clock_ns();
    /* batches of descending powers of two (13 = 8 + 4 + 1; on the CPU k is one power
     * of two), each on the handle of its size: a handle keeps one batch size, hence one
     * plan */
    for (int i = 0; i < ng;) {
        int b = embedder_bucket(p, w, log2_floor(ng - i)), n = 1 << b;
        if (face_embedder_run_multi_gpu(w->emb[b], gimgs + i, gfaces + i, n) != FFU_OK)
            FFU_LOG(&pl_log, FFU_LOG_WARN, "embedding %d faces on the GPU: %s", n,
                    ffu_error_message());
        i += n;
    }
    for (int i = 0; i < nh;) {
        int b = embedder_bucket(p, w, log2_floor(nh - i)), n = 1 << b;
        if (face_embedder_run_multi(w->emb[b], imgs + i, faces + i, n) != FFU_OK)
            FFU_LOG(&pl_log, FFU_LOG_WARN, "embedding %d faces: %s", n, ffu_error_message());
        i += n;
    }
    double per = ms_since(t0) / k;
    int64_t t1 = ffu_clock_ns();
    int searched = pl_gpu_search(w, items, k);
    double search_per = searched ? ms_since(t1) / searched : 0;
    pthread_mutex_lock(&p->smu);
    p->stats.embed_runs++;
    p->stats.embed_items += k;
    if (k > p->stats.max_embed_batch)
        p->stats.max_embed_batch = k;
    if (nstreams > 1)
        p->stats.cross_stream_embed_runs++;
    for (int i = 0; i < k; i++) {
        pl_stream *ps = items[i].job->ps;
        ps->st.embed_ms += per;
        ps->st.landmarks_ms += lm_ms[i];
        p->stats.busy_ms += per + lm_ms[i];
        if (searched && items[i].job->nmatch && items[i].job->nmatch[items[i].face] >= 0) {
            ps->st.search_ms += search_per;
            p->stats.busy_ms += search_per;
        }
    }
    pthread_mutex_unlock(&p->smu);
    /* which frames are complete now (a frame's faces may be split over batches) */
    pl_job *done[PL_MAX_BATCH];
    int ndone = 0;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < k; i++)
        if (--items[i].job->embed_left == 0)
            done[ndone++] = items[i].job;
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < ndone; i++)
        finish_step(w, done[i]);
}

/* Detection of k frames (one batched run when the detector allows; on the GPU frames
 * in device memory are read there), face quality, then each frame waits for its
 * stream's tracking step. */
static void detect_step(pl_worker *w, pl_job **jobs, int k)
{
    ffu_pipeline *p = w->p;
    const ffu_image *imgs[PL_DET_BATCH_GPU];
    const ffu_gpu_image *gimgs[PL_DET_BATCH_GPU];
    ffu_face_list *outs[PL_DET_BATCH_GPU], *gouts[PL_DET_BATCH_GPU];
    int nstreams = 0, nh = 0, ng = 0;
    for (int i = 0; i < k; i++) {
        if (jobs[i]->frame->on_gpu) {
            gimgs[ng] = &jobs[i]->frame->gpu;
            gouts[ng++] = &jobs[i]->faces;
        } else {
            imgs[nh] = &jobs[i]->frame->image;
            outs[nh++] = &jobs[i]->faces;
        }
        int known = 0;
        for (int s = 0; s < i && !known; s++)
            known = jobs[s]->ps == jobs[i]->ps;
        nstreams += !known;
    }
    int64_t t0 = ffu_clock_ns();
    for (int i = 0; i < ng;) { /* as embed_step: descending powers of two */
        int b = detector_bucket(p, w, log2_floor(ng - i)), n = 1 << b;
        if (face_detector_detect_multi_gpu(w->det[b], gimgs + i, gouts + i, n) != FFU_OK) {
            FFU_LOG(&pl_log, FFU_LOG_WARN, "detection of %d device frame(s): %s", n,
                    ffu_error_message());
            for (int j = i; j < i + n; j++)
                ffu_face_list_clear(gouts[j]);
        }
        i += n;
    }
    for (int i = 0; i < nh;) {
        int b = detector_bucket(p, w, log2_floor(nh - i)), n = 1 << b;
        if (face_detector_detect_multi(w->det[b], imgs + i, outs + i, n) != FFU_OK) {
            FFU_LOG(&pl_log, FFU_LOG_WARN, "detection of %d frame(s): %s", n, ffu_error_message());
            for (int j = i; j < i + n; j++)
                ffu_face_list_clear(outs[j]);
        }
        i += n;
    }
    /* quality (size, sharpness, pose) picks each track's best face; no model, ~0.03 ms;
     * device frames: from patches around the faces */
    for (int i = 0; i < nh; i++)
        for (int f = 0; f < outs[i]->count; f++)
            ffu_face_quality_compute(imgs[i], &outs[i]->faces[f]);
    if (ng)
        pl_gpu_quality(w, jobs, k);
    double per = ms_since(t0) / k;
    pthread_mutex_lock(&p->smu);
    for (int i = 0; i < k; i++) {
        /* the stream's smallest face looked for, once (a stream's size is fixed; a view
         * plan, microseconds, with this worker's own detector) */
        const ffu_stream_frame *f = jobs[i]->frame;
        if (jobs[i]->ps->st.min_face == 0 &&
            ffu_detector_smallest_face(w->det[0], f->on_gpu ? f->gpu.width : f->image.width,
                                       f->on_gpu ? f->gpu.height : f->image.height,
                                       &jobs[i]->ps->st.min_face))
            ffu_error_clear();
    }
    p->stats.detect_runs++;
    p->stats.detect_items += k;
    p->stats.gpu_frames += ng;
    if (k > p->stats.max_detect_batch)
        p->stats.max_detect_batch = k;
    if (nstreams > 1)
        p->stats.cross_stream_detect_runs++;
    for (int i = 0; i < k; i++) {
        jobs[i]->ps->st.detect_ms += per;
        p->stats.busy_ms += per;
    }
    pthread_mutex_unlock(&p->smu);
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < k; i++) {
        pl_stream *ps = jobs[i]->ps;
        pl_job **pp = &ps->ready;
        while (*pp && (*pp)->order < jobs[i]->order)
            pp = &(*pp)->next;
        jobs[i]->next = *pp;
        *pp = jobs[i];
        ps->in_detect--;
    }
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
}

static void deadline_ts(int64_t ns_from_now, struct timespec *ts)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    int64_t t = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + ns_from_now;
    ts->tv_sec = (time_t)(t / 1000000000LL);
    ts->tv_nsec = (long)(t % 1000000000LL);
}

/* A worker: tracking steps first (they unblock their stream and feed the embedder),
 * then a due embedder batch, then detection, then an embedder batch nobody else can
 * add to; otherwise sleep until the oldest waiting face is due or new work comes. */
static void *worker_main(void *arg)
{
    pl_worker *w = arg;
    ffu_pipeline *p = w->p;
    int64_t max_wait = (int64_t)p->o.max_wait_ms * 1000000LL;
    pl_item items[PL_MAX_BATCH];
    pl_job *jobs[PL_DET_BATCH_GPU];
    if (p->on_gpu)
        ffu_gpu_make_current(p->gpu); /* CUDA's current device is per thread */
    pthread_mutex_lock(&p->mu);
    while (!p->shutdown) {
        pl_job *tj = take_track_ready(p);
        if (tj) {
            pthread_mutex_unlock(&p->mu);
            track_step(w, tj);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        int64_t now = ffu_clock_ns();
        int ne = p->eq_n;
        int64_t age = ne ? now - p->eq[0].enq_ns : 0;
        int embed_due = ne > 0 && (ne >= p->max_batch || age >= max_wait);
        if (embed_due || (ne > 0 && p->dq_n == 0 && !embed_more_expected(p))) {
            /* CPU: a power of two, the rest stays queued for the next run; GPU: all that
             * is queued (up to the cap), run as powers of two at once */
            int k = ne < p->max_batch ? ne : p->max_batch;
            if (!p->on_gpu)
                k = 1 << log2_floor(k);
            memcpy(items, p->eq, (size_t)k * sizeof *items);
            memmove(p->eq, p->eq + k, (size_t)(p->eq_n - k) * sizeof *p->eq);
            p->eq_n -= k;
            pthread_mutex_unlock(&p->mu);
            embed_step(w, items, k);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->dq_n > 0) {
            /* CPU: share the queued frames with the idle workers instead of taking all
             * (a core per batch); GPU: one batch of what is queued, up to det_batch */
            int k;
            if (p->on_gpu) {
                k = p->dq_n < p->det_batch ? p->dq_n : p->det_batch;
            } else {
                int share = (p->dq_n + p->idle) / (p->idle + 1);
                k = share < p->det_batch ? share : p->det_batch;
                k = 1 << log2_floor(k < 1 ? 1 : k);
            }
            for (int i = 0; i < k; i++) {
                jobs[i] = p->dq_head;
                p->dq_head = p->dq_head->next;
            }
            if (!p->dq_head)
                p->dq_tail = NULL;
            p->dq_n -= k;
            pthread_mutex_unlock(&p->mu);
            detect_step(w, jobs, k);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        p->idle++;
        struct timespec ts;
        /* faces waiting: wake when the oldest is due; else a bounded sleep (work
         * arrival signals anyway) */
        deadline_ts(ne > 0 ? (max_wait - age > 0 ? max_wait - age : 0) : 100000000LL, &ts);
        pthread_cond_timedwait(&p->work, &p->mu, &ts);
        p->idle--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- the feeder ---------------------------------------------------------------------- */

int pl_stream_is_file(const pl_stream *ps)
{
    if (ps->live == 1 || ps->loop)
        return 0;
    if (ps->live == 2)
        return 1;
    if (!strncmp(ps->url, "/dev/video", 10))
        return 0;
    return !strstr(ps->url, "://") || !strncmp(ps->url, "file:", 5);
}

static void stream_fail(ffu_pipeline *p, pl_stream *ps, ffu_status st, const char *why)
{
    pthread_mutex_lock(&p->smu);
    if (ps->st.status == FFU_OK || ps->st.status == st) {
        ps->st.status = st;
        snprintf(ps->st.error, sizeof ps->st.error, "%.255s", why);
    }
    pthread_mutex_unlock(&p->smu);
    FFU_LOG(&pl_log, FFU_LOG_WARN, "stream %s: %s", ps->name, why);
}

static ffu_status open_stream(ffu_pipeline *p, pl_stream *ps)
{
    ffu_stream_opts so;
    ffu_stream_opts_default(&so);
    so.name = ps->name;
    so.sample_fps = p->o.sample_fps;
    so.max_held = PL_MAX_INFLIGHT;
    so.live = ps->live;
    so.loop = ps->loop;
    so.realtime = p->o.realtime;
    so.reader.pixfmt = FFU_PIX_RGB24;
    so.reader.threads = 1; /* many streams share the cores; one decoder thread each */
    so.reader.hwaccel = (ffu_video_hwaccel)ps->hwaccel;
    so.reader.hw_device = ps->hw_device;
    /* device frames: only where the models can read them (the same device) */
    ps->gpu_frames = p->dev_frames && ps->hwaccel != FFU_VIDEO_HWACCEL_NONE &&
                     ps->hw_device == ffu_gpu_index(p->gpu);
    so.gpu_frames = ps->gpu_frames;
    if (p->dev_frames && ps->hwaccel != FFU_VIDEO_HWACCEL_NONE && !ps->gpu_frames)
        FFU_LOG(&pl_log, FFU_LOG_INFO, "%s: decoding on CUDA device %d, models on %d: frames "
                "go through the host", ps->name, ps->hw_device, ffu_gpu_index(p->gpu));
    return ffu_stream_open(&ps->s, ps->url, &so);
}

/* Pops what the stream has (up to the in-flight limit) into the detection queue.
 * Returns how many frames came. */
static int feed_stream(ffu_pipeline *p, pl_stream *ps)
{
    int got = 0;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int room = ps->inflight < PL_MAX_INFLIGHT;
        pthread_mutex_unlock(&p->mu);
        if (!room)
            return got;
        ffu_stream_frame *fr = NULL;
        ffu_status st = ffu_stream_pop(ps->s, &fr, 0);
        if (st == FFU_OK) {
            pthread_mutex_lock(&p->mu);
            pl_job *j = NULL;
            for (int k = 0; k < PL_MAX_INFLIGHT && !j; k++)
                if (!ps->jobs[k].in_use)
                    j = &ps->jobs[k];
            j->in_use = 1;
            j->frame = fr;
            j->order = ps->next_order++;
            j->next = NULL;
            ps->inflight++;
            ps->in_detect++;
            if (p->dq_tail)
                p->dq_tail->next = j;
            else
                p->dq_head = j;
            p->dq_tail = j;
            p->dq_n++;
            pthread_cond_signal(&p->work);
            pthread_mutex_unlock(&p->mu);
            got++;
            continue;
        }
        if (st == FFU_AGAIN || st == FFU_ERR_TIMEOUT)
            return got;
        if (st != FFU_EOF) {
            ffu_stream_health h;
            ffu_stream_health_get(ps->s, &h);
            char why[256];
            snprintf(why, sizeof why, "%.255s", h.last_error[0] ? h.last_error : ffu_status_str(st));
            stream_fail(p, ps, st, why);
        }
        pthread_mutex_lock(&p->mu);
        ps->input_done = 1;
        pthread_mutex_unlock(&p->mu);
        return got;
    }
}

/* End of a stream: track_ended for every live track, the video and heatmaps written.
 * Called by the feeder when nothing of the stream is in flight. */
static void finalize_stream(ffu_pipeline *p, pl_stream *ps)
{
    ffu_tracker_flush(ps->t, ps->last_time);
    ffu_status st = pl_outputs_end(ps);
    if (st)
        stream_fail(p, ps, st, ffu_error_message());
    pl_crops_free(ps);
    if (ps->s)
        ffu_stream_stop(ps->s);
    pthread_mutex_lock(&p->smu);
    ps->st.finished = 1;
    pthread_mutex_unlock(&p->smu);
    pl_events_flush(p);
}

/* No output may replace an input: the events file and each annotated video against
 * every stream's source (a file named twice, or a folder of outputs holding the inputs).
 * Checked when all streams are known, before anything is opened for writing. */
static ffu_status check_outputs(const ffu_pipeline *p)
{
    for (int i = 0; i < p->nstreams; i++) {
        const pl_stream *in = p->streams[i];
        if (p->events_path && ffu_same_file(p->events_path, in->url))
            return ffu_error_set(FFU_ERR_INVALID, "the events file %s is stream %s's input",
                                 p->events_path, in->name);
        for (int j = 0; j < p->nstreams; j++) {
            const char *ann = p->streams[j]->annotate;
            if (ann && ffu_same_file(ann, in->url))
                return ffu_error_set(FFU_ERR_INVALID,
                                     "stream %s's annotated video %s is stream %s's input",
                                     p->streams[j]->name, ann, in->name);
        }
    }
    return FFU_OK;
}

ffu_status ffu_pipeline_run(ffu_pipeline *p)
{
    if (!p)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_pipeline_run: pipeline is NULL");
    if (p->ran)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_pipeline_run: a pipeline runs once");
    if (p->nstreams == 0)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_pipeline_run: no stream was added");
    ffu_status bad = check_outputs(p);
    if (!bad && p->events_path && !(p->events = fopen(p->events_path, "w")))
        bad = ffu_error_set(FFU_ERR_IO, "events file %s: %s", p->events_path, strerror(errno));
    if (bad) return bad;
    p->ran = 1;
    int64_t start = ffu_clock_ns();
    for (int i = 0; i < p->nstreams; i++) {
        pl_stream *ps = p->streams[i];
        ffu_status st = open_stream(p, ps);
        if (st) {
            stream_fail(p, ps, st, ffu_error_message());
            ps->input_done = 1;
        }
    }
    int started = 0;
    for (int i = 0; i < p->nworkers; i++) {
        if (pthread_create(&p->workers[i].th, NULL, worker_main, &p->workers[i]) != 0)
            break;
        p->workers[i].started = 1;
        started++;
    }
    if (!started) {
        for (int i = 0; i < p->nstreams; i++)
            if (p->streams[i]->s)
                ffu_stream_stop(p->streams[i]->s);
        return ffu_error_set(FFU_ERR_NOMEM, "cannot start worker threads");
    }
    int stopping = 0;
    double next_progress = ffu_clock_sec() + p->o.progress_s;
    for (;;) {
        if (!stopping && atomic_load(&p->stop)) {
            stopping = 1;
            for (int i = 0; i < p->nstreams; i++)
                if (p->streams[i]->s)
                    ffu_stream_stop(p->streams[i]->s);
        }
        int got = 0, all_done = 1;
        for (int i = 0; i < p->nstreams; i++) {
            pl_stream *ps = p->streams[i];
            if (!ps->input_done)
                got += feed_stream(p, ps);
            pthread_mutex_lock(&p->mu);
            int finish = ps->input_done && ps->inflight == 0 && !ps->finalized;
            if (finish)
                ps->finalized = 1;
            all_done &= ps->finalized;
            pthread_mutex_unlock(&p->mu);
            if (finish)
                finalize_stream(p, ps);
        }
        if (p->o.on_progress && ffu_clock_sec() >= next_progress) {
            next_progress = ffu_clock_sec() + p->o.progress_s;
            p->o.on_progress(p->o.progress_user, p);
        }
        if (all_done)
            break;
        if (!got) {
            /* woken early when a frame finishes (room for the next); streams have no
             * "frame ready" signal, so a short poll covers new frames */
            struct timespec ts;
            deadline_ts(2000000LL, &ts);
            pthread_mutex_lock(&p->mu);
            pthread_cond_timedwait(&p->fed, &p->mu, &ts);
            pthread_mutex_unlock(&p->mu);
        }
    }
    pthread_mutex_lock(&p->mu);
    p->shutdown = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++)
        if (p->workers[i].started) {
            pthread_join(p->workers[i].th, NULL);
            p->workers[i].started = 0;
        }
    pl_events_flush(p);
    pthread_mutex_lock(&p->smu);
    p->stats.wall_s = (double)(ffu_clock_ns() - start) * 1e-9;
    pthread_mutex_unlock(&p->smu);
    if (p->o.on_progress)
        p->o.on_progress(p->o.progress_user, p);
    for (int i = 0; i < p->nstreams; i++) {
        pl_stream *ps = p->streams[i];
        if (ps->st.status != FFU_OK)
            return ffu_error_set(ps->st.status, "stream %s: %s", ps->name, ps->st.error);
    }
    return FFU_OK;
}
