"""Saving and loading (gpudev/io.py) and pickling (gpudev/_pickle.py)."""

from __future__ import annotations

from .. import _pickle, io
from . import declare

declare("io", io, "load save")
declare("io", _pickle, "map_location")
