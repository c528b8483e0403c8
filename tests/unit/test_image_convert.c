/* Colour conversion: channel reorders and alpha, BT.601 luma values, YUV limited and
 * full range against known colours, round trips RGB -> YUV -> RGB, NV12 == YUV420P,
 * argument errors; and the matrices: the shared coefficient table recomputed from
 * Kr, Kb, BT.709 / BT.2020 decoding against a float reference and against swscale's
 * own BT.709 conversion of the same NV12 (what the video reader gives), encoding
 * against the float formula. */
#include <libswscale/swscale.h>
#include <math.h>

#include "facefuse/image.h"
#include "image/yuv_coefs.h"
#include "test.h"

static const ffu_pixfmt packed_fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_BGR24,
                                         FFU_PIX_RGBA32};

static uint8_t *at(const ffu_image *im, int x, int y)
{
    return im->data[0] + (size_t)y * im->stride[0] + (size_t)x * ffu_pixfmt_bpp(im->fmt);
}

/* Fills an RGB24 image; blocks of 2x2 share a colour when `blocky` (so 4:2:0 chroma
 * loses nothing). */
static void fill_rgb(ffu_image *im, uint64_t *seed, int blocky)
{
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++)
            for (int c = 0; c < 3; c++) {
                uint8_t v = (uint8_t)(test_rand_u64(seed) >> 56);
                if (blocky && ((x | y) & 1)) v = at(im, x & ~1, y & ~1)[c];
                at(im, x, y)[c] = v;
            }
}

static void test_packed_reorders(void)
{
    uint64_t seed = 1;
    ffu_image rgb, other, back;
    CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_RGB24, 19, 7), FFU_OK);
    fill_rgb(&rgb, &seed, 0);
    for (int f = 1; f < 4; f++) {
        CHECK_EQ_INT(ffu_image_create(&other, packed_fmts[f], 19, 7), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&back, FFU_PIX_RGB24, 19, 7), FFU_OK);
        CHECK_EQ_INT(ffu_image_convert(&rgb, &other), FFU_OK);
        CHECK_EQ_INT(ffu_image_convert(&other, &back), FFU_OK);
        for (int y = 0; y < 7; y++)
            for (int x = 0; x < 19; x++) {
                const uint8_t *s = at(&rgb, x, y), *o = at(&other, x, y);
                CHECK(memcmp(s, at(&back, x, y), 3) == 0);
                if (packed_fmts[f] == FFU_PIX_BGR24) CHECK(o[0] == s[2] && o[1] == s[1] && o[2] == s[0]);
                if (packed_fmts[f] == FFU_PIX_RGBA32) CHECK(memcmp(o, s, 3) == 0 && o[3] == 255);
            }
        ffu_image_release(&other), ffu_image_release(&back);
    }
    /* RGBA -> BGR drops alpha, BGR -> RGBA sets 255 */
    ffu_image rgba, bgr;
    CHECK_EQ_INT(ffu_image_create(&rgba, FFU_PIX_RGBA32, 1, 1), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&bgr, FFU_PIX_BGR24, 1, 1), FFU_OK);
    memcpy(rgba.data[0], (uint8_t[]){10, 20, 30, 40}, 4);
    CHECK_EQ_INT(ffu_image_convert(&rgba, &bgr), FFU_OK);
    CHECK(bgr.data[0][0] == 30 && bgr.data[0][1] == 20 && bgr.data[0][2] == 10);
    ffu_image_release(&rgb), ffu_image_release(&rgba), ffu_image_release(&bgr);
}

static void test_gray(void)
{
    static const uint8_t colours[][4] = {{255, 255, 255, 255}, {0, 0, 0, 0},
                                         {255, 0, 0, 76},      {0, 255, 0, 150},
                                         {0, 0, 255, 29},      {100, 150, 200, 141}};
    ffu_image rgb, bgr, gray, back;
    CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_RGB24, 6, 1), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&bgr, FFU_PIX_BGR24, 6, 1), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&gray, FFU_PIX_GRAY8, 6, 1), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&back, FFU_PIX_RGBA32, 6, 1), FFU_OK);
    for (int i = 0; i < 6; i++) memcpy(at(&rgb, i, 0), colours[i], 3);
    CHECK_EQ_INT(ffu_image_convert(&rgb, &gray), FFU_OK);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(gray.data[0][i], colours[i][3]);
    CHECK_EQ_INT(ffu_image_convert(&rgb, &bgr), FFU_OK);
    memset(gray.data[0], 0, 6);
    CHECK_EQ_INT(ffu_image_convert(&bgr, &gray), FFU_OK); /* same luma from BGR */
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(gray.data[0][i], colours[i][3]);
    CHECK_EQ_INT(ffu_image_convert(&gray, &back), FFU_OK);
    for (int i = 0; i < 6; i++) {
        const uint8_t *p = at(&back, i, 0);
        CHECK(p[0] == colours[i][3] && p[1] == colours[i][3] && p[2] == colours[i][3] && p[3] == 255);
    }
    ffu_image_release(&rgb), ffu_image_release(&bgr), ffu_image_release(&gray),
        ffu_image_release(&back);
}

/* Sets every pixel of a YUV image to one (Y, U, V). */
static void fill_yuv(ffu_image *im, int Y, int U, int V)
{
    for (int y = 0; y < im->height; y++) memset(im->data[0] + (size_t)y * im->stride[0], Y, (size_t)im->width);
    for (int y = 0; y < im->height / 2; y++) {
        if (im->fmt == FFU_PIX_NV12) {
            uint8_t *uv = im->data[1] + (size_t)y * im->stride[1];
            for (int x = 0; x < im->width / 2; x++) uv[2 * x] = (uint8_t)U, uv[2 * x + 1] = (uint8_t)V;
        } else {
            memset(im->data[1] + (size_t)y * im->stride[1], U, (size_t)im->width / 2);
            memset(im->data[2] + (size_t)y * im->stride[2], V, (size_t)im->width / 2);
        }
    }
}

static void test_yuv_known_colours(void)
{
    /* BT.601 (Y, U, V) of pure colours: limited and full range. */
    static const int lim[][6] = {{16, 128, 128, 0, 0, 0},     {235, 128, 128, 255, 255, 255},
                                 {81, 90, 240, 255, 0, 0},    {145, 54, 34, 0, 255, 0},
                                 {41, 240, 110, 0, 0, 255},   {126, 128, 128, 128, 128, 128}};
    static const int full[][6] = {{0, 128, 128, 0, 0, 0},    {255, 128, 128, 255, 255, 255},
                                  {76, 85, 255, 254, 0, 0},  {150, 44, 21, 0, 255, 1},
                                  {29, 255, 107, 0, 0, 254}, {128, 128, 128, 128, 128, 128}};
    for (int fmt = 0; fmt < 2; fmt++)
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 6; i++) {
                const int *k = r ? full[i] : lim[i];
                ffu_image yuv, rgb, gray;
                CHECK_EQ_INT(ffu_image_create(&yuv, fmt ? FFU_PIX_YUV420P : FFU_PIX_NV12, 4, 2), FFU_OK);
                CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_BGR24, 4, 2), FFU_OK);
                CHECK_EQ_INT(ffu_image_create(&gray, FFU_PIX_GRAY8, 4, 2), FFU_OK);
                fill_yuv(&yuv, k[0], k[1], k[2]);
                ffu_yuv_range range = r ? FFU_YUV_FULL : FFU_YUV_LIMITED;
                CHECK_EQ_INT(ffu_image_convert_range(&yuv, &rgb, range), FFU_OK);
                CHECK_EQ_INT(ffu_image_convert_range(&yuv, &gray, range), FFU_OK);
                const uint8_t *p = at(&rgb, 3, 1);
                CHECK_NEAR(p[2], k[3], 2); /* BGR order */
                CHECK_NEAR(p[1], k[4], 2);
                CHECK_NEAR(p[0], k[5], 2);
                int l = (4899 * p[2] + 9617 * p[1] + 1868 * p[0] + 8192) >> 14;
                CHECK_NEAR(gray.data[0][0], l, 1);
                /* and back: RGB -> YUV reproduces (Y, U, V) */
                ffu_image again;
                CHECK_EQ_INT(ffu_image_create(&again, yuv.fmt, 4, 2), FFU_OK);
                CHECK_EQ_INT(ffu_image_convert_range(&rgb, &again, range), FFU_OK);
                CHECK_NEAR(again.data[0][again.stride[0] + 1], k[0], 1);
                int u = fmt ? again.data[1][1] : again.data[1][2];
                int v = fmt ? again.data[2][1] : again.data[1][3];
                CHECK_NEAR(u, k[1], 2);
                CHECK_NEAR(v, k[2], 2);
                ffu_image_release(&yuv), ffu_image_release(&rgb), ffu_image_release(&gray),
                    ffu_image_release(&again);
            }
}

static void test_yuv_round_trip(void)
{
    uint64_t seed = 99;
    for (int fmt = 0; fmt < 2; fmt++)
        for (int r = 0; r < 2; r++) {
            ffu_image rgb, yuv, back;
            CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_RGB24, 34, 18), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&yuv, fmt ? FFU_PIX_YUV420P : FFU_PIX_NV12, 34, 18), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&back, FFU_PIX_RGB24, 34, 18), FFU_OK);
            fill_rgb(&rgb, &seed, 1);
            ffu_yuv_range range = r ? FFU_YUV_FULL : FFU_YUV_LIMITED;
            CHECK_EQ_INT(ffu_image_convert_range(&rgb, &yuv, range), FFU_OK);
            CHECK_EQ_INT(ffu_image_convert_range(&yuv, &back, range), FFU_OK);
            /* Quantising to 8-bit YUV loses a little; limited range a little more.
             * Saturated colours can leave the YUV cube's RGB-valid region only by
             * rounding, so the bound is small but not 1. */
            int worst = 0;
            for (int y = 0; y < 18; y++)
                for (int x = 0; x < 34 * 3; x++) {
                    int d = abs(rgb.data[0][(size_t)y * rgb.stride[0] + x] -
                                back.data[0][(size_t)y * back.stride[0] + x]);
                    if (d > worst) worst = d;
                }
            CHECK(worst <= (r ? 3 : 4));
            ffu_image_release(&rgb), ffu_image_release(&yuv), ffu_image_release(&back);
        }
}

static void test_nv12_yuv420p_agree(void)
{
    uint64_t seed = 5;
    ffu_image rgb, nv, p, nv2, a, b;
    CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_RGB24, 22, 10), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&nv, FFU_PIX_NV12, 22, 10), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&p, FFU_PIX_YUV420P, 22, 10), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&nv2, FFU_PIX_NV12, 22, 10), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&a, FFU_PIX_RGBA32, 22, 10), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&b, FFU_PIX_RGBA32, 22, 10), FFU_OK);
    fill_rgb(&rgb, &seed, 0);
    CHECK_EQ_INT(ffu_image_convert(&rgb, &nv), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&nv, &p), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&p, &nv2), FFU_OK);
    for (int y = 0; y < 10; y++) CHECK(memcmp(nv.data[0] + y * nv.stride[0], nv2.data[0] + y * nv2.stride[0], 22) == 0);
    for (int y = 0; y < 5; y++) CHECK(memcmp(nv.data[1] + y * nv.stride[1], nv2.data[1] + y * nv2.stride[1], 22) == 0);
    CHECK_EQ_INT(ffu_image_convert(&nv, &a), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&p, &b), FFU_OK);
    for (int y = 0; y < 10; y++) CHECK(memcmp(a.data[0] + y * a.stride[0], b.data[0] + y * b.stride[0], 88) == 0);
    CHECK_EQ_INT(at(&a, 21, 9)[3], 255);
    ffu_image_release(&rgb), ffu_image_release(&nv), ffu_image_release(&p), ffu_image_release(&nv2),
        ffu_image_release(&a), ffu_image_release(&b);
}

static void test_errors(void)
{
    ffu_image a, b, nv;
    CHECK_EQ_INT(ffu_image_create(&a, FFU_PIX_RGB24, 8, 6), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&b, FFU_PIX_RGB24, 8, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&nv, FFU_PIX_NV12, 8, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&a, &b), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "size") != NULL);
    CHECK_EQ_INT(ffu_image_convert(&a, &nv), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_convert(NULL, &b), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_convert(&a, &a), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_convert_range(&b, &nv, (ffu_yuv_range)5), FFU_ERR_INVALID);
    ffu_image odd = nv; /* a hand-made NV12 with odd size must be refused */
    odd.width = 7;
    ffu_image g;
    CHECK_EQ_INT(ffu_image_create(&g, FFU_PIX_GRAY8, 7, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&odd, &g), FFU_ERR_INVALID);
    ffu_image none = nv;
    none.data[1] = NULL;
    ffu_image c;
    CHECK_EQ_INT(ffu_image_create(&c, FFU_PIX_RGB24, 8, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert(&none, &c), FFU_ERR_INVALID);
    ffu_image_release(&a), ffu_image_release(&b), ffu_image_release(&nv), ffu_image_release(&g),
        ffu_image_release(&c);
}

/* ---- matrices ------------------------------------------------------------------------ */

static int q16(double v) { return (int)lround(v * 65536.0); }

/* Every table entry is the rounded Q16 value of the formula in yuv_coefs.h (the way
 * convert.c derived its BT.601 numbers at run time before the table existed), and the
 * decoding entries of limited range agree with swscale's table for that matrix (to
 * 1 in 2^16: FFmpeg's BT.2020 crv is 110013, the formula rounds to 110014). */
static void test_coef_table(void)
{
    static const int sws_cs[FFU_YUV_MATRIX_COUNT] = {SWS_CS_ITU601, SWS_CS_ITU709, SWS_CS_BT2020};
    for (int m = 0; m < FFU_YUV_MATRIX_COUNT; m++)
        for (int r = 0; r < 2; r++) {
            const yuv_coefs *k =
                yuv_coefs_of((ffu_yuv_coding){(ffu_yuv_matrix)m, (ffu_yuv_range)r});
            CHECK(k != NULL);
            if (!k) continue;
            double kr, kb;
            yuv_matrix_weights((ffu_yuv_matrix)m, &kr, &kb);
            double kg = 1.0 - kr - kb;
            double ys = r ? 1.0 : 255.0 / 219.0, cs = r ? 1.0 : 255.0 / 224.0;
            double cu = 1.0 / (cs * 2 * (1 - kb)), cv = 1.0 / (cs * 2 * (1 - kr));
            const int want[15] = {r ? 0 : 16,
                                  q16(ys),
                                  q16(cs * 2 * (1 - kr)),
                                  q16(cs * 2 * (1 - kb) * kb / kg),
                                  q16(cs * 2 * (1 - kr) * kr / kg),
                                  q16(cs * 2 * (1 - kb)),
                                  q16(kr / ys),
                                  q16(kg / ys),
                                  q16(kb / ys),
                                  q16(-kr * cu),
                                  q16(-kg * cu),
                                  q16((1 - kb) * cu),
                                  q16((1 - kr) * cv),
                                  q16(-kg * cv),
                                  q16(-kb * cv)};
            const int got[15] = {k->yoff, k->cy, k->crv, k->cgu, k->cgv, k->cbu, k->yr, k->yg,
                                 k->yb,   k->ur, k->ug,  k->ub,  k->vr,  k->vg,  k->vb};
            for (int i = 0; i < 15; i++)
                if (got[i] != want[i]) {
                    fprintf(stderr, "  matrix %d range %d entry %d: %d, derived %d\n", m, r, i,
                            got[i], want[i]);
                    CHECK(0);
                }
            if (!r) { /* swscale: {crv, cbu, cgu, cgv}, limited range */
                const int *sc = sws_getCoefficients(sws_cs[m]);
                CHECK_NEAR(k->crv, sc[0], 1);
                CHECK_NEAR(k->cbu, sc[1], 1);
                CHECK_NEAR(k->cgu, sc[2], 1);
                CHECK_NEAR(k->cgv, sc[3], 1);
            }
        }
    CHECK(yuv_coefs_of((ffu_yuv_coding){FFU_YUV_MATRIX_COUNT, FFU_YUV_LIMITED}) == NULL);
    CHECK(yuv_coefs_of((ffu_yuv_coding){FFU_YUV_BT709, (ffu_yuv_range)2}) == NULL);
}

/* R, G, B of one (Y, U, V) in double, rounded and clamped: the definition. */
static void yuv_ref(ffu_yuv_matrix m, int full, int Y, int U, int V, int out[3])
{
    double kr, kb;
    yuv_matrix_weights(m, &kr, &kb);
    double kg = 1 - kr - kb;
    double y = full ? Y : (Y - 16) * 255.0 / 219.0;
    double u = full ? U - 128 : (U - 128) * 255.0 / 224.0;
    double v = full ? V - 128 : (V - 128) * 255.0 / 224.0;
    double r = y + 2 * (1 - kr) * v, b = y + 2 * (1 - kb) * u;
    double g = (y - kr * r - kb * b) / kg;
    double c[3] = {r, g, b};
    for (int i = 0; i < 3; i++)
        out[i] = (int)fmin(255, fmax(0, floor(c[i] + 0.5)));
}

static void fill_noise_yuv(ffu_image *im, uint64_t *seed)
{
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++)
            im->data[0][(size_t)y * im->stride[0] + x] = (uint8_t)(test_rand_u64(seed) >> 56);
    for (int y = 0; y < im->height / 2; y++)
        for (int x = 0; x < im->width; x++) /* NV12: U, V interleaved, width bytes */
            im->data[1][(size_t)y * im->stride[1] + x] = (uint8_t)(test_rand_u64(seed) >> 56);
}

/* Every matrix and range against the float reference within 1 on noise (every Y, U, V
 * pairing, clamps included); BT.601 decoding of the same bytes is off by far more, so
 * the check can tell the matrices apart. */
static void test_matrix_float_reference(void)
{
    enum { W = 130, H = 66 };
    uint64_t seed = 709;
    ffu_image nv, rgb, p420, rgb2, gray, gray601;
    CHECK_EQ_INT(ffu_image_create(&nv, FFU_PIX_NV12, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&p420, FFU_PIX_YUV420P, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_RGB24, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&rgb2, FFU_PIX_RGB24, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&gray, FFU_PIX_GRAY8, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&gray601, FFU_PIX_GRAY8, W, H), FFU_OK);
    fill_noise_yuv(&nv, &seed);
    CHECK_EQ_INT(ffu_image_convert(&nv, &p420), FFU_OK); /* the same samples, planar */
    for (int m = 0; m < FFU_YUV_MATRIX_COUNT; m++)
        for (int r = 0; r < 2; r++) {
            ffu_yuv_coding c = {(ffu_yuv_matrix)m, (ffu_yuv_range)r};
            CHECK_EQ_INT(ffu_image_convert_yuv(&nv, &rgb, c), FFU_OK);
            int worst = 0, worst601 = 0;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    const uint8_t *uv = nv.data[1] + (size_t)(y / 2) * nv.stride[1] + (x & ~1);
                    int ref[3], ref601[3];
                    int Y = nv.data[0][(size_t)y * nv.stride[0] + x];
                    yuv_ref(c.matrix, r, Y, uv[0], uv[1], ref);
                    yuv_ref(FFU_YUV_BT601, r, Y, uv[0], uv[1], ref601);
                    const uint8_t *p = at(&rgb, x, y);
                    for (int i = 0; i < 3; i++) {
                        worst = abs(p[i] - ref[i]) > worst ? abs(p[i] - ref[i]) : worst;
                        int d = abs(p[i] - ref601[i]);
                        worst601 = d > worst601 ? d : worst601;
                    }
                }
            if (worst > 1) fprintf(stderr, "  matrix %d range %d: off by %d\n", m, r, worst);
            CHECK(worst <= 1);
            if (m != FFU_YUV_BT601) CHECK(worst601 > 10);
            /* planar input decodes the same */
            CHECK_EQ_INT(ffu_image_convert_yuv(&p420, &rgb2, c), FFU_OK);
            for (int y = 0; y < H; y++)
                CHECK(memcmp(at(&rgb, 0, y), at(&rgb2, 0, y), W * 3) == 0);
            /* gray is the scaled Y: the same for every matrix */
            CHECK_EQ_INT(ffu_image_convert_yuv(&nv, &gray, c), FFU_OK);
            CHECK_EQ_INT(ffu_image_convert_range(&nv, &gray601, c.range), FFU_OK);
            for (int y = 0; y < H; y++)
                CHECK(memcmp(at(&gray, 0, y), at(&gray601, 0, y), W) == 0);
        }
    /* BT.601 through the new entry point is the old one, byte for byte */
    for (int r = 0; r < 2; r++) {
        CHECK_EQ_INT(
            ffu_image_convert_yuv(&nv, &rgb, (ffu_yuv_coding){FFU_YUV_BT601, (ffu_yuv_range)r}),
            FFU_OK);
        CHECK_EQ_INT(ffu_image_convert_range(&nv, &rgb2, (ffu_yuv_range)r), FFU_OK);
        for (int y = 0; y < H; y++)
            CHECK(memcmp(at(&rgb, 0, y), at(&rgb2, 0, y), W * 3) == 0);
    }
    ffu_image_release(&nv), ffu_image_release(&p420), ffu_image_release(&rgb),
        ffu_image_release(&rgb2), ffu_image_release(&gray), ffu_image_release(&gray601);
}

/* swscale's NV12 -> RGB24 with the matrix and range set the way the video reader sets
 * them (reader.c convert_into); 0 on failure. */
static int sws_decode(const ffu_image *nv, ffu_image *rgb, int sws_cs, int full)
{
    struct SwsContext *c =
        sws_getContext(nv->width, nv->height, AV_PIX_FMT_NV12, rgb->width, rgb->height,
                       AV_PIX_FMT_RGB24, SWS_POINT | SWS_ACCURATE_RND, NULL, NULL, NULL);
    if (!c) return 0;
    sws_setColorspaceDetails(c, sws_getCoefficients(sws_cs), full, sws_getCoefficients(sws_cs), 1,
                             0, 1 << 16, 1 << 16);
    const uint8_t *src[4] = {nv->data[0], nv->data[1], NULL, NULL};
    int sstride[4] = {nv->stride[0], nv->stride[1], 0, 0};
    uint8_t *dst[4] = {rgb->data[0], NULL, NULL, NULL};
    int dstride[4] = {rgb->stride[0], 0, 0, 0};
    int h = sws_scale(c, src, sstride, 0, nv->height, dst, dstride);
    sws_freeContext(c);
    return h == rgb->height;
}

/* What the CPU reader gives for an HD stream vs what the GPU path's conversion gives
 * (ffu_image_convert_yuv is its CPU twin, byte for byte): the same NV12 decoded by
 * swscale with BT.709 and by us. swscale may interpolate chroma between 2x2 blocks, so
 * the chroma is constant over 16x16 tiles and only tile interiors are compared; Y is
 * noise, so every luma level is exercised.
 * Bound: swscale's generic NV12 -> RGB24 path is itself up to 3 off the exact result
 * in limited range (FFmpeg 5.1, for BT.601 as much as BT.709: its luma scale and
 * rounding are coarser), while ours is within 1 (test_matrix_float_reference); so 3
 * at worst, and a mean under 1.75 (1.23 with FFmpeg 5.1; full range: 2 and 0.27).
 * Decoding with BT.601 instead is off by dozens. */
static void test_bt709_vs_swscale(void)
{
    enum { W = 256, H = 128, T = 16 };
    uint64_t seed = 2020;
    ffu_image nv, ours, theirs;
    CHECK_EQ_INT(ffu_image_create(&nv, FFU_PIX_NV12, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&ours, FFU_PIX_RGB24, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&theirs, FFU_PIX_RGB24, W, H), FFU_OK);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            nv.data[0][(size_t)y * nv.stride[0] + x] = (uint8_t)(test_rand_u64(&seed) >> 56);
    for (int ty = 0; ty < H / T; ty++)
        for (int tx = 0; tx < W / T; tx++) {
            /* tile 0: neutral; the rest: random chroma (saturated ones clamp) */
            int u = tx | ty ? (int)(test_rand_u64(&seed) >> 56) : 128;
            int v = tx | ty ? (int)(test_rand_u64(&seed) >> 56) : 128;
            for (int y = ty * T / 2; y < (ty + 1) * T / 2; y++)
                for (int x = tx * T / 2; x < (tx + 1) * T / 2; x++) {
                    nv.data[1][(size_t)y * nv.stride[1] + 2 * x] = (uint8_t)u;
                    nv.data[1][(size_t)y * nv.stride[1] + 2 * x + 1] = (uint8_t)v;
                }
        }
    for (int full = 0; full < 2; full++) {
        CHECK(sws_decode(&nv, &theirs, SWS_CS_ITU709, full));
        int worst[2] = {0, 0}; /* ours with BT.709, ours with BT.601 */
        double sum = 0;
        long n = 0;
        for (int m = 0; m < 2; m++) {
            ffu_yuv_matrix mx = m ? FFU_YUV_BT601 : FFU_YUV_BT709;
            CHECK_EQ_INT(
                ffu_image_convert_yuv(&nv, &ours, (ffu_yuv_coding){mx, (ffu_yuv_range)full}),
                FFU_OK);
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    if (x % T < 3 || x % T > T - 4 || y % T < 3 || y % T > T - 4) continue;
                    const uint8_t *a = at(&ours, x, y), *b = at(&theirs, x, y);
                    for (int i = 0; i < 3; i++) {
                        int d = abs(a[i] - b[i]);
                        if (d > worst[m]) worst[m] = d;
                        if (!m) sum += d, n++;
                    }
                }
        }
        double mean = sum / (double)n;
        printf("  %s range: BT.709 vs swscale BT.709: max %d, mean %.2f (BT.601: max %d)\n",
               full ? "full" : "limited", worst[0], mean, worst[1]);
        CHECK(worst[0] <= (full ? 2 : 3));
        CHECK(mean < 1.75);
        CHECK(worst[1] > 10); /* the comparison does tell the matrices apart */
    }
    ffu_image_release(&nv), ffu_image_release(&ours), ffu_image_release(&theirs);
}

/* Encoding with each matrix: Y, U, V of 2x2-constant RGB blocks against the formula
 * within 1, and back within the round-trip bound. */
static void test_matrix_encode(void)
{
    enum { W = 34, H = 18 };
    uint64_t seed = 42;
    ffu_image rgb, nv, back;
    CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_RGB24, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&nv, FFU_PIX_NV12, W, H), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&back, FFU_PIX_RGB24, W, H), FFU_OK);
    fill_rgb(&rgb, &seed, 1);
    for (int m = 0; m < FFU_YUV_MATRIX_COUNT; m++)
        for (int r = 0; r < 2; r++) {
            ffu_yuv_coding c = {(ffu_yuv_matrix)m, (ffu_yuv_range)r};
            double kr, kb;
            yuv_matrix_weights(c.matrix, &kr, &kb);
            double kg = 1 - kr - kb, ys = r ? 1 : 219.0 / 255, cs = r ? 1 : 224.0 / 255;
            CHECK_EQ_INT(ffu_image_convert_yuv(&rgb, &nv, c), FFU_OK);
            int worst = 0;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++) {
                    const uint8_t *p = at(&rgb, x, y);
                    double l = kr * p[0] + kg * p[1] + kb * p[2];
                    double Y = (r ? 0 : 16) + ys * l;
                    double U = 128 + cs * (p[2] - l) / (2 * (1 - kb));
                    double V = 128 + cs * (p[0] - l) / (2 * (1 - kr));
                    const uint8_t *uv = nv.data[1] + (size_t)(y / 2) * nv.stride[1] + (x & ~1);
                    double d[3] = {fabs(nv.data[0][(size_t)y * nv.stride[0] + x] - Y),
                                   fabs(uv[0] - fmin(255, fmax(0, U))),
                                   fabs(uv[1] - fmin(255, fmax(0, V)))};
                    for (int i = 0; i < 3; i++)
                        if (d[i] > worst) worst = (int)ceil(d[i] - 1e-9);
                }
            CHECK(worst <= 1);
            CHECK_EQ_INT(ffu_image_convert_yuv(&nv, &back, c), FFU_OK);
            int rt = 0;
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W * 3; x++) {
                    int d = abs(rgb.data[0][(size_t)y * rgb.stride[0] + x] -
                                back.data[0][(size_t)y * back.stride[0] + x]);
                    if (d > rt) rt = d;
                }
            CHECK(rt <= (r ? 3 : 4));
        }
    ffu_image_release(&rgb), ffu_image_release(&nv), ffu_image_release(&back);
}

static void test_coding_args(void)
{
    ffu_yuv_coding c = ffu_image_yuv_coding(709, 0);
    CHECK(c.matrix == FFU_YUV_BT709 && c.range == FFU_YUV_LIMITED);
    c = ffu_image_yuv_coding(2020, 1);
    CHECK(c.matrix == FFU_YUV_BT2020 && c.range == FFU_YUV_FULL);
    c = ffu_image_yuv_coding(601, 7);
    CHECK(c.matrix == FFU_YUV_BT601 && c.range == FFU_YUV_FULL);
    c = ffu_image_yuv_coding(0, 0);
    CHECK(c.matrix == FFU_YUV_BT601 && c.range == FFU_YUV_LIMITED);
    ffu_image nv, rgb;
    CHECK_EQ_INT(ffu_image_create(&nv, FFU_PIX_NV12, 8, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&rgb, FFU_PIX_RGB24, 8, 4), FFU_OK);
    memset(rgb.data[0], 0x33, (size_t)rgb.stride[0] * 4);
    CHECK_EQ_INT(
        ffu_image_convert_yuv(&nv, &rgb, (ffu_yuv_coding){FFU_YUV_MATRIX_COUNT, FFU_YUV_LIMITED}),
        FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "matrix") != NULL);
    CHECK_EQ_INT(
        ffu_image_convert_yuv(&nv, &rgb, (ffu_yuv_coding){(ffu_yuv_matrix)-3, FFU_YUV_FULL}),
        FFU_ERR_INVALID);
    CHECK_EQ_INT(
        ffu_image_convert_yuv(&nv, &rgb, (ffu_yuv_coding){FFU_YUV_BT709, (ffu_yuv_range)-1}),
        FFU_ERR_INVALID);
    CHECK_EQ_INT(rgb.data[0][0], 0x33); /* nothing written */
    ffu_image_release(&nv), ffu_image_release(&rgb);
}

TEST_MAIN(test_packed_reorders, test_gray, test_yuv_known_colours, test_yuv_round_trip,
          test_nv12_yuv420p_agree, test_errors, test_coef_table, test_matrix_float_reference,
          test_bt709_vs_swscale, test_matrix_encode, test_coding_args)
