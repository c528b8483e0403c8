/* The GPU core (include/facefuse/gpu.h): one shared handle per device around the CUDA
 * runtime's primary context, its caching pool, streams, copies and device images. It is
 * C over cudart's C API, so no GPU module needs C++ for its host side; builds without
 * CUDA compile the same API to "unsupported" answers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/gpu.h"
#include "ffu_config.h"
#include "gpu_pool.h"
#include "image/image_internal.h"

#if FFU_HAVE_CUDA
#include <cuda_runtime_api.h>

#define MAX_DEVICES 64

struct ffu_gpu {
    const ffu_class *cls; /* for log lines: "[gpu 0] ..." */
    int index;
    int refs;
    gpu_pool *pool;
};

struct ffu_gpu_stream {
    ffu_gpu *gpu;
    cudaStream_t s;
};

static const char *gpu_item_name(const void *obj)
{
    static const char *names[] = {"0", "1", "2", "3", "4", "5", "6", "7"};
    int i = ((const ffu_gpu *)obj)->index;
    return i >= 0 && i < 8 ? names[i] : "n";
}
static const ffu_class gpu_class = {"gpu", gpu_item_name};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ffu_gpu *registry[MAX_DEVICES];

/* FFU_ERR_DEVICE with CUDA's words; clears the sticky last-error state. */
static ffu_status cuda_fail(cudaError_t err, const char *what)
{
    (void)cudaGetLastError();
    if (err == cudaErrorMemoryAllocation)
        return ffu_error_set(FFU_ERR_NOMEM, "%s: device out of memory", what);
    return ffu_error_set(FFU_ERR_DEVICE, "%s: %s", what, cudaGetErrorString(err));
}
#define CU(call, what)                                                                  \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) return cuda_fail(e_, what);                              \
    } while (0)

int ffu_gpu_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n < 0 ? 0 : n;
}

static ffu_status check_device(int device)
{
    int n = ffu_gpu_device_count();
    if (n == 0) return ffu_error_set(FFU_ERR_DEVICE, "no CUDA device (no GPU or no driver)");
    if (device < 0 || device >= n || device >= MAX_DEVICES)
        return ffu_error_set(FFU_ERR_NOT_FOUND, "CUDA device %d does not exist (%d found)",
                             device, n);
    return FFU_OK;
}

ffu_status ffu_gpu_device_info_get(int device, ffu_gpu_device_info *out)
{
    memset(out, 0, sizeof *out);
    ffu_status st = check_device(device);
    if (st < 0) return st;
    struct cudaDeviceProp p;
    CU(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    out->index = device;
    size_t n = strnlen(p.name, sizeof out->name - 1);
    memcpy(out->name, p.name, n);
    out->cc_major = p.major, out->cc_minor = p.minor;
    out->sm_count = p.multiProcessorCount;
    out->l2_bytes = (size_t)p.l2CacheSize;
    out->mem_total = p.totalGlobalMem;
    int cur = 0;
    if (cudaGetDevice(&cur) == cudaSuccess && cudaSetDevice(device) == cudaSuccess) {
        size_t fr = 0, tot = 0;
        if (cudaMemGetInfo(&fr, &tot) == cudaSuccess) out->mem_free = fr;
        (void)cudaSetDevice(cur);
    }
    (void)cudaGetLastError();
    return FFU_OK;
}

/* The pool's allocator. cudaMalloc works on the current device, so the pool's device is
 * made current for the call and the caller's current device put back afterwards: a
 * thread working on device 1 that frees into device 0's pool must not find itself on
 * device 0 at its next launch. */
static ffu_status dev_alloc(void *ctx, size_t bytes, void **ptr)
{
    ffu_gpu *g = ctx;
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess) cur = -1;
    CU(cudaSetDevice(g->index), "cudaSetDevice");
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (cur >= 0 && cur != g->index) (void)cudaSetDevice(cur);
    if (e != cudaSuccess) {
        *ptr = NULL;
        return cuda_fail(e, "cudaMalloc");
    }
    return FFU_OK;
}

static void dev_free(void *ctx, void *ptr)
{
    ffu_gpu *g = ctx;
    int cur = -1;
    if (cudaGetDevice(&cur) != cudaSuccess) cur = -1;
    if (cudaSetDevice(g->index) != cudaSuccess || cudaFree(ptr) != cudaSuccess)
        (void)cudaGetLastError();
    if (cur >= 0 && cur != g->index) (void)cudaSetDevice(cur);
}

ffu_status ffu_gpu_open(int device, ffu_gpu **out)
{
    *out = NULL;
    ffu_status st = check_device(device);
    if (st < 0) return st;
    pthread_mutex_lock(&registry_lock);
    ffu_gpu *g = registry[device];
    if (g) {
        g->refs++;
        goto done;
    }
    g = calloc(1, sizeof *g);
    if (!g) {
        st = ffu_error_set(FFU_ERR_NOMEM, "out of memory");
        goto done;
    }
    g->cls = &gpu_class;
    g->index = device;
    g->refs = 1;
    /* Creates (or joins) the primary context now, so the first kernel is not slow. */
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaFree(NULL);
    if (e != cudaSuccess) {
        st = cuda_fail(e, "initialising the CUDA device");
        free(g);
        g = NULL;
        goto done;
    }
    gpu_pool_allocator a = {g, dev_alloc, dev_free};
    if ((st = gpu_pool_create(&a, &g->pool)) < 0) {
        free(g);
        g = NULL;
        goto done;
    }
    registry[device] = g;
done:
    pthread_mutex_unlock(&registry_lock);
    *out = g;
    return st;
}

void ffu_gpu_close(ffu_gpu *g)
{
    if (!g) return;
    pthread_mutex_lock(&registry_lock);
    if (--g->refs == 0) {
        registry[g->index] = NULL;
        size_t leaked = gpu_pool_destroy(g->pool);
        if (leaked)
            ffu_log(g, FFU_LOG_WARN, "%zu device blocks were still in use at close",
                    leaked);
        free(g);
    }
    pthread_mutex_unlock(&registry_lock);
}

int ffu_gpu_index(const ffu_gpu *g) { return g ? g->index : -1; }

ffu_status ffu_gpu_make_current(ffu_gpu *g)
{
    if (!g) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_make_current: NULL gpu");
    CU(cudaSetDevice(g->index), "cudaSetDevice");
    return FFU_OK;
}

ffu_status ffu_gpu_alloc(ffu_gpu *g, size_t bytes, void **dptr)
{
    if (!dptr) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_alloc: NULL output");
    *dptr = NULL;
    if (!g) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_alloc: NULL gpu");
    return gpu_pool_alloc(g->pool, bytes, dptr);
}

void ffu_gpu_free(ffu_gpu *g, void *dptr)
{
    if (g && dptr && gpu_pool_free(g->pool, dptr) < 0)
        ffu_log(g, FFU_LOG_ERROR, "%s", ffu_error_message());
}

void ffu_gpu_pool_get_stats(ffu_gpu *g, ffu_gpu_pool_stats *out)
{
    if (!out) return;
    if (!g) {
        memset(out, 0, sizeof *out);
        return;
    }
    gpu_pool_get_stats(g->pool, out);
}
void ffu_gpu_pool_trim(ffu_gpu *g)
{
    if (g) gpu_pool_trim(g->pool);
}

ffu_status ffu_gpu_host_alloc(size_t bytes, void **hptr)
{
    *hptr = NULL;
    if (ffu_gpu_device_count() == 0)
        return ffu_error_set(FFU_ERR_DEVICE, "no CUDA device (no GPU or no driver)");
    CU(cudaHostAlloc(hptr, bytes ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc");
    return FFU_OK;
}

void ffu_gpu_host_free(void *hptr)
{
    if (hptr && cudaFreeHost(hptr) != cudaSuccess) (void)cudaGetLastError();
}

ffu_status ffu_gpu_stream_create(ffu_gpu *g, ffu_gpu_stream **out)
{
    *out = NULL;
    if (!g) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_stream_create: NULL gpu");
    ffu_gpu_stream *s = calloc(1, sizeof *s);
    if (!s) return ffu_error_set(FFU_ERR_NOMEM, "out of memory");
    cudaError_t e = cudaSetDevice(g->index);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(s);
        return cuda_fail(e, "cudaStreamCreate");
    }
    s->gpu = g;
    *out = s;
    return FFU_OK;
}

void ffu_gpu_stream_destroy(ffu_gpu_stream *s)
{
    if (!s) return;
    if (cudaStreamDestroy(s->s) != cudaSuccess) (void)cudaGetLastError();
    free(s);
}

ffu_status ffu_gpu_stream_sync(ffu_gpu_stream *s)
{
    if (!s) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_stream_sync: NULL stream");
    CU(cudaStreamSynchronize(s->s), "cudaStreamSynchronize");
    return FFU_OK;
}

ffu_gpu *ffu_gpu_stream_gpu(const ffu_gpu_stream *s) { return s ? s->gpu : NULL; }
void *ffu_gpu_stream_handle(const ffu_gpu_stream *s) { return s ? (void *)s->s : NULL; }

/* s == NULL promises a finished copy, but cudaMemcpy only waits for the DMA when the
 * destination is host memory: from pageable host memory it returns once the data is
 * staged, device to device and cudaMemset return at once. They all run on the legacy
 * default stream, which our streams (cudaStreamNonBlocking) never wait for, so a kernel
 * queued on a stream right after could read the bytes before they land. Waiting for
 * the legacy stream makes every direction synchronous. It does not wait for work on
 * streams: synchronise those before copying what they write. */
static ffu_status legacy_wait(const char *what)
{
    CU(cudaStreamSynchronize(cudaStreamLegacy), what);
    return FFU_OK;
}

ffu_status ffu_gpu_copy(ffu_gpu_stream *s, void *dst, const void *src, size_t bytes)
{
    if (!bytes) return FFU_OK;
    if (!dst || !src) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_copy: NULL pointer");
    if (s) {
        CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s->s), "cudaMemcpyAsync");
        return FFU_OK;
    }
    CU(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
    return legacy_wait("cudaMemcpy");
}

ffu_status ffu_gpu_copy_2d(ffu_gpu_stream *s, void *dst, size_t dpitch, const void *src,
                           size_t spitch, size_t width_bytes, size_t rows)
{
    if (!width_bytes || !rows) return FFU_OK;
    if (!dst || !src) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_copy_2d: NULL pointer");
    if (s) {
        CU(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width_bytes, rows, cudaMemcpyDefault,
                             s->s), "cudaMemcpy2DAsync");
        return FFU_OK;
    }
    CU(cudaMemcpy2D(dst, dpitch, src, spitch, width_bytes, rows, cudaMemcpyDefault),
       "cudaMemcpy2D");
    return legacy_wait("cudaMemcpy2D");
}

ffu_status ffu_gpu_memset(ffu_gpu_stream *s, void *dptr, int value, size_t bytes)
{
    if (!bytes) return FFU_OK;
    if (!dptr) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_memset: NULL pointer");
    if (s) {
        CU(cudaMemsetAsync(dptr, value, bytes, s->s), "cudaMemsetAsync");
        return FFU_OK;
    }
    CU(cudaMemset(dptr, value, bytes), "cudaMemset");
    return legacy_wait("cudaMemset");
}

#else /* !FFU_HAVE_CUDA */

#define NO_CUDA() ffu_error_set(FFU_ERR_UNSUPPORTED, "this build of facefuse has no CUDA support")

int ffu_gpu_device_count(void) { return 0; }
ffu_status ffu_gpu_device_info_get(int device, ffu_gpu_device_info *out)
{
    (void)device;
    memset(out, 0, sizeof *out);
    return NO_CUDA();
}
ffu_status ffu_gpu_open(int device, ffu_gpu **out)
{
    (void)device;
    *out = NULL;
    return NO_CUDA();
}
void ffu_gpu_close(ffu_gpu *g) { (void)g; }
int ffu_gpu_index(const ffu_gpu *g) { (void)g; return -1; }
ffu_status ffu_gpu_make_current(ffu_gpu *g) { (void)g; return NO_CUDA(); }
ffu_status ffu_gpu_alloc(ffu_gpu *g, size_t bytes, void **dptr)
{
    (void)g, (void)bytes;
    *dptr = NULL;
    return NO_CUDA();
}
void ffu_gpu_free(ffu_gpu *g, void *dptr) { (void)g, (void)dptr; }
void ffu_gpu_pool_get_stats(ffu_gpu *g, ffu_gpu_pool_stats *out)
{
    (void)g;
    memset(out, 0, sizeof *out);
}
void ffu_gpu_pool_trim(ffu_gpu *g) { (void)g; }
ffu_status ffu_gpu_host_alloc(size_t bytes, void **hptr)
{
    (void)bytes;
    *hptr = NULL;
    return NO_CUDA();
}
void ffu_gpu_host_free(void *hptr) { (void)hptr; }
ffu_status ffu_gpu_stream_create(ffu_gpu *g, ffu_gpu_stream **out)
{
    (void)g;
    *out = NULL;
    return NO_CUDA();
}
void ffu_gpu_stream_destroy(ffu_gpu_stream *s) { (void)s; }
ffu_status ffu_gpu_stream_sync(ffu_gpu_stream *s) { (void)s; return NO_CUDA(); }
ffu_gpu *ffu_gpu_stream_gpu(const ffu_gpu_stream *s) { (void)s; return NULL; }
void *ffu_gpu_stream_handle(const ffu_gpu_stream *s) { (void)s; return NULL; }
ffu_status ffu_gpu_copy(ffu_gpu_stream *s, void *dst, const void *src, size_t bytes)
{
    (void)s, (void)dst, (void)src, (void)bytes;
    return NO_CUDA();
}
ffu_status ffu_gpu_copy_2d(ffu_gpu_stream *s, void *dst, size_t dpitch, const void *src,
                           size_t spitch, size_t width_bytes, size_t rows)
{
    (void)s, (void)dst, (void)dpitch, (void)src, (void)spitch, (void)width_bytes, (void)rows;
    return NO_CUDA();
}
ffu_status ffu_gpu_memset(ffu_gpu_stream *s, void *dptr, int value, size_t bytes)
{
    (void)s, (void)dptr, (void)value, (void)bytes;
    return NO_CUDA();
}

#endif

/* ---- device images: geometry shared with host images, copies through the above ---- */

ffu_status ffu_gpu_image_create(ffu_gpu *g, ffu_gpu_image *img, ffu_pixfmt fmt, int width,
                                int height)
{
    if (!img) return ffu_error_set(FFU_ERR_INVALID, "ffu_gpu_image_create: NULL image");
    memset(img, 0, sizeof *img);
    int strides[3], rows[3];
    size_t total;
    ffu_status st = image_plane_layout(fmt, width, height, 256, strides, rows, &total);
    if (st < 0) return st;
    void *base;
    if ((st = ffu_gpu_alloc(g, total, &base)) < 0) return st;
    uint8_t *p = base;
    for (int i = 0; i < 3 && strides[i]; i++) {
        img->data[i] = p;
        img->stride[i] = strides[i];
        p += (size_t)strides[i] * (size_t)rows[i];
    }
    img->fmt = fmt, img->width = width, img->height = height;
    img->gpu = g, img->owned = 1;
    return FFU_OK;
}

void ffu_gpu_image_release(ffu_gpu_image *img)
{
    if (!img) return;
    if (img->owned) ffu_gpu_free(img->gpu, img->data[0]);
    memset(img, 0, sizeof *img);
}

/* Copies every plane between two images of one format and size (rows of exact width). */
static ffu_status copy_planes(ffu_gpu_stream *s, ffu_pixfmt fmt, int w, int h,
                              uint8_t *const dst[3], const int dstride[3],
                              uint8_t *const src[3], const int sstride[3])
{
    int row_bytes[3], rows[3];
    size_t total;
    ffu_status st = image_plane_layout(fmt, w, h, 1, row_bytes, rows, &total);
    if (st < 0) return st;
    for (int i = 0; i < 3 && row_bytes[i]; i++)
        if ((st = ffu_gpu_copy_2d(s, dst[i], (size_t)dstride[i], src[i], (size_t)sstride[i],
                                  (size_t)row_bytes[i], (size_t)rows[i])) < 0)
            return st;
    return FFU_OK;
}

ffu_status ffu_gpu_image_upload(ffu_gpu_stream *s, const ffu_image *src, ffu_gpu_image *dst)
{
    if (!src || !dst) return ffu_error_set(FFU_ERR_INVALID, "gpu upload: NULL image");
    if (src->fmt != dst->fmt || src->width != dst->width || src->height != dst->height)
        return ffu_error_set(FFU_ERR_INVALID, "gpu upload: %s %dx%d into %s %dx%d",
                             ffu_pixfmt_name(src->fmt), src->width, src->height,
                             ffu_pixfmt_name(dst->fmt), dst->width, dst->height);
    return copy_planes(s, src->fmt, src->width, src->height, dst->data, dst->stride,
                       src->data, src->stride);
}

ffu_status ffu_gpu_image_download(ffu_gpu_stream *s, const ffu_gpu_image *src, ffu_image *dst)
{
    if (!src || !dst) return ffu_error_set(FFU_ERR_INVALID, "gpu download: NULL image");
    if (src->fmt != dst->fmt || src->width != dst->width || src->height != dst->height)
        return ffu_error_set(FFU_ERR_INVALID, "gpu download: %s %dx%d into %s %dx%d",
                             ffu_pixfmt_name(src->fmt), src->width, src->height,
                             ffu_pixfmt_name(dst->fmt), dst->width, dst->height);
    return copy_planes(s, src->fmt, src->width, src->height, dst->data, dst->stride,
                       src->data, src->stride);
}
