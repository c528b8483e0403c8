/* RetinaFace decoder (biubug6 RetinaFace-MobileNet0.25 as exported by
 * libfacedetection.train: outputs loc [1,N,4], conf [1,N,2] (softmax) and, despite its
 * name, iou [1,N,10] = the five landmarks).
 *
 * SSD-style priors: strides 8, 16, 32 with sizes {16, 32}, {64, 128}, {256, 512}, two per
 * cell, centred at (col + 0.5) * stride over ceil(side / stride) cells; variances 0.1
 * and 0.2: centre = prior + loc * 0.1 * size, size = prior size * exp(loc * 0.2),
 * landmarks = prior + l * 0.1 * size. Score = conf[1]. The input is B,G,R minus the
 * per-channel means 104, 117, 123 (set here; the zoo row has one mean for all
 * channels). Keypoint order: image-left eye, image-right eye, nose, mouth corners. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

static const int rf_steps[3] = {8, 16, 32};
static const float rf_sizes[3][2] = {{16, 32}, {64, 128}, {256, 512}};

typedef struct rf_state {
    int loc, conf, lmk;
} rf_state;

static void rf_fini(void *p) { free(p); }

static ffu_status rf_init(face_net *n, void **state)
{
    *state = NULL;
    rf_state *s = calloc(1, sizeof *s);
    if (!s)
        return ffu_error_set(FFU_ERR_NOMEM, "RetinaFace state");
    s->loc = face_net_output_index(n, "loc");
    s->conf = face_net_output_index(n, "conf");
    s->lmk = face_net_output_index(n, "iou");
    if (s->lmk < 0)
        s->lmk = face_net_output_index(n, "landms");
    if (face_net_num_outputs(n) == 3 && (s->loc < 0 || s->conf < 0 || s->lmk < 0)) {
        s->loc = 0; /* biubug6's export order: loc, conf, landms */
        s->conf = 1;
        s->lmk = 2;
    }
    if (s->loc < 0 || s->conf < 0 || s->lmk < 0) {
        free(s);
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: not a RetinaFace model (want outputs "
                                                  "loc, conf, landmarks)", n->path);
    }
    /* B,G,R tensor order (zoo row bgr = 1): means indexed by tensor channel */
    n->norm.mean[0] = 104.f;
    n->norm.mean[1] = 117.f;
    n->norm.mean[2] = 123.f;
    for (int c = 0; c < 3; c++)
        n->norm.scale[c] = 1.f;
    *state = s;
    return FFU_OK;
}

static ffu_status rf_decode(void *state, const face_net *n, int b, float min_score,
                            det_cands *out)
{
    const rf_state *s = state;
    int64_t nl, nc, nk;
    const float *loc = det_output_slot(n, s->loc, b, &nl, NULL);
    const float *conf = det_output_slot(n, s->conf, b, &nc, NULL);
    const float *lmk = det_output_slot(n, s->lmk, b, &nk, NULL);
    if (!loc || !conf || !lmk)
        return FFU_ERR_UNSUPPORTED;
    int64_t total = 0;
    for (int i = 0; i < 3; i++)
        total += (int64_t)((n->in_h + rf_steps[i] - 1) / rf_steps[i]) *
                 ((n->in_w + rf_steps[i] - 1) / rf_steps[i]) * 2;
    if (nl != 4 * total || nc != 2 * total || nk != 10 * total)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: %lld priors in the outputs, %lld for a "
                             "%dx%d input", n->path, (long long)(nl / 4), (long long)total,
                             n->in_w, n->in_h);
    int64_t a = 0;
    for (int i = 0; i < 3; i++) {
        int step = rf_steps[i];
        int rows = (n->in_h + step - 1) / step, cols = (n->in_w + step - 1) / step;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                for (int k = 0; k < 2; k++, a++) {
                    float score = conf[2 * a + 1];
                    if (!(score >= min_score))
                        continue;
                    float sz = rf_sizes[i][k];
                    float px = (c + 0.5f) * step, py = (r + 0.5f) * step;
                    const float *d = loc + 4 * a;
                    float cx = px + d[0] * 0.1f * sz, cy = py + d[1] * 0.1f * sz;
                    float w = sz * expf(d[2] * 0.2f), h = sz * expf(d[3] * 0.2f);
                    det_cand *o = det_cands_push_box(out, score, cx, cy, w, h);
                    if (!o)
                        return FFU_ERR_NOMEM;
                    const float *l = lmk + 10 * a;
                    for (int j = 0; j < 5; j++) {
                        o->kps[2 * j] = px + l[2 * j] * 0.1f * sz;
                        o->kps[2 * j + 1] = py + l[2 * j + 1] * 0.1f * sz;
                    }
                }
    }
    return FFU_OK;
}

const det_family det_family_retinaface = {
    .name = "retinaface",
    .score = 0.75f,
    .nms_iou = 0.4f, /* biubug6's default */
    .weighted_merge = 0,
    .fit = DET_FIT_LETTERBOX,
    .stride = 32,
    .dynamic_side = 640,
    .min_face_net = 30.0f,
    .init = rf_init,
    .fini = rf_fini,
    .decode = rf_decode,
};
