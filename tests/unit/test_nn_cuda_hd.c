/* The per-element arithmetic of the cuda backend's kernels (src/nn/cuda/nn_cuda_hd.h),
 * run here on the CPU and compared with the ref kernels it stands in for: every unary
 * op, every binary op, every fused activation (nn_act_apply), Pad's source index and
 * the pooling window taps. The kernels call exactly these functions, so on a machine
 * without a GPU this checks all of their math but the CUDA math library's ulps. */
#include "nn/cuda/nn_cuda_hd.h"
#include "test_nn_ops.h"

#define N 600

/* Inputs: special values first, then a fixed-seed spread over [-6, 6]. */
static void inputs(float *x, uint64_t seed)
{
    static const float special[] = {0.0f, -0.0f, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 3.0f, -3.0f,
                                    6.0f, 1e-30f, -1e-30f, 40.0f, -40.0f, 100.0f, -100.0f};
    int k = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < N; i++)
        x[i] = i < k ? special[i] : -6.0f + 12.0f * test_rand_f(&seed);
}

static int same(float a, float b) { return (a != a && b != b) || a == b; }

typedef struct ucase {
    nn_op op;
    int code;
    const char *attr;  /* one float attribute to set (or NULL) */
    float value;
    float a, b, g;     /* what the cuda backend passes for it */
} ucase;

static void test_unary_matches_ref(void)
{
    const ucase cases[] = {
        {NN_OP_RELU, NN_CU_RELU, NULL, 0, 0, 0, 0},
        {NN_OP_LEAKY_RELU, NN_CU_LEAKY_RELU, "alpha", 0.2f, 0.2f, 0, 0},
        {NN_OP_SIGMOID, NN_CU_SIGMOID, NULL, 0, 0, 0, 0},
        {NN_OP_TANH, NN_CU_TANH, NULL, 0, 0, 0, 0},
        {NN_OP_ELU, NN_CU_ELU, "alpha", 0.7f, 0.7f, 0, 0},
        {NN_OP_SELU, NN_CU_SELU, NULL, 0, 1.67326319217681884765625f, 0, 1.05070102214813232421875f},
        {NN_OP_HARD_SIGMOID, NN_CU_HARD_SIGMOID, NULL, 0, 0.2f, 0.5f, 0},
        {NN_OP_HARD_SWISH, NN_CU_HARD_SWISH, NULL, 0, 0, 0, 0},
        {NN_OP_SOFTPLUS, NN_CU_SOFTPLUS, NULL, 0, 0, 0, 0},
        {NN_OP_SQRT, NN_CU_SQRT, NULL, 0, 0, 0, 0},
        {NN_OP_EXP, NN_CU_EXP, NULL, 0, 0, 0, 0},
        {NN_OP_LOG, NN_CU_LOG, NULL, 0, 0, 0, 0},
        {NN_OP_NEG, NN_CU_NEG, NULL, 0, 0, 0, 0},
        {NN_OP_ABS, NN_CU_ABS, NULL, 0, 0, 0, 0},
        {NN_OP_RECIPROCAL, NN_CU_RECIPROCAL, NULL, 0, 0, 0, 0},
        {NN_OP_ERF, NN_CU_ERF, NULL, 0, 0, 0, 0},
        {NN_OP_FLOOR, NN_CU_FLOOR, NULL, 0, 0, 0, 0},
        {NN_OP_CEIL, NN_CU_CEIL, NULL, 0, 0, 0, 0},
        {NN_OP_ROUND, NN_CU_ROUND, NULL, 0, 0, 0, 0},
        {NN_OP_SIGN, NN_CU_SIGN, NULL, 0, 0, 0, 0},
        {NN_OP_SIN, NN_CU_SIN, NULL, 0, 0, 0, 0},
        {NN_OP_COS, NN_CU_COS, NULL, 0, 0, 0, 0},
        {NN_OP_RSQRT, NN_CU_RSQRT, NULL, 0, 0, 0, 0},
        {NN_OP_SQUARE, NN_CU_SQUARE, NULL, 0, 0, 0, 0},
        {NN_OP_RELU6, NN_CU_RELU6, NULL, 0, 0, 0, 0},
    };
    float x[N];
    inputs(x, 11);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const ucase *uc = &cases[c];
        tg t = {0};
        CHECK(nn_graph_create(&t.g) == FFU_OK);
        int in = tin(t.g, FFU_DTYPE_F32, 1, (int64_t[]){N});
        t.node = tnode(t.g, uc->op, &in, 1, 1);
        if (uc->attr) CHECK(nn_node_set_float(t.g, t.node, uc->attr, uc->value) == FFU_OK);
        void *data[1] = {x};
        CHECK(trun(&t, data) == FFU_OK);
        const float *want = t.out[0];
        int bad = 0;
        for (int i = 0; i < N; i++) {
            float got = nn_hd_unary(uc->code, x[i], uc->a, uc->b, uc->g);
            if (!same(got, want[i])) {
                if (bad++ < 3)
                    fprintf(stderr, "%s(%.9g): kernel %.9g, ref %.9g\n", nn_op_name(uc->op),
                            (double)x[i], (double)got, (double)want[i]);
            }
        }
        tfree(&t);
        CHECK_EQ_INT(bad, 0);
    }
    /* Clip with bounds and the Mean scale */
    for (int i = 0; i < N; i++) {
        float v = x[i] < -0.5f ? -0.5f : x[i];
        CHECK(same(nn_hd_unary(NN_CU_CLIP, x[i], -0.5f, 0.25f, 0), v > 0.25f ? 0.25f : v));
        CHECK(same(nn_hd_unary(NN_CU_SCALE, x[i], 1.0f / 3, 0, 0), x[i] * (1.0f / 3)));
    }
}

static void test_binary_matches_ref(void)
{
    const struct {
        nn_op op;
        int code;
    } cases[] = {{NN_OP_ADD, NN_CU_ADD}, {NN_OP_SUB, NN_CU_SUB}, {NN_OP_MUL, NN_CU_MUL},
                 {NN_OP_DIV, NN_CU_DIV}, {NN_OP_POW, NN_CU_POW}, {NN_OP_MAX, NN_CU_MAX},
                 {NN_OP_MIN, NN_CU_MIN}, {NN_OP_PRELU, NN_CU_PRELU}};
    float a[N], b[N];
    inputs(a, 21);
    inputs(b, 22);
    b[3] = NAN; /* Max/Min propagate NaN from either side */
    a[5] = NAN;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tg t = {0};
        CHECK(nn_graph_create(&t.g) == FFU_OK);
        int ins[2] = {tin(t.g, FFU_DTYPE_F32, 1, (int64_t[]){N}), tin(t.g, FFU_DTYPE_F32, 1, (int64_t[]){N})};
        t.node = tnode(t.g, cases[c].op, ins, 2, 1);
        void *data[2] = {a, b};
        CHECK(trun(&t, data) == FFU_OK);
        const float *want = t.out[0];
        for (int i = 0; i < N; i++) {
            float got = nn_hd_binary(cases[c].code, a[i], b[i]);
            if (!same(got, want[i]))
                fprintf(stderr, "%s(%g, %g): kernel %g ref %g\n", nn_op_name(cases[c].op),
                        (double)a[i], (double)b[i], (double)got, (double)want[i]);
            CHECK(same(got, want[i]));
        }
        tfree(&t);
    }
}

static void test_act_matches_ref(void)
{
    /* the enum is a copy of nn_act_kind */
    CHECK_EQ_INT(NN_CU_ACT_RELU, NN_ACT_RELU);
    CHECK_EQ_INT(NN_CU_ACT_RELU6, NN_ACT_RELU6);
    CHECK_EQ_INT(NN_CU_ACT_CLIP, NN_ACT_CLIP);
    CHECK_EQ_INT(NN_CU_ACT_LEAKY_RELU, NN_ACT_LEAKY_RELU);
    CHECK_EQ_INT(NN_CU_ACT_PRELU, NN_ACT_PRELU);
    CHECK_EQ_INT(NN_CU_ACT_SIGMOID, NN_ACT_SIGMOID);
    CHECK_EQ_INT(NN_CU_ACT_TANH, NN_ACT_TANH);
    CHECK_EQ_INT(NN_CU_ACT_HARD_SWISH, NN_ACT_HARD_SWISH);
    CHECK_EQ_INT(NN_CU_ACT_ELU, NN_ACT_ELU);
    CHECK_EQ_INT(NN_ACT_COUNT, NN_CU_ACT_ELU + 1);
    float x[N], y[N];
    inputs(x, 31);
    /* PReLU per channel: 4 channels of 150 */
    const float slope[4] = {0.1f, 0.25f, -0.5f, 2.0f};
    for (int k = 1; k < NN_ACT_COUNT; k++) {
        nn_act act = {.kind = (nn_act_kind)k, .alpha = -0.3f, .beta = 0.4f, .slope = -1};
        if (k == NN_ACT_LEAKY_RELU || k == NN_ACT_ELU) act.alpha = 0.15f;
        memcpy(y, x, sizeof y);
        nn_act_apply(&act, slope, 4, y, 1, 4, N / 4);
        for (int i = 0; i < N; i++) {
            float got = nn_hd_act(k, x[i], act.alpha, act.beta, slope[i / (N / 4)]);
            if (!same(got, y[i]))
                fprintf(stderr, "act %d (%g): kernel %g ref %g\n", k, (double)x[i], (double)got,
                        (double)y[i]);
            CHECK(same(got, y[i]));
        }
    }
}

/* Pad's source index against a ref Pad over every mode, with pads larger than the input
 * (reflect and wrap fold more than once). */
static void test_pad_index_matches_ref(void)
{
    static const char *const modes[] = {"constant", "reflect", "edge", "wrap"};
    const int64_t in = 5, p0 = 7, p1 = 9, out = in + p0 + p1;
    float x[5] = {1, 2, 3, 4, 5};
    for (int m = 0; m < 4; m++) {
        tg t = {0};
        CHECK(nn_graph_create(&t.g) == FFU_OK);
        int64_t pads[2] = {p0, p1};
        int ins[2] = {tin(t.g, FFU_DTYPE_F32, 1, (int64_t[]){in}),
                      tconst(t.g, FFU_DTYPE_I64, 1, (int64_t[]){2}, pads)};
        t.node = tnode(t.g, NN_OP_PAD, ins, 2, 1);
        CHECK(nn_node_set_string(t.g, t.node, "mode", modes[m]) == FFU_OK);
        void *data[2] = {x, NULL};
        CHECK(trun(&t, data) == FFU_OK);
        const float *want = t.out[0];
        for (int64_t o = 0; o < out; o++) {
            int64_t s = nn_hd_pad_src(o, p0, in, m);
            float got = s < 0 ? 0.0f : x[s];
            CHECK(got == want[o]);
        }
        tfree(&t);
    }
}

/* Max pool through the kernel's window taps (nn_hd_taps) against ref MaxPool and
 * AveragePool with pads, strides, dilations and ceil mode. */
static void test_pool_taps_match_ref(void)
{
    const int64_t H = 9, W = 11;
    float x[9 * 11];
    uint64_t seed = 41;
    fill_f(x, H * W, &seed, -1, 1);
    static const char *const specs[][4] = {
        {"3,3", "2,2", "1,1,1,1", "1,1"}, {"2,2", "2,2", "0,0,0,0", "1,1"},
        {"3,3", "1,2", "0,1,2,0", "2,2"}, {"4,3", "3,2", "2,1,2,1", "1,1"},
    };
    for (int c = 0; c < 4; c++)
        for (int avg = 0; avg < 2; avg++) {
            tg t = {0};
            CHECK(nn_graph_create(&t.g) == FFU_OK);
            int in = tin(t.g, FFU_DTYPE_F32, 4, (int64_t[]){1, 1, H, W});
            t.node = tnode(t.g, avg ? NN_OP_AVERAGE_POOL : NN_OP_MAX_POOL, &in, 1, 1);
            int64_t v[4];
            int nv;
            const char *names[4] = {"kernel_shape", "strides", "pads", "dilations"};
            for (int a = 0; a < (avg ? 3 : 4); a++) {
                nv = sscanf(specs[c][a], "%ld,%ld,%ld,%ld", &v[0], &v[1], &v[2], &v[3]);
                CHECK(nn_node_set_ints(t.g, t.node, names[a], v, nv) == FFU_OK);
            }
            void *data[1] = {x};
            CHECK(trun(&t, data) == FFU_OK);
            const nn_tensor *o = tout(&t, 0);
            int64_t OH = o->shape.d[2], OW = o->shape.d[3];
            sscanf(specs[c][0], "%ld,%ld", &v[0], &v[1]);
            int64_t kh = v[0], kw = v[1];
            sscanf(specs[c][1], "%ld,%ld", &v[0], &v[1]);
            int64_t sh = v[0], sw = v[1];
            sscanf(specs[c][2], "%ld,%ld", &v[0], &v[1]);
            int64_t pt = v[0], pl = v[1];
            sscanf(specs[c][3], "%ld,%ld", &v[0], &v[1]);
            int64_t dh = avg ? 1 : v[0], dw = avg ? 1 : v[1];
            const float *want = t.out[0];
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t y0 = oh * sh - pt, x0 = ow * sw - pl, h0, h1, w0, w1;
                    nn_hd_taps(y0, dh, kh, 0, H, &h0, &h1);
                    nn_hd_taps(x0, dw, kw, 0, W, &w0, &w1);
                    double acc = avg ? 0 : -INFINITY;
                    for (int64_t a = h0; a < h1; a++)
                        for (int64_t b = w0; b < w1; b++) {
                            float e = x[(y0 + a * dh) * W + x0 + b * dw];
                            acc = avg ? acc + e : (e > acc ? e : acc);
                        }
                    int64_t cnt = (h1 - h0) * (w1 - w0);
                    float got = avg ? (cnt ? (float)(acc / (double)cnt) : 0) : (float)acc;
                    CHECK_NEAR(got, want[oh * OW + ow], 0);
                }
            tfree(&t);
        }
}

static void test_offset(void)
{
    /* a 2x3x4 tensor transposed (2,0,1): output [4,2,3] reads strides {1,12,4} */
    int64_t d[3] = {4, 2, 3}, st[3] = {1, 12, 4};
    for (int64_t o = 0; o < 24; o++) {
        int64_t i2 = o / 6, i0 = (o / 3) % 2, i1 = o % 3;
        CHECK_EQ_INT(nn_hd_offset(o, d, st, 3), i0 * 12 + i1 * 4 + i2);
    }
}

TEST_MAIN(test_unary_matches_ref, test_binary_matches_ref, test_act_matches_ref,
          test_pad_index_matches_ref, test_pool_taps_match_ref, test_offset)
