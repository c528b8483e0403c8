/* Fuzz target for the gallery file reader (src/gallery/gallery_file.c). The input is
 * the file's bytes. A load must either fail with *out == NULL and FFU_ERR_FORMAT or
 * FFU_ERR_UNSUPPORTED (a well-formed file of a newer version), or give a gallery that
 * is consistent: counts within the caps, every identity findable by its name, a
 * search that returns identities in order with similarities in [-1, 1], and a save
 * that loads back to the same counts. Each input is tried twice: as it is, and with its
 * length field and CRC repaired, because random bytes almost never carry a valid CRC and
 * the payload parser behind it must be fuzzed too. Seeds: tests/fixtures/corpus/gallery/
 * (written by tests/fuzz/make_gallery_corpus.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "facefuse/gallery.h"
#include "gallery/gallery_internal.h"

static void check_one(const uint8_t *data, size_t size)
{
    ffu_gallery *g = (ffu_gallery *)1;
    ffu_status st = ffu_gallery_load_memory(data, size, &g);
    if (st < 0) {
        if (g) abort(); /* out-param must be NULL on error */
        if (st != FFU_ERR_FORMAT && st != FFU_ERR_UNSUPPORTED && st != FFU_ERR_NOMEM) abort();
        return;
    }
    if (!g) abort();
    int dim = ffu_gallery_dim(g), nid = ffu_gallery_identity_count(g);
    int ntpl = ffu_gallery_template_count(g);
    if (dim < 1 || dim > FFU_FACE_MAX_EMBED || nid < 0 || ntpl < nid) abort();
    if (!ffu_gallery_model(g) || !ffu_gallery_model(g)[0]) abort();
    for (int i = 0; i < nid; i++) {
        const char *name = ffu_gallery_name(g, i);
        if (!name || strlen(name) >= FFU_GALLERY_NAME_MAX || ffu_gallery_find(g, name) != i)
            abort();
    }
    static float probe[FFU_FACE_MAX_EMBED];
    for (int d = 0; d < dim; d++)
        probe[d] = (float)((d * 7919) % 13) - 6.0f + 0.5f;
    ffu_gallery_match m[4];
    int n = ffu_gallery_search(g, probe, m, 4);
    if (n != (nid < 4 ? nid : 4)) abort();
    for (int i = 0; i < n; i++) {
        if (m[i].identity < 0 || m[i].identity >= nid) abort();
        if (!(m[i].similarity >= -1.0f && m[i].similarity <= 1.0f)) abort();
        if (i && m[i].similarity > m[i - 1].similarity) abort();
    }
    /* what was loaded saves and loads back (small galleries only: keep it fast) */
    if (ntpl <= 64) {
        char path[] = "/tmp/fuzz_gallery_XXXXXX";
        int fd = mkstemp(path);
        if (fd >= 0) {
            close(fd);
            ffu_gallery *h = NULL;
            if (ffu_gallery_save(g, path) != FFU_OK || ffu_gallery_load(path, &h) != FFU_OK ||
                ffu_gallery_template_count(h) != ntpl || ffu_gallery_identity_count(h) != nid)
                abort();
            ffu_gallery_destroy(h);
            unlink(path);
        }
    }
    ffu_gallery_destroy(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_one(data, size);
    if (size < 20 || size > (1u << 20))
        return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    uint64_t plen = size - 20;
    for (int i = 0; i < 8; i++)
        fixed[8 + i] = (uint8_t)(plen >> (8 * i));
    uint32_t crc = gallery_crc32(0, fixed, size - 4);
    for (int i = 0; i < 4; i++)
        fixed[size - 4 + i] = (uint8_t)(crc >> (8 * i));
    check_one(fixed, size);
    free(fixed);
    return 0;
}
