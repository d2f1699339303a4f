"""Shapes (csrc/core/shape_ops.c; gpudev/_manipulation.py): joining, splitting, reshaping,
broadcasting, tiling. gpudev/_manipulation.py's functions and PyTorch's cat declare
themselves where they are defined."""

from __future__ import annotations

from .. import _C, _manipulation, _statistics, _torch  # noqa: F401 (their @public declarations)
from . import declare

declare("shape", _C, "concatenate stack", numpy="concatenate stack")
declare("shape", _statistics, "repeat")
