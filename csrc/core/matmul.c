/* matmul.c - NumPy's matmul (a @ b, gd.matmul): the shape checks, broadcast batch axes, and
 * one backend gemm call for the whole batch. a (..., m, k) @ b (..., k, n) -> (..., m, n); a
 * 1-D a is (1, k) and a 1-D b is (k, 1), their axis removed from the result.
 */
#include "core.h"

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

/* Operands gpudev can multiply: Arrays of at least one axis, on one device, float dtypes. */
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
    if (!gd_dtype_is_float(a->dtype) || !gd_dtype_is_float(b->dtype)) {
        PyErr_Format(PyExc_TypeError, "matmul: %s operands are not supported; convert with a.astype(gd.float32)",
                     gd_dtype_name(gd_dtype_is_float(a->dtype) ? b->dtype : a->dtype));
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

/* x in the compute dtype, and with the result's full batch when its batch broadcasts only
 * partly ((2, 1, m, k) @ (3, k, n): rare, so materialised, simple and right). *use is what
 * the backend reads; *tmp owns it when it is a copy. */
static int prepare_operand(gd_state *st, const gd_backend *be, const matmul_plan *p, ArrayObject *x, int64_t rows,
                           int64_t cols, int64_t *batch_x, ArrayObject **use, ArrayObject **tmp)
{
    *use = x;
    if (x->dtype != p->dt && !(*use = *tmp = gd_converted(st, be, x, p->dt, "matmul"))) return -1;
    if (*batch_x == p->batch || *batch_x == 1) return 0;
    int64_t full[GD_MAX_NDIM + 2];
    memcpy(full, p->shape, (size_t)p->nbatch * sizeof(int64_t));
    full[p->nbatch] = rows;
    full[p->nbatch + 1] = cols;
    ArrayObject *t = gd_expanded(st, be, *use, p->nbatch + 2, full, "matmul");
    if (!t) return -1;
    Py_XSETREF(*tmp, t);
    *use = t;
    *batch_x = p->batch;
    return 0;
}

/* Batches: equal, or one side a single matrix (stride 0), go to one gemm call; a stack of
 * matrices times one matrix is one tall product. */
static int run_gemm(gd_state *st, const gd_backend *be, const matmul_plan *p, ArrayObject *out, const ArrayObject *ua,
                    const ArrayObject *ub, int64_t batch_a, int64_t batch_b)
{
    int64_t stride_a = batch_a == 1 ? 0 : p->m * p->k, stride_b = batch_b == 1 ? 0 : p->k * p->n;
    int64_t gm = p->m, gbatch = p->batch;
    if (p->batch > 1 && stride_b == 0 && stride_a != 0 && p->batch * p->m <= INT_MAX) {
        gm = p->batch * p->m;
        gbatch = 1;
    }
    gd_device dev = out->device;
    gd_error err;
    PyThreadState *ts = gd_run_begin(dev, (double)gbatch * (double)gm * (double)p->n * (double)p->k);
    int rc = be->gemm(out->data, p->dt, ua->data, ub->data, gbatch, gm, p->n, p->k, stride_a, stride_b, p->m * p->n,
                      dev.index, &err);
    return gd_run_end(st, dev, ts, rc, &err, "matmul");
}

static PyObject *matmul_arrays(gd_state *st, ArrayObject *a, ArrayObject *b)
{
    matmul_plan p;
    if (check_operands(st, a, b) < 0 || plan_shapes(&p, a, b) < 0) return NULL;
    p.dt = a->dtype == b->dtype ? a->dtype : GD_FLOAT64;
    const gd_backend *be = gd_backend_of(st, a->device, "matmul");
    if (!be) return NULL;
    ArrayObject *out = gd_array_new(st, a->device, p.dt, p.out_ndim, p.shape, "matmul");
    ArrayObject *ua, *ub, *ta = NULL, *tb = NULL;
    if (!out) return NULL;
    if (p.out_size > 0 &&
        (prepare_operand(st, be, &p, a, p.m, p.k, &p.batch_a, &ua, &ta) < 0 ||
         prepare_operand(st, be, &p, b, p.k, p.n, &p.batch_b, &ub, &tb) < 0 ||
         run_gemm(st, be, &p, out, ua, ub, p.batch_a, p.batch_b) < 0))
        Py_CLEAR(out);
    Py_XDECREF(ta);
    Py_XDECREF(tb);
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
    return gd_matmul(st, args[0], args[1]);
}

static PyMethodDef matmul_functions[] = {
    {"matmul", GD_FN(mod_matmul), METH_FASTCALL, "matmul(a, b): matrix product, NumPy semantics (also a @ b)"},
    {NULL, NULL, 0, NULL},
};

int gd_matmul_setup(PyObject *module) { return PyModule_AddFunctions(module, matmul_functions); }
