"""Random numbers (csrc/core/creation.c and the Philox generator, csrc/philox.h): the seed,
uniform and normal arrays; PyTorch's normal and randint declare themselves in gpudev/_torch.py."""

from __future__ import annotations

from .. import _C, _torch  # noqa: F401 (their @public declarations)
from . import declare

declare("random", _C, "manual_seed rand randn")
