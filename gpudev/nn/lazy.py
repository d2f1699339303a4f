"""Lazy modules, as PyTorch's ``LazyModuleMixin`` (torch/nn/modules/lazy.py): layers whose
parameter shapes come from their first input.

A lazy layer holds :class:`~gpudev.nn.UninitializedParameter` (and
``UninitializedBuffer``) placeholders until its first call, which materializes them from the
shapes the layer declares for that input and initializes them; then the layer becomes its
``cls_to_become`` (``LazyLinear`` becomes ``Linear``). ``load_state_dict`` materializes them
from the loaded arrays' shapes instead. A new lazy layer:

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> class LazyScale(nn.LazyModuleMixin, nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = nn.UninitializedParameter()
    ...     def parameter_shapes(self, x):
    ...         return {"scale": (x.shape[-1],)}
    ...     def reset_parameters(self):
    ...         nn.init.ones_(self.scale)
    ...     def forward(self, x):
    ...         return x * self.scale
    >>> LazyScale()(gd.ones((2, 3))).shape
    (2, 3)
"""

from __future__ import annotations

import reprlib
from collections.abc import Callable, Mapping
from typing import Any

import gpudev as gd

from .._lazy import _Uninitialized, is_lazy

__all__ = ["LazyModuleMixin", "materialize_from_state"]


class LazyModuleMixin:
    """Mixin of a layer whose parameters are placeholders until its first input.

    The layer declares ``parameter_shapes(*inputs)``: a dict from each placeholder's attribute
    name to its shape, read from the first input (and checks that input, as it is the first
    place that sees it). Its ``reset_parameters()`` initializes them, and its
    ``_lazy_materialized()`` sets the attributes the shapes decide (``in_features``) and checks
    shapes loaded by ``load_state_dict``. ``cls_to_become`` is the class it then becomes.
    """

    cls_to_become: type | None = None

    def parameter_shapes(self, *inputs: Any, **kwargs: Any) -> dict[str, tuple[int, ...]]:
        raise NotImplementedError(f"{type(self).__name__}: a lazy layer declares parameter_shapes(self, x), "
                                  f"the shapes of its placeholders for the first input x")

    def _lazy_materialized(self) -> None:
        """Every placeholder is an Array now: set what the shapes decide, check loaded shapes."""

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not its children) is a placeholder."""
        return any(is_lazy(v) for v in vars(self).values())

    def initialize_parameters(self, *inputs: Any, **kwargs: Any) -> None:
        """Materialize the placeholders with the shapes declared for `inputs` and initialize them."""
        shapes = self.parameter_shapes(*inputs, **kwargs)
        loaded = [name for name in shapes if not is_lazy(getattr(self, name))]
        if loaded:
            raise RuntimeError(
                f"{type(self).__name__}: load_state_dict gave it {sorted(loaded)} but not "
                f"{sorted(set(shapes) - set(loaded))}; load every parameter of a lazy layer, or run "
                f"the model on a dummy batch before loading part of it")
        with gd.no_grad():
            for name, shape in shapes.items():
                setattr(self, name, getattr(self, name).materialize(shape))
            self._lazy_materialized()
            self.reset_parameters()  # type: ignore[attr-defined]  # the layer's (Linear's for LazyLinear)

    def _materialize(self) -> None:
        if self.cls_to_become is not None:
            self.__class__ = self.cls_to_become

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if self.has_uninitialized_params():
            self.initialize_parameters(*inputs, **kwargs)
        self._materialize()
        return self.forward(*inputs, **kwargs)  # type: ignore[attr-defined]


def _lazy_entries(module: Any, prefix: str = "") -> list[tuple[Any, str, str, _Uninitialized]]:
    """(owner, attribute, state key, placeholder) for every placeholder under module."""
    return [(m, name, f"{mname}.{name}" if mname else name, value)
            for mname, m in module.named_modules(prefix)
            for name, value in vars(m).items() if is_lazy(value)]


def materialize_from_state(module: Any, state: Mapping[str, Any]) -> Callable[[], None]:
    """load_state_dict's first step: each placeholder whose key `state` holds as an Array becomes
    an Array of that shape (its values are copied afterwards, with the others'), and each lazy
    module left with no placeholder becomes its cls_to_become. Returns what undoes it all, for a
    load that fails later; undoes it itself when a check fails here."""
    done: list[tuple[Any, str, _Uninitialized]] = []
    switched: list[tuple[Any, type]] = []

    def undo() -> None:
        for m, cls in switched:
            m.__class__ = cls
        for m, name, placeholder in done:
            placeholder._unmaterialize()
            setattr(m, name, placeholder)

    try:
        for m, name, key, placeholder in _lazy_entries(module):
            value = state.get(key)
            if value is None or isinstance(value, _Uninitialized):
                continue  # nothing to load, or a placeholder loaded into a placeholder
            if not isinstance(value, gd.Array):
                raise TypeError(f"load_state_dict: state[{reprlib.repr(key)}] must be a gpudev Array, got "
                                f"{type(value).__name__}")
            setattr(m, name, placeholder.materialize(value.shape))
            done.append((m, name, placeholder))
        for m in {id(m): m for m, _, _ in done}.values():
            if isinstance(m, LazyModuleMixin) and not m.has_uninitialized_params():
                m._lazy_materialized()
                switched.append((m, type(m)))
                m._materialize()
    except BaseException:
        undo()
        raise
    return undo
