/* The face module's shared pieces: the model zoo (defaults, name and FAMILY:PATH
 * resolution, errors that say what to do), the face list (slots keep their landmark
 * buffers, clear and free) and the face's JSON form. */
#include <unistd.h>

#include "facefuse/face.h"
#include "facefuse/models.h"
#include "test.h"

/* Members of ensemble row e: each an embedder row with a measured spread, not an
 * ensemble itself, shipped by a package when `shipped`. -1 when one is not. */
static int count_members(const ffu_zoo_entry *e, int shipped)
{
    int n = 0;
    for (const ffu_zoo_entry *m; (m = ffu_zoo_member(e, n)); n++)
        if (m->role != e->role || !strcmp(m->family, "ensemble") || !(m->spread > 0) ||
            (shipped && !ffu_model_files_find(m->file)))
            return -1;
    return n;
}

static void test_every_role_has_one_default(void)
{
    for (int r = 0; r < FFU_ROLE_COUNT; r++) {
        int n = 0;
        for (int i = 0; i < ffu_zoo_count(); i++) {
            const ffu_zoo_entry *e = ffu_zoo_get(i);
            n += e->role == (ffu_face_role)r && e->is_default;
        }
        CHECK_EQ_INT(n, 1);
        const ffu_zoo_entry *d = ffu_zoo_default((ffu_face_role)r);
        CHECK(d != NULL);
        /* defaults are package-shipped files, never evaluation-only ones (an ensemble's:
         * its members') */
        if (!strcmp(d->family, "ensemble")) {
            CHECK(count_members(d, 1) >= 2);
        } else {
            CHECK(strncmp(d->file, "shared:", 7) != 0);
            CHECK(ffu_model_files_find(d->file) != NULL);
        }
        CHECK(strstr(d->licence, "non-commercial") == NULL);
    }
    /* members are read by position; a row that is not an ensemble has none */
    const ffu_zoo_entry *ens = ffu_zoo_find("dlib-mobilefacenet");
    CHECK(ens && ffu_zoo_member(ens, 0) == ffu_zoo_find("dlib-resnet"));
    CHECK(ffu_zoo_member(ens, 1) == ffu_zoo_find("mobilefacenet-tflite"));
    CHECK(ffu_zoo_member(ens, 2) == NULL && ffu_zoo_member(ens, -1) == NULL);
    CHECK(ffu_zoo_member(ffu_zoo_find("dlib-resnet"), 0) == NULL);
    CHECK(ffu_zoo_get(-1) == NULL);
    CHECK(ffu_zoo_get(ffu_zoo_count()) == NULL);
}

static void test_rows_are_consistent(void)
{
    for (int i = 0; i < ffu_zoo_count(); i++) {
        const ffu_zoo_entry *e = ffu_zoo_get(i);
        CHECK(ffu_zoo_find(e->name) == e); /* names are unique */
        CHECK(e->norm_std != 0);
        if (e->role == FFU_ROLE_EMBED && !strcmp(e->family, "ensemble"))
            CHECK(count_members(e, 0) >= 2);
        else if (e->role == FFU_ROLE_EMBED)
            CHECK(ffu_align_template(e->align_template) != NULL);
        CHECK(e->licence && *e->licence && e->origin && *e->origin);
    }
}

static void test_resolve(void)
{
    ffu_zoo_entry e;
    char path[1024];
    /* unknown names and role mismatches say so */
    CHECK_EQ_INT(ffu_zoo_resolve(FFU_ROLE_DETECT, "no-such-model", &e, path, sizeof path),
                 FFU_ERR_NOT_FOUND);
    CHECK(strstr(ffu_error_message(), "no-such-model") != NULL);
    CHECK_EQ_INT(ffu_zoo_resolve(FFU_ROLE_DETECT, "mobilefacenet", &e, path, sizeof path),
                 FFU_ERR_NOT_FOUND);
    CHECK_EQ_INT(ffu_zoo_resolve(FFU_ROLE_DETECT, "nofamily:/tmp/x.onnx", &e, path, sizeof path),
                 FFU_ERR_NOT_FOUND);
    CHECK_EQ_INT(ffu_zoo_resolve(FFU_ROLE_COUNT, NULL, &e, path, sizeof path), FFU_ERR_INVALID);
    /* FAMILY:PATH with a missing file names the file */
    CHECK_EQ_INT(ffu_zoo_resolve(FFU_ROLE_DETECT, "yunet:/nonexistent/y.onnx", &e, path,
                                 sizeof path), FFU_ERR_NOT_FOUND);
    CHECK(strstr(ffu_error_message(), "/nonexistent/y.onnx") != NULL);
    /* FAMILY:PATH with a real file takes the family's settings and the user's path */
    char tmp[] = "/tmp/ffu_zoo_XXXXXX";
    int fd = mkstemp(tmp);
    CHECK(fd >= 0);
    close(fd);
    char spec[128];
    snprintf(spec, sizeof spec, "scrfd:%s", tmp);
    ffu_status st = ffu_zoo_resolve(FFU_ROLE_DETECT, spec, &e, path, sizeof path);
    unlink(tmp);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_STR(path, tmp);
    CHECK_STR(e.family, "scrfd");
    CHECK_EQ_INT(e.is_default, 0);
    /* a family name that is not a row name finds the family's row */
    strcpy(tmp, "/tmp/ffu_zoo_XXXXXX");
    fd = mkstemp(tmp);
    CHECK(fd >= 0);
    close(fd);
    snprintf(spec, sizeof spec, "arcface:%s", tmp);
    st = ffu_zoo_resolve(FFU_ROLE_EMBED, spec, &e, path, sizeof path);
    unlink(tmp);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_STR(e.family, "arcface");
    CHECK(e.align_template != NULL);
    /* InsightFace's convention, (x - 127.5) / 127.5, which ArcFace ONNX files expect */
    CHECK_NEAR(e.norm_mean, 127.5, 1e-6);
    CHECK_NEAR(e.norm_std, 127.5, 1e-6);
}

static void test_resolve_installed_defaults(void)
{
    char path[1024];
    ffu_zoo_entry e;
    const ffu_zoo_entry *d = ffu_zoo_default(FFU_ROLE_EMBED);
    /* an ensemble default has no file of its own: its members' files are checked */
    int ens = !strcmp(d->family, "ensemble");
    for (int i = 0; i < (ens ? 2 : 1); i++) {
        const ffu_zoo_entry *r = ens ? ffu_zoo_member(d, i) : d;
        const ffu_model_file *f = r ? ffu_model_files_find(r->file) : NULL;
        ffu_model_state s = f ? ffu_model_file_check(f, 0) : FFU_MODEL_MISSING;
        if (s != FFU_MODEL_VERIFIED && s != FFU_MODEL_PRESENT)
            TEST_SKIP("models not installed (run scripts/setup)");
    }
    CHECK_EQ_INT(ffu_zoo_resolve(FFU_ROLE_EMBED, NULL, &e, path, sizeof path), FFU_OK);
    CHECK_STR(e.name, d->name);
    const ffu_zoo_entry *r = ens ? ffu_zoo_member(d, 0) : d;
    if (ens)
        CHECK_EQ_INT(ffu_zoo_resolve(FFU_ROLE_EMBED, r->name, &e, path, sizeof path), FFU_OK);
    CHECK(strstr(path, r->file) != NULL);
    CHECK_EQ_INT(access(path, R_OK), 0);
}

static void test_face_list(void)
{
    ffu_face_list l = {0};
    for (int i = 0; i < 40; i++) {
        ffu_face *f = ffu_face_list_push(&l);
        CHECK(f != NULL);
        CHECK(isnan(f->liveness) && f->attr.race == -1 && f->embedding_dim == 0);
        f->score = (float)i;
        CHECK_EQ_INT(ffu_face_set_landmarks(f, 468), FFU_OK);
        f->landmarks[3 * 467] = (float)i;
    }
    CHECK_EQ_INT(l.count, 40);
    CHECK_NEAR(l.faces[39].landmarks[3 * 467], 39, 0);
    float *kept = l.faces[3].landmarks;
    ffu_face_list_clear(&l);
    CHECK_EQ_INT(l.count, 0);
    ffu_face *f = ffu_face_list_push(&l);
    f = ffu_face_list_push(&l);
    f = ffu_face_list_push(&l);
    f = ffu_face_list_push(&l);
    CHECK(f->landmarks == kept); /* the slot's buffer is reused, not leaked */
    CHECK_EQ_INT(f->num_landmarks, 0);
    CHECK_EQ_INT(ffu_face_set_landmarks(f, 5000), FFU_ERR_INVALID);
    ffu_face_list_free(&l);
    CHECK(l.faces == NULL && l.count == 0);
    ffu_face_list_free(&l); /* twice is fine */
    ffu_face_list_free(NULL);
}

static void test_face_json(void)
{
    ffu_face f;
    ffu_face_init(&f);
    f.box[0] = 10.5f, f.box[1] = 20, f.box[2] = 30, f.box[3] = 40;
    f.score = 0.875f;
    for (int i = 0; i < 10; i++)
        f.kps[i] = (float)i;
    f.liveness = 0.25f;
    ffu_jw *w = NULL;
    CHECK_EQ_INT(ffu_jw_create(&w, 0), FFU_OK);
    CHECK_EQ_INT(ffu_face_write_json(&f, w), FFU_OK);
    size_t len;
    const char *text = ffu_jw_text(w, &len);
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(text, len, &j), FFU_OK);
    const ffu_json *box = ffu_json_get(j, "box");
    CHECK(ffu_json_typeof(box) == FFU_JSON_ARRAY);
    CHECK_NEAR(ffu_json_number(ffu_json_at(box, 0), -1), 10.5, 1e-9);
    CHECK_NEAR(ffu_json_number(ffu_json_get(j, "score"), -1), 0.875, 1e-9);
    CHECK_NEAR(ffu_json_number(ffu_json_at(ffu_json_at(ffu_json_get(j, "keypoints"), 4), 1), -1),
               9, 1e-9);
    CHECK_NEAR(ffu_json_number(ffu_json_get(j, "liveness"), -1), 0.25, 1e-9);
    /* fields not computed are left out, not written as NaN */
    CHECK(ffu_json_get(j, "attributes") == NULL);
    CHECK(ffu_json_get(j, "embedding") == NULL);
    ffu_json_free(j);
    ffu_jw_destroy(w);
}

TEST_MAIN(test_every_role_has_one_default, test_rows_are_consistent, test_resolve,
          test_resolve_installed_defaults, test_face_list, test_face_json)
