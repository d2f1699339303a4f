/* emu.h - what the files of the CUDA emulation share. The emulation (a CPU stand-in for just
 * enough of the CUDA runtime and cuBLAS to run gpudev's CUDA backend for its logic; see
 * inc/cuda_runtime.h for what it models) is split by concern:
 *
 *   emu_runtime.cpp  errors, devices and their attributes, versions, injected failures
 *   emu_kernels.cpp  running a kernel: one fiber per thread, barriers, warp shuffles
 *   emu_streams.cpp  streams as queues (bounded), events, waiting, synchronization, Ctrl-C
 *   emu_memory.cpp   device memory: allocations, memory pools, copies, memsets, pinned host
 *   emu_blas.cpp     cuBLAS: handles, workspaces, column-major reference products
 *
 * One recursive lock guards all of the emulation's state, and is held while queued work runs
 * (work on one stream may have to run another stream's first). Misuse the CUDA runtime reports
 * as an error status returns that status; undefined behaviour on a GPU, and uses outside what
 * gpudev promises, print "cuda_emu: ..." and abort.
 */
#ifndef GPUDEV_CUDA_EMU_EMU_H
#define GPUDEV_CUDA_EMU_EMU_H

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "gd_emu.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace gd_emu {

constexpr int kMaxDevices = 8;     /* the most gd_emu_configure can make */
constexpr int kDefaultDevices = 2;
constexpr int kDefaultMultiprocessors = 2;
constexpr size_t kDefaultDeviceBytes = (size_t)80 << 30;
constexpr size_t kMaxPitch = 2147483647;
/* Operations the emulated GPUs hold queued before a new one makes its thread run the oldest
 * (gd_emu_set_waits); a real GPU holds about a thousand launches, each run about a thousand
 * times faster. */
constexpr long kDefaultQueue = 32;

/* ------------------------------------------------------------------------------------------
 * emu_runtime.cpp
 * ---------------------------------------------------------------------------------------- */

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt, ...);

/* Record a failure for cudaGetLastError and return it. */
cudaError_t fail(cudaError_t e);

extern thread_local int t_device; /* the calling host thread's current device */
/* Emulated devices: 2, or what gd_emu_configure set (1..kMaxDevices). */
int device_count();
bool valid_device(int d);
/* Device d's primary context now exists (cudaSetDevice, or work issued on one of its streams),
 * as CUDA creates it: a process that never touches a device has none there. */
void create_context(int d);
/* Multiprocessors per emulated device: 2, or GD_EMU_MULTIPROCESSORS or gd_emu_configure
 * (1..1024; 132 is an H200), so that launch plans sized by the multiprocessor count (grid sizes, how reductions
 * split a row) take the shapes they take on a real GPU. */
int multiprocessors();

/* The emulation's one lock. */
std::recursive_mutex &lock();

/* The status gd_emu_fail_next planted for `call` (consuming one), or 0: run it normally. */
int injected(const char *call);
/* Whether gd_emu_skip_next planted a skip of `call` (consuming one): do nothing, succeed. */
bool skipped(const char *call);
/* Whether the end-of-run statistics line is printed (not inside Python: gd_emu_configure). */
bool print_statistics();

/* ------------------------------------------------------------------------------------------
 * emu_streams.cpp
 * ---------------------------------------------------------------------------------------- */

/* Queued work: returns true once done, or false when it stopped part way because the thread
 * running it waits interruptibly and a Ctrl-C arrived (step_boundary). It then keeps its
 * progress and goes on from there when something waits for it next, so no operation is ever
 * half applied as seen by anyone who waits for it. */
using Work = std::function<bool()>;

/* The record behind a stream handle (legacy and per-thread handles resolve to the current
 * device's); dies on the null stream, an unknown or a destroyed one. Caller holds lock(). */
gd_emu_stream *stream_of(cudaStream_t s, const char *call);
int device_of(const gd_emu_stream *s);
/* What a queued operation is, for the report of work left at exit: work (a kernel, a
 * product, a copy or a memset) or bookkeeping (frees, new memory's garbage, events, waits). */
enum class Kind { work, bookkeeping };
/* Queue `work` on s; caller holds lock(). When more operations are then pending than the
 * queue holds, the calling thread first runs the oldest ones (any stream's), as a GPU blocks
 * a launch until its queue has room. enqueue_steps takes work that stops between steps. */
void enqueue(gd_emu_stream *s, Kind kind, std::function<void()> work);
void enqueue_steps(gd_emu_stream *s, Kind kind, Work work);
/* Run everything queued on s, as a wait does (interruptible on the main thread: see
 * gd_emu_set_waits); false when a Ctrl-C stopped it first. Caller holds lock(). */
bool wait_for_stream(gd_emu_stream *s);
/* Between two steps of queued work (blocks of a kernel, columns of a product): whether the
 * running thread must stop here, because it waits interruptibly and a Ctrl-C arrived. Also
 * where a test's gd_emu_hold_after_steps pauses. */
bool step_boundary();

/* ------------------------------------------------------------------------------------------
 * emu_memory.cpp
 * ---------------------------------------------------------------------------------------- */

/* [p, p + bytes) lies in one live allocation of `device`; else says why on stderr. */
bool device_range(const void *p, size_t bytes, int device, const char *call, const char *what);
/* Device memory taken outside memory pools (cuBLAS handles): false when the device is full. */
bool take_device_bytes(int device, size_t bytes);
void give_device_bytes(int device, size_t bytes);
/* After a synchronization on `device`: pools give back what they cache above their release
 * threshold, as CUDA's do. Caller holds lock(). */
void release_over_threshold(int device);

/* ------------------------------------------------------------------------------------------
 * emu_kernels.cpp
 * ---------------------------------------------------------------------------------------- */

/* Whether a kernel is running (calls from inside one are not emulated). */
bool in_kernel();

} // namespace gd_emu

#endif /* GPUDEV_CUDA_EMU_EMU_H */
