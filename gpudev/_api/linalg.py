"""Linear algebra (csrc/core/matmul.c; gpudev/linalg.py, the gd.linalg namespace): matmul at
the top level with the standard's vecdot and tensordot and PyTorch's mm and bmm, which
declare themselves where they are defined."""

from __future__ import annotations

from .. import _C, _torch, linalg  # noqa: F401 (their @public declarations)
from . import declare, declare_modules

declare("linalg", _C, "matmul")
declare_modules("linalg", linalg)
