/* The analyze pipeline's GPU helpers (backend "cuda"): the device and the watchlist on
 * it, each worker's CUDA stream and pinned staging, frames brought to the host only when
 * something there needs them, face quality on device frames from small patches, and
 * the watchlist search of a whole embedder batch in one GPU call.
 *
 * Everything here goes through the public GPU API (gpu.h, image_gpu.h, gallery.h), so
 * it compiles the same in builds without CUDA, where pl_gpu_open refuses backend cuda
 * and nothing else is ever reached.
 *
 * Why patches for quality: ffu_face_quality_compute reads a 64x64 crop aligned on the
 * face's keypoints (sharpness) and nothing else of the image; size and pose come from
 * the keypoints alone. So the RGB pixels of that crop's footprint, copied out of the
 * device frame with the face's keypoints moved into the patch's coordinates, give the
 * same numbers as the whole frame would (the margin covers the bilinear neighbours; a
 * patch side that stops short of the frame's edge is never sampled past, and one that
 * reaches it replicates the same edge). A 1080p frame stays on the device; a face
 * brings back ~30-700 KB. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

static const ffu_class gpu_class = {"pipeline", NULL};
static const ffu_class *const pl_log = &gpu_class;

#define Q_CROP 64 /* quality.c's aligned crop */
#define Q_MARGIN 2

/* ---- device and workers ------------------------------------------------------------- */

ffu_status pl_gpu_open(ffu_pipeline *p, const ffu_pipeline_opts *o)
{
    if (!o->backend || strcmp(o->backend, "cuda") != 0)
        return FFU_OK;
    if (o->device < 0)
        return ffu_error_set(FFU_ERR_INVALID, "backend cuda: device %d is negative", o->device);
    ffu_status st = ffu_gpu_open(o->device, &p->gpu);
    if (st)
        return pl_error_context(st, "backend cuda", NULL);
    p->on_gpu = 1;
    return FFU_OK;
}

void pl_gpu_watchlist(ffu_pipeline *p)
{
    if (!p->on_gpu || !p->gallery)
        return;
    ffu_status st = ffu_gallery_gpu_create(p->gpu, p->gallery, FFU_GALLERY_GPU_F32, &p->ggpu);
    if (st)
        FFU_LOG(&pl_log, FFU_LOG_WARN, "watchlist on the GPU: %s; searching on the CPU",
                ffu_error_message());
}

ffu_status pl_gpu_worker_init(ffu_pipeline *p, pl_worker *w)
{
    if (!p->on_gpu)
        return FFU_OK;
    ffu_status st = ffu_gpu_stream_create(p->gpu, &w->cs);
    if (st)
        return pl_error_context(st, "backend cuda: worker stream", NULL);
    return FFU_OK;
}

void pl_gpu_worker_free(pl_worker *w)
{
    if (w->cs)
        ffu_gpu_stream_sync(w->cs); /* nothing may still write into what is freed here */
    ffu_gpu_image_release(&w->d_rgb);
    ffu_gpu_host_free(w->h_frame);
    ffu_gpu_host_free(w->h_patch);
    ffu_gpu_host_free(w->h_probe);
    free(w->h_match);
    free(w->h_count);
    ffu_gpu_stream_destroy(w->cs);
    w->cs = NULL;
    w->h_frame = w->h_patch = NULL;
    w->h_probe = NULL;
    w->h_match = NULL;
    w->h_count = NULL;
}

void pl_gpu_close(ffu_pipeline *p)
{
    ffu_gallery_gpu_destroy(p->ggpu);
    p->ggpu = NULL;
    ffu_gpu_close(p->gpu);
    p->gpu = NULL;
}

/* Pinned memory of at least `need` bytes (grown by doubling: a few allocations at the
 * start of a run, none in steady state). */
static ffu_status pinned(void **buf, size_t *cap, size_t need)
{
    if (need <= *cap && *buf)
        return FFU_OK;
    size_t c = *cap ? *cap : 1 << 16;
    while (c < need)
        c *= 2;
    void *nb = NULL;
    ffu_status st = ffu_gpu_host_alloc(c, &nb);
    if (st)
        return st;
    ffu_gpu_host_free(*buf);
    *buf = nb;
    *cap = c;
    return FFU_OK;
}

/* The frame as RGB24 in the worker's device buffer (grown to the largest frame seen;
 * smaller frames use a view of it). Queued on w->cs. */
static ffu_status to_rgb(pl_worker *w, const ffu_stream_frame *fr, ffu_gpu_image *rgb)
{
    const ffu_gpu_image *g = &fr->gpu;
    ffu_status st;
    if (!w->d_rgb.data[0] || w->d_rgb.width < g->width || w->d_rgb.height < g->height) {
        int cw = w->d_rgb.width > g->width ? w->d_rgb.width : g->width;
        int ch = w->d_rgb.height > g->height ? w->d_rgb.height : g->height;
        if (w->d_rgb.data[0] && (st = ffu_gpu_stream_sync(w->cs)))
            return st; /* the old buffer may still be read by a queued copy */
        ffu_gpu_image_release(&w->d_rgb);
        if ((st = ffu_gpu_image_create(w->p->gpu, &w->d_rgb, FFU_PIX_RGB24, cw, ch)))
            return st;
    }
    *rgb = w->d_rgb;
    rgb->width = g->width;
    rgb->height = g->height;
    rgb->owned = 0;
    /* the stream's own matrix and range: the colours the CPU reader's swscale gives */
    ffu_yuv_coding coding = {fr->yuv_matrix, fr->yuv_full_range ? FFU_YUV_FULL : FFU_YUV_LIMITED};
    return ffu_gpu_image_convert_yuv(w->cs, g, rgb, coding);
}

const ffu_image *pl_frame_host(pl_worker *w, const ffu_stream_frame *fr)
{
    if (!fr->on_gpu)
        return &fr->image;
    if (w->host_of == fr && w->host_seq == fr->seq)
        return &w->host;
    w->host_of = NULL;
    const ffu_gpu_image *g = &fr->gpu;
    size_t row = (size_t)g->width * 3;
    ffu_gpu_image rgb;
    ffu_status st = to_rgb(w, fr, &rgb);
    if (!st)
        st = pinned((void **)&w->h_frame, &w->h_frame_cap, row * (size_t)g->height);
    if (!st)
        st = ffu_image_wrap(&w->host, FFU_PIX_RGB24, g->width, g->height, w->h_frame, (int)row);
    if (!st)
        st = ffu_gpu_image_download(w->cs, &rgb, &w->host);
    if (!st)
        st = ffu_gpu_stream_sync(w->cs);
    if (st) {
        FFU_LOG(&pl_log, FFU_LOG_WARN, "downloading a %dx%d device frame: %s", g->width, g->height,
                ffu_error_message());
        return NULL;
    }
    w->host_of = fr;
    w->host_seq = fr->seq;
    pthread_mutex_lock(&w->p->smu);
    w->p->stats.host_downloads++;
    pthread_mutex_unlock(&w->p->smu);
    return &w->host;
}

/* ---- face quality on device frames --------------------------------------------------- */

int pl_quality_patch(const float kps[10], int width, int height, int rect[4])
{
    double fwd[6], inv[6], wm[6];
    if (width < 1 || height < 1)
        return -1;
    for (int i = 0; i < 10; i++)
        if (!isfinite(kps[i]))
            return -1;
    if (face_align_transform(kps, "arcface_112_v2", Q_CROP, fwd) != FFU_OK ||
        ffu_affine_invert(fwd, inv) != FFU_OK)
        return -1;
    face_warp_map(inv, wm);
    double x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int c = 0; c < 4; c++) { /* the crop's corner pixel centres in the frame */
        double cx = (c & 1) ? Q_CROP - 1 : 0, cy = (c & 2) ? Q_CROP - 1 : 0;
        double x = wm[0] * cx + wm[1] * cy + wm[2], y = wm[3] * cx + wm[4] * cy + wm[5];
        x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
    }
    if (!isfinite(x0) || !isfinite(x1) || !isfinite(y0) || !isfinite(y1))
        return -1;
    /* bilinear reads floor(s) and floor(s) + 1; clamp in double before int */
    double lx = floor(x0) - Q_MARGIN, hx = floor(x1) + 1 + Q_MARGIN + 1;
    double ly = floor(y0) - Q_MARGIN, hy = floor(y1) + 1 + Q_MARGIN + 1;
    int px0 = (int)fmin(fmax(lx, 0), width - 1), py0 = (int)fmin(fmax(ly, 0), height - 1);
    int px1 = (int)fmin(fmax(hx, px0 + 1), width), py1 = (int)fmin(fmax(hy, py0 + 1), height);
    rect[0] = px0;
    rect[1] = py0;
    rect[2] = px1 - px0;
    rect[3] = py1 - py0;
    return 0;
}

/* The faces of one device frame: one NV12 -> RGB conversion, one copy per face patch,
 * one sync, then the CPU's own quality function on each patch. */
static void quality_of_job(pl_worker *w, pl_job *j)
{
    const ffu_stream_frame *fr = j->frame;
    int n = j->faces.count;
    int W = fr->gpu.width, H = fr->gpu.height;
    /* rect per face, offsets in the pinned buffer */
    int rects[64][4];
    size_t off[64], total = 0;
    int done = 0;
    while (done < n) {
        int m = n - done < 64 ? n - done : 64;
        total = 0;
        for (int i = 0; i < m; i++) {
            off[i] = total;
            if (pl_quality_patch(j->faces.faces[done + i].kps, W, H, rects[i]) != 0) {
                rects[i][2] = rects[i][3] = 0;
                continue;
            }
            total += (size_t)rects[i][2] * rects[i][3] * 3;
        }
        ffu_gpu_image rgb;
        ffu_status st = total ? to_rgb(w, fr, &rgb) : FFU_OK;
        if (!st && total)
            st = pinned((void **)&w->h_patch, &w->h_patch_cap, total);
        for (int i = 0; !st && i < m; i++) {
            if (!rects[i][2])
                continue;
            const uint8_t *src = rgb.data[0] + (size_t)rects[i][1] * rgb.stride[0] + (size_t)rects[i][0] * 3;
            st = ffu_gpu_copy_2d(w->cs, w->h_patch + off[i], (size_t)rects[i][2] * 3, src,
                                 (size_t)rgb.stride[0], (size_t)rects[i][2] * 3, (size_t)rects[i][3]);
        }
        if (!st && total)
            st = ffu_gpu_stream_sync(w->cs);
        if (st) {
            FFU_LOG(&pl_log, FFU_LOG_DEBUG, "quality patches: %s", ffu_error_message());
            return; /* qualities stay "not computed": the tracker falls back to size x score */
        }
        for (int i = 0; i < m; i++) {
            if (!rects[i][2])
                continue;
            ffu_face *f = &j->faces.faces[done + i];
            ffu_image patch;
            if (ffu_image_wrap(&patch, FFU_PIX_RGB24, rects[i][2], rects[i][3], w->h_patch + off[i],
                               rects[i][2] * 3) != FFU_OK)
                continue;
            float kps[10];
            memcpy(kps, f->kps, sizeof kps);
            for (int k = 0; k < 5; k++) {
                f->kps[2 * k] -= (float)rects[i][0];
                f->kps[2 * k + 1] -= (float)rects[i][1];
            }
            ffu_face_quality_compute(&patch, f); /* a failure leaves it "not computed" */
            memcpy(f->kps, kps, sizeof kps);
        }
        done += m;
    }
}

void pl_gpu_quality(pl_worker *w, pl_job *const *jobs, int k)
{
    for (int i = 0; i < k; i++)
        if (jobs[i]->frame->on_gpu && jobs[i]->faces.count > 0)
            quality_of_job(w, jobs[i]);
}

/* ---- watchlist search ----------------------------------------------------------------- */

int pl_gpu_search(pl_worker *w, const pl_item *items, int k)
{
    ffu_pipeline *p = w->p;
    if (!p->ggpu || k <= 0)
        return 0;
    int dim = ffu_gallery_gpu_dim(p->ggpu);
    if (k > w->probe_cap) {
        size_t cap = 0;
        void *buf = NULL;
        ffu_gallery_match *m = realloc(w->h_match, (size_t)k * 2 * sizeof *m);
        if (m)
            w->h_match = m;
        int *c = realloc(w->h_count, (size_t)k * sizeof *c);
        if (c)
            w->h_count = c;
        if (!m || !c || pinned(&buf, &cap, (size_t)k * (size_t)dim * sizeof(float)) != FFU_OK)
            return 0;
        ffu_gpu_host_free(w->h_probe);
        w->h_probe = buf;
        w->probe_cap = k;
    }
    int rows[PL_MAX_BATCH], nq = 0;
    for (int i = 0; i < k && i < PL_MAX_BATCH; i++) {
        const ffu_face *f = &items[i].job->faces.faces[items[i].face];
        if (f->embedding_dim != dim)
            continue; /* its embedding failed: nothing to search, finish skips it */
        memcpy(w->h_probe + (size_t)nq * dim, f->embedding, (size_t)dim * sizeof(float));
        rows[nq++] = i;
    }
    if (!nq)
        return 0;
    if (ffu_gallery_gpu_search(p->ggpu, w->cs, w->h_probe, nq, 2, w->h_match, w->h_count) !=
        FFU_OK) {
        FFU_LOG(&pl_log, FFU_LOG_WARN, "watchlist search on the GPU (%d faces): %s; on the CPU",
                nq, ffu_error_message());
        return 0;
    }
    for (int q = 0; q < nq; q++) {
        const pl_item *it = &items[rows[q]];
        it->job->match[2 * it->face] = w->h_match[2 * q];
        it->job->match[2 * it->face + 1] = w->h_match[2 * q + 1];
        it->job->nmatch[it->face] = w->h_count[q];
    }
    pthread_mutex_lock(&p->smu);
    p->stats.gpu_searches += nq;
    pthread_mutex_unlock(&p->smu);
    return nq;
}
