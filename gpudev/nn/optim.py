"""Optimizers: SGD (momentum, weight decay) and Adam, updating parameters in place as
``torch.optim`` does (under ``gd.no_grad()``, so the updates are not recorded).

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> lin = nn.Linear(3, 1)
    >>> opt = nn.Adam(lin.parameters(), lr=1e-2)
    >>> opt.zero_grad()
    >>> nn.MSELoss()(lin(gd.ones((4, 3))), gd.zeros((4, 1))).backward()
    >>> opt.step()
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import gpudev as gd

__all__ = ["SGD", "Adam", "Optimizer"]


def _check_number(op: str, name: str, value: object, low: float, high: float = math.inf) -> float:
    if not (isinstance(value, numbers.Real) and math.isfinite(value) and low <= value < high):
        raise ValueError(f"{op}: {name} must be a finite number in [{low}, {high}), got {value!r}")
    return float(value)


class Optimizer:
    """Base class: holds the parameters and per-parameter state; subclasses write ``_update``."""

    def __init__(self, params: Iterable[gd.Array], lr: float) -> None:
        op = type(self).__name__
        self.params = list(params)
        if not self.params:
            raise ValueError(f"{op}: got an empty list of parameters; pass model.parameters()")
        for i, p in enumerate(self.params):
            if not isinstance(p, gd.Array) or not p.requires_grad or not p.is_leaf:
                raise TypeError(f"{op}: params[{i}] is not a parameter (a leaf Array that "
                                f"requires grad), got {type(p).__name__}; pass model.parameters()")
        if not isinstance(lr, numbers.Real) or not math.isfinite(lr) or lr <= 0:
            raise ValueError(f"{op}: lr must be a positive finite number, got {lr!r}")
        self.lr = float(lr)
        self.steps = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (``.grad = None``) so the next backward sets them afresh."""
        for p in self.params:
            p.grad = None if set_to_none or p.grad is None else gd.zeros(p.shape, dtype=p.dtype,
                                                                         device=p.device)

    @gd.no_grad()
    def step(self) -> None:
        """Update every parameter that has a gradient."""
        with_grad = [p for p in self.params if p.grad is not None]
        if not with_grad:
            raise RuntimeError(f"{type(self).__name__}.step: no parameter has a gradient; call "
                               f"loss.backward() first, and build the optimizer after "
                               f"model.to(device) (moving a model makes new parameter arrays)")
        self.steps += 1
        for i, p in enumerate(self.params):
            if p.grad is not None:
                self._update(i, p, p.grad)

    def _update(self, i: int, p: gd.Array, g: gd.Array) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """p -= lr * v, with v = momentum * v + (g + weight_decay * p) (PyTorch's SGD).

    Example:
        >>> opt = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    def __init__(self, params: Iterable[gd.Array], lr: float, momentum: float = 0.0,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, lr)
        self.momentum = _check_number("SGD", "momentum", momentum, 0.0)
        self.weight_decay = _check_number("SGD", "weight_decay", weight_decay, 0.0)
        self.velocity: list[gd.Array | None] = [None] * len(self.params)

    def _update(self, i: int, p: gd.Array, g: gd.Array) -> None:
        if self.weight_decay:
            g = g + self.weight_decay * p
        if self.momentum:
            v = self.velocity[i]
            if v is None:
                v = self.velocity[i] = g.copy()
            else:
                v *= self.momentum
                v += g
            g = v
        p -= self.lr * g


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction, as ``torch.optim.Adam``.

    Example:
        >>> opt = nn.Adam(model.parameters(), lr=1e-3)
    """

    def __init__(self, params: Iterable[gd.Array], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, lr)
        self.beta1 = _check_number("Adam", "betas[0]", betas[0], 0.0, 1.0)
        self.beta2 = _check_number("Adam", "betas[1]", betas[1], 0.0, 1.0)
        self.eps = _check_number("Adam", "eps", eps, 0.0)
        self.weight_decay = _check_number("Adam", "weight_decay", weight_decay, 0.0)
        self.m: list[gd.Array | None] = [None] * len(self.params)
        self.v: list[gd.Array | None] = [None] * len(self.params)
        self.t = [0] * len(self.params)  # updates of each parameter, for bias correction

    def _update(self, i: int, p: gd.Array, g: gd.Array) -> None:
        if self.weight_decay:
            g = g + self.weight_decay * p
        if self.m[i] is None:
            self.m[i] = gd.zeros(p.shape, dtype=p.dtype, device=p.device)
            self.v[i] = gd.zeros(p.shape, dtype=p.dtype, device=p.device)
        m, v = self.m[i], self.v[i]
        self.t[i] += 1
        m *= self.beta1
        m += (1.0 - self.beta1) * g
        v *= self.beta2
        v += (1.0 - self.beta2) * (g * g)
        m_hat = m / (1.0 - self.beta1 ** self.t[i])
        v_hat = v / (1.0 - self.beta2 ** self.t[i])
        p -= self.lr * m_hat / (gd.sqrt(v_hat) + self.eps)
