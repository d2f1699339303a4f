/* backend_cuda.cu - the CUDA backend's table, handed to gpudev._C through the `backend`
 * capsule of gpudev._cuda (module.cu). Its entries are defined by kind, one file each:
 * runtime.cu (devices, synchronization), memory.cu, copy.cu, elementwise.cu, cast.cu,
 * reduce.cu, gemm.cu, permute.cu, generate.cu, gather.cu and services.cu (device properties, events,
 * ordering against other libraries' streams); backend_cuda.cuh lists them by file.
 */
#include "backend_cuda.cuh"

/* ------------------------------------------------------------------------------------------
 * the device guard around every entry
 * ---------------------------------------------------------------------------------------- */

/* guarded<f>::call runs entry f inside a gd_cuda_device_guard: f makes its device current
 * (gd_cuda_enter), and the thread's previous current device is back when the table call
 * returns, whichever path f took out. */
template <auto Entry> struct guarded;
template <class R, class... A, R (*Entry)(A...)> struct guarded<Entry> {
    static R call(A... args)
    {
        gd_cuda_device_guard guard;
        return Entry(args...);
    }
};

/* ------------------------------------------------------------------------------------------
 * the table
 * ---------------------------------------------------------------------------------------- */

static const gd_backend gd_cuda_table = {
    GD_BACKEND_ABI_VERSION,                    /* abi_version */
    "cuda",                                    /* name */
    gd_cuda_device_count,                      /* device_count */
    guarded<gd_cuda_synchronize>::call,        /* synchronize */
    guarded<gd_cuda_alloc>::call,              /* alloc */
    guarded<gd_cuda_free>::call,               /* free */
    guarded<gd_cuda_copy_from_host>::call,     /* copy_from_host */
    guarded<gd_cuda_copy_to_host>::call,       /* copy_to_host */
    guarded<gd_cuda_copy_device>::call,        /* copy_device */
    guarded<gd_cuda_copy_2d>::call,            /* copy_2d */
    guarded<gd_cuda_host_alloc>::call,         /* host_alloc */
    guarded<gd_cuda_host_free>::call,          /* host_free */
    guarded<gd_cuda_copy_async>::call,         /* copy_async */
    guarded<gd_cuda_event_synchronize>::call,  /* event_synchronize */
    guarded<gd_cuda_unary>::call,              /* unary */
    guarded<gd_cuda_binary>::call,             /* binary */
    guarded<gd_cuda_astype>::call,             /* astype */
    guarded<gd_cuda_reduce>::call,             /* reduce */
    guarded<gd_cuda_gemm>::call,               /* gemm */
    guarded<gd_cuda_permute>::call,            /* permute */
    guarded<gd_cuda_arange>::call,             /* arange */
    guarded<gd_cuda_random>::call,             /* random */
    guarded<gd_cuda_get_memory_stats>::call,   /* memory_stats */
    guarded<gd_cuda_reset_peak_memory>::call,  /* reset_peak_memory */
    guarded<gd_cuda_empty_cache>::call,        /* empty_cache */
    guarded<gd_cuda_device_props>::call,       /* device_props */
    guarded<gd_cuda_synchronize_all>::call,    /* synchronize_all */
    guarded<gd_cuda_event_create>::call,       /* event_create */
    guarded<gd_cuda_event_record>::call,       /* event_record */
    guarded<gd_cuda_event_elapsed_ms>::call,   /* event_elapsed_ms */
    guarded<gd_cuda_event_destroy>::call,      /* event_destroy */
    guarded<gd_cuda_stream_wait_device>::call, /* stream_wait_device */
    guarded<gd_cuda_device_wait_stream>::call, /* device_wait_stream */
    /* indexing that copies (gather.cu) */
    guarded<gd_cuda_gather_rows>::call,        /* gather_rows */
    guarded<gd_cuda_scatter_rows>::call,       /* scatter_rows */
    guarded<gd_cuda_scatter_add_rows>::call,   /* scatter_add_rows */
    guarded<gd_cuda_count_nonzero>::call,      /* count_nonzero */
    guarded<gd_cuda_nonzero>::call,            /* nonzero */
    /* selection */
    guarded<gd_cuda_where>::call,              /* where */
    guarded<gd_cuda_argreduce>::call,          /* argreduce */
    /* fused updates */
    guarded<gd_cuda_axpby>::call,              /* axpby */
    /* sliding windows (window.cu) */
    guarded<gd_cuda_im2col>::call,             /* im2col */
    guarded<gd_cuda_col2im>::call,             /* col2im */
    guarded<gd_cuda_pool2d>::call,             /* pool2d */
    guarded<gd_cuda_pool2d_backward>::call,    /* pool2d_backward */
    /* measurement (services.cu) */
    guarded<gd_cuda_pointer_chase>::call,      /* pointer_chase */
};

extern "C" const gd_backend *gd_cuda_backend(void) { return &gd_cuda_table; }

extern "C" void gd_cuda_set_tf32(int enabled) { gd_cuda_tf32.store(enabled != 0); }
