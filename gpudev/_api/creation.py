"""Creation (csrc/core/creation.c, convert.c; gpudev/_creation.py): arrays from shapes, values
and other libraries' memory. The Python functions declare themselves where they are defined."""

from __future__ import annotations

from .. import _C, _array_api, _creation, _torch  # noqa: F401 (their @public declarations)
from . import declare

declare("creation", _C, "array asarray arange empty full ones zeros tensor=array")
