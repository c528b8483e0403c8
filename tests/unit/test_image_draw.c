/* Tests for drawing and the built-in font: exact pixels of each primitive, colour order
 * per format, clipping of extreme coordinates against a guard band, and glyph checks.
 * With FFU_FONT_SHEET=path.ppm set, test_font_sheet also writes every glyph at scale 3
 * for a person to look at. */
#include <limits.h>

#include "facefuse/image.h"
#include "image/font.h"
#include "test.h"

static const ffu_color RED = {255, 0, 0, 255}, WHITE = {255, 255, 255, 255},
                       BLUE = {0, 0, 255, 128};

/* An image inside a larger allocation whose margin holds a sentinel byte. */
enum { GUARD = 64, SENTINEL = 0xA5 };
typedef struct guarded {
    uint8_t *mem;
    size_t size;
    ffu_image img;
} guarded;

static int guarded_create(guarded *g, ffu_pixfmt fmt, int w, int h)
{
    int bpp = ffu_pixfmt_bpp(fmt), stride = (w + 2 * GUARD) * bpp;
    g->size = (size_t)stride * (h + 2 * GUARD);
    g->mem = malloc(g->size);
    if (!g->mem) return -1;
    memset(g->mem, SENTINEL, g->size);
    uint8_t *origin = g->mem + (size_t)GUARD * stride + (size_t)GUARD * bpp;
    for (int y = 0; y < h; y++)
        memset(origin + (size_t)y * stride, 0, (size_t)w * bpp);
    return ffu_image_wrap(&g->img, fmt, w, h, origin, stride);
}

/* 1 when every byte outside the image still holds the sentinel. */
static int guard_intact(const guarded *g)
{
    const ffu_image *im = &g->img;
    size_t row = (size_t)im->width * ffu_pixfmt_bpp(im->fmt);
    for (size_t i = 0; i < g->size; i++) {
        ptrdiff_t off = (g->mem + i) - im->data[0];
        ptrdiff_t y = off >= 0 ? off / im->stride[0] : -1;
        size_t x = off >= 0 ? (size_t)(off % im->stride[0]) : 0;
        int inside = off >= 0 && y < im->height && x < row;
        if (!inside && g->mem[i] != SENTINEL) return 0;
    }
    return 1;
}

static const uint8_t *px(const ffu_image *img, int x, int y)
{
    return img->data[0] + (size_t)y * img->stride[0] + (size_t)x * ffu_pixfmt_bpp(img->fmt);
}

static int is_set(const ffu_image *img, int x, int y) { return px(img, x, y)[0] != 0; }

static int count_set(const ffu_image *img)
{
    int n = 0;
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++)
            n += is_set(img, x, y);
    return n;
}

static void clear(ffu_image *img)
{
    for (int y = 0; y < img->height; y++)
        memset(img->data[0] + (size_t)y * img->stride[0], 0,
               (size_t)img->width * ffu_pixfmt_bpp(img->fmt));
}

static void test_colour_formats(void)
{
    const ffu_color c = {10, 20, 30, 40};
    const struct {
        ffu_pixfmt fmt;
        uint8_t want[4];
    } cases[] = {{FFU_PIX_RGB24, {10, 20, 30}},
                 {FFU_PIX_BGR24, {30, 20, 10}},
                 {FFU_PIX_RGBA32, {10, 20, 30, 40}},
                 {FFU_PIX_GRAY8, {(299 * 10 + 587 * 20 + 114 * 30 + 500) / 1000}}};
    for (size_t k = 0; k < 4; k++) {
        ffu_image img;
        CHECK_EQ_INT(ffu_image_create(&img, cases[k].fmt, 9, 7), FFU_OK);
        CHECK_EQ_INT(ffu_draw_fill_rect(&img, 2, 3, 4, 2, c), FFU_OK);
        int bpp = ffu_pixfmt_bpp(cases[k].fmt);
        for (int y = 0; y < 7; y++)
            for (int x = 0; x < 9; x++) {
                int in = x >= 2 && x < 6 && y >= 3 && y < 5;
                const uint8_t zero[4] = {0};
                CHECK(memcmp(px(&img, x, y), in ? cases[k].want : zero, (size_t)bpp) == 0);
            }
        ffu_image_release(&img);
    }
}

static void test_rect(void)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_GRAY8, 23, 17), FFU_OK);
    CHECK_EQ_INT(ffu_draw_rect(&img, 3, 2, 11, 9, 2, WHITE), FFU_OK);
    for (int y = 0; y < 17; y++)
        for (int x = 0; x < 23; x++) {
            int outer = x >= 3 && x < 14 && y >= 2 && y < 11;
            int inner = x >= 5 && x < 12 && y >= 4 && y < 9;
            CHECK_EQ_INT(is_set(&img, x, y), outer && !inner);
        }
    /* Thickness 0 counts as 1; thickness past the middle fills. */
    clear(&img);
    ffu_draw_rect(&img, 0, 0, 4, 4, 0, WHITE);
    CHECK_EQ_INT(count_set(&img), 12);
    clear(&img);
    ffu_draw_rect(&img, 1, 1, 5, 6, 3, WHITE);
    CHECK_EQ_INT(count_set(&img), 30);
    /* Partly outside: only the visible bands. */
    clear(&img);
    ffu_draw_rect(&img, -5, -5, 10, 10, 1, WHITE);
    CHECK_EQ_INT(count_set(&img), 9);
    CHECK(is_set(&img, 4, 0) && is_set(&img, 0, 4) && is_set(&img, 4, 4) && !is_set(&img, 3, 3));
    clear(&img);
    ffu_draw_fill_rect(&img, 5, 5, 0, 3, WHITE);
    ffu_draw_fill_rect(&img, 5, 5, 3, -3, WHITE);
    CHECK_EQ_INT(count_set(&img), 0);
    ffu_image_release(&img);
}

static void test_line(void)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_GRAY8, 31, 21), FFU_OK);
    /* Thin lines: one pixel per step along the major axis, both endpoints. */
    ffu_draw_line(&img, 2, 3, 12, 7, 1, WHITE);
    CHECK_EQ_INT(count_set(&img), 11);
    CHECK(is_set(&img, 2, 3) && is_set(&img, 12, 7));
    for (int x = 2; x <= 12; x++) {
        int n = 0;
        for (int y = 0; y < 21; y++)
            n += is_set(&img, x, y);
        CHECK_EQ_INT(n, 1);
    }
    /* A zero-length line is one stamp: the disc of diameter t (corners cut from 4 on). */
    const int disc[6] = {0, 1, 4, 9, 12, 21};
    for (int t = 1; t <= 5; t++) {
        clear(&img);
        ffu_draw_line(&img, 9, 9, 9, 9, t, WHITE);
        CHECK_EQ_INT(count_set(&img), disc[t]);
    }
    clear(&img);
    ffu_draw_line(&img, 20, 15, 5, 0, 1, WHITE); /* diagonal, drawn backwards */
    for (int i = 0; i <= 15; i++)
        CHECK(is_set(&img, 5 + i, i));
    CHECK_EQ_INT(count_set(&img), 16);
    /* Thick: a horizontal line `t` rows high, with round caps. */
    for (int t = 2; t <= 5; t++) {
        clear(&img);
        ffu_draw_line(&img, 8, 10, 22, 10, t, WHITE);
        int rows = 0;
        for (int y = 0; y < 21; y++)
            rows += is_set(&img, 15, y);
        CHECK_EQ_INT(rows, t);
        CHECK(!is_set(&img, 8 - t, 10) && !is_set(&img, 22 + t, 10));
    }
    /* Clipping: a line through the image from far away draws the same row as a short
     * one; one that misses draws nothing. */
    clear(&img);
    ffu_draw_line(&img, INT_MIN, 6, INT_MAX, 6, 1, WHITE);
    CHECK_EQ_INT(count_set(&img), 31);
    for (int x = 0; x < 31; x++)
        CHECK(is_set(&img, x, 6));
    clear(&img);
    ffu_draw_line(&img, -100000, -5, 100000, -5, 3, WHITE);
    ffu_draw_line(&img, INT_MIN, INT_MIN, INT_MAX, INT_MIN, 255, WHITE);
    CHECK_EQ_INT(count_set(&img), 0);
    ffu_image_release(&img);
}

static void test_point_and_polyline(void)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 19, 15), FFU_OK);
    ffu_draw_point(&img, 7, 7, 0, RED);
    CHECK_EQ_INT(count_set(&img), 1);
    clear(&img);
    ffu_draw_point(&img, 7, 7, 2, RED); /* dx^2 + dy^2 <= 4 */
    CHECK_EQ_INT(count_set(&img), 13);
    CHECK(is_set(&img, 9, 7) && !is_set(&img, 9, 8));
    clear(&img);
    ffu_draw_point(&img, 0, 0, 3, RED); /* a quarter of the 29-pixel disc */
    CHECK_EQ_INT(count_set(&img), 11);
    clear(&img);
    ffu_draw_point(&img, 5, 5, INT_MAX, RED);
    CHECK_EQ_INT(count_set(&img), 19 * 15);

    clear(&img);
    const int tri[6] = {2, 2, 16, 2, 2, 12};
    ffu_draw_polyline(&img, tri, 3, 0, 1, RED);
    int open = count_set(&img);
    CHECK(!is_set(&img, 2, 7)); /* on the closing edge */
    ffu_draw_polyline(&img, tri, 3, 1, 1, RED);
    CHECK(count_set(&img) > open);
    CHECK(is_set(&img, 2, 7) && is_set(&img, 9, 7) && is_set(&img, 16, 2));
    clear(&img);
    ffu_draw_polyline(&img, tri, 1, 1, 3, RED);
    CHECK_EQ_INT(count_set(&img), 9);
    CHECK_EQ_INT(ffu_draw_polyline(&img, tri, 0, 1, 1, RED), FFU_OK);
    CHECK_EQ_INT(ffu_draw_polyline(&img, NULL, 2, 1, 1, RED), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_draw_polyline(&img, tri, -1, 1, 1, RED), FFU_ERR_INVALID);
    ffu_image_release(&img);
}

/* Every primitive with extreme and random far coordinates, on every format: nothing
 * outside the image changes. */
static void test_clipping_guard(void)
{
    const ffu_pixfmt fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32};
    const int ext[] = {INT_MIN, INT_MIN + 1, -1000000, -70,     -1,          0,      5,
                       12,      13,          40,       1000000, INT_MAX - 1, INT_MAX};
    const int ne = (int)(sizeof ext / sizeof ext[0]);
    uint64_t seed = 41;
    for (size_t f = 0; f < 4; f++) {
        guarded g;
        CHECK_EQ_INT(guarded_create(&g, fmts[f], 13, 11), FFU_OK);
        ffu_image *im = &g.img;
        for (int i = 0; i < 600; i++) {
            int v[6];
            for (int k = 0; k < 6; k++)
                v[k] = i % 2 ? ext[test_rand_u64(&seed) % ne]
                             : (int)(test_rand_u64(&seed) % 200) - 100;
            int t = (int)(test_rand_u64(&seed) % 300) - 10;
            CHECK_EQ_INT(ffu_draw_line(im, v[0], v[1], v[2], v[3], t % 40, WHITE), FFU_OK);
            ffu_draw_rect(im, v[0], v[1], v[2], v[3], t, BLUE);
            ffu_draw_fill_rect(im, v[2], v[3], v[4], v[5], RED);
            ffu_draw_point(im, v[4], v[5], v[i % 6] > 0 && i % 3 ? v[i % 6] : t, RED);
            ffu_draw_polyline(im, v, 3, i & 1, t, WHITE);
            ffu_draw_text(im, v[0], v[1], "Ab\xc3\xa9\n9", 1 + (int)(test_rand_u64(&seed) % 9),
                          WHITE, &BLUE);
            ffu_draw_label(im, v[4], v[5], "x 0.93", 1 + i % 4, WHITE, RED);
        }
        ffu_draw_line(im, INT_MAX, INT_MAX, INT_MIN, INT_MIN, FFU_DRAW_MAX_THICKNESS, WHITE);
        ffu_draw_line(im, INT_MIN, INT_MAX, INT_MAX, INT_MIN, INT_MAX, WHITE);
        ffu_draw_rect(im, INT_MIN, INT_MIN, INT_MAX, INT_MAX, INT_MAX, RED);
        ffu_draw_rect(im, INT_MAX, INT_MAX, INT_MAX, INT_MAX, 1, RED);
        ffu_draw_text(im, INT_MAX, INT_MAX, "far", FFU_IMAGE_MAX_DIM, WHITE, &RED);
        ffu_draw_text(im, INT_MIN, INT_MIN, "far", FFU_IMAGE_MAX_DIM, WHITE, &RED);
        ffu_draw_label(im, INT_MIN, INT_MAX, "far", FFU_IMAGE_MAX_DIM, WHITE, RED);
        CHECK(guard_intact(&g));
        free(g.mem);
    }
}

static void test_text_size(void)
{
    int w = -1, h = -1;
    ffu_text_size("abc", 2, &w, &h);
    CHECK_EQ_INT(w, 3 * FONT_CELL_W * 2);
    CHECK_EQ_INT(h, FONT_CELL_H * 2);
    ffu_text_size("name 0.93", 3, &w, &h);
    CHECK_EQ_INT(w, 9 * FONT_CELL_W * 3);
    ffu_text_size("ab\nlonger\nx", 1, &w, &h);
    CHECK_EQ_INT(w, 6 * FONT_CELL_W);
    CHECK_EQ_INT(h, 3 * FONT_CELL_H);
    ffu_text_size("Jos\xc3\xa9 \xe2\x82\xac", 1, &w, &h); /* "José €": one box each */
    CHECK_EQ_INT(w, 6 * FONT_CELL_W);
    ffu_text_size("", 1, &w, &h);
    CHECK(w == 0 && h == 0);
    ffu_text_size(NULL, 1, &w, &h);
    CHECK(w == 0 && h == 0);
    ffu_text_size("a", 0, &w, &h);
    CHECK(w == 0 && h == 0);
    ffu_text_size("a", FFU_IMAGE_MAX_DIM, &w, &h);
    CHECK_EQ_INT(w, FONT_CELL_W * FFU_IMAGE_MAX_DIM);
}

/* "A" at scale 2 sets exactly its glyph's blocks, all inside its cell; with a
 * background the whole cell is painted. */
static void test_text_pixels(void)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 40, 30), FFU_OK);
    CHECK_EQ_INT(ffu_draw_text(&img, 3, 4, "A", 2, WHITE, NULL), FFU_OK);
    const uint8_t *g = font_glyph('A');
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < 40; x++) {
            int gx = (x - 3) / 2, gy = (y - 4) / 2,
                in_cell = x >= 3 && x < 3 + 2 * FONT_CELL_W && y >= 4 && y < 4 + 2 * FONT_CELL_H;
            int want = in_cell && gx < FONT_GLYPH_W && gy < FONT_GLYPH_H &&
                       (g[gy] >> (FONT_GLYPH_W - 1 - gx) & 1);
            CHECK_EQ_INT(is_set(&img, x, y), want);
        }
    clear(&img);
    const ffu_color dark = {1, 2, 3, 255};
    ffu_draw_text(&img, 1, 1, "i\n:", 1, WHITE, &dark);
    CHECK_EQ_INT(count_set(&img), FONT_CELL_W * FONT_CELL_H * 2);
    CHECK_EQ_INT(px(&img, 0, 0)[0], 0);
    CHECK_EQ_INT(px(&img, 1, 1)[0], 1);   /* background */
    CHECK_EQ_INT(px(&img, 3, 1)[0], 255); /* the dot of the i */
    CHECK_EQ_INT(px(&img, 1, 11)[2], 3);  /* second line's cell */
    CHECK_EQ_INT(ffu_draw_text(&img, 0, 0, "x", 0, WHITE, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_draw_text(&img, 0, 0, NULL, 1, WHITE, NULL), FFU_ERR_INVALID);
    ffu_image nv;
    ffu_image_create(&nv, FFU_PIX_NV12, 8, 8);
    CHECK_EQ_INT(ffu_draw_text(&nv, 0, 0, "x", 1, WHITE, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_draw_line(&nv, 0, 0, 5, 5, 1, WHITE), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_draw_fill_rect(NULL, 0, 0, 5, 5, WHITE), FFU_ERR_INVALID);
    ffu_image_release(&nv);
    ffu_image_release(&img);
}

/* The label box sits right above the face box, or inside it at the image top. */
static void test_label(void)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_BGR24, 80, 60), FFU_OK);
    int tw, th;
    ffu_text_size("ab 1", 1, &tw, &th);
    CHECK_EQ_INT(ffu_draw_label(&img, 10, 30, "ab 1", 1, WHITE, RED), FFU_OK);
    /* Box: x 10..10+tw, y 30-(th+1)..29. BGR: red is byte 2. */
    CHECK_EQ_INT(px(&img, 10, 29)[2], 255);
    CHECK_EQ_INT(px(&img, 10 + tw, 30 - th - 1)[2], 255);
    CHECK_EQ_INT(px(&img, 10 + tw + 1, 29)[2], 0);
    CHECK_EQ_INT(px(&img, 10, 30)[2], 0);
    CHECK_EQ_INT(px(&img, 10, 30 - th - 2)[2], 0);
    int fg = 0;
    for (int y = 30 - th - 1; y < 30; y++)
        for (int x = 10; x <= 10 + tw; x++)
            fg += px(&img, x, y)[0] == 255;
    CHECK(fg > 10);
    clear(&img);
    ffu_draw_label(&img, 10, 3, "ab 1", 1, WHITE, RED); /* no room above */
    CHECK_EQ_INT(px(&img, 10, 3)[2], 255);
    CHECK_EQ_INT(px(&img, 10, 3 + th)[2], 255);
    CHECK_EQ_INT(px(&img, 10, 2)[2], 0);
    ffu_image_release(&img);
}

/* Every glyph is distinct, stays in its 5 columns, space is empty, the box differs
 * from all, and only characters with descenders use rows 7-8. */
static void test_font_glyphs(void)
{
    for (int a = 32; a <= 127; a++) {
        const uint8_t *ga = font_glyph(a);
        int ink = 0, low = 0;
        for (int r = 0; r < FONT_GLYPH_H; r++) {
            CHECK_EQ_INT(ga[r] & ~0x1f, 0);
            ink += ga[r] != 0;
            low += r >= 7 && ga[r];
        }
        CHECK(a == ' ' ? ink == 0 : ink > 0);
        CHECK_EQ_INT(low > 0, a < 127 && strchr("gjpqy,;_", a) != NULL);
        for (int b = 32; b < a; b++)
            if (memcmp(ga, font_glyph(b), FONT_GLYPH_H) == 0) {
                fprintf(stderr, "glyphs '%c' and '%c' are the same\n", a, b);
                CHECK(0);
            }
    }
    CHECK(font_glyph(127) == font_glyph(0x80) && font_glyph(-5) == font_glyph(200));
}

static void test_font_sheet(void)
{
    const char *path = getenv("FFU_FONT_SHEET");
    ffu_image img;
    const int scale = 3, cols = 16;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, (cols + 2) * FONT_CELL_W * scale,
                                  10 * FONT_CELL_H * scale),
                 FFU_OK);
    ffu_draw_fill_rect(&img, 0, 0, img.width, img.height, (ffu_color){250, 250, 240, 255});
    char line[32];
    for (int row = 0; row < 6; row++) {
        int n = 0;
        for (int c = 32 + row * cols; c < 32 + (row + 1) * cols && c < 127; c++)
            line[n++] = (char)c;
        line[n] = 0;
        ffu_draw_text(&img, FONT_CELL_W * scale, (row + 1) * FONT_CELL_H * scale, line, scale,
                      (ffu_color){0, 0, 0, 255}, NULL);
    }
    ffu_draw_label(&img, 20, 9 * FONT_CELL_H * scale, "Jos\xc3\xa9 0.93 gjpqy", 2,
                   (ffu_color){255, 255, 255, 255}, (ffu_color){0, 120, 200, 255});
    CHECK(count_set(&img) > 0);
    if (path) {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        fprintf(f, "P6\n%d %d\n255\n", img.width, img.height);
        for (int y = 0; y < img.height; y++)
            fwrite(px(&img, 0, y), 3, (size_t)img.width, f);
        fclose(f);
    }
    ffu_image_release(&img);
}

TEST_MAIN(test_colour_formats, test_rect, test_line, test_point_and_polyline, test_clipping_guard,
          test_text_size, test_text_pixels, test_label, test_font_glyphs, test_font_sheet)
