"""Linear algebra (csrc/core/matmul.c; gpudev/linalg.py, the gd.linalg namespace): matmul at
the top level with the standard's vecdot and tensordot, which declare themselves where they
are defined; defined here: PyTorch's ``mm`` and ``bmm``, matmul with PyTorch's checks of the
operands' dimensions.

>>> import gpudev as gd
>>> gd.mm(gd.ones((2, 3)), gd.ones((3, 1))).shape, gd.bmm(gd.ones((4, 2, 3)), gd.ones((4, 3, 1))).shape
((2, 1), (4, 2, 1))
"""

from __future__ import annotations

from typing import Any

from .. import _C, linalg
from .._C import Array
from . import declare, declare_modules, public
from .shape import _need_array

__all__ = ["bmm", "mm"]

declare("linalg", _C, "matmul")
declare_modules("linalg", linalg)


def _operands(op: str, a: Any, b: Any, form: str, fix: str) -> None:
    """mm's and bmm's check: both operands are Arrays of the one number of dimensions `form` names."""
    for what, x in (("first", a), ("second", b)):
        if _need_array(op, x).ndim != int(form[0]):
            raise ValueError(f"{op}: the {what} operand must be {form}, got shape {x.shape}; {fix}")


@public("linalg", pytorch=True)
def bmm(a: Array, b: Array) -> Array:
    """Batched product of (B, n, k) and (B, k, m) arrays: (B, n, m), as PyTorch's bmm."""
    _operands("bmm", a, b, "3-D (batch, rows, cols)", "use gd.matmul for other shapes")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"bmm: batch sizes differ, {a.shape[0]} and {b.shape[0]} (shapes "
                         f"{a.shape} and {b.shape})")
    return _C.matmul(a, b)


@public("linalg", pytorch=True)
def mm(input: Array, mat2: Array) -> Array:  # noqa: A002  (PyTorch's parameter names)
    """The product of a (n, k) and a (k, m) array: (n, m), as PyTorch's ``mm`` (2-D only; for
    other shapes ``gd.matmul`` or ``@``). Also the method ``a.mm(b)``.

    Example:
        >>> gd.mm(gd.ones((2, 3)), gd.ones((3, 4))).shape
        (2, 4)
    """
    _operands("mm", input, mat2, "2-D (a matrix)",
              "use gd.matmul (or @) for vectors and batches, gd.bmm for (B, n, k) batches")
    if input.shape[1] != mat2.shape[0]:
        raise ValueError(f"mm: shapes {input.shape} and {mat2.shape} cannot be multiplied "
                         f"({input.shape[1]} columns against {mat2.shape[0]} rows)")
    return _C.matmul(input, mat2)
