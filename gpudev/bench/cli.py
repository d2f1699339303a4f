"""``python -m gpudev bench``: the options, the devices to run on, and the printed output.

    python -m gpudev bench --quick
    python -m gpudev bench --vs numpy --device cpu --json bench.json
    python -m gpudev bench --device cpu --load 2     # with 2 busy processes on the machine
    python -m gpudev bench --device cpu --rows epoch --runs 3   # three whole runs, each recorded
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import gpudev as gd

from .._devices import all_devices, device_label, gpus_here, is_missing
from .load import busy_processes, load_average
from .peers import PEERS
from .report import document, format_table, setup_text
from .runner import run

__all__ = ["build_parser", "run_cli"]


def _env_float(name: str) -> float | None:
    """The number in environment variable `name`, None when it is unset or empty."""
    raw = os.environ.get(name)
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"bench: {name}={raw!r} is not a number; e.g. {name}=230") from None


def build_parser() -> argparse.ArgumentParser:
    """The options of ``python -m gpudev bench``."""
    p = argparse.ArgumentParser(
        prog="python -m gpudev bench",
        description="Time gpudev against NumPy, PyTorch and CuPy in one process and check the targets.",
    )
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer iterations (well under a minute)")
    p.add_argument("--vs", default="numpy,torch,cupy", help="peers to compare with, comma-separated (default: all installed)")
    p.add_argument("--device", default="all", help="cpu, cuda, cuda:N or all (default: the CPU and every GPU)")
    p.add_argument("--json", metavar="FILE", help="write every raw time to FILE as JSON")
    p.add_argument("--repeat", type=int, default=None,
                   help="repeats per row; the median is reported (default 7, or 11 with --load)")
    p.add_argument("--load", "--busy", type=int, default=0, metavar="N",
                   help="run with N busy processes (started and stopped by the bench), as on a laptop or "
                        "shared server where other programs keep the cores busy; e.g. one per core")
    p.add_argument("--runs", type=int, default=1,
                   help="run the whole bench this many times in a row and print and record every run "
                        "(not the best), to see how much the verdicts move between runs")
    p.add_argument("--rows", help="only rows whose name contains one of these, comma-separated (e.g. 'sgemm,sum')")
    p.add_argument("--peak-gflops", type=float, default=None,
                   help="the CPU's FP32 peak for the %% of peak column (default: $GPUDEV_PEAK_GFLOPS)")
    p.add_argument("--gpu-peak-tflops", type=float, default=None,
                   help="the GPU's FP32 peak (default: $GPUDEV_GPU_PEAK_TFLOPS)")
    return p


# The bench measures speed, which an emulated GPU (GPUDEV_EMULATE_GPUS) does not have: its
# times are the CPU's, so it is left out and said to be.
EMULATED_NOTE = ("{devices}: emulated GPUs (GPUDEV_EMULATE_GPUS), left out: their times would be CPU "
                 "times, not GPU speed; the bench times real GPUs only")


def _devices(arg: str, parser: argparse.ArgumentParser) -> list[str]:
    """The --device choice as device strings: one device, or 'all' for the CPU and every GPU
    (emulated GPUs left out, with a note)."""
    if arg == "all":
        fake = [device_label(d) for d in all_devices() if d.emulated]
        if fake:
            print(EMULATED_NOTE.format(devices=", ".join(fake)))
        return [str(d) for d in all_devices() if not d.emulated]
    try:
        dev = gd.Device(arg)
    except (TypeError, ValueError) as exc:
        parser.error(f"--device {arg!r}: {exc}; use cpu, cuda:N or all")
    if is_missing(dev):
        parser.error(f"--device {arg}: {gpus_here()}")
    if dev.emulated:
        parser.error(f"--device {arg}: " + EMULATED_NOTE.format(devices=device_label(dev)) + "; use --device cpu, or "
                     "unset GPUDEV_EMULATE_GPUS on a machine with a GPU")
    return [str(dev)]


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
    if args.repeat is None:
        args.repeat = 11 if args.load else 7
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    if args.load < 0:
        parser.error(f"--load must be >= 0 busy processes, got {args.load}")
    if args.runs < 1:
        parser.error(f"--runs must be >= 1, got {args.runs}")
    devices = _devices(args.device, parser)
    peak = args.peak_gflops if args.peak_gflops is not None else _env_float("GPUDEV_PEAK_GFLOPS")
    gpu_peak = args.gpu_peak_tflops if args.gpu_peak_tflops is not None else _env_float("GPUDEV_GPU_PEAK_TFLOPS")
    row_filter = [r.strip() for r in args.rows.split(",")] if args.rows else None

    documents, errors = [], 0
    for k in range(args.runs):
        if args.runs > 1:
            print(f"{'' if k == 0 else chr(10)}run {k + 1} of {args.runs}")
        before = load_average()
        with busy_processes(args.load):
            setup, results = run(devices, peers, args.quick, args.repeat, row_filter, peak, gpu_peak, args.load)
            after = load_average()
        setup["busy_processes"] = args.load
        setup["load_average"] = {"before": before, "after": after}
        errors += _print_run(setup, results)
        documents.append(document(setup, results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(documents[0] if args.runs == 1 else {"runs": documents}, f, indent=1, allow_nan=False)
        print(f"raw times written to {args.json}", file=sys.stderr)
    return 1 if errors else 0


def _print_run(setup: dict, results: list) -> int:
    """Prints one run's setup, table and verdict counts; returns its ERROR count."""
    shown = [p for p in (*PEERS, "timeit") if any(p in r.median for r in results)]
    print(setup_text(setup))
    print()
    print(format_table(results, shown))
    counts = {v: sum(r.verdict == v for r in results) for v in ("PASS", "FAIL", "INFO", "ERROR")}
    summary = f"{counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['INFO']} INFO"
    print("\n" + summary + (f", {counts['ERROR']} ERROR" if counts["ERROR"] else ""))
    return counts["ERROR"]
