/* Private helpers of the landmark, liveness, attribute and quality stages: the
 * rotation-normalised square face crop they all feed their models from, the roll of a
 * face, and the FaceMesh -> iBUG 68 index table (for evaluation and for five points).
 * Implemented in landmark.c. */
#ifndef FFU_FACE_LANDMARK_INTERNAL_H
#define FFU_FACE_LANDMARK_INTERNAL_H

#include "face_internal.h"

/* Roll of a face in radians: the angle of the vector from kps[0] (the subject's right
 * eye, image-left when upright) to kps[1]; 0 when the keypoints are missing or
 * degenerate (all zero, not finite, coincident). */
double face_roll(const ffu_face *f);

/* The crop the human-models attribute and liveness nets were trained on (FaceMesh's
 * face crop): square, `scale` times the longer side of face->box, centred on the box,
 * rotated so the eyes are level. */
void face_box_roi_map(const ffu_face *f, double scale, int in_w, int in_h, double m[6]);

/* Mesh index used for each iBUG 68 point (jaw points are approximate: the mesh
 * outline does not follow the 300-W jaw convention). */
extern const short face_mesh_to_ibug68[68];

/* The face a detector would hand over, made from 68 true points (x, y pairs) so that a
 * landmark evaluation does not depend on a detector: box = the points' bounding box,
 * keypoints by the rule above, other fields "not computed"; f->landmarks (a list slot's
 * buffer) is kept. */
void landmark_face_from_68(const float *xy, ffu_face *f);

/* Checks the image the face stages take and the face's box; FFU_OK or an error set. */
ffu_status face_check_input(const ffu_image *img, const ffu_face *f, const char *who);

#endif
