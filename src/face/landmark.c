/* Landmarkers: dense points on a face found by a detector. FaceMesh (468 points, plus
 * 10 iris points from MediaPipe Iris), and 68-point ONNX models (PFLD, Peppa); dlib's
 * ERT plugs in through ert.h when it is built.
 *
 * Every model sees a rotation-normalised square crop: centred on the face box, the
 * box's longer side times the model's scale, turned so the eyes (kps 0 -> 1) are level.
 * The network's points go back through the same map into image coordinates, and the
 * five keypoints are recomputed from them. FaceMesh then runs a second pass on the crop
 * its own first answer defines (MediaPipe's tracking ROI: the points' bounding box in
 * the levelled frame, 1.5x), which makes the result nearly independent of the
 * detector's box convention. The numbers behind each choice are in docs/EVAL.md
 * ("Landmarks"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ert.h"
#include "landmark_internal.h"

#ifndef LM_MESH_SCALE
#define LM_MESH_SCALE 1.5 /* MediaPipe face_detection_to_roi: 1.5x the detection box */
#endif
#ifndef LM_MESH_PASSES
#define LM_MESH_PASSES 2
#endif
#ifndef LM_PFLD_SCALE
#define LM_PFLD_SCALE 1.2
#endif
#ifndef LM_PEPPA_SCALE
#define LM_PEPPA_SCALE 1.3
#endif
#define LM_IRIS_SCALE 2.3 /* MediaPipe iris ROI: 2.3x the eye-corner span */
/* Beyond this roll ERT (trained on upright faces) runs on a levelled crop instead. */
#define LM_DLIB_MAX_ROLL (15.0 * M_PI / 180.0)
#define LM_DLIB_CROP_MAX 2048 /* largest levelled crop side, pixels */

#define MESH_N 468
#define IRIS_N 76 /* 71 eye contour + 5 iris points per eye */

/* ---- shared geometry -------------------------------------------------------------- */

double face_roll(const ffu_face *f)
{
    double dx = (double)f->kps[2] - f->kps[0], dy = (double)f->kps[3] - f->kps[1];
    if (!isfinite(dx) || !isfinite(dy) || dx * dx + dy * dy < 1e-6)
        return 0;
    return atan2(dy, dx);
}

/* Map from network-input coordinates (in_w x in_h, continuous) to image coordinates for
 * a square region of side `size` centred on (cx, cy), rotated by `angle` radians (the
 * crop's x axis runs along (cos, sin) in the image), mirrored left-right when `flip`. */
static void face_roi_map(double cx, double cy, double size, double angle, int flip, int in_w,
                         int in_h, double m[6])
{
    double c = cos(angle), s = sin(angle);
    double ax = size / in_w * (flip ? -1 : 1), ay = size / in_h;
    /* image = centre + R(angle) * ((u - w/2) * ax, (v - h/2) * ay) */
    m[0] = c * ax;
    m[1] = -s * ay;
    m[3] = s * ax;
    m[4] = c * ay;
    m[2] = cx - m[0] * in_w * 0.5 - m[1] * in_h * 0.5;
    m[5] = cy - m[3] * in_w * 0.5 - m[4] * in_h * 0.5;
}

void face_box_roi_map(const ffu_face *f, double scale, int in_w, int in_h, double m[6])
{
    double w = f->box[2], h = f->box[3];
    double size = scale * (w > h ? w : h);
    face_roi_map(f->box[0] + w * 0.5, f->box[1] + h * 0.5, size, face_roll(f), 0, in_w, in_h,
                 m);
}

ffu_status face_check_input(const ffu_image *img, const ffu_face *f, const char *who)
{
    if (!img || !img->data[0] || img->width < 1 || img->height < 1)
        return ffu_error_set(FFU_ERR_INVALID, "%s: no image", who);
    if (img->fmt != FFU_PIX_RGB24 && img->fmt != FFU_PIX_BGR24 && img->fmt != FFU_PIX_RGBA32 &&
        img->fmt != FFU_PIX_GRAY8)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: face stages take RGB, BGR, RGBA or grey "
                             "images, not %s", who, ffu_pixfmt_name(img->fmt));
    if (!f)
        return ffu_error_set(FFU_ERR_INVALID, "%s: no face", who);
    for (int i = 0; i < 4; i++)
        if (!isfinite(f->box[i]))
            return ffu_error_set(FFU_ERR_INVALID, "%s: face box is not finite", who);
    if (!(f->box[2] >= 2 && f->box[3] >= 2) || f->box[2] > 4.0f * FFU_IMAGE_MAX_DIM ||
        f->box[3] > 4.0f * FFU_IMAGE_MAX_DIM)
        return ffu_error_set(FFU_ERR_INVALID, "%s: face box %gx%g is not a face", who,
                             (double)f->box[2], (double)f->box[3]);
    for (int i = 0; i < 2 * FFU_FACE_NUM_KPS; i++)
        if (!isfinite(f->kps[i]))
            return ffu_error_set(FFU_ERR_INVALID, "%s: face keypoints are not finite", who);
    return FFU_OK;
}

/* iBUG 68 -> FaceMesh: for each 300-W point the mesh vertex nearest to dlib's
 * prediction of it, averaged over 199 LFW faces (inter-ocular normalised; made
 * symmetric where the two sides disagreed). Derived on LFW, not on the landmarks68
 * test set; jaw points stay approximate (the mesh outline is not the 300-W jaw). */
const short face_mesh_to_ibug68[68] = {
    127, 234, 177, 215, 172, 136, 149, 148, 152, 377, 378, 365, 397, 435, 401, 454, 356, /* jaw */
    70,  63,  105, 66,  55,  285, 296, 334, 293, 300,                          /* brows */
    168, 197, 5,   4,   75,  97,  2,   326, 305,                               /* nose */
    7,   160, 158, 155, 153, 144, 382, 385, 387, 249, 373, 380,                /* eyes */
    61,  74,  37,  11,  267, 304, 291, 405, 314, 17,  84,  181,                /* outer lips */
    62,  38,  13,  268, 292, 316, 15,  86,                                     /* inner lips */
};

/* ---- the landmarker --------------------------------------------------------------- */

typedef enum lm_kind { LM_MESH, LM_PFLD, LM_PEPPA, LM_DLIB } lm_kind;

struct ffu_landmarker {
    lm_kind kind;
    face_net net;
    ert_model *ert;
    ffu_image crop; /* dlib68: levelled crop for rolled faces */
    face_net iris;
    int use_iris;
    int n_out; /* points the model gives */
    double scale;
    float raw[MESH_N * 3]; /* one pass's points in network-input units */
};

void ffu_landmarker_opts_default(ffu_landmarker_opts *o)
{
    if (o)
        memset(o, 0, sizeof *o); /* facemesh, no iris, cpu backend, all cores */
}

static int points_output_fits(size_t count, size_t want)
{
    return count >= want && count < want + 16;
}

/* Where the model declares the output find_output looks for (want values a face, as it
 * counts them), only that one is computed: FaceMesh's face flag and its 266-value head
 * take 18 of its 65 nodes. Models that declare no such shape keep every output. */
static ffu_status keep_points_output(face_net *n, size_t want)
{
    int no = face_net_num_outputs(n), at = -1, found = 0;
    for (int i = 0; i < no; i++) {
        ffu_nn_tensor t;
        int64_t count = 1;
        if (ffu_nn_model_output(n->model, i, &t) || t.rank < 1)
            continue;
        for (int k = 1; k < t.rank && count > 0; k++) /* dim 0: the batch */
            count = t.dims[k] > 0 ? count * t.dims[k] : -1;
        if (count > 0 && points_output_fits((size_t)count, want)) {
            at = i;
            found++;
        }
    }
    if (found != 1) /* none declared, or two candidates: keep them all */
        return FFU_OK;
    return face_net_keep_only(n, &at, 1);
}

ffu_status ffu_landmarker_create(const ffu_landmarker_opts *o, ffu_landmarker **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_landmarker_create: out is NULL");
    *out = NULL;
    ffu_landmarker_opts def;
    if (!o) {
        ffu_landmarker_opts_default(&def);
        o = &def;
    }
    ffu_landmarker *l = calloc(1, sizeof *l);
    if (!l)
        return ffu_error_set(FFU_ERR_NOMEM, "landmarker");
    /* dlib's ERT is not a network: check the family before opening anything */
    ffu_zoo_entry e;
    char path[1024];
    ffu_status st = ffu_zoo_resolve(FFU_ROLE_LANDMARKS, o->m.model, &e, path, sizeof path);
    if (st)
        goto fail;
    if (!strcmp(e.family, "dlib68")) {
        if (o->iris) {
            st = ffu_error_set(FFU_ERR_INVALID, "iris refinement needs a FaceMesh model, not "
                               "'%s'", e.name);
            goto fail;
        }
        l->kind = LM_DLIB;
        l->n_out = 68;
        if ((st = ert_model_load(path, &l->ert)))
            goto fail;
        if (ert_model_num_parts(l->ert) != 68) {
            st = ffu_error_set(FFU_ERR_UNSUPPORTED, "%s has %d parts; the landmarker takes "
                               "68-point shape predictors", path, ert_model_num_parts(l->ert));
            goto fail;
        }
        *out = l;
        return FFU_OK;
    }
    if (!strcmp(e.family, "facemesh")) {
        l->kind = LM_MESH;
        l->n_out = MESH_N;
        l->scale = LM_MESH_SCALE;
    } else if (!strcmp(e.family, "pfld")) {
        l->kind = LM_PFLD;
        l->n_out = 68;
        l->scale = LM_PFLD_SCALE;
    } else if (!strcmp(e.family, "peppa")) {
        l->kind = LM_PEPPA;
        l->n_out = 68;
        l->scale = LM_PEPPA_SCALE;
    } else {
        st = ffu_error_set(FFU_ERR_INVALID, "model '%s' (family %s) is not a landmark model "
                           "for dense points (use iris through the iris option)", e.name,
                           e.family);
        goto fail;
    }
    if ((st = face_net_load(&l->net, FFU_ROLE_LANDMARKS, &o->m, 0)) ||
        (st = keep_points_output(&l->net, l->kind == LM_MESH ? MESH_N * 3 : 136)) ||
        (st = face_net_start(&l->net)))
        goto fail;
    if (o->iris) {
        if (l->kind != LM_MESH) {
            st = ffu_error_set(FFU_ERR_INVALID, "iris refinement needs a FaceMesh model, not "
                               "'%s'", e.name);
            goto fail;
        }
        ffu_face_model_opts io = o->m;
        io.model = "iris";
        if ((st = face_net_open(&l->iris, FFU_ROLE_LANDMARKS, &io)))
            goto fail;
        if ((st = face_net_reshape(&l->iris, 2, l->iris.in_w, l->iris.in_h)))
            goto fail;
        l->use_iris = 1;
    }
    *out = l;
    return FFU_OK;
fail:
    ffu_landmarker_destroy(l);
    return st;
}

void ffu_landmarker_destroy(ffu_landmarker *l)
{
    if (!l)
        return;
    face_net_close(&l->net);
    face_net_close(&l->iris);
    ert_model_free(l->ert);
    ffu_image_release(&l->crop);
    free(l);
}

/* The output holding n*k floats (the mesh is not output 0 in the TF.js graph). */
static const float *find_output(const face_net *n, size_t want, size_t *got)
{
    int no = face_net_num_outputs(n);
    for (int i = 0; i < no; i++) {
        ffu_nn_tensor t;
        if (n->keep && !n->keep[i])
            continue; /* not computed (keep_points_output) */
        const float *p = face_net_output(n, i, &t);
        if (!p)
            return NULL;
        size_t count = t.nbytes / sizeof(float);
        if (points_output_fits(count, want)) {
            *got = count;
            return p;
        }
    }
    ffu_error_set(FFU_ERR_FORMAT, "%s: no output with %zu values", n->path, want);
    return NULL;
}

/* Runs the main net on the crop m and leaves its points in l->raw (network units). */
static ffu_status run_pass(ffu_landmarker *l, const ffu_image *img, const double m[6])
{
    ffu_status st;
    if ((st = face_net_fill_warp(&l->net, 0, img, m)) || (st = face_net_run(&l->net)))
        return st;
    size_t got = 0;
    if (l->kind == LM_MESH) {
        const float *p = find_output(&l->net, MESH_N * 3, &got);
        if (!p)
            return FFU_ERR_FORMAT;
        memcpy(l->raw, p, MESH_N * 3 * sizeof(float));
        return FFU_OK;
    }
    /* 68-point models give x, y in 0..1 of the crop (Peppa appends pose and attributes) */
    const float *p = find_output(&l->net, 136, &got);
    if (!p)
        return FFU_ERR_FORMAT;
    for (int i = 0; i < 68; i++) {
        l->raw[3 * i] = p[2 * i] * (float)l->net.in_w;
        l->raw[3 * i + 1] = p[2 * i + 1] * (float)l->net.in_h;
        l->raw[3 * i + 2] = 0;
    }
    return FFU_OK;
}

static void map_points(const float *raw, int n, const double m[6], float *out)
{
    double zs = sqrt(fabs(m[0] * m[4] - m[1] * m[3])); /* z in the same units as x, y */
    for (int i = 0; i < n; i++) {
        double u = raw[3 * i], v = raw[3 * i + 1];
        out[3 * i] = (float)(m[0] * u + m[1] * v + m[2]);
        out[3 * i + 1] = (float)(m[3] * u + m[4] * v + m[5]);
        out[3 * i + 2] = (float)(raw[3 * i + 2] * zs);
    }
}

/* MediaPipe's tracking ROI from mesh points in image coordinates: rotation from the eye
 * corners 33 -> 263, the points' bounding box in that frame, `scale` times its longer
 * side. */
static void mesh_roi(const float *pts, double scale, int in_w, int in_h, double m[6])
{
    double ang = atan2((double)pts[3 * 263 + 1] - pts[3 * 33 + 1],
                       (double)pts[3 * 263] - pts[3 * 33]);
    double c = cos(ang), s = sin(ang);
    double u0 = 1e30, u1 = -1e30, v0 = 1e30, v1 = -1e30;
    for (int i = 0; i < MESH_N; i++) {
        double x = pts[3 * i], y = pts[3 * i + 1];
        double u = c * x + s * y, v = -s * x + c * y;
        u0 = u < u0 ? u : u0;
        u1 = u > u1 ? u : u1;
        v0 = v < v0 ? v : v0;
        v1 = v > v1 ? v : v1;
    }
    double uc = (u0 + u1) * 0.5, vc = (v0 + v1) * 0.5;
    double size = scale * ((u1 - u0) > (v1 - v0) ? (u1 - u0) : (v1 - v0));
    face_roi_map(c * uc - s * vc, s * uc + c * vc, size, ang, 0, in_w, in_h, m);
}

static void compose(const double a[6], const double b[6], double out[6])
{
    /* out = a o b (apply b first) */
    double r[6];
    r[0] = a[0] * b[0] + a[1] * b[3];
    r[1] = a[0] * b[1] + a[1] * b[4];
    r[2] = a[0] * b[2] + a[1] * b[5] + a[2];
    r[3] = a[3] * b[0] + a[4] * b[3];
    r[4] = a[3] * b[1] + a[4] * b[4];
    r[5] = a[3] * b[2] + a[4] * b[5] + a[5];
    memcpy(out, r, sizeof r);
}

/* Iris: one crop per eye, centred between its corners, 2.3x their span, levelled along
 * them. The net was trained on the image-left eye: the image-right one (the subject's
 * left) is mirrored. Checked on 199 LFW faces: so mirrored, the net's eye point 0 lands
 * on the mesh's outer corner (33 / 263) within 0.04 IOD; mirroring the other eye puts
 * it 0.26 IOD away, on the inner corner. Appends 5 points per iris (centre, then 4 on
 * the rim) in MediaPipe's order: 468-472 the subject's right iris (by mesh 33/133),
 * 473-477 the left (by 362/263). */
static ffu_status run_iris(ffu_landmarker *l, const ffu_image *img, const double mesh_m[6],
                           float *pts)
{
    static const short corners[2][2] = {{33, 133}, {362, 263}}; /* image-left -> right */
    double em[2][6];
    for (int e = 0; e < 2; e++) {
        const float *a = &l->raw[3 * corners[e][0]], *b = &l->raw[3 * corners[e][1]];
        double dx = (double)b[0] - a[0], dy = (double)b[1] - a[1];
        double span = sqrt(dx * dx + dy * dy);
        double r[6];
        face_roi_map((a[0] + b[0]) * 0.5, (a[1] + b[1]) * 0.5, LM_IRIS_SCALE * span,
                     atan2(dy, dx), e == 1, l->iris.in_w, l->iris.in_h, r);
        compose(mesh_m, r, em[e]);
        ffu_status st = face_net_fill_warp(&l->iris, e, img, em[e]);
        if (st)
            return st;
    }
    ffu_status st = face_net_run(&l->iris);
    if (st)
        return st;
    size_t got = 0;
    const float *p = find_output(&l->iris, 2 * IRIS_N * 3, &got);
    if (!p)
        return FFU_ERR_FORMAT;
    for (int e = 0; e < 2; e++) {
        const float *iris = p + (size_t)e * IRIS_N * 3 + 71 * 3;
        float *dst = pts + 3 * (MESH_N + 5 * e);
        map_points(iris, 5, em[e], dst);
        /* the iris net's depth is relative to its own crop: take the eye corners' mean */
        float z = 0.5f * (pts[3 * corners[e][0] + 2] + pts[3 * corners[e][1] + 2]);
        for (int k = 0; k < 5; k++)
            dst[3 * k + 2] = z;
    }
    return FFU_OK;
}

static void mean_pt(const float *pts, const short *idx, int n, float *x, float *y)
{
    double sx = 0, sy = 0;
    for (int i = 0; i < n; i++) {
        sx += pts[3 * idx[i]];
        sy += pts[3 * idx[i] + 1];
    }
    *x = (float)(sx / n);
    *y = (float)(sy / n);
}

/* Five keypoints from the dense points (slot 0 = the subject's right eye = image-left
 * when upright; see face.h), by MODELS.md's 68-point rule (eyes = mean(36-41),
 * mean(42-47); nose = 30; mouth = 48, 54) applied to the model's own 68 points or to
 * the mesh's 68 subset above: mesh eyes = mean(7, 160, 158, 155, 153, 144) and
 * mean(382, 385, 387, 249, 373, 380), nose 4, mouth 61, 291; with iris, the eyes are
 * the iris centres 468 and 473 instead. */
static void kps_from_points(const float *pts, int n, float kps[10])
{
    short map[68];
    for (int i = 0; i < 68; i++)
        map[i] = n >= MESH_N ? face_mesh_to_ibug68[i] : (short)i;
    short re[6], le[6];
    for (int i = 0; i < 6; i++) {
        re[i] = map[36 + i];
        le[i] = map[42 + i];
    }
    mean_pt(pts, re, 6, &kps[0], &kps[1]);
    mean_pt(pts, le, 6, &kps[2], &kps[3]);
    if (n >= MESH_N + 10) {
        kps[0] = pts[3 * 468];
        kps[1] = pts[3 * 468 + 1];
        kps[2] = pts[3 * 473];
        kps[3] = pts[3 * 473 + 1];
    }
    kps[4] = pts[3 * map[30]];
    kps[5] = pts[3 * map[30] + 1];
    kps[6] = pts[3 * map[48]];
    kps[7] = pts[3 * map[48] + 1];
    kps[8] = pts[3 * map[54]];
    kps[9] = pts[3 * map[54] + 1];
}

/* dlib's ERT on the face through ert_face_run (landmark_dlib.c), which rebuilds dlib's
 * HOG-style box from the keypoints. Upright faces run on the image itself, so the
 * points equal dlib's for that box; ERT was trained on upright faces only, so a face
 * rolled beyond LM_DLIB_MAX_ROLL runs on a levelled crop and its points are mapped
 * back. */
static ffu_status run_dlib(ffu_landmarker *l, const ffu_image *img, ffu_face *face)
{
    double roll = face_roll(face);
    if (fabs(roll) <= LM_DLIB_MAX_ROLL)
        return ert_face_run(l->ert, img, face);
    /* the crop: 2.5x the box around the keypoints' centre, at the image's own scale
     * (ERT's answer depends on the resolution it sees) up to LM_DLIB_CROP_MAX pixels */
    const float *k = face->kps;
    double cx = 0, cy = 0;
    for (int i = 0; i < FFU_FACE_NUM_KPS; i++) {
        cx += k[2 * i] / (double)FFU_FACE_NUM_KPS;
        cy += k[2 * i + 1] / (double)FFU_FACE_NUM_KPS;
    }
    double w = face->box[2] > face->box[3] ? face->box[2] : face->box[3];
    int side = (int)ceil(2.5 * w);
    side = side < 16 ? 16 : side > LM_DLIB_CROP_MAX ? LM_DLIB_CROP_MAX : side;
    ffu_status st;
    if (l->crop.fmt != img->fmt || l->crop.width < side) {
        /* grows only: a handle stops allocating once it has seen its largest face */
        ffu_image_release(&l->crop);
        if ((st = ffu_image_create(&l->crop, img->fmt, side, side)))
            return st;
    }
    ffu_image view;
    if ((st = ffu_image_view(&view, &l->crop, 0, 0, side, side)))
        return st;
    double m[6], inv[6], wm[6];
    face_roi_map(cx, cy, 2.5 * w, roll, 0, side, side, m);
    if ((st = ffu_affine_invert(m, inv)))
        return st;
    face_warp_map(m, wm);
    if ((st = ffu_image_warp_affine(img, &view, wm, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT,
                                    NULL)))
        return st;
    /* the face as seen in the crop; it borrows the caller's landmark buffer */
    ffu_face t;
    ffu_face_init(&t);
    for (int i = 0; i < FFU_FACE_NUM_KPS; i++)
        ffu_transform_point(inv, k[2 * i], k[2 * i + 1], &t.kps[2 * i], &t.kps[2 * i + 1]);
    double s = side / (2.5 * w);
    t.box[2] = (float)(face->box[2] * s);
    t.box[3] = (float)(face->box[3] * s);
    t.box[0] = (float)(side * 0.5 - t.box[2] * 0.5);
    t.box[1] = (float)(side * 0.5 - t.box[3] * 0.5);
    t.landmarks = face->landmarks;
    if ((st = ert_face_run(l->ert, &view, &t)))
        return st;
    float *pts = face->landmarks;
    for (int i = 0; i < 68; i++) {
        double u = pts[3 * i], v = pts[3 * i + 1];
        pts[3 * i] = (float)(m[0] * u + m[1] * v + m[2]);
        pts[3 * i + 1] = (float)(m[3] * u + m[4] * v + m[5]);
    }
    kps_from_points(pts, 68, face->kps);
    return FFU_OK;
}

ffu_status ffu_landmarker_run(ffu_landmarker *l, const ffu_image *img, ffu_face *face)
{
    if (!l)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_landmarker_run: no landmarker");
    ffu_status st = face_check_input(img, face, "landmarks");
    if (st)
        return st;
    int n = l->n_out + (l->use_iris ? 10 : 0);
    if ((st = ffu_face_set_landmarks(face, n)))
        return st;
    float *pts = face->landmarks;
    if (l->kind == LM_DLIB) {
        if ((st = run_dlib(l, img, face)))
            goto fail;
        return FFU_OK;
    }
    double m[6];
    face_box_roi_map(face, l->scale, l->net.in_w, l->net.in_h, m);
    if ((st = run_pass(l, img, m)))
        goto fail;
    map_points(l->raw, l->n_out, m, pts);
    if (l->kind == LM_MESH) {
        for (int pass = 1; pass < LM_MESH_PASSES; pass++) {
            mesh_roi(pts, LM_MESH_SCALE, l->net.in_w, l->net.in_h, m);
            if ((st = run_pass(l, img, m)))
                goto fail;
            map_points(l->raw, l->n_out, m, pts);
        }
        if (l->use_iris && (st = run_iris(l, img, m, pts)))
            goto fail;
    }
    kps_from_points(pts, n, face->kps);
    return FFU_OK;
fail:
    face->num_landmarks = 0;
    return st;
}
