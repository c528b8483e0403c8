/* Gemm and MatMul: shape inference and the reference kernels (f32, fused activation).
 *
 * Plain triple loops in i-k-j order so the innermost loop streams one row of B and one
 * row of the output (contiguous, vectorisable); a transposed B uses dot products over
 * contiguous rows instead. These are the oracle for the oneDNN matmul/inner-product
 * primitives. */
#include <string.h>

#include "ops_internal.h"

/* Y[M,N] = A'[M,K] * B'[K,N] where A' is A or A^T (ta) and B' is B or B^T (tb); A is
 * stored [M,K] (or [K,M] when ta) and B [K,N] (or [N,K] when tb). */
static void matmul_f32(const float *A, const float *B, float *Y, int64_t M, int64_t N, int64_t K,
                       int ta, int tb)
{
    for (int64_t i = 0; i < M; i++) {
        float *y = Y + i * N;
        if (!tb) {
            for (int64_t j = 0; j < N; j++)
                y[j] = 0.0f;
            for (int64_t k = 0; k < K; k++) {
                float a = ta ? A[k * M + i] : A[i * K + k];
                const float *b = B + k * N;
                for (int64_t j = 0; j < N; j++)
                    y[j] += a * b[j];
            }
        } else {
            for (int64_t j = 0; j < N; j++) {
                const float *b = B + j * K;
                float s = 0.0f;
                if (ta)
                    for (int64_t k = 0; k < K; k++)
                        s += A[k * M + i] * b[k];
                else
                    for (int64_t k = 0; k < K; k++)
                        s += A[i * K + k] * b[k];
                y[j] = s;
            }
        }
    }
}

static ffu_status check_f32(const nn_node *n, const nn_tensor *t)
{
    if (t && t->dtype != FFU_DTYPE_F32)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s (only f32)",
                             ffu_dtype_name(t->dtype));
    return FFU_OK;
}

/* ---- Gemm ---------------------------------------------------------------------------------- */

typedef struct gemm_geom {
    int64_t M, N, K;
    int ta, tb;
    /* C broadcast to [M,N]: element (i,j) is C[i * crs + j * ccs]; has_c = 0 if absent */
    int has_c;
    int64_t crs, ccs;
} gemm_geom;

static ffu_status gemm_geom_init(const nn_graph *g, const nn_node *n, gemm_geom *gg)
{
    ffu_status e = nn_check_inputs(g, n, 2, 3);
    if (e < 0) return e;
    const nn_tensor *a = nn_in(g, n, 0), *b = nn_in(g, n, 1), *c = nn_in(g, n, 2);
    if ((e = check_f32(n, a)) < 0 || (e = check_f32(n, b)) < 0 || (e = check_f32(n, c)) < 0)
        return e;
    memset(gg, 0, sizeof *gg);
    gg->ta = nn_attr_int(n, "transA", 0) != 0;
    gg->tb = nn_attr_int(n, "transB", 0) != 0;
    gg->M = gg->N = gg->K = -1;
    if (a->shape.rank >= 0 && a->shape.rank != 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "A has rank %d (expects 2)", a->shape.rank);
    if (b->shape.rank >= 0 && b->shape.rank != 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "B has rank %d (expects 2)", b->shape.rank);
    int64_t ka = -1, kb = -1;
    if (a->shape.rank == 2) {
        gg->M = a->shape.d[gg->ta ? 1 : 0];
        ka = a->shape.d[gg->ta ? 0 : 1];
    }
    if (b->shape.rank == 2) {
        gg->N = b->shape.d[gg->tb ? 0 : 1];
        kb = b->shape.d[gg->tb ? 1 : 0];
    }
    if (ka >= 0 && kb >= 0 && ka != kb)
        return nn_node_error(n, FFU_ERR_FORMAT, "inner dims %lld and %lld differ", (long long)ka,
                             (long long)kb);
    gg->K = ka >= 0 ? ka : kb;
    if (c && nn_attr_float(n, "beta", 1.0f) != 0.0f) {
        if (c->shape.rank > 2)
            return nn_node_error(n, FFU_ERR_FORMAT, "C has rank %d", c->shape.rank);
        int64_t cm = c->shape.rank == 2 ? c->shape.d[0] : 1;
        int64_t cn = c->shape.rank >= 1 ? c->shape.d[c->shape.rank - 1] : 1;
        if ((cm != 1 && gg->M >= 0 && cm >= 0 && cm != gg->M) ||
            (cn != 1 && gg->N >= 0 && cn >= 0 && cn != gg->N))
            return nn_node_error(n, FFU_ERR_FORMAT, "C does not broadcast to %lldx%lld",
                                 (long long)gg->M, (long long)gg->N);
        gg->has_c = 1;
        gg->ccs = cn == 1 ? 0 : 1;
        gg->crs = cm == 1 ? 0 : cn;
    }
    return FFU_OK;
}

static ffu_status gemm_infer(nn_graph *g, nn_node *n)
{
    gemm_geom gg;
    ffu_status e = gemm_geom_init(g, n, &gg);
    if (e < 0) return e;
    nn_shape s = {.rank = 2, .d = {gg.M, gg.N}};
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, &s);
}

static ffu_status gemm_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                           void *scratch)
{
    (void)scratch;
    gemm_geom gg;
    ffu_status e = gemm_geom_init(g, n, &gg);
    if (e < 0) return e;
    float alpha = nn_attr_float(n, "alpha", 1.0f), beta = nn_attr_float(n, "beta", 1.0f);
    const float *C = gg.has_c ? in[2] : NULL;
    float *Y = out[0];
    matmul_f32(in[0], in[1], Y, gg.M, gg.N, gg.K, gg.ta, gg.tb);
    for (int64_t i = 0; i < gg.M; i++) {
        float *y = Y + i * gg.N;
        for (int64_t j = 0; j < gg.N; j++) {
            float v = alpha * y[j];
            if (C) v += beta * C[i * gg.crs + j * gg.ccs];
            y[j] = v;
        }
    }
    nn_apply_node_act(g, n, Y, gg.M, gg.N, 1);
    return FFU_OK;
}

const nn_op_def nn_op_def_gemm = {gemm_infer, gemm_run, NULL, 0};

/* ---- MatMul --------------------------------------------------------------------------------- */

static void batch_strides(const nn_shape *s, int nb, const nn_shape *batch, int64_t *st)
{
    int64_t acc = 1;
    for (int i = batch->rank - 1; i >= 0; i--) {
        int j = i - (batch->rank - nb);
        int64_t d = j >= 0 ? s->d[j] : 1;
        st[i] = d == 1 ? 0 : acc;
        acc *= d;
    }
}

ffu_status nn_matmul_geom_init(const nn_graph *g, const nn_node *n, nn_matmul_geom *mg)
{
    /* MatMulInteger (A, B, zero points) and QLinearMatMul (A, its scale and zero point,
     * then B's, then the output's) take 8-bit operands */
    int qlinear = n->op == NN_OP_QLINEAR_MATMUL, integer = qlinear || n->op == NN_OP_MATMUL_INTEGER;
    int ib = qlinear ? 3 : 1;
    ffu_status e = nn_check_inputs(g, n, qlinear ? 8 : 2, qlinear ? 8 : integer ? 4 : 2);
    if (e < 0) return e;
    const nn_tensor *a = nn_in(g, n, 0), *b = nn_in(g, n, ib);
    if (integer) {
        for (int i = 0; i < 2; i++) {
            ffu_dtype t = (i ? b : a)->dtype;
            if (t != FFU_DTYPE_U8 && t != FFU_DTYPE_I8)
                return nn_node_error(n, FFU_ERR_UNSUPPORTED, "input %d of type %s (u8 or i8)",
                                     i ? ib : 0, ffu_dtype_name(t));
        }
    } else if ((e = check_f32(n, a)) < 0 || (e = check_f32(n, b)) < 0) {
        return e;
    }
    memset(mg, 0, sizeof *mg);
    if (a->shape.rank < 0 || b->shape.rank < 0) {
        mg->out.rank = -1;
        return FFU_OK;
    }
    if (a->shape.rank < 1 || b->shape.rank < 1)
        return nn_node_error(n, FFU_ERR_FORMAT, "scalar operand");
    const nn_shape *sa = &a->shape, *sb = &b->shape;
    mg->a1d = sa->rank == 1;
    mg->b1d = sb->rank == 1;
    mg->M = mg->a1d ? 1 : sa->d[sa->rank - 2];
    int64_t ka = sa->d[sa->rank - 1];
    int64_t kb = mg->b1d ? sb->d[0] : sb->d[sb->rank - 2];
    mg->N = mg->b1d ? 1 : sb->d[sb->rank - 1];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return nn_node_error(n, FFU_ERR_FORMAT, "inner dims %lld and %lld differ", (long long)ka,
                             (long long)kb);
    mg->K = ka >= 0 ? ka : kb;
    nn_shape ba = {.rank = mg->a1d ? 0 : sa->rank - 2}, bb = {.rank = mg->b1d ? 0 : sb->rank - 2};
    for (int i = 0; i < ba.rank; i++)
        ba.d[i] = sa->d[i];
    for (int i = 0; i < bb.rank; i++)
        bb.d[i] = sb->d[i];
    if ((e = nn_shape_broadcast(&ba, &bb, &mg->batch)) < 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "batch dims do not broadcast");
    batch_strides(&ba, ba.rank, &mg->batch, mg->sa);
    batch_strides(&bb, bb.rank, &mg->batch, mg->sb);
    mg->out = mg->batch;
    if (mg->out.rank + 2 > FFU_NN_MAX_RANK)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "rank too large");
    if (!mg->a1d) mg->out.d[mg->out.rank++] = mg->M;
    if (!mg->b1d) mg->out.d[mg->out.rank++] = mg->N;
    return FFU_OK;
}

static ffu_status matmul_infer(nn_graph *g, nn_node *n)
{
    nn_matmul_geom mg;
    ffu_status e = nn_matmul_geom_init(g, n, &mg);
    if (e < 0) return e;
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, mg.out.rank >= 0 ? &mg.out : NULL);
}

static ffu_status matmul_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    (void)scratch;
    nn_matmul_geom mg;
    ffu_status e = nn_matmul_geom_init(g, n, &mg);
    if (e < 0) return e;
    const float *A = in[0], *B = in[1];
    float *Y = out[0];
    int64_t nbatch = nn_shape_numel(&mg.batch);
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t oa = nn_hd_offset(t, mg.batch.d, mg.sa, mg.batch.rank);
        int64_t ob = nn_hd_offset(t, mg.batch.d, mg.sb, mg.batch.rank);
        matmul_f32(A + oa * mg.M * mg.K, B + ob * mg.K * mg.N, Y + t * mg.M * mg.N, mg.M, mg.N,
                   mg.K, 0, 0);
    }
    /* PReLU slopes are per channel = dim 1 of the output, as for every fused op */
    const nn_shape *o = &mg.out;
    if (o->rank >= 2)
        nn_apply_node_act(g, n, Y, o->d[0], o->d[1], nn_dims_prod(o, 2, o->rank));
    else
        nn_apply_node_act(g, n, Y, 1, 1, nn_shape_numel(o));
    return FFU_OK;
}

const nn_op_def nn_op_def_matmul = {matmul_infer, matmul_run, NULL, 0};
