"""The roofline chart of several Results: the achieved GFLOP/s of every steady timed row with
flops and bytes, against each device's roofs measured in the same run by exercise 1 (the
compute peak, main memory, and one bandwidth per cache level).

A roof is an upper bound found by measuring, so a point above its roof means the roof was
measured too low (a busy machine during the peak measurement). :func:`roofs` then raises
that roof to the point's rate and says so in the roof's source: no point ever plots above
its roof, and the chart tells which roofs came from which measurement. A point's roof is the
compute peak or the bandwidth of the smallest memory level that holds its footprint (the
row's ``footprint`` field; rows without one are held to the fastest level).

A row is a point labelled by its ``label`` field; an exercise whose rows need another label,
or some of whose rows say nothing about throughput, registers its labels with
:func:`point_label`.

    >>> from gpudev import exercises as ex
    >>> results = ex.run(only=[1, 3, 5], quick=True)
    >>> pts, rf = points(results), roofs(results)
    >>> all(p["gflops"] <= roof_at(rf[p["device"]], p) for p in pts)
    True
    >>> fig = roofline(results)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .._format import format_bytes
from .peaks import level_of
from .result import Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["MARKERS", "point_label", "points", "roof_at", "roofline", "roofs"]

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


def _as_list(results: Result | Iterable[Result]) -> list[Result]:
    return [results] if hasattr(results, "rows") else list(results)


def points(results: Result | Iterable[Result]) -> list[dict[str, Any]]:
    """One point per row with flops, bytes and a time: device, intensity (FLOP per byte),
    achieved GFLOP/s, footprint (bytes, or None), label, exercise number and marker."""
    out = []
    for res in _as_list(results):
        label_of = _LABELS.get(res.number)
        for row in res.rows:
            flops, nbytes, sec = row.get("flops"), row.get("bytes"), row.get("seconds")
            if not (flops and nbytes and sec):
                continue
            label = label_of(row) if label_of is not None else row.get("label") or res.name
            if label is None:
                continue
            out.append({"device": row["device"], "intensity": flops / nbytes, "gflops": flops / sec / 1e9,
                        "footprint": row.get("footprint"), "label": label, "exercise": res.number,
                        "marker": MARKERS.get(res.number, "D")})
    return out


# ---------------------------------------------------------------------------------------------
# roofs
# ---------------------------------------------------------------------------------------------


def _levels(peak: dict[str, Any]) -> list[dict[str, Any]]:
    """The device's memory levels, fastest (smallest) first: each cache, then main memory."""
    caches = [{"level": c["level"], "bytes": c["bytes"], "gbps": c["gbps"], "source": c["source"]}
              for c in peak.get("caches", ())]
    return caches + [{"level": "memory", "bytes": None, "gbps": peak["gbps"], "source": peak["gbps_source"]}]


def _level_index(levels: list[dict[str, Any]], footprint: float | None) -> int:
    if footprint is None:
        return 0  # unknown: held to the fastest level
    name = level_of(footprint, [lv for lv in levels if lv["bytes"] is not None])
    return next(i for i, lv in enumerate(levels) if lv["level"] == name)


def roofs(results: Result | Iterable[Result]) -> dict[str, dict[str, Any]]:
    """Each device's roofs from the peaks in the results' meta, raised where a point of the
    same run beat them: ``gflops``, ``gbps`` (main memory), their sources, ``levels`` (each
    cache level then main memory: ``level``, ``bytes``, ``gbps``, ``source``) and
    ``bandwidths`` (the caches as plots.roofline draws them)."""
    results = _as_list(results)
    peaks: dict[str, dict[str, Any]] = {}
    for res in results:
        peaks.update(res.meta.get("peaks") or {})
    out = {}
    pts = points(results)
    for dev, peak in peaks.items():
        roof = {"gflops": peak["gflops"], "gflops_source": peak["gflops_source"], "levels": _levels(peak)}
        for p in (p for p in pts if p["device"] == dev):
            _raise_to(roof, p)
        # data that fits in a cache runs at least as fast as from main memory
        levels = roof["levels"]
        for i in range(len(levels) - 2, -1, -1):
            if levels[i + 1]["gbps"] > levels[i]["gbps"]:
                levels[i] = {**levels[i], "gbps": levels[i + 1]["gbps"],
                             "source": f"{levels[i]['source']}, raised to the next level's"}
        memory = levels[-1]
        roof.update(gbps=memory["gbps"], gbps_source=memory["source"],
                    bandwidths=[{"name": f"{lv['level']} ({format_bytes(lv['bytes'])})", "gbps": lv["gbps"],
                                 "source": lv["source"]} for lv in levels[:-1]])
        out[dev] = roof
    return out


def _raise_to(roof: dict[str, Any], p: dict[str, Any]) -> None:
    """Raise the roof above point `p` where `p` beat it, naming `p` in the source."""
    if p["gflops"] > roof["gflops"]:
        roof["gflops"] = p["gflops"]
        roof["gflops_source"] = f"{p['label']}, above the peak measurement"
    i = _level_index(roof["levels"], p["footprint"])
    gbps = p["gflops"] / p["intensity"]
    if gbps > roof["levels"][i]["gbps"]:
        roof["levels"][i] = {**roof["levels"][i], "gbps": gbps,
                             "source": f"{p['label']}, above the add measured there"}


def roof_at(roof: dict[str, Any], p: dict[str, Any]) -> float:
    """The GFLOP/s roof over point `p`: the compute peak, or its memory level's bandwidth
    times its intensity, whichever is lower."""
    bandwidth = roof["levels"][_level_index(roof["levels"], p["footprint"])]["gbps"]
    return min(roof["gflops"], bandwidth * p["intensity"])


def roofline(results: Result | Iterable[Result], ax: Axes | None = None) -> Figure:
    """Achieved GFLOP/s of every timed row with flops and bytes, against each device's roofs.

    Example:
        >>> from gpudev.exercises import matmul_vs_small
        >>> fig = roofline(matmul_vs_small(n=256, peak_n=256))
    """
    from gpudev import plots

    results = _as_list(results)
    fig = ax.figure if ax is not None else None
    if ax is None:
        fig, (ax,) = plots.new_figure(7.5, 6)
    found = points(results)
    rf = roofs(results)
    legend = [(f"exercise {number} rows", marker) for number, marker in MARKERS.items()
              if any(p["exercise"] == number for p in found)]
    title = ("Roofline: achieved GFLOP/s under the measured roofs" if rf else
             "Achieved GFLOP/s (no peaks measured: run exercise 1)")
    plots.roofline(ax, found, rf, title=title, legend=legend)
    return fig
