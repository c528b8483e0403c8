/* UltraFace decoder (Linzaer's Ultra-Light-Fast-Generic-Face-Detector-1MB, the ONNX
 * exports with the box decoding inside the graph: version-RFB-320 / slim-320 /
 * RFB-640).
 *
 * Outputs scores [1,N,2] (softmax, column 1 = face) and boxes [1,N,4] as corners
 * x1, y1, x2, y2 normalised to the input. The input is the image stretched to the
 * model's size (the project's demos resize without keeping the aspect ratio), R,G,B,
 * (x - 127) / 128 (zoo row). UltraFace predicts no landmarks: the five keypoints are
 * placed at fixed box-relative positions (the median, made left-right symmetric, of
 * YuNet's keypoints in UltraFace's boxes over 36 faces of the face_recognition example
 * photos), good enough for a rough alignment only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

/* box-relative keypoints: eyes, nose, mouth corners */
static const float uf_kps[10] = {0.262f, 0.393f, 0.738f, 0.393f, 0.500f,
                                 0.584f, 0.278f, 0.730f, 0.722f, 0.730f};

typedef struct uf_state {
    int scores, boxes;
} uf_state;

static void uf_fini(void *p) { free(p); }

static ffu_status uf_init(face_net *n, void **state)
{
    *state = NULL;
    uf_state *s = calloc(1, sizeof *s);
    if (!s)
        return ffu_error_set(FFU_ERR_NOMEM, "UltraFace state");
    s->scores = face_net_output_index(n, "scores");
    s->boxes = face_net_output_index(n, "boxes");
    if (s->scores < 0 || s->boxes < 0) {
        free(s);
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: not an UltraFace model (want outputs "
                                                  "'scores' and 'boxes')", n->path);
    }
    *state = s;
    return FFU_OK;
}

static ffu_status uf_decode(void *state, const face_net *n, int b, float min_score,
                            det_cands *out)
{
    const uf_state *s = state;
    int64_t ns, nb;
    const float *sc = det_output_slot(n, s->scores, b, &ns, NULL);
    const float *bx = det_output_slot(n, s->boxes, b, &nb, NULL);
    if (!sc || !bx)
        return FFU_ERR_UNSUPPORTED;
    if (ns % 2 || nb != 2 * ns)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: UltraFace outputs of %lld scores and "
                             "%lld box values", n->path, (long long)ns, (long long)nb);
    float W = (float)n->in_w, H = (float)n->in_h;
    for (int64_t a = 0; a < ns / 2; a++) {
        float score = sc[2 * a + 1];
        if (!(score >= min_score))
            continue;
        const float *d = bx + 4 * a;
        det_cand *o = det_cands_push(out);
        if (!o)
            return FFU_ERR_NOMEM;
        o->score = score;
        o->box[0] = d[0] * W;
        o->box[1] = d[1] * H;
        o->box[2] = d[2] * W;
        o->box[3] = d[3] * H;
        float bw = o->box[2] - o->box[0], bh = o->box[3] - o->box[1];
        for (int j = 0; j < 5; j++) {
            o->kps[2 * j] = o->box[0] + uf_kps[2 * j] * bw;
            o->kps[2 * j + 1] = o->box[1] + uf_kps[2 * j + 1] * bh;
        }
    }
    return FFU_OK;
}

const det_family det_family_ultraface = {
    .name = "ultraface",
    .score = 0.85f,
    .nms_iou = 0.3f, /* the project's demo (iou_threshold 0.3) */
    .weighted_merge = 0,
    .fit = DET_FIT_STRETCH,
    .stride = 32,
    .dynamic_side = 320,
    .min_face_net = 18.0f,
    .init = uf_init,
    .fini = uf_fini,
    .decode = uf_decode,
};
