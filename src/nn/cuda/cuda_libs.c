/* dlopen of cuDNN 9 and cuBLAS (cuda_libs.h). Loaded once per process under
 * pthread_once; the handles stay open for the life of the process (unloading a CUDA
 * library while its kernels may still be cached is not worth the risk). */
#include "ffu_config.h"

#if FFU_HAVE_CUDA

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_libs.h"

static nn_cuda_libs libs;
static pthread_once_t libs_once = PTHREAD_ONCE_INIT;

/* The first of names that opens; *why gets dlerror()'s text when none does. */
static void *open_first(const char *const *names, int n, char *why, size_t len)
{
    for (int i = 0; i < n; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        const char *e = dlerror();
        snprintf(why, len, "%s", e ? e : names[i]);
    }
    return NULL;
}

static void load(void)
{
    static const char *const dnn[] = {"libcudnn.so.9", "libcudnn.so"};
    static const char *const blas[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};
    libs.dnn_lib = open_first(dnn, 2, libs.why_dnn, sizeof libs.why_dnn);
    if (libs.dnn_lib) {
        libs.have_dnn = 1;
#define NN_CU_LOAD(fn)                                                                         \
    if (!(*(void **)&libs.fn = dlsym(libs.dnn_lib, #fn))) {                                    \
        libs.have_dnn = 0;                                                                     \
        snprintf(libs.why_dnn, sizeof libs.why_dnn, "cuDNN has no %s", #fn);                   \
    }
        NN_CUDNN_FUNCS(NN_CU_LOAD)
#undef NN_CU_LOAD
        /* the legacy convolution API we use is cuDNN 9's: an older one lacks symbols or
         * semantics, a newer major may drop or change it (the table is typed from 9's
         * headers) */
        if (libs.have_dnn && (libs.cudnnGetVersion() < 90000 || libs.cudnnGetVersion() >= 100000)) {
            libs.have_dnn = 0;
            snprintf(libs.why_dnn, sizeof libs.why_dnn, "cuDNN %zu is not version 9",
                     libs.cudnnGetVersion());
        }
    }
    libs.blas_lib = open_first(blas, 3, libs.why_blas, sizeof libs.why_blas);
    if (libs.blas_lib) {
        libs.have_blas = 1;
#define NN_CU_LOAD(fn)                                                                         \
    if (!(*(void **)&libs.fn = dlsym(libs.blas_lib, #fn))) {                                   \
        libs.have_blas = 0;                                                                    \
        snprintf(libs.why_blas, sizeof libs.why_blas, "cuBLAS has no %s", #fn);                \
    }
        NN_CUBLAS_FUNCS(NN_CU_LOAD)
#undef NN_CU_LOAD
    }
}

const nn_cuda_libs *nn_cuda_libs_get(void)
{
    pthread_once(&libs_once, load);
    return &libs;
}

#else
/* ISO C forbids an empty translation unit. */
typedef int nn_cuda_libs_unused;
#endif
