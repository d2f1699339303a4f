"""Reductions and sorting (csrc/core/reduce.c; gpudev/_statistics.py, _softmax.py): sums, means,
extremes, scans, sorts, searches and unique values. gd.max and gd.min (PyTorch's and NumPy's
forms, gpudev/_torch.py) and the softmaxes declare themselves where they are defined."""

from __future__ import annotations

from .. import _C, _softmax, _statistics, _torch  # noqa: F401 (their @public declarations)
from . import declare

declare("reduce", _C, "all any argmax argmin norm", numpy="all any argmax argmin")
declare("reduce", _statistics, "argsort count_nonzero cumulative_prod cumulative_sum diff mean prod "
        "searchsorted sort std sum unique_all unique_counts unique_inverse unique_values var",
        numpy="mean prod std sum var")
