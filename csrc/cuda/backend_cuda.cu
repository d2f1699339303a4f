/* backend_cuda.cu - the CUDA backend's table, handed to gpudev._C through the `backend`
 * capsule of gpudev._cuda (module.cu). Its entries are defined by kind, one file each:
 * runtime.cu (devices, synchronization), memory.cu, copy.cu, elementwise.cu, cast.cu,
 * reduce.cu, gemm.cu, permute.cu and generate.cu; backend_cuda.cuh lists them by file.
 */
#include "backend_cuda.cuh"

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
