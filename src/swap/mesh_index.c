/* The FaceMesh-468 index sets the mesh swapper needs: the face oval (MediaPipe's
 * silhouette), the lip contours and the eye openings, as closed rings. These are facts
 * about the model's output (which point is where on a face), as documented by MediaPipe;
 * the rings constrain the triangulation (mesh_delaunay.c) and shape the region mask
 * (mesh.c). Order: each ring goes once round its contour. */
#include "mesh_internal.h"

const short mesh_oval[MESH_OVAL_N] = {
    10,  338, 297, 332, 284, 251, 389, 356, 454, 323, 361, 288, 397, 365, 379, 378, 400, 377,
    152, 148, 176, 149, 150, 136, 172, 58,  132, 93,  234, 127, 162, 21,  54,  103, 67,  109,
};

/* upper inner lip from the left corner 78 to the right corner 308, then the lower one
 * back */
const short mesh_lips_inner[MESH_LIPS_N] = {
    78, 191, 80, 81, 82, 13, 312, 311, 310, 415, 308, 324, 318, 402, 317, 14, 87, 178, 88, 95,
};

const short mesh_lips_outer[MESH_LIPS_N] = {
    61, 185, 40, 39, 37, 0, 267, 269, 270, 409, 291, 375, 321, 405, 314, 17, 84, 181, 91, 146,
};

/* subject's right eye (image-left when upright): outer corner 33, lower lid to the
 * inner corner 133, upper lid back */
const short mesh_eye_right[MESH_EYE_N] = {
    33, 7, 163, 144, 145, 153, 154, 155, 133, 173, 157, 158, 159, 160, 161, 246,
};

const short mesh_eye_left[MESH_EYE_N] = {
    263, 249, 390, 373, 374, 380, 381, 382, 362, 398, 384, 385, 386, 387, 388, 466,
};

void mesh_rings(mesh_ring rings[MESH_RINGS])
{
    rings[0] = (mesh_ring){mesh_oval, MESH_OVAL_N};
    rings[1] = (mesh_ring){mesh_lips_inner, MESH_LIPS_N};
    rings[2] = (mesh_ring){mesh_lips_outer, MESH_LIPS_N};
    rings[3] = (mesh_ring){mesh_eye_right, MESH_EYE_N};
    rings[4] = (mesh_ring){mesh_eye_left, MESH_EYE_N};
}

/* upper edge of each eyebrow, outer to inner */
const short mesh_brow_right[MESH_BROW_N] = {70, 63, 105, 66, 107};
const short mesh_brow_left[MESH_BROW_N] = {300, 293, 334, 296, 336};
