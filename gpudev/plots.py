"""Figures for the exercises' results (matplotlib; the Agg backend when there is no display).

:func:`plot_result` draws one exercise's Result: bars with min-max whiskers for exercises
1 to 4 (exercise 1 adds a roofline panel), a log-log time-vs-size chart with the crossover
marked for exercise 5. :func:`roofline` draws achieved GFLOP/s against the peaks measured
in the same run. Figures are built without pyplot, so nothing accumulates in a global
figure list; in Jupyter, after ``%matplotlib inline``, a Figure displays itself.

    >>> from gpudev import exercises, plots
    >>> res = exercises.small_op_sweep(sizes=(4, 64), iters=100)
    >>> fig = plots.plot_result(res)
    >>> fig.savefig("sweep.png")
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import matplotlib

_SCREEN = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
_HEADLESS = sys.platform.startswith("linux") and not _SCREEN
if _HEADLESS and not os.environ.get("MPLBACKEND") and "ipykernel" not in sys.modules:
    matplotlib.use("Agg")  # never try to open a window where there is no screen

import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from gpudev.exercises import Result

__all__ = ["plot_result", "bars", "roofline", "sweep"]

# ---------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------

_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def _new_figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _device_color(device: str) -> str:
    """One colour per device across every figure: the CPU blue, GPUs the next colours."""
    if "+" in device:  # several GPUs together (exercise 4)
        return "C6"
    if device.startswith("cuda:"):
        return f"C{1 + int(device[5:]) % 5}"
    return "C0"


def _time_unit(seconds: Iterable[float]) -> tuple[float, str]:
    """The unit in which the largest of `seconds` reads as a number >= 1."""
    top = max((s for s in seconds if s and math.isfinite(s)), default=1.0)
    for scale, unit in _TIME_UNITS:
        if top >= scale:
            return scale, unit
    return _TIME_UNITS[-1]


def _short(seconds: float) -> str:
    for scale, unit in _TIME_UNITS:
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def bars(ax: Axes, items: Sequence[dict[str, Any]], *, ylabel: str, log: bool | None = None,
         annotate: bool = True) -> tuple[dict[tuple[str, str], float], float, float]:
    """Grouped bars with min-max whiskers; returns ({(group, series): x}, bar width, y scale).

    Each item: ``group`` (x tick), ``series`` (legend entry), ``median``, ``min``, ``max`` in
    seconds, optional ``color``, ``hatch`` and ``note`` (text above the bar). ``log=None``
    switches to a log axis when the values span more than two decades; the y scale is what
    seconds are divided by on the axis (1 on a log axis, 1e-3 for ms...).

    Example:
        >>> ax = Figure().subplots()
        >>> positions, width, scale = bars(
        ...     ax, [{"group": "a", "series": "cpu", "median": 1e-3, "min": 9e-4, "max": 2e-3}],
        ...     ylabel="time")
    """
    groups = list(dict.fromkeys(it["group"] for it in items))
    series = list(dict.fromkeys(it["series"] for it in items))
    values = [it["median"] for it in items if it["median"] > 0]
    if log is None:
        log = bool(values) and max(values) / min(values) > 100
    # On a linear axis one slow outlier repeat would flatten every bar: the axis stops at
    # twice the largest median and longer whiskers run off the top.
    lin_top = min(max(it["max"] for it in items), 2 * max(it["median"] for it in items)) * 1.3
    scale, unit = (1.0, "s") if log else _time_unit([lin_top])
    width = 0.8 / max(len(series), 1)
    drawn = set()
    positions: dict[tuple[str, str], float] = {}
    for it in items:
        g, s = groups.index(it["group"]), series.index(it["series"])
        x = g - 0.4 + width * (s + 0.5)
        positions[(it["group"], it["series"])] = x
        med = it["median"] / scale
        err = [[max(med - it["min"] / scale, 0)], [max(it["max"] / scale - med, 0)]]
        label = it["series"] if it["series"] not in drawn else None
        drawn.add(it["series"])
        ax.bar(x, med, width * 0.92, color=it.get("color", f"C{s}"), label=label,
               yerr=err, capsize=3, ecolor="0.25", error_kw={"linewidth": 1},
               hatch=it.get("hatch"), edgecolor="white" if not it.get("hatch") else "0.2")
        if annotate:
            text = it.get("note") or _short(it["median"])
            y = it["max"] if log else min(it["max"], lin_top / 1.3)
            ax.annotate(text, (x, y / scale), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7, rotation=90 if len(series) > 2 else 0)
    ax.set_xticks(range(len(groups)), [_wrap(g) for g in groups], fontsize=8)
    if log:
        ax.set_yscale("log")
        ax.set_ylabel(f"{ylabel} (s, log scale)")
        lo = min(it["min"] for it in items if it["min"] > 0)
        hi = max(it["max"] for it in items)
        ax.set_ylim(lo / 3, hi * (30 if annotate else 3))
    else:
        ax.set_ylabel(f"{ylabel} ({unit})")
        ax.set_ylim(0, lin_top / scale)
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="upper right")
    return positions, width, scale


def _count(n: int, word: str) -> str:
    plural = word[:-1] + "ies" if word.endswith("y") else word + "s"
    return f"{n:,} {word if n == 1 else plural}"


def _wrap(text: str, width: int = 18) -> str:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    return "\n".join(lines)


def _bar_item(row: dict[str, Any], group: str, series: str, **extra: Any) -> dict[str, Any]:
    return {"group": group, "series": series, "median": row["seconds"], "min": row["min_s"],
            "max": row["max_s"], **extra}


def _skipped_text(ax: Axes, res: Result) -> None:
    lines = ([f"skipped: {res.skipped}"] if res.skipped else []) + [f"note: {n}" for n in res.notes]
    if lines:
        ax.text(0.01, 0.99, "\n".join(_wrap(l_, 90) for l_ in lines), transform=ax.transAxes,
                va="top", ha="left", fontsize=7, color="0.3")


# ---------------------------------------------------------------------------------------------
# roofline: achieved GFLOP/s against the measured peaks
# ---------------------------------------------------------------------------------------------


_NOT_STEADY = ("first call", "unsynchronized (wrong)")  # rows that say nothing about throughput


def _roofline_points(results: Iterable[Result]) -> list[dict[str, Any]]:
    points = []
    for res in results:
        for row in res.rows:
            flops, nbytes, sec = row.get("flops"), row.get("bytes"), row.get("seconds")
            if not (flops and nbytes and sec) or row.get("timing") in _NOT_STEADY:
                continue
            label = row.get("label") or (f"b += b {row['size']}x{row['size']}" if "size" in row else res.name)
            points.append({"device": row["device"], "intensity": flops / nbytes,
                           "gflops": flops / sec / 1e9, "label": label, "exercise": res.number})
    return points


def roofline(results: Result | Iterable[Result], ax: Axes | None = None) -> Figure:
    """Achieved GFLOP/s of every timed row with flops and bytes, against each device's roof.

    The roof is min(peak GFLOP/s, peak GB/s x FLOP per byte), with both peaks measured in
    the same run by exercise 1 (a big sgemm and a big sum) and labelled as measured.

    Example:
        >>> fig = roofline(exercises.matmul_vs_small(n=256, calls=100))
    """
    results = [results] if hasattr(results, "rows") else list(results)
    fig = ax.figure if ax is not None else None
    if ax is None:
        fig, (ax,) = _new_figure(7.5, 5)
    peaks: dict[str, dict[str, Any]] = {}
    for res in results:
        peaks.update(res.meta.get("peaks") or {})
    points = _roofline_points(results)
    xs = [p["intensity"] for p in points] or [1.0]
    x_lo, x_hi = min(xs + [0.01]) / 3, max(xs + [100.0]) * 3
    grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 200)
    for dev, pk in peaks.items():
        roof = np.minimum(pk["gflops"], pk["gbps"] * grid)
        ax.plot(grid, roof, color=_device_color(dev), linewidth=2, alpha=0.7,
                label=f"{dev} roof: {pk['gflops']:.3g} GFLOP/s ({pk['gflops_source']}), "
                      f"{pk['gbps']:.3g} GB/s ({pk['gbps_source']})")
    markers = {1: "o", 3: "s", 5: "^"}
    placed: list[tuple[float, float]] = []
    for p in points:
        ax.scatter(p["intensity"], p["gflops"], color=_device_color(p["device"]),
                   marker=markers.get(p["exercise"], "D"), edgecolor="black", linewidth=0.5, zorder=3)
        # labels of points that (nearly) coincide go one under the other instead of on top
        where = (math.log10(p["intensity"]), math.log10(p["gflops"]))
        stacked = sum(abs(where[0] - x) < 0.3 and abs(where[1] - y) < 0.08 for x, y in placed)
        placed.append(where)
        ax.annotate(f"{p['label']} ({p['device']})", (p["intensity"], p["gflops"]),
                    xytext=(4, -2 - 8 * stacked), textcoords="offset points", fontsize=6, color="0.25")
    for ex, m in markers.items():
        if any(p["exercise"] == ex for p in points):
            ax.scatter([], [], marker=m, color="0.6", edgecolor="black", label=f"exercise {ex} rows")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of least memory traffic)")
    ax.set_ylabel("achieved GFLOP/s (log scale)")
    ax.set_title("Roofline: achieved vs measured peaks" if peaks else
                 "Achieved GFLOP/s (no peaks measured: run exercise 1)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6, loc="upper left")
    if peaks:
        # the memory roof is main-memory bandwidth; small arrays stay in the caches
        ax.text(0.99, 0.01, "points above the memory roof ran from the caches, faster than main memory",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="0.3")
    return fig


# ---------------------------------------------------------------------------------------------
# exercise 5: per-op time vs size
# ---------------------------------------------------------------------------------------------


def sweep(res: Result, ax: Axes | None = None) -> Figure:
    """Log-log time of one ``b += b`` vs elements, one line per device, crossovers marked."""
    fig = ax.figure if ax is not None else None
    if ax is None:
        fig, (ax,) = _new_figure(7.5, 5)
    devices = list(dict.fromkeys(r["device"] for r in res.rows))
    for dev in devices:
        rows = [r for r in res.rows if r["device"] == dev]
        x = np.array([r["elements"] for r in rows], dtype=float)
        y = np.array([r["per_op_s"] for r in rows])
        # clipped at 0: rounding can put min_s / iters a hair above the per-op median
        lo = np.maximum(y - np.array([r["min_s"] / r["iters"] for r in rows]), 0)
        hi = np.maximum(np.array([r["max_s"] / r["iters"] for r in rows]) - y, 0)
        ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, color=_device_color(dev), label=dev)
        fit = res.meta.get("fits", {}).get(dev)
        if fit and fit.get("bandwidth_gbps"):
            grid = np.logspace(math.log10(x.min()), math.log10(x.max()), 100)
            model = fit["t0_s"] + 8.0 * grid / (fit["bandwidth_gbps"] * 1e9)
            ax.plot(grid, model, linestyle=":", color=_device_color(dev), alpha=0.8,
                    label=f"{dev} model: {_short(fit['t0_s'])} + bytes / {fit['bandwidth_gbps']:.3g} GB/s")
    for g, c in res.meta.get("crossovers", {}).items():
        if c.get("status") == "crossover":
            ax.axvline(c["elements"], color=_device_color(g), linestyle="--")
            ax.annotate(f"{g} wins from ~{c['size']:.0f}x{c['size']:.0f}", (c["elements"], 0.5),
                        xycoords=("data", "axes fraction"), rotation=90, ha="right", va="center",
                        fontsize=8, color=_device_color(g))
        else:
            ax.text(0.02, 0.02, f"{g}: {c.get('status')}", transform=ax.transAxes, fontsize=8)
    if not res.meta.get("crossovers") and not any(d.startswith("cuda") for d in devices):
        ax.text(0.02, 0.02, "no GPU measured: no crossover to mark", transform=ax.transAxes,
                fontsize=8, color="0.3")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements in b (size x size, float32)")
    ax.set_ylabel("time of one b += b (s, log scale)")
    ax.set_title(f"Exercise 5: b += b, {res.meta.get('iters')} iterations per timed loop")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    return fig


# ---------------------------------------------------------------------------------------------
# one figure per exercise
# ---------------------------------------------------------------------------------------------


def _exercise1(res: Result) -> Figure:
    fig, (left, right) = _new_figure(15, 5.5, ncols=2)
    items = []
    hatches = {"first call": "//", "unsynchronized (wrong)": "xx"}
    for r in res.rows:
        series = r["device"] + ("" if r["timing"] == "synchronized" else f" {r['timing']}")
        items.append(_bar_item(r, r["label"], series, color=_device_color(r["device"]),
                               hatch=hatches.get(r["timing"])))
    bars(left, items, ylabel="time per call", log=True)
    left.set_title("Exercise 1: time per call (median, whiskers min-max); hatched: first call, "
                   "crossed: timed without synchronizing", fontsize=9)
    _skipped_text(left, res)
    roofline(res, ax=right)
    return fig


def _exercise2(res: Result) -> Figure:
    fig, (ax,) = _new_figure(9, 5)
    items = [_bar_item(r, r["action"], r["device"], color=_device_color(r["device"]),
                       note=f"{_short(r['seconds'])}, {_count(r['copies'], 'copy')}") for r in res.rows]
    bars(ax, items, ylabel="time")
    size = res.meta.get("file_bytes")
    ax.set_title(f"Exercise 2: the 10-512-10 model on {res.meta.get('device')}: parameter copies, "
                 f"save and load (file {size:,} bytes; median, whiskers min-max)", fontsize=9)
    _skipped_text(ax, res)
    return fig


def _exercise3(res: Result) -> Figure:
    fig, (ax,) = _new_figure(9, 5)
    items = [_bar_item(r, f"({r['variant']}) {r['label']}", r["device"], color=_device_color(r["device"]),
                       note=(f"{_short(r['seconds'])}\n{_count(r['syncs'], 'sync')}, "
                             f"{_count(r['copies'], 'copy')}"))
             for r in res.rows]
    bars(ax, items, ylabel=f"time for {res.meta.get('n')} logged norms")
    ax.set_title(f"Exercise 3: {res.meta.get('n')} products of {res.meta.get('size')}x{res.meta.get('size')} "
                 f"with the norm logged (median, whiskers min-max)", fontsize=9)
    _skipped_text(ax, res)
    return fig


def _exercise4(res: Result) -> Figure:
    fig, (ax,) = _new_figure(10, 5.5)
    items = []
    for r in res.rows:
        note = _short(r["seconds"])
        if r.get("overlap") is not None:
            note += f"\n{100 * r['overlap']:.0f}% overlap"
        if r.get("speedup") is not None:
            note += f"\n{r['speedup']:.2f}x (ideal 2x)"
        items.append(_bar_item(r, r["scenario"], r["device"], color=_device_color(r["device"]), note=note))
    if items:
        positions, width, scale = bars(ax, items, ylabel="wall-clock time")
        top = ax.get_ylim()[1] * scale
        for r in res.rows:  # where 'both' would land with no overlap and with full overlap
            if r.get("no_overlap_s") is None:
                continue
            x = positions[(r["scenario"], r["device"])]
            top = max(top, r["no_overlap_s"])
            for value, style, label in ((r["no_overlap_s"], "--", "no overlap (sum of the two)"),
                                        (r["full_overlap_s"], ":", "full overlap (the longer one)")):
                ax.hlines(value / scale, x - width / 2, x + width / 2, colors="black", linestyles=style,
                          label=label if not ax.get_legend_handles_labels()[1].count(label) else None)
        ax.set_ylim(0, top / scale * 1.3)
        ax.legend(fontsize=8, loc="upper right")
    ax.set_title("Exercise 4: two products with host work, and on two GPUs (median, whiskers min-max)",
                 fontsize=9)
    _skipped_text(ax, res)
    return fig


def _exercise5(res: Result) -> Figure:
    fig = sweep(res)
    _skipped_text(fig.axes[0], res)
    return fig


_PLOTTERS = {1: _exercise1, 2: _exercise2, 3: _exercise3, 4: _exercise4, 5: _exercise5}


def plot_result(res: Result) -> Figure:
    """The figure for one exercise's Result (titles, units and legends included).

    Example:
        >>> fig = plot_result(exercises.norm_logging(n=20, size=8, repeats=2))
    """
    try:
        plotter = _PLOTTERS[res.number]
    except KeyError:
        raise ValueError(f"plot_result: no figure for exercise {res.number!r} ({res.name}); "
                         f"exercises are numbered 1 to {len(_PLOTTERS)}") from None
    return plotter(res)
