/* runtime.cu - the CUDA backend's runtime half: errors (every CUDA and cuBLAS failure becomes
 * a gd_error naming the call, the error and file:line), the device count, the device guard,
 * and lazy per-device state (stream, gpudev's own memory pool and its release policy), made
 * current by gd_cuda_enter before any work.
 *
 * Nothing here runs at import: a machine without a driver or a GPU must still load the module
 * and see zero GPUs, and cuBLAS refuses to initialise without a driver.
 */
#include "backend_cuda.cuh"

#include <cstdio>
#include <cstdlib>
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
    /* a kernel cuBLAS launched may have failed too: the next launch check must not see it */
    (void)cudaGetLastError();
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
 * devices
 * ---------------------------------------------------------------------------------------- */

static gd_cuda_device g_devices[GD_CUDA_MAX_DEVICES];

/* The device count never changes within a process, and the core asks for it often. */
static std::atomic<int> g_device_count{-1};
static std::atomic<int> g_device_count_status{0};

std::atomic<bool> gd_cuda_tf32{false};

bool gd_cuda_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && strcmp(v, "1") == 0;
}

bool gd_cuda_narrow_index(int64_t n)
{
    static const bool wide = gd_cuda_env_flag("GPUDEV_CUDA_WIDE_INDEX");
    return !wide && n >= 0 && n <= (int64_t)UINT32_MAX;
}

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

void gd_cuda_versions(int *driver, int *runtime)
{
    *driver = *runtime = 0;
    if (cudaDriverGetVersion(driver) != cudaSuccess) {
        (void)cudaGetLastError();
        *driver = 0; /* no driver */
    }
    if (cudaRuntimeGetVersion(runtime) != cudaSuccess) {
        (void)cudaGetLastError();
        *runtime = 0;
    }
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

/* ------------------------------------------------------------------------------------------
 * the device guard
 * ---------------------------------------------------------------------------------------- */

/* The driver's calls the guard uses, reached through the runtime so that gpudev needs no link
 * to libcuda; each NULL where the driver lacks it (the emulation has only the first two). */
struct gd_driver_calls {
    int (*device_get)(int *dev, int ordinal);                          /* cuDeviceGet */
    int (*primary_state)(int dev, unsigned *flags, int *active);       /* cuDevicePrimaryCtxGetState */
    int (*primary_retain)(void **ctx, int dev);                        /* cuDevicePrimaryCtxRetain */
    int (*push)(void *ctx);                                            /* cuCtxPushCurrent */
    int (*pop)(void **ctx);                                            /* cuCtxPopCurrent */
    int (*set)(void *ctx);                                             /* cuCtxSetCurrent */
};

static void *gd_driver_call(const char *name)
{
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    return fn;
}

static const gd_driver_calls &gd_driver()
{
    static const gd_driver_calls calls{
        (int (*)(int *, int))gd_driver_call("cuDeviceGet"),
        (int (*)(int, unsigned *, int *))gd_driver_call("cuDevicePrimaryCtxGetState"),
        (int (*)(void **, int))gd_driver_call("cuDevicePrimaryCtxRetain"),
        (int (*)(void *))gd_driver_call("cuCtxPushCurrent"),
        (int (*)(void **))gd_driver_call("cuCtxPopCurrent"),
        (int (*)(void *))gd_driver_call("cuCtxSetCurrent"),
    };
    return calls;
}

/* Whether `device`'s primary context exists. Unknown (an old driver) counts as yes, which
 * restores as before. */
static bool gd_cuda_has_context(int device)
{
    const gd_driver_calls &d = gd_driver();
    if (!d.device_get || !d.primary_state) return true;
    int dev = 0, active = 0;
    unsigned flags = 0;
    if (d.device_get(&dev, device) != 0 || d.primary_state(dev, &flags, &active) != 0) return true;
    return active != 0;
}

/* `device`'s primary context, retained once for the life of the process; NULL when the driver
 * lacks the calls or refuses. */
static void *gd_cuda_primary(int device)
{
    static std::atomic<void *> primary[GD_CUDA_MAX_DEVICES];
    void *ctx = primary[device].load(std::memory_order_acquire);
    const gd_driver_calls &d = gd_driver();
    if (ctx || !d.device_get || !d.primary_retain || !d.push || !d.pop || !d.set) return ctx;
    int dev = 0;
    if (d.device_get(&dev, device) != 0 || d.primary_retain(&ctx, dev) != 0) return nullptr;
    void *expected = nullptr; /* another thread may have retained it meanwhile: one retain kept */
    return primary[device].compare_exchange_strong(expected, ctx) ? ctx : expected;
}

/* The guard of the table entry running on this thread, when one is: what it saved and whether
 * it pushed a context (see gd_cuda_set_current). Entries never nest. */
static thread_local bool t_guarded = false, t_pushed = false;

/* cudaGetDevice only reads a thread-local, so the guard costs two reads when gpudev's device
 * is already the thread's (the common case) and one cudaSetDevice back when it was not.
 *
 * A thread that never chose a device reads device 0 here. Putting 0 back with cudaSetDevice
 * would create a context on GPU 0 (about 0.5 GB) in a process that only ever uses cuda:1, and
 * leaving the thread on cuda:1 would move PyTorch's and CuPy's default device in it. So when
 * the thread's device has no context, gpudev's device is entered by pushing its primary
 * context onto the thread's context stack (the runtime uses a context the driver made
 * current) and left by popping it: the thread is back where it was, with no context made.
 * Not yet run on a machine with two GPUs; where the driver lacks these calls (the emulation)
 * the device is restored only when its context exists, as PyTorch's MaybeSetDevice does. */
gd_cuda_device_guard::gd_cuda_device_guard() : saved_(-1)
{
    if (cudaGetDevice(&saved_) != cudaSuccess) {
        (void)cudaGetLastError();
        saved_ = -1;
    }
    t_guarded = true;
    t_pushed = false;
}

gd_cuda_device_guard::~gd_cuda_device_guard()
{
    t_guarded = false;
    if (t_pushed) {
        t_pushed = false;
        void *ctx = nullptr;
        (void)gd_driver().pop(&ctx);
        return;
    }
    int now = -1;
    if (saved_ < 0) return;
    if (cudaGetDevice(&now) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    if (now != saved_ && gd_cuda_has_context(saved_) && cudaSetDevice(saved_) != cudaSuccess) (void)cudaGetLastError();
}

/* Inside a guard that pushed a context, another device replaces it on the stack (the pop
 * then still leaves the thread as it was). */
static int gd_cuda_set_current(int device, gd_error *err)
{
    int current = -1;
    GD_CHECK(cudaGetDevice(&current));
    if (current == device) return GD_OK;
    if (t_guarded && (t_pushed || !gd_cuda_has_context(current))) {
        void *ctx = gd_cuda_primary(device);
        if (ctx && (t_pushed ? gd_driver().set(ctx) : gd_driver().push(ctx)) == 0) {
            t_pushed = true;
            return GD_OK;
        }
        if (t_pushed)
            return gd_set_error(err, GD_ERR_CUDA, "CUDA driver: cuCtxSetCurrent failed for cuda:%d's primary context",
                                device);
    }
    GD_CHECK(cudaSetDevice(device));
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * lazy per-device state
 * ---------------------------------------------------------------------------------------- */

/* gpudev's pool keeps at most this share of the device's memory cached after a
 * synchronization: 1/8, about 17 GiB on an H200, 10 GiB on an 80 GiB A100 or H100.
 *
 * Below it, freed blocks stay mapped and a loop that allocates the same temporaries every
 * step reuses them at no cost. CUDA's default threshold, 0, would give everything back at
 * each synchronization (every .item()), and each step would pay to map its memory again.
 * Above it, the pool gives the excess back at the next synchronization, where PyTorch's and
 * CuPy's allocators and cuBLAS, which cannot take memory from gpudev's pool, find it free: a
 * process that freed its big gpudev arrays never starves them of more than this share. The
 * rest goes with gd.empty_cache(), and gpudev's own allocations trim the pool and retry when
 * the device is full (memory.cu). The cost of remapping was not measured on these machines. */
#define GD_CUDA_POOL_KEEP_DIVISOR 8

/* A pool of gpudev's own rather than the device's current one: that is whatever pool another
 * library in the process made current (cudaDeviceSetMemPool), whose release threshold and
 * cache are not gpudev's to change, and whose bytes gpudev's statistics must not count. */
static int gd_cuda_pool_create(gd_cuda_device *dev, int device, gd_error *err)
{
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    size_t free_bytes = 0, total_bytes = 0;
    GD_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    cudaMemPool_t pool = nullptr;
    GD_CHECK(cudaMemPoolCreate(&pool, &props));
    uint64_t keep = (uint64_t)total_bytes / GD_CUDA_POOL_KEEP_DIVISOR;
    cudaError_t st = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (st != cudaSuccess) {
        (void)cudaMemPoolDestroy(pool);
        return gd_cuda_fail(err, st, "cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep)",
                            __FILE__, __LINE__);
    }
    dev->pool = pool;
    return GD_OK;
}

/* Each step is idempotent, so a failed attempt (say, out of memory for the stream) can be
 * retried by the next call without leaking what the first attempt created. */
static int gd_cuda_device_init(gd_cuda_device *dev, int device, gd_error *err)
{
    std::lock_guard<std::mutex> lock(dev->mutex);
    if (dev->ready.load(std::memory_order_relaxed)) return GD_OK;
    dev->index = device;
    if (!dev->stream) GD_CHECK(cudaStreamCreateWithFlags(&dev->stream, cudaStreamNonBlocking));
    if (!dev->order) GD_CHECK(cudaEventCreateWithFlags(&dev->order, cudaEventDisableTiming));
    if (!dev->pool) {
        int rc = gd_cuda_pool_create(dev, device, err);
        if (rc != GD_OK) return rc;
    }
    GD_CHECK(cudaDeviceGetAttribute(&dev->sm_count, cudaDevAttrMultiProcessorCount, device));
    GD_CHECK(cudaDeviceGetAttribute(&dev->cc_major, cudaDevAttrComputeCapabilityMajor, device));
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
