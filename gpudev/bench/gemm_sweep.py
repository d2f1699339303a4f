"""The matrix-product sweep: float32 products up to 1e7 FLOP (and a few larger), gpudev on its
default thread count against one single-threaded OpenBLAS call (gpudev on one thread runs
exactly that call), NumPy beside them, in alternating blocks in one process.

    python -m gpudev.bench.gemm_sweep            # quiet
    python -m gpudev.bench.gemm_sweep --load 2   # with 2 busy processes
    python -m gpudev.bench.gemm_sweep --conv     # only a convolution's calls

A ratio above 1 means gpudev on all threads took longer than one OpenBLAS thread; "p90" is
the ratio of the 90th percentiles of single calls, where a stall for a descheduled thread
shows first.

A convolution does not call its products one image at a time: gpudev/nn/_conv.py makes one
call per batch chunk, with the weights broadcast over the images and the output gradient read
through a transposed view, so gpudev hands the images out whole to its threads instead of
cutting one product into panels. The second table (``--conv``: only that one) times those calls
as the layers make them (CONV_PRODUCTS), NumPy's np.matmul on the same layouts beside them.
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

__all__ = ["CONV_PRODUCTS", "CONV_SHAPES", "SHAPES", "conv_sweep", "sweep"]

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
# The same products as _conv.py calls them, one call per chunk of the batch, timed here as one
# chunk of 128 images for LeNet (on the CPU _conv._chunk now cuts LeNet's batch into chunks of
# 16 images per thread, which these rows do not follow) and 8 for the bench's ResNet row:
# (label, images, m, k, n, layout), each image's product m x k @ k x n.
# "forward": weights (m, k) broadcast @ columns (images, k, n); "weight grad": columns
# (images, m, k) @ output gradient (images, n, k) seen transposed; "input grad": weights
# (k, m) seen transposed @ output gradient (images, k, n).
CONV_PRODUCTS = [("LeNet conv1 forward", 128, 6, 25, 784, "forward"),
                 ("LeNet conv1 weight grad", 128, 25, 784, 6, "weight grad"),
                 ("LeNet conv2 forward", 128, 16, 150, 100, "forward"),
                 ("LeNet conv2 weight grad", 128, 150, 100, 16, "weight grad"),
                 ("LeNet conv2 input grad", 128, 150, 16, 100, "input grad"),
                 ("ResNet 3x3 forward", 8, 64, 576, 3136, "forward"),
                 ("ResNet 3x3 weight grad", 8, 576, 3136, 64, "weight grad"),
                 ("ResNet 3x3 input grad", 8, 576, 64, 3136, "input grad")]


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


def _alternate(gd_call: Callable[[], object], np_call: Callable[[], object], calls: int,
               blocks: int) -> dict[str, list[float]]:
    """Every call's seconds for gpudev (default threads), gpudev on one thread and NumPy, taken
    in `blocks` alternating blocks."""
    threads = gd.get_num_threads()
    t: dict[str, list[float]] = {"gpudev": [], "one thread": [], "numpy": []}
    try:
        for _ in range(blocks):
            for name in t:
                gd.set_num_threads(1 if name == "one thread" else threads)
                f = np_call if name == "numpy" else gd_call
                _warm_up(f)
                t[name] += _times(f, calls)
                # NumPy's OpenBLAS threads spin ~0.1 s after its last call and would take
                # the core gpudev's worker needs in the next block; gpudev's spin is shorter
                time.sleep(BLAS_SETTLE if name == "numpy" else 0.001)
    finally:
        gd.set_num_threads(threads)
    return t


def _calls(flop: float) -> int:
    return max(4, min(100, int(6e8 / flop)))


def sweep(shapes: list[tuple[int, int, int]], blocks: int = 5) -> list[dict]:
    """Per shape (m, k, n): every call's seconds of one m x k @ k x n product for gpudev
    (default threads), gpudev on one thread and NumPy, taken in `blocks` alternating blocks."""
    rows = []
    for m, k, n in shapes:
        a_np = np.random.default_rng(0).random((m, k), dtype=np.float32)
        b_np = np.random.default_rng(1).random((k, n), dtype=np.float32)
        a, b = gd.array(a_np), gd.array(b_np)
        flop = 2.0 * m * n * k
        t = _alternate(lambda: a @ b, lambda: a_np @ b_np, _calls(flop), blocks)
        rows.append({"shape": (m, k, n), "flop": flop, "times": t})
    return rows


def _conv_operands(images: int, m: int, k: int, n: int, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """NumPy operands of one CONV_PRODUCTS call, laid out (views included) as _conv.py's."""
    rng = np.random.default_rng(0)
    if layout == "forward":
        return rng.random((m, k), dtype=np.float32), rng.random((images, k, n), dtype=np.float32)
    if layout == "weight grad":
        return rng.random((images, m, k), dtype=np.float32), rng.random((images, n, k), dtype=np.float32)
    if layout == "input grad":
        return rng.random((k, m), dtype=np.float32), rng.random((images, k, n), dtype=np.float32)
    raise ValueError(f"gemm_sweep: unknown convolution product layout {layout!r}; use 'forward', "
                     f"'weight grad' or 'input grad'")


def conv_sweep(products: list[tuple[str, int, int, int, int, str]] = CONV_PRODUCTS, blocks: int = 5) -> list[dict]:
    """Per entry of CONV_PRODUCTS: every call's seconds of the batched call, as sweep's."""
    rows = []
    for label, images, m, k, n, layout in products:
        a_np, b_np = _conv_operands(images, m, k, n, layout)
        a, b = gd.array(a_np), gd.array(b_np)
        if layout == "weight grad":  # the output gradient seen transposed: a view, no copy
            b_np, b = b_np.swapaxes(1, 2), b.swapaxes(1, 2)
        elif layout == "input grad":
            a_np, a = a_np.T, a.T
        flop = 2.0 * images * m * n * k
        t = _alternate(lambda: a @ b, lambda: np.matmul(a_np, b_np), _calls(flop), blocks)
        rows.append({"shape": (m, k, n), "label": label, "images": images, "flop": flop, "times": t})
    return rows


def _p90(x: list[float]) -> float:
    return sorted(x)[int(0.9 * (len(x) - 1))]


def _table(rows: list[dict], first: str) -> None:
    print(f"{first:>40} {'FLOP':>8} {'1 thread':>10} {'gd/1thr':>8} {'p90':>6} {'np/1thr':>8}")
    for r in rows:
        t = r["times"]
        one = statistics.median(t["one thread"])
        shape = "x".join(map(str, r["shape"]))
        name = f"{r['label']} {r['images']}x({shape})" if "label" in r else shape
        print(f"{name:>40} {r['flop']:8.1e} {one * 1e6:8.0f}us "
              f"{statistics.median(t['gpudev']) / one:8.2f} {_p90(t['gpudev']) / _p90(t['one thread']):6.2f} "
              f"{statistics.median(t['numpy']) / one:8.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpudev.bench.gemm_sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--load", type=int, default=0, help="busy processes to run meanwhile")
    p.add_argument("--blocks", type=int, default=5, help="alternating blocks of calls per shape")
    p.add_argument("--conv", action="store_true",
                   help="only a convolution's products, batched as its layers call them (CONV_PRODUCTS)")
    args = p.parse_args(argv)
    before = load_average()
    with busy_processes(args.load):
        rows = [] if args.conv else sweep(SHAPES, args.blocks)
        conv_rows = conv_sweep(CONV_PRODUCTS, args.blocks)
        after = load_average()
    print(f"{args.load} busy processes, {gd.get_num_threads()} threads; load average "
          f"{before[0] if before else float('nan'):.2f} before, {after[0] if after else float('nan'):.2f} after")
    if rows:
        _table(rows, "m x k x n")
        print()
    _table(conv_rows, "convolution call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
