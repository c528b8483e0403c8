/* The face stages on the GPU (backend "cuda": src/face/face_net.c's GPU mode, the
 * detector's and embedder's _gpu entry points), the part that needs no GPU; the device
 * half is test_face_gpu_device.c.
 *
 *   - what face_net hands the warp-to-tensor kernel (face_net_warp_setup) is run
 *     through the kernel's own per-pixel body (image_gpu_hd.h) on the CPU and must give
 *     the CPU fill's input tensor bit for bit: real models (NHWC and NCHW, R,G,B and
 *     B,G,R, grey), a real photo in RGB, BGR, RGBA and NV12, letterbox, rotated,
 *     off-the-edge and alignment maps. This pins the GPU path's matrix and
 *     normalisation conventions to the CPU path's;
 *   - creating any face stage with backend cuda where there is no device (or no CUDA
 *     in the build) fails cleanly with FFU_ERR_DEVICE / FFU_ERR_UNSUPPORTED and a
 *     message naming cuda;
 *   - the _gpu calls on cpu handles answer FFU_ERR_UNSUPPORTED; bad arguments are
 *     refused; the host path of a cpu face_net is unchanged. */
#include <math.h>
#include <string.h>

#include "face/face_internal.h"
#include "facefuse/face.h"
#include "facefuse/gpu.h"
#include "facefuse/image_gpu.h"
#include "image/cuda/image_gpu_hd.h"
#include "test.h"
#include "test_face_gpu.h"
#include "test_image_gpu.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- helpers ----------------------------------------------------------------------------- */

static void sim_map(double scale, double angle, double cx, double cy, int w, int h, double m[6])
{
    /* net pixel (continuous) -> image: rotate and scale about the net centre, put it at
     * (cx, cy) */
    double c = cos(angle) * scale, s = sin(angle) * scale;
    m[0] = c, m[1] = -s, m[3] = s, m[4] = c;
    m[2] = cx - (c * w / 2 - s * h / 2);
    m[5] = cy - (s * w / 2 + c * h / 2);
}

/* ---- the kernel's arithmetic with face_net's arguments, on the CPU ------------------------ */

/* GCC 12 at -O3 believes the pixel fetch (px[c] for c < bytes per pixel, at most 4)
 * may write past px[4] once everything is inlined here; it cannot. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

/* face_net_fill_warp_gpu's kernel call, run by the kernel's pixel body on the CPU into
 * out (a whole input tensor of n). */
static ffu_status hd_fill(const face_net *n, int b, const ffu_image *src, ffu_yuv_coding yuv,
                          const double m[6], float *out)
{
    ffu_gpu_image g = gview(src);
    g.yuv = yuv;
    ffu_gpu_warp_job job;
    ffu_gpu_warp_opts o;
    ffu_gpu_tensor_view t;
    face_net_warp_setup(n, b, src->fmt, g.yuv, m, out, &job, &o, &t);
    imgpu_warp_params p;
    imgpu_warp_item it;
    ffu_status st = imgpu_plan_warp_tensor(&g, 1, &job, 1, &o, &t, &p);
    if (st)
        return st;
    imgpu_warp_item_init(&it, &g, &job);
    for (int y = 0; y < p.H; y++)
        for (int x = 0; x < p.W; x++)
            imgpu_warp_tensor_pixel(&p, &it, x, y);
    return FFU_OK;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* Slot b of the CPU fill of n equals hd, bit for bit. */
static int slot_same(const face_net *n, int b, const float *hd, const char *what)
{
    ffu_nn_tensor in;
    if (ffu_nn_session_input(n->session, 0, &in))
        return 0;
    size_t slot = (size_t)n->in_c * n->in_h * n->in_w;
    const float *cpu = (const float *)in.data + (size_t)b * slot;
    hd += (size_t)b * slot;
    for (size_t i = 0; i < slot; i++)
        if (memcmp(&cpu[i], &hd[i], sizeof(float))) {
            fprintf(stderr, "  %s (%s): element %zu of slot %d: cpu %.9g, kernel %.9g\n", what,
                    n->entry.name, i, b, cpu[i], hd[i]);
            return 0;
        }
    return 1;
}

static void test_kernel_args_match_cpu_fill(void)
{
    ffu_image rgb, bgr, rgba, nv12, back, back709;
    if (!load_photo(PHOTO_TWO, FFU_PIX_RGB24, &rgb))
        TEST_SKIP("../shared/data/face_recognition_examples missing");
    CHECK(load_photo(PHOTO_TWO, FFU_PIX_BGR24, &bgr));
    CHECK(load_photo(PHOTO_TWO, FFU_PIX_RGBA32, &rgba));
    CHECK(to_nv12(&rgb, &nv12, &back));
    const ffu_yuv_coding c709 = {FFU_YUV_BT709, FFU_YUV_FULL};
    CHECK_EQ_INT(ffu_image_create(&back709, FFU_PIX_RGB24, rgb.width, rgb.height), FFU_OK);
    CHECK_EQ_INT(ffu_image_convert_yuv(&nv12, &back709, c709), FFU_OK);
    /* detector (NHWC / NCHW with B,G,R), embedder (B,G,R 224), a grey model */
    static const struct {
        ffu_face_role role;
        const char *name;
    } nets[] = {{FFU_ROLE_DETECT, "blazeface"}, {FFU_ROLE_DETECT, "yunet"},
                {FFU_ROLE_EMBED, "faceres"}, {FFU_ROLE_EMBED, "mobilefacenet-onnx"},
                {FFU_ROLE_ATTRIBUTES, "emotion"}};
    int tested = 0;
    for (int k = 0; k < COUNT(nets); k++) {
        face_net n;
        ffu_face_model_opts mo = {.model = nets[k].name};
        ffu_status st = face_net_open(&n, nets[k].role, &mo);
        if (st == FFU_ERR_NOT_FOUND)
            continue;
        CHECK_EQ_INT(st, FFU_OK);
        CHECK(!face_net_on_gpu(&n));
        CHECK_EQ_INT(face_net_reshape(&n, 2, n.in_w, n.in_h), FFU_OK);
        size_t total = (size_t)2 * n.in_c * n.in_h * n.in_w;
        float *hd = malloc(total * sizeof(float));
        CHECK(hd);
        /* letterbox of the whole photo, a rotated face crop, a crop hanging over the
         * corner (border), a face alignment */
        double maps[4][6];
        double s = fmax((double)rgb.width / n.in_w, (double)rgb.height / n.in_h);
        double lb[6] = {s, 0, (rgb.width - s * n.in_w) / 2, 0, s, (rgb.height - s * n.in_h) / 2};
        memcpy(maps[0], lb, sizeof lb);
        sim_map(180.0 / n.in_w, 0.35, rgb.width * 0.3, rgb.height * 0.4, n.in_w, n.in_h, maps[1]);
        sim_map(1.7, -2.0, 10, rgb.height - 5, n.in_w, n.in_h, maps[2]);
        const float kps[10] = {300, 200, 360, 198, 332, 240, 305, 275, 355, 273};
        double fwd[6];
        CHECK_EQ_INT(face_align_transform(kps, "arcface_112_v2", n.in_w, fwd), FFU_OK);
        CHECK_EQ_INT(ffu_affine_invert(fwd, maps[3]), FFU_OK);
        /* the last source is the same NV12 bytes read as BT.709 full range (an HD
         * stream's coding travels in ffu_gpu_image.yuv) */
        const ffu_image *srcs[5] = {&rgb, &bgr, &rgba, &nv12, &nv12};
        static const char *fmt_names[5] = {"RGB24", "BGR24", "RGBA32", "NV12", "NV12 709 full"};
        const ffu_yuv_coding codings[5] = {{0}, {0}, {0}, {0}, {FFU_YUV_BT709, FFU_YUV_FULL}};
        int ok = 1;
        for (int f = 0; f < 5 && ok; f++)
            for (int mi = 0; mi < 4 && ok; mi++) {
                int b = (f + mi) & 1;
                memset(hd, 0xA5, total * sizeof(float));
                /* the CPU fill of NV12 pixels is the fill of their RGB decoding */
                const ffu_image *host = f == 3 ? &back : f == 4 ? &back709 : srcs[f];
                if (face_net_fill_warp(&n, b, host, maps[mi]) != FFU_OK ||
                    hd_fill(&n, b, srcs[f], codings[f], maps[mi], hd) != FFU_OK) {
                    fprintf(stderr, "  %s %s map %d: %s\n", nets[k].name, fmt_names[f], mi,
                            ffu_error_message());
                    ok = 0;
                    break;
                }
                char what[64];
                snprintf(what, sizeof what, "%s map %d", fmt_names[f], mi);
                ok = slot_same(&n, b, hd, what);
                /* the other slot is not the kernel's to touch */
                const uint32_t *other = (const uint32_t *)(hd + (size_t)(1 - b) * (total / 2));
                for (size_t i = 0; ok && i < total / 2; i++)
                    ok = other[i] == 0xA5A5A5A5u;
            }
        free(hd);
        face_net_close(&n);
        CHECK(ok);
        tested++;
    }
    ffu_image_release(&rgb);
    ffu_image_release(&bgr);
    ffu_image_release(&rgba);
    ffu_image_release(&nv12);
    ffu_image_release(&back);
    ffu_image_release(&back709);
    if (!tested)
        TEST_SKIP("no face model installed");
}

/* ---- without a device ------------------------------------------------------------------ */

static void check_cuda_refused(ffu_status st, const void *handle, const char *what)
{
    if (handle || (st != FFU_ERR_DEVICE && st != FFU_ERR_UNSUPPORTED && st != FFU_ERR_NOT_FOUND))
        fprintf(stderr, "  %s: status %d (%s)\n", what, (int)st, ffu_error_message());
    CHECK(handle == NULL);
    CHECK(st == FFU_ERR_DEVICE || st == FFU_ERR_UNSUPPORTED || st == FFU_ERR_NOT_FOUND);
    if (st != FFU_ERR_NOT_FOUND) {
        const char *msg = ffu_error_message();
        CHECK(msg && strstr(msg, "cuda"));
    }
}

static void test_cuda_without_device(void)
{
    if (ffu_gpu_device_count() > 0)
        TEST_SKIP("a CUDA device is present (the GPU tests cover backend cuda)");
    ffu_detector_opts dopt;
    ffu_detector_opts_default(&dopt);
    dopt.m.backend = "cuda";
    ffu_detector *d = (ffu_detector *)&dopt; /* must come back NULL */
    ffu_status st = ffu_detector_create(&dopt, &d);
    check_cuda_refused(st, d, "detector");
    ffu_face_model_opts mo = {.backend = "cuda"};
    ffu_embedder *e = (ffu_embedder *)&mo;
    st = ffu_embedder_create(&mo, &e);
    check_cuda_refused(st, e, "embedder");
    ffu_landmarker_opts lo;
    ffu_landmarker_opts_default(&lo);
    lo.m.backend = "cuda";
    ffu_landmarker *l = NULL;
    st = ffu_landmarker_create(&lo, &l);
    check_cuda_refused(st, l, "landmarker");
    ffu_liveness *lv = NULL;
    st = ffu_liveness_create(&mo, &lv);
    check_cuda_refused(st, lv, "liveness");
    ffu_attributes *a = NULL;
    st = ffu_attributes_create(&mo, &a);
    check_cuda_refused(st, a, "attributes");
    /* fp16 and a device index change nothing about that */
    mo.fp16 = 1;
    mo.device = 3;
    e = NULL;
    st = ffu_embedder_create(&mo, &e);
    check_cuda_refused(st, e, "embedder fp16");
    /* a negative device is a bad argument wherever it is checked */
    mo.device = -1;
    st = ffu_embedder_create(&mo, &e);
    CHECK(e == NULL);
    CHECK(st == FFU_ERR_INVALID || st == FFU_ERR_NOT_FOUND);
}

static void test_gpu_calls_on_cpu_handles(void)
{
    ffu_detector *d = NULL;
    ffu_status st = ffu_detector_create(NULL, &d);
    if (st == FFU_ERR_NOT_FOUND)
        TEST_SKIP("default detector not installed");
    CHECK_EQ_INT(st, FFU_OK);
    ffu_embedder *e = NULL;
    st = ffu_embedder_create(NULL, &e);
    if (st == FFU_ERR_NOT_FOUND) {
        ffu_detector_destroy(d);
        TEST_SKIP("default embedder not installed");
    }
    CHECK_EQ_INT(st, FFU_OK);
    CHECK(!face_detector_on_gpu(d));
    CHECK(!face_embedder_on_gpu(e));
    CHECK(!face_detector_on_gpu(NULL));
    CHECK(!face_embedder_on_gpu(NULL));

    /* a frame descriptor whose pointers must never be followed */
    static uint8_t host_bytes[64 * 48 * 3];
    ffu_gpu_image g;
    memset(&g, 0, sizeof g);
    g.fmt = FFU_PIX_RGB24, g.width = 64, g.height = 48;
    g.data[0] = host_bytes, g.stride[0] = 64 * 3;
    ffu_face_list l = {0};
    ffu_face *pushed = ffu_face_list_push(&l);
    CHECK(pushed);
    CHECK_EQ_INT(ffu_detector_detect_gpu(d, &g, &l), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(ffu_error_message(), "cuda"));
    CHECK_EQ_INT(l.count, 0); /* cleared first, as the host call does */
    ffu_face f;
    ffu_face_init(&f);
    for (int i = 0; i < 10; i++)
        f.kps[i] = 20 + 3 * i;
    f.embedding_dim = 7;
    CHECK_EQ_INT(ffu_embedder_run_gpu(e, &g, &f, 1), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(ffu_error_message(), "cuda"));
    CHECK_EQ_INT(f.embedding_dim, 0);
    const ffu_gpu_image *gs[2] = {&g, &g};
    ffu_face_list l2 = {0};
    ffu_face_list *outs[2] = {&l, &l2};
    CHECK_EQ_INT(face_detector_detect_multi_gpu(d, gs, outs, 2), FFU_ERR_UNSUPPORTED);
    ffu_face *fs[2] = {&f, &f};
    CHECK_EQ_INT(face_embedder_run_multi_gpu(e, gs, fs, 2), FFU_ERR_UNSUPPORTED);
    /* n == 0 still says what the handle is, or nothing to do: never a crash */
    st = face_detector_detect_multi_gpu(d, gs, outs, 0);
    CHECK(st == FFU_OK || st == FFU_ERR_UNSUPPORTED);

    /* bad arguments */
    CHECK_EQ_INT(ffu_detector_detect_gpu(NULL, &g, &l), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_detector_detect_gpu(d, NULL, &l), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_detector_detect_gpu(d, &g, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_embedder_run_gpu(NULL, &g, &f, 1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_embedder_run_gpu(e, NULL, &f, 1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_embedder_run_gpu(e, &g, NULL, 1), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_embedder_run_gpu(e, &g, &f, -1), FFU_ERR_INVALID);
    ffu_gpu_image empty = g;
    empty.data[0] = NULL;
    CHECK_EQ_INT(ffu_embedder_run_gpu(e, &empty, &f, 1), FFU_ERR_INVALID);
    empty = g, empty.width = 0;
    CHECK_EQ_INT(ffu_embedder_run_gpu(e, &empty, &f, 1), FFU_ERR_INVALID);
    CHECK_EQ_INT(face_detector_detect_multi_gpu(NULL, gs, outs, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(face_detector_detect_multi_gpu(d, NULL, outs, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(face_detector_detect_multi_gpu(d, gs, NULL, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(face_detector_detect_multi_gpu(d, gs, outs, -1), FFU_ERR_INVALID);
    ffu_face_list *bad_outs[2] = {&l, NULL};
    CHECK_EQ_INT(face_detector_detect_multi_gpu(d, gs, bad_outs, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(face_embedder_run_multi_gpu(NULL, gs, fs, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(face_embedder_run_multi_gpu(e, NULL, fs, 2), FFU_ERR_INVALID);
    CHECK_EQ_INT(face_embedder_run_multi_gpu(e, gs, NULL, 2), FFU_ERR_INVALID);
    const ffu_gpu_image *gs_bad[2] = {&g, NULL};
    CHECK_EQ_INT(face_embedder_run_multi_gpu(e, gs_bad, fs, 2), FFU_ERR_INVALID);

    /* the face_net entry point itself */
    face_net n;
    ffu_face_model_opts mo = {0};
    CHECK_EQ_INT(face_net_open(&n, FFU_ROLE_DETECT, &mo), FFU_OK);
    double id[6] = {1, 0, 0, 0, 1, 0};
    CHECK_EQ_INT(face_net_fill_warp_gpu(&n, 0, &g, id), FFU_ERR_UNSUPPORTED);
    CHECK_EQ_INT(face_net_fill_warp_gpu(NULL, 0, &g, id), FFU_ERR_INVALID);
    /* the host path keeps working */
    CHECK_EQ_INT(face_net_clear_input(&n), FFU_OK);
    CHECK_EQ_INT(face_net_run(&n), FFU_OK);
    CHECK(face_net_output(&n, 0, NULL) != NULL);
    face_net_close(&n);
    face_net_close(&n); /* closed twice: a no-op */

    ffu_face_list_free(&l);
    ffu_face_list_free(&l2);
    ffu_embedder_destroy(e);
    ffu_detector_destroy(d);
}

TEST_MAIN(test_kernel_args_match_cpu_fill, test_cuda_without_device, test_gpu_calls_on_cpu_handles)
