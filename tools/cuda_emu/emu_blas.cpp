/* emu_blas.cpp - cuBLAS in the CUDA emulation (see emu.h): handles bound to a device and a
 * stream, with a workspace, and column-major reference products queued on the handle's stream
 * like kernels. Leading dimensions, strides and every matrix's extent are checked against live
 * device allocations when a product is issued, so the row-major to column-major operand swap
 * of gpudev's gemm is really checked. Products accumulate in their own type, as cuBLAS's do
 * (float32 sums are float32's, not a float64 reference's), and in TF32 math mode float32
 * operands are first rounded to TF32's 10 mantissa bits, as tensor cores read them, so a
 * forgotten or stale math mode shows in the values. A handle takes 4 MiB of device memory outside any pool
 * (cublasCreate fails with CUBLAS_STATUS_ALLOC_FAILED when the device cannot give them).
 */
#undef _FORTIFY_SOURCE /* as in every file of the emulation (emu_runtime.cpp) */

#include "emu.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

struct gd_emu_blas {
    int device;
    cudaStream_t stream;
    cublasMath_t mode;
    bool live;
    void *workspace; /* cublasSetWorkspace's, or null for the library's own */
    size_t workspace_bytes;
};

using namespace gd_emu;

namespace {

constexpr size_t kHandleBytes = (size_t)4 << 20;

std::deque<gd_emu_blas> g_blas;
using Guard = std::lock_guard<std::recursive_mutex>;

gd_emu_blas &blas_of(cublasHandle_t h, const char *call)
{
    bool found = false;
    for (const gd_emu_blas &b : g_blas) found = found || &b == h;
    if (!h || !found || !h->live) die("%s with a handle that is not live", call);
    return *h;
}

} // namespace

/* ------------------------------------------------------------------------------------------
 * handles
 * ---------------------------------------------------------------------------------------- */

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    if (int st = injected("cublasCreate")) return (cublasStatus_t)st;
    Guard guard(lock());
    if (!take_device_bytes(t_device, kHandleBytes)) return CUBLAS_STATUS_ALLOC_FAILED;
    g_blas.push_back(gd_emu_blas{t_device, nullptr, CUBLAS_DEFAULT_MATH, true, nullptr, 0});
    *handle = &g_blas.back();
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    Guard guard(lock());
    gd_emu_blas &h = blas_of(handle, "cublasDestroy");
    h.live = false;
    give_device_bytes(h.device, kHandleBytes);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
    Guard guard(lock());
    gd_emu_blas &h = blas_of(handle, "cublasSetStream");
    if (device_of(stream_of(stream, "cublasSetStream")) != h.device)
        die("cublasSetStream: a stream of another device for a handle of device %d", h.device);
    h.stream = stream;
    h.workspace = nullptr;
    h.workspace_bytes = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t workspace_bytes)
{
    Guard guard(lock());
    gd_emu_blas &h = blas_of(handle, "cublasSetWorkspace");
    if (((uintptr_t)workspace & 255) != 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (workspace && !device_range(workspace, workspace_bytes, h.device, "cublasSetWorkspace", "workspace"))
        return CUBLAS_STATUS_INVALID_VALUE;
    h.workspace = workspace;
    h.workspace_bytes = workspace ? workspace_bytes : 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    Guard guard(lock());
    blas_of(handle, "cublasSetMathMode").mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusName(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    }
    return "unknown status";
}

/* ------------------------------------------------------------------------------------------
 * products
 * ---------------------------------------------------------------------------------------- */

namespace {

/* Each of the `batch` column-major matrices (rows, cols, leading dimension ld) lies inside an
 * allocation of the handle's device; on a GPU, reading outside them is an illegal address. */
template <class T>
void check_matrices(const char *call, const char *name, const T *p, long long rows, long long cols, long long ld,
                    long long stride, int batch, int device)
{
    if (rows == 0 || cols == 0) return;
    const size_t extent = (size_t)((cols - 1) * ld + rows) * sizeof(T);
    for (int b = 0; b < batch; b++)
        if (!device_range(p + b * stride, extent, device, call, name))
            die("%s: matrix %s of product %d reaches outside device memory", call, name, b);
}

/* x rounded to TF32 (8 exponent bits, 10 mantissa bits), to nearest with ties away from
 * zero as cvt.rna.tf32.f32 does; infinities and NaNs stay as they are. */
float to_tf32(float x)
{
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7f800000u) != 0x7f800000u) bits = (bits + 0x1000u) & 0xffffe000u;
    std::memcpy(&x, &bits, sizeof x);
    return x;
}

/* How far a queued product has run: the next column of the next matrix. */
struct Progress {
    int p = 0;
    long long j = 0;
};

/* C = alpha A B + beta C for each of `batch` products, accumulated in T; float operands
 * rounded to TF32 first when `tf32`. One column of C is one step: a wait interrupted between
 * two columns leaves `at` at the next, and the next wait goes on from there. */
template <class T>
bool products(bool ta, bool tb, int m, int n, int k, T alpha, const T *A, int lda, long long sa, const T *B, int ldb,
              long long sb, T beta, T *C, int ldc, long long sc, int batch, bool tf32, Progress &at)
{
    auto in = [tf32](T v) -> T {
        if constexpr (std::is_same<T, float>::value) return tf32 ? to_tf32(v) : v;
        else return v;
    };
    for (; at.p < batch; at.p++, at.j = 0) {
        const T *a = A + at.p * sa, *b = B + at.p * sb;
        T *c = C + at.p * sc;
        for (; at.j < n; at.j++) {
            if (step_boundary()) return false;
            const long long j = at.j;
            for (long long i = 0; i < m; i++) {
                T acc = 0;
                for (long long l = 0; l < k; l++) { /* a transposed operand is stored the other way round */
                    const T x = ta ? a[l + i * lda] : a[i + l * lda], y = tb ? b[j + l * ldb] : b[l + j * ldb];
                    acc += in(x) * in(y);
                }
                /* beta == 0: C is not read, as in cuBLAS (it may hold NaNs) */
                c[i + j * ldc] = beta == 0 ? alpha * acc : alpha * acc + beta * c[i + j * ldc];
            }
        }
    }
    return true;
}

template <class T>
cublasStatus_t gemm(const char *call, cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const T *alpha, const T *A, int lda, long long sa, const T *B, int ldb, long long sb,
                    const T *beta, T *C, int ldc, long long sc, int batch)
{
    if (int st = injected(call)) return (cublasStatus_t)st;
    Guard guard(lock());
    const gd_emu_blas &h = blas_of(handle, call);
    if (!h.stream) die("%s: the handle is not bound to a stream, so it would use the legacy default stream", call);
    if (h.device != t_device)
        die("%s: a handle of device %d used while device %d is current", call, h.device, t_device);
    /* op(A) is m x k and op(B) k x n; a transposed operand is stored the other way round */
    const bool tra = ta != CUBLAS_OP_N, trb = tb != CUBLAS_OP_N;
    const int ar = tra ? k : m, ac = tra ? m : k, br = trb ? n : k, bc = trb ? k : n;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < std::max(1, ar) || ldb < std::max(1, br) || ldc < std::max(1, m))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    if (h.workspace && !device_range(h.workspace, h.workspace_bytes, h.device, call, "the workspace"))
        die("%s: the handle's workspace was freed while the handle still uses it", call);
    check_matrices(call, "A", A, ar, ac, lda, sa, batch, h.device);
    check_matrices(call, "B", B, br, bc, ldb, sb, batch, h.device);
    check_matrices(call, "C", (const T *)C, m, n, ldc, sc, batch, h.device);
    const bool tf32 = h.mode == CUBLAS_TF32_TENSOR_OP_MATH; /* the mode when the product is issued */
    enqueue_steps(stream_of(h.stream, call), Kind::work, [=, a = *alpha, b = *beta, at = Progress{}]() mutable {
        return products<T>(tra, trb, m, n, k, a, A, lda, sa, B, ldb, sb, b, C, ldc, sc, batch, tf32, at);
    });
    return CUBLAS_STATUS_SUCCESS;
}

} // namespace

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
    return gemm("cublasSgemm", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double *alpha, const double *A, int lda, const double *B, int ldb, const double *beta,
                           double *C, int ldc)
{
    return gemm("cublasDgemm", h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
    return gemm("cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                batch);
}

cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch)
{
    return gemm("cublasDgemmStridedBatched", h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                batch);
}
