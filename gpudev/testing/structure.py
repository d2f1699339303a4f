"""Structural checks on top of ``gd.trace()``: how many synchronizations and copies a block
of code makes, whatever the machine's speed.

    >>> import gpudev as gd
    >>> w = gd.randn(100)
    >>> with assert_syncs(max=0):
    ...     w = w * 2                      # no sync
"""

from __future__ import annotations

import contextlib
import importlib
import reprlib
from collections.abc import Iterable, Iterator
from typing import Any

_trace = importlib.import_module("gpudev.trace")  # the module (gd.trace is its function)

__all__ = ["DIRECTIONS", "assert_copies", "assert_syncs", "check_copies", "check_syncs"]

# assert_copies' directions; 'd2h' counts host reads (trace.HOST_READS), so that on the CPU,
# where nothing is copied, the lines that would copy on a GPU count as well
DIRECTIONS = ("d2h", "h2d", "d2d", "peer", "any")


def _check_max(op: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{op}: max must be an int >= 0, got {reprlib.repr(value)}; e.g. {op}(max=0)")


def _by_line(events: list[_trace.TraceEvent]) -> str:
    counts: dict[str, dict[str, int]] = {}
    for e in events:
        causes = counts.setdefault(e.where or "an unknown line", {})
        causes[e.name] = causes.get(e.name, 0) + 1
    order = sorted(counts, key=lambda w: -sum(counts[w].values()))
    return "; ".join(f"{w}: " + ", ".join(f"{name} x{n}" for name, n in counts[w].items()) for w in order[:5])


def _fail(op: str, what: str, events: list, limit: int) -> None:
    raise AssertionError(f"{op}: {len(events)} {what}, at most {limit} allowed; by line: {_by_line(events)}")


def _events(recorded: _trace.Trace | Iterable[_trace.TraceEvent]) -> list[_trace.TraceEvent]:
    return list(recorded.events if isinstance(recorded, _trace.Trace) else recorded)


def check_syncs(recorded: _trace.Trace | Iterable[_trace.TraceEvent], max: int = 0, *,  # noqa: A002
                device: Any = None) -> None:
    """assert_syncs' check on events already recorded: a Trace, or TraceEvents (say, from
    another process, as an autograder receives them)."""
    _check_max("check_syncs", max)
    dev = None if device is None else str(device)
    events = [e for e in _events(recorded) if e.kind == "sync" and (dev is None or e.device == dev)]
    if len(events) > max:
        _fail("assert_syncs", "synchronizations", events, max)


@contextlib.contextmanager
def assert_syncs(max: int = 0, *, device: Any = None) -> Iterator[_trace.Trace]:  # noqa: A002
    """Fail (AssertionError naming each line) if the block synchronizes more than `max`
    times, on `device` or on any. CPU code counts too: its sync points are where a GPU would
    wait. Yields the Trace."""
    _check_max("assert_syncs", max)
    with _trace.trace() as tr:
        yield tr
    check_syncs(tr, max, device=device)


def _copies(events: list[_trace.TraceEvent], direction: str) -> list[_trace.TraceEvent]:
    reads = [e for e in events if _trace.is_host_read(e)]
    if direction == "d2h":
        return reads
    kinds = ("h2d", "d2d", "peer") if direction == "any" else (direction,)
    copies = [e for e in events if e.kind == "copy" and e.name in kinds]
    return copies + (reads if direction == "any" else [])


def _check_direction(op: str, direction: Any) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"{op}: direction must be one of {', '.join(map(repr, DIRECTIONS))}, "
                         f"got {reprlib.repr(direction)}")


def check_copies(recorded: _trace.Trace | Iterable[_trace.TraceEvent], max: int = 0, *,  # noqa: A002
                 direction: str = "d2h") -> None:
    """assert_copies' check on events already recorded (a Trace, or TraceEvents)."""
    _check_direction("check_copies", direction)
    _check_max("check_copies", max)
    events = _copies(_events(recorded), direction)
    if len(events) > max:
        _fail("assert_copies", f"{direction} copies", events, max)


@contextlib.contextmanager
def assert_copies(max: int = 0, *, direction: str = "d2h") -> Iterator[_trace.Trace]:  # noqa: A002
    """Fail if the block makes more than `max` copies in `direction`: 'd2h' (reads of device
    data by the host: item, tolist, repr, NumPy conversion, copies to the CPU, counted on the
    CPU too), 'h2d', 'd2d', 'peer' or 'any'. Yields the Trace."""
    _check_direction("assert_copies", direction)
    _check_max("assert_copies", max)
    with _trace.trace() as tr:
        yield tr
    check_copies(tr, max, direction=direction)
