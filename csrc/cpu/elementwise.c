/* elementwise.c - the CPU backend's unary and binary kernels for every dtype, selected from
 * [op][dtype] tables, where (a selection by element size), axpby (an optimizer's fused
 * update), and the driver that runs them over a gd_ewise: one contiguous run, or an
 * N-d walk over strided and broadcast operands, split over threads when large.
 */
#include <math.h>
#include <stddef.h>

#include "cpu.h"
#include "ewise_math.h"

/* ------------------------------------------------------------------------------------------
 * elementwise kernels
 *
 * A kernel handles one run of n output elements: out[i * so] = f(in[0][i * s[0]], ...).
 * Contiguous runs (stride 1) and broadcast or scalar operands (stride 0) get loops of their
 * own, which the compiler vectorizes; out may be an operand itself (in-place forms: same
 * data, same strides). The scalar functions are ewise_math.h's.
 * ---------------------------------------------------------------------------------------- */

typedef void (*gd_ew_kernel)(void *out, int64_t so, const void *const *in, const int64_t *s, int64_t n);

#define GD_DEFINE_UNARY(NAME, T, EXPR)                                                           \
    GD_SIMD static void NAME(void *out_, int64_t so, const void *const *in, const int64_t *s,    \
                             int64_t n)                                                          \
    {                                                                                            \
        T *out = out_;                                                                           \
        const T *a = in[0];                                                                      \
        const int64_t sa = s[0];                                                                 \
        if (so == 1 && sa == 1) {                                                                \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (so == 1 && sa == 0) {                                                         \
            T x = a[0];                                                                          \
            T v = (EXPR);                                                                        \
            for (int64_t i = 0; i < n; i++) out[i] = v;                                          \
        } else if (so == 1) {                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa];                                                                 \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa];                                                                 \
                out[i * so] = (EXPR);                                                            \
            }                                                                                    \
        }                                                                                        \
    }

/* out of type TO (bool for comparisons) = EXPR of x and y of type T */
#define GD_DEFINE_BINARY_TO(NAME, TO, T, EXPR)                                                   \
    GD_SIMD static void NAME(void *out_, int64_t so, const void *const *in, const int64_t *s,    \
                             int64_t n)                                                          \
    {                                                                                            \
        TO *out = out_;                                                                          \
        const T *a = in[0], *b = in[1];                                                          \
        const int64_t sa = s[0], sb = s[1];                                                      \
        if (so == 1 && sa == 1 && sb == 1) {                                                     \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i], y = b[i];                                                            \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (so == 1 && sa == 1 && sb == 0) {                                              \
            const T y = b[0];                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (so == 1 && sa == 0 && sb == 1) {                                              \
            const T x = a[0];                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T y = b[i];                                                                      \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (so == 1 && sb == 0) {                                                         \
            const T y = b[0];                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa];                                                                 \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (so == 1 && sa == 0) {                                                         \
            const T x = a[0];                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T y = b[i * sb];                                                                 \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else if (so == 1) {                                                                    \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa], y = b[i * sb];                                                  \
                out[i] = (EXPR);                                                                 \
            }                                                                                    \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++) {                                                    \
                T x = a[i * sa], y = b[i * sb];                                                  \
                out[i * so] = (EXPR);                                                            \
            }                                                                                    \
        }                                                                                        \
    }

#define GD_DEFINE_BINARY(NAME, T, EXPR) GD_DEFINE_BINARY_TO(NAME, T, T, EXPR)

/* where: out = c ? x : y. A selection copies bits, so one kernel per element size (T an
 * unsigned integer of that size) serves every dtype. Both values are loaded and combined
 * through a mask of the condition: no branch to mispredict on a random mask, and the loops
 * vectorize; the common layouts (everything contiguous, scalar branches) get loops of their
 * own. */
#define GD_SELECT(T, c, x, y) ((((T)0 - (T)((c) != 0)) & (x)) | (((T)((c) != 0) - (T)1) & (y)))
#define GD_DEFINE_WHERE(NAME, T)                                                                 \
    GD_SIMD static void NAME(void *out_, int64_t so, const void *const *in, const int64_t *s,    \
                             int64_t n)                                                          \
    {                                                                                            \
        T *out = out_;                                                                           \
        const uint8_t *c = in[0];                                                                \
        const T *x = in[1], *y = in[2];                                                          \
        const int64_t sc = s[0], sx = s[1], sy = s[2];                                           \
        if (so == 1 && sc == 1 && sx == 1 && sy == 1) {                                          \
            for (int64_t i = 0; i < n; i++) out[i] = GD_SELECT(T, c[i], x[i], y[i]);                \
        } else if (so == 1 && sc == 1 && sx == 1 && sy == 0) {                                   \
            const T vy = y[0];                                                                   \
            for (int64_t i = 0; i < n; i++) out[i] = GD_SELECT(T, c[i], x[i], vy);                  \
        } else if (so == 1 && sc == 1 && sx == 0 && sy == 1) {                                   \
            const T vx = x[0];                                                                   \
            for (int64_t i = 0; i < n; i++) out[i] = GD_SELECT(T, c[i], vx, y[i]);                  \
        } else if (so == 1 && sc == 1 && sx == 0 && sy == 0) {                                   \
            const T vx = x[0], vy = y[0];                                                        \
            for (int64_t i = 0; i < n; i++) out[i] = GD_SELECT(T, c[i], vx, vy);                    \
        } else {                                                                                 \
            for (int64_t i = 0; i < n; i++) out[i * so] = GD_SELECT(T, c[i * sc], x[i * sx], y[i * sy]); \
        }                                                                                        \
    }
GD_DEFINE_WHERE(where_1, uint8_t)
GD_DEFINE_WHERE(where_4, uint32_t)
GD_DEFINE_WHERE(where_8, uint64_t)
#undef GD_SELECT

/* The kernels and their tables, generated from the op lists (tables.h): for each row, a
 * kernel per dtype of its TYPES around its ewise_math.h function, and a row of the [op][dtype]
 * table, by designated index. The core computes integers in float64 for FLOAT rows and bools
 * in int64 for NUMERIC ones; the other entries stay NULL. */
GD_STATIC_ASSERT(GD_NUM_DTYPES == 5, "the kernel rows below list float32, float64, int64, bool and int32");
#define GD_UN_K(S, T, name) GD_DEFINE_UNARY(un_##name##_##S, T, gd_ew_##name##_##S(x))
#define GD_BIN_K(S, T, name) GD_DEFINE_BINARY(bin_##name##_##S, T, gd_ew_##name##_##S(x, y))
#define GD_CMP_K(S, T, name) GD_DEFINE_BINARY_TO(bin_##name##_##S, uint8_t, T, gd_ew_##name##_##S(x, y))

/* KERNELS_<TYPES>(K, name): the kernels of one row */
#define GD_KERNELS_FLOAT(K, name) K(f32, float, name) K(f64, double, name)
#define GD_KERNELS_INT(K, name) K(i64, int64_t, name) K(i32, int32_t, name)
#define GD_KERNELS_NUMERIC(K, name) GD_KERNELS_FLOAT(K, name) GD_KERNELS_INT(K, name)
#define GD_KERNELS_ALL(K, name) GD_KERNELS_NUMERIC(K, name) K(b, uint8_t, name)
#define GD_KERNELS_BITWISE(K, name) GD_KERNELS_INT(K, name) K(b, uint8_t, name)
#define GD_KERNELS_COMPARE(K, name) GD_KERNELS_ALL(GD_CMP_K, name)
/* ROW_<TYPES>(P, name): its row of the table, in gpudev.h's dtype order */
#define GD_ROW_ALL(P, name) {P##name##_f32, P##name##_f64, P##name##_i64, P##name##_b, P##name##_i32}
#define GD_ROW_COMPARE GD_ROW_ALL
#define GD_ROW_NUMERIC(P, name) {P##name##_f32, P##name##_f64, P##name##_i64, NULL, P##name##_i32}
#define GD_ROW_FLOAT(P, name) {P##name##_f32, P##name##_f64, NULL, NULL, NULL}
#define GD_ROW_BITWISE(P, name) {NULL, NULL, P##name##_i64, P##name##_b, P##name##_i32}
#define GD_ROW_INT(P, name) {NULL, NULL, P##name##_i64, NULL, P##name##_i32}

#define GD_UNARY_KERNELS(E, name, TYPES, ...) GD_KERNELS_##TYPES(GD_UN_K, name)
#define GD_BINARY_KERNELS(E, name, TYPES, ...) GD_KERNELS_##TYPES(GD_BIN_K, name)
GD_UNARY_OPS(GD_UNARY_KERNELS)
GD_BINARY_OPS(GD_BINARY_KERNELS)

#define GD_UNARY_ROW(E, name, TYPES, ...) [GD_##E] = GD_ROW_##TYPES(un_, name),
#define GD_BINARY_ROW(E, name, TYPES, ...) [GD_##E] = GD_ROW_##TYPES(bin_, name),
static const gd_ew_kernel gd_un_kernels[GD_NUM_UNOPS][GD_NUM_DTYPES] = {GD_UNARY_OPS(GD_UNARY_ROW)};
static const gd_ew_kernel gd_bin_kernels[GD_NUM_BINOPS][GD_NUM_DTYPES] = {GD_BINARY_OPS(GD_BINARY_ROW)};

/* ------------------------------------------------------------------------------------------
 * elementwise driver: one contiguous run, an N-d walk, or tiles
 *
 * Axes come from the core merged and ordered by the output's strides. When an operand steps
 * through memory more slowly along the last axis than along the one before (a transposed view
 * read into a row-major output, a.T + a), a plain walk would touch a new cache line for every
 * element of it; square tiles over the last two axes keep those lines in cache until all their
 * elements are used.
 * ---------------------------------------------------------------------------------------- */

#define GD_EW_MAX_IN 3
#define GD_EW_TILE 64 /* tile edge: 64 lines of 64 elements stay in L1 for every dtype */

typedef struct gd_ewise_job {
    const gd_ewise *ew;
    gd_ew_kernel k;
    char *out;
    int64_t out_esz;                 /* bytes per output element */
    int64_t esz[GD_EW_MAX_IN];       /* bytes per element of each input */
    int nin;
    const char *in[GD_EW_MAX_IN];
    const int64_t *strides[GD_EW_MAX_IN]; /* per axis, elements; zeros for a scalar */
    int64_t run_so, run_s[GD_EW_MAX_IN]; /* one run: the strides of its only axis */
    int64_t tiles[2];                /* tile mode: tiles along the last two axes */
} gd_ewise_job;

static const int64_t gd_zero_strides[GD_MAX_NDIM];

static void gd_ewise_contig_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_ewise_job *job = ctx;
    const void *in[GD_EW_MAX_IN];
    for (int j = 0; j < job->nin; j++) in[j] = job->in[j] + begin * job->run_s[j] * job->esz[j];
    job->k(job->out + begin * job->run_so * job->out_esz, job->run_so, in, job->run_s, end - begin);
}

/* Offsets (elements) of index `flat` over axes [0, naxes) of the job's shape, output first. */
static void gd_ewise_offsets(const gd_ewise_job *job, int64_t flat, int naxes, int64_t *out_off, int64_t *off)
{
    const gd_ewise *ew = job->ew;
    *out_off = 0;
    for (int j = 0; j < job->nin; j++) off[j] = 0;
    for (int k = naxes - 1; k >= 0; k--) {
        int64_t i = flat % ew->shape[k];
        flat /= ew->shape[k];
        *out_off += i * ew->out_strides[k];
        for (int j = 0; j < job->nin; j++) off[j] += i * job->strides[j][k];
    }
}

/* One run of n elements along the last axis from the given offsets. */
static inline void gd_ewise_run(const gd_ewise_job *job, int64_t out_off, const int64_t *off, int64_t n)
{
    const int last = job->ew->ndim - 1;
    const void *in[GD_EW_MAX_IN];
    int64_t s[GD_EW_MAX_IN];
    for (int j = 0; j < job->nin; j++) {
        in[j] = job->in[j] + off[j] * job->esz[j];
        s[j] = job->strides[j][last];
    }
    job->k(job->out + out_off * job->out_esz, job->ew->out_strides[last], in, s, n);
}

/* Output elements [begin, end) in C order: runs along the last axis go to the kernel; an
 * index counter steps the outer axes and keeps every offset. */
static void gd_ewise_strided_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_ewise_job *job = ctx;
    const gd_ewise *ew = job->ew; /* ndim >= 2: fewer axes take the contiguous path */
    const int last = ew->ndim - 1;
    const int64_t inner = ew->shape[last];
    int64_t idx[GD_MAX_NDIM], off[GD_EW_MAX_IN], out_off;
    int64_t row = begin / inner, col = begin % inner;
    gd_ewise_offsets(job, row, last, &out_off, off);
    for (int k = last - 1; k >= 0; k--) {
        idx[k] = row % ew->shape[k];
        row /= ew->shape[k];
    }
    for (int64_t pos = begin; pos < end;) {
        int64_t n = GD_MIN(inner - col, end - pos), o[GD_EW_MAX_IN];
        for (int j = 0; j < job->nin; j++) o[j] = off[j] + col * job->strides[j][last];
        gd_ewise_run(job, out_off + col * ew->out_strides[last], o, n);
        pos += n;
        col = 0;
        for (int k = last - 1; k >= 0; k--) { /* odometer step over the outer axes */
            out_off += ew->out_strides[k];
            for (int j = 0; j < job->nin; j++) off[j] += job->strides[j][k];
            if (++idx[k] < ew->shape[k]) break;
            out_off -= ew->out_strides[k] * ew->shape[k];
            for (int j = 0; j < job->nin; j++) off[j] -= job->strides[j][k] * ew->shape[k];
            idx[k] = 0;
        }
    }
}

/* Tiles [begin, end): tile t covers rows p0.. and columns l0.. of the last two axes of outer
 * index t / (tiles[0] * tiles[1]). */
static void gd_ewise_tiles_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_ewise_job *job = ctx;
    const gd_ewise *ew = job->ew;
    const int p = ew->ndim - 2, l = ew->ndim - 1;
    for (int64_t t = begin; t < end; t++) {
        const int64_t l0 = (t % job->tiles[1]) * GD_EW_TILE, rest = t / job->tiles[1];
        const int64_t p0 = (rest % job->tiles[0]) * GD_EW_TILE, outer = rest / job->tiles[0];
        const int64_t p1 = GD_MIN(ew->shape[p], p0 + GD_EW_TILE), n = GD_MIN(ew->shape[l] - l0, (int64_t)GD_EW_TILE);
        int64_t base[GD_EW_MAX_IN], out_base, off[GD_EW_MAX_IN];
        gd_ewise_offsets(job, outer, p, &out_base, base);
        for (int64_t r = p0; r < p1; r++) {
            for (int j = 0; j < job->nin; j++) off[j] = base[j] + r * job->strides[j][p] + l0 * job->strides[j][l];
            gd_ewise_run(job, out_base + r * ew->out_strides[p] + l0 * ew->out_strides[l], off, n);
        }
    }
}

/* Whether some array steps through memory more slowly along the last axis than along the one
 * before it, and both axes are long enough for tiles to pay. */
static int gd_ewise_wants_tiles(const gd_ewise_job *job)
{
    const gd_ewise *ew = job->ew;
    const int p = ew->ndim - 2, l = ew->ndim - 1;
    if (ew->shape[p] < GD_EW_TILE / 4 || ew->shape[l] < GD_EW_TILE / 4) return 0;
    if (ew->out_strides[p] != 0 && GD_ABS64(ew->out_strides[p]) < GD_ABS64(ew->out_strides[l])) return 1;
    for (int j = 0; j < job->nin; j++) {
        const int64_t *s = job->strides[j];
        if (s[p] != 0 && GD_ABS64(s[p]) < GD_ABS64(s[l])) return 1;
    }
    return 0;
}

/* Runs the job; ops[j]->data NULL means a scalar (already in job->in[j], read with stride 0). */
static void gd_ewise_execute(gd_ewise_job *job, const gd_operand *const *ops, int64_t par_min)
{
    const gd_ewise *ew = job->ew;
    const int nt = gd_threads_for(ew->size, par_min);
    for (int j = 0; j < job->nin; j++) job->strides[j] = ops[j]->data ? ops[j]->strides : gd_zero_strides;
    if (ew->contiguous || ew->ndim <= 1) { /* one run; a scalar is read with stride 0 */
        const int flat = ew->contiguous || ew->ndim == 0;
        job->run_so = flat ? 1 : ew->out_strides[0];
        for (int j = 0; j < job->nin; j++) job->run_s[j] = !ops[j]->data ? 0 : flat ? 1 : ops[j]->strides[0];
        if (nt <= 1) gd_ewise_contig_range(job, 0, ew->size);
        else gd_parallel_for(nt, ew->size, 16, gd_ewise_contig_range, job);
        return;
    }
    if (gd_ewise_wants_tiles(job)) {
        const int p = ew->ndim - 2, l = ew->ndim - 1;
        job->tiles[0] = (ew->shape[p] + GD_EW_TILE - 1) / GD_EW_TILE;
        job->tiles[1] = (ew->shape[l] + GD_EW_TILE - 1) / GD_EW_TILE;
        const int64_t ntiles = ew->size / (ew->shape[p] * ew->shape[l]) * job->tiles[0] * job->tiles[1];
        gd_parallel_for(GD_MIN((int64_t)nt, ntiles), ntiles, 1, gd_ewise_tiles_range, job);
        return;
    }
    gd_parallel_for(nt, ew->size, 16, gd_ewise_strided_range, job);
}

/* A scalar operand becomes a one-element buffer read with stride 0. */
static const char *gd_operand_data(const gd_operand *op, gd_dtype dtype, gd_word *buf)
{
    if (op->data) return op->data;
    if (dtype == GD_FLOAT32)
        buf->f = (float)op->scalar.f;
    else if (dtype == GD_FLOAT64)
        buf->d = op->scalar.f;
    else if (dtype == GD_BOOL)
        buf->b = op->scalar.i != 0;
    else if (dtype == GD_INT32)
        buf->i32 = (int32_t)op->scalar.i;
    else
        buf->i = op->scalar.i;
    return (const char *)buf;
}

/* GD_OK when dtype is known and `defined` (by tables.h for the operation), else fills *err. */
static int gd_ewise_check(gd_error *err, const char *name, int (*defined)(int op, gd_dtype t), int op, gd_dtype dtype)
{
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_cpu_bad_dtype(err, name, dtype);
    if (!defined(op, dtype))
        return gd_set_error(err, GD_ERR_VALUE, "%s: not defined for %s arrays; convert with astype() first", name,
                            gd_dtype_name(dtype));
    return GD_OK;
}

static int gd_unop_ok(int op, gd_dtype t) { return gd_unop_defined((gd_unop)op, t); }
static int gd_binop_ok(int op, gd_dtype t) { return gd_binop_defined((gd_binop)op, t); }

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
    int rc = gd_ewise_check(err, info->name, gd_unop_ok, op, dtype);
    if (rc != GD_OK) return rc;
    gd_ew_kernel k = gd_un_kernels[op][dtype];
    if (!k) return gd_no_kernel(err, info->name, dtype);
    gd_word sbuf;
    const int64_t esz = (int64_t)gd_dtype_size(dtype);
    gd_ewise_job job = {.ew = ew, .k = k, .out = out, .out_esz = esz, .esz = {esz}, .nin = 1};
    job.in[0] = gd_operand_data(a, dtype, &sbuf);
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
    int rc = gd_ewise_check(err, info->name, gd_binop_ok, op, dtype);
    if (rc != GD_OK) return rc;
    gd_ew_kernel k = gd_bin_kernels[op][dtype];
    if (!k) return gd_no_kernel(err, info->name, dtype);
    /* a ** 2 is a * a exactly (one rounding), and far cheaper than pow */
    if (op == GD_POW && gd_dtype_is_float(dtype) && !b->data && b->scalar.f == 2.0)
        return gd_cpu_unary(out, GD_SQUARE, dtype, ew, a, device, err);
    gd_word abuf, bbuf;
    const int64_t esz = (int64_t)gd_dtype_size(dtype);
    const int64_t out_esz = (info->flags & GD_OP_BOOL_OUT) ? 1 : esz;
    gd_ewise_job job = {.ew = ew, .k = k, .out = out, .out_esz = out_esz, .esz = {esz, esz}, .nin = 2};
    job.in[0] = gd_operand_data(a, dtype, &abuf);
    job.in[1] = gd_operand_data(b, dtype, &bbuf);
    const gd_operand *ops[2] = {a, b};
    gd_ewise_execute(&job, ops, (info->flags & GD_OP_COSTLY) ? GD_PAR_LIBM : GD_PAR_ELEMENTWISE);
    return GD_OK;
}

int gd_cpu_where(void *out, gd_dtype dtype, const gd_ewise *ew, const gd_operand *cond, const gd_operand *x,
                 const gd_operand *y, int device, gd_error *err)
{
    (void)device;
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_cpu_bad_dtype(err, "where", dtype);
    const int64_t esz = (int64_t)gd_dtype_size(dtype);
    gd_ew_kernel k = esz == 1 ? where_1 : esz == 4 ? where_4 : where_8;
    gd_word cbuf, xbuf, ybuf;
    gd_ewise_job job = {.ew = ew, .k = k, .out = out, .out_esz = esz, .esz = {1, esz, esz}, .nin = 3};
    job.in[0] = gd_operand_data(cond, GD_BOOL, &cbuf);
    job.in[1] = gd_operand_data(x, dtype, &xbuf);
    job.in[2] = gd_operand_data(y, dtype, &ybuf);
    const gd_operand *ops[3] = {cond, x, y};
    gd_ewise_execute(&job, ops, GD_PAR_ELEMENTWISE);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * axpby: y = beta * y + alpha * x in one pass, in place (an optimizer's step). The plain
 * expression, built without contraction (-std=c11), rounds each product and then the sum:
 * the bits of y *= beta; y += alpha * x. x may be y itself, so neither pointer is restrict.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_axpby_job {
    void *y;
    const void *x;
    gd_dtype dtype;
    double beta, alpha;
} gd_axpby_job;

GD_SIMD static void axpby_f32(float *y, const float *x, float beta, float alpha, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) y[i] = beta * y[i] + alpha * x[i];
}

GD_SIMD static void axpby_f64(double *y, const double *x, double beta, double alpha, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) y[i] = beta * y[i] + alpha * x[i];
}

static void gd_axpby_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_axpby_job *job = ctx;
    if (job->dtype == GD_FLOAT32)
        axpby_f32(job->y, job->x, (float)job->beta, (float)job->alpha, begin, end);
    else
        axpby_f64(job->y, job->x, job->beta, job->alpha, begin, end);
}

int gd_cpu_axpby(void *y, gd_dtype dtype, gd_scalar beta, const void *x, gd_scalar alpha, int64_t n, int device,
                 gd_error *err)
{
    (void)device;
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_cpu_bad_dtype(err, "axpby", dtype);
    if (!gd_dtype_is_float(dtype))
        return gd_set_error(err, GD_ERR_VALUE, "axpby: defined for float32 and float64, not %s", gd_dtype_name(dtype));
    if (n <= 0) return GD_OK;
    gd_axpby_job job = {y, x, dtype, beta.f, alpha.f};
    gd_parallel_for(gd_threads_for(n, GD_PAR_UPDATE), n, 16, gd_axpby_range, &job);
    return GD_OK;
}
