/* Crop-space masks and paste-back (src/swap/paste.c) against computations written
 * here from the definitions: the box mask against a direct float convolution with
 * FaceFusion's numbers (blur amount int(0.5 size blur), zero margin max(amount / 2, 1,
 * padding), sigma amount / 4, kernel round(8 sigma + 1) odd, reflect-101), mask products,
 * and paste-back: every pixel outside the crop's footprint byte-identical, every pixel
 * inside equal to frame (1 - a) + warped a with a and warped sampled here in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "swap/swap_internal.h"
#include "test.h"

static void fill_random(ffu_image *img, uint64_t *seed)
{
    int bpp = ffu_pixfmt_bpp(img->fmt);
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width * bpp; x++)
            img->data[0][(size_t)y * img->stride[0] + x] = (uint8_t)(test_rand_u64(seed) >> 56);
}

static int refl(int i, int n)
{
    while (i < 0 || i >= n) {
        if (i < 0)
            i = -i;
        if (i >= n)
            i = 2 * (n - 1) - i;
    }
    return i;
}

/* The box mask in double: 2-D array, blurred along x then y. out: size*size. */
static void ref_box_mask(int size, double blur, const double pad[4], double *out)
{
    int amount = (int)(size * 0.5 * blur);
    int area = amount / 2 < 1 ? 1 : amount / 2;
    int top = (int)(size * pad[0] / 100), right = (int)(size * pad[1] / 100);
    int bottom = (int)(size * pad[2] / 100), left = (int)(size * pad[3] / 100);
    top = top > area ? top : area;
    right = right > area ? right : area;
    bottom = bottom > area ? bottom : area;
    left = left > area ? left : area;
    double *a = calloc((size_t)size * size, sizeof *a), *t = calloc((size_t)size * size, sizeof *t);
    for (int y = top; y < size - bottom; y++)
        for (int x = left; x < size - right; x++)
            a[y * size + x] = 1;
    if (amount == 0) {
        memcpy(out, a, (size_t)size * size * sizeof *a);
        free(a);
        free(t);
        return;
    }
    double sigma = amount / 4.0;
    int k = (int)floor(sigma * 8 + 1 + 0.5);
    if (!(k & 1))
        k++;
    int r = k / 2;
    double *w = malloc((size_t)k * sizeof *w), sum = 0;
    for (int i = 0; i < k; i++)
        sum += w[i] = exp(-(double)(i - r) * (i - r) / (2 * sigma * sigma));
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            double acc = 0;
            for (int i = 0; i < k; i++)
                acc += w[i] * a[y * size + refl(x + i - r, size)];
            t[y * size + x] = acc / sum;
        }
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            double acc = 0;
            for (int i = 0; i < k; i++)
                acc += w[i] * t[refl(y + i - r, size) * size + x];
            out[y * size + x] = acc / sum;
        }
    free(w);
    free(a);
    free(t);
}

static void check_box(int size, float blur, const float pad[4], int *worst)
{
    ffu_image m = {0};
    double dpad[4] = {pad[0], pad[1], pad[2], pad[3]};
    double *ref = malloc((size_t)size * size * sizeof *ref);
    *worst = 999;
    if (swap_box_mask(size, blur, pad, &m) != FFU_OK || m.width != size || m.fmt != FFU_PIX_GRAY8)
        goto out;
    ref_box_mask(size, blur, dpad, ref);
    *worst = 0;
    for (int y = 0; y < size; y++)
        for (int x = 0; x < size; x++) {
            int d = abs((int)m.data[0][(size_t)y * m.stride[0] + x] -
                        (int)lround(ref[y * size + x] * 255));
            if (d > *worst)
                *worst = d;
        }
out:
    free(ref);
    ffu_image_release(&m);
}

static void test_box_mask_matches_definition(void)
{
    const float none[4] = {0, 0, 0, 0}, pad[4] = {10, 5, 20, 0};
    int worst;
    check_box(128, 0.3f, none, &worst); /* inswapper defaults: amount 19, sigma 4.75 */
    CHECK(worst <= 1);
    check_box(256, 0.3f, pad, &worst);
    CHECK(worst <= 1);
    check_box(96, 0.7f, pad, &worst);
    CHECK(worst <= 1);
    check_box(64, 0.0f, pad, &worst); /* no blur: a hard box */
    CHECK_EQ_INT(worst, 0);
    check_box(33, 1.0f, none, &worst); /* kernel wider than the mask: repeated reflection */
    CHECK(worst <= 1);
    check_box(1100, 0.05f, pad, &worst); /* above the stack-buffer size */
    CHECK(worst <= 1);
}

static void test_box_mask_shape(void)
{
    ffu_image m = {0};
    const float none[4] = {0, 0, 0, 0};
    CHECK(swap_box_mask(128, 0.3f, none, &m) == FFU_OK);
    const uint8_t *p = m.data[0];
    int s = m.stride[0];
    CHECK_EQ_INT(p[64 * s + 64], 255); /* the middle is the face */
    CHECK(p[0] < 10);                  /* the corner has faded out */
    for (int x = 1; x < 64; x++)       /* monotonic ramp from the edge to the middle */
        CHECK(p[64 * s + x] >= p[64 * s + x - 1]);
    for (int x = 0; x < 128; x++)      /* symmetric without padding */
        CHECK(abs(p[64 * s + x] - p[64 * s + 127 - x]) <= 1);
    /* padding 25% at the top moves the top edge down: row 20 is masked out */
    const float top[4] = {25, 0, 0, 0};
    CHECK(swap_box_mask(128, 0.0f, top, &m) == FFU_OK); /* reuses the buffer */
    CHECK_EQ_INT(m.data[0][20 * m.stride[0] + 64], 0);
    CHECK_EQ_INT(m.data[0][40 * m.stride[0] + 64], 255);
    CHECK_EQ_INT(m.data[0][40 * m.stride[0] + 0], 0); /* the 1-pixel margin without blur */
    ffu_image_release(&m);
    const float bad[4] = {-1, 0, 0, 0};
    CHECK_EQ_INT(swap_box_mask(128, 0.3f, bad, &m), FFU_ERR_INVALID);
    CHECK_EQ_INT(swap_box_mask(128, NAN, none, &m), FFU_ERR_INVALID);
    CHECK_EQ_INT(swap_box_mask(0, 0.3f, none, &m), FFU_ERR_INVALID);
    CHECK_EQ_INT(swap_box_mask(128, 0.3f, none, NULL), FFU_ERR_INVALID);
    ffu_image_release(&m);
}

static void test_mask_multiply(void)
{
    uint64_t seed = 7;
    ffu_image a = {0}, b = {0}, a0 = {0};
    CHECK(ffu_image_create(&a, FFU_PIX_GRAY8, 37, 21) == FFU_OK);
    CHECK(ffu_image_create(&b, FFU_PIX_GRAY8, 37, 21) == FFU_OK);
    fill_random(&a, &seed);
    fill_random(&b, &seed);
    a.data[0][0] = 255, b.data[0][0] = 200; /* 255 is the identity */
    a.data[0][1] = 0, b.data[0][1] = 255;
    CHECK(ffu_image_clone(&a0, &a) == FFU_OK);
    CHECK(swap_mask_multiply(&a, &b) == FFU_OK);
    for (int y = 0; y < 21; y++)
        for (int x = 0; x < 37; x++) {
            double want = a0.data[0][y * a0.stride[0] + x] * (double)b.data[0][y * b.stride[0] + x] / 255;
            CHECK(fabs(a.data[0][y * a.stride[0] + x] - want) <= 0.5 + 1e-9);
        }
    CHECK_EQ_INT(a.data[0][0], 200);
    CHECK_EQ_INT(a.data[0][1], 0);
    ffu_image c = {0};
    CHECK(ffu_image_create(&c, FFU_PIX_GRAY8, 36, 21) == FFU_OK);
    CHECK_EQ_INT(swap_mask_multiply(&a, &c), FFU_ERR_INVALID);
    ffu_image_release(&a);
    ffu_image_release(&a0);
    ffu_image_release(&b);
    ffu_image_release(&c);
}

/* Frame -> crop similarity in continuous coordinates: crop = s R (p - c) + size / 2. */
static void make_transform(double s, double deg, double cx, double cy, int size, double m[6])
{
    double a = deg * M_PI / 180, c = cos(a) * s, sn = sin(a) * s;
    m[0] = c;
    m[1] = -sn;
    m[3] = sn;
    m[4] = c;
    m[2] = size / 2.0 - (c * cx - sn * cy);
    m[5] = size / 2.0 - (sn * cx + c * cy);
}

/* Bilinear sample in pixel-centre coordinates; border 0 (mask) or replicated (crop). */
static double sample(const ffu_image *img, int ch, double u, double v, int replicate)
{
    int bpp = ffu_pixfmt_bpp(img->fmt);
    int u0 = (int)floor(u), v0 = (int)floor(v);
    double fu = u - u0, fv = v - v0, acc = 0;
    for (int k = 0; k < 4; k++) {
        int xx = u0 + (k & 1), yy = v0 + (k >> 1);
        double w = ((k & 1) ? fu : 1 - fu) * ((k >> 1) ? fv : 1 - fv);
        if (replicate) {
            xx = xx < 0 ? 0 : xx >= img->width ? img->width - 1 : xx;
            yy = yy < 0 ? 0 : yy >= img->height ? img->height - 1 : yy;
        } else if (xx < 0 || yy < 0 || xx >= img->width || yy >= img->height) {
            continue;
        }
        acc += w * img->data[0][(size_t)yy * img->stride[0] + (size_t)xx * bpp + ch];
    }
    return acc;
}

/* Pastes a random crop with mask `mask` through m and checks every frame pixel. */
static void paste_and_check(const double m[6], const ffu_image *mask, int *changed, int *bad)
{
    uint64_t seed = 42;
    ffu_image frame = {0}, orig = {0}, crop = {0};
    *changed = 0;
    *bad = -1;
    int size = mask->width;
    if (ffu_image_create(&frame, FFU_PIX_RGB24, 200, 160) || ffu_image_create(&crop, FFU_PIX_RGB24,
                                                                              size, size))
        return;
    fill_random(&frame, &seed);
    fill_random(&crop, &seed);
    ffu_image_clone(&orig, &frame);
    if (swap_paste_back(&frame, &crop, m, mask) != FFU_OK)
        goto out;
    /* the ROI: crop corners through the inverse, floor / ceil, clipped */
    double inv[6];
    ffu_affine_invert(m, inv);
    double x0 = 1e9, y0 = 1e9, x1 = -1e9, y1 = -1e9;
    for (int i = 0; i < 4; i++) {
        double cx = (i & 1) ? size : 0, cy = (i >> 1) ? size : 0;
        double fx = inv[0] * cx + inv[1] * cy + inv[2], fy = inv[3] * cx + inv[4] * cy + inv[5];
        x0 = fmin(x0, fx), x1 = fmax(x1, fx), y0 = fmin(y0, fy), y1 = fmax(y1, fy);
    }
    int rx0 = (int)fmax(floor(x0), 0), ry0 = (int)fmax(floor(y0), 0);
    int rx1 = (int)fmin(ceil(x1), 200), ry1 = (int)fmin(ceil(y1), 160);
    *bad = 0;
    for (int y = 0; y < 160; y++)
        for (int x = 0; x < 200; x++) {
            const uint8_t *f = frame.data[0] + (size_t)y * frame.stride[0] + x * 3;
            const uint8_t *o = orig.data[0] + (size_t)y * orig.stride[0] + x * 3;
            int inside = x >= rx0 && x < rx1 && y >= ry0 && y < ry1;
            if (memcmp(f, o, 3))
                (*changed)++;
            if (!inside) {
                if (memcmp(f, o, 3))
                    (*bad)++;
                continue;
            }
            double u = m[0] * (x + 0.5) + m[1] * (y + 0.5) + m[2] - 0.5;
            double v = m[3] * (x + 0.5) + m[4] * (y + 0.5) + m[5] - 0.5;
            double a = sample(mask, 0, u, v, 0) / 255;
            for (int c = 0; c < 3; c++) {
                double want = o[c] * (1 - a) + sample(&crop, c, u, v, 1) * a;
                if (fabs(f[c] - want) > 0.51 + 1e-3)
                    (*bad)++;
            }
            if (a == 0 && memcmp(f, o, 3))
                (*bad)++;
        }
out:
    ffu_image_release(&frame);
    ffu_image_release(&orig);
    ffu_image_release(&crop);
}

static void test_paste_back_roi_only(void)
{
    ffu_image mask = {0};
    const float none[4] = {0, 0, 0, 0};
    CHECK(swap_box_mask(64, 0.3f, none, &mask) == FFU_OK);
    double m[6];
    int changed, bad;
    make_transform(0.8, 23, 90, 70, 64, m); /* crop 64 covers ~80 px of the frame */
    paste_and_check(m, &mask, &changed, &bad);
    CHECK_EQ_INT(bad, 0);
    CHECK(changed > 2000);
    make_transform(0.5, -140, 185, 15, 64, m); /* footprint partly outside the frame */
    paste_and_check(m, &mask, &changed, &bad);
    CHECK_EQ_INT(bad, 0);
    CHECK(changed > 500);
    make_transform(1.0, 0, 500, 500, 64, m); /* entirely outside: nothing to do */
    paste_and_check(m, &mask, &changed, &bad);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(changed, 0);
    /* a half-zero mask: frame pixels that map into the zero half keep their bytes */
    for (int y = 0; y < 64; y++)
        memset(mask.data[0] + (size_t)y * mask.stride[0] + 32, 0, 32);
    make_transform(0.9, 10, 100, 80, 64, m);
    paste_and_check(m, &mask, &changed, &bad);
    CHECK_EQ_INT(bad, 0);
    CHECK(changed > 500);
    ffu_image_release(&mask);
}

static void test_paste_back_errors(void)
{
    ffu_image frame = {0}, crop = {0}, mask = {0}, bgr = {0};
    CHECK(ffu_image_create(&frame, FFU_PIX_RGB24, 50, 40) == FFU_OK);
    CHECK(ffu_image_create(&crop, FFU_PIX_RGB24, 16, 16) == FFU_OK);
    CHECK(ffu_image_create(&bgr, FFU_PIX_BGR24, 16, 16) == FFU_OK);
    CHECK(ffu_image_create(&mask, FFU_PIX_GRAY8, 15, 16) == FFU_OK);
    double m[6] = {1, 0, 0, 0, 1, 0}, sing[6] = {1, 2, 0, 2, 4, 0};
    CHECK_EQ_INT(swap_paste_back(&frame, &crop, m, &mask), FFU_ERR_INVALID); /* size */
    ffu_image_release(&mask);
    CHECK(ffu_image_create(&mask, FFU_PIX_GRAY8, 16, 16) == FFU_OK);
    CHECK_EQ_INT(swap_paste_back(&frame, &bgr, m, &mask), FFU_ERR_UNSUPPORTED);
    CHECK_EQ_INT(swap_paste_back(&frame, &crop, sing, &mask), FFU_ERR_INVALID);
    m[2] = NAN;
    CHECK_EQ_INT(swap_paste_back(&frame, &crop, m, &mask), FFU_ERR_INVALID);
    CHECK_EQ_INT(swap_paste_back(NULL, &crop, m, &mask), FFU_ERR_INVALID);
    ffu_image_release(&frame);
    ffu_image_release(&crop);
    ffu_image_release(&bgr);
    ffu_image_release(&mask);
}

TEST_MAIN(test_box_mask_matches_definition, test_box_mask_shape, test_mask_multiply,
          test_paste_back_roi_only, test_paste_back_errors)
