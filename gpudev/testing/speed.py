"""A/B timing that can say "undecided": ``assert_faster(fast, slow, by=1.5)``.

The two callables run in alternation in one process, round after round (A then B, then B
then A, so neither always runs second), each round a batch of calls sized like
``gd.benchmark``'s and timed the same way (host clock up to a synchronization, CUDA events on
GPUs). The speedup is the median of the per-round ratios slow / fast with its bootstrap
interval (``gpudev.stats.ratio(..., paired=True)``): neighbouring rounds see the same load of
a shared machine, so their ratio cancels it. The comparison ends

- **pass** when the whole interval is at or above ``by``,
- **fail** when the whole interval is below ``by``,
- **undecided** when the time budget is spent and the interval still straddles ``by``.

The interval is looked at after a growing number of rounds (10, 15, 22, ...), not after each
one: every look is a chance for noise to decide, so fewer looks keep the 95% honest.
"""

from __future__ import annotations

import dataclasses
import math
import reprlib
import sys
import time
from collections.abc import Callable
from typing import Any

from .. import stats
from ..timing import Work, _fn_name, calls_of, run_rounds
from .._format import format_ratio, format_seconds

__all__ = ["UNDECIDED", "Comparison", "UndecidedError", "assert_faster", "compare"]

UNDECIDED = ("skip", "xfail", "fail")  # what an undecided assert_faster does under pytest
FIRST_LOOK = 2 * stats.MIN_REPEATS  # rounds before the interval is first looked at
LOOK_GROWTH = 1.5  # each later look after this many times as many rounds



def undecided_default() -> str | None:
    """The run's policy, from the pytest plugin (--gd-undecided or the gd_undecided ini
    option); None outside pytest, where an undecided comparison raises UndecidedError."""
    plugin = sys.modules.get("_gpudev_pytest")
    return getattr(plugin, "undecided_policy", None)


class UndecidedError(AssertionError):
    """assert_faster could not tell: the interval straddles the threshold (outside pytest)."""


@dataclasses.dataclass(frozen=True)
class Comparison:
    """The outcome of timing `fast` against `slow`: ``speedup`` is slow / fast (a
    ``gpudev.stats.Ratio``, paired), ``outcome`` 'pass', 'fail' or 'undecided'."""

    fast: str
    slow: str
    by: float
    outcome: str
    speedup: stats.Ratio
    rounds: int
    seconds: float
    fast_times: list[float] = dataclasses.field(repr=False)
    slow_times: list[float] = dataclasses.field(repr=False)

    def __str__(self) -> str:
        s = self.speedup
        if s.ratio >= 1:  # a speedup reads as one; a slowdown as "1.17x slower", never "0.858x faster"
            shown, interval = f"{format_ratio(s.ratio)} faster", s
        else:
            shown, interval = f"{format_ratio(1 / s.ratio)} slower", s.inverse()
        spread = interval.interval_text() if s.known else f"no interval with {self.rounds} rounds"
        head = (f"{self.fast} vs {self.slow}: {shown} ({s.how}, {spread}, {self.rounds} rounds in "
                f"{format_seconds(self.seconds)}; median {format_seconds(s.b)} vs {format_seconds(s.a)}); "
                f"needed {self.needed}: {self.outcome}")
        if self.outcome == "fail":
            return head + " (the whole interval falls short of it)"
        if self.outcome == "undecided":
            return head + (" (the interval straddles it: the noise leaves it open; "
                           "give it more time with max_duration= or run on a quieter machine)")
        return head

    @property
    def needed(self) -> str:
        """The threshold in words: 'at least 1.5x faster', or 'at most 1.2x slower' for by < 1."""
        if self.by >= 1:
            return f"at least {format_ratio(self.by)} faster"
        return f"at most {format_ratio(1 / self.by)} slower"


def _check(fast: Any, slow: Any, by: Any, max_duration: Any, n_warmup: Any) -> None:
    op = "assert_faster"
    for label, fn in (("fast", fast), ("slow", slow)):
        if not callable(fn):
            raise TypeError(f"{op}: {label} must be callable, got {type(fn).__name__}; "
                            f"e.g. assert_faster(lambda: a @ b, lambda: slow_matmul(a, b))")
    if isinstance(by, bool) or not isinstance(by, (int, float)) or not (by > 0 and math.isfinite(by)):
        raise ValueError(f"{op}: by must be a speedup > 0, e.g. by=1.5 (at least 1.5x faster) or by=1/1.2 "
                         f"(at most 1.2x slower), got {reprlib.repr(by)}")
    if isinstance(max_duration, bool) or not isinstance(max_duration, (int, float)) or not (
            max_duration > 0 and math.isfinite(max_duration)):
        raise ValueError(f"{op}: max_duration must be a finite number of seconds > 0, got {reprlib.repr(max_duration)}")
    if isinstance(n_warmup, bool) or not isinstance(n_warmup, int) or n_warmup < 0:
        raise ValueError(f"{op}: n_warmup must be an int >= 0, got {reprlib.repr(n_warmup)}")


def _verdict(speedup: stats.Ratio, by: float) -> str | None:
    """'pass' when the whole interval is at or above `by`, 'fail' when it is below; else None."""
    if speedup.known and speedup.lo >= by:
        return "pass"
    if speedup.known and speedup.hi < by:
        return "fail"
    return None


def _looks() -> Any:
    """The round counts at which the interval is looked at: 10, 15, 22, 33, ..."""
    n = FIRST_LOOK
    while True:
        yield n
        n = max(n + 1, int(n * LOOK_GROWTH))


def compare(fast: Callable[[], Any], slow: Callable[[], Any], *, by: float = 1.5, max_duration: float = 2.0,
            n_warmup: int = 2) -> Comparison:
    """Time `fast` and `slow` in alternation until the speedup slow / fast is known to be at
    least `by` (pass), known to be below it (fail), or `max_duration` seconds are spent
    (undecided). Nothing is raised for any outcome: see :func:`assert_faster`.

        >>> import gpudev as gd
        >>> a = gd.randn(64, 64)
        >>> c = compare(lambda: a @ a, lambda: [a @ a for _ in range(4)], by=1.5)
        >>> c.outcome                    # doctest: +SKIP
        'pass'
    """
    _check(fast, slow, by, max_duration, n_warmup)
    start = time.perf_counter()
    looks = _looks()
    next_look = next(looks)

    def decided(times: list[list[float]]) -> str | None:
        nonlocal next_look
        if len(times[0]) < next_look:
            return None
        next_look = next(looks)
        return _verdict(stats.ratio(times[1], times[0], paired=True), by)

    # each side's batch size from a quarter of the budget at most; then the sides alternate,
    # starting with the other one each round, until a look decides or the budget is spent
    rounds = run_rounds([Work(calls_of(fast)), Work(calls_of(slow))], n_warmup=n_warmup, max_duration=max_duration,
                        started=start, sizing_s=max_duration / 4, until=decided, op="assert_faster")
    fast_times, slow_times = rounds.times
    speedup = stats.ratio(slow_times, fast_times, paired=True)
    outcome = _verdict(speedup, by) or "undecided"
    return Comparison(fast=_fn_name(fast), slow=_fn_name(slow), by=float(by), outcome=outcome, speedup=speedup,
                      rounds=len(fast_times), seconds=time.perf_counter() - start, fast_times=fast_times,
                      slow_times=slow_times)


def assert_faster(fast: Callable[[], Any], slow: Callable[[], Any], by: float = 1.5, *,
                  max_duration: float = 2.0, n_warmup: int = 2, undecided: str | None = None) -> Comparison:
    """Assert that `fast` is at least `by` times faster than `slow`, measured in one process
    (see :func:`compare`). Returns the Comparison when it passes; raises AssertionError with
    the interval when it fails. When the noise leaves the answer open, `undecided` says what
    to do under pytest: 'skip' (the default, or ``--gd-undecided``), 'xfail' or 'fail';
    outside pytest it raises UndecidedError.

    ``by`` below 1 bounds a slowdown: ``assert_faster(mine, reference, by=1/1.2)`` passes when
    mine is at most 1.2x slower than the reference.

        >>> import gpudev as gd
        >>> a = gd.randn(64, 64)
        >>> assert_faster(lambda: a @ a, lambda: [a @ a for _ in range(8)], by=2)  # doctest: +SKIP
    """
    if undecided is not None and undecided not in UNDECIDED:
        raise ValueError(f"assert_faster: undecided must be 'skip', 'xfail' or 'fail', got {reprlib.repr(undecided)}")
    result = compare(fast, slow, by=by, max_duration=max_duration, n_warmup=n_warmup)
    if result.outcome == "pass":
        return result
    if result.outcome == "fail":
        raise AssertionError(str(result))
    policy = undecided or undecided_default()
    if policy is None:
        raise UndecidedError(str(result))
    import pytest

    {"skip": pytest.skip, "xfail": pytest.xfail, "fail": pytest.fail}[policy](str(result))
    raise AssertionError("unreachable: pytest's outcome functions raise")  # pragma: no cover
