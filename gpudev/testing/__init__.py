"""Testing GPU code with pytest: assertions about speed, structure and numbers, and (in the
plugin module ``_gpudev_pytest``, which pytest loads wherever gpudev is installed) the
``gd_device`` and ``gd_benchmark`` fixtures.

- ``assert_faster(fast, slow, by=1.5)``: A/B timing in one process that ends as pass, fail or
  undecided (what undecided does: ``--gd-undecided=skip|xfail|fail``);
- ``assert_syncs(max=0)`` and ``assert_copies(max=1, direction='d2h')``: context managers
  that count synchronizations and copies with ``gd.trace()`` and name the lines
  (``check_syncs`` and ``check_copies``: the same checks on events recorded elsewhere);
- ``assert_allclose(actual, desired)``: with the tolerances gpudev documents for CPU-vs-GPU
  results (TOLERANCES);
- ``gd.strict('sync')`` (in gpudev itself) turns each hidden sync into an error at its line.

    >>> import gpudev as gd
    >>> from gpudev.testing import assert_syncs
    >>> losses = gd.zeros(10)
    >>> with assert_syncs(max=1):
    ...     for step in range(10):
    ...         losses[step] = gd.randn(8).mean()
    ...     history = losses.tolist()
"""

from __future__ import annotations

from .speed import UNDECIDED, Comparison, UndecidedError, assert_faster, compare
from .numerics import TOLERANCES, assert_allclose, tolerance
from .structure import DIRECTIONS, assert_copies, assert_syncs, check_copies, check_syncs

__all__ = ["DIRECTIONS", "TOLERANCES", "UNDECIDED", "Comparison", "UndecidedError", "assert_allclose",
           "assert_copies", "assert_faster", "assert_syncs", "check_copies", "check_syncs", "compare", "tolerance"]
