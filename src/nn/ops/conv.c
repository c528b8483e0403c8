/* Conv and ConvTranspose: shape inference and the reference kernels (f32, NCHW, 1-D to
 * 3-D, groups, dilations, strides, asymmetric pads, auto_pad, optional bias, fused
 * activation, and for Conv a fused residual input added before the activation). Also the sliding-window geometry (nn_window_init) that the pooling ops
 * share.
 *
 * The kernels are the oracle the oneDNN backend is tested against, so they are plain
 * loops; the order is chosen so the innermost loop walks one contiguous output row
 * (one weight times one input row added into one output row), which keeps a 640x640
 * detector at a few seconds without im2col or blocking. */
#include <string.h>

#include "ops_internal.h"

/* ---- window geometry --------------------------------------------------------------------- */

static int64_t div_floor(int64_t a, int64_t b) /* b > 0 */
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static int64_t div_ceil(int64_t a, int64_t b) /* b > 0 */ { return -div_floor(-a, b); }

/* Reads an optional per-spatial-dim int list attribute into v[0..nd-1] (default fill). */
static ffu_status spatial_attr(const nn_node *n, const char *name, int nd, int64_t fill,
                               int64_t minimum, int64_t *v)
{
    int cnt;
    const int64_t *a = nn_attr_ints(n, name, &cnt);
    for (int i = 0; i < nd; i++)
        v[i] = fill;
    if (!a) return FFU_OK;
    if (cnt != nd)
        return nn_node_error(n, FFU_ERR_FORMAT, "%s has %d values, expected %d", name, cnt, nd);
    for (int i = 0; i < nd; i++) {
        if (a[i] < minimum)
            return nn_node_error(n, FFU_ERR_FORMAT, "%s[%d] = %lld is out of range", name, i,
                                 (long long)a[i]);
        v[i] = a[i];
    }
    return FFU_OK;
}

ffu_status nn_window_init(const nn_node *n, int kind, int nd, const int64_t *in,
                          const int64_t *kernel, nn_window *w)
{
    memset(w, 0, sizeof *w);
    if (nd < 1 || nd > 3)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%d spatial dims (supported: 1 to 3)", nd);
    w->nd = nd;
    for (int s = 0; s < 3; s++) {
        w->in[s] = w->out[s] = w->k[s] = w->stride[s] = w->dil[s] = 1;
    }
    int64_t k[3], st[3], dil[3], pads[6] = {0}, outpad[3] = {0};
    ffu_status e;
    int cnt;
    const int64_t *ks = nn_attr_ints(n, "kernel_shape", &cnt);
    if (ks && cnt != nd)
        return nn_node_error(n, FFU_ERR_FORMAT, "kernel_shape has %d values, expected %d", cnt, nd);
    for (int i = 0; i < nd; i++) {
        if (kernel && ks && kernel[i] >= 0 && ks[i] != kernel[i])
            return nn_node_error(n, FFU_ERR_FORMAT, "kernel_shape does not match the weights");
        k[i] = kernel ? kernel[i] : ks ? ks[i] : -1;
        if (k[i] == -1 && !kernel)
            return nn_node_error(n, FFU_ERR_FORMAT, "kernel_shape is missing");
        if (k[i] < 1 && k[i] != -1)
            return nn_node_error(n, FFU_ERR_FORMAT, "kernel size %lld", (long long)k[i]);
    }
    if ((e = spatial_attr(n, "strides", nd, 1, 1, st)) < 0) return e;
    if ((e = spatial_attr(n, "dilations", nd, 1, 1, dil)) < 0) return e;
    const int64_t *p = nn_attr_ints(n, "pads", &cnt);
    if (p) {
        if (cnt != 2 * nd)
            return nn_node_error(n, FFU_ERR_FORMAT, "pads has %d values, expected %d", cnt, 2 * nd);
        for (int i = 0; i < 2 * nd; i++) {
            if (p[i] < 0) return nn_node_error(n, FFU_ERR_UNSUPPORTED, "negative pads");
            pads[i] = p[i];
        }
    }
    const char *ap = nn_attr_string(n, "auto_pad", "NOTSET");
    enum { NOTSET, SAME_UPPER, SAME_LOWER, VALID } mode;
    if (!*ap || strcmp(ap, "NOTSET") == 0)
        mode = NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0)
        mode = SAME_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0)
        mode = SAME_LOWER;
    else if (strcmp(ap, "VALID") == 0)
        mode = VALID;
    else
        return nn_node_error(n, FFU_ERR_FORMAT, "auto_pad '%s' is unknown", ap);
    int ceil_mode = kind == NN_WINDOW_POOL && nn_attr_int(n, "ceil_mode", 0) != 0;

    const int64_t *oshape = NULL;
    if (kind == NN_WINDOW_CONV_TRANSPOSE) {
        if ((e = spatial_attr(n, "output_padding", nd, 0, 0, outpad)) < 0) return e;
        oshape = nn_attr_ints(n, "output_shape", &cnt);
        if (oshape) {
            /* either the spatial dims or the whole output shape */
            if (cnt == nd + 2)
                oshape += 2;
            else if (cnt != nd)
                return nn_node_error(n, FFU_ERR_FORMAT, "output_shape has %d values", cnt);
        }
    }

    for (int i = 0; i < nd; i++) {
        int s = 3 - nd + i;
        int64_t x = in[i], eff = k[i] < 0 ? -1 : (k[i] - 1) * dil[i] + 1, o = -1;
        int64_t p0 = pads[i], p1 = pads[nd + i];
        if (kind == NN_WINDOW_CONV_TRANSPOSE) {
            if (x >= 0 && eff >= 0) {
                int64_t full = st[i] * (x - 1) + outpad[i] + eff;
                int64_t target = oshape                                       ? oshape[i]
                                 : (mode == SAME_UPPER || mode == SAME_LOWER) ? x * st[i]
                                                                              : -1;
                if (target >= 0) {
                    /* the odd pixel of padding is cropped at the end, except for
                     * SAME_LOWER (as for Conv; the ONNX reference outputs agree) */
                    int64_t total = full - target;
                    if (total < 0) total = 0;
                    if (mode == SAME_LOWER) {
                        p0 = total - total / 2;
                        p1 = total / 2;
                    } else {
                        p0 = total / 2;
                        p1 = total - total / 2;
                    }
                } else if (mode == VALID) {
                    p0 = p1 = 0;
                }
                o = full - p0 - p1;
                if (oshape && oshape[i] > o) o = oshape[i];
            }
        } else if (x >= 0 && eff >= 0) {
            if (mode == SAME_UPPER || mode == SAME_LOWER) {
                o = div_ceil(x, st[i]);
                int64_t total = (o - 1) * st[i] + eff - x;
                if (total < 0) total = 0;
                p0 = mode == SAME_UPPER ? total / 2 : total - total / 2;
                p1 = total - p0;
            } else {
                if (mode == VALID) p0 = p1 = 0;
                int64_t span = x + p0 + p1 - eff;
                if (span < 0)
                    return nn_node_error(n, FFU_ERR_FORMAT,
                                         "window %lld is larger than the padded input %lld",
                                         (long long)eff, (long long)(x + p0 + p1));
                o = (ceil_mode ? div_ceil(span, st[i]) : span / st[i]) + 1;
                /* a window that would start in the end padding is dropped */
                if (ceil_mode && (o - 1) * st[i] >= x + p0) o--;
            }
        }
        if (o == 0 || o < -1)
            return nn_node_error(n, FFU_ERR_FORMAT, "output size %lld", (long long)o);
        w->in[s] = x;
        w->out[s] = o;
        w->k[s] = k[i];
        w->stride[s] = st[i];
        w->dil[s] = dil[i];
        w->pad0[s] = p0;
        w->pad1[s] = p1;
    }
    return FFU_OK;
}

/* Output range [*lo, *hi) of positions o in [0, out) with 0 <= o * s + off < in: the
 * outputs that one kernel tap reads from real (unpadded) input. */
static void tap_range(int64_t off, int64_t s, int64_t in, int64_t out, int64_t *lo, int64_t *hi)
{
    int64_t a = div_ceil(-off, s), b = div_floor(in - 1 - off, s) + 1;
    *lo = a < 0 ? 0 : a;
    *hi = b > out ? out : b;
    if (*hi < *lo) *hi = *lo;
}

/* ---- Conv -------------------------------------------------------------------------------- */

typedef struct conv_geom {
    int64_t N, C, M, group;
    nn_window w;
} conv_geom;

/* Validates X, W, B of a Conv (transpose = 0) or ConvTranspose node and computes the
 * geometry; M is the number of output channels. */
static ffu_status conv_geom_init(const nn_graph *g, const nn_node *n, int transpose, conv_geom *cg)
{
    /* Conv's optional inputs 3 and 4 are a fused Add's residual and a fused Mul's
     * scale (see ir.h) */
    ffu_status e = nn_check_inputs(g, n, 2, transpose ? 3 : 5);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, 1), *b = nn_in(g, n, 2);
    if (x->dtype != FFU_DTYPE_F32 || w->dtype != FFU_DTYPE_F32 || (b && b->dtype != FFU_DTYPE_F32))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s (only f32)",
                             ffu_dtype_name(x->dtype != FFU_DTYPE_F32 ? x->dtype : w->dtype));
    if (w->shape.rank < 3)
        return nn_node_error(n, FFU_ERR_FORMAT, "weights of rank %d", w->shape.rank);
    int rank = w->shape.rank;
    if (x->shape.rank >= 0 && x->shape.rank != rank)
        return nn_node_error(n, FFU_ERR_FORMAT, "input rank %d, weight rank %d", x->shape.rank,
                             rank);
    int nd = rank - 2;
    int64_t group = nn_attr_int(n, "group", 1);
    if (group < 1) return nn_node_error(n, FFU_ERR_FORMAT, "group %lld", (long long)group);
    memset(cg, 0, sizeof *cg);
    cg->group = group;
    cg->N = x->shape.rank >= 0 ? x->shape.d[0] : -1;
    cg->C = x->shape.rank >= 0 ? x->shape.d[1] : -1;
    int64_t w0 = w->shape.d[0], w1 = w->shape.d[1];
    if (!transpose) {
        cg->M = w0;
        if (cg->C >= 0 && w1 >= 0 && w1 * group != cg->C)
            return nn_node_error(n, FFU_ERR_FORMAT,
                                 "%lld input channels, weights expect %lld x group %lld",
                                 (long long)cg->C, (long long)w1, (long long)group);
        if (w0 >= 0 && w0 % group != 0)
            return nn_node_error(n, FFU_ERR_FORMAT, "%lld output channels, group %lld",
                                 (long long)w0, (long long)group);
    } else {
        cg->M = w1 >= 0 ? w1 * group : -1;
        if (cg->C >= 0 && w0 >= 0 && w0 != cg->C)
            return nn_node_error(n, FFU_ERR_FORMAT, "%lld input channels, weights have %lld",
                                 (long long)cg->C, (long long)w0);
        if (w0 >= 0 && w0 % group != 0)
            return nn_node_error(n, FFU_ERR_FORMAT, "%lld input channels, group %lld",
                                 (long long)w0, (long long)group);
    }
    if (b && b->shape.rank >= 0 && cg->M >= 0 && nn_numel(b) >= 0 && nn_numel(b) != cg->M)
        return nn_node_error(n, FFU_ERR_FORMAT, "bias has %lld values for %lld channels",
                             (long long)nn_numel(b), (long long)cg->M);
    int64_t in[3], k[3];
    for (int i = 0; i < nd; i++) {
        in[i] = x->shape.rank >= 0 ? x->shape.d[2 + i] : -1;
        k[i] = w->shape.d[2 + i];
    }
    return nn_window_init(n, transpose ? NN_WINDOW_CONV_TRANSPOSE : NN_WINDOW_CONV, nd, in, k,
                          &cg->w);
}

/* A fused 2x2 stride-2 max pool after the activation (`_pool` = 2, ir.h); 0 if none. */
static int conv_pool(const nn_node *n) { return nn_attr_int(n, "_pool", 0) == 2 ? 2 : 0; }

static ffu_status conv_set_output(nn_graph *g, nn_node *n, const conv_geom *cg)
{
    nn_shape s = {.rank = cg->w.nd + 2};
    s.d[0] = cg->N;
    s.d[1] = cg->M;
    int pool = n->op == NN_OP_CONV ? conv_pool(n) : 0;
    if (pool && cg->w.nd != 2)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "a fused pool needs 2 spatial dims");
    for (int i = 0; i < cg->w.nd; i++) {
        int64_t o = cg->w.out[3 - cg->w.nd + i];
        s.d[2 + i] = pool && o >= 0 ? o / 2 : o;
        if (pool && o >= 0 && o < 2)
            return nn_node_error(n, FFU_ERR_FORMAT, "output %lld is too small to pool", (long long)o);
    }
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, &s);
}

/* The residual input (index 3) of a fused Conv + Add, or NULL. */
static const nn_tensor *conv_residual(const nn_graph *g, const nn_node *n)
{
    return n->ninputs > 3 ? nn_in(g, n, 3) : NULL;
}

/* The scale input (index 4) of a fused Conv + Mul, or NULL. */
static const nn_tensor *conv_scale(const nn_graph *g, const nn_node *n)
{
    return n->ninputs > 4 ? nn_in(g, n, 4) : NULL;
}

static ffu_status conv_infer(nn_graph *g, nn_node *n)
{
    conv_geom cg;
    ffu_status e = conv_geom_init(g, n, 0, &cg);
    if (e < 0 || (e = conv_set_output(g, n, &cg)) < 0) return e;
    const nn_tensor *r = conv_residual(g, n), *y = nn_out(g, n, 0);
    if (r && conv_pool(n))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "a residual and a fused pool together");
    if (r && (r->dtype != FFU_DTYPE_F32 ||
              (nn_shape_known(&r->shape) && nn_shape_known(&y->shape) &&
               !nn_shape_equal(&r->shape, &y->shape))))
        return nn_node_error(n, FFU_ERR_FORMAT, "the residual input must be f32 with the output's shape");
    const nn_tensor *s = conv_scale(g, n);
    if (s && r)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "a residual and a fused scale together");
    if (s && (s->dtype != FFU_DTYPE_F32 || (nn_shape_known(&s->shape) && nn_numel(s) != 1)))
        return nn_node_error(n, FFU_ERR_FORMAT, "the scale input must be one f32 value");
    return FFU_OK;
}

/* With a fused pool the convolution is computed whole into scratch first. */
static size_t conv_scratch_bytes(const nn_graph *g, const nn_node *n)
{
    conv_geom cg;
    if (!conv_pool(n) || conv_geom_init(g, n, 0, &cg) < 0) return 0;
    int64_t e = cg.N * cg.M * cg.w.out[0] * cg.w.out[1] * cg.w.out[2];
    return e > 0 ? (size_t)e * sizeof(float) : 0;
}

static ffu_status conv_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    conv_geom cg;
    ffu_status e = conv_geom_init(g, n, 0, &cg);
    if (e < 0) return e;
    int pool = conv_pool(n);
    const nn_window *w = &cg.w;
    const float *X = in[0], *W = in[1], *B = n->ninputs > 2 ? in[2] : NULL;
    /* the residual may be the output buffer itself (the planner puts the output in
     * place): each output plane reads only its own residual plane, before writing */
    const float *R = conv_residual(g, n) ? in[3] : NULL;
    /* a fused scale multiplies the sums before the bias is added (ir.h) */
    const float *S = conv_scale(g, n) ? in[4] : NULL;
    float *Y = pool ? scratch : out[0];
    int64_t N = cg.N, C = cg.C, M = cg.M, cpg = C / cg.group, mpg = M / cg.group;
    int64_t ID = w->in[0], IH = w->in[1], IW = w->in[2];
    int64_t OD = w->out[0], OH = w->out[1], OW = w->out[2];
    int64_t KD = w->k[0], KH = w->k[1], KW = w->k[2];
    int64_t iplane = ID * IH * IW, oplane = OD * OH * OW, ksize = KD * KH * KW;
    int64_t sw = w->stride[2];

    for (int64_t b = 0; b < N; b++)
        for (int64_t m = 0; m < M; m++) {
            int64_t grp = m / mpg;
            float *y = Y + (b * M + m) * oplane;
            float bias = B && !S ? B[m] : 0.0f;
            if (R) {
                const float *r = R + (b * M + m) * oplane;
                for (int64_t i = 0; i < oplane; i++)
                    y[i] = bias + r[i];
            } else {
                for (int64_t i = 0; i < oplane; i++)
                    y[i] = bias;
            }
            for (int64_t c = 0; c < cpg; c++) {
                const float *xc = X + (b * C + grp * cpg + c) * iplane;
                const float *wk = W + (m * cpg + c) * ksize;
                for (int64_t kd = 0; kd < KD; kd++) {
                    int64_t offd = kd * w->dil[0] - w->pad0[0], d0, d1;
                    tap_range(offd, w->stride[0], ID, OD, &d0, &d1);
                    for (int64_t kh = 0; kh < KH; kh++) {
                        int64_t offh = kh * w->dil[1] - w->pad0[1], h0, h1;
                        tap_range(offh, w->stride[1], IH, OH, &h0, &h1);
                        for (int64_t kw = 0; kw < KW; kw++) {
                            int64_t offw = kw * w->dil[2] - w->pad0[2], x0, x1;
                            tap_range(offw, sw, IW, OW, &x0, &x1);
                            float wv = wk[(kd * KH + kh) * KW + kw];
                            for (int64_t od = d0; od < d1; od++) {
                                int64_t id = od * w->stride[0] + offd;
                                for (int64_t oh = h0; oh < h1; oh++) {
                                    int64_t ih = oh * w->stride[1] + offh;
                                    const float *xr = xc + (id * IH + ih) * IW + offw;
                                    float *yr = y + (od * OH + oh) * OW;
                                    if (sw == 1)
                                        for (int64_t ox = x0; ox < x1; ox++)
                                            yr[ox] += wv * xr[ox];
                                    else
                                        for (int64_t ox = x0; ox < x1; ox++)
                                            yr[ox] += wv * xr[ox * sw];
                                }
                            }
                        }
                    }
                }
            }
            if (S) { /* -0 stays -0 without a bias, as after a lone Mul */
                float s = *S;
                for (int64_t i = 0; i < oplane; i++)
                    y[i] *= s;
                if (B)
                    for (int64_t i = 0; i < oplane; i++)
                        y[i] += B[m];
            }
        }
    nn_apply_node_act(g, n, Y, N, M, oplane);
    if (pool) { /* 2x2 windows, stride 2, floor: the last odd row or column is dropped */
        float *P = out[0];
        int64_t PH = OH / 2, PW = OW / 2;
        for (int64_t p = 0; p < N * M; p++)
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    const float *a = Y + (p * OH + 2 * ph) * OW + 2 * pw, *b = a + OW;
                    float v = a[0];
                    /* MaxPool's comparison order: NaN only wins when it comes first */
                    if (a[1] > v) v = a[1];
                    if (b[0] > v) v = b[0];
                    if (b[1] > v) v = b[1];
                    P[(p * PH + ph) * PW + pw] = v;
                }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_conv = {conv_infer, conv_run, conv_scratch_bytes, 0};

/* ---- ConvTranspose ------------------------------------------------------------------------- */

static ffu_status conv_transpose_infer(nn_graph *g, nn_node *n)
{
    conv_geom cg;
    ffu_status e = conv_geom_init(g, n, 1, &cg);
    return e < 0 ? e : conv_set_output(g, n, &cg);
}

/* Each input pixel scatters kernel-weighted copies into the output: the innermost loop
 * walks one input row and writes every stride-th output element. */
static ffu_status conv_transpose_run(const nn_graph *g, const nn_node *n, void *const *in,
                                     void *const *out, void *scratch)
{
    (void)scratch;
    conv_geom cg;
    ffu_status e = conv_geom_init(g, n, 1, &cg);
    if (e < 0) return e;
    const nn_window *w = &cg.w;
    const float *X = in[0], *W = in[1], *B = n->ninputs > 2 ? in[2] : NULL;
    float *Y = out[0];
    int64_t N = cg.N, C = cg.C, M = cg.M, cpg = C / cg.group, mpg = M / cg.group;
    int64_t ID = w->in[0], IH = w->in[1], IW = w->in[2];
    int64_t OD = w->out[0], OH = w->out[1], OW = w->out[2];
    int64_t KD = w->k[0], KH = w->k[1], KW = w->k[2];
    int64_t iplane = ID * IH * IW, oplane = OD * OH * OW, ksize = KD * KH * KW;
    int64_t sw = w->stride[2];

    for (int64_t b = 0; b < N; b++)
        for (int64_t m = 0; m < M; m++) {
            int64_t grp = m / mpg, mm = m % mpg;
            float *y = Y + (b * M + m) * oplane;
            float bias = B ? B[m] : 0.0f;
            for (int64_t i = 0; i < oplane; i++)
                y[i] = bias;
            for (int64_t c = 0; c < cpg; c++) {
                const float *xc = X + (b * C + grp * cpg + c) * iplane;
                const float *wk = W + ((grp * cpg + c) * mpg + mm) * ksize;
                for (int64_t kd = 0; kd < KD; kd++) {
                    int64_t offd = kd * w->dil[0] - w->pad0[0], d0, d1;
                    tap_range(offd, w->stride[0], OD, ID, &d0, &d1);
                    for (int64_t kh = 0; kh < KH; kh++) {
                        int64_t offh = kh * w->dil[1] - w->pad0[1], h0, h1;
                        tap_range(offh, w->stride[1], OH, IH, &h0, &h1);
                        for (int64_t kw = 0; kw < KW; kw++) {
                            int64_t offw = kw * w->dil[2] - w->pad0[2], x0, x1;
                            tap_range(offw, sw, OW, IW, &x0, &x1);
                            float wv = wk[(kd * KH + kh) * KW + kw];
                            for (int64_t id = d0; id < d1; id++) {
                                int64_t od = id * w->stride[0] + offd;
                                for (int64_t ih = h0; ih < h1; ih++) {
                                    int64_t oh = ih * w->stride[1] + offh;
                                    const float *xr = xc + (id * IH + ih) * IW;
                                    float *yr = y + (od * OH + oh) * OW + offw;
                                    for (int64_t ix = x0; ix < x1; ix++)
                                        yr[ix * sw] += wv * xr[ix];
                                }
                            }
                        }
                    }
                }
            }
        }
    nn_apply_node_act(g, n, Y, N, M, oplane);
    return FFU_OK;
}

const nn_op_def nn_op_def_conv_transpose = {conv_transpose_infer, conv_transpose_run, NULL, 0};
