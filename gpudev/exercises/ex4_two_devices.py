"""Exercise 4: two products on two GPUs at once vs in sequence on one, whether queued
device work overlaps with work on the host, and whether copies of results to the host overlap
with the next products (d2l's 50 products, copied blocking after all of them or non-blocking
behind each).

    >>> res = two_devices(n=128, devices=["cpu"], repeats=3)
    >>> res.skipped
    'needs 2 GPUs, found 0'
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

import gpudev as gd

from .._devices import DeviceLike, device_label
from .._format import format_seconds
from .compare import LEVEL, interval, ratio
from .measure import (device_meta, devices_to_run, emulated_in, emulated_size, emulated_text, interleaved,
                      is_emulated, namer, positive_int, sizes_by_type, stats, step, time_repeats)
from .result import TIMING_FIELDS, Result, bar_item, figure_of, notes_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "FIELDS", "SIZES", "conclusion", "conclusion_of", "plot", "two_devices"]

NUMBER = 4
FIELDS = {
    **TIMING_FIELDS,
    "part": "'overlap' (device work and host work, on each device), 'copies' (products and copies of "
            "their results to the CPU, on each GPU) or 'two GPUs'",
    "scenario": "what was timed (the wall-clock time until every device finished)",
    "n": "matrix size of each product",
    "overlap": "for 'both': (t_products + t_host - t_both) / min(t_products, t_host): 1 means the "
               "shorter one was fully hidden, 0 means they ran one after the other",
    "speedup": "for the two-GPU row: one GPU's time / two GPUs' time (ideal 2)",
    "efficiency": "speedup / 2",
    "overlap_raw": "the overlap before clipping to [0, 1] (noise can push it outside); from the "
                   "medians of rounds that ran the three scenarios in alternation",
    "no_overlap_s": "t_products + t_host: what 'both' takes when nothing overlaps",
    "full_overlap_s": "max(t_products, t_host): what 'both' takes when the shorter is fully hidden",
    "flops": "floating-point operations of the products",
    "products": "for 'copies': how many products (each copied to the CPU), the book's 50",
    "compute_s": "for 'copies', in sequence: the median time of the products alone (then synchronized)",
    "copy_s": "for 'copies', in sequence: the median time of the blocking copies that followed",
    "compute_times": "for 'copies', in sequence: the products' time in each round",
    "copy_times": "for 'copies', in sequence: the copies' time in each round",
    "copies_match": "for 'copies': whether every non-blocking copy equals the blocking copy of its product",
}
COLUMNS = [("device", "device", "device"), ("scenario", "scenario", "text"), ("n", "n", "int"),
           ("seconds", "time", "time"), ("min_s", "min", "time"), ("max_s", "max", "time"),
           ("overlap", "overlap", "pct"), ("speedup", "speedup", "ratio"),
           ("efficiency", "of ideal", "pct")]
SIZES = {"cpu": 1024, "cuda": 8192}  # the book's matrix size for each device type
PRODUCTS = 50  # the book's count of products whose results are copied to the CPU
# the products' size for that part: all 50 results are alive at once, on the GPU and in pinned
# host memory (2048: 800 MB each side, which a 16 GB GPU holds beside the rest; the book's 4000
# would take 3.2 GB each side)
COPIES_MAX_N = 2048
# 50 products of EMULATED_N take about 2 s on the emulation; its rows check the code path only
COPIES_EMULATED_N = 64


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def two_devices(n: int | dict[str, int] | None = None,
                devices: DeviceLike | Iterable[DeviceLike] | None = None, *, repeats: int = 5) -> Result:
    """Exercise 4: two products on two GPUs at once vs one after the other on one GPU.

    With two or more GPUs (the first two of `devices` are used): the time of two ``n x n``
    products queued on one GPU, against one product queued on each of two GPUs, and the
    speedup against the ideal 2x. With fewer GPUs that comparison is skipped (``skipped``
    says why). On every device (GPUs and the CPU) it also measures whether two products
    queued back-to-back overlap with host work (NumPy preparing data, sized to take as long as
    the products): on a GPU they should, since the call returns as soon as the work is queued;
    on the CPU they cannot, since the work runs before the call returns. On each GPU it also
    times 50 products (the book's count) with their results copied to the CPU: all computed,
    then each copied with a blocking copy, against each followed by a non-blocking copy (the
    copy moves one result while the next product computes); the CPU has no copy to overlap.
    `n` is the matrix size: one int for every device, or a dict by device type
    (``{"cpu": 1024, "cuda": 8192}``, which is what ``n=None`` means).

    Example:
        >>> res = two_devices(n=128, devices=["cpu"], repeats=3)
        >>> res.skipped
        'needs 2 GPUs, found 0'
    """
    op = "two_devices"
    sizes = sizes_by_type(n, SIZES, op)
    repeats = positive_int(op, "repeats", repeats)
    devs, notes = devices_to_run(devices, op)
    gpus = [d for d in devs if d.type == "cuda"]
    rows = []
    for d in devs:
        rows += _overlap_rows(d, emulated_size(d, sizes[d.type]), repeats)
        if d.type == "cuda":  # on the CPU a result is already in host memory: no copy to overlap
            n_copies = min(emulated_size(d, sizes["cuda"]), COPIES_EMULATED_N if is_emulated(d) else COPIES_MAX_N)
            rows += _copies_rows(d, n_copies, repeats)
    skipped = None
    if len(gpus) >= 2:
        rows += _two_gpu_rows(gpus[0], gpus[1], min(emulated_size(g, sizes["cuda"]) for g in gpus[:2]), repeats)
    else:
        skipped = f"needs 2 GPUs, found {len(gpus)}"  # said once, as the Result's `skipped`
    return Result(
        number=NUMBER, name="two_devices", title="Two GPUs at once, and device work overlapping host work",
        question="Do two products run concurrently on two GPUs twice as fast as in sequence on "
                 "one? Does queued device work overlap with work on the host?",
        fields=FIELDS, columns=COLUMNS, rows=rows,
        conclusion=conclusion(rows, devs, gpus, skipped, {str(d) for d in devs if is_emulated(d)}),
        skipped=skipped, notes=notes,
        meta={"sizes": {str(d): sizes[d.type] for d in devs}, "repeats": repeats,
              "gpus": [str(g) for g in gpus],
              "devices": device_meta(devs)},
    )


class _HostWork:
    """Host-side work of a chosen duration: NumPy filling a buffer with normal samples (a
    data-preparation stand-in that never touches gpudev)."""

    def __init__(self, seconds: float) -> None:
        self.rng = np.random.default_rng(0)
        self.buffer = np.empty(1 << 16)
        for _ in range(2):  # the second round corrects the first, measured on a small buffer
            t0 = time.perf_counter()
            self()
            per_element = (time.perf_counter() - t0) / self.buffer.size
            self.buffer = np.empty(int(min(max(seconds / per_element, 1 << 12), 1 << 27)))

    def __call__(self) -> None:
        self.rng.standard_normal(out=self.buffer)


def _overlap_rows(d: gd.Device, n: int, repeats: int) -> list[dict[str, Any]]:
    """Two products on `d`, host work alone, then both: how much of the shorter one was hidden."""
    gd.manual_seed(0)
    a, b = gd.randn(n, n, device=d), gd.randn(n, n, device=d)

    def products() -> None:
        a @ b
        a @ b

    step(f"4: two products on {device_label(d)}")
    sizing = time_repeats(products, 3, wall=True)
    host_work = _HostWork(sizing["seconds"])

    def both() -> None:
        products()
        host_work()

    step(f"4: products, host work, and both on {device_label(d)}, {repeats} rounds in alternation")
    dev, host, together = interleaved([products, host_work, both], repeats, wall=True)
    t_dev, t_host = dev["seconds"], host["seconds"]
    overlap, _ = overlap_of(dev["times"], host["times"], together["times"])
    base = {"device": str(d), "n": n, "part": "overlap"}
    return [
        {**base, "scenario": "two products", **dev, "flops": 4.0 * n**3},
        {**base, "scenario": "host work alone (NumPy)", **host},
        {**base, "scenario": "both: queue the products, then host work", **together,
         # an emulated GPU's queue runs on the CPU when waited for: no overlap to report
         "overlap": None if is_emulated(d) else float(min(max(overlap, 0.0), 1.0)),
         "overlap_raw": None if is_emulated(d) else overlap,
         "no_overlap_s": t_dev + t_host, "full_overlap_s": max(t_dev, t_host)},
    ]


def overlap_of(products: list[float], host: list[float], both: list[float]) -> tuple[float, tuple[float, float] | None]:
    """(t_products + t_host - t_both) / min(t_products, t_host) from the medians of rounds
    taken in alternation, and its bootstrap interval (None with a single round).

    >>> overlap_of([1.0, 1.1, 0.9], [1.0, 1.0, 1.0], [1.5, 1.6, 1.4])[0]
    0.5
    """
    def stat(p: np.ndarray, h: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (p + h - b) / np.minimum(p, h)

    medians = [np.median(np.asarray(x, dtype=np.float64)) for x in (products, host, both)]
    return float(stat(*medians)), interval(stat, products, host, both, paired=True)


def _copies_rows(d: gd.Device, n: int, repeats: int, count: int = PRODUCTS) -> list[dict[str, Any]]:
    """`count` products on `d` (1) all computed, then each copied to the CPU with a blocking
    copy, against (2) each followed by a non-blocking copy of its result, all read at the end:
    the copies of (2) run while the next products compute. Rounds alternate which runs first."""
    gd.manual_seed(0)
    a, b = gd.randn(n, n, device=d), gd.randn(n, n, device=d)

    def in_sequence() -> tuple[float, float, list[gd.Array]]:
        t0 = time.perf_counter()
        ys = [a @ b for _ in range(count)]
        gd.cuda.synchronize(d)
        t1 = time.perf_counter()
        hosts = [y.to("cpu") for y in ys]  # each waits for its copy
        return t1 - t0, time.perf_counter() - t1, hosts

    def overlapped() -> tuple[float, list[gd.Array]]:
        t0 = time.perf_counter()
        ys, hosts = [], []  # the products stay alive until their copies are read
        for _ in range(count):
            ys.append(a @ b)
            hosts.append(ys[-1].to("cpu", non_blocking=True))  # queued behind its product
        for h in hosts:
            float(h[0, 0])  # reading a result waits for its copy
        return time.perf_counter() - t0, hosts

    step(f"4: {count} products on {device_label(d)}, copied to the CPU after them (blocking) and behind "
         f"each (non-blocking), {repeats} rounds in alternation")
    in_sequence(), overlapped()  # warm-up: the allocator's and the pinned memory's first costs
    compute, copy, together = [], [], []
    for r in range(repeats):
        for first in ([True, False] if r % 2 == 0 else [False, True]):
            if first:
                t_compute, t_copy, _ = in_sequence()
                compute.append(t_compute)
                copy.append(t_copy)
            else:
                together.append(overlapped()[0])
    reference = np.asarray((a @ b).to("cpu"))  # every product is a @ b
    match = all(np.array_equal(np.asarray(h), reference) for h in overlapped()[1])
    seq = [c + k for c, k in zip(compute, copy)]
    t_compute, t_copy = float(np.median(compute)), float(np.median(copy))
    overlap, _ = overlap_of(compute, copy, together)
    base = {"device": str(d), "n": n, "part": "copies", "products": count, "flops": 2.0 * count * n**3,
            "copies_match": match}
    return [
        {**base, "scenario": f"{count} products, then {count} blocking copies", **stats(seq, "host"),
         "compute_s": t_compute, "copy_s": t_copy, "compute_times": compute, "copy_times": copy},
        {**base, "scenario": "each product, then a non-blocking copy", **stats(together, "host"),
         # an emulated GPU runs its queue on the CPU when waited for: no overlap to report
         "overlap": None if is_emulated(d) else float(min(max(overlap, 0.0), 1.0)),
         "overlap_raw": None if is_emulated(d) else overlap,
         "no_overlap_s": t_compute + t_copy, "full_overlap_s": max(t_compute, t_copy)},
    ]


def _copies_overlap(rows: list[dict[str, Any]], device: str) -> tuple[dict[str, Any], dict[str, Any], float,
                                                                       tuple[float, float] | None]:
    """The two 'copies' rows of `device`, and their overlap with its interval."""
    seq, both = (r for r in rows if r["device"] == device and r["part"] == "copies")
    return (seq, both) + overlap_of(seq["compute_times"], seq["copy_times"], both["times"])


def _two_gpu_rows(g0: gd.Device, g1: gd.Device, n: int, repeats: int) -> list[dict[str, Any]]:
    """Two products in sequence on `g0`, against one product on each of `g0` and `g1`."""
    gd.manual_seed(0)
    a0, b0 = gd.randn(n, n, device=g0), gd.randn(n, n, device=g0)
    a1, b1 = a0.to(g1), b0.to(g1)

    def sequential() -> None:
        a0 @ b0
        a0 @ b0

    def concurrent() -> None:
        a0 @ b0  # queued on g0, returns at once
        a1 @ b1  # queued on g1 while g0 works

    step(f"4: two products in sequence on {device_label(g0)}, and one on each of {device_label(g0)} and "
         f"{device_label(g1)}, in alternation")
    seq, par = interleaved([sequential, concurrent], repeats, wall=True)
    speedup = ratio(seq["times"], par["times"], paired=True).ratio
    return [
        {"device": str(g0), "n": n, "part": "two GPUs", "scenario": "two products in sequence, one GPU",
         **seq},
        {"device": f"{g0}+{g1}", "n": n, "part": "two GPUs", "scenario": "one product per GPU, concurrently",
         **par, **({"speedup": None, "efficiency": None} if is_emulated(g0) or is_emulated(g1) else
                   {"speedup": speedup, "efficiency": speedup / 2})},
    ]


# ---------------------------------------------------------------------------------------------
# the conclusion and the figure
# ---------------------------------------------------------------------------------------------


def conclusion_of(res: Result) -> str:
    """The conclusion re-derived from a Result's table alone (the referee's way in)."""
    devs = [gd.Device(dev) for dev in res.meta["devices"]]
    return conclusion(res.rows, devs, [gd.Device(g) for g in res.meta["gpus"]], res.skipped,
                      emulated_in(res.meta["devices"]))


def conclusion(rows: list[dict[str, Any]], devs: list[gd.Device], gpus: list[gd.Device],
               skipped: str | None, emulated: set[str] | None = None) -> str:
    """What the rows say: how much overlapped on each device, and the two-GPU speedup (none of
    it for emulated GPUs, whose queued work runs on the CPU when something waits for it)."""
    fake = emulated or set()
    name = namer(fake)
    text = [_emulated_overlap_text(d) if str(d) in fake else _overlap_text(rows, d) for d in devs]
    copied = {r["device"] for r in rows if r.get("part") == "copies"}  # none in a report made before them
    text += [_copies_text(rows, d, name, str(d) in fake) for d in devs if str(d) in copied]
    if any(d.type == "cpu" for d in devs):
        text.append("The CPU has no rows of products copied to the host: its results already lie in host "
                    "memory, so there is no copy to overlap.")
    if not skipped and {str(g) for g in gpus[:2]} & fake:
        text.append(f"The products in sequence on {name(gpus[0])} and at once on {name(gpus[0])} and "
                    f"{name(gpus[1])} ran "
                    f"(the code path of two devices), but emulated GPUs run their work one after another "
                    f"on the same CPU, so they cannot show two GPUs working at once: this report compares "
                    f"no times of theirs.")
    elif not skipped:
        seq, par = rows[-2], rows[-1]
        r = ratio(seq["times"], par["times"], paired=True)
        s = (f"Two products in sequence on {gpus[0]} took {format_seconds(seq['seconds'])}; one on "
             f"each of {gpus[0]} and {gpus[1]} took {format_seconds(par['seconds'])}: a "
             f"{r.ratio:.2f}x speedup, {100 * r.ratio / 2:.0f}% of the ideal 2x")
        s += f" ({r.interval_text()}). " if r.known else ". "
        if r.known and not r.differs:
            s += "No measurable speedup: the products were too small to hide launch and synchronization costs."
        elif r.ratio / 2 >= 0.8:
            s += "Both GPUs worked at the same time, because each call only queued its work."
        else:
            s += ("Far from ideal: the products were too small to hide launch and synchronization "
                  "costs, or one GPU waited for the other.")
        text.append(s)
    return "\n\n".join(text)


def _copies_text(rows: list[dict[str, Any]], d: gd.Device, name: Any, emulated: bool) -> str:
    seq, both, overlap, bounds = _copies_overlap(rows, str(d))
    k, n = seq["products"], seq["n"]
    same = ("every copy equals its product" if both["copies_match"] else
            "some non-blocking copy differs from the blocking copy of its product")
    if emulated:
        return (f"On {name(d)}, {k} {n}x{n} products copied to the CPU after them (blocking) and behind "
                f"each (non-blocking) ran, and {same}; an emulated GPU runs its queue on the CPU when "
                f"waited for, so its copies cannot overlap its products: no overlap is claimed.")
    s = (f"On {d}, {k} {n}x{n} products took {format_seconds(seq['compute_s'])} and their blocking copies "
         f"to the CPU {format_seconds(seq['copy_s'])} ({format_seconds(seq['seconds'])} in sequence); each "
         f"product followed by a non-blocking copy took {format_seconds(both['seconds'])} ({same}): "
         + _hidden_text(overlap, bounds))
    if bounds is None:
        return s
    if bounds[0] > 0:
        return s + ("The copy engine moved each result while the next product computed, as the copies "
                    "were only queued.")
    return s + ("No measurable overlap: the copies waited for the products, or took too little time "
                "beside them to show.")


def _emulated_overlap_text(d: gd.Device) -> str:
    return (emulated_text(d) + "Its queued products run only when something waits for them, on the "
            "same CPU as the host work, so they cannot overlap with it: the overlap a GPU gives is not "
            "shown here.")


def _mark(rows: list[dict[str, Any]], r: dict[str, Any]) -> str:
    """What a bar's note adds to its time: the overlap or the speedup only where its interval
    excludes none (0% or 1x), as the conclusion says; nothing for emulated GPUs (None)."""
    if r.get("overlap") is not None and r["part"] == "copies":
        bounds = _copies_overlap(rows, r["device"])[3]
        measured = bounds is None or bounds[0] > 0 or bounds[1] < 0
        return f"\n{100 * r['overlap']:.0f}% overlap" if measured else "\nno measurable overlap"
    if r.get("overlap") is not None:
        prod, host, both = (x for x in rows if x["device"] == r["device"] and x["part"] == "overlap")
        _, bounds = overlap_of(prod["times"], host["times"], both["times"])
        measured = bounds is None or bounds[0] > 0 or bounds[1] < 0
        return f"\n{100 * r['overlap']:.0f}% overlap" if measured else "\nno measurable overlap"
    if r.get("speedup") is not None:
        seq = next(x for x in rows if x["part"] == "two GPUs" and x is not r)
        measured = ratio(seq["times"], r["times"], paired=True)
        return (f"\n{r['speedup']:.2f}x (ideal 2x)" if not measured.known or measured.differs else
                "\nno measurable speedup")
    return ""


def _hidden_text(overlap: float, bounds: tuple[float, float] | None) -> str:
    """How much of the shorter of two works was hidden, with its interval."""
    s = f"{100 * min(max(overlap, 0.0), 1.0):.0f}% of the shorter one was hidden"
    if bounds is None:
        return s + " (a single round: no interval). "
    return s + f" ({LEVEL:.0%} interval {100 * bounds[0]:.0f}% to {100 * bounds[1]:.0f}%). "


def _overlap_text(rows: list[dict[str, Any]], d: gd.Device) -> str:
    prod, host, both = (r for r in rows if r["device"] == str(d) and r["part"] == "overlap")
    overlap, bounds = overlap_of(prod["times"], host["times"], both["times"])
    s = (f"On {d}, two {prod['n']}x{prod['n']} products took {format_seconds(prod['seconds'])}, the host "
         f"work {format_seconds(host['seconds'])}, and both together {format_seconds(both['seconds'])}: "
         + _hidden_text(overlap, bounds))
    if bounds is None:
        return s
    lo, hi = bounds
    if d.type == "cuda":
        s += ("The products were queued and the host went on with its own work while the GPU "
              "computed: this is why code that does not synchronize needlessly is fast."
              if lo > 0.5 else
              "Little of it measurably overlapped: something in the loop waited for the GPU before "
              "the host work started.")
    elif hi < 0:
        s += (f"On the CPU a product runs before its call returns, so nothing overlaps; here "
              f"the two together even took measurably longer than one after the other "
              f"({format_seconds(both['no_overlap_s'])}): on a busy machine, or with the product's "
              f"threads still holding the cores, the host work runs slower right after a product.")
    elif lo <= 0:
        s += ("No measurable overlap: on the CPU a product runs before its call returns, so the "
              "host work can only start afterwards and the times add up.")
    else:
        s += ("The interval excludes 0 although a CPU product runs before its call returns: the "
              "load on this machine changed within the rounds, so read this overlap as noise.")
    return s


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """Wall-clock time of each scenario, with where 'both' would land with no overlap and
    with full overlap."""
    from gpudev import plots

    fig, (ax,) = plots.new_figure(10, 5.5)
    items = []
    for r in res.rows:
        note = format_seconds(r["seconds"], micro=plots.MICRO) + _mark(res.rows, r)
        items.append(bar_item(r, r["scenario"], res.label(r["device"]), color=plots.device_color(r["device"]),
                              note=note))
    if items:
        positions, widths, scale = plots.bars(ax, items, ylabel="wall-clock time", with_legend=False)
        top = ax.get_ylim()[1] * scale
        # where 'both' would land with no overlap and with full overlap; not for an emulated GPU,
        # whose queue runs on the CPU when waited for, so its bars say nothing about overlap
        for r in res.rows:
            if r.get("no_overlap_s") is None or r["device"] in res.emulated:
                continue
            key = (r["scenario"], res.label(r["device"]))
            x, width = positions[key], widths[key]
            top = max(top, r["no_overlap_s"])
            for value, style, label in ((r["no_overlap_s"], "--", "no overlap (sum of the two)"),
                                        (r["full_overlap_s"], ":", "full overlap (the longer one)")):
                ax.hlines(value / scale, x - width / 2, x + width / 2, colors="black", linestyles=style,
                          label=label if not ax.get_legend_handles_labels()[1].count(label) else None)
        bottom = None if ax.get_yscale() == "log" else 0  # a log axis keeps the bottom plots.bars chose
        ax.set_ylim(bottom, top / scale * 1.3)
        plots.legend(ax)
    two_gpus = ", and on two GPUs" if any(r.get("part") == "two GPUs" for r in res.rows) else ""
    copies = "; products copied to the CPU" if any(r.get("part") == "copies" for r in res.rows) else ""
    plots.set_title(ax, f"Exercise 4: two products with host work{two_gpus}{copies} (median, whiskers min-max)")
    notes_text(ax, res)
    return fig
