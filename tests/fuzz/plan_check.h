/* For the model fuzzers (fuzz_onnx.c, fuzz_tflite.c, fuzz_tfjs.c): a model that loaded
 * is also planned and run, on ref and on cpu, so that what happens only at planning --
 * the fusions that need shapes (fuse.c nn_fuse_planned), the memory planner, the
 * backends' kernel choices and oneDNN primitives -- and the kernels themselves see
 * hostile graphs too, not only the loaders and the load-time passes.
 *
 * Dynamic dims become 1 (dim 0, the batch) or 2. A model is run only when its plan is
 * small: the values of the specialised graph at most PLAN_MAX_BYTES and its work at
 * most PLAN_MAX_WORK (the fuzzer looks for crashes, not for slow models). Inputs get
 * small values (0..3 as integers, 0..1 as bools, -1..1 as floats) from a fixed pattern;
 * a model whose shapes depend on input values is sized with those values and runs in
 * the session's bound mode. Besides ref and cpu, each input also runs one cpu variant
 * chosen by a hash of its bytes (reproducible): two threads (every node split, as a
 * large model's would be), bf16, neither Winograd nor band pipelines, or only the
 * model's last output computed (opts.outputs: the others must then read as not
 * computed, and the last must agree with the whole plan's). Planning or
 * running may fail with an error. A crash, a leak, a planned graph out of order, an
 * output whose buffer disagrees with its shape, outputs of ref and cpu that differ in
 * size (unless the size depends on values: a threshold either side of which the two
 * backends' sums may land), f32 outputs of ref and cpu (or of cpu
 * and a variant other than bf16) that differ by an NMSE above 1e-6 (where the model's
 * constants are moderate), a bf16 variant whose outputs differ in type or size, or a
 * batch of two equal items whose slices are not the batch of one (bit for bit on ref;
 * src/nn/batch.c's proof or its loop; the kernels' handling of several images; only
 * where nn_batch_independent says the session computes items apart) abort, so
 * libFuzzer reports the input. */
#ifndef FFU_FUZZ_PLAN_CHECK_H
#define FFU_FUZZ_PLAN_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/nn.h"
#include "nn/backend.h"
#include "nn/nn_internal.h"
#include "nn/ops/ops_internal.h"

#include "graph_check.h"

/* A plan runs five times under the fuzzer's instrumentation, tens of times slower than
 * a release build (an Upsample to 0.59 M values and a LogSoftmax over them took 10 s
 * with 8 MiB allowed), so the limits keep a unit well under a second: values in bytes,
 * and work as each node's arithmetic or the values it writes, whichever is more. */
enum { PLAN_MAX_BYTES = 2 << 20, PLAN_MAX_WORK = 4 << 20, PLAN_MAX_WEIGHT = 1000 };

/* The shapes a fuzzed model is planned for: declared dims, dynamic ones 1 or 2.
 * 0 when an input has no declared rank. */
static int plan_shapes(const ffu_nn_model *m, nn_shape *shapes)
{
    for (int i = 0; i < m->ninputs; i++) {
        shapes[i] = m->g->tensors[m->inputs[i]].shape;
        if (shapes[i].rank < 0) return 0;
        for (int k = 0; k < shapes[i].rank; k++)
            if (shapes[i].d[k] < 0) shapes[i].d[k] = k ? 2 : 1;
    }
    return 1;
}

static void fill_pattern(const ffu_nn_tensor *t)
{
    size_t es = ffu_dtype_size(t->dtype), n = es ? t->nbytes / es : 0;
    for (size_t i = 0; i < n; i++) {
        int v = (int)(i * 7 % 9); /* 0..8 */
        uint8_t *p = (uint8_t *)t->data + i * es;
        if (t->dtype == FFU_DTYPE_F32) {
            float f = (float)(v - 4) / 4.0f;
            memcpy(p, &f, sizeof f);
        } else if (t->dtype == FFU_DTYPE_I64) {
            int64_t x = v % 4;
            memcpy(p, &x, sizeof x);
        } else if (t->dtype == FFU_DTYPE_I32) {
            int32_t x = v % 4;
            memcpy(p, &x, sizeof x);
        } else {
            memset(p, 0, es); /* u8, i8, bool (0 or 1); f16, bf16, f64: a tiny value */
            p[0] = (uint8_t)(t->dtype == FFU_DTYPE_BOOL ? v % 2 : v % 4);
        }
    }
}

/* The values a session in bound mode plans with: the pattern for each input it binds
 * (nn_input_bindable); the others stay NULL. 0 when out of memory. */
static int pattern_values(const ffu_nn_model *m, const nn_shape *shapes, void **values)
{
    for (int i = 0; i < m->ninputs; i++) {
        ffu_dtype dt = m->g->tensors[m->inputs[i]].dtype;
        if (!nn_input_bindable(dt, &shapes[i])) continue;
        size_t nbytes = (size_t)nn_shape_numel(&shapes[i]) * ffu_dtype_size(dt);
        if (!(values[i] = calloc(1, nbytes + 1))) return 0;
        fill_pattern(&(ffu_nn_tensor){.dtype = dt, .nbytes = nbytes, .data = values[i]});
    }
    return 1;
}

/* 1 when the model specialised for those shapes is small enough to run; a model whose
 * shapes depend on input values is specialised with the pattern's values. */
static int plan_is_small(const ffu_nn_model *m, const nn_shape *shapes)
{
    ffu_arena *fold = NULL;
    if (ffu_arena_create(&fold, 0) < 0) return 0;
    nn_graph *g = NULL;
    int nfolded = 0, dd = 0, small = 0;
    ffu_status st = nn_graph_specialize(m->g, shapes, NULL, m->ninputs, fold, &g, &nfolded, &dd);
    if (st < 0 && dd) {
        if (g) abort();
        void *values[64] = {0};
        if (pattern_values(m, shapes, values))
            st = nn_graph_specialize(m->g, shapes, values, m->ninputs, fold, &g, &nfolded, &dd);
        for (int i = 0; i < m->ninputs; i++)
            free(values[i]);
    }
    if (st == FFU_OK) {
        check_graph(g);
        uint64_t bytes = 0, work = 0;
        for (int i = 0; i < g->ntensors; i++)
            if (!(g->tensors[i].flags & NN_T_CONST)) bytes += nn_tensor_bytes(&g->tensors[i]);
        for (int i = 0; i < g->nnodes; i++) {
            const nn_node *n = &g->nodes[i];
            int64_t f = nn_node_flops(g, n), values = 0;
            for (int k = 0; k < n->noutputs; k++) {
                int64_t v =
                    n->outputs[k] >= 0 ? nn_shape_numel(&g->tensors[n->outputs[k]].shape) : 0;
                values += v > 0 ? v : 0;
            }
            work += (uint64_t)(f > values ? f : values);
        }
        small = bytes <= PLAN_MAX_BYTES && work <= PLAN_MAX_WORK;
        nn_graph_destroy(g);
    } else if (g) {
        abort(); /* out-parameters are NULL on error */
    }
    ffu_error_clear();
    ffu_arena_destroy(fold);
    return small;
}

/* What a run gave: a copy of each of its n outputs; out NULL when planning or running
 * failed. */
typedef struct plan_output {
    ffu_dtype dtype;
    int rank;
    int bounded; /* its size depends on values (ir.h NN_T_BOUNDED) */
    int skipped; /* not computed (opts.outputs) */
    int64_t d0;
    size_t nbytes;
    void *data;
} plan_output;

typedef struct plan_result {
    int n;
    plan_output *out;
} plan_result;

static void free_result(plan_result *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->out[i].data);
    free(r->out);
}

/* The options of a run: one thread unless the variant says otherwise. */
enum plan_variant {
    PLAN_PLAIN,
    PLAN_THREADS,     /* two threads */
    PLAN_BF16,        /* bf16 where its check passes */
    PLAN_DIRECT,      /* no Winograd, no band pipelines */
    PLAN_LAST_OUTPUT, /* only the model's last output computed (opts.outputs) */
    PLAN_NVARIANTS
};

static ffu_nn_session_opts plan_opts(const char *backend, int batch, enum plan_variant v)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.batch = batch;
    o.threads = v == PLAN_THREADS ? 2 : 1;
    o.bf16 = v == PLAN_BF16;
    o.no_winograd = o.no_bands = v == PLAN_DIRECT;
    return o;
}

/* A session with options o; a cpu one with several threads on a backend that splits
 * every node however small (NN_CPU_SPLIT_SMALL), which the fuzzers' small graphs would
 * otherwise run on one thread. NULL when it cannot be made. */
static ffu_nn_session *open_session(const ffu_nn_model *m, const ffu_nn_session_opts *o)
{
    ffu_nn_session *s = NULL;
    nn_backend *cpu = NULL;
    unsigned flags = NN_CPU_SPLIT_SMALL | (o->bf16 ? NN_CPU_BF16 : 0) |
                     (o->no_winograd ? 0 : NN_CPU_WINOGRAD) | (o->no_bands ? 0 : NN_CPU_BANDS);
    if (o->threads > 1 && strcmp(o->backend, "cpu") == 0 &&
        nn_backend_cpu_create(&cpu, o->threads, flags) == FFU_OK) {
        if (nn_session_create_with(m, o, cpu, &s) < 0 && s) abort();
    } else if (ffu_nn_session_create(m, o, &s) < 0 && s) {
        abort();
    }
    ffu_error_clear();
    return s;
}

/* Plans and runs m with options o for o.batch items (1 or 2) of the shapes given;
 * with 2, both items of a batch input hold what a batch of 1 gets. */
static void plan_and_run(const ffu_nn_model *m, const nn_shape *shapes, ffu_nn_session_opts o,
                         plan_result *r)
{
    int batch = o.batch;
    ffu_nn_session *s = open_session(m, &o);
    if (!s) return;
    ffu_status st = FFU_OK;
    for (int i = 0; i < m->ninputs && st >= 0; i++) {
        nn_shape sh = shapes[i];
        if (nn_batch_carrier(&m->g->tensors[m->inputs[i]].shape)) sh.d[0] *= batch;
        st = ffu_nn_session_set_input_shape(s, i, sh.rank, sh.d);
    }
    for (int i = 0; i < m->ninputs && st >= 0; i++) {
        ffu_nn_tensor t;
        if ((st = ffu_nn_session_input(s, i, &t)) >= 0) {
            if (t.nbytes && !t.data) abort();
            int items = nn_batch_carrier(&m->g->tensors[m->inputs[i]].shape) ? batch : 1;
            if (t.nbytes % (size_t)items) abort();
            t.nbytes /= (size_t)items;
            fill_pattern(&t);
            for (int b = 1; b < items; b++)
                memcpy((char *)t.data + (size_t)b * t.nbytes, t.data, t.nbytes);
        }
    }
    if (st >= 0 && (st = ffu_nn_session_run(s)) >= 0) {
        const nn_graph *pg = nn_session_graph(s);
        check_graph(pg);
        r->n = ffu_nn_model_num_outputs(m);
        if (!(r->out = calloc((size_t)r->n + 1, sizeof *r->out))) abort();
        for (int i = 0; i < r->n; i++) {
            ffu_nn_tensor t;
            int kept = !o.noutputs;
            for (int k = 0; k < o.noutputs; k++)
                kept |= ffu_nn_model_find_output(m, o.outputs[k]) == i;
            if (!kept) {
                if (ffu_nn_session_output(s, i, &t) != FFU_ERR_INVALID) abort();
                r->out[i].skipped = 1;
                continue;
            }
            if (ffu_nn_session_output(s, i, &t) < 0) abort(); /* it ran: outputs exist */
            uint64_t n = 1;
            for (int k = 0; k < t.rank; k++)
                n *= (uint64_t)t.dims[k];
            if (n * ffu_dtype_size(t.dtype) != t.nbytes || (t.nbytes && !t.data)) abort();
            plan_output *po = &r->out[i];
            int bounded =
                pg && i < pg->noutputs && (pg->tensors[pg->outputs[i]].flags & NN_T_BOUNDED) != 0;
            *po = (plan_output){.dtype = t.dtype,
                                .rank = t.rank,
                                .bounded = bounded,
                                .d0 = t.rank ? t.dims[0] : 0,
                                .nbytes = t.nbytes,
                                .data = malloc(t.nbytes + 1)};
            if (!po->data) abort();
            memcpy(po->data, t.data, t.nbytes);
        }
    }
    ffu_error_clear();
    ffu_nn_session_destroy(s);
}

/* Adds the squared differences of n floats to *err and the squares of a's to *mag;
 * 0 when a value is not finite or beyond 1e6 (then nothing is compared). */
static int add_error(const float *a, const float *b, size_t n, double *err, double *mag)
{
    for (size_t k = 0; k < n; k++) {
        double x = a[k], y = b[k];
        if (!(isfinite(x) && isfinite(y) && fabs(x) < 1e6 && fabs(y) < 1e6)) return 0;
        *err += (x - y) * (x - y), *mag += x * x;
    }
    return 1;
}

static void check_error(double err, double mag, const char *what)
{
    if (err <= 1e-6 * (mag + 1e-6)) return;
    fprintf(stderr, "plan_check: %s: error %g, magnitude %g\n", what, err, mag);
    abort();
}

/* Two runs of the same plan give outputs of the same types and sizes and, when
 * `values`, f32 outputs that agree to an NMSE of 1e-6 where all are finite. */
static void compare_runs(const plan_result *x, const plan_result *y, int values, const char *what)
{
    if (x->n != y->n) abort();
    double err = 0, mag = 0;
    for (int i = 0; i < x->n; i++) {
        const plan_output *a = &x->out[i], *b = &y->out[i];
        if (a->skipped || b->skipped) continue;
        if (a->dtype != b->dtype || (a->nbytes != b->nbytes && !a->bounded && !b->bounded)) {
            fprintf(stderr, "plan_check: %s: output %d differs in type or size\n", what, i);
            abort();
        }
        /* a size decided by values may differ where a value sits on a threshold (a
         * score that the two backends round to either side): nothing to compare */
        if (a->nbytes != b->nbytes) {
            values = 0;
            continue;
        }
        if (values && a->dtype == FFU_DTYPE_F32 &&
            !add_error(a->data, b->data, a->nbytes / sizeof(float), &err, &mag))
            values = 0;
    }
    if (values) check_error(err, mag, what);
}

/* A batch of two equal items gives, in each item's slice of an output whose dim 0
 * doubled, what a batch of one gives: bit for bit when exact (ref both times: the same
 * kernels), else its f32 outputs to an NMSE of 1e-6 (cpu: oneDNN may choose another
 * algorithm for two). Outputs that keep their size (batch-invariant ones, or shapes
 * that depend on N) are not compared. */
static void compare_batch(const plan_result *one, const plan_result *two, int exact)
{
    double err = 0, mag = 0;
    for (int i = 0; i < one->n; i++) {
        const plan_output *a = &one->out[i], *b = &two->out[i];
        if (a->dtype != b->dtype) abort();
        if (a->rank < 1 || b->rank != a->rank || b->d0 != 2 * a->d0 || b->nbytes != 2 * a->nbytes)
            continue;
        for (int k = 0; k < 2; k++) {
            const void *slice = (const char *)b->data + (size_t)k * a->nbytes;
            if (exact && memcmp(slice, a->data, a->nbytes) != 0) {
                fprintf(stderr,
                        "plan_check: output %d of item %d in a batch of 2 differs from "
                        "a batch of 1\n",
                        i, k);
                abort();
            }
            if (!exact && a->dtype == FFU_DTYPE_F32 &&
                !add_error(a->data, slice, a->nbytes / sizeof(float), &err, &mag))
                return;
        }
    }
    check_error(err, mag, "a batch of 2 differs from a batch of 1");
}

/* 1 when every f32 constant of g is finite and at most PLAN_MAX_WEIGHT in magnitude:
 * then the outputs of ref and cpu are compared. With larger values a sum overflows in
 * one backend's order and not in the other's, and an activation after it turns the
 * infinity (or NaN) into different finite values: not a fault of either. */
static int moderate_constants(const nn_graph *g)
{
    for (int i = 0; i < g->ntensors; i++) {
        const nn_tensor *t = &g->tensors[i];
        if (!(t->flags & NN_T_CONST) || t->dtype != FFU_DTYPE_F32 || !t->data) continue;
        for (size_t k = 0; k < t->nbytes / sizeof(float); k++) {
            float v;
            memcpy(&v, (const char *)t->data + k * sizeof v, sizeof v);
            if (!(fabsf(v) <= PLAN_MAX_WEIGHT)) return 0;
        }
    }
    return 1;
}

/* Which cpu variant an input runs: a hash of its bytes (FNV-1a), so that a reported
 * input replays the same way. */
static enum plan_variant pick_variant(const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    return (enum plan_variant)(1 + h % (PLAN_NVARIANTS - 1));
}

/* Plans and runs m (loaded from data) on ref and cpu when it is small enough, and
 * compares them; then one cpu variant against cpu, and a batch of two on ref and cpu
 * against its batch of one. */
static void check_plans(const ffu_nn_model *m, const uint8_t *data, size_t size)
{
    if (!m || m->ninputs > 64) return;
    nn_shape shapes[64];
    if (!plan_shapes(m, shapes) || !plan_is_small(m, shapes)) return;
    plan_result ref = {0}, cpu = {0}, var = {0}, ref2 = {0}, cpu2 = {0};
    int moderate = moderate_constants(m->g);
    enum plan_variant v = pick_variant(data, size);
    plan_and_run(m, shapes, plan_opts("ref", 1, PLAN_PLAIN), &ref);
    plan_and_run(m, shapes, plan_opts("cpu", 1, PLAN_PLAIN), &cpu);
    if (ref.out && cpu.out) compare_runs(&ref, &cpu, moderate, "cpu and ref differ");
    if (cpu.out) {
        ffu_nn_session_opts vo = plan_opts("cpu", 1, v);
        ffu_nn_tensor last;
        const char *last_name[1] = {NULL};
        if (v == PLAN_LAST_OUTPUT &&
            ffu_nn_model_output(m, ffu_nn_model_num_outputs(m) - 1, &last) == FFU_OK) {
            last_name[0] = last.name ? last.name : "";
            vo.outputs = last_name;
            vo.noutputs = 1;
        }
        plan_and_run(m, shapes, vo, &var);
        if (var.out)
            compare_runs(&cpu, &var, moderate && v != PLAN_BF16,
                         v == PLAN_THREADS       ? "cpu with 2 threads differs from 1"
                         : v == PLAN_BF16        ? "cpu with bf16 differs"
                         : v == PLAN_LAST_OUTPUT ? "cpu computing only its last output differs"
                                                 : "cpu without Winograd and bands differs");
    }
    /* a batch of two is two items only where the session makes it so (a model whose
     * batch inputs are all dynamic defines for itself what its dim 0 means) */
    nn_shape two[64];
    for (int i = 0; i < m->ninputs; i++) {
        two[i] = shapes[i];
        if (nn_batch_carrier(&m->g->tensors[m->inputs[i]].shape)) two[i].d[0] *= 2;
    }
    int independent = (ref.out || (cpu.out && moderate)) && nn_batch_independent(m, two);
    if (ref.out && independent) {
        plan_and_run(m, shapes, plan_opts("ref", 2, PLAN_PLAIN), &ref2);
        if (ref2.out) compare_batch(&ref, &ref2, 1);
    }
    if (cpu.out && moderate && independent) {
        plan_and_run(m, shapes, plan_opts("cpu", 2, PLAN_PLAIN), &cpu2);
        if (cpu2.out) compare_batch(&cpu, &cpu2, 0);
    }
    free_result(&ref), free_result(&cpu), free_result(&var), free_result(&ref2);
    free_result(&cpu2);
}

#endif
