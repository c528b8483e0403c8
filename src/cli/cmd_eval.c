/* `facefuse eval lfw|wider|landmarks|liveness|swap` (swap: cmd_eval_swap.c): accuracy on
 * the real evaluation data in ../shared/data, with the protocols the papers (or our
 * tests) use, so that a number in docs/EVAL.md can be rerun with one command.
 *   eval wider      WIDER FACE val subset: AP easy/medium/hard (official protocol,
 *                   IoU 0.5) per detector, plus the best-F1 operating point and
 *                   precision / recall at the detector's default threshold
 *   eval lfw        LFW View-2 folds: k-fold accuracy, best threshold, TAR at FAR 1e-3
 *                   and 1e-2, AUC per embedder
 *   eval landmarks  300-W annotated Helen faces: NME (outer eye corners) per landmarker,
 *                   faces given from the truth as tests/unit/test_face_landmark.c does
 *   eval liveness   NUAA imposter split: AUC, APCER/BPCER/ACER at the zoo threshold and
 *                   at the ACER-minimising one, as tests/unit/test_face_liveness_attr.c
 *   eval rotations  LFW photos turned 0/90/180/270 degrees: how often the detector (with
 *                   rotations on) gives the centre face the rotation it was turned by
 *   eval small-faces  LFW faces shrunk to 12-48 px in a 1080p frame: how many the
 *                   detector finds with --min-face (frames: src/face/eval_small.c)
 * The WIDER/LFW metric code is src/face/eval_*.c; the landmark and liveness metrics are
 * a few lines each and live here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "face/eval.h"
#include "face/eval_run.h"
#include "face/landmark_internal.h"
#include "facefuse/face.h"
#include "facefuse/image.h"
#include "ffu_config.h"


typedef struct {
    cli_common common;
    char *data;
    char *detector, *embedder, *landmarker, *liveness;
    char *detections; /* wider: a file of detections made elsewhere */
    double min_score, nms;
    int input_size, min_face, limit, threads, backend;
    int device, fp16, bf16; /* CLI_MODEL_OPTIONS */
} eval_opts;

static const ffu_option eval_options[] = {
    CLI_COMMON_OPTIONS,
    {"data", 0, FFU_OPT_STRING, offsetof(eval_opts, data),
     "data set folder (default: $FFU_SHARED_DIR/data/{lfw,widerface,landmarks68,"
     "antispoof_nuaa}, else ../shared/data)",
     NULL, 0, 0, NULL, "DIR"},
    {"detector", 'd', FFU_OPT_STRING, offsetof(eval_opts, detector),
     "detector(s), comma-separated zoo names or FAMILY:PATH; wider: `all` = every detector "
     "in the zoo",
     NULL, 0, 0, NULL, "LIST"},
    {"embedder", 'e', FFU_OPT_STRING, offsetof(eval_opts, embedder),
     "lfw: embedder(s), comma-separated, or `all`", NULL, 0, 0, NULL, "LIST"},
    {"landmarker", 'l', FFU_OPT_STRING, offsetof(eval_opts, landmarker),
     "landmarks: landmarker(s), comma-separated, or `all` (every 68-point-capable model in "
     "the zoo; iris is skipped); lfw: the one that refines the keypoints before alignment "
     "(default: the default landmarker, as compare and enrol do; `none` = the detector's)",
     NULL, 0, 0, NULL, "LIST"},
    {"liveness-model", 0, FFU_OPT_STRING, offsetof(eval_opts, liveness),
     "liveness: model(s), comma-separated, `default` (the library's default combination) "
     "or `all` (default + every liveness model in the zoo)",
     NULL, 0, 0, NULL, "LIST"},
    {"min-score", 0, FFU_OPT_FLOAT, offsetof(eval_opts, min_score),
     "detection score threshold; 0 = 0.02 for wider (the protocol wants the whole PR "
     "curve), 0.3 for lfw (every image holds a face; the centre one is used), the "
     "detector's default for liveness",
     "0", 0, 1, NULL, "S"},
    {"nms", 0, FFU_OPT_FLOAT, offsetof(eval_opts, nms), "NMS IoU (0 = the detector's default)", "0",
     0, 1, NULL, "IOU"},
    {"input-size", 0, FFU_OPT_INT, offsetof(eval_opts, input_size),
     "dynamic-input detectors: longest side fed to the net (0 = the image's own size)", "0", 0,
     8192, NULL, "PX"},
    {"min-face", 0, FFU_OPT_INT, offsetof(eval_opts, min_face),
     "wider, small-faces: smallest face to look for (tiles); 0 = none; default none for "
     "wider, 20 for small-faces",
     "-1", -1, 10000, NULL, "PX"},
    {"detections", 0, FFU_OPT_STRING, offsetof(eval_opts, detections),
     "wider: score this file's detections instead of running detectors (per image: its "
     "name as in gt.txt, a count, then that many \"x y w h score\" lines; images without "
     "a block have none)",
     NULL, 0, 0, NULL, "FILE"},
    {"limit", 0, FFU_OPT_INT, offsetof(eval_opts, limit),
     "use only the first N images (wider, landmarks), or N pairs (lfw) or images "
     "(liveness) spread over the list; 0 = all (rotations: 300 photos, small-faces: 240 "
     "faces)",
     "0", 0, 1000000, NULL, "N"},
    {"threads", 't', FFU_OPT_INT, offsetof(eval_opts, threads), "inference threads (0 = all CPUs)",
     "0", 0, 1024, NULL, "N"},
    {"backend", 'b', FFU_OPT_ENUM, offsetof(eval_opts, backend), CLI_BACKEND_HELP, "cpu", 0, 0,
     cli_backend_names, NULL},
    CLI_MODEL_OPTIONS(eval_opts),
    {0},
};

static void data_dir(const eval_opts *o, const char *set, char *buf, size_t len)
{
    if (o->data) {
        snprintf(buf, len, "%s", o->data);
        return;
    }
    const char *shared = getenv("FFU_SHARED_DIR");
    snprintf(buf, len, "%s/data/%s", shared && *shared ? shared : FFU_SHARED_DIR_DEFAULT, set);
}

/* Splits a comma list into names (in place); "all" -> every zoo entry of the role
 * whose files are present. Returns the count. */
static int model_list(char *spec, ffu_face_role role, const char **names, int cap)
{
    int n = 0;
    if (!spec || !*spec) {
        names[n++] = ffu_zoo_default(role)->name;
        return n;
    }
    if (!strcmp(spec, "all")) {
        for (int i = 0; i < ffu_zoo_count() && n < cap; i++) {
            const ffu_zoo_entry *e = ffu_zoo_get(i);
            ffu_zoo_entry r;
            char path[1024];
            if (e->role == role && !ffu_zoo_resolve(role, e->name, &r, path, sizeof path))
                names[n++] = e->name;
        }
        ffu_error_clear();
        return n;
    }
    for (char *tok = strtok(spec, ","); tok && n < cap; tok = strtok(NULL, ","))
        names[n++] = tok;
    return n;
}

/* FFU_OK when every name of the list resolves (a zoo row, or FAMILY:PATH to a file that
 * exists), so that a typo is one error line before any table or work starts. */
static ffu_status resolve_models(ffu_face_role role, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        ffu_zoo_entry e;
        char path[1024];
        ffu_status st = ffu_zoo_resolve(role, names[i], &e, path, sizeof path);
        if (st < 0) return st;
    }
    return FFU_OK;
}

static ffu_face_model_opts model_opts(const eval_opts *o, const char *name)
{
    ffu_face_model_opts m = {.model = name,
                             .backend = cli_backend_names[o->backend],
                             .threads = o->threads,
                             .device = o->device,
                             .fp16 = o->fp16,
                             .bf16 = o->bf16};
    return m;
}

/* ---- WIDER FACE ------------------------------------------------------------------------ */

/* The detector options every evaluation takes from the command line (no tiles). */
static ffu_detector_opts detector_opts(const eval_opts *o, const char *name)
{
    ffu_detector_opts d;
    ffu_detector_opts_default(&d);
    d.m = model_opts(o, name);
    d.min_score = (float)o->min_score;
    d.nms_iou = (float)o->nms;
    d.input_size = o->input_size;
    return d;
}

/* One detector on the first nimg images: r over every detection from min score 0.02 (the
 * protocol's whole curve), and *at_def over those scoring at least the detector's default
 * threshold (*def_score): what a user gets with the default settings, taken from the same
 * run (score-weighted merging saw the lower boxes too, so a run at that threshold may
 * place a box a little differently). */
static ffu_status wider_one(const eval_opts *o, const wider_gt *gt, int nimg, const char *name,
                            wider_result *r, wider_result *at_def, float *def_score,
                            double *seconds)
{
    ffu_detector_opts d = detector_opts(o, name);
    if (!(d.min_score > 0)) d.min_score = 0.02f;
    d.min_face = o->min_face > 0 ? o->min_face : 0;
    ffu_detector *det = NULL;
    ffu_status st = ffu_detector_create(&d, &det);
    if (st)
        return st;
    wider_pred *preds = calloc((size_t)gt->count, sizeof *preds);
    ffu_face_list faces = {0};
    if (!preds) {
        ffu_detector_destroy(det);
        return ffu_error_set(FFU_ERR_NOMEM, "predictions");
    }
    cli_progress_bar bar;
    char label[64];
    snprintf(label, sizeof label, "wider %s", name);
    cli_progress_start(&bar, label, (size_t)nimg, &o->common);
    double t0 = ffu_clock_sec(), tdet = 0;
    for (int i = 0; i < nimg && !st; i++) {
        char path[4096];
        ffu_image img = {0};
        st = wider_gt_image_path(gt, i, path, sizeof path);
        if (!st)
            st = ffu_image_load(path, FFU_PIX_RGB24, &img);
        double t1 = ffu_clock_sec();
        if (!st)
            st = ffu_detector_detect(det, &img, &faces);
        tdet += ffu_clock_sec() - t1;
        ffu_image_release(&img);
        if (st)
            break;
        wider_det *dets = faces.count ? malloc((size_t)faces.count * sizeof *dets) : NULL;
        if (faces.count && !dets) {
            st = ffu_error_set(FFU_ERR_NOMEM, "detections");
            break;
        }
        for (int k = 0; k < faces.count; k++) {
            const ffu_face *f = &faces.faces[k];
            dets[k] = (wider_det){f->box[0], f->box[1], f->box[2], f->box[3], f->score};
        }
        preds[i].dets = dets;
        preds[i].count = faces.count;
        cli_progress(&bar, (size_t)i + 1);
    }
    (void)t0;
    *seconds = tdet;
    wider_gt sub = *gt; /* --limit: evaluate the images we ran on */
    sub.count = nimg;
    if (!st) st = wider_eval(&sub, preds, r);
    *def_score = ffu_detector_model(det)->threshold;
    for (int i = 0; i < nimg && !st; i++) {
        wider_det *dets = (wider_det *)preds[i].dets;
        int kept = 0;
        for (int k = 0; k < preds[i].count; k++)
            if (dets[k].score >= *def_score) dets[kept++] = dets[k];
        preds[i].count = kept;
    }
    if (!st) st = wider_eval(&sub, preds, at_def);
    for (int i = 0; i < gt->count; i++)
        free((void *)preds[i].dets);
    free(preds);
    ffu_face_list_free(&faces);
    ffu_detector_destroy(det);
    return st;
}

/* --detections: the file's detections on the first nimg images, scored as wider_one
 * scores a detector's (no default threshold: *at_def is left NAN). */
static ffu_status wider_file(const wider_gt *gt, int nimg, const char *path, wider_result *r,
                             wider_result *at_def)
{
    uint8_t *text = NULL;
    size_t len = 0;
    wider_dets *d = NULL;
    ffu_status st = ffu_file_read(path, WIDER_MAX_FILE_BYTES, &text, &len);
    if (!st) st = wider_dets_parse(gt, (const char *)text, len, &d);
    free(text);
    wider_gt sub = *gt; /* --limit: the first nimg images */
    sub.count = nimg;
    if (!st) st = wider_eval(&sub, d->preds, r);
    at_def->all_precision = at_def->all_recall = NAN;
    wider_dets_free(d);
    return st;
}

static int run_wider(const cli_command *cmd, eval_opts *o, ffu_jw *w)
{
    if (o->detections && o->detector)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "--detections scores a file of detections: give it without "
                            "--detector");
    char dir[2048];
    data_dir(o, "widerface", dir, sizeof dir);
    wider_gt *gt = NULL;
    ffu_status st = wider_gt_load(dir, &gt);
    if (st)
        return cli_fail(cmd, &o->common, st);
    int nimg = o->limit > 0 && o->limit < gt->count ? o->limit : gt->count;
    const char *names[64];
    int n = 1;
    if (o->detections) {
        names[0] = o->detections; /* scored instead of detectors */
    } else {
        n = model_list(o->detector, FFU_ROLE_DETECT, names, 64);
        st = resolve_models(FFU_ROLE_DETECT, names, n);
    }
    if (st < 0) {
        wider_gt_free(gt);
        return cli_fail(cmd, &o->common, st);
    }
    int rc = CLI_EXIT_OK;
    wider_result *res = calloc((size_t)(n > 0 ? n : 1), sizeof *res); /* for the size table */
    if (!res) {
        wider_gt_free(gt);
        return cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "dataset"), ffu_jw_string(w, dir);
        ffu_jw_key(w, "images"), ffu_jw_int(w, nimg);
        ffu_jw_key(w, "min_score"), ffu_jw_number(w, o->min_score > 0 ? o->min_score : 0.02);
        ffu_jw_key(w, "detectors");
        ffu_jw_begin_array(w);
    } else {
        if (o->detections)
            printf("WIDER FACE: %d images from %s, official protocol (IoU 0.5), the file's "
                   "detections\n", nimg, dir);
        else
            printf("WIDER FACE: %d images from %s, official protocol (IoU 0.5), min score %.2f\n",
                   nimg, dir, o->min_score > 0 ? o->min_score : 0.02);
        printf("%-16s %7s %7s %7s %9s %8s %6s %6s %6s %8s\n", "detector", "easy", "medium", "hard",
               "small-rec", "best-F1", "def", "P@def", "R@def", "ms/img");
    }
    int done = 0;
    for (int i = 0; i < n; i++) {
        wider_result r, at_def;
        float def_score = NAN;
        double secs = NAN;
        st = o->detections ? wider_file(gt, nimg, names[i], &r, &at_def)
                           : wider_one(o, gt, nimg, names[i], &r, &at_def, &def_score, &secs);
        if (st) {
            rc = o->detections ? cli_fail_path(cmd, &o->common, st, names[i]) /* names it */
                               : cli_fail(cmd, &o->common, st);
            break;
        }
        res[done++] = r;
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "detector"), ffu_jw_string(w, names[i]);
            ffu_jw_key(w, "ap_easy"), ffu_jw_number(w, r.ap[0]);
            ffu_jw_key(w, "ap_medium"), ffu_jw_number(w, r.ap[1]);
            ffu_jw_key(w, "ap_hard"), ffu_jw_number(w, r.ap[2]);
            ffu_jw_key(w, "best_f1"), ffu_jw_number(w, r.best_f1);
            ffu_jw_key(w, "best_precision"), ffu_jw_number(w, r.best_precision);
            ffu_jw_key(w, "best_recall"), ffu_jw_number(w, r.best_recall);
            ffu_jw_key(w, "best_score"), ffu_jw_number(w, r.best_score);
            if (isfinite(def_score))
                ffu_jw_key(w, "default_score"),
                    ffu_jw_number(w, round((double)def_score * 1000) / 1000);
            if (isfinite(at_def.all_precision)) {
                ffu_jw_key(w, "default_precision"), ffu_jw_number(w, at_def.all_precision);
                ffu_jw_key(w, "default_recall"), ffu_jw_number(w, at_def.all_recall);
            }
            if (isfinite(r.small_recall))
                ffu_jw_key(w, "small_recall"), ffu_jw_number(w, r.small_recall);
            ffu_jw_key(w, "size_recall");
            ffu_jw_begin_array(w);
            for (int b = 0; b < WIDER_SIZE_BANDS; b++) {
                ffu_jw_begin_object(w);
                ffu_jw_key(w, "from_px"), ffu_jw_number(w, wider_size_band_from(b));
                if (b + 1 < WIDER_SIZE_BANDS)
                    ffu_jw_key(w, "to_px"), ffu_jw_number(w, wider_size_band_from(b + 1));
                ffu_jw_key(w, "faces"), ffu_jw_int(w, r.size_faces[b]);
                if (isfinite(r.size_recall[b])) {
                    ffu_jw_key(w, "recall"), ffu_jw_number(w, r.size_recall[b]);
                    ffu_jw_key(w, "found"), ffu_jw_number(w, r.size_found[b]);
                }
                ffu_jw_end_object(w);
            }
            ffu_jw_end_array(w);
            ffu_jw_key(w, "detections"), ffu_jw_int(w, r.dets);
            if (isfinite(secs)) ffu_jw_key(w, "ms_per_image"), ffu_jw_number(w, 1000 * secs / nimg);
            ffu_jw_end_object(w);
        } else {
            printf("%-16s %7.4f %7.4f %7.4f %9.3f %8.3f", names[i], r.ap[0], r.ap[1], r.ap[2],
                   r.small_recall, r.best_f1);
            if (isfinite(def_score)) /* a detector of ours, not a file's detections */
                printf(" %6.3f %6.3f %6.3f %8.1f\n", def_score, at_def.all_precision,
                       at_def.all_recall, 1000 * secs / nimg);
            else
                printf(" %6s %6s %6s %8s\n", "-", "-", "-", "-");
            fflush(stdout);
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
    } else if (done > 0) {
        printf("\nhard-setting faces by size, max(w, h) in px: recall at each detector's best-F1 "
               "score, and (found) by any detection at all\n%-16s",
               "detector");
        for (int b = 0; b < WIDER_SIZE_BANDS; b++) {
            char band[32];
            if (b + 1 < WIDER_SIZE_BANDS)
                snprintf(band, sizeof band, "%g-%g", wider_size_band_from(b),
                         wider_size_band_from(b + 1));
            else
                snprintf(band, sizeof band, "%g+", wider_size_band_from(b));
            printf(" %13s", band);
        }
        printf("\n%-16s", "(faces)");
        for (int b = 0; b < WIDER_SIZE_BANDS; b++)
            printf(" %13d", res[0].size_faces[b]);
        printf("\n");
        for (int i = 0; i < done; i++) {
            printf("%-16s", names[i]);
            for (int b = 0; b < WIDER_SIZE_BANDS; b++)
                printf("   %.3f (%.3f)", res[i].size_recall[b], res[i].size_found[b]);
            printf("\n");
        }
    }
    free(res);
    wider_gt_free(gt);
    return rc;
}

/* ---- LFW ------------------------------------------------------------------------------- */

static int run_lfw(const cli_command *cmd, eval_opts *o, ffu_jw *w)
{
    char dir[2048];
    data_dir(o, "lfw", dir, sizeof dir);
    lfw_pairs *pairs = NULL;
    ffu_status st = lfw_pairs_load(dir, &pairs);
    if (st)
        return cli_fail(cmd, &o->common, st);
    if (o->limit > 0 && o->limit < pairs->count) {
        /* N pairs spread over the list: the file holds each fold's same pairs, then its
         * different ones, so the first N would leave folds and a class out */
        int n = o->limit;
        for (int i = 0; i < n; i++)
            pairs->pairs[i] = pairs->pairs[(int64_t)i * pairs->count / n];
        pairs->count = n;
        /* per fold: bit 0 a same pair, bit 1 a different one */
        unsigned char seen[LFW_MAX_FOLDS] = {0};
        for (int i = 0; i < n; i++)
            if (pairs->pairs[i].fold >= 0 && pairs->pairs[i].fold < LFW_MAX_FOLDS)
                seen[pairs->pairs[i].fold] |= pairs->pairs[i].same ? 1 : 2;
        for (int k = 0; k < pairs->folds && k < LFW_MAX_FOLDS; k++)
            if (seen[k] != 3) {
                int folds = pairs->folds;
                lfw_pairs_free(pairs);
                return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                                    "--limit %d leaves fold %d of the %d without both same and "
                                    "different pairs (give at least %d)",
                                    n, k + 1, folds, 2 * folds);
            }
    }
    const char *names[32];
    int n = model_list(o->embedder, FFU_ROLE_EMBED, names, 32);
    if ((st = resolve_models(FFU_ROLE_EMBED, names, n)) < 0) {
        lfw_pairs_free(pairs);
        return cli_fail(cmd, &o->common, st);
    }
    float *sims = calloc((size_t)pairs->count, sizeof *sims);
    ffu_detector_opts d = detector_opts(o, o->detector);
    if (!(d.min_score > 0)) d.min_score = 0.3f;
    ffu_detector *det = NULL;
    ffu_landmarker *lm = NULL;
    int use_lm = !o->landmarker || strcmp(o->landmarker, "none") != 0;
    ffu_landmarker_opts lo;
    ffu_landmarker_opts_default(&lo);
    lo.m = model_opts(o, o->landmarker);
    const ffu_zoo_entry *lz = ffu_zoo_default(FFU_ROLE_LANDMARKS);
    const char *lm_name = !use_lm ? NULL : o->landmarker ? o->landmarker : lz ? lz->name : "?";
    int rc = CLI_EXIT_OK;
    if (!sims)
        st = ffu_error_set(FFU_ERR_NOMEM, "similarities");
    if (!st)
        st = ffu_detector_create(&d, &det);
    if (!st && use_lm)
        st = ffu_landmarker_create(&lo, &lm);
    if (st) {
        rc = cli_fail(cmd, &o->common, st);
        goto out;
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "dataset"), ffu_jw_string(w, dir);
        ffu_jw_key(w, "pairs"), ffu_jw_int(w, pairs->count);
        ffu_jw_key(w, "detector"), ffu_jw_string(w, ffu_detector_model(det)->name);
        ffu_jw_key(w, "landmarker"), lm_name ? ffu_jw_string(w, lm_name) : ffu_jw_null(w);
        ffu_jw_key(w, "embedders");
        ffu_jw_begin_array(w);
    } else {
        printf("LFW: %d pairs from %s, %d folds, detector %s, keypoints from %s\n",
               pairs->count, dir, pairs->folds, ffu_detector_model(det)->name,
               lm_name ? lm_name : "the detector");
        printf("%-20s %15s %9s %10s %10s %7s %7s %6s\n", "embedder", "k-fold acc %",
               "best-thr", "TAR@1e-3", "TAR@1e-2", "AUC", "noface", "s");
    }
    for (int i = 0; i < n; i++) {
        ffu_face_model_opts m = model_opts(o, names[i]);
        ffu_embedder *emb = NULL;
        lfw_run_stats rs;
        lfw_result r;
        memset(&rs, 0, sizeof rs);
        st = ffu_embedder_create(&m, &emb);
        if (!st && !w && !o->common.quiet)
            fprintf(stderr, "lfw %s: embedding %d pairs...\n", names[i], pairs->count);
        if (!st)
            st = lfw_run_pairs(pairs, det, lm, emb, sims, &rs);
        if (!st)
            st = lfw_eval(pairs, sims, &r);
        float thr = emb ? ffu_embedder_threshold(emb) : 0;
        ffu_embedder_destroy(emb);
        if (st) {
            rc = cli_fail(cmd, &o->common, st);
            break;
        }
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "embedder"), ffu_jw_string(w, names[i]);
            ffu_jw_key(w, "accuracy_mean"), ffu_jw_number(w, r.acc_mean);
            ffu_jw_key(w, "accuracy_std"), ffu_jw_number(w, r.acc_std);
            ffu_jw_key(w, "best_threshold"), ffu_jw_number(w, r.best_thr);
            ffu_jw_key(w, "best_accuracy"), ffu_jw_number(w, r.best_acc);
            ffu_jw_key(w, "default_threshold"), ffu_jw_number(w, thr);
            ffu_jw_key(w, "tar_at_far_1e-3"), ffu_jw_number(w, r.tar_far1e3);
            ffu_jw_key(w, "tar_at_far_1e-2"), ffu_jw_number(w, r.tar_far1e2);
            ffu_jw_key(w, "auc"), ffu_jw_number(w, r.auc);
            ffu_jw_key(w, "no_face_pairs"), ffu_jw_int(w, r.nan_same + r.nan_diff);
            ffu_jw_key(w, "images"), ffu_jw_int(w, rs.images);
            ffu_jw_key(w, "no_face_images"), ffu_jw_int(w, rs.nofaces);
            ffu_jw_key(w, "seconds"), ffu_jw_number(w, rs.total_s);
            ffu_jw_key(w, "detect_seconds"), ffu_jw_number(w, rs.detect_s);
            ffu_jw_key(w, "landmark_seconds"), ffu_jw_number(w, rs.landmark_s);
            ffu_jw_key(w, "embed_seconds"), ffu_jw_number(w, rs.embed_s);
            ffu_jw_end_object(w);
        } else {
            printf("%-20s %7.2f +- %4.2f %9.3f %10.4f %10.4f %7.4f %7d %6.0f\n", names[i],
                   100 * r.acc_mean, 100 * r.acc_std, r.best_thr, r.tar_far1e3, r.tar_far1e2,
                   r.auc, r.nan_same + r.nan_diff, rs.total_s);
            fflush(stdout);
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
    }
out:
    free(sims);
    ffu_landmarker_destroy(lm);
    ffu_detector_destroy(det);
    lfw_pairs_free(pairs);
    return rc;
}

/* ---- 68-point landmarks ---------------------------------------------------------------- */

#define L68_MAX 512

typedef struct l68_face {
    char path[1024];
    float gt[136]; /* continuous coordinates */
} l68_face;

/* NAME.pts next to NAME.jpg/.png: 68 "x y" lines inside 300-W's braces. The points count
 * pixels from 1 with integers at pixel centres, so a point is (x - 0.5, y - 0.5) in the
 * face module's continuous coordinates (docs/EVAL.md "Landmarks"). */
static int l68_load_pts(const char *path, float *p)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    int n = 0;
    while (n < 68 && fgets(line, sizeof line, f)) {
        float x, y;
        if (sscanf(line, "%f %f", &x, &y) == 2) {
            p[2 * n] = x - 0.5f;
            p[2 * n + 1] = y - 0.5f;
            n++;
        }
    }
    fclose(f);
    return n == 68 ? 0 : -1;
}

static int l68_image(const char *dir, const char *name, void *ctx)
{
    (void)dir, (void)ctx;
    size_t len = strlen(name);
    return len >= 5 && len <= 400 &&
           (!strcmp(name + len - 4, ".jpg") || !strcmp(name + len - 4, ".png"));
}

/* The annotated faces of dir, sorted by file name (the tests' order). */
static ffu_status l68_load(const char *dir, l68_face **out, int *count)
{
    *out = NULL;
    *count = 0;
    char **names;
    int nn;
    if (ffu_dir_list(dir, l68_image, NULL, &names, &nn))
        return ffu_error_set(FFU_ERR_NOT_FOUND, "landmarks: cannot open %s", dir);
    l68_face *faces = calloc(L68_MAX, sizeof *faces);
    if (!faces) {
        ffu_dir_list_free(names, nn);
        return ffu_error_set(FFU_ERR_NOMEM, "landmark faces");
    }
    int n = 0;
    for (int i = 0; i < nn && n < L68_MAX; i++) {
        char pts[1024];
        snprintf(pts, sizeof pts, "%.600s/%.*s.pts", dir, (int)(strlen(names[i]) - 4), names[i]);
        if (l68_load_pts(pts, faces[n].gt))
            continue; /* an image without its annotation is not part of the set */
        snprintf(faces[n].path, sizeof faces[n].path, "%.600s/%s", dir, names[i]);
        n++;
    }
    ffu_dir_list_free(names, nn);
    if (!n) {
        free(faces);
        return ffu_error_set(FFU_ERR_NOT_FOUND, "landmarks: no NAME.jpg + NAME.pts pairs in %s",
                             dir);
    }
    *out = faces;
    *count = n;
    return FFU_OK;
}

typedef struct l68_result {
    double all, inner, corners, kps, worst, seconds;
    int faces, points;
} l68_result;

/* Mean NMEs of one landmarker over the faces. A model with its own 68 points is scored
 * point for point; FaceMesh through its iBUG-68 subset face_mesh_to_ibug68. */
static ffu_status l68_one(const eval_opts *o, const l68_face *set, int n, const char *name,
                          l68_result *r)
{
    memset(r, 0, sizeof *r);
    ffu_landmarker_opts lo;
    ffu_landmarker_opts_default(&lo);
    lo.m = model_opts(o, name);
    ffu_landmarker *l = NULL;
    ffu_status st = ffu_landmarker_create(&lo, &l);
    if (st)
        return st;
    static const int corners[6] = {36, 39, 42, 45, 48, 54};
    ffu_face_list list = {0};
    cli_progress_bar bar;
    char label[64];
    snprintf(label, sizeof label, "landmarks %s", name);
    cli_progress_start(&bar, label, (size_t)n, &o->common);
    for (int k = 0; k < n && !st; k++) {
        ffu_image img = {0};
        st = ffu_image_load(set[k].path, FFU_PIX_RGB24, &img);
        if (st)
            break;
        ffu_face_list_clear(&list);
        ffu_face *f = ffu_face_list_push(&list);
        if (!f) {
            ffu_image_release(&img);
            st = ffu_error_set(FFU_ERR_NOMEM, "face list");
            break;
        }
        const float *gt = set[k].gt;
        landmark_face_from_68(gt, f);
        float kgt[2 * FFU_FACE_NUM_KPS];
        memcpy(kgt, f->kps, sizeof kgt);
        double t0 = ffu_clock_sec();
        st = ffu_landmarker_run(l, &img, f);
        r->seconds += ffu_clock_sec() - t0;
        ffu_image_release(&img);
        if (st)
            break;
        if (f->num_landmarks != 68 && f->num_landmarks < 468) {
            st = ffu_error_set(FFU_ERR_UNSUPPORTED,
                               "landmarks: %s gives %d points, neither 68 nor a FaceMesh", name,
                               f->num_landmarks);
            break;
        }
        r->points = f->num_landmarks;
        int idx[68];
        for (int i = 0; i < 68; i++)
            idx[i] = f->num_landmarks == 68 ? i : face_mesh_to_ibug68[i];
        /* normalised by the true outer eye corners, 36 and 45 */
        double iod = hypot(gt[72] - gt[90], gt[73] - gt[91]), a = 0, in = 0, c = 0, kp = 0;
        for (int i = 0; i < 68; i++) {
            const float *q = &f->landmarks[3 * idx[i]];
            double d = hypot(q[0] - gt[2 * i], q[1] - gt[2 * i + 1]);
            a += d;
            if (i >= 17)
                in += d;
        }
        for (int i = 0; i < 6; i++) {
            const float *q = &f->landmarks[3 * idx[corners[i]]];
            c += hypot(q[0] - gt[2 * corners[i]], q[1] - gt[2 * corners[i] + 1]);
        }
        for (int i = 0; i < FFU_FACE_NUM_KPS; i++)
            kp += hypot(f->kps[2 * i] - kgt[2 * i], f->kps[2 * i + 1] - kgt[2 * i + 1]);
        r->all += a / 68 / iod;
        r->inner += in / 51 / iod;
        r->corners += c / 6 / iod;
        r->kps += kp / FFU_FACE_NUM_KPS / iod;
        r->worst = fmax(r->worst, a / 68 / iod);
        r->faces++;
        cli_progress(&bar, (size_t)k + 1);
    }
    if (r->faces) {
        r->all /= r->faces;
        r->inner /= r->faces;
        r->corners /= r->faces;
        r->kps /= r->faces;
    }
    ffu_face_list_free(&list);
    ffu_landmarker_destroy(l);
    return st;
}

static int run_landmarks(const cli_command *cmd, eval_opts *o, ffu_jw *w)
{
    char dir[2048];
    data_dir(o, "landmarks68", dir, sizeof dir);
    l68_face *set = NULL;
    int count = 0;
    ffu_status st = l68_load(dir, &set, &count);
    if (st)
        return cli_fail(cmd, &o->common, st);
    int n = o->limit > 0 && o->limit < count ? o->limit : count;
    const char *names[64];
    int nm = model_list(o->landmarker, FFU_ROLE_LANDMARKS, names, 64);
    if ((st = resolve_models(FFU_ROLE_LANDMARKS, names, nm)) < 0) {
        free(set);
        return cli_fail(cmd, &o->common, st);
    }
    int rc = CLI_EXIT_OK;
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "dataset"), ffu_jw_string(w, dir);
        ffu_jw_key(w, "faces"), ffu_jw_int(w, n);
        ffu_jw_key(w, "normalisation"), ffu_jw_string(w, "outer eye corners 36-45");
        ffu_jw_key(w, "landmarkers");
        ffu_jw_begin_array(w);
    } else {
        printf("Landmarks: %d faces from %s, boxes and keypoints from the truth, NME by the "
               "outer eye corners (36, 45)\n", n, dir);
        printf("%-16s %6s %6s %8s %8s %9s %11s %7s %8s\n", "landmarker", "faces", "points",
               "all-68", "inner-51", "corners-6", "five-points", "worst", "ms/face");
    }
    for (int i = 0; i < nm; i++) {
        /* iris refines a mesh's eyes; it has no 68 points of its own */
        const ffu_zoo_entry *ze = ffu_zoo_find(names[i]);
        if (o->landmarker && !strcmp(o->landmarker, "all") && ze && !strcmp(ze->family, "iris"))
            continue;
        l68_result r;
        st = l68_one(o, set, n, names[i], &r);
        if (st) {
            rc = cli_fail(cmd, &o->common, st);
            break;
        }
        const char *scored = r.points == 68 ? "68" : "mesh->68";
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "landmarker"), ffu_jw_string(w, names[i]);
            ffu_jw_key(w, "faces"), ffu_jw_int(w, r.faces);
            ffu_jw_key(w, "points"), ffu_jw_int(w, r.points);
            ffu_jw_key(w, "scored_on"), ffu_jw_string(w, scored);
            ffu_jw_key(w, "nme_all68"), ffu_jw_number(w, r.all);
            ffu_jw_key(w, "nme_inner51"), ffu_jw_number(w, r.inner);
            ffu_jw_key(w, "nme_corners6"), ffu_jw_number(w, r.corners);
            ffu_jw_key(w, "nme_five_points"), ffu_jw_number(w, r.kps);
            ffu_jw_key(w, "nme_worst"), ffu_jw_number(w, r.worst);
            ffu_jw_key(w, "ms_per_face"), ffu_jw_number(w, 1000 * r.seconds / (r.faces ? r.faces : 1));
            ffu_jw_end_object(w);
        } else {
            char pts[24];
            snprintf(pts, sizeof pts, r.points == 68 ? "68" : "%d>68", r.points);
            printf("%-16s %6d %6s %8.4f %8.4f %9.4f %11.4f %7.4f %8.1f\n", names[i], r.faces,
                   pts, r.all, r.inner, r.corners, r.kps, r.worst,
                   1000 * r.seconds / (r.faces ? r.faces : 1));
            fflush(stdout);
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
    }
    free(set);
    return rc;
}

/* ---- liveness -------------------------------------------------------------------------- */

#define PAD_MAX 4096
#define LV_MAX 16

/* "default" (or an empty name) is the library's default: NULL spec, which pairs
 * antispoof with liveness. Its threshold is the default entry's. */
static float lv_threshold(const char *name)
{
    ffu_zoo_entry e;
    char path[1024];
    const char *spec = name && strcmp(name, "default") ? name : NULL;
    float t = ffu_zoo_resolve(FFU_ROLE_LIVENESS, spec, &e, path, sizeof path) ? 0.5f : e.threshold;
    ffu_error_clear();
    return t > 0 ? t : 0.5f;
}

static int run_liveness(const cli_command *cmd, eval_opts *o, ffu_jw *w)
{
    char dir[2048], csv[2100];
    data_dir(o, "antispoof_nuaa", dir, sizeof dir);
    snprintf(csv, sizeof csv, "%s/labels.csv", dir);
    const char *names[LV_MAX];
    int nm = 0;
    if (!o->liveness || !*o->liveness) {
        names[nm++] = "default";
    } else if (!strcmp(o->liveness, "all")) {
        names[nm++] = "default";
        nm += model_list(o->liveness, FFU_ROLE_LIVENESS, names + 1, LV_MAX - 1);
    } else {
        nm = model_list(o->liveness, FFU_ROLE_LIVENESS, names, LV_MAX);
    }
    if (o->limit == 1) /* one image is one class: no error rates */
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "--limit 1: the rates need live and spoof images (give at least 2)");
    ffu_liveness *lv[LV_MAX] = {0};
    float *score[LV_MAX] = {0};
    double secs[LV_MAX] = {0};
    int *live = calloc(PAD_MAX, sizeof *live);
    ffu_detector *det = NULL;
    ffu_face_list list = {0};
    FILE *f = NULL;
    int rc = CLI_EXIT_OK, n = 0, rows = 0, missed = 0;
    ffu_status st = live ? FFU_OK : ffu_error_set(FFU_ERR_NOMEM, "labels");
    for (int m = 0; m < nm && !st; m++) {
        ffu_face_model_opts mo = model_opts(o, strcmp(names[m], "default") ? names[m] : NULL);
        score[m] = calloc(PAD_MAX, sizeof *score[m]);
        st = score[m] ? ffu_liveness_create(&mo, &lv[m])
                      : ffu_error_set(FFU_ERR_NOMEM, "scores");
    }
    ffu_detector_opts d = detector_opts(o, o->detector);
    if (!st)
        st = ffu_detector_create(&d, &det);
    if (!st && !(f = fopen(csv, "r")))
        st = ffu_error_set(FFU_ERR_NOT_FOUND, "liveness: cannot open %s", csv);
    if (st) {
        rc = cli_fail(cmd, &o->common, st);
        goto out;
    }
    /* count the rows first so the bar knows its length */
    char line[2048];
    int total = 0;
    if (fgets(line, sizeof line, f)) /* header: path,label,... */
        while (fgets(line, sizeof line, f))
            total += line[0] != '\n' && line[0] != '\r';
    rewind(f);
    if (!fgets(line, sizeof line, f))
        total = 0;
    /* --limit N: every k-th row, so both classes stay in (the file is sorted by class) */
    int step = o->limit > 0 && o->limit < total ? (total + o->limit - 1) / o->limit : 1, seen = 0;
    total = (total + step - 1) / step;
    if (total > PAD_MAX)
        total = PAD_MAX;
    cli_progress_bar bar;
    cli_progress_start(&bar, "liveness", (size_t)total, &o->common);
    while (rows < total && fgets(line, sizeof line, f)) {
        if (line[0] == '\n' || line[0] == '\r' || seen++ % step)
            continue;
        rows++;
        char *path = strtok(line, ","), *label = strtok(NULL, ",\r\n");
        if (!path || !label) {
            st = ffu_error_set(FFU_ERR_FORMAT, "liveness: %s row %d: want path,label", csv, rows);
            break;
        }
        char ip[4200];
        snprintf(ip, sizeof ip, "%s/%s", dir, path);
        ffu_image img = {0};
        st = ffu_image_load(ip, FFU_PIX_RGB24, &img);
        if (!st)
            st = ffu_detector_detect(det, &img, &list);
        int pick = st ? -1 : lfw_pick_face(&list, img.width, img.height);
        if (!st && pick < 0)
            missed++; /* not scored: a PAD system rejects nothing it cannot see */
        for (int m = 0; m < nm && !st && pick >= 0; m++) {
            double t0 = ffu_clock_sec();
            st = ffu_liveness_run(lv[m], &img, &list.faces[pick]);
            secs[m] += ffu_clock_sec() - t0;
            score[m][n] = list.faces[pick].liveness;
        }
        ffu_image_release(&img);
        if (st)
            break;
        if (pick >= 0)
            live[n++] = atoi(label) == 1;
        cli_progress(&bar, (size_t)rows);
    }
    if (st) {
        rc = cli_fail(cmd, &o->common, st);
        goto out;
    }
    int nlive = 0;
    for (int i = 0; i < n; i++)
        nlive += live[i];
    if (nlive == 0 || nlive == n) {
        const char *more = o->limit > 0 ? " (give a larger --limit)" : "";
        if (n == 0)
            rc = cli_fail_msg(cmd, &o->common, CLI_EXIT_DATA,
                              "liveness: no face found in the %d images%s", rows, more);
        else
            rc = cli_fail_msg(cmd, &o->common, CLI_EXIT_DATA,
                              "liveness: the %d faces found are all %s: APCER and BPCER need "
                              "both live and spoof faces%s",
                              n, nlive ? "live" : "spoof", more);
        goto out;
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "dataset"), ffu_jw_string(w, dir);
        ffu_jw_key(w, "images"), ffu_jw_int(w, rows);
        ffu_jw_key(w, "faces"), ffu_jw_int(w, n);
        ffu_jw_key(w, "live"), ffu_jw_int(w, nlive);
        ffu_jw_key(w, "spoof"), ffu_jw_int(w, n - nlive);
        ffu_jw_key(w, "no_face_images"), ffu_jw_int(w, missed);
        ffu_jw_key(w, "detector"), ffu_jw_string(w, ffu_detector_model(det)->name);
        ffu_jw_key(w, "models");
        ffu_jw_begin_array(w);
    } else {
        printf("Liveness: %d images from %s, %d faces (%d live, %d spoof), %d without a face, "
               "detector %s; live = score >= threshold\n", rows, dir, n, nlive, n - nlive, missed,
               ffu_detector_model(det)->name);
        printf("%-14s %6s %6s %7s %7s %7s %9s %7s %7s %7s %7s\n", "model", "AUC", "thr", "APCER",
               "BPCER", "ACER", "best-thr", "APCER", "BPCER", "ACER", "ms/face");
    }
    for (int m = 0; m < nm; m++) {
        eval_pad r = eval_pad_rates(score[m], live, n, lv_threshold(names[m]));
        double ms = 1000 * secs[m] / (n ? n : 1);
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "model"), ffu_jw_string(w, names[m]);
            ffu_jw_key(w, "auc"), ffu_jw_number(w, r.auc);
            ffu_jw_key(w, "threshold"), ffu_jw_number(w, r.thr);
            ffu_jw_key(w, "apcer"), ffu_jw_number(w, r.apcer);
            ffu_jw_key(w, "bpcer"), ffu_jw_number(w, r.bpcer);
            ffu_jw_key(w, "acer"), ffu_jw_number(w, r.acer);
            ffu_jw_key(w, "best_threshold"), ffu_jw_number(w, r.best_thr);
            ffu_jw_key(w, "best_apcer"), ffu_jw_number(w, r.best_apcer);
            ffu_jw_key(w, "best_bpcer"), ffu_jw_number(w, r.best_bpcer);
            ffu_jw_key(w, "best_acer"), ffu_jw_number(w, r.best_acer);
            ffu_jw_key(w, "ms_per_face"), ffu_jw_number(w, ms);
            ffu_jw_end_object(w);
        } else {
            printf("%-14s %6.3f %6.3f %7.3f %7.3f %7.3f %9.3f %7.3f %7.3f %7.3f %7.1f\n", names[m],
                   r.auc, r.thr, r.apcer, r.bpcer, r.acer, r.best_thr, r.best_apcer, r.best_bpcer,
                   r.best_acer, ms);
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
    }
out:
    if (f)
        fclose(f);
    for (int m = 0; m < nm; m++) {
        ffu_liveness_destroy(lv[m]);
        free(score[m]);
    }
    free(live);
    ffu_face_list_free(&list);
    ffu_detector_destroy(det);
    return rc;
}

/* ---- rotated photos ---------------------------------------------------------------- */

/* img turned 90 * quarter degrees clockwise into *out (a face upright in img then has
 * rotation 90 * quarter there): exact pixel moves, by nearest-neighbour warps. */
static ffu_status turn_cw(const ffu_image *img, int quarter, ffu_image *out)
{
    const double W = img->width - 1, H = img->height - 1;
    /* destination pixel -> source pixel, pixel centres at integers */
    const double m[4][6] = {
        {1, 0, 0, 0, 1, 0}, {0, 1, 0, -1, 0, H}, {-1, 0, W, 0, -1, H}, {0, -1, W, 1, 0, 0}};
    int side = quarter & 1;
    ffu_status st = ffu_image_create(out, FFU_PIX_RGB24, side ? img->height : img->width,
                                     side ? img->width : img->height);
    if (!st)
        st = ffu_image_warp_affine(img, out, m[quarter & 3], FFU_INTERP_NEAREST,
                                   FFU_BORDER_REPLICATE, NULL);
    return st;
}

/* Per detector (with rotations on): LFW photos (one per pair of the list, spread over
 * it) turned 0, 90, 180 and 270 degrees; the face nearest the centre must carry the
 * rotation the photo was turned by. */
static int run_rotations(const cli_command *cmd, eval_opts *o, ffu_jw *w)
{
    char dir[2048];
    data_dir(o, "lfw", dir, sizeof dir);
    lfw_pairs *pairs = NULL;
    ffu_status st = lfw_pairs_load(dir, &pairs);
    if (st) return cli_fail(cmd, &o->common, st);
    int nimg = o->limit > 0 && o->limit < pairs->count ? o->limit : 300;
    if (nimg > pairs->count) nimg = pairs->count;
    const char *names[32];
    int nd = model_list(o->detector, FFU_ROLE_DETECT, names, 32);
    if ((st = resolve_models(FFU_ROLE_DETECT, names, nd)) < 0) {
        lfw_pairs_free(pairs);
        return cli_fail(cmd, &o->common, st);
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "images"), ffu_jw_int(w, nimg);
        ffu_jw_key(w, "detectors");
        ffu_jw_begin_array(w);
    } else {
        printf("LFW photos: %d, each turned 0/90/180/270 degrees clockwise; rotations on\n\n",
               nimg);
        printf("| detector | right at 0 / 90 / 180 / 270 | right | wrong rotation | not found "
               "| ms per image |\n|---|---|---:|---:|---:|---:|\n");
    }
    ffu_image img = {0}, turned = {0};
    ffu_face_list faces = {0};
    int rc = CLI_EXIT_OK;
    for (int k = 0; k < nd && !rc; k++) {
        ffu_detector_opts d = detector_opts(o, names[k]);
        d.rotations = 1;
        ffu_detector *det = NULL;
        if ((st = ffu_detector_create(&d, &det))) {
            rc = cli_fail(cmd, &o->common, st);
            break;
        }
        int right[4] = {0}, wrong = 0, missed = 0;
        double secs = 0;
        cli_progress_bar bar;
        cli_progress_start(&bar, names[k], (size_t)nimg, &o->common);
        for (int i = 0; i < nimg && !st; i++) {
            char path[4096];
            st =
                lfw_pair_path(pairs, (int)((int64_t)i * pairs->count / nimg), 0, path, sizeof path);
            if (!st) st = ffu_image_load(path, FFU_PIX_RGB24, &img);
            for (int q = 0; q < 4 && !st; q++) {
                if ((st = turn_cw(&img, q, &turned))) break;
                double t0 = ffu_clock_sec();
                st = ffu_detector_detect(det, &turned, &faces);
                secs += ffu_clock_sec() - t0;
                int pick = st ? -1 : lfw_pick_face(&faces, turned.width, turned.height);
                if (st) break;
                if (pick < 0)
                    missed++;
                else if (faces.faces[pick].rotation == 90 * q)
                    right[q]++;
                else
                    wrong++;
                ffu_image_release(&turned);
            }
            ffu_image_release(&img);
            cli_progress(&bar, (size_t)i + 1);
        }
        ffu_detector_destroy(det);
        if (st) {
            rc = cli_fail(cmd, &o->common, st);
            break;
        }
        int all = right[0] + right[1] + right[2] + right[3];
        double ms = nimg ? 1e3 * secs / (4.0 * nimg) : 0; /* per image searched */
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "detector"), ffu_jw_string(w, names[k]);
            ffu_jw_key(w, "right_by_turn");
            ffu_jw_begin_array(w);
            for (int q = 0; q < 4; q++)
                ffu_jw_int(w, right[q]);
            ffu_jw_end_array(w);
            ffu_jw_key(w, "right"), ffu_jw_int(w, all);
            ffu_jw_key(w, "wrong_rotation"), ffu_jw_int(w, wrong);
            ffu_jw_key(w, "not_found"), ffu_jw_int(w, missed);
            ffu_jw_key(w, "ms_per_image"), ffu_jw_number(w, ms);
            ffu_jw_end_object(w);
        } else {
            printf("| %s | %d / %d / %d / %d | %d of %d | %d | %d | %.1f |\n", names[k], right[0],
                   right[1], right[2], right[3], all, 4 * nimg, wrong, missed, ms);
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
    }
    ffu_image_release(&img);
    ffu_image_release(&turned);
    ffu_face_list_free(&faces);
    lfw_pairs_free(pairs);
    return rc;
}

/* ---- small faces ---------------------------------------------------------------------- */

/* LFW faces (the centre face of --limit photos, 240 by default) cut at full size with the
 * detector itself, then pasted SMALL_PER_FRAME to a 1080p frame over a face-free photo
 * at each size of the table, and searched for with the detector and --min-face. */
static int run_small_faces(const cli_command *cmd, eval_opts *o, ffu_jw *w)
{
    static const int sides[] = {12, 16, 20, 24, 32, 48};
    enum { NSIDES = sizeof sides / sizeof *sides };
    char dir[2048], bgpath[2048];
    data_dir(o, "lfw", dir, sizeof dir);
    const char *shared = getenv("FFU_SHARED_DIR");
    snprintf(bgpath, sizeof bgpath, "%s/data/dlib_faces/dogs.jpg",
             shared && *shared ? shared : FFU_SHARED_DIR_DEFAULT);
    int min_face = o->min_face < 0 ? 20 : o->min_face;
    lfw_pairs *pairs = NULL;
    ffu_image bg = {0}, frame = {0};
    ffu_status st = lfw_pairs_load(dir, &pairs);
    if (!st && (st = ffu_image_load(bgpath, FFU_PIX_RGB24, &bg))) {
        char why[512]; /* the message is rewritten below: copy it first */
        snprintf(why, sizeof why, "%s", ffu_error_message());
        st = ffu_error_set(st, "background: %s", why);
    }
    if (st) {
        lfw_pairs_free(pairs);
        return cli_fail(cmd, &o->common, st);
    }
    int nphoto = o->limit > 0 ? o->limit : 240;
    if (nphoto > pairs->count) nphoto = pairs->count;
    const char *names[32];
    int nd = model_list(o->detector, FFU_ROLE_DETECT, names, 32);
    small_face *faces = calloc((size_t)nphoto, sizeof *faces);
    if (!faces)
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    else
        st = resolve_models(FFU_ROLE_DETECT, names, nd);
    if (st) {
        free(faces);
        ffu_image_release(&bg);
        lfw_pairs_free(pairs);
        return cli_fail(cmd, &o->common, st);
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "photos"), ffu_jw_int(w, nphoto);
        char size[32];
        snprintf(size, sizeof size, "%dx%d", SMALL_FRAME_W, SMALL_FRAME_H);
        ffu_jw_key(w, "frame"), ffu_jw_string(w, size);
        ffu_jw_key(w, "background"), ffu_jw_string(w, bgpath);
        ffu_jw_key(w, "min_face"), ffu_jw_int(w, min_face);
        ffu_jw_key(w, "detectors");
        ffu_jw_begin_array(w);
    } else {
        printf("LFW faces pasted %d to a %dx%d frame over %s, min face %d px\n\n", SMALL_PER_FRAME,
               SMALL_FRAME_W, SMALL_FRAME_H, bgpath, min_face);
    }
    ffu_face_list l = {0};
    int rc = CLI_EXIT_OK;
    for (int k = 0; k < nd && !rc; k++) {
        ffu_detector_opts d = detector_opts(o, names[k]);
        ffu_detector *ref = NULL, *det = NULL;
        st = ffu_detector_create(&d, &ref); /* cuts the faces: its own box convention */
        d.min_face = min_face;
        if (!st) st = ffu_detector_create(&d, &det);
        int nf = 0;
        if (!st) st = small_faces_from_lfw(pairs, ref, nphoto, nphoto, faces, &nf);
        int found[NSIDES] = {0}, falsed[NSIDES] = {0}, frames = 0;
        double secs[NSIDES] = {0};
        cli_progress_bar bar;
        cli_progress_start(&bar, names[k], (size_t)NSIDES, &o->common);
        for (int s = 0; s < NSIDES && !st; s++) {
            frames = 0;
            for (int f0 = 0; f0 < nf && !st; f0 += SMALL_PER_FRAME, frames++) {
                int n = nf - f0 < SMALL_PER_FRAME ? nf - f0 : SMALL_PER_FRAME;
                float gt[SMALL_PER_FRAME][4];
                if ((st = small_faces_frame(&bg, faces + f0, n, sides[s],
                                            (uint32_t)(1 + 7919 * frames), &frame, gt)))
                    break;
                double t0 = ffu_clock_sec();
                st = ffu_detector_detect(det, &frame, &l);
                secs[s] += ffu_clock_sec() - t0;
                int fo, fa;
                small_faces_match(&l, (const float(*)[4])gt, n, &fo, &fa);
                found[s] += fo;
                falsed[s] += fa;
                ffu_image_release(&frame);
            }
            cli_progress(&bar, (size_t)s + 1);
        }
        ffu_detector_destroy(ref);
        ffu_detector_destroy(det);
        for (int i = 0; i < nf; i++)
            small_face_release(&faces[i]);
        if (st) {
            rc = cli_fail(cmd, &o->common, st);
            break;
        }
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "detector"), ffu_jw_string(w, names[k]);
            ffu_jw_key(w, "faces"), ffu_jw_int(w, nf);
            ffu_jw_key(w, "sizes");
            ffu_jw_begin_array(w);
            for (int s = 0; s < NSIDES; s++) {
                ffu_jw_begin_object(w);
                ffu_jw_key(w, "side_px"), ffu_jw_int(w, sides[s]);
                ffu_jw_key(w, "found"), ffu_jw_int(w, found[s]);
                ffu_jw_key(w, "recall"), ffu_jw_number(w, nf ? (double)found[s] / nf : 0);
                ffu_jw_key(w, "false_detections"), ffu_jw_int(w, falsed[s]);
                ffu_jw_key(w, "ms_per_frame"),
                    ffu_jw_number(w, frames ? 1e3 * secs[s] / frames : 0);
                ffu_jw_end_object(w);
            }
            ffu_jw_end_array(w);
            ffu_jw_end_object(w);
        } else {
            printf("%s: %d faces (of %d photos; the others had no face or a second one near "
                   "it)\n| face px | found | recall | false detections "
                   "| ms per frame |\n|---:|---:|---:|---:|---:|\n",
                   names[k], nf, nphoto);
            for (int s = 0; s < NSIDES; s++)
                printf("| %d | %d | %.3f | %d | %.1f |\n", sides[s], found[s],
                       nf ? (double)found[s] / nf : 0, falsed[s],
                       frames ? 1e3 * secs[s] / frames : 0);
            printf("\n");
            fflush(stdout);
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
    }
    ffu_face_list_free(&l);
    free(faces);
    ffu_image_release(&bg);
    lfw_pairs_free(pairs);
    return rc;
}

static int run(const cli_command *cmd, int argc, char **argv)
{
    eval_opts o;
    int npos, done;
    ffu_jw *w = NULL;
    if (argc >= 1 && !strcmp(argv[0], "swap")) /* own options: cmd_eval_swap.c */
        return cli_eval_swap(cmd, argc - 1, argv + 1);
    int rc = cli_parse(cmd, eval_options, &o, argc, argv, &npos, &done);
    if (rc || done)
        goto out;
    if (npos != 1 || (strcmp(argv[0], "lfw") && strcmp(argv[0], "wider") &&
                      strcmp(argv[0], "landmarks") && strcmp(argv[0], "liveness") &&
                      strcmp(argv[0], "rotations") && strcmp(argv[0], "small-faces"))) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "say which evaluation: lfw, wider, landmarks, liveness, rotations, "
                          "small-faces or swap");
        goto out;
    }
    if (o.common.json && ffu_jw_create(&w, 1) < 0) {
        rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
        goto out;
    }
    if (!strcmp(argv[0], "lfw"))
        rc = run_lfw(cmd, &o, w);
    else if (!strcmp(argv[0], "wider"))
        rc = run_wider(cmd, &o, w);
    else if (!strcmp(argv[0], "landmarks"))
        rc = run_landmarks(cmd, &o, w);
    else if (!strcmp(argv[0], "rotations"))
        rc = run_rotations(cmd, &o, w);
    else if (!strcmp(argv[0], "small-faces"))
        rc = run_small_faces(cmd, &o, w);
    else
        rc = run_liveness(cmd, &o, w);
    if (w && rc == CLI_EXIT_OK)
        rc = cli_print_json(w);
out:
    ffu_jw_destroy(w);
    ffu_options_free(eval_options, &o);
    return rc;
}

const cli_command cli_cmd_eval = {
    "eval",
    "measure accuracy on the evaluation data (LFW, WIDER FACE, 300-W, NUAA, swap quality)",
    "facefuse eval lfw|wider|landmarks|liveness|rotations|small-faces [--detector LIST]\n"
    "       [--embedder LIST] [--min-face PX] [--detections FILE]\n"
    "       [--landmarker LIST] [--liveness-model LIST] [--data DIR] [--json]\n"
    "       facefuse eval swap [--frames N] [--limit N] [--json]   (see eval swap --help)",
    "wider: AP on the easy/medium/hard settings of the WIDER FACE val subset with the\n"
    "official protocol (IoU 0.5, faces outside a setting's list ignored), each detector\n"
    "at the image's own size where the model allows. lfw: verification on the View-2\n"
    "pairs: k-fold accuracy (threshold chosen on the other folds), the best single\n"
    "threshold, TAR at FAR 1e-3 and 1e-2; pairs where a face is not found count as\n"
    "errors. landmarks: NME (mean point distance / true outer-eye-corner distance, points\n"
    "36 and 45) on the 300-W annotated faces, each face's box and five points taken from\n"
    "its truth; FaceMesh is scored on its 68-point subset. liveness: per model AUC and\n"
    "APCER/BPCER/ACER at the zoo threshold and at the ACER-minimising one (chosen on the\n"
    "set: optimistic) on the NUAA images, face = the detected one nearest the centre;\n"
    "rotations: LFW photos (--limit N of them, 300 by default) turned 0/90/180/270\n"
    "degrees, detected with rotations on: the centre face's rotation right or wrong;\n"
    "small-faces: the centre faces of LFW photos (--limit, 240 by default), cut with the\n"
    "detector itself, shrunk to 12-48 px and pasted 24 to a 1920x1080 frame over a\n"
    "face-free photo: found at IoU 0.5 with --min-face (20 by default), false detections;\n"
    "swap: identity transfer, background kept and landmark jitter of face swaps (its own\n"
    "options: facefuse eval swap --help);\n"
    "`default` = the library's default combination. Results and commands are recorded in\n"
    "docs/EVAL.md.",
    run,
};
