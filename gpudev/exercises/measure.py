"""What every exercise shares: progress labels, argument checks, the devices to run on,
timing statistics, and the sentence that compares two times.

    >>> timed = time_repeats(lambda: gd.ones((4, 4)).sum(), repeats=5)
    >>> timed["repeats"], timed["clock"]
    (5, 'host')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

import gpudev as gd

from .._devices import (
    DeviceLike, all_devices, as_device, as_devices, gpus_here, no_gpu_reason, present_and_missing, require,
)
from .._format import format_ratio, format_seconds, jsonable

# ---------------------------------------------------------------------------------------------
# progress: the command line shows which measurement is running
# ---------------------------------------------------------------------------------------------

_progress: Callable[[str], None] | None = None


def set_progress(callback: Callable[[str], None] | None) -> None:
    """Send each measurement's label to `callback` (None: stop)."""
    global _progress
    _progress = callback


def step(label: str) -> None:
    """Say which measurement starts now (to the callback set_progress installed, if any)."""
    if _progress is not None:
        _progress(label)


# ---------------------------------------------------------------------------------------------
# arguments and devices
# ---------------------------------------------------------------------------------------------


def positive_int(op: str, name: str, value: Any, minimum: int = 1) -> int:
    """`value` as an int, after checking it is an integer >= `minimum` (ValueError otherwise).

    >>> positive_int("demo", "n", 3)
    3
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{op}: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def devices_to_run(devices: DeviceLike | Iterable[DeviceLike] | None, op: str) -> tuple[list[gd.Device], list[str]]:
    """The available devices among `devices` (default: the CPU and every GPU), and a note for
    each GPU that was asked for (or, by default, expected) but is not there.

    >>> devices_to_run(["cpu", "cpu"], "demo")
    ([Device('cpu')], [])
    """
    if devices is None:
        notes = [] if gd.num_gpus() else [f"GPU rows skipped: {no_gpu_reason()}"]
        return all_devices(), notes
    asked = as_devices(devices, op)
    chosen, missing = present_and_missing(asked)
    notes = [f"{dev} skipped: {gpus_here()}" for dev in missing]
    if not chosen:
        raise gd.DeviceUnavailableError(
            f"{op}: none of the devices {[str(d) for d in asked]} is available "
            f"({'; '.join(notes)}); pass devices=None to use what this machine has")
    return chosen, notes


def one_device(device: DeviceLike | None, op: str) -> tuple[gd.Device, list[str]]:
    """`device`, or the first GPU when there is one, else the CPU (with a note saying so).

    >>> one_device("cpu", "demo")
    (Device('cpu'), [])
    """
    if device is None:
        if gd.num_gpus():
            return gd.gpu(0), []
        return gd.cpu(), [f"ran on the CPU: {no_gpu_reason()}"]
    dev = require(as_device(device, op), op, "pass device=None to use the best device here")
    return dev, []


def device_meta(devices: Iterable[gd.Device]) -> dict[str, Any]:
    """{device: its info() as JSON values}, or the error a device gave instead."""
    out = {}
    for d in devices:
        try:
            out[str(d)] = jsonable(d.info())
        except gd.GpudevError as exc:
            out[str(d)] = {"error": str(exc)}
    return out


# ---------------------------------------------------------------------------------------------
# timing statistics
# ---------------------------------------------------------------------------------------------


def stats(times: Sequence[float], clock: str) -> dict[str, Any]:
    """The timing fields of a row (TIMING_FIELDS but 'device') for the repeats `times`.

    >>> stats([2.0, 1.0, 3.0], "host")["seconds"]
    2.0
    """
    arr = np.asarray(times, dtype=np.float64)
    return {
        "seconds": float(np.median(arr)),
        "min_s": float(arr.min()),
        "max_s": float(arr.max()),
        "std_s": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "repeats": int(arr.size),
        "clock": clock,
        "times": arr.tolist(),
    }


def time_repeats(fn: Callable[[], Any], repeats: int, *, warmup: int = 1, per: int = 1,
                 wall: bool = False) -> dict[str, Any]:
    """gd.benchmark's statistics of `fn`, divided by `per` (calls inside one timed unit).

    `wall=True` uses the host clock up to the end of the synchronization (elapsed time a user
    waits) even when a GPU was timed with events."""
    r = gd.benchmark(fn, n_warmup=warmup, n_repeat=repeats)
    times = r.cpu_times if wall else r.times
    clock = "host" if wall else r.clock
    return stats([t / per for t in times], clock)


def first_call(fn: Callable[[], Any]) -> dict[str, Any]:
    """One synchronized call, timed (first-call costs included)."""
    timer = gd.Timer()
    fn()
    return stats([timer.stop()], "host")


def repeats_for(seconds: float, budget: float, lo: int = 3, hi: int = 20) -> int:
    """Repeats that fit in `budget` seconds for a unit that takes `seconds`, within [lo, hi].

    >>> repeats_for(0.5, 4.0)
    8
    """
    return int(min(hi, max(lo, budget // max(seconds, 1e-9))))


def faster(a_name: str, a_s: float, b_name: str, b_s: float) -> str:
    """'a is 3.2x faster than b (...)' / 'b is ...' / '... take about the same time (...)'.

    >>> faster("the GPU", 0.01, "the CPU", 1.0)
    'the GPU is 100x faster than the CPU (10 ms vs 1 s)'
    """
    if max(a_s, b_s) <= 1.1 * min(a_s, b_s):
        return (f"{a_name} and {b_name} take about the same time "
                f"({format_seconds(a_s)} vs {format_seconds(b_s)})")
    if a_s < b_s:
        return (f"{a_name} is {format_ratio(b_s / a_s)} faster than {b_name} "
                f"({format_seconds(a_s)} vs {format_seconds(b_s)})")
    return (f"{b_name} is {format_ratio(a_s / b_s)} faster than {a_name} "
            f"({format_seconds(b_s)} vs {format_seconds(a_s)})")
