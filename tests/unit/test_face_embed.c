/* Tests for face alignment and the embedders (src/face/embed.c): the aligned crop puts
 * keypoints on the template, every embedder that is installed tells two photos of
 * Obama apart from one of Biden, a batch gives what single runs give, the crop follows
 * the keypoints (a rotated, scaled copy of a photo embeds like the original), and bad
 * input gives errors. Keypoints come from the default detector through the public
 * API; tests that need a model or ../shared data skip without them. */
#include <math.h>
#include <string.h>

#include "face/eval_run.h"
#include "face/face_internal.h"
#include "facefuse/face.h"
#include "test.h"

/* What each embedder of the zoo must report. */
static const struct {
    const char *name;
    int dim;
    /* The packaged TF.js mobilefacenet maps every face to nearly the same vector (the
     * same in TensorFlow.js: cosine 0.9999 between different people; docs/EVAL.md), so
     * it cannot be held to the identity checks. */
    int discriminates;
} embedders[] = {
    {"mobilefacenet", 192, 0},
    {"faceres", 1024, 1},
    {"mobileface", 256, 1},
    {"mobilefacenet-onnx", 128, 1},
    {"dlib-resnet", 128, 1},
    {"mobilefacenet-tflite", 192, 1},
    {"dlib-mobilefacenet", 320, 1},
};
#define NUM_EMBEDDERS ((int)(sizeof embedders / sizeof embedders[0]))

/* Opens embedder `name`, or returns NULL when its model is not installed here (any
 * other failure is a test failure, reported through *failed). */
static ffu_embedder *open_embedder(const char *name, int *failed)
{
    ffu_face_model_opts o = {.model = name, .backend = NULL, .threads = 0};
    ffu_embedder *e = NULL;
    ffu_status st = ffu_embedder_create(&o, &e);
    *failed = 0;
    if (st == FFU_ERR_NOT_FOUND)
        return NULL;
    if (st) {
        fprintf(stderr, "embedder %s: %s\n", name, ffu_error_message());
        *failed = 1;
    }
    return e;
}

static int load_shared_image(const char *rel, ffu_image *img)
{
    char buf[1024];
    const char *path = test_shared_path(rel, buf, sizeof buf);
    return path && ffu_image_load(path, FFU_PIX_RGB24, img) == FFU_OK;
}

/* The most confident face of img by the default detector; 0 when none or no model. */
static int detect_one(const ffu_image *img, ffu_face *out)
{
    ffu_detector *d = NULL;
    if (ffu_detector_create(NULL, &d))
        return 0;
    ffu_face_list l = {0};
    int ok = ffu_detector_detect(d, img, &l) == FFU_OK && l.count > 0;
    if (ok) {
        ffu_face_init(out);
        memcpy(out->box, l.faces[0].box, sizeof out->box);
        memcpy(out->kps, l.faces[0].kps, sizeof out->kps);
    }
    ffu_face_list_free(&l);
    ffu_detector_destroy(d);
    return ok;
}

/* ---- alignment ------------------------------------------------------------------------ */

/* Adds a Gaussian blob (sigma px) centred at continuous point (cx, cy). */
static void draw_blob(ffu_image *img, float cx, float cy, float sigma)
{
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            float dx = x + 0.5f - cx, dy = y + 0.5f - cy;
            float v = 220.0f * expf(-(dx * dx + dy * dy) / (2 * sigma * sigma));
            uint8_t *p = img->data[0] + (size_t)y * img->stride[0] + 3 * x;
            for (int c = 0; c < 3; c++) {
                float s = p[c] + v;
                p[c] = (uint8_t)(s > 255 ? 255 : s);
            }
        }
}

/* Intensity-weighted centroid (continuous coordinates) of channel 0 above `floor` in a
 * window of radius r around (x0, y0). */
static void centroid(const ffu_image *img, float x0, float y0, int r, float floor, float *cx,
                     float *cy)
{
    double sw = 0, sx = 0, sy = 0;
    for (int y = (int)y0 - r; y <= (int)y0 + r; y++)
        for (int x = (int)x0 - r; x <= (int)x0 + r; x++) {
            if (x < 0 || y < 0 || x >= img->width || y >= img->height)
                continue;
            double v = img->data[0][(size_t)y * img->stride[0] + 3 * x] - floor;
            if (v <= 0)
                continue;
            sw += v;
            sx += v * (x + 0.5);
            sy += v * (y + 0.5);
        }
    *cx = sw > 0 ? (float)(sx / sw) : -1;
    *cy = sw > 0 ? (float)(sy / sw) : -1;
}

/* A known similarity image -> crop (scale, rotation, crop centre from image point
 * (cx, cy)); keypoints placed at its inverse image of the template; the crop must show
 * the blobs on the template points (0.5 px) and the returned transform must be that
 * similarity. */
static void check_align(const char *tmpl, int size, double scale, double angle_deg, double cx,
                        double cy)
{
    const float *t = ffu_align_template(tmpl);
    CHECK(t != NULL);
    double a = angle_deg * M_PI / 180, c = scale * cos(a), s = scale * sin(a);
    double fwd[6] = {c, -s, 0, s, c, 0}, inv[6];
    fwd[2] = size / 2.0 - (c * cx - s * cy);
    fwd[5] = size / 2.0 - (s * cx + c * cy);
    CHECK(ffu_affine_invert(fwd, inv) == FFU_OK);
    ffu_image img = {0}, crop = {0};
    CHECK(ffu_image_create(&img, FFU_PIX_RGB24, 260, 230) == FFU_OK);
    for (int y = 0; y < img.height; y++)
        memset(img.data[0] + (size_t)y * img.stride[0], 20, 3 * (size_t)img.width);
    float kps[10], want[10];
    for (int i = 0; i < 5; i++) {
        want[2 * i] = t[2 * i] * size + 0.5f;
        want[2 * i + 1] = t[2 * i + 1] * size + 0.5f;
        ffu_transform_point(inv, want[2 * i], want[2 * i + 1], &kps[2 * i], &kps[2 * i + 1]);
        draw_blob(&img, kps[2 * i], kps[2 * i + 1], (float)(2.2 / scale));
    }
    double m[6];
    ffu_status st = ffu_face_align(&img, kps, tmpl, size, &crop, m);
    if (st) {
        ffu_image_release(&img);
        CHECK(st == FFU_OK);
    }
    int ok = crop.width == size && crop.height == size;
    for (int k = 0; k < 6; k++)
        ok &= fabs(m[k] - fwd[k]) < 1e-3 * (k == 2 || k == 5 ? 100 : 1);
    float worst = 0;
    for (int i = 0; i < 5; i++) {
        float gx, gy;
        centroid(&crop, want[2 * i], want[2 * i + 1], 6, 22, &gx, &gy);
        float d = hypotf(gx - want[2 * i], gy - want[2 * i + 1]);
        if (d > worst)
            worst = d;
    }
    ffu_image_release(&img);
    ffu_image_release(&crop);
    CHECK(ok);
    printf("  %s %.2f: worst %.3f px\n", tmpl, scale, worst);
    CHECK_NEAR(worst, 0, 0.1); /* the issue asks 0.5 px; bilinear sampling does far better */
}

static void test_align_puts_keypoints_on_template(void)
{
    check_align("arcface_112_v2", 112, 0.62, 17, 131.3, 117.8);
    check_align("arcface_112_v2", 112, 1.35, -40, 90.6, 140.2);
    check_align("arcface_128", 128, 0.8, 90, 150, 100);
    check_align("ffhq_512", 256, 1.7, -8, 120.5, 110.5);
    check_align("dlib_150", 150, 0.9, 12, 140.5, 120.5);
}

static void test_align_bad_input(void)
{
    ffu_image img = {0}, crop = {0};
    CHECK(ffu_image_create(&img, FFU_PIX_RGB24, 64, 64) == FFU_OK);
    float kps[10] = {20, 25, 44, 25, 32, 35, 22, 46, 42, 46};
    double m[6] = {1, 1, 1, 1, 1, 1};
    int unknown = ffu_face_align(&img, kps, "no_such_template", 112, &crop, m) == FFU_ERR_INVALID;
    int zeroed = m[0] == 0 && m[4] == 0;
    int tiny = ffu_face_align(&img, kps, "arcface_112_v2", 2, &crop, NULL) == FFU_ERR_INVALID;
    float same[10] = {10, 10, 10, 10, 10, 10, 10, 10, 10, 10}; /* no similarity exists */
    int degenerate = ffu_face_align(&img, same, "arcface_112_v2", 112, &crop, NULL) != FFU_OK;
    ffu_image_release(&img);
    ffu_image_release(&crop);
    CHECK(unknown);
    CHECK(zeroed);
    CHECK(tiny);
    CHECK(degenerate);
}

/* ---- embedders ------------------------------------------------------------------------ */

static void test_embed_dims_and_models(void)
{
    int opened = 0;
    for (int i = 0; i < NUM_EMBEDDERS; i++) {
        int failed;
        ffu_embedder *e = open_embedder(embedders[i].name, &failed);
        CHECK(!failed);
        if (!e)
            continue;
        opened++;
        const ffu_zoo_entry *z = ffu_embedder_model(e);
        int dim = ffu_embedder_dim(e);
        float thr = ffu_embedder_threshold(e);
        int name_ok = z && !strcmp(z->name, embedders[i].name) && z->role == FFU_ROLE_EMBED;
        ffu_embedder_destroy(e);
        CHECK(name_ok);
        CHECK_EQ_INT(dim, embedders[i].dim);
        CHECK(thr > -1 && thr <= 1);
    }
    /* the default is one of the table's */
    const ffu_zoo_entry *def = ffu_zoo_default(FFU_ROLE_EMBED);
    CHECK(def != NULL);
    int known = 0;
    for (int i = 0; i < NUM_EMBEDDERS; i++)
        known |= !strcmp(def->name, embedders[i].name) && embedders[i].discriminates;
    CHECK(known);
    if (!opened)
        TEST_SKIP("no embedder model installed");
}

static void test_embed_bad_input(void)
{
    ffu_embedder *e = (ffu_embedder *)1;
    ffu_face_model_opts o = {.model = "no-such-embedder", .backend = NULL, .threads = 0};
    CHECK(ffu_embedder_create(&o, &e) == FFU_ERR_NOT_FOUND);
    CHECK(e == NULL);
    o.model = "blazeface"; /* a detector, not an embedder */
    CHECK(ffu_embedder_create(&o, &e) == FFU_ERR_NOT_FOUND);
    CHECK(e == NULL);
    CHECK(ffu_embedder_create(NULL, NULL) == FFU_ERR_INVALID);
    ffu_embedder_destroy(NULL);
    CHECK_EQ_INT(ffu_embedder_dim(NULL), 0);
    CHECK(ffu_embedder_model(NULL) == NULL);

    if (ffu_embedder_create(NULL, &e) != FFU_OK)
        TEST_SKIP("default embedder not installed");
    ffu_image img = {0}, yuv = {0}, empty = {0};
    static ffu_face f;
    ffu_face_init(&f);
    float kps[10] = {40, 50, 72, 50, 56, 66, 43, 84, 69, 84};
    memcpy(f.kps, kps, sizeof kps);
    int ok = ffu_image_create(&img, FFU_PIX_RGB24, 112, 112) == FFU_OK &&
             ffu_image_create(&yuv, FFU_PIX_YUV420P, 112, 112) == FFU_OK;
    int r_null = ffu_embedder_run(NULL, &img, &f, 1) == FFU_ERR_INVALID;
    int r_noimg = ffu_embedder_run(e, NULL, &f, 1) == FFU_ERR_INVALID;
    int r_empty = ffu_embedder_run(e, &empty, &f, 1) == FFU_ERR_INVALID;
    int r_neg = ffu_embedder_run(e, &img, &f, -1) == FFU_ERR_INVALID;
    int r_nofaces = ffu_embedder_run(e, &img, NULL, 1) == FFU_ERR_INVALID;
    int r_zero = ffu_embedder_run(e, &img, NULL, 0) == FFU_OK;
    int r_fmt = ffu_embedder_run(e, &yuv, &f, 1) == FFU_ERR_UNSUPPORTED && f.embedding_dim == 0;
    f.kps[3] = NAN;
    int r_nan = ffu_embedder_run(e, &img, &f, 1) == FFU_ERR_INVALID && f.embedding_dim == 0;
    f.kps[3] = INFINITY;
    int r_inf = ffu_embedder_run(e, &img, &f, 1) == FFU_ERR_INVALID && f.embedding_dim == 0;
    memcpy(f.kps, kps, sizeof kps);
    /* a black image still has a face-shaped crop: an embedding, unit length */
    int r_black = ffu_embedder_run(e, &img, &f, 1) == FFU_OK && f.embedding_dim > 0;
    double n2 = 0;
    for (int i = 0; i < f.embedding_dim; i++)
        n2 += (double)f.embedding[i] * f.embedding[i];
    ffu_image_release(&img);
    ffu_image_release(&yuv);
    ffu_embedder_destroy(e);
    CHECK(ok);
    CHECK(r_null);
    CHECK(r_noimg);
    CHECK(r_empty);
    CHECK(r_neg);
    CHECK(r_nofaces);
    CHECK(r_zero);
    CHECK(r_fmt);
    CHECK(r_nan);
    CHECK(r_inf);
    CHECK(r_black);
    CHECK_NEAR(n2, 1.0, 1e-4);
}

static void test_similarity(void)
{
    float a[3] = {1, 0, 0}, b[3] = {0, 2, 0}, c[3] = {-3, 0, 0}, z[3] = {0, 0, 0};
    CHECK_NEAR(ffu_face_similarity(a, a, 3), 1, 1e-6);
    CHECK_NEAR(ffu_face_similarity(a, b, 3), 0, 1e-6);
    CHECK_NEAR(ffu_face_similarity(a, c, 3), -1, 1e-6);
    CHECK_NEAR(ffu_face_similarity(a, z, 3), 0, 1e-6);
}

/* Two photos of Obama are more alike than Obama and Biden, for every embedder that can
 * tell faces apart; the default also puts them on the right sides of its threshold. */
static void test_embed_same_vs_different(void)
{
    static const char *files[3] = {"data/face_recognition_examples/examples/obama.jpg",
                                   "data/face_recognition_examples/examples/obama2.jpg",
                                   "data/face_recognition_examples/examples/biden.jpg"};
    ffu_image img[3] = {{0}};
    static ffu_face f[3];
    int have = 1;
    for (int i = 0; i < 3; i++)
        have &= load_shared_image(files[i], &img[i]) && detect_one(&img[i], &f[i]);
    if (!have) {
        for (int i = 0; i < 3; i++)
            ffu_image_release(&img[i]);
        TEST_SKIP("face_recognition_examples or the default detector missing");
    }
    const ffu_zoo_entry *def = ffu_zoo_default(FFU_ROLE_EMBED);
    int tested = 0, bad = 0;
    for (int k = 0; k < NUM_EMBEDDERS && !bad; k++) {
        int failed;
        ffu_embedder *e = open_embedder(embedders[k].name, &failed);
        bad |= failed;
        if (!e)
            continue;
        for (int i = 0; i < 3 && !bad; i++)
            if (ffu_embedder_run(e, &img[i], &f[i], 1) || f[i].embedding_dim != embedders[k].dim) {
                fprintf(stderr, "%s on %s: %s\n", embedders[k].name, files[i],
                        ffu_error_message());
                bad = 1;
            }
        if (!bad) {
            int d = embedders[k].dim;
            float same = ffu_face_similarity(f[0].embedding, f[1].embedding, d);
            float diff0 = ffu_face_similarity(f[0].embedding, f[2].embedding, d);
            float diff1 = ffu_face_similarity(f[1].embedding, f[2].embedding, d);
            float thr = ffu_embedder_threshold(e);
            printf("  %-20s obama/obama2 %.3f  obama/biden %.3f  obama2/biden %.3f  thr %.2f\n",
                   embedders[k].name, same, diff0, diff1, thr);
            if (embedders[k].discriminates && !(same > diff0 && same > diff1)) {
                fprintf(stderr, "%s: same person not more similar\n", embedders[k].name);
                bad = 1;
            }
            if (def && !strcmp(def->name, embedders[k].name) &&
                !(same >= thr && diff0 < thr && diff1 < thr)) {
                fprintf(stderr, "%s: default threshold %.2f misjudges the pairs\n",
                        embedders[k].name, thr);
                bad = 1;
            }
            tested++;
        }
        ffu_embedder_destroy(e);
    }
    for (int i = 0; i < 3; i++)
        ffu_image_release(&img[i]);
    CHECK(!bad);
    if (!tested)
        TEST_SKIP("no embedder model installed");
}

/* ffu_face_model_opts.bf16 reaches the embedder's sessions: on a CPU with AVX512-BF16
 * the default embedder's descriptor moves (some layers pass the bf16 check) but stays
 * the same face (cosine > 0.99, and Obama still matches Obama); elsewhere bf16 is not
 * granted and the descriptor is bit-identical. */
static void test_embed_bf16_option(void)
{
    ffu_image img[2] = {{0}};
    static ffu_face f[2];
    int have = load_shared_image("data/face_recognition_examples/examples/obama.jpg", &img[0]) &&
               load_shared_image("data/face_recognition_examples/examples/obama2.jpg", &img[1]) &&
               detect_one(&img[0], &f[0]) && detect_one(&img[1], &f[1]);
    float e[2][2][1024];
    int dim = 0, ok = have;
    for (int bf = 0; ok && bf < 2; bf++) {
        ffu_face_model_opts o = {.threads = 1, .bf16 = bf};
        ffu_embedder *em = NULL;
        ffu_status st = ffu_embedder_create(&o, &em);
        if (st == FFU_ERR_NOT_FOUND) {
            have = 0;
            break;
        }
        for (int i = 0; ok && i < 2; i++) {
            ok = st == FFU_OK && ffu_embedder_run(em, &img[i], &f[i], 1) == FFU_OK &&
                 f[i].embedding_dim <= 1024;
            if (ok) {
                dim = f[i].embedding_dim;
                memcpy(e[bf][i], f[i].embedding, sizeof(float) * (size_t)dim);
            }
        }
        ffu_embedder_destroy(em);
    }
    ffu_image_release(&img[0]);
    ffu_image_release(&img[1]);
    if (!have) TEST_SKIP("face_recognition_examples or the default models missing");
    CHECK(ok && dim > 0);
    int granted = (ffu_cpu_features() & FFU_CPU_AVX512BF16) != 0;
    for (int i = 0; i < 2; i++) {
        int same_bits = memcmp(e[0][i], e[1][i], sizeof(float) * (size_t)dim) == 0;
        CHECK_EQ_INT(same_bits, !granted);
        CHECK(ffu_face_similarity(e[0][i], e[1][i], dim) > 0.99f);
    }
    ffu_embedder *em = NULL;
    ffu_face_model_opts o = {0};
    CHECK(ffu_embedder_create(&o, &em) == FFU_OK);
    float thr = ffu_embedder_threshold(em);
    ffu_embedder_destroy(em);
    CHECK(ffu_face_similarity(e[1][0], e[1][1], dim) >= thr);
}

/* Several faces in one call (one batch, and more than one batch) give what one call per
 * face gives; the faces differ (shifted keypoints) so a mix-up of slots would show. */
static void test_embed_batch_equals_single(void)
{
    ffu_image img = {0};
    static ffu_face base;
    if (!load_shared_image("data/face_recognition_examples/examples/obama.jpg", &img))
        TEST_SKIP("face_recognition_examples missing");
    if (!detect_one(&img, &base)) {
        ffu_image_release(&img);
        TEST_SKIP("default detector missing");
    }
    enum { N = 35 }; /* > one internal batch of 32 */
    static ffu_face batch[N], one;
    /* the default (which embeds each crop and its mirror: 2n slots); a cheap one */
    const char *names[2] = {NULL, "mobileface"};
    int tested = 0, bad = 0;
    for (int k = 0; k < 2 && !bad; k++) {
        ffu_face_model_opts o = {.model = names[k], .backend = NULL, .threads = 0};
        ffu_embedder *e = NULL;
        if (ffu_embedder_create(&o, &e))
            continue;
        int n = N;
        for (int i = 0; i < n; i++) {
            batch[i] = base;
            for (int j = 0; j < 5; j++) {
                batch[i].kps[2 * j] += (float)((i * 7) % 5) - 2.0f;
                batch[i].kps[2 * j + 1] += (float)((i * 3) % 5) - 2.0f;
            }
        }
        bad |= ffu_embedder_run(e, &img, batch, n) != FFU_OK;
        double worst = 0;
        for (int i = 0; i < n && !bad; i++) {
            one = batch[i];
            one.embedding_dim = 0;
            bad |= ffu_embedder_run(e, &img, &one, 1) != FFU_OK ||
                   one.embedding_dim != batch[i].embedding_dim;
            for (int d = 0; d < one.embedding_dim && !bad; d++)
                worst = fmax(worst, fabs(one.embedding[d] - batch[i].embedding[d]));
        }
        /* the slots really differ from one another */
        float s01 = ffu_face_similarity(batch[0].embedding, batch[1].embedding,
                                        batch[0].embedding_dim);
        ffu_embedder_destroy(e);
        if (bad)
            fprintf(stderr, "batch run failed: %s\n", ffu_error_message());
        if (worst > 1e-4) {
            fprintf(stderr, "%s: batch vs single differ by %g\n", names[k] ? names[k] : "default",
                    worst);
            bad = 1;
        }
        bad |= !(s01 < 0.99999f);
        tested++;
    }
    ffu_image_release(&img);
    CHECK(!bad);
    if (!tested)
        TEST_SKIP("no embedder model installed");
}

/* obama.jpg, its face from the default detector and the default embedder; NULL, or why
 * the test must skip (nothing left open then). */
static const char *obama_and(const char *model, ffu_image *img, ffu_face *f, ffu_embedder **e)
{
    if (!load_shared_image("data/face_recognition_examples/examples/obama.jpg", img))
        return "face_recognition_examples missing";
    ffu_face_model_opts o = {.model = model};
    const char *why = !detect_one(img, f)               ? "default detector missing"
                      : ffu_embedder_create(&o, e) != 0 ? "the embedder is not installed"
                                                        : NULL;
    if (why)
        ffu_image_release(img);
    return why;
}

/* An embedder that also embeds the mirrored crop (zoo `flip`: dlib-resnet) describes a
 * photo and its mirror image alike: each run sees the same two crops, swapped. The
 * template is nearly, not exactly, symmetric, so the two are close but not equal. */
static void test_embed_flip_sees_the_mirror(void)
{
    ffu_image img = {0}, mir = {0};
    static ffu_face f, g;
    ffu_embedder *e = NULL;
    const char *why = obama_and("dlib-resnet", &img, &f, &e);
    if (why)
        TEST_SKIP(why);
    int flips = ffu_embedder_model(e)->flip;
    CHECK(ffu_image_create(&mir, img.fmt, img.width, img.height) == FFU_OK);
    for (int y = 0; y < img.height; y++) {
        const uint8_t *a = img.data[0] + (size_t)y * img.stride[0];
        uint8_t *b = mir.data[0] + (size_t)y * mir.stride[0];
        for (int x = 0; x < img.width; x++)
            memcpy(b + 3 * (img.width - 1 - x), a + 3 * x, 3);
    }
    /* mirrored points keep the template's order: image-left eye and mouth corner first */
    static const int order[5] = {1, 0, 2, 4, 3};
    g = f;
    for (int i = 0; i < 5; i++) {
        g.kps[2 * i] = (float)img.width - f.kps[2 * order[i]];
        g.kps[2 * i + 1] = f.kps[2 * order[i] + 1];
    }
    int ok = ffu_embedder_run(e, &img, &f, 1) == FFU_OK &&
             ffu_embedder_run(e, &mir, &g, 1) == FFU_OK;
    float sim = ok ? ffu_face_similarity(f.embedding, g.embedding, f.embedding_dim) : 0;
    printf("  %s (flip %d): photo vs mirror %.5f\n", ffu_embedder_model(e)->name, flips,
           (double)sim);
    ffu_embedder_destroy(e);
    ffu_image_release(&img);
    ffu_image_release(&mir);
    CHECK(ok);
    CHECK(flips);
    CHECK(sim > 0.995f);
}

/* An ensemble's descriptor is its members' unit descriptors, one view each, times
 * sqrt(1 / spread), normalised: each member's part holds (1 / spread) / sum(1 / spread)
 * of the squared norm, and the parts are what the members give without the mirror (the
 * member that mirrors on its own row no longer matches its own descriptor). */
static void test_embed_ensemble_weighs_members(void)
{
    ffu_image img = {0};
    static ffu_face f, g;
    ffu_embedder *e = NULL, *m = NULL;
    const char *why = obama_and("dlib-mobilefacenet", &img, &f, &e);
    if (why)
        TEST_SKIP(why);
    const ffu_zoo_entry *a = ffu_zoo_find("dlib-resnet");
    const ffu_zoo_entry *b = ffu_zoo_find("mobilefacenet-tflite");
    CHECK(a && b && a->spread > 0 && b->spread > 0);
    CHECK_EQ_INT(ffu_embedder_dim(e), 128 + 192);
    CHECK_EQ_INT(ffu_embedder_model(e)->flip, 0);
    CHECK(ffu_embedder_run(e, &img, &f, 1) == FFU_OK);
    double p0 = 0, p1 = 0;
    for (int i = 0; i < 128; i++)
        p0 += (double)f.embedding[i] * f.embedding[i];
    for (int i = 128; i < 320; i++)
        p1 += (double)f.embedding[i] * f.embedding[i];
    double w0 = 1.0 / a->spread, w1 = 1.0 / b->spread;
    printf("  ensemble parts: %.4f / %.4f of the norm, expected %.4f / %.4f\n", p0, p1,
           w0 / (w0 + w1), w1 / (w0 + w1));
    CHECK_NEAR(p0, w0 / (w0 + w1), 1e-4);
    CHECK_NEAR(p1, w1 / (w0 + w1), 1e-4);
    /* the threshold is the members' thresholds weighed alike, to two decimals */
    CHECK_NEAR(ffu_embedder_threshold(e), (w0 * a->threshold + w1 * b->threshold) / (w0 + w1),
               0.005);
    /* the mobilefacenet part is that net's single-view descriptor: close to its own
     * (mirrored) one, not equal */
    ffu_face_model_opts o = {.model = "mobilefacenet-tflite"};
    CHECK(ffu_embedder_create(&o, &m) == FFU_OK);
    g = f;
    CHECK(ffu_embedder_run(m, &img, &g, 1) == FFU_OK);
    float part[192];
    for (int i = 0; i < 192; i++)
        part[i] = f.embedding[128 + i];
    float sim = ffu_face_similarity(part, g.embedding, 192);
    printf("  mobilefacenet part vs its mirrored descriptor: %.4f\n", (double)sim);
    CHECK(sim > 0.9f && sim < 0.99999f);
    ffu_embedder_destroy(m);
    ffu_embedder_destroy(e);
    ffu_image_release(&img);
}

/* The crop follows the keypoints: a rotated, scaled, shifted copy of the photo with
 * the keypoints moved alike embeds like the original (and a BGR copy too), while the
 * same keypoints on the transformed photo (a wrong crop) do not. */
static void test_embed_follows_keypoints(void)
{
    ffu_image img = {0}, moved = {0}, bgr = {0};
    static ffu_face f0, f1, f2, f3;
    ffu_embedder *e = NULL;
    const char *why = obama_and(NULL, &img, &f0, &e);
    if (why)
        TEST_SKIP(why);
    /* forward map original -> moved (continuous coordinates): 23 degrees, x1.3 */
    double a = 23 * M_PI / 180, s = 1.3;
    float cx = f0.box[0] + f0.box[2] / 2, cy = f0.box[1] + f0.box[3] / 2;
    double fwd[6] = {s * cos(a), -s * sin(a), 0, s * sin(a), s * cos(a), 0};
    int W = img.width + 80, H = img.height + 80;
    fwd[2] = W / 2.0 - (fwd[0] * cx + fwd[1] * cy);
    fwd[5] = H / 2.0 - (fwd[3] * cx + fwd[4] * cy);
    double inv[6], wm[6];
    int ok = ffu_affine_invert(fwd, inv) == FFU_OK &&
             ffu_image_create(&moved, FFU_PIX_RGB24, W, H) == FFU_OK;
    face_warp_map(inv, wm);
    ok = ok && ffu_image_warp_affine(&img, &moved, wm, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT,
                                     NULL) == FFU_OK;
    f1 = f0;
    for (int j = 0; j < 5; j++)
        ffu_transform_point(fwd, f0.kps[2 * j], f0.kps[2 * j + 1], &f1.kps[2 * j],
                            &f1.kps[2 * j + 1]);
    f2 = f0; /* the original's keypoints on the moved photo: a wrong crop */
    f3 = f0;
    ok = ok && ffu_image_create(&bgr, FFU_PIX_BGR24, img.width, img.height) == FFU_OK &&
         ffu_image_convert(&img, &bgr) == FFU_OK;
    ok = ok && ffu_embedder_run(e, &img, &f0, 1) == FFU_OK &&
         ffu_embedder_run(e, &moved, &f1, 1) == FFU_OK &&
         ffu_embedder_run(e, &moved, &f2, 1) == FFU_OK &&
         ffu_embedder_run(e, &bgr, &f3, 1) == FFU_OK;
    int d = ffu_embedder_dim(e);
    float thr = ffu_embedder_threshold(e);
    float s_moved = ffu_face_similarity(f0.embedding, f1.embedding, d);
    float s_wrong = ffu_face_similarity(f0.embedding, f2.embedding, d);
    float s_bgr = ffu_face_similarity(f0.embedding, f3.embedding, d);
    printf("  moved %.4f  wrong crop %.4f  bgr %.6f\n", s_moved, s_wrong, s_bgr);
    ffu_embedder_destroy(e);
    ffu_image_release(&img);
    ffu_image_release(&moved);
    ffu_image_release(&bgr);
    CHECK(ok);
    CHECK(s_moved > 0.99f);
    /* the wrong crop is "another person" at the embedder's own threshold */
    CHECK(s_wrong < thr);
    CHECK_NEAR(s_bgr, 1.0, 1e-5);
}

/* ---- the LFW driver (eval_lfw_run.c) ------------------------------------------------ */

static void test_lfw_pick_face(void)
{
    ffu_face_list l = {0};
    CHECK_EQ_INT(lfw_pick_face(&l, 250, 250), -1);
    CHECK_EQ_INT(lfw_pick_face(NULL, 250, 250), -1);
    const float boxes[4][4] = {
        {10, 10, 80, 80},    /* big, off centre */
        {100, 100, 50, 50},  /* centred (125, 125), small */
        {90, 90, 70, 70},    /* centred (125, 125), larger: wins the tie */
        {120, 118, 10, 10},  /* nearly centred (125, 123) but 2 px off */
    };
    int ok = 1;
    for (int i = 0; i < 4 && ok; i++) {
        ffu_face *f = ffu_face_list_push(&l);
        ok = f != NULL;
        if (ok)
            memcpy(f->box, boxes[i], sizeof f->box);
    }
    int all = ok ? lfw_pick_face(&l, 250, 250) : -2;
    l.count = 2;
    int two = lfw_pick_face(&l, 250, 250);
    l.count = 1;
    int one = lfw_pick_face(&l, 250, 250);
    ffu_face_list_free(&l);
    CHECK(ok);
    CHECK_EQ_INT(all, 2);
    CHECK_EQ_INT(two, 1);
    CHECK_EQ_INT(one, 0);
}

/* Three LFW images, two pairs: each image embedded once, the same-person pair more
 * alike than the other; a missing image is an error, not a missing face. */
static void test_lfw_run_small(void)
{
    char dir[1024];
    if (!test_shared_path("data/lfw/images/Abel_Pacheco/Abel_Pacheco_0001.jpg", dir, sizeof dir) ||
        !test_shared_path("data/lfw", dir, sizeof dir))
        TEST_SKIP("LFW missing");
    ffu_embedder *e = NULL;
    ffu_detector *d = NULL;
    if (ffu_embedder_create(NULL, &e) || ffu_detector_create(NULL, &d)) {
        ffu_embedder_destroy(e);
        TEST_SKIP("default embedder or detector not installed");
    }
    static const char text[] = "1\t1\nAbel_Pacheco\t1\t4\nAbel_Pacheco\t1\tAkhmed_Zakayev\t1\n";
    static const char bad[] = "1\t1\nAbel_Pacheco\t1\t999\nAbel_Pacheco\t1\tAkhmed_Zakayev\t1\n";
    lfw_pairs *p = NULL, *pb = NULL;
    float sims[2] = {0, 0};
    lfw_run_stats st;
    int parsed = lfw_pairs_parse(text, sizeof text - 1, dir, &p) == FFU_OK &&
                 lfw_pairs_parse(bad, sizeof bad - 1, dir, &pb) == FFU_OK;
    ffu_status run = parsed ? lfw_run_pairs(p, d, NULL, e, sims, &st) : FFU_ERR_INTERNAL;
    ffu_status run_bad = parsed ? lfw_run_pairs(pb, d, NULL, e, sims + 0, NULL) : FFU_OK;
    ffu_status run_null = lfw_run_pairs(p, d, NULL, NULL, sims, NULL);
    lfw_pairs_free(p);
    lfw_pairs_free(pb);
    ffu_detector_destroy(d);
    ffu_embedder_destroy(e);
    CHECK(parsed);
    CHECK_EQ_INT(run, FFU_OK);
    CHECK_EQ_INT(st.images, 3);
    CHECK_EQ_INT(st.nofaces, 0);
    CHECK(isfinite(sims[0]) && isfinite(sims[1]));
    CHECK(sims[0] > sims[1]);
    CHECK(run_bad != FFU_OK);
    CHECK_EQ_INT(run_null, FFU_ERR_INVALID);
}

TEST_MAIN(test_align_puts_keypoints_on_template, test_align_bad_input, test_embed_bf16_option,
          test_embed_dims_and_models, test_embed_bad_input, test_similarity,
          test_embed_same_vs_different, test_embed_batch_equals_single,
          test_embed_follows_keypoints, test_embed_flip_sees_the_mirror,
          test_embed_ensemble_weighs_members, test_lfw_pick_face, test_lfw_run_small)
