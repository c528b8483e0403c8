// OpenCV peer for bench_image.c: the same operations through cv::resize and
// cv::warpAffine on one thread, behind a C interface so the C driver can time them
// in the same process on the same buffers.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdint>

extern "C" {

void peer_cv_init(void) { cv::setNumThreads(1); }

const char *peer_cv_version(void) { return CV_VERSION; }

// interp: 0 = INTER_LINEAR, 1 = INTER_AREA. Packed u8 with cn channels.
void peer_cv_resize(const uint8_t *src, int sw, int sh, int sstride, uint8_t *dst, int dw,
                    int dh, int dstride, int cn, int interp)
{
    cv::Mat s(sh, sw, CV_8UC(cn), const_cast<uint8_t *>(src), (size_t)sstride);
    cv::Mat d(dh, dw, CV_8UC(cn), dst, (size_t)dstride);
    cv::resize(s, d, d.size(), 0, 0, interp ? cv::INTER_AREA : cv::INTER_LINEAR);
}

// m maps destination pixels to source positions (facefuse's convention), hence
// WARP_INVERSE_MAP. Bilinear, constant border 0.
void peer_cv_warp(const uint8_t *src, int sw, int sh, int sstride, uint8_t *dst, int dw,
                  int dh, int dstride, int cn, const double m[6])
{
    cv::Mat s(sh, sw, CV_8UC(cn), const_cast<uint8_t *>(src), (size_t)sstride);
    cv::Mat d(dh, dw, CV_8UC(cn), dst, (size_t)dstride);
    cv::Mat M(2, 3, CV_64F, const_cast<double *>(m));
    cv::warpAffine(s, d, M, d.size(), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP,
                   cv::BORDER_CONSTANT, cv::Scalar::all(0));
}

} // extern "C"
