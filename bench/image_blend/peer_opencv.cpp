// OpenCV peer for bench_blend.c: Gaussian blur, seamless cloning and the per-triangle
// piecewise warp that face-swap code usually writes with OpenCV (bounding box crop,
// getAffineTransform, warpAffine of the box, fillConvexPoly mask, masked copy), on one
// thread, behind a C interface so the C driver times them on the same buffers.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/photo.hpp>

#include <cstdint>
#include <vector>

extern "C" {

void peer_cv_init(void) { cv::setNumThreads(1); }

const char *peer_cv_version(void) { return CV_VERSION; }

void peer_cv_blur(const uint8_t *src, uint8_t *dst, int w, int h, int sstride, int dstride,
                  double sigma)
{
    cv::Mat s(h, w, CV_8UC1, const_cast<uint8_t *>(src), (size_t)sstride);
    cv::Mat d(h, w, CV_8UC1, dst, (size_t)dstride);
    cv::GaussianBlur(s, d, cv::Size(0, 0), sigma, sigma, cv::BORDER_REFLECT_101);
}

// src and mask sw x sh, dst and out dw x dh, 3 channels; (px, py) = centre of the mask's
// bounding box in dst, as seamlessClone wants.
void peer_cv_seamless_clone(const uint8_t *src, int sw, int sh, int sstride,
                            const uint8_t *mask, int mstride, const uint8_t *dst, int dw,
                            int dh, int dstride, int px, int py, uint8_t *out, int ostride)
{
    cv::Mat s(sh, sw, CV_8UC3, const_cast<uint8_t *>(src), (size_t)sstride);
    cv::Mat m(sh, sw, CV_8UC1, const_cast<uint8_t *>(mask), (size_t)mstride);
    cv::Mat d(dh, dw, CV_8UC3, const_cast<uint8_t *>(dst), (size_t)dstride);
    cv::Mat o(dh, dw, CV_8UC3, out, (size_t)ostride);
    cv::seamlessClone(s, d, m, cv::Point(px, py), o, cv::NORMAL_CLONE);
}

// Warps src into dst triangle by triangle (3 channels).
void peer_cv_warp_triangles(const uint8_t *src, int sw, int sh, int sstride, uint8_t *dst,
                            int dw, int dh, int dstride, const float *sxy, const float *dxy,
                            const int *tri, int ntri)
{
    cv::Mat s(sh, sw, CV_8UC3, const_cast<uint8_t *>(src), (size_t)sstride);
    cv::Mat d(dh, dw, CV_8UC3, dst, (size_t)dstride);
    cv::Rect simg(0, 0, sw, sh), dimg(0, 0, dw, dh);
    for (int t = 0; t < ntri; t++) {
        std::vector<cv::Point2f> t1(3), t2(3);
        for (int k = 0; k < 3; k++) {
            t1[k] = cv::Point2f(sxy[2 * tri[3 * t + k]], sxy[2 * tri[3 * t + k] + 1]);
            t2[k] = cv::Point2f(dxy[2 * tri[3 * t + k]], dxy[2 * tri[3 * t + k] + 1]);
        }
        cv::Rect r1 = cv::boundingRect(t1) & simg, r2 = cv::boundingRect(t2) & dimg;
        if (r1.empty() || r2.empty()) continue;
        std::vector<cv::Point2f> t1r(3), t2r(3);
        std::vector<cv::Point> t2i(3);
        for (int k = 0; k < 3; k++) {
            t1r[k] = t1[k] - cv::Point2f((float)r1.x, (float)r1.y);
            t2r[k] = t2[k] - cv::Point2f((float)r2.x, (float)r2.y);
            t2i[k] = cv::Point(cvRound(t2r[k].x), cvRound(t2r[k].y));
        }
        cv::Mat m = cv::getAffineTransform(t1r, t2r);
        cv::Mat patch;
        cv::warpAffine(s(r1), patch, m, r2.size(), cv::INTER_LINEAR, cv::BORDER_REFLECT_101);
        cv::Mat mask = cv::Mat::zeros(r2.height, r2.width, CV_8UC1);
        cv::fillConvexPoly(mask, t2i, cv::Scalar(255), cv::LINE_8, 0);
        patch.copyTo(d(r2), mask);
    }
}

} // extern "C"
