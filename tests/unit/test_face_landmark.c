/* Landmarkers on real faces: NME against the 300-W annotations of ../shared/data/
 * landmarks68 for every landmark model (FaceMesh via its 68-point subset, PFLD, Peppa,
 * dlib's ERT), the same points from a rotated copy of a face, iris points inside the
 * eyes, five keypoints refined from the dense points, and bad input refused.
 *
 * Faces are given by hand from the annotations (box = the 68 points' bounding box,
 * keypoints by MODELS.md's 68-point rule), so the numbers do not depend on a detector.
 * The .pts files count pixels from 1 (300-W's convention, see docs/EVAL.md): a point
 * (x, y) there is (x - 0.5, y - 0.5) in the face module's continuous coordinates.
 * The NME table this prints is the one in docs/EVAL.md ("Landmarks"). */
#include <dirent.h>

#include "face/landmark_internal.h"
#include "facefuse/face.h"
#include "test.h"

#define L68_MAX 64

typedef struct l68_set {
    int n;
    char path[L68_MAX][512];
    float gt[L68_MAX][136];
} l68_set;

static int load_pts(const char *path, float *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    for (int i = 0; i < 68; i++)
        if (fscanf(f, "%f %f", &p[2 * i], &p[2 * i + 1]) != 2) {
            fclose(f);
            return -1;
        } else {
            /* 300-W's 1-based pixel centres -> continuous coordinates */
            p[2 * i] -= 0.5f;
            p[2 * i + 1] -= 0.5f;
        }
    fclose(f);
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(a, b); }

/* The annotated images, sorted by name; NULL when the data is absent. */
static const l68_set *l68(void)
{
    static l68_set s;
    static int loaded;
    char dir[512];
    if (loaded)
        return s.n ? &s : NULL;
    loaded = 1;
    if (!test_shared_path("data/landmarks68", dir, sizeof dir))
        return NULL;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    struct dirent *e;
    char names[L68_MAX][256];
    int n = 0;
    while ((e = readdir(d)) && n < L68_MAX) {
        size_t len = strlen(e->d_name);
        if (len > 4 && len < 200 && !strcmp(e->d_name + len - 4, ".jpg"))
            snprintf(names[n++], sizeof names[0], "%.*s", (int)(len - 4), e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], cmp_str);
    for (int i = 0; i < n; i++) {
        char pts[600];
        snprintf(pts, sizeof pts, "%.300s/%.150s.pts", dir, names[i]);
        if (load_pts(pts, s.gt[s.n]))
            continue;
        snprintf(s.path[s.n], sizeof s.path[0], "%.300s/%.150s.jpg", dir, names[i]);
        s.n++;
    }
    return s.n ? &s : NULL;
}

static double iod_of(const float *gt) { return hypot(gt[72] - gt[90], gt[73] - gt[91]); }

/* Index of iBUG point i in a face's landmarks (itself, or its FaceMesh vertex). */
static int lm_index(const ffu_face *f, int i)
{
    return f->num_landmarks == 68 ? i : face_mesh_to_ibug68[i];
}

typedef struct nme {
    double all, inner, corners, kps;
    int n;
} nme;

/* Runs a landmarker on every annotated face; 1 when run, 0 when the model is absent
 * (skip), -1 on failure. */
static int nme_of(const char *model, int iris, nme *out)
{
    memset(out, 0, sizeof *out);
    const l68_set *s = l68();
    if (!s)
        return 0;
    ffu_landmarker_opts o;
    ffu_landmarker_opts_default(&o);
    o.m.model = model;
    o.iris = iris;
    ffu_landmarker *l = NULL;
    ffu_status st = ffu_landmarker_create(&o, &l);
    if (st == FFU_ERR_NOT_FOUND || st == FFU_ERR_UNSUPPORTED) {
        printf("  %s: %s\n", model, ffu_error_message());
        return 0;
    }
    if (st) {
        fprintf(stderr, "%s: %s\n", model, ffu_error_message());
        return -1;
    }
    static const int corners[6] = {36, 39, 42, 45, 48, 54};
    ffu_face_list list = {0};
    int rc = 1;
    for (int k = 0; k < s->n; k++) {
        ffu_image img = {0};
        if (ffu_image_load(s->path[k], FFU_PIX_RGB24, &img)) {
            rc = -1;
            break;
        }
        ffu_face_list_clear(&list);
        ffu_face *f = ffu_face_list_push(&list);
        landmark_face_from_68(s->gt[k], f);
        float kgt[10];
        memcpy(kgt, f->kps, sizeof kgt);
        st = ffu_landmarker_run(l, &img, f);
        ffu_image_release(&img);
        if (st) {
            fprintf(stderr, "%s on %s: %s\n", model, s->path[k], ffu_error_message());
            rc = -1;
            break;
        }
        const float *gt = s->gt[k];
        double iod = iod_of(gt), a = 0, in = 0, c = 0, kp = 0;
        for (int i = 0; i < 68; i++) {
            int j = lm_index(f, i);
            double d = hypot(f->landmarks[3 * j] - gt[2 * i], f->landmarks[3 * j + 1] - gt[2 * i + 1]);
            a += d;
            if (i >= 17)
                in += d;
        }
        for (int i = 0; i < 6; i++) {
            int j = lm_index(f, corners[i]);
            c += hypot(f->landmarks[3 * j] - gt[2 * corners[i]],
                       f->landmarks[3 * j + 1] - gt[2 * corners[i] + 1]);
        }
        for (int i = 0; i < 5; i++)
            kp += hypot(f->kps[2 * i] - kgt[2 * i], f->kps[2 * i + 1] - kgt[2 * i + 1]);
        out->all += a / 68 / iod;
        out->inner += in / 51 / iod;
        out->corners += c / 6 / iod;
        out->kps += kp / 5 / iod;
        out->n++;
    }
    ffu_face_list_free(&list);
    ffu_landmarker_destroy(l);
    if (out->n) {
        out->all /= out->n;
        out->inner /= out->n;
        out->corners /= out->n;
        out->kps /= out->n;
    }
    if (rc == 1)
        printf("  NME %-14s%s faces %2d  all-68 %.4f  inner-51 %.4f  corners-6 %.4f  "
               "five-points %.4f\n", model, iris ? "+iris" : "     ", out->n, out->all,
               out->inner, out->corners, out->kps);
    return rc;
}

/* Each bound sits ~25% above the value measured when the model's conventions were
 * settled (docs/EVAL.md), so a wrong crop, normalisation or channel order fails. */
static void check_nme(const char *model, int iris, double max_all, double max_corners)
{
    nme r;
    int rc = nme_of(model, iris, &r);
    if (rc == 0)
        TEST_SKIP("landmark model or ../shared/data/landmarks68 not available");
    CHECK(rc == 1);
    CHECK(r.n >= 20);
    CHECK(r.all < max_all);
    CHECK(r.corners < max_corners);
    CHECK(r.kps < max_corners);
}

static void test_facemesh_nme(void) { check_nme("facemesh", 0, 0.060, 0.031); }
static void test_facemesh_iris_nme(void) { check_nme("facemesh", 1, 0.060, 0.035); }
static void test_facemesh_onnx_nme(void) { check_nme("facemesh-onnx", 0, 0.060, 0.031); }
static void test_pfld_nme(void) { check_nme("pfld", 0, 0.043, 0.029); }
static void test_peppa_nme(void) { check_nme("peppa", 0, 0.061, 0.045); }
static void test_dlib68_nme(void) { check_nme("dlib68", 0, 0.034, 0.024); }

/* ---- rotation ---------------------------------------------------------------------- */

/* dst = img turned by `deg` degrees about its centre onto a canvas big enough for it;
 * fwd = the map from img to dst (continuous coordinates). */
static ffu_status rotate_image(const ffu_image *img, double deg, ffu_image *dst, double fwd[6])
{
    double a = deg * M_PI / 180, c = cos(a), s = sin(a);
    int W = img->width, H = img->height;
    int dw = (int)ceil(fabs(c) * W + fabs(s) * H), dh = (int)ceil(fabs(s) * W + fabs(c) * H);
    ffu_status st = ffu_image_create(dst, img->fmt, dw, dh);
    if (st)
        return st;
    /* x' = R (x - centre) + centre' */
    fwd[0] = c;
    fwd[1] = -s;
    fwd[3] = s;
    fwd[4] = c;
    fwd[2] = dw * 0.5 - (c * W * 0.5 - s * H * 0.5);
    fwd[5] = dh * 0.5 - (s * W * 0.5 + c * H * 0.5);
    double inv[6], wm[6];
    if ((st = ffu_affine_invert(fwd, inv)))
        return st;
    face_warp_map(inv, wm);
    return ffu_image_warp_affine(img, dst, wm, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT, NULL);
}

/* Landmarks of a face found on a rotated copy, mapped back, against the upright run:
 * mean distance over the iBUG 68 in inter-ocular units. */
static void check_rotation(const char *model, double deg, double max_diff)
{
    const l68_set *s = l68();
    if (!s)
        TEST_SKIP("../shared/data/landmarks68 not available");
    ffu_landmarker_opts o;
    ffu_landmarker_opts_default(&o);
    o.m.model = model;
    ffu_landmarker *l = NULL;
    ffu_status st = ffu_landmarker_create(&o, &l);
    if (st == FFU_ERR_NOT_FOUND || st == FFU_ERR_UNSUPPORTED)
        TEST_SKIP("landmark model not installed");
    CHECK(st == FFU_OK);
    ffu_face_list list = {0};
    double worst = 0;
    for (int k = 0; k < s->n && k < 6; k++) {
        ffu_image img = {0}, rot = {0};
        double fwd[6], inv[6];
        CHECK(ffu_image_load(s->path[k], FFU_PIX_RGB24, &img) == FFU_OK);
        CHECK(rotate_image(&img, deg, &rot, fwd) == FFU_OK);
        CHECK(ffu_affine_invert(fwd, inv) == FFU_OK);
        ffu_face_list_clear(&list);
        ffu_face *up = ffu_face_list_push(&list);
        landmark_face_from_68(s->gt[k], up);
        CHECK(ffu_landmarker_run(l, &img, up) == FFU_OK);
        /* the rotated face as a detector would report it: the bounding box of the
         * turned points, the turned keypoints */
        float turned[136];
        for (int i = 0; i < 68; i++)
            ffu_transform_point(fwd, s->gt[k][2 * i], s->gt[k][2 * i + 1], &turned[2 * i],
                                &turned[2 * i + 1]);
        ffu_face *rf = ffu_face_list_push(&list);
        up = &list.faces[0];
        landmark_face_from_68(turned, rf);
        CHECK(ffu_landmarker_run(l, &rot, rf) == FFU_OK);
        CHECK_EQ_INT(rf->num_landmarks, up->num_landmarks);
        double sum = 0;
        for (int i = 0; i < 68; i++) {
            int j = lm_index(up, i);
            float bx, by;
            ffu_transform_point(inv, rf->landmarks[3 * j], rf->landmarks[3 * j + 1], &bx, &by);
            sum += hypot(bx - up->landmarks[3 * j], by - up->landmarks[3 * j + 1]);
        }
        double diff = sum / 68 / iod_of(s->gt[k]);
        worst = fmax(worst, diff);
        ffu_image_release(&img);
        ffu_image_release(&rot);
    }
    printf("  %s rotated %g deg: worst mean difference %.4f IOD\n", model, deg, worst);
    ffu_face_list_free(&list);
    ffu_landmarker_destroy(l);
    CHECK(worst < max_diff);
}

/* 90 degrees: the crop is the same pixels turned, so only resampling differs. */
static void test_facemesh_rotated_90(void) { check_rotation("facemesh", 90, 0.01); }
/* 30 degrees: the box grows and the pixels are resampled twice. */
static void test_facemesh_rotated_30(void) { check_rotation("facemesh", 30, 0.03); }
static void test_pfld_rotated_30(void) { check_rotation("pfld", 30, 0.03); }
/* dlib's ERT runs on a levelled crop beyond 15 degrees */
static void test_dlib68_rotated_30(void) { check_rotation("dlib68", 30, 0.03); }

/* ---- iris, keypoints --------------------------------------------------------------- */

/* Is (x, y) inside the polygon p (n points, x,y pairs)? */
static int inside(const float *p, int n, float x, float y)
{
    int in = 0;
    for (int i = 0, j = n - 1; i < n; j = i++)
        if ((p[2 * i + 1] > y) != (p[2 * j + 1] > y) &&
            x < (p[2 * j] - p[2 * i]) * (y - p[2 * i + 1]) / (p[2 * j + 1] - p[2 * i + 1]) +
                    p[2 * i])
            in = !in;
    return in;
}

static void test_iris_inside_the_eyes(void)
{
    const l68_set *s = l68();
    if (!s)
        TEST_SKIP("../shared/data/landmarks68 not available");
    ffu_landmarker_opts o;
    ffu_landmarker_opts_default(&o);
    o.iris = 1;
    ffu_landmarker *l = NULL;
    ffu_status st = ffu_landmarker_create(&o, &l);
    if (st == FFU_ERR_NOT_FOUND)
        TEST_SKIP("facemesh / iris not installed");
    CHECK(st == FFU_OK);
    ffu_face_list list = {0};
    int in = 0, total = 0;
    for (int k = 0; k < s->n; k++) {
        ffu_image img = {0};
        CHECK(ffu_image_load(s->path[k], FFU_PIX_RGB24, &img) == FFU_OK);
        ffu_face_list_clear(&list);
        ffu_face *f = ffu_face_list_push(&list);
        landmark_face_from_68(s->gt[k], f);
        CHECK(ffu_landmarker_run(l, &img, f) == FFU_OK);
        ffu_image_release(&img);
        CHECK_EQ_INT(f->num_landmarks, 478);
        /* 468 = the subject's right iris (annotated eye 36-41), 473 = the left */
        for (int e = 0; e < 2; e++) {
            const float *c = &f->landmarks[3 * (468 + 5 * e)];
            in += inside(&s->gt[k][2 * (36 + 6 * e)], 6, c[0], c[1]);
            total++;
            /* the rim points surround the centre at a sane radius */
            double r = 0;
            for (int q = 1; q < 5; q++)
                r += hypot(c[3 * q] - c[0], c[3 * q + 1] - c[1]) / 4;
            double iod = iod_of(s->gt[k]);
            CHECK(r > 0.02 * iod && r < 0.12 * iod);
            /* the eye keypoints are the iris centres */
            CHECK_NEAR(f->kps[2 * e], c[0], 1e-3);
            CHECK_NEAR(f->kps[2 * e + 1], c[1], 1e-3);
        }
    }
    printf("  iris centres inside the annotated eye contour: %d of %d\n", in, total);
    ffu_face_list_free(&list);
    ffu_landmarker_destroy(l);
    CHECK(in >= total * 9 / 10);
}

/* A rough box and displaced keypoints still give keypoints near the annotation. */
static void test_keypoints_refined(void)
{
    const l68_set *s = l68();
    if (!s)
        TEST_SKIP("../shared/data/landmarks68 not available");
    ffu_landmarker *l = NULL;
    ffu_status st = ffu_landmarker_create(NULL, &l);
    if (st == FFU_ERR_NOT_FOUND)
        TEST_SKIP("facemesh not installed");
    CHECK(st == FFU_OK);
    ffu_face_list list = {0};
    double before = 0, after = 0;
    uint64_t seed = 7;
    for (int k = 0; k < s->n; k++) {
        ffu_image img = {0};
        CHECK(ffu_image_load(s->path[k], FFU_PIX_RGB24, &img) == FFU_OK);
        ffu_face_list_clear(&list);
        ffu_face *f = ffu_face_list_push(&list);
        landmark_face_from_68(s->gt[k], f);
        float truth[10];
        memcpy(truth, f->kps, sizeof truth);
        double iod = iod_of(s->gt[k]);
        for (int i = 0; i < 10; i++)
            f->kps[i] += (float)((test_rand_f(&seed) - 0.5) * 0.2 * iod);
        for (int i = 0; i < 5; i++)
            before += hypot(f->kps[2 * i] - truth[2 * i], f->kps[2 * i + 1] - truth[2 * i + 1]) / iod;
        CHECK(ffu_landmarker_run(l, &img, f) == FFU_OK);
        for (int i = 0; i < 5; i++)
            after += hypot(f->kps[2 * i] - truth[2 * i], f->kps[2 * i + 1] - truth[2 * i + 1]) / iod;
        ffu_image_release(&img);
    }
    before /= 5.0 * s->n;
    after /= 5.0 * s->n;
    printf("  five points vs annotation: jittered %.4f IOD -> refined %.4f IOD\n", before, after);
    ffu_face_list_free(&list);
    ffu_landmarker_destroy(l);
    CHECK(after < 0.035);
    CHECK(after < before * 0.8);
}

/* ---- bad input --------------------------------------------------------------------- */

static void test_bad_input(void)
{
    ffu_landmarker_destroy(NULL);
    CHECK(ffu_landmarker_create(NULL, NULL) == FFU_ERR_INVALID);
    ffu_landmarker_opts o;
    ffu_landmarker_opts_default(&o);
    ffu_landmarker *l = (ffu_landmarker *)&o;
    o.m.model = "gear"; /* an attribute model is not a landmarker */
    CHECK(ffu_landmarker_create(&o, &l) == FFU_ERR_NOT_FOUND);
    CHECK(l == NULL);
    o.m.model = "no-such-model";
    CHECK(ffu_landmarker_create(&o, &l) == FFU_ERR_NOT_FOUND);
    o.m.model = "pfld:/nonexistent/x.onnx";
    CHECK(ffu_landmarker_create(&o, &l) == FFU_ERR_NOT_FOUND);
    o.m.model = "iris"; /* iris refines a mesh; it is not a landmarker of its own */
    ffu_status st = ffu_landmarker_create(&o, &l);
    CHECK(st == FFU_ERR_INVALID || st == FFU_ERR_NOT_FOUND);
    o.m.model = "pfld";
    o.iris = 1;
    st = ffu_landmarker_create(&o, &l);
    CHECK(st == FFU_ERR_INVALID || st == FFU_ERR_NOT_FOUND);

    ffu_landmarker_opts_default(&o);
    st = ffu_landmarker_create(&o, &l);
    if (st == FFU_ERR_NOT_FOUND)
        TEST_SKIP("facemesh not installed");
    CHECK(st == FFU_OK);
    ffu_image img = {0};
    CHECK(ffu_image_create(&img, FFU_PIX_RGB24, 64, 64) == FFU_OK);
    ffu_face_list list = {0};
    ffu_face *f = ffu_face_list_push(&list);
    f->box[0] = 8, f->box[1] = 8, f->box[2] = 40, f->box[3] = 40;
    CHECK(ffu_landmarker_run(NULL, &img, f) == FFU_ERR_INVALID);
    CHECK(ffu_landmarker_run(l, NULL, f) == FFU_ERR_INVALID);
    CHECK(ffu_landmarker_run(l, &img, NULL) == FFU_ERR_INVALID);
    f->box[2] = NAN;
    CHECK(ffu_landmarker_run(l, &img, f) == FFU_ERR_INVALID);
    f->box[2] = 0;
    CHECK(ffu_landmarker_run(l, &img, f) == FFU_ERR_INVALID);
    f->box[2] = 40;
    f->kps[3] = INFINITY;
    CHECK(ffu_landmarker_run(l, &img, f) == FFU_ERR_INVALID);
    f->kps[3] = 0;
    /* no keypoints: an upright crop of the box; a black image still gives points */
    CHECK(ffu_landmarker_run(l, &img, f) == FFU_OK);
    CHECK_EQ_INT(f->num_landmarks, 468);
    for (int i = 0; i < 468 * 3; i++)
        CHECK(isfinite(f->landmarks[i]));
    /* a face far outside the image is still answered (black crop), not a crash */
    f->box[0] = -5000, f->box[1] = 9000;
    CHECK(ffu_landmarker_run(l, &img, f) == FFU_OK);
    ffu_image yuv = {0};
    CHECK(ffu_image_create(&yuv, FFU_PIX_YUV420P, 64, 64) == FFU_OK);
    CHECK(ffu_landmarker_run(l, &yuv, f) == FFU_ERR_UNSUPPORTED);
    ffu_image_release(&yuv);
    ffu_image_release(&img);
    ffu_face_list_free(&list);
    ffu_landmarker_destroy(l);
}

TEST_MAIN(test_facemesh_nme, test_facemesh_iris_nme, test_facemesh_onnx_nme, test_pfld_nme,
          test_peppa_nme, test_dlib68_nme, test_facemesh_rotated_90, test_facemesh_rotated_30,
          test_pfld_rotated_30, test_dlib68_rotated_30, test_iris_inside_the_eyes,
          test_keypoints_refined, test_bad_input)
