/* Builds without CUDA still link the GPU gallery search: its launcher reports
 * "unsupported" here (ffu_gpu_open already fails first, so this is never reached by a
 * correct caller). The real launcher is in src/gallery/cuda/gallery_search.cu, compiled
 * only when nvcc is found. */
#include "ffu_config.h"
#include "gallery_gpu_internal.h"

#if !FFU_HAVE_CUDA
ffu_status gallery_gpu_launch(void *stream, const gallery_gpu_launch_args *a)
{
    (void)stream, (void)a;
    return ffu_error_set(FFU_ERR_UNSUPPORTED, "this build of facefuse has no CUDA support");
}
#else
/* ISO C forbids an empty translation unit. */
typedef int gallery_gpu_stub_unused;
#endif
