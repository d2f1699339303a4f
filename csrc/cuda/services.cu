/* services.cu - the CUDA backend's device services: the properties of a GPU (for Device.info()
 * and the exercises' roofs), waiting for every stream of the process on a device (importing
 * memory another library may still be writing), CUDA events, which time work on the device's
 * own clock, ordering gpudev's stream against another library's (DLPack exports), and the
 * pointer chase behind gd.latency_table. Memory statistics and empty_cache live with the pool,
 * in memory.cu.
 */
#include "backend_cuda.cuh"
#include "chase.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

/* ------------------------------------------------------------------------------------------
 * properties and whole-device synchronization
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_device_props(gd_device_props *out, int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    cudaDeviceProp prop;
    size_t free_bytes = 0, total_bytes = 0;
    GD_CHECK(cudaGetDeviceProperties(&prop, device));
    /* CUDA 13 removed the clock fields from cudaDeviceProp */
    GD_CHECK(cudaDeviceGetAttribute(&out->clock_rate_khz, cudaDevAttrClockRate, device));
    GD_CHECK(cudaDeviceGetAttribute(&out->memory_clock_rate_khz, cudaDevAttrMemoryClockRate, device));
    GD_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->cc_major = prop.major;
    out->cc_minor = prop.minor;
    out->multiprocessors = prop.multiProcessorCount;
    out->memory_bus_width = prop.memoryBusWidth;
    out->l2_cache_bytes = prop.l2CacheSize;
    out->total_memory = (int64_t)total_bytes;
    out->free_memory = (int64_t)free_bytes;
    gd_cuda_versions(&out->driver_version, &out->runtime_version);
    return GD_OK;
}

/* Waits for every stream of this process on the GPU, not only gpudev's. */
int gd_cuda_synchronize_all(int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaDeviceSynchronize());
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * events
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_event_create(void **out, int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    cudaEvent_t event = nullptr;
    GD_CHECK(cudaEventCreate(&event));
    *out = event;
    return GD_OK;
}

/* Recorded on the device's gpudev stream: the point after all gpudev work queued so far. */
int gd_cuda_event_record(void *event, int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaEventRecord((cudaEvent_t)event, dev->stream));
    return GD_OK;
}

int gd_cuda_event_elapsed_ms(double *out, void *start, void *end, int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    float ms = 0.0f;
    GD_CHECK(cudaEventSynchronize((cudaEvent_t)end));
    GD_CHECK(cudaEventElapsedTime(&ms, (cudaEvent_t)start, (cudaEvent_t)end));
    *out = (double)ms;
    return GD_OK;
}

/* Errors cannot be reported from a destructor; they also occur legitimately while CUDA tears
 * down at interpreter exit. */
void gd_cuda_event_destroy(void *event, int device)
{
    (void)device;
    if (cudaEventDestroy((cudaEvent_t)event) != cudaSuccess) (void)cudaGetLastError();
}

/* ------------------------------------------------------------------------------------------
 * ordering against other libraries' streams
 * ---------------------------------------------------------------------------------------- */

/* DLPack's stream numbers are CUDA's handles: 1 is cudaStreamLegacy, 2 cudaStreamPerThread,
 * any other value the consumer's cudaStream_t, valid in every runtime of the process (a
 * stream belongs to the device's context, not to one copy of libcudart). */
static cudaStream_t gd_cuda_foreign_stream(uint64_t stream) { return (cudaStream_t)(uintptr_t)stream; }

/* Work queued on `waiter` from now on starts after the work queued on `waited` so far. One
 * event per call: a shared one could be recorded again by another thread between this record
 * and the wait. Destroying it at once is safe: the wait keeps the record it was given. */
static int gd_cuda_order(cudaStream_t waiter, cudaStream_t waited, gd_error *err)
{
    cudaEvent_t event = nullptr;
    GD_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    cudaError_t st = cudaEventRecord(event, waited);
    if (st == cudaSuccess) st = cudaStreamWaitEvent(waiter, event, 0);
    if (cudaEventDestroy(event) != cudaSuccess) (void)cudaGetLastError();
    if (st != cudaSuccess)
        return gd_cuda_fail(err, st, "cudaEventRecord(event, waited); cudaStreamWaitEvent(waiter, event, 0)", __FILE__,
                            __LINE__);
    return GD_OK;
}

/* An export: the consumer's later work on `stream` sees everything gpudev wrote. */
int gd_cuda_stream_wait_device(int device, uint64_t stream, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    return rc == GD_OK ? gd_cuda_order(gd_cuda_foreign_stream(stream), dev->stream, err) : rc;
}

/* A release: gpudev's later work, the stream-ordered free of the memory included, waits for
 * what the consumer queued on `stream` (which may still read it). */
int gd_cuda_device_wait_stream(int device, uint64_t stream, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    return rc == GD_OK ? gd_cuda_order(dev->stream, gd_cuda_foreign_stream(stream), err) : rc;
}

/* ------------------------------------------------------------------------------------------
 * the pointer chase: the latency of one load from the caches and from device memory
 * ---------------------------------------------------------------------------------------- */

namespace {

/* One thread walks the ring: each load's address is the previous load's value, so the loads
 * cannot overlap and the time per step is one load's latency (plus a few instructions). */
__global__ void chase_kernel(const uint64_t *ring, uint64_t start, int64_t steps, uint64_t *end)
{
    uint64_t p = start;
    for (int64_t i = 0; i < steps; ++i) p = ring[p];
    *end = p;
}

/* The warm-up lap, then `repeats` walks of `steps` loads, each timed by the host clock from
 * its launch to the end of a stream synchronization (a launch costs microseconds; a walk of
 * many steps takes milliseconds). ring and end are on the device. */
int chase_timed(double *ns_per_load, int repeats, const uint64_t *ring, int64_t nodes, int64_t steps, uint64_t *end,
                cudaStream_t stream, gd_error *err)
{
    chase_kernel<<<1, 1, 0, stream>>>(ring, 0, nodes < steps ? nodes : steps, end);
    GD_CHECK(cudaGetLastError());
    GD_CHECK(cudaStreamSynchronize(stream));
    for (int r = 0; r < repeats; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        chase_kernel<<<1, 1, 0, stream>>>(ring, 0, steps, end);
        GD_CHECK(cudaGetLastError());
        GD_CHECK(cudaStreamSynchronize(stream));
        std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - t0;
        ns_per_load[r] = took.count() / (double)steps;
    }
    return GD_OK;
}

} // namespace

int gd_cuda_pointer_chase(double *ns_per_load, int repeats, int64_t working_set_bytes, int64_t steps, int device,
                          gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    int64_t nodes = working_set_bytes / GD_CHASE_LINE;
    size_t bytes = (size_t)(nodes * GD_CHASE_LINE);
    uint64_t *host = (uint64_t *)calloc((size_t)nodes, GD_CHASE_LINE);
    if (!host || gd_chase_ring(host, nodes) < 0) {
        free(host);
        return gd_set_error(err, GD_ERR_HOST_OOM, "pointer_chase: could not allocate a %lld-byte ring on the host",
                            (long long)working_set_bytes);
    }
    void *ring = nullptr;
    rc = gd_cuda_pool_alloc(&ring, dev, bytes + GD_CHASE_LINE, true, err); /* the ring, then `end` */
    if (rc == GD_OK) {
        uint64_t *end = (uint64_t *)((char *)ring + bytes);
        cudaError_t st = cudaMemcpyAsync(ring, host, bytes, cudaMemcpyHostToDevice, dev->stream);
        rc = st != cudaSuccess ? gd_cuda_fail(err, st, "cudaMemcpyAsync(ring, host, bytes)", __FILE__, __LINE__)
                               : chase_timed(ns_per_load, repeats, (const uint64_t *)ring, nodes, steps, end,
                                             dev->stream, err);
        gd_cuda_pool_free(ring, dev, bytes + GD_CHASE_LINE, true);
    }
    free(host); /* after the walks: the copy from it was synchronized by then, or failed */
    return rc;
}
