/* facefuse gallery: a set of named identities, each with one or more face templates
 * (L2-normalised embeddings), and the search that matches a probe embedding against it.
 * A watchlist is a gallery: load it from a directory (one sub-directory of photos per
 * person; the largest face of each photo is enrolled) or from a gallery file written by
 * ffu_gallery_save (binary, versioned, checksummed; the loader rejects malformed files
 * with a clear error and is fuzzed). Embeddings of one gallery all come from one
 * embedder (its name and dimension are stored and checked).
 *
 * Thread-safety: search and the getters may run on many threads at once; add, remove
 * and load need exclusive access. */
#ifndef FACEFUSE_GALLERY_H
#define FACEFUSE_GALLERY_H

#include "core.h"
#include "face.h"
#include "gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FFU_GALLERY_NAME_MAX 128 /* bytes of an identity name, NUL included */

typedef struct ffu_gallery ffu_gallery;

/* An empty gallery for embeddings of `dim` floats from the embedder called `model`
 * (zoo name or spec, copied; used to refuse mixing embedders). */
FFU_API ffu_status ffu_gallery_create(int dim, const char *model, ffu_gallery **out);
FFU_API void ffu_gallery_destroy(ffu_gallery *g);

FFU_API int ffu_gallery_dim(const ffu_gallery *g);
FFU_API const char *ffu_gallery_model(const ffu_gallery *g);
FFU_API int ffu_gallery_identity_count(const ffu_gallery *g);
FFU_API int ffu_gallery_template_count(const ffu_gallery *g); /* over all identities */
/* Name of identity i (0..count-1), NULL when out of range. */
FFU_API const char *ffu_gallery_name(const ffu_gallery *g, int identity);
/* Index of the identity called name, -1 when absent. */
FFU_API int ffu_gallery_find(const ffu_gallery *g, const char *name);

/* Adds one template (dim floats, normalised here) to the identity `name`, creating it
 * when new; *identity (may be NULL) gets its index. `source` (may be NULL) records
 * where it came from (a photo path), copied. */
FFU_API ffu_status ffu_gallery_add(ffu_gallery *g, const char *name, const float *embedding,
                                   const char *source, int *identity);

/* One search answer. */
typedef struct ffu_gallery_match {
    int identity;     /* index, -1 when the gallery is empty */
    float similarity; /* cosine similarity: max over the identity's templates */
} ffu_gallery_match;

/* The k best identities (each identity once, best template) for a probe of dim floats,
 * highest similarity first. Returns how many were written (min(k, identities)). */
FFU_API int ffu_gallery_search(const ffu_gallery *g, const float *probe, ffu_gallery_match *out,
                               int k);

/* Enrols a directory: every sub-directory is one identity named after it, every
 * JPEG/PNG inside one template (largest face; photos with no face are skipped with a
 * warning and counted in *skipped, may be NULL). Also accepts files directly in dir
 * named "Name.jpg" / "Name_2.png" (identity = name up to the last '_' + digits).
 * The analyzer must have FFU_STAGE_EMBED (and landmarks if the embedder needs them);
 * the gallery's dim and model must match its embedder. FFU_ERR_NOT_FOUND when dir has
 * no photo at all. */
FFU_API ffu_status ffu_gallery_enroll_dir(ffu_gallery *g, ffu_analyzer *a, const char *dir,
                                          int *skipped);
/* Called by ffu_gallery_enroll_dir on its thread after each photo (enrolled or skipped):
 * `done` of the `total` photos it found. */
typedef void (*ffu_gallery_progress_fn)(void *user, int done, int total);
/* fn NULL: none (the default). */
FFU_API void ffu_gallery_set_progress(ffu_gallery *g, ffu_gallery_progress_fn fn, void *user);

/* Gallery files ("FFGL" magic, version, model, dim, identities, templates, CRC-32).
 * save writes a temporary file and renames it into place. load creates a new gallery;
 * FFU_ERR_FORMAT names what is wrong with a damaged file. */
FFU_API ffu_status ffu_gallery_save(const ffu_gallery *g, const char *path);
FFU_API ffu_status ffu_gallery_load(const char *path, ffu_gallery **out);
FFU_API ffu_status ffu_gallery_load_memory(const void *data, size_t size, ffu_gallery **out);

/* ---- GPU search (src/gallery/gallery_gpu.c, src/gallery/cuda/) ----------------------
 * A device-resident snapshot of a gallery on one ffu_gpu and a batched search: cosine
 * similarities of a batch of probes against every template (a tiled kernel, fp32
 * accumulation), each identity's max, and each probe's top k on the device. Answers
 * use ffu_gallery_match and follow ffu_gallery_search's rules (identity order, ties by
 * lower index, clamping, -1 fill), so a caller can switch between the two.
 *
 * Snapshot, not live: the device copy is taken at create and refreshed only by
 * ffu_gallery_gpu_sync (a full re-upload). Identity indices never change in a gallery,
 * so a stale snapshot still names the right people; it just does not know templates
 * added since. Without CUDA in the build, or without a device, create fails
 * (FFU_ERR_UNSUPPORTED / FFU_ERR_DEVICE) and callers keep using ffu_gallery_search.
 *
 * Threads: any number of threads may search one ffu_gallery_gpu at once (each with its
 * own stream, or none); sync needs exclusive access, like ffu_gallery_add. */
typedef struct ffu_gallery_gpu ffu_gallery_gpu;

typedef enum ffu_gallery_gpu_storage {
    FFU_GALLERY_GPU_F32 = 0, /* templates as float: similarities within rounding of the CPU's */
    FFU_GALLERY_GPU_F16,     /* IEEE half: half the memory and bandwidth, |error| < 5e-4 */
    FFU_GALLERY_GPU_STORAGE_COUNT
} ffu_gallery_gpu_storage;

/* The largest k of a GPU search. */
#define FFU_GALLERY_GPU_MAX_K 1024

/* Uploads g to the device of gpu (borrowed: keep it open until destroy). g is only
 * read during the call. */
FFU_API ffu_status ffu_gallery_gpu_create(ffu_gpu *gpu, const ffu_gallery *g,
                                          ffu_gallery_gpu_storage storage,
                                          ffu_gallery_gpu **out);
FFU_API void ffu_gallery_gpu_destroy(ffu_gallery_gpu *gg); /* NULL is a no-op */
/* Re-uploads g (the same gallery or another of the same dim) in place; on error the
 * previous snapshot is kept. */
FFU_API ffu_status ffu_gallery_gpu_sync(ffu_gallery_gpu *gg, const ffu_gallery *g);
FFU_API int ffu_gallery_gpu_identity_count(const ffu_gallery_gpu *gg); /* of the snapshot */
FFU_API int ffu_gallery_gpu_template_count(const ffu_gallery_gpu *gg);
FFU_API int ffu_gallery_gpu_dim(const ffu_gallery_gpu *gg);

/* Searches nq probes of dim floats each (row q at probes + q*dim, unnormalised like
 * ffu_gallery_search's probe). probes, out and counts may be host or device memory
 * (CUDA's unified addressing tells them apart), so embeddings the engine left on the
 * device are searched where they are. out gets nq * k answers (query q at out + q*k,
 * ranked as ffu_gallery_search ranks them); counts (may be NULL) gets each query's
 * number of answers: min(k, identities), 0 for an empty gallery or a zero / non-finite
 * probe. Work is queued on s (NULL: the default stream); the call returns when the
 * answers are written. Scratch memory comes from the gpu's pool (reused, not
 * reallocated, in steady state). 1 <= k <= FFU_GALLERY_GPU_MAX_K; nq == 0 does nothing.
 * On error the contents of out and counts are undefined. */
FFU_API ffu_status ffu_gallery_gpu_search(ffu_gallery_gpu *gg, ffu_gpu_stream *s,
                                          const float *probes, int nq, int k,
                                          ffu_gallery_match *out, int *counts);

#ifdef __cplusplus
}
#endif
#endif
