"""The subpackages built on autograd (gpudev/nn, optim, utils) and PyTorch's compilers, refused
(gpudev/jit.py: gpudev runs eagerly); they use gd.<name> while they load, so gpudev binds the
other families' names first."""

from __future__ import annotations

from .. import jit, nn, optim, utils
from . import declare, declare_modules

declare("autograd", jit, "compile")
declare_modules("autograd", nn, optim, utils, jit)
