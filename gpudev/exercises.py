"""The exercises of the "GPUs" chapter of *Dive into Deep Learning*, measured on this machine.

Each function runs one exercise on the devices there are and returns a :class:`Result`: the
measured rows (every raw time included), checks that must hold, a conclusion written from
the numbers, why a part was skipped (e.g. no second GPU), and ``.table()`` / ``.plot()``.

1. :func:`matmul_vs_small`   a big matrix product vs tiny tasks on each device, timed right
2. :func:`params_on_device`  a 10-512-10 model on a device: save, load onto CPU and device
3. :func:`norm_logging`      logging a norm with ``.item()`` each step vs keeping it on the device
4. :func:`two_devices`       two products on two GPUs vs one; overlap of GPU and host work
5. :func:`small_op_sweep`    the ``b += b`` loop per size: where the GPU starts to win

``python -m gpudev exercises`` runs them all (see :func:`run_cli`).

    >>> from gpudev import exercises as ex
    >>> res = ex.small_op_sweep(sizes=(4, 64), iters=100)
    >>> print(res.table())       # doctest: +SKIP
    >>> res.conclusion           # doctest: +SKIP
    >>> fig = res.plot("sweep.png")
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

import gpudev as gd
from gpudev.timing import format_bytes, format_seconds

__all__ = [
    "Result", "matmul_vs_small", "params_on_device", "norm_logging", "two_devices",
    "small_op_sweep", "settings", "run", "run_cli", "EXERCISES",
]

DeviceLike = Any  # a gd.Device, 'cpu', 'cuda', 'cuda:N'

# ---------------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------------

# Fields every timing row has; each exercise documents its own fields on top of these.
TIMING_FIELDS = {
    "device": "where it ran: 'cpu' or 'cuda:N'",
    "seconds": "median time of one timed unit (the exercise says what a unit is), in seconds",
    "min_s": "fastest repeat, seconds",
    "max_s": "slowest repeat, seconds",
    "std_s": "sample standard deviation of the repeats, seconds (0 for one repeat)",
    "repeats": "how many repeats were timed",
    "clock": "'gpu' (CUDA events), 'host' (perf_counter, ending after a synchronization) "
             "or 'host, unsynchronized' (the wrong way, shown on purpose)",
    "times": "every repeat's time, seconds",
}


@dataclasses.dataclass
class Result:
    """What one exercise measured and what it means.

    ``rows`` are dicts whose keys ``fields`` documents (``columns`` are the ones the table
    shows); ``checks`` are the correctness checks (``passed`` must be True); ``conclusion``
    is written from the measured numbers; ``skipped`` says why the exercise's main comparison
    could not run here (the rows then hold what could run), ``notes`` name the other parts
    that were left out and why; ``meta`` holds sizes, device descriptions and measured peaks.

    Example:
        >>> res = small_op_sweep(sizes=(4, 64), iters=50)
        >>> [r["per_op_s"] > 0 for r in res.rows]
        [True, True]
        >>> fig = res.plot()
    """

    number: int
    name: str
    title: str
    question: str
    fields: dict[str, str]
    columns: list[tuple[str, str, str]]  # (row key, header, format kind)
    rows: list[dict[str, Any]]
    conclusion: str
    skipped: str | None = None
    notes: list[str] = dataclasses.field(default_factory=list)
    checks: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        # every row carries every documented field, None where it does not apply
        for row in self.rows:
            for key in self.fields:
                row.setdefault(key, None)

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(c["passed"] for c in self.checks)

    def table(self, markdown: bool = False) -> str:
        """The rows as an aligned text table (or a Markdown one), then the checks."""
        header = [h for _, h, _ in self.columns]
        body = [[_format_cell(row.get(key), kind) for key, _, kind in self.columns] for row in self.rows]
        if markdown:
            lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            lines += ["| " + " | ".join(cells) + " |" for cells in body]
        else:
            widths = [max(len(x) for x in col) for col in zip(header, *body)]
            lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
            lines.append("  ".join("-" * w for w in widths))
            lines += ["  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip() for cells in body]
        if not self.rows:
            lines = ["(no rows: " + (self.skipped or "nothing could run here") + ")"]
        if markdown and self.checks:
            lines.append("")  # a list right after a table would be read as a table row
        for c in self.checks:
            mark = "PASS" if c["passed"] else "FAIL"
            lines.append(("- " if markdown else "") + f"check {mark}: {c['check']}: {c['detail']}")
        return "\n".join(lines)

    def plot(self, path: str | os.PathLike[str] | None = None):
        """A matplotlib Figure of the rows (saved as PNG to `path` when given)."""
        plots = _plots_module()
        if plots is None:
            raise ImportError(f"plot: {_NO_MATPLOTLIB}")

        fig = plots.plot_result(self)
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-ready values (non-finite floats become None)."""
        return _jsonable(dataclasses.asdict(self))

    def __str__(self) -> str:
        parts = [f"Exercise {self.number}: {self.title}", "", self.table(), "", self.conclusion]
        if self.skipped:
            parts += ["", f"skipped: {self.skipped}"]
        parts += [f"note: {n}" for n in self.notes]
        return "\n".join(parts)

    def _repr_markdown_(self) -> str:
        parts = [f"**Exercise {self.number}: {self.title}**", "", self.table(markdown=True), "",
                 self.conclusion]
        if self.skipped:
            parts += ["", f"*Skipped:* {self.skipped}"]
        parts += [f"\n*Note:* {n}" for n in self.notes]
        return "\n".join(parts)


def _format_cell(value: Any, kind: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if kind == "time":
        return format_seconds(value)
    if kind == "ratio":
        return f"{value:.3g}x"
    if kind == "rate":
        return f"{value:.3g}"
    if kind == "bytes":
        return format_bytes(value)
    if kind == "pct":
        return f"{100 * value:.0f}%"
    if kind == "int":
        return f"{int(value):,}"
    if kind == "bool":
        return "yes" if value else "no"
    return str(value)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)


# ---------------------------------------------------------------------------------------------
# devices, progress and timing helpers
# ---------------------------------------------------------------------------------------------

# run_cli installs a callback here to show which measurement is running.
_progress: Callable[[str], None] | None = None


def _step(label: str) -> None:
    if _progress is not None:
        _progress(label)


def _no_gpu_reason() -> str:
    reason = gd.build_info()["cuda"].get("reason")
    return f"this machine has no usable GPU ({reason})" if reason else "this machine has no GPU"


def _gpus_here() -> str:
    """Why a GPU index is out of range: no GPU at all (and why), or how many there are."""
    n = gd.num_gpus()
    return _no_gpu_reason() if n == 0 else f"this machine has {n} GPU(s)"


def _as_device(device: DeviceLike, op: str) -> gd.Device:
    try:
        return device if isinstance(device, gd.Device) else gd.Device(device)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{op}: bad device {device!r}: {exc}; use 'cpu', 'cuda' or 'cuda:N'") from None


def _devices(devices: DeviceLike | Iterable[DeviceLike] | None, op: str) -> tuple[list[gd.Device], list[str]]:
    """The available devices among `devices` (default: the CPU and every GPU), and a note for
    each GPU that was asked for (or, by default, expected) but is not there."""
    n = gd.num_gpus()
    if devices is None:
        chosen = [gd.cpu()] + [gd.gpu(i) for i in range(n)]
        notes = [] if n else [f"GPU rows skipped: {_no_gpu_reason()}"]
        return chosen, notes
    if isinstance(devices, (str, gd.Device)):
        devices = [devices]
    chosen, notes = [], []
    for d in devices:
        dev = _as_device(d, op)
        if dev.type == "cuda" and dev.index >= n:
            notes.append(f"{dev} skipped: {_gpus_here()}")
        elif dev not in chosen:
            chosen.append(dev)
    if not chosen:
        raise gd.DeviceUnavailableError(
            f"{op}: none of the devices {[str(_as_device(d, op)) for d in devices]} is available "
            f"({'; '.join(notes)}); pass devices=None to use what this machine has")
    return chosen, notes


def _one_device(device: DeviceLike | None, op: str) -> tuple[gd.Device, list[str]]:
    """`device`, or the first GPU when there is one, else the CPU (with a note saying so)."""
    if device is None:
        if gd.num_gpus():
            return gd.gpu(0), []
        return gd.cpu(), [f"ran on the CPU: {_no_gpu_reason()}"]
    dev = _as_device(device, op)
    if dev.type == "cuda" and dev.index >= gd.num_gpus():
        raise gd.DeviceUnavailableError(
            f"{op}: {dev} is not available: {_gpus_here()}; pass device=None to use the best "
            f"device here")
    return dev, []


def _positive_int(op: str, name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{op}: {name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _stats(times: Sequence[float], clock: str) -> dict[str, Any]:
    arr = np.asarray(times, dtype=np.float64)
    return {
        "seconds": float(np.median(arr)),
        "min_s": float(arr.min()),
        "max_s": float(arr.max()),
        "std_s": float(arr.std(ddof=1)) if arr.size > 1 else 0.0,
        "repeats": int(arr.size),
        "clock": clock,
        "times": arr.tolist(),
    }


def _bench(fn: Callable[[], Any], repeats: int, *, warmup: int = 1, per: int = 1,
           wall: bool = False) -> dict[str, Any]:
    """gd.benchmark's statistics of `fn`, divided by `per` (calls inside one timed unit).

    `wall=True` uses the host clock up to the end of the synchronization (elapsed time a user
    waits) even when a GPU was timed with events."""
    r = gd.benchmark(fn, n_warmup=warmup, n_repeat=repeats)
    times = r.cpu_times if wall else r.times
    clock = "host" if wall else r.clock
    return _stats([t / per for t in times], clock)


def _first_call(fn: Callable[[], Any]) -> dict[str, Any]:
    """One synchronized call, timed (first-call costs included)."""
    timer = gd.Timer()
    fn()
    return _stats([timer.stop()], "host")


def _repeats_for(seconds: float, budget: float, lo: int = 3, hi: int = 20) -> int:
    """Repeats that fit in `budget` seconds for a unit that takes `seconds`, within [lo, hi]."""
    return int(min(hi, max(lo, budget // max(seconds, 1e-9))))


def _x(ratio: float) -> str:
    """A ratio for prose: 3 significant digits up to 100, whole numbers above."""
    return f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.3g}x"


def _s(seconds: float) -> str:
    return format_seconds(seconds)


def _n(count: int, word: str) -> str:
    """'1 copy', '0 copies', '1,000 synchronizations'."""
    plural = word[:-1] + "ies" if word.endswith("y") else word + "s"
    return f"{count:,} {word if count == 1 else plural}"


def _faster(a_name: str, a_s: float, b_name: str, b_s: float) -> str:
    """'a is 3.2x faster than b' / 'b is ...' / 'they take about the same time'."""
    if max(a_s, b_s) <= 1.1 * min(a_s, b_s):
        return f"{a_name} and {b_name} take about the same time ({_s(a_s)} vs {_s(b_s)})"
    if a_s < b_s:
        return f"{a_name} is {_x(b_s / a_s)} faster than {b_name} ({_s(a_s)} vs {_s(b_s)})"
    return f"{b_name} is {_x(a_s / b_s)} faster than {a_name} ({_s(b_s)} vs {_s(a_s)})"


def _device_meta(devices: Iterable[gd.Device]) -> dict[str, Any]:
    out = {}
    for d in devices:
        try:
            out[str(d)] = _jsonable(d.info())
        except gd.GpudevError as exc:
            out[str(d)] = {"error": str(exc)}
    return out


# ---------------------------------------------------------------------------------------------
# exercise 1: a big matrix product vs tiny tasks
# ---------------------------------------------------------------------------------------------

_EX1_FIELDS = {
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
_EX1_COLUMNS = [("device", "device", "text"), ("label", "task", "text"), ("timing", "timing", "text"),
                ("seconds", "time/call", "time"), ("min_s", "min", "time"), ("max_s", "max", "time"),
                ("repeats", "n", "int"), ("gflops", "GFLOP/s", "rate"), ("gbps", "GB/s", "rate")]


def _ex1_row(device: gd.Device, task: str, label: str, timing: str, stats: dict[str, Any],
             flops: float, nbytes: float) -> dict[str, Any]:
    sec = stats["seconds"]
    return {"device": str(device), "task": task, "label": label, "timing": timing, **stats,
            "flops": flops, "bytes": nbytes, "gflops": flops / sec / 1e9 if flops else None,
            "gbps": nbytes / sec / 1e9 if nbytes else None}


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
    n = _positive_int(op, "n", n)
    small = _positive_int(op, "small", small)
    calls = _positive_int(op, "calls", calls)
    repeats = _positive_int(op, "repeats", repeats)
    bandwidth_elements = _positive_int(op, "bandwidth_elements", bandwidth_elements)
    devs, notes = _devices(devices, op)
    rows: list[dict[str, Any]] = []
    peaks: dict[str, dict[str, Any]] = {}
    for d in devs:
        _ex1_product(d, n, repeats, budget_s, rows)
        _ex1_tiny(d, small, calls, repeats, rows)
        bw = _ex1_bandwidth(d, bandwidth_elements, repeats, rows)
        warm = _pick(rows, device=str(d), task="matmul", timing="synchronized")
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
        number=1, name="matmul_vs_small", title="A big matrix product vs tiny tasks",
        question="How much faster is a GPU than the CPU for a big matrix product, and for a "
                 "tiny task? What goes wrong when GPU work is timed without synchronizing?",
        fields=_EX1_FIELDS, columns=_EX1_COLUMNS, rows=rows,
        conclusion=_ex1_conclusion(rows, devs, n, small),
        notes=notes,
        meta={"n": n, "small": small, "calls": calls, "repeats": repeats,
              "bandwidth_elements": bandwidth_elements, "peaks": peaks,
              "devices": _device_meta(devs)},
    )


def _ex1_product(d: gd.Device, n: int, repeats: int, budget_s: float, rows: list[dict[str, Any]]) -> None:
    """First use of the device, then the n x n product: first call, warm, and on GPUs wrong."""
    label, flops, nbytes = f"matmul {n}x{n}", 2.0 * n**3, 3.0 * 4 * n * n
    _step(f"1: first use of {d}")
    rows.append(_ex1_row(d, "setup", "first allocation on the device", "first call",
                         _first_call(lambda: gd.zeros((1,), device=d)), 0, 0))
    a, b = gd.randn(n, n, device=d), gd.randn(n, n, device=d)
    gd.synchronize(d)
    _step(f"1: first {label} on {d}")
    first = _first_call(lambda: a @ b)
    rows.append(_ex1_row(d, "matmul", label, "first call", first, flops, nbytes))
    _step(f"1: {label} on {d}")
    warm = _bench(lambda: a @ b, _repeats_for(first["seconds"], budget_s, hi=repeats), warmup=0)
    rows.append(_ex1_row(d, "matmul", label, "synchronized", warm, flops, nbytes))
    if d.type == "cuda":
        rows.append(_ex1_row(d, "matmul", label, "unsynchronized (wrong)",
                             _unsynchronized(lambda: a @ b, d, warm["repeats"]), flops, nbytes))


def _ex1_tiny(d: gd.Device, small: int, calls: int, repeats: int, rows: list[dict[str, Any]]) -> None:
    """Tiny tasks: first call, then loops of `calls` calls (a row's unit is one call)."""
    x, one = gd.randn(small, small, device=d), gd.ones((1,), device=d)
    sum_bytes = 4.0 * (small * small + 1)
    tiny = [
        ("sum", f"sum {small}x{small}", lambda: x.sum(), small * small, sum_bytes),
        ("sum+item", f"sum {small}x{small} + .item()", lambda: x.sum().item(), small * small, sum_bytes),
        ("add1", "1-element add", lambda: one + 1.0, 1, 8.0),
    ]
    for task, label, fn, flops, nbytes in tiny:
        _step(f"1: {label} on {d}")
        rows.append(_ex1_row(d, task, label, "first call", _first_call(fn), flops, nbytes))

        def loop(fn: Callable[[], Any] = fn) -> None:
            for _ in range(calls):
                fn()

        rows.append(_ex1_row(d, task, label, "synchronized", _bench(loop, repeats, per=calls), flops, nbytes))


def _ex1_bandwidth(d: gd.Device, elements: int, repeats: int, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The sum of a big array: the memory bandwidth the roofline chart uses."""
    _step(f"1: bandwidth on {d}")
    v = gd.ones((elements,), device=d)
    row = _ex1_row(d, "bandwidth", f"sum of {elements:,} floats", "synchronized", _bench(v.sum, repeats),
                   float(elements), 4.0 * elements)
    rows.append(row)
    return row


def _unsynchronized(fn: Callable[[], Any], device: gd.Device, repeats: int) -> dict[str, Any]:
    """The book's mistake: read the clock right after queueing GPU work."""
    times = []
    for _ in range(repeats):
        gd.synchronize(device)
        timer = gd.Timer(sync=False)
        fn()
        times.append(timer.stop())
    gd.synchronize(device)
    return _stats(times, "host, unsynchronized")


def _pick(rows: list[dict[str, Any]], **match: Any) -> dict[str, Any] | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in match.items())), None)


def _ex1_conclusion(rows: list[dict[str, Any]], devs: list[gd.Device], n: int, small: int) -> str:
    text = []
    for d in devs:
        dev = str(d)
        mm = _pick(rows, device=dev, task="matmul", timing="synchronized")
        first = _pick(rows, device=dev, task="matmul", timing="first call")
        tiny = _pick(rows, device=dev, task="sum", timing="synchronized")
        bw = _pick(rows, device=dev, task="bandwidth")
        s = (f"On {dev} the {n}x{n} product takes {_s(mm['seconds'])} ({mm['gflops']:.3g} GFLOP/s) "
             f"and a {small}x{small} sum {_s(tiny['seconds'])} per call. ")
        extra = first["seconds"] - mm["seconds"]
        if extra > 0.1 * mm["seconds"]:
            s += (f"The first product took {_s(first['seconds'])}, {_s(extra)} more than a warm one: "
                  f"one-time costs that a benchmark must leave out of its repeats. ")
        else:
            s += f"The first product cost about as much as a warm one ({_s(first['seconds'])}). "
        # the tiny sum's bandwidth against the big sum's: overhead, not memory, limits it
        s += f"The tiny sum moves {tiny['bytes']:.0f} bytes at {tiny['gbps']:.3g} GB/s, "
        if bw["gbps"] > 3 * tiny["gbps"]:
            s += (f"{_x(bw['gbps'] / tiny['gbps'])} below the {bw['gbps']:.3g} GB/s a big sum reaches: "
                  f"for tiny tasks the fixed cost of each call, not the hardware, sets the time.")
        else:
            s += (f"close to the {bw['gbps']:.3g} GB/s the big sum reached: the big sum ran far "
                  f"below this device's memory bandwidth here (a busy machine?), so this run "
                  f"cannot separate the fixed cost of a call from the cost of the data.")
        text.append(s)
    cpu = "cpu" if gd.cpu() in devs else None
    for d in devs:
        if d.type != "cuda":
            continue
        g = str(d)
        mm_g = _pick(rows, device=g, task="matmul", timing="synchronized")
        wrong = _pick(rows, device=g, task="matmul", timing="unsynchronized (wrong)")
        setup = _pick(rows, device=g, task="setup")
        if cpu is not None:
            mm_c = _pick(rows, device=cpu, task="matmul", timing="synchronized")
            t_c = _pick(rows, device=cpu, task="sum", timing="synchronized")
            t_g = _pick(rows, device=g, task="sum", timing="synchronized")
            text.append(f"For the big product, {_faster(g, mm_g['seconds'], 'the CPU', mm_c['seconds'])}; "
                        f"for the {small}x{small} sum, "
                        f"{_faster(g, t_g['seconds'], 'the CPU', t_c['seconds'])}. "
                        f"A GPU pays off when there is enough work per call to hide the cost of "
                        f"launching it.")
        if wrong["seconds"] < 0.5 * mm_g["seconds"]:
            s = (f"Timed without synchronizing, the product on {g} seems to take "
                 f"{_s(wrong['seconds'])}, {_x(mm_g['seconds'] / wrong['seconds'])} less than its "
                 f"real {_s(mm_g['seconds'])}: that timer measured only the launch, the book's "
                 f"mistake. ")
        else:
            s = (f"Timed without synchronizing, the product on {g} read {_s(wrong['seconds'])}, "
                 f"close to its real {_s(mm_g['seconds'])}: this time the call itself waited for "
                 f"the GPU, which a timer cannot count on. ")
        text.append(s + f"The first allocation on {g} took {_s(setup['seconds'])} (CUDA context "
                         f"creation when it is the process's first use of the GPU).")
    if not any(d.type == "cuda" for d in devs):
        text.append("No GPU was measured, so there is no GPU/CPU ratio here (the notes say why); "
                    "on a machine with a GPU the same call adds its rows and the comparison.")
    return "\n\n".join(text)


# ---------------------------------------------------------------------------------------------
# exercise 2: model parameters on a device, saved and loaded
# ---------------------------------------------------------------------------------------------

_EX2_FIELDS = {
    **TIMING_FIELDS,
    "action": "what was timed (one unit)",
    "bytes": "bytes moved: the file's size for save/load, the parameters' size for copies "
             "(None for the training step)",
    "copies": "copies between devices one unit makes (from gd.trace())",
    "syncs": "synchronizations one unit makes (from gd.trace())",
    "mbps": "bytes / seconds / 1e6 (MB/s)",
}
_EX2_COLUMNS = [("action", "action", "text"), ("device", "device", "text"), ("seconds", "time", "time"),
                ("min_s", "min", "time"), ("max_s", "max", "time"), ("bytes", "bytes", "bytes"),
                ("mbps", "MB/s", "rate"), ("copies", "copies", "int"), ("syncs", "syncs", "int")]


def _make_net(device: gd.Device, seed: int) -> gd.nn.Sequential:
    gd.manual_seed(seed)
    nn = gd.nn
    return nn.Sequential(nn.Linear(10, 512, device=device), nn.ReLU(), nn.Linear(512, 10, device=device))


def _traced_counts(fn: Callable[[], Any]) -> tuple[int, int]:
    with gd.trace() as tr:
        fn()
    return tr.count("copy"), tr.count("sync")


def params_on_device(device: DeviceLike | None = None, *, steps: int = 20, batch: int = 64,
                     repeats: int = 7, lr: float = 0.05) -> Result:
    """Exercise 2: read and write a model's parameters on a device.

    Trains the 10-512-ReLU-10 model on `device` (default: the first GPU, else the CPU) for
    `steps` SGD steps on a synthetic regression problem, saves its state dict with
    ``gd.save`` (a .npz file in a temporary folder), loads it onto the CPU and onto the
    device, and checks that the loaded models predict what the trained one does: bit for bit
    on the same device, to float rounding across devices. Reports the file's size and the
    time of each copy, with the copies and synchronizations ``gd.trace()`` saw.

    Example:
        >>> res = params_on_device(steps=5, repeats=3)
        >>> res.ok, [r["action"] for r in res.rows][:2]
        (True, ['one SGD step (batch 64)', 'parameters to the host (.cpu())'])
    """
    op = "params_on_device"
    steps = _positive_int(op, "steps", steps)
    batch = _positive_int(op, "batch", batch)
    repeats = _positive_int(op, "repeats", repeats)
    d, notes = _one_device(device, op)
    nn = gd.nn
    net = _make_net(d, seed=0)
    gd.manual_seed(1)
    w_true = gd.randn(10, 10, device=d) * 0.5
    x, x_test = gd.randn(batch, 10, device=d), gd.randn(batch, 10, device=d)
    y = x @ w_true
    loss_fn, opt = nn.MSELoss(), nn.SGD(net.parameters(), lr=lr)

    trained = 0

    def sgd_step() -> gd.Array:
        nonlocal trained
        loss = loss_fn(net(x), y)
        opt.zero_grad()
        net.backward(loss_fn.backward())
        opt.step()
        trained += 1
        return loss

    _step(f"2: training on {d}")
    loss_first = sgd_step().item()
    for _ in range(steps - 1):
        sgd_step()
    param_bytes = sum(p.data.nbytes for p in net.parameters())
    rows: list[dict[str, Any]] = []

    def add(action: str, fn: Callable[[], Any], nbytes: float | None) -> None:
        _step(f"2: {action}")
        stats = _bench(fn, repeats, wall=True)  # file I/O and copies: the time the user waits
        copies, syncs = _traced_counts(fn)
        rows.append({"action": action, "device": str(d), **stats, "bytes": nbytes,
                     "mbps": nbytes / stats["seconds"] / 1e6 if nbytes else None,
                     "copies": copies, "syncs": syncs})

    add(f"one SGD step (batch {batch})", sgd_step, None)
    # the timed steps trained the model further: the loss and reference come after them
    loss_last = loss_fn(net(x), y).item()
    pred = net(x_test).cpu().numpy().copy()
    add("parameters to the host (.cpu())", lambda: [a.cpu() for a in net.state_dict().values()],
        param_bytes)
    with tempfile.TemporaryDirectory(prefix="gpudev-params-") as folder:
        path = os.path.join(folder, "params.npz")
        add("gd.save(state_dict, .npz)", lambda: gd.save(net.state_dict(), path), 0)
        size = os.path.getsize(path)
        rows[-1].update(bytes=size, mbps=size / rows[-1]["seconds"] / 1e6)
        add("gd.load onto the CPU", lambda: gd.load(path, device="cpu"), size)
        add(f"gd.load onto {d}", lambda: gd.load(path, device=d), size)
        on_cpu, on_dev = _make_net(gd.cpu(), seed=2), _make_net(d, seed=3)
        on_cpu.load_state_dict(gd.load(path, device="cpu"))
        on_dev.load_state_dict(gd.load(path, device=d))
    pred_cpu = on_cpu(x_test.cpu()).numpy()
    pred_dev = on_dev(x_test).cpu().numpy()
    checks = [_same_predictions(f"loaded onto {d}, predicts as the trained model", pred_dev, pred,
                                exact=True)]
    checks.append(_same_predictions("loaded onto the CPU, predicts as the trained model", pred_cpu, pred,
                                    exact=d.type == "cpu"))
    if d.type == "cpu":
        notes.append("the device is the CPU, so 'load onto the CPU' and 'load onto the device' are "
                     "the same operation and .cpu() returns the arrays themselves (no copy)")
    return Result(
        number=2, name="params_on_device", title="Model parameters on a device: save and load",
        question="How do you read and write a model's parameters when it lives on a GPU, and "
                 "what do the copies cost?",
        fields=_EX2_FIELDS, columns=_EX2_COLUMNS, rows=rows,
        conclusion=_ex2_conclusion(rows, d, size, param_bytes, loss_first, loss_last, trained, checks),
        notes=notes, checks=checks,
        meta={"device": str(d), "steps": trained, "batch": batch, "lr": lr,
              "file_bytes": size, "parameter_bytes": param_bytes,
              "parameters": sum(p.size for p in net.parameters()),
              "loss_first": loss_first, "loss_after_steps": loss_last,
              "devices": _device_meta(dict.fromkeys([d, gd.cpu()]))},
    )


def _same_predictions(what: str, got: np.ndarray, want: np.ndarray, exact: bool) -> dict[str, Any]:
    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    if exact:
        passed = bool(np.array_equal(got, want))
        detail = "identical" if passed else f"differ: max |difference| {diff:.3g}"
    else:
        passed = bool(np.allclose(got, want, rtol=1e-4, atol=1e-5 * scale))
        detail = f"max |difference| {diff:.3g} on values up to {scale:.3g} (rtol 1e-4)"
    return {"check": what, "passed": passed, "detail": detail, "max_abs_diff": diff}


def _ex2_conclusion(rows: list[dict[str, Any]], d: gd.Device, size: int, param_bytes: int,
                    loss_first: float, loss_last: float, steps: int, checks: list[dict[str, Any]]) -> str:
    step, to_host, save, load_cpu, load_dev = rows
    s = (f"The model's {param_bytes:,} bytes of parameters make a {size:,}-byte .npz file. "
         f"Training for {steps} steps took the loss from {loss_first:.3g} to {loss_last:.3g}. ")
    s += f"Saving took {_s(save['seconds'])} ({save['mbps']:.3g} MB/s, {_n(save['copies'], 'copy')}); "
    if d.type == "cuda":
        s += (f"loading onto the CPU took {_s(load_cpu['seconds'])} and onto {d} "
              f"{_s(load_dev['seconds'])} ({_n(load_dev['copies'], 'copy')} to the device). ")
    else:
        s += f"loading it back took {_s(load_cpu['seconds'])}. "
    s += f"One save costs as much as {save['seconds'] / step['seconds']:.3g} training steps. "
    if d.type == "cuda":
        s += (f"Copying the parameters to the host took {_s(to_host['seconds'])} "
              f"({to_host['mbps']:.3g} MB/s, {to_host['copies']} copies, {to_host['syncs']} "
              f"synchronizations): a file on disk always holds host memory, so a GPU model "
              f"is copied once per array on save and back on load. ")
    else:
        s += ("On the CPU the parameters already are host memory: .cpu() made "
              f"{to_host['copies']} copies, and the file is written straight from them. ")
    s += ("All loaded models predict exactly what the trained one does."
          if all(c["passed"] and c["detail"] == "identical" for c in checks) else
          "Predictions: " + "; ".join(f"{c['check']}: {c['detail']}" for c in checks) + ".")
    return s


# ---------------------------------------------------------------------------------------------
# exercise 3: logging a norm every step
# ---------------------------------------------------------------------------------------------

_EX3_FIELDS = {
    **TIMING_FIELDS,
    "variant": "'a' .item() every step, 'b' log on the device copied once, 'c' one batched product",
    "label": "the variant in words",
    "per_step_s": "seconds / n: time per logged norm",
    "speedup": "variant a's time / this variant's time",
    "syncs": "synchronizations in one run (gd.trace())",
    "copies": "copies between devices in one run (gd.trace())",
    "copy_bytes": "bytes those copies moved",
    "ops": "operations in one run (gd.trace())",
    "flops": "floating-point operations of the products in one run",
    "bytes": "the least memory traffic of the products in one run",
}
_EX3_COLUMNS = [("variant", "", "text"), ("label", "variant", "text"), ("seconds", "time", "time"),
                ("min_s", "min", "time"), ("max_s", "max", "time"), ("per_step_s", "per step", "time"),
                ("speedup", "speedup", "ratio"), ("syncs", "syncs", "int"), ("copies", "copies", "int"),
                ("ops", "ops", "int")]


def norm_logging(n: int = 1000, size: int = 100, device: DeviceLike | None = None, *,
                 repeats: int = 5, rtol: float = 1e-4) -> Result:
    """Exercise 3: ``n`` products of ``size x size`` matrices, logging each one's Frobenius norm.

    (a) ``gd.norm(c).item()`` every step: one copy to the host and one synchronization each;
    (b) ``log[i] = gd.norm(c)`` into a preallocated array on the device, copied once at the
    end with ``.tolist()``; (c) one batched product and batched norms. Each variant is timed
    (`repeats` runs) and traced once; the three logs must agree (``allclose`` with `rtol`).

    Example:
        >>> res = norm_logging(n=50, size=16, repeats=3)
        >>> res.ok, [r["syncs"] for r in res.rows]
        (True, [50, 1, 1])
    """
    op = "norm_logging"
    n = _positive_int(op, "n", n)
    size = _positive_int(op, "size", size)
    repeats = _positive_int(op, "repeats", repeats)
    d, notes = _one_device(device, op)
    gd.manual_seed(0)
    xs = gd.randn(n, size, size, device=d)
    w = gd.randn(size, size, device=d) * (1.0 / math.sqrt(size))

    def per_item() -> list[float]:
        return [gd.norm(xs[i] @ w).item() for i in range(n)]

    def on_device() -> list[float]:
        log = gd.empty((n,), device=d)
        for i in range(n):
            log[i] = gd.norm(xs[i] @ w)
        return log.tolist()

    def batched() -> list[float]:
        return gd.norm(gd.matmul(xs, w), axis=(1, 2)).tolist()

    variants = [("a", ".item() every step", per_item), ("b", "log on the device, copied once", on_device),
                ("c", "one batched product and norms", batched)]
    rows, logs = [], {}
    flops, nbytes = 2.0 * n * size**3, 3.0 * 4 * n * size * size
    for key, label, fn in variants:
        _step(f"3: variant {key} on {d}")
        stats = _bench(fn, repeats, wall=True)  # host and device together: the time the user waits
        with gd.trace() as tr:
            logs[key] = np.asarray(fn(), dtype=np.float64)
        summary = tr.summary()["totals"]
        rows.append({"variant": key, "label": label, "device": str(d), **stats,
                     "per_step_s": stats["seconds"] / n, "syncs": summary["syncs"],
                     "copies": summary["copies"], "copy_bytes": summary["copy_bytes"],
                     "ops": summary["ops"], "flops": flops, "bytes": nbytes})
    for r in rows:
        r["speedup"] = rows[0]["seconds"] / r["seconds"]
    checks = []
    for key in ("b", "c"):
        rel = float(np.max(np.abs(logs[key] - logs["a"]) / np.maximum(np.abs(logs["a"]), 1e-30)))
        checks.append({"check": f"variant {key} logs the same norms as variant a",
                       "passed": bool(np.allclose(logs[key], logs["a"], rtol=rtol, atol=0)),
                       "detail": f"max relative difference {rel:.2g} (rtol {rtol:g})",
                       "max_rel_diff": rel})
    return Result(
        number=3, name="norm_logging", title="Logging a norm every step: .item() vs on the device",
        question=f"What does logging the norm of each of {n} products cost when each entry is "
                 f"copied to the host as soon as it is computed, compared with keeping the log on "
                 f"the device and copying it once?",
        fields=_EX3_FIELDS, columns=_EX3_COLUMNS, rows=rows,
        conclusion=_ex3_conclusion(rows, d, n, size), notes=notes, checks=checks,
        meta={"n": n, "size": size, "repeats": repeats, "device": str(d),
              "first_norms": logs["a"][:5].tolist(), "devices": _device_meta([d])},
    )


def _ex3_conclusion(rows: list[dict[str, Any]], d: gd.Device, n: int, size: int) -> str:
    a, b, c = rows
    s = (f"On {d}, logging with .item() every step made {_n(a['syncs'], 'synchronization')} and "
         f"{_n(a['copies'], 'copy')} and took {_s(a['seconds'])} ({_s(a['per_step_s'])} per step); "
         f"keeping the log on the device made {_n(b['syncs'], 'synchronization')} and "
         f"{_n(b['copies'], 'copy')}: {_faster('variant b', b['seconds'], 'variant a', a['seconds'])}. ")
    s += (f"One batched product of all {n} matrices with batched norms ({_n(c['ops'], 'operation')} "
          f"instead of {b['ops']:,}): {_faster('variant c', c['seconds'], 'variant b', b['seconds'])}. ")
    if d.type == "cuda":
        s += ("Each .item() makes the host wait until the GPU has finished everything queued, so "
              "the GPU idles while Python prepares the next step; a log kept on the device lets "
              "the GPU run ahead of Python. ")
    else:
        s += ("On the CPU an .item() waits for nothing (the work is already done), so the gap "
              "between a and b is only the per-call cost of the two loops; on a GPU each of "
              "those synchronizations would stall the device. ")
    if c["seconds"] < 0.9 * b["seconds"]:
        s += (f"Batching wins here: {n} calls' fixed costs became {c['ops']}, and each call "
              f"got more work to spread over the device.")
    else:
        s += (f"Batching did not pay here: a {size}x{size} product already takes "
              f"{_s(b['per_step_s'])} per step, so the {n} calls' fixed costs were a small part of "
              f"the time, and the batched operations ran no faster per product than the loop's.")
    return s


# ---------------------------------------------------------------------------------------------
# exercise 4: two GPUs, and overlapping device work with host work
# ---------------------------------------------------------------------------------------------

_EX4_FIELDS = {
    **TIMING_FIELDS,
    "part": "'overlap' (device work and host work, on each device) or 'two GPUs'",
    "scenario": "what was timed (the wall-clock time until every device finished)",
    "n": "matrix size of each product",
    "overlap": "for 'both': (t_products + t_host - t_both) / min(t_products, t_host): 1 means the "
               "shorter one was fully hidden, 0 means they ran one after the other",
    "speedup": "for the two-GPU row: one GPU's time / two GPUs' time (ideal 2)",
    "efficiency": "speedup / 2",
    "overlap_raw": "the overlap before clipping to [0, 1] (noise can push it outside)",
    "no_overlap_s": "t_products + t_host: what 'both' takes when nothing overlaps",
    "full_overlap_s": "max(t_products, t_host): what 'both' takes when the shorter is fully hidden",
    "flops": "floating-point operations of the two products",
}
_EX4_COLUMNS = [("device", "device", "text"), ("scenario", "scenario", "text"), ("n", "n", "int"),
                ("seconds", "time", "time"), ("min_s", "min", "time"), ("max_s", "max", "time"),
                ("overlap", "overlap", "pct"), ("speedup", "speedup", "ratio"),
                ("efficiency", "of ideal", "pct")]
_EX4_SIZES = {"cpu": 1024, "cuda": 8192}


def two_devices(n: int | dict[str, int] | None = None,
                devices: DeviceLike | Iterable[DeviceLike] | None = None, *, repeats: int = 5) -> Result:
    """Exercise 4: two products on two GPUs at once vs one after the other on one GPU.

    With two or more GPUs (the first two of `devices` are used): the time of two ``n x n``
    products queued on one GPU, against one product queued on each of two GPUs, and the
    speedup against the ideal 2x. With fewer GPUs that comparison is skipped (``skipped``
    says why). On every device (GPUs and the CPU) it also measures whether two products
    queued back-to-back overlap with host work (NumPy preparing data, sized to take as long as
    the products): on a GPU they should, since the call returns as soon as the work is queued;
    on the CPU they cannot, since the work runs before the call returns.
    `n` is the matrix size: one int for every device, or a dict by device type
    (``{"cpu": 1024, "cuda": 8192}``, which is what ``n=None`` means).

    Example:
        >>> res = two_devices(n=128, devices=["cpu"], repeats=3)
        >>> res.skipped
        'needs 2 GPUs, found 0'
    """
    op = "two_devices"
    if isinstance(n, dict):
        unknown = set(n) - set(_EX4_SIZES)
        if unknown:
            raise ValueError(f"{op}: n has keys {sorted(unknown)}; use 'cpu' and 'cuda', "
                             f"e.g. n={{'cpu': 1024, 'cuda': 8192}}")
        sizes = {k: _positive_int(op, f"n[{k!r}]", v) for k, v in {**_EX4_SIZES, **n}.items()}
    elif n is None:
        sizes = dict(_EX4_SIZES)
    else:
        sizes = dict.fromkeys(_EX4_SIZES, _positive_int(op, "n", n))
    repeats = _positive_int(op, "repeats", repeats)
    devs, notes = _devices(devices, op)
    gpus = [d for d in devs if d.type == "cuda"]
    rows = []
    for d in devs:
        rows += _overlap_rows(d, sizes[d.type], repeats)
    skipped = None
    if len(gpus) >= 2:
        rows += _two_gpu_rows(gpus[0], gpus[1], sizes["cuda"], repeats)
    else:
        skipped = f"needs 2 GPUs, found {len(gpus)}"
        notes.append(f"the two-GPU comparison was skipped: it {skipped}")
    return Result(
        number=4, name="two_devices", title="Two GPUs at once, and device work overlapping host work",
        question="Do two products run concurrently on two GPUs twice as fast as in sequence on "
                 "one? Does queued device work overlap with work on the host?",
        fields=_EX4_FIELDS, columns=_EX4_COLUMNS, rows=rows,
        conclusion=_ex4_conclusion(rows, devs, gpus, skipped), skipped=skipped, notes=notes,
        meta={"sizes": {str(d): sizes[d.type] for d in devs}, "repeats": repeats,
              "devices": _device_meta(devs)},
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
    gd.manual_seed(0)
    a, b = gd.randn(n, n, device=d), gd.randn(n, n, device=d)

    def products() -> None:
        a @ b
        a @ b

    _step(f"4: two products on {d}")
    dev = _bench(products, repeats, wall=True)
    host_work = _HostWork(dev["seconds"])
    _step("4: host work alone")
    host = _bench(host_work, repeats, wall=True)

    def both() -> None:
        products()
        host_work()

    _step(f"4: two products on {d} with host work")
    together = _bench(both, repeats, wall=True)
    t_dev, t_host, t_both = dev["seconds"], host["seconds"], together["seconds"]
    overlap = (t_dev + t_host - t_both) / min(t_dev, t_host)
    base = {"device": str(d), "n": n, "part": "overlap"}
    return [
        {**base, "scenario": "two products", **dev, "flops": 4.0 * n**3},
        {**base, "scenario": "host work alone (NumPy)", **host},
        {**base, "scenario": "both: queue the products, then host work", **together,
         "overlap": float(min(max(overlap, 0.0), 1.0)), "overlap_raw": overlap,
         "no_overlap_s": t_dev + t_host, "full_overlap_s": max(t_dev, t_host)},
    ]


def _two_gpu_rows(g0: gd.Device, g1: gd.Device, n: int, repeats: int) -> list[dict[str, Any]]:
    gd.manual_seed(0)
    a0, b0 = gd.randn(n, n, device=g0), gd.randn(n, n, device=g0)
    a1, b1 = a0.to(g1), b0.to(g1)

    def sequential() -> None:
        a0 @ b0
        a0 @ b0

    def concurrent() -> None:
        a0 @ b0  # queued on g0, returns at once
        a1 @ b1  # queued on g1 while g0 works

    _step(f"4: two products in sequence on {g0}")
    seq = _bench(sequential, repeats, wall=True)
    _step(f"4: one product on each of {g0} and {g1}")
    par = _bench(concurrent, repeats, wall=True)
    speedup = seq["seconds"] / par["seconds"]
    return [
        {"device": str(g0), "n": n, "part": "two GPUs", "scenario": "two products in sequence, one GPU",
         **seq},
        {"device": f"{g0}+{g1}", "n": n, "part": "two GPUs", "scenario": "one product per GPU, concurrently",
         **par, "speedup": speedup, "efficiency": speedup / 2},
    ]


def _ex4_conclusion(rows: list[dict[str, Any]], devs: list[gd.Device], gpus: list[gd.Device],
                    skipped: str | None) -> str:
    text = []
    for d in devs:
        prod, host, both = (r for r in rows if r["device"] == str(d) and r["part"] == "overlap")
        s = (f"On {d}, two {prod['n']}x{prod['n']} products took {_s(prod['seconds'])}, the host work "
             f"{_s(host['seconds'])}, and both together {_s(both['seconds'])}: "
             f"{100 * both['overlap']:.0f}% of the shorter one was hidden. ")
        if d.type == "cuda":
            s += ("The products were queued and the host went on with its own work while the GPU "
                  "computed: this is why code that does not synchronize needlessly is fast."
                  if both["overlap"] >= 0.5 else
                  "Little of it overlapped: something in the loop waited for the GPU before the "
                  "host work started.")
        elif both["overlap_raw"] < -0.2:
            s += (f"On the CPU a product runs before its call returns, so nothing overlaps; here "
                  f"the two together even took longer than one after the other "
                  f"({_s(both['no_overlap_s'])}): on a busy machine, or with the product's threads "
                  f"still holding the cores, the host work runs slower right after a product.")
        else:
            s += ("On the CPU a product runs before its call returns, so the host work can only "
                  "start afterwards: the times add up." if both["overlap"] < 0.5 else
                  "The host work overlapped with the products here even though CPU work runs "
                  "before each call returns: the timings are noisy on this machine.")
        text.append(s)
    if skipped:
        text.append(f"The two-GPU comparison was skipped: it {skipped}.")
    else:
        seq, par = rows[-2], rows[-1]
        text.append(f"Two products in sequence on {gpus[0]} took {_s(seq['seconds'])}; one on each "
                    f"of {gpus[0]} and {gpus[1]} took {_s(par['seconds'])}: a {par['speedup']:.2f}x "
                    f"speedup, {100 * par['efficiency']:.0f}% of the ideal 2x. "
                    + ("Both GPUs worked at the same time, because each call only queued its work."
                       if par["efficiency"] >= 0.8 else
                       "Far from ideal: the products were too small to hide launch and "
                       "synchronization costs, or one GPU waited for the other."))
    return "\n\n".join(text)


# ---------------------------------------------------------------------------------------------
# exercise 5: b += b for growing sizes, and where the GPU starts to win
# ---------------------------------------------------------------------------------------------

_EX5_FIELDS = {
    **TIMING_FIELDS,
    "size": "side of the square array b",
    "elements": "size * size",
    "iters": "b += b operations in one timed loop (seconds is the whole loop)",
    "per_op_s": "seconds / iters: time of one b += b",
    "flops": "floating-point operations of the timed loop (one add per element per op)",
    "bytes": "the least memory traffic of the timed loop (each op reads and writes b once)",
    "gbps": "bytes / seconds / 1e9",
}
_EX5_COLUMNS = [("device", "device", "text"), ("size", "size", "int"), ("elements", "elements", "int"),
                ("seconds", "loop time", "time"), ("per_op_s", "per op", "time"),
                ("min_s", "loop min", "time"), ("max_s", "loop max", "time"), ("gbps", "GB/s", "rate")]


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
    sizes = sorted({_positive_int(op, "each size", s) for s in sizes})
    if not sizes:
        raise ValueError(f"{op}: sizes is empty; pass at least one size, e.g. sizes=(4, 40, 400)")
    iters = _positive_int(op, "iters", iters)
    repeats = _positive_int(op, "repeats", repeats)
    devs, notes = _devices(devices, op)
    rows = []
    for d in devs:
        for s in sizes:
            _step(f"5: b += b, {s}x{s} on {d}")
            b = gd.zeros((s, s), device=d)

            def loop() -> None:
                nonlocal b
                for _ in range(iters):
                    b += b

            b += b  # the first operation's one-time costs stay out of the timed loops
            stats = _bench(loop, repeats, warmup=0)
            per_op = stats["seconds"] / iters
            op_bytes = 2.0 * 4 * s * s
            rows.append({"device": str(d), "size": s, "elements": s * s, "iters": iters, **stats,
                         "per_op_s": per_op, "flops": float(s * s) * iters, "bytes": op_bytes * iters,
                         "gbps": op_bytes / per_op / 1e9})
            del b
    fits = {str(d): _fit_cost([r for r in rows if r["device"] == str(d)]) for d in devs}
    crossovers = {}
    if gd.cpu() in devs:
        cpu_rows = [r for r in rows if r["device"] == "cpu"]
        for g in (d for d in devs if d.type == "cuda"):
            crossovers[str(g)] = _crossover(cpu_rows, [r for r in rows if r["device"] == str(g)])
    elif any(d.type == "cuda" for d in devs):
        notes.append("no crossover: the CPU was not among the devices, so there is nothing to compare with")
    return Result(
        number=5, name="small_op_sweep", title="b += b for growing sizes: where the GPU starts to win",
        question="For an elementwise operation, from which array size on is a GPU faster than "
                 "the CPU, and what does one small operation cost?",
        fields=_EX5_FIELDS, columns=_EX5_COLUMNS, rows=rows,
        conclusion=_ex5_conclusion(rows, devs, fits, crossovers), notes=notes,
        meta={"sizes": sizes, "iters": iters, "repeats": repeats, "fits": fits,
              "crossovers": crossovers, "devices": _device_meta(devs)},
    )


def _fit_cost(rows: list[dict[str, Any]]) -> dict[str, Any]:
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


def _crossover(cpu: list[dict[str, Any]], gpu: list[dict[str, Any]]) -> dict[str, Any]:
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


def _ex5_conclusion(rows: list[dict[str, Any]], devs: list[gd.Device],
                    fits: dict[str, dict[str, float]], crossovers: dict[str, dict[str, Any]]) -> str:
    text = []
    for d in devs:
        mine = [r for r in rows if r["device"] == str(d)]
        lo, hi, fit = mine[0], mine[-1], fits[str(d)]
        s = (f"On {d}, one b += b takes {_s(lo['per_op_s'])} at {lo['size']}x{lo['size']} and "
             f"{_s(hi['per_op_s'])} at {hi['size']}x{hi['size']} ({hi['gbps']:.3g} GB/s): ")
        if len(mine) >= 2:
            s += (f"{_x(hi['elements'] / lo['elements'])} the elements cost "
                  f"{_x(hi['per_op_s'] / lo['per_op_s'])} the time. ")
        if fit["bandwidth_gbps"]:
            s += (f"Read as t = t0 + bytes / bandwidth, that is a fixed cost of {_s(fit['t0_s'])} per "
                  f"operation and {fit['bandwidth_gbps']:.3g} GB/s, so below about "
                  f"{fit['break_even_elements']:,.0f} elements ({math.sqrt(fit['break_even_elements']):.0f}"
                  f"x{math.sqrt(fit['break_even_elements']):.0f}) the fixed cost of a call outweighs "
                  f"the work.")
        text.append(s)
    for g, c in crossovers.items():
        if c["status"] == "crossover":
            text.append(f"{g} is faster than the CPU from about {c['size']:.0f}x{c['size']:.0f} "
                        f"({c['elements']:,.0f} elements, between the measured "
                        f"{c['between'][0]:,} and {c['between'][1]:,}) on: below that, launching a "
                        f"kernel costs more than the CPU needs for the whole operation.")
        elif c["status"] == "gpu wins at every size":
            text.append(f"{g} beats the CPU at every measured size, even {c['below']:,} elements: "
                        f"the crossover lies below the smallest size measured.")
        else:
            text.append(f"The CPU beats {g} at every measured size: the arrays never grew large "
                        f"enough to repay the GPU's fixed cost per operation.")
    if not any(d.type == "cuda" for d in devs):
        text.append("There is no GPU to compare with (the notes say why): the CPU's curve above is "
                    "the baseline a GPU has to beat.")
    return "\n\n".join(text)


# ---------------------------------------------------------------------------------------------
# running them all: sizes, the command line, results.json and report.md
# ---------------------------------------------------------------------------------------------

EXERCISES: dict[int, Callable[..., Result]] = {
    1: matmul_vs_small, 2: params_on_device, 3: norm_logging, 4: two_devices, 5: small_op_sweep,
}
_SINGLE_DEVICE = {2, 3}  # exercises that take one `device`; the others take `devices`


def _quick_from_env() -> bool:
    return os.environ.get("GPUDEV_QUICK", "").strip().lower() not in ("", "0", "false", "no")


def settings(quick: bool | None = None) -> dict[int, dict[str, Any]]:
    """Keyword arguments for each exercise: the book's sizes, or small ones when `quick`
    (default: the environment variable GPUDEV_QUICK=1).

    Example:
        >>> kw = settings(quick=True)[5]
        >>> res = small_op_sweep(**kw)
    """
    if quick is None:
        quick = _quick_from_env()
    if quick:
        return {
            1: {"n": 1000, "calls": 200, "repeats": 5, "bandwidth_elements": 2**22, "budget_s": 1.0},
            2: {"steps": 5, "repeats": 3},
            3: {"n": 200, "size": 100, "repeats": 3},
            4: {"n": {"cpu": 384, "cuda": 4096}, "repeats": 5},
            5: {"sizes": (4, 40, 400, 1000), "iters": 100, "repeats": 5},
        }
    return {1: {"n": 10000}, 2: {}, 3: {"n": 1000, "size": 100}, 4: {"n": dict(_EX4_SIZES)},
            5: {"sizes": (4, 40, 400, 4000), "iters": 1000}}


def run(only: Iterable[int] | None = None, devices: list[gd.Device] | None = None,
        quick: bool | None = None) -> list[Result]:
    """Run the exercises (all, or `only` those numbers) on `devices` (default: the CPU and
    every GPU; single-device exercises take the first GPU among them, else the CPU).

    Example:
        >>> for res in run(only=[3, 5], quick=True):
        ...     print(res)
    """
    numbers = sorted(set(only)) if only is not None else sorted(EXERCISES)
    unknown = [k for k in numbers if k not in EXERCISES]
    if unknown:
        raise ValueError(f"run: no exercise {unknown}; exercises are numbered 1 to {len(EXERCISES)}")
    kwargs = settings(quick)
    results = []
    for k in numbers:
        results.append(EXERCISES[k](**kwargs[k], **_device_kwargs(k, devices)))
    return results


def _device_kwargs(number: int, devices: list[gd.Device] | None) -> dict[str, Any]:
    if devices is None:
        return {}
    if number in _SINGLE_DEVICE:
        gpus = [d for d in devices if d.type == "cuda"]
        return {"device": gpus[0] if gpus else devices[0]}
    return {"devices": devices}


def _parse_only(text: str, parser: argparse.ArgumentParser) -> list[int]:
    try:
        numbers = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        parser.error(f"--only {text!r}: expected exercise numbers separated by commas, e.g. --only 1,3")
    bad = [k for k in numbers if k not in EXERCISES]
    if bad or not numbers:
        parser.error(f"--only {text!r}: exercises are numbered 1 to {len(EXERCISES)}")
    return numbers


def _parse_devices(text: str, parser: argparse.ArgumentParser) -> list[gd.Device] | None:
    """The --device list; None for 'all', so each exercise uses (and notes) what is here."""
    if text.strip() == "all":
        return None
    n = gd.num_gpus()
    out: list[gd.Device] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        if item == "all":
            candidates = [gd.cpu()] + [gd.gpu(i) for i in range(n)]
        else:
            try:
                candidates = [gd.Device(item)]
            except (TypeError, ValueError) as exc:
                parser.error(f"--device {item!r}: {exc}; use cpu, cuda:N, all, or a comma list")
        for dev in candidates:
            if dev.type == "cuda" and dev.index >= n:
                parser.error(f"--device {item}: {dev} is not available: {_gpus_here()}")
            if dev not in out:
                out.append(dev)
    if not out:
        parser.error("--device: no device given; use cpu, cuda:N or all")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m gpudev exercises",
        description="Run the GPUs chapter's exercises on this machine: tables and conclusions on "
                    "stdout, results.json, report.md and one plot per exercise in --out.")
    p.add_argument("--quick", action="store_true",
                   help="small sizes: the whole run takes well under a minute (also GPUDEV_QUICK=1)")
    p.add_argument("--only", metavar="LIST", help="exercise numbers, comma-separated (e.g. 1,3)")
    p.add_argument("--device", metavar="DEV", default="all",
                   help="cpu, cuda:N, all, or a comma list (default: all = the CPU and every GPU)")
    p.add_argument("--out", metavar="DIR", default="results", help="output folder (default: results)")
    return p


def _machine() -> dict[str, Any]:
    devices = [gd.cpu()] + [gd.gpu(i) for i in range(gd.num_gpus())]
    return {"build": _jsonable(gd.build_info()), "devices": _device_meta(devices),
            "python": sys.version.split()[0], "numpy": np.__version__}


def _machine_text(machine: dict[str, Any]) -> str:
    b = machine["build"]
    cpu = machine["devices"].get("cpu", {})
    lines = [f"- gpudev {b['version']}, compiler {b['compiler']}, SIMD {b['simd']}, "
             f"{b['blas']['name']} {b['blas']['version']} ({b['blas']['threads']} threads)",
             f"- CPU: {cpu.get('model', '?')}, {cpu.get('cores', '?')} cores",
             f"- Python {machine['python']}, NumPy {machine['numpy']}"]
    cuda = b["cuda"]
    gpus = [v for k, v in machine["devices"].items() if k != "cpu"]
    if gpus:
        for k, v in machine["devices"].items():
            if k != "cpu":
                mem = v.get("total_memory")
                mem_text = f", {mem / 2**30:.0f} GiB" if isinstance(mem, (int, float)) else ""
                lines.append(f"- {k}: {v.get('name', '?')}{mem_text}")
        lines.append(f"- CUDA runtime {cuda.get('runtime_version', '?')}, "
                     f"driver {cuda.get('driver_version', '?')}")
    else:
        lines.append(f"- no GPU: {cuda.get('reason') or 'none found'}")
    return "\n".join(lines)


def _write_report(out: str, results: list[Result], plots: dict[int, str], extra_plots: dict[str, str],
                  machine: dict[str, Any], quick: bool, errors: dict[int, str], seconds: float) -> str:
    lines = ["# gpudev: the GPUs chapter's exercises, measured", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M:%S')}, {'quick sizes' if quick else 'the book sizes'}, "
             f"{seconds:.0f} s in all.", "", "## Machine", "", _machine_text(machine), ""]
    for res in results:
        lines += [f"## Exercise {res.number}: {res.title}", "", f"*{res.question}*", ""]
        if res.skipped:
            lines += [f"**Skipped:** {res.skipped}", ""]
        lines += [res.table(markdown=True), "", res.conclusion, ""]
        lines += [f"- note: {n}" for n in res.notes]
        if res.notes:
            lines.append("")
        if res.number in plots:
            lines += [f"![exercise {res.number}]({plots[res.number]})", ""]
    for number, message in errors.items():
        lines += [f"## Exercise {number}: failed", "", "```", message, "```", ""]
    for title, name in extra_plots.items():
        lines += [f"## {title}", "", f"![{title}]({name})", ""]
    path = os.path.join(out, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def _progress_bar(total: int):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, file=sys.stderr, unit="exercise", leave=False, dynamic_ncols=True,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}] {postfix}")


_NO_MATPLOTLIB = "matplotlib is not installed; install it with pip install 'gpudev[plots]'"


def _plots_module():
    """gpudev.plots, or None where matplotlib is missing (the measurements need no plots)."""
    try:
        from gpudev import plots
    except ImportError as exc:
        if exc.name != "matplotlib" and not (exc.name or "").startswith("matplotlib."):
            raise
        return None
    return plots


def run_cli(argv: list[str] | None = None) -> int:
    """``python -m gpudev exercises [--quick] [--only 1,3] [--device ...] [--out DIR]``.

    Prints each exercise's table and conclusion, writes DIR/results.json (every row and raw
    time), DIR/report.md and one PNG per exercise (plus roofline.png). Returns 0 when every
    exercise ran and every check held, 1 otherwise.

    Example:
        >>> run_cli(["--quick", "--only", "5", "--out", "/tmp/res"])  # doctest: +SKIP
        0
    """
    global _progress
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["exercises"]:
        argv = argv[1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    numbers = _parse_only(args.only, parser) if args.only else sorted(EXERCISES)
    devices = _parse_devices(args.device, parser)
    quick = args.quick or _quick_from_env()
    os.makedirs(args.out, exist_ok=True)
    plots = _plots_module()
    if plots is None:
        print(f"note: no plots: {_NO_MATPLOTLIB}", file=sys.stderr)

    machine = _machine()
    kwargs = settings(quick)
    results: list[Result] = []
    errors: dict[int, str] = {}
    plot_files: dict[int, str] = {}
    started = time.perf_counter()
    bar = _progress_bar(len(numbers))
    if bar is not None:
        _progress = lambda label: bar.set_postfix_str(label, refresh=True)  # noqa: E731
    try:
        for k in numbers:
            if bar is not None:
                bar.set_description(f"exercise {k}")
            try:
                res = EXERCISES[k](**kwargs[k], **_device_kwargs(k, devices))
            except Exception as exc:  # one failing exercise must not hide the others' results
                errors[k] = f"{type(exc).__name__}: {exc}"
                if bar is not None:
                    bar.update()
                continue
            results.append(res)
            if plots is not None:
                name = f"exercise{k}_{res.name}.png"
                res.plot(os.path.join(args.out, name))
                plot_files[k] = name
            if bar is not None:
                bar.clear()
            print(res, end="\n\n", flush=True)
            if bar is not None:
                bar.update()
    finally:
        _progress = None
        if bar is not None:
            bar.close()
    extra: dict[str, str] = {}
    if plots is not None and any(r.meta.get("peaks") for r in results):
        plots.roofline(results).savefig(os.path.join(args.out, "roofline.png"), dpi=110)
        extra["Achieved GFLOP/s against the measured peaks (roofline)"] = "roofline.png"
    elapsed = time.perf_counter() - started
    used = devices if devices is not None else [gd.cpu()] + [gd.gpu(i) for i in range(gd.num_gpus())]
    payload = {"machine": machine, "quick": quick, "devices": [str(d) for d in used],
               "settings": _jsonable(kwargs), "seconds": elapsed,
               "results": [r.to_dict() for r in results], "errors": errors}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(payload, f, indent=1, allow_nan=False)
    _write_report(args.out, results, plot_files, extra, machine, quick, errors, elapsed)
    for k, message in errors.items():
        print(f"exercise {k} FAILED: {message}", file=sys.stderr)
    failed = [f"exercise {r.number}: {c['check']}" for r in results for c in r.checks if not c["passed"]]
    for f_ in failed:
        print(f"check FAILED: {f_}", file=sys.stderr)
    files = len(plot_files) + len(extra)
    print(f"wrote {os.path.join(args.out, 'results.json')}, {os.path.join(args.out, 'report.md')} "
          f"and {files} plots in {elapsed:.0f} s")
    return 1 if errors or failed else 0
