"""Exercise 6: asynchrony. A loop of matrix products on each device, timed two ways: until the
loop returns, and until its results are ready (after synchronizing). On a GPU the loop only
queues the products, so it returns long before they are done; on the CPU each product is
computed before its call returns, so the two times coincide.

    >>> res = asynchrony(n=64, devices=["cpu"], repeats=5)
    >>> [r["timing"] for r in res.rows]
    ['loop returns', 'results ready']
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

import gpudev as gd

from .._devices import DeviceLike, device_label
from .._format import format_seconds
from .compare import ratio
from .measure import (device_meta, devices_to_run, emulated_in, emulated_size, emulated_text, is_emulated, namer,
                      positive_int, sizes_by_type, stats, step)
from .result import TIMING_FIELDS, Result, bar_item, figure_of, notes_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "FIELDS", "SIZES", "asynchrony", "conclusion", "conclusion_of", "plot"]

NUMBER = 6
FIELDS = {
    **TIMING_FIELDS,
    "timing": "'loop returns' (the host clock read right after the loop's last call, no "
              "synchronize) or 'results ready' (read after synchronizing the device)",
    "n": "matrix size of each product",
    "products": "products in the loop (one timed unit is the whole loop)",
    "gap_s": "for 'results ready': the median over repeats of (ready - returned): how long the "
             "device still worked after the loop had returned",
    "gap_share": "gap_s / the median time until the results were ready",
}
COLUMNS = [("device", "device", "device"), ("timing", "timing", "text"), ("n", "n", "int"),
           ("products", "products", "int"), ("seconds", "time", "time"), ("min_s", "min", "time"),
           ("max_s", "max", "time"), ("gap_s", "ready - returned", "time"),
           ("gap_share", "share", "pct")]
SIZES = {"cpu": 1000, "cuda": 1000}  # the book's 1000 x 1000 products
PRODUCTS = 10  # the book's loop length


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def asynchrony(n: int | dict[str, int] | None = None,
               devices: DeviceLike | Iterable[DeviceLike] | None = None, *, products: int = PRODUCTS,
               repeats: int = 5) -> Result:
    """Exercise 6: the book's asynchrony benchmark on each device.

    `products` products of two ``n x n`` float32 matrices (``gd.mm``) in a Python loop, timed
    `repeats` times (after one warm-up) two ways in the same repeat: the host clock right after
    the loop returns, and again after ``gd.synchronize(device)``. `n` is one int or a dict by
    device type (``{"cpu": 1000, "cuda": 1000}``, which is what ``n=None`` means); an emulated
    GPU runs at most measure.EMULATED_N, as in the other exercises.

    Example:
        >>> res = asynchrony(n=64, devices=["cpu"], repeats=5)
        >>> res.rows[1]["gap_s"] >= 0
        True
    """
    op = "asynchrony"
    sizes = sizes_by_type(n, SIZES, op)
    products = positive_int(op, "products", products)
    repeats = positive_int(op, "repeats", repeats)
    devs, notes = devices_to_run(devices, op)
    rows: list[dict[str, Any]] = []
    checks = []
    for d in devs:
        size = emulated_size(d, sizes[d.type])
        step(f"6: {products} products of {size}x{size} on {device_label(d)}, {repeats} repeats")
        dev_rows, check = _device_rows(d, size, products, repeats)
        rows += dev_rows
        checks.append(check)
    return Result(
        number=NUMBER, name="asynchrony", title="Asynchrony: when the loop returns, and when its results are ready",
        question="On the CPU, benchmark the same matrix multiplications. Can you still observe asynchrony?",
        fields=FIELDS, columns=COLUMNS, rows=rows,
        conclusion=conclusion(rows, devs, {str(d) for d in devs if is_emulated(d)}),
        notes=notes, checks=checks,
        meta={"sizes": {str(d): emulated_size(d, sizes[d.type]) for d in devs}, "products": products,
              "repeats": repeats, "devices": device_meta(devs)},
    )


def _device_rows(d: gd.Device, n: int, products: int, repeats: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The two timings of the loop on `d` (both read in every repeat), and the check that its
    last product is right."""
    rng = np.random.default_rng(0)
    a_np, b_np = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    a, b = gd.asarray(a_np).to(d), gd.asarray(b_np).to(d)

    def loop() -> gd.Array:
        out = None
        for _ in range(products):
            out = gd.mm(a, b)
        return out

    returned, ready = [], []
    for k in range(repeats + 1):  # the first round warms up and is not kept
        gd.synchronize(d)
        t0 = time.perf_counter()
        out = loop()
        t1 = time.perf_counter()
        gd.synchronize(d)
        t2 = time.perf_counter()
        if k:
            returned.append(t1 - t0)
            ready.append(t2 - t0)
    gaps = np.asarray(ready) - np.asarray(returned)
    base = {"device": str(d), "n": n, "products": products}
    ready_stats = stats(ready, "host")
    rows = [{**base, "timing": "loop returns", **stats(returned, "host, unsynchronized"), "demonstration": True},
            {**base, "timing": "results ready", **ready_stats, "gap_s": float(np.median(gaps)),
             "gap_share": float(np.median(gaps)) / ready_stats["seconds"]}]
    err = float(np.max(np.abs(out.to(gd.cpu()).numpy() - a_np.astype(np.float64) @ b_np)))
    bound = 1e-4 * n  # float32 products of n terms of unit size
    check = {"check": f"the loop's product on {device_label(d)}", "passed": err <= bound,
             "detail": f"largest difference from NumPy's float64 product {err:.3g} (bound {bound:.3g})",
             "error": err, "bound": bound}
    return rows, check


# ---------------------------------------------------------------------------------------------
# the conclusion and the figure
# ---------------------------------------------------------------------------------------------


def conclusion_of(res: Result) -> str:
    """The conclusion re-derived from a Result's table alone (the referee's way in)."""
    return conclusion(res.rows, list(res.meta["devices"]), emulated_in(res.meta["devices"]))


def _pair(rows: list[dict[str, Any]], d: gd.Device | str) -> tuple[dict[str, Any], dict[str, Any]]:
    returned, ready = (next(r for r in rows if r["device"] == str(d) and r["timing"] == t)
                       for t in ("loop returns", "results ready"))
    return returned, ready


def observed(rows: list[dict[str, Any]], d: gd.Device | str) -> bool | None:
    """Whether the loop on `d` measurably returned before its results were ready: the
    interval of (ready / returned), ratio of medians, excludes 1 (None: too few repeats)."""
    returned, ready = _pair(rows, d)
    r = ratio(ready["times"], returned["times"])
    return r.differs if r.known else None


def conclusion(rows: list[dict[str, Any]], devs: list[gd.Device | str], emulated: set[str] | None = None) -> str:
    """What the rows say on each device (Devices or their names), then the exercise's question
    answered from the CPU's rows (emulated GPUs: the gap is the emulation's queue, and no speed
    is compared)."""
    fake = emulated or set()
    name = namer(fake)
    text = [_device_text(rows, d, name, str(d) in fake) for d in devs]
    cpu = next((d for d in devs if str(d) == "cpu"), None)
    if cpu is not None:
        seen = observed(rows, cpu)
        text.append("The exercise's question, answered: " + (
            "no. On the CPU the loop returned only when its results were ready, so you cannot observe "
            "asynchrony there: a CPU product is computed before its call returns." if seen is False else
            "the CPU's two times differ measurably in this run (see above), although a CPU product is "
            "computed before its call returns: rerun it on a quiet machine before reading this as "
            "asynchrony." if seen else
            "too few repeats on the CPU for an interval, so the question stays open here."))
    return "\n\n".join(text)


def _device_text(rows: list[dict[str, Any]], d: gd.Device | str, name: Any, fake: bool) -> str:
    returned, ready = _pair(rows, d)
    n = ready["n"]
    s = (f"On {name(d)}, {ready['products']} products of {n}x{n} returned after "
         f"{format_seconds(returned['seconds'])} and were ready after {format_seconds(ready['seconds'])} "
         f"(medians; the gap between the two, {format_seconds(ready['gap_s'])}, is "
         f"{100 * ready['gap_share']:.0f}% of the time until ready). ")
    if fake:
        return (s + "The gap is the emulation's: it queues each product and runs it on the CPU when "
                "synchronize waits for it, as a GPU's queue would. " + emulated_text(d)).rstrip()
    r = ratio(ready["times"], returned["times"])
    if not r.known:
        return s + "Too few repeats for an interval."
    if not r.differs:
        return s + (f"The two times show no measurable difference ({r.how}; {r.interval_text()}, "
                    f"includes 1): " + ("each call did its work before returning, so there was "
                                        "nothing left to wait for." if str(d) == "cpu" else
                                        "something in the loop waited for the GPU (a full queue, or an "
                                        "operation that synchronizes)."))
    s += f"The results were ready {r.ratio:.3g}x later than the loop returned ({r.how}; {r.interval_text()}): "
    if str(d) != "cpu":
        return s + ("the calls only queued the products and the GPU computed them after the loop had "
                    "returned. That is asynchrony: a timer that does not synchronize measures the "
                    "queueing, not the products.")
    return s + "on the CPU, where each call computes before it returns, read this gap as noise of the machine."


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """For each device, the time until the loop returned beside the time until its results
    were ready (median, whiskers min-max)."""
    from gpudev import plots

    fig, (ax,) = plots.new_figure(9, 5)
    items = [bar_item(r, res.label(r["device"]), r["timing"], note=format_seconds(r["seconds"], micro=plots.MICRO))
             for r in res.rows]
    if items:
        plots.bars(ax, items, ylabel="wall-clock time of the loop")
    plots.set_title(ax, "Exercise 6: a loop of products, until it returns and until its results are ready "
                        "(median, whiskers min-max)")
    notes_text(ax, res)
    return fig
