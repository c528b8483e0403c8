/* Private interface of the built-in mesh swapper: the FaceMesh-468 index sets it uses
 * (face oval, lips, eyes), the fixed triangulation and the canonical layout it was
 * computed from (mesh_tables.c, written by tools/swap_mesh), the constrained Delaunay
 * triangulator that computed it (mesh_delaunay.c), and the swapper proper (mesh.c):
 * a source texture pyramid built once per source, and per-thread scratch that swaps one
 * target face in a frame's region of interest. swap.c owns selection and dispatch. */
#ifndef FFU_SWAP_MESH_INTERNAL_H
#define FFU_SWAP_MESH_INTERNAL_H

#include <stdint.h>

#include "facefuse/swap.h"

#define MESH_N 468

/* ---- FaceMesh index sets (facts about the model's output, mesh_index.c) ---------- */

/* The face oval (MediaPipe's silhouette), a closed ring in drawing order. */
#define MESH_OVAL_N 36
extern const short mesh_oval[MESH_OVAL_N];
/* Inner lip contour (the mouth opening), outer lip contour, and the eye openings
 * (subject's right = image-left, then subject's left), closed rings. */
#define MESH_LIPS_N 20
extern const short mesh_lips_inner[MESH_LIPS_N];
extern const short mesh_lips_outer[MESH_LIPS_N];
#define MESH_EYE_N 16
extern const short mesh_eye_right[MESH_EYE_N];
extern const short mesh_eye_left[MESH_EYE_N];
/* Upper edges of the eyebrows (subject's right, left). */
#define MESH_BROW_N 5
extern const short mesh_brow_right[MESH_BROW_N];
extern const short mesh_brow_left[MESH_BROW_N];

/* ---- the fixed triangulation (mesh_tables.c, generated) ------------------------------ */

/* Canonical frontal layout: the mean of FaceMesh points over near-frontal real faces
 * (tools/swap_mesh), x, y in units of 1/10000 of the oval's width, origin at the
 * oval's bounding-box corner. */
extern const int16_t mesh_layout[MESH_N * 2];
/* Triangles (index triples into the 468 points) of the constrained Delaunay
 * triangulation of mesh_layout: every ring above is a chain of edges; only triangles
 * inside the oval are kept. */
extern const int16_t mesh_tris[][3];
extern const int mesh_tri_count;

/* ---- the triangulator (mesh_delaunay.c) ----------------------------------------------- */

/* One closed ring of point indices that must appear as edges. */
typedef struct mesh_ring {
    const short *idx;
    int n;
} mesh_ring;

/* Delaunay triangulation of n points (xy interleaved, doubles; Bowyer-Watson), then
 * every ring's edges forced in by edge flips (Sloan), then Delaunay restored for the
 * edges not on a ring (Lawson flips), and finally only the triangles inside rings[0]
 * kept. Triangles are returned counter-clockwise in a y-up frame (cross product > 0),
 * sorted (smallest index first in each, then lexicographically), so the output does not
 * depend on how it was reached. *tri is malloc'ed (3 ints per triangle).
 * FFU_ERR_INVALID for duplicate points, a point on a ring edge it is not part of, or a
 * ring that cannot be forced. */
ffu_status mesh_triangulate(const double *xy, int n, const mesh_ring *rings, int n_rings, int **tri,
                            int *n_tri);
/* The rings of the swapper's triangulation: oval first, then inner and outer lips,
 * right and left eye. */
#define MESH_RINGS 5
void mesh_rings(mesh_ring rings[MESH_RINGS]);

/* ---- the swapper (mesh.c) -------------------------------------------------------------- */

#define MESH_LEVELS 5

/* The source face as texture: a crop around its face oval at decreasing scales (level 0
 * has an oval at most MESH_TEX_MAX px wide, each next level half of the previous), with
 * the 468 points in each level's pixel-centre coordinates, and the region mask drawn in
 * the source (the oval with a lowered forehead, feathered inwards): warped with the
 * texture, it keeps whatever lies at the source's silhouette (background, ears, hair)
 * out of the result however much the target's pose stretches that strip. */
typedef struct mesh_level {
    ffu_image tex;   /* RGB24 */
    ffu_image alpha; /* GRAY8, tex's size: where the texture may show (region mask) */
    float xy[MESH_N * 2];
    float oval_width;
} mesh_level;

typedef struct mesh_source {
    int levels; /* 0 = no source */
    mesh_level lv[MESH_LEVELS];
} mesh_source;

/* Builds the texture pyramid from img (RGB24) and its face (468+ landmarks). */
ffu_status mesh_source_build(const ffu_image *img, const ffu_face *face, mesh_source *out);
ffu_status mesh_source_copy(const mesh_source *src, mesh_source *dst);
void mesh_source_free(mesh_source *s); /* zeroed: no-op */

typedef struct mesh_swapper mesh_swapper;

typedef struct mesh_opts {
    int keep_mouth, keep_eyes;
    ffu_swap_colour colour;
    ffu_swap_blend blend;
} mesh_opts;

ffu_status mesh_swapper_create(const mesh_opts *o, mesh_swapper **out);
void mesh_swapper_destroy(mesh_swapper *m);
/* Swaps src onto target (468+ landmarks in frame coordinates) in frame (RGB24), writing
 * only inside the target's region of interest (the oval's bounding box plus 2 px,
 * clipped). Adds the stage times to t (warp, mask, colour, blend). */
ffu_status mesh_swap_face(mesh_swapper *m, const mesh_source *src, ffu_image *frame,
                          const ffu_face *target, ffu_swap_timing *t);

/* Region mask in an aligned crop (for the ONNX swappers' FFU_SWAP_MASK_REGION): the
 * face oval of face's landmarks mapped by fwd (frame -> crop, continuous coordinates),
 * minus the mouth opening and eyes when asked, feathered inwards by a Gaussian of
 * sigma = blur x the oval's width (0 = a hard edge). mask and tmp are GRAY8 size x size
 * (allocated when empty or of another size; tmp is scratch). Needs 468+ landmarks
 * (FFU_ERR_INVALID otherwise). */
ffu_status mesh_region_mask_crop(const ffu_face *face, const double fwd[6], int size,
                                 int keep_mouth, int keep_eyes, float blur, ffu_image *mask,
                                 ffu_image *tmp);

/* Oval bounding box of a face with 468+ landmarks (continuous coordinates): x0, y0, x1,
 * y1; returns the oval's width. */
float mesh_oval_bounds(const float *landmarks, float box[4]);

#endif
