"""How two timing samples compare, in numbers and in words: every "A vs B" of a conclusion
goes through :func:`compare` (or :func:`ratio` for the numbers alone).

The interval is a percentile bootstrap of the median, with a fixed seed:

- ``paired=False`` (A's and B's repeats taken at different times): each sample is resampled
  on its own and the statistic is median(A) / median(B);
- ``paired=True`` (repeats taken in alternation, round i of A right next to round i of B):
  the statistic is the median of the per-round ratios A_i / B_i, and the rounds are
  resampled. The load of a shared machine changes over seconds, so two neighbouring
  repeats see the same load and their ratio cancels it.

Why a bootstrap of medians: a descheduled repeat is a large outlier, which moves a mean
and a standard deviation but barely moves a median; the bootstrap needs no assumption about
the shape of the timing distribution (it is skewed, never normal) and no library. The seed
is fixed so that the same numbers always give the same interval and the same words. With a
single repeat on either side there is no spread and so no verdict.

    >>> r = ratio([2.0, 2.1, 1.9, 2.0], [1.0, 1.05, 0.95, 1.0])
    >>> r.ratio, r.differs
    (2.0, True)
    >>> compare("the loop", [2.0, 2.1, 1.9, 2.0], "the batch", [1.0, 1.05, 0.95, 1.0])
    'the batch is 2x faster than the loop (1 s vs 2 s; 95% interval 1.9x to 2.11x)'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from .._format import format_ratio, format_seconds

__all__ = ["LEVEL", "NOISY_RATIO", "Ratio", "compare", "interval", "noisy", "ratio", "single_vs_sample"]

SEED = 0  # fixed: the same numbers give the same interval, run after run
RESAMPLES = 4000
LEVEL = 0.95
NOISY_RATIO = 2.0  # a sample whose slowest repeat is this many times its median is noisy


@dataclasses.dataclass(frozen=True)
class Ratio:
    """A / B as a point estimate and its LEVEL interval (None without spread on one side)."""

    a: float  # median of A
    b: float  # median of B
    ratio: float
    lo: float | None
    hi: float | None
    paired: bool

    @property
    def known(self) -> bool:
        """True when both samples had at least two repeats, so there is an interval."""
        return self.lo is not None

    @property
    def differs(self) -> bool:
        """True when the interval excludes 1: a measurable difference."""
        return self.known and (self.lo > 1.0 or self.hi < 1.0)

    def interval_text(self) -> str:
        """'95% interval 1.8x to 2.2x' (of A / B)."""
        return f"{LEVEL:.0%} interval {format_ratio(self.lo)} to {format_ratio(self.hi)}"


def _medians(samples: Sequence[np.ndarray], paired: bool, rng: np.random.Generator) -> list[np.ndarray]:
    """RESAMPLES bootstrap medians of each sample (the same rounds for all when paired)."""
    if paired:
        idx = rng.integers(0, samples[0].size, size=(RESAMPLES, samples[0].size))
        return [np.median(s[idx], axis=1) for s in samples]
    return [np.median(s[rng.integers(0, s.size, size=(RESAMPLES, s.size))], axis=1) for s in samples]


def interval(stat: Callable[..., np.ndarray], *samples: Sequence[float],
             paired: bool = False) -> tuple[float, float] | None:
    """The LEVEL percentile-bootstrap interval of ``stat(median of each sample)``; `stat`
    takes one array of bootstrap medians per sample. None when a sample has one repeat.

    >>> [round(x, 6) for x in interval(lambda a, b: a - b, [3.0, 3.1, 2.9], [1.0, 1.1, 0.9])]
    [1.8, 2.2]
    """
    arrays = [np.asarray(s, dtype=np.float64) for s in samples]
    if min(a.size for a in arrays) < 2:
        return None
    values = stat(*_medians(arrays, paired, np.random.default_rng(SEED)))
    lo, hi = np.quantile(values, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return float(lo), float(hi)


def ratio(a: Sequence[float], b: Sequence[float], paired: bool = False) -> Ratio:
    """A / B with its interval (see the module's docstring for the method).

    >>> ratio([1.0, 1.2, 0.9], [1.0, 1.1, 1.3]).differs
    False
    """
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if paired and a_arr.size != b_arr.size:
        raise ValueError(f"ratio: paired samples need as many repeats each, got {a_arr.size} and {b_arr.size}")
    a_med, b_med = float(np.median(a_arr)), float(np.median(b_arr))
    if paired:
        rounds = a_arr / b_arr
        point = float(np.median(rounds))
        bounds = interval(lambda r: r, rounds)
    else:
        point = a_med / b_med
        bounds = interval(np.divide, a_arr, b_arr)
    lo, hi = bounds if bounds is not None else (None, None)
    return Ratio(a=a_med, b=b_med, ratio=point, lo=lo, hi=hi, paired=paired)


def compare(a_name: str, a: Sequence[float], b_name: str, b: Sequence[float], paired: bool = False) -> str:
    """Which of two timed things is faster, by how much, and how sure: one clause.

    'B is 3.2x faster than A (10 ms vs 32 ms; 95% interval 2.9x to 3.6x)', or 'A and B show
    no measurable difference (...; the ratio's 95% interval, 0.8x to 1.6x, includes 1)', or,
    with one repeat on a side, the two times and the ratio without a verdict.

    >>> compare("a", [1.0, 1.5, 0.8], "b", [1.1, 1.0, 1.4])
    "a and b show no measurable difference (1 s vs 1.1 s; the ratio's 95% interval, 0.571x to 1.5x, includes 1)"
    """
    r = ratio(a, b, paired)
    times = f"{format_seconds(r.a)} vs {format_seconds(r.b)}"
    if not r.known:
        return (f"{a_name} took {format_seconds(r.a)} and {b_name} {format_seconds(r.b)} (a ratio of "
                f"{format_ratio(r.ratio)}, from a single repeat on one side: no spread, so no verdict)")
    if not r.differs:
        return (f"{a_name} and {b_name} show no measurable difference ({times}; the ratio's "
                f"{LEVEL:.0%} interval, {format_ratio(r.lo)} to {format_ratio(r.hi)}, includes 1)")
    # paired: the ratio is the median of the rounds' ratios, which need not be the ratio of
    # the two medians shown beside it
    how = "round by round; medians " if paired else ""
    if r.ratio < 1:  # A is faster: say B / A
        return (f"{a_name} is {format_ratio(1 / r.ratio)} faster than {b_name} ({how}{times}; "
                f"{LEVEL:.0%} interval {format_ratio(1 / r.hi)} to {format_ratio(1 / r.lo)})")
    return (f"{b_name} is {format_ratio(r.ratio)} faster than {a_name} "
            f"({how}{format_seconds(r.b)} vs {format_seconds(r.a)}; {r.interval_text()})")


def single_vs_sample(x: float, sample: Sequence[float], margin: float = 0.1) -> str:
    """How one measurement (e.g. a first call, which has no spread of its own) sits against
    a sample: 'above' when it exceeds every repeat and the median by more than `margin`,
    'below' in the mirror case, else 'within'.

    >>> single_vs_sample(2.0, [1.0, 1.1, 0.9]), single_vs_sample(1.05, [1.0, 1.1, 0.9])
    ('above', 'within')
    """
    arr = np.asarray(sample, dtype=np.float64)
    med = float(np.median(arr))
    if x > arr.max() and x > (1 + margin) * med:
        return "above"
    if x < arr.min() and x < (1 - margin) * med:
        return "below"
    return "within"


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
