/* `facefuse info`: what this build can do on this machine -- build options, CPU
 * features, CUDA devices, and which default models are installed and verified. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "facefuse/gpu.h"
#include "facefuse/image.h"
#include "facefuse/models.h"
#include "ffu_config.h"

typedef struct {
    cli_common common;
    int fast;
    int require_models;
} info_opts;

static const ffu_option info_options[] = {
    CLI_COMMON_OPTIONS,
    {"fast", 0, FFU_OPT_BOOL, offsetof(info_opts, fast),
     "check model files by size only (skip sha256)", NULL, 0, 0, NULL, NULL},
    {"require-models", 0, FFU_OPT_BOOL, offsetof(info_opts, require_models),
     "exit 4 when a default model is missing or corrupt", NULL, 0, 0, NULL, NULL},
    {0},
};

static void json_features(ffu_jw *w, unsigned feats)
{
    ffu_jw_begin_array(w);
    for (unsigned bit = 0; bit < FFU_CPU_FEATURE_COUNT; bit++)
        if (feats & (1u << bit)) ffu_jw_string(w, ffu_cpu_feature_name(1u << bit));
    ffu_jw_end_array(w);
}

static int run(const cli_command *cmd, int argc, char **argv)
{
    info_opts o;
    int npos, done;
    ffu_jw *w = NULL;
    int rc = cli_parse(cmd, info_options, &o, argc, argv, &npos, &done);
    if (rc || done) goto out;
    if (npos > 0) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "unexpected argument '%s'", argv[0]);
        goto out;
    }

    char cpu[128], feats[256], dir[1024];
    unsigned features = ffu_cpu_features();
    ffu_cpu_name(cpu, sizeof cpu);
    ffu_cpu_features_string(features, feats, sizeof feats);
    ffu_model_dir(dir, sizeof dir);
    int ndev = ffu_gpu_device_count();
    int nmodels = ffu_model_files_count(), good = 0;
    ffu_model_state states[256];
    for (int i = 0; i < nmodels && i < 256; i++) {
        states[i] = ffu_model_file_check(ffu_model_files_get(i), !o.fast);
        good += states[i] == FFU_MODEL_VERIFIED || states[i] == FFU_MODEL_PRESENT;
    }

    if (o.common.json) {
        if (ffu_jw_create(&w, 1) < 0) {
            rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
            goto out;
        }
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "version"), ffu_jw_string(w, FFU_VERSION_STRING);
        ffu_jw_key(w, "build");
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "type"), ffu_jw_string(w, FFU_BUILD_TYPE);
        ffu_jw_key(w, "compiler"), ffu_jw_string(w, FFU_C_COMPILER);
        ffu_jw_key(w, "cuda"), ffu_jw_bool(w, FFU_HAVE_CUDA);
        ffu_jw_key(w, "sanitizers"), ffu_jw_bool(w, FFU_SANITIZE);
        ffu_jw_end_object(w);
        ffu_jw_key(w, "cpu");
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "name"), ffu_jw_string(w, cpu);
        ffu_jw_key(w, "threads"), ffu_jw_int(w, ffu_cpu_count());
        ffu_jw_key(w, "features"), json_features(w, features);
        ffu_jw_key(w, "detected"), json_features(w, ffu_cpu_features_detected());
        ffu_jw_end_object(w);
        ffu_jw_key(w, "cuda");
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "compiled"), ffu_jw_bool(w, FFU_HAVE_CUDA);
        ffu_jw_key(w, "devices"), ffu_jw_int(w, ndev);
        ffu_jw_key(w, "device_list");
        ffu_jw_begin_array(w);
        for (int i = 0; i < ndev; i++) {
            ffu_gpu_device_info d;
            if (ffu_gpu_device_info_get(i, &d) < 0) continue;
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "index"), ffu_jw_int(w, i);
            ffu_jw_key(w, "name"), ffu_jw_string(w, d.name);
            ffu_jw_key(w, "compute_capability"), ffu_jw_number(w, d.cc_major + d.cc_minor / 10.0);
            ffu_jw_key(w, "multiprocessors"), ffu_jw_int(w, d.sm_count);
            ffu_jw_key(w, "memory_mib"), ffu_jw_int(w, (int64_t)(d.mem_total >> 20));
            ffu_jw_end_object(w);
        }
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
        ffu_jw_key(w, "models");
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "dir"), ffu_jw_string(w, dir);
        ffu_jw_key(w, "checked"), ffu_jw_string(w, o.fast ? "size" : "sha256");
        ffu_jw_key(w, "ok"), ffu_jw_int(w, good);
        ffu_jw_key(w, "total"), ffu_jw_int(w, nmodels);
        ffu_jw_key(w, "files");
        ffu_jw_begin_array(w);
        for (int i = 0; i < nmodels && i < 256; i++) {
            const ffu_model_file *f = ffu_model_files_get(i);
            char path[1200];
            ffu_model_file_path(f, path, sizeof path);
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "name"), ffu_jw_string(w, f->name);
            ffu_jw_key(w, "role"), ffu_jw_string(w, f->role);
            ffu_jw_key(w, "source"), ffu_jw_string(w, f->source);
            ffu_jw_key(w, "path"), ffu_jw_string(w, path);
            ffu_jw_key(w, "state"), ffu_jw_string(w, ffu_model_state_name(states[i]));
            ffu_jw_end_object(w);
        }
        ffu_jw_end_array(w);
        ffu_jw_end_object(w);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    } else {
        printf("facefuse %s (%s, %s)\n", FFU_VERSION_STRING, FFU_BUILD_TYPE, FFU_C_COMPILER);
        printf("build:   CUDA kernels %s, sanitizers %s\n",
               FFU_HAVE_CUDA ? "compiled (" FFU_CUDA_COMPILER ")" : "not compiled",
               FFU_SANITIZE ? "on" : "off");
        printf("cpu:     %s, %d threads\n         %s\n", cpu, ffu_cpu_count(), feats);
        if (FFU_HAVE_CUDA) {
            printf("cuda:    %d device%s%s\n", ndev, ndev == 1 ? "" : "s",
                   ndev ? "" : " (GPU paths disabled)");
        } else {
            printf("cuda:    not in this build\n");
        }
        for (int i = 0; i < ndev; i++) {
            ffu_gpu_device_info d;
            if (ffu_gpu_device_info_get(i, &d) == FFU_OK)
                printf("  %d: %s, compute %d.%d, %d SMs, %zu MiB\n", i, d.name, d.cc_major,
                       d.cc_minor, d.sm_count, d.mem_total >> 20);
        }
        printf("models:  %s\n         %d of %d files %s\n", dir, good, nmodels,
               o.fast ? "present (size checked)" : "verified (sha256)");
        for (int i = 0; i < nmodels && i < 256; i++) {
            const ffu_model_file *f = ffu_model_files_get(i);
            printf("  %-11s %-46s %s\n", f->role, f->name, ffu_model_state_name(states[i]));
        }
        if (good < nmodels) printf("run scripts/setup to install the missing models\n");
    }
    if (rc == CLI_EXIT_OK && o.require_models && good < nmodels)
        rc = cli_fail_msg(cmd, NULL, CLI_EXIT_NOT_FOUND,
                          "%d of %d model files missing or corrupt in %s (run scripts/setup)",
                          nmodels - good, nmodels, dir);
out:
    ffu_jw_destroy(w);
    ffu_options_free(info_options, &o);
    return rc;
}

const cli_command cli_cmd_info = {
    "info",
    "show build options, CPU features, GPUs and installed models",
    "facefuse info [--fast] [--require-models] [--json]",
    "Model files are checked against the sha256 sums pinned in models/manifest.tsv;\n"
    "--fast checks sizes only.",
    run,
};
