"""Reductions and sorting (csrc/core/reduce.c; gpudev/_statistics.py): sums, means, extremes,
scans, sorts, searches and unique values. gd.max and gd.min (PyTorch's and NumPy's forms,
gpudev/_torch.py) and gd.repeat (family shape, gpudev/_statistics.py) declare themselves where
they are defined. Defined here: the softmaxes.

**Softmax**: ``softmax`` and ``log_softmax`` along one axis, numerically stable, on every device.

Both subtract the maximum along the axis before ``exp``, so no row overflows (a row of
``[1000.0, 1000.0]`` gives ``[0.5, 0.5]``, not NaN) and the largest term is exactly
``exp(0) = 1``. A row holding NaN or ``inf`` gives NaN, as PyTorch's and SciPy's do. Integer
and bool arrays are computed in float64, as ``gd.exp`` computes them.

Each records one autograd node, not the five operations it is made of: the rule recomputes
the softmax from the saved input, which keeps the graph small and the tape short.

>>> import gpudev as gd
>>> gd.softmax(gd.array([[0.0, 0.0], [1000.0, 1000.0]]), axis=1).tolist()
[[0.5, 0.5], [0.5, 0.5]]
>>> round(gd.log_softmax(gd.array([0.0, 0.0])).tolist()[0], 6)
-0.693147
"""

from __future__ import annotations

import operator
import reprlib

from .. import _C, _statistics, _torch, autograd  # noqa: F401 (_torch: its @public declarations)
from .._C import Array
from .._stable import softmax_forward
from . import Declaration, _add, declare, declared, public

__all__ = ["log_softmax", "softmax"]

declare("reduce", _C, "all any argmax argmin norm", numpy="all any argmax argmin")
declare("reduce", _statistics, "argsort count_nonzero cumulative_prod cumulative_sum diff mean "
        "searchsorted sort std unique_all unique_counts unique_inverse unique_values var", numpy="mean std var")
# gd.<name> for each row of the reduction list (csrc/tables.h) with a method, computing NumPy's
# function of its NUMPY column; a row whose module function is written by hand declares it
# there (gd.max and gd.min, PyTorch's and NumPy's forms in gpudev/_torch.py, imported above)
_ROWS = {row.name: row for row in _C._reductions}
for _name, _function in _statistics.LIST_FUNCTIONS.items():
    if _name not in declared():
        _add(Declaration(_name, _function, "reduce", _ROWS[_name].numpy))


def _check(name: str, x: object, axis: object) -> tuple[Array, int]:
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gpudev Array, got {type(x).__name__}; convert it "
                        f"with gd.asarray(x)")
    try:
        if isinstance(axis, bool):  # True is not axis 1, as in NumPy
            raise TypeError
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an int, got {reprlib.repr(axis)} ({type(axis).__name__})") from None
    ndim = max(x.ndim, 1)  # a 0-d array has the one axis 0 (or -1), as in PyTorch
    if not -ndim <= ax < ndim:
        raise ValueError(f"{name}: axis {ax} is out of bounds for an array of {x.ndim} "
                         f"dimension(s); use an axis in [{-ndim}, {ndim - 1}]")
    if x.dtype.kind != "f":
        x = x.astype(_C.float64)
    return x, ax % ndim if x.ndim else 0


def _apply(name: str, x: object, axis: object, log: bool) -> Array:
    x, ax = _check(name, x, axis)
    recording = x.requires_grad and autograd.is_grad_enabled()
    with autograd.no_grad():
        out = softmax_forward(x, ax, log)
    if recording:
        _C._set_grad_fn(out, autograd._make_node(name, (out.shape, out.dtype, out.device), (x,), ax))
    return out


@public("reduce")
def softmax(x: Array, axis: int = -1) -> Array:
    """exp(x) / exp(x).sum(axis), with the maximum along `axis` subtracted first (stable).

        >>> gd.softmax(gd.array([0.0, 0.0, 0.0])).tolist()  # doctest: +ELLIPSIS
        [0.333..., 0.333..., 0.333...]
    """
    return _apply("softmax", x, axis, log=False)


@public("reduce")
def log_softmax(x: Array, axis: int = -1) -> Array:
    """x - log(exp(x).sum(axis)), with the maximum along `axis` subtracted first (stable).

    Better than ``gd.log(gd.softmax(x))``, which gives -inf where the softmax underflows.

        >>> gd.log_softmax(gd.array([0.0, -1000.0])).tolist()
        [0.0, -1000.0]
    """
    return _apply("log_softmax", x, axis, log=True)
