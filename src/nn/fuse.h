/* The fusion pass of the inference engine (fuse.c), run at load time by
 * nn_passes_run after the pattern rewrites (which fold Conv + BatchNormalization) and
 * constant folding: Conv / ConvTranspose / Gemm / MatMul / Add + a following
 * activation (Relu, Clip, Relu6, LeakyRelu, PRelu with constant per-channel or single
 * slopes, Sigmoid, Tanh, HardSwish, Elu) -> the producer's node->act, only when the
 * intermediate tensor has exactly one reader and is not a graph output. Fused nodes
 * stay valid for every backend: the ref kernels apply node->act, the cpu backend
 * turns it into a oneDNN post-op. */
#ifndef FFU_NN_FUSE_H
#define FFU_NN_FUSE_H

#include "ir.h"

/* Rewrites g in place (nodes removed, execution order preserved). FFU_ERR_NOMEM is the
 * only failure; a pattern that does not qualify is left alone. */
ffu_status nn_fuse(nn_graph *g);

/* The fusions that need known shapes, run by sessions on each specialised graph
 * (nn_graph_specialize, after shape inference and folding):
 *  - Conv + Add whose other operand has exactly the Conv output's shape and type ->
 *    the Conv with that operand as input 3 (the residual, ir.h) and the Add's
 *    activation, when the Conv output has no other reader, is not a graph output and
 *    carries no activation of its own. The fused node takes the Add's place.
 *  - Conv without bias + Mul by one f32 value (+ Add of a per-channel constant) ->
 *    the Conv with the value as input 4 (the scale, ir.h), the constant as its bias
 *    and the Add's activation; each intermediate read once and not a graph output.
 *    The fused node takes the last fused node's place.
 *  - Resize (f32, changing the size, no activation) + Add of a tensor of its output's
 *    shape, the Resize output read only there and not a graph output -> the Resize
 *    with that tensor as input 4 (ir.h) and the Add's activation, in the Add's place.
 *  - Sibling pointwise Convs (1x1, no group/stride/pad/dilation, constant weights,
 *    the same activation) of one tensor -> one Conv with all their output channels,
 *    then (when each sibling's only reader is a depthwise Conv of the same geometry
 *    and activation) one depthwise Conv, then a Split (axis 1) into the old outputs.
 *    Detection heads compute 1-10 channels per branch; merged they fill a vector.
 * FFU_ERR_NOMEM is the only failure. */
ffu_status nn_fuse_planned(nn_graph *g);

#endif
