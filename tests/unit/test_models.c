/* The compiled-in model manifest and the cache check: the table matches
 * models/manifest.tsv, and a cache directory with a good, a truncated and a
 * tampered file reports verified / corrupt / corrupt, and missing for the rest. */
#include <stdlib.h>
#include <unistd.h>

#include "facefuse/models.h"
#include "test.h"

static void test_manifest_matches_tsv(void)
{
    FILE *f = fopen(FFU_TEST_SOURCE_DIR "/models/manifest.tsv", "r");
    CHECK(f != NULL);
    char line[2048];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char name[256];
        CHECK(sscanf(line, "%255[^\t]", name) == 1);
        const ffu_model_file *m = ffu_model_files_find(name);
        CHECK(m != NULL);
        CHECK(strlen(m->sha256) == 64);
        CHECK(m->size > 0);
        rows++;
    }
    fclose(f);
    CHECK_EQ_INT(rows, ffu_model_files_count());
    CHECK(ffu_model_files_get(-1) == NULL);
    CHECK(ffu_model_files_get(rows) == NULL);
    CHECK(ffu_model_files_find("no-such-model") == NULL);
}

static void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(data, 1, len, f);
    fclose(f);
}

static void test_cache_states(void)
{
    char dir[] = "/tmp/ffu_models_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("FFU_MODEL_DIR", dir, 1);
    char buf[1024];
    CHECK_STR(ffu_model_dir(buf, sizeof buf), dir);

    /* A fake entry for the checks: the manifest's real files are large, so build a
     * small file and a record that pins its actual digest. */
    const char content[] = "facefuse model cache test";
    uint8_t d[32];
    char hex[65], path[1200];
    ffu_sha256 s;
    ffu_sha256_init(&s);
    ffu_sha256_update(&s, content, sizeof content);
    ffu_sha256_final(&s, d);
    ffu_sha256_hex(d, hex);
    ffu_model_file fake = {"fake.bin", "test", "npm-spec@1", "x", sizeof content, hex};
    CHECK_EQ_INT(ffu_model_file_check(&fake, 1), FFU_MODEL_MISSING);
    CHECK_EQ_INT(ffu_model_file_path(&fake, path, sizeof path), FFU_OK);
    write_file(path, content, sizeof content);
    CHECK_EQ_INT(ffu_model_file_check(&fake, 1), FFU_MODEL_VERIFIED);
    CHECK_EQ_INT(ffu_model_file_check(&fake, 0), FFU_MODEL_PRESENT);
    char tampered[sizeof content];
    memcpy(tampered, content, sizeof content);
    tampered[3] ^= 1;
    write_file(path, tampered, sizeof tampered);
    CHECK_EQ_INT(ffu_model_file_check(&fake, 0), FFU_MODEL_PRESENT); /* same size */
    CHECK_EQ_INT(ffu_model_file_check(&fake, 1), FFU_MODEL_CORRUPT);
    write_file(path, content, 5);
    CHECK_EQ_INT(ffu_model_file_check(&fake, 0), FFU_MODEL_CORRUPT);
    remove(path);
    rmdir(dir);
    /* The real manifest against an empty cache: every npm file is missing. */
    const ffu_model_file *m = ffu_model_files_find("mobilefacenet.bin");
    CHECK(m != NULL);
    CHECK_EQ_INT(ffu_model_file_check(m, 0), FFU_MODEL_MISSING);
    unsetenv("FFU_MODEL_DIR");
    CHECK_STR(ffu_model_state_name(FFU_MODEL_CORRUPT), "corrupt");
}

TEST_MAIN(test_manifest_matches_tsv, test_cache_states)
