"""The bench's model: a Row runs one statement per peer (an Impl each), a Target decides its
verdict, and a RowResult is what a Row measured.

    >>> impl = Impl(stmt="a + 1", env={"a": 1})
    >>> impl.measure(1000) > 0
    True
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable
from typing import Any

from ..timing import Stopwatch, Work

__all__ = ["BLAS_SETTLE", "MAX_REL_ERR", "Impl", "Row", "RowResult", "Target"]

# The relative error allowed against a float64 reference for float32 sums, means and norms.
MAX_REL_ERR = 1e-7
BLAS_SETTLE = 0.25  # seconds for idle OpenBLAS threads to stop spinning (see Row.settle)


@dataclasses.dataclass
class Impl:
    """One peer's way of running a row: `number` runs of `stmt` per measurement."""

    stmt: str
    env: dict[str, Any]
    setup: str = "pass"
    sync: Callable[[], Any] | None = None  # waits for the peer's queued device work
    value: Callable[[], float] | None = None  # the result, for the error column
    prepare: Callable[[], Any] | None = None  # e.g. make the peer's device current
    # seconds for `number` runs found some other way than timing stmt (e.g. the figure that
    # gd.benchmark reports), for rows that check a measuring tool against timeit
    measure_with: Callable[[int], float] | None = None

    def work(self, number: int, settle: float = 0.0) -> Work:
        """This peer as the measurement loop's Work: `number` runs of `stmt` per batch, compiled
        into a loop as timeit compiles them, timed up to the end of the peer's synchronization;
        each batch after a pause of `settle` seconds (see Row.settle) and the peer's `prepare`."""

        def prepare() -> None:
            if settle:
                time.sleep(settle)
            if self.prepare is not None:
                self.prepare()

        return Work(_statement_loop(self.stmt, self.setup, self.env), n_calls=number, sync=self.sync or _nothing,
                    prepare=prepare, seconds=self.measure_with)

    def measure(self, number: int) -> float:
        """Seconds for `number` runs, up to the end of a synchronization."""
        host, _gpu = Stopwatch(op="bench")(self.work(number), number)
        return host


def _nothing() -> None:
    """The sync of a peer with no queued device work (the CPU's)."""


def _statement_loop(stmt: str, setup: str, env: dict[str, Any]) -> Callable[[int], None]:
    """`setup`, then `n` runs of `stmt`, compiled into one function the way timeit compiles
    them (a tight loop with the statement inline, names looked up in `env`)."""
    src = (f"def inner(_n, _repeat=_repeat):\n    {_indented(setup, 4)}\n"
           f"    for _i in _repeat(None, _n):\n        {_indented(stmt, 8)}\n        pass\n")
    local: dict[str, Any] = {"_repeat": itertools.repeat}
    exec(compile(src, "<bench statement>", "exec"), env, local)  # the bench's own rows, never user input
    return local["inner"]


def _indented(src: str, spaces: int) -> str:
    return src.replace("\n", "\n" + " " * spaces)


@dataclasses.dataclass
class Target:
    """PASS when gpudev's time is at most `max_ratio` times `peer`'s (and at most each
    (peer, max_ratio) of `also`), its relative error at most `max_rel_err`, and its
    throughput at least `min_fraction` of the bandwidth named `bandwidth` (measured earlier
    in the same run); criteria left None are not checked."""

    text: str
    peer: str | None = None
    max_ratio: float | None = None
    also: tuple[tuple[str, float], ...] = ()
    max_rel_err: float | None = None
    bandwidth: str | None = None
    min_fraction: float | None = None


@dataclasses.dataclass
class Row:
    """One line of the bench: a statement per peer, run on the same data, and what to
    compute from the times (GB/s, GFLOP/s, error) and judge them by."""

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
