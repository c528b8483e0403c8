/* `facefuse detect | embed | compare`: face analysis from the command line.
 *   detect IMG...    faces per image (box [x, y, w, h], score, keypoints, and whatever
 *                    --with adds: landmarks, quality, liveness, attributes, embedding);
 *                    --draw writes annotated copies
 *   embed IMG        the embedding of the largest face (--all: of every face)
 *   compare A B      cosine similarity of the two images' largest faces and the
 *                    same/different decision at the embedder's calibrated threshold
 *                    (--all: every pair of faces, the answer being the most similar's)
 * All three run the analyzer (src/face/analyzer.c) with the stages they need. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "facefuse/face.h"
#include "facefuse/image.h"


typedef struct {
    cli_common common;
    char *detector, *landmarker, *embedder, *liveness, *attributes;
    double min_score, nms;
    int min_face, max_faces, rotations, input_size;
    int threads, backend;
    char *with;
    char *draw;
    int device, fp16, bf16; /* CLI_MODEL_OPTIONS */
    int all;                /* embed, compare: every face, not the largest */
} face_opts;

#define FACE_MODEL_OPTIONS                                                                  \
    {"detector", 'd', FFU_OPT_STRING, offsetof(face_opts, detector),                        \
     "detector: a zoo name or FAMILY:PATH (see `facefuse models list`)", NULL, 0, 0, NULL,  \
     "NAME[:PATH]"},                                                                        \
    {"min-score", 0, FFU_OPT_FLOAT, offsetof(face_opts, min_score),                         \
     "detection score threshold (0 = the detector's default)", "0", 0, 1, NULL, "S"},       \
    {"nms", 0, FFU_OPT_FLOAT, offsetof(face_opts, nms),                                     \
     "overlap (IoU) above which detections merge (0 = the detector's default)", "0", 0, 1,  \
     NULL, "IOU"},                                                                          \
    {"min-face", 0, FFU_OPT_INT, offsetof(face_opts, min_face),                             \
     "smallest face to find, in pixels: large images are also scanned in tiles", "0", 0,    \
     100000, NULL, "PX"},                                                                   \
    {"max-faces", 0, FFU_OPT_INT, offsetof(face_opts, max_faces), "keep at most N faces",  \
     "0", 0, 100000, NULL, "N"},                                                            \
    {"rotations", 0, FFU_OPT_BOOL, offsetof(face_opts, rotations),                          \
     "photos on their side or upside down: also search them turned 90/180/270 degrees",  \
     NULL, 0, 0, NULL, NULL},                                                               \
    {"embedder", 'e', FFU_OPT_STRING, offsetof(face_opts, embedder),                        \
     "embedder: a zoo name or FAMILY:PATH", NULL, 0, 0, NULL, "NAME[:PATH]"},               \
    {"threads", 't', FFU_OPT_INT, offsetof(face_opts, threads),                            \
     "inference threads (0 = all CPUs)", "0", 0, 1024, NULL, "N"},                          \
    {"backend", 'b', FFU_OPT_ENUM, offsetof(face_opts, backend),                            \
     CLI_BACKEND_HELP, "cpu", 0, 0, cli_backend_names, NULL},                             \
    CLI_MODEL_OPTIONS(face_opts)

static const ffu_option detect_options[] = {
    CLI_COMMON_OPTIONS,
    FACE_MODEL_OPTIONS,
    {"with", 'w', FFU_OPT_STRING, offsetof(face_opts, with),
     "also run these stages, comma-separated: landmarks, quality, liveness, attributes, "
     "embed, or all", NULL, 0, 0, NULL, "STAGES"},
    {"landmarker", 0, FFU_OPT_STRING, offsetof(face_opts, landmarker),
     "landmark model: facemesh, dlib68, pfld:PATH, ...", NULL, 0, 0, NULL, "NAME[:PATH]"},
    {"liveness-model", 0, FFU_OPT_STRING, offsetof(face_opts, liveness),
     "liveness model (default: the mean of antispoof and liveness, which do not tell "
     "printed photos from live faces on NUAA, docs/EVAL.md): antispoof, liveness, dtn "
     "(ranks them, 9 GFLOP a face), minifasnet:PATH",
     NULL, 0, 0, NULL, "NAME[:PATH]"},
    {"attributes-model", 0, FFU_OPT_STRING, offsetof(face_opts, attributes),
     "attribute model: gear, emotion", NULL, 0, 0, NULL, "NAME[:PATH]"},
    {"draw", 0, FFU_OPT_STRING, offsetof(face_opts, draw),
     "write annotated images: a file for one input, a directory for several", NULL, 0, 0,
     NULL, "OUT"},
    {0},
};

static const ffu_option embed_options[] = {
    CLI_COMMON_OPTIONS,
    FACE_MODEL_OPTIONS,
    {"landmarker", 0, FFU_OPT_STRING, offsetof(face_opts, landmarker),
     "landmark model that refines the keypoints before alignment, as enrol does (default: "
     "facemesh; `none` = the detector's keypoints)", NULL, 0, 0, NULL, "NAME[:PATH]"},
    {"all", 0, FFU_OPT_BOOL, offsetof(face_opts, all),
     "every face of each image, left to right, not only the largest (embed: an embedding "
     "each; compare: every pair, most similar first, the answer being the first pair's)",
     NULL, 0, 0, NULL, NULL},
    {0},
};

static void analyzer_opts_from(const face_opts *o, unsigned stages, ffu_analyzer_opts *ao)
{
    ffu_analyzer_opts_default(ao);
    ao->stages = stages;
    ffu_face_model_opts m = {.model = NULL,
                             .backend = cli_backend_names[o->backend],
                             .threads = o->threads,
                             .device = o->device,
                             .fp16 = o->fp16,
                             .bf16 = o->bf16};
    ao->detect.m = m;
    ao->detect.m.model = o->detector;
    ao->detect.min_score = (float)o->min_score;
    ao->detect.nms_iou = (float)o->nms;
    ao->detect.min_face = o->min_face;
    ao->detect.max_faces = o->max_faces;
    ao->detect.rotations = o->rotations;
    ao->landmarks.m = m;
    ao->landmarks.m.model = o->landmarker;
    ao->embed = m;
    ao->embed.model = o->embedder;
    ao->liveness = m;
    ao->liveness.model = o->liveness;
    ao->attributes = m;
    ao->attributes.model = o->attributes;
}

/* Where --draw writes the annotated copy of the image at path: into the folder draw under
 * the image's own name, or to the file draw. */
static void draw_path(const char *draw, int draw_dir, const char *path, char *buf, size_t len)
{
    const char *base = strrchr(path, '/');
    if (draw_dir)
        snprintf(buf, len, "%s/%s", draw, base ? base + 1 : path);
    else
        snprintf(buf, len, "%s", draw);
}

static void draw_faces(ffu_image *img, const ffu_face_list *faces)
{
    const ffu_color box = {40, 220, 60, 255}, kp = {255, 60, 40, 255}, lm = {80, 160, 255, 255};
    int thick = img->width > 1200 ? 3 : 2;
    for (int i = 0; i < faces->count; i++) {
        const ffu_face *f = &faces->faces[i];
        for (int k = 0; k < f->num_landmarks; k++)
            ffu_draw_point(img, (int)f->landmarks[3 * k], (int)f->landmarks[3 * k + 1], 0, lm);
        ffu_draw_rect(img, (int)lroundf(f->box[0]), (int)lroundf(f->box[1]),
                      (int)lroundf(f->box[2]), (int)lroundf(f->box[3]), thick, box);
        for (int k = 0; k < FFU_FACE_NUM_KPS; k++)
            ffu_draw_point(img, (int)f->kps[2 * k], (int)f->kps[2 * k + 1], thick, kp);
        char label[64];
        snprintf(label, sizeof label, "%.2f", f->score);
        ffu_draw_label(img, (int)f->box[0], (int)f->box[1] - 1, label, 1, box,
                       (ffu_color){0, 0, 0, 255});
    }
}

static int run_detect(const cli_command *cmd, int argc, char **argv)
{
    face_opts o;
    int npos, done;
    ffu_jw *w = NULL;
    ffu_analyzer *an = NULL;
    ffu_face_list faces = {0};
    char **paths = NULL;
    int npaths = 0;
    int rc = cli_parse(cmd, detect_options, &o, argc, argv, &npos, &done);
    if (rc || done)
        goto out;
    unsigned stages = 0;
    if (npos < 1) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "no image given (see --help)");
        goto out;
    }
    if (cli_parse_stages(o.with, &stages) < 0) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "unknown stage in --with '%s'", o.with);
        goto out;
    }
    ffu_status st = cli_expand_images(npos, argv, &paths, &npaths);
    if (st) {
        rc = cli_fail(cmd, &o.common, st);
        goto out;
    }
    const int draw_dir = o.draw && (npaths > 1 || cli_is_dir(o.draw));
    if (draw_dir && !cli_is_dir(o.draw)) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "--draw with several images needs an existing directory");
        goto out;
    }
    for (int i = 0; o.draw && i < npaths; i++) { /* never draw over a photo itself */
        char out_path[4096];
        draw_path(o.draw, draw_dir, paths[i], out_path, sizeof out_path);
        if (ffu_same_file(paths[i], out_path)) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                              "--draw %s would replace the image %s with its annotated copy",
                              o.draw, paths[i]);
            goto out;
        }
    }
    ffu_analyzer_opts ao;
    analyzer_opts_from(&o, stages, &ao);
    st = ffu_analyzer_create(&ao, &an);
    if (st) {
        rc = cli_fail(cmd, &o.common, st);
        goto out;
    }
    if (o.common.json) {
        if (ffu_jw_create(&w, 1) < 0) {
            rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
            goto out;
        }
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "images");
        ffu_jw_begin_array(w);
    }
    int failed = 0, worst = CLI_EXIT_OK, hinted = 0;
    cli_progress_bar bar;
    cli_progress_start(&bar, "detect", (size_t)npaths, npaths > 1 ? &o.common : NULL);
    if (npaths == 1) bar.enabled = 0;
    for (int i = 0; i < npaths; i++) {
        const char *path = paths[i];
        ffu_image img = {0};
        st = ffu_image_load(path, FFU_PIX_RGB24, &img);
        if (!st)
            st = ffu_analyzer_run(an, &img, &faces);
        if (!w)
            cli_progress_clear(&bar); /* the image's lines follow on the terminal */
        if (st) {
            failed++;
            int code = cli_input_failed(cmd, st, path, w);
            if (worst == CLI_EXIT_OK)
                worst = code;
            ffu_image_release(&img);
            cli_progress(&bar, (size_t)i + 1);
            continue;
        }
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "path"), ffu_jw_string(w, path);
            ffu_jw_key(w, "width"), ffu_jw_int(w, img.width);
            ffu_jw_key(w, "height"), ffu_jw_int(w, img.height);
            ffu_jw_key(w, "min_face"),
                ffu_jw_number(
                    w, roundf(cli_smallest_face(ffu_analyzer_detector(an), img.width, img.height)));
            ffu_jw_key(w, "faces");
            ffu_jw_begin_array(w);
            for (int k = 0; k < faces.count; k++)
                ffu_face_write_json(&faces.faces[k], w);
            ffu_jw_end_array(w);
            ffu_jw_end_object(w);
        } else {
            printf("%s: %d face%s\n", path, faces.count, faces.count == 1 ? "" : "s");
            if (!faces.count && !hinted && !o.common.quiet) { /* once a run */
                char hint[256];
                fflush(stdout);
                fprintf(stderr, "facefuse detect: %s: no face found (%s)\n", path,
                        cli_no_face_hint(ffu_analyzer_detector(an), img.width, img.height, 0,
                                         CLI_NO_FACE_OPTIONS, hint, sizeof hint));
                hinted = 1;
            }
            for (int k = 0; k < faces.count; k++) {
                const ffu_face *f = &faces.faces[k];
                printf("  #%d box %.0f,%.0f %.0fx%.0f score %.3f", k, f->box[0], f->box[1],
                       f->box[2], f->box[3], f->score);
                if (f->rotation)
                    printf(" rotated %d", f->rotation);
                if (isfinite(f->quality.score))
                    printf(" quality %.2f", f->quality.score);
                if (isfinite(f->liveness))
                    printf(" live %.2f", f->liveness);
                if (isfinite(f->attr.age))
                    printf(" age %.0f", f->attr.age);
                if (isfinite(f->attr.gender_male))
                    printf(" %s", f->attr.gender_male >= 0.5f ? "male" : "female");
                if (f->attr.emotion >= 0)
                    printf(" %s", ffu_face_emotion_name(f->attr.emotion));
                if (f->num_landmarks)
                    printf(" %d landmarks", f->num_landmarks);
                if (f->embedding_dim)
                    printf(" %d-d embedding", f->embedding_dim);
                printf("\n");
            }
        }
        if (o.draw) {
            char out_path[4096];
            draw_path(o.draw, draw_dir, path, out_path, sizeof out_path);
            draw_faces(&img, &faces);
            if ((st = ffu_image_save(out_path, &img, 92))) {
                failed++;
                if (worst == CLI_EXIT_OK)
                    worst = cli_exit_code(st);
                char msg[1024];
                fprintf(stderr, "facefuse detect: %s\n",
                        cli_error_about(out_path, msg, sizeof msg));
            }
        }
        ffu_image_release(&img);
        cli_progress(&bar, (size_t)i + 1);
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_key(w, "failed"), ffu_jw_int(w, failed);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    }
    if (rc == CLI_EXIT_OK && failed)
        rc = worst;
out:
    ffu_dir_list_free(paths, npaths);
    ffu_face_list_free(&faces);
    ffu_analyzer_destroy(an);
    ffu_jw_destroy(w);
    ffu_options_free(detect_options, &o);
    return rc;
}

/* The face an identity command uses: the largest (box area). Tells the user when
 * there were several, and fails with exit 3 when there is none. */
static int pick_face(const cli_command *cmd, const cli_common *common, const char *path,
                     const ffu_face_list *faces, ffu_analyzer *an, const ffu_image *img, int *index)
{
    char hint[256];
    if (faces->count == 0)
        return cli_fail_msg(cmd, common, CLI_EXIT_DATA, "%s: no face found (%s)", path,
                            cli_no_face_hint(ffu_analyzer_detector(an), img->width, img->height, 0,
                                             CLI_NO_FACE_OPTIONS, hint, sizeof hint));
    int best = 0;
    for (int i = 1; i < faces->count; i++)
        if (faces->faces[i].box[2] * faces->faces[i].box[3] >
            faces->faces[best].box[2] * faces->faces[best].box[3])
            best = i;
    if (faces->count > 1 && !common->quiet) {
        const ffu_face *f = &faces->faces[best];
        fprintf(stderr,
                "facefuse %s: %s: %d faces; using the largest (box %.0f,%.0f %.0fx%.0f)\n",
                cmd->name, path, faces->count, f->box[0], f->box[1], f->box[2], f->box[3]);
    }
    *index = best;
    return CLI_EXIT_OK;
}

/* Left to right by the box's centre, for --all. */
static int by_centre_x(const void *a, const void *b)
{
    const ffu_face *x = a, *y = b;
    float cx = x->box[0] + x->box[2] / 2, cy = y->box[0] + y->box[2] / 2;
    return (cx > cy) - (cx < cy);
}

/* One image's faces for an identity command, embedded: the largest, or with --all
 * every face, left to right. *out (the caller frees it) holds copies without
 * landmarks; *nfound is how many the detector found. */
static int embed_image(const cli_command *cmd, const face_opts *o, ffu_analyzer *an,
                       ffu_embedder *emb, const char *path, ffu_face **out, int *n, int *nfound)
{
    ffu_image img = {0};
    ffu_face_list faces = {0};
    int idx = 0, rc;
    *out = NULL;
    *n = 0;
    ffu_status st = ffu_image_load(path, FFU_PIX_RGB24, &img);
    if (!st)
        st = ffu_analyzer_run(an, &img, &faces);
    if (st) {
        rc = cli_fail_path(cmd, &o->common, st, path);
        goto out;
    }
    *nfound = faces.count;
    /* --all needs no choice, but still fails on an image without a face */
    if ((!o->all || !faces.count) &&
        (rc = pick_face(cmd, &o->common, path, &faces, an, &img, &idx)))
        goto out;
    rc = CLI_EXIT_OK;
    int count = o->all ? faces.count : 1;
    ffu_face *sel = malloc(sizeof *sel * (size_t)count);
    if (!sel) {
        rc = cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
        goto out;
    }
    for (int i = 0; i < count; i++) {
        sel[i] = faces.faces[o->all ? i : idx];
        sel[i].landmarks = NULL; /* the list's */
        sel[i].num_landmarks = 0;
    }
    if (o->all) qsort(sel, (size_t)count, sizeof *sel, by_centre_x);
    if ((st = ffu_embedder_run(emb, &img, sel, count))) {
        free(sel);
        rc = cli_fail(cmd, &o->common, st);
        goto out;
    }
    *out = sel;
    *n = count;
out:
    ffu_face_list_free(&faces);
    ffu_image_release(&img);
    return rc;
}

static void print_embedding(const char *path, const ffu_face *f, const char *model)
{
    printf("%s: %d-d embedding (%s), face at %.0f,%.0f %.0fx%.0f\n", path, f->embedding_dim, model,
           f->box[0], f->box[1], f->box[2], f->box[3]);
    for (int i = 0; i < f->embedding_dim; i++)
        printf("%.6f%c", f->embedding[i], i + 1 == f->embedding_dim || i % 8 == 7 ? '\n' : ' ');
}

static int print_embed(const face_opts *o, ffu_jw *w, const char *path, const char *model,
                       const ffu_face *faces, int n, int nfound)
{
    if (!w) {
        for (int i = 0; i < n; i++)
            print_embedding(path, &faces[i], model);
        return CLI_EXIT_OK;
    }
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "path"), ffu_jw_string(w, path);
    ffu_jw_key(w, "embedder"), ffu_jw_string(w, model);
    ffu_jw_key(w, "faces_found"), ffu_jw_int(w, nfound);
    if (o->all) {
        ffu_jw_key(w, "faces");
        ffu_jw_begin_array(w);
        for (int i = 0; i < n; i++)
            ffu_face_write_json(&faces[i], w);
        ffu_jw_end_array(w);
    } else {
        ffu_jw_key(w, "face");
        ffu_face_write_json(&faces[0], w);
    }
    ffu_jw_end_object(w);
    return cli_print_json(w);
}

typedef struct {
    int a, b;
    float sim;
} face_pair;

static int by_similarity(const void *x, const void *y)
{
    const face_pair *p = x, *q = y;
    return (p->sim < q->sim) - (p->sim > q->sim); /* most similar first */
}

/* compare: every pair of a face of A and a face of B (one of each without --all), most
 * similar first; the answer is the first pair's. */
static int print_compare(const cli_command *cmd, const face_opts *o, ffu_jw *w, char **paths,
                         ffu_face *faces[2], const int n[2], const int nfound[2], float thr,
                         const char *model)
{
    int np = n[0] * n[1];
    face_pair *pairs = malloc(sizeof *pairs * (size_t)np);
    if (!pairs) return cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
    for (int i = 0; i < n[0]; i++)
        for (int j = 0; j < n[1]; j++)
            pairs[i * n[1] + j] =
                (face_pair){i, j,
                            ffu_face_similarity(faces[0][i].embedding, faces[1][j].embedding,
                                                faces[0][i].embedding_dim)};
    qsort(pairs, (size_t)np, sizeof *pairs, by_similarity);
    const face_pair *best = &pairs[0];
    int same = best->sim >= thr, rc = CLI_EXIT_OK;
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "similarity"), ffu_jw_number(w, round((double)best->sim * 10000) / 10000);
        ffu_jw_key(w, "same"), ffu_jw_bool(w, same);
        ffu_jw_key(w, "threshold"), ffu_jw_number(w, round((double)thr * 1000) / 1000);
        ffu_jw_key(w, "embedder"), ffu_jw_string(w, model);
        for (int i = 0; i < 2; i++) {
            ffu_jw_key(w, i ? "b" : "a");
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "path"), ffu_jw_string(w, paths[i]);
            ffu_jw_key(w, "faces_found"), ffu_jw_int(w, nfound[i]);
            ffu_jw_key(w, "box");
            cli_write_box(w, faces[i][i ? best->b : best->a].box);
            if (o->all) {
                ffu_jw_key(w, "boxes");
                ffu_jw_begin_array(w);
                for (int k = 0; k < n[i]; k++)
                    cli_write_box(w, faces[i][k].box);
                ffu_jw_end_array(w);
            }
            ffu_jw_end_object(w);
        }
        if (o->all) {
            ffu_jw_key(w, "pairs");
            ffu_jw_begin_array(w);
            for (int k = 0; k < np; k++) {
                ffu_jw_begin_object(w);
                ffu_jw_key(w, "a"), ffu_jw_int(w, pairs[k].a);
                ffu_jw_key(w, "b"), ffu_jw_int(w, pairs[k].b);
                ffu_jw_key(w, "similarity");
                ffu_jw_number(w, round((double)pairs[k].sim * 10000) / 10000);
                ffu_jw_key(w, "same"), ffu_jw_bool(w, pairs[k].sim >= thr);
                ffu_jw_end_object(w);
            }
            ffu_jw_end_array(w);
        }
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    } else {
        printf("similarity %.4f: %s (threshold %.2f, %s)\n", best->sim,
               same ? "same person" : "different people", thr, model);
        for (int k = 0; o->all && k < np; k++) {
            const ffu_face *fa = &faces[0][pairs[k].a], *fb = &faces[1][pairs[k].b];
            printf("  a%d (%.0f,%.0f %.0fx%.0f) ~ b%d (%.0f,%.0f %.0fx%.0f): %.4f %s\n", pairs[k].a,
                   fa->box[0], fa->box[1], fa->box[2], fa->box[3], pairs[k].b, fb->box[0],
                   fb->box[1], fb->box[2], fb->box[3], pairs[k].sim,
                   pairs[k].sim >= thr ? "same" : "different");
        }
    }
    free(pairs);
    return rc;
}

static int run_identity(const cli_command *cmd, int argc, char **argv, int compare)
{
    face_opts o;
    int npos, done;
    ffu_jw *w = NULL;
    ffu_analyzer *an = NULL;
    ffu_embedder *emb = NULL;
    ffu_face *faces[2] = {NULL, NULL};
    int n[2] = {0, 0}, nfound[2] = {0, 0};
    int rc = cli_parse(cmd, embed_options, &o, argc, argv, &npos, &done);
    if (rc || done)
        goto out;
    if (npos != (compare ? 2 : 1)) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "%s", compare ? "give two images"
                                                                        : "give one image");
        goto out;
    }
    ffu_analyzer_opts ao;
    int no_lm = o.landmarker && !strcmp(o.landmarker, "none");
    if (no_lm)
        o.landmarker = NULL;
    /* the analyzer detects (and refines the keypoints); the embedder runs on the faces
     * embed_image chooses */
    analyzer_opts_from(&o, no_lm ? 0 : FFU_STAGE_LANDMARKS, &ao);
    ffu_status st = ffu_analyzer_create(&ao, &an);
    if (!st)
        st = ffu_embedder_create(&ao.embed, &emb);
    if (st) {
        rc = cli_fail(cmd, &o.common, st);
        goto out;
    }
    for (int i = 0; i < npos; i++)
        if ((rc = embed_image(cmd, &o, an, emb, argv[i], &faces[i], &n[i], &nfound[i]))) goto out;
    const char *model = ffu_embedder_model(emb)->name;
    if (o.common.json && ffu_jw_create(&w, 1) < 0) {
        rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
        goto out;
    }
    rc = compare
             ? print_compare(cmd, &o, w, argv, faces, n, nfound, ffu_embedder_threshold(emb), model)
             : print_embed(&o, w, argv[0], model, faces[0], n[0], nfound[0]);
out:
    free(faces[0]);
    free(faces[1]);
    ffu_embedder_destroy(emb);
    ffu_analyzer_destroy(an);
    ffu_jw_destroy(w);
    ffu_options_free(embed_options, &o);
    return rc;
}

static int run_embed(const cli_command *cmd, int argc, char **argv)
{
    return run_identity(cmd, argc, argv, 0);
}

static int run_compare(const cli_command *cmd, int argc, char **argv)
{
    return run_identity(cmd, argc, argv, 1);
}

const cli_command cli_cmd_detect = {
    "detect",
    "find faces in images (box, score, keypoints; landmarks and more with --with)",
    "facefuse detect IMG|DIR... [--detector NAME[:PATH]] [--min-score S] [--nms IOU] "
    "[--min-face PX] [--rotations] [--with STAGES] [--draw OUT] [--json]",
    "Boxes are [x, y, w, h] in pixels of the image as stored (EXIF orientation applied);\n"
    "keypoints are the eyes, nose tip and mouth corners, image-left first. A folder\n"
    "stands for its .jpg/.jpeg/.png/.webp files in name order (not sub-folders, not\n"
    "hidden files). An image that cannot be read is reported and the others still run\n"
    "(exit 3 or 4 at the end).",
    run_detect,
};

const cli_command cli_cmd_embed = {
    "embed",
    "print the embedding of the largest face in an image",
    "facefuse embed IMG [--embedder NAME[:PATH]] [--detector NAME[:PATH]] [--all] [--json]",
    "Detects faces, takes the largest (and says so when there are several), aligns it to\n"
    "the embedder's template and prints its L2-normalised embedding. No face: exit 3.\n"
    "--all: every face, left to right (JSON: `faces` instead of `face`).",
    run_embed,
};

const cli_command cli_cmd_compare = {
    "compare",
    "are two photos the same person? (cosine similarity + decision)",
    "facefuse compare A B [--embedder NAME[:PATH]] [--all] [--json]",
    "Embeds the largest face of each image and compares them by cosine similarity; the\n"
    "decision uses the embedder's calibrated threshold (docs/EVAL.md, LFW). JSON keys:\n"
    "similarity, same, threshold, embedder, a, b.\n"
    "--all (is someone of A in B?): every face of each image, left to right, each face\n"
    "of A against each of B; the answer is the most similar pair's (so `same` = someone\n"
    "appears in both), a and b gain `boxes` (the faces by index) and the JSON `pairs`\n"
    "(a, b, similarity, same; most similar first).",
    run_compare,
};
