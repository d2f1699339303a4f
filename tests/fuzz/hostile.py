"""What the hostile-argument tests share: hostile objects and the oracle that judges a call.

Hostile objects are what a careless or malicious caller passes: ``__index__``, ``__float__``
and ``__bool__`` that raise or change the container they sit in. They raise :class:`Boom`, so
the oracle can tell their exception from gpudev's.

The oracle (:func:`judge`): a call either returns or raises one of the exception kinds gpudev
documents (TypeError, ValueError, IndexError, OverflowError, BufferError, gpudev's own errors,
MemoryError) or the caller's own :class:`Boom`, with a message that is not empty and not
absurdly long (gpudev shows a hostile argument briefly); never a crash, a hang, a
SystemError, a RecursionError or a bare RuntimeError. How many calls each sweep makes comes
from the fuzz profile (conftest.py).

    >>> judge(lambda: int("x")).ok
    True
"""

from __future__ import annotations

import dataclasses
import faulthandler
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import gpudev as gd

from .oracle import SANITIZED

# A call that takes longer than this is a hang: the process dumps every thread's stack and
# exits, so the run fails loudly instead of waiting forever.
HANG_SECONDS = 600 if SANITIZED else 120

# ---------------------------------------------------------------------------------------------
# hostile objects
# ---------------------------------------------------------------------------------------------


class Boom(Exception):
    """Raised by hostile objects; a call may let it through (it is the caller's own error)."""


class IndexRaises:
    def __index__(self) -> int:
        raise Boom("__index__")


class FloatRaises:
    def __float__(self) -> float:
        raise Boom("__float__")


class BoolRaises:
    def __bool__(self) -> bool:
        raise Boom("__bool__")


class ReprRaises:
    """Any message that shows this object with repr() gets Boom instead."""

    def __repr__(self) -> str:
        raise Boom("__repr__")


class IndexMutates:
    """``__index__`` clears `container` (the list it sits in, say) and returns `value`."""

    def __init__(self, container: Any, value: int = 2) -> None:
        self.container = container
        self.value = value

    def __index__(self) -> int:
        _clear(self.container)
        return self.value

    def __repr__(self) -> str:
        return f"IndexMutates({self.value})"


class FloatMutates(IndexMutates):
    def __float__(self) -> float:
        _clear(self.container)
        return float(self.value)


class BoolMutates(IndexMutates):
    def __bool__(self) -> bool:
        _clear(self.container)
        return True


_churn: list = []


def _clear(container: Any) -> None:
    """Empty `container`, then allocate fresh objects where its items and item array were, so
    that a stale pointer into it reads something else rather than what it held."""
    if isinstance(container, (list, dict)):
        container.clear()
    _churn[:] = [int(str(10_000 + i)) for i in range(256)] + [[i] * 3 for i in range(64)]


def fresh_int(value: int) -> int:
    """`value` as a new int object (not a cached small int nor a code constant), which is freed
    as soon as the list holding it lets go."""
    return int(str(value))


def deep_list(depth: int) -> list:
    """[[[...[0]...]]] nested `depth` deep (deeper than NumPy's 64 dimensions)."""
    out: list = [0]
    for _ in range(depth):
        out = [out]
    return out


# ---------------------------------------------------------------------------------------------
# the oracle
# ---------------------------------------------------------------------------------------------

ALLOWED = (TypeError, ValueError, IndexError, OverflowError, BufferError, MemoryError, gd.GpudevError, Boom)
FORBIDDEN = (SystemError, RecursionError)  # a C bug, and a message that recursed
MAX_MESSAGE = 4000


@dataclasses.dataclass
class Verdict:
    ok: bool
    outcome: str  # "returned" or the exception's type name
    why: str = ""
    result: Any = None


def judge(call: Callable[[], Any], allowed: tuple[type[BaseException], ...] = ALLOWED,
          verbatim: tuple[type[BaseException], ...] = ()) -> Verdict:
    """Run `call` and judge the outcome by the oracle above; exceptions of the kinds in
    `verbatim` may quote an argument in full (Python's OSError quotes the path it was given)."""
    try:
        result = call()
    except FORBIDDEN as exc:
        return Verdict(False, type(exc).__name__, f"{type(exc).__name__}: {_text(exc)}")
    except allowed as exc:
        message = _text(exc)
        if not message and not isinstance(exc, Boom):
            return Verdict(False, type(exc).__name__, f"{type(exc).__name__} without a message")
        if len(message) > MAX_MESSAGE and not isinstance(exc, verbatim):
            return Verdict(False, type(exc).__name__, f"{type(exc).__name__} with a {len(message)}-character "
                                                      f"message: {message[:200]}...")
        return Verdict(True, type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 - every other kind is a contract break
        return Verdict(False, type(exc).__name__, f"{type(exc).__name__}: {_text(exc)[:500]}")
    return Verdict(True, "returned", result=result)


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception as inner:  # noqa: BLE001
        return f"<str() raised {type(inner).__name__}>"


@contextmanager
def hang_watchdog(seconds: float = HANG_SECONDS) -> Iterator[None]:
    """Kill the process with every thread's stack on stderr if the body runs past `seconds`."""
    faulthandler.dump_traceback_later(seconds, exit=True, file=sys.stderr)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
