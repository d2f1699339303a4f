"""Running the bench: which rows run on which device (:func:`plan`), timing one row with
every peer (:func:`run_row`), its verdict (:func:`judge`), and :func:`run` for them all.

    >>> setup, results = run(["cpu"], ["numpy"], quick=True, repeats=3, rows=["a + b"])
    >>> sorted({(r.row, r.verdict in ("PASS", "FAIL")) for r in results})  # 4x4 and the sized rows
    [('a + b', True)]
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ..timing import run_rounds
from .model import Impl, Row, RowResult
from .peers import Context, RowBuilder, load_peers
from .report import describe_setup
from .rows_compute import batched_rows, sgemm_rows
from .rows_memory import reduction_rows, transfer_rows
from .rows_overhead import benchmark_rows, loop_rows, tiny_rows
from .rows_sized import QUICK_SIDES, SIDES, sized_rows
from .rows_views import view_rows
from .rows_training import training_rows
from .rows_cnn import cnn_rows

__all__ = ["judge", "plan", "run", "run_row"]


# ---------------------------------------------------------------------------------------------
# which rows run where
# ---------------------------------------------------------------------------------------------


def plan(devices: list[str], quick: bool, load: int = 0) -> list[tuple[str, str, str, RowBuilder]]:
    """Every row to run, in order; `load` busy processes run meanwhile (some targets depend on it)."""
    rows: list[tuple[str, str, str, RowBuilder]] = []
    for device in devices:
        if device == "cpu":
            rows += tiny_rows(device, 4000 if quick else 20000)
            rows += benchmark_rows(device, 4000 if quick else 20000)
            rows += loop_rows(device, [4, 40, 400] if quick else [4, 40, 400, 4000])
            rows += sized_rows(device, QUICK_SIDES if quick else SIDES)
            rows += reduction_rows(device, 10**7 if quick else 10**8)
            rows += sgemm_rows(device, [1000] if quick else [1000, 4000])
            rows += batched_rows(device, quick)
            rows += view_rows(device, 2000, [1000] if quick else [1000, 2000])
            rows += training_rows(device, quick, load)
            rows += cnn_rows(device, quick, load)
        else:
            rows += tiny_rows(device, 2000 if quick else 10000)
            rows += benchmark_rows(device, 2000 if quick else 10000)
            rows += loop_rows(device, [4, 40, 400, 4000])
            rows += transfer_rows(device, 2**26 if quick else 2**28)
            rows += reduction_rows(device, 10**8 if quick else 10**9)
            rows += sgemm_rows(device, [8192])
            rows += batched_rows(device, quick)
            rows += view_rows(device, 8192, [8192])
            rows += training_rows(device, quick, load)
    return rows


# ---------------------------------------------------------------------------------------------
# running a row and judging it
# ---------------------------------------------------------------------------------------------


def run_row(ctx: Context, row: Row, repeats: int) -> RowResult:
    """Warm up each peer, then `repeats` rounds, rotating which peer goes first."""
    peers = list(row.impls)
    rounds = run_rounds([impl.work(row.number, row.settle) for impl in row.impls.values()], n_warmup=max(1, row.number // 10),
                        n_repeat=repeats, devices=[], op="bench")
    times = {p: [host * row.per / row.number for host, _gpu in rounds.samples[i]] for i, p in enumerate(peers)}
    median = {p: float(np.median(t)) for p, t in times.items()}
    metrics = {p: _metrics(row, impl, median[p]) for p, impl in row.impls.items()}
    ratio = {p: median["gpudev"] / median[p] for p in peers if p != "gpudev" and "gpudev" in median}
    if row.provides and "GB/s" in metrics.get("gpudev", {}):
        ctx.bandwidths[row.provides] = metrics["gpudev"]["GB/s"]
    verdict, note = judge(ctx, row, ratio, metrics)
    return RowResult(
        row=row.name, size=row.size, device=row.device, unit=row.unit, number=row.number, per=row.per,
        stmts={p: i.stmt for p, i in row.impls.items()}, times=times, median=median, ratio=ratio,
        metrics=metrics, target=row.target.text if row.target else None, verdict=verdict, note=note,
    )


def _metrics(row: Row, impl: Impl, median: float) -> dict[str, float]:
    """One peer's GB/s, GFLOP/s and % of peak at its `median` time, and its relative error."""
    m: dict[str, float] = {}
    if row.bytes:
        m["GB/s"] = row.bytes / median / 1e9
    if row.flops:
        m["GFLOP/s"] = row.flops / median / 1e9
        if row.peak_gflops:
            m["% peak"] = 100.0 * m["GFLOP/s"] / row.peak_gflops
    if row.reference is not None and impl.value is not None:
        if impl.prepare is not None:
            impl.prepare()
        m["rel_err"] = abs(impl.value() - row.reference) / abs(row.reference)
    return m


def judge(ctx: Context, row: Row, ratio: dict[str, float], metrics: dict[str, dict[str, float]]) -> tuple[str, str]:
    """('PASS' | 'FAIL' | 'INFO', why)."""
    t = row.target
    if t is None:
        return "INFO", ""
    failed = []
    limits = ([(t.peer, t.max_ratio)] if t.peer is not None else []) + list(t.also)
    for peer, max_ratio in limits:
        if peer not in ratio:
            return "INFO", f"target {t.text}: {peer} not run"
        if ratio[peer] > max_ratio:
            failed.append(f"{ratio[peer]:.2f}x {peer} > {max_ratio:.2f}x")
    if t.bandwidth is not None:
        if t.bandwidth not in ctx.bandwidths:
            return "INFO", f"target {t.text}: {t.bandwidth} not measured"
        need = t.min_fraction * ctx.bandwidths[t.bandwidth]
        have = metrics["gpudev"].get("GB/s", 0.0)
        if have < need:
            failed.append(f"{have:.0f} GB/s < {need:.0f}")
    if t.max_rel_err is not None:
        err = metrics["gpudev"].get("rel_err")
        if err is None:
            failed.append("no error measured")
        elif not err <= t.max_rel_err:  # NaN fails too
            failed.append(f"err {err:.1e} > {t.max_rel_err:.0e}")
    return ("FAIL", "; ".join(failed)) if failed else ("PASS", t.text)


# ---------------------------------------------------------------------------------------------
# running them all
# ---------------------------------------------------------------------------------------------


def _progress(total: int) -> Any:
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, file=sys.stderr, unit="row", disable=None, leave=False)


def run(
    devices: list[str],
    peers: list[str],
    quick: bool = False,
    repeats: int = 7,
    rows: list[str] | None = None,
    peak_gflops: float | None = None,
    gpu_peak_tflops: float | None = None,
    load: int = 0,
) -> tuple[dict[str, Any], list[RowResult]]:
    """Run the bench; returns (setup description, results). `rows` filters by row name;
    `load` is the number of busy processes running meanwhile (started by the caller)."""
    modules, notes = load_peers(peers)
    ctx = Context(modules, quick, peak_gflops, gpu_peak_tflops)
    planned = [p for p in plan(devices, quick, load) if not rows or any(f in p[0] for f in rows)]
    setup = describe_setup(ctx, repeats, devices, notes)
    results = []
    bar = _progress(len(planned))
    with np.errstate(all="ignore"):  # b += b overflows to inf; that is not what is measured
        for name, size, device, build in planned:
            if bar is not None:
                bar.set_description(f"{name} {size} {device}")
            try:
                results.append(run_row(ctx, build(ctx), repeats))
            except Exception as exc:  # one broken row is reported, the others still run
                results.append(RowResult(
                    row=name, size=size, device=device, unit="op", number=0, per=1, stmts={}, times={},
                    median={}, ratio={}, metrics={}, target=None, verdict="ERROR",
                    note=f"{type(exc).__name__}: {exc}",
                ))
            if bar is not None:
                bar.update()
    if bar is not None:
        bar.close()
    ctx.release()
    return setup, results
