/* cuda_probe.cu - the CUDA helpers of the conformance test's CUDA target (cuda_probe.h says
 * what each does): another library's streams, pool and consumer kernel, built like the
 * backend, for a GPU or for the CPU emulation.
 */
#include "cuda_probe.h"

#include <cuda_runtime.h>

/* ------------------------------------------------------------------------------------------
 * streams
 * ---------------------------------------------------------------------------------------- */

static cudaStream_t stream_of(uint64_t s) { return (cudaStream_t)(uintptr_t)s; }

extern "C" int gdt_cuda_stream_create(uint64_t *out, int device)
{
    cudaStream_t s = nullptr;
    cudaError_t st = cudaSetDevice(device);
    if (st == cudaSuccess) st = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    *out = (uint64_t)(uintptr_t)s;
    return (int)st;
}

extern "C" int gdt_cuda_stream_sync(uint64_t stream) { return (int)cudaStreamSynchronize(stream_of(stream)); }

extern "C" void gdt_cuda_stream_destroy(uint64_t stream) { (void)cudaStreamDestroy(stream_of(stream)); }

/* ------------------------------------------------------------------------------------------
 * the consumer
 * ---------------------------------------------------------------------------------------- */

#define PROBE_THREADS 256

/* Thread 0 spins `cycles` clock cycles first, so work queued after the kernel on other
 * streams runs before it reads x unless something orders it. */
__global__ void consume_kernel(double *out, const float *x, long long n, long long cycles)
{
    __shared__ double partial[PROBE_THREADS];
    if (threadIdx.x == 0 && cycles > 0) {
        const long long start = clock64();
        while (clock64() - start < cycles) {
        }
    }
    __syncthreads();
    double acc = 0;
    for (long long i = threadIdx.x; i < n; i += PROBE_THREADS) acc += x[i];
    partial[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0;
        for (int t = 0; t < PROBE_THREADS; t++) total += partial[t];
        out[0] = total;
    }
}

extern "C" int gdt_cuda_consume(double *out, const float *x, int64_t n, int device, uint64_t stream, double ms)
{
    int khz = 0;
    cudaError_t st = cudaSetDevice(device);
    if (st == cudaSuccess) st = cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device);
    if (st != cudaSuccess) return (int)st;
    consume_kernel<<<1, PROBE_THREADS, 0, stream_of(stream)>>>(out, x, (long long)n, (long long)(ms * khz));
    return (int)cudaGetLastError();
}

/* ------------------------------------------------------------------------------------------
 * the current device, pools
 * ---------------------------------------------------------------------------------------- */

extern "C" int gdt_cuda_current_device(void)
{
    int d = -1;
    return cudaGetDevice(&d) == cudaSuccess ? d : -1;
}

extern "C" int gdt_cuda_set_current_device(int device) { return (int)cudaSetDevice(device); }

extern "C" int gdt_cuda_foreign_pool(void **out, int device)
{
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    cudaError_t st = cudaMemPoolCreate(&pool, &props);
    if (st == cudaSuccess) st = cudaDeviceSetMemPool(device, pool);
    *out = pool;
    return (int)st;
}

extern "C" int64_t gdt_cuda_pool_reserved(void *pool)
{
    uint64_t reserved = 0;
    if (cudaMemPoolGetAttribute((cudaMemPool_t)pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess)
        return -1;
    return (int64_t)reserved;
}

extern "C" void gdt_cuda_foreign_pool_drop(void *pool, int device)
{
    cudaMemPool_t def = nullptr;
    if (cudaDeviceGetDefaultMemPool(&def, device) == cudaSuccess) (void)cudaDeviceSetMemPool(device, def);
    (void)cudaMemPoolDestroy((cudaMemPool_t)pool);
}
