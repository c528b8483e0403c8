/* SCRFD decoder (InsightFace SCRFD with keypoints, e.g. scrfd_500m_bnkps / det_500m).
 *
 * Nine outputs score/bbox/kps x strides 8, 16, 32 (named score_8 ... or in that order),
 * two anchors per cell, anchor points at (col, row) * stride (no half-cell offset).
 * Distances are in stride units: box = point -/+ d * stride (left, top, right, bottom),
 * keypoints = point + d * stride. Scores are already sigmoids. Input (x - 127.5) / 128,
 * R,G,B (zoo row). Keypoint order: image-left eye, image-right eye, nose, image-left and
 * image-right mouth corners. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

static const int sc_strides[3] = {8, 16, 32};

typedef struct sc_state {
    int score[3], bbox[3], kps[3];
} sc_state;

static void sc_fini(void *p) { free(p); }

static ffu_status sc_init(face_net *n, void **state)
{
    *state = NULL;
    int no = face_net_num_outputs(n);
    if (no != 9)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: %d outputs; SCRFD with keypoints has 9 "
                                                  "(score, bbox, kps x strides 8/16/32)",
                             n->path, no);
    sc_state *s = calloc(1, sizeof *s);
    if (!s)
        return ffu_error_set(FFU_ERR_NOMEM, "SCRFD state");
    for (int i = 0; i < 3; i++) {
        char name[16];
        int *dst[3] = {&s->score[i], &s->bbox[i], &s->kps[i]};
        const char *kind[3] = {"score", "bbox", "kps"};
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "%s_%d", kind[k], sc_strides[i]);
            int idx = face_net_output_index(n, name);
            *dst[k] = idx >= 0 ? idx : k * 3 + i; /* InsightFace's unnamed export order */
        }
    }
    *state = s;
    return FFU_OK;
}

static ffu_status sc_decode(void *state, const face_net *n, int b, float min_score,
                            det_cands *out)
{
    const sc_state *s = state;
    for (int i = 0; i < 3; i++) {
        int st = sc_strides[i];
        int cols = n->in_w / st, rows = n->in_h / st;
        int64_t n0, n1, n2;
        const float *sc = det_output_slot(n, s->score[i], b, &n0, NULL);
        const float *bb = det_output_slot(n, s->bbox[i], b, &n1, NULL);
        const float *kp = det_output_slot(n, s->kps[i], b, &n2, NULL);
        if (!sc || !bb || !kp)
            return FFU_ERR_UNSUPPORTED;
        int64_t cells = (int64_t)rows * cols;
        int anchors = cells > 0 ? (int)(n0 / cells) : 0;
        if (anchors < 1 || n0 != cells * anchors || n1 != 4 * n0 || n2 != 10 * n0)
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: stride-%d outputs (%lld scores) do "
                                 "not fit a %dx%d grid", n->path, st, (long long)n0, cols, rows);
        for (int64_t a = 0; a < n0; a++) {
            if (!(sc[a] >= min_score))
                continue;
            int64_t cell = a / anchors;
            float px = (float)(cell % cols) * st, py = (float)(cell / cols) * st;
            const float *d = bb + 4 * a;
            det_cand *o = det_cands_push(out);
            if (!o)
                return FFU_ERR_NOMEM;
            o->score = sc[a];
            o->box[0] = px - d[0] * st;
            o->box[1] = py - d[1] * st;
            o->box[2] = px + d[2] * st;
            o->box[3] = py + d[3] * st;
            const float *k = kp + 10 * a;
            for (int j = 0; j < 5; j++) {
                o->kps[2 * j] = px + k[2 * j] * st;
                o->kps[2 * j + 1] = py + k[2 * j + 1] * st;
            }
        }
    }
    return FFU_OK;
}

const det_family det_family_scrfd = {
    .name = "scrfd",
    .score = 0.5f,
    .nms_iou = 0.4f, /* InsightFace's SCRFD default */
    .weighted_merge = 0,
    .fit = DET_FIT_LETTERBOX,
    .stride = 32,
    .dynamic_side = 640,
    .min_face_net = 20.0f,
    .init = sc_init,
    .fini = sc_fini,
    .decode = sc_decode,
};
