/* What reading the leaf rows alone costs on this host: the bulk of the time of any ERT
 * that keeps dlib's exact f32 leaves. A face's cascades add one leaf row per tree (7500 rows
 * of 576 bytes for the 68-point model, 4.3 MB), chosen by the face, so the rows are
 * scattered over the 69 MB of leaves. This times that stream without the trees: an
 * array the size of the model's leaves on 2 MiB pages (as the model's), one row picked
 * at random out of each tree's, summed in order with the model's own sum kernel, the
 * rows flushed from the caches before each pass, under several prefetch schemes; the fastest scheme
 * is the host's rate for such a stream. A plain sequential read of the same array is
 * given beside it. Bench-only code, driven by bench_ert.c. */
#include "row_stream.h"

#include <emmintrin.h>
#include <emmintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "face/ert.h"

#define BLOCK 16 /* rows prefetched together, as ert.c's TREE_BLOCK */

double bench_now(void) { return (double)ffu_clock_ns() * 1e-9; }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static volatile uint8_t sink;

/* Every line of buf out of every cache, so the next pass reads it from memory. (Reading
 * a buffer larger than the caches instead left rows in this AMD host's L3.) */
static void flush(const void *buf, size_t bytes)
{
    for (size_t i = 0; i < bytes; i += 64)
        _mm_clflush((const char *)buf + i);
    _mm_mfence();
}

/* One row of each tree, at random: the rows of pass `round` (the same for every scheme). */
static void pick_rows(const float *leaves, size_t ntrees, size_t per_tree, int stride, int round,
                      const float **rows)
{
    uint64_t seed = 0x9e3779b97f4a7c15u * (uint64_t)(round + 1);
    for (size_t i = 0; i < ntrees; i++) {
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        rows[i] = leaves + (i * per_tree + (size_t)(seed >> 33) % per_tree) * (size_t)stride;
    }
}

static void prefetch_rows(const float *const *rows, size_t n, int stride, int hint)
{
    for (size_t r = 0; r < n; r++)
        for (int c = 0; c < stride; c += 16) {
            const float *p = rows[r] + c;
            if (hint == 3)
                __builtin_prefetch(p, 0, 3);
            else if (hint == 2)
                __builtin_prefetch(p, 0, 2);
            else
                __builtin_prefetch(p, 0, 1);
        }
}

/* One pass: blocks of BLOCK rows summed, the rows `ahead` blocks on prefetched with
 * `hint` (3 = prefetcht0, 2 = prefetcht1, 1 = prefetcht2) while the block is summed;
 * ahead 0: no prefetch. */
static void pass(ert_sum_rows_fn sum, float *shape, const float *const *rows, size_t n, int stride,
                 int ahead, int hint)
{
    size_t lead = (size_t)ahead * BLOCK;
    if (ahead) prefetch_rows(rows, lead < n ? lead : n, stride, hint);
    for (size_t b = 0; b < n; b += BLOCK) {
        size_t k = n - b < BLOCK ? n - b : BLOCK;
        if (ahead && b + lead < n)
            prefetch_rows(rows + b + lead, n - b - lead < BLOCK ? n - b - lead : BLOCK, stride,
                          hint);
        sum(shape, rows + b, (int)k, stride);
    }
}

int ert_row_stream(const ert_model *m, int rounds, int verbose, row_stream *out)
{
    memset(out, 0, sizeof *out);
    size_t ntrees = ert_model_num_trees(m), nleaves = ert_model_num_leaves(m);
    int stride = (2 * ert_model_num_parts(m) + 15) / 16 * 16;
    if (!ntrees || nleaves < ntrees || rounds < 1) return -1;
    size_t per_tree = nleaves / ntrees, row_bytes = (size_t)stride * sizeof(float);
    size_t bytes = nleaves * row_bytes;
    float *leaves = ffu_alloc_large(bytes);
    const float **rows = malloc(ntrees * sizeof *rows);
    double *t = malloc((size_t)rounds * sizeof *t);
    int ok = leaves && rows && t;
    if (ok) {
        /* small values, so the sums stay finite and normal */
        for (size_t i = 0; i < bytes / sizeof(float); i++)
            leaves[i] = (float)(i & 1023) * 1e-6f;
        static const struct {
            int ahead, hint;
            const char *name;
        } schemes[] = {{0, 0, "no prefetch"},          {1, 3, "prefetcht0, 1 block ahead"},
                       {2, 3, "prefetcht0, 2 blocks"}, {4, 3, "prefetcht0, 4 blocks"},
                       {1, 2, "prefetcht1, 1 block"},  {2, 2, "prefetcht1, 2 blocks"},
                       {1, 1, "prefetcht2, 1 block"}};
        ert_sum_rows_fn sum = ert_sum_rows_pick();
        _Alignas(64) float shape[2 * ERT_MAX_PARTS + 16] = {0};
        out->bytes = (double)ntrees * (double)row_bytes;
        out->best_s = -1;
        for (size_t s = 0; s < sizeof schemes / sizeof schemes[0]; s++) {
            for (int r = 0; r < rounds; r++) {
                pick_rows(leaves, ntrees, per_tree, stride, r, rows);
                flush(leaves, bytes);
                double a = bench_now();
                pass(sum, shape, rows, ntrees, stride, schemes[s].ahead, schemes[s].hint);
                t[r] = bench_now() - a;
            }
            double med = bench_median(t, rounds);
            if (verbose) fprintf(stderr, "row stream, %-26s %.1f us\n", schemes[s].name, med * 1e6);
            if (out->best_s < 0 || med < out->best_s) {
                out->best_s = med;
                out->best_scheme = schemes[s].name;
            }
        }
        for (int r = 0; r < rounds; r++) {
            flush(leaves, bytes);
            double a = bench_now();
            uint8_t acc = 0;
            const uint8_t *p = (const uint8_t *)leaves;
            for (size_t i = 0; i < bytes; i += 64)
                acc = (uint8_t)(acc + p[i]);
            sink = acc;
            t[r] = bench_now() - a;
        }
        out->seq_gbs = (double)bytes / bench_median(t, rounds) / 1e9;
        out->rows_gbs = out->bytes / out->best_s / 1e9;
        out->check = shape[0];
    }
    free(leaves);
    free(rows);
    free(t);
    return ok ? 0 : -1;
}
