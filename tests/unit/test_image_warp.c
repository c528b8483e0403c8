/* Affine warp and matrix inversion: identity, translations, flips and transposes exactly
 * (the whole-pixel copy), the three border modes, bilinear against a double-precision
 * reference, SIMD bit-exact against scalar (every path this CPU has) on odd sizes,
 * writes confined to the destination, and argument errors. */
#include "facefuse/image.h"
#include "image/kernels_internal.h"
#include "test.h"
#include "test_image.h"

static const ffu_pixfmt packed_fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_BGR24,
                                         FFU_PIX_RGBA32};

static int ref_index(int p, int n, ffu_border b)
{
    if (p >= 0 && p < n) return p;
    if (b == FFU_BORDER_CONSTANT) return -1;
    if (b == FFU_BORDER_REPLICATE) return p < 0 ? 0 : n - 1;
    while (p < 0 || p >= n) p = p < 0 ? -p : 2 * (n - 1) - p; /* reflect-101, n > 1 */
    return p;
}

static double ref_sample(const ffu_image *s, double fx, double fy, int c, ffu_border b,
                         const uint8_t *bv)
{
    int x0 = (int)floor(fx), y0 = (int)floor(fy);
    double ax = fx - x0, ay = fy - y0, v = 0;
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < 2; i++) {
            int x = ref_index(x0 + i, s->width, b), y = ref_index(y0 + j, s->height, b);
            double p = x < 0 || y < 0 ? bv[c] : px(s, x, y, c);
            v += p * (i ? ax : 1 - ax) * (j ? ay : 1 - ay);
        }
    return v;
}

static void test_identity_and_translation(void)
{
    uint64_t seed = 9;
    const uint8_t bv[4] = {1, 2, 3, 4};
    for (int f = 0; f < 4; f++) {
        ffu_image s, d;
        CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], 45, 31), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&d, packed_fmts[f], 45, 31), FFU_OK);
        fill_random(&s, &seed);
        double id[6] = {1, 0, 0, 0, 1, 0};
        for (int interp = 0; interp < 2; interp++) {
            CHECK_EQ_INT(ffu_image_warp_affine(&s, &d, id, (ffu_interp)interp,
                                               FFU_BORDER_CONSTANT, bv), FFU_OK);
            CHECK_EQ_INT(max_diff(&s, &d), 0);
        }
        /* dst(x, y) = src(x + 3, y - 2) */
        double t[6] = {1, 0, 3, 0, 1, -2};
        int bpp = ffu_pixfmt_bpp(s.fmt);
        for (int b = 0; b < FFU_BORDER_COUNT; b++)
            for (int interp = 0; interp < 2; interp++) {
                CHECK_EQ_INT(ffu_image_warp_affine(&s, &d, t, (ffu_interp)interp, (ffu_border)b, bv),
                             FFU_OK);
                for (int y = 0; y < d.height; y++)
                    for (int x = 0; x < d.width; x++)
                        for (int c = 0; c < bpp; c++) {
                            int sx = ref_index(x + 3, s.width, (ffu_border)b);
                            int sy = ref_index(y - 2, s.height, (ffu_border)b);
                            int want = sx < 0 || sy < 0 ? bv[c] : px(&s, sx, sy, c);
                            CHECK_EQ_INT(px(&d, x, y, c), want);
                        }
            }
        ffu_image_release(&s), ffu_image_release(&d);
    }
}

/* The eight maps of 0 / +-1 entries (flips, transposes, quarter turns) with whole
 * offsets that put part of the output outside the source: every output pixel is its
 * source pixel or the border's, for both interpolations and every border mode. */
static void test_whole_pixel_maps(void)
{
    uint64_t seed = 5;
    const uint8_t bv[4] = {7, 77, 177, 250};
    static const int parts[8][4] = {{1, 0, 0, 1},  {-1, 0, 0, 1}, {1, 0, 0, -1}, {-1, 0, 0, -1},
                                    {0, 1, 1, 0},  {0, -1, 1, 0}, {0, 1, -1, 0}, {0, -1, -1, 0}};
    for (int f = 0; f < 4; f++)
        for (int k = 0; k < 8; k++)
            for (int b = 0; b < FFU_BORDER_COUNT; b++) {
                ffu_image s, d;
                CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], 37, 23), FFU_OK);
                CHECK_EQ_INT(ffu_image_create(&d, packed_fmts[f], 29, 41), FFU_OK);
                fill_random(&s, &seed);
                const int *a = parts[k];
                double m[6] = {a[0], a[1], 20 - 3 * k, a[2], a[3], 11 - 2 * k};
                for (int interp = 0; interp < 2; interp++) {
                    memset(d.data[0], 0xa5, (size_t)d.stride[0] * (size_t)d.height);
                    CHECK_EQ_INT(ffu_image_warp_affine(&s, &d, m, (ffu_interp)interp,
                                                       (ffu_border)b, bv), FFU_OK);
                    for (int y = 0; y < d.height; y++)
                        for (int x = 0; x < d.width; x++) {
                            int sx = ref_index(a[0] * x + a[1] * y + 20 - 3 * k, s.width,
                                               (ffu_border)b);
                            int sy = ref_index(a[2] * x + a[3] * y + 11 - 2 * k, s.height,
                                               (ffu_border)b);
                            for (int c = 0; c < ffu_pixfmt_bpp(s.fmt); c++)
                                CHECK_EQ_INT(px(&d, x, y, c),
                                             sx < 0 || sy < 0 ? bv[c] : px(&s, sx, sy, c));
                        }
                }
                ffu_image_release(&s), ffu_image_release(&d);
            }
}

static void test_bilinear_matches_reference(void)
{
    uint64_t seed = 21;
    const uint8_t bv[4] = {200, 10, 90, 255};
    /* Positions on the 1/32 grid, so the double reference sees the same points: the
     * only difference left is the final rounding. */
    const double grids[][6] = {{0.5, 0, 3.25, 0, 0.75, -4.5},
                               {0.25, -0.5, 20, 0.5, 0.25, -3},
                               {-1, 0, 40.0625, 0, 1.5, 2.03125},
                               /* a letterbox: whole rows of bars above and below */
                               {0.75, 0, 0.5, 0, 1.25, -8.5}};
    for (int f = 0; f < 4; f++)
        for (int k = 0; k < 4; k++)
            for (int b = 0; b < FFU_BORDER_COUNT; b++) {
                ffu_image s, d;
                CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], 41, 27), FFU_OK);
                CHECK_EQ_INT(ffu_image_create(&d, packed_fmts[f], 53, 39), FFU_OK);
                fill_random(&s, &seed);
                const double *m = grids[k];
                CHECK_EQ_INT(ffu_image_warp_affine(&s, &d, m, FFU_INTERP_BILINEAR, (ffu_border)b, bv),
                             FFU_OK);
                for (int y = 0; y < d.height; y++)
                    for (int x = 0; x < d.width; x++)
                        for (int c = 0; c < ffu_pixfmt_bpp(s.fmt); c++) {
                            double r = ref_sample(&s, m[0] * x + m[1] * y + m[2],
                                                  m[3] * x + m[4] * y + m[5], c, (ffu_border)b, bv);
                            CHECK_NEAR(px(&d, x, y, c), r, 0.5);
                        }
                ffu_image_release(&s), ffu_image_release(&d);
            }
}

static void test_simd_bit_exact(void)
{
    static const int sizes[][4] = {{1, 1, 5, 3},      {3, 7, 17, 13},   {17, 13, 3, 7},
                                   {127, 65, 64, 33}, {64, 33, 127, 65}, {2, 2, 9, 9},
                                   {643, 481, 517, 389}, {1920, 1080, 1920, 1080}};
    uint64_t seed = 77;
    const uint8_t bv[4] = {9, 99, 199, 55};
    int best = ffu_image_isa_best();
    for (int f = 0; f < 4; f++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
            for (int b = 0; b < FFU_BORDER_COUNT; b++) {
                ffu_image s, a, o;
                CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], sizes[k][0], sizes[k][1]), FFU_OK);
                CHECK_EQ_INT(ffu_image_create(&a, packed_fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
                CHECK_EQ_INT(ffu_image_create(&o, packed_fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
                fill_random(&s, &seed);
                /* Rotation by 15 degrees + scale about the centre, in dst -> src form. */
                double ang = 0.2618 * (double)(k + 1), sc = 0.9 + 0.1 * (double)b;
                double ca = cos(ang) / sc, sa = sin(ang) / sc;
                double cx = s.width / 2.0, cy = s.height / 2.0, dx = a.width / 2.0, dy = a.height / 2.0;
                double m[6] = {ca, -sa, cx - ca * dx + sa * dy, sa, ca, cy - sa * dx - ca * dy};
                for (int interp = 0; interp < 2; interp++) {
                    CHECK_EQ_INT(ffu_image_warp_affine_impl(&s, &a, m, (ffu_interp)interp,
                                                            (ffu_border)b, bv, FFU_ISA_SCALAR), FFU_OK);
                    for (int i = FFU_ISA_AVX2; i <= best; i++) { /* every SIMD path here */
                        CHECK_EQ_INT(ffu_image_warp_affine_impl(&s, &o, m, (ffu_interp)interp,
                                                                (ffu_border)b, bv, i), FFU_OK);
                        CHECK_EQ_INT(max_diff(&a, &o), 0);
                    }
                }
                ffu_image_release(&s), ffu_image_release(&a), ffu_image_release(&o);
            }
}

static void test_writes_stay_inside_and_wild_matrices(void)
{
    uint64_t seed = 8;
    const double mats[][6] = {{0.7, 0.2, 5, -0.2, 0.7, 9},
                              {1e12, 0, 0, 0, 1e12, 0},
                              {-1e9, 3, 1e15, 2, -5e8, -1e15},
                              {NAN, 0, 0, 0, 1, 0},
                              {0, 0, 0, 0, 0, 0}};
    for (int f = 0; f < 4; f++)
        for (size_t k = 0; k < sizeof mats / sizeof mats[0]; k++)
            for (int b = 0; b < FFU_BORDER_COUNT; b++)
                for (int isa = 0; isa < FFU_ISA_COUNT; isa++) {
                    ffu_image s, canvas, view;
                    CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], 57, 43), FFU_OK);
                    CHECK_EQ_INT(ffu_image_create(&canvas, packed_fmts[f], 90, 40), FFU_OK);
                    fill_random(&s, &seed);
                    memset(canvas.data[0], 0x5A, (size_t)canvas.stride[0] * canvas.height);
                    CHECK_EQ_INT(ffu_image_view(&view, &canvas, 1, 3, 83, 35), FFU_OK);
                    CHECK_EQ_INT(ffu_image_warp_affine_impl(&s, &view, mats[k], FFU_INTERP_BILINEAR,
                                                            (ffu_border)b, NULL, isa), FFU_OK);
                    int bpp = ffu_pixfmt_bpp(canvas.fmt);
                    for (int y = 0; y < canvas.height; y++)
                        for (int x = 0; x < canvas.stride[0]; x++) {
                            int inside = y >= 3 && y < 38 && x >= bpp && x < 84 * bpp;
                            if (!inside)
                                CHECK_EQ_INT(canvas.data[0][(size_t)y * canvas.stride[0] + x], 0x5A);
                        }
                    ffu_image_release(&s), ffu_image_release(&canvas);
                }
}

static void test_affine_invert(void)
{
    double m[6] = {0.8, -0.6, 12.5, 0.3, 1.1, -7}, inv[6], back[6];
    CHECK_EQ_INT(ffu_affine_invert(m, inv), FFU_OK);
    /* inv o m = identity on a few points */
    for (int i = 0; i < 3; i++) {
        double x = 3.0 * i - 2, y = 5.0 - i;
        double u = m[0] * x + m[1] * y + m[2], v = m[3] * x + m[4] * y + m[5];
        CHECK_NEAR(inv[0] * u + inv[1] * v + inv[2], x, 1e-12);
        CHECK_NEAR(inv[3] * u + inv[4] * v + inv[5], y, 1e-12);
    }
    CHECK_EQ_INT(ffu_affine_invert(inv, back), FFU_OK);
    for (int i = 0; i < 6; i++) CHECK_NEAR(back[i], m[i], 1e-12);
    memcpy(back, m, sizeof m);
    CHECK_EQ_INT(ffu_affine_invert(back, back), FFU_OK); /* in place */
    for (int i = 0; i < 6; i++) CHECK_NEAR(back[i], inv[i], 1e-15);
    double sing[6] = {1, 2, 3, 2, 4, 5}, out[6] = {1, 1, 1, 1, 1, 1};
    CHECK_EQ_INT(ffu_affine_invert(sing, out), FFU_ERR_INVALID);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(out[i], 0);
    double tiny[6] = {1e-9, 0, 0, 0, 1e-9, 0}; /* small but regular: invertible */
    CHECK_EQ_INT(ffu_affine_invert(tiny, out), FFU_OK);
    CHECK_NEAR(out[0], 1e9, 1e-3);
    double nan[6] = {NAN, 0, 0, 0, 1, 0};
    CHECK_EQ_INT(ffu_affine_invert(nan, out), FFU_ERR_INVALID);
}

static void test_errors(void)
{
    ffu_image a, b, g;
    double id[6] = {1, 0, 0, 0, 1, 0};
    CHECK_EQ_INT(ffu_image_create(&a, FFU_PIX_RGB24, 8, 8), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&b, FFU_PIX_RGB24, 8, 8), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&g, FFU_PIX_GRAY8, 8, 8), FFU_OK);
    CHECK_EQ_INT(ffu_image_warp_affine(&a, &g, id, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT, NULL),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_affine(&a, &b, id, FFU_INTERP_AREA, FFU_BORDER_CONSTANT, NULL),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_affine(&a, &b, id, FFU_INTERP_BILINEAR, (ffu_border)7, NULL),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_affine(&a, &b, NULL, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT, NULL),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_affine(&a, &a, id, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT, NULL),
                 FFU_ERR_INVALID);
    ffu_image_release(&a), ffu_image_release(&b), ffu_image_release(&g);
}

TEST_MAIN(test_identity_and_translation, test_whole_pixel_maps, test_bilinear_matches_reference,
          test_simd_bit_exact,
          test_writes_stay_inside_and_wild_matrices, test_affine_invert, test_errors)
