/* cpu.h - internals of the CPU backend shared by its files: portability macros, the 8-byte
 * word kernels accumulate in, and the vtable entries each file defines (backend_cpu.c puts
 * them in the table). Nothing here is seen outside csrc/cpu; the core sees only backend_cpu.h.
 *
 * Every entry computes and returns; the core has already checked shapes, dtypes and devices.
 * Small inputs run straight through a contiguous loop on the calling thread (a 4x4 add must
 * cost a few nanoseconds here); large ones are split over threads (threads.h, which also
 * holds the work sizes worth threads for each kind of operation). Results do not depend on
 * the thread count. Nothing here touches Python, so every entry may run
 * without the GIL, from many threads.
 */
#ifndef GPUDEV_CPU_H
#define GPUDEV_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "gpudev.h"
#include "threads.h"

/* ------------------------------------------------------------------------------------------
 * portability and arithmetic macros
 * ---------------------------------------------------------------------------------------- */

/* One build runs everywhere: hot loops get AVX-512 and AVX2 clones picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__)
#define GD_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GD_SIMD
#endif

#ifdef __GNUC__
#define GD_NOINLINE __attribute__((noinline))
#else
#define GD_NOINLINE
#endif

#define GD_MIN(a, b) ((a) < (b) ? (a) : (b))
#define GD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define GD_ABS64(v) ((v) < 0 ? -(v) : (v)) /* strides: never INT64_MIN */

/* Integer arithmetic is done in uint64 so overflow wraps as in NumPy instead of being
 * undefined behaviour. */
#define GD_U64(v) ((uint64_t)(v))
#define GD_WRAP(v) ((int64_t)(v)) /* uint64 -> int64 keeps the bits (GCC, Clang, MSVC) */

/* NaN-propagating max/min (NumPy's maximum/minimum); written so they vectorize to a
 * compare and a blend. */
#define GD_FMAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))
#define GD_FMIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))

/* float -> int64 as C casts, except NaN, infinities and values outside int64's range, which C
 * leaves undefined: they become INT64_MIN, what NumPy gives on x86-64. */
#define GD_F2I(x) (((x) >= -0x1p63 && (x) < 0x1p63) ? (int64_t)(x) : INT64_MIN)

/* An accumulator or scalar of any dtype in one 8-byte word. */
typedef union gd_word {
    double d;
    int64_t i;
    uint64_t u;
    float f;
    uint8_t b; /* bool */
} gd_word;

/* ------------------------------------------------------------------------------------------
 * shared helpers
 * ---------------------------------------------------------------------------------------- */

/* GD_ERR_VALUE naming `op` and a dtype this entry does not take (or an unknown code). */
int gd_cpu_bad_dtype(gd_error *err, const char *op, int dtype);

/* memcpy, split over threads for copies of several MiB (copy.c). */
void gd_copy_bytes(void *dst, const void *src, size_t nbytes);

/* ------------------------------------------------------------------------------------------
 * vtable entries, by file (signatures and contracts in gpudev.h)
 * ---------------------------------------------------------------------------------------- */

/* backend_cpu.c */
int gd_cpu_device_count(void);
int gd_cpu_synchronize(int device, gd_error *err);

/* memory.c */
int gd_cpu_alloc(void **out, int device, size_t nbytes, gd_error *err);
void gd_cpu_free(void *ptr, int device, size_t nbytes);
int gd_cpu_get_memory_stats(gd_memory_stats *out, int device, gd_error *err);
void gd_cpu_reset_peak_memory(int device);

/* copy.c */
int gd_cpu_copy_from_host(void *dst, int device, const void *host_src, size_t nbytes, gd_error *err);
int gd_cpu_copy_to_host(void *host_dst, const void *src, int device, size_t nbytes, gd_error *err);
int gd_cpu_copy_device(void *dst, int dst_device, const void *src, int src_device, size_t nbytes,
                       gd_error *err);
int gd_cpu_copy_2d(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width,
                   size_t height, int device, gd_error *err);

/* elementwise.c */
int gd_cpu_unary(void *out, gd_unop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a,
                 int device, gd_error *err);
int gd_cpu_binary(void *out, gd_binop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a,
                  const gd_operand *b, int device, gd_error *err);

/* elementwise.c: where; argreduce.c: argmax and argmin */
int gd_cpu_where(void *out, gd_dtype dtype, const gd_ewise *ew, const gd_operand *cond, const gd_operand *x,
                 const gd_operand *y, int device, gd_error *err);
int gd_cpu_argreduce(int64_t *out, gd_redop op, const void *in, gd_dtype dtype, int64_t outer, int64_t len,
                     int64_t inner, int device, gd_error *err);

/* cast.c */
int gd_cpu_astype(void *out, gd_dtype out_dtype, const void *in, gd_dtype in_dtype, int64_t n,
                  int device, gd_error *err);

/* reduce.c */
int gd_cpu_reduce(void *out, gd_dtype out_dtype, gd_redop op, const void *in, gd_dtype in_dtype,
                  int64_t outer, int64_t len, int64_t inner, int device, gd_error *err);

/* gemm.c */
int gd_cpu_gemm(void *c, gd_dtype dtype, const gd_matrix *a, const gd_matrix *b, int64_t batch, int64_t m,
                int64_t n, int64_t k, int64_t stride_c, int device, gd_error *err);

/* permute.c */
int gd_cpu_permute(void *out, gd_dtype dtype, const void *in, int ndim, const int64_t *in_shape,
                   const int *perm, int device, gd_error *err);

/* generate.c */
int gd_cpu_arange(void *out, gd_dtype dtype, gd_scalar start, gd_scalar step, int64_t n,
                  int device, gd_error *err);
int gd_cpu_random(void *out, gd_dtype dtype, gd_random_kind kind, uint64_t seed, uint64_t offset,
                  int64_t n, int device, gd_error *err);

/* gather.c: indexing that copies */
int gd_cpu_gather_rows(void *out, int64_t *bad, const void *src, int64_t rows, const int64_t *idx, int64_t n,
                       gd_dtype dtype, int64_t inner, int device, gd_error *err);
int gd_cpu_scatter_rows(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src, int64_t n,
                        gd_dtype dtype, int64_t inner, int device, gd_error *err);
int gd_cpu_scatter_add_rows(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src, int64_t n,
                            gd_dtype dtype, int64_t inner, int device, gd_error *err);
int gd_cpu_count_nonzero(int64_t *count, const void *mask, int64_t n, int device, gd_error *err);
int gd_cpu_nonzero(int64_t *out, int64_t count, const void *mask, int ndim, const int64_t *shape, int device,
                   gd_error *err);

#endif /* GPUDEV_CPU_H */
