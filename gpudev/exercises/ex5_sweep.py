"""Exercise 5: the ``b += b`` loop for growing sizes on each device, the cost of one small
operation, and the size from which a GPU beats the CPU.

    >>> res = small_op_sweep(sizes=(4, 64), iters=100, repeats=2)
    >>> [(r["size"], r["iters"]) for r in res.rows]
    [(4, 100), (64, 100)]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

import gpudev as gd

from .._devices import DeviceLike
from .._format import format_ratio, format_seconds
from .measure import device_meta, devices_to_run, positive_int, step, time_repeats
from .result import TIMING_FIELDS, Result, figure_of, notes_text
from .roofline_chart import point_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "FIELDS", "conclusion", "crossover", "fit_cost", "plot", "small_op_sweep", "sweep"]

NUMBER = 5
FIELDS = {
    **TIMING_FIELDS,
    "size": "side of the square array b",
    "elements": "size * size",
    "iters": "b += b operations in one timed loop (seconds is the whole loop)",
    "per_op_s": "seconds / iters: time of one b += b",
    "flops": "floating-point operations of the timed loop (one add per element per op)",
    "bytes": "the least memory traffic of the timed loop (each op reads and writes b once)",
    "gbps": "bytes / seconds / 1e9",
}
COLUMNS = [("device", "device", "text"), ("size", "size", "int"), ("elements", "elements", "int"),
           ("seconds", "loop time", "time"), ("per_op_s", "per op", "time"),
           ("min_s", "loop min", "time"), ("max_s", "loop max", "time"), ("gbps", "GB/s", "rate")]


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def small_op_sweep(sizes: Sequence[int] = (4, 40, 400, 4000), iters: int = 1000,
                   devices: DeviceLike | Iterable[DeviceLike] | None = None, *,
                   repeats: int = 5) -> Result:
    """Exercise 5: the ``b += b`` loop of `iters` operations per size and device.

    Finds the crossover size where each GPU starts to beat the CPU per operation (estimated
    between the measured sizes, in log-log), or, without a GPU, reports the CPU's curve, its
    fixed cost per operation and its bandwidth (``t = t0 + bytes / bandwidth`` read off the
    smallest and largest sizes).
    b starts as zeros, so the loop computes 0 + 0 and never overflows.

    Example:
        >>> res = small_op_sweep(sizes=(4, 64), iters=100, repeats=2)
        >>> [(r["size"], r["iters"]) for r in res.rows]
        [(4, 100), (64, 100)]
    """
    op = "small_op_sweep"
    if isinstance(sizes, (int, np.integer)):
        sizes = (sizes,)
    sizes = sorted({positive_int(op, "each size", s) for s in sizes})
    if not sizes:
        raise ValueError(f"{op}: sizes is empty; pass at least one size, e.g. sizes=(4, 40, 400)")
    iters = positive_int(op, "iters", iters)
    repeats = positive_int(op, "repeats", repeats)
    devs, notes = devices_to_run(devices, op)
    rows = [_loop_row(d, s, iters, repeats) for d in devs for s in sizes]
    fits = {str(d): fit_cost([r for r in rows if r["device"] == str(d)]) for d in devs}
    crossovers = {}
    if gd.cpu() in devs:
        cpu_rows = [r for r in rows if r["device"] == "cpu"]
        for g in (d for d in devs if d.type == "cuda"):
            crossovers[str(g)] = crossover(cpu_rows, [r for r in rows if r["device"] == str(g)])
    elif any(d.type == "cuda" for d in devs):
        notes.append("no crossover: the CPU was not among the devices, so there is nothing to compare with")
    return Result(
        number=NUMBER, name="small_op_sweep", title="b += b for growing sizes: where the GPU starts to win",
        question="For an elementwise operation, from which array size on is a GPU faster than "
                 "the CPU, and what does one small operation cost?",
        fields=FIELDS, columns=COLUMNS, rows=rows,
        conclusion=conclusion(rows, devs, fits, crossovers), notes=notes,
        meta={"sizes": sizes, "iters": iters, "repeats": repeats, "fits": fits,
              "crossovers": crossovers, "devices": device_meta(devs)},
    )


def _loop_row(d: gd.Device, s: int, iters: int, repeats: int) -> dict[str, Any]:
    """The loop of `iters` b += b on an s x s array on `d`, timed."""
    step(f"5: b += b, {s}x{s} on {d}")
    b = gd.zeros((s, s), device=d)

    def loop() -> None:
        nonlocal b
        for _ in range(iters):
            b += b

    b += b  # the first operation's one-time costs stay out of the timed loops
    timed = time_repeats(loop, repeats, warmup=0)
    per_op = timed["seconds"] / iters
    op_bytes = 2.0 * 4 * s * s
    return {"device": str(d), "size": s, "elements": s * s, "iters": iters, **timed,
            "per_op_s": per_op, "flops": float(s * s) * iters, "bytes": op_bytes * iters,
            "gbps": op_bytes / per_op / 1e9}


def fit_cost(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The two numbers of t = t0 + bytes / bandwidth, read off the ends of the curve.

    t0 is the time at the smallest size (its data costs next to nothing) and the bandwidth
    comes from the largest size after t0 is taken away. A least-squares fit over all sizes
    would be skewed by the middle sizes, which fit in cache and run faster than memory."""
    lo, hi = rows[0], rows[-1]
    t0 = float(lo["per_op_s"])
    hi_bytes = hi["bytes"] / hi["iters"]
    moving = float(hi["per_op_s"]) - t0
    if len(rows) < 2 or moving <= 0:
        return {"t0_s": t0, "bandwidth_gbps": None, "break_even_elements": None,
                "from_sizes": [lo["size"], hi["size"]]}
    bandwidth = hi_bytes / moving  # bytes per second
    return {"t0_s": t0, "bandwidth_gbps": bandwidth / 1e9,
            # the size where moving the data costs as much as the fixed cost of a call
            "break_even_elements": t0 * bandwidth / 8.0, "from_sizes": [lo["size"], hi["size"]]}


def crossover(cpu: list[dict[str, Any]], gpu: list[dict[str, Any]]) -> dict[str, Any]:
    """The size from which on the GPU is faster per op, estimated between measured sizes."""
    elements = np.array([r["elements"] for r in cpu], dtype=np.float64)
    log_ratio = np.log(np.array([r["per_op_s"] for r in gpu]) / np.array([r["per_op_s"] for r in cpu]))
    wins = log_ratio < 0
    if not wins[-1]:
        return {"status": "cpu wins at every size", "elements": None, "size": None}
    losing = np.flatnonzero(~wins)
    if losing.size == 0:
        return {"status": "gpu wins at every size", "elements": None, "size": None,
                "below": int(elements[0])}
    i = int(losing[-1])
    x0, x1 = np.log(elements[i]), np.log(elements[i + 1])
    y0, y1 = log_ratio[i], log_ratio[i + 1]
    cross = float(np.exp(x0 + (0.0 - y0) * (x1 - x0) / (y1 - y0)))
    return {"status": "crossover", "elements": cross, "size": math.sqrt(cross),
            "between": [int(elements[i]), int(elements[i + 1])]}


# ---------------------------------------------------------------------------------------------
# the conclusion
# ---------------------------------------------------------------------------------------------


def conclusion(rows: list[dict[str, Any]], devs: list[gd.Device],
               fits: dict[str, dict[str, float]], crossovers: dict[str, dict[str, Any]]) -> str:
    """What the rows say: each device's cost per operation, and where each GPU wins."""
    text = [_cost_text([r for r in rows if r["device"] == str(d)], d, fits[str(d)]) for d in devs]
    text += [_crossover_text(g, c) for g, c in crossovers.items()]
    if not any(d.type == "cuda" for d in devs):
        text.append("There is no GPU to compare with (the notes say why): the CPU's curve above is "
                    "the baseline a GPU has to beat.")
    return "\n\n".join(text)


def _cost_text(mine: list[dict[str, Any]], d: gd.Device, fit: dict[str, Any]) -> str:
    lo, hi = mine[0], mine[-1]
    s = (f"On {d}, one b += b takes {format_seconds(lo['per_op_s'])} at {lo['size']}x{lo['size']} and "
         f"{format_seconds(hi['per_op_s'])} at {hi['size']}x{hi['size']} ({hi['gbps']:.3g} GB/s): ")
    if len(mine) >= 2:
        s += (f"{format_ratio(hi['elements'] / lo['elements'])} the elements cost "
              f"{format_ratio(hi['per_op_s'] / lo['per_op_s'])} the time. ")
    if fit["bandwidth_gbps"]:
        side = math.sqrt(fit["break_even_elements"])
        s += (f"Read as t = t0 + bytes / bandwidth, that is a fixed cost of {format_seconds(fit['t0_s'])} "
              f"per operation and {fit['bandwidth_gbps']:.3g} GB/s, so below about "
              f"{fit['break_even_elements']:,.0f} elements ({side:.0f}x{side:.0f}) the fixed cost of a "
              f"call outweighs the work.")
    return s


def _crossover_text(g: str, c: dict[str, Any]) -> str:
    if c["status"] == "crossover":
        return (f"{g} is faster than the CPU from about {c['size']:.0f}x{c['size']:.0f} "
                f"({c['elements']:,.0f} elements, between the measured "
                f"{c['between'][0]:,} and {c['between'][1]:,}) on: below that, launching a "
                f"kernel costs more than the CPU needs for the whole operation.")
    if c["status"] == "gpu wins at every size":
        return (f"{g} beats the CPU at every measured size, even {c['below']:,} elements: "
                f"the crossover lies below the smallest size measured.")
    return (f"The CPU beats {g} at every measured size: the arrays never grew large "
            f"enough to repay the GPU's fixed cost per operation.")


# ---------------------------------------------------------------------------------------------
# the figure
# ---------------------------------------------------------------------------------------------


@point_label(NUMBER)
def _roofline_label(r: dict[str, Any]) -> str:
    return f"b += b {r['size']}x{r['size']}"


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """The sweep chart, with why parts were skipped."""
    fig = sweep(res)
    notes_text(fig.axes[0], res)
    return fig


def sweep(res: Result, ax: Axes | None = None) -> Figure:
    """Log-log time of one ``b += b`` vs elements, one line per device, crossovers marked."""
    from gpudev import plots

    fig = ax.figure if ax is not None else None
    if ax is None:
        fig, (ax,) = plots.new_figure(7.5, 5)
    devices = list(dict.fromkeys(r["device"] for r in res.rows))
    for dev in devices:
        _device_curve(ax, res, dev)
    for g, c in res.meta.get("crossovers", {}).items():
        if c.get("status") == "crossover":
            ax.axvline(c["elements"], color=plots.device_color(g), linestyle="--")
            ax.annotate(f"{g} wins from ~{c['size']:.0f}x{c['size']:.0f}", (c["elements"], 0.5),
                        xycoords=("data", "axes fraction"), rotation=90, ha="right", va="center",
                        fontsize=8, color=plots.device_color(g))
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


def _device_curve(ax: Axes, res: Result, dev: str) -> None:
    """One device's time per op with min-max whiskers, and its cost model when it has one."""
    from gpudev import plots

    rows = [r for r in res.rows if r["device"] == dev]
    x = np.array([r["elements"] for r in rows], dtype=float)
    y = np.array([r["per_op_s"] for r in rows])
    # clipped at 0: rounding can put min_s / iters a hair above the per-op median
    lo = np.maximum(y - np.array([r["min_s"] / r["iters"] for r in rows]), 0)
    hi = np.maximum(np.array([r["max_s"] / r["iters"] for r in rows]) - y, 0)
    ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, color=plots.device_color(dev), label=dev)
    fit = res.meta.get("fits", {}).get(dev)
    if fit and fit.get("bandwidth_gbps"):
        grid = np.logspace(math.log10(x.min()), math.log10(x.max()), 100)
        model = fit["t0_s"] + 8.0 * grid / (fit["bandwidth_gbps"] * 1e9)
        ax.plot(grid, model, linestyle=":", color=plots.device_color(dev), alpha=0.8,
                label=f"{dev} model: {format_seconds(fit['t0_s'], micro=plots.MICRO)} + bytes / "
                      f"{fit['bandwidth_gbps']:.3g} GB/s")
