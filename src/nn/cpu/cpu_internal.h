/* Private to the oneDNN `cpu` backend (src/nn/cpu/): what a prepared node holds and
 * the helpers the op builders share.
 *
 * A node is prepared into a short list of steps, each one oneDNN primitive with its
 * argument list. An argument's memory object is bound at run time to a node input,
 * a node output, a region of the session's scratch area, or memory the node owns
 * (weights reordered once at prepare). Running a node is then: point each memory
 * object at its buffer, execute the steps in order. Our code allocates nothing at run
 * time; libdnnl itself does, transiently, inside every dnnl_primitive_execute (its
 * argument map, per-call std::function and std::vector objects), which no public
 * oneDNN call avoids (docs/NN_CPU.md "Allocation per run", tests/unit/test_nn_noalloc.c).
 *
 * The same builder code answers supports() ("dry" mode: build and check the primitive
 * descriptor, create nothing) and prepare() (create primitives, reorder weights), so
 * the two can never disagree. */
#ifndef FFU_NN_CPU_INTERNAL_H
#define FFU_NN_CPU_INTERNAL_H

#include <oneapi/dnnl/dnnl.h>

#include "../backend.h"

#define CPU_MAX_ARGS 16
#define CPU_MAX_STEPS 6

/* Where a primitive argument's data lives at run time. */
typedef enum cpu_bind {
    CPU_BIND_FIXED = 0, /* set once at prepare (owned or constant data) */
    CPU_BIND_IN,        /* node input `index` */
    CPU_BIND_OUT,       /* node output `index` */
    CPU_BIND_SCRATCH,   /* scratch + offset */
} cpu_bind;

typedef struct cpu_arg {
    int arg;            /* DNNL_ARG_* */
    dnnl_memory_t mem;  /* owned by the step */
    cpu_bind bind;
    int index;
    size_t offset;
    void *fixed;        /* CPU_BIND_FIXED data of a kernel step */
} cpu_arg;

/* A step that runs one of our own kernels instead of a oneDNN primitive: called on
 * every thread of the backend with the step's arguments resolved to pointers (in the
 * order they were added); ithr / nthr say which share of the work is this call's. */
typedef void (*cpu_kernel_fn)(const void *kdata, void *const *ptr, int ithr, int nthr);

typedef struct cpu_step {
    dnnl_primitive_t prim; /* NULL for a kernel step */
    cpu_kernel_fn kern;
    const void *kdata;     /* the kernel's parameters (owned by the node) */
    int skip_same;         /* a copy step that is skipped when source and destination are
                              the same buffer (the planner put them in place) */
    int nargs;
    cpu_arg a[CPU_MAX_ARGS];
    dnnl_exec_arg_t ex[CPU_MAX_ARGS];
} cpu_step;

/* node->priv of a node the cpu backend prepared. */
typedef struct cpu_node {
    int nsteps;
    cpu_step steps[CPU_MAX_STEPS];
    size_t scratch_bytes; /* what the steps' scratchpads and staging buffers need */
    char impl[48]; /* implementation name of the main primitive (for describe/debug) */
    int nreorders; /* steps that convert between NCHW and channels-last (for describe) */
    /* our kernel (NN_CPU_K_*) and its data, when the node is that one kernel step reading
     * its input and writing its output where they are stored (a band pipeline can take
     * it over) */
    int kkind;
    const void *kdata;
    struct nn_cpu_chain *chain; /* the band pipeline the node is member chain_pos of */
    int chain_pos;
    struct nn_cpu_strips *strips; /* the thread strips the node is member strips_pos of */
    int strips_pos;
    int view; /* a copy of input 0's bytes: the plan may make the output a view (nn_node) */
} cpu_node;

/* Our kernels a band pipeline can run (cpu_chain.c). */
enum { NN_CPU_K_NONE = 0, NN_CPU_K_PW, NN_CPU_K_DW, NN_CPU_K_CF, NN_CPU_K_POOL };
/* Members a band pipeline may have. */
#define NN_CPU_CHAIN_MAX 40

typedef struct cpu_backend {
    nn_backend base;
    dnnl_engine_t eng;
    dnnl_stream_t stream;
    /* Activation layouts of the graph being prepared (see layout_plan in
     * cpu_backend.c): lay[t] = 1 when tensor t is stored channels-last (NHWC) because
     * only this backend's nodes write and read it, 2 when it is stored nChw16c because
     * only Winograd convolutions and max pools write and read it (docs/NN_CPU.md
     * "Winograd"). Valid while lay_g is that graph. */
    const nn_graph *lay_g;
    int lay_nt;
    unsigned char *lay;
    /* Band pipelines of that graph (nn_cpu_chain_plan), NULL when there are none: for
     * node i, the first and the last member of its pipeline and the member after it
     * (-1: none; chain_last owns the one allocation of all three). */
    int *chain_last, *chain_first, *chain_next;
    /* Thread strips of that graph (nn_cpu_strips_plan), NULL when there are none: for
     * node i, the last node of its run of candidates (-1: none). */
    int *strip_last;
    int bands;       /* band pipelines and thread strips allowed (NN_CPU_BANDS) */
    int split_small; /* small plans on all threads too (NN_CPU_SPLIT_SMALL) */
} cpu_backend;

/* The threads the planned graph's nodes run on (graph_threads in cpu_backend.c). */
static inline int nn_cpu_run_threads(const cpu_backend *cb)
{
    int t = cb->base.plan_threads > 0 ? cb->base.plan_threads : cb->base.threads;
    return t > 1 ? t : 1;
}

/* The context of one build: dry (p == NULL) checks only. */
typedef struct cpu_ctx {
    cpu_backend *cb;
    const nn_graph *g;
    const nn_node *n;
    cpu_node *p;
    size_t scratch_off; /* next free byte of the node's own staging area (after dnnl's) */
    int plain;          /* 1: every activation is plain (supports() and layout checks) */
} cpu_ctx;

/* One builder per op: FFU_OK when the node can run exactly (and, unless dry, has been
 * prepared into ctx->p); FFU_ERR_UNSUPPORTED when it cannot. */
typedef ffu_status (*cpu_build_fn)(cpu_ctx *c);

ffu_status nn_cpu_build_conv(cpu_ctx *c);
ffu_status nn_cpu_build_conv_transpose(cpu_ctx *c);
ffu_status nn_cpu_build_gemm(cpu_ctx *c);
ffu_status nn_cpu_build_matmul(cpu_ctx *c);
ffu_status nn_cpu_build_einsum(cpu_ctx *c);
ffu_status nn_cpu_build_pool(cpu_ctx *c);
ffu_status nn_cpu_build_global_pool(cpu_ctx *c);
ffu_status nn_cpu_build_eltwise(cpu_ctx *c);
ffu_status nn_cpu_build_binary(cpu_ctx *c);
ffu_status nn_cpu_build_concat(cpu_ctx *c);
ffu_status nn_cpu_build_softmax(cpu_ctx *c);
ffu_status nn_cpu_build_resize(cpu_ctx *c);
ffu_status nn_cpu_build_batch_norm(cpu_ctx *c);
ffu_status nn_cpu_build_prelu(cpu_ctx *c);
ffu_status nn_cpu_build_lrn(cpu_ctx *c);
ffu_status nn_cpu_build_reduce(cpu_ctx *c);
ffu_status nn_cpu_build_transpose(cpu_ctx *c);
ffu_status nn_cpu_build_pad(cpu_ctx *c);
ffu_status nn_cpu_build_split(cpu_ctx *c);
ffu_status nn_cpu_build_qsteps(cpu_ctx *c);

/* ---- our own kernels ------------------------------------------------------------------ */

/* A convolution's fused activation as our kernels apply it: y < 0 ? y * ns[c] : y when
 * neg (Leaky ReLU, PReLU; ns per channel), then min(max(y, lo), hi) when clamp (ReLU,
 * ReLU6, Clip). */
typedef struct nn_cpu_act {
    int neg, clamp;
    float lo, hi;
} nn_cpu_act;

/* A Conv with a fused scale (input 4, src/nn/ir.h) on our depthwise, 1x1 and
 * first-layer kernels: the kernel computes bare sums (its own bias zero, no
 * activation) a few rows or pixels at a time, and nn_cpu_scale_avx512 finishes them in
 * place while they are in cache.
 * The scale is the kernel step's last argument. */
typedef struct nn_cpu_scaled {
    int64_t C;
    nn_cpu_act act;
    float *b, *ns; /* the node's bias and slopes, [C rounded up to 16], 64-byte aligned;
                      b NULL: the kernel's node has no fused scale */
} nn_cpu_scaled;

/* n pixels of C sums at y (NHWC), in place: y = act(y * s + b), a product then a sum
 * (two roundings, as the unfused Mul and Add: never one fma). */
void nn_cpu_scale_avx512(const nn_cpu_scaled *e, float s, float *y, int64_t n);

/* Depthwise 2-D convolution, NHWC f32 (cpu_dw_avx512.c). Weights are repacked as
 * [KH][KW][Cp] and bias (zeros when absent) and slopes as [Cp], Cp = C rounded up to
 * 16, zero padded, 64-byte aligned. For C = 16n + 8 with a 3-wide stride-1 kernel, also
 * as pixel pairs: w2 [KH][KW][2C], b2 and ns2 [2C], each channel row stored twice over
 * (NULL otherwise). */
typedef struct nn_cpu_dw {
    int64_t N, C, Cp, IH, IW, OH, OW;
    int KH, KW, SH, SW, PT, PL;
    nn_cpu_act act;
    int res;  /* a residual is the kernel step's third argument */
    int pool; /* a fused 2x2 stride-2 max pool follows (output rows are pooled rows) */
    nn_cpu_scaled sc; /* a fused scale: see nn_cpu_scaled */
    float *w, *b, *ns;
    float *w2, *b2, *ns2;
} nn_cpu_dw;

/* Output rows [row0, row1) of the N * OH rows (N * (OH / 2) pooled rows with pool);
 * res (may be NULL, never with pool) is added before the activation and has dst's
 * shape (it may be dst itself); tmp holds two convolution rows (2 * OW * C floats)
 * when pooling. */
void nn_cpu_dw_rows_avx512(const nn_cpu_dw *d, const float *src, const float *res, float *dst,
                           int64_t row0, int64_t row1, float *tmp);

/* Kernel heights the depthwise kernel takes (the builder's KH x KW <= 64). */
#define NN_CPU_DW_MAX_KH 64

/* One output row of one image from input rows held anywhere (the band pipeline's rings,
 * cpu_chain.c): rows[k] is input row oh * SH - PT + k, NULL where that row is padding,
 * for k < KH; with pool, dst is pooled row ph, oh = 2 * ph, and rows has KH + SH
 * entries (the second conv row's start at rows + SH), tmp two conv rows. No residual. */
void nn_cpu_dw_ring_row_avx512(const nn_cpu_dw *d, const float *const *rows, float *dst,
                               float *tmp);

/* 1x1 convolution (stride 1, one group) into at most 64 channels, NHWC f32
 * (cpu_pw_avx512.c): y[p] = act(b + res[p] + sum over c of x[p][c] * w[c]) for the P
 * pixels. Weights are repacked as [Ci][Cop], bias and slopes as [Cop], Cop = Co
 * rounded up to 16, zero padded (for 24 outputs 48: each row stored twice over),
 * 64-byte aligned. */
typedef struct nn_cpu_pw {
    int64_t P, Ci, Co, Cop;
    int wide; /* planar rows: up to 24 outputs a group on one vector of pixels (on cores
                 that run a 512-bit FMA as two halves, ffu_cpu_fma512_halves) */
    nn_cpu_act act;
    int res;          /* a residual is the kernel step's third argument */
    nn_cpu_scaled sc; /* a fused scale: see nn_cpu_scaled */
    float *w, *b, *ns;
} nn_cpu_pw;

/* 1 when our 1x1 kernel takes M outputs: at most 64, or a multiple of 64 up to 512
 * (64 at a time). */
static inline int nn_cpu_pw_outputs(int64_t M) { return M <= 64 || (M % 64 == 0 && M <= 512); }

/* Pixels [p0, p1); res (may be NULL) has dst's shape and may be dst itself. */
void nn_cpu_pw_pixels_avx512(const nn_cpu_pw *d, const float *src, const float *res, float *dst,
                             int64_t p0, int64_t p1);

/* A 2x2 stride-2 max pool without padding on channels-last f32 (cpu_dw_avx512.c): output
 * rows [r0, r1) of the N * OH rows. */
typedef struct nn_cpu_pool2 {
    int64_t N, C, IH, IW, OH, OW;
} nn_cpu_pool2;
void nn_cpu_pool2_rows_avx512(const nn_cpu_pool2 *d, const float *x, float *y, int64_t r0,
                              int64_t r1);
/* One output row of a nearest-neighbour integer upscale plus an addend, channels-last
 * f32 (cpu_misc.c, build_upadd): y[ow] = x[ow / kw] + r[ow], C channels a pixel. */
void nn_cpu_upadd_row_avx512(const float *x, const float *r, float *y, int64_t OW, int64_t C,
                             int64_t kw);
/* Softmax over a non-innermost axis (cpu_softmax_avx512.c): inner positions [i0, i1) of
 * one outer slice of [len][inner] values; y may be x. */
void nn_cpu_softmax_inner_avx512(const float *x, float *y, int64_t len, int64_t inner,
                                 int64_t i0, int64_t i1);
/* 1 when a pooling window (spatial dims at [1] and [2]) is the one this kernel runs:
 * 2x2, stride 2, no padding or dilation (cpu_misc.c). */
struct nn_window;
int nn_cpu_pool2_window(const struct nn_window *win);
/* One output row of it from input rows a and b (2 PW pixels of C channels each). */
void nn_cpu_pool2_row_avx512(const float *a, const float *b, float *y, int64_t PW, int64_t C);

/* Planar rows (cpu_planar_avx512.c) for the band pipelines' rings: a row of W pixels
 * (W a multiple of 16) and C channels as C planes of W + 2 * NN_CPU_PLANAR_MARGIN floats,
 * plane c's values after its margin; the margins are zero where a depthwise layer reads
 * the row (nn_cpu_planar_margins). Rows are 64-byte aligned. */
#define NN_CPU_PLANAR_MARGIN 16
/* The 1x1 layer d over one planar row (res: a planar row to add, or NULL). */
void nn_cpu_pw_planar_avx512(const nn_cpu_pw *d, const float *src, const float *res, float *dst,
                             int64_t W);
/* One output row of the depthwise layer d (3x3, stride 1, one column of padding either
 * side, no pool), rows[k] as in nn_cpu_dw_ring_row_avx512 but planar. */
void nn_cpu_dw_planar_avx512(const nn_cpu_dw *d, const float *const *rows, float *dst);
/* The same at stride 2 (3x3, 2 OW input columns, PL 0 or 1, no pool). */
void nn_cpu_dw2_planar_avx512(const nn_cpu_dw *d, const float *const *rows, float *dst);
/* The 2x2 stride-2 max pool of planar rows a and b (2 OW pixels) into OW pixels. */
void nn_cpu_pool2_planar_avx512(const float *a, const float *b, int64_t C, int64_t OW, float *dst);
/* A row between channels-last (C values per pixel) and planar. */
void nn_cpu_planar_from_nhwc_avx512(const float *src, int64_t C, int64_t W, float *dst);
void nn_cpu_planar_to_nhwc_avx512(const float *src, int64_t C, int64_t W, float *dst);
/* Zeroes a planar row's margins. */
void nn_cpu_planar_margins(float *row, int64_t C, int64_t W);

/* A first layer (cpu_cf_avx512.c): an f32 input with few channels (C <= 4), plain NCHW
 * or (C == 3) stored NHWC, into K <= 32 or K == 64 channels written NHWC, any KH x KW <=
 * 7x7, SW 1 or 2 (SH any), pads, no dilation, one group; with pool, a fused 2x2
 * stride-2 max pool follows (OH, OW are the convolution's). */
typedef struct nn_cpu_cf {
    int64_t N, C, K, Kp, IH, IW, OH, OW;
    int KH, KW, SH, SW, PT, PL;
    int nhwc, pool;
    nn_cpu_act act;
    nn_cpu_scaled sc;  /* a fused scale: see nn_cpu_scaled */
    float *w, *b, *ns; /* w [KH][KW][C][Kp], b and ns [Kp], Kp = K rounded up to 16, zero
                          padded, 64-byte aligned */
} nn_cpu_cf;

/* Output row oh of one image: src is that image (C x IH x IW floats, as stored), dst the
 * row's OW x K floats (NHWC). */
void nn_cpu_cf_row_avx512(const nn_cpu_cf *d, const float *src, float *dst, int64_t oh);
/* Pooled row ph (of OH / 2, OW / 2 pixels): convolution rows 2 ph and 2 ph + 1 into tmp
 * (2 x OW x K floats), then their 2x2 maxima into dst. */
void nn_cpu_cf_pooled_row_avx512(const nn_cpu_cf *d, const float *src, float *dst, int64_t ph,
                                 float *tmp);

/* The first layer over planar rows (cpu_planar_avx512.c), for a band pipeline's head:
 * an NHWC image of 3 channels, SW 1 or 2, no pool, into 17-24 outputs, OW a multiple of
 * 16. Each input row is first split into SW * 3 phase rows of NN_CPU_CF_PLANAR_L floats
 * (a slot of NN_CPU_CF_PLANAR_SLOT floats; NN_CPU_CF_PLANAR_PAD floats of scratch for
 * the row's ends); an output row then reads the slots of its KH input rows (NULL for
 * rows of padding). */
#define NN_CPU_CF_PLANAR_L(d) (((d)->OW + ((d)->KW - 1) / (d)->SW + 15) / 16 * 16)
#define NN_CPU_CF_PLANAR_SLOT(d) ((d)->SW * 3 * NN_CPU_CF_PLANAR_L(d))
#define NN_CPU_CF_PLANAR_PAD 96
void nn_cpu_cf_planar_prep_avx512(const nn_cpu_cf *d, const float *x, float *slot, float *pad);
void nn_cpu_cf_planar_row_avx512(const nn_cpu_cf *d, const float *const *slots, float *dst);

/* Convolution with weights rebuilt from 8-bit codes (cpu_q8_avx512.c), NHWC f32, K a
 * multiple of 16, no dilation: w = ((float)q * scale + min) * mul[k], each operation
 * rounded as the TF.js loader and the per-channel fold rounded it (tfjs_load.c,
 * rewrite.c), so the weights are the f32 ones bit for bit. Codes are stored [Kp / 32]
 * [KH][KW][C][32], Kp = K rounded up to 32 (zero codes and factors beyond K); mul, b
 * and ns [Kp], 64-byte aligned. Work is counted in output pixels (N * OH * OW); a
 * thread needs NN_CPU_Q8_SCRATCH(d) floats of scratch. */
typedef struct nn_cpu_q8 {
    int64_t N, C, K, Kp, IH, IW, OH, OW;
    int KH, KW, SH, SW, PT, PL;
    nn_cpu_act act;
    int res; /* a residual is the kernel step's third argument */
    float scale, min;
    const uint8_t *q;
    float *mul, *b, *ns;
} nn_cpu_q8;

#define NN_CPU_Q8_PIXELS 12
#define NN_CPU_Q8_BLOCKS 4
#define NN_CPU_Q8_CHUNK 128 /* weight rows rebuilt at a time: 16 KB, in L1 */
#define NN_CPU_Q8_SCRATCH(d)                                                             \
    ((size_t)(d)->KH * (d)->KW * (size_t)(d)->C * NN_CPU_Q8_PIXELS * NN_CPU_Q8_BLOCKS + \
     32 * (NN_CPU_Q8_CHUNK + NN_CPU_Q8_PIXELS * NN_CPU_Q8_BLOCKS))

/* Output pixels [p0, p1); res (may be NULL) has dst's shape and may be dst itself. */
void nn_cpu_q8_pixels_avx512(const nn_cpu_q8 *d, const float *src, const float *res, float *dst,
                             int64_t p0, int64_t p1, float *scratch);
/* The codes q[n] of one output channel's n weights v (ONNX order) and its factor: each
 * v[i] is ((float)q[i] * scale + min) * mul bit for bit as the kernel rebuilds it, the
 * loader's and the fold's own roundings (u[256] holds the first two, as the loader
 * rounded them). The factor is one the largest weight implies
 * with some code (v / u[c], and its two f32 neighbours each side). The code tried first
 * is the one a step estimate gives (the smallest gap between v[0] and another weight,
 * usually one code: weights near a typical one are dense), then all codes. 0 when no
 * factor rebuilds every weight (another kind of fold, or no codes). */
int nn_cpu_q8_channel_avx512(const float *v, int64_t n, const float *u, float scale, float min,
                             float *mul, uint8_t *q);

/* A convolution whose window is its whole input (one output pixel per image: a model's
 * head on its last feature map), or a Gemm (each row an image), with weights that f16
 * holds exactly (the TF.js models that ship f16 weights): w halves in blocks of 64
 * outputs (the last one 16-64 wide), each [KK][width] from w + o0 * KK, KK = KH * KW * C
 * in the NHWC input's order (a Gemm's K), Mp = M rounded up to 16 (zeros); b and ns
 * [Mp] (cpu_h16_avx512.c). Such a layer reads each weight once per image, so it runs at
 * the speed its weights stream in. */
typedef struct nn_cpu_h16 {
    int64_t N, KK, M, Mp;
    nn_cpu_act act;
    const uint16_t *w;
    float *b, *ns;
} nn_cpu_h16;

/* Images [n0, n1): src KK floats each, dst M floats each. */
void nn_cpu_h16_heads_avx512(const nn_cpu_h16 *d, const float *src, float *dst, int64_t n0,
                             int64_t n1);

/* Winograd F(m x m, 3x3) convolution, m = 2, 4 or 6, stride 1, NHWC f32, C and K
 * multiples of 16 (cpu_wino_avx512.c). OH, OW are the convolution's output; with pool
 * the stored output is its 2x2 max pool (OH / 2, OW / 2). U holds the transformed
 * weights [P][C][K], P = (m + 2)^2 points (nn_cpu_wino_weights), b and ns [K], 64-byte
 * aligned; bt and at the input and output transforms of F(6, 3). Work is counted in
 * m x m output tiles, TY x TX per image, N * TY * TX in all, done in blocks of tb
 * tiles; a thread needs NN_CPU_WINO_SCRATCH(d) floats of scratch. */
typedef struct nn_cpu_wino {
    int64_t N, C, K, IH, IW, OH, OW, TY, TX;
    int PT, PL;
    int m; /* output tile side: 2, 4 or 6 */
    nn_cpu_act act;
    int res;  /* a residual is the kernel step's third argument (never with pool) */
    int pool; /* a fused 2x2 stride-2 max pool follows the activation */
    int tb;   /* tiles per block (nn_cpu_wino_block), a multiple of 12 */
    float *U, *b, *ns;
    float bt[8][8], at[6][8];
} nn_cpu_wino;

#define NN_CPU_WINO_POINTS(d) ((int64_t)((d)->m + 2) * ((d)->m + 2))
#define NN_CPU_WINO_SCRATCH(d) \
    ((size_t)NN_CPU_WINO_POINTS(d) * (size_t)(d)->tb * (size_t)((d)->C + (d)->K))

/* Tiles per block for `threads` threads: 12, or where U outgrows the L2 cache, up to a
 * thread's share of the tiles in one block (cpu_dense.c). */
int nn_cpu_wino_block(const nn_cpu_wino *d, int threads);
/* U from ONNX weights [K][C][3][3], and for m = 6 the transforms bt, at. */
void nn_cpu_wino_weights(nn_cpu_wino *d, const float *w);
/* Tiles [t0, t1); res (may be NULL) has the convolution output's shape and may be dst. */
void nn_cpu_wino_tiles_avx512(const nn_cpu_wino *d, const float *src, const float *res,
                              float *dst, int64_t t0, int64_t t1, float *scratch);

/* ffu.DynamicQuantizeSteps' loops (cpu_quant_avx512.c, quant_math.h's qm_minmax and
 * qm_steps): folds x[0, n) into the range [*mn, *mx]; y[0, n) = x's u8 codes minus the
 * zero point, as f32. */
void nn_cpu_qsteps_range_avx512(const float *x, int64_t n, float *mn, float *mx);
void nn_cpu_qsteps_avx512(const float *x, int64_t n, float scale, float zp, float *y);

/* Adds a kernel step; its arguments are added with nn_cpu_step_arg (md NULL). Returns
 * NULL in dry mode or on failure (*st says). */
cpu_step *nn_cpu_add_kernel_step(cpu_ctx *c, cpu_kernel_fn fn, const void *kdata, ffu_status *st);

/* ---- profiling members one node runs (band pipelines, thread strips) ------------------- */

/* While the session profiles, each thread adds the seconds it spends on each member of
 * a band pipeline or thread strips (sec[t * n + k]); the session's time of the member
 * that ran them all is then split among the members in those proportions
 * (nn_cpu_split_apply, for the backend's profile callback). Waits at barriers are in
 * no member's share. */
typedef struct nn_cpu_split {
    int n, nthr;
    double *sec;          /* [nthr][n] */
    const nn_node **node; /* [n]: the members, the last one running them all */
} nn_cpu_split;

ffu_status nn_cpu_split_init(nn_cpu_split *sp, int n, int nthr);
void nn_cpu_split_free(nn_cpu_split *sp);
/* The splits of a pipeline and of strips (cpu_chain.c, cpu_strips.c). */
nn_cpu_split *nn_cpu_chain_split(struct nn_cpu_chain *ch);
nn_cpu_split *nn_cpu_strips_split(struct nn_cpu_strips *sg);

/* ---- band pipelines (cpu_chain.c, docs/NN_CPU.md "Band pipelines") --------------------- */

/* Chooses the pipelines of graph g (after its layouts): runs of Conv nodes that our 1x1
 * and depthwise kernels can run, each the only reader of the one before, perhaps headed
 * by a first layer on our kernel for it. */
ffu_status nn_cpu_chain_plan(cpu_backend *cb, const nn_graph *g, int me);
/* 1 when c's node is planned into a pipeline (its builder then prefers our kernels). */
int nn_cpu_chain_member(const cpu_ctx *c);
/* At the prepare of a pipeline's last member (c->p built): takes the members' kernels
 * into a pipeline when every one of them runs ours (and tells the planner that the
 * input lives through the last member and the values between members need no memory),
 * else leaves them to run alone. */
ffu_status nn_cpu_chain_finish(cpu_ctx *c, nn_graph *g);
/* Frees what a member owns of its pipeline (the last one owns it). */
void nn_cpu_chain_release(cpu_node *p);
/* A member's run: records its buffers; the last member runs the pipeline (timing each
 * member's rows when prof). */
ffu_status nn_cpu_chain_run(cpu_node *p, void *const *in, void *const *out, void *scratch,
                            int prof);

/* ---- thread strips (cpu_strips.c, docs/NN_CPU.md "Thread strips") ---------------------- */

/* Finds the runs of convolutions that may run as thread strips (after the layouts and
 * the band pipelines are planned; none on one thread). */
ffu_status nn_cpu_strips_plan(cpu_backend *cb, const nn_graph *g, int me);
/* 1 when the prepared node c->n ends a run of candidates. */
int nn_cpu_strips_last(const cpu_ctx *c);
/* After the last candidate of a run is prepared: makes its members' strips (or leaves
 * them to run one by one where they cannot be cut). */
ffu_status nn_cpu_strips_finish(cpu_ctx *c, nn_graph *g);
/* Frees the strips with their last member. */
void nn_cpu_strips_release(cpu_node *p);
/* A member's run: records its buffers; the last member runs every member (timing each
 * when prof). */
ffu_status nn_cpu_strips_run(cpu_node *p, void *const *in, void *const *out, void *scratch,
                             int prof);

/* ---- helpers (cpu_backend.c) ---------------------------------------------------------- */

#define CPU_UNSUPPORTED FFU_ERR_UNSUPPORTED

/* 1 when tensor t is stored channels-last (N, spatial..., C) or blocked in this plan. */
int nn_cpu_layout(const cpu_ctx *c, int t);
/* 1 when tensor t is stored nChw16c (4-D, channels a multiple of 16) in this plan: only
 * the Conv and MaxPool builders meet such tensors (layout_plan). */
int nn_cpu_blocked(const cpu_ctx *c, int t);
/* 1 when tensor t is stored NHWC byte for byte in this plan (channels-last, or nChw16c
 * with 16 channels): our NHWC kernels read and write it as it is. */
int nn_cpu_stored_nhwc(const cpu_ctx *c, int t);
/* 1 when Conv node n has the shape that runs oneDNN's Winograd where its check passes
 * (ours, build_wino_custom, has its own rule): 3x3, stride 1, undilated, ungrouped,
 * >= 16 input channels, >= 32x32 output, no fused pool. */
int nn_cpu_wino_shape(const nn_graph *g, const nn_node *n);
/* Descriptor of tensor t as it is stored (plain, channels-last or blocked). */
int nn_cpu_md_tensor(const cpu_ctx *c, int t, dnnl_memory_desc_t *md);
/* Channels-last descriptor of an f32 tensor of rank 3..5. */
int nn_cpu_md_cl(dnnl_memory_desc_t *md, const nn_shape *s);
/* A reorder from one binding to another as a new step. */
ffu_status nn_cpu_reorder_step(cpu_ctx *c, const dnnl_memory_desc_t *from, cpu_bind fb,
                               size_t foff, const dnnl_memory_desc_t *to, cpu_bind tb,
                               size_t toff);
/* The same, counted as a layout conversion of the node (describe's "reorders"). */
ffu_status nn_cpu_stage_step(cpu_ctx *c, const dnnl_memory_desc_t *from, cpu_bind fb,
                             size_t foff, const dnnl_memory_desc_t *to, cpu_bind tb, size_t toff);
/* A reorder from node input `index` (laid out as from) to (tb, toff) as a new step;
 * with skip_same the step does nothing when both are one buffer at run time (an
 * output the planner put in place of the input, in the same layout). */
ffu_status nn_cpu_copy_in_step(cpu_ctx *c, int index, const dnnl_memory_desc_t *from,
                               const dnnl_memory_desc_t *to, cpu_bind tb, size_t toff,
                               int skip_same);
/* Plain (dense, row-major) descriptor of a tensor's shape; rank 0 becomes {1}. */
int nn_cpu_md_plain(dnnl_memory_desc_t *md, const nn_shape *s, dnnl_data_type_t dt);
/* The same for explicit dims. */
int nn_cpu_md_dims(dnnl_memory_desc_t *md, int rank, const int64_t *dims, dnnl_data_type_t dt);
/* A primitive attribute with the user scratchpad mode (and bf16 fpmath when allowed). */
dnnl_primitive_attr_t nn_cpu_attr(cpu_ctx *c, int allow_bf16);
/* Creates the primitive descriptor of desc for the node, with its fused activation
 * (and a residual sum when with_sum) as post-ops where oneDNN has a JIT kernel for
 * that; otherwise without the activation and *split = 1: the caller then adds
 * nn_cpu_act_step after its main step. CPU_UNSUPPORTED when neither works. */
ffu_status nn_cpu_pd_with_act(cpu_ctx *c, const void *desc, int allow_bf16, int with_sum,
                              dnnl_primitive_desc_t *pd, int *split);
/* A binary post-op ahead of the others: alg with a second operand described by md
 * (bound as DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1 for the i-th). */
typedef struct cpu_binary_po {
    dnnl_alg_kind_t alg;
    dnnl_memory_desc_t md;
} cpu_binary_po;
/* nn_cpu_pd_with_act with the nbin binary post-ops of bin first (a fused scale and
 * bias, ir.h). With them the primitive must keep its post-ops: it is returned even on
 * oneDNN's reference kernel when nothing else takes them. */
ffu_status nn_cpu_pd_with_post(cpu_ctx *c, const void *desc, const cpu_binary_po *bin, int nbin,
                               int with_sum, dnnl_primitive_desc_t *pd, int *split);
/* The constant PReLU slopes of the node's activation, or NULL when they are not
 * usable (numel must be 1 or the channel count). */
const nn_tensor *nn_cpu_act_slopes(const cpu_ctx *c, int64_t channels);
/* Adds the node's activation as an in-place step on the data bound as (bind, off):
 * output 0 or a scratch staging buffer, laid out as md. */
ffu_status nn_cpu_act_step(cpu_ctx *c, const dnnl_memory_desc_t *md, int64_t channels,
                           cpu_bind bind, size_t off);
/* Creates the primitive of pd as a new step (takes ownership of pd in every case; in
 * dry mode only destroys it). Returns the step or NULL (dry or failure: *st says). */
cpu_step *nn_cpu_add_step(cpu_ctx *c, dnnl_primitive_desc_t pd, ffu_status *st);
/* Adds an argument to a step with the descriptor md (NULL: the one the primitive
 * expects for arg), bound as given. */
ffu_status nn_cpu_step_arg(cpu_ctx *c, cpu_step *s, int arg, const dnnl_memory_desc_t *md,
                           cpu_bind bind, int index, size_t offset, void *fixed);
/* Reserves staging bytes in the scratch area; returns the offset. */
size_t nn_cpu_scratch(cpu_ctx *c, size_t bytes);
/* Converts data at src (descriptor from) into a new owned buffer laid out as `to`
 * (a one-off reorder at prepare). Returns the buffer or NULL. */
void *nn_cpu_reorder_owned(cpu_ctx *c, const dnnl_memory_desc_t *from, const void *src,
                           const dnnl_memory_desc_t *to, ffu_status *st);
/* 64-byte aligned memory that lives as long as the plan (the plan graph's arena);
 * NULL on failure and in a dry check (c->p NULL). */
void *nn_cpu_own(cpu_ctx *c, size_t bytes);
/* Records the implementation name of pd in the node (for describe). */
void nn_cpu_note_impl(cpu_ctx *c, const_dnnl_primitive_desc_t pd);

/* ---- bf16 (docs/NN_CPU.md "bf16") ------------------------------------------------------- */

/* The NMSE a node's bf16 variant may have against its f32 primitive. */
#define NN_CPU_BF16_NMSE 1e-5
/* The NMSE a node's Winograd variant may have against its direct primitive: f32
 * Winograd measured 1e-13 on real layers, the direct kernels' own rounding ~1e-14;
 * 1e-10 rejects a transform that amplifies rounding while staying 5 orders of
 * magnitude below bf16's bound. */
#define NN_CPU_WINO_NMSE 1e-10
/* 1 when pd's kernel is oneDNN's reference loop (its implementation name says so). */
int nn_cpu_pd_is_ref(const_dnnl_primitive_desc_t pd);
/* 1 when pd's kernel is a Winograd one (its implementation name says so). */
int nn_cpu_pd_is_winograd(const_dnnl_primitive_desc_t pd);
/* Marks the node's impl name "bf16 ..." (describe counts those, backend.h). */
void nn_cpu_note_bf16(cpu_ctx *c);
/* 1 when pd's kernel computes in bf16 (its implementation name says so). */
int nn_cpu_pd_is_bf16(const_dnnl_primitive_desc_t pd);
/* The accuracy checks' input: n floats uniform in [lo, hi) from a fixed seed, the same
 * on every run and machine. */
void nn_cpu_check_input(float *x, size_t n, double lo, double hi);
/* Runs p32 (f32, direct) and pv (a variant of the same op: bf16 source and weights, or
 * another algorithm such as Winograd, possibly in other src/dst layouts) once at
 * prepare on a fixed-seed input in [-1, 1) with the node's weights (wdata laid out as
 * wei_user, f32) and bias (f32 or NULL); returns the NMSE of pv's output against p32's,
 * or -1 when the check could not run. */
double nn_cpu_variant_nmse(cpu_ctx *c, const_dnnl_primitive_desc_t p32,
                           const_dnnl_primitive_desc_t pv, const dnnl_memory_desc_t *wei_user,
                           const void *wdata, const void *bias);

/* Input i if present and f32 with a known shape, else NULL. */
const nn_tensor *nn_cpu_f32_in(const cpu_ctx *c, int i);
int nn_cpu_is_const(const nn_tensor *t);

#endif
