/* Temporal smoothing of target faces on video (ffu_swap_smoother): landmarks from a
 * per-frame detector + landmarker jitter by a pixel or two, which makes a swapped face
 * shimmer. Each target is matched to the previous frame's faces by box IoU and its box,
 * keypoints and landmarks are low-pass filtered with a One-Euro-style filter (Casiez,
 * Roussel, Vogel 2012): an exponential smoother whose cut-off frequency rises with the
 * speed of motion, so a still face is held steady and a moving one is followed with
 * little lag. The speed is not measured per value (the noise itself would open the
 * filter): the face's motion is split into a least-squares affine part and per-point
 * residuals, each with its own speed and cut-off (filter_face). Must be called in frame
 * order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "face/face_internal.h"
#include "facefuse/swap.h"

#define SM_IOU_MATCH 0.3f /* boxes overlapping less are different faces */
#define SM_MAX_MISSED 3   /* frames a face may vanish and still keep its filter */
#define SM_D_CUTOFF 1.5   /* Hz: low-pass of the velocity estimate */
#define SM_MAX_VALUES (4 + 2 * FFU_FACE_NUM_KPS + 3 * 1024)

typedef struct sm_track {
    int used, missed, num_landmarks, n; /* n values: box, kps, landmarks */
    float box[4];
    float *x;      /* filtered values (SM_MAX_VALUES) */
    float *rspeed; /* per point: filtered residual speed, face widths per second */
    double gspeed; /* filtered speed of the affine part */
    double t;
} sm_track;

struct ffu_swap_smoother {
    double fc_min, beta;
    sm_track *tracks;
    int ntracks;
    double last_time;
    int have_time;
    int *match; /* per target: track index or -1 */
    int match_cap;
    float *raw; /* one face's values */
};

ffu_status ffu_swap_smoother_create(float strength, ffu_swap_smoother **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "smoother: NULL output");
    *out = NULL;
    if (strength == 0) strength = 0.5f;
    if (!(strength > 0 && strength <= 1))
        return ffu_error_set(FFU_ERR_INVALID, "smoother: strength %g outside 0..1",
                             (double)strength);
    ffu_swap_smoother *sm = calloc(1, sizeof *sm);
    if (!sm || !(sm->raw = malloc(SM_MAX_VALUES * sizeof *sm->raw))) {
        free(sm);
        return ffu_error_set(FFU_ERR_NOMEM, "smoother: out of memory");
    }
    /* strength 0.5: 1.2 Hz at rest (a 30 fps frame keeps ~80% of the old value),
     * strength 1: 0.3 Hz; the cut-off grows by beta Hz per face width per second
     * (numbers measured on the liveportrait clips, docs/SWAP.md) */
    double s = strength;
    sm->fc_min = 0.3 + 1.8 * (1.0 - s);
    sm->beta = 8.0 + 16.0 * (1.0 - s);
    *out = sm;
    return FFU_OK;
}

void ffu_swap_smoother_reset(ffu_swap_smoother *sm)
{
    if (!sm) return;
    for (int i = 0; i < sm->ntracks; i++)
        sm->tracks[i].used = 0;
    sm->have_time = 0;
}

void ffu_swap_smoother_destroy(ffu_swap_smoother *sm)
{
    if (!sm) return;
    for (int i = 0; i < sm->ntracks; i++) {
        free(sm->tracks[i].x);
        free(sm->tracks[i].rspeed);
    }
    free(sm->tracks);
    free(sm->match);
    free(sm->raw);
    free(sm);
}

static int gather(const ffu_face *f, float *v)
{
    memcpy(v, f->box, 4 * sizeof *v);
    memcpy(v + 4, f->kps, 2 * FFU_FACE_NUM_KPS * sizeof *v);
    int n = 4 + 2 * FFU_FACE_NUM_KPS;
    if (f->num_landmarks > 0 && f->landmarks) {
        memcpy(v + n, f->landmarks, (size_t)f->num_landmarks * 3 * sizeof *v);
        n += f->num_landmarks * 3;
    }
    return n;
}

static void scatter(ffu_face *f, const float *v)
{
    memcpy(f->box, v, 4 * sizeof *v);
    memcpy(f->kps, v + 4, 2 * FFU_FACE_NUM_KPS * sizeof *v);
    if (f->num_landmarks > 0 && f->landmarks)
        memcpy(f->landmarks, v + 4 + 2 * FFU_FACE_NUM_KPS,
               (size_t)f->num_landmarks * 3 * sizeof *v);
}

static int finite_all(const float *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

static ffu_status new_track(ffu_swap_smoother *sm, int *out)
{
    for (int i = 0; i < sm->ntracks; i++)
        if (!sm->tracks[i].used) {
            *out = i;
            return FFU_OK;
        }
    sm_track *t = realloc(sm->tracks, (size_t)(sm->ntracks + 1) * sizeof *t);
    if (!t) return ffu_error_set(FFU_ERR_NOMEM, "smoother: out of memory");
    sm->tracks = t;
    sm_track *n = &t[sm->ntracks];
    memset(n, 0, sizeof *n);
    n->x = malloc(SM_MAX_VALUES * sizeof *n->x);
    n->rspeed = malloc(SM_MAX_VALUES * sizeof *n->rspeed);
    if (!n->x || !n->rspeed) {
        free(n->x);
        free(n->rspeed);
        return ffu_error_set(FFU_ERR_NOMEM, "smoother: out of memory");
    }
    *out = sm->ntracks++;
    return FFU_OK;
}

static double alpha_for(double cutoff, double dt)
{
    double tau = 1.0 / (2.0 * M_PI * cutoff);
    return 1.0 / (1.0 + tau / dt);
}

/* One-Euro step for one face, in two parts. The motion since the last frame is split
 * into the affine map that best explains it (least squares over every point: head
 * translation, turn, scale; the noise of 468 points averages out in 6 parameters) and
 * each point's residual (expression: the mouth opening, blinks; and the noise). The
 * affine part is followed at a cut-off set by its own speed, each residual at a cut-off
 * set by that point's residual speed; speeds in face widths per second, low-passed at
 * SM_D_CUTOFF. A still face is held (both cut-offs low), a turning head is followed
 * without letting the noise through (the affine cut-off rises, the residual ones stay
 * low), and a mouth that opens is followed (its points' residual speed rises). */
static void filter_face(const ffu_swap_smoother *sm, sm_track *tr, const float *v, int n, double dt)
{
    double ad = alpha_for(SM_D_CUTOFF, dt);
    double width = tr->x[2] > 1 ? tr->x[2] : 1; /* the box's width */
    /* the 2-D points: keypoints, then landmarks (x, y of each triple) */
    int nk = FFU_FACE_NUM_KPS, nl = tr->num_landmarks, np = nk + nl;
    const int kp0 = 4, lm0 = 4 + 2 * FFU_FACE_NUM_KPS;
#define PX(arr, i) ((i) < nk ? (arr)[kp0 + 2 * (i)] : (arr)[lm0 + 3 * ((i)-nk)])
#define PY(arr, i) ((i) < nk ? (arr)[kp0 + 2 * (i) + 1] : (arr)[lm0 + 3 * ((i)-nk) + 1])
    /* least-squares affine map previous -> current about the centroids */
    double qx = 0, qy = 0, tx = 0, ty = 0;
    for (int i = 0; i < np; i++) {
        qx += PX(tr->x, i), qy += PY(tr->x, i);
        tx += PX(v, i), ty += PY(v, i);
    }
    qx /= np, qy /= np, tx /= np, ty /= np;
    double sxx = 0, sxy = 0, syy = 0, axx = 0, axy = 0, ayx = 0, ayy = 0;
    for (int i = 0; i < np; i++) {
        double dx = PX(tr->x, i) - qx, dy = PY(tr->x, i) - qy;
        double ex = PX(v, i) - tx, ey = PY(v, i) - ty;
        sxx += dx * dx, sxy += dx * dy, syy += dy * dy;
        axx += ex * dx, axy += ex * dy, ayx += ey * dx, ayy += ey * dy;
    }
    double det = sxx * syy - sxy * sxy, m00 = 1, m01 = 0, m10 = 0, m11 = 1;
    if (det > 1e-9 * (sxx + syy) * (sxx + syy) && np >= 3) {
        m00 = (axx * syy - axy * sxy) / det, m01 = (axy * sxx - axx * sxy) / det;
        m10 = (ayx * syy - ayy * sxy) / det, m11 = (ayy * sxx - ayx * sxy) / det;
    }
    /* the affine part's speed: mean displacement of the points */
    double gs = 0;
    for (int i = 0; i < np; i++) {
        double dx = PX(tr->x, i) - qx, dy = PY(tr->x, i) - qy;
        double gx = tx + m00 * dx + m01 * dy - PX(tr->x, i);
        double gy = ty + m10 * dx + m11 * dy - PY(tr->x, i);
        gs += sqrt(gx * gx + gy * gy);
    }
    gs /= np * dt * width;
    tr->gspeed += ad * (gs - tr->gspeed);
    double ag = alpha_for(sm->fc_min + sm->beta * tr->gspeed, dt);
    /* box: with the affine part's smoothing */
    for (int i = 0; i < 4; i++)
        tr->x[i] = (float)(tr->x[i] + ag * (v[i] - tr->x[i]));
    for (int i = 0; i < np; i++) {
        float *xp = i < nk ? &tr->x[kp0 + 2 * i] : &tr->x[lm0 + 3 * (i - nk)];
        const float *vp = i < nk ? &v[kp0 + 2 * i] : &v[lm0 + 3 * (i - nk)];
        double dx = xp[0] - qx, dy = xp[1] - qy;
        double px = tx + m00 * dx + m01 * dy, py = ty + m10 * dx + m11 * dy; /* affine image */
        double rx = vp[0] - px, ry = vp[1] - py;                             /* residual */
        double rs = sqrt(rx * rx + ry * ry) / (dt * width);
        tr->rspeed[i] = (float)(tr->rspeed[i] + ad * (rs - tr->rspeed[i]));
        double ar = alpha_for(sm->fc_min + sm->beta * tr->rspeed[i], dt);
        xp[0] = (float)(xp[0] + ag * (px - xp[0]) + ar * rx);
        xp[1] = (float)(xp[1] + ag * (py - xp[1]) + ar * ry);
        if (i >= nk) /* depth: no affine model; the point's own cut-off */
            xp[2] = (float)(xp[2] + ar * (vp[2] - xp[2]));
    }
#undef PX
#undef PY
}

ffu_status ffu_swap_smoother_apply(ffu_swap_smoother *sm, ffu_face_list *targets, double time)
{
    if (!sm || !targets) return ffu_error_set(FFU_ERR_INVALID, "smoother: NULL argument");
    if (!isfinite(time)) return ffu_error_set(FFU_ERR_INVALID, "smoother: time is not finite");
    if (sm->have_time && !(time > sm->last_time))
        return ffu_error_set(FFU_ERR_INVALID,
                             "smoother: time %.6f s does not follow %.6f s "
                             "(frames must come in order)",
                             time, sm->last_time);
    int n = targets->count;
    if (n > sm->match_cap) {
        int *m = realloc(sm->match, (size_t)n * sizeof *m);
        if (!m) return ffu_error_set(FFU_ERR_NOMEM, "smoother: out of memory");
        sm->match = m;
        sm->match_cap = n;
    }
    /* greedy IoU matching: repeatedly take the best remaining target-track pair */
    for (int i = 0; i < n; i++)
        sm->match[i] = -1;
    for (;;) {
        float best = SM_IOU_MATCH;
        int bi = -1, bt = -1;
        for (int i = 0; i < n; i++) {
            if (sm->match[i] >= 0) continue;
            for (int t = 0; t < sm->ntracks; t++) {
                sm_track *tr = &sm->tracks[t];
                if (!tr->used || tr->used == 2) continue; /* free, or taken this frame */
                float o = face_box_iou(targets->faces[i].box, tr->box);
                if (o > best) best = o, bi = i, bt = t;
            }
        }
        if (bi < 0) break;
        sm->match[bi] = bt;
        sm->tracks[bt].used = 2;
    }
    for (int i = 0; i < n; i++) {
        ffu_face *f = &targets->faces[i];
        int nv = gather(f, sm->raw);
        if (!finite_all(sm->raw, nv))
            continue; /* leave broken input alone, do not poison the filter */
        int t = sm->match[i];
        sm_track *tr = t >= 0 ? &sm->tracks[t] : NULL;
        if (tr && tr->num_landmarks == f->num_landmarks && tr->n == nv) {
            filter_face(sm, tr, sm->raw, nv, time - tr->t);
            scatter(f, tr->x);
        } else {
            if (!tr) {
                ffu_status st = new_track(sm, &t);
                if (st) return st;
                tr = &sm->tracks[t];
            }
            memcpy(tr->x, sm->raw, (size_t)nv * sizeof *tr->x);
            memset(tr->rspeed, 0, (size_t)nv * sizeof *tr->rspeed);
            tr->gspeed = 0;
            tr->n = nv;
            tr->num_landmarks = f->num_landmarks;
        }
        tr->used = 2;
        tr->missed = 0;
        tr->t = time;
        memcpy(tr->box, tr->x, sizeof tr->box);
    }
    for (int t = 0; t < sm->ntracks; t++) {
        sm_track *tr = &sm->tracks[t];
        if (tr->used == 2)
            tr->used = 1;
        else if (tr->used && ++tr->missed > SM_MAX_MISSED)
            tr->used = 0;
    }
    sm->last_time = time;
    sm->have_time = 1;
    return FFU_OK;
}
