/* `facefuse eval lfw|wider`: accuracy on the real evaluation data in ../shared/data,
 * with the protocols the papers use, so that a number in docs/EVAL.md can be rerun
 * with one command.
 *   eval wider  WIDER FACE val subset: AP easy/medium/hard (official protocol,
 *               IoU 0.5) per detector, plus the best-F1 operating point
 *   eval lfw    LFW View-2 folds: k-fold accuracy, best threshold, TAR at FAR 1e-3 and
 *               1e-2, AUC per embedder
 * The metric code is src/face/eval_*.c; this file runs the models over the images. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "face/eval.h"
#include "face/eval_run.h"
#include "facefuse/face.h"
#include "facefuse/image.h"
#include "ffu_config.h"

static const char *const backend_names[] = {"cpu", "ref", NULL};

typedef struct {
    cli_common common;
    char *data;
    char *detector, *embedder;
    double min_score, nms;
    int input_size, min_face, limit, threads, backend;
} eval_opts;

static const ffu_option eval_options[] = {
    CLI_COMMON_OPTIONS,
    {"data", 0, FFU_OPT_STRING, offsetof(eval_opts, data),
     "data set folder (default: $FFU_SHARED_DIR/data/{lfw,widerface}, else ../shared/data)",
     NULL, 0, 0, NULL, "DIR"},
    {"detector", 'd', FFU_OPT_STRING, offsetof(eval_opts, detector),
     "detector(s), comma-separated zoo names or FAMILY:PATH; wider: `all` = every detector "
     "in the zoo", NULL, 0, 0, NULL, "LIST"},
    {"embedder", 'e', FFU_OPT_STRING, offsetof(eval_opts, embedder),
     "lfw: embedder(s), comma-separated, or `all`", NULL, 0, 0, NULL, "LIST"},
    {"min-score", 0, FFU_OPT_FLOAT, offsetof(eval_opts, min_score),
     "detection score threshold; 0 = 0.02 for wider (the protocol wants the whole PR "
     "curve), 0.3 for lfw (every image holds a face; the centre one is used)", "0", 0, 1,
     NULL, "S"},
    {"nms", 0, FFU_OPT_FLOAT, offsetof(eval_opts, nms), "NMS IoU (0 = the detector's default)",
     "0", 0, 1, NULL, "IOU"},
    {"input-size", 0, FFU_OPT_INT, offsetof(eval_opts, input_size),
     "dynamic-input detectors: longest side fed to the net (0 = the image's own size)", "0", 0,
     8192, NULL, "PX"},
    {"min-face", 0, FFU_OPT_INT, offsetof(eval_opts, min_face),
     "wider: smallest face to look for (tiles); 0 = none", "0", 0, 10000, NULL, "PX"},
    {"limit", 0, FFU_OPT_INT, offsetof(eval_opts, limit),
     "use only the first N images (wider) or pairs (lfw); 0 = all", "0", 0, 1000000, NULL, "N"},
    {"threads", 't', FFU_OPT_INT, offsetof(eval_opts, threads),
     "inference threads (0 = all CPUs)", "0", 0, 1024, NULL, "N"},
    {"backend", 'b', FFU_OPT_ENUM, offsetof(eval_opts, backend), "cpu or ref", "cpu", 0, 0,
     backend_names, NULL},
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

static ffu_face_model_opts model_opts(const eval_opts *o, const char *name)
{
    ffu_face_model_opts m = {name, backend_names[o->backend], o->threads};
    return m;
}

/* ---- WIDER FACE ------------------------------------------------------------------------ */

static ffu_status wider_one(const eval_opts *o, const wider_gt *gt, int nimg, const char *name,
                            wider_result *r, double *seconds)
{
    ffu_detector_opts d;
    ffu_detector_opts_default(&d);
    d.m = model_opts(o, name);
    d.min_score = o->min_score > 0 ? (float)o->min_score : 0.02f;
    d.nms_iou = (float)o->nms;
    d.input_size = o->input_size;
    d.min_face = o->min_face;
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
    if (!st) {
        if (nimg < gt->count) { /* --limit: evaluate the images we ran on */
            wider_gt sub = *gt;
            sub.count = nimg;
            st = wider_eval(&sub, preds, r);
        } else {
            st = wider_eval(gt, preds, r);
        }
    }
    for (int i = 0; i < gt->count; i++)
        free((void *)preds[i].dets);
    free(preds);
    ffu_face_list_free(&faces);
    ffu_detector_destroy(det);
    return st;
}

static int run_wider(const cli_command *cmd, eval_opts *o, ffu_jw *w)
{
    char dir[2048];
    data_dir(o, "widerface", dir, sizeof dir);
    wider_gt *gt = NULL;
    ffu_status st = wider_gt_load(dir, &gt);
    if (st)
        return cli_fail(cmd, &o->common, st);
    int nimg = o->limit > 0 && o->limit < gt->count ? o->limit : gt->count;
    const char *names[64];
    int n = model_list(o->detector, FFU_ROLE_DETECT, names, 64);
    int rc = CLI_EXIT_OK;
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "dataset"), ffu_jw_string(w, dir);
        ffu_jw_key(w, "images"), ffu_jw_int(w, nimg);
        ffu_jw_key(w, "min_score"), ffu_jw_number(w, o->min_score > 0 ? o->min_score : 0.02);
        ffu_jw_key(w, "detectors");
        ffu_jw_begin_array(w);
    } else {
        printf("WIDER FACE: %d images from %s, official protocol (IoU 0.5), min score %.2f\n",
               nimg, dir, o->min_score > 0 ? o->min_score : 0.02);
        printf("%-16s %7s %7s %7s %9s %8s %8s\n", "detector", "easy", "medium", "hard",
               "small-rec", "best-F1", "ms/img");
    }
    for (int i = 0; i < n; i++) {
        wider_result r;
        double secs = 0;
        st = wider_one(o, gt, nimg, names[i], &r, &secs);
        if (st) {
            rc = cli_fail(cmd, &o->common, st);
            break;
        }
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
            if (isfinite(r.small_recall))
                ffu_jw_key(w, "small_recall"), ffu_jw_number(w, r.small_recall);
            ffu_jw_key(w, "detections"), ffu_jw_int(w, r.dets);
            ffu_jw_key(w, "ms_per_image"), ffu_jw_number(w, 1000 * secs / nimg);
            ffu_jw_end_object(w);
        } else {
            printf("%-16s %7.4f %7.4f %7.4f %9.3f %8.3f %8.1f\n", names[i], r.ap[0], r.ap[1],
                   r.ap[2], r.small_recall, r.best_f1, 1000 * secs / nimg);
            fflush(stdout);
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
    }
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
    if (o->limit > 0 && o->limit < pairs->count)
        pairs->count = o->limit; /* the first N pairs: a quick check, folds incomplete */
    const char *names[32];
    int n = model_list(o->embedder, FFU_ROLE_EMBED, names, 32);
    float *sims = calloc((size_t)pairs->count, sizeof *sims);
    ffu_detector_opts d;
    ffu_detector_opts_default(&d);
    d.m = model_opts(o, o->detector);
    d.min_score = o->min_score > 0 ? (float)o->min_score : 0.3f;
    d.input_size = o->input_size;
    ffu_detector *det = NULL;
    int rc = CLI_EXIT_OK;
    if (!sims)
        st = ffu_error_set(FFU_ERR_NOMEM, "similarities");
    if (!st)
        st = ffu_detector_create(&d, &det);
    if (st) {
        rc = cli_fail(cmd, &o->common, st);
        goto out;
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "dataset"), ffu_jw_string(w, dir);
        ffu_jw_key(w, "pairs"), ffu_jw_int(w, pairs->count);
        ffu_jw_key(w, "detector"), ffu_jw_string(w, ffu_detector_model(det)->name);
        ffu_jw_key(w, "embedders");
        ffu_jw_begin_array(w);
    } else {
        printf("LFW: %d pairs from %s, %d folds, detector %s\n", pairs->count, dir,
               pairs->folds, ffu_detector_model(det)->name);
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
            st = lfw_run_pairs(pairs, det, emb, sims, &rs);
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
    ffu_detector_destroy(det);
    lfw_pairs_free(pairs);
    return rc;
}

static int run(const cli_command *cmd, int argc, char **argv)
{
    eval_opts o;
    int npos, done;
    ffu_jw *w = NULL;
    int rc = cli_parse(cmd, eval_options, &o, argc, argv, &npos, &done);
    if (rc || done)
        goto out;
    if (npos != 1 || (strcmp(argv[0], "lfw") && strcmp(argv[0], "wider"))) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "say which evaluation: lfw or wider");
        goto out;
    }
    if (o.common.json && ffu_jw_create(&w, 1) < 0) {
        rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
        goto out;
    }
    rc = !strcmp(argv[0], "lfw") ? run_lfw(cmd, &o, w) : run_wider(cmd, &o, w);
    if (w && rc == CLI_EXIT_OK)
        rc = cli_print_json(w);
out:
    ffu_jw_destroy(w);
    ffu_options_free(eval_options, &o);
    return rc;
}

const cli_command cli_cmd_eval = {
    "eval",
    "measure accuracy on the evaluation data (LFW, WIDER FACE)",
    "facefuse eval lfw|wider [--detector LIST] [--embedder LIST] [--data DIR] [--json]",
    "wider: AP on the easy/medium/hard settings of the WIDER FACE val subset with the\n"
    "official protocol (IoU 0.5, faces outside a setting's list ignored), each detector\n"
    "at the image's own size where the model allows. lfw: verification on the View-2\n"
    "pairs: k-fold accuracy (threshold chosen on the other folds), the best single\n"
    "threshold, TAR at FAR 1e-3 and 1e-2; pairs where a face is not found count as\n"
    "errors. Results and commands are recorded in docs/EVAL.md.",
    run,
};
