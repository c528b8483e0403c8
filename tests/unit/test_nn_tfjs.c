/* Tests of the TF.js graph-model loader: attribute decoding, a hand-written model
 * checked against a direct NHWC computation (weights layout, SAME padding, fused
 * bias/activation, PReLU, Mean), hostile model.json / weights that must fail with a
 * reason and never crash, and the 13 human-models face models from the model cache
 * (node counts, input shapes, every op translated, transposes left after the layout
 * clean-up, op counts after the pattern rewrites). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/ir.h"
#include "nn/rewrite.h"
#include "nn/tfjs/tfjs.h"
#include "nn/tfjs/tfjs_internal.h"
#include "test.h"
#include "test_nn_run.h"

/* ---- a tiny hand-written model -------------------------------------------------------- */

/* x[1,4,4,2] -> _FusedConv2D(3x3, stride 2, SAME, BiasAdd+Relu) -> Prelu(alpha f16)
 * -> Mean(axes 1,2) -> out[1,3] */
static const char TINY_JSON[] =
    "{\"format\":\"graph-model\",\"generatedBy\":\"test\",\"convertedBy\":\"hand\","
    "\"modelTopology\":{\"node\":["
    "{\"name\":\"out\",\"op\":\"Identity\",\"input\":[\"mean\"]},"
    "{\"name\":\"x\",\"op\":\"Placeholder\",\"attr\":{\"dtype\":{\"type\":\"DT_FLOAT\"},"
    "\"shape\":{\"shape\":{\"dim\":[{\"size\":\"1\"},{\"size\":\"4\"},{\"size\":\"4\"},{\"size\":\"2\"}]}}}},"
    "{\"name\":\"w\",\"op\":\"Const\",\"attr\":{\"dtype\":{\"type\":\"DT_FLOAT\"}}},"
    "{\"name\":\"b\",\"op\":\"Const\"},"
    "{\"name\":\"alpha\",\"op\":\"Const\"},"
    "{\"name\":\"axes\",\"op\":\"Const\"},"
    "{\"name\":\"conv\",\"op\":\"_FusedConv2D\",\"input\":[\"x\",\"w\",\"b\",\"^axes\"],"
    "\"attr\":{\"padding\":{\"s\":\"U0FNRQ==\"},\"strides\":{\"list\":{\"i\":[\"1\",\"2\",\"2\",\"1\"]}},"
    "\"data_format\":{\"s\":\"TkhXQw==\"},\"fused_ops\":{\"list\":{\"s\":[\"Qmlhc0FkZA==\",\"UmVsdQ==\"]}},"
    "\"num_args\":{\"i\":\"1\"},\"dilations\":{\"list\":{\"i\":[\"1\",\"1\",\"1\",\"1\"]}},"
    "\"explicit_paddings\":{\"list\":{}},\"epsilon\":{\"f\":0},\"T\":{\"type\":\"DT_FLOAT\"}}},"
    "{\"name\":\"pr\",\"op\":\"Prelu\",\"input\":[\"conv\",\"alpha\"]},"
    "{\"name\":\"mean\",\"op\":\"Mean\",\"input\":[\"pr\",\"axes:0\"],\"attr\":{\"keep_dims\":{\"b\":false}}}"
    "]},"
    "\"weightsManifest\":[{\"paths\":[\"m.bin\"],\"weights\":["
    "{\"name\":\"w\",\"shape\":[3,3,2,3],\"dtype\":\"float32\"},"
    "{\"name\":\"b\",\"shape\":[3],\"dtype\":\"float32\"}]},"
    "{\"paths\":[\"m2.bin\"],\"weights\":["
    "{\"name\":\"alpha\",\"shape\":[3],\"dtype\":\"float32\",\"quantization\":{\"dtype\":\"float16\","
    "\"original_dtype\":\"float32\"}},"
    "{\"name\":\"axes\",\"shape\":[2],\"dtype\":\"int32\"}]}]}";

enum { TINY_BIN = 54 * 4 + 3 * 4 + 3 * 2 + 2 * 4 };

static float tiny_w[54], tiny_b[3], tiny_alpha[3] = {0.25f, -0.5f, 2.0f};

static void tiny_weights(uint8_t *bin)
{
    uint64_t seed = 7;
    for (int i = 0; i < 54; i++) tiny_w[i] = test_rand_f(&seed) * 2 - 1;
    for (int i = 0; i < 3; i++) tiny_b[i] = test_rand_f(&seed) - 0.7f;
    memcpy(bin, tiny_w, 216);
    memcpy(bin + 216, tiny_b, 12);
    for (int i = 0; i < 3; i++) {
        uint16_t h = nn_f32_to_f16(tiny_alpha[i]);
        memcpy(bin + 228 + 2 * i, &h, 2);
    }
    int32_t axes[2] = {1, 2};
    memcpy(bin + 234, axes, 8);
}

/* The TF semantics computed directly in NHWC. */
static void tiny_expected(const float *x, float *out)
{
    float y[2][2][3];
    for (int oh = 0; oh < 2; oh++)
        for (int ow = 0; ow < 2; ow++)
            for (int o = 0; o < 3; o++) {
                float acc = tiny_b[o];
                for (int kh = 0; kh < 3; kh++)
                    for (int kw = 0; kw < 3; kw++) {
                        int ih = oh * 2 + kh, iw = ow * 2 + kw; /* SAME pads (0,1) */
                        if (ih >= 4 || iw >= 4) continue;
                        for (int i = 0; i < 2; i++)
                            acc += x[(ih * 4 + iw) * 2 + i] * tiny_w[((kh * 3 + kw) * 2 + i) * 3 + o];
                    }
                acc = acc > 0 ? acc : 0;
                y[oh][ow][o] = acc < 0 ? tiny_alpha[o] * acc : acc;
            }
    for (int o = 0; o < 3; o++)
        out[o] = (y[0][0][o] + y[0][1][o] + y[1][0][o] + y[1][1][o]) / 4;
}

static void test_base64(void)
{
    uint8_t buf[16];
    size_t n;
    CHECK_EQ_INT(tf_base64_decode("U0FNRQ==", buf, sizeof buf, &n), FFU_OK);
    CHECK_EQ_INT(n, 4);
    CHECK(memcmp(buf, "SAME", 4) == 0);
    CHECK_EQ_INT(tf_base64_decode("VkFMSUQ=", buf, sizeof buf, &n), FFU_OK);
    CHECK(n == 5 && memcmp(buf, "VALID", 5) == 0);
    CHECK_EQ_INT(tf_base64_decode("VkFMSUQ", buf, sizeof buf, &n), FFU_OK); /* unpadded */
    CHECK(n == 5 && memcmp(buf, "VALID", 5) == 0);
    CHECK_EQ_INT(tf_base64_decode("", buf, sizeof buf, &n), FFU_OK);
    CHECK_EQ_INT(n, 0);
    CHECK_EQ_INT(tf_base64_decode("U0F*RQ==", buf, sizeof buf, &n), FFU_ERR_FORMAT);
    CHECK_EQ_INT(tf_base64_decode("U0FNRQ=x", buf, sizeof buf, &n), FFU_ERR_FORMAT);
    CHECK_EQ_INT(tf_base64_decode("U", buf, sizeof buf, &n), FFU_ERR_FORMAT);
    CHECK_EQ_INT(tf_base64_decode("U0FNRQ==", buf, 3, &n), FFU_ERR_FORMAT); /* too long */
}

static int find_op(const nn_graph *g, nn_op op)
{
    for (int i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == op) return i;
    return -1;
}

static void test_tiny_model(void)
{
    uint8_t bin[TINY_BIN];
    tiny_weights(bin);
    nn_graph *g = NULL;
    ffu_status st = nn_tfjs_load(TINY_JSON, strlen(TINY_JSON), bin, sizeof bin, &g);
    if (st < 0) fprintf(stderr, "load: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_STR(g->format, "tfjs");
    CHECK_STR(g->producer, "hand");
    CHECK_EQ_INT(g->ninputs, 1);
    const nn_tensor *x = &g->tensors[g->inputs[0]];
    CHECK_STR(x->name, "x");
    CHECK_EQ_INT(x->shape.rank, 4);
    CHECK(x->shape.d[0] == 1 && x->shape.d[1] == 4 && x->shape.d[2] == 4 && x->shape.d[3] == 2);
    CHECK_EQ_INT(g->noutputs, 1);
    CHECK_STR(g->tensors[g->outputs[0]].name, "out");
    /* Transpose, Conv, Relu, Transpose, PRelu, ReduceMean, Identity */
    CHECK_EQ_INT(g->nnodes, 7);
    CHECK_EQ_INT(test_nn_count_op(g, NN_OP_TRANSPOSE), 2);
    int ci = find_op(g, NN_OP_CONV);
    CHECK(ci >= 0);
    const nn_node *conv = &g->nodes[ci];
    CHECK_EQ_INT(conv->ninputs, 3);
    const nn_tensor *w = nn_in(g, conv, 1);
    CHECK(w->shape.rank == 4 && w->shape.d[0] == 3 && w->shape.d[1] == 2 && w->shape.d[2] == 3 &&
          w->shape.d[3] == 3);
    /* OIHW[o][i][h][w] == HWIO[h][w][i][o] */
    const float *wd = w->data;
    for (int o = 0; o < 3; o++)
        for (int i = 0; i < 2; i++)
            for (int h = 0; h < 3; h++)
                for (int k = 0; k < 3; k++)
                    CHECK(wd[((o * 2 + i) * 3 + h) * 3 + k] == tiny_w[((h * 3 + k) * 2 + i) * 3 + o]);
    int n;
    const int64_t *strides = nn_attr_ints(conv, "strides", &n);
    CHECK(n == 2 && strides[0] == 2 && strides[1] == 2);
    const int64_t *pads = nn_attr_ints(conv, "pads", &n);
    if (pads) { /* explicit when shape inference of the ops was available */
        CHECK(n == 4 && pads[0] == 0 && pads[1] == 0 && pads[2] == 1 && pads[3] == 1);
        CHECK_STR(nn_attr_string(conv, "auto_pad", "NOTSET"), "NOTSET");
    } else {
        CHECK_STR(nn_attr_string(conv, "auto_pad", ""), "SAME_UPPER");
    }
    /* f16 alpha decoded; axes became i64 */
    int pi = find_op(g, NN_OP_PRELU);
    CHECK(pi >= 0);
    const nn_tensor *al = nn_in(g, &g->nodes[pi], 1);
    CHECK(al->dtype == FFU_DTYPE_F32 && ((const float *)al->data)[1] == -0.5f);
    int ri = find_op(g, NN_OP_REDUCE_MEAN);
    CHECK(ri >= 0);
    const nn_tensor *ax = nn_in(g, &g->nodes[ri], 1);
    CHECK(ax->dtype == FFU_DTYPE_I64 && ((const int64_t *)ax->data)[1] == 2);
    CHECK_EQ_INT(nn_attr_int(&g->nodes[ri], "keepdims", 1), 0);

    /* numbers: the loaded graph, then after the rewrites, against the direct result */
    float xin[32], expect[3];
    uint64_t seed = 3;
    for (int i = 0; i < 32; i++) xin[i] = test_rand_f(&seed) * 2 - 1;
    tiny_expected(xin, expect);
    nn_shape xs = {.rank = 4, .d = {1, 4, 4, 2}};
    const float *inputs[1] = {xin};
    nn_graph *g2 = NULL;
    CHECK_EQ_INT(nn_graph_clone(g, &g2), FFU_OK);
    CHECK_EQ_INT(nn_rewrite_patterns(g2), FFU_OK);
    printf("tiny: %d nodes, %d transposes -> %d nodes, %d transposes\n", g->nnodes,
           test_nn_count_op(g, NN_OP_TRANSPOSE), g2->nnodes, test_nn_count_op(g2, NN_OP_TRANSPOSE));
    CHECK(test_nn_count_op(g2, NN_OP_TRANSPOSE) <= 2);
    for (int pass = 0; pass < 2; pass++) {
        nn_graph *gg = pass ? g2 : g;
        test_nn_run r;
        st = test_nn_run_graph(gg, &xs, inputs, &r);
        if (st == FFU_ERR_UNSUPPORTED) {
            test_nn_run_free(&r);
            printf("tiny: ref kernels missing, numeric check skipped\n");
            break;
        }
        if (st < 0) fprintf(stderr, "run: %s\n", ffu_error_message());
        CHECK_EQ_INT(st, FFU_OK);
        const float *y = test_nn_output(gg, &r, 0);
        for (int o = 0; o < 3; o++) CHECK_NEAR(y[o], expect[o], 1e-5);
        test_nn_run_free(&r);
    }
    nn_graph_destroy(g2);
    nn_graph_destroy(g);
}

/* Einsum "ij,jk->ki" of a placeholder and a constant: the equation decoded and the
 * numbers. */
static const char EINSUM_JSON[] =
    "{\"format\":\"graph-model\",\"modelTopology\":{\"node\":["
    "{\"name\":\"x\",\"op\":\"Placeholder\",\"attr\":{\"dtype\":{\"type\":\"DT_FLOAT\"},"
    "\"shape\":{\"shape\":{\"dim\":[{\"size\":\"2\"},{\"size\":\"3\"}]}}}},"
    "{\"name\":\"w\",\"op\":\"Const\"},"
    "{\"name\":\"e\",\"op\":\"Einsum\",\"input\":[\"x\",\"w\"],"
    "\"attr\":{\"equation\":{\"s\":\"aWosamstPmtp\"},\"N\":{\"i\":\"2\"}}},"
    "{\"name\":\"out\",\"op\":\"Identity\",\"input\":[\"e\"]}]},"
    "\"weightsManifest\":[{\"paths\":[\"m.bin\"],\"weights\":["
    "{\"name\":\"w\",\"shape\":[3,4],\"dtype\":\"float32\"}]}]}";

static void test_einsum(void)
{
    float w[12], x[6];
    uint64_t seed = 5;
    for (int i = 0; i < 12; i++)
        w[i] = test_rand_f(&seed) - 0.5f;
    for (int i = 0; i < 6; i++)
        x[i] = test_rand_f(&seed) - 0.5f;
    nn_graph *g = NULL;
    ffu_status st = nn_tfjs_load(EINSUM_JSON, strlen(EINSUM_JSON), w, sizeof w, &g);
    if (st < 0) fprintf(stderr, "load: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    int ei = find_op(g, NN_OP_EINSUM);
    CHECK(ei >= 0);
    CHECK_STR(nn_attr_string(&g->nodes[ei], "equation", ""), "ij,jk->ki");
    nn_shape xs = {.rank = 2, .d = {2, 3}};
    const float *inputs[1] = {x};
    test_nn_run r;
    st = test_nn_run_graph(g, &xs, inputs, &r);
    CHECK_EQ_INT(st, FFU_OK);
    const float *y = test_nn_output(g, &r, 0);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 2; i++) {
            double sum = 0;
            for (int j = 0; j < 3; j++)
                sum += (double)x[i * 3 + j] * w[j * 4 + k];
            CHECK_NEAR(y[k * 2 + i], sum, 1e-6);
        }
    test_nn_run_free(&r);
    nn_graph_destroy(g);
}

/* ---- hostile inputs ---------------------------------------------------------------------- */

/* TINY_JSON with the first `from` replaced by `to`. */
static char *variant(const char *from, const char *to)
{
    const char *p = strstr(TINY_JSON, from);
    if (!p) return NULL;
    size_t a = (size_t)(p - TINY_JSON), lf = strlen(from), lt = strlen(to);
    char *s = malloc(sizeof TINY_JSON + lt);
    memcpy(s, TINY_JSON, a);
    memcpy(s + a, to, lt);
    strcpy(s + a + lt, p + lf);
    return s;
}

static ffu_status load_variant(const char *from, const char *to, size_t bin_len,
                               const char *expect_in_msg)
{
    uint8_t bin[TINY_BIN + 16] = {0};
    tiny_weights(bin);
    char *json = from ? variant(from, to) : strdup(TINY_JSON);
    if (!json) {
        fprintf(stderr, "variant: '%s' not in the template\n", from);
        return FFU_ERR_INTERNAL;
    }
    nn_graph *g = (nn_graph *)1;
    ffu_status st = nn_tfjs_load(json, strlen(json), bin, bin_len, &g);
    free(json);
    if (st < 0 && g != NULL) return FFU_ERR_INTERNAL; /* out-param must be NULL */
    if (st >= 0) nn_graph_destroy(g);
    const char *msg = ffu_error_message();
    if (st < 0 && expect_in_msg && !strstr(msg, expect_in_msg)) {
        fprintf(stderr, "message '%s' lacks '%s'\n", msg, expect_in_msg);
        return FFU_ERR_INTERNAL;
    }
    if (st < 0) printf("  rejected: %s\n", msg);
    return st;
}

static void test_hostile(void)
{
    CHECK_EQ_INT(load_variant(NULL, NULL, TINY_BIN, NULL), FFU_OK);
    /* weights: truncated, too long, a shape larger than the bin, overflow, bad dtypes */
    CHECK_EQ_INT(load_variant(NULL, NULL, TINY_BIN - 1, "past the end"), FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant(NULL, NULL, 0, "past the end"), FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant(NULL, NULL, TINY_BIN + 4, "manifest describes"), FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"shape\":[3,3,2,3]", "\"shape\":[3,3,2,300]", TINY_BIN, "past the end"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"shape\":[3,3,2,3]", "\"shape\":[1099511627776,1099511627776]",
                              TINY_BIN, NULL),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"shape\":[3,3,2,3]", "\"shape\":[65536,65536,65536,65536]",
                              TINY_BIN, "too large"),
                 FFU_ERR_TOO_LARGE);
    CHECK_EQ_INT(load_variant("\"shape\":[3,3,2,3]", "\"shape\":[3,3,-2,3]", TINY_BIN, "dimension"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"shape\":[3,3,2,3]", "\"shape\":[1,1,1,1,1,1,1,1,3,3,2,3]", TINY_BIN,
                              "rank"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"shape\":[3,3,2,3]", "\"shape\":\"big\"", TINY_BIN, "no shape"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"dtype\":\"float32\"}", "\"dtype\":\"float99\"}", TINY_BIN,
                              "unknown dtype"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"dtype\":\"float32\"}", "\"dtype\":\"string\"}", TINY_BIN, NULL),
                 FFU_ERR_UNSUPPORTED);
    CHECK_EQ_INT(load_variant("\"quantization\":{\"dtype\":\"float16\"",
                              "\"quantization\":{\"dtype\":\"int3\"", TINY_BIN, "quantization"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("{\"name\":\"b\",\"shape\"", "{\"name\":\"w\",\"shape\"", TINY_BIN,
                              "twice"),
                 FFU_ERR_FORMAT);
    /* graph: dangling references, cycles, duplicates, missing weights */
    CHECK_EQ_INT(load_variant("\"input\":[\"mean\"]", "\"input\":[\"nowhere\"]", TINY_BIN, "nowhere"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"input\":[\"mean\"]", "\"input\":[\"mean:1\"]", TINY_BIN, "output 1"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"input\":[\"x\",\"w\",\"b\",\"^axes\"]",
                              "\"input\":[\"pr\",\"w\",\"b\",\"^axes\"]", TINY_BIN, "cycle"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("{\"name\":\"pr\",", "{\"name\":\"conv\",", TINY_BIN, "twice"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("{\"name\":\"alpha\",\"op\":\"Const\"}",
                              "{\"name\":\"alpha2\",\"op\":\"Const\"}", TINY_BIN, NULL),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("{\"name\":\"pr\",", "{\"name\":\"p:r\",", TINY_BIN, "not valid"),
                 FFU_ERR_FORMAT);
    /* attributes: bad base64, unknown values, wrong forms */
    CHECK_EQ_INT(load_variant("U0FNRQ==", "U0F@RQ==", TINY_BIN, "base64"), FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("U0FNRQ==", "U0FNRQ=Q", TINY_BIN, "base64"), FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("U0FNRQ==", "U0FNRVI=", TINY_BIN, "SAMER"), FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"i\":\"1\"}", "\"i\":\"1x\"}", TINY_BIN, "num_args"), FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("[\"1\",\"2\",\"2\",\"1\"]", "[\"1\",\"2\",\"2\"]", TINY_BIN, "strides"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("[\"1\",\"2\",\"2\",\"1\"]", "[\"1\",\"0\",\"2\",\"1\"]", TINY_BIN,
                              "strides"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("\"keep_dims\":{\"b\":false}", "\"keep_dims\":{\"b\":3}", TINY_BIN,
                              "keep_dims"),
                 FFU_ERR_FORMAT);
    CHECK_EQ_INT(load_variant("Qmlhc0FkZA==", "QmlhcyBBZGQ=", TINY_BIN, "Bias Add"),
                 FFU_ERR_UNSUPPORTED);
    /* unknown ops name the op and the node */
    CHECK_EQ_INT(load_variant("\"op\":\"Prelu\"", "\"op\":\"FancyOp\"", TINY_BIN, "'FancyOp' (node 'pr')"),
                 FFU_ERR_UNSUPPORTED);
    /* not a graph model */
    CHECK_EQ_INT(load_variant("\"graph-model\"", "\"layers-model\"", TINY_BIN, "layers-model"),
                 FFU_ERR_UNSUPPORTED);
    CHECK_EQ_INT(load_variant("\"modelTopology\":{\"node\":[", "\"modelTopology\":{\"nodes\":[",
                              TINY_BIN, "node list"),
                 FFU_ERR_FORMAT);
    /* signature outputs that name nothing */
    CHECK_EQ_INT(load_variant("\"convertedBy\":\"hand\",",
                              "\"convertedBy\":\"hand\",\"signature\":{\"outputs\":{\"o\":{\"name\":\"zz:0\"}}},",
                              TINY_BIN, "signature"),
                 FFU_ERR_FORMAT);

    /* raw JSON: not an object, deep nesting, garbage */
    nn_graph *g = NULL;
    CHECK(nn_tfjs_load("[1,2]", 5, NULL, 0, &g) == FFU_ERR_FORMAT && !g);
    CHECK(nn_tfjs_load("{\"modelTopology\":", 17, NULL, 0, &g) == FFU_ERR_FORMAT && !g);
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 1);
    for (size_t i = 0; i < depth; i++) deep[i] = '[', deep[depth + i] = ']';
    deep[2 * depth] = 0;
    CHECK(nn_tfjs_load(deep, 2 * depth, NULL, 0, &g) < 0 && !g);
    free(deep);
}

/* An explicit signature picks outputs that are not sinks, in document order. */
static void test_signature_outputs(void)
{
    uint8_t bin[TINY_BIN];
    tiny_weights(bin);
    char *json = variant("\"convertedBy\":\"hand\",",
                         "\"convertedBy\":\"hand\",\"signature\":{\"outputs\":{"
                         "\"feat\":{\"name\":\"pr:0\"},\"score\":{\"name\":\"out\","
                         "\"dtype\":\"DT_FLOAT\",\"tensorShape\":{\"dim\":[{\"size\":\"-1\"},{\"size\":\"3\"}]}}}},");
    CHECK(json != NULL);
    nn_graph *g = NULL;
    ffu_status st = nn_tfjs_load(json, strlen(json), bin, sizeof bin, &g);
    free(json);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(g->noutputs, 2);
    CHECK_STR(g->tensors[g->outputs[0]].name, "pr");
    CHECK_STR(g->tensors[g->outputs[1]].name, "out");
    const nn_tensor *o = &g->tensors[g->outputs[1]];
    CHECK(o->shape.rank == 2 && o->shape.d[0] == -1 && o->shape.d[1] == 3);
    nn_graph_destroy(g);
}

static void print_ops(const nn_graph *g)
{
    int counts[NN_OP_COUNT] = {0};
    for (int i = 0; i < g->nnodes; i++) counts[g->nodes[i].op]++;
    printf("   ");
    for (int op = 1; op < NN_OP_COUNT; op++)
        if (counts[op]) printf(" %s:%d", nn_op_name((nn_op)op), counts[op]);
    printf("\n");
}

/* ---- the fuzz seeds: small models covering most translators ------------------------------ */

/* Loads a seed (JSON, NUL, weights), rewrites it and compares the numbers. */
static void check_seed(const char *name, int expect_outputs)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/corpus/tfjs/%s", FFU_TEST_SOURCE_DIR, name);
    size_t len = 0;
    char *data = test_read_file(path, &len);
    CHECK(data != NULL);
    size_t jl = strlen(data); /* the JSON ends at the NUL */
    nn_graph *g = NULL, *g0 = NULL;
    ffu_status st = nn_tfjs_load(data, jl, data + jl + 1, len - jl - 1, &g);
    if (st < 0) fprintf(stderr, "%s: %s\n", name, ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(g->noutputs, expect_outputs);
    CHECK_EQ_INT(nn_graph_clone(g, &g0), FFU_OK);
    int n0 = g->nnodes;
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    printf("%s: %d nodes -> %d after the rewrites\n", name, n0, g->nnodes);
    print_ops(g);
    nn_shape in = g->tensors[g->inputs[0]].shape;
    if (in.d[0] < 0) in.d[0] = 1;
    int64_t ne = nn_shape_numel(&in);
    float *x = malloc((size_t)ne * 4);
    uint64_t seed = 5;
    for (int64_t i = 0; i < ne; i++) x[i] = test_rand_f(&seed) * 2 - 1;
    const float *ins[1] = {x};
    test_nn_run r0, r1;
    ffu_status s0 = test_nn_run_graph(g0, &in, ins, &r0);
    ffu_status s1 = s0 == FFU_OK ? test_nn_run_graph(g, &in, ins, &r1) : s0;
    if (s0 == FFU_OK && s1 == FFU_OK) {
        for (int k = 0; k < g->noutputs; k++) {
            const nn_tensor *a = &g0->tensors[g0->outputs[k]], *b = &g->tensors[g->outputs[k]];
            CHECK(nn_shape_equal(&a->shape, &b->shape) && a->dtype == b->dtype);
            if (a->dtype != FFU_DTYPE_F32) continue;
            const float *pa = test_nn_output(g0, &r0, k), *pb = test_nn_output(g, &r1, k);
            for (int64_t i = 0; i < nn_shape_numel(&a->shape); i++)
                CHECK_NEAR(pa[i], pb[i], 1e-4 * (1 + fabs(pa[i])));
        }
    } else {
        const char *miss = test_nn_missing_op(g0);
        printf("  numeric check skipped: %s%s\n", miss ? "no ref kernel for " : ffu_error_message(),
               miss ? miss : "");
        CHECK(miss != NULL);
    }
    test_nn_run_free(&r0);
    if (s0 == FFU_OK) test_nn_run_free(&r1);
    free(x);
    nn_graph_destroy(g);
    nn_graph_destroy(g0);
    free(data);
}

static void test_seed_models(void)
{
    check_seed("tiny.bin", 1);
    check_seed("spatial.bin", 1);
    check_seed("dense.bin", 2);
    check_seed("patterns.bin", 1);
    check_seed("einsum.bin", 1); /* EINSUM_JSON, with weights */
}

/* ---- the real models ---------------------------------------------------------------------- */

static const struct {
    const char *name;
    int h, w, c, outputs;
} human_models[] = {
    {"blazeface", 256, 256, 3, 4},
    {"blazeface-back", 256, 256, 3, 4},
    {"facemesh-detection-full", 192, 192, 3, 2},
    {"facemesh-detection-short", 128, 128, 3, 1},
    {"facemesh", 192, 192, 3, 3},
    {"iris", 64, 64, 3, 1},
    {"mobilefacenet", 112, 112, 3, 1},
    {"mobileface", 112, 112, 3, 1},
    {"faceres", 224, 224, 3, 3},
    {"antispoof", 128, 128, 3, 1},
    {"liveness", 32, 32, 3, 1},
    {"gear", 198, 198, 3, 3},
    {"emotion", 64, 64, 1, 1},
};

static void test_real_models(void)
{
    char dir[512];
    test_model_dir(dir, sizeof dir);
    int loaded = 0;
    for (size_t m = 0; m < sizeof human_models / sizeof human_models[0]; m++) {
        char jp[1024], bp[1024];
        snprintf(jp, sizeof jp, "%s/%s.json", dir, human_models[m].name);
        snprintf(bp, sizeof bp, "%s/%s.bin", dir, human_models[m].name);
        size_t jl = 0, bl = 0;
        char *json = test_read_file(jp, &jl), *bin = test_read_file(bp, &bl);
        if (!json || !bin) {
            free(json), free(bin);
            continue;
        }
        nn_graph *g = NULL;
        ffu_status st = nn_tfjs_load(json, jl, bin, bl, &g);
        if (st < 0) fprintf(stderr, "%s: %s\n", human_models[m].name, ffu_error_message());
        CHECK_EQ_INT(st, FFU_OK);
        /* a .bin one byte short or long is rejected: every weight byte is accounted for */
        nn_graph *bad = NULL;
        CHECK_EQ_INT(nn_tfjs_load(json, jl, bin, bl - 1, &bad), FFU_ERR_FORMAT);
        CHECK(!bad);
        CHECK_EQ_INT(g->ninputs, 1);
        nn_shape shp = g->tensors[g->inputs[0]].shape, *is = &shp;
        CHECK_EQ_INT(is->rank, 4);
        CHECK(is->d[1] == human_models[m].h && is->d[2] == human_models[m].w &&
              is->d[3] == human_models[m].c);
        CHECK_EQ_INT(g->noutputs, human_models[m].outputs);
        nn_graph *g0 = NULL; /* the graph as loaded, for the numeric comparison */
        CHECK_EQ_INT(nn_graph_clone(g, &g0), FFU_OK);
        int nodes0 = g->nnodes, tr0 = test_nn_count_op(g, NN_OP_TRANSPOSE);
        int same = 0;
        for (int i = 0; i < g->nnodes; i++)
            same += !strcmp(nn_attr_string(&g->nodes[i], "auto_pad", "NOTSET"), "SAME_UPPER");
        CHECK_EQ_INT(nn_rewrite_transposes(g), FFU_OK);
        int nodes1 = g->nnodes, tr1 = test_nn_count_op(g, NN_OP_TRANSPOSE);
        CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
        int nodes2 = g->nnodes, tr2 = test_nn_count_op(g, NN_OP_TRANSPOSE);
        printf("%-26s in %lldx%lldx%lldx%lld, %d outputs: %d nodes (%d transposes, %d SAME "
               "unresolved) -> transposes pass %d nodes (%d transposes) -> patterns %d nodes "
               "(%d transposes)\n",
               human_models[m].name, (long long)is->d[0], (long long)is->d[1],
               (long long)is->d[2], (long long)is->d[3], g->noutputs, nodes0, tr0, same, nodes1,
               tr1, nodes2, tr2);
        print_ops(g);
        CHECK(tr1 < tr0 / 2 + 1);
        CHECK(nodes2 <= nodes1);
        /* gear's batch norms after ReLU fold into the next Conv through the max pool
         * (four of five; the last feeds the global max) */
        if (!strcmp(human_models[m].name, "gear")) CHECK_EQ_INT(test_nn_count_op(g, NN_OP_MUL), 1);
        CHECK(tr2 <= g->noutputs + 8);
        for (int i = 0; i < g->noutputs; i++) CHECK(g->tensors[g->outputs[i]].producer >= 0);
        /* same numbers before and after the rewrites (ref kernels, random input) */
        nn_shape in1 = shp;
        in1.d[0] = 1;
        int64_t ne = nn_shape_numel(&in1);
        float *x = malloc((size_t)ne * sizeof(float));
        uint64_t seed = 11;
        for (int64_t i = 0; i < ne; i++) x[i] = test_rand_f(&seed) * 2 - 1;
        const float *ins[1] = {x};
        test_nn_run r0, r1;
        ffu_status s0 = test_nn_run_graph(g0, &in1, ins, &r0);
        ffu_status s1 = s0 == FFU_OK ? test_nn_run_graph(g, &in1, ins, &r1) : FFU_ERR_UNSUPPORTED;
        if (s0 == FFU_OK && s1 == FFU_OK) {
            double worst = 0;
            for (int k = 0; k < g->noutputs; k++) {
                const nn_tensor *o0 = &g0->tensors[g0->outputs[k]], *o1 = &g->tensors[g->outputs[k]];
                CHECK(nn_shape_equal(&o0->shape, &o1->shape));
                const float *a = test_nn_output(g0, &r0, k), *b = test_nn_output(g, &r1, k);
                int64_t n = nn_shape_numel(&o0->shape);
                double mag = 0, diff = 0;
                for (int64_t i = 0; i < n; i++) {
                    mag = fmax(mag, fabs(a[i]));
                    diff = fmax(diff, fabs(a[i] - b[i]));
                }
                worst = fmax(worst, diff / fmax(mag, 1e-3));
            }
            printf("    rewritten vs loaded: max relative diff %.3g\n", worst);
            CHECK(worst < 1e-4);
        } else {
            const char *miss = test_nn_missing_op(g0);
            const test_nn_run *fr = s0 == FFU_OK ? &r1 : &r0;
            const nn_graph *bg = s0 == FFU_OK ? g : g0;
            if (!miss && fr->failed_node >= 0)
                printf("    node %d (%s '%s') failed\n", fr->failed_node,
                       nn_op_name(bg->nodes[fr->failed_node].op), bg->nodes[fr->failed_node].name);
            printf("    numeric check skipped: %s%s\n",
                   miss ? "no ref kernel for " : ffu_error_message(), miss ? miss : "");
            CHECK(miss != NULL); /* with every kernel present, both runs must work */
        }
        test_nn_run_free(&r0);
        if (s0 == FFU_OK) test_nn_run_free(&r1);
        free(x);
        nn_graph_destroy(g);
        nn_graph_destroy(g0);
        free(json), free(bin);
        loaded++;
    }
    if (!loaded) TEST_SKIP("no human-models in the model cache");
}

TEST_MAIN(test_base64, test_tiny_model, test_einsum, test_hostile, test_signature_outputs,
          test_seed_models, test_real_models)
