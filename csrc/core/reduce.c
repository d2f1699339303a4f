/* reduce.c - sum, mean, max, min (methods and axis arguments) and gd.norm: every reduction is
 * turned into backend reduce calls over (outer, len, inner) blocks of the contiguous input,
 * one per run of adjacent reduced axes. The full reduction of an array (a.sum()) is the hot
 * path: one backend call, no temporaries.
 */
#include "reduce.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "autograd.h"
#include "compute.h"
#include "dtypes.h"
#include "elementwise.h"
#include "operand.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * the reductions
 * ---------------------------------------------------------------------------------------- */

/* One per row of the reduction list (tables.h), with the value of its gd_redop, then those
 * that finish in float64 after a sum. */
#define R_ENUM(E, ...) R_##E = GD_RED_##E,
typedef enum reduction { GD_REDUCTIONS(R_ENUM) R_MEAN = GD_NUM_REDOPS, R_NORM, R_COUNT } reduction;
#undef R_ENUM

typedef enum finish_kind { FINISH_NONE, FINISH_MEAN, FINISH_SQRT } finish_kind;

typedef struct reduction_info {
    reduction kind;
    const char *name;   /* in messages and traces */
    const char *noun;   /* "maximum": what an empty axis has none of */
    gd_redop first;     /* the backend reduction of the first pass; later passes merge */
    finish_kind finish; /* in float64 after the passes: divide by the count, or a square root */
} reduction_info;

#define R_ROW(E, name, MERGE, IDENTITY, ACC, ENTRY, NUMPY, NOUN, DOC) {R_##E, #name, NOUN, GD_RED_##E, FINISH_NONE},
static const reduction_info reductions[] = {
    GD_REDUCTIONS(R_ROW)
    {R_MEAN, "mean", "mean", GD_RED_SUM, FINISH_MEAN},
    {R_NORM, "norm", "norm", GD_RED_SUMSQ, FINISH_SQRT},
};
#undef R_ROW
GD_STATIC_ASSERT(GD_COUNT_OF(reductions) == R_COUNT, "reductions: one row per reduction");

/* One reduction of one array, as it is being planned and run. */
typedef struct reduce_job {
    gd_state *st;
    const gd_backend *be;
    const reduction_info *r;
    ArrayObject *a;
    gd_device dev;
    gd_dtype res_dt;        /* the result's dtype: mean and norm of integers are float64, a
                             * widening reduction (sum) of int32 int64 (NumPy's default integer) */
    ArrayObject *out;
} reduce_job;

/* One backend reduce call. */
static int run_reduce(reduce_job *j, void *dst, gd_dtype dst_dt, gd_redop op, const void *src, gd_dtype src_dt,
                      int64_t outer, int64_t len, int64_t inner)
{
    gd_error err;
    PyThreadState *ts = gd_run_begin(j->dev, (double)outer * (double)len * (double)inner);
    int rc = j->be->reduce(dst, dst_dt, op, src, src_dt, outer, len, inner, j->dev.index, &err);
    return gd_run_end(j->st, j->dev, ts, rc, &err, j->r->name);
}

/* ------------------------------------------------------------------------------------------
 * the whole array at once (the hot path) and the degenerate cases
 * ---------------------------------------------------------------------------------------- */

/* Every element into a 0-d result (or all-ones shape with keepdims). Mean and norm of CPU
 * arrays finish on the host: CPU memory is host memory, so a local double accumulates. */
static int reduce_all(reduce_job *j, int keepdims)
{
    ArrayObject *a = j->a;
    int64_t shape[GD_MAX_NDIM];
    for (int k = 0; k < a->ndim; k++) shape[k] = 1;
    if (!(j->out = gd_array_new(j->st, j->dev, j->res_dt, keepdims ? a->ndim : 0, shape, j->r->name))) return -1;
    if (j->r->finish == FINISH_NONE)
        return run_reduce(j, j->out->data, j->res_dt, j->r->first, a->data, a->dtype, 1, a->size, 1);
    double acc;
    if (run_reduce(j, &acc, GD_FLOAT64, j->r->first, a->data, a->dtype, 1, a->size, 1) < 0) return -1;
    double v = j->r->finish == FINISH_MEAN ? acc / (double)a->size : sqrt(acc);
    if (j->res_dt == GD_FLOAT32) *(float *)j->out->data = (float)gd_round_f32(v);
    else *(double *)j->out->data = v;
    return 0;
}

/* Reductions over an axis of length 0: the identity (NaN for a mean), or an error for those
 * without one (max and min). */
static int reduce_empty(reduce_job *j, int64_t out_size)
{
    const gd_redop_info *op = &gd_redop_table[j->r->first];
    if (op->needs_elements) {
        PyErr_Format(PyExc_ValueError, "%s: zero-size array has no %s (reduction over an axis of length 0)",
                     j->r->name, j->r->noun);
        return -1;
    }
    gd_scalar v;
    if (gd_dtype_is_float(j->res_dt)) v.f = j->r->finish == FINISH_MEAN ? NAN : op->identity;
    else v.i = (int64_t)op->identity;
    return gd_run_fill(j->st, j->be, j->dev, j->out->data, j->res_dt, v, out_size, j->r->name);
}

/* Only axes of length 1 reduced: the input itself, in the result dtype (norm: its size). */
static int reduce_nothing(reduce_job *j, int64_t out_size)
{
    ArrayObject *a = j->a, *out = j->out;
    if (gd_run_astype(j->st, j->be, j->dev, out->data, j->res_dt, a->data, a->dtype, out_size, j->r->name) < 0)
        return -1;
    if (j->r->finish != FINISH_SQRT) return 0;
    return gd_run_unary(j->st, j->be, j->dev, out->data, GD_ABS, j->res_dt, out->data, out_size, j->r->name);
}

/* ------------------------------------------------------------------------------------------
 * reductions over axes
 * ---------------------------------------------------------------------------------------- */

/* Runs of adjacent kept / reduced axes of a; axes of length 1 change nothing and drop out. */
typedef struct axis_runs {
    int n, passes;           /* runs, and runs of reduced axes (one backend pass each) */
    int64_t len[GD_MAX_NDIM];
    uint8_t reduced[GD_MAX_NDIM];
} axis_runs;

static void find_runs(axis_runs *runs, const ArrayObject *a, const uint8_t *reduced)
{
    runs->n = runs->passes = 0;
    for (int k = 0; k < a->ndim; k++) {
        if (a->shape[k] == 1) continue;
        if (runs->n > 0 && runs->reduced[runs->n - 1] == reduced[k]) {
            runs->len[runs->n - 1] *= a->shape[k];
        } else {
            runs->len[runs->n] = a->shape[k];
            runs->reduced[runs->n++] = reduced[k];
            runs->passes += reduced[k];
        }
    }
}

/* The longest reduced run (it shrinks the data most) as one (outer, len, inner) pass, which
 * leaves the runs without it. */
static void next_pass(axis_runs *runs, int64_t *outer, int64_t *len, int64_t *inner)
{
    int j = -1;
    for (int r = 0; r < runs->n; r++)
        if (runs->reduced[r] && (j < 0 || runs->len[r] >= runs->len[j])) j = r;
    *outer = *inner = 1;
    *len = runs->len[j];
    for (int r = 0; r < j; r++) *outer *= runs->len[r];
    for (int r = j + 1; r < runs->n; r++) *inner *= runs->len[r];
    runs->n--;
    memmove(runs->len + j, runs->len + j + 1, (size_t)(runs->n - j) * sizeof(int64_t));
    memmove(runs->reduced + j, runs->reduced + j + 1, (size_t)(runs->n - j));
}

/* The passes, into float64 temporaries where later passes or the finish need them (float32
 * sums lose nothing between passes); the last pass writes the result when it can. Returns the
 * buffer holding the reduced values, of acc_dt; *keep owns it when it is a temporary. */
static char *run_passes(reduce_job *j, axis_runs *runs, gd_dtype acc_dt, ArrayObject **keep)
{
    const gd_redop later = gd_redop_table[j->r->first].merge;
    char *cur = j->a->data;
    gd_dtype cur_dt = j->a->dtype;
    int npasses = runs->passes;
    for (int p = 0; p < npasses; p++) {
        int64_t outer, len, inner, n;
        next_pass(runs, &outer, &len, &inner);
        n = outer * inner;
        ArrayObject *tmp = NULL;
        if (!(p == npasses - 1 && acc_dt == j->res_dt) && !(tmp = gd_array_new(j->st, j->dev, acc_dt, 1, &n, j->r->name)))
            return NULL;
        char *dst = tmp ? tmp->data : j->out->data;
        if (run_reduce(j, dst, acc_dt, p == 0 ? j->r->first : later, cur, cur_dt, outer, len, inner) < 0) {
            Py_XDECREF(tmp);
            return NULL;
        }
        Py_XSETREF(*keep, tmp);
        cur = dst;
        cur_dt = acc_dt;
    }
    return cur;
}

/* Mean and norm finish in float64: divide by the count, or take the square root. */
static int finish(reduce_job *j, char *cur, int64_t out_size, int64_t count)
{
    if (j->r->finish == FINISH_SQRT)
        return gd_run_unary(j->st, j->be, j->dev, cur, GD_SQRT, GD_FLOAT64, cur, out_size, j->r->name);
    if (j->r->finish != FINISH_MEAN) return 0;
    gd_ewise ew;
    gd_operand num, den;
    gd_error err;
    gd_contiguous_plan(&ew, out_size);
    num.data = cur;
    num.strides[0] = 1;
    den.data = NULL;
    den.scalar.f = (double)count;
    den.strides[0] = 0;
    PyThreadState *ts = gd_run_begin(j->dev, (double)out_size);
    int rc = j->be->binary(cur, GD_DIV, GD_FLOAT64, &ew, &num, &den, j->dev.index, &err);
    return gd_run_end(j->st, j->dev, ts, rc, &err, j->r->name);
}

/* The reduction over the axes marked in `reduced`. */
static int reduce_axes(reduce_job *j, const uint8_t *reduced, int keepdims)
{
    ArrayObject *a = j->a;
    int64_t shape[GD_MAX_NDIM], out_size;
    int ndim = 0;
    for (int k = 0; k < a->ndim; k++)
        if (!reduced[k] || keepdims) shape[ndim++] = reduced[k] ? 1 : a->shape[k];
    if (gd_shape_size(&out_size, ndim, shape, j->r->name) < 0 ||
        !(j->out = gd_array_new(j->st, j->dev, j->res_dt, ndim, shape, j->r->name)))
        return -1;
    /* a reduced axis of length 0 leaves every result empty, even when there are no results:
     * NumPy's max raises for zeros((0, 0)).max(axis=0) */
    for (int k = 0; k < a->ndim; k++)
        if (reduced[k] && a->shape[k] == 0) return reduce_empty(j, out_size);
    if (out_size == 0) return 0;
    int64_t count = a->size / out_size; /* elements reduced into each result */
    axis_runs runs;
    find_runs(&runs, a, reduced);
    if (runs.passes == 0) return reduce_nothing(j, out_size);
    gd_dtype acc_dt = j->r->finish != FINISH_NONE ? GD_FLOAT64
                    : !gd_redop_table[j->r->first].widens ? a->dtype
                    : a->dtype == GD_FLOAT32 && runs.passes > 1 ? GD_FLOAT64 : j->res_dt;
    ArrayObject *keep = NULL;
    char *cur = run_passes(j, &runs, acc_dt, &keep);
    int rc = !cur || finish(j, cur, out_size, count) < 0 ? -1 : 0;
    if (rc == 0 && cur != j->out->data)
        rc = gd_run_astype(j->st, j->be, j->dev, j->out->data, j->res_dt, cur, acc_dt, out_size, j->r->name);
    Py_XDECREF(keep);
    return rc;
}

/* What the passes read: a itself when C-contiguous; for a whole-array reduction of a view
 * that is dense in memory (a.T, a[::-1]), the same elements as one C-contiguous block from
 * their lowest address (an order that no whole-array reduction depends on); else a
 * C-contiguous copy. New reference. */
static ArrayObject *reduction_source(reduce_job *j, ArrayObject *a, PyObject *axis)
{
    if (a->contiguous) return (ArrayObject *)Py_NewRef((PyObject *)a);
    if (axis == Py_None && gd_is_dense(a)) {
        uintptr_t lo, hi;
        gd_extent(a, &lo, &hi);
        return gd_array_view(j->st, a, (char *)lo, a->ndim, a->shape, NULL);
    }
    return gd_contiguous(j->st, j->be, a, j->r->name);
}

/* Contiguous arrays make every reduction a sequence of (outer, len, inner) passes, one per
 * run of adjacent reduced axes; views are read as reduction_source says. */
static PyObject *reduce_array(gd_state *st, reduction kind, ArrayObject *a, PyObject *axis, int keepdims);

/* Bools reduce as int64 (NumPy's sum of a mask counts it); the reductions that pick an element
 * (max and min) give bools. */
static PyObject *reduce_bool(gd_state *st, reduction kind, ArrayObject *a, PyObject *axis, int keepdims)
{
    const char *name = reductions[kind].name;
    const gd_backend *be = gd_backend_of(st, a->device, name);
    ArrayObject *wide = be ? gd_converted(st, be, a, GD_INT64, name) : NULL;
    if (!wide) return NULL;
    PyObject *res = reduce_array(st, kind, wide, axis, keepdims);
    Py_DECREF(wide);
    if (res && !gd_redop_table[reductions[kind].first].widens) Py_SETREF(res, gd_astype(st, (ArrayObject *)res, GD_BOOL, 0));
    return res;
}

static PyObject *reduce_array(gd_state *st, reduction kind, ArrayObject *a, PyObject *axis, int keepdims)
{
    if (a->dtype == GD_BOOL) return reduce_bool(st, kind, a, axis, keepdims);
    const reduction_info *r = &reductions[kind];
    reduce_job j = {.st = st, .r = r, .dev = a->device, .res_dt = a->dtype};
    if (r->finish != FINISH_NONE && !gd_dtype_is_float(a->dtype)) j.res_dt = GD_FLOAT64;
    else if (gd_redop_table[r->first].widens && a->dtype == GD_INT32) j.res_dt = GD_INT64;
    if (!(j.be = gd_backend_of(st, a->device, r->name)) || !(j.a = reduction_source(&j, a, axis))) return NULL;
    int rc;
    if (axis == Py_None && a->size > 0 && (a->device.type == GD_CPU || r->finish == FINISH_NONE)) {
        rc = reduce_all(&j, keepdims);
    } else {
        uint8_t reduced[GD_MAX_NDIM];
        rc = gd_parse_axes(reduced, axis, a->ndim, r->name) < 0 ? -1 : reduce_axes(&j, reduced, keepdims);
    }
    Py_DECREF(j.a);
    if (rc == 0 && gd_trace_op(st, r->name, j.out, a, NULL) < 0) rc = -1;
    if (rc < 0) Py_CLEAR(j.out);
    return GD_AG_OUT(st, r->name, j.out, a, NULL, Py_BuildValue("(OO)", axis, keepdims ? Py_True : Py_False));
}

/* ------------------------------------------------------------------------------------------
 * methods and module functions
 * ---------------------------------------------------------------------------------------- */

/* (axis=None, keepdims=False) after the parameters of p that come before them. */
static PyObject *reduce_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                             const gd_params *p, reduction kind)
{
    PyObject *argv[2] = {Py_None, NULL};
    int keepdims = 0;
    if ((nargs || kwnames) &&
        (gd_parse_args(argv, p, args, nargs, kwnames) < 0 || gd_parse_bool(argv[1], &keepdims) < 0))
        return NULL;
    return reduce_array(gd_state_of(self), kind, (ArrayObject *)self, argv[0], keepdims);
}

/* (axis=None, keepdims=False, *, dtype=None): with dtype, as NumPy's and PyTorch's, the input
 * is cast to it first, so the reduction runs in it, and the result is of it (an int32 sum
 * asked for int32 wraps, as NumPy's does). Dask calls chunks' methods so. */
static PyObject *reduce_call_dtype(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                   const gd_params *p, reduction kind)
{
    PyObject *argv[3] = {Py_None, NULL, Py_None};
    int keepdims = 0;
    gd_dtype dt = GD_FLOAT32;
    if ((nargs || kwnames) &&
        (gd_parse_args(argv, p, args, nargs, kwnames) < 0 || gd_parse_bool(argv[1], &keepdims) < 0 ||
         (argv[2] != Py_None && gd_parse_dtype(argv[2], &dt, p->fname) < 0)))
        return NULL;
    gd_state *st = gd_state_of(self);
    if (argv[2] == Py_None) return reduce_array(st, kind, (ArrayObject *)self, argv[0], keepdims);
    PyObject *cast = gd_astype(st, (ArrayObject *)self, dt, 0);
    PyObject *res = cast ? reduce_array(st, kind, (ArrayObject *)cast, argv[0], keepdims) : NULL;
    Py_XDECREF(cast);
    if (!res || ((ArrayObject *)res)->dtype == dt) return res;
    Py_SETREF(res, gd_astype(st, (ArrayObject *)res, dt, 0));
    return res;
}

#define GD_REDUCTION_METHOD(fname, kind, doc)                                                          \
    GD_SIGNATURE_SHARED(gd_array_##fname##_sig, #fname, "$self, axis=None, keepdims=False", doc);     \
    PyObject *gd_array_##fname(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                                  \
        return reduce_call(self, args, nargs, kwnames, &gd_array_##fname##_sig, kind);                 \
    }
#define GD_REDUCTION_METHOD_DTYPE(fname, kind, doc)                                                    \
    GD_SIGNATURE_SHARED(gd_array_##fname##_sig, #fname, "$self, axis=None, keepdims=False, *, dtype=None", doc); \
    PyObject *gd_array_##fname(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                                  \
        return reduce_call_dtype(self, args, nargs, kwnames, &gd_array_##fname##_sig, kind);           \
    }
/* The methods of the reduction list's rows, by their ENTRY column, then mean. */
#define GD_REDUCTION_ENTRY(E, name, MERGE, IDENTITY, ACC, ENTRY, NUMPY, NOUN, DOC) \
    GD_REDUCTION_##ENTRY(name, R_##E, DOC)
#define GD_REDUCTION_NONE(fname, kind, doc)
GD_REDUCTIONS(GD_REDUCTION_ENTRY)
GD_REDUCTION_METHOD_DTYPE(mean, R_MEAN, "The mean over axis (an int, a tuple, or None for all), in dtype if given.")
#undef GD_REDUCTION_ENTRY
#undef GD_REDUCTION_NONE
#undef GD_REDUCTION_METHOD_DTYPE
#undef GD_REDUCTION_METHOD

/* any: whether some element is nonzero; all: whether none is zero (True over an empty axis).
 * Counted as a sum of a mask, so an empty axis needs no special case. */
static PyObject *any_all(gd_state *st, ArrayObject *a, PyObject *axis, int keepdims, int all)
{
    const gd_binop test = all ? GD_EQ : GD_NE;
    PyObject *zero = PyLong_FromLong(0), *mask = NULL, *count = NULL, *res = NULL;
    if (zero && (mask = gd_binary(st, test, (PyObject *)a, zero, NULL)) &&
        (count = reduce_array(st, R_SUM, (ArrayObject *)mask, axis, keepdims)))
        res = gd_binary(st, test, count, zero, NULL);
    Py_XDECREF(zero);
    Py_XDECREF(mask);
    Py_XDECREF(count);
    return res;
}

static PyObject *any_all_call(gd_state *st, ArrayObject *a, PyObject *axis, PyObject *keepdims_obj, int all)
{
    int keepdims = 0;
    if (keepdims_obj && gd_parse_bool(keepdims_obj, &keepdims) < 0) return NULL;
    return any_all(st, a, axis, keepdims, all);
}

#define GD_ANY_ALL_METHOD(fname, all, doc, example)                                                    \
    GD_SIGNATURE_SHARED(gd_array_##fname##_sig, #fname, "$self, axis=None, keepdims=False", doc);     \
    PyObject *gd_array_##fname(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                                  \
        PyObject *argv[2] = {Py_None, NULL};                                                           \
        if (gd_parse_args(argv, &gd_array_##fname##_sig, args, nargs, kwnames) < 0) return NULL;       \
        return any_all_call(gd_state_of(self), (ArrayObject *)self, argv[0], argv[1], all);            \
    }                                                                                                  \
    GD_SIGNATURE(fname##_sig, #fname, "$module, a, axis=None, keepdims=False", doc example);          \
    static PyObject *mod_##fname(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) \
    {                                                                                                  \
        gd_state *st = PyModule_GetState(module);                                                      \
        PyObject *argv[3] = {NULL, Py_None, NULL};                                                     \
        if (gd_parse_args(argv, &fname##_sig, args, nargs, kwnames) < 0) return NULL;                  \
        ArrayObject *a = gd_need_array(st, argv[0], #fname);                                           \
        return a ? any_all_call(st, a, argv[1], argv[2], all) : NULL;                                  \
    }
GD_ANY_ALL_METHOD(any, 0, "Whether some element is nonzero (a bool array).",
                  "\n\n>>> gd.any(gd.arange(3) > 1).item()\nTrue")
GD_ANY_ALL_METHOD(all, 1, "Whether every element is nonzero (True for none; a bool array).",
                  "\n\n>>> gd.all(gd.arange(3) < 5).item()\nTrue")
#undef GD_ANY_ALL_METHOD

GD_SIGNATURE(norm_sig, "norm", "$module, a, axis=None, keepdims=False",
             "The Frobenius / 2-norm; axis=(1, 2) gives a batch of matrix norms.");
static PyObject *mod_norm(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gd_state *st = PyModule_GetState(module);
    PyObject *argv[3] = {NULL, Py_None, NULL};
    int keepdims = 0;
    if (gd_parse_args(argv, &norm_sig, args, nargs, kwnames) < 0) return NULL;
    ArrayObject *a = gd_need_array(st, argv[0], "norm");
    if (!a || gd_parse_bool(argv[2], &keepdims) < 0) return NULL;
    return reduce_array(st, R_NORM, a, argv[1], keepdims);
}

/* The methods of the reduction list's rows that array_type.c's table does not list by hand.
 * That table still lists sum, max and min (the latter two under private names where Python
 * wraps them), so a row whose method, public or private, the type already has is left as it
 * is; every newer row's method is added here, from its row alone. */
#define GD_REDUCTION_DEF(E, name, MERGE, IDENTITY, ACC, ENTRY, NUMPY, NOUN, DOC) GD_REDUCTION_DEF_##ENTRY(name)
#define GD_REDUCTION_DEF_NONE(name)
#define GD_REDUCTION_DEF_METHOD(name) GD_DEF(gd_array_##name##_sig, GD_FN(gd_array_##name), GD_FASTKW),
#define GD_REDUCTION_DEF_METHOD_DTYPE GD_REDUCTION_DEF_METHOD
static PyMethodDef reduce_methods[] = {GD_REDUCTIONS(GD_REDUCTION_DEF){NULL, NULL, 0, NULL}};
#undef GD_REDUCTION_DEF
#undef GD_REDUCTION_DEF_NONE
#undef GD_REDUCTION_DEF_METHOD
#undef GD_REDUCTION_DEF_METHOD_DTYPE

static int add_reduction_methods(gd_state *st)
{
    static PyMethodDef added[GD_COUNT_OF(reduce_methods)]; /* the type's descriptors point here */
    size_t n = 0;
    for (const PyMethodDef *m = reduce_methods; m->ml_name; m++) {
        char private_name[64];
        snprintf(private_name, sizeof private_name, "_%s", m->ml_name);
        if (!PyObject_HasAttrString((PyObject *)st->array_type, m->ml_name) &&
            !PyObject_HasAttrString((PyObject *)st->array_type, private_name))
            added[n++] = *m;
    }
    added[n] = (PyMethodDef){NULL, NULL, 0, NULL};
    return gd_array_add_methods(st, added);
}

/* _C._reductions: the reduction list as Python sees it, for the tests (one tuple per row). */
static PyStructSequence_Field reduction_fields[] = {
    {"name", "the name in messages and autograd's RULES; Array.<name> when method"},
    {"id", "the enum value without GD_RED_, e.g. 'SUM'"},
    {"identity", "the result over an empty axis, or None (an empty reduction is an error)"},
    {"widens", "whether it accumulates: int32 and bool give int64, float32 adds in float64"},
    {"method", "whether Array.<name> exists"},
    {"dtype", "whether the method takes dtype="},
    {"numpy", "NumPy's function of the same meaning, or None"},
    {NULL, NULL},
};
static PyStructSequence_Desc reduction_desc = {"gpudev.ReductionInfo", "One row of GD_REDUCTIONS in csrc/tables.h.",
                                               reduction_fields, 7};

static PyObject *reduction_entry(PyTypeObject *tp, const gd_redop_info *r)
{
    PyObject *e = PyStructSequence_New(tp);
    if (!e) return NULL;
    PyObject *values[] = {
        PyUnicode_FromString(r->name), PyUnicode_FromString(r->id),
        r->needs_elements ? Py_NewRef(Py_None) : PyFloat_FromDouble(r->identity), PyBool_FromLong(r->widens),
        PyBool_FromLong(strcmp(r->entry, "NONE") != 0), PyBool_FromLong(strcmp(r->entry, "METHOD_DTYPE") == 0),
        r->numpy ? PyUnicode_FromString(r->numpy) : Py_NewRef(Py_None),
    };
    int ok = 1;
    for (int i = 0; i < 7; i++) {
        if (!values[i]) ok = 0;
        PyStructSequence_SetItem(e, i, values[i]);
    }
    if (ok) return e;
    Py_DECREF(e);
    return NULL;
}

static int add_reduction_list(PyObject *module)
{
    PyTypeObject *tp = PyStructSequence_NewType(&reduction_desc);
    PyObject *list = tp ? PyTuple_New(GD_NUM_REDOPS) : NULL;
    for (int op = 0; list && op < GD_NUM_REDOPS; op++) {
        PyObject *e = reduction_entry(tp, &gd_redop_table[op]);
        if (e) PyTuple_SET_ITEM(list, op, e);
        else Py_CLEAR(list);
    }
    int rc = list ? PyModule_AddObjectRef(module, "_reductions", list) : -1;
    Py_XDECREF(list);
    Py_XDECREF(tp);
    return rc;
}

static PyMethodDef reduce_functions[] = {
    GD_DEF(norm_sig, GD_FN(mod_norm), GD_FASTKW),
    GD_DEF(any_sig, GD_FN(mod_any), GD_FASTKW),
    GD_DEF(all_sig, GD_FN(mod_all), GD_FASTKW),
    {NULL, NULL, 0, NULL},
};

int gd_reduce_setup(PyObject *module)
{
    gd_state *st = PyModule_GetState(module);
    if (add_reduction_methods(st) < 0 || add_reduction_list(module) < 0) return -1;
    return PyModule_AddFunctions(module, reduce_functions);
}
