"""Elementwise operations (csrc/core/elementwise.c): one function per row of the op lists
(csrc/tables.h) flagged FN, with its aliases, as ``_C._ops`` describes them; the composites
(formulas over the rows, gpudev/_composite.py), clipping, casts and the array API's spellings
declare themselves where they are defined."""

from __future__ import annotations

from .. import _C, _array_api, _clip, _composite  # noqa: F401 (their @public declarations)
from . import Declaration, _add, declare

for _op in _C._ops:
    if _op.function:
        _add(Declaration(_op.name, getattr(_C, _op.name), "elementwise", _op.numpy))
        for _alias in _op.aliases:
            _add(Declaration(_alias, getattr(_C, _alias), "elementwise"))
declare("elementwise", _C, "allclose")
declare("elementwise", _array_api, "e pi inf nan logical_and logical_or logical_xor")
