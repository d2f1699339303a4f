/* emu_runtime.cpp - the CUDA emulation's runtime basics: the one lock, errors and their names,
 * the two emulated devices (2 multiprocessors each) and their attributes and properties,
 * versions, and failures planted by tests (gd_emu_fail_next). See emu.h for the other files.
 */

/* Threads switch with _setjmp/_longjmp between stacks (emu_kernels.cpp); keep the headers'
 * fortified longjmp out of every file of the emulation alike. */
#undef _FORTIFY_SOURCE

#include "emu.h"

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

bool valid_device(int d) { return d >= 0 && d < kDevices; }

int multiprocessors()
{
    static const int count = [] {
        const char *s = getenv("GD_EMU_MULTIPROCESSORS");
        if (!s || !*s) return kDefaultMultiprocessors;
        char *end = nullptr;
        const long n = strtol(s, &end, 10);
        if (*end || n < 1 || n > 1024) die("GD_EMU_MULTIPROCESSORS=%s: give a count from 1 to 1024, e.g. 132", s);
        return (int)n;
    }();
    return count;
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
    int status;
    int times;
    int last_error;
};
std::vector<Planted> g_planted;
} // namespace

int injected(const char *call)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    for (Planted &p : g_planted) {
        if (p.times <= 0 || p.call != call) continue;
        p.times--;
        if (p.last_error) t_last_error = (cudaError_t)p.last_error;
        return p.status;
    }
    return 0;
}

} // namespace gd_emu

using namespace gd_emu;

extern "C" void gd_emu_fail_next(const char *call, int status, int times, int last_error)
{
    std::lock_guard<std::recursive_mutex> guard(lock());
    g_planted.push_back(Planted{call, status, times, last_error});
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
    *count = kDevices;
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
    return cudaSuccess;
}

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
    snprintf(prop->name, sizeof prop->name, "gpudev CUDA emulator %d", device);
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
