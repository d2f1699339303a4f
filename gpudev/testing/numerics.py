"""``assert_allclose`` with the tolerances gpudev documents for results computed on
different devices (docs/guides/measuring.md, "Comparing CPU and GPU results").

Why there is a tolerance at all: elementwise kernels agree between the CPU and a GPU to a few
units in the last place (CUDA's exp, log, tanh round differently from the C library's), and
sums, norms and matrix products add their terms in a different order on each device (OpenBLAS
and cuBLAS block differently), which moves the result by about the number of terms times the
rounding of each. Integers and booleans are exact everywhere.
"""

from __future__ import annotations

import reprlib
from typing import Any

import numpy as np

__all__ = ["TOLERANCES", "assert_allclose", "tolerance"]

# (rtol, atol) by kind of computation and dtype. 'reduction' covers everything that sums:
# reductions, products, norms, and any result computed from them (a trained model).
TOLERANCES: dict[str, dict[str, tuple[float, float]]] = {
    "elementwise": {"float32": (1e-5, 1e-7), "float64": (1e-12, 1e-15)},
    "reduction": {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)},
}


def tolerance(dtype: Any, kind: str = "reduction") -> tuple[float, float]:
    """(rtol, atol) for comparing `dtype` results of `kind` from two devices; (0, 0) for
    integers and booleans.

        >>> tolerance("float32")
        (0.0001, 1e-05)
    """
    return _tolerance("tolerance", dtype, kind)


def _tolerance(op: str, dtype: Any, kind: str) -> tuple[float, float]:
    if kind not in TOLERANCES:
        raise ValueError(f"{op}: kind must be one of {', '.join(map(repr, TOLERANCES))}, got {reprlib.repr(kind)}")
    try:
        name = np.dtype(dtype).name
    except TypeError:  # a misspelled name ('flaot32') would otherwise read as NumPy's own error
        raise TypeError(f"{op}: {reprlib.repr(dtype)} is not a dtype; give one such as 'float32' or "
                        f"gd.float32") from None
    return TOLERANCES[kind].get(name, (0.0, 0.0))


def _host(x: Any) -> tuple[np.ndarray, str]:
    """x as a NumPy array (a copy from a GPU) and where it came from."""
    device = getattr(x, "device", None)
    if device is not None and hasattr(x, "cpu") and not isinstance(x, np.ndarray):
        return np.asarray(x.cpu().numpy()), str(device)
    return np.asarray(x), "host"


def assert_allclose(actual: Any, desired: Any, *, rtol: float | None = None, atol: float | None = None,
                    kind: str = "reduction") -> None:
    """Assert that `actual` and `desired` (gpudev Arrays on any device, NumPy arrays, lists or
    scalars) agree within gpudev's documented tolerance for their dtype and `kind`
    ('elementwise' or 'reduction', see TOLERANCES); `rtol` / `atol` override it. Shapes must
    match exactly (no broadcasting of a wrong shape into a pass). Integers and booleans are
    compared exactly, as integers (never through float64, which cannot tell 2**62 + 1 from
    2**62).

        >>> import gpudev as gd
        >>> assert_allclose(gd.ones(3) / 3, [1 / 3] * 3)
    """
    got, got_where = _host(actual)
    want, want_where = _host(desired)
    if got.shape != want.shape:
        raise AssertionError(f"assert_allclose: shapes differ: {got.shape} ({got_where}) and {want.shape} "
                             f"({want_where})")
    # the less precise float decides: a float32 result against a float64 reference is float32
    floats = [d for d in (got.dtype, want.dtype) if d.kind == "f"]
    dtype = min(floats, key=lambda d: d.itemsize) if floats else got.dtype
    default_rtol, default_atol = _tolerance("assert_allclose", dtype, kind)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    message = f"{got_where} vs {want_where}, {dtype} with gpudev's {kind} tolerance (rtol={rtol:g}, atol={atol:g})"
    if not floats:
        # integers compared as integers: through float64, 2**62 + 1 would equal 2**62
        if not rtol and not atol:
            np.testing.assert_array_equal(got, want, err_msg=message)
        else:  # Python ints: |got - want| <= atol + rtol * |want| without rounding or wrapping
            np.testing.assert_array_equal(np.abs(got.astype(object) - want.astype(object)) <= atol + rtol * np.abs(
                want.astype(object)), True, err_msg=f"{message}: got {got!r}, want {want!r}")
        return
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=message)
