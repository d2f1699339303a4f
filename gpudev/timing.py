"""Timing that is right for asynchronous GPU work: ``Timer`` and ``benchmark()``.

A GPU operation returns as soon as it is queued, so reading a clock right after it measures
the queueing, not the work. Both tools here synchronize the devices that have queued work
before they read the clock, and ``benchmark()`` also times each GPU with CUDA events.

``run_rounds`` is the one measurement loop behind ``benchmark()``, ``gpudev.testing``'s
``assert_faster``, the bench (``python -m gpudev bench``) and the exercises: warm-up, batch
sizing, rounds of timed batches (a ``Stopwatch``) and the limits that end them; each caller
computes its own statistics from what it returns (``gpudev.stats``).
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import itertools
import math
import reprlib
import time
from collections.abc import Callable, Iterable, Sequence
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


# ---------------------------------------------------------------------------------------------
# the measurement loop: benchmark(), assert_faster, the bench and the exercises all time with it
# ---------------------------------------------------------------------------------------------

Sample = tuple[float, list[float]]  # one batch: (host seconds, [seconds on each timed GPU])


def calls_of(fn: Callable[[], Any]) -> Callable[[int], None]:
    """A batch of `n` calls of `fn` in a row: what the loop times for a callable."""

    def batch(n: int, fn: Callable[[], Any] = fn) -> None:  # fn a local: the loop costs what timeit's does
        for _ in itertools.repeat(None, n):
            fn()

    return batch


def _empty_call() -> None:
    return None


@dataclasses.dataclass
class Work:
    """One thing the loop times, in batches: ``batch(n)`` makes n calls in a row (``calls_of(fn)``,
    or the bench's statement compiled into a loop as timeit compiles it)."""

    batch: Callable[[int], Any]
    n_calls: int | None = None  # calls per batch; None: sized like timeit.autorange
    sync: Callable[[], Any] | None = None  # waits for its device work; None: gpudev's devices
    prepare: Callable[[], Any] | None = None  # untimed, before each of its batches (the warm-up's too)
    # seconds for n calls found another way than timing `batch` (the figure a measuring tool
    # reports), for the bench's rows that check such a tool against timeit
    seconds: Callable[[int], float] | None = None

    def warm_up(self, n_calls: int) -> None:
        """Run `n_calls` calls untimed (or the other way's measurement of them)."""
        if self.prepare is not None:
            self.prepare()
        if self.seconds is not None:
            self.seconds(n_calls)
        else:
            self.batch(n_calls)


class Stopwatch:
    """Times batches of a Work: the host clock from just before the calls to the end of the
    synchronization after them, and each timed GPU with a pair of CUDA events recorded around
    them. The garbage collector is off while they run, as in timeit.

    `clock` reads the host time; None takes ``time.perf_counter`` as it is when the stopwatch
    is made, so a test that replaces it controls every figure."""

    def __init__(self, gpus: Iterable[Any] = (), op: str = "benchmark", clock: Callable[[], float] | None = None):
        self.gpus, self.op = list(gpus), op
        self.now = time.perf_counter if clock is None else clock
        # CUDA events, recorded on each GPU's stream, time the GPU on its own clock
        self.events = [(_C._event_create(d), _C._event_create(d)) for d in self.gpus]

    def sync(self, wait: Callable[[], Any] | None = None) -> None:
        """Wait for the work: with `wait` (a Work's own sync), that; else the timed GPUs (their
        end events must be complete) and every other device with queued work, so the host
        time covers everything the calls started."""
        if wait is not None:
            wait()
            return
        pending = [d for d in _C._pending_devices() if d not in self.gpus]
        _C._sync(self.op, (self.gpus + pending) or None)

    def __call__(self, work: Work, n_calls: int) -> Sample:
        """(host seconds, [seconds on each timed GPU]) of one batch of `n_calls` calls."""
        if work.prepare is not None:
            work.prepare()
        if work.seconds is not None:
            return work.seconds(n_calls), []
        events, batch, now = self.events, work.batch, self.now
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            for start, _end in events:
                _C._event_record(start)
            t0 = now()
            batch(n_calls)
            for _start, end in events:
                _C._event_record(end)
            self.sync(work.sync)
            t1 = now()
        finally:
            if gc_was_on:
                gc.enable()
        return t1 - t0, [_C._event_elapsed_ms(start, end) / 1e3 for start, end in events]

    @staticmethod
    def reported(sample: Sample) -> float:
        """The figure a sample reports: the slowest timed GPU, else the host time."""
        host, gpu = sample
        return max(gpu) if gpu else host

    def autorange(self, work: Work, deadline: float) -> tuple[int, Sample]:
        """Calls per batch, sized like timeit.autorange (1, 2, 5, 10, 20, 50... calls) until a
        batch lasts _MIN_REPEAT_S and 100 times the fixed cost of a measurement (or `deadline`
        passes); returns that count and that batch's sample."""
        fixed = float(np.median([self.reported(self(work, 0)) for _ in range(_OVERHEAD_REPEATS)]))
        target = max(_MIN_REPEAT_S, _FIXED_COST_SHARE * fixed)
        n_calls = 1
        while True:
            sample = self(work, n_calls)
            if self.reported(sample) >= target or self.now() >= deadline:
                return n_calls, sample
            n_calls = n_calls * 5 // 2 if str(n_calls)[0] == "2" else n_calls * 2  # 1, 2, 5, 10, 20...


@dataclasses.dataclass
class Rounds:
    """What run_rounds measured, per Work in the order given: its calls per batch, one sample
    per round, and ``times``, each sample's figure per call (the slowest timed GPU, else the
    host). ``stopwatch`` times more batches the same way."""

    n_calls: list[int]
    samples: list[list[Sample]]
    times: list[list[float]]
    stop_reason: str
    stopwatch: Stopwatch

    def host_times(self, i: int) -> list[float]:
        """Work `i`'s host seconds per call (up to the end of the synchronization)."""
        return [host / self.n_calls[i] for host, _gpu in self.samples[i]]

    def gpu_times(self, i: int) -> dict[str, list[float]]:
        """Work `i`'s event seconds per call on each timed GPU."""
        n = self.n_calls[i]
        return {str(d): [gpu[k] / n for _host, gpu in self.samples[i]] for k, d in enumerate(self.stopwatch.gpus)}

    def empty_call(self, i: int) -> float:
        """What an empty callable reports per call when timed the same way at Work `i`'s
        batch size (median of _OVERHEAD_REPEATS batches): times near it measure the timing."""
        n, watch, empty = self.n_calls[i], self.stopwatch, Work(calls_of(_empty_call))
        return float(np.median([watch.reported(watch(empty, n)) / n for _ in range(_OVERHEAD_REPEATS)]))


def _timed_gpus(devices: Iterable[Any], op: str) -> list:
    gpus = list(dict.fromkeys(d for d in devices if d.type == "cuda"))
    _check_gpus(gpus, op)
    return gpus


def run_rounds(work: Sequence[Work], *, n_warmup: int = 0, n_repeat: int | None = None,
               max_duration: float = math.inf, started: float | None = None, sizing_s: float | None = None,
               keep_sizing: bool = False, min_rounds: int = 1,
               until: Callable[[list[list[float]]], str | None] | None = None,
               devices: Iterable[Any] | None = None, clock: Callable[[], float] | None = None,
               op: str = "benchmark") -> Rounds:
    """The measurement loop: warm up, size the batches, then time rounds until a limit.

    1. Warm-up: each Work's batch of `n_warmup` calls, in order.
    2. The timed GPUs: those among `devices` (``[]``: the host clock only), or with None
       every GPU the warm-up queued work on. Every Work's sync then waits for the warm-up.
    3. Sizing: a Work without ``n_calls`` gets its batch size from ``Stopwatch.autorange``,
       within `sizing_s` seconds of the warm-up's end (None: the time budget); with
       `keep_sizing` (one Work) its sizing batch counts as the first round.
    4. Rounds: round r times each Work once, starting with Work r % len(work), so that
       round r of every Work saw the same load (their ratios can be paired round by round).
       The first limit reached ends them: `n_repeat` rounds; once `min_rounds` ran, the
       budget (`max_duration` seconds from `started`, a reading of the clock, by default the
       warm-up's end), or `until(times)` (each Work's figures per call so far) giving a reason.

    `clock` reads the host time (None: ``time.perf_counter``). Statistics are the caller's.

        >>> r = run_rounds([Work(calls_of(lambda: None), n_calls=10)], n_repeat=3, devices=[])
        >>> len(r.times[0]), r.n_calls, r.stop_reason
        (3, [10], 'n_repeat=3 repeats reached')
    """
    if keep_sizing and len(work) != 1:
        raise ValueError(f"{op}: keep_sizing counts the sizing batch as a round of one Work, got {len(work)}")
    gpus = None if devices is None else _timed_gpus(devices, op)  # checked before any time is spent
    _C._take_touched_devices()  # forget work queued before the warm-up
    for w in work:
        if n_warmup:
            w.warm_up(n_warmup)
    if gpus is None:  # every GPU the warm-up queued work on, also when it waited for it (.item())
        gpus = _timed_gpus(_C._take_touched_devices(), op)
    watch = Stopwatch(gpus, op, clock)
    for wait in dict.fromkeys(w.sync for w in work):
        watch.sync(wait)  # the warm-up's work must not land in the first round
    now = watch.now()
    deadline = (now if started is None else started) + max_duration
    n_calls, samples = [], [[] for _ in work]
    for w, kept in zip(work, samples):
        n = w.n_calls
        if n is None:
            n, first = watch.autorange(w, deadline if sizing_s is None else now + sizing_s)
            if keep_sizing:
                kept.append(first)
        n_calls.append(n)
    times = [[watch.reported(s) / n for s in kept] for kept, n in zip(samples, n_calls)]
    while True:
        done = len(times[0])
        reason = _limit(done, n_repeat, min_rounds, max_duration, watch.now() >= deadline, until, times)
        if reason is not None:
            return Rounds(n_calls, samples, times, reason, watch)
        for i in [(done + k) % len(work) for k in range(len(work))]:
            samples[i].append(watch(work[i], n_calls[i]))
            times[i].append(watch.reported(samples[i][-1]) / n_calls[i])


def _limit(done: int, n_repeat: int | None, min_rounds: int, max_duration: float, out_of_time: bool,
           until: Callable[[list[list[float]]], str | None] | None, times: list[list[float]]) -> str | None:
    """Which limit ends the rounds after `done` of them, in words; None: run another."""
    if n_repeat is not None and done >= n_repeat:
        return f"n_repeat={n_repeat} repeats reached"
    if done < min_rounds:
        return None
    if out_of_time:
        return f"max_duration={max_duration:g} s spent"
    return None if until is None else until(times)


# ---------------------------------------------------------------------------------------------
# benchmark()
# ---------------------------------------------------------------------------------------------


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
    call = functools.partial(fn, *args, **kwargs) if args or kwargs else fn
    rounds = run_rounds([Work(calls_of(call), n_calls=n_calls)], n_warmup=n_warmup, n_repeat=n_repeat,
                        max_duration=max_duration, keep_sizing=True, devices=_device_list(devices, op), op=op,
                        until=None if target_spread is None else lambda t: stats.noise_stop(t[0], target_spread))
    times, gpus = rounds.times[0], rounds.stopwatch.gpus
    median = float(np.median(times))
    notes = [f"launch-dominated: one call takes {format_seconds(median)}, under "
             f"{format_seconds(stats.LAUNCH_DOMINATED_S)}, so its time is mostly the cost of making the "
             f"call, not the work"] if stats.launch_dominated(median) else []
    fake = [device_label(d) for d in gpus if d.emulated]
    if fake:  # before any of its numbers is read as a GPU's
        notes.insert(0, f"timed on {', '.join(fake)}: an emulated GPU's times are CPU times of the emulation, "
                        f"not GPU speed")
    return BenchmarkResult(
        stop_reason=rounds.stop_reason,
        spread=stats.relative_spread(times),
        notes=notes,
        name=_fn_name(fn),
        n=len(times),
        n_warmup=n_warmup,
        n_calls=rounds.n_calls[0],
        overhead=rounds.empty_call(0),
        clock="gpu" if gpus else "host",
        times=times,
        cpu_times=rounds.host_times(0),
        gpu_times=rounds.gpu_times(0),
        **_stats(times),
    )
