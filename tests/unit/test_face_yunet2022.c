/* The 2022mar YuNet decoder (zoo "yunet2022") against OpenCV's own FaceDetectorYN:
 * bench/yunet/ref_yunet2022.py (run by Debian's /usr/bin/python3 with python3-opencv,
 * when it is there) fits real photos from ../shared/data to the network input, writes
 * them as PNGs and detects with FaceDetectorYN; facefuse then reads the same pixels and
 * must give the same faces (count, boxes IoU >= 0.9, scores within 0.01) -- at the
 * 160x120 the file declares, and at 640x640 and 416x320 (the zoo row is dynamic, so
 * the session may change the declared size: free_dims). Without OpenCV that part skips;
 * the decoder still has to find the faces of the labelled photos with sane keypoints,
 * and refuse a model of the wrong format. Skips when the model or data are absent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "face/face_internal.h"
#include "facefuse/face.h"
#include "test.h"

#define MODEL_REL "models/face_detection_yunet_2022mar.onnx"
#define REF_SCORE 0.6f /* below the default, so NMS has overlapping candidates to drop */
#define REF_NMS 0.3f
/* the input size the model file declares (1x3x120x160), so the engine runs it there */
#define NET_W 160
#define NET_H 120

static const char *photos[] = {
    "data/face_recognition_examples/examples/obama.jpg",
    "data/face_recognition_examples/examples/two_people.jpg",
    "data/face_recognition_examples/examples/biden.jpg",
    "data/face_recognition_examples/examples/obama2.jpg",
    "data/face_recognition_examples/examples/alex-lacamoire.png",
    "data/face_recognition_examples/examples/lin-manuel-miranda.png",
    "data/widerface/images/13--Interview/13_Interview_Interview_2_People_Visible_13_155.jpg",
    "data/widerface/images/12--Group/12_Group_Group_12_Group_Group_12_101.jpg",
    "data/widerface/images/1--Handshaking/1_Handshaking_Handshaking_1_107.jpg",
    ("data/widerface/images/50--Celebration_Or_Party/"
     "50_Celebration_Or_Party_birthdayparty_50_144.jpg"), /* () : one string, for clang */
};
#define NPHOTOS ((int)(sizeof photos / sizeof photos[0]))

/* 0 with *d = NULL when the model is not installed. */
static int open_det(const char *model, float score, float nms, ffu_detector **d)
{
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = model;
    o.m.threads = 1;
    o.min_score = score;
    o.nms_iou = nms;
    ffu_status st = ffu_detector_create(&o, d);
    if (st == FFU_ERR_NOT_FOUND) {
        *d = NULL;
        return 0;
    }
    if (st)
        fprintf(stderr, "%s: %s\n", model, ffu_error_message());
    return st == FFU_OK;
}

static void test_zoo_row(void)
{
    const ffu_zoo_entry *e = ffu_zoo_find("yunet2022");
    CHECK(e != NULL);
    CHECK_STR(e->family, "yunet2022");
    CHECK_EQ_INT(e->role, FFU_ROLE_DETECT);
    CHECK(e->bgr == 1 && e->norm_mean == 0.0f && e->norm_std == 1.0f); /* B,G,R 0..255 */
    CHECK(strstr(e->file, "face_detection_yunet_2022mar.onnx") != NULL);
    CHECK(!e->is_default);
}

/* Without OpenCV: the labelled photos give their faces, keypoints inside the box in
 * face order (eyes above nose above mouth, image-left first). */
static void test_photos(void)
{
    char buf[1024];
    if (!test_shared_path(MODEL_REL, buf, sizeof buf))
        TEST_SKIP("no ../shared/models/face_detection_yunet_2022mar.onnx");
    const struct {
        const char *rel;
        int faces;
    } cases[] = {
        {"data/face_recognition_examples/examples/obama.jpg", 1},
        {"data/face_recognition_examples/examples/two_people.jpg", 2},
        {"data/face_recognition_examples/examples/biden.jpg", 1},
    };
    ffu_detector *d = NULL;
    CHECK(open_det("yunet2022", 0, 0, &d));
    ffu_face_list l = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ffu_image img = {0};
        const char *p = test_shared_path(cases[i].rel, buf, sizeof buf);
        if (!p || ffu_image_load(p, FFU_PIX_RGB24, &img)) {
            ffu_image_release(&img);
            continue;
        }
        ffu_status st = ffu_detector_detect(d, &img, &l);
        ffu_image_release(&img);
        CHECK_EQ_INT(st, FFU_OK);
        CHECK_EQ_INT(l.count, cases[i].faces);
        for (int f = 0; f < l.count; f++) {
            const ffu_face *fc = &l.faces[f];
            CHECK(fc->score >= 0.9f && fc->score <= 1.0f);
            CHECK(fc->box[2] > 20 && fc->box[3] > 20);
            for (int k = 0; k < FFU_FACE_NUM_KPS; k++) {
                CHECK(fc->kps[2 * k] > fc->box[0] && fc->kps[2 * k] < fc->box[0] + fc->box[2]);
                CHECK(fc->kps[2 * k + 1] > fc->box[1] &&
                      fc->kps[2 * k + 1] < fc->box[1] + fc->box[3]);
            }
            CHECK(fc->kps[0] < fc->kps[2]);                 /* eyes, image-left first */
            CHECK(fc->kps[6] < fc->kps[8]);                 /* mouth corners */
            CHECK(fc->kps[5] > fmaxf(fc->kps[1], fc->kps[3])); /* nose below the eyes */
            CHECK(fc->kps[7] > fc->kps[5] && fc->kps[9] > fc->kps[5]); /* mouth below */
        }
    }
    ffu_face_list_free(&l);
    ffu_detector_destroy(d);
}

/* A model of another format under the yunet2022 family is refused with a reason. */
static void test_wrong_model(void)
{
    char buf[1024], spec[1100];
    const char *p = test_shared_path("models/face_detection_yunet_2023mar.onnx", buf, sizeof buf);
    if (!p)
        TEST_SKIP("no ../shared/models/face_detection_yunet_2023mar.onnx");
    snprintf(spec, sizeof spec, "yunet2022:%s", p);
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = spec;
    ffu_detector *d = (ffu_detector *)&o; /* must come back NULL */
    CHECK_EQ_INT(ffu_detector_create(&o, &d), FFU_ERR_UNSUPPORTED);
    CHECK(d == NULL);
    CHECK(strstr(ffu_error_message(), "loc") != NULL);
}

/* One OpenCV face read from the reference script. */
typedef struct ref_face {
    float box[4], score;
} ref_face;

/* Runs the reference script at w x h into tmp/sub and compares facefuse's detector
 * `spec` on the PNGs it wrote (a CHECK failure marks the calling test failed). */
static void compare_with_opencv(const char *spec, const char *model, int w, int h,
                                const char *sub)
{
    char buf[1024], tmp[600];
    const char *root = test_tmpdir_auto();
    CHECK(root != NULL);
    snprintf(tmp, sizeof tmp, "%s/%s", root, sub);
    CHECK(mkdir(tmp, 0700) == 0);
    ffu_detector *d = NULL;
    CHECK(open_det(spec, REF_SCORE, REF_NMS, &d));

    /* the command: the script, the model, the size the engine runs, thresholds, photos */
    size_t cap = 16384, len = 0;
    char *cmd = malloc(cap);
    if (!cmd)
        ffu_detector_destroy(d);
    CHECK(cmd != NULL);
    len += (size_t)snprintf(cmd + len, cap - len,
                            "/usr/bin/python3 %s/bench/yunet/ref_yunet2022.py '%s' '%s' %d %d "
                            "%g %g", FFU_TEST_SOURCE_DIR, model, tmp, w, h,
                            REF_SCORE, REF_NMS);
    int used = 0;
    for (int i = 0; i < NPHOTOS && len < cap - 1100; i++) {
        const char *p = test_shared_path(photos[i], buf, sizeof buf);
        if (p) {
            len += (size_t)snprintf(cmd + len, cap - len, " '%s'", p);
            used++;
        }
    }
    if (used < 3) {
        free(cmd);
        ffu_detector_destroy(d);
        TEST_SKIP("too few ../shared/data photos");
    }
    FILE *f = popen(cmd, "r");
    free(cmd);
    if (!f)
        ffu_detector_destroy(d);
    CHECK(f != NULL);

    char line[512], path[512] = "";
    ref_face ref[256];
    int nref = 0, want = -1, images = 0, total = 0, fails = 0;
    ffu_face_list l = {0};
    /* compares the image read so far (path, want faces in ref) with facefuse */
    int more = 1;
    while (more) {
        more = fgets(line, sizeof line, f) != NULL;
        if ((!more || !strncmp(line, "img ", 4)) && want >= 0) {
            ffu_image img = {0};
            if (ffu_image_load(path, FFU_PIX_BGR24, &img) || img.width != w ||
                img.height != h) {
                fprintf(stderr, "cannot read %s at %dx%d\n", path, w, h);
                fails++;
            } else if (ffu_detector_detect(d, &img, &l)) {
                fprintf(stderr, "%s: %s\n", path, ffu_error_message());
                fails++;
            } else {
                int ok = l.count == want && nref == want;
                char used_ours[256] = {0};
                for (int r = 0; ok && r < nref; r++) {
                    int best = -1;
                    float bi = 0;
                    for (int k = 0; k < l.count && k < 256; k++) {
                        float v = face_box_iou(ref[r].box, l.faces[k].box);
                        if (!used_ours[k] && v > bi) {
                            bi = v;
                            best = k;
                        }
                    }
                    if (best < 0 || bi < 0.9f || fabsf(l.faces[best].score - ref[r].score) > 0.01f)
                        ok = 0;
                    else
                        used_ours[best] = 1;
                }
                if (!ok) {
                    fprintf(stderr, "%s: OpenCV %d faces, facefuse %d\n", path, want, l.count);
                    for (int r = 0; r < nref; r++)
                        fprintf(stderr, "  cv  %.1f %.1f %.1f %.1f %.4f\n", ref[r].box[0],
                                ref[r].box[1], ref[r].box[2], ref[r].box[3], ref[r].score);
                    for (int k = 0; k < l.count; k++)
                        fprintf(stderr, "  ffu %.1f %.1f %.1f %.1f %.4f\n", l.faces[k].box[0],
                                l.faces[k].box[1], l.faces[k].box[2], l.faces[k].box[3],
                                l.faces[k].score);
                    fails++;
                }
                total += want;
            }
            ffu_image_release(&img);
            images++;
            want = -1;
        }
        if (!more)
            break;
        if (!strncmp(line, "img ", 4)) {
            if (sscanf(line + 4, "%511s %d", path, &want) != 2)
                want = -1;
            nref = 0;
        } else if (!strncmp(line, "face ", 5) && nref < 256) {
            ref_face *r = &ref[nref];
            if (sscanf(line + 5, "%f %f %f %f %f", &r->box[0], &r->box[1], &r->box[2],
                       &r->box[3], &r->score) == 5)
                nref++;
        }
    }
    int rc = pclose(f);
    ffu_face_list_free(&l);
    ffu_detector_destroy(d);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(images, used);
    CHECK_EQ_INT(fails, 0);
    CHECK(total >= used); /* real faces were compared, not just empty lists */
}

static int have_opencv(void)
{
    return !access("/usr/bin/python3", X_OK) &&
           !system("/usr/bin/python3 -c 'import cv2; cv2.FaceDetectorYN' >/dev/null 2>&1");
}

/* At the size the file declares, and at 640x640 and 416x320 as FaceDetectorYN runs the
 * file (setInputSize): the zoo row is dynamic, so facefuse changes the declared size.
 * Sides are multiples of 32, so facefuse's dynamic input (rounded up to 32) is the same
 * size. */
static void test_matches_opencv(void)
{
    char mbuf[1024];
    const char *model = test_shared_path(MODEL_REL, mbuf, sizeof mbuf);
    if (!model)
        TEST_SKIP("no ../shared/models/face_detection_yunet_2022mar.onnx");
    if (!have_opencv())
        TEST_SKIP("no OpenCV FaceDetectorYN for /usr/bin/python3 (apt-get install "
                  "python3-opencv)");
    compare_with_opencv("yunet2022", model, NET_W, NET_H, "declared");
    compare_with_opencv("yunet2022", model, 640, 640, "640");
    compare_with_opencv("yunet2022", model, 416, 320, "416");
}

TEST_MAIN(test_zoo_row, test_photos, test_wrong_model, test_matches_opencv)
