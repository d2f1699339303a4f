/* dtypes.c - gpudev's dtypes as NumPy sees them, derived from the dtype table (tables.h): the
 * numpy.dtype objects Array.dtype returns, gd.float32 and friends, dtype arguments, and which
 * gpudev dtype holds data of a NumPy dtype.
 */
#define GD_IMPORT_NUMPY /* this file holds NumPy's C-API table (core.h) */
#include "dtypes.h"
#include "core.h"
#include "args.h"

/* ------------------------------------------------------------------------------------------
 * dtype arguments
 * ---------------------------------------------------------------------------------------- */

int gd_parse_dtype(PyObject *obj, gd_dtype *out, const char *op)
{
    if (obj == Py_None) return 0;
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter2(obj, &descr) || !descr) {
        if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_Exception)) return -1; /* KeyboardInterrupt */
        PyErr_Clear();
        PyObject *shown = gd_brief_repr(obj);
        if (shown)
            PyErr_Format(PyExc_TypeError,
                         "%s: %U is not a dtype; use gd.float32, gd.float64, gd.int64, gd.int32 or gd.bool", op,
                         shown);
        Py_XDECREF(shown);
        return -1;
    }
    int dt = gd_dtype_lookup(descr->kind, (size_t)PyDataType_ELSIZE(descr));
    if (dt < 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s: dtype %S is not supported; use gd.float32, gd.float64, gd.int64, gd.int32 or gd.bool",
                     op, (PyObject *)descr);
        Py_DECREF(descr);
        return -1;
    }
    Py_DECREF(descr);
    *out = (gd_dtype)dt;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * NumPy data
 * ---------------------------------------------------------------------------------------- */

int gd_dtype_from_numpy(PyArray_Descr *descr)
{
    const char kind = descr->kind;
    const size_t size = (size_t)PyDataType_ELSIZE(descr);
    int dt = gd_dtype_lookup(kind, size);
    if (dt >= 0) return dt;
    if (kind == 'f' && size == 2) return GD_FLOAT32; /* float16 widens exactly */
    /* every other integer int64 holds exactly (not uint64) */
    if ((kind == 'i' && size < 8) || (kind == 'u' && size < 8)) return GD_INT64;
    return -1;
}

int gd_numpy_is(gd_state *st, PyArray_Descr *descr, gd_dtype dt)
{
    return descr->type_num == ((PyArray_Descr *)st->np_dtypes[dt])->type_num;
}

/* ------------------------------------------------------------------------------------------
 * setup
 * ---------------------------------------------------------------------------------------- */

int gd_import_numpy(void)
{
    return PyArray_ImportNumPyAPI();
}

int gd_dtypes_setup(PyObject *module, gd_state *st)
{
    for (int i = 0; i < GD_NUM_DTYPES; i++) {
        PyObject *name = PyUnicode_FromString(gd_dtype_table[i].name);
        PyArray_Descr *d = NULL;
        int ok = name && PyArray_DescrConverter(name, &d);
        Py_XDECREF(name);
        if (!ok) return -1;
        st->np_dtypes[i] = (PyObject *)d;
        /* gd.float32 is numpy.float32, so `a.dtype == gd.float32` reads as in NumPy */
        if (PyModule_AddObjectRef(module, gd_dtype_table[i].name, (PyObject *)d->typeobj) < 0) return -1;
    }
    st->np_ndarray = Py_NewRef((PyObject *)&PyArray_Type);
    return 0;
}
