"""Sizes whose totals overflow, against NumPy's answer on every device: repeat counts that wrap
int64, eye, tile, arange and concatenate of more elements than any array can hold, refused at
once with a clear error and without allocating first (and repeat's ordinary answers).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpudev as gd
from conftest import host

# ---------------------------------------------------------------------------------------------
# totals that overflow: repeat, eye, tile
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("counts", [[2**63 - 1, 2**63 - 1, 5], [2**62] * 4, [2**62, 2**62, 2**62, 0]])
def test_repeat_counts_whose_total_wraps_raise(device, counts):
    x = gd.arange(float(len(counts)), device=device)
    with pytest.raises(ValueError, match=r"repeat: the counts add up to more than 2\*\*63 - 1 elements"):
        gd.repeat(x, gd.asarray(counts, device=device))


def test_repeat_totals_too_large_for_any_array_raise_valueerror_as_numpy(device):
    x = gd.arange(3.0, device=device)
    with pytest.raises(ValueError):  # NumPy's exception for a repeat no array can hold
        np.repeat(np.arange(3.0), 2**61)
    with pytest.raises(ValueError, match=r"repeat: an array of shape \(6917529027641081856,\) and dtype float32 "
                                         r"would need more than 2\*\*63 bytes"):
        gd.repeat(x, 2**61)
    with pytest.raises(ValueError, match=r"repeat: the result would have shape \(0, 9223372036854775808\)"):
        gd.repeat(gd.zeros((0, 2), device=device), 2**62, axis=1)
    with pytest.raises(ValueError, match="repeat: an array of shape"):
        gd.repeat(x, gd.asarray([2**62, 1, 1], device=device))  # fits int64, not memory's address range


def test_repeat_still_gives_numpys_answer(device):
    x = np.arange(6.0).reshape(2, 3)
    for counts in ([1, 0, 3], [2], [0, 0, 0]):
        got = gd.repeat(gd.asarray(x, device=device), gd.asarray(counts, device=device), axis=1)
        np.testing.assert_array_equal(host(got), np.repeat(x, counts, axis=1))
    np.testing.assert_array_equal(host(gd.repeat(gd.asarray(x, device=device), 2)), np.repeat(x, 2))
    with pytest.raises(ValueError, match="repeat: repeats must be non-negative, got -1"):
        gd.repeat(gd.asarray(x, device=device), gd.asarray([1, -1, 2], device=device), axis=1)


SMALL_ADDRESS_SPACE = 6 << 30  # under it, a 16 GiB temporary fails to allocate instead of filling memory


def _limited(code: str) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python that cannot allocate more than SMALL_ADDRESS_SPACE bytes:
    a bound on its address space, or under AddressSanitizer (`make sanitize`, whose shadow
    memory needs a huge address space) a bound on each allocation."""
    env = dict(os.environ)
    asan = "asan" in env.get("LD_PRELOAD", "")
    if asan:
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + f":max_allocation_size_mb={SMALL_ADDRESS_SPACE >> 20}"

    def limit() -> None:
        if not asan:
            resource.setrlimit(resource.RLIMIT_AS, (SMALL_ADDRESS_SPACE, SMALL_ADDRESS_SPACE))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, preexec_fn=limit, env=env)


def test_eye_too_large_fails_at_once_with_a_clear_error(device):
    out = _limited(f"""
        import gpudev as gd
        try:
            gd.eye(2**31, device="{device}")
        except Exception as exc:
            print(type(exc).__name__, exc)
    """)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ValueError eye: an array of shape (2147483648, 2147483648) and dtype float32 "
                                 "would need more than 2**63 bytes"), out.stdout


def test_eye_builds_only_its_result(device):
    # an empty result with a huge dimension needs no memory: nothing else is built first
    assert gd.eye(2**40, 0, device=device).shape == (2**40, 0)
    for n, m, k in [(3, 3, 0), (3, 5, 2), (5, 3, -1), (4, 4, 9), (4, 4, -2**70), (0, 3, 0), (3, 0, 1)]:
        for dtype in (gd.float32, gd.int64, gd.bool):
            got = gd.eye(n, m, k=k, dtype=dtype, device=device)
            want = np.eye(n, m, k=k if abs(k) < 2**62 else n + m, dtype=dtype)
            np.testing.assert_array_equal(host(got), want)
            assert got.dtype == want.dtype
    with pytest.raises(ValueError, match=r"eye: negative dimensions are not allowed, got \(-1, -1\)"):
        gd.eye(-1, device=device)
    with pytest.raises(TypeError, match="eye: n_rows must be an int, got 2.0"):
        gd.eye(2.0, device=device)


def test_tile_of_a_huge_empty_array_names_the_size(device):
    z = gd.zeros((2**62, 0), device=device)
    with pytest.raises(ValueError, match=r"tile: the result would have shape \(18446744073709551616, 0\)"):
        gd.tile(z, (4, 1))
    with pytest.raises(ValueError, match=r"broadcast_to: shape \(1, 4611686018427387904, 5, 0\) has more than "
                                         r"2\*\*63 - 1 elements"):
        gd.tile(z, (1, 5))
    with pytest.raises(ValueError, match="tile: an array of shape"):
        gd.tile(gd.arange(3, device=device), (2**61,))


def test_arange_and_concat_totals_past_int64_raise(device):
    with pytest.raises(ValueError, match="arange: the range holds 1.84e"):
        gd.arange(-2**63, 2**63 - 1, device=device)
    z = gd.zeros((0, 2**62), device=device)
    with pytest.raises(ValueError, match=r"concatenate: the result has more than 2\*\*63 - 1 elements along axis 1"):
        gd.concat([z, z], axis=1)
