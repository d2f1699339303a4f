"""The op lists of csrc/tables.h, as gd._C._ops shows them: every row has all its parts (a
gradient rule or none by declaration, a row in the C conformance test, a NumPy reference, its
module function, method, ``__all__`` entry and NumPy-protocol mapping as its flags say), and
every row computes what NumPy computes, for every dtype its backends define and on every device.
The elementwise composites (formulas in Python over the rows, declared with their NumPy
function, dtypes and arity: gpudev/_api) are checked the same way, from their declarations.

A new row that lacks one of these fails here, on a machine without a GPU; the fuzz tables
(tests/fuzz) and the signature checks (test_signatures.py) read the same list.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import gpudev as gd
from gpudev import _C, _grad_rules, _protocols
from gpudev._api import composites, elementwise
from gpudev._api import declared as declarations

OPS = {op.name: op for op in _C._ops}
CONFORMANCE = Path(__file__).resolve().parent / "c" / "conformance_elementwise.c"


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    return (1.0 / (1.0 + np.exp(-x64))).astype(x.dtype)


# references for the rows that NumPy has no ufunc for (NUMPY is NULL)
REFERENCES = {
    "copy": np.copy,
    "relu": lambda x: np.maximum(x, x.dtype.type(0)),
    "sigmoid": _sigmoid,
    "sigmoid_grad": lambda y, g: (y.dtype.type(1) - y) * y * g,  # internal: sigmoid's backward
    "round": np.round,  # its ufunc np.rint gives integers back as float64; np.round keeps them
}
# results that carry no gradient by their dtype: bools (comparisons) and integers (bitwise, shifts)
WITHOUT_GRADIENT = ("COMPARE", "BITWISE", "INT")


def reference(op):
    return REFERENCES.get(op.name) or (getattr(np, op.numpy) if op.numpy else None)


# ---------------------------------------------------------------------------------------------
# every row has all its parts
# ---------------------------------------------------------------------------------------------


def test_the_list_describes_both_enums():
    assert [op.arity for op in _C._ops].count(1) >= 10 and [op.arity for op in _C._ops].count(2) >= 18
    assert len(OPS) == len(_C._ops), "two rows share a name"
    for op in _C._ops:
        assert op.dtypes and set(op.dtypes) <= {"float32", "float64", "int64", "int32", "bool"}, op


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_row_has_a_gradient_rule_or_declares_none(name):
    op = OPS[name]
    assert name in _grad_rules.RULES or name in _grad_rules.REFUSED or op.types in WITHOUT_GRADIENT, (
        f"{name}: add its backward rule to RULES in gpudev/_grad_rules.py, or its reason to REFUSED")


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_row_has_a_conformance_row(name):
    op = OPS[name]
    macro = "UNOP" if op.arity == 1 else "BINOP"
    assert re.search(rf"^\s*{macro}\({op.id},", CONFORMANCE.read_text(), re.M), (
        f"{name}: add {macro}({op.id}, reference, ...) to tests/c/conformance_elementwise.c")


def test_every_conformance_row_is_a_row_of_the_op_lists():
    listed = {("UNOP" if op.arity == 1 else "BINOP", op.id) for op in _C._ops}
    rows = set(re.findall(r"^\s*(UNOP|BINOP)\((\w+),", CONFORMANCE.read_text(), re.M))
    assert rows - listed == set(), f"conformance rows of operations tables.h does not list: {sorted(rows - listed)}"


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_row_has_a_numpy_reference(name):
    assert reference(OPS[name]) is not None, f"{name}: give its NumPy ufunc in tables.h or a reference in REFERENCES"


@pytest.mark.parametrize("name", sorted(OPS))
def test_the_python_layer_follows_the_flags(name):
    op = OPS[name]
    for n in (op.name, *op.aliases):
        assert hasattr(gd, n) == op.function and (n in gd.__all__) == op.function, n
    if op.method:  # the C method (PyTorch-named methods of gpudev/_array.py may exist besides)
        a = gd.array([0.5, 1.5])
        got = getattr(a, name)() if op.arity == 1 else getattr(a, name)(a)
        want = _C._ewise(name, a) if op.arity == 1 else _C._ewise(name, a, a)
        assert type(vars(gd.Array)[name]).__name__ == "method_descriptor" and got.tolist() == want.tolist()
    if op.function:
        fn = getattr(gd, name)
        assert fn.__doc__ and fn.__text_signature__ in ("($module, a, /)", "($module, a, b, /)")
        ufunc = getattr(np, op.numpy) if op.numpy else None
        if ufunc is not None:
            assert ufunc in _protocols._FUNCS or ufunc in _protocols._BINARY, f"np.{op.numpy} is not mapped"


# ---------------------------------------------------------------------------------------------
# every row against NumPy
# ---------------------------------------------------------------------------------------------


def operand(op, dtype: str, which: int) -> np.ndarray:
    """Values of dtype for operand `which` of op, with negatives, zeros and both signs of
    divisors; integer exponents of power stay >= 0 (the contract of gpudev.h)."""
    rng = np.random.default_rng(7 + which)
    if dtype == "bool":
        return rng.integers(0, 2, (5, 7)).astype(bool)
    if dtype in ("int64", "int32"):
        low = 0 if (op.name == "power" and which == 1) else -20
        return rng.integers(low, 21 if low else 20, (5, 7)).astype(dtype)
    x = (rng.standard_normal((5, 7)) * 3).astype(dtype)
    x[0, :3] = [0.0, -0.0, 1.0]
    return x


def tolerance(op, dtype: str) -> dict:
    if dtype not in ("float32", "float64"):
        return {"rtol": 0, "atol": 0}
    # the math library's functions differ by a few ulps between C libraries and NumPy's own loops
    if op.costly:
        return {"rtol": 1e-5, "atol": 1e-30} if dtype == "float32" else {"rtol": 1e-13, "atol": 1e-300}
    return {"rtol": 1e-7 if dtype == "float32" else 1e-15, "atol": 0}


CASES = [(name, dt) for name in sorted(OPS) for dt in OPS[name].dtypes]


def same_as_numpy(fn, ref, op, dtype: str, device, tol: dict) -> tuple[list[np.ndarray], np.ndarray]:
    """fn (a row or a composite) on op's operands of dtype on device gives ref's values on the
    host, with ref's dtype and shape; returns the operands and ref's result."""
    hosts = [operand(op, dtype, i) for i in range(op.arity)]
    with np.errstate(all="ignore"):
        want = np.asarray(ref(*hosts))
    got = fn(*[gd.array(h, device=device) for h in hosts])
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_allclose(np.asarray(got.cpu()), want, equal_nan=True, **tol, err_msg=op.name)
    return hosts, want


@pytest.mark.parametrize("name, dtype", CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_every_row_computes_what_numpy_computes(device, name, dtype):
    op = OPS[name]
    hosts, want = same_as_numpy(lambda *xs: _C._ewise(name, *xs), reference(op), op, dtype, device,
                                tolerance(op, dtype))
    if op.function:  # the module function is the same operation, with a scalar operand too
        with np.errstate(all="ignore"):
            want_s = np.asarray(reference(op)(*hosts[:-1], hosts[-1].flat[3])) if op.arity == 2 else want
        args = [gd.array(h, device=device) for h in hosts[:-1]] + [hosts[-1].flat[3].item()]
        got_s = getattr(gd, name)(*args) if op.arity == 2 else getattr(gd, name)(gd.array(hosts[0], device=device))
        np.testing.assert_allclose(np.asarray(got_s.cpu()), want_s, equal_nan=True, **tolerance(op, dtype))


def test_ewise_refuses_what_is_not_in_the_list():
    with pytest.raises(TypeError, match="_ewise"):
        _C._ewise("no_such_op", gd.ones(2))
    with pytest.raises(TypeError, match="_ewise"):
        _C._ewise("add", gd.ones(2))  # a binary row with one operand


# ---------------------------------------------------------------------------------------------
# the composites, from their declarations, against NumPy as the rows are
# ---------------------------------------------------------------------------------------------

COMPOSITES = {d.name: d for d in composites()}
# the dtypes of each TYPES word, as the op rows define them
DTYPES_OF = {op.types: op.dtypes for op in _C._ops}
# references for the composites whose declaration names no NumPy function (numpy=None)
COMPOSITE_REFERENCES: dict = {}
COMPOSITE_CASES = [(n, dt) for n in sorted(COMPOSITES) for dt in DTYPES_OF[COMPOSITES[n].types]]


def composite_reference(decl):
    return COMPOSITE_REFERENCES.get(decl.name) or (getattr(np, decl.numpy, None) if decl.numpy else None)


def test_every_composite_function_is_declared():
    # each public function of the elementwise family's module has its declaration: a composite's
    # (with numpy=, types= and arity=) brings it under the checks below
    declared = declarations()
    defined = {n: f for n, f in vars(elementwise).items()
               if callable(f) and getattr(f, "__module__", None) == elementwise.__name__ and not n.startswith("_")}
    missing = sorted(n for n, f in defined.items() if n not in declared or declared[n].obj is not f)
    assert not missing, (f"gpudev/_api/elementwise.py defines {missing} without a declaration: put "
                         f"@public(\"elementwise\", numpy=..., types=..., arity=...) above each")


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_every_composite_has_its_parts(name):
    decl = COMPOSITES[name]
    assert composite_reference(decl) is not None, (
        f"{name}: name its NumPy function in the declaration (numpy=...) or give a reference in "
        f"COMPOSITE_REFERENCES of tests/test_op_list.py")
    assert name not in OPS, f"{name} is both a row of the op lists and a composite"
    assert getattr(gd, name) is decl.obj and name in gd.__all__
    ufunc = getattr(np, decl.numpy, None) if decl.numpy else None
    if isinstance(ufunc, np.ufunc):
        assert _protocols._FUNCS.get(ufunc) is decl.obj, f"np.{decl.numpy} is not mapped to gd.{name}"


@pytest.mark.parametrize("name, dtype", COMPOSITE_CASES, ids=[f"{n}-{d}" for n, d in COMPOSITE_CASES])
def test_every_composite_computes_what_numpy_computes(device, name, dtype):
    decl = COMPOSITES[name]
    # a formula rounds at each of its steps: the tolerance of the costly rows
    tol = {"rtol": 1e-5, "atol": 1e-30} if dtype == "float32" else {"rtol": 1e-13, "atol": 1e-300}
    same_as_numpy(decl.obj, composite_reference(decl), decl, dtype, device,
                  tol if dtype.startswith("float") else {"rtol": 0, "atol": 0})
