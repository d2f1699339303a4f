"""Exercise 1: a big matrix product vs tiny tasks on each device, the peaks of the roofline
chart, and the wrong way to time GPU work (a timer that does not wait for the GPU).

    >>> res = matmul_vs_small(n=256, peak_n=256)
    >>> sorted({r["task"] for r in res.rows})
    ['add1', 'bandwidth', 'matmul', 'peak sgemm', 'setup', 'stream add', 'sum', 'sum+item']
    >>> fig = res.plot()     # time per call, and the roofline of the measured peaks
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import gpudev as gd

from .._devices import DeviceLike, device_label
from .._format import format_count, format_gflops, format_ratio, format_seconds
from ..stats import faster_than_device
from .compare import compare, ratio, single_vs_sample
from .measure import (device_meta, devices_to_run, emulated_size, emulated_text, first_call, is_emulated, positive_int,
                      stats, step, time_repeats)
from .peaks import measure_peaks
from .result import TIMING_FIELDS, Result, bar_item, figure_of, notes_text
from .roofline_chart import point_label, roofline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["BOOK_READING", "COLUMNS", "FIELDS", "compute_roof", "conclusion", "conclusion_of", "matmul_vs_small",
           "plot", "row"]

NUMBER = 1
# What a timer that does not wait for the GPU reads for the book's 10000 x 10000 float32
# product on a GPU: the time to queue the work, not to do it.
BOOK_READING = {"n": 10000, "seconds": 0.016}
FIELDS = {
    **TIMING_FIELDS,
    "task": "'setup', 'peak sgemm', 'stream add', 'matmul', 'sum', 'sum+item', 'add1' or 'bandwidth'",
    "label": "the task in words, with its size",
    "timing": "'first call' (one call, one-time costs included), 'synchronized' (warm, right), "
              "'best of n' (the peaks) or 'unsynchronized (wrong)' (GPUs: a timer that does not "
              "wait for the GPU)",
    "flops": "floating-point operations of one call",
    "bytes": "the least memory traffic of one call (inputs read once, output written once)",
    "footprint": "bytes the call works on: which cache level it can run from",
    "gflops": "flops / seconds / 1e9 (achieved GFLOP/s; products only)",
    "gbps": "bytes / seconds / 1e9 (achieved GB/s; sums and adds only)",
    "workload": "the kind of work, for the roofline: 'matmul', 'b += b' (roofs and points come from "
                "the same kind), None for the rest",
    "threaded": "True when gpudev split the add over several CPU threads (elementwise_parallel_from "
                "elements and more)",
    "demonstration": "True for a row shown on purpose (a wrong timing): neither a point nor a claim",
}
COLUMNS = [("device", "device", "device"), ("label", "task", "text"), ("timing", "timing", "text"),
           ("seconds", "time/call", "time"), ("min_s", "min", "time"), ("max_s", "max", "time"),
           ("repeats", "n", "int"), ("calls", "calls/repeat", "int"), ("gflops", "GFLOP/s", "rate"),
           ("gbps", "GB/s", "rate")]
COMPUTE_TASKS = ("matmul", "peak sgemm")  # rated in GFLOP/s; the other tasks in GB/s
# rows that say nothing about steady throughput, and the peaks (they are the roofs): not points
NOT_POINTS = ("first call", "unsynchronized (wrong)")
WORKLOAD = {"matmul": "matmul", "peak sgemm": "matmul", "stream add": "b += b"}  # by task
# The main product is sized so that its first call and this many warm repeats fit the budget
# at the measured peak: there is always a steady timing, and the first call is judged against
# a spread (single_vs_sample needs a few repeats).
WARM_MIN = 3


def row(device: gd.Device, task: str, label: str, timing: str, timed: dict[str, Any],
        flops: float, nbytes: float, footprint: float | None = None, *, threaded: bool | None = None,
        demonstration: bool = False) -> dict[str, Any]:
    """One row: the task, its timing statistics `timed`, and its GFLOP/s or GB/s."""
    sec = timed["seconds"]
    # an emulated GPU's times are not a GPU's: no rates
    rated = not is_emulated(device)
    compute = task in COMPUTE_TASKS and rated
    return {"device": str(device), "task": task, "label": label, "timing": timing, **timed,
            "flops": flops, "bytes": nbytes, "footprint": footprint, "workload": WORKLOAD.get(task),
            "threaded": threaded, "demonstration": demonstration,
            "gflops": flops / sec / 1e9 if flops and compute else None,
            "gbps": nbytes / sec / 1e9 if nbytes and rated and task not in COMPUTE_TASKS else None}


def pick(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    """The first row whose fields equal `match`, None if there is none."""
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def matmul_vs_small(n: int = 10000, devices: DeviceLike | Iterable[DeviceLike] | None = None, *,
                    small: int = 4, calls: int | None = None, repeats: int = 7,
                    bandwidth_elements: int = 2**26, budget_s: float = 25.0,
                    peak_n: int | None = None) -> Result:
    """Exercise 1: a big matrix product and tiny tasks on each device, timed right.

    On each device: the first allocation (on a GPU: context creation); the roofs of the
    roofline chart (the best of several ``peak_n`` products, default
    ``peaks.PEAK_N``, and a stream-style add in each cache level and in main memory); the
    first and the warm ``n x n`` float32 product (a smaller size when, at the measured peak,
    one product would take more than ``budget_s``: see :func:`product_size`); a
    ``small x small`` sum (result left on the
    device), the same with ``.item()`` (a copy to the host and a synchronization), a
    1-element add, and the sum of ``bandwidth_elements`` floats. Tiny tasks are timed by
    gd.benchmark in batches of ``calls`` calls (None: sized automatically); a row's unit is
    one call. The first product and its warm repeats stay within ``budget_s`` seconds: warm
    repeats run while the budget allows (up to ``repeats``; none when one product takes more
    than half of it). On GPUs the product is also timed the wrong way, with
    ``gd.Timer(sync=False)``.

    Row fields: see ``Result.fields``.

    Example:
        >>> res = matmul_vs_small(n=256, peak_n=256)
        >>> res.meta["peaks"]["cpu"]["gflops"] > 0
        True
    """
    op = "matmul_vs_small"
    n = positive_int(op, "n", n)
    small = positive_int(op, "small", small)
    calls = None if calls is None else positive_int(op, "calls", calls)
    repeats = positive_int(op, "repeats", repeats)
    bandwidth_elements = positive_int(op, "bandwidth_elements", bandwidth_elements)
    peak_n = None if peak_n is None else positive_int(op, "peak_n", peak_n)
    devs, notes = devices_to_run(devices, op)
    rows: list[dict[str, Any]] = []
    peaks: dict[str, dict[str, Any]] = {}
    for d in devs:
        step(f"1: first use of {device_label(d)}")
        rows.append(row(d, "setup", "first allocation on the device", "first call",
                        first_call(lambda d=d: gd.zeros((1,), device=d)), 0, 0))
        if not is_emulated(d):  # an emulated GPU has no roofs: its times are the CPU's
            peaks[str(d)] = _peaks(d, peak_n, rows)
    asked, n = n, product_size(n, peaks, budget_s)
    if n != asked:
        slowest = min(peaks.values(), key=lambda p: p["gflops"])
        notes.append(f"the product was timed at {n}x{n}, not {asked}x{asked}: at the measured peak of "
                     f"{format_gflops(slowest['gflops'])} its first call and {WARM_MIN} warm repeats would "
                     f"take more than the time budget of {format_seconds(budget_s)}; pass budget_s= to "
                     f"time it")
    for d in devs:
        _product(d, emulated_size(d, n), repeats, budget_s, rows, notes)
        _tiny(d, small, calls, repeats, rows)
        _bandwidth(d, bandwidth_elements, repeats, rows)
    return Result(
        number=NUMBER, name="matmul_vs_small", title="A big matrix product vs tiny tasks",
        question="How much faster is a GPU than the CPU for a big matrix product, and for a "
                 "tiny task? What goes wrong when GPU work is timed without synchronizing?",
        fields=FIELDS, columns=COLUMNS, rows=rows,
        conclusion=conclusion(rows, devs, n, small),
        notes=notes,
        meta={"n": n, "n_asked": asked, "warm_min": WARM_MIN, "small": small, "calls": calls, "repeats": repeats, "budget_s": budget_s,
              "bandwidth_elements": bandwidth_elements, "peaks": peaks, "book_reading": BOOK_READING,
              "devices": device_meta(devs)},
    )


def product_size(n: int, peaks: dict[str, dict[str, Any]], budget_s: float) -> int:
    """`n`, when its first call and WARM_MIN warm repeats (1 + WARM_MIN products) take at
    most `budget_s` seconds at every device's measured peak; else the largest multiple of 500
    (at least 500) for which they do on the slowest device.

    >>> product_size(10000, {"cpu": {"gflops": 400.0}}, 25.0), product_size(10000, {"cpu": {"gflops": 20.0}}, 25.0)
    (10000, 3500)
    """
    slowest = min((p["gflops"] for p in peaks.values()), default=math.inf)
    products = 1 + WARM_MIN
    if products * 2.0 * n**3 / (slowest * 1e9) <= budget_s:
        return n
    fits = (budget_s / products * slowest * 1e9 / 2.0) ** (1 / 3) * (1 + 1e-9)  # no 4999.99 for 5000
    return int(min(n, max(500, fits // 500 * 500)))


def _peaks(d: gd.Device, peak_n: int | None, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The device's roofs (peaks.measure_peaks), each measurement a row."""
    measured, peak = measure_peaks(d, n=peak_n)
    for m in measured:
        timed = stats(m["times"], m["clock"])
        timed.update(seconds=m["best_s"])  # a roof is the best repeat, not the median
        rows.append(row(d, m["task"], m["label"], f"best of {len(m['times'])}", timed, m["flops"],
                        m["bytes"], m["footprint"], threaded=m.get("threaded")))
    return peak


def _product(d: gd.Device, n: int, repeats: int, budget_s: float, rows: list[dict[str, Any]],
             notes: list[str]) -> None:
    """The n x n product: first call, warm repeats within the budget, and on GPUs wrong."""
    label, flops, nbytes = f"matmul {n}x{n}", 2.0 * n**3, 3.0 * 4 * n * n
    # the values do not change a product's time, and ones are far cheaper to make than
    # normal samples (two 10000 x 10000 randn take seconds on a small CPU)
    a, b = gd.ones((n, n), device=d), gd.ones((n, n), device=d)
    gd.synchronize(d)
    step(f"1: first {label} on {device_label(d)}")
    first = first_call(lambda: a @ b)
    rows.append(row(d, "matmul", label, "first call", first, flops, nbytes, nbytes))
    # at least one warm repeat, even when the first call (with its one-time costs) overran
    # the budget: the text relies on a steady timing
    # the product was sized for WARM_MIN of them; on a machine busier than during the peak
    # measurement they may overrun the budget a little, which the first call's judgement needs
    warm_repeats = min(repeats, max(WARM_MIN, int((budget_s - first["seconds"]) // first["seconds"])))
    step(f"1: {label} on {device_label(d)}, {warm_repeats} warm repeat(s)")
    warm = time_repeats(lambda: a @ b, warm_repeats, warmup=0, calls=1, noise_stop=False,  # budget-bound
                        devices=[d])  # without a warm-up to learn the GPU from, it is named
    rows.append(row(d, "matmul", label, "synchronized", warm, flops, nbytes, nbytes))
    if d.type == "cuda":
        rows.append(row(d, "matmul", label, "unsynchronized (wrong)",
                        _unsynchronized(lambda: a @ b, d, warm["repeats"]), flops, nbytes, nbytes,
                        demonstration=True))


def _tiny(d: gd.Device, small: int, calls: int | None, repeats: int, rows: list[dict[str, Any]]) -> None:
    """Tiny tasks: their first call, then gd.benchmark per call."""
    x, one = gd.randn(small, small, device=d), gd.ones((1,), device=d)
    sum_bytes = 4.0 * (small * small + 1)
    tiny: list[tuple[str, str, Callable[[], Any], float, float]] = [
        ("sum", f"sum {small}x{small}", x.sum, small * small, sum_bytes),
        ("sum+item", f"sum {small}x{small} + .item()", lambda: x.sum().item(), small * small, sum_bytes),
        ("add1", "1-element add", lambda: one + 1.0, 1, 8.0),
    ]
    for task, label, fn, flops, nbytes in tiny:
        step(f"1: {label} on {device_label(d)}")
        rows.append(row(d, task, label, "first call", first_call(fn), flops, nbytes, nbytes))
        rows.append(row(d, task, label, "synchronized", time_repeats(fn, repeats, calls=calls), flops,
                        nbytes, nbytes))


def _bandwidth(d: gd.Device, elements: int, repeats: int, rows: list[dict[str, Any]]) -> None:
    """The sum of a big array: the same task as the tiny sum, with data to move."""
    step(f"1: sum of {elements:,} floats on {device_label(d)}")
    v = gd.ones((elements,), device=d)
    rows.append(row(d, "bandwidth", f"sum of {elements:,} floats", "synchronized",
                    time_repeats(v.sum, repeats), float(elements), 4.0 * elements, 4.0 * elements))


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


# ---------------------------------------------------------------------------------------------
# the conclusion
# ---------------------------------------------------------------------------------------------


def compute_roof(rows: list[dict[str, Any]], dev: str) -> dict[str, Any] | None:
    """The best rate any synchronized product reached on `dev` in this run (peak products,
    the main product's first call and its warm repeats, each at its fastest repeat): the
    roof its products are held to. {'gflops', 'label', 'timing'}, or None without products.

    >>> compute_roof([{"device": "cpu", "workload": "matmul", "flops": 2e9, "min_s": 0.01,
    ...                "label": "matmul", "timing": "first call"}], "cpu")["gflops"]
    200.0
    """
    best = None
    for r in rows:
        if (r["device"] != dev or r.get("workload") != "matmul" or r.get("demonstration")
                or r.get("timing") == "unsynchronized (wrong)" or not r.get("min_s")):
            continue
        rate = r["flops"] / r["min_s"] / 1e9
        if best is None or rate > best["gflops"]:
            best = {"gflops": rate, "label": r["label"], "timing": r["timing"]}
    return best


def conclusion_of(res: Result) -> str:
    """The conclusion re-derived from a Result's table alone (the referee's way in)."""
    devs = [gd.Device(dev) for dev in res.meta["devices"]]
    fake = {dev for dev, info in res.meta["devices"].items() if info.get("emulated")}
    return conclusion(res.rows, devs, res.meta["n"], res.meta["small"], emulated=fake)


def conclusion(rows: list[dict[str, Any]], devs: list[gd.Device], n: int, small: int,
               peaks: dict[str, dict[str, Any]] | None = None, emulated: set[str] | None = None) -> str:
    """What the rows say: per device, each GPU against the CPU, and the timer lesson. Every
    rate is held to :func:`compute_roof`; emulated GPUs (`emulated`, default: the devices that
    say so) get no rates and no comparisons."""
    fake = set(emulated) if emulated is not None else {str(d) for d in devs if is_emulated(d)}
    real = [d for d in devs if str(d) not in fake]
    text = [_device_text(rows, str(d), n, small) for d in real]
    text += [_emulated_text(rows, str(d)) for d in devs if str(d) in fake]
    cpu = "cpu" if gd.cpu() in devs else None
    for d in real:
        if d.type == "cuda":
            text += _gpu_text(rows, str(d), cpu, small)
    text.append(_book_reading_text(rows, real))
    return "\n\n".join(t for t in text if t)


def _emulated_text(rows: list[dict[str, Any]], dev: str) -> str:
    """An emulated GPU: no rates or comparisons, but the asynchronous launch, which the
    emulation shows as a GPU does (its queue runs only when something waits for it)."""
    s = emulated_text(dev) + "It gets no rates, roofs or comparisons."
    mm = pick(rows, device=dev, task="matmul", timing="synchronized")
    wrong = pick(rows, device=dev, task="matmul", timing="unsynchronized (wrong)")
    if mm and wrong:
        s += (f" What it does show is the asynchronous launch: a clock read right after queueing the "
              f"{mm['label'].removeprefix('matmul ')} product reads {format_seconds(wrong['seconds'])} (median), "
              f"while gd.Timer, which waits for the device, reads {format_seconds(mm['seconds'])}. The call "
              f"returns once the work is queued; the work runs when something waits for it (on this emulated "
              f"device, on the CPU), and a timer that does not wait measures only the queueing.")
    return s


def _device_text(rows: list[dict[str, Any]], dev: str, n: int, small: int) -> str:
    mm = pick(rows, device=dev, task="matmul", timing="synchronized")
    first = pick(rows, device=dev, task="matmul", timing="first call")
    roof = compute_roof(rows, dev)
    s = f"On {dev} the {n}x{n} product takes {format_seconds(mm['seconds'])} ({format_gflops(mm['gflops'])}"
    if roof["label"] == mm["label"] and roof["timing"] == "synchronized":
        s += (f"; its fastest repeat, {format_gflops(roof['gflops'])}, is the best rate of any product in "
              f"this run")
    else:
        which = roof["label"] if roof["timing"].startswith("best of") else f"{roof['label']}, {roof['timing']}"
        s += (f", {mm['gflops'] / roof['gflops']:.0%} of {format_gflops(roof['gflops'])}, the best rate of "
              f"any product in this run ({which}, its fastest repeat)")
    s += "). " + _first_call_text(first, mm)
    return s + _tiny_text(rows, dev, small)


def _first_call_text(first: dict[str, Any], warm: dict[str, Any]) -> str:
    """The first call against the warm repeats: a single first call has no spread of its own,
    so it is judged against theirs, and fewer than 3 warm repeats have too little of it."""
    took = f"The first product took {format_seconds(first['seconds'])}"
    if warm["repeats"] < 3:
        return (f"{took} and {format_count(warm['repeats'], 'warm repeat')} {format_seconds(warm['seconds'])} "
                f"(median): too few warm repeats to tell a one-time cost from the noise. ")
    where = single_vs_sample(first["seconds"], warm["times"])
    warm_text = (f"the {warm['repeats']} warm ones ({format_seconds(warm['min_s'])} to "
                 f"{format_seconds(warm['max_s'])})")
    if where == "above":
        return (f"{took}, more than {warm_text}: one-time costs that a benchmark must leave out "
                f"of its repeats. ")
    if where == "below":
        return f"{took}, less than {warm_text}: the machine was busier during the warm repeats. "
    return f"{took}, as long as {warm_text}: no measurable one-time cost here. "


def _tiny_text(rows: list[dict[str, Any]], dev: str, small: int) -> str:
    tiny = pick(rows, device=dev, task="sum", timing="synchronized")
    big = pick(rows, device=dev, task="bandwidth")
    s = (f"A {small}x{small} sum takes {format_seconds(tiny['seconds'])} per call (timed in batches of "
         f"{tiny['calls']:,} calls; an empty call reads {format_seconds(tiny['overhead_s'])} the same "
         f"way). It moves {tiny['bytes']:.0f} bytes at {tiny['gbps']:.3g} GB/s; the sum of "
         f"{big['flops']:,.0f} floats reaches {big['gbps']:.3g} GB/s")
    # seconds per byte: the tiny sum's against the big sum's
    r = ratio([t / tiny["bytes"] for t in tiny["times"]], [t / big["bytes"] for t in big["times"]])
    if r.differs and r.ratio > 1:
        return s + (f", {format_ratio(r.ratio)} more ({r.interval_text()}): for tiny tasks the fixed "
                    f"cost of each call, not the hardware, sets the time.")
    return s + (": no measurable difference per byte, so this run cannot separate the fixed cost "
                "of a call from the cost of the data (a busy machine?).")


def _gpu_text(rows: list[dict[str, Any]], g: str, cpu: str | None, small: int) -> list[str]:
    text = []
    mm_g = pick(rows, device=g, task="matmul", timing="synchronized")
    wrong = pick(rows, device=g, task="matmul", timing="unsynchronized (wrong)")
    setup = pick(rows, device=g, task="setup")
    if cpu is not None:
        mm_c = pick(rows, device=cpu, task="matmul", timing="synchronized")
        t_c = pick(rows, device=cpu, task="sum", timing="synchronized")
        t_g = pick(rows, device=g, task="sum", timing="synchronized")
        big = (f"For the big product, {compare(g, mm_g['times'], 'the CPU', mm_c['times'])}; "
               if mm_g and mm_c else "")
        text.append(big + f"for the {small}x{small} sum, {compare(g, t_g['times'], 'the CPU', t_c['times'])}. "
                    f"A GPU pays off when there is enough work per call to hide the cost of launching it.")
    if mm_g and wrong:
        r = ratio(mm_g["times"], wrong["times"])
        implied = wrong["flops"] / wrong["seconds"] / 1e9
        s = (f"Timed without synchronizing, the product on {g} seems to take {format_seconds(wrong['seconds'])}, "
             f"{format_ratio(r.ratio)} less than its real {format_seconds(mm_g['seconds'])}"
             + (f" ({r.interval_text()})" if r.known else "") + f": an implied {format_gflops(implied)}")
        roof = compute_roof(rows, g)
        if roof:
            s += (f", {format_ratio(implied / roof['gflops'])} the {format_gflops(roof['gflops'])} that {g} "
                  f"reached at best")
        s += (". That timer measured only the launch, the book's mistake. " if r.differs and r.ratio > 1 else
              ". This time the call itself waited for the GPU, which a timer cannot count on. ")
        text.append(s + f"The first allocation on {g} took {format_seconds(setup['seconds'])} (CUDA context "
                        f"creation when it is the process's first use of the GPU).")
    return text


def _book_reading_text(rows: list[dict[str, Any]], devs: list[gd.Device]) -> str:
    """The unsynchronized timer's lesson by arithmetic: the rate a reading of 0.016 s implies,
    against the best product rate each device reached (stats.faster_than_device)."""
    n, sec = BOOK_READING["n"], BOOK_READING["seconds"]
    flops = 2.0 * n**3
    implied = flops / sec / 1e9  # GFLOP/s
    s = (f"A timer that does not wait for the GPU can read {format_seconds(sec)} for a {n}x{n} product. "
         f"That would be {flops:.2g} FLOP in {format_seconds(sec)}, {format_gflops(implied)}: "
         ).replace("e+", "e")
    roofs = {str(d): compute_roof(rows, str(d)) for d in devs}
    roofs = {dev: r for dev, r in roofs.items() if r}
    parts = [f"{format_ratio(implied / r['gflops'])} the {format_gflops(r['gflops'])} {dev} reached at best"
             for dev, r in roofs.items()]
    s += "; ".join(parts) + ". "
    if roofs and all(faster_than_device(sec, flops=flops, roof_gflops=r["gflops"]) for r in roofs.values()):
        s += ("No device here comes near it, so that reading cannot be the product: it timed the launch, "
              "not the work. ")
    else:
        s += "A device here could reach that rate, so on it the arithmetic alone cannot expose the reading. "
    if not any(d.type == "cuda" for d in devs):
        s += ("On the CPU every call finishes before it returns, so a CPU timer reads the same with or "
              "without synchronizing; a GPU machine measures the wrong reading next to the right one.")
    return s


# ---------------------------------------------------------------------------------------------
# the figure
# ---------------------------------------------------------------------------------------------


@point_label(NUMBER)
def _roofline_label(r: dict[str, Any]) -> str | None:
    if r.get("timing") in NOT_POINTS or r.get("task") in ("peak sgemm", "stream add"):
        return None
    return r["label"]


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """Time per call of every row (log scale), and the roofline chart of the measured peaks."""
    from gpudev import plots

    fig, (left, right) = plots.new_figure(15, 6, ncols=2)
    items = []
    hatches = {"first call": "//", "unsynchronized (wrong)": "xx"}
    for r in res.rows:
        if r["task"] in ("peak sgemm", "stream add"):
            continue  # the roofline panel shows them as roofs
        series = res.label(r["device"]) + ("" if r["timing"] == "synchronized" else f" {r['timing']}")
        items.append(bar_item(r, r["label"], series, color=plots.device_color(r["device"]),
                              hatch=hatches.get(r["timing"])))
    plots.bars(left, items, ylabel="time per call", log=True)
    shown = {r["timing"] for r in res.rows}
    keys = ["median, whiskers min-max"] + [f"{h}: {t}" for t, h in (("first call", "hatched"),
                                           ("unsynchronized (wrong)", "crossed")) if t in shown]
    plots.set_title(left, "Exercise 1: time per call (" + "; ".join(keys) + ")")
    notes_text(left, res)
    roofline(res, ax=right)
    return fig
