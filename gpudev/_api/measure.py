"""Measuring (csrc/core/trace.c; gpudev/timing.py, latency.py, trace.py, strict.py): timing,
the latency table, the trace of operations and syncs, strict mode."""

from __future__ import annotations

from .. import latency, strict, timing, trace
from . import declare

declare("measure", timing, "BenchmarkResult Timer benchmark")
declare("measure", latency, "latency_table")
declare("measure", trace, "Trace trace")
declare("measure", strict, "StrictModeError StrictModeWarning strict")
