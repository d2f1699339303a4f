"""gpudev's public names come from one declaration each (gpudev/_api): the namespace and
``__all__`` are what the declarations say, gpudev/__init__.py holds no list of names, and a
second declaration of a name, or one in a family that does not exist, is refused at import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gpudev as gd
from gpudev import _api

INIT = Path(gd.__file__)


def test_the_namespace_is_the_declarations():
    declared = _api.declared()
    assert gd.__all__ == sorted(declared)
    for name, decl in declared.items():
        assert getattr(gd, name) is decl.obj, f"gd.{name} is not what its declaration ({decl.family}) names"
        assert decl.family in _api.FAMILIES


def test_every_op_row_with_a_function_is_declared_in_elementwise():
    declared = _api.declared()
    for op in gd._C._ops:
        for name in (op.name, *op.aliases) if op.function else ():
            assert declared[name].family == "elementwise" and declared[name].obj is getattr(gd._C, name)


def test_init_holds_no_list_of_names():
    tree = ast.parse(INIT.read_text())
    for node in tree.body:  # what the module binds: modules, or private names
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            public = [a.name for a in node.names if not a.name.startswith("_") and (a.asname or a.name)[0] != "_"]
            assert not public or node.module is None, f"gpudev/__init__.py imports {public} from {node.module}"
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            strings = [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            assert len(strings) <= 8, f"gpudev/__init__.py line {node.lineno}: a list of names"


def test_a_name_is_declared_once():
    with pytest.raises(RuntimeError, match=r"zeros is declared twice"):
        _api.declare("creation", gd._C, "zeros")
    with pytest.raises(ValueError, match=r"family 'nowhere'"):
        _api.declare("nowhere", gd._C, "zeros")
    assert _api.declared()["zeros"].family == "creation"


def test_a_composite_declares_its_dtypes_and_arity():
    with pytest.raises(ValueError, match=r"composite half needs arity 1 or 2"):
        _api.public("elementwise", name="half", numpy=None, types="HALF", arity=1)(lambda x: x / 2)
    assert "half" not in _api.declared()


def test_numpy_dispatch_is_what_the_declarations_name():
    import numpy as np

    from gpudev import _protocols

    named = {getattr(np, n) for n in _api.numpy_functions() if not isinstance(getattr(np, n), np.ufunc)}
    assert set(_protocols._functions()) == named
    assert np.transpose in named and _api.declared()["permute_dims"].numpy == "transpose"
    with pytest.raises(ValueError, match=r"names \['cumsum'\], which are not among"):
        _api.declare("reduce", gd._C, "sum", numpy="cumsum")


def test_a_declared_numpy_function_without_an_adapter_calls_gpudevs(monkeypatch):
    import numpy as np

    from gpudev import _protocols

    monkeypatch.delitem(_protocols._ADAPTERS, "stack")
    monkeypatch.setattr(_protocols, "_FUNCTIONS_FROM", -1)  # rebuilt without the adapter
    got = np.stack([gd.arange(3), gd.arange(3)])
    assert isinstance(got, gd.Array) and got.tolist() == [[0, 1, 2], [0, 1, 2]]
    assert isinstance(np.stack([gd.arange(3)], casting="no"), np.ndarray)  # casting=: not gd.stack's, NumPy's
    monkeypatch.undo()
    _protocols._FUNCTIONS_FROM = -1
