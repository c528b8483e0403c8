/* The ONNX occluder behind FFU_SWAP_MASK_OCCLUSION: a user-supplied segmentation net in
 * FaceFusion's xseg convention says which pixels of an aligned face crop are face and
 * which are in front of it (hands, hair, glasses, microphones). Input [1,S,S,3] (NHWC,
 * the xseg files) or [1,3,S,S], RGB scaled to 0..1; output [1,S,S,1] or [1,1,S,S], the
 * probability of "visible face". The crop is resized to S, the output clipped to 0..1,
 * resized back to the crop's size, blurred (Gaussian sigma 5 pixels) and then only its
 * upper half kept and stretched: m = (clip(p, 0.5, 1) - 0.5) * 2, FaceFusion's
 * post-processing, which pulls the mask edge inside the occluder's boundary so no
 * occluder pixel is half-replaced. The mask multiplies into the other masks
 * (swap_mask_multiply). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "swap_internal.h"

#define OCC_DEFAULT_SIZE 256 /* dynamic-size models run at the xseg size */
#define OCC_MAX_SIZE 2048
#define OCC_BLUR_SIGMA 5.0f

struct swap_occluder {
    char path[1024];
    ffu_nn_model *model;
    ffu_nn_session *session;
    ffu_tensor_layout layout;
    int size;
    ffu_norm_params norm;
    ffu_image in;   /* crop resized to size (RGB24) */
    ffu_image prob; /* output as GRAY8 at size */
    ffu_image big;  /* prob at the crop's size, before the blur */
};

static const char *const occ_kinds[] = {NULL};

static ffu_status check_model(swap_occluder *o)
{
    char names[512], ds[96];
    ffu_nn_tensor t;
    ffu_status st;
    if (ffu_nn_model_num_inputs(o->model) != 1)
        return ffu_error_set(FFU_ERR_FORMAT, "occluder: the model must have one image input, this "
                             "file has %s (%s)", swap_input_names(o->model, names, sizeof names),
                             o->path);
    if ((st = ffu_nn_model_input(o->model, 0, &t)))
        return st;
    int ok = t.rank == 4 && (t.dims[0] == 1 || t.dims[0] == -1);
    int nhwc = ok && t.dims[3] == 3 && t.dims[1] != 3;
    int nchw = ok && t.dims[1] == 3 && !nhwc;
    int hd = nhwc ? 1 : 2;
    int h = ok ? (int)t.dims[hd] : 0, w = ok ? (int)t.dims[hd + 1] : 0;
    if (!(nhwc || nchw) || h != w || (h != -1 && (h < 8 || h > OCC_MAX_SIZE)))
        return ffu_error_set(FFU_ERR_FORMAT, "occluder: input `%s` must be [1,S,S,3] or "
                             "[1,3,S,S], this file has %s (%s)", t.name,
                             swap_dims_str(&t, ds, sizeof ds), o->path);
    if (t.dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "occluder: input `%s` must be f32, this file has "
                             "%s (%s)", t.name, ffu_dtype_name(t.dtype), o->path);
    o->layout = nhwc ? FFU_LAYOUT_NHWC : FFU_LAYOUT_NCHW;
    o->size = h > 0 ? h : OCC_DEFAULT_SIZE;
    if (ffu_nn_model_num_outputs(o->model) < 1)
        return ffu_error_set(FFU_ERR_FORMAT, "occluder: the model has no output (%s)", o->path);
    if ((st = ffu_nn_model_output(o->model, 0, &t)))
        return st;
    if (t.dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "occluder: output `%s` must be f32, this file "
                             "has %s (%s)", t.name, ffu_dtype_name(t.dtype), o->path);
    if (t.rank >= 0) {
        int64_t S = o->size;
        int64_t a[4] = {1, S, S, 1}, b[4] = {1, 1, S, S}, c[3] = {1, S, S};
        int ma = t.rank == 4, mb = t.rank == 4, mc = t.rank == 3;
        for (int i = 0; i < t.rank && i < 4; i++) {
            int dyn = t.dims[i] == -1;
            ma = ma && (dyn || t.dims[i] == a[i]);
            mb = mb && (dyn || t.dims[i] == b[i]);
            mc = mc && i < 3 && (dyn || t.dims[i] == c[i]);
        }
        if (!ma && !mb && !mc)
            return ffu_error_set(FFU_ERR_FORMAT, "occluder: output `%s` must be [1,%d,%d,1] or "
                                 "[1,1,%d,%d], this file has %s (%s)", t.name, o->size, o->size,
                                 o->size, o->size, swap_dims_str(&t, ds, sizeof ds), o->path);
    }
    return FFU_OK;
}

ffu_status swap_occluder_open(const char *spec, const ffu_face_model_opts *run,
                              swap_occluder **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "swap_occluder_open: out is NULL");
    *out = NULL;
    if (!spec || !*spec)
        return ffu_error_set(FFU_ERR_INVALID, "no occluder model given");
    swap_occluder *o = calloc(1, sizeof *o);
    if (!o)
        return ffu_error_set(FFU_ERR_NOMEM, "occluder");
    char kind[8];
    const char *path = swap_spec_split(spec, occ_kinds, kind, sizeof kind);
    ffu_status st;
    if ((size_t)snprintf(o->path, sizeof o->path, "%s", path) >= sizeof o->path) {
        st = ffu_error_set(FFU_ERR_INVALID, "occluder model path too long");
        goto fail;
    }
    if ((st = swap_model_load("occluder", o->path, &o->model)) || (st = check_model(o)))
        goto fail;
    if ((st = ffu_norm_preset(&o->norm, "unit")))
        goto fail;
    if ((st = swap_session_create(o->model, run, &o->session)))
        goto fail;
    int64_t dims[4] = {1, 3, o->size, o->size};
    if (o->layout == FFU_LAYOUT_NHWC) {
        dims[1] = o->size;
        dims[3] = 3;
    }
    if ((st = ffu_nn_session_set_input_shape(o->session, 0, 4, dims)))
        goto fail;
    if ((st = ffu_image_create(&o->in, FFU_PIX_RGB24, o->size, o->size)) ||
        (st = ffu_image_create(&o->prob, FFU_PIX_GRAY8, o->size, o->size)))
        goto fail;
    *out = o;
    return FFU_OK;
fail:
    swap_occluder_close(o);
    return st;
}

void swap_occluder_close(swap_occluder *o)
{
    if (!o)
        return;
    ffu_nn_session_destroy(o->session);
    ffu_nn_model_destroy(o->model);
    ffu_image_release(&o->in);
    ffu_image_release(&o->prob);
    ffu_image_release(&o->big);
    free(o);
}

/* (Re)allocates img as fmt w x h unless it already is. */
static ffu_status ensure(ffu_image *img, ffu_pixfmt fmt, int w, int h)
{
    if (img->data[0] && img->fmt == fmt && img->width == w && img->height == h)
        return FFU_OK;
    ffu_image_release(img);
    return ffu_image_create(img, fmt, w, h);
}

ffu_status swap_occluder_run(swap_occluder *o, const ffu_image *crop, ffu_image *mask)
{
    if (!o || !crop || !mask || !crop->data[0])
        return ffu_error_set(FFU_ERR_INVALID, "swap_occluder_run: bad arguments");
    if (crop->fmt != FFU_PIX_RGB24)
        return ffu_error_set(FFU_ERR_INVALID, "swap_occluder_run: the crop must be RGB24, not %s",
                             ffu_pixfmt_name(crop->fmt));
    if (mask == crop)
        return ffu_error_set(FFU_ERR_INVALID, "swap_occluder_run: mask and crop are one image");
    ffu_status st;
    if (crop->width == o->size && crop->height == o->size)
        st = ffu_image_copy(crop, &o->in);
    else
        st = ffu_image_resize(crop, &o->in, FFU_INTERP_BILINEAR);
    if (st)
        return st;
    ffu_nn_tensor t;
    if ((st = ffu_nn_session_input(o->session, 0, &t)))
        return st;
    ffu_tensor_view v = {(float *)t.data, o->layout, 1, 3, o->size, o->size};
    if ((st = ffu_image_to_tensor(&o->in, &o->norm, &v, 0)))
        return st;
    if ((st = ffu_nn_session_run(o->session)))
        return st;
    ffu_nn_tensor out;
    if ((st = ffu_nn_session_output(o->session, 0, &out)))
        return st;
    if (out.dtype != FFU_DTYPE_F32 || out.nbytes != (size_t)o->size * o->size * sizeof(float))
        return ffu_error_set(FFU_ERR_FORMAT, "occluder: the output holds %zu bytes of %s, want "
                             "%dx%d f32 (%s)", out.nbytes, ffu_dtype_name(out.dtype), o->size,
                             o->size, o->path);
    const float *p = out.data;
    for (int y = 0; y < o->size; y++) {
        uint8_t *d = o->prob.data[0] + (size_t)y * o->prob.stride[0];
        for (int x = 0; x < o->size; x++) {
            float q = p[(size_t)y * o->size + x];
            q = q > 0 ? (q < 1 ? q : 1) : 0; /* NaN -> 0: "not face" is the safe side */
            d[x] = (uint8_t)(q * 255.0f + 0.5f);
        }
    }
    if ((st = ensure(&o->big, FFU_PIX_GRAY8, crop->width, crop->height)) ||
        (st = ensure(mask, FFU_PIX_GRAY8, crop->width, crop->height)))
        return st;
    if (crop->width == o->size && crop->height == o->size)
        st = ffu_image_copy(&o->prob, &o->big);
    else
        st = ffu_image_resize(&o->prob, &o->big, FFU_INTERP_BILINEAR);
    if (st || (st = ffu_mask_gaussian_blur(&o->big, mask, OCC_BLUR_SIGMA)))
        return st;
    /* (clip(m, 0.5, 1) - 0.5) * 2 in bytes: 2 m - 255, clamped */
    for (int y = 0; y < mask->height; y++) {
        uint8_t *d = mask->data[0] + (size_t)y * mask->stride[0];
        for (int x = 0; x < mask->width; x++) {
            int q = 2 * d[x] - 255;
            d[x] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
        }
    }
    return FFU_OK;
}
