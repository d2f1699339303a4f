/* matmul.c - NumPy's matmul (a @ b, gd.matmul): the shape checks, broadcast batch axes, and
 * one backend gemm call for the whole batch. a (..., m, k) @ b (..., k, n) -> (..., m, n); a
 * 1-D a is (1, k) and a 1-D b is (k, 1), their axis removed from the result. Views are read
 * in place where BLAS can read them: a transposed matrix (a.T) becomes a transpose flag, a
 * sliced one a leading dimension; other layouts are compacted first.
 */
#include "matmul.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "autograd.h"
#include "compute.h"
#include "device.h"
#include "elementwise.h"
#include "operand.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"

#include <limits.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * checks and the result's shape
 * ---------------------------------------------------------------------------------------- */

/* The product as planned: matrix sizes, batches and the result's shape. */
typedef struct matmul_plan {
    gd_dtype dt;
    int64_t m, n, k;
    int na, nb, nbatch;                /* batch axes of a, of b, of the result */
    int64_t batch, batch_a, batch_b;   /* matrices in the result's, a's and b's batch */
    int out_ndim;
    int64_t shape[GD_MAX_NDIM + 1], out_size;
} matmul_plan;

static void raise_0d_matmul(void)
{
    PyErr_SetString(PyExc_ValueError, "matmul: 0-d operands are not allowed; use * for scalars");
}

/* Operands gpudev can multiply: Arrays of at least one axis, on one device. */
static int check_operands(gd_state *st, const ArrayObject *a, const ArrayObject *b)
{
    if (a->ndim == 0 || b->ndim == 0) {
        raise_0d_matmul();
        return -1;
    }
    if (!gd_device_eq(a->device, b->device)) {
        gd_raise_device_mismatch(st, "matmul", a->device, b->device);
        return -1;
    }
    return 0;
}

/* m, n, k, the broadcast batch axes and the result's shape; ValueError naming both shapes. */
static int plan_shapes(matmul_plan *p, const ArrayObject *a, const ArrayObject *b)
{
    char s0[256], s1[256], s2[256], s3[256];
    p->m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    p->k = a->shape[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    p->n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    if (p->k != kb) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: shapes %s and %s do not align: %lld (last dim of a) != %lld (%s dim of b)",
                     gd_shape_str(a->ndim, a->shape, s0), gd_shape_str(b->ndim, b->shape, s1), (long long)p->k,
                     (long long)kb, b->ndim > 2 ? "second-to-last" : "first");
        return -1;
    }
    p->na = a->ndim > 2 ? a->ndim - 2 : 0;
    p->nb = b->ndim > 2 ? b->ndim - 2 : 0;
    if (gd_broadcast(&p->nbatch, p->shape, p->na, a->shape, p->nb, b->shape) < 0) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: shapes %s and %s do not broadcast: batch dimensions %s and %s cannot "
                     "be broadcast together",
                     gd_shape_str(a->ndim, a->shape, s0), gd_shape_str(b->ndim, b->shape, s1),
                     gd_shape_str(p->na, a->shape, s2), gd_shape_str(p->nb, b->shape, s3));
        return -1;
    }
    const char *big = p->m > INT_MAX ? "m" : p->n > INT_MAX ? "n" : p->k > INT_MAX ? "k" : NULL;
    if (big) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: shapes %s and %s have a matrix dimension %s = %lld above the BLAS limit "
                     "2147483647; split the product into blocks",
                     gd_shape_str(a->ndim, a->shape, s0), gd_shape_str(b->ndim, b->shape, s1), big,
                     (long long)(big[0] == 'm' ? p->m : big[0] == 'n' ? p->n : p->k));
        return -1;
    }
    p->out_ndim = p->nbatch;
    if (a->ndim >= 2) p->shape[p->out_ndim++] = p->m;
    if (b->ndim >= 2) p->shape[p->out_ndim++] = p->n;
    const char *name = "matmul";
    if (gd_shape_size(&p->batch, p->nbatch, p->shape, name) < 0 ||
        gd_shape_size(&p->out_size, p->out_ndim, p->shape, name) < 0 ||
        gd_shape_size(&p->batch_a, p->na, a->shape, name) < 0 || gd_shape_size(&p->batch_b, p->nb, b->shape, name) < 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * operands and the product
 * ---------------------------------------------------------------------------------------- */

/* How gemm reads x's matrices (rows x cols: its last two axes; a 1-D a is one row, a 1-D b
 * one column) in place: row-major with a leading dimension, or transposed, and one stride
 * between the matrices of its batch. 0 when its layout allows neither (then it is compacted). */
static int matrix_layout(gd_matrix *mx, const ArrayObject *x, int64_t rows, int64_t cols, int is_b)
{
    const int nd = x->ndim;
    int64_t sr, sc; /* steps between rows and between columns */
    if (nd == 1) {
        sr = is_b ? x->strides[0] : 0;
        sc = is_b ? 0 : x->strides[0];
    } else {
        sr = x->strides[nd - 2];
        sc = x->strides[nd - 1];
    }
    mx->data = x->data;
    if ((cols == 1 || sc == 1) && (rows == 1 || sr >= (cols > 1 ? cols : 1))) {
        mx->trans = 0;
        mx->ld = rows == 1 ? (cols > 1 ? cols : 1) : sr;
    } else if ((rows == 1 || sr == 1) && (cols == 1 || sc >= (rows > 1 ? rows : 1))) {
        mx->trans = 1;
        mx->ld = cols == 1 ? (rows > 1 ? rows : 1) : sc;
    } else {
        return 0;
    }
    if (mx->ld > INT_MAX) return 0; /* BLAS takes an int */
    /* the batch axes must step as one: the stride of the innermost one longer than 1 */
    mx->stride = 0;
    int64_t next = 0;
    for (int k = nd - 3; k >= 0; k--) {
        if (x->shape[k] == 1) continue;
        if (mx->stride == 0) mx->stride = x->strides[k];
        else if (x->strides[k] != next) return 0;
        if (x->strides[k] < 0) return 0;
        next = x->strides[k] * x->shape[k];
    }
    return 1;
}

/* x as gemm reads it: in the compute dtype, with the result's full batch when its batch
 * broadcasts only partly ((2, 1, m, k) @ (3, k, n): rare, so materialised, simple and right),
 * and in a layout matrix_layout accepts. *tmp owns any copy made. */
static int prepare_operand(gd_state *st, const gd_backend *be, const matmul_plan *p, ArrayObject *x, int64_t rows,
                           int64_t cols, int is_b, int64_t *batch_x, gd_matrix *mx, ArrayObject **tmp)
{
    ArrayObject *use = x;
    if (x->dtype != p->dt && !(use = *tmp = gd_converted(st, be, x, p->dt, "matmul"))) return -1;
    if (*batch_x != p->batch && *batch_x != 1) {
        int64_t full[GD_MAX_NDIM + 2];
        memcpy(full, p->shape, (size_t)p->nbatch * sizeof(int64_t));
        full[p->nbatch] = rows;
        full[p->nbatch + 1] = cols;
        ArrayObject *t = gd_expanded(st, be, use, p->nbatch + 2, full, "matmul");
        if (!t) return -1;
        Py_XSETREF(*tmp, t);
        use = t;
        *batch_x = p->batch;
    }
    if (matrix_layout(mx, use, rows, cols, is_b)) return 0;
    ArrayObject *c = gd_contiguous(st, be, use, "matmul");
    if (!c) return -1;
    Py_XSETREF(*tmp, c);
    return matrix_layout(mx, c, rows, cols, is_b) ? 0 : -1; /* a C-contiguous array always fits */
}

/* Batches: equal, or one side a single matrix (stride 0), go to one gemm call; a stack of
 * row-major matrices times one matrix is one tall product. */
static int run_gemm(gd_state *st, const gd_backend *be, const matmul_plan *p, ArrayObject *out, gd_matrix *ma,
                    gd_matrix *mb, int64_t batch_a, int64_t batch_b)
{
    if (batch_a == 1) ma->stride = 0;
    if (batch_b == 1) mb->stride = 0;
    int64_t gm = p->m, gbatch = p->batch;
    if (p->batch > 1 && mb->stride == 0 && batch_a > 1 && !ma->trans && ma->stride == p->m * ma->ld &&
        p->batch * p->m <= INT_MAX) {
        gm = p->batch * p->m;
        gbatch = 1;
    }
    gd_device dev = out->device;
    gd_error err;
    PyThreadState *ts = gd_run_begin(dev, (double)gbatch * (double)gm * (double)p->n * (double)p->k);
    int rc = be->gemm(out->data, p->dt, ma, mb, gbatch, gm, p->n, p->k, p->m * p->n, dev.index, &err);
    return gd_run_end(st, dev, ts, rc, &err, "matmul");
}

static PyObject *matmul_arrays(gd_state *st, ArrayObject *a, ArrayObject *b)
{
    matmul_plan p;
    if (check_operands(st, a, b) < 0 || plan_shapes(&p, a, b) < 0) return NULL;
    /* NumPy's promotion; a product of two bool matrices is whether any term is true (the
     * count's being nonzero, computed in int64) */
    const int bools = a->dtype == GD_BOOL && b->dtype == GD_BOOL;
    p.dt = bools ? GD_INT64 : gd_promote_dtypes(a->dtype, b->dtype);
    const gd_backend *be = gd_backend_of(st, a->device, "matmul");
    if (!be) return NULL;
    ArrayObject *out = gd_array_new(st, a->device, p.dt, p.out_ndim, p.shape, "matmul");
    ArrayObject *ta = NULL, *tb = NULL;
    gd_matrix ma, mb;
    if (!out) return NULL;
    if (p.out_size > 0 &&
        (prepare_operand(st, be, &p, a, p.m, p.k, 0, &p.batch_a, &ma, &ta) < 0 ||
         prepare_operand(st, be, &p, b, p.k, p.n, 1, &p.batch_b, &mb, &tb) < 0 ||
         run_gemm(st, be, &p, out, &ma, &mb, p.batch_a, p.batch_b) < 0))
        Py_CLEAR(out);
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    if (out && bools) Py_SETREF(out, (ArrayObject *)gd_astype(st, out, GD_BOOL, 0));
    if (out && gd_trace_op(st, "matmul", out, a, b) < 0) Py_CLEAR(out);
    return GD_AG_OUT(st, "matmul", out, a, b, NULL);
}

PyObject *gd_matmul(gd_state *st, PyObject *ao, PyObject *bo)
{
    if (gd_is_array(st, ao) && gd_is_array(st, bo)) return matmul_arrays(st, (ArrayObject *)ao, (ArrayObject *)bo);
    gd_opinfo x;
    int r = gd_classify(st, gd_is_array(st, ao) ? bo : ao, &x, "matmul");
    if (r < 0) return NULL;
    if (r > 0) Py_RETURN_NOTIMPLEMENTED;
    raise_0d_matmul(); /* a number is a 0-d operand */
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * the module function
 * ---------------------------------------------------------------------------------------- */

static PyObject *mod_matmul(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "matmul(a, b) takes two arrays");
        return NULL;
    }
    if (!gd_is_array(st, args[0]) && !gd_is_array(st, args[1])) {
        gd_need_array(st, args[0], "matmul");
        return NULL;
    }
    PyObject *res = gd_matmul(st, args[0], args[1]);
    if (res == Py_NotImplemented) {
        PyObject *other = gd_is_array(st, args[0]) ? args[1] : args[0];
        Py_DECREF(res);
        PyErr_Format(PyExc_TypeError, "matmul: unsupported operand type %.100s; give gpudev Arrays, e.g. "
                                      "gd.asarray(x, device=a.device)",
                     Py_TYPE(other)->tp_name);
        return NULL;
    }
    return res;
}

static PyMethodDef matmul_functions[] = {
    GD_METHOD("matmul", GD_FN(mod_matmul), METH_FASTCALL, "$module, a, b, /",
              "The matrix product, NumPy semantics (also a @ b)."),
    {NULL, NULL, 0, NULL},
};

int gd_matmul_setup(PyObject *module) { return PyModule_AddFunctions(module, matmul_functions); }
