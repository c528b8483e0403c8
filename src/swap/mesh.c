/* The built-in mesh swapper: no network weights, only geometry. The source face's
 * texture (a crop pyramid built once per source) is warped triangle by triangle onto the
 * target's FaceMesh-468 points with the fixed triangulation of mesh_tables.c, inside the
 * target's region of interest only (the face oval's bounding box). The region mask (the
 * face oval with a lowered forehead, feathered inwards) is drawn once in the source and
 * warped with the texture, so the source's silhouette strip (background, ears, hair)
 * never shows however the pose stretches it; the target's mouth opening and eyes can be
 * cut out of it. The texture's colour is matched to the target's under the mask
 * (Reinhard in Lab through a 16^3 lookup table, or a multi-scale split: the target's low
 * frequencies, the source's detail), then feathered alpha or Poisson blending puts it
 * into the frame. The pose difference between source and target is absorbed by the
 * per-triangle warp; triangles are drawn far-to-near by the target's mesh depth so that
 * a turned face's hidden side is painted over by the visible one. Per-thread scratch
 * grows to the largest face seen and is then reused: nothing is allocated per frame in
 * steady state. Numbers behind the constants: docs/SWAP.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mesh_internal.h"

#define MESH_TEX_MAX 512.0f      /* level 0's oval width at most (px) */
#define MESH_TEX_MIN 24.0f       /* no level with a narrower oval */
#define MESH_PAD 0.12f           /* texture crop margin around the oval, share of its width */
#define MESH_FEATHER 0.03f       /* region mask feather sigma, share of the oval's width */
#define MESH_HOLE_FEATHER 0.008f /* mouth/eye hole edge sigma, share of the target oval */
#define MESH_MS_CELLS 8          /* multi-scale colour: low-pass cells across the oval */
#define MESH_ROI_MARGIN 2        /* px around the oval's bounding box */
/* The oval's top runs along the hairline on many faces: the source's hair would show
 * as a band on the target's forehead. The mask's forehead is lowered to this share of
 * its height above the eyebrows. */
#define MESH_FOREHEAD_KEEP 0.6f
#define LUT_N 16 /* Lab lookup table nodes per axis: bytes 0, 17, ..., 255 */
#define LUT_STEP 17
#define FLAT_STD 1e-3 /* below this spread a channel is only shifted (as the image module) */

enum { G_SOFT, G_HOLES, G_HOLES_BLUR, G_COUNT };

typedef struct depth_idx {
    float d;
    int i;
} depth_idx;

struct mesh_swapper {
    mesh_opts o;
    uint8_t *rgb;
    size_t rgb_cap;
    uint8_t *gray[G_COUNT];
    size_t gray_cap;
    float *cells;
    size_t cells_cap;
    ffu_clone_ctx *clone;
    int *tri;
    depth_idx *order;
    float dst_xy[MESH_N * 2];
    float lut[LUT_N * LUT_N * LUT_N * 3];
};

float mesh_oval_bounds(const float *lm, float box[4])
{
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY;
    for (int i = 0; i < MESH_OVAL_N; i++) {
        float x = lm[3 * mesh_oval[i]], y = lm[3 * mesh_oval[i] + 1];
        x0 = fminf(x0, x), x1 = fmaxf(x1, x);
        y0 = fminf(y0, y), y1 = fmaxf(y1, y);
    }
    box[0] = x0, box[1] = y0, box[2] = x1, box[3] = y1;
    return x1 - x0;
}

static int landmarks_finite(const ffu_face *f)
{
    for (int i = 0; i < 3 * MESH_N; i++)
        if (!isfinite(f->landmarks[i])) return 0;
    return 1;
}

/* ---- masks ------------------------------------------------------------------------------ */

static ffu_status fill_ring(ffu_image *mask, const float *xy, const short *ring, int n,
                            uint8_t value)
{
    float pts[2 * MESH_OVAL_N];
    for (int i = 0; i < n; i++) {
        pts[2 * i] = xy[2 * ring[i]];
        pts[2 * i + 1] = xy[2 * ring[i] + 1];
    }
    return ffu_mask_fill_polygon(mask, pts, n, value);
}

/* The region mask's outline: the oval with its forehead part (above the line through
 * the two eyebrows' upper edges, on the side away from the chin) pulled down towards
 * that line to MESH_FOREHEAD_KEEP of its height. */
static ffu_status fill_outline(ffu_image *mask, const float *xy, uint8_t value)
{
    double bx[2] = {0, 0}, by[2] = {0, 0};
    for (int i = 0; i < MESH_BROW_N; i++) {
        bx[0] += xy[2 * mesh_brow_right[i]] / (double)MESH_BROW_N;
        by[0] += xy[2 * mesh_brow_right[i] + 1] / (double)MESH_BROW_N;
        bx[1] += xy[2 * mesh_brow_left[i]] / (double)MESH_BROW_N;
        by[1] += xy[2 * mesh_brow_left[i] + 1] / (double)MESH_BROW_N;
    }
    double dx = bx[1] - bx[0], dy = by[1] - by[0], len = sqrt(dx * dx + dy * dy);
    float pts[2 * MESH_OVAL_N];
    for (int i = 0; i < MESH_OVAL_N; i++) {
        pts[2 * i] = xy[2 * mesh_oval[i]];
        pts[2 * i + 1] = xy[2 * mesh_oval[i] + 1];
    }
    if (len > 1e-3) {
        /* unit normal of the brow line, turned to point away from the chin (152) */
        double nx = -dy / len, ny = dx / len;
        double chin = (xy[2 * 152] - bx[0]) * nx + (xy[2 * 152 + 1] - by[0]) * ny;
        if (chin > 0) nx = -nx, ny = -ny;
        for (int i = 0; i < MESH_OVAL_N; i++) {
            double d = (pts[2 * i] - bx[0]) * nx + (pts[2 * i + 1] - by[0]) * ny;
            if (d > 0) {
                pts[2 * i] -= (float)(nx * d * (1.0 - MESH_FOREHEAD_KEEP));
                pts[2 * i + 1] -= (float)(ny * d * (1.0 - MESH_FOREHEAD_KEEP));
            }
        }
    }
    return ffu_mask_fill_polygon(mask, pts, MESH_OVAL_N, value);
}

/* Holes (mouth opening, eyes) into a cleared mask; returns whether any was asked. */
static ffu_status fill_holes(ffu_image *mask, const float *xy, int keep_mouth, int keep_eyes)
{
    ffu_status st = FFU_OK;
    if (keep_mouth) st = fill_ring(mask, xy, mesh_lips_inner, MESH_LIPS_N, 255);
    if (!st && keep_eyes) st = fill_ring(mask, xy, mesh_eye_right, MESH_EYE_N, 255);
    if (!st && keep_eyes) st = fill_ring(mask, xy, mesh_eye_left, MESH_EYE_N, 255);
    return st;
}

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Feather that stays inside the hard edge: blur, then keep the inner half of the ramp
 * (2 b - 255), so the mask is 0 on and outside the oval and reaches 255 about 2 sigma
 * inside. The warped texture exists everywhere inside the oval, so nothing that was not
 * warped ever shows. */
static ffu_status feather_inside(const ffu_image *hard, ffu_image *soft, float sigma)
{
    ffu_status st = ffu_mask_gaussian_blur(hard, soft, sigma);
    if (st) return st;
    for (int y = 0; y < soft->height; y++) {
        uint8_t *p = soft->data[0] + (size_t)y * soft->stride[0];
        for (int x = 0; x < soft->width; x++) {
            int v = 2 * p[x] - 255;
            p[x] = (uint8_t)(v < 0 ? 0 : v);
        }
    }
    return FFU_OK;
}

/* ---- source texture ------------------------------------------------------------------- */

void mesh_source_free(mesh_source *s)
{
    if (!s) return;
    for (int i = 0; i < MESH_LEVELS; i++) {
        ffu_image_release(&s->lv[i].tex);
        ffu_image_release(&s->lv[i].alpha);
    }
    memset(s, 0, sizeof *s);
}

/* The region mask in the source crop: the outline, nothing outside the source image (a
 * face cut by the photo's edge), feathered inwards. */
static ffu_status source_alpha(const float *xy, int w, int h, int ox, int oy, int img_w, int img_h,
                               float sigma, ffu_image *alpha)
{
    ffu_image hard = {0};
    ffu_status st = ffu_image_create(&hard, FFU_PIX_GRAY8, w, h);
    if (!st) st = ffu_image_create(alpha, FFU_PIX_GRAY8, w, h);
    if (!st) st = fill_outline(&hard, xy, 255);
    if (!st) {
        for (int y = 0; y < h; y++) {
            uint8_t *p = hard.data[0] + (size_t)y * hard.stride[0];
            int sy = oy + y;
            for (int x = 0; x < w; x++) {
                int sx = ox + x;
                if (sx < 0 || sy < 0 || sx >= img_w || sy >= img_h) p[x] = 0;
            }
        }
        st = feather_inside(&hard, alpha, sigma);
    }
    ffu_image_release(&hard);
    return st;
}

ffu_status mesh_source_build(const ffu_image *img, const ffu_face *face, mesh_source *out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "mesh source: NULL output");
    memset(out, 0, sizeof *out);
    if (!img || !img->data[0] || img->fmt != FFU_PIX_RGB24)
        return ffu_error_set(FFU_ERR_INVALID, "mesh source: needs an RGB24 image");
    if (!face || face->num_landmarks < MESH_N || !face->landmarks || !landmarks_finite(face))
        return ffu_error_set(FFU_ERR_INVALID,
                             "mesh source: the face needs the 468 FaceMesh "
                             "landmarks (has %d)",
                             face ? face->num_landmarks : 0);
    float b[4];
    float ow = mesh_oval_bounds(face->landmarks, b);
    if (!(ow >= 4.0f) || !(ow <= 4.0f * FFU_IMAGE_MAX_DIM))
        return ffu_error_set(FFU_ERR_INVALID, "mesh source: face size %.1f px", (double)ow);
    float pad = MESH_PAD * ow;
    int cx0 = (int)floorf(b[0] - pad), cy0 = (int)floorf(b[1] - pad);
    int cx1 = (int)ceilf(b[2] + pad), cy1 = (int)ceilf(b[3] + pad);
    int cw = cx1 - cx0, ch = cy1 - cy0;
    float cxy[MESH_N * 2];
    for (int i = 0; i < MESH_N; i++) {
        cxy[2 * i] = face->landmarks[3 * i] - (float)cx0 - 0.5f;
        cxy[2 * i + 1] = face->landmarks[3 * i + 1] - (float)cy0 - 0.5f;
    }
    ffu_image crop = {0}, calpha = {0};
    ffu_status st = ffu_image_create(&crop, FFU_PIX_RGB24, cw, ch);
    if (!st) st = ffu_image_crop_pad(img, &crop, cx0, cy0, NULL);
    if (!st)
        st = source_alpha(cxy, cw, ch, cx0, cy0, img->width, img->height,
                          clampf(MESH_FEATHER * ow, 0.8f, 100.0f), &calpha);
    if (st) {
        ffu_image_release(&crop);
        ffu_image_release(&calpha);
        return st;
    }
    float s = ow > MESH_TEX_MAX ? MESH_TEX_MAX / ow : 1.0f;
    mesh_level *lv = &out->lv[0];
    if (s < 1.0f) {
        int tw = (int)lroundf((float)cw * s), th = (int)lroundf((float)ch * s);
        tw = tw < 1 ? 1 : tw, th = th < 1 ? 1 : th;
        if (!(st = ffu_image_create(&lv->tex, FFU_PIX_RGB24, tw, th)) &&
            !(st = ffu_image_create(&lv->alpha, FFU_PIX_GRAY8, tw, th)) &&
            !(st = ffu_image_resize(&crop, &lv->tex, FFU_INTERP_AREA)))
            st = ffu_image_resize(&calpha, &lv->alpha, FFU_INTERP_AREA);
        ffu_image_release(&crop);
        ffu_image_release(&calpha);
        if (st) {
            mesh_source_free(out);
            return st;
        }
    } else {
        lv->tex = crop;
        lv->alpha = calpha;
    }
    /* continuous coordinates scale with the image; pixel centres are 0.5 in */
    double sx = (double)lv->tex.width / cw, sy = (double)lv->tex.height / ch;
    for (int i = 0; i < MESH_N; i++) {
        lv->xy[2 * i] = (float)((cxy[2 * i] + 0.5) * sx - 0.5);
        lv->xy[2 * i + 1] = (float)((cxy[2 * i + 1] + 0.5) * sy - 0.5);
    }
    lv->oval_width = (float)(ow * sx);
    out->levels = 1;
    while (out->levels < MESH_LEVELS &&
           out->lv[out->levels - 1].oval_width * 0.5f >= MESH_TEX_MIN) {
        const mesh_level *prev = &out->lv[out->levels - 1];
        mesh_level *next = &out->lv[out->levels];
        int tw = (prev->tex.width + 1) / 2, th = (prev->tex.height + 1) / 2;
        out->levels++; /* so that a failure below frees this level too */
        if ((st = ffu_image_create(&next->tex, FFU_PIX_RGB24, tw, th)) ||
            (st = ffu_image_create(&next->alpha, FFU_PIX_GRAY8, tw, th)) ||
            (st = ffu_image_resize(&prev->tex, &next->tex, FFU_INTERP_AREA)) ||
            (st = ffu_image_resize(&prev->alpha, &next->alpha, FFU_INTERP_AREA))) {
            mesh_source_free(out);
            return st;
        }
        double fx = (double)tw / prev->tex.width, fy = (double)th / prev->tex.height;
        for (int i = 0; i < MESH_N; i++) {
            next->xy[2 * i] = (float)((prev->xy[2 * i] + 0.5) * fx - 0.5);
            next->xy[2 * i + 1] = (float)((prev->xy[2 * i + 1] + 0.5) * fy - 0.5);
        }
        next->oval_width = (float)(prev->oval_width * fx);
    }
    return FFU_OK;
}

ffu_status mesh_source_copy(const mesh_source *src, mesh_source *dst)
{
    if (!src || !dst) return ffu_error_set(FFU_ERR_INVALID, "mesh source copy: NULL argument");
    mesh_source tmp = {0};
    for (int i = 0; i < src->levels; i++) {
        tmp.levels = i + 1;
        ffu_status st = ffu_image_clone(&tmp.lv[i].tex, &src->lv[i].tex);
        if (!st) st = ffu_image_clone(&tmp.lv[i].alpha, &src->lv[i].alpha);
        if (st) {
            mesh_source_free(&tmp);
            return st;
        }
        memcpy(tmp.lv[i].xy, src->lv[i].xy, sizeof tmp.lv[i].xy);
        tmp.lv[i].oval_width = src->lv[i].oval_width;
    }
    mesh_source_free(dst);
    *dst = tmp;
    return FFU_OK;
}

/* ---- the swapper ---------------------------------------------------------------------- */

ffu_status mesh_swapper_create(const mesh_opts *o, mesh_swapper **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "mesh swapper: NULL output");
    *out = NULL;
    if (!o || (unsigned)o->colour > FFU_SWAP_COLOUR_MULTISCALE ||
        (unsigned)o->blend > FFU_SWAP_BLEND_POISSON)
        return ffu_error_set(FFU_ERR_INVALID, "mesh swapper: bad options");
    mesh_swapper *m = calloc(1, sizeof *m);
    if (!m) return ffu_error_set(FFU_ERR_NOMEM, "mesh swapper: out of memory");
    m->o = *o;
    m->tri = malloc((size_t)mesh_tri_count * 3 * sizeof *m->tri);
    m->order = malloc((size_t)mesh_tri_count * sizeof *m->order);
    ffu_status st = FFU_OK;
    if (!m->tri || !m->order)
        st = ffu_error_set(FFU_ERR_NOMEM, "mesh swapper: out of memory");
    else if (o->blend == FFU_SWAP_BLEND_POISSON)
        st = ffu_clone_ctx_create(&m->clone);
    if (st) {
        mesh_swapper_destroy(m);
        return st;
    }
    *out = m;
    return FFU_OK;
}

void mesh_swapper_destroy(mesh_swapper *m)
{
    if (!m) return;
    free(m->rgb);
    for (int i = 0; i < G_COUNT; i++)
        free(m->gray[i]);
    free(m->cells);
    ffu_clone_ctx_destroy(m->clone);
    free(m->tri);
    free(m->order);
    free(m);
}

static ffu_status grow(mesh_swapper *m, int w, int h)
{
    size_t px = (size_t)w * h;
    if (px * 3 > m->rgb_cap) {
        free(m->rgb);
        m->rgb_cap = 0;
        if (!(m->rgb = malloc(px * 3)))
            return ffu_error_set(FFU_ERR_NOMEM, "mesh swapper: out of memory (%dx%d)", w, h);
        m->rgb_cap = px * 3;
    }
    if (px > m->gray_cap) {
        m->gray_cap = 0;
        for (int i = 0; i < G_COUNT; i++) {
            free(m->gray[i]);
            m->gray[i] = NULL;
        }
        for (int i = 0; i < G_COUNT; i++)
            if (!(m->gray[i] = malloc(px)))
                return ffu_error_set(FFU_ERR_NOMEM, "mesh swapper: out of memory (%dx%d)", w, h);
        m->gray_cap = px;
    }
    return FFU_OK;
}

static int cmp_depth(const void *a, const void *b)
{
    const depth_idx *x = a, *y = b;
    if (x->d != y->d) return x->d > y->d ? -1 : 1; /* far (large z) first */
    return x->i - y->i;
}

/* Triangles ordered far to near by the target's depth (MediaPipe z grows away from the
 * camera), so where a turned face folds over, the visible side is drawn last. */
static void sort_triangles(mesh_swapper *m, const float *lm)
{
    for (int t = 0; t < mesh_tri_count; t++) {
        const int16_t *v = mesh_tris[t];
        float d = lm[3 * v[0] + 2] + lm[3 * v[1] + 2] + lm[3 * v[2] + 2];
        m->order[t].d = isfinite(d) ? d : 0.0f;
        m->order[t].i = t;
    }
    qsort(m->order, (size_t)mesh_tri_count, sizeof *m->order, cmp_depth);
    for (int t = 0; t < mesh_tri_count; t++) {
        const int16_t *v = mesh_tris[m->order[t].i];
        m->tri[3 * t] = v[0], m->tri[3 * t + 1] = v[1], m->tri[3 * t + 2] = v[2];
    }
}

/* ---- colour ----------------------------------------------------------------------------- */

/* Lab mean and deviation of img's pixels weighted by mask (every second row and
 * column: the statistics of a face region barely change, the cost drops 4x). */
/* Samples at most about LAB_STATS_SAMPLES pixels: a mean and a spread need no more,
 * and each sample costs a Lab conversion (a 630 x 510 face: 3.6 ms on every pixel of a
 * 2-pixel grid, under 1 ms on the capped one). Faces up to ~280 px keep the 2-pixel grid. */
#define LAB_STATS_SAMPLES 20000

static int lab_stats(const ffu_image *img, const ffu_image *mask, double mean[3], double sd[3])
{
    double sw = 0, s1[3] = {0}, s2[3] = {0};
    int step = (int)ceil(sqrt((double)img->width * img->height / LAB_STATS_SAMPLES));
    if (step < 2) step = 2;
    for (int y = 0; y < img->height; y += step) {
        const uint8_t *p = img->data[0] + (size_t)y * img->stride[0];
        const uint8_t *mk = mask->data[0] + (size_t)y * mask->stride[0];
        for (int x = 0; x < img->width; x += step) {
            if (!mk[x]) continue;
            float lab[3];
            ffu_color_rgb_to_lab(p + 3 * x, lab);
            double w = mk[x];
            sw += w;
            for (int c = 0; c < 3; c++) {
                s1[c] += w * lab[c];
                s2[c] += w * (double)lab[c] * lab[c];
            }
        }
    }
    if (!(sw > 0)) return 0;
    for (int c = 0; c < 3; c++) {
        mean[c] = s1[c] / sw;
        double var = s2[c] / sw - mean[c] * mean[c];
        sd[c] = var > 0 ? sqrt(var) : 0;
    }
    return 1;
}

/* Reinhard transfer in Lab, applied through a table: the map rgb -> Lab -> (v - mean) *
 * ratio + mean' -> rgb is evaluated on a 16^3 grid of byte triples and interpolated
 * trilinearly per pixel (within a level or two of the exact map, at a fraction of its
 * cost: two Lab conversions per node instead of per pixel). Only pixels under the mask
 * are written. */
static void colour_lab(mesh_swapper *m, ffu_image *roi, const ffu_image *tgt, const ffu_image *mask)
{
    double mc[3], sc[3], mw[3], sw[3];
    if (!lab_stats(roi, mask, mc, sc) || !lab_stats(tgt, mask, mw, sw)) return;
    double ratio[3];
    for (int c = 0; c < 3; c++)
        ratio[c] = sc[c] < FLAT_STD ? 1.0 : sw[c] / sc[c];
    float *lut = m->lut;
    for (int r = 0; r < LUT_N; r++)
        for (int g = 0; g < LUT_N; g++)
            for (int b = 0; b < LUT_N; b++) {
                uint8_t rgb[3] = {(uint8_t)(r * LUT_STEP), (uint8_t)(g * LUT_STEP),
                                  (uint8_t)(b * LUT_STEP)};
                float lab[3];
                ffu_color_rgb_to_lab(rgb, lab);
                for (int c = 0; c < 3; c++)
                    lab[c] = (float)((lab[c] - mc[c]) * ratio[c] + mw[c]);
                ffu_color_lab_to_rgb(lab, rgb);
                float *o = lut + ((r * LUT_N + g) * LUT_N + b) * 3;
                o[0] = rgb[0], o[1] = rgb[1], o[2] = rgb[2];
            }
    for (int y = 0; y < roi->height; y++) {
        uint8_t *p = roi->data[0] + (size_t)y * roi->stride[0];
        const uint8_t *mk = mask->data[0] + (size_t)y * mask->stride[0];
        for (int x = 0; x < roi->width; x++, p += 3) {
            if (!mk[x]) continue;
            int i[3];
            float f[3];
            for (int c = 0; c < 3; c++) {
                int q = p[c] / LUT_STEP;
                q = q > LUT_N - 2 ? LUT_N - 2 : q;
                i[c] = q;
                f[c] = (float)(p[c] - q * LUT_STEP) * (1.0f / LUT_STEP);
            }
            const float *n000 = lut + ((i[0] * LUT_N + i[1]) * LUT_N + i[2]) * 3;
            const int dr = LUT_N * LUT_N * 3, dg = LUT_N * 3, db = 3;
            for (int c = 0; c < 3; c++) {
                const float *q = n000 + c;
                float c00 = q[0] + f[2] * (q[db] - q[0]);
                float c01 = q[dg] + f[2] * (q[dg + db] - q[dg]);
                float c10 = q[dr] + f[2] * (q[dr + db] - q[dr]);
                float c11 = q[dr + dg] + f[2] * (q[dr + dg + db] - q[dr + dg]);
                float c0 = c00 + f[1] * (c01 - c00), c1 = c10 + f[1] * (c11 - c10);
                float v = c0 + f[0] * (c1 - c0) + 0.5f;
                p[c] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    }
}

/* Multi-scale colour: roi += lowpass(target) - lowpass(roi), the low-pass being masked
 * means over cells of about 1/MESH_MS_CELLS of the oval, smoothed 3x3 and interpolated
 * bilinearly; cells without face pixels take their neighbours' correction. The source
 * keeps its detail, the target gives its shading and skin tone. */
static ffu_status colour_multiscale(mesh_swapper *m, ffu_image *roi, const ffu_image *tgt,
                                    const ffu_image *wmask, float ow)
{
    int w = roi->width, h = roi->height;
    int B = (int)lroundf(ow / MESH_MS_CELLS);
    B = B < 4 ? 4 : B;
    int gw = (w + B - 1) / B, gh = (h + B - 1) / B, nc = gw * gh;
    size_t need = (size_t)nc * 14 + (size_t)nc; /* sums, smoothed sums, valid flags */
    if (need > m->cells_cap) {
        free(m->cells);
        m->cells_cap = 0;
        if (!(m->cells = malloc(need * sizeof *m->cells)))
            return ffu_error_set(FFU_ERR_NOMEM, "mesh swapper: out of memory");
        m->cells_cap = need;
    }
    float *acc = m->cells, *sm = acc + (size_t)nc * 7, *valid = sm + (size_t)nc * 7;
    memset(acc, 0, (size_t)nc * 7 * sizeof *acc);
    for (int y = 0; y < h; y++) {
        const uint8_t *mk = wmask->data[0] + (size_t)y * wmask->stride[0];
        const uint8_t *s = roi->data[0] + (size_t)y * roi->stride[0];
        const uint8_t *t = tgt->data[0] + (size_t)y * tgt->stride[0];
        float *row = acc + (size_t)(y / B) * gw * 7;
        for (int x = 0; x < w; x++) {
            if (!mk[x]) continue;
            float wt = mk[x], *c = row + (x / B) * 7;
            c[0] += wt;
            c[1] += wt * s[3 * x], c[2] += wt * s[3 * x + 1], c[3] += wt * s[3 * x + 2];
            c[4] += wt * t[3 * x], c[5] += wt * t[3 * x + 1], c[6] += wt * t[3 * x + 2];
        }
    }
    /* 3x3 binomial smoothing of the sums (normalised convolution), then the correction */
    for (int j = 0; j < gh; j++)
        for (int i = 0; i < gw; i++) {
            float *o = sm + ((size_t)j * gw + i) * 7;
            memset(o, 0, 7 * sizeof *o);
            for (int dj = -1; dj <= 1; dj++)
                for (int di = -1; di <= 1; di++) {
                    int jj = j + dj, ii = i + di;
                    if (jj < 0 || jj >= gh || ii < 0 || ii >= gw) continue;
                    float k = (float)((2 - abs(dj)) * (2 - abs(di)));
                    const float *c = acc + ((size_t)jj * gw + ii) * 7;
                    for (int q = 0; q < 7; q++)
                        o[q] += k * c[q];
                }
        }
    /* the correction per cell (into acc, now free); valid when the cell's neighbourhood
     * holds a few face pixels' weight */
    for (int idx = 0; idx < nc; idx++) {
        const float *o = sm + (size_t)idx * 7;
        valid[idx] = o[0] > 255.0f * 4 ? 1.0f : 0.0f;
        float inv = valid[idx] > 0 ? 1.0f / o[0] : 0.0f;
        for (int q = 0; q < 3; q++)
            acc[(size_t)idx * 7 + q] = (o[4 + q] - o[1 + q]) * inv;
    }
    /* fill cells without face from their valid neighbours, ring by ring */
    for (int round = 0; round < gw + gh; round++) {
        int missing = 0, filled = 0;
        for (int j = 0; j < gh; j++)
            for (int i = 0; i < gw; i++) {
                int idx = j * gw + i;
                if (valid[idx] > 0) continue;
                missing++;
                float sum[3] = {0, 0, 0};
                int n = 0;
                for (int dj = -1; dj <= 1; dj++)
                    for (int di = -1; di <= 1; di++) {
                        int jj = j + dj, ii = i + di;
                        if (jj < 0 || jj >= gh || ii < 0 || ii >= gw) continue;
                        int k = jj * gw + ii;
                        if (valid[k] == 1.0f) { /* valid before this round */
                            for (int q = 0; q < 3; q++)
                                sum[q] += acc[(size_t)k * 7 + q];
                            n++;
                        }
                    }
                if (n) {
                    for (int q = 0; q < 3; q++)
                        acc[(size_t)idx * 7 + q] = sum[q] / n;
                    valid[idx] = 2.0f; /* becomes usable next round */
                    filled++;
                }
            }
        for (int k = 0; k < nc; k++)
            if (valid[k] == 2.0f) valid[k] = 1.0f;
        if (!missing || !filled) break;
    }
    for (int y = 0; y < h; y++) {
        float v = clampf(((float)y + 0.5f) / B - 0.5f, 0.0f, (float)(gh - 1));
        int j0 = (int)v, j1 = j0 + 1 < gh ? j0 + 1 : j0;
        float fy = v - (float)j0;
        uint8_t *p = roi->data[0] + (size_t)y * roi->stride[0];
        const float *r0 = acc + (size_t)j0 * gw * 7, *r1 = acc + (size_t)j1 * gw * 7;
        for (int x = 0; x < w; x++) {
            float u = clampf(((float)x + 0.5f) / B - 0.5f, 0.0f, (float)(gw - 1));
            int i0 = (int)u, i1 = i0 + 1 < gw ? i0 + 1 : i0;
            float fx = u - (float)i0;
            for (int q = 0; q < 3; q++) {
                float top = r0[i0 * 7 + q] + fx * (r0[i1 * 7 + q] - r0[i0 * 7 + q]);
                float bot = r1[i0 * 7 + q] + fx * (r1[i1 * 7 + q] - r1[i0 * 7 + q]);
                float val = (float)p[3 * x + q] + top + fy * (bot - top);
                p[3 * x + q] = (uint8_t)clampf(val + 0.5f, 0.0f, 255.0f);
            }
        }
    }
    return FFU_OK;
}

static const mesh_level *pick_level(const mesh_source *src, float ow)
{
    /* the coarsest level still at least as wide as the target: minification under 2x,
     * so bilinear sampling does not alias */
    for (int i = src->levels - 1; i > 0; i--)
        if (src->lv[i].oval_width >= ow) return &src->lv[i];
    return &src->lv[0];
}

ffu_status mesh_swap_face(mesh_swapper *m, const mesh_source *src, ffu_image *frame,
                          const ffu_face *target, ffu_swap_timing *t)
{
    if (!m || !src || !frame || !target)
        return ffu_error_set(FFU_ERR_INVALID, "mesh swap: NULL argument");
    if (src->levels < 1) return ffu_error_set(FFU_ERR_INVALID, "mesh swap: no source set");
    if (!frame->data[0] || frame->fmt != FFU_PIX_RGB24)
        return ffu_error_set(FFU_ERR_INVALID, "mesh swap: the frame must be RGB24");
    if (target->num_landmarks < MESH_N || !target->landmarks)
        return ffu_error_set(FFU_ERR_INVALID,
                             "mesh swap: the target face needs the 468 FaceMesh "
                             "landmarks (has %d)",
                             target->num_landmarks);
    if (!landmarks_finite(target))
        return ffu_error_set(FFU_ERR_INVALID, "mesh swap: target landmarks are not finite");
    int64_t t0 = ffu_clock_ns();
    const float *lm = target->landmarks;
    float b[4];
    float ow = mesh_oval_bounds(lm, b);
    if (!(ow >= 2.0f)) return FFU_OK; /* nothing to paint */
    /* clamp before converting: landmarks far off the frame must not overflow an int */
    float fw = (float)frame->width, fh = (float)frame->height;
    int x0 = (int)floorf(clampf(b[0], 0, fw)) - MESH_ROI_MARGIN;
    int y0 = (int)floorf(clampf(b[1], 0, fh)) - MESH_ROI_MARGIN;
    int x1 = (int)ceilf(clampf(b[2], 0, fw)) + MESH_ROI_MARGIN;
    int y1 = (int)ceilf(clampf(b[3], 0, fh)) + MESH_ROI_MARGIN;
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > frame->width ? frame->width : x1, y1 = y1 > frame->height ? frame->height : y1;
    if (x1 <= x0 || y1 <= y0 || b[2] < 0 || b[3] < 0 || b[0] > fw || b[1] > fh)
        return FFU_OK; /* off the frame */
    int w = x1 - x0, h = y1 - y0;
    ffu_status st = grow(m, w, h);
    if (st) return st;
    ffu_image roi, fv, g[G_COUNT];
    ffu_image_wrap(&roi, FFU_PIX_RGB24, w, h, m->rgb, w * 3);
    for (int i = 0; i < G_COUNT; i++)
        ffu_image_wrap(&g[i], FFU_PIX_GRAY8, w, h, m->gray[i], w);
    if ((st = ffu_image_view(&fv, frame, x0, y0, w, h)) || (st = ffu_image_copy(&fv, &roi)))
        return st;
    float *xy = m->dst_xy;
    for (int i = 0; i < MESH_N; i++) {
        xy[2 * i] = lm[3 * i] - 0.5f - (float)x0;
        xy[2 * i + 1] = lm[3 * i + 1] - 0.5f - (float)y0;
    }
    const mesh_level *lv = pick_level(src, ow);
    sort_triangles(m, lm);
    st = ffu_image_warp_piecewise(&lv->tex, &roi, lv->xy, xy, MESH_N, m->tri, mesh_tri_count, NULL);
    if (st) return st;
    int64_t t1 = ffu_clock_ns();

    /* region mask: the source's, carried by the same warp, minus the target's holes */
    ffu_image *soft = &g[G_SOFT];
    size_t n = (size_t)w * h;
    memset(m->gray[G_SOFT], 0, n);
    st = ffu_image_warp_piecewise(&lv->alpha, soft, lv->xy, xy, MESH_N, m->tri, mesh_tri_count,
                                  NULL);
    if (st) return st;
    if (m->o.keep_mouth || m->o.keep_eyes) {
        memset(m->gray[G_HOLES], 0, n);
        if ((st = fill_holes(&g[G_HOLES], xy, m->o.keep_mouth, m->o.keep_eyes)) ||
            (st = ffu_mask_gaussian_blur(&g[G_HOLES], &g[G_HOLES_BLUR],
                                         clampf(MESH_HOLE_FEATHER * ow, 0.5f, 100.0f))))
            return st;
        /* a narrow ramp centred on the hole's edge: lids and lips stay the source's, the
         * opening is the target's */
        const uint8_t *hb = m->gray[G_HOLES_BLUR], *hh = m->gray[G_HOLES];
        uint8_t *sp = m->gray[G_SOFT];
        for (size_t i = 0; i < n; i++) {
            int v = hh[i] ? 0 : (sp[i] * (255 - hb[i]) + 127) / 255;
            sp[i] = (uint8_t)v;
        }
    }
    size_t covered = 0;
    for (size_t i = 0; i < n; i++)
        covered += m->gray[G_SOFT][i] != 0;
    int64_t t2 = ffu_clock_ns();
    if (t) t->warp_ms += (double)(t1 - t0) * 1e-6, t->mask_ms += (double)(t2 - t1) * 1e-6;
    if (!covered) return FFU_OK;

    /* colour: the warped source's region made to look like the target's */
    if (m->o.colour == FFU_SWAP_COLOUR_LAB)
        colour_lab(m, &roi, &fv, soft);
    else if (m->o.colour == FFU_SWAP_COLOUR_MULTISCALE &&
             (st = colour_multiscale(m, &roi, &fv, soft, ow)))
        return st;
    int64_t t3 = ffu_clock_ns();

    if (m->o.blend == FFU_SWAP_BLEND_FEATHER)
        st = ffu_image_blend_mask(frame, &roi, soft, x0, y0);
    else
        st = ffu_image_seamless_clone(m->clone, &roi, soft, frame, x0, y0);
    if (st) return st;
    if (t) {
        t->colour_ms += (double)(t3 - t2) * 1e-6;
        t->blend_ms += (double)(ffu_clock_ns() - t3) * 1e-6;
    }
    return FFU_OK;
}

/* ---- region mask for aligned crops (ONNX swappers) ------------------------------------ */

static ffu_status ensure_gray(ffu_image *img, int size)
{
    if (img->data[0] && img->fmt == FFU_PIX_GRAY8 && img->width == size && img->height == size)
        return FFU_OK;
    ffu_image_release(img);
    return ffu_image_create(img, FFU_PIX_GRAY8, size, size);
}

ffu_status mesh_region_mask_crop(const ffu_face *face, const double fwd[6], int size,
                                 int keep_mouth, int keep_eyes, float blur, ffu_image *mask,
                                 ffu_image *tmp)
{
    if (!face || !fwd || !mask || !tmp || size < 1 || size > 4096)
        return ffu_error_set(FFU_ERR_INVALID, "region mask: bad arguments");
    if (face->num_landmarks < MESH_N || !face->landmarks || !landmarks_finite(face))
        return ffu_error_set(FFU_ERR_INVALID,
                             "region mask: needs the 468 FaceMesh landmarks "
                             "(the face has %d)",
                             face->num_landmarks);
    ffu_status st;
    if ((st = ensure_gray(mask, size)) || (st = ensure_gray(tmp, size))) return st;
    float xy[MESH_N * 2];
    float x0 = INFINITY, x1 = -INFINITY;
    for (int i = 0; i < MESH_N; i++) {
        float x, y;
        ffu_transform_point(fwd, face->landmarks[3 * i], face->landmarks[3 * i + 1], &x, &y);
        xy[2 * i] = x - 0.5f;
        xy[2 * i + 1] = y - 0.5f;
    }
    for (int i = 0; i < MESH_OVAL_N; i++)
        x0 = fminf(x0, xy[2 * mesh_oval[i]]), x1 = fmaxf(x1, xy[2 * mesh_oval[i]]);
    for (int y = 0; y < size; y++)
        memset(mask->data[0] + (size_t)y * mask->stride[0], 0, (size_t)size);
    if ((st = fill_ring(mask, xy, mesh_oval, MESH_OVAL_N, 255))) return st;
    if (blur > 0) {
        if ((st = ffu_image_copy(mask, tmp)) ||
            (st = feather_inside(tmp, mask, clampf(blur * (x1 - x0), 0.5f, 100.0f))))
            return st;
    }
    if (keep_mouth || keep_eyes) {
        for (int y = 0; y < size; y++)
            memset(tmp->data[0] + (size_t)y * tmp->stride[0], 0, (size_t)size);
        if ((st = fill_holes(tmp, xy, keep_mouth, keep_eyes))) return st;
        for (int y = 0; y < size; y++) {
            uint8_t *p = mask->data[0] + (size_t)y * mask->stride[0];
            const uint8_t *q = tmp->data[0] + (size_t)y * tmp->stride[0];
            for (int x = 0; x < size; x++)
                if (q[x]) p[x] = 0;
        }
    }
    return FFU_OK;
}
