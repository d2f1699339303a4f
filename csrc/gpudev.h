/* gpudev.h - the C types shared by every part of gpudev: dtypes, devices, errors and the
 * backend vtable, the one seam between the Python-facing front end and the kernels.
 *
 * A backend computes; it never checks user input. The core (csrc/core) checks devices, shapes,
 * dtypes and sizes before it calls a backend, so a backend may assume its arguments are valid. A backend
 * reports failures (out of memory, CUDA errors) through its return value and a gd_error.
 * This header is plain C11 and also compiles as C++ (the CUDA backend includes it).
 */
#ifndef GPUDEV_H
#define GPUDEV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compiler.h" /* GD_PRINTF */

#ifdef __cplusplus
extern "C" {
#endif

#define GD_MAX_NDIM 16
/* The table's layout version, with the op counts in it: a backend built from other op lists
 * (elementwise or reduction) has another version (the enum values are its operation codes),
 * so it is refused. Layout 12: the reduction count joined the version. */
#define GD_BACKEND_ABI_LAYOUT 12
#define GD_BACKEND_ABI_VERSION \
    ((GD_BACKEND_ABI_LAYOUT * 100 + GD_NUM_REDOPS) * 10000 + GD_NUM_UNOPS * 100 + GD_NUM_BINOPS)
#define GD_BACKEND_CAPSULE_NAME "gpudev._cuda.backend"

/* ------------------------------------------------------------------------------------------
 * dtypes and devices
 * ---------------------------------------------------------------------------------------- */

/* Each enum below ends in its count; tables.h describes every value, in order. */
/* bool is one byte holding 0 or 1 (NumPy's and DLPack's layout). The core makes data from
 * outside 0/1 when it comes in; kernels still read a bool as byte != 0, since memory shared
 * with other libraries may be written with other bytes later. */
/* int32 came last, so the older values kept their codes. */
typedef enum gd_dtype { GD_FLOAT32 = 0, GD_FLOAT64 = 1, GD_INT64 = 2, GD_BOOL = 3, GD_INT32 = 4, GD_NUM_DTYPES } gd_dtype;

typedef enum gd_device_type { GD_CPU = 0, GD_CUDA = 1 } gd_device_type;

typedef struct gd_device {
    gd_device_type type;
    int index; /* the device's index in its backend: 0 for the CPU */
} gd_device;

/* A scalar passed by value (kernels on a GPU cannot read a host pointer). It holds the value
 * already converted to the operation's dtype: .f for float32/float64, .i for int64, int32 (a
 * value in int32's range) and bool (0 or 1). */
typedef union gd_scalar {
    double f;
    int64_t i;
} gd_scalar;

/* ------------------------------------------------------------------------------------------
 * errors: status codes, never aborts
 * ---------------------------------------------------------------------------------------- */

typedef enum gd_status {
    GD_OK = 0,
    GD_ERR_HOST_OOM,           /* host allocation failed                 -> OutOfMemoryError */
    GD_ERR_DEVICE_OOM,         /* device allocation failed               -> OutOfMemoryError */
    GD_ERR_DEVICE_UNAVAILABLE, /* no such device / no driver             -> DeviceUnavailableError */
    GD_ERR_CUDA,               /* a CUDA, cuBLAS or CUB call failed      -> CudaError(.status) */
    GD_ERR_VALUE,              /* defensive: the core should have caught it -> ValueError */
    GD_ERR_UNSUPPORTED,        /* this backend lacks the operation       -> NotImplementedError */
} gd_status;

typedef struct gd_error {
    gd_status code;
    int cuda_status;    /* cudaError_t / cublasStatus_t value for CudaError.status, else 0 */
    char message[512];  /* complete sentence(s); for CUDA: call text, error name, file:line */
} gd_error;

/* Fill *err (when err is not NULL) with `code` and a printf-style message; returns code, so a
 * backend can `return gd_set_error(err, GD_ERR_VALUE, "...", ...);`. */
static inline int gd_set_error(gd_error *err, gd_status code, const char *fmt, ...) GD_PRINTF(3, 4);
static inline int gd_set_error(gd_error *err, gd_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
        err->cuda_status = 0;
    }
    return (int)code;
}

/* "512 bytes", "40.0 GiB" into buf (at least 32 bytes), for error messages; returns buf. */
static inline const char *gd_format_bytes(char *buf, size_t size, uint64_t n)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, size, "%llu bytes", (unsigned long long)n);
        return buf;
    }
    double v = (double)n / 1024.0;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

/* ------------------------------------------------------------------------------------------
 * operation descriptors
 * ---------------------------------------------------------------------------------------- */

/* The elementwise operations: one value per row of the op lists in tables.h, in their order. */
#include "tables.h"
#define GD_OP_ENUM(E, ...) GD_##E,
typedef enum gd_binop { GD_BINARY_OPS(GD_OP_ENUM) GD_NUM_BINOPS } gd_binop;
typedef enum gd_unop { GD_UNARY_OPS(GD_OP_ENUM) GD_NUM_UNOPS } gd_unop;
#undef GD_OP_ENUM

/* The reductions: one value per row of the reduction list in tables.h, in its order. */
#define GD_RED_ENUM(E, ...) GD_RED_##E,
typedef enum gd_redop { GD_REDUCTIONS(GD_RED_ENUM) GD_NUM_REDOPS } gd_redop;
#undef GD_RED_ENUM

typedef enum gd_random_kind { GD_RAND_UNIFORM = 0, GD_RAND_NORMAL = 1 } gd_random_kind;

/* Memory gpudev holds on one device (memory_stats). */
typedef struct gd_memory_stats {
    int64_t allocated_bytes;      /* live arrays and the scratch of operations still running,
                                   * as requested */
    int64_t reserved_bytes;       /* held from the system: live blocks with their padding, plus
                                   * on GPUs the pool's cache of freed blocks */
    int64_t peak_allocated_bytes; /* most allocated_bytes since start or reset_peak_memory */
    int64_t allocations;          /* live blocks */
} gd_memory_stats;

/* Facts about one GPU (device_props), for Device.info() and the roofs of the exercises. */
typedef struct gd_device_props {
    char name[256];
    int cc_major, cc_minor;         /* compute capability */
    int multiprocessors;
    int clock_rate_khz;
    int memory_clock_rate_khz;
    int memory_bus_width;           /* bits */
    int64_t l2_cache_bytes;
    int64_t total_memory;
    int64_t free_memory;
    int driver_version;             /* e.g. 13000 for 13.0; 0 when unknown */
    int runtime_version;
} gd_device_props;

/* Elementwise shape. The output has `shape`; its element for index (i0, ..., in-1) lives at
 * out + sum(ik * out_strides[k]) elements, and each operand's at data + sum(ik * strides[k]).
 * Strides are in elements, of any sign, 0 on broadcast axes. The core drops axes of length 1,
 * orders the axes so that the output's strides shrink inwards and merges neighbours, so ndim
 * is small and a strided view that is dense in memory becomes one run. When `contiguous` is
 * set, the output and every array operand are `size` contiguous elements in the same order and
 * no stride need be read. An operand shares memory with the output only exactly (same data,
 * same strides): the core copies operands that overlap it in any other way. */
typedef struct gd_ewise {
    int ndim;                        /* 0 for a scalar result */
    int contiguous;
    int64_t size;                    /* product of shape; >= 1 (the core skips empty work) */
    int64_t shape[GD_MAX_NDIM];
    int64_t out_strides[GD_MAX_NDIM]; /* elements, per axis */
} gd_ewise;

typedef struct gd_operand {
    const void *data;             /* device pointer, or NULL: then `scalar` is the value */
    gd_scalar scalar;
    int64_t strides[GD_MAX_NDIM]; /* elements, per output axis; 0 = broadcast */
} gd_operand;

/* One operand of a matrix product, as gemm reads it: matrix p of the batch starts at
 * data + p * stride elements (stride 0: the same matrix for every product); element (i, j)
 * is at i * ld + j, or at j * ld + i when `trans` is set (a transposed view, handed to BLAS
 * as a transpose flag instead of being copied). ld >= max(1, the stored rows' length). */
typedef struct gd_matrix {
    const void *data;
    int trans;
    int64_t ld;
    int64_t stride;
} gd_matrix;

/* A window sliding over planes of h x w elements: convolution's im2col and col2im, and
 * pooling. Output position (i, j), i < out_h, j < out_w, reads input rows
 * i * stride_h - pad_h + a * dilation_h for a < kernel_h (columns the same way); rows and
 * columns outside [0, h) x [0, w) are padding, which the caller may make asymmetric by its
 * choice of out_h and out_w ('same' padding, ceil_mode). With `adaptive` set, window (i, j)
 * covers rows [floor(i * h / out_h), ceil((i + 1) * h / out_h)) (columns alike) and kernel,
 * stride, pad and dilation are unused (adaptive pooling). Every extent is >= 1, pads >= 0;
 * the core checks that the sizes of every array involved fit in int64. */
typedef struct gd_window2d {
    int64_t channels; /* planes per image */
    int64_t h, w, out_h, out_w;
    int64_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int adaptive;
} gd_window2d;

/* Pooling's reduction over a window. */
typedef enum gd_pool_kind {
    GD_POOL_MAX = 0, /* PyTorch's rule: the first largest, a NaN taken as it comes */
    GD_POOL_AVG = 1,
} gd_pool_kind;

/* Where element (image b, row r, position l) of an im2col matrix lives: at
 * b * image_stride + r * row_stride + l elements (l < out_h * out_w is contiguous), so the
 * matrix may be (images, rows, L) or (rows, images * L), the layouts of a product per image
 * and of one product for the whole batch. Rows are channel-major: r = (c * kernel_h + a) *
 * kernel_w + b'. */
typedef struct gd_col_layout {
    int64_t image_stride, row_stride;
} gd_col_layout;

/* ------------------------------------------------------------------------------------------
 * the backend vtable
 *
 * `device` is the device index (0 for the CPU). Every pointer passed to an entry lives on
 * that device unless the entry says host. Entries return GD_OK or fill *err and return its
 * code. GPU backends queue work on the device's stream and return at once; only entries
 * documented as synchronizing wait. Optional entries may be NULL.
 * ---------------------------------------------------------------------------------------- */

/* The entry types of the table, written once: the backends declare their entries with them
 * (gd_unary_fn gd_cpu_unary;), so a definition that differs fails to compile. Each entry is
 * documented at its field below. Outside extern "C": in C++ a typedef there would give the
 * CUDA backend's C++ functions a C function type. */
#ifdef __cplusplus
}
#endif
typedef int gd_device_count_fn(void);
typedef int gd_synchronize_fn(int device, gd_error *err);
typedef int gd_alloc_fn(void **out, int device, size_t nbytes, gd_error *err);
typedef void gd_free_fn(void *ptr, int device, size_t nbytes);
typedef int gd_copy_from_host_fn(void *dst, int device, const void *host_src, size_t nbytes, gd_error *err);
typedef int gd_copy_to_host_fn(void *host_dst, const void *src, int device, size_t nbytes, gd_error *err);
typedef int gd_copy_device_fn(void *dst, int dst_device, const void *src, int src_device, size_t nbytes,
                              gd_error *err);
typedef int gd_copy_2d_fn(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
                          size_t height, int device, gd_error *err);
typedef int gd_copy_async_fn(void *dst, const void *src, int to_host, int device, size_t nbytes, void *event,
                            gd_error *err);
typedef int gd_event_synchronize_fn(void *event, int device, gd_error *err);
typedef int gd_unary_fn(void *out, gd_unop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a,
                        int device, gd_error *err);
typedef int gd_binary_fn(void *out, gd_binop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a,
                         const gd_operand *b, int device, gd_error *err);
typedef int gd_astype_fn(void *out, gd_dtype out_dtype, const void *in, gd_dtype in_dtype, int64_t n,
                         int device, gd_error *err);
typedef int gd_reduce_fn(void *out, gd_dtype out_dtype, gd_redop op, const void *in, gd_dtype in_dtype,
                         int64_t outer, int64_t len, int64_t inner, int device, gd_error *err);
typedef int gd_gemm_fn(void *c, gd_dtype dtype, const gd_matrix *a, const gd_matrix *b, int64_t batch,
                       int64_t m, int64_t n, int64_t k, int64_t stride_c, int device, gd_error *err);
typedef int gd_permute_fn(void *out, gd_dtype dtype, const void *in, int ndim, const int64_t *in_shape,
                          const int *perm, int device, gd_error *err);
typedef int gd_arange_fn(void *out, gd_dtype dtype, gd_scalar start, gd_scalar step, int64_t n, int device,
                         gd_error *err);
typedef int gd_random_fn(void *out, gd_dtype dtype, gd_random_kind kind, uint64_t seed, uint64_t offset,
                         int64_t n, int device, gd_error *err);
typedef int gd_memory_stats_fn(gd_memory_stats *out, int device, gd_error *err);
typedef void gd_reset_peak_memory_fn(int device);
typedef int gd_empty_cache_fn(int device, gd_error *err);
typedef int gd_device_props_fn(gd_device_props *out, int device, gd_error *err);
typedef int gd_synchronize_all_fn(int device, gd_error *err);
typedef int gd_event_create_fn(void **out, int device, gd_error *err);
typedef int gd_event_record_fn(void *event, int device, gd_error *err);
typedef int gd_event_elapsed_ms_fn(double *out, void *start, void *end, int device, gd_error *err);
typedef void gd_event_destroy_fn(void *event, int device);
typedef int gd_pointer_chase_fn(double *ns_per_load, int repeats, int64_t working_set_bytes, int64_t steps,
                                int device, gd_error *err);
typedef int gd_stream_wait_device_fn(int device, uint64_t stream, gd_error *err);
typedef int gd_device_wait_stream_fn(int device, uint64_t stream, gd_error *err);
typedef int gd_gather_rows_fn(void *out, int64_t *bad, const void *src, int64_t rows, const int64_t *idx,
                              int64_t n, gd_dtype dtype, int64_t inner, int device, gd_error *err);
typedef int gd_scatter_rows_fn(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src,
                               int64_t n, gd_dtype dtype, int64_t inner, int device, gd_error *err);
typedef int gd_scatter_add_rows_fn(void *dst, int64_t *bad, int64_t rows, const int64_t *idx,
                                   const void *src, int64_t n, gd_dtype dtype, int64_t inner, int device,
                                   gd_error *err);
typedef int gd_count_nonzero_fn(int64_t *count, const void *mask, int64_t n, int device, gd_error *err);
typedef int gd_nonzero_fn(int64_t *out, int64_t count, const void *mask, int ndim, const int64_t *shape,
                          int device, gd_error *err);
typedef int gd_where_fn(void *out, gd_dtype dtype, const gd_ewise *ew, const gd_operand *cond,
                        const gd_operand *x, const gd_operand *y, int device, gd_error *err);
typedef int gd_argreduce_fn(int64_t *out, gd_redop op, const void *in, gd_dtype dtype, int64_t outer,
                            int64_t len, int64_t inner, int device, gd_error *err);
typedef int gd_axpby_fn(void *y, gd_dtype dtype, gd_scalar beta, const void *x, gd_scalar alpha, int64_t n,
                        int device, gd_error *err);
typedef int gd_im2col_fn(void *col, const gd_col_layout *layout, gd_dtype dtype, const void *im,
                         const gd_window2d *g, int64_t images, int device, gd_error *err);
typedef int gd_col2im_fn(void *im, gd_dtype dtype, const void *col, const gd_col_layout *layout,
                         const gd_window2d *g, int64_t images, int device, gd_error *err);
typedef int gd_pool2d_fn(void *out, int64_t *indices, gd_dtype dtype, gd_pool_kind kind, const void *in,
                         const gd_window2d *g, int64_t images, int count_include_pad, int64_t divisor,
                         int device, gd_error *err);
typedef int gd_pool2d_backward_fn(void *grad_in, gd_dtype dtype, gd_pool_kind kind, const void *grad_out,
                                  const int64_t *indices, const gd_window2d *g, int64_t images,
                                  int count_include_pad, int64_t divisor, int device, gd_error *err);

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gd_backend {
    int abi_version;            /* GD_BACKEND_ABI_VERSION */
    const char *name;           /* "cpu", "cuda" */

    /* devices */
    gd_device_count_fn *device_count;  /* never fails: 0 when there is no driver or no device */
    gd_synchronize_fn *synchronize;    /* optional */

    /* memory: alloc of 0 bytes returns a valid non-NULL pointer; free(NULL) is a no-op.
     * free is stream-ordered on GPUs: freeing memory still used by queued work is safe. */
    gd_alloc_fn *alloc;
    gd_free_fn *free;

    /* copies. to_host and from_host take a host pointer; to_host synchronizes (the bytes are
     * there when it returns); from_host may return once the source may be reused.
     * copy_device copies between two devices of this backend (same index: plain d2d). */
    gd_copy_from_host_fn *copy_from_host;
    gd_copy_to_host_fn *copy_to_host;
    gd_copy_device_fn *copy_device;
    /* 2-D copy on one device: `height` rows of `width` bytes, rows `dst_pitch` / `src_pitch`
     * bytes apart. Used by concatenate, stack and slicing copies. */
    gd_copy_2d_fn *copy_2d;

    /* ---- pinned host memory and copies that return at once (optional; added in ABI 10) ----
     * All four NULL where the device copies host memory without pinning it (the CPU). */
    /* Page-locked host memory that the device copies to and from directly (host_alloc of 0
     * bytes returns a valid pointer; host_free(NULL) is a no-op). host_free waits for nothing:
     * the core frees a buffer only once the copies that use it have ended. */
    gd_alloc_fn *host_alloc;
    gd_free_fn *host_free;
    /* Queues a copy of nbytes between pinned host memory and the device (to_host: src on the
     * device, dst pinned; else the reverse) after the work queued so far on `device`, records
     * `event` (from event_create) after it, and returns without waiting. */
    gd_copy_async_fn *copy_async;
    /* Waits until the latest record of `event` has run. Blocks. */
    gd_event_synchronize_fn *event_synchronize;

    /* out = op(a) elementwise, out and a of `dtype`. */
    gd_unary_fn *unary;
    /* out = a op b elementwise, a and b of `dtype`; out too, except for the comparisons
     * (tables.h: GD_OP_BOOL_OUT), whose out is bool. Bool operands hold only 0 and 1. */
    gd_binary_fn *binary;
    /* out (n elements of out_dtype) = in (n elements of in_dtype) converted as C casts do
     * (float to int truncates toward zero). */
    gd_astype_fn *astype;

    /* out[o * inner + i] = reduce over r in [0, len) of in[(o * len + r) * inner + i]
     * for o < outer, i < inner. out_dtype is in_dtype or GD_FLOAT64 (a float64 result of a
     * float32 or integer input, used by mean and multi-pass reductions), or GD_INT64 for the
     * reduction list's WIDE rows (tables.h: SUM, SUMSQ, ...) of int32 (accumulated in int64,
     * wrapping there, as NumPy sums a smaller integer into its default one). len may be 0 for
     * a row with an identity (the result is its identity). */
    gd_reduce_fn *reduce;

    /* Batched matrix product of float32, float64, int64 or int32 (integers wrap as NumPy's do):
     * for p < batch: C + p*stride_c (m, n, row-major) = A_p (m, k) @ B_p (k, n), the operands
     * read as gd_matrix says. k may be 0 (C is zeros). */
    gd_gemm_fn *gemm;

    /* out = in with its axes permuted: out.shape[k] = in_shape[perm[k]]; C-contiguous both. */
    gd_permute_fn *permute;

    /* out[i] = start + i * step for i < n (float dtypes compute in double, then round). */
    gd_arange_fn *arange;

    /* Random numbers from Philox4x32-10 as defined in philox.h: element i of the output uses
     * block counter `offset + i / per` (per = GD_PHILOX_PER_BLOCK(dtype)); float dtypes only. */
    gd_random_fn *random;

    /* ---- device services (all optional) ---- */

    /* What gpudev holds on `device`; all zeros for a device gpudev has not used yet (the
     * driver is not touched then). */
    gd_memory_stats_fn *memory_stats;
    /* Restart peak_allocated_bytes from the current allocated_bytes. */
    gd_reset_peak_memory_fn *reset_peak_memory;
    /* Wait for the device, then give memory cached by its pool back to the system. NULL when
     * the backend caches nothing. Blocks. */
    gd_empty_cache_fn *empty_cache;
    /* Name, compute capability, memory, clocks and cache of a GPU. NULL on the CPU (the
     * Python layer reads the host's facts from the OS). */
    gd_device_props_fn *device_props;
    /* Wait for all work of this process on the device, on every stream, not only gpudev's.
     * NULL where gpudev's queue is the only one (then synchronize is enough). Blocks. */
    gd_synchronize_all_fn *synchronize_all;

    /* Events time work on the device's own clock. event_record marks the point after all
     * work queued so far on the device; event_elapsed_ms waits for `end` and gives the
     * milliseconds from `start` to `end` (both recorded on `device`). NULL on the CPU,
     * which is timed with the host clock. */
    gd_event_create_fn *event_create;
    gd_event_record_fn *event_record;
    gd_event_elapsed_ms_fn *event_elapsed_ms;
    gd_event_destroy_fn *event_destroy;

    /* Ordering against another library's stream on `device`, for memory shared through
     * DLPack. `stream` is a stream handle as DLPack passes it: 1 the legacy default stream,
     * 2 the per-thread default stream, any other value the stream itself. Neither call
     * blocks. NULL (both) where the backend has no streams (the CPU). */
    /* Work queued on `stream` from now on starts after the work queued on `device` so far
     * (an export: the consumer reads what gpudev wrote). */
    gd_stream_wait_device_fn *stream_wait_device;
    /* Work queued on `device` from now on, frees included, starts after the work queued on
     * `stream` so far (a release: gpudev may reuse what the consumer read). */
    gd_device_wait_stream_fn *device_wait_stream;

    /* ---- indexing that copies: gathers and scatters of rows, stream compaction ----
     *
     * A table of `rows` rows, each `inner` C-contiguous elements of `dtype`; `idx` holds n
     * int64 row numbers on the device, a negative one counting from the end. *bad (host)
     * receives -1, or the position in idx of the first index outside [-rows, rows), and
     * then nothing was read out of bounds and nothing was written to dst. These entries
     * synchronize on GPUs (bad and count are read back). n >= 1, inner >= 1. */
    /* out[k] = src[idx[k]] for k < n, row by row. */
    gd_gather_rows_fn *gather_rows;
    /* dst[idx[k]] = src[k] for k < n; with repeated indices the CPU keeps the last write, a
     * GPU any one of them. */
    gd_scatter_rows_fn *scatter_rows;
    /* dst[idx[k]] += src[k] for k < n; repeated indices accumulate (atomics on GPUs).
     * float32, float64, int64 and int32 (integers wrap). */
    gd_scatter_add_rows_fn *scatter_add_rows;
    /* *count (host) = how many of the n bool elements of mask are nonzero. n >= 0. */
    gd_count_nonzero_fn *count_nonzero;
    /* out[k * count + j] = coordinate k of the j-th nonzero element, in C order, of mask
     * (bool, C-contiguous, `shape` a host array of ndim >= 1 lengths), count from
     * count_nonzero (>= 1). */
    gd_nonzero_fn *nonzero;

    /* ---- selection: where, argmax and argmin (required; added in ABI 6) ---- */

    /* out = cond ? x : y elementwise, planned as binary is: cond is bool (the core turns other
     * dtypes into cond != 0), x, y and out are of `dtype`; any operand may be a scalar
     * (cond's scalar is .i, 0 or 1). The values are copied, never computed with, so inf and
     * NaN come through as they are. out never shares memory with an operand. */
    gd_where_fn *where;
    /* out[o * inner + i] (int64) = the first r in [0, len) where in[(o * len + r) * inner + i]
     * is largest (op GD_RED_MAX: argmax) or smallest (GD_RED_MIN: argmin), for o < outer,
     * i < inner; a NaN counts as the extreme, so the first NaN wins (NumPy's rule). in is
     * C-contiguous of `dtype` (any dtype; bools compare as 0 < 1); len >= 1 (the core refuses
     * empty axes). */
    gd_argreduce_fn *argreduce;

    /* ---- fused updates (required; added in ABI 7) ---- */

    /* y[i] = beta * y[i] + alpha * x[i] for i < n, in place: y and x C-contiguous of `dtype`
     * (float32 or float64; beta.f and alpha.f rounded to it first), x equal to y or apart
     * from it. Each product is rounded, then the sum: no fused multiply-add, so the bits are
     * those of the two operations written out (y *= beta; y += alpha * x), in one pass and
     * with no temporary. An optimizer's step (p -= lr * g, v = momentum * v + g) is this. */
    gd_axpby_fn *axpby;

    /* ---- sliding windows: convolution and pooling (required; added in ABI 9) ----
     *
     * Images are `images` x g->channels planes of g->h x g->w elements, C-contiguous, of
     * float32 or float64 (`dtype`); results are written whole. Each plane is worked on by one
     * thread on the CPU, and nothing is accumulated with atomics, so results do not depend on
     * the thread count or the GPU's schedule. */
    /* col = the im2col matrix of the images (layout above; padding reads as 0): rows
     * channels * kernel_h * kernel_w, out_h * out_w positions per image. g->adaptive is 0. */
    gd_im2col_fn *im2col;
    /* im = the adjoint of im2col: each image element is the sum of the col entries that read
     * it (0 where none does). Overwrites im. */
    gd_col2im_fn *col2im;
    /* out (images x channels planes of out_h x out_w) = each window's max or average.
     * GD_POOL_MAX: the largest value (first wins; a NaN replaces any value, as PyTorch's
     * `v > best || isnan(v)`), and when indices is not NULL its position h_in * w + w_in in
     * its plane (int64, out's shape). GD_POOL_AVG (dilation 1): the sum over the window's
     * part inside the input divided by `divisor` when > 0, else by the window's size clipped
     * to the padded input (count_include_pad) or to the input; an empty window gives 0. */
    gd_pool2d_fn *pool2d;
    /* grad_in (the input's shape) = the adjoint of pool2d: GD_POOL_MAX routes each
     * grad_out element to its window's index (indices as pool2d wrote them); GD_POOL_AVG
     * spreads it over the window, divided as the forward divided. Overwrites grad_in. */
    gd_pool2d_backward_fn *pool2d_backward;

    /* ---- measurement (optional; added in ABI 11) ---- */

    /* Dependent-load latency: ns_per_load[r] (host, r < repeats) = the time of `steps` loads
     * that each take their address from the one before, divided by `steps`, walking one
     * random cycle through the 64-byte lines of a `working_set_bytes` buffer (chase.h) with
     * one thread, after a warm-up walk of up to one lap. working_set_bytes >= 128, steps >= 1
     * (the core checks). Blocks. NULL where the backend cannot measure it. */
    gd_pointer_chase_fn *pointer_chase;
} gd_backend;

#ifdef __cplusplus
}
#endif

/* The dtype and operation tables (names, sizes, which operations need floats), after the
 * enums they describe. */
#define GPUDEV_H_TYPES
#include "tables.h"

#endif /* GPUDEV_H */
