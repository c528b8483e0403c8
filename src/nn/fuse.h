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

#endif
