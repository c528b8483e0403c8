/* Presentation-attack detection (liveness) metrics: AUC and the ISO/IEC 30107-3 error
 * rates, over plain score arrays. `facefuse eval liveness` and the liveness tests use the
 * same definitions through this one function. */
#include <math.h>

#include "face/eval.h"

/* live = score >= t: APCER = share of spoofs accepted, BPCER = share of live rejected. */
static void pad_at(const float *s, const int *live, int n, double t, double *apcer,
                   double *bpcer)
{
    int fa = 0, fr = 0, np = 0, nn = 0;
    for (int i = 0; i < n; i++) {
        if (live[i]) {
            np++;
            fr += s[i] < t;
        } else {
            nn++;
            fa += s[i] >= t;
        }
    }
    *apcer = nn ? (double)fa / nn : NAN;
    *bpcer = np ? (double)fr / np : NAN;
}

eval_pad eval_pad_rates(const float *s, const int *live, int n, double thr)
{
    eval_pad r = {0};
    int np = 0, nn = 0;
    for (int i = 0; i < n; i++)
        live[i] ? np++ : nn++;
    for (int i = 0; i < n; i++)
        for (int j = 0; live[i] && j < n; j++)
            if (!live[j])
                r.auc += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
    r.auc = np && nn ? r.auc / ((double)np * nn) : NAN;
    r.thr = thr;
    pad_at(s, live, n, thr, &r.apcer, &r.bpcer);
    r.acer = (r.apcer + r.bpcer) / 2;
    r.best_acer = INFINITY;
    for (int k = 0; k <= n; k++) {
        double t = k < n ? s[k] : 1.0 + 1e-6, a, b;
        pad_at(s, live, n, t, &a, &b);
        if ((a + b) / 2 < r.best_acer || ((a + b) / 2 == r.best_acer && t < r.best_thr)) {
            r.best_acer = (a + b) / 2;
            r.best_thr = t;
            r.best_apcer = a;
            r.best_bpcer = b;
        }
    }
    return r;
}
