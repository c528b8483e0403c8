/* The face record and its list, its JSON form, and alignment to the standard
 * templates: the pieces every face stage and the CLI share. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "face_internal.h"

void ffu_face_init(ffu_face *f)
{
    memset(f, 0, sizeof *f);
    f->quality.size = NAN;
    f->quality.sharpness = NAN;
    f->quality.yaw = f->quality.pitch = f->quality.roll = NAN;
    f->quality.score = NAN;
    f->liveness = NAN;
    f->attr.age = NAN;
    f->attr.gender_male = NAN;
    f->attr.race = -1;
    f->attr.emotion = -1;
}

ffu_face *ffu_face_list_push(ffu_face_list *l)
{
    if (l->count == l->capacity) {
        int cap = l->capacity ? l->capacity * 2 : 16;
        ffu_face *nf = realloc(l->faces, (size_t)cap * sizeof *nf);
        if (!nf) {
            ffu_error_set(FFU_ERR_NOMEM, "face list of %d", cap);
            return NULL;
        }
        /* landmark arrays stay with the slot that owns them: clear the new slots */
        memset(nf + l->capacity, 0, (size_t)(cap - l->capacity) * sizeof *nf);
        l->faces = nf;
        l->capacity = cap;
    }
    ffu_face *f = &l->faces[l->count++];
    float *keep = f->landmarks; /* reuse the slot's landmark buffer */
    ffu_face_init(f);
    f->landmarks = keep;
    return f;
}

void ffu_face_list_clear(ffu_face_list *l)
{
    for (int i = 0; i < l->count; i++)
        l->faces[i].num_landmarks = 0;
    l->count = 0;
}

void ffu_face_list_free(ffu_face_list *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->capacity; i++)
        free(l->faces[i].landmarks);
    free(l->faces);
    memset(l, 0, sizeof *l);
}

ffu_status ffu_face_set_landmarks(ffu_face *f, int n)
{
    if (n < 0 || n > 1024)
        return ffu_error_set(FFU_ERR_INVALID, "%d landmarks", n);
    /* Buffers are sized for the largest model (478) so a slot never reallocates. */
    if (!f->landmarks && n > 0) {
        f->landmarks = calloc(1024 * 3, sizeof(float));
        if (!f->landmarks)
            return ffu_error_set(FFU_ERR_NOMEM, "landmarks");
    }
    f->num_landmarks = n;
    return FFU_OK;
}

static const char *race_names[] = {"white", "black", "asian", "indian", "other"};
static const char *emotion_names[] = {"angry", "disgust", "fear", "happy",
                                      "sad", "surprise", "neutral"};

const char *ffu_face_race_name(int i) { return i >= 0 && i < 5 ? race_names[i] : "unknown"; }
const char *ffu_face_emotion_name(int i) { return i >= 0 && i < 7 ? emotion_names[i] : "unknown"; }

static void jw_num_or_skip(ffu_jw *w, const char *key, float v)
{
    if (isfinite(v)) {
        ffu_jw_key(w, key);
        ffu_jw_number(w, v);
    }
}

ffu_status ffu_face_write_json(const ffu_face *f, ffu_jw *w)
{
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "box");
    ffu_jw_begin_array(w);
    for (int i = 0; i < 4; i++)
        ffu_jw_number(w, round((double)f->box[i] * 100) / 100);
    ffu_jw_end_array(w);
    ffu_jw_key(w, "score");
    ffu_jw_number(w, round((double)f->score * 10000) / 10000);
    ffu_jw_key(w, "keypoints");
    ffu_jw_begin_array(w);
    for (int i = 0; i < FFU_FACE_NUM_KPS; i++) {
        ffu_jw_begin_array(w);
        ffu_jw_number(w, round((double)f->kps[2 * i] * 100) / 100);
        ffu_jw_number(w, round((double)f->kps[2 * i + 1] * 100) / 100);
        ffu_jw_end_array(w);
    }
    ffu_jw_end_array(w);
    if (f->rotation) {
        ffu_jw_key(w, "rotation");
        ffu_jw_int(w, f->rotation);
    }
    if (f->num_landmarks > 0 && f->landmarks) {
        ffu_jw_key(w, "landmarks");
        ffu_jw_begin_array(w);
        for (int i = 0; i < f->num_landmarks; i++) {
            ffu_jw_begin_array(w);
            for (int k = 0; k < 3; k++)
                ffu_jw_number(w, round((double)f->landmarks[3 * i + k] * 100) / 100);
            ffu_jw_end_array(w);
        }
        ffu_jw_end_array(w);
    }
    if (isfinite(f->quality.score) || isfinite(f->quality.size)) {
        ffu_jw_key(w, "quality");
        ffu_jw_begin_object(w);
        jw_num_or_skip(w, "score", f->quality.score);
        jw_num_or_skip(w, "size", f->quality.size);
        jw_num_or_skip(w, "sharpness", f->quality.sharpness);
        jw_num_or_skip(w, "yaw", f->quality.yaw);
        jw_num_or_skip(w, "pitch", f->quality.pitch);
        jw_num_or_skip(w, "roll", f->quality.roll);
        ffu_jw_end_object(w);
    }
    jw_num_or_skip(w, "liveness", f->liveness);
    if (isfinite(f->attr.age) || isfinite(f->attr.gender_male) || f->attr.race >= 0 ||
        f->attr.emotion >= 0) {
        ffu_jw_key(w, "attributes");
        ffu_jw_begin_object(w);
        jw_num_or_skip(w, "age", f->attr.age);
        if (isfinite(f->attr.gender_male)) {
            ffu_jw_key(w, "gender");
            ffu_jw_string(w, f->attr.gender_male >= 0.5f ? "male" : "female");
            jw_num_or_skip(w, "male_probability", f->attr.gender_male);
        }
        if (f->attr.race >= 0) {
            ffu_jw_key(w, "race");
            ffu_jw_string(w, ffu_face_race_name(f->attr.race));
        }
        if (f->attr.emotion >= 0) {
            ffu_jw_key(w, "emotion");
            ffu_jw_string(w, ffu_face_emotion_name(f->attr.emotion));
        }
        ffu_jw_end_object(w);
    }
    if (f->embedding_dim > 0) {
        ffu_jw_key(w, "embedding");
        ffu_jw_begin_array(w);
        for (int i = 0; i < f->embedding_dim; i++)
            ffu_jw_number(w, f->embedding[i]);
        ffu_jw_end_array(w);
    }
    ffu_jw_end_object(w);
    return ffu_jw_status(w);
}

float face_box_iou(const float a[4], const float b[4])
{
    float x0 = fmaxf(a[0], b[0]), y0 = fmaxf(a[1], b[1]);
    float x1 = fminf(a[0] + a[2], b[0] + b[2]), y1 = fminf(a[1] + a[3], b[1] + b[3]);
    float iw = x1 - x0, ih = y1 - y0;
    if (!(iw > 0) || !(ih > 0)) return 0;
    float inter = iw * ih, uni = a[2] * a[3] + b[2] * b[3] - inter;
    return uni > 0 ? inter / uni : 0;
}

int face_list_largest(const ffu_face_list *l)
{
    int best = 0;
    for (int i = 1; i < l->count; i++)
        if (l->faces[i].box[2] * l->faces[i].box[3] > l->faces[best].box[2] * l->faces[best].box[3])
            best = i;
    return best;
}

float ffu_face_similarity(const float *a, const float *b, int dim)
{
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < dim; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    if (aa <= 0 || bb <= 0)
        return 0;
    return (float)(ab / sqrt(aa * bb));
}

/* ---- alignment templates (MODELS.md; normalised, times the crop size) ----------------- */

static const struct {
    const char *name;
    float p[10];
} templates[] = {
    {"arcface_112_v1",
     {.35473214f, .45658929f, .64526786f, .45658929f, .50000000f, .61154464f, .37913393f,
      .77687500f, .62086607f, .77687500f}},
    {"arcface_112_v2",
     {.34191607f, .46157411f, .65653393f, .45983393f, .50022500f, .64050536f, .37097589f,
      .82469196f, .63151696f, .82325089f}},
    {"arcface_128",
     {.36167656f, .40387734f, .63696719f, .40235469f, .50019687f, .56044219f, .38710391f,
      .72160547f, .61507734f, .72034453f}},
    {"ffhq_512",
     {.37691676f, .46864664f, .62285697f, .46912813f, .50123859f, .61331904f, .39308822f,
      .72541100f, .61150205f, .72490465f}},
    /* dlib's face chips (get_face_chip_details, padding 0.25): eye centres, nose tip
     * and mouth corners of its mean face shape (points 36-41, 42-47, 30, 48, 54),
     * (p + 0.25) / 1.5 */
    {"dlib_150",
     {.31699456f, .31066022f, .66984089f, .31066022f, .49341800f, .51041667f, .33609933f,
      .68682200f, .65073600f, .68682200f}},
    {"mtcnn_512",
     {.36562865f, .46733799f, .63305391f, .46585885f, .50019127f, .61942959f, .39032951f,
      .77598822f, .61178945f, .77476328f}},
};

const float *ffu_align_template(const char *name)
{
    for (size_t i = 0; name && i < sizeof templates / sizeof templates[0]; i++)
        if (!strcmp(templates[i].name, name))
            return templates[i].p;
    return NULL;
}

/* Forward similarity image -> crop (continuous coordinates) for a template. The
 * templates are given in the pixel-centre convention of the tools that defined them
 * (points * size index pixel centres), so +0.5 turns them into continuous coordinates. */
ffu_status face_align_transform(const float kps[10], const char *template_name, int size,
                                double fwd[6])
{
    const float *t = ffu_align_template(template_name);
    if (!t)
        return ffu_error_set(FFU_ERR_INVALID, "unknown alignment template '%s'",
                             template_name ? template_name : "(null)");
    float dst[10];
    for (int i = 0; i < 10; i++)
        dst[i] = t[i] * (float)size + 0.5f;
    return ffu_estimate_similarity(kps, dst, 5, fwd);
}

ffu_status ffu_face_align(const ffu_image *img, const float kps[10], const char *template_name,
                          int size, ffu_image *crop, double m_out[6])
{
    if (m_out)
        memset(m_out, 0, 6 * sizeof(double));
    if (!img || !crop || size < 8 || size > 4096)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_face_align: bad arguments");
    double fwd[6], inv[6], wm[6];
    ffu_status st = face_align_transform(kps, template_name, size, fwd);
    if (st || (st = ffu_affine_invert(fwd, inv)))
        return st;
    if (crop->data[0] == NULL || crop->width != size || crop->height != size ||
        crop->fmt != img->fmt) {
        ffu_image_release(crop);
        if ((st = ffu_image_create(crop, img->fmt, size, size)))
            return st;
    }
    face_warp_map(inv, wm);
    if ((st = ffu_image_warp_affine(img, crop, wm, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT,
                                    NULL)))
        return st;
    if (m_out)
        memcpy(m_out, fwd, sizeof fwd);
    return FFU_OK;
}
