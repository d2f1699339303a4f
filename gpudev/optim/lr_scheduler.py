"""Learning-rate schedules as ``torch.optim.lr_scheduler``: each ``step()`` (once per epoch)
sets every parameter group's ``'lr'`` from the epoch count.

    >>> import gpudev as gd
    >>> w = gd.zeros(1).requires_grad_()
    >>> opt = gd.optim.SGD([w], lr=1.0)
    >>> sched = gd.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for epoch in range(5):
    ...     lrs.append(sched.get_last_lr()[0]); sched.step()
    >>> lrs
    [1.0, 1.0, 0.5, 0.5, 0.25]
"""

from __future__ import annotations

import reprlib

import math
import numbers
from typing import Any

__all__ = ["CosineAnnealingLR", "LRScheduler", "StepLR"]


class LRScheduler:
    """Base class: ``_lr(base_lr, epoch)`` gives a group's rate at an epoch (closed form)."""

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        if not hasattr(optimizer, "param_groups"):
            raise TypeError(f"{type(self).__name__}: expected an optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def _lr(self, base_lr: float, epoch: int) -> float:
        raise NotImplementedError

    def step(self) -> None:
        """Move to the next epoch and set each group's learning rate."""
        self.last_epoch += 1
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self._lr(base, self.last_epoch)

    def get_last_lr(self) -> list[float]:
        """The rates the last step() set, one per parameter group."""
        return [g["lr"] for g in self.optimizer.param_groups]


def _positive_int(op: str, name: str, value: Any) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{op}: {name} must be a positive int, got {reprlib.repr(value)}")
    return int(value)


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.step_size = _positive_int("StepLR", "step_size", step_size)
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def _lr(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2.

    The closed form PyTorch documents; past T_max the cosine goes on (rises again), as in
    PyTorch.
    """

    def __init__(self, optimizer: Any, T_max: int, eta_min: float = 0.0,  # noqa: N803 (PyTorch's name)
                 last_epoch: int = -1) -> None:
        self.T_max = _positive_int("CosineAnnealingLR", "T_max", T_max)
        self.eta_min = float(eta_min)
        super().__init__(optimizer, last_epoch)

    def _lr(self, base_lr: float, epoch: int) -> float:
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * epoch / self.T_max)) / 2
