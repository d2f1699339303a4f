"""The command line: ``python -m gpudev info | bench | exercises | referee``.

    python -m gpudev info                  devices (CPU included) and how gpudev was built
    python -m gpudev bench [--quick] ...   gpudev against NumPy/PyTorch/CuPy, with verdicts
    python -m gpudev exercises ...         the GPUs chapter's exercises
    python -m gpudev referee [FOLDER]      check a run's report against its tables
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Callable
from typing import Any

from ._devices import all_devices, device_label
from ._format import format_gib

COMMANDS = {
    "info": "the devices (CPU included) and how gpudev was built",
    "bench": "time gpudev against NumPy, PyTorch and CuPy (--help for options)",
    "exercises": "run the GPUs chapter's exercises (--help for options)",
    "referee": "check that a run's report.md says only what its results.json tables say",
}


# ---------------------------------------------------------------------------------------------
# info
# ---------------------------------------------------------------------------------------------


def _host_memory() -> tuple[int | None, int | None]:
    """(total, available) bytes of host memory, None where the OS does not say."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None, None
    try:
        with open("/proc/meminfo") as f:
            fields = dict(line.split(":", 1) for line in f)
        available = int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        available = None
    return total, available


def _used_of_total(total: Any, free: Any) -> str:
    if isinstance(total, int) and isinstance(free, int):
        return f"{format_gib(total - free)} / {format_gib(total)}"
    return format_gib(total)


def _held(gd: Any, dev: Any) -> str:
    try:
        stats = gd.memory_stats(dev)
    except gd.GpudevError:
        return "-"
    return format_gib(stats.get("reserved_bytes"))


def _first(d: dict[str, Any], *keys: str, default: Any = None) -> Any:
    for k in keys:
        if d.get(k) not in (None, ""):
            return d[k]
    return default


def _device_row(gd: Any, dev: Any) -> list[str]:
    """[device, name, compute, memory, gpudev memory] for one device."""
    try:
        info = dev.info()
    except gd.GpudevError as exc:  # a GPU that fails to answer still gets its row
        return [device_label(dev), f"unavailable: {exc}", "-", "-", "-"]
    name = str(_first(info, "name", "model", default="?"))
    if dev.type == "cpu":
        cores = _first(info, "cores", "logical_cores", "threads")
        simd = _first(info, "simd", "simd_level")
        compute = ", ".join(x for x in (f"{cores} cores" if cores else "", str(simd or "")) if x)
        memory = _used_of_total(*_host_memory())
    else:
        cc = _first(info, "compute_capability", "capability")
        sms = _first(info, "multiprocessors", "multiprocessor_count", "sm_count")
        cc_text = f"sm_{''.join(str(x) for x in cc)}" if isinstance(cc, (tuple, list)) else str(cc or "?")
        compute = cc_text + (f", {sms} SMs" if sms else "")
        total = _first(info, "total_memory", "memory_total", "total_memory_bytes")
        free = _first(info, "free_memory", "memory_free", "free_memory_bytes")
        memory = _used_of_total(total, free)
    return [device_label(dev), name, compute, memory, _held(gd, dev)]


def _box(header: list[str], rows: list[list[str]], title_lines: list[str], min_width: int = 76) -> str:
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    inner = sum(widths) + 3 * (len(widths) - 1)
    width = max(inner, min_width)
    # long titles (e.g. why CUDA is off) wrap inside the box instead of widening it
    title_lines = [w for t in title_lines for w in textwrap.wrap(t, width, subsequent_indent="  ")]
    widths[-1] += width - inner  # stretch the last column to the title's width
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = ["+" + "-" * (width + 2) + "+"]
    out += [f"| {t.ljust(width)} |" for t in title_lines]
    out.append(rule)
    out.append("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |")
    out.append(rule.replace("-", "="))
    out += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    out.append(rule)
    return "\n".join(out)


def info_text(gd: Any) -> str:
    """The `info` command's output: the build, then one row per device."""
    b = gd.build_info()
    blas = b.get("blas") or {}
    cuda = b.get("cuda") or {}
    title = [
        f"gpudev {b.get('version', '?')}   compiler {b.get('compiler', '?')}   SIMD {b.get('simd', '?')}",
        f"BLAS {blas.get('name', '?')} {blas.get('version', '')}".rstrip()
        + f"   threads {blas.get('threads', gd.get_num_threads())}",
    ]
    n = gd.num_gpus()
    if cuda.get("emulated"):
        emu = cuda["emulated"]
        title.append(f"GPUs: {n} emulated (GPUDEV_EMULATE_GPUS={emu['devices']}): gpudev's CUDA backend "
                     "run by a CPU emulation, for its logic; times measured on them are CPU times, "
                     "not GPU speed")
    elif cuda.get("compiled"):
        archs = cuda.get("archs")
        archs = ",".join(archs) if isinstance(archs, (list, tuple)) else archs
        runtime, driver = cuda.get("runtime_version"), cuda.get("driver_version")
        title.append(f"CUDA compiled for {archs or '?'}   runtime {runtime or '-'}   driver {driver or '-'}")
        found = f"GPUs found: {n}"
        if n == 0 and cuda.get("reason"):
            found += f" ({cuda['reason']})"
        title.append(found)
        title += [f"  {v['soname']} from {v['origin']}: {v['path']}" for v in (cuda.get("libraries") or {}).values()]
    else:
        title.append(f"CUDA not compiled: {cuda.get('reason') or 'unknown reason'}")
    rows = [_device_row(gd, d) for d in all_devices()]
    return _box(["Device", "Name", "Compute", "Memory (used / total)", "gpudev holds"], rows, title)


def cmd_info(argv: list[str]) -> int:
    argparse.ArgumentParser(prog="python -m gpudev info", description=COMMANDS["info"]).parse_args(argv)
    import gpudev as gd

    print(info_text(gd))
    return 0


# ---------------------------------------------------------------------------------------------
# bench and exercises: their modules parse their own options
# ---------------------------------------------------------------------------------------------


def cmd_bench(argv: list[str]) -> int:
    from gpudev import bench

    return bench.run_cli(argv)


def cmd_exercises(argv: list[str]) -> int:
    from gpudev import exercises

    return exercises.run_cli(argv)


def cmd_referee(argv: list[str]) -> int:
    if any(arg.endswith(".ipynb") for arg in argv):  # an executed notebook: the check beside the referee
        from gpudev.exercises import notebook_check

        return notebook_check.main(argv)
    from gpudev.exercises import referee

    return referee.main(argv)


HANDLERS: dict[str, Callable[[list[str]], int]] = {"info": cmd_info, "bench": cmd_bench, "exercises": cmd_exercises,
                                                   "referee": cmd_referee}


def main(argv: list[str] | None = None) -> int:
    """Run a command; returns the exit status (0 ok, 1 failed, 2 bad usage, 130 interrupted).

    Example:
        >>> main(["info"])  # doctest: +SKIP
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog="python -m gpudev",
        description="gpudev: learn and measure GPU computing.",
        epilog="commands:\n" + "\n".join(f"  {k:<10} {v}" for k, v in COMMANDS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # the usage line lists every command, from the one table of them
    parser.add_argument("command", choices=list(COMMANDS), metavar="{" + ",".join(COMMANDS) + "}",
                        help="the command to run, one of those below")
    # Only the command word is parsed here; the rest belongs to the command's own parser.
    try:
        if not argv or argv[0] not in COMMANDS:
            parser.parse_args(argv[:1])  # prints the help or the usage error, then exits
        command, rest = argv[0], argv[1:]
        return HANDLERS[command](rest)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `python -m gpudev info | head`: the reader left, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SystemExit as exc:  # argparse (help, usage errors) inside a command: keep its status
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return 1
        return 0 if exc.code is None else exc.code
    except Exception as exc:
        from gpudev import GpudevError

        if isinstance(exc, (GpudevError, OSError)):
            print(f"gpudev {command}: {exc}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
