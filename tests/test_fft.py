"""gd.fft: fftfreq, rfftfreq, fftshift and ifftshift equal numpy.fft's on every device and
dtype, run as operations on their device with no copy or synchronization, and refuse bad
arguments with messages that name the function and the fix. The transforms do not exist
(gpudev has no complex dtype)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES, host, is_gpu

LENGTHS = [1, 2, 3, 4, 7, 8, 33, 100]
SPACINGS = [1.0, 0.25, -3.7, 7, np.float32(0.1)]


def _same(got, want: np.ndarray, device) -> None:
    """got has want's shape, dtype and exact values (NaN positions included), on device."""
    assert isinstance(got, gd.Array)
    assert got.device == device, f"result on {got.device}, expected {device}"
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_array_equal(host(got), want)


# ---------------------------------------------------------------------------------------------
# sample frequencies
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("n", LENGTHS)
def test_frequencies_equal_numpys(name, n, device):
    """float64 bit for bit; float32 (the default) is NumPy's float64 answer rounded once."""
    ours, theirs = getattr(gd.fft, name), getattr(np.fft, name)
    for d in SPACINGS:
        want = theirs(n, d)
        _same(ours(n, d=d, dtype=gd.float64, device=device), want, device)
        _same(ours(n, d=d, dtype="float32", device=device), want.astype(np.float32), device)
        _same(ours(n, d=d, device=device), want.astype(np.float32), device)
    assert ours(n, dtype=np.float64, device=device).shape == ((n,) if name == "fftfreq" else (n // 2 + 1,))


def test_frequencies_default_to_the_default_float_on_the_default_device():
    info = gd.__array_namespace_info__()
    for fn in (gd.fft.fftfreq, gd.fft.rfftfreq):
        out = fn(6)
        assert out.dtype == info.default_dtypes()["real floating"] == np.float32
        assert out.device == info.default_device()
    np.testing.assert_array_equal(host(gd.fft.fftfreq(np.int64(4), d=2)), np.fft.fftfreq(4, 2).astype(np.float32))


@pytest.mark.parametrize("device", DEVICES[1:])
def test_device_by_name(device):
    got = gd.fft.fftfreq(5, device=str(device), dtype=gd.float64)
    _same(got, np.fft.fftfreq(5), device)
    _same(gd.fft.rfftfreq(5, device=str(device)), np.fft.rfftfreq(5).astype(np.float32), device)


# ---------------------------------------------------------------------------------------------
# shifts
# ---------------------------------------------------------------------------------------------

def _data(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    n = int(np.prod(shape))
    values = np.arange(n, dtype=np.int64) * 7 % 11 - 5
    if dtype == np.bool_:
        return (values > 0).reshape(shape)
    out = values.astype(dtype).reshape(shape)
    if dtype.kind == "f" and n > 2:
        out.reshape(-1)[[1, 2]] = [np.nan, -np.inf]
    return out


SHAPES_AXES = [
    ((), [None, ()]),
    ((1,), [None, 0, -1]),
    ((7,), [None, 0, (-1,)]),
    ((8,), [None, [0]]),
    ((0, 3), [None, 0, 1]),
    ((2, 3, 5), [None, 0, 1, 2, -1, -3, (0, 2), [2, -2], (2, 0, 1), ()]),
    ((4, 1, 3, 6), [None, (1, 3), (-1, 0)]),
]
DTYPES = [np.dtype(t) for t in (np.float32, np.float64, np.int64, np.bool_)]


def _numpy_shift(name: str, data: np.ndarray, axes) -> np.ndarray:
    # NumPy's roll fails on a 0-d array (it has no axes to roll, so the answer is a copy)
    return data.copy() if data.ndim == 0 else getattr(np.fft, name)(data, axes=axes)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,axes_list", SHAPES_AXES, ids=lambda v: str(v))
def test_shifts_equal_numpys(shape, axes_list, dtype, device):
    data = _data(shape, dtype)
    x = gd.asarray(data, device=device)
    for axes in axes_list:
        for name in ("fftshift", "ifftshift"):
            got = getattr(gd.fft, name)(x, axes=axes)
            _same(got, _numpy_shift(name, data, axes), device)
            if is_gpu(device):  # the CPU backend is the oracle too
                np.testing.assert_array_equal(host(got), host(getattr(gd.fft, name)(gd.asarray(data), axes=axes)))
        back = gd.fft.ifftshift(gd.fft.fftshift(x, axes=axes), axes=axes)
        np.testing.assert_array_equal(host(back), data)
    np.testing.assert_array_equal(host(x), data)  # the input is left as it was


@pytest.mark.parametrize("device", DEVICES)
def test_shifts_of_views_and_a_new_array(device):
    data = np.arange(60.0).reshape(3, 4, 5)
    base = gd.asarray(data, device=device)
    view = base.mT[:, ::-2]
    _same(gd.fft.fftshift(view, axes=(0, -1)), np.fft.fftshift(data.swapaxes(-1, -2)[:, ::-2], axes=(0, -1)), device)
    out = gd.fft.ifftshift(base[:, :1, :1], axes=1)  # nothing moves, and still a copy
    out[...] = -1.0
    np.testing.assert_array_equal(host(base), data)


def test_shift_centers_the_zero_frequency():
    freqs = gd.fft.fftfreq(7, dtype=gd.float64)
    centered = host(gd.fft.fftshift(freqs))
    assert centered[7 // 2] == 0.0 and np.all(np.diff(centered) > 0)
    np.testing.assert_array_equal(host(gd.fft.ifftshift(gd.fft.fftshift(freqs))), host(freqs))


# ---------------------------------------------------------------------------------------------
# on the device: no copy, no synchronization
# ---------------------------------------------------------------------------------------------

CALLS = {
    "fftfreq": lambda x: gd.fft.fftfreq(9, d=0.5, device=x.device),
    "rfftfreq": lambda x: gd.fft.rfftfreq(9, dtype=gd.float64, device=x.device),
    "fftshift": lambda x: gd.fft.fftshift(x),
    "ifftshift": lambda x: gd.fft.ifftshift(x, axes=(-1, 0)),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(CALLS))
def test_runs_on_its_device_without_host_round_trip(name, device):
    x = gd.asarray(np.arange(15.0).reshape(3, 5), device=device)
    gd.synchronize(device)
    with gd.trace() as tr, gd.strict("all"):
        out = CALLS[name](x)
    assert out.device == device
    assert tr.ops and {e.device for e in tr.ops} <= {str(device)}, tr.table(events=True)
    assert tr.copies == [] and tr.syncs == [], tr.table(events=True)


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------

X = np.arange(6.0).reshape(2, 3)
BAD = [
    (lambda: gd.fft.fftfreq(0), ValueError, r"fftfreq: n must be a positive window length, got 0"),
    (lambda: gd.fft.rfftfreq(-3), ValueError, r"rfftfreq: n must be a positive window length, got -3"),
    (lambda: gd.fft.fftfreq(4.0), TypeError, r"fftfreq: n must be an int .* got 4\.0; e\.g\. gd\.fft\.fftfreq\(8\)"),
    (lambda: gd.fft.rfftfreq(True), TypeError, r"rfftfreq: n must be an int"),
    (lambda: gd.fft.fftfreq(gd.asarray(4)), TypeError, r"fftfreq: n must be an int"),
    (lambda: gd.fft.fftfreq(4, d=0), ValueError, r"fftfreq: d must be a nonzero sample spacing, got 0; .* d=1\.0"),
    (lambda: gd.fft.rfftfreq(4, d=-0.0), ValueError, r"rfftfreq: d must be a nonzero sample spacing, got -0\.0"),
    (lambda: gd.fft.fftfreq(4, d="1"), TypeError, r"fftfreq: d must be a real number .* got '1'"),
    (lambda: gd.fft.fftfreq(4, d=1j), TypeError, r"fftfreq: d must be a real number"),
    (lambda: gd.fft.fftfreq(4, dtype=gd.int64), TypeError,
     r"fftfreq: dtype must be a real floating-point dtype, got int64; use gd\.float32 or gd\.float64"),
    (lambda: gd.fft.rfftfreq(4, dtype=gd.bool), TypeError,
     r"rfftfreq: dtype must be a real floating-point dtype, got bool"),
    (lambda: gd.fft.fftfreq(4, dtype="complex64"), TypeError, r"fftfreq: .*complex64"),
    (lambda: gd.fft.fftfreq(4, dtype=3), TypeError, r"fftfreq: 3 is not one of gpudev's dtypes"),
    (lambda: gd.fft.fftfreq(4, device="gpu7"), ValueError, r"fftfreq: bad device 'gpu7': Device: cannot parse 'gpu7'.*use 'cpu'"),
    (lambda: gd.fft.rfftfreq(4, device=3), TypeError, r"rfftfreq: bad device 3: device must be a gd\.Device.*use 'cpu'"),
    (lambda: gd.fft.fftshift(X), TypeError, r"fftshift: expected a gpudev Array, got ndarray; .* gd\.asarray"),
    (lambda: gd.fft.fftshift(gd.asarray(X), axes=2), IndexError,
     r"fftshift: axis 2 in axes=2 is out of range for an array of shape \(2, 3\); use axes in \[-2, 1\]"),
    (lambda: gd.fft.ifftshift(gd.asarray(X), axes=(0, -3)), IndexError,
     r"ifftshift: axis -3 in axes=\(0, -3\) is out of range .* use axes in \[-2, 1\]"),
    (lambda: gd.fft.fftshift(gd.asarray(1.0), axes=0), IndexError,
     r"fftshift: .* a 0-d array has no axes; use axes=None"),
    (lambda: gd.fft.fftshift(gd.asarray(X), axes=(1, -1)), ValueError,
     r"fftshift: axes=\(1, -1\) names an axis twice \(as \(1, 1\)\); name each axis once"),
    (lambda: gd.fft.ifftshift(gd.asarray(X), axes=[0, 0]), ValueError, r"ifftshift: axes=\[0, 0\] names an axis twice"),
    (lambda: gd.fft.fftshift(gd.asarray(X), axes=1.0), TypeError, r"fftshift: axes must be None, an int or a sequence"),
    (lambda: gd.fft.fftshift(gd.asarray(X), axes="0"), TypeError, r"fftshift: axes must be None, an int or a sequence"),
    (lambda: gd.fft.ifftshift(gd.asarray(X), axes=(0, None)), TypeError, r"ifftshift: axes must be None, an int"),
    (lambda: gd.fft.fftshift(gd.asarray(X), (0,)), TypeError, r"positional"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_raises_clearly(case):
    call, exc, match = BAD[case]
    with pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------------------------------------------
# the namespace
# ---------------------------------------------------------------------------------------------

def test_namespace_has_only_the_real_valued_functions():
    import gpudev.fft

    assert gpudev.fft is gd.fft
    assert sorted(gd.fft.__all__) == ["fftfreq", "fftshift", "ifftshift", "rfftfreq"]
    assert "fft" in gd.__all__ and gd.ones(2).__array_namespace__().fft is gd.fft
    for missing in ("fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft"):
        assert not hasattr(gd.fft, missing), missing
    assert "no complex dtype" in gd.fft.__doc__


def test_docstring_examples_run():
    result = doctest.testmod(gd.fft, extraglobs={"gd": gd})
    assert result.attempted >= 8 and result.failed == 0
