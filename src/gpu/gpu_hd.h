/* Per-element arithmetic shared by a CUDA kernel and its CPU test. A function declared
 * FFU_HD compiles as __host__ __device__ under nvcc and as a plain static inline C
 * function elsewhere, so the unit tests, which run on machines without a GPU, check the
 * exact code a kernel runs per pixel or per element against the CPU twin; only the
 * launch (grid, copies) is left for the GPU tests. Keep FFU_HD functions in the common
 * subset of C11 and CUDA C++: no C++ features, no VLAs, no compound literals. */
#ifndef FFU_GPU_HD_H
#define FFU_GPU_HD_H

#ifdef __CUDACC__
#define FFU_HD static __host__ __device__ __forceinline__
#else
#define FFU_HD static inline
#endif

#endif
