/* The gallery's private layout, shared by its three files: gallery.c (identities,
 * templates, search), gallery_file.c (the FFGL file format) and enroll.c (enrolling a
 * directory of photos). Not installed.
 *
 * Templates live in one contiguous, 64-byte aligned float matrix, grouped by identity
 * (identity i owns rows first..first+count-1), so a search is one pass over the
 * matrix that takes the max within each group without any scratch memory. */
#ifndef FFU_GALLERY_INTERNAL_H
#define FFU_GALLERY_INTERNAL_H

#include <stdint.h>

#include "facefuse/gallery.h"

/* Caps that bound what a file (or a caller) can make us allocate. docs/GALLERY.md
 * lists them; the file reader checks each before allocating. */
#define GALLERY_MAX_DIM FFU_FACE_MAX_EMBED
#define GALLERY_MAX_IDENTITIES (1 << 20)
#define GALLERY_MAX_TEMPLATES (1 << 22)
#define GALLERY_MAX_TEMPLATE_BYTES ((uint64_t)1 << 31) /* all templates' floats */
#define GALLERY_MODEL_MAX 256                           /* bytes, NUL included */
#define GALLERY_SOURCE_MAX 4096                         /* bytes, NUL included */

typedef struct gallery_identity {
    char name[FFU_GALLERY_NAME_MAX];
    int first, count; /* rows of the template matrix */
} gallery_identity;

struct ffu_gallery {
    const ffu_class *cls; /* first: log lines name the gallery */
    int dim;
    char model[GALLERY_MODEL_MAX];
    gallery_identity *ids;
    int nid, id_cap;
    float *tpl;     /* ntpl x dim, aligned to 64 bytes */
    char **src;     /* ntpl sources, owned, NULL when unknown */
    int ntpl, tpl_cap;
    int *hash;      /* open addressing over names: identity index or -1 */
    int hash_cap;   /* a power of two, at least twice nid; 0 before the first name */
    ffu_gallery_progress_fn progress; /* ffu_gallery_set_progress */
    void *progress_user;
};

/* Checks an identity name or model name of len bytes: 1..max-1 bytes (max counts the
 * NUL), no control characters (bytes below 0x20, 0x7f; so no NUL inside either).
 * Returns NULL when fine, else a short reason ("empty", "too long", ...). */
const char *gallery_check_name(const char *s, size_t len, size_t max);

/* Makes room for `more_ids` new identities and `more_tpl` new templates so the next
 * gallery_insert calls cannot fail. */
ffu_status gallery_reserve(ffu_gallery *g, int more_ids, int more_tpl);

/* Inserts one already-normalised template for `name` (checked by the caller), taking
 * ownership of `src` (may be NULL). Needs room reserved; never fails then. Returns
 * the identity's index. */
int gallery_insert(ffu_gallery *g, const char *name, size_t name_len, const float *unit,
                   char *src);

/* Writes the L2-normalised copy of v into out; 0 when v is all zero or not finite. */
int gallery_normalize(const float *v, int dim, float *out);

/* CRC-32 (IEEE, as zlib's crc32): start with crc = 0, feed the result back to continue. */
uint32_t gallery_crc32(uint32_t crc, const void *data, size_t len);

/* The search kernels: sims[r] = dot(probe, row r) for the n rows of dim floats at
 * rows. The plain C one is the reference; the AVX2 + FMA one (gallery_avx2.c) runs
 * when the CPU has both. gallery_dot_c is the plain dot product of one pair. */
float gallery_dot_c(const float *a, const float *b, int n);
void gallery_dots_c(const float *probe, const float *rows, int n, int dim, float *sims);
void gallery_dots_avx2(const float *probe, const float *rows, int n, int dim, float *sims);
typedef void (*gallery_dots_fn)(const float *probe, const float *rows, int n, int dim,
                                float *sims);
/* The kernel for this CPU (FFU_CPU_MASK respected). */
gallery_dots_fn gallery_dots_pick(void);

#endif
