"""Differential property tests: random shapes, dtypes, values and broadcasting pairs, each
result compared with NumPy's (and on GPUs with the CPU backend's)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import gpudev as gd  # noqa: E402
from conftest import DEVICES, check, host  # noqa: E402

DTYPES = st.sampled_from([np.float32, np.float64, np.int64])
FLOATS = st.sampled_from([np.float32, np.float64])
SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6)


@st.composite
def arrays(draw, dtype=DTYPES, shape=SHAPES, low=-100, high=100):
    """Finite arrays with small integers or floats, so int64 products cannot overflow."""
    dt = np.dtype(draw(dtype) if isinstance(dtype, st.SearchStrategy) else dtype)
    shp = draw(shape) if isinstance(shape, st.SearchStrategy) else shape
    if dt.kind == "i":
        elements = st.integers(low, high)
    else:
        # subnormals are left out: flushing them is a hardware choice, not gpudev's semantics
        width = dt.itemsize * 8
        bounds = [float(dt.type(v)) for v in (low, high)]  # exactly representable, as hypothesis asks
        elements = st.floats(*bounds, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=width)
    return draw(hnp.arrays(dt, shp, elements=elements))


def _sum_atol(x: np.ndarray, axis) -> float:
    """Rounding of a sum in another order: a few ulps of sum(|x|) along the reduced axes
    (a float32 result is one float32 rounding of the float64 sum; ints are exact)."""
    if x.dtype.kind == "i":
        return 0.0
    eps = 4e-7 if x.dtype == np.float32 else 1e-13
    return eps * float(np.abs(x.astype(np.float64)).sum(axis=axis).max(initial=1.0))


by_device = pytest.mark.parametrize("device", DEVICES)


# ---------------------------------------------------------------------------------------------
# elementwise
# ---------------------------------------------------------------------------------------------


@by_device
@given(data=st.data(), op=st.sampled_from([operator.add, operator.sub, operator.mul, operator.truediv,
                                           gd.maximum, gd.minimum]))
def test_binary_ops_broadcast_and_promote(device, data, op):
    shape_a, shape_b = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=5)).input_shapes
    a = data.draw(arrays(shape=shape_a))
    b = data.draw(arrays(shape=shape_b))
    ref = {gd.maximum: np.maximum, gd.minimum: np.minimum}.get(op, op)
    check(op, a, b, device=device, ref=ref)


@by_device
@given(a=arrays(), scalar=st.one_of(st.integers(-50, 50), st.floats(-50, 50, allow_nan=False)),
       op=st.sampled_from([operator.add, operator.sub, operator.mul, operator.truediv]), reflected=st.booleans())
def test_python_scalar_operands(device, a, scalar, op, reflected):
    fn = (lambda x: op(scalar, x)) if reflected else (lambda x: op(x, scalar))
    check(fn, a, device=device)


@by_device
@given(a=arrays(dtype=FLOATS, low=0, high=50),
       fn=st.sampled_from([(gd.exp, np.exp), (gd.log, np.log), (gd.sqrt, np.sqrt), (gd.tanh, np.tanh),
                           (gd.abs, np.abs), (gd.relu, lambda x: np.maximum(x, 0).astype(x.dtype))]),
       negate=st.booleans())
def test_unary_functions(device, a, fn, negate):
    if negate:
        a = np.negative(a, out=np.empty_like(a))  # log, sqrt of negatives: nan, as in NumPy
    check(fn[0], a, device=device, ref=fn[1])


@by_device
@given(a=arrays(dtype=FLOATS, low=0.01, high=10), exponent=st.sampled_from([0, 1, 2, 3, 0.5, -1, -2.5]))
def test_float_powers(device, a, exponent):
    check(lambda x: x**exponent, a, device=device)


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------


@st.composite
def axes_for(draw, ndim: int):
    if ndim == 0 or draw(st.booleans()):
        return None
    axes = draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim, unique_by=lambda i: i % ndim))
    return axes[0] if len(axes) == 1 and draw(st.booleans()) else tuple(axes)


@by_device
@given(data=st.data(), kind=st.sampled_from(["sum", "mean", "max", "min"]), keepdims=st.booleans())
def test_reductions(device, data, kind, keepdims):
    x = data.draw(arrays(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=6)))
    axis = data.draw(axes_for(x.ndim))
    wide = x.astype(np.float64) if x.dtype == np.float32 else x
    expected = np.asarray(getattr(wide, kind)(axis=axis, keepdims=keepdims))
    expected = expected.astype(getattr(x, kind)(axis=axis, keepdims=keepdims).dtype)
    atol = _sum_atol(x, axis) / (1 if kind == "sum" else max(x.size // max(expected.size, 1), 1))
    check(lambda a: getattr(a, kind)(axis=axis, keepdims=keepdims), x, device=device,
          ref=lambda _: expected, atol=atol if kind in ("sum", "mean") else 0.0)


@by_device
@given(data=st.data())
def test_norm(device, data):
    x = data.draw(arrays(dtype=FLOATS, shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6)))
    axis = data.draw(st.sampled_from([None, -1] + ([(0, 1)] if x.ndim >= 2 else [])))
    expected = np.asarray(np.linalg.norm(x.astype(np.float64), axis=axis)).astype(x.dtype)
    check(lambda a: gd.norm(a, axis=axis), x, device=device, ref=lambda _: expected,
          rtol=3e-7 if x.dtype == np.float32 else 1e-12, atol=1e-30)


# ---------------------------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------------------------


@by_device
@given(data=st.data(), dtype=FLOATS)
def test_matmul(device, data, dtype):
    m, k, n = (data.draw(st.integers(0, 9)) for _ in range(3))
    batch_a, batch_b = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3)).input_shapes
    shape_a = data.draw(st.sampled_from([(*batch_a, m, k)] + ([(k,)] if not batch_a else [])))
    shape_b = data.draw(st.sampled_from([(*batch_b, k, n)] + ([(k,)] if not batch_b else [])))
    a = data.draw(arrays(dtype=dtype, shape=shape_a, low=-1, high=1))
    b = data.draw(arrays(dtype=dtype, shape=shape_b, low=-1, high=1))
    atol = (2e-6 if dtype == np.float32 else 1e-14) * max(k, 1)
    check(gd.matmul, a, b, device=device, ref=lambda x, y: (x.astype(np.float64) @ y).astype(dtype),
          rtol=0, atol=atol)


# ---------------------------------------------------------------------------------------------
# shapes: reshape, transpose, indexing, concatenate, astype
# ---------------------------------------------------------------------------------------------


@by_device
@given(data=st.data())
def test_transpose_and_reshape(device, data):
    x = data.draw(arrays())
    perm = tuple(data.draw(st.permutations(range(x.ndim))))
    check(lambda a: a.transpose(perm), x, device=device)
    new_shape = list(data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)))
    if int(np.prod(new_shape)) != x.size:
        new_shape = [x.size]
    if new_shape and x.size > 0 and data.draw(st.booleans()):
        new_shape[data.draw(st.integers(0, len(new_shape) - 1))] = -1
    check(lambda a: a.reshape(tuple(new_shape)), x, device=device)


@by_device
@given(data=st.data())
def test_basic_indexing_and_setitem(device, data):
    x = data.draw(arrays(shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6)))
    n_int = data.draw(st.integers(0, x.ndim - 1))
    index = [data.draw(st.integers(-x.shape[i], x.shape[i] - 1)) for i in range(n_int)]
    if not index or data.draw(st.booleans()):
        start = data.draw(st.one_of(st.none(), st.integers(-8, 8)))
        stop = data.draw(st.one_of(st.none(), st.integers(-8, 8)))
        index.append(slice(start, stop))
    index = tuple(index)
    check(lambda a: a[index], x, device=device)
    value = data.draw(st.integers(-5, 5))

    def assign(a):
        a[index] = value
        return a

    check(assign, x, device=device)


@by_device
@given(data=st.data())
def test_concatenate_and_stack(device, data):
    base = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    axis = data.draw(st.integers(-len(base), len(base) - 1))
    count = data.draw(st.integers(1, 4))
    pieces = []
    for _ in range(count):
        shape = list(base)
        shape[axis] = data.draw(st.integers(0, 4))
        pieces.append(data.draw(arrays(shape=tuple(shape))))
    check(lambda *xs: gd.concatenate(list(xs), axis=axis), *pieces, device=device,
          ref=lambda *xs: np.concatenate(xs, axis=axis))
    same = [data.draw(arrays(dtype=pieces[0].dtype, shape=base)) for _ in range(count)]
    stack_axis = data.draw(st.integers(-len(base) - 1, len(base)))
    check(lambda *xs: gd.stack(list(xs), axis=stack_axis), *same, device=device,
          ref=lambda *xs: np.stack(xs, axis=stack_axis))


@by_device
@given(x=arrays(low=-1000, high=1000), dtype=DTYPES)
def test_astype(device, x, dtype):
    check(lambda a: a.astype(dtype), x, device=device, ref=lambda a: a.astype(dtype), rtol=0)


@by_device
@given(x=arrays(dtype=np.float64), noise=st.floats(0, 1e-3), rtol=st.sampled_from([1e-5, 1e-3, 0.0]),
       atol=st.sampled_from([1e-8, 1e-4, 0.0]))
def test_allclose(device, x, noise, rtol, atol):
    # float64 only: NumPy compares float32 inputs in float32, and results on the boundary
    # would then depend on the precision of the comparison rather than on allclose's rule
    y = x + noise
    got = gd.allclose(gd.array(x, device=device), gd.array(y, device=device), rtol=rtol, atol=atol)
    assert got is bool(np.allclose(x, y, rtol=rtol, atol=atol))


@by_device
@given(x=arrays())
def test_roundtrip_and_tolist(device, x):
    a = gd.array(x, device=device)
    np.testing.assert_array_equal(host(a), x)
    assert a.tolist() == x.tolist()
