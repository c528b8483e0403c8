/* The CUDA bilinear resize twin against the CPU resize on odd sizes (within +-1; the
 * numbers are designed to be identical). Skipped when no CUDA device is usable, which
 * also proves that asking for devices without a driver or GPU does not crash. */
#include "facefuse/gpu.h"
#include "facefuse/image.h"
#include "image/kernels_internal.h"
#include "test.h"

/* One test, so that without a device the program exits 77 and ctest says "Skipped". */
static void test_cuda_resize(void)
{
    int n = ffu_gpu_device_count();
    CHECK(n >= 0);
    uint8_t hs[12] = {0}, hd[12];
    ffu_status st = ffu_cuda_resize_bilinear_u8(hs, 2, 2, 6, hd, 2, 2, 6, 3);
    if (n == 0) {
        CHECK(st == FFU_ERR_DEVICE || st == FFU_ERR_UNSUPPORTED);
        CHECK(strlen(ffu_error_message()) > 0);
    } else {
        CHECK_EQ_INT(st, FFU_OK);
    }
    /* Bad arguments are refused before any CUDA call. */
    CHECK_EQ_INT(ffu_cuda_resize_bilinear_u8(NULL, 2, 2, 6, hd, 2, 2, 6, 3),
                 n == 0 && st == FFU_ERR_UNSUPPORTED ? FFU_ERR_UNSUPPORTED : FFU_ERR_INVALID);
    if (n == 0) TEST_SKIP("no CUDA device");

    static const int sizes[][4] = {{1, 1, 3, 5},      {3, 7, 17, 13},   {17, 13, 3, 7},
                                   {127, 65, 64, 33}, {1919, 1079, 640, 360},
                                   {640, 360, 1921, 1081}};
    static const ffu_pixfmt fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_RGBA32};
    uint64_t seed = 123;
    for (int f = 0; f < 3; f++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            ffu_image s, cpu, gpu;
            CHECK_EQ_INT(ffu_image_create(&s, fmts[f], sizes[k][0], sizes[k][1]), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&cpu, fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&gpu, fmts[f], sizes[k][2], sizes[k][3]), FFU_OK);
            int cn = ffu_pixfmt_bpp(fmts[f]);
            for (int y = 0; y < s.height; y++)
                for (int x = 0; x < s.width * cn; x++)
                    s.data[0][(size_t)y * s.stride[0] + x] = (uint8_t)(test_rand_u64(&seed) >> 56);
            CHECK_EQ_INT(ffu_image_resize(&s, &cpu, FFU_INTERP_BILINEAR), FFU_OK);
            CHECK_EQ_INT(ffu_cuda_resize_bilinear_u8(s.data[0], s.width, s.height, s.stride[0],
                                                     gpu.data[0], gpu.width, gpu.height,
                                                     gpu.stride[0], cn), FFU_OK);
            int worst = 0;
            for (int y = 0; y < cpu.height; y++)
                for (int x = 0; x < cpu.width * cn; x++) {
                    int d = abs(cpu.data[0][(size_t)y * cpu.stride[0] + x] -
                                gpu.data[0][(size_t)y * gpu.stride[0] + x]);
                    if (d > worst) worst = d;
                }
            if (worst) printf("  %dx%d -> %dx%d cn %d: max diff %d\n", sizes[k][0], sizes[k][1],
                              sizes[k][2], sizes[k][3], cn, worst);
            CHECK(worst <= 1);
            ffu_image_release(&s), ffu_image_release(&cpu), ffu_image_release(&gpu);
        }
}

TEST_MAIN(test_cuda_resize)
