/* Face detector tests on real photos (../shared/data): every zoo detector finds the
 * expected number of faces on the labelled photos and the hand-drawn dlib boxes, none on
 * a photo of dogs; rotated photos are found at the right rotation with boxes mapped back
 * onto the rotated image; a ~24 px face in a 1920x1080 frame is found only with tiling,
 * and with min_face 20 most of 24 faces of 20 px;
 * the TF.js BlazeFace and its ONNX twin agree; bad input gives errors. Tests skip where
 * the models or data are not installed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "face/detect_internal.h"
#include "face/eval_run.h"
#include "face/face_internal.h"
#include "facefuse/face.h"
#include "facefuse/nn.h"
#include "test.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* Opens a detector; 0 with *d = NULL when the model is not installed. */
static int open_det(const char *model, float min_score, ffu_detector **d)
{
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = model;
    o.min_score = min_score;
    ffu_status st = ffu_detector_create(&o, d);
    if (st == FFU_ERR_NOT_FOUND) {
        *d = NULL;
        return 0;
    }
    if (st)
        fprintf(stderr, "%s: %s\n", model ? model : "default", ffu_error_message());
    return st == FFU_OK;
}

static int load_shared(const char *rel, ffu_image *img)
{
    char buf[1024];
    const char *p = test_shared_path(rel, buf, sizeof buf);
    return p && ffu_image_load(p, FFU_PIX_RGB24, img) == FFU_OK;
}

/* ../shared/data/lfw's pairs list; 0 when the data is not there. */
static int load_lfw_pairs(lfw_pairs **pairs)
{
    char dir[1024];
    *pairs = NULL;
    if (!test_shared_path("data/lfw/pairs.txt", dir, sizeof dir)) return 0;
    dir[strlen(dir) - strlen("/pairs.txt")] = 0;
    return lfw_pairs_load(dir, pairs) == FFU_OK;
}

/* An example photo (face_recognition_examples/examples/NAME) and the same photo padded
 * with black to a centred square, the picture a letterbox shows a square model. */
static int load_example_square(const char *name, ffu_image *photo, ffu_image *sq)
{
    char rel[256];
    snprintf(rel, sizeof rel, "data/face_recognition_examples/examples/%s", name);
    if (!load_shared(rel, photo)) return 0;
    int side = photo->width > photo->height ? photo->width : photo->height;
    return ffu_image_create(sq, photo->fmt, side, side) == FFU_OK &&
           ffu_image_crop_pad(photo, sq, (photo->width - side) / 2, (photo->height - side) / 2,
                              NULL) == FFU_OK;
}

/* Every zoo detector, in zoo order. */
static int detector_names(const char **names, int max)
{
    int n = 0;
    for (int i = 0; i < ffu_zoo_count() && n < max; i++)
        if (ffu_zoo_get(i)->role == FFU_ROLE_DETECT)
            names[n++] = ffu_zoo_get(i)->name;
    return n;
}

/* Rotates an RGB image 90 degrees clockwise: dst(x, y) = src(y, H - 1 - x). */
static int rotate_cw(const ffu_image *src, ffu_image *dst)
{
    if (ffu_image_create(dst, FFU_PIX_RGB24, src->height, src->width))
        return 0;
    for (int y = 0; y < dst->height; y++)
        for (int x = 0; x < dst->width; x++) {
            const uint8_t *s = src->data[0] + (size_t)(src->height - 1 - x) * src->stride[0] +
                               (size_t)y * 3;
            memcpy(dst->data[0] + (size_t)y * dst->stride[0] + (size_t)x * 3, s, 3);
        }
    return 1;
}

/* A box of an image of height H rotated clockwise: (x, y) -> (H - y, x). */
static void box_cw(const float b[4], int H, float out[4])
{
    out[0] = H - b[1] - b[3];
    out[1] = b[0];
    out[2] = b[3];
    out[3] = b[2];
}

/* ---- API behaviour ------------------------------------------------------------------- */

static void test_bad_input(void)
{
    ffu_detector *d = NULL;
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    CHECK(ffu_detector_create(&o, NULL) == FFU_ERR_INVALID);
    o.min_score = 2;
    CHECK(ffu_detector_create(&o, &d) == FFU_ERR_INVALID && d == NULL);
    o.min_score = 0;
    o.min_face = -1;
    CHECK(ffu_detector_create(&o, &d) == FFU_ERR_INVALID && d == NULL);
    o.min_face = 0;
    o.m.model = "no-such-detector";
    CHECK(ffu_detector_create(&o, &d) == FFU_ERR_NOT_FOUND && d == NULL);
    o.m.model = "mobilefacenet"; /* an embedder, not a detector */
    CHECK(ffu_detector_create(&o, &d) == FFU_ERR_NOT_FOUND && d == NULL);
    ffu_detector_destroy(NULL);
    CHECK(ffu_detector_model(NULL) == NULL);

    if (!open_det(NULL, 0, &d) || !d)
        TEST_SKIP("default detector not installed (scripts/setup)");
    CHECK_STR(ffu_detector_model(d)->name, "blazeface");
    CHECK_STR(ffu_detector_model(d)->family, "blazeface");
    ffu_face_list l = {0};
    ffu_face *f = ffu_face_list_push(&l); /* detect clears the list first */
    CHECK(f != NULL);
    ffu_image img = {0};
    CHECK(ffu_detector_detect(d, NULL, &l) == FFU_ERR_INVALID);
    CHECK_EQ_INT(l.count, 0);
    CHECK(ffu_detector_detect(d, &img, &l) == FFU_ERR_INVALID); /* no pixels */
    CHECK(ffu_detector_detect(NULL, &img, &l) == FFU_ERR_INVALID);
    CHECK(ffu_image_create(&img, FFU_PIX_RGB24, 8, 8) == FFU_OK);
    CHECK(ffu_detector_detect(d, &img, NULL) == FFU_ERR_INVALID);
    ffu_image_release(&img);
    CHECK(ffu_image_create(&img, FFU_PIX_NV12, 16, 16) == FFU_OK);
    CHECK(ffu_detector_detect(d, &img, &l) == FFU_ERR_UNSUPPORTED);
    ffu_image_release(&img);
    /* a 1x1 image is a valid image with no face in it */
    static const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32,
                                      FFU_PIX_GRAY8};
    for (int i = 0; i < 4; i++) {
        CHECK(ffu_image_create(&img, fmts[i], 1, 1) == FFU_OK);
        CHECK(ffu_detector_detect(d, &img, &l) == FFU_OK);
        CHECK_EQ_INT(l.count, 0);
        ffu_image_release(&img);
    }
    /* tiny, very thin and blank frames, with tiling and rotations on */
    ffu_detector_destroy(d);
    o.m.model = NULL;
    o.min_face = 16;
    o.rotations = 1;
    CHECK(ffu_detector_create(&o, &d) == FFU_OK);
    int sizes[][2] = {{1, 1}, {2, 3}, {3000, 2}, {2, 3000}, {640, 480}};
    for (int i = 0; i < 5; i++) {
        CHECK(ffu_image_create(&img, FFU_PIX_RGB24, sizes[i][0], sizes[i][1]) == FFU_OK);
        CHECK(ffu_detector_detect(d, &img, &l) == FFU_OK);
        CHECK_EQ_INT(l.count, 0);
        ffu_image_release(&img);
    }
    ffu_face_list_free(&l);
    ffu_detector_destroy(d);
}

/* ---- every detector on the labelled photos --------------------------------------------- */

static void test_expected_counts(void)
{
    char buf[1024];
    const char *csv = test_shared_path("data/face_recognition_examples/identities.csv", buf,
                                       sizeof buf);
    if (!csv)
        TEST_SKIP("../shared/data/face_recognition_examples missing");
    const char *names[32];
    int nd = detector_names(names, 32), tested = 0;
    for (int m = 0; m < nd; m++) {
        ffu_detector *d;
        CHECK(open_det(names[m], 0, &d) || !d);
        if (!d)
            continue;
        tested++;
        FILE *f = fopen(csv, "r");
        CHECK(f != NULL);
        char line[1024];
        int images = 0, wrong = 0;
        ffu_face_list l = {0};
        while (fgets(line, sizeof line, f)) {
            char path[512], want[16];
            /* path,identities,n_faces_expected,notes; "2+" rows have unlabelled extras */
            char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
            if (!c2 || strncmp(line, "path,", 5) == 0)
                continue;
            snprintf(path, sizeof path, "data/face_recognition_examples/%.*s", (int)(c1 - line),
                     line);
            snprintf(want, sizeof want, "%.*s", (int)strcspn(c2 + 1, ","), c2 + 1);
            if (strchr(want, '+'))
                continue;
            ffu_image img = {0};
            CHECK(load_shared(path, &img));
            ffu_status st = ffu_detector_detect(d, &img, &l);
            ffu_image_release(&img);
            CHECK(st == FFU_OK);
            images++;
            /* YuNet 2022mar (evaluation only) finds a "face" in the painting behind
             * Biden in biden2.jpg at 0.996; OpenCV's own FaceDetectorYN on the same file
             * gives it 0.995, so it is the model's, not our decoder's */
            int known = !strcmp(names[m], "yunet2022") && strstr(path, "biden2.jpg") &&
                        l.count == atoi(want) + 1;
            if (l.count != atoi(want) && !known) {
                wrong++;
                fprintf(stderr, "%s: %s: %d faces, want %s\n", names[m], path, l.count, want);
            }
            for (int i = 0; i < l.count; i++) {
                CHECK(l.faces[i].score >= ffu_detector_model(d)->threshold);
                CHECK(i == 0 || l.faces[i].score <= l.faces[i - 1].score);
                CHECK(l.faces[i].rotation == 0);
            }
        }
        fclose(f);
        ffu_face_list_free(&l);
        ffu_detector_destroy(d);
        printf("  %-16s %d photos, %d with the wrong face count\n", names[m], images, wrong);
        CHECK(images >= 25);
        CHECK_EQ_INT(wrong, 0);
    }
    if (!tested)
        TEST_SKIP("no detector installed");
}

/* dlib's hand-drawn boxes (43 faces in 9 PASCAL VOC photos): recall at IoU >= 0.5 once
 * each detector's box is reshaped to dlib's square convention (boxes differ in where
 * they put the forehead and chin, not in which face they find). */
static void test_dlib_recall(void)
{
    char buf[1024];
    const char *xmls[2] = {"data/dlib_faces/training.xml", "data/dlib_faces/testing.xml"};
    if (!test_shared_path(xmls[0], buf, sizeof buf))
        TEST_SKIP("../shared/data/dlib_faces missing");
    const char *names[32];
    int nd = detector_names(names, 32), tested = 0, failed = 0;
    for (int m = 0; m < nd; m++) {
        ffu_detector *d;
        CHECK(open_det(names[m], 0, &d) || !d);
        if (!d)
            continue;
        tested++;
        int faces = 0, found = 0;
        ffu_face_list l = {0};
        ffu_image img = {0};
        for (int x = 0; x < 2; x++) {
            FILE *f = fopen(test_shared_path(xmls[x], buf, sizeof buf), "r");
            CHECK(f != NULL);
            char line[1024];
            while (fgets(line, sizeof line, f)) {
                char file[256];
                float t, lft, w, h;
                if (sscanf(line, " <image file='%255[^']'", file) == 1) {
                    char rel[512];
                    snprintf(rel, sizeof rel, "data/dlib_faces/%s", file);
                    ffu_image_release(&img);
                    CHECK(load_shared(rel, &img));
                    CHECK(ffu_detector_detect(d, &img, &l) == FFU_OK);
                } else if (sscanf(line, " <box top='%f' left='%f' width='%f' height='%f'", &t,
                                  &lft, &w, &h) == 4) {
                    float gt[4] = {lft, t, w, h}, best = 0;
                    for (int i = 0; i < l.count; i++) {
                        /* square of the box's mean side around the keypoints' centre */
                        const float *k = l.faces[i].kps;
                        float cx = (k[0] + k[2] + k[6] + k[8]) / 4;
                        float cy = (k[1] + k[3] + k[7] + k[9]) / 4;
                        float s = 0.5f * (l.faces[i].box[2] + l.faces[i].box[3]) * 0.75f;
                        float sq[4] = {cx - s / 2, cy - s / 2, s, s};
                        float v = fmaxf(face_box_iou(gt, l.faces[i].box), face_box_iou(gt, sq));
                        best = fmaxf(best, v);
                    }
                    faces++;
                    found += best >= 0.5f;
                }
            }
            fclose(f);
        }
        ffu_image_release(&img);
        ffu_face_list_free(&l);
        ffu_detector_destroy(d);
        /* Most faces here are 37-50 px in 500 px photos: the short-range BlazeFace (128
         * input, meant for faces filling much of a selfie) sees them at ~10 px and finds
         * few; the other models find nearly all. */
        int need = !strcmp(names[m], "blazeface-short") ? 8 : 36;
        printf("  %-16s %d of %d hand-drawn faces (need %d)\n", names[m], found, faces, need);
        CHECK_EQ_INT(faces, 43);
        if (found < need)
            failed++;
    }
    CHECK_EQ_INT(failed, 0);
    if (!tested)
        TEST_SKIP("no detector installed");
}

static void test_no_face(void)
{
    ffu_image img = {0};
    if (!load_shared("data/dlib_faces/dogs.jpg", &img))
        TEST_SKIP("../shared/data/dlib_faces missing");
    const char *names[32];
    int nd = detector_names(names, 32), tested = 0, failed = 0;
    ffu_face_list l = {0};
    for (int m = 0; m < nd; m++) {
        ffu_detector *d;
        CHECK(open_det(names[m], 0, &d) || !d);
        if (!d)
            continue;
        tested++;
        CHECK(ffu_detector_detect(d, &img, &l) == FFU_OK);
        /* The bottom-left dog's face looks human enough for the WIDER-trained YuNet
         * (0.86 fixed-640, 0.77 dynamic; 2022mar 0.997, and OpenCV's FaceDetectorYN
         * 0.999 on that file) and SCRFD (0.63) above their default thresholds; that one
         * face is tolerated for them, nothing anywhere else for anyone. */
        int allowed = !strcmp(names[m], "yunet") || !strcmp(names[m], "yunet-dynamic") ||
                      !strcmp(names[m], "yunet2022") || !strcmp(names[m], "scrfd");
        printf("  %-16s %d faces (at most %d)\n", names[m], l.count, allowed);
        if (l.count > allowed)
            failed++;
        for (int i = 0; i < l.count; i++) {
            float cx = l.faces[i].box[0] + l.faces[i].box[2] / 2;
            float cy = l.faces[i].box[1] + l.faces[i].box[3] / 2;
            if (!(cx > 130 && cx < 330 && cy > 560 && cy < 810))
                failed++;
        }
        ffu_detector_destroy(d);
    }
    CHECK_EQ_INT(failed, 0);
    ffu_face_list_free(&l);
    ffu_image_release(&img);
    if (!tested)
        TEST_SKIP("no detector installed");
}

/* ---- rotations ----------------------------------------------------------------------- */

static void test_rotated(void)
{
    ffu_image up = {0}, r90 = {0}, r180 = {0}, r270 = {0};
    if (!load_shared("data/face_recognition_examples/examples/two_people.jpg", &up))
        TEST_SKIP("../shared/data/face_recognition_examples missing");
    const char *models[] = {"blazeface", "yunet", "mtcnn"};
    int tested = 0;
    CHECK(rotate_cw(&up, &r90) && rotate_cw(&r90, &r180) && rotate_cw(&r180, &r270));
    for (int m = 0; m < 3; m++) {
        ffu_detector_opts o;
        ffu_detector_opts_default(&o);
        o.m.model = models[m];
        o.rotations = 1;
        ffu_detector *d;
        ffu_status st = ffu_detector_create(&o, &d);
        if (st == FFU_ERR_NOT_FOUND)
            continue;
        CHECK(st == FFU_OK);
        tested++;
        ffu_face_list lu = {0}, lr = {0};
        CHECK(ffu_detector_detect(d, &up, &lu) == FFU_OK);
        CHECK_EQ_INT(lu.count, 2);
        CHECK(lu.faces[0].rotation == 0 && lu.faces[1].rotation == 0);
        const ffu_image *rot[3] = {&r90, &r180, &r270};
        for (int r = 0; r < 3; r++) {
            CHECK(ffu_detector_detect(d, rot[r], &lr) == FFU_OK);
            CHECK_EQ_INT(lr.count, 2);
            for (int i = 0; i < 2; i++) {
                /* the upright face's box and eyes, turned like the image */
                float b[4], t[4];
                memcpy(b, lu.faces[i].box, sizeof b);
                float ex = lu.faces[i].kps[0], ey = lu.faces[i].kps[1];
                int h = up.height, w = up.width;
                for (int k = 0; k <= r; k++) {
                    box_cw(b, h, t);
                    memcpy(b, t, sizeof b);
                    float nx = h - ey, ny = ex;
                    ex = nx;
                    ey = ny;
                    int tmp = w;
                    w = h;
                    h = tmp;
                }
                float best = 0;
                const ffu_face *match = NULL;
                for (int j = 0; j < lr.count; j++)
                    if (face_box_iou(b, lr.faces[j].box) > best) {
                        best = face_box_iou(b, lr.faces[j].box);
                        match = &lr.faces[j];
                    }
                CHECK(match != NULL);
                if (best < 0.7f || match->rotation != 90 * (r + 1))
                    fprintf(stderr, "%s at %d: IoU %.3f with the turned upright box, "
                            "rotation %d\n", models[m], 90 * (r + 1), best, match->rotation);
                CHECK(best >= 0.7f);
                CHECK_EQ_INT(match->rotation, 90 * (r + 1));
                /* keypoints keep their meaning: the first is the same eye */
                float eye_tol = 0.15f * b[2];
                CHECK(fabsf(match->kps[0] - ex) < eye_tol && fabsf(match->kps[1] - ey) < eye_tol);
            }
        }
        /* rotations off: nothing is searched beyond upright */
        ffu_detector_destroy(d);
        o.rotations = 0;
        CHECK(ffu_detector_create(&o, &d) == FFU_OK);
        CHECK(ffu_detector_detect(d, &r90, &lr) == FFU_OK);
        for (int j = 0; j < lr.count; j++)
            CHECK(lr.faces[j].rotation == 0);
        ffu_face_list_free(&lu);
        ffu_face_list_free(&lr);
        ffu_detector_destroy(d);
    }
    ffu_image_release(&up);
    ffu_image_release(&r90);
    ffu_image_release(&r180);
    ffu_image_release(&r270);
    if (!tested)
        TEST_SKIP("no detector installed");
}

/* The view a face is given to, when several show it: BlazeFace "finds" the upright face
 * of obama.jpg (an 800x800 square of it) upside down too, at 0.8255 against 0.8214, and
 * its sideways views with upright-looking keypoints, so the scores alone gave each of the
 * four turns of this photo the wrong rotation (docs/EVAL.md "Rotated photos"). The
 * rotation referee gives each its own, with both families, and the keypoints follow. */
static void test_rotation_chosen(void)
{
    ffu_image photo = {0}, turn[4] = {{0}};
    if (!load_shared("data/face_recognition_examples/examples/obama.jpg", &photo))
        TEST_SKIP("../shared/data/face_recognition_examples missing");
    CHECK(ffu_image_create(&turn[0], FFU_PIX_RGB24, 800, 800) == FFU_OK &&
          ffu_image_crop_pad(&photo, &turn[0], 0, 0, NULL) == FFU_OK);
    for (int r = 1; r < 4; r++)
        CHECK(rotate_cw(&turn[r - 1], &turn[r]));
    const char *models[] = {"blazeface", "yunet"};
    int tested = 0;
    for (int m = 0; m < 2; m++) {
        ffu_detector_opts o;
        ffu_detector_opts_default(&o);
        o.m.model = models[m];
        o.rotations = 1;
        ffu_detector *d;
        ffu_status st = ffu_detector_create(&o, &d);
        if (st == FFU_ERR_NOT_FOUND) continue;
        CHECK(st == FFU_OK);
        tested++;
        ffu_face_list l = {0};
        float eye0[2] = {0};
        for (int r = 0; r < 4; r++) {
            CHECK(ffu_detector_detect(d, &turn[r], &l) == FFU_OK);
            CHECK_EQ_INT(l.count, 1);
            if (l.faces[0].rotation != 90 * r)
                fprintf(stderr, "%s, photo turned %d: rotation %d\n", models[m], 90 * r,
                        l.faces[0].rotation);
            CHECK_EQ_INT(l.faces[0].rotation, 90 * r);
            /* the first keypoint is the same eye in every turn: the upright one's, turned */
            float ex = eye0[0], ey = eye0[1];
            for (int k = 0; k < r; k++) {
                float nx = 800 - ey, ny = ex;
                ex = nx, ey = ny;
            }
            if (r == 0)
                memcpy(eye0, l.faces[0].kps, sizeof eye0);
            else
                CHECK(fabsf(l.faces[0].kps[0] - ex) < 20 && fabsf(l.faces[0].kps[1] - ey) < 20);
        }
        ffu_face_list_free(&l);
        ffu_detector_destroy(d);
    }
    for (int r = 0; r < 4; r++)
        ffu_image_release(&turn[r]);
    ffu_image_release(&photo);
    if (!tested) TEST_SKIP("no detector installed");
}

/* ---- tiling for small faces ------------------------------------------------------------ */

/* A face from a photo, scaled so its box is `side` pixels, pasted into a grey fw x fh
 * frame at (px, py); *gt gets the pasted face's box. */
static int small_face_frame(ffu_detector *d, int side, int fw, int fh, int px, int py,
                            ffu_image *frame, float gt[4])
{
    ffu_image src = {0}, crop = {0}, small = {0};
    ffu_face_list l = {0};
    int ok = 0;
    if (!load_shared("data/face_recognition_examples/examples/obama.jpg", &src) ||
        ffu_detector_detect(d, &src, &l) || l.count != 1)
        goto done;
    /* crop 2x the face box around its centre, scale it by side / box side */
    const float *b = l.faces[0].box;
    float bs = fmaxf(b[2], b[3]), cx = b[0] + b[2] / 2, cy = b[1] + b[3] / 2;
    int cs = (int)(2 * bs);
    if (ffu_image_create(&crop, FFU_PIX_RGB24, cs, cs) ||
        ffu_image_crop_pad(&src, &crop, (int)(cx - cs / 2.f), (int)(cy - cs / 2.f), NULL))
        goto done;
    int ss = (int)lroundf(cs * side / bs);
    if (ffu_image_create(&small, FFU_PIX_RGB24, ss, ss) ||
        ffu_image_resize(&crop, &small, FFU_INTERP_AREA))
        goto done;
    if (ffu_image_create(frame, FFU_PIX_RGB24, fw, fh)) goto done;
    memset(frame->data[0], 128, (size_t)frame->stride[0] * (size_t)fh);
    for (int y = 0; y < ss; y++)
        memcpy(frame->data[0] + (size_t)(py + y) * frame->stride[0] + (size_t)px * 3,
               small.data[0] + (size_t)y * small.stride[0], (size_t)ss * 3);
    float k = (float)ss / cs;
    gt[0] = px + (b[0] - (cx - cs / 2.f)) * k;
    gt[1] = py + (b[1] - (cy - cs / 2.f)) * k;
    gt[2] = b[2] * k;
    gt[3] = b[3] * k;
    ok = 1;
done:
    ffu_face_list_free(&l);
    ffu_image_release(&src);
    ffu_image_release(&crop);
    ffu_image_release(&small);
    return ok;
}

static int found_at(const ffu_face_list *l, const float gt[4])
{
    for (int i = 0; i < l->count; i++)
        if (face_box_iou(gt, l->faces[i].box) >= 0.4f)
            return 1;
    return 0;
}

static void test_tiling_small_face(void)
{
    /* fixed-input models, and a dynamic one capped at 640 (its tiles run in a second
     * session) */
    const char *models[] = {"blazeface", "yunet", "yunet-dynamic"};
    int tested = 0;
    for (int m = 0; m < 3; m++) {
        ffu_detector_opts o;
        ffu_detector_opts_default(&o);
        o.m.model = models[m];
        o.input_size = m == 2 ? 640 : 0;
        ffu_detector *d, *dt;
        ffu_status st = ffu_detector_create(&o, &d);
        if (st == FFU_ERR_NOT_FOUND)
            continue;
        CHECK(st == FFU_OK);
        o.min_face = 20;
        CHECK(ffu_detector_create(&o, &dt) == FFU_OK);
        ffu_image frame = {0};
        float gt[4];
        if (!small_face_frame(d, 24, 1920, 1080, 1300, 700, &frame, gt)) {
            ffu_detector_destroy(d);
            ffu_detector_destroy(dt);
            TEST_SKIP("../shared/data/face_recognition_examples missing");
        }
        tested++;
        ffu_face_list l = {0};
        CHECK(ffu_detector_detect(d, &frame, &l) == FFU_OK);
        CHECK(!found_at(&l, gt));
        CHECK(ffu_detector_detect(dt, &frame, &l) == FFU_OK);
        if (!found_at(&l, gt))
            fprintf(stderr, "%s: the 24 px face at %.0f,%.0f was not found with min_face 20 "
                            "(%d faces)\n", models[m], gt[0], gt[1], l.count);
        CHECK(found_at(&l, gt));
        CHECK_EQ_INT(l.count, 1);
        /* the same frame again gives the same answer (no state carried between calls) */
        float first[4];
        memcpy(first, l.faces[0].box, sizeof first);
        CHECK(ffu_detector_detect(dt, &frame, &l) == FFU_OK);
        CHECK_EQ_INT(l.count, 1);
        CHECK(memcmp(first, l.faces[0].box, sizeof first) == 0);
        ffu_face_list_free(&l);
        ffu_image_release(&frame);
        ffu_detector_destroy(d);
        ffu_detector_destroy(dt);
    }
    if (!tested)
        TEST_SKIP("no detector installed");
}

/* A panorama strip (7000x300) with a 24 px face: blazeface-full's 192 px tiles at
 * min_face 20 need 66 across and 3 down. The cap on tiles is per level (64 x 64 = 4096),
 * not 64 per side, which refused such strips once; a min_face far too small for the
 * frame is still refused, naming the tile count. */
static void test_tiling_panorama(void)
{
    ffu_detector *d = NULL, *dt = NULL;
    if (!open_det("blazeface-full", 0, &d)) TEST_SKIP("blazeface-full not installed");
    ffu_image frame = {0};
    float gt[4];
    if (!small_face_frame(d, 24, 7000, 300, 5000, 130, &frame, gt)) {
        ffu_detector_destroy(d);
        TEST_SKIP("../shared/data/face_recognition_examples missing");
    }
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = "blazeface-full";
    o.min_face = 20;
    CHECK_EQ_INT(ffu_detector_create(&o, &dt), FFU_OK);
    ffu_face_list l = {0};
    ffu_status st = ffu_detector_detect(dt, &frame, &l);
    if (st) fprintf(stderr, "panorama: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    CHECK(found_at(&l, gt));
    ffu_detector_destroy(dt);
    /* 5 px faces (the finest scale, 4 network px an image px) in a 2000x2000 frame: 48 px
     * tiles, about 90 x 90 of them */
    ffu_image big = {0};
    CHECK_EQ_INT(ffu_image_create(&big, FFU_PIX_RGB24, 2000, 2000), FFU_OK);
    memset(big.data[0], 128, (size_t)big.stride[0] * 2000);
    o.min_face = 2;
    CHECK_EQ_INT(ffu_detector_create(&o, &dt), FFU_OK);
    CHECK_EQ_INT(ffu_detector_detect(dt, &big, &l), FFU_ERR_TOO_LARGE);
    CHECK(strstr(ffu_error_message(), "tiles for one level"));
    float side = 1;
    CHECK_EQ_INT(ffu_detector_smallest_face(dt, 2000, 2000, &side), FFU_ERR_TOO_LARGE);
    CHECK(side == 0);
    ffu_face_list_free(&l);
    ffu_image_release(&big);
    ffu_image_release(&frame);
    ffu_detector_destroy(dt);
    ffu_detector_destroy(d);
}

/* The small-face tests' material: 24 clear LFW faces (the first that stand alone of 48
 * photos spread over the pairs list, as the default detector finds them), the frame
 * background (dogs.jpg) and that detector. */
typedef struct small_set {
    lfw_pairs *pairs;
    ffu_image bg;
    ffu_detector *ref;
    small_face faces[SMALL_PER_FRAME];
    int n;
} small_set;

static void small_set_close(small_set *s)
{
    for (int i = 0; i < s->n; i++)
        small_face_release(&s->faces[i]);
    ffu_image_release(&s->bg);
    ffu_detector_destroy(s->ref);
    lfw_pairs_free(s->pairs);
    memset(s, 0, sizeof *s);
}

/* 0 when ready; 1 (why set) when data or model is missing; -1 when the faces could
 * not be cut. */
static int small_set_open(small_set *s, const char **why)
{
    memset(s, 0, sizeof *s);
    *why = NULL;
    if (!load_shared("data/dlib_faces/dogs.jpg", &s->bg) || !load_lfw_pairs(&s->pairs))
        *why = "../shared/data/lfw or dlib_faces missing";
    else if (!open_det(NULL, 0, &s->ref) || !s->ref)
        *why = "default detector not installed";
    if (*why) {
        small_set_close(s);
        return 1;
    }
    if (small_faces_from_lfw(s->pairs, s->ref, 2 * SMALL_PER_FRAME, SMALL_PER_FRAME, s->faces,
                             &s->n) != FFU_OK)
        return -1;
    return 0;
}

/* How many of the set's faces d finds in a 1080p frame where each is `side` px (the
 * longer side of its box); -1 when the frame cannot be made or detection fails. */
static int small_set_found(const small_set *s, ffu_detector *d, int side, int *false_dets)
{
    float gt[SMALL_PER_FRAME][4];
    ffu_image frame = {0};
    ffu_face_list l = {0};
    int found = -1;
    if (small_faces_frame(&s->bg, s->faces, s->n, side, 1, &frame, gt) == FFU_OK &&
        fabsf(fmaxf(gt[0][2], gt[0][3]) - side) < 0.6f &&
        ffu_detector_detect(d, &frame, &l) == FFU_OK)
        small_faces_match(&l, (const float(*)[4])gt, s->n, &found, false_dets);
    ffu_face_list_free(&l);
    ffu_image_release(&frame);
    return found;
}

/* What min_face promises, on many faces: the set's faces shrunk to 20 px in one
 * 1920x1080 frame (src/face/eval_small.c) are found by the default detector with
 * min_face 20; without tiles none of them. Tiles scaled for a 14 px face at the net
 * found 11 of these 24. And ffu_detector_smallest_face against what the detector finds:
 * with min_face 40 (a limit inside the sizes a frame cell holds) the faces are found at
 * 1.25 times the side it reports and mostly missed at half of it; without tiles the
 * side is the whole-frame view's, so it doubles with the frame. */
static void test_min_face_keeps_its_promise(void)
{
    small_set set;
    const char *why;
    int rc = small_set_open(&set, &why);
    if (rc > 0) TEST_SKIP(why);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(set.n, SMALL_PER_FRAME);
    ffu_detector *d;
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.min_face = 20;
    CHECK_EQ_INT(ffu_detector_create(&o, &d), FFU_OK);
    int false_dets;
    CHECK_EQ_INT(small_set_found(&set, set.ref, 20, &false_dets), 0);
    int found = small_set_found(&set, d, 20, &false_dets);
    fprintf(stderr, "    min_face 20: %d of %d faces of 20 px found, %d false detections\n", found,
            set.n, false_dets);
    CHECK(found >= 17);
    CHECK(false_dets <= 2);
    ffu_detector_destroy(d);

    float side = 0, side2 = 0;
    CHECK_EQ_INT(ffu_detector_smallest_face(set.ref, 1920, 1080, &side), FFU_OK);
    CHECK_EQ_INT(ffu_detector_smallest_face(set.ref, 3840, 2160, &side2), FFU_OK);
    CHECK(side > 40 && fabsf(side2 - 2 * side) < 1e-3f * side);
    CHECK_EQ_INT(ffu_detector_smallest_face(set.ref, 0, 1080, &side), FFU_ERR_INVALID);
    CHECK(side == 0);
    CHECK_EQ_INT(ffu_detector_smallest_face(NULL, 1920, 1080, &side), FFU_ERR_INVALID);
    o.min_face = 40;
    CHECK_EQ_INT(ffu_detector_create(&o, &d), FFU_OK);
    CHECK_EQ_INT(ffu_detector_smallest_face(d, SMALL_FRAME_W, SMALL_FRAME_H, &side), FFU_OK);
    CHECK(fabsf(side - 40) < 1);
    int above = small_set_found(&set, d, (int)lroundf(1.25f * side), &false_dets);
    int below = small_set_found(&set, d, (int)lroundf(side / 2), &false_dets);
    fprintf(stderr, "    smallest face %.1f px: %d of %d faces of %ld px found, %d of %ld px\n",
            side, above, set.n, lroundf(1.25f * side), below, lroundf(side / 2));
    CHECK(above >= set.n * 8 / 10);
    CHECK(below >= 0 && below <= set.n / 3);
    ffu_detector_destroy(d);
    small_set_close(&set);
}

/* MTCNN, the cascade (detect_mtcnn.c): its pyramid starts at 20 px faces without
 * min_face, so it finds the set's 20 px faces in a 1080p frame as it is (P-Net there
 * runs over three bands of its canvas, which must lose no window); min_face 40
 * moves the start (faces of 50 px found, of 20 px mostly not); on a very large frame the
 * start rises so that the largest level stays about a megapixel (four when min_face
 * asks). Its keypoints mean what
 * BlazeFace's do (the TF port's networks read images transposed, and its offsets and
 * points come back in image order): the same five points, in the same order, on the two
 * faces of two_people.jpg. */
static void test_mtcnn_cascade(void)
{
    ffu_detector *d = NULL, *d40 = NULL;
    if (!open_det("mtcnn", 0, &d) || !d) TEST_SKIP("mtcnn not installed (scripts/setup)");
    small_set set;
    const char *why;
    int rc = small_set_open(&set, &why);
    if (rc > 0) {
        ffu_detector_destroy(d);
        TEST_SKIP(why);
    }
    CHECK_EQ_INT(rc, 0);
    float side = 0;
    CHECK_EQ_INT(ffu_detector_smallest_face(d, 1920, 1080, &side), FFU_OK);
    CHECK(side == 20);
    CHECK_EQ_INT(ffu_detector_smallest_face(d, 8000, 6000, &side), FFU_OK);
    printf("    smallest face in an 8000x6000 frame: %.1f px\n", side);
    CHECK(side > 70 && side < 90);
    int false_dets, found = small_set_found(&set, d, 20, &false_dets);
    printf("    %d of %d faces of 20 px found, %d false detections\n", found, set.n, false_dets);
    CHECK(found >= 20);
    CHECK(false_dets <= 2);

    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = "mtcnn";
    o.min_face = 40;
    CHECK_EQ_INT(ffu_detector_create(&o, &d40), FFU_OK);
    CHECK_EQ_INT(ffu_detector_smallest_face(d40, 1920, 1080, &side), FFU_OK);
    CHECK(side == 40);
    /* asked for, the largest level may reach four megapixels: 41.6 px there */
    CHECK_EQ_INT(ffu_detector_smallest_face(d40, 8000, 6000, &side), FFU_OK);
    CHECK(side > 40 && side < 43);
    int above = small_set_found(&set, d40, 50, &false_dets);
    int below = small_set_found(&set, d40, 20, &false_dets);
    printf("    min_face 40: %d faces of 50 px found, %d of 20 px\n", above, below);
    CHECK(above >= set.n * 8 / 10);
    CHECK(below >= 0 && below <= set.n / 3);
    ffu_detector_destroy(d40);
    small_set_close(&set);

    /* a long strip asked for 1 px faces, turned too: the pyramid's levels stay within a
     * side the canvas can hold (a first packing stacked them 43712 px high) */
    ffu_image strip = {0};
    ffu_face_list none = {0};
    CHECK_EQ_INT(ffu_image_create(&strip, FFU_PIX_RGB24, 3000, 40), FFU_OK);
    for (int y = 0; y < strip.height; y++)
        memset(strip.data[0] + (size_t)y * strip.stride[0], 90, (size_t)strip.width * 3);
    o.min_face = 1;
    o.rotations = 1;
    CHECK_EQ_INT(ffu_detector_create(&o, &d40), FFU_OK);
    CHECK_EQ_INT(ffu_detector_detect(d40, &strip, &none), FFU_OK);
    CHECK_EQ_INT(none.count, 0);
    ffu_face_list_free(&none);
    ffu_image_release(&strip);
    ffu_detector_destroy(d40);

    ffu_image img = {0};
    ffu_detector *bf = NULL;
    if (load_shared("data/face_recognition_examples/examples/two_people.jpg", &img) &&
        open_det("blazeface", 0, &bf) && bf) {
        ffu_face_list a = {0}, b = {0};
        CHECK(ffu_detector_detect(d, &img, &a) == FFU_OK);
        CHECK(ffu_detector_detect(bf, &img, &b) == FFU_OK);
        CHECK_EQ_INT(a.count, 2);
        CHECK_EQ_INT(b.count, 2);
        for (int i = 0; i < a.count && a.count == b.count; i++) {
            const ffu_face *fa = &a.faces[i], *fb = &b.faces[0];
            if (face_box_iou(fa->box, b.faces[1].box) > face_box_iou(fa->box, fb->box))
                fb = &b.faces[1];
            CHECK(face_box_iou(fa->box, fb->box) > 0.4f);
            float worst = 0;
            for (int k = 0; k < FFU_FACE_NUM_KPS; k++)
                worst = fmaxf(worst, hypotf(fa->kps[2 * k] - fb->kps[2 * k],
                                            fa->kps[2 * k + 1] - fb->kps[2 * k + 1]));
            printf("    face %d: keypoints within %.1f px of BlazeFace's (box %.0f px)\n", i,
                   worst, fb->box[2]);
            CHECK(worst < 0.15f * fb->box[2]);
        }
        ffu_face_list_free(&a);
        ffu_face_list_free(&b);
    }
    ffu_detector_destroy(bf);
    ffu_image_release(&img);
    ffu_detector_destroy(d);
}

/* An MTCNN model is named by its P-Net file, R-Net and O-Net beside it: a file whose
 * name does not say pnet is refused with the rule, not opened half. */
static void test_mtcnn_named_by_pnet(void)
{
    ffu_detector *d = NULL;
    if (!open_det("mtcnn", 0, &d) || !d) TEST_SKIP("mtcnn not installed (scripts/setup)");
    const char *dir = test_tmpdir_auto();
    CHECK(dir != NULL);
    char link[512], spec[600];
    snprintf(link, sizeof link, "%s/first.tflite", dir);
    CHECK(symlink(ffu_detector_model(d)->file, link) == 0);
    snprintf(spec, sizeof spec, "mtcnn:%s", link);
    ffu_detector_destroy(d);
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = spec;
    CHECK_EQ_INT(ffu_detector_create(&o, &d), FFU_ERR_INVALID);
    CHECK(d == NULL);
    CHECK(strstr(ffu_error_message(), "'pnet'") != NULL);
}

/* blazeface-full's graph has two [N,17] heads, face and person, and its model.json lists
 * the person head first: read as faces, that head scored most clear LFW faces under the
 * model's threshold (a face kept in 23 of 100 photos spread over the pairs list; read
 * right, 85). */
static void test_blazeface_full_face_head(void)
{
    lfw_pairs *pairs = NULL;
    if (!load_lfw_pairs(&pairs)) TEST_SKIP("../shared/data/lfw missing");
    ffu_detector *d;
    if (!open_det("blazeface-full", 0, &d) || !d) {
        lfw_pairs_free(pairs);
        TEST_SKIP("blazeface-full not installed");
    }
    enum { PHOTOS = 100 };
    small_face *faces = calloc(PHOTOS, sizeof *faces);
    int n = 0;
    CHECK(faces);
    CHECK_EQ_INT(small_faces_from_lfw(pairs, d, PHOTOS, PHOTOS, faces, &n), FFU_OK);
    fprintf(stderr, "    blazeface-full: a face kept in %d of %d LFW photos\n", n, PHOTOS);
    CHECK(n >= 80);
    for (int i = 0; i < n; i++)
        small_face_release(&faces[i]);
    free(faces);
    ffu_detector_destroy(d);
    lfw_pairs_free(pairs);
}

/* The decoder's net computes the face head only (face_net_keep_outputs): the person
 * head reads as not computed, and the face head still finds the face in obama-480p.jpg. */
static void test_blazeface_full_skips_person_head(void)
{
    ffu_face_model_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.model = "blazeface-full";
    mo.threads = 1;
    face_net n;
    ffu_status st = face_net_open(&n, FFU_ROLE_DETECT, &mo);
    if (st == FFU_ERR_NOT_FOUND) TEST_SKIP("blazeface-full not installed");
    CHECK_EQ_INT(st, FFU_OK);
    ffu_image img = {0};
    if (!load_shared("data/face_recognition_examples/examples/obama-480p.jpg", &img)) {
        face_net_close(&n);
        TEST_SKIP("obama-480p.jpg missing");
    }
    int face = face_net_output_index(&n, "Identity"),
        person = face_net_output_index(&n, "Identity_1");
    CHECK(face >= 0 && person >= 0);
    void *state = NULL;
    CHECK_EQ_INT(det_family_blazeface.init(&n, &state), FFU_OK);
    CHECK(n.keep && n.keep[face] && !n.keep[person]);
    const float box[4] = {0, 0, (float)img.width, (float)img.height};
    CHECK_EQ_INT(face_net_fill_box(&n, 0, &img, box, NULL), FFU_OK);
    CHECK_EQ_INT(face_net_run(&n), FFU_OK);
    CHECK(face_net_output(&n, face, NULL) != NULL);
    CHECK(face_net_output(&n, person, NULL) == NULL);
    CHECK(strstr(ffu_error_message(), "not computed") != NULL);
    det_cands c = {0};
    CHECK_EQ_INT(det_family_blazeface.decode(state, &n, 0, 0.7f, &c), FFU_OK);
    CHECK(c.n >= 1);
    free(c.v);
    det_family_blazeface.fini(state);
    ffu_image_release(&img);
    face_net_close(&n);
}

/* ---- square models at the frame's aspect --------------------------------------------- */

/* The default BlazeFace (zoo row `aspect`) runs at a photo's aspect ratio: fewer
 * multiply-adds than on the same photo padded to a square (which the letterbox sees),
 * the same faces, and photos of several aspects in turn (the detector's spare
 * sessions, face_net.c) give each photo the answer a fresh detector gives. */
static void same_faces(const ffu_face_list *a, const ffu_face_list *b, float tol_box,
                       float tol_score)
{
    CHECK_EQ_INT(a->count, b->count);
    for (int k = 0; k < a->count && k < b->count; k++) {
        float size = fmaxf(a->faces[k].box[2], a->faces[k].box[3]);
        CHECK_NEAR(a->faces[k].score, b->faces[k].score, tol_score);
        for (int j = 0; j < 4; j++)
            CHECK_NEAR(a->faces[k].box[j], b->faces[k].box[j], tol_box * size);
    }
}

static void test_blazeface_aspect(void)
{
    ffu_detector *d;
    CHECK(open_det("blazeface", 0, &d) || !d);
    if (!d) TEST_SKIP("blazeface not installed");
    const char *imgs[] = {"two_people.jpg", "obama-480p.jpg",
                          "knn_examples/test/obama_and_biden.jpg", "obama-240p.jpg"};
    ffu_face_list photo_faces[4] = {0}, l = {0};
    for (int i = 0; i < 4; i++) {
        ffu_image photo = {0}, sq = {0};
        if (!load_example_square(imgs[i], &photo, &sq))
            TEST_SKIP("../shared/data/face_recognition_examples missing");
        int side = sq.width;
        uint64_t f0 = ffu_nn_flops_done();
        CHECK(ffu_detector_detect(d, &photo, &photo_faces[i]) == FFU_OK);
        uint64_t f1 = ffu_nn_flops_done();
        CHECK(ffu_detector_detect(d, &sq, &l) == FFU_OK);
        uint64_t f2 = ffu_nn_flops_done();
        printf("  %s %dx%d: %d face(s), %.3f GFLOP against %.3f padded to a square\n", imgs[i],
               photo.width, photo.height, photo_faces[i].count, (f1 - f0) * 1e-9, (f2 - f1) * 1e-9);
        CHECK(photo_faces[i].count >= 1);
        CHECK(f1 - f0 < 0.9 * (double)(f2 - f1)); /* every photo here is under 4:3.6 */
        /* the square's faces in photo coordinates */
        for (int k = 0; k < l.count; k++) {
            l.faces[k].box[0] -= (float)(side - photo.width) / 2;
            l.faces[k].box[1] -= (float)(side - photo.height) / 2;
        }
        same_faces(&photo_faces[i], &l, 0.05f, 0.05f);
        ffu_image_release(&photo);
        ffu_image_release(&sq);
    }
    /* again in turn, on the spare sessions: exactly the first answers */
    for (int r = 0; r < 2; r++)
        for (int i = 3; i >= 0; i--) {
            char rel[256];
            snprintf(rel, sizeof rel, "data/face_recognition_examples/examples/%s", imgs[i]);
            ffu_image photo = {0};
            CHECK(load_shared(rel, &photo));
            CHECK(ffu_detector_detect(d, &photo, &l) == FFU_OK);
            same_faces(&photo_faces[i], &l, 0, 0);
            ffu_image_release(&photo);
        }
    for (int i = 0; i < 4; i++)
        ffu_face_list_free(&photo_faces[i]);
    ffu_face_list_free(&l);
    ffu_detector_destroy(d);
}

/* ---- TF.js vs ONNX, options ------------------------------------------------------------ */

static void test_blazeface_twins(void)
{
    ffu_detector *a, *b;
    CHECK(open_det("blazeface", 0, &a) || !a);
    CHECK(open_det("blazeface-onnx", 0, &b) || !b);
    if (!a || !b) {
        ffu_detector_destroy(a);
        ffu_detector_destroy(b);
        TEST_SKIP("blazeface / blazeface-onnx not installed");
    }
    const char *imgs[] = {"two_people.jpg", "obama.jpg", "knn_examples/test/kit_with_rose.jpg",
                          "knn_examples/test/obama_and_biden.jpg"};
    ffu_face_list la = {0}, lb = {0};
    for (int i = 0; i < 4; i++) {
        /* padded to a centred square with black: the TF.js model (fed at a frame's
         * aspect, zoo row `aspect`) and its ONNX twin (letterboxed: its graph needs
         * the square) then see the same network input */
        ffu_image photo = {0}, img = {0};
        if (!load_example_square(imgs[i], &photo, &img))
            TEST_SKIP("../shared/data/face_recognition_examples missing");
        ffu_image_release(&photo);
        CHECK(ffu_detector_detect(a, &img, &la) == FFU_OK);
        CHECK(ffu_detector_detect(b, &img, &lb) == FFU_OK);
        CHECK(la.count >= 1);
        CHECK_EQ_INT(la.count, lb.count);
        for (int k = 0; k < la.count; k++) {
            CHECK_NEAR(la.faces[k].score, lb.faces[k].score, 1e-3);
            for (int j = 0; j < 4; j++)
                CHECK_NEAR(la.faces[k].box[j], lb.faces[k].box[j], 0.5);
            for (int j = 0; j < 10; j++)
                CHECK_NEAR(la.faces[k].kps[j], lb.faces[k].kps[j], 0.5);
        }
        ffu_image_release(&img);
    }
    ffu_face_list_free(&la);
    ffu_face_list_free(&lb);
    ffu_detector_destroy(a);
    ffu_detector_destroy(b);
}

/* Low min_score gives every candidate after NMS (for AP evaluation); max_faces keeps the
 * best; keypoints sit inside their boxes, the image-left eye left of the other. */
static void test_low_score_and_caps(void)
{
    ffu_image img = {0};
    if (!load_shared("data/face_recognition_examples/examples/two_people.jpg", &img))
        TEST_SKIP("../shared/data/face_recognition_examples missing");
    const char *names[32];
    int nd = detector_names(names, 32), tested = 0;
    ffu_face_list hi = {0}, lo = {0}, cap = {0};
    for (int m = 0; m < nd; m++) {
        ffu_detector *d, *dl, *dc;
        CHECK(open_det(names[m], 0, &d) || !d);
        if (!d)
            continue;
        tested++;
        ffu_detector_opts o;
        ffu_detector_opts_default(&o);
        o.m.model = names[m];
        o.min_score = 0.02f;
        CHECK(ffu_detector_create(&o, &dl) == FFU_OK);
        o.min_score = 0;
        o.max_faces = 1;
        CHECK(ffu_detector_create(&o, &dc) == FFU_OK);
        CHECK(ffu_detector_detect(d, &img, &hi) == FFU_OK);
        CHECK(ffu_detector_detect(dl, &img, &lo) == FFU_OK);
        CHECK(ffu_detector_detect(dc, &img, &cap) == FFU_OK);
        CHECK_EQ_INT(hi.count, 2);
        CHECK(lo.count >= hi.count); /* BlazeFace merges its low candidates in */
        for (int i = 0; i < lo.count; i++) {
            CHECK(lo.faces[i].score >= 0.02f && lo.faces[i].score <= 1.0f);
            CHECK(i == 0 || lo.faces[i].score <= lo.faces[i - 1].score);
        }
        CHECK_EQ_INT(cap.count, 1);
        CHECK(memcmp(cap.faces[0].box, hi.faces[0].box, sizeof cap.faces[0].box) == 0);
        for (int i = 0; i < hi.count; i++) {
            const ffu_face *f = &hi.faces[i];
            CHECK(f->kps[0] < f->kps[2]);
            for (int k = 0; k < 5; k++) {
                CHECK(f->kps[2 * k] > f->box[0] && f->kps[2 * k] < f->box[0] + f->box[2]);
                CHECK(f->kps[2 * k + 1] > f->box[1] && f->kps[2 * k + 1] < f->box[1] + f->box[3]);
            }
        }
        ffu_detector_destroy(d);
        ffu_detector_destroy(dl);
        ffu_detector_destroy(dc);
    }
    ffu_face_list_free(&hi);
    ffu_face_list_free(&lo);
    ffu_face_list_free(&cap);
    ffu_image_release(&img);
    if (!tested)
        TEST_SKIP("no detector installed");
}

/* A BGR, RGBA or grey copy of a photo gives the same faces as RGB (grey: roughly). */
static void test_pixel_formats(void)
{
    ffu_detector *d;
    CHECK(open_det(NULL, 0, &d) || !d);
    if (!d)
        TEST_SKIP("default detector not installed (scripts/setup)");
    char buf[1024];
    const char *p = test_shared_path("data/face_recognition_examples/examples/two_people.jpg",
                                     buf, sizeof buf);
    if (!p) {
        ffu_detector_destroy(d);
        TEST_SKIP("../shared/data/face_recognition_examples missing");
    }
    ffu_face_list ref = {0}, l = {0};
    ffu_image img = {0};
    CHECK(ffu_image_load(p, FFU_PIX_RGB24, &img) == FFU_OK);
    CHECK(ffu_detector_detect(d, &img, &ref) == FFU_OK);
    CHECK_EQ_INT(ref.count, 2);
    ffu_image_release(&img);
    static const ffu_pixfmt fmts[] = {FFU_PIX_BGR24, FFU_PIX_RGBA32, FFU_PIX_GRAY8};
    for (int i = 0; i < 3; i++) {
        CHECK(ffu_image_load(p, fmts[i], &img) == FFU_OK);
        CHECK(ffu_detector_detect(d, &img, &l) == FFU_OK);
        CHECK_EQ_INT(l.count, 2);
        /* same pixels, same faces; grey loses colour, not the faces */
        for (int k = 0; k < 2; k++) {
            if (fmts[i] == FFU_PIX_GRAY8) {
                float best = fmaxf(face_box_iou(l.faces[k].box, ref.faces[0].box),
                                   face_box_iou(l.faces[k].box, ref.faces[1].box));
                CHECK(best >= 0.8f);
            } else {
                for (int j = 0; j < 4; j++)
                    CHECK_NEAR(l.faces[k].box[j], ref.faces[k].box[j], 0.01);
            }
        }
        ffu_image_release(&img);
    }
    ffu_face_list_free(&ref);
    ffu_face_list_free(&l);
    ffu_detector_destroy(d);
}

TEST_MAIN(test_mtcnn_cascade, test_mtcnn_named_by_pnet, test_bad_input, test_expected_counts, test_dlib_recall, test_no_face, test_rotated,
          test_rotation_chosen, test_tiling_small_face, test_tiling_panorama,
          test_min_face_keeps_its_promise, test_blazeface_aspect, test_blazeface_twins,
          test_low_score_and_caps, test_pixel_formats, test_blazeface_full_face_head,
          test_blazeface_full_skips_person_head)
