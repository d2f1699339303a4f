"""Optimizers as ``torch.optim``: SGD (momentum, dampening, Nesterov, weight decay), Adam and
AdamW, with parameter groups, updating the parameters in place under ``gd.no_grad()``.

``params`` is an iterable of parameters or of dicts ``{'params': [...], 'lr': ..., ...}``
(parameter groups); a group's missing options take the optimizer's. ``opt.param_groups`` is
that list of dicts, where a learning-rate scheduler changes ``'lr'``. An lr of 0 is accepted,
as PyTorch accepts it (a warm-up that starts from 0, a frozen group); a negative, infinite or
NaN one raises ValueError.

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> lin = nn.Linear(3, 1)
    >>> opt = gd.optim.SGD([{'params': [lin.weight]}, {'params': [lin.bias], 'lr': 0.01}], lr=0.1)
    >>> [g['lr'] for g in opt.param_groups]
    [0.1, 0.01]
"""

from __future__ import annotations

import reprlib

import math
import numbers
from collections.abc import Iterable
from typing import Any

import gpudev as gd

from .._lazy import UninitializedParameter, materialized
from .._torch import scaled_add_
from . import lr_scheduler

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]


def _check_number(op: str, name: str, value: object, low: float, high: float = math.inf) -> float:
    if not (isinstance(value, numbers.Real) and math.isfinite(value) and low <= value < high):
        raise ValueError(f"{op}: {name} must be a finite number in [{low}, {high}), got {reprlib.repr(value)}")
    return float(value)


def _check_params(op: str, params: Any, where: str) -> list[gd.Array]:
    if isinstance(params, (gd.Array, UninitializedParameter)):
        raise TypeError(f"{op}: {where} must be an iterable of parameters, got one Array; wrap it "
                        f"in a list, e.g. [w]")
    params = list(params)
    for i, p in enumerate(params):
        if isinstance(p, UninitializedParameter):  # a lazy layer's, before its first forward
            continue
        if not isinstance(p, gd.Array) or not p.requires_grad or not p.is_leaf:
            raise TypeError(f"{op}: {where}[{i}] is not a parameter (a leaf Array that requires "
                            f"grad), got {type(p).__name__}; pass model.parameters()")
    return params


class Optimizer:
    """Base class: the parameter groups and each parameter's state; subclasses write
    ``_update(group, p, g, state)`` and declare their options in ``_checks``."""

    # option -> (low, high) of its valid range; betas are checked by Adam itself
    _checks: dict[str, tuple[float, float]] = {}

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        op = type(self).__name__
        self.defaults = defaults
        one = isinstance(params, (gd.Array, UninitializedParameter))
        items = list(_check_params(op, params, "params") if one else params)
        if not items:
            raise ValueError(f"{op}: got an empty list of parameters; pass model.parameters()")
        groups = items if all(isinstance(g, dict) for g in items) else [{"params": items}]
        self.param_groups: list[dict[str, Any]] = []
        for k, group in enumerate(groups):
            self.add_param_group(group, f"param_groups[{k}]" if len(groups) > 1 else "params")
        self.state: dict[int, dict[str, Any]] = {}  # id(parameter) -> its state
        self.steps = 0

    def add_param_group(self, group: dict[str, Any], where: str = "param_group") -> None:
        """Add a group {'params': [...], option: value, ...}; missing options take the defaults."""
        op = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{op}: a parameter group must be a dict with a 'params' key, got "
                            f"{type(group).__name__}")
        unknown = set(group) - set(self.defaults) - {"params"}
        if unknown:
            raise TypeError(f"{op}: unknown option(s) {sorted(unknown)} in a parameter group; "
                            f"{op} takes {sorted(self.defaults)}")
        params = group["params"]
        if isinstance(params, (gd.Array, UninitializedParameter)):
            params = [params]  # one parameter, as PyTorch allows
        full = {**self.defaults, **group, "params": _check_params(op, params, where)}
        if not full["params"]:
            raise ValueError(f"{op}: {where} has no parameters")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in full["params"]):
            raise ValueError(f"{op}: a parameter appears in more than one parameter group")
        # lr = 0 is PyTorch's too: a warm-up from 0, a frozen group; a scheduler may set it
        if not isinstance(full["lr"], numbers.Real) or not math.isfinite(full["lr"]) or full["lr"] < 0:
            raise ValueError(f"{op}: lr must be a finite number >= 0 (0 leaves the parameters as they are), "
                             f"got {reprlib.repr(full['lr'])}")
        for name, (low, high) in self._checks.items():
            full[name] = _check_number(op, name, full[name], low, high)
        full["initial_lr"] = full.get("initial_lr", full["lr"])
        self.param_groups.append(full)

    @property
    def params(self) -> list[gd.Array]:
        """Every parameter, group after group. A lazy layer's placeholder that has become an
        Array (at the model's first forward) is replaced by that Array here, once."""
        for group in self.param_groups:
            group["params"] = materialized(group["params"])
        return [p for g in self.param_groups for p in g["params"]]

    @property
    def lr(self) -> float:
        """The first group's learning rate."""
        return self.param_groups[0]["lr"]

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients (``.grad = None``) so the next backward sets them afresh."""
        for p in self.params:
            p.grad = None if set_to_none or p.grad is None else gd.zeros(p.shape, dtype=p.dtype,
                                                                         device=p.device)

    @gd.no_grad()
    def step(self) -> None:
        """Update every parameter that has a gradient."""
        if all(p.grad is None for p in self.params):
            raise RuntimeError(f"{type(self).__name__}.step: no parameter has a gradient; call "
                               f"loss.backward() first, and build the optimizer after "
                               f"model.to(device) (moving a model makes new parameter arrays)")
        self.steps += 1
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(group, p, p.grad, self.state.setdefault(id(p), {}))

    def _update(self, group: dict[str, Any], p: gd.Array, g: gd.Array, state: dict[str, Any]) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """p -= lr * v with v = momentum * v + (1 - dampening) * (g + weight_decay * p), PyTorch's
    SGD (the first v is g itself; ``nesterov=True`` steps by g + momentum * v).

    Example:
        >>> opt = gd.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    """

    _checks = {"momentum": (0.0, math.inf), "dampening": (0.0, math.inf),
               "weight_decay": (0.0, math.inf)}

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov=True needs momentum > 0 and dampening 0")
        super().__init__(params, {"lr": lr, "momentum": momentum, "dampening": dampening,
                                  "weight_decay": weight_decay, "nesterov": bool(nesterov)})

    def _update(self, group: dict[str, Any], p: gd.Array, g: gd.Array, state: dict[str, Any]) -> None:
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p
        momentum = group["momentum"]
        if momentum:
            v = state.get("momentum_buffer")
            if v is None:
                v = state["momentum_buffer"] = g.copy()
            else:
                scaled_add_(v, momentum, g, 1.0 - group["dampening"])
            g = g + momentum * v if group["nesterov"] else v
        scaled_add_(p, 1.0, g, -group["lr"])


class Adam(Optimizer):
    """Adam (Kingma & Ba) with bias correction, as ``torch.optim.Adam``; weight_decay adds
    weight_decay * p to the gradient (L2), where AdamW decays the weights themselves.

    Example:
        >>> opt = gd.optim.Adam(model.parameters(), lr=1e-3)
    """

    _checks = {"eps": (0.0, math.inf), "weight_decay": (0.0, math.inf)}
    _decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        op = type(self).__name__
        try:
            b1, b2 = betas
        except (TypeError, ValueError):
            raise ValueError(f"{op}: betas must be a pair (beta1, beta2), got {reprlib.repr(betas)}") from None
        betas = (_check_number(op, "betas[0]", b1, 0.0, 1.0), _check_number(op, "betas[1]", b2, 0.0, 1.0))
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})

    def _update(self, group: dict[str, Any], p: gd.Array, g: gd.Array, state: dict[str, Any]) -> None:
        lr, wd, (b1, b2) = group["lr"], group["weight_decay"], group["betas"]
        if wd and self._decoupled:
            p *= 1.0 - lr * wd
        elif wd:
            g = g + wd * p
        if not state:
            state.update(step=0, exp_avg=gd.zeros(p.shape, dtype=p.dtype, device=p.device),
                         exp_avg_sq=gd.zeros(p.shape, dtype=p.dtype, device=p.device))
        m, v = state["exp_avg"], state["exp_avg_sq"]
        state["step"] += 1
        t = state["step"]
        scaled_add_(m, b1, g, 1.0 - b1)
        scaled_add_(v, b2, g * g, 1.0 - b2)
        m_hat = m / (1.0 - b1 ** t)
        v_hat = v / (1.0 - b2 ** t)
        p -= lr * m_hat / (gd.sqrt(v_hat) + group["eps"])


class AdamW(Adam):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW``: p *= 1 - lr * weight_decay
    before each Adam step (weight_decay 0.01 by default).

    Example:
        >>> opt = gd.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    """

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)
