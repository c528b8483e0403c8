/* The compiled-in model manifest and cache look-ups; see include/facefuse/models.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "facefuse/models.h"

static const ffu_model_file manifest[] = {
#include "model_manifest.inc"
};
#define MANIFEST_COUNT ((int)(sizeof manifest / sizeof manifest[0]))

int ffu_model_files_count(void) { return MANIFEST_COUNT; }

const ffu_model_file *ffu_model_files_get(int i)
{
    return i >= 0 && i < MANIFEST_COUNT ? &manifest[i] : NULL;
}

const ffu_model_file *ffu_model_files_find(const char *name)
{
    for (int i = 0; i < MANIFEST_COUNT; i++)
        if (strcmp(manifest[i].name, name) == 0) return &manifest[i];
    return NULL;
}

const char *ffu_model_dir(char *buf, size_t len)
{
    const char *env = getenv("FFU_MODEL_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (env && *env)
        snprintf(buf, len, "%s", env);
    else if (xdg && *xdg)
        snprintf(buf, len, "%s/facefuse/models", xdg);
    else
        snprintf(buf, len, "%s/.cache/facefuse/models", home && *home ? home : ".");
    return buf;
}

ffu_status ffu_model_file_path(const ffu_model_file *f, char *buf, size_t len)
{
    int n;
    if (strncmp(f->source, "debian:", 7) == 0) {
        n = snprintf(buf, len, "%s", f->path);
    } else {
        char dir[1024];
        n = snprintf(buf, len, "%s/%s", ffu_model_dir(dir, sizeof dir), f->name);
    }
    if (n < 0 || (size_t)n >= len)
        return ffu_error_set(FFU_ERR_INVALID, "model path for %s is too long", f->name);
    return FFU_OK;
}

ffu_model_state ffu_model_file_check(const ffu_model_file *f, int hash)
{
    char path[1200];
    struct stat st;
    if (ffu_model_file_path(f, path, sizeof path) < 0 || stat(path, &st) != 0)
        return FFU_MODEL_MISSING;
    if ((uint64_t)st.st_size != f->size) return FFU_MODEL_CORRUPT;
    if (!hash) return FFU_MODEL_PRESENT;
    uint8_t digest[32];
    char hex[65];
    if (ffu_sha256_file(path, digest) < 0) return FFU_MODEL_MISSING;
    ffu_sha256_hex(digest, hex);
    return strcmp(hex, f->sha256) == 0 ? FFU_MODEL_VERIFIED : FFU_MODEL_CORRUPT;
}

const char *ffu_model_state_name(ffu_model_state s)
{
    static const char *const names[FFU_MODEL_STATE_COUNT] = {"verified", "present", "missing",
                                                             "corrupt"};
    return (unsigned)s < FFU_MODEL_STATE_COUNT ? names[s] : "invalid";
}
