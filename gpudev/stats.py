"""The statistics of timing, in one place: intervals, ratios (of medians, or paired round by
round), the noise stop of a repeated measurement, and the trust signals every timing carries
(launch-dominated, faster than the device can do). ``gd.benchmark()``, the exercises and
their referee all use these functions, so a number means the same wherever it is printed.

The interval is a percentile bootstrap of the median (METHOD), with a fixed seed:

- unpaired (A's and B's repeats taken at different times): each sample is resampled on its
  own and the statistic is median(A) / median(B), the **ratio of medians**;
- paired (repeats taken in alternation, round i of A right next to round i of B): the
  statistic is the **median of the per-round ratios** A_i / B_i, and the rounds are
  resampled. The load of a shared machine changes over seconds, so two neighbouring repeats
  see the same load and their ratio cancels it.

Why a bootstrap of medians: a descheduled repeat is a large outlier, which moves a mean and
a standard deviation but barely moves a median; the bootstrap needs no assumption about the
shape of the timing distribution (it is skewed, never normal). A bootstrap of a handful of
repeats is not an interval, though: with 7 repeats and one outlier the resampled medians
jump between a few values and the "interval" spans 30x. Below MIN_REPEATS repeats on a
side there is no interval, and so no verdict.

    >>> r = ratio([2.0, 2.1, 1.9, 2.0, 2.0], [1.0, 1.05, 0.95, 1.0, 1.0])
    >>> r.ratio, r.differs, r.how
    (2.0, True, 'ratio of medians')
    >>> noise_stop([1.0, 1.01, 0.99, 1.0, 1.0], target=0.05)
    'spread 1.0% below the 5.0% target'
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ._format import format_ratio

__all__ = ["LAUNCH_DOMINATED_S", "LEVEL", "METHOD", "MIN_REPEATS", "NOISY_RATIO", "RESAMPLES", "Ratio",
           "faster_than_device", "interval", "launch_dominated", "noise_stop", "noisy", "quartiles", "ratio",
           "recording", "relative_spread"]

SEED = 0  # fixed: the same numbers give the same interval, run after run
RESAMPLES = 4000
LEVEL = 0.95
METHOD = f"percentile bootstrap of the median, {LEVEL:.0%}, {RESAMPLES} resamples"
MIN_REPEATS = 5  # fewer repeats on a side give no interval: their bootstrap is a handful of values
NOISY_RATIO = 2.0  # a sample whose slowest repeat is this many times its median is noisy
# A call shorter than this is mostly the cost of launching it (Python, argument parsing, a
# kernel launch), whatever the work: its time says little about the hardware.
LAUNCH_DOMINATED_S = 10e-6
# a rate this much above the measured roof cannot be the work (the roof is itself measured,
# so a little noise above it is allowed)
ROOF_MARGIN = 1.5

_recorded: list[list[Ratio]] = []


@dataclasses.dataclass(frozen=True)
class Ratio:
    """A / B as a point estimate and its LEVEL interval (None with fewer than MIN_REPEATS
    repeats on a side). ``how`` says how the point was formed: 'ratio of medians' or
    'median of paired ratios'."""

    a: float  # median of A
    b: float  # median of B
    ratio: float
    lo: float | None
    hi: float | None
    paired: bool
    n_a: int = 0
    n_b: int = 0
    method: str = METHOD

    @property
    def how(self) -> str:
        return "median of paired ratios" if self.paired else "ratio of medians"

    @property
    def known(self) -> bool:
        """True when both samples had enough repeats for an interval."""
        return self.lo is not None

    @property
    def differs(self) -> bool:
        """True when the interval excludes 1: a measurable difference."""
        return self.known and (self.lo > 1.0 or self.hi < 1.0)

    def inverse(self) -> Ratio:
        """B / A: the same measurement seen from the other side, its interval inverted.

        >>> Ratio(1.3, 1.0, 1.3, 1.0004, 1.39, True, 5, 6).inverse().interval_text()
        '95% interval 0.719x to 0.9996x'
        """
        lo, hi = (None, None) if self.lo is None else (1.0 / self.hi, 1.0 / self.lo)
        return dataclasses.replace(self, a=self.b, b=self.a, ratio=1.0 / self.ratio, lo=lo, hi=hi,
                                   n_a=self.n_b, n_b=self.n_a)

    def interval_text(self) -> str:
        """'95% interval 1.8x to 2.2x' (of A / B). A bound that excludes 1 is never printed as
        1x: it gets the digits that keep it on its side of 1 (1.0004x, not 1x).

        >>> Ratio(1.0, 1.0, 1.05, 1.0004, 1.11, True).interval_text()
        '95% interval 1.0004x to 1.11x'
        """
        return f"{LEVEL:.0%} interval {_bound_text(self.lo)} to {_bound_text(self.hi)}"


def _bound_text(x: float) -> str:
    """format_ratio(x), with more significant digits when 3 would round it onto 1."""
    text = format_ratio(x)
    digits = 3
    while x != 1.0 and float(text.rstrip("x").replace(",", "")) == 1.0 and digits < 9:
        digits += 1
        text = f"{x:.{digits}g}x"
    return text


@contextlib.contextmanager
def recording() -> Iterator[list[Ratio]]:
    """Collect every Ratio that :func:`ratio` forms inside the block (the referee checks
    that each interval a text quotes came from METHOD with enough repeats).

    >>> with recording() as seen:
    ...     _ = ratio([1.0, 2.0], [1.0, 2.0])
    >>> len(seen), seen[0].known
    (1, False)
    """
    seen: list[Ratio] = []
    _recorded.append(seen)
    try:
        yield seen
    finally:
        _recorded.remove(seen)


def _medians(samples: Sequence[np.ndarray], paired: bool, rng: np.random.Generator) -> list[np.ndarray]:
    """RESAMPLES bootstrap medians of each sample (the same rounds for all when paired)."""
    if paired:
        idx = rng.integers(0, samples[0].size, size=(RESAMPLES, samples[0].size))
        return [np.median(s[idx], axis=1) for s in samples]
    return [np.median(s[rng.integers(0, s.size, size=(RESAMPLES, s.size))], axis=1) for s in samples]


def interval(stat: Callable[..., np.ndarray], *samples: Sequence[float],
             paired: bool = False) -> tuple[float, float] | None:
    """The LEVEL percentile-bootstrap interval of ``stat(median of each sample)``; `stat`
    takes one array of bootstrap medians per sample. None when a sample has fewer than
    MIN_REPEATS repeats.

    >>> [round(x, 6) for x in interval(lambda a, b: a - b, [3.0, 3.1, 2.9, 3.0, 3.0], [1.0, 1.1, 0.9, 1.0, 1.0])]
    [1.9, 2.1]
    """
    arrays = [np.asarray(s, dtype=np.float64) for s in samples]
    if min(a.size for a in arrays) < MIN_REPEATS:
        return None
    values = stat(*_medians(arrays, paired, np.random.default_rng(SEED)))
    lo, hi = np.quantile(values, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def ratio(a: Sequence[float], b: Sequence[float], paired: bool = False) -> Ratio:
    """A / B with its interval: the ratio of medians, or with ``paired=True`` the median of
    the per-round ratios (see the module's docstring).

    >>> ratio([1.0, 1.2, 0.9, 1.1, 1.0], [1.0, 1.1, 1.3, 0.9, 1.0]).differs
    False
    """
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if paired and a_arr.size != b_arr.size:
        raise ValueError(f"ratio: paired samples need as many repeats each, got {a_arr.size} and {b_arr.size}; "
                         f"time them in alternation (the same number of rounds) or pass paired=False")
    if a_arr.size == 0 or b_arr.size == 0:
        raise ValueError(f"ratio: each sample needs at least one repeat, got {a_arr.size} and {b_arr.size}")
    a_med, b_med = float(np.median(a_arr)), float(np.median(b_arr))
    if paired:
        rounds = a_arr / b_arr
        point = float(np.median(rounds))
        bounds = interval(lambda r: r, rounds)
    else:
        point = a_med / b_med
        bounds = interval(np.divide, a_arr, b_arr)
    lo, hi = bounds if bounds is not None else (None, None)
    out = Ratio(a=a_med, b=b_med, ratio=point, lo=lo, hi=hi, paired=paired, n_a=int(a_arr.size),
                n_b=int(b_arr.size))
    for seen in _recorded:
        seen.append(out)
    return out


def noisy(times: Sequence[float]) -> float | None:
    """max / median of the repeats when it is at least NOISY_RATIO (the sample is noisy),
    else None.

    >>> noisy([175e-3, 180e-3, 810e-3, 170e-3]), noisy([1.0, 1.1, 1.2])
    (4.56..., None)
    """
    arr = np.asarray(times, dtype=np.float64)
    if arr.size < 2:
        return None
    spread = float(arr.max() / np.median(arr))
    return spread if spread >= NOISY_RATIO else None


def relative_spread(times: Sequence[float]) -> float | None:
    """The spread of the repeats relative to their median: the median absolute deviation,
    scaled to a standard deviation for normal data (x 1.4826), over the median. Robust to a
    few descheduled repeats, unlike the standard deviation. None with fewer than 2 repeats.

    >>> round(relative_spread([1.0, 1.1, 0.9, 1.0, 5.0]), 3)
    0.148
    """
    arr = np.asarray(times, dtype=np.float64)
    if arr.size < 2:
        return None
    med = float(np.median(arr))
    return float(1.4826 * np.median(np.abs(arr - med)) / med) if med > 0 else None


def quartiles(times: Sequence[float]) -> tuple[float, float]:
    """(q1, q3), the 25th and 75th percentiles: their difference is the interquartile range
    that benchmark reports quote beside the median (pytest-benchmark's ``iqr``).

    >>> quartiles([1.0, 2.0, 3.0, 4.0, 5.0])
    (2.0, 4.0)
    """
    q1, q3 = np.percentile(np.asarray(times, dtype=np.float64), [25, 75])
    return float(q1), float(q3)


def noise_stop(times: Sequence[float], target: float | None, *, minimum: int = MIN_REPEATS) -> str | None:
    """Why a repeated measurement may stop now on its noise alone: a sentence when at least
    `minimum` repeats ran and their relative spread is below `target`, else None (nvbench's
    noise criterion; `target` None never stops).

    >>> noise_stop([1.0, 1.3, 0.7, 1.0, 1.0], target=0.05) is None
    True
    """
    if target is None or len(times) < minimum:
        return None
    spread = relative_spread(times)
    if spread is None or spread >= target:
        return None
    return f"spread {spread:.1%} below the {target:.1%} target"


def launch_dominated(seconds: float) -> bool:
    """True when one call takes under LAUNCH_DOMINATED_S: its time is mostly the launch.

    >>> launch_dominated(2e-6), launch_dominated(1e-3)
    (True, False)
    """
    return seconds < LAUNCH_DOMINATED_S


def faster_than_device(seconds: float, *, flops: float = 0.0, nbytes: float = 0.0,
                       roof_gflops: float | None = None, roof_gbps: float | None = None) -> str | None:
    """A sentence when a time implies more FLOP/s than the measured compute roof or more
    bytes/s than the measured memory roof (by more than ROOF_MARGIN): such a time measured
    the launch, not the work. None when the time is possible.

    >>> faster_than_device(0.016, flops=2e12, roof_gflops=1000.0)
    'implies 125,000 GFLOP/s, 125x the 1,000 GFLOP/s this device reached: you timed the launch, not the work'
    """
    if not seconds > 0:
        return None
    checks = [(flops / seconds / 1e9, roof_gflops, "GFLOP/s"), (nbytes / seconds / 1e9, roof_gbps, "GB/s")]
    for rate, roof, unit in checks:
        if roof and rate > ROOF_MARGIN * roof:
            return (f"implies {rate:,.0f} {unit}, {rate / roof:,.0f}x the {roof:,.0f} {unit} this device "
                    f"reached: you timed the launch, not the work")
    return None
