"""Generic charts (matplotlib; the Agg backend when there is no display).

:func:`bars` draws grouped bars with min-max whiskers, :func:`roofline` achieved GFLOP/s
against each device's roof; :func:`new_figure`, :func:`device_color`, :func:`legend`,
:func:`set_title`, :func:`time_unit` and :func:`wrap` are what figures share, and
:func:`label_overlaps` finds the texts of a drawn figure that collide (the tests hold every
figure to none). Figures are built without pyplot, so nothing accumulates in a global figure
list; in Jupyter, after ``%matplotlib inline``, a Figure displays itself.
The exercises' figures (``Result.plot()``) are drawn with these in ``gpudev.exercises``.

    >>> fig, (ax,) = new_figure(6, 4)
    >>> _ = bars(ax, [{"group": "sum", "series": "cpu", "median": 2e-6, "min": 1e-6, "max": 3e-6}],
    ...          ylabel="time")
    >>> fig.savefig("bars.png")
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
from matplotlib.layout_engine import ConstrainedLayoutEngine  # noqa: E402

from ._format import TIME_SCALES, format_seconds  # noqa: E402
from ._format import time_unit as _unit_of  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["bars", "device_color", "label_overlaps", "legend", "new_figure", "roofline", "set_title", "time_unit",
           "wrap"]

MICRO = "µs"  # how figures write microseconds


def new_figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Axes]]:
    """A Figure of `width` x `height` inches with `ncols` axes side by side (constrained layout)."""
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def device_color(device: str) -> str:
    """One colour per device across every figure: the CPU blue, GPUs the next colours, and
    several GPUs together ('cuda:0+cuda:1') their own.

    >>> device_color("cpu"), device_color("cuda:0")
    ('C0', 'C1')
    """
    if "+" in device:
        return "C6"
    if device.startswith("cuda:"):
        return f"C{1 + int(device[5:]) % 5}"
    return "C0"


def time_unit(seconds: Iterable[float]) -> tuple[float, str]:
    """(scale, unit) in which the largest of `seconds` reads as a number >= 1.

    >>> time_unit([2e-6, 5e-5])
    (1e-06, 'µs')
    """
    top = max((s for s in seconds if s and math.isfinite(s)), default=1.0)
    unit = _unit_of(top)
    return TIME_SCALES[unit], MICRO if unit == "us" else unit


def wrap(text: str, width: int = 18) -> str:
    """`text` broken into lines of at most `width` characters (words are never split).

    >>> wrap("one SGD step (batch 64)")
    'one SGD step\\n(batch 64)'
    """
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# bars with whiskers
# ---------------------------------------------------------------------------------------------


def bars(ax: Axes, items: Sequence[dict[str, Any]], *, ylabel: str, log: bool | None = None,
         annotate: bool = True, with_legend: bool = True) -> tuple[dict[tuple[str, str], float],
                                                                  dict[tuple[str, str], float], float]:
    """Grouped bars with min-max whiskers; returns ({(group, series): x}, {(group, series): bar
    width}, y scale).

    Each item: ``group`` (x tick), ``series`` (legend entry), ``median``, ``min``, ``max`` in
    seconds, optional ``color``, ``hatch`` and ``note`` (text above the whisker). A group has
    a bar for each of its own series only, so its bars stay as wide as they can be; with
    several series the notes stand upright along their bars, in a font no thicker than a
    bar, so that two notes never meet. ``log=None`` switches to a log axis when the values
    span more than two decades or a whisker reaches past 4 times the tallest bar; every
    whisker stays inside the axes. The y scale is what seconds are divided by on the axis (1
    on a log axis, 1e-3 for ms...). The legend (``with_legend``; :func:`legend` draws it
    later, e.g. after more labelled artists) sits above the axes, where it covers nothing.

    Example:
        >>> ax = new_figure(4, 3)[1][0]
        >>> positions, widths, scale = bars(
        ...     ax, [{"group": "a", "series": "cpu", "median": 1e-3, "min": 9e-4, "max": 2e-3}],
        ...     ylabel="time")
    """
    groups = list(dict.fromkeys(it["group"] for it in items))
    series = list(dict.fromkeys(it["series"] for it in items))
    values = [it["median"] for it in items if it["median"] > 0]
    top = max(it["max"] for it in items)
    if log is None:
        # a log axis when the bars span two decades, or when a slow outlier repeat would
        # flatten every bar on a linear one (the whiskers always stay inside the axes)
        log = bool(values) and (max(values) / min(values) > 100 or top > 4 * max(values))
    lin_top = top * 1.35  # room for the notes above the whiskers
    scale, unit = (1.0, "s") if log else time_unit([lin_top])
    members = {g: [s for s in series if any(it["group"] == g and it["series"] == s for it in items)] for g in groups}
    # a lonely bar is no wider than one of three
    slots = {g: max(len(m), min(len(series), 3)) for g, m in members.items()}
    widths = {g: 0.8 / slots[g] for g in groups}
    # an upright note is about 1.25 font sizes thick: it must fit in the narrowest bar (the
    # axes' share of the figure before the layout, which only widens it)
    per_group = ax.get_position().width * ax.figure.get_figwidth() / max(len(groups), 1)
    upright = len(series) > 1
    note_size = max(4.5, min(7.0, per_group * 72 * min(widths.values()) / 1.25)) if upright else 7.0
    drawn = set()
    positions: dict[tuple[str, str], float] = {}
    bar_widths: dict[tuple[str, str], float] = {}
    for it in items:
        g, width = groups.index(it["group"]), widths[it["group"]]
        slot = members[it["group"]].index(it["series"]) + (slots[it["group"]] - len(members[it["group"]])) / 2
        x = g - 0.4 + width * (slot + 0.5)
        positions[(it["group"], it["series"])] = x
        bar_widths[(it["group"], it["series"])] = width
        med = it["median"] / scale
        err = [[max(med - it["min"] / scale, 0)], [max(it["max"] / scale - med, 0)]]
        label = it["series"] if it["series"] not in drawn else None
        drawn.add(it["series"])
        ax.bar(x, med, width * 0.92, color=it.get("color", f"C{series.index(it['series'])}"), label=label,
               yerr=err, capsize=3, ecolor="0.25", error_kw={"linewidth": 1},
               hatch=it.get("hatch"), edgecolor="white" if not it.get("hatch") else "0.2")
        if annotate:
            text = it.get("note") or format_seconds(it["median"], micro=MICRO)
            ax.annotate(text, (x, it["max"] / scale), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=note_size, rotation=90 if upright else 0)
    # about 3 characters of 8-point text per tenth of an inch of each group's share of the axes
    ax.set_xticks(range(len(groups)), [wrap(g, max(8, min(18, int(per_group * 11)))) for g in groups], fontsize=8)
    if log:
        ax.set_yscale("log")
        ax.set_ylabel(f"{ylabel} (s, log scale)")
        lo = min(it["min"] for it in items if it["min"] > 0)
        hi = max(it["max"] for it in items)
        ax.set_ylim(lo / 3, hi * (30 if annotate else 3))  # room above the tallest bar for its note
    else:
        ax.set_ylabel(f"{ylabel} ({unit})")
        ax.set_ylim(0, lin_top / scale)
    ax.grid(axis="y", alpha=0.3, which="both")
    if with_legend:
        legend(ax)
    return positions, bar_widths, scale


def legend(ax: Axes, fontsize: float = 8) -> Any:
    """The legend of `ax`'s labelled artists, above the axes (outside every axes of a
    constrained-layout figure, so it covers no bar and no label; inside the axes, upper
    right, in a figure without that layout), in as many columns as the figure's width holds.

    Example:
        >>> ax = new_figure(4, 3)[1][0]
        >>> _ = ax.plot([1, 2], label="cpu"), legend(ax)
    """
    handles, labels = ax.get_legend_handles_labels()
    # an entry: its handle, the gaps, and about 0.55 font sizes per character
    entry = fontsize * (4.0 + 0.55 * max((len(text) for text in labels), default=1))
    fits = max(1, int(0.95 * ax.figure.get_figwidth() * 72 // entry))
    rows = -(-len(labels) // fits) if labels else 1
    cols = -(-len(labels) // rows) if labels else 1
    if isinstance(ax.figure.get_layout_engine(), ConstrainedLayoutEngine):
        return ax.figure.legend(handles, labels, loc="outside upper center", ncols=cols, fontsize=fontsize,
                                frameon=False)
    return ax.legend(handles, labels, loc="upper right", ncols=cols, fontsize=fontsize)


def set_title(ax: Axes, text: str, fontsize: float = 9) -> None:
    """`text` as `ax`'s title, broken into lines that fit the axes' width."""
    width = ax.get_position().width * ax.figure.get_figwidth() * 72  # in points, before the layout widens it
    ax.set_title(wrap(text, max(20, int(width / (0.55 * fontsize)))), fontsize=fontsize)


# ---------------------------------------------------------------------------------------------
# roofline: achieved GFLOP/s against each device's roof
# ---------------------------------------------------------------------------------------------


def roofline(ax: Axes, points: Sequence[dict[str, Any]], roofs: dict[str, dict[str, Any]], *,
             title: str, legend: Sequence[tuple[str, str]] = ()) -> None:
    """Achieved GFLOP/s of `points` against each device's roofs, on log-log axes.

    Each point: ``device``, ``intensity`` (FLOP per byte), ``gflops``, ``label`` and
    ``marker``; points are numbered on the chart (numbers placed so they do not overlap) and
    listed in a legend. `roofs` maps a device to its compute roof ``gflops`` (None: none)
    with ``gflops_source``, and ``bandwidths``: dicts of ``name``, ``gbps`` and ``source``,
    one line each (a bandwidth times the intensity, up to the compute roof). `legend` lists
    (text, marker) entries that explain the markers. Every legend sits inside the axes.

    Example:
        >>> ax = Figure().subplots()
        >>> roofline(ax, [{"device": "cpu", "intensity": 0.25, "gflops": 5.0, "label": "sum",
        ...                "marker": "o"}],
        ...          {"cpu": {"gflops": 200.0, "gflops_source": "sgemm", "bandwidths": [
        ...                       {"name": "L2", "gbps": 90.0, "source": "add in L2"}]}},
        ...          title="CPU roofline")
    """
    xs = [p["intensity"] for p in points] or [1.0]
    x_lo, x_hi = min(xs + [0.01]) / 3, max(xs + [100.0]) * 3
    grid = np.logspace(math.log10(x_lo), math.log10(x_hi), 200)
    styles = ("--", ":", "-.", (0, (5, 1, 1, 1)), (0, (1, 3)))
    for dev, pk in roofs.items():
        color = device_color(dev)
        top = pk.get("gflops") or math.inf
        if pk.get("gflops"):
            ax.axhline(pk["gflops"], color=color, linewidth=2, alpha=0.7,
                       label=f"{dev} compute: {pk['gflops']:.3g} GFLOP/s ({pk['gflops_source']})")
        for k, bw in enumerate(pk.get("bandwidths", ())):
            ax.plot(grid, np.minimum(top, bw["gbps"] * grid), color=color, linewidth=1, alpha=0.7,
                    linestyle=styles[k % len(styles)],
                    label=f"{dev} {bw['name']}: {bw['gbps']:.3g} GB/s ({bw['source']})")
    roof_legend = ax.legend(fontsize=6, loc="upper left", framealpha=0.9) if roofs else None
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ys = [p["gflops"] for p in points] + [pk["gflops"] for pk in roofs.values() if pk.get("gflops")]
    if ys:
        # room above the roofs for their legend, and below the points for theirs
        ax.set_ylim(min(ys) / 10 ** (0.25 * (len(points) + len(legend)) ** 0.5 + 0.5), max(ys) * 30)
    handles = _roofline_points(ax, points)
    for text, marker in legend:
        handles.append(ax.scatter([], [], marker=marker, color="0.6", edgecolor="black", label=text))
    if handles:
        ax.legend(handles=handles, fontsize=6, loc="lower right", framealpha=0.9)
        if roof_legend is not None:
            ax.add_artist(roof_legend)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of least memory traffic)")
    ax.set_ylabel("achieved GFLOP/s (log scale)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, which="both")


# where a point's number may go, in points from its marker: near first, then further out
# (with a line back to the marker)
_LABEL_SPOTS = [(dx * r, dy * r) for r in (1, 2, 3, 4)
                for dx, dy in ((7, -3), (-13, -3), (-3, 6), (-3, -12), (7, 5), (-13, 5), (7, -10), (-13, -10))]
_LABEL_SIZE = (11.0, 8.0)  # a number of up to two digits at 7 points, in points
_MARKER_R = 4.0  # half a marker, in points


def _overlaps(box: tuple[float, float, float, float], other: tuple[float, float, float, float]) -> bool:
    return not (box[2] <= other[0] or other[2] <= box[0] or box[3] <= other[1] or other[3] <= box[1])


def _place_numbers(ax: Axes, points: Sequence[dict[str, Any]]) -> list[tuple[float, float]]:
    """An offset (in points) for each point's number such that no number overlaps another
    number or a marker, found in display space once the axes' limits are set."""
    scale = 72.0 / ax.figure.dpi  # display pixels to points
    where = [tuple(v * scale for v in ax.transData.transform((p["intensity"], p["gflops"]))) for p in points]
    taken = [(x - _MARKER_R, y - _MARKER_R, x + _MARKER_R, y + _MARKER_R) for x, y in where]
    offsets = []
    for x, y in where:
        for dx, dy in _LABEL_SPOTS:
            box = (x + dx, y + dy, x + dx + _LABEL_SIZE[0], y + dy + _LABEL_SIZE[1])
            if not any(_overlaps(box, t) for t in taken):
                break
        taken.append(box)
        offsets.append((dx, dy))
    return offsets


def _roofline_points(ax: Axes, points: Sequence[dict[str, Any]]) -> list[Any]:
    """Each point, numbered next to its marker (numbers placed apart from each other and from
    the markers); returns legend handles 'number: label (device)'. The axes' limits must be
    set before."""
    handles = []
    for k, p in enumerate(points, start=1):
        handles.append(ax.scatter(p["intensity"], p["gflops"], color=device_color(p["device"]),
                                  marker=p["marker"], edgecolor="black", linewidth=0.5, zorder=3,
                                  label=f"{k}: {p['label']} ({p['device']}), {p['gflops']:.3g} GFLOP/s"))
    for k, (p, (dx, dy)) in enumerate(zip(points, _place_numbers(ax, points)), start=1):
        far = abs(dx) > 14 or abs(dy) > 12
        ax.annotate(str(k), (p["intensity"], p["gflops"]), xytext=(dx, dy), textcoords="offset points",
                    ha="left", va="bottom", fontsize=7, color="0.2",
                    arrowprops={"arrowstyle": "-", "color": "0.6", "linewidth": 0.5} if far else None)
    return handles


# ---------------------------------------------------------------------------------------------
# checking a figure: texts that collide
# ---------------------------------------------------------------------------------------------


def _drawn_texts(fig: Figure) -> list[Any]:
    """Every non-empty visible text the figure draws: titles, axis and tick labels within the
    view, annotations, legend entries."""
    from matplotlib.text import Text

    ticks = set()
    shown = []
    for ax in fig.axes:
        for axis, (lo, hi) in ((ax.xaxis, sorted(ax.get_xlim())), (ax.yaxis, sorted(ax.get_ylim()))):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update((tick.label1, tick.label2))
                inside = lo <= tick.get_loc() <= hi
                shown += [t for t in (tick.label1, tick.label2) if inside and t.get_visible()]
    shown += [t for t in fig.findobj(Text) if t not in ticks and t.get_visible()]
    return [t for t in dict.fromkeys(shown) if t.get_text().strip() and t.get_alpha() != 0]


def label_overlaps(fig: Figure) -> list[str]:
    """The collisions of a figure's texts, drawn on an Agg canvas and measured with
    matplotlib's text extents: two texts whose boxes overlap, a text under a legend it is not
    part of, and a text cut off by the figure's edge. Empty for a readable figure.

    >>> fig, (ax,) = new_figure(3, 2)
    >>> _ = ax.text(0.5, 0.5, "one"), ax.text(0.5, 0.5, "two")
    >>> label_overlaps(fig)
    ["'one' overlaps 'two'"]
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the figure is laid out and drawn as savefig would
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = _drawn_texts(fig)
    boxes = [t.get_window_extent(renderer) for t in texts]
    legends = [lg for ax in fig.axes for lg in ([ax.get_legend()] if ax.get_legend() else [])] + list(fig.legends)
    own = {id(t): lg for lg in legends for t in lg.get_texts() + [lg.get_title()]}
    found = []
    edge = fig.bbox.padded(1)  # a pixel of rounding at the edge is not a cut
    for i, (t, box) in enumerate(zip(texts, boxes)):
        if not (edge.x0 <= box.x0 and box.x1 <= edge.x1 and edge.y0 <= box.y0 and box.y1 <= edge.y1):
            found.append(f"{t.get_text()!r} is cut off by the figure's edge")
        for u, other in zip(texts[i + 1:], boxes[i + 1:]):
            if _area(box, other) > 1.0:  # in square pixels: touching is not overlapping
                found.append(f"{t.get_text()!r} overlaps {u.get_text()!r}")
        for lg in legends:
            if own.get(id(t)) is not lg and _area(box, lg.get_window_extent(renderer)) > 1.0:
                found.append(f"the legend covers {t.get_text()!r}")
    return found


def _area(a: Any, b: Any) -> float:
    """The area two boxes (matplotlib Bboxes, in pixels) have in common."""
    return max(0.0, min(a.x1, b.x1) - max(a.x0, b.x0)) * max(0.0, min(a.y1, b.y1) - max(a.y0, b.y0))
