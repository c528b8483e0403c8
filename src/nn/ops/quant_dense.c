/* ONNX's integer convolution and matrix product, the other form ONNX Runtime writes
 * quantised models in (quant.c has the QDQ form's ops):
 *   ConvInteger(x, w, x_zero_point?, w_zero_point?)   -> i32 sums of (x - zx) (w - zw)
 *   MatMulInteger(a, b, a_zero_point?, b_zero_point?) -> i32 sums of (a - za) (b - zb)
 *   QLinearConv(x, sx, zx, w, sw, zw, sy, zy, bias?)  -> 8-bit: the sums (+ bias) times
 *   QLinearMatMul(a, sa, za, b, sb, zb, sy, zy)          sx sw / sy, rounded, + zy
 * Operands are u8 or i8; w's zero point and scale may be one per output channel, a's
 * one per row and b's one per column. Sums wrap at 32 bits, as the i32 output does;
 * the requantisation multiplies in double by the f32 product sx sw / sy and rounds
 * half to even, as the ONNX reference does. Reference kernels only; ConvInteger and
 * MatMulInteger with constant weights are mostly rewritten at load into f32 products
 * that give the same sums (rewrite_integer.c, docs/NN_ONNX.md "Quantised models"). */
#include <math.h>
#include <string.h>

#include "ops_internal.h"

static int is_q8(ffu_dtype t) { return t == FFU_DTYPE_U8 || t == FFU_DTYPE_I8; }

static inline int32_t q8_at(const void *p, ffu_dtype t, int64_t i)
{
    return t == FFU_DTYPE_I8 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* A zero point or scale with one value or `count` values (count < 0: not known yet). */
static ffu_status check_param(const nn_node *n, const nn_tensor *t, int64_t count, const char *what)
{
    if (!t || t->shape.rank < 0) return FFU_OK;
    int64_t k = nn_numel(t);
    if (t->shape.rank > 1 || (k != 1 && count >= 0 && k != count))
        return nn_node_error(n, FFU_ERR_FORMAT, "%s has %lld values (1 or %lld)", what,
                             (long long)k, (long long)count);
    return FFU_OK;
}

/* Element i of the zero point at input k (0 when the node has none), or of its only
 * element. in[] holds n->ninputs pointers: an input past them is never read. */
static int32_t zp_at(const nn_graph *g, const nn_node *n, void *const *in, int k, int64_t i)
{
    const nn_tensor *t = nn_in(g, n, k);
    if (!t || !in[k]) return 0;
    return (int32_t)nn_load_int(in[k], t->dtype, nn_numel(t) == 1 ? 0 : i);
}

/* Element i of the scale at input k (present: the QLinear ops require theirs). */
static float scale_at(const nn_graph *g, const nn_node *n, void *const *in, int k, int64_t i)
{
    return ((const float *)in[k])[nn_numel(nn_in(g, n, k)) == 1 ? 0 : i];
}

/* ConvInteger's and MatMulInteger's optional zero points (inputs 2 and 3): each of its
 * operand's type, with one value or count0 / count1 values. */
static ffu_status check_zero_points(const nn_graph *g, const nn_node *n, int64_t count0,
                                    int64_t count1)
{
    for (int i = 0; i < 2; i++) {
        const nn_tensor *z = nn_in(g, n, 2 + i);
        if (z && z->dtype != nn_in(g, n, i)->dtype)
            return nn_node_error(n, FFU_ERR_FORMAT, "zero point %d is %s, its operand %s", i,
                                 ffu_dtype_name(z->dtype), ffu_dtype_name(nn_in(g, n, i)->dtype));
        ffu_status st = check_param(n, z, i ? count1 : count0, i ? "zero point 1" : "zero point 0");
        if (st < 0) return st;
    }
    return FFU_OK;
}

/* Checks a QLinear op's scales (f32) and zero points (u8 / i8, the output's fixing the
 * output type); sc / zp are the input indices of the two operands' and the output's. */
static ffu_status check_qlinear(const nn_graph *g, const nn_node *n, const int sc[3],
                                const int zp[3], const int64_t count[3], ffu_dtype *yt)
{
    static const char *const sname[3] = {"input scale", "weight scale", "output scale"};
    static const char *const zname[3] = {"input zero point", "weight zero point",
                                         "output zero point"};
    for (int i = 0; i < 3; i++) {
        const nn_tensor *s = nn_in(g, n, sc[i]), *z = nn_in(g, n, zp[i]);
        if (s->dtype != FFU_DTYPE_F32)
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%s of type %s (f32)", sname[i],
                                 ffu_dtype_name(s->dtype));
        if (!is_q8(z->dtype))
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "%s of type %s (u8 or i8)", zname[i],
                                 ffu_dtype_name(z->dtype));
        ffu_status st = check_param(n, s, count[i], sname[i]);
        if (st < 0 || (st = check_param(n, z, count[i], zname[i])) < 0) return st;
    }
    *yt = nn_in(g, n, zp[2])->dtype;
    return FFU_OK;
}

/* round(v) + zy saturated to the output type, stored at y[i]. */
static void requantize(double v, int32_t zy, ffu_dtype yt, void *y, int64_t i)
{
    double lo = yt == FFU_DTYPE_I8 ? -128 : 0, hi = yt == FFU_DTYPE_I8 ? 127 : 255;
    double q = nearbyint(v) + zy;
    q = q != q ? zy : q < lo ? lo : q > hi ? hi : q;
    if (yt == FFU_DTYPE_I8)
        ((int8_t *)y)[i] = (int8_t)q;
    else
        ((uint8_t *)y)[i] = (uint8_t)q;
}

/* ---- ConvInteger, QLinearConv ------------------------------------------------------------ */

typedef struct qconv {
    int ix, iw; /* input indices of x and w */
    int64_t N, C, M, group;
    nn_window w;
} qconv;

static ffu_status qconv_init(const nn_graph *g, const nn_node *n, qconv *q)
{
    int qlinear = n->op == NN_OP_QLINEAR_CONV;
    ffu_status st = nn_check_inputs(g, n, qlinear ? 8 : 2, qlinear ? 9 : 4);
    if (st < 0) return st;
    memset(q, 0, sizeof *q);
    q->iw = qlinear ? 3 : 1;
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, q->iw);
    if (!is_q8(x->dtype) || !is_q8(w->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "operands of types %s and %s (u8 or i8)",
                             ffu_dtype_name(x->dtype), ffu_dtype_name(w->dtype));
    int rank = w->shape.rank;
    if (rank < 3 || (x->shape.rank >= 0 && x->shape.rank != rank))
        return nn_node_error(n, FFU_ERR_FORMAT, "input rank %d, weight rank %d", x->shape.rank,
                             rank);
    q->group = nn_attr_int(n, "group", 1);
    q->N = x->shape.rank >= 0 ? x->shape.d[0] : -1;
    q->C = x->shape.rank >= 0 ? x->shape.d[1] : -1;
    q->M = w->shape.d[0];
    if (q->group < 1 || (q->M >= 0 && q->M % q->group) ||
        (q->C >= 0 && w->shape.d[1] >= 0 && w->shape.d[1] * q->group != q->C))
        return nn_node_error(n, FFU_ERR_FORMAT, "%lld input and %lld output channels, group %lld",
                             (long long)q->C, (long long)q->M, (long long)q->group);
    int64_t in[3], k[3];
    for (int i = 0; i < rank - 2; i++) {
        in[i] = x->shape.rank >= 0 ? x->shape.d[2 + i] : -1;
        k[i] = w->shape.d[2 + i];
    }
    return nn_window_init(n, NN_WINDOW_CONV, rank - 2, in, k, &q->w);
}

/* qconv_init, then the scales, zero points and bias against the channel count (again
 * at run time, when shapes unknown at load are known); *yt: the output type. */
static ffu_status qconv_check(const nn_graph *g, const nn_node *n, qconv *q_out, ffu_dtype *yt_out)
{
    qconv q;
    ffu_status st = qconv_init(g, n, &q);
    if (st < 0) return st;
    ffu_dtype yt = FFU_DTYPE_I32;
    if (n->op == NN_OP_QLINEAR_CONV) {
        const int sc[3] = {1, 4, 6}, zp[3] = {2, 5, 7};
        const int64_t count[3] = {1, q.M, 1};
        if ((st = check_qlinear(g, n, sc, zp, count, &yt)) < 0) return st;
        const nn_tensor *b = nn_in(g, n, 8);
        if (b && (b->dtype != FFU_DTYPE_I32 ||
                  (b->shape.rank >= 0 && q.M >= 0 && (b->shape.rank != 1 || b->shape.d[0] != q.M))))
            return nn_node_error(n, FFU_ERR_FORMAT, "the bias must be %lld i32 values",
                                 (long long)q.M);
    } else {
        if ((st = check_zero_points(g, n, 1, q.M)) < 0) return st;
    }
    *q_out = q;
    *yt_out = yt;
    return FFU_OK;
}

static ffu_status qconv_infer(nn_graph *g, nn_node *n)
{
    qconv q;
    ffu_dtype yt = FFU_DTYPE_I32;
    ffu_status st = qconv_check(g, n, &q, &yt);
    if (st < 0) return st;
    nn_shape s = {.rank = q.w.nd + 2, .d = {q.N, q.M}};
    for (int i = 0; i < q.w.nd; i++)
        s.d[2 + i] = q.w.out[3 - q.w.nd + i];
    return nn_set_out(g, n, 0, yt, &s);
}

/* Per group: the shifted input (x - zx) gathered into rows of kernel taps x columns of
 * output positions (0 where a tap reads padding), then each output channel's row is the
 * sum over taps of (w - zw) times a row, four channels and QC_COLS positions at a time.
 * The products (at most 255 x 255) and the sums of QC_ROWS of them (under 2^24) are
 * exact in f32, which the compiler vectorises best; each such partial sum is added in
 * 32 bits that wrap as the i32 output does. Scratch: the tap rows. */
enum { QC_COLS = 256, QC_ROWS = 256 };
static size_t qconv_scratch_bytes(const nn_graph *g, const nn_node *n)
{
    qconv q;
    if (qconv_init(g, n, &q) < 0 || q.C < 0) return 0;
    const nn_window *w = &q.w;
    int64_t cols = w->out[0] * w->out[1] * w->out[2];
    int64_t rows = q.C / q.group * w->k[0] * w->k[1] * w->k[2];
    if (cols <= 0 || rows <= 0) return 0;
    /* a hostile file's shapes: too much to allocate, never a wrapped small size */
    if (rows > ((int64_t)1 << 58) / cols) return (size_t)1 << 60;
    return (size_t)(rows * cols) * sizeof(float);
}

/* The tap rows of group grp of image b: row (c, kd, kh, kw) holds x - zx at each
 * output position's tap, 0 where the tap reads padding. */
static void qconv_gather(const qconv *q, const void *X, ffu_dtype xt, int32_t zx, int64_t b,
                         int64_t grp, float *col)
{
    const nn_window *wd = &q->w;
    int64_t cpg = q->C / q->group;
    int64_t ID = wd->in[0], IH = wd->in[1], IW = wd->in[2];
    for (int64_t c = 0; c < cpg; c++) {
        int64_t xc = (b * q->C + grp * cpg + c) * ID;
        for (int64_t kd = 0; kd < wd->k[0]; kd++)
            for (int64_t kh = 0; kh < wd->k[1]; kh++)
                for (int64_t kw = 0; kw < wd->k[2]; kw++)
                    for (int64_t od = 0; od < wd->out[0]; od++) {
                        int64_t id = od * wd->stride[0] - wd->pad0[0] + kd * wd->dil[0];
                        for (int64_t oh = 0; oh < wd->out[1]; oh++) {
                            int64_t ih = oh * wd->stride[1] - wd->pad0[1] + kh * wd->dil[1];
                            for (int64_t ow = 0; ow < wd->out[2]; ow++) {
                                int64_t iw = ow * wd->stride[2] - wd->pad0[2] + kw * wd->dil[2];
                                int in_img =
                                    id >= 0 && id < ID && ih >= 0 && ih < IH && iw >= 0 && iw < IW;
                                int64_t xi = ((xc + id) * IH + ih) * IW + iw;
                                *col++ = in_img ? (float)(q8_at(X, xt, xi) - zx) : 0.0f;
                            }
                        }
                    }
    }
}

static ffu_status qconv_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    qconv q;
    ffu_dtype yt = FFU_DTYPE_I32;
    ffu_status st = qconv_check(g, n, &q, &yt);
    if (st < 0) return st;
    int qlinear = n->op == NN_OP_QLINEAR_CONV;
    const int izw = qlinear ? 5 : 3;
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, q.iw);
    const void *X = in[0], *W = in[q.iw];
    const int32_t *bias = qlinear && n->ninputs > 8 ? in[8] : NULL;
    const nn_window *wd = &q.w;
    int64_t cpg = q.C / q.group, mpg = q.M / q.group;
    int64_t cols = wd->out[0] * wd->out[1] * wd->out[2];
    int64_t rows = cpg * wd->k[0] * wd->k[1] * wd->k[2];
    float *col = scratch;
    int32_t zx = zp_at(g, n, in, 2, 0);
    for (int64_t b = 0; b < q.N; b++)
        for (int64_t grp = 0; grp < q.group; grp++) {
            qconv_gather(&q, X, x->dtype, zx, b, grp, col);
            /* four output channels x QC_COLS positions at a time, their sums in L1 */
            for (int64_t p0 = 0; p0 < cols; p0 += QC_COLS) {
                int64_t pn = cols - p0 < QC_COLS ? cols - p0 : QC_COLS;
                for (int64_t m0 = grp * mpg; m0 < (grp + 1) * mpg; m0 += 4) {
                    uint32_t acc[4][QC_COLS];
                    int nm = (grp + 1) * mpg - m0 < 4 ? (int)((grp + 1) * mpg - m0) : 4;
                    int32_t zw[4] = {0};
                    for (int j = 0; j < 4; j++) {
                        uint32_t b0 = j < nm && bias ? (uint32_t)bias[m0 + j] : 0;
                        for (int64_t p = 0; p < pn; p++)
                            acc[j][p] = b0;
                        if (j < nm) zw[j] = zp_at(g, n, in, izw, m0 + j);
                    }
                    for (int64_t r0 = 0; r0 < rows; r0 += QC_ROWS) {
                        float fa[4][QC_COLS] = {{0}};
                        for (int64_t r = r0; r < rows && r < r0 + QC_ROWS; r++) {
                            float wv[4] = {0};
                            for (int j = 0; j < nm; j++)
                                wv[j] = (float)(q8_at(W, w->dtype, (m0 + j) * rows + r) - zw[j]);
                            const float *xr = col + r * cols + p0;
                            for (int64_t p = 0; p < pn; p++) {
                                float v = xr[p];
                                fa[0][p] += wv[0] * v;
                                fa[1][p] += wv[1] * v;
                                fa[2][p] += wv[2] * v;
                                fa[3][p] += wv[3] * v;
                            }
                        }
                        for (int j = 0; j < 4; j++)
                            for (int64_t p = 0; p < pn; p++)
                                acc[j][p] += (uint32_t)(int32_t)fa[j][p];
                    }
                    for (int j = 0; j < nm; j++) {
                        int64_t m = m0 + j, yo = (b * q.M + m) * cols + p0;
                        if (!qlinear) {
                            memcpy((int32_t *)out[0] + yo, acc[j], (size_t)pn * sizeof(uint32_t));
                            continue;
                        }
                        double mult = scale_at(g, n, in, 1, 0) * scale_at(g, n, in, 4, m) /
                                      scale_at(g, n, in, 6, 0);
                        int32_t zy = zp_at(g, n, in, 7, 0);
                        for (int64_t p = 0; p < pn; p++)
                            requantize((double)(int32_t)acc[j][p] * mult, zy, yt, out[0], yo + p);
                    }
                }
            }
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_conv_integer = {qconv_infer, qconv_run, qconv_scratch_bytes, 0};
const nn_op_def nn_op_def_qlinear_conv = {qconv_infer, qconv_run, qconv_scratch_bytes, 0};

/* ---- MatMulInteger, QLinearMatMul -------------------------------------------------------- */

/* nn_matmul_geom_init, then the scales and zero points against the rows and columns
 * (again at run time); *yt: the output type. */
static ffu_status qmatmul_check(const nn_graph *g, const nn_node *n, nn_matmul_geom *mg_out,
                                ffu_dtype *yt_out)
{
    nn_matmul_geom mg;
    ffu_status st = nn_matmul_geom_init(g, n, &mg);
    if (st < 0) return st;
    int64_t rows = mg.out.rank >= 0 ? mg.M : -1, cols = mg.out.rank >= 0 ? mg.N : -1;
    ffu_dtype yt = FFU_DTYPE_I32;
    if (n->op == NN_OP_QLINEAR_MATMUL) {
        const int sc[3] = {1, 4, 6}, zp[3] = {2, 5, 7};
        const int64_t count[3] = {rows, cols, 1};
        if ((st = check_qlinear(g, n, sc, zp, count, &yt)) < 0) return st;
    } else {
        if ((st = check_zero_points(g, n, rows, cols)) < 0) return st;
    }
    *mg_out = mg;
    *yt_out = yt;
    return FFU_OK;
}

static ffu_status qmatmul_infer(nn_graph *g, nn_node *n)
{
    nn_matmul_geom mg;
    ffu_dtype yt = FFU_DTYPE_I32;
    ffu_status st = qmatmul_check(g, n, &mg, &yt);
    if (st < 0) return st;
    return nn_set_out(g, n, 0, yt, mg.out.rank >= 0 ? &mg.out : NULL);
}

/* Per matrix: B shifted (b - zb) into scratch, then each output row is the sum over k
 * of (a - za) times B's row k (wrapping 32-bit sums, a vectorised loop). Scratch: B and
 * one output row. */
static size_t qmatmul_scratch_bytes(const nn_graph *g, const nn_node *n)
{
    nn_matmul_geom mg;
    if (nn_matmul_geom_init(g, n, &mg) < 0 || mg.out.rank < 0 || mg.K < 0 || mg.N < 0) return 0;
    if (mg.K + 1 > ((int64_t)1 << 58) / (mg.N ? mg.N : 1)) return (size_t)1 << 60;
    return (size_t)((mg.K + 1) * mg.N) * sizeof(uint32_t);
}

static ffu_status qmatmul_run(const nn_graph *g, const nn_node *n, void *const *in,
                              void *const *out, void *scratch)
{
    nn_matmul_geom mg;
    ffu_dtype yt = FFU_DTYPE_I32;
    ffu_status st = qmatmul_check(g, n, &mg, &yt);
    if (st < 0) return st;
    int qlinear = n->op == NN_OP_QLINEAR_MATMUL;
    int ib = qlinear ? 3 : 1, izb = qlinear ? 5 : 3;
    const nn_tensor *a = nn_in(g, n, 0), *b = nn_in(g, n, ib), *y = nn_out(g, n, 0);
    int64_t nbatch = nn_shape_numel(&mg.batch), M = mg.M, N = mg.N, K = mg.K;
    uint32_t *bs = scratch, *acc_row = bs + K * N;
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t oa = nn_hd_offset(t, mg.batch.d, mg.sa, mg.batch.rank) * M * K;
        int64_t ob = nn_hd_offset(t, mg.batch.d, mg.sb, mg.batch.rank) * K * N;
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++)
                bs[k * N + j] =
                    (uint32_t)(q8_at(in[ib], b->dtype, ob + k * N + j) - zp_at(g, n, in, izb, j));
        for (int64_t i = 0; i < M; i++) {
            int64_t yo = (t * M + i) * N;
            uint32_t *acc = qlinear ? acc_row : (uint32_t *)out[0] + yo;
            memset(acc, 0, (size_t)N * sizeof *acc);
            int32_t za = zp_at(g, n, in, 2, i);
            for (int64_t k = 0; k < K; k++) {
                uint32_t av = (uint32_t)(q8_at(in[0], a->dtype, oa + i * K + k) - za);
                const uint32_t *br = bs + k * N;
                if (av)
                    for (int64_t j = 0; j < N; j++)
                        acc[j] += av * br[j];
            }
            if (!qlinear) continue;
            for (int64_t j = 0; j < N; j++) {
                double mult =
                    scale_at(g, n, in, 1, i) * scale_at(g, n, in, 4, j) / scale_at(g, n, in, 6, 0);
                requantize((double)(int32_t)acc[j] * mult, zp_at(g, n, in, 7, 0), y->dtype, out[0],
                           yo + j);
            }
        }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_matmul_integer = {qmatmul_infer, qmatmul_run, qmatmul_scratch_bytes, 0};
const nn_op_def nn_op_def_qlinear_matmul = {qmatmul_infer, qmatmul_run, qmatmul_scratch_bytes, 0};
