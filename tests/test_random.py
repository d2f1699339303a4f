"""Random numbers: reproducible from a seed, different on successive calls, right ranges and
moments, the exact Philox4x32-10 stream documented in csrc/philox.h, and the same values on
every device."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpudev as gd
from conftest import CPU, FLOAT_DTYPES, assert_array, host, is_gpu

FLOAT_IDS = ["float32", "float64"]

# ---------------------------------------------------------------------------------------------
# a NumPy model of philox.h, vectorised over block counters
# ---------------------------------------------------------------------------------------------

_MASK = np.uint64(0xFFFFFFFF)


def philox_blocks(counters: np.ndarray, seed: int) -> np.ndarray:
    """Philox4x32-10 words, shape (len(counters), 4), for key = seed, as philox.h computes."""
    c = counters.astype(np.uint64)
    c0, c1 = c & _MASK, c >> np.uint64(32)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0 = np.uint64(seed & 0xFFFFFFFF)
    k1 = np.uint64((seed >> 32) & 0xFFFFFFFF)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c0  # < 2**64: exact in uint64
        p1 = np.uint64(0xCD9E8D57) * c2
        n0 = (p1 >> np.uint64(32)) ^ c1 ^ k0
        n2 = (p0 >> np.uint64(32)) ^ c3 ^ k1
        c1, c3, c0, c2 = p1 & _MASK, p0 & _MASK, n0, n2
        k0 = (k0 + np.uint64(0x9E3779B9)) & _MASK
        k1 = (k1 + np.uint64(0xBB67AE85)) & _MASK
    return np.stack([c0, c1, c2, c3], axis=1)


def _box_muller(u1: np.ndarray, u2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = np.sqrt(-2.0 * np.log(1.0 - u1))
    return r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)


def philox_reference(n: int, dtype, normal: bool, seed: int, offset: int = 0) -> np.ndarray:
    """The n values rand/randn produce for (seed, offset) under the layout in philox.h."""
    f32 = np.dtype(dtype) == np.float32
    per = 4 if f32 else 2
    w = philox_blocks(np.arange(offset, offset + math.ceil(n / per), dtype=np.uint64), seed)
    if f32:
        u = (w >> np.uint64(8)).astype(np.float64) * 2.0**-24  # (blocks, 4)
        if normal:
            z0, z1 = _box_muller(u[:, 0], u[:, 1])
            z2, z3 = _box_muller(u[:, 2], u[:, 3])
            u = np.stack([z0, z1, z2, z3], axis=1)
    else:
        hi, lo = w[:, 0::2] >> np.uint64(5), w[:, 1::2] >> np.uint64(6)
        u = (hi.astype(np.float64) * 2.0**26 + lo.astype(np.float64)) * 2.0**-53  # (blocks, 2)
        if normal:
            u = np.stack(_box_muller(u[:, 0], u[:, 1]), axis=1)
    return u.reshape(-1)[:n].astype(dtype)


def _tolerances(dtype, normal: bool) -> dict:
    if not normal:
        return {"rtol": 0, "atol": 0}  # uniforms are exact multiples of 2**-24 / 2**-53
    # log/cos/sin may differ by an ulp between libm, NumPy and the GPU
    return {"rtol": 1e-6, "atol": 1e-6} if np.dtype(dtype) == np.float32 else {"rtol": 1e-13, "atol": 1e-13}


def test_philox_model_known_answer():
    """The model reproduces Random123's published Philox4x32-10 test vector for zero input."""
    # Random123 kat_vectors: philox4x32 10 rounds, counter 0, key 0
    w = philox_blocks(np.zeros(1, np.uint64), 0)[0]
    assert [int(x) for x in w] == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


# ---------------------------------------------------------------------------------------------
# the exact stream
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=FLOAT_IDS)
@pytest.mark.parametrize("normal", [False, True], ids=["rand", "randn"])
@pytest.mark.parametrize("seed", [0, 12345, 2**40 + 7, 2**64 - 1], ids=str)
def test_values_are_the_documented_philox_stream(device, dtype, normal, seed):
    fn = gd.randn if normal else gd.rand
    gd.manual_seed(seed)
    got = fn(1001, dtype=dtype, device=device)
    assert_array(got, philox_reference(1001, dtype, normal, seed), device=device, **_tolerances(dtype, normal))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=FLOAT_IDS)
def test_each_request_advances_by_whole_blocks(device, dtype):
    per = 4 if dtype == gd.float32 else 2
    gd.manual_seed(99)
    first = gd.rand(5, dtype=dtype, device=device)
    second = gd.rand(3, dtype=dtype, device=device)
    used = math.ceil(5 / per)
    assert_array(first, philox_reference(5, dtype, False, 99, 0), rtol=0)
    assert_array(second, philox_reference(3, dtype, False, 99, used), rtol=0)
    # requests that fill whole blocks concatenate to one longer request
    gd.manual_seed(7)
    parts = [gd.randn(2 * per, dtype=dtype, device=device) for _ in range(3)]
    gd.manual_seed(7)
    whole = gd.randn(6 * per, dtype=dtype, device=device)
    assert_array(gd.concatenate(parts), host(whole), rtol=0)


# ---------------------------------------------------------------------------------------------
# reproducibility and shapes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [gd.rand, gd.randn], ids=["rand", "randn"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=FLOAT_IDS)
def test_same_seed_same_values_and_successive_calls_differ(device, fn, dtype):
    gd.manual_seed(2024)
    a = fn(3, 4, dtype=dtype, device=device)
    b = fn(3, 4, dtype=dtype, device=device)
    gd.manual_seed(2024)
    a2 = fn(3, 4, dtype=dtype, device=device)
    b2 = fn(3, 4, dtype=dtype, device=device)
    np.testing.assert_array_equal(host(a), host(a2))
    np.testing.assert_array_equal(host(b), host(b2))
    assert not np.array_equal(host(a), host(b))
    gd.manual_seed(2025)
    assert not np.array_equal(host(fn(3, 4, dtype=dtype, device=device)), host(a))


@pytest.mark.parametrize("fn", [gd.rand, gd.randn], ids=["rand", "randn"])
def test_shape_forms(device, fn):
    for shape in [(2, 3), (7,), (0,), (72, 73, 74)]:
        gd.manual_seed(1)
        a = fn(*shape, device=device)
        gd.manual_seed(1)
        b = fn(shape, device=device)
        assert a.shape == shape and b.shape == shape
        assert a.dtype == np.float32 and a.device == device
        np.testing.assert_array_equal(host(a), host(b))
    assert fn((), device=device).shape == ()
    gd.manual_seed(1)
    flat = fn(24, device=device)
    gd.manual_seed(1)
    assert_array(fn(2, 3, 4, device=device), host(flat).reshape(2, 3, 4), rtol=0)


# ---------------------------------------------------------------------------------------------
# distributions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=FLOAT_IDS)
def test_rand_is_uniform_in_zero_one(device, dtype):
    gd.manual_seed(3)
    n = 10**6
    x = host(gd.rand(n, dtype=dtype, device=device)).astype(np.float64)
    assert x.min() >= 0.0 and x.max() < 1.0
    # mean 1/2 and variance 1/12; standard errors 2.9e-4 and 8.2e-5
    assert abs(x.mean() - 0.5) < 5 * 2.9e-4
    assert abs(x.var() - 1 / 12) < 5 * 8.2e-5
    counts = np.histogram(x, bins=10, range=(0, 1))[0]
    assert (np.abs(counts - n / 10) < 5 * math.sqrt(n * 0.1 * 0.9)).all()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=FLOAT_IDS)
def test_randn_is_standard_normal(device, dtype):
    gd.manual_seed(4)
    n = 10**6
    x = host(gd.randn(n, dtype=dtype, device=device)).astype(np.float64)
    assert np.isfinite(x).all()
    # standard errors of mean, std, and the fraction within one sigma: 1e-3, 7.1e-4, 4.7e-4
    assert abs(x.mean()) < 5e-3
    assert abs(x.std() - 1.0) < 3.6e-3
    assert abs(np.mean(np.abs(x) < 1.0) - 0.682689) < 2.4e-3
    assert abs(np.mean(x > 0) - 0.5) < 2.5e-3


# ---------------------------------------------------------------------------------------------
# the same numbers on every device
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [gd.rand, gd.randn], ids=["rand", "randn"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=FLOAT_IDS)
def test_same_values_on_cpu_and_device(device, fn, dtype):
    gd.manual_seed(0)
    on_device = fn(3, 3, dtype=dtype, device=device)
    gd.manual_seed(0)
    on_cpu = fn(3, 3, dtype=dtype)
    assert on_cpu.device == CPU and on_device.device == device
    normal = fn is gd.randn
    assert_array(on_device, host(on_cpu), **_tolerances(dtype, normal))
    if is_gpu(device):
        gd.manual_seed(0)
        big = fn(100003, dtype=dtype, device=device)
        gd.manual_seed(0)
        assert_array(big, host(fn(100003, dtype=dtype)), **_tolerances(dtype, normal))


def test_seed_must_be_an_int():
    for bad in (1.5, "0", None):
        with pytest.raises(TypeError, match="manual_seed"):
            gd.manual_seed(bad)
    gd.manual_seed(5)
    a = gd.rand(4)
    gd.manual_seed(5)
    np.testing.assert_array_equal(a.numpy(), gd.rand(4).numpy())
