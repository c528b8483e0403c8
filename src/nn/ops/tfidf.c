/* TfIdfVectorizer (ONNX opset 9) over integer tokens, on ref.
 *
 * Each row of X ([N] or [B, N], int32/int64) is scanned for the n-grams of a pool: the
 * k-grams are pool_int64s[ngram_counts[k - 1] .. ngram_counts[k]) in runs of k (k from 1
 * to max_gram_length). A k-gram is found at position i with skip s when
 * X[i + j (s + 1)] matches its j-th token for every j < k; s runs over 0..max_skip_count
 * for k >= 2 (a unigram is counted once per position). Only k in
 * [min_gram_length, max_gram_length] is counted. The pool's o-th n-gram goes to output
 * column ngram_indexes[o] as its count (TF), weights[o] when found (IDF) or count *
 * weights[o] (TFIDF); weights default to 1. Output: f32 [C] or [B, C], C = the largest
 * index + 1. String tokens (pool_strings) are not supported: the engine has no string
 * tensors. */
#include <string.h>

#include "ops_internal.h"

typedef struct tfidf {
    const int64_t *pool, *counts, *index;
    const float *weights;
    int npool, ncounts, nindex, nweights;
    int64_t min_k, max_k, skip, cols;
    int mode; /* 0 TF, 1 IDF, 2 TFIDF */
} tfidf;

static ffu_status tfidf_geom(const nn_node *n, tfidf *t)
{
    memset(t, 0, sizeof *t);
    if (nn_node_attr(n, "pool_strings"))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "string tokens (pool_strings)");
    t->pool = nn_attr_ints(n, "pool_int64s", &t->npool);
    t->counts = nn_attr_ints(n, "ngram_counts", &t->ncounts);
    t->index = nn_attr_ints(n, "ngram_indexes", &t->nindex);
    t->weights = nn_attr_floats(n, "weights", &t->nweights);
    t->min_k = nn_attr_int(n, "min_gram_length", 0);
    t->max_k = nn_attr_int(n, "max_gram_length", 0);
    t->skip = nn_attr_int(n, "max_skip_count", 0);
    const char *mode = nn_attr_string(n, "mode", "");
    t->mode = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
    if (t->mode < 0) return nn_node_error(n, FFU_ERR_FORMAT, "mode '%s' (TF, IDF or TFIDF)", mode);
    if (t->min_k < 1 || t->max_k < t->min_k || t->max_k > t->ncounts || t->skip < 0 ||
        t->skip > (1 << 20))
        return nn_node_error(n, FFU_ERR_FORMAT, "gram lengths %lld..%lld for %d levels, skip %lld",
                             (long long)t->min_k, (long long)t->max_k, t->ncounts,
                             (long long)t->skip);
    /* levels cut the pool in whole runs, and every n-gram has an output column */
    int64_t grams = 0;
    for (int k = 0; k < t->ncounts; k++) {
        int64_t from = t->counts[k], to = k + 1 < t->ncounts ? t->counts[k + 1] : t->npool;
        if (from < 0 || to < from || to > t->npool || (to - from) % (k + 1))
            return nn_node_error(n, FFU_ERR_FORMAT,
                                 "ngram_counts do not cut the pool into %d-grams", k + 1);
        grams += (to - from) / (k + 1);
    }
    if (grams != t->nindex || (t->nweights && t->nweights != t->nindex))
        return nn_node_error(n, FFU_ERR_FORMAT, "%lld n-grams in the pool, %d indexes, %d weights",
                             (long long)grams, t->nindex, t->nweights);
    t->cols = 0;
    for (int o = 0; o < t->nindex; o++) {
        if (t->index[o] < 0 || t->index[o] > (1 << 24))
            return nn_node_error(n, FFU_ERR_FORMAT, "ngram index %lld", (long long)t->index[o]);
        if (t->index[o] + 1 > t->cols) t->cols = t->index[o] + 1;
    }
    return FFU_OK;
}

static ffu_status tfidf_infer(nn_graph *g, nn_node *n)
{
    ffu_status st = nn_check_inputs(g, n, 1, 1);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0);
    if (x->dtype != FFU_DTYPE_I32 && x->dtype != FFU_DTYPE_I64)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "tokens of type %s", ffu_dtype_name(x->dtype));
    tfidf t;
    if ((st = tfidf_geom(n, &t)) < 0) return st;
    if (x->shape.rank >= 0 && x->shape.rank != 1 && x->shape.rank != 2)
        return nn_node_error(n, FFU_ERR_FORMAT, "X is not [N] or [B, N]");
    /* every n-gram of the pool tried at every position and skip: bounded, so that a
     * hostile file cannot hang a process */
    if (nn_shape_known(&x->shape) &&
        (double)nn_numel(x) * (double)(t.skip + 1) * (double)t.npool > (double)(1 << 30))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED,
                             "%lld tokens, a pool of %d, skips up to %lld: "
                             "over 2^30 comparisons",
                             (long long)nn_numel(x), t.npool, (long long)t.skip);
    nn_shape o = {.rank = x->shape.rank == 2 ? 2 : 1};
    if (o.rank == 2) o.d[0] = x->shape.d[0];
    o.d[o.rank - 1] = t.cols;
    return nn_set_out(g, n, 0, FFU_DTYPE_F32, &o);
}

static ffu_status tfidf_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                            void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    tfidf t;
    ffu_status st = tfidf_geom(n, &t);
    if (st < 0) return st;
    int64_t rows = x->shape.rank == 2 ? x->shape.d[0] : 1, len = x->shape.d[x->shape.rank - 1];
    float *y = out[0];
    for (int64_t r = 0; r < rows; r++) {
        float *yr = y + r * t.cols;
        for (int64_t c = 0; c < t.cols; c++)
            yr[c] = 0;
        int64_t base = 0; /* the ordinal of the level's first n-gram */
        for (int64_t k = 1; k <= t.ncounts; k++) {
            int64_t from = t.counts[k - 1], to = k < t.ncounts ? t.counts[k] : t.npool;
            int64_t grams = (to - from) / k;
            if (k >= t.min_k && k <= t.max_k)
                for (int64_t q = 0; q < grams; q++) {
                    const int64_t *gram = t.pool + from + q * k;
                    int64_t found = 0;
                    for (int64_t i = 0; i < len; i++)
                        for (int64_t s = 0; s <= (k > 1 ? t.skip : 0); s++) {
                            if (i + (k - 1) * (s + 1) >= len) break;
                            int64_t j = 0;
                            while (j < k && nn_load_int(in[0], x->dtype,
                                                        r * len + i + j * (s + 1)) == gram[j])
                                j++;
                            found += j == k;
                        }
                    int64_t o = base + q;
                    double w = t.nweights ? t.weights[o] : 1.0;
                    double v = t.mode == 0   ? (double)found
                               : t.mode == 1 ? (found ? w : 0)
                                             : (double)found * w;
                    yr[t.index[o]] = (float)v;
                }
            base += grams;
        }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_tfidf_vectorizer = {tfidf_infer, tfidf_run, NULL, 0};
