"""The matrix-product sweep: float32 products up to 1e7 FLOP (and a few larger), gpudev on its
default thread count against one single-threaded OpenBLAS call (gpudev on one thread runs
exactly that call), NumPy beside them, in alternating blocks in one process.

    python -m gpudev.bench.gemm_sweep            # quiet
    python -m gpudev.bench.gemm_sweep --load 2   # with 2 busy processes

A ratio above 1 means gpudev on all threads took longer than one OpenBLAS thread; "p90" is
the ratio of the 90th percentiles of single calls, where a stall for a descheduled thread
shows first.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

import gpudev as gd

from ..timing import Work, calls_of, run_rounds
from .load import busy_processes, load_average
from .model import BLAS_SETTLE

__all__ = ["CONV_SHAPES", "SHAPES", "sweep"]

# (m, k, n): the d2l layers' products (784-256-10, batch 256) forward and backward, squares,
# and thin products on either side of the size where gpudev starts to split (threads.h)
SHAPES = [(64, 64, 64), (100, 100, 100), (128, 128, 128), (160, 160, 160), (170, 170, 170),
          (256, 784, 10), (10, 784, 256), (784, 256, 10), (256, 10, 784), (256, 256, 10),
          (256, 784, 24), (512, 784, 10), (1000, 100, 50), (50, 100, 1000),
          (256, 784, 256), (256, 256, 256), (500, 500, 500), (1000, 1000, 1000)]
# A convolution's products per image (gpudev/nn/_conv.py, im2col): LeNet's two layers forward
# (weights @ columns), weight gradient (columns @ output gradient.T) and input gradient
# (weights.T @ output gradient), and a 64-channel 3x3 layer at 56x56 (ResNet's first stage)
CONV_SHAPES = [(6, 25, 784), (16, 150, 100), (25, 784, 6), (150, 100, 16), (150, 16, 100),
               (64, 576, 3136), (576, 3136, 64), (576, 64, 3136)]
SHAPES += CONV_SHAPES


def _times(f: Callable[[], object], calls: int) -> list[float]:
    """The seconds of `calls` calls of f, each timed on its own (batches of one call)."""
    return run_rounds([Work(calls_of(f), n_calls=1)], n_repeat=calls, devices=[], op="gemm_sweep").host_times(0)


def _warm_up(f: Callable[[], object], seconds: float = 0.02) -> None:
    """Calls f for a while first. After set_num_threads a new pool thread starts on the
    caller's core, and on an idle virtual machine it can stay there for milliseconds before
    the scheduler moves it to the idle one (a once-per-change cost, not a product's)."""
    end = time.perf_counter() + seconds
    f()
    while time.perf_counter() < end:
        f()


def sweep(shapes: list[tuple[int, int, int]], blocks: int = 5) -> list[dict]:
    """Per shape: every call's seconds for gpudev (default threads), gpudev on one thread and
    NumPy, taken in `blocks` alternating blocks."""
    threads = gd.get_num_threads()
    rows = []
    for m, k, n in shapes:
        a_np = np.random.default_rng(0).random((m, k), dtype=np.float32)
        b_np = np.random.default_rng(1).random((k, n), dtype=np.float32)
        a, b = gd.array(a_np), gd.array(b_np)
        calls = max(4, min(100, int(6e8 / (2.0 * m * n * k))))
        t: dict[str, list[float]] = {"gpudev": [], "one thread": [], "numpy": []}
        try:
            for _ in range(blocks):
                for name in t:
                    gd.set_num_threads(1 if name == "one thread" else threads)
                    f = (lambda: a_np @ b_np) if name == "numpy" else (lambda: a @ b)
                    _warm_up(f)
                    t[name] += _times(f, calls)
                    # NumPy's OpenBLAS threads spin ~0.1 s after its last call and would take
                    # the core gpudev's worker needs in the next block; gpudev's spin is shorter
                    time.sleep(BLAS_SETTLE if name == "numpy" else 0.001)
        finally:
            gd.set_num_threads(threads)
        rows.append({"shape": (m, k, n), "flop": 2.0 * m * n * k, "times": t})
    return rows


def _p90(x: list[float]) -> float:
    return sorted(x)[int(0.9 * (len(x) - 1))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpudev.bench.gemm_sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--load", type=int, default=0, help="busy processes to run meanwhile")
    p.add_argument("--blocks", type=int, default=5, help="alternating blocks of calls per shape")
    p.add_argument("--conv", action="store_true", help="only a convolution's products (CONV_SHAPES)")
    args = p.parse_args(argv)
    before = load_average()
    with busy_processes(args.load):
        rows = sweep(CONV_SHAPES if args.conv else SHAPES, args.blocks)
        after = load_average()
    print(f"{args.load} busy processes, {gd.get_num_threads()} threads; load average "
          f"{before[0] if before else float('nan'):.2f} before, {after[0] if after else float('nan'):.2f} after")
    print(f"{'m x k x n':>16} {'FLOP':>8} {'1 thread':>10} {'gd/1thr':>8} {'p90':>6} {'np/1thr':>8}")
    for r in rows:
        t = r["times"]
        one = statistics.median(t["one thread"])
        print(f"{'x'.join(map(str, r['shape'])):>16} {r['flop']:8.1e} {one * 1e6:8.0f}us "
              f"{statistics.median(t['gpudev']) / one:8.2f} {_p90(t['gpudev']) / _p90(t['one thread']):6.2f} "
              f"{statistics.median(t['numpy']) / one:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
