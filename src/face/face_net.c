/* face_net: how every face stage opens a zoo model and feeds it (see face_internal.h).
 * One place decides layout, channel order, normalisation and the crop geometry, so a
 * detector letterbox, an alignment crop and a rotated landmark crop are the same call
 * and a new model convention is a zoo row, not new plumbing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "face_internal.h"

void face_box_map(const float box[4], int w, int h, double m[6])
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

ffu_status face_net_open(face_net *n, ffu_face_role role, const ffu_face_model_opts *o)
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
    n->dynamic_hw = dh <= 0 || dw <= 0;
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
    ffu_nn_session_opts_default(&so);
    if (o) {
        so.backend = o->backend;
        so.threads = o->threads;
    }
    if ((st = ffu_nn_session_create(n->model, &so, &n->session)))
        goto fail;
    n->batch = 1;
    int w = n->in_w, h = n->in_h;
    n->in_w = n->in_h = -1; /* force the first reshape */
    if ((st = face_net_reshape(n, 1, w, h)))
        goto fail;
    return FFU_OK;
fail:
    face_net_close(n);
    return st;
}

void face_net_close(face_net *n)
{
    if (!n)
        return;
    ffu_nn_session_destroy(n->session);
    ffu_nn_model_destroy(n->model);
    ffu_image_release(&n->scratch);
    memset(n, 0, sizeof *n);
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
    ffu_status st = ffu_nn_session_set_input_shape(n->session, 0, 4, dims);
    if (st)
        return st;
    n->batch = batch;
    n->in_w = w;
    n->in_h = h;
    return FFU_OK;
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
    ffu_nn_tensor t;
    if ((st = ffu_nn_session_input(n->session, 0, &t)))
        return st;
    ffu_tensor_view v = {(float *)t.data, n->layout, n->batch, n->in_c, n->in_h, n->in_w};
    ffu_norm_params p = n->norm;
    /* norm is for R,G,B order; the model may want B,G,R; the image may hold either */
    p.swap_rb = (img->fmt == FFU_PIX_BGR24) != (n->entry.bgr != 0);
    return ffu_image_to_tensor(&n->scratch, &p, &v, b);
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

ffu_status face_net_run(face_net *n) { return ffu_nn_session_run(n->session); }

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
    return (const float *)t->data;
}

int face_net_output_index(const face_net *n, const char *name)
{
    return ffu_nn_model_find_output(n->model, name);
}

int face_net_num_outputs(const face_net *n) { return ffu_nn_model_num_outputs(n->model); }
