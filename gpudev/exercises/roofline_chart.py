"""The roofline chart of several Results: the achieved GFLOP/s of every steady timed row with
flops and bytes, against each device's roof from the peaks exercise 1 measured in the same run.

A row is a point labelled by its ``label`` field; an exercise whose rows need another label,
or some of whose rows say nothing about throughput, registers its labels with
:func:`point_label`.

    >>> from gpudev import exercises as ex
    >>> fig = roofline(ex.run(only=[1, 3, 5], quick=True))
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .result import Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["MARKERS", "point_label", "points", "roofline"]

MARKERS = {1: "o", 3: "s", 5: "^"}  # by exercise number; other exercises' points are diamonds

PointLabel = Callable[[dict[str, Any]], "str | None"]  # a row's label; None: not a point
_LABELS: dict[int, PointLabel] = {}


def point_label(number: int) -> Callable[[PointLabel], PointLabel]:
    """Decorator: the decorated function labels exercise `number`'s rows on the chart
    (returning None for a row that is not a point)."""

    def register(fn: PointLabel) -> PointLabel:
        _LABELS[number] = fn
        return fn

    return register


def points(results: Iterable[Result]) -> list[dict[str, Any]]:
    """One point per row with flops, bytes and a time: device, intensity (FLOP per byte),
    achieved GFLOP/s, label, exercise number and marker."""
    out = []
    for res in results:
        label_of = _LABELS.get(res.number)
        for row in res.rows:
            flops, nbytes, sec = row.get("flops"), row.get("bytes"), row.get("seconds")
            if not (flops and nbytes and sec):
                continue
            label = label_of(row) if label_of is not None else row.get("label") or res.name
            if label is None:
                continue
            out.append({"device": row["device"], "intensity": flops / nbytes, "gflops": flops / sec / 1e9,
                        "label": label, "exercise": res.number, "marker": MARKERS.get(res.number, "D")})
    return out


def roofline(results: Result | Iterable[Result], ax: Axes | None = None) -> Figure:
    """Achieved GFLOP/s of every timed row with flops and bytes, against each device's roof.

    The roof is min(peak GFLOP/s, peak GB/s x FLOP per byte), with both peaks measured in
    the same run by exercise 1 (a big sgemm and a big sum) and labelled as measured.

    Example:
        >>> from gpudev.exercises import matmul_vs_small
        >>> fig = roofline(matmul_vs_small(n=256, calls=100))
    """
    from gpudev import plots

    results = [results] if hasattr(results, "rows") else list(results)
    fig = ax.figure if ax is not None else None
    if ax is None:
        fig, (ax,) = plots.new_figure(7.5, 5)
    peaks: dict[str, dict[str, Any]] = {}
    for res in results:
        peaks.update(res.meta.get("peaks") or {})
    found = points(results)
    legend = [(f"exercise {number} rows", marker) for number, marker in MARKERS.items()
              if any(p["exercise"] == number for p in found)]
    title = ("Roofline: achieved vs measured peaks" if peaks else
             "Achieved GFLOP/s (no peaks measured: run exercise 1)")
    plots.roofline(ax, found, peaks, title=title, legend=legend)
    return fig
