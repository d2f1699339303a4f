"""The reduction list of csrc/tables.h (GD_REDUCTIONS), as gd._C._reductions shows it: every
row has all its parts (a row in the C conformance test, a gradient rule or none by declaration,
its method), and every row with a method computes what NumPy's function of its NUMPY column
computes, dtypes included (int32 and bool sums and products give int64, as on Linux), over
every axis form, with keepdims, over empty axes and on every device; its gradient is
PyTorch's.

The parts that C code must name (the CPU kernels' rows, the CUDA operations, the conformance
rows' count) stop the build when a row lacks them; the parts checked here fail `make test`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import gpudev as gd
from gpudev import _C, _grad_rules
from gpudev._api import reduce

from conftest import host

ROWS = {r.name: r for r in _C._reductions}
METHODS = sorted(name for name, r in ROWS.items() if r.method)
CONFORMANCE = Path(__file__).resolve().parent / "c" / "conformance_reduce.c"
# PyTorch's reduction of NumPy's name, where PyTorch spells it otherwise (torch.max(x, dim)
# returns indices too)
TORCH_NAMES = {"max": "amax", "min": "amin"}
AXES = [None, 0, -1, 1, (0, 2), ()]
DTYPES = ["float32", "float64", "int64", "int32", "bool"]


def _data(dtype: str, seed: int = 0) -> np.ndarray:
    """(3, 4, 5) values whose products neither overflow nor vanish: floats in [-2, 2), integers
    from {-2, -1, 1, 2, 3}, bools mostly True."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random((3, 4, 5)) < 0.9
    if dtype in ("int64", "int32"):
        return rng.choice(np.array([-2, -1, 1, 2, 3], dtype=dtype), size=(3, 4, 5))
    return rng.uniform(-2, 2, size=(3, 4, 5)).astype(dtype)


# ---------------------------------------------------------------------------------------------
# every row has all its parts
# ---------------------------------------------------------------------------------------------


def test_the_list_names_each_reduction_once():
    assert len(ROWS) == len(_C._reductions) >= 4, "two rows share a name"
    assert [r.id for r in _C._reductions][:4] == ["SUM", "MAX", "MIN", "SUMSQ"], "new rows go last"


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_row_has_a_conformance_row(name):
    assert re.search(rf"^\s*\[GD_RED_{ROWS[name].id}\] = \{{GD_RED_{ROWS[name].id},", CONFORMANCE.read_text(),
                     re.M), f"{name}: add its row [GD_RED_{ROWS[name].id}] to redops[] in {CONFORMANCE.name}"


@pytest.mark.parametrize("name", METHODS)
def test_every_method_row_has_a_gradient_rule_or_declares_none(name):
    assert name in _grad_rules.RULES or name in _grad_rules.REFUSED, (
        f"{name}: add its backward rule to RULES in gpudev/_grad_rules.py, or its reason to REFUSED")


@pytest.mark.parametrize("name", METHODS)
def test_every_method_row_has_its_method_and_a_numpy_reference(name):
    member = _method(name)
    assert callable(member) and ROWS[name].numpy and hasattr(np, ROWS[name].numpy)
    c_signature = getattr(member, "__text_signature__", None)  # None: a Python method wraps it
    assert c_signature is None or ("dtype" in c_signature) == ROWS[name].dtype


# ---------------------------------------------------------------------------------------------
# every method row computes what NumPy computes
# ---------------------------------------------------------------------------------------------


def _method(name: str):
    return getattr(gd.Array, f"_{name}", None) or getattr(gd.Array, name)


def _compare(got: gd.Array, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy's {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy's {want.shape}"
    rtol = 1e-5 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(host(got), want, rtol=rtol, atol=0, err_msg=what)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", METHODS)
def test_every_method_row_matches_numpy(name, dtype, device):
    x = _data(dtype)
    a = gd.array(x, device=device)
    for axis in AXES:
        for keepdims in (False, True):
            want = getattr(np, ROWS[name].numpy)(x, axis=axis, keepdims=keepdims)
            got = _method(name)(a, axis=axis, keepdims=keepdims)
            _compare(got, np.asarray(want), f"{name}({dtype}, axis={axis}, keepdims={keepdims}) on {device}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", METHODS)
def test_every_method_rows_module_function_matches_numpy(name, dtype, device):
    """gd.<name> as the list makes it (also for max and min, exported in PyTorch's form)."""
    function = reduce.LIST_FUNCTIONS[name]
    x = _data(dtype)
    a = gd.array(x, device=device)
    for axis in AXES:
        want = getattr(np, ROWS[name].numpy)(x, axis=axis, keepdims=True)
        _compare(function(a, axis=axis, keepdims=True), np.asarray(want), f"gd.{name}({dtype}, axis={axis}) on {device}")


@pytest.mark.parametrize("name", METHODS)
def test_numpys_call_of_every_method_row_reaches_gpudev(name, device):
    """np.<name>(a, axis[, dtype], out, keepdims), NumPy's positional order, is gpudev's
    reduction (an Array on a's device), for every NumPy name the row's declaration gives: the
    protocol's adapters come from the list, so a new row needs no line in _protocols.py."""
    from gpudev._api import declared

    x = _data("float64")
    a = gd.array(x, device=device)
    dtype = (np.float64,) if ROWS[name].dtype else ()
    numpy_names = declared()[name].numpy_names
    assert ROWS[name].numpy in numpy_names, numpy_names
    for numpy_name in numpy_names:
        got = getattr(np, numpy_name)(a, 1, *dtype, None, True)
        assert isinstance(got, gd.Array) and got.device == a.device, (numpy_name, type(got))
        want = getattr(np, numpy_name)(x, 1, *dtype, None, True)
        _compare(got, np.asarray(want), f"np.{numpy_name}(a, 1, ..., keepdims=True) on {device}")


@pytest.mark.parametrize("name", METHODS)
def test_every_method_row_over_an_empty_axis(name, device):
    x = np.zeros((0, 3), dtype=np.float32)
    a = gd.array(x, device=device)
    if ROWS[name].identity is None:
        with pytest.raises(ValueError, match=f"{name}: zero-size array"):
            _method(name)(a, axis=0)
        with pytest.raises(ValueError):
            getattr(np, ROWS[name].numpy)(x, axis=0)
        return
    assert ROWS[name].identity == getattr(np, ROWS[name].numpy)(np.zeros(0))
    for dtype in DTYPES:
        x = np.zeros((0, 3), dtype=dtype)
        _compare(_method(name)(gd.array(x, device=device), axis=0), getattr(np, ROWS[name].numpy)(x, axis=0),
                 f"{name} of {dtype} over an empty axis on {device}")


@pytest.mark.parametrize("name", [n for n in METHODS if ROWS[n].dtype])
@pytest.mark.parametrize("dtype", ["float64", "int32", "int64"])
def test_every_method_row_with_dtype_computes_in_it(name, dtype, device):
    x = _data("int32") * 1000  # int32 products and sums of these wrap when asked for int32
    a = gd.array(x, device=device)
    for axis in (None, 1):
        want = getattr(np, ROWS[name].numpy)(x, axis=axis, dtype=dtype)
        _compare(_method(name)(a, axis=axis, dtype=dtype), np.asarray(want),
                 f"{name}(int32, axis={axis}, dtype={dtype}) on {device}")


@pytest.mark.parametrize("name", [n for n in METHODS if hasattr(gd, n)])
def test_every_module_function_runs_the_core_reduction_alone(name, device):
    x = gd.array(_data("float64"), device=device)
    with gd.trace() as t:
        getattr(gd, name)(x, axis=(0, 2))
    assert [e.name for e in t.events if e.kind == "op"] == [name], f"gd.{name} runs more than Array.{name}"


# ---------------------------------------------------------------------------------------------
# the gradient is PyTorch's, zeros in the input included
# ---------------------------------------------------------------------------------------------


def _with_zeros() -> np.ndarray:
    """float64 (3, 4, 5) with one zero in a row, two zeros in another, and no ties for the
    largest or smallest element of any row, column or slab."""
    x = np.random.default_rng(1).uniform(0.5, 2.0, size=(3, 4, 5)) * np.where(
        np.random.default_rng(2).random((3, 4, 5)) < 0.5, -1.0, 1.0)
    x[0, 1, 2] = 0.0
    x[1, 2, :] = [-2.5, 2.5, 2.25, 0.0, 0.0]
    return x


def _torch_reduce(torch, name: str, t, axis, keepdims: bool):
    fn = getattr(torch, TORCH_NAMES.get(name, name))
    if axis is None:
        out = fn(t)
        return out.reshape((1,) * t.ndim) if keepdims else out
    axes = sorted({a % t.ndim for a in (axis if isinstance(axis, tuple) else (axis,))}, reverse=True)
    for a in axes:  # one axis at a time: torch.prod takes one
        t = fn(t, dim=a, keepdim=True)
    return t if keepdims else t.squeeze(tuple(axes)) if axes else t


@pytest.mark.parametrize("name", [n for n in METHODS if n in _grad_rules.RULES])
def test_every_method_rows_gradient_is_pytorchs(name, device):
    torch = pytest.importorskip("torch")
    x = _with_zeros()
    for axis in (None, -1, 1, (0, 2)):
        for keepdims in (False, True):
            a = gd.array(x, device=device).requires_grad_()
            y = _method(name)(a, axis=axis, keepdims=keepdims)
            w = np.random.default_rng(3).uniform(-1, 1, size=y.shape)
            (y * gd.array(w, device=device)).sum().backward()
            t = torch.tensor(x, requires_grad=True)
            (_torch_reduce(torch, name, t, axis, keepdims) * torch.tensor(w)).sum().backward()
            np.testing.assert_allclose(host(a.grad), t.grad.numpy(), rtol=1e-12, atol=1e-15,
                                       err_msg=f"d {name}(axis={axis}, keepdims={keepdims}) on {device}")
