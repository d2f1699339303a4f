"""gd.softmax and gd.log_softmax against a float64 NumPy reference: every axis, huge and tiny
logits, NaN and infinities, integer inputs, 0-d and empty arrays, strided views, one autograd
node each with the right gradient, and every error message.

    >>> gd.softmax(gd.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from conftest import assert_array
from test_autograd import gradcheck, rnd

FUNCS = {"softmax": gd.softmax, "log_softmax": gd.log_softmax}


def reference(x: np.ndarray, axis: int, log: bool) -> np.ndarray:
    x = x.astype(np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(shifted).sum(axis=axis, keepdims=True))
    return shifted - lse if log else np.exp(shifted - lse)


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axis", [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((3, 4), -1),
                                        ((2, 3, 4), 1), ((2, 3, 4), -3), ((1, 7), 1)])
def test_matches_numpy(device, name, dtype, shape, axis):
    x = (np.random.default_rng(0).standard_normal(shape) * 5).astype(dtype)
    got = FUNCS[name](gd.array(x, device=device), axis=axis)
    want = reference(x, axis, name == "log_softmax").astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert_array(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_huge_and_tiny_logits_stay_finite(device, name):
    x = np.array([[1e4, 1e4, 0.0], [-1e4, -1e4, -1e4], [1e38, -1e38, 0.0]], dtype=np.float32)
    got = np.asarray(FUNCS[name](gd.array(x, device=device), axis=1).cpu())
    want = reference(x, 1, name == "log_softmax")
    assert np.all(np.isfinite(got)), got
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_nan_and_inf_rows_give_nan_as_pytorch(device, name):
    x = np.array([[np.nan, 0.0], [np.inf, 0.0], [-np.inf, 0.0], [-np.inf, -np.inf]])
    got = np.asarray(FUNCS[name](gd.array(x, device=device), axis=1).cpu())
    with np.errstate(invalid="ignore"):
        want = reference(x, 1, name == "log_softmax")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[2], want[2])  # one -inf logit is an exact 0 probability


def test_softmax_rows_sum_to_one_and_log_softmax_is_its_log(device):
    x = gd.randn(6, 9, dtype=gd.float64, device=device) * 30
    s = gd.softmax(x, axis=1)
    np.testing.assert_allclose(np.asarray(s.sum(axis=1).cpu()), np.ones(6), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gd.exp(gd.log_softmax(x, axis=1)).cpu()),
                               np.asarray(s.cpu()), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_integers_and_bools_compute_in_float64(device, dtype):
    x = np.array([[0, 1, 1], [1, 0, 0]]).astype(dtype)
    got = gd.softmax(gd.array(x, device=device), axis=1)
    assert got.dtype == gd.float64
    assert_array(got, reference(x, 1, False), rtol=1e-12)


def test_zero_d_and_empty_arrays(device):
    assert gd.softmax(gd.array(3.0, device=device)).item() == 1.0
    assert gd.log_softmax(gd.array(3.0, device=device), axis=0).item() == 0.0
    for shape, axis in [((0,), 0), ((2, 0), 1), ((0, 3), 1)]:
        y = gd.softmax(gd.zeros(shape, device=device), axis=axis)
        assert y.shape == shape and y.dtype == gd.float32 and y.device == device


def test_strided_views_and_the_input_is_untouched(device):
    base = np.random.default_rng(1).standard_normal((4, 6))
    a = gd.array(base, device=device)
    assert_array(gd.softmax(a[::-1, ::2], axis=0), reference(base[::-1, ::2], 0, False), rtol=1e-12)
    assert_array(gd.log_softmax(a.T, axis=1), reference(base.T, 1, True), rtol=1e-12)
    assert_array(a, base)


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gradient_matches_finite_differences(device, name, axis):
    gradcheck(lambda x: FUNCS[name](x, axis=axis) * gd.arange(1, 6, dtype=gd.float64, device=x.device),
              rnd(3, 5), device=device)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_one_node_per_call(device, name):
    x = gd.randn(2, 3, device=device).requires_grad_()
    y = FUNCS[name](x, axis=1)
    assert repr(y.grad_fn) == f"<{''.join(p.capitalize() for p in name.split('_'))}Backward>"
    assert y.grad_fn.next_functions == (x,)
    with gd.no_grad():
        assert FUNCS[name](x, axis=1).grad_fn is None
    assert FUNCS[name](x.detach()).grad_fn is None


def test_gradient_refuses_an_input_changed_after_use(device):
    x = gd.randn(2, 3, device=device).requires_grad_()
    h = x * 1.0
    y = gd.softmax(h, axis=1)
    h += 1.0
    with pytest.raises(RuntimeError, match="input 0 of softmax .* was modified in place"):
        y.sum().backward()


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_errors_name_the_operation_and_the_fix(name):
    f = FUNCS[name]
    with pytest.raises(TypeError, match=f"{name}: expected a gpudev Array, got list; convert it with gd.asarray"):
        f([1.0, 2.0])
    with pytest.raises(ValueError, match=rf"{name}: axis 2 is out of bounds for an array of 2 dimension\(s\); "
                                         rf"use an axis in \[-2, 1\]"):
        f(gd.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match=rf"{name}: axis -2 is out of bounds .* \[-1, 0\]"):
        f(gd.array(1.0), axis=-2)
    with pytest.raises(TypeError, match=f"{name}: axis must be an int, got None"):
        f(gd.ones((2, 3)), axis=None)
    with pytest.raises(TypeError, match=f"{name}: axis must be an int, got 1.5"):
        f(gd.ones((2, 3)), axis=1.5)
