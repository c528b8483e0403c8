/* Face embeddings: align each face by its five keypoints to its embedder's template,
 * run the faces of one image as one batch, and hand back L2-normalised descriptors that
 * ffu_face_similarity compares against the embedder's calibrated threshold. The zoo row
 * says template, input size and normalisation; this file only knows which output is the
 * descriptor (multi-output models such as faceres also predict age and gender) and how
 * loose a family's crop is. With backend cuda the faces may also come from frames in
 * device memory (ffu_embedder_run_gpu): the crops are then cut on the GPU.
 *
 * An ensemble's members are independent models. On the cpu backend with M to 2M - 1
 * threads for M members, they run side by side, one thread each
 * (ffu_nn_run_side_by_side): these small models scale poorly over threads (dlib-resnet
 * ran 1.17x faster on two than on one), two of them at once nearly twice
 * (docs/BENCHMARKS.md "Ensemble members side by side"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "face_internal.h"

/* Faces per session run. Larger calls are split so a group photo does not plan a
 * session for hundreds of crops at once. */
#define EMBED_MAX_BATCH 32

#define EMBED_MAX_MEMBERS 4

struct ffu_embedder {
    face_net net; /* an ensemble keeps only net.entry (its zoo row) */
    int out_index; /* the descriptor output */
    int dim;
    double crop_scale; /* < 1: the template is shrunk about the crop centre (looser crop) */
    /* an ensemble (zoo family "ensemble"): its members, each one view, and the factor
     * sqrt(1 / spread) on each member's unit descriptor */
    ffu_embedder *members[EMBED_MAX_MEMBERS];
    int nmembers;
    float factor[EMBED_MAX_MEMBERS];
    float *scratch; /* EMBED_MAX_BATCH slots of FFU_FACE_MAX_EMBED: the members' parts */
    int side;       /* 1: the members run side by side, 0: in turn */
};

/* How much of the crop the template spans for a family. ArcFace-style models were
 * trained on the template itself. faceres (HSE) was trained on loose VGGFace2 boxes,
 * so its 224 crop shows the whole head: the template is shrunk about the centre. The
 * value was chosen on LFW folds 1-2 with YuNet keypoints, B,G,R input (k-fold accuracy
 * 0.979 at 0.72-0.76, 0.967 at 0.84, 0.968 at 0.90; moving the face up or down by 5%
 * of the crop only lost accuracy; R,G,B input: 0.953 at 1.0, 0.963 at 0.8). */
static double family_crop_scale(const char *family)
{
    if (family && !strcmp(family, "faceres"))
        return 0.74;
    return 1.0;
}

/* Elements per batch item of output i after a run with batch `batch`. */
static int64_t per_item(const ffu_nn_tensor *t, int batch)
{
    int64_t n = 1;
    for (int k = 0; k < t->rank; k++)
        n *= t->dims[k];
    return batch > 0 ? n / batch : n;
}

/* Finds the descriptor: the f32 output with the most values per face. Declared shapes
 * are not enough (TF.js graphs often declare none), so the choice is made on the
 * shapes of one run of a blank crop. */
static ffu_status pick_output(ffu_embedder *e)
{
    ffu_status st = face_net_clear_input(&e->net); /* device memory with cuda */
    if (st)
        return st;
    if ((st = face_net_run(&e->net)))
        return st;
    int best = -1;
    int64_t best_n = 0;
    for (int i = 0; i < face_net_num_outputs(&e->net); i++) {
        ffu_nn_tensor t;
        if (ffu_nn_session_output(e->net.session, i, &t) || t.dtype != FFU_DTYPE_F32)
            continue;
        int64_t n = per_item(&t, e->net.batch);
        if (n > best_n) {
            best_n = n;
            best = i;
        }
    }
    if (best < 0 || best_n < 2)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: no f32 output looks like an embedding",
                             e->net.path);
    if (best_n > FFU_FACE_MAX_EMBED)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: embedding of %lld values, at most %d",
                             e->net.path, (long long)best_n, FFU_FACE_MAX_EMBED);
    e->out_index = best;
    e->dim = (int)best_n;
    return FFU_OK;
}

/* Opens the members of ensemble row z ("A+B" in its file) with the caller's options.
 * Side by side (cpu backend, M members on M to 2M - 1 threads), each member gets one
 * thread, and every member but the first its own activation memory: the members run
 * at the same time, and a workspace's sessions must not. With more threads each member
 * has two or more to itself in turn. */
static ffu_status open_ensemble(ffu_embedder *e, const ffu_zoo_entry *z,
                                const ffu_face_model_opts *o)
{
    e->net.entry = *z;
    int count = 0;
    while (ffu_zoo_member(z, count))
        count++;
    int threads = o && o->threads > 0 ? o->threads : ffu_cpu_count();
    e->side = count >= 2 && threads >= count && threads < 2 * count &&
              (!o || !o->backend || !strcmp(o->backend, "cpu"));
    for (const ffu_zoo_entry *row; (row = ffu_zoo_member(z, e->nmembers));) {
        const char *name = row->name;
        if (e->nmembers == EMBED_MAX_MEMBERS)
            return ffu_error_set(FFU_ERR_INVALID, "ensemble '%s': over %d members", z->name,
                                 EMBED_MAX_MEMBERS);
        ffu_face_model_opts mo = o ? *o : (ffu_face_model_opts){0};
        mo.model = name;
        if (e->side) {
            mo.threads = 1;
            if (e->nmembers > 0) mo.workspace = NULL;
        }
        ffu_embedder *m = NULL;
        ffu_status st = ffu_embedder_create(&mo, &m);
        if (st)
            return st;
        e->members[e->nmembers++] = m;
        if (m->nmembers || !(m->net.entry.spread > 0))
            return ffu_error_set(FFU_ERR_INVALID, "ensemble '%s': member '%s' has no "
                                 "measured spread", z->name, name);
        m->net.entry.flip = 0; /* one view each: the ensemble is where the accuracy is */
        e->factor[e->nmembers - 1] = sqrtf(1.0f / m->net.entry.spread);
        e->dim += m->dim;
    }
    if (e->nmembers < 2 || e->dim > FFU_FACE_MAX_EMBED)
        return ffu_error_set(FFU_ERR_INVALID, "ensemble '%s': %d members, %d values", z->name,
                             e->nmembers, e->dim);
    e->scratch = malloc(sizeof(float) * EMBED_MAX_BATCH * FFU_FACE_MAX_EMBED);
    return e->scratch ? FFU_OK : ffu_error_set(FFU_ERR_NOMEM, "embedder");
}

ffu_status ffu_embedder_create(const ffu_face_model_opts *o, ffu_embedder **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_embedder_create: out is NULL");
    *out = NULL;
    ffu_embedder *e = calloc(1, sizeof *e);
    if (!e)
        return ffu_error_set(FFU_ERR_NOMEM, "embedder");
    ffu_zoo_entry row;
    char path[1200];
    ffu_status st = ffu_zoo_resolve(FFU_ROLE_EMBED, o ? o->model : NULL, &row, path, sizeof path);
    if (row.family && !strcmp(row.family, "ensemble")) {
        if (!st)
            st = open_ensemble(e, &row, o);
        if (st)
            goto fail;
        *out = e;
        return FFU_OK;
    }
    st = face_net_open(&e->net, FFU_ROLE_EMBED, o);
    if (st) {
        free(e);
        return st;
    }
    const ffu_zoo_entry *z = &e->net.entry;
    if (!ffu_align_template(z->align_template)) {
        st = ffu_error_set(FFU_ERR_INVALID, "embedder '%s' has no known alignment template",
                           z->name);
        goto fail;
    }
    if (e->net.in_w != e->net.in_h) {
        st = ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: input %dx%d; embedders take square crops",
                           e->net.path, e->net.in_w, e->net.in_h);
        goto fail;
    }
    e->crop_scale = family_crop_scale(z->family);
    if ((st = pick_output(e)))
        goto fail;
    *out = e;
    return FFU_OK;
fail:
    ffu_embedder_destroy(e);
    return st;
}

void ffu_embedder_destroy(ffu_embedder *e)
{
    if (!e)
        return;
    for (int i = 0; i < e->nmembers; i++)
        ffu_embedder_destroy(e->members[i]);
    free(e->scratch);
    face_net_close(&e->net);
    free(e);
}

int ffu_embedder_dim(const ffu_embedder *e) { return e ? e->dim : 0; }

float ffu_embedder_threshold(const ffu_embedder *e) { return e ? e->net.entry.threshold : NAN; }

float ffu_embedder_margin(const ffu_embedder *e)
{
    float m = 0.2f * (1.0f - ffu_embedder_threshold(e));
    return m > 0 ? m : 0; /* NAN (no embedder) also gives 0 */
}

const ffu_zoo_entry *ffu_embedder_model(const ffu_embedder *e) { return e ? &e->net.entry : NULL; }

/* Map from network-input coordinates to image coordinates for one face. */
static ffu_status crop_map(const ffu_embedder *e, const ffu_face *f, double m[6])
{
    for (int i = 0; i < 10; i++)
        if (!isfinite(f->kps[i]))
            return ffu_error_set(FFU_ERR_INVALID, "face keypoint %d is not finite", i / 2);
    int size = e->net.in_w;
    double fwd[6];
    ffu_status st = face_align_transform(f->kps, e->net.entry.align_template, size, fwd);
    if (st)
        return st;
    if (e->crop_scale != 1.0) {
        /* crop' = c + s * (crop - c) about the crop centre c */
        double s = e->crop_scale, c = size * 0.5 * (1 - s);
        for (int k = 0; k < 6; k++)
            fwd[k] *= s;
        fwd[2] += c;
        fwd[5] += c;
    }
    return ffu_affine_invert(fwd, m);
}

/* Embeds n faces (n <= EMBED_MAX_BATCH) with a single model (not an ensemble), each
 * face from its own image, in one run, and writes face b's unit descriptor (e->dim
 * values) to out[b]: the video pipeline batches the faces of several streams' frames
 * this way. Face b comes from imgs[b], or with gimgs (cuda) from the device frame
 * gimgs[b]. Models whose zoo row says `flip` also see each crop mirrored (slots 2b,
 * 2b + 1 of a batch of 2n), and the face gets the normalised sum of the two
 * descriptors: on LFW that is worth 0.3-0.8 points for every embedder we measured
 * (docs/EVAL.md), at twice the cost. */
static ffu_status embed_views(ffu_embedder *e, const ffu_image *const *imgs,
                              const ffu_gpu_image *const *gimgs, ffu_face *const *faces, int n,
                              float *const *out)
{
    int views = e->net.entry.flip ? 2 : 1; /* the crop, and its mirror image */
    ffu_status st = face_net_reshape(&e->net, n * views, e->net.in_w, e->net.in_h);
    if (st)
        return st;
    for (int b = 0; b < n; b++) {
        double m[6];
        if ((st = crop_map(e, faces[b], m)))
            return st;
        for (int v = 0; v < views; v++) {
            if (v == 1) {
                /* the mirrored crop: input x -> size - x */
                double sz = e->net.in_w;
                m[2] += m[0] * sz, m[0] = -m[0];
                m[5] += m[3] * sz, m[3] = -m[3];
            }
            st = gimgs ? face_net_fill_warp_gpu(&e->net, b * views + v, gimgs[b], m)
                       : face_net_fill_warp(&e->net, b * views + v, imgs[b], m);
            if (st)
                return st;
        }
    }
    if ((st = face_net_run(&e->net)))
        return st;
    ffu_nn_tensor t;
    const float *y = face_net_output(&e->net, e->out_index, &t);
    if (!y)
        return FFU_ERR_UNSUPPORTED;
    if (per_item(&t, n * views) != e->dim)
        return ffu_error_set(FFU_ERR_INTERNAL, "%s: embedding output has %lld values per face, "
                             "expected %d", e->net.path, (long long)per_item(&t, n * views), e->dim);
    for (int b = 0; b < n; b++) {
        float *o = out[b];
        for (int i = 0; i < e->dim; i++)
            o[i] = 0;
        for (int v = 0; v < views; v++) {
            const float *x = y + (size_t)(b * views + v) * e->dim;
            for (int i = 0; i < e->dim; i++)
                o[i] += x[i];
        }
        double ss = 0;
        for (int i = 0; i < e->dim; i++)
            ss += (double)o[i] * o[i];
        if (!(ss > 0) || !isfinite(ss))
            return ffu_error_set(FFU_ERR_INTERNAL, "%s: embedding of face %d is %s", e->net.path,
                                 b, ss > 0 ? "not finite" : "zero");
        float inv = (float)(1.0 / sqrt(ss));
        for (int i = 0; i < e->dim; i++)
            o[i] *= inv;
    }
    return FFU_OK;
}

/* One chunk of an ensemble: what each member is given and what it reports. A member
 * run on a worker thread leaves its error detail there, so the detail is copied here
 * and set again on the calling thread. */
typedef struct ensemble_chunk {
    ffu_embedder *e;
    const ffu_image *const *imgs;
    const ffu_gpu_image *const *gimgs;
    ffu_face *const *faces;
    int n;
    int at[EMBED_MAX_MEMBERS]; /* where member k's part starts in a face's slot */
    ffu_status st[EMBED_MAX_MEMBERS];
    char why[EMBED_MAX_MEMBERS][256];
} ensemble_chunk;

static void ensemble_member(void *arg, int k)
{
    ensemble_chunk *c = arg;
    float *out[EMBED_MAX_BATCH] = {0};
    for (int b = 0; b < c->n; b++)
        out[b] = c->e->scratch + (size_t)b * FFU_FACE_MAX_EMBED + c->at[k];
    c->st[k] = embed_views(c->e->members[k], c->imgs, c->gimgs, c->faces, c->n, out);
    if (c->st[k]) snprintf(c->why[k], sizeof c->why[k], "%s", ffu_error_message());
}

/* An ensemble's chunk: the members embed the faces (side by side or in turn, e->side);
 * the face gets the members' unit descriptors, each times its factor, one after the
 * other, normalised. */
static ffu_status embed_chunk_ensemble(ffu_embedder *e, const ffu_image *const *imgs,
                                       const ffu_gpu_image *const *gimgs, ffu_face *const *faces,
                                       int n)
{
    ensemble_chunk c = {.e = e, .imgs = imgs, .gimgs = gimgs, .faces = faces, .n = n};
    for (int k = 1; k < e->nmembers; k++)
        c.at[k] = c.at[k - 1] + e->members[k - 1]->dim;
    if (e->side)
        ffu_nn_run_side_by_side(e->nmembers, ensemble_member, &c);
    else
        for (int k = 0; k < e->nmembers; k++)
            ensemble_member(&c, k);
    for (int k = 0; k < e->nmembers; k++)
        if (c.st[k]) return ffu_error_set(c.st[k], "%s", c.why[k]);
    for (int b = 0; b < n; b++) {
        float *x = e->scratch + (size_t)b * FFU_FACE_MAX_EMBED;
        for (int k = 0; k < e->nmembers; k++)
            for (int i = 0; i < e->members[k]->dim; i++)
                x[c.at[k] + i] *= e->factor[k];
        double ss = 0;
        for (int i = 0; i < e->dim; i++)
            ss += (double)x[i] * x[i];
        float inv = (float)(1.0 / sqrt(ss)); /* members' vectors are unit: ss > 0 */
        for (int i = 0; i < e->dim; i++)
            faces[b]->embedding[i] = x[i] * inv;
        faces[b]->embedding_dim = e->dim;
    }
    return FFU_OK;
}

/* Embeds n faces (n <= EMBED_MAX_BATCH), each from its own image (or device frame),
 * into faces[b]->embedding. */
static ffu_status embed_chunk_multi(ffu_embedder *e, const ffu_image *const *imgs,
                                    const ffu_gpu_image *const *gimgs, ffu_face *const *faces,
                                    int n)
{
    if (e->nmembers) return embed_chunk_ensemble(e, imgs, gimgs, faces, n);
    float *out[EMBED_MAX_BATCH] = {0};
    for (int b = 0; b < n; b++)
        out[b] = faces[b]->embedding;
    ffu_status st = embed_views(e, imgs, gimgs, faces, n, out);
    if (st) return st;
    for (int b = 0; b < n; b++)
        faces[b]->embedding_dim = e->dim;
    return FFU_OK;
}

/* Embeds faces[0..n) (n <= EMBED_MAX_BATCH) of one image in one run. */
static ffu_status embed_chunk(ffu_embedder *e, const ffu_image *img, ffu_face *faces, int n)
{
    const ffu_image *imgs[EMBED_MAX_BATCH];
    ffu_face *fp[EMBED_MAX_BATCH];
    for (int b = 0; b < n; b++) {
        imgs[b] = img;
        fp[b] = &faces[b];
    }
    return embed_chunk_multi(e, imgs, NULL, fp, n);
}

ffu_status face_embedder_run_multi(ffu_embedder *e, const ffu_image *const *imgs,
                                   ffu_face *const *faces, int n)
{
    if (!e || n < 0 || (n > 0 && (!imgs || !faces)))
        return ffu_error_set(FFU_ERR_INVALID, "face_embedder_run_multi: bad arguments");
    for (int i = 0; i < n; i++) {
        if (!imgs[i] || !faces[i] || !imgs[i]->data[0] || imgs[i]->width < 1 ||
            imgs[i]->height < 1)
            return ffu_error_set(FFU_ERR_INVALID, "face_embedder_run_multi: item %d has no "
                                                  "image or face", i);
        faces[i]->embedding_dim = 0;
    }
    for (int i = 0; i < n; i += EMBED_MAX_BATCH) {
        int k = n - i < EMBED_MAX_BATCH ? n - i : EMBED_MAX_BATCH;
        ffu_status st = embed_chunk_multi(e, imgs + i, NULL, faces + i, k);
        if (st) {
            for (int j = 0; j < n; j++)
                faces[j]->embedding_dim = 0;
            return st;
        }
    }
    return FFU_OK;
}

ffu_status ffu_embedder_run(ffu_embedder *e, const ffu_image *img, ffu_face *faces, int n)
{
    if (!e || !img || n < 0 || (n > 0 && !faces))
        return ffu_error_set(FFU_ERR_INVALID, "ffu_embedder_run: bad arguments");
    if (!img->data[0] || img->width < 1 || img->height < 1)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_embedder_run: empty image");
    for (int i = 0; i < n; i++)
        faces[i].embedding_dim = 0;
    for (int i = 0; i < n; i += EMBED_MAX_BATCH) {
        int k = n - i < EMBED_MAX_BATCH ? n - i : EMBED_MAX_BATCH;
        ffu_status st = embed_chunk(e, img, faces + i, k);
        if (st) {
            for (int j = 0; j < n; j++)
                faces[j].embedding_dim = 0;
            return st;
        }
    }
    return FFU_OK;
}

/* ---- frames in device memory (backend cuda) -------------------------------------------- */

int face_embedder_on_gpu(const ffu_embedder *e)
{
    if (e && e->nmembers) {
        for (int i = 0; i < e->nmembers; i++)
            if (!face_embedder_on_gpu(e->members[i]))
                return 0;
        return 1;
    }
    return e && face_net_on_gpu(&e->net);
}

static ffu_status check_gpu_handle(const ffu_embedder *e, const char *what)
{
    if (!face_embedder_on_gpu(e))
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: the embedder runs on a CPU backend; "
                             "frames in device memory need backend cuda", what);
    return FFU_OK;
}

ffu_status face_embedder_run_multi_gpu(ffu_embedder *e, const ffu_gpu_image *const *imgs,
                                       ffu_face *const *faces, int n)
{
    const char *what = "face_embedder_run_multi_gpu";
    if (!e || n < 0 || (n > 0 && (!imgs || !faces)))
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad arguments", what);
    for (int i = 0; i < n; i++) {
        if (!imgs[i] || !faces[i] || !imgs[i]->data[0] || imgs[i]->width < 1 ||
            imgs[i]->height < 1)
            return ffu_error_set(FFU_ERR_INVALID, "%s: item %d has no device image or face",
                                 what, i);
        faces[i]->embedding_dim = 0;
    }
    ffu_status st = check_gpu_handle(e, what);
    if (st)
        return st;
    for (int i = 0; i < n; i += EMBED_MAX_BATCH) {
        int k = n - i < EMBED_MAX_BATCH ? n - i : EMBED_MAX_BATCH;
        if ((st = embed_chunk_multi(e, NULL, imgs + i, faces + i, k))) {
            for (int j = 0; j < n; j++)
                faces[j]->embedding_dim = 0;
            return st;
        }
    }
    return FFU_OK;
}

ffu_status ffu_embedder_run_gpu(ffu_embedder *e, const ffu_gpu_image *img, ffu_face *faces, int n)
{
    const char *what = "ffu_embedder_run_gpu";
    if (!e || !img || n < 0 || (n > 0 && !faces))
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad arguments", what);
    if (!img->data[0] || img->width < 1 || img->height < 1)
        return ffu_error_set(FFU_ERR_INVALID, "%s: empty device image", what);
    for (int i = 0; i < n; i++)
        faces[i].embedding_dim = 0;
    ffu_status st = check_gpu_handle(e, what);
    if (st)
        return st;
    for (int i = 0; i < n; i += EMBED_MAX_BATCH) {
        int k = n - i < EMBED_MAX_BATCH ? n - i : EMBED_MAX_BATCH;
        const ffu_gpu_image *imgs[EMBED_MAX_BATCH];
        ffu_face *fp[EMBED_MAX_BATCH];
        for (int b = 0; b < k; b++) {
            imgs[b] = img;
            fp[b] = &faces[i + b];
        }
        if ((st = embed_chunk_multi(e, NULL, imgs, fp, k))) {
            for (int j = 0; j < n; j++)
                faces[j].embedding_dim = 0;
            return st;
        }
    }
    return FFU_OK;
}
