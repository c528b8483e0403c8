/* Photo helpers shared by the face GPU tests (test_face_gpu.c runs the kernels'
 * arithmetic on the host, test_face_gpu_device.c the real thing): a shared photo cut to
 * even size, and its NV12 coding with the RGB that NV12 stands for. */
#ifndef FFU_TEST_FACE_GPU_H
#define FFU_TEST_FACE_GPU_H

#include <string.h>

#include "facefuse/image.h"
#include "test.h"

/* The photos both tests use (../shared/data) */
#define PHOTO_TWO "data/face_recognition_examples/examples/two_people.jpg"
#define PHOTO_OBAMA "data/face_recognition_examples/examples/obama.jpg"
#define PHOTO_OBAMA2 "data/face_recognition_examples/examples/obama2.jpg"
#define PHOTO_BIDEN "data/face_recognition_examples/examples/biden.jpg"
#define PHOTO_GROUP "data/dlib_faces/2009_004587.jpg"
#define PHOTO_LFW "data/lfw/images/Aaron_Sorkin/Aaron_Sorkin_0001.jpg"

/* The photo as `fmt` (cut to even size so it also converts to NV12); 0 when absent. */
static int load_photo(const char *rel, ffu_pixfmt fmt, ffu_image *out)
{
    char buf[1024];
    memset(out, 0, sizeof *out);
    const char *path = test_shared_path(rel, buf, sizeof buf);
    ffu_image full, view;
    if (!path || ffu_image_load(path, fmt, &full) != FFU_OK)
        return 0;
    int ok = ffu_image_view(&view, &full, 0, 0, full.width & ~1, full.height & ~1) == FFU_OK &&
             ffu_image_clone(out, &view) == FFU_OK;
    ffu_image_release(&full);
    return ok;
}

/* NV12 of an RGB image, and that NV12 decoded back to RGB (video range): the host
 * image whose pixels an NV12 frame stands for. */
static int to_nv12(const ffu_image *rgb, ffu_image *nv12, ffu_image *back)
{
    memset(nv12, 0, sizeof *nv12);
    memset(back, 0, sizeof *back);
    return ffu_image_create(nv12, FFU_PIX_NV12, rgb->width, rgb->height) == FFU_OK &&
           ffu_image_convert(rgb, nv12) == FFU_OK &&
           ffu_image_create(back, FFU_PIX_RGB24, rgb->width, rgb->height) == FFU_OK &&
           ffu_image_convert(nv12, back) == FFU_OK;
}

#endif
