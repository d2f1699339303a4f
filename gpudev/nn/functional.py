"""Functions of arrays that the layers and losses are made of, differentiable through autograd.

Each is a gpudev operation or a few, so its gradient comes from theirs: ``relu``,
``sigmoid``, ``tanh``, ``softmax`` and ``log_softmax`` are :func:`gpudev.relu` and the others
(numerically stable, one autograd node each), with PyTorch's ``dim=``. Every loss takes
PyTorch's ``reduction='mean' | 'sum' | 'none'`` and refuses any other.

    >>> import gpudev as gd
    >>> from gpudev.nn import functional as F
    >>> F.softmax(gd.array([[0.0, 0.0]]), dim=1).tolist()
    [[0.5, 0.5]]
"""

from __future__ import annotations

import reprlib

from typing import Any

import gpudev as gd
from gpudev import _C, autograd
from gpudev._deferred import check_range_later
from gpudev._devices import device_label
from gpudev._stable import shifted_exp

__all__ = ["cross_entropy", "dropout", "linear", "log_softmax", "mse_loss", "one_hot", "relu",
           "sigmoid", "softmax", "tanh"]

# convolution, pooling and batch normalization, each in a module of its own
from ._conv import conv1d, conv2d  # noqa: E402
from ._norm import batch_norm  # noqa: E402
from ._pool import adaptive_avg_pool2d, adaptive_max_pool2d, avg_pool2d, max_pool2d  # noqa: E402

__all__ += ["adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool2d", "batch_norm", "conv1d", "conv2d",
            "max_pool2d"]

relu = gd.relu
sigmoid = gd.sigmoid
tanh = gd.tanh

REDUCTIONS = ("none", "mean", "sum")


def reduction_of(op: str, reduction: Any) -> str:
    """`reduction` after checking it is one of PyTorch's: 'none', 'mean' or 'sum'."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 'none', 'mean' or 'sum', got {reprlib.repr(reduction)}")
    return reduction


def _reduce(per_element: gd.Array, reduction: str) -> gd.Array:
    if reduction == "none":
        return per_element
    return per_element.mean() if reduction == "mean" else per_element.sum()


def _axis_of(op: str, dim: Any, axis: Any) -> int:
    """PyTorch's dim= (or NumPy's axis=), which softmax needs: no guessing one."""
    if dim is not None and axis is not None:
        raise TypeError(f"{op}: give dim= or axis=, not both")
    if dim is None and axis is None:
        raise TypeError(f"{op}: give the axis to normalize over, e.g. {op}(x, dim=1)")
    return dim if axis is None else axis


def softmax(input: gd.Array, dim: int | None = None, *, axis: int | None = None) -> gd.Array:  # noqa: A002
    """exp(x) / sum(exp(x)) along `dim` (``gd.softmax``; stable for any x)."""
    return gd.softmax(input, axis=_axis_of("softmax", dim, axis))


def log_softmax(input: gd.Array, dim: int | None = None, *, axis: int | None = None) -> gd.Array:  # noqa: A002
    """log(softmax(x)) along `dim`, computed stably (``gd.log_softmax``)."""
    return gd.log_softmax(input, axis=_axis_of("log_softmax", dim, axis))


def linear(input: gd.Array, weight: gd.Array, bias: gd.Array | None = None) -> gd.Array:  # noqa: A002
    """input @ weight.T + bias, with weight of shape (out_features, in_features)."""
    if weight.ndim not in (1, 2):
        raise ValueError(f"linear: weight must be (out_features, in_features), got shape {weight.shape}")
    if input.ndim == 0 or input.shape[-1] != weight.shape[-1]:
        raise ValueError(f"linear: input of shape {input.shape} does not match weight of shape "
                         f"{weight.shape}: the input's last dimension must be {weight.shape[-1]}")
    if not _fused_linear(input, weight, bias):
        y = input @ weight.T
        return y if bias is None else y + bias
    recording = gd.is_grad_enabled()
    with gd.no_grad():
        y = input @ weight.T
        if bias is not None:
            y += bias  # into the product's own fresh output: no second array
    if recording:  # one node, as PyTorch's addmm (none when no input requires grad): its rule
        # (gpudev/_grad_rules.py) is three products at most
        _C._set_grad_fn(y, autograd._make_node("linear", (y.shape, y.dtype, y.device), (input, weight, bias), None))
    return y


def _fused_linear(x: gd.Array, w: gd.Array, b: gd.Array | None) -> bool:
    """Whether linear() can be one node: a matrix of weights and a bias of one per output, all
    of x's float dtype and device (anything else goes through matmul and add, which broadcast
    and promote)."""
    same = (isinstance(x, gd.Array) and isinstance(w, gd.Array) and w.ndim == 2 and x.dtype.kind == "f"
            and w.dtype == x.dtype and w.device == x.device)
    return same and (b is None or (isinstance(b, gd.Array) and b.shape == (w.shape[0],) and b.dtype == x.dtype
                                   and b.device == x.device))


def one_hot(target: gd.Array, num_classes: int, dtype: object = gd.float32) -> gd.Array:
    """(N,) int64 class indices -> (N, num_classes) rows with a single 1 (no gradient).

        >>> one_hot(gd.array([2, 0]), 3).tolist()
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    with gd.no_grad():
        c = gd.arange(num_classes, dtype=gd.int64, device=target.device)
        return (target.reshape(target.size, 1) == c).astype(dtype)


def _check_targets(op: str, target: gd.Array, n: int, num_classes: int) -> None:
    if target.dtype != gd.int64 or target.shape != (n,):
        raise TypeError(f"{op}: target must be int64 class indices of shape ({n},), got "
                        f"{target.dtype} of shape {target.shape}; e.g. gd.array(labels, "
                        f"dtype=gd.int64)")


def _check_targets_later(op: str, target: gd.Array, num_classes: int, out: gd.Array) -> None:
    """Class indices in range, checked at the next host read of out (or of anything computed
    from it) and at this thread's next sync point (gpudev/_deferred.py): checking now would
    cost a sync per call. one_hot gives a row of zeros for a class outside the range, so
    nothing reads out of bounds meanwhile."""
    if target.size == 0:
        return
    check_range_later(op, target, 0, num_classes, lambda value, where: IndexError(
        f"{op}: target holds class {value}, outside [0, {num_classes}) for {num_classes} classes, in a call "
        f"at {where} or since the previous host read; checked at this read, which would otherwise have "
        f"cost a sync per call; give class indices in [0, {num_classes})"), guards=(out,))


def cross_entropy(logits: gd.Array, target: gd.Array, reduction: str = "mean") -> gd.Array:
    """-log softmax(logits)[i, target[i]] for each row i, then averaged ('mean'), summed
    ('sum') or kept per row ('none'), as ``torch.nn.functional.cross_entropy``.

    logits is (N, C) float, target (N,) int64 in [0, C). Logits of -inf (masked classes) other
    than the target's give PyTorch's finite loss and gradients; -inf at the target gives inf.

        >>> cross_entropy(gd.zeros((4, 3)), gd.zeros(4, dtype=gd.int64), reduction='none').shape
        (4,)
    """
    reduction = reduction_of("cross_entropy", reduction)
    if logits.ndim != 2:
        raise ValueError(f"cross_entropy: logits must be (batch, classes), got shape {logits.shape}")
    n, c = logits.shape
    if target.device != logits.device:
        raise gd.DeviceMismatchError(f"cross_entropy: logits are on {device_label(logits.device)} but target is "
                                     f"on {device_label(target.device)}; move one, e.g. "
                                     f"target.to('{logits.device}')")
    _check_targets("cross_entropy", target, n, c)
    if logits.dtype.kind != "f":
        logits = logits.astype(gd.float64)  # as log_softmax computes integers
    recording = logits.requires_grad and gd.is_grad_enabled()
    with gd.no_grad():
        hot = one_hot(target, c, logits.dtype)
        shifted, e, total = shifted_exp(logits, 1)
        # -log softmax at the target: log(sum(exp)) - shifted[i, target[i]], the target's
        # entry selected, not multiplied out (-inf * 0, a logit masked with -inf, is NaN)
        picked = gd.where(hot != 0, shifted, 0.0).sum(axis=1)
        out = _reduce(gd.log(total).reshape(n) - picked, reduction)
    _check_targets_later("cross_entropy", target, c, out)
    if recording:  # one node: its rule (gpudev/_grad_rules.py) reuses e, total and the one-hot rows
        _C._set_grad_fn(out, autograd._make_node("cross_entropy", (out.shape, out.dtype, out.device), (logits,),
                                                 (e, total, hot, reduction)))
    return out


def mse_loss(pred: gd.Array, target: gd.Array, reduction: str = "mean") -> gd.Array:
    """(pred - target)**2, averaged ('mean'), summed ('sum') or per element ('none'), as
    ``torch.nn.functional.mse_loss``."""
    reduction = reduction_of("mse_loss", reduction)
    diff = pred - target
    return _reduce(diff * diff, reduction)


def dropout(x: gd.Array, p: float = 0.5, training: bool = True) -> gd.Array:
    """Zero each element with probability p and scale the rest by 1 / (1 - p) when training."""
    if not training or p == 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    with gd.no_grad():
        u = gd.rand(*x.shape, dtype=x.dtype, device=x.device)
        keep = (u >= p).astype(x.dtype) * (1.0 / (1.0 - p))
    return x * keep
