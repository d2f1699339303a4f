"""The declarations of gpudev's public names, one per name, and what is made from them.

A Python function is declared where it is defined, with ``@public(family)`` (as NumPy marks
its functions with ``@set_module``); what C makes (the core's functions, gd.Array, the
dtypes) and the names of other modules (classes, constants, subpackages) are declared by
their family's module of this package with ``declare(family, source, names)``; the op rows
of csrc/tables.h declare themselves through ``_C._ops`` (gpudev/_api/elementwise.py). From
the declarations come gpudev's namespace and ``__all__`` (gpudev/__init__.py lists no name),
NumPy's dispatch to the composites (gpudev/_protocols.py) and the lists the tests iterate
(tests/test_op_list.py checks every composite against NumPy as it checks the op rows).

The families mirror csrc/core: creation, elementwise, reduce (reductions and statistics),
sort (sorting, searching and unique values), shape, index, linalg, fft; then devices (devices, dtypes, errors, threads, the seed),
autograd, measure (timing, tracing, strict mode, the machine's facts) and io. PyTorch's and
the array API's spellings are declared in the family of the operation they spell.

A declaration names NumPy's functions of the same meaning (``numpy="max amax"``; ``declare``
takes ``numpy=`` as the names whose NumPy function has their own name): NumPy's dispatch hands
each of them to gpudev's function (gpudev/_protocols.py), with no second list to edit.

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
           "numpy_functions", "public"]

FAMILIES = ("creation", "elementwise", "reduce", "sort", "shape", "index", "linalg", "fft", "random", "devices",
            "autograd", "measure", "io")
# the op rows' TYPES words a composite may take (csrc/tables.h)
COMPOSITE_TYPES = ("ALL", "NUMERIC", "FLOAT", "INT", "BITWISE", "COMPARE")

T = TypeVar("T")


@dataclass(frozen=True)
class Declaration:
    """One public name: what it is, its family, NumPy's functions of the same meaning (np.<name>
    for each name in `numpy`, separated by spaces; a composite names one), and for an
    elementwise composite the dtypes it takes and its number of operands; `pytorch`: a
    PyTorch spelling (the name tables list it as PyTorch's)."""

    name: str
    obj: Any
    family: str
    numpy: str | None = None
    types: str | None = None
    arity: int | None = None
    pytorch: bool = False

    @property
    def composite(self) -> bool:
        return self.arity is not None

    @property
    def numpy_names(self) -> tuple[str, ...]:
        """The names in NumPy's namespace of the functions this declaration computes."""
        return tuple(self.numpy.split()) if self.numpy else ()


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
    if decl.arity is not None and len(decl.numpy_names) > 1:
        raise ValueError(f"gpudev: composite {decl.name} names one NumPy function, got numpy={decl.numpy!r}")
    _DECLARED[decl.name] = decl


def public(family: str, *, name: str | None = None, aliases: Iterable[str] = (), numpy: str | None = None,
           types: str | None = None, arity: int | None = None, pytorch: bool = False) -> Callable[[T], T]:
    """Declare the function below as gd.<name> (its own name by default), and its aliases.

    ``numpy``: NumPy's functions of the same meaning, separated by spaces (np.transpose for
    gd.permute_dims), which NumPy's dispatch then hands to it. An elementwise composite gives
    ``arity`` (1 or 2), ``types`` (as its op row would) and ``numpy``: NumPy's one function of
    the same meaning, or None with a reference in the tests. ``pytorch=True``: PyTorch's
    spelling (``gd.mm``, ``gd.cat``), declared in the family of what it spells."""

    def mark(obj: T) -> T:
        own = name or obj.__name__  # type: ignore[attr-defined]
        _add(Declaration(own, obj, family, numpy, types, arity, pytorch))
        for alias in aliases:
            _add(Declaration(alias, obj, family))
        return obj

    return mark


def declare(family: str, source: Any, names: str, *, numpy: str = "") -> None:
    """Declare the attributes `names` (one string, separated by spaces; ``new=old`` to export
    source's `old` as `new`) of `source` (the core, a module) as public names of `family`;
    those of them also in `numpy` compute NumPy's function of their own name (np.<new>)."""
    same = set(numpy.split())
    words = names.split()
    unknown = same - {w.partition("=")[0] for w in words}
    if unknown:
        raise ValueError(f"gpudev: declare(numpy=...) names {sorted(unknown)}, which are not among {names!r}")
    for word in words:
        new, _, old = word.partition("=")
        _add(Declaration(new, getattr(source, old or new), family, new if new in same else None))


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


def numpy_functions() -> dict[str, Declaration]:
    """NumPy's name -> the declaration of gpudev's function that computes it."""
    table: dict[str, Declaration] = {}
    for decl in _DECLARED.values():
        for numpy_name in decl.numpy_names:
            if numpy_name in table:
                raise RuntimeError(f"gpudev: np.{numpy_name} is named by the declarations of {table[numpy_name].name} "
                                   f"and {decl.name}; one gpudev function computes it")
            table[numpy_name] = decl
    return table


def composites() -> list[Declaration]:
    """The elementwise composites, in declaration order."""
    return [d for d in _DECLARED.values() if d.composite]


def namespace() -> dict[str, Any]:
    """Name -> object: gpudev's public namespace."""
    return {n: d.obj for n, d in _DECLARED.items()}
