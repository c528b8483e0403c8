/* face_net: how every face stage opens a zoo model and feeds it (see face_internal.h).
 * One place decides layout, channel order, normalisation and the crop geometry, so a
 * detector letterbox, an alignment crop and a rotated landmark crop are the same call
 * and a new model convention is a zoo row, not new plumbing. The same place decides
 * where it runs: with backend "cuda" the warp and normalisation become one GPU kernel
 * writing the session's device input, and the outputs come back to pinned mirrors, so
 * every stage gets the GPU without a line of its own. A model that runs at several
 * input sizes on the CPU keeps a session per recent size (spares, face_net_reshape),
 * so that photos of a few aspect ratios in turn are planned once each. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "face_internal.h"

/* Map from a crop of size (w, h) onto the rectangle box of the image (continuous
 * coordinates both sides). */
static void face_box_map(const float box[4], int w, int h, double m[6])
{
    m[0] = (double)box[2] / w;
    m[1] = 0;
    m[2] = box[0];
    m[3] = 0;
    m[4] = (double)box[3] / h;
    m[5] = box[1];
}

void face_warp_map(const double g[6], double m[6])
{
    /* centre coords c = continuous - 0.5 on both sides: src_c = G(dst_c + 0.5) - 0.5 */
    double t0 = g[0] * 0.5 + g[1] * 0.5 + g[2] - 0.5;
    double t1 = g[3] * 0.5 + g[4] * 0.5 + g[5] - 0.5;
    m[0] = g[0];
    m[1] = g[1];
    m[3] = g[3];
    m[4] = g[4];
    m[2] = t0;
    m[5] = t1;
}

static ffu_status input_info(face_net *n, ffu_nn_tensor *t)
{
    ffu_status st = ffu_nn_model_input(n->model, 0, t);
    if (st)
        return st;
    if (t->rank != 4)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: input '%s' has rank %d, want an image (4)",
                             n->path, t->name, t->rank);
    if (t->dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: input '%s' is %s; face stages feed f32",
                             n->path, t->name, ffu_dtype_name(t->dtype));
    return FFU_OK;
}

/* ---- GPU mode --------------------------------------------------------------------------- */

static ffu_status cpu_fill(face_net *n, int b, const ffu_image *img, const double m[6],
                           ffu_tensor_view *v);

int face_net_on_gpu(const face_net *n) { return n && n->gpu; }

/* The device, the stream and nothing else: buffers come on first use. */
static ffu_status open_gpu(face_net *n, int device)
{
    if (device < 0)
        return ffu_error_set(FFU_ERR_INVALID, "%s: CUDA device %d", n->path, device);
    ffu_status st = ffu_gpu_open(device, &n->gpu);
    if (!st)
        st = ffu_gpu_make_current(n->gpu);
    if (!st)
        st = ffu_gpu_stream_create(n->gpu, &n->stream);
    if (st) {
        char why[256];
        snprintf(why, sizeof why, "%s", ffu_error_message());
        return ffu_error_set(st, "%s: backend cuda: %s", n->path, why);
    }
    return FFU_OK;
}

/* The model cannot keep its inputs and outputs on the device (its shapes need input
 * values at planning time, or its batch runs item by item): the session is reopened
 * with host I/O. Fills then go through the CPU (host images) or a device staging slot
 * (device frames); the layers still run on the GPU. */
static ffu_status switch_to_host_io(face_net *n)
{
    char why[256];
    snprintf(why, sizeof why, "%s", ffu_error_message());
    ffu_nn_session_destroy(n->session);
    n->session = NULL;
    n->so.device_io = 0;
    n->host_io = 1;
    n->out_ready = 0;
    FFU_LOG(NULL, FFU_LOG_INFO, "%s: inputs and outputs stay on the host (%s)", n->path, why);
    ffu_error_clear();
    return ffu_nn_session_create(n->model, &n->so, &n->session);
}

static ffu_status grow_pinned(face_net *n, void **p, size_t *cap, size_t bytes)
{
    if (*cap >= bytes)
        return FFU_OK;
    /* the stream may still copy from or into the old block */
    ffu_status st = ffu_gpu_stream_sync(n->stream);
    if (st)
        return st;
    ffu_gpu_host_free(*p);
    *p = NULL;
    *cap = 0;
    if ((st = ffu_gpu_host_alloc(bytes, p)))
        return st;
    *cap = bytes;
    return FFU_OK;
}

static size_t slot_elems(const face_net *n) { return (size_t)n->in_c * n->in_h * n->in_w; }

void face_net_warp_setup(const face_net *n, int b, ffu_pixfmt fmt, ffu_yuv_coding yuv,
                         const double m[6], void *data, ffu_gpu_warp_job *job,
                         ffu_gpu_warp_opts *o, ffu_gpu_tensor_view *t)
{
    memset(job, 0, sizeof *job);
    memset(o, 0, sizeof *o);
    memset(t, 0, sizeof *t);
    job->src = 0;
    job->batch_index = b;
    /* the kernel takes ffu_image_warp_affine's map (pixel centres at integers), the one
     * the CPU fill passes to ffu_image_warp_affine */
    face_warp_map(m, job->m);
    o->interp = FFU_INTERP_BILINEAR;
    o->border = FFU_BORDER_CONSTANT; /* border_value zeros: black, as the CPU fill */
    o->range = yuv.range; /* NV12: the decoder's coding, as read() converts on the CPU */
    o->matrix = yuv.matrix;
    o->norm = n->norm;
    /* tensor channels follow the source's memory order (R,G,B for NV12 and RGBA) */
    o->norm.swap_rb = (fmt == FFU_PIX_BGR24) != (n->entry.bgr != 0);
    t->data = data;
    t->dtype = FFU_DTYPE_F32;
    t->layout = n->layout;
    t->n = n->batch;
    t->c = n->in_c;
    t->h = n->in_h;
    t->w = n->in_w;
}

/* Slot b from a device image: the kernel writes the session's device input, or with
 * host I/O a device staging slot that is then copied into the host input. */
static ffu_status gpu_fill(face_net *n, int b, const ffu_gpu_image *img, const double m[6])
{
    ffu_nn_tensor in;
    ffu_status st = ffu_nn_session_input(n->session, 0, &in);
    if (st)
        return st;
    size_t bytes = slot_elems(n) * sizeof(float);
    if (in.nbytes < bytes * (size_t)n->batch)
        return ffu_error_set(FFU_ERR_INTERNAL, "%s: input holds %zu bytes, want %d x %zu",
                             n->path, in.nbytes, n->batch, bytes);
    ffu_gpu_warp_job job;
    ffu_gpu_warp_opts o;
    ffu_gpu_tensor_view t;
    if (!n->host_io) {
        face_net_warp_setup(n, b, img->fmt, img->yuv, m, in.data, &job, &o, &t);
        return ffu_gpu_image_warp_to_tensor(n->stream, img, 1, &job, 1, &o, &t);
    }
    if (n->d_stage_cap < bytes) {
        if ((st = ffu_gpu_stream_sync(n->stream)))
            return st;
        ffu_gpu_free(n->gpu, n->d_stage);
        n->d_stage = NULL;
        n->d_stage_cap = 0;
        if ((st = ffu_gpu_alloc(n->gpu, bytes, &n->d_stage)))
            return st;
        n->d_stage_cap = bytes;
    }
    face_net_warp_setup(n, 0, img->fmt, img->yuv, m, n->d_stage, &job, &o, &t);
    t.n = 1;
    if ((st = ffu_gpu_image_warp_to_tensor(n->stream, img, 1, &job, 1, &o, &t)) ||
        (st = ffu_gpu_copy(n->stream, (char *)in.data + (size_t)b * bytes, n->d_stage, bytes)))
        return st;
    return ffu_gpu_stream_sync(n->stream); /* the session reads the host input on the CPU */
}

ffu_status face_net_fill_warp_gpu(face_net *n, int b, const ffu_gpu_image *img, const double m[6])
{
    if (!n || !n->session)
        return ffu_error_set(FFU_ERR_INVALID, "face_net_fill_warp_gpu: no network");
    if (!n->gpu)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s runs on a CPU backend: frames in device "
                             "memory need backend cuda", n->path);
    if (!img || !img->data[0] || img->width < 1 || img->height < 1)
        return ffu_error_set(FFU_ERR_INVALID, "no device image");
    if (!m)
        return ffu_error_set(FFU_ERR_INVALID, "no crop map");
    if (b < 0 || b >= n->batch)
        return ffu_error_set(FFU_ERR_INVALID, "batch slot %d of %d", b, n->batch);
    if (img->fmt != FFU_PIX_RGB24 && img->fmt != FFU_PIX_BGR24 && img->fmt != FFU_PIX_RGBA32 &&
        img->fmt != FFU_PIX_NV12)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "face stages take RGB, BGR, RGBA or NV12 "
                             "device frames, not %s", ffu_pixfmt_name(img->fmt));
    if (img->fmt == FFU_PIX_NV12 && !img->data[1])
        return ffu_error_set(FFU_ERR_INVALID, "NV12 device frame without its UV plane");
    if (img->gpu && ffu_gpu_index(img->gpu) != ffu_gpu_index(n->gpu))
        return ffu_error_set(FFU_ERR_INVALID, "the frame is on CUDA device %d, %s runs on %d",
                             ffu_gpu_index(img->gpu), n->path, ffu_gpu_index(n->gpu));
    ffu_status st = ffu_gpu_make_current(n->gpu);
    if (st)
        return st;
    return gpu_fill(n, b, img, m);
}

/* Slot b of a host image on a cuda net: the image goes up once per run (a detector's
 * views and an embedder's faces of one frame share the copy), then the kernel. Grey
 * images, which the kernel does not read, are warped on the CPU and their slot copied. */
static ffu_status host_fill_gpu(face_net *n, int b, const ffu_image *img, const double m[6])
{
    ffu_status st = ffu_gpu_make_current(n->gpu);
    if (st)
        return st;
    if (img->fmt == FFU_PIX_GRAY8) {
        size_t bytes = slot_elems(n) * sizeof(float);
        void *hs = n->h_slot;
        if ((st = grow_pinned(n, &hs, &n->h_slot_cap, bytes)))
            return st;
        n->h_slot = hs;
        ffu_tensor_view v = {n->h_slot, n->layout, 1, n->in_c, n->in_h, n->in_w};
        if ((st = cpu_fill(n, 0, img, m, &v)))
            return st;
        ffu_nn_tensor in;
        if ((st = ffu_nn_session_input(n->session, 0, &in)) ||
            (st = ffu_gpu_copy(n->stream, (char *)in.data + (size_t)b * bytes, n->h_slot, bytes)))
            return st;
        return ffu_gpu_stream_sync(n->stream); /* h_slot is refilled by the next call */
    }
    if (n->up_src != img->data[0] || n->up_stride != img->stride[0] || n->up.fmt != img->fmt ||
        n->up.width != img->width || n->up.height != img->height) {
        n->up_src = NULL;
        if (n->up.fmt != img->fmt || n->up.width != img->width || n->up.height != img->height) {
            /* earlier kernels of this run may still read the old copy */
            if ((st = ffu_gpu_stream_sync(n->stream)))
                return st;
            ffu_gpu_image_release(&n->up);
            if ((st = ffu_gpu_image_create(n->gpu, &n->up, img->fmt, img->width, img->height)))
                return st;
        }
        /* queued after the kernels that read the previous image (one stream) */
        if ((st = ffu_gpu_image_upload(n->stream, img, &n->up)))
            return st;
        n->up_src = img->data[0];
        n->up_stride = img->stride[0];
    }
    return gpu_fill(n, b, &n->up, m);
}

void face_model_session_opts(const ffu_face_model_opts *o, ffu_nn_session_opts *so)
{
    ffu_nn_session_opts_default(so);
    if (!o) return;
    so->backend = o->backend;
    so->threads = o->threads;
    so->device = o->device;
    so->fp16 = o->fp16;
    so->bf16 = o->bf16;
    so->workspace = o->workspace;
}

ffu_status face_net_load(face_net *n, ffu_face_role role, const ffu_face_model_opts *o,
                         int free_dims)
{
    memset(n, 0, sizeof *n);
    ffu_status st = ffu_zoo_resolve(role, o ? o->model : NULL, &n->entry, n->path,
                                    sizeof n->path);
    if (st)
        return st;
    n->entry.file = n->path;
    if ((st = ffu_nn_model_load(n->path, &n->model)))
        goto fail;
    ffu_nn_tensor t;
    if ((st = input_info(n, &t)))
        goto fail;
    /* Layout from the declared shape: a channel dim of 1 or 3 last means NHWC. */
    int last = (int)t.dims[3], second = (int)t.dims[1];
    n->layout = (last == 1 || last == 3) && second != 1 && second != 3 ? FFU_LAYOUT_NHWC
                                                                       : FFU_LAYOUT_NCHW;
    n->in_c = n->layout == FFU_LAYOUT_NHWC ? last : second;
    if (n->in_c != 1 && n->in_c != 3) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: input has %d channels, want 1 or 3",
                           n->path, n->in_c);
        goto fail;
    }
    int hd = n->layout == FFU_LAYOUT_NHWC ? 1 : 2;
    int dh = (int)t.dims[hd], dw = (int)t.dims[hd + 1];
    /* a zoo row of size 0 x 0 says the model runs at any size, also when its file
     * declares one (the session is then opened with free_dims) */
    int zoo_dynamic = n->entry.input_w <= 0 && n->entry.input_h <= 0;
    n->dynamic_hw = dh <= 0 || dw <= 0 || zoo_dynamic || free_dims;
    n->in_h = dh > 0 ? dh : n->entry.input_h;
    n->in_w = dw > 0 ? dw : n->entry.input_w;
    if (n->in_w <= 0 || n->in_h <= 0) {
        n->in_w = 640;
        n->in_h = 640;
    }
    float inv = n->entry.norm_std != 0 ? 1.0f / n->entry.norm_std : 1.0f;
    for (int c = 0; c < 3; c++) {
        n->norm.mean[c] = n->entry.norm_mean;
        n->norm.scale[c] = inv;
    }
    n->norm.gray = n->entry.gray || n->in_c == 1;

    ffu_nn_session_opts so;
    face_model_session_opts(o, &so);
    so.free_dims = zoo_dynamic || free_dims;
    int cuda = o && o->backend && !strcmp(o->backend, "cuda");
    if (n->dynamic_hw && !cuda && !so.workspace) {
        /* one activation memory for this net's sessions of several sizes (spares) */
        if ((st = ffu_nn_workspace_create(&n->own_ws))) goto fail;
        so.workspace = n->own_ws;
    }
    if (cuda) {
        if ((st = open_gpu(n, o->device)))
            goto fail;
        so.backend = "cuda"; /* o's string is borrowed; n->so outlives it */
        so.device_io = 1;
    }
    n->so = so;
    if (!n->gpu) {
        /* o's string is borrowed: the sessions (face_net_start, spares) use this copy */
        snprintf(n->backend, sizeof n->backend, "%s", so.backend ? so.backend : "cpu");
        n->so.backend = n->backend;
    }
    n->batch = 1;
    return FFU_OK;
fail:
    face_net_close(n);
    return st;
}

ffu_status face_net_start(face_net *n)
{
    ffu_status st = ffu_nn_session_create(n->model, &n->so, &n->session);
    if (st)
        return st;
    int batch = n->batch, w = n->in_w, h = n->in_h;
    n->batch = 1;
    n->in_w = n->in_h = -1; /* force the reshape (a cuda net plans there) */
    return face_net_reshape(n, batch, w, h);
}

ffu_status face_net_open(face_net *n, ffu_face_role role, const ffu_face_model_opts *o)
{
    ffu_status st = face_net_load(n, role, o, 0);
    if (!st && (st = face_net_start(n)))
        face_net_close(n);
    return st;
}

void face_net_close(face_net *n)
{
    if (!n)
        return;
    if (n->gpu && n->stream && !ffu_gpu_make_current(n->gpu))
        (void)ffu_gpu_stream_sync(n->stream); /* nothing may still use what goes below */
    ffu_nn_session_destroy(n->session);
    for (int i = 0; i < n->nspare; i++)
        ffu_nn_session_destroy(n->spare[i].session);
    ffu_nn_workspace_destroy(n->own_ws);
    ffu_nn_model_destroy(n->model);
    free(n->keep);
    free(n->keep_names);
    ffu_image_release(&n->scratch);
    ffu_gpu_image_release(&n->up);
    if (n->gpu)
        ffu_gpu_free(n->gpu, n->d_stage);
    for (int i = 0; i < n->nmirror; i++)
        if (n->mirror[i])
            ffu_gpu_host_free(n->mirror[i]);
    free(n->mirror);
    free(n->mirror_cap);
    if (n->h_slot)
        ffu_gpu_host_free(n->h_slot);
    ffu_gpu_stream_destroy(n->stream);
    if (n->gpu)
        ffu_gpu_close(n->gpu);
    memset(n, 0, sizeof *n);
}

/* Before a host session of a dynamic_hw model leaves its shape: the current session
 * becomes the most recent spare, and the current one is the spare planned for
 * batch x w x h if there is one, else a new session while there is room, else the
 * least recent spare (re-planned by the caller). */
static ffu_status swap_session(face_net *n, int batch, int w, int h)
{
    struct face_plan cur = {n->session, n->batch, n->in_w, n->in_h}, next = {0};
    int at = -1;
    for (int i = 0; i < n->nspare && at < 0; i++)
        if (n->spare[i].batch == batch && n->spare[i].w == w && n->spare[i].h == h) at = i;
    if (at < 0 && n->nspare < FACE_NET_SPARES) {
        ffu_status st = ffu_nn_session_create(n->model, &n->so, &next.session);
        if (st) return st;
        next.batch = 1, next.w = next.h = -1; /* shaped by the caller */
        at = n->nspare++;
        n->spare[at] = next;
    }
    if (at < 0) at = n->nspare - 1;
    next = n->spare[at];
    memmove(n->spare + 1, n->spare, sizeof n->spare[0] * (size_t)at);
    n->spare[0] = cur;
    n->session = next.session;
    n->batch = next.batch, n->in_w = next.w, n->in_h = next.h;
    n->out_ready = 0;
    return FFU_OK;
}

ffu_status face_net_reshape(face_net *n, int batch, int w, int h)
{
    if (batch < 1 || w < 1 || h < 1)
        return ffu_error_set(FFU_ERR_INVALID, "bad input shape %dx%dx%d", batch, w, h);
    if (!n->dynamic_hw && n->in_w > 0 && (w != n->in_w || h != n->in_h))
        return ffu_error_set(FFU_ERR_INVALID, "%s takes %dx%d inputs only (asked %dx%d)",
                             n->path, n->in_w, n->in_h, w, h);
    if (batch == n->batch && w == n->in_w && h == n->in_h)
        return FFU_OK;
    ffu_status st = n->dynamic_hw && !n->gpu && n->in_w > 0 ? swap_session(n, batch, w, h) : 0;
    if (st) return st;
    if (batch == n->batch && w == n->in_w && h == n->in_h)
        return FFU_OK; /* a spare had this shape */
    int64_t dims[4] = {batch, 0, 0, 0};
    if (n->layout == FFU_LAYOUT_NHWC) {
        dims[1] = h;
        dims[2] = w;
        dims[3] = n->in_c;
    } else {
        dims[1] = n->in_c;
        dims[2] = h;
        dims[3] = w;
    }
    st = ffu_nn_session_set_input_shape(n->session, 0, 4, dims);
    if (!st && n->gpu && !n->host_io) {
        /* plan now: a model that cannot keep device I/O says so here, and then gets
         * host I/O before anything was filled */
        ffu_nn_tensor t;
        st = ffu_nn_session_input(n->session, 0, &t);
        if (st == FFU_ERR_UNSUPPORTED) {
            if (!(st = switch_to_host_io(n)))
                st = ffu_nn_session_set_input_shape(n->session, 0, 4, dims);
        }
    }
    if (st)
        return st;
    n->out_ready = 0;
    n->batch = batch;
    n->in_w = w;
    n->in_h = h;
    return FFU_OK;
}

/* The CPU fill: warp into the scratch crop, then normalise into slot b of v (the
 * session's host input when v is NULL). */
static ffu_status cpu_fill(face_net *n, int b, const ffu_image *img, const double m[6],
                           ffu_tensor_view *v)
{
    ffu_status st;
    if (n->scratch.fmt != img->fmt || n->scratch.width != n->in_w ||
        n->scratch.height != n->in_h) {
        ffu_image_release(&n->scratch);
        if ((st = ffu_image_create(&n->scratch, img->fmt, n->in_w, n->in_h)))
            return st;
    }
    double wm[6];
    face_warp_map(m, wm);
    if ((st = ffu_image_warp_affine(img, &n->scratch, wm, FFU_INTERP_BILINEAR,
                                    FFU_BORDER_CONSTANT, NULL)))
        return st;
    ffu_tensor_view sv;
    if (!v) {
        ffu_nn_tensor t;
        if ((st = ffu_nn_session_input(n->session, 0, &t)))
            return st;
        ffu_tensor_view tv = {(float *)t.data, n->layout, n->batch, n->in_c, n->in_h, n->in_w};
        sv = tv;
        v = &sv;
    }
    ffu_norm_params p = n->norm;
    /* norm is for R,G,B order; the model may want B,G,R; the image may hold either */
    p.swap_rb = (img->fmt == FFU_PIX_BGR24) != (n->entry.bgr != 0);
    return ffu_image_to_tensor(&n->scratch, &p, v, b);
}

ffu_status face_net_fill_warp(face_net *n, int b, const ffu_image *img, const double m[6])
{
    if (!img || !img->data[0])
        return ffu_error_set(FFU_ERR_INVALID, "no image");
    if (b < 0 || b >= n->batch)
        return ffu_error_set(FFU_ERR_INVALID, "batch slot %d of %d", b, n->batch);
    if (img->fmt != FFU_PIX_RGB24 && img->fmt != FFU_PIX_BGR24 && img->fmt != FFU_PIX_RGBA32 &&
        img->fmt != FFU_PIX_GRAY8)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "face stages take RGB, BGR, RGBA or grey "
                                                  "images, not %s", ffu_pixfmt_name(img->fmt));
    if (n->gpu && !n->host_io)
        return host_fill_gpu(n, b, img, m);
    return cpu_fill(n, b, img, m, NULL);
}

ffu_status face_net_clear_input(face_net *n)
{
    ffu_nn_tensor t;
    ffu_status st = ffu_nn_session_input(n->session, 0, &t);
    if (st)
        return st;
    if (n->gpu && !n->host_io) {
        if ((st = ffu_gpu_make_current(n->gpu)))
            return st;
        return ffu_gpu_memset(n->stream, t.data, 0, t.nbytes);
    }
    memset(t.data, 0, t.nbytes);
    return FFU_OK;
}

ffu_status face_net_fill_box(face_net *n, int b, const ffu_image *img, const float box[4],
                             double m_out[6])
{
    double m[6];
    face_box_map(box, n->in_w, n->in_h, m);
    if (m_out)
        memcpy(m_out, m, sizeof m);
    return face_net_fill_warp(n, b, img, m);
}

/* GPU run: queued on the net's stream after the fills, then every output is copied into
 * its pinned mirror on the same stream, and one wait covers it all. */
static ffu_status run_gpu(face_net *n)
{
    ffu_status st = ffu_nn_session_run_device(n->session, n->stream);
    if (st) {
        (void)ffu_gpu_stream_sync(n->stream);
        return st;
    }
    int no = ffu_nn_model_num_outputs(n->model);
    if (no > n->nmirror) {
        void **mv = realloc(n->mirror, (size_t)no * sizeof *mv);
        if (mv)
            n->mirror = mv;
        size_t *cv = mv ? realloc(n->mirror_cap, (size_t)no * sizeof *cv) : NULL;
        if (cv)
            n->mirror_cap = cv;
        if (!mv || !cv) {
            (void)ffu_gpu_stream_sync(n->stream);
            return ffu_error_set(FFU_ERR_NOMEM, "%s: output mirrors (%d)", n->path, no);
        }
        for (int i = n->nmirror; i < no; i++) {
            n->mirror[i] = NULL;
            n->mirror_cap[i] = 0;
        }
        n->nmirror = no;
    }
    for (int i = 0; i < no && !st; i++) {
        ffu_nn_tensor t;
        if (n->keep && !n->keep[i])
            continue;
        if ((st = ffu_nn_session_output(n->session, i, &t)) || !t.data || !t.nbytes)
            continue;
        if (!(st = grow_pinned(n, &n->mirror[i], &n->mirror_cap[i], t.nbytes)))
            st = ffu_gpu_copy(n->stream, n->mirror[i], t.data, t.nbytes);
    }
    ffu_status ss = ffu_gpu_stream_sync(n->stream);
    if (st)
        return st;
    if (ss)
        return ss;
    n->out_ready = 1;
    return FFU_OK;
}

ffu_status face_net_run(face_net *n)
{
    if (!n->gpu)
        return ffu_nn_session_run(n->session);
    ffu_status st = ffu_gpu_make_current(n->gpu);
    if (st)
        return st;
    n->out_ready = 0;
    /* the caller may change its images once the results are back */
    n->up_src = NULL;
    if (n->host_io)
        return ffu_nn_session_run(n->session);
    return run_gpu(n);
}

const float *face_net_output(const face_net *n, int i, ffu_nn_tensor *t)
{
    ffu_nn_tensor tmp;
    if (!t)
        t = &tmp;
    if (ffu_nn_session_output(n->session, i, t))
        return NULL;
    if (t->dtype != FFU_DTYPE_F32) {
        ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: output %d is %s, want f32", n->path, i,
                      ffu_dtype_name(t->dtype));
        return NULL;
    }
    if (n->gpu && !n->host_io) {
        /* the session's pointer is device memory: hand out the host mirror */
        if (!n->out_ready || i >= n->nmirror || (!n->mirror[i] && t->nbytes)) {
            ffu_error_set(FFU_ERR_INVALID, "%s: output %d read before a finished run", n->path, i);
            return NULL;
        }
        t->data = n->mirror[i];
    }
    return (const float *)t->data;
}

int face_net_output_index(const face_net *n, const char *name)
{
    return ffu_nn_model_find_output(n->model, name);
}

int face_net_num_outputs(const face_net *n) { return ffu_nn_model_num_outputs(n->model); }

ffu_status face_net_keep_only(face_net *n, const int *outs, int count)
{
    int no = face_net_num_outputs(n);
    unsigned char *keep = calloc((size_t)no + 1, 1);
    if (!keep)
        return ffu_error_set(FFU_ERR_NOMEM, "%s: output list", n->path);
    for (int i = 0; i < count; i++)
        if (outs[i] >= 0 && outs[i] < no)
            keep[outs[i]] = 1;
    ffu_status st = face_net_keep_outputs(n, keep);
    free(keep);
    return st;
}

ffu_status face_net_keep_outputs(face_net *n, const unsigned char *keep)
{
    int no = face_net_num_outputs(n), nk = 0;
    for (int i = 0; keep && i < no; i++)
        nk += keep[i] != 0;
    if (!keep || nk == no)
        return FFU_OK;
    if (!nk)
        return ffu_error_set(FFU_ERR_INVALID, "%s: no output kept", n->path);
    unsigned char *kc = malloc((size_t)no);
    const char **names = malloc(sizeof *names * (size_t)nk);
    if (!kc || !names) {
        free(kc);
        free(names);
        return ffu_error_set(FFU_ERR_NOMEM, "%s: output list", n->path);
    }
    nk = 0;
    for (int i = 0; i < no; i++) {
        ffu_nn_tensor t;
        kc[i] = keep[i] && !ffu_nn_model_output(n->model, i, &t);
        if (kc[i])
            names[nk++] = t.name; /* the model's string: lives as long as n->model */
    }
    free(n->keep);
    free(n->keep_names);
    n->keep = kc;
    n->keep_names = names;
    n->so.outputs = names;
    n->so.noutputs = nk;
    if (!n->session)
        return FFU_OK; /* loaded, not started: face_net_start plans for these */
    /* sessions planned for every output go; the new one is shaped as the old was */
    if (n->gpu && n->stream && !ffu_gpu_make_current(n->gpu))
        (void)ffu_gpu_stream_sync(n->stream);
    ffu_nn_session_destroy(n->session);
    n->session = NULL;
    for (int i = 0; i < n->nspare; i++)
        ffu_nn_session_destroy(n->spare[i].session);
    n->nspare = 0;
    n->out_ready = 0;
    return face_net_start(n);
}
