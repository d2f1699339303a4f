/* backend_cuda.cu - the CUDA backend's table, handed to gpudev._C through the `backend`
 * capsule of gpudev._cuda (module.cu). Its entries are defined by kind, one file each:
 * runtime.cu (devices, synchronization), memory.cu, copy.cu, elementwise.cu, cast.cu,
 * reduce.cu, gemm.cu, permute.cu, generate.cu and services.cu (device properties, events);
 * backend_cuda.cuh lists them by file.
 */
#include "backend_cuda.cuh"

/* ------------------------------------------------------------------------------------------
 * the table
 * ---------------------------------------------------------------------------------------- */

static const gd_backend gd_cuda_table = {
    GD_BACKEND_ABI_VERSION,      /* abi_version */
    "cuda",                      /* name */
    gd_cuda_device_count,        /* device_count */
    gd_cuda_synchronize,         /* synchronize */
    gd_cuda_alloc,               /* alloc */
    gd_cuda_free,                /* free */
    gd_cuda_copy_from_host,      /* copy_from_host */
    gd_cuda_copy_to_host,        /* copy_to_host */
    gd_cuda_copy_device,         /* copy_device */
    gd_cuda_copy_2d,             /* copy_2d */
    gd_cuda_unary,               /* unary */
    gd_cuda_binary,              /* binary */
    gd_cuda_astype,              /* astype */
    gd_cuda_reduce,              /* reduce */
    gd_cuda_gemm,                /* gemm */
    gd_cuda_permute,             /* permute */
    gd_cuda_arange,              /* arange */
    gd_cuda_random,              /* random */
    gd_cuda_get_memory_stats,    /* memory_stats */
    gd_cuda_reset_peak_memory,   /* reset_peak_memory */
    gd_cuda_empty_cache,         /* empty_cache */
    gd_cuda_device_props,        /* device_props */
    gd_cuda_synchronize_all,     /* synchronize_all */
    gd_cuda_event_create,        /* event_create */
    gd_cuda_event_record,        /* event_record */
    gd_cuda_event_elapsed_ms,    /* event_elapsed_ms */
    gd_cuda_event_destroy,       /* event_destroy */
};

extern "C" const gd_backend *gd_cuda_backend(void) { return &gd_cuda_table; }
