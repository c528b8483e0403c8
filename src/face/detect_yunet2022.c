/* YuNet decoder for the OLD OpenCV-zoo format (face_detection_yunet_2022mar.onnx), the
 * one Debian's OpenCV 4.6 FaceDetectorYN decodes. Kept beside the 2023mar decoder so
 * that facefuse can be compared with that FaceDetectorYN on the very same weights and
 * post-processing (tests/unit/test_face_yunet2022.c checks the faces agree).
 *
 * Three outputs: loc [N,14] (box and five keypoint offsets), conf [N,2] (softmax, face
 * in column 1), iou [N,1]. N priors come from the input size: feature maps for strides
 * 8, 16, 32, 64 sized as the network's own down-sampling (halve rounding up twice, then
 * halve rounding down per level), 3/2/2/3 anchor sizes per cell, rows in order level,
 * row, column, anchor. As FaceDetectorYN 4.6: score = sqrt(conf * clamp(iou)); centre =
 * prior + loc * 0.1 * anchor; width = anchor * exp(loc * 0.1) and height = anchor *
 * exp(loc * 0.2) (OpenCV applies the first variance to the width; matched here, since
 * the point is to reproduce it); keypoints = prior + loc * 0.1 * anchor. Input B,G,R
 * 0..255 (zoo row). Keypoint order as the 2023mar model. NMS is the common one on float
 * boxes (OpenCV's truncates boxes to integers first; no difference seen on the tests). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

#define Y22_LEVELS 4

static const int y22_steps[Y22_LEVELS] = {8, 16, 32, 64};
static const int y22_nanchor[Y22_LEVELS] = {3, 2, 2, 3};
static const float y22_anchor[Y22_LEVELS][3] = {
    {10, 16, 24}, {32, 48, 0}, {64, 96, 0}, {128, 192, 256}};

typedef struct y22_state {
    int loc, conf, iou; /* output indices */
} y22_state;

static void y22_fini(void *p) { free(p); }

static ffu_status y22_init(face_net *n, void **state)
{
    *state = NULL;
    int no = face_net_num_outputs(n);
    int loc = face_net_output_index(n, "loc"), conf = face_net_output_index(n, "conf"),
        iou = face_net_output_index(n, "iou");
    /* unnamed exports keep OpenCV's loc, conf, iou order */
    if ((loc < 0 || conf < 0 || iou < 0) && no == 3) {
        loc = 0;
        conf = 1;
        iou = 2;
    }
    if (loc < 0 || conf < 0 || iou < 0)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: no YuNet-2022 outputs loc/conf/iou "
                                                  "(%d outputs)", n->path, no);
    y22_state *s = calloc(1, sizeof *s);
    if (!s)
        return ffu_error_set(FFU_ERR_NOMEM, "YuNet-2022 state");
    s->loc = loc;
    s->conf = conf;
    s->iou = iou;
    *state = s;
    return FFU_OK;
}

/* Feature-map sizes for an input side, as the network computes them (and OpenCV's
 * prior generator): two stride-2 convolutions that round up, then poolings that round
 * down. */
static void y22_maps(int side, int out[Y22_LEVELS])
{
    int s = ((side + 1) / 2) / 2;
    for (int l = 0; l < Y22_LEVELS; l++) {
        s /= 2;
        out[l] = s;
    }
}

static float clamp01(float v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

static ffu_status y22_decode(void *state, const face_net *n, int b, float min_score,
                             det_cands *out)
{
    const y22_state *s = state;
    int mw[Y22_LEVELS], mh[Y22_LEVELS];
    y22_maps(n->in_w, mw);
    y22_maps(n->in_h, mh);
    int64_t priors = 0;
    for (int l = 0; l < Y22_LEVELS; l++)
        priors += (int64_t)mw[l] * mh[l] * y22_nanchor[l];
    int64_t cl, cc, ci;
    const float *loc = det_output_slot(n, s->loc, b, &cl, NULL);
    const float *conf = det_output_slot(n, s->conf, b, &cc, NULL);
    const float *iou = det_output_slot(n, s->iou, b, &ci, NULL);
    if (!loc || !conf || !iou)
        return FFU_ERR_UNSUPPORTED;
    if (cl != 14 * priors || cc != 2 * priors || ci != priors)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: outputs hold %lld/%lld/%lld values, "
                             "want %lld priors x 14/2/1 for a %dx%d input", n->path,
                             (long long)cl, (long long)cc, (long long)ci, (long long)priors,
                             n->in_w, n->in_h);
    float min_prod = min_score * min_score;
    int64_t p = 0;
    for (int l = 0; l < Y22_LEVELS; l++) {
        float st = (float)y22_steps[l];
        for (int r = 0; r < mh[l]; r++)
            for (int c = 0; c < mw[l]; c++)
                for (int a = 0; a < y22_nanchor[l]; a++, p++) {
                    /* OpenCV 4.6 clamps only the IoU branch (conf is a softmax) */
                    float prod = conf[2 * p + 1] * clamp01(iou[p]);
                    if (!(prod >= min_prod))
                        continue;
                    float as = y22_anchor[l][a];
                    float px = (c + 0.5f) * st, py = (r + 0.5f) * st;
                    const float *d = loc + 14 * p;
                    float cx = px + d[0] * 0.1f * as, cy = py + d[1] * 0.1f * as;
                    float w = as * expf(d[2] * 0.1f), h = as * expf(d[3] * 0.2f);
                    det_cand *o = det_cands_push_box(out, sqrtf(prod), cx, cy, w, h);
                    if (!o)
                        return FFU_ERR_NOMEM;
                    for (int j = 0; j < 5; j++) {
                        o->kps[2 * j] = px + d[4 + 2 * j] * 0.1f * as;
                        o->kps[2 * j + 1] = py + d[5 + 2 * j] * 0.1f * as;
                    }
                }
    }
    return FFU_OK;
}

const det_family det_family_yunet2022 = {
    .name = "yunet2022",
    .score = 0.92f, /* the zoo row's (just above FaceDetectorYN's 0.9; zoo.c says why) */
    .nms_iou = 0.3f, /* OpenCV zoo demo */
    .weighted_merge = 0,
    .fit = DET_FIT_LETTERBOX,
    .stride = 32,
    .dynamic_side = 640,
    .min_face_net = 10.0f,
    .init = y22_init,
    .fini = y22_fini,
    .decode = y22_decode,
};
