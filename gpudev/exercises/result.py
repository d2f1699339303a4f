"""What an exercise returns: a :class:`Result` (rows, checks, conclusion) and its formatting.

Each exercise module registers the function that draws its Result with :func:`figure_of`;
``Result.plot()`` and :func:`plot_result` look it up by the exercise's number.

    >>> from gpudev import exercises as ex
    >>> res = ex.small_op_sweep(sizes=(4, 64), iters=50)
    >>> print(res.table())     # doctest: +SKIP
    >>> res.to_dict()["rows"][0]["device"]
    'cpu'
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from .._devices import device_label
from .._format import format_bytes, format_seconds, jsonable
from ..stats import LAUNCH_DOMINATED_S, launch_dominated, noisy

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["TIMING_FIELDS", "Result", "bar_item", "figure_of", "notes_text", "plot_result", "plots_module"]

# Fields every timing row has; each exercise documents its own fields on top of these.
TIMING_FIELDS = {
    "device": "where it ran: 'cpu' or 'cuda:N'",
    "seconds": "median time of one timed unit (the exercise says what a unit is), in seconds",
    "min_s": "fastest repeat, seconds",
    "max_s": "slowest repeat, seconds",
    "std_s": "sample standard deviation of the repeats, seconds (0 for one repeat)",
    "repeats": "how many repeats were timed",
    "calls": "calls timed together in one repeat (gd.benchmark's n_calls); times are per unit",
    "overhead_s": "what the same timing reports per call for an empty callable (None: not measured)",
    "stop": "what ended the repeats: the repeat count, the time budget, or the noise target "
            "(spread under measure.NOISE_TARGET); None where the rounds were counted",
    "clock": "'gpu' (CUDA events), 'host' (perf_counter, ending after a synchronization) "
             "or 'host, unsynchronized' (the wrong way, shown on purpose)",
    "times": "every repeat's time, seconds",
    "demonstration": "True for a row shown on purpose (e.g. a timer that does not wait for the GPU): "
                     "the roofline and the conclusions make no claim from it",
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
        >>> from gpudev.exercises import small_op_sweep
        >>> res = small_op_sweep(sizes=(4, 64), iters=50)
        >>> [r["seconds"] > 0 for r in res.rows]
        [True, True]
        >>> fig = res.plot()
    """

    number: int
    name: str
    title: str
    question: str
    fields: dict[str, str]
    columns: list[tuple[str, str, str]]  # (row key, header, format kind; 'device': named by label())
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
        for note in (self._noisy_note(), self._launch_note(), self._stop_note()):
            if note and note not in self.notes:
                self.notes = [*self.notes, note]

    @property
    def emulated(self) -> set[str]:
        """The emulated GPUs of this run, from ``meta["devices"]`` (a Result read back from
        results.json in another process cannot ask the devices themselves)."""
        return {dev for dev, info in (self.meta.get("devices") or {}).items() if info.get("emulated")}

    def label(self, device: Any) -> str:
        """`device` as people read it: 'cuda:0 (emulated)' for an emulated GPU of this run."""
        return device_label(device, self.emulated)

    def _cell(self, row: dict[str, Any], key: str, kind: str) -> str:
        """One table cell: a 'device' column names its device with :meth:`label`."""
        value = row.get(key)
        return self.label(value) if kind == "device" and value is not None else _format_cell(value, kind)

    def _row_name(self, row: dict[str, Any]) -> str:
        """A row named by its columns before the first time column (device, task, size...)."""
        first_time = next((i for i, (_, _, kind) in enumerate(self.columns) if kind == "time"), 0)
        name = " ".join(self._cell(row, key, kind) for key, _, kind in self.columns[:first_time])
        return name.strip() or "a row"

    def _launch_note(self) -> str | None:
        """'launch-dominated: ...' naming each steady row whose median is under
        stats.LAUNCH_DOMINATED_S: its time is mostly the cost of making the call."""
        short = [self._row_name(r) for r in self.rows
                 if r.get("seconds") and r.get("timing") != "first call" and launch_dominated(r["seconds"])]
        if not short:
            return None
        return (f"launch-dominated (under {format_seconds(LAUNCH_DOMINATED_S)} per call, so the time is "
                f"mostly the cost of making the call, not the work): " + "; ".join(short))

    def _stop_note(self) -> str | None:
        """'repeats ended by: ...': how many rows each limit ended (the noise target, the
        repeat count, the time budget), so a reader knows which rows are as quiet as asked."""
        counts: dict[str, int] = {}
        for r in self.rows:
            stop = r.get("stop")
            if stop:
                kind = ("the noise target" if stop.startswith("spread") else
                        "the repeat limit" if stop.startswith("n_repeat") else "the time budget")
                counts[kind] = counts.get(kind, 0) + 1
        if not counts:
            return None
        return "repeats ended by: " + "; ".join(f"{kind} in {k} row(s)" for kind, k in counts.items())

    def _noisy_note(self) -> str | None:
        """'noisy repeats: ...' naming each row whose slowest repeat is far above its median."""
        flagged = []
        for row in self.rows:
            spread = noisy(row.get("times") or [])
            if spread is not None:
                flagged.append(f"{self._row_name(row)} (slowest {format_seconds(max(row['times']))}, "
                               f"{spread:.1f}x the median {format_seconds(float(np.median(row['times'])))})")
        if not flagged:
            return None
        return ("noisy repeats, the slowest far above the median (a busy machine, or a descheduled "
                "thread): " + "; ".join(flagged))

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return all(c["passed"] for c in self.checks)

    def table(self, markdown: bool = False) -> str:
        """The rows as an aligned text table (or a Markdown one), then the checks."""
        header = [h for _, h, _ in self.columns]
        body = [[self._cell(row, key, kind) for key, _, kind in self.columns] for row in self.rows]
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

    def plot(self, path: str | os.PathLike[str] | None = None) -> Figure:
        """A matplotlib Figure of the rows (saved as PNG to `path` when given)."""
        if plots_module() is None:
            raise ImportError(f"plot: {NO_MATPLOTLIB}")
        fig = plot_result(self)
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-ready values (non-finite floats become None)."""
        return jsonable(dataclasses.asdict(self))

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


# how a table shows a value of each format kind (the third entry of Result.columns); str() otherwise
_CELL_FORMATS: dict[str, Callable[[Any], str]] = {
    "time": format_seconds,
    "ratio": lambda v: f"{v:.3g}x",
    "rate": lambda v: f"{v:.3g}",
    "bytes": format_bytes,
    "pct": lambda v: f"{100 * v:.0f}%",
    "int": lambda v: f"{int(v):,}",
    "bool": lambda v: "yes" if v else "no",
}


def _format_cell(value: Any, kind: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return _CELL_FORMATS.get(kind, str)(value)


# ---------------------------------------------------------------------------------------------
# figures: each exercise module registers the function that draws its Result
# ---------------------------------------------------------------------------------------------

FigureFunction = Callable[[Result], "Figure"]
_FIGURES: dict[int, FigureFunction] = {}

NO_MATPLOTLIB = "matplotlib is not installed; install it with pip install 'gpudev[plots]'"


def figure_of(number: int) -> Callable[[FigureFunction], FigureFunction]:
    """Decorator: the decorated function draws exercise `number`'s Result.

    Example:
        >>> @figure_of(5)
        ... def plot(res: Result) -> Figure: ...
    """

    def register(fn: FigureFunction) -> FigureFunction:
        _FIGURES[number] = fn
        return fn

    return register


def plot_result(res: Result) -> Figure:
    """The figure for one exercise's Result (titles, units and legends included).

    Example:
        >>> from gpudev.exercises import norm_logging
        >>> fig = plot_result(norm_logging(n=20, size=8, repeats=2))
    """
    try:
        figure = _FIGURES[res.number]
    except KeyError:
        raise ValueError(f"plot_result: no figure for exercise {res.number!r} ({res.name}); "
                         f"exercises are numbered 1 to {len(_FIGURES)}") from None
    return figure(res)


def plots_module() -> ModuleType | None:
    """gpudev.plots, or None where matplotlib is missing (the measurements need no plots)."""
    try:
        from gpudev import plots
    except ImportError as exc:
        if exc.name != "matplotlib" and not (exc.name or "").startswith("matplotlib."):
            raise
        return None
    return plots


def bar_item(row: dict[str, Any], group: str, series: str, **extra: Any) -> dict[str, Any]:
    """A timing row as an item of ``plots.bars``: its median with min-max whiskers.

    >>> bar_item({"seconds": 2.0, "min_s": 1.0, "max_s": 3.0}, "sum", "cpu")["median"]
    2.0
    """
    return {"group": group, "series": series, "median": row["seconds"], "min": row["min_s"],
            "max": row["max_s"], **extra}


def notes_text(ax: Any, res: Result) -> None:
    """Why parts were skipped and the notes, in small print at the foot of `ax`'s figure (a
    list of noisy rows is only counted: the report and the table have them)."""
    from gpudev import plots

    lines = ([f"skipped: {res.skipped}"] if res.skipped else [])
    fake = [res.label(d) for d in sorted(res.emulated)]
    if fake:  # before any number of theirs is read as a GPU's
        lines.insert(0, f"{', '.join(fake)}: GPUs of the CPU emulation, whose times are CPU times, "
                        f"not GPU speed")
    for n_ in res.notes:
        if n_.startswith("noisy repeats"):
            n_ = f"noisy repeats in {n_.count('(slowest ')} row(s): the report lists them"
        lines.append(f"note: {n_}")
    if lines:  # at the foot of the figure, where the layout keeps room for it under the tick labels
        # about 17 characters of 7-point text per inch of figure
        width = int(17 * ax.figure.get_figwidth())
        ax.figure.supxlabel("\n".join(plots.wrap(l_, width) for l_ in lines), x=0.01, ha="left",
                            fontsize=7, color="0.3")
