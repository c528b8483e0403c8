/* Piecewise-affine warp and polygon masks: a global affine cut into triangles equals
 * ffu_image_warp_affine (within +-1), meshes cover their outline with no gap and no
 * pixel written twice (jittered and exactly-on-pixel-centre meshes), the tie rule on
 * a hand-checked rectangle, the non-zero winding rule, degenerate and far-away
 * triangles, each SIMD path (AVX2, AVX-512) vs scalar bytes, and argument errors. */
#include "facefuse/image.h"
#include "image/blend_internal.h"
#include "image/kernels_internal.h"
#include "test.h"
#include "test_image.h"

/* Photo-like: smooth shading with texture of at most ~15 levels per pixel, so a 1/32 px
 * difference in sample position moves a value by at most 1. */
static void fill_smooth(ffu_image *im)
{
    int bpp = ffu_pixfmt_bpp(im->fmt);
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++)
            for (int c = 0; c < bpp; c++)
                im->data[0][(size_t)y * im->stride[0] + x * bpp + c] =
                    (uint8_t)(128 + 60 * sin(x / 5.0 + c) * cos(y / 7.0) + 0.4 * (x - y));
}

static void fill_value(ffu_image *im, uint8_t v)
{
    int bpp = ffu_pixfmt_bpp(im->fmt);
    for (int y = 0; y < im->height; y++)
        memset(im->data[0] + (size_t)y * im->stride[0], v, (size_t)im->width * bpp);
}

static int count_value(const ffu_image *m, uint8_t v)
{
    int n = 0;
    for (int y = 0; y < m->height; y++)
        for (int x = 0; x < m->width; x++)
            n += m->data[0][(size_t)y * m->stride[0] + x] == v;
    return n;
}

/* A gw x gh grid of points spanning the quadrilateral q (4 corners), interior points
 * jittered by up to `jitter` of a cell; two triangles per cell (diagonal alternating).
 * Returns the number of triangles; the outline (boundary points in order) in outline,
 * its length in *nout. */
static int make_mesh(const float q[8], int gw, int gh, float jitter, uint64_t *seed, float *xy,
                     int *tri, float *outline, int *nout)
{
    for (int j = 0; j < gh; j++)
        for (int i = 0; i < gw; i++) {
            float u = (float)i / (float)(gw - 1), v = (float)j / (float)(gh - 1);
            if (i > 0 && i < gw - 1 && j > 0 && j < gh - 1) {
                u += jitter * (test_rand_f(seed) - 0.5f) / (float)(gw - 1);
                v += jitter * (test_rand_f(seed) - 0.5f) / (float)(gh - 1);
            }
            for (int k = 0; k < 2; k++)
                xy[2 * (j * gw + i) + k] = (1 - u) * (1 - v) * q[k] + u * (1 - v) * q[2 + k] +
                                           u * v * q[4 + k] + (1 - u) * v * q[6 + k];
        }
    int nt = 0;
    for (int j = 0; j + 1 < gh; j++)
        for (int i = 0; i + 1 < gw; i++) {
            int a = j * gw + i, b = a + 1, c = a + gw, d = c + 1;
            if ((i + j) & 1) {
                int t[6] = {a, b, d, a, d, c};
                memcpy(tri + 3 * nt, t, sizeof t);
            } else {
                int t[6] = {a, b, c, b, d, c};
                memcpy(tri + 3 * nt, t, sizeof t);
            }
            nt += 2;
        }
    int n = 0;
    for (int i = 0; i < gw; i++)
        memcpy(outline + 2 * n++, xy + 2 * i, 8);
    for (int j = 1; j < gh; j++)
        memcpy(outline + 2 * n++, xy + 2 * (j * gw + gw - 1), 8);
    for (int i = gw - 2; i >= 0; i--)
        memcpy(outline + 2 * n++, xy + 2 * ((gh - 1) * gw + i), 8);
    for (int j = gh - 2; j > 0; j--)
        memcpy(outline + 2 * n++, xy + 2 * (j * gw), 8);
    *nout = n;
    return nt;
}

static void test_global_affine_matches_warp_affine(void)
{
    static const ffu_pixfmt fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32};
    uint64_t seed = 3;
    /* forward src -> dst: rotate 12 degrees, scale 1.15, shift */
    double c = cos(0.2094) * 1.15, s = sin(0.2094) * 1.15;
    double F[6] = {c, -s, 30.5, s, c, -8.25}, inv[6];
    CHECK_EQ_INT(ffu_affine_invert(F, inv), FFU_OK);
    enum { GW = 7, GH = 6 };
    float dxy[2 * GW * GH], sxy[2 * GW * GH], outline[4 * (GW + GH)];
    int tri[6 * GW * GH], nout;
    const float quad[8] = {40.3f, 20.7f, 190.2f, 31.1f, 175.6f, 150.4f, 35.9f, 139.8f};
    int nt = make_mesh(quad, GW, GH, 0.4f, &seed, dxy, tri, outline, &nout);
    for (int i = 0; i < GW * GH; i++) {
        double x = dxy[2 * i], y = dxy[2 * i + 1];
        sxy[2 * i] = (float)(inv[0] * x + inv[1] * y + inv[2]);
        sxy[2 * i + 1] = (float)(inv[3] * x + inv[4] * y + inv[5]);
    }
    for (int f = 0; f < 4; f++) {
        ffu_image src, a, b, mask, a2;
        CHECK_EQ_INT(ffu_image_create(&src, fmts[f], 211, 173), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&a, fmts[f], 230, 181), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&a2, fmts[f], 230, 181), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&b, fmts[f], 230, 181), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&mask, FFU_PIX_GRAY8, 230, 181), FFU_OK);
        fill_smooth(&src);
        fill_value(&a, 77);
        fill_value(&a2, 77);
        CHECK_EQ_INT(ffu_image_warp_piecewise_impl(&src, &a, sxy, dxy, GW * GH, tri, nt, &mask,
                                                   FFU_ISA_AUTO),
                     FFU_OK);
        CHECK_EQ_INT(ffu_image_warp_piecewise_impl(&src, &a2, sxy, dxy, GW * GH, tri, nt, NULL,
                                                   FFU_ISA_SCALAR),
                     FFU_OK);
        CHECK_EQ_INT(max_diff(&a, &a2), 0); /* SIMD == scalar, byte for byte */
        CHECK_EQ_INT(
            ffu_image_warp_affine(&src, &b, inv, FFU_INTERP_BILINEAR, FFU_BORDER_REPLICATE, NULL),
            FFU_OK);
        int bpp = ffu_pixfmt_bpp(fmts[f]), inside = 0, worst = 0, exact = 0, total = 0;
        for (int y = 0; y < a.height; y++)
            for (int x = 0; x < a.width; x++) {
                int m = mask.data[0][(size_t)y * mask.stride[0] + x];
                CHECK(m == 0 || m == 255);
                for (int k = 0; k < bpp; k++) {
                    if (!m) {
                        CHECK_EQ_INT(px(&a, x, y, k), 77); /* outside: untouched */
                        continue;
                    }
                    int d = abs(px(&a, x, y, k) - px(&b, x, y, k));
                    if (d > worst) worst = d;
                    exact += d == 0;
                    total++;
                }
                inside += m != 0;
            }
        if (worst > 1) fprintf(stderr, "fmt %d worst %d exact %d/%d\n", f, worst, exact, total);
        CHECK(worst <= 1);
        CHECK(exact > total * 9 / 10);
        /* Coverage is the outline's polygon, pixel for pixel. */
        ffu_image poly;
        CHECK_EQ_INT(ffu_image_create(&poly, FFU_PIX_GRAY8, 230, 181), FFU_OK);
        CHECK_EQ_INT(ffu_mask_fill_polygon(&poly, outline, nout, 255), FFU_OK);
        CHECK_EQ_INT(max_diff(&poly, &mask), 0);
        CHECK(inside > 15000);
        ffu_image_release(&poly);
        ffu_image_release(&src);
        ffu_image_release(&a);
        ffu_image_release(&a2);
        ffu_image_release(&b);
        ffu_image_release(&mask);
    }
}

/* Each triangle alone into a counter: every pixel at most once, and the union equals
 * the outline polygon and the warp's coverage. */
static void check_mesh_tiles(const float *xy, int npts, const int *tri, int nt,
                             const float *outline, int nout, int w, int h)
{
    ffu_image one, poly, cov, src, dst;
    CHECK_EQ_INT(ffu_image_create(&one, FFU_PIX_GRAY8, w, h), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&poly, FFU_PIX_GRAY8, w, h), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&cov, FFU_PIX_GRAY8, w, h), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_RGB24, 64, 64), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_RGB24, w, h), FFU_OK);
    uint16_t *count = calloc((size_t)w * h, sizeof *count);
    CHECK(count);
    for (int t = 0; t < nt; t++) {
        fill_value(&one, 0);
        CHECK_EQ_INT(ffu_mask_fill_triangles(&one, xy, npts, tri + 3 * t, 1, 1), FFU_OK);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                count[y * w + x] += one.data[0][(size_t)y * one.stride[0] + x];
    }
    CHECK_EQ_INT(ffu_mask_fill_polygon(&poly, outline, nout, 1), FFU_OK);
    float *sxy = malloc((size_t)npts * 2 * sizeof *sxy);
    CHECK(sxy);
    for (int i = 0; i < 2 * npts; i++)
        sxy[i] = xy[i] * 0.1f;
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, sxy, xy, npts, tri, nt, &cov), FFU_OK);
    int bad_twice = 0, bad_union = 0, covered = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int c = count[y * w + x];
            bad_twice += c > 1;
            bad_union += c != poly.data[0][(size_t)y * poly.stride[0] + x];
            bad_union += (c ? 255 : 0) != cov.data[0][(size_t)y * cov.stride[0] + x];
            covered += c;
        }
    free(count);
    free(sxy);
    CHECK_EQ_INT(bad_twice, 0);
    CHECK_EQ_INT(bad_union, 0);
    CHECK(covered > 0);
    ffu_image_release(&one);
    ffu_image_release(&poly);
    ffu_image_release(&cov);
    ffu_image_release(&src);
    ffu_image_release(&dst);
}

static void test_mesh_no_gaps_no_double_writes(void)
{
    uint64_t seed = 11;
    enum { GW = 21, GH = 17, N = GW * GH };
    static float xy[2 * N], outline[4 * (GW + GH)];
    static int tri[6 * N];
    int nout;
    /* jittered mesh on a skewed quadrilateral, partly outside the image */
    const float q1[8] = {-10.3f, 5.2f, 150.7f, -7.9f, 170.1f, 130.6f, 3.3f, 120.2f};
    int nt = make_mesh(q1, GW, GH, 0.4f, &seed, xy, tri, outline, &nout);
    check_mesh_tiles(xy, N, tri, nt, outline, nout, 160, 128);
    /* every vertex on a pixel centre and edges through many centres: the tie rule */
    const float q2[8] = {2, 3, 142, 3, 142, 99, 2, 99};
    nt = make_mesh(q2, GW, GH, 0, &seed, xy, tri, outline, &nout);
    check_mesh_tiles(xy, N, tri, nt, outline, nout, 160, 128);
    /* a fan around one centre vertex (many triangles share it) */
    float fan[2 * 13];
    int ftri[3 * 12];
    fan[0] = 40, fan[1] = 30;
    for (int k = 0; k < 12; k++) {
        fan[2 + 2 * k] = 40 + (float)(25 * cos(k * 0.5236));
        fan[3 + 2 * k] = 30 + (float)(25 * sin(k * 0.5236));
        ftri[3 * k] = 0, ftri[3 * k + 1] = 1 + k, ftri[3 * k + 2] = 1 + (k + 1) % 12;
    }
    check_mesh_tiles(fan, 13, ftri, 12, fan + 2, 12, 80, 64);
}

static void test_tie_rule_rectangle(void)
{
    ffu_image m;
    CHECK_EQ_INT(ffu_image_create(&m, FFU_PIX_GRAY8, 12, 9), FFU_OK);
    /* Corners on pixel centres: centres on the left and bottom edges are out, on the
     * right and top edges in (x 3..6, y 2..4), whatever the orientation. */
    const float cw[8] = {2, 2, 6, 2, 6, 5, 2, 5}, ccw[8] = {2, 2, 2, 5, 6, 5, 6, 2};
    for (int o = 0; o < 2; o++) {
        fill_value(&m, 0);
        CHECK_EQ_INT(ffu_mask_fill_polygon(&m, o ? ccw : cw, 4, 9), FFU_OK);
        for (int y = 0; y < 9; y++)
            for (int x = 0; x < 12; x++)
                CHECK_EQ_INT(px(&m, x, y, 0), (x >= 3 && x <= 6 && y >= 2 && y <= 4) ? 9 : 0);
        /* the same rectangle as two triangles */
        fill_value(&m, 0);
        const int t2[6] = {0, 1, 2, 0, 2, 3};
        CHECK_EQ_INT(ffu_mask_fill_triangles(&m, o ? ccw : cw, 4, t2, 2, 9), FFU_OK);
        CHECK_EQ_INT(count_value(&m, 9), 12);
        CHECK_EQ_INT(px(&m, 3, 2, 0), 9);
        CHECK_EQ_INT(px(&m, 2, 2, 0), 0);
        CHECK_EQ_INT(px(&m, 6, 5, 0), 0);
    }
    /* half-pixel corners: exactly the 10 x 5 enclosed centres */
    fill_value(&m, 0);
    const float half[8] = {0.5f, 0.5f, 10.5f, 0.5f, 10.5f, 5.5f, 0.5f, 5.5f};
    CHECK_EQ_INT(ffu_mask_fill_polygon(&m, half, 4, 1), FFU_OK);
    CHECK_EQ_INT(count_value(&m, 1), 50);
    CHECK_EQ_INT(px(&m, 1, 1, 0), 1);
    CHECK_EQ_INT(px(&m, 10, 5, 0), 1);
    CHECK_EQ_INT(px(&m, 0, 0, 0), 0);
    ffu_image_release(&m);
}

static void test_polygon_winding_and_concave(void)
{
    ffu_image m;
    CHECK_EQ_INT(ffu_image_create(&m, FFU_PIX_GRAY8, 64, 64), FFU_OK);
    /* L shape, concave: 20x10 + 10x10 pixel centres */
    const float L[12] = {9.5f,  9.5f,  29.5f, 9.5f,  29.5f, 19.5f,
                         19.5f, 19.5f, 19.5f, 29.5f, 9.5f,  29.5f};
    CHECK_EQ_INT(ffu_mask_fill_polygon(&m, L, 6, 200), FFU_OK);
    CHECK_EQ_INT(count_value(&m, 200), 300);
    CHECK_EQ_INT(px(&m, 25, 25, 0), 0);
    CHECK_EQ_INT(px(&m, 15, 25, 0), 200);
    /* pentagram: non-zero winding fills the centre pentagon too */
    fill_value(&m, 0);
    float star[10];
    for (int k = 0; k < 5; k++) {
        double a = -1.5708 + k * 2 * 2.51327;
        star[2 * k] = (float)(32 + 28 * cos(a)), star[2 * k + 1] = (float)(32 + 28 * sin(a));
    }
    CHECK_EQ_INT(ffu_mask_fill_polygon(&m, star, 5, 1), FFU_OK);
    CHECK_EQ_INT(px(&m, 32, 32, 0), 1);
    CHECK_EQ_INT(px(&m, 32, 6, 0), 1); /* a tip */
    CHECK_EQ_INT(px(&m, 2, 2, 0), 0);
    /* a polygon with more points than the stack buffer holds (allocating path) */
    enum { NP = 1000 };
    static float circ[2 * NP];
    for (int k = 0; k < NP; k++) {
        circ[2 * k] = (float)(32 + 20 * cos(k * 6.2831853 / NP));
        circ[2 * k + 1] = (float)(32 + 20 * sin(k * 6.2831853 / NP));
    }
    fill_value(&m, 0);
    CHECK_EQ_INT(ffu_mask_fill_polygon(&m, circ, NP, 1), FFU_OK);
    CHECK(abs(count_value(&m, 1) - 1257) < 30); /* pi r^2 */
    ffu_image_release(&m);
}

static void test_degenerate_and_far_triangles(void)
{
    ffu_image src, dst, mask;
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_RGB24, 32, 32), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_RGB24, 40, 30), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&mask, FFU_PIX_GRAY8, 40, 30), FFU_OK);
    uint64_t seed = 5;
    fill_random(&src, &seed);
    fill_value(&dst, 7);
    const float dxy[] = {1,     1,      20,     20,    39,  39,     /* collinear */
                         5,     5,      5,      5,     9,   9,      /* repeated point */
                         1e30f, 1e30f,  -1e30f, 2e30f, 3,   -1e30f, /* enormous */
                         100,   100,    130,    100,   100, 140,    /* off-image */
                         5,     5.001f, 5.001f, 5,     5,   5};     /* sub-1/256 px */
    const float sxy[] = {0, 0, 1,  1, 2, 2, 0, 0, 1, 1, 2, 2, 0, 0, 30,
                         0, 0, 30, 0, 0, 1, 0, 0, 1, 3, 3, 4, 4, 5, 6};
    const int tri[] = {0, 1, 2, 3, 4, 5, 3, 3, 5, 9, 10, 11, 12, 13, 14};
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, sxy, dxy, 15, tri, 5, &mask), FFU_OK);
    CHECK_EQ_INT(count_value(&mask, 0), 40 * 30);
    /* the enormous triangle covers the whole image: clamped, sampled at clamped positions */
    const int big[] = {6, 7, 8};
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, sxy, dxy, 15, big, 1, &mask), FFU_OK);
    CHECK(count_value(&mask, 255) > 0);
    ffu_image_release(&src);
    ffu_image_release(&dst);
    ffu_image_release(&mask);
}

static void test_simd_matches_scalar_odd_sizes(void)
{
    static const int sizes[][2] = {{13, 7}, {127, 31}, {300, 5}};
    uint64_t seed = 21;
    for (int f = 0; f < 2; f++) {
        ffu_pixfmt fmt = f ? FFU_PIX_RGBA32 : FFU_PIX_RGB24;
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            ffu_image src, a, b;
            CHECK_EQ_INT(ffu_image_create(&src, fmt, sizes[k][0], sizes[k][1]), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&a, fmt, 301, 97), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&b, fmt, 301, 97), FFU_OK);
            fill_random(&src, &seed);
            float dxy[8] = {-3, -2, 305, 1, 290, 99, 2, 95}, sxy[8];
            for (int i = 0; i < 8; i++)
                sxy[i] = (test_rand_f(&seed) * 1.4f - 0.2f) * (float)sizes[k][i & 1];
            const int tri[6] = {0, 1, 2, 0, 2, 3};
            CHECK_EQ_INT(
                ffu_image_warp_piecewise_impl(&src, &b, sxy, dxy, 4, tri, 2, NULL, FFU_ISA_SCALAR),
                FFU_OK);
            for (int isa = FFU_ISA_AVX2; isa <= ffu_image_isa_best(); isa++) { /* each SIMD path */
                CHECK_EQ_INT(
                    ffu_image_warp_piecewise_impl(&src, &a, sxy, dxy, 4, tri, 2, NULL, isa),
                    FFU_OK);
                CHECK_EQ_INT(max_diff(&a, &b), 0);
            }
            ffu_image_release(&src);
            ffu_image_release(&a);
            ffu_image_release(&b);
        }
    }
}

static void test_bad_arguments(void)
{
    ffu_image src, dst, gray, small;
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_RGB24, 16, 16), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&dst, FFU_PIX_RGB24, 16, 16), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&gray, FFU_PIX_GRAY8, 16, 16), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&small, FFU_PIX_GRAY8, 8, 16), FFU_OK);
    float xy[6] = {0, 0, 10, 0, 0, 10}, nan_xy[6] = {0, 0, NAN, 0, 0, 10};
    int tri[3] = {0, 1, 2}, bad_tri[3] = {0, 1, 3}, neg_tri[3] = {-1, 1, 2};
    CHECK_EQ_INT(ffu_image_warp_piecewise(NULL, &dst, xy, xy, 3, tri, 1, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &gray, xy, xy, 3, tri, 1, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, NULL, xy, 3, tri, 1, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, xy, xy, 2, tri, 1, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, xy, xy, 3, bad_tri, 1, NULL),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, xy, xy, 3, neg_tri, 1, NULL),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, xy, nan_xy, 3, tri, 1, NULL),
                 FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, xy, xy, 3, tri, 1, &small), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, xy, xy, 3, tri, 1, &dst), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &src, xy, xy, 3, tri, 1, NULL), FFU_ERR_INVALID);
    CHECK(strlen(ffu_error_message()) > 10);
    CHECK_EQ_INT(ffu_image_warp_piecewise(&src, &dst, xy, xy, 3, tri, 0, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_mask_fill_polygon(&gray, xy, 2, 1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_fill_polygon(&dst, xy, 3, 1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_fill_polygon(&gray, nan_xy, 3, 1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_fill_polygon(NULL, xy, 3, 1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_mask_fill_triangles(&gray, xy, 3, bad_tri, 1, 1), FFU_ERR_INVALID);
    ffu_image_release(&src);
    ffu_image_release(&dst);
    ffu_image_release(&gray);
    ffu_image_release(&small);
}

TEST_MAIN(test_global_affine_matches_warp_affine, test_mesh_no_gaps_no_double_writes,
          test_tie_rule_rectangle, test_polygon_winding_and_concave,
          test_degenerate_and_far_triangles, test_simd_matches_scalar_odd_sizes, test_bad_arguments)
