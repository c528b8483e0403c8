/* `facefuse bench nn MODEL`: inference latency of one model on one backend -- median
 * and minimum milliseconds per run after a warm-up, with the planned peak memory.
 * Inputs are filled once with fixed pseudo-random values (floats in [0, 1), integers
 * 0), so runs are repeatable.
 * `facefuse bench face IMG`: the per-stage cost of a full analysis of one photo with
 * the default models (detect, landmarks, quality, liveness, attributes, embed; --detector
 * another detector; --with picks the stages after detection, since each stage pushes
 * the others' weights out of the caches and a run without attributes is not the full
 * run minus their time).
 * Timings are for reading, never for pass/fail. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "facefuse/face.h"
#include "facefuse/image.h"
#include "facefuse/nn.h"
#include "nn/ir.h"


typedef struct {
    cli_common common;
    int backend;
    int threads;
    int runs;
    int warmup;
    int batch;
    int no_winograd;
    int no_bands;
    int profile;
    int cold;
    ffu_strlist shapes;
    ffu_strlist only;
    char *size;
    char *with;
    char *detector;
    int min_face;
    int device, fp16, bf16; /* CLI_MODEL_OPTIONS */
} bench_opts;

static const ffu_option bench_options[] = {
    CLI_COMMON_OPTIONS,
    {"backend", 'b', FFU_OPT_ENUM, offsetof(bench_opts, backend),
     CLI_BACKEND_HELP, "cpu", 0, 0, cli_backend_names, NULL},
    CLI_MODEL_OPTIONS(bench_opts),
    {"threads", 't', FFU_OPT_INT, offsetof(bench_opts, threads), "worker threads (0 = all CPUs)",
     "1", 0, 1024, NULL, "N"},
    {"runs", 'n', FFU_OPT_INT, offsetof(bench_opts, runs), "timed runs", "50", 1, 1000000, NULL,
     "N"},
    {"warmup", 0, FFU_OPT_INT, offsetof(bench_opts, warmup), "untimed runs first", "5", 0,
     100000, NULL, "N"},
    {"batch", 0, FFU_OPT_INT, offsetof(bench_opts, batch), "items per run: dim 0 of inputs declared 1 or dynamic",
     "1", 1, 65536, NULL, "N"},
    CLI_ENGINE_OPTIONS(bench_opts),
    {"profile", 0, FFU_OPT_BOOL, offsetof(bench_opts, profile),
     "nn: after the timed runs, as many again timing each node: where the time goes "
     "(the heaviest nodes; all with -v; per node \"ms\" in --json)",
     NULL, 0, 0, NULL, NULL},
    {"cold", 0, FFU_OPT_BOOL, offsetof(bench_opts, cold),
     "nn: evict the CPU caches before every timed and profiled run (write twice the last "
     "level cache), so weights and activations come from memory, as in a pipeline where "
     "other models ran in between",
     NULL, 0, 0, NULL, NULL},
    {"shape", 0, FFU_OPT_STRING_LIST, offsetof(bench_opts, shapes),
     "fix an input's shape: NAME=1x3x480x640 (or INDEX=...)", NULL, 0, 0, NULL, "NAME=DIMS"},
    {"only-output", 0, FFU_OPT_STRING_LIST, offsetof(bench_opts, only),
     "nn: " CLI_ONLY_OUTPUT_HELP, NULL, 0, 0, NULL, "NAME"},
    {"size", 0, FFU_OPT_STRING, offsetof(bench_opts, size),
     "face: centre-crop the photo to this aspect and resize it to WxH first (0x0 = as is)",
     "640x480", 0, 0, NULL, "WxH"},
    {"with", 'w', FFU_OPT_STRING, offsetof(bench_opts, with),
     "face: the stages after detection, comma-separated: landmarks, quality, liveness, "
     "attributes, embed, or all (face recognition alone: landmarks,quality,liveness,embed)",
     "all", 0, 0, NULL, "STAGES"},
    {"detector", 'd', FFU_OPT_STRING, offsetof(bench_opts, detector),
     "face: the detector, a zoo name or FAMILY:PATH (default: the zoo's)", NULL, 0, 0, NULL,
     "NAME[:PATH]"},
    {"min-face", 0, FFU_OPT_INT, offsetof(bench_opts, min_face),
     "face: the smallest face the detector looks for, in pixels of the resized photo (0 = "
     "the detector's own; a cascade's cost grows as this falls, a tiled detector adds "
     "tiles)", "0", 0, 100000, NULL, "PX"},
    {0},
};

/* The host, measured in the same minutes as the timings: its name, one thread's f32
 * FMA peak (ffu_cpu_fma_peak_gflops) and whether its 512-bit FMAs run as two halves
 * (ffu_cpu_fma512_halves, which picks some kernels' shapes). The project's VMs come up
 * on different CPUs, and a timing is only comparable with others taken at the same peak. */
typedef struct bench_host {
    char cpu[128];
    double peak;
    int halves;
} bench_host;

static void host_measure(bench_host *h)
{
    ffu_cpu_name(h->cpu, sizeof h->cpu);
    h->peak = ffu_cpu_fma_peak_gflops();
    h->halves = ffu_cpu_fma512_halves();
}

static void host_json(ffu_jw *w, const bench_host *h)
{
    ffu_jw_key(w, "cpu"), ffu_jw_string(w, h->cpu);
    ffu_jw_key(w, "fma_peak_gflops"), ffu_jw_number(w, h->peak);
    ffu_jw_key(w, "fma512_halves"), ffu_jw_bool(w, h->halves);
}

static void host_print(const bench_host *h)
{
    printf("host: %s, one thread's f32 FMA peak %.0f GFLOP/s%s (measured now)\n", h->cpu, h->peak,
           h->halves ? ", 512-bit FMAs in two halves" : "");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    const char *op;
    double ms;
    int64_t flops;
    int count;
} op_time;

static int cmp_node_ms(const void *a, const void *b)
{
    double x = ffu_json_number(ffu_json_get(*(const ffu_json *const *)a, "ms"), 0);
    double y = ffu_json_number(ffu_json_get(*(const ffu_json *const *)b, "ms"), 0);
    return x > y ? -1 : x < y;
}

static int cmp_op_ms(const void *a, const void *b)
{
    double x = ((const op_time *)a)->ms, y = ((const op_time *)b)->ms;
    return x > y ? -1 : x < y;
}

static void print_rate(int64_t flops, double ms)
{
    if (flops > 0 && ms > 0) printf(" %8.1f", (double)flops / (ms * 1e6));
    else printf(" %8s", "");
}

/* The profile of the runs since ffu_nn_session_profile(s, 1): the `top` heaviest nodes
 * (mean ms per run, share of the nodes' sum, GFLOP/s where FLOPs are known), then
 * the time per op type. */
static ffu_status print_profile(const ffu_nn_session *s, int top)
{
    ffu_jw *w = NULL;
    ffu_json *desc = NULL;
    const ffu_json **nodes = NULL;
    op_time ops[NN_OP_COUNT];
    ffu_status st;
    if ((st = ffu_jw_create(&w, 0)) < 0 || (st = ffu_nn_session_describe(s, w)) < 0 ||
        (st = ffu_json_parse(ffu_jw_text(w, NULL), strlen(ffu_jw_text(w, NULL)), &desc)) < 0)
        goto out;
    const ffu_json *all = ffu_json_get(desc, "nodes");
    size_t n = 0, len = ffu_json_len(all);
    if (!(nodes = malloc((len ? len : 1) * sizeof *nodes))) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto out;
    }
    memset(ops, 0, sizeof ops);
    double total = 0;
    for (size_t i = 0; i < len; i++) {
        const ffu_json *nd = ffu_json_at(all, i);
        if (ffu_json_typeof(ffu_json_get(nd, "ms")) != FFU_JSON_NUMBER) continue; /* views */
        nodes[n++] = nd;
        double ms = ffu_json_number(ffu_json_get(nd, "ms"), 0);
        total += ms;
        int op = nn_op_from_name(ffu_json_string(ffu_json_get(nd, "op")));
        ops[op].op = ffu_json_string(ffu_json_get(nd, "op"));
        ops[op].ms += ms;
        ops[op].flops += ffu_json_int(ffu_json_get(nd, "flops"), 0);
        ops[op].count++;
    }
    qsort(nodes, n, sizeof *nodes, cmp_node_ms);
    printf("\nper node, mean of %lld profiled runs: %zu nodes take %.3f ms%s\n",
           (long long)ffu_json_int(ffu_json_get(desc, "profiled_runs"), 0), n, total,
           (size_t)top < n ? " (the heaviest below; -v: all)" : "");
    printf("%9s %6s %8s  %-18s %-16s %-30s %s\n", "ms", "share", "GFLOP/s", "op", "output",
           "backend impl", "name");
    for (size_t i = 0; i < n && i < (size_t)top; i++) {
        const ffu_json *nd = nodes[i];
        double ms = ffu_json_number(ffu_json_get(nd, "ms"), 0);
        const char *impl = ffu_json_string(ffu_json_get(nd, "impl"));
        char where[128];
        snprintf(where, sizeof where, "%s %s", ffu_json_string(ffu_json_get(nd, "backend")),
                 impl ? impl : "");
        printf("%9.3f %5.1f%%", ms, total > 0 ? 100 * ms / total : 0);
        print_rate(ffu_json_int(ffu_json_get(nd, "flops"), 0), ms);
        printf("  %-18s %-16s %-30s %s\n", ffu_json_string(ffu_json_get(nd, "op")),
               ffu_json_string(ffu_json_get(nd, "shape")), where,
               ffu_json_string(ffu_json_get(nd, "name")));
    }
    qsort(ops, NN_OP_COUNT, sizeof *ops, cmp_op_ms);
    printf("per op:\n");
    for (int i = 0; i < NN_OP_COUNT && ops[i].count; i++) {
        printf("%9.3f %5.1f%%", ops[i].ms, total > 0 ? 100 * ops[i].ms / total : 0);
        print_rate(ops[i].flops, ops[i].ms);
        printf("  %-18s %d node%s\n", ops[i].op, ops[i].count, ops[i].count == 1 ? "" : "s");
    }
out:
    free(nodes);
    ffu_json_free(desc);
    ffu_jw_destroy(w);
    return st;
}

/* A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); -1 where there is none. */
static int64_t proc_status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    int64_t v = -1;
    size_t n = strlen(key);
    while (v < 0 && fgets(line, sizeof line, f)) {
        long long kb;
        if (!strncmp(line, key, n) && line[n] == ':' && sscanf(line + n + 1, "%lld", &kb) == 1)
            v = (int64_t)kb * 1024;
    }
    fclose(f);
    return v;
}

/* A buffer for --cold: twice the last level cache (at least 64 MiB, at most 1 GiB), so
 * that writing all of it leaves none of the model's lines in any cache level. */
static unsigned char *evict_buffer(size_t *bytes)
{
    long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    size_t n = llc > 0 ? 2 * (size_t)llc : 0;
    if (n < ((size_t)64 << 20)) n = (size_t)64 << 20;
    if (n > ((size_t)1 << 30)) n = (size_t)1 << 30;
    *bytes = n;
    return malloc(n);
}

static void evict_caches(unsigned char *buf, size_t bytes)
{
    if (!buf) return;
    for (size_t i = 0; i < bytes; i += 64) ((volatile unsigned char *)buf)[i]++;
}

static int bench_nn(const cli_command *cmd, bench_opts *o, const char *path)
{
    ffu_nn_model *m = NULL;
    ffu_nn_session *s = NULL;
    ffu_jw *w = NULL;
    double *ms = NULL;
    unsigned char *evict = NULL;
    int rc = CLI_EXIT_OK;
    ffu_status st;
    /* the process before the model: what it adds is comparable with a peer's RSS growth
     * from before its session (bench/nn/ort_bench.js) */
    int64_t rss_before = proc_status_bytes("VmRSS");
    int64_t t0 = ffu_clock_ns();
    if ((st = ffu_nn_model_load(path, &m)) < 0) goto fail;
    double load_ms = (double)(ffu_clock_ns() - t0) / 1e6;
    ffu_nn_session_opts so;
    ffu_nn_session_opts_default(&so);
    so.backend = cli_backend_names[o->backend];
    so.threads = o->threads;
    so.bf16 = o->bf16;
    so.no_winograd = o->no_winograd;
    so.no_bands = o->no_bands;
    so.batch = o->batch;
    so.device = o->device;
    so.fp16 = o->fp16;
    cli_nn_only_outputs(&o->only, &so);
    if ((st = ffu_nn_session_create(m, &so, &s)) < 0) goto fail;
    for (int k = 0; k < o->shapes.count; k++)
        if ((st = cli_nn_apply_shape(s, m, o->shapes.items[k])) < 0) goto fail;
    t0 = ffu_clock_ns();
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < ffu_nn_model_num_inputs(m); i++) {
        ffu_nn_tensor t;
        if ((st = ffu_nn_session_input(s, i, &t)) < 0) goto fail;
        size_t n = t.nbytes / (ffu_dtype_size(t.dtype) ? ffu_dtype_size(t.dtype) : 1);
        if (t.dtype == FFU_DTYPE_F32 || t.dtype == FFU_DTYPE_F16 || t.dtype == FFU_DTYPE_BF16 ||
            t.dtype == FFU_DTYPE_F64) {
            float *tmp = malloc((n ? n : 1) * sizeof(float));
            if (!tmp) {
                st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
                goto fail;
            }
            for (size_t k = 0; k < n; k++) {
                seed ^= seed >> 12, seed ^= seed << 25, seed ^= seed >> 27;
                tmp[k] = (float)((seed * 2685821657736338717ull) >> 40) / (float)(1u << 24);
            }
            st = nn_convert(tmp, FFU_DTYPE_F32, t.data, t.dtype, n);
            free(tmp);
            if (st < 0) goto fail;
        } else {
            memset(t.data, 0, t.nbytes);
        }
    }
    double plan_ms = (double)(ffu_clock_ns() - t0) / 1e6;
    t0 = ffu_clock_ns();
    if ((st = ffu_nn_session_run(s)) < 0) goto fail;
    double first_ms = (double)(ffu_clock_ns() - t0) / 1e6;
    for (int i = 0; i < o->warmup; i++)
        if ((st = ffu_nn_session_run(s)) < 0) goto fail;
    /* before --cold's buffer, which would count as the model's */
    int64_t hwm = proc_status_bytes("VmHWM");
    size_t evict_bytes = 0;
    ms = malloc(sizeof(double) * (size_t)o->runs);
    if (o->cold && !(evict = evict_buffer(&evict_bytes))) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory for --cold's %zu-byte buffer",
                           evict_bytes);
        goto fail;
    }
    if (!ms) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < o->runs; i++) {
        evict_caches(evict, evict_bytes);
        t0 = ffu_clock_ns();
        if ((st = ffu_nn_session_run(s)) < 0) goto fail;
        ms[i] = (double)(ffu_clock_ns() - t0) / 1e6;
    }
    /* profiled runs come after the timed ones, so that the median is not theirs */
    if (o->profile) {
        if ((st = ffu_nn_session_profile(s, 1)) < 0) goto fail;
        for (int i = 0; i < o->runs; i++) {
            evict_caches(evict, evict_bytes);
            if ((st = ffu_nn_session_run(s)) < 0) goto fail;
        }
        ffu_nn_session_profile(s, 0);
    }
    double sum = 0;
    for (int i = 0; i < o->runs; i++) sum += ms[i];
    qsort(ms, (size_t)o->runs, sizeof(double), cmp_double);
    double median = o->runs % 2 ? ms[o->runs / 2] : (ms[o->runs / 2 - 1] + ms[o->runs / 2]) / 2;
    size_t peak = ffu_nn_session_peak_bytes(s);
    bench_host host;
    host_measure(&host);
    if (o->common.json) {
        if ((st = ffu_jw_create(&w, 0)) < 0) goto fail;
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "ok"), ffu_jw_bool(w, 1);
        ffu_jw_key(w, "model"), ffu_jw_string(w, path);
        ffu_jw_key(w, "backend"), ffu_jw_string(w, cli_backend_names[o->backend]);
        ffu_jw_key(w, "threads"), ffu_jw_int(w, o->threads ? o->threads : ffu_cpu_count());
        ffu_jw_key(w, "batch"), ffu_jw_int(w, o->batch);
        ffu_jw_key(w, "runs"), ffu_jw_int(w, o->runs);
        ffu_jw_key(w, "warmup"), ffu_jw_int(w, o->warmup);
        ffu_jw_key(w, "median_ms"), ffu_jw_number(w, median);
        ffu_jw_key(w, "median_ms_per_item"), ffu_jw_number(w, median / o->batch);
        ffu_jw_key(w, "min_ms"), ffu_jw_number(w, ms[0]);
        ffu_jw_key(w, "max_ms"), ffu_jw_number(w, ms[o->runs - 1]);
        ffu_jw_key(w, "mean_ms"), ffu_jw_number(w, sum / o->runs);
        ffu_jw_key(w, "first_run_ms"), ffu_jw_number(w, first_ms);
        ffu_jw_key(w, "load_ms"), ffu_jw_number(w, load_ms);
        ffu_jw_key(w, "plan_ms"), ffu_jw_number(w, plan_ms);
        ffu_jw_key(w, "peak_bytes"), ffu_jw_int(w, (int64_t)peak);
        ffu_jw_key(w, "cold"), ffu_jw_bool(w, o->cold);
        host_json(w, &host);
        if (rss_before > 0 && hwm > 0) {
            ffu_jw_key(w, "rss_before_bytes"), ffu_jw_int(w, rss_before);
            ffu_jw_key(w, "rss_peak_bytes"), ffu_jw_int(w, hwm);
        }
        ffu_jw_key(w, "plan"), ffu_nn_session_describe(s, w);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    } else if (!o->common.quiet) {
        int threads = o->threads ? o->threads : ffu_cpu_count();
        int used = ffu_nn_session_threads_used(s);
        char used_note[48] = "";
        if (used > 0 && used < threads)
            snprintf(used_note, sizeof used_note, " (%d used: small nodes)", used);
        printf("%s on %s, %d thread%s%s, batch %d%s: median %.3f ms, min %.3f ms, mean %.3f ms "
               "(%d runs after %d warm-up; first run %.1f ms, load %.1f ms, plan %.1f ms)\n"
               "peak activation memory: %.2f MiB\n",
               path, cli_backend_names[o->backend], threads, threads == 1 ? "" : "s", used_note,
               o->batch, o->cold ? ", caches evicted before each run" : "", median, ms[0],
               sum / o->runs, o->runs, o->warmup, first_ms, load_ms, plan_ms,
               (double)peak / (1 << 20));
        host_print(&host);
        if (o->batch > 1)
            printf("per item: median %.3f ms, min %.3f ms (%d items per run)\n", median / o->batch,
                   ms[0] / o->batch, o->batch);
        if (o->profile && (st = print_profile(s, o->common.verbose ? 1 << 30 : 20)) < 0) goto fail;
    }
    goto out;
fail:
    rc = cli_fail(cmd, &o->common, st);
out:
    free(ms);
    free(evict);
    ffu_jw_destroy(w);
    ffu_nn_session_destroy(s);
    ffu_nn_model_destroy(m);
    return rc;
}

/* ---- bench face ------------------------------------------------------------------ */

enum { ST_DETECT, ST_LANDMARKS, ST_QUALITY, ST_LIVENESS, ST_ATTRIBUTES, ST_EMBED, ST_COUNT };
static const char *const stage_names[ST_COUNT] = {"detect",   "landmarks",  "quality",
                                                  "liveness", "attributes", "embed"};

/* The photo at w x h: the largest centred crop of that aspect, resized bilinearly. */
static ffu_status fit_image(const ffu_image *src, int w, int h, ffu_image *out)
{
    if (w <= 0 || h <= 0)
        return ffu_image_clone(out, src);
    int cw = src->width, ch = (int)((double)src->width * h / w + 0.5);
    if (ch > src->height) {
        ch = src->height;
        cw = (int)((double)src->height * w / h + 0.5);
    }
    ffu_image view, tmp = {0};
    ffu_status st = ffu_image_view(&view, src, (src->width - cw) / 2, (src->height - ch) / 2,
                                   cw, ch);
    if (!st)
        st = ffu_image_create(&tmp, src->fmt, w, h);
    if (!st)
        st = ffu_image_resize(&view, &tmp, FFU_INTERP_BILINEAR);
    if (st)
        ffu_image_release(&tmp);
    else
        *out = tmp;
    return st;
}

static int bench_face(const cli_command *cmd, bench_opts *o, const char *path)
{
    ffu_image photo = {0}, img = {0};
    ffu_detector *det = NULL;
    ffu_landmarker *lm = NULL;
    ffu_embedder *emb = NULL;
    ffu_liveness *live = NULL;
    ffu_attributes *attr = NULL;
    ffu_nn_workspace *ws = NULL;
    ffu_face_list faces = {0};
    double *ms = NULL;
    ffu_jw *w = NULL;
    int rc = CLI_EXIT_OK, iw = 0, ih = 0;
    ffu_status st;
    if (o->size && sscanf(o->size, "%dx%d", &iw, &ih) != 2) {
        rc = cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE, "--size wants WxH, not '%s'", o->size);
        goto out;
    }
    /* the stages share one workspace, as in the analyzer */
    if ((st = ffu_nn_workspace_create(&ws))) {
        rc = cli_fail(cmd, &o->common, st);
        goto out;
    }
    ffu_face_model_opts m = {.model = NULL,
                             .backend = cli_backend_names[o->backend],
                             .threads = o->threads,
                             .device = o->device,
                             .fp16 = o->fp16,
                             .bf16 = o->bf16,
                             .workspace = ws};
    ffu_detector_opts dopts;
    ffu_landmarker_opts lopts;
    ffu_detector_opts_default(&dopts);
    ffu_landmarker_opts_default(&lopts);
    dopts.m = m;
    dopts.m.model = o->detector;
    dopts.min_face = o->min_face;
    lopts.m = m;
    unsigned with = 0;
    if (cli_parse_stages(o->with, &with) < 0) {
        rc = cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE, "unknown stage in --with '%s'", o->with);
        goto out;
    }
    /* the stages timed, in the order they run: detection, then each one asked for */
    static const unsigned stage_bits[ST_COUNT] = {0,
                                                  FFU_STAGE_LANDMARKS,
                                                  FFU_STAGE_QUALITY,
                                                  FFU_STAGE_LIVENESS,
                                                  FFU_STAGE_ATTRIBUTES,
                                                  FFU_STAGE_EMBED};
    int on[ST_COUNT];
    for (int s = 0; s < ST_COUNT; s++) on[s] = !stage_bits[s] || (with & stage_bits[s]);
    if ((st = ffu_image_load(path, FFU_PIX_RGB24, &photo)) ||
        (st = fit_image(&photo, iw, ih, &img)) || (st = ffu_detector_create(&dopts, &det)) ||
        (on[ST_LANDMARKS] && (st = ffu_landmarker_create(&lopts, &lm))) ||
        (on[ST_EMBED] && (st = ffu_embedder_create(&m, &emb))) ||
        (on[ST_LIVENESS] && (st = ffu_liveness_create(&m, &live))) ||
        (on[ST_ATTRIBUTES] && (st = ffu_attributes_create(&m, &attr)))) {
        rc = cli_fail(cmd, &o->common, st);
        goto out;
    }
    int total = o->warmup + o->runs;
    ms = calloc((size_t)ST_COUNT * (size_t)o->runs, sizeof *ms);
    if (!ms) {
        rc = cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
        goto out;
    }
    int nfaces = 0;
    /* each stage's FLOPs in the last run (the engine's count, ffu_nn_flops_done) */
    uint64_t fl[ST_COUNT + 1] = {0};
    for (int r = 0; r < total; r++) {
        double t[ST_COUNT + 1];
#define MARK(k) (t[k] = ffu_clock_sec(), fl[k] = ffu_nn_flops_done())
        MARK(0);
        st = ffu_detector_detect(det, &img, &faces);
        MARK(1);
        if (!st && faces.count == 0)
            st = ffu_error_set(FFU_ERR_FORMAT, "%s: no face found", path);
        ffu_face *f = st ? NULL : &faces.faces[0];
        if (!st && lm) st = ffu_landmarker_run(lm, &img, f);
        MARK(2);
        if (!st && on[ST_QUALITY]) st = ffu_face_quality_compute(&img, f);
        MARK(3);
        if (!st && live) st = ffu_liveness_run(live, &img, f);
        MARK(4);
        if (!st && attr) st = ffu_attributes_run(attr, &img, f);
        MARK(5);
        if (!st && emb) st = ffu_embedder_run(emb, &img, f, 1);
        MARK(6);
        if (st) {
            rc = cli_fail(cmd, &o->common, st);
            goto out;
        }
#undef MARK
        nfaces = faces.count;
        if (r >= o->warmup)
            for (int s = 0; s < ST_COUNT; s++)
                ms[(size_t)s * o->runs + (r - o->warmup)] = 1000 * (t[s + 1] - t[s]);
    }
    double med[ST_COUNT], sum = 0;
    for (int s = 0; s < ST_COUNT; s++) {
        double *v = ms + (size_t)s * o->runs;
        qsort(v, (size_t)o->runs, sizeof *v, cmp_double);
        med[s] = v[o->runs / 2];
        if (on[s]) sum += med[s];
    }
    bench_host host;
    host_measure(&host);
    /* what each stage's arithmetic alone would take at the FMA peak just measured, on
     * the threads asked for (cpu, f32 only) */
    double peak_ms[ST_COUNT], peak_sum = 0;
    int threads = o->threads ? o->threads : ffu_cpu_count();
    int at_peak = !strcmp(cli_backend_names[o->backend], "cpu") && !o->bf16 && host.peak > 0;
    for (int s = 0; s < ST_COUNT; s++) {
        peak_ms[s] = (double)(fl[s + 1] - fl[s]) / (host.peak * 1e6 * threads);
        if (on[s]) peak_sum += peak_ms[s];
    }
    if (o->common.json) {
        if ((st = ffu_jw_create(&w, 1))) {
            rc = cli_fail(cmd, &o->common, st);
            goto out;
        }
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "image"), ffu_jw_string(w, path);
        ffu_jw_key(w, "width"), ffu_jw_int(w, img.width);
        ffu_jw_key(w, "height"), ffu_jw_int(w, img.height);
        ffu_jw_key(w, "faces"), ffu_jw_int(w, nfaces);
        ffu_jw_key(w, "detector"), ffu_jw_string(w, ffu_detector_model(det)->name);
        ffu_jw_key(w, "min_face"), ffu_jw_int(w, o->min_face);
        ffu_jw_key(w, "threads"), ffu_jw_int(w, o->threads);
        ffu_jw_key(w, "bf16"), ffu_jw_bool(w, o->bf16);
        ffu_jw_key(w, "runs"), ffu_jw_int(w, o->runs);
        ffu_jw_key(w, "median_ms");
        ffu_jw_begin_object(w);
        for (int s = 0; s < ST_COUNT; s++)
            if (on[s]) ffu_jw_key(w, stage_names[s]), ffu_jw_number(w, med[s]);
        ffu_jw_end_object(w);
        ffu_jw_key(w, "sum_of_medians_ms"), ffu_jw_number(w, sum);
        ffu_jw_key(w, "gflop");
        ffu_jw_begin_object(w);
        for (int s = 0; s < ST_COUNT; s++)
            if (on[s])
                ffu_jw_key(w, stage_names[s]), ffu_jw_number(w, 1e-9 * (double)(fl[s + 1] - fl[s]));
        ffu_jw_end_object(w);
        if (at_peak) {
            ffu_jw_key(w, "at_peak_ms");
            ffu_jw_begin_object(w);
            for (int s = 0; s < ST_COUNT; s++)
                if (on[s]) ffu_jw_key(w, stage_names[s]), ffu_jw_number(w, peak_ms[s]);
            ffu_jw_key(w, "total"), ffu_jw_number(w, peak_sum);
            ffu_jw_end_object(w);
        }
        ffu_jw_key(w, "workspace_bytes"), ffu_jw_int(w, (int64_t)ffu_nn_workspace_bytes(ws));
        host_json(w, &host);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    } else {
        char mf[48] = "";
        if (o->min_face > 0) snprintf(mf, sizeof mf, ", min face %d px", o->min_face);
        printf("%s at %dx%d, %d face%s (%s%s), %d thread%s%s, median of %d runs after %d "
               "warm-up:\n",
               path, img.width, img.height, nfaces, nfaces == 1 ? "" : "s",
               ffu_detector_model(det)->name, mf, o->threads, o->threads == 1 ? "" : "s",
               o->bf16 ? ", bf16" : "", o->runs, o->warmup);
        printf("  %-11s %8s %8s %8s\n", "stage", "ms", "GFLOP", at_peak ? "at peak" : "");
        for (int s = 0; s < ST_COUNT; s++) {
            if (!on[s]) continue;
            printf("  %-11s %8.3f %8.3f", stage_names[s], med[s],
                   1e-9 * (double)(fl[s + 1] - fl[s]));
            if (at_peak) printf(" %8.3f", peak_ms[s]);
            printf("\n");
        }
        printf("  %-11s %8.3f %8.3f", "total", sum, 1e-9 * (double)(fl[ST_COUNT] - fl[0]));
        if (at_peak) printf(" %8.3f", peak_sum);
        printf("\n");
        if (at_peak)
            printf("at peak: the stage's GFLOP at the FMA peak below on %d thread%s, as if "
                   "nothing else cost time (direct form: Winograd layers can beat it)\n",
                   threads, threads == 1 ? "" : "s");
        printf("activation memory of the stages' models, one workspace: %.2f MiB\n",
               (double)ffu_nn_workspace_bytes(ws) / (1 << 20));
        host_print(&host);
    }
out:
    ffu_jw_destroy(w);
    free(ms);
    ffu_face_list_free(&faces);
    ffu_attributes_destroy(attr);
    ffu_liveness_destroy(live);
    ffu_embedder_destroy(emb);
    ffu_landmarker_destroy(lm);
    ffu_detector_destroy(det);
    ffu_nn_workspace_destroy(ws); /* after the sessions planned on it */
    ffu_image_release(&img);
    ffu_image_release(&photo);
    return rc;
}

static int run(const cli_command *cmd, int argc, char **argv)
{
    bench_opts o;
    int npos, done;
    int rc = cli_parse(cmd, bench_options, &o, argc, argv, &npos, &done);
    if (rc || done) goto out;
    if (npos >= 1 && !strcmp(argv[0], "face"))
        rc = npos == 2 ? bench_face(cmd, &o, argv[1])
                       : cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "bench face needs one IMG");
    else if (npos < 1 || strcmp(argv[0], "nn") != 0)
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          npos ? "unknown benchmark '%s' (use: bench nn MODEL | bench face IMG)"
                               : "missing benchmark%s (use: bench nn MODEL | bench face IMG)",
                          npos ? argv[0] : "");
    else if (npos != 2)
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "bench nn needs one MODEL (got %d)",
                          npos - 1);
    else
        rc = bench_nn(cmd, &o, argv[1]);
out:
    ffu_options_free(bench_options, &o);
    return rc;
}

const cli_command cli_cmd_bench = {
    "bench",
    "measure inference latency and memory of a model, or a face analysis per stage",
    "facefuse bench nn MODEL [--backend cpu|ref|cuda] [--threads N] [--runs N] [--warmup N] "
    "[--bf16] [--no-winograd] [--no-bands] [--profile] [--cold] [--device N] [--fp16] [--json]\n"
    "       facefuse bench face IMG [--size WxH] [--with STAGES] [--threads N] [--runs N]\n"
    "                               [--detector NAME[:PATH]] [--min-face PX] [--bf16] [--json]",
    "Loads MODEL, plans it for its declared input shapes (a dynamic first dimension is\n"
    "--batch; fix other dynamic dims with --shape NAME=DIMS), fills the inputs with fixed\n"
    "pseudo-random values, runs --warmup untimed inferences and then --runs timed ones.\n"
    "Prints the median and minimum milliseconds per inference and the planned peak\n"
    "activation memory. `bench face` times each stage of a full analysis of the photo's\n"
    "first face with the default models (the photo centre-cropped and resized to --size,\n"
    "640x480 by default; --with picks the stages after detection, all by default; the\n"
    "stages share one workspace, as in the analyzer, whose size it prints), with each\n"
    "stage's GFLOP (the engine's count of the models it ran, convolutions in direct\n"
    "form) and, on the cpu backend in f32, the ms that arithmetic alone would take at\n"
    "the FMA peak on the threads asked for (\"at peak\": a stage above it loses time\n"
    "elsewhere; Winograd layers do fewer multiplies and can beat it). Both also print\n"
    "the host: the CPU (brand, family, model), one thread's f32 FMA peak measured in the\n"
    "same run and whether the core runs 512-bit FMAs as two 256-bit halves, since a\n"
    "timing compares only with others taken at the same peak. Timings are for reading\n"
    "and comparing, never pass/fail.",
    run,
};
