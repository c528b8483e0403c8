/* The face detector: one mechanism for every detector family. A family decoder
 * (detect_<family>.c) turns raw network outputs into candidates in network-input
 * pixels; this file does the rest once: choosing what to feed (letterbox, stretch, the
 * image at its own size for dynamic-input models, or a square model at the frame's
 * aspect ratio where its zoo row says so and its graph plans there: BlazeFace on a
 * 640x480 frame computes 256x192 instead of 256x256 with 64 rows of bars, same AP;
 * docs/EVAL.md "Detectors at the frame's aspect"), tiles for small faces (for those
 * square models as few and as large as a level needs, up to four sides: docs/EVAL.md
 * "Small faces in a 1080p frame"), the
 * rotated passes for sideways photos, mapping back to image coordinates, thresholds,
 * NMS or MediaPipe-style weighted merging, sorting and the face-count cap.
 *
 * Geometry: every network input ("view") has one affine map net -> image in continuous
 * coordinates (face_net_fill_warp's convention); it is the composition of the view's
 * scale/offset in the upright frame and the rotation upright frame -> image. A face
 * found at rotation r appears turned r degrees clockwise in the image: rotating the
 * image r degrees counter-clockwise makes it upright. With opts.rotations, the frame is
 * searched upright, and unless a second model, the referee, confirms that the best face
 * found stands upright (upright_confirmed), at the other three rotations too; a
 * candidate belongs to a view only if its keypoints stand upright there (kps_upright),
 * and a face seen in several views goes to the one the referee finds it best in
 * (settle_views).
 *
 * Frames in device memory (ffu_detector_detect_gpu, backend cuda) take the same path:
 * a view is a matrix whatever holds the pixels, and det_src only tells face_net which
 * fill to use.
 *
 * A cascade (MTCNN, det_family.search) is not one network run over views: each rotation
 * is one view, the upright frame, which the family searches itself at every scale it
 * needs (host images only); its candidates join the same mapping, suppression and
 * sorting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

#define DET_MAX_BATCH 8         /* views per network run */
#define DET_MAX_CANDIDATES 5000 /* kept before NMS (OpenCV's FaceDetectorYN top_k) */
#define DET_TILE_SIDE 640       /* dynamic-input models: tile input side */
/* models fed at the frame's aspect: largest tile side, in declared sides (BlazeFace: 1024) */
#define DET_FREE_TILE_SCALE 4

typedef struct det_view {
    double m[6];      /* network input -> image */
    int w, h;         /* network input size */
    unsigned interior; /* tile edges inside the image: 1 left, 2 top, 4 right, 8 bottom */
    int level;        /* 0 whole frame, 1.. tile levels */
    float max_face;   /* tiles: larger boxes belong to a coarser level (image px); 0 = any */
} det_view;

struct ffu_detector {
    face_net net;
    /* dynamic-input models: a second session for the fixed-size tiles, so that the
     * whole-frame and tile shapes each keep their plan (opened on first use) */
    face_net tiles;
    char *spec, *backend; /* copies of the options' strings, for opening `tiles` */
    const det_family *fam;
    void *state;
    ffu_detector_opts opts;
    float min_score, nms_iou;
    int dynamic;  /* fed at the image's own size (any input size, zoo size 0) */
    int side_cap; /* dynamic models: longest side fed to the net */
    int aspect;   /* a square model fed at the frame's aspect (zoo row `aspect`, and the
                     graph plans off its square): sides multiple of `align`, tiles
                     (square) on `tiles` */
    int align, side; /* ... and the declared square's side */
    det_cands tmp;  /* one slot's candidates, network coordinates */
    det_cands pass; /* one rotation's candidates, image coordinates */
    det_cands all;  /* survivors of every rotation */
    det_view *views;
    int nviews, vcap;
    unsigned char *dead; /* NMS scratch */
    int dead_cap;
    /* opts.rotations: the judge of a face seen at several rotations (orientation_vote),
     * opened on first use; referee_failed once it could not be */
    ffu_detector *referee;
    int referee_failed;
    ffu_image ref_crop;
    ffu_face_list ref_faces;
    ffu_image upright; /* cascades: a turned frame's upright copy */
};

/* The frame being searched: a host image or (backend cuda) a device one. */
typedef struct det_src {
    const ffu_image *img;
    const ffu_gpu_image *gimg;
    int w, h;
} det_src;

static det_src host_src(const ffu_image *img)
{
    det_src s = {img, NULL, img->width, img->height};
    return s;
}

static det_src device_src(const ffu_gpu_image *img)
{
    det_src s = {NULL, img, img->width, img->height};
    return s;
}

static ffu_status fill_src(face_net *n, int b, const det_src *src, const double m[6])
{
    return src->gimg ? face_net_fill_warp_gpu(n, b, src->gimg, m)
                     : face_net_fill_warp(n, b, src->img, m);
}

static const det_family *const families[] = {
    &det_family_blazeface, &det_family_yunet,     &det_family_scrfd,
    &det_family_retinaface, &det_family_ultraface, &det_family_yolo5face,
    &det_family_yunet2022,  &det_family_mtcnn,
};

/* ---- small helpers ------------------------------------------------------------------- */

det_cand *det_cands_push(det_cands *c)
{
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 256;
        det_cand *v = realloc(c->v, (size_t)cap * sizeof *v);
        if (!v) {
            ffu_error_set(FFU_ERR_NOMEM, "detector candidates (%d)", cap);
            return NULL;
        }
        c->v = v;
        c->cap = cap;
    }
    det_cand *r = &c->v[c->n++];
    memset(r, 0, sizeof *r);
    return r;
}

det_cand *det_cands_push_box(det_cands *c, float score, float cx, float cy, float w, float h)
{
    det_cand *r = det_cands_push(c);
    if (r) {
        r->score = score;
        r->box[0] = cx - w / 2;
        r->box[1] = cy - h / 2;
        r->box[2] = cx + w / 2;
        r->box[3] = cy + h / 2;
    }
    return r;
}

const float *det_output_slot(const face_net *n, int i, int b, int64_t *numel, ffu_nn_tensor *t)
{
    ffu_nn_tensor tmp;
    if (!t)
        t = &tmp;
    if (i < 0 || i >= face_net_num_outputs(n)) {
        ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: missing output %d", n->path, i);
        return NULL;
    }
    const float *p = face_net_output(n, i, t);
    if (!p)
        return NULL;
    if (t->rank < 1) {
        ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: output '%s' is a scalar", n->path, t->name);
        return NULL;
    }
    int64_t total = 1;
    for (int k = 0; k < t->rank; k++)
        total *= t->dims[k];
    /* Outputs carry the batch first; rank-2 [anchors, C] outputs of batch-free exports
     * (InsightFace's SCRFD) get the items stacked along dim 0 by the engine. */
    int64_t per;
    if (total % n->batch == 0 && t->dims[0] % n->batch == 0)
        per = total / n->batch;
    else {
        ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: output '%s' has dim 0 = %lld for a batch of %d",
                      n->path, t->name, (long long)t->dims[0], n->batch);
        return NULL;
    }
    if (numel)
        *numel = per;
    return p + (size_t)b * (size_t)per;
}

static void map_point(const double m[6], float x, float y, float *ox, float *oy)
{
    *ox = (float)(m[0] * x + m[1] * y + m[2]);
    *oy = (float)(m[3] * x + m[4] * y + m[5]);
}

static void compose(const double a[6], const double b[6], double out[6])
{
    /* out = a o b: first b, then a */
    double r[6] = {
        a[0] * b[0] + a[1] * b[3], a[0] * b[1] + a[1] * b[4], a[0] * b[2] + a[1] * b[5] + a[2],
        a[3] * b[0] + a[4] * b[3], a[3] * b[1] + a[4] * b[4], a[3] * b[2] + a[4] * b[5] + a[5],
    };
    memcpy(out, r, sizeof r);
}

/* Upright frame -> image for a face turned `rot` degrees clockwise in an W x H image;
 * *uw x *uh is the upright frame's size. */
static void rotation_map(int rot, int W, int H, double m[6], int *uw, int *uh)
{
    double id[6] = {1, 0, 0, 0, 1, 0};
    double r90[6] = {0, -1, W, 1, 0, 0};    /* upright = image turned 90 ccw */
    double r180[6] = {-1, 0, W, 0, -1, H};
    double r270[6] = {0, 1, 0, -1, 0, H};
    const double *src = rot == 90 ? r90 : rot == 180 ? r180 : rot == 270 ? r270 : id;
    memcpy(m, src, sizeof id);
    *uw = rot == 90 || rot == 270 ? H : W;
    *uh = rot == 90 || rot == 270 ? W : H;
}

static float iou(const float a[4], const float b[4])
{
    float ix = fminf(a[2], b[2]) - fmaxf(a[0], b[0]);
    float iy = fminf(a[3], b[3]) - fmaxf(a[1], b[1]);
    if (ix <= 0 || iy <= 0)
        return 0;
    float inter = ix * iy;
    float ua = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    return ua > 0 ? inter / ua : 0;
}

static int by_score_desc(const void *pa, const void *pb)
{
    const det_cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    /* a total order keeps results independent of qsort's internals */
    if (a->box[0] != b->box[0])
        return a->box[0] < b->box[0] ? -1 : 1;
    return a->box[1] < b->box[1] ? -1 : a->box[1] > b->box[1];
}

/* Sorts c by score, keeps at most DET_MAX_CANDIDATES, then suppresses overlaps in place:
 * plain greedy NMS, or (weighted) MediaPipe's merging, where each kept detection is the
 * score-weighted mean of the cluster it overlaps (IoU > thr), with the best score. */
static ffu_status suppress(ffu_detector *d, det_cands *c, float thr, int weighted)
{
    if (c->n == 0)
        return FFU_OK;
    qsort(c->v, (size_t)c->n, sizeof *c->v, by_score_desc);
    if (c->n > DET_MAX_CANDIDATES)
        c->n = DET_MAX_CANDIDATES;
    if (d->dead_cap < c->n) {
        unsigned char *nd = realloc(d->dead, (size_t)c->n);
        if (!nd)
            return ffu_error_set(FFU_ERR_NOMEM, "NMS scratch (%d)", c->n);
        d->dead = nd;
        d->dead_cap = c->n;
    }
    memset(d->dead, 0, (size_t)c->n);
    int kept = 0;
    for (int i = 0; i < c->n; i++) {
        if (d->dead[i])
            continue;
        det_cand best = c->v[i];
        double wsum = 0, acc[4 + 2 * FFU_FACE_NUM_KPS] = {0};
        for (int j = i; j < c->n; j++) {
            /* keypoints of two rotations do not average */
            if (d->dead[j] || (weighted && c->v[j].rotation != best.rotation))
                continue;
            if (j != i && iou(best.box, c->v[j].box) <= thr)
                continue;
            d->dead[j] = 1;
            if (weighted) {
                double w = c->v[j].score;
                wsum += w;
                for (int k = 0; k < 4; k++)
                    acc[k] += w * c->v[j].box[k];
                for (int k = 0; k < 2 * FFU_FACE_NUM_KPS; k++)
                    acc[4 + k] += w * c->v[j].kps[k];
            }
        }
        if (weighted && wsum > 0) {
            for (int k = 0; k < 4; k++)
                best.box[k] = (float)(acc[k] / wsum);
            for (int k = 0; k < 2 * FFU_FACE_NUM_KPS; k++)
                best.kps[k] = (float)(acc[4 + k] / wsum);
        }
        c->v[kept++] = best; /* kept <= i: never overwrites an unvisited entry */
    }
    c->n = kept;
    return FFU_OK;
}

/* A tile may show part of a face that a coarser level sees whole (an eye region, a
 * forehead); such a box lies inside the whole face's box, is not tiny next to it, and
 * the whole face scores comparably. Those parts go; small faces in a big (false) box
 * and faces of the same level are left alone. c is sorted by score. */
static void drop_face_parts(det_cands *c)
{
    int kept = 0;
    for (int i = 0; i < c->n; i++) {
        const det_cand *f = &c->v[i];
        int part = 0;
        for (int j = 0; j < c->n && !part && f->level > 0; j++) {
            const det_cand *w = &c->v[j];
            if (w->level >= f->level || w->score < 0.5f * f->score)
                continue;
            float fw = f->box[2] - f->box[0], fh = f->box[3] - f->box[1];
            float ix = fminf(f->box[2], w->box[2]) - fmaxf(f->box[0], w->box[0]);
            float iy = fminf(f->box[3], w->box[3]) - fmaxf(f->box[1], w->box[1]);
            part = ix > 0 && iy > 0 && ix * iy >= 0.6f * fw * fh &&
                   fmaxf(fw, fh) >= 0.2f * fmaxf(w->box[2] - w->box[0], w->box[3] - w->box[1]);
        }
        if (!part)
            c->v[kept++] = *f;
    }
    c->n = kept;
}

/* ---- views: what to feed ------------------------------------------------------------- */

static ffu_status push_view(ffu_detector *d, const double m[6], int w, int h, unsigned interior,
                            int level, float max_face)
{
    if (d->nviews == d->vcap) {
        int cap = d->vcap ? d->vcap * 2 : 16;
        det_view *v = realloc(d->views, (size_t)cap * sizeof *v);
        if (!v)
            return ffu_error_set(FFU_ERR_NOMEM, "detector views (%d)", cap);
        d->views = v;
        d->vcap = cap;
    }
    det_view *v = &d->views[d->nviews++];
    memcpy(v->m, m, sizeof v->m);
    v->w = w;
    v->h = h;
    v->interior = interior;
    v->level = level;
    v->max_face = max_face;
    return FFU_OK;
}

static int round_up(int v, int k) { return k > 1 ? (v + k - 1) / k * k : v; }

/* Tiles of one level: network input tw x th at scale s (image pixels per network pixel)
 * over the uw x uh upright frame, neighbours overlapping by `overlap` image pixels.
 * align > 0: the model plans at any multiple of align, and tw x th is the largest tile:
 * each tile is then as small as the count of tiles allows (a level that fits one tile is
 * one view of the frame's aspect), so less of the work goes to overlaps. */
static ffu_status tile_level(ffu_detector *d, const double rot[6], int uw, int uh, int tw, int th,
                             double s, double overlap, int level, int align)
{
    /* faces this level must find are at most `overlap`; much larger boxes are parts of
     * faces the coarser levels see whole */
    float max_face = (float)(2 * overlap);
    double TW = tw * s, TH = th * s;
    if (overlap > 0.6 * fmin(TW, TH))
        overlap = 0.6 * fmin(TW, TH);
    int nx = uw <= TW ? 1 : (int)ceil((uw - overlap) / (TW - overlap));
    int ny = uh <= TH ? 1 : (int)ceil((uh - overlap) / (TH - overlap));
    /* a cap on the level's count, not on a side: a panorama strip may need many across */
    if ((long long)nx * ny > 64 * 64)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%dx%d tiles for one level (at most 4096): "
                                                "min_face is too small for this image", nx, ny);
    if (align > 0) {
        int w = round_up((int)ceil((uw + (nx - 1) * overlap) / (nx * s) - 1e-6), align);
        int h = round_up((int)ceil((uh + (ny - 1) * overlap) / (ny * s) - 1e-6), align);
        if (w < tw) tw = w;
        if (h < th) th = h;
        TW = tw * s;
        TH = th * s;
    }
    for (int iy = 0; iy < ny; iy++)
        for (int ix = 0; ix < nx; ix++) {
            /* spread evenly; a single tile larger than the frame is centred */
            double x0 = nx == 1 ? (uw - TW) / 2 : ix * (uw - TW) / (nx - 1);
            double y0 = ny == 1 ? (uh - TH) / 2 : iy * (uh - TH) / (ny - 1);
            unsigned interior = 0;
            if (x0 > 0.5)
                interior |= 1;
            if (y0 > 0.5)
                interior |= 2;
            if (x0 + TW < uw - 0.5)
                interior |= 4;
            if (y0 + TH < uh - 0.5)
                interior |= 8;
            double v[6] = {s, 0, x0, 0, s, y0}, m[6];
            compose(rot, v, m);
            ffu_status st = push_view(d, m, tw, th, interior, level, max_face);
            if (st)
                return st;
        }
    return FFU_OK;
}

/* The views of one rotation: the whole frame, then tile levels when opts.min_face asks
 * for faces smaller than the whole-frame pass can see. */
static ffu_status plan_views(ffu_detector *d, int W, int H, int rot)
{
    const det_family *f = d->fam;
    face_net *n = &d->net;
    double rm[6];
    int uw, uh;
    rotation_map(rot, W, H, rm, &uw, &uh);
    d->nviews = 0;

    double s0; /* image pixels per network pixel of the whole-frame view */
    int tw, th;    /* tile input size (the largest, when align > 0) */
    int align = 0; /* > 0: tiles of any multiple of align up to tw x th (tile_level) */
    double v[6], m[6];
    ffu_status st;
    if (f->search) /* a cascade: the upright frame, searched at every scale it needs */
        return push_view(d, rm, uw, uh, 0, 0, 0);
    if (d->dynamic) {
        int longest = uw > uh ? uw : uh;
        s0 = longest > d->side_cap ? (double)longest / d->side_cap : 1.0;
        int w = round_up((int)ceil(uw / s0 - 1e-6), f->stride);
        int h = round_up((int)ceil(uh / s0 - 1e-6), f->stride);
        if (w < f->stride)
            w = f->stride;
        if (h < f->stride)
            h = f->stride;
        double vv[6] = {s0, 0, 0, 0, s0, 0}; /* top-left, padding right/bottom */
        memcpy(v, vv, sizeof v);
        compose(rm, v, m);
        if ((st = push_view(d, m, w, h, 0, 0, 0)))
            return st;
        tw = th = round_up(d->side_cap < DET_TILE_SIDE ? d->side_cap : DET_TILE_SIDE, f->stride);
    } else if (d->aspect) {
        /* the declared square's side along the longer axis, the frame's aspect on the
         * other, rounded up to the model's grid and centred: no rows of letterbox bars
         * to compute (BlazeFace at 640x480: 256x192 instead of 256x256) */
        int side = d->side;
        s0 = (double)(uw > uh ? uw : uh) / side;
        int w = round_up((int)ceil(uw / s0 - 1e-6), d->align);
        int h = round_up((int)ceil(uh / s0 - 1e-6), d->align);
        w = w > side ? side : w < d->align ? d->align : w;
        h = h > side ? side : h < d->align ? d->align : h;
        double vv[6] = {s0, 0, (uw - s0 * w) / 2, 0, s0, (uh - s0 * h) / 2};
        memcpy(v, vv, sizeof v);
        compose(rm, v, m);
        if ((st = push_view(d, m, w, h, 0, 0, 0))) return st;
        tw = th = DET_FREE_TILE_SCALE * side;
        align = d->align;
    } else {
        double sx = (double)uw / n->in_w, sy = (double)uh / n->in_h;
        if (f->fit == DET_FIT_STRETCH) {
            double vv[6] = {sx, 0, 0, 0, sy, 0};
            memcpy(v, vv, sizeof v);
            s0 = sx > sy ? sx : sy;
        } else {
            s0 = sx > sy ? sx : sy;
            double vv[6] = {s0, 0, (uw - s0 * n->in_w) / 2, 0, s0, (uh - s0 * n->in_h) / 2};
            memcpy(v, vv, sizeof v);
        }
        compose(rm, v, m);
        if ((st = push_view(d, m, n->in_w, n->in_h, 0, 0, 0)))
            return st;
        tw = n->in_w;
        th = n->in_h;
    }

    int min_face = d->opts.min_face;
    if (min_face <= 0 || f->min_face_net <= 0)
        return FFU_OK;
    double s_min = min_face / f->min_face_net;
    if (s_min < 0.25)
        s_min = 0.25;
    if (s0 <= s_min * 1.05)
        return FFU_OK;
    /* Levels spaced by at most r_max so that each level's overlap (the largest face the
     * coarser level may miss) stays well inside its tiles. */
    double side = tw < th ? tw : th;
    double r_max = fmin(4.0, 0.4 * side / f->min_face_net);
    if (r_max < 1.5)
        r_max = 1.5;
    int levels = (int)ceil(log(s0 / s_min) / log(r_max) - 1e-9);
    if (levels < 1)
        levels = 1;
    double r = pow(s0 / s_min, 1.0 / levels), s_prev = s0;
    for (int l = 1; l <= levels; l++) {
        double s = s0 / pow(r, l);
        double overlap = 1.3 * f->min_face_net * s_prev;
        if ((st = tile_level(d, rm, uw, uh, tw, th, s, overlap, l, align))) return st;
        s_prev = s;
    }
    return FFU_OK;
}

/* Whether a candidate's keypoints stand upright in its view (within 45 degrees): the
 * down direction from the eye line's normal and from eyes to mouth. With rotations on,
 * a face belongs to the rotation that shows it upright, so a sideways face that a
 * rotation-tolerant model (BlazeFace) finds in the upright pass is left to the
 * rotated pass that sees it properly. */
static int kps_upright(const det_cand *c)
{
    const float *k = c->kps;
    float ex = k[2] - k[0], ey = k[3] - k[1];
    float mx = (k[6] + k[8] - k[0] - k[2]) / 2, my = (k[7] + k[9] - k[1] - k[3]) / 2;
    float e = sqrtf(ex * ex + ey * ey), m = sqrtf(mx * mx + my * my);
    if (e <= 0 || m <= 0)
        return 1;
    float dx = -ey / e + mx / m, dy = ex / e + my / m;
    return dy > fabsf(dx);
}

static ffu_status map_slot(ffu_detector *d, const face_net *n, int b, const det_view *v,
                           int rot);

/* Runs views [first, first + count) of one network input size as one batch of `slots`
 * (>= count) and maps their candidates into d->pass. */
static ffu_status run_views(ffu_detector *d, const det_src *src, int first, int count,
                            int slots, int rot)
{
    const det_view *v0 = &d->views[first];
    face_net *n = &d->net;
    ffu_status st;
    if ((d->dynamic || d->aspect) && v0->level > 0) {
        n = &d->tiles;
        if (!n->session) {
            ffu_face_model_opts mo = d->opts.m; /* threads, device, fp16 */
            mo.model = d->spec;
            mo.backend = d->backend;
            /* aspect models' tiles come in the sizes tile_level picks */
            if ((st = face_net_load(n, FFU_ROLE_DETECT, &mo, d->aspect)))
                return st;
            n->norm = d->net.norm; /* with the family's tweaks (per-channel means) */
            /* and its outputs, before the session is planned */
            if ((st = face_net_keep_outputs(n, d->net.keep)) || (st = face_net_start(n))) {
                face_net_close(n);
                return st;
            }
        }
    }
    /* a short last batch is padded with copies so the shape (and plan) stays the same */
    if ((st = face_net_reshape(n, slots, v0->w, v0->h)))
        return st;
    for (int b = 0; b < slots; b++)
        if ((st = fill_src(n, b, src, d->views[first + (b < count ? b : count - 1)].m)))
            return st;
    if ((st = face_net_run(n)))
        return st;
    for (int b = 0; b < count; b++)
        if ((st = map_slot(d, n, b, &d->views[first + b], rot)))
            return st;
    return FFU_OK;
}

static ffu_status map_cands(ffu_detector *d, const det_view *v, int rot);

/* Decodes batch slot b of the last run of n, fed with view v, and appends its
 * candidates in image coordinates to d->pass. */
static ffu_status map_slot(ffu_detector *d, const face_net *n, int b, const det_view *v, int rot)
{
    ffu_status st;
    d->tmp.n = 0;
    if ((st = d->fam->decode(d->state, n, b, d->min_score, &d->tmp)))
        return st;
    return map_cands(d, v, rot);
}

/* Appends the candidates in d->tmp (network coordinates of view v) to d->pass in image
 * coordinates. */
static ffu_status map_cands(ffu_detector *d, const det_view *v, int rot)
{
    /* a tile drops faces cut by its inner edges: a neighbour sees them whole */
    float tol = 2.0f;
    for (int i = 0; i < d->tmp.n; i++) {
        const det_cand *c = &d->tmp.v[i];
        if (!(c->score >= d->min_score) || !isfinite(c->box[0]) || !isfinite(c->box[1]) ||
            !isfinite(c->box[2]) || !isfinite(c->box[3]) || c->box[2] <= c->box[0] ||
            c->box[3] <= c->box[1])
            continue;
        if (((v->interior & 1) && c->box[0] < tol) || ((v->interior & 2) && c->box[1] < tol) ||
            ((v->interior & 4) && c->box[2] > v->w - tol) ||
            ((v->interior & 8) && c->box[3] > v->h - tol))
            continue;
        if (d->opts.rotations && !kps_upright(c))
            continue;
        det_cand *o = det_cands_push(&d->pass);
        if (!o)
            return FFU_ERR_NOMEM;
        float x0, y0, x1, y1;
        map_point(v->m, c->box[0], c->box[1], &x0, &y0);
        map_point(v->m, c->box[2], c->box[3], &x1, &y1);
        o->box[0] = fminf(x0, x1);
        o->box[1] = fminf(y0, y1);
        o->box[2] = fmaxf(x0, x1);
        o->box[3] = fmaxf(y0, y1);
        for (int k = 0; k < FFU_FACE_NUM_KPS; k++)
            map_point(v->m, c->kps[2 * k], c->kps[2 * k + 1], &o->kps[2 * k],
                      &o->kps[2 * k + 1]);
        o->score = c->score;
        o->rotation = rot;
        o->level = v->level;
        if (v->max_face > 0 && fmaxf(o->box[2] - o->box[0], o->box[3] - o->box[1]) > v->max_face)
            d->pass.n--;
    }
    return FFU_OK;
}

/* A cascade's one view (the upright frame): the family searches it on the host, from
 * the image itself or, turned, from an upright copy. */
static ffu_status run_cascade(ffu_detector *d, const det_src *src, const det_view *v, int rot)
{
    if (!src->img)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "the %s detector searches host images only "
                             "(frames in device memory: --host-frames)", d->fam->name);
    const ffu_image *img = src->img;
    ffu_status st;
    if (rot) {
        double m[6];
        face_warp_map(v->m, m);
        if ((d->upright.width != v->w || d->upright.height != v->h ||
             d->upright.fmt != img->fmt)) {
            ffu_image_release(&d->upright);
            if ((st = ffu_image_create(&d->upright, img->fmt, v->w, v->h)))
                return st;
        }
        if ((st = ffu_image_warp_affine(img, &d->upright, m, FFU_INTERP_NEAREST,
                                        FFU_BORDER_CONSTANT, NULL)))
            return st;
        img = &d->upright;
    }
    float min_face = d->fam->smallest(d->state, v->w, v->h, d->opts.min_face);
    d->tmp.n = 0;
    if ((st = d->fam->search(d->state, &d->net, img, min_face, d->min_score, &d->tmp)))
        return st;
    return map_cands(d, v, rot);
}

/* One rotation: plan, run in batches, suppress; survivors are appended to d->all. */
static ffu_status run_rotation(ffu_detector *d, const det_src *src, int rot)
{
    ffu_status st = plan_views(d, src->w, src->h, rot);
    if (st)
        return st;
    d->pass.n = 0;
    if (d->fam->search && (st = run_cascade(d, src, &d->views[0], rot)))
        return st;
    /* Views of one size go in batches of one size (the last one padded), so one image
     * size always gives the same network shapes and the session never re-plans. */
    int i = d->fam->search ? d->nviews : 0;
    while (i < d->nviews) {
        int j = i + 1;
        while (j < d->nviews && d->views[j].w == d->views[i].w && d->views[j].h == d->views[i].h)
            j++;
        int total = j - i;
        /* a run holds at most DET_MAX_BATCH declared squares' worth of pixels, so the
         * large tiles of aspect models (tile_level) take no more memory than the small */
        int cap = DET_MAX_BATCH;
        if (d->aspect) {
            int64_t fit = (int64_t)DET_MAX_BATCH * d->side * d->side /
                          ((int64_t)d->views[i].w * d->views[i].h);
            cap = fit < 1 ? 1 : fit < cap ? (int)fit : cap;
        }
        int batches = (total + cap - 1) / cap;
        int per = (total + batches - 1) / batches;
        for (int k = i; k < j; k += per) {
            int cnt = j - k < per ? j - k : per;
            if ((st = run_views(d, src, k, cnt, per, rot)))
                return st;
        }
        i = j;
    }
    if ((st = suppress(d, &d->pass, d->nms_iou, d->fam->weighted_merge)))
        return st;
    drop_face_parts(&d->pass);
    for (int k = 0; k < d->pass.n; k++) {
        det_cand *o = det_cands_push(&d->all);
        if (!o)
            return FFU_ERR_NOMEM;
        *o = d->pass.v[k];
    }
    return FFU_OK;
}

/* ---- public API ---------------------------------------------------------------------- */

void ffu_detector_opts_default(ffu_detector_opts *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

/* A zoo row with `aspect`: whether the graph plans off its declared square (at half its
 * height, and with min_face the largest tile's width: BlazeFace TF.js does, its Reshapes
 * re-derived; a graph with a constant block of the declared size beside its data does not). Asked
 * of a throwaway session on the ref backend, whose plan is shapes and buffers only, so the
 * detector's own session is not planned at a size no frame may have. */
static ffu_status probe_aspect(ffu_detector *d)
{
    face_net *n = &d->net;
    d->side = n->in_w;
    d->align = d->fam->align ? d->fam->align(d->state) : 1;
    if (n->in_w != n->in_h || d->align < 1 || d->align > d->side / 2) return FFU_OK;
    ffu_nn_session_opts so;
    ffu_nn_session_opts_default(&so);
    so.backend = "ref";
    so.free_dims = 1;
    ffu_nn_session *s = NULL;
    /* tiles (min_face) may be up to DET_FREE_TILE_SCALE sides wide: probe that width
     * then, the declared one otherwise (the wider plan made a create 5.5 -> 8.1 ms) */
    int h = round_up(d->side / 2, d->align);
    int w = d->opts.min_face > 0 ? DET_FREE_TILE_SCALE * d->side : d->side;
    int64_t dims[4] = {1, h, w, n->in_c};
    if (n->layout == FFU_LAYOUT_NCHW) dims[1] = n->in_c, dims[2] = h, dims[3] = w;
    ffu_nn_tensor t;
    ffu_status st = ffu_nn_session_create(n->model, &so, &s);
    if (!st) st = ffu_nn_session_set_input_shape(s, 0, 4, dims);
    if (!st) st = ffu_nn_session_input(s, 0, &t);
    ffu_nn_session_destroy(s);
    d->aspect = st == FFU_OK;
    if (st == FFU_ERR_NOMEM) return st;
    ffu_error_clear(); /* not for this graph: the letterbox */
    return FFU_OK;
}

ffu_status ffu_detector_create(const ffu_detector_opts *o, ffu_detector **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_detector_create: out is NULL");
    *out = NULL;
    ffu_detector_opts def;
    if (!o) {
        ffu_detector_opts_default(&def);
        o = &def;
    }
    if (!(o->min_score >= 0 && o->min_score <= 1))
        return ffu_error_set(FFU_ERR_INVALID, "min_score %g is outside 0..1", o->min_score);
    if (!(o->nms_iou >= 0 && o->nms_iou <= 1))
        return ffu_error_set(FFU_ERR_INVALID, "nms_iou %g is outside 0..1", o->nms_iou);
    if (o->min_face < 0 || o->max_faces < 0 || o->input_size < 0 || o->input_size > 8192)
        return ffu_error_set(FFU_ERR_INVALID, "detector options: min_face %d, max_faces %d, "
                                              "input_size %d must be >= 0 (input_size <= 8192)",
                             o->min_face, o->max_faces, o->input_size);
    ffu_detector *d = calloc(1, sizeof *d);
    if (!d)
        return ffu_error_set(FFU_ERR_NOMEM, "detector");
    d->opts = *o;
    d->opts.m.model = NULL; /* borrowed strings: copies kept below */
    d->opts.m.backend = NULL;
    if ((o->m.model && !(d->spec = strdup(o->m.model))) ||
        (o->m.backend && !(d->backend = strdup(o->m.backend)))) {
        ffu_detector_destroy(d);
        return ffu_error_set(FFU_ERR_NOMEM, "detector options");
    }
    /* the family (and the zoo row) decide whether the session may leave its declared
     * size */
    ffu_zoo_entry row;
    char path[1024];
    ffu_status st = ffu_zoo_resolve(FFU_ROLE_DETECT, o->m.model, &row, path, sizeof path);
    const det_family *fam = NULL;
    for (size_t i = 0; !st && i < sizeof families / sizeof families[0] && !fam; i++)
        if (row.family && !strcmp(families[i]->name, row.family)) fam = families[i];
    /* not on cuda: there frames of several streams go in one batch, which needs one
     * input size, and a session changing size re-plans its CUDA graphs (not measured) */
    int cuda = o->m.backend && !strcmp(o->m.backend, "cuda");
    int aspect = fam && fam->align && row.aspect && !cuda;
    if ((st = face_net_load(&d->net, FFU_ROLE_DETECT, &o->m, aspect || (fam && fam->search))))
        goto fail;
    d->fam = fam; /* the row d->net opened is the one resolved above */
    if (!d->fam) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "no detector decoder for family '%s'",
                           d->net.entry.family ? d->net.entry.family : "(none)");
        goto fail;
    }
    if (d->net.in_c != 3) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: detectors take colour input, this one %d "
                                                "channel(s)", d->net.path, d->net.in_c);
        goto fail;
    }
    /* the family's decoder chooses the outputs it reads before the plan */
    if ((st = d->fam->init(&d->net, &d->state)) || (st = face_net_start(&d->net)) ||
        (d->fam->open && (st = d->fam->open(d->state, &d->net, &o->m))))
        goto fail;
    d->min_score = o->min_score > 0 ? o->min_score
                   : d->net.entry.threshold > 0 ? d->net.entry.threshold
                                                : d->fam->score;
    d->nms_iou = o->nms_iou > 0 ? o->nms_iou : d->fam->nms_iou;
    /* A model whose declared input is dynamic may still bake its size into constants
     * (yolo5face_500m_320x320): the zoo row's size 0 says "any size". */
    d->dynamic = d->net.dynamic_hw && d->net.entry.input_w <= 0 && d->net.entry.input_h <= 0;
    d->side_cap = o->input_size > 0 ? o->input_size : d->fam->dynamic_side;
    if (d->side_cap < d->fam->stride)
        d->side_cap = d->fam->stride;
    if (!d->dynamic && aspect && (st = probe_aspect(d))) goto fail;
    *out = d;
    return FFU_OK;
fail:
    ffu_detector_destroy(d);
    return st;
}

void ffu_detector_destroy(ffu_detector *d)
{
    if (!d)
        return;
    if (d->fam && d->fam->fini)
        d->fam->fini(d->state);
    face_net_close(&d->net);
    face_net_close(&d->tiles);
    ffu_detector_destroy(d->referee);
    ffu_image_release(&d->ref_crop);
    ffu_image_release(&d->upright);
    ffu_face_list_free(&d->ref_faces);
    free(d->spec);
    free(d->backend);
    free(d->tmp.v);
    free(d->pass.v);
    free(d->all.v);
    free(d->views);
    free(d->dead);
    free(d);
}

const ffu_zoo_entry *ffu_detector_model(const ffu_detector *d) { return d ? &d->net.entry : NULL; }

static ffu_status emit_faces(ffu_detector *d, ffu_face_list *out);

static ffu_status check_host_image(const ffu_image *img, const char *what)
{
    if (!img || !img->data[0] || img->width < 1 || img->height < 1)
        return ffu_error_set(FFU_ERR_INVALID, "%s: empty image", what);
    if (img->fmt != FFU_PIX_RGB24 && img->fmt != FFU_PIX_BGR24 && img->fmt != FFU_PIX_RGBA32 &&
        img->fmt != FFU_PIX_GRAY8)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "detectors take RGB, BGR, RGBA or grey "
                                                  "images, not %s", ffu_pixfmt_name(img->fmt));
    return FFU_OK;
}

/* A device frame for a cuda detector (face_net_fill_warp_gpu checks the rest). */
static ffu_status check_device_image(const ffu_detector *d, const ffu_gpu_image *img,
                                     const char *what)
{
    if (!face_net_on_gpu(&d->net))
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: the detector runs on backend '%s'; "
                             "frames in device memory need backend cuda", what,
                             d->backend ? d->backend : "cpu");
    if (!img || !img->data[0] || img->width < 1 || img->height < 1)
        return ffu_error_set(FFU_ERR_INVALID, "%s: empty device image", what);
    if (img->fmt != FFU_PIX_RGB24 && img->fmt != FFU_PIX_BGR24 && img->fmt != FFU_PIX_RGBA32 &&
        img->fmt != FFU_PIX_NV12)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: device frames must be RGB, BGR, RGBA "
                             "or NV12, not %s", what, ffu_pixfmt_name(img->fmt));
    return FFU_OK;
}

static ffu_status detect_src(ffu_detector *d, const det_src *src, ffu_face_list *out);

ffu_status ffu_detector_detect(ffu_detector *d, const ffu_image *img, ffu_face_list *out)
{
    if (out)
        ffu_face_list_clear(out);
    if (!d || !img || !out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_detector_detect: %s is NULL",
                             !d ? "detector" : !img ? "image" : "face list");
    ffu_status st = check_host_image(img, "ffu_detector_detect");
    if (st)
        return st;
    det_src src = host_src(img);
    return detect_src(d, &src, out);
}

ffu_status ffu_detector_detect_gpu(ffu_detector *d, const ffu_gpu_image *img, ffu_face_list *out)
{
    if (out)
        ffu_face_list_clear(out);
    if (!d || !img || !out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_detector_detect_gpu: %s is NULL",
                             !d ? "detector" : !img ? "image" : "face list");
    ffu_status st = check_device_image(d, img, "ffu_detector_detect_gpu");
    if (st)
        return st;
    det_src src = device_src(img);
    return detect_src(d, &src, out);
}

int face_detector_on_gpu(const ffu_detector *d)
{
    return d && face_net_on_gpu(&d->net) && !d->fam->search; /* cascades read host frames */
}

/* The referee's score for face c seen at its rotation: the short-range BlazeFace (a
 * model for faces that fill its 128x128 input) on a square of 1.5 times the face's box
 * around it, turned so that the face stands upright if c's rotation is right; the best
 * score it finds there, 0 for none. FFU_ERR_NOT_FOUND when the referee's model is not
 * installed (the caller then keeps the detector's own scores). */
static ffu_status orientation_vote(ffu_detector *d, const ffu_image *img, const det_cand *c,
                                   float *score)
{
    enum { S = 128 };
    ffu_status st;
    *score = 0;
    if (d->referee_failed) return FFU_ERR_NOT_FOUND;
    if (!d->referee) {
        ffu_detector_opts o;
        ffu_detector_opts_default(&o);
        o.m.model = "blazeface-short";
        o.m.threads = d->opts.m.threads; /* on the CPU whatever d runs on: a host crop */
        if ((st = ffu_detector_create(&o, &d->referee)) ||
            (st = ffu_image_create(&d->ref_crop, FFU_PIX_RGB24, S, S))) {
            d->referee_failed = 1;
            return st == FFU_ERR_NOMEM ? st : FFU_ERR_NOT_FOUND;
        }
    }
    /* crop pixel (p, q) -> image: the face's centre plus the upright offset (p, q less
     * the crop's centre, scaled) turned as rotation_map turns a frame: its linear part,
     * a 0 x 0 frame's map */
    double m[6];
    int uw, uh;
    rotation_map(c->rotation, 0, 0, m, &uw, &uh);
    double cx = (c->box[0] + c->box[2]) / 2, cy = (c->box[1] + c->box[3]) / 2;
    double k = 1.5 * fmax(c->box[2] - c->box[0], c->box[3] - c->box[1]) / S, h = S / 2.0;
    for (int i = 0; i < 6; i += 3) {
        m[i] *= k, m[i + 1] *= k;
        m[i + 2] = (i ? cy : cx) - (m[i] + m[i + 1]) * h;
    }
    if ((st = ffu_image_warp_affine(img, &d->ref_crop, m, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT,
                                    NULL)) ||
        (st = ffu_detector_detect(d->referee, &d->ref_crop, &d->ref_faces)))
        return st;
    for (int i = 0; i < d->ref_faces.count; i++)
        *score = fmaxf(*score, d->ref_faces.faces[i].score);
    return FFU_OK;
}

/* c's referee vote, asked once. FFU_ERR_NOT_FOUND: no referee. */
static ffu_status vote_of(ffu_detector *d, const ffu_image *img, det_cand *c)
{
    if (c->voted) return FFU_OK;
    ffu_status st = orientation_vote(d, img, c, &c->vote);
    c->voted = !st;
    return st;
}

/* One face seen at several rotations: detectors also "find" upside-down and sideways
 * faces with upright-looking keypoints, and may score such a view above the true one
 * (BlazeFace upside down on 4 of 294 upright LFW photos and on obama.jpg; sideways views
 * in the upright search for both BlazeFace and YuNet: docs/EVAL.md "Rotated photos").
 * The referee, which tells them apart better, decides between every two overlapping
 * views of different rotations; the loser is dropped. Where it finds neither view, or
 * is not installed, the detector's scores decide as before. */
static ffu_status settle_views(ffu_detector *d, const ffu_image *img)
{
    det_cands *c = &d->all;
    for (int i = 0; i < c->n; i++)
        for (int j = i + 1; j < c->n; j++) {
            det_cand *a = &c->v[i], *b = &c->v[j];
            if (a->rotation == b->rotation || a->score < 0 || b->score < 0 ||
                iou(a->box, b->box) <= d->nms_iou)
                continue;
            ffu_status st = vote_of(d, img, a);
            if (!st) st = vote_of(d, img, b);
            if (st == FFU_ERR_NOT_FOUND) {
                ffu_error_clear();
                return FFU_OK;
            }
            if (st) return st;
            if (a->vote != b->vote && (a->vote > 0 || b->vote > 0))
                (a->vote > b->vote ? b : a)->score = -1;
        }
    int kept = 0; /* the losers out */
    for (int i = 0; i < c->n; i++)
        if (c->v[i].score >= 0) c->v[kept++] = c->v[i];
    c->n = kept;
    return FFU_OK;
}

/* Whether the upright search found an upright photo. A photo turned as a whole turns
 * all its faces, so its best face tells: the referee, shown the crop around it in all
 * four turns, scores it highest unturned. Then the turned searches would only find the
 * faces again, sideways or upside down, and are not run. *yes = 0 when another turn
 * wins, the referee finds the face in no turn, or it is not installed. The four runs
 * cost 0.54 ms each on one thread of the Turin host, a batch of four no less; asking
 * about the best three faces cost more on group photos and changed no answer
 * (docs/EVAL.md "Rotated photos"). The unturned score is kept as the face's vote. */
static ffu_status upright_confirmed(ffu_detector *d, const ffu_image *img, int *yes)
{
    det_cands *c = &d->all;
    *yes = 0;
    if (c->n == 0) return FFU_OK;
    det_cand *best = &c->v[0];
    for (int i = 1; i < c->n; i++)
        if (c->v[i].score > best->score) best = &c->v[i];
    float v[4];
    for (int r = 0; r < 4; r++) {
        det_cand t = *best;
        t.rotation = 90 * r;
        ffu_status st = orientation_vote(d, img, &t, &v[r]);
        if (st == FFU_ERR_NOT_FOUND) {
            ffu_error_clear();
            return FFU_OK;
        }
        if (st) return st;
    }
    best->vote = v[0];
    best->voted = 1;
    *yes = v[0] > 0 && v[0] > v[1] && v[0] > v[2] && v[0] > v[3];
    return FFU_OK;
}

static ffu_status detect_src(ffu_detector *d, const det_src *src, ffu_face_list *out)
{
    d->all.n = 0;
    ffu_status st = run_rotation(d, src, 0);
    if (!st && d->opts.rotations) {
        /* Every turn unless the referee confirms the upright search's best face (host
         * frames: it reads a host crop): detectors also "find" sideways faces there, and
         * upside-down ones in the turned-over image, with upright-looking keypoints. The
         * referee then settles a face seen several ways; the score where it cannot. */
        int upright = 0;
        if (src->img) st = upright_confirmed(d, src->img, &upright);
        for (int rot = 90; rot <= 270 && !st && !upright; rot += 90)
            st = run_rotation(d, src, rot);
        if (!st && src->img) st = settle_views(d, src->img);
        /* one face seen at two rotations: keep the better view */
        if (!st)
            st = suppress(d, &d->all, d->nms_iou, 0);
    }
    if (st)
        return st;
    return emit_faces(d, out);
}

/* d->all, sorted and capped, into out. */
static ffu_status emit_faces(ffu_detector *d, ffu_face_list *out)
{
    if (d->all.n > 1)
        qsort(d->all.v, (size_t)d->all.n, sizeof *d->all.v, by_score_desc);
    int n = d->all.n;
    if (d->opts.max_faces > 0 && n > d->opts.max_faces)
        n = d->opts.max_faces;
    for (int i = 0; i < n; i++) {
        const det_cand *c = &d->all.v[i];
        ffu_face *f = ffu_face_list_push(out);
        if (!f) {
            ffu_face_list_clear(out);
            return FFU_ERR_NOMEM;
        }
        f->box[0] = c->box[0];
        f->box[1] = c->box[1];
        f->box[2] = c->box[2] - c->box[0];
        f->box[3] = c->box[3] - c->box[1];
        f->score = c->score;
        memcpy(f->kps, c->kps, sizeof f->kps);
        f->rotation = c->rotation;
    }
    return FFU_OK;
}

/* The side, in image pixels, of the smallest face a view is built to find: the
 * family's min_face_net network pixels through the view's coarser axis. */
static double view_smallest_face(const det_family *f, const det_view *v)
{
    double sx = hypot(v->m[0], v->m[3]), sy = hypot(v->m[1], v->m[4]);
    return f->min_face_net * (sx > sy ? sx : sy);
}

ffu_status ffu_detector_smallest_face(ffu_detector *d, int width, int height, float *side)
{
    if (side)
        *side = 0;
    if (!d || !side || width < 1 || height < 1)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_detector_smallest_face: %s",
                             !d ? "detector is NULL" : !side ? "side is NULL" : "empty image");
    ffu_status st = plan_views(d, width, height, 0); /* the plan a detect call makes */
    if (st)
        return st;
    double best = INFINITY;
    if (d->fam->smallest) /* a cascade: its pyramid's first level */
        best = d->fam->smallest(d->state, width, height, d->opts.min_face);
    else
        for (int i = 0; i < d->nviews; i++)
            best = fmin(best, view_smallest_face(d->fam, &d->views[i]));
    *side = (float)best;
    return FFU_OK;
}

/* ---- several images per run (the video pipeline's cross-stream batches) -------------- */

int face_detector_batchable(const ffu_detector *d)
{
    return d && !d->dynamic && !d->opts.rotations && d->opts.min_face <= 0 && !d->fam->search;
}

/* The faces of n frames (host images or device ones), each as detect_src finds them. */
static ffu_status detect_multi(ffu_detector *d, const det_src *srcs, ffu_face_list *const *outs,
                               int n)
{
    if (!face_detector_batchable(d) || n == 1) {
        for (int i = 0; i < n; i++) {
            ffu_face_list_clear(outs[i]);
            ffu_status st = detect_src(d, &srcs[i], outs[i]);
            if (st)
                return st;
        }
        return FFU_OK;
    }
    face_net *net = &d->net;
    for (int i = 0; i < n;) {
        det_view views[DET_MAX_BATCH];
        ffu_status st;
        int k = 0;
        /* batchable: exactly one whole-frame view per image; a batch's views are one
         * size (frames of another aspect start the next batch: zoo row `aspect`) */
        while (k < DET_MAX_BATCH && i + k < n) {
            if ((st = plan_views(d, srcs[i + k].w, srcs[i + k].h, 0))) return st;
            if (k > 0 && (d->views[0].w != views[0].w || d->views[0].h != views[0].h)) break;
            views[k++] = d->views[0];
        }
        int slots = det_padded_batch(k); /* at most 1, 2, 4, 8 */
        if ((st = face_net_reshape(net, slots, views[0].w, views[0].h))) return st;
        for (int b = 0; b < slots; b++) {
            int j = b < k ? b : k - 1;
            if ((st = fill_src(net, b, &srcs[i + j], views[j].m)))
                return st;
        }
        if ((st = face_net_run(net)))
            return st;
        for (int j = 0; j < k; j++) {
            d->pass.n = 0;
            d->all.n = 0;
            if ((st = map_slot(d, net, j, &views[j], 0)) ||
                (st = suppress(d, &d->pass, d->nms_iou, d->fam->weighted_merge)))
                return st;
            drop_face_parts(&d->pass);
            for (int c = 0; c < d->pass.n; c++) {
                det_cand *o = det_cands_push(&d->all);
                if (!o)
                    return FFU_ERR_NOMEM;
                *o = d->pass.v[c];
            }
            if ((st = emit_faces(d, outs[i + j])))
                return st;
        }
        i += k;
    }
    return FFU_OK;
}

/* Frames per detect_multi call: their det_src entries live on the stack. */
#define DET_MULTI_CHUNK 64

/* The body of both multi entry points: clears the lists, checks every frame, then runs
 * the frames in chunks. imgs holds ffu_gpu_image pointers when `gpu`, else ffu_image. */
static ffu_status detect_multi_any(ffu_detector *d, const void *const *imgs, int gpu,
                                   ffu_face_list *const *outs, int n, const char *who)
{
    if (!d || n < 0 || (n > 0 && (!imgs || !outs)))
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad arguments", who);
    for (int i = 0; i < n; i++) {
        if (!outs[i])
            return ffu_error_set(FFU_ERR_INVALID, "%s: list %d is NULL", who, i);
        ffu_face_list_clear(outs[i]);
    }
    if (gpu && !face_net_on_gpu(&d->net))
        return check_device_image(d, NULL, who);
    for (int i = 0; i < n; i++) {
        ffu_status st = gpu ? check_device_image(d, imgs[i], who) : check_host_image(imgs[i], who);
        if (st)
            return st;
    }
    for (int i = 0; i < n; i += DET_MULTI_CHUNK) {
        det_src srcs[DET_MULTI_CHUNK];
        int k = n - i < DET_MULTI_CHUNK ? n - i : DET_MULTI_CHUNK;
        for (int j = 0; j < k; j++)
            srcs[j] = gpu ? device_src(imgs[i + j]) : host_src(imgs[i + j]);
        ffu_status st = detect_multi(d, srcs, outs + i, k);
        if (st)
            return st;
    }
    return FFU_OK;
}

ffu_status face_detector_detect_multi(ffu_detector *d, const ffu_image *const *imgs,
                                      ffu_face_list *const *outs, int n)
{
    return detect_multi_any(d, (const void *const *)imgs, 0, outs, n,
                            "face_detector_detect_multi");
}

ffu_status face_detector_detect_multi_gpu(ffu_detector *d, const ffu_gpu_image *const *imgs,
                                          ffu_face_list *const *outs, int n)
{
    return detect_multi_any(d, (const void *const *)imgs, 1, outs, n,
                            "face_detector_detect_multi_gpu");
}
