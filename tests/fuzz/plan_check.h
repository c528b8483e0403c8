/* For the model fuzzers (fuzz_onnx.c, fuzz_tflite.c, fuzz_tfjs.c): a model that loaded
 * is also planned and run, on ref and on cpu, so that what happens only at planning --
 * the fusions that need shapes (fuse.c nn_fuse_planned), the memory planner, the
 * backends' kernel choices and oneDNN primitives -- and the kernels themselves see
 * hostile graphs too, not only the loaders and the load-time passes.
 *
 * Dynamic dims become 1 (dim 0, the batch) or 2. A model is run only when its plan is
 * small: the values of the specialised graph at most PLAN_MAX_BYTES and its arithmetic
 * at most PLAN_MAX_FLOPS (the fuzzer looks for crashes, not for slow models); a model
 * whose shapes depend on input values is not run. Inputs get small values (0..3 as
 * integers, 0..1 as bools, -1..1 as floats) from a fixed pattern. Planning or running
 * may fail with an error. A crash, a leak, a planned graph out of order, an output
 * whose buffer disagrees with its shape, or (where the model's constants are moderate)
 * f32 outputs of ref and cpu that differ by an NMSE above 1e-6 abort, so libFuzzer
 * reports the input. */
#ifndef FFU_FUZZ_PLAN_CHECK_H
#define FFU_FUZZ_PLAN_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/nn.h"
#include "nn/nn_internal.h"

#include "graph_check.h"

enum { PLAN_MAX_BYTES = 8 << 20, PLAN_MAX_FLOPS = 4 << 20, PLAN_MAX_WEIGHT = 1000 };

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

/* 1 when the model specialised for those shapes is small enough to run. */
static int plan_is_small(const ffu_nn_model *m, const nn_shape *shapes)
{
    ffu_arena *fold = NULL;
    if (ffu_arena_create(&fold, 0) < 0) return 0;
    nn_graph *g = NULL;
    int nfolded = 0, dd = 0, small = 0;
    if (nn_graph_specialize(m->g, shapes, NULL, m->ninputs, fold, &g, &nfolded, &dd) == FFU_OK) {
        check_graph(g);
        uint64_t bytes = 0, flops = 0;
        for (int i = 0; i < g->ntensors; i++)
            if (!(g->tensors[i].flags & NN_T_CONST)) bytes += nn_tensor_bytes(&g->tensors[i]);
        for (int i = 0; i < g->nnodes; i++) {
            int64_t f = nn_node_flops(g, &g->nodes[i]);
            flops += f > 0 ? (uint64_t)f : 0;
        }
        small = bytes <= PLAN_MAX_BYTES && flops <= PLAN_MAX_FLOPS;
        nn_graph_destroy(g);
    } else if (g) {
        abort(); /* out-parameters are NULL on error */
    }
    ffu_error_clear();
    ffu_arena_destroy(fold);
    return small;
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

/* What a run gave: its f32 outputs one after another (for the comparison of the two
 * backends), or ok = 0 when planning or running failed. */
typedef struct plan_result {
    int ok;
    float *f32;
    size_t n;
} plan_result;

static void keep_f32(plan_result *r, const ffu_nn_tensor *t)
{
    size_t n = t->nbytes / sizeof(float);
    float *p = realloc(r->f32, (r->n + n) * sizeof(float) + 1);
    if (!p) abort();
    memcpy(p + r->n, t->data, n * sizeof(float));
    r->f32 = p;
    r->n += n;
}

static void plan_and_run(const ffu_nn_model *m, const nn_shape *shapes, const char *backend,
                         plan_result *r)
{
    ffu_nn_session_opts o;
    ffu_nn_session_opts_default(&o);
    o.backend = backend;
    o.threads = 1;
    ffu_nn_session *s = NULL;
    if (ffu_nn_session_create(m, &o, &s) < 0) {
        if (s) abort();
        return;
    }
    ffu_status st = FFU_OK;
    for (int i = 0; i < m->ninputs && st >= 0; i++)
        st = ffu_nn_session_set_input_shape(s, i, shapes[i].rank, shapes[i].d);
    for (int i = 0; i < m->ninputs && st >= 0; i++) {
        ffu_nn_tensor t;
        if ((st = ffu_nn_session_input(s, i, &t)) >= 0) {
            if (t.nbytes && !t.data) abort();
            fill_pattern(&t);
        }
    }
    if (st >= 0 && (st = ffu_nn_session_run(s)) >= 0) {
        check_graph(nn_session_graph(s));
        for (int i = 0; i < ffu_nn_model_num_outputs(m); i++) {
            ffu_nn_tensor t;
            if (ffu_nn_session_output(s, i, &t) < 0) abort(); /* it ran: outputs exist */
            uint64_t n = 1;
            for (int k = 0; k < t.rank; k++)
                n *= (uint64_t)t.dims[k];
            if (n * ffu_dtype_size(t.dtype) != t.nbytes || (t.nbytes && !t.data)) abort();
            if (t.dtype == FFU_DTYPE_F32) keep_f32(r, &t);
        }
        r->ok = 1;
    }
    ffu_error_clear();
    ffu_nn_session_destroy(s);
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

/* Plans and runs m on ref and cpu when it is small enough, and compares them. */
static void check_plans(const ffu_nn_model *m)
{
    if (!m || m->ninputs > 64) return;
    nn_shape shapes[64];
    if (!plan_shapes(m, shapes) || !plan_is_small(m, shapes)) return;
    plan_result ref = {0}, cpu = {0};
    int moderate = moderate_constants(m->g);
    plan_and_run(m, shapes, "ref", &ref);
    plan_and_run(m, shapes, "cpu", &cpu);
    if (ref.ok && cpu.ok && ref.n != cpu.n) abort(); /* one model, the same output shapes */
    if (ref.ok && cpu.ok && moderate) {
        double err = 0, mag = 0;
        int finite = 1;
        for (size_t i = 0; i < ref.n && finite; i++) {
            double a = ref.f32[i], b = cpu.f32[i];
            finite = isfinite(a) && isfinite(b) && fabs(a) < 1e6 && fabs(b) < 1e6;
            err += (a - b) * (a - b), mag += a * a;
        }
        if (finite && err > 1e-6 * (mag + 1e-6)) {
            fprintf(stderr,
                    "plan_check: cpu and ref differ: error %g, magnitude %g over %zu values\n", err,
                    mag, ref.n);
            abort();
        }
    }
    free(ref.f32), free(cpu.f32);
}

#endif
