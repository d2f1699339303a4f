"""``python -m gpudev bench``: gpudev side by side with NumPy, PyTorch and CuPy, in one process.

Each row runs the same statement with gpudev and with every installed peer on the same data,
alternating peers repeat by repeat, and reports the median of the repeats (7 by default).
Every measurement reads the host clock after synchronizing the device the work ran on (the
peer's own synchronization for PyTorch and CuPy), so all peers are timed the same way. Tiny
operations are timed as a loop of many iterations per repeat and reported per operation.
The verdict column checks gpudev's performance targets: its time against a peer's, its GB/s
against the device-to-device copy bandwidth measured in the same run, and its relative error
against a float64 reference; rows without a target say INFO.

With ``--load N`` the same rows run while N busy processes (started and stopped by the bench)
compete for the cores, as on a laptop or a shared server.

Examples:
    python -m gpudev bench --quick
    python -m gpudev bench --vs numpy --device cpu --json bench.json
    python -m gpudev bench --device cpu --vs numpy --load 2

The modules: model (Row, Impl, Target, RowResult), peers (NumPy, PyTorch, CuPy and their
data), rows_overhead / rows_memory / rows_compute / rows_sized / rows_views (the rows by what
limits them, and the rows on strided views), rows_training (a training step, and d2l's
softmax-regression and MLP epochs on 1 thread and on all), rows_cnn (d2l's LeNet epoch and
conv2d's forward and backward at d2l's shapes), runner (plan, run_row, judge, run), report
(setup line, table, JSON), load (busy processes) and cli.
"""

from __future__ import annotations

from .cli import build_parser, run_cli
from .model import BLAS_SETTLE, MAX_REL_ERR, Impl, Row, RowResult, Target
from .peers import PEERS, Context, RowBuilder, load_peers
from .report import describe_setup, format_table, setup_text
from .rows_compute import batched_rows, sgemm_rows
from .rows_memory import reduction_rows, transfer_rows
from .load import busy_processes, load_average
from .rows_overhead import loop_rows, tiny_rows
from .rows_sized import sized_rows
from .rows_views import view_rows
from .runner import judge, plan, run, run_row

__all__ = ["RowResult", "run", "run_cli"]
