"""The fuzz oracle: gd.load one file under a time limit and a memory budget, and judge the
result against NumPy's own np.load of the same file.

The contract judged: gd.load either returns exactly NumPy's arrays (converted to gpudev's
dtypes: float16 to float32, other integers to int64, bools with every nonzero byte True) when NumPy accepts the file and
every dtype in it is one gpudev loads, or raises ValueError or OSError whose message names
the file. It never raises anything else, never runs past TIME_LIMIT seconds, and never uses
more than MEMORY_FIXED bytes plus MEMORY_PER_BYTE times the bytes of the arrays NumPy
loaded (what the file truly holds, never what it claims), measured two ways: the peak of
allocations tracemalloc sees (NumPy's buffers included) and the peak resident set
(everything, the C core included; Linux only; under the sanitizer it may also hold ASan's
quarantine of freed blocks, RESIDENT_SLACK).

    >>> with tracing():
    ...     verdict = judge("x.npz")
    >>> verdict.failure is None
    True
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import tracemalloc
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

import gpudev as gd

SANITIZED = os.environ.get("GPUDEV_SANITIZE_RUN") == "1"
TIME_LIMIT = 120.0 if SANITIZED else 30.0  # a hang detector, not a speed check
MEMORY_FIXED = 64 * 2**20
MEMORY_PER_BYTE = 3  # the host array, a copy while converting, and the Array itself
# AddressSanitizer keeps freed blocks in a quarantine (256 MiB by default) to catch uses
# after free: resident but unused, so the resident check allows for it; the allocation
# check stays exact.
RESIDENT_SLACK = 256 * 2**20 if SANITIZED else 0


class Hang(BaseException):
    """gd.load ran past the time limit (a BaseException, so no handler can swallow it)."""


@dataclass
class Verdict:
    outcome: str  # "loaded", or the exception's type name
    numpy: str  # "accepts" or "refuses"
    seconds: float
    allocated: int  # peak bytes tracemalloc saw during gd.load
    resident: int  # peak growth of the resident set during gd.load (0 where unmeasurable)
    failure: str | None  # what broke the contract, or None


@contextmanager
def tracing() -> Iterator[None]:
    """tracemalloc on for a run of judge() calls (it slows allocation, so not per file)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        yield
    finally:
        if started:
            tracemalloc.stop()


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    # SIGALRM exists on POSIX only, and only the main thread receives it.
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _reset_resident_peak() -> bool:
    """Linux resets VmHWM (the resident peak) to the current resident set on '5'."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        match = re.search(rf"^{field}:\s+(\d+) kB", f.read(), re.MULTILINE)
    return int(match.group(1)) if match else 0


def target_dtype(dtype: np.dtype) -> np.dtype | None:
    """The dtype gpudev loads `dtype` as, or None when gpudev refuses it."""
    if dtype.kind == "f" and dtype.itemsize in (4, 8):
        return np.dtype(f"f{dtype.itemsize}")
    if dtype.kind == "f" and dtype.itemsize == 2:
        return np.dtype(np.float32)
    if dtype.kind == "i" and dtype.itemsize == 4:
        return np.dtype(np.int32)
    if dtype.kind in "iu":
        return np.dtype(np.int64)
    if dtype.kind == "b":
        return np.dtype(np.bool_)
    return None


def numpy_reference(path: str) -> tuple[Any, str]:
    """(np.load's arrays: an ndarray or a dict, or None when it refuses; a note)."""
    try:
        with warnings.catch_warnings(), _time_limit(TIME_LIMIT):
            warnings.simplefilter("ignore")
            loaded = np.load(path, allow_pickle=False)
            if isinstance(loaded, np.lib.npyio.NpzFile):
                with loaded:
                    return {key: loaded[key] for key in loaded.files}, "accepts"
            return loaded, "accepts"
    except (Exception, Hang) as e:  # the reference may fail any way it likes: it refuses
        return None, f"refuses ({type(e).__name__}: {str(e)[:120]})"


def _legit_bytes(expected: Any) -> int:
    arrays = expected.values() if isinstance(expected, dict) else [expected]
    return sum(a.size * ((target_dtype(a.dtype) or a.dtype).itemsize) for a in arrays
               if isinstance(a, np.ndarray))


def _bits(a: np.ndarray) -> np.ndarray:
    # Compared as bytes: NaNs with their payloads, -0.0 apart from 0.0.
    return a.reshape(-1).view(np.uint8)


def _difference(got: Any, expected: Any) -> str | None:
    """How gd.load's result differs from NumPy's, or None when it is the same."""
    if isinstance(expected, dict) != isinstance(got, dict):
        return f"gd.load gave {type(got).__name__}, np.load {type(expected).__name__}"
    if not isinstance(expected, dict):
        got, expected = {"": got}, {"": expected}
    if list(got) != list(expected):
        return f"keys {list(got)[:5]} differ from NumPy's {list(expected)[:5]}"
    for key, want in expected.items():
        target = target_dtype(want.dtype)
        host = got[key].numpy()
        if target is None:
            return f"{key!r}: loaded {want.dtype}, a dtype gpudev must refuse"
        if host.shape != want.shape or host.dtype != target:
            return f"{key!r}: {host.dtype}{host.shape} != NumPy's {want.dtype}{want.shape}"
        if target.kind == "b":  # a mutated file's bool bytes may hold any value
            want = np.not_equal(want.view(np.uint8), 0)
        if not np.array_equal(_bits(host), _bits(np.ascontiguousarray(want, dtype=target))):
            return f"{key!r}: values differ from NumPy's"
    return None


def judge(path: str) -> Verdict:
    """Load `path` with gd.load and judge it against the contract (see the module doc)."""
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    measured = _reset_resident_peak()
    resident0 = _status_kib("VmRSS") if measured else 0
    start = time.perf_counter()
    got: Any = None
    error: BaseException | None = None
    try:
        with _time_limit(TIME_LIMIT):
            got = gd.load(path)
    except (Exception, Hang) as e:
        error = e
    seconds = time.perf_counter() - start
    allocated = tracemalloc.get_traced_memory()[1] - base
    resident = (_status_kib("VmHWM") - resident0) * 1024 if measured else 0

    expected, numpy_says = numpy_reference(path)
    outcome = "loaded" if error is None else type(error).__name__
    legit = _legit_bytes(expected) if expected is not None else 0
    budget = MEMORY_FIXED + MEMORY_PER_BYTE * legit
    failure = None
    if isinstance(error, Hang):
        failure = f"hang: {error}"
    elif error is not None and not isinstance(error, (ValueError, OSError)):
        failure = f"escaped {type(error).__name__}: {str(error)[:300]}"
    elif error is not None and path not in str(error):
        failure = f"{type(error).__name__} does not name the file: {str(error)[:300]}"
    elif allocated > budget or resident > budget + RESIDENT_SLACK:
        failure = (f"memory over budget: allocated {allocated} B, resident +{resident} B, "
                   f"budget {budget} B (+{RESIDENT_SLACK} B resident under the sanitizer)")
    elif error is None and expected is None:
        failure = f"gd.load accepted a file NumPy {numpy_says}"
    elif error is None:
        failure = _difference(got, expected)
    return Verdict(outcome, numpy_says.split(" ")[0], seconds, allocated, resident, failure)
