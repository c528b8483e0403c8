/* `facefuse eval swap`: face swap quality on the real data in ../shared/data, so that
 * the numbers in docs/EVAL.md ("Face swap quality") can be rerun with one command.
 *
 * Pairs: one photo per identity of face_recognition_examples/identities.csv (the first
 * single-face, single-identity row of each) is the source; targets are the other
 * identities' photos and the first --frames frames of the talking-head and single-person
 * clips in videos/ (sadtalker_*, liveportrait_*). The built-in mesh swapper runs as a
 * video worker does: find_targets, landmark smoothing in frame order (video), apply.
 * Every output is analysed afresh (detector, FaceMesh, default embedder):
 *   - identity: cosine of the re-detected output face to the source photo, to the
 *     source identity's other photos, and to the original target face; "transfer" when
 *     the output is nearer the source than the target;
 *   - background: pixels changed outside the swap's region of interest (must be 0), PSNR
 *     outside the face box grown to the mask's extent, and outside the bare face box;
 *   - video: landmark jitter (frame-to-frame motion with the affine head motion
 *     removed) of the output against the input, with smoothing on and off, and the
 *     output's motion that the input's does not explain.
 * The metrics are src/face/eval_swap.c; this file runs the models and prints tables. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "face/eval_swap.h"
#include "face/face_internal.h"
#include "facefuse/face.h"
#include "facefuse/image.h"
#include "facefuse/swap.h"
#include "facefuse/video.h"
#include "ffu_config.h"

#define ES_MAX_IDS 32
#define ES_MAX_PHOTOS 128
#define ES_MAX_VIDEOS 64
#define ES_NPTS 468         /* FaceMesh points compared for jitter */
#define ES_MATCH_IOU 0.3f   /* output face = the detection overlapping the target this much */
/* "Other photos" closer than this to the source are copies of it: one margin below 1
 * (0.904 for faceres, where copies at other resolutions score 0.98 and other photos of
 * the person 0.6-0.8; 0.982 for dlib-resnet, whose other photos of a person score about
 * 0.96). */
static float duplicate_cos(const ffu_embedder *e) { return 1.0f - ffu_embedder_margin(e); }


typedef struct {
    cli_common common;
    char *data, *embedder, *videos;
    int frames, limit, threads, backend, no_photos, no_videos;
    double smooth;
    int device, fp16, bf16; /* CLI_MODEL_OPTIONS */
} es_opts;

static const ffu_option es_options[] = {
    CLI_COMMON_OPTIONS,
    {"data", 0, FFU_OPT_STRING, offsetof(es_opts, data),
     "data folder holding face_recognition_examples/ and videos/ (default: "
     "$FFU_SHARED_DIR/data, else ../shared/data)", NULL, 0, 0, NULL, "DIR"},
    {"frames", 'n', FFU_OPT_INT, offsetof(es_opts, frames),
     "frames taken from the start of each video (held in memory)", "60", 2, 1000, NULL, "N"},
    {"limit", 0, FFU_OPT_INT, offsetof(es_opts, limit),
     "at most N pairs per table (photos: the first N source-target pairs; each video: the "
     "first N sources); 0 = all", "0", 0, 1000000, NULL, "N"},
    {"videos", 0, FFU_OPT_STRING, offsetof(es_opts, videos),
     "only the videos whose file name contains one of these comma-separated words",
     NULL, 0, 0, NULL, "LIST"},
    {"no-photos", 0, FFU_OPT_BOOL, offsetof(es_opts, no_photos), "skip the photo targets",
     NULL, 0, 0, NULL, NULL},
    {"no-videos", 0, FFU_OPT_BOOL, offsetof(es_opts, no_videos), "skip the video targets",
     NULL, 0, 0, NULL, NULL},
    {"smooth", 0, FFU_OPT_FLOAT, offsetof(es_opts, smooth),
     "landmark smoothing strength on video (as ffu_swap_video's default); every video is "
     "also swapped with smoothing off", "0.5", 0.01, 1, NULL, "S"},
    {"embedder", 'e', FFU_OPT_STRING, offsetof(es_opts, embedder),
     "embedder measuring identity (default: the zoo default)", NULL, 0, 0, NULL, "NAME"},
    {"threads", 't', FFU_OPT_INT, offsetof(es_opts, threads),
     "intra-op threads per model (0 = all CPUs); 1 is fastest for these small models, "
     "and does not spin against the other cores' work", "1", 0, 1024, NULL, "N"},
    {"backend", 'b', FFU_OPT_ENUM, offsetof(es_opts, backend), CLI_BACKEND_HELP, "cpu", 0, 0,
     cli_backend_names, NULL},
    CLI_MODEL_OPTIONS(es_opts),
    {0},
};

static const cli_command es_cmd = {
    "eval swap",
    "face swap quality on real pairs: identity transfer, untouched background, jitter",
    "facefuse eval swap [--frames N] [--limit N] [--videos LIST] [--data DIR] [--json]",
    "Swaps each identity of face_recognition_examples (one photo each) onto the other\n"
    "identities' photos (every colour x blend option of the mesh swapper) and onto the\n"
    "first N frames of each talking-head / single-person video (default options, landmark\n"
    "smoothing on and off). Outputs are re-analysed: identity = cosine of the output\n"
    "face's embedding to the source and to the original target (transfer rate: share\n"
    "nearer the source); background = pixels changed outside the swap's region (must\n"
    "be 0) and PSNR outside the face box grown to the mask's extent; jitter = mean\n"
    "frame-to-frame FaceMesh landmark motion with the affine head motion removed, output\n"
    "over input. Protocol and results: docs/EVAL.md, \"Face swap quality\".",
    NULL,
};

/* ---- the data ------------------------------------------------------------------------ */

typedef struct es_identity {
    char name[96];
    int photo;                     /* index of the photo used as source and target */
    ffu_image img;                 /* that photo */
    ffu_face_list target;          /* its selected face (find_targets), for photo targets */
    float emb[FFU_FACE_MAX_EMBED]; /* embedding of that face */
    float other[FFU_FACE_MAX_EMBED]; /* mean embedding of the identity's other photos */
    int n_other;
} es_identity;

typedef struct es_photo {
    char rel[512];
    int id;
} es_photo;

typedef struct es_ctx {
    const es_opts *o;
    ffu_detector *det;
    ffu_landmarker *lm;
    ffu_embedder *emb;
    int dim;
    ffu_face_list found, work;
    ffu_image out, out2;
    es_identity ids[ES_MAX_IDS];
    int nid;
    es_photo photos[ES_MAX_PHOTOS];
    int nphotos;
    char root[2048]; /* the data folder */
    cli_progress_bar bar;
    size_t done;
} es_ctx;

/* One table row's sums. */
typedef struct es_acc {
    int outputs, found; /* swaps made; of them, outputs whose face was re-detected */
    double out_src, out_other, out_tgt, tgt_src;
    int n_other, transfer, transfer_other;
    int64_t changed;        /* pixels changed outside the ROI, every output */
    double sse_bg, sse_box; /* outside box + mask extent; outside the bare face box */
    int64_t vals_bg, vals_box;
} es_acc;

static void data_root(const es_opts *o, char *buf, size_t len)
{
    if (o->data) {
        snprintf(buf, len, "%s", o->data);
        return;
    }
    const char *shared = getenv("FFU_SHARED_DIR");
    snprintf(buf, len, "%s/data", shared && *shared ? shared : FFU_SHARED_DIR_DEFAULT);
}

/* The face of img that overlaps `box` most (>= ES_MATCH_IOU; box NULL: the largest),
 * with landmarks, and its embedding when asked. NULL when there is none. */
static ffu_status analyse(es_ctx *c, const ffu_image *img, const float *box, int embed,
                          ffu_face **face)
{
    *face = NULL;
    ffu_status st = ffu_detector_detect(c->det, img, &c->found);
    if (st || c->found.count == 0)
        return st;
    int best = -1;
    if (box) {
        float bi = ES_MATCH_IOU;
        for (int i = 0; i < c->found.count; i++) {
            float v = face_box_iou(box, c->found.faces[i].box);
            if (v >= bi)
                bi = v, best = i;
        }
    } else {
        best = face_list_largest(&c->found);
    }
    if (best < 0)
        return FFU_OK;
    ffu_face *f = &c->found.faces[best];
    if ((st = ffu_landmarker_run(c->lm, img, f)))
        return st;
    if (embed && (st = ffu_embedder_run(c->emb, img, f, 1)))
        return st;
    *face = f;
    return FFU_OK;
}

static ffu_status copy_list(ffu_face_list *dst, const ffu_face_list *src)
{
    ffu_face_list_clear(dst);
    for (int i = 0; i < src->count; i++) {
        ffu_face *d = ffu_face_list_push(dst);
        if (!d)
            return FFU_ERR_NOMEM;
        float *keep = d->landmarks;
        *d = src->faces[i];
        d->landmarks = keep;
        d->num_landmarks = 0;
        ffu_status st = ffu_face_set_landmarks(d, src->faces[i].num_landmarks);
        if (st)
            return st;
        if (d->num_landmarks)
            memcpy(d->landmarks, src->faces[i].landmarks,
                   (size_t)d->num_landmarks * 3 * sizeof(float));
    }
    return FFU_OK;
}

/* Reads identities.csv: rows with one expected face of one person. The first photo of
 * each identity is its source and target photo. */
static ffu_status load_identities(es_ctx *c)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/face_recognition_examples/identities.csv", c->root);
    FILE *f = fopen(path, "r");
    if (!f)
        return ffu_error_set(FFU_ERR_NOT_FOUND, "%s not found (see --data)", path);
    char line[2048];
    int row = 0;
    while (fgets(line, sizeof line, f)) {
        if (row++ == 0)
            continue; /* header: path,identities,n_faces_expected,notes */
        char *p = line, *fields[3];
        int nf = 0;
        for (; nf < 3; nf++) {
            fields[nf] = p;
            char *comma = strchr(p, ',');
            if (!comma)
                break;
            *comma = 0;
            p = comma + 1;
        }
        if (nf < 3 || strcmp(fields[2], "1") || strchr(fields[1], ';') || !*fields[1])
            continue;
        if (c->nphotos == ES_MAX_PHOTOS)
            break;
        int id = -1;
        for (int i = 0; i < c->nid; i++)
            if (!strcmp(c->ids[i].name, fields[1]))
                id = i;
        if (id < 0) {
            if (c->nid == ES_MAX_IDS)
                continue;
            id = c->nid++;
            snprintf(c->ids[id].name, sizeof c->ids[id].name, "%.*s",
                     (int)sizeof c->ids[id].name - 1, fields[1]);
            c->ids[id].photo = c->nphotos;
        }
        es_photo *ph = &c->photos[c->nphotos++];
        snprintf(ph->rel, sizeof ph->rel, "%.*s", (int)sizeof ph->rel - 1, fields[0]);
        ph->id = id;
    }
    fclose(f);
    if (c->nid < 2)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: fewer than two single-face identities", path);
    return FFU_OK;
}

static ffu_status load_photo(es_ctx *c, int i, ffu_image *img)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/face_recognition_examples/%s", c->root, c->photos[i].rel);
    return ffu_image_load(path, FFU_PIX_RGB24, img);
}

/* Per identity: its photo, its selected target face and embedding, and the mean
 * embedding of its other photos (copies of the source photo left out). */
static ffu_status prepare_identities(es_ctx *c, ffu_swapper *sw)
{
    ffu_status st;
    ffu_image img = {0};
    for (int k = 0; k < c->nid; k++) {
        es_identity *id = &c->ids[k];
        if ((st = load_photo(c, id->photo, &id->img)) ||
            (st = ffu_swapper_find_targets(sw, &id->img, &id->target)))
            return st;
        if (id->target.count == 0)
            return ffu_error_set(FFU_ERR_NOT_FOUND, "no face in %s",
                                 c->photos[id->photo].rel);
        if ((st = ffu_embedder_run(c->emb, &id->img, &id->target.faces[0], 1)))
            return st;
        memcpy(id->emb, id->target.faces[0].embedding, (size_t)c->dim * sizeof(float));
    }
    for (int i = 0; i < c->nphotos; i++) {
        es_identity *id = &c->ids[c->photos[i].id];
        if (i == id->photo)
            continue;
        ffu_face *f;
        ffu_image_release(&img);
        if ((st = load_photo(c, i, &img)) || (st = analyse(c, &img, NULL, 1, &f)))
            goto out;
        if (!f || ffu_face_similarity(f->embedding, id->emb, c->dim) >= duplicate_cos(c->emb))
            continue;
        for (int d = 0; d < c->dim; d++)
            id->other[d] += f->embedding[d];
        id->n_other++;
    }
    for (int k = 0; k < c->nid; k++) {
        es_identity *id = &c->ids[k];
        double ss = 0;
        for (int d = 0; d < c->dim; d++)
            ss += (double)id->other[d] * id->other[d];
        for (int d = 0; d < c->dim && ss > 0; d++)
            id->other[d] = (float)(id->other[d] / sqrt(ss));
    }
    st = FFU_OK;
out:
    ffu_image_release(&img);
    return st;
}

/* ---- measuring one output ------------------------------------------------------------- */

/* Background of one output: changed pixels outside the ROIs of the faces given to
 * apply, PSNR sums outside each face box grown to its ROI and outside the bare box. */
static ffu_status measure_background(const ffu_image *in, const ffu_image *out,
                                     const ffu_face_list *applied, es_acc *a, int full)
{
    swapeval_rect roi[16], grown[16], box[16];
    int n = applied->count < 16 ? applied->count : 16;
    for (int i = 0; i < n; i++) {
        swapeval_mesh_roi(&applied->faces[i], in->width, in->height, &roi[i]);
        box[i] = swapeval_box_rect(applied->faces[i].box, in->width, in->height);
        grown[i] = swapeval_rect_union(box[i], roi[i]);
    }
    swapeval_diff d;
    ffu_status st = swapeval_diff_outside(in, out, roi, n, &d);
    if (st)
        return st;
    a->changed += d.changed;
    if (!full)
        return FFU_OK;
    if ((st = swapeval_diff_outside(in, out, grown, n, &d)))
        return st;
    a->sse_bg += d.sse, a->vals_bg += d.pixels * 3;
    if ((st = swapeval_diff_outside(in, out, box, n, &d)))
        return st;
    a->sse_box += d.sse, a->vals_box += d.pixels * 3;
    return FFU_OK;
}

static void add_identity(es_ctx *c, es_acc *a, const ffu_face *out, const float *target_emb,
                         const es_identity *src)
{
    float os = ffu_face_similarity(out->embedding, src->emb, c->dim);
    float ot = ffu_face_similarity(out->embedding, target_emb, c->dim);
    a->found++;
    a->out_src += os, a->out_tgt += ot;
    a->tgt_src += ffu_face_similarity(target_emb, src->emb, c->dim);
    a->transfer += os > ot;
    if (src->n_other) {
        float oo = ffu_face_similarity(out->embedding, src->other, c->dim);
        a->out_other += oo;
        a->n_other++;
        a->transfer_other += oo > ot;
    }
}

static void tick(es_ctx *c)
{
    cli_progress(&c->bar, ++c->done);
}

/* ---- photos --------------------------------------------------------------------------- */

#define ES_VARIANTS 6
static const struct {
    ffu_swap_blend blend;
    ffu_swap_colour colour;
    const char *name;
} variants[ES_VARIANTS] = {
    {FFU_SWAP_BLEND_FEATHER, FFU_SWAP_COLOUR_LAB, "feather+lab"}, /* the default first */
    {FFU_SWAP_BLEND_FEATHER, FFU_SWAP_COLOUR_MULTISCALE, "feather+multiscale"},
    {FFU_SWAP_BLEND_FEATHER, FFU_SWAP_COLOUR_NONE, "feather+none"},
    {FFU_SWAP_BLEND_POISSON, FFU_SWAP_COLOUR_LAB, "poisson+lab"},
    {FFU_SWAP_BLEND_POISSON, FFU_SWAP_COLOUR_MULTISCALE, "poisson+multiscale"},
    {FFU_SWAP_BLEND_POISSON, FFU_SWAP_COLOUR_NONE, "poisson+none"},
};

static int photo_pairs(const es_ctx *c)
{
    int n = c->nid * (c->nid - 1);
    return c->o->limit && c->o->limit < n ? c->o->limit : n;
}

static ffu_status run_photos(es_ctx *c, ffu_swapper **sw, es_acc *acc)
{
    int limit = photo_pairs(c), pair = 0;
    ffu_status st = FFU_OK;
    for (int s = 0; s < c->nid && pair < limit; s++) {
        es_identity *src = &c->ids[s];
        for (int v = 0; v < ES_VARIANTS; v++)
            if ((st = ffu_swapper_set_source(sw[v], &src->img, 1)))
                return st;
        for (int t = 0; t < c->nid && pair < limit; t++) {
            if (t == s)
                continue;
            es_identity *tgt = &c->ids[t];
            for (int v = 0; v < ES_VARIANTS; v++) {
                ffu_image_release(&c->out);
                ffu_face *f;
                if ((st = ffu_image_create(&c->out, FFU_PIX_RGB24, tgt->img.width,
                                           tgt->img.height)) ||
                    (st = ffu_image_copy(&tgt->img, &c->out)) ||
                    (st = ffu_swapper_apply(sw[v], &c->out, &tgt->target)) ||
                    (st = measure_background(&tgt->img, &c->out, &tgt->target, &acc[v], 1)) ||
                    (st = analyse(c, &c->out, tgt->target.faces[0].box, 1, &f)))
                    return st;
                acc[v].outputs++;
                if (f)
                    add_identity(c, &acc[v], f, tgt->emb, src);
                tick(c);
            }
            pair++;
        }
    }
    return st;
}

/* ---- videos --------------------------------------------------------------------------- */

typedef struct es_video_result {
    char name[256];
    int frames, sources, frames_with_face;
    es_acc acc;                  /* smoothed outputs (identity + background) */
    int64_t changed_raw;         /* pixels changed outside the ROI, smoothing off */
    swapeval_jitter in;          /* the input face */
    double out, out_raw;         /* mean residual jitter of the outputs, px */
    int out_pairs, out_raw_pairs;
    double excess, excess_raw;   /* output motion not explained by the input's, px */
    int excess_pairs, excess_raw_pairs;
} es_video_result;

static int video_wanted(const es_opts *o, const char *name)
{
    size_t len = strlen(name);
    if (len < 5 || strcmp(name + len - 4, ".mp4"))
        return 0;
    if (strncmp(name, "sadtalker_", 10) && strncmp(name, "liveportrait_", 13))
        return 0;
    if (!o->videos || !*o->videos)
        return 1;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", o->videos);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (*tok && strstr(name, tok))
            return 1;
    return 0;
}

static int cmp_video(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

static int wanted_entry(const char *dir, const char *name, void *o)
{
    (void)dir;
    return video_wanted(o, name);
}

/* The wanted videos of ROOT/videos in natural order (d3 before d10), at most cap. */
static int list_videos(es_ctx *c, char **names, int cap)
{
    char dir[4096], **all;
    int n;
    snprintf(dir, sizeof dir, "%s/videos", c->root);
    if (ffu_dir_list(dir, wanted_entry, (void *)c->o, &all, &n)) return 0;
    qsort(all, (size_t)n, sizeof *all, cmp_video);
    int kept = n < cap ? n : cap;
    for (int i = 0; i < n; i++)
        if (i < kept)
            names[i] = all[i];
        else
            free(all[i]);
    free(all);
    return kept;
}

static int video_sources(const es_ctx *c)
{
    return c->o->limit && c->o->limit < c->nid ? c->o->limit : c->nid;
}

static void set_pts(float *dst, const ffu_face *f)
{
    if (!f || f->num_landmarks < ES_NPTS) {
        for (int i = 0; i < 2 * ES_NPTS; i++)
            dst[i] = NAN;
        return;
    }
    for (int i = 0; i < ES_NPTS; i++) {
        dst[2 * i] = f->landmarks[3 * i];
        dst[2 * i + 1] = f->landmarks[3 * i + 1];
    }
}

static void add_weighted(double *sum, int *pairs, double v, int n)
{
    if (n > 0 && isfinite(v))
        *sum += v * n, *pairs += n;
}

static ffu_status run_video(es_ctx *c, ffu_swapper *sw, const char *name, es_video_result *r)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/videos/%s", c->root, name);
    snprintf(r->name, sizeof r->name, "%s", name);
    int cap = c->o->frames, n = 0, nsrc = video_sources(c);
    ffu_image *frames = calloc((size_t)cap, sizeof *frames);
    double *pts = calloc((size_t)cap, sizeof *pts);
    ffu_face_list *targets = calloc((size_t)cap, sizeof *targets);
    float *temb = calloc((size_t)cap * (size_t)c->dim, sizeof *temb);
    size_t seq = (size_t)cap * 2 * ES_NPTS;
    float *in_pts = malloc(seq * sizeof *in_pts), *out_pts = malloc(seq * sizeof *out_pts);
    float *raw_pts = malloc(seq * sizeof *raw_pts);
    ffu_video_reader *rd = NULL;
    ffu_swap_smoother *sm = NULL;
    ffu_status st = FFU_OK;
    if (!frames || !pts || !targets || !temb || !in_pts || !out_pts || !raw_pts) {
        st = ffu_error_set(FFU_ERR_NOMEM, "frames of %s", name);
        goto out;
    }
    if ((st = ffu_video_reader_open(&rd, path, NULL)))
        goto out;
    while (n < cap) {
        st = ffu_video_reader_read(rd, &frames[n], &pts[n]);
        if (st == FFU_EOF) {
            st = FFU_OK;
            break;
        }
        if (st)
            goto out;
        /* the smoother wants increasing times; a stuttering stamp must not stop it */
        if (n > 0 && !(pts[n] > pts[n - 1]))
            pts[n] = pts[n - 1] + 1e-3;
        n++;
    }
    r->frames = n;
    /* the input: targets, their embeddings and landmarks, once for every source */
    for (int t = 0; t < n; t++) {
        if ((st = ffu_swapper_find_targets(sw, &frames[t], &targets[t])))
            goto out;
        const ffu_face *f = targets[t].count ? &targets[t].faces[0] : NULL;
        set_pts(in_pts + (size_t)t * 2 * ES_NPTS, f);
        if (f) {
            r->frames_with_face++;
            if ((st = ffu_embedder_run(c->emb, &frames[t], &targets[t].faces[0], 1)))
                goto out;
            memcpy(temb + (size_t)t * c->dim, targets[t].faces[0].embedding,
                   (size_t)c->dim * sizeof *temb);
        }
    }
    if ((st = swapeval_jitter_measure(in_pts, n, ES_NPTS, &r->in)))
        goto out;
    ffu_image_release(&c->out); /* the photo pass leaves its last output */
    ffu_image_release(&c->out2);
    if (n > 0 && ((st = ffu_image_create(&c->out, FFU_PIX_RGB24, frames[0].width,
                                         frames[0].height)) ||
                  (st = ffu_image_create(&c->out2, FFU_PIX_RGB24, frames[0].width,
                                         frames[0].height))))
        goto out;
    double out_sum = 0, raw_sum = 0, ex_sum = 0, exr_sum = 0;
    for (int s = 0; s < nsrc; s++) {
        const es_identity *src = &c->ids[s];
        if ((st = ffu_swapper_set_source(sw, &src->img, 1)) ||
            (st = ffu_swap_smoother_create((float)c->o->smooth, &sm)))
            goto out;
        for (int t = 0; t < n; t++) {
            float *op = out_pts + (size_t)t * 2 * ES_NPTS, *rp = raw_pts + (size_t)t * 2 * ES_NPTS;
            ffu_face *f = NULL;
            /* smoothing on: the video path (find_targets -> smoother -> apply) */
            if ((st = copy_list(&c->work, &targets[t])) ||
                (st = ffu_swap_smoother_apply(sm, &c->work, pts[t])))
                goto out;
            if (targets[t].count) {
                if ((st = ffu_image_copy(&frames[t], &c->out)) ||
                    (st = ffu_swapper_apply(sw, &c->out, &c->work)) ||
                    (st = measure_background(&frames[t], &c->out, &c->work, &r->acc, 1)) ||
                    (st = analyse(c, &c->out, targets[t].faces[0].box, 1, &f)))
                    goto out;
                r->acc.outputs++;
                if (f)
                    add_identity(c, &r->acc, f, temb + (size_t)t * c->dim, src);
            }
            set_pts(op, f);
            /* smoothing off: the raw targets */
            f = NULL;
            if (targets[t].count) {
                es_acc raw = {0};
                if ((st = ffu_image_copy(&frames[t], &c->out2)) ||
                    (st = ffu_swapper_apply(sw, &c->out2, &targets[t])) ||
                    (st = measure_background(&frames[t], &c->out2, &targets[t], &raw, 0)) ||
                    (st = analyse(c, &c->out2, targets[t].faces[0].box, 0, &f)))
                    goto out;
                r->changed_raw += raw.changed;
            }
            set_pts(rp, f);
            tick(c);
        }
        ffu_swap_smoother_destroy(sm);
        sm = NULL;
        swapeval_jitter jo, jr;
        int ep, erp;
        if ((st = swapeval_jitter_measure(out_pts, n, ES_NPTS, &jo)) ||
            (st = swapeval_jitter_measure(raw_pts, n, ES_NPTS, &jr)))
            goto out;
        add_weighted(&out_sum, &r->out_pairs, jo.residual, jo.pairs);
        add_weighted(&raw_sum, &r->out_raw_pairs, jr.residual, jr.pairs);
        double ex = swapeval_excess_motion(out_pts, in_pts, n, ES_NPTS, &ep);
        double exr = swapeval_excess_motion(raw_pts, in_pts, n, ES_NPTS, &erp);
        add_weighted(&ex_sum, &r->excess_pairs, ex, ep);
        add_weighted(&exr_sum, &r->excess_raw_pairs, exr, erp);
        r->sources++;
    }
    r->out = r->out_pairs ? out_sum / r->out_pairs : NAN;
    r->out_raw = r->out_raw_pairs ? raw_sum / r->out_raw_pairs : NAN;
    r->excess = r->excess_pairs ? ex_sum / r->excess_pairs : NAN;
    r->excess_raw = r->excess_raw_pairs ? exr_sum / r->excess_raw_pairs : NAN;
out:
    ffu_swap_smoother_destroy(sm);
    ffu_video_reader_close(rd);
    for (int t = 0; t < cap && frames && targets; t++) {
        ffu_image_release(&frames[t]);
        ffu_face_list_free(&targets[t]);
    }
    ffu_image_release(&c->out);
    ffu_image_release(&c->out2);
    free(frames), free(pts), free(targets), free(temb);
    free(in_pts), free(out_pts), free(raw_pts);
    return st;
}

/* ---- output --------------------------------------------------------------------------- */

static double mean(double sum, int n)
{
    return n ? sum / n : NAN;
}

static void json_acc(ffu_jw *w, const es_acc *a)
{
    ffu_jw_key(w, "outputs"), ffu_jw_int(w, a->outputs);
    ffu_jw_key(w, "outputs_with_face"), ffu_jw_int(w, a->found);
    ffu_jw_key(w, "sim_out_source"), ffu_jw_number(w, mean(a->out_src, a->found));
    ffu_jw_key(w, "sim_out_source_other"), ffu_jw_number(w, mean(a->out_other, a->n_other));
    ffu_jw_key(w, "sim_out_target"), ffu_jw_number(w, mean(a->out_tgt, a->found));
    ffu_jw_key(w, "sim_target_source"), ffu_jw_number(w, mean(a->tgt_src, a->found));
    ffu_jw_key(w, "transfer_rate"), ffu_jw_number(w, mean(a->transfer, a->found));
    ffu_jw_key(w, "transfer_rate_other"), ffu_jw_number(w, mean(a->transfer_other, a->n_other));
    ffu_jw_key(w, "changed_outside_roi"), ffu_jw_int(w, a->changed);
    /* JSON has no infinity: identical backgrounds give mse 0 and psnr null */
    ffu_jw_key(w, "mse_outside_box_mask"),
        ffu_jw_number(w, a->vals_bg ? a->sse_bg / (double)a->vals_bg : NAN);
    ffu_jw_key(w, "psnr_outside_box_mask_db"), ffu_jw_number(w, swapeval_psnr(a->sse_bg, a->vals_bg));
    ffu_jw_key(w, "psnr_outside_box_db"), ffu_jw_number(w, swapeval_psnr(a->sse_box, a->vals_box));
}

static void fmt_psnr(char *buf, size_t len, double p)
{
    if (isinf(p))
        snprintf(buf, len, "inf");
    else if (isnan(p))
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.1f", p);
}

static void print_acc(int width, const char *label, const es_acc *a, int pairs)
{
    char bg[16], box[16];
    fmt_psnr(bg, sizeof bg, swapeval_psnr(a->sse_bg, a->vals_bg));
    fmt_psnr(box, sizeof box, swapeval_psnr(a->sse_box, a->vals_box));
    printf("%-*s %5d %5d/%-5d %7.3f %7.3f %7.3f %7.3f %8.3f %8.3f %8lld %7s %7s\n", width, label, pairs,
           a->found, a->outputs, mean(a->out_src, a->found), mean(a->out_other, a->n_other),
           mean(a->out_tgt, a->found), mean(a->tgt_src, a->found), mean(a->transfer, a->found),
           mean(a->transfer_other, a->n_other), (long long)a->changed, bg, box);
}

static void print_acc_header(int width, const char *first)
{
    printf("%-*s %5s %11s %7s %7s %7s %7s %8s %8s %8s %7s %7s\n", width, first, "pairs", "found",
           "out~src", "out~src*", "out~tgt", "tgt~src", "transfer", "transf*", "changed",
           "PSNR-bm", "PSNR-b");
}

/* ---- the command ---------------------------------------------------------------------- */

int cli_eval_swap(const cli_command *cmd, int argc, char **argv)
{
    (void)cmd; /* messages name "eval swap" */
    es_opts o;
    int npos, done;
    ffu_jw *w = NULL;
    es_ctx *c = NULL;
    ffu_swapper *sw[ES_VARIANTS] = {0};
    es_video_result *vr = NULL;
    char *videos[ES_MAX_VIDEOS] = {0};
    int nvid = 0;
    ffu_status st = FFU_OK;
    int rc = cli_parse(&es_cmd, es_options, &o, argc, argv, &npos, &done);
    if (rc || done)
        goto out;
    if (npos != 0) {
        rc = cli_fail_msg(&es_cmd, &o.common, CLI_EXIT_USAGE, "unexpected argument '%s'", argv[0]);
        goto out;
    }
    if (o.common.json && ffu_jw_create(&w, 1) < 0) {
        rc = cli_fail(&es_cmd, &o.common, FFU_ERR_NOMEM);
        goto out;
    }
    if (!(c = calloc(1, sizeof *c))) {
        rc = cli_fail(&es_cmd, &o.common, ffu_error_set(FFU_ERR_NOMEM, "out of memory"));
        goto out;
    }
    c->o = &o;
    data_root(&o, c->root, sizeof c->root);
    double t0 = ffu_clock_sec();
    const char *backend = cli_backend_names[o.backend];
    ffu_face_model_opts mo = {.model = NULL, .backend = backend, .threads = o.threads,
                              .device = o.device, .fp16 = o.fp16, .bf16 = o.bf16};
    ffu_detector_opts dopt;
    ffu_detector_opts_default(&dopt);
    dopt.m = mo;
    ffu_landmarker_opts lopt;
    ffu_landmarker_opts_default(&lopt);
    lopt.m = mo;
    ffu_face_model_opts eo = {.model = o.embedder, .backend = backend, .threads = o.threads,
                              .device = o.device, .fp16 = o.fp16, .bf16 = o.bf16};
    if ((st = load_identities(c)) || (st = ffu_detector_create(&dopt, &c->det)) ||
        (st = ffu_landmarker_create(&lopt, &c->lm)) || (st = ffu_embedder_create(&eo, &c->emb)))
        goto fail;
    c->dim = ffu_embedder_dim(c->emb);
    for (int v = 0; v < ES_VARIANTS; v++) {
        ffu_swapper_opts so;
        ffu_swapper_opts_default(&so);
        so.backend = backend;
        so.threads = o.threads;
        so.device = o.device;
        so.fp16 = o.fp16;
        so.bf16 = o.bf16;
        so.blend = variants[v].blend;
        so.colour = variants[v].colour;
        if ((st = ffu_swapper_create(&so, &sw[v])))
            goto fail;
        if (o.no_photos)
            break; /* videos use the default only */
    }
    if ((st = prepare_identities(c, sw[0])))
        goto fail;
    if (!o.no_videos)
        nvid = list_videos(c, videos, ES_MAX_VIDEOS);
    if (!o.no_videos && nvid == 0) {
        st = ffu_error_set(FFU_ERR_NOT_FOUND, "no sadtalker_*/liveportrait_* video in %s/videos%s",
                           c->root, o.videos ? " matches --videos" : "");
        goto fail;
    }
    size_t total = (o.no_photos ? 0 : (size_t)photo_pairs(c) * ES_VARIANTS) +
                   (size_t)nvid * (size_t)video_sources(c) * (size_t)o.frames;
    cli_progress_start(&c->bar, "eval swap", total, &o.common);
    es_acc pacc[ES_VARIANTS] = {{0}};
    if (!o.no_photos && (st = run_photos(c, sw, pacc)))
        goto fail;
    if (nvid && !(vr = calloc((size_t)nvid, sizeof *vr))) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < nvid; i++) {
        if ((st = run_video(c, sw[0], videos[i], &vr[i])))
            goto fail;
        /* a short video does fewer frames than the bar counted */
        c->done += (size_t)(o.frames - vr[i].frames) * (size_t)video_sources(c);
        cli_progress(&c->bar, c->done);
    }
    cli_progress(&c->bar, total);
    double secs = ffu_clock_sec() - t0;

    const ffu_zoo_entry *ez = ffu_embedder_model(c->emb);
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "swapper"), ffu_jw_string(w, "mesh");
        ffu_jw_key(w, "embedder"), ffu_jw_string(w, ez->name);
        ffu_jw_key(w, "embedder_threshold"), ffu_jw_number(w, ffu_embedder_threshold(c->emb));
        ffu_jw_key(w, "data"), ffu_jw_string(w, c->root);
        ffu_jw_key(w, "identities");
        ffu_jw_begin_array(w);
        for (int k = 0; k < c->nid; k++) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "name"), ffu_jw_string(w, c->ids[k].name);
            ffu_jw_key(w, "photo"), ffu_jw_string(w, c->photos[c->ids[k].photo].rel);
            ffu_jw_key(w, "other_photos"), ffu_jw_int(w, c->ids[k].n_other);
            ffu_jw_end_object(w);
        }
        ffu_jw_end_array(w);
        ffu_jw_key(w, "photos");
        ffu_jw_begin_array(w);
        for (int v = 0; v < ES_VARIANTS && !o.no_photos; v++) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "variant"), ffu_jw_string(w, variants[v].name);
            ffu_jw_key(w, "default"), ffu_jw_bool(w, v == 0);
            ffu_jw_key(w, "pairs"), ffu_jw_int(w, photo_pairs(c));
            json_acc(w, &pacc[v]);
            ffu_jw_end_object(w);
        }
        ffu_jw_end_array(w);
        ffu_jw_key(w, "frames_per_video"), ffu_jw_int(w, o.frames);
        ffu_jw_key(w, "smooth"), ffu_jw_number(w, o.smooth);
        ffu_jw_key(w, "videos");
        ffu_jw_begin_array(w);
        for (int i = 0; i < nvid; i++) {
            const es_video_result *r = &vr[i];
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "video"), ffu_jw_string(w, r->name);
            ffu_jw_key(w, "frames"), ffu_jw_int(w, r->frames);
            ffu_jw_key(w, "frames_with_face"), ffu_jw_int(w, r->frames_with_face);
            ffu_jw_key(w, "sources"), ffu_jw_int(w, r->sources);
            json_acc(w, &r->acc);
            ffu_jw_key(w, "changed_outside_roi_unsmoothed"), ffu_jw_int(w, r->changed_raw);
            ffu_jw_key(w, "jitter_in_px"), ffu_jw_number(w, r->in.residual);
            ffu_jw_key(w, "motion_in_px"), ffu_jw_number(w, r->in.raw);
            ffu_jw_key(w, "jitter_out_px"), ffu_jw_number(w, r->out);
            ffu_jw_key(w, "jitter_ratio"), ffu_jw_number(w, r->out / r->in.residual);
            ffu_jw_key(w, "jitter_out_unsmoothed_px"), ffu_jw_number(w, r->out_raw);
            ffu_jw_key(w, "jitter_ratio_unsmoothed"), ffu_jw_number(w, r->out_raw / r->in.residual);
            ffu_jw_key(w, "excess_motion_px"), ffu_jw_number(w, r->excess);
            ffu_jw_key(w, "excess_motion_unsmoothed_px"), ffu_jw_number(w, r->excess_raw);
            ffu_jw_end_object(w);
        }
        ffu_jw_end_array(w);
        ffu_jw_key(w, "seconds"), ffu_jw_number(w, secs);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    } else {
        printf("Face swap quality: mesh swapper; identity by %s (same person at cos >= %.2f); "
               "%d identities from %s/face_recognition_examples\n", ez->name,
               (double)ffu_embedder_threshold(c->emb), c->nid, c->root);
        printf("out~src: cosine of the re-detected output face to the source photo; out~src*: "
               "to the source's other photos; out~tgt: to the original target; transfer: share "
               "with out~src > out~tgt (transf*: out~src* > out~tgt); changed: pixels changed "
               "outside the swap's ROI; PSNR-bm: outside the face box grown to the mask's extent "
               "(inf = identical); PSNR-b: outside the bare face box\n");
        if (!o.no_photos) {
            printf("\nphotos: each identity onto each other identity's photo\n");
            print_acc_header(20, "variant");
            for (int v = 0; v < ES_VARIANTS; v++)
                print_acc(20, variants[v].name, &pacc[v], photo_pairs(c));
        }
        if (nvid) {
            printf("\nvideos: first %d frames, each identity onto the face (default options, "
                   "smoothing %.2f)\n", o.frames, o.smooth);
            print_acc_header(44, "video");
            for (int i = 0; i < nvid; i++)
                print_acc(44, vr[i].name, &vr[i].acc, vr[i].sources);
            printf("\njitter: mean frame-to-frame FaceMesh landmark motion (px) with the affine "
                   "head motion removed; out = smoothing on, raw = off; excess: output motion "
                   "the input's does not explain (px)\n");
            printf("%-44s %6s %8s %8s %8s %7s %8s %7s %8s %8s %8s\n", "video", "frames",
                   "motion", "jit-in", "jit-out", "ratio", "jit-raw", "ratio", "excess",
                   "exc-raw", "chg-raw");
            for (int i = 0; i < nvid; i++) {
                const es_video_result *r = &vr[i];
                printf("%-44s %6d %8.3f %8.3f %8.3f %7.2f %8.3f %7.2f %8.3f %8.3f %8lld\n",
                       r->name, r->frames, r->in.raw, r->in.residual, r->out,
                       r->out / r->in.residual, r->out_raw, r->out_raw / r->in.residual,
                       r->excess, r->excess_raw, (long long)r->changed_raw);
            }
        }
        printf("\n%.1f s\n", secs);
    }
    goto out;
fail:
    rc = cli_fail(&es_cmd, &o.common, st);
out:
    for (int i = 0; i < nvid; i++)
        free(videos[i]);
    free(vr);
    for (int v = 0; v < ES_VARIANTS; v++)
        ffu_swapper_destroy(sw[v]);
    if (c) {
        for (int k = 0; k < c->nid; k++) {
            ffu_image_release(&c->ids[k].img);
            ffu_face_list_free(&c->ids[k].target);
        }
        ffu_face_list_free(&c->found);
        ffu_face_list_free(&c->work);
        ffu_image_release(&c->out);
        ffu_image_release(&c->out2);
        ffu_detector_destroy(c->det);
        ffu_landmarker_destroy(c->lm);
        ffu_embedder_destroy(c->emb);
        free(c);
    }
    ffu_jw_destroy(w);
    ffu_options_free(es_options, &o);
    return rc;
}
