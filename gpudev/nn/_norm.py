"""Batch normalization on every device, with gradients: ``batch_norm`` as PyTorch's.

In training the input is normalized by the batch's own mean and (biased) variance per channel
(axis 1), and the running statistics, when given, move toward the batch's: running_mean =
(1 - momentum) * running_mean + momentum * mean, and running_var the same with the unbiased
variance, in place and on the device (no host round trip). In evaluation the running
statistics normalize. One autograd node, whose rule is the closed form of the gradient
through the batch's statistics.

    >>> import gpudev as gd
    >>> from gpudev.nn import functional as F
    >>> y = F.batch_norm(gd.array([[1.0], [3.0]]), None, None, training=True)
    >>> [round(v, 3) for v in y.reshape(2).tolist()]
    [-1.0, 1.0]
"""

from __future__ import annotations

import numbers
from typing import Any

import gpudev as gd
from gpudev import _C, autograd
from gpudev._devices import device_label
from gpudev._grad_rules import RULES, Rule

__all__ = ["batch_norm"]


def _check(op: str, x: Any, named: dict[str, Any]) -> None:
    if not isinstance(x, gd.Array):
        raise TypeError(f"{op}: input must be a gpudev Array, got {type(x).__name__}; convert it with gd.asarray(x)")
    if x.ndim < 2:
        raise ValueError(f"{op}: input must have a batch and a channel axis, (N, C, ...), got shape {x.shape}")
    if x.dtype not in (gd.float32, gd.float64):
        raise TypeError(f"{op}: input has dtype {x.dtype}; batch_norm takes float32 or float64: convert it, e.g. "
                        f"x.astype(gd.float32)")
    channels = x.shape[1]
    for name, a in named.items():
        if a is None:
            continue
        if not isinstance(a, gd.Array):
            raise TypeError(f"{op}: {name} must be a gpudev Array or None, got {type(a).__name__}")
        if a.shape != (channels,):
            raise ValueError(f"{op}: {name} must be ({channels},), one value per channel of the input of shape "
                             f"{x.shape}, got shape {a.shape}")
        if a.device != x.device:
            raise gd.DeviceMismatchError(f"{op}: {name} is on {device_label(a.device)} but the input is on "
                                         f"{device_label(x.device)}; move one, e.g. model.to('{x.device}')")
        if a.dtype != x.dtype:
            raise TypeError(f"{op}: {name} has dtype {a.dtype} but the input has {x.dtype}; convert one, e.g. "
                            f"model.to(gd.{x.dtype})")


def batch_norm(input: gd.Array, running_mean: gd.Array | None, running_var: gd.Array | None,  # noqa: A002
               weight: gd.Array | None = None, bias: gd.Array | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> gd.Array:
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (axis 1) of x (N, C, ...):
    the batch's statistics when training (updating the running ones, when given), the
    running statistics otherwise."""
    return batch_norm_checked("batch_norm", input, running_mean, running_var, weight, bias, training, momentum, eps)


def batch_norm_checked(op: str, x: Any, running_mean: Any, running_var: Any, weight: Any, bias: Any,
                       training: bool, momentum: Any, eps: Any) -> gd.Array:
    """batch_norm with `op` naming the caller in messages."""
    _check(op, x, {"running_mean": running_mean, "running_var": running_var, "weight": weight, "bias": bias})
    if not isinstance(eps, numbers.Real) or not eps > 0:
        raise ValueError(f"{op}: eps must be a positive number, got {eps!r}")
    if not isinstance(momentum, (numbers.Real, gd.Array)) or isinstance(momentum, bool):  # an Array: the
        raise TypeError(f"{op}: momentum must be a number, got {momentum!r}")  # layers' 1 / batches
    if not training and (running_mean is None or running_var is None):
        raise ValueError(f"{op}: evaluation needs running_mean and running_var; pass them, or training=True to "
                         f"normalize by the batch's own statistics")
    axes = (0,) + tuple(range(2, x.ndim))
    count = x.size // x.shape[1]
    if training and count <= 1:
        raise ValueError(f"{op}: expected more than 1 value per channel when training, got input of shape {x.shape}; "
                         f"use a batch of at least 2 (or call model.eval())")
    stat_shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    recording = gd.is_grad_enabled() and any(a is not None and a.requires_grad for a in (x, weight, bias))
    with gd.no_grad():
        if training:
            mean = x.mean(axis=axes)
            centered = x - mean.reshape(stat_shape)
            var = (centered * centered).mean(axis=axes)
            if running_mean is not None:
                running_mean *= 1.0 - momentum
                running_mean += momentum * mean
            if running_var is not None:
                running_var *= 1.0 - momentum
                running_var += (momentum * count / (count - 1)) * var
        else:
            mean, var = running_mean, running_var
            centered = x - mean.reshape(stat_shape)
        invstd = 1.0 / gd.sqrt(var + eps)
        xhat = centered
        xhat *= invstd.reshape(stat_shape)  # in place: one array the size of x less at the peak
        y = xhat * weight.reshape(stat_shape) if weight is not None else xhat.copy()
        if bias is not None:
            y += bias.reshape(stat_shape)
    if recording:
        extra = (xhat, invstd, bool(training), stat_shape, axes)
        _C._set_grad_fn(y, autograd._make_node("batch_norm", (y.shape, y.dtype, y.device), (x, weight, bias),
                                               extra))
    return y


def _batch_norm_backward(node: Any, g: gd.Array) -> tuple:
    _, weight, _ = node.inputs
    xhat, invstd, training, stat_shape, axes = node.extra
    need_x, need_w, need_b = node.needs
    gb = g.sum(axis=axes) if need_b or (need_x and training) else None
    gw = (g * xhat).sum(axis=axes) if need_w or (need_x and training) else None
    gx = None
    if need_x:
        scale = invstd if weight is None else invstd * weight
        if training:  # through the batch's mean and variance too
            count = g.size // g.shape[1]
            gx = (g - (gb / count).reshape(stat_shape) - xhat * (gw / count).reshape(stat_shape))
            gx *= scale.reshape(stat_shape)
        else:
            gx = g * scale.reshape(stat_shape)
    return gx, (gw if need_w else None), (gb if need_b else None)


RULES["batch_norm"] = Rule(_batch_norm_backward, saves=(False, True, False))  # reads the weight's value
