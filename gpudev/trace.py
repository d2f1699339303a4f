"""``gd.trace()``: what ran where, every copy between devices and every synchronization.

The C core calls one process-wide hook for each operation, copy and synchronization while a
hook is installed; when none is, the only cost is one pointer test per operation. This
module installs a dispatcher while at least one trace (or ``gd.strict`` block) is active and
hands each event to every active trace, so nested traces work: an inner trace's events also
reach the outer ones. Each copy and sync is attributed to the user's line that caused it: the
first frame of the call stack outside the gpudev package.
"""

from __future__ import annotations

import os
import reprlib
import sys
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

from . import _C
from ._devices import device_label
from ._format import format_bytes, format_seconds

__all__ = ["HOST_READS", "Trace", "TraceEvent", "trace"]


class TraceEvent(NamedTuple):
    """One recorded event.

    kind:  'op', 'copy' or 'sync'.
    name:  the operation ('add', 'matmul', ...), the copy kind ('h2d', 'd2h', 'd2d', 'peer')
           or what caused the synchronization ('item', 'tolist', 'repr', 'cpu copy',
           'synchronize', 'Timer', 'benchmark', ...).
    device: where it ran ('cpu', 'cuda:0'); for copies the destination.
    shapes: the input shapes (ops), ((shape,),) for copies, () for syncs.
    dtype:  'float32', 'float64', 'int64' or None.
    wait_s: seconds the host waited: a GPU sync's wait for the queued work (with the copy of
            a d2h read, whose own 'copy' event then says 0.0 so nothing counts twice), an
            upload's wait for its source; 0.0 for ops and on the CPU, where nothing waits.
    where:  'file:line' of the user's code that caused a copy or sync (the first frame
            outside gpudev), None for ops.
    """

    kind: str
    name: str
    device: str
    shapes: tuple
    dtype: str | None
    bytes_read: int
    bytes_written: int
    wait_s: float = 0.0
    where: str | None = None


# ---------------------------------------------------------------------------------------------
# the dispatcher: one hook in C, any number of active traces in Python
# ---------------------------------------------------------------------------------------------

# The sync causes that read device data back to the host (csrc/core/trace.c's gd_host_read):
# on a GPU each comes with a d2h copy; on the CPU nothing moves, but the same line would copy
# on a GPU. 'buffer' is the buffer protocol (memoryview, and np.asarray / np.array of a CPU
# array), '__dlpack__' an export to a CPU consumer (np.from_dlpack), 'pickle' pickling's read.
HOST_READS = frozenset({"item", "tolist", "repr", "numpy", "__array__", "buffer", "__dlpack__", "pickle",
                        "cpu copy"})
COPY_KINDS = ("h2d", "d2h", "d2d", "peer", "h2h")
EVENT_KINDS = ("op", "copy", "sync")


def is_host_read(event: TraceEvent) -> bool:
    """True for a sync event that reads device data to the host (see HOST_READS)."""
    return event.kind == "sync" and event.name in HOST_READS


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_lock = threading.Lock()
_active: tuple[Trace, ...] = ()  # innermost last; replaced, never mutated, so reads need no lock
_watchers: tuple[Callable[[TraceEvent], None], ...] = ()  # gd.strict's checker, while in use
_foreign_hook: Any = None  # a hook someone installed before the first trace, still fed


def user_frame(depth: int = 1) -> Any:
    """The innermost frame of the caller's stack whose code is outside the gpudev package,
    or None (gpudev's own tests and examples live outside it, so they count as users)."""
    frame = sys._getframe(depth)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


def where_text(frame: Any) -> str | None:
    """'file:line' of a frame, the file relative to the working folder when inside it."""
    if frame is None:
        return None
    path = frame.f_code.co_filename
    try:
        rel = os.path.relpath(path)
        path = rel if not rel.startswith("..") else path
    except ValueError:  # another drive on Windows
        pass
    return f"{path}:{frame.f_lineno}"


def _dispatch(event: tuple) -> None:
    where = where_text(user_frame(2)) if event[0] != "op" else None
    record = TraceEvent(*event, where=where)
    for tr in _active:
        tr.events.append(record)
    for watch in _watchers:
        watch(record)
    if _foreign_hook is not None:
        _foreign_hook(event)


def _install() -> None:
    """Called with _lock held, before the first trace or watcher is added."""
    global _foreign_hook
    if not _active and not _watchers:
        previous = _C._set_trace_hook(_dispatch)
        _foreign_hook = previous if callable(previous) and previous is not _dispatch else None


def _uninstall() -> None:
    """Called with _lock held, after the last trace or watcher is gone."""
    global _foreign_hook
    if not _active and not _watchers:
        _C._set_trace_hook(_foreign_hook)
        _foreign_hook = None


def _push(tr: Trace) -> None:
    global _active
    with _lock:
        _install()
        _active = _active + (tr,)


def _pop(tr: Trace) -> None:
    global _active
    with _lock:
        _active = tuple(t for t in _active if t is not tr)
        _uninstall()


def add_watcher(watch: Callable[[TraceEvent], None]) -> None:
    """Hand every event to `watch` too (from any thread) until remove_watcher(watch)."""
    global _watchers
    with _lock:
        _install()
        _watchers = _watchers + (watch,)


def remove_watcher(watch: Callable[[TraceEvent], None]) -> None:
    global _watchers
    with _lock:
        _watchers = tuple(w for w in _watchers if w is not watch)
        _uninstall()


# ---------------------------------------------------------------------------------------------
# Trace
# ---------------------------------------------------------------------------------------------


class Trace:
    """A record of every operation, copy and synchronization while it is active.

    Use it through ``gd.trace()``. The hook is process-wide: work from other Python threads
    is recorded too. Synchronizations are recorded on the CPU as well, by the same causes:
    there they cost nothing, but the same line would stall a GPU.

    Example:
        >>> import gpudev as gd
        >>> w = gd.randn(100)
        >>> with gd.trace() as tr:
        ...     log = [gd.norm(w).item() for _ in range(10)]  # 10 synchronizations
        >>> tr.count("sync", "item")
        10
        >>> tr.summary()["syncs"]
        {'item': 10}
        >>> print(tr)  # doctest: +SKIP
    """

    def __init__(self) -> None:
        self.events: list[TraceEvent] = []
        self._recording = False

    # -- recording ------------------------------------------------------------------------

    def __enter__(self) -> Trace:
        if self._recording:
            raise RuntimeError("trace: this trace is already recording; start another with gd.trace()")
        self._recording = True
        _push(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _pop(self)
        self._recording = False

    @property
    def recording(self) -> bool:
        """True inside the ``with`` block."""
        return self._recording

    def clear(self) -> None:
        """Forget the events recorded so far."""
        self.events.clear()

    # -- queries --------------------------------------------------------------------------

    def filter(self, kind: str | None = None, name: str | None = None, device: Any = None) -> list[TraceEvent]:
        """The events matching every criterion given (device as a Device or a string). A kind
        other than 'op', 'copy' and 'sync', or a copy name other than COPY_KINDS, raises: a
        misspelled one would match nothing, and a test counting it would pass unseen."""
        if kind is not None and kind not in EVENT_KINDS:
            raise ValueError(f"Trace.count: kind must be one of {', '.join(map(repr, EVENT_KINDS))} or None, "
                             f"got {reprlib.repr(kind)}")
        if kind == "copy" and name is not None and name not in COPY_KINDS:
            raise ValueError(f"Trace.count: a copy is one of {', '.join(map(repr, COPY_KINDS))}, got "
                             f"{reprlib.repr(name)}")
        dev = None if device is None else str(device)
        return [
            e
            for e in self.events
            if (kind is None or e.kind == kind) and (name is None or e.name == name) and (dev is None or e.device == dev)
        ]

    def count(self, kind: str | None = None, name: str | None = None, device: Any = None) -> int:
        """How many events match, e.g. ``tr.count('sync', 'item')`` or ``tr.count('copy')``."""
        return len(self.filter(kind, name, device))

    @property
    def ops(self) -> list[TraceEvent]:
        return self.filter("op")

    @property
    def copies(self) -> list[TraceEvent]:
        return self.filter("copy")

    @property
    def syncs(self) -> list[TraceEvent]:
        return self.filter("sync")

    def summary(self) -> dict[str, Any]:
        """Counts as a dict.

        ``ops``: {device: count}; ``ops_by_name``: {device: {op: count}}; ``copies``:
        {kind: {'count', 'bytes'}}; ``syncs``: {cause: count}; ``syncs_by_device``:
        {device: count}; ``lines``: {'file:line': {'syncs', 'copies', 'wait_s', 'causes':
        {name: count}}} for the user's lines that copied or synchronized, the longest wait
        first (then the most events); ``totals``: ops, copies, copy_bytes, syncs, host_reads
        (the syncs that read array data to the host, on every device), wait_s, bytes_read,
        bytes_written (of the ops).
        """
        ops: Counter[str] = Counter()
        ops_by_name: dict[str, Counter[str]] = {}
        copies: dict[str, dict[str, int]] = {}
        syncs: Counter[str] = Counter()
        syncs_by_device: Counter[str] = Counter()
        bytes_read = bytes_written = 0
        for e in self.events:
            if e.kind == "op":
                ops[e.device] += 1
                ops_by_name.setdefault(e.device, Counter())[e.name] += 1
                bytes_read += e.bytes_read
                bytes_written += e.bytes_written
            elif e.kind == "copy":
                entry = copies.setdefault(e.name, {"count": 0, "bytes": 0})
                entry["count"] += 1
                entry["bytes"] += e.bytes_written
            elif e.kind == "sync":
                syncs[e.name] += 1
                syncs_by_device[e.device] += 1
        lines = self._by_line()
        return {
            "ops": dict(ops),
            "ops_by_name": {d: dict(c) for d, c in ops_by_name.items()},
            "copies": copies,
            "syncs": dict(syncs),
            "syncs_by_device": dict(syncs_by_device),
            "lines": lines,
            "totals": {
                "ops": sum(ops.values()),
                "copies": sum(c["count"] for c in copies.values()),
                "copy_bytes": sum(c["bytes"] for c in copies.values()),
                "syncs": sum(syncs.values()),
                "host_reads": sum(n for cause, n in syncs.items() if cause in HOST_READS),
                "wait_s": sum(e.wait_s for e in self.events),
                "bytes_read": bytes_read,
                "bytes_written": bytes_written,
            },
        }

    def _by_line(self) -> dict[str, dict[str, Any]]:
        lines: dict[str, dict[str, Any]] = {}
        for e in self.events:
            if e.kind == "op":
                continue
            entry = lines.setdefault(e.where or "?", {"syncs": 0, "copies": 0, "wait_s": 0.0, "causes": {}})
            entry["syncs" if e.kind == "sync" else "copies"] += 1
            entry["wait_s"] += e.wait_s
            entry["causes"][e.name] = entry["causes"].get(e.name, 0) + 1
        order = sorted(lines, key=lambda w: (-lines[w]["wait_s"], -lines[w]["syncs"] - lines[w]["copies"]))
        return {w: lines[w] for w in order}

    # -- display --------------------------------------------------------------------------

    def table(self, events: bool = False, limit: int = 50) -> str:
        """A readable table of the summary; ``events=True`` also lists the first ``limit`` events."""
        s = self.summary()
        t = s["totals"]
        lines = [
            f"trace: {len(self.events)} events: {t['ops']} ops, {t['copies']} copies "
            f"({format_bytes(t['copy_bytes'])}), {t['syncs']} syncs"
        ]
        if s["ops_by_name"]:
            shown = {d: device_label(d) for d in s["ops_by_name"]}  # 'cuda:0 (emulated)' says so
            w = max(8, *map(len, shown.values()))
            lines += ["", f"  {'op':<20} {'device':<{w}} {'count':>8}"]
            for device, names in s["ops_by_name"].items():
                for name, n in sorted(names.items(), key=lambda kv: -kv[1]):
                    lines.append(f"  {name:<20} {shown[device]:<{w}} {n:>8}")
        if s["copies"]:
            lines += ["", f"  {'copy':<20} {'':<8} {'count':>8} {'bytes':>12}"]
            for kind, c in s["copies"].items():
                lines.append(f"  {kind:<20} {'':<8} {c['count']:>8} {format_bytes(c['bytes']):>12}")
        if s["syncs"]:
            lines += ["", f"  {'sync cause':<20} {'':<8} {'count':>8}"]
            for cause, n in sorted(s["syncs"].items(), key=lambda kv: -kv[1]):
                lines.append(f"  {cause:<20} {'':<8} {n:>8}")
        if s["lines"]:
            lines += ["", f"  {'line (copies and syncs)':<40} {'syncs':>6} {'copies':>6} {'waited':>10}  causes"]
            for where, c in s["lines"].items():
                causes = ", ".join(f"{name} x{n}" for name, n in c["causes"].items())
                lines.append(f"  {where[-40:]:<40} {c['syncs']:>6} {c['copies']:>6} "
                             f"{format_seconds(c['wait_s']):>10}  {causes}")
        if events and self.events:
            shown = {e.device: device_label(e.device) for e in self.events[:limit]}
            w = max(8, *map(len, shown.values()))
            lines += ["", f"  {'#':>5} {'kind':<5} {'name':<14} {'device':<{w}} {'dtype':<8} {'shapes':<28} "
                          f"{'read':>10} {'written':>10}"]
            for i, e in enumerate(self.events[:limit]):
                shapes = ", ".join(str(tuple(s)) for s in e.shapes)
                lines.append(
                    f"  {i:>5} {e.kind:<5} {e.name:<14} {shown[e.device]:<{w}} {e.dtype or '-':<8} {shapes:<28.28} "
                    f"{format_bytes(e.bytes_read):>10} {format_bytes(e.bytes_written):>10}"
                )
            if len(self.events) > limit:
                lines.append(f"  ... {len(self.events) - limit} more (tr.events has them all)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        t = self.summary()["totals"]
        state = "recording" if self._recording else "stopped"
        return f"<Trace {state}: {len(self.events)} events, {t['ops']} ops, {t['copies']} copies, {t['syncs']} syncs>"


def trace() -> Trace:
    """Record every operation, copy and synchronization inside a ``with`` block.

    Example (the chapter's norm-logging loop):
        >>> import gpudev as gd
        >>> w = gd.randn(1000, device=gd.try_gpu())
        >>> with gd.trace() as tr:
        ...     for step in range(1000):
        ...         w -= 0.001 * w
        ...         loss = gd.norm(w).item()  # a synchronization every step
        >>> tr.count("sync", "item")
        1000
        >>> norms = gd.zeros(1000, device=w.device)
        >>> with gd.trace() as tr:
        ...     for step in range(1000):
        ...         w -= 0.001 * w
        ...         norms[step] = gd.norm(w)  # stays on the device
        ...     log = norms.tolist()          # one synchronization
        >>> tr.summary()["syncs"]
        {'tolist': 1}
    """
    return Trace()
