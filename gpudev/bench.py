"""``python -m gpudev bench``: gpudev side by side with NumPy, PyTorch and CuPy, in one process.

Each row runs the same statement with gpudev and with every installed peer on the same data,
alternating peers repeat by repeat, and reports the median of the repeats (7 by default).
Every measurement reads the host clock after synchronizing the device the work ran on (the
peer's own synchronization for PyTorch and CuPy), so all peers are timed the same way. Tiny
operations are timed as a loop of many iterations per repeat and reported per operation.
The verdict column checks the targets of the foundation and CUDA issues; rows without a
target say INFO.

Examples:
    python -m gpudev bench --quick
    python -m gpudev bench --vs numpy --device cpu --json bench.json
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import math
import os
import platform
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

import gpudev as gd

from . import _C
from .timing import format_seconds

__all__ = ["RowResult", "run", "run_cli"]

PEERS = ("numpy", "torch", "cupy")
MAX_REL_ERR = 1e-7  # the foundation issue's accuracy target for float32 sums and norms
BLAS_SETTLE = 0.25  # seconds for idle OpenBLAS threads to stop spinning (see Row.settle)


# ---------------------------------------------------------------------------------------------
# the model: a row has one Impl per peer; a Target decides the verdict
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Impl:
    """One peer's way of running a row: `number` runs of `stmt` per measurement."""

    stmt: str
    env: dict[str, Any]
    setup: str = "pass"
    sync: Callable[[], Any] | None = None  # waits for the peer's queued device work
    value: Callable[[], float] | None = None  # the result, for the error column
    prepare: Callable[[], Any] | None = None  # e.g. make the peer's device current

    def measure(self, number: int) -> float:
        """Seconds for `number` runs, up to the end of a synchronization."""
        if self.prepare is not None:
            self.prepare()
        sync = self.sync
        clock = time.perf_counter if sync is None else lambda: (sync(), time.perf_counter())[1]
        # timeit compiles stmt into a tight loop and turns the garbage collector off.
        return timeit.Timer(self.stmt, self.setup, timer=clock, globals=self.env).timeit(number)


@dataclasses.dataclass
class Target:
    """PASS when gpudev's time is at most `max_ratio` times `peer`'s, its relative error at
    most `max_rel_err`, and its throughput at least `min_fraction` of the bandwidth named
    `bandwidth` (measured earlier in the same run); criteria left None are not checked."""

    text: str
    peer: str | None = None
    max_ratio: float | None = None
    max_rel_err: float | None = None
    bandwidth: str | None = None
    min_fraction: float | None = None


@dataclasses.dataclass
class Row:
    name: str
    size: str
    device: str
    impls: dict[str, Impl]
    number: int = 1  # stmt runs per measurement
    per: int = 1  # stmt runs per reported unit (1: per op; 1000: per 1000-iteration loop)
    unit: str = "op"
    bytes: float = 0.0  # bytes moved per unit, for GB/s
    flops: float = 0.0  # per unit, for GFLOP/s
    peak_gflops: float | None = None  # for % of peak
    reference: float | None = None  # float64 reference of the result, for the error
    target: Target | None = None
    provides: str | None = None  # name under which gpudev's GB/s is kept for later targets
    # Seconds to pause before each peer's measurement. NumPy ships its own OpenBLAS, whose
    # threads keep spinning for a while after a product; measured right after it, gpudev's
    # OpenBLAS threads would share the cores with them (and the other way round). Pausing
    # times each library as a user who runs only that one sees it.
    settle: float = 0.0


@dataclasses.dataclass
class RowResult:
    """A row's outcome; times are seconds per unit, one entry per repeat."""

    row: str
    size: str
    device: str
    unit: str
    number: int
    per: int
    stmts: dict[str, str]
    times: dict[str, list[float]]
    median: dict[str, float]
    ratio: dict[str, float]
    metrics: dict[str, dict[str, float]]
    target: str | None
    verdict: str
    note: str


# ---------------------------------------------------------------------------------------------
# peers: conversion from a host array, synchronization, availability
# ---------------------------------------------------------------------------------------------


class Context:
    """What the row builders share: peers, sizes, and one set of cached data at a time."""

    def __init__(self, peers: dict[str, Any], quick: bool, peak_gflops: float | None, gpu_peak_tflops: float | None):
        self.peers = peers  # name -> module, the selected and importable ones
        self.quick = quick
        self.peak_gflops = peak_gflops
        self.gpu_peak_tflops = gpu_peak_tflops
        self.bandwidths: dict[str, float] = {}
        self._cache: dict[Any, Any] = {}

    def shared(self, key: Any, factory: Callable[[], Any]) -> Any:
        """factory() cached under key; a new key drops the previous data to bound memory."""
        if key not in self._cache:
            self._cache.clear()
            self._cache[key] = factory()
        return self._cache[key]

    def release(self) -> None:
        self._cache.clear()

    # -- peers ----------------------------------------------------------------------------

    def peers_on(self, device: str) -> list[str]:
        """The selected peers that can run on `device` (NumPy is CPU only)."""
        out = []
        for name, mod in self.peers.items():
            if device == "cpu":
                if name != "cupy":
                    out.append(name)
            elif name == "torch" and mod.cuda.is_available() and _index(device) < mod.cuda.device_count():
                out.append(name)
            elif name == "cupy" and _cupy_has(mod, _index(device)):
                out.append(name)
        return out

    def convert(self, peer: str, host: np.ndarray, device: str, share: bool = False) -> Any:
        """`host` as `peer`'s array on `device`; with share=True a CPU peer may alias it."""
        if peer == "gpudev":
            return gd.array(host, device=device)
        if peer == "numpy":
            return host if share else host.copy()
        if peer == "torch":
            torch = self.peers["torch"]
            t = torch.from_numpy(host if share else host.copy())
            return t if device == "cpu" else t.to(device)
        cp = self.peers["cupy"]
        with cp.cuda.Device(_index(device)):
            return cp.asarray(host)

    def sync(self, peer: str, device: str) -> Callable[[], Any] | None:
        if device == "cpu":
            return None
        if peer == "gpudev":
            dev = [gd.Device(device)]
            return lambda: _C._sync("benchmark", dev)
        if peer == "torch":
            torch, index = self.peers["torch"], _index(device)
            return lambda: torch.cuda.synchronize(index)
        if peer == "cupy":
            cp = self.peers["cupy"]
            with cp.cuda.Device(_index(device)):
                return cp.cuda.get_current_stream().synchronize
        return None

    def prepare(self, peer: str, device: str) -> Callable[[], Any] | None:
        if peer == "cupy" and device != "cpu":
            return self.peers["cupy"].cuda.Device(_index(device)).use
        return None

    def impls(
        self,
        device: str,
        stmts: dict[str, str],
        arrays: Callable[[str], dict[str, Any]],
        setup: str = "pass",
        value: str | dict[str, str] | None = None,
    ) -> dict[str, Impl]:
        """One Impl per peer present on `device` that has a statement.

        arrays(peer) gives that peer's data as a namespace; `value` is an expression giving
        the row's result as a float (for the error column)."""
        out = {}
        for peer in ["gpudev"] + self.peers_on(device):
            if peer not in stmts:
                continue
            env = {"gd": gd, "np": np, **self.peers, **arrays(peer)}
            value_fn = None
            if value is not None:
                expr = value[peer] if isinstance(value, dict) else value
                value_fn = _evaluator(expr, env)
            out[peer] = Impl(
                stmt=stmts[peer],
                env=env,
                setup=setup,
                sync=self.sync(peer, device),
                value=value_fn,
                prepare=self.prepare(peer, device),
            )
        return out


def _evaluator(expr: str, env: dict[str, Any]) -> Callable[[], float]:
    code = compile(expr, "<bench value>", "eval")
    return lambda: float(eval(code, env))  # our own fixed expressions, never user input


def _index(device: str) -> int:
    return int(device.split(":")[1]) if ":" in device else 0


def _cupy_has(cp: Any, index: int) -> bool:
    try:
        return index < cp.cuda.runtime.getDeviceCount()
    except Exception:  # cupy raises its own CUDARuntimeError without a driver
        return False


def load_peers(names: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Import the requested peers; returns (modules, notes about the missing ones)."""
    peers, notes = {}, []
    for name in names:
        try:
            peers[name] = importlib.import_module(name)
        except Exception as exc:  # an installed-but-broken peer is skipped, not fatal
            if name == "numpy":
                raise
            notes.append(f"{name}: not available ({type(exc).__name__}: {exc})")
    return peers, notes


# ---------------------------------------------------------------------------------------------
# the rows
# ---------------------------------------------------------------------------------------------

RowBuilder = Callable[[Context], Row]


def _host_randn(shape: tuple[int, ...] | int) -> np.ndarray:
    """float32 randn + 1 made by gpudev, returned as a host NumPy array (same values for all)."""
    return gd.randn(*(shape if isinstance(shape, tuple) else (shape,))).numpy() + np.float32(1)


def _reference_sums(host: np.ndarray, chunk: int = 1 << 22) -> tuple[float, float]:
    """(sum, sum of squares) of a float32 vector in float64, exactly rounded across chunks.

    Chunks keep the float64 temporaries small; within a chunk NumPy's pairwise float64 sum
    errs by ~1e-16, and math.fsum adds the chunk sums without further rounding error."""
    sums, squares = [], []
    for start in range(0, host.size, chunk):
        block = host[start : start + chunk]
        sums.append(float(np.sum(block, dtype=np.float64)))
        squares.append(float(np.sum(np.square(block, dtype=np.float64))))
    return math.fsum(sums), math.fsum(squares)


def _per_peer(ctx: Context, device: str, host: dict[str, np.ndarray], share: bool = False) -> Callable[[str], dict]:
    return lambda peer: {name: ctx.convert(peer, h, device, share) for name, h in host.items()}


def tiny_rows(device: str, n: int) -> list[tuple[str, str, str, RowBuilder]]:
    """`b += b`, `a + b`, `a.sum().item()` on 4x4 float32, per operation."""
    gpu = device != "cpu"
    # On the CPU the time per op is compared with NumPy's (<= 0.5x); on GPUs with PyTorch's.
    target_cpu = Target("<= 0.5x numpy time", peer="numpy", max_ratio=0.5)
    target_gpu = Target("<= 1.0x torch time", peer="torch", max_ratio=1.0)
    target = target_gpu if gpu else target_cpu

    def data(ctx: Context) -> Callable[[str], dict]:
        # `_b` is the in-place rows' operand: their setup binds it to a local `b`, which
        # `b += b` needs inside timeit's function.
        host = {"a": np.ones((4, 4), np.float32), "_b": np.ones((4, 4), np.float32)}

        def arrays(peer: str) -> dict[str, Any]:
            d = {name: ctx.convert(peer, h, device) for name, h in host.items()}
            d["b"] = d["_b"]
            return d

        return arrays

    def iadd(ctx: Context) -> Row:
        stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "b += b")
        return Row("b += b", "4x4", device, ctx.impls(device, stmts, data(ctx), setup="b = _b"), number=n, target=target)

    def add(ctx: Context) -> Row:
        stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "a + b")
        return Row("a + b", "4x4", device, ctx.impls(device, stmts, data(ctx)), number=n, target=target)

    def sum_item(ctx: Context) -> Row:
        stmts = dict.fromkeys(("gpudev", "torch", "cupy"), "a.sum().item()")
        stmts["numpy"] = "float(a.sum())"
        return Row("a.sum().item()", "4x4", device, ctx.impls(device, stmts, data(ctx)), number=max(n // 5, 10), target=target)

    rows = [("b += b", "4x4", device, iadd), ("a + b", "4x4", device, add), ("a.sum().item()", "4x4", device, sum_item)]
    if gpu:

        def latency(ctx: Context) -> Row:
            stmts = {"gpudev": "b += b; sync()", "torch": "b += b; sync()", "cupy": "b += b; sync()"}
            base = data(ctx)

            def arrays(peer: str) -> dict:
                return {**base(peer), "sync": ctx.sync(peer, device)}

            impls = ctx.impls(device, stmts, arrays, setup="b = _b")
            return Row("launch latency", "4x4", device, impls, number=max(n // 5, 10), target=target_gpu)

        rows.append(("launch latency", "4x4", device, latency))
    return rows


def loop_rows(device: str, sizes: list[int]) -> list[tuple[str, str, str, RowBuilder]]:
    """The seed question's loop: 1000 times `b += b` on n x n, reported per loop."""
    rows = []
    for n in sizes:

        def build(ctx: Context, n: int = n) -> Row:
            host = {"_b": np.ones((n, n), np.float32)}
            stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "b += b")
            impls = ctx.impls(device, stmts, _per_peer(ctx, device, host), setup="b = _b")
            # GB/s counts one read and one write of b per iteration
            return Row("b += b x1000", f"{n}x{n}", device, impls, number=1000, per=1000, unit="loop",
                       bytes=1000 * 2 * 4 * n * n)

        rows.append(("b += b x1000", f"{n}x{n}", device, build))
    return rows


def reduction_rows(device: str, n: int) -> list[tuple[str, str, str, RowBuilder]]:
    """sum, mean and norm of n float32 (randn + 1): time, GB/s and error vs float64."""
    gpu = device != "cpu"
    label = f"{n:.0e}".replace("e+0", "e").replace("e+", "e")

    def data(ctx: Context) -> dict[str, Any]:
        def make() -> dict[str, Any]:
            if gpu:
                a = gd.randn(n, device=device) + 1
                host = a.cpu().numpy()
            else:
                host = _host_randn(n)
                a = None
            total, squares = _reference_sums(host)
            per_peer = {}
            for peer in ["gpudev"] + ctx.peers_on(device):
                if peer == "gpudev" and a is not None:
                    per_peer[peer] = {"a": a}
                else:
                    per_peer[peer] = {"a": ctx.convert(peer, host, device, share=True)}
            return {"sum": total, "norm": math.sqrt(squares), "arrays": per_peer}

        return ctx.shared(("reduction", device, n), make)

    if gpu:
        # The CUDA issue's target: a sum at >= 80% of the card's copy bandwidth.
        target_sum = Target(">= 0.8x d2d copy GB/s, err <= 1e-7", bandwidth=f"copy {device}",
                            min_fraction=0.8, max_rel_err=MAX_REL_ERR)
        target_mean, target_norm = None, None
    else:
        target_sum = Target(">= 1.3x numpy GB/s, err <= 1e-7", peer="numpy", max_ratio=1 / 1.3, max_rel_err=MAX_REL_ERR)
        target_mean = Target(">= 1.3x numpy GB/s, err <= 1e-7", peer="numpy", max_ratio=1 / 1.3, max_rel_err=MAX_REL_ERR)
        target_norm = Target(">= 1.0x np.linalg.norm GB/s, err <= 1e-7", peer="numpy", max_ratio=1.0, max_rel_err=MAX_REL_ERR)
    # enough calls per measurement to take milliseconds at the memory bandwidth
    number = max(5, 5 * 10**9 // n) if gpu else max(1, 10**8 // n)

    def copy_row(ctx: Context) -> Row:
        d = data(ctx)
        stmts = {"gpudev": "a.copy()", "torch": "a.clone()", "cupy": "a.copy()"}
        impls = ctx.impls(device, stmts, lambda p: d["arrays"][p])
        return Row("copy d2d", label, device, impls, number=number, bytes=2 * 4 * n, provides=f"copy {device}")

    def reduction(name: str, stmts: dict[str, str], value: dict[str, str], target: Target | None,
                  ref: Callable[[dict], float]) -> RowBuilder:
        def build(ctx: Context) -> Row:
            d = data(ctx)
            impls = ctx.impls(device, stmts, lambda p: d["arrays"][p], value=value)
            return Row(name, label, device, impls, number=number, bytes=4 * n, reference=ref(d), target=target)

        return build

    sum_stmts = {"gpudev": "a.sum()", "numpy": "a.sum()", "torch": "a.sum()", "cupy": "a.sum()"}
    sum_values = {p: "a.sum().item()" for p in sum_stmts}
    mean_stmts = {p: "a.mean()" for p in sum_stmts}
    mean_values = {p: "a.mean().item()" for p in sum_stmts}
    norm_stmts = {"gpudev": "gd.norm(a)", "numpy": "np.linalg.norm(a)", "torch": "torch.linalg.norm(a)",
                  "cupy": "cupy.linalg.norm(a)"}
    norm_values = {"gpudev": "gd.norm(a).item()", "numpy": "np.linalg.norm(a)", "torch": "torch.linalg.norm(a).item()",
                   "cupy": "cupy.linalg.norm(a).item()"}
    rows = []
    if gpu:
        rows.append(("copy d2d", label, device, copy_row))
    rows.append(("sum", label, device,
                 reduction("sum", sum_stmts, sum_values, target_sum, lambda d: d["sum"])))
    rows.append(("mean", label, device,
                 reduction("mean", mean_stmts, mean_values, target_mean, lambda d: d["sum"] / n)))
    rows.append(("norm", label, device,
                 reduction("norm", norm_stmts, norm_values, target_norm, lambda d: d["norm"])))
    return rows


def sgemm_rows(device: str, sizes: list[int]) -> list[tuple[str, str, str, RowBuilder]]:
    """float32 n x n products: GFLOP/s and % of the configured peak."""
    gpu = device != "cpu"
    rows = []
    for n in sizes:

        def build(ctx: Context, n: int = n) -> Row:
            host = {"a": _host_randn((n, n)), "b": _host_randn((n, n))}
            stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "a @ b")
            impls = ctx.impls(device, stmts, _per_peer(ctx, device, host, share=True))
            flops = 2.0 * n**3
            # one measurement should take tens of milliseconds
            seconds_guess = flops / (50e12 if gpu else 100e9)
            number = max(1, min(20, int(0.05 / seconds_guess)))
            if gpu:
                target = Target(">= 0.95x torch GFLOP/s", peer="torch", max_ratio=1 / 0.95)
                peak = ctx.gpu_peak_tflops * 1e3 if ctx.gpu_peak_tflops else None
            else:
                target = Target(">= 0.95x numpy GFLOP/s", peer="numpy", max_ratio=1 / 0.95)
                peak = ctx.peak_gflops
            return Row("sgemm", f"n={n}", device, impls, number=number, unit="call", flops=flops,
                       peak_gflops=peak, target=target, settle=0.0 if gpu else BLAS_SETTLE)

        rows.append(("sgemm", f"n={n}", device, build))
    return rows


def batched_rows(device: str, quick: bool) -> list[tuple[str, str, str, RowBuilder]]:
    """1000 products of 100x100: one batched `@` and a Python loop of 1000 `@`."""
    gpu = device != "cpu"
    number = 1 if quick else 3
    shape = (1000, 100, 100)

    def arrays(ctx: Context) -> Callable[[str], dict]:
        host = ctx.shared(("batched", device), lambda: {"A": _host_randn(shape), "B": _host_randn(shape)})
        return _per_peer(ctx, device, host, share=True)

    def batched(ctx: Context) -> Row:
        stmts = {"gpudev": "A @ B", "numpy": "np.matmul(A, B)", "torch": "A @ B", "cupy": "A @ B"}
        target = None if gpu else Target("<= 1.0x numpy batched time", peer="numpy", max_ratio=1.0)
        return Row("batched @", "1000x(100x100)", device, ctx.impls(device, stmts, arrays(ctx)), number=number,
                   unit="call", flops=2e9, target=target, settle=0.0 if gpu else BLAS_SETTLE)

    def looped(ctx: Context) -> Row:
        stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "[x @ y for x, y in zip(A, B)]")
        return Row("looped @", "1000x(100x100)", device, ctx.impls(device, stmts, arrays(ctx)), number=1,
                   unit="loop", flops=2e9)

    return [("batched @", "1000x(100x100)", device, batched), ("looped @", "1000x(100x100)", device, looped)]


def transfer_rows(device: str, n: int) -> list[tuple[str, str, str, RowBuilder]]:
    """Pageable host<->device copies of n float32."""
    label = f"{4 * n / 2**20:.0f} MiB"

    def data(ctx: Context) -> dict[str, Any]:
        def make() -> dict[str, Any]:
            host = _host_randn(n)
            out = {"gpudev": {"h": gd.array(host), "d": gd.array(host, device=device), "dev": gd.Device(device)}}
            if "torch" in ctx.peers_on(device):
                t = ctx.peers["torch"].from_numpy(host)
                out["torch"] = {"h": t, "d": t.to(device), "dev": device}
            if "cupy" in ctx.peers_on(device):
                out["cupy"] = {"h": host, "d": ctx.convert("cupy", host, device)}
            return out

        return ctx.shared(("transfer", device, n), make)

    def h2d(ctx: Context) -> Row:
        d = data(ctx)
        stmts = {"gpudev": "h.to(dev)", "torch": "h.to(dev)", "cupy": "cupy.asarray(h)"}
        return Row("copy h2d", label, device, ctx.impls(device, stmts, lambda p: d[p]), number=3, unit="call",
                   bytes=4 * n)

    def d2h(ctx: Context) -> Row:
        d = data(ctx)
        stmts = {"gpudev": "d.cpu()", "torch": "d.cpu()", "cupy": "cupy.asnumpy(d)"}
        return Row("copy d2h", label, device, ctx.impls(device, stmts, lambda p: d[p]), number=3, unit="call",
                   bytes=4 * n)

    return [("copy h2d", label, device, h2d), ("copy d2h", label, device, d2h)]


def plan(devices: list[str], quick: bool) -> list[tuple[str, str, str, RowBuilder]]:
    """Every row to run, in order."""
    rows: list[tuple[str, str, str, RowBuilder]] = []
    for device in devices:
        if device == "cpu":
            rows += tiny_rows(device, 4000 if quick else 20000)
            rows += loop_rows(device, [4, 40, 400] if quick else [4, 40, 400, 4000])
            rows += reduction_rows(device, 10**7 if quick else 10**8)
            rows += sgemm_rows(device, [1000] if quick else [1000, 4000])
            rows += batched_rows(device, quick)
        else:
            rows += tiny_rows(device, 2000 if quick else 10000)
            rows += loop_rows(device, [4, 40, 400, 4000])
            rows += transfer_rows(device, 2**26 if quick else 2**28)
            rows += reduction_rows(device, 10**8 if quick else 10**9)
            rows += sgemm_rows(device, [8192])
            rows += batched_rows(device, quick)
    return rows


# ---------------------------------------------------------------------------------------------
# running a row and judging it
# ---------------------------------------------------------------------------------------------


def run_row(ctx: Context, row: Row, repeats: int) -> RowResult:
    """Warm up each peer, then `repeats` rounds, rotating which peer goes first."""
    peers = list(row.impls)
    warm = max(1, row.number // 10)
    for impl in row.impls.values():
        time.sleep(row.settle)
        impl.measure(warm)
    times: dict[str, list[float]] = {p: [] for p in peers}
    for r in range(repeats):
        for p in peers[r % len(peers):] + peers[: r % len(peers)]:
            time.sleep(row.settle)
            times[p].append(row.impls[p].measure(row.number) * row.per / row.number)
    median = {p: float(np.median(t)) for p, t in times.items()}
    metrics: dict[str, dict[str, float]] = {}
    for p, impl in row.impls.items():
        m: dict[str, float] = {}
        if row.bytes:
            m["GB/s"] = row.bytes / median[p] / 1e9
        if row.flops:
            m["GFLOP/s"] = row.flops / median[p] / 1e9
            if row.peak_gflops:
                m["% peak"] = 100.0 * m["GFLOP/s"] / row.peak_gflops
        if row.reference is not None and impl.value is not None:
            if impl.prepare is not None:
                impl.prepare()
            m["rel_err"] = abs(impl.value() - row.reference) / abs(row.reference)
        metrics[p] = m
    ratio = {p: median["gpudev"] / median[p] for p in peers if p != "gpudev" and "gpudev" in median}
    if row.provides and "GB/s" in metrics.get("gpudev", {}):
        ctx.bandwidths[row.provides] = metrics["gpudev"]["GB/s"]
    verdict, note = judge(ctx, row, ratio, metrics)
    return RowResult(
        row=row.name, size=row.size, device=row.device, unit=row.unit, number=row.number, per=row.per,
        stmts={p: i.stmt for p, i in row.impls.items()}, times=times, median=median, ratio=ratio,
        metrics=metrics, target=row.target.text if row.target else None, verdict=verdict, note=note,
    )


def judge(ctx: Context, row: Row, ratio: dict[str, float], metrics: dict[str, dict[str, float]]) -> tuple[str, str]:
    """('PASS' | 'FAIL' | 'INFO', why)."""
    t = row.target
    if t is None:
        return "INFO", ""
    failed = []
    if t.peer is not None:
        if t.peer not in ratio:
            return "INFO", f"target {t.text}: {t.peer} not run"
        if ratio[t.peer] > t.max_ratio:
            failed.append(f"{ratio[t.peer]:.2f}x {t.peer} > {t.max_ratio:.2f}x")
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
# output
# ---------------------------------------------------------------------------------------------


def _metric_text(m: dict[str, float]) -> str:
    parts = []
    if "GB/s" in m:
        parts.append(f"{m['GB/s']:.3g} GB/s")
    if "GFLOP/s" in m:
        g = m["GFLOP/s"]
        parts.append(f"{g / 1e3:.3g} TFLOP/s" if g >= 1e4 else f"{g:.3g} GFLOP/s")
    if "% peak" in m:
        parts.append(f"{m['% peak']:.0f}% peak")
    if "rel_err" in m:
        parts.append(f"err {m['rel_err']:.1e}")
    return " ".join(parts)


_ABBREV = {"gpudev": "gd", "numpy": "np", "torch": "torch", "cupy": "cupy"}


def format_table(results: list[RowResult], peers: list[str]) -> str:
    """The results as a fixed-width text table."""
    header = ["row", "size", "device", "gpudev"] + peers + [f"gd/{_ABBREV[p]}" for p in peers] + ["verdict", "notes"]
    body = []
    for r in results:
        times = [format_seconds(r.median[p]) if p in r.median else "-" for p in ["gpudev"] + peers]
        ratios = [f"{r.ratio[p]:.2f}" if p in r.ratio else "-" for p in peers]
        notes = [f"{_ABBREV[p]} {_metric_text(m)}" for p, m in r.metrics.items() if m]
        if r.verdict != "INFO" or r.note:
            notes.append(f"[{r.note}]")
        unit = "" if r.unit == "op" else f" /{r.unit}"
        body.append([r.row + unit, r.size, r.device] + times + ratios + [r.verdict, "; ".join(notes)])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    widths[-1] = 0  # the notes column is last and left ragged
    lines = []
    for i, cells in enumerate([header] + body):
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths[:-1]) + "  -----")
    return "\n".join(lines)


def describe_setup(ctx: Context, repeats: int, devices: list[str], notes: list[str]) -> dict[str, Any]:
    info = gd.build_info()
    blas = info.get("blas") or {}
    setup = {
        "gpudev": info.get("version"),
        "blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
        "threads": gd.get_num_threads(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "devices": devices,
        "repeats": repeats,
        "quick": ctx.quick,
        "peers": {name: getattr(mod, "__version__", "?") for name, mod in ctx.peers.items()},
        "peak_gflops": ctx.peak_gflops,
        "gpu_peak_tflops": ctx.gpu_peak_tflops,
        "skipped_peers": notes,
    }
    if "torch" in ctx.peers:
        setup["torch_threads"] = ctx.peers["torch"].get_num_threads()
    return setup


def setup_text(setup: dict[str, Any]) -> str:
    peers = ", ".join(f"{k} {v}" for k, v in setup["peers"].items())
    text = (
        f"gpudev {setup['gpudev']} bench: {setup['blas']}, {setup['threads']} threads, "
        f"{setup['cpus']} CPUs; peers: {peers or 'none'}; median of {setup['repeats']} repeats"
        f"{' (quick)' if setup['quick'] else ''}"
    )
    if setup["peak_gflops"] is None:
        text += "\n% of peak: set GPUDEV_PEAK_GFLOPS (or --peak-gflops) to this machine's FP32 peak"
    else:
        text += f"\n% of peak against {setup['peak_gflops']:g} GFLOP/s (configured)"
    for note in setup["skipped_peers"]:
        text += f"\n{note}"
    return text + "\ntimes per op unless the row says /loop or /call; ratio < 1: gpudev is faster"


# ---------------------------------------------------------------------------------------------
# entry points
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
) -> tuple[dict[str, Any], list[RowResult]]:
    """Run the bench; returns (setup description, results). `rows` filters by row name."""
    modules, notes = load_peers(peers)
    ctx = Context(modules, quick, peak_gflops, gpu_peak_tflops)
    planned = [p for p in plan(devices, quick) if not rows or any(f in p[0] for f in rows)]
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


def _env_float(name: str) -> float | None:
    raw = os.environ.get(name)
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"bench: {name}={raw!r} is not a number; e.g. {name}=230") from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m gpudev bench",
        description="Time gpudev against NumPy, PyTorch and CuPy in one process and check the targets.",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer iterations (well under a minute)")
    p.add_argument("--vs", default="numpy,torch,cupy", help="peers to compare with, comma-separated (default: all installed)")
    p.add_argument("--device", default="all", help="cpu, cuda, cuda:N or all (default: the CPU and every GPU)")
    p.add_argument("--json", metavar="FILE", help="write every raw time to FILE as JSON")
    p.add_argument("--repeat", type=int, default=7, help="repeats per row; the median is reported (default 7)")
    p.add_argument("--rows", help="only rows whose name contains one of these, comma-separated (e.g. 'sgemm,sum')")
    p.add_argument("--peak-gflops", type=float, default=None,
                   help="the CPU's FP32 peak for the %% of peak column (default: $GPUDEV_PEAK_GFLOPS)")
    p.add_argument("--gpu-peak-tflops", type=float, default=None,
                   help="the GPU's FP32 peak (default: $GPUDEV_GPU_PEAK_TFLOPS)")
    return p


def _devices(arg: str, parser: argparse.ArgumentParser) -> list[str]:
    n = gd.num_gpus()
    if arg == "all":
        return ["cpu"] + [f"cuda:{i}" for i in range(n)]
    try:
        dev = gd.Device(arg)
    except (TypeError, ValueError) as exc:
        parser.error(f"--device {arg!r}: {exc}; use cpu, cuda:N or all")
    if dev.type == "cuda" and dev.index >= n:
        parser.error(f"--device {arg}: this machine has {n} GPU(s){'' if n else ' (' + _cuda_reason() + ')'}")
    return [str(dev)]


def _cuda_reason() -> str:
    cuda = gd.build_info().get("cuda") or {}
    return str(cuda.get("reason") or "no GPU found")


def run_cli(argv: list[str] | None = None) -> int:
    """`python -m gpudev bench ...`; returns the exit status.

    FAIL verdicts do not change the status: they are measurements on a possibly busy
    machine, to be read, not a test. A row that raised (ERROR) makes the status 1."""
    parser = build_parser()
    args = parser.parse_args(argv)
    peers = [p.strip() for p in args.vs.split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        parser.error(f"--vs: unknown peer(s) {', '.join(unknown)}; choose from {', '.join(PEERS)}")
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    devices = _devices(args.device, parser)
    peak = args.peak_gflops if args.peak_gflops is not None else _env_float("GPUDEV_PEAK_GFLOPS")
    gpu_peak = args.gpu_peak_tflops if args.gpu_peak_tflops is not None else _env_float("GPUDEV_GPU_PEAK_TFLOPS")
    row_filter = [r.strip() for r in args.rows.split(",")] if args.rows else None

    setup, results = run(devices, peers, args.quick, args.repeat, row_filter, peak, gpu_peak)
    shown = [p for p in PEERS if any(p in r.median for r in results)]
    print(setup_text(setup))
    print()
    print(format_table(results, shown))
    counts = {v: sum(r.verdict == v for r in results) for v in ("PASS", "FAIL", "INFO", "ERROR")}
    summary = f"{counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['INFO']} INFO"
    print("\n" + summary + (f", {counts['ERROR']} ERROR" if counts["ERROR"] else ""))
    if args.json:
        document = {"setup": setup, "rows": [dataclasses.asdict(r) for r in results]}
        with open(args.json, "w") as f:
            json.dump(_json_safe(document), f, indent=1, allow_nan=False)
        print(f"raw times written to {args.json}", file=sys.stderr)
    return 1 if counts["ERROR"] else 0


def _json_safe(obj: Any) -> Any:
    """obj with NaN and infinities as None (JSON has no such numbers) and tuples as lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj
