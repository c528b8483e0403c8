/* LFW face verification metrics: the View-2 pairs file, k-fold accuracy with the
 * threshold picked on the other folds (the standard protocol), the best threshold on
 * all pairs (to calibrate an embedder's default), ROC, AUC and TAR at a given FAR.
 * Works on bare similarity arrays so any embedder (or any other pair-scoring
 * dataset) can be measured. Decision rule and the handling of pairs without a face
 * are documented in eval.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "face/eval.h"

#define LFW_MAX_FILE_BYTES (64u << 20)
#define LFW_MAX_NAME 256

/* ---- pairs.txt ---------------------------------------------------------------------- */

void lfw_pairs_free(lfw_pairs *p)
{
    if (!p) return;
    ffu_arena_destroy(p->arena);
    free(p);
}

static int blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Splits p[0..n) at blanks into at most `cap` tokens; returns the count, or cap + 1
 * when there are more. */
static int tokens(const char *p, size_t n, const char **tok, size_t *tlen, int cap)
{
    int k = 0;
    size_t i = 0;
    for (;;) {
        while (i < n && blank(p[i]))
            i++;
        if (i >= n) return k;
        if (k == cap) return cap + 1;
        size_t j = i;
        while (j < n && !blank(p[j]))
            j++;
        tok[k] = p + i;
        tlen[k] = j - i;
        k++;
        i = j;
    }
}

static int to_int(const char *p, size_t n, long lo, long hi, long *v)
{
    if (n == 0 || n > 9) return 0;
    long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        x = x * 10 + (p[i] - '0');
    }
    if (x < lo || x > hi) return 0;
    *v = x;
    return 1;
}

/* Names become folder and file names: printable, no '/', not "." or "..". */
static int valid_person(const char *p, size_t n)
{
    if (n == 0 || n > LFW_MAX_NAME) return 0;
    if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.')) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= ' ' || c == 0x7f || c == '/') return 0;
    }
    return 1;
}

ffu_status lfw_pairs_parse(const char *text, size_t len, const char *dir, lfw_pairs **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "lfw_pairs_parse: out is NULL");
    *out = NULL;
    if (!text && len) return ffu_error_set(FFU_ERR_INVALID, "lfw_pairs_parse: no text");
    if (len > LFW_MAX_FILE_BYTES)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "pairs: over %u bytes", LFW_MAX_FILE_BYTES);
    lfw_pairs *ps = calloc(1, sizeof *ps);
    lfw_pair *arr = NULL;
    size_t cap = 0;
    ffu_status st = FFU_OK;
    if (!ps || ffu_arena_create(&ps->arena, 0) != FFU_OK ||
        (dir && !(ps->dir = ffu_arena_strdup(ps->arena, dir)))) {
        st = ffu_error_set(FFU_ERR_NOMEM, "pairs: out of memory");
        goto fail;
    }

    size_t pos = 0, expect = 0, count = 0;
    int lineno = 0, header = 0;
    while (pos < len) {
        const char *p = text + pos;
        const char *nl = memchr(p, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - p) : len - pos;
        pos += n + (nl ? 1 : 0);
        lineno++;
        if (memchr(p, 0, n)) {
            st = ffu_error_set(FFU_ERR_FORMAT, "pairs line %d: NUL byte", lineno);
            goto fail;
        }
        const char *tok[4];
        size_t tl[4];
        int k = tokens(p, n, tok, tl, 4);
        if (k == 0) continue;
        long a, b;
        if (!header) {
            if (k != 2 || !to_int(tok[0], tl[0], 1, LFW_MAX_FOLDS, &a) ||
                !to_int(tok[1], tl[1], 1, LFW_MAX_PER_FOLD, &b)) {
                st = ffu_error_set(FFU_ERR_FORMAT,
                                   "pairs line %d: expected \"FOLDS N\" (folds "
                                   "1..%d)",
                                   lineno, LFW_MAX_FOLDS);
                goto fail;
            }
            ps->folds = (int)a;
            ps->per_fold = (int)b;
            expect = (size_t)a * 2 * (size_t)b;
            header = 1;
            continue;
        }
        if (count == expect) {
            st = ffu_error_set(FFU_ERR_FORMAT,
                               "pairs line %d: more than the %zu pairs the "
                               "header announces",
                               lineno, expect);
            goto fail;
        }
        lfw_pair pr = {0};
        int ok = 0;
        if (k == 3 && valid_person(tok[0], tl[0]) && to_int(tok[1], tl[1], 1, 9999, &a) &&
            to_int(tok[2], tl[2], 1, 9999, &b)) {
            pr.name1 = pr.name2 = ffu_arena_strndup(ps->arena, tok[0], tl[0]);
            pr.num1 = (int)a;
            pr.num2 = (int)b;
            pr.same = 1;
            ok = 1;
        } else if (k == 4 && valid_person(tok[0], tl[0]) && to_int(tok[1], tl[1], 1, 9999, &a) &&
                   valid_person(tok[2], tl[2]) && to_int(tok[3], tl[3], 1, 9999, &b)) {
            pr.name1 = ffu_arena_strndup(ps->arena, tok[0], tl[0]);
            pr.name2 = ffu_arena_strndup(ps->arena, tok[2], tl[2]);
            pr.num1 = (int)a;
            pr.num2 = (int)b;
            ok = 1;
        }
        if (!ok) {
            st = ffu_error_set(FFU_ERR_FORMAT,
                               "pairs line %d: expected \"Name i j\" or "
                               "\"Name1 i Name2 j\"",
                               lineno);
            goto fail;
        }
        if (!pr.name1 || !pr.name2) {
            st = ffu_error_set(FFU_ERR_NOMEM, "pairs: out of memory");
            goto fail;
        }
        pr.fold = (int)(count / (2 * (size_t)ps->per_fold));
        if (count == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            lfw_pair *na = realloc(arr, nc * sizeof *na);
            if (!na) {
                st = ffu_error_set(FFU_ERR_NOMEM, "pairs: out of memory");
                goto fail;
            }
            arr = na;
            cap = nc;
        }
        arr[count++] = pr;
    }
    if (!header) {
        st = ffu_error_set(FFU_ERR_FORMAT, "pairs: empty (no \"FOLDS N\" line)");
        goto fail;
    }
    if (count != expect) {
        st = ffu_error_set(FFU_ERR_FORMAT, "pairs: %zu pairs, the header announces %zu", count,
                           expect);
        goto fail;
    }
    for (int f = 0; f < ps->folds; f++) {
        int same = 0;
        for (int i = 0; i < 2 * ps->per_fold; i++)
            same += arr[(size_t)f * 2 * ps->per_fold + i].same;
        if (same != ps->per_fold) {
            st = ffu_error_set(FFU_ERR_FORMAT,
                               "pairs: fold %d has %d same-person pairs, expected "
                               "%d",
                               f + 1, same, ps->per_fold);
            goto fail;
        }
    }
    ps->count = (int)count;
    ps->pairs = ffu_arena_alloc(ps->arena, count * sizeof *arr);
    if (!ps->pairs) {
        st = ffu_error_set(FFU_ERR_NOMEM, "pairs: out of memory");
        goto fail;
    }
    memcpy(ps->pairs, arr, count * sizeof *arr);
    free(arr);
    *out = ps;
    return FFU_OK;
fail:
    free(arr);
    lfw_pairs_free(ps);
    return st;
}

ffu_status lfw_pairs_load(const char *dir, lfw_pairs **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "lfw_pairs_load: out is NULL");
    *out = NULL;
    if (!dir) return ffu_error_set(FFU_ERR_INVALID, "lfw_pairs_load: dir is NULL");
    char path[4096];
    snprintf(path, sizeof path, "%s/pairs.txt", dir);
    char *text = NULL;
    size_t len = 0;
    ffu_status st = ffu_file_read(path, LFW_MAX_FILE_BYTES, (uint8_t **)&text, &len);
    if (st < 0) return st;
    st = lfw_pairs_parse(text, len, dir, out);
    if (st < 0) ffu_error_prefix(st, path);
    free(text);
    return st;
}

ffu_status lfw_pair_path(const lfw_pairs *p, int i, int which, char *buf, size_t len)
{
    if (!buf || len == 0) return ffu_error_set(FFU_ERR_INVALID, "lfw_pair_path: no buffer");
    buf[0] = 0;
    if (!p || i < 0 || i >= p->count || (which != 0 && which != 1))
        return ffu_error_set(FFU_ERR_INVALID, "lfw_pair_path: pair %d image %d out of range", i,
                             which);
    const char *name = which ? p->pairs[i].name2 : p->pairs[i].name1;
    int num = which ? p->pairs[i].num2 : p->pairs[i].num1;
    int w = snprintf(buf, len, "%s%simages/%s/%s_%04d.jpg", p->dir ? p->dir : "", p->dir ? "/" : "",
                     name, name, num);
    if (w < 0 || (size_t)w >= len) {
        buf[0] = 0;
        return ffu_error_set(FFU_ERR_TOO_LARGE, "lfw_pair_path: %zu bytes too few", len);
    }
    return FFU_OK;
}

/* ---- metrics ------------------------------------------------------------------------ */

typedef struct scored {
    double s;
    int same;
} scored;

static int cmp_asc(const void *a, const void *b)
{
    double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
    return (x > y) - (x < y);
}

static ffu_status check_input(int n, const uint8_t *same, const float *sim, int *ns, int *nd)
{
    *ns = *nd = 0;
    if (n <= 0 || !same || !sim)
        return ffu_error_set(FFU_ERR_INVALID, "lfw: need n > 0 pairs with labels and similarities");
    for (int i = 0; i < n; i++) {
        if (same[i] > 1)
            return ffu_error_set(FFU_ERR_INVALID, "lfw: pair %d: label %d", i, same[i]);
        if (isinf(sim[i]))
            return ffu_error_set(FFU_ERR_INVALID, "lfw: pair %d: infinite similarity", i);
        if (same[i])
            (*ns)++;
        else
            (*nd)++;
    }
    if (*ns == 0 || *nd == 0)
        return ffu_error_set(FFU_ERR_INVALID, "lfw: need both same and different pairs");
    return FFU_OK;
}

/* Best accuracy threshold over the pairs with use[i] (NULL: all), by a sweep over the
 * sorted finite similarities: candidates are "accept all", the midpoints between
 * consecutive distinct values and "reject all". Of equally good candidates the middle
 * one is taken, which keeps the threshold away from both classes. `buf` holds n. */
static void best_threshold(int n, const uint8_t *same, const float *sim, const uint8_t *use,
                           scored *buf, double *thr, double *acc)
{
    int m = 0, total = 0, nsame = 0;
    for (int i = 0; i < n; i++) {
        if (use && !use[i]) continue;
        total++;
        if (isnan(sim[i])) continue; /* wrong at every threshold */
        buf[m].s = sim[i];
        buf[m].same = same[i];
        nsame += same[i];
        m++;
    }
    *thr = 0;
    *acc = 0;
    if (total == 0) return;
    if (m == 0) return; /* every pair wrong whatever the threshold */
    qsort(buf, (size_t)m, sizeof *buf, cmp_asc);
    /* pass 1: the best count; pass 2: pick the middle of the tied candidates */
    int best = -1, ties = 0;
    for (int pass = 0; pass < 2; pass++) {
        int correct = nsame, seen = 0, want = (ties - 1) / 2;
        for (int i = 0;;) {
            /* the candidate just below buf[i] (or above everything when i == m) */
            if (pass == 0) {
                if (correct > best)
                    best = correct, ties = 1;
                else if (correct == best)
                    ties++;
            } else if (correct == best) {
                if (seen++ == want) {
                    if (i == 0)
                        *thr = nextafter(buf[0].s, -INFINITY); /* accept all */
                    else if (i == m)
                        *thr = nextafter(buf[m - 1].s, INFINITY); /* reject all */
                    else
                        *thr = 0.5 * (buf[i - 1].s + buf[i].s);
                    *acc = (double)best / total;
                    return;
                }
            }
            if (i == m) break;
            double v = buf[i].s;
            while (i < m && buf[i].s == v) {
                correct += buf[i].same ? -1 : 1;
                i++;
            }
        }
    }
}

static int count_correct(int n, const uint8_t *same, const float *sim, const int *fold, int k,
                         double thr, int *total)
{
    int c = 0;
    *total = 0;
    for (int i = 0; i < n; i++) {
        if (fold && fold[i] != k) continue;
        (*total)++;
        if (isnan(sim[i])) continue;
        c += same[i] ? sim[i] >= thr : sim[i] < thr;
    }
    return c;
}

static int cmp_desc(const void *a, const void *b) { return -cmp_asc(a, b); }

ffu_status lfw_roc(int n, const uint8_t *same, const float *sim, lfw_roc_point *pts, int cap,
                   int *npoints)
{
    if (npoints) *npoints = 0;
    int ns, nd;
    ffu_status st = check_input(n, same, sim, &ns, &nd);
    if (st < 0) return st;
    if (!npoints || (cap > 0 && !pts)) return ffu_error_set(FFU_ERR_INVALID, "lfw_roc: no output");
    scored *b = malloc(sizeof *b * (size_t)n);
    if (!b) return ffu_error_set(FFU_ERR_NOMEM, "lfw_roc: out of memory");
    int m = 0, acc_diff = 0, acc_same = 0;
    for (int i = 0; i < n; i++) {
        if (isnan(sim[i])) {
            acc_diff += !same[i]; /* a NAN different pair counts as accepted */
            continue;
        }
        b[m].s = sim[i];
        b[m].same = same[i];
        m++;
    }
    qsort(b, (size_t)m, sizeof *b, cmp_desc);
    int k = 0;
    if (k < cap) pts[k] = (lfw_roc_point){INFINITY, (double)acc_diff / nd, 0};
    k++;
    for (int i = 0; i < m;) {
        double v = b[i].s;
        while (i < m && b[i].s == v) {
            if (b[i].same)
                acc_same++;
            else
                acc_diff++;
            i++;
        }
        if (k < cap) pts[k] = (lfw_roc_point){v, (double)acc_diff / nd, (double)acc_same / ns};
        k++;
    }
    free(b);
    *npoints = k;
    return FFU_OK;
}

ffu_status lfw_tar_at_far(int n, const uint8_t *same, const float *sim, double far, double *tar,
                          double *thr)
{
    if (tar) *tar = 0;
    if (thr) *thr = INFINITY;
    int ns, nd;
    ffu_status st = check_input(n, same, sim, &ns, &nd);
    if (st < 0) return st;
    if (!tar || !thr || !(far >= 0))
        return ffu_error_set(FFU_ERR_INVALID, "lfw_tar_at_far: bad far or outputs");
    int nan_diff = 0;
    for (int i = 0; i < n; i++)
        nan_diff += !same[i] && isnan(sim[i]);
    /* different pairs we may accept among the finite ones; the small epsilon keeps
     * far * nd = 1.5 - 1e-16 from losing a whole pair to rounding */
    double allowed_d = floor(far * nd + 1e-9) - nan_diff;
    if (allowed_d < 0) return FFU_OK; /* the NAN pairs alone exceed the FAR */
    long allowed = allowed_d > n ? n : (long)allowed_d;

    scored *b = malloc(sizeof *b * (size_t)n);
    if (!b) return ffu_error_set(FFU_ERR_NOMEM, "lfw_tar_at_far: out of memory");
    int m = 0, md = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(sim[i])) {
            b[m].s = sim[i];
            b[m].same = same[i];
            md += !same[i];
            m++;
        }
    qsort(b, (size_t)m, sizeof *b, cmp_desc);
    if (allowed >= md) {
        /* every finite pair may be accepted */
        int acc = 0;
        for (int i = 0; i < m; i++)
            acc += b[i].same;
        *tar = (double)acc / ns;
        *thr = m ? b[m - 1].s : -INFINITY;
        free(b);
        return FFU_OK;
    }
    /* the (allowed+1)-th highest different-pair similarity must be rejected: the
     * threshold goes just above it, midway to the next higher value of any pair */
    int seen_d = 0, i = 0;
    double cut = 0;
    for (; i < m; i++)
        if (!b[i].same && seen_d++ == allowed) {
            cut = b[i].s;
            break;
        }
    int j = i;
    while (j > 0 && b[j - 1].s == cut)
        j--; /* first entry equal to cut (descending) */
    int acc = 0;
    for (int t = 0; t < j; t++)
        acc += b[t].same;
    *tar = (double)acc / ns;
    *thr = j > 0 ? 0.5 * (b[j - 1].s + cut) : nextafter(cut, INFINITY);
    free(b);
    return FFU_OK;
}

ffu_status lfw_eval_labels(int n, const uint8_t *same, const int *fold, int folds, const float *sim,
                           lfw_result *r)
{
    if (!r) return ffu_error_set(FFU_ERR_INVALID, "lfw_eval: result is NULL");
    memset(r, 0, sizeof *r);
    int ns, nd;
    ffu_status st = check_input(n, same, sim, &ns, &nd);
    if (st < 0) return st;
    if (folds > LFW_MAX_FOLDS)
        return ffu_error_set(FFU_ERR_INVALID, "lfw_eval: %d folds (at most %d)", folds,
                             LFW_MAX_FOLDS);
    int kfold = fold && folds >= 2;
    int fsize[LFW_MAX_FOLDS] = {0};
    if (kfold) {
        for (int i = 0; i < n; i++) {
            if (fold[i] < 0 || fold[i] >= folds)
                return ffu_error_set(FFU_ERR_INVALID, "lfw_eval: pair %d: fold %d", i, fold[i]);
            fsize[fold[i]]++;
        }
        for (int k = 0; k < folds; k++)
            if (fsize[k] == 0)
                return ffu_error_set(FFU_ERR_INVALID, "lfw_eval: fold %d is empty", k);
    }

    scored *buf = malloc(sizeof *buf * (size_t)n);
    uint8_t *use = malloc((size_t)n);
    lfw_roc_point *roc = malloc(sizeof *roc * ((size_t)n + 1));
    if (!buf || !use || !roc) {
        st = ffu_error_set(FFU_ERR_NOMEM, "lfw_eval: out of memory");
        goto out;
    }
    r->pairs = n;
    r->same = ns;
    r->diff = nd;
    for (int i = 0; i < n; i++)
        if (isnan(sim[i])) {
            if (same[i])
                r->nan_same++;
            else
                r->nan_diff++;
        }

    best_threshold(n, same, sim, NULL, buf, &r->best_thr, &r->best_acc);
    if (kfold) {
        r->folds = folds;
        double sum = 0, sq = 0;
        for (int k = 0; k < folds; k++) {
            for (int i = 0; i < n; i++)
                use[i] = fold[i] != k;
            double train_acc;
            best_threshold(n, same, sim, use, buf, &r->fold_thr[k], &train_acc);
            int total;
            int c = count_correct(n, same, sim, fold, k, r->fold_thr[k], &total);
            r->fold_acc[k] = (double)c / total;
            sum += r->fold_acc[k];
        }
        r->acc_mean = sum / folds;
        for (int k = 0; k < folds; k++)
            sq += (r->fold_acc[k] - r->acc_mean) * (r->fold_acc[k] - r->acc_mean);
        r->acc_std = sqrt(sq / folds);
    } else {
        r->acc_mean = r->best_acc;
    }

    if ((st = lfw_tar_at_far(n, same, sim, 1e-3, &r->tar_far1e3, &r->thr_far1e3)) < 0) goto out;
    if ((st = lfw_tar_at_far(n, same, sim, 1e-2, &r->tar_far1e2, &r->thr_far1e2)) < 0) goto out;
    int np = 0;
    if ((st = lfw_roc(n, same, sim, roc, n + 1, &np)) < 0) goto out;
    for (int i = 1; i < np; i++)
        r->auc += (roc[i].far - roc[i - 1].far) * 0.5 * (roc[i].tar + roc[i - 1].tar);
out:
    free(buf);
    free(use);
    free(roc);
    if (st < 0) memset(r, 0, sizeof *r);
    return st;
}

ffu_status lfw_eval(const lfw_pairs *p, const float *sim, lfw_result *r)
{
    if (r) memset(r, 0, sizeof *r);
    if (!p || p->count <= 0) return ffu_error_set(FFU_ERR_INVALID, "lfw_eval: no pairs");
    uint8_t *same = malloc((size_t)p->count);
    int *fold = malloc(sizeof *fold * (size_t)p->count);
    ffu_status st;
    if (!same || !fold) {
        st = ffu_error_set(FFU_ERR_NOMEM, "lfw_eval: out of memory");
    } else {
        for (int i = 0; i < p->count; i++) {
            same[i] = (uint8_t)p->pairs[i].same;
            fold[i] = p->pairs[i].fold;
        }
        st = lfw_eval_labels(p->count, same, fold, p->folds, sim, r);
    }
    free(same);
    free(fold);
    return st;
}
