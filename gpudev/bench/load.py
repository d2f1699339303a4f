"""Busy processes for ``python -m gpudev bench --load N``: N CPU-bound Python processes that
compete with gpudev (and NumPy) for the cores, as a browser or other students' jobs do on a
laptop or a shared server, so that anyone can measure the library on a loaded machine.

The processes are stopped on every way out of the ``with`` block: normal exit, exceptions,
Ctrl-C (SIGINT) and SIGTERM. Each one also exits by itself within milliseconds once its
parent process is gone, so even a parent killed with SIGKILL leaves nothing spinning.

    >>> with busy_processes(1) as procs:
    ...     len(procs), procs[0].poll() is None
    (1, True)
    >>> procs[0].poll() is not None
    True
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

__all__ = ["busy_processes", "load_average"]

# Spins in slices of ~5 ms and checks between them that the parent that started it is still
# there (after the parent dies, the child is re-parented and getppid() changes).
_BUSY_CODE = """\
import os
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(100_000):
        pass
"""

SETTLE_SECONDS = 0.3  # for the new processes to start and the scheduler to spread them


def load_average() -> tuple[float, float, float] | None:
    """The system's 1, 5 and 15-minute load averages, None where the system has none.

    >>> la = load_average(); la is None or len(la) == 3
    True
    """
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


def _stop(procs: list[subprocess.Popen]) -> None:
    """Kill and reap every process (SIGKILL: a busy loop has nothing to clean up)."""
    for p in procs:
        with contextlib.suppress(OSError):
            p.kill()
    for p in procs:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            p.wait(timeout=10)


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """Inside the block, SIGTERM raises SystemExit (so `finally` clauses run) instead of
    ending the process at once; only the main thread can set signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def busy_processes(n: int) -> Iterator[list[subprocess.Popen]]:
    """Start `n` CPU-bound processes; they run until the block ends, however it ends."""
    if n < 0:
        raise ValueError(f"busy_processes: n must be >= 0, got {n}")
    procs: list[subprocess.Popen] = []
    with _sigterm_as_exit():
        try:
            for _ in range(n):
                procs.append(subprocess.Popen(
                    [sys.executable, "-S", "-c", _BUSY_CODE],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                ))
            if procs:
                time.sleep(SETTLE_SECONDS)
            yield procs
        finally:
            _stop(procs)
