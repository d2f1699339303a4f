/* cuda_probe.h - what the CUDA target of the conformance test (target_cuda.c) needs besides
 * the backend's table: streams and a memory pool as another library in the process would
 * have them, a kernel that reads memory on such a stream (a consumer of exported memory), and
 * the calling thread's current device. Defined in cuda_probe.cu, compiled like the backend
 * (nvcc, or the CPU emulation); plain C interface.
 */
#ifndef GPUDEV_CUDA_PROBE_H
#define GPUDEV_CUDA_PROBE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Each returns 0 or the failing call's cudaError_t value. */

/* A non-blocking stream on `device`, as DLPack passes it (a handle). */
int gdt_cuda_stream_create(uint64_t *out, int device);
int gdt_cuda_stream_sync(uint64_t stream);
void gdt_cuda_stream_destroy(uint64_t stream);

/* Queue on `stream` (of `device`): a wait of `ms` milliseconds (0: none), then
 * out[0] = x[0] + ... + x[n - 1], summed in double by one block. */
int gdt_cuda_consume(double *out, const float *x, int64_t n, int device, uint64_t stream, double ms);

/* The calling thread's current device (-1 when it cannot be read), and setting it. */
int gdt_cuda_current_device(void);
int gdt_cuda_set_current_device(int device);

/* A new memory pool made the current pool of `device`, as a library that brings its own does;
 * how many bytes it reserves; and putting the device's default pool back. */
int gdt_cuda_foreign_pool(void **out, int device);
int64_t gdt_cuda_pool_reserved(void *pool);
void gdt_cuda_foreign_pool_drop(void *pool, int device);

#ifdef __cplusplus
}
#endif

#endif /* GPUDEV_CUDA_PROBE_H */
