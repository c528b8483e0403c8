/* The device-resident image kernels of include/facefuse/image_gpu.h: NV12 conversion,
 * affine warp, warp + normalisation into batched tensors, drawing. Every kernel is a
 * grid of one thread per output pixel that calls its FFU_HD pixel body in
 * image_gpu_hd.h, where the arithmetic lives and is unit-tested on the CPU; this file
 * only checks arguments (through the imgpu_plan_* functions), chunks batches and
 * launches. Parameters travel by value as __grid_constant__ kernel parameters, so a
 * call copies nothing to the device and allocates nothing. */
#include <stdint.h>
#include <string.h>

#include "cuda_kernels.h"
#include "facefuse/image_gpu.h"
#include "image_gpu_hd.h"

namespace
{

/* Everything one warp_to_tensor launch needs: blockIdx.z picks the job. */
struct warp_launch {
    imgpu_warp_params p;
    imgpu_warp_item items[FFU_GPU_WARP_JOBS_PER_LAUNCH];
};

/* The classic kernel-parameter limit; newer toolkits allow more, but 4 KB works on every
 * driver and architecture we build for. */
static_assert(sizeof(warp_launch) <= 4000, "warp launch parameters must stay under 4 KB");
static_assert(sizeof(imgpu_draw_params) + 16 <= 4000, "draw parameters must stay under 4 KB");
static_assert(sizeof(imgpu_warp_image_params) <= 4000, "warp parameters under 4 KB");

__global__ void convert_nv12(const __grid_constant__ imgpu_convert_params p)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.src.w || y >= p.src.h) return;
    imgpu_convert_pixel(&p, x, y);
}

__global__ void warp_image(const __grid_constant__ imgpu_warp_image_params p)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.dw || y >= p.dh) return;
    imgpu_warp_image_pixel(&p, x, y);
}

__global__ void warp_tensor(const __grid_constant__ warp_launch L)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= L.p.W || y >= L.p.H) return;
    imgpu_warp_tensor_pixel(&L.p, &L.items[blockIdx.z], x, y);
}

/* A grid over the box [x0, x0 + w) x [y0, y0 + h) that the chunk's shapes can touch. */
__global__ void draw_shapes(const __grid_constant__ imgpu_draw_params p, int x0, int y0, int w,
                            int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    imgpu_draw_pixel(&p, x0 + x, y0 + y);
}

const dim3 kBlock(FFU_CUDA_BLOCK_X, FFU_CUDA_BLOCK_Y);

} // namespace

extern "C" ffu_status ffu_gpu_image_convert_yuv(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                                ffu_gpu_image *dst, ffu_yuv_coding coding)
{
    imgpu_convert_params p;
    cudaStream_t cs;
    ffu_status st;
    if ((st = imgpu_plan_convert(src, dst, coding, &p)) < 0) return st;
    if ((st = ffu_cuda_stream_begin(s, "gpu convert", &cs)) < 0) return st;
    convert_nv12<<<ffu_cuda_grid(p.src.w, p.src.h, 1), kBlock, 0, cs>>>(p);
    return ffu_cuda_launch_check("gpu convert");
}

extern "C" ffu_status ffu_gpu_image_convert_range(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                                  ffu_gpu_image *dst, ffu_yuv_range range)
{
    ffu_yuv_coding c;
    c.matrix = FFU_YUV_BT601;
    c.range = range;
    return ffu_gpu_image_convert_yuv(s, src, dst, c);
}

extern "C" ffu_status ffu_gpu_image_convert(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                            ffu_gpu_image *dst)
{
    return ffu_gpu_image_convert_range(s, src, dst, FFU_YUV_LIMITED);
}

extern "C" ffu_status ffu_gpu_image_warp_affine(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                                ffu_gpu_image *dst, const double m[6],
                                                ffu_interp interp, ffu_border border,
                                                const uint8_t border_value[4])
{
    imgpu_warp_image_params p;
    cudaStream_t cs;
    ffu_status st;
    if ((st = imgpu_plan_warp_image(src, dst, m, interp, border, border_value, &p)) < 0) return st;
    if ((st = ffu_cuda_stream_begin(s, "gpu warp_affine", &cs)) < 0) return st;
    warp_image<<<ffu_cuda_grid(p.dw, p.dh, 1), kBlock, 0, cs>>>(p);
    return ffu_cuda_launch_check("gpu warp_affine");
}

extern "C" ffu_status ffu_gpu_image_warp_to_tensor(ffu_gpu_stream *s, const ffu_gpu_image *srcs,
                                                   int n_srcs, const ffu_gpu_warp_job *jobs,
                                                   int n_jobs, const ffu_gpu_warp_opts *opts,
                                                   const ffu_gpu_tensor_view *t)
{
    warp_launch L;
    cudaStream_t cs;
    ffu_status st;
    if ((st = imgpu_plan_warp_tensor(srcs, n_srcs, jobs, n_jobs, opts, t, &L.p)) < 0) return st;
    if ((st = ffu_cuda_stream_begin(s, "gpu warp_to_tensor", &cs)) < 0) return st;
    for (int j0 = 0; j0 < n_jobs; j0 += FFU_GPU_WARP_JOBS_PER_LAUNCH) {
        int n =
            n_jobs - j0 < FFU_GPU_WARP_JOBS_PER_LAUNCH ? n_jobs - j0 : FFU_GPU_WARP_JOBS_PER_LAUNCH;
        for (int i = 0; i < n; i++)
            imgpu_warp_item_init(&L.items[i], srcs, &jobs[j0 + i]);
        warp_tensor<<<ffu_cuda_grid(L.p.W, L.p.H, n), kBlock, 0, cs>>>(L);
        if ((st = ffu_cuda_launch_check("gpu warp_to_tensor")) < 0) return st;
    }
    return FFU_OK;
}

extern "C" ffu_status ffu_gpu_image_to_tensor(ffu_gpu_stream *s, const ffu_gpu_image *img,
                                              const ffu_norm_params *p,
                                              const ffu_gpu_tensor_view *t, int batch_index)
{
    if (!img || !p || !t)
        return ffu_error_set(FFU_ERR_INVALID, "gpu image_to_tensor: NULL argument");
    if (img->width != t->w || img->height != t->h)
        return ffu_error_set(FFU_ERR_INVALID,
                             "gpu image_to_tensor: image %dx%d but tensor "
                             "%dx%d",
                             img->width, img->height, t->w, t->h);
    /* The identity with nearest sampling reads pixel (x, y) for (x, y), exactly. */
    ffu_gpu_warp_job job;
    memset(&job, 0, sizeof job);
    job.batch_index = batch_index;
    job.m[0] = 1, job.m[4] = 1;
    ffu_gpu_warp_opts o;
    memset(&o, 0, sizeof o);
    o.interp = FFU_INTERP_NEAREST;
    o.border = FFU_BORDER_REPLICATE;
    o.range = FFU_YUV_LIMITED;
    o.matrix = FFU_YUV_BT601;
    o.norm = *p;
    return ffu_gpu_image_warp_to_tensor(s, img, 1, &job, 1, &o, t);
}

extern "C" ffu_status ffu_gpu_image_draw(ffu_gpu_stream *s, ffu_gpu_image *img,
                                         const ffu_gpu_shape *shapes, int n)
{
    imgpu_draw_params p;
    cudaStream_t cs;
    ffu_status st;
    if ((st = imgpu_plan_draw(img, shapes, n, &p)) < 0) return st;
    if ((st = ffu_cuda_stream_begin(s, "gpu draw", &cs)) < 0) return st;
    for (int i0 = 0; i0 < n; i0 += FFU_GPU_DRAW_SHAPES_PER_LAUNCH) {
        int k = n - i0 < FFU_GPU_DRAW_SHAPES_PER_LAUNCH ? n - i0 : FFU_GPU_DRAW_SHAPES_PER_LAUNCH;
        int box[4];
        if (!imgpu_plan_draw_chunk(img, shapes + i0, k, &p, box)) continue;
        int w = box[2] - box[0], h = box[3] - box[1];
        draw_shapes<<<ffu_cuda_grid(w, h, 1), kBlock, 0, cs>>>(p, box[0], box[1], w, h);
        if ((st = ffu_cuda_launch_check("gpu draw")) < 0) return st;
    }
    return FFU_OK;
}
