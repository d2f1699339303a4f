"""The exercises of the "GPUs" chapter of *Dive into Deep Learning*, measured on this machine.

Each function runs one exercise on the devices there are and returns a :class:`Result`: the
measured rows (every raw time included), checks that must hold, a conclusion written from
the numbers, why a part was skipped (e.g. no second GPU), and ``.table()`` / ``.plot()``.

1. :func:`matmul_vs_small`   a big matrix product vs tiny tasks on each device, timed right
2. :func:`params_on_device`  a 10-512-10 model on a device: save, load onto CPU and device
3. :func:`norm_logging`      logging a norm with ``.item()`` each step vs keeping it on the device
4. :func:`two_devices`       two products on two GPUs vs one; overlap of GPU and host work
5. :func:`small_op_sweep`    one ``b += b`` per size: where the data starts to cost, where a GPU wins
6. :func:`asynchrony`        a loop of products: when it returns, and when its results are ready
7. :func:`latency`           the book's latency table measured here: launch, copies, caches, memory
8. :func:`k_devices`         LeNet trained on k devices by hand: split, allreduce, step

``python -m gpudev exercises`` runs them all (see :func:`run_cli`).

    >>> from gpudev import exercises as ex
    >>> res = ex.small_op_sweep(sizes=(4, 64))
    >>> print(res.table())       # doctest: +SKIP
    >>> res.conclusion           # doctest: +SKIP
    >>> fig = res.plot("sweep.png")

The modules, in reading order:

    compare         every "A vs B" of a conclusion: the interval of a ratio, noisy repeats
    result          Result: rows, checks, conclusion; its table, JSON and figure lookup
    measure         what every exercise shares: devices, argument checks, timing statistics
    peaks           the roofs: peak GFLOP/s, and GB/s per cache level and main memory
    ex1_matmul ... ex8_k_devices
                    one module per exercise: its measurement, its conclusion and its figure
    roofline_chart  achieved GFLOP/s of several exercises under the measured roofs
    catalog         the exercises by number, their sizes (settings) and run()
    report          results.json and report.md
    cli             python -m gpudev exercises
"""

from __future__ import annotations

from .._devices import DeviceLike
from .catalog import EXERCISES, run, settings
from .cli import build_parser, run_cli
from .ex1_matmul import matmul_vs_small
from .ex2_params import params_on_device
from .ex3_norm import norm_logging
from .ex4_two_devices import two_devices
from .ex5_sweep import small_op_sweep
from .ex6_async import asynchrony
from .ex7_latency import latency
from .ex8_k_devices import k_devices
from .result import TIMING_FIELDS, Result, plot_result
from .roofline_chart import roofline

__all__ = [
    "Result", "matmul_vs_small", "params_on_device", "norm_logging", "two_devices",
    "small_op_sweep", "settings", "run", "run_cli", "EXERCISES", "plot_result", "roofline",
    "asynchrony",
    "latency",
    "k_devices",
]
