"""Exercise 1: a big matrix product vs tiny tasks on each device, and the wrong way to time
GPU work (a timer that does not wait for the GPU).

    >>> res = matmul_vs_small(n=256, calls=100)
    >>> sorted({r["task"] for r in res.rows})
    ['add1', 'bandwidth', 'matmul', 'setup', 'sum', 'sum+item']
    >>> fig = res.plot()     # time per call, and the roofline of the measured peaks
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import gpudev as gd

from .._devices import DeviceLike
from .._format import format_ratio, format_seconds
from .measure import (
    device_meta, devices_to_run, faster, first_call, positive_int, repeats_for, stats, step, time_repeats,
)
from .result import TIMING_FIELDS, Result, bar_item, figure_of, notes_text
from .roofline_chart import point_label, roofline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "FIELDS", "conclusion", "matmul_vs_small", "plot", "row"]

NUMBER = 1
FIELDS = {
    **TIMING_FIELDS,
    "task": "'setup', 'matmul', 'sum', 'sum+item', 'add1' or 'bandwidth'",
    "label": "the task in words, with its size",
    "timing": "'first call' (one call, one-time costs included), 'synchronized' (warm, right) "
              "or 'unsynchronized (wrong)' (GPUs: a timer that does not wait for the GPU)",
    "flops": "floating-point operations of one call",
    "bytes": "the least memory traffic of one call (inputs read once, output written once)",
    "gflops": "flops / seconds / 1e9 (achieved GFLOP/s)",
    "gbps": "bytes / seconds / 1e9 (achieved GB/s)",
}
COLUMNS = [("device", "device", "text"), ("label", "task", "text"), ("timing", "timing", "text"),
           ("seconds", "time/call", "time"), ("min_s", "min", "time"), ("max_s", "max", "time"),
           ("repeats", "n", "int"), ("gflops", "GFLOP/s", "rate"), ("gbps", "GB/s", "rate")]
# rows that say nothing about throughput: left off the roofline chart
NOT_STEADY = ("first call", "unsynchronized (wrong)")


def row(device: gd.Device, task: str, label: str, timing: str, timed: dict[str, Any],
        flops: float, nbytes: float) -> dict[str, Any]:
    """One row: the task, its timing statistics `timed`, and its GFLOP/s and GB/s."""
    sec = timed["seconds"]
    return {"device": str(device), "task": task, "label": label, "timing": timing, **timed,
            "flops": flops, "bytes": nbytes, "gflops": flops / sec / 1e9 if flops else None,
            "gbps": nbytes / sec / 1e9 if nbytes else None}


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def matmul_vs_small(n: int = 10000, devices: DeviceLike | Iterable[DeviceLike] | None = None, *,
                    small: int = 4, calls: int = 1000, repeats: int = 7,
                    bandwidth_elements: int = 2**26, budget_s: float = 30.0) -> Result:
    """Exercise 1: a big matrix product and tiny tasks on each device, timed right.

    On each device: the first allocation (on a GPU: context creation), the first and the warm
    ``n x n`` float32 product, a ``small x small`` sum (result left on the device), the same
    with ``.item()`` (a copy to the host and a synchronization), a 1-element add, and the sum
    of ``bandwidth_elements`` floats (the measured memory bandwidth of the roofline chart; the
    product's GFLOP/s is its measured compute peak). Tiny tasks are timed as loops of
    ``calls`` calls; a unit is one call. On GPUs the product is also timed the wrong way, with
    ``gd.Timer(sync=False)``, next to the right time. ``budget_s`` bounds the warm product's
    repeats (at least 3).

    Row fields: see ``Result.fields``.

    Example:
        >>> res = matmul_vs_small(n=256, calls=100)
        >>> sorted({r["task"] for r in res.rows})
        ['add1', 'bandwidth', 'matmul', 'setup', 'sum', 'sum+item']
    """
    op = "matmul_vs_small"
    n = positive_int(op, "n", n)
    small = positive_int(op, "small", small)
    calls = positive_int(op, "calls", calls)
    repeats = positive_int(op, "repeats", repeats)
    bandwidth_elements = positive_int(op, "bandwidth_elements", bandwidth_elements)
    devs, notes = devices_to_run(devices, op)
    rows: list[dict[str, Any]] = []
    peaks: dict[str, dict[str, Any]] = {}
    for d in devs:
        _product(d, n, repeats, budget_s, rows)
        _tiny(d, small, calls, repeats, rows)
        bw = _bandwidth(d, bandwidth_elements, repeats, rows)
        warm = pick(rows, device=str(d), task="matmul", timing="synchronized")
        peaks[str(d)] = {
            "gflops": warm["flops"] / warm["min_s"] / 1e9, "gflops_source": f"measured: sgemm n={n}",
            "gbps": bw["bytes"] / bw["min_s"] / 1e9,
            "gbps_source": f"measured: sum of {bandwidth_elements:,} float32",
        }
    if gd.num_gpus() == 0:
        notes.append("the unsynchronized-timer demonstration needs a GPU: on the CPU every call "
                     "finishes before it returns, so a timer reads the same with or without "
                     "synchronizing")
    return Result(
        number=NUMBER, name="matmul_vs_small", title="A big matrix product vs tiny tasks",
        question="How much faster is a GPU than the CPU for a big matrix product, and for a "
                 "tiny task? What goes wrong when GPU work is timed without synchronizing?",
        fields=FIELDS, columns=COLUMNS, rows=rows,
        conclusion=conclusion(rows, devs, n, small),
        notes=notes,
        meta={"n": n, "small": small, "calls": calls, "repeats": repeats,
              "bandwidth_elements": bandwidth_elements, "peaks": peaks,
              "devices": device_meta(devs)},
    )


def _product(d: gd.Device, n: int, repeats: int, budget_s: float, rows: list[dict[str, Any]]) -> None:
    """First use of the device, then the n x n product: first call, warm, and on GPUs wrong."""
    label, flops, nbytes = f"matmul {n}x{n}", 2.0 * n**3, 3.0 * 4 * n * n
    step(f"1: first use of {d}")
    rows.append(row(d, "setup", "first allocation on the device", "first call",
                    first_call(lambda: gd.zeros((1,), device=d)), 0, 0))
    a, b = gd.randn(n, n, device=d), gd.randn(n, n, device=d)
    gd.synchronize(d)
    step(f"1: first {label} on {d}")
    first = first_call(lambda: a @ b)
    rows.append(row(d, "matmul", label, "first call", first, flops, nbytes))
    step(f"1: {label} on {d}")
    warm = time_repeats(lambda: a @ b, repeats_for(first["seconds"], budget_s, hi=repeats), warmup=0)
    rows.append(row(d, "matmul", label, "synchronized", warm, flops, nbytes))
    if d.type == "cuda":
        rows.append(row(d, "matmul", label, "unsynchronized (wrong)",
                        _unsynchronized(lambda: a @ b, d, warm["repeats"]), flops, nbytes))


def _tiny(d: gd.Device, small: int, calls: int, repeats: int, rows: list[dict[str, Any]]) -> None:
    """Tiny tasks: first call, then loops of `calls` calls (a row's unit is one call)."""
    x, one = gd.randn(small, small, device=d), gd.ones((1,), device=d)
    sum_bytes = 4.0 * (small * small + 1)
    tiny = [
        ("sum", f"sum {small}x{small}", lambda: x.sum(), small * small, sum_bytes),
        ("sum+item", f"sum {small}x{small} + .item()", lambda: x.sum().item(), small * small, sum_bytes),
        ("add1", "1-element add", lambda: one + 1.0, 1, 8.0),
    ]
    for task, label, fn, flops, nbytes in tiny:
        step(f"1: {label} on {d}")
        rows.append(row(d, task, label, "first call", first_call(fn), flops, nbytes))

        def loop(fn: Callable[[], Any] = fn) -> None:
            for _ in range(calls):
                fn()

        rows.append(row(d, task, label, "synchronized", time_repeats(loop, repeats, per=calls), flops, nbytes))


def _bandwidth(d: gd.Device, elements: int, repeats: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The sum of a big array: the memory bandwidth the roofline chart uses."""
    step(f"1: bandwidth on {d}")
    v = gd.ones((elements,), device=d)
    summed = row(d, "bandwidth", f"sum of {elements:,} floats", "synchronized", time_repeats(v.sum, repeats),
                 float(elements), 4.0 * elements)
    rows.append(summed)
    return summed


def _unsynchronized(fn: Callable[[], Any], device: gd.Device, repeats: int) -> dict[str, Any]:
    """The book's mistake: read the clock right after queueing GPU work."""
    times = []
    for _ in range(repeats):
        gd.synchronize(device)
        timer = gd.Timer(sync=False)
        fn()
        times.append(timer.stop())
    gd.synchronize(device)
    return stats(times, "host, unsynchronized")


def pick(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    """The first row whose fields equal `match`, None if there is none."""
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


# ---------------------------------------------------------------------------------------------
# the conclusion
# ---------------------------------------------------------------------------------------------


def conclusion(rows: list[dict[str, Any]], devs: list[gd.Device], n: int, small: int) -> str:
    """What the rows say: per device, then each GPU against the CPU and its wrong timing."""
    text = [_device_text(rows, str(d), n, small) for d in devs]
    cpu = "cpu" if gd.cpu() in devs else None
    for d in devs:
        if d.type == "cuda":
            text += _gpu_text(rows, str(d), cpu, small)
    if not any(d.type == "cuda" for d in devs):
        text.append("No GPU was measured, so there is no GPU/CPU ratio here (the notes say why); "
                    "on a machine with a GPU the same call adds its rows and the comparison.")
    return "\n\n".join(text)


def _device_text(rows: list[dict[str, Any]], dev: str, n: int, small: int) -> str:
    mm = pick(rows, device=dev, task="matmul", timing="synchronized")
    first = pick(rows, device=dev, task="matmul", timing="first call")
    tiny = pick(rows, device=dev, task="sum", timing="synchronized")
    bw = pick(rows, device=dev, task="bandwidth")
    s = (f"On {dev} the {n}x{n} product takes {format_seconds(mm['seconds'])} ({mm['gflops']:.3g} "
         f"GFLOP/s) and a {small}x{small} sum {format_seconds(tiny['seconds'])} per call. ")
    extra = first["seconds"] - mm["seconds"]
    if extra > 0.1 * mm["seconds"]:
        s += (f"The first product took {format_seconds(first['seconds'])}, {format_seconds(extra)} more "
              f"than a warm one: one-time costs that a benchmark must leave out of its repeats. ")
    else:
        s += f"The first product cost about as much as a warm one ({format_seconds(first['seconds'])}). "
    # the tiny sum's bandwidth against the big sum's: overhead, not memory, limits it
    s += f"The tiny sum moves {tiny['bytes']:.0f} bytes at {tiny['gbps']:.3g} GB/s, "
    if bw["gbps"] > 3 * tiny["gbps"]:
        s += (f"{format_ratio(bw['gbps'] / tiny['gbps'])} below the {bw['gbps']:.3g} GB/s a big sum "
              f"reaches: for tiny tasks the fixed cost of each call, not the hardware, sets the time.")
    else:
        s += (f"close to the {bw['gbps']:.3g} GB/s the big sum reached: the big sum ran far "
              f"below this device's memory bandwidth here (a busy machine?), so this run "
              f"cannot separate the fixed cost of a call from the cost of the data.")
    return s


def _gpu_text(rows: list[dict[str, Any]], g: str, cpu: str | None, small: int) -> list[str]:
    text = []
    mm_g = pick(rows, device=g, task="matmul", timing="synchronized")
    wrong = pick(rows, device=g, task="matmul", timing="unsynchronized (wrong)")
    setup = pick(rows, device=g, task="setup")
    if cpu is not None:
        mm_c = pick(rows, device=cpu, task="matmul", timing="synchronized")
        t_c = pick(rows, device=cpu, task="sum", timing="synchronized")
        t_g = pick(rows, device=g, task="sum", timing="synchronized")
        text.append(f"For the big product, {faster(g, mm_g['seconds'], 'the CPU', mm_c['seconds'])}; "
                    f"for the {small}x{small} sum, "
                    f"{faster(g, t_g['seconds'], 'the CPU', t_c['seconds'])}. "
                    f"A GPU pays off when there is enough work per call to hide the cost of "
                    f"launching it.")
    if wrong["seconds"] < 0.5 * mm_g["seconds"]:
        s = (f"Timed without synchronizing, the product on {g} seems to take "
             f"{format_seconds(wrong['seconds'])}, {format_ratio(mm_g['seconds'] / wrong['seconds'])} "
             f"less than its real {format_seconds(mm_g['seconds'])}: that timer measured only the "
             f"launch, the book's mistake. ")
    else:
        s = (f"Timed without synchronizing, the product on {g} read {format_seconds(wrong['seconds'])}, "
             f"close to its real {format_seconds(mm_g['seconds'])}: this time the call itself waited "
             f"for the GPU, which a timer cannot count on. ")
    text.append(s + f"The first allocation on {g} took {format_seconds(setup['seconds'])} (CUDA context "
                    f"creation when it is the process's first use of the GPU).")
    return text


# ---------------------------------------------------------------------------------------------
# the figure
# ---------------------------------------------------------------------------------------------


@point_label(NUMBER)
def _roofline_label(r: dict[str, Any]) -> str | None:
    return None if r.get("timing") in NOT_STEADY else r["label"]


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """Time per call of every row (log scale), and the roofline chart of the measured peaks."""
    from gpudev import plots

    fig, (left, right) = plots.new_figure(15, 5.5, ncols=2)
    items = []
    hatches = {"first call": "//", "unsynchronized (wrong)": "xx"}
    for r in res.rows:
        series = r["device"] + ("" if r["timing"] == "synchronized" else f" {r['timing']}")
        items.append(bar_item(r, r["label"], series, color=plots.device_color(r["device"]),
                              hatch=hatches.get(r["timing"])))
    plots.bars(left, items, ylabel="time per call", log=True)
    left.set_title("Exercise 1: time per call (median, whiskers min-max); hatched: first call, "
                   "crossed: timed without synchronizing", fontsize=9)
    notes_text(left, res)
    roofline(res, ax=right)
    return fig
