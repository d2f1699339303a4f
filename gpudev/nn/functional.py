"""Functions of arrays that the layers and losses are made of, differentiable through autograd.

Each is a gpudev operation or a few, so its gradient comes from theirs: ``sigmoid``,
``softmax`` and ``log_softmax`` are :func:`gpudev.sigmoid`, :func:`gpudev.softmax` and
:func:`gpudev.log_softmax` (numerically stable, one autograd node each).

    >>> import gpudev as gd
    >>> from gpudev.nn import functional as F
    >>> F.softmax(gd.array([[0.0, 0.0]]), axis=1).tolist()
    [[0.5, 0.5]]
"""

from __future__ import annotations

import gpudev as gd

__all__ = ["cross_entropy", "dropout", "log_softmax", "mse_loss", "one_hot", "sigmoid", "softmax"]


sigmoid = gd.sigmoid
log_softmax = gd.log_softmax
softmax = gd.softmax


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
    if n == 0:
        return
    lo, hi = gd.stack([target.min(), target.max()]).tolist()  # one transfer
    if lo < 0 or hi >= num_classes:
        raise IndexError(f"{op}: target holds class {lo if lo < 0 else hi}, outside "
                         f"[0, {num_classes}) for {num_classes} classes")


def cross_entropy(logits: gd.Array, target: gd.Array, reduction: str = "mean") -> gd.Array:
    """-log softmax(logits)[i, target[i]], averaged (or summed) over the batch.

    logits is (N, C) float, target (N,) int64 in [0, C). As ``torch.nn.functional.cross_entropy``.
    """
    if logits.ndim != 2:
        raise ValueError(f"cross_entropy: logits must be (batch, classes), got shape {logits.shape}")
    n, c = logits.shape
    if target.device != logits.device:
        raise gd.DeviceMismatchError(f"cross_entropy: logits are on {logits.device} but target is "
                                     f"on {target.device}; move one, e.g. "
                                     f"target.to('{logits.device}')")
    _check_targets("cross_entropy", target, n, c)
    picked = (log_softmax(logits, axis=1) * one_hot(target, c, logits.dtype)).sum()
    return -picked / max(n, 1) if reduction == "mean" else -picked


def mse_loss(pred: gd.Array, target: gd.Array, reduction: str = "mean") -> gd.Array:
    """Mean (or sum) of (pred - target)**2 over all elements, as ``torch.nn.functional.mse_loss``."""
    diff = pred - target
    sq = diff * diff
    return sq.mean() if reduction == "mean" else sq.sum()


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
