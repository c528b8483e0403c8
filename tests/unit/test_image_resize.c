/* Resize: nearest/bilinear/area against independent double-precision references,
 * known values, the OpenCV convention, SIMD paths bit-exact against the scalar path on
 * odd sizes, writes confined to the destination, and argument errors. */
#include "facefuse/image.h"
#include "image/kernels_internal.h"
#include "test.h"
#include "test_image.h"

static const ffu_pixfmt packed_fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_BGR24,
                                         FFU_PIX_RGBA32};

/* A smooth image (slow gradients) so interpolation references agree within 1. */
static void fill_smooth(ffu_image *im)
{
    int bpp = ffu_pixfmt_bpp(im->fmt);
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++)
            for (int c = 0; c < bpp; c++)
                im->data[0][(size_t)y * im->stride[0] + x * bpp + c] =
                    (uint8_t)(127.5 + 120 * sin(0.05 * x + 0.9 * c) * cos(0.037 * y + 0.3 * c));
}

/* Double-precision bilinear with half-pixel centres and edge clamping. */
static double ref_bilinear(const ffu_image *s, double fx, double fy, int c)
{
    if (fx < 0) fx = 0;
    if (fy < 0) fy = 0;
    if (fx > s->width - 1) fx = s->width - 1;
    if (fy > s->height - 1) fy = s->height - 1;
    int x0 = (int)floor(fx), y0 = (int)floor(fy);
    int x1 = x0 + 1 < s->width ? x0 + 1 : x0, y1 = y0 + 1 < s->height ? y0 + 1 : y0;
    double ax = fx - x0, ay = fy - y0;
    return (px(s, x0, y0, c) * (1 - ax) + px(s, x1, y0, c) * ax) * (1 - ay) +
           (px(s, x0, y1, c) * (1 - ax) + px(s, x1, y1, c) * ax) * ay;
}

static void test_bilinear_known_values(void)
{
    uint8_t s[2] = {0, 255}, d[4];
    ffu_image src, dst;
    CHECK_EQ_INT(ffu_image_wrap(&src, FFU_PIX_GRAY8, 2, 1, s, 2), FFU_OK);
    CHECK_EQ_INT(ffu_image_wrap(&dst, FFU_PIX_GRAY8, 4, 1, d, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_resize(&src, &dst, FFU_INTERP_BILINEAR), FFU_OK);
    /* centres at -0.25 (clamped), 0.25, 0.75, 1.25 (clamped) */
    CHECK_EQ_INT(d[0], 0);
    CHECK_EQ_INT(d[1], 64);
    CHECK_EQ_INT(d[2], 191);
    CHECK_EQ_INT(d[3], 255);
    /* Exact 2x shrink is the 2x2 mean, rounded half up. */
    uint8_t s2[8] = {10, 20, 200, 201, 30, 41, 0, 2}, d2[2];
    CHECK_EQ_INT(ffu_image_wrap(&src, FFU_PIX_GRAY8, 4, 2, s2, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_wrap(&dst, FFU_PIX_GRAY8, 2, 1, d2, 2), FFU_OK);
    CHECK_EQ_INT(ffu_image_resize(&src, &dst, FFU_INTERP_BILINEAR), FFU_OK);
    CHECK_EQ_INT(d2[0], 25);  /* 101 / 4 = 25.25 */
    CHECK_EQ_INT(d2[1], 101); /* 403 / 4 = 100.75 */
}

static void test_identity_and_constant(void)
{
    uint64_t seed = 7;
    for (int f = 0; f < 4; f++) {
        ffu_image a, b, c;
        CHECK_EQ_INT(ffu_image_create(&a, packed_fmts[f], 37, 23), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&b, packed_fmts[f], 37, 23), FFU_OK);
        fill_random(&a, &seed);
        for (int interp = 0; interp < FFU_INTERP_COUNT; interp++) {
            CHECK_EQ_INT(ffu_image_resize(&a, &b, (ffu_interp)interp), FFU_OK);
            CHECK_EQ_INT(max_diff(&a, &b), 0);
        }
        /* A flat image stays flat at any size, any method. */
        memset(a.data[0], 173, (size_t)a.stride[0] * a.height);
        CHECK_EQ_INT(ffu_image_create(&c, packed_fmts[f], 101, 7), FFU_OK);
        for (int interp = 0; interp < FFU_INTERP_COUNT; interp++) {
            CHECK_EQ_INT(ffu_image_resize(&a, &c, (ffu_interp)interp), FFU_OK);
            for (int y = 0; y < c.height; y++)
                for (int x = 0; x < c.width; x++) CHECK_EQ_INT(px(&c, x, y, 0), 173);
        }
        ffu_image_release(&a), ffu_image_release(&b), ffu_image_release(&c);
    }
}

static void test_bilinear_matches_reference(void)
{
    static const int sizes[][4] = {{64, 48, 37, 29}, {37, 29, 64, 48}, {100, 80, 33, 79},
                                   {17, 13, 50, 3}};
    for (int f = 0; f < 4; f++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            ffu_image s, d;
            CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], sizes[k][0], sizes[k][1]), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&d, packed_fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
            fill_smooth(&s);
            CHECK_EQ_INT(ffu_image_resize(&s, &d, FFU_INTERP_BILINEAR), FFU_OK);
            double scx = (double)s.width / d.width, scy = (double)s.height / d.height;
            for (int y = 0; y < d.height; y++)
                for (int x = 0; x < d.width; x++)
                    for (int c = 0; c < ffu_pixfmt_bpp(s.fmt); c++) {
                        double r = ref_bilinear(&s, (x + 0.5) * scx - 0.5, (y + 0.5) * scy - 0.5, c);
                        CHECK_NEAR(px(&d, x, y, c), r, 1.0);
                    }
            ffu_image_release(&s), ffu_image_release(&d);
        }
}

static void test_nearest_matches_reference(void)
{
    uint64_t seed = 11;
    ffu_image s, d;
    CHECK_EQ_INT(ffu_image_create(&s, FFU_PIX_RGB24, 53, 31), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&d, FFU_PIX_RGB24, 20, 77), FFU_OK);
    fill_random(&s, &seed);
    CHECK_EQ_INT(ffu_image_resize(&s, &d, FFU_INTERP_NEAREST), FFU_OK);
    for (int y = 0; y < d.height; y++)
        for (int x = 0; x < d.width; x++) {
            int sx = (int)floor((x + 0.5) * 53 / 20), sy = (int)floor((y + 0.5) * 31 / 77);
            for (int c = 0; c < 3; c++) CHECK_EQ_INT(px(&d, x, y, c), px(&s, sx, sy, c));
        }
    ffu_image_release(&s), ffu_image_release(&d);
}

/* Box filter in double: the mean over [x*k, (x+1)*k) x [y*k, (y+1)*k) with partial
 * pixels weighted by coverage. */
static double ref_area(const ffu_image *s, int x, int y, double kx, double ky, int c)
{
    double x0 = x * kx, x1 = x0 + kx, y0 = y * ky, y1 = y0 + ky, sum = 0, wsum = 0;
    for (int sy = (int)floor(y0); sy < (int)ceil(y1) && sy < s->height; sy++)
        for (int sx = (int)floor(x0); sx < (int)ceil(x1) && sx < s->width; sx++) {
            double w = (fmin(sx + 1, x1) - fmax(sx, x0)) * (fmin(sy + 1, y1) - fmax(sy, y0));
            sum += w * px(s, sx, sy, c), wsum += w;
        }
    return sum / wsum;
}

static void test_area_matches_reference(void)
{
    static const int sizes[][4] = {{60, 45, 20, 15}, {64, 64, 8, 4}, {61, 47, 20, 15},
                                   {100, 30, 33, 29}, {7, 5, 1, 1}, {1919, 3, 640, 1},
                                   /* boxes wider than one vertical pass (2048-8192
                                    * columns): their sums come in pieces */
                                   {9001, 2, 3, 1}, {12000, 3, 5, 2}};
    uint64_t seed = 3;
    for (int f = 0; f < 4; f++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            ffu_image s, d;
            CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], sizes[k][0], sizes[k][1]), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&d, packed_fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
            fill_random(&s, &seed);
            CHECK_EQ_INT(ffu_image_resize(&s, &d, FFU_INTERP_AREA), FFU_OK);
            double kx = (double)s.width / d.width, ky = (double)s.height / d.height;
            for (int y = 0; y < d.height; y++)
                for (int x = 0; x < d.width; x++)
                    for (int c = 0; c < ffu_pixfmt_bpp(s.fmt); c++)
                        CHECK_NEAR(px(&d, x, y, c), ref_area(&s, x, y, kx, ky, c), 0.51);
            ffu_image_release(&s), ffu_image_release(&d);
        }
}

/* Every path on odd sizes, both directions: the SIMD output is the scalar output. */
static void test_simd_bit_exact(void)
{
    static const int sizes[][4] = {
        {1, 1, 1, 1},     {1, 1, 7, 3},     {3, 7, 1, 1},      {3, 7, 17, 13},
        {17, 13, 3, 7},   {127, 65, 64, 33}, {64, 33, 127, 65}, {2, 2, 33, 31},
        {1919, 1079, 640, 360}, {640, 360, 1921, 1081}, {1000, 3, 999, 5}, {5, 1000, 600, 4},
        {1920, 1080, 1280, 720}, {33, 2, 2, 1}, {9001, 2, 3, 1}};
    uint64_t seed = 42;
    int isa = ffu_image_isa_best();
    if (isa == FFU_ISA_SCALAR) printf("  (no SIMD path on this CPU: comparing scalar with itself)\n");
    for (int f = 0; f < 4; f++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            ffu_image s, a, b;
            CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], sizes[k][0], sizes[k][1]), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&a, packed_fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&b, packed_fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
            fill_random(&s, &seed);
            for (int interp = 0; interp < FFU_INTERP_COUNT; interp++) {
                CHECK_EQ_INT(ffu_image_resize_impl(&s, &a, (ffu_interp)interp, FFU_ISA_SCALAR), FFU_OK);
                CHECK_EQ_INT(ffu_image_resize_impl(&s, &b, (ffu_interp)interp, isa), FFU_OK);
                if (max_diff(&a, &b) != 0)
                    fprintf(stderr, "  %s %dx%d -> %dx%d interp %d differs\n",
                            ffu_pixfmt_name(s.fmt), sizes[k][0], sizes[k][1], sizes[k][2],
                            sizes[k][3], interp);
                CHECK_EQ_INT(max_diff(&a, &b), 0);
            }
            ffu_image_release(&s), ffu_image_release(&a), ffu_image_release(&b);
        }
}

/* Output into a view of a larger canvas: nothing outside the view may change, on any
 * path (SIMD stores overlap and spill inside the kernels). */
static void test_writes_stay_inside(void)
{
    uint64_t seed = 5;
    for (int f = 0; f < 4; f++)
        for (int interp = 0; interp < FFU_INTERP_COUNT; interp++)
            for (int isa = 0; isa < FFU_ISA_COUNT; isa++) {
                ffu_image s, canvas, view;
                CHECK_EQ_INT(ffu_image_create(&s, packed_fmts[f], 203, 101), FFU_OK);
                CHECK_EQ_INT(ffu_image_create(&canvas, packed_fmts[f], 140, 60), FFU_OK);
                fill_random(&s, &seed);
                memset(canvas.data[0], 0xA5, (size_t)canvas.stride[0] * canvas.height);
                CHECK_EQ_INT(ffu_image_view(&view, &canvas, 3, 2, 131, 55), FFU_OK);
                CHECK_EQ_INT(ffu_image_resize_impl(&s, &view, (ffu_interp)interp, isa), FFU_OK);
                int bpp = ffu_pixfmt_bpp(canvas.fmt);
                for (int y = 0; y < canvas.height; y++)
                    for (int x = 0; x < canvas.stride[0]; x++) {
                        int inside = y >= 2 && y < 57 && x >= 3 * bpp && x < (3 + 131) * bpp;
                        if (!inside) CHECK_EQ_INT(canvas.data[0][(size_t)y * canvas.stride[0] + x], 0xA5);
                    }
                ffu_image_release(&s), ffu_image_release(&canvas);
            }
}

static void test_errors(void)
{
    ffu_image a, b, n;
    CHECK_EQ_INT(ffu_image_create(&a, FFU_PIX_RGB24, 8, 8), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&b, FFU_PIX_BGR24, 4, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&n, FFU_PIX_NV12, 4, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_resize(&a, &b, FFU_INTERP_BILINEAR), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "rgb24") != NULL);
    CHECK_EQ_INT(ffu_image_resize(&n, &n, FFU_INTERP_BILINEAR), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_resize(NULL, &a, FFU_INTERP_BILINEAR), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_resize(&a, NULL, FFU_INTERP_BILINEAR), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_resize(&a, &a, FFU_INTERP_BILINEAR), FFU_ERR_INVALID); /* overlap */
    ffu_image v;
    CHECK_EQ_INT(ffu_image_view(&v, &a, 2, 2, 4, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_resize(&a, &v, FFU_INTERP_NEAREST), FFU_ERR_INVALID);
    ffu_image c;
    CHECK_EQ_INT(ffu_image_create(&c, FFU_PIX_RGB24, 4, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_resize(&a, &c, (ffu_interp)99), FFU_ERR_INVALID);
    ffu_image zero = {0};
    CHECK_EQ_INT(ffu_image_resize(&zero, &c, FFU_INTERP_AREA), FFU_ERR_INVALID);
    ffu_image_release(&a), ffu_image_release(&b), ffu_image_release(&n), ffu_image_release(&c);
}

TEST_MAIN(test_bilinear_known_values, test_identity_and_constant, test_bilinear_matches_reference,
          test_nearest_matches_reference, test_area_matches_reference, test_simd_bit_exact,
          test_writes_stay_inside, test_errors)
