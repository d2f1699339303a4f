"""Losses: MSELoss and CrossEntropyLoss, as in torch.nn; each returns a 0-d Array whose
``backward()`` fills the parameters' gradients.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> nn.MSELoss()(gd.array([1.0, 2.0]), gd.array([1.0, 0.0])).item()
    2.0
"""

from __future__ import annotations

import gpudev as gd

from .._devices import device_label
from .functional import cross_entropy, mse_loss, reduction_of
from .module import Module, _check_array

__all__ = ["CrossEntropyLoss", "MSELoss"]


_reduction = reduction_of


class MSELoss(Module):
    """Mean squared error over all elements (``reduction='sum'``: the sum, ``'none'``: each
    element's).

    Example:
        >>> pred = gd.array([1.0, 2.0]).requires_grad_()
        >>> loss = nn.MSELoss()(pred, gd.array([1.0, 0.0]))
        >>> loss.backward()
        >>> pred.grad.tolist()
        [0.0, 2.0]
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction("MSELoss", reduction)

    def forward(self, pred: gd.Array, target: gd.Array) -> gd.Array:
        _check_array("MSELoss", "pred", pred)
        _check_array("MSELoss", "target", target)
        if pred.device != target.device:
            raise gd.DeviceMismatchError(
                f"MSELoss: pred is on {device_label(pred.device)} but target is on {device_label(target.device)}; move one "
                f"of them, e.g. target.to('{pred.device}')")
        if pred.shape != target.shape:
            raise ValueError(f"MSELoss: pred has shape {pred.shape} but target has shape "
                             f"{target.shape}; they must match exactly")
        if pred.dtype != target.dtype:
            raise TypeError(f"MSELoss: pred has dtype {pred.dtype} but target has dtype "
                            f"{target.dtype}; convert one, e.g. target.astype(gd.{pred.dtype})")
        return mse_loss(pred, target, self.reduction)


class CrossEntropyLoss(Module):
    """Softmax cross-entropy of (N, C) logits against (N,) int64 class indices, averaged over
    the batch (``reduction='sum'``: summed, ``'none'``: one per row). Stable for any logits (log-softmax subtracts each
    row's maximum). Targets outside [0, C) raise IndexError (checked with one transfer).

    Example:
        >>> logits = gd.array([[2.0, 0.0], [0.0, 2.0]]).requires_grad_()
        >>> loss = nn.CrossEntropyLoss()(logits, gd.array([0, 1]))
        >>> round(loss.item(), 4)
        0.1269
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = _reduction("CrossEntropyLoss", reduction)

    def forward(self, logits: gd.Array, target: gd.Array) -> gd.Array:
        _check_array("CrossEntropyLoss", "logits", logits)
        _check_array("CrossEntropyLoss", "target", target)
        return cross_entropy(logits, target, self.reduction)
