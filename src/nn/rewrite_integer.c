/* Integer products on the float kernels. ONNX Runtime's dynamic quantisation writes
 * every Conv as DynamicQuantizeLinear -> ConvInteger -> Cast to f32 -> Mul by the
 * scales, and every MatMul with MatMulInteger; only the reference backend has integer
 * kernels, while the float ones are what the backends make fast.
 *
 * ConvInteger and MatMulInteger sum products (x - zx) (w - zw) of 8-bit operands:
 * |x - zx| <= 255 for u8 and i8 alike. With constant weights, the largest magnitude any
 * partial sum can reach is known at load: 255 times the largest sum of |w - zw| over
 * one output channel (one column for MatMulInteger). When that is at most 2^24, every
 * partial sum, in any order, is an integer that f32 holds exactly, so an f32 Conv or
 * MatMul of (x - zx) and (w - zw) gives the i32 sums bit for bit on any kernel that
 * multiplies and adds in f32 (bf16 and f16 operands hold those integers exactly too).
 * Winograd's and FFT's transforms round, so the rewritten nodes carry `_exact` = 1:
 * the cpu backend then gives its rounding variants (Winograd, bf16) a zero tolerance,
 * which none meets, and the cuda backend skips cuDNN's Winograd and FFT algorithms.
 *
 *   ConvInteger(x, w, zx?, zw?)   -> Conv(DequantizeLinear(x, 1, zx?), f32(w - zw))
 *   MatMulInteger(a, b, za?, zb?) -> MatMul(DequantizeLinear(a, 1, za?), f32(b - zb))
 *
 * A Cast to f32 that reads the result becomes an Identity of the float result (removed
 * later); any other reader gets the i32 value through one Cast of it. Nodes whose sums
 * could pass 2^24 stay integer (ref). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"
#include "rewrite.h"

enum { EXACT_LIMIT = 1 << 24 };

static int const_q8(const nn_tensor *t)
{
    return t && (t->flags & NN_T_CONST) && (t->dtype == FFU_DTYPE_U8 || t->dtype == FFU_DTYPE_I8) &&
           t->shape.rank >= 0 && nn_shape_numel(&t->shape) >= 1 &&
           (size_t)nn_shape_numel(&t->shape) == t->nbytes && t->data;
}

/* The zero point at input k is absent, or a constant of the operand's type with one
 * value or `count` values. */
static int const_zero_point(const nn_graph *g, const nn_node *n, int k, ffu_dtype type,
                            int64_t count)
{
    const nn_tensor *z = nn_in(g, n, k);
    if (!z) return 1;
    if (!const_q8(z) || z->dtype != type || z->shape.rank > 1) return 0;
    int64_t c = nn_shape_numel(&z->shape);
    return c == 1 || c == count;
}

/* The activation's zero point (input 2) holds one value: absent, a constant, a
 * DynamicQuantizeLinear's zero point, or a tensor declared with one element. */
static int scalar_zero_point(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *z = nn_in(g, n, 2);
    if (!z) return 1;
    if (z->shape.rank >= 0) return nn_shape_numel(&z->shape) == 1;
    int p = z->producer;
    return p >= 0 && g->nodes[p].op == NN_OP_DYNAMIC_QUANTIZE_LINEAR && g->nodes[p].noutputs == 3 &&
           g->nodes[p].outputs[2] == n->inputs[2];
}

/* f32 (w - zw) for the node's constant weight w, one zero point per output (zero points
 * with one value apply to all); NULL when some output's sum of |w - zw| times 255
 * could pass 2^24, or without memory for it (the node then stays integer, on ref).
 * Conv weights are [M, ...] with the output first; MatMul weights [K, N] with it last. */
static float *exact_weights(const nn_tensor *w, const nn_tensor *zw, int out_last)
{
    int64_t total = nn_shape_numel(&w->shape);
    int64_t outs = out_last ? w->shape.d[w->shape.rank - 1] : w->shape.d[0];
    if (outs < 1 || total % outs) return NULL;
    int64_t per = total / outs;
    int64_t *sum = calloc((size_t)outs, sizeof *sum);
    float *f = malloc((size_t)total * sizeof *f);
    if (!sum || !f) {
        free(sum), free(f);
        return NULL;
    }
    int zn = zw ? (int)(nn_shape_numel(&zw->shape) > 1) : 0;
    for (int64_t i = 0; i < total; i++) {
        int64_t o = out_last ? i % outs : i / per;
        int32_t v = (int32_t)(nn_load_int(w->data, w->dtype, i) -
                              (zw ? nn_load_int(zw->data, zw->dtype, zn ? o : 0) : 0));
        f[i] = (float)v;
        sum[o] += v < 0 ? -v : v;
    }
    int ok = 1;
    for (int64_t o = 0; o < outs; o++)
        ok &= sum[o] * 255 <= EXACT_LIMIT;
    free(sum);
    if (!ok) free(f);
    return ok ? f : NULL;
}

/* The f32 weights node i (ConvInteger or MatMulInteger) would run with, or NULL when
 * it stays integer. */
static float *rewritable(const nn_graph *g, int i)
{
    const nn_node *n = &g->nodes[i];
    if (n->op != NN_OP_CONV_INTEGER && n->op != NN_OP_MATMUL_INTEGER) return NULL;
    int conv = n->op == NN_OP_CONV_INTEGER;
    if (n->ninputs < 2 || n->ninputs > 4 || n->noutputs != 1 || n->outputs[0] < 0 ||
        n->inputs[0] < 0)
        return NULL;
    const nn_tensor *w = nn_in(g, n, 1);
    if (!const_q8(w) || (conv ? w->shape.rank < 3 : w->shape.rank != 2)) return NULL;
    int64_t outs = conv ? w->shape.d[0] : w->shape.d[1];
    if (!const_zero_point(g, n, 3, w->dtype, outs) || !scalar_zero_point(g, n)) return NULL;
    return exact_weights(w, nn_in(g, n, 3), !conv);
}

/* DynamicQuantizeLinear node d can become ffu.DynamicQuantizeSteps: its codes are read
 * only as input 0 of products that are being rewritten (wf[reader] set), each with
 * d's zero point as its own. */
static int steps_ok(const nn_graph *g, int d, float *const *wf)
{
    const nn_node *n = &g->nodes[d];
    if (n->op != NN_OP_DYNAMIC_QUANTIZE_LINEAR || n->noutputs != 3 || n->outputs[0] < 0 ||
        n->outputs[2] < 0 || (g->tensors[n->outputs[0]].flags & NN_T_OUTPUT))
        return 0;
    int q = n->outputs[0], readers = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const nn_node *r = &g->nodes[i];
        for (int j = 0; j < r->ninputs; j++) {
            if (r->inputs[j] != q) continue;
            if (j != 0 || !wf[i] || r->ninputs < 3 || r->inputs[2] != n->outputs[2]) return 0;
            readers++;
        }
    }
    return readers > 0;
}

/* Rewrites product node i with f32 weights wf; xf is the f32 tensor of its activation
 * minus its zero point when a DynamicQuantizeSteps computes it, else -1 (a
 * DequantizeLinear with scale 1 is added). *one: the constant 1.0 (-1: not made yet). */
static ffu_status rewrite_node(nn_graph *g, int i, const float *wf, int xf, int *one)
{
    nn_node *n = &g->nodes[i];
    int conv = n->op == NN_OP_CONV_INTEGER;
    char name[240];
    int y = n->outputs[0];
    nn_shape ws = nn_in(g, n, 1)->shape;
    int tw = nn_graph_add_const(g, "", FFU_DTYPE_F32, &ws, wf,
                                (size_t)nn_shape_numel(&ws) * sizeof(float), NN_COPY);
    if (tw < 0) return tw;
    if (xf < 0) {
        if (*one < 0) {
            const float v = 1.0f;
            nn_shape scalar = {.rank = 0};
            *one = nn_graph_add_const(g, "", FFU_DTYPE_F32, &scalar, &v, sizeof v, NN_COPY);
            if (*one < 0) return *one;
        }
        if ((xf = nn_graph_add_tensor(g, "", FFU_DTYPE_F32, NULL)) < 0) return xf;
        int dq_in[3] = {n->inputs[0], *one, n->ninputs > 2 ? n->inputs[2] : -1};
        snprintf(name, sizeof name, "%.200s#dq", n->name ? n->name : "");
        int dq = nn_graph_add_node(g, NN_OP_DEQUANTIZE_LINEAR, name, dq_in, dq_in[2] >= 0 ? 3 : 2,
                                   &xf, 1);
        if (dq < 0) return dq;
    }
    int yf = nn_graph_add_tensor(g, "", FFU_DTYPE_F32, NULL);
    if (yf < 0) return yf;
    /* the node itself becomes the float product (nodes may have moved) */
    n = &g->nodes[i];
    n->op = conv ? NN_OP_CONV : NN_OP_MATMUL;
    n->inputs[0] = xf;
    n->inputs[1] = tw;
    n->ninputs = 2;
    n->outputs[0] = yf;
    g->tensors[yf].producer = i;
    g->tensors[y].producer = -1;
    ffu_status st;
    if ((st = nn_node_set_int(g, i, "_exact", 1)) < 0) return st;
    /* readers: a Cast to f32 becomes an Identity of the float sums; others need i32 */
    int need_i32 = (g->tensors[y].flags & NN_T_OUTPUT) != 0;
    for (int k = 0; k < g->nnodes; k++) {
        nn_node *r = &g->nodes[k];
        for (int j = 0; j < r->ninputs; j++) {
            if (r->inputs[j] != y) continue;
            if (r->op == NN_OP_CAST && r->ninputs == 1 &&
                nn_attr_int(r, "to", 0) == FFU_DTYPE_F32) {
                r->op = NN_OP_IDENTITY;
                r->inputs[0] = yf;
            } else {
                need_i32 = 1;
            }
        }
    }
    if (!need_i32) return FFU_OK;
    snprintf(name, sizeof name, "%.200s#i32", g->nodes[i].name ? g->nodes[i].name : "");
    int c = nn_graph_add_node(g, NN_OP_CAST, name, &yf, 1, &y, 1);
    if (c < 0) return c;
    return nn_node_set_int(g, c, "to", FFU_DTYPE_I32);
}

ffu_status nn_rewrite_integer_products(nn_graph *g)
{
    int nn = g->nnodes, nt = g->ntensors, one = -1, any = 0;
    for (int i = 0; i < nn && !any; i++)
        any = g->nodes[i].op == NN_OP_CONV_INTEGER || g->nodes[i].op == NN_OP_MATMUL_INTEGER;
    if (!any) return FFU_OK; /* a float model: nothing to look at */
    float **wf = calloc((size_t)nn + 1, sizeof *wf);
    int *steps = malloc(((size_t)nt + 1) * sizeof *steps); /* code tensor -> its steps */
    ffu_status st = FFU_OK;
    if (!wf || !steps) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < nn; i++)
        wf[i] = rewritable(g, i);
    for (int t = 0; t < nt; t++)
        steps[t] = -1;
    for (int d = 0; d < nn; d++) {
        if (!steps_ok(g, d, wf)) continue;
        int q = g->nodes[d].outputs[0], s = nn_graph_add_tensor(g, "", FFU_DTYPE_F32, NULL);
        if (s < 0) {
            st = s;
            goto out;
        }
        g->nodes[d].op = NN_OP_DYNAMIC_QUANTIZE_STEPS;
        g->nodes[d].outputs[0] = s;
        g->tensors[s].producer = d;
        g->tensors[q].producer = -1;
        steps[q] = s;
    }
    for (int i = 0; i < nn && st >= 0; i++)
        if (wf[i]) st = rewrite_node(g, i, wf[i], steps[g->nodes[i].inputs[0]], &one);
    if (st >= 0) st = nn_graph_toposort(g);
out:
    for (int i = 0; wf && i < nn; i++)
        free(wf[i]);
    free(wf), free(steps);
    return st;
}
