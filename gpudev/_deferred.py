"""Checks of values on a device, deferred to the next host read: the check a host round-trip
would make now (an out-of-range class index) is kept as a small array on the device and read
by the C core at the next synchronization point (``item()``, ``tolist()``, ``synchronize()``,
a copy to the host...), where the host waits anyway. A training loop then costs no sync per
step, and a bad value still raises, at the first read after it, with the line that made it.

The core keeps the list (``_C._deferred_checks()``); each entry is
``(bounds, lo, hi, op, describe)``: ``bounds`` an int64 array ``[min, -max]`` on the device,
``describe(value)`` the exception to raise for a value outside ``[lo, hi)``. Storing ``-max``
lets the check of the next call merge into the last entry with one elementwise minimum, so a
loop without host reads keeps one entry, not one per step.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _C
from .trace import user_frame, where_text


def check_range_later(op: str, values: _C.Array, lo: int, hi: int,
                      describe: Callable[[int, str], BaseException]) -> None:
    """Check lo <= values < hi (int64, non-empty) at the next host read, with no sync now;
    ``describe(value, where)`` gives the exception, where = the user's line of this call."""
    from . import no_grad, stack  # gpudev's own functions: the package is loaded by now

    with no_grad():
        bounds = stack([values.min(), -values.max()])
    checks = _C._deferred_checks()
    last = checks[-1] if checks else None
    if last is not None and last[1:4] == (lo, hi, op) and last[0].device == bounds.device:
        checks[-1] = (_C.minimum(last[0], bounds), lo, hi, op, last[4])
        return
    where = where_text(user_frame(1)) or "an unknown line"
    checks.append((bounds, lo, hi, op, lambda value: describe(value, where)))
