"""Batch normalization layers, as in torch.nn: BatchNorm1d, BatchNorm2d and their lazy forms, with PyTorch's
parameters (weight ones, bias zeros, when ``affine``), buffers (running_mean zeros,
running_var ones, num_batches_tracked, when ``track_running_stats``), ``momentum`` (None: a
cumulative average) and ``train()``/``eval()`` switching between the batch's statistics and
the running ones.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> bn = nn.BatchNorm2d(3)
    >>> bn(gd.randn(4, 3, 5, 5)).shape, bn.running_mean.shape
    ((4, 3, 5, 5), (3,))
"""

from __future__ import annotations

import numbers
import reprlib
from typing import Any

import numpy as np

import gpudev as gd

from .._devices import DeviceLike
from .._lazy import UninitializedBuffer, UninitializedParameter
from ._norm import batch_norm_checked
from .lazy import LazyModuleMixin
from .module import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "LazyBatchNorm1d", "LazyBatchNorm2d"]


def _float_dtype(op: str, dtype: Any) -> np.dtype:
    dt = np.dtype(np.float32 if dtype is None else dtype)  # None: gpudev's default, float32
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{op}: dtype must be gd.float32 or gd.float64, got {dt}")
    return dt


class _BatchNorm(Module):
    """What BatchNorm1d and BatchNorm2d share; subclasses say which input ranks they take."""

    _ranks: tuple[int, ...] = (4,)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: DeviceLike | None = None, dtype: Any = None) -> None:
        super().__init__()
        op = type(self).__name__
        if not isinstance(num_features, numbers.Integral) or isinstance(num_features, bool) or num_features < 1:
            raise ValueError(f"{op}: num_features must be a positive int, got {reprlib.repr(num_features)}")
        self._configure(op, eps, momentum, affine, track_running_stats)
        self.num_features = int(num_features)
        dt = _float_dtype(op, dtype)
        self._make_parameters(self.num_features, device, dt)

    def _configure(self, op: str, eps: Any, momentum: Any, affine: Any, track_running_stats: Any) -> None:
        """Every argument but num_features, device and dtype, checked and set."""
        if not isinstance(eps, numbers.Real) or not eps > 0:
            raise ValueError(f"{op}: eps must be a positive number, got {reprlib.repr(eps)}")
        if momentum is not None and (not isinstance(momentum, numbers.Real) or isinstance(momentum, bool)):
            raise TypeError(f"{op}: momentum must be a number or None (a cumulative average), got "
                            f"{reprlib.repr(momentum)}")
        self.eps, self.momentum = eps, momentum
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)

    def _make_parameters(self, n: int, device: DeviceLike | None, dt: np.dtype) -> None:
        self.num_features = n
        self.weight = Parameter(gd.ones(n, dtype=dt, device=device)) if self.affine else None
        self.bias = Parameter(gd.zeros(n, dtype=dt, device=device)) if self.affine else None
        stats = self.track_running_stats
        self.register_buffer("running_mean", gd.zeros(n, dtype=dt, device=device) if stats else None)
        self.register_buffer("running_var", gd.ones(n, dtype=dt, device=device) if stats else None)
        self.register_buffer("num_batches_tracked", gd.zeros((), dtype=gd.int64, device=device) if stats else None)

    def reset_running_stats(self) -> None:
        """running_mean to zeros, running_var to ones, num_batches_tracked to 0, in place."""
        if self.running_mean is not None:
            with gd.no_grad():
                self.running_mean[...] = 0.0
                self.running_var[...] = 1.0
        if getattr(self, "num_batches_tracked", None) is not None:
            with gd.no_grad():
                self.num_batches_tracked[...] = 0

    def reset_parameters(self) -> None:
        """The running statistics reset, weight to ones and bias to zeros, in place."""
        self.reset_running_stats()
        if self.weight is not None:
            with gd.no_grad():
                self.weight[...] = 1.0
                self.bias[...] = 0.0

    def _check_input(self, x: Any) -> None:
        op = type(self).__name__
        if not isinstance(x, gd.Array):
            raise TypeError(f"{op}: input must be a gpudev Array, got {type(x).__name__}; convert it with "
                            f"gd.asarray(x)")
        if x.ndim not in self._ranks:
            ranks = " or ".join(f"{r}D" for r in self._ranks)
            raise ValueError(f"{op}: expected {ranks} input (got {x.ndim}D input of shape {x.shape})")
        if x.shape[1] != self.num_features:
            raise ValueError(f"{op}: input of shape {x.shape} has {x.shape[1]} channels (axis 1) but the layer was "
                             f"built with num_features={self.num_features}; give the layer "
                             f"num_features={x.shape[1]}")

    def forward(self, x: gd.Array) -> gd.Array:
        self._check_input(x)
        factor: Any = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with gd.no_grad():
                self.num_batches_tracked += 1
                if self.momentum is None:  # a cumulative average: 1 / batches, on the device
                    factor = 1.0 / self.num_batches_tracked.astype(x.dtype)
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return batch_norm_checked(type(self).__name__, x, self.running_mean if keep else None,
                                  self.running_var if keep else None, self.weight, self.bias, use_batch, factor,
                                  self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs, per channel C, as
    torch.nn.BatchNorm1d.

    Example:
        >>> nn.BatchNorm1d(120)(gd.randn(8, 120)).shape
        (8, 120)
    """

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs, per channel C, as torch.nn.BatchNorm2d."""

    _ranks = (4,)


# ---------------------------------------------------------------------------------------------
# LazyBatchNorm1d and LazyBatchNorm2d: num_features from the first input (lazy.py's mechanism)
# ---------------------------------------------------------------------------------------------


class _LazyBatchNorm(LazyModuleMixin, _BatchNorm):
    """weight and bias (affine) are ``nn.UninitializedParameter`` placeholders and
    running_mean and running_var (track_running_stats) ``nn.UninitializedBuffer`` ones until
    the first call, which sizes them from the input's channel axis, sets them as the batch
    norm's own (ones, zeros, zeros, ones) and makes the layer its plain class."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: DeviceLike | None = None, dtype: Any = None) -> None:
        Module.__init__(self)
        op = type(self).__name__
        _BatchNorm._configure(self, op, eps, momentum, affine, track_running_stats)
        dt = _float_dtype(op, dtype)
        self.num_features = 0
        self.weight = UninitializedParameter(device=device, dtype=dt) if self.affine else None
        self.bias = UninitializedParameter(device=device, dtype=dt) if self.affine else None
        stats = self.track_running_stats
        self.register_buffer("running_mean", UninitializedBuffer(device=device, dtype=dt) if stats else None)
        self.register_buffer("running_var", UninitializedBuffer(device=device, dtype=dt) if stats else None)
        self.register_buffer("num_batches_tracked", gd.zeros((), dtype=gd.int64, device=device) if stats else None)

    def parameter_shapes(self, x: gd.Array) -> dict[str, tuple[int, ...]]:
        """(C,) for each placeholder, C the input's axis 1."""
        op = type(self).__name__
        if not isinstance(x, gd.Array) or x.ndim not in self._ranks or x.shape[1] == 0:
            ranks = " or ".join(f"{r}D" for r in self._ranks)
            raise ValueError(f"{op}: the first input fixes num_features from its axis 1 and must be {ranks} with "
                             f"channels, got {getattr(x, 'shape', type(x).__name__)}")
        names = (("weight", "bias") if self.affine else ()) + (
            ("running_mean", "running_var") if self.track_running_stats else ())
        return {name: (x.shape[1],) for name in names}

    def _lazy_materialized(self) -> None:
        arrays = [a for a in (self.weight, self.bias, self.running_mean, self.running_var) if a is not None]
        shapes = {a.shape for a in arrays}
        if len(shapes) != 1 or len(arrays[0].shape) != 1 or arrays[0].shape[0] == 0:
            raise ValueError(f"load_state_dict: {type(self).__name__} takes weight, bias, running_mean and "
                             f"running_var of one shape (num_features,), got {sorted(shapes)}")
        self.num_features = arrays[0].shape[0]


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    """A BatchNorm1d whose num_features is the first input's axis 1, as
    torch.nn.LazyBatchNorm1d.

    Example:
        >>> bn = nn.LazyBatchNorm1d()
        >>> bn(gd.randn(8, 120)).shape, bn.num_features
        ((8, 120), 120)
    """

    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    """A BatchNorm2d whose num_features is the first input's axis 1, as
    torch.nn.LazyBatchNorm2d."""

    cls_to_become = BatchNorm2d
