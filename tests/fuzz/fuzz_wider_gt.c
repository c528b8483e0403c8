/* Fuzz target for the evaluation-set parsers (src/face/eval_*.c): WIDER FACE gt.txt +
 * difficulty.txt, and LFW pairs.txt. The input is split at the first "\n%%\n": before
 * it the gt text, after it the difficulty text (none when there is no separator).
 * Whatever parses must be self-consistent, and must evaluate: detections are made
 * from the parsed faces, and the AP must come out in [0, 1] (NAN only for a setting
 * without faces). The text after the separator is also read as detections for the
 * text before it (wider_dets_parse). The whole input is also offered to the LFW pairs
 * parser. Aborts on any broken promise so libFuzzer reports it. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "face/eval.h"

static void check_wider(const wider_gt *gt)
{
    if (!gt || gt->count < 0) abort();
    int total = 0;
    for (int i = 0; i < gt->count; i++) {
        const wider_image *im = &gt->images[i];
        if (!im->name || !im->name[0] || im->name[0] == '/' || im->nfaces < 0 ||
            im->nfaces > WIDER_MAX_FACES || (im->nfaces && !im->faces))
            abort();
        for (int k = 0; k < im->nfaces; k++) {
            const wider_face *f = &im->faces[k];
            if (!isfinite(f->x) || !isfinite(f->y) || !(f->w >= 0) || !(f->h >= 0) || f->keep > 7)
                abort();
        }
        total += im->nfaces;
        char path[64];
        ffu_status st = wider_gt_image_path(gt, i, path, sizeof path);
        if (st != FFU_OK && st != FFU_ERR_TOO_LARGE) abort();
    }

    /* detections: up to 64 per image on the faces (shifted a little for some), plus
     * one far away, scores from the index so ties and reorderings both occur */
    wider_pred *p = calloc((size_t)gt->count + 1, sizeof *p);
    wider_det *d = malloc(sizeof *d * ((size_t)gt->count * 65 + 1));
    if (!p || !d) abort();
    int n = 0, dets = 0;
    for (int i = 0; i < gt->count; i++) {
        const wider_image *im = &gt->images[i];
        p[i].dets = d + n;
        int m = im->nfaces < 64 ? im->nfaces : 64;
        for (int k = 0; k < m; k++) {
            const wider_face *f = &im->faces[k];
            float shift = (k % 3 == 2) ? f->w * 0.3f : 0;
            d[n++] = (wider_det){f->x + shift, f->y, f->w, f->h, (float)((k * 7 + i) % 11) / 10.0f};
        }
        d[n++] = (wider_det){1e5f, 1e5f, 10, 10, 0.55f};
        p[i].count = m + 1;
        dets += m + 1;
    }
    wider_result r;
    if (wider_eval(gt, p, &r) != FFU_OK) abort();
    if (r.dets != dets) abort();
    for (int s = 0; s < WIDER_SETTINGS; s++) {
        if (r.faces[s] < 0 || r.faces[s] > total) abort();
        if (r.faces[s] == 0 ? !isnan(r.ap[s]) : !(r.ap[s] >= 0 && r.ap[s] <= 1 + 1e-12)) abort();
    }
    if (r.faces[WIDER_HARD] && !(r.best_f1 >= 0 && r.best_f1 <= 1 + 1e-12)) abort();
    /* the curve's last point counts every detection: recall cannot be lower there */
    if (r.faces[WIDER_HARD] ? !(r.all_recall >= r.best_recall && r.all_recall <= 1 &&
                                r.all_precision >= 0 && r.all_precision <= 1)
                            : !(isnan(r.all_recall) && isnan(r.all_precision)))
        abort();
    if (r.small_faces && !(r.small_recall >= 0 && r.small_recall <= 1)) abort();
    int banded = 0;
    for (int b = 0; b < WIDER_SIZE_BANDS; b++) {
        banded += r.size_faces[b];
        if (r.size_faces[b] &&
            !(r.size_recall[b] >= 0 && r.size_recall[b] <= r.size_found[b] && r.size_found[b] <= 1))
            abort();
    }
    if (banded != r.faces[WIDER_HARD]) abort();
    free(p);
    free(d);
}

static void check_lfw(const uint8_t *data, size_t size)
{
    lfw_pairs *ps = NULL;
    ffu_status st = lfw_pairs_parse((const char *)data, size, size & 1 ? "d" : NULL, &ps);
    if (st != FFU_OK) {
        if (ps) abort();
        return;
    }
    if (ps->count != ps->folds * 2 * ps->per_fold) abort();
    uint8_t *same = malloc((size_t)ps->count);
    float *sim = malloc(sizeof *sim * (size_t)ps->count);
    if (!same || !sim) abort();
    int ns = 0;
    for (int i = 0; i < ps->count; i++) {
        const lfw_pair *pr = &ps->pairs[i];
        if (!pr->name1 || !pr->name2 || strchr(pr->name1, '/') || strchr(pr->name2, '/') ||
            pr->fold < 0 || pr->fold >= ps->folds)
            abort();
        char path[128];
        st = lfw_pair_path(ps, i, i & 1, path, sizeof path);
        if (st != FFU_OK && st != FFU_ERR_TOO_LARGE) abort();
        same[i] = (uint8_t)pr->same;
        ns += pr->same;
        sim[i] = (i % 13 == 0) ? NAN : (float)((pr->num1 * 31 + pr->num2) % 17) / 17.0f;
    }
    if (ns * 2 != ps->count) abort();
    lfw_result r;
    if (lfw_eval(ps, sim, &r) != FFU_OK) abort();
    if (!(r.acc_mean >= 0 && r.acc_mean <= 1) || !(r.auc >= 0 && r.auc <= 1 + 1e-12) ||
        !(r.tar_far1e3 >= 0 && r.tar_far1e3 <= r.tar_far1e2 && r.tar_far1e2 <= 1))
        abort();
    free(same);
    free(sim);
    lfw_pairs_free(ps);
}

/* Detections made elsewhere (wider_dets_parse) for a ground truth: on success one
 * prediction per image, their counts summing to the total, scores that evaluate to AP
 * in [0, 1]; on error nothing returned. */
static void check_dets(const wider_gt *gt, const char *text, size_t len)
{
    wider_dets *d = NULL;
    ffu_status st = wider_dets_parse(gt, text, len, &d);
    if (st != FFU_OK) {
        if (d) abort();
        return;
    }
    int total = 0;
    for (int i = 0; i < gt->count; i++) {
        const wider_pred *p = &d->preds[i];
        if (p->count < 0 ||
            (p->count && (p->dets < d->all || p->dets + p->count > d->all + d->count)))
            abort();
        for (int k = 0; k < p->count; k++)
            if (!isfinite(p->dets[k].x) || !(p->dets[k].w >= 0) || !(p->dets[k].h >= 0)) abort();
        total += p->count;
    }
    if (total != d->count) abort();
    wider_result r;
    if (wider_eval(gt, d->preds, &r) != FFU_OK || r.dets != total) abort();
    for (int s = 0; s < WIDER_SETTINGS; s++)
        if (r.faces[s] == 0 ? !isnan(r.ap[s]) : !(r.ap[s] >= 0 && r.ap[s] <= 1 + 1e-12)) abort();
    wider_dets_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    size_t gl = size;
    const char *diff = NULL;
    size_t dl = 0;
    for (size_t i = 0; i + 4 <= size; i++)
        if (memcmp(text + i, "\n%%\n", 4) == 0) {
            gl = i + 1;
            diff = text + i + 4;
            dl = size - i - 4;
            break;
        }
    wider_gt *gt = NULL;
    ffu_status st = wider_gt_parse(text, gl, diff, dl, size & 1 ? "/w" : NULL, &gt);
    if (st == FFU_OK)
        check_wider(gt);
    else if (gt)
        abort(); /* out-param must be NULL on error */
    wider_gt_free(gt);
    /* the text after the separator as detections for the text before it (no
     * difficulty: every face counts everywhere) */
    gt = NULL;
    if (diff && wider_gt_parse(text, gl, NULL, 0, NULL, &gt) == FFU_OK) check_dets(gt, diff, dl);
    wider_gt_free(gt);

    check_lfw(data, size);
    return 0;
}
