/* The analyzer: one handle that runs detection and whichever per-face stages the
 * caller switched on (landmarks, quality, liveness, attributes, embedding), in the
 * order where each can use the last: landmarks refine the keypoints that alignment,
 * quality and embedding use. Embeddings of all faces of an image run as one batch. */
#include <stdlib.h>
#include <string.h>

#include "face_internal.h"
#include "facefuse/nn.h"

struct ffu_analyzer {
    unsigned stages;
    ffu_nn_workspace *ws; /* the stages' models' activations, unless the caller gave one */
    ffu_detector *det;
    ffu_landmarker *lm;
    ffu_embedder *emb;
    ffu_liveness *live;
    ffu_attributes *attr;
};

void ffu_analyzer_opts_default(ffu_analyzer_opts *o)
{
    memset(o, 0, sizeof *o);
    ffu_detector_opts_default(&o->detect);
    ffu_landmarker_opts_default(&o->landmarks);
    o->stages = FFU_STAGE_LANDMARKS | FFU_STAGE_EMBED | FFU_STAGE_LIVENESS |
                FFU_STAGE_ATTRIBUTES | FFU_STAGE_QUALITY;
}

/* Stages share the detector's backend, thread count and workspace unless set. */
static ffu_face_model_opts inherit(ffu_face_model_opts m, const ffu_detector_opts *d)
{
    if (!m.backend)
        m.backend = d->m.backend;
    if (!m.threads)
        m.threads = d->m.threads;
    if (!m.workspace)
        m.workspace = d->m.workspace;
    return m;
}

ffu_status ffu_analyzer_create(const ffu_analyzer_opts *o, ffu_analyzer **out)
{
    *out = NULL;
    ffu_analyzer_opts def;
    if (!o) {
        ffu_analyzer_opts_default(&def);
        o = &def;
    }
    ffu_analyzer *a = calloc(1, sizeof *a);
    if (!a)
        return ffu_error_set(FFU_ERR_NOMEM, "analyzer");
    a->stages = o->stages;
    ffu_detector_opts d = o->detect;
    ffu_status st = FFU_OK;
    if (!d.m.workspace && !(st = ffu_nn_workspace_create(&a->ws)))
        d.m.workspace = a->ws;
    if (!st)
        st = ffu_detector_create(&d, &a->det);
    if (!st && (o->stages & FFU_STAGE_LANDMARKS)) {
        ffu_landmarker_opts lo = o->landmarks;
        lo.m = inherit(lo.m, &d);
        st = ffu_landmarker_create(&lo, &a->lm);
    }
    if (!st && (o->stages & FFU_STAGE_EMBED)) {
        ffu_face_model_opts m = inherit(o->embed, &d);
        st = ffu_embedder_create(&m, &a->emb);
    }
    if (!st && (o->stages & FFU_STAGE_LIVENESS)) {
        ffu_face_model_opts m = inherit(o->liveness, &d);
        st = ffu_liveness_create(&m, &a->live);
    }
    if (!st && (o->stages & FFU_STAGE_ATTRIBUTES)) {
        ffu_face_model_opts m = inherit(o->attributes, &d);
        st = ffu_attributes_create(&m, &a->attr);
    }
    if (st) {
        ffu_analyzer_destroy(a);
        return st;
    }
    *out = a;
    return FFU_OK;
}

void ffu_analyzer_destroy(ffu_analyzer *a)
{
    if (!a)
        return;
    ffu_detector_destroy(a->det);
    ffu_landmarker_destroy(a->lm);
    ffu_embedder_destroy(a->emb);
    ffu_liveness_destroy(a->live);
    ffu_attributes_destroy(a->attr);
    ffu_nn_workspace_destroy(a->ws); /* after the sessions planned on it */
    free(a);
}

ffu_status ffu_analyzer_run(ffu_analyzer *a, const ffu_image *img, ffu_face_list *out)
{
    ffu_status st = ffu_detector_detect(a->det, img, out);
    for (int i = 0; !st && i < out->count; i++) {
        ffu_face *f = &out->faces[i];
        if (a->lm)
            st = ffu_landmarker_run(a->lm, img, f);
        if (!st && (a->stages & FFU_STAGE_QUALITY))
            st = ffu_face_quality_compute(img, f);
        if (!st && a->live)
            st = ffu_liveness_run(a->live, img, f);
        if (!st && a->attr)
            st = ffu_attributes_run(a->attr, img, f);
    }
    if (!st && a->emb && out->count)
        st = ffu_embedder_run(a->emb, img, out->faces, out->count);
    return st;
}

ffu_detector *ffu_analyzer_detector(ffu_analyzer *a) { return a ? a->det : NULL; }
