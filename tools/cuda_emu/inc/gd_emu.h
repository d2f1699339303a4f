/* gd_emu.h (CPU emulation) - controls of the CUDA emulation in tools/cuda_emu for tests that
 * need a device the emulation can shape: less memory than the default 80 GiB, or one call
 * that fails the way a real GPU sometimes makes it fail. Plain C, C linkage; only programs
 * linked against the emulation (tools/cuda_emu/build.sh) have these functions.
 */
#ifndef GPUDEV_CUDA_EMU_GD_EMU_H
#define GPUDEV_CUDA_EMU_GD_EMU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Give emulated `device` `bytes` of memory (0: the default, 80 GiB). Memory pools, cuBLAS
 * handles and cudaMemGetInfo all count against it. Call it before the device is used. */
void gd_emu_set_device_memory(int device, size_t bytes);

/* The next `times` calls of the runtime or cuBLAS function named `call` (e.g.
 * "cublasCreate", "cublasSgemm", "cudaMallocFromPoolAsync") fail with `status`, a
 * cudaError_t or cublasStatus_t value, without doing anything. A non-zero `last_error`
 * (a cudaError_t) is also left for cudaGetLastError, as when a library call fails because a
 * kernel it launched internally did. Returns 0, or -1 (nothing planted) for a call that is
 * not one of gd_emu_plantable(0). */
int gd_emu_fail_next(const char *call, int status, int times, int last_error);

/* Like gd_emu_fail_next, but the next `times` calls of `call` do nothing and succeed: a test
 * removes one cudaStreamWaitEvent and shows that something then reads unfinished work.
 * Returns 0, or -1 for a call that is not one of gd_emu_plantable(1). */
int gd_emu_skip_next(const char *call, int times);

/* The names gd_emu_fail_next (skips 0) or gd_emu_skip_next (skips 1) takes, NULL-terminated. */
const char *const *gd_emu_plantable(int skips);

/* Forget every planted failure and skip not yet consumed. */
void gd_emu_clear_planted(void);

/* Before any other call: `devices` emulated GPUs (1..8; 2 by default), `multiprocessors` each
 * (0: 2, or GD_EMU_MULTIPROCESSORS), and whether the kernel statistics line is printed at exit.
 * Returns 0, or -1 for a value out of range. */
int gd_emu_configure(int devices, int multiprocessors, int statistics);

/* Whether emulated `device`'s primary context exists (see cudaGetDriverEntryPointByVersion). */
int gd_emu_context_active(int device);

/* Operations that compute (kernels, products, copies, memsets) queued on streams and not yet
 * run (see cuda_runtime.h: work runs only when something waits for it); frees, event records
 * and stream waits queue too, uncounted. Safe to call while another thread waits. */
long gd_emu_pending_operations(void);

/* At most `queue` of those pending on all streams (32 by default; 0: no bound): a thread that
 * queues one more first runs the oldest operations. With `interruptible`, a wait on the main
 * thread (a synchronization, a copy into pageable memory, a launch into a full queue) stops
 * between two blocks of a kernel or columns of a product when a handler catches SIGINT: the
 * handler runs, the stopped operation keeps its progress for the next wait, and the wait
 * returns cudaErrorEmuInterrupted (a launch is queued over the bound instead). */
void gd_emu_set_waits(long queue, int interruptible);

/* Blocks of each launch in index order (shuffle 0, the default) or in an order shuffled by
 * `seed` and the launch's number. */
void gd_emu_set_block_order(int shuffle, unsigned long long seed);

/* For tests of Ctrl-C: the next interruptible wait pauses after `steps` more steps (blocks or
 * product columns) until a SIGINT arrives; gd_emu_held() says whether it pauses now. */
void gd_emu_hold_after_steps(long steps);
int gd_emu_held(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUDEV_CUDA_EMU_GD_EMU_H */
