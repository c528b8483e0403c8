/* Tests of the face-api.js weights loader (src/nn/tfjs/faceapi.c), which builds dlib's
 * face recognition ResNet from a bare weights manifest. A generator here writes a tiny
 * but complete manifest of that network (widths 1, 2, 2, 3 instead of 32, 64, 128, 256;
 * a 4-d descriptor; float32 and uint8-quantised weights in two groups), loads it through
 * the public API and runs it on the `ref` and `cpu` backends, batch 1 and 2, against a
 * direct NHWC computation of the network written in this file from the published
 * description (not from the engine's ops). Malformed manifests must fail with a reason
 * and never crash. The committed fuzz seed tests/fixtures/corpus/tfjs/faceapi_tiny.bin
 * is the generator's output (rewrite it with FFU_WRITE_SEEDS=1 after changing the
 * generator). With the real face_recognition_model in the model cache, it loads from
 * its file and gives the direct computation's 128 numbers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/nn.h"
#include "nn/ir.h"
#include "nn/rewrite.h"
#include "nn/tfjs/tfjs.h"
#include "test.h"
#include "test_nn_run.h"

/* ---- a network's weights, as the manifest describes them ----------------------------- */

#define MAX_WEIGHTS 160
#define IN_SIZE 150

typedef struct fw {
    char name[64];
    int rank;
    int64_t d[4];
    int64_t n; /* values */
    int quant; /* stored as uint8: value = q * scale + min (in float, as TF.js does) */
    float scale, min;
    float *v;   /* the values the loader must decode */
    uint8_t *q; /* quant: the stored bytes */
} fw;

typedef struct fnet {
    fw w[MAX_WEIGHTS];
    int n;
    int split; /* weights [0, split) are group 1, the rest group 2 */
} fnet;

static void net_free(fnet *net)
{
    if (!net) return;
    for (int i = 0; i < net->n; i++)
        free(net->w[i].v), free(net->w[i].q);
    free(net);
}

static fw *net_find(fnet *net, const char *name)
{
    for (int i = 0; i < net->n; i++)
        if (!strcmp(net->w[i].name, name)) return &net->w[i];
    return NULL;
}

/* (Re)fills w's values for its shape: uniform in [lo, hi), or quantised over that range. */
static void fw_fill(fw *w, float lo, float hi, uint64_t *seed)
{
    w->n = 1;
    for (int i = 0; i < w->rank; i++)
        w->n *= w->d[i];
    free(w->v), free(w->q);
    w->v = malloc((size_t)(w->n ? w->n : 1) * sizeof(float));
    w->q = w->quant ? malloc((size_t)(w->n ? w->n : 1)) : NULL;
    w->min = lo;
    w->scale = (hi - lo) / 255.0f;
    for (int64_t i = 0; i < w->n; i++) {
        if (w->quant) {
            w->q[i] = (uint8_t)(test_rand_u64(seed) >> 56);
            w->v[i] = (float)w->q[i] * w->scale + w->min;
        } else {
            w->v[i] = lo + (hi - lo) * test_rand_f(seed);
        }
    }
}

static fw *net_add(fnet *net, const char *name, int rank, const int64_t *d, int quant, float lo,
                   float hi, uint64_t *seed)
{
    if (net->n == MAX_WEIGHTS) return NULL;
    fw *w = &net->w[net->n++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    w->rank = rank;
    memcpy(w->d, d, (size_t)rank * sizeof(int64_t));
    w->quant = quant;
    fw_fill(w, lo, hi, seed);
    return w;
}

static void net_remove(fnet *net, const char *name)
{
    fw *w = net_find(net, name);
    if (!w) return;
    int i = (int)(w - net->w);
    free(w->v), free(w->q);
    memmove(&net->w[i], &net->w[i + 1], (size_t)(net->n - i - 1) * sizeof(fw));
    net->n--;
    if (i < net->split) net->split--;
}

/* Gives weight `name` a new shape (and new values to match it). */
static void net_reshape(fnet *net, const char *name, int rank, const int64_t *d)
{
    fw *w = net_find(net, name);
    if (!w) return;
    uint64_t seed = 99;
    w->rank = rank;
    memcpy(w->d, d, (size_t)rank * sizeof(int64_t));
    fw_fill(w, -0.5f, 0.5f, &seed);
}

/* One dlib "conv": filters [k,k,cin,cout], bias, then the affine layer's scale/weights
 * and scale/biases. Scales are kept positive and shifts mostly positive so that a
 * one-channel stage does not die under ReLU. */
static void add_conv(fnet *net, const char *prefix, int k, int cin, int cout, int quant_filters,
                     uint64_t *seed)
{
    char name[64];
    float a = 1.7f / sqrtf((float)(k * k * cin));
    int64_t fd[4] = {k, k, cin, cout}, vd[1] = {cout};
    snprintf(name, sizeof name, "%.40s/conv/filters", prefix);
    net_add(net, name, 4, fd, quant_filters, -a, a, seed);
    snprintf(name, sizeof name, "%.40s/conv/bias", prefix);
    net_add(net, name, 1, vd, 0, -0.05f, 0.05f, seed);
    snprintf(name, sizeof name, "%.40s/scale/weights", prefix);
    net_add(net, name, 1, vd, 0, 0.5f, 1.2f, seed);
    snprintf(name, sizeof name, "%.40s/scale/biases", prefix);
    net_add(net, name, 1, vd, 0, -0.05f, 0.25f, seed);
}

static const struct {
    const char *name;
    int down, stage; /* stage: index of the block's width */
} BLOCKS[] = {
    {"conv32_1", 0, 0},  {"conv32_2", 0, 0},         {"conv32_3", 0, 0},     {"conv64_down", 1, 1},
    {"conv64_1", 0, 1},  {"conv64_2", 0, 1},         {"conv64_3", 0, 1},     {"conv128_down", 1, 2},
    {"conv128_1", 0, 2}, {"conv128_2", 0, 2},        {"conv256_down", 1, 3}, {"conv256_1", 0, 3},
    {"conv256_2", 0, 3}, {"conv256_down_out", 1, 3},
};
enum { NBLOCKS = sizeof BLOCKS / sizeof BLOCKS[0] };

/* The tiny network: stage widths w[4], a d-wide descriptor. The first conv, every
 * second conv of a block, one affine scale and fc are uint8-quantised; the rest are
 * float32. Two manifest groups, split after conv64_3. */
static fnet *tiny_net(const int w[4], int d)
{
    fnet *net = calloc(1, sizeof *net);
    if (!net) return NULL;
    uint64_t seed = 2024;
    add_conv(net, "conv32_down", 7, 3, w[0], 1, &seed);
    int ch = w[0];
    for (int b = 0; b < NBLOCKS; b++) {
        char p[64];
        int out = w[BLOCKS[b].stage];
        snprintf(p, sizeof p, "%.40s/conv1", BLOCKS[b].name);
        add_conv(net, p, 3, ch, out, 0, &seed);
        snprintf(p, sizeof p, "%.40s/conv2", BLOCKS[b].name);
        add_conv(net, p, 3, out, out, 1, &seed);
        ch = out;
        if (!strcmp(BLOCKS[b].name, "conv64_3")) net->split = net->n;
    }
    int64_t fd[2] = {ch, d};
    net_add(net, "fc", 2, fd, 1, -0.6f, 0.6f, &seed);
    fw *s = net_find(net, "conv64_down/conv1/scale/weights");
    s->quant = 1;
    fw_fill(s, 0.5f, 1.2f, &seed);
    return net;
}

static const int TINY_W[4] = {1, 2, 2, 3};
enum { TINY_D = 4 };

/* ---- the manifest and weights bytes ----------------------------------------------------- */

typedef struct blob {
    char *json;
    size_t json_len;
    uint8_t *bin;
    size_t bin_len;
} blob;

static void blob_free(blob *b)
{
    free(b->json), free(b->bin);
    memset(b, 0, sizeof *b);
}

static void put(char **s, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char **s, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*s ? *s + *len : NULL, *s ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (*s && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return;
        }
        size_t nc = (*cap + (size_t)n + 1) * 2;
        char *ns = realloc(*s, nc);
        if (!ns) return;
        *s = ns;
        *cap = nc;
    }
}

static void put_weight(char **s, size_t *len, size_t *cap, const fw *w, int last)
{
    put(s, len, cap, "\n    {\"name\":\"%s\",\"shape\":[", w->name);
    for (int i = 0; i < w->rank; i++)
        put(s, len, cap, "%s%lld", i ? "," : "", (long long)w->d[i]);
    put(s, len, cap, "],\"dtype\":\"float32\"");
    if (w->quant) /* %.9g: the float reads back exactly */
        put(s, len, cap, ",\"quantization\":{\"dtype\":\"uint8\",\"scale\":%.9g,\"min\":%.9g}",
            (double)w->scale, (double)w->min);
    put(s, len, cap, "}%s", last ? "" : ",");
}

/* The manifest as face-api.js writes it (a JSON list of groups) and the weights of
 * every group concatenated. Group 1 lists "weights" before "paths", group 2 after. */
static int net_write(const fnet *net, blob *out)
{
    char *s = NULL;
    size_t len = 0, cap = 0;
    put(&s, &len, &cap, "[\n  {\"weights\":[");
    for (int i = 0; i < net->split; i++)
        put_weight(&s, &len, &cap, &net->w[i], i == net->split - 1);
    put(&s, &len, &cap, "],\n  \"paths\":[\"faceapi_tiny-shard1\"]},\n");
    put(&s, &len, &cap, "  {\"paths\":[\"faceapi_tiny-shard2\"],\"weights\":[");
    for (int i = net->split; i < net->n; i++)
        put_weight(&s, &len, &cap, &net->w[i], i == net->n - 1);
    put(&s, &len, &cap, "]}\n]\n");
    size_t nb = 0;
    for (int i = 0; i < net->n; i++)
        nb += (size_t)net->w[i].n * (net->w[i].quant ? 1 : 4);
    uint8_t *bin = malloc(nb ? nb : 1), *p = bin;
    if (!s || !bin) {
        free(s), free(bin);
        return -1;
    }
    for (int i = 0; i < net->n; i++) {
        const fw *w = &net->w[i];
        size_t k = (size_t)w->n * (w->quant ? 1 : 4);
        memcpy(p, w->quant ? (const void *)w->q : (const void *)w->v, k); /* little endian */
        p += k;
    }
    out->json = s;
    out->json_len = len;
    out->bin = bin;
    out->bin_len = nb;
    return 0;
}

/* ---- the network computed directly (NHWC, one image) ------------------------------------ */

typedef struct act {
    int h, w, c;
    float *d; /* [h][w][c] */
} act;

static act act_new(int h, int w, int c)
{
    act a = {h, w, c, calloc((size_t)h * (size_t)w * (size_t)c, sizeof(float))};
    return a;
}

static const float *wv(fnet *net, const char *prefix, const char *suffix)
{
    char name[96];
    snprintf(name, sizeof name, "%.40s/%.40s", prefix, suffix);
    fw *w = net_find(net, name);
    return w ? w->v : NULL;
}

/* conv k x k (stride; 'same' pads k/2 on every side, else 'valid'), + bias, * scale,
 * + shift, optional ReLU. Accumulates in double. */
static act ref_conv(fnet *net, const char *prefix, const act *x, int stride, int same, int relu)
{
    char p[96];
    snprintf(p, sizeof p, "%.40s/conv/filters", prefix);
    const fw *f = net_find(net, p);
    int k = (int)f->d[0], cin = (int)f->d[2], cout = (int)f->d[3], pad = same ? k / 2 : 0;
    snprintf(p, sizeof p, "%.40s/conv", prefix);
    const float *bias = wv(net, p, "bias");
    snprintf(p, sizeof p, "%.40s/scale", prefix);
    const float *sw = wv(net, p, "weights"), *sb = wv(net, p, "biases");
    int oh = (x->h + 2 * pad - k) / stride + 1, ow = (x->w + 2 * pad - k) / stride + 1;
    act y = act_new(oh, ow, cout);
    for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++)
            for (int o = 0; o < cout; o++) {
                double acc = 0;
                for (int kh = 0; kh < k; kh++) {
                    int ih = i * stride + kh - pad;
                    if (ih < 0 || ih >= x->h) continue;
                    for (int kw = 0; kw < k; kw++) {
                        int iw = j * stride + kw - pad;
                        if (iw < 0 || iw >= x->w) continue;
                        const float *xp = &x->d[((size_t)ih * x->w + iw) * cin];
                        const float *fp = &f->v[(size_t)(kh * k + kw) * cin * cout + o];
                        for (int c = 0; c < cin; c++)
                            acc += (double)xp[c] * fp[(size_t)c * cout];
                    }
                }
                float v = ((float)acc + bias[o]) * sw[o] + sb[o];
                y.d[((size_t)i * ow + j) * cout + o] = relu && v < 0 ? 0 : v;
            }
    return y;
}

/* k x k / stride pooling without padding: max, or average. */
static act ref_pool(const act *x, int k, int stride, int is_max)
{
    int oh = (x->h - k) / stride + 1, ow = (x->w - k) / stride + 1;
    act y = act_new(oh, ow, x->c);
    for (int i = 0; i < oh; i++)
        for (int j = 0; j < ow; j++)
            for (int c = 0; c < x->c; c++) {
                double acc = is_max ? -1e30 : 0;
                for (int a = 0; a < k; a++)
                    for (int b = 0; b < k; b++) {
                        double v =
                            x->d[((size_t)(i * stride + a) * x->w + j * stride + b) * x->c + c];
                        acc = is_max ? (v > acc ? v : acc) : acc + v;
                    }
                y.d[((size_t)i * ow + j) * x->c + c] = (float)(is_max ? acc : acc / (k * k));
            }
    return y;
}

/* A residual block; a down block adds a 2x2/2 average pool of its input with zero
 * channels appended, its own output zero-extended at the bottom and right to the
 * pooled size. ReLU after the sum. Consumes x. */
static act ref_block(fnet *net, const char *name, int down, act x)
{
    char p[96];
    snprintf(p, sizeof p, "%.40s/conv1", name);
    act a = ref_conv(net, p, &x, down ? 2 : 1, !down, 1);
    snprintf(p, sizeof p, "%.40s/conv2", name);
    act b = ref_conv(net, p, &a, 1, 1, 0);
    free(a.d);
    act s = down ? ref_pool(&x, 2, 2, 0) : x;
    act y = act_new(s.h, s.w, b.c);
    for (int i = 0; i < s.h; i++)
        for (int j = 0; j < s.w; j++)
            for (int c = 0; c < b.c; c++) {
                float v = i < b.h && j < b.w ? b.d[((size_t)i * b.w + j) * b.c + c] : 0;
                if (c < s.c) v += s.d[((size_t)i * s.w + j) * s.c + c];
                y.d[((size_t)i * s.w + j) * b.c + c] = v > 0 ? v : 0;
            }
    if (down) free(s.d);
    free(b.d);
    free(x.d);
    return y;
}

/* The descriptor of one 150x150x3 RGB image (0..255); out gets fc's width. */
static void ref_forward(fnet *net, const float *img, float *out)
{
    static const float mean[3] = {122.782f, 117.001f, 104.298f};
    act x = act_new(IN_SIZE, IN_SIZE, 3);
    for (int i = 0; i < IN_SIZE * IN_SIZE * 3; i++)
        x.d[i] = (img[i] - mean[i % 3]) / 256.0f;
    act c = ref_conv(net, "conv32_down", &x, 2, 0, 1);
    free(x.d);
    x = ref_pool(&c, 3, 2, 1);
    free(c.d);
    for (int b = 0; b < NBLOCKS; b++)
        x = ref_block(net, BLOCKS[b].name, BLOCKS[b].down, x);
    const fw *fc = net_find(net, "fc");
    int C = (int)fc->d[0], D = (int)fc->d[1];
    for (int o = 0; o < D; o++) {
        double acc = 0;
        for (int ch = 0; ch < C; ch++) {
            double m = 0;
            for (int i = 0; i < x.h * x.w; i++)
                m += x.d[(size_t)i * C + ch];
            acc += m / (x.h * x.w) * fc->v[(size_t)ch * D + o];
        }
        out[o] = (float)acc;
    }
    free(x.d);
}

static void random_image(float *img, uint64_t seed)
{
    for (int i = 0; i < IN_SIZE * IN_SIZE * 3; i++)
        img[i] = 255.0f * test_rand_f(&seed);
}

/* max |a - b| over max(max |b|, 1e-3): the error relative to the output's magnitude. */
static double rel_err(const float *a, const float *b, int n)
{
    double mag = 1e-3, diff = 0;
    for (int i = 0; i < n; i++) {
        mag = fmax(mag, fabs(b[i]));
        double d = fabs((double)a[i] - b[i]);
        diff = d == d ? fmax(diff, d) : 1e30; /* NaN counts as wrong */
    }
    return diff / mag;
}

/* ---- the tiny network through the public API --------------------------------------------- */

static ffu_nn_session *open_session(const ffu_nn_model *m, const char *backend)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = 2;
    ffu_nn_session *s = NULL;
    if (ffu_nn_session_create(m, &o, &s) < 0)
        fprintf(stderr, "session (%s): %s\n", backend, ffu_error_message());
    return s;
}

/* Runs n images (n x 150 x 150 x 3) and copies the descriptors (n x d) out. */
static ffu_status run_images(ffu_nn_session *s, const float *img, int n, float *out, int d)
{
    int64_t dims[4] = {n, IN_SIZE, IN_SIZE, 3};
    ffu_status st = ffu_nn_session_set_input_shape(s, 0, 4, dims);
    ffu_nn_tensor t;
    if (st < 0 || (st = ffu_nn_session_input(s, 0, &t)) < 0) return st;
    size_t nb = (size_t)n * IN_SIZE * IN_SIZE * 3 * sizeof(float);
    if (t.nbytes != nb || t.dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_INTERNAL, "input buffer of %zu bytes, expected %zu", t.nbytes,
                             nb);
    memcpy(t.data, img, nb);
    if ((st = ffu_nn_session_run(s)) < 0 || (st = ffu_nn_session_output(s, 0, &t)) < 0) return st;
    if (t.rank != 2 || t.dims[0] != n || t.dims[1] != d || t.dtype != FFU_DTYPE_F32)
        return ffu_error_set(FFU_ERR_INTERNAL, "output of rank %d [%lld, %lld], expected [%d, %d]",
                             t.rank, (long long)t.dims[0], (long long)(t.rank > 1 ? t.dims[1] : 0),
                             n, d);
    memcpy(out, t.data, (size_t)n * (size_t)d * sizeof(float));
    return FFU_OK;
}

/* One input N x 150 x 150 x 3 f32 and one output, `descriptor`: what the loader
 * promises for any face-api.js recognition network. */
static void check_io(const ffu_nn_model *m)
{
    CHECK_EQ_INT(ffu_nn_model_num_inputs(m), 1);
    CHECK_EQ_INT(ffu_nn_model_num_outputs(m), 1);
    ffu_nn_tensor info;
    CHECK_EQ_INT(ffu_nn_model_input(m, 0, &info), FFU_OK);
    CHECK(info.rank == 4 && info.dims[0] == -1 && info.dims[1] == IN_SIZE &&
          info.dims[2] == IN_SIZE && info.dims[3] == 3 && info.dtype == FFU_DTYPE_F32);
    CHECK_EQ_INT(ffu_nn_model_output(m, 0, &info), FFU_OK);
    CHECK_STR(info.name, "descriptor");
}

static void test_tiny_network(void)
{
    fnet *net = tiny_net(TINY_W, TINY_D);
    CHECK(net != NULL);
    blob b = {0};
    CHECK(net_write(net, &b) == 0);
    printf("tiny manifest: %d weights, %zu bytes of JSON, %zu bytes of weights\n", net->n,
           b.json_len, b.bin_len);
    ffu_nn_model *m = NULL;
    ffu_status st = ffu_nn_model_load_memory(b.json, b.json_len, b.bin, b.bin_len, &m);
    if (st < 0) fprintf(stderr, "load: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    check_io(m);

    size_t isz = (size_t)IN_SIZE * IN_SIZE * 3;
    float *img = malloc(2 * isz * sizeof(float));
    CHECK(img != NULL);
    random_image(img, 31);
    random_image(img + isz, 32);
    float want[2][TINY_D];
    ref_forward(net, img, want[0]);
    ref_forward(net, img + isz, want[1]);
    printf("direct: [%g %g %g %g] and [%g %g %g %g]\n", want[0][0], want[0][1], want[0][2],
           want[0][3], want[1][0], want[1][1], want[1][2], want[1][3]);
    /* a network that ReLU killed, or two equal results, would test little */
    double mag = 0, apart = 0;
    for (int i = 0; i < TINY_D; i++)
        mag = fmax(mag, fabs(want[0][i])), apart = fmax(apart, fabs(want[0][i] - want[1][i]));
    CHECK(mag > 1e-2 && apart > 1e-3 * mag);

    static const char *backends[] = {"ref", "cpu"};
    int fail = 0;
    for (int k = 0; k < 2 && !fail; k++) {
        ffu_nn_session *s = open_session(m, backends[k]);
        float one[TINY_D], two[2 * TINY_D];
        ffu_status s1 = s ? run_images(s, img, 1, one, TINY_D) : FFU_ERR_INTERNAL;
        if (s && s1 < 0) fprintf(stderr, "%s batch 1: %s\n", backends[k], ffu_error_message());
        ffu_status s2 = s1 == FFU_OK ? run_images(s, img, 2, two, TINY_D) : s1;
        if (s1 == FFU_OK && s2 < 0)
            fprintf(stderr, "%s batch 2: %s\n", backends[k], ffu_error_message());
        ffu_nn_session_destroy(s);
        if (s1 < 0 || s2 < 0) {
            fail = 1;
            break;
        }
        double e1 = rel_err(one, want[0], TINY_D), e2a = rel_err(two, want[0], TINY_D),
               e2b = rel_err(two + TINY_D, want[1], TINY_D), same = rel_err(two, one, TINY_D);
        printf("%s: worst relative error %.3g (batch 1), %.3g / %.3g (batch 2), batch 2 item 0 "
               "vs batch 1 %.3g\n",
               backends[k], e1, e2a, e2b, same);
        fail = !(e1 < 1e-4 && e2a < 1e-4 && e2b < 1e-4 && same < 1e-5);
    }
    CHECK(!fail);

    /* the same files from disk: the manifest names its shards, read in manifest order */
    const char *dir = test_tmpdir_auto();
    CHECK(dir != NULL);
    char path[512];
    size_t n1 = 0;
    for (int i = 0; i < net->split; i++)
        n1 += (size_t)net->w[i].n * (net->w[i].quant ? 1 : 4);
    const struct {
        const char *name;
        const void *p;
        size_t n;
    } files[] = {{"faceapi_tiny-weights_manifest.json", b.json, b.json_len},
                 {"faceapi_tiny-shard1", b.bin, n1},
                 {"faceapi_tiny-shard2", b.bin + n1, b.bin_len - n1}};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i].name);
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        CHECK(fwrite(files[i].p, 1, files[i].n, f) == files[i].n);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/faceapi_tiny-weights_manifest.json", dir);
    ffu_nn_model *m2 = NULL;
    st = ffu_nn_model_load(path, &m2);
    if (st < 0) fprintf(stderr, "load %s: %s\n", path, ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    ffu_nn_session *s = open_session(m2, "ref");
    float one[TINY_D];
    st = s ? run_images(s, img, 1, one, TINY_D) : FFU_ERR_INTERNAL;
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m2);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK(rel_err(one, want[0], TINY_D) < 1e-4);

    /* white space before the list: still a face-api.js manifest (model.c looks at the
     * first character after it) */
    char *spaced = malloc(b.json_len + 4);
    CHECK(spaced != NULL);
    memcpy(spaced, " \n\t", 3);
    memcpy(spaced + 3, b.json, b.json_len);
    m2 = NULL;
    st = ffu_nn_model_load_memory(spaced, b.json_len + 3, b.bin, b.bin_len, &m2);
    free(spaced);
    if (st < 0) fprintf(stderr, "load with leading space: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    ffu_nn_model_destroy(m2);

    free(img);
    ffu_nn_model_destroy(m);
    blob_free(&b);
    net_free(net);
}

/* ---- malformed and hostile manifests ----------------------------------------------------- */

/* Loads json + bin through the public API: it must fail with `want`, a NULL model and a
 * message holding `in_msg` (when not NULL). 1 when it did. */
static int rejects(const char *what, const char *json, size_t jl, const void *bin, size_t bl,
                   ffu_status want, const char *in_msg)
{
    ffu_nn_model *m = (ffu_nn_model *)&m; /* not NULL, to see that it is cleared */
    ffu_error_clear();
    ffu_status st = ffu_nn_model_load_memory(json, jl, bin, bl, &m);
    const char *msg = ffu_error_message();
    printf("  %-34s -> %d: %s\n", what, (int)st, st < 0 ? msg : "(loaded)");
    if (st >= 0) {
        ffu_nn_model_destroy(m);
        fprintf(stderr, "%s: loaded, expected status %d\n", what, (int)want);
        return 0;
    }
    if (m != NULL) {
        fprintf(stderr, "%s: the model is not NULL after an error\n", what);
        return 0;
    }
    if (st != want) {
        fprintf(stderr, "%s: status %d, expected %d\n", what, (int)st, (int)want);
        return 0;
    }
    if (!msg || !*msg || (in_msg && !strstr(msg, in_msg))) {
        fprintf(stderr, "%s: message '%s' lacks '%s'\n", what, msg ? msg : "",
                in_msg ? in_msg : "");
        return 0;
    }
    return 1;
}

/* The tiny network changed by `edit`, written and loaded; as rejects(). */
static int rejects_net(const char *what, void (*edit)(fnet *), long bin_delta, ffu_status want,
                       const char *in_msg)
{
    fnet *net = tiny_net(TINY_W, TINY_D);
    if (!net) return 0;
    if (edit) edit(net);
    blob b = {0};
    int ok = net_write(net, &b) == 0;
    uint8_t *bin = ok ? calloc(b.bin_len + 8, 1) : NULL; /* room for bin_delta > 0 */
    if (bin) {
        memcpy(bin, b.bin, b.bin_len);
        ok = rejects(what, b.json, b.json_len, bin, (size_t)((long)b.bin_len + bin_delta), want,
                     in_msg);
    }
    free(bin);
    blob_free(&b);
    net_free(net);
    return ok;
}

static void drop_bias(fnet *n) { net_remove(n, "conv64_1/conv2/scale/biases"); }
static void drop_fc(fnet *n) { net_remove(n, "fc"); }
static void wrong_cin(fnet *n)
{
    int64_t d[4] = {3, 3, TINY_W[1] + 1, TINY_W[1]};
    net_reshape(n, "conv64_1/conv1/conv/filters", 4, d);
}
static void wrong_first_cin(fnet *n)
{
    int64_t d[4] = {7, 7, 4, TINY_W[0]};
    net_reshape(n, "conv32_down/conv/filters", 4, d);
}
static void even_kernel(fnet *n)
{
    int64_t d[4] = {2, 2, TINY_W[0], TINY_W[0]};
    net_reshape(n, "conv32_2/conv1/conv/filters", 4, d);
}
static void filter_rank3(fnet *n)
{
    int64_t d[3] = {3, 3, TINY_W[0] * TINY_W[0]};
    net_reshape(n, "conv32_2/conv1/conv/filters", 3, d);
}
static void wrong_bias_len(fnet *n)
{
    int64_t d[1] = {TINY_W[2] + 1};
    net_reshape(n, "conv128_1/conv2/conv/bias", 1, d);
}
static void scale_rank2(fnet *n)
{
    int64_t d[2] = {1, TINY_W[2]};
    net_reshape(n, "conv128_2/conv1/scale/weights", 2, d);
}
static void fc_rank1(fnet *n)
{
    int64_t d[1] = {TINY_W[3] * TINY_D};
    net_reshape(n, "fc", 1, d);
}
static void fc_rank3(fnet *n)
{
    int64_t d[3] = {1, TINY_W[3], TINY_D};
    net_reshape(n, "fc", 3, d);
}
static void fc_wrong_rows(fnet *n)
{
    int64_t d[2] = {TINY_W[3] + 1, TINY_D};
    net_reshape(n, "fc", 2, d);
}
/* A block that changes the width without being a down block (conv32_3 from 1 to 2). */
static void plain_block_widens(fnet *n)
{
    int64_t d1[4] = {3, 3, TINY_W[0], 2}, d2[4] = {3, 3, 2, 2}, v[1] = {2};
    net_reshape(n, "conv32_3/conv1/conv/filters", 4, d1);
    net_reshape(n, "conv32_3/conv1/conv/bias", 1, v);
    net_reshape(n, "conv32_3/conv1/scale/weights", 1, v);
    net_reshape(n, "conv32_3/conv1/scale/biases", 1, v);
    net_reshape(n, "conv32_3/conv2/conv/filters", 4, d2);
    net_reshape(n, "conv32_3/conv2/conv/bias", 1, v);
    net_reshape(n, "conv32_3/conv2/scale/weights", 1, v);
    net_reshape(n, "conv32_3/conv2/scale/biases", 1, v);
}
/* A down block that narrows (conv256_down from 2 to 1 channel, and on). */
static void down_narrows(fnet *n)
{
    static const char *convs[] = {"conv256_down/conv1",     "conv256_down/conv2",
                                  "conv256_1/conv1",        "conv256_1/conv2",
                                  "conv256_2/conv1",        "conv256_2/conv2",
                                  "conv256_down_out/conv1", "conv256_down_out/conv2"};
    for (int i = 0; i < 8; i++) {
        char p[96];
        int64_t d[4] = {3, 3, i == 0 ? TINY_W[2] : 1, 1}, v[1] = {1};
        snprintf(p, sizeof p, "%s/conv/filters", convs[i]);
        net_reshape(n, p, 4, d);
        static const char *vecs[] = {"conv/bias", "scale/weights", "scale/biases"};
        for (int j = 0; j < 3; j++) {
            snprintf(p, sizeof p, "%s/%s", convs[i], vecs[j]);
            net_reshape(n, p, 1, v);
        }
    }
    int64_t fd[2] = {1, TINY_D};
    net_reshape(n, "fc", 2, fd);
}
/* A 7x7 kernel where the feature map is 4x4 (conv256_down_out/conv1): nothing is left. */
static void kernel_too_big(fnet *n)
{
    int64_t d[4] = {7, 7, TINY_W[3], TINY_W[3]};
    net_reshape(n, "conv256_down_out/conv1/conv/filters", 4, d);
}
static void twice(fnet *n) { snprintf(n->w[5].name, sizeof n->w[5].name, "%s", n->w[4].name); }

static void test_hostile(void)
{
    /* the tiny network as generated loads (test_tiny_network), so every failure below
     * is its edit's doing */
    CHECK(rejects_net("missing conv64_1/conv2/scale/biases", drop_bias, 0, FFU_ERR_FORMAT,
                      "conv64_1/conv2/scale/biases"));
    CHECK(rejects_net("missing fc", drop_fc, 0, FFU_ERR_FORMAT, "fc"));
    CHECK(
        rejects_net("filter of 3 input channels", wrong_cin, 0, FFU_ERR_FORMAT, "conv64_1/conv1"));
    CHECK(rejects_net("first filter of 4 input channels", wrong_first_cin, 0, FFU_ERR_FORMAT,
                      "conv32_down"));
    CHECK(rejects_net("2x2 filter", even_kernel, 0, FFU_ERR_FORMAT, "conv32_2/conv1"));
    CHECK(rejects_net("filter of rank 3", filter_rank3, 0, FFU_ERR_FORMAT, "conv32_2/conv1"));
    CHECK(rejects_net("bias of 3 values", wrong_bias_len, 0, FFU_ERR_FORMAT,
                      "conv128_1/conv2/conv/bias"));
    CHECK(rejects_net("scale of rank 2", scale_rank2, 0, FFU_ERR_FORMAT,
                      "conv128_2/conv1/scale/weights"));
    CHECK(rejects_net("fc of rank 1", fc_rank1, 0, FFU_ERR_FORMAT, "fc"));
    CHECK(rejects_net("fc of rank 3", fc_rank3, 0, FFU_ERR_FORMAT, "fc"));
    CHECK(rejects_net("fc of 4 rows", fc_wrong_rows, 0, FFU_ERR_FORMAT, "fc"));
    CHECK(
        rejects_net("plain block that widens", plain_block_widens, 0, FFU_ERR_FORMAT, "conv32_3"));
    CHECK(rejects_net("down block that narrows", down_narrows, 0, FFU_ERR_FORMAT, "conv256_down"));
    CHECK(rejects_net("7x7 filter on a 4x4 map", kernel_too_big, 0, FFU_ERR_FORMAT,
                      "conv256_down_out"));
    CHECK(rejects_net("a weight listed twice", twice, 0, FFU_ERR_FORMAT, "twice"));
    /* weights bytes: one short, one long, none */
    CHECK(rejects_net("weights one byte short", NULL, -1, FFU_ERR_FORMAT, "past the end"));
    CHECK(rejects_net("weights one byte long", NULL, 1, FFU_ERR_FORMAT, "manifest describes"));

    fnet *net = tiny_net(TINY_W, TINY_D);
    CHECK(net != NULL);
    blob b = {0};
    CHECK(net_write(net, &b) == 0);
    net_free(net);
    int ok =
        rejects("no weights at all", b.json, b.json_len, NULL, 0, FFU_ERR_FORMAT, "past the end");
    /* quantisation that is not a number */
    char *q = strdup(b.json), *at = strstr(q, "\"scale\":");
    at[1] = 'S'; /* "Scale": the key is missing */
    ok &= rejects("quantisation without scale", q, strlen(q), b.bin, b.bin_len, FFU_ERR_FORMAT,
                  "scale");
    free(q);
    blob_free(&b);
    CHECK(ok);

    /* manifests that are not a list of groups of weight objects */
    static const struct {
        const char *what, *json;
        ffu_status want;
        const char *msg;
    } raw[] = {
        {"a list of numbers", "[1,2]", FFU_ERR_FORMAT, "weights"},
        {"a list of strings", " \n [\"conv32_down\"]", FFU_ERR_FORMAT, "weights"},
        {"a group whose weights are numbers", "[{\"paths\":[],\"weights\":[1]}]", FFU_ERR_FORMAT,
         "name"},
        {"a group whose weights is an object", "[{\"weights\":{\"name\":\"fc\"}}]", FFU_ERR_FORMAT,
         "weights"},
        {"an unfinished list", "[{\"weights\":[", FFU_ERR_FORMAT, NULL},
        {"an empty list", "[]", FFU_ERR_UNSUPPORTED, "face_recognition_model"},
        {"an empty group", "[{\"paths\":[],\"weights\":[]}]", FFU_ERR_UNSUPPORTED, NULL},
    };
    for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++)
        CHECK(rejects(raw[i].what, raw[i].json, strlen(raw[i].json), NULL, 0, raw[i].want,
                      raw[i].msg));

    /* another face-api.js network (the 68-point landmark net's first weights) */
    static const char other[] =
        "[{\"paths\":[\"face_landmark_68_model-shard1\"],\"weights\":["
        "{\"name\":\"dense0/conv0/filters\",\"shape\":[3,3,3,2],\"dtype\":\"float32\"},"
        "{\"name\":\"dense0/conv0/bias\",\"shape\":[2],\"dtype\":\"float32\"}]}]";
    float ow[56] = {0};
    CHECK(rejects("another network's manifest", other, strlen(other), ow, sizeof ow,
                  FFU_ERR_UNSUPPORTED, "does not know"));

    /* deep nesting of lists must not overflow the stack */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 1);
    CHECK(deep != NULL);
    for (size_t i = 0; i < depth; i++)
        deep[i] = '[', deep[depth + i] = ']';
    deep[2 * depth] = 0;
    ffu_nn_model *m = NULL;
    CHECK(ffu_nn_model_load_memory(deep, 2 * depth, NULL, 0, &m) < 0 && !m);
    free(deep);
    /* and directly: NULL buffers */
    nn_graph *g = (nn_graph *)&g;
    CHECK(nn_faceapi_load(NULL, 0, NULL, 0, &g) == FFU_ERR_INVALID && !g);
    g = (nn_graph *)&g;
    CHECK(nn_faceapi_load("[]", 2, NULL, 5, &g) == FFU_ERR_INVALID && !g);
}

/* A 5x5 filter where the feature map is 4x4 at stride 2 (conv256_down_out/conv1): the
 * kernel does not fit, so the file is not this network. Loading may refuse it, or the
 * first session may; neither may crash or give numbers. */
static void kernel_5_on_4(fnet *n)
{
    int64_t d[4] = {5, 5, TINY_W[3], TINY_W[3]};
    net_reshape(n, "conv256_down_out/conv1/conv/filters", 4, d);
}

static void test_kernel_larger_than_map(void)
{
    fnet *net = tiny_net(TINY_W, TINY_D);
    CHECK(net != NULL);
    kernel_5_on_4(net);
    blob b = {0};
    CHECK(net_write(net, &b) == 0);
    net_free(net);
    ffu_nn_model *m = NULL;
    ffu_status st = ffu_nn_model_load_memory(b.json, b.json_len, b.bin, b.bin_len, &m);
    printf("5x5 filter on a 4x4 map: load %d (%s)\n", (int)st, st < 0 ? ffu_error_message() : "ok");
    blob_free(&b);
    if (st < 0) {
        CHECK(m == NULL);
        return;
    }
    ffu_nn_session *s = open_session(m, "ref");
    float out[TINY_D];
    float *x = malloc((size_t)IN_SIZE * IN_SIZE * 3 * sizeof(float));
    random_image(x, 3);
    st = s ? run_images(s, x, 1, out, TINY_D) : FFU_ERR_FORMAT;
    printf("5x5 filter on a 4x4 map: run %d (%s)\n", (int)st, st < 0 ? ffu_error_message() : "ok");
    free(x);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
    CHECK(st < 0);
}

/* ---- the fuzz seed ------------------------------------------------------------------------ */

static void test_seed(void)
{
    fnet *net = tiny_net(TINY_W, TINY_D);
    CHECK(net != NULL);
    blob b = {0};
    CHECK(net_write(net, &b) == 0);
    net_free(net);
    /* the seed: JSON, one NUL, the weights (fuzz_tfjs's input format) */
    size_t n = b.json_len + 1 + b.bin_len;
    uint8_t *want = malloc(n);
    CHECK(want != NULL);
    memcpy(want, b.json, b.json_len);
    want[b.json_len] = 0;
    memcpy(want + b.json_len + 1, b.bin, b.bin_len);
    blob_free(&b);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/corpus/tfjs/faceapi_tiny.bin",
             FFU_TEST_SOURCE_DIR);
    const char *env = getenv("FFU_WRITE_SEEDS");
    if (env && *env && *env != '0') {
        FILE *f = fopen(path, "wb");
        CHECK(f != NULL);
        CHECK(fwrite(want, 1, n, f) == n);
        fclose(f);
        printf("wrote %s (%zu bytes)\n", path, n);
    }
    size_t len = 0;
    char *data = test_read_file(path, &len);
    if (!data || len != n || memcmp(data, want, n) != 0)
        fprintf(stderr,
                "%s differs from the generator's output: rewrite it with "
                "FFU_WRITE_SEEDS=1 tests/test_nn_faceapi\n",
                path);
    CHECK(data && len == n && memcmp(data, want, n) == 0);
    free(want);
    /* as the fuzz target sees it: loads, one output, the rewrite passes take it */
    size_t jl = strlen(data);
    nn_graph *g = NULL;
    ffu_status st = nn_faceapi_load(data, jl, data + jl + 1, len - jl - 1, &g);
    if (st < 0) fprintf(stderr, "seed: %s\n", ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(g->ninputs, 1);
    CHECK_EQ_INT(g->noutputs, 1);
    CHECK_STR(g->format, "tfjs");
    CHECK_EQ_INT(test_nn_count_op(g, NN_OP_CONV), 29);
    CHECK_EQ_INT(test_nn_count_op(g, NN_OP_MAX_POOL), 1);
    CHECK_EQ_INT(test_nn_count_op(g, NN_OP_AVERAGE_POOL), 4);
    CHECK_EQ_INT(test_nn_count_op(g, NN_OP_MATMUL), 1);
    int n0 = g->nnodes;
    CHECK_EQ_INT(nn_rewrite_transposes(g), FFU_OK);
    CHECK_EQ_INT(nn_rewrite_patterns(g), FFU_OK);
    printf("seed: %zu bytes, %d nodes -> %d after the rewrites\n", len, n0, g->nnodes);
    nn_graph_destroy(g);
    free(data);
}

/* ---- the real model ----------------------------------------------------------------------- */

/* The real manifest and .bin into an fnet (every weight float32 or uint8-quantised). */
static fnet *read_net(const char *json, size_t jl, const uint8_t *bin, size_t bl)
{
    ffu_json *root = NULL;
    if (ffu_json_parse(json, jl, &root) < 0) return NULL;
    fnet *net = calloc(1, sizeof *net);
    size_t off = 0;
    int bad = !net;
    for (size_t g = 0; !bad && g < ffu_json_len(root); g++) {
        const ffu_json *ws = ffu_json_get(ffu_json_at(root, g), "weights");
        for (size_t i = 0; !bad && i < ffu_json_len(ws); i++) {
            const ffu_json *wj = ffu_json_at(ws, i), *sh = ffu_json_get(wj, "shape"),
                           *q = ffu_json_get(wj, "quantization");
            if (net->n == MAX_WEIGHTS || ffu_json_len(sh) > 4) {
                bad = 1;
                break;
            }
            fw *w = &net->w[net->n++];
            const char *nm = ffu_json_string(ffu_json_get(wj, "name"));
            snprintf(w->name, sizeof w->name, "%.63s", nm ? nm : "");
            w->rank = (int)ffu_json_len(sh);
            w->n = 1;
            for (int k = 0; k < w->rank; k++)
                w->n *= w->d[k] = ffu_json_int(ffu_json_at(sh, k), 0);
            w->quant = q != NULL;
            size_t nb = (size_t)w->n * (w->quant ? 1 : 4);
            w->v = malloc((size_t)w->n * sizeof(float));
            if (!w->v || off + nb > bl) {
                bad = 1;
                break;
            }
            if (w->quant) {
                const char *qd = ffu_json_string(ffu_json_get(q, "dtype"));
                if (!qd || strcmp(qd, "uint8") != 0) {
                    bad = 1;
                    break;
                }
                w->scale = (float)ffu_json_number(ffu_json_get(q, "scale"), 0);
                w->min = (float)ffu_json_number(ffu_json_get(q, "min"), 0);
                for (int64_t k = 0; k < w->n; k++)
                    w->v[k] = (float)bin[off + k] * w->scale + w->min;
            } else {
                memcpy(w->v, bin + off, nb);
            }
            off += nb;
        }
    }
    ffu_json_free(root);
    if (bad || off != bl) {
        net_free(net);
        return NULL;
    }
    return net;
}

/* The cpu plan of the real model at batch 2 (the embedder's crop and its mirror):
 * layout conversions and Winograd nodes from describe; -1 each when there is no cpu
 * backend. */
static void plan_counts(const ffu_nn_model *m, int no_winograd, int *reorders, int *wino)
{
    *reorders = *wino = -1;
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.threads = 1;
    o.no_winograd = no_winograd;
    ffu_nn_session *s = NULL;
    ffu_jw *w = NULL;
    ffu_json *d = NULL;
    int64_t dims[4] = {2, IN_SIZE, IN_SIZE, 3};
    ffu_nn_tensor t;
    const char *js;
    if (ffu_nn_session_create(m, &o, &s) == FFU_OK &&
        ffu_nn_session_set_input_shape(s, 0, 4, dims) == FFU_OK &&
        ffu_nn_session_input(s, 0, &t) == FFU_OK && ffu_jw_create(&w, 0) == FFU_OK &&
        ffu_nn_session_describe(s, w) == FFU_OK && (js = ffu_jw_text(w, NULL)) != NULL &&
        ffu_json_parse(js, strlen(js), &d) == FFU_OK &&
        ffu_json_get(ffu_json_get(d, "nodes_per_backend"), "cpu")) {
        *reorders = (int)ffu_json_int(ffu_json_get(d, "reorders"), -1);
        *wino = (int)ffu_json_int(ffu_json_get(d, "winograd_nodes"), -1);
    }
    ffu_json_free(d);
    ffu_jw_destroy(w);
    ffu_nn_session_destroy(s);
}

static void test_real_model(void)
{
    char dir[512], jp[1024], bp[1024];
    test_model_dir(dir, sizeof dir);
    snprintf(jp, sizeof jp, "%s/face_recognition_model-weights_manifest.json", dir);
    snprintf(bp, sizeof bp, "%s/face_recognition_model.bin", dir);
    size_t jl = 0, bl = 0;
    char *json = test_read_file(jp, &jl), *bin = test_read_file(bp, &bl);
    if (!json || !bin) {
        free(json), free(bin);
        TEST_SKIP("face_recognition_model not in the model cache");
    }
    ffu_nn_model *m = NULL;
    ffu_status st = ffu_nn_model_load(jp, &m);
    if (st < 0) fprintf(stderr, "%s: %s\n", jp, ffu_error_message());
    CHECK_EQ_INT(st, FFU_OK);
    check_io(m);
    /* one byte short is refused */
    ffu_nn_model *bad = (ffu_nn_model *)&bad;
    CHECK_EQ_INT(ffu_nn_model_load_memory(json, jl, bin, bl - 1, &bad), FFU_ERR_FORMAT);
    CHECK(bad == NULL);

    fnet *net = read_net(json, jl, (const uint8_t *)bin, bl);
    CHECK(net != NULL);
    CHECK_EQ_INT(net->n, 4 * 29 + 1);
    float *img = malloc((size_t)IN_SIZE * IN_SIZE * 3 * sizeof(float));
    random_image(img, 77);
    float want[128], got[128];
    ref_forward(net, img, want);
    ffu_nn_session *s = open_session(m, "cpu");
    st = s ? run_images(s, img, 1, got, 128) : FFU_ERR_INTERNAL;
    if (st < 0) fprintf(stderr, "run: %s\n", ffu_error_message());
    ffu_nn_session_destroy(s);
    double norm = 0;
    for (int i = 0; i < 128; i++)
        norm += (double)want[i] * want[i];
    double err = st == FFU_OK ? rel_err(got, want, 128) : 1;
    printf("face_recognition_model: %zu bytes of weights, |descriptor| %.4g, first [%g %g %g], "
           "worst relative error vs the direct computation %.3g\n",
           bl, sqrt(norm), want[0], want[1], want[2], err);
    /* The plan: channels-last from the first layer to the last reduction, so no
     * convolution converts layouts (40 conversions per run while the final ReduceMean
     * and a Pad of a 1x1 branch forced NCHW through every residual tie); with AVX-512,
     * the 35x35 layers run Winograd (docs/NN_CPU.md). */
    int reorders, wino, reorders_w, wino_w;
    plan_counts(m, 1, &reorders, &wino);
    plan_counts(m, 0, &reorders_w, &wino_w);
    printf("face_recognition_model plan at batch 2: %d reorders direct; Winograd: %d nodes, "
           "%d reorders\n", reorders, wino_w, reorders_w);
    if (reorders >= 0) {
        CHECK_EQ_INT(reorders, 0);
        CHECK_EQ_INT(wino, 0);
        if (ffu_cpu_features() & FFU_CPU_AVX512F) CHECK(wino_w >= 1);
    }
    free(img);
    net_free(net);
    ffu_nn_model_destroy(m);
    free(json), free(bin);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK(norm > 1e-6);
    CHECK(err < 1e-4);
}

TEST_MAIN(test_tiny_network, test_hostile, test_kernel_larger_than_map, test_seed, test_real_model)
