"""What a run of the exercises leaves in its folder: results.json (every row and raw time)
and report.md (the machine, then each exercise's table, conclusion, notes and plot).

    >>> from gpudev import exercises as ex
    >>> path = write_report("/tmp", ex.run(only=[5], quick=True), {}, {}, machine(), True, {}, 1.0)
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import numpy as np

import gpudev as gd

from .._devices import all_devices, device_label
from .._format import format_gib, jsonable
from .measure import device_meta
from .result import Result

__all__ = ["exercise_lines", "load_average", "machine", "machine_text", "report_text", "write_report", "write_results"]


def machine() -> dict[str, Any]:
    """How gpudev was built, every device's info(), and the Python and NumPy versions."""
    return {"build": jsonable(gd.build_info()), "devices": device_meta(all_devices()),
            "python": sys.version.split()[0], "numpy": np.__version__, "load": {"start": load_average()}}


def load_average() -> float | None:
    """The 1-minute load average (None where the system has none, as on Windows): the figures
    of a report are its machine's under that load, so the report names it."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def machine_text(machine: dict[str, Any]) -> str:
    """The machine as a Markdown list: build, CPU, versions, then each GPU (or why none)."""
    b = machine["build"]
    cpu = machine["devices"].get("cpu", {})
    lines = [f"- gpudev {b['version']}, compiler {b['compiler']}, SIMD {b['simd']}, "
             f"{b['blas']['name']} {b['blas']['version']} ({b['blas']['threads']} threads)",
             f"- CPU: {cpu.get('model', '?')}, {cpu.get('cores', '?')} cores",
             f"- Python {machine['python']}, NumPy {machine['numpy']}"]
    load = machine.get("load", {})
    if load.get("start") is not None:
        lines.append(f"- load average (1 min): {load['start']:.2f} when the run began, "
                     f"{load['end'] if load.get('end') is not None else load['start']:.2f} when it ended: every figure below was "
                     "measured under that load")
    cuda = b["cuda"]
    gpus = {k: v for k, v in machine["devices"].items() if k != "cpu"}
    fake = [k for k, v in gpus.items() if v.get("emulated")]
    if gpus:
        for k, v in gpus.items():
            mem = v.get("total_memory")
            mem_text = f", {format_gib(mem, 0)}" if isinstance(mem, (int, float)) else ""
            lines.append(f"- {device_label(k, fake)}: {v.get('name', '?')}{mem_text}")
        lines.append(f"- CUDA runtime {cuda.get('runtime_version', '?')}, "
                     f"driver {cuda.get('driver_version', '?')}")
    else:
        lines.append(f"- no GPU: {cuda.get('reason') or 'none found'}")
    return "\n".join(lines)


def write_results(out: str, payload: dict[str, Any]) -> str:
    """`payload` as `out`/results.json (strict JSON: no NaN); returns the path."""
    path = os.path.join(out, "results.json")
    with open(path, "w") as f:
        json.dump(payload, f, indent=1, allow_nan=False)
    return path


def exercise_lines(res: Result, plot: str | None) -> list[str]:
    """One exercise's section of report.md: question, table, conclusion, notes and plot."""
    lines = [f"## Exercise {res.number}: {res.title}", "", f"*{res.question}*", ""]
    if res.skipped:
        lines += [f"**Skipped:** {res.skipped}", ""]
    lines += [res.table(markdown=True), "", res.conclusion, ""]
    lines += [f"- note: {n}" for n in res.notes]
    if res.notes:
        lines.append("")
    if plot is not None:
        lines += [f"![exercise {res.number}]({plot})", ""]
    return lines


def report_text(results: list[Result], plots: dict[int, str], extra_plots: dict[str, str],
                machine: dict[str, Any], quick: bool, errors: dict[int, str], seconds: float, run_at: str) -> str:
    """The text of report.md (a pure function of its arguments, so the referee can write it
    again from results.json and compare)."""
    lines = ["# gpudev: the GPUs chapter's exercises, measured", "",
             f"Run {run_at}, {'quick sizes' if quick else 'the book sizes'}, {seconds:.0f} s in all.", "",
             "## Machine", "", machine_text(machine), ""]
    for res in results:
        lines += exercise_lines(res, plots.get(res.number))
    for number, message in errors.items():
        lines += [f"## Exercise {number}: failed", "", "```", message, "```", ""]
    for title, name in extra_plots.items():
        lines += [f"## {title}", "", f"![{title}]({name})", ""]
    return "\n".join(lines)


def write_report(out: str, results: list[Result], plots: dict[int, str], extra_plots: dict[str, str],
                 machine: dict[str, Any], quick: bool, errors: dict[int, str], seconds: float,
                 run_at: str | None = None) -> str:
    """`out`/report.md; `plots` names each exercise's PNG, `extra_plots` {title: PNG} the
    figures of several exercises. Returns the path."""
    run_at = run_at or time.strftime("%Y-%m-%d %H:%M:%S")
    path = os.path.join(out, "report.md")
    with open(path, "w") as f:
        f.write(report_text(results, plots, extra_plots, machine, quick, errors, seconds, run_at))
    return path
