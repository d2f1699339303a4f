"""What every exercise shares: progress labels, argument checks, the devices to run on, and
timing statistics (one callable, or several in alternation).

    >>> timed = time_repeats(lambda: gd.ones((4, 4)).sum(), repeats=5, noise_stop=False)
    >>> timed["repeats"], timed["clock"]
    (5, 'host')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

import gpudev as gd

from .._devices import (
    DeviceLike, all_devices, as_device, as_devices, device_label, gpus_here, no_gpu_reason, present_and_missing,
    require,
)
from .._format import jsonable
from ..timing import Work, calls_of, run_rounds

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


def sizes_by_type(n: int | dict[str, int] | None, defaults: dict[str, int], op: str) -> dict[str, int]:
    """The size for each device type ('cpu', 'cuda') from `n`: one int for both, a dict by
    type (the types it leaves out keep their `defaults`), or None for the `defaults`.

    >>> sizes_by_type({"cuda": 64}, {"cpu": 8, "cuda": 16}, "demo")
    {'cpu': 8, 'cuda': 64}
    """
    if isinstance(n, dict):
        unknown = set(n) - set(defaults)
        if unknown:
            raise ValueError(f"{op}: n has keys {sorted(unknown)}; use 'cpu' and 'cuda', e.g. n={defaults}")
        return {k: positive_int(op, f"n[{k!r}]", v) for k, v in {**defaults, **n}.items()}
    if n is None:
        return dict(defaults)
    return dict.fromkeys(defaults, positive_int(op, "n", n))


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
    notes = [f"{dev} skipped: {gpus_here()}" for dev in missing]  # not here, so not emulated
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


# An emulated GPU (GPUDEV_EMULATE_GPUS) runs every code path of an exercise, but its times are
# the CPU's: its products run at most EMULATED_N x EMULATED_N (the emulation does about
# 1 GFLOP/s), and no conclusion compares its times or gives it rates or roofs.
EMULATED_N = 256


def is_emulated(d: gd.Device | str) -> bool:
    """Whether `d` is an emulated GPU."""
    return (d if isinstance(d, gd.Device) else gd.Device(d)).emulated


def emulated_size(d: gd.Device, n: int) -> int:
    """The matrix size to run on `d`: `n`, at most EMULATED_N on an emulated GPU."""
    return min(n, EMULATED_N) if is_emulated(d) else n


def emulated_text(d: gd.Device | str) -> str:
    """The sentence every exercise says about an emulated GPU `d` instead of comparing its times."""
    return (f"{device_label(d, [str(d)])} is a GPU of the CPU emulation: its times are CPU times, not a GPU's, "
            f"so this report draws no speed conclusion from them. ")


def namer(emulated: Iterable[str]) -> Callable[[Any], str]:
    """How a conclusion names devices: device_label with the run's `emulated` devices (from
    its meta, so that a report re-derived in another process names them alike).

    >>> namer({"cuda:0"})("cuda:0"), namer({"cuda:0"})(gd.cpu())
    ('cuda:0 (emulated)', 'cpu')
    """
    fake = set(emulated)
    return lambda d: device_label(d, fake)


def emulated_in(meta_devices: dict[str, Any]) -> set[str]:
    """The emulated GPUs among a Result's ``meta["devices"]`` (a report read back in another
    process cannot ask the devices themselves)."""
    return {dev for dev, info in meta_devices.items() if info.get("emulated")}


def device_meta(devices: Iterable[gd.Device]) -> dict[str, Any]:
    """{device: its info() as JSON values}, or the error a device gave instead; ``emulated``
    says whether it is an emulated GPU (no roofs, no speed claims)."""
    out = {}
    for d in devices:
        try:
            out[str(d)] = jsonable(d.info())
        except gd.GpudevError as exc:
            out[str(d)] = {"error": str(exc)}
        out[str(d)]["emulated"] = is_emulated(d)
    return out


# ---------------------------------------------------------------------------------------------
# timing statistics
# ---------------------------------------------------------------------------------------------


def stats(times: Sequence[float], clock: str, *, calls: int = 1, overhead: float | None = None,
          stop: str | None = None) -> dict[str, Any]:
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
        "calls": int(calls),
        "overhead_s": overhead,
        "clock": clock,
        "times": arr.tolist(),
        "stop": stop,
    }


# The exercises' noise criterion (nvbench's model): repeat until the relative spread of the
# repeats is under NOISE_TARGET, up to NOISE_MORE times the repeats asked for, or until the
# time budget is spent; each row's ``stop`` says which ended it.
NOISE_TARGET = 0.02
NOISE_MORE = 4


def time_repeats(fn: Callable[[], Any], repeats: int, *, warmup: int = 1, calls: int | None = None,
                 wall: bool = False, max_s: float = 120.0, noise_stop: bool = True,
                 devices: list[gd.Device] | None = None) -> dict[str, Any]:
    """gd.benchmark's statistics of `fn` per call: `repeats` repeats, then (``noise_stop``)
    more until their spread is under NOISE_TARGET or NOISE_MORE x `repeats` ran, all within
    `max_s` seconds; `calls` calls per repeat (None: gd.benchmark sizes the batch so a tiny
    call is not swamped by the cost of reading the clock). ``stop`` says what ended them.

    `wall=True` uses the host clock up to the end of the synchronization (elapsed time a user
    waits) even when a GPU was timed with events. `devices`: the devices `fn` works on, which
    gd.benchmark otherwise learns from the warm-up (so with ``warmup=0`` a GPU's events
    would not time it)."""
    most = repeats * NOISE_MORE if noise_stop else repeats
    r = gd.benchmark(fn, n_warmup=warmup, n_repeat=most, max_duration=max_s, n_calls=calls,
                     target_spread=NOISE_TARGET if noise_stop else None, devices=devices)
    return stats(r.cpu_times if wall else r.times, "host" if wall else r.clock, calls=r.n_calls,
                 overhead=r.overhead, stop=r.stop_reason)


def interleaved(fns: Sequence[Callable[[], Any]], repeats: int, *, warmup: int = 1,
                calls: int | None = None, wall: bool = False, max_s: float = math.inf,
                devices: list[gd.Device] | None = None) -> list[dict[str, Any]]:
    """The statistics of several callables timed in alternation: round r times each once,
    starting with a different one each round, so that round r of every callable saw the
    same load on the machine and their ratios can be taken round by round
    (compare.ratio(..., paired=True)). `calls` per repeat: None sizes each callable's batch
    as gd.benchmark does (those sizing batches are not rounds). Rounds stop after `repeats`,
    or once they have taken `max_s` seconds and at least 3 rounds ran. `devices`: the GPUs
    to time with CUDA events (None: the host clock only, up to the end of a synchronization
    of every device with queued work). ``overhead_s`` is an empty call timed the same way."""
    rounds = run_rounds([Work(calls_of(fn), n_calls=calls) for fn in fns], n_warmup=warmup, n_repeat=repeats,
                        max_duration=max_s, min_rounds=3, sizing_s=1.0, devices=devices or [])
    clock = "host" if wall or not rounds.stopwatch.gpus else "gpu"
    return [stats(rounds.host_times(i) if wall else rounds.times[i], clock, calls=rounds.n_calls[i],
                  overhead=rounds.empty_call(i)) for i in range(len(fns))]


def first_call(fn: Callable[[], Any]) -> dict[str, Any]:
    """One synchronized call, timed (first-call costs included)."""
    timer = gd.Timer()
    fn()
    return stats([timer.stop()], "host")
