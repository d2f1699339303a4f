"""``gd.trace()``: what ran where, every copy between devices and every synchronization.

The C core calls one process-wide hook for each operation, copy and synchronization while a
hook is installed; when none is, the only cost is one pointer test per operation. This
module installs a dispatcher while at least one trace is active and hands each event to every
active trace, so nested traces work: an inner trace's events also reach the outer ones.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any, NamedTuple

from . import _C
from ._format import format_bytes

__all__ = ["Trace", "TraceEvent", "trace"]


class TraceEvent(NamedTuple):
    """One recorded event.

    kind:  'op', 'copy' or 'sync'.
    name:  the operation ('add', 'matmul', ...), the copy kind ('h2d', 'd2h', 'd2d', 'peer')
           or what caused the synchronization ('item', 'tolist', 'repr', 'cpu copy',
           'synchronize', 'Timer', 'benchmark', ...).
    device: where it ran ('cpu', 'cuda:0'); for copies the destination.
    shapes: the input shapes (ops), ((shape,),) for copies, () for syncs.
    dtype:  'float32', 'float64', 'int64' or None.
    """

    kind: str
    name: str
    device: str
    shapes: tuple
    dtype: str | None
    bytes_read: int
    bytes_written: int


# ---------------------------------------------------------------------------------------------
# the dispatcher: one hook in C, any number of active traces in Python
# ---------------------------------------------------------------------------------------------

_lock = threading.Lock()
_active: tuple[Trace, ...] = ()  # innermost last; replaced, never mutated, so reads need no lock
_foreign_hook: Any = None  # a hook someone installed before the first trace, still fed


def _dispatch(event: tuple) -> None:
    record = TraceEvent._make(event)
    for tr in _active:
        tr.events.append(record)
    if _foreign_hook is not None:
        _foreign_hook(event)


def _push(tr: Trace) -> None:
    global _active, _foreign_hook
    with _lock:
        if not _active:
            previous = _C._set_trace_hook(_dispatch)
            _foreign_hook = previous if callable(previous) and previous is not _dispatch else None
        _active = _active + (tr,)


def _pop(tr: Trace) -> None:
    global _active, _foreign_hook
    with _lock:
        _active = tuple(t for t in _active if t is not tr)
        if not _active:
            _C._set_trace_hook(_foreign_hook)
            _foreign_hook = None


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
        """The events matching every criterion given (device as a Device or a string)."""
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
        {device: count}; ``totals``: ops, copies, copy_bytes, syncs, bytes_read,
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
        return {
            "ops": dict(ops),
            "ops_by_name": {d: dict(c) for d, c in ops_by_name.items()},
            "copies": copies,
            "syncs": dict(syncs),
            "syncs_by_device": dict(syncs_by_device),
            "totals": {
                "ops": sum(ops.values()),
                "copies": sum(c["count"] for c in copies.values()),
                "copy_bytes": sum(c["bytes"] for c in copies.values()),
                "syncs": sum(syncs.values()),
                "bytes_read": bytes_read,
                "bytes_written": bytes_written,
            },
        }

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
            lines += ["", f"  {'op':<20} {'device':<8} {'count':>8}"]
            for device, names in s["ops_by_name"].items():
                for name, n in sorted(names.items(), key=lambda kv: -kv[1]):
                    lines.append(f"  {name:<20} {device:<8} {n:>8}")
        if s["copies"]:
            lines += ["", f"  {'copy':<20} {'':<8} {'count':>8} {'bytes':>12}"]
            for kind, c in s["copies"].items():
                lines.append(f"  {kind:<20} {'':<8} {c['count']:>8} {format_bytes(c['bytes']):>12}")
        if s["syncs"]:
            lines += ["", f"  {'sync cause':<20} {'':<8} {'count':>8}"]
            for cause, n in sorted(s["syncs"].items(), key=lambda kv: -kv[1]):
                lines.append(f"  {cause:<20} {'':<8} {n:>8}")
        if events and self.events:
            lines += ["", f"  {'#':>5} {'kind':<5} {'name':<14} {'device':<8} {'dtype':<8} {'shapes':<28} {'read':>10} {'written':>10}"]
            for i, e in enumerate(self.events[:limit]):
                shapes = ", ".join(str(tuple(s)) for s in e.shapes)
                lines.append(
                    f"  {i:>5} {e.kind:<5} {e.name:<14} {e.device:<8} {e.dtype or '-':<8} {shapes:<28.28} "
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
