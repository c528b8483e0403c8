/* The op table: every op in ops.def, ref vs the oneDNN cpu backend (and vs the cuda
 * backend when a GPU is present: the same table, with inputs uploaded to device memory
 * and outputs and their guard bytes downloaded), on one-node graphs
 * with odd shapes (13, 17, 127, groups, dilations, strides, asymmetric pads,
 * broadcasting) and data from a fixed seed, in the style of ggml's test-backend-ops.
 *
 * For each case: ref runs the node with nn_op_get(op)->run, the cpu backend with
 * supports / prepare / run; outputs are compared by normalised mean squared error
 * against a per-case threshold, NaN/Inf must be in the same places, and sentinel bytes
 * around every output buffer must survive. Prints one row per case:
 *     op  shape  cpu: ok|FAIL|not supported  nmse
 * Only FAIL fails the test; an op the cpu backend does not claim is "not supported".
 * The other tests check the backend's contract (scratch, release, threads). */
#include "nn/backend.h"
#include "nn/nn_internal.h"
#include "test.h"

/* the case table lists only the fields a case needs */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#define MAXIN 6
#define MAXOUT 4
#define SENTINEL 0xCD
#define GUARD 64


typedef struct tcase {
    nn_op op;
    const char *label;
    int nin;
    nn_shape in[MAXIN];
    int cnst[MAXIN];          /* 1: a constant input (weights) */
    const void *data[MAXIN];  /* explicit data for this input (constant), or NULL */
    ffu_dtype dt[MAXIN];      /* 0 = f32 */
    int absent[MAXIN];        /* omitted optional input */
    const char *attrs;        /* "name=v,v;name=v" */
    nn_act_kind act;
    float act_a, act_b;
    int act_slope;            /* PReLU: 1 = per channel, 2 = one slope */
    int dist;                 /* 0: [-1,1)  1: (0.1,2]  2: |x| in [0.5,1.5]  3: [-40,40) */
    double tol;               /* NMSE threshold, 0 = default */
    int inplace;              /* k > 0: input k is the output buffer itself (both
                                 backends), as the planner does for a Conv residual */
    const char *impl;         /* the cpu implementation the case must get (AVX-512 hosts;
                                 by default our kernel when an attribute forces it), or
                                 with a leading '!' the one it must not; either way the
                                 cpu backend must claim the case */
    int grid;                 /* 1: the weights (input 1) made from 8-bit codes and a
                                 per-channel factor, marked NN_T_Q8 (grid_weights); 2:
                                 then one weight moved by one ulp (no codes rebuild it) */
    int nout;                 /* outputs of the node (0 = 1), each compared */
} tcase;

#define S1(x0) {.rank = 1, .d = {x0}}
#define S2(x0, x1) {.rank = 2, .d = {x0, x1}}
#define S3(x0, x1, x2) {.rank = 3, .d = {x0, x1, x2}}
#define S4(x0, x1, x2, x3) {.rank = 4, .d = {x0, x1, x2, x3}}

static const float clip_lo[1] = {-0.5f}, clip_hi[1] = {0.25f};
static const float sc_up2[4] = {1, 1, 2, 2}, sc_up3[4] = {1, 1, 3, 3}, sc_one[4] = {1, 1, 1, 1};
/* dim 0 keeps its 9 but output 8 reads input 7 (found by fuzz_onnx's ref/cpu check) */
static const float sc_batch[4] = {1.05f, 1, 2, 2};
static const int64_t sz_down[4] = {1, 3, 7, 9};
static const int64_t pad_ch[8] = {0, 0, 0, 0, 0, 5, 0, 0}, pad_hw[8] = {0, 0, 1, 2, 0, 0, 3, 0};
static const int64_t pad_ax[2] = {1, 3}, pad_ax_v[4] = {2, 0, 1, 4}, pad_neg[8] = {0, 0, -1, 0, 0, 0, 0, 0};
static const int64_t pad_w[8] = {0, 0, 0, 2, 0, 0, 0, 5}; /* the innermost axis only */
static const float pad_val[1] = {-0.75f};
static const int64_t ax_23[2] = {2, 3}, ax_1[1] = {1}, ax_m1[1] = {-1}, ax_13[2] = {1, 3};

/* index data for the ops the cpu backend leaves to ref (GatherND, ScatterND, ...) */
static const int64_t nd_idx[8] = {4, 6, 0, 0, -1, 2, 3, 5};
static const int64_t el_idx[21] = {0, 3, 1, 4, 2, 0, 3, 1, 4, 2, 0, 3, 1, 4,
                                   2, 0, 3, 1, 4, -5, -1};
static const int64_t oh_idx[13] = {0, 6, 3, -1, 7, 2, -7, 5, 1, 4, 9, 0, 6};
static const int64_t oh_depth[1] = {7}, k_m2[1] = {-2}, k_5[1] = {5};
static const float oh_vals[2] = {-0.5f, 2.0f};
/* class targets of 3x4 for 5 classes: 2 is the ignored one in some cases, -1 in others */
static const int64_t loss_t[12] = {0, 4, 2, 1, 3, 2, 0, 4, 1, 1, 3, 0};
static const int64_t loss_tn[12] = {0, -1, 2, 1, 3, 4, -1, 4, 1, 0, 3, 2};
/* signal ops: window sizes, DFT length, STFT step, MelWeightMatrix's parameters */
static const int64_t sig_10[1] = {10}, sig_7[1] = {7}, sig_16[1] = {16}, sig_8[1] = {8},
                     sig_rate[1] = {8192};
static const float sig_lo[1] = {0}, sig_hi[1] = {4096};
/* TfIdfVectorizer tokens: 2 rows of 9 from a vocabulary of 6 */
static const int64_t tok[18] = {1, 2, 1, 3, 2, 2, 5, 1, 2, 0, 1, 2, 4, 1, 3, 1, 2, 2};
/* a range of [-1.27, 1.28] (scale 0.005, zero point 254): halfway codes, NaN, -0 */
static const float qsteps_odd[37] = {-1.27f, 1.28f, 0.0025f, -0.0025f, 0.0075f, NAN, -0.0f, 0.5f,
                                     0.3f, -0.3f, 1e-9f, 0.0125f, -0.0125f, 0.9f, -0.9f, 0.1f,
                                     0.2f, 0.25f, -0.25f, 0.33f, 0.66f, -0.66f, 1.0f, -1.0f,
                                     0.7f, 0.8f, -0.8f, 0.005f, -0.005f, 0.0175f, 1.2f, -1.2f,
                                     0.45f, -0.45f, 0.55f, -0.55f, 0.6f};

#define X4 S4(1, 3, 13, 17)
#define F32 FFU_DTYPE_F32

static const tcase cases[] = {
    /* ---- Conv ---- */
    {NN_OP_CONV, "1x3x13x17 k3 p1 +b", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1"},
    {NN_OP_CONV, "1x3x13x17 k3 s2 p0110", 2, {X4, S4(4, 3, 3, 3)}, {0, 1}, .attrs = "strides=2,2;pads=0,1,1,0"},
    {NN_OP_CONV, "1x6x13x17 g3 d2", 3, {S4(1, 6, 13, 17), S4(6, 2, 3, 3), S1(6)}, {0, 1, 1}, .attrs = "group=3;dilations=2,2;pads=2,1,2,1"},
    {NN_OP_CONV, "1x16x13x17 dw s2", 3, {S4(1, 16, 13, 17), S4(16, 1, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "group=16;strides=2,2;pads=1,1,1,1"},
    {NN_OP_CONV, "1x32x13x17 1x1", 3, {S4(1, 32, 13, 17), S4(24, 32, 1, 1), S1(24)}, {0, 1, 1}},
    {NN_OP_CONV, "1x8x13x17 k5 SAME_UPPER s2", 2, {S4(1, 8, 13, 17), S4(8, 8, 5, 5)}, {0, 1}, .attrs = "auto_pad=SAME_UPPER;strides=2,2"},
    {NN_OP_CONV, "1x8x13x17 k4 SAME_LOWER", 2, {S4(1, 8, 13, 17), S4(8, 8, 4, 4)}, {0, 1}, .attrs = "auto_pad=SAME_LOWER"},
    {NN_OP_CONV, "2x3x13x17 k2 s3 VALID", 2, {S4(2, 3, 13, 17), S4(5, 3, 2, 2)}, {0, 1}, .attrs = "auto_pad=VALID;strides=3,3"},
    {NN_OP_CONV, "1x4x127 conv1d", 3, {S3(1, 4, 127), S3(6, 4, 3), S1(6)}, {0, 1, 1}, .attrs = "pads=1,0;strides=2"},
    {NN_OP_CONV, "+relu", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "+relu6", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "+clip(-.3,.4)", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    {NN_OP_CONV, "+leaky(.1)", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "+prelu[C]", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "+prelu[1]", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 2},
    {NN_OP_CONV, "+sigmoid", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_SIGMOID},
    {NN_OP_CONV, "+tanh", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_TANH},
    {NN_OP_CONV, "+hardswish", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_HARD_SWISH},
    {NN_OP_CONV, "+elu(.7)", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_ELU, .act_a = 0.7f},
    /* depthwise shapes on the backend's own NHWC kernel (forced with _cpu_dw=1):
     * channel tails, strides, asymmetric pads, every activation it takes, rows and
     * columns all in padding */
    {NN_OP_CONV, "1x24x13x37 dw k3 p1 +relu", 3, {S4(1, 24, 13, 37), S4(24, 1, 3, 3), S1(24)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=24;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "2x40x13x37 dw s2 +relu6", 3, {S4(2, 40, 13, 37), S4(40, 1, 3, 3), S1(40)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=40;strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "1x7x13x37 dw k5 p2013 leaky", 2, {S4(1, 7, 13, 37), S4(7, 1, 5, 5)}, {0, 1}, .attrs = "_cpu_dw=1;group=7;pads=2,0,1,3", .act = NN_ACT_LEAKY_RELU, .act_a = 0.2f},
    /* 5-wide stride 1 (BlazeFace): 16- and 8-pixel blocks, an overlapping last block,
     * full, half (24, 40) and masked (20) channel slices, a residual */
    {NN_OP_CONV, "1x24x9x45 dw k5 p2 +relu", 3, {S4(1, 24, 9, 45), S4(24, 1, 5, 5), S1(24)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=24;pads=2,2,2,2", .act = NN_ACT_RELU},
    {NN_OP_CONV, "2x40x7x29 dw k5 p1203", 3, {S4(2, 40, 7, 29), S4(40, 1, 5, 5), S1(40)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=40;pads=1,2,0,3"},
    {NN_OP_CONV, "1x20x6x52 dw k5 p2 prelu[1]", 3, {S4(1, 20, 6, 52), S4(20, 1, 5, 5), S1(20)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=20;pads=2,2,2,2", .act = NN_ACT_PRELU, .act_slope = 2},
    {NN_OP_CONV, "1x64x9x20 dw k3 p0 s2x1 clip", 3, {S4(1, 64, 9, 20), S4(64, 1, 3, 3), S1(64)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=64;strides=2,1", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    {NN_OP_CONV, "1x33x5x6 dw k3 p3 prelu[1]", 3, {S4(1, 33, 5, 6), S4(33, 1, 3, 3), S1(33)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=33;pads=3,3,3,3", .act = NN_ACT_PRELU, .act_slope = 2},
    /* 3-wide stride-1 columns with 16n + 8 channels in pixel pairs (blk_pair_k3s1):
     * per-channel slopes doubled, a residual, an interior of exactly 16 columns, no
     * left pad with a row stride, and 14 columns (too few: slices) */
    {NN_OP_CONV, "2x40x11x35 dw k3 pairs prelu[C]", 3, {S4(2, 40, 11, 35), S4(40, 1, 3, 3), S1(40)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=40;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "1x56x5x18 dw k3 pairs +res", 4, {S4(1, 56, 5, 18), S4(56, 1, 3, 3), S1(56), S4(1, 56, 5, 18)}, {0, 1, 1, 0}, .attrs = "_cpu_dw=1;group=56;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "1x24x8x33 dw k3 s2x1 p0 pairs", 3, {S4(1, 24, 8, 33), S4(24, 1, 3, 3), S1(24)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=24;strides=2,1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "1x24x4x16 dw k3 p1 (14 inner)", 3, {S4(1, 24, 4, 16), S4(24, 1, 3, 3), S1(24)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=24;pads=1,1,1,1"},
    /* 3 wide, stride 1, one padding column each side, 32 or more columns: the end
     * blocks skip the padding tap and the columns between them take blocks, an
     * overlapping block or (in place) single pixels; a mask tail, a half slice */
    {NN_OP_CONV, "1x32x5x70 dw k3 p1 +res in place", 4, {S4(1, 32, 5, 70), S4(32, 1, 3, 3), S1(32), S4(1, 32, 5, 70)}, {0, 1, 1, 0}, .attrs = "_cpu_dw=1;group=32;pads=1,1,1,1", .act = NN_ACT_RELU, .inplace = 3},
    {NN_OP_CONV, "2x64x4x45 dw k3 p1 +res", 4, {S4(2, 64, 4, 45), S4(64, 1, 3, 3), S1(64), S4(2, 64, 4, 45)}, {0, 1, 1, 0}, .attrs = "_cpu_dw=1;group=64;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "1x21x3x32 dw k3 p1 mask", 3, {S4(1, 21, 3, 32), S4(21, 1, 3, 3), S1(21)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=21;pads=1,1,1,1", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "1x8x6x48 dw k3 p1 half", 2, {S4(1, 8, 6, 48), S4(8, 1, 3, 3)}, {0, 1}, .attrs = "_cpu_dw=1;group=8;pads=1,1,1,1"},
    {NN_OP_CONV, "1x16x4x33 dw k3 p1,0 (one edge)", 3, {S4(1, 16, 4, 33), S4(16, 1, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=16;pads=1,1,1,0"},
    {NN_OP_CONV, "1x16x3x40 dw k1x7 SAME_UPPER", 3, {S4(1, 16, 3, 40), S4(16, 1, 1, 7), S1(16)}, {0, 1, 1}, .attrs = "_cpu_dw=1;group=16;auto_pad=SAME_UPPER"},
    /* the fused residual (input 3, ir.h): oneDNN's sum post-op, before the
     * activation (chained post-op, or a second step for PReLU), our depthwise kernel,
     * without bias, and in place (the residual is the output buffer) */
    {NN_OP_CONV, "1x1 16->16 (nChw16c) +res", 4, {S4(1, 16, 13, 17), S4(16, 16, 1, 1), S1(16), S4(1, 16, 13, 17)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=0", .act = NN_ACT_RELU, .inplace = 3},
    {NN_OP_CONV, "1x1(oneDNN) +res +relu", 4, {S4(1, 32, 13, 17), S4(24, 32, 1, 1), S1(24), S4(1, 24, 13, 17)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=0", .act = NN_ACT_RELU},
    {NN_OP_CONV, "1x1(ours) +res in place", 4, {S4(1, 32, 13, 17), S4(24, 32, 1, 1), S1(24), S4(1, 24, 13, 17)}, {0, 1, 1, 0}, .inplace = 3},
    {NN_OP_CONV, "k3 +res +prelu[C] in place", 4, {X4, S4(5, 3, 3, 3), S1(5), S4(1, 5, 13, 17)}, {0, 1, 1, 0}, .attrs = "pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1, .inplace = 3},
    {NN_OP_CONV, "k3 s2 +res no bias +leaky", 4, {S4(1, 8, 13, 17), S4(6, 8, 3, 3), S1(6), S4(1, 6, 7, 9)}, {0, 1, 1, 0}, .absent = {0, 0, 1, 0}, .attrs = "strides=2,2;pads=1,1,1,1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "k3 +res +sigmoid", 4, {X4, S4(5, 3, 3, 3), S1(5), S4(1, 5, 13, 17)}, {0, 1, 1, 0}, .attrs = "pads=1,1,1,1", .act = NN_ACT_SIGMOID},
    {NN_OP_CONV, "first 3->16 +res +relu6", 4, {S4(1, 3, 13, 17), S4(16, 3, 3, 3), S1(16), S4(1, 16, 13, 17)}, {0, 1, 1, 0}, .attrs = "pads=1,1,1,1", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "dw(ours) +res +relu in place", 4, {S4(1, 24, 13, 37), S4(24, 1, 3, 3), S1(24), S4(1, 24, 13, 37)}, {0, 1, 1, 0}, .attrs = "_cpu_dw=1;group=24;pads=1,1,1,1", .act = NN_ACT_RELU, .inplace = 3},
    {NN_OP_CONV, "dw(ours) k5 +res +relu", 4, {S4(1, 24, 11, 41), S4(24, 1, 5, 5), S1(24), S4(1, 24, 11, 41)}, {0, 1, 1, 0}, .attrs = "_cpu_dw=1;group=24;pads=2,2,2,2", .act = NN_ACT_RELU},
    {NN_OP_CONV, "dw(ours) +res s2 prelu", 4, {S4(1, 40, 13, 37), S4(40, 1, 3, 3), S1(40), S4(1, 40, 7, 19)}, {0, 1, 1, 0}, .attrs = "_cpu_dw=1;group=40;strides=2,2;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "dw(oneDNN) +res +prelu[C]", 4, {S4(1, 16, 13, 17), S4(16, 1, 3, 3), S1(16), S4(1, 16, 13, 17)}, {0, 1, 1, 0}, .attrs = "_cpu_dw=0;group=16;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1, .inplace = 3},
    /* a fused scale (input 4, ir.h): the sums times a value known at run time, then
     * the bias, then the activation, as oneDNN binary post-ops (PReLU a second step):
     * a 3x3, a first layer, 1x1, depthwise, no bias, a fused pool after it */
    {NN_OP_CONV, "k3 *s +b +relu", 5, {X4, S4(5, 3, 3, 3), S1(5), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "first 3->16 s2 *s +b (ours)", 5, {S4(1, 3, 13, 17), S4(16, 3, 3, 3), S1(16), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "strides=2,2;pads=1,1,1,1", .impl = "facefuse:cf_avx512"},
    {NN_OP_CONV, "first 2x3->24 *s +b +prelu (ours)", 5, {S4(2, 3, 9, 21), S4(24, 3, 3, 3), S1(24), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1, .impl = "facefuse:cf_avx512"},
    {NN_OP_CONV, "first 3->16 s2 *s +b (oneDNN)", 5, {S4(1, 3, 13, 17), S4(16, 3, 3, 3), S1(16), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_cf=0;strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "1x1(oneDNN) 32->24 *s +b +prelu[C]", 5, {S4(1, 32, 13, 17), S4(24, 32, 1, 1), S1(24), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_pw=0", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "dw(oneDNN) 24 *s +b +relu6", 5, {S4(1, 24, 13, 37), S4(24, 1, 3, 3), S1(24), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_dw=0;group=24;pads=1,1,1,1", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "1x1(oneDNN) 16->16 *s no bias", 5, {S4(1, 16, 13, 17), S4(16, 16, 1, 1), S1(16), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 1, 1, 0}, .attrs = "_cpu_pw=0"},
    {NN_OP_CONV, "1x1(ours) 2x32->24 *s +b +prelu[C]", 5, {S4(2, 32, 9, 13), S4(24, 32, 1, 1), S1(24), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "1x1(ours) 48->40 *s +b +relu", 5, {S4(1, 48, 11, 13), S4(40, 48, 1, 1), S1(40), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "1x1(ours) 16->64 *s no bias", 5, {S4(1, 16, 13, 17), S4(64, 16, 1, 1), S1(64), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 1, 1, 0}, .attrs = "_cpu_pw=1"},
    {NN_OP_CONV, "dw(oneDNN) *s +b +relu +pool", 5, {S4(1, 16, 13, 17), S4(16, 1, 3, 3), S1(16), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_dw=0;group=16;pads=1,1,1,1;_pool=2", .act = NN_ACT_RELU},
    /* and on our depthwise kernel (rows of sums, then the scale epilogue): pixel pairs
     * (24 channels), a masked tail, PReLU, no bias, a batch of 2 with a thread's rows
     * across the images */
    {NN_OP_CONV, "dw(ours) 24 *s +b +relu6", 5, {S4(1, 24, 13, 37), S4(24, 1, 3, 3), S1(24), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_dw=1;group=24;pads=1,1,1,1", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "dw(ours) 40 s2 *s +b +prelu[C]", 5, {S4(2, 40, 13, 37), S4(40, 1, 3, 3), S1(40), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_dw=1;group=40;strides=2,2;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "dw(ours) 2x16 *s +b +relu", 5, {S4(2, 16, 7, 33), S4(16, 1, 3, 3), S1(16), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 0, 1, 0}, .attrs = "_cpu_dw=1;group=16;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "dw(ours) k5 *s no bias", 5, {S4(1, 32, 11, 41), S4(32, 1, 5, 5), S1(32), S1(1), S1(1)}, {0, 1, 1, 0, 0}, .absent = {0, 0, 1, 1, 0}, .attrs = "_cpu_dw=1;group=32;pads=2,2,2,2"},
    /* 1x1 shapes on the backend's own NHWC kernel (forced with _cpu_pw=1): one or two
     * output slices with full, half and masked tails, input channel counts with and
     * without a compiled instance, pixels left after the last block, batches, every
     * activation it takes, a residual in place and not */
    {NN_OP_CONV, "pw 16->16 +prelu[C]", 3, {S4(1, 16, 13, 17), S4(16, 16, 1, 1), S1(16)}, {0, 1, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "pw 24->24 +res in place +relu", 4, {S4(1, 24, 9, 23), S4(24, 24, 1, 1), S1(24), S4(1, 24, 9, 23)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_RELU, .inplace = 3},
    {NN_OP_CONV, "pw 2x13->5 +leaky", 3, {S4(2, 13, 7, 11), S4(5, 13, 1, 1), S1(5)}, {0, 1, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.2f},
    {NN_OP_CONV, "pw 64->32 no bias +relu6", 2, {S4(1, 64, 5, 7), S4(32, 64, 1, 1)}, {0, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "pw 8->20 +clip", 3, {S4(1, 8, 6, 9), S4(20, 8, 1, 1), S1(20)}, {0, 1, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    {NN_OP_CONV, "pw 48->8 +res prelu[1]", 4, {S4(1, 48, 5, 9), S4(8, 48, 1, 1), S1(8), S4(1, 8, 5, 9)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_PRELU, .act_slope = 2},
    {NN_OP_CONV, "pw 2x100->17 +res", 4, {S4(2, 100, 3, 5), S4(17, 100, 1, 1), S1(17), S4(2, 17, 3, 5)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1"},
    /* three and four output slices (33-64 outputs, 4-pixel blocks and the one-pixel
     * tail), whole, half (40, 56) and masked (33, 44, 60) last slices */
    {NN_OP_CONV, "pw 32->48 +prelu[C]", 3, {S4(1, 32, 13, 17), S4(48, 32, 1, 1), S1(48)}, {0, 1, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "pw 64->64 +res in place +relu", 4, {S4(1, 64, 13, 17), S4(64, 64, 1, 1), S1(64), S4(1, 64, 13, 17)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_RELU, .inplace = 3},
    {NN_OP_CONV, "pw 2x24->40 +leaky", 3, {S4(2, 24, 7, 11), S4(40, 24, 1, 1), S1(40)}, {0, 1, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.2f},
    {NN_OP_CONV, "pw 16->56 +res +leaky", 4, {S4(1, 16, 7, 11), S4(56, 16, 1, 1), S1(56), S4(1, 56, 7, 11)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "pw 48->44 +res in place prelu[C]", 4, {S4(1, 48, 13, 17), S4(44, 48, 1, 1), S1(44), S4(1, 44, 13, 17)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_PRELU, .act_slope = 1, .inplace = 3},
    {NN_OP_CONV, "pw 100->60 +res prelu[1]", 4, {S4(1, 100, 7, 11), S4(60, 100, 1, 1), S1(60), S4(1, 60, 7, 11)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_PRELU, .act_slope = 2},
    {NN_OP_CONV, "pw 2x13->33 no bias +relu6", 2, {S4(2, 13, 7, 11), S4(33, 13, 1, 1)}, {0, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "pw 8->64 +clip", 3, {S4(1, 8, 5, 11), S4(64, 8, 1, 1), S1(64)}, {0, 1, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    /* multiples of 64 outputs, 64 at a time (4-pixel blocks and the one-pixel tail) */
    {NN_OP_CONV, "pw 64->128 +prelu[C]", 3, {S4(1, 64, 7, 9), S4(128, 64, 1, 1), S1(128)}, {0, 1, 1}, .attrs = "_cpu_pw=1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "pw 2x24->192 +res in place +relu6", 4, {S4(2, 24, 5, 7), S4(192, 24, 1, 1), S1(192), S4(2, 192, 5, 7)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_RELU6, .inplace = 3},
    /* PReLU takes ours by default (oneDNN would run it as a second pass) */
    {NN_OP_CONV, "pw 48->128 +prelu[C] (default)", 3, {S4(1, 48, 9, 11), S4(128, 48, 1, 1), S1(128)}, {0, 1, 1}, .act = NN_ACT_PRELU, .act_slope = 1, .impl = "facefuse:pw_avx512"},
    {NN_OP_CONV, "pw 48->96 +prelu[C] (default: oneDNN)", 3, {S4(1, 48, 9, 11), S4(96, 48, 1, 1), S1(96)}, {0, 1, 1}, .act = NN_ACT_PRELU, .act_slope = 1, .impl = "!facefuse:pw_avx512"},
    {NN_OP_CONV, "pw 64->56 +res in place +prelu[C]", 4, {S4(1, 64, 13, 17), S4(56, 64, 1, 1), S1(56), S4(1, 56, 13, 17)}, {0, 1, 1, 0}, .attrs = "_cpu_pw=1", .act = NN_ACT_PRELU, .act_slope = 1, .inplace = 3},
    /* a fused 2x2 max pool after the activation (_pool=2, ir.h): our depthwise kernel
     * (odd rows and columns dropped), oneDNN's depthwise and a dense conv */
    {NN_OP_CONV, "dw(ours) +relu +pool", 3, {S4(1, 24, 13, 37), S4(24, 1, 3, 3), S1(24)}, {0, 1, 1}, .attrs = "_cpu_dw=1;_pool=2;group=24;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "2x16x14x40 dw(ours) +pool", 2, {S4(2, 16, 14, 40), S4(16, 1, 3, 3)}, {0, 1}, .attrs = "_pool=2;group=16;pads=1,1,1,1"},
    {NN_OP_CONV, "1x32x9x66 dw(ours) +relu +pool (edge blocks)", 3, {S4(1, 32, 9, 66), S4(32, 1, 3, 3), S1(32)}, {0, 1, 1}, .attrs = "_cpu_dw=1;_pool=2;group=32;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "1x16x6x35 dw(ours) +pool odd width", 2, {S4(1, 16, 6, 35), S4(16, 1, 3, 3)}, {0, 1}, .attrs = "_cpu_dw=1;_pool=2;group=16;pads=1,1,1,1"},
    {NN_OP_CONV, "dw(oneDNN) +prelu +pool", 3, {S4(1, 16, 13, 17), S4(16, 1, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "_cpu_dw=0;_pool=2;group=16;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    /* Winograd (3x3 s1, >= 16 channels in, >= 32x32 out; the op table's backend allows
     * it as sessions do): staged blocked input and output, channels not a multiple of
     * 16, the residual with a split PReLU, split PReLU on the blocked output. The
     * in-place residual + LeakyReLU stays direct: oneDNN's Winograd kernel cannot fuse
     * both post-ops, and a variant whose steps differ is not kept. */
    {NN_OP_CONV, "wino 24->20 p1 +relu", 3, {S4(1, 24, 33, 33), S4(20, 24, 3, 3), S1(20)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "wino 16->16 valid +res +prelu[C]", 4, {S4(1, 16, 34, 34), S4(16, 16, 3, 3), S1(16), S4(1, 16, 32, 32)}, {0, 1, 1, 0}, .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "wino 32->24 +res in place +leaky", 4, {S4(1, 32, 33, 33), S4(24, 32, 3, 3), S1(24), S4(1, 24, 33, 33)}, {0, 1, 1, 0}, .attrs = "pads=1,1,1,1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f, .inplace = 3},
    {NN_OP_CONV, "wino 16->24 +prelu[C]", 3, {S4(1, 16, 33, 33), S4(24, 16, 3, 3), S1(24)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    /* our Winograd kernel (forced with _cpu_wino=1, channels multiples of 16): its
     * column blocks of 96, 64, 48, 32 and 16 (K 160, 128, 48, 32, 16), fewer tiles
     * than a block, batches, partial edge tiles, asymmetric pads, every activation it
     * takes, the fused pool with odd outputs, a residual in place; F(2x2), F(4x4) and
     * F(6x6) tiles (chosen by size, or forced with _cpu_wino_m) */
    {NN_OP_CONV, "wino(ours) 2x32->48 p1 +relu +pool", 3, {S4(2, 32, 19, 23), S4(48, 32, 3, 3), S1(48)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_pool=2;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "wino(ours) 16->64 valid +leaky", 3, {S4(1, 16, 9, 11), S4(64, 16, 3, 3), S1(64)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=4", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "wino(ours) 48->16 p2011 +clip", 3, {S4(1, 48, 13, 17), S4(16, 48, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=4;pads=2,0,1,1", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    {NN_OP_CONV, "wino(ours) 32->32 +res in place +relu6", 4, {S4(1, 32, 14, 18), S4(32, 32, 3, 3), S1(32), S4(1, 32, 14, 18)}, {0, 1, 1, 0}, .attrs = "_cpu_wino=1;_cpu_wino_m=4;pads=1,1,1,1", .act = NN_ACT_RELU6, .inplace = 3},
    {NN_OP_CONV, "wino(ours) 16->16 +prelu[C] +pool odd", 3, {S4(1, 16, 13, 15), S4(16, 16, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=4;_pool=2;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "wino(ours) 32->160 +relu", 3, {S4(1, 32, 11, 14), S4(160, 32, 3, 3), S1(160)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=4;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "wino(ours) 2x16->128 no bias", 2, {S4(2, 16, 33, 31), S4(128, 16, 3, 3)}, {0, 1}, .attrs = "_cpu_wino=1;pads=1,1,1,1"},
    {NN_OP_CONV, "wino6(ours) 2x32->48 p1 +relu +pool", 3, {S4(2, 32, 19, 23), S4(48, 32, 3, 3), S1(48)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=6;_pool=2;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "wino6(ours) 48->96 p2011 +clip", 3, {S4(1, 48, 13, 17), S4(96, 48, 3, 3), S1(96)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=6;pads=2,0,1,1", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    {NN_OP_CONV, "wino6(ours) 16->16 +res in place prelu[C]", 4, {S4(1, 16, 14, 18), S4(16, 16, 3, 3), S1(16), S4(1, 16, 14, 18)}, {0, 1, 1, 0}, .attrs = "_cpu_wino=1;_cpu_wino_m=6;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1, .inplace = 3},
    {NN_OP_CONV, "wino6(ours) 2x16->64 valid +pool odd", 3, {S4(2, 16, 15, 17), S4(64, 16, 3, 3), S1(64)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=6;_pool=2", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "wino2(ours) 2x32->48 p1 +relu +pool odd", 3, {S4(2, 32, 7, 9), S4(48, 32, 3, 3), S1(48)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=2;_pool=2;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "wino2(ours) 48->160 p2011 +clip", 3, {S4(1, 48, 9, 11), S4(160, 48, 3, 3), S1(160)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=2;pads=2,0,1,1", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    {NN_OP_CONV, "wino2(ours) 16->16 +res in place prelu[C]", 4, {S4(1, 16, 9, 9), S4(16, 16, 3, 3), S1(16), S4(1, 16, 9, 9)}, {0, 1, 1, 0}, .attrs = "_cpu_wino=1;_cpu_wino_m=2;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1, .inplace = 3},
    /* F(2x2) chosen by size (8x8 out, dlib-resnet's 128-channel layers) */
    {NN_OP_CONV, "wino 128->128 8x8", 3, {S4(1, 128, 8, 8), S4(128, 128, 3, 3), S1(128)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_RELU, .impl = "facefuse:wino2x2_avx512"},
    /* F(6x6) chosen by size (18x18 out), its check failing at a tolerance that F(4x4)
     * meets: the node falls back to F(4x4), not to oneDNN */
    {NN_OP_CONV, "wino 32->32 6x6 -> 4x4", 3, {S4(1, 32, 18, 18), S4(32, 32, 3, 3), S1(32)}, {0, 1, 1}, .attrs = "pads=1,1,1,1;_cpu_wino_nmse=0.000000000001", .act = NN_ACT_RELU, .impl = "facefuse:wino4x4_avx512"},
    {NN_OP_CONV, "wino 32->32 6x6", 3, {S4(1, 32, 18, 18), S4(32, 32, 3, 3), S1(32)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_RELU, .impl = "facefuse:wino6x6_avx512"},
    /* our kernel for 8-bit weights (forced with _cpu_q8=1; weights from codes): strides,
     * pads, 70 pixels (48 + 22: blocks of 12 with a tail), a half last block of outputs,
     * residuals; and the size rule choosing it (1.2 MB of weights, 32 output pixels) */
    {NN_OP_CONV, "q8(ours) 2x32->48 k3 s2 p1 +res prelu[C]", 4, {S4(2, 32, 9, 13), S4(48, 32, 3, 3), S1(48), S4(2, 48, 5, 7)}, {0, 1, 1, 0}, .attrs = "_cpu_q8=1;strides=2,2;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1, .grid = 1},
    {NN_OP_CONV, "q8(ours) 64->64 1x1 +res in place +relu6", 4, {S4(1, 64, 3, 5), S4(64, 64, 1, 1), S1(64), S4(1, 64, 3, 5)}, {0, 1, 1, 0}, .attrs = "_cpu_q8=1", .act = NN_ACT_RELU6, .inplace = 3, .grid = 1},
    {NN_OP_CONV, "q8(ours) 16->16 k5 p2011 no bias +leaky", 2, {S4(1, 16, 6, 4), S4(16, 16, 5, 5)}, {0, 1}, .attrs = "_cpu_q8=1;pads=2,0,1,1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f, .grid = 1},
    {NN_OP_CONV, "q8(ours) 2x64->32 k3 p1 on 1x1 (pads skipped)", 3, {S4(2, 64, 1, 1), S4(32, 64, 3, 3), S1(32)}, {0, 1, 1}, .attrs = "_cpu_q8=1;pads=1,1,1,1", .grid = 1},
    {NN_OP_CONV, "q8(ours) declined: one weight off its code by an ulp", 3, {S4(1, 32, 3, 3), S4(32, 32, 3, 3), S1(32)}, {0, 1, 1}, .attrs = "_cpu_q8=1;pads=1,1,1,1", .grid = 2, .impl = "!facefuse:q8_avx512"},
    {NN_OP_CONV, "q8 2x128->256 4x4 p1 +relu", 3, {S4(2, 128, 4, 4), S4(256, 128, 3, 3), S1(256)}, {0, 1, 1}, .attrs = "pads=1,1,1,1", .act = NN_ACT_RELU, .grid = 1, .impl = "facefuse:q8_avx512"},
    /* U (2.1 MB) outgrows L2 and the 25 tiles go in one block of 36 (24 at 2 threads):
     * the rows past the last tile in a block */
    {NN_OP_CONV, "wino(ours) 112->128 one block", 3, {S4(1, 112, 20, 20), S4(128, 112, 3, 3), S1(128)}, {0, 1, 1}, .attrs = "_cpu_wino=1;_cpu_wino_m=4;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "wino(ours) 32->16 +res prelu[1]", 4, {S4(1, 32, 10, 12), S4(16, 32, 3, 3), S1(16), S4(1, 16, 8, 10)}, {0, 1, 1, 0}, .attrs = "_cpu_wino=1", .act = NN_ACT_PRELU, .act_slope = 2},
    {NN_OP_CONV, "k3 +sigmoid +pool", 3, {X4, S4(5, 3, 3, 3), S1(5)}, {0, 1, 1}, .attrs = "_pool=2;pads=1,1,1,1", .act = NN_ACT_SIGMOID},
    {NN_OP_CONV, "dw +prelu[C]", 3, {S4(1, 16, 13, 17), S4(16, 1, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "group=16;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    /* ---- first layers (few input channels, strided, padding on every side) ---- */
    {NN_OP_CONV, "first 3->16 k3 s2 p1 +relu", 3, {S4(1, 3, 33, 47), S4(16, 3, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "first 3->24 k5 s2 p1 +prelu", 3, {S4(1, 3, 33, 47), S4(24, 3, 5, 5), S1(24)}, {0, 1, 1}, .attrs = "strides=2,2;pads=1,1,2,2", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "first 4->40 k3 s2 +clip", 3, {S4(2, 4, 21, 47), S4(40, 4, 3, 3), S1(40)}, {0, 1, 1}, .attrs = "strides=2,2", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    {NN_OP_CONV, "first 1->64 k7 s2 p3 leaky", 2, {S4(1, 1, 23, 40), S4(64, 1, 7, 7)}, {0, 1}, .attrs = "strides=2,2;pads=3,3,3,3", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "first 3->7 k3 s1x2 narrow", 3, {S4(1, 3, 9, 11), S4(7, 3, 3, 3), S1(7)}, {0, 1, 1}, .attrs = "strides=1,2;pads=1,1,1,1"},
    /* our first-layer kernel (forced with _cpu_cf=1; NCHW in, NHWC out): one slice
     * (whole, 8-lane and masked tails) and two; blocks of 30/16/8 pixels (14/8/4 for
     * two slices) and the overlapping last block; strides 1, 2, 1x2 and 2x1; asymmetric
     * and SAME pads, rows and columns all padding; every activation; batch 2; 24
     * outputs take ours by default (the impl check) */
    {NN_OP_CONV, "cf 3->16 k3 s2 p1 +relu", 3, {S4(1, 3, 37, 29), S4(16, 3, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "cf 3->24 k5 s2 p1122 +prelu[C]", 3, {S4(1, 3, 33, 47), S4(24, 3, 5, 5), S1(24)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2;pads=1,1,2,2", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "cf 3->20 k3 s2 p1 +relu (mask)", 3, {S4(1, 3, 21, 131), S4(20, 3, 3, 3), S1(20)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV, "cf 1->16 k5 s1 p2013 +leaky", 3, {S4(1, 1, 19, 45), S4(16, 1, 5, 5), S1(16)}, {0, 1, 1}, .attrs = "_cpu_cf=1;pads=2,0,1,3", .act = NN_ACT_LEAKY_RELU, .act_a = 0.2f},
    {NN_OP_CONV, "cf 4->32 k3 s2 +prelu[C]", 3, {S4(1, 4, 23, 61), S4(32, 4, 3, 3), S1(32)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "cf 2x3->16 k3 s2 +relu6", 3, {S4(2, 3, 17, 67), S4(16, 3, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2;pads=0,1,1,0", .act = NN_ACT_RELU6},
    {NN_OP_CONV, "cf 3->8 k7 s2 p3 +clip", 3, {S4(1, 3, 29, 95), S4(8, 3, 7, 7), S1(8)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2;pads=3,3,3,3", .act = NN_ACT_CLIP, .act_a = -0.3f, .act_b = 0.4f},
    {NN_OP_CONV, "cf 3->32 k3 s1 p1 prelu[1]", 3, {S4(1, 3, 7, 100), S4(32, 3, 3, 3), S1(32)}, {0, 1, 1}, .attrs = "_cpu_cf=1;pads=1,1,1,1", .act = NN_ACT_PRELU, .act_slope = 2},
    {NN_OP_CONV, "cf 3->16 k3 s1 p1 no bias", 2, {S4(1, 3, 6, 44), S4(16, 3, 3, 3)}, {0, 1}, .attrs = "_cpu_cf=1;pads=1,1,1,1"},
    {NN_OP_CONV, "cf 2x3->28 k4 s1x2 SAME_UPPER", 3, {S4(2, 3, 9, 71), S4(28, 3, 4, 4), S1(28)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=1,2;auto_pad=SAME_UPPER", .act = NN_ACT_RELU},
    {NN_OP_CONV, "cf 3->17 k3 s2x1 p3 rows padding", 3, {S4(1, 3, 5, 6), S4(17, 3, 3, 3), S1(17)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,1;pads=3,3,3,3", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "cf 2->5 k7x2 s2 narrow", 3, {S4(1, 2, 12, 5), S4(5, 2, 7, 2), S1(5)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2;pads=2,1,3,0", .act = NN_ACT_RELU},
    /* 64 outputs (two groups of two slices) and a fused 2x2 pool (two conv rows, then
     * their maxima; odd rows and columns dropped) */
    {NN_OP_CONV, "cf 3->64 k3 valid +relu +pool", 3, {S4(1, 3, 31, 45), S4(64, 3, 3, 3), S1(64)}, {0, 1, 1}, .attrs = "_cpu_cf=1;_pool=2", .act = NN_ACT_RELU},
    /* stride 1 into 64 with a pool: the pool in registers, edge columns per pixel, rows
     * touching the padding by the two-row path */
    {NN_OP_CONV, "cf 2x3->64 k3 p1 +pool +prelu[C] edges", 3, {S4(2, 3, 17, 29), S4(64, 3, 3, 3), S1(64)}, {0, 1, 1}, .attrs = "_cpu_cf=1;_pool=2;pads=1,2,1,0", .act = NN_ACT_PRELU, .act_slope = 1},
    /* at most 16 outputs with a pool: one slice in registers, six pooled pixels a block */
    {NN_OP_CONV, "cf 3->10 k3 valid +leaky +pool (one slice)", 3, {S4(1, 3, 26, 41), S4(10, 3, 3, 3), S1(10)}, {0, 1, 1}, .attrs = "_cpu_cf=1;_pool=2", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "cf 2x3->16 k3 p1 +pool +prelu[C] edges", 3, {S4(2, 3, 17, 29), S4(16, 3, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "_cpu_cf=1;_pool=2;pads=1,2,1,0", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "cf 1->8 k3 valid +pool (half slice)", 3, {S4(1, 1, 12, 40), S4(8, 1, 3, 3), S1(8)}, {0, 1, 1}, .attrs = "_cpu_cf=1;_pool=2"},
    {NN_OP_CONV, "cf 2x4->64 k5 s2 p2 +prelu[C]", 3, {S4(2, 4, 19, 53), S4(64, 4, 5, 5), S1(64)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2;pads=2,2,2,2", .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_CONV, "cf 2x3->24 k3 p1 +pool odd", 3, {S4(2, 3, 15, 21), S4(24, 3, 3, 3), S1(24)}, {0, 1, 1}, .attrs = "_cpu_cf=1;_pool=2;pads=1,1,1,1", .act = NN_ACT_LEAKY_RELU, .act_a = 0.1f},
    {NN_OP_CONV, "cf 3->16 k1 s2 (1x1)", 3, {S4(1, 3, 11, 66), S4(16, 3, 1, 1), S1(16)}, {0, 1, 1}, .attrs = "_cpu_cf=1;strides=2,2", .act = NN_ACT_RELU},
    {NN_OP_CONV, "cf 3->24 k3 s2 (default)", 3, {S4(1, 3, 15, 39), S4(24, 3, 3, 3), S1(24)}, {0, 1, 1}, .attrs = "strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU, .impl = "facefuse:cf_avx512"},
    /* an NCHW image into 64 with ReLU6 (the ONNX MobileFaceNet's stem) is ours unforced */
    {NN_OP_CONV, "cf 3->64 k3 s2 +relu6 (default)", 3, {S4(1, 3, 23, 41), S4(64, 3, 3, 3), S1(64)}, {0, 1, 1}, .attrs = "strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU6, .impl = "facefuse:cf_avx512"},
    {NN_OP_CONV, "cf(oneDNN) 3->16 k3 s2", 3, {S4(1, 3, 15, 39), S4(16, 3, 3, 3), S1(16)}, {0, 1, 1}, .attrs = "_cpu_cf=0;strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU},
    /* ---- Transpose (a oneDNN reorder with permuted strides) ---- */
    {NN_OP_TRANSPOSE, "1x3x13x17 perm 0231", 1, {X4}, .attrs = "perm=0,2,3,1"},
    {NN_OP_TRANSPOSE, "1x13x17x3 perm 0312", 1, {S4(1, 13, 17, 3)}, .attrs = "perm=0,3,1,2"},
    {NN_OP_TRANSPOSE, "2x3x5x7 default", 1, {S4(2, 3, 5, 7)}},
    {NN_OP_TRANSPOSE, "5x7x3 perm 102", 1, {S3(5, 7, 3)}, .attrs = "perm=1,0,2"},
    {NN_OP_TRANSPOSE, "i64 6x5", 1, {S2(6, 5)}, .dt = {FFU_DTYPE_I64}},
    /* ---- Pad (constant; the cpu backend keeps the tensor's layout) ---- */
    {NN_OP_PAD, "1x3x13x17 channels +5", 2, {X4, S1(8)}, {0, 1}, {NULL, pad_ch}, {0, FFU_DTYPE_I64}},
    {NN_OP_PAD, "1x3x13x17 hw value", 3, {X4, S1(8), S1(1)}, {0, 1, 1}, {NULL, pad_hw, pad_val}, {0, FFU_DTYPE_I64}},
    {NN_OP_PAD, "1x3x13x17 w only value", 3, {X4, S1(8), S1(1)}, {0, 1, 1}, {NULL, pad_w, pad_val}, {0, FFU_DTYPE_I64}},
    {NN_OP_PAD, "2x3x5x7 axes 1,3", 4, {S4(2, 3, 5, 7), S1(4), S1(0), S1(2)}, {0, 1, 1, 1}, {NULL, pad_ax_v, NULL, pad_ax}, {0, FFU_DTYPE_I64, 0, FFU_DTYPE_I64}, .absent = {0, 0, 1, 0}},
    {NN_OP_PAD, "crop (negative pads)", 2, {X4, S1(8)}, {0, 1}, {NULL, pad_neg}, {0, FFU_DTYPE_I64}},
    {NN_OP_PAD, "reflect", 2, {X4, S1(8)}, {0, 1}, {NULL, pad_hw}, {0, FFU_DTYPE_I64}, .attrs = "mode=reflect"},
    /* ---- ConvTranspose ---- */
    {NN_OP_CONV_TRANSPOSE, "1x4x7x9 s2 p1 op1", 3, {S4(1, 4, 7, 9), S4(4, 6, 3, 3), S1(6)}, {0, 1, 1}, .attrs = "strides=2,2;pads=1,1,1,1;output_padding=1,1"},
    {NN_OP_CONV_TRANSPOSE, "1x4x7x9 g2 d2", 2, {S4(1, 4, 7, 9), S4(4, 3, 3, 3)}, {0, 1}, .attrs = "group=2;dilations=2,2;pads=0,1,2,0"},
    {NN_OP_CONV_TRANSPOSE, "2x8x5x6 k4 s2 +relu", 3, {S4(2, 8, 5, 6), S4(8, 5, 4, 4), S1(5)}, {0, 1, 1}, .attrs = "strides=2,2;pads=1,1,1,1", .act = NN_ACT_RELU},
    {NN_OP_CONV_TRANSPOSE, "1x4x7x9 output_shape", 2, {S4(1, 4, 7, 9), S4(4, 3, 3, 3)}, {0, 1}, .attrs = "strides=2,2;output_shape=15,19"},
    /* ---- Gemm / MatMul ---- */
    {NN_OP_GEMM, "13x127 * 127x31 + C[31]", 3, {S2(13, 127), S2(127, 31), S1(31)}, {0, 1, 1}},
    {NN_OP_GEMM, "tA tB a.5 b2 C[13x1]", 3, {S2(127, 13), S2(31, 127), S2(13, 1)}, {0, 1, 1}, .attrs = "transA=1;transB=1;alpha=0.5;beta=2.0"},
    {NN_OP_GEMM, "C runtime [13x31]", 3, {S2(13, 127), S2(127, 31), S2(13, 31)}, {0, 1, 0}},
    {NN_OP_GEMM, "B runtime tB", 2, {S2(13, 127), S2(31, 127)}, {0, 0}, .attrs = "transB=1"},
    {NN_OP_GEMM, "+relu", 3, {S2(13, 127), S2(127, 31), S1(31)}, {0, 1, 1}, .act = NN_ACT_RELU},
    {NN_OP_GEMM, "+prelu[N]", 3, {S2(13, 127), S2(127, 31), S1(31)}, {0, 1, 1}, .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_MATMUL, "13x127 * 127x31", 2, {S2(13, 127), S2(127, 31)}, {0, 1}},
    {NN_OP_MATMUL, "2x3x13x17 * 17x11", 2, {S4(2, 3, 13, 17), S2(17, 11)}, {0, 1}},
    {NN_OP_MATMUL, "3x13x17 * 3x17x11 rt", 2, {S3(3, 13, 17), S3(3, 17, 11)}, {0, 0}},
    {NN_OP_MATMUL, "1x13x17 * 3x17x11 bcast", 2, {S3(1, 13, 17), S3(3, 17, 11)}, {0, 0}},
    /* Einsum contractions as one strided matmul (claimed; not oneDNN's ref kernel) */
    {NN_OP_EINSUM, "bij,bjk->bik", 2, {S3(3, 13, 17), S3(3, 17, 11)}, {0, 0}, .attrs = "equation=bij,bjk->bik", .impl = "!ref"},
    {NN_OP_EINSUM, "bd,dn->bn const", 2, {S2(13, 127), S2(127, 31)}, {0, 1}, .attrs = "equation=bd,dn->bn", .impl = "!ref"},
    {NN_OP_EINSUM, "bhqd,bhkd->bhqk", 2, {S4(2, 3, 13, 17), S4(2, 3, 11, 17)}, {0, 0}, .attrs = "equation=bhqd,bhkd->bhqk", .impl = "!ref"},
    {NN_OP_EINSUM, "bchw,bkc->bkhw", 2, {S4(2, 5, 7, 9), S3(2, 11, 5)}, {0, 0}, .attrs = "equation=bchw,bkc->bkhw", .impl = "!ref"},
    {NN_OP_EINSUM, "...ij,...jk bcast", 2, {S3(1, 13, 17), S4(2, 3, 17, 11)}, {0, 0}, .attrs = "equation=...ij,...jk", .impl = "!ref"},
    {NN_OP_EINSUM, "abc,bcd->da", 2, {S3(7, 5, 3), S3(5, 3, 11)}, {0, 0}, .attrs = "equation=abc,bcd->da", .impl = "!ref"},
    {NN_OP_EINSUM, "i,j->ij outer", 2, {S1(13), S1(17)}, {0, 0}, .attrs = "equation=i,j->ij", .impl = "!ref"},
    {NN_OP_EINSUM, "i,i inner", 2, {S1(127), S1(127)}, {0, 0}, .attrs = "equation=i,i", .impl = "!ref"},
    /* and what stays on ref: a diagonal, a sum within one operand, three operands */
    {NN_OP_EINSUM, "ii,ij->j diagonal", 2, {S2(13, 13), S2(13, 17)}, {0, 0}, .attrs = "equation=ii,ij->j"},
    {NN_OP_EINSUM, "ij,jk->k", 2, {S2(13, 17), S2(17, 11)}, {0, 0}, .attrs = "equation=ij,jk->k"},
    {NN_OP_EINSUM, "ij,jk,kl->il", 3, {S2(5, 7), S2(7, 3), S2(3, 4)}, {0, 0, 0}, .attrs = "equation=ij,jk,kl->il"},
    {NN_OP_MATMUL, "17 * 17x11", 2, {S1(17), S2(17, 11)}, {0, 1}},
    {NN_OP_MATMUL, "13x17 * 17", 2, {S2(13, 17), S1(17)}, {0, 0}},
    {NN_OP_MATMUL, "+sigmoid", 2, {S2(13, 127), S2(127, 31)}, {0, 1}, .act = NN_ACT_SIGMOID},
    {NN_OP_MATMUL, "3x13x17 +prelu[13]", 2, {S3(3, 13, 17), S2(17, 11)}, {0, 1}, .act = NN_ACT_PRELU, .act_slope = 1},
    /* ---- pooling ---- */
    {NN_OP_MAX_POOL, "k3 s2 p1", 1, {X4}, .attrs = "kernel_shape=3,3;strides=2,2;pads=1,1,1,1"},
    {NN_OP_MAX_POOL, "k2 s2 13x17", 1, {X4}, .attrs = "kernel_shape=2,2;strides=2,2"},
    {NN_OP_MAX_POOL, "k3 s2 ceil", 1, {X4}, .attrs = "kernel_shape=3,3;strides=2,2;ceil_mode=1"},
    {NN_OP_MAX_POOL, "k3 d2 p0110", 1, {X4}, .attrs = "kernel_shape=3,3;dilations=2,2;pads=0,1,1,0"},
    {NN_OP_MAX_POOL, "k3 SAME_UPPER s2", 1, {X4}, .attrs = "kernel_shape=3,3;strides=2,2;auto_pad=SAME_UPPER"},
    {NN_OP_AVERAGE_POOL, "k3 s2 p1 excl", 1, {X4}, .attrs = "kernel_shape=3,3;strides=2,2;pads=1,1,1,1"},
    {NN_OP_AVERAGE_POOL, "k3 s2 p1 incl", 1, {X4}, .attrs = "kernel_shape=3,3;strides=2,2;pads=1,1,1,1;count_include_pad=1"},
    {NN_OP_AVERAGE_POOL, "k2 s2 ceil excl", 1, {X4}, .attrs = "kernel_shape=2,2;strides=2,2;ceil_mode=1"},
    {NN_OP_AVERAGE_POOL, "k2 s2 ceil incl", 1, {X4}, .attrs = "kernel_shape=2,2;strides=2,2;ceil_mode=1;count_include_pad=1"},
    {NN_OP_AVERAGE_POOL, "1x4x127 k5 s3", 1, {S3(1, 4, 127)}, .attrs = "kernel_shape=5;strides=3;pads=2,1"},
    {NN_OP_GLOBAL_AVERAGE_POOL, "2x3x13x17", 1, {S4(2, 3, 13, 17)}},
    {NN_OP_GLOBAL_MAX_POOL, "2x3x13x17", 1, {S4(2, 3, 13, 17)}},
    /* ---- unary ---- */
    {NN_OP_RELU, "1x3x13x17", 1, {X4}},
    {NN_OP_LEAKY_RELU, "alpha .2", 1, {X4}, .attrs = "alpha=0.2"},
    {NN_OP_CLIP, "[-.5,.25]", 3, {X4, S1(1), S1(1)}, {0, 1, 1}, {NULL, clip_lo, clip_hi}},
    {NN_OP_CLIP, "min only", 2, {X4, S1(1)}, {0, 1}, {NULL, clip_lo}},
    {NN_OP_CLIP, "no bounds", 1, {X4}},
    {NN_OP_SIGMOID, "1x3x13x17", 1, {X4}},
    {NN_OP_TANH, "1x3x13x17", 1, {X4}},
    {NN_OP_ELU, "alpha 1", 1, {X4}},
    {NN_OP_SELU, "default", 1, {X4}},
    {NN_OP_HARD_SIGMOID, "default", 1, {X4}},
    {NN_OP_HARD_SWISH, "x4 range", 1, {X4}},
    {NN_OP_SOFTPLUS, "1x3x13x17", 1, {X4}},
    {NN_OP_SQRT, "positive", 1, {X4}, .dist = 1},
    {NN_OP_EXP, "1x3x13x17", 1, {X4}},
    {NN_OP_LOG, "positive", 1, {X4}, .dist = 1},
    {NN_OP_NEG, "1x3x13x17", 1, {X4}},
    {NN_OP_ABS, "1x3x13x17", 1, {X4}},
    {NN_OP_RECIPROCAL, "away from 0", 1, {X4}, .dist = 2},
    {NN_OP_ERF, "1x3x13x17", 1, {X4}},
    {NN_OP_FLOOR, "1x3x13x17", 1, {X4}},
    {NN_OP_CEIL, "1x3x13x17", 1, {X4}},
    {NN_OP_ROUND, "x4 range", 1, {X4}},
    {NN_OP_SIGN, "1x3x13x17", 1, {X4}},
    {NN_OP_SIN, "1x3x13x17", 1, {X4}},
    {NN_OP_COS, "1x3x13x17", 1, {X4}},
    {NN_OP_RSQRT, "positive", 1, {X4}, .dist = 1},
    {NN_OP_SQUARE, "1x3x13x17", 1, {X4}},
    {NN_OP_RELU6, "x8 range", 1, {X4}},
    /* ---- binary ---- */
    {NN_OP_ADD, "same shape", 2, {X4, X4}},
    {NN_OP_ADD, "b [1,3,1,1]", 2, {X4, S4(1, 3, 1, 1)}},
    {NN_OP_ADD, "a [3,1,1] (swap)", 2, {S3(3, 1, 1), X4}},
    {NN_OP_ADD, "[13,1]+[1,17]", 2, {S2(13, 1), S2(1, 17)}},
    {NN_OP_ADD, "+relu", 2, {X4, X4}, .act = NN_ACT_RELU},
    {NN_OP_ADD, "+prelu[C]", 2, {X4, X4}, .act = NN_ACT_PRELU, .act_slope = 1},
    {NN_OP_SUB, "b [17]", 2, {X4, S1(17)}},
    {NN_OP_SUB, "a [17] (no swap)", 2, {S1(17), X4}},
    {NN_OP_MUL, "b scalar-like [1]", 2, {X4, S1(1)}},
    {NN_OP_MUL, "const b [3,1,1]", 2, {X4, S3(3, 1, 1)}, {0, 1}},
    {NN_OP_DIV, "b away from 0", 2, {X4, X4}, .dist = 2},
    /* short broadcast periods on the flat output (the cpu backend's own kernel): a
     * scalar, a pattern of 2 or 3 innermost values, one repeated along a tail of 3,
     * the pattern as the left operand, fewer values than one repeated block */
    {NN_OP_MUL, "[5,999,2] * [1,1,2]", 2, {S3(5, 999, 2), S3(1, 1, 2)}},
    {NN_OP_DIV, "[1,17640,2] / [1]", 2, {S3(1, 17640, 2), S1(1)}, .dist = 2},
    {NN_OP_SUB, "[2,15,15,3] - const [3]", 2, {S4(2, 15, 15, 3), S1(3)}, {0, 1}},
    {NN_OP_DIV, "[2] / [7,5,2] (pattern left)", 2, {S1(2), S3(7, 5, 2)}, .dist = 2},
    {NN_OP_MAX, "[7,11,3] const [11,1]", 2, {S3(7, 11, 3), S2(11, 1)}, {0, 1}},
    {NN_OP_MIN, "[7,11,3] [11,3] runtime", 2, {S3(7, 11, 3), S2(11, 3)}},
    {NN_OP_ADD, "[3,5] + [5] (one block)", 2, {S2(3, 5), S1(5)}},
    {NN_OP_MAX, "2 inputs", 2, {X4, S4(1, 3, 13, 1)}},
    {NN_OP_MIN, "2 inputs", 2, {X4, X4}},
    {NN_OP_SUM, "2 inputs", 2, {X4, X4}},
    {NN_OP_SUM, "3 inputs", 3, {X4, X4, X4}},
    {NN_OP_MEAN, "2 inputs", 2, {X4, X4}},
    {NN_OP_POW, "positive base", 2, {X4, X4}, .dist = 1},
    {NN_OP_PRELU, "slope [3,1,1]", 2, {X4, S3(3, 1, 1)}, {0, 1}},
    {NN_OP_PRELU, "slope [17] runtime", 2, {X4, S1(17)}},
    /* ---- normalisation ---- */
    {NN_OP_BATCH_NORM, "1x5x13x17", 5, {S4(1, 5, 13, 17), S1(5), S1(5), S1(5), S1(5)}, {0, 1, 1, 1, 1}, .dist = 1},
    {NN_OP_INSTANCE_NORM, "1x3x13x17", 3, {X4, S1(3), S1(3)}, {0, 1, 1}},
    {NN_OP_LAYER_NORM, "3x13x17", 3, {S3(3, 13, 17), S1(17), S1(17)}, {0, 1, 1}},
    {NN_OP_LRN, "size 3", 1, {S4(1, 7, 13, 17)}, .attrs = "size=3"},
    {NN_OP_LRN, "size 5 a.01 b.5 k2", 1, {S4(1, 7, 13, 17)}, .attrs = "size=5;alpha=0.01;beta=0.5;bias=2.0"},
    {NN_OP_LRN, "size 4", 1, {S4(1, 7, 13, 17)}, .attrs = "size=4"},
    {NN_OP_SOFTMAX, "3x13x17 axis -1", 1, {S3(3, 13, 17)}},
    {NN_OP_SOFTMAX, "3x13x17 axis 1", 1, {S3(3, 13, 17)}, .attrs = "axis=1"},
    {NN_OP_SOFTMAX, "coerce_2d axis 1", 1, {S3(3, 13, 17)}, .attrs = "_coerce_2d=1;axis=1"},
    /* channels of a map (MTCNN's P-Net): our kernel, with logits far apart (its exp
     * from e^-80 to 1, and the tail of 16 positions) */
    {NN_OP_SOFTMAX, "1x2x35x47 axis 1 [-40,40)", 1, {S4(1, 2, 35, 47)}, .attrs = "axis=1", .dist = 3, .tol = 1e-12, .impl = "facefuse:softmax_inner"},
    {NN_OP_SOFTMAX, "3x7x5x9 axis 0 [-40,40)", 1, {S4(3, 7, 5, 9)}, .attrs = "axis=0", .dist = 3, .tol = 1e-12, .impl = "facefuse:softmax_inner"},
    {NN_OP_LOG_SOFTMAX, "3x13x17 axis -1", 1, {S3(3, 13, 17)}},
    /* ---- reductions ---- */
    {NN_OP_REDUCE_MEAN, "axes 2,3 keep", 2, {X4, S1(2)}, {0, 1}, {NULL, ax_23}, {0, FFU_DTYPE_I64}},
    {NN_OP_REDUCE_SUM, "axis 1 nokeep", 2, {X4, S1(1)}, {0, 1}, {NULL, ax_1}, {0, FFU_DTYPE_I64}, .attrs = "keepdims=0"},
    {NN_OP_REDUCE_MAX, "axis -1", 2, {X4, S1(1)}, {0, 1}, {NULL, ax_m1}, {0, FFU_DTYPE_I64}},
    {NN_OP_REDUCE_MIN, "all", 1, {X4}},
    /* reduced axes in two blocks (the cpu backend's general loop) */
    {NN_OP_REDUCE_MEAN, "axes 1,3 of 2x5x7x19", 2, {S4(2, 5, 7, 19), S1(2)}, {0, 1}, {NULL, ax_13}, {0, FFU_DTYPE_I64}},
    {NN_OP_REDUCE_MAX, "axes 1,3 nokeep", 2, {S4(2, 5, 7, 19), S1(2)}, {0, 1}, {NULL, ax_13}, {0, FFU_DTYPE_I64}, .attrs = "keepdims=0"},
    {NN_OP_REDUCE_PROD, "axis 1", 2, {X4, S1(1)}, {0, 1}, {NULL, ax_1}, {0, FFU_DTYPE_I64}, .dist = 2},
    {NN_OP_REDUCE_L1, "axes 2,3", 2, {X4, S1(2)}, {0, 1}, {NULL, ax_23}, {0, FFU_DTYPE_I64}},
    {NN_OP_REDUCE_L2, "axis -1", 2, {X4, S1(1)}, {0, 1}, {NULL, ax_m1}, {0, FFU_DTYPE_I64}},
    {NN_OP_REDUCE_SUM_SQUARE, "axis 1", 2, {X4, S1(1)}, {0, 1}, {NULL, ax_1}, {0, FFU_DTYPE_I64}},
    /* ---- data movement ---- */
    {NN_OP_CONCAT, "axis 1, 3 inputs", 3, {X4, S4(1, 5, 13, 17), S4(1, 1, 13, 17)}, .attrs = "axis=1"},
    {NN_OP_CONCAT, "axis -1", 2, {X4, S4(1, 3, 13, 4)}, .attrs = "axis=-1"},
    {NN_OP_RESIZE, "nearest x2 asym floor", 3, {X4, S1(0), S1(4)}, {0, 1, 1}, {NULL, NULL, sc_up2}, .absent = {0, 1, 0}, .attrs = "mode=nearest;coordinate_transformation_mode=asymmetric;nearest_mode=floor"},
    {NN_OP_RESIZE, "nearest x3 half_pixel", 3, {X4, S1(0), S1(4)}, {0, 1, 1}, {NULL, NULL, sc_up3}, .absent = {0, 1, 0}},
    {NN_OP_RESIZE, "nearest x2 asym round", 3, {X4, S1(0), S1(4)}, {0, 1, 1}, {NULL, NULL, sc_up2}, .absent = {0, 1, 0}, .attrs = "coordinate_transformation_mode=asymmetric"},
    {NN_OP_RESIZE, "linear x2 half_pixel", 3, {X4, S1(0), S1(4)}, {0, 1, 1}, {NULL, NULL, sc_up2}, .absent = {0, 1, 0}, .attrs = "mode=linear"},
    {NN_OP_RESIZE, "linear sizes 7x9", 4, {X4, S1(0), S1(0), S1(4)}, {0, 1, 1, 1}, {NULL, NULL, NULL, sz_down}, {0, 0, 0, FFU_DTYPE_I64}, .absent = {0, 1, 1, 0}, .attrs = "mode=linear"},
    {NN_OP_RESIZE, "linear align_corners", 3, {X4, S1(0), S1(4)}, {0, 1, 1}, {NULL, NULL, sc_up2}, .absent = {0, 1, 0}, .attrs = "mode=linear;coordinate_transformation_mode=align_corners"},
    {NN_OP_RESIZE, "nearest x2, batch scale 1.05", 3, {S4(9, 2, 5, 7), S1(0), S1(4)}, {0, 1, 1}, {NULL, NULL, sc_batch}, .absent = {0, 1, 0}, .attrs = "mode=nearest;coordinate_transformation_mode=asymmetric;nearest_mode=floor"},
    {NN_OP_RESIZE, "nearest x1", 3, {X4, S1(0), S1(4)}, {0, 1, 1}, {NULL, NULL, sc_one}, .absent = {0, 1, 0}},
    /* ---- ops the cpu backend leaves to ref (the session runs them there): the rows
     * read "not supported", but ref must run them on odd shapes within its buffers ---- */
    {NN_OP_GRID_SAMPLE, "bilinear zeros", 2, {S4(2, 3, 13, 17), S4(2, 7, 9, 2)}},
    {NN_OP_GRID_SAMPLE, "bicubic border ac", 2, {S4(2, 3, 13, 17), S4(2, 7, 9, 2)}, .attrs = "mode=bicubic;padding_mode=border;align_corners=1", .dist = 2},
    {NN_OP_GRID_SAMPLE, "nearest reflection", 2, {S4(1, 2, 5, 6), S4(1, 11, 13, 2)}, .attrs = "mode=nearest;padding_mode=reflection", .dist = 2},
    {NN_OP_TRILU, "13x17 upper", 1, {S2(13, 17)}},
    {NN_OP_TRILU, "2x13x17 lower k-2", 2, {S3(2, 13, 17), S1(1)}, {0, 1}, {NULL, k_m2}, {0, FFU_DTYPE_I64}, .attrs = "upper=0"},
    {NN_OP_CUM_SUM, "3x13x17 axis 1 excl rev", 2, {S3(3, 13, 17), S1(1)}, {0, 1}, {NULL, ax_1}, {0, FFU_DTYPE_I64}, .attrs = "exclusive=1;reverse=1"},
    {NN_OP_TOP_K, "3x13x17 k5 axis 1", 2, {S3(3, 13, 17), S1(1)}, {0, 1}, {NULL, k_5}, {0, FFU_DTYPE_I64}, .attrs = "axis=1"},
    {NN_OP_HARDMAX, "3x13x17", 1, {S3(3, 13, 17)}},
    {NN_OP_MVN, "1x3x13x17", 1, {X4}},
    {NN_OP_REDUCE_LOG_SUM, "axes 2,3", 2, {X4, S1(2)}, {0, 1}, {NULL, ax_23}, {0, FFU_DTYPE_I64}, .dist = 1},
    {NN_OP_REDUCE_LOG_SUM_EXP, "axis 1", 2, {X4, S1(1)}, {0, 1}, {NULL, ax_1}, {0, FFU_DTYPE_I64}},
    {NN_OP_GATHER_ND, "5x7x3 pairs", 2, {S3(5, 7, 3), S2(4, 2)}, {0, 1}, {NULL, nd_idx}, {0, FFU_DTYPE_I64}},
    {NN_OP_SCATTER_ND, "5x7x3 pairs add", 3, {S3(5, 7, 3), S2(4, 2), S2(4, 3)}, {0, 1, 0}, {NULL, nd_idx}, {0, FFU_DTYPE_I64}, .attrs = "reduction=add"},
    {NN_OP_SCATTER_ELEMENTS, "5x7 axis 0", 3, {S2(5, 7), S2(3, 7), S2(3, 7)}, {0, 1, 0}, {NULL, el_idx}, {0, FFU_DTYPE_I64}},
    {NN_OP_NLL_LOSS, "3x5x4 mean", 2, {S3(3, 5, 4), S2(3, 4)}, {0, 1}, {NULL, loss_t}, {0, FFU_DTYPE_I64}},
    {NN_OP_NLL_LOSS, "3x5x4 sum weight ii 2", 3, {S3(3, 5, 4), S2(3, 4), S1(5)}, {0, 1, 1}, {NULL, loss_t}, {0, FFU_DTYPE_I64}, .attrs = "reduction=sum;ignore_index=2"},
    {NN_OP_NLL_LOSS, "3x5 none", 2, {S2(3, 5), S1(3)}, {0, 1}, {NULL, loss_t}, {0, FFU_DTYPE_I64}, .attrs = "reduction=none"},
    {NN_OP_SOFTMAX_CROSS_ENTROPY_LOSS, "3x5x4 mean weight", 3, {S3(3, 5, 4), S2(3, 4), S1(5)}, {0, 1, 1}, {NULL, loss_t}, {0, FFU_DTYPE_I64}, .dist = 1, .nout = 2},
    {NN_OP_SOFTMAX_CROSS_ENTROPY_LOSS, "3x5x4 none ii -1", 2, {S3(3, 5, 4), S2(3, 4)}, {0, 1}, {NULL, loss_tn}, {0, FFU_DTYPE_I64}, .attrs = "reduction=none;ignore_index=-1", .nout = 2},
    {NN_OP_HANN_WINDOW, "size 10", 1, {S1(1)}, {1}, {sig_10}, {FFU_DTYPE_I64}},
    {NN_OP_HAMMING_WINDOW, "size 10 symmetric", 1, {S1(1)}, {1}, {sig_10}, {FFU_DTYPE_I64}, .attrs = "periodic=0"},
    {NN_OP_BLACKMAN_WINDOW, "size 7", 1, {S1(1)}, {1}, {sig_7}, {FFU_DTYPE_I64}},
    {NN_OP_DFT, "2x12x3x1 axis 1", 1, {S4(2, 12, 3, 1)}, .attrs = "axis=1"},
    {NN_OP_DFT, "2x5x8x2 axis 2 inverse", 1, {S4(2, 5, 8, 2)}, .attrs = "axis=2;inverse=1"},
    {NN_OP_DFT, "3x10x1 length 16 onesided", 2, {S3(3, 10, 1), S1(1)}, {0, 1}, {NULL, sig_16}, {0, FFU_DTYPE_I64}, .attrs = "axis=1;onesided=1"},
    {NN_OP_STFT, "2x64x1 step 8 window 16", 3, {S3(2, 64, 1), S1(1), S1(16)}, {0, 1, 0}, {NULL, sig_8}, {0, FFU_DTYPE_I64, 0}},
    {NN_OP_STFT, "1x40x2 step 7 length 10 two-sided", 4, {S3(1, 40, 2), S1(1), S1(0), S1(1)}, {0, 1, 0, 1}, {NULL, sig_7, NULL, sig_10}, {0, FFU_DTYPE_I64, 0, FFU_DTYPE_I64}, .absent = {0, 0, 1, 0}, .attrs = "onesided=0"},
    {NN_OP_MEL_WEIGHT_MATRIX, "8 bins, 16, 8192 Hz", 5, {S1(1), S1(1), S1(1), S1(1), S1(1)}, {1, 1, 1, 1, 1}, {sig_8, sig_16, sig_rate, sig_lo, sig_hi}, {FFU_DTYPE_I64, FFU_DTYPE_I64, FFU_DTYPE_I64, 0, 0}},
    {NN_OP_RNN, "S5 B2 I3 H4 layout 1 +B", 4, {S3(2, 5, 3), S3(1, 4, 3), S3(1, 4, 4), S2(1, 8)}, {0, 1, 1, 1}, .attrs = "hidden_size=4;layout=1", .nout = 2},
    {NN_OP_GRU, "S5 B2 I3 H4 bidirectional", 3, {S3(5, 2, 3), S3(2, 12, 3), S3(2, 12, 4)}, {0, 1, 1}, .attrs = "hidden_size=4;direction=bidirectional", .nout = 2},
    {NN_OP_GRU, "S4 B3 I2 H3 linear before reset +B", 4, {S3(4, 3, 2), S3(1, 9, 2), S3(1, 9, 3), S2(1, 18)}, {0, 1, 1, 1}, .attrs = "hidden_size=3;linear_before_reset=1", .nout = 2},
    {NN_OP_LSTM, "S4 B3 I2 H3 reverse +B", 4, {S3(4, 3, 2), S3(1, 12, 2), S3(1, 12, 3), S2(1, 24)}, {0, 1, 1, 1}, .attrs = "hidden_size=3;direction=reverse", .nout = 3},
    {NN_OP_TFIDF_VECTORIZER, "2x9 uni+bigrams skip 2 TFIDF", 1, {S2(2, 9)}, {0}, {tok}, {FFU_DTYPE_I64}, .attrs = "mode=TFIDF;min_gram_length=1;max_gram_length=2;max_skip_count=2;pool_int64s=1,2,3,1,2,2,1;ngram_counts=0,3;ngram_indexes=4,0,2,1,3;weights=0.5,1,2,0.25,3"},
    {NN_OP_ONE_HOT, "13 depth 7", 3, {S1(13), S1(1), S1(2)}, {1, 1, 1}, {oh_idx, oh_depth, oh_vals}, {FFU_DTYPE_I64, FFU_DTYPE_I64, 0}},
    {NN_OP_EYE_LIKE, "13x17 k3", 1, {S2(13, 17)}, .attrs = "k=3"},
    {NN_OP_CAST_LIKE, "f32 like i32", 2, {X4, S1(1)}, .dt = {0, FFU_DTYPE_I32}},
    {NN_OP_TAN, "1x3x13x17", 1, {X4}},
    {NN_OP_ASIN, "1x3x13x17", 1, {X4}},
    {NN_OP_ACOS, "1x3x13x17", 1, {X4}},
    {NN_OP_ATAN, "1x3x13x17", 1, {X4}},
    {NN_OP_SINH, "1x3x13x17", 1, {X4}},
    {NN_OP_COSH, "1x3x13x17", 1, {X4}},
    {NN_OP_ASINH, "1x3x13x17", 1, {X4}},
    {NN_OP_ACOSH, "(0.1, 2]", 1, {X4}, .dist = 1},
    {NN_OP_ATANH, "1x3x13x17", 1, {X4}},
    {NN_OP_SOFTSIGN, "1x3x13x17", 1, {X4}},
    {NN_OP_CELU, "alpha .5", 1, {X4}, .attrs = "alpha=0.5"},
    {NN_OP_THRESHOLDED_RELU, "alpha .2", 1, {X4}, .attrs = "alpha=0.2"},
    {NN_OP_SHRINK, "lambd .3 bias .1", 1, {X4}, .attrs = "lambd=0.3;bias=0.1"},
    {NN_OP_IS_INF, "1x3x13x17", 1, {X4}},
    {NN_OP_IS_NAN, "1x3x13x17", 1, {X4}},
    /* several outputs, each compared; tol 1e-30: the quantised steps must be ref's bits */
    {NN_OP_SPLIT, "1x6x13x17 axis 1 in 3", 1, {S4(1, 6, 13, 17)}, .attrs = "axis=1", .nout = 3},
    {NN_OP_SPLIT, "2x5x13 axis -1 as 4,9", 1, {S3(2, 5, 13)}, .attrs = "axis=-1;split=4,9", .nout = 2},
    {NN_OP_SPLIT, "4x3x7 axis 0 as 1,1,2", 1, {S3(4, 3, 7)}, .attrs = "axis=0;split=1,1,2", .nout = 3},
    {NN_OP_DYNAMIC_QUANTIZE_LINEAR, "1x3x13x17", 1, {X4}, .nout = 3},
    {NN_OP_DYNAMIC_QUANTIZE_STEPS, "1x3x13x17", 1, {X4}, .nout = 3, .tol = 1e-30, .impl = "facefuse:qsteps"},
    {NN_OP_DYNAMIC_QUANTIZE_STEPS, "1x64x56x56 (0.1, 2]", 1, {S4(1, 64, 56, 56)}, .dist = 1, .nout = 3, .tol = 1e-30},
    {NN_OP_DYNAMIC_QUANTIZE_STEPS, "37 with NaN, -0, ties", 1, {S1(37)}, {0}, {qsteps_odd}, .nout = 3, .tol = 1e-30},
};

/* ---- graph building ------------------------------------------------------------------------ */

static int is_list_attr(const char *name)
{
    static const char *const lists[] = {"strides", "pads", "dilations", "kernel_shape",
                                        "output_padding", "output_shape", "axes", "perm"};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        if (strcmp(name, lists[i]) == 0) return 1;
    return 0;
}

/* "name=v,v;name=v": strings when the value has letters; lists when it has a comma (or
 * the name is a list's), of floats when it has a dot; else one float or one int. */
static int set_attrs(nn_graph *g, int node, const char *spec)
{
    char buf[512];
    if (!spec) return 0;
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *it = strtok_r(buf, ";", &save); it; it = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(it, '=');
        if (!eq) return -1;
        *eq = 0;
        const char *name = it, *val = eq + 1;
        int letters = 0, dot = 0, comma = 0;
        for (const char *p = val; *p; p++) {
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') letters = 1;
            if (*p == '.') dot = 1;
            if (*p == ',') comma = 1;
        }
        if (letters) {
            if (nn_node_set_string(g, node, name, val) < 0) return -1;
        } else if (comma || is_list_attr(name)) {
            int64_t v[16];
            float f[16];
            int n = 0;
            for (const char *p = val; *p && n < 16;) {
                char *end;
                if (dot) f[n++] = strtof(p, &end);
                else v[n++] = strtoll(p, &end, 10);
                if (end == p) return -1;
                p = *end == ',' ? end + 1 : end;
            }
            if ((dot ? nn_node_set_floats(g, node, name, f, n) : nn_node_set_ints(g, node, name, v, n)) < 0)
                return -1;
        } else if (dot) {
            if (nn_node_set_float(g, node, name, strtof(val, NULL)) < 0) return -1;
        } else if (nn_node_set_int(g, node, name, strtoll(val, NULL, 10)) < 0) {
            return -1;
        }
    }
    return 0;
}

static float rnd(uint64_t *s, int dist);

/* Weights w [K][...] made as a uint8-quantised TF.js weight after a per-channel fold:
 * ((float)q * scale + min) * f[k], codes over [-1, 1] (255 steps), f[k] in [0.5, 1.5]
 * (negative for every third channel). */
#define GRID_SCALE (2.0f / 255)
#define GRID_MIN (-1.0f)
static void grid_weights(float *w, const nn_shape *s, uint64_t *seed)
{
    int64_t K = s->d[0], per = nn_shape_numel(s) / K;
    for (int64_t k = 0; k < K; k++) {
        float f = (k % 3 == 2 ? -1.0f : 1.0f) * (1.0f + 0.5f * rnd(seed, 0));
        for (int64_t i = 0; i < per; i++) {
            float q = floorf((w[k * per + i] - GRID_MIN) / GRID_SCALE + 0.5f);
            float u = q * GRID_SCALE + GRID_MIN;
            w[k * per + i] = u * f;
        }
    }
}

static float rnd(uint64_t *s, int dist)
{
    float u = test_rand_f(s);
    switch (dist) {
    case 1: return 0.1f + 1.9f * u;
    case 2: {
        float m = 0.5f + test_rand_f(s);
        return u < 0.5f ? -m : m;
    }
    case 3: return 80.0f * u - 40.0f;
    default: return 2.0f * u - 1.0f;
    }
}

typedef struct built {
    nn_graph *g;
    int node;
    void *in[MAXIN];     /* data of every input (constants point at graph data) */
    void *own[MAXIN];    /* what we malloc'd */
} built;

static void built_free(built *b)
{
    for (int i = 0; i < MAXIN; i++) free(b->own[i]);
    nn_graph_destroy(b->g);
    memset(b, 0, sizeof *b);
}

/* Builds the one-node graph of a case and runs shape inference. 0 on success, -1 when
 * ref cannot even build it (reported as "no ref"). */
static int build_case(const tcase *tc, uint64_t *seed, built *b)
{
    memset(b, 0, sizeof *b);
    if (nn_graph_create(&b->g) < 0) return -1;
    nn_graph *g = b->g;
    int ins[MAXIN];
    for (int i = 0; i < tc->nin; i++) {
        if (tc->absent[i]) {
            ins[i] = -1;
            continue;
        }
        ffu_dtype dt = tc->dt[i] ? tc->dt[i] : F32;
        int64_t numel = nn_shape_numel(&tc->in[i]);
        size_t bytes = (size_t)numel * ffu_dtype_size(dt);
        void *data = malloc(bytes ? bytes : 1);
        if (!data) return -1;
        b->own[i] = data;
        if (tc->data[i]) memcpy(data, tc->data[i], bytes);
        else if (dt == F32)
            for (int64_t k = 0; k < numel; k++) ((float *)data)[k] = rnd(seed, tc->dist);
        if (tc->grid && i == 1) {
            grid_weights(data, &tc->in[1], seed);
            if (tc->grid == 2) {
                float *last = (float *)data + numel - 1;
                *last = nextafterf(*last, INFINITY);
            }
        }
        /* batch-norm variance must be positive */
        if (tc->op == NN_OP_BATCH_NORM && i == 4)
            for (int64_t k = 0; k < numel; k++) ((float *)data)[k] = fabsf(((float *)data)[k]) + 0.1f;
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        ins[i] = tc->cnst[i] ? nn_graph_add_const(g, name, dt, &tc->in[i], data, bytes, NN_BORROW)
                             : nn_graph_add_tensor(g, name, dt, &tc->in[i]);
        if (ins[i] < 0) return -1;
        if (tc->grid && i == 1) { /* as the TF.js loader marks such a weight */
            g->tensors[ins[i]].flags |= NN_T_Q8;
            g->tensors[ins[i]].q8_scale = GRID_SCALE, g->tensors[ins[i]].q8_min = GRID_MIN;
        }
        if (!tc->cnst[i]) nn_graph_mark_input(g, ins[i]);
        b->in[i] = data;
    }
    int outs[MAXOUT], nout = tc->nout ? tc->nout : 1, out;
    for (int k = 0; k < nout; k++) {
        char name[16];
        snprintf(name, sizeof name, "out%d", k);
        if ((outs[k] = nn_graph_add_tensor(g, name, FFU_DTYPE_UNDEFINED, NULL)) < 0) return -1;
    }
    out = outs[0];
    b->node = nn_graph_add_node(g, tc->op, "n", ins, tc->nin, outs, nout);
    if (b->node < 0 || set_attrs(g, b->node, tc->attrs) < 0) return -1;
    for (int k = 0; k < nout; k++) nn_graph_mark_output(g, outs[k]);
    nn_node *n = &g->nodes[b->node];
    n->act.kind = tc->act;
    n->act.alpha = tc->act_a;
    n->act.beta = tc->act_b;
    const nn_op_def *def = nn_op_get(tc->op);
    if (!def || !def->infer || !def->run) return -1;
    if (def->infer(g, n) < 0) return -1;
    if (tc->act == NN_ACT_PRELU) {
        const nn_tensor *o = &g->tensors[out];
        int64_t C = tc->act_slope == 1 && o->shape.rank >= 2 ? o->shape.d[1] : 1;
        float sl[256];
        for (int64_t k = 0; k < C && k < 256; k++) sl[k] = 0.05f + 0.3f * test_rand_f(seed);
        nn_shape ss = {.rank = 1, .d = {C}};
        int t = nn_graph_add_const(g, "slope", F32, &ss, sl, (size_t)C * 4, NN_COPY);
        if (t < 0) return -1;
        g->nodes[b->node].act.slope = t;
    }
    return 0;
}

/* ---- running and comparing ---------------------------------------------------------------- */

typedef struct guarded {
    unsigned char *base;
    size_t bytes;
} guarded;

static void *guarded_alloc(guarded *gb, size_t bytes)
{
    gb->bytes = bytes;
    gb->base = malloc(bytes + 2 * GUARD);
    if (!gb->base) return NULL;
    memset(gb->base, SENTINEL, bytes + 2 * GUARD);
    return gb->base + GUARD;
}

static int guarded_intact(const guarded *gb)
{
    for (size_t i = 0; i < GUARD; i++)
        if (gb->base[i] != SENTINEL || gb->base[GUARD + gb->bytes + i] != SENTINEL) return 0;
    return 1;
}

/* NMSE of got vs want; -1 when NaN/Inf positions differ. */
static double nmse(const float *want, const float *got, size_t n)
{
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; i++) {
        int wn = isnan(want[i]), gn = isnan(got[i]);
        int wi = isinf(want[i]), gi = isinf(got[i]);
        if (wn != gn || wi != gi || (wi && (want[i] > 0) != (got[i] > 0))) return -1;
        if (wn || wi) continue;
        double d = (double)want[i] - (double)got[i];
        err += d * d;
        ref += (double)want[i] * want[i];
    }
    return ref > 0 ? err / ref : err;
}

enum { R_OK, R_FAIL, R_UNSUPPORTED, R_NOREF };

/* Cases whose prepared node reported an fp16 implementation (node_info "fp16 ..."). */
static int fp16_prepared;

/* A backend with device memory (cuda): every input (constants too, as the session
 * uploads them) goes to device memory, each output buffer with its guard bytes goes up
 * and comes back, so the sentinel check sees device writes outside the outputs. */
static int run_on_device(nn_backend *be, const nn_graph *g, const nn_node *n, const built *bt,
                         const tcase *tc, guarded *out, int nout, char *why, size_t whylen)
{
    void *din[MAXIN] = {0}, *dout[MAXOUT] = {0}, *scratch = NULL, *outs[MAXOUT];
    int rc = -1, dsp = be->space;
    for (int k = 0; k < nout; k++) {
        size_t total = out[k].bytes + 2 * GUARD;
        if (be->ops->mem_alloc(be, total, &dout[k]) < 0) goto fail;
        /* an output starts as NaN (all bits set), not the sentinel: an element the
         * kernel never writes, or a library that reads the output it was told to
         * ignore (cuDNN's fused conv with alpha2 = 0 and z = y; beta = 0 elsewhere),
         * shows up as a NaN */
        if (k == 0 && tc->inplace > 0) memcpy(out[k].base + GUARD, bt->in[tc->inplace], out[k].bytes);
        else memset(out[k].base + GUARD, 0xFF, out[k].bytes);
        if (be->ops->copy(be, dout[k], dsp, out[k].base, NN_SPACE_HOST, total) < 0) goto fail;
        outs[k] = (char *)dout[k] + GUARD;
    }
    for (int i = 0; i < n->ninputs && i < MAXIN; i++) {
        const nn_tensor *t = nn_in(g, n, i);
        if (!t) continue;
        if (tc->inplace > 0 && tc->inplace == i) {
            din[i] = NULL; /* the output buffer itself */
            continue;
        }
        size_t bytes = nn_tensor_bytes(t);
        if (be->ops->mem_alloc(be, bytes ? bytes : 4, &din[i]) < 0) goto fail;
        if (bytes && be->ops->copy(be, din[i], dsp, bt->in[i], NN_SPACE_HOST, bytes) < 0) goto fail;
    }
    size_t sb = be->ops->scratch_bytes(be, g, n);
    if (sb && be->ops->mem_alloc(be, sb, &scratch) < 0) goto fail;
    void *ins[MAXIN];
    for (int i = 0; i < MAXIN; i++) ins[i] = tc->inplace == i && i > 0 ? outs[0] : din[i];
    if (be->ops->run(be, g, n, ins, outs, scratch) < 0) {
        snprintf(why, whylen, "run: %s", ffu_error_message());
        goto done;
    }
    for (int k = 0; k < nout; k++)
        if (be->ops->copy(be, out[k].base, NN_SPACE_HOST, dout[k], dsp, out[k].bytes + 2 * GUARD) < 0)
            goto fail;
    if (be->ops->sync(be) < 0) goto fail;
    rc = 0;
    goto done;
fail:
    snprintf(why, whylen, "device: %s", ffu_error_message());
done:
    be->ops->sync(be);
    for (int i = 0; i < MAXIN; i++) be->ops->mem_free(be, din[i]);
    for (int k = 0; k < MAXOUT; k++) be->ops->mem_free(be, dout[k]);
    be->ops->mem_free(be, scratch);
    return rc;
}

/* Runs one case on ref and on b; *err gets the largest NMSE of its outputs (1 for an
 * integer output that differs, -1 where NaN/Inf positions differ). */
static int run_case(nn_backend *be, const tcase *tc, uint64_t *seed, double *err, char *why,
                    size_t whylen)
{
    built bt;
    int res = R_NOREF, nout = 0;
    guarded ref_out[MAXOUT] = {{0}}, cpu_out[MAXOUT] = {{0}};
    void *scratch = NULL, *ref_scratch = NULL;
    *err = 0;
    why[0] = 0;
    if (build_case(tc, seed, &bt) < 0) {
        snprintf(why, whylen, "%s", ffu_error_message());
        goto out;
    }
    nn_graph *g = bt.g;
    nn_node *n = &g->nodes[bt.node];
    const nn_op_def *def = nn_op_get(tc->op);
    void *ref_outs[MAXOUT], *cpu_outs[MAXOUT];
    nout = n->noutputs;
    for (int k = 0; k < nout; k++) {
        const nn_tensor *o = nn_out(g, n, k);
        size_t bytes = nn_tensor_bytes(o);
        ref_outs[k] = guarded_alloc(&ref_out[k], bytes);
        cpu_outs[k] = guarded_alloc(&cpu_out[k], bytes);
        if (!ref_outs[k] || !cpu_outs[k]) {
            snprintf(why, whylen, "out of memory");
            goto out;
        }
    }
    size_t rsb = def->scratch_bytes ? def->scratch_bytes(g, n) : 0;
    ref_scratch = malloc(rsb ? rsb : 1);
    if (!ref_scratch) {
        snprintf(why, whylen, "out of memory");
        goto out;
    }
    void *ref_in[MAXIN], *cpu_in[MAXIN];
    for (int i = 0; i < MAXIN; i++) ref_in[i] = cpu_in[i] = bt.in[i];
    if (tc->inplace > 0) {
        memcpy(ref_outs[0], bt.in[tc->inplace], ref_out[0].bytes);
        memcpy(cpu_outs[0], bt.in[tc->inplace], cpu_out[0].bytes);
        ref_in[tc->inplace] = ref_outs[0];
        cpu_in[tc->inplace] = cpu_outs[0];
    }
    void *const *in = ref_in;
    if (def->run(g, n, in, ref_outs, ref_scratch) < 0) {
        snprintf(why, whylen, "ref: %s", ffu_error_message());
        goto out;
    }
    res = R_UNSUPPORTED;
    if (!be || !be->ops->supports(be, g, n)) {
        /* a case that names an implementation must be claimed where that is checked */
        if (tc->impl && be && be->space == NN_SPACE_HOST && (ffu_cpu_features() & FFU_CPU_AVX512F)) {
            snprintf(why, whylen, "not claimed (wants %s)", tc->impl);
            res = R_FAIL;
        }
        goto out;
    }
    res = R_FAIL;
    if (be->ops->prepare(be, g, n) < 0) {
        snprintf(why, whylen, "prepare: %s", ffu_error_message());
        goto out;
    }
    if (be->ops->node_info) {
        const char *impl = NULL;
        int reorders = 0;
        be->ops->node_info(be, n, &impl, &reorders);
        fp16_prepared += impl && strncmp(impl, "fp16 ", 5) == 0;
        /* a case that forces one of our kernels must run it where AVX-512 exists (a
         * silent fallback to oneDNN would leave the kernel untested) */
        const char *want = tc->impl       ? tc->impl
                           : !tc->attrs   ? NULL
                           : strstr(tc->attrs, "_cpu_dw=1") ? "facefuse:dw_avx512"
                           : strstr(tc->attrs, "_cpu_pw=1") ? "facefuse:pw_avx512"
                           : strstr(tc->attrs, "_cpu_cf=1") ? "facefuse:cf_avx512"
                           : strstr(tc->attrs, "_cpu_wino=1") ? "facefuse:wino"
                           : strstr(tc->attrs, "_cpu_q8=1")   ? "facefuse:q8_avx512"
                                                              : NULL;
        const int shun = want && want[0] == '!';
        if (shun) want++;
        if (want && be->space == NN_SPACE_HOST && (ffu_cpu_features() & FFU_CPU_AVX512F) &&
            (impl && strncmp(impl, want, strlen(want)) == 0) == shun) {
            snprintf(why, whylen, "ran %s, %s %s", impl ? impl : "?", shun ? "which is" : "not",
                     want);
            goto release;
        }
    }
    if (be->space != NN_SPACE_HOST) {
        if (run_on_device(be, g, n, &bt, tc, cpu_out, nout, why, whylen) < 0) goto release;
        goto compare;
    }
    size_t sb = be->ops->scratch_bytes(be, g, n);
    scratch = sb ? malloc(sb) : NULL;
    if (sb && !scratch) goto release;
    if (be->ops->run(be, g, n, cpu_in, cpu_outs, scratch) < 0) {
        snprintf(why, whylen, "run: %s", ffu_error_message());
        goto release;
    }
compare:
    for (int k = 0; k < nout; k++) {
        const nn_tensor *o = nn_out(g, n, k);
        if (!guarded_intact(&cpu_out[k])) {
            snprintf(why, whylen, "wrote outside its output %d", k);
            goto release;
        }
        double e = o->dtype != F32 ? (memcmp(ref_outs[k], cpu_outs[k], ref_out[k].bytes) ? 1 : 0)
                                   : nmse(ref_outs[k], cpu_outs[k], ref_out[k].bytes / 4);
        if (e < 0 || *err < 0) *err = -1;
        else if (e > *err) *err = e;
    }
    double tol = tc->tol > 0 ? tc->tol : 1e-9;
    if (*err < 0) snprintf(why, whylen, "NaN/Inf in different places");
    else if (*err > tol) snprintf(why, whylen, "nmse above %.0e", tol);
    else res = R_OK;
release:
    be->ops->release(be, n);
    if (n->priv) {
        snprintf(why, whylen, "release left node->priv set");
        res = R_FAIL;
    }
out:
    free(scratch);
    free(ref_scratch);
    for (int k = 0; k < MAXOUT; k++) free(ref_out[k].base), free(cpu_out[k].base);
    if (bt.g) built_free(&bt);
    return res;
}

/* The whole table on one backend; the number of FAIL rows (< 0: not run). */
static int op_table(nn_backend *be, int *oks_out)
{
    const char *bn = be->ops->name;
    uint64_t seed = 0x5eed1234abcdULL;
    int fails = 0, oks = 0, unsup = 0, noref = 0;
    unsigned char covered[NN_OP_COUNT] = {0};
    printf("%-22s %-28s %-22s %s\n", "op", "shape", bn, "nmse");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const tcase *tc = &cases[i];
        double err;
        char why[300];
        covered[tc->op] = 1;
        int r = run_case(be, tc, &seed, &err, why, sizeof why);
        const char *res = r == R_OK ? "ok" : r == R_FAIL ? "FAIL" : r == R_UNSUPPORTED ? "not supported" : "no ref";
        if (r == R_OK || r == R_FAIL)
            printf("%-22s %-28s %s: %-17s %.3g%s%s\n", nn_op_name(tc->op), tc->label, bn, res,
                   err, why[0] ? "  " : "", why);
        else
            printf("%-22s %-28s %s: %-17s -%s%s\n", nn_op_name(tc->op), tc->label, bn, res,
                   why[0] ? "  " : "", why);
        fails += r == R_FAIL, oks += r == R_OK, unsup += r == R_UNSUPPORTED, noref += r == R_NOREF;
    }
    /* the rest of ops.def: the backend claims none of them (data movement, integer and
     * comparison ops run on ref) */
    for (int op = 1; op < NN_OP_COUNT; op++)
        if (!covered[op]) {
            printf("%-22s %-28s %s: %-17s -\n", nn_op_name((nn_op)op), "(any)", bn,
                   "not supported");
            unsup++;
        }
    printf("op table (%s): %d ok, %d FAIL, %d not supported, %d without ref kernel\n", bn, oks,
           fails, unsup, noref);
    *oks_out = oks;
    return fails + noref; /* a case whose reference kernel fails is broken too */
}

static void test_op_table(void)
{
    nn_backend *be = NULL;
    ffu_status st = nn_backend_cpu_create(&be, 2, NN_CPU_WINOGRAD);
    if (st == FFU_ERR_UNSUPPORTED) TEST_SKIP("built without oneDNN");
    CHECK(st == FFU_OK && be);
    int oks = 0, fails = op_table(be, &oks);
    be->ops->destroy(be);
    CHECK_EQ_INT(fails, 0);
    CHECK(oks > 50); /* the backend must claim the bulk of the float ops */
}

/* The same table on the GPU (skipped without a device or a CUDA build). */
static void test_op_table_cuda(void)
{
    nn_backend *be = NULL;
    nn_cuda_opts co = {.device = 0, .fp16 = 0, .graphs = 0};
    ffu_status st = nn_backend_cuda_create(&be, &co);
    if (st == FFU_ERR_UNSUPPORTED || st == FFU_ERR_DEVICE) TEST_SKIP(ffu_error_message());
    CHECK(st == FFU_OK && be);
    CHECK(be->space != NN_SPACE_HOST);
    int oks = 0, fails = op_table(be, &oks);
    be->ops->destroy(be);
    CHECK_EQ_INT(fails, 0);
    CHECK(oks > 50);
}

/* The convolutions again on cuda with fp16 allowed: each node keeps fp16 only where its
 * own gate passed at prepare (NMSE <= 1e-5 on a random input), so the table's inputs
 * must come out within 1e-4 of ref, and some nodes must really run in fp16 (the fp16
 * descriptors, weight conversion, scratch layout and epilogue, in place or not). */
static void test_op_table_cuda_fp16(void)
{
    nn_backend *be = NULL;
    nn_cuda_opts co = {.device = 0, .fp16 = 1, .graphs = 0};
    ffu_status st = nn_backend_cuda_create(&be, &co);
    if (st == FFU_ERR_UNSUPPORTED || st == FFU_ERR_DEVICE) TEST_SKIP(ffu_error_message());
    CHECK(st == FFU_OK && be);
    if (!be->fp16) {
        be->ops->destroy(be);
        TEST_SKIP("no fp16 on this device (compute capability < 7.0 or no cuDNN)");
    }
    uint64_t seed = 0x5eed16ULL;
    int fails = 0, oks = 0;
    fp16_prepared = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].op != NN_OP_CONV) continue;
        tcase tc = cases[i];
        if (tc.tol < 1e-4) tc.tol = 1e-4;
        double err;
        char why[300];
        int r = run_case(be, &tc, &seed, &err, why, sizeof why);
        if (r == R_OK || r == R_FAIL)
            printf("%-22s %-28s cuda fp16: %-6s %.3g%s%s\n", nn_op_name(tc.op), tc.label,
                   r == R_OK ? "ok" : "FAIL", err, why[0] ? "  " : "", why);
        fails += r == R_FAIL, oks += r == R_OK;
    }
    printf("conv cases on cuda with fp16: %d ok, %d FAIL, %d prepared in fp16\n", oks, fails,
           fp16_prepared);
    be->ops->destroy(be);
    CHECK_EQ_INT(fails, 0);
    CHECK(oks > 20);
    CHECK(fp16_prepared > 0);
}

/* ---- chains: channels-last activations between cpu nodes ---------------------------------- */

/* A small network whose intermediates only cpu nodes touch (so they are stored NHWC),
 * with one intermediate also read by a plain-only op (Softmax) and a graph output in
 * the middle, run node by node as a session would: cpu where supported, ref
 * elsewhere; compared against the same graph run entirely on ref. */
static int chain_graph(nn_graph **out, uint64_t *seed, float **xdata, void **owned, int *nowned)
{
    nn_graph *g;
    if (nn_graph_create(&g) < 0) return -1;
    *out = g;
    /* an NHWC input transposed to NCHW (TF-converted models): the cpu Transpose writes
     * it channels-last, a plain copy */
    nn_shape xs = S4(1, 13, 37, 3);
    int x = nn_graph_add_tensor(g, "x", F32, &xs);
    nn_graph_mark_input(g, x);
    *xdata = malloc(3 * 13 * 37 * 4);
    for (int i = 0; i < 3 * 13 * 37; i++) (*xdata)[i] = rnd(seed, 0);
    int t = x, k = 0;
    char name[32];
    int64_t to_nchw[4] = {0, 3, 1, 2}, to_nhwc[4] = {0, 2, 3, 1};
    t = nn_graph_add_tensor(g, "xt", FFU_DTYPE_UNDEFINED, NULL);
    int n = nn_graph_add_node(g, NN_OP_TRANSPOSE, "tin", &x, 1, &t, 1);
    nn_node_set_ints(g, n, "perm", to_nchw, 4);
#define NEWT() (snprintf(name, sizeof name, "t%d", k++), nn_graph_add_tensor(g, name, FFU_DTYPE_UNDEFINED, NULL))
#define CONST(shape)                                                                       \
    ({                                                                                     \
        nn_shape cs_ = shape;                                                              \
        int64_t ne_ = nn_shape_numel(&cs_);                                                \
        float *d_ = malloc((size_t)ne_ * 4);                                               \
        for (int64_t i_ = 0; i_ < ne_; i_++) d_[i_] = rnd(seed, 0) * 0.5f;                \
        owned[(*nowned)++] = d_;                                                           \
        snprintf(name, sizeof name, "c%d", k++);                                           \
        nn_graph_add_const(g, name, F32, &cs_, d_, (size_t)ne_ * 4, NN_BORROW);            \
    })
    int64_t p1[4] = {1, 1, 1, 1}, s2[2] = {2, 2}, k2[2] = {2, 2};
    /* conv 3x3 3->16 stride 1x2 + relu, reading the channels-last copy */
    int in3[3] = {t, CONST(S4(16, 3, 3, 3)), CONST(S1(16))}, o = NEWT();
    n = nn_graph_add_node(g, NN_OP_CONV, "c1", in3, 3, &o, 1);
    nn_node_set_ints(g, n, "pads", p1, 4);
    int64_t s12[2] = {1, 2};
    nn_node_set_ints(g, n, "strides", s12, 2);
    g->nodes[n].act.kind = NN_ACT_RELU;
    t = o;
    /* depthwise 3x3 s2 + prelu */
    int in3b[3] = {t, CONST(S4(16, 1, 3, 3)), CONST(S1(16))};
    o = NEWT();
    n = nn_graph_add_node(g, NN_OP_CONV, "dw", in3b, 3, &o, 1);
    nn_node_set_ints(g, n, "pads", p1, 4);
    nn_node_set_ints(g, n, "strides", s2, 2);
    nn_node_set_int(g, n, "group", 16);
    g->nodes[n].act.kind = NN_ACT_PRELU;
    g->nodes[n].act.slope = CONST(S3(16, 1, 1));
    t = o;
    /* max pool 2x2 ceil */
    o = NEWT();
    n = nn_graph_add_node(g, NN_OP_MAX_POOL, "mp", &t, 1, &o, 1);
    nn_node_set_ints(g, n, "kernel_shape", k2, 2);
    nn_node_set_ints(g, n, "strides", s2, 2);
    nn_node_set_int(g, n, "ceil_mode", 1);
    int pooled = o;
    /* 1x1 conv and residual add (+relu6) */
    int in3c[3] = {pooled, CONST(S4(16, 16, 1, 1)), CONST(S1(16))};
    o = NEWT();
    nn_graph_add_node(g, NN_OP_CONV, "pw", in3c, 3, &o, 1);
    int add_in[2] = {o, pooled};
    o = NEWT();
    n = nn_graph_add_node(g, NN_OP_ADD, "add", add_in, 2, &o, 1);
    g->nodes[n].act.kind = NN_ACT_RELU6;
    int res0 = o;
    /* the same as one fused Conv with a residual (channels-last on both sides; run_graph
     * puts the output in place of the residual, which dies here) */
    int in4[4] = {res0, CONST(S4(16, 16, 1, 1)), CONST(S1(16)), res0};
    in4[3] = NEWT();
    nn_graph_add_node(g, NN_OP_RELU, "copy", &res0, 1, &in4[3], 1);
    o = NEWT();
    n = nn_graph_add_node(g, NN_OP_CONV, "pwres", in4, 4, &o, 1);
    g->nodes[n].act.kind = NN_ACT_RELU6;
    int res = o;
    /* a per-channel scale (broadcast operand) and a sigmoid branch, concatenated */
    int mul_in[2] = {res, CONST(S4(1, 16, 1, 1))};
    o = NEWT();
    nn_graph_add_node(g, NN_OP_MUL, "mul", mul_in, 2, &o, 1);
    int scaled = o;
    o = NEWT();
    nn_graph_add_node(g, NN_OP_SIGMOID, "sig", &res, 1, &o, 1);
    /* with a constant third part (stored NCHW, converted once for a channels-last
     * concat, as BlazeFace pads channels) */
    int cat_in[3] = {scaled, o, CONST(S4(1, 4, 4, 5))};
    o = NEWT();
    n = nn_graph_add_node(g, NN_OP_CONCAT, "cat", cat_in, 3, &o, 1);
    nn_node_set_int(g, n, "axis", 1);
    int cat = o;
    /* a plain-only reader of the concat result, exported */
    o = NEWT();
    n = nn_graph_add_node(g, NN_OP_SOFTMAX, "sm", &cat, 1, &o, 1);
    nn_node_set_int(g, n, "axis", 1);
    nn_graph_mark_output(g, o);
    /* channels padded with a constant (kept channels-last) into a 1x1 conv, exported */
    {
        static const int64_t cp[8] = {0, 2, 1, 0, 0, 14, 0, 1};
        static const float cv[1] = {0.25f};
        nn_shape ps = S1(8), vs = S1(1);
        snprintf(name, sizeof name, "c%d", k++);
        int pads = nn_graph_add_const(g, name, FFU_DTYPE_I64, &ps, cp, sizeof cp, NN_BORROW);
        snprintf(name, sizeof name, "c%d", k++);
        int val = nn_graph_add_const(g, name, F32, &vs, cv, sizeof cv, NN_BORROW);
        int pin[3] = {scaled, pads, val};
        int padded = NEWT();
        nn_graph_add_node(g, NN_OP_PAD, "pad", pin, 3, &padded, 1);
        int in3p[3] = {padded, CONST(S4(8, 32, 1, 1)), CONST(S1(8))};
        o = NEWT();
        nn_graph_add_node(g, NN_OP_CONV, "pwpad", in3p, 3, &o, 1);
        nn_graph_mark_output(g, o);
    }
    /* global average pool of the residual as another output (NHWC in, tiny out) */
    o = NEWT();
    nn_graph_add_node(g, NN_OP_GLOBAL_AVERAGE_POOL, "gap", &scaled, 1, &o, 1);
    nn_graph_mark_output(g, o);
    /* final conv 3x3 32->5 to a graph output (NCHW) */
    int in3d[3] = {cat, CONST(S4(5, 36, 3, 3)), CONST(S1(5))};
    o = NEWT();
    n = nn_graph_add_node(g, NN_OP_CONV, "head", in3d, 3, &o, 1);
    nn_node_set_ints(g, n, "pads", p1, 4);
    /* ... transposed to NHWC: the cpu Transpose reads the channels-last conv output */
    t = o;
    o = NEWT();
    n = nn_graph_add_node(g, NN_OP_TRANSPOSE, "tout", &t, 1, &o, 1);
    nn_node_set_ints(g, n, "perm", to_nhwc, 4);
    nn_graph_mark_output(g, o);
#undef NEWT
#undef CONST
    for (int i = 0; i < g->nnodes; i++)
        if (nn_op_get(g->nodes[i].op)->infer(g, &g->nodes[i]) < 0) return -1;
    return 0;
}

/* Runs g node by node; be == NULL: all ref. bufs[t] receives every tensor's data. */
static int aliased = -1; /* the tensor run_graph put in place of a residual */

static int run_graph(nn_graph *g, nn_backend *be, const float *x, void **bufs, int *ncpu)
{
    int me = 0, ok = 0;
    *ncpu = 0;
    for (int t = 0; t < g->ntensors; t++) {
        nn_tensor *tt = &g->tensors[t];
        if (tt->flags & NN_T_CONST) bufs[t] = tt->data;
        else if (t == g->inputs[0]) bufs[t] = (void *)x;
        else bufs[t] = calloc(1, (size_t)nn_shape_numel(&tt->shape) * 4 + 64);
    }
    /* a Conv's fused residual shares the output's buffer, as the planner does */
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        if (n->op != NN_OP_CONV || n->ninputs < 4) continue;
        free(bufs[n->outputs[0]]);
        bufs[n->outputs[0]] = NULL;
        aliased = n->outputs[0];
    }
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        n->backend = be && be->ops->supports(be, g, n) ? me : 1;
        *ncpu += n->backend == me;
    }
    size_t sb = 0;
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        if (n->backend != me) continue;
        if (be->ops->prepare(be, g, n) < 0) goto out;
        size_t b = be->ops->scratch_bytes(be, g, n);
        if (b > sb) sb = b;
    }
    void *scratch = malloc(sb + 4096);
    for (int i = 0; i < g->nnodes; i++) {
        nn_node *n = &g->nodes[i];
        void *in[8], *outs[4];
        if (n->op == NN_OP_CONV && n->ninputs > 3) bufs[n->outputs[0]] = bufs[n->inputs[3]];
        for (int j = 0; j < n->ninputs; j++) in[j] = n->inputs[j] >= 0 ? bufs[n->inputs[j]] : NULL;
        for (int j = 0; j < n->noutputs; j++) outs[j] = bufs[n->outputs[j]];
        ffu_status st = n->backend == me ? be->ops->run(be, g, n, in, outs, scratch)
                                         : nn_op_get(n->op)->run(g, n, in, outs, scratch);
        if (st < 0) {
            free(scratch);
            goto out;
        }
    }
    free(scratch);
    ok = 1;
out:
    for (int i = 0; i < g->nnodes; i++)
        if (be && g->nodes[i].backend == me) be->ops->release(be, &g->nodes[i]);
    return ok ? 0 : -1;
}

#if FFU_HAVE_DNNL
#include "nn/cpu/cpu_internal.h"
#endif

static void test_channels_last_chain(void)
{
    nn_backend *be = NULL;
    ffu_status st = nn_backend_cpu_create(&be, 2, 0);
    if (st == FFU_ERR_UNSUPPORTED) TEST_SKIP("built without oneDNN");
    CHECK(st == FFU_OK);
    uint64_t seed = 4242;
    nn_graph *g = NULL;
    float *x = NULL;
    void *owned[32];
    int nowned = 0, ncpu = 0, dummy;
    CHECK(chain_graph(&g, &seed, &x, owned, &nowned) == 0);
    void **ref = calloc((size_t)g->ntensors, sizeof(void *));
    void **cpu = calloc((size_t)g->ntensors, sizeof(void *));
    CHECK(ref && cpu);
    CHECK(run_graph(g, NULL, x, ref, &dummy) == 0);
#if FFU_HAVE_DNNL
    /* run once more with the layout map kept (prepare builds it; release clears it) */
#endif
    CHECK(run_graph(g, be, x, cpu, &ncpu) == 0);
    CHECK(ncpu >= g->nnodes - 1); /* everything but nothing (Softmax is claimed too) */
    int checked = 0;
    for (int k = 0; k < g->noutputs; k++) {
        int t = g->outputs[k];
        size_t n = (size_t)nn_shape_numel(&g->tensors[t].shape);
        double e = nmse(ref[t], cpu[t], n);
        printf("chain output %-4s nmse %.3g\n", g->tensors[t].name, e);
        CHECK(e >= 0 && e < 1e-10);
        checked++;
    }
    CHECK_EQ_INT(checked, 4);
#if FFU_HAVE_DNNL
    /* the layout plan must have put the private intermediates in NHWC: prepare one
     * node again and look at the map */
    cpu_backend *cb = (cpu_backend *)be;
    nn_node *n0 = &g->nodes[0];
    CHECK(be->ops->prepare(be, g, n0) == FFU_OK);
    int nhwc = 0;
    for (int t = 0; t < g->ntensors; t++) nhwc += cb->lay_g == g && cb->lay[t];
    printf("chain: %d tensors channels-last\n", nhwc);
    CHECK(nhwc >= 5);
    CHECK(!cb->lay[g->inputs[0]]);
    for (int k = 0; k < g->noutputs; k++) CHECK(!cb->lay[g->outputs[k]]);
    be->ops->release(be, n0);
    CHECK(cb->lay_g == NULL);
#endif
    for (int t = 0; t < g->ntensors; t++)
        if (!(g->tensors[t].flags & NN_T_CONST) && t != g->inputs[0] && t != aliased)
            free(ref[t]), free(cpu[t]);
    free(ref), free(cpu), free(x);
    for (int i = 0; i < nowned; i++) free(owned[i]);
    nn_graph_destroy(g);
    be->ops->destroy(be);
}

/* Winograd blocks: 12 tiles where U stays in L2 or V and M would outgrow it, else a
 * thread's share in one block. */
static void test_wino_block(void)
{
#if FFU_HAVE_DNNL
    nn_cpu_wino d = {.N = 1, .C = 112, .K = 128, .m = 4, .TY = 5, .TX = 5};
    CHECK_EQ_INT(nn_cpu_wino_block(&d, 1), 36); /* U 2.1 MB: 25 tiles, V + M 1.2 MB */
    CHECK_EQ_INT(nn_cpu_wino_block(&d, 2), 24);
    d.N = 2; /* 50 tiles: V + M would take 2.0 MB */
    CHECK_EQ_INT(nn_cpu_wino_block(&d, 1), 12);
    CHECK_EQ_INT(nn_cpu_wino_block(&d, 2), 36);
    d.C = d.K = 96, d.N = 1; /* U 1.3 MB stays in L2 */
    CHECK_EQ_INT(nn_cpu_wino_block(&d, 1), 12);
#else
    TEST_SKIP("built without oneDNN");
#endif
}

/* The backend contract: run before prepare fails cleanly, release(NULL priv) and
 * destroy work, threads are restored. */
static void test_contract(void)
{
    nn_backend *be = NULL;
    ffu_status st = nn_backend_cpu_create(&be, 1, 0);
    if (st == FFU_ERR_UNSUPPORTED) TEST_SKIP("built without oneDNN");
    CHECK(st == FFU_OK && be && be->threads == 1);
    nn_graph *g;
    CHECK(nn_graph_create(&g) == FFU_OK);
    nn_shape s = S2(3, 5);
    int a = nn_graph_add_tensor(g, "a", F32, &s), y = nn_graph_add_tensor(g, "y", F32, &s);
    int n = nn_graph_add_node(g, NN_OP_RELU, "r", &a, 1, &y, 1);
    float in[15] = {0}, out[15];
    void *ins[1] = {in}, *outs[1] = {out};
    CHECK(be->ops->run(be, g, &g->nodes[n], ins, outs, NULL) < 0);
    be->ops->release(be, &g->nodes[n]); /* nothing prepared: a no-op */
    CHECK(be->ops->supports(be, g, &g->nodes[n]));
    CHECK(be->ops->prepare(be, g, &g->nodes[n]) == FFU_OK);
    size_t sb = be->ops->scratch_bytes(be, g, &g->nodes[n]);
    void *scratch = sb ? malloc(sb) : NULL;
    for (int i = 0; i < 15; i++) in[i] = (float)i - 7;
    CHECK(be->ops->run(be, g, &g->nodes[n], ins, outs, scratch) == FFU_OK);
    for (int i = 0; i < 15; i++) CHECK(out[i] == (in[i] > 0 ? in[i] : 0));
    free(scratch);
    be->ops->release(be, &g->nodes[n]);
    CHECK(g->nodes[n].priv == NULL);
    /* an op the backend never claims */
    int t2 = nn_graph_add_tensor(g, "z", FFU_DTYPE_I64, NULL);
    int n2 = nn_graph_add_node(g, NN_OP_SHAPE, "sh", &a, 1, &t2, 1);
    CHECK(!be->ops->supports(be, g, &g->nodes[n2]));
    nn_graph_destroy(g);
    be->ops->destroy(be);
}

/* The device path of the table (run_on_device) proven here: the ref kernels behind a
 * backend that declares a device space but keeps its memory in malloc. Every case must
 * be claimed and equal ref exactly (the device harness adds no error of its own). */
static int hd_supports(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    const nn_op_def *d = nn_op_get(n->op);
    return d && d->run;
}
static ffu_status hd_prepare(nn_backend *b, nn_graph *g, nn_node *n) { return FFU_OK; }
static size_t hd_scratch(nn_backend *b, const nn_graph *g, const nn_node *n)
{
    const nn_op_def *d = nn_op_get(n->op);
    return d->scratch_bytes ? d->scratch_bytes(g, n) : 0;
}
static ffu_status hd_run(nn_backend *b, const nn_graph *g, const nn_node *n, void *const *in,
                         void *const *out, void *scratch)
{
    return nn_op_get(n->op)->run(g, n, in, out, scratch);
}
static void hd_release(nn_backend *b, nn_node *n) { n->priv = NULL; }
static void hd_destroy(nn_backend *b) { free(b); }
static ffu_status hd_alloc(nn_backend *b, size_t bytes, void **p)
{
    *p = malloc(bytes);
    return *p ? FFU_OK : FFU_ERR_NOMEM;
}
static void hd_free(nn_backend *b, void *p) { free(p); }
static ffu_status hd_copy(nn_backend *b, void *dst, int ds, const void *src, int ss, size_t bytes)
{
    memcpy(dst, src, bytes);
    return FFU_OK;
}
static ffu_status hd_sync(nn_backend *b) { return FFU_OK; }
static const nn_backend_ops hd_ops = {
    .name = "hostdev", .supports = hd_supports, .prepare = hd_prepare,
    .scratch_bytes = hd_scratch, .run = hd_run, .release = hd_release, .destroy = hd_destroy,
    .mem_alloc = hd_alloc, .mem_free = hd_free, .copy = hd_copy, .sync = hd_sync,
};

static void test_op_table_device_harness(void)
{
    nn_backend *be = calloc(1, sizeof *be);
    CHECK(be);
    be->ops = &hd_ops;
    be->threads = 1;
    be->space = NN_SPACE_DEVICE;
    int oks = 0, fails = op_table(be, &oks);
    be->ops->destroy(be);
    CHECK_EQ_INT(fails, 0);
    CHECK_EQ_INT(oks, (int)(sizeof cases / sizeof cases[0]));
}

TEST_MAIN(test_op_table, test_op_table_cuda, test_op_table_cuda_fp16, test_op_table_device_harness, test_channels_last_chain, test_wino_block, test_contract)
