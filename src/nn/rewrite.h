/* Generic graph rewrites that make imported graphs smaller and friendlier to the
 * kernels, whatever format they came from. Both passes keep the graph's semantics
 * (graph input and output tensors keep their names and values), leave nodes in
 * topological order and drop the nodes they made dead (orphaned constants stay).
 *
 * nn_rewrite_transposes brings per-channel Mul/Add and activations next to the Conv
 * they follow, which nn_rewrite_patterns then folds; nn_rewrite_patterns therefore
 * runs nn_rewrite_transposes itself first (it is idempotent), so either order works. */
#ifndef FFU_NN_REWRITE_H
#define FFU_NN_REWRITE_H

#include "ir.h"

/* Layout clean-up: propagates every Transpose downwards through ops that do not care
 * about the layout (elementwise ops, with constant operands permuted to match; Clip,
 * PRelu, Pad, Concat, Softmax, keepdims reductions with their axes remapped), fuses
 * consecutive transposes and drops those that cancel. A transpose is materialised only
 * where a layout-sensitive op or a graph output needs the value. An NHWC graph whose
 * spatial ops were wrapped in NHWC<->NCHW transposes thus keeps one leading and one
 * trailing transpose per chain. */
ffu_status nn_rewrite_transposes(nn_graph *g);

/* Arithmetic patterns -> single ops (only when the intermediate tensors have no other
 * consumer and the constants have fitting shapes):
 *   Relu(x) + a*(x - |x|)          -> PRelu(x, 2a)   (MobileFaceNet_TF)
 *   x + a*(x - |x|)                 -> PRelu(x, 1+2a)
 *   Max(x,0) + a*Min(x,0)           -> PRelu(x, a)    (also with Relu(x) as first term)
 *   chains of Relu / Max(x,c) / Min(x,c) / Clip with scalar bounds -> one Clip (or Relu);
 *     Max(Min(Relu(x),6),0) -> Clip(x,0,6)
 *   Pad with zeros on the spatial axes, then Conv -> the Conv's pads;
 *   Conv followed by a per-channel Mul / Add / Sub / Div constant, or by a constant
 *     BatchNormalization -> folded into the Conv's weights and bias;
 *   per-channel Mul / Add constants before an unpadded Conv, also through a MaxPool
 *     when every scale is >= 0 -> folded into that Conv's weights and bias. */
ffu_status nn_rewrite_patterns(nn_graph *g);

/* ConvInteger / MatMulInteger with constant 8-bit weights whose sums f32 holds exactly
 * (255 x the largest per-output sum of |w - zw| at most 2^24) -> an f32 Conv / MatMul,
 * which gives the same i32 sums on the float kernels, of the activation minus its zero
 * point: a DequantizeLinear with scale 1, or the DynamicQuantizeLinear that feeds only
 * such nodes turned into ffu.DynamicQuantizeSteps. A Cast to f32 of the result reads
 * the float result instead (rewrite_integer.c). */
ffu_status nn_rewrite_integer_products(nn_graph *g);

/* What is known of tensor t's shape at load time, before shape inference has run: its
 * own, with the dims it leaves unknown derived through its producer (convolutions,
 * Gemm, pools, Pad, Transpose, shape-keeping and broadcasting ops). Unknown dims are
 * -1, an unknown rank -1. */
void nn_derive_shape(const nn_graph *g, int t, nn_shape *s);

#endif
