"""The latency table of d2l's "Hardware" section, measured on this machine: :func:`latency_table`.

The book prints one machine's figures (a kernel launch 10 us, 1 MB over PCIe 80 us, GPU global
memory 200 ns, L1 1.5 ns...). Here every row is measured on the device asked for, with its spread
over repeats: an empty operation's launch, a synchronization round trip, 1 KB and 1 MB copies
between host and device (pageable, and pinned where the build has ``Array.pin_memory``), a copy
on the device, the latency of one dependent load from each cache level and from main or device
memory, and reads at several strides. Cache levels come from the knees of the measured
dependent-load curve (:func:`knees`); the sizes the OS reports stand beside them.

On the CPU the rows about a host-device link or launching have no meaning and say so; on an
emulated GPU every row is a CPU time of the emulation and says so.

    >>> rows = latency_table("cpu", quick=True)          # doctest: +SKIP
    >>> [r["what"] for r in rows if r["part"] == "load"]  # doctest: +SKIP
    ['L1', 'L2', 'L3', 'main memory']
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import _C
from ._devices import DeviceLike, as_device, require
from .timing import benchmark

__all__ = ["BOOK", "BOOK_SOURCE", "knees", "latency_table", "level_names", "os_cache_sizes", "pointer_chase_ns"]

BOOK_SOURCE = ("Dive into Deep Learning, section 'Hardware' (chapter 'Computational Performance'), "
               "tables 'Common Latency Numbers' and 'Latency Numbers for NVIDIA Tesla GPUs'")
# the book's figures, as printed there: (key, what it measured, seconds); a key is matched by the
# rows below of the same key
BOOK: list[tuple[str, str, float]] = [
    ("L1", "L1 cache reference/hit", 1.5e-9),
    ("L2", "L2 cache reference/hit", 5e-9),
    ("L3", "L3 cache hit (unshared cache)", 16e-9),
    ("main memory", "256MB memory reference (local CPU)", 75e-9),
    ("device memory", "GPU global memory access", 200e-9),
    ("launch", "launch CUDA kernel on GPU", 10e-6),
    ("1 MB", "transfer 1MB to/from PCI-E GPU (~12GB/s on PCIe 3.0 x16)", 80e-6),
]
_BOOK = {key: (what, s) for key, what, s in BOOK}

KIB = 1 << 10
MIB = 1 << 20
CHASE_FROM = 4 * KIB         # the dependent-load curve starts here...
CHASE_CAP = 256 * MIB        # ...and ends at 4x the last cache, or here, whichever is smaller
KNEE_JUMP = 1.4              # a knee: latency rises by this factor or more from one size to the next
STRIDES = (8, 64, 512, 4096)
STREAM_BYTES = 64 * MIB      # the copy's and the strided reads' buffer: twice this machine's 32 MiB L3
EMULATED_STREAM_BYTES = 8 * MIB  # an emulated GPU's copies run on the CPU, slowly, and show no speed
TRANSFERS = (KIB, MIB)
NO_LINK = "no meaning on the CPU: its memory is the host's, so there is no link to cross"
NO_LAUNCH = "no meaning on the CPU: an operation runs in the calling thread; nothing is queued"
EMULATED = "a CPU time of the emulation, not a GPU's: no speed claim is made from it"


# ---------------------------------------------------------------------------------------------
# what the OS says, and the knees of a curve
# ---------------------------------------------------------------------------------------------


def os_cache_sizes(root: str = "/sys/devices/system/cpu/cpu0/cache") -> dict[int, int]:
    """{level: bytes} of the data (or unified) caches the OS reports for the first CPU: Linux's
    sysfs, else os.sysconf's names; {} when neither says.

    >>> os_cache_sizes("/nonexistent") == {} or isinstance(os_cache_sizes("/nonexistent"), dict)
    True
    """
    sizes: dict[int, int] = {}
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        entries = []
    for entry in entries:
        try:
            with open(os.path.join(root, entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(root, entry, "level")) as f:
                level = int(f.read())
            with open(os.path.join(root, entry, "size")) as f:
                text = f.read().strip()
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and text:
            scale = {"K": KIB, "M": MIB, "G": 1 << 30}.get(text[-1].upper(), 1)
            sizes[level] = int(text.rstrip("KkMmGg")) * scale
    if sizes:
        return sizes
    for level, name in ((1, "SC_LEVEL1_DCACHE_SIZE"), (2, "SC_LEVEL2_CACHE_SIZE"), (3, "SC_LEVEL3_CACHE_SIZE")):
        try:
            value = os.sysconf(name)
        except (ValueError, OSError, AttributeError):
            continue
        if value and value > 0:
            sizes[level] = int(value)
    return sizes


def knees(sizes: Sequence[int], latencies: Sequence[float], jump: float = KNEE_JUMP) -> list[dict[str, Any]]:
    """The plateaus of a dependent-load curve (latency against working-set size, ascending),
    cut at its knees: a knee is a step up by `jump` or more that is the steepest among its
    neighbours. Each plateau: ``sizes`` (its working sets), ``fits_up_to`` (its largest),
    ``spills_at`` (the next size, past the knee; None for the last) and ``middle`` (the
    index, in the curve, of its middle point, whose latency stands for the level).

    >>> [p["fits_up_to"] for p in knees([1, 2, 4, 8, 16], [1.0, 1.1, 4.0, 4.2, 4.1])]
    [2, 16]
    """
    if len(sizes) != len(latencies) or len(sizes) < 2:
        raise ValueError(f"knees: needs as many latencies as sizes, at least 2, got {len(sizes)} sizes and "
                         f"{len(latencies)} latencies")
    if list(sizes) != sorted(set(sizes)) or min(latencies) <= 0:
        raise ValueError("knees: sizes must increase and latencies be positive")
    steps = [math.log(b / a) for a, b in zip(latencies, latencies[1:])]
    cut = [i for i, d in enumerate(steps)
           if d >= math.log(jump) and (i == 0 or d >= steps[i - 1]) and (i + 1 == len(steps) or d > steps[i + 1])]
    bounds = [0, *(i + 1 for i in cut), len(sizes)]
    plateaus = []
    for lo, hi in zip(bounds, bounds[1:]):
        plateaus.append({"sizes": list(sizes[lo:hi]), "fits_up_to": sizes[hi - 1],
                         "spills_at": sizes[hi] if hi < len(sizes) else None, "middle": (lo + hi - 1) // 2})
    return plateaus


def level_names(count: int, gpu: bool) -> list[str]:
    """What the plateaus of a curve are called: caches L1, L2... then main (or device) memory.

    >>> level_names(4, gpu=False), level_names(1, gpu=True)
    (['L1', 'L2', 'L3', 'main memory'], ['device memory'])
    """
    return [f"L{i + 1}" for i in range(count - 1)] + ["device memory" if gpu else "main memory"]


# ---------------------------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------------------------


def _row(dev: str, group: str, what: str, times: Sequence[float] | None = None, *, note: str | None = None,
         bytes_moved: float | None = None, emulated: bool = False, **extra: Any) -> dict[str, Any]:
    """One row: its median, min and max over `times` (seconds per unit), or only its note."""
    key = extra.pop("book_key", what)
    book = _BOOK.get(key)
    row: dict[str, Any] = {"device": dev, "part": group, "what": what, "book": book[0] if book else None,
                           "book_s": book[1] if book else None, **extra}
    if times is not None:
        arr = np.asarray(times, dtype=np.float64)
        med = float(np.median(arr))
        row.update(latency_s=med, min_s=float(arr.min()), max_s=float(arr.max()), times=arr.tolist(),
                   repeats=int(arr.size), bytes_moved=bytes_moved,
                   rate_gbps=None if emulated or not bytes_moved else bytes_moved / med / 1e9)
    else:  # no number: no repeats
        row.update(latency_s=None, min_s=None, max_s=None, times=[], repeats=0, rate_gbps=None)
    notes = [n for n in (note, EMULATED if emulated and times is not None else None) if n]
    row["comment"] = "; ".join(notes) or None
    return row


def _timed(fn: Callable[[], Any], dev: Any, repeats: int, per: float = 1.0) -> list[float]:
    """Wall-clock seconds per call of `fn` (ending after a synchronization of `dev`), one per
    repeat, divided by `per` (the units one call covers)."""
    r = benchmark(fn, n_warmup=1, n_repeat=repeats, max_duration=5.0, devices=[dev])
    return [t / per for t in r.cpu_times]


def _link_rows(d: Any, label: str, repeats: int, emulated: bool) -> list[dict[str, Any]]:
    """Launch, synchronization and host-device copies (pageable and pinned) on a GPU."""
    import gpudev as gd

    x = gd.ones(1, device=d)

    def launch() -> None:
        x.__imul__(1.0)

    rows = [_row(label, "launch", "empty op launch", _timed(launch, d, repeats), emulated=emulated,
                 book_key="launch", note="x *= 1.0 on one element, queued back to back"),
            _row(label, "launch", "synchronization round trip",
                 _timed(lambda: gd.cuda.synchronize(d), d, repeats), emulated=emulated)]
    for n in TRANSFERS:
        host = np.ones(n // 4, dtype=np.float32)
        on_dev = gd.asarray(host, device=d)
        size = "1 KB" if n == KIB else "1 MB"
        rows.append(_row(label, "transfer", f"{size} host to device, pageable",
                         _timed(lambda: gd.asarray(host, device=d), d, repeats), bytes_moved=n,
                         emulated=emulated, book_key=size, size_bytes=n))
        rows.append(_row(label, "transfer", f"{size} device to host, pageable",
                         _timed(lambda: on_dev.to("cpu"), d, repeats), bytes_moved=n, emulated=emulated,
                         book_key=size, size_bytes=n))
        pinned_host = gd.asarray(host).pin_memory()
        rows.append(_row(label, "transfer", f"{size} host to device, pinned",
                         _timed(lambda: pinned_host.to(d), d, repeats), bytes_moved=n, emulated=emulated,
                         book_key=size, size_bytes=n))
        rows.append(_row(label, "transfer", f"{size} device to host, pinned",
                         _timed(lambda: on_dev.to("cpu", non_blocking=True), d, repeats), bytes_moved=n,
                         emulated=emulated, book_key=size, size_bytes=n,
                         note="to('cpu', non_blocking=True), then waiting for it"))
    return rows


def _no_link_rows(label: str) -> list[dict[str, Any]]:
    """The CPU's rows about launching and the host-device link: no numbers, a reason."""
    rows = [_row(label, "launch", "empty op launch", note=NO_LAUNCH, book_key="launch"),
            _row(label, "launch", "synchronization round trip", note=NO_LAUNCH)]
    for n in TRANSFERS:
        size = "1 KB" if n == KIB else "1 MB"
        rows += [_row(label, "transfer", f"{size} {way}, {kind}", note=NO_LINK, book_key=size, size_bytes=n)
                 for kind in ("pageable", "pinned") for way in ("host to device", "device to host")]
    return rows


def _chase_rows(d: Any, label: str, repeats: int, steps: int, emulated: bool, gpu: bool,
                os_sizes: dict[int, int], last_cache: int | None) -> list[dict[str, Any]]:
    """The dependent-load curve (part 'curve') and one row per level found at its knees."""
    top = min(4 * last_cache, CHASE_CAP) if last_cache else CHASE_CAP
    sizes = [CHASE_FROM << k for k in range(int(math.log2(top // CHASE_FROM)) + 1)]
    curve = []
    for ws in sizes:
        ns = pointer_chase_ns(d, ws, steps, repeats)
        curve.append(_row(label, "curve", f"dependent load, {_size_text(ws)} working set",
                          [t * 1e-9 for t in ns], emulated=emulated, size_bytes=ws, steps=steps))
    # the knees are found on each size's fastest repeat: another process's work only adds time
    plateaus = knees(sizes, [r["min_s"] for r in curve])
    rows = []
    for name, p in zip(level_names(len(plateaus), gpu), plateaus):
        level = int(name[1:]) if name.startswith("L") else None
        os_size = os_sizes.get(level) if level else None
        agrees = None if os_size is None else p["fits_up_to"] <= os_size <= (p["spills_at"] or os_size)
        mid = curve[p["middle"]]
        # the book's cache figures are a CPU's; for a GPU only its device memory has one
        book_key = name if not gpu or name == "device memory" else None
        rows.append(_row(label, "load", name, mid["times"], emulated=emulated, size_bytes=mid["size_bytes"],
                         book_key=book_key,
                         fits_up_to=p["fits_up_to"], spills_at=p["spills_at"], os_size_bytes=os_size,
                         os_agrees=agrees, steps=steps))
    return rows + curve


def pointer_chase_ns(device: Any, working_set_bytes: int, steps: int, repeats: int) -> list[float]:
    """Nanoseconds per dependent load, one per repeat: `steps` loads through one random cycle of
    the 64-byte lines of a `working_set_bytes` buffer on `device`, by one thread (the C core's
    pointer chase: Python's interpreter would add tens of nanoseconds per load)."""
    return list(_C._pointer_chase(device, working_set_bytes, steps, repeats))


def _size_text(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB else f"{n // KIB} KiB"


def _bandwidth_rows(d: Any, label: str, repeats: int, nbytes: int, emulated: bool) -> list[dict[str, Any]]:
    """A copy on the device (read and write: 2 x nbytes moved) and reads at several strides."""
    import gpudev as gd

    src = gd.ones(nbytes // 4, device=d)
    dst = gd.zeros(nbytes // 4, device=d)

    def copy() -> None:
        dst[...] = src

    rows = [_row(label, "copy", f"device copy, {_size_text(nbytes)}", _timed(copy, d, repeats),
                 bytes_moved=2 * nbytes, emulated=emulated, size_bytes=nbytes)]
    words = gd.ones(nbytes // 8, dtype=gd.float64, device=d)
    for stride in STRIDES:
        view = words[:: stride // 8]
        count = int(view.shape[0])
        rows.append(_row(label, "stride", f"read at a {stride}-byte stride",
                         _timed(view.sum, d, repeats, per=count), bytes_moved=8, emulated=emulated,
                         stride_bytes=stride, size_bytes=nbytes,
                         note=f"sum of every {stride // 8}th float64 of {_size_text(nbytes)}; per element"))
    return rows


def latency_table(device: DeviceLike | None = None, *, quick: bool = False, repeats: int | None = None
                  ) -> list[dict[str, Any]]:
    """The book's latency table measured on `device` (default: the CPU), as rows.

    Each measured row has ``latency_s`` (the median over ``repeats``, seconds per unit: per
    call, per load or per element, as ``what`` and ``comment`` say), ``min_s``, ``max_s`` and
    every repeat in ``times``; ``rate_gbps`` where bytes move (not for emulated GPUs);
    ``book`` and ``book_s``, the book's figure for the same thing (BOOK, from BOOK_SOURCE).
    Rows without a number carry only a ``comment`` saying why. Parts: 'launch', 'transfer',
    'copy', 'load' (one row per level found at the curve's knees, with ``fits_up_to``,
    ``spills_at`` and the OS's size ``os_size_bytes``), 'stride' and 'curve' (every point of
    the dependent-load curve). `quick`: fewer loads and repeats.

    Example:
        >>> rows = latency_table("cpu", quick=True)                       # doctest: +SKIP
        >>> next(r for r in rows if r["what"] == "L1")["latency_s"]      # doctest: +SKIP
        1.4e-09
    """
    import gpudev as gd

    op = "latency_table"
    d = require(as_device(device, op, default=gd.cpu()), op, "pass device=None to measure the CPU")
    if not isinstance(quick, (bool, np.bool_)):  # quick="no" must not mean quick
        raise TypeError(f"{op}: quick must be True or False, got {quick!r}")
    if repeats is None:
        repeats = 3 if quick else 5
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= 1000:
        raise ValueError(f"{op}: repeats must be an int from 1 to 1000, got {repeats!r}")
    emulated, gpu = d.emulated, d.type == "cuda"
    label = str(d)
    steps = 100_000 if quick else 300_000
    if gpu:
        os_sizes: dict[int, int] = {}
        l2 = d.info().get("l2_cache_bytes") or None
        if l2:
            os_sizes[2] = int(l2)
        last = l2
        rows = _link_rows(d, label, repeats, emulated)
    else:
        os_sizes = os_cache_sizes()
        last = max(os_sizes.values()) if os_sizes else None
        rows = _no_link_rows(label)
    rows += _bandwidth_rows(d, label, repeats, EMULATED_STREAM_BYTES if emulated else STREAM_BYTES, emulated)
    rows += _chase_rows(d, label, repeats, steps, emulated, gpu, os_sizes, last)
    order = {"launch": 0, "transfer": 1, "copy": 2, "load": 3, "stride": 4, "curve": 5}
    rows.sort(key=lambda r: order[r["part"]])
    return rows
