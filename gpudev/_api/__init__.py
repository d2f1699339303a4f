"""The declarations of gpudev's public names, one per name, and what is made from them.

A Python function is declared where it is defined, with ``@public(family)`` (as NumPy marks
its functions with ``@set_module``); what C makes (the core's functions, gd.Array, the
dtypes) and the names of other modules (classes, constants, subpackages) are declared by
their family's module of this package with ``declare(family, source, names)``; the op rows
of csrc/tables.h declare themselves through ``_C._ops`` (gpudev/_api/elementwise.py). From
the declarations come gpudev's namespace and ``__all__`` (gpudev/__init__.py lists no name),
NumPy's dispatch to the composites (gpudev/_protocols.py) and the lists the tests iterate
(tests/test_op_list.py checks every composite against NumPy as it checks the op rows).

The families mirror csrc/core: creation, elementwise, reduce (reductions and sorting),
shape, index, linalg, fft; then devices (devices, dtypes, errors, threads, the seed),
autograd, measure (timing, tracing, strict mode, the machine's facts) and io. PyTorch's and
the array API's spellings are declared in the family of the operation they spell.

A composite (a formula in Python over the op rows) is declared with its NumPy counterpart and
the dtypes it takes, as an op row is: ``@public("elementwise", numpy="hypot", types="FLOAT",
arity=2)``; one without a NumPy function of its name gives ``numpy=None`` and its reference in
``COMPOSITE_REFERENCES`` of tests/test_op_list.py.

This module imports nothing of gpudev, so every module can declare its names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, TypeVar

__all__ = ["FAMILIES", "Declaration", "composites", "declare", "declare_modules", "declared", "load", "namespace",
           "public"]

FAMILIES = ("creation", "elementwise", "reduce", "shape", "index", "linalg", "fft", "random", "devices",
            "autograd", "measure", "io")
# the op rows' TYPES words a composite may take (csrc/tables.h)
COMPOSITE_TYPES = ("ALL", "NUMERIC", "FLOAT", "INT", "BITWISE", "COMPARE")

T = TypeVar("T")


@dataclass(frozen=True)
class Declaration:
    """One public name: what it is, its family, and for an elementwise composite NumPy's
    function of the same meaning (np.<numpy>), the dtypes it takes and its number of operands."""

    name: str
    obj: Any
    family: str
    numpy: str | None = None
    types: str | None = None
    arity: int | None = None

    @property
    def composite(self) -> bool:
        return self.arity is not None


_DECLARED: dict[str, Declaration] = {}


def _add(decl: Declaration) -> None:
    if decl.family not in FAMILIES:
        raise ValueError(f"gpudev: {decl.name} is declared in family {decl.family!r}; the families are "
                         f"{', '.join(FAMILIES)}")
    if decl.name in _DECLARED:
        raise RuntimeError(f"gpudev: {decl.name} is declared twice (in {decl.family!r} and "
                           f"{_DECLARED[decl.name].family!r}); a public name has one declaration")
    if decl.arity is not None and (decl.arity not in (1, 2) or decl.types not in COMPOSITE_TYPES):
        raise ValueError(f"gpudev: composite {decl.name} needs arity 1 or 2 and types in {COMPOSITE_TYPES}, "
                         f"got arity={decl.arity!r}, types={decl.types!r}")
    _DECLARED[decl.name] = decl


def public(family: str, *, name: str | None = None, aliases: Iterable[str] = (), numpy: str | None = None,
           types: str | None = None, arity: int | None = None) -> Callable[[T], T]:
    """Declare the function below as gd.<name> (its own name by default), and its aliases.

    An elementwise composite gives ``arity`` (1 or 2), ``types`` (as its op row would) and
    ``numpy``: NumPy's function of the same meaning, or None with a reference in the tests."""

    def mark(obj: T) -> T:
        own = name or obj.__name__  # type: ignore[attr-defined]
        _add(Declaration(own, obj, family, numpy, types, arity))
        for alias in aliases:
            _add(Declaration(alias, obj, family))
        return obj

    return mark


def declare(family: str, source: Any, names: str) -> None:
    """Declare the attributes `names` (one string, separated by spaces; ``new=old`` to export
    source's `old` as `new`) of `source` (the core, a module) as public names of `family`."""
    for word in names.split():
        new, _, old = word.partition("=")
        _add(Declaration(new, getattr(source, old or new), family))


def declare_modules(family: str, *modules: Any) -> None:
    """Declare subpackages and modules (gpudev.nn, ...) as public names of `family`."""
    for module in modules:
        _add(Declaration(module.__name__.rpartition(".")[2], module, family))


def load(*modules: str) -> None:
    """Import the family modules of this package named (their imports run the declarations)."""
    import importlib

    for module in modules:
        importlib.import_module(f"{__name__}.{module}")


def declared() -> dict[str, Declaration]:
    """Name -> Declaration, every public name of gpudev."""
    return dict(_DECLARED)


def composites() -> list[Declaration]:
    """The elementwise composites, in declaration order."""
    return [d for d in _DECLARED.values() if d.composite]


def namespace() -> dict[str, Any]:
    """Name -> object: gpudev's public namespace."""
    return {n: d.obj for n, d in _DECLARED.items()}
