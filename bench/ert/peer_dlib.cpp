// The peer for bench/ert: dlib 19.24 (Debian libdlib-dev) running its own
// shape_predictor on the pixels our decoder produced, behind a small C interface so
// bench_ert.c can time both in one process with one clock. Two ways in:
//  - peer_dlib_predict: dlib's public call, sp(img, rect), whose parts are integers
//    (dlib rounds them); this is what is timed.
//  - peer_dlib_predict_float: the same cascade through dlib's own impl:: pieces
//    (extract_feature_pixel_values, regression_tree, unnormalizing_tform) on the
//    model read with dlib's deserialize, stopping before the final rounding, so our
//    float points can be compared with dlib's float points.
// Also dlib's HOG frontal face detector, to see which boxes dlib itself would use.
#include <dlib/image_processing.h>
#include <dlib/image_processing/frontal_face_detector.h>
#include <dlib/image_transforms.h>

#include <cstdio>
#include <fstream>
#include <string>

using namespace dlib;

struct peer_dlib {
    shape_predictor sp;
    matrix<float, 0, 1> initial;
    std::vector<std::vector<impl::regression_tree>> forests;
    std::vector<std::vector<unsigned long>> anchor_idx;
    std::vector<std::vector<dlib::vector<float, 2>>> deltas;
    frontal_face_detector hog = get_frontal_face_detector();
};

struct peer_dlib_image {
    array2d<rgb_pixel> img;
};

extern "C" {

peer_dlib *peer_dlib_load(const char *path, char *err, size_t errlen)
{
    try {
        peer_dlib *p = new peer_dlib;
        deserialize(path) >> p->sp;
        std::ifstream in(path, std::ios::binary);
        int version = 0;
        deserialize(version, in);
        deserialize(p->initial, in);
        deserialize(p->forests, in);
        deserialize(p->anchor_idx, in);
        deserialize(p->deltas, in);
        return p;
    } catch (std::exception &e) {
        snprintf(err, errlen, "%s", e.what());
        return nullptr;
    }
}

void peer_dlib_free(peer_dlib *p)
{
    delete p;
}

peer_dlib_image *peer_dlib_image_new(const unsigned char *rgb, int w, int h, int stride)
{
    peer_dlib_image *im = new peer_dlib_image;
    im->img.set_size(h, w);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const unsigned char *q = rgb + (size_t)y * stride + 3 * x;
            im->img[y][x] = rgb_pixel(q[0], q[1], q[2]);
        }
    return im;
}

void peer_dlib_image_free(peer_dlib_image *im)
{
    delete im;
}

// box: left, top, width, height (dlib: right = left + width - 1)
static rectangle rect_of(const long box[4])
{
    return rectangle(box[0], box[1], box[0] + box[2] - 1, box[1] + box[3] - 1);
}

int peer_dlib_predict(const peer_dlib *p, const peer_dlib_image *im, const long box[4], long *pts)
{
    full_object_detection d = p->sp(im->img, rect_of(box));
    for (unsigned long i = 0; i < d.num_parts(); i++) {
        pts[2 * i] = d.part(i).x();
        pts[2 * i + 1] = d.part(i).y();
    }
    return (int)d.num_parts();
}

int peer_dlib_predict_float(const peer_dlib *p, const peer_dlib_image *im, const long box[4],
                            double *pts)
{
    const rectangle rect = rect_of(box);
    matrix<float, 0, 1> cur = p->initial;
    std::vector<float> pix;
    for (unsigned long c = 0; c < p->forests.size(); c++) {
        impl::extract_feature_pixel_values(im->img, rect, cur, p->initial, p->anchor_idx[c],
                                           p->deltas[c], pix);
        unsigned long leaf;
        for (unsigned long t = 0; t < p->forests[c].size(); t++) cur += p->forests[c][t](pix, leaf);
    }
    const point_transform_affine to_img = impl::unnormalizing_tform(rect);
    for (long i = 0; i < cur.size() / 2; i++) {
        dpoint q = to_img(impl::location(cur, i));
        pts[2 * i] = q.x();
        pts[2 * i + 1] = q.y();
    }
    return (int)(cur.size() / 2);
}

// HOG detections (left, top, width, height), best first; `upsample` pyramid_up steps
// as dlib's examples do for small faces. Returns the count (at most max).
int peer_dlib_detect(peer_dlib *p, const peer_dlib_image *im, int upsample, long *boxes, int max)
{
    array2d<rgb_pixel> img;
    assign_image(img, im->img);
    for (int i = 0; i < upsample; i++) pyramid_up(img);
    std::vector<rectangle> dets = p->hog(img);
    int n = 0;
    for (auto r : dets) {
        if (n >= max) break;
        // back to the original image's coordinates
        for (int i = 0; i < upsample; i++) {
            pyramid_down<2> pd;
            r = pd.rect_down(r);
        }
        boxes[4 * n] = r.left();
        boxes[4 * n + 1] = r.top();
        boxes[4 * n + 2] = r.width();
        boxes[4 * n + 3] = r.height();
        n++;
    }
    return n;
}

} // extern "C"
