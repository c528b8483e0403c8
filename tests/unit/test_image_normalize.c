/* Tests for image <-> tensor normalisation: preset values, known pixels in both layouts,
 * channel order (BGR, swap_rb, RGBA, gray), batch slots that do not overlap, exact round
 * trips and argument errors. */
#include "facefuse/image.h"
#include "test.h"

enum { W = 7, H = 5, N = 3 };

static void make_image(ffu_image *img, ffu_pixfmt fmt, uint64_t *seed)
{
    ffu_image_create(img, fmt, W, H);
    for (int y = 0; y < H; y++)
        for (int i = 0; i < W * ffu_pixfmt_bpp(fmt); i++)
            img->data[0][(size_t)y * img->stride[0] + i] = (uint8_t)test_rand_u64(seed);
}

static const uint8_t *pixel(const ffu_image *img, int x, int y)
{
    return img->data[0] + (size_t)y * img->stride[0] + (size_t)x * ffu_pixfmt_bpp(img->fmt);
}

static void test_presets(void)
{
    ffu_norm_params p;
    CHECK_EQ_INT(ffu_norm_preset(&p, "unit"), FFU_OK);
    CHECK_NEAR((255 - p.mean[1]) * p.scale[1], 1, 1e-7);
    CHECK_NEAR((0 - p.mean[1]) * p.scale[1], 0, 0);
    CHECK_EQ_INT(ffu_norm_preset(&p, "symmetric"), FFU_OK);
    CHECK_NEAR((0 - p.mean[0]) * p.scale[0], -1, 1e-7);
    CHECK_NEAR((255 - p.mean[2]) * p.scale[2], 1, 1e-7);
    CHECK_EQ_INT(ffu_norm_preset(&p, "imagenet"), FFU_OK);
    CHECK_NEAR((200 - p.mean[0]) * p.scale[0], (200 / 255.0 - 0.485) / 0.229, 1e-5);
    CHECK_NEAR((200 - p.mean[1]) * p.scale[1], (200 / 255.0 - 0.456) / 0.224, 1e-5);
    CHECK_NEAR((10 - p.mean[2]) * p.scale[2], (10 / 255.0 - 0.406) / 0.225, 1e-5);
    CHECK_EQ_INT(ffu_norm_preset(&p, "raw"), FFU_OK);
    CHECK_NEAR((77 - p.mean[0]) * p.scale[0], 77, 0);
    CHECK(!p.swap_rb && !p.gray);
    p.scale[0] = 5;
    CHECK_EQ_INT(ffu_norm_preset(&p, "Unit"), FFU_ERR_INVALID);
    CHECK_NEAR(p.scale[0], 0, 0); /* zeroed on error */
    CHECK_EQ_INT(ffu_norm_preset(&p, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_norm_preset(NULL, "raw"), FFU_ERR_INVALID);
}

/* Every element of slot 1 equals the formula applied to the right byte, in both
 * layouts, for RGB24 with and without swap_rb, BGR24 and RGBA32. */
static void test_known_pixels(void)
{
    const struct {
        ffu_pixfmt fmt;
        int swap;
        int byte_of[3]; /* byte of the pixel feeding tensor channel c */
    } cases[] = {
        {FFU_PIX_RGB24, 0, {0, 1, 2}},  {FFU_PIX_RGB24, 1, {2, 1, 0}},
        {FFU_PIX_BGR24, 0, {0, 1, 2}},  {FFU_PIX_BGR24, 1, {2, 1, 0}},
        {FFU_PIX_RGBA32, 0, {0, 1, 2}}, {FFU_PIX_RGBA32, 1, {2, 1, 0}},
    };
    float buf[N * 3 * H * W];
    uint64_t seed = 31;
    ffu_norm_params p = {{10, 20, 30}, {0.5f, -0.25f, 2}, 0, 0};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        for (int layout = 0; layout < 2; layout++) {
            ffu_image img;
            make_image(&img, cases[k].fmt, &seed);
            ffu_tensor_view t = {buf, (ffu_tensor_layout)layout, N, 3, H, W};
            p.swap_rb = cases[k].swap;
            CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &t, 1), FFU_OK);
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    for (int c = 0; c < 3; c++) {
                        float want =
                            (pixel(&img, x, y)[cases[k].byte_of[c]] - p.mean[c]) * p.scale[c];
                        CHECK_NEAR(*ffu_tensor_at(&t, 1, c, y, x), want, 0);
                    }
            /* Layout addressing by hand for one element. */
            size_t i = layout == FFU_LAYOUT_NCHW ? ((size_t)(1 * 3 + 2) * H + 4) * W + 6
                                                 : ((size_t)(1 * H + 4) * W + 6) * 3 + 2;
            CHECK_NEAR(buf[i], (pixel(&img, 6, 4)[cases[k].byte_of[2]] - 30) * 2.f, 0);
            ffu_image_release(&img);
        }
    }
}

/* BGR pixels fed with swap_rb give the same tensor as the same picture stored RGB. */
static void test_bgr_equivalence(void)
{
    uint64_t seed = 32;
    ffu_image rgb, bgr;
    make_image(&rgb, FFU_PIX_RGB24, &seed);
    ffu_image_create(&bgr, FFU_PIX_BGR24, W, H);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int k = 0; k < 3; k++)
                bgr.data[0][y * bgr.stride[0] + x * 3 + k] = pixel(&rgb, x, y)[2 - k];
    float a[3 * H * W], b[3 * H * W];
    ffu_tensor_view ta = {a, FFU_LAYOUT_NCHW, 1, 3, H, W}, tb = ta;
    tb.data = b;
    ffu_norm_params p;
    ffu_norm_preset(&p, "imagenet");
    CHECK_EQ_INT(ffu_image_to_tensor(&rgb, &p, &ta, 0), FFU_OK);
    p.swap_rb = 1;
    CHECK_EQ_INT(ffu_image_to_tensor(&bgr, &p, &tb, 0), FFU_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    ffu_image_release(&rgb);
    ffu_image_release(&bgr);
}

static void test_gray(void)
{
    uint64_t seed = 33;
    float buf[N * 3 * H * W];
    ffu_image img, g;
    make_image(&img, FFU_PIX_BGR24, &seed);
    make_image(&g, FFU_PIX_GRAY8, &seed);
    ffu_norm_params p = {{1, 0, 0}, {0.5f, 0, 0}, 1, 1};
    ffu_tensor_view t = {buf, FFU_LAYOUT_NHWC, N, 1, H, W};
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &t, 2), FFU_OK);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const uint8_t *px = pixel(&img, x, y); /* B, G, R: luma uses the true R and B */
            float l = 0.299f * px[2] + 0.587f * px[1] + 0.114f * px[0];
            CHECK_NEAR(*ffu_tensor_at(&t, 2, 0, y, x), (l - 1) * 0.5f, 1e-4);
        }
    /* A GRAY8 image fills one channel, or all three by replication. */
    CHECK_EQ_INT(ffu_image_to_tensor(&g, &p, &t, 0), FFU_OK);
    CHECK_NEAR(*ffu_tensor_at(&t, 0, 0, 3, 5), (pixel(&g, 5, 3)[0] - 1) * 0.5f, 0);
    ffu_norm_params q;
    ffu_norm_preset(&q, "unit");
    t.c = 3;
    CHECK_EQ_INT(ffu_image_to_tensor(&g, &q, &t, 1), FFU_OK);
    for (int c = 0; c < 3; c++)
        CHECK_NEAR(*ffu_tensor_at(&t, 1, c, 4, 6), pixel(&g, 6, 4)[0] / 255.f, 1e-7);
    /* Back: one channel into a colour image is replicated. */
    ffu_tensor_view t1 = {buf, FFU_LAYOUT_NCHW, 1, 1, H, W};
    for (int i = 0; i < H * W; i++)
        buf[i] = (float)i / (H * W);
    ffu_image out;
    ffu_image_create(&out, FFU_PIX_RGBA32, W, H);
    CHECK_EQ_INT(ffu_tensor_to_image(&t1, 0, &q, &out), FFU_OK);
    const uint8_t *o = pixel(&out, 3, 2);
    int want = (int)(255.f * (2 * W + 3) / (H * W) + 0.5f);
    CHECK_EQ_INT(o[0], want);
    CHECK_EQ_INT(o[1], want);
    CHECK_EQ_INT(o[2], want);
    CHECK_EQ_INT(o[3], 255);
    ffu_image_release(&img);
    ffu_image_release(&g);
    ffu_image_release(&out);
}

/* Writing slot 1 touches all of slot 1 and nothing of slots 0 and 2. */
static void test_batch_slots(void)
{
    float buf[N * 3 * H * W];
    uint64_t seed = 34;
    ffu_image img;
    make_image(&img, FFU_PIX_RGB24, &seed);
    ffu_norm_params p;
    ffu_norm_preset(&p, "symmetric");
    for (int layout = 0; layout < 2; layout++) {
        for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++)
            buf[i] = -777.f;
        ffu_tensor_view t = {buf, (ffu_tensor_layout)layout, N, 3, H, W};
        CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &t, 1), FFU_OK);
        size_t slot = 3 * H * W;
        for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++) {
            int in_slot = i >= slot && i < 2 * slot;
            CHECK(in_slot ? buf[i] >= -1.f && buf[i] <= 1.f : buf[i] == -777.f);
        }
    }
    ffu_image_release(&img);
}

/* image -> tensor -> image is the identity for every preset, layout and format. */
static void test_round_trip(void)
{
    const char *presets[] = {"unit", "symmetric", "imagenet", "raw"};
    const ffu_pixfmt fmts[] = {FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32, FFU_PIX_GRAY8};
    float buf[N * 3 * H * W];
    uint64_t seed = 35;
    for (size_t pi = 0; pi < 4; pi++)
        for (size_t f = 0; f < 4; f++)
            for (int layout = 0; layout < 2; layout++)
                for (int swap = 0; swap < 2; swap++) {
                    ffu_image img, back;
                    make_image(&img, fmts[f], &seed);
                    /* Include the extremes. */
                    img.data[0][0] = 0, img.data[0][1] = 255;
                    if (fmts[f] == FFU_PIX_RGBA32)
                        for (int y = 0; y < H; y++)
                            for (int x = 0; x < W; x++)
                                img.data[0][y * img.stride[0] + x * 4 + 3] = 255;
                    ffu_image_create(&back, fmts[f], W, H);
                    ffu_norm_params p;
                    ffu_norm_preset(&p, presets[pi]);
                    p.swap_rb = swap;
                    int c = fmts[f] == FFU_PIX_GRAY8 ? 1 : 3;
                    ffu_tensor_view t = {buf, (ffu_tensor_layout)layout, N, c, H, W};
                    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &t, 2), FFU_OK);
                    CHECK_EQ_INT(ffu_tensor_to_image(&t, 2, &p, &back), FFU_OK);
                    for (int y = 0; y < H; y++)
                        if (memcmp(pixel(&img, 0, y), pixel(&back, 0, y),
                                   (size_t)W * ffu_pixfmt_bpp(fmts[f])) != 0) {
                            fprintf(stderr, "round trip %s %s layout %d swap %d row %d\n",
                                    presets[pi], ffu_pixfmt_name(fmts[f]), layout, swap, y);
                            CHECK(0);
                        }
                    ffu_image_release(&img);
                    ffu_image_release(&back);
                }
}

/* Out-of-range tensor values clamp, NaN becomes 0, .5 rounds up. A 3-channel tensor
 * into GRAY8 gives luma. */
static void test_to_image_clamp(void)
{
    float buf[3 * 1 * 4] = {-5.f, 300.f, NAN, 12.5f, 1, 1, 1, 1, 2, 2, 2, 2};
    ffu_tensor_view t = {buf, FFU_LAYOUT_NCHW, 1, 3, 1, 4};
    ffu_norm_params p;
    ffu_norm_preset(&p, "raw");
    ffu_image img, g;
    ffu_image_create(&img, FFU_PIX_BGR24, 4, 1);
    ffu_image_create(&g, FFU_PIX_GRAY8, 4, 1);
    CHECK_EQ_INT(ffu_tensor_to_image(&t, 0, &p, &img), FFU_OK);
    /* Tensor channels follow the image's byte order: channel 0 lands in B. */
    const uint8_t want[12] = {0, 1, 2, 255, 1, 2, 0, 1, 2, 13, 1, 2};
    CHECK(memcmp(img.data[0], want, 12) == 0);
    CHECK_EQ_INT(ffu_tensor_to_image(&t, 0, &p, &g), FFU_OK);
    CHECK_EQ_INT(g.data[0][3], (int)(0.299f * 12.5f + 0.587f + 0.114f * 2 + 0.5f));
    p.scale[1] = 0;
    CHECK_EQ_INT(ffu_tensor_to_image(&t, 0, &p, &img), FFU_ERR_INVALID);
    ffu_image_release(&img);
    ffu_image_release(&g);
}

/* Rows long enough for the NHWC fast path's 48-value blocks and its tail (37 pixels:
 * two blocks and 15 values), a stride wider than the row, distinct per-channel mean
 * and scale: every value is exactly ((float)byte - mean[c]) * scale[c], and equals
 * the NCHW output of the general loop bit for bit. */
static void test_nhwc_wide_rows(void)
{
    enum { WW = 37, HH = 3 };
    uint64_t seed = 99;
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, WW, HH), FFU_OK);
    for (int y = 0; y < HH; y++)
        for (int i = 0; i < WW * 3; i++)
            img.data[0][(size_t)y * img.stride[0] + i] = (uint8_t)test_rand_u64(&seed);
    ffu_image view;
    CHECK_EQ_INT(ffu_image_view(&view, &img, 1, 0, WW - 1, HH), FFU_OK); /* stride > row */
    ffu_norm_params p = {.mean = {10.5f, 127.5f, 200.25f}, .scale = {0.1f, 1 / 127.5f, 3.0f}};
    float nhwc[HH * WW * 3], nchw[3 * HH * WW];
    ffu_tensor_view tn = {nhwc, FFU_LAYOUT_NHWC, 1, 3, HH, WW - 1};
    ffu_tensor_view tc = {nchw, FFU_LAYOUT_NCHW, 1, 3, HH, WW - 1};
    CHECK_EQ_INT(ffu_image_to_tensor(&view, &p, &tn, 0), FFU_OK);
    CHECK_EQ_INT(ffu_image_to_tensor(&view, &p, &tc, 0), FFU_OK);
    int bad = 0;
    for (int y = 0; y < HH; y++)
        for (int x = 0; x < WW - 1; x++)
            for (int c = 0; c < 3; c++) {
                float want = ((float)pixel(&view, x, y)[c] - p.mean[c]) * p.scale[c];
                bad += *ffu_tensor_at(&tn, 0, c, y, x) != want;
                bad += *ffu_tensor_at(&tc, 0, c, y, x) != want;
            }
    CHECK_EQ_INT(bad, 0);
    ffu_image_release(&img);
}

static void test_errors(void)
{
    float buf[2 * 3 * H * W];
    ffu_image img, nv;
    uint64_t seed = 36;
    make_image(&img, FFU_PIX_RGB24, &seed);
    ffu_image_create(&nv, FFU_PIX_NV12, 8, 6);
    ffu_norm_params p;
    ffu_norm_preset(&p, "unit");
    ffu_tensor_view t = {buf, FFU_LAYOUT_NCHW, 2, 3, H, W};
    ffu_tensor_view bad = t;
    bad.w = W + 1;
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &bad, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_tensor_to_image(&bad, 0, &p, &img), FFU_ERR_INVALID);
    bad = t, bad.h = H - 1;
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &bad, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &t, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &t, -1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_tensor_to_image(&t, 2, &p, &img), FFU_ERR_INVALID);
    bad = t, bad.c = 1;
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &bad, 0), FFU_ERR_INVALID);
    bad.c = 4;
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &bad, 0), FFU_ERR_INVALID);
    p.gray = 1; /* gray wants one channel */
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &t, 0), FFU_ERR_INVALID);
    p.gray = 0;
    bad = t, bad.layout = (ffu_tensor_layout)7;
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &bad, 0), FFU_ERR_INVALID);
    bad = t, bad.data = NULL;
    CHECK_EQ_INT(ffu_image_to_tensor(&img, &p, &bad, 0), FFU_ERR_INVALID);
    bad = t, bad.w = 8, bad.h = 6;
    CHECK_EQ_INT(ffu_image_to_tensor(&nv, &p, &bad, 0), FFU_ERR_UNSUPPORTED);
    CHECK_EQ_INT(ffu_image_to_tensor(&img, NULL, &t, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_to_tensor(NULL, &p, &t, 0), FFU_ERR_INVALID);
    ffu_image_release(&img);
    ffu_image_release(&nv);
}

TEST_MAIN(test_presets, test_known_pixels, test_bgr_equivalence, test_gray, test_batch_slots,
          test_nhwc_wide_rows,
          test_round_trip, test_to_image_clamp, test_errors)
