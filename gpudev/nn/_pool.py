"""Pooling on every device, with gradients: ``max_pool2d`` (``ceil_mode``, ``dilation``,
``return_indices``), ``avg_pool2d`` (``ceil_mode``, ``count_include_pad``,
``divisor_override``), ``adaptive_avg_pool2d`` and ``adaptive_max_pool2d``, as PyTorch's.

Each is one call of the backends' pool2d (one thread per plane on the CPU, per output element
on a GPU) and one autograd node whose rule is pool2d_backward: max pooling routes each
gradient to the position its window took (the indices, which ``return_indices`` also gives:
positions in each input plane, as PyTorch's), average pooling spreads it over the window.

    >>> import gpudev as gd
    >>> from gpudev.nn import functional as F
    >>> F.max_pool2d(gd.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
"""

from __future__ import annotations

import numbers
import reprlib
from typing import Any

import gpudev as gd
from gpudev import _C, autograd
from gpudev._grad_rules import RULES, Rule

from ._conv import spatial_ints

__all__ = ["adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d", "max_pool2d"]

MAX, AVG = 0, 1


def _input(op: str, x: Any) -> gd.Array:
    if not isinstance(x, gd.Array):
        raise TypeError(f"{op}: input must be a gpudev Array, got {type(x).__name__}; convert it with gd.asarray(x)")
    if x.ndim not in (3, 4):
        raise ValueError(f"{op}: expected a 3D (unbatched) or 4D (batched) input, (N, C, H, W) or (C, H, W), but got "
                         f"input of shape {x.shape}")
    if x.dtype not in (gd.float32, gd.float64):
        raise TypeError(f"{op}: input has dtype {x.dtype}; pooling takes float32 or float64: convert it, e.g. "
                        f"x.astype(gd.float32)")
    if any(n == 0 for n in x.shape[-3:]):
        raise ValueError(f"{op}: expected input with non-zero channels and spatial size, got shape {x.shape}")
    return x


def _out_size(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape: the last window must start inside the input or its
    left padding."""
    span = d * (k - 1) + 1
    out = (n + 2 * p - span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _geometry(op: str, x: gd.Array, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: Any) -> tuple:
    kernel = spatial_ints(op, "kernel_size", kernel_size, 2, 1)
    strides = kernel if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else \
        spatial_ints(op, "stride", stride, 2, 1)
    pads = spatial_ints(op, "padding", padding, 2, 0)
    dil = spatial_ints(op, "dilation", dilation, 2, 1)
    if any(p > k // 2 for p, k in zip(pads, kernel)):
        raise ValueError(f"{op}: pad should be at most half of the kernel size, but got padding={pads} and "
                         f"kernel_size={kernel}; pad less or use a larger kernel")
    size = x.shape[-2:]
    out = tuple(_out_size(n, k, s, p, d, bool(ceil_mode)) for n, k, s, p, d in zip(size, kernel, strides, pads, dil))
    if any(o < 1 for o in out):
        raise ValueError(f"{op}: given input of shape {x.shape}, the output size is too small: "
                         f"{out[0]}x{out[1]} (kernel_size={kernel}, stride={strides}, padding={pads}, "
                         f"dilation={dil}); use a smaller kernel or pad the input")
    return (*kernel, *strides, *pads, *dil, *out)


def _batched(x: gd.Array) -> tuple[gd.Array, bool]:
    return (x.reshape(1, *x.shape), True) if x.ndim == 3 else (x, False)


def _pool(x: gd.Array, kind: int, geom: tuple, adaptive: bool, count_include_pad: bool, divisor: int,
          with_indices: bool) -> tuple[gd.Array, gd.Array | None]:
    """(pooled, indices or None) of a checked input: one autograd node."""
    xb, unbatched = _batched(x)
    recording = gd.is_grad_enabled() and x.requires_grad
    keep = with_indices or (recording and kind == MAX)
    with gd.no_grad():
        res = _C._pool2d(xb, kind, geom, adaptive, count_include_pad, divisor, keep)
    y, idx = res if keep else (res, None)
    if recording:
        extra = (kind, geom, adaptive, count_include_pad, divisor, idx)
        _C._set_grad_fn(y, autograd._make_node("pool2d", (y.shape, y.dtype, y.device), (xb,), extra))
    if unbatched:
        y = y.reshape(*y.shape[1:])
        idx = idx.reshape(*idx.shape[1:]) if idx is not None else None
    return y, (idx if with_indices else None)


def _pool2d_backward(node: Any, g: gd.Array) -> tuple:
    kind, geom, adaptive, count_include_pad, divisor, idx = node.extra
    shape = tuple(node.metas[0][0])
    return (_C._pool2d_backward(g, kind, geom, adaptive, count_include_pad, divisor, idx, shape),)


RULES["pool2d"] = Rule(_pool2d_backward, saves=False)  # reads only the indices (extra)


def max_pool2d(input: gd.Array, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """The largest value of each window (stride defaults to kernel_size); with
    ``return_indices`` also its position in its input plane (int64), as PyTorch's."""
    return max_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool(op: str, input: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,  # noqa: A002
             ceil_mode: Any, return_indices: Any) -> Any:
    """max_pool2d with `op` naming the caller in messages."""
    x = _input(op, input)
    geom = _geometry(op, x, kernel_size, stride, padding, dilation, ceil_mode)
    y, idx = _pool(x, MAX, geom, False, False, 0, bool(return_indices))
    return (y, idx) if return_indices else y


def avg_pool2d(input: gd.Array, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: int | None = None) -> gd.Array:
    """The mean of each window: its sum over the part inside the input divided by the window's
    size (counting padding when ``count_include_pad``) or by ``divisor_override``."""
    return avg_pool("avg_pool2d", input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override)


def check_divisor(op: str, divisor_override: Any) -> int:
    """divisor_override as an int, 0 for None; ValueError for anything but a positive int."""
    if divisor_override is None:
        return 0
    if not isinstance(divisor_override, numbers.Integral) or isinstance(divisor_override, bool) or \
            divisor_override <= 0:
        raise ValueError(f"{op}: divisor_override must be a positive int or None, got "
                         f"{reprlib.repr(divisor_override)}")
    return int(divisor_override)


def avg_pool(op: str, input: Any, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any,  # noqa: A002
             count_include_pad: Any, divisor_override: Any) -> gd.Array:
    """avg_pool2d with `op` naming the caller in messages."""
    x = _input(op, input)
    divisor = check_divisor(op, divisor_override)
    geom = _geometry(op, x, kernel_size, stride, padding, 1, ceil_mode)
    return _pool(x, AVG, geom, False, bool(count_include_pad), divisor, False)[0]


def _adaptive_geometry(op: str, x: gd.Array, output_size: Any) -> tuple:
    items = tuple(output_size) if isinstance(output_size, (tuple, list)) else (output_size, output_size)
    if len(items) != 2:
        raise TypeError(f"{op}: output_size must be an int or a pair (None keeps the input's size), got "
                        f"{reprlib.repr(output_size)}")
    size = tuple(n if o is None else o for o, n in zip(items, x.shape[-2:]))
    if not all(isinstance(o, numbers.Integral) and not isinstance(o, bool) and o >= 1 for o in size):
        raise ValueError(f"{op}: output_size must hold positive ints (or None), got {reprlib.repr(output_size)}")
    return (1, 1, 1, 1, 0, 0, 1, 1, int(size[0]), int(size[1]))


def adaptive_avg_pool2d(input: gd.Array, output_size: Any) -> gd.Array:  # noqa: A002
    """The mean over PyTorch's adaptive windows: output (i, j) averages input rows
    [floor(i H / oH), ceil((i + 1) H / oH)) and the columns alike."""
    return adaptive_pool("adaptive_avg_pool2d", AVG, input, output_size, False)


def adaptive_max_pool2d(input: gd.Array, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002
    """The largest value over PyTorch's adaptive windows, and its position with return_indices."""
    return adaptive_pool("adaptive_max_pool2d", MAX, input, output_size, return_indices)


def adaptive_pool(op: str, kind: int, input: Any, output_size: Any, return_indices: Any) -> Any:  # noqa: A002
    """adaptive_avg_pool2d (kind AVG) or adaptive_max_pool2d (MAX), `op` naming the caller."""
    x = _input(op, input)
    y, idx = _pool(x, kind, _adaptive_geometry(op, x, output_size), True, False, 0, bool(return_indices))
    return (y, idx) if return_indices else y
