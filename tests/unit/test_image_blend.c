/* Blending and colour matching: Gaussian blur against a double-precision reference
 * (and AVX2 against scalar, byte for byte), the alpha blend formula and clipping,
 * Poisson cloning (constant source, source = destination, linear ramps, a converged
 * double-precision reference solve with masks crossing the image border, empty, one-
 * pixel and whole-image regions, context reuse), Lab conversions and round trips,
 * Reinhard transfer statistics, and argument errors. */
#include "facefuse/image.h"
#include "image/blend_internal.h"
#include "image/kernels_internal.h"
#include "test.h"
#include "test_image.h"

static void fill_value(ffu_image *im, uint8_t v)
{
    int bpp = ffu_pixfmt_bpp(im->fmt);
    for (int y = 0; y < im->height; y++)
        memset(im->data[0] + (size_t)y * im->stride[0], v, (size_t)im->width * bpp);
}

static uint8_t *at(const ffu_image *im, int x, int y)
{
    return im->data[0] + (size_t)y * im->stride[0] + (size_t)x * ffu_pixfmt_bpp(im->fmt);
}

/* ---- blur ----------------------------------------------------------------------------- */

static int refl(int p, int n)
{
    if (n == 1) return 0;
    while (p < 0 || p >= n)
        p = p < 0 ? -p : 2 * (n - 1) - p;
    return p;
}

static void test_blur_matches_reference(void)
{
    static const int sizes[][2] = {{64, 48}, {13, 7}, {3, 40}, {600, 5}, {1, 1}};
    static const float sigmas[] = {0.8f, 2.0f, 5.5f, 12.0f};
    uint64_t seed = 1;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t k = 0; k < sizeof sigmas / sizeof sigmas[0]; k++) {
            int w = sizes[si][0], h = sizes[si][1];
            float sigma = sigmas[k];
            ffu_image src, a, b;
            CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_GRAY8, w, h), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&a, FFU_PIX_GRAY8, w, h), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&b, FFU_PIX_GRAY8, w, h), FFU_OK);
            fill_random(&src, &seed);
            CHECK_EQ_INT(ffu_mask_gaussian_blur_impl(&src, &a, sigma, FFU_ISA_AUTO), FFU_OK);
            CHECK_EQ_INT(ffu_mask_gaussian_blur_impl(&src, &b, sigma, FFU_ISA_SCALAR), FFU_OK);
            CHECK_EQ_INT(max_diff(&a, &b), 0);
            int r = ((int)lrintf(sigma * 6 + 1) | 1) / 2;
            double wk[200], sum = 0;
            for (int i = -r; i <= r; i++)
                sum += wk[i + r] = exp(-(double)i * i / (2.0 * sigma * sigma));
            int worst = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    double v = 0;
                    for (int j = -r; j <= r; j++)
                        for (int i = -r; i <= r; i++)
                            v +=
                                wk[i + r] * wk[j + r] * px(&src, refl(x + i, w), refl(y + j, h), 0);
                    int d = abs(px(&a, x, y, 0) - (int)lrint(v / (sum * sum)));
                    if (d > worst) worst = d;
                }
            CHECK(worst <= 1);
            ffu_image_release(&src);
            ffu_image_release(&a);
            ffu_image_release(&b);
        }
}

static void test_blur_constant_and_edge(void)
{
    ffu_image src, dst;
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_GRAY8, 700, 40), FFU_OK); /* two tiles */
    CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_GRAY8, 700, 40), FFU_OK);
    fill_value(&src, 200);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&src, &dst, 7.0f), FFU_OK);
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 700; x++)
            CHECK_EQ_INT(px(&dst, x, y, 0), 200);
    /* a hard 0/255 edge becomes a symmetric ramp: 128 +-1 at the edge, monotone */
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 700; x++)
            at(&src, x, y)[0] = x < 350 ? 255 : 0;
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&src, &dst, 4.0f), FFU_OK);
    for (int x = 1; x < 700; x++)
        CHECK(px(&dst, x, 20, 0) <= px(&dst, x - 1, 20, 0));
    CHECK(abs(px(&dst, 349, 20, 0) + px(&dst, 350, 20, 0) - 255) <= 1);
    CHECK_EQ_INT(px(&dst, 300, 20, 0), 255);
    CHECK_EQ_INT(px(&dst, 400, 20, 0), 0);
    ffu_image_release(&src);
    ffu_image_release(&dst);
}

/* ---- alpha blend ------------------------------------------------------------------------ */

static void test_blend_formula_and_clipping(void)
{
    ffu_image dst, src, mask, orig;
    CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_BGR24, 20, 10), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_BGR24, 8, 6), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&mask, FFU_PIX_GRAY8, 8, 6), FFU_OK);
    uint64_t seed = 4;
    fill_random(&dst, &seed);
    fill_random(&src, &seed);
    fill_random(&mask, &seed);
    at(&mask, 0, 0)[0] = 0, at(&mask, 1, 0)[0] = 255;
    CHECK_EQ_INT(ffu_image_clone(&orig, &dst), FFU_OK);
    int offs[][2] = {{3, 2}, {-4, -3}, {15, 7}, {100, 0}, {-100, 0}};
    for (int o = 0; o < 5; o++) {
        CHECK_EQ_INT(ffu_image_copy(&orig, &dst), FFU_OK);
        int ox = offs[o][0], oy = offs[o][1];
        CHECK_EQ_INT(ffu_image_blend_mask(&dst, &src, &mask, ox, oy), FFU_OK);
        for (int y = 0; y < 10; y++)
            for (int x = 0; x < 20; x++)
                for (int c = 0; c < 3; c++) {
                    int i = x - ox, j = y - oy, want = px(&orig, x, y, c);
                    if (i >= 0 && i < 8 && j >= 0 && j < 6) {
                        int m = px(&mask, i, j, 0), s = px(&src, i, j, c);
                        want = (int)floor((want * (255.0 - m) + s * (double)m) / 255.0 + 0.5);
                        if (m == 255) CHECK_EQ_INT(want, s);
                    }
                    CHECK_EQ_INT(px(&dst, x, y, c), want);
                }
    }
    ffu_image gray;
    CHECK_EQ_INT(ffu_image_create(&gray, FFU_PIX_GRAY8, 8, 5), FFU_OK);
    CHECK_EQ_INT(ffu_image_blend_mask(&dst, &src, &gray, 0, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_blend_mask(&dst, &src, NULL, 0, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_blend_mask(&dst, &mask, &mask, 0, 0), FFU_ERR_INVALID);
    ffu_image_release(&gray);
    ffu_image_release(&dst);
    ffu_image_release(&src);
    ffu_image_release(&mask);
    ffu_image_release(&orig);
}

/* ---- Poisson clone ---------------------------------------------------------------------- */

/* Double-precision reference: the same discrete equations (region = mask >= 128 off the
 * mask's ring and inside dst; neighbours beyond dst left out), solved by SOR to 1e-9. */
static void ref_clone(const ffu_image *src, const ffu_image *mask, ffu_image *dst, int ox, int oy)
{
    int sw = src->width, sh = src->height, cn = ffu_pixfmt_bpp(src->fmt);
    int dw = dst->width, dh = dst->height;
    double *f = calloc((size_t)sw * sh * cn, sizeof *f);
    uint8_t *in = calloc((size_t)sw * sh, 1);
    if (!f || !in) abort();
    for (int j = 1; j < sh - 1; j++)
        for (int i = 1; i < sw - 1; i++) {
            int X = ox + i, Y = oy + j;
            in[j * sw + i] = px(mask, i, j, 0) >= 128 && X >= 0 && X < dw && Y >= 0 && Y < dh;
        }
    for (int j = 0; j < sh; j++)
        for (int i = 0; i < sw; i++) {
            int X = ox + i, Y = oy + j;
            for (int c = 0; c < cn; c++)
                f[(j * sw + i) * cn + c] = in[j * sw + i] ? px(src, i, j, c)
                                           : (X >= 0 && X < dw && Y >= 0 && Y < dh)
                                               ? px(dst, X, Y, c)
                                               : 0;
        }
    static const int nx[4] = {-1, 1, 0, 0}, ny[4] = {0, 0, -1, 1};
    for (int it = 0; it < 100000; it++) {
        double change = 0;
        for (int j = 1; j < sh - 1; j++)
            for (int i = 1; i < sw - 1; i++) {
                if (!in[j * sw + i]) continue;
                for (int c = 0; c < cn; c++) {
                    double num = 0;
                    int nb = 0;
                    for (int k = 0; k < 4; k++) {
                        int qi = i + nx[k], qj = j + ny[k], X = ox + qi, Y = oy + qj;
                        if (X < 0 || X >= dw || Y < 0 || Y >= dh) continue;
                        nb++;
                        num += f[(qj * sw + qi) * cn + c] + px(src, i, j, c) - px(src, qi, qj, c);
                    }
                    if (!nb) continue;
                    double *v = &f[(j * sw + i) * cn + c], nv = *v + 1.9 * (num / nb - *v);
                    if (fabs(nv - *v) > change) change = fabs(nv - *v);
                    *v = nv;
                }
            }
        if (change < 1e-9) break;
    }
    for (int j = 0; j < sh; j++)
        for (int i = 0; i < sw; i++)
            if (in[j * sw + i])
                for (int c = 0; c < cn; c++) {
                    double v = floor(f[(j * sw + i) * cn + c] + 0.5);
                    at(dst, ox + i, oy + j)[c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
    free(f);
    free(in);
}

static void fill_disc(ffu_image *m, double cx, double cy, double r)
{
    for (int y = 0; y < m->height; y++)
        for (int x = 0; x < m->width; x++)
            at(m, x, y)[0] = (x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r ? 255 : 0;
}

static void test_clone_constant_source_gives_destination(void)
{
    ffu_image src, dst, mask;
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_RGB24, 40, 30), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_RGB24, 64, 48), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&mask, FFU_PIX_GRAY8, 40, 30), FFU_OK);
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < 40; x++)
            memcpy(at(&src, x, y), (uint8_t[]){200, 20, 90}, 3);
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++)
            memcpy(at(&dst, x, y), (uint8_t[]){30, 160, 140}, 3);
    fill_disc(&mask, 20, 15, 12);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &dst, 10, 9), FFU_OK);
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++) {
            CHECK_EQ_INT(px(&dst, x, y, 0), 30);
            CHECK_EQ_INT(px(&dst, x, y, 1), 160);
            CHECK_EQ_INT(px(&dst, x, y, 2), 140);
        }
    ffu_image_release(&src);
    ffu_image_release(&dst);
    ffu_image_release(&mask);
}

static void test_clone_source_equal_destination_and_ramp(void)
{
    ffu_image src, dst, mask, orig;
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_RGBA32, 50, 40), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_RGBA32, 50, 40), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&mask, FFU_PIX_GRAY8, 50, 40), FFU_OK);
    uint64_t seed = 8;
    fill_random(&src, &seed);
    CHECK_EQ_INT(ffu_image_copy(&src, &dst), FFU_OK);
    fill_random(&mask, &seed); /* ragged region */
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &dst, 0, 0), FFU_OK);
    CHECK_EQ_INT(max_diff(&src, &dst), 0);
    /* Source: a ramp; destination: the same ramp 40 levels brighter plus noise away from
     * the region. The result inside has the ramp's gradient and the destination's level. */
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 50; x++)
            for (int c = 0; c < 4; c++) {
                at(&src, x, y)[c] = (uint8_t)(2 * x + y + 10 * c);
                at(&dst, x, y)[c] = (uint8_t)(2 * x + y + 10 * c + 40);
            }
    fill_disc(&mask, 25, 20, 14);
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 50; x++)
            if ((x - 25) * (x - 25) + (y - 20) * (y - 20) > 17 * 17)
                at(&dst, x, y)[0] = (uint8_t)(test_rand_u64(&seed) >> 56);
    CHECK_EQ_INT(ffu_image_clone(&orig, &dst), FFU_OK);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &dst, 0, 0), FFU_OK);
    for (int y = 0; y < 40; y++)
        for (int x = 0; x < 50; x++)
            for (int c = 0; c < 4; c++) {
                if (px(&mask, x, y, 0)) {
                    CHECK(abs(px(&dst, x, y, c) - (2 * x + y + 10 * c + 40)) <= 1);
                    if (px(&mask, x + 1, y, 0))
                        CHECK(abs(px(&dst, x + 1, y, c) - px(&dst, x, y, c) - 2) <= 1);
                } else {
                    CHECK_EQ_INT(px(&dst, x, y, c), px(&orig, x, y, c));
                }
            }
    ffu_image_release(&src);
    ffu_image_release(&dst);
    ffu_image_release(&mask);
    ffu_image_release(&orig);
}

/* Against the converged reference, with regions inside, crossing the left/top and the
 * right/bottom image edges, and covering a thin strip. */
static void test_clone_matches_reference_solve(void)
{
    struct {
        int sw, sh, dw, dh, ox, oy, shape;
    } cases[] = {
        {48, 40, 80, 60, 12, 9, 0}, {48, 40, 80, 60, -10, -7, 0}, {48, 40, 60, 50, 30, 25, 1},
        {60, 9, 70, 30, 3, 10, 2},  {33, 31, 33, 31, 0, 0, 1},
    };
    uint64_t seed = 12;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ffu_image src, dst, ref, mask, tight;
        CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_RGB24, cases[k].sw, cases[k].sh), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&mask, FFU_PIX_GRAY8, cases[k].sw, cases[k].sh), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_RGB24, cases[k].dw, cases[k].dh), FFU_OK);
        /* textured source, smooth destination with a different colour */
        for (int y = 0; y < src.height; y++)
            for (int x = 0; x < src.width; x++)
                for (int c = 0; c < 3; c++)
                    at(&src, x, y)[c] = (uint8_t)(100 + 40 * sin(x * 0.4 + c) + 30 * cos(y * 0.3) +
                                                  (test_rand_u64(&seed) >> 60));
        for (int y = 0; y < dst.height; y++)
            for (int x = 0; x < dst.width; x++)
                for (int c = 0; c < 3; c++)
                    at(&dst, x, y)[c] = (uint8_t)(60 + x + 2 * y * (c + 1) / 3);
        if (cases[k].shape == 0) fill_disc(&mask, cases[k].sw / 2.0, cases[k].sh / 2.0, 15);
        if (cases[k].shape == 1) fill_value(&mask, 255); /* whole image: ring is boundary */
        if (cases[k].shape == 2)
            for (int x = 0; x < mask.width; x++)
                at(&mask, x, 4)[0] = 255; /* 1-px line */
        CHECK_EQ_INT(ffu_image_clone(&ref, &dst), FFU_OK);
        CHECK_EQ_INT(ffu_image_clone(&tight, &dst), FFU_OK);
        ref_clone(&src, &mask, &ref, cases[k].ox, cases[k].oy);
        int cycles = 0, cycles_tight = 0;
        CHECK_EQ_INT(ffu_image_seamless_clone_impl(NULL, &src, &mask, &dst, cases[k].ox,
                                                   cases[k].oy, FFU_CLONE_TOL, FFU_CLONE_MAX_CYCLES,
                                                   &cycles),
                     FFU_OK);
        CHECK_EQ_INT(ffu_image_seamless_clone_impl(NULL, &src, &mask, &tight, cases[k].ox,
                                                   cases[k].oy, 1e-4f, 200, &cycles_tight),
                     FFU_OK);
        CHECK(cycles >= 1 && cycles < FFU_CLONE_MAX_CYCLES);
        CHECK(cycles_tight < 200); /* converges to float precision */
        CHECK(max_diff(&tight, &ref) <= 1);
        CHECK(max_diff(&dst, &ref) <= 1);
        long differ = 0, total = (long)dst.width * dst.height * 3;
        for (int y = 0; y < dst.height; y++)
            for (int x = 0; x < dst.width * 3; x++)
                differ += dst.data[0][(size_t)y * dst.stride[0] + x] !=
                          ref.data[0][(size_t)y * ref.stride[0] + x];
        CHECK(differ * 50 < total); /* under 2% off by one */
        ffu_image_release(&src);
        ffu_image_release(&dst);
        ffu_image_release(&ref);
        ffu_image_release(&tight);
        ffu_image_release(&mask);
    }
}

static void test_clone_small_and_degenerate_regions(void)
{
    ffu_image src, dst, mask, orig;
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_GRAY8, 9, 9), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_GRAY8, 20, 20), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&mask, FFU_PIX_GRAY8, 9, 9), FFU_OK);
    uint64_t seed = 2;
    fill_random(&src, &seed);
    fill_random(&dst, &seed);
    CHECK_EQ_INT(ffu_image_clone(&orig, &dst), FFU_OK);
    /* empty mask, a mask only on its outer ring, a mask below 128: no change */
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &dst, 3, 3), FFU_OK);
    for (int i = 0; i < 9; i++)
        at(&mask, i, 0)[0] = at(&mask, 0, i)[0] = 255;
    at(&mask, 4, 4)[0] = 127;
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &dst, 3, 3), FFU_OK);
    /* region entirely outside dst */
    fill_value(&mask, 255);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &dst, 50, -30), FFU_OK);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &dst, -8, 0), FFU_OK);
    CHECK_EQ_INT(max_diff(&dst, &orig), 0);
    /* one pixel: f = g_p + mean over the 4 neighbours of (dst_q - g_q) */
    fill_value(&mask, 0);
    at(&mask, 4, 5)[0] = 255;
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &dst, 3, 3), FFU_OK);
    double v = px(&src, 4, 5, 0);
    static const int nx[4] = {-1, 1, 0, 0}, ny[4] = {0, 0, -1, 1};
    for (int k = 0; k < 4; k++)
        v += (px(&orig, 7 + nx[k], 8 + ny[k], 0) - px(&src, 4 + nx[k], 5 + ny[k], 0)) / 4.0;
    v = v < 0 ? 0 : v > 255 ? 255 : floor(v + 0.5);
    CHECK(abs(px(&dst, 7, 8, 0) - (int)v) <= 0);
    at(&dst, 7, 8)[0] = (uint8_t)px(&orig, 7, 8, 0);
    CHECK_EQ_INT(max_diff(&dst, &orig), 0);
    /* the region covers all of dst (no boundary at all): dst becomes the source */
    ffu_image big, bigm, small;
    CHECK_EQ_INT(ffu_image_create(&big, FFU_PIX_GRAY8, 30, 30), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&bigm, FFU_PIX_GRAY8, 30, 30), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&small, FFU_PIX_GRAY8, 12, 10), FFU_OK);
    fill_random(&big, &seed);
    fill_random(&small, &seed);
    fill_value(&bigm, 255);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &big, &bigm, &small, -5, -6), FFU_OK);
    for (int y = 0; y < 10; y++)
        for (int x = 0; x < 12; x++)
            CHECK_EQ_INT(px(&small, x, y, 0), px(&big, x + 5, y + 6, 0));
    /* a 1x1 destination */
    ffu_image one;
    CHECK_EQ_INT(ffu_image_create(&one, FFU_PIX_GRAY8, 1, 1), FFU_OK);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &big, &bigm, &one, -3, -3), FFU_OK);
    CHECK_EQ_INT(px(&one, 0, 0, 0), px(&big, 3, 3, 0));
    ffu_image_release(&one);
    ffu_image_release(&big);
    ffu_image_release(&bigm);
    ffu_image_release(&small);
    ffu_image_release(&src);
    ffu_image_release(&dst);
    ffu_image_release(&mask);
    ffu_image_release(&orig);
}

static void test_clone_context_reuse(void)
{
    ffu_clone_ctx *ctx = NULL;
    CHECK_EQ_INT(ffu_clone_ctx_create(&ctx), FFU_OK);
    uint64_t seed = 31;
    static const int sizes[] = {60, 20, 90, 33};
    for (int k = 0; k < 4; k++) {
        int n = sizes[k];
        ffu_image src, mask, a, b;
        CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_BGR24, n, n), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&mask, FFU_PIX_GRAY8, n, n), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&a, FFU_PIX_BGR24, n + 10, n + 4), FFU_OK);
        fill_random(&src, &seed);
        fill_random(&a, &seed);
        fill_disc(&mask, n / 2.0, n / 2.0, n / 3.0);
        CHECK_EQ_INT(ffu_image_clone(&b, &a), FFU_OK);
        CHECK_EQ_INT(ffu_image_seamless_clone(ctx, &src, &mask, &a, 5, 2), FFU_OK);
        CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &src, &mask, &b, 5, 2), FFU_OK);
        CHECK_EQ_INT(max_diff(&a, &b), 0);
        ffu_image_release(&src);
        ffu_image_release(&mask);
        ffu_image_release(&a);
        ffu_image_release(&b);
    }
    ffu_clone_ctx_destroy(ctx);
    ffu_clone_ctx_destroy(NULL);
}

/* ---- colour ------------------------------------------------------------------------------ */

static void test_lab_known_values_and_round_trip(void)
{
    float lab[3];
    ffu_color_rgb_to_lab((const uint8_t[]){255, 255, 255}, lab);
    CHECK_NEAR(lab[0], 100, 0.01);
    CHECK_NEAR(lab[1], 0, 0.01);
    CHECK_NEAR(lab[2], 0, 0.01);
    ffu_color_rgb_to_lab((const uint8_t[]){0, 0, 0}, lab);
    CHECK_NEAR(lab[0], 0, 1e-4);
    ffu_color_rgb_to_lab((const uint8_t[]){255, 0, 0}, lab);
    CHECK_NEAR(lab[0], 53.24, 0.05);
    CHECK_NEAR(lab[1], 80.09, 0.1);
    CHECK_NEAR(lab[2], 67.20, 0.1);
    ffu_color_rgb_to_lab((const uint8_t[]){0, 0, 255}, lab);
    CHECK_NEAR(lab[0], 32.30, 0.05);
    CHECK_NEAR(lab[1], 79.19, 0.1);
    CHECK_NEAR(lab[2], -107.86, 0.1);
    /* every byte triple on a step-3 lattice (plus 255) comes back exactly */
    int worst = 0;
    for (int r = 0; r < 258; r += 3)
        for (int g = 0; g < 258; g += 3)
            for (int b = 0; b < 258; b += 3) {
                uint8_t in[3] = {(uint8_t)(r > 255 ? 255 : r), (uint8_t)(g > 255 ? 255 : g),
                                 (uint8_t)(b > 255 ? 255 : b)},
                        out[3];
                ffu_color_rgb_to_lab(in, lab);
                ffu_color_lab_to_rgb(lab, out);
                for (int c = 0; c < 3; c++)
                    if (abs(out[c] - in[c]) > worst) worst = abs(out[c] - in[c]);
            }
    CHECK_EQ_INT(worst, 0);
    /* out of gamut clamps */
    uint8_t out[3];
    ffu_color_lab_to_rgb((const float[]){150, 200, -200}, out);
    CHECK(out[0] == 255 && out[2] == 255);
    ffu_color_lab_to_rgb((const float[]){-20, 0, 0}, out);
    CHECK(out[0] == 0 && out[1] == 0 && out[2] == 0);
    ffu_color_lab_to_rgb((const float[]){NAN, 0, 0}, out); /* no crash */

    /* images: BGR and RGBA through float buffers */
    ffu_image im, back;
    uint64_t seed = 6;
    CHECK_EQ_INT(ffu_image_create(&im, FFU_PIX_BGR24, 17, 5), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&back, FFU_PIX_BGR24, 17, 5), FFU_OK);
    fill_random(&im, &seed);
    float buf[5 * 60];
    CHECK_EQ_INT(ffu_image_to_lab(&im, buf, 60), FFU_OK);
    uint8_t rgb[3] = {at(&im, 3, 2)[2], at(&im, 3, 2)[1], at(&im, 3, 2)[0]};
    ffu_color_rgb_to_lab(rgb, lab);
    CHECK_NEAR(buf[2 * 60 + 9], lab[0], 1e-5);
    CHECK_NEAR(buf[2 * 60 + 11], lab[2], 1e-5);
    CHECK_EQ_INT(ffu_image_from_lab(buf, 60, &back), FFU_OK);
    CHECK_EQ_INT(max_diff(&im, &back), 0);
    CHECK_EQ_INT(ffu_image_to_lab(&im, buf, 50), FFU_ERR_INVALID);
    ffu_image gray;
    CHECK_EQ_INT(ffu_image_create(&gray, FFU_PIX_GRAY8, 4, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_to_lab(&gray, buf, 60), FFU_ERR_INVALID);
    ffu_image_release(&gray);
    ffu_image_release(&im);
    ffu_image_release(&back);
}

static void test_color_transfer_matches_statistics(void)
{
    ffu_image img, ref, imask, rmask;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 80, 60), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&ref, FFU_PIX_BGR24, 50, 70), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&imask, FFU_PIX_GRAY8, 80, 60), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&rmask, FFU_PIX_GRAY8, 50, 70), FFU_OK);
    for (ffu_color_space sp = FFU_COLOR_LAB; sp <= FFU_COLOR_RGB; sp++) {
        uint64_t seed = 77;
        /* img: pale bluish texture; ref: warmer, darker, more contrast (a skin tone) */
        for (int y = 0; y < 60; y++)
            for (int x = 0; x < 80; x++) {
                int t = (int)(test_rand_u64(&seed) >> 59);
                uint8_t *p = at(&img, x, y);
                p[0] = (uint8_t)(120 + t + x / 4), p[1] = (uint8_t)(140 + t + y / 4);
                p[2] = (uint8_t)(170 + t);
            }
        for (int y = 0; y < 70; y++)
            for (int x = 0; x < 50; x++) {
                int t = (int)(test_rand_u64(&seed) >> 58);
                uint8_t *p = at(&ref, x, y); /* B, G, R */
                p[2] = (uint8_t)(150 + t + x / 2), p[1] = (uint8_t)(100 + t),
                p[0] = (uint8_t)(80 + t / 2 + y / 5);
            }
        fill_disc(&imask, 40, 30, 25);
        fill_disc(&rmask, 25, 35, 20);
        at(&rmask, 2, 2)[0] = 0; /* outside pixels must not count */
        ffu_color_stats want, before, after;
        CHECK_EQ_INT(ffu_image_color_stats(&ref, &rmask, sp, &want), FFU_OK);
        CHECK_EQ_INT(ffu_image_color_stats(&img, &imask, sp, &before), FFU_OK);
        CHECK(fabs(before.mean[0] - want.mean[0]) > 5);
        CHECK_EQ_INT(ffu_image_color_transfer(&img, &imask, &ref, &rmask, sp), FFU_OK);
        CHECK_EQ_INT(ffu_image_color_stats(&img, &imask, sp, &after), FFU_OK);
        for (int c = 0; c < 3; c++) {
            CHECK_NEAR(after.mean[c], want.mean[c], 0.6);
            CHECK_NEAR(after.std[c], want.std[c], 0.05 * want.std[c] + 0.3);
        }
        CHECK_NEAR(want.weight, 1257, 40);
    }
    /* a flat region only shifts; an empty mask is an error */
    fill_value(&img, 100);
    ffu_color_stats a, b;
    CHECK_EQ_INT(ffu_image_color_stats(&img, NULL, FFU_COLOR_RGB, &a), FFU_OK);
    CHECK_NEAR(a.std[0], 0, 1e-9);
    b = a;
    b.mean[0] = 150, b.std[0] = 30;
    CHECK_EQ_INT(ffu_image_color_apply(&img, &a, &b), FFU_OK);
    CHECK_EQ_INT(px(&img, 5, 5, 0), 150);
    CHECK_EQ_INT(px(&img, 5, 5, 1), 100);
    fill_value(&imask, 0);
    CHECK_EQ_INT(ffu_image_color_stats(&img, &imask, FFU_COLOR_LAB, &a), FFU_ERR_INVALID);
    CHECK_NEAR(a.weight, 0, 0);
    CHECK_EQ_INT(ffu_image_color_stats(&img, &rmask, FFU_COLOR_LAB, &a), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_color_stats(&img, NULL, (ffu_color_space)7, &a), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_color_stats(&img, NULL, FFU_COLOR_LAB, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_color_stats(&img, NULL, FFU_COLOR_LAB, &a), FFU_OK);
    CHECK_EQ_INT(ffu_image_color_stats(&img, NULL, FFU_COLOR_RGB, &b), FFU_OK);
    CHECK_EQ_INT(ffu_image_color_apply(&img, &a, &b), FFU_ERR_INVALID); /* spaces differ */
    b.space = FFU_COLOR_LAB, b.std[1] = NAN;
    CHECK_EQ_INT(ffu_image_color_apply(&img, &a, &b), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_color_transfer(&img, NULL, &rmask, NULL, FFU_COLOR_LAB),
                 FFU_ERR_INVALID);
    ffu_image_release(&img);
    ffu_image_release(&ref);
    ffu_image_release(&imask);
    ffu_image_release(&rmask);
}

static void test_blend_bad_arguments(void)
{
    ffu_image g, g2, rgb, other;
    CHECK_EQ_INT(ffu_image_create(&g, FFU_PIX_GRAY8, 16, 16), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&g2, FFU_PIX_GRAY8, 16, 16), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_RGB24, 16, 16), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&other, FFU_PIX_GRAY8, 15, 16), FFU_OK);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&g, &g2, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&g, &g2, -1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&g, &g2, NAN), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&g, &g2, 101), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&g, &g, 2), FFU_ERR_INVALID); /* in place */
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&g, &other, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&rgb, &rgb, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(NULL, &g2, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_gaussian_blur(&g, &g2, 100), FFU_OK);
    ffu_image rgb2;
    CHECK_EQ_INT(ffu_image_create(&rgb2, FFU_PIX_RGB24, 16, 16), FFU_OK);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &rgb, &other, &rgb2, 0, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &rgb, &rgb, &rgb2, 0, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &rgb, &g, &g2, 0, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &rgb, &g, &rgb, 0, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, NULL, &g, &rgb2, 0, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_seamless_clone_impl(NULL, &rgb, &g, &rgb2, 0, 0, 0, 10, NULL),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_seamless_clone(NULL, &rgb, &g, &rgb2, INT32_MIN, INT32_MAX), FFU_OK);
    CHECK_EQ_INT(ffu_image_blend_mask(&rgb2, &rgb, &g, INT32_MAX, INT32_MIN), FFU_OK);
    CHECK_EQ_INT(ffu_clone_ctx_create(NULL), FFU_ERR_INVALID);
    ffu_image_release(&g);
    ffu_image_release(&g2);
    ffu_image_release(&rgb);
    ffu_image_release(&rgb2);
    ffu_image_release(&other);
}

TEST_MAIN(test_blur_matches_reference, test_blur_constant_and_edge, test_blend_formula_and_clipping,
          test_clone_constant_source_gives_destination,
          test_clone_source_equal_destination_and_ramp, test_clone_matches_reference_solve,
          test_clone_small_and_degenerate_regions, test_clone_context_reuse,
          test_lab_known_values_and_round_trip, test_color_transfer_matches_statistics,
          test_blend_bad_arguments)
