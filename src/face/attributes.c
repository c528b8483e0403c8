/* Face attributes: age, gender and race from GEAR, emotion from the FER2013 net, both
 * from human-models and both fed the way human (vladmandic) feeds them: from FaceMesh's
 * face crop (square, 1.5x the box's longer side, levelled by the eyes, RGB 0..1).
 *
 * - GEAR (198x198) sees the part of that crop human cuts out for it: x 0.10..0.90,
 *   y 0.00..0.90 of the crop, stretched to 198x198. Outputs told apart by size: age 7
 *   bins (expected age = sum p_i c_i with the bin centres 15, 23, 28, 35.5, 45.5, 55.5,
 *   65 of MODELS.md), gender 2 ([0] = male: checked on the named photos of
 *   face_recognition_examples, see tests/unit/test_face_liveness_attr.c), race 5 (white
 *   black asian indian other).
 * - emotion (64x64 grey, (x / 255 - 0.5) * 2) sees the whole crop; 7 softmax outputs in
 *   ffu_face_emotion_name order.
 * The default runs both; "gear" or "emotion" (or FAMILY:PATH) runs one. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "landmark_internal.h"

#define AT_FACE_CROP 1.5
static const float age_centres[7] = {15.0f, 23.0f, 28.0f, 35.5f, 45.5f, 55.5f, 65.0f};

struct ffu_attributes {
    face_net gear, emo;
    int has_gear, has_emo;
};

static ffu_status open_net(face_net *n, const char *spec, const ffu_face_model_opts *o,
                           const char *want_family)
{
    ffu_face_model_opts mo = o ? *o : (ffu_face_model_opts){0};
    mo.model = spec;
    ffu_status st = face_net_open(n, FFU_ROLE_ATTRIBUTES, &mo);
    if (st)
        return st;
    if (want_family && strcmp(n->entry.family, want_family)) {
        st = ffu_error_set(FFU_ERR_INVALID, "attribute model %s is family %s, want %s",
                           n->path, n->entry.family, want_family);
        face_net_close(n);
    }
    return st;
}

ffu_status ffu_attributes_create(const ffu_face_model_opts *o, ffu_attributes **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_attributes_create: out is NULL");
    *out = NULL;
    ffu_attributes *a = calloc(1, sizeof *a);
    if (!a)
        return ffu_error_set(FFU_ERR_NOMEM, "attributes");
    const char *spec = o ? o->model : NULL;
    ffu_status st;
    if (!spec || !*spec) {
        if ((st = open_net(&a->gear, "gear", o, "gear")) ||
            (st = open_net(&a->emo, "emotion", o, "emotion")))
            goto fail;
        a->has_gear = a->has_emo = 1;
    } else {
        face_net n;
        if ((st = open_net(&n, spec, o, NULL)))
            goto fail;
        if (!strcmp(n.entry.family, "gear")) {
            a->gear = n;
            a->has_gear = 1;
        } else if (!strcmp(n.entry.family, "emotion")) {
            a->emo = n;
            a->has_emo = 1;
        } else {
            st = ffu_error_set(FFU_ERR_UNSUPPORTED, "attribute model family '%s' is unknown",
                               n.entry.family);
            face_net_close(&n);
            goto fail;
        }
    }
    *out = a;
    return FFU_OK;
fail:
    ffu_attributes_destroy(a);
    return st;
}

void ffu_attributes_destroy(ffu_attributes *a)
{
    if (!a)
        return;
    face_net_close(&a->gear);
    face_net_close(&a->emo);
    free(a);
}

static int argmax(const float *p, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (p[i] > p[b])
            b = i;
    return b;
}

/* Output with exactly n values, or NULL. */
static const float *output_of_size(const face_net *n, size_t count)
{
    for (int i = 0; i < face_net_num_outputs(n); i++) {
        ffu_nn_tensor t;
        const float *p = face_net_output(n, i, &t);
        if (p && t.nbytes / sizeof(float) == count)
            return p;
    }
    return NULL;
}

static int all_finite(const float *p, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(p[i]))
            return 0;
    return 1;
}

static ffu_status run_gear(ffu_attributes *a, const ffu_image *img, ffu_face *f)
{
    face_net *n = &a->gear;
    double crop[6], sub[6], m[6];
    face_box_roi_map(f, AT_FACE_CROP, 1, 1, crop); /* unit square -> image */
    /* GEAR input (x, y) -> crop (0.1 + 0.8 x / w, 0.9 y / h) */
    sub[0] = 0.8 / n->in_w;
    sub[1] = 0;
    sub[2] = 0.1;
    sub[3] = 0;
    sub[4] = 0.9 / n->in_h;
    sub[5] = 0;
    m[0] = crop[0] * sub[0] + crop[1] * sub[3];
    m[1] = crop[0] * sub[1] + crop[1] * sub[4];
    m[2] = crop[0] * sub[2] + crop[1] * sub[5] + crop[2];
    m[3] = crop[3] * sub[0] + crop[4] * sub[3];
    m[4] = crop[3] * sub[1] + crop[4] * sub[4];
    m[5] = crop[3] * sub[2] + crop[4] * sub[5] + crop[5];
    ffu_status st;
    if ((st = face_net_fill_warp(n, 0, img, m)) || (st = face_net_run(n)))
        return st;
    const float *age = output_of_size(n, 7), *gender = output_of_size(n, 2),
                *race = output_of_size(n, 5);
    if (!age || !gender || !race)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: want outputs of 7 (age), 2 (gender) and 5 "
                             "(race) values", n->path);
    if (!all_finite(age, 7) || !all_finite(gender, 2) || !all_finite(race, 5))
        return ffu_error_set(FFU_ERR_FORMAT, "%s: outputs are not finite", n->path);
    double sum = 0, ea = 0;
    for (int i = 0; i < 7; i++) {
        double p = fmax(0.0, age[i]);
        sum += p;
        ea += p * age_centres[i];
    }
    f->attr.age = sum > 0 ? (float)(ea / sum) : NAN;
    double g = (double)gender[0] + gender[1];
    f->attr.gender_male = g > 0 ? (float)(gender[0] / g) : NAN;
    for (int i = 0; i < 5; i++)
        f->attr.race_prob[i] = race[i];
    f->attr.race = argmax(race, 5);
    return FFU_OK;
}

static ffu_status run_emotion(ffu_attributes *a, const ffu_image *img, ffu_face *f)
{
    face_net *n = &a->emo;
    double m[6];
    face_box_roi_map(f, AT_FACE_CROP, n->in_w, n->in_h, m);
    ffu_status st;
    if ((st = face_net_fill_warp(n, 0, img, m)) || (st = face_net_run(n)))
        return st;
    const float *p = output_of_size(n, 7);
    if (!p)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: want an output of 7 emotions", n->path);
    if (!all_finite(p, 7))
        return ffu_error_set(FFU_ERR_FORMAT, "%s: outputs are not finite", n->path);
    memcpy(f->attr.emotion_prob, p, 7 * sizeof(float));
    f->attr.emotion = argmax(p, 7);
    return FFU_OK;
}

ffu_status ffu_attributes_run(ffu_attributes *a, const ffu_image *img, ffu_face *face)
{
    if (!a)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_attributes_run: no attributes handle");
    ffu_status st = face_check_input(img, face, "attributes");
    if (st)
        return st;
    if (a->has_gear && (st = run_gear(a, img, face)))
        return st;
    if (a->has_emo && (st = run_emotion(a, img, face)))
        return st;
    return FFU_OK;
}
