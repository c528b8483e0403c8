/* `facefuse enroll | identify`: watchlist galleries from the command line.
 *   enroll DIR -o G.ffgl   one identity per sub-folder of DIR (or Name.jpg / Name_2.jpg
 *                          files), the largest face of each photo, saved as a gallery file
 *   identify IMG|DIR... -g G   every face of each image against a gallery file or a folder
 *                          enrolled on the fly: the best identities and whether the best
 *                          reaches the embedder's threshold (or --threshold)
 * Both run the analyzer with landmarks + embedding, so enrolment and identification see
 * faces the same way (src/gallery/, docs/GALLERY.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "facefuse/face.h"
#include "facefuse/gallery.h"
#include "facefuse/image.h"


typedef struct {
    cli_common common;
    char *detector, *embedder, *output, *gallery;
    int threads, backend, min_face, top;
    double threshold;
    int device, fp16, bf16; /* CLI_MODEL_OPTIONS */
} gallery_opts;

#define GALLERY_MODEL_OPTIONS                                                               \
    {"detector", 'd', FFU_OPT_STRING, offsetof(gallery_opts, detector),                     \
     "detector: a zoo name or FAMILY:PATH (see `facefuse models list`)", NULL, 0, 0, NULL,  \
     "NAME[:PATH]"},                                                                        \
    {"embedder", 'e', FFU_OPT_STRING, offsetof(gallery_opts, embedder),                     \
     "embedder: a zoo name or FAMILY:PATH (a gallery file only matches its own embedder)",  \
     NULL, 0, 0, NULL, "NAME[:PATH]"},                                                      \
    {"min-face", 0, FFU_OPT_INT, offsetof(gallery_opts, min_face),                          \
     "smallest face to find, in pixels (large images are also scanned in tiles)", "0", 0,   \
     100000, NULL, "PX"},                                                                   \
    {"threads", 't', FFU_OPT_INT, offsetof(gallery_opts, threads),                          \
     "inference threads (0 = all CPUs)", "0", 0, 1024, NULL, "N"},                          \
    {"backend", 'b', FFU_OPT_ENUM, offsetof(gallery_opts, backend),                         \
     CLI_BACKEND_HELP, "cpu", 0, 0, cli_backend_names, NULL},                             \
    CLI_MODEL_OPTIONS(gallery_opts)

static const ffu_option enroll_options[] = {
    CLI_COMMON_OPTIONS,
    GALLERY_MODEL_OPTIONS,
    {"output", 'o', FFU_OPT_STRING, offsetof(gallery_opts, output),
     "the gallery file to write (replaced atomically)", NULL, 0, 0, NULL, "G.ffgl"},
    {0},
};

static const ffu_option identify_options[] = {
    CLI_COMMON_OPTIONS,
    GALLERY_MODEL_OPTIONS,
    {"gallery", 'g', FFU_OPT_STRING, offsetof(gallery_opts, gallery),
     "a gallery file from `facefuse enroll`, or a folder to enrol now", NULL, 0, 0, NULL,
     "G.ffgl|DIR"},
    {"top", 'k', FFU_OPT_INT, offsetof(gallery_opts, top), "identities listed per face", "3", 1,
     1000, NULL, "K"},
    {"threshold", 0, FFU_OPT_FLOAT, offsetof(gallery_opts, threshold),
     "similarity needed to name a face (0 = the embedder's calibrated threshold)", "0", 0, 1,
     NULL, "S"},
    {0},
};

/* The analyzer (landmarks + embedding) and what the gallery needs to know of its
 * embedder: name, dim, threshold. */
static ffu_status open_models(const gallery_opts *o, ffu_analyzer **an, const char **model,
                              int *dim, float *thr)
{
    ffu_analyzer_opts ao;
    ffu_analyzer_opts_default(&ao);
    ao.stages = FFU_STAGE_LANDMARKS | FFU_STAGE_EMBED;
    ffu_face_model_opts m = {.model = NULL,
                             .backend = cli_backend_names[o->backend],
                             .threads = o->threads,
                             .device = o->device,
                             .fp16 = o->fp16,
                             .bf16 = o->bf16};
    ao.detect.m = m;
    ao.detect.m.model = o->detector;
    ao.detect.min_face = o->min_face;
    ao.landmarks.m = m;
    ao.embed = m;
    ao.embed.model = o->embedder;
    ffu_embedder *e = NULL;
    ffu_status st = ffu_embedder_create(&ao.embed, &e);
    if (st)
        return st;
    *model = ffu_embedder_model(e)->name; /* a zoo string: outlives the embedder */
    *dim = ffu_embedder_dim(e);
    *thr = ffu_embedder_threshold(e);
    ffu_embedder_destroy(e);
    return ffu_analyzer_create(&ao, an);
}

/* A progress bar over ffu_gallery_enroll_dir's photos, started at the first one (when
 * their count is known). */
typedef struct {
    cli_progress_bar bar;
    const cli_common *common;
    int started;
} enroll_bar;

static void enroll_progress(void *user, int done, int total)
{
    enroll_bar *e = user;
    if (!e->started) {
        cli_progress_start(&e->bar, "enroll", (size_t)total, e->common);
        e->started = 1;
    }
    cli_progress(&e->bar, (size_t)done);
}

static ffu_status enroll_with_bar(ffu_gallery *g, ffu_analyzer *an, const char *dir,
                                  const cli_common *common, int *skipped)
{
    enroll_bar e = {.common = common};
    ffu_gallery_set_progress(g, enroll_progress, &e);
    ffu_status st = ffu_gallery_enroll_dir(g, an, dir, skipped);
    ffu_gallery_set_progress(g, NULL, NULL);
    return st;
}

static int run_enroll(const cli_command *cmd, int argc, char **argv)
{
    gallery_opts o;
    int npos, done;
    ffu_analyzer *an = NULL;
    ffu_gallery *g = NULL;
    int rc = cli_parse(cmd, enroll_options, &o, argc, argv, &npos, &done);
    if (rc || done)
        goto out;
    if (npos != 1 || !o.output) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "%s",
                          npos != 1 ? "give one folder of photos" : "give --output G.ffgl");
        goto out;
    }
    /* refused now, not after the enrolment */
    if ((rc = cli_check_data_output(cmd, &o.common, "--output", o.output))) goto out;
    const char *model = NULL;
    int dim = 0, skipped = 0;
    float thr = 0;
    ffu_status st = open_models(&o, &an, &model, &dim, &thr);
    if (!st)
        st = ffu_gallery_create(dim, model, &g);
    if (!st)
        st = enroll_with_bar(g, an, argv[0], &o.common, &skipped);
    if (!st)
        st = ffu_gallery_save(g, o.output);
    if (st) {
        rc = cli_fail(cmd, &o.common, st);
        goto out;
    }
    if (o.common.json) {
        ffu_jw *w = NULL;
        if (ffu_jw_create(&w, 1) < 0) {
            rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
            goto out;
        }
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "output"), ffu_jw_string(w, o.output);
        ffu_jw_key(w, "embedder"), ffu_jw_string(w, model);
        ffu_jw_key(w, "dim"), ffu_jw_int(w, dim);
        ffu_jw_key(w, "identities"), ffu_jw_int(w, ffu_gallery_identity_count(g));
        ffu_jw_key(w, "templates"), ffu_jw_int(w, ffu_gallery_template_count(g));
        ffu_jw_key(w, "skipped"), ffu_jw_int(w, skipped);
        ffu_jw_key(w, "names");
        ffu_jw_begin_array(w);
        for (int i = 0; i < ffu_gallery_identity_count(g); i++)
            ffu_jw_string(w, ffu_gallery_name(g, i));
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
        ffu_jw_destroy(w);
    } else {
        printf("%s: %d identities, %d photos enrolled, %d skipped (%s, %d-d)\n", o.output,
               ffu_gallery_identity_count(g), ffu_gallery_template_count(g), skipped, model, dim);
    }
out:
    ffu_gallery_destroy(g);
    ffu_analyzer_destroy(an);
    ffu_options_free(enroll_options, &o);
    return rc;
}

/* One image: every face, its best identities, named when the best reaches thr. */
static int identify_image(const cli_command *cmd, const gallery_opts *o, ffu_analyzer *an,
                          const ffu_gallery *g, float thr, const char *path,
                          ffu_gallery_match *top, ffu_jw *w)
{
    ffu_image img = {0};
    ffu_face_list faces = {0};
    ffu_status st = ffu_image_load(path, FFU_PIX_RGB24, &img);
    if (!st) st = ffu_analyzer_run(an, &img, &faces);
    if (st) { /* reported; the other images still run (as in `detect`) */
        ffu_image_release(&img);
        ffu_face_list_free(&faces);
        return cli_input_failed(cmd, st, path, w);
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "path"), ffu_jw_string(w, path);
        ffu_jw_key(w, "min_face"),
            ffu_jw_number(
                w, roundf(cli_smallest_face(ffu_analyzer_detector(an), img.width, img.height)));
        ffu_jw_key(w, "faces");
        ffu_jw_begin_array(w);
    } else if (faces.count == 0) {
        char hint[256];
        printf("%s: no face (%s)\n", path,
               cli_no_face_hint(ffu_analyzer_detector(an), img.width, img.height, 0,
                                CLI_NO_FACE_OPTIONS, hint, sizeof hint));
    }
    ffu_image_release(&img);
    for (int i = 0; i < faces.count; i++) {
        const ffu_face *f = &faces.faces[i];
        int n = ffu_gallery_search(g, f->embedding, top, o->top);
        int known = n > 0 && top[0].similarity >= thr;
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "box");
            cli_write_box(w, f->box);
            ffu_jw_key(w, "identity");
            ffu_jw_string(w, known ? ffu_gallery_name(g, top[0].identity) : NULL);
            ffu_jw_key(w, "similarity");
            ffu_jw_number(w, n ? round((double)top[0].similarity * 10000) / 10000 : 0);
            ffu_jw_key(w, "matches");
            ffu_jw_begin_array(w);
            for (int k = 0; k < n; k++) {
                ffu_jw_begin_object(w);
                ffu_jw_key(w, "name"), ffu_jw_string(w, ffu_gallery_name(g, top[k].identity));
                ffu_jw_key(w, "similarity");
                ffu_jw_number(w, round((double)top[k].similarity * 10000) / 10000);
                ffu_jw_end_object(w);
            }
            ffu_jw_end_array(w);
            ffu_jw_end_object(w);
        } else {
            printf("%s: face at %.0f,%.0f %.0fx%.0f: ", path, f->box[0], f->box[1], f->box[2],
                   f->box[3]);
            if (known)
                printf("%s %.3f", ffu_gallery_name(g, top[0].identity), top[0].similarity);
            else if (n)
                printf("unknown (closest %s %.3f)", ffu_gallery_name(g, top[0].identity),
                       top[0].similarity);
            else
                printf("unknown (empty gallery)");
            for (int k = 1; k < n; k++)
                printf("%s%s %.3f", k == 1 ? "; next: " : ", ",
                       ffu_gallery_name(g, top[k].identity), top[k].similarity);
            printf("\n");
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
    }
    ffu_face_list_free(&faces);
    return CLI_EXIT_OK;
}

static int run_identify(const cli_command *cmd, int argc, char **argv)
{
    gallery_opts o;
    int npos, done;
    ffu_analyzer *an = NULL;
    ffu_gallery *g = NULL;
    ffu_gallery_match *top = NULL;
    ffu_jw *w = NULL;
    char **paths = NULL;
    int npaths = 0;
    int rc = cli_parse(cmd, identify_options, &o, argc, argv, &npos, &done);
    if (rc || done)
        goto out;
    if (npos < 1 || !o.gallery) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "%s",
                          npos < 1 ? "give at least one image" : "give --gallery G.ffgl|DIR");
        goto out;
    }
    const char *model = NULL;
    int dim = 0;
    float thr = 0;
    ffu_status st = cli_expand_images(npos, argv, &paths, &npaths);
    const int enroll_dir = cli_is_dir(o.gallery);
    /* a gallery file is read before the models load: a wrong path costs nothing */
    if (!st && !enroll_dir) st = ffu_gallery_load(o.gallery, &g);
    if (!st) st = open_models(&o, &an, &model, &dim, &thr);
    if (!st && enroll_dir) {
        st = ffu_gallery_create(dim, model, &g);
        if (!st)
            st = enroll_with_bar(g, an, o.gallery, &o.common, NULL);
    } else if (!st) {
        if (ffu_gallery_dim(g) != dim || strcmp(ffu_gallery_model(g), model)) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_DATA,
                              "%s was enrolled with %s (%d-d); this run embeds with %s (%d-d): "
                              "pass --embedder %s",
                              o.gallery, ffu_gallery_model(g), ffu_gallery_dim(g), model, dim,
                              ffu_gallery_model(g));
            goto out;
        }
    }
    if (st) {
        rc = cli_fail(cmd, &o.common, st);
        goto out;
    }
    if (o.threshold > 0)
        thr = (float)o.threshold;
    top = calloc((size_t)o.top, sizeof *top);
    if (!top || (o.common.json && ffu_jw_create(&w, 1) < 0)) {
        rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
        goto out;
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "gallery");
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "path"), ffu_jw_string(w, o.gallery);
        ffu_jw_key(w, "embedder"), ffu_jw_string(w, model);
        ffu_jw_key(w, "identities"), ffu_jw_int(w, ffu_gallery_identity_count(g));
        ffu_jw_key(w, "templates"), ffu_jw_int(w, ffu_gallery_template_count(g));
        ffu_jw_end_object(w);
        ffu_jw_key(w, "threshold"), ffu_jw_number(w, round((double)thr * 1000) / 1000);
        ffu_jw_key(w, "images");
        ffu_jw_begin_array(w);
    }
    cli_progress_bar bar;
    cli_progress_start(&bar, "identify", (size_t)npaths, &o.common);
    if (npaths == 1) bar.enabled = 0;
    for (int i = 0; i < npaths; i++) {
        if (!w) cli_progress_clear(&bar); /* the image's lines follow on the terminal */
        int code = identify_image(cmd, &o, an, g, thr, paths[i], top, w);
        if (code && !rc) rc = code; /* the first failure's exit code, at the end */
        cli_progress(&bar, (size_t)i + 1);
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
        int jrc = cli_print_json(w);
        if (!rc) rc = jrc;
    }
out:
    ffu_dir_list_free(paths, npaths);
    ffu_jw_destroy(w);
    free(top);
    ffu_gallery_destroy(g);
    ffu_analyzer_destroy(an);
    ffu_options_free(identify_options, &o);
    return rc;
}

const cli_command cli_cmd_enroll = {
    "enroll",
    "build a watchlist gallery file from a folder of photos",
    "facefuse enroll DIR -o G.ffgl [options]",
    "DIR holds one sub-folder per person (its name is the identity) or files named "
    "Name.jpg / Name_2.jpg. The largest face of every JPEG/PNG is embedded (landmarks + "
    "the embedder) and stored; photos without a face are skipped with a warning. The "
    "gallery file records the embedder, so `identify` must use the same one.",
    run_enroll,
};

const cli_command cli_cmd_identify = {
    "identify",
    "name the faces in images from a watchlist gallery",
    "facefuse identify IMG|DIR... -g G.ffgl|DIR [options]",
    "Every face of every image is compared with the gallery (a file from `facefuse "
    "enroll`, or a folder enrolled on the spot): the K most similar identities (max "
    "cosine over each identity's photos), and the best one's name when its similarity "
    "reaches the embedder's calibrated threshold (or --threshold). A folder of images "
    "stands for its .jpg/.jpeg/.png/.webp files in name order. An image that cannot be read is "
    "reported and the others still run (exit 3 or 4 at the end).",
    run_identify,
};
