"""Exercise 3: logging the norm of each of many products with ``.item()`` every step, against
keeping the log on the device and copying it once, and one batched product.

    >>> res = norm_logging(n=50, size=16, repeats=3)
    >>> res.ok, [r["syncs"] for r in res.rows]
    (True, [50, 1, 1])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import gpudev as gd

from .._devices import DeviceLike, device_label
from .._format import format_count, format_seconds
from .compare import compare, ratio
from .measure import device_meta, emulated_in, emulated_text, interleaved, is_emulated, one_device, positive_int, step
from .result import TIMING_FIELDS, Result, bar_item, figure_of, notes_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLUMNS", "FIELDS", "conclusion", "conclusion_of", "norm_logging", "plot"]

NUMBER = 3
SLOW_SYNC_S = 20e-6  # an .item() that costs more than this waited for something
FIELDS = {
    **TIMING_FIELDS,
    "variant": "'a' .item() every step, 'b' log on the device copied once, 'c' one batched product",
    "label": "the variant in words",
    "per_step_s": "seconds / n: time per logged norm",
    "speedup": "variant a's median time / this variant's median time (a ratio of medians, so it "
               "re-derives from the times beside it)",
    "syncs": "synchronizations in one run (gd.trace())",
    "copies": "copies to the host in one run (gd.trace()); on the CPU, where nothing needs copying, "
              "the host reads, each of which is a copy on a GPU",
    "copy_bytes": "bytes those copies moved",
    "ops": "operations in one run (gd.trace())",
    "flops": "floating-point operations of the products in one run",
    "bytes": "the least memory traffic of the products in one run",
    "footprint": "bytes one step's product works on (inputs and output)",
    "workload": "'matmul': on the roofline, held to the best product rate of the run",
}
COLUMNS = [("variant", "", "text"), ("label", "variant", "text"), ("seconds", "time", "time"),
           ("min_s", "min", "time"), ("max_s", "max", "time"), ("per_step_s", "per step", "time"),
           ("speedup", "a / this (medians)", "ratio"), ("syncs", "syncs", "int"), ("copies", "copies", "int"),
           ("ops", "ops", "int")]


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def _variants(xs: gd.Array, w: gd.Array, d: gd.Device) -> list[tuple[str, str, Callable[[], list[float]]]]:
    """(key, label, run) of the three ways to log the norms of xs[i] @ w."""
    n = xs.shape[0]

    def per_item() -> list[float]:
        return [gd.norm(xs[i] @ w).item() for i in range(n)]

    def on_device() -> list[float]:
        log = gd.empty((n,), device=d)
        for i in range(n):
            log[i] = gd.norm(xs[i] @ w)
        return log.tolist()

    def batched() -> list[float]:
        return gd.norm(gd.matmul(xs, w), axis=(1, 2)).tolist()

    return [("a", ".item() every step", per_item), ("b", "log on the device, copied once", on_device),
            ("c", "one batched product and norms", batched)]


def norm_logging(n: int = 1000, size: int = 100, device: DeviceLike | None = None, *,
                 repeats: int = 5, rtol: float = 1e-4, budget_s: float = 10.0) -> Result:
    """Exercise 3: ``n`` products of ``size x size`` matrices, logging each one's Frobenius norm.

    (a) ``gd.norm(c).item()`` every step: one copy to the host and one synchronization each;
    (b) ``log[i] = gd.norm(c)`` into a preallocated array on the device, copied once at the
    end with ``.tolist()``; (c) one batched product and batched norms. Each variant is traced
    once, then the three are timed in alternation, `repeats` rounds (fewer, but at least 3,
    once the rounds have taken `budget_s` seconds); the three logs must agree (``allclose``
    with `rtol`).

    Example:
        >>> res = norm_logging(n=50, size=16, repeats=3)
        >>> res.ok, [r["syncs"] for r in res.rows]
        (True, [50, 1, 1])
    """
    op = "norm_logging"
    n = positive_int(op, "n", n)
    size = positive_int(op, "size", size)
    repeats = positive_int(op, "repeats", repeats)
    d, notes = one_device(device, op)
    gd.manual_seed(0)
    xs = gd.randn(n, size, size, device=d)
    w = gd.randn(size, size, device=d) * (1.0 / math.sqrt(size))
    rows, logs = [], {}
    flops, nbytes = 2.0 * n * size**3, 3.0 * 4 * n * size * size
    variants = _variants(xs, w, d)
    step(f"3: variants a, b, c on {device_label(d)}, traced once (the warm-up)")
    traces = []
    for key, _, fn in variants:
        with gd.trace() as tr:
            logs[key] = np.asarray(fn(), dtype=np.float64)
        traces.append(tr.summary()["totals"])
    step(f"3: variants a, b, c on {device_label(d)}, {repeats} rounds in alternation")
    # in alternation, so that each round's three runs see the same load on the machine; one
    # run is one unit (each takes far more than a millisecond); host and device together:
    # the time the user waits
    timed = interleaved([fn for _, _, fn in variants], repeats, warmup=0, calls=1, wall=True, max_s=budget_s)
    for (key, label, fn), t, summary in zip(variants, timed, traces):
        rows.append({"variant": key, "label": label, "device": str(d), **t,
                     "per_step_s": t["seconds"] / n, "syncs": summary["syncs"],
                     "copies": summary["copies"] if d.type == "cuda" else summary["host_reads"],
                     "copy_bytes": summary["copy_bytes"],
                     "ops": summary["ops"], "flops": flops, "bytes": nbytes,
                     "footprint": 3.0 * 4 * size * size, "workload": "matmul"})
    for r in rows:  # none from an emulated GPU's times, which are CPU times
        r["speedup"] = None if is_emulated(d) else rows[0]["seconds"] / r["seconds"]
    return Result(
        number=NUMBER, name="norm_logging", title="Logging a norm every step: .item() vs on the device",
        question=f"What does logging the norm of each of {n} products cost when each entry is "
                 f"copied to the host as soon as it is computed, compared with keeping the log on "
                 f"the device and copying it once?",
        fields=FIELDS, columns=COLUMNS, rows=rows,
        conclusion=conclusion(rows, d, n, size, is_emulated(d)), notes=notes, checks=_same_logs(logs, rtol),
        meta={"n": n, "size": size, "repeats": repeats, "device": str(d),
              "first_norms": logs["a"][:5].tolist(), "devices": device_meta([d])},
    )


def _same_logs(logs: dict[str, np.ndarray], rtol: float) -> list[dict[str, Any]]:
    """Checks that variants b and c logged what variant a did."""
    checks = []
    for key in ("b", "c"):
        rel = float(np.max(np.abs(logs[key] - logs["a"]) / np.maximum(np.abs(logs["a"]), 1e-30)))
        checks.append({"check": f"variant {key} logs the same norms as variant a",
                       "passed": bool(np.allclose(logs[key], logs["a"], rtol=rtol, atol=0)),
                       "detail": f"max relative difference {rel:.2g} (rtol {rtol:g})",
                       "max_rel_diff": rel, "rtol": rtol})
    return checks


# ---------------------------------------------------------------------------------------------
# the conclusion and the figure
# ---------------------------------------------------------------------------------------------


def conclusion_of(res: Result) -> str:
    """The conclusion re-derived from a Result's table alone (the referee's way in)."""
    return conclusion(res.rows, gd.Device(res.meta["device"]), res.meta["n"], res.meta["size"],
                      res.meta["device"] in emulated_in(res.meta["devices"]))


def conclusion(rows: list[dict[str, Any]], d: gd.Device, n: int, size: int, emulated: bool = False) -> str:
    """What the rows say: the synchronizations each variant made and what they cost, each
    comparison with its interval (the variants ran in alternation: paired rounds); on an
    emulated GPU only the counts, which a GPU shares."""
    a, b, c = rows
    if emulated:
        return (f"On {device_label(d, [str(d)])}, logging with .item() every step made "
                f"{format_count(a['syncs'], 'synchronization')} and {format_count(a['copies'], 'copy')}; "
                f"keeping the log on the device made "
                f"{format_count(b['syncs'], 'synchronization')} and {format_count(b['copies'], 'copy')}; "
                f"one batched product made {format_count(c['ops'], 'operation')} instead of {b['ops']:,}. "
                + emulated_text(d) + "On a GPU each .item() makes the host wait until everything queued "
                "has finished, so those counts are what decides the time there.")
    ab = ratio(a["times"], b["times"], paired=True)
    s = (f"On {d}, logging with .item() every step made {format_count(a['syncs'], 'synchronization')} "
         f"and {format_count(a['copies'], 'copy')}; keeping the log on the device made "
         f"{format_count(b['syncs'], 'synchronization')} and {format_count(b['copies'], 'copy')}: "
         f"{compare('variant b', b['times'], 'variant a', a['times'], paired=True)}. ")
    s += (f"One batched product of all {n} matrices with batched norms "
          f"({format_count(c['ops'], 'operation')} instead of {b['ops']:,}): "
          f"{compare('variant c', c['times'], 'variant b', b['times'], paired=True)}. ")
    if d.type == "cuda":
        s += ("Each .item() makes the host wait until the GPU has finished everything queued, so "
              "the GPU idles while Python prepares the next step; a log kept on the device lets "
              "the GPU run ahead of Python. ")
    elif ab.differs:
        extra = a["syncs"] - b["syncs"]
        per_sync = (a["seconds"] - b["seconds"]) / max(extra, 1)
        if per_sync < 0:
            s += (f"Here the loop with .item() was the faster one, by {format_seconds(-per_sync)} per "
                  f"step: on the CPU the indexed store into the log cost more than reading one value. ")
        elif per_sync < SLOW_SYNC_S:
            s += (f"On the CPU an .item() waits for nothing (the work is done before it returns), so "
                  f"the {format_seconds(per_sync)} per step between a and b is the cost of reading one "
                  f"value back; on a GPU each of a's {extra:,} extra synchronizations would also stall "
                  f"the device. ")
        else:
            s += (f"Each of a's {extra:,} extra synchronizations cost {format_seconds(per_sync)}: far more "
                  f"than reading one value, although on the CPU the work is done before .item() is "
                  f"called; these numbers do not show where that time went. On a GPU each one would "
                  f"also stall the device. ")
    else:
        s += ("On the CPU an .item() has nothing to wait for (the work is done before it returns), "
              "and this run could not tell the two loops apart from the noise; on a GPU each of "
              "a's synchronizations would stall the device. ")
    bc = ratio(b["times"], c["times"], paired=True)
    if bc.differs and bc.ratio > 1:
        s += (f"Batching wins here: {n} calls' fixed costs became {c['ops']}, and each call "
              f"got more work to spread over the device.")
    elif bc.differs:
        s += (f"Batching was slower here: the batched product of {n} {size}x{size} matrices ran "
              f"below the speed of the loop's products, which the call costs saved could not make up.")
    else:
        s += (f"Batching did not measurably pay here: a {size}x{size} product already takes "
              f"{format_seconds(b['per_step_s'])} per step, so the {n} calls' fixed costs were a "
              f"small part of the time.")
    return s


@figure_of(NUMBER)
def plot(res: Result) -> Figure:
    """The time of each variant, with its synchronizations and copies."""
    from gpudev import plots

    fig, (ax,) = plots.new_figure(9, 5)
    items = [bar_item(r, f"({r['variant']}) {r['label']}", res.label(r["device"]),
                      color=plots.device_color(r["device"]),
                      note=(f"{format_seconds(r['seconds'], micro=plots.MICRO)}\n"
                            f"{format_count(r['syncs'], 'sync')}, {format_count(r['copies'], 'copy')}"))
             for r in res.rows]
    plots.bars(ax, items, ylabel=f"time for {res.meta.get('n')} logged norms")
    plots.set_title(ax, f"Exercise 3: {res.meta.get('n')} products of {res.meta.get('size')}x{res.meta.get('size')} "
                        f"with the norm logged (median, whiskers min-max)")
    notes_text(ax, res)
    return fig
