"""Initializers as ``torch.nn.init``: each fills an array in place (without recording a
gradient) and returns it. Random ones draw with gpudev's generator on the array's device, so
``gd.manual_seed`` makes them repeatable; the fans of a (out, in, ...) weight are PyTorch's.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> def init(m):
    ...     if isinstance(m, nn.Linear):
    ...         nn.init.normal_(m.weight, mean=0, std=0.01)
    ...         nn.init.zeros_(m.bias)
    >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).apply(init)
    >>> net[0].bias.tolist() == [0.0] * 8
    True
"""

from __future__ import annotations

import math
import reprlib
import warnings
from typing import Any

import gpudev as gd

from .module import _check_array

__all__ = ["calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_",
           "ones_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_"]


def _filled(op: str, tensor: Any, fill: Any) -> gd.Array:
    _check_array(f"init.{op}", "tensor", tensor)
    with gd.no_grad():
        fill(tensor)
    return tensor


def uniform_(tensor: gd.Array, a: float = 0.0, b: float = 1.0) -> gd.Array:
    """Uniform in [a, b); a > b raises PyTorch's error (a ValueError and a RuntimeError)."""
    return _filled("uniform_", tensor, lambda t: t.uniform_(a, b))


def normal_(tensor: gd.Array, mean: float = 0.0, std: float = 1.0) -> gd.Array:
    """Normal with `mean` and `std`; std < 0 raises PyTorch's error (a ValueError and a
    RuntimeError)."""
    return _filled("normal_", tensor, lambda t: t.normal_(mean, std))


def constant_(tensor: gd.Array, val: Any) -> gd.Array:
    """Every element `val`."""
    return _filled("constant_", tensor, lambda t: t.fill_(val))


def zeros_(tensor: gd.Array) -> gd.Array:
    """Every element 0."""
    return constant_(tensor, 0)


def ones_(tensor: gd.Array) -> gd.Array:
    """Every element 1."""
    return constant_(tensor, 1)


def _no_op(op: str, tensor: gd.Array) -> bool:
    """Whether tensor has no elements: PyTorch's kaiming_* then warn and return it unchanged
    (its fans could be 0, a division by zero). gpudev's xavier_* do the same, where PyTorch's
    fill an empty weight with one zero fan and raise ZeroDivisionError when both are 0."""
    _check_array(f"init.{op}", "tensor", tensor)
    if tensor.size:
        return False
    warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
    return True


def _fans(op: str, tensor: gd.Array) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight shaped (out, in, *kernel), as PyTorch counts them."""
    _check_array(f"init.{op}", "tensor", tensor)
    if tensor.ndim < 2:
        raise ValueError(f"init.{op}: fan in and fan out need an array of at least 2 dimensions, "
                         f"got shape {tensor.shape}")
    field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * field, tensor.shape[0] * field


_GAINS = {"linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0, "sigmoid": 1.0,
          "tanh": 5.0 / 3.0, "relu": math.sqrt(2.0), "selu": 0.75}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The scale PyTorch recommends for a nonlinearity ('relu': sqrt(2), 'tanh': 5/3, ...)."""
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity not in _GAINS:
        raise ValueError(f"init.calculate_gain: unknown nonlinearity {reprlib.repr(nonlinearity)}; use one "
                         f"of {sorted(_GAINS) + ['leaky_relu']}")
    return _GAINS[nonlinearity]


def xavier_uniform_(tensor: gd.Array, gain: float = 1.0) -> gd.Array:
    """Uniform in +-gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""
    if _no_op("xavier_uniform_", tensor):
        return tensor
    fan_in, fan_out = _fans("xavier_uniform_", tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: gd.Array, gain: float = 1.0) -> gd.Array:
    """Normal with std gain * sqrt(2 / (fan_in + fan_out))."""
    if _no_op("xavier_normal_", tensor):
        return tensor
    fan_in, fan_out = _fans("xavier_normal_", tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(op: str, tensor: gd.Array, a: float, mode: str, nonlinearity: str) -> float:
    fan_in, fan_out = _fans(op, tensor)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"init.{op}: mode must be 'fan_in' or 'fan_out', got {reprlib.repr(mode)}")
    return calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)


def kaiming_uniform_(tensor: gd.Array, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu") -> gd.Array:
    """Uniform in +-sqrt(3) * gain / sqrt(fan) (He et al.)."""
    if _no_op("kaiming_uniform_", tensor):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std("kaiming_uniform_", tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor: gd.Array, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu") -> gd.Array:
    """Normal with std gain / sqrt(fan) (He et al.)."""
    if _no_op("kaiming_normal_", tensor):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std("kaiming_normal_", tensor, a, mode, nonlinearity))
