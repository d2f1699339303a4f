"""NumPy's dispatch protocols on gpudev arrays, creation the way PyTorch users write it, and the
TypeErrors of operands no operation can use.

    >>> np.sum(gd.ones(3))        # gpudev's sum, a gpudev array
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpudev as gd
from conftest import assert_array

# ---------------------------------------------------------------------------------------------
# __array_function__ and __array_ufunc__
# ---------------------------------------------------------------------------------------------

FUNCTIONS = [
    (lambda m, x: m.sum(x), True), (lambda m, x: m.sum(x, axis=0), True),
    (lambda m, x: m.sum(x, 1, keepdims=True), True),
    (lambda m, x: m.mean(x), True), (lambda m, x: m.max(x, axis=1), True), (lambda m, x: m.min(x), True),
    (lambda m, x: m.amax(x), True), (lambda m, x: m.transpose(x), True), (lambda m, x: m.transpose(x, (1, 0)), True),
    (lambda m, x: m.reshape(x, (4, 3)), True), (lambda m, x: m.stack([x, x]), True),
    (lambda m, x: m.concatenate([x, x], axis=1), True),
    (lambda m, x: m.sum(x, dtype=np.float32), True), (lambda m, x: m.mean(x, 0, np.float64, None, True), True),
    (lambda m, x: m.var(x, axis=0, ddof=1), True), (lambda m, x: m.prod(x, axis=1), True),
    (lambda m, x: m.tensordot(x, x.T, axes=1), True), (lambda m, x: m.stack([x, x], dtype=np.float64), True),
    (lambda m, x: m.cumsum(x), False), (lambda m, x: m.sum(x, initial=3.0), False),
    (lambda m, x: m.sort(x[::-1], axis=0), False), (lambda m, x: m.linalg.norm(x, ord=1), False),
]


@pytest.mark.parametrize("fn, by_gpudev", FUNCTIONS)
def test_numpy_functions_on_cpu_arrays(fn, by_gpudev):
    src = np.arange(12.0).reshape(3, 4)
    x = gd.array(src)
    got = fn(np, x)
    want = fn(np, src)
    if by_gpudev:  # gpudev has it: a gpudev array, computed by gpudev
        assert isinstance(got, gd.Array)
        assert_array(got, want)
    else:  # NumPy's on a zero-copy view: what NumPy returns
        assert not isinstance(got, gd.Array)
        np.testing.assert_allclose(got, want)


UFUNCS = [
    (lambda m, x: m.add(x, 1), True), (lambda m, x: m.add(2.5, x), True), (lambda m, x: m.subtract(x, x.T), True),
    (lambda m, x: m.multiply(x, 3), True), (lambda m, x: m.true_divide(1, x + 1), True),
    (lambda m, x: m.power(x, 2), True), (lambda m, x: m.negative(x), True), (lambda m, x: m.abs(x - 5), True),
    (lambda m, x: m.exp(x), True), (lambda m, x: m.sqrt(x), True), (lambda m, x: m.maximum(x, 4), True),
    (lambda m, x: m.matmul(x, x.T), True), (lambda m, x: m.sin(x), True), (lambda m, x: m.cbrt(x), False), (lambda m, x: m.add.reduce(x), False),
    (lambda m, x: m.add.accumulate(x, axis=1), False), (lambda m, x: m.add(x, 1, dtype=np.float32), True),
    (lambda m, x: m.add(x, 1, casting="unsafe"), False),
]


@pytest.mark.parametrize("fn, by_gpudev", UFUNCS)
def test_numpy_ufuncs_on_cpu_arrays(fn, by_gpudev):
    src = np.arange(16.0).reshape(4, 4)
    x = gd.array(src)
    got, want = fn(np, x), fn(np, src)
    assert isinstance(got, gd.Array) == by_gpudev
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_ufunc_out_writes_into_the_array():
    x = gd.arange(6.0).reshape(2, 3)
    res = np.add(x, 1, out=x)
    assert res is x
    assert_array(x, np.arange(6.0, dtype=np.float32).reshape(2, 3) + 1)
    y = gd.zeros(3)
    np.multiply(gd.arange(3.0), 2, out=(y,))
    assert y.tolist() == [0.0, 2.0, 4.0]


def test_numpy_scalars_and_operators_still_meet_arrays():
    x = gd.ones(3)
    assert isinstance(np.float64(2) * x, gd.Array)
    assert (np.float64(2) * x).dtype == np.float64
    msg = r"add: cannot combine a gpudev Array with numpy\.ndarray"
    with pytest.raises(TypeError, match=msg):
        np.ones(3) + x
    with pytest.raises(TypeError, match=msg):
        np.add(np.ones(3), x)


def test_gpu_arrays_are_refused_by_numpy(cuda0):
    x = gd.ones(3, device=cuda0)
    gpu = re.escape(gd.device_label(cuda0))  # 'cuda:0 (emulated)' on an emulated GPU
    for call in (lambda: np.sum(x, initial=1.0), lambda: np.add.reduce(x), lambda: np.cumsum(x),
                 lambda: np.median(x)):
        with pytest.raises(TypeError, match=rf"numpy\.[\w.]+: NumPy cannot compute on a gpudev array on {gpu}; .*cpu\(\)"):
            call()


def test_numpy_functions_gpudev_has_stay_on_the_gpu_with_numpys_keywords(cuda0):
    """What Dask calls on chunks: reductions with dtype=, keepdims=, out=, tensordot, stacking."""
    x = gd.arange(6.0, device=cuda0).reshape(2, 3)
    out = gd.zeros((1, 3), device=cuda0, dtype=gd.float64)
    calls = {
        "sum": (lambda: np.sum(x, axis=0, dtype=np.float64, keepdims=True), [[3.0, 5.0, 7.0]]),
        "sum out": (lambda: np.sum(x, 0, np.float64, out, True), [[3.0, 5.0, 7.0]]),
        "mean": (lambda: np.mean(x, axis=1), [1.0, 4.0]),
        "max": (lambda: np.max(x, axis=1, keepdims=True), [[2.0], [5.0]]),
        "var": (lambda: np.var(x, axis=0, ddof=1), [4.5, 4.5, 4.5]),
        "all": (lambda: np.all(x >= 0, axis=0), [True, True, True]),
        "tensordot": (lambda: np.tensordot(x, x, axes=([1], [1])), [[5.0, 14.0], [14.0, 50.0]]),
        "stack": (lambda: np.stack([x[0], x[1]]), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]),
        "ones_like": (lambda: np.ones_like(x, shape=(2,)), [1.0, 1.0]),
        "divide dtype": (lambda: np.divide(x[0], 2, dtype=np.float64), [0.0, 0.5, 1.0]),
    }
    for name, (call, want) in calls.items():
        got = call()
        assert isinstance(got, gd.Array) and got.device == cuda0, name
        assert got.tolist() == want, name
    assert np.sum(x, 0, np.float64, out, True) is out


def test_numpy_ufuncs_gpudev_has_compute_on_the_gpu(cuda0):
    """np.add(x, 1) and np.float32(0.5) == x are gpudev's own operations: the result stays on
    the GPU (nothing is copied to the host), as CuPy does."""
    x = gd.ones(3, device=cuda0)
    for got in (np.add(x, 1), np.float32(0.5) == x, np.int64(2) * x):
        assert isinstance(got, gd.Array) and got.device == cuda0
    assert np.add(x, 1).tolist() == [2.0, 2.0, 2.0]
    assert (np.float32(0.5) == x).tolist() == [False, False, False]


# ---------------------------------------------------------------------------------------------
# creation habits
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_shapes_as_dimensions_or_a_tuple(device, name):
    fn = getattr(gd, name)
    made = (fn(2, 3, device=device), fn((2, 3), device=device), fn([2, 3], device=device), fn(shape=(2, 3), device=device))
    for a in made:
        assert a.shape == (2, 3) and a.dtype == np.float32 and a.device == gd.Device(device)
    b = fn(4, 1, 2, dtype=gd.int64, device=device)
    assert b.shape == (4, 1, 2) and b.dtype == np.int64
    if name != "empty":
        assert_array(fn(2, 3, device=device), getattr(np, name)((2, 3), np.float32))
    with pytest.raises(TypeError, match=rf"{name}\(\) got multiple values for argument 'shape'"):
        fn(2, 3, shape=(2, 3))
    with pytest.raises(ValueError, match=rf"{name}: negative dimensions are not allowed|{name}:.*negative"):
        fn(2, -1)
    with pytest.raises(TypeError):
        fn(2, 3.5)


def test_like_functions(device):
    x = gd.arange(6, device=device).reshape(2, 3)
    assert_array(gd.zeros_like(x), np.zeros((2, 3), np.int64), device=device)
    assert_array(gd.ones_like(x, dtype=gd.float64), np.ones((2, 3)), device=device)
    assert_array(gd.full_like(x, 7), np.full((2, 3), 7, np.int64), device=device)
    e = gd.empty_like(x.T)
    assert e.shape == (3, 2) and e.dtype == np.int64 and e.device == x.device
    assert gd.zeros_like(np.ones((4,), np.float32)).device == gd.cpu()
    assert gd.ones_like(x, device="cpu").device == gd.cpu()
    with pytest.raises(TypeError, match=r"zeros_like: expected an array \(with \.shape and \.dtype\), got list"):
        gd.zeros_like([1, 2])


def test_tensor_is_array():
    assert gd.tensor is gd.array
    assert_array(gd.tensor([[1.0, 2.0]]), np.array([[1.0, 2.0]], np.float32))


# ---------------------------------------------------------------------------------------------
# operands no operation can use
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("other", [None, "abc", object()], ids=["None", "str", "object"])
def test_operands_of_the_wrong_type_raise_typeerror(device, other):
    x = gd.ones((2, 2), device=device)
    name = type(other).__name__
    with pytest.raises(TypeError, match=rf"matmul: unsupported operand type {name}"):
        gd.matmul(x, other)
    with pytest.raises(TypeError, match=rf"matmul: unsupported operand type {name}"):
        gd.matmul(other, x)
    with pytest.raises(TypeError, match=rf"maximum: unsupported operand types gpudev\.Array and {name}"):
        gd.maximum(x, other)
    # ("abc" * x asks x for __index__, which only 0-d int arrays have, as with NumPy arrays)
    python_says = (r"unsupported operand type\(s\) for|can't multiply sequence|can only concatenate str|"
                   r"only 0-d integer arrays convert to an index")
    for op in ("+", "-", "*", "/", "**", "@"):  # Python's own TypeError (str's for "abc" * x and "abc" + x)
        with pytest.raises(TypeError, match=python_says):
            eval(f"x {op} other")
        with pytest.raises(TypeError, match=python_says):
            eval(f"other {op} x")
