/* cublas_v2.h (CPU emulation) - stands in for cuBLAS when gpudev's CUDA backend is compiled as
 * plain C++ by tools/cuda_emu/build.sh. Part of a CPU emulation of just enough of CUDA and
 * cuBLAS to run gpudev's kernels for their logic (index math, broadcasting, reductions,
 * barriers, the gemm operand swap); not timing, not real stream concurrency or memory-model
 * semantics. The products are plain column-major reference loops (tools/cuda_emu/emu_blas.cpp), so
 * the row-major to column-major operand swap in csrc/cuda/gemm.cu is really checked, and
 * leading dimensions, strides and every matrix's extent are validated against the device
 * allocations, for plain and transposed operands. A product is queued on the handle's stream
 * like a kernel. A handle takes 4 MiB of device memory outside any pool, as cuBLAS's own
 * allocations do, so cublasCreate fails with CUBLAS_STATUS_ALLOC_FAILED on a full device.
 */
#ifndef GPUDEV_CUDA_EMU_CUBLAS_V2_H
#define GPUDEV_CUDA_EMU_CUBLAS_V2_H

#include "cuda_runtime.h"

enum cublasStatus_t {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
};
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };

struct gd_emu_blas;
typedef gd_emu_blas *cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
/* Device memory the handle's products may use, 256-byte aligned; cublasSetStream drops it
 * (back to the library's own), as in cuBLAS. */
cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t workspace_bytes);
const char *cublasGetStatusName(cublasStatus_t status);
const char *cublasGetStatusString(cublasStatus_t status);

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc);
cublasStatus_t cublasDgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const double *alpha, const double *A, int lda, const double *B, int ldb,
                           const double *beta, double *C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float *alpha, const float *A, int lda,
                                         long long stride_a, const float *B, int ldb, long long stride_b,
                                         const float *beta, float *C, int ldc, long long stride_c, int batch);
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const double *alpha, const double *A, int lda,
                                         long long stride_a, const double *B, int ldb, long long stride_b,
                                         const double *beta, double *C, int ldc, long long stride_c, int batch);

#endif /* GPUDEV_CUDA_EMU_CUBLAS_V2_H */
