/* Colour conversion: channel reorders and alpha, BT.601 luma values, YUV limited and
 * full range against known colours, round trips RGB -> YUV -> RGB, NV12 == YUV420P,
 * and argument errors. */
#include "facefuse/image.h"
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

TEST_MAIN(test_packed_reorders, test_gray, test_yuv_known_colours, test_yuv_round_trip,
          test_nv12_yuv420p_agree, test_errors)
