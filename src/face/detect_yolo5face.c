/* YOLO5Face decoder (yolov5-face exports with the Detect layer's grid decoding inside
 * the graph, e.g. libfacedetection.train's yolo5face_500m_320x320).
 *
 * One output [1,N,16]: rows cx, cy, w, h (input pixels), objectness, five keypoints
 * (x, y), class score; score = objectness x class. Input R,G,B x / 255 (zoo row).
 * Keypoint order: image-left eye, image-right eye, nose, mouth corners. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

static ffu_status y5_init(face_net *n, void **state)
{
    *state = NULL;
    if (face_net_num_outputs(n) != 1)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: %d outputs; YOLO5Face has one [N,16]",
                             n->path, face_net_num_outputs(n));
    ffu_nn_tensor t;
    ffu_status st = ffu_nn_model_output(n->model, 0, &t);
    if (st)
        return st;
    if (t.rank < 2 || (t.dims[t.rank - 1] > 0 && t.dims[t.rank - 1] != 16))
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: output rows of %lld values; YOLO5Face "
                                                  "has 16", n->path,
                             (long long)t.dims[t.rank - 1]);
    return FFU_OK;
}

static ffu_status y5_decode(void *state, const face_net *n, int b, float min_score,
                            det_cands *out)
{
    (void)state;
    int64_t nv;
    const float *p = det_output_slot(n, 0, b, &nv, NULL);
    if (!p)
        return FFU_ERR_UNSUPPORTED;
    if (nv % 16)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: output size %lld is not rows of 16",
                             n->path, (long long)nv);
    for (int64_t a = 0; a < nv / 16; a++) {
        const float *r = p + 16 * a;
        if (!(r[4] >= min_score))
            continue; /* score <= objectness */
        float score = r[4] * r[15];
        if (!(score >= min_score))
            continue;
        det_cand *o = det_cands_push(out);
        if (!o)
            return FFU_ERR_NOMEM;
        o->score = score;
        o->box[0] = r[0] - r[2] / 2;
        o->box[1] = r[1] - r[3] / 2;
        o->box[2] = r[0] + r[2] / 2;
        o->box[3] = r[1] + r[3] / 2;
        memcpy(o->kps, r + 5, 10 * sizeof(float));
    }
    return FFU_OK;
}

const det_family det_family_yolo5face = {
    .name = "yolo5face",
    .score = 0.6f,
    .nms_iou = 0.45f, /* yolov5's default */
    .weighted_merge = 0,
    .fit = DET_FIT_LETTERBOX,
    .stride = 32,
    .dynamic_side = 640,
    .min_face_net = 22.0f,
    .init = y5_init,
    .fini = NULL,
    .decode = y5_decode,
};
