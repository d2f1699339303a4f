"""``gd.linalg``: the array API standard's linear algebra extension.

Products and norms are made of the core's operations (matmul on OpenBLAS or cuBLAS, sums,
comparisons) and run on every device. The factorizations (cholesky, solve, inv, det, slogdet, eigh, svd, qr and what
is built on them: pinv, matrix_rank, the 2-norm and nuclear norm of matrices) call
LAPACK from the OpenBLAS gpudev already loads, on CPU arrays only: on a GPU array they raise
NotImplementedError naming the device (there is no cuSOLVER backend), rather than copy the
matrix to the host behind the user's back.

NaN and infinities go to LAPACK as NumPy hands them over (LAPACKE's own scan for NaN, which
would refuse the argument, is off), so a matrix holding NaN gives NumPy's results: NaN where
NumPy has NaN, and ``LinAlgError`` (NumPy's class, a ValueError) where NumPy raises it (an SVD
that does not converge, a matrix that is singular or not positive definite). LAPACK runs in
float64 for float32 input too, and the results are rounded to float32: the single-precision
routines of gpudev's OpenBLAS pick NaN pivots otherwise than NumPy's do (det, inv, cholesky of
a float32 matrix holding NaN came out 0, singular or finite where NumPy's are NaN), and the
results are at least as accurate as NumPy's float32 ones.

>>> import gpudev as gd
>>> a = gd.asarray([[4.0, 2.0], [2.0, 3.0]])
>>> gd.linalg.solve(a, gd.asarray([2.0, 1.0])).tolist()
[0.5, 0.0]
>>> gd.linalg.vector_norm(gd.asarray([3.0, 4.0])).item()
5.0
"""

from __future__ import annotations

import ctypes
import math
import reprlib
from typing import Any, NamedTuple, Sequence

import numpy as np

from . import _C
from ._api import public
from ._devices import device_label
from ._api.shape import _need_array, matrix_transpose, normalize_axes, normalize_axis
from ._api.reduce import sum as _sum

__all__ = [
    "LinAlgError", "cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
    "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
    "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]

Array = _C.Array
FLOAT64 = np.dtype(np.float64)
LinAlgError = np.linalg.LinAlgError  # NumPy's: `except np.linalg.LinAlgError` catches gpudev's too


def matmul(x1: Array, x2: Array, /) -> Array:
    """The matrix product (batched over leading axes, 1-D operands as vectors): ``x1 @ x2``."""
    return _C.matmul(x1, x2)


def _float(op: str, x: Any) -> Array:
    """x as a float array: integers and bools go to float64, as NumPy's linalg does."""
    _need_array(op, x)
    return x if x.dtype.kind == "f" else x.astype(FLOAT64)


def _float_dtype(x: Array) -> np.dtype:
    """The dtype _float gives x, without converting it."""
    return x.dtype if x.dtype.kind == "f" else FLOAT64


@public("linalg")
def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The dot products of the vectors along `axis` (the operands broadcast against each other)."""
    _need_array("vecdot", x1)
    _need_array("vecdot", x2)
    ndim = max(x1.ndim, x2.ndim)
    a = normalize_axis("vecdot", axis, ndim)
    k = a - ndim  # the axis counted from the end, where broadcasting aligns the operands
    n1, n2 = (x.shape[k] if x.ndim >= -k else None for x in (x1, x2))
    if n1 != n2:  # a missing axis or one of length 1 does not broadcast here
        raise ValueError(f"vecdot: the vectors along axis {reprlib.repr(axis)} differ in length: shapes "
                         f"{x1.shape} and {x2.shape}")
    products = x1 * x2
    return _sum(products, axis=a, dtype=products.dtype)  # int32 stays int32, as NumPy's


@public("linalg", numpy="tensordot")
def tensordot(x1: Array, x2: Array, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """Sums of products over `axes`: the last `axes` axes of x1 with the first of x2 (an int),
    or the axes named in two sequences. One matrix product of the two reshaped operands."""
    _need_array("tensordot", x1)
    _need_array("tensordot", x2)
    if isinstance(axes, int) and not isinstance(axes, bool):
        if not 0 <= axes <= min(x1.ndim, x2.ndim):
            raise ValueError(f"tensordot: axes={reprlib.repr(axes)} for shapes {x1.shape} and {x2.shape}")
        a1, a2 = tuple(range(x1.ndim - axes, x1.ndim)), tuple(range(axes))
    else:
        if not isinstance(axes, (tuple, list)) or len(axes) != 2:
            raise TypeError(f"tensordot: axes must be an int or two sequences of axes, got {reprlib.repr(axes)}")
        a1 = tuple(normalize_axis("tensordot", a, x1.ndim) for a in axes[0])
        a2 = tuple(normalize_axis("tensordot", a, x2.ndim) for a in axes[1])
    if len(a1) != len(a2) or any(x1.shape[i] != x2.shape[j] for i, j in zip(a1, a2)):
        raise ValueError(f"tensordot: axes {a1} of {x1.shape} and {a2} of {x2.shape} differ in length")
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [j for j in range(x2.ndim) if j not in a2]
    k = math.prod(x1.shape[i] for i in a1)
    left = x1.permute(*free1, *a1).reshape((math.prod(x1.shape[i] for i in free1), k))
    right = x2.permute(*a2, *free2).reshape((k, math.prod(x2.shape[j] for j in free2)))
    shape = tuple(x1.shape[i] for i in free1) + tuple(x2.shape[j] for j in free2)
    if left.dtype.kind == "f" and right.dtype.kind == "f" or k == 0:
        return _C.matmul(left, right).reshape(shape) if k else _C.zeros(
            shape, dtype=_result(x1, x2), device=x1.device)
    # integers: BLAS multiplies floats only, so sum broadcast products
    products = left.reshape(left.shape + (1,)) * right.reshape((1,) + right.shape)
    return _sum(products, axis=1, dtype=products.dtype).reshape(shape)


def _result(x1: Array, x2: Array) -> np.dtype:
    return np.result_type(x1.dtype, x2.dtype)


def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of two 1-D arrays: ``out[i, j] = x1[i] * x2[j]``."""
    for x in (x1, x2):
        if _need_array("outer", x).ndim != 1:
            raise ValueError(f"outer: expected 1-D arrays, got shape {x.shape}")
    return x1.reshape((-1, 1)) * x2.reshape((1, -1))


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The diagonal `offset` (above the main one for offset > 0) of each matrix in x: a
    strided slice of the flattened matrices (a view when x is contiguous)."""
    if _need_array("diagonal", x).ndim < 2:
        raise ValueError(f"diagonal: needs at least 2 dimensions, got shape {x.shape}")
    rows, cols = x.shape[-2:]
    n = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    start = offset if offset >= 0 else -offset * cols
    flat = x.reshape(x.shape[:-2] + (rows * cols,))
    return flat[..., start:start + n * (cols + 1):cols + 1][..., :n]


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sum of diagonal `offset` of each matrix in x."""
    return _sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The cross product of 3-vectors along `axis` (the operands broadcast)."""
    _need_array("cross", x1)
    _need_array("cross", x2)
    for x in (x1, x2):
        if x.ndim == 0 or x.shape[axis] != 3:
            raise ValueError(f"cross: needs vectors of length 3 along axis {reprlib.repr(axis)}, got shape {x.shape}")
    a1, a2 = _last(x1, axis), _last(x2, axis)
    parts = [a1[..., (i + 1) % 3] * a2[..., (i + 2) % 3] - a1[..., (i + 2) % 3] * a2[..., (i + 1) % 3]
             for i in range(3)]
    from ._api.shape import moveaxis

    return moveaxis(_C.stack(parts, axis=-1), -1, axis)


def _last(x: Array, axis: int) -> Array:
    from ._api.shape import moveaxis

    return moveaxis(x, axis, -1)


def matrix_power(x: Array, n: int, /) -> Array:
    """x multiplied by itself n times (by squaring); n = 0 gives identities, n < 0 powers of inv(x)."""
    _square("matrix_power", x)
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"matrix_power: n must be an int, got {type(n).__name__}")
    if n < 0:
        x, n = inv(x), -n
    if n == 0:
        from ._api.creation import eye
        from ._api.shape import broadcast_to

        return broadcast_to(eye(x.shape[-1], dtype=x.dtype, device=x.device), x.shape)
    # the first factor is taken as it is, not multiplied into I: 0 * NaN would spread a NaN
    # (and 0 * -0.0 lose a sign) where NumPy's power keeps the factor's values
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result.copy() if result is x else result


# ---------------------------------------------------------------------------------------------
# norms
# ---------------------------------------------------------------------------------------------

def vector_norm(x: Array, /, *, axis: Any = None, keepdims: bool = False, ord: float = 2) -> Array:  # noqa: A002
    """The p-norm (`ord`) of the vectors along `axis` (None: of the flattened array; a tuple:
    over those axes together): 2 (Euclidean), 1, inf (largest |x|), -inf, 0 (how many are
    nonzero) or any other p, ``sum(|x|**p)**(1/p)``.

    Empty vectors have NumPy's norms (PyTorch refuses some): 0 for every ord but -inf, whose
    smallest |x| of nothing raises ValueError."""
    x = _float("vector_norm", x)
    axes = normalize_axes("vector_norm", axis, x.ndim)
    if not axes:
        return _C.abs(x)
    ax = axes
    a = _C.abs(x)
    if ord == 2:
        return _C.sqrt(_sum(a * a, axis=ax, keepdims=keepdims))
    if ord == 1:
        return _sum(a, axis=ax, keepdims=keepdims)
    if ord == math.inf:
        return _largest(a, ax, keepdims)
    if ord == -math.inf:
        return _smallest("vector_norm", ord, a, ax, keepdims)
    if ord == 0:
        return _sum(a != 0, axis=ax, keepdims=keepdims).astype(x.dtype)
    return _sum(a ** ord, axis=ax, keepdims=keepdims) ** (1.0 / ord)


def _largest(a: Array, axes: tuple[int, ...], keepdims: bool) -> Array:
    """The largest of a (absolute values, sums of them, singular values: never below 0) over
    `axes`; 0 over none, as NumPy's norms give for empty vectors and matrices."""
    if math.prod(a.shape[i] for i in axes) == 0:
        return _sum(a, axis=axes, keepdims=keepdims)  # zeros of the reduced shape
    return a.max(axis=axes, keepdims=keepdims)


def _smallest(op: str, ord: Any, a: Array, axes: tuple[int, ...], keepdims: bool) -> Array:  # noqa: A002
    if math.prod(a.shape[i] for i in axes) == 0:
        raise ValueError(f"{op}: ord={ord!r} of an empty array is the smallest of no values, which has none "
                         f"(NumPy raises too; shape {a.shape}); use a positive ord")
    return a.min(axis=axes, keepdims=keepdims)


def matrix_norm(x: Array, /, *, keepdims: bool = False, ord: Any = "fro") -> Array:  # noqa: A002
    """The norm of each matrix (the last two axes): 'fro' (Frobenius), 1 / -1 (largest /
    smallest column sum of |x|), inf / -inf (row sums), on every device; 2 / -2 (largest /
    smallest singular value) and 'nuc' (their sum) from LAPACK's SVD, CPU arrays only.

    Empty matrices have NumPy's norms: 0 for 'fro', 'nuc', 1, 2 and inf; -1, -2 and -inf, the
    smallest of no sums or singular values, raise ValueError."""
    x = _float("matrix_norm", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_norm: needs at least 2 dimensions, got shape {x.shape}")
    a = _C.abs(x)
    if ord == "fro":
        out = _C.sqrt(_sum(a * a, axis=(-2, -1), keepdims=keepdims))
    elif ord in (1, -1, math.inf, -math.inf):
        sums = _sum(a, axis=-2 if ord in (1, -1) else -1, keepdims=True)
        out = _largest(sums, (-2, -1), True) if ord > 0 else _smallest("matrix_norm", ord, sums, (-2, -1), True)
        out = out if keepdims else out.reshape(x.shape[:-2])
    elif ord in (2, -2, "nuc"):  # from the singular values: LAPACK, CPU arrays only
        s = svdvals(x)
        out = (_sum(s, axis=-1) if ord == "nuc" else _largest(s, (-1,), False) if ord == 2
               else _smallest("matrix_norm", ord, s, (-1,), False))
        out = out.reshape(x.shape[:-2] + (1, 1)) if keepdims else out
    else:
        raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {reprlib.repr(ord)}")
    return out


# ---------------------------------------------------------------------------------------------
# factorizations: LAPACK (LAPACKE, row-major) from the OpenBLAS gpudev already loads
# ---------------------------------------------------------------------------------------------

_ROW_MAJOR = 101
_LAPACK = None


def _lapack() -> ctypes.CDLL:
    global _LAPACK
    if _LAPACK is None:
        import os

        import scipy_openblas32

        lapack = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(), f"lib{scipy_openblas32.get_library()}.so"))
        # LAPACKE refuses a matrix holding NaN ("argument 4"); NumPy calls LAPACK on it and
        # reports what LAPACK does, which the checks below then match
        lapack.scipy_LAPACKE_set_nancheck(0)
        _LAPACK = lapack
    return _LAPACK


def _lapack_fn(name: str, dtype: np.dtype) -> Any:
    # scipy-openblas32 prefixes its symbols with scipy_ so they cannot clash with another BLAS;
    # the work arrays are float64 (_matrices)
    assert dtype == FLOAT64, dtype
    fn = getattr(_lapack(), f"scipy_LAPACKE_d{name}")
    fn.restype = ctypes.c_int
    return fn


def _square(op: str, x: Array) -> None:
    if _need_array(op, x).ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"{op}: expected square matrices in the last two axes, got shape {x.shape}")


def _on_cpu(op: str, x: Array) -> None:
    if x.device.type != "cpu":
        raise NotImplementedError(f"linalg.{op}: not implemented on {device_label(x.device)}: gpudev factorizes "
                                  f"with LAPACK on the CPU only (no cuSOLVER); copy the array with "
                                  f"x.cpu() first, knowing that this is a transfer")


def _matrices(op: str, x: Array) -> tuple[Array, np.ndarray]:
    """A C-contiguous float64 copy of CPU array x (see the module's docstring on float32) and
    NumPy's view of its memory, (batch, n, n)."""
    _on_cpu(op, x)
    work = _need_array(op, x).astype(FLOAT64)  # a new array, C-contiguous (ints and bools too)
    return work, _batched(work.numpy(), x.shape[:-2])


def _rounded(dtype: np.dtype, *arrays: Array) -> tuple[Array, ...]:
    """LAPACK's float64 results in the float dtype of the input."""
    return tuple(a.astype(dtype, copy=False) for a in arrays)


def _batched(a: np.ndarray, batch: tuple[int, ...]) -> np.ndarray:
    """a with its batch axes merged into one (named exactly, so empty arrays reshape too)."""
    return a.reshape((math.prod(batch),) + a.shape[len(batch):])


def _ld(n: int) -> int:
    """A leading dimension LAPACKE accepts: at least 1, also for empty matrices."""
    return max(1, n)


def _check(op: str, info: int, what: str) -> None:
    if info > 0:
        raise LinAlgError(f"linalg.{op}: the matrix is {what} (LAPACK info {info})")
    if info < 0:
        raise ValueError(f"linalg.{op}: LAPACK rejected argument {-info}")


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


def cholesky(x: Array, /, *, upper: bool = False) -> Array:
    """The Cholesky factor of each symmetric positive-definite matrix: lower L with
    ``x = L @ L.mT`` (upper U with ``x = U.mT @ U`` when ``upper=True``). CPU arrays only."""
    _square("cholesky", x)
    dtype = _float_dtype(x)
    out, mats = _matrices("cholesky", x)
    potrf = _lapack_fn("potrf", mats.dtype)
    n = mats.shape[-1]
    for m in mats:  # one LAPACK call per matrix of the batch
        _check("cholesky", potrf(_ROW_MAJOR, ctypes.c_char(b"U" if upper else b"L"), n, _ptr(m), _ld(n)),
               "not positive definite")
    from ._api.creation import tril, triu

    return _rounded(dtype, triu(out) if upper else tril(out))[0]


def solve(x1: Array, x2: Array, /) -> Array:
    """The X with ``x1 @ X = x2`` for each square x1 (x2 a vector when it is 1-D, else a
    stack of matrices, broadcast against x1's batch). CPU arrays only."""
    _square("solve", x1)
    _need_array("solve", x2)
    _on_cpu("solve", x2)
    dtype = np.result_type(_float_dtype(x1), _float_dtype(x2))
    vector = x2.ndim == 1
    b = x2.reshape((-1, 1)) if vector else x2
    if b.shape[-2] != x1.shape[-1]:
        raise ValueError(f"solve: x2 of shape {x2.shape} does not fit the matrices of shape {x1.shape}")
    batch = tuple(np.broadcast_shapes(x1.shape[:-2], b.shape[:-2]))
    from ._api.shape import broadcast_to

    a = broadcast_to(x1.astype(dtype), batch + x1.shape[-2:])
    b = broadcast_to(b.astype(dtype), batch + b.shape[-2:])
    _, amats = _matrices("solve", a)
    out, bmats = _matrices("solve", b)
    gesv = _lapack_fn("gesv", amats.dtype)
    n, k = amats.shape[-1], bmats.shape[-1]
    pivots = np.empty(n, dtype=np.int32)
    for m, r in zip(amats, bmats):
        _check("solve", gesv(_ROW_MAJOR, n, k, _ptr(m), _ld(n), _ptr(pivots), _ptr(r), _ld(k)), "singular")
    out = _rounded(dtype, out)[0]
    return out.reshape(out.shape[:-1]) if vector else out


def inv(x: Array, /) -> Array:
    """The inverse of each square matrix. CPU arrays only."""
    _square("inv", x)
    from ._api.creation import eye

    return solve(x, eye(x.shape[-1], dtype=_float_dtype(x), device=x.device) + _C.zeros(
        x.shape, dtype=_float_dtype(x), device=x.device))


def _lu_signs(op: str, mats: np.ndarray, batch: tuple[int, ...], dtype: np.dtype) -> Array:
    """LU-factorize each matrix in place (LAPACK getrf); the sign of each one's row
    permutation, or 0 for a singular matrix (a zero pivot, LAPACK's info > 0), whose
    determinant is 0 whatever else (NaN) its factors hold, as NumPy's is."""
    getrf = _lapack_fn("getrf", mats.dtype)
    n = mats.shape[-1]
    pivots = np.empty(max(n, 1), dtype=np.int32)
    signs = []
    for m in mats:
        info = getrf(_ROW_MAJOR, n, n, _ptr(m), _ld(n), _ptr(pivots))
        _check(op, min(info, 0), "")
        signs.append(0 if info > 0 else -1 if np.count_nonzero(pivots[:n] != np.arange(1, n + 1)) % 2 else 1)
    return _C.asarray(signs, dtype=dtype).reshape(batch)


def det(x: Array, /) -> Array:
    """The determinant of each square matrix: the product of the diagonal of its LU
    factorization, negated for an odd row permutation. CPU arrays only."""
    _square("det", x)
    out, mats = _matrices("det", x)
    signs = _lu_signs("det", mats, x.shape[:-2], out.dtype)
    from ._api.reduce import prod

    return _rounded(_float_dtype(x), _C.where(signs == 0, 0.0, prod(diagonal(out), axis=-1) * signs))[0]


def slogdet(x: Array, /) -> SlogdetResult:
    """(sign, log|det|) of each square matrix, from the same LU factorization as det: the
    logarithm does not overflow where the determinant would. CPU arrays only."""
    _square("slogdet", x)
    out, mats = _matrices("slogdet", x)
    signs = _lu_signs("slogdet", mats, x.shape[:-2], out.dtype)
    diag = diagonal(out)
    from ._api.reduce import prod, sum as total

    # a pivot that is not below 0 (NaN included) counts as positive, as in NumPy's slogdet
    negative = prod(1.0 - 2.0 * (diag < 0).astype(out.dtype), axis=-1)
    singular = signs == 0
    sign = _C.where(singular, 0.0, negative * signs)
    logabs = _C.where(singular, -math.inf, total(_C.log(_C.abs(diag)), axis=-1))
    return SlogdetResult(*_rounded(_float_dtype(x), sign, logabs))


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


def _out(shape: tuple[int, ...], dtype: np.dtype) -> tuple[Array, np.ndarray]:
    """A new CPU array and NumPy's view of its memory, for LAPACK to write."""
    a = _C.empty(shape, dtype=dtype)
    return a, a.numpy()


def _eigh(op: str, x: Array, vectors: bool) -> tuple[Array, Array]:
    _square(op, x)
    out, mats = _matrices(op, x)
    n = mats.shape[-1]
    values, w = _out(x.shape[:-1], mats.dtype)
    w = _batched(w, x.shape[:-2])
    syevd = _lapack_fn("syevd", mats.dtype)
    for m, v in zip(mats, w):  # the lower triangle is read; the vectors replace the matrix
        _check(op, syevd(_ROW_MAJOR, ctypes.c_char(b"V" if vectors else b"N"), ctypes.c_char(b"L"), n, _ptr(m), _ld(n),
                         _ptr(v)), "not diagonalizable (no convergence)")
    return _rounded(_float_dtype(x), values, out)


def eigh(x: Array, /) -> EighResult:
    """The eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix (its
    lower triangle is read). CPU arrays only."""
    return EighResult(*_eigh("eigh", x, True))


def eigvalsh(x: Array, /) -> Array:
    """The eigenvalues (ascending) of each symmetric matrix. CPU arrays only."""
    return _eigh("eigvalsh", x, False)[0]


def _svd(op: str, x: Array, vectors: bool, full: bool = False) -> tuple[Array, Array, Array]:
    if _need_array(op, x).ndim < 2:
        raise ValueError(f"{op}: needs at least 2 dimensions, got shape {x.shape}")
    _, mats = _matrices(op, x)
    m, n = mats.shape[-2:]
    k = min(m, n)
    batch = x.shape[:-2]
    ucols, vrows = (m, n) if full else (k, k)
    s, sv = _out(batch + (k,), mats.dtype)
    u, uv = _out(batch + (m, ucols) if vectors else (1, 1), mats.dtype)
    vh, vv = _out(batch + (vrows, n) if vectors else (1, 1), mats.dtype)
    sv = _batched(sv, batch)
    uv, vv = (_batched(v, batch) if vectors else v.reshape((1, 1, 1)) for v in (uv, vv))
    gesdd = _lapack_fn("gesdd", mats.dtype)
    job = ctypes.c_char(b"A" if full else b"S") if vectors else ctypes.c_char(b"N")
    for i, a in enumerate(mats):
        ui, vi = (uv[i], vv[i]) if vectors else (uv[0], vv[0])
        info = gesdd(_ROW_MAJOR, job, m, n, _ptr(a), _ld(n), _ptr(sv[i]), _ptr(ui), _ld(ui.shape[-1]),
                     _ptr(vi), _ld(vi.shape[-1]))
        if info < 0 and np.isnan(a).any():  # gesdd refuses NaN itself; NumPy reports it so
            raise LinAlgError(f"linalg.{op}: SVD did not converge (the matrix holds NaN)")
        _check(op, info, "not decomposable (no convergence)")
        if vectors and k == 0:  # LAPACK returns at once: the bases of the whole spaces are I
            ui[...], vi[...] = np.eye(*ui.shape), np.eye(*vi.shape)
    return _rounded(_float_dtype(x), u, s, vh)


def svd(x: Array, /, *, full_matrices: bool = True) -> SVDResult:
    """U, S, Vh with ``x = U @ diag(S) @ Vh`` for each matrix, S descending. CPU arrays only."""
    return SVDResult(*_svd("svd", x, True, bool(full_matrices)))


def svdvals(x: Array, /) -> Array:
    """The singular values of each matrix, descending. CPU arrays only."""
    return _svd("svdvals", x, False)[1]


def qr(x: Array, /, *, mode: str = "reduced") -> QRResult:
    """Q (orthonormal columns) and R (upper triangular) with ``x = Q @ R`` for each matrix;
    mode 'reduced' gives Q of shape (m, min(m, n)), 'complete' (m, m). CPU arrays only."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {reprlib.repr(mode)}")
    if _need_array("qr", x).ndim < 2:
        raise ValueError(f"qr: needs at least 2 dimensions, got shape {x.shape}")
    out, mats = _matrices("qr", x)
    m, n = mats.shape[-2:]
    k = min(m, n)
    qcols = m if mode == "complete" else k
    q, qv = _out(x.shape[:-2] + (m, qcols), mats.dtype)
    qv = _batched(qv, x.shape[:-2])
    tau = np.empty(max(k, 1), dtype=mats.dtype)
    geqrf, orgqr = _lapack_fn("geqrf", mats.dtype), _lapack_fn("orgqr", mats.dtype)
    for a, qm in zip(mats, qv):
        _check("qr", geqrf(_ROW_MAJOR, m, n, _ptr(a), _ld(n), _ptr(tau)), "")
        qm[:, :k] = a[:, :k]  # the reflectors, below the diagonal
        if qcols > k:
            qm[:, k:] = 0
        _check("qr", orgqr(_ROW_MAJOR, m, qcols, k, _ptr(qm), _ld(qcols), _ptr(tau)), "")
    from ._api.creation import triu

    rows = m if mode == "complete" else k
    return QRResult(*_rounded(_float_dtype(x), q, triu(out[..., :rows, :])))


def _cutoff(s: Array, rtol: Any, shape: tuple[int, ...]) -> Array:
    """rtol * the largest singular value: NumPy's default rtol is max(m, n) * eps."""
    if rtol is None:
        rtol = max(shape[-2:]) * float(np.finfo(s.dtype).eps)
    largest = s.max(axis=-1, keepdims=True) if s.shape[-1] else _C.zeros(s.shape[:-1] + (1,), dtype=s.dtype)
    return largest * (rtol if not isinstance(rtol, Array) else rtol.reshape(rtol.shape + (1,)))


def matrix_rank(x: Array, /, *, rtol: Any = None) -> Array:
    """How many singular values of each matrix are above rtol times the largest. CPU arrays only."""
    s = svdvals(x)
    return _sum(s > _cutoff(s, rtol, x.shape), axis=-1)


def pinv(x: Array, /, *, rtol: Any = None) -> Array:
    """The Moore-Penrose pseudo-inverse of each matrix, from its SVD (singular values at or
    below rtol times the largest count as zero). CPU arrays only."""
    u, s, vh = svd(x, full_matrices=False)
    keep = s > _cutoff(s, rtol, x.shape)
    inv_s = _C.where(keep, 1.0 / _C.where(keep, s, 1.0), 0.0)
    return matrix_transpose(vh) @ (inv_s.reshape(inv_s.shape + (1,)) * matrix_transpose(u))
