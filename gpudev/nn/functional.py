"""Functions of arrays that the layers and losses are made of, differentiable through autograd.

Each is a few gpudev operations, so its gradient comes from theirs: ``sigmoid`` through
``tanh`` (``sigmoid(x) = (1 + tanh(x / 2)) / 2`` never overflows), ``log_softmax`` by
subtracting the row maximum before ``exp`` (never overflows, and the maximum's own gradient
cancels, so it is taken outside the graph).

    >>> import gpudev as gd
    >>> from gpudev.nn import functional as F
    >>> F.softmax(gd.array([[0.0, 0.0]]), axis=1).tolist()
    [[0.5, 0.5]]
"""

from __future__ import annotations

import gpudev as gd

from .._grad_rules import positive_mask

__all__ = ["cross_entropy", "dropout", "log_softmax", "mse_loss", "one_hot", "sigmoid", "softmax"]


def sigmoid(x: gd.Array) -> gd.Array:
    """1 / (1 + exp(-x)) elementwise: gd.sigmoid (stable for any x)."""
    return gd.sigmoid(x)


def log_softmax(x: gd.Array, axis: int = -1) -> gd.Array:
    """x - log(sum(exp(x))) along `axis`, with the maximum subtracted first (stable)."""
    shifted = x - x.detach().max(axis=axis, keepdims=True)
    return shifted - gd.log(gd.exp(shifted).sum(axis=axis, keepdims=True))


def softmax(x: gd.Array, axis: int = -1) -> gd.Array:
    """exp(x) / sum(exp(x)) along `axis`, with the maximum subtracted first (stable)."""
    e = gd.exp(x - x.detach().max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def one_hot(target: gd.Array, num_classes: int, dtype: object = gd.float32) -> gd.Array:
    """(N,) int64 class indices -> (N, num_classes) rows with a single 1 (no gradient).

    1 - min(|t - c|, 1) is exactly 1 where t == c and 0 elsewhere for integers t and c.

        >>> one_hot(gd.array([2, 0]), 3).tolist()
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    with gd.no_grad():
        t = target.astype(gd.float64).reshape(target.size, 1)
        c = gd.arange(num_classes, dtype=gd.float64, device=target.device)
        return (1.0 - gd.minimum(gd.abs(t - c), 1.0)).astype(dtype)


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
        keep = positive_mask(gd.relu(u - p)) * (1.0 / (1.0 - p))
    return x * keep
