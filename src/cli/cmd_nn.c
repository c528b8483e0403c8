/* `facefuse nn`: the inference engine from the command line.
 *   nn info MODEL        inputs, outputs, ops, FLOPs, params, the memory plan and which
 *                        backend runs each node
 *   nn run MODEL --input FILE...   one inference on an image or a tensor file
 *   nn test DIR...       ONNX backend conformance folders (model.onnx +
 *                        test_data_set_*), pass / fail / unsupported per folder
 * The conformance runner forks one child per folder so that a crashing kernel is a
 * failed test rather than a dead run. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "facefuse/image.h"
#include "facefuse/nn.h"
#include "nn/ir.h"
#include "nn/onnx/onnx.h"

static const char *const backend_names[] = {"cpu", "ref", "cuda", "all", NULL};
static const char *const norm_names[] = {"unit", "symmetric", "imagenet", "raw", NULL};
static const char *const outfmt_names[] = {"pb", "f32", NULL};

typedef struct {
    cli_common common;
    int backend;
    int threads;
    int batch;
    int no_winograd;
    int no_bands;
    ffu_strlist inputs;
    ffu_strlist shapes;
    ffu_strlist only;
    int norm;
    int bgr;
    char *output_dir;
    int output_format;
    int show;
    double rtol, atol;
    int no_fork;
    int timeout;
    int device, fp16, bf16; /* CLI_MODEL_OPTIONS */
} nn_opts;

static const ffu_option nn_options[] = {
    CLI_COMMON_OPTIONS,
    {"backend", 'b', FFU_OPT_ENUM, offsetof(nn_opts, backend),
     "cpu (oneDNN, ref where it cannot), ref (plain C), cuda (NVIDIA GPU), "
     "all (nn test: cpu and ref)", "cpu", 0, 0,
     backend_names, NULL},
    {"threads", 't', FFU_OPT_INT, offsetof(nn_opts, threads), "worker threads (0 = all CPUs)",
     "0", 0, 1024, NULL, "N"},
    {"batch", 0, FFU_OPT_INT, offsetof(nn_opts, batch), "items per run: dim 0 of inputs declared 1 or dynamic",
     "1", 1, 65536, NULL, "N"},
    CLI_MODEL_OPTIONS(nn_opts),
    CLI_ENGINE_OPTIONS(nn_opts),
    {"input", 'i', FFU_OPT_STRING_LIST, offsetof(nn_opts, inputs),
     "run: an image (.jpg/.png), a TensorProto (.pb) or raw little-endian f32 (.f32) per "
     "model input, in order", NULL, 0, 0, NULL, "FILE"},
    {"shape", 0, FFU_OPT_STRING_LIST, offsetof(nn_opts, shapes),
     "fix an input's shape: NAME=1x3x480x640 (or INDEX=...)", NULL, 0, 0, NULL, "NAME=DIMS"},
    {"only-output", 0, FFU_OPT_STRING_LIST, offsetof(nn_opts, only),
     "info, run: " CLI_ONLY_OUTPUT_HELP, NULL, 0, 0, NULL, "NAME"},
    {"norm", 0, FFU_OPT_ENUM, offsetof(nn_opts, norm),
     "run: image normalisation (unit x/255, symmetric x/127.5-1, imagenet, raw 0..255)", "unit",
     0, 0, norm_names, NULL},
    {"bgr", 0, FFU_OPT_BOOL, offsetof(nn_opts, bgr), "run: feed images as B,G,R", NULL, 0, 0,
     NULL, NULL},
    {"output-dir", 'o', FFU_OPT_STRING, offsetof(nn_opts, output_dir),
     "run: write every output to DIR/NAME.pb (or .f32)", NULL, 0, 0, NULL, "DIR"},
    {"output-format", 0, FFU_OPT_ENUM, offsetof(nn_opts, output_format),
     "run: pb (TensorProto) or f32 (raw little-endian floats)", "pb", 0, 0, outfmt_names, NULL},
    {"show", 0, FFU_OPT_INT, offsetof(nn_opts, show), "run: values printed per output", "8", 0,
     1000000, NULL, "N"},
    {"rtol", 0, FFU_OPT_FLOAT, offsetof(nn_opts, rtol), "test: relative tolerance", "1e-3", 0, 1,
     NULL, "R"},
    {"atol", 0, FFU_OPT_FLOAT, offsetof(nn_opts, atol), "test: absolute tolerance", "1e-7", 0,
     1, NULL, "A"},
    {"no-fork", 0, FFU_OPT_BOOL, offsetof(nn_opts, no_fork),
     "test: run folders in this process (for debuggers)", NULL, 0, 0, NULL, NULL},
    {"timeout", 0, FFU_OPT_INT, offsetof(nn_opts, timeout),
     "test: seconds a folder may take before it counts as failed", "120", 1, 86400, NULL, "S"},
    {0},
};

/* ---- small helpers -------------------------------------------------------------------- */

static char *shape_str(const ffu_nn_tensor *t, char *buf, size_t len)
{
    nn_shape s = {.rank = t->rank};
    for (int k = 0; k < t->rank; k++) s.d[k] = t->dims[k];
    return nn_shape_str(&s, buf, len);
}

static void human_bytes(double b, char *buf, size_t len)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB"};
    int u = 0;
    while (b >= 1024 && u < 3) b /= 1024, u++;
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

/* buf = a/b; 0 (and an empty buf) when it does not fit */
static int path_join(char *buf, size_t len, const char *a, const char *b)
{
    int n = snprintf(buf, len, "%s/%s", a, b);
    if (n < 0 || (size_t)n >= len) {
        buf[0] = 0;
        return 0;
    }
    return 1;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcasecmp(s + a - b, suf) == 0;
}

static ffu_status read_whole(const char *path, void **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ffu_error_set(errno == ENOENT ? FFU_ERR_NOT_FOUND : FFU_ERR_IO, "%s: %s", path,
                             strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > ((off_t)2 << 30)) {
        fclose(f);
        return ffu_error_set(FFU_ERR_IO, "%s: not a regular file under 2 GiB", path);
    }
    size_t n = (size_t)st.st_size;
    void *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", path);
    }
    if (n && fread(buf, 1, n, f) != n) {
        fclose(f);
        free(buf);
        return ffu_error_set(FFU_ERR_IO, "%s: short read", path);
    }
    fclose(f);
    *out = buf;
    *size = n;
    return FFU_OK;
}

/* Applies --batch, --threads, --bf16, --no-winograd, --no-bands, --only-output and --shape
 * NAME=DIMS to a new session. */
static ffu_status open_session(const ffu_nn_model *m, const nn_opts *o, const char *backend,
                               ffu_nn_session **out)
{
    ffu_nn_session_opts so;
    ffu_nn_session_opts_default(&so);
    so.backend = backend;
    so.threads = o->threads;
    so.batch = o->batch;
    so.bf16 = o->bf16;
    so.no_winograd = o->no_winograd;
    so.no_bands = o->no_bands;
    so.device = o->device;
    so.fp16 = o->fp16;
    cli_nn_only_outputs(&o->only, &so);
    ffu_status st = ffu_nn_session_create(m, &so, out);
    if (st < 0) return st;
    for (int k = 0; k < o->shapes.count; k++) {
        if ((st = cli_nn_apply_shape(*out, m, o->shapes.items[k])) < 0) break;
    }
    if (st < 0) {
        ffu_nn_session_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* ---- nn info --------------------------------------------------------------------------- */

static int cmd_info(const cli_command *cmd, nn_opts *o, const char *path)
{
    ffu_nn_model *m = NULL;
    ffu_nn_session *s = NULL;
    ffu_jw *w = NULL;
    ffu_json *desc = NULL;
    char plan_err[512] = "";
    int rc = CLI_EXIT_OK;
    ffu_status st = ffu_nn_model_load(path, &m);
    if (st < 0) return cli_fail(cmd, &o->common, st);
    const char *backend = o->backend == 3 ? "cpu" : backend_names[o->backend];
    ffu_nn_tensor t;
    /* planning happens on first use: asking for input 0 (or running an input-less
     * model) makes it happen */
    st = open_session(m, o, backend, &s);
    if (st == FFU_ERR_NOT_FOUND) { /* a bad --only-output name */
        rc = cli_fail(cmd, &o->common, st);
        goto out;
    }
    if (st == FFU_OK)
        st = ffu_nn_model_num_inputs(m) > 0 ? ffu_nn_session_input(s, 0, &t) : ffu_nn_session_run(s);
    if (st < 0) snprintf(plan_err, sizeof plan_err, "%s", ffu_error_message());
    if ((st = ffu_jw_create(&w, 0)) < 0) goto fail;
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "ok"), ffu_jw_bool(w, 1);
    ffu_jw_key(w, "path"), ffu_jw_string(w, path);
    ffu_jw_key(w, "model");
    ffu_nn_model_describe(m, w);
    ffu_jw_key(w, "plan");
    if (plan_err[0]) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "error"), ffu_jw_string(w, plan_err);
        ffu_jw_end_object(w);
    } else {
        ffu_nn_session_describe(s, w);
    }
    ffu_jw_end_object(w);
    if ((st = ffu_jw_status(w)) < 0) goto fail;
    if (o->common.json) {
        rc = cli_print_json(w);
        goto out;
    }
    if ((st = ffu_json_parse(ffu_jw_text(w, NULL), strlen(ffu_jw_text(w, NULL)), &desc)) < 0)
        goto fail;
    const ffu_json *md = ffu_json_get(desc, "model"), *pd = ffu_json_get(desc, "plan");
    printf("%s: %s", path, ffu_json_string(ffu_json_get(md, "format")));
    const char *prod = ffu_json_string(ffu_json_get(md, "producer"));
    if (prod && *prod) printf(" from %s", prod);
    if (ffu_json_int(ffu_json_get(md, "opset"), 0))
        printf(", opset %lld", (long long)ffu_json_int(ffu_json_get(md, "opset"), 0));
    printf(", %lld nodes after load passes\n", (long long)ffu_json_int(ffu_json_get(md, "nodes"), 0));
    for (int pass = 0; pass < 2; pass++) {
        int n = pass ? ffu_nn_model_num_outputs(m) : ffu_nn_model_num_inputs(m);
        printf("%s:\n", pass ? "outputs" : "inputs");
        for (int i = 0; i < n; i++) {
            ffu_nn_tensor info;
            char buf[128];
            if (pass) ffu_nn_model_output(m, i, &info);
            else ffu_nn_model_input(m, i, &info);
            printf("  %-24s %-5s %s", info.name, ffu_dtype_name(info.dtype),
                   shape_str(&info, buf, sizeof buf));
            if (pass && !cli_nn_output_kept(m, &o->only, i)) printf("  (not computed)");
            else if (!plan_err[0]) {
                ffu_nn_tensor pt;
                if ((pass ? ffu_nn_session_output(s, i, &pt) : ffu_nn_session_input(s, i, &pt)) ==
                        FFU_OK &&
                    strcmp(shape_str(&pt, buf, sizeof buf), shape_str(&info, buf + 64, 64)) != 0)
                    printf("  (planned %s)", shape_str(&pt, buf, sizeof buf));
            }
            printf("\n");
        }
    }
    printf("ops:");
    const ffu_json *ops = ffu_json_get(md, "ops");
    for (size_t i = 0; i < ffu_json_len(ops); i++) {
        const ffu_json *v;
        const char *k = ffu_json_key_at(ops, i, &v);
        printf("%s %s %lld", i ? "," : "", k, (long long)ffu_json_int(v, 0));
    }
    printf("\n");
    char b1[32], b2[32];
    human_bytes((double)ffu_json_int(ffu_json_get(md, "param_bytes"), 0), b1, sizeof b1);
    int64_t flops = ffu_json_int(ffu_json_get(md, "flops"), -1);
    printf("params: %.3f M (%s)", (double)ffu_json_int(ffu_json_get(md, "params"), 0) / 1e6, b1);
    if (flops >= 0) printf(", %.3f GFLOP at the declared shapes (dynamic dims = 1)\n", flops / 1e9);
    else printf(", FLOPs unknown (shapes do not resolve with dynamic dims = 1)\n");
    if (plan_err[0]) {
        printf("plan: not available: %s\n", plan_err);
    } else {
        human_bytes((double)ffu_json_int(ffu_json_get(pd, "peak_bytes"), 0), b1, sizeof b1);
        human_bytes((double)ffu_json_int(ffu_json_get(pd, "unshared_bytes"), 0), b2, sizeof b2);
        printf("plan (%s): peak memory %s (without reuse %s); %lld nodes folded, %lld views, "
               "%lld in place\n",
               backend, b1, b2, (long long)ffu_json_int(ffu_json_get(pd, "folded_nodes"), 0),
               (long long)ffu_json_int(ffu_json_get(pd, "view_nodes"), 0),
               (long long)ffu_json_int(ffu_json_get(pd, "inplace_nodes"), 0));
        const char *note = ffu_json_string(ffu_json_get(pd, "note"));
        if (note) printf("note: %s\n", note);
        long long nsized = (long long)ffu_json_int(ffu_json_get(pd, "run_time_sized_nodes"), 0);
        if (nsized > 0)
            printf("sizes at run time: %lld nodes read or write values whose size depends on the "
                   "data (planned for a bound, shown above; run on ref)\n",
                   nsized);
        long long nwino = (long long)ffu_json_int(ffu_json_get(pd, "winograd_nodes"), 0);
        if (nwino > 0)
            printf("winograd: %lld 3x3 convolutions run Winograd (--no-winograd: direct)\n",
                   nwino);
        long long threads = (long long)ffu_json_int(ffu_json_get(pd, "threads"), 1),
                  used = (long long)ffu_json_int(ffu_json_get(pd, "threads_used"), threads);
        if (used < threads)
            printf("threads: %lld of %lld used (the nodes are too small to split further)\n", used,
                   threads);
        long long nband = (long long)ffu_json_int(ffu_json_get(pd, "band_nodes"), 0);
        if (nband > 0)
            printf("bands: %lld convolutions run in band pipelines (--no-bands: one by one)\n",
                   nband);
        long long nstrip = (long long)ffu_json_int(ffu_json_get(pd, "strip_nodes"), 0);
        if (nstrip > 0)
            printf("strips: %lld convolutions run in thread strips, each thread the same rows "
                   "of every layer (--no-bands: one by one)\n",
                   nstrip);
        if (ffu_json_bool(ffu_json_get(pd, "bf16"), 0))
            printf("bf16: %s, %lld nodes run bf16 (the rest failed the accuracy check or have "
                   "no bf16 kernel)\n",
                   ffu_json_bool(ffu_json_get(pd, "bf16_granted"), 0)
                       ? "granted"
                       : "not granted (no AVX512-BF16)",
                   (long long)ffu_json_int(ffu_json_get(pd, "bf16_nodes"), 0));
        int64_t batch = ffu_json_int(ffu_json_get(pd, "batch"), 1);
        const char *why = ffu_json_string(ffu_json_get(pd, "batch_why"));
        if (why) printf("batch %lld: looped over %lld runs of batch 1 (%s)\n", (long long)batch,
                        (long long)batch, why);
        else if (batch > 1) printf("batch %lld: batched\n", (long long)batch);
        const ffu_json *per = ffu_json_get(pd, "nodes_per_backend"), *nodes = ffu_json_get(pd, "nodes");
        for (size_t b = 0; b < ffu_json_len(per); b++) {
            const ffu_json *v;
            const char *bn = ffu_json_key_at(per, b, &v);
            printf("  %-4s runs %lld nodes", bn, (long long)ffu_json_int(v, 0));
            /* ops per backend, so a fallback to ref is easy to spot */
            int counts[NN_OP_COUNT] = {0};
            for (size_t i = 0; i < ffu_json_len(nodes); i++) {
                const ffu_json *n = ffu_json_at(nodes, i);
                if (strcmp(ffu_json_string(ffu_json_get(n, "backend")), bn) == 0)
                    counts[nn_op_from_name(ffu_json_string(ffu_json_get(n, "op")))]++;
            }
            const char *sep = ": ";
            for (int op = 1; op < NN_OP_COUNT; op++)
                if (counts[op]) printf("%s%s %d", sep, nn_op_name((nn_op)op), counts[op]), sep = ", ";
            printf("\n");
        }
        if (o->common.verbose)
            for (size_t i = 0; i < ffu_json_len(nodes); i++) {
                const ffu_json *n = ffu_json_at(nodes, i);
                printf("    %-5s %-20s %-32s %s\n", ffu_json_string(ffu_json_get(n, "backend")),
                       ffu_json_string(ffu_json_get(n, "op")),
                       ffu_json_string(ffu_json_get(n, "name")),
                       ffu_json_string(ffu_json_get(n, "shape")));
            }
    }
    goto out;
fail:
    rc = cli_fail(cmd, &o->common, st);
out:
    ffu_json_free(desc);
    ffu_jw_destroy(w);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
    return rc;
}

/* ---- tensors from files ------------------------------------------------------------------ */

/* A tensor read from a .pb file: dtype, shape and data (malloc'd). */
typedef struct loaded_tensor {
    char name[256];
    ffu_dtype dtype;
    nn_shape shape;
    void *data;
    size_t nbytes;
} loaded_tensor;

static ffu_status read_pb(const char *path, loaded_tensor *lt)
{
    memset(lt, 0, sizeof *lt);
    void *buf;
    size_t size;
    ffu_status st = read_whole(path, &buf, &size);
    if (st < 0) return st;
    nn_graph *g;
    if ((st = nn_graph_create(&g)) < 0) {
        free(buf);
        return st;
    }
    int idx;
    st = nn_onnx_read_tensor(buf, size, g, NULL, &idx);
    free(buf);
    if (st == FFU_OK) {
        const nn_tensor *t = &g->tensors[idx];
        snprintf(lt->name, sizeof lt->name, "%s", t->name);
        lt->dtype = t->dtype;
        lt->shape = t->shape;
        lt->nbytes = t->nbytes;
        lt->data = malloc(t->nbytes ? t->nbytes : 1);
        if (!lt->data) st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        else if (t->nbytes) memcpy(lt->data, t->data, t->nbytes);
    } else {
        ffu_error_prefix(st, path);
    }
    nn_graph_destroy(g);
    return st;
}

/* Writes a TensorProto: dims (1), data_type (2), name (8), raw_data (9). */
static void pb_varint(FILE *f, uint64_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        fputc(b | (v ? 0x80 : 0), f);
    } while (v);
}

static int onnx_type_of(ffu_dtype t)
{
    switch (t) {
    case FFU_DTYPE_F32: return 1;
    case FFU_DTYPE_U8: return 2;
    case FFU_DTYPE_I8: return 3;
    case FFU_DTYPE_U16: return 4;
    case FFU_DTYPE_I16: return 5;
    case FFU_DTYPE_I32: return 6;
    case FFU_DTYPE_I64: return 7;
    case FFU_DTYPE_BOOL: return 9;
    case FFU_DTYPE_F16: return 10;
    case FFU_DTYPE_F64: return 11;
    case FFU_DTYPE_U32: return 12;
    case FFU_DTYPE_U64: return 13;
    case FFU_DTYPE_BF16: return 16;
    default: return 0;
    }
}

static ffu_status write_output(const nn_opts *o, const ffu_nn_tensor *t, char *path, size_t len)
{
    char safe[200];
    size_t k = 0;
    for (const char *p = t->name; *p && k + 1 < sizeof safe; p++)
        safe[k++] = (char)((*p == '/' || *p == '\\' || *p == ':' || *p == ' ') ? '_' : *p);
    safe[k] = 0;
    snprintf(path, len, "%s/%s.%s", o->output_dir, safe, o->output_format ? "f32" : "pb");
    FILE *f = fopen(path, "wb");
    if (!f) return ffu_error_set(FFU_ERR_IO, "%s: %s", path, strerror(errno));
    ffu_status st = FFU_OK;
    if (o->output_format == 1) {
        size_t n = t->nbytes / (ffu_dtype_size(t->dtype) ? ffu_dtype_size(t->dtype) : 1);
        float *tmp = malloc(n * sizeof(float) + 1);
        if (!tmp) st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        else if ((st = nn_convert(t->data, t->dtype, tmp, FFU_DTYPE_F32, n)) == FFU_OK)
            fwrite(tmp, sizeof(float), n, f);
        free(tmp);
    } else {
        for (int d = 0; d < t->rank; d++) fputc(1 << 3 | 0, f), pb_varint(f, (uint64_t)t->dims[d]);
        fputc(2 << 3 | 0, f), pb_varint(f, (uint64_t)onnx_type_of(t->dtype));
        size_t nl = strlen(t->name);
        fputc(8 << 3 | 2, f), pb_varint(f, nl), fwrite(t->name, 1, nl, f);
        fputc(9 << 3 | 2, f), pb_varint(f, t->nbytes), fwrite(t->data, 1, t->nbytes, f);
    }
    if (fclose(f) != 0 && st == FFU_OK) st = ffu_error_set(FFU_ERR_IO, "%s: write failed", path);
    return st;
}

/* Fills input i from an image: resized to the input's H x W, normalised, NCHW or NHWC
 * by where the channel dim of size 1 or 3 is. */
static ffu_status fill_image(ffu_nn_session *s, const ffu_nn_model *m, int i, const char *path,
                             const nn_opts *o)
{
    ffu_nn_tensor info, t;
    ffu_status st = ffu_nn_model_input(m, i, &info);
    if (st < 0) return st;
    if (info.rank != 4)
        return ffu_error_set(FFU_ERR_INVALID, "input '%s' has rank %d; an image needs rank 4",
                             info.name, info.rank);
    int nchw = info.dims[1] == 3 || info.dims[1] == 1 ||
               (info.dims[1] < 0 && info.dims[3] != 3 && info.dims[3] != 1);
    ffu_image img = {0}, rs = {0};
    if ((st = ffu_image_load(path, o->bgr ? FFU_PIX_BGR24 : FFU_PIX_RGB24, &img)) < 0) return st;
    int64_t h = nchw ? info.dims[2] : info.dims[1], w = nchw ? info.dims[3] : info.dims[2];
    int64_t c = nchw ? info.dims[1] : info.dims[3];
    if (c < 0) c = 3;
    if (h < 0 || w < 0) { /* dynamic size: take the image's */
        h = h < 0 ? img.height : h;
        w = w < 0 ? img.width : w;
        int64_t dims[4] = {o->batch, nchw ? c : h, nchw ? h : w, nchw ? w : c};
        if ((st = ffu_nn_session_set_input_shape(s, i, 4, dims)) < 0) goto out;
    }
    if ((st = ffu_nn_session_input(s, i, &t)) < 0) goto out;
    if (h > FFU_IMAGE_MAX_DIM || w > FFU_IMAGE_MAX_DIM) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "input '%s' is %lldx%lld, too big for an image",
                           info.name, (long long)w, (long long)h);
        goto out;
    }
    if ((st = ffu_image_create(&rs, img.fmt, (int)w, (int)h)) < 0 ||
        (st = ffu_image_resize(&img, &rs, FFU_INTERP_BILINEAR)) < 0)
        goto out;
    ffu_norm_params np;
    ffu_norm_preset(&np, norm_names[o->norm]);
    np.gray = c == 1;
    size_t n = (size_t)(c * h * w);
    float *tmp = malloc(n * sizeof(float));
    if (!tmp) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    ffu_tensor_view tv = {tmp, nchw ? FFU_LAYOUT_NCHW : FFU_LAYOUT_NHWC, 1, (int)c, (int)h, (int)w};
    if ((st = ffu_image_to_tensor(&rs, &np, &tv, 0)) == FFU_OK) {
        /* the same image in every batch slot, converted to the input's dtype */
        size_t es = ffu_dtype_size(t.dtype);
        for (size_t off = 0; off + n * es <= t.nbytes && st == FFU_OK; off += n * es)
            st = nn_convert(tmp, FFU_DTYPE_F32, (char *)t.data + off, t.dtype, n);
    }
    free(tmp);
out:
    ffu_image_release(&img);
    ffu_image_release(&rs);
    return st;
}

static ffu_status fill_tensor_file(ffu_nn_session *s, int i, const char *path)
{
    ffu_nn_tensor t;
    ffu_status st;
    if (ends_with(path, ".pb")) {
        loaded_tensor lt;
        if ((st = read_pb(path, &lt)) < 0) return st;
        if ((st = ffu_nn_session_set_input_shape(s, i, lt.shape.rank, lt.shape.d)) == FFU_OK &&
            (st = ffu_nn_session_input(s, i, &t)) == FFU_OK) {
            size_t n = lt.nbytes / (ffu_dtype_size(lt.dtype) ? ffu_dtype_size(lt.dtype) : 1);
            st = nn_convert(lt.data, lt.dtype, t.data, t.dtype, n);
        }
        free(lt.data);
        return st;
    }
    void *buf;
    size_t size;
    if ((st = ffu_nn_session_input(s, i, &t)) < 0) return st;
    if ((st = read_whole(path, &buf, &size)) < 0) return st;
    size_t n = t.nbytes / (ffu_dtype_size(t.dtype) ? ffu_dtype_size(t.dtype) : 1);
    if (size != n * sizeof(float))
        st = ffu_error_set(FFU_ERR_INVALID, "%s: %zu bytes, input '%s' needs %zu f32 values "
                           "(%zu bytes)", path, size, t.name, n, n * sizeof(float));
    else
        st = nn_convert(buf, FFU_DTYPE_F32, t.data, t.dtype, n);
    free(buf);
    return st;
}

/* ---- nn run ------------------------------------------------------------------------------- */

static int cmd_run(const cli_command *cmd, nn_opts *o, const char *path)
{
    ffu_nn_model *m = NULL;
    ffu_nn_session *s = NULL;
    ffu_jw *w = NULL;
    int rc = CLI_EXIT_OK;
    ffu_status st = ffu_nn_model_load(path, &m);
    if (st < 0) return cli_fail(cmd, &o->common, st);
    int nin = ffu_nn_model_num_inputs(m);
    if (o->inputs.count != nin) {
        rc = cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                          "the model has %d inputs; give one --input FILE for each (got %d)", nin,
                          o->inputs.count);
        goto out;
    }
    /* the output folder made before the model runs, not found unusable after */
    if (o->output_dir && (st = ffu_dir_make(o->output_dir)) < 0) goto fail;
    if ((st = open_session(m, o, o->backend == 3 ? "cpu" : backend_names[o->backend], &s)) < 0) goto fail;
    for (int i = 0; i < nin; i++) {
        const char *f = o->inputs.items[i];
        if (ffu_image_name_known(f))
            st = fill_image(s, m, i, f, o);
        else
            st = fill_tensor_file(s, i, f);
        if (st < 0) goto fail;
    }
    int64_t t0 = ffu_clock_ns();
    if ((st = ffu_nn_session_run(s)) < 0) goto fail;
    double ms = (double)(ffu_clock_ns() - t0) / 1e6;
    if (o->common.json) {
        if ((st = ffu_jw_create(&w, 0)) < 0) goto fail;
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "ok"), ffu_jw_bool(w, 1);
        ffu_jw_key(w, "ms"), ffu_jw_number(w, ms);
        ffu_jw_key(w, "peak_bytes"), ffu_jw_int(w, (int64_t)ffu_nn_session_peak_bytes(s));
        ffu_jw_key(w, "outputs"), ffu_jw_begin_array(w);
    } else if (!o->common.quiet) {
        printf("%s: ran in %.2f ms (first run, includes set-up)\n", path, ms);
    }
    for (int i = 0; i < ffu_nn_model_num_outputs(m); i++) {
        ffu_nn_tensor t;
        char buf[128], file[1024] = "";
        if (!cli_nn_output_kept(m, &o->only, i)) continue;
        if ((st = ffu_nn_session_output(s, i, &t)) < 0) goto fail;
        size_t n = t.nbytes / (ffu_dtype_size(t.dtype) ? ffu_dtype_size(t.dtype) : 1);
        double *v = malloc((n ? n : 1) * sizeof(double));
        if (!v) {
            st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
            goto fail;
        }
        nn_convert(t.data, t.dtype, v, FFU_DTYPE_F64, n);
        double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
        for (size_t k = 0; k < n; k++) {
            mn = fmin(mn, v[k]), mx = fmax(mx, v[k]);
            sum += v[k], sq += v[k] * v[k];
        }
        if (o->output_dir && (st = write_output(o, &t, file, sizeof file)) < 0) {
            free(v);
            goto fail;
        }
        size_t show = (size_t)o->show < n ? (size_t)o->show : n;
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "name"), ffu_jw_string(w, t.name);
            ffu_jw_key(w, "dtype"), ffu_jw_string(w, ffu_dtype_name(t.dtype));
            ffu_jw_key(w, "shape"), ffu_jw_begin_array(w);
            for (int d = 0; d < t.rank; d++) ffu_jw_int(w, t.dims[d]);
            ffu_jw_end_array(w);
            ffu_jw_key(w, "min"), ffu_jw_number(w, n ? mn : 0);
            ffu_jw_key(w, "max"), ffu_jw_number(w, n ? mx : 0);
            ffu_jw_key(w, "mean"), ffu_jw_number(w, n ? sum / (double)n : 0);
            ffu_jw_key(w, "l2"), ffu_jw_number(w, sqrt(sq));
            ffu_jw_key(w, "values"), ffu_jw_begin_array(w);
            for (size_t k = 0; k < show; k++) ffu_jw_number(w, v[k]);
            ffu_jw_end_array(w);
            if (file[0]) ffu_jw_key(w, "file"), ffu_jw_string(w, file);
            ffu_jw_end_object(w);
        } else if (!o->common.quiet) {
            printf("%s %s %s: min %.6g max %.6g mean %.6g l2 %.6g\n  ", t.name,
                   ffu_dtype_name(t.dtype), shape_str(&t, buf, sizeof buf), n ? mn : 0,
                   n ? mx : 0, n ? sum / (double)n : 0, sqrt(sq));
            for (size_t k = 0; k < show; k++) printf("%s%.6g", k ? " " : "", v[k]);
            printf("%s\n", show < n ? " ..." : "");
            if (file[0]) printf("  -> %s\n", file);
        }
        free(v);
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    }
    goto out;
fail:
    rc = cli_fail(cmd, &o->common, st);
out:
    ffu_jw_destroy(w);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
    return rc;
}

/* ---- nn test ------------------------------------------------------------------------------ */

enum { RES_PASS, RES_FAIL, RES_UNSUPPORTED };
static const char *const res_names[] = {"pass", "fail", "unsupported"};

typedef struct entry_filter {
    const char *prefix; /* NULL: any name */
    int want_dirs;      /* folders, else regular files */
} entry_filter;

static int entry_wanted(const char *dir, const char *name, void *ctx)
{
    const entry_filter *f = ctx;
    char p[4096];
    struct stat st;
    return (!f->prefix || strncmp(name, f->prefix, strlen(f->prefix)) == 0) &&
           path_join(p, sizeof p, dir, name) && stat(p, &st) == 0 &&
           (f->want_dirs ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
}

/* Sorted names of the entries of dir that start with prefix (NULL: any) and are folders
 * (want_dirs) or files; 0 entries when dir cannot be read. */
static int list_dir(const char *dir, const char *prefix, int want_dirs, char ***out)
{
    entry_filter f = {prefix, want_dirs};
    int n;
    if (ffu_dir_list(dir, entry_wanted, &f, out, &n)) return 0;
    return n;
}

/* Compares one output with the expected tensor; writes the worst element to why. */
static int compare(const ffu_nn_tensor *got, const loaded_tensor *want, double rtol, double atol,
                   char *why, size_t len)
{
    char a[128], b[128];
    nn_shape gs = {.rank = got->rank};
    for (int k = 0; k < got->rank; k++) gs.d[k] = got->dims[k];
    if (!nn_shape_equal(&gs, &want->shape)) {
        snprintf(why, len, "output '%s': shape %s, expected %s", got->name,
                 nn_shape_str(&gs, a, sizeof a), nn_shape_str(&want->shape, b, sizeof b));
        return 0;
    }
    size_t n = (size_t)nn_shape_numel(&want->shape);
    double *x = malloc((n ? n : 1) * sizeof(double)), *y = malloc((n ? n : 1) * sizeof(double));
    /* the suite stores some bfloat16 tensors as their uint16 bit patterns */
    ffu_dtype gt = got->dtype;
    if ((gt == FFU_DTYPE_BF16 || gt == FFU_DTYPE_F16) && want->dtype == FFU_DTYPE_U16)
        gt = FFU_DTYPE_U16;
    if (!x || !y || nn_convert(got->data, gt, x, FFU_DTYPE_F64, n) < 0 ||
        nn_convert(want->data, want->dtype, y, FFU_DTYPE_F64, n) < 0) {
        free(x), free(y);
        snprintf(why, len, "output '%s': cannot compare %s with %s", got->name,
                 ffu_dtype_name(got->dtype), ffu_dtype_name(want->dtype));
        return 0;
    }
    int ok = 1;
    double worst = -1;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(x[i] - y[i]), tol = atol + rtol * fabs(y[i]);
        int bad;
        if (isnan(y[i]) || isnan(x[i])) bad = isnan(y[i]) != isnan(x[i]), d = bad ? INFINITY : 0;
        else if (isinf(y[i]) || isinf(x[i])) bad = x[i] != y[i], d = bad ? INFINITY : 0;
        else bad = d > tol;
        double score = bad ? (tol > 0 ? d / tol : INFINITY) : 0;
        if (bad && (ok || score > worst)) worst = score, wi = i;
        if (bad) ok = 0;
    }
    if (!ok)
        snprintf(why, len, "output '%s'[%zu]: got %.9g, expected %.9g (|diff| %.3g, tolerance %.3g)",
                 got->name, wi, x[wi], y[wi], fabs(x[wi] - y[wi]), atol + rtol * fabs(y[wi]));
    free(x), free(y);
    return ok;
}

/* Runs one conformance folder on one backend. Returns a RES_* and a reason. */
static int run_case(const char *dir, const char *backend, const nn_opts *o, char *why, size_t len)
{
    char path[4096];
    path_join(path, sizeof path, dir, "model.onnx");
    ffu_nn_model *m = NULL;
    ffu_nn_session *s = NULL;
    int res = RES_PASS;
    ffu_status st = ffu_nn_model_load(path, &m);
    why[0] = 0;
    if (st < 0) {
        snprintf(why, len, "%s", ffu_error_message());
        return st == FFU_ERR_UNSUPPORTED ? RES_UNSUPPORTED : RES_FAIL;
    }
    char **sets = NULL;
    int nsets = list_dir(dir, "test_data_set_", 1, &sets);
    if (!nsets) {
        snprintf(why, len, "no test_data_set_* folder");
        res = RES_FAIL;
    }
    for (int k = 0; k < nsets && res == RES_PASS; k++) {
        char sd[4096];
        path_join(sd, sizeof sd, dir, sets[k]);
        ffu_nn_session_opts so;
        ffu_nn_session_opts_default(&so);
        so.backend = backend;
        so.threads = o->threads;
        if ((st = ffu_nn_session_create(m, &so, &s)) < 0) goto err;
        int nin = ffu_nn_model_num_inputs(m);
        /* every shape first (a shape change re-plans and drops filled buffers), then data */
        enum { MAXIN = 64 };
        loaded_tensor lts[MAXIN];
        int idxs[MAXIN], nl = 0;
        st = FFU_OK;
        for (int i = 0; i < MAXIN && st == FFU_OK; i++) {
            char leaf[32];
            snprintf(leaf, sizeof leaf, "input_%d.pb", i);
            path_join(path, sizeof path, sd, leaf);
            if (access(path, F_OK) != 0) break;
            if ((st = read_pb(path, &lts[nl])) < 0) break;
            int idx = ffu_nn_model_find_input(m, lts[nl].name);
            idxs[nl] = idx >= 0 ? idx : i;
            if (idxs[nl] >= nin) { /* an optional input the graph does not take */
                free(lts[nl].data);
                continue;
            }
            st = ffu_nn_session_set_input_shape(s, idxs[nl], lts[nl].shape.rank, lts[nl].shape.d);
            nl++;
        }
        for (int i = 0; i < nl && st == FFU_OK; i++) {
            ffu_nn_tensor t;
            const loaded_tensor *lt = &lts[i];
            if ((st = ffu_nn_session_input(s, idxs[i], &t)) < 0) break;
            if (ffu_dtype_size(lt->dtype) == 2 && ffu_dtype_size(t.dtype) == 2 &&
                (lt->dtype == FFU_DTYPE_U16) != (t.dtype == FFU_DTYPE_U16) && lt->nbytes == t.nbytes)
                memcpy(t.data, lt->data, lt->nbytes); /* bfloat16 stored as uint16 bits */
            else if (t.dtype != lt->dtype)
                st = ffu_error_set(FFU_ERR_FORMAT, "input_%d.pb is %s, input '%s' is %s", i,
                                   ffu_dtype_name(lt->dtype), t.name, ffu_dtype_name(t.dtype));
            else if (lt->nbytes)
                memcpy(t.data, lt->data, lt->nbytes);
        }
        for (int i = 0; i < nl; i++) free(lts[i].data);
        if (st < 0) goto err;
        if ((st = ffu_nn_session_run(s)) < 0) goto err;
        for (int i = 0; i < ffu_nn_model_num_outputs(m) && res == RES_PASS; i++) {
            char leaf[32];
            snprintf(leaf, sizeof leaf, "output_%d.pb", i);
            path_join(path, sizeof path, sd, leaf);
            if (access(path, F_OK) != 0) break;
            loaded_tensor lt;
            if ((st = read_pb(path, &lt)) < 0) goto err;
            int idx = ffu_nn_model_find_output(m, lt.name);
            ffu_nn_tensor t;
            if ((st = ffu_nn_session_output(s, idx >= 0 ? idx : i, &t)) == FFU_OK &&
                !compare(&t, &lt, o->rtol, o->atol, why, len))
                res = RES_FAIL;
            free(lt.data);
            if (st < 0) goto err;
        }
        ffu_nn_session_destroy(s);
        s = NULL;
        continue;
    err:
        snprintf(why, len, "%s", ffu_error_message());
        res = st == FFU_ERR_UNSUPPORTED ? RES_UNSUPPORTED : RES_FAIL;
    }
    ffu_nn_session_destroy(s);
    ffu_dir_list_free(sets, nsets);
    ffu_nn_model_destroy(m);
    return res;
}

/* run_case in a child process: a crash or a hang is a failure, not the end. */
static int run_case_isolated(const char *dir, const char *backend, const nn_opts *o, char *why,
                             size_t len)
{
    if (o->no_fork) return run_case(dir, backend, o, why, len);
    int fd[2];
    if (pipe(fd) != 0) return run_case(dir, backend, o, why, len);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return run_case(dir, backend, o, why, len);
    }
    if (pid == 0) {
        close(fd[0]);
        alarm((unsigned)o->timeout);
        char msg[1024];
        int res = run_case(dir, backend, o, msg, sizeof msg);
        char out[1100];
        int n = snprintf(out, sizeof out, "%d %s", res, msg);
        if (write(fd[1], out, (size_t)(n < (int)sizeof out ? n : (int)sizeof out - 1)) < 0) _exit(3);
        _exit(0);
    }
    close(fd[1]);
    char buf[1100];
    size_t got = 0;
    ssize_t r;
    while (got + 1 < sizeof buf && (r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)r;
    buf[got] = 0;
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGALRM) snprintf(why, len, "timed out after %d s", o->timeout);
        else snprintf(why, len, "crashed (%s)", strsignal(sig));
        return RES_FAIL;
    }
    int res = RES_FAIL;
    char *sp = strchr(buf, ' ');
    if (got && sp && sscanf(buf, "%d", &res) == 1 && res >= RES_PASS && res <= RES_UNSUPPORTED) {
        snprintf(why, len, "%s", sp + 1);
        return res;
    }
    snprintf(why, len, "the test process exited with status %d", WEXITSTATUS(status));
    return RES_FAIL;
}

static int has_model(const char *dir)
{
    char p[4096];
    path_join(p, sizeof p, dir, "model.onnx");
    return access(p, F_OK) == 0;
}

static int cmd_test(const cli_command *cmd, nn_opts *o, int npos, char **pos)
{
    const char *backends[2];
    int nb = 0;
    if (o->backend == 3) {
        backends[nb++] = "cpu";
        backends[nb++] = "ref";
    } else {
        backends[nb++] = backend_names[o->backend];
    }
    int totals[2][3] = {{0}};
    ffu_jw *w = NULL;
    if (o->common.json) {
        if (ffu_jw_create(&w, 0) < 0) return cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "results"), ffu_jw_begin_array(w);
    }
    int ncases = 0;
    for (int a = 0; a < npos; a++) {
        char **subs = NULL;
        int nsub = 0, self = has_model(pos[a]);
        if (!self) {
            nsub = list_dir(pos[a], NULL, 1, &subs);
            struct stat st;
            if (stat(pos[a], &st) != 0) {
                ffu_jw_destroy(w);
                return cli_fail_msg(cmd, &o->common, CLI_EXIT_NOT_FOUND, "%s: no such folder",
                                    pos[a]);
            }
        }
        for (int k = 0; k < (self ? 1 : nsub); k++) {
            char dir[4096];
            if (self) snprintf(dir, sizeof dir, "%s", pos[a]);
            else path_join(dir, sizeof dir, pos[a], subs[k]);
            if (!has_model(dir)) continue;
            ncases++;
            const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
            for (int b = 0; b < nb; b++) {
                char why[1024];
                int res = run_case_isolated(dir, backends[b], o, why, sizeof why);
                totals[b][res]++;
                if (w) {
                    ffu_jw_begin_object(w);
                    ffu_jw_key(w, "test"), ffu_jw_string(w, dir);
                    ffu_jw_key(w, "backend"), ffu_jw_string(w, backends[b]);
                    ffu_jw_key(w, "result"), ffu_jw_string(w, res_names[res]);
                    if (why[0]) ffu_jw_key(w, "reason"), ffu_jw_string(w, why);
                    ffu_jw_end_object(w);
                } else if (!o->common.quiet || res == RES_FAIL) {
                    if (nb > 1) printf("%-11s %-3s %s%s%s\n", res_names[res], backends[b], name,
                                       why[0] ? ": " : "", why);
                    else printf("%-11s %s%s%s\n", res_names[res], name, why[0] ? ": " : "", why);
                    fflush(stdout);
                }
            }
        }
        ffu_dir_list_free(subs, nsub);
    }
    int failed = 0;
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_key(w, "totals"), ffu_jw_begin_object(w);
        for (int b = 0; b < nb; b++) {
            ffu_jw_key(w, backends[b]), ffu_jw_begin_object(w);
            for (int r = 0; r < 3; r++) ffu_jw_key(w, res_names[r]), ffu_jw_int(w, totals[b][r]);
            ffu_jw_end_object(w);
        }
        ffu_jw_end_object(w);
        ffu_jw_end_object(w);
        cli_print_json(w);
        ffu_jw_destroy(w);
    } else {
        for (int b = 0; b < nb; b++)
            printf("%s%s%d passed, %d failed, %d unsupported\n", nb > 1 ? backends[b] : "",
                   nb > 1 ? ": " : "", totals[b][RES_PASS], totals[b][RES_FAIL],
                   totals[b][RES_UNSUPPORTED]);
    }
    for (int b = 0; b < nb; b++) failed += totals[b][RES_FAIL];
    if (!ncases)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_NOT_FOUND,
                            "no test folders (model.onnx + test_data_set_*) found");
    return failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}

/* ---- dispatch ----------------------------------------------------------------------------- */

static int run(const cli_command *cmd, int argc, char **argv)
{
    nn_opts o;
    int npos, done;
    int rc = cli_parse(cmd, nn_options, &o, argc, argv, &npos, &done);
    if (rc || done) goto out;
    if (npos < 1) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "missing subcommand: info, run or test");
        goto out;
    }
    const char *sub = argv[0];
    if (!strcmp(sub, "test")) {
        if (npos < 2) rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "nn test needs a folder");
        else rc = cmd_test(cmd, &o, npos - 1, argv + 1);
    } else if (!strcmp(sub, "info") || !strcmp(sub, "run")) {
        if (npos != 2)
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "nn %s needs one MODEL (got %d)",
                              sub, npos - 1);
        else if (!strcmp(sub, "info")) rc = cmd_info(cmd, &o, argv[1]);
        else rc = cmd_run(cmd, &o, argv[1]);
    } else {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "unknown subcommand '%s' (use info, run or test)", sub);
    }
out:
    ffu_options_free(nn_options, &o);
    return rc;
}

const cli_command cli_cmd_nn = {
    "nn",
    "inspect, run and conformance-test neural network models",
    "facefuse nn info MODEL | nn run MODEL --input FILE... | nn test DIR... [options]",
    "info: inputs, outputs, op counts, parameters, FLOPs at the declared shapes, peak\n"
    "memory of the plan and which backend runs each node (-v lists every node).\n"
    "run: one inference; images are resized to the input's size and normalised with\n"
    "--norm, NCHW or NHWC by the input's shape; .pb files are ONNX TensorProtos; other\n"
    "files are raw little-endian f32. Outputs are summarised, and written with -o DIR.\n"
    "test: ONNX backend test folders (model.onnx + test_data_set_*/input_*.pb,\n"
    "output_*.pb), or folders of them; each prints pass, fail (with the worst element)\n"
    "or unsupported (an op or type the engine does not claim), then the totals.\n"
    "MODEL is an ONNX file, a TF.js model.json (its .bin shards beside it) or a float\n"
    "TensorFlow Lite file (.tflite), chosen by content.",
    run,
};
