"""Fourier transforms: the gd.fft namespace (gpudev/fft.py)."""

from __future__ import annotations

from .. import fft
from . import declare_modules

declare_modules("fft", fft)
