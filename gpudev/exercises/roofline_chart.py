"""The roofline chart of several Results: the achieved GFLOP/s of every steady timed row
against roofs measured in the same run with the same kind of workload.

A row takes part when it has a ``workload`` field (what kind of work it times) and flops,
bytes and a time. Two kinds have roofs:

- ``'matmul'`` rows are bounded by the compute roof: the best rate any synchronized matrix
  product reached on that device in this run (exercise 1's peak products, its main product's
  first call and warm repeats, exercise 3's products);
- ``'b += b'`` rows (an in-place elementwise add, 8 bytes of traffic per element) are bounded
  by one bandwidth roof per memory level *and* threading: the best rate of that same add on
  data of that level, split over threads or not (gpudev splits an elementwise operation over
  threads from ``elementwise_parallel_from`` elements on, so the jump there is the threads,
  not a cache). Exercise 1 measures one add per cache level and main memory; exercise 5's
  sweep adds its own sizes.

A roof is the best repeat (the fastest, least disturbed) of its workload; a point is a row's
median. So a point never lies above its own roof by construction of the statistics, and the
referee checks it. Rows marked ``demonstration`` (a wrong timing shown on purpose), first
calls, and rows of emulated devices are neither points nor roof evidence.

    >>> from gpudev import exercises as ex
    >>> results = ex.run(only=[1, 5], quick=True)
    >>> pts, rf = points(results), roofs(results)
    >>> all(p["gflops"] <= roof_at(rf[p["device"]], p) * (1 + 1e-9) for p in pts)
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

__all__ = ["MARKERS", "NOT_STEADY", "WORKLOADS", "emulated", "evidence", "plot_data", "point_label", "points", "roof_at",
           "roof_key", "roofline", "roofs"]

MARKERS = {1: "o", 3: "s", 5: "^"}  # by exercise number; other exercises' points are diamonds
# the kinds of work that have roofs, and what their roof is a rate of
WORKLOADS = {"matmul": "gflops", "b += b": "gbps"}
# timings that say nothing about steady throughput: never points (a first call is still a
# synchronized measurement, so its rate is evidence of what the device can do)
NOT_STEADY = ("first call", "unsynchronized (wrong)")

PointLabel = Callable[[dict[str, Any]], "str | None"]  # a row's label; None: not a point
_LABELS: dict[int, PointLabel] = {}


def point_label(number: int) -> Callable[[PointLabel], PointLabel]:
    """Decorator: the decorated function labels exercise `number`'s rows on the chart
    (returning None for a row that is not a point, e.g. a roof measurement)."""

    def register(fn: PointLabel) -> PointLabel:
        _LABELS[number] = fn
        return fn

    return register


def _as_list(results: Result | Iterable[Result]) -> list[Result]:
    return [results] if hasattr(results, "rows") else list(results)


def emulated(results: Result | Iterable[Result], device: str) -> bool:
    """True when `device` is an emulated GPU in any of the results (its device description
    says so): it has no roofs and no speed claims."""
    return any(bool((res.meta.get("devices") or {}).get(device, {}).get("emulated")) for res in _as_list(results))


def _caches(results: list[Result]) -> dict[str, list[dict[str, Any]]]:
    """Each device's cache levels, from exercise 1's peaks or exercise 5's sweep."""
    out: dict[str, list[dict[str, Any]]] = {}
    for res in results:
        for dev, peak in (res.meta.get("peaks") or {}).items():
            out.setdefault(dev, [{"level": c["level"], "bytes": c["bytes"]} for c in peak.get("caches", ())])
        for dev, levels in (res.meta.get("caches") or {}).items():
            out.setdefault(dev, [{"level": c["level"], "bytes": c["bytes"]} for c in levels])
    return out


def roof_key(row: dict[str, Any], caches: list[dict[str, Any]]) -> tuple[Any, ...]:
    """Which roof bounds `row`: ('matmul',) or ('b += b', memory level, split over threads).

    >>> roof_key({"workload": "b += b", "footprint": 1000, "threaded": False}, [{"level": "L1d", "bytes": 32768}])
    ('b += b', 'L1d', False)
    """
    if row["workload"] == "matmul":
        return ("matmul",)
    return (row["workload"], level_of(row.get("footprint"), caches), bool(row.get("threaded")))


def _usable(res: Result, row: dict[str, Any], results: list[Result]) -> bool:
    return (row.get("workload") in WORKLOADS and not row.get("demonstration")
            and bool(row.get("flops") and row.get("bytes") and row.get("seconds") and row.get("min_s"))
            and not emulated(results, row["device"]))


def _rate(row: dict[str, Any], seconds: float) -> float:
    """The row's rate at `seconds`, in its workload's unit (GFLOP/s or GB/s)."""
    work = row["flops"] if WORKLOADS[row["workload"]] == "gflops" else row["bytes"]
    return work / seconds / 1e9


def evidence(results: Result | Iterable[Result]) -> list[dict[str, Any]]:
    """Every row whose best repeat tells what its device can do: device, roof key, rate of
    the best repeat, and where it comes from (exercise and label)."""
    results = _as_list(results)
    caches = _caches(results)
    out = []
    for res in results:
        label_of = _LABELS.get(res.number)
        for row in res.rows:
            if not _usable(res, row, results) or row.get("timing") == "unsynchronized (wrong)":
                continue
            label = (label_of(row) if label_of is not None else None) or row.get("label") or res.name
            if row.get("timing") == "first call":
                label += ", first call"
            out.append({"device": row["device"], "key": roof_key(row, caches.get(row["device"], [])),
                        "rate": _rate(row, row["min_s"]),
                        "source": f"exercise {res.number}: {label}, best repeat"})
    return out


def points(results: Result | Iterable[Result]) -> list[dict[str, Any]]:
    """One point per steady row of a workload with a roof: device, intensity (FLOP per
    byte), achieved GFLOP/s (at the median), footprint, roof key, label, exercise, marker."""
    results = _as_list(results)
    caches = _caches(results)
    out = []
    for res in results:
        label_of = _LABELS.get(res.number)
        for row in res.rows:
            if not _usable(res, row, results) or row.get("timing") in NOT_STEADY:
                continue
            label = label_of(row) if label_of is not None else row.get("label") or res.name
            if label is None:
                continue
            out.append({"device": row["device"], "intensity": row["flops"] / row["bytes"],
                        "gflops": row["flops"] / row["seconds"] / 1e9, "footprint": row.get("footprint"),
                        "key": roof_key(row, caches.get(row["device"], [])), "label": label,
                        "exercise": res.number, "marker": MARKERS.get(res.number, "D")})
    return out


def _roof_name(key: tuple[Any, ...], caches: list[dict[str, Any]]) -> str:
    if key[0] == "matmul":
        return "matmul"
    size = next((c["bytes"] for c in caches if c["level"] == key[1]), None)
    where = "main memory" if key[1] == "memory" else f"{key[1]} ({format_bytes(size)})"
    return f"{key[0]} in {where}, {'split over threads' if key[2] else 'one thread'}"


def roofs(results: Result | Iterable[Result]) -> dict[str, dict[str, Any]]:
    """Each device's roofs (not for emulated devices): ``gflops`` and ``gflops_source`` (the
    compute roof, or None when no product ran), and ``bandwidths``: one per memory level and
    threading, slowest first, each ``key``, ``name``, ``gbps`` and ``source``."""
    results = _as_list(results)
    caches = _caches(results)
    best: dict[tuple[str, tuple[Any, ...]], dict[str, Any]] = {}
    for e in evidence(results):
        slot = (e["device"], e["key"])
        if slot not in best or e["rate"] > best[slot]["rate"]:
            best[slot] = e
    out: dict[str, dict[str, Any]] = {}
    for (dev, key), e in best.items():
        roof = out.setdefault(dev, {"gflops": None, "gflops_source": None, "bandwidths": []})
        if key[0] == "matmul":
            roof.update(gflops=e["rate"], gflops_source=e["source"])
        else:
            roof["bandwidths"].append({"key": list(key), "name": _roof_name(key, caches.get(dev, [])),
                                       "gbps": e["rate"], "source": e["source"]})
    for roof in out.values():
        roof["bandwidths"].sort(key=lambda b: b["gbps"])
    return out


def roof_at(roof: dict[str, Any], p: dict[str, Any]) -> float:
    """The GFLOP/s roof over point `p`: the compute roof for a product, else the bandwidth of
    its own level and threading times its intensity."""
    key = list(p["key"])
    if key[0] == "matmul":
        return roof["gflops"]
    bandwidth = next(b["gbps"] for b in roof["bandwidths"] if b["key"] == key)
    return bandwidth * p["intensity"]


def plot_data(results: Result | Iterable[Result]) -> dict[str, Any]:
    """What the roofline chart draws, as JSON values: the points and the roofs (the referee
    checks them against the tables)."""
    pts = [{**p, "key": list(p["key"])} for p in points(results)]
    return {"points": pts, "roofs": roofs(results)}


def roofline(results: Result | Iterable[Result], ax: Axes | None = None) -> Figure:
    """Achieved GFLOP/s of every steady row of a workload with a roof, under its roofs.

    Example:
        >>> from gpudev.exercises import matmul_vs_small
        >>> fig = roofline(matmul_vs_small(n=256, peak_n=256))
    """
    from gpudev import plots

    results = _as_list(results)
    fig = ax.figure if ax is not None else None
    if ax is None:
        fig, (ax,) = plots.new_figure(9, 7)
    data = plot_data(results)
    found = data["points"]
    legend = [(f"exercise {number} rows", marker) for number, marker in MARKERS.items()
              if any(p["exercise"] == number for p in found)]
    title = ("Roofline: achieved GFLOP/s (medians) under the best rate of the same workload" if data["roofs"]
             else "Achieved GFLOP/s (no roofs: no workload with a roof ran)")
    plots.roofline(ax, found, data["roofs"], title=title, legend=legend)
    return fig
