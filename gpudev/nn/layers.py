"""Layers: Linear, LazyLinear, ReLU, Sigmoid, Tanh, Flatten, Dropout and Sequential, as in
torch.nn.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> net = nn.Sequential(nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 10))
    >>> net(gd.randn(4, 10)).shape
    (4, 10)
"""

from __future__ import annotations

import reprlib

import math
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np

import gpudev as gd

from .._devices import DeviceLike, device_label
from .._lazy import UninitializedParameter
from .functional import dropout, linear
from .lazy import LazyModuleMixin
from .module import Module, Parameter, _check_array

__all__ = ["Dropout", "Flatten", "LazyLinear", "Linear", "ReLU", "Sequential", "Sigmoid", "Tanh"]


def _float_dtype(op: str, dtype: Any) -> np.dtype:
    # None means gpudev's default dtype, as in gd.zeros (np.dtype(None) would be float64).
    dt = np.dtype(np.float32 if dtype is None else dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{op}: dtype must be gd.float32 or gd.float64, got {dt}")
    return dt


class Linear(Module):
    """y = x @ weight.T + bias, with weight of shape (out_features, in_features) as in PyTorch.

    ``dtype`` is float32 (the default, also for None) or float64. Weight and bias start
    uniform in [-1/sqrt(in_features), 1/sqrt(in_features)), drawn with ``gd.rand``:
    ``gd.manual_seed`` makes them the same on every device.

    Example:
        >>> gd.manual_seed(0)
        >>> lin = nn.Linear(10, 512, device=gd.try_gpu())
        >>> lin(gd.randn(4, 10, device=gd.try_gpu())).shape
        (4, 512)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: DeviceLike | None = None, dtype: Any = None) -> None:
        super().__init__()
        _check_features("Linear", "in_features", in_features)
        self.out_features = _check_features("Linear", "out_features", out_features)
        self.in_features = int(in_features)
        dt = _float_dtype("Linear", dtype)
        self.weight = Parameter(gd.zeros((self.out_features, self.in_features), dtype=dt, device=device))
        self.bias = Parameter(gd.zeros(self.out_features, dtype=dt, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw weight and bias again, uniform in +-1/sqrt(in_features) (PyTorch's default), in place."""
        bound = 1.0 / math.sqrt(self.in_features)
        with gd.no_grad():
            for p in (self.weight, self.bias):
                if p is not None:
                    p[...] = gd.rand(*p.shape, dtype=p.dtype, device=p.device) * (2.0 * bound) - bound

    def forward(self, x: gd.Array) -> gd.Array:
        """x is (..., in_features); returns (..., out_features)."""
        _check_array("Linear", "x", x)
        if x.device != self.weight.device:
            raise gd.DeviceMismatchError(
                f"Linear: input is on {device_label(x.device)} but the module's parameters are on "
                f"{device_label(self.weight.device)}; move one of them, e.g. x.to('{self.weight.device}') or "
                f"net.to('{x.device}')")
        if x.dtype != self.weight.dtype:
            raise TypeError(f"Linear: input has dtype {x.dtype} but the parameters are "
                            f"{self.weight.dtype}; convert it, e.g. x.astype(gd.{self.weight.dtype})")
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"Linear: input of shape {x.shape} has "
                             f"{x.shape[-1] if x.ndim else 'no'} features in its last "
                             f"dimension but the layer expects in_features={self.in_features}")
        return linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


def _check_features(op: str, name: str, value: Any) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{op}: {name} must be a positive int, got {reprlib.repr(value)}")
    return int(value)


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear layer whose in_features is the last dimension of its first input.

    Until the first call ``weight`` and ``bias`` are ``nn.UninitializedParameter``
    placeholders: ``parameters()`` lists them and an optimizer may be built on them, as in
    PyTorch. The first call (or ``load_state_dict``) makes them Arrays, on the device and dtype
    given here or by a later ``module.to(...)``, drawn as Linear draws them, and the layer
    becomes a plain ``nn.Linear``.

    Example:
        >>> net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
        >>> opt = gd.optim.SGD(net.parameters(), lr=0.1)  # before the first forward
        >>> net(gd.rand(2, 20)).shape, net[0].weight.shape
        ((2, 1), (8, 20))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: DeviceLike | None = None,
                 dtype: Any = None) -> None:
        Module.__init__(self)
        self.out_features = _check_features("LazyLinear", "out_features", out_features)
        self.in_features = 0
        dt = _float_dtype("LazyLinear", dtype)
        self.weight = UninitializedParameter(device=device, dtype=dt)
        self.bias = UninitializedParameter(device=device, dtype=dt) if bias else None

    def parameter_shapes(self, x: gd.Array) -> dict[str, tuple[int, ...]]:
        """weight (out_features, x.shape[-1]) and bias (out_features,)."""
        _check_array("LazyLinear", "x", x)
        if x.ndim == 0 or x.shape[-1] == 0:
            raise ValueError(f"LazyLinear: the first input fixes in_features from its last "
                             f"dimension, but it has shape {x.shape}")
        shapes = {"weight": (self.out_features, x.shape[-1])}
        if self.bias is not None:
            shapes["bias"] = (self.out_features,)
        return shapes

    def _lazy_materialized(self) -> None:
        w, b = self.weight, self.bias
        if w.ndim != 2 or w.shape[0] != self.out_features or w.shape[1] == 0 or (
                b is not None and b.shape != (self.out_features,)):
            raise ValueError(f"load_state_dict: LazyLinear(out_features={self.out_features}) takes a "
                             f"weight of shape ({self.out_features}, in_features) and a bias of shape "
                             f"({self.out_features},), got {w.shape} and {None if b is None else b.shape}")
        self.in_features = w.shape[1]


class ReLU(Module):
    """max(x, 0) elementwise.

    Example:
        >>> nn.ReLU()(gd.array([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """

    def forward(self, x: gd.Array) -> gd.Array:
        _check_array("ReLU", "x", x)
        return gd.relu(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)) elementwise (stable for any x)."""

    def forward(self, x: gd.Array) -> gd.Array:
        _check_array("Sigmoid", "x", x)
        return gd.sigmoid(x)


class Tanh(Module):
    """tanh(x) elementwise."""

    def forward(self, x: gd.Array) -> gd.Array:
        _check_array("Tanh", "x", x)
        return gd.tanh(x)


class Flatten(Module):
    """(N, d1, d2, ...) -> (N, d1 * d2 * ...): the axes start_dim..end_dim become one."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x: gd.Array) -> gd.Array:
        _check_array("Flatten", "x", x)
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Dropout(Module):
    """In training, zero each element with probability p and scale the rest by 1/(1-p);
    in evaluation (``model.eval()``), pass x through."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be a probability in [0, 1], got {reprlib.repr(p)}")
        self.p = float(p)

    def forward(self, x: gd.Array) -> gd.Array:
        _check_array("Dropout", "x", x)
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Sequential(Module):
    """Layers applied in order. Indexable like a list; ``add_module(name, m)`` appends one
    under its name (PyTorch's children of a Sequential are named '0', '1', ... otherwise).

    Example:
        >>> net = nn.Sequential(nn.Linear(10, 512), nn.ReLU(), nn.Linear(512, 10))
        >>> net[0].weight.device, len(net)
        (Device('cpu'), 3)
    """

    def __init__(self, *layers: Module) -> None:
        super().__init__()
        self._named: dict[str, Module] = {}
        for i, layer in enumerate(layers):
            if not isinstance(layer, Module):
                raise TypeError(f"Sequential: layer {i} is not an nn.Module (got "
                                f"{type(layer).__name__})")
            self._named[str(i)] = layer

    @property
    def layers(self) -> list[Module]:
        return list(self._named.values())

    def add_module(self, name: str, module: Module | None) -> None:
        """Append `module` as the layer called `name` (replacing one of that name in place)."""
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"add_module: the name must be a non-empty str without '.', got {reprlib.repr(name)}")
        if not isinstance(module, Module):
            raise TypeError(f"add_module: {reprlib.repr(name)} must be an nn.Module, got {type(module).__name__}")
        self._named[name] = module

    register_module = add_module

    def append(self, module: Module) -> Sequential:
        """Add `module` at the end; returns self."""
        self.add_module(str(len(self._named)), module)
        return self

    def named_children(self) -> Iterator[tuple[str, Module]]:
        yield from self._named.items()

    def __getattr__(self, name: str) -> Module:  # net.block0 for a layer added by name
        named = self.__dict__.get("_named", {})
        if name in named:
            return named[name]
        raise AttributeError(f"'Sequential' object has no attribute {reprlib.repr(name)}")

    def __getitem__(self, index: int | slice) -> Module:
        if isinstance(index, slice):
            return Sequential(*self.layers[index])
        return self.layers[index]

    def __len__(self) -> int:
        return len(self._named)

    def __iter__(self) -> Iterator[Module]:
        return iter(self.layers)

    def forward(self, x: gd.Array) -> gd.Array:
        for layer in self._named.values():
            x = layer(x)
        return x
