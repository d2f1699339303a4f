"""``gd.strict()``: make every hidden synchronization or read back to the host raise (or warn)
at the user's line, the way JAX's ``transfer_guard`` and PyTorch's ``set_sync_debug_mode`` do,
but per thread, nestable, and on the CPU too.

    >>> import gpudev as gd
    >>> w = gd.randn(10)
    >>> with gd.strict("sync"):
    ...     w.sum().item()
    Traceback (most recent call last):
    gpudev.strict.StrictModeError: strict('sync'): item() ... at <doctest ...>:2; ...

Modes (one table, MODES): 'sync' catches every synchronization (item, tolist, repr, bool,
NumPy conversion, and those hidden inside gpudev's own functions); 'copy' catches every read
of device data back to the host; 'all' catches both and every copy between devices (h2d,
d2h, d2d, peer); 'off' lifts an outer block. The innermost block of the calling thread
decides; ``GPUDEV_STRICT=sync`` (or ``copy``, ``all``, with ``:warn`` for warnings, e.g.
``GPUDEV_STRICT=sync:warn``) sets the mode of every thread outside any block.

Explicit calls stay allowed (``explicit=True``): ``gd.synchronize()``, ``a.to('cpu')`` and
``a.cpu()`` written in the user's own code, and gpudev's measuring (``Timer``,
``benchmark``). ``allow=`` names more causes to let through, by the names ``gd.trace()``
gives them ('item', 'tolist', 'h2d', ...).

On the CPU nothing is asynchronous, but gpudev records the same synchronization points, so
strict mode reports the lines that would stall a GPU: a student without one learns the same
lesson.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import reprlib
import sys
import threading
import warnings
from collections.abc import Iterable
from typing import Any, NamedTuple

from . import _C
from ._devices import device_label
_trace = importlib.import_module(".trace", __package__)  # the module (gd.trace is its function)

__all__ = ["MODES", "StrictModeError", "StrictModeWarning", "strict"]


class StrictModeError(_C.GpudevError, RuntimeError):
    """A synchronization or copy that ``gd.strict`` forbids, raised at the user's line."""


class StrictModeWarning(UserWarning):
    """A synchronization or copy that ``gd.strict(..., action='warn')`` reports."""


# which trace events each mode catches: kinds of 'sync' events (all, or those that read
# device data to the host) and of 'copy' events. A d2h copy is always caught by the sync
# that comes with it, which names its cause (and so can be told explicit or hidden).
MODES: dict[str, dict[str, Any]] = {
    "sync": {"syncs": "all", "copies": frozenset()},
    "copy": {"syncs": _trace.HOST_READS, "copies": frozenset()},
    "all": {"syncs": "all", "copies": frozenset({"h2d", "d2d", "peer"})},
    "off": {"syncs": frozenset(), "copies": frozenset()},
}
ACTIONS = ("raise", "warn")
# causes a user asks for by name; allowed with explicit=True when written in the user's code
_EXPLICIT_DIRECT = frozenset({"synchronize", "cpu copy"})
# gpudev's measuring synchronizes on purpose, whoever calls it
_EXPLICIT_ANYWHERE = frozenset({"Timer", "benchmark"})
# why each cause stalls, and what to write instead
_ADVICE = {
    "item": "keep the value on the device (e.g. losses[step] = loss) and read them all once after the loop",
    "tolist": "read the values once after the loop, not every step",
    "repr": "print arrays outside the loop, or print a summary once at the end",
    "numpy": "convert once after the loop, with a.cpu().numpy()",
    "__array__": "convert once after the loop, with a.cpu().numpy()",
    "buffer": "convert once after the loop, with a.cpu().numpy()",
    "__dlpack__": "hand the array over once after the loop",
    "pickle": "send the arrays to other processes once, not every step",
    "cpu copy": "copy once after the loop",
    "non-blocking copy": "use the result of a.to(..., non_blocking=True) later, after the work it should overlap",
}


class _Setting(NamedTuple):
    mode: str
    action: str
    explicit: bool
    allow: frozenset


def _parse(mode: Any, action: Any, allow: Any, op: str) -> tuple[str, str, frozenset]:
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"{op}: mode must be one of {', '.join(repr(m) for m in MODES)}, got {reprlib.repr(mode)}; "
                         f"e.g. gd.strict('sync')")
    if not isinstance(action, str) or action not in ACTIONS:
        raise ValueError(f"{op}: action must be 'raise' or 'warn', got {reprlib.repr(action)}")
    names = tuple(allow) if isinstance(allow, (list, tuple, set, frozenset)) else None
    if names is None or not all(isinstance(a, str) for a in names):
        raise TypeError(f"{op}: allow must be a list of cause names such as ['item', 'h2d'], got {reprlib.repr(allow)}")
    unknown = sorted(n for n in names if n not in known_causes())
    if unknown:  # a misspelled cause would let nothing through, silently
        raise ValueError(f"{op}: allow names no cause gd.trace() reports: {', '.join(map(repr, unknown))}; causes "
                         f"are the host reads ({', '.join(sorted(_trace.HOST_READS))}), the copies "
                         f"({', '.join(_trace.COPY_KINDS)}), {', '.join(sorted(_EXPLICIT_DIRECT | _EXPLICIT_ANYWHERE))}, "
                         f"and the names of gpudev's functions and methods that synchronize")
    return mode, action, frozenset(names)


def known_causes() -> frozenset[str]:
    """Every name a sync or copy event can carry: the host reads, the copy kinds, the explicit
    syncs, and the names of gpudev's functions and Array methods (an operation that
    synchronizes inside, such as nonzero, names the sync after itself)."""
    global _KNOWN
    if _KNOWN is None:
        import gpudev

        names = {n for n in dir(gpudev) if not n.startswith("_")} | {n for n in dir(_C.Array)}
        _KNOWN = frozenset(names | _trace.HOST_READS | set(_trace.COPY_KINDS) | _EXPLICIT_DIRECT
                           | _EXPLICIT_ANYWHERE | {"__cuda_array_interface__", "deferred check", "getitem",
                                                    "setitem", "memory_stats", "non-blocking copy"})
    return _KNOWN


_KNOWN: frozenset[str] | None = None


def _from_environment() -> _Setting | None:
    value = os.environ.get("GPUDEV_STRICT", "").strip()
    if not value:
        return None
    mode, _, action = value.partition(":")
    try:
        mode, action, allow = _parse(mode, action or "raise", (), "GPUDEV_STRICT")
    except ValueError as exc:
        raise ValueError(f"{exc}; set GPUDEV_STRICT to sync, copy or all, optionally with :warn, "
                         f"e.g. GPUDEV_STRICT=sync:warn, or unset it") from None
    return _Setting(mode, action, True, allow)


_local = threading.local()  # .stack: this thread's settings, innermost last
_environment = _from_environment()
_users = 0  # strict blocks open in all threads (the watcher is installed while any is)
_users_lock = threading.Lock()


def _current() -> _Setting | None:
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else _environment


_MACHINERY = (os.path.abspath(__file__), os.path.abspath(_trace.__file__))
# gpudev's Python functions that only forward a user's explicit call to the C core:
# (file name, function name)
_FORWARDERS = frozenset({("_array.py", "to"), ("cuda.py", "synchronize")})


def _explicit(event: _trace.TraceEvent) -> bool:
    if event.name in _EXPLICIT_ANYWHERE:
        return True
    if event.name not in _EXPLICIT_DIRECT:
        return False
    # between the call into gpudev's C code and the user's frame there may only be forwarders:
    # no gpudev function hid the call
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename in _MACHINERY:
        frame = frame.f_back
    user = _trace.user_frame(1)
    while frame is not None and frame is not user:
        if (os.path.basename(frame.f_code.co_filename), frame.f_code.co_name) not in _FORWARDERS:
            return False
        frame = frame.f_back
    return frame is not None


def _caught(setting: _Setting, event: _trace.TraceEvent) -> bool:
    rule = MODES[setting.mode]
    if event.kind == "sync":
        hit = rule["syncs"] == "all" or event.name in rule["syncs"]
    elif event.kind == "copy":
        hit = event.name in rule["copies"]
    else:
        return False
    if not hit or event.name in setting.allow:
        return False
    return not (setting.explicit and _explicit(event))


def _message(setting: _Setting, event: _trace.TraceEvent) -> str:
    on_cpu = event.device == "cpu"
    what = f"{event.name}()" if event.name in ("item", "tolist", "repr", "numpy") else repr(event.name)
    if event.kind == "copy":
        head = f"a {event.name} copy to {device_label(event.device)}"
    elif on_cpu:
        head = f"{what} would synchronize a GPU (on the CPU nothing waits, but on a GPU this line stalls)"
    else:
        head = f"{what} synchronizes {device_label(event.device)}"
    advice = _ADVICE.get(event.name, "move it out of the loop")
    return (f"strict({setting.mode!r}): {head} at {event.where or 'an unknown line'}; {advice}, "
            f"or let it through with gd.strict({setting.mode!r}, allow=[{event.name!r}])")


def _watch(event: _trace.TraceEvent) -> None:
    setting = _current()
    if setting is None or not _caught(setting, event):
        return
    message = _message(setting, event)
    if setting.action == "raise":
        raise StrictModeError(message)
    frame = _trace.user_frame(2)
    if frame is None:
        warnings.warn(message, StrictModeWarning, stacklevel=2)
    else:
        registry = frame.f_globals.setdefault("__warningregistry__", {})
        warnings.warn_explicit(message, StrictModeWarning, frame.f_code.co_filename, frame.f_lineno,
                               module=frame.f_globals.get("__name__"), registry=registry)


def _hold() -> None:
    global _users
    with _users_lock:
        _users += 1
        if _users == 1 and _environment is None:
            _trace.add_watcher(_watch)


def _release() -> None:
    global _users
    with _users_lock:
        _users -= 1
        if _users == 0 and _environment is None:
            _trace.remove_watcher(_watch)


class _Strict(contextlib.ContextDecorator):
    """What gd.strict() returns: a context manager (or decorator) for one setting."""

    def __init__(self, setting: _Setting) -> None:
        self.setting = setting

    def __enter__(self) -> _Strict:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        _hold()
        stack.append(self.setting)
        return self

    def __exit__(self, *exc: object) -> None:
        _local.stack.pop()
        _release()

    def __repr__(self) -> str:
        s = self.setting
        return f"gd.strict({s.mode!r}, action={s.action!r}, explicit={s.explicit}, allow={sorted(s.allow)})"


def strict(mode: str = "sync", action: str = "raise", *, explicit: bool = True,
           allow: Iterable[str] = ()) -> _Strict:
    """Raise (or warn) at each synchronization or copy that `mode` catches in this thread,
    inside ``with gd.strict(...):`` (or in a function decorated with it).

    ``mode``: 'sync', 'copy', 'all' or 'off' (see MODES); ``action``: 'raise' or 'warn';
    ``explicit=True`` lets ``gd.synchronize()`` and ``a.to('cpu')`` / ``a.cpu()`` written in
    your code through; ``allow`` names causes to let through ('item', 'h2d', ...).

    Example (a training loop that reads its loss every step):
        >>> import gpudev as gd
        >>> losses = gd.zeros(3)
        >>> with gd.strict("sync"):
        ...     for step in range(3):
        ...         losses[step] = (gd.randn(4) ** 2).mean()   # stays on the device
        >>> with gd.strict("sync", action="warn"):
        ...     total = losses.sum().item()                      # doctest: +SKIP
        StrictModeWarning: strict('sync'): item() would synchronize a GPU ... at <stdin>:2; ...
    """
    mode, action, allowed = _parse(mode, action, allow, "strict")
    return _Strict(_Setting(mode, action, bool(explicit), allowed))


if _environment is not None:  # every thread, for the whole process
    _trace.add_watcher(_watch)
