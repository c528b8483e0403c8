/* Drawing on packed u8 images: boxes, landmarks, lines and text labels for previews,
 * the CLI's annotated output and debugging. Every primitive ends in clipped horizontal
 * spans (span()), and coordinates are carried in 64 bits until clipped, so any int
 * input -- INT_MIN, INT_MAX, sums of both -- can only touch pixels inside the image. */
#include <math.h>
#include <string.h>

#include "facefuse/image.h"
#include "font.h"

typedef struct canvas {
    uint8_t *data;
    int stride, w, h, bpp;
    uint8_t px[4]; /* the colour as the image stores it */
} canvas;

static ffu_status canvas_init(canvas *cv, ffu_image *img, ffu_color c, const char *what)
{
    int bpp = img ? ffu_pixfmt_bpp(img->fmt) : 0;
    if (!bpp || !img->data[0] || img->width <= 0 || img->height <= 0 ||
        img->width > FFU_IMAGE_MAX_DIM || img->height > FFU_IMAGE_MAX_DIM)
        return ffu_error_set(FFU_ERR_INVALID, "%s: need a packed image, got %s", what,
                             ffu_pixfmt_name(img ? img->fmt : FFU_PIX_NONE));
    *cv = (canvas){img->data[0], img->stride[0], img->width, img->height, bpp, {0}};
    switch (img->fmt) {
    case FFU_PIX_GRAY8:
        cv->px[0] = (uint8_t)((299 * c.r + 587 * c.g + 114 * c.b + 500) / 1000);
        break;
    case FFU_PIX_BGR24:
        cv->px[0] = c.b, cv->px[1] = c.g, cv->px[2] = c.r;
        break;
    default: /* RGB24, RGBA32 */
        cv->px[0] = c.r, cv->px[1] = c.g, cv->px[2] = c.b, cv->px[3] = c.a;
    }
    return FFU_OK;
}

/* Pixels [x0, x1) of row y, clipped. */
static void span(const canvas *cv, long long y, long long x0, long long x1)
{
    if (y < 0 || y >= cv->h) return;
    if (x0 < 0) x0 = 0;
    if (x1 > cv->w) x1 = cv->w;
    if (x0 >= x1) return;
    uint8_t *p = cv->data + (size_t)y * cv->stride + (size_t)x0 * cv->bpp;
    if (cv->bpp == 1) {
        memset(p, cv->px[0], (size_t)(x1 - x0));
        return;
    }
    for (long long x = x0; x < x1; x++, p += cv->bpp)
        memcpy(p, cv->px, (size_t)cv->bpp);
}

static void fill(const canvas *cv, long long x, long long y, long long w, long long h)
{
    long long y0 = y < 0 ? 0 : y, y1 = y + h > cv->h ? cv->h : y + h;
    for (long long r = y0; r < y1; r++)
        span(cv, r, x, x + w);
}

ffu_status ffu_draw_fill_rect(ffu_image *img, int x, int y, int w, int h, ffu_color c)
{
    canvas cv;
    ffu_status st = canvas_init(&cv, img, c, "draw_fill_rect");
    if (st < 0) return st;
    fill(&cv, x, y, w, h);
    return FFU_OK;
}

ffu_status ffu_draw_rect(ffu_image *img, int x, int y, int w, int h, int thickness, ffu_color c)
{
    canvas cv;
    ffu_status st = canvas_init(&cv, img, c, "draw_rect");
    if (st < 0) return st;
    long long t = thickness < 1 ? 1 : thickness;
    if (2 * t >= w || 2 * t >= h) {
        fill(&cv, x, y, w, h); /* the bands would meet: it is all outline */
        return FFU_OK;
    }
    fill(&cv, x, y, w, t);
    fill(&cv, x, (long long)y + h - t, w, t);
    fill(&cv, x, (long long)y + t, t, h - 2 * t);
    fill(&cv, (long long)x + w - t, (long long)y + t, t, h - 2 * t);
    return FFU_OK;
}

static long long isqrt(long long v)
{
    long long s = (long long)sqrt((double)v);
    while (s > 0 && s * s > v)
        s--;
    while ((s + 1) * (s + 1) <= v)
        s++;
    return s;
}

ffu_status ffu_draw_point(ffu_image *img, int x, int y, int radius, ffu_color c)
{
    canvas cv;
    ffu_status st = canvas_init(&cv, img, c, "draw_point");
    if (st < 0) return st;
    long long r = radius < 0 ? 0 : radius;
    /* Only rows inside the image: r may be INT_MAX. */
    long long dy0 = -r > -(long long)y ? -r : -(long long)y;
    long long dy1 = r < (long long)cv.h - 1 - y ? r : (long long)cv.h - 1 - y;
    for (long long dy = dy0; dy <= dy1; dy++) {
        long long hw = isqrt(r * r - dy * dy);
        span(&cv, y + dy, x - hw, x + hw + 1);
    }
    return FFU_OK;
}

/* A disc `t` pixels across, as one span [lo[i], hi[i]] of x offsets per row lo0 + i.
 * Centred between pixels for even t, so widths come out exact. */
typedef struct stamp {
    int t, lo0;
    int lo[FFU_DRAW_MAX_THICKNESS], hi[FFU_DRAW_MAX_THICKNESS];
} stamp;

static void stamp_init(stamp *s, int t)
{
    s->t = t;
    s->lo0 = -(t - 1) / 2;
    for (int i = 0; i < t; i++) {
        int e = 2 * i - (t - 1); /* twice the row's distance from the centre */
        s->lo[i] = 1, s->hi[i] = 0;
        for (int j = 0; j < t; j++) {
            int k = 2 * j - (t - 1);
            if (k * k + e * e > t * t) continue;
            if (s->lo[i] > s->hi[i]) s->lo[i] = s->lo0 + j;
            s->hi[i] = s->lo0 + j;
        }
    }
}

static void stamp_draw(const canvas *cv, const stamp *s, int x, int y)
{
    for (int i = 0; i < s->t; i++)
        span(cv, (long long)y + s->lo0 + i, (long long)x + s->lo[i], (long long)x + s->hi[i] + 1);
}

/* Liang-Barsky: cuts the segment to the box; 0 when nothing is left. */
static int clip_segment(double p[4], double xmin, double ymin, double xmax, double ymax)
{
    double dx = p[2] - p[0], dy = p[3] - p[1], t0 = 0, t1 = 1;
    double d[4] = {-dx, dx, -dy, dy};
    double q[4] = {p[0] - xmin, xmax - p[0], p[1] - ymin, ymax - p[1]};
    for (int i = 0; i < 4; i++) {
        if (d[i] == 0) {
            if (q[i] < 0) return 0;
            continue;
        }
        double r = q[i] / d[i];
        if (d[i] < 0) {
            if (r > t1) return 0;
            if (r > t0) t0 = r;
        } else {
            if (r < t0) return 0;
            if (r < t1) t1 = r;
        }
    }
    double x0 = p[0], y0 = p[1];
    p[0] = x0 + t0 * dx, p[1] = y0 + t0 * dy;
    p[2] = x0 + t1 * dx, p[3] = y0 + t1 * dy;
    return 1;
}

static void line(const canvas *cv, const stamp *s, int ax, int ay, int bx, int by)
{
    /* Clip to the image grown by the stamp, so the loop below runs over at most a few
     * image widths and every coordinate fits an int. */
    double m = s->t, p[4] = {ax, ay, bx, by};
    if (!clip_segment(p, -m, -m, cv->w - 1 + m, cv->h - 1 + m)) return;
    int x0 = (int)lround(p[0]), y0 = (int)lround(p[1]);
    int x1 = (int)lround(p[2]), y1 = (int)lround(p[3]);
    int dx = x1 > x0 ? x1 - x0 : x0 - x1, sx = x0 < x1 ? 1 : -1;
    int dy = y1 > y0 ? y0 - y1 : y1 - y0, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) {
        stamp_draw(cv, s, x0, y0);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) err += dy, x0 += sx;
        if (e2 <= dx) err += dx, y0 += sy;
    }
}

static int clamp_thickness(int t)
{
    return t < 1 ? 1 : t > FFU_DRAW_MAX_THICKNESS ? FFU_DRAW_MAX_THICKNESS : t;
}

ffu_status ffu_draw_line(ffu_image *img, int x0, int y0, int x1, int y1, int thickness, ffu_color c)
{
    canvas cv;
    ffu_status st = canvas_init(&cv, img, c, "draw_line");
    if (st < 0) return st;
    stamp s;
    stamp_init(&s, clamp_thickness(thickness));
    line(&cv, &s, x0, y0, x1, y1);
    return FFU_OK;
}

ffu_status ffu_draw_polyline(ffu_image *img, const int *xy, int n, int closed, int thickness,
                             ffu_color c)
{
    canvas cv;
    ffu_status st = canvas_init(&cv, img, c, "draw_polyline");
    if (st < 0) return st;
    if (n < 0 || (n > 0 && !xy))
        return ffu_error_set(FFU_ERR_INVALID, "draw_polyline: %d points at %p", n,
                             (const void *)xy);
    stamp s;
    stamp_init(&s, clamp_thickness(thickness));
    for (int i = 0; i + 1 < n; i++)
        line(&cv, &s, xy[2 * i], xy[2 * i + 1], xy[2 * i + 2], xy[2 * i + 3]);
    if (n == 1 || (closed && n > 2)) line(&cv, &s, xy[2 * n - 2], xy[2 * n - 1], xy[0], xy[1]);
    return FFU_OK;
}

/* ---- text ----------------------------------------------------------------------------- */

/* The next character to draw: ASCII as is, '\n', or 0x80 for anything else, where one
 * UTF-8 sequence (lead byte and its continuation bytes) is one placeholder. */
static int next_char(const unsigned char **p)
{
    int c = *(*p)++;
    if (c < 0x80) return c == '\n' || (c >= 32 && c < 127) ? c : 0x80;
    for (int i = 0; i < 3 && (**p & 0xC0) == 0x80; i++)
        (*p)++;
    return 0x80;
}

static void glyph_draw(const canvas *cv, int c, long long x, long long y, long long s)
{
    const uint8_t *g = font_glyph(c);
    for (int r = 0; r < FONT_GLYPH_H; r++) {
        /* One fill per run of set bits. */
        for (int col = 0; col < FONT_GLYPH_W;) {
            int bit = 1 << (FONT_GLYPH_W - 1 - col);
            if (!(g[r] & bit)) {
                col++;
                continue;
            }
            int end = col;
            while (end < FONT_GLYPH_W && (g[r] & (1 << (FONT_GLYPH_W - 1 - end))))
                end++;
            fill(cv, x + col * s, y + r * s, (end - col) * s, s);
            col = end;
        }
    }
}

static void text_draw(const canvas *fg, const canvas *bg, long long x, long long y,
                      const char *text, long long s)
{
    long long cx = x, cy = y, cw = FONT_CELL_W * s, ch = FONT_CELL_H * s;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        int c = next_char(&p);
        if (c == '\n') {
            cx = x, cy += ch;
            continue;
        }
        if (cx < fg->w && cx + cw > 0 && cy < fg->h && cy + ch > 0) {
            if (bg) fill(bg, cx, cy, cw, ch);
            glyph_draw(fg, c, cx, cy, s);
        }
        cx += cw;
    }
}

void ffu_text_size(const char *text, int scale, int *w, int *h)
{
    long long cols = 0, maxcols = 0, lines = 1;
    if (!text || !*text || scale < 1 || scale > FFU_IMAGE_MAX_DIM) {
        if (w) *w = 0;
        if (h) *h = 0;
        return;
    }
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        if (next_char(&p) == '\n') {
            lines++, cols = 0;
            continue;
        }
        if (++cols > maxcols) maxcols = cols;
    }
    /* Both factors are below 2^31 and scale * cell below 2^18: no overflow. */
    long long tw = maxcols * FONT_CELL_W * scale, th = lines * FONT_CELL_H * scale;
    if (w) *w = tw > INT32_MAX ? INT32_MAX : (int)tw;
    if (h) *h = th > INT32_MAX ? INT32_MAX : (int)th;
}

static ffu_status text_args(const char *text, int scale, const char *what)
{
    if (!text || scale < 1 || scale > FFU_IMAGE_MAX_DIM)
        return ffu_error_set(FFU_ERR_INVALID, "%s: %s text, scale %d (1..%d)", what,
                             text ? "" : "NULL", scale, FFU_IMAGE_MAX_DIM);
    return FFU_OK;
}

ffu_status ffu_draw_text(ffu_image *img, int x, int y, const char *text, int scale, ffu_color fg,
                         const ffu_color *bg)
{
    canvas fc, bc;
    ffu_status st = canvas_init(&fc, img, fg, "draw_text");
    if (st < 0 || (st = text_args(text, scale, "draw_text")) < 0) return st;
    if (bg) canvas_init(&bc, img, *bg, "draw_text");
    text_draw(&fc, bg ? &bc : NULL, x, y, text, scale);
    return FFU_OK;
}

ffu_status ffu_draw_label(ffu_image *img, int x, int y, const char *text, int scale, ffu_color fg,
                          ffu_color bg)
{
    canvas fc, bc;
    ffu_status st = canvas_init(&fc, img, fg, "draw_label");
    if (st < 0 || (st = text_args(text, scale, "draw_label")) < 0) return st;
    canvas_init(&bc, img, bg, "draw_label");
    int tw, th;
    ffu_text_size(text, scale, &tw, &th);
    if (!tw) return FFU_OK;
    /* A margin of one font pixel on the left and top; the cell's blank last column and
     * row give the same on the right and bottom. */
    long long bw = (long long)tw + scale, bh = (long long)th + scale;
    long long by = (long long)y - bh;
    if (by < 0) by = y > 0 ? y : 0;
    fill(&bc, x, by, bw, bh);
    text_draw(&fc, NULL, (long long)x + scale, by + scale, text, scale);
    return FFU_OK;
}
