/* `facefuse models list|verify`: the model zoo as a user sees it -- every named model,
 * its role, whether it is the default, where its file is and whether it is there, and
 * its licence; `verify` also checks the pinned sha256 sums and loads each model into the
 * engine, so a broken install is found before a long job starts. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "face/ert.h"
#include "facefuse/face.h"
#include "facefuse/models.h"
#include "facefuse/nn.h"

typedef struct {
    cli_common common;
    char *role;
    int all;
} models_opts;

static const ffu_option models_options[] = {
    CLI_COMMON_OPTIONS,
    {"role", 0, FFU_OPT_STRING, offsetof(models_opts, role),
     "only models of this role (detect, landmarks, embed, liveness, attributes)", NULL, 0, 0,
     NULL, "ROLE"},
    {"all", 0, FFU_OPT_BOOL, offsetof(models_opts, all),
     "verify: also the evaluation models under ../shared/models", NULL, 0, 0, NULL, NULL},
    {0},
};

/* What a zoo entry's files look like on disk: the worst state of its files (a TF.js
 * model is NAME.json and NAME.bin beside it; a face-api.js model is
 * NAME-weights_manifest.json and NAME.bin). Evaluation models have no pinned hash. */
static ffu_model_state entry_state(const ffu_zoo_entry *e, int hash, char *path, size_t len)
{
    ffu_zoo_entry r;
    ffu_status st = ffu_zoo_resolve(e->role, e->name, &r, path, len);
    if (!strcmp(e->family, "ensemble")) {
        /* the worst of its members' states; no file of its own */
        ffu_model_state worst = st ? FFU_MODEL_MISSING : FFU_MODEL_VERIFIED;
        char mpath[1200];
        const ffu_zoo_entry *m;
        for (int i = 0; (m = ffu_zoo_member(e, i)); i++) {
            ffu_model_state ms = entry_state(m, hash, mpath, sizeof mpath);
            if (ms > worst)
                worst = ms;
        }
        if (len)
            snprintf(path, len, "%s", e->file);
        return worst;
    }
    if (!strncmp(e->file, "shared:", 7))
        return st ? FFU_MODEL_MISSING : FFU_MODEL_PRESENT;
    const ffu_model_file *f = ffu_model_files_find(e->file);
    if (!f)
        return FFU_MODEL_MISSING;
    if (st)
        ffu_model_file_path(f, path, len);
    ffu_model_state s = ffu_model_file_check(f, hash);
    size_t n = strlen(e->file);
    if (n > 5 && !strcmp(e->file + n - 5, ".json")) {
        static const char fa[] = "-weights_manifest";
        size_t stem = n - 5, fl = sizeof fa - 1;
        if (stem > fl && !strncmp(e->file + stem - fl, fa, fl))
            stem -= fl;
        char bin[256];
        snprintf(bin, sizeof bin, "%.*s.bin", (int)stem, e->file);
        const ffu_model_file *fb = ffu_model_files_find(bin);
        ffu_model_state sb = fb ? ffu_model_file_check(fb, hash) : FFU_MODEL_MISSING;
        if (sb > s)
            s = sb;
    }
    return s;
}

static int role_matches(const models_opts *o, const ffu_zoo_entry *e)
{
    return !o->role || !strcmp(o->role, ffu_face_role_name(e->role));
}

/* 1 when e is one of the n names given after the subcommand (every model when none). */
static int named(const ffu_zoo_entry *e, char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], e->name)) return 1;
    return n == 0;
}

static int run(const cli_command *cmd, int argc, char **argv)
{
    models_opts o;
    int npos, done;
    ffu_jw *w = NULL;
    int rc = cli_parse(cmd, models_options, &o, argc, argv, &npos, &done);
    if (rc || done)
        goto out;
    const char *sub = npos > 0 ? argv[0] : "list";
    int verify = !strcmp(sub, "verify");
    if (!verify && strcmp(sub, "list")) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "unknown subcommand '%s' (list or verify)", sub);
        goto out;
    }
    /* models named after the subcommand: only those, evaluation ones included */
    char *const *names = argv + (npos > 0);
    int nnames = npos > 0 ? npos - 1 : 0;
    for (int i = 0; i < nnames; i++)
        if (!ffu_zoo_find(names[i])) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_NOT_FOUND,
                              "unknown model '%s' (see `facefuse models list`)", names[i]);
            goto out;
        }
    if (o.role) {
        int known = 0;
        for (int r = 0; r < FFU_ROLE_COUNT; r++)
            known |= !strcmp(o.role, ffu_face_role_name((ffu_face_role)r));
        if (!known) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "unknown role '%s'", o.role);
            goto out;
        }
    }
    if (o.common.json && ffu_jw_create(&w, 1) < 0) {
        rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
        goto out;
    }
    if (w) {
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "models");
        ffu_jw_begin_array(w);
    } else if (!verify) {
        printf("%-18s %-10s %-3s %-9s %-9s %s\n", "NAME", "ROLE", "DEF", "INPUT", "STATE",
               "LICENCE");
    }
    int bad_default = 0, bad = 0, checked = 0;
    for (int i = 0; i < ffu_zoo_count(); i++) {
        const ffu_zoo_entry *e = ffu_zoo_get(i);
        if (!role_matches(&o, e) || !named(e, names, nnames)) continue;
        int eval_only = !strncmp(e->file, "shared:", 7);
        if (verify && eval_only && !o.all && !nnames) continue;
        char path[1200] = "";
        ffu_model_state s = entry_state(e, verify, path, sizeof path);
        const char *load = NULL; /* verify: NULL = not tried, "" = ok, else the error */
        char err[512];
        int ensemble = !strcmp(e->family, "ensemble"); /* its members load on their rows */
        if (verify && !ensemble && (s == FFU_MODEL_VERIFIED || s == FFU_MODEL_PRESENT)) {
            /* dlib's predictor is not a network: its own loader checks it */
            ffu_status ls;
            if (!strcmp(e->family, "dlib68")) {
                ert_model *m = NULL;
                ls = ert_model_load(path, &m);
                ert_model_free(m);
            } else {
                ffu_nn_model *m = NULL;
                ls = ffu_nn_model_load(path, &m);
                ffu_nn_model_destroy(m);
            }
            snprintf(err, sizeof err, "%s", ls ? ffu_error_message() : "");
            load = err;
        }
        int ok = (s == FFU_MODEL_VERIFIED || s == FFU_MODEL_PRESENT) && (!load || !*load);
        checked++;
        bad += !ok;
        bad_default += !ok && e->is_default;
        char input[32] = "dynamic";
        if (e->input_w > 0)
            snprintf(input, sizeof input, "%dx%d", e->input_w, e->input_h);
        if (w) {
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "name"), ffu_jw_string(w, e->name);
            ffu_jw_key(w, "role"), ffu_jw_string(w, ffu_face_role_name(e->role));
            ffu_jw_key(w, "family"), ffu_jw_string(w, e->family);
            ffu_jw_key(w, "default"), ffu_jw_bool(w, e->is_default);
            ffu_jw_key(w, "input"), ffu_jw_string(w, input);
            if (e->role == FFU_ROLE_DETECT && e->input_w > 0)
                ffu_jw_key(w, "aspect"), ffu_jw_bool(w, e->aspect);
            ffu_jw_key(w, "path"), ffu_jw_string(w, path);
            ffu_jw_key(w, "state"), ffu_jw_string(w, ffu_model_state_name(s));
            if (load) {
                ffu_jw_key(w, "loads"), ffu_jw_bool(w, !*load);
                if (*load)
                    ffu_jw_key(w, "error"), ffu_jw_string(w, load);
            }
            if (e->align_template)
                ffu_jw_key(w, "template"), ffu_jw_string(w, e->align_template);
            ffu_jw_key(w, "evaluation_only"), ffu_jw_bool(w, eval_only);
            ffu_jw_key(w, "licence"), ffu_jw_string(w, e->licence);
            ffu_jw_key(w, "origin"), ffu_jw_string(w, e->origin);
            ffu_jw_end_object(w);
        } else if (verify) {
            printf("%-18s %-10s %-9s %s%s\n", e->name, ffu_face_role_name(e->role),
                   ffu_model_state_name(s), load ? (*load ? "does not load: " : "loads") : "",
                   load ? load : "");
        } else {
            if (e->aspect) /* fed at the frame's aspect where its graph can be */
                strncat(input, "+", sizeof input - strlen(input) - 1);
            printf("%-18s %-10s %-3s %-9s %-9s %s%s\n", e->name, ffu_face_role_name(e->role),
                   e->is_default ? "*" : "", input, ffu_model_state_name(s), e->licence,
                   eval_only ? " [evaluation only]" : "");
        }
    }
    if (w) {
        ffu_jw_end_array(w);
        ffu_jw_key(w, "checked"), ffu_jw_int(w, checked);
        ffu_jw_key(w, "failed"), ffu_jw_int(w, bad);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    } else if (verify) {
        printf("%d of %d models verified%s\n", checked - bad, checked,
               bad ? " (run scripts/setup to install or repair)" : "");
    }
    if (rc == CLI_EXIT_OK && verify && bad)
        rc = cli_fail_msg(cmd, NULL, CLI_EXIT_NOT_FOUND, "%d of %d models missing or broken%s",
                          bad, checked, bad_default ? ", defaults among them" : "");
out:
    ffu_jw_destroy(w);
    ffu_options_free(models_options, &o);
    return rc;
}

const cli_command cli_cmd_models = {
    "models",
    "list the model zoo, or verify installed models",
    "facefuse models [list|verify] [NAME...] [--role ROLE] [--all] [--json]",
    "list: every named model (* = default for its role), its input size (256x256+: a\n"
    "square detector fed at the frame's aspect ratio, 256x192 for a 4:3 frame, instead of\n"
    "a letterbox), whether its file is installed, and its licence. Evaluation-only\n"
    "models come from ../shared/models (set FFU_SHARED_DIR) and are never defaults. Any\n"
    "stage also takes a user file as FAMILY:PATH, e.g. --detector yunet:/path/model.onnx.\n"
    "verify: checks each packaged model's files against the pinned sha256 sums and loads\n"
    "it into the engine; exit 4 when one is missing or broken (--all adds evaluation\n"
    "models, checked by presence and loading). NAMEs limit either to those models\n"
    "(evaluation ones included); an unknown name is an error (exit 4).",
    run,
};
