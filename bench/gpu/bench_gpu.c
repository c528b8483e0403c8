/* GPU benchmark (issue #7, item 7), facefuse side: what the engine's cuda backend, the
 * GPU image kernels and the GPU gallery give on the lent H200, through the public API
 * only, so the numbers are what a user of the library gets. Run by scripts/gpu-check
 * beside bench/gpu/peer_torch.py (the same ONNX files on PyTorch and ONNX Runtime).
 * Not a test: it prints timings, plus one accuracy line per model (fp16 GPU vs the CPU
 * backend on the same input) so a fast but wrong backend cannot pass unnoticed.
 *
 *   bench_gpu [--embed-model PATH] [--det-model PATH] [--det-full-model PATH]
 *             [--embed-batches 1,64,256,1024] [--det-batches 1,8,32] [--iters N]
 *             [--warmup N] [--device I] [--fp32] [--no-check] [--only embed|det|e2e]
 *
 * Measurements (medians of --iters timed repetitions after --warmup):
 *   embed        MobileFaceNet 112x112, batch B, input already on the device:
 *                aligned faces/s = B / (time of one run); goal >= 20000 (fp16)
 *   embed+warp   the same with the alignment warp of B faces out of a 1080p frame
 *                (ffu_gpu_image_warp_to_tensor) in front of each run
 *   det          1080p BGR frames resident on the device (as NVDEC leaves them),
 *                letterboxed into the detector's input by warp_to_tensor, F frames per
 *                run, outputs copied to the host: frames/s
 *   det-upload   the same with the frames uploaded from pinned host memory each run
 *   det-full     the dynamic-size detector on the whole frame (1920x1088), batch 1
 *   e2e          one 1080p frame from pinned host memory to gallery answers: upload,
 *                letterbox, detect, outputs to the host, 4 face alignments (fixed
 *                keypoints: the detector's box decoding and NMS run on the CPU in
 *                microseconds and are not reachable through the public API), embed,
 *                search of a 10000-identity device gallery; ms per frame, goal <= 10
 * Timing: wall clock around work that ends with a stream synchronisation, and CUDA
 * events on the same stream when built with -DFFU_BENCH_CUDA_EVENTS (cudart).
 *
 * Output: "row" lines (machine-readable) while running, then a markdown table.
 * Exit: 0 done, 77 no CUDA device (skipped), 1 setup error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "facefuse/gallery.h"
#include "facefuse/gpu.h"
#include "facefuse/image.h"
#include "facefuse/image_gpu.h"
#include "facefuse/nn.h"

#ifdef FFU_BENCH_CUDA_EVENTS
#include <cuda_runtime_api.h>
#endif

#define MAX_ROWS 64
#define MAX_LIST 16

typedef struct row {
    char what[32];
    char model[64];
    int batch;
    double ms_median, ms_p90; /* per run */
    double per_s;             /* items per second */
    const char *unit;         /* "faces/s", "frames/s", "ms/frame" */
    char note[96];
} row;

typedef struct bench {
    const char *embed_model, *det_model, *det_full_model;
    int embed_batches[MAX_LIST], n_embed;
    int det_batches[MAX_LIST], n_det;
    int iters, warmup, device, fp16, check;
    const char *only;
    ffu_gpu *gpu;
    ffu_gpu_stream *stream;
    row rows[MAX_ROWS];
    int n_rows;
} bench;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median and 90th percentile of n samples (sorted in place). */
static void stats(double *t, int n, double *med, double *p90)
{
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    *med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
    int i = (int)ceil(0.9 * n) - 1;
    *p90 = t[i < 0 ? 0 : i];
}

static int parse_list(const char *s, int *out)
{
    int n = 0;
    while (s && *s && n < MAX_LIST) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 65536) return -1;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void add_row(bench *b, const char *what, const char *model, int batch, double *t, int n,
                    double items_per_run, const char *unit, const char *note)
{
    if (b->n_rows >= MAX_ROWS) return;
    row *r = &b->rows[b->n_rows++];
    memset(r, 0, sizeof *r);
    snprintf(r->what, sizeof r->what, "%s", what);
    const char *base = strrchr(model, '/');
    snprintf(r->model, sizeof r->model, "%s", base ? base + 1 : model);
    r->batch = batch;
    stats(t, n, &r->ms_median, &r->ms_p90);
    r->unit = unit;
    r->per_s = strcmp(unit, "ms/frame") == 0 ? 1e3 / r->ms_median
                                            : items_per_run * 1e3 / r->ms_median;
    snprintf(r->note, sizeof r->note, "%s", note ? note : "");
    printf("row %s model=%s batch=%d median_ms=%.4f p90_ms=%.4f per_s=%.1f unit=%s %s\n",
           r->what, r->model, batch, r->ms_median, r->ms_p90, r->per_s, unit, r->note);
    fflush(stdout);
}

/* ---- host helpers ---------------------------------------------------------------------- */

/* IEEE half from float, round to nearest even (inputs here are small and finite). */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t m = x & 0x7fffffu;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10) return (uint16_t)sign;
        m |= 0x800000u;
        int shift = 14 - e;
        uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)e << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, x;
    if (e == 0) {
        if (!m) x = sign;
        else {
            e = 127 - 15 + 1;
            while (!(m & 0x400u)) m <<= 1, e--;
            x = sign | (e << 23) | ((m & 0x3ffu) << 13);
        }
    } else if (e == 31) x = sign | 0x7f800000u | (m << 13);
    else x = sign | ((e + 127 - 15) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint32_t rng_state = 0x9e3779b9u;
static float rnd(void) /* [-1, 1) */
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 17, rng_state ^= rng_state << 5;
    return (float)(rng_state >> 8) / 8388608.0f - 1.0f;
}

/* A 1080p BGR test frame: smooth gradients plus noise (never zeros: zeros can run
 * faster than real data and hide unwritten memory). */
static ffu_status make_frame(ffu_image *img, int w, int h)
{
    ffu_status st = ffu_image_create(img, FFU_PIX_BGR24, w, h);
    if (st) return st;
    for (int y = 0; y < h; y++) {
        uint8_t *p = img->data[0] + (size_t)y * (size_t)img->stride[0];
        for (int x = 0; x < w; x++) {
            int n = (int)(rnd() * 24.0f);
            int v0 = (x * 255) / w + n, v1 = (y * 255) / h + n, v2 = ((x + y) & 255) + n;
            p[3 * x + 0] = (uint8_t)(v0 < 0 ? 0 : v0 > 255 ? 255 : v0);
            p[3 * x + 1] = (uint8_t)(v1 < 0 ? 0 : v1 > 255 ? 255 : v1);
            p[3 * x + 2] = (uint8_t)(v2 < 0 ? 0 : v2 > 255 ? 255 : v2);
        }
    }
    return FFU_OK;
}

/* Fills a session input with random values (host or device memory as the session
 * says), in the input's own dtype. */
static ffu_status fill_input(bench *b, const ffu_nn_tensor *t, int device_io, float scale)
{
    size_t esz = ffu_dtype_size(t->dtype), n = esz ? t->nbytes / esz : 0;
    if (t->dtype != FFU_DTYPE_F32 && t->dtype != FFU_DTYPE_F16)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "bench: input dtype %s",
                             ffu_dtype_name(t->dtype));
    void *h = malloc(t->nbytes);
    if (!h) return FFU_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        float v = rnd() * scale;
        if (t->dtype == FFU_DTYPE_F32) ((float *)h)[i] = v;
        else ((uint16_t *)h)[i] = f32_to_f16(v);
    }
    ffu_status st = FFU_OK;
    if (device_io) st = ffu_gpu_copy(NULL, t->data, h, t->nbytes);
    else memcpy(t->data, h, t->nbytes);
    free(h);
    (void)b;
    return st;
}

/* Output 0 of a session as floats on the host (copied from the device when needed). */
static float *output_host(ffu_nn_session *s, int device_io, size_t *count)
{
    ffu_nn_tensor t;
    *count = 0;
    if (ffu_nn_session_output(s, 0, &t)) return NULL;
    size_t esz = ffu_dtype_size(t.dtype), n = esz ? t.nbytes / esz : 0;
    void *raw = malloc(t.nbytes ? t.nbytes : 1);
    float *f = malloc((n ? n : 1) * sizeof *f);
    if (!raw || !f) goto fail;
    if (device_io) {
        if (ffu_gpu_copy(NULL, raw, t.data, t.nbytes)) goto fail;
    } else memcpy(raw, t.data, t.nbytes);
    for (size_t i = 0; i < n; i++)
        f[i] = t.dtype == FFU_DTYPE_F16 ? f16_to_f32(((uint16_t *)raw)[i])
               : t.dtype == FFU_DTYPE_F32 ? ((float *)raw)[i] : NAN;
    free(raw);
    *count = n;
    return f;
fail:
    free(raw);
    free(f);
    return NULL;
}

/* ---- sessions -------------------------------------------------------------------------- */

static ffu_status cuda_session(bench *b, const ffu_nn_model *m, int batch, ffu_nn_session **out)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = "cuda";
    o.batch = batch;
    o.fp16 = b->fp16;
    o.device = b->device;
    o.device_io = 1;
    return ffu_nn_session_create(m, &o, out);
}

/* Times `iters` runs of one session (after `warmup`), each followed by a stream sync,
 * with `pre` (may be NULL) queued in front of every run. Fills t[] in ms. */
typedef ffu_status (*pre_fn)(bench *b, void *ctx);

static ffu_status time_runs(bench *b, ffu_nn_session *s, pre_fn pre, void *ctx, double *t)
{
#ifdef FFU_BENCH_CUDA_EVENTS
    cudaStream_t cs = (cudaStream_t)ffu_gpu_stream_handle(b->stream);
    cudaEvent_t e0, e1;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
        return ffu_error_set(FFU_ERR_DEVICE, "bench: cudaEventCreate failed");
#endif
    ffu_status st = FFU_OK;
    for (int i = 0; i < b->warmup + b->iters && !st; i++) {
        double t0 = now_ms();
#ifdef FFU_BENCH_CUDA_EVENTS
        cudaEventRecord(e0, cs);
#endif
        if (pre && (st = pre(b, ctx))) break;
        if ((st = ffu_nn_session_run_device(s, b->stream))) break;
#ifdef FFU_BENCH_CUDA_EVENTS
        cudaEventRecord(e1, cs);
#endif
        if ((st = ffu_gpu_stream_sync(b->stream))) break;
        double ms = now_ms() - t0;
#ifdef FFU_BENCH_CUDA_EVENTS
        float ev = 0;
        if (cudaEventElapsedTime(&ev, e0, e1) == cudaSuccess && ev > 0) ms = ev;
#endif
        if (i >= b->warmup) t[i - b->warmup] = ms;
    }
#ifdef FFU_BENCH_CUDA_EVENTS
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
#endif
    return st;
}

/* Cosine between the cuda session's first items and the CPU backend's on the same
 * input (min over items) and the relative L2 error; written into note. */
static void check_against_cpu(bench *b, const ffu_nn_model *m, ffu_nn_session *gs, int batch,
                              char *note, size_t len)
{
    snprintf(note, len, "check skipped");
    if (!b->check) return;
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.batch = batch;
    ffu_nn_session *cs = NULL;
    ffu_nn_tensor gi, ci;
    float *go = NULL, *co = NULL;
    size_t gn = 0, cn = 0;
    if (ffu_nn_session_create(m, &o, &cs) || ffu_nn_session_input(gs, 0, &gi) ||
        ffu_nn_session_input(cs, 0, &ci)) {
        snprintf(note, len, "check: cpu session failed: %s", ffu_error_message());
        goto done;
    }
    /* same values on both sides: fill the CPU input, then convert it for the GPU */
    if (fill_input(b, &ci, 0, 1.0f) || ci.dtype != FFU_DTYPE_F32) {
        snprintf(note, len, "check: cpu input not f32");
        goto done;
    }
    size_t n = ci.nbytes / 4;
    if (gi.nbytes != n * ffu_dtype_size(gi.dtype)) {
        snprintf(note, len, "check: input sizes differ");
        goto done;
    }
    void *h = malloc(gi.nbytes);
    if (!h) goto done;
    for (size_t i = 0; i < n; i++) {
        float v = ((float *)ci.data)[i];
        if (gi.dtype == FFU_DTYPE_F16) ((uint16_t *)h)[i] = f32_to_f16(v);
        else ((float *)h)[i] = v;
    }
    ffu_status st = ffu_gpu_copy(NULL, gi.data, h, gi.nbytes);
    free(h);
    if (st || ffu_nn_session_run_device(gs, b->stream) || ffu_gpu_stream_sync(b->stream) ||
        ffu_nn_session_run(cs)) {
        snprintf(note, len, "check: run failed: %s", ffu_error_message());
        goto done;
    }
    go = output_host(gs, 1, &gn);
    co = output_host(cs, 0, &cn);
    if (!go || !co || gn != cn || gn == 0) {
        snprintf(note, len, "check: outputs differ in size");
        goto done;
    }
    size_t per = gn / (size_t)batch;
    double worst = 1.0, num = 0, den = 0;
    int finite = 1;
    for (int k = 0; k < batch; k++) {
        double dot = 0, a2 = 0, b2 = 0;
        for (size_t i = 0; i < per; i++) {
            double x = go[k * per + i], y = co[k * per + i];
            if (!isfinite(x)) finite = 0;
            dot += x * y, a2 += x * x, b2 += y * y;
            num += (x - y) * (x - y), den += y * y;
        }
        double c = a2 > 0 && b2 > 0 ? dot / sqrt(a2 * b2) : 0;
        if (c < worst) worst = c;
    }
    snprintf(note, len, "vs cpu: min cos %.5f, rel L2 %.2e%s", worst,
             den > 0 ? sqrt(num / den) : 0.0, finite ? "" : ", NON-FINITE");
done:
    free(go);
    free(co);
    ffu_nn_session_destroy(cs);
}

/* One accuracy line per model: a separate cuda session of batch 2 against the CPU. */
static void check_model(bench *b, const ffu_nn_model *m, char *note, size_t len)
{
    ffu_nn_session *s = NULL;
    if (cuda_session(b, m, 2, &s)) snprintf(note, len, "check: %s", ffu_error_message());
    else check_against_cpu(b, m, s, 2, note, len);
    ffu_nn_session_destroy(s);
}

/* ---- embedding --------------------------------------------------------------------------- */

typedef struct warp_ctx {
    ffu_gpu_image *frame;
    ffu_gpu_warp_job *jobs;
    int n;
    ffu_gpu_warp_opts opts;
    ffu_gpu_tensor_view tv;
} warp_ctx;

static ffu_status pre_warp(bench *b, void *ctx)
{
    warp_ctx *w = ctx;
    return ffu_gpu_image_warp_to_tensor(b->stream, w->frame, 1, w->jobs, w->n, &w->opts, &w->tv);
}

/* Tensor view of a session input for the warp kernel (NCHW, f32 or f16). */
static int tensor_view(const ffu_nn_tensor *t, ffu_gpu_tensor_view *v)
{
    if (t->rank != 4 || (t->dtype != FFU_DTYPE_F32 && t->dtype != FFU_DTYPE_F16)) return -1;
    v->data = t->data;
    v->dtype = t->dtype;
    v->layout = FFU_LAYOUT_NCHW;
    v->n = (int)t->dims[0], v->c = (int)t->dims[1], v->h = (int)t->dims[2], v->w = (int)t->dims[3];
    return 0;
}

/* Similarity that puts a face of `size` pixels at (cx, cy) of the frame onto the
 * 112x112 crop, as the warp wants it (crop pixel -> frame position). */
static void face_matrix(double cx, double cy, double size, double angle, double m[6])
{
    double s = size / 112.0, c = cos(angle) * s, sn = sin(angle) * s;
    m[0] = c, m[1] = -sn, m[2] = cx - (c * 56.0 - sn * 56.0);
    m[3] = sn, m[4] = c, m[5] = cy - (sn * 56.0 + c * 56.0);
}

static int bench_embed(bench *b, const ffu_gpu_image *frame)
{
    ffu_nn_model *m = NULL;
    if (ffu_nn_model_load(b->embed_model, &m)) {
        fprintf(stderr, "bench_gpu: embed model: %s\n", ffu_error_message());
        return 1;
    }
    double *t = calloc((size_t)b->iters, sizeof *t);
    int rc = 0;
    for (int k = 0; k < b->n_embed && t; k++) {
        int B = b->embed_batches[k];
        ffu_nn_session *s = NULL;
        ffu_nn_tensor in;
        char note[96] = "";
        if (cuda_session(b, m, B, &s) || ffu_nn_session_input(s, 0, &in) ||
            fill_input(b, &in, 1, 1.0f)) {
            fprintf(stderr, "bench_gpu: embed batch %d: %s\n", B, ffu_error_message());
            printf("row embed model=%s batch=%d FAILED %s\n", b->embed_model, B,
                   ffu_error_message());
            ffu_nn_session_destroy(s);
            rc = 1;
            continue;
        }
        if (k == 0) check_model(b, m, note, sizeof note);
        if (fill_input(b, &in, 1, 1.0f) || time_runs(b, s, NULL, NULL, t)) {
            printf("row embed model=%s batch=%d FAILED %s\n", b->embed_model, B,
                   ffu_error_message());
            rc = 1;
        } else {
            add_row(b, b->fp16 ? "embed fp16" : "embed fp32", b->embed_model, B, t, b->iters,
                    B, "faces/s", note);
        }
        /* the same with the alignment warp of B faces out of a 1080p frame in front */
        warp_ctx w = {.frame = (ffu_gpu_image *)frame, .n = B};
        w.jobs = calloc((size_t)B, sizeof *w.jobs);
        if (w.jobs && !tensor_view(&in, &w.tv)) {
            for (int i = 0; i < B; i++) {
                w.jobs[i].src = 0;
                w.jobs[i].batch_index = i;
                face_matrix(200 + (i * 97) % 1500, 150 + (i * 61) % 800, 80 + (i % 7) * 30,
                            ((i % 11) - 5) * 0.05, w.jobs[i].m);
            }
            w.opts.interp = FFU_INTERP_BILINEAR;
            w.opts.border = FFU_BORDER_CONSTANT;
            w.opts.range = FFU_YUV_LIMITED;
            ffu_norm_preset(&w.opts.norm, "symmetric"); /* (x - 127.5) / 127.5 */
            w.opts.norm.swap_rb = 1;                    /* BGR frame -> R,G,B tensor */
            if (time_runs(b, s, pre_warp, &w, t))
                printf("row embed+warp model=%s batch=%d FAILED %s\n", b->embed_model, B,
                       ffu_error_message());
            else
                add_row(b, b->fp16 ? "embed+warp fp16" : "embed+warp fp32", b->embed_model, B,
                        t, b->iters, B, "faces/s", "warp from a 1080p BGR frame");
        }
        free(w.jobs);
        ffu_nn_session_destroy(s);
    }
    free(t);
    ffu_nn_model_destroy(m);
    return rc;
}

/* ---- detection --------------------------------------------------------------------------- */

/* Letterbox matrix: tensor pixel -> frame position, frame fitted into tw x th. */
static void letterbox(int fw, int fh, int tw, int th, double m[6])
{
    double s = fmin((double)tw / fw, (double)th / fh);
    double px = (tw - fw * s) / 2, py = (th - fh * s) / 2;
    m[0] = 1 / s, m[1] = 0, m[2] = -px / s;
    m[3] = 0, m[4] = 1 / s, m[5] = -py / s;
}

typedef struct det_ctx {
    ffu_gpu_image *frames; /* device */
    ffu_image *host;       /* pinned host frames, or NULL */
    int n_frames;
    ffu_gpu_warp_job jobs[64];
    ffu_gpu_warp_opts opts;
    ffu_gpu_tensor_view tv;
} det_ctx;

static ffu_status pre_det(bench *b, void *ctx)
{
    det_ctx *d = ctx;
    ffu_status st;
    for (int i = 0; d->host && i < d->n_frames; i++)
        if ((st = ffu_gpu_image_upload(b->stream, &d->host[i], &d->frames[i]))) return st;
    return ffu_gpu_image_warp_to_tensor(b->stream, d->frames, d->n_frames, d->jobs, d->n_frames,
                                        &d->opts, &d->tv);
}

/* Copies every output of s to the host (pinned), queued on the stream: what a
 * detector needs back to decode boxes on the CPU. */
static ffu_status copy_outputs(bench *b, ffu_nn_session *s, void *pinned, size_t cap,
                               const ffu_nn_model *m)
{
    size_t off = 0;
    for (int i = 0; i < ffu_nn_model_num_outputs(m); i++) {
        ffu_nn_tensor t;
        ffu_status st = ffu_nn_session_output(s, i, &t);
        if (st) return st;
        if (off + t.nbytes > cap) return ffu_error_set(FFU_ERR_TOO_LARGE, "bench: outputs");
        if ((st = ffu_gpu_copy(b->stream, (char *)pinned + off, t.data, t.nbytes))) return st;
        off += t.nbytes;
    }
    return FFU_OK;
}

static int bench_det_model(bench *b, const char *path, int full, ffu_gpu_image *frames,
                           ffu_image *host, int n_frames)
{
    ffu_nn_model *m = NULL;
    if (ffu_nn_model_load(path, &m)) {
        fprintf(stderr, "bench_gpu: det model: %s\n", ffu_error_message());
        return 1;
    }
    ffu_nn_tensor info;
    ffu_nn_model_input(m, 0, &info);
    int th = info.rank == 4 && info.dims[2] > 0 ? (int)info.dims[2] : 640;
    int tw = info.rank == 4 && info.dims[3] > 0 ? (int)info.dims[3] : 640;
    if (full) th = 1088, tw = 1920; /* 1080 rounded up to the stride 32 */
    double *t = calloc((size_t)b->iters, sizeof *t);
    size_t cap = 64u << 20;
    void *pinned = NULL;
    int rc = 0;
    if (!t || ffu_gpu_host_alloc(cap, &pinned)) {
        fprintf(stderr, "bench_gpu: %s\n", ffu_error_message());
        free(t);
        ffu_nn_model_destroy(m);
        return 1;
    }
    int nb = full ? 1 : b->n_det;
    char chk[96] = "";
    if (!full) check_model(b, m, chk, sizeof chk);
    for (int k = 0; k < nb; k++) {
        int F = full ? 1 : b->det_batches[k];
        if (F > n_frames) F = n_frames;
        ffu_nn_session *s = NULL;
        ffu_nn_tensor in;
        int64_t dims[4] = {F, 3, th, tw};
        char note[96] = "";
        if (cuda_session(b, m, F, &s) ||
            (full && ffu_nn_session_set_input_shape(s, 0, 4, dims)) ||
            ffu_nn_session_input(s, 0, &in) || fill_input(b, &in, 1, 100.0f)) {
            printf("row det model=%s batch=%d FAILED %s\n", path, F, ffu_error_message());
            ffu_nn_session_destroy(s);
            rc = 1;
            continue;
        }
        det_ctx d = {.frames = frames, .n_frames = F};
        if (tensor_view(&in, &d.tv)) {
            printf("row det model=%s batch=%d FAILED input is not a 4-d f32/f16 tensor\n", path,
                   F);
            ffu_nn_session_destroy(s);
            rc = 1;
            continue;
        }
        for (int i = 0; i < F; i++) {
            d.jobs[i].src = i;
            d.jobs[i].batch_index = i;
            letterbox(frames[i].width, frames[i].height, tw, th, d.jobs[i].m);
        }
        d.opts.interp = FFU_INTERP_BILINEAR;
        d.opts.border = FFU_BORDER_CONSTANT;
        d.opts.range = FFU_YUV_LIMITED;
        ffu_norm_preset(&d.opts.norm, "raw"); /* YuNet: raw 0..255, B,G,R */
        for (int pass = 0; pass < 2; pass++) {
            d.host = pass ? host : NULL;
            ffu_status st = FFU_OK;
            for (int i = 0; i < b->warmup + b->iters && !st; i++) {
                double t0 = now_ms();
                if (!(st = pre_det(b, &d)) && !(st = ffu_nn_session_run_device(s, b->stream)) &&
                    !(st = copy_outputs(b, s, pinned, cap, m)))
                    st = ffu_gpu_stream_sync(b->stream);
                if (i >= b->warmup) t[i - b->warmup] = now_ms() - t0;
            }
            if (st) {
                printf("row det model=%s batch=%d FAILED %s\n", path, F, ffu_error_message());
                rc = 1;
                break;
            }
            char what[32];
            snprintf(what, sizeof what, "%s%s %s", full ? "det-full" : "det",
                     pass ? "-upload" : "", b->fp16 ? "fp16" : "fp32");
            snprintf(note, sizeof note, "1920x1080 -> %dx%d%s%s%s", tw, th,
                     pass ? ", frames uploaded each run" : ", frames on device",
                     k == 0 && !pass && chk[0] ? "; " : "", k == 0 && !pass ? chk : "");
            add_row(b, what, path, F, t, b->iters, F, "frames/s", note);
            if (full) break; /* the upload variant says nothing new at batch 1 */
        }
        ffu_nn_session_destroy(s);
    }
    ffu_gpu_host_free(pinned);
    free(t);
    ffu_nn_model_destroy(m);
    return rc;
}

/* ---- end to end -------------------------------------------------------------------------- */

static int bench_e2e(bench *b, ffu_image *host_frame, ffu_gpu_image *frame)
{
    ffu_nn_model *dm = NULL, *em = NULL;
    ffu_nn_session *ds = NULL, *es = NULL;
    ffu_gallery *g = NULL;
    ffu_gallery_gpu *gg = NULL;
    void *pinned = NULL;
    double *t = calloc((size_t)b->iters, sizeof *t);
    int rc = 1, faces = 4, dim = 0;
    ffu_nn_tensor din, ein, eout;
    ffu_gpu_warp_job djob = {0}, ejobs[4];
    ffu_gpu_warp_opts dopts = {0}, eopts = {0};
    ffu_gpu_tensor_view dtv, etv;
    ffu_gallery_match ans[4 * 5];
    size_t cap = 64u << 20;
    if (!t || ffu_nn_model_load(b->det_model, &dm) || ffu_nn_model_load(b->embed_model, &em) ||
        cuda_session(b, dm, 1, &ds) || cuda_session(b, em, faces, &es) ||
        ffu_nn_session_input(ds, 0, &din) || ffu_nn_session_input(es, 0, &ein) ||
        fill_input(b, &din, 1, 100.0f) || fill_input(b, &ein, 1, 1.0f) ||
        ffu_nn_session_run_device(es, b->stream) || ffu_gpu_stream_sync(b->stream) ||
        ffu_nn_session_output(es, 0, &eout) || ffu_gpu_host_alloc(cap, &pinned)) {
        printf("row e2e FAILED %s\n", ffu_error_message());
        goto done;
    }
    if (tensor_view(&din, &dtv) || tensor_view(&ein, &etv) || eout.dtype != FFU_DTYPE_F32) {
        printf("row e2e FAILED tensors (embedding output %s, gallery search wants f32)\n",
               ffu_dtype_name(eout.dtype));
        goto done;
    }
    dim = eout.rank >= 2 ? (int)eout.dims[eout.rank - 1] : 0;
    /* a 10000-identity gallery of random unit vectors, resident on the device */
    if (dim <= 0 || ffu_gallery_create(dim, "bench", &g)) goto fail_msg;
    {
        float *v = malloc((size_t)dim * sizeof *v);
        char name[32];
        for (int i = 0; v && i < 10000; i++) {
            for (int j = 0; j < dim; j++) v[j] = rnd();
            snprintf(name, sizeof name, "id%05d", i);
            if (ffu_gallery_add(g, name, v, NULL, NULL)) break;
        }
        free(v);
    }
    if (ffu_gallery_gpu_create(b->gpu, g, FFU_GALLERY_GPU_F16, &gg)) goto fail_msg;
    djob.src = 0, djob.batch_index = 0;
    letterbox(frame->width, frame->height, dtv.w, dtv.h, djob.m);
    dopts.interp = eopts.interp = FFU_INTERP_BILINEAR;
    dopts.border = eopts.border = FFU_BORDER_CONSTANT;
    ffu_norm_preset(&dopts.norm, "raw");
    ffu_norm_preset(&eopts.norm, "symmetric");
    eopts.norm.swap_rb = 1;
    for (int i = 0; i < faces; i++) {
        ejobs[i].src = 0, ejobs[i].batch_index = i;
        face_matrix(400 + 350 * i, 500, 120 + 20 * i, 0.1 * i, ejobs[i].m);
    }
    ffu_status st = FFU_OK;
    for (int i = 0; i < b->warmup + b->iters && !st; i++) {
        double t0 = now_ms();
        if ((st = ffu_gpu_image_upload(b->stream, host_frame, frame)) ||
            (st = ffu_gpu_image_warp_to_tensor(b->stream, frame, 1, &djob, 1, &dopts, &dtv)) ||
            (st = ffu_nn_session_run_device(ds, b->stream)) ||
            (st = copy_outputs(b, ds, pinned, cap, dm)) || (st = ffu_gpu_stream_sync(b->stream)))
            break;
        /* (the CPU would decode boxes and keypoints from `pinned` here) */
        if ((st = ffu_gpu_image_warp_to_tensor(b->stream, frame, 1, ejobs, faces, &eopts, &etv)) ||
            (st = ffu_nn_session_run_device(es, b->stream)) ||
            (st = ffu_nn_session_output(es, 0, &eout)) ||
            (st = ffu_gallery_gpu_search(gg, b->stream, eout.data, faces, 5, ans, NULL)))
            break;
        if (i >= b->warmup) t[i - b->warmup] = now_ms() - t0;
    }
    if (st) goto fail_msg;
    add_row(b, b->fp16 ? "e2e 1080p fp16" : "e2e 1080p fp32", b->det_model, 1, t, b->iters, 1,
            "ms/frame", "upload+det+4 faces embed+10k gallery");
    rc = 0;
    goto done;
fail_msg:
    printf("row e2e FAILED %s\n", ffu_error_message());
done:
    ffu_gallery_gpu_destroy(gg);
    ffu_gallery_destroy(g);
    ffu_gpu_host_free(pinned);
    ffu_nn_session_destroy(ds);
    ffu_nn_session_destroy(es);
    ffu_nn_model_destroy(dm);
    ffu_nn_model_destroy(em);
    free(t);
    return rc;
}

/* ---- main -------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_gpu [--embed-model PATH] [--det-model PATH] [--det-full-model PATH]\n"
            "                 [--embed-batches LIST] [--det-batches LIST] [--iters N]\n"
            "                 [--warmup N] [--device I] [--fp32] [--no-check]\n"
            "                 [--only embed|det|e2e]\n");
}

int main(int argc, char **argv)
{
    static bench b;
    b.embed_model = "models/mobilefacenet_insightface_pytorch.onnx";
    b.det_model = "models/face_detection_yunet_2023mar.onnx";
    b.n_embed = parse_list("1,64,256,1024,4096", b.embed_batches);
    b.n_det = parse_list("1,8,32", b.det_batches);
    b.iters = 50, b.warmup = 10, b.fp16 = 1, b.check = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--fp32")) b.fp16 = 0;
        else if (!strcmp(a, "--no-check")) b.check = 0;
        else if (!v) return usage(), 1;
        else if (!strcmp(a, "--embed-model")) b.embed_model = v, i++;
        else if (!strcmp(a, "--det-model")) b.det_model = v, i++;
        else if (!strcmp(a, "--det-full-model")) b.det_full_model = v, i++;
        else if (!strcmp(a, "--embed-batches")) b.n_embed = parse_list(v, b.embed_batches), i++;
        else if (!strcmp(a, "--det-batches")) b.n_det = parse_list(v, b.det_batches), i++;
        else if (!strcmp(a, "--iters")) b.iters = atoi(v), i++;
        else if (!strcmp(a, "--warmup")) b.warmup = atoi(v), i++;
        else if (!strcmp(a, "--device")) b.device = atoi(v), i++;
        else if (!strcmp(a, "--only")) b.only = v, i++;
        else return usage(), 1;
    }
    if (b.n_embed < 1 || b.n_det < 1 || b.iters < 1 || b.warmup < 0) return usage(), 1;
    for (int i = 0; i < b.n_det; i++)
        if (b.det_batches[i] > 64) return usage(), 1;
    if (ffu_gpu_device_count() <= b.device) {
        printf("bench_gpu: no CUDA device %d here: skipped\n", b.device);
        return 77;
    }
    ffu_gpu_device_info di;
    if (ffu_gpu_device_info_get(b.device, &di) || ffu_gpu_open(b.device, &b.gpu) ||
        ffu_gpu_stream_create(b.gpu, &b.stream)) {
        fprintf(stderr, "bench_gpu: %s\n", ffu_error_message());
        return 1;
    }
    printf("device %d: %s, cc %d.%d, %d SMs, %.1f GiB, L2 %.0f MiB\n", di.index, di.name,
           di.cc_major, di.cc_minor, di.sm_count, di.mem_total / 1073741824.0,
           di.l2_bytes / 1048576.0);
    /* frames: 32 distinct 1080p BGR images on the host (pinned) and on the device */
    enum { NF = 32 };
    static ffu_image host[NF];
    static ffu_gpu_image dev[NF];
    int rc = 0;
    for (int i = 0; i < NF; i++) {
        ffu_image tmp;
        void *p = NULL;
        size_t bytes = (size_t)1920 * 1080 * 3;
        if (make_frame(&tmp, 1920, 1080) || ffu_gpu_host_alloc(bytes, &p) ||
            ffu_image_wrap(&host[i], FFU_PIX_BGR24, 1920, 1080, p, 1920 * 3) ||
            ffu_gpu_image_create(b.gpu, &dev[i], FFU_PIX_BGR24, 1920, 1080)) {
            fprintf(stderr, "bench_gpu: frames: %s\n", ffu_error_message());
            return 1;
        }
        for (int y = 0; y < 1080; y++)
            memcpy((uint8_t *)p + (size_t)y * 1920 * 3,
                   tmp.data[0] + (size_t)y * (size_t)tmp.stride[0], 1920 * 3);
        ffu_image_release(&tmp);
        if (ffu_gpu_image_upload(NULL, &host[i], &dev[i])) {
            fprintf(stderr, "bench_gpu: upload: %s\n", ffu_error_message());
            return 1;
        }
    }
    if (!b.only || !strcmp(b.only, "embed")) rc |= bench_embed(&b, &dev[0]);
    if (!b.only || !strcmp(b.only, "det")) {
        rc |= bench_det_model(&b, b.det_model, 0, dev, host, NF);
        if (b.det_full_model) rc |= bench_det_model(&b, b.det_full_model, 1, dev, host, NF);
    }
    if (!b.only || !strcmp(b.only, "e2e")) rc |= bench_e2e(&b, &host[0], &dev[0]);

    printf("\n| what | model | batch | median ms/run | p90 ms/run | rate | note |\n");
    printf("| --- | --- | ---: | ---: | ---: | ---: | --- |\n");
    for (int i = 0; i < b.n_rows; i++) {
        const row *r = &b.rows[i];
        if (!strcmp(r->unit, "ms/frame"))
            printf("| %s | %s | %d | %.3f | %.3f | %.2f ms/frame | %s |\n", r->what, r->model,
                   r->batch, r->ms_median, r->ms_p90, r->ms_median, r->note);
        else
            printf("| %s | %s | %d | %.3f | %.3f | %.0f %s | %s |\n", r->what, r->model,
                   r->batch, r->ms_median, r->ms_p90, r->per_s, r->unit, r->note);
    }
    for (int i = 0; i < NF; i++) {
        ffu_gpu_image_release(&dev[i]);
        ffu_gpu_host_free(host[i].data[0]);
    }
    ffu_gpu_stream_destroy(b.stream);
    ffu_gpu_close(b.gpu);
    return rc ? 1 : 0;
}
