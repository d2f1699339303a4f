"""Autograd (csrc/core/autograd.c; gpudev/autograd.py): the grad modes. The subpackages built
on it (nn, optim, utils) and PyTorch's refused compilers are declared in packages.py, which
loads after the namespace they use."""

from __future__ import annotations

from .. import autograd
from . import declare

declare("autograd", autograd, "enable_grad is_grad_enabled no_grad set_grad_enabled")
