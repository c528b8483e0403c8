/* YuNet decoder (libfacedetection / OpenCV zoo 2023mar and the dynamic exports).
 *
 * Twelve outputs cls/obj/bbox/kps x strides 8, 16, 32, one anchor per cell, rows in
 * raster order. As OpenCV's FaceDetectorYN: score = sqrt(clamp(cls) * clamp(obj)),
 * centre = (cell + d) * stride, size = exp(d) * stride, keypoints = (cell + d) * stride;
 * the input is B,G,R 0..255 (zoo row). Keypoint order: right eye, left eye (the
 * subject's: image-left first), nose tip, right and left mouth corners. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

static const int yn_strides[3] = {8, 16, 32};

typedef struct yn_state {
    int cls[3], obj[3], bbox[3], kps[3]; /* output index per stride */
} yn_state;

static void yn_fini(void *p) { free(p); }

static ffu_status yn_init(face_net *n, void **state)
{
    *state = NULL;
    yn_state *s = calloc(1, sizeof *s);
    if (!s)
        return ffu_error_set(FFU_ERR_NOMEM, "YuNet state");
    int no = face_net_num_outputs(n);
    for (int i = 0; i < 3; i++) {
        char name[16];
        int *dst[4] = {&s->cls[i], &s->obj[i], &s->bbox[i], &s->kps[i]};
        const char *kind[4] = {"cls", "obj", "bbox", "kps"};
        for (int k = 0; k < 4; k++) {
            snprintf(name, sizeof name, "%s_%d", kind[k], yn_strides[i]);
            int idx = face_net_output_index(n, name);
            /* unnamed exports keep the cls, obj, bbox, kps x (8, 16, 32) order */
            if (idx < 0 && no == 12)
                idx = k * 3 + i;
            if (idx < 0) {
                free(s);
                return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: no YuNet output '%s' (%d outputs)",
                                     n->path, name, no);
            }
            *dst[k] = idx;
        }
    }
    *state = s;
    return FFU_OK;
}

static float clamp01(float v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

static ffu_status yn_decode(void *state, const face_net *n, int b, float min_score,
                            det_cands *out)
{
    const yn_state *s = state;
    for (int i = 0; i < 3; i++) {
        int st = yn_strides[i];
        int cols = n->in_w / st, rows = n->in_h / st;
        int64_t c0, c1, c2, c3;
        const float *cls = det_output_slot(n, s->cls[i], b, &c0, NULL);
        const float *obj = det_output_slot(n, s->obj[i], b, &c1, NULL);
        const float *bb = det_output_slot(n, s->bbox[i], b, &c2, NULL);
        const float *kp = det_output_slot(n, s->kps[i], b, &c3, NULL);
        if (!cls || !obj || !bb || !kp)
            return FFU_ERR_UNSUPPORTED;
        int64_t cells = (int64_t)rows * cols;
        if (c0 != cells || c1 != cells || c2 != 4 * cells || c3 != 10 * cells)
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: stride-%d outputs hold %lld cells, "
                                 "want %dx%d", n->path, st, (long long)c0, cols, rows);
        float min_prod = min_score * min_score;
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                size_t idx = (size_t)r * cols + c;
                float prod = clamp01(cls[idx]) * clamp01(obj[idx]);
                if (!(prod >= min_prod))
                    continue;
                const float *d = bb + 4 * idx;
                float cx = (c + d[0]) * st, cy = (r + d[1]) * st;
                float w = expf(d[2]) * st, h = expf(d[3]) * st;
                det_cand *o = det_cands_push_box(out, sqrtf(prod), cx, cy, w, h);
                if (!o)
                    return FFU_ERR_NOMEM;
                const float *k = kp + 10 * idx;
                for (int j = 0; j < 5; j++) {
                    o->kps[2 * j] = (c + k[2 * j]) * st;
                    o->kps[2 * j + 1] = (r + k[2 * j + 1]) * st;
                }
            }
    }
    return FFU_OK;
}

const det_family det_family_yunet = {
    .name = "yunet",
    .score = 0.75f,
    .nms_iou = 0.3f, /* OpenCV zoo demo */
    .weighted_merge = 0,
    .fit = DET_FIT_LETTERBOX,
    .stride = 32,
    .dynamic_side = 1280,
    .min_face_net = 24.0f,
    .init = yn_init,
    .fini = yn_fini,
    .decode = yn_decode,
};
