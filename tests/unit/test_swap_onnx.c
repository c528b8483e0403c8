/* ONNX swappers, enhancers and the occluder (src/swap/swap_onnx.c, enhance.c,
 * occlusion.c) on synthetic models with the real conventions' signatures
 * (tools/make-swap-models/swap_models.h), written into a temporary folder at test time.
 * The synthetic models compute simple functions, so each convention's pre- and
 * post-processing is checked against numbers computed here from MODELS.md: alignment
 * (a frame whose pixels are a linear function of position, keypoints placed by a known
 * similarity, so the aligned crop is known exactly), input normalisation per channel,
 * the inswapper emap projection, output clipping, paste-back, the enhancer blend and
 * CodeFormer's double `weight`, the occluder's post-processing, and an ArcFace-style
 * embedder feeding the swapper end to end. Malformed files must be refused with
 * FFU_ERR_FORMAT / FFU_ERR_UNSUPPORTED and a message naming what is wrong. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../tools/make-swap-models/swap_models.h"
#include "facefuse/face.h"
#include "swap/swap_internal.h"
#include "test.h"

/* How the swap models' sessions run in these tests (swap_*_open's `run`). */
static const ffu_face_model_opts RUN_CPU1 = {.backend = "cpu", .threads = 1};
static const ffu_face_model_opts RUN_REF1 = {.backend = "ref", .threads = 1};
static const ffu_face_model_opts RUN_ONE_THREAD = {.threads = 1};

/* ---- temporary model folder --------------------------------------------------------- */

static char tmp_dir_[256];

static void remove_tmp_dir(void)
{
    DIR *d = opendir(tmp_dir_);
    if (!d)
        return;
    struct dirent *e;
    char p[600];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", tmp_dir_, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(tmp_dir_);
}

/* Writes b (freed) as NAME in the temporary folder; the path goes to buf. */
static const char *model_file(ob_model *b, const char *name, char *buf, size_t len)
{
    if (!tmp_dir_[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(tmp_dir_, sizeof tmp_dir_, "%s/ffu_swap_onnx_XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp_dir_)) {
            tmp_dir_[0] = 0;
            ob_free(b);
            return NULL;
        }
        atexit(remove_tmp_dir);
    }
    snprintf(buf, len, "%s/%s", tmp_dir_, name);
    return sm_write(b, buf) == 0 ? buf : NULL;
}

static int has(const char *msg) { return strstr(ffu_error_message(), msg) != NULL; }

/* ---- a frame whose pixels are linear in position ------------------------------------ */

#define FW 400
#define FH 360

/* Channel c at pixel-centre coordinates (px, py). */
static double frame_val(int c, double px, double py)
{
    switch (c) {
    case 0: return 40 + 0.4937 * px; /* slopes whose rounding errors average out */
    case 1: return 30 + 0.6123 * py;
    default: return 200 - 0.3011 * px - 0.2089 * py;
    }
}

static ffu_status make_frame(ffu_image *f)
{
    ffu_status st = ffu_image_create(f, FFU_PIX_RGB24, FW, FH);
    if (st)
        return st;
    for (int y = 0; y < FH; y++)
        for (int x = 0; x < FW; x++)
            for (int c = 0; c < 3; c++)
                f->data[0][(size_t)y * f->stride[0] + x * 3 + c] =
                    (uint8_t)lround(frame_val(c, x, y));
    return FFU_OK;
}

/* Crop -> frame similarity (continuous coordinates): crop centre to (cx, cy), frame
 * pixels per crop pixel s, rotated by deg. */
typedef struct sim {
    double inv[6]; /* crop -> frame */
    double fwd[6]; /* frame -> crop */
} sim;

static void make_sim(sim *t, double s, double deg, double cx, double cy, int size)
{
    double a = deg * M_PI / 180, c = cos(a) * s, sn = sin(a) * s, h = size / 2.0;
    t->inv[0] = c, t->inv[1] = -sn, t->inv[2] = cx - (c * h - sn * h);
    t->inv[3] = sn, t->inv[4] = c, t->inv[5] = cy - (sn * h + c * h);
    ffu_affine_invert(t->inv, t->fwd);
}

static void apply(const double m[6], double x, double y, double *ox, double *oy)
{
    *ox = m[0] * x + m[1] * y + m[2];
    *oy = m[3] * x + m[4] * y + m[5];
}

/* A face whose keypoints are the template's, carried into the frame by t. */
static void make_face(ffu_face *f, const sim *t, const char *tmpl, int size)
{
    ffu_face_init(f);
    const float *p = ffu_align_template(tmpl);
    for (int i = 0; i < 5; i++) {
        double x, y;
        apply(t->inv, p[2 * i] * size + 0.5, p[2 * i + 1] * size + 0.5, &x, &y);
        f->kps[2 * i] = (float)x;
        f->kps[2 * i + 1] = (float)y;
    }
    f->box[0] = f->kps[0] - 20, f->box[1] = f->kps[1] - 20, f->box[2] = 100, f->box[3] = 100;
    f->score = 1;
}

/* The aligned crop's exact value at crop pixel (u, v). */
static double crop_val(const sim *t, int c, int u, int v)
{
    double x, y;
    apply(t->inv, u + 0.5, v + 0.5, &x, &y);
    return frame_val(c, x - 0.5, y - 0.5);
}

static void random_embedding(float *e, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++)
        e[i] = test_rand_f(&seed) * 2 - 1;
}

/* ---- the conventions, written out here ---------------------------------------------- */

static const double imagenet_mean[3] = {0.485, 0.456, 0.406}, imagenet_std[3] = {0.229, 0.224,
                                                                                   0.225};

/* The swapped pixel (0..255, unclipped) for aligned value a of channel c. */
static double expect_swap(int kind, double a, int c, const float colour[3])
{
    double gain = sm_swapper_consts[kind].gain;
    switch (kind) {
    case SM_INSWAPPER: return (gain * (a / 255) + colour[c]) * 255;
    case SM_HYPERSWAP: return ((gain * ((a / 255 - 0.5) / 0.5) + colour[c]) * 0.5 + 0.5) * 255;
    default: return (gain * ((a / 255 - imagenet_mean[c]) / imagenet_std[c]) + colour[c]) * 255;
    }
}

static double clip255(double v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

/* The model-space source a convention should get from embedding e. */
static void expect_source(int kind, const float *e, float *out)
{
    double ss = 0;
    for (int i = 0; i < 512; i++)
        ss += (double)e[i] * e[i];
    double inv = 1 / sqrt(ss);
    for (int j = 0; j < 512; j++) {
        if (kind != SM_INSWAPPER) {
            out[j] = (float)(e[j] * inv);
            continue;
        }
        double acc = 0;
        for (int i = 0; i < 512; i++)
            acc += (double)e[i] * sm_emap(i, j);
        out[j] = (float)(acc * inv);
    }
}

/* Runs one swapper convention end to end: source projection, alignment, pre- and
 * post-processing (crop vs the exact crop), then paste-back with a box mask. */
static void check_swapper(int kind, const char *spec_kind, const char *file, const char *tmpl,
                          int size, double scale, const float *embedding)
{
    char path[512], spec[600];
    ob_model *b = NULL;
    if (kind == SM_INSWAPPER)
        b = sm_make_inswapper();
    else
        b = kind == SM_HYPERSWAP ? sm_make_hyperswap() : sm_make_simswap();
    CHECK(model_file(b, file, path, sizeof path));
    snprintf(spec, sizeof spec, "%s:%s", spec_kind, path);
    swap_net *n = NULL;
    ffu_image frame = {0}, orig = {0}, crop = {0}, mask = {0};
    float *src = malloc(512 * sizeof *src), *want_src = malloc(512 * sizeof *want_src);
    CHECK(swap_net_open(spec, &RUN_CPU1, &n) == FFU_OK);
    CHECK_STR(swap_net_kind(n), sm_kind_name(kind));
    CHECK_STR(swap_net_template(n), tmpl);
    CHECK_EQ_INT(swap_net_size(n), size);
    CHECK_EQ_INT(swap_net_embedding_dim(n), 512);

    CHECK(swap_net_source(n, embedding, 512, src) == FFU_OK);
    expect_source(kind, embedding, want_src);
    for (int j = 0; j < 512; j++)
        CHECK_NEAR(src[j], want_src[j], 1e-4);
    float colour[3];
    sm_swapper_colour(kind, want_src, 512, colour);

    CHECK(make_frame(&frame) == FFU_OK);
    CHECK(ffu_image_clone(&orig, &frame) == FFU_OK);
    sim t;
    make_sim(&t, scale, 15, 200, 175, size);
    ffu_face face;
    make_face(&face, &t, tmpl, size);
    double m[6];
    CHECK(swap_net_run(n, &frame, &face, src, &crop, m) == FFU_OK);
    for (int i = 0; i < 6; i++)
        CHECK_NEAR(m[i], t.fwd[i], 1e-4 * (1 + fabs(t.fwd[i])));
    CHECK(crop.width == size && crop.height == size && crop.fmt == FFU_PIX_RGB24);
    const ffu_image *al = swap_net_aligned(n); /* the target crop the net was fed */
    CHECK(al && al->width == size && al->height == size);
    double bias[3] = {0, 0, 0}; /* a half-pixel slip shows as a bias of ~0.3 */
    for (int v = 0; v < size; v++)
        for (int u = 0; u < size; u++)
            for (int c = 0; c < 3; c++) {
                double d = al->data[0][(size_t)v * al->stride[0] + u * 3 + c] -
                           crop_val(&t, c, u, v);
                CHECK(fabs(d) <= 1.01);
                bias[c] += d / (size * size);
            }
    for (int c = 0; c < 3; c++)
        CHECK_NEAR(bias[c], 0, 0.05);
    int clipped = 0, inside = 0;
    for (int v = 0; v < size; v++)
        for (int u = 0; u < size; u++)
            for (int c = 0; c < 3; c++) {
                double w = expect_swap(kind, crop_val(&t, c, u, v), c, colour);
                if (w < 0 || w > 255)
                    clipped++;
                else
                    inside++;
                CHECK_NEAR(crop.data[0][(size_t)v * crop.stride[0] + u * 3 + c], clip255(w),
                           1.5);
            }
    CHECK(clipped > 100 && inside > 100); /* the clip is exercised both ways */

    /* paste-back: where the mask is full, the frame pixel becomes the swap of itself */
    const float none[4] = {0, 0, 0, 0};
    CHECK(swap_box_mask(size, 0.3f, none, &mask) == FFU_OK);
    CHECK(swap_paste_back(&frame, &crop, m, &mask) == FFU_OK);
    int full = 0;
    for (int y = 0; y < FH; y++)
        for (int x = 0; x < FW; x++) {
            double u, v;
            apply(t.fwd, x + 0.5, y + 0.5, &u, &v);
            const uint8_t *f = frame.data[0] + (size_t)y * frame.stride[0] + x * 3;
            const uint8_t *o = orig.data[0] + (size_t)y * orig.stride[0] + x * 3;
            if (u < -2 || v < -2 || u > size + 2 || v > size + 2) {
                CHECK(!memcmp(f, o, 3)); /* well outside the crop */
                continue;
            }
            int u0 = (int)floor(u - 0.5), v0 = (int)floor(v - 0.5);
            if (u0 < 0 || v0 < 0 || u0 + 1 >= size || v0 + 1 >= size)
                continue;
            const uint8_t *mk = mask.data[0] + (size_t)v0 * mask.stride[0] + u0;
            if (mk[0] != 255 || mk[1] != 255 || mk[mask.stride[0]] != 255 ||
                mk[mask.stride[0] + 1] != 255)
                continue;
            full++;
            for (int c = 0; c < 3; c++)
                CHECK_NEAR(f[c], clip255(expect_swap(kind, o[c], c, colour)), 2.0);
        }
    CHECK(full > 2000);
    free(src);
    free(want_src);
    swap_net_close(n);
    ffu_image_release(&frame);
    ffu_image_release(&orig);
    ffu_image_release(&crop);
    ffu_image_release(&mask);
}

static void test_inswapper_convention(void)
{
    float e[512];
    random_embedding(e, 512, 12); /* not unit length: the projection divides by |e| */
    check_swapper(SM_INSWAPPER, "inswapper", "synthetic_inswapper_128.onnx", "arcface_128", 128,
                  1.2, e);
}

static void test_hyperswap_convention(void)
{
    float e[512];
    random_embedding(e, 512, 1);
    check_swapper(SM_HYPERSWAP, "hyperswap", "synthetic_hyperswap_1a_256.onnx", "arcface_128",
                  256, 0.6, e);
}

static void test_simswap_convention(void)
{
    float e[512];
    random_embedding(e, 512, 1);
    check_swapper(SM_SIMSWAP, "simswap", "synthetic_simswap_256.onnx", "arcface_112_v1", 256, 0.6,
                  e);
}

/* The ArcFace-style embedder's output for a uniform RGB crop, normalised. */
static void expect_embedding(const uint8_t rgb[3], float *out)
{
    double v[512], ss = 0;
    for (int j = 0; j < 512; j++) {
        v[j] = sm_embed_b(j);
        for (int c = 0; c < 3; c++)
            v[j] += (rgb[c] - 127.5) / 127.5 * sm_embed_w(c, j);
        ss += v[j] * v[j];
    }
    for (int j = 0; j < 512; j++)
        out[j] = (float)(v[j] / sqrt(ss));
}

static void test_embedder_to_inswapper(void)
{
    char epath[512], spec[600];
    CHECK(model_file(sm_embedder(), "synthetic_arcface_w600k_r50.onnx", epath, sizeof epath));
    /* mobilefacenet-onnx's zoo row is the ArcFace convention: arcface_112_v2, 112,
     * (x - 127.5) / 127.5, RGB */
    snprintf(spec, sizeof spec, "mobilefacenet-onnx:%s", epath);
    ffu_face_model_opts eo = {.model = spec, .backend = "cpu", .threads = 1};
    ffu_embedder *emb = NULL;
    ffu_image src_img = {0};
    CHECK(ffu_embedder_create(&eo, &emb) == FFU_OK);
    CHECK_EQ_INT(ffu_embedder_dim(emb), 512);
    const uint8_t rgb[3] = {180, 120, 90};
    CHECK(ffu_image_create(&src_img, FFU_PIX_RGB24, 300, 300) == FFU_OK);
    for (int y = 0; y < 300; y++)
        for (int x = 0; x < 300; x++)
            memcpy(src_img.data[0] + (size_t)y * src_img.stride[0] + x * 3, rgb, 3);
    sim ts;
    make_sim(&ts, 1.5, -8, 150, 150, 112);
    ffu_face sface;
    make_face(&sface, &ts, "arcface_112_v2", 112);
    CHECK(ffu_embedder_run(emb, &src_img, &sface, 1) == FFU_OK);
    CHECK_EQ_INT(sface.embedding_dim, 512);
    float want[512];
    expect_embedding(rgb, want);
    for (int j = 0; j < 512; j++)
        CHECK_NEAR(sface.embedding[j], want[j], 1e-4);
    ffu_embedder_destroy(emb);
    /* the source path: embedding -> emap projection -> swapper; check_swapper predicts
     * the colour from the embedding it is given, so compare that with `want` above */
    check_swapper(SM_INSWAPPER, "onnx", "synthetic_inswapper_128.onnx", "arcface_128", 128, 1.2,
                  sface.embedding);
    ffu_image_release(&src_img);
}

static void test_swapper_dynamic_batch(void)
{
    sm_swapper_cfg c;
    sm_swapper_cfg_default(&c, SM_INSWAPPER);
    c.dynamic_batch = 1;
    char path[512];
    CHECK(model_file(sm_swapper(&c), "dyn_inswapper_128.onnx", path, sizeof path));
    swap_net *n = NULL;
    CHECK(swap_net_open(path, &RUN_REF1, &n) == FFU_OK); /* bare path: guessed */
    CHECK_STR(swap_net_kind(n), "inswapper");
    ffu_image frame = {0}, crop = {0};
    CHECK(make_frame(&frame) == FFU_OK);
    sim t;
    make_sim(&t, 1.0, 0, 200, 180, 128);
    ffu_face face;
    make_face(&face, &t, "arcface_128", 128);
    float e[512], src[512];
    random_embedding(e, 512, 5);
    double m[6];
    CHECK(swap_net_source(n, e, 512, src) == FFU_OK);
    CHECK(swap_net_run(n, &frame, &face, src, &crop, m) == FFU_OK);
    CHECK_EQ_INT(crop.width, 128);
    /* a wrong-length embedding and a bad frame are refused, not crashed on */
    CHECK_EQ_INT(swap_net_source(n, e, 128, src), FFU_ERR_INVALID);
    memset(e, 0, sizeof e);
    CHECK_EQ_INT(swap_net_source(n, e, 512, src), FFU_ERR_INVALID);
    face.kps[3] = NAN;
    CHECK_EQ_INT(swap_net_run(n, &frame, &face, src, &crop, m), FFU_ERR_INVALID);
    CHECK_EQ_INT(m[0], 0);
    swap_net_close(n);
    swap_net_close(NULL);
    ffu_image_release(&frame);
    ffu_image_release(&crop);
}

/* ---- malformed and ambiguous swapper files ------------------------------------------ */

static ffu_status open_variant(const sm_swapper_cfg *c, const char *name, const char *kind)
{
    char path[512], spec[600];
    if (!model_file(sm_swapper(c), name, path, sizeof path))
        return FFU_ERR_IO;
    if (kind)
        snprintf(spec, sizeof spec, "%s:%s", kind, path);
    else
        snprintf(spec, sizeof spec, "%s", path);
    swap_net *n = NULL;
    ffu_status st = swap_net_open(spec, &RUN_CPU1, &n);
    if (st == FFU_OK && !n)
        st = FFU_ERR_INTERNAL;
    swap_net_close(n);
    return st;
}

static void test_swapper_rejects_malformed(void)
{
    sm_swapper_cfg c;
    sm_swapper_cfg_default(&c, SM_INSWAPPER);
    c.source_dim = 256;
    CHECK_EQ_INT(open_variant(&c, "a.onnx", "inswapper"), FFU_ERR_FORMAT);
    CHECK(has("inswapper: input `source` must be [1,512], this file has [1,256]"));

    sm_swapper_cfg_default(&c, SM_INSWAPPER);
    c.size = 64;
    CHECK_EQ_INT(open_variant(&c, "b.onnx", "inswapper"), FFU_ERR_FORMAT);
    CHECK(has("input `target` must be [1,3,128,128], this file has [1,3,64,64]"));

    sm_swapper_cfg_default(&c, SM_INSWAPPER);
    c.source_name = "src";
    CHECK_EQ_INT(open_variant(&c, "c.onnx", "inswapper"), FFU_ERR_FORMAT);
    CHECK(has("no input named `source`") && has("`src`"));

    sm_swapper_cfg_default(&c, SM_INSWAPPER);
    c.emap = 0;
    CHECK_EQ_INT(open_variant(&c, "d.onnx", "inswapper"), FFU_ERR_FORMAT);
    CHECK(has("emap") && has("`shape` is [4]"));

    sm_swapper_cfg_default(&c, SM_INSWAPPER);
    c.emap_cols = 256;
    CHECK_EQ_INT(open_variant(&c, "e.onnx", "inswapper"), FFU_ERR_FORMAT);
    CHECK(has("[512,512]") && has("[512,256]"));

    /* a hyperswap file checked as hyperswap needs 256 */
    sm_swapper_cfg_default(&c, SM_HYPERSWAP);
    c.size = 128;
    CHECK_EQ_INT(open_variant(&c, "f.onnx", "hyperswap"), FFU_ERR_FORMAT);
    CHECK(has("hyperswap: input `target` must be [1,3,256,256]"));

    /* missing file, not an ONNX file */
    swap_net *n = NULL;
    CHECK_EQ_INT(swap_net_open("inswapper:/nonexistent/inswapper_128.onnx", &RUN_ONE_THREAD, &n),
                 FFU_ERR_NOT_FOUND);
    CHECK(n == NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/garbage.onnx", tmp_dir_);
    FILE *f = fopen(path, "wb");
    CHECK(f);
    fputs("this is not a protobuf at all, just text\n", f);
    fclose(f);
    ffu_status st = swap_net_open(path, &RUN_ONE_THREAD, &n);
    CHECK(st == FFU_ERR_FORMAT || st == FFU_ERR_UNSUPPORTED);
    CHECK(n == NULL);
    CHECK_EQ_INT(swap_net_open(NULL, &RUN_ONE_THREAD, &n), FFU_ERR_INVALID);
}

static void test_swapper_kind_guess(void)
{
    sm_swapper_cfg c;
    char path[512], spec[600];
    swap_net *n = NULL;
    /* no name hint: a 512x512 last initializer makes it an inswapper */
    sm_swapper_cfg_default(&c, SM_INSWAPPER);
    CHECK(model_file(sm_swapper(&c), "model_a.onnx", path, sizeof path));
    snprintf(spec, sizeof spec, "onnx:%s", path);
    CHECK(swap_net_open(spec, &RUN_ONE_THREAD, &n) == FFU_OK);
    CHECK_STR(swap_net_kind(n), "inswapper");
    swap_net_close(n);
    n = NULL;
    /* no name hint, 256 and no emap: hyperswap and simswap look alike */
    sm_swapper_cfg_default(&c, SM_HYPERSWAP);
    CHECK_EQ_INT(open_variant(&c, "model_b.onnx", "onnx"), FFU_ERR_UNSUPPORTED);
    CHECK(has("hyperswap:PATH"));
    /* the file name decides */
    sm_swapper_cfg_default(&c, SM_SIMSWAP);
    CHECK(model_file(sm_swapper(&c), "my_SimSwap_256.onnx", path, sizeof path));
    snprintf(spec, sizeof spec, "onnx:%s", path);
    CHECK(swap_net_open(spec, &RUN_ONE_THREAD, &n) == FFU_OK);
    CHECK_STR(swap_net_kind(n), "simswap");
    CHECK_STR(swap_net_template(n), "arcface_112_v1");
    swap_net_close(n);
    n = NULL;
    /* an explicit kind wins over the name */
    snprintf(spec, sizeof spec, "hyperswap:%s", path);
    CHECK(swap_net_open(spec, &RUN_ONE_THREAD, &n) == FFU_OK);
    CHECK_STR(swap_net_kind(n), "hyperswap");
    swap_net_close(n);
}

/* ---- enhancers ---------------------------------------------------------------------- */

/* Enhances the face of a fresh frame; the frame is returned in out. */
static ffu_status enhance_frame(swap_enhancer *e, const sim *t, float blend, float weight,
                                ffu_image *out)
{
    ffu_status st = make_frame(out);
    if (st)
        return st;
    ffu_face face;
    make_face(&face, t, "ffhq_512", 512);
    return swap_enhancer_run(e, out, &face, blend, weight);
}

/* Checks the enhanced frame: where the box mask is full, pixel = g(original), with g
 * the enhancer's colour map; outside the crop's footprint, untouched. */
static void check_enhanced(const ffu_image *fr, const ffu_image *orig, const sim *t,
                           double gain, int *full)
{
    ffu_image mask = {0};
    const float none[4] = {0, 0, 0, 0};
    *full = -1;
    CHECK(swap_box_mask(512, 0.3f, none, &mask) == FFU_OK);
    *full = 0;
    for (int y = 0; y < FH; y++)
        for (int x = 0; x < FW; x++) {
            double u, v;
            apply(t->fwd, x + 0.5, y + 0.5, &u, &v);
            const uint8_t *f = fr->data[0] + (size_t)y * fr->stride[0] + x * 3;
            const uint8_t *o = orig->data[0] + (size_t)y * orig->stride[0] + x * 3;
            if (u < -2 || v < -2 || u > 514 || v > 514) {
                CHECK(!memcmp(f, o, 3));
                continue;
            }
            int u0 = (int)floor(u - 0.5), v0 = (int)floor(v - 0.5);
            if (u0 < 0 || v0 < 0 || u0 + 1 >= 512 || v0 + 1 >= 512)
                continue;
            const uint8_t *mk = mask.data[0] + (size_t)v0 * mask.stride[0] + u0;
            if (mk[0] != 255 || mk[1] != 255 || mk[mask.stride[0]] != 255 ||
                mk[mask.stride[0] + 1] != 255)
                continue;
            (*full)++;
            for (int c = 0; c < 3; c++) {
                double xn = (o[c] / 255.0 - 0.5) / 0.5, y_ = gain * xn;
                y_ = y_ < -1 ? -1 : y_ > 1 ? 1 : y_;
                CHECK_NEAR(f[c], (y_ * 0.5 + 0.5) * 255, 2.5);
            }
        }
    ffu_image_release(&mask);
}

static void test_gfpgan_convention_and_blend(void)
{
    char path[512], spec[600];
    CHECK(model_file(sm_make_gfpgan(), "synthetic_gfpgan_1.4.onnx", path, sizeof path));
    snprintf(spec, sizeof spec, "gfpgan:%s", path);
    swap_enhancer *e = NULL;
    ffu_image orig = {0}, full = {0}, half = {0}, none = {0};
    CHECK(swap_enhancer_open(spec, &RUN_CPU1, &e) == FFU_OK);
    sim t;
    make_sim(&t, 0.4, -12, 200, 180, 512);
    CHECK(make_frame(&orig) == FFU_OK);
    CHECK(enhance_frame(e, &t, 1.0f, 0.5f, &full) == FFU_OK);
    int nfull;
    check_enhanced(&full, &orig, &t, SM_GFPGAN_GAIN, &nfull);
    CHECK(nfull > 5000);
    /* blend 0.5 lands half-way between the frame and the fully enhanced frame */
    CHECK(enhance_frame(e, &t, 0.5f, 0.5f, &half) == FFU_OK);
    int moved = 0;
    for (int y = 0; y < FH; y++)
        for (int x = 0; x < FW * 3; x++) {
            size_t i = (size_t)y * orig.stride[0] + x;
            double want = orig.data[0][i] + 0.5 * (full.data[0][i] - orig.data[0][i]);
            CHECK_NEAR(half.data[0][i], want, 1.5);
            moved += half.data[0][i] != orig.data[0][i];
        }
    CHECK(moved > 5000);
    /* blend 0: nothing changes */
    CHECK(enhance_frame(e, &t, 0.0f, 0.5f, &none) == FFU_OK);
    CHECK(!memcmp(none.data[0], orig.data[0], (size_t)orig.stride[0] * FH));
    ffu_face face;
    make_face(&face, &t, "ffhq_512", 512);
    CHECK_EQ_INT(swap_enhancer_run(e, &none, &face, 1.5f, 0.5f), FFU_ERR_INVALID);
    swap_enhancer_close(e);
    swap_enhancer_close(NULL);
    ffu_image_release(&orig);
    ffu_image_release(&full);
    ffu_image_release(&half);
    ffu_image_release(&none);
}

static void test_codeformer_weight(void)
{
    char path[512], spec[600];
    CHECK(model_file(sm_make_codeformer(), "synthetic_codeformer.onnx", path, sizeof path));
    snprintf(spec, sizeof spec, "onnx:%s", path); /* a `weight` input: CodeFormer */
    swap_enhancer *e = NULL;
    ffu_image orig = {0}, out = {0};
    CHECK(swap_enhancer_open(spec, &RUN_ONE_THREAD, &e) == FFU_OK);
    sim t;
    make_sim(&t, 0.45, 20, 190, 190, 512);
    CHECK(make_frame(&orig) == FFU_OK);
    int nfull;
    /* the model computes x (1 - 2 weight): 0.25 halves the contrast, 1 inverts */
    CHECK(enhance_frame(e, &t, 1.0f, 0.25f, &out) == FFU_OK);
    check_enhanced(&out, &orig, &t, 0.5, &nfull);
    CHECK(nfull > 5000);
    ffu_image_release(&out);
    CHECK(enhance_frame(e, &t, 1.0f, 1.0f, &out) == FFU_OK);
    check_enhanced(&out, &orig, &t, -1.0, &nfull);
    CHECK(nfull > 5000);
    swap_enhancer_close(e);
    ffu_image_release(&orig);
    ffu_image_release(&out);
}

static ffu_status open_enhancer(ob_model *b, const char *name, const char *kind)
{
    char path[512], spec[600];
    if (!model_file(b, name, path, sizeof path))
        return FFU_ERR_IO;
    snprintf(spec, sizeof spec, "%s:%s", kind, path);
    swap_enhancer *e = NULL;
    ffu_status st = swap_enhancer_open(spec, &RUN_ONE_THREAD, &e);
    swap_enhancer_close(e);
    return st;
}

static void test_enhancer_rejects_malformed(void)
{
    CHECK_EQ_INT(open_enhancer(sm_make_gfpgan(), "g.onnx", "codeformer"), FFU_ERR_FORMAT);
    CHECK(has("codeformer: no input named `weight`"));
    CHECK_EQ_INT(open_enhancer(sm_make_codeformer(), "h.onnx", "gfpgan"), FFU_ERR_FORMAT);
    CHECK(has("codeformer:PATH"));
    sm_enhancer_cfg c = {1, 0, OB_F32, NULL};
    CHECK_EQ_INT(open_enhancer(sm_enhancer(&c), "i.onnx", "codeformer"), FFU_ERR_FORMAT);
    CHECK(has("input `weight` must be f64 (a double), this file has f32"));
    sm_enhancer_cfg d = {0, 256, 0, NULL};
    CHECK_EQ_INT(open_enhancer(sm_enhancer(&d), "j.onnx", "gfpgan"), FFU_ERR_FORMAT);
    CHECK(has("gfpgan: input `input` must be [1,3,512,512], this file has [1,3,256,256]"));
    swap_enhancer *e = NULL;
    CHECK_EQ_INT(swap_enhancer_open("gfpgan:/nonexistent/gfpgan.onnx", &RUN_ONE_THREAD, &e),
                 FFU_ERR_NOT_FOUND);
    CHECK(e == NULL);
}

/* ---- occluder ----------------------------------------------------------------------- */

/* Bilinear resize of a 1-D profile with half-pixel centres, edges clamped. */
static void resize_1d(const double *src, int n, double *dst, int m)
{
    for (int i = 0; i < m; i++) {
        double s = (i + 0.5) * n / m - 0.5;
        s = s < 0 ? 0 : s;
        int i0 = (int)floor(s), i1 = i0 + 1 < n ? i0 + 1 : n - 1;
        double f = s - i0;
        dst[i] = src[i0] * (1 - f) + src[i1] * f;
    }
}

static int refl(int i, int n)
{
    while (i < 0 || i >= n)
        i = i < 0 ? -i : 2 * (n - 1) - i;
    return i;
}

/* The occluder's mask along x for a crop whose G channel is g[x] (0..255) in every row:
 * resize 128 -> 256, model (= G / 255), resize back, blur sigma 5 (31 taps), then
 * (clip(m, 0.5, 1) - 0.5) * 2. */
static void expect_occlusion(const double *g, int n, double *out)
{
    double up[256], down[128], gn[128];
    for (int i = 0; i < n; i++)
        gn[i] = g[i] / 255;
    resize_1d(gn, n, up, 256);
    resize_1d(up, 256, down, n);
    double w[31], sum = 0;
    for (int k = 0; k < 31; k++)
        sum += w[k] = exp(-(double)(k - 15) * (k - 15) / 50.0);
    for (int i = 0; i < n; i++) {
        double acc = 0;
        for (int k = 0; k < 31; k++)
            acc += w[k] * down[refl(i + k - 15, n)];
        double mm = acc / sum;
        mm = mm < 0.5 ? 0.5 : mm > 1 ? 1 : mm;
        out[i] = (mm - 0.5) * 2 * 255;
    }
}

static void test_occluder_mask_and_multiply(void)
{
    char path[512], path2[512], spec[600];
    CHECK(model_file(sm_make_occluder(), "synthetic_xseg_1.onnx", path, sizeof path));
    CHECK(model_file(sm_occluder(256, 1), "xseg_nchw.onnx", path2, sizeof path2));
    swap_occluder *o = NULL, *o2 = NULL;
    ffu_image crop = {0}, mask = {0}, mask2 = {0}, box = {0}, frame = {0}, orig = {0};
    snprintf(spec, sizeof spec, "onnx:%s", path);
    CHECK(swap_occluder_open(spec, &RUN_CPU1, &o) == FFU_OK);
    CHECK(swap_occluder_open(path2, &RUN_CPU1, &o2) == FFU_OK);
    /* G = 255 on the left half ("face"), 0 on the right ("occluder"); R, B random */
    uint64_t seed = 3;
    double g[128];
    CHECK(ffu_image_create(&crop, FFU_PIX_RGB24, 128, 128) == FFU_OK);
    for (int x = 0; x < 128; x++)
        g[x] = x < 64 ? 255 : 0;
    for (int y = 0; y < 128; y++)
        for (int x = 0; x < 128; x++) {
            uint8_t *p = crop.data[0] + (size_t)y * crop.stride[0] + x * 3;
            p[0] = (uint8_t)(test_rand_u64(&seed) >> 56);
            p[1] = (uint8_t)g[x];
            p[2] = (uint8_t)(test_rand_u64(&seed) >> 56);
        }
    CHECK(swap_occluder_run(o, &crop, &mask) == FFU_OK);
    CHECK(mask.width == 128 && mask.height == 128 && mask.fmt == FFU_PIX_GRAY8);
    double want[128];
    expect_occlusion(g, 128, want);
    for (int y = 0; y < 128; y++)
        for (int x = 0; x < 128; x++)
            CHECK_NEAR(mask.data[0][(size_t)y * mask.stride[0] + x], want[x], 4);
    CHECK_EQ_INT(mask.data[0][64 * mask.stride[0] + 30], 255);
    CHECK_EQ_INT(mask.data[0][64 * mask.stride[0] + 70], 0);
    /* the NCHW spelling gives the same mask */
    CHECK(swap_occluder_run(o2, &crop, &mask2) == FFU_OK);
    for (int y = 0; y < 128; y++)
        CHECK(!memcmp(mask.data[0] + (size_t)y * mask.stride[0],
                      mask2.data[0] + (size_t)y * mask2.stride[0], 128));

    /* multiplied into the box mask, then pasted: occluded pixels keep the frame's bytes */
    const float none[4] = {0, 0, 0, 0};
    CHECK(swap_box_mask(128, 0.3f, none, &box) == FFU_OK);
    ffu_image_release(&mask2); /* clone writes into an empty image */
    CHECK(ffu_image_clone(&mask2, &box) == FFU_OK);
    CHECK(swap_mask_multiply(&box, &mask) == FFU_OK);
    for (int y = 0; y < 128; y++)
        for (int x = 0; x < 128; x++) {
            int b0 = mask2.data[0][(size_t)y * mask2.stride[0] + x];
            int occ = mask.data[0][(size_t)y * mask.stride[0] + x];
            CHECK_NEAR(box.data[0][(size_t)y * box.stride[0] + x], b0 * occ / 255.0, 0.5 + 1e-9);
        }
    CHECK(make_frame(&frame) == FFU_OK);
    CHECK(ffu_image_clone(&orig, &frame) == FFU_OK);
    sim t;
    make_sim(&t, 1.3, 30, 200, 180, 128);
    CHECK(swap_paste_back(&frame, &crop, t.fwd, &box) == FFU_OK);
    int kept = 0, changed = 0;
    for (int y = 0; y < FH; y++)
        for (int x = 0; x < FW; x++) {
            double u, v;
            apply(t.fwd, x + 0.5, y + 0.5, &u, &v);
            int same = !memcmp(frame.data[0] + (size_t)y * frame.stride[0] + x * 3,
                               orig.data[0] + (size_t)y * orig.stride[0] + x * 3, 3);
            if (u > 75 && u < 126 && v > 2 && v < 126) {
                CHECK(same);
                kept++;
            } else if (u > 20 && u < 40 && v > 30 && v < 100) {
                changed += !same;
            }
        }
    CHECK(kept > 3000);
    CHECK(changed > 1000);
    swap_occluder_close(o);
    swap_occluder_close(o2);
    swap_occluder_close(NULL);
    ffu_image_release(&crop);
    ffu_image_release(&mask);
    ffu_image_release(&mask2);
    ffu_image_release(&box);
    ffu_image_release(&frame);
    ffu_image_release(&orig);
}

static void test_occluder_rejects_malformed(void)
{
    char path[512];
    swap_occluder *o = NULL;
    CHECK(model_file(sm_make_inswapper(), "occ_a.onnx", path, sizeof path));
    CHECK_EQ_INT(swap_occluder_open(path, &RUN_ONE_THREAD, &o), FFU_ERR_FORMAT);
    CHECK(has("one image input"));
    CHECK(model_file(sm_make_gfpgan(), "occ_b.onnx", path, sizeof path));
    CHECK_EQ_INT(swap_occluder_open(path, &RUN_ONE_THREAD, &o), FFU_ERR_FORMAT);
    CHECK(has("output `output` must be [1,512,512,1] or [1,1,512,512]"));
    CHECK(o == NULL);
    CHECK_EQ_INT(swap_occluder_open("onnx:/nonexistent/xseg.onnx", &RUN_ONE_THREAD, &o),
                 FFU_ERR_NOT_FOUND);
}

TEST_MAIN(test_inswapper_convention, test_hyperswap_convention, test_simswap_convention,
          test_embedder_to_inswapper, test_swapper_dynamic_batch, test_swapper_rejects_malformed,
          test_swapper_kind_guess, test_gfpgan_convention_and_blend, test_codeformer_weight,
          test_enhancer_rejects_malformed, test_occluder_mask_and_multiply,
          test_occluder_rejects_malformed)
