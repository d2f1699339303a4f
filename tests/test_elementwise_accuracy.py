"""exp, log, tanh and sigmoid, which gpudev computes with bodies of its own that vectorize
(csrc/ewise_exp_log.h, ewise_math.h) rather than with the C library: their error in ulps against the exact
value on every device, for float32 over every binade and for float64 sampled; the C library's
special values; and the same bits for a value wherever it sits in an array."""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from conftest import host

FLOATS = [np.float32, np.float64]
FLOAT_IDS = ["float32", "float64"]
# float64's reference needs more precision than float64: long double where it has it (x86's
# 64-bit mantissa, or quad); where long double is double (macOS on arm64) those tests skip
EXTENDED = np.finfo(np.longdouble).nmant >= 63


def _exact(name: str, x: np.ndarray) -> np.ndarray:
    """The function at x, in a precision well above x's."""
    wide = x.astype(np.float64 if x.dtype == np.float32 else np.longdouble)
    with np.errstate(all="ignore"):
        if name == "sigmoid":
            return np.where(wide >= 0, 1 / (1 + np.exp(-wide)), np.exp(wide) / (1 + np.exp(wide)))
        return getattr(np, name)(wide)


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the last place of `exact` rounded to got's dtype; finite
    exact values only (the special values are tested on their own)."""
    with np.errstate(over="ignore"):
        rounded = exact.astype(got.dtype)
    ok = np.isfinite(exact) & np.isfinite(rounded)
    assert np.isfinite(got[ok]).all(), "a finite result came out inf or NaN"
    spacing = np.spacing(np.abs(rounded[ok])).astype(exact.dtype)
    return np.abs(got[ok].astype(exact.dtype) - exact[ok]) / spacing


# per function: where its float32 and its float64 results are finite and nonzero (and a
# little beyond), and where it is hardest (results near 0: cancellation, rounding near 1)
DOMAINS = {"exp": ((-104.0, 89.0), (-746.0, 710.0), (-1.0, 1.0)),
           "log": ((0.0, 3.4e38), (0.0, 1.7e308), (0.5, 2.0)),
           "tanh": ((-20.0, 20.0), (-25.0, 25.0), (-1.0, 1.0)),
           "sigmoid": ((-110.0, 110.0), (-750.0, 750.0), (-5.0, 5.0))}
# the worst error allowed, in ulps (0.5 is correct rounding; measured on these inputs,
# float32 and float64: exp 0.72 and 0.75, log 0.80 and 0.83, tanh 0.50 and 0.88, float32's
# sigmoid 0.52, as it sums e^r and divides in float64); float64's sigmoid rounds in exp, in
# 1 + e and in the quotient (measured 2.36)
BOUND = {"float32": {"exp": 1.0, "log": 1.0, "tanh": 1.0, "sigmoid": 1.0},
         "float64": {"exp": 1.0, "log": 1.0, "tanh": 1.0, "sigmoid": 3.0}}


def _inputs(name: str, dtype) -> np.ndarray:
    """For float32, every 4099th bit pattern in the function's range (so every binade, from
    the subnormals up); for float64, a million draws over the range and, for log, 2^u over
    every binade; for both, a million draws where the function is hardest."""
    f32, f64, hard = DOMAINS[name]
    low, high = f32 if dtype == np.float32 else f64
    rng = np.random.default_rng(0)
    if dtype == np.float32:
        spread = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32).view(np.float32)
    else:
        spread = rng.uniform(low, high, 10**6)
        if low == 0:
            spread = np.concatenate([spread, 2.0 ** rng.uniform(-1074, 1023, 10**6)])
    x = np.concatenate([spread.astype(dtype), rng.uniform(*hard, 10**6).astype(dtype)])
    return x[(x >= low) & (x <= high)]


@pytest.mark.parametrize("key,name", [(key, name) for key in BOUND for name in BOUND[key]])
def test_within_its_bound_of_the_exact_value(device, key, name):
    dtype = np.dtype(key).type
    if dtype == np.float64 and not EXTENDED:
        pytest.skip("long double is float64 here: no exact reference")
    x = _inputs(name, dtype)
    got = host(getattr(gd, name)(gd.array(x, device=device)))
    ulps = _ulps(got, _exact(name, x))
    assert ulps.size > 10**6
    worst = int(np.argmax(ulps))
    assert ulps.max() < BOUND[key][name], f"{name}({x[worst]!r}) is {ulps.max():.3f} ulps off"


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
def test_special_values_are_the_c_librarys(device, dtype):
    inf, nan = np.inf, np.nan
    big = 89.0 if dtype == np.float32 else 710.0          # e^big overflows
    tiny = -104.0 if dtype == np.float32 else -746.0      # e^tiny rounds to 0
    smallest = np.finfo(dtype).smallest_subnormal
    x = np.array([0.0, -0.0, inf, -inf, nan, big, tiny, 1.0, smallest, -1.0, -smallest], dtype)
    with np.errstate(all="ignore"):
        want_exp = np.exp(x.astype(np.float64)).astype(dtype)
        want_log = np.log(x.astype(np.float64)).astype(dtype)
    got_exp = host(gd.exp(gd.array(x, device=device)))
    got_log = host(gd.log(gd.array(x, device=device)))
    np.testing.assert_array_equal(got_exp[:7], [1.0, 1.0, inf, 0.0, nan, inf, 0.0])
    np.testing.assert_array_equal(got_log[:5], [-inf, -inf, inf, nan, nan])
    assert got_log[7] == 0.0 and not np.signbit(got_log[7])   # log(1) is +0
    assert got_log[8] == want_log[8]                           # log of the smallest subnormal
    assert np.isnan(got_log[9:]).all()                         # log(x < 0), -0 excepted
    assert np.abs(got_exp[7:] - want_exp[7:]).max() <= np.spacing(want_exp[7:]).max()
    got_tanh = host(gd.tanh(gd.array(x, device=device)))
    np.testing.assert_array_equal(got_tanh[:5], [0.0, -0.0, 1.0, -1.0, nan])
    assert np.signbit(got_tanh[1]) and not np.signbit(got_tanh[0])
    assert got_tanh[8] == smallest and got_tanh[10] == -smallest  # tanh(x) is x for tiny x


@pytest.mark.parametrize("dtype", FLOATS, ids=FLOAT_IDS)
@pytest.mark.parametrize("name", ["exp", "log", "tanh", "sigmoid"])
def test_a_value_gets_the_same_bits_wherever_it_sits(device, dtype, name):
    """Vector loops, their leftover elements, strided and broadcast operands all run the one
    body: each element of every length up to 70 equals the function of it alone."""
    fn = getattr(gd, name)
    x = np.random.default_rng(2).uniform(0.01 if name == "log" else -30, 30, 140).astype(dtype)
    a = gd.array(x, device=device)
    alone = np.array([host(fn(a[i:i + 1]))[0] for i in range(70)])
    for n in range(1, 71):
        np.testing.assert_array_equal(host(fn(a[:n])), alone[:n], err_msg=f"length {n}")
    np.testing.assert_array_equal(host(fn(a[:140:2]))[:35], alone[:70:2], err_msg="strided")
    assert (host(fn(gd.array(np.full(33, x[5], dtype), device=device))) == alone[5]).all()
    assert (host(fn(gd.broadcast_to(a[5:6], (33,)))) == alone[5]).all()
