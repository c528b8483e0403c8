/* The swapper object: opens the models its options need, holds the source identity
 * (mesh texture and/or averaged embedding) and the reference face, finds and selects
 * the target faces of a frame (detect, filters by gender/age, reference distance,
 * order, one/many), and dispatches the swap of each target to the built-in mesh swapper
 * (mesh.c) or an ONNX swapper (swap_onnx.c) with crop-space masks and paste-back
 * (paste.c, occlusion.c) and an optional enhancer (enhance.c). Keeps per-stage times,
 * names its kind, writes the provenance tag and the visible watermark.
 *
 * Models are opened at create only when the options need them: the embedder for
 * reference selection or ONNX swappers, the attributes model for gender/age filters.
 * Embeddings and attributes are computed only in those cases, on the detected faces,
 * after landmarks have refined their keypoints (alignment from refined keypoints is
 * what the embedder and attributes models were measured with). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "face/face_internal.h"
#include "ffu_config.h"
#include "mesh_internal.h"
#include "swap_internal.h"

#define SWAP_MAX_SOURCES 64
#define SWAP_DEFAULT_ENHANCER_BLEND 0.8f
#define SWAP_DEFAULT_CODEFORMER_WEIGHT 0.5f
#define SWAP_DEFAULT_MASK_BLUR 0.3f
#define SWAP_REGION_BLUR 0.025f /* region mask feather in crops, share of the oval width */

struct ffu_swapper {
    ffu_swapper_opts o; /* strings not kept: everything is opened at create */
    int gender;         /* -1 none, 0 female, 1 male */
    int filters;        /* gender or age filter set */
    unsigned masks;
    ffu_detector *det;
    ffu_landmarker *lm;
    ffu_embedder *emb;
    ffu_attributes *attr;
    mesh_swapper *mesh;
    swap_net *net;
    swap_enhancer *enh;
    swap_occluder *occ;
    /* source */
    int have_source;
    mesh_source msrc;
    float *net_source; /* swap_net_embedding_dim floats */
    /* reference */
    int have_ref, ref_dim;
    float ref[FFU_FACE_MAX_EMBED];
    /* scratch */
    ffu_face_list all, tmp_list;
    int *idx;
    float *key;
    int idx_cap;
    ffu_image crop, tcrop, mask, mask2, mask_tmp;
    ffu_swap_timing timing;
};

static double ms_between(int64_t a, int64_t b) { return (double)(b - a) * 1e-6; }

void ffu_swapper_opts_default(ffu_swapper_opts *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    ffu_detector_opts_default(&o->detect);
    o->colour = FFU_SWAP_COLOUR_LAB;
    o->select = FFU_SWAP_SELECT_ONE;
    o->order = FFU_SWAP_ORDER_LARGE_SMALL;
}

static int is_mesh_spec(const char *s) { return !s || !*s || strcmp(s, "mesh") == 0; }

/* The stage's own backend/threads, else the swapper's. */
static ffu_face_model_opts stage_opts(const ffu_swapper_opts *o, ffu_face_model_opts m)
{
    if (!m.backend) m.backend = o->backend;
    if (!m.threads) m.threads = o->threads;
    if (!m.device) m.device = o->device;
    if (!m.fp16) m.fp16 = o->fp16;
    if (!m.bf16) m.bf16 = o->bf16;
    return m;
}

ffu_status ffu_swapper_create(const ffu_swapper_opts *opts, ffu_swapper **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "swapper: NULL output");
    *out = NULL;
    ffu_swapper_opts o;
    if (opts)
        o = *opts;
    else
        ffu_swapper_opts_default(&o);
    if ((unsigned)o.select > FFU_SWAP_SELECT_REFERENCE)
        return ffu_error_set(FFU_ERR_INVALID, "swapper: unknown selection mode %d", (int)o.select);
    if ((unsigned)o.order > FFU_SWAP_ORDER_WORST_BEST)
        return ffu_error_set(FFU_ERR_INVALID, "swapper: unknown order %d", (int)o.order);
    if ((unsigned)o.colour > FFU_SWAP_COLOUR_MULTISCALE)
        return ffu_error_set(FFU_ERR_INVALID, "swapper: unknown colour mode %d", (int)o.colour);
    if ((unsigned)o.blend > FFU_SWAP_BLEND_POISSON)
        return ffu_error_set(FFU_ERR_INVALID, "swapper: unknown blend mode %d", (int)o.blend);
    if (o.masks & ~(unsigned)(FFU_SWAP_MASK_BOX | FFU_SWAP_MASK_REGION | FFU_SWAP_MASK_OCCLUSION))
        return ffu_error_set(FFU_ERR_INVALID, "swapper: unknown mask bits 0x%x", o.masks);
    int gender = -1;
    if (o.gender && *o.gender) {
        if (!strcmp(o.gender, "male"))
            gender = 1;
        else if (!strcmp(o.gender, "female"))
            gender = 0;
        else
            return ffu_error_set(FFU_ERR_INVALID,
                                 "swapper: gender filter must be \"male\" or "
                                 "\"female\", not \"%s\"",
                                 o.gender);
    }
    if (!(o.age_min >= 0) || !(o.age_max >= 0) || (o.age_max > 0 && o.age_min > o.age_max))
        return ffu_error_set(FFU_ERR_INVALID, "swapper: bad age range %g..%g", (double)o.age_min,
                             (double)o.age_max);
    if (!(o.reference_distance >= 0) || o.reference_distance > 1)
        return ffu_error_set(FFU_ERR_INVALID, "swapper: reference distance %g outside 0..1",
                             (double)o.reference_distance);
    if (!(o.enhancer_blend >= 0) || o.enhancer_blend > 1)
        return ffu_error_set(FFU_ERR_INVALID, "swapper: enhancer blend %g outside 0..1",
                             (double)o.enhancer_blend);
    if (!(o.mask_blur >= 0) || o.mask_blur > 1)
        return ffu_error_set(FFU_ERR_INVALID, "swapper: mask blur %g outside 0..1",
                             (double)o.mask_blur);
    for (int i = 0; i < 4; i++)
        if (!(o.mask_padding[i] >= 0) || o.mask_padding[i] > 100)
            return ffu_error_set(FFU_ERR_INVALID, "swapper: mask padding %g%% outside 0..100",
                                 (double)o.mask_padding[i]);
    int mesh = is_mesh_spec(o.swapper);
    if (!mesh && !strncmp(o.swapper, "mesh:", 5))
        return ffu_error_set(FFU_ERR_INVALID, "swapper: the mesh swapper takes no file");
    if ((o.masks & FFU_SWAP_MASK_OCCLUSION) && !(o.occluder && *o.occluder))
        return ffu_error_set(FFU_ERR_INVALID, "swapper: the occlusion mask needs an occluder model "
                                              "(occluder \"onnx:PATH\")");
    if (mesh && (o.masks & FFU_SWAP_MASK_OCCLUSION))
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "swapper: the occlusion mask works with the ONNX "
                                                  "swappers only, not with the mesh swapper");

    ffu_swapper *sw = calloc(1, sizeof *sw);
    if (!sw) return ffu_error_set(FFU_ERR_NOMEM, "swapper: out of memory");
    sw->o = o;
    sw->o.swapper = sw->o.enhancer = sw->o.occluder = sw->o.gender = sw->o.backend = NULL;
    sw->o.detect.m.model = sw->o.embed.model = sw->o.landmarks.model = NULL;
    sw->o.detect.m.backend = sw->o.embed.backend = sw->o.landmarks.backend = NULL;
    sw->gender = gender;
    sw->filters = gender >= 0 || o.age_min > 0 || o.age_max > 0;
    sw->masks = o.masks ? o.masks : mesh ? FFU_SWAP_MASK_REGION : FFU_SWAP_MASK_BOX;
    if (!sw->o.enhancer_blend) sw->o.enhancer_blend = SWAP_DEFAULT_ENHANCER_BLEND;
    if (!sw->o.codeformer_weight) sw->o.codeformer_weight = SWAP_DEFAULT_CODEFORMER_WEIGHT;
    if (!sw->o.mask_blur) sw->o.mask_blur = SWAP_DEFAULT_MASK_BLUR;

    ffu_status st;
    ffu_detector_opts dopt = o.detect;
    dopt.m = stage_opts(&o, o.detect.m);
    ffu_landmarker_opts lopt;
    ffu_landmarker_opts_default(&lopt);
    lopt.m = stage_opts(&o, o.landmarks);
    if ((st = ffu_detector_create(&dopt, &sw->det)) || (st = ffu_landmarker_create(&lopt, &sw->lm)))
        goto fail;
    if (o.select == FFU_SWAP_SELECT_REFERENCE || !mesh) {
        ffu_face_model_opts eo = stage_opts(&o, o.embed);
        if ((st = ffu_embedder_create(&eo, &sw->emb))) goto fail;
        /* FaceFusion's 0.3 is a distance for ArcFace embeddings (cos > 0.4); other
         * embedders have their own calibrated "same person" cosine (faceres: 0.52, so
         * 0.24): 0.3 there takes Biden for Obama (test_swap_select) */
        if (!sw->o.reference_distance)
            sw->o.reference_distance = (1.0f - ffu_embedder_threshold(sw->emb)) * 0.5f;
    }
    if (sw->filters) {
        ffu_face_model_opts ao = stage_opts(&o, (ffu_face_model_opts){0});
        if ((st = ffu_attributes_create(&ao, &sw->attr))) goto fail;
    }
    /* the swapper's own networks run as the swapper's options say */
    const ffu_face_model_opts run = {.backend = o.backend, .threads = o.threads,
                                     .device = o.device, .fp16 = o.fp16, .bf16 = o.bf16};
    if (mesh) {
        mesh_opts mo = {o.keep_mouth, o.keep_eyes, sw->o.colour, sw->o.blend};
        if ((st = mesh_swapper_create(&mo, &sw->mesh))) goto fail;
    } else {
        if ((st = swap_net_open(o.swapper, &run, &sw->net))) goto fail;
        int dim = swap_net_embedding_dim(sw->net);
        if (!(sw->net_source = calloc((size_t)(dim > 0 ? dim : 1), sizeof *sw->net_source))) {
            st = ffu_error_set(FFU_ERR_NOMEM, "swapper: out of memory");
            goto fail;
        }
    }
    if (o.enhancer && *o.enhancer &&
        (st = swap_enhancer_open(o.enhancer, &run, &sw->enh)))
        goto fail;
    if ((sw->masks & FFU_SWAP_MASK_OCCLUSION) &&
        (st = swap_occluder_open(o.occluder, &run, &sw->occ)))
        goto fail;
    *out = sw;
    return FFU_OK;
fail:
    ffu_swapper_destroy(sw);
    return st;
}

void ffu_swapper_destroy(ffu_swapper *sw)
{
    if (!sw) return;
    ffu_detector_destroy(sw->det);
    ffu_landmarker_destroy(sw->lm);
    ffu_embedder_destroy(sw->emb);
    ffu_attributes_destroy(sw->attr);
    mesh_swapper_destroy(sw->mesh);
    swap_net_close(sw->net);
    swap_enhancer_close(sw->enh);
    swap_occluder_close(sw->occ);
    mesh_source_free(&sw->msrc);
    free(sw->net_source);
    ffu_face_list_free(&sw->all);
    ffu_face_list_free(&sw->tmp_list);
    free(sw->idx);
    free(sw->key);
    ffu_image_release(&sw->crop);
    ffu_image_release(&sw->tcrop);
    ffu_image_release(&sw->mask);
    ffu_image_release(&sw->mask2);
    ffu_image_release(&sw->mask_tmp);
    free(sw);
}

const char *ffu_swapper_kind(const ffu_swapper *sw)
{
    if (!sw) return "unknown";
    return sw->net ? swap_net_kind(sw->net) : "mesh";
}

ffu_detector *ffu_swapper_detector(ffu_swapper *sw) { return sw ? sw->det : NULL; }

void ffu_swapper_timing_get(const ffu_swapper *sw, ffu_swap_timing *t)
{
    if (!t) return;
    if (!sw)
        memset(t, 0, sizeof *t);
    else
        *t = sw->timing;
}

void ffu_swapper_timing_reset(ffu_swapper *sw)
{
    if (sw) memset(&sw->timing, 0, sizeof sw->timing);
}

static ffu_status check_frame(const ffu_image *img, const char *what)
{
    if (!img || !img->data[0] || img->width < 1 || img->height < 1)
        return ffu_error_set(FFU_ERR_INVALID, "%s: no image", what);
    if (img->fmt != FFU_PIX_RGB24)
        return ffu_error_set(FFU_ERR_INVALID, "%s: the image must be RGB24, not %s", what,
                             ffu_pixfmt_name(img->fmt));
    return FFU_OK;
}

/* Copies a face into a slot of another list (keeping the slot's landmark buffer). */
static ffu_status copy_face(ffu_face *dst, const ffu_face *src)
{
    float *keep = dst->landmarks;
    *dst = *src;
    dst->landmarks = keep;
    dst->num_landmarks = 0;
    if (src->num_landmarks > 0) {
        ffu_status st = ffu_face_set_landmarks(dst, src->num_landmarks);
        if (st) return st;
        memcpy(dst->landmarks, src->landmarks, (size_t)src->num_landmarks * 3 * sizeof(float));
    }
    return FFU_OK;
}

/* How good a source face is as the mesh texture: frontal first, then large enough. */
static float texture_score(const ffu_face *f)
{
    float yaw = isfinite(f->quality.yaw) ? f->quality.yaw : 0;
    float pitch = isfinite(f->quality.pitch) ? f->quality.pitch : 0;
    float frontal = 1.0f - (yaw * yaw + pitch * pitch) / (45.0f * 45.0f);
    frontal = frontal < 0.05f ? 0.05f : frontal;
    float b[4];
    float ow = f->num_landmarks >= MESH_N ? mesh_oval_bounds(f->landmarks, b) : f->box[2];
    float size = ow / 200.0f;
    size = size > 1 ? 1 : size < 0 ? 0 : size;
    return frontal * (0.25f + 0.75f * size);
}

ffu_status ffu_swapper_set_source(ffu_swapper *sw, const ffu_image *images, int n)
{
    if (!sw || !images || n < 1)
        return ffu_error_set(FFU_ERR_INVALID, "set_source: needs a swapper and at least one image");
    if (n > SWAP_MAX_SOURCES)
        return ffu_error_set(FFU_ERR_INVALID, "set_source: %d source images (at most %d)", n,
                             SWAP_MAX_SOURCES);
    ffu_status st;
    mesh_source best = {0};
    float best_score = -1;
    double sum[FFU_FACE_MAX_EMBED] = {0};
    int dim = 0;
    for (int i = 0; i < n; i++) {
        char what[48];
        snprintf(what, sizeof what, "source %d", i + 1);
        if ((st = check_frame(&images[i], what))) goto fail;
        if ((st = ffu_detector_detect(sw->det, &images[i], &sw->tmp_list))) goto fail;
        if (sw->tmp_list.count == 0) {
            st = ffu_error_set(FFU_ERR_NOT_FOUND, "no face in source %d (of %d)", i + 1, n);
            goto fail;
        }
        ffu_face *f = &sw->tmp_list.faces[face_list_largest(&sw->tmp_list)];
        if ((st = ffu_landmarker_run(sw->lm, &images[i], f)) ||
            (st = ffu_face_quality_compute(&images[i], f)))
            goto fail;
        if (sw->mesh) {
            float score = texture_score(f);
            if (score > best_score) {
                mesh_source ms;
                if ((st = mesh_source_build(&images[i], f, &ms))) goto fail;
                mesh_source_free(&best);
                best = ms;
                best_score = score;
            }
        }
        if (sw->net) {
            if ((st = ffu_embedder_run(sw->emb, &images[i], f, 1))) goto fail;
            dim = f->embedding_dim;
            for (int k = 0; k < dim; k++)
                sum[k] += f->embedding[k];
        }
    }
    if (sw->net) {
        float e[FFU_FACE_MAX_EMBED];
        double ss = 0;
        for (int k = 0; k < dim; k++)
            ss += sum[k] * sum[k];
        if (!(ss > 0)) {
            st = ffu_error_set(FFU_ERR_INVALID, "set_source: the source embeddings cancel out");
            goto fail;
        }
        for (int k = 0; k < dim; k++)
            e[k] = (float)(sum[k] / sqrt(ss));
        if ((st = swap_net_source(sw->net, e, dim, sw->net_source))) goto fail;
    }
    if (sw->mesh) {
        mesh_source_free(&sw->msrc);
        sw->msrc = best;
    }
    sw->have_source = 1;
    return FFU_OK;
fail:
    mesh_source_free(&best);
    return st;
}

ffu_status ffu_swapper_copy_source(ffu_swapper *dst, const ffu_swapper *src)
{
    if (!dst || !src) return ffu_error_set(FFU_ERR_INVALID, "copy_source: NULL swapper");
    if (!src->have_source)
        return ffu_error_set(FFU_ERR_INVALID, "copy_source: the other swapper has no source");
    if (!!dst->mesh != !!src->mesh ||
        (dst->net && swap_net_embedding_dim(dst->net) != swap_net_embedding_dim(src->net)))
        return ffu_error_set(FFU_ERR_INVALID,
                             "copy_source: the swappers are of different kinds "
                             "(%s, %s)",
                             ffu_swapper_kind(dst), ffu_swapper_kind(src));
    if (dst == src) return FFU_OK;
    if (src->mesh) {
        ffu_status st = mesh_source_copy(&src->msrc, &dst->msrc);
        if (st) return st;
    }
    if (src->net)
        memcpy(dst->net_source, src->net_source,
               (size_t)swap_net_embedding_dim(src->net) * sizeof *dst->net_source);
    dst->have_source = 1;
    if (src->have_ref) {
        memcpy(dst->ref, src->ref, sizeof dst->ref);
        dst->ref_dim = src->ref_dim;
        dst->have_ref = 1;
    }
    return FFU_OK;
}

static ffu_status need_embedder(ffu_swapper *sw)
{
    if (sw->emb) return FFU_OK;
    ffu_face_model_opts eo = stage_opts(&sw->o, (ffu_face_model_opts){0});
    return ffu_embedder_create(&eo, &sw->emb);
}

ffu_status ffu_swapper_set_reference(ffu_swapper *sw, const ffu_image *img, int face_index)
{
    if (!sw) return ffu_error_set(FFU_ERR_INVALID, "set_reference: NULL swapper");
    ffu_status st;
    if ((st = check_frame(img, "reference")) || (st = need_embedder(sw))) return st;
    if ((st = ffu_detector_detect(sw->det, img, &sw->tmp_list))) return st;
    if (sw->tmp_list.count == 0)
        return ffu_error_set(FFU_ERR_NOT_FOUND, "no face in the reference image");
    if (face_index >= sw->tmp_list.count)
        return ffu_error_set(FFU_ERR_NOT_FOUND, "reference face %d asked, the image has %d",
                             face_index, sw->tmp_list.count);
    ffu_face *f =
        &sw->tmp_list.faces[face_index >= 0 ? face_index : face_list_largest(&sw->tmp_list)];
    if ((st = ffu_landmarker_run(sw->lm, img, f)) || (st = ffu_embedder_run(sw->emb, img, f, 1)))
        return st;
    memcpy(sw->ref, f->embedding, (size_t)f->embedding_dim * sizeof *sw->ref);
    sw->ref_dim = f->embedding_dim;
    sw->have_ref = 1;
    return FFU_OK;
}

/* ---- selection ------------------------------------------------------------------------ */

static float order_key(const ffu_face *f, ffu_swap_order order)
{
    float cx = f->box[0] + 0.5f * f->box[2], cy = f->box[1] + 0.5f * f->box[3];
    float area = f->box[2] * f->box[3];
    switch (order) {
    case FFU_SWAP_ORDER_LARGE_SMALL:
        return -area;
    case FFU_SWAP_ORDER_SMALL_LARGE:
        return area;
    case FFU_SWAP_ORDER_LEFT_RIGHT:
        return cx;
    case FFU_SWAP_ORDER_RIGHT_LEFT:
        return -cx;
    case FFU_SWAP_ORDER_TOP_BOTTOM:
        return cy;
    case FFU_SWAP_ORDER_BOTTOM_TOP:
        return -cy;
    case FFU_SWAP_ORDER_BEST_WORST:
        return -f->score;
    case FFU_SWAP_ORDER_WORST_BEST:
        return f->score;
    }
    return 0;
}

static int passes_filters(const ffu_swapper *sw, const ffu_face *f)
{
    if (sw->gender >= 0) {
        if (!isfinite(f->attr.gender_male)) return 0;
        if ((f->attr.gender_male >= 0.5f) != (sw->gender == 1)) return 0;
    }
    if (sw->o.age_min > 0 && !(f->attr.age >= sw->o.age_min)) return 0;
    if (sw->o.age_max > 0 && !(f->attr.age <= sw->o.age_max)) return 0;
    return 1;
}

static ffu_status grow_idx(ffu_swapper *sw, int n)
{
    if (n <= sw->idx_cap) return FFU_OK;
    int cap = n < 16 ? 16 : 2 * n;
    int *idx = realloc(sw->idx, (size_t)cap * sizeof *idx);
    if (!idx) return ffu_error_set(FFU_ERR_NOMEM, "swapper: out of memory");
    sw->idx = idx;
    float *key = realloc(sw->key, (size_t)cap * sizeof *key);
    if (!key) return ffu_error_set(FFU_ERR_NOMEM, "swapper: out of memory");
    sw->key = key;
    sw->idx_cap = cap;
    return FFU_OK;
}

ffu_status ffu_swapper_find_targets(ffu_swapper *sw, const ffu_image *frame, ffu_face_list *targets)
{
    if (!sw || !targets) return ffu_error_set(FFU_ERR_INVALID, "find_targets: NULL argument");
    ffu_face_list_clear(targets);
    ffu_status st = check_frame(frame, "find_targets");
    if (st) return st;
    int reference = sw->o.select == FFU_SWAP_SELECT_REFERENCE;
    if (reference && !sw->have_ref)
        return ffu_error_set(FFU_ERR_INVALID, "find_targets: selection by reference needs "
                                              "ffu_swapper_set_reference first");
    int64_t t0 = ffu_clock_ns();
    if ((st = ffu_detector_detect(sw->det, frame, &sw->all))) return st;
    int64_t t1 = ffu_clock_ns();
    double lm_ms = 0;
    int n = sw->all.count;
    if ((st = grow_idx(sw, n))) return st;
    /* filters and reference need refined keypoints: landmarks on every face first */
    if (sw->filters || reference) {
        for (int i = 0; i < n; i++) {
            int64_t a = ffu_clock_ns();
            if ((st = ffu_landmarker_run(sw->lm, frame, &sw->all.faces[i]))) return st;
            lm_ms += ms_between(a, ffu_clock_ns());
        }
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        ffu_face *f = &sw->all.faces[i];
        if (sw->filters) {
            if ((st = ffu_attributes_run(sw->attr, frame, f))) return st;
            if (!passes_filters(sw, f)) continue;
        }
        sw->idx[m++] = i;
    }
    if (reference && m > 0) {
        /* embed the remaining faces (in place) */
        for (int k = 0; k < m; k++)
            if ((st = ffu_embedder_run(sw->emb, frame, &sw->all.faces[sw->idx[k]], 1))) return st;
        int kept = 0;
        for (int k = 0; k < m; k++) {
            const ffu_face *f = &sw->all.faces[sw->idx[k]];
            if (f->embedding_dim != sw->ref_dim)
                return ffu_error_set(FFU_ERR_INTERNAL, "embedding sizes differ (%d, %d)",
                                     f->embedding_dim, sw->ref_dim);
            float d = (1.0f - ffu_face_similarity(f->embedding, sw->ref, sw->ref_dim)) * 0.5f;
            if (d < sw->o.reference_distance) sw->idx[kept++] = sw->idx[k];
        }
        m = kept;
    }
    /* order: insertion sort by key, stable (ties keep the detector's score order) */
    for (int k = 0; k < m; k++)
        sw->key[k] = order_key(&sw->all.faces[sw->idx[k]], sw->o.order);
    for (int k = 1; k < m; k++) {
        int vi = sw->idx[k];
        float vk = sw->key[k];
        int j = k - 1;
        while (j >= 0 && sw->key[j] > vk) {
            sw->idx[j + 1] = sw->idx[j];
            sw->key[j + 1] = sw->key[j];
            j--;
        }
        sw->idx[j + 1] = vi;
        sw->key[j + 1] = vk;
    }
    if (sw->o.select == FFU_SWAP_SELECT_ONE && m > 1) m = 1;
    for (int k = 0; k < m; k++) {
        ffu_face *f = &sw->all.faces[sw->idx[k]];
        if (f->num_landmarks == 0) {
            int64_t a = ffu_clock_ns();
            if ((st = ffu_landmarker_run(sw->lm, frame, f))) return st;
            lm_ms += ms_between(a, ffu_clock_ns());
        }
        ffu_face *d = ffu_face_list_push(targets);
        if (!d) return FFU_ERR_NOMEM;
        if ((st = copy_face(d, f))) {
            ffu_face_list_clear(targets);
            return st;
        }
    }
    int64_t t4 = ffu_clock_ns();
    sw->timing.detect_ms += ms_between(t0, t1);
    sw->timing.landmarks_ms += lm_ms;
    /* selection: attributes, embeddings, distances, ordering, copies */
    sw->timing.select_ms += ms_between(t1, t4) - lm_ms;
    return FFU_OK;
}

/* ---- swapping ------------------------------------------------------------------------- */

static ffu_status apply_onnx(ffu_swapper *sw, ffu_image *frame, const ffu_face *f)
{
    int64_t t0 = ffu_clock_ns();
    double m[6];
    ffu_status st = swap_net_run(sw->net, frame, f, sw->net_source, &sw->crop, m);
    if (st) return st;
    int64_t t1 = ffu_clock_ns();
    int S = sw->crop.width, have = 0;
    if (sw->masks & FFU_SWAP_MASK_BOX) {
        if ((st = swap_box_mask(S, sw->o.mask_blur, sw->o.mask_padding, &sw->mask))) return st;
        have = 1;
    }
    if (sw->masks & FFU_SWAP_MASK_REGION) {
        ffu_image *dst = have ? &sw->mask2 : &sw->mask;
        if ((st = mesh_region_mask_crop(f, m, S, sw->o.keep_mouth, sw->o.keep_eyes,
                                        SWAP_REGION_BLUR, dst, &sw->mask_tmp)))
            return st;
        if (have && (st = swap_mask_multiply(&sw->mask, &sw->mask2))) return st;
        have = 1;
    }
    if (sw->masks & FFU_SWAP_MASK_OCCLUSION) {
        /* the occluder looks at the target as it was, in the swapper's own crop */
        if ((st = ffu_face_align(frame, f->kps, swap_net_template(sw->net), S, &sw->tcrop, NULL)))
            return st;
        ffu_image *dst = have ? &sw->mask2 : &sw->mask;
        if ((st = swap_occluder_run(sw->occ, &sw->tcrop, dst))) return st;
        if (have && (st = swap_mask_multiply(&sw->mask, &sw->mask2))) return st;
    }
    int64_t t2 = ffu_clock_ns();
    if ((st = swap_paste_back(frame, &sw->crop, m, &sw->mask))) return st;
    int64_t t3 = ffu_clock_ns();
    sw->timing.swap_net_ms += ms_between(t0, t1);
    sw->timing.mask_ms += ms_between(t1, t2);
    sw->timing.blend_ms += ms_between(t2, t3);
    return FFU_OK;
}

ffu_status ffu_swapper_apply(ffu_swapper *sw, ffu_image *frame, const ffu_face_list *targets)
{
    if (!sw || !targets) return ffu_error_set(FFU_ERR_INVALID, "apply: NULL argument");
    ffu_status st = check_frame(frame, "apply");
    if (st) return st;
    if (!sw->have_source)
        return ffu_error_set(FFU_ERR_INVALID, "apply: no source (call ffu_swapper_set_source)");
    for (int i = 0; i < targets->count; i++) {
        const ffu_face *f = &targets->faces[i];
        if (sw->mesh)
            st = mesh_swap_face(sw->mesh, &sw->msrc, frame, f, &sw->timing);
        else
            st = apply_onnx(sw, frame, f);
        if (st) return st;
        if (sw->enh) {
            int64_t a = ffu_clock_ns();
            if ((st = swap_enhancer_run(sw->enh, frame, f, sw->o.enhancer_blend,
                                        sw->o.codeformer_weight)))
                return st;
            sw->timing.enhance_ms += ms_between(a, ffu_clock_ns());
        }
    }
    sw->timing.frames++;
    sw->timing.faces += targets->count;
    if (sw->o.watermark) return ffu_swap_draw_watermark(frame);
    return FFU_OK;
}

ffu_status ffu_swapper_swap_image(ffu_swapper *sw, ffu_image *frame, int *swapped)
{
    if (swapped) *swapped = 0;
    if (!sw) return ffu_error_set(FFU_ERR_INVALID, "swap_image: NULL swapper");
    ffu_status st = ffu_swapper_find_targets(sw, frame, &sw->tmp_list);
    if (st || (st = ffu_swapper_apply(sw, frame, &sw->tmp_list))) return st;
    if (swapped) *swapped = sw->tmp_list.count;
    return FFU_OK;
}

/* ---- provenance ----------------------------------------------------------------------- */

void ffu_swap_provenance(const ffu_swapper *sw, char *buf, size_t size)
{
    if (!buf || size == 0) return;
    snprintf(buf, size, "synthetic: faces swapped by facefuse %s (swapper %s)", FFU_VERSION_STRING,
             ffu_swapper_kind(sw));
}

ffu_status ffu_swap_draw_watermark(ffu_image *frame)
{
    if (!frame || !frame->data[0] || ffu_pixfmt_bpp(frame->fmt) == 0)
        return ffu_error_set(FFU_ERR_INVALID, "watermark: needs a packed image");
    static const char text[] = "SYNTHETIC";
    /* about 1/40 of the shorter side per font cell row: readable, small */
    int side = frame->width < frame->height ? frame->width : frame->height;
    int scale = side / 400 + 1;
    int tw, th;
    ffu_text_size(text, scale, &tw, &th);
    int pad = 2 * scale, margin = 4 * scale;
    int x = frame->width - tw - pad - margin, y = frame->height - th - pad - margin;
    ffu_color bg = {0, 0, 0, 255}, fg = {255, 255, 255, 255};
    ffu_status st = ffu_draw_fill_rect(frame, x - pad, y - pad, tw + 2 * pad, th + 2 * pad, bg);
    if (st) return st;
    return ffu_draw_text(frame, x, y, text, scale, fg, NULL);
}
