"""Indexing and selection (csrc/core/index.c, gather.c, select.c; gpudev/_index.py): where,
nonzero, take."""

from __future__ import annotations

from .. import _C, _array_api, _statistics
from . import declare

declare("index", _C, "nonzero where", numpy="where")
declare("index", _statistics, "take take_along_axis")
declare("index", _array_api, "newaxis")
