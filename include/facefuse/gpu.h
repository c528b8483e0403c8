/* facefuse GPU core: devices, one shared CUDA context per device, streams, a caching
 * device-memory pool, pinned host memory and copies. Every GPU part of facefuse (the
 * engine's cuda backend, the GPU image kernels, NVDEC frames, gallery search, the
 * pipeline) goes through this header, so they share one context and one pool per device.
 *
 * Builds without CUDA, and machines without a driver or device, still link and run:
 * ffu_gpu_device_count() is 0 and every other call fails with FFU_ERR_DEVICE (no device)
 * or FFU_ERR_UNSUPPORTED (no CUDA in this build) and a one-line message.
 *
 * Context: the CUDA runtime's primary context of the device, which FFmpeg's CUDA hwaccel
 * also uses (AV_CUDA_USE_PRIMARY_CONTEXT), as do cuBLAS and cuDNN.
 *
 * Threads: an ffu_gpu handle may be used from any thread (the pool has a lock). A stream
 * is used by one thread at a time. ffu_gpu_free() returns a block to the pool at once:
 * the caller must know the device no longer reads or writes it (synchronise the stream
 * that used it first). */
#ifndef FACEFUSE_GPU_H
#define FACEFUSE_GPU_H

#include "core.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ffu_gpu ffu_gpu;               /* one device: context + memory pool */
typedef struct ffu_gpu_stream ffu_gpu_stream; /* an ordered queue of device work */

typedef struct ffu_gpu_device_info {
    int index;
    char name[96];
    int cc_major, cc_minor; /* compute capability */
    int sm_count;
    size_t mem_total, mem_free; /* bytes */
    size_t l2_bytes;
} ffu_gpu_device_info;

/* Usable CUDA devices; 0 without CUDA in the build, a driver or a device. Never fails. */
FFU_API int ffu_gpu_device_count(void);
FFU_API ffu_status ffu_gpu_device_info_get(int device, ffu_gpu_device_info *out);

/* Opens device `device` (0-based). Handles are shared: opening the same device again
 * returns the same handle with its reference count raised; close drops one reference. */
FFU_API ffu_status ffu_gpu_open(int device, ffu_gpu **out);
FFU_API void ffu_gpu_close(ffu_gpu *g);
FFU_API int ffu_gpu_index(const ffu_gpu *g);
/* Makes g's device current on the calling thread (CUDA's device is per thread). */
FFU_API ffu_status ffu_gpu_make_current(ffu_gpu *g);

/* ---- device memory pool ------------------------------------------------------------- */

typedef struct ffu_gpu_pool_stats {
    size_t in_use;       /* bytes handed out now (rounded block sizes) */
    size_t cached;       /* bytes held free for reuse */
    size_t peak_in_use;  /* highest in_use so far */
    uint64_t device_allocs; /* cudaMalloc calls made */
    uint64_t reuses;        /* allocations served from the cache */
} ffu_gpu_pool_stats;

/* At least `bytes` of device memory, 256-byte aligned. When the device is out of memory
 * the pool's free blocks are released and the allocation tried once more. */
FFU_API ffu_status ffu_gpu_alloc(ffu_gpu *g, size_t bytes, void **dptr);
FFU_API void ffu_gpu_free(ffu_gpu *g, void *dptr); /* NULL is a no-op */
FFU_API void ffu_gpu_pool_get_stats(ffu_gpu *g, ffu_gpu_pool_stats *out);
/* Gives every cached free block back to the device. */
FFU_API void ffu_gpu_pool_trim(ffu_gpu *g);

/* Page-locked host memory for fast, asynchronous copies. */
FFU_API ffu_status ffu_gpu_host_alloc(size_t bytes, void **hptr);
FFU_API void ffu_gpu_host_free(void *hptr);

/* ---- streams and copies ------------------------------------------------------------- */

FFU_API ffu_status ffu_gpu_stream_create(ffu_gpu *g, ffu_gpu_stream **out);
FFU_API void ffu_gpu_stream_destroy(ffu_gpu_stream *s);
FFU_API ffu_status ffu_gpu_stream_sync(ffu_gpu_stream *s);
FFU_API ffu_gpu *ffu_gpu_stream_gpu(const ffu_gpu_stream *s);
/* The cudaStream_t, for code that launches its own kernels. */
FFU_API void *ffu_gpu_stream_handle(const ffu_gpu_stream *s);

/* Copies in any direction (host, pinned host or device pointers; CUDA's unified
 * addressing tells them apart), queued on s. s == NULL copies synchronously: the data is
 * in place when the call returns. It does not wait for work queued on streams (they are
 * non-blocking streams), so synchronise a stream that writes src first. */
FFU_API ffu_status ffu_gpu_copy(ffu_gpu_stream *s, void *dst, const void *src, size_t bytes);
FFU_API ffu_status ffu_gpu_copy_2d(ffu_gpu_stream *s, void *dst, size_t dpitch,
                                   const void *src, size_t spitch, size_t width_bytes,
                                   size_t rows);
FFU_API ffu_status ffu_gpu_memset(ffu_gpu_stream *s, void *dptr, int value, size_t bytes);

/* ---- images in device memory -------------------------------------------------------- */

/* Like ffu_image, but data[] are device pointers: never pass one to a CPU function.
 * Owned images come from the pool of `gpu`; views (owned == 0) borrow memory, e.g. an
 * NVDEC surface. */
typedef struct ffu_gpu_image {
    ffu_pixfmt fmt;
    int width, height;
    uint8_t *data[3];
    int stride[3];
    ffu_gpu *gpu;
    int owned;
    /* NV12: what the YUV means (matrix, range); {0} = BT.601 limited range. Kernels that
     * turn a frame into RGB or tensors on its own (the face stages) read it from here. */
    ffu_yuv_coding yuv;
} ffu_gpu_image;

/* Allocates from g's pool (rows aligned to 256 bytes); contents undefined. */
FFU_API ffu_status ffu_gpu_image_create(ffu_gpu *g, ffu_gpu_image *img, ffu_pixfmt fmt,
                                        int width, int height);
FFU_API void ffu_gpu_image_release(ffu_gpu_image *img);
/* Host <-> device; sizes and formats must match. s == NULL: synchronous. */
FFU_API ffu_status ffu_gpu_image_upload(ffu_gpu_stream *s, const ffu_image *src,
                                        ffu_gpu_image *dst);
FFU_API ffu_status ffu_gpu_image_download(ffu_gpu_stream *s, const ffu_gpu_image *src,
                                          ffu_image *dst);

#ifdef __cplusplus
}
#endif

#endif
