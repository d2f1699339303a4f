"""gd.linalg against numpy.linalg on matrices holding NaN or infinities and on empty ones: the
same values (NaN where NumPy has NaN), and NumPy's LinAlgError where NumPy raises it. The
factorizations run on CPU arrays only: on a GPU they raise NotImplementedError naming the
device, the documented refusal; the norms built of sums and maxima run on every device.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import gpudev as gd
from conftest import host

nan, inf = math.nan, math.inf

MATRICES = {
    "nan on the diagonal": [[nan, 1.0], [1.0, 2.0]], "nan last": [[2.0, 1.0], [1.0, nan]],
    "nan above": [[2.0, nan], [1.0, 2.0]], "nan below": [[2.0, 1.0], [nan, 2.0]],
    "all nan": [[nan, nan], [nan, nan]], "inf": [[inf, 1.0], [1.0, 2.0]], "-inf": [[2.0, -inf], [-inf, 2.0]],
    "3x3 nan": [[4.0, 1.0, 0.0], [1.0, nan, 1.0], [0.0, 1.0, 3.0]], "inf and nan": [[inf, nan], [1.0, 2.0]],
    "singular with nan": [[0.0, 0.0], [0.0, nan]], "-nan pivot": [[-nan, 0.0], [0.0, 1.0]],
}
RECTANGULAR = {"2x3 nan": [[1.0, nan, 2.0], [3.0, 4.0, 5.0]]}


def _calls(lib):
    la = lib.linalg
    return {
        "det": la.det, "slogdet": lambda a: tuple(la.slogdet(a)), "inv": la.inv,
        "solve": lambda a: la.solve(a, a.sum(axis=-1) * 0 + 1),
        "solve nan rhs": lambda a: la.solve(lib.eye(a.shape[-1], dtype=a.dtype, device=a.device) + 1, a.sum(axis=-1)),
        "cholesky": la.cholesky, "cholesky upper": lambda a: la.cholesky(a, upper=True),
        "eigvalsh": la.eigvalsh, "eigh": lambda a: tuple(la.eigh(a)), "svdvals": la.svdvals,
        "svd": lambda a: tuple(la.svd(a)), "svd reduced": lambda a: tuple(la.svd(a, full_matrices=False)),
        "qr": lambda a: tuple(la.qr(a)), "qr complete": lambda a: tuple(la.qr(a, mode="complete")),
        "pinv": la.pinv, "matrix_rank": la.matrix_rank, "matrix_power -1": lambda a: la.matrix_power(a, -1),
        "matrix_power 1": lambda a: la.matrix_power(a, 1), "matrix_power 3": lambda a: la.matrix_power(a, 3),
        "matrix_power 0": lambda a: la.matrix_power(a, 0),
        **{f"matrix_norm {o}": (lambda o: lambda a: la.matrix_norm(a, ord=o))(o)
           for o in ("fro", "nuc", 1, -1, 2, -2, inf, -inf)},
        **{f"vector_norm {o}": (lambda o: lambda a: la.vector_norm(a, ord=o, axis=-1))(o)
           for o in (2, 1, inf, -inf, 0, 3, -1, 0.5)},
    }


SQUARE_ONLY = {"det", "slogdet", "inv", "solve", "solve nan rhs", "cholesky", "cholesky upper", "eigvalsh", "eigh",
               "matrix_power -1", "matrix_power 1", "matrix_power 3", "matrix_power 0"}
EVERY_DEVICE = {"matrix_power 1", "matrix_power 3", "matrix_power 0"} | {
    name for name in _calls(np) if name.startswith("vector_norm")} | {
    f"matrix_norm {o}" for o in ("fro", 1, -1, inf, -inf)}


def _outcome(fn, a):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            out = fn(a)
        except Exception as exc:  # noqa: BLE001 - compared below
            return exc
    parts = out if isinstance(out, tuple) else (out,)
    return tuple(np.asarray(host(p) if isinstance(p, gd.Array) else p) for p in parts)


def _agree(name: str, device: gd.Device, matrix: np.ndarray) -> None:
    got = _outcome(_calls(gd)[name], gd.asarray(matrix, device=device))
    if device.type == "cuda" and name not in EVERY_DEVICE:
        assert isinstance(got, NotImplementedError) and str(device) in str(got), f"{name}: {got!r}"
        return
    want = _outcome(_calls(np)[name], matrix)
    if isinstance(want, Exception):
        assert isinstance(got, type(want)), f"{name} of {matrix.tolist()}: NumPy raised {want!r}, gpudev gave {got!r}"
        return
    assert not isinstance(got, Exception), f"{name} of {matrix.tolist()}: NumPy answered, gpudev raised {got!r}"
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, f"{name}: {g.shape} {g.dtype} vs NumPy's {w.shape} {w.dtype}"
        np.testing.assert_allclose(g, w, rtol=1e-5 if w.dtype == np.float32 else 1e-12, atol=1e-6,
                                   equal_nan=True, err_msg=f"{name} of {matrix.tolist()}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", sorted(_calls(np)))
def test_nan_and_inf_give_numpys_answer(device, name, dtype):
    cases = {**MATRICES, **({} if name in SQUARE_ONLY else RECTANGULAR)}
    for label, m in cases.items():
        _agree(name, device, np.array(m, dtype=dtype))


@pytest.mark.parametrize("name", sorted(_calls(np)))
def test_empty_matrices_give_numpys_answer(device, name):
    for shape in [(0, 0), (2, 0, 0), (0, 2, 2), (0, 3), (3, 0), (2, 0, 3)]:
        if name in SQUARE_ONLY and shape[-1] != shape[-2]:
            continue
        _agree(name, device, np.zeros(shape))


def test_numpys_linalgerror_is_raised_where_numpy_raises_it():
    assert gd.linalg.LinAlgError is np.linalg.LinAlgError and issubclass(gd.linalg.LinAlgError, ValueError)
    with pytest.raises(np.linalg.LinAlgError, match="linalg.svdvals: SVD did not converge"):
        gd.linalg.svdvals(gd.asarray([[nan, 1.0], [1.0, 2.0]]))
    with pytest.raises(np.linalg.LinAlgError, match="linalg.cholesky: the matrix is not positive definite"):
        gd.linalg.cholesky(gd.asarray([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(np.linalg.LinAlgError, match=r"det: expected square matrices .* got shape \(2, 3\)"):
        gd.linalg.det(gd.zeros((2, 3)))


@pytest.mark.parametrize("ord", [-1, -2, -inf])
def test_norms_of_empty_arrays_without_a_value_say_so(ord):
    with pytest.raises(ValueError, match=rf"matrix_norm: ord={ord!r} of an empty array is the smallest of no values"):
        gd.linalg.matrix_norm(gd.zeros((0, 0)), ord=ord)
    if ord == -inf:
        with pytest.raises(ValueError, match="vector_norm: ord=-inf of an empty array"):
            gd.linalg.vector_norm(gd.zeros(0), ord=ord)


def test_empty_norms_are_zero_on_every_device(device):
    assert gd.linalg.vector_norm(gd.zeros(0, device=device), ord=inf).item() == 0.0
    for ord in (1, inf, "fro"):
        assert gd.linalg.matrix_norm(gd.zeros((0, 0), device=device), ord=ord).item() == 0.0
    assert gd.linalg.vector_norm(gd.zeros((3, 0), device=device), ord=inf, axis=1, keepdims=True).shape == (3, 1)
