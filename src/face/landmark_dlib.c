/* The "dlib68" landmarker: dlib's 68-point ERT (ert.c) fed the way dlib's own pipeline
 * feeds it. The model was trained on boxes from dlib's HOG detector, and its answer
 * moves with the box, so the box is rebuilt from the detector's five keypoints through
 * the model's mean shape rather than taken from whichever detector ran (see ert.h);
 * the points come back in the face module's coordinates (pixel i covers [i, i+1),
 * dlib centres pixel i on i: +0.5) and give the five keypoints as MODELS.md defines
 * them. ffu_landmarker (landmark.c) owns the model and calls ert_face_run. */
#include <math.h>

#include "face/ert.h"
#include "landmark_internal.h"

/* iBUG 68 points averaged into each of the five keypoints */
static const struct {
    int first, count;
} kp68[FFU_FACE_NUM_KPS] = {{36, 6}, {42, 6}, {30, 1}, {48, 1}, {54, 1}};

/* The five keypoints from iBUG's 68 points, MODELS.md's rule: eyes = mean of 36-41 and
 * 42-47, nose 30, mouth corners 48 and 54. step = floats per point (2, or 3 with z). */
static void landmark_kps_from_68(const float *xy, int step, float kps[2 * FFU_FACE_NUM_KPS])
{
    for (int k = 0; k < FFU_FACE_NUM_KPS; k++) {
        double x = 0, y = 0;
        for (int i = kp68[k].first; i < kp68[k].first + kp68[k].count; i++) {
            x += xy[step * i];
            y += xy[step * i + 1];
        }
        kps[2 * k] = (float)(x / kp68[k].count);
        kps[2 * k + 1] = (float)(y / kp68[k].count);
    }
}

void landmark_face_from_68(const float *xy, ffu_face *f)
{
    float *keep = f->landmarks; /* the list slot's buffer */
    ffu_face_init(f);
    f->landmarks = keep;
    float x0 = xy[0], y0 = xy[1], x1 = xy[0], y1 = xy[1];
    for (int i = 1; i < 68; i++) {
        x0 = fminf(x0, xy[2 * i]);
        x1 = fmaxf(x1, xy[2 * i]);
        y0 = fminf(y0, xy[2 * i + 1]);
        y1 = fmaxf(y1, xy[2 * i + 1]);
    }
    f->box[0] = x0;
    f->box[1] = y0;
    f->box[2] = x1 - x0;
    f->box[3] = y1 - y0;
    landmark_kps_from_68(xy, 2, f->kps);
}

/* The box the model expects for a face, in dlib's convention: when the five keypoints
 * are set, the upright square in which the model's mean shape best fits them (eye
 * centres = mean of points 36-41 / 42-47, nose 30, mouth corners 48 / 54; one scale
 * and a shift, least squares), which is where dlib's HOG detector puts its box, so the
 * answer does not depend on which detector drew face->box; otherwise face->box as is. */
static void ert_face_box(const ert_model *m, const ffu_face *f, float box[4])
{
    box[0] = f->box[0], box[1] = f->box[1], box[2] = f->box[2], box[3] = f->box[3];
    if (ert_model_num_parts(m) != 68) return;
    int set = 0;
    for (int i = 0; i < 2 * FFU_FACE_NUM_KPS; i++)
        set |= f->kps[i] != 0;
    if (!set) return;
    float mean5[2 * FFU_FACE_NUM_KPS];
    landmark_kps_from_68(ert_model_mean_shape(m), 2, mean5);
    /* kps (face coordinates) -> dlib pixel centres */
    double u[FFU_FACE_NUM_KPS][2], mx = 0, my = 0, gx = 0, gy = 0, num = 0, den = 0;
    for (int k = 0; k < FFU_FACE_NUM_KPS; k++) {
        u[k][0] = f->kps[2 * k] - 0.5;
        u[k][1] = f->kps[2 * k + 1] - 0.5;
        mx += mean5[2 * k], my += mean5[2 * k + 1], gx += u[k][0], gy += u[k][1];
    }
    mx /= FFU_FACE_NUM_KPS, my /= FFU_FACE_NUM_KPS;
    gx /= FFU_FACE_NUM_KPS, gy /= FFU_FACE_NUM_KPS;
    for (int k = 0; k < FFU_FACE_NUM_KPS; k++) {
        double ax = mean5[2 * k] - mx, ay = mean5[2 * k + 1] - my;
        num += ax * (u[k][0] - gx) + ay * (u[k][1] - gy);
        den += ax * ax + ay * ay;
    }
    double s = den > 0 ? num / den : 0;
    /* keypoints that do not look like a face at this box's size: keep the box */
    if (!(s >= 4) || !(s <= 4.0 * FFU_IMAGE_MAX_DIM)) return;
    box[0] = (float)(gx - s * mx);
    box[1] = (float)(gy - s * my);
    box[2] = box[3] = (float)(s + 1); /* (1, 1) maps to left + width - 1 */
}

ffu_status ert_face_run(const ert_model *m, const ffu_image *img, ffu_face *f)
{
    ffu_status st = face_check_input(img, f, "dlib68 landmarks");
    if (st) return st;
    if (!m || ert_model_num_parts(m) != 68)
        return ffu_error_set(FFU_ERR_INVALID, "dlib68 landmarks: not a 68-point model");
    float box[4], pts[2 * 68];
    ert_face_box(m, f, box);
    if ((st = ert_predict(m, img, box, pts)) < 0) return st;
    if ((st = ffu_face_set_landmarks(f, 68)) < 0) return st;
    for (int i = 0; i < 68; i++) {
        f->landmarks[3 * i] = pts[2 * i] + 0.5f;
        f->landmarks[3 * i + 1] = pts[2 * i + 1] + 0.5f;
        f->landmarks[3 * i + 2] = 0;
    }
    landmark_kps_from_68(f->landmarks, 3, f->kps);
    return FFU_OK;
}
