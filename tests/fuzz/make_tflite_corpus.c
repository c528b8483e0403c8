/* Writes the seed corpus of the TFLite fuzzer (fuzz_tflite.c) into the folder given
 * (normally tests/fixtures/corpus/tflite): small valid models from tflite_builder.h
 * that between them use every operator family and option table the loader reads, a
 * batch-2 model for the batch rule, and damaged or refused files that reach the
 * reader's checks. Not part of the build; run by hand when the seeds change:
 *   cc -O2 -Itests/fuzz tests/fuzz/make_tflite_corpus.c -o /tmp/make_tflite_corpus &&
 *   /tmp/make_tflite_corpus tests/fixtures/corpus/tflite */
#include <stdio.h>

#include "tflite_builder.h"

#define D(...) ((const int32_t[]){__VA_ARGS__})

/* Deterministic weights in [-1, 1) (the seeds only need to be stable, not meaningful). */
static float weights[4096];
static size_t weights_used;

static const float *values(size_t n)
{
    static uint32_t s = 12345;
    if (weights_used + n > sizeof weights / sizeof weights[0]) abort();
    float *p = weights + weights_used;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
    }
    weights_used += n;
    return p;
}

static size_t count(int rank, const int32_t *d)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)d[i];
    return n;
}

static int wconst(tb_model *m, const char *name, int rank, const int32_t *d)
{
    size_t n = count(rank, d);
    return tb_const(m, name, TB_F32, rank, d, values(n), n * 4);
}

static int iconst(tb_model *m, const char *name, int rank, const int32_t *d, const int32_t *v)
{
    return tb_const(m, name, TB_I32, rank, d, v, count(rank, d) * 4);
}

static int act(tb_model *m, const char *name, int rank, const int32_t *d)
{
    return tb_tensor_add(m, name, TB_F32, rank, d);
}

/* f32 -> f16 bits by truncation (normal numbers and zero; enough for seeds). */
static uint16_t half_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    int e = (int)((u >> 23) & 0xff) - 127 + 15;
    if (e <= 0) return (uint16_t)sign;
    return (uint16_t)(sign | (uint32_t)e << 10 | ((u >> 13) & 0x3ffu));
}

/* x[1,4,4,2] -> CONV_2D 3x3 s2 SAME (fused RELU6) -> RELU6 */
static void conv_relu6(tb_model *m)
{
    int x = act(m, "x", 4, D(1, 4, 4, 2)), w = wconst(m, "w", 4, D(3, 3, 3, 2));
    int b = wconst(m, "b", 1, D(3)), c = act(m, "conv", 4, D(1, 2, 2, 3));
    int y = act(m, "y", 4, D(1, 2, 2, 3));
    tb_conv_opts(tb_op_add(m, TB_CONV_2D, D(x, w, b), 3, c), TB_SAME, 2, 2, TB_ACT_RELU6, 1, 1);
    tb_op_add(m, TB_RELU6, D(c), 1, y);
    tb_input(m, x);
    tb_output(m, y);
}

/* x[1,5,5,3] -> DEPTHWISE_CONV_2D 3x3 VALID dilation 2 -> ADD bias (fused RELU) */
static void depthwise_add(tb_model *m)
{
    int x = act(m, "x", 4, D(1, 5, 5, 3)), w = wconst(m, "dw", 4, D(1, 3, 3, 3));
    int b = wconst(m, "b", 1, D(3)), c = wconst(m, "c", 1, D(3));
    int d = act(m, "dwconv", 4, D(1, 1, 1, 3)), y = act(m, "y", 4, D(1, 1, 1, 3));
    tb_dwconv_opts(tb_op_add(m, TB_DEPTHWISE_CONV_2D, D(x, w, b), 3, d), TB_VALID, 1, 1, 1,
                   TB_ACT_NONE, 2, 2);
    tb_arith_opts(tb_op_add(m, TB_ADD, D(d, c), 2, y), TB_ADD, TB_ACT_RELU);
    tb_input(m, x);
    tb_output(m, y);
}

/* x[1,2,2,3] -> FULLY_CONNECTED 4 -> SOFTMAX beta 0.5 */
static void fc_softmax(tb_model *m)
{
    int x = act(m, "x", 4, D(1, 2, 2, 3)), w = wconst(m, "w", 2, D(4, 12));
    int b = wconst(m, "b", 1, D(4)), f = act(m, "fc", 2, D(1, 4)), y = act(m, "y", 2, D(1, 4));
    tb_fc_opts(tb_op_add(m, TB_FULLY_CONNECTED, D(x, w, b), 3, f), TB_ACT_NONE, 0);
    tb_softmax_opts(tb_op_add(m, TB_SOFTMAX, D(f), 1, y), 0.5f);
    tb_input(m, x);
    tb_output(m, y);
}

/* x[1,2,3,4] -> RESHAPE (shape input) -> RESHAPE (new_shape option) -> TANH, LOGISTIC */
static void reshape(tb_model *m)
{
    static const int32_t shape[3] = {1, 6, 4}, flat[2] = {1, -1};
    int x = act(m, "x", 4, D(1, 2, 3, 4)), s = iconst(m, "shape", 1, D(3), shape);
    int r1 = act(m, "r1", 3, D(1, 6, 4)), r2 = act(m, "r2", 2, D(1, 24));
    int t = act(m, "t", 2, D(1, 24)), y = act(m, "y", 2, D(1, 24));
    tb_op_add(m, TB_RESHAPE, D(x, s), 2, r1);
    tb_reshape_opts(tb_op_add(m, TB_RESHAPE, D(r1), 1, r2), flat, 2);
    tb_op_add(m, TB_TANH, D(r2), 1, t);
    tb_op_add(m, TB_LOGISTIC, D(t), 1, y);
    tb_input(m, x);
    tb_output(m, y);
}

/* x[1,2,3,2] -> PAD -> MEAN(1,2, keep) -> CONCATENATION(axis 3, RELU) with a constant */
static void pad_mean_concat(tb_model *m)
{
    static const int32_t pads[8] = {0, 0, 1, 0, 0, 2, 0, 0}, axes[2] = {1, 2};
    int x = act(m, "x", 4, D(1, 2, 3, 2)), p = iconst(m, "pads", 2, D(4, 2), pads);
    int a = iconst(m, "axes", 1, D(2), axes), k = wconst(m, "k", 4, D(1, 1, 1, 2));
    int pd = act(m, "padded", 4, D(1, 3, 5, 2)), mn = act(m, "mean", 4, D(1, 1, 1, 2));
    int y = act(m, "y", 4, D(1, 1, 1, 4));
    tb_op_add(m, TB_PAD, D(x, p), 2, pd);
    tb_reducer_opts(tb_op_add(m, TB_MEAN, D(pd, a), 2, mn), 1);
    tb_concat_opts(tb_op_add(m, TB_CONCATENATION, D(mn, k), 2, y), 3, TB_ACT_RELU);
    tb_input(m, x);
    tb_output(m, y);
}

/* MTCNN's spellings: PReLU as Relu(x) + a * -Relu(-x), then a softmax written out with
 * REDUCE_MAX, EXP, SUM and DIV over the channels, and REDUCE_MIN beside it (the rewrites
 * nn_rewrite_patterns makes of them) */
static void mtcnn_heads(tb_model *m)
{
    static const int32_t axes[1] = {3};
    int x = act(m, "x", 4, D(1, 2, 3, 4)), al = wconst(m, "alpha", 1, D(4));
    int a = iconst(m, "axes", 1, D(1), axes);
    int r = act(m, "relu", 4, D(1, 2, 3, 4)), n1 = act(m, "neg", 4, D(1, 2, 3, 4));
    int r2 = act(m, "relu_1", 4, D(1, 2, 3, 4)), n2 = act(m, "neg_1", 4, D(1, 2, 3, 4));
    int mu = act(m, "mul", 4, D(1, 2, 3, 4)), p = act(m, "prelu", 4, D(1, 2, 3, 4));
    int mx = act(m, "max", 4, D(1, 2, 3, 1)), d = act(m, "sub", 4, D(1, 2, 3, 4));
    int e = act(m, "exp", 4, D(1, 2, 3, 4)), sm = act(m, "sum", 4, D(1, 2, 3, 1));
    int y = act(m, "prob", 4, D(1, 2, 3, 4)), mn = act(m, "min", 4, D(1, 2, 3, 1));
    tb_op_add(m, TB_RELU, D(x), 1, r);
    tb_op_add(m, 59 /* NEG */, D(x), 1, n1);
    tb_op_add(m, TB_RELU, D(n1), 1, r2);
    tb_op_add(m, 59 /* NEG */, D(r2), 1, n2);
    tb_arith_opts(tb_op_add(m, TB_MUL, D(al, n2), 2, mu), TB_MUL, TB_ACT_NONE);
    tb_arith_opts(tb_op_add(m, TB_ADD, D(r, mu), 2, p), TB_ADD, TB_ACT_NONE);
    tb_reducer_opts(tb_op_add(m, TB_REDUCE_MAX, D(p, a), 2, mx), 1);
    tb_arith_opts(tb_op_add(m, TB_SUB, D(p, mx), 2, d), TB_SUB, TB_ACT_NONE);
    tb_op_add(m, 47 /* EXP */, D(d), 1, e);
    tb_reducer_opts(tb_op_add(m, TB_SUM, D(e, a), 2, sm), 1);
    tb_arith_opts(tb_op_add(m, TB_DIV, D(e, sm), 2, y), TB_DIV, TB_ACT_NONE);
    tb_reducer_opts(tb_op_add(m, TB_REDUCE_MIN, D(p, a), 2, mn), 0);
    tb_input(m, x);
    tb_output(m, y);
    tb_output(m, mn);
}

/* f16 filter -> DEQUANTIZE -> CONV_2D 3x3 SAME */
static uint16_t f16w[36];

static void f16_dequantize(tb_model *m)
{
    const float *v = values(36);
    for (int i = 0; i < 36; i++) f16w[i] = half_of(v[i]);
    int x = act(m, "x", 4, D(1, 3, 3, 2));
    int h = tb_const(m, "w_f16", TB_F16, 4, D(2, 3, 3, 2), f16w, sizeof f16w);
    int w = act(m, "w", 4, D(2, 3, 3, 2)), b = wconst(m, "b", 1, D(2));
    int y = act(m, "y", 4, D(1, 3, 3, 2));
    tb_op_add(m, TB_DEQUANTIZE, D(h), 1, w);
    tb_conv_opts(tb_op_add(m, TB_CONV_2D, D(x, w, b), 3, y), TB_SAME, 1, 1, TB_ACT_NONE, 1, 1);
    tb_input(m, x);
    tb_output(m, y);
}

/* Pools, PRELU, LEAKY_RELU, MUL / SUB / DIV with fused activations, HARD_SWISH; two
 * outputs. */
static void pools_arith(tb_model *m)
{
    int x = act(m, "x", 4, D(1, 4, 5, 2)), al = wconst(m, "alpha", 3, D(1, 1, 2));
    int mc = wconst(m, "mc", 1, D(2)), sc = wconst(m, "sc", 0, NULL), dc = wconst(m, "dc", 1, D(2));
    int av = act(m, "avg", 4, D(1, 2, 3, 2)), mx = act(m, "max", 4, D(1, 3, 2, 2));
    int p = act(m, "prelu", 4, D(1, 2, 3, 2)), l = act(m, "leaky", 4, D(1, 2, 3, 2));
    int mu = act(m, "mul", 4, D(1, 2, 3, 2)), su = act(m, "sub", 4, D(1, 2, 3, 2));
    int dv = act(m, "div", 4, D(1, 2, 3, 2)), hs = act(m, "hswish", 4, D(1, 3, 2, 2));
    tb_pool_opts(tb_op_add(m, TB_AVERAGE_POOL_2D, D(x), 1, av), TB_SAME, 2, 2, 3, 3, TB_ACT_NONE);
    tb_pool_opts(tb_op_add(m, TB_MAX_POOL_2D, D(x), 1, mx), TB_VALID, 2, 1, 3, 2, TB_ACT_RELU);
    tb_op_add(m, TB_PRELU, D(av, al), 2, p);
    tb_leaky_relu_opts(tb_op_add(m, TB_LEAKY_RELU, D(p), 1, l), 0.1f);
    tb_arith_opts(tb_op_add(m, TB_MUL, D(l, mc), 2, mu), TB_MUL, TB_ACT_NONE);
    tb_arith_opts(tb_op_add(m, TB_SUB, D(mu, sc), 2, su), TB_SUB, TB_ACT_RELU6);
    tb_arith_opts(tb_op_add(m, TB_DIV, D(su, dc), 2, dv), TB_DIV, TB_ACT_RELU_N1_TO_1);
    tb_op_add(m, TB_HARD_SWISH, D(mx), 1, hs);
    tb_input(m, x);
    tb_output(m, dv);
    tb_output(m, hs);
}

/* Exported at batch 2 with item-safe ops only: the loader makes dim 0 dynamic. */
static void batch2(tb_model *m)
{
    static const int32_t axes[2] = {1, 2}, shape[2] = {2, 4};
    int x = act(m, "x", 4, D(2, 4, 4, 3)), w = wconst(m, "w", 4, D(4, 3, 3, 3));
    int b = wconst(m, "b", 1, D(4)), a = iconst(m, "axes", 1, D(2), axes);
    int s = iconst(m, "shape", 1, D(2), shape), fw = wconst(m, "fw", 2, D(5, 4));
    int c = act(m, "conv", 4, D(2, 4, 4, 4)), mn = act(m, "mean", 4, D(2, 1, 1, 4));
    int r = act(m, "flat", 2, D(2, 4)), f = act(m, "fc", 2, D(2, 5)), y = act(m, "y", 2, D(2, 5));
    tb_conv_opts(tb_op_add(m, TB_CONV_2D, D(x, w, b), 3, c), TB_SAME, 1, 1, TB_ACT_RELU, 1, 1);
    tb_reducer_opts(tb_op_add(m, TB_MEAN, D(c, a), 2, mn), 1);
    tb_op_add(m, TB_RESHAPE, D(mn, s), 2, r);
    tb_fc_opts(tb_op_add(m, TB_FULLY_CONNECTED, D(r, fw, -1), 3, f), TB_ACT_NONE, 0);
    tb_softmax_opts(tb_op_add(m, TB_SOFTMAX, D(f), 1, y), 1.0f);
    tb_input(m, x);
    tb_output(m, y);
}

/* conv_relu6 with its second operator a custom one (refused, by name) */
static void custom_op(tb_model *m)
{
    conv_relu6(m);
    m->codes[m->ncodes].builtin = TB_CUSTOM;
    m->codes[m->ncodes].custom = "FaceMagic";
    m->ops[1].opcode = m->ncodes++;
}

/* conv_relu6 with int8 weights carrying quantization scales (refused) */
static void quantized(tb_model *m)
{
    static const int8_t q[54] = {1, -2, 3};
    conv_relu6(m);
    tb_tensor *w = &m->tensors[1];
    w->type = TB_I8, w->data = q, w->nbytes = sizeof q, w->quant = 1;
}

static int save(const char *dir, const char *name, const uint8_t *p, size_t n)
{
    printf("%s/%s: %zu bytes\n", dir, name, n);
    return bw_save(dir, name, p, n);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static const struct {
        const char *name;
        void (*fn)(tb_model *);
    } seeds[] = {
        {"conv_relu6.tflite", conv_relu6},   {"depthwise_add.tflite", depthwise_add},
        {"fc_softmax.tflite", fc_softmax},   {"reshape.tflite", reshape},
        {"pad_mean_concat.tflite", pad_mean_concat},
        {"f16_dequantize.tflite", f16_dequantize},
        {"pools_arith.tflite", pools_arith}, {"batch2.tflite", batch2},
        {"custom_op.tflite", custom_op},     {"quantized.tflite", quantized},
        {"mtcnn_heads.tflite", mtcnn_heads},
    };
    static tb_model m;
    int rc = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        memset(&m, 0, sizeof m);
        m.description = "make_tflite_corpus";
        seeds[i].fn(&m);
        size_t n;
        uint8_t *p = tb_pack(&m, &n);
        rc |= save(argv[1], seeds[i].name, p, n);
        if (seeds[i].fn == conv_relu6) {
            /* damaged copies: cut in half, and the root table's vtable sent past the end */
            rc |= save(argv[1], "truncated.tflite", p, n / 2);
            uint32_t root = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                            (uint32_t)p[3] << 24;
            tb_set32(&(byte_writer){.p = p, .n = n}, root, (uint32_t)-(int32_t)(n + 64));
            rc |= save(argv[1], "bad_vtable.tflite", p, n);
        }
        free(p);
    }
    return rc;
}
