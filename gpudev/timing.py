"""Timing that is right for asynchronous GPU work: ``Timer`` and ``benchmark()``.

A GPU operation returns as soon as it is queued, so reading a clock right after it measures
the queueing, not the work. Both tools here synchronize the devices that have queued work
before they read the clock, and ``benchmark()`` also times each GPU with CUDA events.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import math
import reprlib
import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import _C, stats
from ._devices import device_label, gpus_here
from ._format import TIME_SCALES, format_seconds, time_unit

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
            raise type(exc)(f"{op}: bad entry {reprlib.repr(d)} in devices: {exc}") from None
    return out


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

# A repeat of a tiny callable is a batch of calls lasting at least this long, and at least
# 100 times the fixed cost of one measurement (clock reads, events, synchronization), so that
# cost is under 1% of what a repeat reports. timeit sizes its loops the same way (autorange),
# with 0.2 s per measurement; a millisecond leaves room for many repeats in max_duration.
_MIN_REPEAT_S = 1e-3
_FIXED_COST_SHARE = 100
_OVERHEAD_REPEATS = 5  # measurements of an empty call (and of no call) for the overhead


@dataclasses.dataclass
class BenchmarkResult:
    """What ``benchmark()`` measured. Times are in seconds per call, one entry per repeat.

    Each repeat is ``n_calls`` calls in a row, timed together and divided by ``n_calls``.
    ``median`` is the figure to quote: the GPU event time when a GPU was timed (the slowest
    timed GPU per repeat, when there are several), else the host time. ``mean``, ``std``,
    ``min`` and ``max`` describe the same series (``times``); ``std`` is the sample standard
    deviation (0.0 for a single repeat). ``overhead`` is what the same measurement reports
    per call for an empty callable (``lambda: None``) at the same ``n_calls``: times near it
    say more about the timing than about ``fn``.
    """

    name: str
    n: int
    n_warmup: int
    n_calls: int
    median: float
    mean: float
    std: float
    min: float
    max: float
    overhead: float
    clock: str  # 'gpu' (CUDA events) or 'host' (perf_counter)
    times: list[float] = dataclasses.field(repr=False)
    cpu_times: list[float] = dataclasses.field(repr=False)
    gpu_times: dict[str, list[float]] = dataclasses.field(repr=False)
    stop_reason: str = ""  # which limit ended the repeats: n_repeat, max_duration or the noise target
    spread: float | None = None  # stats.relative_spread(times)
    notes: list[str] = dataclasses.field(default_factory=list)  # trust signals (launch-dominated)

    def __str__(self) -> str:
        unit = time_unit(self.median)
        scale = TIME_SCALES[unit]
        text = (
            f"{self.name}  n={self.n}  median {self.median / scale:.3g} {unit} "
            f"(min {self.min / scale:.3g}, max {self.max / scale:.3g})"
        )
        for device, times in self.gpu_times.items():
            text += f"  gpu {device_label(device)} {format_seconds(float(np.median(times)))}"
        if self.gpu_times:
            text += f"  host {format_seconds(float(np.median(self.cpu_times)))}"
        calls = f"{self.n_calls:,} calls per repeat, " if self.n_calls > 1 else ""
        text += f"  [{calls}empty call {format_seconds(self.overhead)}]"
        if self.stop_reason:
            text += f"  stopped: {self.stop_reason}"
        return "".join([text, *(f"  note: {n}" for n in self.notes)])

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
                f"{op}: cannot time {d}: {gpus_here()}; "
                f"pass devices=gd.try_all_gpus() or leave devices=None"
            )


def _is_count(value: Any, minimum: int) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= minimum


def _check_arguments(fn: Any, n_warmup: Any, n_repeat: Any, max_duration: Any, n_calls: Any, op: str) -> None:
    if not callable(fn):
        raise TypeError(f"{op}: fn must be callable, got {type(fn).__name__}; e.g. benchmark(gd.matmul, a, b)")
    if not _is_count(n_warmup, 0):
        raise ValueError(f"{op}: n_warmup must be an int >= 0, got {reprlib.repr(n_warmup)}")
    if n_repeat is not None and not _is_count(n_repeat, 1):
        raise ValueError(f"{op}: n_repeat must be an int >= 1 or None, got {reprlib.repr(n_repeat)}")
    if n_calls is not None and not _is_count(n_calls, 1):
        raise ValueError(f"{op}: n_calls must be an int >= 1 or None (sized automatically), "
                         f"got {reprlib.repr(n_calls)}")
    if isinstance(max_duration, bool) or not isinstance(max_duration, (int, float)) or not max_duration > 0:
        raise ValueError(f"{op}: max_duration must be a number of seconds > 0, got {reprlib.repr(max_duration)}")
    if n_repeat is None and math.isinf(max_duration):
        raise ValueError(f"{op}: max_duration={reprlib.repr(max_duration)} with n_repeat=None would never stop; "
                         f"give a finite max_duration or an n_repeat, e.g. n_repeat=100")


class _Measurement:
    """Times batches of calls on the host clock (up to the end of a synchronization) and on
    each timed GPU with a pair of CUDA events."""

    def __init__(self, gpus: list, op: str) -> None:
        self.gpus, self.op = gpus, op
        # CUDA events, recorded on each GPU's stream, time the GPU on its own clock
        self.events = [(_C._event_create(d), _C._event_create(d)) for d in gpus]

    def sync(self) -> None:
        # The timed GPUs (their end events must be complete) and any other GPU with queued
        # work, so the host time covers everything fn started.
        pending = [d for d in _C._pending_devices() if d not in self.gpus]
        _C._sync(self.op, (self.gpus + pending) or None)

    def __call__(self, call: Callable[[], Any], n_calls: int) -> tuple[float, list[float]]:
        """(host seconds, [seconds on each timed GPU]) of `n_calls` calls of `call`. The
        garbage collector is off while they run, as in timeit."""
        events = self.events
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            for start, _end in events:
                _C._event_record(start)
            t0 = time.perf_counter()
            for _ in itertools.repeat(None, n_calls):
                call()
            for _start, end in events:
                _C._event_record(end)
            self.sync()
            t1 = time.perf_counter()
        finally:
            if gc_was_on:
                gc.enable()
        return t1 - t0, [_C._event_elapsed_ms(start, end) / 1e3 for start, end in events]

    def reported(self, sample: tuple[float, list[float]]) -> float:
        """The figure a sample reports: the slowest timed GPU, else the host time."""
        host, gpu = sample
        return max(gpu) if gpu else host


def _autorange(measure: _Measurement, call: Callable[[], Any], deadline: float) -> tuple[int, tuple]:
    """Calls per repeat, sized like timeit.autorange (1, 2, 5, 10, 20, 50... calls) until a
    batch lasts _MIN_REPEAT_S and 100 times the fixed cost of a measurement; returns that
    count and its measurement, which counts as the first repeat."""
    fixed = float(np.median([measure.reported(measure(call, 0)) for _ in range(_OVERHEAD_REPEATS)]))
    target = max(_MIN_REPEAT_S, _FIXED_COST_SHARE * fixed)
    n_calls = 1
    while True:
        sample = measure(call, n_calls)
        if measure.reported(sample) >= target or time.perf_counter() >= deadline:
            return n_calls, sample
        n_calls = n_calls * 5 // 2 if str(n_calls)[0] == "2" else n_calls * 2  # 1, 2, 5, 10, 20...


def _repeat(measure: _Measurement, call: Callable[[], Any], n_calls: int, samples: list, n_repeat: int | None,
            max_duration: float, deadline: float, target_spread: float | None) -> str:
    """Append repeats to `samples` until the first limit is reached; returns which one ended
    it: the repeat count, the time budget, or the noise target (nvbench's model: repeat until
    the relative spread is below the target or the budget is spent)."""
    limit = n_repeat if n_repeat is not None else math.inf
    while True:
        if len(samples) >= limit:
            return f"n_repeat={n_repeat} repeats reached"
        if samples and time.perf_counter() >= deadline:
            return f"max_duration={max_duration:g} s spent"
        if samples:
            quiet = stats.noise_stop([measure.reported(x) for x in samples], target_spread)
            if quiet is not None:
                return quiet
        samples.append(measure(call, n_calls))


def _empty_call() -> None:
    return None


def benchmark(
    fn: Callable[..., Any],
    *args: Any,
    n_warmup: int = 3,
    n_repeat: int | None = None,
    max_duration: float = 1.0,
    devices: DevicesArg = None,
    n_calls: int | None = None,
    target_spread: float | None = None,
    **kwargs: Any,
) -> BenchmarkResult:
    """Time ``fn(*args, **kwargs)``: warm up, then repeat, timing host and GPUs.

    ``target_spread`` (e.g. 0.02) adds a noise criterion: repeats also stop once at least
    ``gd.stats.MIN_REPEATS`` ran and their relative spread (``gd.stats.relative_spread``) is
    below it. ``stop_reason`` says which limit ended the run, and ``notes`` warns when a call
    is launch-dominated (under ``gd.stats.LAUNCH_DOMINATED_S``).

    ``n_warmup`` calls run first (caches, allocator pools, cuBLAS handles). Then each repeat
    runs ``n_calls`` calls in a row, timed on the host with ``perf_counter`` up to the end of
    a synchronization, and on each timed GPU with CUDA events recorded around the calls;
    every figure is per call. ``n_calls=None`` sizes the batch like ``timeit.autorange``, so
    a tiny callable is not swamped by the cost of reading clocks and synchronizing (a call
    that takes a millisecond or more runs once per repeat). As in
    ``cupyx.profiler.benchmark``, ``n_repeat`` and ``max_duration`` are both limits and the
    first one reached ends the run (at least one repeat runs); ``n_repeat=None`` leaves only
    the time limit. ``devices=None`` times the GPUs that got work during the warm-up (whether
    or not ``fn`` waited for it); pass ``devices=`` to choose, e.g. when ``n_warmup=0``.

    Example:
        >>> import gpudev as gd
        >>> a = gd.randn(256, 256, device=gd.try_gpu())
        >>> r = gd.benchmark(gd.matmul, a, a, n_repeat=10)
        >>> r.n, r.median > 0
        (10, True)
        >>> print(r)  # doctest: +SKIP
        matmul  n=10  median 412 us (min 398, max 455)  [2 calls per repeat, empty call 1.1 us]
    """
    op = "benchmark"
    _check_arguments(fn, n_warmup, n_repeat, max_duration, n_calls, op)
    if target_spread is not None and (isinstance(target_spread, bool) or not isinstance(target_spread, (int, float))
                                      or not 0 < target_spread < 1):
        raise ValueError(f"{op}: target_spread must be a fraction between 0 and 1 (e.g. 0.02 for 2%) or None, "
                         f"got {reprlib.repr(target_spread)}")
    requested = _device_list(devices, op)
    if requested is not None:  # checked before the warm-up spends any time
        gpus = list(dict.fromkeys(d for d in requested if d.type == "cuda"))
        _check_gpus(gpus, op)
    call = functools.partial(fn, *args, **kwargs) if args or kwargs else fn
    _C._take_touched_devices()  # forget work queued before the warm-up
    for _ in range(n_warmup):
        call()
    if requested is None:
        # every GPU the warm-up queued work on, also when fn synchronized it (.item())
        gpus = list(_C._take_touched_devices())
        _check_gpus(gpus, op)
    measure = _Measurement(gpus, op)
    measure.sync()  # the warm-up's work must not land in the first repeat

    deadline = time.perf_counter() + max_duration
    samples = []
    if n_calls is None:
        n_calls, first = _autorange(measure, call, deadline)
        samples.append(first)
    stop_reason = _repeat(measure, call, n_calls, samples, n_repeat, max_duration, deadline, target_spread)
    empty = [measure.reported(measure(_empty_call, n_calls)) / n_calls for _ in range(_OVERHEAD_REPEATS)]

    cpu_times = [host / n_calls for host, _gpu in samples]
    gpu_times = {str(d): [gpu[i] / n_calls for _host, gpu in samples] for i, d in enumerate(gpus)}
    times = [measure.reported(s) / n_calls for s in samples]
    median = float(np.median(times))
    notes = [f"launch-dominated: one call takes {format_seconds(median)}, under "
             f"{format_seconds(stats.LAUNCH_DOMINATED_S)}, so its time is mostly the cost of making the "
             f"call, not the work"] if stats.launch_dominated(median) else []
    fake = [device_label(d) for d in gpus if d.emulated]
    if fake:  # before any of its numbers is read as a GPU's
        notes.insert(0, f"timed on {', '.join(fake)}: an emulated GPU's times are CPU times of the emulation, "
                        f"not GPU speed")
    return BenchmarkResult(
        stop_reason=stop_reason,
        spread=stats.relative_spread(times),
        notes=notes,
        name=_fn_name(fn),
        n=len(samples),
        n_warmup=n_warmup,
        n_calls=n_calls,
        overhead=float(np.median(empty)),
        clock="gpu" if gpus else "host",
        times=times,
        cpu_times=cpu_times,
        gpu_times=gpu_times,
        **_stats(times),
    )
