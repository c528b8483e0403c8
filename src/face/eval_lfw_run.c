/* The LFW verification run: every distinct image of pairs.txt is decoded, its face
 * found (the one nearest the centre) and embedded exactly once, then each pair gets
 * the cosine similarity of its two embeddings. eval.h's lfw_eval turns those into the
 * k-fold accuracy and TAR@FAR that docs/EVAL.md reports. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_run.h"

/* Measured on the mean of 800 deep-funneled images (eyes, nose tip, mouth corners). */
const float lfw_fixed_kps[2 * FFU_FACE_NUM_KPS] = {101.5f, 111.5f, 147.5f, 111.5f, 124.5f,
                                                   133.5f, 108.5f, 156.5f, 141.5f, 156.5f};

int lfw_pick_face(const ffu_face_list *list, int width, int height)
{
    if (!list || list->count <= 0)
        return -1;
    double cx = width * 0.5, cy = height * 0.5;
    int best = -1;
    double best_d = 0, best_a = 0;
    for (int i = 0; i < list->count; i++) {
        const float *b = list->faces[i].box;
        double dx = b[0] + b[2] * 0.5 - cx, dy = b[1] + b[3] * 0.5 - cy;
        double d = sqrt(dx * dx + dy * dy), a = (double)b[2] * b[3];
        if (best < 0 || d < best_d - 0.5 || (d <= best_d + 0.5 && a > best_a)) {
            best = i;
            best_d = d;
            best_a = a;
        }
    }
    return best;
}

/* One side of a pair, for sorting the 2 * count references into distinct images. */
typedef struct img_ref {
    const char *name;
    int num;
    int pair, which;
} img_ref;

static int ref_cmp(const void *a, const void *b)
{
    const img_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->num > y->num) - (x->num < y->num);
}

/* Finds the face in one image, refines its keypoints with lm (may be NULL) and embeds it
 * into out (embedding_dim 0: no face). */
static ffu_status embed_image(const ffu_image *img, ffu_detector *det, ffu_landmarker *lm,
                              ffu_embedder *emb, ffu_face_list *list, ffu_face *face,
                              lfw_run_stats *s)
{
    ffu_face_init(face);
    if (det) {
        double t0 = ffu_clock_sec();
        ffu_status st = ffu_detector_detect(det, img, list);
        s->detect_s += ffu_clock_sec() - t0;
        if (st)
            return st;
        if (list->count > 1)
            s->multi++;
        int k = lfw_pick_face(list, img->width, img->height);
        if (k < 0)
            return FFU_OK;
        if (lm) {
            double t1 = ffu_clock_sec();
            st = ffu_landmarker_run(lm, img, &list->faces[k]);
            s->landmark_s += ffu_clock_sec() - t1;
            if (st)
                return st;
        }
        memcpy(face->box, list->faces[k].box, sizeof face->box);
        memcpy(face->kps, list->faces[k].kps, sizeof face->kps);
        face->score = list->faces[k].score;
    } else {
        /* the fixed points belong to 250x250 images; follow other sizes proportionally */
        for (int i = 0; i < FFU_FACE_NUM_KPS; i++) {
            face->kps[2 * i] = lfw_fixed_kps[2 * i] * (float)img->width / 250.0f;
            face->kps[2 * i + 1] = lfw_fixed_kps[2 * i + 1] * (float)img->height / 250.0f;
        }
    }
    double t0 = ffu_clock_sec();
    ffu_status st = ffu_embedder_run(emb, img, face, 1);
    s->embed_s += ffu_clock_sec() - t0;
    return st;
}

ffu_status lfw_run_pairs(const lfw_pairs *p, ffu_detector *det, ffu_landmarker *lm,
                         ffu_embedder *emb, float *sims, lfw_run_stats *stats)
{
    lfw_run_stats s;
    memset(&s, 0, sizeof s);
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!p || !emb || !sims || p->count <= 0)
        return ffu_error_set(FFU_ERR_INVALID, "lfw_run: bad arguments");
    double t_start = ffu_clock_sec();
    int n = 2 * p->count, dim = ffu_embedder_dim(emb);
    img_ref *refs = malloc((size_t)n * sizeof *refs);
    int *image_of = malloc((size_t)n * sizeof *image_of); /* ref (2 * pair + which) -> image */
    float *embs = NULL;
    uint8_t *have = NULL;
    ffu_face *face = malloc(sizeof *face);
    ffu_face_list list = {0};
    ffu_image img = {0};
    ffu_status st = FFU_OK;
    if (!refs || !image_of || !face) {
        st = ffu_error_set(FFU_ERR_NOMEM, "lfw_run: %d image references", n);
        goto done;
    }
    for (int i = 0; i < p->count; i++)
        for (int w = 0; w < 2; w++)
            refs[2 * i + w] = (img_ref){w ? p->pairs[i].name2 : p->pairs[i].name1,
                                        w ? p->pairs[i].num2 : p->pairs[i].num1, i, w};
    qsort(refs, (size_t)n, sizeof *refs, ref_cmp);
    int nimg = 0;
    for (int r = 0; r < n; r++) {
        if (r > 0 && ref_cmp(&refs[r - 1], &refs[r]))
            nimg++;
        image_of[2 * refs[r].pair + refs[r].which] = nimg;
    }
    nimg++;
    embs = malloc((size_t)nimg * (size_t)dim * sizeof *embs);
    have = calloc((size_t)nimg, 1);
    if (!embs || !have) {
        st = ffu_error_set(FFU_ERR_NOMEM, "lfw_run: embeddings of %d images", nimg);
        goto done;
    }
    s.images = nimg;
    for (int r = 0, k = -1; r < n; r++) {
        if (r > 0 && !ref_cmp(&refs[r - 1], &refs[r]))
            continue;
        k++;
        char path[2048];
        if ((st = lfw_pair_path(p, refs[r].pair, refs[r].which, path, sizeof path)) ||
            (st = ffu_image_load(path, FFU_PIX_RGB24, &img)))
            goto done;
        st = embed_image(&img, det, lm, emb, &list, face, &s);
        ffu_image_release(&img);
        if (st) {
            char why[512];
            snprintf(why, sizeof why, "%s", ffu_error_message());
            st = ffu_error_set(st, "%s: %s", path, why);
            goto done;
        }
        if (face->embedding_dim == dim) {
            memcpy(embs + (size_t)k * dim, face->embedding, (size_t)dim * sizeof *embs);
            have[k] = 1;
        } else {
            s.nofaces++;
        }
    }
    for (int i = 0; i < p->count; i++) {
        int a = image_of[2 * i], b = image_of[2 * i + 1];
        sims[i] = have[a] && have[b]
                      ? ffu_face_similarity(embs + (size_t)a * dim, embs + (size_t)b * dim, dim)
                      : NAN;
    }
done:
    s.total_s = ffu_clock_sec() - t_start;
    if (stats && !st)
        *stats = s;
    ffu_image_release(&img);
    ffu_face_list_free(&list);
    free(face);
    free(have);
    free(embs);
    free(image_of);
    free(refs);
    return st;
}
