/* backend_cpu.c - the CPU backend's table, gd_cpu_backend: the host as a gpudev device, with
 * the entries each file of csrc/cpu defines (cpu.h lists them by file), and the facts about the
 * machine the core reports (SIMD level, OpenBLAS build).
 */
#include <cblas.h> /* scipy-openblas32: scipy_openblas_get_config */

#include "backend_cpu.h"
#include "cpu.h"
#include "port.h"

/* ------------------------------------------------------------------------------------------
 * the device
 * ---------------------------------------------------------------------------------------- */

int gd_cpu_device_count(void) { return 1; }

int gd_cpu_synchronize(int device, gd_error *err)
{
    (void)device;
    (void)err;
    return GD_OK; /* CPU work is finished when its call returns */
}

/* ------------------------------------------------------------------------------------------
 * machine description
 * ---------------------------------------------------------------------------------------- */

const char *gd_cpu_simd_level(void)
{
    return gd_port_simd_level();
}

const char *gd_cpu_blas_config(void)
{
    const char *config = scipy_openblas_get_config();
    return config ? config : "OpenBLAS (configuration unknown)";
}

const char *gd_cpu_blas_core(void)
{
    const char *core = scipy_openblas_get_corename();
    return core ? core : "unknown";
}

/* ------------------------------------------------------------------------------------------
 * the vtable
 * ---------------------------------------------------------------------------------------- */

const gd_backend gd_cpu_backend = {
    .abi_version = GD_BACKEND_ABI_VERSION,
    .name = "cpu",
    .device_count = gd_cpu_device_count,
    .synchronize = gd_cpu_synchronize,
    .alloc = gd_cpu_alloc,
    .free = gd_cpu_free,
    .copy_from_host = gd_cpu_copy_from_host,
    .copy_to_host = gd_cpu_copy_to_host,
    .copy_device = gd_cpu_copy_device,
    .copy_2d = gd_cpu_copy_2d,
    .unary = gd_cpu_unary,
    .binary = gd_cpu_binary,
    .astype = gd_cpu_astype,
    .reduce = gd_cpu_reduce,
    .gemm = gd_cpu_gemm,
    .permute = gd_cpu_permute,
    .arange = gd_cpu_arange,
    .random = gd_cpu_random,
    /* device services: the counters and the cache of freed blocks; no GPU properties, no
     * events (the CPU is timed with the host clock), and gpudev's calls are the only work to
     * wait for */
    .memory_stats = gd_cpu_get_memory_stats,
    .reset_peak_memory = gd_cpu_reset_peak_memory,
    .empty_cache = gd_cpu_empty_cache,
    /* indexing that copies */
    .gather_rows = gd_cpu_gather_rows,
    .scatter_rows = gd_cpu_scatter_rows,
    .scatter_add_rows = gd_cpu_scatter_add_rows,
    .count_nonzero = gd_cpu_count_nonzero,
    .nonzero = gd_cpu_nonzero,
    /* selection */
    .where = gd_cpu_where,
    .argreduce = gd_cpu_argreduce,
    /* fused updates */
    .axpby = gd_cpu_axpby,
    /* sliding windows */
    .im2col = gd_cpu_im2col,
    .col2im = gd_cpu_col2im,
    .pool2d = gd_cpu_pool2d,
    .pool2d_backward = gd_cpu_pool2d_backward,
    /* measurement (chase.c) */
    .pointer_chase = gd_cpu_pointer_chase,
};
