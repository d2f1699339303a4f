"""Timing that is right for asynchronous GPU work: ``Timer`` and ``benchmark()``.

A GPU operation returns as soon as it is queued, so reading a clock right after it measures
the queueing, not the work. Both tools here synchronize the devices that have queued work
before they read the clock, and ``benchmark()`` also times each GPU with CUDA events.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import _C

__all__ = ["BenchmarkResult", "Timer", "benchmark"]

DeviceLike = Any  # a gd.Device, 'cpu', 'cuda', 'cuda:N'
DevicesArg = DeviceLike | Iterable[DeviceLike] | None


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def _device_list(devices: DevicesArg, op: str) -> list | None:
    """Normalise a `devices=` argument to a list of Device objects (None stays None)."""
    if devices is None:
        return None
    if isinstance(devices, (str, _C.Device)):
        devices = [devices]
    try:
        items = list(devices)
    except TypeError:
        raise TypeError(
            f"{op}: devices must be a device, a device string or a list of them, "
            f"got {type(devices).__name__}; e.g. devices=[gd.gpu(0)]"
        ) from None
    out = []
    for d in items:
        try:
            out.append(d if isinstance(d, _C.Device) else _C.Device(d))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{op}: bad entry {d!r} in devices: {exc}") from None
    return out


def format_seconds(seconds: float, unit: str | None = None) -> str:
    """`seconds` with 3 significant digits in s, ms, us or ns (or the `unit` given).

    >>> format_seconds(0.0123)
    '12.3 ms'
    """
    unit = unit or _unit_for(seconds)
    value = seconds / _UNITS[unit]
    return f"{value:.3g} {unit}"


_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def format_bytes(n: float) -> str:
    """A byte count in B, KiB, MiB, GiB or TiB.

    >>> format_bytes(43048)
    '42.0 KiB'
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def _unit_for(seconds: float) -> str:
    for unit in ("s", "ms", "us"):
        if abs(seconds) >= _UNITS[unit]:
            return unit
    return "ns"


# ---------------------------------------------------------------------------------------------
# Timer
# ---------------------------------------------------------------------------------------------


class Timer:
    """Record running times; a drop-in for the book's ``d2l.Timer`` that is right on GPUs.

    The timer starts when created. ``start()`` and ``stop()`` first synchronize every device
    with queued work (or the ``devices`` given), so an interval ends when the GPU work
    queued inside it has finished, not when it was queued.

    ``sync=False`` reads the clock without synchronizing. That is the wrong way to time GPU
    work and exists to show why: GPU operations return as soon as they are queued, so the
    interval measures the launch (microseconds) and the work itself lands in whichever later
    interval happens to wait for it, e.g. the one containing the next ``.item()``.

    Example:
        >>> import gpudev as gd
        >>> a = gd.randn(500, 500, device=gd.try_gpu())
        >>> with gd.Timer() as t:
        ...     b = a @ a
        >>> t.elapsed > 0
        True
        >>> timer = gd.Timer()
        >>> for _ in range(3):
        ...     timer.start(); c = a @ a; _ = timer.stop()
        >>> len(timer.times), timer.avg() > 0
        (3, True)
    """

    def __init__(self, *, sync: bool = True, devices: DevicesArg = None) -> None:
        self.times: list[float] = []
        self.sync = bool(sync)
        self.devices = _device_list(devices, "Timer")
        self.elapsed: float | None = None
        self._tik = 0.0
        self.start()

    def _synchronize(self) -> None:
        if self.sync:
            _C._sync("Timer", self.devices)

    def start(self) -> None:
        """Start (or restart) an interval, after the queued work has finished."""
        self._synchronize()
        self._tik = time.perf_counter()

    def stop(self) -> float:
        """End the interval once the queued work has finished; record and return its seconds."""
        self._synchronize()
        seconds = time.perf_counter() - self._tik
        self.times.append(seconds)
        return seconds

    def _require_times(self, what: str) -> None:
        if not self.times:
            raise ValueError(f"Timer.{what}: no interval recorded yet; call stop() first")

    def avg(self) -> float:
        """Mean of the recorded intervals, in seconds."""
        self._require_times("avg")
        return sum(self.times) / len(self.times)

    def sum(self) -> float:
        """Total of the recorded intervals, in seconds."""
        return float(sum(self.times))

    def cumsum(self) -> list[float]:
        """Running totals of the recorded intervals, in seconds."""
        return np.cumsum(self.times).tolist()

    def __enter__(self) -> Timer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.elapsed = self.stop()

    def __repr__(self) -> str:
        if not self.times:
            return f"Timer(n=0, sync={self.sync})"
        return (
            f"Timer(n={len(self.times)}, sum={format_seconds(self.sum())}, "
            f"avg={format_seconds(self.avg())}, sync={self.sync})"
        )


# ---------------------------------------------------------------------------------------------
# benchmark
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class BenchmarkResult:
    """What ``benchmark()`` measured. Times are in seconds, one entry per repeat.

    ``median`` is the figure to quote: the GPU event time when a GPU was timed (the slowest
    timed GPU per repeat, when there are several), else the host time. ``mean``, ``std``,
    ``min`` and ``max`` describe the same series (``times``); ``std`` is the sample standard
    deviation (0.0 for a single repeat).
    """

    name: str
    n: int
    n_warmup: int
    median: float
    mean: float
    std: float
    min: float
    max: float
    clock: str  # 'gpu' (CUDA events) or 'host' (perf_counter)
    times: list[float] = dataclasses.field(repr=False)
    cpu_times: list[float] = dataclasses.field(repr=False)
    gpu_times: dict[str, list[float]] = dataclasses.field(repr=False)

    def __str__(self) -> str:
        unit = _unit_for(self.median)
        scale = _UNITS[unit]
        text = (
            f"{self.name}  n={self.n}  median {self.median / scale:.3g} {unit} "
            f"(min {self.min / scale:.3g}, max {self.max / scale:.3g})"
        )
        for device, times in self.gpu_times.items():
            text += f"  gpu {device} {format_seconds(float(np.median(times)))}"
        if self.gpu_times:
            text += f"  host {format_seconds(float(np.median(self.cpu_times)))}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain Python values (for JSON)."""
        return dataclasses.asdict(self)


def _fn_name(fn: Callable) -> str:
    inner = getattr(fn, "func", fn)  # functools.partial
    return getattr(inner, "__name__", None) or type(inner).__name__


def _stats(times: list[float]) -> dict[str, float]:
    arr = np.asarray(times, dtype=np.float64)
    return {
        "median": float(np.median(arr)),
        "mean": float(arr.mean()),
        "std": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "min": float(arr.min()),
        "max": float(arr.max()),
    }


def _check_gpus(gpus: list, op: str) -> None:
    """Refuse, before any time is spent, to time a GPU this machine does not have."""
    n = _C.num_gpus()
    for d in gpus:
        if d.index >= n:
            raise _C.DeviceUnavailableError(
                f"{op}: cannot time {d}: this machine has {n} GPU(s); "
                f"pass devices=gd.try_all_gpus() or leave devices=None"
            )


def benchmark(
    fn: Callable[..., Any],
    *args: Any,
    n_warmup: int = 3,
    n_repeat: int | None = None,
    max_duration: float = 1.0,
    devices: DevicesArg = None,
    **kwargs: Any,
) -> BenchmarkResult:
    """Time ``fn(*args, **kwargs)``: warm up, then repeat, timing host and GPUs.

    ``n_warmup`` calls run first (caches, allocator pools, cuBLAS handles). Then each repeat
    is timed on the host with ``perf_counter`` up to the end of a synchronization, and on
    each timed GPU with CUDA events recorded around the call. ``n_repeat`` runs exactly that
    many repeats; without it repeats go on until they have taken ``max_duration`` seconds
    (at least one repeat). ``devices=None`` times the GPUs that got work during the warm-up
    (whether or not ``fn`` waited for it); pass ``devices=`` to choose, e.g. when
    ``n_warmup=0``.

    Example:
        >>> import gpudev as gd
        >>> a = gd.randn(256, 256, device=gd.try_gpu())
        >>> r = gd.benchmark(gd.matmul, a, a, n_repeat=10)
        >>> r.n, r.median > 0
        (10, True)
        >>> print(r)  # doctest: +SKIP
        matmul  n=10  median 412 us (min 398, max 455)
    """
    op = "benchmark"
    if not callable(fn):
        raise TypeError(f"{op}: fn must be callable, got {type(fn).__name__}; e.g. benchmark(gd.matmul, a, b)")
    if isinstance(n_warmup, bool) or not isinstance(n_warmup, int) or n_warmup < 0:
        raise ValueError(f"{op}: n_warmup must be an int >= 0, got {n_warmup!r}")
    if n_repeat is not None and (isinstance(n_repeat, bool) or not isinstance(n_repeat, int) or n_repeat < 1):
        raise ValueError(f"{op}: n_repeat must be an int >= 1 or None, got {n_repeat!r}")
    if n_repeat is None and not (isinstance(max_duration, (int, float)) and max_duration > 0):
        raise ValueError(f"{op}: max_duration must be a number of seconds > 0, got {max_duration!r}")

    requested = _device_list(devices, op)
    if requested is not None:  # checked before the warm-up spends any time
        gpus = list(dict.fromkeys(d for d in requested if d.type == "cuda"))
        _check_gpus(gpus, op)
    _C._take_touched_devices()  # forget work queued before the warm-up
    for _ in range(n_warmup):
        fn(*args, **kwargs)
    if requested is None:
        # every GPU the warm-up queued work on, also when fn synchronized it (.item())
        gpus = list(_C._take_touched_devices())
        _check_gpus(gpus, op)
    # CUDA events, recorded on each GPU's stream, time the GPU on its own clock
    events = [(_C._event_create(d), _C._event_create(d)) for d in gpus]

    def sync_all() -> None:
        # The timed GPUs (their end events must be complete) and any other GPU with queued
        # work, so the host time covers everything fn started.
        pending = [d for d in _C._pending_devices() if d not in gpus]
        targets = gpus + pending
        _C._sync(op, targets or None)

    sync_all()  # the warm-up's work must not land in the first repeat
    cpu_times: list[float] = []
    gpu_times: dict[str, list[float]] = {str(d): [] for d in gpus}
    budget_end = time.perf_counter() + (max_duration if n_repeat is None else math.inf)
    while True:
        for start, _end in events:
            _C._event_record(start)
        t0 = time.perf_counter()
        fn(*args, **kwargs)
        for _start, end in events:
            _C._event_record(end)
        sync_all()
        t1 = time.perf_counter()
        cpu_times.append(t1 - t0)
        for d, (start, end) in zip(gpus, events):
            gpu_times[str(d)].append(_C._event_elapsed_ms(start, end) / 1e3)
        if n_repeat is not None:
            if len(cpu_times) >= n_repeat:
                break
        elif t1 >= budget_end:
            break

    if gpu_times:
        times = np.max(np.array(list(gpu_times.values())), axis=0).tolist()
        clock = "gpu"
    else:
        times, clock = cpu_times, "host"
    return BenchmarkResult(
        name=_fn_name(fn),
        n=len(cpu_times),
        n_warmup=n_warmup,
        clock=clock,
        times=times,
        cpu_times=cpu_times,
        gpu_times=gpu_times,
        **_stats(times),
    )
