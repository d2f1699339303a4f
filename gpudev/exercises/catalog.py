"""The exercises by number, the sizes they run at, and :func:`run` to run several.

    >>> kw = settings(quick=True)[5]
    >>> (res,) = run(only=[5], quick=True)
    >>> res.number, res.meta["sizes"] == list(kw["sizes"])
    (5, True)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import gpudev as gd

from types import ModuleType

from .ex1_matmul import matmul_vs_small
from .ex2_params import params_on_device
from .ex3_norm import norm_logging
from .ex4_two_devices import SIZES as _EX4_SIZES, two_devices
from .ex5_sweep import SIZES as _EX5_SIZES, small_op_sweep
from .ex6_async import SIZES as _EX6_SIZES, asynchrony
from .ex7_latency import latency
from .ex8_k_devices import k_devices
from .result import Result

__all__ = ["EXERCISES", "MODULES", "device_kwargs", "quick_from_env", "run", "settings"]

EXERCISES: dict[int, Callable[..., Result]] = {
    1: matmul_vs_small, 2: params_on_device, 3: norm_logging, 4: two_devices, 5: small_op_sweep,
    6: asynchrony,
    7: latency,
    8: k_devices,
}
# each exercise's module: its conclusion_of(result) writes the conclusion again from the table
# (taken from the functions: `from . import ex1_matmul` would read the package's namespace,
# which gpudev/exercises/__init__.py is still filling when it imports this module)
MODULES: dict[int, ModuleType] = {k: sys.modules[fn.__module__] for k, fn in EXERCISES.items()}
_SINGLE_DEVICE = {2, 3}  # exercises that take one `device`; the others take `devices`


def quick_from_env() -> bool:
    """True when the environment variable GPUDEV_QUICK asks for small sizes."""
    return os.environ.get("GPUDEV_QUICK", "").strip().lower() not in ("", "0", "false", "no")


def settings(quick: bool | None = None) -> dict[int, dict[str, Any]]:
    """Keyword arguments for each exercise: the book's sizes, or small ones when `quick`
    (default: the environment variable GPUDEV_QUICK=1).

    Example:
        >>> kw = settings(quick=True)[5]
        >>> res = small_op_sweep(**kw)
    """
    if quick is None:
        quick = quick_from_env()
    if quick:
        return {
            1: {"n": 1000, "repeats": 5, "bandwidth_elements": 2**22, "budget_s": 2.0, "peak_n": 1024},
            2: {"steps": 5, "repeats": 5},
            3: {"n": 200, "size": 100, "repeats": 5},
            4: {"n": {"cpu": 384, "cuda": 4096}, "repeats": 5},
            5: {"sizes": (4, 16, 64, 256, 1024), "repeats": 5},
            6: {"n": {"cpu": 500, "cuda": 200}, "repeats": 5},
            7: {"quick": True},
            8: {"epochs": 1, "emulated_epochs": 1},
        }
    # the 10000 x 10000 product takes ~10 s on two CPU cores: it is timed at that size when
    # its first call and ex1_matmul.WARM_MIN warm repeats fit budget_s, else smaller
    return {1: {"n": 10000, "budget_s": 40.0}, 2: {}, 3: {"n": 1000, "size": 100},
            4: {"n": dict(_EX4_SIZES)}, 5: {"sizes": _EX5_SIZES},
            6: {"n": dict(_EX6_SIZES)},
            7: {"quick": False},
            8: {"epochs": 10, "emulated_epochs": 2}}


def run(only: Iterable[int] | None = None, devices: list[gd.Device] | None = None,
        quick: bool | None = None) -> list[Result]:
    """Run the exercises (all, or `only` those numbers) on `devices` (default: the CPU and
    every GPU; single-device exercises take the first GPU among them, else the CPU).

    Example:
        >>> for res in run(only=[3, 5], quick=True):
        ...     print(res)
    """
    numbers = sorted(set(only)) if only is not None else sorted(EXERCISES)
    unknown = [k for k in numbers if k not in EXERCISES]
    if unknown:
        raise ValueError(f"run: no exercise {unknown}; exercises are numbered 1 to {max(EXERCISES)}")
    kwargs = settings(quick)
    results = []
    for k in numbers:
        results.append(EXERCISES[k](**kwargs[k], **device_kwargs(k, devices)))
    return results


def device_kwargs(number: int, devices: list[gd.Device] | None) -> dict[str, Any]:
    """The device argument of exercise `number` for the chosen `devices` (None: its default)."""
    if devices is None:
        return {}
    if number in _SINGLE_DEVICE:
        gpus = [d for d in devices if d.type == "cuda"]
        return {"device": gpus[0] if gpus else devices[0]}
    return {"devices": devices}
