/* memory.cu - the CUDA backend's memory: stream-ordered allocations from gpudev's own pool on
 * each device (runtime.cu creates it and sets how much it keeps), the one allocation path with
 * its retry when the device is full, readable out-of-memory reports, the counters behind
 * memory_stats, and giving the pool's cache back to the driver (empty_cache).
 */
#include "backend_cuda.cuh"

/* ------------------------------------------------------------------------------------------
 * the pool
 * ---------------------------------------------------------------------------------------- */

static int64_t gd_cuda_reserved(const gd_cuda_device *dev)
{
    uint64_t reserved = 0;
    if (cudaMemPoolGetAttribute(dev->pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return (int64_t)reserved;
}

static int gd_cuda_out_of_memory(gd_error *err, const gd_cuda_device *dev, size_t nbytes)
{
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    char asked[32], free_s[32], total_s[32], held[32], reserved[32];
    gd_set_error(err, GD_ERR_DEVICE_OOM,
                  "out of memory on cuda:%d allocating %s: %s free of %s; gpudev holds %s (%s reserved)", dev->index,
                  gd_format_bytes(asked, sizeof asked, nbytes), gd_format_bytes(free_s, sizeof free_s, free_bytes),
                  gd_format_bytes(total_s, sizeof total_s, total_bytes),
                  gd_format_bytes(held, sizeof held, (uint64_t)dev->allocated_bytes.load()),
                  gd_format_bytes(reserved, sizeof reserved, (uint64_t)gd_cuda_reserved(dev)));
    err->cuda_status = (int)cudaErrorMemoryAllocation;
    return GD_ERR_DEVICE_OOM;
}

static void gd_cuda_count(gd_cuda_device *dev, int64_t nbytes, int64_t blocks)
{
    int64_t now = dev->allocated_bytes.fetch_add(nbytes) + nbytes;
    int64_t peak = dev->peak_allocated_bytes.load();
    while (now > peak && !dev->peak_allocated_bytes.compare_exchange_weak(peak, now)) {
    }
    dev->allocations.fetch_add(blocks);
}

int gd_cuda_trim(gd_cuda_device *dev, gd_error *err)
{
    GD_CHECK(cudaStreamSynchronize(dev->stream));
    GD_CHECK(cudaMemPoolTrimTo(dev->pool, 0));
    return GD_OK;
}

int gd_cuda_pool_alloc(void **out, gd_cuda_device *dev, size_t nbytes, bool counted, gd_error *err)
{
    /* An empty array still needs a distinct non-NULL pointer that free accepts. */
    const size_t request = nbytes ? nbytes : 1;
    void *ptr = nullptr;
    cudaError_t st = cudaMallocFromPoolAsync(&ptr, request, dev->pool, dev->stream);
    if (st == cudaErrorMemoryAllocation) {
        /* The pool may hold enough memory in pieces too small for this request, or blocks
         * whose frees have not run yet: let them finish, give everything back, try again. */
        (void)cudaGetLastError();
        int rc = gd_cuda_trim(dev, err);
        if (rc != GD_OK) return rc;
        st = cudaMallocFromPoolAsync(&ptr, request, dev->pool, dev->stream);
    }
    if (st == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return gd_cuda_out_of_memory(err, dev, nbytes);
    }
    if (st != cudaSuccess)
        return gd_cuda_fail(err, st, "cudaMallocFromPoolAsync(&ptr, request, pool, stream)", __FILE__, __LINE__);
    if (counted) gd_cuda_count(dev, (int64_t)nbytes, 1);
    *out = ptr;
    return GD_OK;
}

void gd_cuda_pool_free(void *ptr, gd_cuda_device *dev, size_t nbytes, bool counted)
{
    if (cudaFreeAsync(ptr, dev->stream) != cudaSuccess) (void)cudaGetLastError();
    if (counted) gd_cuda_count(dev, -(int64_t)nbytes, -1);
}

/* ------------------------------------------------------------------------------------------
 * vtable entries
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_alloc(void **out, int device, size_t nbytes, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    return gd_cuda_pool_alloc(out, dev, nbytes, true, err);
}

/* Stream-ordered, so freeing an array that queued kernels still read is safe. Errors cannot
 * be reported from a destructor; they also occur legitimately while CUDA tears down at
 * interpreter exit. The counters go down even then: the array is gone either way. */
void gd_cuda_free(void *ptr, int device, size_t nbytes)
{
    if (!ptr || device < 0 || device >= GD_CUDA_MAX_DEVICES) return;
    gd_error err;
    gd_cuda_device *dev;
    if (gd_cuda_enter(&dev, device, &err) == GD_OK) gd_cuda_pool_free(ptr, dev, nbytes, true);
    else gd_cuda_count(gd_cuda_device_slot(device), -(int64_t)nbytes, -1);
}

int gd_cuda_get_memory_stats(gd_memory_stats *out, int device, gd_error *err)
{
    int rc = gd_cuda_check_index(device, err);
    if (rc != GD_OK) return rc;
    gd_cuda_device *dev = gd_cuda_device_slot(device);
    out->allocated_bytes = dev->allocated_bytes.load();
    out->peak_allocated_bytes = dev->peak_allocated_bytes.load();
    out->allocations = dev->allocations.load();
    out->reserved_bytes = dev->ready.load(std::memory_order_acquire) ? gd_cuda_reserved(dev) : 0;
    return GD_OK;
}

void gd_cuda_reset_peak_memory(int device)
{
    if (device < 0 || device >= GD_CUDA_MAX_DEVICES) return;
    gd_cuda_device *dev = gd_cuda_device_slot(device);
    dev->peak_allocated_bytes.store(dev->allocated_bytes.load());
}

int gd_cuda_empty_cache(int device, gd_error *err)
{
    int rc = gd_cuda_check_index(device, err);
    if (rc != GD_OK) return rc;
    if (!gd_cuda_device_slot(device)->ready.load(std::memory_order_acquire)) return GD_OK; /* pool never used */
    gd_cuda_device *dev;
    rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    /* The whole device: work of other streams may still read gpudev memory (exports). */
    GD_CHECK(cudaDeviceSynchronize());
    GD_CHECK(cudaMemPoolTrimTo(dev->pool, 0));
    return GD_OK;
}
