/* The face stages on a CUDA device (backend "cuda"): the GPU half of
 * test_face_gpu.c, which checks everywhere what can be checked without one. Exits 77
 * (skipped) without a device.
 *
 * Detector and embedder on backend cuda against backend cpu on real photos (same faces:
 * IoU > 0.95, keypoints within 1 px, fp16 a little looser; blazeface-full's sessions
 * planned for the one head of its two that the decoder reads; embeddings cosine > 0.999
 * in f32, > 0.995 with fp16); ffu_detector_detect_gpu / ffu_embedder_run_gpu on an uploaded
 * RGB frame against the host call on the same pixels, and on an NV12 frame against the
 * host call on its RGB decoding; several frames at once (the pipeline's entry points);
 * tiles, rotations and grey host frames; landmarks, liveness and attributes on backend
 * cuda against cpu.
 *
 * Models and photos are named by file below so that scripts/gpu-pack packs them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "face/face_internal.h"
#include "facefuse/face.h"
#include "facefuse/gpu.h"
#include "test.h"
#include "test_face_gpu.h"

/* Zoo names with their files (the files only tell the packer what to take along). */
static const struct {
    const char *name, *file;
} detectors[] = {
    {"blazeface", "blazeface-back.json"},                        /* TF.js, NHWC, fixed */
    {"blazeface-full", "facemesh-detection-full.json"},          /* one head of two kept */
    {"yunet", "models/face_detection_yunet_2023mar.onnx"},       /* ONNX, NCHW, B,G,R */
    {"yunet-dynamic", "models/yunet_s_dynamic.onnx"},            /* any size, tiles */
    {"scrfd", "models/scrfd_500m_bnkps.onnx"},                   /* batch-free outputs */
}, embedders[] = {
    {"mobilefacenet-onnx", "models/mobilefacenet_insightface_pytorch.onnx"},
    {"faceres", "faceres.json"}, /* the default, B,G,R, 224 */
}, others[] = {
    {"facemesh", "facemesh.json"},
    {"antispoof", "antispoof.json"},
    {"gear", "gear.json"},
    {"emotion", "emotion.json"}, /* one grey channel */
};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- helpers ----------------------------------------------------------------------------- */

/* src turned 90 degrees clockwise into dst (created here). */
static int rotate_cw(const ffu_image *src, ffu_image *dst)
{
    if (ffu_image_create(dst, FFU_PIX_RGB24, src->height, src->width) != FFU_OK)
        return 0;
    for (int y = 0; y < dst->height; y++)
        for (int x = 0; x < dst->width; x++) {
            /* dst (x, y) shows src (y, H - 1 - x) */
            const uint8_t *p = src->data[0] + (size_t)(src->height - 1 - x) * src->stride[0] +
                               (size_t)y * 3;
            memcpy(dst->data[0] + (size_t)y * dst->stride[0] + (size_t)x * 3, p, 3);
        }
    return 1;
}

static double cosine(const float *a, const float *b, int n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

/* ---- with a device ---------------------------------------------------------------------- */

typedef struct gpu_ctx {
    ffu_gpu *gpu;
} gpu_ctx;

/* 1 with the device open; 0 = skip (no device). */
static int gpu_open(gpu_ctx *c)
{
    memset(c, 0, sizeof *c);
    if (ffu_gpu_device_count() <= 0)
        return 0;
    return ffu_gpu_open(0, &c->gpu) == FFU_OK;
}

static void gpu_close(gpu_ctx *c) { ffu_gpu_close(c->gpu); }

/* img uploaded into a new device image (synchronously). */
static int upload(gpu_ctx *c, const ffu_image *img, ffu_gpu_image *out)
{
    if (ffu_gpu_image_create(c->gpu, out, img->fmt, img->width, img->height) != FFU_OK)
        return 0;
    if (ffu_gpu_image_upload(NULL, img, out) != FFU_OK) {
        ffu_gpu_image_release(out);
        return 0;
    }
    return 1;
}

static ffu_status open_detector(const char *name, const char *backend, int fp16, int min_face,
                                int rotations, ffu_detector **d)
{
    ffu_detector_opts o;
    ffu_detector_opts_default(&o);
    o.m.model = name;
    o.m.backend = backend;
    o.m.fp16 = fp16;
    o.min_face = min_face;
    o.rotations = rotations;
    return ffu_detector_create(&o, d);
}

/* Every face of a that scores clearly above the threshold has a partner in b (IoU >
 * min_iou, every keypoint within kps_tol px, same rotation); faces near the threshold
 * may fall either side. */
static int faces_covered(const ffu_face_list *a, const ffu_face_list *b, float thr,
                         float min_iou, float kps_tol, const char *what)
{
    for (int i = 0; i < a->count; i++) {
        const ffu_face *f = &a->faces[i];
        if (f->score < thr + 0.03f)
            continue;
        int best = -1;
        float best_iou = 0;
        for (int j = 0; j < b->count; j++) {
            float v = face_box_iou(f->box, b->faces[j].box);
            if (v > best_iou) {
                best_iou = v;
                best = j;
            }
        }
        if (best < 0 || best_iou <= min_iou) {
            fprintf(stderr, "  %s: face %d (score %.3f, box %.1f %.1f %.1f %.1f) best IoU %.4f\n",
                    what, i, f->score, f->box[0], f->box[1], f->box[2], f->box[3], best_iou);
            return 0;
        }
        const ffu_face *g = &b->faces[best];
        if (g->rotation != f->rotation) {
            fprintf(stderr, "  %s: face %d rotation %d vs %d\n", what, i, f->rotation, g->rotation);
            return 0;
        }
        for (int k = 0; k < 10; k++)
            if (!(fabsf(f->kps[k] - g->kps[k]) <= kps_tol)) {
                fprintf(stderr, "  %s: face %d keypoint %d: %.2f vs %.2f\n", what, i, k / 2,
                        f->kps[k], g->kps[k]);
                return 0;
            }
    }
    return 1;
}

static int same_faces(const ffu_face_list *a, const ffu_face_list *b, float thr, float min_iou,
                      float kps_tol, const char *what)
{
    return faces_covered(a, b, thr, min_iou, kps_tol, what) &&
           faces_covered(b, a, thr, min_iou, kps_tol, what);
}

static void test_detector_cuda_vs_cpu(void)
{
    gpu_ctx c;
    if (!gpu_open(&c))
        TEST_SKIP("no CUDA device");
    static const char *photos[] = {PHOTO_TWO, PHOTO_OBAMA, PHOTO_GROUP, PHOTO_LFW};
    int tested = 0;
    for (int k = 0; k < COUNT(detectors); k++) {
        ffu_detector *cpu = NULL, *gpu = NULL, *g16 = NULL;
        ffu_status st = open_detector(detectors[k].name, "cpu", 0, 0, 0, &cpu);
        if (st == FFU_ERR_NOT_FOUND)
            continue;
        CHECK_EQ_INT(st, FFU_OK);
        st = open_detector(detectors[k].name, "cuda", 0, 0, 0, &gpu);
        if (st)
            fprintf(stderr, "  %s on cuda: %s\n", detectors[k].name, ffu_error_message());
        CHECK_EQ_INT(st, FFU_OK);
        CHECK_EQ_INT(open_detector(detectors[k].name, "cuda", 1, 0, 0, &g16), FFU_OK);
        CHECK(face_detector_on_gpu(gpu) && face_detector_on_gpu(g16));
        float thr = ffu_detector_model(cpu)->threshold;
        int faces_seen = 0, photos_seen = 0;
        for (int p = 0; p < COUNT(photos); p++) {
            ffu_image img, nv12, back;
            if (!load_photo(photos[p], FFU_PIX_RGB24, &img))
                continue;
            CHECK(to_nv12(&img, &nv12, &back));
            ffu_face_list lc = {0}, lg = {0}, l16 = {0}, ld = {0}, ln = {0}, lb = {0};
            char what[160];
            snprintf(what, sizeof what, "%s %s", detectors[k].name, photos[p]);
            CHECK_EQ_INT(ffu_detector_detect(cpu, &img, &lc), FFU_OK);
            CHECK_EQ_INT(ffu_detector_detect(gpu, &img, &lg), FFU_OK);
            CHECK(same_faces(&lc, &lg, thr, 0.95f, 1.0f, what));
            /* fp16: the same faces, a little looser */
            CHECK_EQ_INT(ffu_detector_detect(g16, &img, &l16), FFU_OK);
            CHECK(same_faces(&lc, &l16, thr + 0.05f, 0.9f, 2.5f, what));
            /* the frame already on the device: what the host call on the same pixels
             * gives (same kernel, same network) */
            ffu_gpu_image dimg, dnv;
            CHECK(upload(&c, &img, &dimg));
            CHECK(upload(&c, &nv12, &dnv));
            CHECK_EQ_INT(ffu_detector_detect_gpu(gpu, &dimg, &ld), FFU_OK);
            CHECK(same_faces(&lg, &ld, thr, 0.999f, 0.01f, what));
            CHECK_EQ_INT(ld.count, lg.count);
            /* NV12: the faces of its RGB decoding */
            CHECK_EQ_INT(ffu_detector_detect_gpu(gpu, &dnv, &ln), FFU_OK);
            CHECK_EQ_INT(ffu_detector_detect(gpu, &back, &lb), FFU_OK);
            CHECK(same_faces(&lb, &ln, thr, 0.999f, 0.01f, what));
            /* and near RGB's (chroma at half resolution moves scores a little) */
            CHECK(same_faces(&lc, &ln, thr + 0.1f, 0.85f, 4.0f, what));
            faces_seen += lc.count;
            photos_seen++;
            ffu_gpu_image_release(&dimg);
            ffu_gpu_image_release(&dnv);
            ffu_face_list_free(&lc);
            ffu_face_list_free(&lg);
            ffu_face_list_free(&l16);
            ffu_face_list_free(&ld);
            ffu_face_list_free(&ln);
            ffu_face_list_free(&lb);
            ffu_image_release(&img);
            ffu_image_release(&nv12);
            ffu_image_release(&back);
        }
        CHECK(faces_seen > 0 || photos_seen == 0);
        ffu_detector_destroy(cpu);
        ffu_detector_destroy(gpu);
        ffu_detector_destroy(g16);
        tested++;
    }
    gpu_close(&c);
    if (!tested)
        TEST_SKIP("no detector installed");
}

/* Several frames at once (the pipeline's cross-stream batch) = one by one; tiles and
 * rotations (many views, several runs per frame) and grey host frames on cuda = cpu. */
static void test_detector_cuda_multi_tiles_rotations(void)
{
    gpu_ctx c;
    if (!gpu_open(&c))
        TEST_SKIP("no CUDA device");
    ffu_image a, b;
    if (!load_photo(PHOTO_TWO, FFU_PIX_RGB24, &a) || !load_photo(PHOTO_GROUP, FFU_PIX_RGB24, &b))
        TEST_SKIP("../shared/data missing");
    ffu_detector *gpu = NULL, *cpu = NULL;
    ffu_status st = open_detector(NULL, "cuda", 0, 0, 0, &gpu);
    if (st == FFU_ERR_NOT_FOUND)
        TEST_SKIP("default detector not installed");
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(open_detector(NULL, "cpu", 0, 0, 0, &cpu), FFU_OK);
    float thr = ffu_detector_model(cpu)->threshold;
    ffu_gpu_image da, db;
    CHECK(upload(&c, &a, &da));
    CHECK(upload(&c, &b, &db));
    /* 5 frames: a batch of 4 + 1 (padding) when batchable */
    const ffu_gpu_image *frames[5] = {&da, &db, &da, &db, &da};
    ffu_face_list lists[5] = {{0}}, single = {0};
    ffu_face_list *outs[5];
    for (int i = 0; i < 5; i++)
        outs[i] = &lists[i];
    CHECK_EQ_INT(face_detector_detect_multi_gpu(gpu, frames, outs, 5), FFU_OK);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(ffu_detector_detect_gpu(gpu, frames[i], &single), FFU_OK);
        CHECK(same_faces(&single, &lists[i], thr, 0.99f, 0.1f, "multi_gpu"));
        CHECK(single.count > 0);
    }
    /* host frames through the multi entry point on a cuda handle too */
    const ffu_image *hframes[2] = {&a, &b};
    CHECK_EQ_INT(face_detector_detect_multi(gpu, hframes, outs, 2), FFU_OK);
    CHECK_EQ_INT(ffu_detector_detect(cpu, &b, &single), FFU_OK);
    CHECK(same_faces(&single, &lists[1], thr, 0.95f, 1.0f, "multi host on cuda"));

    /* grey host frames: warped on the CPU, copied up */
    ffu_image grey;
    CHECK_EQ_INT(ffu_image_create(&grey, FFU_PIX_GRAY8, a.width, a.height), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&a, &grey), FFU_OK);
    ffu_face_list lc = {0}, lg = {0};
    CHECK_EQ_INT(ffu_detector_detect(cpu, &grey, &lc), FFU_OK);
    CHECK_EQ_INT(ffu_detector_detect(gpu, &grey, &lg), FFU_OK);
    CHECK(same_faces(&lc, &lg, thr, 0.95f, 1.0f, "grey"));
    ffu_image_release(&grey);
    ffu_detector_destroy(gpu);
    ffu_detector_destroy(cpu);

    /* tiles (a dynamic model and min_face) and rotations: many views per frame */
    static const struct {
        const char *model;
        int min_face, rotations;
    } cfg[] = {{"yunet-dynamic", 12, 0}, {NULL, 0, 1}, {"yunet", 16, 1}};
    ffu_image turned;
    CHECK(rotate_cw(&a, &turned));
    ffu_gpu_image dt;
    CHECK(upload(&c, &turned, &dt));
    for (int k = 0; k < COUNT(cfg); k++) {
        st = open_detector(cfg[k].model, "cpu", 0, cfg[k].min_face, cfg[k].rotations, &cpu);
        if (st == FFU_ERR_NOT_FOUND)
            continue;
        CHECK_EQ_INT(st, FFU_OK);
        CHECK_EQ_INT(open_detector(cfg[k].model, "cuda", 0, cfg[k].min_face, cfg[k].rotations,
                                   &gpu), FFU_OK);
        thr = ffu_detector_model(cpu)->threshold;
        const ffu_image *himg = cfg[k].rotations ? &turned : &b;
        const ffu_gpu_image *dimg = cfg[k].rotations ? &dt : &db;
        ffu_face_list ld = {0};
        CHECK_EQ_INT(ffu_detector_detect(cpu, himg, &lc), FFU_OK);
        CHECK_EQ_INT(ffu_detector_detect(gpu, himg, &lg), FFU_OK);
        CHECK_EQ_INT(ffu_detector_detect_gpu(gpu, dimg, &ld), FFU_OK);
        CHECK(lc.count > 0);
        CHECK(same_faces(&lc, &lg, thr, 0.95f, 1.0f, "tiles/rotations"));
        CHECK(same_faces(&lg, &ld, thr, 0.999f, 0.01f, "tiles/rotations _gpu"));
        ffu_face_list_free(&ld);
        ffu_detector_destroy(cpu);
        ffu_detector_destroy(gpu);
    }
    ffu_gpu_image_release(&dt);
    ffu_image_release(&turned);
    for (int i = 0; i < 5; i++)
        ffu_face_list_free(&lists[i]);
    ffu_face_list_free(&single);
    ffu_face_list_free(&lc);
    ffu_face_list_free(&lg);
    ffu_gpu_image_release(&da);
    ffu_gpu_image_release(&db);
    ffu_image_release(&a);
    ffu_image_release(&b);
    gpu_close(&c);
}

/* Faces (box + keypoints) of a photo by the cpu default detector. */
static int cpu_faces(const ffu_image *img, ffu_face_list *out)
{
    ffu_detector *d = NULL;
    if (ffu_detector_create(NULL, &d))
        return 0;
    int ok = ffu_detector_detect(d, img, out) == FFU_OK && out->count > 0;
    ffu_detector_destroy(d);
    return ok;
}

static void test_embedder_cuda_vs_cpu(void)
{
    gpu_ctx c;
    if (!gpu_open(&c))
        TEST_SKIP("no CUDA device");
    static const char *photos[] = {PHOTO_TWO, PHOTO_OBAMA, PHOTO_OBAMA2, PHOTO_BIDEN};
    ffu_image img[4], nv12[4], back[4];
    ffu_face_list faces[4] = {{0}};
    for (int p = 0; p < 4; p++) {
        if (!load_photo(photos[p], FFU_PIX_RGB24, &img[p]))
            TEST_SKIP("../shared/data/face_recognition_examples missing");
        if (!cpu_faces(&img[p], &faces[p]))
            TEST_SKIP("default detector not installed or no face found");
        CHECK(to_nv12(&img[p], &nv12[p], &back[p]));
    }
    int tested = 0;
    for (int k = 0; k < COUNT(embedders); k++) {
        ffu_face_model_opts mo = {.model = embedders[k].name, .backend = "cpu"};
        ffu_embedder *cpu = NULL, *gpu = NULL, *g16 = NULL;
        ffu_status st = ffu_embedder_create(&mo, &cpu);
        if (st == FFU_ERR_NOT_FOUND)
            continue;
        CHECK_EQ_INT(st, FFU_OK);
        mo.backend = "cuda";
        st = ffu_embedder_create(&mo, &gpu);
        if (st)
            fprintf(stderr, "  %s on cuda: %s\n", embedders[k].name, ffu_error_message());
        CHECK_EQ_INT(st, FFU_OK);
        mo.fp16 = 1;
        CHECK_EQ_INT(ffu_embedder_create(&mo, &g16), FFU_OK);
        CHECK(face_embedder_on_gpu(gpu) && face_embedder_on_gpu(g16));
        int dim = ffu_embedder_dim(cpu);
        CHECK_EQ_INT(ffu_embedder_dim(gpu), dim);
        CHECK_EQ_INT(ffu_embedder_dim(g16), dim);
        for (int p = 0; p < 4; p++) {
            int n = faces[p].count;
            ffu_face *fc = calloc((size_t)n, sizeof *fc), *fg = calloc((size_t)n, sizeof *fg);
            ffu_face *f16 = calloc((size_t)n, sizeof *f16), *fd = calloc((size_t)n, sizeof *fd);
            ffu_face *fn = calloc((size_t)n, sizeof *fn), *fb = calloc((size_t)n, sizeof *fb);
            CHECK(fc && fg && f16 && fd && fn && fb);
            for (int i = 0; i < n; i++)
                fc[i] = fg[i] = f16[i] = fd[i] = fn[i] = fb[i] = faces[p].faces[i];
            CHECK_EQ_INT(ffu_embedder_run(cpu, &img[p], fc, n), FFU_OK);
            CHECK_EQ_INT(ffu_embedder_run(gpu, &img[p], fg, n), FFU_OK);
            CHECK_EQ_INT(ffu_embedder_run(g16, &img[p], f16, n), FFU_OK);
            ffu_gpu_image dimg, dnv;
            CHECK(upload(&c, &img[p], &dimg));
            CHECK(upload(&c, &nv12[p], &dnv));
            CHECK_EQ_INT(ffu_embedder_run_gpu(gpu, &dimg, fd, n), FFU_OK);
            CHECK_EQ_INT(ffu_embedder_run_gpu(gpu, &dnv, fn, n), FFU_OK);
            CHECK_EQ_INT(ffu_embedder_run(gpu, &back[p], fb, n), FFU_OK);
            for (int i = 0; i < n; i++) {
                CHECK_EQ_INT(fg[i].embedding_dim, dim);
                CHECK_EQ_INT(fd[i].embedding_dim, dim);
                CHECK_EQ_INT(fn[i].embedding_dim, dim);
                double c32 = cosine(fc[i].embedding, fg[i].embedding, dim);
                double c16 = cosine(fc[i].embedding, f16[i].embedding, dim);
                double cdev = cosine(fg[i].embedding, fd[i].embedding, dim);
                double cnv = cosine(fb[i].embedding, fn[i].embedding, dim);
                if (!(c32 > 0.999 && c16 > 0.995 && cdev > 0.99999 && cnv > 0.99999))
                    fprintf(stderr, "  %s %s face %d: cos f32 %.6f fp16 %.6f device %.7f "
                            "nv12 %.7f\n", embedders[k].name, photos[p], i, c32, c16, cdev, cnv);
                CHECK(c32 > 0.999);
                CHECK(c16 > 0.995);
                CHECK(cdev > 0.99999);
                CHECK(cnv > 0.99999);
            }
            ffu_gpu_image_release(&dimg);
            ffu_gpu_image_release(&dnv);
            free(fc), free(fg), free(f16), free(fd), free(fn), free(fb);
        }
        /* faces of different frames in one run (the pipeline) = one frame at a time */
        ffu_gpu_image d0, d3;
        CHECK(upload(&c, &img[0], &d0));
        CHECK(upload(&c, &img[3], &d3));
        ffu_face m[3] = {faces[0].faces[0], faces[3].faces[0], faces[0].faces[faces[0].count - 1]};
        ffu_face s[3];
        memcpy(s, m, sizeof s);
        const ffu_gpu_image *fr[3] = {&d0, &d3, &d0};
        ffu_face *mp[3] = {&m[0], &m[1], &m[2]};
        CHECK_EQ_INT(face_embedder_run_multi_gpu(gpu, fr, mp, 3), FFU_OK);
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(ffu_embedder_run_gpu(gpu, fr[i], &s[i], 1), FFU_OK);
            CHECK(cosine(m[i].embedding, s[i].embedding, dim) > 0.99999);
        }
        ffu_gpu_image_release(&d0);
        ffu_gpu_image_release(&d3);
        ffu_embedder_destroy(cpu);
        ffu_embedder_destroy(gpu);
        ffu_embedder_destroy(g16);
        tested++;
    }
    for (int p = 0; p < 4; p++) {
        ffu_face_list_free(&faces[p]);
        ffu_image_release(&img[p]);
        ffu_image_release(&nv12[p]);
        ffu_image_release(&back[p]);
    }
    gpu_close(&c);
    if (!tested)
        TEST_SKIP("no embedder installed");
}

/* Landmarks, liveness and attributes take host images only; on backend cuda they go
 * through the same face_net and must give what cpu gives. */
static void test_other_stages_cuda(void)
{
    gpu_ctx c;
    if (!gpu_open(&c))
        TEST_SKIP("no CUDA device");
    ffu_image img;
    ffu_face_list faces = {0};
    if (!load_photo(PHOTO_OBAMA, FFU_PIX_RGB24, &img))
        TEST_SKIP("../shared/data/face_recognition_examples missing");
    if (!cpu_faces(&img, &faces))
        TEST_SKIP("default detector not installed");
    const ffu_face *f0 = &faces.faces[0];
    int tested = 0;
    for (int k = 0; k < COUNT(others); k++) {
        const char *name = others[k].name;
        ffu_face fc, fg;
        fc = *f0, fg = *f0;
        fc.landmarks = fg.landmarks = NULL;
        fc.num_landmarks = fg.num_landmarks = 0;
        ffu_status sc, sg;
        if (!strcmp(name, "facemesh")) {
            ffu_landmarker_opts lo;
            ffu_landmarker_opts_default(&lo);
            lo.m.model = name;
            ffu_landmarker *lc = NULL, *lg = NULL;
            if ((sc = ffu_landmarker_create(&lo, &lc)) == FFU_ERR_NOT_FOUND)
                continue;
            CHECK_EQ_INT(sc, FFU_OK);
            lo.m.backend = "cuda";
            CHECK_EQ_INT(ffu_landmarker_create(&lo, &lg), FFU_OK);
            /* the list owns landmarks: run on faces pushed into lists */
            ffu_face_list a = {0}, b = {0};
            ffu_face *pa = ffu_face_list_push(&a), *pb = ffu_face_list_push(&b);
            CHECK(pa && pb);
            memcpy(pa->box, f0->box, sizeof pa->box);
            memcpy(pa->kps, f0->kps, sizeof pa->kps);
            memcpy(pb->box, f0->box, sizeof pb->box);
            memcpy(pb->kps, f0->kps, sizeof pb->kps);
            CHECK_EQ_INT(ffu_landmarker_run(lc, &img, pa), FFU_OK);
            CHECK_EQ_INT(ffu_landmarker_run(lg, &img, pb), FFU_OK);
            CHECK(pa->num_landmarks > 0);
            CHECK_EQ_INT(pa->num_landmarks, pb->num_landmarks);
            double worst = 0;
            for (int i = 0; i < pa->num_landmarks * 2; i++) {
                int j = i / 2 * 3 + i % 2; /* x, y of each (x, y, z) */
                worst = fmax(worst, fabs(pa->landmarks[j] - pb->landmarks[j]));
            }
            if (!(worst <= 1.0))
                fprintf(stderr, "  facemesh: landmarks differ by %.3f px\n", worst);
            CHECK(worst <= 1.0);
            ffu_face_list_free(&a);
            ffu_face_list_free(&b);
            ffu_landmarker_destroy(lc);
            ffu_landmarker_destroy(lg);
        } else if (!strcmp(name, "antispoof")) {
            ffu_face_model_opts mo = {.model = name};
            ffu_liveness *lc = NULL, *lg = NULL;
            if ((sc = ffu_liveness_create(&mo, &lc)) == FFU_ERR_NOT_FOUND)
                continue;
            CHECK_EQ_INT(sc, FFU_OK);
            mo.backend = "cuda";
            CHECK_EQ_INT(ffu_liveness_create(&mo, &lg), FFU_OK);
            CHECK_EQ_INT(ffu_liveness_run(lc, &img, &fc), FFU_OK);
            CHECK_EQ_INT(ffu_liveness_run(lg, &img, &fg), FFU_OK);
            CHECK_NEAR(fc.liveness, fg.liveness, 0.01);
            ffu_liveness_destroy(lc);
            ffu_liveness_destroy(lg);
        } else {
            ffu_face_model_opts mo = {.model = name};
            ffu_attributes *ac = NULL, *ag = NULL;
            if ((sc = ffu_attributes_create(&mo, &ac)) == FFU_ERR_NOT_FOUND)
                continue;
            CHECK_EQ_INT(sc, FFU_OK);
            mo.backend = "cuda";
            CHECK_EQ_INT(ffu_attributes_create(&mo, &ag), FFU_OK);
            CHECK_EQ_INT((sc = ffu_attributes_run(ac, &img, &fc)), FFU_OK);
            CHECK_EQ_INT((sg = ffu_attributes_run(ag, &img, &fg)), FFU_OK);
            if (!isnan(fc.attr.age)) {
                CHECK_NEAR(fc.attr.age, fg.attr.age, 0.5);
                CHECK_NEAR(fc.attr.gender_male, fg.attr.gender_male, 0.01);
            }
            CHECK_EQ_INT(fc.attr.emotion, fg.attr.emotion);
            for (int i = 0; i < 7 && fc.attr.emotion >= 0; i++)
                CHECK_NEAR(fc.attr.emotion_prob[i], fg.attr.emotion_prob[i], 0.01);
            ffu_attributes_destroy(ac);
            ffu_attributes_destroy(ag);
        }
        tested++;
    }
    ffu_face_list_free(&faces);
    ffu_image_release(&img);
    gpu_close(&c);
    if (!tested)
        TEST_SKIP("no landmark, liveness or attribute model installed");
}

TEST_MAIN(test_detector_cuda_vs_cpu, test_detector_cuda_multi_tiles_rotations,
          test_embedder_cuda_vs_cpu, test_other_stages_cuda)
