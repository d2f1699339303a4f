/* elementwise.cu - unary and binary elementwise kernels and where for every dtype with
 * NumPy broadcasting: one templated family, a contiguous fast path and a general strided
 * path that reads the gd_ewise/gd_operand descriptors passed by value; and axpby, an
 * optimizer's fused update of a contiguous array.
 *
 * Semantics match the CPU backend: both run the scalar functions of ewise_math.h, one per
 * row of the op lists in tables.h.
 */
#include "backend_cuda.cuh"
#include "ewise_math.h"

#include <cstring>
#include <type_traits>

namespace {

/* ------------------------------------------------------------------------------------------
 * scalar math: each operation calls its ewise_math.h function for T, the dispatch generated
 * from the op lists (tables.h); the launcher tables below instantiate only the dtypes of a
 * row's TYPES, so a function that is missing fails to compile
 * ---------------------------------------------------------------------------------------- */

template <class T, class U> constexpr bool same = std::is_same_v<T, U>;

/* CALL_<TYPES>(name, args): return gd_ew_<name>_<T's suffix> args */
#define GD_CALL_FLOAT(name, args)                                                                \
    if constexpr (same<T, float>) return gd_ew_##name##_f32 args;                                \
    else return gd_ew_##name##_f64 args;
#define GD_CALL_INT(name, args)                                                                  \
    if constexpr (same<T, int32_t>) return gd_ew_##name##_i32 args;                              \
    else return gd_ew_##name##_i64 args;
#define GD_CALL_NUMERIC(name, args)                                                              \
    if constexpr (gd_is_int<T>) { GD_CALL_INT(name, args) }                                      \
    else { GD_CALL_FLOAT(name, args) }
#define GD_CALL_BITWISE(name, args)                                                              \
    if constexpr (same<T, bool>) return gd_ew_##name##_b args;                                   \
    else { GD_CALL_INT(name, args) }
#define GD_CALL_ALL(name, args)                                                                  \
    if constexpr (same<T, bool>) return gd_ew_##name##_b args;                                   \
    else { GD_CALL_NUMERIC(name, args) }
#define GD_CALL_COMPARE GD_CALL_ALL

#define GD_UNARY_CASE(E, name, TYPES, ...) if constexpr (OP == GD_##E) { GD_CALL_##TYPES(name, (x)) } else
#define GD_BINARY_CASE(E, name, TYPES, ...) if constexpr (OP == GD_##E) { GD_CALL_##TYPES(name, (a, b)) } else

template <gd_unop OP, class T> __device__ __forceinline__ T apply_unop(T x)
{
    GD_UNARY_OPS(GD_UNARY_CASE) { static_assert(OP == GD_NUM_UNOPS, "a gd_unop without a case"); }
}

/* The output element type of a binary operation on T: bool for comparisons. */
template <gd_binop OP, class T> using binop_out = std::conditional_t<gd_binop_has(OP, GD_OP_BOOL_OUT), bool, T>;

template <gd_binop OP, class T> __device__ __forceinline__ binop_out<OP, T> apply_binop(T a, T b)
{
    GD_BINARY_OPS(GD_BINARY_CASE) { static_assert(OP == GD_NUM_BINOPS, "a gd_binop without a case"); }
}

/* ------------------------------------------------------------------------------------------
 * operands
 * ---------------------------------------------------------------------------------------- */

template <class T> __host__ __device__ __forceinline__ T scalar_value(gd_scalar s)
{
    if constexpr (gd_is_int<T>) return (T)s.i;
    else if constexpr (gd_is_bool<T>) return s.i != 0;
    else return (T)s.f;
}

/* An operand of the contiguous path: element i is data[i], or `value` when data is NULL. */
template <class T> struct Flat {
    const T *data;
    T value;
};

template <class T> Flat<T> flat(const gd_operand *op)
{
    return Flat<T>{(const T *)op->data, scalar_value<T>(op->scalar)};
}

template <class T> __device__ __forceinline__ T flat_load(const Flat<T> &a, int64_t i)
{
    return a.data ? gd_load(a.data + i) : a.value;
}

/* Calls f(k, c) with the coordinate c of output index i along each axis k, innermost first.
 * Unrolled over GD_MAX_NDIM so the shape and strides stay in kernel parameters instead of
 * being copied to local memory. I is the division's type: uint32_t where the whole index
 * space fits in it (the launcher's `narrow`, gd_cuda_narrow_index), a few instructions per
 * axis, else int64_t, whose division is a software routine on NVIDIA GPUs. */
template <class I, class F> __device__ __forceinline__ void for_coords(I i, const gd_ewise &ew, F f)
{
    I rem = i;
#pragma unroll
    for (int k = GD_MAX_NDIM - 1; k >= 0; k--) {
        if (k < ew.ndim) {
            const I q = rem / (I)ew.shape[k];
            f(k, (int64_t)(rem - q * (I)ew.shape[k]));
            rem = q;
        }
    }
}

/* Element offsets of output index i in the output and two operands. */
template <class I>
__device__ __forceinline__ int64_t strided_offsets_as(int64_t *oa, int64_t *ob, I i, const gd_ewise &ew,
                                                      const gd_operand &a, const gd_operand &b)
{
    int64_t ra = 0, rb = 0, ro = 0;
    for_coords(i, ew, [&](int k, int64_t c) {
        ro += c * ew.out_strides[k];
        ra += c * a.strides[k];
        rb += c * b.strides[k];
    });
    *oa = ra;
    *ob = rb;
    return ro;
}

__device__ __forceinline__ int64_t strided_offsets(int64_t *oa, int64_t *ob, int64_t i, bool narrow,
                                                   const gd_ewise &ew, const gd_operand &a, const gd_operand &b)
{
    return narrow ? strided_offsets_as<uint32_t>(oa, ob, (uint32_t)i, ew, a, b)
                  : strided_offsets_as<int64_t>(oa, ob, i, ew, a, b);
}

/* ------------------------------------------------------------------------------------------
 * kernels: grid-stride loops with 64-bit indices. `out` may alias an operand of the same
 * layout (in-place forms), so no pointer is __restrict__. Views need not be aligned beyond
 * their element size, so every load and store is of one element.
 * ---------------------------------------------------------------------------------------- */

/* Contiguous kernels handle ILP elements per thread and iteration, all loads before all
 * stores: with one element per iteration the possible aliasing of out and the inputs keeps
 * the compiler from overlapping the next load with this store, and a single element in
 * flight per thread cannot keep HBM busy. Loading first is safe because out aliases an
 * input only element for element. */
#define GD_ILP 4

template <gd_unop OP, class T> __global__ void unary_contig(T *out, int64_t n, Flat<T> a)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (; i + (GD_ILP - 1) * stride < n; i += GD_ILP * stride) {
        T x[GD_ILP];
#pragma unroll
        for (int k = 0; k < GD_ILP; k++) x[k] = flat_load(a, i + k * stride);
#pragma unroll
        for (int k = 0; k < GD_ILP; k++) out[i + k * stride] = apply_unop<OP>(x[k]);
    }
    for (; i < n; i += stride) out[i] = apply_unop<OP>(flat_load(a, i));
}

template <gd_unop OP, class T> __global__ void unary_strided(T *out, gd_ewise ew, gd_operand a, bool narrow)
{
    const T *pa = (const T *)a.data;
    const T va = scalar_value<T>(a.scalar);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ew.size;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t oa, unused;
        const int64_t o = strided_offsets(&oa, &unused, i, narrow, ew, a, a);
        out[o] = apply_unop<OP>(pa ? gd_load(pa + oa) : va);
    }
}

template <gd_binop OP, class T> __global__ void binary_contig(binop_out<OP, T> *out, int64_t n, Flat<T> a, Flat<T> b)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    for (; i + (GD_ILP - 1) * stride < n; i += GD_ILP * stride) {
        T x[GD_ILP], y[GD_ILP];
#pragma unroll
        for (int k = 0; k < GD_ILP; k++) {
            x[k] = flat_load(a, i + k * stride);
            y[k] = flat_load(b, i + k * stride);
        }
#pragma unroll
        for (int k = 0; k < GD_ILP; k++) out[i + k * stride] = apply_binop<OP>(x[k], y[k]);
    }
    for (; i < n; i += stride) out[i] = apply_binop<OP>(flat_load(a, i), flat_load(b, i));
}

template <gd_binop OP, class T>
__global__ void binary_strided(binop_out<OP, T> *out, gd_ewise ew, gd_operand a, gd_operand b, bool narrow)
{
    const T *pa = (const T *)a.data, *pb = (const T *)b.data;
    const T va = scalar_value<T>(a.scalar), vb = scalar_value<T>(b.scalar);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ew.size;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t oa, ob;
        const int64_t o = strided_offsets(&oa, &ob, i, narrow, ew, a, b);
        out[o] = apply_binop<OP>(pa ? gd_load(pa + oa) : va, pb ? gd_load(pb + ob) : vb);
    }
}

/* where: out = c ? x : y. A selection copies bits, so one kernel per element size (U: an
 * unsigned integer of the dtype's size) serves every dtype. */
template <class U> struct Select {
    const bool *c;
    const U *x, *y;
    bool vc;
    U vx, vy; /* the values of scalar operands (data NULL) */
};

template <class U> __global__ void where_contig(U *out, int64_t n, Select<U> s)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const bool c = s.c ? gd_load(s.c + i) : s.vc;
        out[i] = c ? (s.x ? s.x[i] : s.vx) : (s.y ? s.y[i] : s.vy);
    }
}

template <class U>
__global__ void where_strided(U *out, gd_ewise ew, gd_operand c, gd_operand x, gd_operand y, Select<U> s, bool narrow)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ew.size;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t oc = 0, ox = 0, oy = 0, o = 0;
        const auto add = [&](int k, int64_t q) {
            o += q * ew.out_strides[k];
            oc += q * c.strides[k];
            ox += q * x.strides[k];
            oy += q * y.strides[k];
        };
        if (narrow) for_coords((uint32_t)i, ew, add);
        else for_coords(i, ew, add);
        const bool cv = s.c ? gd_load(s.c + oc) : s.vc;
        out[o] = cv ? (s.x ? gd_load(s.x + ox) : s.vx) : (s.y ? gd_load(s.y + oy) : s.vy);
    }
}

/* A scalar of `dtype` as the bits of an element (U has the dtype's size: float32 for 4
 * bytes, float64 or int64 for 8, bool for 1). */
template <class U> U scalar_bits(gd_scalar v, gd_dtype dtype)
{
    U bits{};
    if constexpr (sizeof(U) == 4) {
        if (dtype == GD_INT32) {
            const int32_t i = (int32_t)v.i;
            memcpy(&bits, &i, sizeof bits);
        } else {
            const float f = (float)v.f;
            memcpy(&bits, &f, sizeof bits);
        }
    } else if constexpr (sizeof(U) == 8) {
        if (dtype == GD_FLOAT64) memcpy(&bits, &v.f, sizeof bits);
        else memcpy(&bits, &v.i, sizeof bits);
    } else {
        bits = (U)(v.i != 0);
    }
    return bits;
}

template <class U>
int launch_where(void *out, gd_dtype dtype, const gd_ewise *ew, const gd_operand *c, const gd_operand *x,
                 const gd_operand *y, gd_cuda_device *dev, gd_error *err)
{
    Select<U> s{(const bool *)c->data, (const U *)x->data, (const U *)y->data, c->scalar.i != 0,
                scalar_bits<U>(x->scalar, dtype), scalar_bits<U>(y->scalar, dtype)};
    unsigned blocks = gd_cuda_blocks(dev, ew->size, GD_CUDA_THREADS);
    if (ew->contiguous)
        where_contig<U><<<blocks, GD_CUDA_THREADS, 0, dev->stream>>>((U *)out, ew->size, s);
    else
        where_strided<U><<<blocks, GD_CUDA_THREADS, 0, dev->stream>>>((U *)out, *ew, *c, *x, *y, s,
                                                                       gd_cuda_narrow_index(ew->size));
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * launchers
 * ---------------------------------------------------------------------------------------- */

template <gd_unop OP, class T>
int launch_unary(void *out, const gd_ewise *ew, const gd_operand *a, gd_cuda_device *dev, gd_error *err)
{
    unsigned blocks = gd_cuda_blocks(dev, ew->size, GD_CUDA_THREADS);
    if (ew->contiguous)
        unary_contig<OP, T><<<blocks, GD_CUDA_THREADS, 0, dev->stream>>>((T *)out, ew->size, flat<T>(a));
    else
        unary_strided<OP, T><<<blocks, GD_CUDA_THREADS, 0, dev->stream>>>((T *)out, *ew, *a,
                                                                           gd_cuda_narrow_index(ew->size));
    GD_CHECK_LAUNCH();
    return GD_OK;
}

template <gd_binop OP, class T>
int launch_binary(void *out, const gd_ewise *ew, const gd_operand *a, const gd_operand *b, gd_cuda_device *dev,
                  gd_error *err)
{
    using O = binop_out<OP, T>;
    unsigned blocks = gd_cuda_blocks(dev, ew->size, GD_CUDA_THREADS);
    if (ew->contiguous)
        binary_contig<OP, T><<<blocks, GD_CUDA_THREADS, 0, dev->stream>>>((O *)out, ew->size, flat<T>(a), flat<T>(b));
    else
        binary_strided<OP, T><<<blocks, GD_CUDA_THREADS, 0, dev->stream>>>((O *)out, *ew, *a, *b,
                                                                            gd_cuda_narrow_index(ew->size));
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* The launcher tables, [op][dtype]: launchers only where tables.h defines the operation for
 * the dtype (gd_unop_defined, gd_binop_defined). */
using unary_launch = int (*)(void *out, const gd_ewise *ew, const gd_operand *a, gd_cuda_device *dev, gd_error *err);
using binary_launch = int (*)(void *out, const gd_ewise *ew, const gd_operand *a, const gd_operand *b,
                              gd_cuda_device *dev, gd_error *err);

struct pick_unary {
    template <int OP, class T> static constexpr unary_launch entry()
    {
        if constexpr (!gd_unop_defined((gd_unop)OP, gd_dtype_of<T>)) return nullptr;
        else return launch_unary<(gd_unop)OP, T>;
    }
};

struct pick_binary {
    template <int OP, class T> static constexpr binary_launch entry()
    {
        if constexpr (!gd_binop_defined((gd_binop)OP, gd_dtype_of<T>)) return nullptr;
        else return launch_binary<(gd_binop)OP, T>;
    }
};

using unary_launchers = gd_launch_table<unary_launch, GD_NUM_UNOPS, pick_unary>;
using binary_launchers = gd_launch_table<binary_launch, GD_NUM_BINOPS, pick_binary>;

/* ------------------------------------------------------------------------------------------
 * axpby: y = beta * y + alpha * x, each product and the sum rounded on its own (explicit
 * roundings: nvcc would otherwise fuse a multiply-add, one bit away from the CPU's result)
 * ---------------------------------------------------------------------------------------- */

__device__ __forceinline__ float axpby_one(float y, float x, float b, float a)
{
    return __fadd_rn(__fmul_rn(b, y), __fmul_rn(a, x));
}
__device__ __forceinline__ double axpby_one(double y, double x, double b, double a)
{
    return __dadd_rn(__dmul_rn(b, y), __dmul_rn(a, x));
}

/* x may be y itself: each thread reads both before it writes y[i] */
template <class T> __global__ void axpby_kernel(T *y, const T *x, int64_t n, T beta, T alpha)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = axpby_one(y[i], x[i], beta, alpha);
}

template <class T>
int launch_axpby(void *y, const void *x, int64_t n, gd_scalar beta, gd_scalar alpha, gd_cuda_device *dev, gd_error *err)
{
    axpby_kernel<T><<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (T *)y, (const T *)x, n, (T)beta.f, (T)alpha.f);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* GD_OK when `name` has a launcher for dtype; else fills *err. */
int check_launcher(bool found, const char *name, gd_dtype dtype, gd_error *err)
{
    if (found) return GD_OK;
    return gd_set_error(err, GD_ERR_VALUE, "%s on cuda: not defined for %s arrays", name, gd_dtype_name(dtype));
}

} // namespace

/* ------------------------------------------------------------------------------------------
 * vtable entries
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_unary(void *out, gd_unop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a, int device,
                  gd_error *err)
{
    if (ew->size <= 0) return GD_OK;
    if ((unsigned)op >= GD_NUM_UNOPS || (unsigned)dtype >= GD_NUM_DTYPES)
        return gd_set_error(err, GD_ERR_VALUE, "cuda unary: unknown operation %d or dtype %d", (int)op, (int)dtype);
    const unary_launch launch = unary_launchers::at[op][dtype];
    int rc = check_launcher(launch != nullptr, gd_unop_table[op].name, dtype, err);
    gd_cuda_device *dev = nullptr;
    if (rc == GD_OK) rc = gd_cuda_enter(&dev, device, err);
    return rc == GD_OK ? launch(out, ew, a, dev, err) : rc;
}

int gd_cuda_binary(void *out, gd_binop op, gd_dtype dtype, const gd_ewise *ew, const gd_operand *a,
                   const gd_operand *b, int device, gd_error *err)
{
    if (ew->size <= 0) return GD_OK;
    if ((unsigned)op >= GD_NUM_BINOPS || (unsigned)dtype >= GD_NUM_DTYPES)
        return gd_set_error(err, GD_ERR_VALUE, "cuda binary: unknown operation %d or dtype %d", (int)op, (int)dtype);
    const binary_launch launch = binary_launchers::at[op][dtype];
    int rc = check_launcher(launch != nullptr, gd_binop_table[op].name, dtype, err);
    gd_cuda_device *dev = nullptr;
    if (rc == GD_OK) rc = gd_cuda_enter(&dev, device, err);
    return rc == GD_OK ? launch(out, ew, a, b, dev, err) : rc;
}

int gd_cuda_where(void *out, gd_dtype dtype, const gd_ewise *ew, const gd_operand *cond, const gd_operand *x,
                  const gd_operand *y, int device, gd_error *err)
{
    if (ew->size <= 0) return GD_OK;
    if ((unsigned)dtype >= GD_NUM_DTYPES)
        return gd_set_error(err, GD_ERR_VALUE, "cuda where: unknown dtype %d", (int)dtype);
    gd_cuda_device *dev = nullptr;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    switch (gd_dtype_size(dtype)) {
    case 1: return launch_where<uint8_t>(out, dtype, ew, cond, x, y, dev, err);
    case 4: return launch_where<uint32_t>(out, dtype, ew, cond, x, y, dev, err);
    default: return launch_where<uint64_t>(out, dtype, ew, cond, x, y, dev, err);
    }
}

int gd_cuda_axpby(void *y, gd_dtype dtype, gd_scalar beta, const void *x, gd_scalar alpha, int64_t n, int device,
                  gd_error *err)
{
    if ((unsigned)dtype >= GD_NUM_DTYPES || !gd_dtype_is_float(dtype))
        return gd_set_error(err, GD_ERR_VALUE, "cuda axpby: defined for float32 and float64, not dtype %d", (int)dtype);
    if (n <= 0) return GD_OK;
    gd_cuda_device *dev = nullptr;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (dtype == GD_FLOAT32) return launch_axpby<float>(y, x, n, beta, alpha, dev, err);
    return launch_axpby<double>(y, x, n, beta, alpha, dev, err);
}
