/* BlazeFace decoder (MediaPipe face detection: the 256 "back" model, 128 short-range
 * and 192 full-range, as TF.js graphs or ONNX conversions).
 *
 * Anchors have no size prior: centre = anchor + (dx, dy), size = (w, h), keypoints =
 * anchor + offsets, all in input pixels (MediaPipe's x_scale = input size); the box is
 * then reshaped to the WIDER FACE convention (BF_BOX_*). The anchor
 * grid follows from the anchor count: 896 = 16x16x2 + 8x8x6 (two layers, strides S/16
 * and S/32), 2304 = 48x48x1 (full-range, stride 4 at 192). Scores are logits.
 * Outputs come either split per layer ([1,512,1] scores + [1,512,16] regressors, ...)
 * or as one [1,N,17] tensor with the logit in column 0 (human-models facemesh-detection).
 * The six keypoints are right eye, left eye (the subject's: image-left first), nose tip,
 * mouth centre and the two ear tragions; the two mouth corners of the five-point set are
 * estimated from the mouth centre along the eye line (half-width 0.414 x the eye distance,
 * the ratio of the arcface template). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "detect_internal.h"

#define BF_MAX_SEG 4
/* Box reshaping measured as the median over the 330 BlazeFace detections (score >= 0.6)
 * that overlap a WIDER FACE val box wider than 40 px in ../shared/data/widerface: the
 * annotated centre sits 0.099 box heights higher, the width is 0.933x, the height
 * 1.229x. (The WIDER-trained families need no correction: within 2%.) */
#define BF_BOX_DY 0.099f
#define BF_BOX_SW 0.933f
#define BF_BOX_SH 1.229f

typedef struct bf_seg {
    int score_out, reg_out; /* output indices (equal for the combined layout) */
    int score_col, reg_col; /* first column of the logit / regressors */
    int cols_score, cols_reg; /* row length of each output */
    int count;              /* anchors in this segment */
} bf_seg;

/* One anchor layer: a cell every `stride` input pixels, `per` anchors in each. */
typedef struct bf_layer {
    int stride, per;
} bf_layer;

typedef struct bf_state {
    int nseg;
    bf_seg seg[BF_MAX_SEG];
    int n;      /* anchors in all at the declared input size */
    int nlayer; /* 1 or 2 (finest first); nseg is 1 or nlayer */
    bf_layer layer[2];
} bf_state;

static void bf_fini(void *p) { free(p); }

static int isqrt_exact(int v)
{
    int r = (int)lround(sqrt((double)v));
    return r * r == v ? r : -1;
}

/* The anchor layers for n anchors at the declared square input: MediaPipe's two-layer
 * (2 + 6 per cell, the second layer half the first's grid) or one-layer grids. */
static ffu_status bf_anchors(bf_state *s, const face_net *n)
{
    int g1 = -1;
    if ((2 * s->n) % 7 == 0 && (g1 = isqrt_exact(2 * s->n / 7)) > 0 && g1 % 2 == 0 &&
        n->in_w % g1 == 0 && (s->nseg == 1 || s->nseg == 2)) {
        s->nlayer = 2;
        s->layer[0] = (bf_layer){n->in_w / g1, 2};
        s->layer[1] = (bf_layer){2 * (n->in_w / g1), 6};
    } else if ((g1 = isqrt_exact(s->n)) > 0 && n->in_w % g1 == 0 && s->nseg == 1) {
        s->nlayer = 1;
        s->layer[0] = (bf_layer){n->in_w / g1, 1};
    } else {
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: %d anchors fit no BlazeFace anchor grid",
                             n->path, s->n);
    }
    return FFU_OK;
}

static int bf_align(const void *state)
{
    const bf_state *s = state;
    int a = 1;
    for (int k = 0; k < s->nlayer; k++)
        a = s->layer[k].stride > a ? s->layer[k].stride : a;
    return a;
}

/* Anchor a's centre at input size w x h, where layer 0 holds the first n0 anchors. */
static void bf_anchor(const bf_state *s, int a, int w, int h, int n0, float *ax, float *ay)
{
    const bf_layer *l = &s->layer[a >= n0];
    int gw = w / l->stride, gh = h / l->stride, cell = (a - (a >= n0 ? n0 : 0)) / l->per;
    *ax = (cell % gw + 0.5f) / gw * (float)w;
    *ay = (cell / gw + 0.5f) / gh * (float)h;
}

/* Whether output a comes before b in TF's numbering of a model's outputs (Identity,
 * Identity_1, ..., Identity_10: the shorter name first, then by bytes); a named one
 * before an unnamed one. */
static int tf_output_before(const char *a, const char *b)
{
    if (!a || !b) return a && !b;
    size_t la = strlen(a), lb = strlen(b);
    return la != lb ? la < lb : strcmp(a, b) < 0;
}

static ffu_status bf_init(face_net *n, void **state)
{
    *state = NULL;
    bf_state *s = calloc(1, sizeof *s);
    if (!s)
        return ffu_error_set(FFU_ERR_NOMEM, "BlazeFace state");
    int no = face_net_num_outputs(n);
    int score_idx[BF_MAX_SEG], reg_idx[BF_MAX_SEG], score_cnt[BF_MAX_SEG], reg_cnt[BF_MAX_SEG];
    int ns = 0, nr = 0, combined = -1;
    const char *combined_name = NULL;
    ffu_status st = FFU_OK;
    for (int i = 0; i < no; i++) {
        ffu_nn_tensor t;
        if ((st = ffu_nn_model_output(n->model, i, &t)))
            goto fail;
        int64_t cols = t.rank >= 2 ? t.dims[t.rank - 1] : -1;
        int64_t cnt = t.rank >= 2 ? t.dims[t.rank - 2] : -1;
        if (cnt <= 0)
            continue;
        if (cols == 17) {
            /* facemesh-detection-full has two such heads, its graph's model/face/concat
             * and model/person/concat: TF numbers a model's outputs Identity, Identity_1,
             * ... in the model's order, face first, but the model.json signature lists
             * Identity_1 (person) first. The person head scores clear faces 0.2-0.6 (the
             * face head 0.75-0.9) and gave WIDER AP 0.58 / 0.38 / 0.11 (face: 0.63 /
             * 0.40 / 0.12) */
            if (combined < 0 || tf_output_before(t.name, combined_name)) {
                combined = i;
                combined_name = t.name;
            }
        } else if (cols == 1 && ns < BF_MAX_SEG) {
            score_idx[ns] = i;
            score_cnt[ns++] = (int)cnt;
        } else if (cols == 16 && nr < BF_MAX_SEG) {
            reg_idx[nr] = i;
            reg_cnt[nr++] = (int)cnt;
        }
    }
    if (ns > 0 && ns == nr) {
        /* pair scores with regressors by anchor count, finest layer (most anchors) first */
        for (int k = 0; k < ns; k++) {
            int best = -1;
            for (int i = 0; i < ns; i++)
                if (score_cnt[i] > 0 && (best < 0 || score_cnt[i] > score_cnt[best]))
                    best = i;
            int r = -1;
            for (int i = 0; i < nr; i++)
                if (reg_cnt[i] == score_cnt[best])
                    r = i;
            if (r < 0) {
                st = ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: BlazeFace outputs do not pair up",
                                   n->path);
                goto fail;
            }
            bf_seg *g = &s->seg[s->nseg++];
            g->score_out = score_idx[best];
            g->reg_out = reg_idx[r];
            g->score_col = 0;
            g->reg_col = 0;
            g->cols_score = 1;
            g->cols_reg = 16;
            g->count = score_cnt[best];
            s->n += g->count;
            score_cnt[best] = 0;
            reg_cnt[r] = -1;
        }
    } else if (combined >= 0) {
        ffu_nn_tensor t;
        ffu_nn_model_output(n->model, combined, &t);
        bf_seg *g = &s->seg[s->nseg++];
        g->score_out = g->reg_out = combined;
        g->score_col = 0;
        g->reg_col = 1;
        g->cols_score = g->cols_reg = 17;
        g->count = (int)t.dims[t.rank - 2];
        s->n = g->count;
    } else {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: outputs are not BlazeFace's (scores [N,1] "
                                                "+ regressors [N,16], or [N,17])", n->path);
        goto fail;
    }
    if ((st = bf_anchors(s, n)))
        goto fail;
    /* other heads are not run (facemesh-detection-full's person head: 12% of its time,
     * docs/BENCHMARKS.md "Outputs a stage does not read") */
    int outs[2 * BF_MAX_SEG], nk = 0;
    for (int k = 0; k < s->nseg; k++) {
        outs[nk++] = s->seg[k].score_out;
        outs[nk++] = s->seg[k].reg_out;
    }
    if ((st = face_net_keep_only(n, outs, nk)))
        goto fail;
    *state = s;
    return FFU_OK;
fail:
    bf_fini(s);
    return st;
}

static ffu_status bf_decode(void *state, const face_net *n, int b, float min_score,
                            det_cands *out)
{
    const bf_state *s = state;
    /* scores are tested on the logit: no exp for the many background anchors */
    float p = fminf(fmaxf(min_score, 1e-6f), 1 - 1e-6f);
    float min_logit = logf(p / (1 - p));
    /* the layers' anchors at this input size (not square where fed at the frame's
     * aspect: detect.c, zoo row `aspect`) */
    int lc[2] = {0, 0};
    for (int k = 0; k < s->nlayer; k++)
        lc[k] = (n->in_w / s->layer[k].stride) * (n->in_h / s->layer[k].stride) * s->layer[k].per;
    int base = 0;
    for (int k = 0; k < s->nseg; k++) {
        const bf_seg *g = &s->seg[k];
        const int count = s->nseg == 1 ? lc[0] + lc[1] : lc[k];
        int64_t ns_, nr_;
        const float *sc = det_output_slot(n, g->score_out, b, &ns_, NULL);
        const float *rg = det_output_slot(n, g->reg_out, b, &nr_, NULL);
        if (!sc || !rg)
            return FFU_ERR_UNSUPPORTED;
        if (ns_ != (int64_t)count * g->cols_score || nr_ != (int64_t)count * g->cols_reg)
            return ffu_error_set(FFU_ERR_UNSUPPORTED,
                                 "%s: BlazeFace output sizes do not fit "
                                 "its anchor grid at %dx%d",
                                 n->path, n->in_w, n->in_h);
        for (int i = 0; i < count; i++) {
            float logit = sc[(size_t)i * g->cols_score + g->score_col];
            if (!(logit >= min_logit))
                continue;
            const float *r = rg + (size_t)i * g->cols_reg + g->reg_col;
            float ax, ay;
            bf_anchor(s, base + i, n->in_w, n->in_h, lc[0], &ax, &ay);
            /* MediaPipe's square eyes-to-mouth box, reshaped to the forehead-to-chin
             * boxes of WIDER FACE that every other family predicts */
            float cx = ax + r[0], cy = ay + r[1] - BF_BOX_DY * r[3];
            float w = BF_BOX_SW * r[2], h = BF_BOX_SH * r[3];
            det_cand *c = det_cands_push(out);
            if (!c)
                return FFU_ERR_NOMEM;
            c->score = det_sigmoid(logit);
            c->box[0] = cx - w / 2;
            c->box[1] = cy - h / 2;
            c->box[2] = cx + w / 2;
            c->box[3] = cy + h / 2;
            float ex0 = ax + r[4], ey0 = ay + r[5], ex1 = ax + r[6], ey1 = ay + r[7];
            float nx = ax + r[8], ny = ay + r[9], mx = ax + r[10], my = ay + r[11];
            float dx = 0.414f * (ex1 - ex0), dy = 0.414f * (ey1 - ey0);
            float kp[10] = {ex0, ey0, ex1, ey1, nx, ny, mx - dx, my - dy, mx + dx, my + dy};
            memcpy(c->kps, kp, sizeof kp);
        }
        base += count;
    }
    return FFU_OK;
}

const det_family det_family_blazeface = {
    .name = "blazeface",
    .score = 0.75f,
    .nms_iou = 0.3f, /* MediaPipe's min_suppression_threshold */
    .weighted_merge = 1,
    .fit = DET_FIT_LETTERBOX,
    .stride = 16,
    .dynamic_side = 256,
    .min_face_net = 20.0f,
    .align = bf_align,
    .init = bf_init,
    .fini = bf_fini,
    .decode = bf_decode,
};
