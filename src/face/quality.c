/* Face quality without a model: how big, how sharp and how frontal a face is, and one
 * 0..1 score from the three, so a caller can pick the best frame of a track or refuse a
 * face before enrolling it.
 *
 * - size: distance between the eye keypoints, pixels of the image.
 * - sharpness: variance of the 4-neighbour Laplacian over a 64x64 grey crop aligned on
 *   arcface_112_v2 (so the number does not depend on the face's size in the image; a
 *   small face blown up to 64 px is blurry, and that counts against it).
 * - roll: the angle of the eye line. yaw, pitch: simple geometric estimates, degrees,
 *   yaw > 0 when the nose points to the image's right, pitch > 0 when the face looks
 *   up. With 468/478 mesh points, from the mesh's own depth: yaw = atan2 of the depth
 *   change across the face (234 -> 454) against its width, pitch = the same along
 *   10 (forehead) -> 152 (chin). Otherwise from five points (the 68-point models' five
 *   included): in the levelled frame, the nose's sideways offset from the line through
 *   the eye and mouth midpoints, and its height t between eye line and mouth line
 *   against the frontal value 0.5: yaw = atan(offset / (0.6 I)), pitch =
 *   atan((0.5 - t) / 0.45), I = eye distance; 0.6 I is the nose depth that makes these
 *   yaws agree on average with the mesh's on 199 LFW faces (0.4 gave 1.5x larger ones).
 *   The mesh pitch carries +4.2 degrees so that LFW's mean is 0 like the keypoints'.
 * - score = f_size * f_sharp * f_pose, with f_size = min(1, I / 40 px) (40 px between
 *   the eyes is what a 112-px ArcFace crop holds), f_sharp = min(1, sharpness / 150),
 *   f_pose = max(0, 1 - (yaw^2 + pitch^2) / 50^2) (0 beyond 50 degrees off frontal). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "landmark_internal.h"

#define Q_CROP 64
#define Q_SIZE_FULL 40.0
#define Q_SHARP_FULL 150.0
#define Q_POSE_ZERO 50.0

static double deg(double r) { return r * (180.0 / M_PI); }

/* Variance of the Laplacian over the interior of a grey w x h buffer. */
static double laplacian_var(const uint8_t *g, int w, int h, int stride)
{
    double s = 0, ss = 0;
    int n = 0;
    for (int y = 1; y < h - 1; y++)
        for (int x = 1; x < w - 1; x++) {
            const uint8_t *p = g + (size_t)y * stride + x;
            int l = p[-1] + p[1] + p[-stride] + p[stride] - 4 * p[0];
            s += l;
            ss += (double)l * l;
            n++;
        }
    double mean = s / n;
    return ss / n - mean * mean;
}

static ffu_status sharpness(const ffu_image *img, const float kps[10], float *out)
{
    /* the aligned crop in the image's own format on the stack, then luma */
    uint8_t buf[Q_CROP * Q_CROP * 4], grey[Q_CROP * Q_CROP];
    int bpp = ffu_pixfmt_bpp(img->fmt);
    ffu_image crop;
    ffu_status st = ffu_image_wrap(&crop, img->fmt, Q_CROP, Q_CROP, buf, Q_CROP * bpp);
    double fwd[6], inv[6], wm[6];
    if (st || (st = face_align_transform(kps, "arcface_112_v2", Q_CROP, fwd)) ||
        (st = ffu_affine_invert(fwd, inv)))
        return st;
    face_warp_map(inv, wm);
    if ((st = ffu_image_warp_affine(img, &crop, wm, FFU_INTERP_BILINEAR, FFU_BORDER_REPLICATE,
                                    NULL)))
        return st;
    for (int i = 0; i < Q_CROP * Q_CROP; i++) {
        const uint8_t *p = buf + (size_t)i * bpp;
        if (bpp == 1) {
            grey[i] = p[0];
            continue;
        }
        int r = p[0], b = p[2];
        if (img->fmt == FFU_PIX_BGR24) {
            r = p[2];
            b = p[0];
        }
        grey[i] = (uint8_t)((4899 * r + 9617 * p[1] + 1868 * b + 8192) >> 14);
    }
    *out = (float)laplacian_var(grey, Q_CROP, Q_CROP, Q_CROP);
    return FFU_OK;
}

/* yaw, pitch from the mesh's depth (z grows away from the camera in MediaPipe's
 * output, so the side that turns away gets larger z). */
static void pose_from_mesh(const float *p, double roll, double *yaw, double *pitch)
{
    double c = cos(roll), s = sin(roll);
    const float *l = p + 3 * 234, *r = p + 3 * 454, *t = p + 3 * 10, *b = p + 3 * 152;
    double wx = c * (r[0] - l[0]) + s * (r[1] - l[1]);
    double hy = -s * (b[0] - t[0]) + c * (b[1] - t[1]);
    *yaw = deg(atan2((double)r[2] - l[2], wx));
    /* looking up brings the chin closer; +4.2: the mean over 199 LFW faces was -4.2 */
    *pitch = deg(atan2((double)t[2] - b[2], hy)) + 4.2;
}

static void pose_from_kps(const float *k, double roll, double *yaw, double *pitch)
{
    double c = cos(roll), s = sin(roll);
    /* levelled frame: u along the eyes, v down the face */
    double u[5], v[5];
    for (int i = 0; i < 5; i++) {
        u[i] = c * k[2 * i] + s * k[2 * i + 1];
        v[i] = -s * k[2 * i] + c * k[2 * i + 1];
    }
    double eu = 0.5 * (u[0] + u[1]), ev = 0.5 * (v[0] + v[1]);
    double mu = 0.5 * (u[3] + u[4]), mv = 0.5 * (v[3] + v[4]);
    double iod = fabs(u[1] - u[0]), d = mv - ev;
    if (iod < 1e-3 || d < 1e-3) {
        *yaw = *pitch = NAN;
        return;
    }
    double t = (v[2] - ev) / d;
    double axis_u = eu + (mu - eu) * t; /* the face's midline at the nose's height */
    *yaw = deg(atan((u[2] - axis_u) / (0.6 * iod)));
    *pitch = deg(atan((0.5 - t) / 0.45));
}

ffu_status ffu_face_quality_compute(const ffu_image *img, ffu_face *face)
{
    ffu_status st = face_check_input(img, face, "quality");
    if (st)
        return st;
    ffu_face_quality q = {NAN, NAN, NAN, NAN, NAN, NAN};
    const float *k = face->kps;
    double iod = hypot((double)k[2] - k[0], (double)k[3] - k[1]);
    if (iod < 1)
        return ffu_error_set(FFU_ERR_INVALID, "quality: the face has no eye keypoints");
    q.size = (float)iod;
    double roll = face_roll(face);
    q.roll = (float)deg(roll);
    if ((st = sharpness(img, k, &q.sharpness)))
        return st;
    double yaw, pitch;
    if (face->landmarks && face->num_landmarks >= 468)
        pose_from_mesh(face->landmarks, roll, &yaw, &pitch);
    else
        pose_from_kps(k, roll, &yaw, &pitch);
    q.yaw = (float)yaw;
    q.pitch = (float)pitch;
    double fs = fmin(1.0, iod / Q_SIZE_FULL), fb = fmin(1.0, q.sharpness / Q_SHARP_FULL);
    double fp = isfinite(yaw) && isfinite(pitch)
                    ? fmax(0.0, 1.0 - (yaw * yaw + pitch * pitch) / (Q_POSE_ZERO * Q_POSE_ZERO))
                    : 0.0;
    q.score = (float)(fs * fb * fp);
    face->quality = q;
    return FFU_OK;
}
