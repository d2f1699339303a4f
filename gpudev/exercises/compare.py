"""How two timing samples compare, in words: every "A vs B" of a conclusion goes through
:func:`compare`. The numbers (the ratio, its interval and how each is formed) come from
gpudev.stats, the one statistics module of gpudev; the words say which ratio it is: a ratio
of medians, or (paired, repeats taken in alternation) a median of the per-round ratios.

    >>> compare("the loop", [2.0, 2.1, 1.9, 2.0, 2.0], "the batch", [1.0, 1.05, 0.95, 1.0, 1.0])
    'the batch is 2x faster than the loop (ratio of medians, 1 s vs 2 s; 95% interval 1.9x to 2.11x)'
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._format import format_ratio, format_seconds
from ..stats import LEVEL, NOISY_RATIO, Ratio, interval, noisy, ratio

__all__ = ["LEVEL", "NOISY_RATIO", "Ratio", "compare", "interval", "noisy", "ratio",
           "single_vs_sample"]


def compare(a_name: str, a: Sequence[float], b_name: str, b: Sequence[float], paired: bool = False) -> str:
    """Which of two timed things is faster, by how much, and how sure: one clause, which
    says how the ratio was formed (a ratio of medians, or a median of paired ratios).

    'B is 3.2x faster than A (ratio of medians, 10 ms vs 32 ms; 95% interval 2.9x to 3.6x)',
    or 'A and B show no measurable difference (...; the 95% interval of A / B, 0.8x to 1.6x,
    includes 1)', or, with fewer than stats.MIN_REPEATS repeats on a side, the two times
    without a verdict.

    >>> compare("a", [1.0, 1.5, 0.8, 1.0, 1.2], "b", [1.1, 1.0, 1.4, 1.2, 1.0])
    'a and b show no measurable difference (ratio of medians, 1 s vs 1.1 s; the 95% interval of a / b, 0.714x to 1.36x, includes 1)'
    """
    r = ratio(a, b, paired)
    times = f"{format_seconds(r.a)} vs {format_seconds(r.b)}"
    if not r.known:
        return (f"{a_name} took {format_seconds(r.a)} and {b_name} {format_seconds(r.b)} (medians of "
                f"{r.n_a} and {r.n_b} repeats: too few for an interval, so no verdict)")
    if not r.differs:
        return (f"{a_name} and {b_name} show no measurable difference ({r.how}, {times}; the "
                f"{LEVEL:.0%} interval of {a_name} / {b_name}, {format_ratio(r.lo)} to {format_ratio(r.hi)}, "
                f"includes 1)")
    # paired: the ratio is the median of the rounds' ratios, which need not be the ratio of
    # the two medians shown beside it: the clause names which one it is
    if r.ratio < 1:  # A is faster: say B / A
        inv = r.inverse()
        return (f"{a_name} is {format_ratio(inv.ratio)} faster than {b_name} ({r.how}, {times}; "
                f"{inv.interval_text()})")
    return (f"{b_name} is {format_ratio(r.ratio)} faster than {a_name} "
            f"({r.how}, {format_seconds(r.b)} vs {format_seconds(r.a)}; {r.interval_text()})")


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
