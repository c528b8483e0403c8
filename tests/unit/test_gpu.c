/* The GPU core (gpu.h). Without a device (or without CUDA in the build) every call must
 * fail cleanly with a message, which this checks here; with a device it checks the
 * shared handle, the pool's reuse, copies both ways and device images of every format.
 * The GPU part is skipped (exit 77) where there is no device. */
#include <stdlib.h>

#include "facefuse/gpu.h"
#include "test.h"

static void test_no_device_is_clean(void)
{
    int n = ffu_gpu_device_count();
    CHECK(n >= 0);
    if (n > 0) return;
    ffu_gpu *g = (ffu_gpu *)1;
    ffu_status st = ffu_gpu_open(0, &g);
    CHECK(st == FFU_ERR_DEVICE || st == FFU_ERR_UNSUPPORTED);
    CHECK(g == NULL);
    CHECK(strlen(ffu_error_message()) > 0);
    ffu_gpu_device_info info;
    CHECK(ffu_gpu_device_info_get(0, &info) < 0);
    void *h = (void *)1;
    CHECK(ffu_gpu_host_alloc(64, &h) < 0);
    CHECK(h == NULL);
    ffu_gpu_close(NULL);
    ffu_gpu_stream_destroy(NULL);
    ffu_gpu_image_release(NULL);
}

static void test_device(void)
{
    if (ffu_gpu_device_count() == 0) TEST_SKIP("no CUDA device");
    ffu_gpu_device_info info;
    CHECK_EQ_INT(ffu_gpu_device_info_get(0, &info), FFU_OK);
    CHECK(info.name[0] && info.sm_count > 0 && info.mem_total > 0);
    printf("device 0: %s, cc %d.%d, %d SMs, %zu MiB\n", info.name, info.cc_major,
           info.cc_minor, info.sm_count, info.mem_total >> 20);
    CHECK(ffu_gpu_open(ffu_gpu_device_count(), &(ffu_gpu *){NULL}) == FFU_ERR_NOT_FOUND);

    ffu_gpu *g, *g2;
    CHECK_EQ_INT(ffu_gpu_open(0, &g), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_open(0, &g2), FFU_OK);
    CHECK(g == g2);
    ffu_gpu_close(g2);
    ffu_gpu_stream *s;
    CHECK_EQ_INT(ffu_gpu_stream_create(g, &s), FFU_OK);

    /* Host -> device -> device -> pinned host, on the stream. */
    enum { N = 1 << 20 };
    uint8_t *src = malloc(N), *pinned;
    CHECK_EQ_INT(ffu_gpu_host_alloc(N, (void **)&pinned), FFU_OK);
    uint64_t seed = 1;
    for (int i = 0; i < N; i++) src[i] = (uint8_t)(test_rand_u64(&seed) >> 56);
    void *d1, *d2;
    CHECK_EQ_INT(ffu_gpu_alloc(g, N, &d1), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_alloc(g, N, &d2), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_copy(s, d1, src, N), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_copy(s, d2, d1, N), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_copy(s, pinned, d2, N), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_stream_sync(s), FFU_OK);
    CHECK(memcmp(src, pinned, N) == 0);
    CHECK_EQ_INT(ffu_gpu_memset(s, d1, 0x5a, 4096), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_copy(s, pinned, d1, 4096), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_stream_sync(s), FFU_OK);
    CHECK(pinned[0] == 0x5a && pinned[4095] == 0x5a);
    ffu_gpu_free(g, d1);
    void *d3;
    CHECK_EQ_INT(ffu_gpu_alloc(g, N - 100, &d3), FFU_OK);
    CHECK(d3 == d1); /* same class: reused */
    ffu_gpu_pool_stats st;
    ffu_gpu_pool_get_stats(g, &st);
    CHECK(st.reuses >= 1 && st.device_allocs >= 2);
    ffu_gpu_free(g, d2);
    ffu_gpu_free(g, d3);

    /* s == NULL is synchronous in every direction, also for work queued on a stream
     * right after it (our streams do not wait for the legacy default stream): a large
     * pageable upload, a device-to-device copy and a memset, each read back at once on
     * the stream. */
    {
        enum { BIG = 48 << 20 };
        uint8_t *hbig = malloc(BIG), *back = NULL;
        void *da = NULL, *db = NULL;
        CHECK(hbig != NULL);
        CHECK_EQ_INT(ffu_gpu_host_alloc(BIG, (void **)&back), FFU_OK);
        for (size_t i = 0; i < BIG; i++) hbig[i] = (uint8_t)(i * 2654435761u >> 24);
        CHECK_EQ_INT(ffu_gpu_alloc(g, BIG, &da), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_alloc(g, BIG, &db), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_copy(NULL, da, hbig, BIG), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_copy(s, back, da, BIG), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_stream_sync(s), FFU_OK);
        CHECK(memcmp(back, hbig, BIG) == 0);
        CHECK_EQ_INT(ffu_gpu_copy(NULL, db, da, BIG), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_copy(s, back, db, BIG), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_stream_sync(s), FFU_OK);
        CHECK(memcmp(back, hbig, BIG) == 0);
        CHECK_EQ_INT(ffu_gpu_memset(NULL, db, 0x3c, BIG), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_copy(s, back, db, BIG), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_stream_sync(s), FFU_OK);
        CHECK(back[0] == 0x3c && back[BIG / 2] == 0x3c && back[BIG - 1] == 0x3c);
        ffu_gpu_free(g, da);
        ffu_gpu_free(g, db);
        ffu_gpu_host_free(back);
        free(hbig);
    }

    /* NULL arguments fail with a reason instead of crashing. */
    void *dn = (void *)1;
    CHECK_EQ_INT(ffu_gpu_alloc(NULL, 64, &dn), FFU_ERR_INVALID);
    CHECK(dn == NULL);
    CHECK_EQ_INT(ffu_gpu_make_current(NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gpu_stream_sync(NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_gpu_copy(s, NULL, src, 16), FFU_ERR_INVALID);

    /* Images of every format survive an upload and a download bit for bit. */
    static const ffu_pixfmt fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_BGR24,
                                      FFU_PIX_RGBA32, FFU_PIX_NV12, FFU_PIX_YUV420P};
    for (size_t f = 0; f < sizeof fmts / sizeof fmts[0]; f++) {
        ffu_image a, b;
        ffu_gpu_image d;
        CHECK_EQ_INT(ffu_image_create(&a, fmts[f], 318, 178), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&b, fmts[f], 318, 178), FFU_OK);
        /* chroma planes have half the rows: filling 178 of them wrote past the image */
        int rows[3] = {178, fmts[f] >= FFU_PIX_NV12 ? 89 : 0, fmts[f] == FFU_PIX_YUV420P ? 89 : 0};
        for (int p = 0; p < 3 && a.data[p]; p++)
            for (int y = 0; y < rows[p]; y++)
                for (int x = 0; x < a.stride[p]; x++)
                    a.data[p][(size_t)y * a.stride[p] + x] = (uint8_t)(x * 7 + y * 13 + p);
        CHECK_EQ_INT(ffu_gpu_image_create(g, &d, fmts[f], 318, 178), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_image_upload(s, &a, &d), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_image_download(s, &d, &b), FFU_OK);
        CHECK_EQ_INT(ffu_gpu_stream_sync(s), FFU_OK);
        int bytes[3] = {fmts[f] >= FFU_PIX_NV12 ? 318 : 318 * ffu_pixfmt_bpp(fmts[f]),
                        fmts[f] == FFU_PIX_NV12 ? 318 : 159, 159};
        for (int p = 0; p < 3; p++)
            for (int y = 0; y < rows[p]; y++)
                CHECK(memcmp(a.data[p] + (size_t)y * a.stride[p],
                             b.data[p] + (size_t)y * b.stride[p], (size_t)bytes[p]) == 0);
        ffu_gpu_image_release(&d);
        ffu_image_release(&a), ffu_image_release(&b);
    }
    ffu_image small;
    ffu_gpu_image d;
    CHECK_EQ_INT(ffu_image_create(&small, FFU_PIX_RGB24, 4, 4), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_image_create(g, &d, FFU_PIX_RGB24, 5, 4), FFU_OK);
    CHECK_EQ_INT(ffu_gpu_image_upload(s, &small, &d), FFU_ERR_INVALID);
    ffu_gpu_image_release(&d);
    ffu_image_release(&small);

    ffu_gpu_host_free(pinned);
    free(src);
    ffu_gpu_stream_destroy(s);
    ffu_gpu_close(g);
}

TEST_MAIN(test_no_device_is_clean, test_device)
