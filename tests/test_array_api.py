"""gpudev as an array API standard namespace: array-api-compat recognizes it, code written
only against ``x.__array_namespace__()`` gives NumPy's answers on every device, and each of
the standard's functions gpudev composes matches NumPy, raises clear errors, and runs on its
input's device with no copy to the host (the trace shows only operations there).

The standard's own test suite runs with `make array-api` (tools/array_api.py).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES, assert_array, check, host, is_gpu

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# a valid namespace
# ---------------------------------------------------------------------------------------------

def test_array_api_compat_sees_a_namespace():
    compat = pytest.importorskip("array_api_compat")
    x = gd.ones(3)
    assert compat.is_array_api_obj(x)
    assert compat.array_namespace(x) is gd
    assert x.__array_namespace__() is gd and gd.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match="api_version"):
        x.__array_namespace__(api_version="1999.01")


def standardized_ranks(x):
    """Array-API-generic code: only the namespace the array names is used."""
    xp = x.__array_namespace__()
    centered = x - xp.mean(x, axis=0, keepdims=True)
    scaled = centered / xp.linalg.vector_norm(centered, axis=0, keepdims=True)
    order = xp.argsort(scaled, axis=0, stable=True)
    ranks = xp.take_along_axis(order, xp.argsort(order, axis=0), axis=0)
    total = xp.cumulative_sum(xp.astype(ranks, xp.float64), axis=0)
    return xp.where(scaled > 0, total, -total), xp.astype(xp.unique_counts(ranks).counts, xp.float64)


@pytest.mark.parametrize("device", DEVICES)
def test_generic_code_gives_numpys_answer(device):
    data = np.random.default_rng(0).normal(size=(7, 3))
    got = standardized_ranks(gd.asarray(data, dtype=gd.float64, device=device))
    want = standardized_ranks(data)
    for g, w in zip(got, want):
        assert g.device == device
        np.testing.assert_allclose(host(g), w, rtol=1e-12)


def test_inspection_api():
    info = gd.__array_namespace_info__()
    assert info.default_device() == gd.cpu()
    assert info.devices()[0] == gd.cpu() and len(info.devices()) == 1 + gd.num_gpus()
    assert info.default_dtypes() == {"real floating": gd.float32, "complex floating": None,
                                     "integral": gd.int64, "indexing": gd.int64}
    assert set(info.dtypes()) == {"bool", "float32", "float64", "int32", "int64"}
    assert set(info.dtypes(kind=("bool", "integral"))) == {"bool", "int32", "int64"}
    assert info.dtypes(kind="complex floating") == {}
    caps = info.capabilities()
    assert caps["boolean indexing"] and caps["data-dependent shapes"]
    with pytest.raises(ValueError, match="unknown kind"):
        info.dtypes(kind="unsigned")


def test_max_dimensions_is_the_cores_limit():
    n = gd.__array_namespace_info__().capabilities()["max dimensions"]
    header = (ROOT / "csrc" / "gpudev.h").read_text()
    assert int(re.search(r"#define GD_MAX_NDIM (\d+)", header).group(1)) == n
    assert gd.zeros((1,) * n).ndim == n
    with pytest.raises(ValueError, match="at most"):
        gd.zeros((1,) * (n + 1))


def test_dtype_functions():
    assert gd.finfo(gd.float32).bits == 32 and gd.finfo(gd.ones(2, dtype=gd.float64)).eps == np.finfo(np.float64).eps
    assert gd.iinfo(gd.int64).max == 2**63 - 1
    with pytest.raises(TypeError, match="not a floating dtype"):
        gd.finfo(gd.int64)
    with pytest.raises(TypeError, match="not an integer dtype"):
        gd.iinfo(gd.float32)
    with pytest.raises(TypeError, match="not a floating dtype"):
        gd.finfo(gd.int32)
    assert gd.iinfo(gd.int32) == (32, 2**31 - 1, -(2**31), np.dtype(np.int32))
    info = gd.__array_namespace_info__()
    assert info.dtypes(kind="signed integer") == {"int32": gd.int32, "int64": gd.int64}
    assert info.dtypes(kind="integral") == {"int32": gd.int32, "int64": gd.int64}
    assert info.default_dtypes()["integral"] == gd.int64
    assert gd.isdtype(gd.int32, "signed integer") and gd.isdtype(gd.int32, "numeric")
    assert gd.result_type(gd.int32, gd.int64) == gd.int64 and gd.result_type(gd.int32, gd.float32) == gd.float64
    assert gd.result_type(gd.int32, 1) == gd.int32 and gd.result_type(gd.bool, gd.int32) == gd.int32
    assert gd.can_cast(gd.int32, gd.int64) and gd.can_cast(gd.int32, gd.float64)
    assert not gd.can_cast(gd.int64, gd.int32) and not gd.can_cast(gd.int32, gd.float32)
    assert gd.isdtype(gd.float64, "real floating") and not gd.isdtype(gd.bool, "numeric")
    assert gd.isdtype(gd.int64, (gd.float32, "signed integer"))
    assert gd.result_type(gd.float32, gd.int64) == gd.float64
    assert gd.result_type(gd.ones(2), 1.0) == gd.float32
    assert gd.can_cast(gd.bool, gd.int64) and not gd.can_cast(gd.float64, gd.float32)
    with pytest.raises(TypeError, match="not one of gpudev's dtypes"):
        gd.isdtype("complex64", "numeric")


def test_constants():
    assert (gd.e, gd.pi, gd.inf) == (math.e, math.pi, math.inf) and math.isnan(gd.nan)
    assert gd.newaxis is None and gd.arange(3)[gd.newaxis].shape == (1, 3)


# ---------------------------------------------------------------------------------------------
# spellings and members
# ---------------------------------------------------------------------------------------------

SPELLINGS = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
    "greater": np.greater, "greater_equal": np.greater_equal, "logical_and": np.logical_and,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", SPELLINGS)
def test_binary_spellings(name, device):
    a, b = np.array([[1.5, -2.0, 0.0]]), np.array([[1.5], [3.0]])
    check(getattr(gd, name), a, b, device=device, ref=SPELLINGS[name])
    check(lambda x: getattr(gd, name)(x, 2.0), a, device=device, ref=lambda x: SPELLINGS[name](x, 2.0))


@pytest.mark.parametrize("device", DEVICES)
def test_int_and_unary_spellings(device):
    a, b = np.array([5, -3, 0, 12]), np.array([1, 2, 3, 0])
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        check(getattr(gd, name), a, b, device=device, ref=getattr(np, name))
    check(gd.bitwise_invert, a, device=device, ref=np.invert)
    check(gd.negative, a, device=device, ref=np.negative)
    check(gd.positive, a, device=device, ref=np.positive)
    check(gd.logical_not, a, device=device, ref=np.logical_not)
    f = np.array([1.0, np.inf, -np.inf, np.nan])
    check(gd.isinf, f, device=device, ref=np.isinf)
    with pytest.raises(TypeError, match="add: expected a gpudev Array, got int"):
        gd.add(1, 2)


@pytest.mark.parametrize("device", DEVICES)
def test_shifts(device):
    x = np.array([1, -8, 7, -1, 3, 2**40], dtype=np.int64)
    s = np.array([0, 2, 63, 63, 64, 23], dtype=np.int64)
    check(lambda a, b: a << b, x, s, device=device, ref=np.left_shift)
    check(lambda a, b: a >> b, x, s, device=device, ref=np.right_shift)
    check(lambda a: a >> 1, x, device=device, ref=lambda a: a >> 1)
    check(lambda a: 1 << a, np.array([0, 5, 62]), device=device, ref=lambda a: 1 << a)
    y = gd.array(x, device=device)  # a copy: asarray would share x's memory on the CPU
    y <<= 1
    y >>= 2
    np.testing.assert_array_equal(host(y), (x << 1) >> 2)
    check(gd.bitwise_left_shift, x, s, device=device, ref=np.left_shift)
    with pytest.raises(TypeError, match="bitwise_left_shift: not supported for float32"):
        gd.ones(2) << 1


@pytest.mark.parametrize("device", DEVICES)
def test_array_members(device):
    x = gd.asarray([2.5], device=device)
    assert complex(x) == 2.5 + 0j
    assert x.to_device(gd.cpu()).device == gd.cpu() and x.to_device(device) is x
    with pytest.raises(ValueError, match="stream"):
        x.to_device(device, stream=1)
    assert gd.astype(x, gd.int64).tolist() == [2]
    assert gd.astype(x, gd.float64, device=gd.cpu()).device == gd.cpu()


def test_clip_takes_the_standards_keywords():
    x = gd.asarray([-2.0, 0.5, 9.0])
    assert gd.clip(x, min=0.0, max=1.0).tolist() == [0.0, 0.5, 1.0]
    assert gd.clip(x, max=1.0).tolist() == [-2.0, 0.5, 1.0]
    assert gd.clip(x, a_min=0.0).tolist() == [0.0, 0.5, 9.0]  # NumPy's older keywords
    with pytest.raises(TypeError, match="min= or a_min="):
        gd.clip(x, min=0.0, a_min=0.0)


def test_from_dlpack_device_and_copy():
    a = np.arange(3.0)
    shared = gd.from_dlpack(a)
    a[0] = 7.0
    assert shared.tolist()[0] == 7.0
    own = gd.from_dlpack(a, copy=True)
    a[0] = 8.0
    assert own.tolist()[0] == 7.0
    assert gd.from_dlpack(a, device="cpu", copy=False).tolist()[0] == 8.0
    ro = np.arange(3.0)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gd.from_dlpack(ro, copy=False)
    with pytest.raises(TypeError, match="copy must be"):
        gd.from_dlpack(a, copy="yes")


@pytest.mark.parametrize("device", DEVICES)
def test_zero_d_boolean_masks(device):
    x0 = gd.asarray(3.0, device=device)
    assert x0[gd.asarray(True, device=device)].tolist() == [3.0]
    assert x0[gd.asarray(False, device=device)].shape == (0,)
    x = gd.arange(6, device=device).reshape(2, 3)
    for m in (True, False):
        assert_array(x[gd.asarray(m, device=device)], np.arange(6).reshape(2, 3)[np.asarray(m)])
        assert_array(x[..., gd.asarray(m, device=device)], np.arange(6).reshape(2, 3)[..., np.asarray(m)])
    y = gd.zeros(3, device=device)
    y[gd.asarray(True, device=device)] = 4.0
    assert y.tolist() == [4.0, 4.0, 4.0]
    y[gd.asarray(False, device=device)] = 5.0
    assert y.tolist() == [4.0, 4.0, 4.0]


# ---------------------------------------------------------------------------------------------
# the composed functions against NumPy
# ---------------------------------------------------------------------------------------------

M = np.array([[3.0, -1.0, 2.0, 2.0], [0.5, np.nan, -4.0, 0.5], [1.0, 1.0, 1.0, -0.0]])
I = np.array([[3, 1, 2, 1], [0, -5, 7, 7]])

CASES = [
    (lambda x: gd.flip(x, axis=1), lambda x: np.flip(x, axis=1), M),
    (lambda x: gd.flip(x), np.flip, I),
    (lambda x: gd.roll(x, 3, axis=1), lambda x: np.roll(x, 3, axis=1), M),
    (lambda x: gd.roll(x, -5), lambda x: np.roll(x, -5), I),
    (lambda x: gd.roll(x, (1, 2), axis=(0, 1)), lambda x: np.roll(x, (1, 2), axis=(0, 1)), I),
    (lambda x: gd.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), M),
    (lambda x: gd.expand_dims(x, axis=-1), lambda x: np.expand_dims(x, -1), I),
    (lambda x: gd.squeeze(x[:1], axis=0), lambda x: np.squeeze(x[:1], axis=0), I),
    (lambda x: gd.tile(x, (2, 1, 2)), lambda x: np.tile(x, (2, 1, 2)), I),
    (lambda x: gd.repeat(x, 2, axis=1), lambda x: np.repeat(x, 2, axis=1), M),
    (lambda x: gd.repeat(x, gd.asarray([0, 3], device=x.device), axis=0),
     lambda x: np.repeat(x, [0, 3], axis=0), I),
    (lambda x: gd.broadcast_to(x[0], (2, 4)), lambda x: np.broadcast_to(x[0], (2, 4)), I),
    (lambda x: gd.concat([x, x], axis=None), lambda x: np.concatenate([x, x], axis=None), I),
    (lambda x: gd.permute_dims(x, (1, 0)), lambda x: x.T, M),
    (lambda x: gd.matrix_transpose(x), lambda x: x.T, M),
    (lambda x: gd.stack(gd.unstack(x, axis=1), axis=0), lambda x: x.T, I),
    (lambda x: gd.sum(x, axis=1), lambda x: np.sum(x, axis=1), I),
    (lambda x: gd.sum(x > 1), lambda x: np.sum(x > 1), I),
    (lambda x: gd.prod(x, axis=1), lambda x: np.prod(x, axis=1), I),
    (lambda x: gd.prod(x, axis=(0, 1), keepdims=True), lambda x: np.prod(x, keepdims=True), M),
    (lambda x: gd.prod(x[:, :0], axis=1), lambda x: np.prod(x[:, :0], axis=1), M),
    (lambda x: gd.cumulative_sum(x, axis=1), lambda x: np.cumsum(x, axis=1), I),
    (lambda x: gd.cumulative_sum(x, axis=0, include_initial=True),
     lambda x: np.concatenate([np.zeros((1, 4), x.dtype), np.cumsum(x, axis=0)]), I),
    (lambda x: gd.cumulative_prod(x, axis=1), lambda x: np.cumprod(x, axis=1), M),
    (lambda x: gd.count_nonzero(x, axis=0), lambda x: np.count_nonzero(x, axis=0), I),
    (lambda x: gd.diff(x, n=2), lambda x: np.diff(x, n=2), M),
    (lambda x: gd.diff(x, axis=0, prepend=x[:1]), lambda x: np.diff(x, axis=0, prepend=x[:1]), I),
    (lambda x: gd.diff(x > 0), lambda x: np.diff(x > 0), I),
    (lambda x: gd.sort(x, axis=1), lambda x: np.sort(x, axis=1), M),
    (lambda x: gd.sort(x, axis=0, descending=True), lambda x: -np.sort(-x, axis=0), I),
    (lambda x: gd.argsort(x, axis=1), lambda x: np.argsort(x, axis=1, stable=True), M),
    (lambda x: gd.argsort(x.reshape(-1)), lambda x: np.argsort(x.reshape(-1), stable=True), I),
    (lambda x: gd.argsort(x, descending=True), lambda x: np.array([[0, 2, 1, 3], [2, 3, 0, 1]]), I),
    (lambda x: gd.take(x, gd.asarray([2, 0, 2], device=x.device), axis=1), lambda x: np.take(x, [2, 0, 2], axis=1), M),
    (lambda x: gd.take_along_axis(x, gd.argsort(x, axis=1), axis=1), lambda x: np.sort(x, axis=1), I),
    (lambda x: gd.searchsorted(gd.sort(x.reshape(-1)), x), lambda x: np.searchsorted(np.sort(x.reshape(-1)), x), I),
    (lambda x: gd.searchsorted(gd.sort(x.reshape(-1)), x, side="right"),
     lambda x: np.searchsorted(np.sort(x.reshape(-1)), x, side="right"), M),
    (lambda x: gd.unique_values(x), np.unique, I),
    (lambda x: gd.unique_counts(x).counts, lambda x: np.unique(x, return_counts=True)[1], I),
    (lambda x: gd.unique_all(x).indices, lambda x: np.unique(x, return_index=True)[1], I),
    (lambda x: gd.unique_inverse(x).inverse_indices, lambda x: np.unique(x, return_inverse=True)[1], I),
    (lambda x: gd.eye(3, 5, k=1, device=x.device), lambda x: np.eye(3, 5, k=1, dtype=np.float32), I),
    (lambda x: gd.tril(x, k=1), lambda x: np.tril(x, k=1), I),
    (lambda x: gd.triu(x, k=-1), lambda x: np.triu(x, k=-1), M),
    (lambda x: gd.linspace(-1, 2, 7, dtype=gd.float64, device=x.device), lambda x: np.linspace(-1, 2, 7), I),
    (lambda x: gd.linspace(0, 1, 4, endpoint=False, device=x.device),
     lambda x: np.linspace(0, 1, 4, endpoint=False, dtype=np.float32), I),
    (lambda x: gd.stack(gd.meshgrid(x[0], x[1, :3], indexing="xy"), axis=0),
     lambda x: np.stack(np.meshgrid(x[0], x[1, :3])), I),
    (lambda x: gd.stack(gd.meshgrid(x[0], x[1, :3], indexing="ij"), axis=0),
     lambda x: np.stack(np.meshgrid(x[0], x[1, :3], indexing="ij")), I),
    (lambda x: gd.var(x, axis=1, correction=1), lambda x: np.var(x, axis=1, ddof=1), M[[0, 2]]),
    (lambda x: gd.std(x), np.std, M[[0, 2]]),
    (lambda x: gd.mean(x, axis=(0, 1), keepdims=True), lambda x: np.mean(x, keepdims=True), M[[0, 2]]),
    (lambda x: gd.vecdot(x, x[:1]), lambda x: np.vecdot(x, x[:1]), M),
    (lambda x: gd.tensordot(x, x, axes=([1], [1])), lambda x: np.tensordot(x, x, axes=([1], [1])), I),
    (lambda x: gd.tensordot(x, x.T, axes=1), lambda x: np.tensordot(x, x.T, axes=1), M[[0, 2]]),
    (lambda x: gd.linalg.vector_norm(x, axis=1), lambda x: np.linalg.vector_norm(x, axis=1), M[[0, 2]]),
    (lambda x: gd.linalg.vector_norm(x, ord=math.inf), lambda x: np.linalg.vector_norm(x, ord=np.inf), M[[0, 2]]),
    (lambda x: gd.linalg.vector_norm(x, ord=3, axis=0, keepdims=True),
     lambda x: np.linalg.vector_norm(x, ord=3, axis=0, keepdims=True), M[[0, 2]]),
    (lambda x: gd.linalg.matrix_norm(x), np.linalg.matrix_norm, M[[0, 2]]),
    (lambda x: gd.linalg.matrix_norm(x, ord=1), lambda x: np.linalg.matrix_norm(x, ord=1), M[[0, 2]]),
    (lambda x: gd.linalg.matrix_norm(x, ord=-math.inf), lambda x: np.linalg.matrix_norm(x, ord=-np.inf), M[[0, 2]]),
    (lambda x: gd.linalg.diagonal(x, offset=1), lambda x: np.linalg.diagonal(x, offset=1), M),
    (lambda x: gd.linalg.trace(x, offset=-1), lambda x: np.linalg.trace(x, offset=-1), I),
    (lambda x: gd.linalg.outer(x[0], x[1]), lambda x: np.linalg.outer(x[0], x[1]), I),
    (lambda x: gd.linalg.cross(x[:, :3], x[:, 1:]), lambda x: np.linalg.cross(x[:, :3], x[:, 1:]), I),
    (lambda x: gd.linalg.matrix_power(x[:, :2], 5), lambda x: np.linalg.matrix_power(x[:, :2], 5), I),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_composed_functions_match_numpy(case, device):
    fn, ref, data = CASES[case]
    with np.errstate(all="ignore"):
        want = ref(data.copy())
    got = fn(gd.asarray(data, device=device))
    rtol = 1e-5 if np.asarray(want).dtype.kind == "f" else None
    assert_array(got, want, device=device, rtol=rtol, atol=1e-6 if rtol else 0.0,
                 dtype=np.float32 if np.asarray(want).dtype == np.float64 and got.dtype == np.float32 else None)
    if is_gpu(device):  # the CPU backend agrees
        assert_array(got, host(fn(gd.asarray(data))), rtol=rtol, atol=1e-6 if rtol else 0.0)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 33, 100])
def test_sorts_are_stable_and_put_nan_last(n):
    rng = np.random.default_rng(n)
    data = rng.integers(0, 4, size=(3, n)).astype(np.float64)
    data[rng.random(data.shape) < 0.2] = np.nan
    x = gd.asarray(data)
    np.testing.assert_array_equal(host(gd.argsort(x)), np.argsort(data, axis=-1, stable=True))
    np.testing.assert_array_equal(host(gd.sort(x)), np.sort(data, axis=-1))
    # descending and stable: equal values keep their order
    want = np.argsort(-np.nan_to_num(data, nan=-np.inf), axis=-1, stable=True)
    np.testing.assert_array_equal(host(gd.argsort(x, descending=True)), want)
    np.testing.assert_array_equal(host(gd.unique_values(x)), np.unique(data.reshape(-1), equal_nan=False))


def test_unique_all_reconstructs_its_input():
    data = np.array([[2, 7, 2], [7, 1, 2]])
    u = gd.unique_all(gd.asarray(data))
    assert host(u.values).tolist() == [1, 2, 7] and host(u.counts).tolist() == [1, 3, 2]
    np.testing.assert_array_equal(host(u.values)[host(u.inverse_indices)], data)
    np.testing.assert_array_equal(data.reshape(-1)[host(u.indices)], host(u.values))


@pytest.mark.parametrize("device", DEVICES)
def test_composed_functions_stay_on_their_device(device):
    """Each function runs as operations on the input's device: no copy to or from the host and
    no synchronization (the data-dependent ones, unique_* and repeat with counts, read back
    how many elements the result has: one synchronization each, and nothing else)."""
    x = gd.asarray(I, device=device)
    f = gd.asarray(M[[0, 2]], device=device)
    for fn, _, data in CASES:
        with gd.trace() as tr:
            out = fn(f if data is not I else x)
        assert out.device == device
        assert {e.device for e in tr.ops} <= {str(device)}
        # the only uploads are the few index constants some cases write as lists
        uploads = [c for c in tr.copies if c.name == "h2d"]
        assert all(c.bytes_written <= 24 for c in uploads), tr.table(events=True)
        readbacks = [c for c in tr.copies if c.name != "h2d"]
        if fn in CHECKED_INDICES:  # index arrays are checked against the axis: one small readback
            assert len(tr.syncs) <= 2 and all(c.bytes_written <= 32 for c in readbacks), tr.table(events=True)
        elif fn in COUNTED:  # the number of distinct values comes back: nonzero's one sync
            assert readbacks == [] and [s.name for s in tr.syncs] == ["nonzero"], tr.table(events=True)
        else:
            assert readbacks == [] and tr.syncs == [], tr.table(events=True)
    with gd.trace() as tr:
        gd.unique_all(x)
    assert all(c.name == "d2h" and c.bytes_written <= 16 for c in tr.copies), tr.table(events=True)


# repeat with an array of counts, take and take_along_axis read back the number of elements or
# the range of the indices they are given (an index out of range raises instead of reading
# another element); every other case runs without a synchronization
CHECKED_INDICES = {CASES[k][0] for k in (10, 33, 34)}
# unique_* count their distinct values with nonzero before they allocate the result
COUNTED = {CASES[k][0] for k in (37, 38, 39, 40)}


# The standard's functions the tables above do not call (the elementwise ones are in
# tests/test_elementwise_standard.py, whose test_no_copies_between_devices traces them): each
# runs as operations on its input's device, with no copy and no synchronization. f, i and b are
# a float64, an int64 and a bool array on the device under test.
ON_DEVICE = {
    "abs": lambda f, i, b: gd.abs(f), "add": lambda f, i, b: gd.add(f, f),
    "subtract": lambda f, i, b: gd.subtract(i, i), "multiply": lambda f, i, b: gd.multiply(f, i),
    "divide": lambda f, i, b: gd.divide(f, f), "floor_divide": lambda f, i, b: gd.floor_divide(i, 3),
    "remainder": lambda f, i, b: gd.remainder(f, 2.0), "pow": lambda f, i, b: gd.pow(f, 2),
    "exp": lambda f, i, b: gd.exp(f), "log": lambda f, i, b: gd.log(gd.abs(f)),
    "sqrt": lambda f, i, b: gd.sqrt(gd.abs(f)), "hypot": lambda f, i, b: gd.hypot(f, f),
    "maximum": lambda f, i, b: gd.maximum(f, 0.5), "minimum": lambda f, i, b: gd.minimum(i, 1),
    "clip": lambda f, i, b: gd.clip(f, min=-1.0, max=1.0), "positive": lambda f, i, b: gd.positive(i),
    "conj": lambda f, i, b: gd.conj(f), "real": lambda f, i, b: gd.real(f),
    "imag": lambda f, i, b: gd.imag(f), "isinf": lambda f, i, b: gd.isinf(f),
    "equal": lambda f, i, b: gd.equal(f, f), "not_equal": lambda f, i, b: gd.not_equal(i, 2),
    "less": lambda f, i, b: gd.less(f, 1.0), "less_equal": lambda f, i, b: gd.less_equal(i, i),
    "greater": lambda f, i, b: gd.greater(f, f), "greater_equal": lambda f, i, b: gd.greater_equal(i, 0),
    "logical_and": lambda f, i, b: gd.logical_and(b, b), "logical_or": lambda f, i, b: gd.logical_or(b, ~b),
    "logical_xor": lambda f, i, b: gd.logical_xor(b, b), "logical_not": lambda f, i, b: gd.logical_not(b),
    "all": lambda f, i, b: gd.all(b, axis=1), "any": lambda f, i, b: gd.any(b),
    "max": lambda f, i, b: gd.max(f, axis=0), "min": lambda f, i, b: gd.min(i, keepdims=True),
    "argmax": lambda f, i, b: gd.argmax(f, axis=1), "argmin": lambda f, i, b: gd.argmin(i),
    "where": lambda f, i, b: gd.where(b, f, 0.0), "astype": lambda f, i, b: gd.astype(i, gd.float32),
    "reshape": lambda f, i, b: gd.reshape(f, (-1,)),
    "broadcast_arrays": lambda f, i, b: gd.broadcast_arrays(f, i[:1])[1],
    "matmul": lambda f, i, b: gd.matmul(f, f.mT), "linalg.matmul": lambda f, i, b: gd.linalg.matmul(f.mT, f),
    "arange": lambda f, i, b: gd.arange(5, device=f.device),
    "empty": lambda f, i, b: gd.empty((2, 3), device=f.device),
    "zeros": lambda f, i, b: gd.zeros((2, 3), device=f.device),
    "ones": lambda f, i, b: gd.ones(4, dtype=gd.int64, device=f.device),
    "full": lambda f, i, b: gd.full((2,), 7.0, device=f.device),
    "empty_like": lambda f, i, b: gd.empty_like(f), "zeros_like": lambda f, i, b: gd.zeros_like(i),
    "ones_like": lambda f, i, b: gd.ones_like(b), "full_like": lambda f, i, b: gd.full_like(f, 3.0),
    "from_dlpack": lambda f, i, b: gd.from_dlpack(f),
    "fft.fftfreq": lambda f, i, b: gd.fft.fftfreq(7, d=0.5, device=f.device),
    "fft.rfftfreq": lambda f, i, b: gd.fft.rfftfreq(7, dtype=gd.float64, device=f.device),
    "fft.fftshift": lambda f, i, b: gd.fft.fftshift(f), "fft.ifftshift": lambda f, i, b: gd.fft.ifftshift(b, axes=-1),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(ON_DEVICE))
def test_standard_functions_stay_on_their_device(name, device):
    f = gd.asarray(M[[0, 2]], device=device)
    i = gd.asarray(I, device=device)
    b = i > 1
    with gd.trace() as tr:
        out = ON_DEVICE[name](f, i, b)
    assert out.device == device, name
    assert {e.device for e in tr.ops} <= {str(device)}, tr.table(events=True)
    assert tr.copies == [] and tr.syncs == [], tr.table(events=True)


@pytest.mark.parametrize("device", DEVICES)
def test_nonzero_reads_back_its_count_as_one_sync(device):
    """nonzero and boolean masks have data-dependent shapes: the count comes back to the host
    (one synchronization, which trace and strict mode see), the coordinates stay on the device."""
    b = gd.asarray(I, device=device) > 1
    with gd.trace() as tr:
        out = gd.nonzero(b)
    assert all(c.device == device for c in out), tr.table(events=True)
    assert [(s.name, s.device) for s in tr.syncs] == [("nonzero", str(device))] and tr.copies == []
    assert [host(c).tolist() for c in out] == [a.tolist() for a in np.nonzero(I > 1)]
    with gd.strict("sync"), pytest.raises(gd.StrictModeError, match="nonzero"):
        gd.nonzero(b)


# ---------------------------------------------------------------------------------------------
# linalg factorizations (LAPACK on the CPU)
# ---------------------------------------------------------------------------------------------

SPD = np.array([[4.0, 2.0, 0.6], [2.0, 3.0, 0.4], [0.6, 0.4, 2.0]])


@pytest.mark.parametrize("dtype", [gd.float32, gd.float64])
def test_factorizations_on_the_cpu(dtype):
    a = gd.asarray(np.stack([SPD, 2 * SPD]), dtype=dtype)
    rtol = 1e-5 if dtype == gd.float32 else 1e-12
    ref = np.stack([SPD, 2 * SPD])
    np.testing.assert_allclose(host(gd.linalg.cholesky(a)), np.linalg.cholesky(ref), rtol=rtol)
    np.testing.assert_allclose(host(gd.linalg.cholesky(a, upper=True)), np.linalg.cholesky(ref, upper=True), rtol=rtol)
    np.testing.assert_allclose(host(gd.linalg.inv(a)), np.linalg.inv(ref), rtol=rtol * 10)
    b = np.array([1.0, -2.0, 0.5])
    got = gd.linalg.solve(a, gd.asarray(b, dtype=dtype))
    np.testing.assert_allclose(host(got), np.linalg.solve(ref, b), rtol=rtol * 10)
    np.testing.assert_allclose(host(gd.linalg.det(a)), np.linalg.det(ref), rtol=rtol * 10)
    perm = gd.asarray([[0.0, 1.0], [1.0, 0.0]], dtype=dtype)
    assert gd.linalg.det(perm).item() == -1.0
    assert a.tolist() == gd.asarray(ref, dtype=dtype).tolist(), "the input must not change"


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (3, 3)])
def test_decompositions_on_the_cpu(shape):
    b = np.random.default_rng(1).normal(size=shape)
    g = gd.asarray(b)
    L = gd.linalg
    u, s, vh = L.svd(g, full_matrices=False)
    np.testing.assert_allclose(host(s), np.linalg.svdvals(b), rtol=1e-12)
    np.testing.assert_allclose((host(u) * host(s)[..., None, :]) @ host(vh), b, atol=1e-12)
    assert L.svd(g).U.shape == np.linalg.svd(b).U.shape
    for mode in ("reduced", "complete"):
        q, r = L.qr(g, mode=mode)
        want_q, want_r = np.linalg.qr(b, mode=mode)
        assert q.shape == want_q.shape and r.shape == want_r.shape
        np.testing.assert_allclose(host(q) @ host(r), b, atol=1e-12)
        np.testing.assert_allclose(np.abs(host(r)), np.abs(want_r), atol=1e-12)
    np.testing.assert_allclose(host(L.pinv(g)), np.linalg.pinv(b), atol=1e-12)
    np.testing.assert_array_equal(host(L.matrix_rank(g)), np.linalg.matrix_rank(b))
    for ord in (2, -2, "nuc"):
        np.testing.assert_allclose(host(L.matrix_norm(g, ord=ord)), np.linalg.matrix_norm(b, ord=ord), rtol=1e-12)
    sym = b @ np.swapaxes(b, -1, -2)
    w, v = L.eigh(gd.asarray(sym))
    np.testing.assert_allclose(host(w), np.linalg.eigvalsh(sym), atol=1e-10)
    np.testing.assert_allclose(host(v) @ (host(w)[..., None] * np.swapaxes(host(v), -1, -2)), sym, atol=1e-10)
    np.testing.assert_allclose(host(L.eigvalsh(gd.asarray(sym))), np.linalg.eigvalsh(sym), atol=1e-10)
    if shape[-1] == shape[-2]:
        sign, logabs = L.slogdet(g)
        want = np.linalg.slogdet(b)
        np.testing.assert_array_equal(host(sign), want.sign)
        np.testing.assert_allclose(host(logabs), want.logabsdet, rtol=1e-12)


def test_factorization_errors():
    with pytest.raises(ValueError, match="not positive definite"):
        gd.linalg.cholesky(gd.asarray([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="singular"):
        gd.linalg.solve(gd.zeros((2, 2)), gd.ones(2))
    with pytest.raises(ValueError, match="square"):
        gd.linalg.inv(gd.ones((2, 3)))
    with pytest.raises(ValueError, match="ord must be"):
        gd.linalg.matrix_norm(gd.ones((2, 2)), ord=3)
    with pytest.raises(ValueError, match="mode must be"):
        gd.linalg.qr(gd.ones((2, 2)), mode="r")


@pytest.mark.parametrize("device", DEVICES[1:])
def test_factorizations_name_the_gpu(device):
    a = gd.asarray(SPD, device=device)
    for fn in (gd.linalg.cholesky, gd.linalg.inv, gd.linalg.det, gd.linalg.svdvals, gd.linalg.qr, gd.linalg.eigh):
        with pytest.raises(NotImplementedError, match=str(device)):
            fn(a)


# ---------------------------------------------------------------------------------------------
# bad input: clear errors naming the operation
# ---------------------------------------------------------------------------------------------

BAD = [
    (lambda: gd.squeeze(gd.ones((2, 3)), axis=0), ValueError, "squeeze: axis 0 has length 2"),
    (lambda: gd.flip(gd.ones(3), axis=1), IndexError, "flip: axis 1 is out of range"),
    (lambda: gd.broadcast_to(gd.ones(3), (2, 4)), ValueError, "broadcast_to: shape"),
    (lambda: gd.moveaxis(gd.ones((2, 3)), (0, 1), 0), ValueError, "moveaxis: 2 source axes"),
    (lambda: gd.permute_dims(gd.ones((2, 3)), (0, 0)), ValueError, "not a permutation"),
    (lambda: gd.reshape(gd.ones((2, 3)).T, (6,), copy=False), ValueError, "copy=False"),
    (lambda: gd.repeat(gd.ones(3), gd.asarray([1, 2])), ValueError, "2 counts for an axis of length 3"),
    (lambda: gd.repeat(gd.ones(3), -1), ValueError, "non-negative"),
    (lambda: gd.tile(gd.ones(3), (-1,)), ValueError, "tile: repetitions"),
    (lambda: gd.cumulative_sum(gd.ones((2, 2))), ValueError, "axis is required"),
    (lambda: gd.take(gd.ones((2, 2)), gd.asarray([0])), ValueError, "axis is required"),
    (lambda: gd.take_along_axis(gd.ones((2, 2)), gd.asarray([0])), ValueError, "same number"),
    (lambda: gd.searchsorted(gd.ones((2, 2)), gd.ones(2)), ValueError, "x1 must be 1-D"),
    (lambda: gd.searchsorted(gd.ones(2), gd.ones(2), side="middle"), ValueError, "side must be"),
    (lambda: gd.sort(gd.asarray(1.0)), ValueError, "sort: needs at least 1 dimension"),
    (lambda: gd.diff(gd.ones(3), n=-1), ValueError, "non-negative"),
    (lambda: gd.linspace(0, 1, -2), ValueError, "linspace: num"),
    (lambda: gd.meshgrid(gd.ones(2), indexing="yx"), ValueError, "indexing must be"),
    (lambda: gd.tril(gd.ones(3)), ValueError, "at least 2 dimensions"),
    (lambda: gd.unstack(gd.asarray(1.0)), ValueError, "unstack"),
    (lambda: gd.sum([1, 2]), TypeError, "sum: expected a gpudev Array"),
    (lambda: gd.astype(gd.ones(2), "complex64"), TypeError, "astype: 'complex64' is not one of gpudev's dtypes"),
    (lambda: gd.linalg.vecdot(gd.ones(3), gd.ones(4)), ValueError, "vecdot"),
    (lambda: gd.linalg.tensordot(gd.ones(3), gd.ones(4), axes=1), ValueError, "tensordot"),
]


@pytest.mark.parametrize("case", range(len(BAD)))
def test_bad_input_raises_clearly(case):
    call, kind, message = BAD[case]
    with pytest.raises(kind, match=re.escape(message)):
        call()


def test_diff_of_many_rounds_ends_at_once():
    assert gd.diff(gd.ones(3), n=2**62).shape == (0,)


def test_factorizations_of_empty_matrices():
    L = gd.linalg
    for fn in (L.cholesky, L.inv, L.pinv):
        assert fn(gd.zeros((2, 0, 0))).shape == (2, 0, 0)
    assert L.det(gd.zeros((0, 0))).item() == 1.0 and L.svdvals(gd.zeros((3, 0, 4))).shape == (3, 0)
    assert L.solve(gd.zeros((0, 0)), gd.zeros(0)).shape == (0,)
    np.testing.assert_array_equal(host(L.qr(gd.zeros((3, 0)), mode="complete").Q), np.eye(3))
