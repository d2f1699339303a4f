/* emu_runtime.cpp - the CUDA emulation's runtime basics: the one lock, errors and their names,
 * the emulated devices (2 of 2 multiprocessors each unless gd_emu_configure says otherwise) and their attributes and properties,
 * versions, and failures planted by tests (gd_emu_fail_next). See emu.h for the other files.
 */

/* Threads switch with _setjmp/_longjmp between stacks (emu_kernels.cpp); keep the headers'
 * fortified longjmp out of every file of the emulation alike. */
#undef _FORTIFY_SOURCE

#include "emu.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace gd_emu {

/* ------------------------------------------------------------------------------------------
 * errors, the lock, devices
 * ---------------------------------------------------------------------------------------- */

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("cuda_emu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

namespace {
thread_local cudaError_t t_last_error = cudaSuccess; /* per host thread, as in CUDA */
} // namespace

thread_local int t_device = 0;

cudaError_t fail(cudaError_t e)
{
    if (e != cudaSuccess) t_last_error = e;
    return e;
}

namespace {
/* Set once, before the first device call (gd_emu_configure); read without the lock after. */
int g_devices = kDefaultDevices;
int g_multiprocessors = 0; /* 0: not chosen yet */
bool g_statistics = true;
} // namespace

int device_count() { return g_devices; }

namespace {
std::atomic<bool> g_context[kMaxDevices];
} // namespace

void create_context(int d)
{
    if (d >= 0 && d < kMaxDevices) g_context[d].store(true);
}

bool valid_device(int d) { return d >= 0 && d < g_devices; }

bool print_statistics() { return g_statistics; }

int multiprocessors()
{
    if (!g_multiprocessors) {
        const char *s = getenv("GD_EMU_MULTIPROCESSORS");
        long n = kDefaultMultiprocessors;
        if (s && *s) {
            char *end = nullptr;
            n = strtol(s, &end, 10);
            if (*end || n < 1 || n > 1024) die("GD_EMU_MULTIPROCESSORS=%s: give a count from 1 to 1024, e.g. 132", s);
        }
        g_multiprocessors = (int)n;
    }
    return g_multiprocessors;
}

std::recursive_mutex &lock()
{
    static std::recursive_mutex m;
    return m;
}

/* ------------------------------------------------------------------------------------------
 * planted failures
 * ---------------------------------------------------------------------------------------- */

namespace {
struct Planted {
    std::string call;
    int status; /* 0: a skip (gd_emu_skip_next) */
    int times;
    int last_error;
};
std::vector<Planted> g_planted;

/* The calls that ask injected() and skipped(): a plant under any other name (a typo) would
 * never fire and stay armed, so gd_emu_fail_next and gd_emu_skip_next refuse it, and a call
 * site that asks under a name missing here stops the emulation (add the name). NULL ends each. */
const char *const g_failable[] = {
    "cudaSetDevice", "cudaMallocFromPoolAsync", "cudaMemcpyAsync", "cudaMemcpy2DAsync", "cudaMemcpyPeerAsync",
    "cudaMemsetAsync", "cudaLaunchKernel", "cublasCreate", "cublasSgemm", "cublasDgemm", "cublasSgemmStridedBatched",
    "cublasDgemmStridedBatched", nullptr,
};
const char *const g_skippable[] = {"cudaStreamWaitEvent", nullptr};

bool listed(const char *const *names, const char *call)
{
    for (; *names; names++)
        if (strcmp(*names, call) == 0) return true;
    return false;
}
} // namespace

int injected(const char *call)
{
    if (!listed(g_failable, call)) die("injected(%s): the call is missing from g_failable in emu_runtime.cpp", call);
    std::lock_guard<std::recursive_mutex> guard(lock());
    for (Planted &p : g_planted) {
        if (p.times <= 0 || p.status == 0 || p.call != call) continue;
        p.times--;
        if (p.last_error) t_last_error = (cudaError_t)p.last_error;
        return p.status;
    }
    return 0;
}

bool skipped(const char *call)
{
    if (!listed(g_skippable, call)) die("skipped(%s): the call is missing from g_skippable in emu_runtime.cpp", call);
    std::lock_guard<std::recursive_mutex> guard(lock());
    for (Planted &p : g_planted) {
        if (p.times <= 0 || p.status != 0 || p.call != call) continue;
        p.times--;
        return true;
    }
    return false;
}

} // namespace gd_emu

using namespace gd_emu;

extern "C" int gd_emu_fail_next(const char *call, int status, int times, int last_error)
{
    if (status == 0) die("gd_emu_fail_next(%s): status 0 is not a failure", call);
    if (!listed(g_failable, call)) return -1;
    std::lock_guard<std::recursive_mutex> guard(lock());
    g_planted.push_back(Planted{call, status, times, last_error});
    return 0;
}

extern "C" int gd_emu_skip_next(const char *call, int times)
{
    if (!listed(g_skippable, call)) return -1;
    std::lock_guard<std::recursive_mutex> guard(lock());
    g_planted.push_back(Planted{call, 0, times, 0});
    return 0;
}

extern "C" const char *const *gd_emu_plantable(int skips) { return skips ? g_skippable : g_failable; }

extern "C" void gd_emu_clear_planted(void)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    g_planted.clear();
}

extern "C" int gd_emu_configure(int devices, int multiprocessors, int statistics)
{
    if (devices < 1 || devices > kMaxDevices || multiprocessors < 0 || multiprocessors > 1024) return -1;
    g_devices = devices;
    if (multiprocessors) g_multiprocessors = multiprocessors;
    g_statistics = statistics != 0;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * runtime API: errors
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = t_last_error;
    t_last_error = cudaSuccess;
    return e;
}

namespace {
struct ErrorText {
    cudaError_t e;
    const char *name, *text;
};
const ErrorText g_error_text[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient"},
    {cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) busy or unavailable"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorECCUncorrectable, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorLaunchTimeout, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
    {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
    {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
    {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace",
     "operation not supported on global/shared address space"},
    {cudaErrorInvalidPc, "cudaErrorInvalidPc", "invalid program counter"},
    {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {cudaErrorEmuInterrupted, "cudaErrorEmuInterrupted",
     "the wait was interrupted (Ctrl-C); the work it waited for stays queued and finishes at the next wait"},
};
const ErrorText *error_text(cudaError_t e)
{
    for (const ErrorText &t : g_error_text)
        if (t.e == e) return &t;
    return nullptr;
}
} // namespace

const char *cudaGetErrorName(cudaError_t e)
{
    const ErrorText *t = error_text(e);
    return t ? t->name : "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e)
{
    const ErrorText *t = error_text(e);
    return t ? t->text : "unknown error";
}

/* ------------------------------------------------------------------------------------------
 * runtime API: devices
 * ---------------------------------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = g_devices;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    *device = t_device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (int st = injected("cudaSetDevice")) return fail((cudaError_t)st);
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    t_device = device;
    create_context(device); /* CUDA 12 and later: cudaSetDevice initializes the context */
    return cudaSuccess;
}

namespace {
/* the driver's CUresult values used here, and its device handles: an ordinal, as in CUDA */
int emu_cuDeviceGet(int *dev, int ordinal)
{
    if (!valid_device(ordinal)) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *dev = ordinal;
    return 0;
}

int emu_cuDevicePrimaryCtxGetState(int dev, unsigned *flags, int *active)
{
    if (!valid_device(dev)) return 101;
    *flags = 0;
    *active = g_context[dev].load() ? 1 : 0;
    return 0;
}
} // namespace

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int, unsigned long long flags,
                                             cudaDriverEntryPointQueryResult *driverStatus)
{
    void *fn = nullptr;
    if (!strcmp(symbol, "cuDeviceGet")) fn = (void *)emu_cuDeviceGet;
    if (!strcmp(symbol, "cuDevicePrimaryCtxGetState")) fn = (void *)emu_cuDevicePrimaryCtxGetState;
    if (flags != cudaEnableDefault) return fail(cudaErrorInvalidValue);
    *funcPtr = fn;
    if (driverStatus) *driverStatus = fn ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
    return cudaSuccess;
}

extern "C" int gd_emu_context_active(int device) { return valid_device(device) && g_context[device].load(); }

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMaxPitch: *value = (int)kMaxPitch; break;
    case cudaDevAttrClockRate: *value = 1980000; break;       /* kHz */
    case cudaDevAttrMultiProcessorCount: *value = multiprocessors(); break;
    case cudaDevAttrMemoryClockRate: *value = 2619000; break; /* kHz */
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    default: return fail(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
    size_t free_bytes = 0, total_bytes = 0;
    const int saved = t_device;
    t_device = device;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    t_device = saved;
    *prop = cudaDeviceProp{};
    snprintf(prop->name, sizeof prop->name, "emulated GPU %d (CUDA emulation on the CPU)", device);
    prop->totalGlobalMem = total_bytes;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = multiprocessors();
    prop->memoryBusWidth = 5120;
    prop->l2CacheSize = 50 << 20;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version)
{
    *version = 13000;
    return cudaSuccess;
}
