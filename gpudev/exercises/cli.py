"""``python -m gpudev exercises``: run the exercises, print each table and conclusion, and
write results.json, report.md and one plot per exercise into a folder.

    python -m gpudev exercises --quick --only 1,3 --device cpu --out results
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from types import ModuleType
from typing import Any

import gpudev as gd

from .._devices import all_devices, gpus_here, present_and_missing
from .._format import jsonable
from .catalog import EXERCISES, device_kwargs, quick_from_env, settings
from .measure import set_progress
from .report import load_average, machine, write_report, write_results
from .result import NO_MATPLOTLIB, Result, plots_module
from .roofline_chart import plot_data, roofline

ROOFLINE_TITLE = "Achieved GFLOP/s under the best rate of the same workload (roofline)"

__all__ = ["build_parser", "run_cli"]


def build_parser() -> argparse.ArgumentParser:
    """The options of ``python -m gpudev exercises``."""
    p = argparse.ArgumentParser(
        prog="python -m gpudev exercises",
        description="Run the GPUs chapter's exercises on this machine: tables and conclusions on "
                    "stdout, results.json, report.md and one plot per exercise in --out.")
    p.add_argument("--quick", action="store_true",
                   help="small sizes: the whole run takes well under a minute (also GPUDEV_QUICK=1)")
    p.add_argument("--only", metavar="LIST", help="exercise numbers, comma-separated (e.g. 1,3)")
    p.add_argument("--device", metavar="DEV", default="all",
                   help="cpu, cuda:N, all, or a comma list (default: all = the CPU and every GPU)")
    p.add_argument("--out", metavar="DIR", default="results", help="output folder (default: results)")
    return p


def _parse_only(text: str, parser: argparse.ArgumentParser) -> list[int]:
    try:
        numbers = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        parser.error(f"--only {text!r}: expected exercise numbers separated by commas, e.g. --only 1,3")
    bad = [k for k in numbers if k not in EXERCISES]
    if bad or not numbers:
        parser.error(f"--only {text!r}: exercises are numbered 1 to {max(EXERCISES)}")
    return numbers


def _parse_devices(text: str, parser: argparse.ArgumentParser) -> list[gd.Device] | None:
    """The --device list; None for 'all', so each exercise uses (and notes) what is here."""
    if text.strip() == "all":
        return None
    out: list[gd.Device] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        if item == "all":
            candidates = all_devices()
        else:
            try:
                candidates = [gd.Device(item)]
            except (TypeError, ValueError) as exc:
                parser.error(f"--device {item!r}: {exc}; use cpu, cuda:N, all, or a comma list")
        present, missing = present_and_missing(candidates)
        if missing:
            parser.error(f"--device {item}: {missing[0]} is not available: {gpus_here()}")
        out += [dev for dev in present if dev not in out]
    if not out:
        parser.error("--device: no device given; use cpu, cuda:N or all")
    return out


class _Progress:
    """Which measurement runs now, on stderr: on a terminal a tqdm counter that moves with
    each measurement, elsewhere (a log, a pipe, a notebook) one plain line per measurement."""

    def __init__(self, total: int) -> None:
        self.total, self.started, self.bar = total, time.perf_counter(), None
        if sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(file=sys.stderr, unit=" measurements", leave=False, dynamic_ncols=True,
                                bar_format="{desc} {n_fmt}{unit} [{elapsed}] {postfix}")

    def exercise(self, k: int, i: int) -> None:
        if self.bar is not None:
            self.bar.set_description(f"exercise {k} ({i}/{self.total}):")

    def step(self, label: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(label, refresh=False)
            self.bar.update()
        else:
            print(f"[{time.perf_counter() - self.started:5.1f} s] exercise {label}", file=sys.stderr, flush=True)

    def clear(self) -> None:
        """Before printing a result: the counter's line must not mix with it."""
        if self.bar is not None:
            self.bar.clear()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _run_each(numbers: list[int], kwargs: dict[int, dict[str, Any]], devices: list[gd.Device] | None,
              out: str, plots: ModuleType | None) -> tuple[list[Result], dict[int, str], dict[int, str]]:
    """Run the exercises one by one, printing each Result and saving its plot; returns the
    results, {number: error message} of those that raised, and {number: PNG file name}."""
    results: list[Result] = []
    errors: dict[int, str] = {}
    plot_files: dict[int, str] = {}
    progress = _Progress(len(numbers))
    set_progress(progress.step)
    try:
        for i, k in enumerate(numbers, start=1):
            progress.exercise(k, i)
            try:
                res = EXERCISES[k](**kwargs[k], **device_kwargs(k, devices))
            except Exception as exc:  # one failing exercise must not hide the others' results
                errors[k] = f"{type(exc).__name__}: {exc}"
                continue
            results.append(res)
            if plots is not None:
                name = f"exercise{k}_{res.name}.png"
                res.plot(os.path.join(out, name))
                plot_files[k] = name
            progress.clear()
            print(res, end="\n\n", flush=True)
    finally:
        set_progress(None)
        progress.close()
    return results, errors, plot_files


def run_cli(argv: list[str] | None = None) -> int:
    """``python -m gpudev exercises [--quick] [--only 1,3] [--device ...] [--out DIR]``.

    Prints each exercise's table and conclusion, writes DIR/results.json (every row and raw
    time), DIR/report.md and one PNG per exercise (plus roofline.png). Returns 0 when every
    exercise ran and every check held, 1 otherwise.

    Example:
        >>> run_cli(["--quick", "--only", "5", "--out", "/tmp/res"])  # doctest: +SKIP
        0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["exercises"]:
        argv = argv[1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    numbers = _parse_only(args.only, parser) if args.only else sorted(EXERCISES)
    devices = _parse_devices(args.device, parser)
    quick = args.quick or quick_from_env()
    os.makedirs(args.out, exist_ok=True)
    plots = plots_module()
    if plots is None:
        print(f"note: no plots: {NO_MATPLOTLIB}", file=sys.stderr)

    here = machine()
    kwargs = settings(quick)
    started = time.perf_counter()
    results, errors, plot_files = _run_each(numbers, kwargs, devices, args.out, plots)
    extra: dict[str, str] = {}
    if plots is not None and any(r.meta.get("peaks") for r in results):
        roofline(results).savefig(os.path.join(args.out, "roofline.png"), dpi=110)
        extra[ROOFLINE_TITLE] = "roofline.png"
    elapsed = time.perf_counter() - started
    here["load"]["end"] = load_average()
    used = devices if devices is not None else all_devices()
    run_at = time.strftime("%Y-%m-%d %H:%M:%S")
    # everything the report says comes from here: the referee writes the report again from it
    payload = {"machine": here, "quick": quick, "devices": [str(d) for d in used],
               "settings": jsonable(kwargs), "seconds": elapsed, "run_at": run_at,
               "results": [r.to_dict() for r in results], "errors": errors,
               "plots": {str(k): v for k, v in plot_files.items()}, "extra_plots": extra,
               "plot_data": {"roofline": jsonable(plot_data(results))}}
    json_path = write_results(args.out, payload)
    report_path = write_report(args.out, results, plot_files, extra, here, quick, errors, elapsed, run_at)
    return _summary(results, errors, len(plot_files) + len(extra), json_path, report_path, elapsed)


def _summary(results: list[Result], errors: dict[int, str], plot_count: int, json_path: str,
             report_path: str, elapsed: float) -> int:
    """Print what failed (to stderr) and what was written; the exit status."""
    for k, message in errors.items():
        print(f"exercise {k} FAILED: {message}", file=sys.stderr)
    failed = [f"exercise {r.number}: {c['check']}" for r in results for c in r.checks if not c["passed"]]
    for f_ in failed:
        print(f"check FAILED: {f_}", file=sys.stderr)
    print(f"wrote {json_path}, {report_path} and {plot_count} plots in {elapsed:.0f} s")
    return 1 if errors or failed else 0
