/* Synthetic ONNX models with the exact signatures of FaceFusion's swappers, enhancers,
 * occluder and ArcFace embedder (MODELS.md), so the swap module's loading checks and
 * pre/post-processing can be tested without the real weights, which we cannot ship.
 * Each model is a few elementwise ops whose output a test can compute on its own:
 *
 *   swapper    output = target * GAIN + reshape(source . W + BIAS, [1,3,1,1])
 *              (target and output in the convention's normalised space; W [D,3] and
 *              BIAS fixed per kind; the inswapper file also carries a real 512x512
 *              emap as its last initializer, unused by the graph like the real one)
 *   gfpgan     output = input * -1.25              (so some values leave [-1, 1])
 *   codeformer output = input * (1 - 2 float(weight))     (`weight` is a double)
 *   occluder   output = the G channel of the input  (NHWC [1,256,256,3] -> [1,256,256,1])
 *   embedder   output = mean over H, W of the input . WE + BE   ([1,3,112,112] -> [1,512])
 *
 * Header only, built on tests/fuzz/onnx_builder.h (protobuf-c's generated structs):
 * tools/make-swap-models/make_swap_models.c writes the files for people, and the unit
 * tests include this header and write them into a temporary folder at test time, so
 * no binary model is ever committed. Variants (sizes, names, dtypes, no emap) make the
 * malformed files the loaders must reject. */
#ifndef FFU_TOOLS_SWAP_MODELS_H
#define FFU_TOOLS_SWAP_MODELS_H

#include <math.h>
#include <stdio.h>

#include "../../tests/fuzz/onnx_builder.h"

enum { SM_INSWAPPER = 0, SM_HYPERSWAP, SM_SIMSWAP, SM_KIND_COUNT };

#define SM_EMBED_DIM 512
#define SM_EMAP_SEED 0x5eed0001u
#define SM_W_SEED 0x5eed0002u
#define SM_WE_SEED 0x5eed0003u
#define SM_BE_SEED 0x5eed0004u
#define SM_GFPGAN_GAIN (-1.25f)

/* Per kind: gain on the target, scale of W's entries, the colour bias. W's scale keeps
 * the colour term around +-0.5 for a unit source (inswapper: after the emap). */
static const struct {
    float gain, wscale, bias[3];
} sm_swapper_consts[SM_KIND_COUNT] = {
    {0.5f, 0.07f, {0, 0, 0}},          /* inswapper: 0..1 space */
    {0.5f, 1.5f, {0, 0, 0}},           /* hyperswap: [-1, 1] space */
    {0.2f, 0.6f, {0.5f, 0.5f, 0.5f}},  /* simswap: ImageNet-normalised in, 0..1 out */
};

static inline const char *sm_kind_name(int kind)
{
    return kind == SM_INSWAPPER ? "inswapper" : kind == SM_HYPERSWAP ? "hyperswap" : "simswap";
}

/* A fixed pseudo-random value in [-1, 1) for (seed, i): a 32-bit integer hash. */
static inline float sm_unit(uint32_t seed, uint32_t i)
{
    uint32_t x = i * 0x9e3779b1u ^ seed * 0x85ebca77u;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return (float)(x >> 8) / (float)(1u << 23) - 1.0f;
}

/* The inswapper-style emap, row-major [512,512]. */
static inline float sm_emap(int i, int j) { return sm_unit(SM_EMAP_SEED, (uint32_t)(i * 512 + j)); }

/* Swapper weight W[k][c] of a kind. */
static inline float sm_swapper_w(int kind, int k, int c)
{
    return sm_unit(SM_W_SEED + (uint32_t)kind, (uint32_t)(k * 3 + c)) *
           sm_swapper_consts[kind].wscale;
}

/* The colour term a swapper adds for a `source` input of dim values (model space). */
static inline void sm_swapper_colour(int kind, const float *source, int dim, float out[3])
{
    for (int c = 0; c < 3; c++) {
        double acc = sm_swapper_consts[kind].bias[c];
        for (int k = 0; k < dim; k++)
            acc += (double)source[k] * sm_swapper_w(kind, k, c);
        out[c] = (float)acc;
    }
}

/* Embedder weights WE [3,512] and bias BE [512]. */
static inline float sm_embed_w(int c, int j) { return sm_unit(SM_WE_SEED, (uint32_t)(c * 512 + j)); }
static inline float sm_embed_b(int j) { return 0.25f * sm_unit(SM_BE_SEED, (uint32_t)j); }

/* ---- swappers ----------------------------------------------------------------------- */

typedef struct sm_swapper_cfg {
    int kind;                 /* SM_INSWAPPER, SM_HYPERSWAP, SM_SIMSWAP */
    int size;                 /* target side; 0 = the kind's (128 or 256) */
    int source_dim;           /* 0 = 512 */
    const char *source_name;  /* NULL = "source" */
    const char *target_name;  /* NULL = "target" */
    int emap;                 /* -1 = the kind's (inswapper only), 0 = none, 1 = add one */
    int emap_cols;            /* 0 = 512 */
    int dynamic_batch;        /* 1: batch dims are symbolic, as many exported files have */
} sm_swapper_cfg;

static inline ob_model *sm_swapper(const sm_swapper_cfg *cfg)
{
    int kind = cfg->kind;
    int S = cfg->size ? cfg->size : kind == SM_INSWAPPER ? 128 : 256;
    int D = cfg->source_dim ? cfg->source_dim : SM_EMBED_DIM;
    const char *src = cfg->source_name ? cfg->source_name : "source";
    const char *tgt = cfg->target_name ? cfg->target_name : "target";
    int emap = cfg->emap < 0 ? kind == SM_INSWAPPER : cfg->emap;
    int ecols = cfg->emap_cols ? cfg->emap_cols : 512;
    int64_t B = cfg->dynamic_batch ? -1 : 1;
    ob_model *b = ob_new(13);
    int64_t td[] = {B, 3, S, S}, sd[] = {B, D}, wd[] = {D, 3}, bd[] = {3}, one[] = {1};
    ob_input(b, tgt, OB_F32, td, 4);
    ob_input(b, src, OB_F32, sd, 2);
    float *w = ob_alloc(b, (size_t)D * 3 * sizeof *w);
    for (int k = 0; k < D; k++)
        for (int c = 0; c < 3; c++)
            w[k * 3 + c] = sm_swapper_w(kind, k, c);
    float gain = sm_swapper_consts[kind].gain;
    int64_t shape[] = {1, 3, 1, 1};
    ob_initializer(b, ob_const_f32(b, "w", wd, 2, w, (size_t)D * 3));
    ob_initializer(b, ob_const_f32(b, "bias", bd, 1, sm_swapper_consts[kind].bias, 3));
    ob_initializer(b, ob_const_f32(b, "gain", one, 1, &gain, 1));
    ob_initializer(b, ob_const_i64(b, "shape", shape, 4));
    if (emap) { /* last, and used by no node: where FaceFusion looks for it */
        float *e = ob_alloc(b, (size_t)512 * ecols * sizeof *e);
        for (int i = 0; i < 512; i++)
            for (int j = 0; j < ecols; j++)
                e[i * ecols + j] = sm_emap(i, j);
        int64_t ed[] = {512, ecols};
        ob_initializer(b, ob_const_f32(b, "emap", ed, 2, e, (size_t)512 * ecols));
    }
    char in[64];
    snprintf(in, sizeof in, "%s,gain", tgt);
    ob_node(b, "Mul", "scale_target", in, "scaled");
    snprintf(in, sizeof in, "%s,w", src);
    ob_node(b, "MatMul", "colour", in, "colour");
    ob_node(b, "Add", "colour_bias", "colour,bias", "colour_b");
    ob_node(b, "Reshape", "colour_4d", "colour_b,shape", "colour_4d");
    ob_node(b, "Add", "swap", "scaled,colour_4d", "output");
    ob_output(b, "output", OB_F32, td, 4);
    return b;
}

static inline void sm_swapper_cfg_default(sm_swapper_cfg *cfg, int kind)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->kind = kind;
    cfg->emap = -1;
}

/* ---- enhancers ---------------------------------------------------------------------- */

typedef struct sm_enhancer_cfg {
    int codeformer;        /* 1: the `weight` input */
    int size;              /* 0 = 512 */
    int weight_type;       /* OB_F64 (0 = that), or another to make a malformed file */
    const char *weight_name; /* NULL = "weight" */
} sm_enhancer_cfg;

static inline ob_model *sm_enhancer(const sm_enhancer_cfg *cfg)
{
    int S = cfg->size ? cfg->size : 512;
    ob_model *b = ob_new(13);
    int64_t xd[] = {1, 3, S, S}, one[] = {1};
    ob_input(b, "input", OB_F32, xd, 4);
    if (!cfg->codeformer) {
        float g = SM_GFPGAN_GAIN;
        ob_initializer(b, ob_const_f32(b, "gain", one, 1, &g, 1));
        ob_node(b, "Mul", "enhance", "input,gain", "output");
    } else {
        int wt = cfg->weight_type ? cfg->weight_type : OB_F64;
        const char *wn = cfg->weight_name ? cfg->weight_name : "weight";
        ob_input(b, wn, wt, one, 1);
        float m2 = -2, p1 = 1;
        ob_initializer(b, ob_const_f32(b, "minus2", one, 1, &m2, 1));
        ob_initializer(b, ob_const_f32(b, "plus1", one, 1, &p1, 1));
        Onnx__NodeProto *n = ob_node(b, "Cast", "weight_f32", wn, "wf");
        ob_attr_int(b, n, "to", OB_F32);
        ob_node(b, "Mul", "w2", "wf,minus2", "w2");
        ob_node(b, "Add", "gain", "w2,plus1", "g");
        ob_node(b, "Mul", "enhance", "input,g", "output");
    }
    ob_output(b, "output", OB_F32, xd, 4);
    return b;
}

/* ---- occluder ----------------------------------------------------------------------- */

/* xseg-style: NHWC [1,S,S,3] -> [1,S,S,1] (nchw = 1: [1,3,S,S] -> [1,1,S,S]); the
 * output is the green channel of the 0..1 input. */
static inline ob_model *sm_occluder(int size, int nchw)
{
    int S = size ? size : 256;
    ob_model *b = ob_new(13);
    int64_t xd[4] = {1, S, S, 3}, yd[4] = {1, S, S, 1};
    int64_t st[] = {1}, en[] = {2}, ax[] = {nchw ? 1 : 3};
    if (nchw) {
        xd[1] = 3; xd[2] = S; xd[3] = S;
        yd[1] = 1; yd[2] = S; yd[3] = S;
    }
    ob_input(b, "in_face:0", OB_F32, xd, 4);
    ob_initializer(b, ob_const_i64(b, "starts", st, 1));
    ob_initializer(b, ob_const_i64(b, "ends", en, 1));
    ob_initializer(b, ob_const_i64(b, "axes", ax, 1));
    ob_node(b, "Slice", "green", "in_face:0,starts,ends,axes", "out_mask:0");
    ob_output(b, "out_mask:0", OB_F32, yd, 4);
    return b;
}

/* ---- ArcFace-style embedder --------------------------------------------------------- */

/* arcface_w600k_r50's signature: `input.1` [1,3,112,112] -> `683` [1,512]. */
static inline ob_model *sm_embedder(void)
{
    ob_model *b = ob_new(13);
    int64_t xd[] = {1, 3, 112, 112}, yd[] = {1, SM_EMBED_DIM}, wd[] = {3, SM_EMBED_DIM},
            bd[] = {SM_EMBED_DIM}, axes[] = {2, 3};
    ob_input(b, "input.1", OB_F32, xd, 4);
    float *w = ob_alloc(b, 3 * SM_EMBED_DIM * sizeof *w), *bias = ob_alloc(b, SM_EMBED_DIM * 4);
    for (int c = 0; c < 3; c++)
        for (int j = 0; j < SM_EMBED_DIM; j++)
            w[c * SM_EMBED_DIM + j] = sm_embed_w(c, j);
    for (int j = 0; j < SM_EMBED_DIM; j++)
        bias[j] = sm_embed_b(j);
    ob_initializer(b, ob_const_f32(b, "we", wd, 2, w, 3 * SM_EMBED_DIM));
    ob_initializer(b, ob_const_f32(b, "be", bd, 1, bias, SM_EMBED_DIM));
    Onnx__NodeProto *n = ob_node(b, "ReduceMean", "pool", "input.1", "pooled");
    ob_attr_ints(b, n, "axes", axes, 2);
    ob_attr_int(b, n, "keepdims", 0);
    ob_node(b, "MatMul", "fc", "pooled,we", "fc");
    ob_node(b, "Add", "fc_bias", "fc,be", "683");
    ob_output(b, "683", OB_F32, yd, 2);
    return b;
}

/* ---- files -------------------------------------------------------------------------- */

/* Packs b into path and frees b. 0 on success, -1 when the file cannot be written. */
static inline int sm_write(ob_model *b, const char *path)
{
    size_t size;
    uint8_t *data = ob_pack(b, &size);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0)
        ok = 0;
    free(data);
    ob_free(b);
    return ok ? 0 : -1;
}

/* The well-formed set, one file per convention, named so that the loaders' guess from
 * the file name finds the convention. */
static inline ob_model *sm_make_inswapper(void)
{
    sm_swapper_cfg c;
    sm_swapper_cfg_default(&c, SM_INSWAPPER);
    return sm_swapper(&c);
}
static inline ob_model *sm_make_hyperswap(void)
{
    sm_swapper_cfg c;
    sm_swapper_cfg_default(&c, SM_HYPERSWAP);
    return sm_swapper(&c);
}
static inline ob_model *sm_make_simswap(void)
{
    sm_swapper_cfg c;
    sm_swapper_cfg_default(&c, SM_SIMSWAP);
    return sm_swapper(&c);
}
static inline ob_model *sm_make_gfpgan(void)
{
    sm_enhancer_cfg c = {0, 0, 0, NULL};
    return sm_enhancer(&c);
}
static inline ob_model *sm_make_codeformer(void)
{
    sm_enhancer_cfg c = {1, 0, 0, NULL};
    return sm_enhancer(&c);
}
static inline ob_model *sm_make_occluder(void) { return sm_occluder(256, 0); }

static const struct {
    const char *file;
    ob_model *(*fn)(void);
} sm_models[] = {
    {"synthetic_inswapper_128.onnx", sm_make_inswapper},
    {"synthetic_hyperswap_1a_256.onnx", sm_make_hyperswap},
    {"synthetic_simswap_256.onnx", sm_make_simswap},
    {"synthetic_gfpgan_1.4.onnx", sm_make_gfpgan},
    {"synthetic_codeformer.onnx", sm_make_codeformer},
    {"synthetic_xseg_1.onnx", sm_make_occluder},
    {"synthetic_arcface_w600k_r50.onnx", sm_embedder},
};

#endif
