/* cuda_runtime.h (CPU emulation) - stands in for the CUDA runtime header when gpudev's CUDA
 * backend is compiled as plain C++ by tools/cuda_emu/build.sh. It is a CPU emulation of just
 * enough of CUDA to run gpudev's kernels for their logic: index math, broadcasting, reductions,
 * __syncthreads barriers and warp shuffles, launch configurations, streams, events, memory
 * pools and devices as gpudev uses them. It says nothing about timing or the GPU memory model.
 *
 * Streams are queues: a launch, copy, memset, free or event record is checked when it is
 * issued and runs later, when something waits for it (cudaStreamSynchronize, an event, a
 * cudaStreamWaitEvent on another stream that is itself waited for, cudaDeviceSynchronize).
 * So work on two streams runs in whatever order the waits force and no other: a missing
 * cudaStreamWaitEvent between them shows up as wrong data, as it can on a GPU. Host memory
 * given to an asynchronous copy is read (or written) when the copy runs if it is pinned
 * (cudaMallocHost), and at once otherwise, as the real runtime stages pageable memory (a copy
 * into pageable memory first waits for its stream). As on a GPU the queues are bounded: a
 * launch into a full one runs the oldest queued work first. The blocks of a launch run one
 * after another, in index order or in a seeded shuffled order (gd_emu_set_block_order).
 *
 * What it offers: the CUDA qualifiers (as no-ops), the built-in index variables, the vector
 * types and intrinsics the kernels use, the runtime API calls the backend makes, and
 * gd_emu_launch, which tools/cuda_emu/transform.py puts in place of every
 * `kernel<<<grid, block, shared, stream>>>(args)`. The implementation is the emu_*.cpp files
 * of tools/cuda_emu (emu.h lists them).
 * Anything not listed here is not emulated, so new uses fail to compile rather than pass.
 */
#ifndef GPUDEV_CUDA_EMU_CUDA_RUNTIME_H
#define GPUDEV_CUDA_EMU_CUDA_RUNTIME_H

#include <math.h> /* the C math functions, which CUDA offers in device code */

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

/* ------------------------------------------------------------------------------------------
 * language: qualifiers, built-in variables, vector types, intrinsics
 * ---------------------------------------------------------------------------------------- */

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
/* One block runs at a time, so one static copy per __shared__ variable is the block's memory. */
#define __shared__ static

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

/* Set by the emulator before it resumes a thread; not const, so the compiler reloads them
 * after every barrier (which may have switched threads). */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;

struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(16) double2 {
    double x, y;
};
struct alignas(16) longlong2 {
    long long x, y;
};
struct alignas(16) int4 {
    int x, y, z, w;
};

/* round-to-nearest without contraction into a fused multiply-add: what plain double
 * arithmetic gives when built with -ffp-contract=off, as build.sh does */
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }

/* Block and warp barriers: the calling thread waits, and others run, until every thread of its
 * block (or of its warp) has arrived. Threads that wait at different barriers, or exit while
 * others wait, stop the program with a message: on a GPU that is undefined behaviour. */
void gd_emu_syncthreads();
void gd_emu_syncwarp(unsigned mask);
inline void __syncthreads() { gd_emu_syncthreads(); }

/* Atomics. A thread of the emulation runs until it reaches a barrier or exits, so a plain
 * read-modify-write is never interleaved with another thread's. */
template <class T> T atomicAdd(T *address, T val)
{
    T old = *address;
    *address = old + val;
    return old;
}
template <class T> T atomicMin(T *address, T val)
{
    T old = *address;
    if (val < old) *address = val;
    return old;
}

/* The host's steady clock in nanoseconds: a kernel that spins on it waits about as long as
 * on a GPU's cycle counter at 1 GHz. */
long long clock64();

/* Lane exchange through a per-warp mailbox, between two warp barriers. Only full-width (32)
 * shuffles in which every lane of the warp takes part are emulated. gd_emu_shfl_slots checks
 * the shuffle and returns the calling warp's 32 slots. */
unsigned long long *gd_emu_shfl_slots(unsigned mask, int lane_mask, int width);
int gd_emu_lane();
template <class T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "shuffles move up to 8 bytes");
    unsigned long long *slots = gd_emu_shfl_slots(mask, lane_mask, width);
    const int lane = gd_emu_lane();
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof(T));
    slots[lane] = bits;
    gd_emu_syncwarp(mask); /* every lane has written */
    bits = slots[lane ^ lane_mask];
    gd_emu_syncwarp(mask); /* every lane has read: the slots may be reused */
    T r;
    memcpy(&r, &bits, sizeof(T));
    return r;
}

/* ------------------------------------------------------------------------------------------
 * runtime API: the calls gpudev's backend makes
 * ---------------------------------------------------------------------------------------- */

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInsufficientDriver = 35,
    cudaErrorDevicesUnavailable = 46,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorECCUncorrectable = 214,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchTimeout = 702,
    cudaErrorAssert = 710,
    cudaErrorHardwareStackError = 714,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorInvalidAddressSpace = 717,
    cudaErrorInvalidPc = 718,
    cudaErrorLaunchFailure = 719,
    /* the emulation's own, never a real GPU's: a wait that a Ctrl-C stopped before the work it
     * waits for finished (that work stays queued, whole, and runs at the next wait) */
    cudaErrorEmuInterrupted = 20000,
};
typedef cudaError_t cudaError;

enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
enum cudaMemPoolAttr {
    cudaMemPoolAttrReleaseThreshold = 4,
    cudaMemPoolAttrReservedMemCurrent = 5,
    cudaMemPoolAttrUsedMemCurrent = 7,
};
enum cudaMemAllocationType { cudaMemAllocationTypeInvalid = 0, cudaMemAllocationTypePinned = 1 };
enum cudaMemAllocationHandleType { cudaMemHandleTypeNone = 0 };
enum cudaMemLocationType { cudaMemLocationTypeInvalid = 0, cudaMemLocationTypeDevice = 1 };
struct cudaMemLocation {
    cudaMemLocationType type;
    int id;
};
/* The fields gpudev sets; the rest must be zero, as in CUDA. */
struct cudaMemPoolProps {
    cudaMemAllocationType allocType;
    cudaMemAllocationHandleType handleTypes;
    cudaMemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;
    unsigned short usage;
    unsigned char reserved[54];
};
enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0,
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
    cudaMemoryTypeManaged = 3,
};
struct cudaPointerAttributes {
    cudaMemoryType type;
    int device;
    void *devicePointer;
    void *hostPointer;
};
enum cudaDeviceAttr {
    cudaDevAttrMaxPitch = 11,
    cudaDevAttrClockRate = 13,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMemoryClockRate = 36,
    cudaDevAttrComputeCapabilityMajor = 75,
};
#define cudaStreamNonBlocking 0x01
#define cudaEventDisableTiming 0x02

/* Handles are pointers to the emulator's records; null is the legacy default stream, which
 * gpudev's backend never uses. The two special handles are CUDA's values: each device has one
 * legacy and one per-thread default stream (shared by every host thread in the emulation). */
struct gd_emu_stream;
struct gd_emu_event;
struct gd_emu_pool;
typedef gd_emu_stream *cudaStream_t;
typedef gd_emu_event *cudaEvent_t;
typedef gd_emu_pool *cudaMemPool_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

/* The properties gpudev reads; the real struct has many more. */
struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor;
    int multiProcessorCount;
    int memoryBusWidth;
    int l2CacheSize;
};

cudaError_t cudaGetLastError(void);
const char *cudaGetErrorName(cudaError_t);
const char *cudaGetErrorString(cudaError_t);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
/* The driver's functions by name; emulated: cuDeviceGet and cuDevicePrimaryCtxGetState (a
 * device's primary context exists once cudaSetDevice chose it or work was issued on it). */
enum cudaDriverEntryPointQueryResult { cudaDriverEntryPointSuccess = 0, cudaDriverEntryPointSymbolNotFound = 1 };
enum { cudaEnableDefault = 0 };
cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags, cudaDriverEntryPointQueryResult *driverStatus);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaRuntimeGetVersion(int *version);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
/* Milliseconds between the two records on the host clock, taken when each record ran: the
 * emulator's time for the work between them, not a GPU's. cudaErrorNotReady until both ran. */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value);
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void *value);
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t min_bytes_to_keep);
cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const cudaMemPoolProps *props);
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool);
cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool);
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int device);
/* From the device's current pool (cudaDeviceSetMemPool; at first its default pool). */
cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream);
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream);
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_device, const void *src, int src_device, size_t count,
                                cudaStream_t stream);
cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *attributes, const void *ptr);

/* ------------------------------------------------------------------------------------------
 * kernel launches
 * ---------------------------------------------------------------------------------------- */

/* Where a launch comes from, for messages. */
struct gd_emu_site {
    const char *file;
    int line;
    const char *kernel;
};

/* Checks a launch as the runtime does when it is issued (a bad configuration goes to
 * cudaGetLastError and the kernel does not run); false when it must not run. */
bool gd_emu_launch_check(const gd_emu_site &site, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream);

/* Queues `work` on `stream` (checked already): it returns true once done, false when a wait
 * stopped it between two blocks (it is called again later). */
void gd_emu_enqueue(cudaStream_t stream, std::function<bool()> work);

/* How far a queued launch has run, and the key of its block order. */
struct gd_emu_progress {
    unsigned long long next_block = 0;
    unsigned long long key = 0;
    bool started = false;
};

/* Runs the blocks of a checked launch from progress->next_block on, one after another, each
 * as blockDim threads that switch only at barriers; true once all have run, false when the
 * waiting thread was interrupted between two blocks. */
bool gd_emu_run(const gd_emu_site &site, dim3 grid, dim3 block, void (*thread_body)(void *), void *context,
                gd_emu_progress *progress);

/* `kernel<<<grid, block, shared, stream>>>(args...)` becomes
 * gd_emu_launch(site, [&](auto &&...a) { kernel(a...); }, grid, block, shared, stream, args...).
 * As with a real launch the arguments are evaluated and copied once, when it is issued, and
 * each thread then receives its own copy of them as the kernel's parameters when it runs. */
template <class Call, class... Args>
void gd_emu_launch(const gd_emu_site &site, Call call, dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, Args &&...args)
{
    if (!gd_emu_launch_check(site, grid, block, shared_bytes, stream)) return;
    auto params = std::make_shared<std::tuple<std::decay_t<Args>...>>(std::forward<Args>(args)...);
    gd_emu_enqueue(stream, [site, call, params, grid, block, progress = gd_emu_progress{}]() mutable {
        auto thread_body = [&] { std::apply(call, *params); };
        using Body = decltype(thread_body);
        return gd_emu_run(site, grid, block, [](void *p) { (*static_cast<Body *>(p))(); }, &thread_body, &progress);
    });
}

#endif /* GPUDEV_CUDA_EMU_CUDA_RUNTIME_H */
