/* Tests for ffu_image_crop_pad (against a per-pixel reference, every packed format, odd
 * sizes, offsets inside, across and far outside the source) and ffu_image_copy. */
#include <limits.h>

#include "facefuse/image.h"
#include "test.h"

static void fill_random(ffu_image *img, uint64_t *seed)
{
    int bytes = img->width * ffu_pixfmt_bpp(img->fmt);
    for (int y = 0; y < img->height; y++)
        for (int i = 0; i < bytes; i++)
            img->data[0][(size_t)y * img->stride[0] + i] = (uint8_t)test_rand_u64(seed);
}

/* 1 when dst holds the (x, y) crop of src with `fill` outside. */
static int crop_matches(const ffu_image *src, const ffu_image *dst, long long x, long long y,
                        const uint8_t fill[4])
{
    int bpp = ffu_pixfmt_bpp(src->fmt);
    for (int r = 0; r < dst->height; r++)
        for (int c = 0; c < dst->width; c++) {
            long long sx = x + c, sy = y + r;
            const uint8_t *want = sx >= 0 && sx < src->width && sy >= 0 && sy < src->height
                                      ? src->data[0] + sy * src->stride[0] + sx * bpp
                                      : fill;
            if (memcmp(dst->data[0] + (size_t)r * dst->stride[0] + (size_t)c * bpp, want,
                       (size_t)bpp) != 0)
                return 0;
        }
    return 1;
}

static void test_crop_pad_formats(void)
{
    const ffu_pixfmt fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32};
    const int offs[][2] = {
        {0, 0},       {3, 2}, {-4, -3},  {10, 5},  {-2, 4},      {12, -8},           {-5, -9},
        {13, 0},      {0, 7}, {-100, 3}, {40, 40}, {INT_MIN, 0}, {INT_MAX, INT_MAX}, {0, INT_MIN},
        {-9, INT_MAX}};
    const uint8_t fill[4] = {11, 22, 33, 44};
    uint64_t seed = 21;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        ffu_image src, dst;
        CHECK_EQ_INT(ffu_image_create(&src, fmts[f], 13, 7), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&dst, fmts[f], 5, 9), FFU_OK);
        fill_random(&src, &seed);
        for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++) {
            CHECK_EQ_INT(ffu_image_crop_pad(&src, &dst, offs[o][0], offs[o][1], fill), FFU_OK);
            if (!crop_matches(&src, &dst, offs[o][0], offs[o][1], fill)) {
                fprintf(stderr, "%s crop at %d,%d differs\n", ffu_pixfmt_name(fmts[f]), offs[o][0],
                        offs[o][1]);
                CHECK(0);
            }
        }
        /* A crop bigger than the source on every side. */
        ffu_image big;
        CHECK_EQ_INT(ffu_image_create(&big, fmts[f], 31, 17), FFU_OK);
        CHECK_EQ_INT(ffu_image_crop_pad(&src, &big, -9, -5, fill), FFU_OK);
        CHECK(crop_matches(&src, &big, -9, -5, fill));
        ffu_image_release(&big);
        ffu_image_release(&src);
        ffu_image_release(&dst);
    }
}

/* NULL fill is black; bytes past the row end of a wrapped dst stay untouched. */
static void test_crop_pad_null_fill_and_stride(void)
{
    ffu_image src, dst;
    uint8_t mem[7 * 20];
    memset(mem, 0xA5, sizeof mem);
    CHECK_EQ_INT(ffu_image_create(&src, FFU_PIX_RGB24, 4, 3), FFU_OK);
    memset(src.data[0], 200, (size_t)src.stride[0] * 3);
    CHECK_EQ_INT(ffu_image_wrap(&dst, FFU_PIX_RGB24, 6, 7, mem, 20), FFU_OK);
    CHECK_EQ_INT(ffu_image_crop_pad(&src, &dst, -1, -2, NULL), FFU_OK);
    const uint8_t zeros[4] = {0};
    CHECK(crop_matches(&src, &dst, -1, -2, zeros));
    for (int r = 0; r < 7; r++)
        for (int i = 18; i < 20; i++)
            CHECK_EQ_INT(mem[r * 20 + i], 0xA5);
    CHECK_EQ_INT(mem[0], 0);
    CHECK_EQ_INT(mem[2 * 20 + 3], 200);
    ffu_image_release(&src);
}

static void test_crop_pad_errors(void)
{
    ffu_image a, b, nv;
    CHECK_EQ_INT(ffu_image_create(&a, FFU_PIX_RGB24, 8, 8), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&b, FFU_PIX_BGR24, 4, 4), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&nv, FFU_PIX_NV12, 8, 8), FFU_OK);
    CHECK_EQ_INT(ffu_image_crop_pad(&a, &b, 0, 0, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_crop_pad(&nv, &nv, 0, 0, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_crop_pad(NULL, &b, 0, 0, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_crop_pad(&a, NULL, 0, 0, NULL), FFU_ERR_INVALID);
    ffu_image_release(&a);
    ffu_image_release(&b);
    ffu_image_release(&nv);
}

static void test_copy(void)
{
    const ffu_pixfmt fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGBA32, FFU_PIX_NV12, FFU_PIX_YUV420P};
    uint64_t seed = 22;
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        ffu_image src, dst, ref;
        CHECK_EQ_INT(ffu_image_create(&src, fmts[f], 18, 6), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&dst, fmts[f], 18, 6), FFU_OK);
        int planes = fmts[f] == FFU_PIX_YUV420P ? 3 : fmts[f] == FFU_PIX_NV12 ? 2 : 1;
        for (int p = 0; p < planes; p++) {
            int rows = p ? 3 : 6;
            for (int i = 0; i < rows * src.stride[p]; i++)
                src.data[p][i] = (uint8_t)test_rand_u64(&seed);
        }
        CHECK_EQ_INT(ffu_image_copy(&src, &dst), FFU_OK);
        CHECK_EQ_INT(ffu_image_clone(&ref, &src), FFU_OK);
        for (int p = 0; p < planes; p++) {
            int rows = p ? 3 : 6;
            int bytes = p == 0 ? 18 * (ffu_pixfmt_bpp(fmts[f]) ? ffu_pixfmt_bpp(fmts[f]) : 1)
                        : fmts[f] == FFU_PIX_NV12 ? 18
                                                  : 9;
            for (int r = 0; r < rows; r++)
                CHECK(memcmp(dst.data[p] + r * dst.stride[p], ref.data[p] + r * ref.stride[p],
                             (size_t)bytes) == 0);
        }
        ffu_image_release(&src);
        ffu_image_release(&dst);
        ffu_image_release(&ref);
    }
    /* A view as destination: copying a patch into a bigger image. */
    ffu_image big, patch, view;
    CHECK_EQ_INT(ffu_image_create(&big, FFU_PIX_RGB24, 10, 10), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&patch, FFU_PIX_RGB24, 3, 2), FFU_OK);
    memset(patch.data[0], 77, (size_t)patch.stride[0] * 2);
    CHECK_EQ_INT(ffu_image_view(&view, &big, 4, 5, 3, 2), FFU_OK);
    CHECK_EQ_INT(ffu_image_copy(&patch, &view), FFU_OK);
    CHECK_EQ_INT(big.data[0][5 * big.stride[0] + 4 * 3], 77);
    CHECK_EQ_INT(big.data[0][6 * big.stride[0] + 6 * 3 + 2], 77);
    CHECK_EQ_INT(big.data[0][6 * big.stride[0] + 7 * 3], 0);
    CHECK_EQ_INT(big.data[0][4 * big.stride[0] + 4 * 3], 0);
    CHECK_EQ_INT(ffu_image_copy(&patch, &big), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_copy(NULL, &big), FFU_ERR_INVALID);
    ffu_image_release(&big);
    ffu_image_release(&patch);
}

TEST_MAIN(test_crop_pad_formats, test_crop_pad_null_fill_and_stride, test_crop_pad_errors,
          test_copy)
