/* Small clear faces in a 1080p frame (eval_run.h "small faces"): the frames and the
 * matching behind `facefuse eval small-faces` and the min_face test. A face photo's
 * face is cut out once, then shrunk to the size under test and pasted into a grid over
 * a face-free background, so every face of a frame is the same size and its box is
 * known exactly. */
#include <math.h>
#include <string.h>

#include "eval_run.h"
#include "face_internal.h"
#include "facefuse/image.h"

/* Cuts faces->faces[pick] out of photo (RGB24; faces: what a detector found there).
 * FFU_ERR_NOT_FOUND when another of the faces reaches into the square: a second face
 * in a cut would count as a false detection in the frame. */
static ffu_status small_face_cut(const ffu_image *photo, const ffu_face_list *faces, int pick,
                                 small_face *out)
{
    memset(out, 0, sizeof *out);
    if (!photo || !faces || pick < 0 || pick >= faces->count || photo->fmt != FFU_PIX_RGB24 ||
        !(faces->faces[pick].box[2] > 0) || !(faces->faces[pick].box[3] > 0))
        return ffu_error_set(FFU_ERR_INVALID, "small_face_cut: an RGB24 photo and a face");
    const float *box = faces->faces[pick].box;
    float side = fmaxf(box[2], box[3]), cx = box[0] + box[2] / 2, cy = box[1] + box[3] / 2;
    int cs = (int)ceilf(2 * side);
    int x0 = (int)lroundf(cx - cs / 2.f), y0 = (int)lroundf(cy - cs / 2.f);
    for (int i = 0; i < faces->count; i++) {
        const float *b = faces->faces[i].box;
        if (i != pick && b[0] < x0 + cs && b[0] + b[2] > x0 && b[1] < y0 + cs && b[1] + b[3] > y0)
            return ffu_error_set(FFU_ERR_NOT_FOUND, "another face reaches into the cut");
    }
    const uint8_t grey[4] = {128, 128, 128, 255};
    ffu_status st = ffu_image_create(&out->cut, FFU_PIX_RGB24, cs, cs);
    if (!st) st = ffu_image_crop_pad(photo, &out->cut, x0, y0, grey);
    if (st) {
        small_face_release(out);
        return st;
    }
    out->box[0] = box[0] - x0;
    out->box[1] = box[1] - y0;
    out->box[2] = box[2];
    out->box[3] = box[3];
    return FFU_OK;
}

void small_face_release(small_face *f)
{
    if (f) ffu_image_release(&f->cut);
}

ffu_status small_faces_from_lfw(const lfw_pairs *p, ffu_detector *det, int photos, int cap,
                                small_face *faces, int *n)
{
    *n = 0;
    if (!p || !det || photos < 0 || cap < 0 || (cap && !faces))
        return ffu_error_set(FFU_ERR_INVALID, "small_faces_from_lfw: pairs, a detector, room");
    if (photos > p->count) photos = p->count;
    ffu_image photo = {0};
    ffu_face_list l = {0};
    ffu_status st = FFU_OK;
    for (int i = 0; i < photos && *n < cap && !st; i++) {
        char path[4096];
        st = lfw_pair_path(p, (int)((int64_t)i * p->count / photos), 0, path, sizeof path);
        if (!st) st = ffu_image_load(path, FFU_PIX_RGB24, &photo);
        if (!st) st = ffu_detector_detect(det, &photo, &l);
        if (!st) {
            int pick = lfw_pick_face(&l, photo.width, photo.height);
            ffu_status cut =
                pick < 0 ? FFU_ERR_NOT_FOUND : small_face_cut(&photo, &l, pick, &faces[*n]);
            if (cut == FFU_OK)
                ++*n;
            else if (cut == FFU_ERR_NOT_FOUND) /* no face, or not alone: left out */
                ffu_error_clear();
            else
                st = cut;
        }
        ffu_image_release(&photo);
    }
    ffu_face_list_free(&l);
    if (st) {
        for (int i = 0; i < *n; i++)
            small_face_release(&faces[i]);
        *n = 0;
    }
    return st;
}

static uint32_t next_rand(uint32_t *s) /* xorshift32: positions repeat with the seed */
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

ffu_status small_faces_frame(const ffu_image *bg, const small_face *faces, int n, int side,
                             uint32_t seed, ffu_image *frame, float (*gt)[4])
{
    if (!bg || bg->fmt != FFU_PIX_RGB24 || !frame || n < 0 || n > SMALL_PER_FRAME ||
        (n && (!faces || !gt)) || side < 2 || side > SMALL_MAX_SIDE)
        return ffu_error_set(FFU_ERR_INVALID,
                             "small_faces_frame: an RGB24 background, up to %d faces, side "
                             "2..%d (got %d faces, side %d)",
                             SMALL_PER_FRAME, SMALL_MAX_SIDE, n, side);
    const int cols = 6, cw = SMALL_FRAME_W / cols, ch = SMALL_FRAME_H / (SMALL_PER_FRAME / cols);
    ffu_status st = ffu_image_create(frame, FFU_PIX_RGB24, SMALL_FRAME_W, SMALL_FRAME_H);
    if (!st) st = ffu_image_resize(bg, frame, FFU_INTERP_BILINEAR);
    uint32_t rs = seed ? seed : 1;
    ffu_image small = {0};
    for (int i = 0; i < n && !st; i++) {
        const small_face *f = &faces[i];
        float k = side / fmaxf(f->box[2], f->box[3]);
        int ss = (int)lroundf(f->cut.width * k);
        if (ss < 1) ss = 1;
        if (ss > ch) ss = ch; /* a cut a little over 2 * SMALL_MAX_SIDE after rounding */
        k = (float)ss / f->cut.width;
        if ((st = ffu_image_create(&small, FFU_PIX_RGB24, ss, ss)) ||
            (st = ffu_image_resize(&f->cut, &small, FFU_INTERP_AREA)))
            break;
        int px = (i % cols) * cw + (int)(next_rand(&rs) % (uint32_t)(cw - ss + 1));
        int py = (i / cols) * ch + (int)(next_rand(&rs) % (uint32_t)(ch - ss + 1));
        for (int y = 0; y < ss; y++)
            memcpy(frame->data[0] + (size_t)(py + y) * frame->stride[0] + (size_t)px * 3,
                   small.data[0] + (size_t)y * small.stride[0], (size_t)ss * 3);
        gt[i][0] = px + f->box[0] * k;
        gt[i][1] = py + f->box[1] * k;
        gt[i][2] = f->box[2] * k;
        gt[i][3] = f->box[3] * k;
        ffu_image_release(&small);
    }
    ffu_image_release(&small);
    if (st) ffu_image_release(frame);
    return st;
}

void small_faces_match(const ffu_face_list *l, const float (*gt)[4], int n, int *found,
                       int *false_dets)
{
    unsigned char taken[SMALL_PER_FRAME] = {0};
    *found = *false_dets = 0;
    for (int j = 0; l && j < l->count; j++) {
        int best = -1;
        float bo = 0.5f;
        for (int g = 0; g < n && g < SMALL_PER_FRAME; g++) {
            float o = face_box_iou(l->faces[j].box, gt[g]);
            if (!taken[g] && o >= bo) bo = o, best = g;
        }
        if (best < 0) {
            ++*false_dets;
        } else {
            taken[best] = 1;
            ++*found;
        }
    }
}
