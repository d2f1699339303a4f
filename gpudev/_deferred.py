"""Checks of values on a device, deferred to the next host read: the check a host round-trip
would make now (an out-of-range class index) is kept as a small array on the device and read
by the C core where the host reads anyway. A training loop then costs no sync per step, and a
bad value still raises, with the line that made it.

A check runs (csrc/core/trace.c):
- at every host read (``item()``, ``tolist()``, ``repr``, ``.numpy()``, ``np.asarray``, the
  buffer protocol, DLPack, a copy to the CPU) of the arrays it guards, the results of the
  call that made it, and of anything computed from them, in whichever thread reads them; a
  failed check raises again at each such read, so a wrong value is never read silently;
- at the next sync point of any kind in the thread that made it (as a GPU reports a failed
  kernel at the next synchronization), once. Another thread's unrelated read never runs it.

Each check is a list ``[bounds, lo, hi, op, describe, state]``: ``bounds`` an int64 array
``[min, -max]`` on the device, ``describe(value)`` the exception for a value outside
``[lo, hi)``, ``state`` None while pending (the core sets True or the bad value). Storing
``-max`` lets the thread's list merge the check of the next call into its last entry with one
elementwise minimum, so a loop without host reads keeps one entry, not one per step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from . import _C
from .trace import user_frame, where_text


def check_range_later(op: str, values: _C.Array, lo: int, hi: int,
                      describe: Callable[[int, str], BaseException], guards: Iterable[_C.Array] = ()) -> None:
    """Check lo <= values < hi (int64, non-empty) at the next host read of ``guards`` (the
    results that the values decide) and at this thread's next sync point, with no sync now;
    ``describe(value, where)`` gives the exception, where = the user's line of this call."""
    from . import no_grad, stack  # gpudev's own functions: the package is loaded by now

    with no_grad():
        bounds = stack([values.min(), -values.max()])
    where = where_text(user_frame(1)) or "an unknown line"
    check = [bounds, lo, hi, op, lambda value: describe(value, where), None]
    for g in guards:
        _C._guard(g, check)
    checks = _C._deferred_checks()
    last = checks[-1] if checks else None
    if last is not None and last[1:4] == [lo, hi, op] and last[5] is None and last[0].device == bounds.device:
        checks[-1] = [_C.minimum(last[0], bounds), lo, hi, op, last[4], None]
        return
    checks.append(check)  # the same list: what the thread's run finds, the guards know too
