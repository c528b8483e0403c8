/* Tests of the dlib ERT shape predictor (src/face/ert.c):
 * - hand-made tiny models whose answer is known: which way a split goes (dlib: left
 *   when pixel[idx1] - pixel[idx2] > thresh, ties go right), dlib's RGB -> grey
 *   (sum / 3 rounded down), that feature pixels follow the current shape's rotation
 *   and scale, and that pixels off the image read 0;
 * - every damaged file is refused with a reason (truncations, bad counts, bad
 *   indices, non-finite numbers, dlib's old text floats), never a crash;
 * - the SIMD leaf sums give the same bits as the plain one;
 * - with the real model from Debian's libdlib-data (skipped when absent):
 *   (a) dlib 19.24's own float points on 68 boxes (tests/fixtures/ert/dlib_points.txt,
 *       written by bench/ert/run --dump) within 0.05 px, and dlib's XML points of
 *       examples/faces within 0.5 px on average (they are rounded to integers);
 *   (b) NME on the 25 Helen faces of ../shared/data/landmarks68 with the box fitted to
 *       the truth (tests/ert_data.h). */
#include <dirent.h>
#include <float.h>

#include "ert_data.h"
#include "face/ert.h"
#include "facefuse/image.h"
#include "fuzz/ert_builder.h"
#include "test.h"

#define DAT "/usr/share/dlib/shape_predictor_68_face_landmarks.dat"

/* ---- hand-made models -------------------------------------------------------------- */

/* Knobs of a two-part, one-cascade, one-split model; defaults make it valid. */
typedef struct hm_opts {
    int version;
    int leaves;      /* 2 */
    long idx1;       /* 0 */
    long anchor1;    /* 1 */
    int nfeat_delta; /* 2 */
    float thresh;
    int thresh_special; /* 0, or the exponent of a threshold of mantissa 1 */
    int text_float;     /* write the first shape value with dlib's old text bits */
    long shape_rows;    /* 4 */
} hm_opts;

static hm_opts hm_default(float thresh)
{
    hm_opts o = {1, 2, 0, 1, 2, thresh, 0, 0, 4};
    return o;
}

/* Parts at (0.25, 0.5) and (0.75, 0.5); one split on feature 0 (at part 0) minus
 * feature 1 (at part 1); the left leaf moves part 0 right by 0.1, the right leaf moves
 * part 1 right by 0.1. */
static void hm_split(eb *b, const hm_opts *o)
{
    eb_int(b, o->version);
    eb_column(b, o->shape_rows);
    static const float init[4] = {0.25f, 0.5f, 0.75f, 0.5f};
    for (long i = 0; i < o->shape_rows; i++) {
        if (i == 0 && o->text_float) {
            uint8_t c = '0';
            eb_bytes(b, &c, 1);
        } else {
            eb_float(b, init[i % 4]);
        }
    }
    eb_int(b, 1); /* cascades */
    eb_int(b, 1); /* trees */
    eb_int(b, 1); /* splits */
    eb_int(b, o->idx1);
    eb_int(b, 1);
    if (o->thresh_special)
        eb_int(b, 1), eb_int(b, o->thresh_special);
    else
        eb_float(b, o->thresh);
    eb_int(b, o->leaves);
    for (int l = 0; l < o->leaves; l++) {
        eb_column(b, o->shape_rows);
        for (long i = 0; i < o->shape_rows; i++)
            eb_float(b, (l == 0 && i == 0) || (l == 1 && i == 2) ? 0.1f : 0.0f);
    }
    eb_int(b, 1);
    eb_int(b, 2);
    eb_int(b, 0);
    eb_int(b, o->anchor1);
    eb_int(b, 1);
    eb_int(b, o->nfeat_delta);
    for (int k = 0; k < 2 * o->nfeat_delta; k++)
        eb_float(b, 0.0f);
}

static ert_model *hm_load(const hm_opts *o, ffu_status *st)
{
    eb b = {0};
    hm_split(&b, o);
    ert_model *m = (ert_model *)&b; /* must come back NULL on error */
    *st = ert_model_load_mem(b.p, b.n, &m);
    free(b.p);
    if (*st < 0 && m) abort();
    return m;
}

/* 101 x 101 grey image, zero but for two pixels; box = whole image, so normalised
 * (u, v) lands on pixel (100 u, 100 v) */
static uint8_t g_pix[101 * 101];

static void run_split(float thresh, int a, int bv, float *pts, ffu_status *st)
{
    ffu_status lst;
    hm_opts o = hm_default(thresh);
    ert_model *m = hm_load(&o, &lst);
    *st = lst;
    if (!m) return;
    memset(g_pix, 0, sizeof g_pix);
    g_pix[50 * 101 + 25] = (uint8_t)a;
    g_pix[50 * 101 + 75] = (uint8_t)bv;
    ffu_image img;
    ffu_image_wrap(&img, FFU_PIX_GRAY8, 101, 101, g_pix, 101);
    const float box[4] = {0, 0, 101, 101};
    *st = ert_predict(m, &img, box, pts);
    /* a model this small is never timed at load: its rows are prefetched into L1 */
    if (*st == FFU_OK && ert_model_row_prefetch_l2(m) != 0) *st = FFU_ERR_INTERNAL;
    ert_model_free(m);
}

/* 0 = the left leaf was taken, 1 = the right one */
static int side(const float *pts)
{
    if (fabsf(pts[0] - 35) < 1e-3f && fabsf(pts[2] - 75) < 1e-3f) return 0;
    if (fabsf(pts[0] - 25) < 1e-3f && fabsf(pts[2] - 85) < 1e-3f) return 1;
    return -1;
}

static void test_split_direction(void)
{
    float pts[4];
    ffu_status st;
    run_split(10, 200, 100, pts, &st);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_NEAR(pts[1], 50, 1e-4);
    CHECK_EQ_INT(side(pts), 0); /* 100 > 10: left */
    run_split(10, 110, 100, pts, &st);
    CHECK_EQ_INT(side(pts), 1); /* 10 > 10 is false: right */
    run_split(9.5f, 110, 100, pts, &st);
    CHECK_EQ_INT(side(pts), 0);
    run_split(-10, 100, 110, pts, &st);
    CHECK_EQ_INT(side(pts), 1); /* -10 > -10 is false */
    run_split(-10.5f, 100, 110, pts, &st);
    CHECK_EQ_INT(side(pts), 0);
    run_split(-300, 0, 255, pts, &st);
    CHECK_EQ_INT(side(pts), 0); /* below every difference: always left */
    run_split(300, 255, 0, pts, &st);
    CHECK_EQ_INT(side(pts), 1); /* above every difference: always right */
    /* the ends of the stored threshold's range */
    run_split(-255.5f, 0, 255, pts, &st);
    CHECK_EQ_INT(side(pts), 0); /* -255 > -256 */
    run_split(-255, 0, 255, pts, &st);
    CHECK_EQ_INT(side(pts), 1);
    run_split(254.5f, 255, 0, pts, &st);
    CHECK_EQ_INT(side(pts), 0); /* 255 > 254 */
    run_split(255, 255, 0, pts, &st);
    CHECK_EQ_INT(side(pts), 1);
}

/* dlib's grey of an RGB pixel is (r + g + b) / 3 rounded down, in any channel order */
static void test_rgb_grey(void)
{
    hm_opts o = hm_default(10);
    ffu_status st;
    ert_model *m = hm_load(&o, &st);
    CHECK(m != NULL);
    static uint8_t rgb[101 * 101 * 4];
    const ffu_pixfmt fmts[3] = {FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32};
    const float box[4] = {0, 0, 101, 101};
    for (int f = 0; f < 3; f++) {
        int bpp = f == 2 ? 4 : 3;
        for (int vals = 0; vals < 2; vals++) {
            memset(rgb, 0, sizeof rgb);
            uint8_t *p = rgb + (50 * 101 + 25) * bpp;
            /* 32 / 3 = 10.67: rounded down it is 10 (not > 10, right); 33 / 3 = 11 (left) */
            p[0] = 10, p[1] = 10, p[2] = (uint8_t)(12 + vals);
            if (bpp == 4) p[3] = 7; /* alpha is ignored */
            ffu_image img;
            ffu_image_wrap(&img, fmts[f], 101, 101, rgb, 101 * bpp);
            float pts[4];
            CHECK_EQ_INT(ert_predict(m, &img, box, pts), FFU_OK);
            CHECK_EQ_INT(side(pts), vals ? 0 : 1);
        }
    }
    ert_model_free(m);
}

/* Cascade 1 (one leaf, no split) turns the shape by 90 degrees and doubles it: parts
 * (0.25, 0.5), (0.75, 0.5) -> (0.5, 0), (0.5, 1). Cascade 2 reads feature 0 = part 0
 * + (0.1, 0) in the initial shape's frame, which must now be (0, 0.2) away: pixel
 * (50, 20). If it is bright, the left leaf moves part 0 right by 0.1. */
static void build_rotation(eb *b)
{
    eb_int(b, 1);
    eb_column(b, 4);
    eb_float(b, 0.25f), eb_float(b, 0.5f), eb_float(b, 0.75f), eb_float(b, 0.5f);
    eb_int(b, 2);
    /* cascade 1: one stump */
    eb_int(b, 1);
    eb_int(b, 0);
    eb_int(b, 1);
    eb_column(b, 4);
    eb_float(b, 0.25f), eb_float(b, -0.5f), eb_float(b, -0.25f), eb_float(b, 0.5f);
    /* cascade 2: one split, feature 0 - feature 1 > 100 */
    eb_int(b, 1);
    eb_int(b, 1);
    eb_int(b, 0), eb_int(b, 1), eb_float(b, 100);
    eb_int(b, 2);
    eb_column(b, 4);
    eb_float(b, 0.1f), eb_float(b, 0), eb_float(b, 0), eb_float(b, 0);
    eb_column(b, 4);
    eb_float(b, 0), eb_float(b, 0), eb_float(b, 0), eb_float(b, 0);
    /* anchors: cascade 1 none; cascade 2 parts 0 and 1 */
    eb_int(b, 2);
    eb_int(b, 0);
    eb_int(b, 2), eb_int(b, 0), eb_int(b, 1);
    /* deltas */
    eb_int(b, 2);
    eb_int(b, 0);
    eb_int(b, 2);
    eb_float(b, 0.1f), eb_float(b, 0);
    eb_float(b, 0), eb_float(b, 0);
}

static void test_features_follow_shape(void)
{
    eb b = {0};
    build_rotation(&b);
    ert_model *m = NULL;
    ffu_status st = ert_model_load_mem(b.p, b.n, &m);
    free(b.p);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(ert_model_num_cascades(m), 2);
    ffu_image img;
    ffu_image_wrap(&img, FFU_PIX_GRAY8, 101, 101, g_pix, 101);
    const float box[4] = {0, 0, 101, 101};
    float pts[4];
    for (int bright = 0; bright < 2; bright++) {
        memset(g_pix, 0, sizeof g_pix);
        /* where an unrotated, unscaled offset would land: must not matter */
        g_pix[0 * 101 + 60] = 255;
        g_pix[0 * 101 + 55] = 255;
        if (bright) g_pix[20 * 101 + 50] = 200;
        CHECK_EQ_INT(ert_predict(m, &img, box, pts), FFU_OK);
        CHECK_NEAR(pts[0], bright ? 60 : 50, 1e-3);
        CHECK_NEAR(pts[1], 0, 1e-3);
        CHECK_NEAR(pts[2], 50, 1e-3);
        CHECK_NEAR(pts[3], 100, 1e-3);
    }
    /* A box off the image: every feature reads 0, so the split goes right. */
    const float off[4] = {500, -700, 101, 101};
    CHECK_EQ_INT(ert_predict(m, &img, off, pts), FFU_OK);
    CHECK_NEAR(pts[0], 550, 1e-3);
    CHECK_NEAR(pts[1], -700, 1e-3);
    ert_model_free(m);
}

static void test_predict_arguments(void)
{
    hm_opts o = hm_default(10);
    ffu_status st;
    ert_model *m = hm_load(&o, &st);
    CHECK(m != NULL);
    CHECK_EQ_INT(ert_model_num_parts(m), 2);
    ffu_image img;
    ffu_image_wrap(&img, FFU_PIX_GRAY8, 101, 101, g_pix, 101);
    float pts[4];
    const float box[4] = {0, 0, 101, 101};
    const float nan_box[4] = {0, NAN, 10, 10}, empty[4] = {0, 0, 0, 10};
    CHECK_EQ_INT(ert_predict(m, &img, nan_box, pts), FFU_ERR_INVALID);
    CHECK_EQ_INT(ert_predict(m, &img, empty, pts), FFU_ERR_INVALID);
    CHECK_EQ_INT(ert_predict(NULL, &img, box, pts), FFU_ERR_INVALID);
    CHECK_EQ_INT(ert_predict(m, &img, box, NULL), FFU_ERR_INVALID);
    img.fmt = FFU_PIX_NONE;
    CHECK_EQ_INT(ert_predict(m, &img, box, pts), FFU_ERR_UNSUPPORTED);
    ert_model_free(m);
    ert_model_free(NULL);
    CHECK_EQ_INT(ert_model_load("/nonexistent/sp.dat", &m), FFU_ERR_NOT_FOUND);
    CHECK(m == NULL);
}

/* ---- damaged files ------------------------------------------------------------------ */

static void expect_refused(const hm_opts *o, ffu_status want, const char *what)
{
    ffu_status st;
    ert_model *m = hm_load(o, &st);
    if (m || st != want)
        fprintf(stderr, "  %s: got %d (%s)\n", what, st, m ? "loaded" : ffu_error_message());
    ert_model_free(m);
    if (st == want && !m) return;
    test_failed_ = 1;
}

static void test_malformed(void)
{
    hm_opts o = hm_default(10);
    ffu_status st;
    ert_model *m = hm_load(&o, &st);
    CHECK_EQ_INT(st, FFU_OK); /* the base is valid */
    ert_model_free(m);
#define REFUSE(field, value, want)                                                                 \
    do {                                                                                           \
        hm_opts o_ = hm_default(10);                                                               \
        o_.field = value;                                                                          \
        expect_refused(&o_, want, #field " = " #value);                                            \
    } while (0)
    REFUSE(version, 2, FFU_ERR_FORMAT);
    REFUSE(leaves, 3, FFU_ERR_FORMAT);             /* not splits + 1 */
    REFUSE(idx1, 2, FFU_ERR_FORMAT);               /* the cascade has 2 feature pixels */
    REFUSE(idx1, 70000, FFU_ERR_FORMAT);           /* beyond the feature cap */
    REFUSE(idx1, ERT_MAX_FEATURES, FFU_ERR_FORMAT); /* the first index past it */
    REFUSE(anchor1, 2, FFU_ERR_FORMAT);            /* only 2 parts */
    REFUSE(nfeat_delta, 3, FFU_ERR_FORMAT);        /* deltas != anchors */
    REFUSE(thresh_special, 32000, FFU_ERR_FORMAT); /* +inf */
    REFUSE(thresh_special, 32001, FFU_ERR_FORMAT); /* -inf */
    REFUSE(thresh_special, 32002, FFU_ERR_FORMAT); /* NaN */
    REFUSE(thresh_special, 200, FFU_ERR_FORMAT);   /* 2^200: beyond float */
    REFUSE(text_float, 1, FFU_ERR_FORMAT);
    REFUSE(shape_rows, 3, FFU_ERR_FORMAT); /* odd */
    REFUSE(shape_rows, 2 * ERT_MAX_PARTS + 2, FFU_ERR_TOO_LARGE);
    if (test_failed_) return;

    /* every proper prefix of a valid file is refused as malformed */
    ert_spec sp = {5, 2, 3, 2, 6, 7};
    eb b = {0};
    eb_model(&b, &sp);
    m = NULL;
    CHECK_EQ_INT(ert_model_load_mem(b.p, b.n, &m), FFU_OK);
    CHECK_EQ_INT(ert_model_num_trees(m), 6);
    ert_model_free(m);
    for (size_t n = 0; n < b.n; n++) {
        m = (ert_model *)&b;
        st = ert_model_load_mem(b.p, n, &m);
        if (st != FFU_ERR_FORMAT || m) {
            fprintf(stderr, "  prefix of %zu bytes: %d\n", n, st);
            free(b.p);
            CHECK(0);
        }
    }
    /* flipped bytes: refused or loaded, and a loaded model predicts */
    uint64_t seed = 42;
    uint8_t *c = malloc(b.n);
    int refused = 0;
    for (int trial = 0; trial < 2000; trial++) {
        memcpy(c, b.p, b.n);
        for (int k = 0; k < 3; k++)
            c[test_rand_u64(&seed) % b.n] ^= (uint8_t)(1u << (test_rand_u64(&seed) % 8));
        m = NULL;
        st = ert_model_load_mem(c, b.n, &m);
        if (st < 0) {
            refused++;
            CHECK(m == NULL);
            CHECK(strstr(ffu_error_message(), "dlib shape predictor") != NULL);
            continue;
        }
        ffu_image img;
        ffu_image_wrap(&img, FFU_PIX_GRAY8, 101, 101, g_pix, 101);
        float pts[2 * 8];
        const float box[4] = {10, 10, 50, 50};
        CHECK(ert_model_num_parts(m) <= 8);
        CHECK_EQ_INT(ert_predict(m, &img, box, pts), FFU_OK);
        ert_model_free(m);
    }
    free(c);
    free(b.p);
    printf("  flipped bytes: %d of 2000 damaged files refused\n", refused);
    CHECK(refused > 100);

    /* a count far beyond the file is refused before anything is allocated for it */
    eb h = {0};
    eb_int(&h, 1), eb_column(&h, 2), eb_float(&h, 0.25f), eb_float(&h, 0.75f);
    eb_int(&h, 1);
    size_t at = h.n;
    eb_int(&h, 19999); /* trees: under the cap, over what the file holds */
    m = NULL;
    CHECK_EQ_INT(ert_model_load_mem(h.p, h.n, &m), FFU_ERR_FORMAT);
    h.n = at;
    eb_int(&h, 1000000); /* over the per-cascade tree cap */
    CHECK_EQ_INT(ert_model_load_mem(h.p, h.n, &m), FFU_ERR_TOO_LARGE);
    CHECK(m == NULL);
    free(h.p);
}

/* ---- leaf-sum kernels --------------------------------------------------------------- */

static void test_kernels_bitwise(void)
{
    unsigned f = ffu_cpu_features();
    uint64_t s = 9;
    static _Alignas(64) float rows[40][288], a[288], want[288];
    const float *rp[40];
    for (int r = 0; r < 40; r++) {
        for (int j = 0; j < 288; j++)
            rows[r][j] = (test_rand_f(&s) - 0.5f) * (r % 3 ? 1e-3f : 7.0f);
        rp[r] = rows[r];
    }
    int tried = 0;
    const int strides[4] = {16, 144, 208, 288};
    for (int si = 0; si < 4; si++) {
        for (int j = 0; j < 288; j++)
            want[j] = test_rand_f(&s);
        memcpy(a, want, sizeof a);
        ert_sum_rows_c(want, rp, 40, strides[si]);
        if (f & FFU_CPU_AVX2) {
            float b2[288] __attribute__((aligned(64)));
            memcpy(b2, a, sizeof b2);
            ert_sum_rows_avx2(b2, rp, 40, strides[si]);
            CHECK(memcmp(b2, want, sizeof(float) * (size_t)strides[si]) == 0);
            tried++;
        }
        if (f & FFU_CPU_AVX512F) {
            float b5[288] __attribute__((aligned(64)));
            memcpy(b5, a, sizeof b5);
            ert_sum_rows_avx512(b5, rp, 40, strides[si]);
            CHECK(memcmp(b5, want, sizeof(float) * (size_t)strides[si]) == 0);
            tried++;
        }
    }
    if (!tried) TEST_SKIP("no AVX2 or AVX-512 on this CPU");
}

/* Where feature pixels fall: the AVX2 and AVX-512 kernels give the plain one's pixels,
 * lane for lane, on random jobs whose pixels straddle the image's edges, with lengths around the
 * vector's 16, rounding ties (x + 0.5 an integer) and a NaN in the shape. Every third
 * job maps the box to 10^8 pixels (the kernel reads no pixel, so the image may be that
 * big): there an ulp of a float changes the pixel, so any difference in how the float
 * sums are formed (an FMA, another order) shows. */
static void test_feature_kernels_same(void)
{
    unsigned f = ffu_cpu_features();
    if (!(f & (FFU_CPU_AVX2 | FFU_CPU_AVX512F))) TEST_SKIP("no AVX2 or AVX-512 on this CPU");
    const ert_feature_xy_fn kernels[2] = {f & FFU_CPU_AVX2 ? ert_feature_xy_avx2 : NULL,
                                          f & FFU_CPU_AVX512F ? ert_feature_xy_avx512 : NULL};
    uint64_t s = 5;
    static float dx[ERT_MAX_FEATURES], dy[ERT_MAX_FEATURES], shape[144];
    static uint32_t anchor2[ERT_MAX_FEATURES];
    static _Alignas(64) int32_t px0[ERT_MAX_FEATURES], py0[ERT_MAX_FEATURES], px1[ERT_MAX_FEATURES],
        py1[ERT_MAX_FEATURES];
    static const uint32_t lengths[] = {1, 15, 16, 17, 33, 500, ERT_MAX_FEATURES};
    int inside = 0, outside = 0, ties = 0;
    for (int trial = 0; trial < 200; trial++) {
        ert_feature_job j;
        j.n = lengths[trial % 7];
        for (int i = 0; i < 136; i++)
            shape[i] = test_rand_f(&s) * 1.2f - 0.1f;
        if (trial % 5 == 0) shape[2 * (trial % 68)] = NAN;
        for (uint32_t i = 0; i < j.n; i++) {
            dx[i] = (test_rand_f(&s) - 0.5f) * 0.4f;
            dy[i] = (test_rand_f(&s) - 0.5f) * 0.4f;
            anchor2[i] = 2 * (uint32_t)(test_rand_u64(&s) % 68);
            /* every fourth trial, offsets on a 1/64 grid: with a 63-pixel box and no
             * rotation many pixels land on x + 0.5 exactly */
            if (trial % 4 == 1) {
                dx[i] = (float)(int)(dx[i] * 64) / 64;
                dy[i] = (float)(int)(dy[i] * 64) / 64;
            }
        }
        if (trial % 4 == 1) {
            for (int i = 0; i < 136; i++)
                shape[i] = (float)(int)(shape[i] * 64) / 64;
            j.a00 = j.a11 = 1, j.a01 = j.a10 = 0;
            j.sx = j.sy = 63;
            j.ox = 10, j.oy = -3;
        } else if (trial % 3 == 0) {
            j.a00 = j.a11 = 0.9f, j.a01 = -0.3f, j.a10 = 0.3f;
            j.sx = j.sy = 1e8 + trial, j.ox = j.oy = 5e7;
        } else {
            float ang = test_rand_f(&s) * 6.3f, sc = 0.8f + test_rand_f(&s) * 0.4f;
            j.a00 = j.a11 = sc * cosf(ang);
            j.a10 = sc * sinf(ang);
            j.a01 = -j.a10;
            j.sx = 40 + test_rand_f(&s) * 200, j.sy = 40 + test_rand_f(&s) * 200;
            j.ox = (test_rand_f(&s) - 0.3) * 100, j.oy = (test_rand_f(&s) - 0.3) * 100;
        }
        j.dx = dx, j.dy = dy, j.anchor2 = anchor2, j.shape = shape;
        j.w = 64 + (int)(test_rand_u64(&s) % 200), j.h = 64 + (int)(test_rand_u64(&s) % 200);
        if (trial % 3 == 0 && trial % 4 != 1) j.w = j.h = 1 << 30;
        ert_feature_xy_c(&j, px0, py0);
        for (int k = 0; k < 2; k++) {
            if (!kernels[k]) continue;
            kernels[k](&j, px1, py1);
            for (uint32_t i = 0; i < j.n; i++)
                if (px0[i] != px1[i] || (px0[i] >= 0 && py0[i] != py1[i])) {
                    fprintf(stderr, "  %s, trial %d feature %u: (%d, %d) against (%d, %d)\n",
                            k ? "AVX-512" : "AVX2", trial, i, px0[i], py0[i], px1[i], py1[i]);
                    CHECK(0);
                    return;
                }
        }
        for (uint32_t i = 0; i < j.n; i++) {
            if (px0[i] < 0) {
                outside++;
                continue;
            }
            inside++;
            CHECK(px0[i] < j.w && py0[i] >= 0 && py0[i] < j.h);
            double v = j.ox + j.sx * (double)(j.a00 * dx[i] + shape[anchor2[i]]);
            if (trial % 4 == 1 && v == floor(v) + 0.5) ties++;
        }
    }
    printf("  %d pixels inside, %d outside, %d rounding ties\n", inside, outside, ties);
    CHECK(inside > 1000 && outside > 1000 && ties > 100);
}

/* ---- the real model ----------------------------------------------------------------- */

static ert_model *g_real;
static int g_real_tried;

static ert_model *real_model(void)
{
    if (!g_real_tried) {
        g_real_tried = 1;
        if (ert_model_load(DAT, &g_real) < 0) g_real = NULL;
    }
    return g_real;
}

static void test_real_model_shape(void)
{
    struct stat sb;
    if (stat(DAT, &sb) != 0) TEST_SKIP(DAT " absent (apt-get install libdlib-data)");
    ert_model *m = real_model();
    CHECK(m != NULL);
    CHECK_EQ_INT(ert_model_num_parts(m), 68);
    CHECK_EQ_INT(ert_model_num_cascades(m), 15);
    CHECK_EQ_INT(ert_model_num_trees(m), 15 * 500);
    CHECK_EQ_INT(ert_model_num_leaves(m), 15 * 500 * 16);
    int l2 = ert_model_row_prefetch_l2(m); /* timed at load: either, never anything else */
    CHECK(l2 == 0 || l2 == 1);
}

static int load_image(const char *rel, ffu_image *img)
{
    char buf[1024];
    if (!test_shared_path(rel, buf, sizeof buf)) return -1;
    return ffu_image_load(buf, FFU_PIX_RGB24, img) < 0 ? -1 : 0;
}

/* (a) dlib 19.24's float points on the same boxes and pixels */
static void test_golden_dlib(void)
{
    char buf[1024];
    if (!real_model()) TEST_SKIP(DAT " absent or unreadable");
    if (!test_shared_path("data/dlib_faces", buf, sizeof buf)) TEST_SKIP("../shared/data absent");
    FILE *f = fopen(FFU_TEST_SOURCE_DIR "/tests/fixtures/ert/dlib_points.txt", "r");
    CHECK(f != NULL);
    char line[4096], rel[512];
    double maxd = 0, sum = 0;
    int faces = 0;
    long box[4];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        if (sscanf(line, "%511s %ld %ld %ld %ld", rel, &box[0], &box[1], &box[2], &box[3]) != 5)
            break;
        float want[136], got[136];
        for (int k = 0; k < 136; k++)
            if (fscanf(f, "%f", &want[k]) != 1) want[k] = NAN;
        if (!fgets(line, sizeof line, f)) line[0] = 0; /* rest of the points line */
        ffu_image img;
        char relpath[600];
        snprintf(relpath, sizeof relpath, "data/%s", rel);
        if (load_image(relpath, &img) < 0) {
            fprintf(stderr, "  cannot read %s\n", relpath);
            fclose(f);
            CHECK(0);
        }
        const float fb[4] = {(float)box[0], (float)box[1], (float)box[2], (float)box[3]};
        /* with the row prefetch chosen at load, and with the other one: the same floats */
        ert_model *m = real_model();
        int chosen = ert_model_row_prefetch_l2(m);
        float other[136];
        ffu_status st = ert_predict(m, &img, fb, got);
        ert_model_set_row_prefetch_l2(m, !chosen);
        if (st == FFU_OK) st = ert_predict(m, &img, fb, other);
        ert_model_set_row_prefetch_l2(m, chosen);
        ffu_image_release(&img);
        if (st != FFU_OK) fclose(f);
        CHECK_EQ_INT(st, FFU_OK);
        CHECK(memcmp(got, other, sizeof got) == 0);
        for (int k = 0; k < 68; k++) {
            double d = hypot(got[2 * k] - want[2 * k], got[2 * k + 1] - want[2 * k + 1]);
            if (!(d <= maxd)) maxd = d; /* NaN sticks */
            sum += d;
        }
        faces++;
    }
    fclose(f);
    printf("  vs dlib 19.24 on %d faces: max %.2g px, mean %.2g px\n", faces, maxd,
           sum / (68.0 * faces));
    CHECK_EQ_INT(faces, 68);
    CHECK(maxd <= 0.05);
}

/* (a') dlib's XML points for examples/faces (dlib's own output, stored as integers) */
static void test_xml_points(void)
{
    char dir[1024];
    if (!real_model()) TEST_SKIP(DAT " absent or unreadable");
    if (!test_shared_path("data/dlib_faces", dir, sizeof dir)) TEST_SKIP("../shared/data absent");
    static ert_xml_face xf[64];
    double sum = 0, maxd = 0;
    int n = 0, pts = 0;
    const char *files[2] = {"training_with_face_landmarks.xml", "testing_with_face_landmarks.xml"};
    for (int fi = 0; fi < 2; fi++) {
        char path[1300];
        snprintf(path, sizeof path, "%s/%s", dir, files[fi]);
        int k = ert_xml_read(path, xf, 64);
        CHECK(k > 0);
        for (int i = 0; i < k; i++) {
            char rel[512];
            ffu_image img;
            CHECK(snprintf(rel, sizeof rel, "data/dlib_faces/%s", xf[i].image) < (int)sizeof rel);
            CHECK_EQ_INT(load_image(rel, &img), 0);
            CHECK_EQ_INT(xf[i].nparts, 68);
            const float fb[4] = {(float)xf[i].box[0], (float)xf[i].box[1], (float)xf[i].box[2],
                                 (float)xf[i].box[3]};
            float got[136];
            ffu_status st = ert_predict(real_model(), &img, fb, got);
            ffu_image_release(&img);
            CHECK_EQ_INT(st, FFU_OK);
            for (int p = 0; p < 68; p++) {
                double d =
                    hypot(got[2 * p] - xf[i].parts[2 * p], got[2 * p + 1] - xf[i].parts[2 * p + 1]);
                maxd = fmax(maxd, d);
                sum += d;
                pts++;
            }
            n++;
        }
    }
    printf("  vs dlib's XML points on %d faces: mean %.3f px, max %.3f px\n", n, sum / pts, maxd);
    CHECK_EQ_INT(n, 43);
    CHECK(sum / pts < 0.5);
}

/* (b) NME on Helen, box fitted to the truth */
static void test_nme_helen(void)
{
    char dir[1024];
    if (!real_model()) TEST_SKIP(DAT " absent or unreadable");
    if (!test_shared_path("data/landmarks68", dir, sizeof dir)) TEST_SKIP("../shared/data absent");
    int n = 0;
    double sum = 0, worst = 0;
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".pts")) continue;
        char path[1300], rel[512];
        float truth[136], got[136], box[4];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (ert_pts_read(path, truth) < 0) {
            closedir(d);
            CHECK(0);
        }
        snprintf(rel, sizeof rel, "data/landmarks68/%.*s.jpg", (int)l - 4, e->d_name);
        ffu_image img;
        if (load_image(rel, &img) < 0) {
            closedir(d);
            CHECK(0);
        }
        ert_box_from_points(ert_model_mean_shape(real_model()), truth, 68, box);
        ffu_status st = ert_predict(real_model(), &img, box, got);
        ffu_image_release(&img);
        if (st != FFU_OK) closedir(d);
        CHECK_EQ_INT(st, FFU_OK);
        double nme = ert_nme68(got, truth);
        sum += nme;
        worst = fmax(worst, nme);
        n++;
    }
    closedir(d);
    printf("  Helen NME (inter-ocular 36/45, fitted box) on %d faces: mean %.4f, worst %.4f\n", n,
           sum / n, worst);
    CHECK_EQ_INT(n, 25);
    CHECK(sum / n < 0.035);
    CHECK(worst < 0.08);
}

/* The face-module adapter: box rebuilt from five keypoints (here the truth's, as a
 * detector would give them), points in face coordinates (+0.5), keypoints refreshed. */
static void test_face_adapter(void)
{
    char dir[1024];
    if (!real_model()) TEST_SKIP(DAT " absent or unreadable");
    if (!test_shared_path("data/landmarks68", dir, sizeof dir)) TEST_SKIP("../shared/data absent");
    static const char *stems[3] = {"296814969_3", "2973812451_1", "2984236559_1"};
    double sum = 0;
    for (int i = 0; i < 3; i++) {
        char path[1300], rel[512];
        float truth[136];
        snprintf(path, sizeof path, "%s/%s.pts", dir, stems[i]);
        CHECK_EQ_INT(ert_pts_read(path, truth), 0);
        snprintf(rel, sizeof rel, "data/landmarks68/%s.jpg", stems[i]);
        ffu_image img;
        CHECK_EQ_INT(load_image(rel, &img), 0);
        ffu_face f;
        memset(&f, 0, sizeof f);
        /* a loose box far from dlib's convention: the keypoints decide */
        f.box[0] = 1, f.box[1] = 1, f.box[2] = (float)img.width - 2,
        f.box[3] = (float)img.height - 2;
        const int idx[5][2] = {{36, 6}, {42, 6}, {30, 1}, {48, 1}, {54, 1}};
        for (int k = 0; k < 5; k++) {
            for (int j = idx[k][0]; j < idx[k][0] + idx[k][1]; j++) {
                f.kps[2 * k] += truth[2 * j] / idx[k][1];
                f.kps[2 * k + 1] += truth[2 * j + 1] / idx[k][1];
            }
            f.kps[2 * k] += 0.5f, f.kps[2 * k + 1] += 0.5f;
        }
        ffu_status st = ert_face_run(real_model(), &img, &f);
        ffu_image_release(&img);
        CHECK_EQ_INT(st, FFU_OK);
        CHECK_EQ_INT(f.num_landmarks, 68);
        float got[136];
        for (int p = 0; p < 68; p++) {
            got[2 * p] = f.landmarks[3 * p] - 0.5f;
            got[2 * p + 1] = f.landmarks[3 * p + 1] - 0.5f;
            CHECK(f.landmarks[3 * p + 2] == 0);
        }
        CHECK_NEAR(f.kps[4], f.landmarks[3 * 30], 1e-4); /* nose = point 30 */
        CHECK_NEAR(f.kps[7], f.landmarks[3 * 48 + 1], 1e-4);
        sum += ert_nme68(got, truth);
        free(f.landmarks);
    }
    printf("  adapter (box from 5 keypoints) NME on 3 faces: %.4f\n", sum / 3);
    CHECK(sum / 3 < 0.04);
}

static void cleanup(void)
{
    ert_model_free(g_real);
    g_real = NULL;
}

TEST_MAIN(test_split_direction, test_rgb_grey, test_features_follow_shape, test_predict_arguments,
          test_malformed, test_kernels_bitwise, test_feature_kernels_same, test_real_model_shape,
          test_golden_dlib, test_xml_points, test_nme_helen, test_face_adapter, cleanup)
