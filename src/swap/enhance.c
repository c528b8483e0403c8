/* ONNX face enhancers in FaceFusion's GFPGAN / CodeFormer conventions (MODELS.md):
 * the face aligned to the ffhq_512 template at 512 x 512, RGB, (x / 255 - 0.5) / 0.5;
 * the output [1,3,512,512] is in [-1, 1] (clipped, mapped back to bytes); CodeFormer
 * has a second input `weight` (a double: fidelity 0 .. 1). The enhanced crop is pasted
 * back through a box mask (blur 0.3, no padding, as FaceFusion's enhancer does) whose
 * values are scaled by `blend`: frame * (1 - blend m) + enhanced * blend m, which is
 * FaceFusion's "paste back, then mix the whole frame at blend" restricted to the ROI
 * (outside it both are the frame). Users bring the weights; the checks say what a file
 * lacks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/face.h"
#include "swap_internal.h"

#define ENH_SIZE 512
#define ENH_TEMPLATE "ffhq_512"
#define ENH_MASK_BLUR 0.3f

static const char *const enh_kinds[] = {"gfpgan", "codeformer", NULL};

struct swap_enhancer {
    char kind[16];
    char path[1024];
    ffu_nn_model *model;
    ffu_nn_session *session;
    int in_image, in_weight, out_index; /* in_weight -1 without one */
    ffu_norm_params norm;
    ffu_image aligned, enhanced;
    ffu_image box;      /* the box mask at 512 */
    ffu_image mask;     /* box scaled by the last blend */
    float mask_blend;   /* blend `mask` was made for (-1 = none yet) */
};

static int is_scalar_like(const ffu_nn_tensor *t)
{
    if (t->rank == 0)
        return 1;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] != 1 && t->dims[i] != -1)
            return 0;
    return t->rank >= 0;
}

static ffu_status check_model(swap_enhancer *e, int kind_given)
{
    char names[512], ds[96];
    const char *kn = e->kind;
    int ni = ffu_nn_model_num_inputs(e->model);
    e->in_weight = ffu_nn_model_find_input(e->model, "weight");
    e->in_image = -1;
    for (int i = 0; i < ni; i++)
        if (i != e->in_weight) {
            if (e->in_image >= 0)
                return ffu_error_set(FFU_ERR_FORMAT, "%s: more inputs than the image%s: %s (%s)",
                                     kn, e->in_weight >= 0 ? " and `weight`" : "",
                                     swap_input_names(e->model, names, sizeof names), e->path);
            e->in_image = i;
        }
    if (e->in_image < 0)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: no image input (the file's inputs: %s) (%s)",
                             kn, swap_input_names(e->model, names, sizeof names), e->path);
    if (!kind_given)
        snprintf(e->kind, sizeof e->kind, "%s", e->in_weight >= 0 ? "codeformer" : "gfpgan");
    if (!strcmp(e->kind, "codeformer") && e->in_weight < 0)
        return ffu_error_set(FFU_ERR_FORMAT, "codeformer: no input named `weight` (a double; the "
                             "file's inputs: %s) (%s)",
                             swap_input_names(e->model, names, sizeof names), e->path);
    if (!strcmp(e->kind, "gfpgan") && e->in_weight >= 0)
        return ffu_error_set(FFU_ERR_FORMAT, "gfpgan: unexpected input `weight` (a CodeFormer "
                             "model? pass codeformer:PATH) (%s)", e->path);
    ffu_status st;
    ffu_nn_tensor t;
    if ((st = ffu_nn_model_input(e->model, e->in_image, &t)))
        return st;
    int ok = t.rank == 4 && (t.dims[0] == 1 || t.dims[0] == -1) && t.dims[1] == 3;
    for (int i = 2; ok && i < 4; i++)
        ok = t.dims[i] == ENH_SIZE || t.dims[i] == -1;
    if (!ok)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: input `%s` must be [1,3,%d,%d], this file has "
                             "%s (%s)", kn, t.name, ENH_SIZE, ENH_SIZE,
                             swap_dims_str(&t, ds, sizeof ds), e->path);
    if (t.dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: input `%s` must be f32, this file has %s "
                             "(%s)", kn, t.name, ffu_dtype_name(t.dtype), e->path);
    if (e->in_weight >= 0) {
        if ((st = ffu_nn_model_input(e->model, e->in_weight, &t)))
            return st;
        if (t.dtype != FFU_DTYPE_F64)
            return ffu_error_set(FFU_ERR_FORMAT, "%s: input `weight` must be f64 (a double), this "
                                 "file has %s (%s)", kn, ffu_dtype_name(t.dtype), e->path);
        if (!is_scalar_like(&t))
            return ffu_error_set(FFU_ERR_FORMAT, "%s: input `weight` must hold one value, this "
                                 "file has %s (%s)", kn, swap_dims_str(&t, ds, sizeof ds),
                                 e->path);
    }
    e->out_index = ffu_nn_model_find_output(e->model, "output");
    if (e->out_index < 0)
        e->out_index = 0;
    if (ffu_nn_model_num_outputs(e->model) < 1)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: the model has no output (%s)", kn, e->path);
    if ((st = ffu_nn_model_output(e->model, e->out_index, &t)))
        return st;
    int64_t want[4] = {1, 3, ENH_SIZE, ENH_SIZE};
    ok = t.rank < 0 || t.rank == 4;
    for (int i = 0; ok && t.rank == 4 && i < 4; i++)
        ok = t.dims[i] == want[i] || t.dims[i] == -1;
    if (!ok || t.dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: output `%s` must be f32 [1,3,%d,%d], this file "
                             "has %s %s (%s)", kn, t.name, ENH_SIZE, ENH_SIZE,
                             ffu_dtype_name(t.dtype), swap_dims_str(&t, ds, sizeof ds), e->path);
    return FFU_OK;
}

ffu_status swap_enhancer_open(const char *spec, const ffu_face_model_opts *run,
                              swap_enhancer **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "swap_enhancer_open: out is NULL");
    *out = NULL;
    if (!spec || !*spec)
        return ffu_error_set(FFU_ERR_INVALID, "no enhancer model given");
    swap_enhancer *e = calloc(1, sizeof *e);
    if (!e)
        return ffu_error_set(FFU_ERR_NOMEM, "enhancer");
    e->mask_blend = -1;
    char kind[16];
    const char *path = swap_spec_split(spec, enh_kinds, kind, sizeof kind);
    int kind_given = kind[0] && strcmp(kind, "onnx") != 0;
    snprintf(e->kind, sizeof e->kind, "%s", kind_given ? kind : "enhancer");
    ffu_status st;
    if ((size_t)snprintf(e->path, sizeof e->path, "%s", path) >= sizeof e->path) {
        st = ffu_error_set(FFU_ERR_INVALID, "enhancer model path too long");
        goto fail;
    }
    if ((st = swap_model_load("enhancer", e->path, &e->model)) ||
        (st = check_model(e, kind_given)))
        goto fail;
    if ((st = ffu_norm_preset(&e->norm, "symmetric")))
        goto fail;
    if ((st = swap_session_create(e->model, run, &e->session)))
        goto fail;
    int64_t dims[4] = {1, 3, ENH_SIZE, ENH_SIZE};
    if ((st = ffu_nn_session_set_input_shape(e->session, e->in_image, 4, dims)))
        goto fail;
    if (e->in_weight >= 0) {
        ffu_nn_tensor t;
        if ((st = ffu_nn_model_input(e->model, e->in_weight, &t)))
            goto fail;
        int64_t one[FFU_NN_MAX_RANK];
        for (int i = 0; i < FFU_NN_MAX_RANK; i++)
            one[i] = 1;
        if (t.rank > 0 && (st = ffu_nn_session_set_input_shape(e->session, e->in_weight, t.rank,
                                                                one)))
            goto fail;
    }
    float pad[4] = {0, 0, 0, 0};
    if ((st = swap_box_mask(ENH_SIZE, ENH_MASK_BLUR, pad, &e->box)))
        goto fail;
    *out = e;
    return FFU_OK;
fail:
    swap_enhancer_close(e);
    return st;
}

void swap_enhancer_close(swap_enhancer *e)
{
    if (!e)
        return;
    ffu_nn_session_destroy(e->session);
    ffu_nn_model_destroy(e->model);
    ffu_image_release(&e->aligned);
    ffu_image_release(&e->enhanced);
    ffu_image_release(&e->box);
    ffu_image_release(&e->mask);
    free(e);
}

/* mask = box * blend, remade only when blend changes. */
static ffu_status blend_mask(swap_enhancer *e, float blend)
{
    if (e->mask.data[0] && e->mask_blend == blend)
        return FFU_OK;
    if (!e->mask.data[0]) {
        ffu_status st = ffu_image_create(&e->mask, FFU_PIX_GRAY8, ENH_SIZE, ENH_SIZE);
        if (st)
            return st;
    }
    for (int y = 0; y < ENH_SIZE; y++) {
        const uint8_t *b = e->box.data[0] + (size_t)y * e->box.stride[0];
        uint8_t *m = e->mask.data[0] + (size_t)y * e->mask.stride[0];
        for (int x = 0; x < ENH_SIZE; x++)
            m[x] = (uint8_t)(b[x] * blend + 0.5f);
    }
    e->mask_blend = blend;
    return FFU_OK;
}

ffu_status swap_enhancer_run(swap_enhancer *e, ffu_image *frame, const ffu_face *face,
                             float blend, float codeformer_weight)
{
    if (!e || !frame || !face || !frame->data[0])
        return ffu_error_set(FFU_ERR_INVALID, "swap_enhancer_run: bad arguments");
    if (frame->fmt != FFU_PIX_RGB24)
        return ffu_error_set(FFU_ERR_INVALID, "swap_enhancer_run: the frame must be RGB24, not %s",
                             ffu_pixfmt_name(frame->fmt));
    if (!(blend >= 0 && blend <= 1) || !(codeformer_weight >= 0 && codeformer_weight <= 1))
        return ffu_error_set(FFU_ERR_INVALID, "enhancer blend %g and weight %g must be in 0..1",
                             (double)blend, (double)codeformer_weight);
    for (int i = 0; i < 2 * FFU_FACE_NUM_KPS; i++)
        if (!isfinite(face->kps[i]))
            return ffu_error_set(FFU_ERR_INVALID, "face keypoint %d is not finite", i / 2);
    if (blend == 0)
        return FFU_OK;
    double m[6];
    ffu_status st = ffu_face_align(frame, face->kps, ENH_TEMPLATE, ENH_SIZE, &e->aligned, m);
    if (st)
        return st;
    ffu_nn_tensor t;
    if ((st = ffu_nn_session_input(e->session, e->in_image, &t)))
        return st;
    ffu_tensor_view v = {(float *)t.data, FFU_LAYOUT_NCHW, 1, 3, ENH_SIZE, ENH_SIZE};
    if ((st = ffu_image_to_tensor(&e->aligned, &e->norm, &v, 0)))
        return st;
    if (e->in_weight >= 0) {
        if ((st = ffu_nn_session_input(e->session, e->in_weight, &t)))
            return st;
        if (t.nbytes != sizeof(double))
            return ffu_error_set(FFU_ERR_INTERNAL, "`weight` input holds %zu bytes", t.nbytes);
        double w = codeformer_weight;
        memcpy(t.data, &w, sizeof w);
    }
    if ((st = ffu_nn_session_run(e->session)))
        return st;
    ffu_nn_tensor o;
    if ((st = ffu_nn_session_output(e->session, e->out_index, &o)))
        return st;
    if (o.dtype != FFU_DTYPE_F32 || o.rank != 4 || o.dims[0] != 1 || o.dims[1] != 3 ||
        o.dims[2] != ENH_SIZE || o.dims[3] != ENH_SIZE) {
        char ds[96];
        return ffu_error_set(FFU_ERR_FORMAT, "%s: the output is %s %s, want f32 [1,3,%d,%d] (%s)",
                             e->kind, ffu_dtype_name(o.dtype), swap_dims_str(&o, ds, sizeof ds),
                             ENH_SIZE, ENH_SIZE, e->path);
    }
    if (!e->enhanced.data[0] &&
        (st = ffu_image_create(&e->enhanced, FFU_PIX_RGB24, ENH_SIZE, ENH_SIZE)))
        return st;
    /* [-1, 1] -> bytes: round(y * 127.5 + 127.5), clamped = the clip to [-1, 1] */
    ffu_tensor_view ov = {(float *)o.data, FFU_LAYOUT_NCHW, 1, 3, ENH_SIZE, ENH_SIZE};
    if ((st = ffu_tensor_to_image(&ov, 0, &e->norm, &e->enhanced)))
        return st;
    if ((st = blend_mask(e, blend)))
        return st;
    return swap_paste_back(frame, &e->enhanced, m, &e->mask);
}
