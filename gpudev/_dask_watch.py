"""Registers gpudev's Array with Dask (gpudev/dask.py) as soon as both are imported, in either
order, without importing Dask when it is not used: Dask's array module already imported
(Dask's workers import gpudev after Dask) registers at once; otherwise a finder on
``sys.meta_path`` waits for ``dask.array`` and registers right after it has loaded.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Any


class _AfterLoad(importlib.abc.Loader):
    """A loader that runs the real one, then registers gpudev with Dask."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.loader.exec_module(module)
        importlib.import_module("gpudev.dask")


class _DaskArrayFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "dask.array":
            return None
        sys.meta_path.remove(self)  # once: the real finders find the module
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _AfterLoad(spec.loader)
        return spec


def watch() -> None:
    """Register now if dask.array is loaded, else when it loads (called once, at import)."""
    if "dask.array" in sys.modules:
        importlib.import_module("gpudev.dask")
    elif not any(isinstance(f, _DaskArrayFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _DaskArrayFinder())
