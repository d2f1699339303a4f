/* backend_cuda.cu - the CUDA backend's table and its runtime half: lazy per-device state
 * (stream, memory pool), errors, stream-ordered memory with readable out-of-memory reports,
 * host/device/peer copies and synchronization. The kernels live in elementwise.cu, kernels.cu,
 * reduce.cu and gemm.cu; the Python module in module.cu.
 *
 * Nothing here runs at import: a machine without a driver or a GPU must still load the module
 * and see zero GPUs, and cuBLAS refuses to initialise without a driver.
 */
#include "backend_cuda.cuh"

#include <cstdarg>
#include <cstdio>
#include <cstring>

/* ------------------------------------------------------------------------------------------
 * errors
 * ---------------------------------------------------------------------------------------- */

/* "csrc/cuda/x.cu" whatever directory the build ran from. */
static const char *gd_short_path(const char *file)
{
    const char *p = strstr(file, "csrc/");
    return p ? p : file;
}

/* Errors after which the context is unusable: every later call fails the same way. */
static bool gd_cuda_is_sticky(cudaError_t st)
{
    switch (st) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
        return true;
    default:
        return false;
    }
}

static gd_status gd_cuda_status_code(cudaError_t st)
{
    switch (st) {
    case cudaErrorMemoryAllocation:
        return GD_ERR_DEVICE_OOM;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorDevicesUnavailable:
        return GD_ERR_DEVICE_UNAVAILABLE;
    default:
        return GD_ERR_CUDA;
    }
}

int gd_cuda_fail(gd_error *err, cudaError_t status, const char *call, const char *file, int line)
{
    (void)cudaGetLastError();
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        device = -1;
    }
    err->code = gd_cuda_status_code(status);
    err->cuda_status = (int)status;
    snprintf(err->message, sizeof err->message, "CUDA error on cuda:%d: %.200s failed with %s (%s) at %s:%d%s",
             device, call, cudaGetErrorName(status), cudaGetErrorString(status), gd_short_path(file), line,
             gd_cuda_is_sticky(status) ? "; the GPU context is now unusable, restart the Python process" : "");
    return err->code;
}

int gd_cuda_fail(gd_error *err, cublasStatus_t status, const char *call, const char *file, int line)
{
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        device = -1;
    }
    err->code = status == CUBLAS_STATUS_ALLOC_FAILED ? GD_ERR_DEVICE_OOM : GD_ERR_CUDA;
    err->cuda_status = (int)status;
    snprintf(err->message, sizeof err->message, "cuBLAS error on cuda:%d: %.200s failed with %s (%s) at %s:%d",
             device, call, cublasGetStatusName(status), cublasGetStatusString(status), gd_short_path(file), line);
    return err->code;
}

/* ------------------------------------------------------------------------------------------
 * devices and their lazy state
 * ---------------------------------------------------------------------------------------- */

static gd_cuda_device g_devices[GD_CUDA_MAX_DEVICES];

/* The device count never changes within a process, and the core asks for it often. */
static std::atomic<int> g_device_count{-1};
static std::atomic<int> g_device_count_status{0};

std::atomic<bool> gd_cuda_tf32{false};

gd_cuda_device *gd_cuda_device_slot(int device) { return &g_devices[device]; }

int gd_cuda_device_count(void)
{
    int n = g_device_count.load(std::memory_order_acquire);
    if (n >= 0) return n;
    n = 0; /* cudaGetDeviceCount leaves it untouched on failure */
    cudaError_t st = cudaGetDeviceCount(&n);
    if (st != cudaSuccess) {
        /* cudaErrorNoDevice, cudaErrorInsufficientDriver or a failed driver init: no GPUs */
        (void)cudaGetLastError();
        n = 0;
    }
    if (n > GD_CUDA_MAX_DEVICES) n = GD_CUDA_MAX_DEVICES;
    g_device_count_status.store((int)st, std::memory_order_relaxed);
    g_device_count.store(n, std::memory_order_release);
    return n;
}

int gd_cuda_check_index(int device, gd_error *err)
{
    int count = gd_cuda_device_count();
    if (device >= 0 && device < count) return GD_OK;
    cudaError_t why = (cudaError_t)g_device_count_status.load(std::memory_order_relaxed);
    if (count == 0 && why != cudaSuccess) {
        gd_set_error(err, GD_ERR_DEVICE_UNAVAILABLE,
                      "cuda:%d is not available: no CUDA GPU is usable here (cudaGetDeviceCount failed with %s: %s)",
                      device, cudaGetErrorName(why), cudaGetErrorString(why));
        err->cuda_status = (int)why;
        return GD_ERR_DEVICE_UNAVAILABLE;
    }
    gd_set_error(err, GD_ERR_DEVICE_UNAVAILABLE, "cuda:%d is not available: this machine has %d CUDA GPU%s%s",
                  device, count, count == 1 ? "" : "s",
                  count > 0 ? "; use an index from 0 to num_gpus() - 1" : "");
    err->cuda_status = (int)cudaErrorInvalidDevice;
    return GD_ERR_DEVICE_UNAVAILABLE;
}

/* cudaGetDevice only reads a thread-local, so comparing first keeps the common case cheap. */
static int gd_cuda_set_current(int device, gd_error *err)
{
    int current = -1;
    GD_CHECK(cudaGetDevice(&current));
    if (current != device) GD_CHECK(cudaSetDevice(device));
    return GD_OK;
}

/* Each step is idempotent, so a failed attempt (say, out of memory for the stream) can be
 * retried by the next call without leaking what the first attempt created. */
static int gd_cuda_device_init(gd_cuda_device *dev, int device, gd_error *err)
{
    std::lock_guard<std::mutex> lock(dev->mutex);
    if (dev->ready.load(std::memory_order_relaxed)) return GD_OK;
    if (!dev->stream) GD_CHECK(cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking));
    if (!dev->order) GD_CHECK(cudaEventCreateWithFlags(&dev->order, cudaEventDisableTiming));
    if (!dev->pool) {
        cudaMemPool_t pool = nullptr;
        GD_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
        /* With the default threshold of 0 the pool gives freed memory back to the driver at
         * every synchronization and the next allocation pays to map it again. */
        uint64_t keep = UINT64_MAX;
        GD_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
        dev->pool = pool;
    }
    GD_CHECK(cudaDeviceGetAttribute(&dev->sm_count, cudaDevAttrMultiProcessorCount, device));
    int max_pitch = 0;
    GD_CHECK(cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, device));
    dev->max_pitch = (size_t)max_pitch;
    dev->ready.store(true, std::memory_order_release);
    return GD_OK;
}

int gd_cuda_enter(gd_cuda_device **out, int device, gd_error *err)
{
    int rc = gd_cuda_check_index(device, err);
    if (rc != GD_OK) return rc;
    gd_cuda_device *dev = &g_devices[device];
    rc = gd_cuda_set_current(device, err);
    if (rc != GD_OK) return rc;
    if (!dev->ready.load(std::memory_order_acquire)) {
        rc = gd_cuda_device_init(dev, device, err);
        if (rc != GD_OK) return rc;
    }
    *out = dev;
    return GD_OK;
}

int gd_cuda_synchronize(int device, gd_error *err)
{
    int rc = gd_cuda_check_index(device, err);
    if (rc != GD_OK) return rc;
    if (!g_devices[device].ready.load(std::memory_order_acquire)) return GD_OK; /* nothing queued */
    gd_cuda_device *dev;
    rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    /* also where faults of earlier kernels surface */
    GD_CHECK(cudaStreamSynchronize(dev->stream));
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * memory
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

static int gd_cuda_out_of_memory(gd_error *err, const gd_cuda_device *dev, int device, size_t nbytes)
{
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    char asked[32], free_s[32], total_s[32], held[32], reserved[32];
    gd_set_error(err, GD_ERR_DEVICE_OOM,
                  "out of memory on cuda:%d allocating %s: %s free of %s; gpudev holds %s (%s reserved)", device,
                  gd_format_bytes(asked, sizeof asked, nbytes), gd_format_bytes(free_s, sizeof free_s, free_bytes),
                  gd_format_bytes(total_s, sizeof total_s, total_bytes),
                  gd_format_bytes(held, sizeof held, (uint64_t)dev->allocated_bytes.load()),
                  gd_format_bytes(reserved, sizeof reserved, (uint64_t)gd_cuda_reserved(dev)));
    err->cuda_status = (int)cudaErrorMemoryAllocation;
    return GD_ERR_DEVICE_OOM;
}

int gd_cuda_alloc(void **out, int device, size_t nbytes, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    /* An empty array still needs a distinct non-NULL pointer that free accepts. */
    size_t request = nbytes ? nbytes : 1;
    void *ptr = nullptr;
    cudaError_t st = cudaMallocAsync(&ptr, request, dev->stream);
    if (st == cudaErrorMemoryAllocation) {
        /* The pool may hold enough memory in pieces too small for this request: wait until
         * pending frees are done, hand everything unused back to the driver, try once more. */
        (void)cudaGetLastError();
        GD_CHECK(cudaStreamSynchronize(dev->stream));
        GD_CHECK(cudaMemPoolTrimTo(dev->pool, 0));
        st = cudaMallocAsync(&ptr, request, dev->stream);
    }
    if (st == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        return gd_cuda_out_of_memory(err, dev, device, nbytes);
    }
    if (st != cudaSuccess) return gd_cuda_fail(err, st, "cudaMallocAsync(&ptr, request, stream)", __FILE__, __LINE__);

    int64_t now = dev->allocated_bytes.fetch_add((int64_t)nbytes) + (int64_t)nbytes;
    int64_t peak = dev->peak_allocated_bytes.load();
    while (now > peak && !dev->peak_allocated_bytes.compare_exchange_weak(peak, now)) {
    }
    dev->allocations.fetch_add(1);
    *out = ptr;
    return GD_OK;
}

/* Stream-ordered: the memory returns to the pool once the work queued before it is done, so
 * freeing an array that queued kernels still read is safe. Errors cannot be reported from a
 * destructor; they also occur legitimately while CUDA tears down at interpreter exit. */
void gd_cuda_free(void *ptr, int device, size_t nbytes)
{
    if (!ptr) return;
    gd_error err;
    gd_cuda_device *dev;
    if (gd_cuda_enter(&dev, device, &err) != GD_OK) return;
    if (cudaFreeAsync(ptr, dev->stream) != cudaSuccess) (void)cudaGetLastError();
    dev->allocated_bytes.fetch_sub((int64_t)nbytes);
    dev->allocations.fetch_sub(1);
}

int gd_cuda_get_memory_stats(gd_cuda_memory_stats *out, int device, gd_error *err)
{
    int rc = gd_cuda_check_index(device, err);
    if (rc != GD_OK) return rc;
    gd_cuda_device *dev = &g_devices[device];
    out->allocated_bytes = dev->allocated_bytes.load();
    out->peak_allocated_bytes = dev->peak_allocated_bytes.load();
    out->allocations = dev->allocations.load();
    out->reserved_bytes = dev->ready.load(std::memory_order_acquire) ? gd_cuda_reserved(dev) : 0;
    return GD_OK;
}

void gd_cuda_reset_peak_memory_stats(int device)
{
    if (device < 0 || device >= GD_CUDA_MAX_DEVICES) return;
    gd_cuda_device *dev = &g_devices[device];
    dev->peak_allocated_bytes.store(dev->allocated_bytes.load());
}

int gd_cuda_empty_cache(int device, gd_error *err)
{
    int rc = gd_cuda_check_index(device, err);
    if (rc != GD_OK) return rc;
    if (!g_devices[device].ready.load(std::memory_order_acquire)) return GD_OK; /* pool never used */
    gd_cuda_device *dev;
    rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    /* Frees the host has not yet seen complete still pin their memory in the pool. */
    GD_CHECK(cudaDeviceSynchronize());
    GD_CHECK(cudaMemPoolTrimTo(dev->pool, 0));
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * copies
 * ---------------------------------------------------------------------------------------- */

/* The source is the caller's memory, which may be freed as soon as we return; waiting for the
 * copy is what makes that safe whether the host memory is pageable or pinned. */
int gd_cuda_copy_from_host(void *dst, int device, const void *host_src, size_t nbytes, gd_error *err)
{
    if (nbytes == 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, dev->stream));
    GD_CHECK(cudaStreamSynchronize(dev->stream));
    return GD_OK;
}

int gd_cuda_copy_to_host(void *host_dst, const void *src, int device, size_t nbytes, gd_error *err)
{
    if (nbytes == 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaMemcpyAsync(host_dst, src, nbytes, cudaMemcpyDeviceToHost, dev->stream));
    GD_CHECK(cudaStreamSynchronize(dev->stream));
    return GD_OK;
}

int gd_cuda_copy_device(void *dst, int dst_device, const void *src, int src_device, size_t nbytes, gd_error *err)
{
    if (nbytes == 0) return GD_OK;
    gd_cuda_device *s, *d;
    int rc = gd_cuda_enter(&s, src_device, err);
    if (rc != GD_OK) return rc;
    if (dst_device == src_device) {
        GD_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, s->stream));
        return GD_OK;
    }
    /* The copy runs on the destination's stream, so order it both ways: after the work
     * already queued on the source (which may still be writing src), and before anything
     * queued on the source later (an in-place update, or the stream-ordered free of src).
     * An `order` event is shared by threads; a wait that sees a later record of it only waits
     * longer on the same stream, never too little. Plain memcpy cannot cross GPUs for
     * stream-ordered pool memory; cudaMemcpyPeerAsync can, with or without peer access. */
    GD_CHECK(cudaEventRecord(s->order, s->stream));
    rc = gd_cuda_enter(&d, dst_device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaStreamWaitEvent(d->stream, s->order, 0));
    GD_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, nbytes, d->stream));
    GD_CHECK(cudaEventRecord(d->order, d->stream));
    rc = gd_cuda_enter(&s, src_device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaStreamWaitEvent(s->stream, d->order, 0));
    return GD_OK;
}

int gd_cuda_copy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width, size_t height,
                    int device, gd_error *err)
{
    if (width == 0 || height == 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (height == 1 || (dst_pitch == width && src_pitch == width)) {
        GD_CHECK(cudaMemcpyAsync(dst, src, width * height, cudaMemcpyDeviceToDevice, dev->stream));
    } else if (dst_pitch <= dev->max_pitch && src_pitch <= dev->max_pitch) {
        GD_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, cudaMemcpyDeviceToDevice,
                                   dev->stream));
    } else {
        /* rows more than max_pitch (2 GiB) apart: so few fit in memory that a loop is fine */
        for (size_t r = 0; r < height; r++)
            GD_CHECK(cudaMemcpyAsync((char *)dst + r * dst_pitch, (const char *)src + r * src_pitch, width,
                                     cudaMemcpyDeviceToDevice, dev->stream));
    }
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * the table
 * ---------------------------------------------------------------------------------------- */

static const gd_backend gd_cuda_table = {
    GD_BACKEND_ABI_VERSION, /* abi_version */
    "cuda",                 /* name */
    gd_cuda_device_count,   /* device_count */
    gd_cuda_synchronize,    /* synchronize */
    gd_cuda_alloc,          /* alloc */
    gd_cuda_free,           /* free */
    gd_cuda_copy_from_host, /* copy_from_host */
    gd_cuda_copy_to_host,   /* copy_to_host */
    gd_cuda_copy_device,    /* copy_device */
    gd_cuda_copy_2d,        /* copy_2d */
    gd_cuda_unary,          /* unary */
    gd_cuda_binary,         /* binary */
    gd_cuda_astype,         /* astype */
    gd_cuda_reduce,         /* reduce */
    gd_cuda_gemm,           /* gemm */
    gd_cuda_permute,        /* permute */
    gd_cuda_arange,         /* arange */
    gd_cuda_random,         /* random */
    nullptr,                /* memory_stats */
    nullptr,                /* reset_peak_memory */
    nullptr,                /* empty_cache */
    nullptr,                /* device_props */
    nullptr,                /* synchronize_all */
    nullptr,                /* event_create */
    nullptr,                /* event_record */
    nullptr,                /* event_elapsed_ms */
    nullptr,                /* event_destroy */
};

extern "C" const gd_backend *gd_cuda_backend(void) { return &gd_cuda_table; }
