"""Convolution and pooling layers, as in torch.nn: Conv1d, Conv2d, LazyConv2d, MaxPool2d,
AvgPool2d, AdaptiveAvgPool2d and AdaptiveMaxPool2d, with PyTorch's parameter names, defaults,
initialization and messages (each names the layer).

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> net = nn.Sequential(nn.Conv2d(1, 6, kernel_size=5, padding=2), nn.Sigmoid(),
    ...                     nn.AvgPool2d(kernel_size=2, stride=2))
    >>> net(gd.rand(2, 1, 28, 28)).shape
    (2, 6, 14, 14)
"""

from __future__ import annotations

import math
import numbers
import reprlib
from typing import Any

import numpy as np

import gpudev as gd

from .._devices import DeviceLike
from .._lazy import UninitializedParameter
from ._conv import PADDING_MODES, convolution, pad_modes, spatial_ints
from ._pool import AVG, MAX, adaptive_pool, avg_pool, check_divisor, max_pool
from .lazy import LazyModuleMixin
from .module import Module, Parameter

__all__ = ["AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "AvgPool2d", "Conv1d", "Conv2d", "LazyConv2d", "MaxPool2d"]


def _float_dtype(op: str, dtype: Any) -> np.dtype:
    # None means gpudev's default dtype, float32, as for Linear
    dt = np.dtype(np.float32 if dtype is None else dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{op}: dtype must be gd.float32 or gd.float64, got {dt}")
    return dt


def _positive(op: str, name: str, value: Any) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{op}: {name} must be a positive int, got {reprlib.repr(value)}")
    return int(value)


class _ConvNd(Module):
    """What Conv1d and Conv2d share: the arguments' checks, the parameters and the forward."""

    _dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 dilation: Any = 1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device: DeviceLike | None = None, dtype: Any = None) -> None:
        super().__init__()
        self._configure(out_channels, kernel_size, stride, padding, dilation, groups, padding_mode)
        self._make_parameters(in_channels, bias, device, _float_dtype(type(self).__name__, dtype))

    def _configure(self, out_channels: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any, groups: Any,
                   padding_mode: Any) -> None:
        """Every argument but in_channels, checked and set."""
        op, n = type(self).__name__, self._dims
        self.groups = _positive(op, "groups", groups)
        self.out_channels = _positive(op, "out_channels", out_channels)
        if self.out_channels % self.groups:
            raise ValueError(f"{op}: out_channels must be divisible by groups, got out_channels={out_channels} and "
                             f"groups={groups}")
        self.kernel_size = spatial_ints(op, "kernel_size", kernel_size, n, 1)
        self.stride = spatial_ints(op, "stride", stride, n, 1)
        self.dilation = spatial_ints(op, "dilation", dilation, n, 1)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{op}: invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{op}: padding='same' is not supported for strided convolutions "
                                 f"(stride={self.stride})")
            self.padding: Any = padding
        else:
            self.padding = spatial_ints(op, "padding", padding, n, 0)
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"{op}: padding_mode must be one of {list(PADDING_MODES)}, but got "
                             f"padding_mode={padding_mode!r}")
        self.padding_mode = padding_mode
        self.output_padding, self.transposed = (0,) * n, False

    def _make_parameters(self, in_channels: int, bias: bool, device: DeviceLike | None, dt: np.dtype) -> None:
        op = type(self).__name__
        self.in_channels = _positive(op, "in_channels", in_channels)
        if self.in_channels % self.groups:
            raise ValueError(f"{op}: in_channels must be divisible by groups, got in_channels={in_channels} and "
                             f"groups={self.groups}")
        shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self.weight = Parameter(gd.zeros(shape, dtype=dt, device=device))
        self.bias = Parameter(gd.zeros(self.out_channels, dtype=dt, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw weight and bias again, in place: PyTorch's default, kaiming_uniform_(a=sqrt(5))
        for the weight and a uniform bias, both within +-1/sqrt(fan_in), fan_in = in_channels /
        groups * the kernel's size; drawn with ``gd.rand``, so ``gd.manual_seed`` makes them the
        same on every device."""
        bound = 1.0 / math.sqrt(self.weight.size // self.weight.shape[0])
        with gd.no_grad():
            for p in (self.weight, self.bias):
                if p is not None:
                    p[...] = gd.rand(*p.shape, dtype=p.dtype, device=p.device) * (2.0 * bound) - bound

    def _padded(self, x: gd.Array) -> gd.Array:
        """x padded by padding_mode (reflect, replicate, circular), before a convolution
        without padding, as PyTorch's layers do."""
        if self.padding == "valid":
            return x
        if self.padding == "same":
            total = [d * (k - 1) for k, d in zip(self.kernel_size, self.dilation)]
            pads = tuple((t // 2, t - t // 2) for t in total)
        else:
            pads = tuple((p, p) for p in self.padding)
        return pad_modes(type(self).__name__, x, pads, self.padding_mode)

    def forward(self, x: gd.Array) -> gd.Array:
        op = type(self).__name__
        if not isinstance(x, gd.Array):
            raise TypeError(f"{op}: input must be a gpudev Array, got {type(x).__name__}; convert it with "
                            f"gd.asarray(x)")
        n = self._dims
        if x.ndim in (n + 1, n + 2) and x.shape[-n - 1] != self.in_channels:
            raise ValueError(f"{op}: expected input with in_channels={self.in_channels} channels (axis "
                             f"{x.ndim - n - 1} of shape {x.shape}), got {x.shape[-n - 1]}; give the layer "
                             f"in_channels={x.shape[-n - 1]} or reshape the input")
        if self.padding_mode != "zeros":
            return convolution(op, n, self._padded(x), self.weight, self.bias, self.stride, 0, self.dilation,
                               self.groups)
        return convolution(op, n, x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._dims:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) else f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) inputs, or (C, H, W) unbatched, as torch.nn.Conv2d:
    weight (out_channels, in_channels / groups, kH, kW) and bias (out_channels,), both drawn
    uniform in +-1/sqrt(fan_in) with ``gd.rand`` (``gd.manual_seed`` makes them the same on
    every device). ``padding`` is an int, a pair, ``'valid'`` or ``'same'``; ``padding_mode``
    is ``'zeros'``, ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Example:
        >>> conv = nn.Conv2d(1, 1, kernel_size=(1, 2), bias=False)
        >>> conv(gd.ones((1, 1, 6, 8))).shape
        (1, 1, 6, 7)
    """

    _dims = 2


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) inputs, or (C, L) unbatched, as torch.nn.Conv1d: weight
    (out_channels, in_channels / groups, k)."""

    _dims = 1


# ---------------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------------


class MaxPool2d(Module):
    """The largest value of each window, as torch.nn.MaxPool2d (stride defaults to
    kernel_size); with return_indices, also its position in its input plane.

    Example:
        >>> nn.MaxPool2d(2)(gd.arange(16.0).reshape(1, 1, 4, 4)).tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        spatial_ints("MaxPool2d", "kernel_size", kernel_size, 2, 1)
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, x: gd.Array) -> Any:
        return max_pool("MaxPool2d", x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                        self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """The mean of each window, as torch.nn.AvgPool2d: with count_include_pad the padding
    counts in the window's size; divisor_override replaces that size.

    Example:
        >>> nn.AvgPool2d(2)(gd.arange(16.0).reshape(1, 1, 4, 4)).tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
    """

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        spatial_ints("AvgPool2d", "kernel_size", kernel_size, 2, 1)
        check_divisor("AvgPool2d", divisor_override)
        self.kernel_size, self.stride = kernel_size, stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, x: gd.Array) -> gd.Array:
        return avg_pool("AvgPool2d", x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """The mean over windows that cut the input into output_size (an int, a pair, None for
    the input's size), as torch.nn.AdaptiveAvgPool2d.

    Example:
        >>> nn.AdaptiveAvgPool2d((1, 1))(gd.ones((2, 3, 7, 7))).shape
        (2, 3, 1, 1)
    """

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, x: gd.Array) -> gd.Array:
        return adaptive_pool("AdaptiveAvgPool2d", AVG, x, self.output_size, False)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """The largest value over windows that cut the input into output_size, as
    torch.nn.AdaptiveMaxPool2d."""

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, x: gd.Array) -> Any:
        return adaptive_pool("AdaptiveMaxPool2d", MAX, x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


# ---------------------------------------------------------------------------------------------
# LazyConv2d: in_channels from the first input (the lazy-layer mechanism of lazy.py)
# ---------------------------------------------------------------------------------------------


class LazyConv2d(LazyModuleMixin, Conv2d):
    """A Conv2d whose in_channels is the channel axis of its first input, as
    torch.nn.LazyConv2d: weight and bias are ``nn.UninitializedParameter`` placeholders until
    the first call (an optimizer may be built on them), which draws them as Conv2d does and
    makes the layer a plain ``nn.Conv2d``.

    Example:
        >>> net = nn.Sequential(nn.LazyConv2d(6, kernel_size=5, padding=2), nn.Sigmoid())
        >>> net(gd.rand(2, 1, 28, 28)).shape, net[0].weight.shape
        ((2, 6, 28, 28), (6, 1, 5, 5))
    """

    cls_to_become = Conv2d

    def __init__(self, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device: DeviceLike | None = None,
                 dtype: Any = None) -> None:
        Module.__init__(self)
        self._configure(out_channels, kernel_size, stride, padding, dilation, groups, padding_mode)
        dt = _float_dtype("LazyConv2d", dtype)
        self.in_channels = 0
        self.weight = UninitializedParameter(device=device, dtype=dt)
        self.bias = UninitializedParameter(device=device, dtype=dt) if bias else None

    def parameter_shapes(self, x: gd.Array) -> dict[str, tuple[int, ...]]:
        """weight (out_channels, C / groups, *kernel_size) and bias (out_channels,) for an input
        (N, C, H, W) or (C, H, W)."""
        if not isinstance(x, gd.Array) or x.ndim not in (3, 4):
            raise ValueError(f"LazyConv2d: the first input fixes in_channels from its channel axis and must be "
                             f"(N, C, H, W) or (C, H, W), got {getattr(x, 'shape', type(x).__name__)}")
        channels = x.shape[-3]
        if channels == 0 or channels % self.groups:
            raise ValueError(f"LazyConv2d: the first input has {channels} channels (shape {x.shape}), which "
                             f"groups={self.groups} must divide")
        shapes = {"weight": (self.out_channels, channels // self.groups, *self.kernel_size)}
        if self.bias is not None:
            shapes["bias"] = (self.out_channels,)
        return shapes

    def _lazy_materialized(self) -> None:
        w, b = self.weight, self.bias
        want = (self.out_channels, "in_channels / groups", *self.kernel_size)
        if w.ndim != 4 or w.shape[0] != self.out_channels or w.shape[2:] != self.kernel_size or w.shape[1] == 0 or (
                b is not None and b.shape != (self.out_channels,)):
            raise ValueError(f"load_state_dict: LazyConv2d takes a weight of shape {want} and a bias of shape "
                             f"({self.out_channels},), got {w.shape} and {None if b is None else b.shape}")
        self.in_channels = w.shape[1] * self.groups
