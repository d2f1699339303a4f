/* elementwise.c - the CPU backend's unary and binary kernels for every dtype, selected from
 * [op][dtype] tables, and the driver that runs them over a gd_ewise: one contiguous run, or an
 * N-d walk over strided and broadcast operands, split over threads when large.
 */
#include <math.h>
#include <stddef.h>

#include "cpu.h"

/* ------------------------------------------------------------------------------------------
 * elementwise kernels
 *
 * A kernel handles one run of n output elements: out[i] = f(a[i * sa], b[i * sb]).
 * Stride 1 (contiguous) and 0 (broadcast or scalar) get loops of their own, which the
 * compiler vectorizes; out may be a or b itself (in-place forms). Integer arithmetic wraps
 * (GD_U64, GD_WRAP in cpu.h).
 * ---------------------------------------------------------------------------------------- */

typedef void (*gd_un_kernel)(void *out, const void *a, int64_t sa, int64_t n);
typedef void (*gd_bin_kernel)(void *out, const void *a, int64_t sa, const void *b, int64_t sb, int64_t n);

#define GD_DEFINE_UNARY(NAME, T, EXPR)                                                           \
    GD_SIMD static void NAME(void *out_, const void *a_, int64_t sa, int64_t n)                  \
    {                                                                                            \
        T *out = out_;                                                                           \
        const T *a = a_;                                                                         \
        if (sa == 1) {                                                                           \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (sa == 0) {                                                                    \
            T x = a[0];                                                                          \
            T v = (EXPR);                                                                        \
            for (int64_t i = 0; i < n; i++) out[i] = v;                                          \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa];                                                                 \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        }                                                                                        \
    }

#define GD_DEFINE_BINARY(NAME, T, EXPR)                                                          \
    GD_SIMD static void NAME(void *out_, const void *a_, int64_t sa, const void *b_, int64_t sb, \
                             int64_t n)                                                          \
    {                                                                                            \
        T *out = out_;                                                                           \
        const T *a = a_, *b = b_;                                                                \
        if (sa == 1 && sb == 1) {                                                                \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i], y = b[i];                                                            \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (sa == 1 && sb == 0) {                                                         \
            const T y = b[0];                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (sa == 0 && sb == 1) {                                                         \
            const T x = a[0];                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T y = b[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa], y = b[i * sb];                                                  \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        }                                                                                        \
    }

/* base ** exp by squaring in uint64, wrapping like NumPy. The core rejects negative exponents;
 * they get the truncated value of the exact result (0 unless base is 1 or -1). */
static inline int64_t gd_ipow(int64_t base, int64_t exp)
{
    if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;
    uint64_t b = GD_U64(base), r = 1;
    for (uint64_t e = GD_U64(exp); e; e >>= 1) {
        if (e & 1) r *= b;
        b *= b;
    }
    return GD_WRAP(r);
}

#define GD_FLOAT_ELEMENTWISE(S, T, FABS, EXP, LOG, SQRT, TANH, POW)                              \
    GD_DEFINE_UNARY(un_copy_##S, T, x)                                                           \
    GD_DEFINE_UNARY(un_neg_##S, T, -x)                                                           \
    GD_DEFINE_UNARY(un_abs_##S, T, FABS(x))                                                      \
    GD_DEFINE_UNARY(un_relu_##S, T, (x > 0 || x != x) ? x : (T)0)                                \
    GD_DEFINE_UNARY(un_exp_##S, T, EXP(x))                                                       \
    GD_DEFINE_UNARY(un_log_##S, T, LOG(x))                                                       \
    GD_DEFINE_UNARY(un_sqrt_##S, T, SQRT(x))                                                     \
    GD_DEFINE_UNARY(un_tanh_##S, T, TANH(x))                                                     \
    GD_DEFINE_UNARY(un_square_##S, T, x * x)                                                     \
    GD_DEFINE_BINARY(bin_add_##S, T, x + y)                                                      \
    GD_DEFINE_BINARY(bin_sub_##S, T, x - y)                                                      \
    GD_DEFINE_BINARY(bin_mul_##S, T, x * y)                                                      \
    GD_DEFINE_BINARY(bin_div_##S, T, x / y)                                                      \
    GD_DEFINE_BINARY(bin_pow_##S, T, POW(x, y))                                                  \
    GD_DEFINE_BINARY(bin_max_##S, T, GD_FMAX(x, y))                                              \
    GD_DEFINE_BINARY(bin_min_##S, T, GD_FMIN(x, y))

GD_FLOAT_ELEMENTWISE(f32, float, fabsf, expf, logf, sqrtf, tanhf, powf)
GD_FLOAT_ELEMENTWISE(f64, double, fabs, exp, log, sqrt, tanh, pow)

GD_DEFINE_UNARY(un_copy_i64, int64_t, x)
GD_DEFINE_UNARY(un_neg_i64, int64_t, GD_WRAP(0 - GD_U64(x)))
GD_DEFINE_UNARY(un_abs_i64, int64_t, x < 0 ? GD_WRAP(0 - GD_U64(x)) : x)
GD_DEFINE_UNARY(un_relu_i64, int64_t, x > 0 ? x : 0)
GD_DEFINE_UNARY(un_square_i64, int64_t, GD_WRAP(GD_U64(x) * GD_U64(x)))
GD_DEFINE_BINARY(bin_add_i64, int64_t, GD_WRAP(GD_U64(x) + GD_U64(y)))
GD_DEFINE_BINARY(bin_sub_i64, int64_t, GD_WRAP(GD_U64(x) - GD_U64(y)))
GD_DEFINE_BINARY(bin_mul_i64, int64_t, GD_WRAP(GD_U64(x) * GD_U64(y)))
GD_DEFINE_BINARY(bin_pow_i64, int64_t, gd_ipow(x, y))
GD_DEFINE_BINARY(bin_max_i64, int64_t, x > y ? x : y)
GD_DEFINE_BINARY(bin_min_i64, int64_t, x < y ? x : y)

/* The kernel tables: one row per operation in gpudev.h's order, one column per dtype. A
 * float-only operation (tables.h) has no int64 kernel: the core computes integers in float64. */
GD_STATIC_ASSERT(GD_NUM_DTYPES == 3, "the kernel rows below list float32, float64 and int64");
#define GD_ROW(PREFIX, S) {PREFIX##S##_f32, PREFIX##S##_f64, PREFIX##S##_i64}
#define GD_FLOAT_ROW(PREFIX, S) {PREFIX##S##_f32, PREFIX##S##_f64, NULL}

static const gd_un_kernel gd_un_kernels[][GD_NUM_DTYPES] = {
    GD_ROW(un_, copy), GD_ROW(un_, neg), GD_ROW(un_, abs), GD_ROW(un_, relu), GD_FLOAT_ROW(un_, exp),
    GD_FLOAT_ROW(un_, log), GD_FLOAT_ROW(un_, sqrt), GD_FLOAT_ROW(un_, tanh), GD_ROW(un_, square),
};
GD_STATIC_ASSERT(GD_COUNT_OF(gd_un_kernels) == GD_NUM_UNOPS, "gd_un_kernels: one row per gd_unop");

static const gd_bin_kernel gd_bin_kernels[][GD_NUM_DTYPES] = {
    GD_ROW(bin_, add), GD_ROW(bin_, sub), GD_ROW(bin_, mul), GD_FLOAT_ROW(bin_, div),
    GD_ROW(bin_, pow), GD_ROW(bin_, max), GD_ROW(bin_, min),
};
GD_STATIC_ASSERT(GD_COUNT_OF(gd_bin_kernels) == GD_NUM_BINOPS, "gd_bin_kernels: one row per gd_binop");

#undef GD_ROW
#undef GD_FLOAT_ROW

/* ------------------------------------------------------------------------------------------
 * elementwise driver: contiguous fast path and the strided N-d walk
 * ---------------------------------------------------------------------------------------- */

static const int64_t gd_zero_strides[GD_MAX_NDIM];

typedef struct gd_ewise_job {
    const gd_ewise *ew;
    char *out;
    size_t esz;
    int nin;                         /* 1 (unary) or 2 (binary) */
    const char *in[2];
    const int64_t *strides[2];       /* per output axis, elements; zeros for a scalar */
    int64_t contig_stride[2];        /* contiguous path: 1 for arrays, 0 for scalars */
    gd_un_kernel un;
    gd_bin_kernel bin;
} gd_ewise_job;

static inline void gd_ewise_run(const gd_ewise_job *job, char *out, const char *a, int64_t sa,
                                const char *b, int64_t sb, int64_t n)
{
    if (job->nin == 1)
        job->un(out, a, sa, n);
    else
        job->bin(out, a, sa, b, sb, n);
}

static void gd_ewise_contig_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_ewise_job *job = ctx;
    const int64_t s0 = job->contig_stride[0], s1 = job->contig_stride[1];
    const int64_t e = (int64_t)job->esz;
    gd_ewise_run(job, job->out + begin * e, job->in[0] + begin * s0 * e, s0,
                 job->nin == 2 ? job->in[1] + begin * s1 * e : NULL, s1, end - begin);
}

/* Output elements [begin, end) of an N-d operation: runs along the innermost axis go to
 * the kernel; an index counter steps the outer axes and keeps each operand's offset. */
static void gd_ewise_strided_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_ewise_job *job = ctx;
    const gd_ewise *ew = job->ew; /* ndim >= 2: fewer axes take the contiguous path */
    const int64_t e = (int64_t)job->esz;
    const int last = ew->ndim - 1;
    const int64_t inner = ew->shape[last];
    int64_t idx[GD_MAX_NDIM];
    int64_t row_off[2] = {0, 0}, inner_stride[2] = {0, 0};
    int64_t row = begin / inner, col = begin % inner;
    for (int k = last - 1; k >= 0; k--) {
        idx[k] = row % ew->shape[k];
        row /= ew->shape[k];
    }
    for (int j = 0; j < job->nin; j++) {
        inner_stride[j] = job->strides[j][last];
        for (int k = 0; k < last; k++) row_off[j] += idx[k] * job->strides[j][k];
    }
    for (int64_t pos = begin; pos < end;) {
        int64_t n = GD_MIN(inner - col, end - pos);
        gd_ewise_run(job, job->out + pos * e, job->in[0] + (row_off[0] + col * inner_stride[0]) * e,
                     inner_stride[0],
                     job->nin == 2 ? job->in[1] + (row_off[1] + col * inner_stride[1]) * e : NULL,
                     inner_stride[1], n);
        pos += n;
        col = 0;
        for (int k = last - 1; k >= 0; k--) { /* odometer step over the outer axes */
            for (int j = 0; j < job->nin; j++) row_off[j] += job->strides[j][k];
            if (++idx[k] < ew->shape[k]) break;
            for (int j = 0; j < job->nin; j++) row_off[j] -= job->strides[j][k] * ew->shape[k];
            idx[k] = 0;
        }
    }
}

/* A scalar operand becomes a one-element buffer read with stride 0. */
static const char *gd_operand_data(const gd_operand *op, gd_dtype dtype, gd_word *buf)
{
    if (op->data) return op->data;
    if (dtype == GD_FLOAT32)
        buf->f = (float)op->scalar.f;
    else if (dtype == GD_FLOAT64)
        buf->d = op->scalar.f;
    else
        buf->i = op->scalar.i;
    return (const char *)buf;
}

static void gd_ewise_execute(gd_ewise_job *job, const gd_operand *const *ops, int64_t par_min)
{
    const gd_ewise *ew = job->ew;
    int nt = gd_threads_for(ew->size, par_min);
    if (ew->contiguous || ew->ndim <= 1) {
        /* one run: stride 1 (contiguous), 0 (scalar, broadcast, 0-d) or a 1-d operand's own */
        for (int j = 0; j < job->nin; j++)
            job->contig_stride[j] = !ops[j]->data || ew->ndim == 0 ? 0 : ew->contiguous ? 1 : ops[j]->strides[0];
        if (nt <= 1)
            gd_ewise_run(job, job->out, job->in[0], job->contig_stride[0], job->in[1], job->contig_stride[1],
                         ew->size);
        else
            gd_parallel_for(nt, ew->size, 16, gd_ewise_contig_range, job);
        return;
    }
    for (int j = 0; j < job->nin; j++) job->strides[j] = ops[j]->data ? ops[j]->strides : gd_zero_strides;
    gd_parallel_for(nt, ew->size, 16, gd_ewise_strided_range, job);
}

/* GD_OK when `name` is defined for dtype, else fills *err. */
static int gd_ewise_check(gd_error *err, const char *name, int float_only, gd_dtype dtype)
{
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_cpu_bad_dtype(err, name, dtype);
    if (float_only && !gd_dtype_is_float(dtype))
        return gd_set_error(err, GD_ERR_VALUE, "%s: not defined for %s arrays; convert with astype(float64) first",
                            name, gd_dtype_name(dtype));
    return GD_OK;
}

static int gd_no_kernel(gd_error *err, const char *name, gd_dtype dtype)
{
    return gd_set_error(err, GD_ERR_UNSUPPORTED, "%s: the CPU backend has no %s kernel", name, gd_dtype_name(dtype));
}

int gd_cpu_unary(void *out, gd_unop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a, int device,
                 gd_error *err)
{
    (void)device;
    if ((unsigned)op >= GD_NUM_UNOPS)
        return gd_set_error(err, GD_ERR_VALUE, "unary: unknown operation code %d", (int)op);
    const gd_unop_info *info = &gd_unop_table[op];
    int rc = gd_ewise_check(err, info->name, gd_unop_float_only(op), dtype);
    if (rc != GD_OK) return rc;
    gd_un_kernel k = gd_un_kernels[op][dtype];
    if (!k) return gd_no_kernel(err, info->name, dtype);
    gd_word sbuf;
    gd_ewise_job job = {.ew = ew, .out = out, .esz = gd_dtype_size(dtype), .nin = 1, .un = k};
    job.in[0] = gd_operand_data(a, dtype, &sbuf);
    job.in[1] = NULL;
    const gd_operand *ops[1] = {a};
    gd_ewise_execute(&job, ops, (info->flags & GD_OP_COSTLY) ? GD_PAR_LIBM : GD_PAR_ELEMENTWISE);
    return GD_OK;
}

int gd_cpu_binary(void *out, gd_binop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a,
                  const gd_operand *b, int device, gd_error *err)
{
    if ((unsigned)op >= GD_NUM_BINOPS)
        return gd_set_error(err, GD_ERR_VALUE, "binary: unknown operation code %d", (int)op);
    const gd_binop_info *info = &gd_binop_table[op];
    int rc = gd_ewise_check(err, info->name, gd_binop_float_only(op), dtype);
    if (rc != GD_OK) return rc;
    gd_bin_kernel k = gd_bin_kernels[op][dtype];
    if (!k) return gd_no_kernel(err, info->name, dtype);
    /* a ** 2 is a * a exactly (one rounding), and far cheaper than pow */
    if (op == GD_POW && gd_dtype_is_float(dtype) && !b->data && b->scalar.f == 2.0)
        return gd_cpu_unary(out, GD_SQUARE, dtype, ew, a, device, err);
    gd_word abuf, bbuf;
    gd_ewise_job job = {.ew = ew, .out = out, .esz = gd_dtype_size(dtype), .nin = 2, .bin = k};
    job.in[0] = gd_operand_data(a, dtype, &abuf);
    job.in[1] = gd_operand_data(b, dtype, &bbuf);
    const gd_operand *ops[2] = {a, b};
    gd_ewise_execute(&job, ops, (info->flags & GD_OP_COSTLY) ? GD_PAR_LIBM : GD_PAR_ELEMENTWISE);
    return GD_OK;
}
