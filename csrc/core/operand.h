/* operand.h - what operand.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_OPERAND_H
#define GPUDEV_CORE_OPERAND_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * operand.c: operands of elementwise operations (Arrays, Python and NumPy scalars) and
 * NumPy 2's promotion rules
 * ---------------------------------------------------------------------------------------- */

/* Python bools are weak bools: a bool array stays bool with them, others keep their dtype. */
typedef enum gd_operand_kind { OPD_ARRAY, OPD_WEAK_INT, OPD_WEAK_FLOAT, OPD_SCALAR, OPD_WEAK_BOOL } gd_operand_kind;

typedef struct gd_opinfo {
    gd_operand_kind kind;
    gd_dtype dtype;   /* the Array's or the NumPy scalar's; unused for Python scalars     */
    int small_int;    /* a NumPy integer scalar (u)int8/16, held as int64: float32 and int32
                       * hold it exactly, so it promotes with them to them (NumPy's rule) */
    int big;          /* a Python int outside int64                                       */
    ArrayObject *arr; /* OPD_ARRAY, else NULL                                             */
    PyObject *obj;
    int64_t i;        /* integer scalars                                                   */
    double f;         /* float scalars                                                     */
} gd_opinfo;

/* Describe operand o: 0 done, 1 when gpudev does not know the type (the caller returns
 * NotImplemented), -1 with an exception (unsupported NumPy scalars, NumPy arrays, lists). */
int gd_classify(gd_state *st, PyObject *o, gd_opinfo *x, const char *op);
/* NumPy 2 promotion of x op y before the operation's own rules: arrays and NumPy scalars
 * decide, Python scalars adapt (a Python float lifts int64 to float64). */
gd_dtype gd_promote(const gd_opinfo *x, const gd_opinfo *y);
/* NumPy 2 promotion of two dtypes (arrays, NumPy scalars): bool adapts, int32 with int64 is
 * int64, an integer with a float or float32 with float64 is float64. */
gd_dtype gd_promote_dtypes(gd_dtype a, gd_dtype b);
/* Whether integer scalar x (a Python int, or a NumPy one) lies in integer dtype dt's range;
 * 1 for any other scalar or dtype. */
int gd_int_fits(const gd_opinfo *x, gd_dtype dt);
/* A scalar operand's value in the compute dtype. -1 on error. */
int gd_scalar_to(gd_scalar *out, const gd_opinfo *x, gd_dtype dt);
/* A scalar cast to dt the way NumPy's setitem casts (floats truncate into integers). */
int gd_scalar_assign(gd_scalar *out, const gd_opinfo *x, gd_dtype dt, const char *op);
/* A scalar operand's value as a double. */
double gd_scalar_f64(const gd_opinfo *x);
/* A double rounded to float32 as the hardware would, without the undefined behaviour of
 * casting an out-of-range double. */
double gd_round_f32(double v);

#endif /* GPUDEV_CORE_OPERAND_H */
