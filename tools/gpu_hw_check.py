"""gpu_hw_check.py - what only a real GPU can show about gpudev: the checks (PASS, FAIL or SKIP
each) and the bench rows that give the manual's GPU numbers (docs/guides/gpu.md) beside their datasheet figures.
The items live in tools/gpu_hw/ (numerics.py and checks.py: the checks, bench.py: the rows).

    python3 tools/gpu_hw_check.py                   # the checks, from the repository root after an in-place build
    python3 tools/gpu_hw_check.py --part bench      # the bench rows (about 30 s on an H200)
    python3 tools/gpu_hw_check.py --quick           # without the checks marked full (tools/gpu_check.sh --quick)
    python3 tools/gpu_hw_check.py --list            # the items' names (no GPU needed)
    python3 tools/gpu_hw_check.py --only argmax     # the items whose name contains a word
    python3 tools/gpu_hw_check.py --small           # sizes cut to seconds, for an emulated GPU

Each item runs whether or not the others passed. With GPU_LOG_DIR set, the results so far go
to $GPU_LOG_DIR/checks.json or bench.json after every item (and into the archive
$GPU_CHECK_ARCHIVE, when tools/gpu_check.sh runs it). The checks need ~40 GB of GPU memory.

Exit status: 0 when nothing failed (also on a machine without a GPU: every item is then
skipped, and the reason printed), 1 otherwise; 2 for bad arguments (an --only that names no
item).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tools/, for gpu_hw

import gpudev as gd  # noqa: E402
import gpu_hw as hw  # noqa: E402
# importing registers their items, in this order: the new checks first, then the older ones
from gpu_hw import numerics, checks, bench  # noqa: E402,F401,I001


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="gpu_hw_check.py", description="What only a real GPU can show about gpudev.")
    p.add_argument("--part", choices=("checks", "bench"), default="checks",
                   help="the checks (default) or the bench rows")
    p.add_argument("--list", action="store_true", help="print the items' names and stop (no GPU needed)")
    p.add_argument("--only", action="append", default=[], metavar="WORD",
                   help="run only the items whose name contains WORD (case-insensitive; may be repeated)")
    p.add_argument("--quick", action="store_true", help="leave out the checks marked full")
    p.add_argument("--small", action="store_true", help="sizes cut to seconds of an emulated GPU")
    p.add_argument("--device", default="cuda:0", help="the device (cuda:0; cpu runs what runs there)")
    p.add_argument("--choice-figures", action="store_true", help=argparse.SUPPRESS)  # bench.py's other process
    return p.parse_args(argv)


def selected(args: argparse.Namespace) -> list[hw.Item]:
    words = [w.lower() for w in args.only]
    return [i for i in hw.ITEMS if i.part == args.part and not (args.quick and i.full_only)
            and (not words or any(w in i.name.lower() for w in words))]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    hw.use(hw.SMALL if args.small else hw.FULL, args.device)
    if args.choice_figures:
        print(json.dumps(bench.choice_figures()), flush=True)
        return 0
    chosen = selected(args)
    if not chosen:
        print(f"gpu_hw_check.py: no {args.part} item's name contains {' or '.join(map(repr, args.only))}; "
              "see --list for the names", file=sys.stderr)
        return 2
    if args.list:
        print("\n".join(i.name for i in chosen))
        return 0
    if gd.Device(args.device).type == "cuda":
        if gd.num_gpus() == 0:
            print("SKIP every item: no GPU:", gd.build_info()["cuda"]["reason"], flush=True)
            return 0
        print(json.dumps(gd.build_info()["cuda"]), flush=True)
        print(json.dumps(gd.Device(args.device).info()), flush=True)
    hw.pack()  # the log so far: which build and GPU, even if the first item never ends
    results = [hw.run_item(i) for i in chosen]
    failed = sum(r["status"] == "FAIL" for r in results)
    skipped = sum(r["status"] == "SKIP" for r in results)
    print(f"hw {args.part}: {len(results) - failed - skipped} passed, {failed} failed, {skipped} skipped", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
